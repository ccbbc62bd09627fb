/* data/annotate.h — the CUDA-sensitivity annotator of cuset (eq. 3), in one header.

   Finds the byte ranges of a CUDA program that CuSeT weights as CUDA-sensitive; the rules
   (lexing, definitions, launches, dim3) and their known limits are below.

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_ANNOTATE_IMPLEMENTATION
       #include "data/annotate.h"
   Depends on libc and stb_ds (Debian libstb-dev), like data/tokenizer.h. */
#ifndef CUSET_ANNOTATE_H
#define CUSET_ANNOTATE_H

#include <stddef.h>
#include <stb/stb_ds.h>

#ifdef __cplusplus
extern "C" {
#endif

// The CUDA-sensitivity annotator (eq. 3 of the method, README.md): the byte ranges of
// a CUDA program that CuSeT weights as CUDA-sensitive: __global__ / __device__ function
// definitions, kernel launches and dim3 declarations. A token is CUDA-sensitive when any
// of its bytes lies in a span (cuset_span_flags gives the per-byte answer).
//
// THE SPAN RULES (every span is a byte range [start, end) of src)
//
// 0. Lexing. (emu/nvcc-emu.c has a lexer too, for another job: it rewrites launches for a
//    compiler and may reject what it does not understand, while this one must accept any
//    bytes and report exact byte ranges; and nvcc-emu builds alone, without these headers.)
//    The source is cut into tokens first; these are skipped as a whole, so
//    nothing inside them ever counts (no braces, no <<<, no __global__, no dim3):
//    - comments: // to the end of the line (a backslash at the end of the line
//      continues it, as in C), and /* ... */;
//    - string and character literals, with backslash escapes; an unterminated one
//      stops at the end of its line (a compiler rejects it there too); C++ raw
//      strings R"d( ... )d" (also u8R, uR, UR, LR) may span lines;
//    - preprocessor directives: a '#' that is the first token of its line, through
//      the end of the line and every backslash-continued line after it (comments and
//      literals inside the directive are honoured).
//    Macros are treated as opaque text: a #define whose body holds __global__ or
//    k<<<...>>> is not a span, and macro uses are not expanded (so `#define DEV
//    __device__` + `DEV int f() {...}` is not recognised). A macro body is not code
//    at the place where it is written, and guessing expansions would make the
//    annotator unpredictable. Directive lines inside a span (#pragma unroll in a
//    kernel) are simply inside its byte range.
//    Numbers follow the preprocessor's pp-number rule, so the C++14 digit separator
//    in 1'000 does not open a character literal. Line splices (backslash-newline)
//    between tokens are ignored; so is a UTF-8 byte order mark. Bytes >= 0x80 are
//    identifier characters. Both branches of #if/#else are read as code.
//    Brackets (), [] and {} are then paired; a '}' also closes any ( or [ still
//    open inside its block, and a stray closer is ignored.
//
// 1. GLOBAL_DEF, DEVICE_DEF: a function definition whose declaration contains the
//    token __global__ (GLOBAL_DEF) or __device__ (DEVICE_DEF; __host__ __device__
//    functions are device functions).
//    start: the first token of the declaration, i.e. the first token after the
//      previous ';', '{', '}' or access label (public: private: protected:) at the
//      same bracket level, or the first token of the file. The span therefore
//      includes template<...>, extern "C", static, inline, [[attributes]],
//      __attribute__((...)), __launch_bounds__(...), __forceinline__ and the return
//      type, but never a comment or a directive line before the declaration.
//    end: the '}' closing the body, inclusive; the end of input if it never closes.
//    A declaration is a definition when, read left to right at its own bracket
//    level, a parenthesised group (the parameter list; the groups of __attribute__,
//    __launch_bounds__, __align__, alignas, decltype, noexcept, throw, sizeof and
//    alignof do not count) comes before a '{', with no initialiser '=' in between.
//    A constructor's member-initialiser list (": x(a), y{b}") is stepped over.
//    Not spans: prototypes ending in ';' (and "= delete;"), __device__ variables
//    (`__device__ int counter;`, `__device__ float t[3] = {1, 2, 3};`), extended
//    lambdas (`[=] __device__ (int i) { ... }`), a __device__ written inside ( ) or
//    [ ], and a declaration cut off by the end of input before its body.
//    Definitions are not nested: anything inside one (say a member function of a
//    local struct) is part of it and is not reported again.
//
// 2. LAUNCH: `kernel<<<config>>>(args);`
//    start: the kernel expression before the '<<<': a name, optionally qualified
//      (ns::k, ::k, ns::template k, obj.k, p->k), with optional template arguments
//      (k<float, 4>), then optional subscripts and calls (table[i], pick(3)); or a
//      parenthesised expression ((fp)<<<..., also right after if (...)).
//    The configuration runs to the first '>>>' (three adjacent '>') outside
//    brackets, so a shift such as (n+255)>>8 inside it does no harm.
//    end: the ')' closing the argument list, plus the ';' right after it when there
//      is one. Unterminated: the end of input. A ';' or an enclosing closing bracket
//      met before the '>>>' ends the span there (malformed launch).
//    A '<<<' not preceded by such an expression (a "<<<<<<<" merge marker) is not a
//    launch. A '<<<' inside an earlier launch span belongs to it and is not reported.
//
// 3. DIM3: a declaration statement whose type is dim3.
//    start: the token dim3, or the first of the qualifiers right before it (const
//      static constexpr volatile extern register thread_local __shared__
//      __constant__ __device__ __managed__), when that token begins a statement
//      (preceded by ';', '{', '}', ')', a label ':' or nothing) and dim3 is followed
//      by a name, '*' or '&'.
//    end: the ';' at its bracket level, inclusive, covering every declarator
//      (`dim3 a(1), c(2);`). Unterminated: the end of input; an enclosing closing
//      bracket ends it just before.
//    Not spans: dim3 in expressions (dim3(16, 16), return dim3(n), auto g =
//    dim3(2)), parameters, and functions returning dim3: definitions, and
//    prototypes recognised by their parameter list (`dim3 f();`, `dim3 f(int n);`,
//    `dim3 f(int);`). A dim3 inside an earlier dim3 statement belongs to it.
//
// Nesting and order: launches and dim3 declarations inside a function definition
// (dynamic parallelism) are reported too, besides the definition, so spans can
// nest; a dim3 declaration inside a launch's arguments (in a lambda) is reported
// too. Same-kind spans never nest (see above). The spans appended are sorted by
// start, then by end descending (outer first), then by kind.
// Cost: linear in len: one lexing pass, one bracket-pairing pass, and three scans
// that each look at a token a bounded number of times; memory 32 bytes per token.
//
// Known limits: both branches of an #if are read, so `#if A` `{` `#else` `{`
// `#endif` leaves a brace open; macros are not expanded; a '>>>' inside a template
// argument list within a launch configuration (k<<<f<g<int>>>(x), 1>>>) ends the
// configuration early; digraphs (<% %>) are not recognised.


typedef enum { CUSET_SPAN_GLOBAL_DEF = 1, CUSET_SPAN_DEVICE_DEF, CUSET_SPAN_LAUNCH, CUSET_SPAN_DIM3 } CusetSpanKind;
typedef struct { size_t start, end; CusetSpanKind kind; } CusetSpan; // byte range [start, end)

// Appends the CUDA-sensitive spans of src[0..len) to *spans (an stb_ds array), sorted
// by start; returns how many were appended.
size_t cuset_annotate(const char *src, size_t len, CusetSpan **spans);
// Sets flags[i] = 1 for every byte i of src that lies in some span, 0 otherwise (flags
// has len bytes). Any span order works; sorted spans take linear time.
void cuset_span_flags(const CusetSpan *spans, size_t nspans, unsigned char *flags, size_t len);
// "global_def", "device_def", "launch", "dim3" (or "?"), for logs and tests.
const char *cuset_span_kind_name(CusetSpanKind kind);

#ifdef __cplusplus
}
#endif
#endif // CUSET_ANNOTATE_H

