// test_gpu_attn_loss.cu - the GPU's fused attention and fused loss (cuset.cu) against the
// CPU reference of cuset.h, on fresh random inputs.
//
//   GPU:       make test/test_gpu_attn_loss && ./test/test_gpu_attn_loss
//   emulator:  emu/nvcc-emu -I . -o t test/test_gpu_attn_loss.cu cuset.cu && ./t --small
//
// Flags: --small (CI sizes, minutes under the emulator), --seed N (default: from the clock).
// Prints "PASS name (max err X)" or "FAIL name ..." per check; exits 1 if any failed.
//
// Tolerances. Both sides compute in fp32 but add in different orders (tiles and online
// rescaling vs whole rows; tree reductions vs sequential loops), and a GPU's expf may differ
// from libm's by an ulp or two, so results differ by rounding: a few float epsilons
// (1.2e-7) of the largest magnitude involved, growing slowly with T or V. Errors are
// reported relative to max |reference| of the compared tensor, and a real mistake (a
// wrong mask, a missed tile, a wrong scale or window) moves them to 1e-3 .. 1e+3.
// - attention forward: 1e-5 (measured under the emulator up to 3e-7 at T = 1024);
// - attention backward: 2e-5, because dS = P (dP - delta) subtracts nearly equal numbers
//   and amplifies rounding (measured up to 2.9e-6 for dK at T = 777, hs = 128);
// - loss: 3e-5 for the gradient, 1e-5 for the stats. The gradient a p with
//   p = exp(z - lse) carries lse's rounding: lse ~ 10 has an ulp of 1e-6, so p (and a = p
//   for DFT/ASFT) may differ by ~1e-6 relative, and ASFT adds beta (p - p_ref), two such
//   probabilities (measured up to 1.5e-5 over random seeds, so 1e-5 failed now and then).
//   The stats add per-position doubles in cuset_loss's order.
// Counts (pass, ntok, nsamples) must match exactly, and two GPU runs must be bit-identical.
#define CUSET_IMPLEMENTATION
#define CUSET_CUDA_INTERNALS
#include "cuset.h"
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

static int g_failures = 0;
static uint64_t g_rng;

static float rnd_uniform(void) { return cuset_rng_uniform(&g_rng); }
static float rnd_normal(void) { // Box-Muller
    float u = rnd_uniform(), v = rnd_uniform();
    return sqrtf(-2.0f * logf(u + 1e-12f)) * cosf(6.2831853f * v);
}
static int rnd_int(int n) { return (int)(cuset_rng_next(&g_rng) % (uint64_t)n); }

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    CHECK(cudaMalloc(&p, bytes > 0 ? bytes : 1));
    return p;
}
static void *dev_upload(const void *h, size_t bytes) {
    void *d = dev_alloc(bytes);
    CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}
static void download(void *h, const void *d, size_t bytes) {
    CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

// max |a - ref| / max |ref| over n values taken with a stride (the part of a tensor)
static double rel_err(const float *a, const float *ref, size_t rows, size_t cols, size_t stride) {
    double err = 0.0, mag = 0.0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            double x = a[r * stride + c], y = ref[r * stride + c];
            double e = fabs(x - y);
            if (!(e <= err)) err = e; // NaN sticks
            if (fabs(y) > mag) mag = fabs(y);
        }
    return err / (mag > 0.0 ? mag : 1.0);
}

static void report(const char *name, double err, double tol) {
    if (err <= tol) printf("PASS %s (max err %.3g)\n", name, err);
    else { printf("FAIL %s (max err %.3g > tol %.3g)\n", name, err, tol); g_failures++; }
}
static void report_same(const char *name, int same) {
    if (same) printf("PASS %s (bit-identical)\n", name);
    else { printf("FAIL %s (two runs differ)\n", name); g_failures++; }
}

// ---- attention ------------------------------------------------------------------------------

