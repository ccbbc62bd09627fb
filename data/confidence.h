/* confidence.h — where a model is unsure inside a program: the confidence analysis that
   motivates CuSeT (README, "The method", last part).

   For every sample of a prompt/completion file: the model's confidence c (the probability
   of the true token, teacher-forced) on each target token, which tokens are
   CUDA-sensitive and of what kind (the annotator's spans), the lowest-mean window of
   `probe` tokens, and the hardest window of eq. 7 with its weight w_n (eq. 8). Over all
   samples: the mean, median and histogram of c for CUDA-sensitive versus neutral
   tokens, a two-sample Kolmogorov-Smirnov test between the two, the share of samples
   with a window below the neutral-token mean, and how often those windows overlap
   CUDA-sensitive spans (any, kernel definitions, launches, dim3), and the tokens at or
   below tau, the ones eq. 2's mask 1[c > tau] drops (how many, their share of the summed
   -log c, the most frequent), and the tokens of the numbers the program copies from its
   prompt (sizes, scales, thresholds: cuset_given_numbers), a handful per program on which
   its output depends, and their share of each objective's gradient at the logits (the
   objectives' coefficients from cuset.h at these confidences). `gen --analyze` is the
   command (cuset_conf_analyze_to_json its driver, cuset_conf_usage its part of gen --help);
   data/experiment_report.py draws the JSON it writes.

   stb style: in exactly one C file
       #define CUSET_CONFIDENCE_IMPLEMENTATION
       #include "data/confidence.h"
   after data/textdata.h's implementation (which follows cuset.h's, data/tokenizer.h's and
   data/annotate.h's: the model and eqs. 5-8, the tokenizer, the annotator, JSON lines).
   Choices: the
   end-of-sample token is not a program token and is left out; a target longer than the
   model's context is analysed up to the context. */
#ifndef CUSET_CONFIDENCE_H
#define CUSET_CONFIDENCE_H

#include <stdio.h>
#include "textdata.h" // CusetGPT, CusetTokenizer; JSON lines

// Span kinds as the analysis groups them (a token may be several).
enum { CUSET_CONF_DEF = 1, CUSET_CONF_LAUNCH = 2, CUSET_CONF_DIM3 = 4 };

typedef struct {
    int nt;                // target tokens analysed
    int cut;               // target tokens past the model's context, not analysed
    float *conf;           // (nt) confidence of the true token
    unsigned char *kinds;  // (nt) CUSET_CONF_* bits of the spans the token overlaps; 0 = neutral
    unsigned char *given;  // (nt) 1 when the token overlaps a number the prompt states (cuset_given_numbers)
    float *eaft;           // (nt) EAFT's weight at the token's position (cuset_eaft_weight, alpha 1)
    size_t *byte_start;    // (nt + 1) token k is completion bytes [byte_start[k], byte_start[k + 1])
    int hard_lo, hard_hi;  // eq. 7: the window R_{n,t} of least mean confidence (0-based, inclusive)
    float C, w;            // its mean C_n and w_n = 1 - C_n
    int low_lo, low_n;     // the lowest-mean window of min(probe, nt) tokens
    float low_mean;
} CusetConfSample;

// Two-sample Kolmogorov-Smirnov statistic D = max |F_a(x) - F_b(x)|.
double cuset_ks_statistic(const float *a, size_t na, const float *b, size_t nb);
// Its asymptotic p-value: Q(sqrt(na nb / (na + nb)) D), Q(x) = 2 sum_j (-1)^(j-1) exp(-2 j^2 x^2).
double cuset_ks_pvalue(double d, size_t na, size_t nb);
// The start of the window of min(w, n) consecutive values with the least mean (the first
// of equals); *mean gets that mean.
int cuset_lowest_window(const float *c, int n, int w, float *mean);

// The numbers of a program that its prompt states too: decimal literals of two or more
// characters (digits with an optional fraction; a suffix f, u or l is not part of the
// number), not part of a name, whose text is also such a literal of the prompt. These are
// the sizes, scales and thresholds a program copies from its task. *out (an stb_ds array)
// gets their byte ranges in text; returns how many.
typedef struct { size_t start, end; } CusetConfRange;
size_t cuset_given_numbers(const char *prompt, size_t np, const char *text, size_t n, CusetConfRange **out);

// Analyses one sample with model m (CPU). l: CuSeT's window for eq. 7; probe: the window
// of the low-confidence search (64 in the paper). Returns 0; -1 when the prompt leaves no
// room for a target token in the model's context, -2 when the completion has no token, -3
// when the model's logits are not finite (cuset_logits_finite).
int cuset_conf_sample(CusetGPT *m, const CusetTokenizer *tk, const char *prompt, size_t np, const char *completion,
                      size_t nc, int l, int probe, CusetConfSample *out);
void cuset_conf_sample_free(CusetConfSample *s);
// Given s->nt, s->conf and s->kinds: the two windows and w_n (the end of cuset_conf_sample).
void cuset_conf_windows(CusetConfSample *s, int l, int probe);

