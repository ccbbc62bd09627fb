// fuzz_jsonl.c - libFuzzer target for the JSON lines reader (cuset.h).
// Build and run (3 minutes) from the repository root:
//   clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -o /tmp/fuzz_jsonl test/fuzz_jsonl.c -lm
//   mkdir -p corpus && /tmp/fuzz_jsonl -max_total_time=180 corpus test/fuzz/seeds/jsonl
// (Debian: if clang lacks libFuzzer, apt-get install libclang-rt-14-dev.) Without libFuzzer,
// -DFUZZ_STANDALONE gives a main that runs the target on each file named on the command line.
//
// The input is parsed by cuset_jsonl_parse; any failed check aborts (a crash for libFuzzer):
// - on failure: nothing is appended, and the message is "f:LINE:COL: ..." with LINE:COL on
//   a byte of the input or just past the end of its line (or "f: no samples: ...");
// - on success: every string is NUL-terminated valid UTF-8, and the samples written back as
//   JSON lines by a writer of our own, in three styles (minimal escapes; ASCII only with
//   \u escapes, extra members, completion first, CRLF; everything escaped, BOM, escaped
//   member names), parse to the very same samples.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"

#include <stdint.h>

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz check failed: %s (line %d)\n", #cond, __LINE__); abort(); } } while (0)