static void test_attention(int B, int T, int NH, int hs) {
    int C = NH * hs;
    size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C, nlse = (size_t)B * NH * T;
    size_t natt = (size_t)B * NH * T * T;
    float *qkv = (float *)malloc(nqkv * sizeof(float)), *dout = (float *)malloc(nout * sizeof(float));
    for (size_t i = 0; i < nqkv; i++) qkv[i] = rnd_normal();
    for (size_t i = 0; i < nout; i++) dout[i] = rnd_normal();

    // CPU reference: out, att, then dqkv (accumulated into zeros)
    float *out = (float *)calloc(nout, sizeof(float)), *att = (float *)calloc(natt, sizeof(float));
    float *att_t = (float *)calloc(natt, sizeof(float)), *datt = (float *)calloc(natt, sizeof(float));
    float *kv_t = (float *)calloc((size_t)B * NH * hs * T, sizeof(float));
    float *dqkv = (float *)calloc(nqkv, sizeof(float)), *lse = (float *)malloc(nlse * sizeof(float));
    cuset__attention_forward(out, att, kv_t, qkv, B, T, C, NH);
    cuset__attention_backward(dqkv, datt, att_t, kv_t, dout, qkv, att, B, T, C, NH);
    // lse of the scaled scores, in double
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                double mx = -1e300, s = 0.0, *sc = (double *)malloc((t + 1) * sizeof(double));
                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    double d = 0.0;
                    for (int i = 0; i < hs; i++) d += (double)q[i] * k[i];
                    sc[j] = d * scale;
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j <= t; j++) s += exp(sc[j] - mx);
                lse[((size_t)b * NH + h) * T + t] = (float)(mx + log(s));
                free(sc);
            }

    // GPU, twice
    float *d_qkv = (float *)dev_upload(qkv, nqkv * sizeof(float)), *d_dout = (float *)dev_upload(dout, nout * sizeof(float));
    float *d_out = (float *)dev_alloc(nout * sizeof(float)), *d_lse = (float *)dev_alloc(nlse * sizeof(float));
    float *d_dqkv = (float *)dev_alloc(nqkv * sizeof(float)), *d_delta = (float *)dev_alloc(nlse * sizeof(float));
    float *g_out[2], *g_lse[2], *g_dqkv[2];
    for (int run = 0; run < 2; run++) {
        CHECK(cudaMemset(d_out, 0xff, nout * sizeof(float)));   // NaN: every output must be written
        CHECK(cudaMemset(d_dqkv, 0xff, nqkv * sizeof(float)));  // overwritten, not accumulated
        cuset__cuda_test_attention_forward(d_out, d_lse, d_qkv, B, T, C, NH);
        cuset__cuda_test_attention_backward(d_dqkv, d_delta, d_dout, d_qkv, d_out, d_lse, B, T, C, NH);
        CHECK(cudaDeviceSynchronize());
        g_out[run] = (float *)malloc(nout * sizeof(float)); download(g_out[run], d_out, nout * sizeof(float));
        g_lse[run] = (float *)malloc(nlse * sizeof(float)); download(g_lse[run], d_lse, nlse * sizeof(float));
        g_dqkv[run] = (float *)malloc(nqkv * sizeof(float)); download(g_dqkv[run], d_dqkv, nqkv * sizeof(float));
    }
    char name[128];
    const double tol = 1e-5;
    size_t BT = (size_t)B * T;
    snprintf(name, sizeof name, "attention forward out B=%d T=%d NH=%d hs=%d", B, T, NH, hs);
    report(name, rel_err(g_out[0], out, BT, C, C), tol);
    snprintf(name, sizeof name, "attention forward lse B=%d T=%d NH=%d hs=%d", B, T, NH, hs);
    report(name, rel_err(g_lse[0], lse, 1, nlse, 0), tol);
    const char *part[3] = {"dq", "dk", "dv"};
    for (int p = 0; p < 3; p++) {
        snprintf(name, sizeof name, "attention backward %s B=%d T=%d NH=%d hs=%d", part[p], B, T, NH, hs);
        report(name, rel_err(g_dqkv[0] + p * C, dqkv + p * C, BT, C, 3 * C), 2 * tol);
    }
    snprintf(name, sizeof name, "attention deterministic B=%d T=%d NH=%d hs=%d", B, T, NH, hs);
    report_same(name, !memcmp(g_out[0], g_out[1], nout * sizeof(float)) && !memcmp(g_lse[0], g_lse[1], nlse * sizeof(float)) &&
                          !memcmp(g_dqkv[0], g_dqkv[1], nqkv * sizeof(float)));

    for (int r = 0; r < 2; r++) { free(g_out[r]); free(g_lse[r]); free(g_dqkv[r]); }
    cudaFree(d_qkv); cudaFree(d_dout); cudaFree(d_out); cudaFree(d_lse); cudaFree(d_dqkv); cudaFree(d_delta);
    free(qkv); free(dout); free(out); free(att); free(att_t); free(datt); free(kv_t); free(dqkv); free(lse);
}

// ---- the fused loss -------------------------------------------------------------------------