#ifdef CUSET_ANNOTATE_IMPLEMENTATION
#ifndef CUSET_ANNOTATE_IMPLEMENTATION_DONE
#define CUSET_ANNOTATE_IMPLEMENTATION_DONE

#include <stdlib.h>
#include <string.h>
#if !defined(CUSET__STB_DS_COMPILED) && !defined(CUSET_NO_STB_DS_IMPLEMENTATION)
#define CUSET__STB_DS_COMPILED // once per program (CUSET_NO_STB_DS_IMPLEMENTATION: another file does)
#define STB_DS_IMPLEMENTATION
#include <stb/stb_ds.h>
#undef STB_DS_IMPLEMENTATION
#endif

// Tokens

enum { CUSET__TK_IDENT = 1, CUSET__TK_NUMBER, CUSET__TK_STRING, CUSET__TK_CHAR, CUSET__TK_PUNCT, CUSET__TK_SCOPE };
#define CUSET__NONE ((size_t)-1)

typedef struct {
    size_t start, end;      // byte range in src
    size_t pair;            // opener: its closer, or the '}' that cut it off, or ntok if never closed
                            // closer: its opener, or CUSET__NONE when stray; others: CUSET__NONE
    unsigned char kind;     // CUSET__TK_*
    char ch;                // the character of a one-byte punctuator, else 0
    unsigned char in_paren; // 1 when the innermost open bracket around it is ( or [
} cuset__tok;

