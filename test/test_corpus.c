// test_corpus.c - checks of the CUDA task corpus generator (data/corpus.c).
// Build and run from the repository root:
//   gcc -std=gnu11 -O2 -fopenmp -Wall -Wextra -o /tmp/test_corpus test/test_corpus.c -lm && /tmp/test_corpus
// Prints PASS/FAIL/SKIP per check and exits non-zero when a check fails. It builds
// data/corpus itself (warnings are errors) into a fresh /tmp/cuset_corpus_test.XXXXXX,
// or uses $CUSET_CORPUS when set, and runs it through system(). The samples are read with
// cuset.h's own JSONL reader; the other members (family, spans, spec, combo, heldout) with
// the small JSON reader below. With nvcc on the PATH, one program per family is compiled
// too (CUSET_TEST_NVCC=0 skips that, CUSET_TEST_NVCC=N compiles N seeds per family).
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "testlib.h"

static char tmpdir[64];
static char corpus[512];

// ----------------------------------------------------------------------------
// helpers

// Runs a shell command; returns its exit status (or -1 when it did not exit normally).
__attribute__((format(printf, 1, 2)))
static int sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt); vsnprintf(cmd, sizeof cmd, fmt, ap); va_end(ap);
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(b); return NULL; }
    fclose(f);
    b[n] = 0;
    if (len) *len = (size_t)n;
    return b;
}
static void spit(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
    fclose(f);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// ----------------------------------------------------------------------------
// A small JSON reader of our own (values as a tree; strings unescaped, \uXXXX below 0x80)

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct J { int t; double num; char *s; struct J *kid; char **key; int n; } J;

static const char *jp_skip(const char *p) { while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++; return p; }
static const char *jp_value(const char *p, J *v);
static const char *jp_string(const char *p, char **out) {
    if (*p != '"') return NULL;
    p++;
    size_t cap = 64, n = 0;
    char *s = malloc(cap);
    while (*p && *p != '"') {
        char c = *p++;
        if (c == '\\') {
            char e = *p++;
            if (e == 'n') c = '\n'; else if (e == 't') c = '\t'; else if (e == 'r') c = '\r';
            else if (e == 'b') c = '\b'; else if (e == 'f') c = '\f';
            else if (e == 'u') { unsigned u = 0; sscanf(p, "%4x", &u); p += 4; c = (char)u; }
            else c = e;
        }
        if (n + 2 > cap) s = realloc(s, cap *= 2);
        s[n++] = c;
    }
    if (*p != '"') { free(s); return NULL; }
    s[n] = 0;
    *out = s;
    return p + 1;
}
static const char *jp_value(const char *p, J *v) {
    memset(v, 0, sizeof *v);
    p = jp_skip(p);
    if (*p == '"') { v->t = J_STR; return jp_string(p, &v->s); }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        v->t = *p == '{' ? J_OBJ : J_ARR;
        p = jp_skip(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            v->kid = realloc(v->kid, sizeof *v->kid * (size_t)(v->n + 1));
            v->key = realloc(v->key, sizeof *v->key * (size_t)(v->n + 1));
            v->key[v->n] = NULL;
            if (v->t == J_OBJ) {
                p = jp_string(jp_skip(p), &v->key[v->n]);
                if (!p) return NULL;
                p = jp_skip(p);
                if (*p++ != ':') return NULL;
            }
            p = jp_value(p, &v->kid[v->n]);
            if (!p) return NULL;
            v->n++;
            p = jp_skip(p);
            if (*p == ',') { p++; continue; }
            if (*p == close) return p + 1;
            return NULL;
        }
    }
    if (!strncmp(p, "true", 4)) { v->t = J_BOOL; v->num = 1; return p + 4; }
    if (!strncmp(p, "false", 5)) { v->t = J_BOOL; return p + 5; }
    if (!strncmp(p, "null", 4)) { v->t = J_NULL; return p + 4; }
    char *end;
    v->t = J_NUM;
    v->num = strtod(p, &end);
    return end == p ? NULL : end;
}
static void j_free(J *v) {
    free(v->s);
    for (int k = 0; k < v->n; k++) { j_free(&v->kid[k]); free(v->key[k]); }
    free(v->kid);
    free(v->key);
}
static const J *j_get(const J *o, const char *key) {
    if (!o || o->t != J_OBJ) return NULL;
    for (int k = 0; k < o->n; k++)
        if (!strcmp(o->key[k], key)) return &o->kid[k];
    return NULL;
}
static const char *j_str(const J *o, const char *key) {
    const J *v = j_get(o, key);
    return v && v->t == J_STR ? v->s : NULL;
}

// ----------------------------------------------------------------------------
// The corpus, loaded

typedef struct {
    CusetTextSample *text;  // stb_ds array, from cuset_jsonl_read
    J *obj;                 // the same lines, parsed here
    int n;
} Split;
static const char *const split_names[] = { "train", "val", "test" };

static int load_split(const char *dir, int sp, Split *s) {
    char path[600], err[400];
    memset(s, 0, sizeof *s);
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, split_names[sp]);
    if (cuset_jsonl_read(path, &s->text, err, sizeof err)) { fail("jsonl_read", "%s", err); return -1; }
    size_t len;
    char *buf = slurp(path, &len);
    int lines = 0;
    for (char *p = buf; *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        if (*p) {
            s->obj = realloc(s->obj, sizeof *s->obj * (size_t)(lines + 1));
            const char *end = jp_value(p, &s->obj[lines]);
            if (!end || *jp_skip(end)) { fail("json_parse", "%s line %d does not parse", path, lines + 1); free(buf); return -1; }
            lines++;
        }
        if (!nl) break;
        p = nl + 1;
    }
    free(buf);
    s->n = lines;
    if ((size_t)lines != arrlenu(s->text)) { fail("jsonl_count", "%s: %d lines, cuset_jsonl_read read %zu", path, lines, arrlenu(s->text)); return -1; }
    return 0;
}
static void free_split(Split *s) {
    for (int k = 0; k < s->n; k++) j_free(&s->obj[k]);
    free(s->obj);
    cuset_text_samples_free(s->text);
}

// ----------------------------------------------------------------------------
// Checks on every sample

static int kind_of(const char *s) {
    if (!strcmp(s, "global")) return CUSET_SPAN_GLOBAL_DEF;
    if (!strcmp(s, "device")) return CUSET_SPAN_DEVICE_DEF;
    if (!strcmp(s, "launch")) return CUSET_SPAN_LAUNCH;
    if (!strcmp(s, "dim3")) return CUSET_SPAN_DIM3;
    return -1;
}

// The prompt: exactly five lines with the five headers, in order, each with content, no
// doubled or trailing space (the mark of an empty piece in a sentence).
static const char *prompt_problem(const char *p) {
    static const char *const head[] = { "Task Name: ", "Task Description: ", "Input: ", "Output: ", "GPU: " };
    for (int k = 0; k < 5; k++) {
        size_t h = strlen(head[k]);
        if (strncmp(p, head[k], h)) return head[k];
        p += h;
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len == 0 || p[0] == ' ') return "an empty field";
        if (p[len - 1] == ' ') return "a trailing space";
        for (size_t i = 1; i < len; i++)
            if (p[i] == ' ' && p[i - 1] == ' ') return "a doubled space";
        if (k < 4 && !nl) return "fewer than five lines";
        if (k == 4 && nl) return "more than five lines";
        p += len + (nl ? 1 : 0);
    }
    return NULL;
}

// Text that no person writes, in a prompt or a program: "x + -2" or "x - -2", "1 * sizeof",
// and in prompts "a 8192" or a word twice in a row (but "long long"). NULL when clean; else
// what, with the text around it.
static const char *clumsy_text(const char *s, int prompt) {
    static char why[160];
    const char *what = NULL, *p = s;
    for (; *p && !what; p++) {
        if (p > s && p[-1] == ' ' && (p[0] == '+' || p[0] == '-') && p[1] == ' ' && p[2] == '-' &&
            p[3] >= '0' && p[3] <= '9')
            what = "a sign pair";
        else if (!strncmp(p, " 1 * sizeof", 11) || !strncmp(p, "(1 * sizeof", 11)) what = "a product with 1";
        else if (prompt && !strncmp(p, " a 8", 4)) what = "'a' before 8...";
        else if (prompt && p > s && p[-1] == ' ' && isalpha((unsigned char)p[0])) { // a word: the same again?
            size_t n = 0;
            while (isalnum((unsigned char)p[n]) || p[n] == '_') n++;
            // (strncmp stops at the end of the text; when equal, p[2 * n + 1] is within it)
            if (p[n] == ' ' && !strncmp(p, p + n + 1, n) && !isalnum((unsigned char)p[2 * n + 1]) &&
                p[2 * n + 1] != '_' && strncmp(p, "long ", 5))
                what = "a word twice";
        }
    }
    if (!what) return NULL;
    const char *at = p - 1, *from = at; // the match, and up to 40 characters before it on its line
    while (from > s && from[-1] != '\n' && at - from < 40) from--;
    size_t len = strcspn(from, "\n");
    snprintf(why, sizeof why, "%s: \"%.*s\"", what, (int)(len < 60 ? len : 60), from);
    return why;
}

// "x (float32, [4096]), y (int32, [2, 3])" from a spec's tensor array.
static void tensor_line(const J *arr, char *out, size_t cap) {
    out[0] = 0;
    for (int k = 0; arr && k < arr->n; k++) {
        const J *x = &arr->kid[k], *shape = j_get(x, "shape");
        size_t l = strlen(out);
        const char *name = j_str(x, "name"), *dtype = j_str(x, "dtype");
        snprintf(out + l, cap - l, "%s%s (%s, [", k ? ", " : "", name ? name : "?", dtype ? dtype : "?");
        for (int d = 0; shape && d < shape->n; d++) {
            l = strlen(out);
            snprintf(out + l, cap - l, "%s%.0f", d ? ", " : "", shape->kid[d].num);
        }
        l = strlen(out);
        snprintf(out + l, cap - l, "])");
    }
}

