// corpus.h - the framework of the CUDA task corpus generator (data/corpus.c).
//
// A sample is a CUDA programming task: a five-field prompt, a complete CUDA program as the
// target, the CUDA-sensitive character spans of that program (METHOD.md item 3, found in
// the finished program by the annotator, data/annotate.h), a test spec (inputs with value
// ranges, outputs, seed, tolerance) and a CPU reference that computes the expected outputs
// from the inputs.
//
// A family is a kind of task (unary maps, stencils, reductions, ...): a Family descriptor
// (below) with its parameters (ParamDesc: name, enum values, whether it belongs to the
// held-out combination, how params_draw draws it) and six functions, in reading order:
//   draw      after params_draw: what depends on other parameters, and the names;
//   layout    the spec from the parameters: tensor shapes, dtypes, value ranges, size constants,
//             tolerance. Deterministic: --materialize calls it again on the JSONL's parameters;
//   describe  writes the Task Name and the one-line Task Description;
//   kernels   writes the device code, from templates of CUDA text (TPL, FRAG below);
//   launch    writes the host statements that configure and launch the kernel(s);
//   ref       computes the outputs from the inputs on the CPU.
// Everything else (the prompt's Input/Output/GPU lines, includes, error checks, file I/O,
// device buffers, freeing) is generic: emit_program.
//
// Every program reads each input NAME from "NAME.bin" in the working directory (raw
// little-endian values, no header, row-major) and writes each output to "NAME.bin". The
// harness puts the expected outputs in NAME.expected.bin.
//
// Adding families (README, "Adding a family"; test/family_example.c is the smallest whole
// one): write data/families_NAME.c with static family functions and a NULL-terminated list
// `static const Family *const families_NAME[]`, then add one #include and one list entry in
// corpus.c. All family files share one translation unit: give every file-level name (enums,
// tables, functions) a prefix of the file's own. The parameters' names are the keys of the
// JSONL's spec.params; those marked combo form the "parameter combination" that decides
// which combinations are held out for the test split.
#ifndef CORPUS_H
#define CORPUS_H

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "corpus: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

// ----------------------------------------------------------------------------
// Growable text buffer

typedef struct { char *s; size_t len, cap; } Buf;

static void buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    b->s = realloc(b->s, cap);
    if (!b->s) die("out of memory");
    b->s[b->len] = 0; // a reserved buffer is a string already, "" when nothing is in it yet
    b->cap = cap;
}
static void buf_putn(Buf *b, const char *s, size_t n) {
    buf_reserve(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}
static void buf_puts(Buf *b, const char *s) { buf_putn(b, s, strlen(s)); }
static void buf_vprintf(Buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    buf_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}
__attribute__((format(printf, 2, 3)))
static void buf_printf(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}
static void buf_clear(Buf *b) { b->len = 0; if (b->s) b->s[0] = 0; }
static void buf_free(Buf *b) { free(b->s); b->s = NULL; b->len = b->cap = 0; }
static const char *buf_str(const Buf *b) { return b->s ? b->s : ""; }

// Short-lived formatted strings (a ring of 256), for building the arguments of one call
// (a template's values) inline.
__attribute__((format(printf, 1, 2)))
static const char *fmt(const char *f, ...) {
    static char ring[256][512];
    static int k;
    char *s = ring[k++ & 255];
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(s, 512, f, ap);
    va_end(ap);
    if (n >= 512) die("fmt: string too long: %.60s...", s);
    return s;
}

// ----------------------------------------------------------------------------
// Random numbers and hashing (splitmix64: small, fast, good enough, and the same
// everywhere, so a seed means the same corpus on every machine)

typedef struct { uint64_t s; } Rng;

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static uint64_t rng_next(Rng *r) { r->s += 0x9e3779b97f4a7c15ULL; return mix64(r->s); }
static Rng rng_seeded(uint64_t a, uint64_t b) { Rng r = { mix64(a * 0x9e3779b97f4a7c15ULL + mix64(b + 1)) }; return r; }
// Uniform integer in [lo, hi].
static int rng_int(Rng *r, int lo, int hi) { return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1)); }
// Uniform in [0, 1) with 53 bits.
static double rng_unit(Rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
// 1 with probability pct/100.
static int rng_chance(Rng *r, int pct) { return rng_int(r, 0, 99) < pct; }
// Index into a table.
#define RPICK(r, table) rng_int((r), 0, NELEM(table) - 1)

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    h ^= 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ULL; }
    return mix64(h);
}
static uint64_t hash_str(const char *s, uint64_t h) { return hash_bytes(s, strlen(s), h); }

// ----------------------------------------------------------------------------
// Data types of tensors (files hold raw little-endian values of these types)

typedef enum { DT_F32, DT_I32, DT_U32, DT_F16, DT_U8, DT_COUNT } DType;
static const char *const dt_names[DT_COUNT] = { "float32", "int32", "uint32", "float16", "uint8" };
static const char *const dt_ctypes[DT_COUNT] = { "float", "int", "unsigned int", "__half", "unsigned char" };
static const int dt_sizes[DT_COUNT] = { 4, 4, 4, 2, 1 };
// The largest magnitude of each type (float16: the largest finite half).
static const double dt_max[DT_COUNT] = { 3.4028234663852886e38, 2147483647.0, 4294967295.0, 65504.0, 255.0 };
// For CPU references, defined for any input: a float converted to int32 as the GPU does it
// (toward zero, saturating, NaN to 0), and a whole number (|v| < 2^63) as int32 arithmetic
// leaves it (modulo 2^32).
static int32_t cvt_i32(double v) { return v != v ? 0 : (int32_t)fmin(fmax(v, -2147483648.0), 2147483647.0); }
static int32_t wrap_i32(double v) { return (int32_t)(uint32_t)(int64_t)v; }

static int dt_from_name(const char *s) {
    for (int k = 0; k < DT_COUNT; k++)
        if (strcmp(s, dt_names[k]) == 0) return k;
    return -1;
}

