// Unit tests of cuset.h: hand-computed objective cases, exact identities between
// objectives, finite differences, checkpoints (good and damaged), batches, determinism.
// Prints PASS/FAIL/SKIP lines; exits 1 if anything failed. Fresh random inputs each run;
// CUSET_SEED=N repeats a run.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"
#include "testlib.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
static void check(int ok, const char *name, const char *fmt, ...) {
    if (ok) { printf("PASS %s\n", name); return; }
    failures++;
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static uint64_t rng;

// ---- the objective's math by hand -------------------------------------------------------------

// C_n by METHOD.md eqs. 5-7 written out directly (1-based, every window summed afresh).
static double hardest_window_by_hand(const float *conf, int n, int l) {
    double best = 1.0;
    for (int t = 1; t <= n; t++) {
        int lo = t - l / 2 > 1 ? t - l / 2 : 1, hi = t + (l + 1) / 2 - 1 < n ? t + (l + 1) / 2 - 1 : n;
        double s = 0;
        for (int j = lo; j <= hi; j++) s += conf[j - 1];
        if (t == 1 || s / (hi - lo + 1) < best) best = s / (hi - lo + 1);
    }
    return best;
}

static void test_windows(void) {
    // METHOD.md eq. 5-7 worked by hand for conf = .9 .1 .8 .6 .2 1 (n = 6):
    // l=1 single tokens -> .1; l=2 [j-1,j] -> min(.9,.5,.45,.7,.4,.6) = .4;
    // l=3 [j-1,j+1] -> min(.5,.6,.5,.5333,.6,.6) = .5; l=4 [j-2,j+1] -> (.1+.8+.6+.2)/4 = .425;
    // l=6 [j-3,j+2] -> (.9+.1+.8+.6+.2)/5 = .52; l=7 [j-3,j+3] (ceil(7/2) = 4 < n: clipped
    // windows) -> min(.6,.52,.6,.6,.54,.65) = .52; l=12 (ceil(12/2) = 6 >= n): every
    // window is the whole target, the mean .6.
    const float conf[6] = {0.9f, 0.1f, 0.8f, 0.6f, 0.2f, 1.0f};
    const int ls[7] = {1, 2, 3, 4, 6, 7, 12};
    const float want[7] = {0.1f, 0.4f, 0.5f, 0.425f, 0.52f, 0.52f, 0.6f};
    for (int i = 0; i < 7; i++) {
        char name[64];
        snprintf(name, sizeof name, "hardest_window_l%d", ls[i]);
        float got = cuset_hardest_window(conf, 6, ls[i]);
        check(fabsf(got - want[i]) < 1e-6f, name, "got %.7f want %.7f", got, want[i]);
    }
    // window bounds against METHOD.md's 1-based formula, clipped at both ends
    int ok = 1;
    for (int l = 1; l <= 9 && ok; l++)
        for (int n = 1; n <= 12 && ok; n++)
            for (int t = 1; t <= n && ok; t++) {
                int lo, hi, a = t - l / 2, b = t + (l + 1) / 2 - 1;
                cuset_window(t - 1, n, l, &lo, &hi);
                ok = lo + 1 == (a > 1 ? a : 1) && hi + 1 == (b < n ? b : n);
            }
    check(ok, "window_bounds_1based_formula", "mismatch");
    float ones[5] = {1, 1, 1, 1, 1};
    check(cuset_sample_weight(cuset_hardest_window(ones, 5, 2)) == 0.0f, "weight_zero_when_all_confident", "w != 0");
    check(cuset_hardest_window(conf, 0, 4) == 1.0f, "empty_target_window", "not 1");
    // METHOD.md's worked case: l = 7, T_n = 6; windows 1..4 1..5 1..6 1..6 2..6 3..6 have
    // means .7 .58 .5 .5 .42 .3, so C_n = .3 and w_n = .7 (not the whole mean .5)
    const float worked[6] = {0.9f, 0.9f, 0.9f, 0.1f, 0.1f, 0.1f};
    float wn = cuset_sample_weight(cuset_hardest_window(worked, 6, 7));
    check(fabsf(wn - 0.7f) < 1e-6f, "worked_case_l7_T6_w_0.7", "w_n %.7f, want 0.7", wn);
    // odd and even l, T_n around ceil(l/2) and l: eq. 5 as written, no special case; at
    // T_n <= ceil(l/2) every window is the whole target, so C_n is the mean
    const int lens[5] = {7, 8, 63, 64, 256};
    float *c = (float *)malloc(300 * sizeof(float));
    for (int i = 0; i < 5; i++) {
        int l = lens[i], h = (l + 1) / 2, ns[5] = {h, h + 1, l - 1, l, l + 1};
        for (int k = 0; k < 5; k++) {
            int n = ns[k];
            double mean = 0, worst = 0;
            for (int r = 0; r < 20; r++) { // random confidences, with a low stretch somewhere
                int dip = (int)(cuset_rng_next(&rng) % n);
                mean = 0;
                for (int j = 0; j < n; j++) {
                    c[j] = cuset_rng_uniform(&rng);
                    if (abs(j - dip) < 3) c[j] *= 0.1f;
                    mean += c[j];
                }
                mean /= n;
                double want_c = hardest_window_by_hand(c, n, l), got = cuset_hardest_window(c, n, l);
                if (fabs(got - want_c) > worst) worst = fabs(got - want_c);
                if (n == h && fabs(got - mean) > worst) worst = fabs(got - mean);
            }
            char name[64];
            snprintf(name, sizeof name, "hardest_window_l%d_T%d", l, n);
            check(worst < 2e-6, name, "differs from eq. 5-7 by hand by %.3g", worst);
        }
    }
    // continuity: appending a token moves C_n by at most one token's share of the smallest
    // window, 1 / min(T_n, ceil(l/2)) (confidences lie in [0, 1]); no jump at T_n = l
    double worst = 0;
    for (int l = 1; l <= 40; l++)
        for (int r = 0; r < 10; r++) {
            int n = 1 + (int)(cuset_rng_next(&rng) % 120), h = (l + 1) / 2;
            for (int j = 0; j <= n; j++) c[j] = (cuset_rng_next(&rng) & 1) ? 1.0f : cuset_rng_uniform(&rng) * 0.2f;
            double d = fabs(cuset_hardest_window(c, n + 1, l) - cuset_hardest_window(c, n, l)) * (n < h ? n : h);
            if (d > worst) worst = d;
        }
    check(worst <= 1.0 + 1e-5, "hardest_window_continuous_in_T", "appending a token moved C_n by %.3f token shares", worst);
    free(c);
}

static void test_eaft_and_topk(void) {
    float top[CUSET_EAFT_TOPK];
    int n = 0;
    for (int i = 0; i < 50; i++) cuset_topk_push(top, &n, CUSET_EAFT_TOPK, 0.25f); // 50 equal logits
    float w = cuset_eaft_weight(top, n, 1.0f), want = logf(20.0f) / 3.0f;
    check(n == 20 && fabsf(w - want) < 1e-6f, "eaft_uniform_top20", "n %d weight %f want %f", n, w, want);
    float peaked[3] = {50.0f, 0.0f, 0.0f};
    check(cuset_eaft_weight(peaked, 3, 1.0f) < 1e-6f, "eaft_peaked_zero", "weight %g", cuset_eaft_weight(peaked, 3, 1.0f));
    check(fabsf(cuset_eaft_weight(top, n, 2.0f) - want * want) < 1e-6f, "eaft_alpha_power", "alpha 2 wrong");
    int ok = 1;
    for (int trial = 0; trial < 100 && ok; trial++) {
        float z[200], sorted[200];
        int k = 1 + (int)(cuset_rng_next(&rng) % 25), nz = 1 + (int)(cuset_rng_next(&rng) % 200);
        n = 0;
        for (int i = 0; i < nz; i++) {
            z[i] = (float)(cuset_rng_next(&rng) % 30); // many ties
            cuset_topk_push(top, &n, k < 20 ? k : 20, z[i]);
        }
        memcpy(sorted, z, sizeof z);
        for (int i = 0; i < nz; i++) // selection sort descending, plainly
            for (int j = i + 1; j < nz; j++)
                if (sorted[j] > sorted[i]) { float t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t; }
        int want_n = nz < (k < 20 ? k : 20) ? nz : (k < 20 ? k : 20);
        ok = n == want_n;
        for (int i = 0; i < n && ok; i++) ok = top[i] == sorted[i];
    }
    check(ok, "topk_matches_sort", "top-k differs from a full sort");
}

static void test_lr_schedule(void) {
    CusetOptim o = cuset_optim_default();
    o.max_lr = 1e-3f; o.min_lr = 1e-4f; o.warmup = 10; o.total = 110;
    const int steps[5] = {0, 9, 10, 60, 110};
    const float want[5] = {1e-4f, 1e-3f, 1e-3f, 5.5e-4f, 1e-4f}; // warmup 1/10, peak, peak, cosine middle, end
    int ok = 1;
    for (int i = 0; i < 5; i++) ok &= fabsf(cuset_lr_at(&o, steps[i]) - want[i]) < 1e-9f;
    check(ok, "lr_warmup_cosine", "lr(60) = %g", cuset_lr_at(&o, 60));
}

// ---- the loss: identities between objectives -----------------------------------------------------

// A model-free setting for the loss: random logits in a CusetGPT's activation buffer.
static void random_loss_setup(CusetGPT *m, CusetBatch *b, int V, int B, int T) {
    CusetConfig cfg = {V, cuset_pad_vocab(V), T, 1, 1, 8};
    cuset_gpt_init(m, &cfg);
    int in[1] = {0};
    cuset_gpt_forward(m, in, 1, 1); // allocate once at the right size below
    cuset_batch_alloc(b, B, T);
    for (int n = 0; n < B; n++) {
        int np = 1 + (int)(cuset_rng_next(&rng) % 4), nt = n == 0 ? T - np + 1 : (int)(cuset_rng_next(&rng) % (T - np + 2));
        int prompt[T], target[T];
        unsigned char cuda[T];
        for (int i = 0; i < T; i++) {
            prompt[i] = target[i] = (int)(cuset_rng_next(&rng) % V);
            cuda[i] = cuset_rng_uniform(&rng) < 0.3f;
        }
        cuset_batch_set_row(b, n, prompt, np, target, cuda, nt);
    }
}

static void fill_logits(CusetGPT *m, const CusetBatch *b, float spread) {
    int Vp = m->cfg.padded_vocab_size, V = m->cfg.vocab_size;
    for (int i = 0; i < b->B * b->T; i++)
        for (int v = 0; v < Vp; v++) m->acts.logits[(size_t)i * Vp + v] = v < V ? spread * (cuset_rng_uniform(&rng) - 0.5f) : 0.0f;
}

static void run_loss(CusetGPT *m, const CusetBatch *b, const CusetObjective *o, const float *logits, float *out, double *loss) {
    size_t n = (size_t)b->B * b->T * m->cfg.padded_vocab_size;
    memcpy(m->acts.logits, logits, n * sizeof(float));
    CusetStats st = {0};
    int ntok = cuset_batch_target_tokens(b);
    cuset_loss(m, b, o, NULL, ntok ? 1.0f / ntok : 0.0f, &st);
    memcpy(out, m->acts.logits, n * sizeof(float));
    *loss = st.loss;
}

// The method's numbers one by one, worked by hand from METHOD.md: the paper's defaults, the
// masks at tau (CuSeT's > against ProFit's >=), the CUDA mask's lambda, DFT's coefficient,
// ASFT's loss and logit gradients on a two-word vocabulary, the first of equal windows.
static void test_method_by_hand(void) {
    CusetObjective d = cuset_objective_default(CUSET_OBJ_CUSET);
    check(d.tau == 0.1f && d.lambda == 1.0f && d.window == 256 && d.alpha == 1.0f && d.beta == 0.1f && d.conf_mask &&
              d.cuda_mask && d.reweight, "defaults_are_the_papers",
          "tau %g lambda %g l %d alpha %g beta %g switches %d %d %d", d.tau, d.lambda, d.window, d.alpha, d.beta,
          d.conf_mask, d.cuda_mask, d.reweight);
    CusetObjective profit = cuset_objective_default(CUSET_OBJ_PROFIT), dft = cuset_objective_default(CUSET_OBJ_DFT);
    profit.tau = 0.25f;
    check(cuset_conf_mask(0.25f, 0.25f) == 0.0f && cuset_token_coef(&profit, 0.25f, 0, 1, 0) == 1.0f,
          "masks_at_tau", "eq. 2: 1[c > tau] is 0 at c = tau; ProFit's 1[p >= tau] is 1");
    CusetObjective cuda = d; // eq. 4: M = Mconf + lambda 1[CUDA]; without reweighting w_n = 1
    cuda.lambda = 1.5f, cuda.reweight = 0, cuda.conf_mask = 0;
    float cuda_off = cuset_token_coef(&cuda, 0.05f, 0, 0.3f, 0), cuda_on = cuset_token_coef(&cuda, 0.05f, 1, 0.3f, 0);
    cuda.conf_mask = 1; // c = 0.05 < tau: only the CUDA mask is left
    float masked_off = cuset_token_coef(&cuda, 0.05f, 0, 0.3f, 0), masked_on = cuset_token_coef(&cuda, 0.05f, 1, 0.3f, 0);
    cuda.reweight = 1;
    float weighted = cuset_token_coef(&cuda, 0.5f, 1, 0.3f, 0);
    check(cuda_off == 1.0f && cuda_on == 2.5f && masked_off == 0.0f && masked_on == 1.5f && fabsf(weighted - 0.75f) < 1e-6f,
          "cuda_mask_lambda", "coefficients %g %g, below tau %g %g, w_n 0.3 with c > tau %g (want 1 2.5 0 1.5 0.75)",
          cuda_off, cuda_on, masked_off, masked_on, weighted);
    check(cuset_token_coef(&dft, 0.3f, 0, 0, 0) == 0.3f, "dft_coefficient_is_p", "%g", cuset_token_coef(&dft, 0.3f, 0, 0, 0));

    // ASFT, vocabulary {0, 1}, target 1, logits (0, ln 3): p = (1/4, 3/4); the reference's
    // (0, 0): p_ref = (1/2, 1/2); beta 0.1, N = 2. a = c = 3/4 (the DFT part);
    // KL(p_ref || p) = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3); loss = (3/4 ln(4/3) + 0.1 KL) / 2;
    // dz_v = (a (p_v - 1[v = 1]) + 0.1 (p_v - p_ref_v)) / 2: (0.1625, -0.1625) / 2.
    CusetObjective asft = cuset_objective_default(CUSET_OBJ_ASFT);
    float lse = logf(4.0f), lp[2] = {-lse, logf(3.0f) - lse}, lp_ref = -logf(2.0f);
    float c = cuset_confidence(logf(3.0f), lse), a = cuset_token_coef(&asft, c, 0, 1, 0);
    double kl = (double)cuset_kl_term(lp_ref, lp[0]) + cuset_kl_term(lp_ref, lp[1]);
    double loss = cuset_loss_term(&asft, a, -logf(c), kl, 0.5f), want = (0.75 * log(4.0 / 3) + 0.05 * log(4.0 / 3)) / 2;
    float g0 = cuset_logit_grad(&asft, a, lp[0], lp_ref, 0, 0.5f), g1 = cuset_logit_grad(&asft, a, lp[1], lp_ref, 1, 0.5f);
    check(fabs(loss - want) < 1e-6 && fabsf(g0 - 0.08125f) < 1e-6f && fabsf(g1 + 0.08125f) < 1e-6f, "asft_by_hand",
          "c %g a %g KL %.7g loss %.7g (want %.7g), gradients %.7g %.7g (want 0.08125, -0.08125)", c, a, kl, loss, want,
          g0, g1);

    const float flat[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    int lo, hi;
    cuset_hardest_window_at(flat, 4, 1, &lo, &hi);
    check(lo == 0 && hi == 0, "hardest_window_first_of_equal_means", "window [%d, %d], want [0, 0]", lo, hi);
}

// Gradient accumulation: N is the step's target tokens over all its micro-batches (eq. 9),
// so a step over micro-batches X and Y gives the gradients and loss of one step over one
// batch holding X's and Y's rows (their target counts differ).
static void test_accumulation(void) {
    CusetConfig cfg = {50, 64, 16, 1, 2, 16};
    CusetGPT m, ref;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init_random(&m, cuset_rng_next(&rng), 0.5f);
    cuset_gpt_init(&ref, &cfg);
    cuset_gpt_init_random(&ref, cuset_rng_next(&rng), 0.5f);
    CusetDataset d;
    cuset_dataset_synthetic(&d, 4, 50, 2, 7, cuset_rng_next(&rng)); // rows of at most 16 tokens
    int ids[4] = {0, 1, 2, 3};
    char err[256] = "";
    CusetBatch xy[2], whole;
    cuset_batch_alloc(&xy[0], 2, 16);
    cuset_batch_alloc(&xy[1], 2, 16);
    cuset_batch_alloc(&whole, 4, 16);
    cuset_batch_from_dataset(&xy[0], &d, ids, 2, err, sizeof err);
    cuset_batch_from_dataset(&xy[1], &d, ids + 2, 2, err, sizeof err);
    cuset_batch_from_dataset(&whole, &d, ids, 4, err, sizeof err);
    float *split = malloc(m.num_params * sizeof(float));
    const CusetObjectiveKind kinds[2] = {CUSET_OBJ_CUSET, CUSET_OBJ_ASFT};
    for (int k = 0; k < 2; k++) {
        CusetObjective o = cuset_objective_default(kinds[k]);
        o.window = 3;
        CusetStats s2 = {0}, s1 = {0};
        float n2, n1;
        int rc = cuset_gpt_step(&m, &ref, NULL, xy, 2, &o, &s2, &n2, err, sizeof err);
        memcpy(split, m.grads_memory, m.num_params * sizeof(float));
        rc |= cuset_gpt_step(&m, &ref, NULL, &whole, 1, &o, &s1, &n1, err, sizeof err);
        double worst = 0, largest = 0;
        for (size_t i = 0; i < m.num_params; i++) {
            worst = fmax(worst, fabs(split[i] - m.grads_memory[i]));
            largest = fmax(largest, fabs(m.grads_memory[i]));
        }
        char name[64];
        snprintf(name, sizeof name, "accumulation_is_one_batch_%s", cuset_objective_names[kinds[k]]);
        check(!rc && worst <= 1e-5 * largest && fabs(s2.loss - s1.loss) <= 1e-5 * fabs(s1.loss) && s2.ntok == s1.ntok,
              name, "%s; gradients differ by %.3g of the largest %.3g, loss %.7g against %.7g, N %g against %g", err,
              worst, largest, s2.loss, s1.loss, s2.ntok, s1.ntok);
    }
    free(split);
    cuset_batch_free(&xy[0]);
    cuset_batch_free(&xy[1]);
    cuset_batch_free(&whole);
    cuset_dataset_free(&d);
    cuset_gpt_free(&m);
    cuset_gpt_free(&ref);
}

static void test_identities(void) {
    int V = 70, B = 6, T = 24;
    CusetGPT m;
    CusetBatch b;
    random_loss_setup(&m, &b, V, B, T);
    cuset__alloc_acts(&m, B, T);
    size_t n = (size_t)B * T * m.cfg.padded_vocab_size;
    float *logits = malloc(n * 4), *g1 = malloc(n * 4), *g2 = malloc(n * 4);
    fill_logits(&m, &b, 12.0f);
    memcpy(logits, m.acts.logits, n * 4);
    double l1, l2;

    CusetObjective sft = cuset_objective_default(CUSET_OBJ_SFT), cs = cuset_objective_default(CUSET_OBJ_CUSET);
    cs.conf_mask = cs.cuda_mask = cs.reweight = 0;
    run_loss(&m, &b, &sft, logits, g1, &l1);
    run_loss(&m, &b, &cs, logits, g2, &l2);
    check(l1 == l2 && !memcmp(g1, g2, n * 4), "cuset_all_off_equals_sft", "loss %.9g vs %.9g", l1, l2);

    CusetObjective pf = cuset_objective_default(CUSET_OBJ_PROFIT);
    cs.conf_mask = 1;
    pf.tau = cs.tau = 0.0137f; // no confidence equals it: > and >= agree
    run_loss(&m, &b, &pf, logits, g1, &l1);
    run_loss(&m, &b, &cs, logits, g2, &l2);
    check(l1 == l2 && !memcmp(g1, g2, n * 4), "cuset_conf_only_equals_profit", "loss %.9g vs %.9g", l1, l2);
    double pass = 0;
    {
        CusetStats st = {0};
        memcpy(m.acts.logits, logits, n * 4);
        cuset_loss(&m, &b, &cs, NULL, 1.0f, &st);
        pass = st.pass / st.ntok;
    }
    check(pass > 0.05 && pass < 0.95, "profit_identity_is_not_trivial", "share passing tau %.3f", pass);

    // the logits' gradient of every target row sums to zero over the vocabulary
    // (softmax - onehot sums to 0, and so does p_theta - p_ref); non-target rows are 0
    int ok = 1;
    for (int i = 0; i < B * T && ok; i++) {
        double s = 0, a = 0;
        for (int v = 0; v < m.cfg.padded_vocab_size; v++) { s += g2[(size_t)i * m.cfg.padded_vocab_size + v]; a += fabs(g2[(size_t)i * m.cfg.padded_vocab_size + v]); }
        ok = b.is_target[i] ? fabs(s) < 1e-6 : a == 0.0;
    }
    check(ok, "dlogits_rows_sum_to_zero", "a row does not");

    // w_n = 0 for a sample whose every target token has confidence 1: its gradient vanishes
    for (int i = 0; i < B * T; i++)
        if (i / T == 0 && b.is_target[i]) {
            for (int v = 0; v < V; v++) logits[(size_t)i * m.cfg.padded_vocab_size + v] = v == b.targets[i] ? 100.0f : 0.0f;
        }
    cs.conf_mask = cs.cuda_mask = cs.reweight = 1;
    run_loss(&m, &b, &cs, logits, g1, &l1);
    float wn = m.loss_scratch[3 * B * T];
    double row0 = 0;
    for (int i = 0; i < T * m.cfg.padded_vocab_size; i++) row0 += fabs(g1[i]);
    check(b.tgt_len[0] > 0 && wn == 0.0f && row0 == 0.0, "confident_sample_weight_zero", "w_0 = %g, |grad row 0| = %g", wn, row0);
    free(logits); free(g1); free(g2);
    cuset_batch_free(&b);
    cuset_gpt_free(&m);
}

// ---- the model: finite differences of the SFT loss --------------------------------------------------

static double sft_loss(CusetGPT *m, const CusetBatch *b) {
    CusetObjective o = cuset_objective_default(CUSET_OBJ_SFT);
    CusetStats st = {0};
    cuset_gpt_forward(m, b->inputs, b->B, b->T);
    cuset_loss(m, b, &o, NULL, 1.0f / cuset_batch_target_tokens(b), &st);
    return st.loss;
}

static double central_difference(CusetGPT *m, const CusetBatch *b, float *param, float h) {
    float saved = *param;
    *param = saved + h; double up = sft_loss(m, b);
    *param = saved - h; double down = sft_loss(m, b);
    *param = saved;
    return (up - down) / (2.0 * h);
}

static void test_finite_differences(void) {
    CusetConfig cfg = {37, 64, 10, 2, 2, 8};
    CusetGPT m;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init_random(&m, cuset_rng_next(&rng), 0.3f);
    for (int t = 0; t < CUSET_NUM_TENSORS; t++) // nonzero biases and gains away from 1
        if (!cuset_tensor_decay[t]) { float *p = ((float **)&m.params)[t]; for (size_t i = 0; i < m.tensor_sizes[t]; i++) p[i] += 0.2f * (cuset_rng_uniform(&rng) - 0.5f); }
    CusetBatch b;
    cuset_batch_alloc(&b, 3, 10);
    for (int n = 0; n < 3; n++) {
        int p[10], t[10];
        for (int i = 0; i < 10; i++) { p[i] = (int)(cuset_rng_next(&rng) % 37); t[i] = (int)(cuset_rng_next(&rng) % 37); }
        cuset_batch_set_row(&b, n, p, 2 + n, t, NULL, 6);
    }
    sft_loss(&m, &b);
    cuset_gpt_zero_grad(&m);
    cuset_gpt_backward(&m, b.inputs);
    for (int t = 0; t < CUSET_NUM_TENSORS; t++) { // the largest gradient entry of each tensor
        float *p = ((float **)&m.params)[t], *g = ((float **)&m.grads)[t];
        size_t best = 0;
        for (size_t i = 1; i < m.tensor_sizes[t]; i++) if (fabsf(g[i]) > fabsf(g[best])) best = i;
        // Richardson: central differences at h and h/2 combined cancel their h^2 error term. A plain
        // one at h = 1e-2 was off by 2.9-5.7% in 5 checks of seeds 1-600 (at h/2 the error shrank
        // ~4x: the h^2 term, not the backward); combined, the worst of 600 x 16 was 9.3e-4.
        double fd1 = central_difference(&m, &b, p + best, 1e-2f), fd2 = central_difference(&m, &b, p + best, 5e-3f);
        double fd = (4 * fd2 - fd1) / 3, rel = fabs(fd - g[best]) / fmax(fabs(g[best]), 1e-6);
        char name[64];
        snprintf(name, sizeof name, "finite_difference_%s", cuset_tensor_names[t]);
        check(rel < 5e-3, name, "entry %zu: backward %.6g, central difference %.6g (rel %.2e)", best, g[best], fd, rel);
    }
    cuset_batch_free(&b);
    cuset_gpt_free(&m);
}

// ---- flash-style attention against the materialised reference -----------------------------------

// max |a[i] - b[i]| (b NULL: max |a[i]|). Written with a comparison, not fmax: gcc 12 on
// aarch64 crashes (internal compiler error) vectorizing an fmax reduction at -O3.
static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (b ? b[i] : 0.0f));
        if (d > m) m = d;
    }
    return m;
}

