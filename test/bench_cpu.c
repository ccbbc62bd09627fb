// bench_cpu: the CPU's arithmetic limit and where a training step's time goes.
//   test/bench_cpu probe [--threads N]
//       float32 FMA peak, GFLOP/s, on 1 thread and on N (default: all) threads: 12
//       independent chains of vector FMAs (512-bit with AVX-512), nothing from memory.
//   test/bench_cpu flops [model and shape flags]
//       the floating-point operations of one training step per token: the matmuls
//       (6 x their parameters, the tied head included) and causal attention (QK^T and
//       att V on the t2 <= t half, forward and backward). Elementwise work is not counted.
//   test/bench_cpu profile [model and shape flags] [--steps N] [--threads N] [--objective O]
//       cuset_gpt_step + cuset_gpt_update on full rows of the synthetic task, each op timed
//       through cuset.h's CUSET_PROFILE hooks: ms per step, share of the step and GFLOP/s
//       per op (summed over the layers), then the step's tokens/s and its share of the peak.
// model and shape flags: --layers 4 --heads 4 --embd 128 --vocab 2048 --batch 8 --seq 256
// A benchmark, not a test (test/bench_cpu.sh runs it; make bench-cpu).
#define CUSET_PROFILE
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the FMA probe ------------------------------------------------------------------------

#if defined(__AVX512F__)
#define PROBE_W 16
#elif defined(__AVX__)
#define PROBE_W 8
#else
#define PROBE_W 4
#endif
typedef float probe_vec __attribute__((vector_size(PROBE_W * 4)));

// iters x 12 chains of c = c * a + b on PROBE_W lanes; returns the flop done. The empty asm
// keeps the chains in registers and apart (the compiler may not fold or merge them).
static double probe_run(long iters) {
    probe_vec a, b, c[12];
    for (int i = 0; i < PROBE_W; i++) { a[i] = 1.0f - 1e-7f * i; b[i] = 1e-6f; }
    for (int r = 0; r < 12; r++) c[r] = b * (float)(r + 1);
    probe_vec c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5], c6 = c[6], c7 = c[7], c8 = c[8],
              c9 = c[9], c10 = c[10], c11 = c[11];
    for (long k = 0; k < iters; k++) {
        __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7),
                              "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11), "+x"(a), "+x"(b));
        c0 = c0 * a + b; c1 = c1 * a + b; c2 = c2 * a + b; c3 = c3 * a + b; c4 = c4 * a + b; c5 = c5 * a + b;
        c6 = c6 * a + b; c7 = c7 * a + b; c8 = c8 * a + b; c9 = c9 * a + b; c10 = c10 * a + b; c11 = c11 * a + b;
    }
    probe_vec s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
    volatile float sink = s[0];
    (void)sink;
    return 2.0 * 12 * PROBE_W * (double)iters;
}

// GFLOP/s of `threads` threads running the probe together (wall time), best of 3.
static double probe_peak(int threads) {
    long iters = 20000000;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t = cuset_time(), flop = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : flop)
#endif
        flop += probe_run(iters);
        t = cuset_time() - t;
        if (flop / t > best) best = flop / t;
    }
    (void)threads;
    return best / 1e9;
}

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// ---- the profile --------------------------------------------------------------------------

#define MAX_OPS 64
static struct { const char *name; double seconds, flop; long calls; } ops[MAX_OPS];
static int nops = 0, profiling = 0;
static double last_lap = 0;

static void cuset__prof_lap(const char *op, double flop) {
    double now = cuset_time();
    if (profiling && op) {
        int i = 0;
        while (i < nops && strcmp(ops[i].name, op)) i++;
        if (i == nops && nops < MAX_OPS) ops[nops++].name = op;
        if (i < MAX_OPS) { ops[i].seconds += now - last_lap; ops[i].flop += flop; ops[i].calls++; }
    }
    last_lap = now;
}

typedef struct { int L, NH, C, V, B, T, steps, threads; const char *objective; } Shape;

static double step_flop_per_token(const Shape *s) {
    double C = s->C, Vp = cuset_pad_vocab(s->V), T = s->T;
    double matmul = 6.0 * (s->L * 12.0 * C * C + Vp * C);  // forward 2 x params, backward 4 x
    double attn = 3.0 * s->L * 2.0 * 2.0 * C * (T + 1) / 2; // per token: (t+1) keys, q.k and a.v, mean over t
    return matmul + attn;
}

