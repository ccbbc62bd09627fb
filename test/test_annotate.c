// test_annotate.c - tests for the CUDA-sensitivity annotator (cuset.h).
//   gcc -std=gnu11 -O1 -g -fsanitize=address,undefined -Wall -Wextra -o /tmp/test_annotate test/test_annotate.c
//   test/test_annotate [path/to/cudabench-dev.jsonl]   (default ../shared/cudabench/..., or $CUSET_CUDABENCH)
// Prints "PASS name" / "FAIL name: why" / "SKIP name: why" per check; exits 1 if any failed.
// Three parts: hand-written cases with exact spans, a sweep over the real CUDABench
// programs (checked against an independent little scanner written here), and a random
// robustness loop (random and mutated snippets) plus a few worst-case timing inputs.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int n_fail, n_pass;

static void pass(const char *name) { printf("PASS %s\n", name); n_pass++; }
static void fail(const char *name, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s: ", name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    n_fail++;
}

// ----------------------------------------------------------------------------
// Invariants every answer must satisfy, whatever the input

// Returns NULL when the spans are in bounds, non-empty, sorted and of known kinds and
// the flags agree with a naive union; else a static message.
static const char *invariant_error(size_t len, const CusetSpan *sp, size_t n) {
    for (size_t k = 0; k < n; k++) {
        if (sp[k].start >= sp[k].end) return "span with start >= end";
        if (sp[k].end > len) return "span past the end of input";
        if (sp[k].kind < CUSET_SPAN_GLOBAL_DEF || sp[k].kind > CUSET_SPAN_DIM3) return "unknown kind";
        if (k && sp[k - 1].start > sp[k].start) return "spans not sorted by start";
        if (k && sp[k - 1].start == sp[k].start && sp[k - 1].end < sp[k].end) return "equal starts not outer first";
    }
    unsigned char *flags = malloc(len + 1), *naive = calloc(len + 1, 1);
    cuset_span_flags(sp, n, flags, len);
    for (size_t k = 0; k < n; k++)
        for (size_t b = sp[k].start; b < sp[k].end && b < len; b++) naive[b] = 1;
    int same = len == 0 || memcmp(flags, naive, len) == 0;
    free(flags);
    free(naive);
    return same ? NULL : "cuset_span_flags differs from the naive union";
}

// ----------------------------------------------------------------------------
// Hand-written cases with exact expected spans

typedef struct { CusetSpanKind kind; const char *text; } Want;
#define G CUSET_SPAN_GLOBAL_DEF
#define D CUSET_SPAN_DEVICE_DEF
#define L CUSET_SPAN_LAUNCH
#define M CUSET_SPAN_DIM3

static void print_got(const char *src, const CusetSpan *sp, size_t n) {
    for (size_t k = 0; k < n; k++)
        printf("    got %s [%zu,%zu) \"%.*s\"\n", cuset_span_kind_name(sp[k].kind), sp[k].start, sp[k].end,
               (int)(sp[k].end - sp[k].start), src + sp[k].start);
}

static void expect_spans(const char *name, const char *src, const Want *want, size_t nwant) {
    size_t len = strlen(src);
    char *copy = malloc(len ? len : 1); // exact size, so a read past len is caught by ASan
    memcpy(copy, src, len);
    CusetSpan *sp = NULL;
    size_t n = cuset_annotate(copy, len, &sp);
    const char *bad = invariant_error(len, sp, n);
    if ((size_t)arrlen(sp) != n) fail(name, "returned %zu but appended %td", n, arrlen(sp));
    else if (bad) fail(name, "%s", bad);
    else if (n != nwant) { fail(name, "expected %zu spans, got %zu", nwant, n); print_got(src, sp, n); }
    else {
        for (size_t k = 0; k < n; k++) {
            size_t wl = strlen(want[k].text);
            if (sp[k].kind != want[k].kind || sp[k].end - sp[k].start != wl || memcmp(src + sp[k].start, want[k].text, wl)) {
                fail(name, "span %zu: expected %s \"%s\"", k, cuset_span_kind_name(want[k].kind), want[k].text);
                print_got(src, sp, n);
                goto done;
            }
        }
        pass(name);
    }
done:
    arrfree(sp);
    free(copy);
}