static int cuset__ident_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c >= 0x80;
}
static int cuset__digit(unsigned char c) { return c >= '0' && c <= '9'; }

// Length of a line splice (backslash newline, or backslash CR LF) at i, else 0.
static size_t cuset__splice(const char *s, size_t len, size_t i) {
    if (i >= len || s[i] != '\\') return 0;
    if (i + 1 < len && s[i + 1] == '\n') return 2;
    if (i + 2 < len && s[i + 1] == '\r' && s[i + 2] == '\n') return 3;
    return 0;
}

// "// ..." at i: returns the index of the newline ending it (or len). A splice continues it.
static size_t cuset__skip_line_comment(const char *s, size_t len, size_t i) {
    i += 2;
    while (i < len && s[i] != '\n') {
        size_t sp = cuset__splice(s, len, i);
        i += sp ? sp : 1;
    }
    return i;
}

// "/* ... */" at i: returns the index after the "*/" (or len).
static size_t cuset__skip_block_comment(const char *s, size_t len, size_t i) {
    i += 2;
    while (i + 1 < len && !(s[i] == '*' && s[i + 1] == '/')) i++;
    return i + 1 < len ? i + 2 : len;
}

// A "..." or '...' literal whose quote is at i: returns the index after the closing
// quote. Backslash escapes the next byte; an unterminated literal stops at its newline.
static size_t cuset__skip_quoted(const char *s, size_t len, size_t i) {
    char q = s[i++];
    while (i < len) {
        if (s[i] == q) return i + 1;
        if (s[i] == '\n') return i;
        if (s[i] == '\\') {
            size_t sp = cuset__splice(s, len, i);
            i += sp ? sp : 2;
            continue;
        }
        i++;
    }
    return len;
}

// A C++ raw string R"d( ... )d" whose '"' is at i: returns the index after it (len if it
// never ends), or 0 when no valid "d(" follows (the caller then lexes a plain string).
static size_t cuset__skip_raw_string(const char *s, size_t len, size_t i) {
    size_t d = i + 1, dlen = 0;
    while (d + dlen < len && s[d + dlen] != '(') {
        char c = s[d + dlen];
        if (dlen == 16 || c == ' ' || c == ')' || c == '\\' || c == '"' || c == '\t' || c == '\n' || c == '\r') return 0;
        dlen++;
    }
    if (d + dlen >= len) return 0;
    for (size_t k = d + dlen + 1; k < len; k++)
        if (s[k] == ')' && k + 1 + dlen < len && s[k + 1 + dlen] == '"' && memcmp(s + k + 1, s + d, dlen) == 0)
            return k + 2 + dlen;
    return len;
}

// Does the identifier s[a..b) prefix a raw string (R, u8R, uR, UR, LR)?
static int cuset__raw_prefix(const char *s, size_t a, size_t b) {
    size_t n = b - a;
    return (n == 1 && s[a] == 'R') || (n == 2 && s[a + 1] == 'R' && (s[a] == 'u' || s[a] == 'U' || s[a] == 'L')) ||
           (n == 3 && s[a] == 'u' && s[a + 1] == '8' && s[a + 2] == 'R');
}

// A pp-number starting at i (a digit, or '.' then a digit): returns the index after it.
// Takes letters, digits, '.', exponent signs (1e+5, 0x1p-3) and digit separators (1'000).
static size_t cuset__skip_number(const char *s, size_t len, size_t i) {
    i++;
    while (i < len) {
        unsigned char c = (unsigned char)s[i], p = (unsigned char)s[i - 1];
        if ((c == '+' || c == '-') && (p == 'e' || p == 'E' || p == 'p' || p == 'P')) i++;
        else if (cuset__ident_char(c) || c == '.') i++;
        else if (c == '\'' && i + 1 < len && cuset__ident_char((unsigned char)s[i + 1])) i += 2;
        else break;
    }
    return i;
}