static void check_samples(Split *sp) {
    long bad_prompt = 0, bad_spans = 0, bad_counts = 0, bad_io = 0, bad_spec = 0, bad_text = 0, total = 0, nspans[5] = { 0 };
    char first_prompt[300] = "", first_spans[300] = "", first_counts[300] = "", first_io[300] = "", first_spec[300] = "",
         first_text[300] = "";
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < sp[s].n; i++) {
            total++;
            const CusetTextSample *ts = &sp[s].text[i];
            const J *o = &sp[s].obj[i];
            const char *id = j_str(o, "id") ? j_str(o, "id") : "?";
            const char *pp = prompt_problem(ts->prompt);
            if (pp) {
                if (!bad_prompt++) snprintf(first_prompt, sizeof first_prompt, "%s: %s", id, pp);
            }
            const char *clumsy = clumsy_text(ts->prompt, 1);
            if (!clumsy) clumsy = clumsy_text(ts->completion, 0);
            if (clumsy && !bad_text++) snprintf(first_text, sizeof first_text, "%s: %s", id, clumsy);
            // spans: exactly what the annotator finds (the generator takes them from it)
            CusetSpan *want = NULL;
            size_t nw = cuset_annotate(ts->completion, ts->completion_len, &want);
            const J *spans = j_get(o, "spans");
            int same = spans && spans->t == J_ARR && (size_t)spans->n == nw;
            for (size_t k = 0; same && k < nw; k++) {
                const J *e = &spans->kid[k];
                same = e->t == J_ARR && e->n == 3 && (size_t)e->kid[0].num == want[k].start && (size_t)e->kid[1].num == want[k].end &&
                       e->kid[2].t == J_STR && kind_of(e->kid[2].s) == (int)want[k].kind;
            }
            for (size_t k = 0; k < nw; k++) nspans[want[k].kind]++;
            // and independently of its parsing: one span per occurrence of each kind's token
            // (the corpus has no __device__ variables and no such words in comments)
            static const char *const token[5] = { "", "__global__", "__device__", "<<<", "dim3 " };
            for (int kind = 1; kind <= 4; kind++) {
                long in_text = 0, in_spans = 0;
                for (const char *p = strstr(ts->completion, token[kind]); p; p = strstr(p + 1, token[kind])) in_text++;
                for (size_t k = 0; k < nw; k++) in_spans += (int)want[k].kind == kind;
                if (in_text != in_spans && !bad_counts++)
                    snprintf(first_counts, sizeof first_counts, "%s: %ld '%s' in the text, %ld %s spans", id, in_text, token[kind],
                             in_spans, cuset_span_kind_name((CusetSpanKind)kind));
            }
            if (!same && !bad_spans++) {
                snprintf(first_spans, sizeof first_spans, "%s: annotator %zu spans, recorded %d", id, nw, spans ? spans->n : -1);
                for (size_t k = 0; k < nw && k < 6; k++) {
                    size_t l = strlen(first_spans);
                    snprintf(first_spans + l, sizeof first_spans - l, " [%zu,%zu,%s]", want[k].start, want[k].end,
                             cuset_span_kind_name(want[k].kind));
                }
            }
            int has_global = 0, has_launch = 0;
            for (size_t k = 0; k < nw; k++) {
                has_global |= want[k].kind == CUSET_SPAN_GLOBAL_DEF;
                has_launch |= want[k].kind == CUSET_SPAN_LAUNCH;
            }
            arrfree(want);
            // the I/O convention: "NAME.bin" for every tensor, a main, a kernel, a launch
            const J *spec = j_get(o, "spec"), *ins = j_get(spec, "inputs"), *outs = j_get(spec, "outputs");
            int io = ins && outs && ins->n > 0 && outs->n > 0 && has_global && has_launch && strstr(ts->completion, "int main(") &&
                     strstr(ts->completion, "cudaMalloc") && strstr(ts->completion, "cudaMemcpy") && strstr(ts->completion, "cudaFree");
            for (int k = 0; io && k < ins->n + outs->n; k++) {
                const J *x = k < ins->n ? &ins->kid[k] : &outs->kid[k - ins->n];
                char pat[64];
                snprintf(pat, sizeof pat, "\"%s.bin\"", j_str(x, "name") ? j_str(x, "name") : "?");
                io = strstr(ts->completion, pat) != NULL;
            }
            if (!io && !bad_io++) snprintf(first_io, sizeof first_io, "%s", id);
            // the spec agrees with the prompt's Input/Output lines and the family field
            char want_in[2000], want_out[2000], line[4100];
            tensor_line(ins, want_in, sizeof want_in);
            tensor_line(outs, want_out, sizeof want_out);
            snprintf(line, sizeof line, "\nInput: %s\nOutput: %s\nGPU: ", want_in, want_out);
            const char *fam = j_str(o, "family");
            const J *tol = j_get(spec, "atol"), *rtol = j_get(spec, "rtol"), *seed = j_get(spec, "seed");
            int ok = fam && j_str(spec, "family") && !strcmp(fam, j_str(spec, "family")) && strstr(ts->prompt, line) &&
                     tol && tol->t == J_NUM && rtol && rtol->t == J_NUM && seed && seed->t == J_NUM && j_get(spec, "params") &&
                     j_str(o, "combo") && j_get(o, "heldout");
            if (!ok && !bad_spec++) snprintf(first_spec, sizeof first_spec, "%s", id);
        }
    if (bad_prompt) fail("prompt_five_fields", "%ld of %ld prompts, first %s", bad_prompt, total, first_prompt);
    else pass("prompt_five_fields");
    if (bad_text) fail("text_reads_as_written", "%ld of %ld samples, first %s", bad_text, total, first_text);
    else pass("text_reads_as_written (no '+ -2', '1 * sizeof', 'a 8192' or doubled word)");
    if (bad_spans) fail("spans_equal_annotator", "%ld of %ld samples, first %s", bad_spans, total, first_spans);
    else printf("PASS spans_equal_annotator (%ld samples; %ld global, %ld device, %ld launch, %ld dim3 spans)\n", total,
                nspans[1], nspans[2], nspans[3], nspans[4]);
    if (bad_counts) fail("span_counts_match_text", "%ld of %ld samples, first %s", bad_counts, total, first_counts);
    else pass("span_counts_match_text (__global__, __device__, <<<, dim3)");
    if (bad_io) fail("io_convention", "%ld of %ld programs lack a NAME.bin, main, kernel or launch; first %s", bad_io, total, first_io);
    else pass("io_convention");
    if (bad_spec) fail("spec_matches_prompt", "%ld of %ld samples, first %s", bad_spec, total, first_spec);
    else pass("spec_matches_prompt");
}

// A string set over stb_ds (keys copied).
typedef struct { char *key; int value; } StrInt;

static char *pair_key(const CusetTextSample *t) {
    char *k = malloc(t->prompt_len + t->completion_len + 2);
    memcpy(k, t->prompt, t->prompt_len);
    k[t->prompt_len] = 1;
    memcpy(k + t->prompt_len + 1, t->completion, t->completion_len);
    k[t->prompt_len + 1 + t->completion_len] = 0;
    return k;
}

static void check_splits(Split *sp, char **families, int nfam) {
    // disjoint prompt + completion
    StrInt *seen = NULL;
    sh_new_strdup(seen);
    long cross = 0, dup = 0;
    char first[200] = "";
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < sp[s].n; i++) {
            char *k = pair_key(&sp[s].text[i]);
            ptrdiff_t at = shgeti(seen, k);
            if (at >= 0) {
                if (seen[at].value != s) { if (!cross++) snprintf(first, sizeof first, "%s %d also in %s", split_names[s], i, split_names[seen[at].value]); }
                else dup++;
            } else shput(seen, k, s);
            free(k);
        }
    shfree(seen);
    if (cross) fail("splits_disjoint", "%ld prompt+completion pairs in two splits; first: %s", cross, first);
    else pass("splits_disjoint");
    if (dup) fail("no_duplicates_within_split", "%ld duplicates", dup);
    else pass("no_duplicates_within_split");

    // held-out combinations: only in test, never in train/val (per family)
    StrInt *combos = NULL;
    sh_new_strdup(combos);
    long bad_flag = 0, leaked = 0, nheld = 0;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < sp[s].n; i++) {
            const J *o = &sp[s].obj[i];
            const J *h = j_get(o, "heldout");
            if (!h || h->t != J_BOOL || h->num != 0) bad_flag++;
            char key[700];
            snprintf(key, sizeof key, "%s|%s", j_str(o, "family"), j_str(o, "combo"));
            shput(combos, key, 1);
        }
    int *held_per_family = calloc((size_t)nfam, sizeof(int));
    for (int i = 0; i < sp[2].n; i++) {
        const J *o = &sp[2].obj[i];
        const J *h = j_get(o, "heldout");
        if (!h || h->t != J_BOOL) { bad_flag++; continue; }
        if (!h->num) continue;
        nheld++;
        char key[700];
        snprintf(key, sizeof key, "%s|%s", j_str(o, "family"), j_str(o, "combo"));
        if (shgeti(combos, key) >= 0) leaked++;
        for (int f = 0; f < nfam; f++)
            if (!strcmp(families[f], j_str(o, "family"))) held_per_family[f]++;
    }
    shfree(combos);
    int fam_without = -1;
    for (int f = 0; f < nfam; f++)
        if (!held_per_family[f]) fam_without = f;
    free(held_per_family);
    if (bad_flag || leaked || nheld == 0 || fam_without >= 0)
        fail("heldout_combinations", "%ld bad flags, %ld of %ld held-out test samples have a combination seen in train/val%s%s",
             bad_flag, leaked, nheld, fam_without >= 0 ? ", none held out for " : "", fam_without >= 0 ? families[fam_without] : "");
    else printf("PASS heldout_combinations (%ld of %d test samples, every family)\n", nheld, sp[2].n);

    // every family in every split
    for (int s = 0; s < 3; s++) {
        int missing = -1;
        for (int f = 0; f < nfam; f++) {
            int found = 0;
            for (int i = 0; i < sp[s].n && !found; i++) found = j_str(&sp[s].obj[i], "family") && !strcmp(j_str(&sp[s].obj[i], "family"), families[f]);
            if (!found) missing = f;
        }
        char name[64];
        snprintf(name, sizeof name, "families_in_%s", split_names[s]);
        if (missing >= 0) fail(name, "family %s does not occur", families[missing]);
        else pass(name);
    }
}

// ----------------------------------------------------------------------------
// Hand-computed instances of every family, through `corpus --reference`

typedef struct { const char *name, *dtype; int ndim; long d0, d1; const void *data; } HT;
#define V1(nm, dt, n, arr) { nm, dt, 1, n, 0, arr }
#define V2(nm, dt, r, c, arr) { nm, dt, 2, r, c, arr }

static int dsize(const char *dt) {
    return !strcmp(dt, "float16") ? 2 : !strcmp(dt, "uint8") ? 1 : 4;
}
static double dval(const char *dt, const void *p, long i) {
    if (!strcmp(dt, "float32")) return ((const float *)p)[i];
    if (!strcmp(dt, "int32")) return ((const int32_t *)p)[i];
    if (!strcmp(dt, "uint32")) return ((const uint32_t *)p)[i];
    if (!strcmp(dt, "uint8")) return ((const uint8_t *)p)[i];
    return ((const uint16_t *)p)[i]; // float16: compared as bits
}
static long hcount(const HT *x) { return x->ndim == 1 ? x->d0 : x->d0 * x->d1; }

static void hand_spec(char *js, size_t cap, const char *family, const char *params, const HT *in, int nin, const HT *out, int nout) {
    size_t l = 0;
    l += (size_t)snprintf(js + l, cap - l, "{\"family\":\"%s\",\"params\":{%s},\"inputs\":[", family, params);
    for (int k = 0; k < nin; k++) {
        l += (size_t)snprintf(js + l, cap - l, "%s{\"name\":\"%s\",\"dtype\":\"%s\",\"shape\":[%ld", k ? "," : "", in[k].name, in[k].dtype, in[k].d0);
        if (in[k].ndim == 2) l += (size_t)snprintf(js + l, cap - l, ",%ld", in[k].d1);
        l += (size_t)snprintf(js + l, cap - l, "],\"lo\":0,\"hi\":1,\"integer\":false,\"gen\":\"uniform\"}");
    }
    l += (size_t)snprintf(js + l, cap - l, "],\"outputs\":[");
    for (int k = 0; k < nout; k++) {
        l += (size_t)snprintf(js + l, cap - l, "%s{\"name\":\"%s\",\"dtype\":\"%s\",\"shape\":[%ld", k ? "," : "", out[k].name, out[k].dtype, out[k].d0);
        if (out[k].ndim == 2) l += (size_t)snprintf(js + l, cap - l, ",%ld", out[k].d1);
        l += (size_t)snprintf(js + l, cap - l, "]}");
    }
    snprintf(js + l, cap - l, "],\"seed\":1,\"atol\":0,\"rtol\":0}\n");
}