// cuset__attention_forward_flash/backward_flash (what training runs) against
// cuset__attention_forward/backward (T x T scores kept): outputs, the log-sum-exp of each row
// and dqkv, at shapes with several query tiles, a partial last tile and head sizes 8, 32, 64.
static void test_attention_flash(void) {
    int shapes[][4] = {{2, 70, 32, 4}, {1, 130, 128, 4}, {1, 64, 128, 2}, {2, 200, 64, 2}}; // B, T, C, NH
    for (int s = 0; s < 4; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], NH = shapes[s][3], hs = C / NH;
        size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
        float *qkv = malloc(nq * 4), *dout = malloc(no * 4), *out = calloc(no, 4), *out_f = calloc(no, 4);
        float *att = calloc(na, 4), *att_t = calloc(na, 4), *datt = calloc(na, 4), *lse = calloc((size_t)B * NH * T, 4);
        float *scratch = calloc(2 * no, 4), *dqkv = calloc(nq, 4), *dqkv_f = calloc(nq, 4);
        for (size_t i = 0; i < nq; i++) qkv[i] = 2.0f * (cuset_rng_uniform(&rng) - 0.5f);
        for (size_t i = 0; i < no; i++) dout[i] = cuset_rng_uniform(&rng) - 0.5f;
        cuset__attention_forward(out, att, scratch, qkv, B, T, C, NH);
        cuset__attention_backward(dqkv, datt, att_t, scratch, dout, qkv, att, B, T, C, NH);
        cuset__attention_forward_flash(out_f, lse, scratch, qkv, B, T, C, NH);
        cuset__attention_backward_flash(dqkv_f, scratch, dout, qkv, out_f, lse, B, T, C, NH);
        double el = 0, eo = max_abs_diff(out_f, out, no), mo = max_abs_diff(out, NULL, no);
        double ed = max_abs_diff(dqkv_f, dqkv, nq), md = max_abs_diff(dqkv, NULL, nq);
        for (int bh = 0; bh < B * NH; bh++) // lse against the reference's probabilities: att = exp(s - lse)
            for (int t = 0; t < T; t++) {
                int b = bh / NH, h = bh % NH;
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs, *k = qkv + (size_t)b * T * 3 * C + C + h * hs;
                double sc = 0;
                for (int i = 0; i < hs; i++) sc += (double)q[i] * k[i]; // key 0
                sc /= sqrt(hs);
                el = fmax(el, fabs(exp(sc - lse[(size_t)bh * T + t]) - att[((size_t)bh * T + t) * T]));
            }
        char name[96];
        snprintf(name, sizeof name, "attention_flash_matches_reference_B%d_T%d_C%d_NH%d", B, T, C, NH);
        check(eo <= 1e-5 * mo && ed <= 1e-5 * md && el <= 1e-5, name,
              "max abs difference: out %.2e (of %.2e), dqkv %.2e (of %.2e), exp(s - lse) %.2e", eo, mo, ed, md, el);
        free(qkv); free(dout); free(out); free(out_f); free(att); free(att_t); free(datt); free(lse);
        free(scratch); free(dqkv); free(dqkv_f);
    }
}