// Writes the summary over samples s[0..n) as one JSON object to json (and, when text is
// not NULL, a short human-readable report to text), with a per-sample view (tokens as
// text, confidences, kinds, the given numbers' tokens, both windows) of the first nview
// samples; texts[i] is sample i's completion.
void cuset_conf_report(const CusetConfSample *s, int n, const char *const *texts, int l, int probe, float tau,
                       int nview, FILE *json, FILE *text);

// The whole analysis of a prompt/completion file (JSON lines) with model m and its
// tokenizer: samples first .. first+count-1 (count < 0: to the end), the JSON summary to
// json and the text report to text (may be NULL). l and probe are at least 1, tau lies in
// [0, 1]. Returns 0, or -1 with a message in err.
int cuset_conf_analyze_file(CusetGPT *m, const CusetTokenizer *tk, const char *path, int first, int count, int l,
                            int probe, float tau, int nview, FILE *json, FILE *text, char *err, size_t errlen);

// gen --analyze: the analysis of a data file with the model read from model_path, as the
// flags set it.
typedef struct {
    int first, count;         // the samples first .. first+count-1 (count <= 0: to the end)
    int window, probe, views; // eq. 7's l; the window of the low-confidence search; samples shown token by token
    float tau;                // eq. 2's threshold (gen passes the checkpoint's unless --tau is given)
    const char *json_path;    // where the JSON goes (NULL: MODEL_PATH.analysis.json)
} CusetConfOpts;
// cuset_conf_analyze_file with the JSON written whole or not at all (built in memory, then
// written to json_path.tmp.PID and renamed) and the text report to text, between a line of the settings and
// one with the JSON's path. 0, or -1 with a message in err.
int cuset_conf_analyze_to_json(CusetGPT *m, const CusetTokenizer *tk, const char *model_path, const char *data_path,
                               const CusetConfOpts *o, FILE *text, char *err, size_t errlen);
// The part of gen --help on --analyze: what it reports and the flags of CusetConfOpts.
extern const char cuset_conf_usage[];

#endif // CUSET_CONFIDENCE_H

#ifdef CUSET_CONFIDENCE_IMPLEMENTATION
#ifndef CUSET_CONFIDENCE_IMPLEMENTATION_DONE
#define CUSET_CONFIDENCE_IMPLEMENTATION_DONE

#ifndef CUSET_TEXTDATA_IMPLEMENTATION_DONE
#error "data/confidence.h: its implementation needs data/textdata.h's (and those it needs) before it"
#endif
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cuset__conf_cmp(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double cuset_ks_statistic(const float *a, size_t na, const float *b, size_t nb) {
    if (!na || !nb) return 0.0;
    float *x = (float *)CUSET_CALLOC(na, sizeof *x), *y = (float *)CUSET_CALLOC(nb, sizeof *y);
    memcpy(x, a, na * sizeof *x);
    memcpy(y, b, nb * sizeof *y);
    qsort(x, na, sizeof *x, cuset__conf_cmp);
    qsort(y, nb, sizeof *y, cuset__conf_cmp);
    // walk both sorted lists; after every distinct value, compare the two CDFs (each pass
    // moves past v in at least one list, so a NaN, which equals nothing, cannot stall it)
    double d = 0.0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        float v = x[i] < y[j] ? x[i] : y[j];
        while (i < na && !(x[i] > v)) i++;
        while (j < nb && !(y[j] > v)) j++;
        double gap = fabs((double)i / na - (double)j / nb);
        if (gap > d) d = gap;
    }
    free(x);
    free(y);
    return d;
}

double cuset_ks_pvalue(double d, size_t na, size_t nb) {
    if (!na || !nb) return 1.0;
    double x = sqrt((double)na * nb / ((double)na + nb)) * d;
    if (x < 0.2) return 1.0; // the series converges slowly here, and Q(x) rounds to 1
    double q = 0.0;
    for (int j = 1; j <= 100; j++) {
        double term = exp(-2.0 * j * j * x * x);
        q += (j % 2 ? 2.0 : -2.0) * term;
        if (term < 1e-17) break;
    }
    return q < 0.0 ? 0.0 : q > 1.0 ? 1.0 : q;
}

int cuset_lowest_window(const float *c, int n, int w, float *mean) {
    if (w > n) w = n;
    double sum = 0.0, best;
    int at = 0;
    for (int k = 0; k < w; k++) sum += c[k];
    best = sum;
    for (int s = 1; s + w <= n; s++) {
        sum += c[s + w - 1] - c[s - 1];
        if (sum < best - 1e-12) best = sum, at = s;
    }
    *mean = (float)(best / w);
    return at;
}

static unsigned char cuset__conf_kind(CusetSpanKind k) {
    return k == CUSET_SPAN_LAUNCH ? CUSET_CONF_LAUNCH : k == CUSET_SPAN_DIM3 ? CUSET_CONF_DIM3 : CUSET_CONF_DEF;
}

// Whether token k of s (bytes byte_start[k] up to byte_start[k + 1]) overlaps bytes [start, end).
static int cuset__tok_overlaps(const CusetConfSample *s, int k, size_t start, size_t end) {
    return s->byte_start[k] < end && start < s->byte_start[k + 1];
}

static int cuset__conf_name_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

