// nvcc-emu.c - builds a CUDA C++ program (.cu) into a CPU executable with the emulator
// runtime (emu/cuemu.h), the way nvcc builds it for a GPU.
//   gcc -std=c11 -O2 -Wall -Wextra -o emu/nvcc-emu emu/nvcc-emu.c
//   emu/nvcc-emu [--asan] [--fma] [--ptxas-info FILE] [--rewrite-only] [-o OUT] [-I DIR] [-D NAME[=V]]
//                [-l LIB] FILE.cu [more .cu/.c/.o]
//   emu/nvcc-emu --build-pch      precompiles the runtime into EMUDIR/pch/cuemu.h.gch (make does it)
//
// What it does: reads FILE.cu, scans it for CUDA features the emulator does not model
// (texture/surface objects, inline PTX, grid-wide sync, dynamic parallelism, CUDA graphs,
// the CUDA libraries, ...: exit 3 with one "unsupported feature" line per feature, nothing
// compiled), rewrites the three constructs a C++ compiler cannot take (and the kernels with
// __launch_bounds__, which a C++ compiler would ignore, and the calls of standard math
// functions, whose GPU error the runtime models), and compiles the
// result with ${CXX:-g++} -std=c++17 -O1 -g -w -I EMUDIR/include -include EMUDIR/cuemu.h,
// EMUDIR being the directory of this executable (EMUDIR/pch/cuemu.h, its precompiled form,
// when that is up to date: see use_pch). Exit status: the compiler's; 3 for an
// unmodelled feature; 2 for a usage error or an unreadable file.
//
// The rewrite contract (the runtime header implements the right-hand sides):
// 1. A launch  KERNEL<<<G, B[, S[, ST]]>>>(ARGS)  becomes
//      ::cuemu::launch(::cuemu::Config(G, B[, S[, ST]]), "KERNEL", __FILE__, __LINE__,
//                      [&](auto &...cuemu_a_) { KERNEL(cuemu_a_...); }[, ARGS])
//    (an argument that is exactly NULL or a literal 0 is written ::cuemu::Zero{}: see rewrite_launch)
//    KERNEL is the expression before <<<: an identifier, optionally qualified (ns::k), with
//    template arguments (k<float, (N > 4)>), subscripted (ks[i]), a member (plan.k, p->k,
//    this->k) or parenthesised. The config and ARGS are copied verbatim; the string is
//    KERNEL's text with " and \ escaped and newlines made spaces. Where KERNEL is an
//    element or a member, a function pointer, the config gets
//    .launching(::cuemu::function_address(KERNEL)), by which the runtime finds ptxas's
//    counts for it. Launches inside #define bodies are rewritten too.
// 2. extern __shared__ TYPE NAME[];   (or NAME[0]; __align__(...)/alignas(...) dropped)
//    becomes  TYPE *const NAME = reinterpret_cast<TYPE *>(::cuemu::dyn_smem);
// 3. A non-extern __shared__ declaration inside a function body,
//      [static] __shared__ TYPE D1, D2;   e.g.  __shared__ float a[T][T + 1], *p;
//    becomes one reference per declarator D (its name N made (&N)) to memory that the
//    runtime gives each block, keyed by a static char of the declaration:
//      static char cuemu_shared_K[2]; float (&a)[T][T + 1] = ::cuemu::shared_var<float [T][T + 1]>
//      (&cuemu_shared_K[0]); float *(&p) = ::cuemu::shared_var<float *>(&cuemu_shared_K[1]);
//    At file scope (and for a declarator with parentheses) the declaration stays as it is,
//    a static variable (the runtime's __shared__ means `static`), minus a `static` next to
//    __shared__, which would be said twice.
// 4. A kernel NAME with __launch_bounds__(MAX[, MIN[, MAX_CLUSTER]]) (on its definition, or
//    on an earlier declaration of the same name and parameter count, both outside templates
//    or both templates, MAX then naming the definition's template parameters) gets, first
//    in its body,
//      if (::cuemu::over_launch_bound(MAX)) return;
//    so that a launch with more threads per block fails as on a GPU (the runtime sets the
//    error; every thread returns at once), and after its body (at namespace scope)
//      static const bool cuemu_bounded_K = ::cuemu::bounded_kernel("NAME", NPARAMS);
//    so that cudaFuncGetAttributes and the occupancy API can read MAX (they call the kernel
//    in a mode where that first statement only reports it). MAX is read inside the body,
//    where a kernel template's parameters are in scope.
// 5. A call of a standard math function (std_math below: exp, log, tanh, pow, ..., and
//    their float names expf, ...), NAME( or std::NAME( not after another ::, . or -> or a
//    name other than return, else, do, case or throw (a declaration), becomes
//    ::cuemu::dev::NAME( so that with CUEMU_ULP its result in a kernel errs as much as CUDA
//    allows (cuemu.h). Inside #define bodies too; not for a NAME the program makes its own
//    (#defines or #undefs, defines as a function or declares as a variable).
// Everything else is left byte for byte; comments, string/char literals and raw strings are
// never rewritten or scanned. Every rewrite keeps the number of newlines (and so the line of
// everything after it), and the compiled file starts with #line 1 "FILE.cu", so compiler
// messages and __LINE__ point at the user's file and lines.
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// ----------------------------------------------------------------------------
// Small utilities

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) { fprintf(stderr, "nvcc-emu: out of memory\n"); exit(2); }
    return p;
}

typedef struct { char *s; size_t len, cap; } Buf;