static int profile(const Shape *s) {
    CusetConfig cfg = {s->V, cuset_pad_vocab(s->V), s->T, s->L, s->NH, s->C};
    char err[256];
    if (cuset_config_check(&cfg, err, sizeof err)) { fprintf(stderr, "bench_cpu: %s\n", err); return 2; }
    CusetGPT m;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init_random(&m, 1337, 0.02f);
    CusetDataset d; // full rows: prompt T/2, target T/2
    cuset_dataset_synthetic(&d, 4 * s->B, s->V, s->T / 2 - 1, s->T / 2 - 1, 1);
    int *order = (int *)malloc(d.n * sizeof(int));
    for (int i = 0; i < d.n; i++) order[i] = i;
    CusetBatch b;
    cuset_batch_alloc(&b, s->B, s->T);
    int kind = 0;
    while (kind < CUSET_OBJ_COUNT && strcmp(cuset_objective_names[kind], s->objective)) kind++;
    if (kind == CUSET_OBJ_COUNT || kind == CUSET_OBJ_ASFT) {
        fprintf(stderr, "bench_cpu: --objective: sft, dft, profit, eaft or cuset\n");
        return 2;
    }
    CusetObjective obj = cuset_objective_default((CusetObjectiveKind)kind);
    CusetOptim opt = cuset_optim_default();
    opt.total = s->steps + 2;
    double *step_s = (double *)calloc(s->steps, sizeof(double));
    for (int step = 0; step < s->steps + 2; step++) { // two untimed warm-up steps
        cuset_batch_from_dataset(&b, &d, order + step % 4 * s->B, s->B, err, sizeof err); // d.n = 4 B
        profiling = step >= 2;
        CusetStats st = {0};
        float norm;
        double t0 = cuset_time();
        last_lap = t0;
        cuset_gpt_step(&m, NULL, NULL, &b, 1, &obj, &st, &norm, err, sizeof err);
        cuset_gpt_update(&m, &opt, step, norm);
        CUSET__LAP("adamw", 0);
        if (step >= 2) step_s[step - 2] = cuset_time() - t0;
    }
    double total = 0, counted = 0;
    for (int i = 0; i < s->steps; i++) total += step_s[i];
    total /= s->steps;
    double tokens = (double)s->B * s->T, per_token = step_flop_per_token(s);
    printf("profile: %d layers, %d heads, %d channels, vocabulary %d, batch %d x %d, objective %s, %d threads, "
           "mean of %d steps after 2 warm-up\n", s->L, s->NH, s->C, s->V, s->B, s->T, s->objective, s->threads, s->steps);
    printf("| %-20s | %6s | %9s | %6s | %8s |\n", "op (all layers)", "calls", "ms/step", "share", "GFLOP/s");
    printf("|----------------------|--------|-----------|--------|----------|\n");
    for (int i = 0; i < nops; i++) {
        double ms = 1e3 * ops[i].seconds / s->steps;
        counted += ops[i].seconds / s->steps;
        char gf[32] = "";
        if (ops[i].flop > 0) snprintf(gf, sizeof gf, "%.1f", ops[i].flop / ops[i].seconds / 1e9);
        printf("| %-20s | %6ld | %9.3f | %5.1f%% | %8s |\n", ops[i].name, ops[i].calls / s->steps, ms,
               100 * ops[i].seconds / s->steps / total, gf);
    }
    printf("| %-20s | %6s | %9.3f | %5.1f%% | %8s |\n", "(between ops)", "", 1e3 * (total - counted),
           100 * (total - counted) / total, "");
    double peak = probe_peak(s->threads);
    printf("step %.2f ms, %.0f tokens/s, %.2f MFLOP/token counted, %.1f GFLOP/s = %.0f%% of the %d-thread FMA peak "
           "(%.1f GFLOP/s)\n", 1e3 * total, tokens / total, per_token / 1e6, per_token * tokens / total / 1e9,
           100 * per_token * tokens / total / 1e9 / peak, s->threads, peak);
    free(step_s); free(order);
    cuset_batch_free(&b);
    cuset_dataset_free(&d);
    cuset_gpt_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "probe") && strcmp(argv[1], "flops") && strcmp(argv[1], "profile"))) {
        fprintf(stderr, "usage: bench_cpu probe|flops|profile [--layers L --heads H --embd C --vocab V --batch B "
                        "--seq T --steps N --threads N --objective O]\n");
        return 2;
    }
    Shape s = {4, 4, 128, 2048, 8, 256, 10, max_threads(), "sft"};
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i];
        int v = atoi(argv[i + 1]);
        if (!strcmp(k, "--layers")) s.L = v;
        else if (!strcmp(k, "--heads")) s.NH = v;
        else if (!strcmp(k, "--embd")) s.C = v;
        else if (!strcmp(k, "--vocab")) s.V = v;
        else if (!strcmp(k, "--batch")) s.B = v;
        else if (!strcmp(k, "--seq")) s.T = v;
        else if (!strcmp(k, "--steps")) s.steps = v;
        else if (!strcmp(k, "--threads")) s.threads = v;
        else if (!strcmp(k, "--objective")) s.objective = argv[i + 1];
        else { fprintf(stderr, "bench_cpu: unknown option '%s'\n", k); return 2; }
    }
    if (s.B < 1 || s.T < 4 || s.steps < 1 || s.threads < 1) { fprintf(stderr, "bench_cpu: bad shape\n"); return 2; }
#ifdef _OPENMP
    omp_set_num_threads(s.threads);
#endif
    if (!strcmp(argv[1], "probe")) {
        printf("fma_peak_gflops threads 1 %.1f\n", probe_peak(1));
        printf("fma_peak_gflops threads %d %.1f\n", s.threads, probe_peak(s.threads));
        return 0;
    }
    if (!strcmp(argv[1], "flops")) {
        printf("step_flop_per_token %.0f\n", step_flop_per_token(&s));
        return 0;
    }
    return profile(&s);
}