// The end of the decimal literal that starts at s[i] (digits, then '.' and digits), or i when
// none starts there: s[i] a digit not after a name character or a '.', and the literal (with
// at most one suffix letter f, u or l) not followed by a name character.
static size_t cuset__conf_number_end(const char *s, size_t n, size_t i) {
    if (!isdigit((unsigned char)s[i]) || (i && (cuset__conf_name_char(s[i - 1]) || s[i - 1] == '.'))) return i;
    size_t e = i;
    while (e < n && isdigit((unsigned char)s[e])) e++;
    if (e + 1 < n && s[e] == '.' && isdigit((unsigned char)s[e + 1]))
        for (e++; e < n && isdigit((unsigned char)s[e]);) e++;
    size_t after = e < n && s[e] && strchr("fFuUlL", s[e]) ? e + 1 : e;
    return after < n && cuset__conf_name_char(s[after]) ? i : e;
}

size_t cuset_given_numbers(const char *prompt, size_t np, const char *text, size_t n, CusetConfRange **out) {
    CusetConfRange *stated = NULL; // the prompt's literals
    for (size_t i = 0; i < np; i++) {
        size_t e = cuset__conf_number_end(prompt, np, i);
        if (e - i >= 2) arrput(stated, ((CusetConfRange){i, e}));
        if (e > i) i = e - 1;
    }
    *out = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t e = cuset__conf_number_end(text, n, i);
        for (ptrdiff_t j = 0; e - i >= 2 && j < arrlen(stated); j++)
            if (stated[j].end - stated[j].start == e - i && !memcmp(prompt + stated[j].start, text + i, e - i)) {
                arrput(*out, ((CusetConfRange){i, e}));
                break;
            }
        if (e > i) i = e - 1;
    }
    arrfree(stated);
    return (size_t)arrlen(*out);
}

int cuset_conf_sample(CusetGPT *m, const CusetTokenizer *tk, const char *prompt, size_t np, const char *completion,
                      size_t nc, int l, int probe, CusetConfSample *out) {
    memset(out, 0, sizeof *out);
    CusetSample s;
    cuset_sample_from_text(&s, tk, prompt, np, completion, nc);
    int ctx = m->cfg.max_seq_len, nt = s.nt - 1; // without the end-of-sample token
    if (nt > ctx - s.np + 1) out->cut = nt - (ctx - s.np + 1), nt = ctx - s.np + 1;
    if (nt < 1) {
        free(s.prompt), free(s.target), free(s.target_cuda);
        return s.nt - 1 < 1 ? -2 : -1;
    }
    // teacher forcing: position np - 1 + k sees the prompt and targets 0..k-1, predicts target k
    int T = s.np + nt - 1, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    int *inputs = (int *)CUSET_CALLOC((size_t)T, sizeof *inputs);
    memcpy(inputs, s.prompt, (size_t)s.np * sizeof *inputs);
    memcpy(inputs + s.np, s.target, (size_t)(nt - 1) * sizeof *inputs);
    cuset_gpt_forward(m, inputs, 1, T);
    free(inputs);
    int finite = 1; // logits that are not finite give no confidence
    for (int k = 0; k < nt && finite; k++)
        finite = cuset_logits_finite(m->acts.logits + (size_t)(s.np - 1 + k) * Vp, V);
    if (!finite) {
        free(s.prompt), free(s.target), free(s.target_cuda);
        return -3;
    }
    out->nt = nt;
    out->conf = (float *)CUSET_CALLOC((size_t)nt, sizeof *out->conf);
    out->kinds = (unsigned char *)CUSET_CALLOC((size_t)nt, 1);
    out->given = (unsigned char *)CUSET_CALLOC((size_t)nt, 1);
    out->eaft = (float *)CUSET_CALLOC((size_t)nt, sizeof *out->eaft);
    out->byte_start = (size_t *)CUSET_CALLOC((size_t)nt + 1, sizeof *out->byte_start);
    for (int k = 0; k < nt; k++) {
        const float *z = m->acts.logits + (size_t)(s.np - 1 + k) * Vp;
        float top[CUSET_EAFT_TOPK] = {0.0f}; // the largest logits, for EAFT's weight; top[0] the max
        int ntop = 0;
        for (int v = 0; v < V; v++) cuset_topk_push(top, &ntop, V < CUSET_EAFT_TOPK ? V : CUSET_EAFT_TOPK, z[v]);
        out->eaft[k] = cuset_eaft_weight(top, ntop, 1.0f);
        float mx = top[0];
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += exp((double)(z[v] - mx));
        out->conf[k] = (float)(exp((double)(z[s.target[k]] - mx)) / sum);
    }
    // byte ranges of the tokens, then the kinds of the spans each one touches
    size_t pos = 0;
    for (int k = 0; k < nt; k++) {
        size_t len;
        cuset_tok_bytes(tk, s.target[k], &len);
        out->byte_start[k] = pos;
        pos += len;
    }
    out->byte_start[nt] = pos;
    CusetSpan *spans = NULL;
    size_t nspans = cuset_annotate(completion, nc, &spans);
    for (size_t j = 0; j < nspans; j++)
        for (int k = 0; k < nt; k++) // tokens are in byte order: a span touches a run of them
            if (cuset__tok_overlaps(out, k, spans[j].start, spans[j].end))
                out->kinds[k] |= cuset__conf_kind(spans[j].kind);
    arrfree(spans);
    CusetConfRange *numbers = NULL;
    size_t nnum = cuset_given_numbers(prompt, np, completion, nc, &numbers);
    for (size_t j = 0; j < nnum; j++)
        for (int k = 0; k < nt; k++)
            if (cuset__tok_overlaps(out, k, numbers[j].start, numbers[j].end)) out->given[k] = 1;
    arrfree(numbers);
    cuset_conf_windows(out, l, probe);
    free(s.prompt), free(s.target), free(s.target_cuda);
    return 0;
}