// Writes spec.json and the inputs, runs the reference, compares every output element with
// the hand-computed value (|got - want| <= tol; float16 outputs as exact bits).
static void hand(const char *label, const char *family, const char *params, const HT *in, int nin, const HT *want, int nout, double tol) {
    char dir[300], path[400], js[4096], name[200];
    snprintf(name, sizeof name, "hand %s %s", family, label);
    snprintf(dir, sizeof dir, "%s/hand", tmpdir);
    sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
    hand_spec(js, sizeof js, family, params, in, nin, want, nout);
    snprintf(path, sizeof path, "%s/spec.json", dir);
    spit(path, js, strlen(js));
    for (int k = 0; k < nin; k++) {
        snprintf(path, sizeof path, "%s/%s.bin", dir, in[k].name);
        spit(path, in[k].data, (size_t)hcount(&in[k]) * (size_t)dsize(in[k].dtype));
    }
    int rc = sh("'%s' --reference '%s' 2>%s/err.txt", corpus, dir, dir);
    if (rc != 0) {
        snprintf(path, sizeof path, "%s/err.txt", dir);
        char *e = slurp(path, NULL);
        fail(name, "corpus --reference exited %d: %s", rc, e ? e : "");
        free(e);
        return;
    }
    for (int k = 0; k < nout; k++) {
        snprintf(path, sizeof path, "%s/%s.expected.bin", dir, want[k].name);
        size_t len;
        char *got = slurp(path, &len);
        long n = hcount(&want[k]);
        if (!got || len != (size_t)n * (size_t)dsize(want[k].dtype)) { fail(name, "%s: missing or wrong size", path); free(got); return; }
        for (long i = 0; i < n; i++) {
            double g = dval(want[k].dtype, got, i), w = dval(want[k].dtype, want[k].data, i);
            if (!(fabs(g - w) <= tol)) {
                fail(name, "%s[%ld] = %.9g, hand-computed %.9g", want[k].name, i, g, w);
                free(got);
                return;
            }
        }
        free(got);
    }
    pass(name);
}