static void buf_put(Buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}
static void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }
static void buf_printf(Buf *b, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    buf_put(b, tmp, n < (int)sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static size_t count_nl(const char *s, size_t a, size_t b) {
    size_t k = 0;
    for (size_t i = a; i < b; i++) k += s[i] == '\n';
    return k;
}

// ----------------------------------------------------------------------------
// Lexer: tokens of the code outside comments and literals. Preprocessor lines are lexed as
// code (tokens carry the number of their directive, 0 outside one); a backslash-newline is
// white space; the header name of #include is one T_HDR token.

enum { T_IDENT, T_NUM, T_STR, T_HDR, T_PUNCT };
typedef struct { int kind, line, pp; size_t s, e; } Tok;

static const char *src, *srcname;
static size_t srclen;
static Tok *toks;
static int ntok;

static int is_id(int c) { return isalnum(c) || c == '_' || c == '$' || c >= 0x80; }
static size_t newline_after_backslash(size_t i) { // length of "\\\n" or "\\\r\n" at i, else 0
    if (src[i] != '\\') return 0;
    if (i + 1 < srclen && src[i + 1] == '\n') return 2;
    if (i + 2 < srclen && src[i + 1] == '\r' && src[i + 2] == '\n') return 3;
    return 0;
}
static int tok_is(int k, const char *s) {
    if (k < 0 || k >= ntok) return 0;
    size_t n = strlen(s);
    return toks[k].e - toks[k].s == n && memcmp(src + toks[k].s, s, n) == 0;
}
static int tok_ident(int k) { return k >= 0 && k < ntok && toks[k].kind == T_IDENT; }

static void lex(void) {
    size_t i = 0, cap = 0;
    int line = 1, bol = 1, pp = 0, npp = 0, want_hdr = 0;
    while (i < srclen) {
        unsigned char c = (unsigned char)src[i];
        size_t k;
        if (c == '\n') { line++, i++, bol = 1, pp = 0, want_hdr = 0; continue; }
        if ((k = newline_after_backslash(i))) { line++, i += k; continue; }
        if (isspace(c)) { i++; continue; }
        if (c == '/' && i + 1 < srclen && src[i + 1] == '/') {
            while (i < srclen && src[i] != '\n') {
                if ((k = newline_after_backslash(i))) line++, i += k;
                else i++;
            }
            continue;
        }
        if (c == '/' && i + 1 < srclen && src[i + 1] == '*') {
            for (i += 2; i < srclen && !(src[i] == '*' && i + 1 < srclen && src[i + 1] == '/'); i++) line += src[i] == '\n';
            i = i + 2 < srclen ? i + 2 : srclen;
            continue;
        }
        if (ntok == (int)cap) toks = xrealloc(toks, (cap = cap * 2 + 256) * sizeof *toks);
        Tok *t = &toks[ntok];
        t->s = i, t->line = line;
        if (c == '#' && bol) pp = ++npp;
        t->pp = pp;
        bol = 0;
        if (want_hdr && (c == '<' || c == '"')) { // the header name of an #include
            char close = c == '<' ? '>' : '"';
            for (i++; i < srclen && src[i] != close && src[i] != '\n'; i++) {}
            if (i < srclen && src[i] == close) i++;
            t->kind = T_HDR;
        } else if (is_id(c)) {
            while (i < srclen && is_id((unsigned char)src[i])) i++;
            t->kind = T_IDENT;
            size_t n = i - t->s;
            const char *w = src + t->s;
            int raw = i < srclen && src[i] == '"' && w[n - 1] == 'R' &&
                      (n == 1 || (n == 2 && strchr("LuU", w[0])) || (n == 3 && w[0] == 'u' && w[1] == '8'));
            if (raw) { // R"delim( ... )delim"
                size_t d0 = ++i;
                while (i < srclen && src[i] != '(' && i - d0 < 16) i++;
                size_t dl = i - d0;
                for (i++; i < srclen; i++) {
                    if (src[i] == '\n') line++;
                    if (src[i] == ')' && i + 1 + dl < srclen && memcmp(src + i + 1, src + d0, dl) == 0 && src[i + 1 + dl] == '"') {
                        i += dl + 2;
                        break;
                    }
                }
                t->kind = T_STR;
            }
        } else if (isdigit(c) || (c == '.' && i + 1 < srclen && isdigit((unsigned char)src[i + 1]))) {
            for (i++; i < srclen; i++) {
                unsigned char d = (unsigned char)src[i];
                if ((d == '+' || d == '-') && strchr("eEpP", src[i - 1])) continue;
                if (d == '\'' && i + 1 < srclen && isalnum((unsigned char)src[i + 1])) continue;
                if (!is_id(d) && d != '.') break;
            }
            t->kind = T_NUM;
        } else if (c == '"' || c == '\'') {
            for (i++; i < srclen && src[i] != (char)c && src[i] != '\n'; i++)
                if (src[i] == '\\' && i + 1 < srclen) {
                    i++;
                    if (src[i] == '\r' && i + 1 < srclen && src[i + 1] == '\n') i++;
                    if (src[i] == '\n') line++;
                }
            if (i < srclen && src[i] == (char)c) i++;
            t->kind = T_STR;
        } else {
            t->kind = T_PUNCT;
            if (i + 2 < srclen && (memcmp(src + i, "<<<", 3) == 0 || memcmp(src + i, ">>>", 3) == 0)) i += 3;
            else if (i + 1 < srclen && (memcmp(src + i, "::", 2) == 0 || memcmp(src + i, "->", 2) == 0)) i += 2;
            else i++;
        }
        t->e = i;
        ntok++;
        // "#include" / "#include_next" / "#import": the next token is a header name
        want_hdr = t->kind == T_IDENT && ntok >= 2 && toks[ntok - 2].pp == pp && pp && tok_is(ntok - 2, "#") &&
                   (ntok < 3 || toks[ntok - 3].pp != pp) &&
                   (tok_is(ntok - 1, "include") || tok_is(ntok - 1, "include_next") || tok_is(ntok - 1, "import"));
    }
}

// Matching bracket, scanning forward from an opening one (or backward from a closing one)
// within the same directive; -1 when unbalanced.
static int match_fwd(int k) {
    char open = src[toks[k].s], close = open == '(' ? ')' : open == '[' ? ']' : '}';
    int depth = 0;
    for (int j = k; j < ntok && toks[j].pp == toks[k].pp; j++) {
        if (toks[j].kind != T_PUNCT || toks[j].e - toks[j].s != 1) continue;
        if (src[toks[j].s] == open) depth++;
        else if (src[toks[j].s] == close && --depth == 0) return j;
    }
    return -1;
}
static int match_back(int k) {
    char close = src[toks[k].s], open = close == ')' ? '(' : close == ']' ? '[' : '{';
    int depth = 0;
    for (int j = k; j >= 0 && toks[j].pp == toks[k].pp; j--) {
        if (toks[j].kind != T_PUNCT || toks[j].e - toks[j].s != 1) continue;
        if (src[toks[j].s] == close) depth++;
        else if (src[toks[j].s] == open && --depth == 0) return j;
    }
    return -1;
}
static int is_open(int k) { return toks[k].kind == T_PUNCT && toks[k].e - toks[k].s == 1 && strchr("([{", src[toks[k].s]); }

// ----------------------------------------------------------------------------
// Unmodelled features

typedef struct { const char *name; int line; char what[80]; } Feature;
static Feature feats[64];
static int nfeat;

static void feature(const char *name, int k) {
    for (int j = 0; j < nfeat; j++)
        if (strcmp(feats[j].name, name) == 0) return;
    if (nfeat == 64) return;
    Feature *f = &feats[nfeat++];
    f->name = name, f->line = toks[k].line;
    size_t n = toks[k].e - toks[k].s;
    snprintf(f->what, sizeof f->what, "%.*s", (int)(n < 70 ? n : 70), src + toks[k].s);
}

static const struct { const char *word, *name; } feature_words[] = { // identifiers, exact
    { "cudaTextureObject_t", "texture objects" }, { "cudaCreateTextureObject", "texture objects" },
    { "cudaDestroyTextureObject", "texture objects" }, { "cudaTextureDesc", "texture objects" },
    { "cudaResourceDesc", "texture objects" }, { "tex1Dfetch", "texture objects" }, { "tex1D", "texture objects" },
    { "tex2D", "texture objects" }, { "tex3D", "texture objects" }, { "tex1DLayered", "texture objects" },
    { "tex2DLayered", "texture objects" }, { "texCubemap", "texture objects" }, { "tex2Dgather", "texture objects" },
    { "tex1DLod", "texture objects" }, { "tex2DLod", "texture objects" }, { "tex3DLod", "texture objects" },
    { "tex1DGrad", "texture objects" }, { "tex2DGrad", "texture objects" },
    { "cudaBindTexture", "texture references" }, { "cudaBindTexture2D", "texture references" },
    { "cudaBindTextureToArray", "texture references" }, { "cudaUnbindTexture", "texture references" },
    { "cudaSurfaceObject_t", "surface objects" }, { "cudaCreateSurfaceObject", "surface objects" },
    { "surf1Dread", "surface objects" }, { "surf1Dwrite", "surface objects" }, { "surf2Dread", "surface objects" },
    { "surf2Dwrite", "surface objects" }, { "surf3Dread", "surface objects" }, { "surf3Dwrite", "surface objects" },
    { "cudaBindSurfaceToArray", "surface objects" },
    { "cudaArray", "CUDA arrays" }, { "cudaArray_t", "CUDA arrays" }, { "cudaMallocArray", "CUDA arrays" },
    { "cudaMalloc3DArray", "CUDA arrays" }, { "cudaMemcpyToArray", "CUDA arrays" }, { "cudaMemcpy2DToArray", "CUDA arrays" },
    { "cudaMemcpyFromArray", "CUDA arrays" }, { "cudaMemcpy2DFromArray", "CUDA arrays" },
    { "__asm__", "inline PTX" }, { "__asm", "inline PTX" },
    { "this_grid", "grid-wide sync" }, { "grid_group", "grid-wide sync" }, { "this_multi_grid", "grid-wide sync" },
    { "cudaLaunchCooperativeKernel", "grid-wide sync" }, { "cudaLaunchCooperativeKernelMultiDevice", "grid-wide sync" },
    { "cudaStreamBeginCapture", "CUDA graphs" }, { "cudaStreamEndCapture", "CUDA graphs" },
    { "cudaMemcpy3D", "cudaMemcpy3D" }, { "cudaMemcpy3DAsync", "cudaMemcpy3D" }, { "cudaMalloc3D", "cudaMemcpy3D" },
    { "cudaMemcpy3DPeer", "cudaMemcpy3D" }, { "make_cudaPitchedPtr", "cudaMemcpy3D" },
    { "curand_init", "cuRAND" }, { "curand_uniform", "cuRAND" }, { "curand_normal", "cuRAND" }, { "curand", "cuRAND" },
    { "curand_uniform4", "cuRAND" }, { "curand_normal4", "cuRAND" }, { "curand_poisson", "cuRAND" },
    { "curand_log_normal", "cuRAND" }, { "curand_uniform_double", "cuRAND" }, { "curand_normal_double", "cuRAND" },
    { "nvrtcCreateProgram", "NVRTC" }, { "cuModuleLoad", "driver API modules" },
    { "cuModuleLoadData", "driver API modules" }, { "cuLaunchKernel", "driver API modules" },
};
static const struct { const char *prefix, *name; } feature_prefixes[] = { // identifiers: prefix + upper-case letter
    { "cudaGraph", "CUDA graphs" }, { "cublas", "cuBLAS" }, { "cufft", "cuFFT" }, { "curand", "cuRAND" },
    { "cusparse", "cuSPARSE" }, { "cusolver", "cuSOLVER" }, { "cudnn", "cuDNN" }, { "nccl", "NCCL" },
};
static const struct { const char *prefix, *name; } feature_headers[] = { // #include <prefix...>, first match wins
    { "cublas", "cuBLAS" }, { "cufft", "cuFFT" }, { "curand", "cuRAND" }, { "cusparse", "cuSPARSE" },
    { "cusolver", "cuSOLVER" }, { "cudnn", "cuDNN" }, { "nccl", "NCCL" }, { "nvrtc", "NVRTC" },
    { "thrust/", "Thrust" }, { "cub/", "CUB" }, { "cutlass/", "CUTLASS" }, { "cute/", "CUTLASS" },
    { "cuda_pipeline", "CUDA pipelines" }, { "cuda/pipeline", "CUDA pipelines" }, { "cuda/barrier", "CUDA barriers" },
    { "cuda/", "libcu++" }, { "texture_fetch_functions", "texture objects" },
    { "cuda.h", NULL }, // the driver API header itself is fine; its module calls are caught by name
};

static void scan_features(int k) {
    const Tok *t = &toks[k];
    size_t n = t->e - t->s;
    const char *w = src + t->s;
    if (t->kind == T_HDR) {
        if (n < 3) return;
        const char *h = w + 1;
        size_t hn = n - 2;
        for (size_t j = 0; j < sizeof feature_headers / sizeof *feature_headers; j++) {
            size_t pn = strlen(feature_headers[j].prefix);
            if (hn >= pn && memcmp(h, feature_headers[j].prefix, pn) == 0) {
                if (feature_headers[j].name) feature(feature_headers[j].name, k);
                return;
            }
        }
        return;
    }
    if (t->kind != T_IDENT) return;
    for (size_t j = 0; j < sizeof feature_words / sizeof *feature_words; j++)
        if (strlen(feature_words[j].word) == n && memcmp(w, feature_words[j].word, n) == 0) {
            feature(feature_words[j].name, k);
            return;
        }
    for (size_t j = 0; j < sizeof feature_prefixes / sizeof *feature_prefixes; j++) {
        size_t pn = strlen(feature_prefixes[j].prefix);
        if (n > pn && memcmp(w, feature_prefixes[j].prefix, pn) == 0 && isupper((unsigned char)w[pn])) {
            feature(feature_prefixes[j].name, k);
            return;
        }
    }
    int next_paren = tok_is(k + 1, "(");
    if (tok_is(k, "asm") && (next_paren || tok_is(k + 1, "volatile") || tok_is(k + 1, "__volatile__") || tok_is(k + 1, "goto")))
        feature("inline PTX", k);
    else if ((tok_is(k, "texture") || tok_is(k, "surface")) && tok_is(k + 1, "<"))
        feature(tok_is(k, "texture") ? "texture references" : "surface objects", k);
    else if (tok_is(k, "grid") && tok_is(k + 1, ".") && tok_is(k + 2, "sync"))
        feature("grid-wide sync", k);
    else if ((tok_is(k, "thrust") || tok_is(k, "cub") || tok_is(k, "cutlass")) && tok_is(k + 1, "::"))
        feature(tok_is(k, "thrust") ? "Thrust" : tok_is(k, "cub") ? "CUB" : "CUTLASS", k);
}

// ----------------------------------------------------------------------------
// Rewrites: a list of edits (replace [s, e) by text), applied in order of position

typedef struct { size_t s, e; char *text; } Edit;
static Edit *edits;
static int nedit, capedit;

static void edit(size_t s, size_t e, Buf *text) {
    if (nedit == capedit) edits = xrealloc(edits, (capedit = capedit * 2 + 16) * sizeof *edits);
    edits[nedit++] = (Edit){ s, e, text->s ? text->s : calloc(1, 1) };
    *text = (Buf){ 0 };
}

// Pads a replacement of src[s, e) with the newlines it dropped, so line numbers stay.
static void pad_newlines(Buf *b, size_t s, size_t e, int in_directive) {
    size_t want = count_nl(src, s, e), have = count_nl(b->s ? b->s : "", 0, b->len);
    for (; have < want; have++) buf_puts(b, in_directive ? " \\\n" : "\n");
}

static const char *keywords[] = { "return", "case", "sizeof", "else", "do", "if", "while", "for", "switch", "new",
                                  "delete", "throw", "co_return", "co_yield", "typedef", "operator", NULL };
static int is_keyword(int k) {
    for (int j = 0; keywords[j]; j++)
        if (tok_is(k, keywords[j])) return 1;
    return 0;
}

// The last part of a kernel expression, ending at token j: a name, [::]ns::name, with
// template arguments and subscripts (then *subscripted = 1), or a parenthesised
// expression; its first token, or -1.
static int name_start(int j, int *subscripted) {
    int pp = toks[j].pp;
    while (j >= 0 && tok_is(j, "]")) { // subscripts: ks[i]<<<...
        j = match_back(j);
        if (j < 0) return -1;
        j--;
        *subscripted = 1;
    }
    if (j < 0 || toks[j].pp != pp) return -1;
    if (tok_is(j, ")")) return match_back(j); // a parenthesised expression
    for (;;) {                                // [::] name [<args>] { :: name [<args>] }, read backwards
        if (tok_is(j, ">") || tok_is(j, ">>>")) { // template arguments: back to their '<'
            int depth = 0;
            for (; j >= 0 && toks[j].pp == pp; j--) {
                if (tok_is(j, ">")) depth++;
                else if (tok_is(j, ">>>")) depth += 3;
                else if (tok_is(j, "<") && --depth == 0) break;
                else if (tok_is(j, ")") || tok_is(j, "]")) {
                    if ((j = match_back(j)) < 0) return -1;
                } else if (tok_is(j, ";") || tok_is(j, "{") || tok_is(j, "}")) return -1;
            }
            if (j < 0 || toks[j].pp != pp) return -1;
            j--;
        }
        if (!tok_ident(j) || toks[j].pp != pp || is_keyword(j)) return -1;
        int start = j;
        if (tok_is(j - 1, "template")) start = --j; // ns::template k<T>
        if (!tok_is(j - 1, "::") || toks[j - 1].pp != pp) return start;
        start = j - 1;
        j -= 2;
        if (j < 0 || toks[j].pp != pp || !(tok_ident(j) || tok_is(j, ">") || tok_is(j, ">>>")) || is_keyword(j))
            return start; // ::k
    }
}
// The kernel expression that ends at token j (just before <<<): name_start's, also after
// members (table[i].kernel, this->k, p->k): returns its first token, or -1. *by_value: the
// expression is an element or a member, a function pointer's value (not a kernel's name,
// which may name several overloads).
static int kernel_start(int j, int *by_value) {
    *by_value = 0;
    for (;;) {
        int start = name_start(j, by_value);
        if (start < 2 || toks[start - 1].pp != toks[j].pp || !(tok_is(start - 1, ".") || tok_is(start - 1, "->")))
            return start;
        *by_value = 1;
        if (tok_is(start - 2, "this")) return start - 2;
        j = start - 2;
    }
}

// Whether token k is an integer literal of value 0 (0, 0u, 0L, 0x0, 000, ...): a null
// pointer constant.
static int is_zero_literal(int k) {
    const char *p = src + toks[k].s, *e = src + toks[k].e;
    if (p == e || *p != '0') return 0;
    if (e - p > 2 && (p[1] == 'x' || p[1] == 'X')) p += 2;
    while (p < e && *p == '0') p++;
    while (p < e && strchr("uUlL", *p)) p++;
    return p == e;
}

static void escape_into(Buf *b, size_t s, size_t e) { // a string literal's contents, newlines as spaces
    for (size_t i = s; i < e; i++) {
        size_t k = newline_after_backslash(i);
        if (k) { buf_puts(b, " "), i += k - 1; continue; }
        char c = src[i];
        if (c == '\n' || c == '\r' || c == '\t') buf_puts(b, " ");
        else if (c == '"' || c == '\\') buf_put(b, "\\", 1), buf_put(b, &c, 1);
        else buf_put(b, &c, 1);
    }
}

// KERNEL<<<CONFIG>>>(ARGS) with <<< at token k: returns 1 when rewritten
static int rewrite_launch(int k) {
    int pp = toks[k].pp, by_value = 0, ks = k > 0 ? kernel_start(k - 1, &by_value) : -1;
    if (ks < 0) return 0;
    int close = -1, nargs = 1;
    for (int j = k + 1; j < ntok && toks[j].pp == pp; j++) {
        if (tok_is(j, ">>>")) { close = j; break; }
        if (tok_is(j, ";") || tok_is(j, "}") || tok_is(j, ")") || tok_is(j, "]")) break;
        if (tok_is(j, ",")) nargs++;
        if (is_open(j) && (j = match_fwd(j)) < 0) break;
    }
    if (close < 0 || nargs < 2 || nargs > 4 || !tok_is(close + 1, "(") || toks[close + 1].pp != pp) return 0;
    int lp = close + 1, rp = match_fwd(lp);
    if (rp < 0) return 0;
    Buf b = { 0 };
    buf_puts(&b, "::cuemu::launch(::cuemu::Config(");
    // the config on one line (unless a // comment needs its newline), so that __LINE__ is
    // the line where the launch starts; pad_newlines puts the newlines back after it
    size_t cs = toks[k].e, ce = toks[close].s;
    int line_comment = 0;
    for (size_t i = cs; i + 1 < ce; i++) line_comment |= src[i] == '/' && src[i + 1] == '/';
    for (size_t i = cs; i < ce; i++) {
        size_t nl = line_comment ? 0 : newline_after_backslash(i);
        if (nl) buf_puts(&b, " "), i += nl - 1;
        else if (!line_comment && (src[i] == '\n' || src[i] == '\r')) buf_puts(&b, " ");
        else buf_put(&b, src + i, 1);
    }
    buf_puts(&b, ")");
    if (by_value) {
        buf_puts(&b, ".launching(::cuemu::function_address(");
        buf_put(&b, src + toks[ks].s, toks[k - 1].e - toks[ks].s);
        buf_puts(&b, "))");
    }
    buf_puts(&b, ", \"");
    escape_into(&b, toks[ks].s, toks[k - 1].e);
    buf_puts(&b, "\", __FILE__, __LINE__, [&](auto &...cuemu_a_) { ");
    buf_put(&b, src + toks[ks].s, toks[k - 1].e - toks[ks].s);
    buf_puts(&b, "(cuemu_a_...); }");
    if (rp > lp + 1) buf_puts(&b, ", ");
    pad_newlines(&b, toks[ks].s, toks[lp].e, pp != 0);
    edit(toks[ks].s, toks[lp].e, &b);
    // An argument that is just NULL or an integer literal 0 becomes ::cuemu::Zero{}: the
    // arguments are copied once into a tuple by type, where an int would not convert to the
    // kernel's pointer; a Zero converts to whatever the parameter is, as the literal does.
    for (int j = lp + 1, arg_start = lp + 1; j <= rp; j++) {
        if (j < rp && is_open(j)) { if ((j = match_fwd(j)) < 0) break; continue; }
        if (j < rp && !tok_is(j, ",")) continue;
        if (j == arg_start + 1 && (tok_is(arg_start, "NULL") || is_zero_literal(arg_start))) {
            Buf n = { 0 };
            buf_puts(&n, "::cuemu::Zero{}");
            edit(toks[arg_start].s, toks[arg_start].e, &n);
        }
        arg_start = j + 1;
    }
    return 1;
}

// Skips __align__(...), alignas(...), __attribute__((...)) and __declspec(...) at token j.
static int skip_attr(int j) {
    if ((tok_is(j, "__align__") || tok_is(j, "alignas") || tok_is(j, "__attribute__") || tok_is(j, "__declspec")) &&
        tok_is(j + 1, "(")) {
        int m = match_fwd(j + 1);
        return m < 0 ? j : m + 1;
    }
    return j;
}
static int is_decl_qual(int j) {
    return tok_is(j, "*") || tok_is(j, "&") || tok_is(j, "const") || tok_is(j, "volatile") || tok_is(j, "__restrict__") ||
           tok_is(j, "__restrict");
}

// The ';' ending the declaration that starts at token k (within its directive), or -1.
static int decl_end(int k) {
    for (int j = k; j < ntok && toks[j].pp == toks[k].pp; j++) {
        if (tok_is(j, ";")) return j;
        if (tok_is(j, "}") || tok_is(j, ")") || tok_is(j, "]")) return -1;
        if (is_open(j) && (j = match_fwd(j)) < 0) return -1;
    }
    return -1;
}

// extern __shared__ TYPE NAME[]; with `extern` at token k (the __shared__ somewhere after it)
static int rewrite_extern_shared(int k) {
    int end = decl_end(k), pp = toks[k].pp;
    if (end < 0) return 0;
    int type[64], ntype = 0, name = -1;
    Buf b = { 0 };
    for (int j = k + 1; j < end;) {
        int a = skip_attr(j);
        if (a != j) { j = a; continue; }
        if (tok_is(j, "__shared__")) { j++; continue; }
        if (tok_ident(j) && tok_is(j + 1, "[")) { // a declarator NAME[] or NAME[0]
            int m = match_fwd(j + 1);
            if (m < 0 || m > j + 3 || (m == j + 3 && !tok_is(j + 2, "0"))) break;
            name = j;
            Buf ty = { 0 };
            for (int t = 0; t < ntype; t++) {
                if (t) buf_puts(&ty, " ");
                buf_put(&ty, src + toks[type[t]].s, toks[type[t]].e - toks[type[t]].s);
            }
            if (b.len) buf_puts(&b, " ");
            buf_printf(&b, "%s *const %.*s = reinterpret_cast<%s *>(::cuemu::dyn_smem);", ty.s ? ty.s : "",
                       (int)(toks[j].e - toks[j].s), src + toks[j].s, ty.s ? ty.s : "");
            free(ty.s);
            j = m + 1;
            if (tok_is(j, ",")) j++;
            else if (j != end) { name = -1; break; }
            continue;
        }
        if (name >= 0 || ntype == 64) { name = -1; break; } // a type after a declarator: not this form
        type[ntype++] = j++;
    }
    if (name < 0 || ntype == 0) { free(b.s); return 0; }
    pad_newlines(&b, toks[k].s, toks[end].e, pp != 0);
    edit(toks[k].s, toks[end].e, &b);
    return 1;
}

// Appends the text of tokens [a, b) to buf on one line: one space where the source had
// white space between two tokens (or a newline); skip (or -1) is left out.
static void put_tokens(Buf *buf, int a, int b, int skip) {
    for (int j = a; j < b; j++) {
        if (j == skip) continue;
        if (j > a && toks[j].s > toks[j - 1].e && buf->len && buf->s[buf->len - 1] != ' ') buf_puts(buf, " ");
        buf_put(buf, src + toks[j].s, toks[j].e - toks[j].s);
    }
}

// A __shared__ declaration inside a function, the __shared__ at token k:
//     [static] [volatile] __shared__ [__align__(N)] TYPE D1, D2;
// becomes, for each declarator D with its name N,
//     static char cuemu_shared_K[2]; TYPE D1[N -> (&N)] = ::cuemu::shared_var<TYPE D1[N -> ]>(&cuemu_shared_K[0]); ...
// e.g. `float (&s)[T][T + 1] = ::cuemu::shared_var<float [T][T + 1]>(...)`: a reference to
// memory the runtime gives each block (see shared_var in cuemu.h). Returns the
// declaration's last token, or -1 when it is not of this form (a declarator with
// parentheses or an initializer): then it stays as it is.
static int rewrite_static_shared(int k) {
    int end = decl_end(k), pp = toks[k].pp;
    if (end < 0) return -1;
    int start = k; // qualifiers and attributes before __shared__ belong to the declaration
    for (;;) {
        int j = start - 1;
        if (j >= 0 && tok_is(j, ")") && toks[j].pp == pp) {
            int o = match_back(j);
            if (o > 0 && skip_attr(o - 1) == j + 1) { start = o - 1; continue; }
        }
        if (j >= 0 && toks[j].pp == pp && (tok_is(j, "static") || tok_is(j, "volatile") || tok_is(j, "const"))) {
            start = j;
            continue;
        }
        break;
    }
    // the first declarator's name: the last identifier before a top-level [ = ( , ;
    int first_name = -1;
    for (int t = start; t < end; t++) {
        int a = skip_attr(t);
        if (a != t) { t = a - 1; continue; }
        if (tok_is(t, "[") || tok_is(t, "=") || tok_is(t, "(") || tok_is(t, ",") || tok_is(t, "{")) break;
        if (tok_is(t, "<")) { // template arguments of the type
            for (int depth = 0; t < end; t++) {
                if (tok_is(t, "<")) depth++;
                else if (tok_is(t, ">")) depth--;
                else if (tok_is(t, ">>")) depth -= 2;
                else if (is_open(t) && (t = match_fwd(t)) < 0) return -1;
                if (depth <= 0) break;
            }
            continue;
        }
        if (tok_ident(t) && !is_decl_qual(t) && !tok_is(t, "__shared__") && !tok_is(t, "static")) first_name = t;
    }
    if (first_name < 0) return -1;
    int dstart = first_name; // the declarator: the name and the * & const before it
    while (dstart - 1 > start && is_decl_qual(dstart - 1)) dstart--;
    // the type: the tokens before the declarator but static, __shared__ and attributes
    // (the runtime aligns every variable to 128 bytes)
    Buf ty = { 0 };
    for (int j = start; j < dstart; j++) {
        int a = skip_attr(j);
        if (a != j) { j = a - 1; continue; }
        if (tok_is(j, "static") || tok_is(j, "__shared__")) continue;
        if (ty.len && toks[j].s > toks[j - 1].e) buf_puts(&ty, " ");
        put_tokens(&ty, j, j + 1, -1);
    }
    if (!ty.len) return -1;
    // the declarators: [dstart, comma or end), each with one name and no ( = {
    int decl[32][2], name[32], nd = 0;
    for (int d = dstart; d < end;) {
        int e = d, nm = -1;
        for (; e < end && !tok_is(e, ","); e++) {
            if (tok_is(e, "(") || tok_is(e, "=") || tok_is(e, "{") || (tok_is(e, "[") && (e = match_fwd(e)) < 0)) {
                free(ty.s);
                return -1;
            }
            if (tok_ident(e) && !is_decl_qual(e) && nm < 0) nm = e;
        }
        if (nm < 0 || nd == 32) { free(ty.s); return -1; }
        decl[nd][0] = d, decl[nd][1] = e, name[nd++] = nm;
        d = e + 1;
    }
    Buf b = { 0 };
    buf_printf(&b, "static char cuemu_shared_%d[%d];", k, nd);
    for (int d = 0; d < nd; d++) {
        Buf ref = { 0 }, abstract = { 0 };
        put_tokens(&ref, decl[d][0], name[d], -1);
        buf_printf(&ref, "%s(&%.*s)", ref.len ? " " : "", (int)(toks[name[d]].e - toks[name[d]].s), src + toks[name[d]].s);
        put_tokens(&ref, name[d] + 1, decl[d][1], -1);
        put_tokens(&abstract, decl[d][0], decl[d][1], name[d]);
        buf_printf(&b, " %s %s = ::cuemu::shared_var<%s%s%s>(&cuemu_shared_%d[%d]);", ty.s, ref.s, ty.s,
                   abstract.len ? " " : "", abstract.s ? abstract.s : "", k, d);
        free(ref.s);
        free(abstract.s);
    }
    free(ty.s);
    pad_newlines(&b, toks[start].s, toks[end].e, pp != 0);
    edit(toks[start].s, toks[end].e, &b);
    return end;
}

// Whether the declaration around token k follows `template <...>`: back to the end of the
// statement or directive before it.
static int template_before(int k) {
    int t = -1; // the first: `template <template <class> class C>` has two
    for (int j = k - 1; j >= 0 && !toks[j].pp && !tok_is(j, ";") && !tok_is(j, "{") && !tok_is(j, "}"); j--)
        if (tok_is(j, "template")) t = j;
    return t;
}
// The names of the parameters of `template <...>` at token t (the last name of each, before
// any default), at most max; the number of parameters, -1 when it cannot be read.
static int template_params(int t, int *names, int max) {
    if (!tok_is(t + 1, "<")) return -1;
    int n = 0, last = -1, in_default = 0;
    for (int j = t + 2, depth = 1; j < ntok && !toks[j].pp; j++) {
        if (is_open(j) && (j = match_fwd(j)) < 0) return -1;
        int closes = tok_is(j, ">") ? 1 : tok_is(j, ">>") ? 2 : 0, ends = (depth -= closes) == 0;
        if (depth < 0) return -1;
        if (ends || (depth == 1 && tok_is(j, ","))) { // a parameter ends
            if (last < 0 || n == max) return -1;
            names[n++] = last, last = -1, in_default = 0;
            if (ends) return n;
        } else if (tok_is(j, "<")) depth++;
        else if (depth == 1 && tok_is(j, "=")) in_default = 1;
        else if (depth == 1 && !in_default && tok_ident(j)) last = j;
    }
    return -1;
}
// The number of parameters between the parentheses at tokens open and close: commas outside
// nested brackets, plus one; 0 for () and (void).
static int count_params(int open, int close) {
    if (close == open + 1 || (close == open + 2 && tok_is(open + 1, "void"))) return 0;
    int n = 1;
    for (int j = open + 1; j < close; j++) {
        if (is_open(j) && (j = match_fwd(j)) < 0) return -1;
        n += tok_is(j, ",");
    }
    return n;
}

// A kernel declared with __global__ at token k (rewrite 4): its name's token, its parameter
// count, its bound MAX (the tokens [max, max_end) of a __launch_bounds__(MAX, ...) just
// before k or between k and the name; max < 0 without one), whether it follows
// `template <...>`, and the braces of its body (body < 0: a declaration). 0 when it cannot
// be read, or inside a #define. tmpl: the token `template`, -1 for none.
typedef struct { int name, nparams, max, max_end, tmpl, body, end; } Kernel;
static int read_kernel(int k, Kernel *kd) {
    if (toks[k].pp) return 0;
    int lb = -1, j = k - 1;
    while (tok_is(j, "static") || tok_is(j, "inline") || tok_is(j, "__forceinline__") || tok_is(j, "__noinline__")) j--;
    if (tok_is(j, ")") && (j = match_back(j)) > 0 && tok_is(j - 1, "__launch_bounds__")) lb = j - 1;
    for (j = k + 1; j < ntok && !tok_is(j, "(") && !tok_is(j, ";") && !tok_is(j, "{"); j++)
        if (tok_is(j, "__launch_bounds__") && tok_is(j + 1, "(")) {
            lb = j;
            if ((j = match_fwd(j + 1)) < 0) return 0;
        }
    *kd = (Kernel){ j - 1, 0, -1, -1, template_before(lb >= 0 && lb < k ? lb : k), -1, -1 };
    if (!tok_is(j, "(") || !tok_ident(kd->name) || (j = match_fwd(j)) < 0) return 0;
    kd->nparams = count_params(kd->name + 1, j);
    while (j < ntok && !tok_is(j, ";") && !tok_is(j, "{")) j++;
    if (tok_is(j, "{") && (kd->end = match_fwd(j)) < 0) return 0;
    kd->body = tok_is(j, "{") ? j : -1;
    if (lb < 0 || !tok_is(lb + 1, "(")) return 1;
    int close = match_fwd(lb + 1); // MAX: to the first comma outside brackets
    for (kd->max = kd->max_end = lb + 2; close > 0 && kd->max_end < close && !tok_is(kd->max_end, ","); kd->max_end++)
        if (is_open(kd->max_end) && ((kd->max_end = match_fwd(kd->max_end)) < 0 || kd->max_end >= close)) return 0;
    if (close < 0 || kd->max_end == kd->max) kd->max = kd->max_end = -1;
    return 1;
}

// The bounded kernels of the file (definitions and declarations), read before the rewrite.
static Kernel *bounded;
static int nbounded, capbounded;
static int same_text(int a, int b) {
    size_t n = toks[a].e - toks[a].s;
    return toks[b].e - toks[b].s == n && !memcmp(src + toks[a].s, src + toks[b].s, n);
}
static int same_kernel(const Kernel *a, const Kernel *b) {
    return a->nparams == b->nparams && same_text(a->name, b->name);
}
static void find_bounded(void) {
    nbounded = 0;
    Kernel kd;
    for (int k = 0; k < ntok; k++) {
        if (!tok_is(k, "__global__") || !read_kernel(k, &kd) || kd.max < 0) continue;
        if (nbounded == capbounded) bounded = xrealloc(bounded, (capbounded = capbounded * 2 + 16) * sizeof *bounded);
        bounded[nbounded++] = kd;
    }
}

// The declaration decl's bound for the definition kd: the tokens of MAX, with the names of
// the declaration's template parameters replaced by the definition's (nvcc matches them by
// position); 0 when decl is not an earlier declaration of kd, both outside templates or
// both templates with the same number of parameters.
static int carried_bound(const Kernel *decl, const Kernel *kd, Buf *b) {
    enum { MAXP = 32 };
    int from[MAXP], to[MAXP], n = 0;
    if (decl->body >= 0 || decl->name > kd->name || !same_kernel(decl, kd) || (decl->tmpl < 0) != (kd->tmpl < 0))
        return 0;
    if (decl->tmpl >= 0 &&
        ((n = template_params(decl->tmpl, from, MAXP)) < 0 || template_params(kd->tmpl, to, MAXP) != n))
        return 0;
    for (int j = decl->max; j < decl->max_end; j++) {
        int p = 0;
        while (p < n && !same_text(j, from[p])) p++;
        if (j > decl->max && toks[j].s > toks[j - 1].e) buf_puts(b, " ");
        int t = p < n ? to[p] : j; // a template parameter's name in the definition, or the token itself
        put_tokens(b, t, t + 1, -1);
    }
    return 1;
}

// The kernel at token k (rewrite 4). A definition's bound: its own, else that of an earlier
// declaration with the same name and parameter count (carried_bound). A bounded definition
// gets `if (::cuemu::over_launch_bound(MAX)) return;` after the '{' of its body, and one
// with the name and parameter count of a bounded kernel but no bound `...
// over_launch_bound(0) ...`, so that probing it never runs its body. After the body of
// either, at namespace scope (at_ns): `static const bool cuemu_bounded_K =
// ::cuemu::bounded_kernel("NAME", NPARAMS);`.
static void rewrite_kernel(int k, int at_ns) {
    Kernel kd;
    if (!read_kernel(k, &kd) || kd.body < 0) return;
    Buf max = { 0 };
    int shares = 0;
    if (kd.max >= 0) put_tokens(&max, kd.max, kd.max_end, -1);
    for (int d = 0; d < nbounded && !max.len; d++) {
        shares |= same_kernel(&bounded[d], &kd);
        carried_bound(&bounded[d], &kd, &max);
    }
    if (!max.len && !shares) return;
    Buf b = { 0 };
    buf_puts(&b, " if (::cuemu::over_launch_bound(");
    buf_puts(&b, max.len ? max.s : "0");
    buf_puts(&b, ")) return;");
    free(max.s);
    edit(toks[kd.body].e, toks[kd.body].e, &b);
    if (!at_ns) return;
    buf_printf(&b, " static const bool cuemu_bounded_%d = ::cuemu::bounded_kernel(\"%.*s\", %d);", k,
               (int)(toks[kd.name].e - toks[kd.name].s), src + toks[kd.name].s, kd.nparams);
    edit(toks[kd.end].e, toks[kd.end].e, &b);
}

// The standard math functions whose calls rewrite 5 sends to ::cuemu::dev (cuemu.h defines
// each there, NAMEf and NAME, with its maximum ulp errors on a GPU).
static const char *const std_math[] = { "exp",  "exp2",  "exp10", "expm1", "log",   "log2",  "log10",  "log1p",
                                        "sin",  "cos",   "tan",   "asin",  "acos",  "atan",  "sinh",   "cosh",
                                        "tanh", "asinh", "acosh", "atanh", "erf",   "erfc",  "cbrt",   "tgamma",
                                        "lgamma", "pow", "atan2", "hypot", "sincos", NULL };
enum { NSTD_MATH = sizeof std_math / sizeof *std_math - 1 };
// std_math[j] (j < NSTD_MATH) or its float name std_math[j] + "f" (j >= NSTD_MATH) at token k.
static int std_math_at(int k) {
    size_t n = toks[k].e - toks[k].s;
    for (int j = 0; std_math[j]; j++) {
        size_t m = strlen(std_math[j]);
        int is_float_name = n == m + 1 && src[toks[k].s + m] == 'f';
        if ((n == m || is_float_name) && memcmp(src + toks[k].s, std_math[j], m) == 0) return j + is_float_name * NSTD_MATH;
    }
    return -1;
}
// A name a declaration puts before "(": one after a type or other name, not a keyword that
// can precede an expression.
static int declared_at(int k) {
    int p = k - 1;
    return p >= 0 && toks[p].pp == toks[k].pp && tok_ident(p) && !tok_is(p, "return") && !tok_is(p, "else") &&
           !tok_is(p, "do") && !tok_is(p, "case") && !tok_is(p, "throw");
}
// The names the program makes its own: #defines or #undefs, defines as a function
// (NAME(...) with a body; a declaration of the library's function alone does not count),
// or declares as a variable (auto log = [](...) {...}: calls then mean the variable).
static int std_math_own[2 * NSTD_MATH];
static void find_std_math_own(void) {
    memset(std_math_own, 0, sizeof std_math_own);
    for (int k = 1; k < ntok; k++) {
        int j = tok_ident(k) ? std_math_at(k) : -1;
        if (j < 0) continue;
        if (toks[k].pp && (tok_is(k - 1, "define") || tok_is(k - 1, "undef"))) std_math_own[j] = 1;
        else if (declared_at(k) && !tok_is(k + 1, "(")) std_math_own[j] = 1; // a variable
        else if (declared_at(k)) {                                             // a function: a definition?
            int close = match_fwd(k + 1);
            while (close >= 0 && tok_ident(close + 1)) close++; // const, noexcept, override, ...
            std_math_own[j] |= close >= 0 && tok_is(close + 1, "{");
        }
    }
}
// A call NAME( of a standard math function, or std::NAME( or ::std::NAME(, becomes
// ::cuemu::dev::NAME(; not a member (after . or ->), another namespace's, a declaration or
// a name the program makes its own.
static void rewrite_std_math(int k) {
    if (!tok_ident(k) || !tok_is(k + 1, "(") || toks[k + 1].pp != toks[k].pp || declared_at(k)) return;
    int j = std_math_at(k), from = k, p = k - 1;
    if (j < 0 || std_math_own[j]) return;
    if (p >= 0 && toks[p].pp == toks[k].pp && (tok_is(p, ".") || tok_is(p, "->"))) return;
    if (p >= 0 && toks[p].pp == toks[k].pp && tok_is(p, "::")) {
        if (!tok_is(p - 1, "std") || toks[p - 1].pp != toks[k].pp) return;
        from = p - 1 - tok_is(p - 2, "::");
    }
    Buf b = { 0 };
    buf_printf(&b, "::cuemu::dev::%.*s", (int)(toks[k].e - toks[k].s), src + toks[k].s);
    edit(toks[from].s, toks[k].e, &b);
}

// The pass over the tokens: feature scan, scopes, rewrites.
static void rewrite_all(void) {
    enum { NS = 'n', DEV = 'd', OTHER = 'o' };
    char stack[512], saved[512];
    int depth = 0, saved_depth = 0, pending = 0, pend_paren = 0, saved_pending = 0, cur_pp = 0;
    for (int k = 0; k < ntok; k++) {
        if (toks[k].pp != cur_pp) { // entering or leaving a directive: its braces stay inside it
            if (cur_pp) memcpy(stack, saved, sizeof stack), depth = saved_depth, pending = saved_pending;
            if (toks[k].pp) memcpy(saved, stack, sizeof stack), saved_depth = depth, saved_pending = pending;
            cur_pp = toks[k].pp;
        }
        scan_features(k);
        rewrite_std_math(k);
        int in_dev = 0, in_fn = 0;
        for (int d = 0; d < depth && d < 512; d++) in_dev |= stack[d] == DEV, in_fn |= stack[d] != NS;
        if (tok_is(k, "__global__") || tok_is(k, "__device__")) {
            if (tok_is(k, "__global__")) rewrite_kernel(k, !in_fn);
            if (!pending) pending = 1, pend_paren = 0;
        } else if (tok_is(k, "(") && pending) pend_paren++;
        else if (tok_is(k, ")") && pending) pend_paren--;
        else if ((tok_is(k, ";") || tok_is(k, "=")) && pending && pend_paren <= 0) pending = 0;
        else if (tok_is(k, "{")) {
            char kind = OTHER;
            if (pending && pend_paren <= 0) kind = DEV, pending = 0;
            else {
                int j = k - 1;
                while (tok_ident(j) || tok_is(j, "::")) {
                    if (tok_is(j, "namespace")) { kind = NS; break; }
                    j--;
                }
                if (tok_is(k - 1, "namespace") || (k >= 2 && toks[k - 1].kind == T_STR && tok_is(k - 2, "extern")))
                    kind = NS;
            }
            if (depth < 512) stack[depth] = kind;
            depth++;
        } else if (tok_is(k, "}")) {
            if (depth > 0) depth--;
        } else if (tok_is(k, "<<<")) {
            if (in_dev) feature("dynamic parallelism", k);
            else if (!rewrite_launch(k))
                fprintf(stderr, "nvcc-emu: %s:%d: warning: cannot read this launch (KERNEL<<<G, B[, S[, ST]]>>>(ARGS)); left as it is\n",
                        srcname, toks[k].line);
        } else if (tok_is(k, "extern")) { // extern [volatile|const|__align__(..)]... __shared__
            int j = k + 1;
            for (;;) {
                if (tok_is(j, "volatile") || tok_is(j, "const")) j++;
                else if (skip_attr(j) != j) j = skip_attr(j);
                else break;
            }
            if (tok_is(j, "__shared__") && toks[j].pp == toks[k].pp && rewrite_extern_shared(k))
                k = decl_end(k); // its tokens hold nothing more to rewrite
        } else if (tok_is(k, "__shared__")) {
            int end = in_fn ? rewrite_static_shared(k) : -1;
            if (end >= 0) { k = end; continue; }
            // left a static variable (file scope, or a form the rewrite does not take): the
            // runtime's __shared__ is `static`, so a `static` next to it would be said twice
            for (int j = k - 1; j <= k + 1; j += 2)
                if (tok_is(j, "static") && toks[j].pp == toks[k].pp) {
                    size_t e = toks[j].e;
                    while (e < srclen && (src[e] == ' ' || src[e] == '\t')) e++;
                    Buf none = { 0 };
                    edit(toks[j].s, e, &none);
                }
        }
    }
}

static int cmp_edit(const void *a, const void *b) { // by position; an insertion before a replacement there
    const Edit *x = a, *y = b;
    return x->s != y->s ? (x->s < y->s ? -1 : 1) : x->e < y->e ? -1 : x->e > y->e ? 1 : 0;
}

static void apply_edits(Buf *out) {
    if (nedit) qsort(edits, (size_t)nedit, sizeof *edits, cmp_edit); // edits is NULL while empty
    size_t pos = 0;
    for (int j = 0; j < nedit; j++) {
        if (edits[j].s < pos) continue; // overlapping: keep the first
        buf_put(out, src + pos, edits[j].s - pos);
        buf_puts(out, edits[j].text);
        pos = edits[j].e;
    }
    buf_put(out, src + pos, srclen - pos);
}

// ----------------------------------------------------------------------------
// The precompiled runtime. Parsing cuemu.h and the C++ headers it pulls in is about 40% of
// a build; `--build-pch` does it once into EMUDIR/pch/cuemu.h.gch with the flags of every
// build, and builds then include EMUDIR/pch/cuemu.h, for which g++ loads the .gch (g++
// checks the flags itself and reads the text when they differ).

// Flags of every compilation, the precompiled header's included.
static const char *const fixed_flags[] = { "-std=c++17", "-O1", "-g", "-w", NULL };

static time_t mtime_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mtime : 0;
}

// Newest modification time of the regular files in dir and its subdirectories.
static time_t newest_in(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    time_t newest = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        time_t t = S_ISDIR(st.st_mode) ? newest_in(path) : st.st_mtime;
        if (t > newest) newest = t;
    }
    closedir(d);
    return newest;
}