void cuset_conf_windows(CusetConfSample *s, int l, int probe) {
    s->C = cuset_hardest_window_at(s->conf, s->nt, l, &s->hard_lo, &s->hard_hi); // eq. 7, as training computes it
    s->w = cuset_sample_weight(s->C);
    s->low_n = probe < s->nt ? probe : s->nt;
    s->low_lo = cuset_lowest_window(s->conf, s->nt, probe, &s->low_mean);
}

void cuset_conf_sample_free(CusetConfSample *s) {
    free(s->conf), free(s->kinds), free(s->given), free(s->eaft), free(s->byte_start);
    memset(s, 0, sizeof *s);
}

static double cuset__conf_median(float *v, size_t n) { // sorts v
    if (!n) return 0.0;
    qsort(v, n, sizeof *v, cuset__conf_cmp);
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

static void cuset__conf_floats(FILE *f, const float *v, int n, const char *fmt) {
    fputc('[', f);
    for (int k = 0; k < n; k++) fputs(k ? "," : "", f), fprintf(f, fmt, v[k]);
    fputc(']', f);
}

// The target tokens at or below tau (those eq. 2's mask drops), grouped by their text.
typedef struct { const char *p; size_t len; int count, cuda; } CusetConfDropped;
static int cuset__conf_text_cmp(const CusetConfDropped *x, const CusetConfDropped *y) {
    int d = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    return d ? d : (x->len > y->len) - (x->len < y->len);
}
static int cuset__conf_text_qcmp(const void *a, const void *b) {
    return cuset__conf_text_cmp((const CusetConfDropped *)a, (const CusetConfDropped *)b);
}
static int cuset__conf_count_qcmp(const void *a, const void *b) { // most frequent first, then by text
    const CusetConfDropped *x = (const CusetConfDropped *)a, *y = (const CusetConfDropped *)b;
    return x->count != y->count ? (y->count > x->count) - (y->count < x->count) : cuset__conf_text_cmp(x, y);
}

// JSON "masked": {tau, tokens, cuda, neutral, given (how many copy a number from the
// prompt), nll_share (their share of the summed -log c), most: up to 20 texts with count
// and how many of those CUDA-sensitive}, and the same (8 texts) as two lines of the text report.
static void cuset__conf_masked(const CusetConfSample *s, int n, const char *const *texts, float tau, FILE *json,
                               FILE *text) {
    size_t ntok = 0, nd = 0, ncuda = 0, ngiven = 0, ng = 0;
    for (int i = 0; i < n; i++) ntok += (size_t)s[i].nt;
    CusetConfDropped *d = (CusetConfDropped *)CUSET_CALLOC(ntok + 1, sizeof *d);
    double nll = 0, nll_dropped = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s[i].nt; k++) {
            double c = s[i].conf[k], term = -log(c > 1e-30 ? c : 1e-30);
            nll += term;
            if (cuset_conf_mask(s[i].conf[k], tau)) continue; // eq. 2 keeps it
            nll_dropped += term, ncuda += s[i].kinds[k] != 0, ngiven += s[i].given[k];
            CusetConfDropped *t = &d[nd++];
            t->p = texts[i] + s[i].byte_start[k], t->len = s[i].byte_start[k + 1] - s[i].byte_start[k];
            t->count = 1, t->cuda = s[i].kinds[k] != 0;
        }
    qsort(d, nd, sizeof *d, cuset__conf_text_qcmp);
    for (size_t k = 0; k < nd; k++) // equal texts are adjacent now: fold each run into its first
        if (ng && !cuset__conf_text_cmp(&d[ng - 1], &d[k])) d[ng - 1].count++, d[ng - 1].cuda += d[k].cuda;
        else d[ng++] = d[k];
    qsort(d, ng, sizeof *d, cuset__conf_count_qcmp);
    double share = nll > 0 ? nll_dropped / nll : 0.0;
    fprintf(json, "\"masked\":{\"tau\":%g,\"tokens\":%zu,\"cuda\":%zu,\"neutral\":%zu,\"given\":%zu,\"nll_share\":%.6f,"
                  "\"most\":[", tau, nd, ncuda, nd - ncuda, ngiven, share);
    for (size_t g = 0; g < ng && g < 20; g++) {
        fprintf(json, "%s{\"text\":", g ? "," : "");
        cuset_json_write_string(json, d[g].p, d[g].len);
        fprintf(json, ",\"count\":%d,\"cuda\":%d}", d[g].count, d[g].cuda);
    }
    fprintf(json, "]},");
    if (text) {
        fprintf(text, "  at or below tau   %zu of %zu target tokens (%.2f%%; CUDA-sensitive %zu, neutral %zu) at tau = %g,\n"
                      "                    %zu of them numbers from the prompt, %.1f%% of the summed -log c: what eq. 2's "
                      "mask drops\n", nd, ntok, ntok ? 100.0 * nd / ntok : 0.0, ncuda, nd - ncuda, tau, ngiven, 100 * share);
        if (ng) fprintf(text, "                    most often:");
        for (size_t g = 0; g < ng && g < 8; g++) { // the text quoted, with \n and \t shown as such
            fputs(g ? ", \"" : " \"", text);
            for (size_t b = 0; b < d[g].len; b++) {
                char ch = d[g].p[b];
                if (ch == '\n') fputs("\\n", text);
                else if (ch == '\t') fputs("\\t", text);
                else fputc(ch, text);
            }
            fprintf(text, "\" %d", d[g].count);
            if (d[g].cuda == d[g].count) fputs(" (CUDA-sensitive)", text);
            else if (d[g].cuda) fprintf(text, " (%d CUDA-sensitive)", d[g].cuda);
        }
        if (ng) fputc('\n', text);
    }
    free(d);
}