// A directive whose '#' is at i: returns the index of the newline that ends it (or len).
// Splices continue it; comments and literals inside are skipped whole.
static size_t cuset__skip_directive(const char *s, size_t len, size_t i) {
    i++;
    while (i < len && s[i] != '\n') {
        size_t sp = cuset__splice(s, len, i);
        if (sp) i += sp;
        else if (s[i] == '/' && i + 1 < len && s[i + 1] == '/') return cuset__skip_line_comment(s, len, i);
        else if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') i = cuset__skip_block_comment(s, len, i);
        else if (s[i] == '"' || s[i] == '\'') i = cuset__skip_quoted(s, len, i);
        else i++;
    }
    return i;
}

// Cuts src into tokens (an stb_ds array), dropping whitespace, comments and directives.
static cuset__tok *cuset__lex(const char *s, size_t len) {
    cuset__tok *toks = NULL;
    int bol = 1; // only whitespace and comments since the last newline: a '#' here is a directive
    size_t i = len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0; // skip a UTF-8 byte order mark
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        size_t sp;
        if (c == '\n') { bol = 1; i++; continue; }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { i++; continue; }
        if ((sp = cuset__splice(s, len, i)) != 0) { i += sp; continue; }
        if (c == '/' && i + 1 < len && s[i + 1] == '/') { i = cuset__skip_line_comment(s, len, i); continue; }
        if (c == '/' && i + 1 < len && s[i + 1] == '*') { i = cuset__skip_block_comment(s, len, i); continue; }
        if (c == '#' && bol) { i = cuset__skip_directive(s, len, i); continue; }

        cuset__tok t = { i, i, CUSET__NONE, 0, 0, 0 };
        if (cuset__ident_char(c) && !cuset__digit(c)) {
            while (i < len && cuset__ident_char((unsigned char)s[i])) i++;
            t.kind = CUSET__TK_IDENT;
            if (i < len && s[i] == '"' && cuset__raw_prefix(s, t.start, i)) {
                size_t r = cuset__skip_raw_string(s, len, i);
                if (r) { i = r; t.kind = CUSET__TK_STRING; }
            }
        } else if (cuset__digit(c) || (c == '.' && i + 1 < len && cuset__digit((unsigned char)s[i + 1]))) {
            i = cuset__skip_number(s, len, i);
            t.kind = CUSET__TK_NUMBER;
        } else if (c == '"' || c == '\'') {
            i = cuset__skip_quoted(s, len, i);
            t.kind = c == '"' ? CUSET__TK_STRING : CUSET__TK_CHAR;
        } else if (c == ':' && i + 1 < len && s[i + 1] == ':') {
            i += 2;
            t.kind = CUSET__TK_SCOPE;
        } else {
            i++;
            t.kind = CUSET__TK_PUNCT;
            t.ch = (char)c;
        }
        t.end = i;
        arrput(toks, t);
        bol = 0;
    }
    return toks;
}

// ----------------------------------------------------------------------------
// Bracket pairing and stepping

static int cuset__is_opener(char c) { return c == '(' || c == '[' || c == '{'; }
static int cuset__is_closer(char c) { return c == ')' || c == ']' || c == '}'; }
static char cuset__closer_of(char c) { return c == '(' ? ')' : c == '[' ? ']' : '}'; }

// Fills pair and in_paren (see cuset__tok) with one pass and a stack of open brackets.
static void cuset__pair_brackets(cuset__tok *t, size_t n) {
    size_t *open = NULL;  // indices of unclosed openers, innermost last
    size_t braces = 0;    // how many of them are '{'
    for (size_t i = 0; i < n; i++) {
        char c = t[i].ch;
        if (arrlen(open)) {
            char top = t[arrlast(open)].ch;
            t[i].in_paren = top == '(' || top == '[';
        }
        if (cuset__is_opener(c)) {
            t[i].pair = n; // until it closes
            arrput(open, i);
            braces += c == '{';
        } else if ((c == ')' || c == ']') && arrlen(open) && t[arrlast(open)].ch == (c == ')' ? '(' : '[')) {
            size_t o = arrpop(open);
            t[o].pair = i;
            t[i].pair = o;
        } else if (c == '}' && braces > 0) {
            for (;;) { // close everything up to and including the innermost '{'
                size_t o = arrpop(open);
                t[o].pair = i;
                if (t[o].ch == '{') { t[i].pair = o; braces--; break; }
            }
        }
    }
    arrfree(open);
}