// IEEE binary16 <-> binary32. f32_to_f16 rounds to nearest, ties to even (what
// __float2half does); NaN stays NaN, overflow gives infinity.
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); // >= 65520 rounds to infinity
    if (ax < 0x38800000u) { // below 2^-14: a subnormal half, in units of 2^-24
        float a;
        memcpy(&a, &ax, 4);
        return (uint16_t)(sign | (uint32_t)rintf(a * 16777216.0f)); // exact product; rintf ties to even
    }
    uint32_t h = ((((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7fffffu) >> 13));
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; // a carry moves into the exponent correctly
    return (uint16_t)(sign | h);
}
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31) x = sign | 0x7f800000u | (m << 13);
    else x = sign | ((e - 15 + 127) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

// ----------------------------------------------------------------------------
// The emitter: the program text, written line by line at an indentation level.

typedef struct {
    Buf b;
    int ind;   // current indentation level
    int iw;    // spaces per level
} Emit;

static void em_init(Emit *e, int indent_width) { *e = (Emit){ .iw = indent_width }; }
static void em_free(Emit *e) { buf_free(&e->b); }
// One line at the current indentation ("" writes an empty line without spaces).
__attribute__((format(printf, 2, 3)))
static void em_line(Emit *e, const char *f, ...) {
    va_list ap;
    if (f[0]) buf_printf(&e->b, "%*s", e->ind * e->iw, "");
    va_start(ap, f);
    buf_vprintf(&e->b, f, ap);
    va_end(ap);
    buf_putn(&e->b, "\n", 1);
}
static void em_blank(Emit *e) { buf_putn(&e->b, "\n", 1); }
static void em_in(Emit *e) { e->ind++; }
static void em_out(Emit *e) { if (--e->ind < 0) die("emitter: indentation below zero"); }

// Writes "a + -2" as "a - 2" and "a - -2" as "a + 2": formulas built from signed parameters
// (in the prompt and in the program alike) read as a person writes them. The same value in C:
// negating a literal is exact, and nvcc contracts a - b * c as it does a + -b * c.
static void tidy_signs(Buf *b) {
    size_t w = 0;
    for (size_t r = 0; r < b->len; r++) {
        const char *p = b->s + r;
        if (r > 0 && p[-1] == ' ' && (p[0] == '+' || p[0] == '-') && r + 3 < b->len && p[1] == ' ' && p[2] == '-' &&
            isdigit((unsigned char)p[3])) {
            b->s[w++] = p[0] == '+' ? '-' : '+';
            b->s[w++] = ' ';
            r += 2;
        } else b->s[w++] = p[0];
    }
    b->len = w;
    if (b->s) b->s[w] = 0;
}

// Checks the finished text: indentation back at 0, printable ASCII only. Dies on a
// violation: that is a bug in a family, not in the data.
static void em_check(const Emit *e, const char *who) {
    if (e->ind != 0) die("%s: indentation ends at %d, not 0", who, e->ind);
    for (size_t i = 0; i < e->b.len; i++)
        if ((unsigned char)e->b.s[i] >= 0x80 || (e->b.s[i] < 0x20 && e->b.s[i] != '\n'))
            die("%s: non-ASCII or control byte at %zu", who, i);
}

// ----------------------------------------------------------------------------
// Tensors, sizes, styles, tasks

#define MAX_T 6      // inputs (or outputs) per task
#define MAX_DIMS 3
#define MAX_SIZES 6
#define MAX_IP 24    // integer parameters per family
#define MAX_FP 6     // float parameters per family

enum { GEN_UNIFORM, GEN_PERM };
static const char *const gen_names[] = { "uniform", "perm" };

typedef struct {
    char name[24];     // the variable and file name (NAME.bin)
    DType dt;
    int ndim;
    long shape[MAX_DIMS];
    // inputs: how the test data is drawn
    double lo, hi;     // value range, inclusive for integers, [lo, hi) for floats
    int integer;       // whole numbers (float tensors may hold whole numbers too)
    int gen;           // GEN_UNIFORM, or GEN_PERM: a random permutation of 0..count-1
    double grid;       // floats: > 0 snaps a share on_grid of them down to lo + a multiple of grid (a
    double on_grid;    // grid of 2^-k makes float sums exact in any order; a half-step grid plants ties)
    // host code
    int fac[2], nfac;  // element count = product of the size constants fac[0..nfac)
    int zero_init;     // outputs: cudaMemset to 0 before the launch (accumulated with atomics)
} Tensor;

static long tensor_count(const Tensor *t) {
    long c = 1;
    for (int d = 0; d < t->ndim; d++) c *= t->shape[d];
    return c;
}

typedef struct {
    char base[16];     // "n", "rows", "cols", "bins": the host's name derives from it
    long value;
} SizeConst;

// Cosmetic choices, shared by all families (drawn by style_draw, never in the spec).
enum { HOST_C, HOST_CPP, HOST_INLINE, HOST_LAUNCHER, HOST_COUNT };
enum { SIZES_LOCAL, SIZES_DEFINE, SIZES_GLOBAL, SIZES_CONSTEXPR };
enum { CHECK_MACRO, CHECK_MACRO2, CHECK_FUNC, CHECK_LAST };
enum { CMT_NONE, CMT_LINE, CMT_BLOCK, CMT_DOXY };
typedef struct {
    int host;       // HOST_*: I/O helpers and structure of main
    int sizes;      // SIZES_*: where the size constants live
    int check;      // CHECK_*: how CUDA errors are checked
    int cmt;        // CMT_*: comment style
    int verbose;    // comments inside kernels too
    int devname;    // d_x, x_d, dev_x, x_dev
    int hostname;   // h_x, x_h, host_x, x_host
    int restrict_;  // const float *__restrict__ x
    int ptrstar;    // "float *x" or "float* x"
    int allman;     // function braces on their own line
    int iw;         // indentation width: 2 or 4
    int idxname;    // i, tid, gid, k
    int idxtype;    // 0 int, 1 size_t (1-D elementwise kernels)
    int bytesvar;   // one "bytes" variable per tensor
    int pow2;       // sizes written as (1 << k) when powers of two
    int timing;     // cudaEvent timing around the launches
    int header;     // a comment at the top of the file
    int mainsig;    // int main() / int main(void) / int main(int argc, char **argv)
    int nullinit;   // float *d_x = nullptr; / NULL / uninitialised
    int cfg;        // 1-D launch configuration style (see launch_1d)
    int gpu;        // the GPU line
    int done;       // print a line at the end
} Style;

struct Task;
struct Host;

// A parameter of a family. pick says how params_draw draws it: "128 256 256 512" one of
// the listed numbers (a number listed twice is twice as likely), "0..3" a number in the
// range, "*" one of the enum values; NULL: the family's draw function sets it; "=0..6":
// draw sets it to a number in the range (a choice among variants that depends on other
// parameters; the range is for checking specs read back, param_bounds). A family's table is
// indexed by its enum of parameters and ends with an entry whose name is NULL (the model:
// test/family_example.c).
typedef struct {
    const char *name;            // the key in spec.params
    const char *const *values;   // enum names (NULL-terminated) or NULL for a number
    int combo;                   // part of the held-out parameter combination
    const char *pick;
} ParamDesc;

typedef struct Family {
    const char *name;
    const char *summary;
    const ParamDesc *ip;         // terminated by {NULL}
    const char *const *fp;       // float parameter names, NULL-terminated (may be NULL)
    void (*draw)(struct Task *t, Rng *r);   // after params_draw: names, dependent choices
    void (*layout)(struct Task *t);
    void (*describe)(const struct Task *t, Buf *name, Buf *desc);
    void (*kernels)(const struct Task *t, Emit *e);
    void (*launch)(const struct Task *t, Emit *e, const struct Host *h);
    void (*ref)(const struct Task *t, const void *const *in, void *const *out);
} Family;

typedef struct Task {
    const Family *fam;
    int p[MAX_IP];
    double f[MAX_FP];
    Style st;
    char kname[3][40];   // kernel and helper names
    char slug[24];       // short name of the operation (launcher function, file comment)
    Tensor in[MAX_T], out[MAX_T];
    int nin, nout;
    SizeConst size[MAX_SIZES];
    int nsize;
    int need_fp16, need_math;
    uint64_t seed;
    double atol, rtol;
    const char *problem; // set by layout when parameters read from a spec cannot make a task
} Task;

// The host code context a family's launch function writes with: the names of the device
// buffers (inputs then outputs) and size constants as this program spells them.
typedef struct Host {
    const Task *t;
    char in[MAX_T][40], out[MAX_T][40];  // device pointers
    char size[MAX_SIZES][24];            // size constants
    unsigned launcher_sizes;             // HOST_LAUNCHER: the sizes its launcher reads (bit k: size[k])
} Host;

static int param_count(const Family *f) { int k = 0; while (f->ip[k].name) k++; return k; }
static int fparam_count(const Family *f) { int k = 0; while (f->fp && f->fp[k]) k++; return k; }
static int param_index(const Family *f, const char *name) {
    for (int k = 0; f->ip[k].name; k++)
        if (strcmp(f->ip[k].name, name) == 0) return k;
    return -1;
}

// The values a spec may give a number parameter: the range of its pick ("0..3", "=0..6"),
// else any count or size from 0 (draw sets the sizes a task does not use to 0).
static void param_bounds(const ParamDesc *d, int *lo, int *hi) {
    int a, b;
    int range = d->pick && sscanf(d->pick + (d->pick[0] == '='), "%d..%d", &a, &b) == 2;
    *lo = range ? a : 0;
    *hi = range ? b : 2000000000;
}

// Lists of words separated by spaces: how many, where word k starts (the end past the
// last), and word k as a string ("" past the end).
static int word_count(const char *list) {
    int n = 0;
    for (const char *p = list + strspn(list, " "); *p; p += strspn(p, " ")) n++, p += strcspn(p, " ");
    return n;
}
static const char *word_at(const char *list, int k) {
    for (list += strspn(list, " "); k > 0 && *list; k--) list += strcspn(list, " "), list += strspn(list, " ");
    return list;
}
static const char *word(const char *list, int k) {
    const char *w = word_at(list, k);
    return fmt("%.*s", (int)strcspn(w, " "), w);
}
// One number drawn from a list: "128 256 256 512" (a number listed twice is twice as
// likely) or a range "0..3".
static int rng_pick(Rng *r, const char *list) {
    int lo, hi, n = word_count(list);
    if (sscanf(list, "%d..%d", &lo, &hi) == 2) return rng_int(r, lo, hi);
    if (n == 0) die("rng_pick: empty list");
    return atoi(word_at(list, rng_int(r, 0, n - 1)));
}
// One value of parameter d, drawn as its pick says.
static int param_pick(const ParamDesc *d, Rng *r) {
    if (strcmp(d->pick, "*") != 0) return rng_pick(r, d->pick);
    int n = 0;
    if (!d->values) die("parameter %s: pick \"*\" needs enum values", d->name);
    while (d->values[n]) n++;
    return rng_int(r, 0, n - 1);
}
// Draws every parameter of the task's family that has a pick, in the order listed.
static void params_draw(Task *t, Rng *r) {
    for (int k = 0; t->fam->ip[k].name; k++)
        if (t->fam->ip[k].pick && t->fam->ip[k].pick[0] != '=') t->p[k] = param_pick(&t->fam->ip[k], r);
}
// `--style plain`: each parameter outside the combination (kernel and helper names, the
// Task Name's wording, helper kind, grid cap, ...) takes the first value its pick lists,
// so a task's text follows from its combination, which the prompt states. Called after
// params_draw, so the random stream (and every later draw) is that of a varied corpus.
static void params_pin(Task *t) {
    for (int k = 0; t->fam->ip[k].name; k++) {
        const ParamDesc *d = &t->fam->ip[k];
        if (d->combo || !d->pick || d->pick[0] == '=') continue;
        t->p[k] = strcmp(d->pick, "*") == 0 ? 0 : atoi(d->pick); // "2..5" and "2 4 8" both give 2
    }
}
// Draws parameters a and b again (as their picks say) until a * b lies in [lo, hi]: sizes
// whose product the family bounds.
static void params_redraw(Task *t, Rng *r, int a, int b, long lo, long hi) {
    while ((long)t->p[a] * t->p[b] < lo || (long)t->p[a] * t->p[b] > hi) {
        t->p[a] = param_pick(&t->fam->ip[a], r);
        t->p[b] = param_pick(&t->fam->ip[b], r);
    }
}
// Names a task: tensors lists the inputs (its first nin words), then the outputs; kernels
// the kernel and helper names (kname[0..2]; "-" leaves one unset); slug the operation's
// short name. A family may name every tensor it can have: the layout's nin and nout say
// which exist.
static void task_names(Task *t, int nin, const char *tensors, const char *kernels, const char *slug) {
    for (int k = 0; k < nin + MAX_T; k++) {
        char *name = k < nin ? t->in[k].name : t->out[k - nin].name;
        snprintf(name, sizeof t->in[0].name, "%s", word(tensors, k));
    }
    for (int k = 0; k < 3; k++) {
        const char *w = word(kernels, k);
        snprintf(t->kname[k], sizeof t->kname[k], "%s", strcmp(w, "-") ? w : "");
    }
    snprintf(t->slug, sizeof t->slug, "%s", slug);
}

// Tensor setup for layout functions: the type, the shape [d0, d1] (a third side, set after,
// when ndim is 3), and the element count in the host code: size[f0] * size[f1] (f1 < 0:
// size[f0]; f0 < 0: 1).
static void tshape(Tensor *x, DType dt, int ndim, long d0, long d1, int f0, int f1) {
    x->dt = dt;
    x->ndim = ndim;
    x->shape[0] = d0;
    x->shape[1] = d1;
    x->nfac = 0;
    if (f0 >= 0) x->fac[x->nfac++] = f0;
    if (f1 >= 0) x->fac[x->nfac++] = f1;
}
static void trange(Tensor *x, double lo, double hi, int integer) {
    x->lo = lo;
    x->hi = hi;
    x->integer = integer;
    x->gen = GEN_UNIFORM;
    x->grid = x->on_grid = 0;
}
// Draws share (0, 1] of the floats of x on a grid of step (see Tensor), after trange.
static void tgrid(Tensor *x, double step, double share) {
    x->grid = step;
    x->on_grid = share;
}
static int add_size(Task *t, const char *base, long value) {
    if (t->nsize == MAX_SIZES) die("too many size constants");
    snprintf(t->size[t->nsize].base, sizeof t->size[0].base, "%s", base);
    t->size[t->nsize].value = value;
    return t->nsize++;
}
// The common 1-D layout: size constant base = N, nin inputs of N floats in [lo, hi), an
// output of N floats (a family changes or adds outputs after).
static void vectors_1d(Task *t, const char *base, long N, int nin, double lo, double hi) {
    int n = add_size(t, base, N);
    t->nin = nin;
    t->nout = 1;
    for (int k = 0; k < nin; k++) {
        tshape(&t->in[k], DT_F32, 1, N, 0, n, -1);
        trange(&t->in[k], lo, hi, 0);
    }
    tshape(&t->out[0], DT_F32, 1, N, 0, n, -1);
}

// ----------------------------------------------------------------------------
// Cosmetic helpers for kernels

static const char *const idx_names[] = { "i", "tid", "gid", "k" };
static const char *IDX(const Task *t) { return idx_names[t->st.idxname]; }

// A pointer parameter in the program's style: "const float *__restrict__ x".
static const char *ptr_param(const Task *t, const char *ctype, const char *name, int is_const) {
    return fmt("%s%s%s%s%s", is_const ? "const " : "", ctype, t->st.ptrstar ? "* " : " *",
               t->st.restrict_ ? "__restrict__ " : "", name);
}

// A comment before a function or a block, in the program's comment style (CMT_NONE: none).
// text may hold several sentences.
static void em_comment(Emit *e, const Task *t, const char *text) {
    int c = t->st.cmt;
    if (c == CMT_NONE) return;
    if (c == CMT_LINE) em_line(e, "// %s", text);
    else if (c == CMT_BLOCK) em_line(e, "/* %s */", text);
    else {
        em_line(e, "/**");
        em_line(e, " * %s", text);
        em_line(e, " */");
    }
}

// ----------------------------------------------------------------------------
// Templates: CUDA text with named placeholders, written as the program reads.
//
// A template is text with placeholders $name (or ${name} before an identifier character),
// indented by 4 spaces per level. The values are given as name, value pairs:
//     TPL(e, t, "if ($i < n) $out[$i] = $expr;", "i", IDX(t), "out", y, "expr", f);
// A value may hold several lines (a fragment made with FRAG): its later lines get the
// indentation of the line the placeholder stands on. A template line whose placeholders
// are all empty is left out, so optional statements are empty fragments. When written,
// a level becomes the program's indentation width, and
//   a line "/// text" is a comment before a function in the program's comment style (following
//   "/// ..." lines continue it),
//   a line "//? text" a comment written only in verbose programs,
//   a top-level line ending in ") {" (a function's head) puts '{' on its own line in
//   Allman-style programs.

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; } // of a C identifier