// A batch of B rows: row n has a prompt, then its target span, then padding. Targets of
// rows 0, 1, 2, ... are long, short, empty, then random; or lens[n] tokens when lens is
// given (prompts then take 1 .. T - lens[n] tokens). Logits are N(0, 2) with a boost of
// U(2, 9) on half of the target logits, so confidences straddle tau; the pad columns hold
// large values that must be ignored; ref logits (ASFT) are the logits plus N(0, 0.5).
typedef struct {
    int B, T, V, Vp;
    CusetBatch batch;
    float *logits, *ref;
    float inv_norm;
    // on the device
    float *d_logits, *d_ref;
    int *d_targets, *d_start, *d_len;
    unsigned char *d_is_target, *d_is_cuda;
    void *d_work;
} LossCase;

static void loss_case_init(LossCase *lc, int B, int T, int V, int Vp, const int *lens) {
    lc->B = B; lc->T = T; lc->V = V; lc->Vp = Vp;
    CusetBatch *b = &lc->batch;
    cuset_batch_alloc(b, B, T);
    size_t BT = (size_t)B * T, N = BT * Vp;
    int ntok = 0;
    for (int n = 0; n < B; n++) {
        int np = lens ? 1 + rnd_int(T - lens[n]) : 1 + rnd_int(T / 4 > 0 ? T / 4 : 1), room = T - np;
        int len = lens ? lens[n] : n == 0 ? room : n == 1 ? (room < 5 ? room : 5) : n == 2 ? 0 : rnd_int(room + 1);
        b->tgt_start[n] = np; b->tgt_len[n] = len; ntok += len;
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)n * T + t;
            b->inputs[i] = rnd_int(V);
            b->targets[i] = rnd_int(V);
            b->is_target[i] = t >= np && t < np + len;
            b->is_cuda[i] = b->is_target[i] && rnd_int(3) == 0;
        }
    }
    lc->logits = (float *)malloc(N * sizeof(float));
    lc->ref = (float *)malloc(N * sizeof(float));
    for (size_t i = 0; i < BT; i++) {
        float *z = lc->logits + i * Vp, *zr = lc->ref + i * Vp;
        for (int v = 0; v < Vp; v++) {
            z[v] = v < V ? 2.0f * rnd_normal() : 40.0f + rnd_uniform();
            zr[v] = v < V ? z[v] + 0.5f * rnd_normal() : 40.0f + rnd_uniform();
        }
        if (rnd_int(2)) z[b->targets[i]] += 2.0f + 7.0f * rnd_uniform();
    }
    lc->inv_norm = 1.0f / (float)(ntok > 0 ? ntok : 1);
    lc->d_logits = (float *)dev_alloc(N * sizeof(float));
    lc->d_ref = (float *)dev_upload(lc->ref, N * sizeof(float));
    lc->d_targets = (int *)dev_upload(b->targets, BT * sizeof(int));
    lc->d_is_target = (unsigned char *)dev_upload(b->is_target, BT);
    lc->d_is_cuda = (unsigned char *)dev_upload(b->is_cuda, BT);
    lc->d_start = (int *)dev_upload(b->tgt_start, B * sizeof(int));
    lc->d_len = (int *)dev_upload(b->tgt_len, B * sizeof(int));
    lc->d_work = dev_alloc(cuset_cuda_loss_workspace_bytes(B, T));
}

static void loss_case_free(LossCase *lc) {
    cuset_batch_free(&lc->batch);
    free(lc->logits); free(lc->ref);
    cudaFree(lc->d_logits); cudaFree(lc->d_ref); cudaFree(lc->d_targets); cudaFree(lc->d_is_target);
    cudaFree(lc->d_is_cuda); cudaFree(lc->d_start); cudaFree(lc->d_len); cudaFree(lc->d_work);
}

static double stat_err(double g, double c) { return fabs(g - c) / (fabs(c) > 1e-6 ? fabs(c) : 1e-6); }

// tau, or, when a target confidence lies within 1e-4 of it, the middle of the widest gap
// between sorted confidences in [tau/2, 2 tau]: GPU expf (2 ulp) must not flip a token
// across tau, which the exact count of passing tokens would see (test_gpu.cu: pick_tau).
static float tau_off_confidences(const float *conf, const unsigned char *is_target, size_t BT, float tau) {
    float *cs = (float *)malloc(BT * sizeof(float));
    size_t n = 0, near = 0;
    for (size_t i = 0; i < BT; i++)
        if (is_target[i]) { cs[n++] = conf[i]; near += fabsf(conf[i] - tau) < 1e-4f; }
    float best = tau, gap = 0.0f;
    if (near) {
        std::sort(cs, cs + n);
        for (size_t i = 1; i < n; i++)
            if (cs[i - 1] >= 0.5f * tau && cs[i] <= 2.0f * tau && cs[i] - cs[i - 1] > gap) {
                gap = cs[i] - cs[i - 1]; best = 0.5f * (cs[i] + cs[i - 1]);
            }
    }
    free(cs);
    return best;
}