// The objectives whose logit gradient the given numbers' share is reported for: the rows of
// data/experiment.sh but ASFT (its KL term is not a * (softmax - onehot)), with eq. 2's tau
// of the analysis and lambda, alpha at their defaults.
static const struct {
    const char *name;
    CusetObjectiveKind kind;
    int cuda_mask, reweight; // CuSeT's switches
} cuset__conf_objectives[] = {{"sft", CUSET_OBJ_SFT, 0, 0},       {"dft", CUSET_OBJ_DFT, 0, 0},
                              {"profit", CUSET_OBJ_PROFIT, 0, 0}, {"eaft", CUSET_OBJ_EAFT, 0, 0},
                              {"cuset", CUSET_OBJ_CUSET, 1, 1},   {"cuset_conf_cuda", CUSET_OBJ_CUSET, 1, 0},
                              {"cuset_conf_rew", CUSET_OBJ_CUSET, 0, 1}};

// The given numbers' share of an objective's gradient at the logits, at these confidences,
// share[0] of the CUDA-sensitive ones, share[1] of the neutral ones: token t's gradient is
// a_t (softmax - onehot) / N (cuset_token_coef), of L1 norm 2 a_t (1 - c_t) / N, so a share
// is the sum of a_t (1 - c_t) over those tokens over the sum over all tokens.
static void cuset__conf_grad_share(const CusetConfSample *s, int n, int obj, float tau, double share[2]) {
    CusetObjective o = cuset_objective_default(cuset__conf_objectives[obj].kind);
    o.tau = tau, o.cuda_mask = cuset__conf_objectives[obj].cuda_mask, o.reweight = cuset__conf_objectives[obj].reweight;
    double all = 0, given[2] = {0, 0};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s[i].nt; k++) {
            float c = s[i].conf[k];
            double g = cuset_token_coef(&o, c, s[i].kinds[k] != 0, s[i].w, s[i].eaft[k]) * (1.0 - c);
            all += g;
            if (s[i].given[k]) given[s[i].kinds[k] == 0] += g;
        }
    for (int j = 0; j < 2; j++) share[j] = all > 0 ? given[j] / all : 0.0;
}

// JSON "given": {tokens, cuda (how many of them CUDA-sensitive), mean (their mean c),
// mean_cuda, mean_neutral (of those CUDA-sensitive and the others), nll_share (their share
// of the summed -log c), grad_share: {objective: [the CUDA-sensitive ones' share of its
// logit gradient, the neutral ones']}}, and the same as three lines of the text report.
static void cuset__conf_given(const CusetConfSample *s, int n, float tau, FILE *json, FILE *text) {
    size_t ntok = 0, ng = 0, ncuda = 0;
    double sum_cuda = 0, sum_neutral = 0, nll = 0, nll_given = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s[i].nt; k++) {
            double c = s[i].conf[k], term = -log(c > 1e-30 ? c : 1e-30);
            ntok++, nll += term;
            if (!s[i].given[k]) continue;
            ng++, nll_given += term;
            if (s[i].kinds[k]) ncuda++, sum_cuda += c;
            else sum_neutral += c;
        }
    double mean = ng ? (sum_cuda + sum_neutral) / ng : 0.0, mean_cuda = ncuda ? sum_cuda / ncuda : 0.0,
           mean_neutral = ng > ncuda ? sum_neutral / (ng - ncuda) : 0.0, share = nll > 0 ? nll_given / nll : 0.0;
    fprintf(json, "\"given\":{\"tokens\":%zu,\"cuda\":%zu,\"mean\":%.6f,\"mean_cuda\":%.6f,\"mean_neutral\":%.6f,"
                  "\"nll_share\":%.6f,\"grad_share\":{", ng, ncuda, mean, mean_cuda, mean_neutral, share);
    if (text)
        fprintf(text, "  prompt's numbers  %zu of %zu target tokens (%.2f%%) copy a number the prompt states: mean c %.3f\n"
                      "                    (CUDA-sensitive %zu: %.3f, neutral %zu: %.3f), %.1f%% of the summed -log c;\n"
                      "                    their share of each objective's logit gradient at tau %g (CUDA-sensitive + "
                      "neutral):",
                ng, ntok, ntok ? 100.0 * ng / ntok : 0.0, mean, ncuda, mean_cuda, ng - ncuda, mean_neutral, 100 * share, tau);
    int nobj = (int)(sizeof cuset__conf_objectives / sizeof *cuset__conf_objectives);
    for (int j = 0; j < nobj; j++) {
        double g[2];
        cuset__conf_grad_share(s, n, j, tau, g);
        fprintf(json, "%s\"%s\":[%.6f,%.6f]", j ? "," : "", cuset__conf_objectives[j].name, g[0], g[1]);
        if (text) fprintf(text, "%s %s %.2f + %.2f%%", j ? "," : "", cuset__conf_objectives[j].name, 100 * g[0], 100 * g[1]);
    }
    fputs("}},", json);
    if (text) fputc('\n', text);
}