// The .gch is used when it is at least as new as the runtime and every stand-in header
// (g++ would take a stale one without a word). Not for a build with other code generation
// (AddressSanitizer, --fma): such builds parse the runtime themselves.
static int use_pch(const char *emudir, int other_codegen) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/pch/cuemu.h.gch", emudir);
    time_t gch = mtime_of(path);
    snprintf(path, sizeof path, "%s/cuemu.h", emudir);
    char inc[PATH_MAX + 16];
    snprintf(inc, sizeof inc, "%s/include", emudir);
    return !other_codegen && gch && gch >= mtime_of(path) && gch >= newest_in(inc);
}

// --fma: the flags that make g++ fuse a * b + c as nvcc does by default (at -O1 it fuses
// only with -fexpensive-optimizations); -1 with a message where the CPU has no FMA.
static int fma_flags(char **cmd, int *nc) {
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("fma")) { fprintf(stderr, "nvcc-emu: --fma: this CPU has no FMA\n"); return -1; }
    cmd[(*nc)++] = "-mfma";
#elif !defined(__aarch64__)
    fprintf(stderr, "nvcc-emu: --fma: only on x86-64 and aarch64\n");
    return -1;
#endif
    cmd[(*nc)++] = "-ffp-contract=fast";
    cmd[(*nc)++] = "-fexpensive-optimizations";
    return 0;
}