static void test_loss(LossCase *lc, const CusetObjective *obj_in, const char *label) {
    int B = lc->B, T = lc->T, V = lc->V, Vp = lc->Vp;
    size_t BT = (size_t)B * T, N = BT * Vp;
    const float *ref = obj_in->kind == CUSET_OBJ_ASFT ? lc->ref : NULL;
    const float *d_ref = obj_in->kind == CUSET_OBJ_ASFT ? lc->d_ref : NULL;
    CusetStats base = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5}; // stats accumulate: start from something

    // CPU reference, through a CusetGPT that only carries the sizes and the two buffers
    CusetGPT m;
    memset(&m, 0, sizeof m);
    m.cfg.vocab_size = V; m.cfg.padded_vocab_size = Vp;
    m.acts.logits = (float *)malloc(N * sizeof(float));
    m.loss_scratch = (float *)calloc(3 * BT + B, sizeof(float));
    CusetObjective o = *obj_in;
    const CusetObjective *obj = &o;
    memcpy(m.acts.logits, lc->logits, N * sizeof(float));
    CusetStats cpu = base;
    cuset_loss(&m, &lc->batch, obj, ref, lc->inv_norm, &cpu);
    float tau = tau_off_confidences(m.loss_scratch + BT, lc->batch.is_target, BT, o.tau);
    if (tau != o.tau) { // again with a tau no confidence sits on
        o.tau = tau;
        memcpy(m.acts.logits, lc->logits, N * sizeof(float));
        cpu = base;
        cuset_loss(&m, &lc->batch, obj, ref, lc->inv_norm, &cpu);
    }

    // GPU, twice
    float *g[2];
    CusetStats gs[2];
    for (int run = 0; run < 2; run++) {
        CHECK(cudaMemcpy(lc->d_logits, lc->logits, N * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaMemset(lc->d_work, 0xff, cuset_cuda_loss_workspace_bytes(B, T)));
        gs[run] = base;
        int rc = cuset_cuda_loss(lc->d_logits, d_ref, lc->d_targets, lc->d_is_target, lc->d_is_cuda, lc->d_start,
                                 lc->d_len, B, T, V, Vp, obj, lc->inv_norm, lc->d_work, &gs[run], NULL);
        if (rc != 0) { printf("FAIL %s: cuset_cuda_loss returned %d\n", label, rc); g_failures++; }
        g[run] = (float *)malloc(N * sizeof(float));
        download(g[run], lc->d_logits, N * sizeof(float));
    }
    char name[200];
    snprintf(name, sizeof name, "loss %s dlogits", label);
    report(name, rel_err(g[0], m.acts.logits, 1, N, 0), 3e-5);
    double e = 0.0;
    const double *gd = (const double *)&gs[0], *cd = (const double *)&cpu;
    const char *field[7] = {"loss", "ce", "conf", "pass", "weight", "ntok", "nsamples"};
    int worst = 0;
    for (int f = 0; f < 7; f++) {
        double ef = stat_err(gd[f], cd[f]);
        if (f == 3 || f >= 5) ef = gd[f] == cd[f] ? 0.0 : 1.0; // counts: exact
        if (ef > e) { e = ef; worst = f; }
    }
    snprintf(name, sizeof name, "loss %s stats (worst: %s)", label, field[worst]);
    report(name, e, 1e-5);
    snprintf(name, sizeof name, "loss %s deterministic", label);
    report_same(name, !memcmp(g[0], g[1], N * sizeof(float)) && !memcmp(&gs[0], &gs[1], sizeof(CusetStats)));
    free(g[0]); free(g[1]); free(m.acts.logits); free(m.loss_scratch);
}