static const char *tpl_value(const char *const *kv, const char *name, size_t n) {
    for (int k = 0; kv[k]; k += 2) {
        if (!kv[k + 1]) die("template: $%s has no value (NULL)", kv[k]);
        if (strlen(kv[k]) == n && memcmp(kv[k], name, n) == 0) return kv[k + 1];
    }
    die("template: no value for $%.*s", (int)n, name);
}
// Expands the placeholders of text into out, keeping the template's indentation.
static void tpl_expand(Buf *out, const char *text, const char *const *kv) {
    if (*text == '\n') text++;
    while (*text) {
        const char *eol = text + strcspn(text, "\n");
        size_t lead = strspn(text, " "), start = out->len;
        for (const char *p = text; p < eol; p++) {
            if (*p != '$') { buf_putn(out, p, 1); continue; }
            int brace = p[1] == '{';
            const char *name = p + 1 + brace;
            size_t n = 0;
            while (ident_char(name[n])) n++;
            if (n == 0 || (brace && name[n] != '}')) die("template: bad placeholder at \"%.30s\"", p);
            const char *v = tpl_value(kv, name, n);
            if (*v == '\n') v++; // a template used as a value as it is
            for (; *v && !(v[0] == '\n' && !v[1]); v++) {
                buf_putn(out, v, 1);
                if (*v == '\n' && v[1] != '\n') buf_printf(out, "%*s", (int)lead, "");
            }
            p = name + n + brace - 1;
        }
        size_t k = start;
        while (k < out->len && (out->s[k] == ' ' || out->s[k] == '\n')) k++;
        if (k == out->len && eol > text + lead) out->len = start; // only empty values: no line
        else buf_putn(out, "\n", 1);
        text = *eol ? eol + 1 : eol;
    }
}
// A fragment: the expanded text, for a placeholder of another template (a ring of 128).
static const char *tpl_frag(const char *text, const char *const *kv) {
    static Buf ring[128];
    static int k;
    Buf *b = &ring[k++ & 127];
    buf_clear(b);
    tpl_expand(b, text, kv);
    return buf_str(b);
}
// Writes the expanded template at the emitter's indentation.
static void tpl_emit(Emit *e, const Task *t, const char *text, const char *const *kv) {
    Buf b = { 0 };
    tpl_expand(&b, text, kv);
    for (const char *line = buf_str(&b); *line;) {
        const char *eol = line + strcspn(line, "\n");
        int sp = (int)strspn(line, " "), len = (int)(eol - line) - sp;
        const char *body = line + sp;
        e->ind += sp / 4;
        if (len == 0) em_blank(e);
        else if (strncmp(body, "///", 3) == 0) { // one comment, from this and the following "///" lines
            Buf c = { 0 };
            buf_putn(&c, body + 4, (size_t)(len - 4));
            while (eol[0] == '\n' && strncmp(eol + 1 + sp, "///", 3) == 0 && (int)strspn(eol + 1, " ") == sp) {
                const char *next = eol + 1 + sp + 3;
                eol = next + strcspn(next, "\n");
                buf_printf(&c, " %.*s", (int)(eol - next) - 1, next + 1);
            }
            em_comment(e, t, buf_str(&c));
            buf_free(&c);
        }
        else if (strncmp(body, "//?", 3) == 0) { if (t->st.verbose) em_line(e, "//%.*s", len - 3, body + 3); }
        else if (sp == 0 && t->st.allman && len > 3 && strncmp(eol - 3, ") {", 3) == 0) {
            em_line(e, "%.*s", len - 2, body);
            em_line(e, "{");
        } else em_line(e, "%*s%.*s", sp % 4, "", len, body);
        e->ind -= sp / 4;
        line = *eol ? eol + 1 : eol;
    }
    buf_free(&b);
}
#define TPL(e, t, text, ...) tpl_emit((e), (t), (text), (const char *const[]){ __VA_ARGS__, NULL })
#define FRAG(text, ...) tpl_frag((text), (const char *const[]){ __VA_ARGS__, NULL })
// The first line of a fragment, without its newline: a one-line template as a sentence of a
// prompt.
static void buf_put_line(Buf *b, const char *frag) { buf_putn(b, frag, strcspn(frag, "\n")); }