// ---- determinism across thread counts ----------------------------------------------------------

static void train_steps(CusetGPT *m, int threads, int steps) {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    CusetConfig cfg = {300, 320, 40, 2, 4, 64};
    cuset_gpt_init(m, &cfg);
    cuset_gpt_init_random(m, 7, 0.02f);
    CusetDataset d;
    cuset_dataset_synthetic(&d, 64, 300, 4, 20, 3);
    int order[64];
    cuset_shuffle(order, 64, 3, 0);
    CusetBatch b;
    cuset_batch_alloc(&b, 5, 40);
    CusetObjective o = cuset_objective_default(CUSET_OBJ_CUSET);
    o.window = 7;
    CusetOptim opt = cuset_optim_default();
    opt.total = steps;
    char err[128];
    for (int s = 0; s < steps; s++) {
        cuset_batch_from_dataset(&b, &d, order + s * 5, 5, err, sizeof err);
        CusetStats st = {0};
        cuset_gpt_zero_grad(m);
        cuset_gpt_forward(m, b.inputs, 5, 40);
        cuset_loss(m, &b, &o, NULL, 1.0f / cuset_batch_target_tokens(&b), &st);
        cuset_gpt_backward(m, b.inputs);
        cuset_gpt_update(m, &opt, s, cuset_gpt_grad_norm(m));
    }
    cuset_batch_free(&b);
    cuset_dataset_free(&d);
}