// Index of the next token at the same bracket level as token j: after j, or after the
// whole group j opens. A group cut off by a '}' ends just before that '}'.
static size_t cuset__step(const cuset__tok *t, size_t n, size_t j) {
    if (!cuset__is_opener(t[j].ch)) return j + 1;
    size_t p = t[j].pair;
    if (p >= n) return n;
    return t[p].ch == cuset__closer_of(t[j].ch) ? p + 1 : p;
}

// Byte just past the group opened at j: its closer, its last token if cut off, or len.
static size_t cuset__group_end(const cuset__tok *t, size_t n, size_t j, size_t len) {
    size_t p = t[j].pair;
    if (p >= n) return len;
    return t[p].ch == cuset__closer_of(t[j].ch) ? t[p].end : t[p - 1].end;
}

// Is token j the identifier `word`?
static int cuset__is_word(const char *s, const cuset__tok *t, const char *word) {
    size_t n = strlen(word);
    return t->kind == CUSET__TK_IDENT && t->end - t->start == n && memcmp(s + t->start, word, n) == 0;
}

// Is token j one of the identifiers in the NULL-terminated list?
static int cuset__is_any_word(const char *s, const cuset__tok *t, const char *const *words) {
    for (; *words; words++)
        if (cuset__is_word(s, t, *words)) return 1;
    return 0;
}

// Are tokens j, j+1, j+2 three adjacent c characters ("<<<" or ">>>")?
static int cuset__is_triple(const cuset__tok *t, size_t n, size_t j, char c) {
    return j + 2 < n && t[j].ch == c && t[j + 1].ch == c && t[j + 2].ch == c &&
           t[j].end == t[j + 1].start && t[j + 1].end == t[j + 2].start;
}

// ----------------------------------------------------------------------------
// Rule 1: __global__ / __device__ function definitions

// Names whose parenthesised group is not a parameter list.
static const char *const cuset__attribute_words[] = {
    "__attribute__", "__launch_bounds__", "__align__", "alignas", "_Alignas", "__declspec", "decltype",
    "noexcept", "throw", "sizeof", "alignof", "__cluster_dims__", "__maxnreg__", NULL };

// Is the '=' at j an initialiser (not part of ==, <=, +=, ... nor operator=)?
static int cuset__is_assign(const char *s, const cuset__tok *t, size_t n, size_t j) {
    if (t[j].ch != '=') return 0;
    if (j > 0 && t[j - 1].end == t[j].start && t[j - 1].ch && strchr("=!<>+-*/%&|^~", t[j - 1].ch)) return 0;
    if (j + 1 < n && t[j + 1].ch == '=' && t[j].end == t[j + 1].start) return 0;
    if (j > 0 && cuset__is_word(s, &t[j - 1], "operator")) return 0;
    return 1;
}

// Is the execution-space keyword at i the "[capture] __device__ (...)" of an extended lambda?
static int cuset__after_lambda_capture(const char *s, const cuset__tok *t, size_t i) {
    if (i > 0 && (cuset__is_word(s, &t[i - 1], "__host__") || cuset__is_word(s, &t[i - 1], "__device__"))) i--;
    if (i == 0 || t[i - 1].ch != ']') return 0;
    return !(i >= 2 && t[i - 2].ch == ']'); // "[[attr]]" ends in two ']': an attribute
}

// First token of the declaration holding token i: walks back at i's bracket level to the
// previous ';', '{', '}' or access label, never below floor.
static size_t cuset__decl_start(const char *s, const cuset__tok *t, size_t i, size_t floor) {
    static const char *const access[] = { "public", "private", "protected", NULL };
    size_t k = i;
    while (k > floor) {
        const cuset__tok *p = &t[k - 1];
        if (p->ch == ';' || p->ch == '{' || p->ch == '}' || p->ch == '(' || p->ch == '[') break;
        if (p->ch == ')' || p->ch == ']') { // step back over the whole group
            if (p->pair == CUSET__NONE || p->pair < floor) break;
            k = p->pair;
            continue;
        }
        if (p->ch == ':' && k >= 2 && cuset__is_any_word(s, &t[k - 2], access)) break;
        k--;
    }
    return k;
}