// ----------------------------------------------------------------------------
// Loops and launches

// The global thread index expression "blockIdx.x * blockDim.x + threadIdx.x" (varied).
static const char *const gidx_forms[] = { "blockIdx.x * blockDim.x + threadIdx.x",
                                          "threadIdx.x + blockIdx.x * blockDim.x",
                                          "blockDim.x * blockIdx.x + threadIdx.x" };
static const char *gidx_expr(const Task *t, int size_t_idx) {
    if (size_t_idx) return "(size_t)blockIdx.x * blockDim.x + threadIdx.x";
    return gidx_forms[(t->st.idxname + t->st.devname) % 3];
}

// The element loop of a 1-D kernel over n elements, index IDX(t) (of type int, or size_t
// in programs that say so), as a fragment around body (a fragment too):
//   LOOP_IF:     int i = ...; if (i < n) { body }
//   LOOP_RETURN: int i = ...; if (i >= n) return; body
//   LOOP_GRID:   for (int i = ...; i < n; i += blockDim.x * gridDim.x) { body }
enum { LOOP_IF, LOOP_RETURN, LOOP_GRID, LOOP_COUNT };
static const char *const loop_names[] = { "if_guard", "early_return", "grid_stride", NULL };
static const char *const loop_tpl[] = { [LOOP_IF] = R"(
$const$type $i = $start;
if ($i < $n) {
    $body
}
)", [LOOP_RETURN] = R"(
$const$type $i = $start;
if ($i >= $n) return;
$body
)", [LOOP_GRID] = R"(
$stride_decl
for ($type $i = $start; $i < $n; $i += $stride) {
    $body
}
)" };
static const char *loop_frag(const Task *t, int loop, const char *n, const char *body) {
    const char *ty = t->st.idxtype ? "size_t" : "int", *cast = t->st.idxtype ? "(size_t)" : "";
    int stride_var = t->st.idxname & 1;
    return FRAG(loop_tpl[loop], "const", t->st.idxname == 2 ? "const " : "", "type", ty, "i", IDX(t), "n", n,
                "body", body, "start", gidx_expr(t, t->st.idxtype),
                "stride_decl", stride_var ? fmt("const %s stride = %sblockDim.x * gridDim.x;", ty, cast) : "",
                "stride", stride_var ? "stride" : fmt("%sblockDim.x * gridDim.x", cast));
}
// The kernel parameter for an element count: "int n" or "size_t n".
static const char *count_param(const Task *t, const char *name) {
    return fmt("%s %s", t->st.idxtype ? "size_t" : "int", name);
}

// One of three strings.
static const char *pick3(int k, const char *a, const char *b, const char *c) { return k == 0 ? a : k == 1 ? b : c; }

// A float literal as CUDA source: 2.5 -> "2.5f", 2 -> "2.0f", 1e-05 -> "1e-05f".
static const char *flit(double v) {
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%.9g", v);
    if (!strchr(tmp, '.') && !strchr(tmp, 'e') && !strchr(tmp, 'n') && !strchr(tmp, 'i')) strcat(tmp, ".0");
    return fmt("%sf", tmp);
}
// Float parameter k of a task as nvcc reads its literal (flit prints "%.9g" + "f"), for the
// CPU references.
static float fpar(const Task *t, int k) { return strtof(fmt("%.9g", t->f[k]), NULL); }
// "a 4096" or "an 8192": the number with the article its English reading takes (an eight...,
// an eleven..., an eighteen...).
static const char *a_num(long n) {
    char d[24];
    int len = snprintf(d, sizeof d, "%ld", n);
    int an = d[0] == '8' || (len % 3 == 2 && d[0] == '1' && (d[1] == '1' || d[1] == '8'));
    return fmt("%s %ld", an ? "an" : "a", n);
}
// The same number for prompts: 2.5 -> "2.5", 2 -> "2", 1e9 -> "1000000000" (whole numbers in digits).
static const char *fnum(double v) { return fmt(v == floor(v) && fabs(v) < 1e15 ? "%.0f" : "%.9g", v); }

// ----------------------------------------------------------------------------
// Host code (generic): includes, error checks, size constants, file I/O, buffers, main

// The device and host variable names of a tensor or buffer n: d_x, x_d, dev_x, ...
static const char *const dev_names[] = { "d_%s", "%s_d", "dev_%s", "%s_dev" };
static const char *const host_names[] = { "h_%s", "%s_h", "host_%s", "%s_host" };
static const char *dname(const Task *t, const char *n) {
    const char *s = fmt(dev_names[t->st.devname], n);
    return strcmp(s, "dev_t") == 0 ? fmt("d_%s", n) : s; // dev_t is a type of <sys/types.h>: g++ -Wshadow warns
}
static const char *hname(const Task *t, const char *n) { return fmt(host_names[t->st.hostname], n); }

// The program's name of size constant k: n (local), N (#define, constexpr), kN (global).
static const char *size_name(const Task *t, int k) {
    const char *b = t->size[k].base;
    char s[24] = "";
    if (t->st.sizes == SIZES_LOCAL) return b;
    if (t->st.sizes == SIZES_GLOBAL) return fmt("k%c%s", toupper(b[0]), b + 1);
    for (int j = 0; j < 23 && b[j]; j++) s[j] = (char)toupper(b[j]);
    return fmt("%s", s);
}
// Its declaration (name, value) in main or at file level, as t->st.sizes says.
static const char *const size_decls[] = { [SIZES_LOCAL] = "const int %s = %s;", [SIZES_DEFINE] = "#define %s %s",
                                          [SIZES_GLOBAL] = "static const int %s = %s;",
                                          [SIZES_CONSTEXPR] = "constexpr int %s = %s;" };
// Its value: 4096, or (1 << 12) in programs that write powers of two so.
static const char *size_value(const Task *t, int k) {
    long v = t->size[k].value;
    int b = 0;
    if (!t->st.pow2 || v < 1024 || (v & (v - 1)) != 0) return fmt("%ld", v);
    while ((1L << b) != v) b++;
    return fmt("(1 << %d)", b);
}
// Count expression of a tensor in terms of the size names, e.g. "rows * cols".
static const char *count_expr(const Task *t, const Tensor *x) {
    if (x->nfac == 0) return "1";
    if (x->nfac == 1) return size_name(t, x->fac[0]);
    return fmt("%s * %s", size_name(t, x->fac[0]), size_name(t, x->fac[1]));
}
// An expression as an operand of * / or a cast: "n" as it is, "rows * cols" in parentheses.
static const char *paren(const char *expr) { return strchr(expr, ' ') ? fmt("(%s)", expr) : expr; }
// The bytes of count elements of ctype: "n * sizeof(float)", or "sizeof(float)" for one.
static const char *count_bytes(const char *count, const char *ctype) {
    return strcmp(count, "1") == 0 ? fmt("sizeof(%s)", ctype) : fmt("%s * sizeof(%s)", count, ctype);
}
// Its size in bytes: "x_bytes" where the program has such variables, else count_bytes.
static const char *bytes_expr(const Task *t, const Tensor *x) {
    if (t->st.bytesvar) return fmt("%s_bytes", x->name);
    return count_bytes(count_expr(t, x), dt_ctypes[x->dt]);
}
static int is_cpp(const Task *t) { return t->st.host == HOST_CPP; }