// EXPECT(name, src, {kind, "exact text"}, ...): the spans of src, in output order.
#define EXPECT(name, src, ...) do { \
        Want w_[] = { { 0, NULL }, __VA_ARGS__ }; \
        expect_spans(name, src, w_ + 1, sizeof w_ / sizeof *w_ - 1); \
    } while (0)

// The source texts of the hand-written cases, reused as seeds by the random loop.
static const char *seeds[64];
static size_t nseeds;
#define SEED(s) (seeds[nseeds < 64 ? nseeds++ : 63] = (s))

static void hand_written_cases(void) {
    EXPECT("empty input", SEED(""));
    EXPECT("whitespace and comments only", SEED("  \n// __global__ void k() {}\n/* dim3 g(1); */\n"));
    EXPECT("simple kernel", SEED("__global__ void k(float *x) { x[0] = 1; }"),
           { G, "__global__ void k(float *x) { x[0] = 1; }" });
    EXPECT("host main and host functions: no span",
           SEED("#include <stdio.h>\nstatic int add(int a, int b) { return a + b; }\n"
                "struct P { int x; int get() const { return x; } };\n"
                "int main(int argc, char **argv) { printf(\"%d\\n\", add(1, 2)); return 0; }\n"));
    EXPECT("braces, <<<, __global__ and dim3 in comments, strings and chars",
           SEED("// __global__ void f() {\n/* } __global__ k<<<1,1>>>(); dim3 g(1); */\n"
                "const char *s = \"__global__ void g() { k<<<1,1>>>(); } \\\" }\";\n"
                "__global__ void k(char *o) { o[0] = '}'; o[1] = '\\''; o[2] = \"{\\\"}\"[0]; /* } */ // }\n}\n"
                "char c = '{';\n"),
           { G, "__global__ void k(char *o) { o[0] = '}'; o[1] = '\\''; o[2] = \"{\\\"}\"[0]; /* } */ // }\n}" });
    EXPECT("preprocessor lines are skipped, multi-line macros as a unit",
           SEED("#define KERNEL __global__ void m() {\n"
                "#define LAUNCH(k) \\\n  k<<<1, 1>>>(); \\\n  dim3 g(1); {\n"
                "  # define SPACED __device__ }\n"
                "/* c */ #define AFTER_COMMENT {\n"
                "__device__ int f(int x) {\n#pragma unroll\n  for (int i = 0; i < 4; i++) x += i;\n  return x;\n}\n"),
           { D, "__device__ int f(int x) {\n#pragma unroll\n  for (int i = 0; i < 4; i++) x += i;\n  return x;\n}" });
    EXPECT("template kernel: span starts at template",
           SEED("#include <cuda.h>\n// doc comment\ntemplate <typename T, int N>\n__global__ void k(T *x) { x[N] = T(0); }\n"),
           { G, "template <typename T, int N>\n__global__ void k(T *x) { x[N] = T(0); }" });
    EXPECT("extern \"C\" and __launch_bounds__(256, 2)",
           SEED("int n;\nextern \"C\" __global__ void __launch_bounds__(256, 2) k(float *x) { x[0] = 0; }\n"
                "extern \"C\" { __global__ void k2(int *y) { } }\n"),
           { G, "extern \"C\" __global__ void __launch_bounds__(256, 2) k(float *x) { x[0] = 0; }" },
           { G, "__global__ void k2(int *y) { }" });
    EXPECT("static __host__ __device__ __forceinline__ is a device function",
           SEED("static __host__ __device__ __forceinline__ float sq(float x) { return x * x; }\n"
                "__device__ __host__ inline int one() { return 1; }"),
           { D, "static __host__ __device__ __forceinline__ float sq(float x) { return x * x; }" },
           { D, "__device__ __host__ inline int one() { return 1; }" });
    EXPECT("prototypes and __device__ variables are not spans",
           SEED("__global__ void k(float *x);\n__device__ int counter;\n__device__ float table[3] = {1, 2, 3};\n"
                "__device__ float g(float);\n__device__ int arr2[2]{4, 5};\n__device__ void h() = delete;\n"
                "__device__ int (*fp)(int) = nullptr;\n"));
    EXPECT("launch with template arguments and four config values",
           SEED("void run() { k<float, 4><<<g, b, smem, stream>>>(a, b); }"),
           { L, "k<float, 4><<<g, b, smem, stream>>>(a, b);" });
    EXPECT("shift inside the launch configuration",
           SEED("k<<<(n+255)>>8, 256>>>();\nk<<<n/256, 256>>>(x);\nk<<<n >> 2, 32>>>(x>>1);"),
           { L, "k<<<(n+255)>>8, 256>>>();" }, { L, "k<<<n/256, 256>>>(x);" }, { L, "k<<<n >> 2, 32>>>(x>>1);" });
    EXPECT("nested parentheses in launch arguments, qualified names",
           SEED("int main() {\n  k<<<grid, block>>>(f(a, (b + c)), g[h(1)], \")\");\n  ns::k2<<<1, 1>>>();\n"
                "  ::k3 <<< 1, 1 >>> ( x ) ;\n  tbl[i]<<<1, 1>>>(y);\n  (fp)<<<1, 1>>>(z);\n  return 0;\n}\n"),
           { L, "k<<<grid, block>>>(f(a, (b + c)), g[h(1)], \")\");" }, { L, "ns::k2<<<1, 1>>>();" },
           { L, "::k3 <<< 1, 1 >>> ( x ) ;" }, { L, "tbl[i]<<<1, 1>>>(y);" }, { L, "(fp)<<<1, 1>>>(z);" });
    EXPECT("dim3 declarations, not dim3 expressions or parameters",
           SEED("void f(dim3 p, int n) {\n  dim3 grid(n);\n  dim3 b = dim3(16,16);\n  dim3 a(1), c(2);\n"
                "  const dim3 t{8, 8};\n  foo(dim3(1));\n  auto z = dim3(2);\n  dim3 grid_for(int n);\n  dim3 none();\n}\n"
                "dim3 make(int n) { return dim3(n); }\n"),
           { M, "dim3 grid(n);" }, { M, "dim3 b = dim3(16,16);" }, { M, "dim3 a(1), c(2);" },
           { M, "const dim3 t{8, 8};" });
    EXPECT("dynamic parallelism: nested launch and dim3 are reported too",
           SEED("__global__ void parent(int *x) {\n  dim3 g(2);\n  child<<<g, 32>>>(x);\n}\n"),
           { G, "__global__ void parent(int *x) {\n  dim3 g(2);\n  child<<<g, 32>>>(x);\n}" },
           { M, "dim3 g(2);" }, { L, "child<<<g, 32>>>(x);" });
    EXPECT("unterminated body ends at end of input",
           SEED("int a;\n__global__ void k(int *x) { if (x) { x[0] = 1;\n"),
           { G, "__global__ void k(int *x) { if (x) { x[0] = 1;\n" });
    EXPECT("unterminated launch ends at end of input",
           SEED("int main() { k<<<1, 2>>>(a, f(b"),
           { L, "k<<<1, 2>>>(a, f(b" });
    EXPECT("unterminated comment, string and signature: no span, no crash",
           SEED("__global__ void k(int *x /* oops { }"));
    EXPECT("unterminated string stops at its line",
           SEED("const char *s = \"abc {\nint x;\n__global__ void k() {}\n"),
           { G, "__global__ void k() {}" });
    EXPECT("extended lambdas in host code are not definitions",
           SEED("void h() {\n  auto f = [=] __device__ (int i) { return i; };\n"
                "  thrust::for_each(v.begin(), v.end(), [] __host__ __device__ (int &i) { i++; });\n}\n"));
    EXPECT("member functions, constructor initialisers, operators",
           SEED("struct S {\n  int x, y;\npublic:\n  __device__ S(int a) : x{a}, y(a + 1) { }\n"
                "  __device__ int get() const { return x; }\n  __device__ S &operator=(const S &o) { x = o.x; return *this; }\n"
                "  __host__ __device__ bool operator==(const S &o) const { return x == o.x; }\n};\n"),
           { D, "__device__ S(int a) : x{a}, y(a + 1) { }" }, { D, "__device__ int get() const { return x; }" },
           { D, "__device__ S &operator=(const S &o) { x = o.x; return *this; }" },
           { D, "__host__ __device__ bool operator==(const S &o) const { return x == o.x; }" });
    EXPECT("attributes before and after the execution space",
           SEED("[[nodiscard]] __device__ int f() { return 1; }\n"
                "__attribute__((always_inline)) __device__ __attribute__((noinline)) int g() { return 2; }\n"),
           { D, "[[nodiscard]] __device__ int f() { return 1; }" },
           { D, "__attribute__((always_inline)) __device__ __attribute__((noinline)) int g() { return 2; }" });
    EXPECT("raw strings and digit separators",
           SEED("const char *r = R\"x(__global__ void k() { )\" })x\";\nint n = 1'000'000;\n"
                "__global__ void k() { int m = 0x1'0; }\n"),
           { G, "__global__ void k() { int m = 0x1'0; }" });
    EXPECT("merge marker and shift operators are not launches",
           SEED("<<<<<<< HEAD\nint a = b << 2;\n=======\nint a = b >> 2;\n>>>>>>> branch\n"));
    EXPECT("launch in a condition and inside a call",
           SEED("void f() {\n  if (n > 0) k<<<1, 1>>>(a);\n  CHECK(k2<<<1, 1>>>(b));\n}\n"),
           { L, "k<<<1, 1>>>(a);" }, { L, "k2<<<1, 1>>>(b)" });
    EXPECT("template specialisation and __device__ template with enable_if",
           SEED("template <>\n__global__ void k<float>(float *x) { }\n"
                "template <int N> __device__ std::enable_if_t<N == 2, int> f() { return N; }\n"),
           { G, "template <>\n__global__ void k<float>(float *x) { }" },
           { D, "template <int N> __device__ std::enable_if_t<N == 2, int> f() { return N; }" });
    EXPECT("CRLF line endings and continued macro",
           SEED("#define X \\\r\n  { __global__\r\n__global__ void k()\r\n{\r\n}\r\n"),
           { G, "__global__ void k()\r\n{\r\n}" });
    EXPECT("namespace and a previous function: span starts after the boundary",
           SEED("namespace ns {\nint h() { return 0; }\n__device__ float g(float v) { return v; }\n}\n"),
           { D, "__device__ float g(float v) { return v; }" });
    EXPECT("kernel expressions: call, parenthesised after if, member",
           SEED("void f() {\n  pick(3)<<<1, 1>>>(x);\n  if (c) (fp)<<<1, 1>>>(x);\n  while (c) (*fp)<<<1, 1>>>(x);\n"
                "  obj.k<<<1, 1>>>(x);\n  p->k<<<1, 1>>>(x);\n  ns::template k<T><<<1, 1>>>(x);\n}\n"),
           { L, "pick(3)<<<1, 1>>>(x);" }, { L, "(fp)<<<1, 1>>>(x);" }, { L, "(*fp)<<<1, 1>>>(x);" },
           { L, "obj.k<<<1, 1>>>(x);" }, { L, "p->k<<<1, 1>>>(x);" }, { L, "ns::template k<T><<<1, 1>>>(x);" });
    EXPECT("UTF-8 byte order mark and non-ASCII text",
           SEED("\xEF\xBB\xBF__global__ void k() { /* \xC3\xA9 */ }\nint caf\xC3\xA9 = 1;\n"),
           { G, "__global__ void k() { /* \xC3\xA9 */ }" });
    EXPECT("template arguments of a launched kernel with nested <>",
           SEED("k<A<int>, (3 > 2)><<<1, 1>>>();"),
           { L, "k<A<int>, (3 > 2)><<<1, 1>>>();" });

    // cuset_span_flags on a small case, checked byte by byte
    {
        const char *src = "int a; dim3 g(1); int b;";
        CusetSpan *sp = NULL;
        size_t n = cuset_annotate(src, strlen(src), &sp);
        unsigned char flags[32];
        cuset_span_flags(sp, n, flags, strlen(src));
        char got[33] = { 0 }, want[] = "       1111111111       ";
        want[strlen(src)] = 0;
        for (size_t i = 0; i < strlen(src); i++) got[i] = flags[i] ? '1' : ' ';
        if (strcmp(got, want)) fail("span flags", "got \"%s\", want \"%s\"", got, want);
        else pass("span flags");
        arrfree(sp);
    }
    // appending to a non-empty array keeps what was there
    {
        CusetSpan *sp = NULL;
        CusetSpan old = { 1, 2, CUSET_SPAN_DIM3 };
        arrput(sp, old);
        size_t n = cuset_annotate("dim3 g;", 7, &sp);
        if (n != 1 || arrlen(sp) != 2 || sp[0].start != 1 || sp[1].end != 7) fail("appends", "n=%zu len=%td", n, arrlen(sp));
        else pass("appends");
        arrfree(sp);
    }
}