static void test_determinism(void) {
#ifdef _OPENMP
    int saved = omp_get_max_threads();
#endif
    CusetGPT a, b;
    train_steps(&a, 1, 3);
    train_steps(&b, 2, 3);
    check(!memcmp(a.params_memory, b.params_memory, a.num_params * 4), "bitwise_same_with_1_and_2_threads", "parameters differ");
    cuset_gpt_free(&a);
    cuset_gpt_free(&b);
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
}

// ---- batches --------------------------------------------------------------------------------------

static void test_batches(void) {
    CusetBatch b;
    cuset_batch_alloc(&b, 2, 8);
    int prompt[3] = {1, 5, 6}, target[10] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    unsigned char cuda[10] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    int dropped = cuset_batch_set_row(&b, 0, prompt, 3, target, cuda, 10);
    // s = 1 5 6 10 11 12 13 14 | 15 ...: positions 2..7 predict 10..15; 4 target tokens dropped
    int ok = dropped == 4 && b.tgt_start[0] == 2 && b.tgt_len[0] == 6 && b.targets[2] == 10 && b.targets[7] == 15 &&
             b.inputs[3] == 10 && b.inputs[7] == 14 && b.is_cuda[3] == 1 && b.is_cuda[2] == 0 && b.targets[0] == 5;
    check(ok, "batch_row_layout_and_truncation", "dropped %d start %d len %d", dropped, b.tgt_start[0], b.tgt_len[0]);
    int big[9] = {0};
    check(cuset_batch_set_row(&b, 1, big, 9, target, NULL, 2) == -1, "batch_prompt_longer_than_row", "not rejected");
    cuset_batch_set_row(&b, 1, prompt, 3, target, cuda, 2);
    char err[256];
    check(cuset_batch_check(&b, 20, err, sizeof err) == 0, "batch_check_accepts_good", "%s", err);
    b.is_target[1 * 8 + 6] = 1;
    check(cuset_batch_check(&b, 20, err, sizeof err) != 0 && strstr(err, "is_target"), "batch_check_rejects_gap", "%s", err);
    b.is_target[1 * 8 + 6] = 0;
    check(cuset_batch_check(&b, 12, err, sizeof err) != 0 && strstr(err, "vocabulary"), "batch_check_rejects_token", "%s", err);
    cuset_batch_free(&b);

    // a step refuses what would take it outside its buffers, with a message, not a crash:
    // ASFT without its reference, a row longer than the context, ids outside the vocabulary
    CusetConfig cfg = {20, 64, 8, 1, 2, 16}; // context 8, vocabulary 20
    CusetGPT m;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init_random(&m, 3, 0.02f);
    CusetBatch rows[2];
    cuset_batch_alloc(&rows[0], 2, 8);
    cuset_batch_alloc(&rows[1], 1, 16);
    for (int r = 0; r < 2; r++) {
        cuset_batch_set_row(&rows[r], 0, prompt, 3, target, cuda, 3);
        cuset_batch_set_row(&rows[r], rows[r].B - 1, prompt, 3, target, cuda, 3);
    }
    CusetObjective sft = cuset_objective_default(CUSET_OBJ_SFT), asft = cuset_objective_default(CUSET_OBJ_ASFT);
    CusetStats st;
    float norm;
    const struct { const char *name, *want; int batch; const CusetObjective *obj; int *id, bad; } cases[] = {
        {"step_takes_good_batch", NULL, 0, &sft, NULL, 0},
        {"step_refuses_asft_without_ref", "ASFT needs its reference", 0, &asft, NULL, 0},
        {"step_refuses_row_longer_than_context", "rows of 16 tokens, longer than the model's context 8", 1, &sft, NULL, 0},
        {"step_refuses_input_outside_vocabulary", "input 500 outside the vocabulary [0, 20)", 0, &sft, &rows[0].inputs[9], 500},
        {"step_refuses_target_outside_vocabulary", "target -3 outside the vocabulary", 0, &sft, &rows[0].targets[3], -3},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int saved = cases[k].id ? *cases[k].id : 0;
        if (cases[k].id) *cases[k].id = cases[k].bad;
        memset(&st, 0, sizeof st);
        int rc = cuset_gpt_step(&m, NULL, NULL, &rows[cases[k].batch], 1, cases[k].obj, &st, &norm, err, sizeof err);
        if (cases[k].id) *cases[k].id = saved;
        check(cases[k].want ? rc == -1 && strstr(err, cases[k].want) : rc == 0, cases[k].name, "rc %d: %s", rc, rc ? err : "");
    }
    cuset_batch_free(&rows[0]);
    cuset_batch_free(&rows[1]);
    cuset_gpt_free(&m);
}