// Runs argv and waits; returns its exit status (128 + signal when killed).
static int run_command(char **argv) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) { fprintf(stderr, "nvcc-emu: fork: %s\n", strerror(errno)); return 2; }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "nvcc-emu: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int ws = 0;
    pid_t done;
    do done = waitpid(pid, &ws, 0); while (done < 0 && errno == EINTR);
    if (done < 0) { fprintf(stderr, "nvcc-emu: waiting for %s: %s\n", argv[0], strerror(errno)); return 2; }
    if (WIFEXITED(ws)) return WEXITSTATUS(ws);
    fprintf(stderr, "nvcc-emu: %s killed by signal %d\n", argv[0], WTERMSIG(ws));
    return 128 + WTERMSIG(ws);
}

// --build-pch: EMUDIR/pch/cuemu.h.gch, written to a temporary name and renamed, so
// builds running meanwhile see the old file or the new one, never half of one.
static int build_pch(const char *emudir, char **cxx, int ncxx) {
    char src[PATH_MAX + 32], gch[PATH_MAX + 32], tmp[PATH_MAX + 48], inc[PATH_MAX + 16];
    snprintf(src, sizeof src, "%s/pch/cuemu.h", emudir);
    snprintf(gch, sizeof gch, "%s/pch/cuemu.h.gch", emudir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", gch, (long)getpid());
    snprintf(inc, sizeof inc, "%s/include", emudir);
    char *cmd[48];
    int nc = 0;
    for (int j = 0; j < ncxx; j++) cmd[nc++] = cxx[j];
    for (int j = 0; fixed_flags[j]; j++) cmd[nc++] = (char *)fixed_flags[j];
    char *rest[] = { "-I", inc, "-x", "c++-header", src, "-o", tmp, NULL };
    for (int j = 0; rest[j]; j++) cmd[nc++] = rest[j];
    cmd[nc] = NULL;
    int status = run_command(cmd);
    if (status == 0 && rename(tmp, gch) != 0) {
        fprintf(stderr, "nvcc-emu: cannot rename %s to %s: %s\n", tmp, gch, strerror(errno));
        status = 2;
    }
    if (status != 0) unlink(tmp);
    return status;
}

// ----------------------------------------------------------------------------
// Driver

// The edit distance of a and b (insertions, deletions, substitutions), capped at 3: how a
// mistyped option of nvcc-emu's own is told from an nvcc option it ignores.
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32 || (la > lb ? la - lb : lb - la) > 3) return 3;
    int d[33][33];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb] < 3 ? d[la][lb] : 3;
}
// nvcc-emu's own option that a an unknown option is one or two typos away from (--asna,
// -asan), or NULL: such a mistake must not silently build without what was asked.
static const char *own_option_near(const char *a) {
    static const char *const own[] = { "--asan", "--fma", "--keep", "--rewrite-only", "--build-pch", "--ptxas-info",
                                       "--help", NULL };
    for (int j = 0; own[j]; j++)
        if (edit_distance(a, own[j]) <= 2) return own[j];
    return NULL;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: nvcc-emu [options] FILE.cu [FILE.cu | FILE.c | FILE.o ...]\n"
            "Builds a CUDA C++ program into a CPU executable with the emulator runtime (emu/cuemu.h).\n"
            "Each .cu/.cuh/.cpp/.cc/.cxx input is rewritten and compiled as C++; other inputs (.c, .o, .a)\n"
            "go to the compiler as they are. Files reached by #include are not rewritten: keep kernels\n"
            "and launches in the files named here. Each source's directory is on the quote-include path.\n"
            "  -o OUT            the executable (default a.out; with -c, SOURCE.o); never an input\n"
            "  -I DIR, -IDIR     include directory (passed to the compiler; also --include-path DIR)\n"
            "  -D NAME[=V]       macro definition (passed to the compiler; also --define-macro)\n"
            "  -l LIB, -lLIB     link a library; -L DIR likewise (also --library, --library-path)\n"
            "  -c                compile one source only (an object file; also --compile, -dc)\n"
            "  --asan            build with AddressSanitizer (-fsanitize=address)\n"
            "  --fma             contract a * b + c into fused multiply-adds, as nvcc does by default\n"
            "                    (--fmad=true); the CPU must have them (x86-64 with FMA, or aarch64)\n"
            "  --ptxas-info FILE the kernels' registers and static shared memory from nvcc -Xptxas -v's\n"
            "                    report (its stderr): a launch a GPU would refuse for them fails as there\n"
            "                    (cudaErrorLaunchOutOfResources, cudaErrorInvalidValue)\n"
            "  --rewrite-only    print the rewritten source to stdout; compile nothing\n"
            "  --keep            keep the rewritten temporary file and print its path (also -keep)\n"
            "  --build-pch       precompile the runtime (EMUDIR/pch/cuemu.h.gch), which makes builds\n"
            "                    about 40%% faster; make does it\n"
            "  --help            this text\n"
            "Accepted and ignored (they only matter for a GPU): -O*, -g, -G, -lineinfo, -arch=*, -arch X,\n"
            "  -code=*, -gencode X, -std=* (always C++17), --use_fast_math, -Xptxas X, -Xcompiler X,\n"
            "  -Xlinker X, -ccbin X, -maxrregcount N, -rdc X, -x cu, -m64, -cudart X, --keep-dir X,\n"
            "  --expt-*, -Wno-* and any other option starting with '-' but these, refused: -E, -M, -MM,\n"
            "  -MD, -MMD, -ptx, -cubin, -fatbin, -lib, -dlink, -run and their long forms (they ask for\n"
            "  another output), and options a typo or two away from the ones above (--asna, -asan).\n"
            "Environment: CXX (default g++). Exit status: the compiler's; 3 when the program uses a\n"
            "CUDA feature the emulator does not model (textures, inline PTX, grid-wide sync, dynamic\n"
            "parallelism, CUDA graphs, cuBLAS/cuFFT/cuRAND/Thrust/CUB, ...); 2 for a usage error.\n");
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    Buf b = { 0 };
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf_put(&b, tmp, n);
    int err = ferror(f);
    fclose(f);
    if (err) { free(b.s); return NULL; }
    if (!b.s) b.s = calloc(1, 1);
    *len = b.len;
    return b.s;
}