// ----------------------------------------------------------------------------
// The CUDABench sweep

// Decodes the JSON string whose opening quote is at p into a malloc'd buffer; *len gets
// its length. Handles \n \t \r \b \f \" \\ \/ and \uXXXX (surrogate pairs too) to UTF-8.
static char *json_unescape(const char *p, size_t *len) {
    size_t cap = strlen(p) + 1, n = 0;
    char *out = malloc(cap);
    p++;
    while (*p && *p != '"') {
        if (*p != '\\') { out[n++] = *p++; continue; }
        p++;
        switch (*p) {
        case 'n': out[n++] = '\n'; p++; break;
        case 't': out[n++] = '\t'; p++; break;
        case 'r': out[n++] = '\r'; p++; break;
        case 'b': out[n++] = '\b'; p++; break;
        case 'f': out[n++] = '\f'; p++; break;
        case 'u': {
            unsigned cp = 0;
            for (int k = 1; k <= 4 && p[k]; k++) cp = cp * 16 + (unsigned)(strchr("0123456789abcdef", p[k] | 32) - "0123456789abcdef");
            p += 5;
            if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') { // surrogate pair
                unsigned lo = 0;
                for (int k = 2; k <= 5 && p[k]; k++) lo = lo * 16 + (unsigned)(strchr("0123456789abcdef", p[k] | 32) - "0123456789abcdef");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            if (cp < 0x80) out[n++] = (char)cp;
            else if (cp < 0x800) { out[n++] = (char)(0xC0 | cp >> 6); out[n++] = (char)(0x80 | (cp & 63)); }
            else if (cp < 0x10000) { out[n++] = (char)(0xE0 | cp >> 12); out[n++] = (char)(0x80 | (cp >> 6 & 63)); out[n++] = (char)(0x80 | (cp & 63)); }
            else { out[n++] = (char)(0xF0 | cp >> 18); out[n++] = (char)(0x80 | (cp >> 12 & 63)); out[n++] = (char)(0x80 | (cp >> 6 & 63)); out[n++] = (char)(0x80 | (cp & 63)); }
            break;
        }
        default: if (*p) out[n++] = *p++; // \" \\ \/
        }
    }
    out[n] = 0;
    *len = n;
    return out;
}