// Decodes the strict UTF-8 sequence at s[i] (n bytes in all) into *cp; returns its length,
// or 0 when it is not well-formed (an independent check of the parser's output).
static size_t utf8_decode(const unsigned char *s, size_t n, size_t i, unsigned *cp) {
    unsigned c = s[i];
    if (c < 0x80) { *cp = c; return 1; }
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || i + len > n) return 0;
    unsigned v = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; k++) {
        if ((s[i + k] & 0xC0) != 0x80) return 0;
        v = v << 6 | (s[i + k] & 0x3F);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

static void put(char **o, const char *s) { size_t k = strlen(s); memcpy(arraddnptr(*o, k), s, k); }

static void put_u(char **o, unsigned v, int upper) {
    char b[8];
    snprintf(b, sizeof b, upper ? "\\u%04X" : "\\u%04x", v);
    put(o, b);
}

// One JSON string. style 0: escape only '"', '\\' and control characters (as \u00XX);
// 1: ASCII only: short escapes, '/' as \/, code points >= 0x80 as \u (pairs above U+FFFF);
// 2: every code point as \u.
static void put_string(char **o, const char *str, size_t n, int style) {
    const unsigned char *s = (const unsigned char *)str;
    arrput(*o, '"');
    for (size_t i = 0; i < n;) {
        unsigned cp;
        size_t len = utf8_decode(s, n, i, &cp);
        CHECK(len > 0); // the parser only ever produces valid UTF-8
        if (style == 2 || (style == 1 && cp >= 0x80)) {
            if (cp >= 0x10000) { put_u(o, 0xD800 + ((cp - 0x10000) >> 10), style == 2); put_u(o, 0xDC00 + ((cp - 0x10000) & 0x3FF), style != 2); }
            else put_u(o, cp, (i & 1) != 0);
        } else if (cp == '"') put(o, "\\\"");
        else if (cp == '\\') put(o, "\\\\");
        else if (style == 1 && cp == '/') put(o, "\\/");
        else if (style == 1 && cp < 0x20 && strchr("\b\f\n\r\t", (int)cp) && cp) {
            const char *e = cp == '\b' ? "\\b" : cp == '\f' ? "\\f" : cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t";
            put(o, e);
        } else if (cp < 0x20) put_u(o, cp, 1);
        else memcpy(arraddnptr(*o, len), s + i, len);
        i += len;
    }
    arrput(*o, '"');
}

static void write_jsonl(char **o, const CusetTextSample *s, size_t n, int style) {
    if (style == 2) put(o, "\xEF\xBB\xBF");
    for (size_t i = 0; i < n; i++) {
        if (style == 0) {
            put(o, "{\"prompt\":");
            put_string(o, s[i].prompt, s[i].prompt_len, 0);
            put(o, ",\"completion\":");
            put_string(o, s[i].completion, s[i].completion_len, 0);
            put(o, "}\n");
        } else if (style == 1) {
            put(o, " \t{ \"id\" : -0.5e-3 , \"completion\"\t:");
            put_string(o, s[i].completion, s[i].completion_len, 1);
            put(o, ", \"x\": [1, {\"prompt\": null, \"y\": [true, false, \"\\u00e9\\/\"]}, 0, 12.25E+2], \"prompt\" : ");
            put_string(o, s[i].prompt, s[i].prompt_len, 1);
            put(o, ", \"id\": {}} \r\n\r\n");
        } else {
            put(o, "{\"\\u0070rompt\": ");
            put_string(o, s[i].prompt, s[i].prompt_len, 2);
            put(o, ", \"\\u0063ompletion\": ");
            put_string(o, s[i].completion, s[i].completion_len, 2);
            put(o, i + 1 < n ? "}\n" : "}"); // the last line without a newline
        }
    }
}

// err must be "f: no samples..." or "f:LINE:COL: " with LINE:COL inside the input.
static void check_error(const uint8_t *data, size_t size, const char *err) {
    if (strncmp(err, "f: no samples", 13) == 0) return;
    unsigned long line = 0, col = 0;
    int used = 0;
    CHECK(sscanf(err, "f:%lu:%lu: %n", &line, &col, &used) == 2 && used > 0);
    CHECK(line >= 1 && col >= 1);
    size_t start = 0;
    for (unsigned long l = 1; l < line; l++) {
        const uint8_t *nl = start < size ? (const uint8_t *)memchr(data + start, '\n', size - start) : NULL;
        CHECK(nl != NULL); // the line exists
        start = (size_t)(nl - data) + 1;
    }
    const uint8_t *nl = start < size ? (const uint8_t *)memchr(data + start, '\n', size - start) : NULL;
    size_t end = nl ? (size_t)(nl - data) : size; // the '\n' or the end: one past the line
    CHECK(start + col - 1 <= end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    CusetTextSample *s = NULL, *t = NULL;
    char err[1024] = "";
    int rc = cuset_jsonl_parse((const char *)data, size, "f", &s, err, sizeof err);
    if (rc != 0) {
        CHECK(rc == -1 && arrlen(s) == 0);
        check_error(data, size, err);
        arrfree(s);
        return 0;
    }
    size_t n = arrlenu(s);
    CHECK(n > 0);
    for (size_t i = 0; i < n; i++) {
        CHECK(s[i].prompt[s[i].prompt_len] == 0 && s[i].completion[s[i].completion_len] == 0);
    }
    for (int style = 0; style < 3; style++) {
        char *o = NULL;
        write_jsonl(&o, s, n, style);
        rc = cuset_jsonl_parse(o, arrlenu(o), "w", &t, err, sizeof err);
        if (rc != 0) { fprintf(stderr, "style %d: %s\n", style, err); CHECK(0); }
        CHECK(arrlenu(t) == n);
        for (size_t i = 0; i < n; i++) {
            CHECK(t[i].prompt_len == s[i].prompt_len && memcmp(t[i].prompt, s[i].prompt, s[i].prompt_len) == 0);
            CHECK(t[i].completion_len == s[i].completion_len &&
                  memcmp(t[i].completion, s[i].completion, s[i].completion_len) == 0);
        }
        cuset_text_samples_free(t); t = NULL;
        arrfree(o);
    }
    cuset_text_samples_free(s);
    return 0;
}

#ifdef FUZZ_STANDALONE
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        unsigned char *buf = NULL, tmp[4096];
        size_t got;
        if (!f) { perror(argv[i]); return 1; }
        while ((got = fread(tmp, 1, sizeof tmp, f)) > 0) memcpy(arraddnptr(buf, got), tmp, got);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)arrlen(buf));
        arrfree(buf);
        printf("ok %s\n", argv[i]);
    }
    return 0;
}
#endif