// Steps over a constructor's member initialisers ("x(a), y{b}, Base<T>(c)...") starting
// at k (just after the ':'); returns the index of what follows, normally the body '{'.
static size_t cuset__skip_mem_inits(const cuset__tok *t, size_t n, size_t k) {
    while (k < n) {
        while (k < n && t[k].ch != '(' && t[k].ch != '{' && t[k].ch != ';' && !cuset__is_closer(t[k].ch))
            k = cuset__step(t, n, k);
        if (k >= n || (t[k].ch != '(' && t[k].ch != '{')) return k;
        k = cuset__step(t, n, k);                 // the initialiser group
        while (k < n && t[k].ch == '.') k++;      // a pack expansion "..."
        if (k < n && t[k].ch == ',') { k++; continue; }
        return k;
    }
    return k;
}

// Reads the declaration containing the specifier at i, left to right at its own level.
// Returns the index just after the declaration; *body is the index of the body's '{'
// when it is a function definition, else CUSET__NONE.
static size_t cuset__decl_scan(const char *s, const cuset__tok *t, size_t n, size_t i, size_t *body) {
    int params = 0, init = 0; // seen a parameter list / an initialiser '='
    size_t j = i + 1;
    *body = CUSET__NONE;
    while (j < n) {
        char c = t[j].ch;
        if (c == ';') return j + 1;
        if (cuset__is_closer(c)) return j; // an enclosing group closes: declaration cut short
        if (cuset__is_assign(s, t, n, j)) init = 1;
        if (c == '(' && !cuset__is_any_word(s, &t[j - 1], cuset__attribute_words)) params = 1;
        if (c == ':' && params && !init) { j = cuset__skip_mem_inits(t, n, j + 1); continue; }
        if (c == '{' && params && !init) { *body = j; return cuset__step(t, n, j); }
        j = cuset__step(t, n, j);
    }
    return n;
}

// Appends one span per __global__ / __device__ function definition.
static void cuset__find_functions(const char *s, size_t len, const cuset__tok *t, size_t n, CusetSpan **out) {
    size_t floor = 0; // tokens before floor belong to declarations already read
    size_t i = 0;
    while (i < n) {
        if (!cuset__is_word(s, &t[i], "__global__") && !cuset__is_word(s, &t[i], "__device__")) { i++; continue; }
        if (t[i].in_paren || cuset__after_lambda_capture(s, t, i)) { i++; continue; }
        size_t start = cuset__decl_start(s, t, i, floor), body;
        size_t next = cuset__decl_scan(s, t, n, i, &body);
        if (body != CUSET__NONE) {
            CusetSpanKind kind = CUSET_SPAN_DEVICE_DEF;
            for (size_t k = start; k < body; k++)
                if (cuset__is_word(s, &t[k], "__global__")) kind = CUSET_SPAN_GLOBAL_DEF;
            CusetSpan sp = { t[start].start, cuset__group_end(t, n, body, len), kind };
            arrput(*out, sp);
        }
        floor = i = next;
    }
}

// ----------------------------------------------------------------------------
// Rule 2: kernel launches

// Index of the '<' opening the template argument list whose '>' is at g, or CUSET__NONE.
static size_t cuset__template_open(const cuset__tok *t, size_t g, size_t floor) {
    size_t depth = 0;
    for (size_t k = g + 1; k > floor; k--) {
        const cuset__tok *p = &t[k - 1];
        if (p->ch == '>') depth++;
        else if (p->ch == '<' && --depth == 0) return k - 1;
        else if (p->ch == ')' || p->ch == ']') {
            if (p->pair == CUSET__NONE || p->pair < floor) return CUSET__NONE;
            k = p->pair + 1; // the loop's k-- lands on the opener's left
        } else if (p->ch == ';' || p->ch == '{' || p->ch == '}' || p->ch == '(' || p->ch == '[') return CUSET__NONE;
    }
    return CUSET__NONE;
}