// Is path a source to rewrite and compile as C++ (.cu .cuh .cpp .cc .cxx), as nvcc would?
static int is_cuda_source(const char *path) {
    const char *dot = strrchr(path, '.');
    static const char *const exts[] = { ".cu", ".cuh", ".cpp", ".cc", ".cxx", NULL };
    for (int j = 0; dot && exts[j]; j++)
        if (strcmp(dot, exts[j]) == 0) return 1;
    return 0;
}

// Reads, scans and rewrites one source into a new temporary file (its path into tmp), with
// tail (or nothing) after it. Returns 0, 3 when it uses an unmodelled feature (reported,
// no file written), 2 on errors. With rewrite_only, prints the result instead of writing a file.
static int rewrite_file(const char *input, const char *tail, int rewrite_only, char *tmp, size_t tmpsize) {
    srcname = input;
    src = read_all(input, &srclen);
    if (!src) { fprintf(stderr, "nvcc-emu: cannot read %s: %s\n", input, strerror(errno)); return 2; }
    ntok = nedit = nfeat = 0;
    lex();
    find_bounded();
    find_std_math_own();
    rewrite_all();
    Buf text = { 0 };
    buf_puts(&text, "#line 1 \"");
    for (const char *p = input; *p; p++) {
        if (*p == '"' || *p == '\\') buf_puts(&text, "\\");
        buf_put(&text, p, 1);
    }
    buf_puts(&text, "\"\n");
    apply_edits(&text);
    if (tail) buf_puts(&text, tail);
    for (int j = 0; j < nfeat; j++)
        fprintf(stderr, "nvcc-emu: %s:%d: unsupported feature: %s (%s)\n", input, feats[j].line, feats[j].name, feats[j].what);
    if (rewrite_only) {
        fwrite(text.s, 1, text.len, stdout);
        return nfeat ? 3 : 0;
    }
    if (nfeat) return 3;
    const char *tmpdir = getenv("TMPDIR");
    snprintf(tmp, tmpsize, "%s/nvcc-emu-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(tmp); // the compiler gets -x c++, so no suffix is needed
    if (fd < 0) { fprintf(stderr, "nvcc-emu: cannot create a temporary file %s: %s\n", tmp, strerror(errno)); return 2; }
    FILE *tf = fdopen(fd, "wb");
    if (!tf || fwrite(text.s, 1, text.len, tf) != text.len || fclose(tf) != 0) {
        fprintf(stderr, "nvcc-emu: cannot write %s\n", tmp);
        unlink(tmp);
        return 2;
    }
    free(text.s);
    return 0;
}

// ----------------------------------------------------------------------------
// --ptxas-info FILE: the kernels' resources as ptxas reported them (nvcc -Xptxas -v), for
// the runtime to refuse the launches a GPU refuses (too many registers for the block, too
// much shared memory). The report says, per kernel,
//   ptxas info    : Compiling entry function '_Z6kernelPfi' for 'sm_90'
//   ...
//   ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem
// and becomes a definition appended to the first rewritten source:
//   extern "C" __attribute__((weak)) const char cuemu_ptxas_info[] = "_Z6kernelPfi 40 4096\n";
// (weak: several sources compiled with -c and linked together define it once).

// The definition for the report at path into out; 2 with a message when it cannot be read.
// A report without kernels (a program without device code) gives an empty table, with a
// warning (the report of nvcc without -Xptxas -v looks the same).
static int ptxas_table(const char *path, Buf *out) {
    size_t len;
    char *text = read_all(path, &len);
    if (!text) { fprintf(stderr, "nvcc-emu: --ptxas-info: cannot read %s: %s\n", path, strerror(errno)); return 2; }
    buf_puts(out, "\nextern \"C\" __attribute__((weak)) const char cuemu_ptxas_info[] = \"");
    char name[512] = "";
    int nkernels = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        const char *entry = strstr(line, "Compiling entry function '"), *used = strstr(line, ": Used ");
        int regs;
        if (entry) {
            entry += strlen("Compiling entry function '");
            size_t n = strspn(entry, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.");
            snprintf(name, sizeof name, "%.*s", entry[n] == '\'' && n < sizeof name ? (int)n : 0, entry);
        } else if (used && name[0] && sscanf(used, ": Used %d registers", &regs) == 1) {
            const char *smem = strstr(used, " bytes smem");
            while (smem && smem > used && smem[-1] >= '0' && smem[-1] <= '9') smem--;
            buf_printf(out, "%s %d %ld\\n", name, regs, smem ? atol(smem) : 0L);
            name[0] = 0; // one line per kernel
            nkernels++;
        }
    }
    free(text);
    buf_puts(out, "\";\n");
    if (!nkernels)
        fprintf(stderr, "nvcc-emu: warning: --ptxas-info %s names no kernel (no \"Compiling entry function\" line "
                        "followed by \"Used N registers\"; nvcc -Xptxas -v writes them): no launch is checked for "
                        "its resources\n", path);
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGCHLD, SIG_DFL); // inherited as SIG_IGN, it would have the kernel reap g++ before waitpid sees it
    const char *out = NULL; // -o, else a.out (with -c: the source's name with .o, as nvcc)
    int asan = 0, fma = 0, rewrite_only = 0, keep = 0, compile_only = 0, pch_only = 0;
    const char *ptxas_info = NULL;
    char **pass = xrealloc(NULL, sizeof(char *) * (size_t)(2 * argc + 2)); // -I/-D/-l/-L passed through
    const char **inputs = xrealloc(NULL, sizeof(char *) * (size_t)argc);
    int npass = 0, ninput = 0;
    static const char *ignored_with_value[] = { "-arch", "-gencode", "-code", "-Xptxas", "-Xcompiler", "-Xlinker", "-ccbin",
                                                "-maxrregcount", "--maxrregcount", "-rdc", "-x", "--compiler-options",
                                                "--linker-options", "--ptxas-options", "-t", "--threads", "-diag-suppress",
                                                "--diag-suppress", "--default-stream", "-Xcudafe", "--gpu-architecture",
                                                "--gpu-code", "-std", "--std", "-ptxas-options", "-Xnvlink", "--keep-dir",
                                                "-keep-dir", "-odir", "--output-directory", "--generate-code",
                                                "-cudart", "--cudart", "--compiler-bindir", "-Xarchive", NULL };
    // nvcc's long forms of -I -D -l -L, and outputs other than an executable or an object
    static const char *const long_form[][2] = { { "--include-path", "-I" }, { "--define-macro", "-D" },
                                                { "--library", "-l" }, { "--library-path", "-L" } };
    static const char *unsupported[] = { "-E", "--preprocess", "-M", "-MM", "-MD", "-MMD", "--generate-dependencies",
                                         "-ptx", "--ptx", "-cubin", "--cubin", "-fatbin", "--fatbin", "-lib", "--lib",
                                         "-dlink", "--device-link", "-run", "--run", NULL };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        for (int j = 0; unsupported[j]; j++)
            if (strcmp(a, unsupported[j]) == 0) {
                fprintf(stderr, "nvcc-emu: %s is not supported: it builds an executable, or an object with -c\n", a);
                return 2;
            }
        for (size_t j = 0; j < sizeof long_form / sizeof long_form[0]; j++)
            if (strcmp(a, long_form[j][0]) == 0) {
                if (!has) { fprintf(stderr, "nvcc-emu: %s needs a value\n", a); return 2; }
                pass[npass++] = strdup(long_form[j][1]);
                pass[npass++] = argv[++i];
                a = NULL;
                break;
            }
        if (!a) continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-help") == 0 || strcmp(a, "-h") == 0) { usage(stdout); return 0; }
        else if (strcmp(a, "--asan") == 0) asan = 1;
        else if (strcmp(a, "--fma") == 0) fma = 1;
        else if (strcmp(a, "--rewrite-only") == 0) rewrite_only = 1;
        else if (strcmp(a, "--keep") == 0 || strcmp(a, "-keep") == 0) keep = 1; // (nvcc spells it both ways)
        else if (strcmp(a, "--build-pch") == 0) pch_only = 1;
        else if (strcmp(a, "-c") == 0 || strcmp(a, "--compile") == 0 || strcmp(a, "-dc") == 0 ||
                 strcmp(a, "--device-c") == 0)
            compile_only = 1;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--output-file") == 0 || strcmp(a, "--ptxas-info") == 0) {
            if (!has) { fprintf(stderr, "nvcc-emu: %s needs a value\n", a); return 2; }
            if (strcmp(a, "--ptxas-info") == 0) ptxas_info = argv[++i];
            else out = argv[++i];
        } else if (strcmp(a, "-lineinfo") == 0) {
            // ignored (a GPU matter)
        } else if (a[0] == '-' && a[1] && strchr("IDlL", a[1])) {
            char flag[3] = { '-', a[1], 0 };
            const char *v = a[2] ? a + 2 : has ? argv[++i] : NULL;
            if (!v) { fprintf(stderr, "nvcc-emu: %s needs a value\n", a); return 2; }
            pass[npass++] = strdup(flag);
            pass[npass++] = (char *)v;
        } else if (a[0] == '-' && a[1]) {
            int known = 0;
            for (int j = 0; ignored_with_value[j] && !known; j++)
                if (strcmp(a, ignored_with_value[j]) == 0) {
                    if (!has) { fprintf(stderr, "nvcc-emu: %s needs a value\n", a); return 2; }
                    i++;
                    known = 1;
                }
            const char *near = known ? NULL : own_option_near(a);
            if (near) {
                fprintf(stderr, "nvcc-emu: unknown option %s: did you mean %s? (nvcc's own options are accepted and "
                                "ignored; nvcc-emu --help lists its options)\n", a, near);
                return 2;
            }
        } else inputs[ninput++] = a;
    }
    if (!ninput && !pch_only) { usage(stderr); return 2; }
    if (compile_only && ninput > 1) { fprintf(stderr, "nvcc-emu: -c takes one source file (compile each on its own)\n"); return 2; }
    char object[PATH_MAX];
    if (!out && compile_only) { // nvcc's name: the source's, in the current directory, with .o
        const char *base = strrchr(inputs[0], '/') ? strrchr(inputs[0], '/') + 1 : inputs[0];
        const char *dot = strrchr(base, '.');
        snprintf(object, sizeof object, "%.*s.o", dot ? (int)(dot - base) : (int)strlen(base), base);
        out = object;
    }
    if (!out) out = "a.out";
    for (int j = 0; j < ninput; j++) {
        struct stat si, so;
        if (stat(inputs[j], &si) == 0 && stat(out, &so) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
            fprintf(stderr, "nvcc-emu: -o %s is the input %s: it would be overwritten\n", out, inputs[j]);
            return 2;
        }
    }
    if (ninput && pch_only) { fprintf(stderr, "nvcc-emu: --build-pch takes no input files\n"); return 2; }
    Buf table = { 0 };
    if (ptxas_info && ptxas_table(ptxas_info, &table)) return 2;
    if (rewrite_only) {
        if (ninput != 1 || !is_cuda_source(inputs[0])) { fprintf(stderr, "nvcc-emu: --rewrite-only takes one .cu file\n"); return 2; }
        return rewrite_file(inputs[0], table.s, 1, NULL, 0);
    }

    // EMUDIR: the directory of this executable
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) { fprintf(stderr, "nvcc-emu: cannot find my own directory (/proc/self/exe)\n"); return 2; }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    char header[PATH_MAX + 16], incdir[PATH_MAX + 16];
    snprintf(header, sizeof header, "%s/cuemu.h", exe);
    snprintf(incdir, sizeof incdir, "%s/include", exe);
    if (access(header, R_OK) != 0) { fprintf(stderr, "nvcc-emu: the runtime header %s is missing\n", header); return 2; }
    // the compiler: CXX split at spaces ("ccache g++" works)
    const char *cxx = getenv("CXX");
    char *cxxcopy = strdup(cxx && *cxx ? cxx : "g++"), *cxxwords[16];
    int ncxx = 0;
    for (char *save = NULL, *w = strtok_r(cxxcopy, " \t", &save); w && ncxx < 16; w = strtok_r(NULL, " \t", &save))
        cxxwords[ncxx++] = w;
    if (pch_only) return build_pch(exe, cxxwords, ncxx);
    if (use_pch(exe, asan || fma)) snprintf(header, sizeof header, "%s/pch/cuemu.h", exe);

    // Rewrite every CUDA source into a temporary file; an unmodelled feature anywhere stops the build.
    char (*tmps)[PATH_MAX] = xrealloc(NULL, sizeof *tmps * (size_t)ninput);
    int status = 0, ntmp = 0;
    for (int j = 0; j < ninput && status != 2; j++) {
        if (!is_cuda_source(inputs[j])) continue;
        int st = rewrite_file(inputs[j], ntmp ? NULL : table.s, 0, tmps[ntmp], sizeof tmps[ntmp]);
        if (st == 0) {
            if (keep) fprintf(stderr, "nvcc-emu: %s rewritten into %s (kept)\n", inputs[j], tmps[ntmp]);
            ntmp++;
        } else status = st > status ? st : status;
    }

    // the command line: CXX split at spaces, the fixed flags, then per source -iquote its
    // directory (nvcc finds "x.h" beside the source; the rewritten copy lives elsewhere)
    char **cmd = xrealloc(NULL, sizeof(char *) * (size_t)(npass + 4 * ninput + 64));
    int nc = 0;
    for (int j = 0; j < ncxx; j++) cmd[nc++] = cxxwords[j];
    for (int j = 0; fixed_flags[j]; j++) cmd[nc++] = (char *)fixed_flags[j];
    cmd[nc++] = "-I", cmd[nc++] = incdir, cmd[nc++] = "-include", cmd[nc++] = header;
    if (asan) cmd[nc++] = "-fsanitize=address", cmd[nc++] = "-fno-omit-frame-pointer";
    if (fma && fma_flags(cmd, &nc)) return 2;
    if (compile_only) cmd[nc++] = "-c";
    for (int j = 0; j < npass; j += 2)
        if (strcmp(pass[j], "-I") == 0 || strcmp(pass[j], "-D") == 0) cmd[nc++] = pass[j], cmd[nc++] = pass[j + 1];
    for (int j = 0; j < ninput; j++) {
        if (!is_cuda_source(inputs[j])) continue;
        char *dir = strdup(inputs[j]), *sl = strrchr(dir, '/');
        if (sl) *sl = 0; else strcpy(dir, ".");
        cmd[nc++] = "-iquote", cmd[nc++] = dir;
    }
    cmd[nc++] = "-x", cmd[nc++] = "c++";
    for (int j = 0; j < ntmp; j++) cmd[nc++] = tmps[j];
    cmd[nc++] = "-x", cmd[nc++] = "none";
    for (int j = 0; j < ninput; j++)
        if (!is_cuda_source(inputs[j])) cmd[nc++] = (char *)inputs[j];
    cmd[nc++] = "-o", cmd[nc++] = (char *)out;
    if (!compile_only) {
        for (int j = 0; j < npass; j += 2)
            if (strcmp(pass[j], "-l") == 0 || strcmp(pass[j], "-L") == 0) cmd[nc++] = pass[j], cmd[nc++] = pass[j + 1];
        cmd[nc++] = "-lm";
        cmd[nc++] = "-lpthread";
        cmd[nc++] = "-rdynamic"; // the kernels' symbols, for the runtime's dladdr (cudaFuncGetAttributes)
    }
    cmd[nc] = NULL;
    if (status == 0 && getenv("NVCC_EMU_VERBOSE")) {
        for (int j = 0; j < nc; j++) fprintf(stderr, "%s%s", j ? " " : "", cmd[j]);
        fprintf(stderr, "\n");
    }
    if (status == 0) status = run_command(cmd);
    if (!keep)
        for (int j = 0; j < ntmp; j++) unlink(tmps[j]);
    return status;
}