// Tensor k of the task, counting the inputs first, and its device buffer.
static const Tensor *tensor_at(const Task *t, int k) { return k < t->nin ? &t->in[k] : &t->out[k - t->nin]; }
// Whether a buffer's host or device name is also a size constant's or a tensor's name (with
// the x_h style, conv2d's output out beside its height out_h), or a buffer's of the other
// kind (two of one kind differ: the tensors' names do).
static int buffer_names_clash(const Task *t) {
    int nt = t->nin + t->nout;
    for (int k = 0; k < nt; k++)
        for (int dev = 0; dev < 2; dev++) {
            const char *own = (dev ? dname : hname)(t, tensor_at(t, k)->name);
            for (int j = 0; j < t->nsize; j++)
                if (strcmp(own, size_name(t, j)) == 0) return 1;
            for (int j = 0; j < nt; j++) {
                const char *x = tensor_at(t, j)->name;
                if (strcmp(own, x) == 0 || strcmp(own, (dev ? hname : dname)(t, x)) == 0) return 1;
            }
        }
    return 0;
}
// After layout: the next host naming style (then device style) while a buffer name clashes;
// no random draw, so a task without a clash is unchanged.
static void buffer_names_resolve(Task *t) {
    for (int tries = 1; buffer_names_clash(t); tries++) {
        if (tries > 16) die("family %s: no naming style gives its buffers names of their own", t->fam->name);
        t->st.hostname = (t->st.hostname + 1) % NELEM(host_names);
        if (tries % NELEM(host_names) == 0) t->st.devname = (t->st.devname + 1) % NELEM(dev_names);
    }
}
static const char *dev_buf(const struct Host *h, int k) { return k < h->t->nin ? h->in[k] : h->out[k - h->t->nin]; }

// A checked CUDA runtime call as a statement, in the program's error-check style.
static const char *checked(const Task *t, const char *call) {
    switch (t->st.check) {
    case CHECK_MACRO: return fmt("CUDA_CHECK(%s);", call);
    case CHECK_MACRO2: return fmt("CHECK_CUDA(%s);", call);
    case CHECK_FUNC: return fmt("check(%s, \"%.*s\");", call, (int)strcspn(call, "("), call);
    default: return fmt("%s;", call);
    }
}
__attribute__((format(printf, 3, 4)))
static void host_call(Emit *e, const Task *t, const char *f, ...) {
    char call[400];
    va_list ap;
    va_start(ap, f);
    vsnprintf(call, sizeof call, f, ap);
    va_end(ap);
    em_line(e, "%s", checked(t, call));
}
// The allocation of device buffer name, bytes long: the cudaMalloc call, checked (its
// pointer cast to void ** in programs that leave the pointers uninitialised).
static const char *malloc_call(const Task *t, const char *name, const char *bytes) {
    return checked(t, fmt("cudaMalloc(%s&%s, %s)", t->st.nullinit == 2 ? "(void **)" : "", name, bytes));
}
// The declaration and allocation of a device buffer of count elements of ctype (a
// family's scratch buffer), two statements.
static const char *dev_alloc(const Task *t, const char *ctype, const char *name, const char *count) {
    const char *init = t->st.nullinit == 0 ? " = nullptr" : t->st.nullinit == 1 ? " = NULL" : "";
    return fmt("%s *%s%s;\n%s", ctype, name, init, malloc_call(t, name, count_bytes(count, ctype)));
}

// The host lines after a family's last pass: wait for it, then free the scratch buffer a (and b).
static const char *sync_free(const Task *t, const char *a, const char *b) {
    const char *sync = checked(t, "cudaDeviceSynchronize()"), *free_a = checked(t, fmt("cudaFree(%s)", a));
    return b ? fmt("%s\n%s\n%s", sync, free_a, checked(t, fmt("cudaFree(%s)", b))) : fmt("%s\n%s", sync, free_a);
}

// The grid of a 1-D launch: `threads` threads a block over n elements, at most cap blocks
// when cap > 0 (grid-stride kernels). Families with launches of their own write it too.
static const char grid_1d_tpl[] = R"(
const int threads = $threads;
${const}int blocks = ($n + threads - 1) / threads;
$cap
)";
static const char *grid_1d(const char *threads, const char *n, int cap) {
    return FRAG(grid_1d_tpl, "threads", threads, "n", n, "const", cap > 0 ? "" : "const ",
                "cap", cap > 0 ? fmt("if (blocks > %d) blocks = %d;", cap, cap) : "");
}

// The generic 1-D launch: `blocks` over `count` elements with `block` threads, in one of
// several spellings (t->st.cfg). grid_cap > 0 caps the grid (grid-stride kernels).
// kname: the kernel; args: the argument list.
static const char *const launch_1d_tpl[] = { R"(
$grid
$k<<<blocks, threads>>>($args);
)", R"(
int block_size = $block;
int grid_size = (int)(($n + block_size - 1) / block_size);
$cap
$k<<<grid_size, block_size>>>($args);
)", R"(
dim3 block($block);
dim3 grid($grid);
$k<<<grid, block>>>($args);
)", R"(
$k<<<($n + $last) / $block, $block>>>($args);
)" };
static void launch_1d(Emit *e, const Task *t, const char *kname, const char *count, int block, int grid_cap,
                      const char *args) {
    int cfg = grid_cap > 0 && t->st.cfg == 3 ? 0 : t->st.cfg; // the inline form has no room for a cap
    const char *B = fmt("%d", block), *grid = "", *blocks = fmt("(%s + block.x - 1) / block.x", count);
    if (cfg == 0) grid = grid_1d(B, count, grid_cap);
    if (cfg == 2) grid = grid_cap > 0 ? fmt("min((unsigned int)(%s), %du)", blocks, grid_cap) : blocks;
    const char *cap = grid_cap > 0 ? fmt("grid_size = grid_size < %d ? grid_size : %d;", grid_cap, grid_cap) : "";
    TPL(e, t, launch_1d_tpl[cfg], "grid", grid, "k", kname, "args", args, "block", B, "n", count,
        "last", fmt("%d", block - 1), "cap", cap);
}