static void hand_cases(void) {
    const char *F = "float32", *I = "int32", *U = "uint32", *H = "float16", *B8 = "uint8";
    // elementwise_unary
    {
        float x[] = { -2, -0.5f, 0, 0.5f, 3, -1e-3f }, y[] = { 0, 0, 0, 0.5f, 3, 0 };
        HT in[] = { V1("x", F, 6, x) }, out[] = { V1("y", F, 6, y) };
        hand("relu", "elementwise_unary", "\"op\":\"relu\",\"n\":6", in, 1, out, 1, 0);
    }
    {
        float x[] = { -2, 3, -10 }, y[] = { -0.2f, 3, -1 };
        HT in[] = { V1("x", F, 3, x) }, out[] = { V1("y", F, 3, y) };
        hand("leaky_relu", "elementwise_unary", "\"op\":\"leaky_relu\",\"n\":3,\"a\":0.1", in, 1, out, 1, 1e-7);
    }
    {
        float x[] = { 2, -1, 0 }, y[] = { 5.75f, -1.75f, 0.75f };
        HT in[] = { V1("x", F, 3, x) }, out[] = { V1("y", F, 3, y) };
        hand("scale_shift", "elementwise_unary", "\"op\":\"scale_shift\",\"n\":3,\"a\":2.5,\"b\":0.75", in, 1, out, 1, 0);
    }
    {
        float x[] = { 0, logf(3) }, y[] = { 0.5f, 0.75f };
        HT in[] = { V1("x", F, 2, x) }, out[] = { V1("y", F, 2, y) };
        hand("sigmoid", "elementwise_unary", "\"op\":\"sigmoid\",\"n\":2", in, 1, out, 1, 1e-6);
    }
    {
        float x[] = { -3, 2 }, y[] = { 3, 2 }, y2[] = { 9, 4 }, y3[] = { -0.995054754f, 0.964027580f },
              y4[] = { 0.0497870684f, 7.3890561f }, y5[] = { 0.0485873516f, 2.12692801f }, y6[] = { -0.142277620f, 1.76159416f };
        HT in[] = { V1("x", F, 2, x) };
        HT o1[] = { V1("y", F, 2, y) }, o2[] = { V1("y", F, 2, y2) }, o3[] = { V1("y", F, 2, y3) }, o4[] = { V1("y", F, 2, y4) },
           o5[] = { V1("y", F, 2, y5) }, o6[] = { V1("y", F, 2, y6) };
        hand("abs", "elementwise_unary", "\"op\":\"abs\",\"n\":2", in, 1, o1, 1, 0);
        hand("square", "elementwise_unary", "\"op\":\"square\",\"n\":2", in, 1, o2, 1, 0);
        hand("tanh", "elementwise_unary", "\"op\":\"tanh\",\"n\":2", in, 1, o3, 1, 1e-6);
        hand("exp", "elementwise_unary", "\"op\":\"exp\",\"n\":2", in, 1, o4, 1, 1e-6);
        hand("softplus", "elementwise_unary", "\"op\":\"softplus\",\"n\":2", in, 1, o5, 1, 1e-6);
        hand("silu", "elementwise_unary", "\"op\":\"silu\",\"n\":2", in, 1, o6, 1, 1e-6);
    }
    // elementwise_binary
    {
        float a[] = { 1, 2, -3 }, b[] = { 10, 20, 30 };
        float add[] = { 11, 22, 27 }, sub[] = { -9, -18, -33 }, mul[] = { 10, 40, -90 }, dv[] = { 0.1f, 0.1f, -0.1f },
              mx[] = { 10, 20, 30 }, mn[] = { 1, 2, -3 }, axpy[] = { 12, 24, 24 }, sq[] = { 81, 324, 1089 };
        HT in[] = { V1("a", F, 3, a), V1("b", F, 3, b) };
        HT o[][1] = { { V1("c", F, 3, add) }, { V1("c", F, 3, sub) }, { V1("c", F, 3, mul) }, { V1("c", F, 3, dv) },
                      { V1("c", F, 3, mx) }, { V1("c", F, 3, mn) }, { V1("c", F, 3, axpy) }, { V1("c", F, 3, sq) } };
        hand("add", "elementwise_binary", "\"op\":\"add\",\"n\":3", in, 2, o[0], 1, 0);
        hand("sub", "elementwise_binary", "\"op\":\"sub\",\"n\":3", in, 2, o[1], 1, 0);
        hand("mul", "elementwise_binary", "\"op\":\"mul\",\"n\":3", in, 2, o[2], 1, 0);
        hand("div", "elementwise_binary", "\"op\":\"div\",\"n\":3", in, 2, o[3], 1, 1e-8);
        hand("max", "elementwise_binary", "\"op\":\"max\",\"n\":3", in, 2, o[4], 1, 0);
        hand("min", "elementwise_binary", "\"op\":\"min\",\"n\":3", in, 2, o[5], 1, 0);
        hand("axpy", "elementwise_binary", "\"op\":\"axpy\",\"n\":3,\"a\":2", in, 2, o[6], 1, 0);
        hand("sqdiff", "elementwise_binary", "\"op\":\"sqdiff\",\"n\":3", in, 2, o[7], 1, 0);
    }
    // elementwise_ternary
    {
        float a[] = { 2, 1 }, b[] = { 3, -1 }, c[] = { 4, 0.5f }, d[] = { 10, -0.5f };
        HT in[] = { V1("a", F, 2, a), V1("b", F, 2, b), V1("c", F, 2, c) }, out[] = { V1("d", F, 2, d) };
        hand("fma", "elementwise_ternary", "\"op\":\"fma\",\"n\":2", in, 3, out, 1, 0);
    }
    {
        int m[] = { 1, 0, 5 };
        float a[] = { 1, 2, 3 }, b[] = { 10, 20, 30 }, o[] = { 1, 20, 3 };
        HT in[] = { V1("cond", I, 3, m), V1("a", F, 3, a), V1("b", F, 3, b) }, out[] = { V1("out", F, 3, o) };
        hand("where", "elementwise_ternary", "\"op\":\"where\",\"n\":3", in, 3, out, 1, 0);
    }
    {
        float x[] = { -5, 0.5f, 5 }, lo[] = { -1, -1, -1 }, hi[] = { 1, 1, 1 }, y[] = { -1, 0.5f, 1 };
        HT in[] = { V1("x", F, 3, x), V1("lo", F, 3, lo), V1("hi", F, 3, hi) }, out[] = { V1("y", F, 3, y) };
        hand("clamp", "elementwise_ternary", "\"op\":\"clamp\",\"n\":3", in, 3, out, 1, 0);
    }
    {
        float a[] = { 0, 10 }, b[] = { 10, 20 }, t[] = { 0.25f, 0.5f }, o[] = { 2.5f, 15 };
        HT in[] = { V1("a", F, 2, a), V1("b", F, 2, b), V1("t", F, 2, t) }, out[] = { V1("out", F, 2, o) };
        hand("lerp", "elementwise_ternary", "\"op\":\"lerp\",\"n\":2", in, 3, out, 1, 0);
    }
    // convert_float_to_int
    {
        float x[] = { 2.5f, 3.5f, -2.5f, -0.4f, 1.6f, -2.7f };
        int rn[] = { 2, 4, -2, 0, 2, -3 }, tz[] = { 2, 3, -2, 0, 1, -2 }, fl[] = { 2, 3, -3, -1, 1, -3 }, ce[] = { 3, 4, -2, 0, 2, -2 };
        HT in[] = { V1("x", F, 6, x) };
        HT o1[] = { V1("q", I, 6, rn) }, o2[] = { V1("q", I, 6, tz) }, o3[] = { V1("q", I, 6, fl) }, o4[] = { V1("q", I, 6, ce) };
        hand("round (ties to even)", "convert_float_to_int", "\"op\":\"round\",\"n\":6", in, 1, o1, 1, 0);
        hand("trunc", "convert_float_to_int", "\"op\":\"trunc\",\"n\":6", in, 1, o2, 1, 0);
        hand("floor", "convert_float_to_int", "\"op\":\"floor\",\"n\":6", in, 1, o3, 1, 0);
        hand("ceil", "convert_float_to_int", "\"op\":\"ceil\",\"n\":6", in, 1, o4, 1, 0);
    }
    {
        float x[] = { 0.125f, 0.375f, -1.1f };
        int q[] = { 0, 2, -4 };
        HT in[] = { V1("x", F, 3, x) }, out[] = { V1("q", I, 3, q) };
        hand("scale_round", "convert_float_to_int", "\"op\":\"scale_round\",\"n\":3,\"a\":4", in, 1, out, 1, 0);
    }
    {
        float x[] = { 0, 1, -3, 3, -0.25f };
        uint8_t q[] = { 128, 178, 0, 255, 116 };
        HT in[] = { V1("x", F, 5, x) }, out[] = { V1("q", B8, 5, q) };
        hand("quantize_u8", "convert_float_to_int", "\"op\":\"quantize_u8\",\"n\":5,\"a\":50,\"b\":128", in, 1, out, 1, 0);
    }
    // convert_int_to_float
    {
        int q[] = { 3, 5, -1 };
        float x[] = { 0, 1, -2 };
        HT in[] = { V1("q", I, 3, q) }, out[] = { V1("x", F, 3, x) };
        hand("dequantize", "convert_int_to_float", "\"op\":\"dequantize\",\"n\":3,\"a\":0.5,\"b\":3", in, 1, out, 1, 0);
    }
    {
        int q[] = { 4, -2 };
        float x[] = { 3, 0 };
        HT in[] = { V1("q", I, 2, q) }, out[] = { V1("x", F, 2, x) };
        hand("scale_bias", "convert_int_to_float", "\"op\":\"scale_bias\",\"n\":2,\"a\":0.5,\"b\":1", in, 1, out, 1, 0);
    }
    {
        uint8_t p[] = { 0, 255, 51 };
        float x[] = { -1, 1, -0.6f };
        HT in[] = { V1("q", B8, 3, p) }, out[] = { V1("x", F, 3, x) };
        hand("normalize_u8", "convert_int_to_float", "\"op\":\"normalize_u8\",\"n\":3,\"a\":127.5,\"b\":127.5", in, 1, out, 1, 1e-7);
    }
    {
        int q[] = { 16777217, -7 };
        float x[] = { 16777216, -7 };
        HT in[] = { V1("q", I, 2, q) }, out[] = { V1("x", F, 2, x) };
        hand("to_float", "convert_int_to_float", "\"op\":\"to_float\",\"n\":2", in, 1, out, 1, 0);
    }
    // convert_half (float16 compared as bit patterns)
    {
        float x[] = { 1.0f, 0.1f, 65504.0f, 1.0f / 3, -2.0f, 1e-7f, 70000.0f };
        uint16_t h[] = { 0x3c00, 0x2e66, 0x7bff, 0x3555, 0xc000, 0x0002, 0x7c00 };
        HT in[] = { V1("x", F, 7, x) }, out[] = { V1("y", H, 7, h) };
        hand("to_half", "convert_half", "\"op\":\"to_half\",\"n\":7", in, 1, out, 1, 0);
    }
    {
        uint16_t h[] = { 0x3c00, 0xc200, 0x3800 };
        float y[] = { 2, -6, 1 };
        HT in[] = { V1("x", H, 3, h) }, out[] = { V1("y", F, 3, y) };
        hand("from_half", "convert_half", "\"op\":\"from_half\",\"n\":3,\"a\":2", in, 1, out, 1, 0);
    }
    {
        float x[] = { 1.0f / 3, 2049, 2051 }, y[] = { 0.333251953125f, 2048, 2052 };
        HT in[] = { V1("x", F, 3, x) }, out[] = { V1("y", F, 3, y) };
        hand("roundtrip", "convert_half", "\"op\":\"roundtrip\",\"n\":3", in, 1, out, 1, 0);
    }
    {
        uint16_t a[] = { 0x3c00, 0x6800, 0x6800 }, b[] = { 0x3c00, 0x3c00, 0x4200 }, c[] = { 0x4000, 0x6800, 0x6802 };
        HT in[] = { V1("a", H, 3, a), V1("b", H, 3, b) }, out[] = { V1("c", H, 3, c) };
        hand("half_add", "convert_half", "\"op\":\"half_add\",\"n\":3", in, 2, out, 1, 0);
    }
    // gather
    {
        float src[] = { 10, 20, 30, 40 }, out[] = { 40, 10, 10, 30, 20 };
        int idx[] = { 3, 0, 0, 2, 1 };
        HT in[] = { V1("src", F, 4, src), V1("idx", I, 5, idx) }, o[] = { V1("out", F, 5, out) };
        hand("gather1d", "gather", "\"op\":\"gather1d\",\"n\":5,\"m\":4,\"d\":1", in, 2, o, 1, 0);
    }
    {
        float table[] = { 1, 2, 3, 4, 5, 6 }, out[] = { 5, 6, 1, 2, 5, 6 };
        int ids[] = { 2, 0, 2 };
        HT in[] = { V2("table", F, 3, 2, table), V1("ids", I, 3, ids) }, o[] = { V2("out", F, 3, 2, out) };
        hand("gather_rows", "gather", "\"op\":\"gather_rows\",\"n\":3,\"m\":3,\"d\":2", in, 2, o, 1, 0);
    }
    // scatter
    {
        float src[] = { 1, 2, 3, 4 }, out[] = { 2, 4, 1, 3 };
        int idx[] = { 2, 0, 3, 1 };
        HT in[] = { V1("src", F, 4, src), V1("idx", I, 4, idx) }, o[] = { V1("out", F, 4, out) };
        hand("perm", "scatter", "\"op\":\"perm\",\"n\":4,\"m\":4", in, 2, o, 1, 0);
    }
    {
        float src[] = { 1, 2, 3, 4 }, out[] = { 4, 0, 6 };
        int idx[] = { 0, 2, 0, 2 };
        HT in[] = { V1("src", F, 4, src), V1("idx", I, 4, idx) }, o[] = { V1("out", F, 3, out) };
        hand("add_f32", "scatter", "\"op\":\"add_f32\",\"n\":4,\"m\":3", in, 2, o, 1, 0);
    }
    {
        int src[] = { 5, -3 }, idx[] = { 1, 1 }, out[] = { 0, 2 };
        HT in[] = { V1("src", I, 2, src), V1("idx", I, 2, idx) }, o[] = { V1("out", I, 2, out) };
        hand("add_i32", "scatter", "\"op\":\"add_i32\",\"n\":2,\"m\":2", in, 2, o, 1, 0);
    }
    {
        int src[] = { -5, 7, 3, -2 }, idx[] = { 0, 1, 1, 2 }, out[] = { 0, 7, 0 };
        HT in[] = { V1("src", I, 4, src), V1("idx", I, 4, idx) }, o[] = { V1("out", I, 3, out) };
        hand("max_i32 (output starts at 0)", "scatter", "\"op\":\"max_i32\",\"n\":4,\"m\":3", in, 2, o, 1, 0);
    }
    // histogram
    {
        int data[] = { 0, 1, 1, 3, 3, 3 };
        unsigned hist[] = { 1, 2, 0, 3 };
        HT in[] = { V1("data", I, 6, data) }, o[] = { V1("hist", U, 4, hist) };
        hand("int_values", "histogram", "\"op\":\"int_values\",\"n\":6,\"bins\":4", in, 1, o, 1, 0);
    }
    {
        float data[] = { 0, 0.24f, 0.25f, 0.99f, 0.5f, 1.0f };
        int hist[] = { 2, 1, 1, 2 };
        HT in[] = { V1("data", F, 6, data) }, o[] = { V1("hist", I, 4, hist) };
        hand("float_unit (1.0 clamps to the last bin)", "histogram", "\"op\":\"float_unit\",\"n\":6,\"bins\":4,\"count_type\":\"int32\"", in, 1, o, 1, 0);
    }
    {
        uint8_t px[] = { 0, 255, 255, 7 };
        unsigned hist[256] = { 0 };
        hist[0] = 1;
        hist[7] = 1;
        hist[255] = 2;
        HT in[] = { V1("pixels", B8, 4, px) }, o[] = { V1("hist", U, 256, hist) };
        hand("uint8_pixels", "histogram", "\"op\":\"uint8_pixels\",\"n\":4,\"bins\":256", in, 1, o, 1, 0);
    }
    // stencil_1d
    {
        float x[] = { 4, 8, 0, 4, 0 }, zero[] = { 4, 5, 3, 2, 1 }, clamp[] = { 5, 5, 3, 2, 1 }, d2[] = { 0, -12, 12, -8, 4 };
        HT in[] = { V1("x", F, 5, x) }, o1[] = { V1("y", F, 5, zero) }, o2[] = { V1("y", F, 5, clamp) }, o3[] = { V1("y", F, 5, d2) };
        hand("binomial r1 zero", "stencil_1d", "\"radius\":1,\"weights\":\"binomial\",\"boundary\":\"zero\",\"n\":5", in, 1, o1, 1, 1e-6);
        hand("binomial r1 clamp", "stencil_1d", "\"radius\":1,\"weights\":\"binomial\",\"boundary\":\"clamp\",\"n\":5", in, 1, o2, 1, 1e-6);
        hand("second_derivative r1 zero", "stencil_1d", "\"radius\":1,\"weights\":\"second_derivative\",\"boundary\":\"zero\",\"n\":5", in, 1, o3, 1, 1e-6);
    }
    {
        float x[] = { 5, 0, 0, 0, 10 }, y[] = { 3, 2, 3, 4, 6 };
        HT in[] = { V1("x", F, 5, x) }, o[] = { V1("y", F, 5, y) };
        hand("box r2 clamp", "stencil_1d", "\"radius\":2,\"weights\":\"box\",\"boundary\":\"clamp\",\"n\":5", in, 1, o, 1, 1e-6);
    }
    // stencil_2d
    {
        float g[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
        float lap0[] = { 2, 1, -4, -3, 0, -7, -16, -11, -22 }, lapc[] = { 1, 2, 3, 4, 0, 6, 7, 8, 9 };
        float box[] = { 21.0f / 9, 3, 33.0f / 9, 39.0f / 9, 5, 51.0f / 9, 57.0f / 9, 7, 69.0f / 9 };
        HT in[] = { V2("in", F, 3, 3, g) };
        HT o1[] = { V2("out", F, 3, 3, lap0) }, o2[] = { V2("out", F, 3, 3, lapc) }, o3[] = { V2("out", F, 3, 3, box) }, o4[] = { V2("out", F, 3, 3, g) };
        hand("laplace5 zero", "stencil_2d", "\"op\":\"laplace5\",\"boundary\":\"zero\",\"rows\":3,\"cols\":3", in, 1, o1, 1, 1e-6);
        hand("laplace5 copy", "stencil_2d", "\"op\":\"laplace5\",\"boundary\":\"copy\",\"rows\":3,\"cols\":3", in, 1, o2, 1, 1e-6);
        hand("box9 clamp", "stencil_2d", "\"op\":\"box9\",\"boundary\":\"clamp\",\"rows\":3,\"cols\":3", in, 1, o3, 1, 1e-6);
        hand("gauss9 copy (linear field unchanged)", "stencil_2d", "\"op\":\"gauss9\",\"boundary\":\"copy\",\"rows\":3,\"cols\":3", in, 1, o4, 1, 1e-6);
    }
    {
        float g[] = { 1, 2, 3, 4, 5, 6 }, lap[] = { 2, 1, -4, -10, -8, -16 }, avg[] = { 7.0f / 5, 11.0f / 5, 11.0f / 5, 10.0f / 5, 17.0f / 5, 14.0f / 5 };
        HT in[] = { V2("in", F, 2, 3, g) }, o1[] = { V2("out", F, 2, 3, lap) }, o2[] = { V2("out", F, 2, 3, avg) };
        hand("laplace5 zero 2x3 (row-major)", "stencil_2d", "\"op\":\"laplace5\",\"boundary\":\"zero\",\"rows\":2,\"cols\":3", in, 1, o1, 1, 1e-6);
        hand("avg5 zero 2x3", "stencil_2d", "\"op\":\"avg5\",\"boundary\":\"zero\",\"rows\":2,\"cols\":3", in, 1, o2, 1, 1e-6);
    }
    // reduce_block
    {
        float x[] = { 1, 2, 3, 4, -5 }, s[] = { 5 }, sq[] = { 55 }, mx[] = { 5 };
        HT in[] = { V1("x", F, 5, x) }, o1[] = { V1("sum", F, 1, s) }, o2[] = { V1("sum", F, 1, sq) }, o3[] = { V1("sum", F, 1, mx) };
        hand("sum", "reduce_block", "\"op\":\"sum\",\"n\":5", in, 1, o1, 1, 0);
        hand("sumsq", "reduce_block", "\"op\":\"sumsq\",\"n\":5", in, 1, o2, 1, 0);
        hand("absmax", "reduce_block", "\"op\":\"absmax\",\"n\":5", in, 1, o3, 1, 0);
    }
    // argmin_row on int32 values beyond 2^24, which a float comparison would call equal
    {
        int32_t x[] = { 16777217, 16777216, 16777218, -16777219, -16777217, -16777218 }, v[] = { 16777216, -16777219 },
                ix[] = { 1, 0 };
        HT in[] = { V2("x", I, 2, 3, x) }, o[] = { V1("min_val", I, 2, v), V1("min_idx", I, 2, ix) };
        hand("beyond 2^24", "argmin_row", "\"rows\":2,\"cols\":3,\"map\":\"thread_per_row\",\"dtype\":\"int32\"", in, 1,
             o, 2, 0);
    }
    // reduce_warp
    {
        float x[] = { 1, 2, 3, 4 }, s[] = { 10 };
        HT in[] = { V1("x", F, 4, x) }, o[] = { V1("out", F, 1, s) };
        hand("total_sum", "reduce_warp", "\"op\":\"total_sum\",\"n\":4", in, 1, o, 1, 0);
        hand("block_sum", "reduce_warp", "\"op\":\"block_sum\",\"n\":4", in, 1, o, 1, 0);
    }
    {
        float m[] = { 1, -2, 3, -4, -5, -6 }, rs[] = { 2, -15 }, rm[] = { 3, -4 };
        float m2[] = { 3, 4, 0, 0, 0, 5 }, rn[] = { 5, 5 };
        HT in[] = { V2("x", F, 2, 3, m) }, in2[] = { V2("x", F, 2, 3, m2) };
        HT o1[] = { V1("out", F, 2, rs) }, o2[] = { V1("out", F, 2, rm) }, o3[] = { V1("out", F, 2, rn) };
        hand("row_sum", "reduce_warp", "\"op\":\"row_sum\",\"rows\":2,\"cols\":3", in, 1, o1, 1, 0);
        hand("row_max", "reduce_warp", "\"op\":\"row_max\",\"rows\":2,\"cols\":3", in, 1, o2, 1, 0);
        hand("row_norm", "reduce_warp", "\"op\":\"row_norm\",\"rows\":2,\"cols\":3", in2, 1, o3, 1, 1e-6);
    }
}

// --reference refuses specs whose shapes disagree with the params, unknown params, and
// parameters no family draws that its reference cannot take (a divisor of 0, a threshold of
// 1e300), with exit 2 and a message naming the problem.
static void bad_specs(void) {
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/badspec", tmpdir);
    sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
    const char *count_if = "{\"family\":\"count_if\",\"params\":{\"n\":1000,\"block\":256,\"agg\":\"warp_ballot\",\"pred\":\"%s\",\"dtype\":\"int32\",\"out\":\"uint32\",\"loop\":\"one_per_thread\",\"a\":%s,\"b\":0},\"inputs\":[{\"name\":\"data\",\"dtype\":\"int32\",\"shape\":[1000],\"lo\":-1000,\"hi\":1000,\"integer\":true,\"gen\":\"uniform\"}],\"outputs\":[{\"name\":\"matches\",\"dtype\":\"uint32\",\"shape\":[1]}],\"seed\":1,\"atol\":0,\"rtol\":0}";
    char zero_divisor[1000], huge_threshold[1000], fine[1000];
    snprintf(zero_divisor, sizeof zero_divisor, count_if, "multiple_of", "0");
    snprintf(huge_threshold, sizeof huge_threshold, count_if, "greater", "1e300");
    snprintf(fine, sizeof fine, count_if, "multiple_of", "7");
    const char *cases[][3] = {
        { "shape_mismatch", "{\"family\":\"elementwise_unary\",\"params\":{\"op\":\"relu\",\"n\":6},\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[7],\"lo\":0,\"hi\":1,\"integer\":false,\"gen\":\"uniform\"}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[6]}],\"seed\":1,\"atol\":0,\"rtol\":0}", "differs from what" },
        { "unknown_param", "{\"family\":\"elementwise_unary\",\"params\":{\"op\":\"relu\",\"n\":6,\"bogus\":1},\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[6],\"lo\":0,\"hi\":1,\"integer\":false,\"gen\":\"uniform\"}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[6]}],\"seed\":1,\"atol\":0,\"rtol\":0}", "params.bogus: unknown parameter" },
        { "unknown_family", "{\"family\":\"nope\",\"params\":{},\"inputs\":[],\"outputs\":[],\"seed\":1,\"atol\":0,\"rtol\":0}", "unknown family nope" },
        { "negative_atol", "{\"family\":\"elementwise_unary\",\"params\":{\"op\":\"relu\",\"n\":6},\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[6],\"lo\":0,\"hi\":1,\"integer\":false,\"gen\":\"uniform\"}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[6]}],\"seed\":1,\"atol\":-1,\"rtol\":0}", "a negative \"atol\" or \"rtol\"" },
        { "grid_on_whole_numbers", "{\"family\":\"elementwise_unary\",\"params\":{\"op\":\"relu\",\"n\":6},\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[6],\"lo\":0,\"hi\":1,\"integer\":true,\"gen\":\"uniform\",\"grid\":0.5}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[6]}],\"seed\":1,\"atol\":0,\"rtol\":0}", "x: bad grid/on_grid" },
        { "grid_share_above_1", "{\"family\":\"elementwise_unary\",\"params\":{\"op\":\"relu\",\"n\":6},\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[6],\"lo\":0,\"hi\":1,\"integer\":false,\"gen\":\"uniform\",\"grid\":0.25,\"on_grid\":2}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[6]}],\"seed\":1,\"atol\":0,\"rtol\":0}", "x: bad grid/on_grid" },
        { "truncated_json", "{\"family\":\"elementwise_unary\",\"params\":{\"op\":\"relu\"", "unexpected end" },
        { "zero_divisor", zero_divisor, "params.a: multiple_of needs a whole number >= 1" },
        { "huge_threshold", huge_threshold, "params.a: not a number in [-1e6, 1e6]" },
        { "count_if_multiple_of_7", fine, NULL }, // the control: it runs
    };
    int data[1000]; // the control's input: -500 .. 499, of which 143 are multiples of 7
    for (int i = 0; i < 1000; i++) data[i] = i - 500;
    snprintf(path, sizeof path, "%s/data.bin", dir);
    spit(path, data, sizeof data);
    snprintf(path, sizeof path, "%s/spec.json", dir);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char name[100];
        snprintf(name, sizeof name, "reference_%s_%s", cases[k][2] ? "rejects" : "takes", cases[k][0]);
        spit(path, cases[k][1], strlen(cases[k][1]));
        int rc = sh("'%s' --reference '%s' >/dev/null 2>'%s/err'", corpus, dir, dir), want = cases[k][2] ? 2 : 0;
        char err[400];
        snprintf(err, sizeof err, "%s/err", dir);
        char *msg = slurp(err, NULL);
        snprintf(err, sizeof err, "%s/matches.expected.bin", dir);
        size_t len = 0;
        unsigned *count = cases[k][2] ? NULL : (unsigned *)slurp(err, &len);
        if (rc == want && (cases[k][2] ? msg && strstr(msg, cases[k][2]) : len == 4 && *count == 143)) pass(name);
        else fail(name, "exit %d, want %d with \"%s\": %.200s", rc, want, cases[k][2] ? cases[k][2] : "143 matches", msg ? msg : "");
        free(msg);
        free(count);
    }
}