// The value of the "bench.cu" field of one JSON line, or NULL.
static char *bench_cu(const char *line, size_t *len) {
    for (const char *p = strstr(line, "\"bench.cu\""); p; p = strstr(p + 1, "\"bench.cu\"")) {
        const char *q = p + 10;
        while (*q == ' ') q++;
        if (*q != ':') continue;
        q++;
        while (*q == ' ') q++;
        if (*q == '"') return json_unescape(q, len);
    }
    return NULL;
}

// An independent blanker: a copy of src in which comments, string and character
// literals and preprocessor lines are spaces (newlines kept), one byte at a time.
static char *blank_non_code(const char *src, size_t len) {
    enum { CODE, LINE_COMMENT, BLOCK_COMMENT, STR, CHR, DIRECTIVE } state = CODE;
    char *out = malloc(len + 1);
    int line_blank = 1; // only blanks so far on this line
    for (size_t i = 0; i < len; i++) {
        char c = src[i], nx = i + 1 < len ? src[i + 1] : 0;
        out[i] = c == '\n' ? '\n' : ' ';
        switch (state) {
        case CODE:
            if (c == '/' && nx == '/') state = LINE_COMMENT;
            else if (c == '/' && nx == '*') { state = BLOCK_COMMENT; out[++i] = ' '; }
            else if (c == '"') state = STR;
            else if (c == '\'') state = CHR;
            else if (c == '#' && line_blank) state = DIRECTIVE;
            else out[i] = c;
            break;
        case LINE_COMMENT: case DIRECTIVE:
            if (c == '\\' && nx == '\n') out[++i] = '\n';
            else if (c == '\n') state = CODE;
            break;
        case BLOCK_COMMENT:
            if (c == '*' && nx == '/') { state = CODE; out[++i] = ' '; }
            break;
        case STR: case CHR:
            if (c == '\\' && i + 1 < len) { i++; out[i] = src[i] == '\n' ? '\n' : ' '; }
            else if (c == (state == STR ? '"' : '\'') || c == '\n') state = CODE;
            break;
        }
        if (c == '\n') line_blank = 1;
        else if (c != ' ' && c != '\t' && state != BLOCK_COMMENT) line_blank = 0;
    }
    out[len] = 0;
    return out;
}