// The generic 2-D (or 3-D) launch, described by the fields of a Launch2D (a call names only the
// ones it sets: launch_2d(e, t, (Launch2D){ .dims = ..., .bx = "16", ... })).
typedef struct {
    int dims;                 // the spelling: an index into launch_2d_tpl
    const char *k;            // the kernel, with any template arguments (NULL: t->kname[0])
    const char *bx, *by;      // block of bx x by threads
    const char *tx, *ty;      // elements a block covers in x and y (NULL: bx, by)
    const char *xc, *yc, *zc; // index space: xc wide, yc high (NULL: one block high), zc layers (NULL: none)
    int ycap;                 // > 0: grid.y capped (grid-stride kernels; spelling 1, const, becomes 0)
    const char *args;         // the argument list
} Launch2D;
static const char *const launch_2d_tpl[] = { R"(
dim3 block($bx, $by);
dim3 grid($gx, $gy$z);
$cap
$k<<<grid, block>>>($args);
)", R"(
const dim3 threads($bx, $by);
const dim3 blocks($gx, $gy$z);
$k<<<blocks, threads>>>($args);
)", R"(
dim3 block($bx, $by), grid($gx, $gy$z);
$cap
$k<<<grid, block>>>($args);
)", R"(
dim3 block_dim($bx, $by);
dim3 grid_dim;
grid_dim.x = $gx;
grid_dim.y = $gy;
$cap
$zc
$k<<<grid_dim, block_dim>>>($args);
)" };
static const char *ceil_div(const char *n, const char *d) { return fmt("(%s + %s - 1) / %s", n, d, d); }
static void launch_2d(Emit *e, const Task *t, Launch2D l) {
    int dims = l.ycap && l.dims == 1 ? 0 : l.dims;
    const char *g = dims == 3 ? "grid_dim" : "grid", *b = dims == 3 ? "block_dim" : "block";
    int named = dims == 0 || dims == 3; // spellings whose grid reads the block's extent from its dim3
    const char *ux = named ? fmt("%s.x", b) : l.bx, *uy = named ? fmt("%s.y", b) : l.by;
    TPL(e, t, launch_2d_tpl[dims], "bx", l.bx, "by", l.by, "gx", ceil_div(l.xc, l.tx ? l.tx : ux),
        "gy", l.yc ? ceil_div(l.yc, l.ty ? l.ty : uy) : "1", "z", l.zc && dims != 3 ? fmt(", %s", l.zc) : "",
        "zc", l.zc ? fmt("grid_dim.z = %s;", l.zc) : "",
        "cap", l.ycap ? fmt("if (%s.y > %d) %s.y = %d;", g, l.ycap, g, l.ycap) : "", "k", l.k ? l.k : t->kname[0],
        "args", l.args);
}
// Comma lists over the task's tensors (inputs first, inputs const) for kernels and the
// launcher function of HOST_LAUNCHER programs: parameters, then the matching arguments (the
// device buffers, then size constants).
static void list_add(char list[512], const char *item) {
    size_t l = strlen(list);
    if (snprintf(list + l, 512 - l, "%s%s", l ? ", " : "", item) >= (int)(512 - l))
        die("list_add: a list longer than 511 characters");
}
static const char *kernel_params(const Task *t) {
    char s[512] = "";
    for (int k = 0; k < t->nin + t->nout; k++) {
        const Tensor *x = tensor_at(t, k);
        list_add(s, ptr_param(t, dt_ctypes[x->dt], x->name, k < t->nin));
    }
    return fmt("%s", s);
}
// A kernel t->kname[0] over the task's tensors (kernel_params), then the parameters rest (the
// sizes, any scalars): what precedes it (macros, helpers), its comment, template head ("" for
// none) and body.
static const char kernel_tpl[] = R"(
$pre
/// $comment
$template
__global__ void $kname($params) {
    $body
}
)";
static void emit_kernel(Emit *e, const Task *t, const char *pre, const char *tmpl, const char *comment,
                        const char *rest, const char *body) {
    TPL(e, t, kernel_tpl, "pre", pre, "comment", comment, "template", tmpl, "kname", t->kname[0],
        "params", fmt("%s, %s", kernel_params(t), rest), "body", body);
}
// Any kernel k(params) with its comment and body, as a fragment (emit_kernel's: kname[0] over the tensors).
static const char *kernel_frag(const char *k, const char *comment, const char *params, const char *body) {
    return FRAG(kernel_tpl, "pre", "", "template", "", "comment", comment, "kname", k, "params", params,
                "body", body);
}
// The device buffers, then the size constants of the mask sizes (bit k: size[k]): a launch's
// arguments, or (typed) the launcher function's parameters, "const float *d_x, int n".
static const char *buffer_size_list(const struct Host *h, unsigned sizes, int typed) {
    const Task *t = h->t;
    char s[512] = "";
    for (int k = 0; k < t->nin + t->nout; k++) {
        const char *type = typed ? fmt("%s%s *", k < t->nin ? "const " : "", dt_ctypes[tensor_at(t, k)->dt]) : "";
        list_add(s, typed ? fmt("%s%s", type, dev_buf(h, k)) : dev_buf(h, k));
    }
    for (int k = 0; k < t->nsize; k++)
        if (sizes >> k & 1) list_add(s, typed ? fmt("int %s", h->size[k]) : h->size[k]);
    return fmt("%s", s);
}
// A kernel launch's arguments: the device buffers and the first nsize size constants.
static const char *kernel_args(const struct Host *h, int nsize) { return buffer_size_list(h, (1u << nsize) - 1, 0); }
// Whether text mentions name as a whole identifier.
static int mentions(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
        if (!(p > text && ident_char(p[-1])) && !ident_char(p[n])) return 1;
    return 0;
}

// The top of the file: the includes (C or C++ standard headers, <cuda_fp16.h> if needed),
// the error-check helper of CHECK_MACRO, CHECK_MACRO2 and CHECK_FUNC programs, and the size
// constants of programs that keep them at file level.
static const char includes_tpl[] = R"(
$std
$math
#include <cuda_runtime.h>
$fp16

)";
static const char *const includes_std[] = {
    "#include <stdio.h>\n#include <stdlib.h>",
    "#include <cstdio>\n#include <cstdlib>\n#include <fstream>\n#include <string>\n#include <vector>" };
static const char check_macro_tpl[] = R"(
#define $name(call) \
    do { \
        cudaError_t err_ = (call); \
        if (err_ != cudaSuccess) { \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
            exit(1); \
        } \
    } while (0)

)";
static const char check_func_tpl[] = R"(
static void check(cudaError_t err, const char *what) {
    if (err != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(err));
        exit(1);
    }
}

)";
static void emit_file_top(Emit *e, const Task *t) {
    TPL(e, t, includes_tpl, "std", includes_std[is_cpp(t)],
        "math", !t->need_math ? "" : is_cpp(t) ? "#include <cmath>" : "#include <math.h>",
        "fp16", t->need_fp16 ? "#include <cuda_fp16.h>" : "");
    if (t->st.check == CHECK_MACRO || t->st.check == CHECK_MACRO2)
        TPL(e, t, check_macro_tpl, "name", t->st.check == CHECK_MACRO ? "CUDA_CHECK" : "CHECK_CUDA");
    else if (t->st.check == CHECK_FUNC) TPL(e, t, check_func_tpl, NULL);
    if (t->st.sizes == SIZES_LOCAL || t->nsize == 0) return;
    for (int k = 0; k < t->nsize; k++) em_line(e, size_decls[t->st.sizes], size_name(t, k), size_value(t, k));
    em_blank(e);
}

// The file helpers of HOST_C/HOST_LAUNCHER programs (C stdio, two spellings of their names) and
// HOST_CPP programs (templates over std::vector); HOST_INLINE programs read and write in main.
static const char io_cpp_tpl[] = R"(
/// Reads count values of type T from a raw binary file.
template <typename T>
std::vector<T> read_binary(const std::string &path, size_t count) {
    std::vector<T> data(count);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char *>(data.data()), count * sizeof(T))) {
        fprintf(stderr, "cannot read %s\n", path.c_str());
        exit(1);
    }
    return data;
}

/// Writes the values of v to a raw binary file.
template <typename T>
void write_binary(const std::string &path, const std::vector<T> &v) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
    if (!out) {
        fprintf(stderr, "cannot write %s\n", path.c_str());
        exit(1);
    }
}

)";
static const char io_c_tpl[] = R"(
/// Reads the given number of bytes from path into dst; exits if the file is shorter.
static void $read(const char *path, void *dst, size_t bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    size_t got = fread(dst, 1, bytes, f);
    fclose(f);
    if (got != bytes) {
        fprintf(stderr, "%s: expected %zu bytes, read %zu\n", path, bytes, got);
        exit(1);
    }
}

/// Writes the given number of bytes from src to path.
static void $write(const char *path, const void *src, size_t bytes) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(src, 1, bytes, f) != bytes) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

)";
static const char *io_name(const Task *t, int read) {
    int k = (t->st.devname + t->st.hostname) & 1;
    return read ? (k ? "read_file" : "load_bin") : (k ? "write_file" : "save_bin");
}
static void emit_io_helpers(Emit *e, const Task *t) {
    if (t->st.host == HOST_INLINE) return;
    if (is_cpp(t)) TPL(e, t, io_cpp_tpl, NULL);
    else TPL(e, t, io_c_tpl, "read", io_name(t, 1), "write", io_name(t, 0));
}