// ----------------------------------------------------------------------------
// The exit of corpus --compare in wd (its spec.json: one float32 output y of n elements) with
// y.expected.bin = expected and y.bin = got.
static int compare_exit(const char *wd, const float *expected, const float *got, int n) {
    char path[400];
    snprintf(path, sizeof path, "%s/y.expected.bin", wd);
    spit(path, expected, (size_t)n * sizeof *expected);
    snprintf(path, sizeof path, "%s/y.bin", wd);
    spit(path, got, (size_t)n * sizeof *got);
    return sh("'%s' --compare '%s' >/dev/null", corpus, wd);
}

// --materialize and --compare on real test samples

static void materialize_and_compare(const char *cdir, Split *test, int nfam) {
    int ok = 1, cmp_ok = 1;
    for (int i = 0; i < test->n && i < nfam; i++) { // consecutive samples cover every family
        char wd[300], path[400];
        snprintf(wd, sizeof wd, "%s/work%d", tmpdir, i);
        int rc = sh("'%s' --materialize '%s' --split test --index %d --to '%s' 2>/dev/null", corpus, cdir, i, wd);
        if (rc != 0) { fail("materialize", "test %d: exit %d", i, rc); ok = 0; continue; }
        const J *spec = j_get(&test->obj[i], "spec");
        const J *arrs[2] = { j_get(spec, "inputs"), j_get(spec, "outputs") };
        for (int a = 0; a < 2; a++)
            for (int k = 0; arrs[a] && k < arrs[a]->n; k++) {
                const J *x = &arrs[a]->kid[k], *shape = j_get(x, "shape");
                long n = 1;
                for (int d = 0; d < shape->n; d++) n *= (long)shape->kid[d].num;
                snprintf(path, sizeof path, "%s/%s%s.bin", wd, j_str(x, "name"), a ? ".expected" : "");
                size_t len = 0;
                char *b = slurp(path, &len);
                if (!b || len != (size_t)n * (size_t)dsize(j_str(x, "dtype"))) {
                    fail("materialize", "test %d: %s missing or %zu bytes, want %ld x %s", i, path, len, n, j_str(x, "dtype"));
                    ok = 0;
                }
                free(b);
            }
        snprintf(path, sizeof path, "%s/reference.cu", wd);
        char *ref = slurp(path, NULL);
        if (!ref || strcmp(ref, test->text[i].completion)) { fail("materialize", "test %d: reference.cu differs from the completion", i); ok = 0; }
        free(ref);
        // the same inputs twice (deterministic from the spec's seed)
        char wd2[320];
        snprintf(wd2, sizeof wd2, "%s_again", wd);
        sh("'%s' --materialize '%s' --split test --index %d --to '%s' 2>/dev/null", corpus, cdir, i, wd2);
        if (sh("cd '%s' && for f in *.bin spec.json; do cmp -s \"$f\" '%s'/\"$f\" || exit 1; done", wd, wd2) != 0) {
            fail("materialize_deterministic", "test %d", i);
            ok = 0;
        }
        // compare: expected as the program output passes; a perturbed one fails; a missing one fails
        const J *outs = arrs[1];
        for (int k = 0; k < outs->n; k++)
            sh("cp '%s/%s.expected.bin' '%s/%s.bin'", wd, j_str(&outs->kid[k], "name"), wd, j_str(&outs->kid[k], "name"));
        if (sh("'%s' --compare '%s' >/dev/null", corpus, wd) != 0) { fail("compare_identical", "test %d", i); cmp_ok = 0; }
        const char *o0 = j_str(&outs->kid[0], "name");
        snprintf(path, sizeof path, "%s/%s.bin", wd, o0);
        size_t len;
        unsigned char *b = (unsigned char *)slurp(path, &len);
        size_t es = (size_t)dsize(j_str(&outs->kid[0], "dtype"));
        b[(len / es / 2) * es + es - 1] ^= 0x40; // a high bit (exponent or value) of the middle element
        spit(path, b, len);
        free(b);
        rc = sh("'%s' --compare '%s' >/dev/null", corpus, wd);
        if (rc != 1) { fail("compare_detects_wrong_output", "test %d (%s): exit %d", i, j_str(&test->obj[i], "family"), rc); cmp_ok = 0; }
        unlink(path);
        rc = sh("'%s' --compare '%s' >/dev/null", corpus, wd);
        if (rc != 1) { fail("compare_missing_output", "test %d: exit %d", i, rc); cmp_ok = 0; }
    }
    if (ok) pass("materialize (one test sample per family: sizes, reference.cu, deterministic)");
    if (cmp_ok) pass("compare (identical passes, corrupted or missing output fails)");

    // tolerance: a float output within atol + rtol*|e| passes, beyond fails
    char wd[300], path[400];
    snprintf(wd, sizeof wd, "%s/tol", tmpdir);
    sh("rm -rf '%s' && mkdir -p '%s'", wd, wd);
    const char *spec = "{\"family\":\"elementwise_unary\",\"params\":{\"op\":\"relu\",\"n\":2},\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[2],\"lo\":0,\"hi\":1,\"integer\":false,\"gen\":\"uniform\"}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[2]}],\"seed\":1,\"atol\":0.01,\"rtol\":0.1}";
    snprintf(path, sizeof path, "%s/spec.json", wd);
    spit(path, spec, strlen(spec));
    float e[] = { 1, 100 }, near[] = { 1.105f, 109 }, far1[] = { 1.115f, 100 }, far2[] = { 1, 110.5f }, nan[] = { NAN, 100 };
    int r1 = compare_exit(wd, e, near, 2), r2 = compare_exit(wd, e, far1, 2), r3 = compare_exit(wd, e, far2, 2),
        r4 = compare_exit(wd, e, nan, 2);
    if (r1 == 0 && r2 == 1 && r3 == 1 && r4 == 1) pass("compare_tolerance (atol + rtol*|expected|, NaN fails)");
    else fail("compare_tolerance", "exits %d %d %d %d, want 0 1 1 1", r1, r2, r3, r4);
    // an infinite expected value: a finite output fails (inf / inf made the ratio NaN, and NaN > 1
    // is false: 0 passed for +inf), the same infinity passes, the other one fails
    float inf_e[] = { INFINITY, 100 }, inf_zero[] = { 0, 100 }, inf_neg[] = { -INFINITY, 100 };
    r1 = compare_exit(wd, inf_e, inf_zero, 2), r2 = compare_exit(wd, inf_e, inf_e, 2), r3 = compare_exit(wd, inf_e, inf_neg, 2);
    if (r1 == 1 && r2 == 0 && r3 == 1) pass("compare_infinite_expected (a finite or opposite output fails, inf passes)");
    else fail("compare_infinite_expected", "exits %d %d %d, want 1 0 1", r1, r2, r3);
}