// Validation over 7 samples in batches of 4 counts each sample once (the last batch's
// 4th row is padding, not sample 0 again): the same sums as batches of 1, and N = the
// samples' kept target tokens counted here.
static void test_validation(void) {
    CusetConfig cfg = {50, 64, 24, 1, 2, 16};
    CusetGPT m;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init_random(&m, cuset_rng_next(&rng), 0.5f);
    CusetDataset d;
    cuset_dataset_synthetic(&d, 7, 50, 3, 15, cuset_rng_next(&rng)); // prompts of 4..16 tokens: all fit
    int order[7] = {3, 0, 6, 1, 5, 2, 4};
    long ntok = 0;
    for (int i = 0; i < 7; i++) {
        int room = 24 - d.samples[i].np + 1; // a target keeps what fits the row
        ntok += d.samples[i].nt < room ? d.samples[i].nt : room;
    }
    CusetObjective o = cuset_objective_default(CUSET_OBJ_CUSET);
    o.window = 5;
    CusetStats by4, by1;
    CusetBatch b4, b1;
    cuset_batch_alloc(&b4, 4, 24);
    cuset_batch_alloc(&b1, 1, 24);
    char err[256] = "";
    int rc = cuset_gpt_validate(&m, NULL, NULL, &d, order, 7, &b4, &o, &by4, err, sizeof err) ||
             cuset_gpt_validate(&m, NULL, NULL, &d, order, 7, &b1, &o, &by1, err, sizeof err);
    check(!rc && by4.ntok == ntok && by4.nsamples == 7 && by1.ntok == ntok && by1.nsamples == 7 &&
              fabs(by4.loss - by1.loss) <= 1e-5 * fabs(by1.loss) && fabs(by4.ce - by1.ce) <= 1e-5 * by1.ce,
          "validation_counts_each_sample_once", "%s; N %g and %g (want %ld), samples %g and %g, loss %.7g and %.7g",
          err, by4.ntok, by1.ntok, ntok, by4.nsamples, by1.nsamples, by4.loss, by1.loss);
    check(cuset_batch_from_dataset(&b4, &d, order, 5, err, sizeof err) == -1 && strstr(err, "5 samples"),
          "batch_refuses_more_samples_than_rows", "%s", err);
    // a refused batch is left as it was: its rows before the bad sample too
    cuset_batch_from_dataset(&b4, &d, order, 4, err, sizeof err);
    int before[4 * 24];
    memcpy(before, b4.inputs, sizeof before);
    int bad_id[4] = {order[4], order[5], 7, order[6]}, long_prompt[4] = {order[4], order[5], order[6], order[0]};
    check(cuset_batch_from_dataset(&b4, &d, bad_id, 4, err, sizeof err) == -1 && strstr(err, "sample 7 outside") &&
              !memcmp(before, b4.inputs, sizeof before),
          "batch_refuses_sample_outside_data", "%s", err);
    int np = d.samples[order[0]].np;
    d.samples[order[0]].np = 25; // longer than the row (refused before it is read)
    check(cuset_batch_from_dataset(&b4, &d, long_prompt, 4, err, sizeof err) == -1 && strstr(err, "prompt of 25") &&
              !memcmp(before, b4.inputs, sizeof before),
          "batch_refused_left_unchanged", "%s", err);
    d.samples[order[0]].np = np;
    cuset_batch_free(&b4);
    cuset_batch_free(&b1);
    cuset_dataset_free(&d);
    cuset_gpt_free(&m);
}