static void test_loss_objectives(int B, int T, int V, int Vp, int full) {
    LossCase lc;
    loss_case_init(&lc, B, T, V, Vp, NULL);
    char label[160];
    const char *kinds[CUSET_OBJ_COUNT] = {"sft", "dft", "profit", "eaft", "asft", "cuset"};
    for (int k = 0; k < CUSET_OBJ_CUSET; k++) {
        CusetObjective o = cuset_objective_default((CusetObjectiveKind)k);
        snprintf(label, sizeof label, "%s B=%d T=%d V=%d Vp=%d", kinds[k], B, T, V, Vp);
        test_loss(&lc, &o, label);
    }
    // CuSeT: every combination of the three switches; windows 1, 3, 8 and longer than any
    // target. The full run crosses them; --small crosses the switches with window 3 and
    // the windows with all switches on.
    int windows[4] = {1, 3, 8, T + 10};
    for (int sw = 0; sw < 8; sw++)
        for (int wi = 0; wi < 4; wi++) {
            if (!full && !(wi == 1 || sw == 7)) continue;
            CusetObjective o = cuset_objective_default(CUSET_OBJ_CUSET);
            o.conf_mask = sw & 1; o.cuda_mask = (sw >> 1) & 1; o.reweight = (sw >> 2) & 1;
            o.window = windows[wi];
            snprintf(label, sizeof label, "cuset conf=%d cuda=%d reweight=%d window=%d B=%d T=%d V=%d", o.conf_mask,
                     o.cuda_mask, o.reweight, o.window, B, T, V);
            test_loss(&lc, &o, label);
        }
    loss_case_free(&lc);
}

// Eq. 5 at the lengths where its windows change shape: for l = 7 and l = 8 targets of
// ceil(l/2), ceil(l/2) + 1, l - 1, l and l + 1 tokens (4..9), one per row, so clipped
// windows in targets shorter than l meet the CPU loss on the same rows.
static void test_loss_window_lengths(int V, int Vp) {
    const int lens[6] = {4, 5, 6, 7, 8, 9};
    LossCase lc;
    loss_case_init(&lc, 6, 12, V, Vp, lens);
    for (int l = 7; l <= 8; l++)
        for (int sw = 4; sw <= 7; sw += 3) { // reweighting alone, and all three switches
            CusetObjective o = cuset_objective_default(CUSET_OBJ_CUSET);
            o.conf_mask = sw & 1; o.cuda_mask = (sw >> 1) & 1; o.window = l;
            char label[160];
            snprintf(label, sizeof label, "cuset conf=%d cuda=%d reweight=1 window=%d T_n=4..9", o.conf_mask, o.cuda_mask, l);
            test_loss(&lc, &o, label);
        }
    loss_case_free(&lc);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); // line by line, also into a log file
    int small = 0;
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small")) small = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else { fprintf(stderr, "usage: %s [--small] [--seed N]\n", argv[0]); return 2; }
    }
    printf("test_gpu_attn_loss: seed %llu%s\n", (unsigned long long)seed, small ? " (small)" : "");
    g_rng = seed * 0x9E3779B97F4A7C15ull + 1;

    // Attention: T = 1, T a multiple of the 64-query / 32-key tiles, and T that is not;
    // every supported head size.
    if (small) {
        test_attention(2, 1, 2, 16);
        test_attention(2, 64, 2, 16);
        test_attention(2, 70, 2, 32);
        test_attention(1, 33, 2, 48);
        test_attention(2, 40, 2, 64);
        test_attention(1, 20, 1, 96);
        test_attention(1, 65, 1, 128);
    } else {
        int hss[6] = {16, 32, 48, 64, 96, 128};
        for (int k = 0; k < 6; k++) {
            test_attention(2, 256, 4, hss[k]);
            test_attention(2, 301, 4, hss[k]);
        }
        test_attention(1, 1, 2, 64);
        test_attention(4, 1024, 8, 64);
    }

    // The loss: every objective; the float4 path (Vp % 4 == 0) and the scalar one; a tiny
    // vocabulary (EAFT's top-20 over fewer than 20 columns).
    if (small) {
        test_loss_objectives(3, 37, 150, cuset_pad_vocab(150), 1);
        test_loss_objectives(2, 16, 2061, cuset_pad_vocab(2061), 0);
        test_loss_objectives(3, 12, 101, 103, 0);
        test_loss_objectives(3, 9, 10, 64, 0);
        test_loss_window_lengths(150, cuset_pad_vocab(150));
    } else {
        test_loss_objectives(8, 512, 2061, cuset_pad_vocab(2061), 1);
        test_loss_objectives(4, 100, 1001, 1003, 1);
        test_loss_objectives(4, 30, 10, 64, 0);
        test_loss_window_lengths(2061, cuset_pad_vocab(2061));
    }
    if (g_failures) printf("test_gpu_attn_loss: %d FAILED (seed %llu)\n", g_failures, (unsigned long long)seed);
    else printf("test_gpu_attn_loss: all passed\n");
    return g_failures ? 1 : 0;
}