// First token of the kernel expression ending just before the '<<<' at j, or CUSET__NONE
// when there is none. Never looks below floor.
static size_t cuset__kernel_start(const char *s, const cuset__tok *t, size_t j, size_t floor) {
    static const char *const control[] = { "if", "while", "for", "switch", "return", "else", "do", "case",
        "sizeof", "decltype", NULL };
    size_t k = j; // the expression is t[k..j)
    while (k > floor && (t[k - 1].ch == ')' || t[k - 1].ch == ']')) { // postfix groups: table[i], get(3)
        char c = t[k - 1].ch;
        if (t[k - 1].pair == CUSET__NONE || t[k - 1].pair < floor) return CUSET__NONE;
        k = t[k - 1].pair;
        int called = k > floor && (t[k - 1].kind == CUSET__TK_IDENT || t[k - 1].ch == '>' || t[k - 1].ch == ']') &&
                     !cuset__is_any_word(s, &t[k - 1], control);
        if (c == ')' && !called) return k; // a parenthesised expression: (fp)<<<...
    }
    if (k > floor && t[k - 1].ch == '>') { // template arguments: k<float, 4><<<...
        size_t o = cuset__template_open(t, k - 1, floor);
        if (o == CUSET__NONE) return CUSET__NONE;
        k = o;
    }
    if (k <= floor || t[k - 1].kind != CUSET__TK_IDENT) return CUSET__NONE;
    k--; // the name
    for (;;) { // qualifiers to the left: ns::, ::, ns::template, obj., p->
        size_t q = k > floor && cuset__is_word(s, &t[k - 1], "template") ? k - 1 : k;
        if (q > floor && t[q - 1].kind == CUSET__TK_SCOPE) {
            k = q - 1;
            if (k > floor && t[k - 1].kind == CUSET__TK_IDENT && !cuset__is_word(s, &t[k - 1], "return")) { k--; continue; }
            break;
        }
        if (k > floor + 1 && t[k - 1].ch == '.' && t[k - 2].kind == CUSET__TK_IDENT) { k -= 2; continue; }
        if (k > floor + 2 && t[k - 1].ch == '>' && t[k - 2].ch == '-' && t[k - 2].end == t[k - 1].start &&
            t[k - 3].kind == CUSET__TK_IDENT) { k -= 3; continue; }
        break;
    }
    return k;
}

// Byte end of the launch whose configuration starts at token k (just after '<<<');
// *next is the index of the first token after it.
static size_t cuset__launch_end(const cuset__tok *t, size_t n, size_t k, size_t len, size_t *next) {
    while (k < n && !cuset__is_triple(t, n, k, '>')) { // the configuration, up to '>>>'
        if (t[k].ch == ';') { *next = k + 1; return t[k].end; }
        if (cuset__is_closer(t[k].ch)) { *next = k; return t[k - 1].end; }
        k = cuset__step(t, n, k);
    }
    if (k >= n) { *next = n; return len; }
    k += 3;
    size_t end = t[k - 1].end;
    if (k < n && t[k].ch == '(') { // the argument list
        end = cuset__group_end(t, n, k, len);
        k = cuset__step(t, n, k);
        if (end == len) { *next = n; return len; }
    }
    if (k < n && t[k].ch == ';') end = t[k++].end;
    *next = k;
    return end;
}

// Appends one span per kernel launch.
static void cuset__find_launches(const char *s, size_t len, const cuset__tok *t, size_t n, CusetSpan **out) {
    size_t floor = 0; // tokens before floor are inside a launch or were already looked at
    size_t j = 0;
    while (j < n) {
        if (!cuset__is_triple(t, n, j, '<') || (j > 0 && t[j - 1].ch == '<' && t[j - 1].end == t[j].start)) { j++; continue; }
        size_t start = cuset__kernel_start(s, t, j, floor), next = j + 3;
        if (start != CUSET__NONE) {
            CusetSpan sp = { t[start].start, cuset__launch_end(t, n, j + 3, len, &next), CUSET_SPAN_LAUNCH };
            arrput(*out, sp);
        }
        floor = j = next;
    }
}

// ----------------------------------------------------------------------------
// Rule 3: dim3 declarations

// Does the group opened at o look like a parameter list rather than constructor
// arguments: empty, or two names side by side ("int n"), or a type keyword alone ("int")?
static int cuset__looks_like_params(const char *s, const cuset__tok *t, size_t n, size_t o) {
    static const char *const types[] = { "void", "int", "float", "double", "char", "bool", "short", "long",
        "unsigned", "signed", "const", "volatile", "size_t", "dim3", NULL };
    if (o + 1 < n && t[o + 1].ch == ')') return 1;
    for (size_t k = o + 1; k < n && !cuset__is_closer(t[k].ch); k = cuset__step(t, n, k)) {
        if (t[k].kind != CUSET__TK_IDENT || k + 1 >= n) continue;
        if (t[k + 1].kind == CUSET__TK_IDENT) return 1;
        if (cuset__is_any_word(s, &t[k], types) && t[k + 1].ch && strchr("),*&", t[k + 1].ch)) return 1;
    }
    return 0;
}