// Sampling: greedy is the argmax; top-k and top-p keep exactly the most probable tokens;
// at temperature 1 the frequencies follow the softmax.
static void test_sampling(void) {
    float logits[6] = {1.0f, 3.0f, 0.0f, 2.0f, -1.0f, 2.5f}; // order: 1, 5, 3, 0, 2, 4
    CusetProbId work[6];
    uint64_t r = cuset_rng_next(&rng);
    int count[6] = {0}, n = 200000, ok = cuset_sample(logits, 6, 0.0f, 0, 1.0f, &r, work) == 1;
    for (int i = 0; i < 2000 && ok; i++) {
        int k2 = cuset_sample(logits, 6, 1.0f, 2, 1.0f, &r, work);      // top-2: tokens 1 and 5
        int p = cuset_sample(logits, 6, 1.0f, 0, 0.5f, &r, work);       // p(1) = 0.46 < 0.5: {1, 5}
        ok = (k2 == 1 || k2 == 5) && (p == 1 || p == 5);
    }
    check(ok, "sample_greedy_topk_topp", "a token outside the kept set");
    double z = 0, worst = 0;
    for (int v = 0; v < 6; v++) z += exp(logits[v]);
    for (int i = 0; i < n; i++) count[cuset_sample(logits, 6, 1.0f, 0, 1.0f, &r, work)]++;
    for (int v = 0; v < 6; v++) {
        double p = exp(logits[v]) / z, sd = sqrt(p * (1 - p) / n);
        worst = fmax(worst, fabs(count[v] / (double)n - p) / sd);
    }
    check(worst < 5.0, "sample_follows_softmax", "a frequency is %.1f standard deviations off", worst);
    float bad[2][3] = {{0.0f, NAN, 1.0f}, {0.0f, 1.0f, INFINITY}};
    check(cuset_sample(bad[0], 3, 0.0f, 0, 1.0f, &r, work) == -1 && cuset_sample(bad[1], 3, 0.8f, 0, 1.0f, &r, work) == -1,
          "sample_refuses_nonfinite_logits", "a token from logits holding NaN or inf");
}

static void test_split(void) {
    CusetDataset d;
    cuset_dataset_synthetic(&d, 500, 50, 1, 30, cuset_rng_next(&rng)); // prompts of 2..31 tokens
    int *train, *val, ntrain, nval, T = 20, fits = 0;
    for (int i = 0; i < d.n; i++) fits += d.samples[i].np <= T;
    int n = cuset_split(&d, T, 0.1, 7, &train, &ntrain, &val, &nval);
    char *seen = calloc(d.n, 1);
    int ok = n == fits && ntrain + nval == n && nval == (int)(n * 0.1);
    for (int i = 0; i < n && ok; i++) { // every usable sample exactly once, in one list only
        int id = train[i]; // val = train + ntrain: one array
        ok = id >= 0 && id < d.n && !seen[id] && d.samples[id].np <= T;
        seen[id] = 1;
    }
    check(ok, "split_disjoint_and_complete", "n %d (fit %d), train %d, val %d", n, fits, ntrain, nval);
    int *train2, *val2, nt2, nv2;
    cuset_split(&d, T, 0.1, 7, &train2, &nt2, &val2, &nv2);
    check(!memcmp(train, train2, n * sizeof(int)), "split_same_for_same_seed", "differs");
    free(train); free(train2); free(seen);
    cuset_dataset_free(&d);
}