static int is_id(char c) { return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'); }

// Is the whole word w at s[i]?
static int word_at(const char *s, size_t len, size_t i, const char *w) {
    size_t n = strlen(w);
    if (i + n > len || memcmp(s + i, w, n)) return 0;
    return !(i > 0 && is_id(s[i - 1])) && !(i + n < len && is_id(s[i + n]));
}

static int inside_kind(const CusetSpan *sp, size_t n, size_t pos, CusetSpanKind kind) {
    for (size_t k = 0; k < n; k++)
        if (sp[k].kind == kind && sp[k].start <= pos && pos < sp[k].end) return 1;
    return 0;
}

static void cudabench_sweep(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { printf("SKIP cudabench: %s not found\n", path); return; }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    size_t programs = 0, counted_defs = 0, protos = 0, counted_dev = 0, launches_seen = 0, dim3_seen = 0;
    size_t kinds[5] = { 0 }, bad_programs = 0;
    while ((got = getline(&line, &cap, f)) > 0) {
        size_t len;
        char *src = bench_cu(line, &len);
        if (!src) continue;
        programs++;
        char name[64];
        snprintf(name, sizeof name, "cudabench line %zu", programs);
        CusetSpan *sp = NULL;
        size_t n = cuset_annotate(src, len, &sp);
        char *code = blank_non_code(src, len);
        const char *bad = invariant_error(len, sp, n);
        char why[256] = "";
        if (bad) snprintf(why, sizeof why, "%s", bad);
        size_t kind_here[5] = { 0 }, defs = 0, devs = 0;
        for (size_t k = 0; k < n; k++) {
            kind_here[sp[k].kind]++;
            size_t a = sp[k].start, b = sp[k].end;
            for (size_t i = a; i + 9 <= b; i++)
                if (!memcmp(src + i, "int main(", 9) && !*why) snprintf(why, sizeof why, "span %zu contains int main(", k);
            if ((sp[k].kind == L || sp[k].kind == M) && src[b - 1] != ';' && !*why) snprintf(why, sizeof why, "span %zu does not end in ';'", k);
            if ((sp[k].kind == G || sp[k].kind == D) && src[b - 1] != '}' && !*why) snprintf(why, sizeof why, "span %zu does not end in '}'", k);
        }
        for (size_t i = 0; i < len; i++) {
            // a __global__ / __device__ keyword: a definition when '{' comes before ';' (and '=')
            int glob = word_at(code, len, i, "__global__"), dev = word_at(code, len, i, "__device__");
            if (glob || dev) {
                size_t j = i + 10;
                while (j < len && code[j] != '{' && code[j] != ';' && code[j] != '=') j++;
                int def = j < len && code[j] == '{';
                if (glob) { if (def) defs++; else protos++; }
                if (dev && def) devs++;
            }
            // every <<< in code lies in a launch span
            if (code[i] == '<' && i + 2 < len && code[i + 1] == '<' && code[i + 2] == '<' && (i == 0 || code[i - 1] != '<')) {
                launches_seen++;
                if (!inside_kind(sp, n, i, L) && !*why) snprintf(why, sizeof why, "<<< at byte %zu outside every launch span", i);
            }
            // "dim3 name" starting a statement lies in a dim3 span
            if (word_at(code, len, i, "dim3")) {
                size_t j = i + 4, p = i;
                while (j < len && (code[j] == ' ' || code[j] == '\t' || code[j] == '\n')) j++;
                while (p > 0 && (code[p - 1] == ' ' || code[p - 1] == '\t' || code[p - 1] == '\n')) p--;
                int named = j > i + 4 && j < len && is_id(code[j]) && !(code[j] >= '0' && code[j] <= '9');
                int starts = p == 0 || strchr(";{}", code[p - 1]) || (p >= 5 && !memcmp(code + p - 5, "const", 5));
                if (named && starts) {
                    dim3_seen++;
                    if (!inside_kind(sp, n, i, M) && !*why) snprintf(why, sizeof why, "dim3 at byte %zu outside every dim3 span", i);
                }
            }
        }
        counted_defs += defs;
        counted_dev += devs;
        if (defs != kind_here[G] && !*why) snprintf(why, sizeof why, "%zu __global__ definitions counted, %zu GLOBAL_DEF spans", defs, kind_here[G]);
        if (devs != kind_here[D] && !*why) snprintf(why, sizeof why, "%zu __device__ definitions counted, %zu DEVICE_DEF spans", devs, kind_here[D]);
        for (int k = 1; k <= 4; k++) kinds[k] += kind_here[k];
        if (*why) { fail(name, "%s", why); print_got(src, sp, n); bad_programs++; }
        free(code);
        free(src);
        arrfree(sp);
    }
    free(line);
    fclose(f);
    if (programs == 0) { fail("cudabench", "no \"bench.cu\" field found in %s", path); return; }
    printf("INFO cudabench: %zu programs; spans: %zu global defs, %zu device defs, %zu launches, %zu dim3; "
           "independent count: %zu __global__ definitions (+%zu prototypes), %zu __device__ definitions, %zu <<<, %zu dim3 statements\n",
           programs, kinds[G], kinds[D], kinds[L], kinds[M], counted_defs, protos, counted_dev, launches_seen, dim3_seen);
    if (bad_programs == 0) pass("cudabench sweep");
    else fail("cudabench sweep", "%zu of %zu programs disagree", bad_programs, programs);
}

// ----------------------------------------------------------------------------
// Random robustness

static uint64_t rng_state;
static uint64_t rng(void) { // xorshift64*
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static size_t rnd(size_t n) { return n ? (size_t)(rng() % n) : 0; }

static const char *fragments[] = {
    "__global__ ", "__device__ ", "__host__ ", "dim3 ", "<<<", ">>>", ">>", "{", "}", "(", ")", "[", "]", ";", "\"", "'",
    "\\", "/*", "*/", "//", "\n", "#define X ", "#", "\\\n", "template<", "<", ">", "=", "==", ":", "::", ",", "R\"x(",
    ")x\"", "k", "void ", "int ", " ", "1'0", "extern \"C\" ", "__launch_bounds__(", "[]", "[[", "]]", "operator",
    "public:", "const ", "g(1)", "f(x)", ".", "->", "\r\n", "0x1p-3", "\xc3\xa9", "\0",
};
#define NFRAG (sizeof fragments / sizeof *fragments)

// Appends a random snippet to *buf (stb_ds array of char).
static void random_snippet(char **buf, const char **bench, size_t nbench) {
    int mode = (int)rnd(3);
    if (mode == 0) { // random bytes, biased to the interesting ones
        size_t n = rnd(400);
        for (size_t i = 0; i < n; i++) arrput(*buf, rnd(4) ? "{}()<>;\"'/*\\\n# _k:=,[]"[rnd(23)] : (char)rnd(256));
    } else if (mode == 1) { // random fragments
        size_t n = rnd(120);
        for (size_t i = 0; i < n; i++) {
            size_t f = rnd(NFRAG);
            const char *s = fragments[f];
            size_t l = f == NFRAG - 1 ? 1 : strlen(s);
            for (size_t k = 0; k < l; k++) arrput(*buf, s[k]);
        }
    } else { // a seed or a real program with random edits
        const char *s = (nbench && rnd(2)) ? bench[rnd(nbench)] : seeds[rnd(nseeds)];
        for (const char *p = s; *p; p++) arrput(*buf, *p);
        size_t edits = 1 + rnd(8);
        for (size_t e = 0; e < edits; e++) {
            size_t n = (size_t)arrlen(*buf), at = rnd(n + 1);
            switch (rnd(4)) {
            case 0: // delete a run (stb_ds macros evaluate their arguments more than once)
                if (n) { size_t from = at < n ? at : n - 1, cnt = 1 + rnd(n - from); arrdeln(*buf, from, cnt); }
                break;
            case 1: { const char *f = fragments[rnd(NFRAG - 1)]; arrinsn(*buf, at, strlen(f)); memcpy(*buf + at, f, strlen(f)); } break;
            case 2: arrsetlen(*buf, at); break; // truncate
            default: if (n) (*buf)[rnd(n)] = (char)rnd(256); // flip a byte
            }
        }
    }
}

static void random_robustness(const char **bench, size_t nbench) {
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (getenv("CUSET_SEED")) seed = strtoull(getenv("CUSET_SEED"), NULL, 0);
    rng_state = seed ? seed : 1;
    printf("INFO random robustness: seed %llu (rerun with CUSET_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    const int iters = 20000;
    for (int it = 0; it < iters; it++) {
        char *buf = NULL;
        random_snippet(&buf, bench, nbench);
        size_t len = (size_t)arrlen(buf);
        char *exact = malloc(len ? len : 1); // exact size: ASan catches a read past len
        if (len) memcpy(exact, buf, len);
        CusetSpan *sp = NULL, *again = NULL;
        size_t n = cuset_annotate(exact, len, &sp);
        size_t n2 = cuset_annotate(exact, len, &again);
        const char *bad = invariant_error(len, sp, n);
        if (!bad && n != n2) bad = "two runs differ";
        for (size_t k = 0; !bad && k < n; k++)
            if (sp[k].start != again[k].start || sp[k].end != again[k].end || sp[k].kind != again[k].kind) bad = "two runs differ";
        if (bad) {
            fail("random robustness", "iteration %d: %s; input (%zu bytes): \"%.*s\"", it, bad, len, (int)len, exact);
            arrfree(buf); arrfree(sp); arrfree(again); free(exact);
            return;
        }
        arrfree(buf); arrfree(sp); arrfree(again); free(exact);
    }
    pass("random robustness");
}

// Worst-case inputs: each is one pattern repeated to about 1 MB; a quadratic scan
// would take minutes, a linear one milliseconds.
static void worst_cases(void) {
    static const char *patterns[][2] = { // { repeated part, tail }
        { "<<<", "" }, { "k<<<", "" }, { "a> <<< ", "" }, { "k<<<(", "" }, { "k<<<1,1>>>(", "" },
        { "__device__ ", "" }, { "[] __device__ ", "" }, { "__global__ void k(", "" }, { "__global__ void k() {", "" },
        { "__device__ int x : a(", "" }, { "(", "" }, { "[", "" }, { "{", "" }, { "}", "" }, { ")", "" },
        { "dim3 ", "" }, { "const dim3 x ", "" }, { "dim3 a = (", "" }, { "dim3 a(1) ", "{" }, { "dim3 f(int) ", "" },
        { "template<", "" }, { "a<b<c ", "" }, { "x>", "<<<" }, { "a[1]", "<<<" }, { "k<a<<<", "" },
        { "/*", "" }, { "\"", "" }, { "'", "" }, { "#", "" }, { "R\"(", "" }, { ")", "R\"abcdefghijklmnop(" } };
    for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++) {
        const char *pat = patterns[p][0], *tail = patterns[p][1];
        size_t pl = strlen(pat), tl = strlen(tail), reps = (1u << 20) / pl, len = reps * pl + tl;
        char *src = malloc(len);
        size_t at = 0;
        if (!strcmp(pat, ")")) { memcpy(src, tail, tl); at = tl; } // the raw string opens first
        for (size_t r = 0; r < reps; r++, at += pl) memcpy(src + at, pat, pl);
        if (at < len) memcpy(src + at, tail, tl);
        clock_t t0 = clock();
        CusetSpan *sp = NULL;
        size_t n = cuset_annotate(src, len, &sp);
        double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
        const char *bad = invariant_error(len, sp, n);
        char name[128];
        snprintf(name, sizeof name, "worst case \"%s\" x %zu + \"%s\" (%.2fs, %zu spans)", pat, reps, tail, sec, n);
        if (bad) fail(name, "%s", bad);
        else if (sec > 5.0) fail(name, "too slow: not linear?");
        else pass(name);
        arrfree(sp);
        free(src);
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    // the benchmark beside the repository (tests run from its root), or as the argument / $CUSET_CUDABENCH
    const char *path = argc > 1 ? argv[1] : getenv("CUSET_CUDABENCH");
    if (!path) path = "../shared/cudabench/cudabench-dev.jsonl";
    hand_written_cases();
    cudabench_sweep(path);

    // real programs as material for the random mutations
    const char **bench = NULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        char *line = NULL;
        size_t cap = 0, len;
        while (getline(&line, &cap, f) > 0 && arrlen(bench) < 64) {
            char *src = bench_cu(line, &len);
            if (src) arrput(bench, src);
        }
        free(line);
        fclose(f);
    }
    random_robustness(bench, (size_t)arrlen(bench));
    for (ptrdiff_t k = 0; k < arrlen(bench); k++) free((void *)bench[k]);
    arrfree(bench);

    worst_cases();
    printf("# test_annotate: %d checks passed, %d checks failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