// main, part by part: inputs read into host buffers, device buffers, the launch (timed or
// not), results written, everything freed. One file read into a host buffer (read = 1) or
// written from one: with the file helpers, or (HOST_INLINE programs) with stdio in main.
static const char io_inline_tpl[] = R"(
$alloc
FILE *$f = fopen("$x.bin", "$mode");
if (!$f || $call($h, sizeof($ct), $count, $f) != (size_t)$paren_count) {
    fprintf(stderr, "cannot $what $x.bin\n");
    return 1;
}
fclose($f);
)";
// The host buffer of tensor x: "std::vector<float> h_x(n);" in C++ programs, else
// "float *h_x = (float *)malloc(n * sizeof(float));".
static const char *host_buffer(const Task *t, const Tensor *x) {
    const char *ct = dt_ctypes[x->dt], *h = hname(t, x->name);
    if (is_cpp(t)) return fmt("std::vector<%s> %s(%s);", ct, h, count_expr(t, x));
    return fmt("%s *%s = (%s *)malloc(%s);", ct, h, ct, bytes_expr(t, x));
}
static void main_io(Emit *e, const Task *t, const Tensor *x, int read) {
    const char *ct = dt_ctypes[x->dt], *h = hname(t, x->name), *count = count_expr(t, x);
    if (is_cpp(t) && read)
        em_line(e, "std::vector<%s> %s = read_binary<%s>(\"%s.bin\", %s);", ct, h, ct, x->name, count);
    else if (is_cpp(t)) em_line(e, "write_binary(\"%s.bin\", %s);", x->name, h);
    else if (t->st.host == HOST_INLINE)
        TPL(e, t, io_inline_tpl, "alloc", read ? host_buffer(t, x) : "", "f", fmt("%c_%s", read ? 'f' : 'g', x->name),
            "x", x->name, "mode", read ? "rb" : "wb", "call", read ? "fread" : "fwrite", "h", h, "ct", ct,
            "count", count, "paren_count", paren(count), "what", read ? "read" : "write");
    else {
        if (read) em_line(e, "%s", host_buffer(t, x));
        em_line(e, "%s(\"%s.bin\", %s, %s);", io_name(t, read), x->name, h, bytes_expr(t, x));
    }
}

// From the files to the device: host buffers for every tensor (inputs read from their
// files), device buffers, the inputs copied over, accumulated outputs zeroed.
static void main_inputs(Emit *e, const Task *t, const struct Host *h) {
    int n = t->nin + t->nout;
    if (t->st.cmt != CMT_NONE)
        em_line(e, "// Inputs from %s", t->nin > 1 ? "their .bin files" : fmt("%s.bin", t->in[0].name));
    for (int k = 0; k < t->nin; k++) main_io(e, t, &t->in[k], 1);
    for (int k = 0; k < t->nout; k++) em_line(e, "%s", host_buffer(t, &t->out[k]));
    em_blank(e);
    if (t->st.cmt != CMT_NONE) em_line(e, "// Device buffers");
    const char *init = t->st.nullinit == 0 && is_cpp(t) ? " = nullptr" : t->st.nullinit <= 1 ? " = NULL" : "";
    for (int k = 0; k < n; k++) em_line(e, "%s *%s%s;", dt_ctypes[tensor_at(t, k)->dt], dev_buf(h, k), init);
    for (int k = 0; k < n; k++) em_line(e, "%s", malloc_call(t, dev_buf(h, k), bytes_expr(t, tensor_at(t, k))));
    for (int k = 0; k < t->nin; k++)
        host_call(e, t, "cudaMemcpy(%s, %s%s, %s, cudaMemcpyHostToDevice)", h->in[k], hname(t, t->in[k].name),
                  is_cpp(t) ? ".data()" : "", bytes_expr(t, &t->in[k]));
    for (int k = 0; k < t->nout; k++)
        if (t->out[k].zero_init) host_call(e, t, "cudaMemset(%s, 0, %s)", h->out[k], bytes_expr(t, &t->out[k]));
    em_blank(e);
}

// The launch (the launcher function's call, or the family's statements), timed with
// events in programs that time it, then the launch error and the synchronisation.
static void main_launch(Emit *e, const Task *t, const struct Host *h) {
    if (t->st.timing) {
        em_line(e, "cudaEvent_t start, stop;");
        host_call(e, t, "cudaEventCreate(&start)");
        host_call(e, t, "cudaEventCreate(&stop)");
        host_call(e, t, "cudaEventRecord(start)");
    }
    if (t->st.host == HOST_LAUNCHER) em_line(e, "run_%s(%s);", t->slug, buffer_size_list(h, h->launcher_sizes, 0));
    else {
        if (t->st.cmt != CMT_NONE) em_line(e, "// Launch");
        t->fam->launch(t, e, h);
    }
    if (t->st.timing) {
        host_call(e, t, "cudaEventRecord(stop)");
        host_call(e, t, "cudaEventSynchronize(stop)");
        em_line(e, "float ms = 0.0f;");
        host_call(e, t, "cudaEventElapsedTime(&ms, start, stop)");
        em_line(e, "printf(\"%s: %%.3f ms\\n\", ms);", t->kname[0]);
    }
    if (t->st.check == CHECK_LAST) {
        em_line(e, "cudaError_t err = cudaGetLastError();");
        em_line(e, "if (err == cudaSuccess) err = cudaDeviceSynchronize();");
        em_line(e, "if (err != cudaSuccess) {");
        em_in(e);
        em_line(e, "fprintf(stderr, \"CUDA error: %%s\\n\", cudaGetErrorString(err));");
        em_line(e, "return 1;");
        em_out(e);
        em_line(e, "}");
    } else {
        host_call(e, t, "cudaGetLastError()");
        host_call(e, t, "cudaDeviceSynchronize()");
    }
    em_blank(e);
}

// From the device to the files, then everything freed.
static void main_outputs(Emit *e, const Task *t, const struct Host *h) {
    if (t->st.cmt != CMT_NONE)
        em_line(e, "// Results to %s", t->nout > 1 ? "their .bin files" : fmt("%s.bin", t->out[0].name));
    for (int k = 0; k < t->nout; k++)
        host_call(e, t, "cudaMemcpy(%s%s, %s, %s, cudaMemcpyDeviceToHost)", hname(t, t->out[k].name),
                  is_cpp(t) ? ".data()" : "", h->out[k], bytes_expr(t, &t->out[k]));
    for (int k = 0; k < t->nout; k++) main_io(e, t, &t->out[k], 0);
    em_blank(e);
    if (t->st.timing) {
        host_call(e, t, "cudaEventDestroy(start)");
        host_call(e, t, "cudaEventDestroy(stop)");
    }
    for (int k = 0; k < t->nin + t->nout; k++) host_call(e, t, "cudaFree(%s)", dev_buf(h, k));
    for (int k = 0; !is_cpp(t) && k < t->nin + t->nout; k++) em_line(e, "free(%s);", hname(t, tensor_at(t, k)->name));
}

static const char *const main_heads[] = { "int main()", "int main(void)", "int main(int argc, char **argv)" };
static void emit_main(Emit *e, const Task *t, const struct Host *h) {
    const Style *s = &t->st;
    em_line(e, "%s {", main_heads[s->mainsig]);
    em_in(e);
    size_t head = e->b.len; // what main declares before its inputs, then a blank line
    if (s->mainsig == 2) {
        em_line(e, "(void)argc;");
        em_line(e, "(void)argv;");
    }
    for (int k = 0; s->sizes == SIZES_LOCAL && k < t->nsize; k++)
        em_line(e, size_decls[SIZES_LOCAL], size_name(t, k), size_value(t, k));
    for (int k = 0; s->bytesvar && k < t->nin + t->nout; k++) {
        const Tensor *x = tensor_at(t, k);
        em_line(e, "const size_t %s_bytes = %s;", x->name, count_bytes(count_expr(t, x), dt_ctypes[x->dt]));
    }
    if (e->b.len > head) em_blank(e);
    main_inputs(e, t, h);
    main_launch(e, t, h);
    main_outputs(e, t, h);
    if (s->done) em_line(e, "printf(\"%s done\\n\");", t->slug);
    em_line(e, "return 0;");
    em_out(e);
    em_line(e, "}");
}

// The launcher function of HOST_LAUNCHER programs, run_SLUG: the family's launch as its body,
// written first, since the function takes the sizes the body reads.
static void emit_launcher(Emit *e, const Task *t, struct Host *h) {
    Emit body;
    em_init(&body, e->iw);
    em_in(&body);
    t->fam->launch(t, &body, h);
    em_out(&body);
    for (int k = 0; k < t->nsize; k++) h->launcher_sizes |= (unsigned)mentions(buf_str(&body.b), h->size[k]) << k;
    em_comment(e, t, "Configures and launches the kernel(s); the caller synchronises.");
    em_line(e, "static void run_%s(%s) {", t->slug, buffer_size_list(h, h->launcher_sizes, 1));
    buf_putn(&e->b, body.b.s, body.b.len);
    em_line(e, "}");
    em_blank(e);
    em_free(&body);
}