void cuset_conf_report(const CusetConfSample *s, int n, const char *const *texts, int l, int probe, float tau,
                       int nview, FILE *json, FILE *text) {
    enum { BINS = 20 };
    size_t ntok = 0;
    for (int i = 0; i < n; i++) ntok += (size_t)s[i].nt;
    float *cuda = (float *)CUSET_CALLOC(ntok + 1, sizeof *cuda), *neutral = (float *)CUSET_CALLOC(ntok + 1, sizeof *neutral);
    size_t nc = 0, nn = 0;
    double sum_c = 0, sum_n = 0, sum_w = 0;
    float hist_c[BINS] = {0}, hist_n[BINS] = {0};
    for (int i = 0; i < n; i++) {
        sum_w += s[i].w;
        for (int k = 0; k < s[i].nt; k++) {
            float c = s[i].conf[k];
            int bin = (int)(c * BINS);
            bin = bin < 0 ? 0 : bin >= BINS ? BINS - 1 : bin;
            if (s[i].kinds[k]) cuda[nc++] = c, sum_c += c, hist_c[bin] += 1;
            else neutral[nn++] = c, sum_n += c, hist_n[bin] += 1;
        }
    }
    for (int b = 0; b < BINS; b++) hist_c[b] /= nc ? (float)nc : 1.0f, hist_n[b] /= nn ? (float)nn : 1.0f;
    double mean_c = nc ? sum_c / nc : 0, mean_n = nn ? sum_n / nn : 0;
    double ks = cuset_ks_statistic(cuda, nc, neutral, nn), p = cuset_ks_pvalue(ks, nc, nn);
    double med_c = cuset__conf_median(cuda, nc), med_n = cuset__conf_median(neutral, nn);
    // samples with a probe window below the neutral mean; what their lowest window touches
    int low = 0, touch[4] = {0}; // any, definition, launch, dim3
    for (int i = 0; i < n; i++) {
        if (!(s[i].low_mean < mean_n)) continue;
        low++;
        unsigned char k = 0;
        for (int t = s[i].low_lo; t < s[i].low_lo + s[i].low_n; t++) k |= s[i].kinds[t];
        touch[0] += k != 0, touch[1] += !!(k & CUSET_CONF_DEF), touch[2] += !!(k & CUSET_CONF_LAUNCH),
            touch[3] += !!(k & CUSET_CONF_DIM3);
    }
#define CUSET__SHARE(a, b) ((b) ? (double)(a) / (b) : 0.0)
    fprintf(json, "{\"samples\":%d,\"window\":%d,\"probe\":%d,\"tokens\":{\"cuda\":%zu,\"neutral\":%zu},", n, l, probe, nc, nn);
    fprintf(json, "\"mean\":{\"cuda\":%.6f,\"neutral\":%.6f},\"median\":{\"cuda\":%.6f,\"neutral\":%.6f},", mean_c, mean_n,
            med_c, med_n);
    fprintf(json, "\"hist\":{\"bins\":%d,\"cuda\":", BINS);
    cuset__conf_floats(json, hist_c, BINS, "%.5f");
    fprintf(json, ",\"neutral\":");
    cuset__conf_floats(json, hist_n, BINS, "%.5f");
    fprintf(json, "},\"ks\":{\"d\":%.6f,\"p\":%.6g},\"low_share\":%.6f,\"low_samples\":%d,", ks, p, CUSET__SHARE(low, n), low);
    fprintf(json, "\"low_overlap\":{\"any\":%.6f,\"definition\":%.6f,\"launch\":%.6f,\"dim3\":%.6f},\"mean_w\":%.6f,",
            CUSET__SHARE(touch[0], low), CUSET__SHARE(touch[1], low), CUSET__SHARE(touch[2], low),
            CUSET__SHARE(touch[3], low), n ? sum_w / n : 0.0);
    if (text) { // the text report in the order of the JSON
        fprintf(text, "confidence analysis: %d samples, %zu CUDA-sensitive and %zu neutral target tokens\n", n, nc, nn);
        const char *none = !nc ? "CUDA-sensitive" : !nn ? "neutral" : NULL; // no two sets to compare
        if (none)
            fprintf(text, "  mean confidence   n/a (no %s tokens)\n  two-sample KS     n/a (no %s tokens)\n", none,
                    none);
        else {
            fprintf(text, "  mean confidence   CUDA-sensitive %.3f, neutral %.3f (medians %.3f, %.3f)\n", mean_c,
                    mean_n, med_c, med_n);
            fprintf(text, "  two-sample KS     D = %.4f, p = %.3g\n", ks, p);
        }
        fprintf(text, "  low regions       %.1f%% of samples have a %d-token window (the whole target where shorter) "
                      "below the neutral mean;\n", 100 * CUSET__SHARE(low, n), probe);
        fprintf(text, "                    %.1f%% of those windows touch CUDA-sensitive spans (definitions %.1f%%, "
                      "launches %.1f%%, dim3 %.1f%%)\n", 100 * CUSET__SHARE(touch[0], low), 100 * CUSET__SHARE(touch[1], low),
                100 * CUSET__SHARE(touch[2], low), 100 * CUSET__SHARE(touch[3], low));
        fprintf(text, "  mean w_n          %.3f (eq. 8, window l = %d)\n", n ? sum_w / n : 0.0, l);
    }
    cuset__conf_given(s, n, tau, json, text);
    cuset__conf_masked(s, n, texts, tau, json, text);
    fprintf(json, "\"views\":[");
    for (int i = 0; i < n && i < nview; i++) {
        const CusetConfSample *v = &s[i];
        fprintf(json, "%s{\"index\":%d,\"C\":%.6f,\"w\":%.6f,\"hard\":[%d,%d],\"low\":[%d,%d],\"conf\":", i ? "," : "", i,
                v->C, v->w, v->hard_lo, v->hard_hi, v->low_lo, v->low_lo + v->low_n - 1);
        cuset__conf_floats(json, v->conf, v->nt, "%.9g"); // exact float32 round trip
        fprintf(json, ",\"kinds\":[");
        for (int k = 0; k < v->nt; k++) fprintf(json, "%s%d", k ? "," : "", v->kinds[k]);
        fprintf(json, "],\"given\":[");
        for (int k = 0, first = 1; k < v->nt; k++)
            if (v->given[k]) fprintf(json, "%s%d", first ? "" : ",", k), first = 0;
        fprintf(json, "],\"eaft\":");
        cuset__conf_floats(json, v->eaft, v->nt, "%.9g");
        fprintf(json, ",\"tokens\":[");
        for (int k = 0; k < v->nt; k++) {
            if (k) fputc(',', json);
            cuset_json_write_string(json, texts[i] + v->byte_start[k], v->byte_start[k + 1] - v->byte_start[k]);
        }
        fprintf(json, "]}");
    }
    fprintf(json, "]}\n");
#undef CUSET__SHARE
    free(cuda);
    free(neutral);
}