// ----------------------------------------------------------------------------
// Comparisons that are exact by their inputs: float sums on a grid, conversions and
// rounding with ties planted. A legitimate program passes whatever its order of additions;
// one that leaves a term out, or rounds the wrong way, fails (with a tolerance instead,
// such programs passed). Fresh tasks each run.

typedef enum { EX_SKIP, EX_SUM, EX_SUMSQ, EX_DOT, EX_XSCAN, EX_ROUND_AWAY, EX_NO_CONVERSION } ExactKind;

static float *read_floats(const char *wd, const char *name, long n) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s.bin", wd, name);
    size_t len = 0;
    float *x = (float *)slurp(path, &len);
    if (x && len == (size_t)n * 4) return x;
    free(x);
    return NULL;
}
static float exact_term(ExactKind k, const float *x, const float *y, long i, long skip) {
    return i == skip ? 0 : k == EX_SUMSQ ? x[i] * x[i] : k == EX_DOT ? x[i] * y[i] : x[i];
}
// The sum (or exclusive scan) of a task in float32, term `skip` (>= 0) left out: in order, or
// blocked: blocks of 256 terms whose partials are added last to first (a scan: each block's
// own scan plus the running total of the blocks before it).
static void exact_compute(ExactKind k, const float *x, const float *y, long n, int blocked, long skip, float *out) {
    int scan = k == EX_XSCAN;
    long nb = blocked ? (n + 255) / 256 : 1, len = blocked ? 256 : n;
    float *part = (float *)calloc((size_t)nb, sizeof *part), total = 0;
    for (long b = 0; b < nb; b++)
        for (long i = b * len; i < n && i < (b + 1) * len; i++) {
            if (scan) out[i] = part[b];
            part[b] += exact_term(k, x, y, i, skip);
        }
    for (long b = scan ? 0 : nb - 1; scan ? b < nb : b >= 0; b += scan ? 1 : -1) {
        for (long i = b * len; scan && i < n && i < (b + 1) * len; i++) out[i] += total;
        total += part[b];
    }
    if (!scan) out[0] = total;
    free(part);
}

static void exact_comparisons(void) {
    unsigned seed = (unsigned)time(NULL) % 100000;
    char dir[300], wd[320];
    snprintf(dir, sizeof dir, "%s/exact", tmpdir);
    snprintf(wd, sizeof wd, "%s/exact_work", tmpdir);
    int rc = sh("'%s' --out '%s' --train 0 --val 0 --test 36 --seed %u --families "
                "reduce_block,reduce_warp,dot_atomic,scan_exclusive,convert_half,convert_float_to_int 2>/dev/null",
                corpus, dir, seed);
    Split s;
    if (rc != 0 || load_split(dir, 2, &s)) { fail("exact_comparisons", "corpus exit %d (seed %u)", rc, seed); return; }
    int tasks = 0, bad = 0;
    for (int i = 0; i < s.n && bad < 3; i++) {
        const J *spec = j_get(&s.obj[i], "spec"), *params = j_get(spec, "params");
        const char *fam = j_str(spec, "family"), *op = j_get(params, "op") ? j_str(params, "op") : "";
        const J *in = j_get(spec, "inputs"), *out = &j_get(spec, "outputs")->kid[0];
        ExactKind k = !strcmp(fam, "dot_atomic") ? EX_DOT
                      : !strcmp(fam, "reduce_block") ? (!strcmp(op, "sum") ? EX_SUM : !strcmp(op, "sumsq") ? EX_SUMSQ : EX_SKIP)
                      : !strcmp(fam, "reduce_warp") ? (!strcmp(op, "total_sum") ? EX_SUM : EX_SKIP)
                      : !strcmp(fam, "scan_exclusive") ? (!strcmp(j_str(&in->kid[0], "dtype"), "float32") ? EX_XSCAN : EX_SKIP)
                      : !strcmp(fam, "convert_half") ? (!strcmp(op, "roundtrip") ? EX_NO_CONVERSION : EX_SKIP)
                      : !strcmp(op, "round") ? EX_ROUND_AWAY : EX_SKIP;
        if (k == EX_SKIP) continue;
        tasks++;
        long n = (long)j_get(&in->kid[0], "shape")->kid[0].num, nout = k == EX_XSCAN || k >= EX_ROUND_AWAY ? n : 1;
        sh("rm -rf '%s'", wd);
        if (sh("'%s' --materialize '%s' --split test --index %d --to '%s' 2>/dev/null", corpus, dir, i, wd)) {
            fail("exact_comparisons", "materialize test %d (seed %u)", i, seed);
            bad++;
            continue;
        }
        float *x = read_floats(wd, j_str(&in->kid[0], "name"), n);
        float *y = k == EX_DOT ? read_floats(wd, j_str(&in->kid[1], "name"), n) : NULL;
        float *o = (float *)calloc((size_t)n + 2, sizeof *o);
        int32_t *r = (int32_t *)o;
        char path[400];
        snprintf(path, sizeof path, "%s/%s.bin", wd, j_str(out, "name"));
        // two legitimate orders, then one term left out (the middle one, or the next that is not 0)
        long skip = n / 2;
        while (x && skip < n - 1 && (x[skip] == 0 || (y && y[skip] == 0))) skip++;
        int want[3] = { 0, 0, 1 }, got[3] = { -1, -1, -1 }, runs = k >= EX_ROUND_AWAY ? 1 : 3;
        for (int run = 0; run < runs && x && (y || k != EX_DOT); run++) {
            memset(o, 0, ((size_t)n + 2) * sizeof *o);
            if (k == EX_NO_CONVERSION) memcpy(o, x, (size_t)n * 4);           // the input as it is
            else if (k == EX_ROUND_AWAY) for (long j = 0; j < n; j++) r[j] = (int32_t)roundf(x[j]); // ties away from 0
            else exact_compute(k, x, y, n, run == 1, run == 2 ? skip : -1, o);
            spit(path, o, (size_t)nout * 4);
            got[run] = sh("'%s' --compare '%s' >/dev/null", corpus, wd);
        }
        if (runs == 1) want[0] = 1;
        if (got[0] != want[0] || (runs == 3 && (got[1] != want[1] || got[2] != want[2]))) {
            fail("exact_comparisons", "test %d (%s %s, n %ld, seed %u): --compare exits %d %d %d, want %d %d %d", i, fam,
                 op, n, seed, got[0], got[1], got[2], want[0], runs == 3 ? want[1] : -1, runs == 3 ? want[2] : -1);
            bad++;
        }
        free(x);
        free(y);
        free(o);
    }
    if (!bad && tasks >= 8)
        printf("PASS exact_comparisons (%d tasks, seed %u: float sums in two orders pass, one term left out fails; a "
               "half round trip without the conversion and rounding ties away from zero fail)\n", tasks, seed);
    else if (!bad) fail("exact_comparisons", "only %d tasks of the kinds checked (seed %u)", tasks, seed);
    free_split(&s);
}

// ----------------------------------------------------------------------------
// --emit-family, and nvcc when present