// Command-line numbers: by hand, what is taken and what is refused, and the message.
static void test_parse_number(void) {
    static const struct { const char *v; int whole; int ok; double want; } cases[] = {
        {"3", 1, 1, 3}, {"1e3", 1, 1, 1000}, {"0.25", 0, 1, 0.25}, {"10", 1, 1, 10}, {"0", 1, 1, 0},
        {"1.5", 1, 0, 0}, {"1.5", 0, 1, 1.5}, {"", 1, 0, 0}, {"abc", 0, 0, 0}, {"2x", 1, 0, 0}, {"1001", 1, 0, 0},
        {"-1", 1, 0, 0}, {"nan", 0, 0, 0}, {"inf", 0, 0, 0}, {"1e999", 0, 0, 0},
        {" 5", 1, 0, 0}, {"0x5", 1, 0, 0}, {"5 ", 1, 0, 0}, {"+5", 1, 1, 5}, {".5", 0, 1, 0.5}};
    int bad = -1;
    for (size_t i = 0; i < sizeof cases / sizeof *cases && bad < 0; i++) {
        double x = -7;
        char err[200] = "";
        int rc = cuset_parse_number("--n", cases[i].v, 0, 1000, cases[i].whole, &x, err, sizeof err);
        if (cases[i].ok ? rc != 0 || x != cases[i].want : rc != -1 || x != -7 || !strstr(err, "--n expects a")) bad = (int)i;
    }
    check(bad < 0, "parse_number_cases", "case %d ('%s', whole %d)", bad, bad < 0 ? "" : cases[bad].v,
          bad < 0 ? 0 : cases[bad].whole);
    char err[200];
    double x;
    cuset_parse_number("--steps", "1.5", 0, 1e9, 1, &x, err, sizeof err);
    check(!strcmp(err, "--steps expects a whole number in [0, 1000000000], got '1.5'"), "parse_number_message", "'%s'", err);
}

// ---- checkpoints ------------------------------------------------------------------------------------

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