int cuset_conf_analyze_file(CusetGPT *m, const CusetTokenizer *tk, const char *path, int first, int count, int l,
                            int probe, float tau, int nview, FILE *json, FILE *text, char *err, size_t errlen) {
    if (l < 1 || probe < 1 || !(tau >= 0.0f && tau <= 1.0f) || first < 0)
        return cuset__err(err, errlen, "window l = %d, probe %d, tau %g, first sample %d: l and probe are at least 1, "
                          "tau lies in [0, 1], the first sample is at least 0", l, probe, tau, first);
    CusetTextSample *s = NULL;
    if (cuset_jsonl_read(path, &s, err, errlen)) return -1;
    int n = (int)arrlen(s);
    if (first >= n) {
        snprintf(err, errlen, "%s holds %d samples: there is no sample %d", path, n, first);
        cuset_text_samples_free(s);
        return -1;
    }
    int last = count < 0 || first + count > n ? n : first + count;
    CusetConfSample *res = (CusetConfSample *)CUSET_CALLOC((size_t)(last - first), sizeof *res);
    const char **texts = (const char **)CUSET_CALLOC((size_t)(last - first), sizeof *texts);
    int kept = 0, full = 0, empty = 0, cut = 0; // samples left out (prompt fills the context, no target), cut short
    int nonfinite = -1;                         // the sample whose logits are not finite: the analysis stops
    long cut_tokens = 0;
    double t0 = cuset_time(), shown = t0; // progress: a line every 2 s and at the end
    for (int i = first; i < last; i++) {
        int rc = cuset_conf_sample(m, tk, s[i].prompt, s[i].prompt_len, s[i].completion, s[i].completion_len, l, probe,
                                   &res[kept]);
        if (rc == 0) {
            cut += res[kept].cut > 0, cut_tokens += res[kept].cut;
            texts[kept++] = s[i].completion;
        } else if (rc == -3) {
            nonfinite = i;
            break;
        } else if (rc == -2) empty++;
        else full++;
        double now = cuset_time();
        if (text && (now - shown >= 2.0 || i + 1 == last)) {
            shown = now;
            fprintf(stderr, "analyze: %d/%d samples (%.1f s, %.1f samples/s)\n", i - first + 1, last - first, now - t0,
                    (i - first + 1) / (now - t0 > 0 ? now - t0 : 1e-9));
        }
    }
    if (nonfinite >= 0) snprintf(err, errlen, "%s: sample %d: " CUSET_NONFINITE_LOGITS, path, nonfinite);
    else {
        if (full && text) fprintf(text, "note: %d samples left out: their prompt fills the model's context\n", full);
        if (empty && text) fprintf(text, "note: %d samples left out: their completion is empty\n", empty);
        if (cut && text)
            fprintf(text, "note: %d samples cut at the model's context of %d tokens: %ld of their target tokens not "
                    "analysed\n", cut, m->cfg.max_seq_len, cut_tokens);
        if (!kept)
            snprintf(err, errlen, "%s: no sample of %d..%d has a target token to analyse (%d with a prompt that fills "
                     "the model's context of %d tokens, %d with an empty completion)", path, first, last - 1, full,
                     m->cfg.max_seq_len, empty);
        else cuset_conf_report(res, kept, texts, l, probe, tau, nview, json, text);
    }
    for (int i = 0; i < kept; i++) cuset_conf_sample_free(&res[i]);
    free(res);
    free(texts);
    cuset_text_samples_free(s);
    return kept && nonfinite < 0 ? 0 : -1;
}