static void emit_checks(char **families, int nfam) {
    int ok = 1;
    for (int f = 0; f < nfam; f++)
        for (int seed = 1; seed <= 3; seed++) {
            char path[400];
            snprintf(path, sizeof path, "%s/emit.cu", tmpdir);
            if (sh("'%s' --emit-family %s --seed %d > '%s'", corpus, families[f], seed, path) != 0) {
                fail("emit_family", "%s seed %d failed", families[f], seed);
                ok = 0;
                continue;
            }
            size_t len;
            char *src = slurp(path, &len);
            CusetSpan *sp = NULL;
            size_t n = cuset_annotate(src, len, &sp);
            int g = 0, l = 0;
            for (size_t k = 0; k < n; k++) { g += sp[k].kind == CUSET_SPAN_GLOBAL_DEF; l += sp[k].kind == CUSET_SPAN_LAUNCH; }
            if (!g || !l || !strstr(src, "int main(")) { fail("emit_family", "%s seed %d: no kernel, launch or main", families[f], seed); ok = 0; }
            arrfree(sp);
            free(src);
        }
    if (ok) pass("emit_family (3 seeds per family: a kernel, a launch, a main)");

    // no variable named dev_t, a type of <sys/types.h> (g++ -Wshadow warns): the device buffer
    // of a tensor named t in the dev_NAME style is d_t. Seed 566357 draws that case (lerp's t).
    char path[400];
    snprintf(path, sizeof path, "%s/dev_t.cu", tmpdir);
    sh("'%s' --emit-family elementwise_ternary --seed 566357 > '%s'", corpus, path);
    char *src = slurp(path, NULL);
    const char *dev_t_at = src ? strstr(src, "dev_t") : NULL;
    while (dev_t_at && (isalnum((unsigned char)dev_t_at[5]) || dev_t_at[5] == '_')) dev_t_at = strstr(dev_t_at + 1, "dev_t");
    if (src && strstr(src, "float *dev_a;") && strstr(src, "float *d_t;") && !dev_t_at)
        pass("device_names_shadow_no_type (lerp's t in the dev_NAME style is d_t)");
    else fail("device_names_shadow_no_type", "elementwise_ternary seed 566357: %s",
              !src ? "no program" : dev_t_at ? "a variable named dev_t" : "not the dev_NAME style with a tensor t any more");
    free(src);

    const char *env = getenv("CUSET_TEST_NVCC");
    int seeds = env ? atoi(env) : 1;
    if (seeds <= 0) { skip("nvcc_compiles", "CUSET_TEST_NVCC=0"); return; }
    if (sh("command -v nvcc >/dev/null 2>&1") != 0) { skip("nvcc_compiles", "nvcc not found"); return; }
    // ptxas's register counts too: at most 64 per thread, every kernel can launch with 1024
    // threads per block on sm_90 (65,536 registers per block); one with more would fail there
    // with "too many resources requested for launch", which the emulator does not model
    const int max_regs = 64;
    // and without a warning from nvcc's front end or, with these flags, from the host
    // compiler, nor double-precision arithmetic in a kernel (a float kernel that divides by
    // 3.0 or calls sqrt(x) computes in double, many times slower on most GPUs): the
    // programs are what a model learns to write
    const char *warn_flags = "-Xcompiler -Wall,-Wextra,-Wshadow,-Wconversion -Xptxas -warn-double-usage";
    // fresh programs each run (--emit-family --seed base + 100 k + family's index), so that
    // rare parameter combinations get their turn over runs; CUSET_NVCC_SEED repeats a run
    const char *base_env = getenv("CUSET_NVCC_SEED");
    long base = base_env ? atol(base_env) : (long)time(NULL) % 1000000;
    int bad = 0, warned = 0, total = 0, kernels = 0, most = 0;
    for (int f = 0; f < nfam; f++)
        for (int k = 0; k < seeds; k++) {
            char src[400], log[400];
            long seed = base + 100 * k + f;
            snprintf(src, sizeof src, "%s/nv_%s_%d.cu", tmpdir, families[f], k);
            snprintf(log, sizeof log, "%s/nv.log", tmpdir);
            sh("'%s' --emit-family %s --seed %ld > '%s'", corpus, families[f], seed, src);
            total++;
            int rc = sh("nvcc -arch=sm_90 -Xptxas -v %s -o '%s/nv.bin' '%s' > '%s' 2>&1", warn_flags, tmpdir, src,
                        log);
            char *l = slurp(log, NULL);
            const char *warning = l ? strstr(l, "warning") : NULL;
            if (rc != 0) {
                fail("nvcc_compiles", "%s seed %ld (CUSET_NVCC_SEED=%ld): %.300s", families[f], seed, base, l ? l : "");
                bad++;
            } else if (warning) {
                const char *line = warning;
                while (line > l && line[-1] != '\n') line--;
                fail("nvcc_no_warnings", "%s seed %ld (CUSET_NVCC_SEED=%ld): %.300s", families[f], seed, base, line);
                warned++;
            }
            for (const char *p = l; p && (p = strstr(p, "Used ")); p += 5) {
                int regs = atoi(p + 5);
                kernels++;
                if (regs > most) most = regs;
                if (regs > max_regs)
                    fail("nvcc_registers", "%s seed %ld (CUSET_NVCC_SEED=%ld): a kernel uses %d registers per thread",
                         families[f], seed, base, regs);
            }
            free(l);
        }
    if (!bad) printf("PASS nvcc_compiles (%d programs, %d per family, CUSET_NVCC_SEED=%ld)\n", total, seeds, base);
    if (!bad && !warned) printf("PASS nvcc_no_warnings (%s)\n", warn_flags);
    if (kernels && most <= max_regs) printf("PASS nvcc_registers (%d kernels, at most %d registers per thread)\n", kernels, most);
    else if (!kernels) fail("nvcc_registers", "no 'Used N registers' line from ptxas -v");
}

// The command line: --help on stdout with exit 0; a wrong command line gets a message naming
// what is wrong on stderr and exit 2, and writes nothing.
static void cli_checks(void) {
    struct { const char *label, *args, *stream, *want; int rc; } c[] = {
        { "help", "--help", "out", "--materialize DIR", 0 },
        { "no_command", "", "err", "usage:", 2 },
        { "unknown_flag", "--bogus", "err", "unknown argument '--bogus'", 2 },
        { "unknown_family", "--out D --families nope", "err", "unknown family 'nope'", 2 },
        { "empty_families", "--out D --families ''", "err", "got an empty list", 2 },
        { "families_trailing_comma", "--out D --families reduce_block,", "err", "got 'reduce_block,'", 2 },
        { "families_twice", "--out D --families reduce_block --families scan_block", "err", "--families given twice", 2 },
        { "empty_out", "--out ''", "err", "an empty directory name", 2 },
        // an empty WORKDIR read /spec.json: "" + "/NAME" is a file of the root
        { "empty_workdir", "--compare ''", "err", "an empty directory name (give . for the working directory)", 2 },
        { "seed_with_space", "--out D --seed ' -1'", "err", "--seed: expected a whole number, got ' -1'", 2 },
        { "bad_count", "--out D --train -3", "err", "--train", 2 },
        { "two_commands", "--list --compare D", "err", "2 commands given; give one of --out", 2 },
        { "materialize_without_to", "--materialize D --split test --index 0", "err", "--materialize needs --to", 2 },
        { "option_of_another_command", "--out D --prompt", "err", "--prompt does not go with --out", 2 },
        { "option_without_its_command", "--compare D --seed 3", "err", "--seed does not go with --compare", 2 },
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        char out[400], err[400], label[64];
        snprintf(out, sizeof out, "%s/cli.out", tmpdir);
        snprintf(err, sizeof err, "%s/cli.err", tmpdir);
        snprintf(label, sizeof label, "cli_%s", c[k].label);
        int rc = sh("cd '%s' && '%s' %s > '%s' 2> '%s'", tmpdir, corpus, c[k].args, out, err);
        char *text = slurp(strcmp(c[k].stream, "out") == 0 ? out : err, NULL);
        int wrote = sh("test -e '%s/D'", tmpdir) == 0;
        if (rc == c[k].rc && text && strstr(text, c[k].want) && !wrote) pass(label);
        else fail(label, "exit %d (want %d), std%s %.200s%s", rc, c[k].rc, c[k].stream, text ? text : "(none)",
                  wrote ? ", and it wrote D" : "");
        free(text);
    }
    // --out and --to create the directories they name, parents included; one under a file
    // is refused with the path that could not be made
    int made = sh("cd '%s' && '%s' --out D/a/b --train 1 --val 1 --test 1 >/dev/null 2>&1 && test -s D/a/b/test.jsonl &&"
                  " '%s' --materialize D/a/b --split test --index 0 --to D/w/x >/dev/null 2>&1 && test -s D/w/x/spec.json",
                  tmpdir, corpus, corpus) == 0;
    if (made) pass("cli_out_makes_parents");
    else fail("cli_out_makes_parents", "--out D/a/b or --materialize ... --to D/w/x failed or wrote nothing");
    char err[400];
    snprintf(err, sizeof err, "%s/cli.err", tmpdir);
    int rc = sh("cd '%s' && rm -rf D && touch F && '%s' --out F/sub 2> '%s' >/dev/null", tmpdir, corpus, err);
    char *text = slurp(err, NULL);
    if (rc == 2 && text && strstr(text, "cannot create F/sub")) pass("cli_out_under_a_file");
    else fail("cli_out_under_a_file", "exit %d (want 2), stderr %.200s", rc, text ? text : "(none)");
    free(text);
    sh("cd '%s' && rm -f F", tmpdir);
}

// ----------------------------------------------------------------------------
// Hostile specs: the spec reader under AddressSanitizer and UBSan (with float-cast-overflow)

// A random edit of text (length *len, capacity cap), mostly one that keeps it JSON: a value
// (number or string, after ':', '[' or ',') replaced by a token the spec does not allow, a
// string emptied; else a byte range deleted, a byte changed, or a token inserted.
static void mutate(char *text, size_t *len, size_t cap, unsigned *rng) {
    static const char *const tok[] = { "-1", "-1", "0", "0", "1e308", "1e999", "-0", "1.5", "2147483648", "nan",
                                       "inf", "0x10", "01", "\"\"", "\"x\"", "[]", "{}", "null", "true", "[0]",
                                       "[1,0]", "\"\\u00e9\"", "\"" };
    size_t n = *len, at = n ? (size_t)rand_r(rng) % n : 0, end;
    const char *put = tok[(size_t)rand_r(rng) % (sizeof tok / sizeof tok[0])];
    char byte[2] = { (char)(rand_r(rng) % 255 + 1), 0 };
    int how = rand_r(rng) % 10;
    if (how < 6) { // the value at or after at
        while (at < n && !(strchr(":[,", text[at]) && at + 1 < n && strchr("-0123456789\"", text[at + 1]))) at++;
        end = ++at;
        if (end < n && text[end] == '"') end = strcspn(text + end + 1, "\"") + end + 2;
        else while (end < n && strchr("0123456789.eE+-", text[end])) end++;
    } else if (how < 8) { // the string at or after at, emptied
        while (at < n && text[at] != '"') at++;
        end = at += at < n;
        while (end < n && text[end] != '"') end++;
        put = "";
    } else if (how < 9) {
        end = at + 1 + (size_t)rand_r(rng) % 40;
        put = rand_r(rng) % 2 ? "" : byte;
    } else end = at;
    if (end > n) end = n;
    size_t lp = strlen(put);
    if (n - (end - at) + lp + 1 > cap) return;
    memmove(text + at + lp, text + end, n - end + 1);
    memcpy(text + at, put, lp);
    *len = n - (end - at) + lp;
}

// Where a sanitizer's report starts in a program's stderr, or NULL.
static const char *sanitizer_report(const char *err) {
    const char *ub = err ? strstr(err, "runtime error") : NULL;
    return ub ? ub : err ? strstr(err, "ERROR: AddressSanitizer") : NULL;
}

// corpus --reference (the ASan/UBSan build asan) on every family's work directory with
// each input file in turn filled with one byte: 0xff (float NaN, int -1, uint8 255), 0x7f
// (float 3.4e38, int about 2.1e9, so sums overflow) and 0x80 (float -1.2e-38, int about
// -2.1e9): the references are defined for any input.
static void hostile_inputs(const char *asan, int nfam) {
    static const unsigned char fills[] = { 0xff, 0x7f, 0x80 };
    char wd[300], path[400], out[400];
    snprintf(wd, sizeof wd, "%s/hostile_inputs", tmpdir);
    snprintf(out, sizeof out, "%s/hostile_inputs.err", tmpdir);
    int runs = 0, covered = 0; // families whose every input was filled
    for (int i = 0; i < nfam; i++) {
        snprintf(path, sizeof path, "%s/work%d/spec.json", tmpdir, i);
        char *spec = slurp(path, NULL);
        J root;
        if (!spec || !jp_value(spec, &root)) { free(spec); continue; }
        int before = runs;
        const J *ins = j_get(&root, "inputs");
        for (int k = 0; ins && k < ins->n; k++)
            for (size_t f = 0; f < sizeof fills; f++) {
                sh("rm -rf '%s' && cp -r '%s/work%d' '%s'", wd, tmpdir, i, wd);
                snprintf(path, sizeof path, "%s/%s.bin", wd, j_str(&ins->kid[k], "name"));
                size_t len;
                char *data = slurp(path, &len);
                if (!data) break; // this family is not covered
                memset(data, fills[f], len);
                spit(path, data, len);
                free(data);
                int rc = sh("ASAN_OPTIONS=detect_leaks=0 timeout 60 '%s' --reference '%s' >/dev/null 2>'%s'", asan, wd,
                            out);
                char *err = slurp(out, NULL);
                const char *report = sanitizer_report(err);
                runs++;
                if (rc != 0 || report) {
                    fail("hostile_inputs", "%s, input %s filled with 0x%02x: corpus --reference exited %d: %.300s",
                         j_str(&root, "family"), j_str(&ins->kid[k], "name"), fills[f], rc,
                         report ? report : err ? err : "");
                    free(err);
                    j_free(&root);
                    free(spec);
                    return;
                }
                free(err);
            }
        covered += ins && ins->n > 0 && runs - before == (int)sizeof fills * ins->n;
        j_free(&root);
        free(spec);
    }
    if (covered < nfam)
        fail("hostile_inputs", "%d of %d families had each input filled: a spec that does not parse or an input missing",
             covered, nfam);
    else printf("PASS hostile_inputs (%d runs: each input of each family's sample filled with 0xff, 0x7f, 0x80)\n", runs);
}