// Byte end of the dim3 statement whose declarators start at token k; *next is the token
// to resume at. Returns CUSET__NONE for a function returning dim3 (resume at its body).
static size_t cuset__dim3_end(const char *s, const cuset__tok *t, size_t n, size_t k, size_t len, size_t *next) {
    size_t first = k;
    *next = k;
    while (k < n) {
        char c = t[k].ch;
        if (c == ';') { *next = k + 1; return t[k].end; }
        if (cuset__is_closer(c)) { *next = k; return t[k - 1].end; }
        if (c == '{' && t[k - 1].ch == ')') { *next = k; return CUSET__NONE; }           // a definition
        if (c == '(' && k == first + 1 && cuset__looks_like_params(s, t, n, k)) return CUSET__NONE; // a prototype
        k = cuset__step(t, n, k);
    }
    *next = n;
    return len;
}

// Appends one span per dim3 declaration statement.
static void cuset__find_dim3(const char *s, size_t len, const cuset__tok *t, size_t n, CusetSpan **out) {
    static const char *const quals[] = { "const", "static", "constexpr", "volatile", "extern", "register",
        "thread_local", "__shared__", "__constant__", "__device__", "__managed__", NULL };
    for (size_t i = 0; i + 1 < n; i++) {
        if (!cuset__is_word(s, &t[i], "dim3")) continue;
        char nx = t[i + 1].ch;
        if (t[i + 1].kind != CUSET__TK_IDENT && nx != '*' && nx != '&') continue;
        size_t start = i;
        while (start > 0 && cuset__is_any_word(s, &t[start - 1], quals)) start--;
        if (start > 0) { // the statement must begin here
            const cuset__tok *p = &t[start - 1];
            int label = p->ch == ':'; // "case 1:", "default:", "public:"
            if (!(p->ch == ';' || p->ch == '{' || p->ch == '}' || p->ch == ')' || label)) continue;
        }
        size_t next, end = cuset__dim3_end(s, t, n, i + 1, len, &next);
        if (end != CUSET__NONE) {
            CusetSpan sp = { t[start].start, end, CUSET_SPAN_DIM3 };
            arrput(*out, sp);
        }
        i = next - 1; // resume after what was read: a dim3 inside a dim3 statement is part of it
    }
}

// ----------------------------------------------------------------------------
// Public API

// Orders spans by start, then outer (longer) first, then kind.
static int cuset__span_cmp(const void *a, const void *b) {
    const CusetSpan *x = (const CusetSpan *)a, *y = (const CusetSpan *)b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end > y->end ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

size_t cuset_annotate(const char *src, size_t len, CusetSpan **spans) {
    if (!src || len == 0) return 0;
    cuset__tok *t = cuset__lex(src, len);
    size_t n = (size_t)arrlen(t);
    cuset__pair_brackets(t, n);
    CusetSpan *found = NULL;
    cuset__find_functions(src, len, t, n, &found);
    cuset__find_launches(src, len, t, n, &found);
    cuset__find_dim3(src, len, t, n, &found);
    size_t count = (size_t)arrlen(found);
    if (count) qsort(found, count, sizeof *found, cuset__span_cmp);
    for (size_t k = 0; k < count; k++) arrput(*spans, found[k]);
    arrfree(found);
    arrfree(t);
    return count;
}

void cuset_span_flags(const CusetSpan *spans, size_t nspans, unsigned char *flags, size_t len) {
    if (len) memset(flags, 0, len);
    size_t covered = 0, last_start = 0; // with sorted starts, [start, covered) is already set
    for (size_t k = 0; k < nspans; k++) {
        size_t a = spans[k].start < len ? spans[k].start : len;
        size_t b = spans[k].end < len ? spans[k].end : len;
        if (a < last_start) covered = 0; // out of order: forget the shortcut
        last_start = a;
        size_t from = a > covered ? a : covered;
        if (b > from) memset(flags + from, 1, b - from);
        if (b > covered) covered = b;
    }
}

const char *cuset_span_kind_name(CusetSpanKind kind) {
    switch (kind) {
    case CUSET_SPAN_GLOBAL_DEF: return "global_def";
    case CUSET_SPAN_DEVICE_DEF: return "device_def";
    case CUSET_SPAN_LAUNCH: return "launch";
    case CUSET_SPAN_DIM3: return "dim3";
    }
    return "?";
}

#endif // CUSET_ANNOTATE_IMPLEMENTATION_DONE
#endif // CUSET_ANNOTATE_IMPLEMENTATION