const char cuset_conf_usage[] =
    "\n"
    "usage: gen --model FILE --analyze DATA.jsonl [options]   the confidence analysis\n"
    "Teacher-forces the model on each prompt/completion of DATA.jsonl and reports its confidence\n"
    "(the probability of the true token) on CUDA-sensitive versus neutral target tokens: means,\n"
    "medians, histograms, a two-sample KS test; the share of samples with a PROBE-token window\n"
    "whose mean is below the neutral-token mean and what those windows touch (kernel\n"
    "definitions, launches, dim3); the hardest window of eq. 7 and w_n; the tokens at or below\n"
    "tau that eq. 2's mask drops: how many, their share of -log c, the most frequent; the\n"
    "tokens of the numbers the program copies from its prompt (sizes, scales): their mean\n"
    "confidence, share of -log c and share of each objective's logit gradient at these\n"
    "confidences (data/confidence.h).\n"
    "  --first I, --count C  the samples I .. I+C-1                        [all]\n"
    "  --window L            CuSeT's window l for eq. 7     [the checkpoint's training setting]\n"
    "  --probe N             the window of the low-confidence search       [64]\n"
    "  --tau X               eq. 2's threshold, 0..1       [the checkpoint's training setting]\n"
    "  --views N             samples shown token by token in the JSON      [3]\n"
    "  --json FILE           the JSON written                              [MODEL.analysis.json]\n"
    "The text report goes to stdout; data/experiment_report.py --view FILE draws the JSON.\n";

int cuset_conf_analyze_to_json(CusetGPT *m, const CusetTokenizer *tk, const char *model_path, const char *data_path,
                               const CusetConfOpts *o, FILE *text, char *err, size_t errlen) {
    char json_default[4200], tmp[4300];
    const char *json_path = o->json_path;
    if (!json_path) snprintf(json_default, sizeof json_default, "%s.analysis.json", model_path), json_path = json_default;
    if (cuset_check_writable(json_path, err, errlen)) return -1;
    const char *input = cuset_same_file(json_path, model_path) ? "model"
                        : cuset_same_file(json_path, data_path)  ? "data file" : NULL;
    if (input)
        return cuset__err(err, errlen, "the JSON path %s is also the %s: the analysis would write over it; give another path",
                          json_path, input);
    // the JSON grows in memory and goes to disk only when complete: an interrupted
    // analysis (it can take minutes) leaves no partial file behind
    char *json = NULL;
    size_t json_len = 0;
    FILE *f = open_memstream(&json, &json_len);
    if (!f) return cuset__err(err, errlen, "out of memory for the JSON");
    fprintf(text, "model %s, data %s, window l = %d, probe %d tokens, tau %g\n", model_path, data_path, o->window, o->probe,
            o->tau);
    int rc = cuset_conf_analyze_file(m, tk, data_path, o->first, o->count > 0 ? o->count : -1, o->window, o->probe,
                                     o->tau, o->views, f, text, err, errlen);
    if ((fclose(f) != 0 || !json) && !rc) rc = cuset__err(err, errlen, "out of memory for the JSON");
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", json_path, (long)getpid());
    FILE *out = rc ? NULL : fopen(tmp, "w");
    if (!rc && !out) rc = cuset__err(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
    if (out) {
        int written = fwrite(json, 1, json_len, out) == json_len;
        if ((fclose(out) != 0 || !written) && !rc)
            rc = cuset__err(err, errlen, "%s: cannot write: %s", json_path, written ? strerror(errno) : "disk full?");
        if (!rc && rename(tmp, json_path))
            rc = cuset__err(err, errlen, "%s: cannot rename to %s: %s", tmp, json_path, strerror(errno));
        if (rc) unlink(tmp);
    }
    free(json);
    if (!rc) fprintf(text, "json: %s\n", json_path);
    return rc;
}

#endif // CUSET_CONFIDENCE_IMPLEMENTATION_DONE
#endif // CUSET_CONFIDENCE_IMPLEMENTATION