// The whole program: a header comment (in some), the file top, the kernels, the file helpers
// (before the kernels in some programs), the launcher function of HOST_LAUNCHER programs, main.
static void emit_program(const Task *t, Emit *e) {
    const Style *s = &t->st;
    struct Host h = { .t = t };
    for (int k = 0; k < t->nin; k++) snprintf(h.in[k], sizeof h.in[k], "%s", dname(t, t->in[k].name));
    for (int k = 0; k < t->nout; k++) snprintf(h.out[k], sizeof h.out[k], "%s", dname(t, t->out[k].name));
    for (int k = 0; k < t->nsize; k++) snprintf(h.size[k], sizeof h.size[k], "%s", size_name(t, k));
    if (s->header) {
        Buf nm = { 0 }, desc = { 0 };
        t->fam->describe(t, &nm, &desc);
        if (s->cmt == CMT_BLOCK || s->cmt == CMT_DOXY) em_line(e, "/* %s.cu - %s */", t->slug, buf_str(&nm));
        else em_line(e, "// %s.cu: %s", t->slug, buf_str(&nm));
        em_blank(e);
        buf_free(&nm);
        buf_free(&desc);
    }
    emit_file_top(e, t);
    int helpers_first = (s->hostname + s->check) % 3 == 0;
    if (helpers_first) emit_io_helpers(e, t);
    t->fam->kernels(t, e);
    em_blank(e);
    if (!helpers_first) emit_io_helpers(e, t);
    if (s->host == HOST_LAUNCHER) emit_launcher(e, t, &h);
    emit_main(e, t, &h);
}

// ----------------------------------------------------------------------------
// The prompt

static const char *const gpu_lines[] = { "NVIDIA H200", "NVIDIA H200", "NVIDIA H200", "NVIDIA H200", "NVIDIA H200",
                                         "NVIDIA H200 (141 GB HBM3e)", "NVIDIA H100", "NVIDIA A100" };

static void tensor_list(Buf *b, const Tensor *x, int n) {
    for (int k = 0; k < n; k++) {
        buf_printf(b, "%s%s (%s, [", k ? ", " : "", x[k].name, dt_names[x[k].dt]);
        for (int d = 0; d < x[k].ndim; d++) buf_printf(b, "%s%ld", d ? ", " : "", x[k].shape[d]);
        buf_puts(b, "])");
    }
}

static void emit_prompt(const Task *t, Buf *p) {
    Buf nm = { 0 }, desc = { 0 };
    t->fam->describe(t, &nm, &desc);
    buf_printf(p, "Task Name: %s\nTask Description: %s\nInput: ", buf_str(&nm), buf_str(&desc));
    tensor_list(p, t->in, t->nin);
    buf_puts(p, "\nOutput: ");
    tensor_list(p, t->out, t->nout);
    buf_printf(p, "\nGPU: %s", gpu_lines[t->st.gpu]);
    buf_free(&nm);
    buf_free(&desc);
}

// ----------------------------------------------------------------------------
// Style drawing

static void style_draw(Style *s, Rng *r) {
    memset(s, 0, sizeof *s);
    s->host = rng_int(r, 0, HOST_COUNT - 1);
    s->sizes = rng_int(r, 0, 3);
    if (s->sizes == SIZES_CONSTEXPR && s->host != HOST_CPP) s->sizes = SIZES_GLOBAL;
    if (s->host == HOST_LAUNCHER) s->sizes = SIZES_LOCAL; // the launcher takes sizes as parameters
    s->check = rng_int(r, 0, 3);
    s->cmt = rng_int(r, 0, 3);
    s->verbose = s->cmt != CMT_NONE && rng_chance(r, 40);
    s->devname = rng_int(r, 0, 3);
    s->hostname = rng_int(r, 0, 3);
    s->restrict_ = rng_chance(r, 35);
    s->ptrstar = rng_chance(r, 40);
    s->allman = rng_chance(r, 20);
    s->iw = rng_chance(r, 25) ? 2 : 4;
    s->idxname = rng_int(r, 0, 3);
    s->idxtype = rng_chance(r, 20);
    s->bytesvar = rng_chance(r, 40);
    s->pow2 = rng_chance(r, 40);
    s->timing = rng_chance(r, 15);
    s->header = rng_chance(r, 50);
    s->mainsig = rng_int(r, 0, 2);
    s->nullinit = rng_int(r, 0, 2);
    s->cfg = rng_int(r, 0, 3);
    s->gpu = RPICK(r, gpu_lines);
    s->done = rng_chance(r, 20);
}

// The one style of `--style plain` corpora: shortest host code (I/O inline in main), no
// function or verbose comments (the few plain "//" lines of the templates stay); params_pin
// fixes the names. Drawn after style_draw, so the rest of a task's
// draws (and with them its parameters) are the same as in a varied corpus of the same seed.
static void style_plain(Style *s) {
    *s = (Style){ .host = HOST_INLINE, .sizes = SIZES_LOCAL, .check = CHECK_MACRO, .cmt = CMT_NONE, .iw = 4,
                  .gpu = s->gpu };
}

// ----------------------------------------------------------------------------
// JSON: writing

// The characters written as a backslash and a letter (JSON_ESC[k] as "\\" JSON_LETTER[k]).
static const char JSON_ESC[] = "\"\\\n\r\t\b\f", JSON_LETTER[] = "\"\\nrtbf";

static void json_str(Buf *b, const char *s, size_t n) {
    buf_putn(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = c ? strchr(JSON_ESC, c) : NULL;
        if (esc) buf_printf(b, "\\%c", JSON_LETTER[esc - JSON_ESC]);
        else if (c < 0x20 || c == 0x7f) buf_printf(b, "\\u%04x", c);
        else buf_putn(b, s + i, 1);
    }
    buf_putn(b, "\"", 1);
}
// `,"key":` (sep "," or "" before it).
static void json_key(Buf *b, const char *sep, const char *key) {
    buf_puts(b, sep);
    json_str(b, key, strlen(key));
    buf_puts(b, ":");
}
static void json_num(Buf *b, double v) {
    if (!isfinite(v)) die("json: non-finite number");
    if (v == floor(v) && fabs(v) < 1e15) { buf_printf(b, "%.0f", v); return; }
    char s[40];
    for (int prec = 9; prec <= 17; prec++) { // the shortest form that reads back exactly
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v) break;
    }
    buf_puts(b, s);
}
// A member with a string value, `,"key":"value"`, and one with a number value.
static void json_key_str(Buf *b, const char *sep, const char *key, const char *value) {
    json_key(b, sep, key);
    json_str(b, value, strlen(value));
}
static void json_key_num(Buf *b, const char *sep, const char *key, double v) {
    json_key(b, sep, key);
    json_num(b, v);
}

// The spec object: family, params, inputs (with how their data is drawn), outputs, seed,
// tolerance.
static void json_spec(Buf *b, const Task *t) {
    const Family *f = t->fam;
    int n = 0;
    json_key_str(b, "{", "family", f->name);
    json_key(b, ",", "params");
    buf_puts(b, "{");
    for (int k = 0; f->ip[k].name; k++) {
        const char *sep = n++ ? "," : "";
        if (f->ip[k].values) json_key_str(b, sep, f->ip[k].name, f->ip[k].values[t->p[k]]);
        else json_key_num(b, sep, f->ip[k].name, t->p[k]); // a whole number: written as %d writes it
    }
    for (int k = 0; f->fp && f->fp[k]; k++) json_key_num(b, n++ ? "," : "", f->fp[k], t->f[k]);
    buf_puts(b, "},\"inputs\":[");
    for (int k = 0; k < t->nin + t->nout; k++) {
        const Tensor *x = tensor_at(t, k);
        buf_puts(b, k == t->nin ? "],\"outputs\":[" : k ? "," : "");
        json_key_str(b, "{", "name", x->name);
        buf_printf(b, ",\"dtype\":\"%s\",\"shape\":[", dt_names[x->dt]);
        for (int d = 0; d < x->ndim; d++) buf_printf(b, "%s%ld", d ? "," : "", x->shape[d]);
        buf_puts(b, "]");
        if (k < t->nin) {
            json_key_num(b, ",", "lo", x->lo);
            json_key_num(b, ",", "hi", x->hi);
            buf_printf(b, ",\"integer\":%s,\"gen\":\"%s\"", x->integer ? "true" : "false", gen_names[x->gen]);
            if (x->grid > 0) {
                json_key_num(b, ",", "grid", x->grid);
                json_key_num(b, ",", "on_grid", x->on_grid);
            }
            if (x->grid > 0) {
                json_key_num(b, ",", "grid", x->grid);
                json_key_num(b, ",", "on_grid", x->on_grid);
            }
        }
        buf_puts(b, "}");
    }
    buf_printf(b, "],\"seed\":%llu", (unsigned long long)t->seed);
    json_key_num(b, ",", "atol", t->atol);
    json_key_num(b, ",", "rtol", t->rtol);
    buf_puts(b, "}");
}

#endif // CORPUS_H
