// oracle_case: runs a few optimizer steps of a tiny random GPT with one objective on
// random batches and writes everything test/oracle.py needs to recompute them in
// float64 (format: test/ORACLE.md).
//   oracle_case --seed S --objective NAME [--conf 0|1 --cuda 0|1 --rew 0|1] [--window L]
//               [--steps K] [--accum A] [--clip G] [--embd C --heads H --seq T] --out FILE
// The default model is tiny (C 16, 2 heads, T 12..19); --embd 64 --heads 2 --seq 41 makes
// the matmuls and attention use their full 8 x 32 register tiles as well as edge tiles.
// tau is chosen from the data: the middle of the widest gap between the step-0
// confidences, so no confidence sits near it.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fprintf(stderr, "usage: oracle_case --seed S --objective sft|dft|profit|eaft|asft|cuset [--conf 0|1] [--cuda 0|1]\n"
                    "                   [--rew 0|1] [--window L] [--steps K] [--accum A] [--clip G]\n"
                    "                   [--embd C --heads H --seq T] --out FILE\n");
    exit(2);
}

static float normal(uint64_t *rng) {
    float u1 = cuset_rng_uniform(rng), u2 = cuset_rng_uniform(rng);
    return sqrtf(-2.0f * logf(u1 + 1e-12f)) * cosf(6.2831853f * u2);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// Softmax probability of the target at every target position of the current logits.
static int target_confidences(const CusetGPT *m, const CusetBatch *b, float *out) {
    int V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size, n = 0;
    for (int i = 0; i < b->B * b->T; i++) {
        if (!b->is_target[i]) continue;
        const float *z = m->acts.logits + (size_t)i * Vp;
        double mx = -1e30, s = 0;
        for (int v = 0; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (int v = 0; v < V; v++) s += exp(z[v] - mx);
        out[n++] = (float)(exp(z[b->targets[i]] - mx) / s);
    }
    return n;
}

// A batch with uneven target lengths (some empty, some filling the row) whose target
// tokens are half the model's current argmax, half random, so confidences spread over (0, 1).
// Where the row has room, row 0's target has ceil(l/2) < T_n < l tokens (l: the window), the
// length at which eq. 5 clips windows on both sides.
static void make_batch(CusetGPT *m, CusetBatch *b, int l, uint64_t *rng) {
    int B = b->B, T = b->T, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    int prompt[T], target[T];
    unsigned char cuda[T];
    int np[B], nt[B];
    for (int n = 0; n < B; n++) {
        np[n] = 1 + (int)(cuset_rng_next(rng) % (uint64_t)(T / 2));
        int room = T - np[n] + 1;
        int kind = (int)(cuset_rng_next(rng) % 4);
        nt[n] = kind == 0 ? 0 : kind == 1 ? room : 1 + (int)(cuset_rng_next(rng) % (uint64_t)room);
        int clipped_lo = (l + 1) / 2 + 1, clipped_hi = l - 1 < room ? l - 1 : room;
        if (n == 0 && clipped_lo <= clipped_hi)
            nt[n] = clipped_lo + (int)(cuset_rng_next(rng) % (uint64_t)(clipped_hi - clipped_lo + 1));
        for (int t = 0; t < np[n]; t++) prompt[t] = (int)(cuset_rng_next(rng) % (uint64_t)V);
        for (int k = 0; k < nt[n]; k++) { target[k] = 0; cuda[k] = cuset_rng_uniform(rng) < 0.4f; }
        cuset_batch_set_row(b, n, prompt, np[n], target, cuda, nt[n]);
    }
    // choose the target tokens left to right: position t's logits depend on inputs 0..t only
    for (int t = 0; t < T; t++) {
        cuset_gpt_forward(m, b->inputs, B, T);
        for (int n = 0; n < B; n++) {
            int i = n * T + t;
            if (!b->is_target[i]) continue;
            int tok = (int)(cuset_rng_next(rng) % (uint64_t)V);
            if (cuset_rng_uniform(rng) < 0.5f) {
                const float *z = m->acts.logits + (size_t)i * Vp;
                tok = 0;
                for (int v = 1; v < V; v++) if (z[v] > z[tok]) tok = v;
            }
            b->targets[i] = tok;
            if (t + 1 < T) b->inputs[i + 1] = tok;
        }
    }
}

static void put(FILE *f, const void *p, size_t size, size_t n) {
    if (fwrite(p, size, n, f) != n) { perror("oracle_case: write"); exit(1); }
}
static void put_i32(FILE *f, int32_t x) { put(f, &x, 4, 1); }
static void put_f32(FILE *f, float x) { put(f, &x, 4, 1); }

int main(int argc, char **argv) {
    uint64_t seed = 1;
    int steps = 3, accum = 2, have_obj = 0, C = 16, NH = 2, T = 0;
    float clip = 0.0f;
    const char *out = NULL;
    CusetObjective obj = cuset_objective_default(CUSET_OBJ_SFT);
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        const char *k = argv[i], *v = argv[++i];
        if (!strcmp(k, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--objective")) {
            for (int o = 0; o < CUSET_OBJ_COUNT; o++)
                if (!strcmp(v, cuset_objective_names[o])) { obj = cuset_objective_default(o); have_obj = 1; }
        } else if (!strcmp(k, "--conf")) obj.conf_mask = atoi(v);
        else if (!strcmp(k, "--cuda")) obj.cuda_mask = atoi(v);
        else if (!strcmp(k, "--rew")) obj.reweight = atoi(v);
        else if (!strcmp(k, "--window")) obj.window = atoi(v);
        else if (!strcmp(k, "--steps")) steps = atoi(v);
        else if (!strcmp(k, "--accum")) accum = atoi(v);
        else if (!strcmp(k, "--clip")) clip = (float)atof(v);
        else if (!strcmp(k, "--embd")) C = atoi(v);
        else if (!strcmp(k, "--heads")) NH = atoi(v);
        else if (!strcmp(k, "--seq")) T = atoi(v);
        else if (!strcmp(k, "--out")) out = v;
        else usage();
    }
    if (!out || !have_obj || steps < 1 || accum < 1 || obj.window < 1 || NH < 1 || C % NH || T < 0) usage();
    obj.lambda = 1.5f; // not 1, so that M = 1 + lambda differs from 2 x the confidence mask
    obj.alpha = 1.3f;
    obj.beta = 0.3f;

    uint64_t rng = seed;
    int V = 40 + (int)(cuset_rng_next(&rng) % 60), B = 4;
    if (T == 0) T = 12 + (int)(cuset_rng_next(&rng) % 8);
    CusetConfig cfg = {V, cuset_pad_vocab(V), T + 3, 2, NH, C};
    CusetGPT model, ref;
    cuset_gpt_init(&model, &cfg);
    // a peaky random model: large embeddings, perturbed LayerNorm gains and biases
    for (int t = 0; t < CUSET_NUM_TENSORS; t++) {
        float *p = ((float **)&model.params)[t];
        size_t n = t == 0 ? (size_t)V * cfg.n_embd : model.tensor_sizes[t];
        int gain = t == 2 || t == 8 || t == 14;
        for (size_t i = 0; i < n; i++) p[i] = (gain ? 1.0f : 0.0f) + (t == 0 ? 0.8f : 0.25f) * normal(&rng);
    }
    cuset_gpt_init(&ref, &cfg);
    memcpy(ref.params_memory, model.params_memory, model.num_params * sizeof(float));

    CusetBatch batches[steps * accum];
    for (int i = 0; i < steps * accum; i++) {
        cuset_batch_alloc(&batches[i], B, T);
        make_batch(&model, &batches[i], obj.window, &rng);
    }
    // tau: the middle of the widest gap between sorted step-0 confidences in the middle half
    float confs[accum * B * T];
    int nc = 0;
    for (int a = 0; a < accum; a++) {
        cuset_gpt_forward(&model, batches[a].inputs, B, T);
        nc += target_confidences(&model, &batches[a], confs + nc);
    }
    qsort(confs, nc, sizeof(float), cmp_float);
    obj.tau = 0.5f;
    float widest = -1.0f;
    for (int i = nc / 4; i + 1 < nc && i < 3 * nc / 4; i++)
        if (confs[i + 1] - confs[i] > widest) { widest = confs[i + 1] - confs[i]; obj.tau = 0.5f * (confs[i] + confs[i + 1]); }

    CusetOptim opt = {3e-3f, 3e-4f, 2, steps + 1, 0.9f, 0.95f, 1e-6f, 0.1f, clip};
    FILE *f = fopen(out, "wb");
    if (!f) { perror(out); return 1; }
    put(f, "CUSETORC", 1, 8);
    int32_t hdr[] = {1, V, cfg.padded_vocab_size, cfg.max_seq_len, cfg.n_layer, cfg.n_head, cfg.n_embd, B, T, steps, accum,
                     obj.kind, obj.conf_mask, obj.cuda_mask, obj.reweight, obj.window};
    put(f, hdr, 4, sizeof hdr / 4);
    put_f32(f, obj.tau); put_f32(f, obj.lambda); put_f32(f, obj.alpha); put_f32(f, obj.beta);
    put_f32(f, opt.max_lr); put_f32(f, opt.min_lr); put_i32(f, opt.warmup); put_i32(f, opt.total);
    put_f32(f, opt.beta1); put_f32(f, opt.beta2); put_f32(f, opt.eps); put_f32(f, opt.weight_decay);
    put_f32(f, opt.grad_clip);
    for (int i = 0; i < steps * accum; i++) {
        CusetBatch *b = &batches[i];
        put(f, b->inputs, 4, B * T); put(f, b->targets, 4, B * T);
        put(f, b->is_target, 1, B * T); put(f, b->is_cuda, 1, B * T);
    }
    put(f, model.params_memory, 4, model.num_params);

    float losses[steps], ces[steps], grad_norm0 = 0.0f, min_gap = 1.0f;
    float *grads0 = malloc(model.num_params * sizeof(float));
    int uses_tau = obj.kind == CUSET_OBJ_PROFIT || (obj.kind == CUSET_OBJ_CUSET && obj.conf_mask);
    for (int s = 0; s < steps; s++) {
        int ntok = 0;
        for (int a = 0; a < accum; a++) ntok += cuset_batch_target_tokens(&batches[s * accum + a]);
        CusetStats st = {0};
        cuset_gpt_zero_grad(&model);
        for (int a = 0; a < accum; a++) {
            CusetBatch *b = &batches[s * accum + a];
            char err[256];
            if (cuset_batch_check(b, V, err, sizeof err)) { fprintf(stderr, "oracle_case: %s\n", err); return 1; }
            const float *ref_logits = NULL;
            if (obj.kind == CUSET_OBJ_ASFT) { cuset_gpt_forward(&ref, b->inputs, B, T); ref_logits = ref.acts.logits; }
            cuset_gpt_forward(&model, b->inputs, B, T);
            if (s == 0 && a == 0) put(f, model.acts.logits, 4, (size_t)B * T * cfg.padded_vocab_size);
            float c[B * T];
            int n = target_confidences(&model, b, c);
            for (int k = 0; k < n && uses_tau; k++) min_gap = fminf(min_gap, fabsf(c[k] - obj.tau));
            cuset_loss(&model, b, &obj, ref_logits, ntok ? 1.0f / ntok : 0.0f, &st);
            cuset_gpt_backward(&model, b->inputs);
        }
        losses[s] = (float)st.loss;
        ces[s] = st.ntok ? (float)(st.ce / st.ntok) : 0.0f;
        float norm = cuset_gpt_grad_norm(&model);
        if (s == 0) { grad_norm0 = norm; memcpy(grads0, model.grads_memory, model.num_params * sizeof(float)); }
        cuset_gpt_update(&model, &opt, s, norm);
    }
    put(f, losses, 4, steps);
    put(f, ces, 4, steps);
    put(f, grads0, 4, model.num_params);
    put_f32(f, grad_norm0);
    put(f, model.params_memory, 4, model.num_params);
    put_f32(f, min_gap);
    if (fclose(f) != 0) { perror(out); return 1; }
    for (int i = 0; i < steps * accum; i++) cuset_batch_free(&batches[i]);
    free(grads0);
    cuset_gpt_free(&model);
    cuset_gpt_free(&ref);
    return 0;
}