static void test_checkpoints(void) {
    char path[] = "/tmp/cuset_test_ckpt_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CusetGPT m, r, l, lr;
    train_steps(&m, 2, 2);
    cuset_gpt_init(&r, &m.cfg);
    memcpy(r.params_memory, m.params_memory, m.num_params * 4);
    r.params_memory[5] += 1.0f;
    CusetCheckpointInfo info = {.cfg = m.cfg, .step = 2, .data_fingerprint = 0xABCDEF};
    info.settings.obj = cuset_objective_default(CUSET_OBJ_ASFT);
    info.settings.steps = 17;
    info.settings.val_frac = 0.25f;
    char err[512];
    int rc = cuset_checkpoint_save(path, &m, &r, NULL, 0, &info, 1, err, sizeof err);
    CusetCheckpointInfo got;
    rc |= cuset_checkpoint_load(path, &l, &lr, NULL, NULL, 1, &got, err, sizeof err);
    int ok = rc == 0 && got.step == 2 && got.has_optimizer && got.has_reference && got.data_fingerprint == 0xABCDEF &&
             got.settings.steps == 17 && got.settings.obj.kind == CUSET_OBJ_ASFT && got.settings.val_frac == 0.25f &&
             !memcmp(l.params_memory, m.params_memory, m.num_params * 4) &&
             !memcmp(l.m_memory, m.m_memory, m.num_params * 4) && !memcmp(l.v_memory, m.v_memory, m.num_params * 4) &&
             !memcmp(lr.params_memory, r.params_memory, m.num_params * 4);
    check(ok, "checkpoint_round_trip", "%s", rc ? err : "contents differ");
    if (rc == 0) { cuset_gpt_free(&l); cuset_gpt_free(&lr); }

    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc(n + 1);
    if (fread(bytes, 1, n, f) != n) n = 0;
    fclose(f);
    struct { const char *name, *expect; size_t len; int offset; unsigned char value; } cases[] = {
        {"checkpoint_truncated", "truncated", n - 1, -1, 0},
        {"checkpoint_trailing_bytes", "trailing", n + 1, -1, 0},
        {"checkpoint_header_only", "truncated", 256, -1, 0},
        {"checkpoint_tiny_file", "shorter than", 10, -1, 0},
        {"checkpoint_foreign_magic", "not a cuset checkpoint", n, 0, 'X'},
        {"checkpoint_future_version", "version", n, 8, 99},
        {"checkpoint_bad_config", "bad model config", n, 8 * 4, 7}, // n_head 7 does not divide n_embd
        {"checkpoint_bad_flags", "bad header", n, 10 * 4, 0x70},
        {"checkpoint_reserved_bytes", "reserved bytes", n, 200, 1},
    };
    bytes[n] = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char *copy = malloc(n + 1);
        memcpy(copy, bytes, n + 1);
        if (cases[i].offset >= 0) copy[cases[i].offset] = cases[i].value;
        write_bytes(path, copy, cases[i].len);
        CusetGPT x;
        int r2 = cuset_checkpoint_load(path, &x, NULL, NULL, NULL, 1, &got, err, sizeof err);
        check(r2 != 0 && strstr(err, cases[i].expect) && strstr(err, path), cases[i].name, "rc %d, message: %s", r2, err);
        if (r2 == 0) cuset_gpt_free(&x);
        free(copy);
    }
    // a NaN or inf anywhere is refused with the tensor and the element: in the parameters
    // (wpe[3]), the optimizer's second moment (ln1w[1]) and the ASFT reference (wte[0])
    size_t np = m.num_params, wte_n = m.tensor_sizes[0], wpe_n = m.tensor_sizes[1];
    struct { const char *name, *expect; size_t element; float value; } bad_numbers[] = {
        {"checkpoint_nan_weight", "wpe holds nan at element 3", wte_n + 3, NAN},
        {"checkpoint_inf_moment", "ln1w (second optimizer moment) holds inf at element 1", 2 * np + wte_n + wpe_n + 1,
         INFINITY},
        {"checkpoint_nan_reference", "wte (ASFT reference) holds -nan at element 0", 3 * np, -NAN},
    };
    for (size_t i = 0; i < sizeof bad_numbers / sizeof bad_numbers[0]; i++) {
        unsigned char *copy = malloc(n);
        memcpy(copy, bytes, n);
        memcpy(copy + 256 + 4 * bad_numbers[i].element, &bad_numbers[i].value, 4);
        write_bytes(path, copy, n);
        CusetGPT x, xr;
        int r2 = cuset_checkpoint_load(path, &x, &xr, NULL, NULL, 1, &got, err, sizeof err);
        check(r2 != 0 && strstr(err, bad_numbers[i].expect), bad_numbers[i].name, "rc %d, message: %s", r2, err);
        if (r2 == 0) { cuset_gpt_free(&x); cuset_gpt_free(&xr); }
        free(copy);
    }
    // version 1 (before the eq. 5 correction, same layout) still loads, and says so; so does
    // version 2, whose settings lack the validation share (slot 41, reserved then): -1, unknown
    memset(bytes + 41 * 4, 0, 4);
    bytes[8] = 2;
    write_bytes(path, bytes, n);
    rc = cuset_checkpoint_info(path, &got, err, sizeof err);
    check(rc == 0 && got.version == 2 && got.settings.val_frac == -1, "checkpoint_version_2_val_frac_unknown", "%s",
          rc ? err : "wrong version or validation share");
    bytes[8] = 1;
    write_bytes(path, bytes, n);
    got.settings.obj = cuset_objective_default(CUSET_OBJ_CUSET);
    rc = cuset_checkpoint_info(path, &got, err, sizeof err);
    check(rc == 0 && got.version == 1 && !cuset_checkpoint_old_windows(&got), "checkpoint_version_1_loads", "%s",
          rc ? err : "wrong version or window rule");
    got.settings.obj = cuset_objective_default(CUSET_OBJ_CUSET);
    check(cuset_checkpoint_old_windows(&got), "checkpoint_version_1_cuset_old_windows", "not reported");
    got.version = CUSET_CKPT_VERSION;
    check(!cuset_checkpoint_old_windows(&got), "checkpoint_current_version_eq5_windows", "reported old");
    bytes[8] = CUSET_CKPT_VERSION;
    // a non-zero padding row of wte is damage, not a model
    memcpy(bytes + 256 + (size_t)m.cfg.vocab_size * m.cfg.n_embd * 4, &(float){1.0f}, 4);
    write_bytes(path, bytes, n);
    CusetGPT x;
    check(cuset_checkpoint_load(path, &x, NULL, NULL, NULL, 1, &got, err, sizeof err) != 0 && strstr(err, "padding"),
          "checkpoint_nonzero_padding", "%s", err);
    // a checkpoint carries its tokenizer: same encodings after loading; a damaged one is named
    const char *text = "__global__ void add(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; }\n"
                       "add<<<(n + 255) / 256, 256>>>(x, n); add<<<1, 32>>>(x, 32);\n";
    size_t text_len = strlen(text);
    CusetTokenizer tk = {0}, tk2 = {0};
    cuset_tok_train(&tk, &text, &text_len, 1, 300, 0);
    CusetConfig tcfg = {cuset_tok_vocab_size(&tk), cuset_pad_vocab(cuset_tok_vocab_size(&tk)), 8, 1, 1, 8};
    CusetGPT tm;
    cuset_gpt_init(&tm, &tcfg);
    CusetCheckpointInfo tinfo = {.cfg = tcfg};
    cuset_tok_init(&tk2);
    int *ids1 = NULL, *ids2 = NULL;
    cuset_tok_encode(&tk, text, text_len, &ids1);
    rc = cuset_checkpoint_save_tok(path, &tm, NULL, &tk, &tinfo, 0, err, sizeof err);
    rc |= cuset_checkpoint_load_tok(path, &x, NULL, &tk2, 0, &got, err, sizeof err);
    if (rc == 0) cuset_tok_encode(&tk2, text, text_len, &ids2);
    check(rc == 0 && got.has_tokenizer && arrlen(ids1) == arrlen(ids2) && !memcmp(ids1, ids2, arrlen(ids1) * sizeof(int)),
          "checkpoint_carries_tokenizer", "%s", rc ? err : "encodings differ");
    if (rc == 0) cuset_gpt_free(&x);
    f = fopen(path, "r+b");
    fseek(f, -4, SEEK_END); // the last merge's right id: make it reference a later id
    fwrite(&(int32_t){100000}, 4, 1, f);
    fclose(f);
    check(cuset_checkpoint_load_tok(path, &x, NULL, &tk2, 0, &got, err, sizeof err) != 0 && strstr(err, "its tokenizer"),
          "checkpoint_damaged_tokenizer", "%s", err);
    arrfree(ids1); arrfree(ids2);
    cuset_tok_free(&tk); cuset_tok_free(&tk2);
    cuset_gpt_free(&tm);
    remove(path);
    check(cuset_checkpoint_load(path, &x, NULL, NULL, NULL, 1, &got, err, sizeof err) != 0 && strstr(err, "cannot open"),
          "checkpoint_missing_file", "%s", err);
    free(bytes);
    cuset_gpt_free(&m);
    cuset_gpt_free(&r);
}

// ---- KV-cache decoding against the full forward pass -----------------------------------------------

static void test_kv_cache(void) {
    CusetConfig cfg = {90, 128, 37, 3, 2, 64}; // hs 32, a context that is no multiple of the tiles
    CusetGPT m;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init_random(&m, cuset_rng_next(&rng), 0.3f);
    int toks[37];
    for (int i = 0; i < 37; i++) toks[i] = (int)(cuset_rng_next(&rng) % 90);
    cuset_gpt_forward(&m, toks, 1, 37);
    CusetKVCache kv;
    cuset_kv_init(&kv, &cfg);
    double worst = 0;
    for (int t = 0; t < 37; t++) {
        const float *got = cuset_gpt_decode(&m, &kv, toks[t]), *want = m.acts.logits + (size_t)t * cfg.padded_vocab_size;
        double num = 0, den = 0;
        for (int v = 0; v < cfg.padded_vocab_size; v++) { num += (got[v] - want[v]) * (got[v] - want[v]); den += want[v] * want[v]; }
        worst = fmax(worst, sqrt(num / den));
    }
    // float32 rounding in another order: over 3,000 seeds the median 2.9e-6, the worst 1.1e-5
    // (1.2e-5 and 1.8e-5 in two of 1,500 more, which the old bound of 1e-5 failed); a cache
    // read at a wrong position or layer is off by far more than 1e-4
    check(worst < 1e-4, "kv_cache_matches_full_forward", "worst relative error %.2e over 37 positions", worst);
    printf("# kv cache vs full forward: worst relative error %.2e\n", worst);
    cuset_kv_free(&kv);
    cuset_gpt_free(&m);
}

int main(void) {
    rng = test_seed("test_cuset");
    test_windows();
    test_eaft_and_topk();
    test_lr_schedule();
    test_method_by_hand();
    test_identities();
    test_accumulation();
    test_finite_differences();
    test_attention_flash();
    test_batches();
    test_split();
    test_validation();
    test_parse_number();
    test_sampling();
    test_determinism();
    test_checkpoints();
    test_kv_cache();
    return failures ? 1 : 0;
}