// corpus --reference, --compare and --materialize (the ASan/UBSan build asan) on mutated
// specs and JSONL lines (the real ones of the test split; a fresh seed each run, or
// CUSET_HOSTILE_SEED): each exits 0, 1 or 2 with no sanitizer report, and an error is one
// "corpus: " line.
static void hostile_specs(const char *asan, const char *cdir, int nsamples) {
    char wd[300], path[400], out[400], line_dir[300];
    snprintf(path, sizeof path, "%s/test.jsonl", cdir);
    char *split = slurp(path, NULL);
    char *lines[256];
    int nl = 0;
    for (char *p = split ? strtok(split, "\n") : NULL; p && nl < 256 && nl < nsamples; p = strtok(NULL, "\n"))
        lines[nl++] = p;
    const char *env = getenv("CUSET_HOSTILE_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL), rng = seed;
    snprintf(wd, sizeof wd, "%s/hostile", tmpdir);
    snprintf(line_dir, sizeof line_dir, "%s/hostile_split", tmpdir);
    snprintf(out, sizeof out, "%s/hostile.err", tmpdir);
    int runs = 0, bad = 0;
    for (int m = 0; m < 150 && nl && !bad; m++) {
        int i = rand_r(&rng) % nl, as_line = m % 2;
        static char text[65536];
        size_t len;
        if (as_line) len = (size_t)snprintf(text, sizeof text, "%s", lines[i]);
        else {
            snprintf(path, sizeof path, "%s/work%d/spec.json", tmpdir, i);
            char *s = slurp(path, &len);
            if (!s || len >= sizeof text) { free(s); continue; }
            memcpy(text, s, len + 1);
            free(s);
        }
        for (int k = 1 + rand_r(&rng) % 2; k > 0; k--) mutate(text, &len, sizeof text, &rng);
        char cmds[2][700];
        int ncmd;
        if (as_line) {
            sh("rm -rf '%s' '%s' && mkdir -p '%s'", wd, line_dir, line_dir);
            snprintf(path, sizeof path, "%s/test.jsonl", line_dir);
            text[len] = '\n';
            spit(path, text, len + 1);
            snprintf(cmds[0], sizeof cmds[0], "--materialize '%s' --split test --index 0 --to '%s'", line_dir, wd);
            ncmd = 1;
        } else {
            sh("rm -rf '%s' && cp -r '%s/work%d' '%s'", wd, tmpdir, i, wd);
            snprintf(path, sizeof path, "%s/spec.json", wd);
            spit(path, text, len);
            snprintf(cmds[0], sizeof cmds[0], "--reference '%s'", wd);
            snprintf(cmds[1], sizeof cmds[1], "--compare '%s'", wd);
            ncmd = 2;
        }
        for (int c = 0; c < ncmd && !bad; c++) {
            int rc = sh("ASAN_OPTIONS=detect_leaks=0 timeout 60 '%s' %s >/dev/null 2>'%s'", asan, cmds[c], out);
            char *err = slurp(out, NULL);
            const char *report = sanitizer_report(err);
            runs++;
            if (rc < 0 || rc > 2 || report || (rc == 2 && (!err || strncmp(err, "corpus: ", 8)))) {
                snprintf(path, sizeof path, "%s/hostile_case.txt", tmpdir);
                spit(path, text, len);
                fail("hostile_specs", "seed %u (CUSET_HOSTILE_SEED), mutant %d: corpus %s exited %d: %.300s (the input: "
                     "%s)", seed, m, cmds[c], rc, report ? report : err ? err : "", path);
                bad = 1;
            }
            free(err);
        }
    }
    free(split);
    if (!bad && runs < 150) fail("hostile_specs", "%d runs for 150 mutants: a spec or the split missing", runs);
    else if (!bad) printf("PASS hostile_specs (%d runs on mutated specs and JSONL lines, seed %u)\n", runs, seed);
}

// Both of the above, through one build of data/corpus with AddressSanitizer and UBSan.
static void hostile_checks(const char *cdir, int nfam) {
    char asan[300];
    snprintf(asan, sizeof asan, "%s/corpus_asan", tmpdir);
    if (sh("gcc -std=gnu11 -O1 -g -ffp-contract=off -fsanitize=address,undefined,float-cast-overflow "
           "-fno-sanitize-recover=all -o '%s' data/corpus.c -lm >/dev/null 2>&1", asan) != 0) {
        const char *why = "gcc cannot build with -fsanitize=address,undefined (libasan/libubsan missing)";
        skip("hostile_specs", why);
        skip("hostile_inputs", why);
        return;
    }
    hostile_specs(asan, cdir, nfam);
    hostile_inputs(asan, nfam);
    // generation itself (drawing, writing, the set of used texts) under the sanitizers: no
    // report, and the same bytes as the plain build
    unsigned seed = (unsigned)time(NULL) % 100000;
    int rc = sh("'%s' --out '%s/gen_asan' --seed %u --train 300 --val 30 --test 30 2>'%s/gen_asan.err' && "
                "'%s' --out '%s/gen_plain' --seed %u --train 300 --val 30 --test 30 2>/dev/null && "
                "for s in train val test; do cmp -s '%s/gen_asan/'$s.jsonl '%s/gen_plain/'$s.jsonl || exit 1; done",
                asan, tmpdir, seed, tmpdir, corpus, tmpdir, seed, tmpdir, tmpdir);
    char err[300];
    snprintf(err, sizeof err, "%s/gen_asan.err", tmpdir);
    char *log = slurp(err, NULL);
    if (rc == 0) printf("PASS generation_sanitized (seed %u: no report, the plain build's bytes)\n", seed);
    else fail("generation_sanitized", "seed %u, exit %d: %.400s", seed, rc, log ? log : "");
    free(log);
}

// ----------------------------------------------------------------------------

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cuset_corpus_test.XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }
    const char *env = getenv("CUSET_CORPUS");
    if (env) snprintf(corpus, sizeof corpus, "%s", env);
    else {
        snprintf(corpus, sizeof corpus, "%s/corpus", tmpdir);
        int rc = sh("gcc -std=gnu11 -O2 -ffp-contract=off -Wall -Wextra -Werror -o '%s' data/corpus.c -lm 2>'%s/build.log'",
                    corpus, tmpdir); // the Makefile's flags
        if (rc != 0) {
            char p[200];
            snprintf(p, sizeof p, "%s/build.log", tmpdir);
            char *log = slurp(p, NULL);
            fail("corpus_builds_without_warnings", "%.600s", log ? log : "");
            return 1;
        }
        pass("corpus_builds_without_warnings");
    }

    // families, from --list
    char **families = NULL;
    int nfam = 0;
    {
        char p[300];
        snprintf(p, sizeof p, "%s/list.txt", tmpdir);
        sh("'%s' --list > '%s'", corpus, p);
        char *l = slurp(p, NULL);
        for (char *line = strtok(l ? l : (char *)"", "\n"); line; line = strtok(NULL, "\n")) {
            if (line[0] == ' ' || !line[0]) continue;
            char *sp = strchr(line, ' ');
            if (sp) *sp = 0;
            families = realloc(families, sizeof *families * (size_t)(nfam + 1));
            families[nfam++] = strdup(line);
        }
        free(l);
        if (nfam >= 12) printf("PASS families_listed (%d)\n", nfam);
        else fail("families_listed", "%d families, want at least 12", nfam);
    }

    // the default corpus, twice with seed 1 and once with seed 2
    char a[300], b[300], c[300];
    snprintf(a, sizeof a, "%s/a", tmpdir);
    snprintf(b, sizeof b, "%s/b", tmpdir);
    snprintf(c, sizeof c, "%s/c", tmpdir);
    double t0 = now();
    int rc = sh("'%s' --out '%s' --seed 1 2>'%s/gen.log'", corpus, a, tmpdir);
    double secs = now() - t0;
    if (rc != 0) { fail("generate_default", "exit %d", rc); return 1; }
    printf("PASS generate_default (%.2f s, for the record: a speed claim is no test)\n", secs);
    int same = sh("'%s' --out '%s' --seed 1 2>/dev/null", corpus, b) == 0;
    int differ = sh("'%s' --out '%s' --seed 2 2>/dev/null", corpus, c) == 0;
    for (int s = 0; s < 3; s++) {
        same &= sh("cmp -s '%s/%s.jsonl' '%s/%s.jsonl'", a, split_names[s], b, split_names[s]) == 0;
        differ &= sh("cmp -s '%s/%s.jsonl' '%s/%s.jsonl'", a, split_names[s], c, split_names[s]) != 0;
    }
    if (same) pass("deterministic_same_seed"); else fail("deterministic_same_seed", "two runs with seed 1 differ");
    if (differ) pass("different_seed_differs"); else fail("different_seed_differs", "seeds 1 and 2 give an identical split");
    // the split sizes follow the flags
    {
        char d[300];
        snprintf(d, sizeof d, "%s/small", tmpdir);
        rc = sh("'%s' --out '%s' --seed 5 --train 30 --val 13 --test 26 2>/dev/null", corpus, d);
        Split s[3];
        int ok = rc == 0;
        for (int k = 0; ok && k < 3; k++) ok = load_split(d, k, &s[k]) == 0;
        if (ok && s[0].n == 30 && s[1].n == 13 && s[2].n == 26) pass("split_sizes_from_flags");
        else fail("split_sizes_from_flags", "exit %d", rc);
        for (int k = 0; ok && k < 3; k++) free_split(&s[k]);
    }
    // two families (any even number): each family's test samples alternate between held-out
    // and seen combinations too (they once kept the parity of its first turn, so the second
    // family of two had no held-out test sample)
    if (nfam >= 2) {
        char d[300];
        snprintf(d, sizeof d, "%s/even", tmpdir);
        rc = sh("'%s' --out '%s' --families %s,%s --train 4 --val 2 --test 8 2>/dev/null", corpus, d, families[0],
                families[1]);
        Split s;
        int held[2] = { 0, 0 }, ok = rc == 0 && load_split(d, 2, &s) == 0;
        for (int i = 0; ok && i < s.n; i++) {
            const J *h = j_get(&s.obj[i], "heldout");
            const char *f = j_str(&s.obj[i], "family");
            if (h && h->t == J_BOOL && h->num && f) held[strcmp(f, families[0]) != 0]++;
        }
        if (ok && held[0] == 2 && held[1] == 2) pass("heldout_alternates_with_two_families");
        else fail("heldout_alternates_with_two_families", "exit %d; held-out test samples of 4 each: %s %d, %s %d", rc,
                  families[0], held[0], families[1], held[1]);
        if (ok) free_split(&s);
    }

    Split sp[3];
    for (int s = 0; s < 3; s++)
        if (load_split(a, s, &sp[s])) return 1;
    if (sp[0].n == 2000 && sp[1].n == 200 && sp[2].n == 200) pass("default_sizes (2000/200/200)");
    else fail("default_sizes", "%d/%d/%d", sp[0].n, sp[1].n, sp[2].n);
    check_samples(sp);
    check_splits(sp, families, nfam);
    hand_cases();
    bad_specs();
    exact_comparisons();
    materialize_and_compare(a, &sp[2], nfam);
    hostile_checks(a, nfam);
    emit_checks(families, nfam);
    cli_checks();

    for (int s = 0; s < 3; s++) free_split(&sp[s]);
    for (int f = 0; f < nfam; f++) free(families[f]);
    free(families);
    if (n_fail == 0) sh("rm -rf '%s'", tmpdir);
    else printf("(scratch kept in %s)\n", tmpdir);
    return n_fail ? 1 : 0;
}
