// test_data.c - checks of the data layer (cuset.h): JSON lines, .cu directories, text ->
// tokens with CUDA flags, token data files.
// Build and run from the repository root:
//   gcc -std=gnu11 -O2 -fopenmp -Wall -Wextra -o /tmp/test_data test/test_data.c -lm && /tmp/test_data
// Prints PASS/FAIL/SKIP per check and exits non-zero when a check fails. Scratch files go
// to a fresh /tmp/cuset_data_test.XXXXXX, removed at the end. Uses
// ../shared/cudabench/cudabench-dev.jsonl (or $CUSET_CUDABENCH) when present.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"
#include "tok_testlib.h"

#include <stdarg.h>
#include "testlib.h"

static char tmpdir[64];

// ----------------------------------------------------------------------------
// helpers

// A JSON writer of our own (not the parser's code): escapes '"', '\\' and control
// characters, passes everything else through as it is.
static void json_put_string(char **o, const char *s, size_t n) {
    arrput(*o, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                      : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        char u[8];
        if (!e && c < 0x20) { snprintf(u, sizeof u, "\\u%04x", c); e = u; }
        if (e) { size_t k = strlen(e); memcpy(arraddnptr(*o, k), e, k); }
        else arrput(*o, (char)c);
    }
    arrput(*o, '"');
}

static void json_put_sample(char **o, const CusetTextSample *s) {
    const char *a = "{\"prompt\": ", *b = ", \"completion\": ", *c = "}\n";
    memcpy(arraddnptr(*o, strlen(a)), a, strlen(a));
    json_put_string(o, s->prompt, s->prompt_len);
    memcpy(arraddnptr(*o, strlen(b)), b, strlen(b));
    json_put_string(o, s->completion, s->completion_len);
    memcpy(arraddnptr(*o, strlen(c)), c, strlen(c));
}

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

// Whole file into a malloc'd buffer (NULL when it cannot be read).
static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = (unsigned char *)malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); fclose(f); return NULL; }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int same_samples(const CusetTextSample *a, const CusetTextSample *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i].prompt_len != b[i].prompt_len || a[i].completion_len != b[i].completion_len ||
            memcmp(a[i].prompt, b[i].prompt, a[i].prompt_len) != 0 ||
            memcmp(a[i].completion, b[i].completion, a[i].completion_len) != 0 ||
            a[i].prompt[a[i].prompt_len] != 0 || a[i].completion[a[i].completion_len] != 0)
            return 0;
    return 1;
}

static int same_dataset(const CusetDataset *a, const CusetDataset *b) {
    if (a->n != b->n || a->vocab_size != b->vocab_size || a->fingerprint != b->fingerprint) return 0;
    for (int i = 0; i < a->n; i++) {
        const CusetSample *x = &a->samples[i], *y = &b->samples[i];
        if (x->np != y->np || x->nt != y->nt || memcmp(x->prompt, y->prompt, x->np * sizeof(int)) ||
            memcmp(x->target, y->target, x->nt * sizeof(int)) || memcmp(x->target_cuda, y->target_cuda, x->nt))
            return 0;
    }
    return 1;
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int parse_str(const char *text, CusetTextSample **out, char *err, size_t errlen) {
    return cuset_jsonl_parse(text, strlen(text), "t.jsonl", out, err, errlen);
}

// ----------------------------------------------------------------------------
// JSON lines: what parses

static void test_json_escapes(void) {
    const char *name = "jsonl_escapes";
    const char *text = "{\"prompt\": \"q\\\"b\\\\s\\/d\\b\\f\\n\\r\\tend\", "
                       "\"completion\": \"\\u0000x\\u00e9\\u20AC\\uD83D\\uDE00\\u00E9\\ud834\\udd1e\"}\n";
    const char want_p[] = "q\"b\\s/d\b\f\n\r\tend";
    const unsigned char want_c[] = {0x00, 'x', 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9,
                                    0xF0, 0x9D, 0x84, 0x9E};
    CusetTextSample *s = NULL;
    char err[512];
    if (parse_str(text, &s, err, sizeof err)) { fail(name, "%s", err); return; }
    if (arrlen(s) != 1) fail(name, "%td samples, want 1", arrlen(s));
    else if (s[0].prompt_len != sizeof want_p - 1 || memcmp(s[0].prompt, want_p, sizeof want_p) != 0)
        fail(name, "prompt decoded to %zu bytes, want %zu", s[0].prompt_len, sizeof want_p - 1);
    else if (s[0].completion_len != sizeof want_c || memcmp(s[0].completion, want_c, sizeof want_c) != 0 ||
             s[0].completion[sizeof want_c] != 0)
        fail(name, "completion decoded to %zu bytes, want %zu (with \\u0000 as a NUL byte)", s[0].completion_len, sizeof want_c);
    else pass(name);
    cuset_text_samples_free(s);
}

static void test_json_raw_utf8_and_members(void) {
    const char *name = "jsonl_utf8_and_other_members";
    const char *text =
        "{\"id\": 5, \"meta\": {\"a\": [1, -2.5e+3, 0, 0.5, 1E-2, -0, 10e5, true, false, null, \"s\\n\", {}, []],"
        " \"b\": {\"c\": [[[]]]}}, \"prompt\": \"h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\", \"id\": 6, \"\\u0070rompt2\": 1,"
        " \"prompt\\u0000\": 2, \"completion\": \"\\u0063\", \"z\": \"prompt\"}\n";
    CusetTextSample *s = NULL;
    char err[512];
    if (parse_str(text, &s, err, sizeof err)) { fail(name, "%s", err); return; }
    if (arrlen(s) != 1 || strcmp(s[0].prompt, "h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") != 0 || strcmp(s[0].completion, "c") != 0)
        fail(name, "wrong samples");
    else pass(name);
    cuset_text_samples_free(s);
    // an escaped member name is the member: "\u0070rompt" is "prompt"
    s = NULL;
    if (parse_str("{\"\\u0070rompt\": \"p\", \"c\\u006fmpletion\": \"c\"}", &s, err, sizeof err) ||
        strcmp(s[0].prompt, "p") != 0 || strcmp(s[0].completion, "c") != 0)
        fail("jsonl_escaped_member_names", "%s", err);
    else pass("jsonl_escaped_member_names");
    cuset_text_samples_free(s);
}

static void test_json_lines(void) {
    char err[512];
    CusetTextSample *s = NULL;
    const char *crlf = "{\"prompt\": \"a\", \"completion\": \"b\"}\r\n{\"prompt\": \"c\\r\\n\", \"completion\": \"d\"}\r\n";
    if (parse_str(crlf, &s, err, sizeof err)) fail("jsonl_crlf", "%s", err);
    else if (arrlen(s) != 2 || strcmp(s[0].prompt, "a") || strcmp(s[1].prompt, "c\r\n") || strcmp(s[1].completion, "d"))
        fail("jsonl_crlf", "wrong samples");
    else pass("jsonl_crlf");
    cuset_text_samples_free(s); s = NULL;

    const char *blank = "\n\n  {\"prompt\": \"a\", \"completion\": \"b\"}  \n\t \r\n\n{\"prompt\": \"c\", \"completion\": \"d\"}";
    if (parse_str(blank, &s, err, sizeof err)) fail("jsonl_blank_lines_and_no_final_newline", "%s", err);
    else if (arrlen(s) != 2 || strcmp(s[1].completion, "d")) fail("jsonl_blank_lines_and_no_final_newline", "wrong samples");
    else pass("jsonl_blank_lines_and_no_final_newline");
    cuset_text_samples_free(s); s = NULL;

    const char *bom = "\xEF\xBB\xBF{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": 1}";
    if (parse_str(bom, &s, err, sizeof err) == 0 || strncmp(err, "t.jsonl:2:12: ", 14) != 0)
        fail("jsonl_bom", "want an error at 2:12 after the BOM line parsed, got: %s", err);
    else if (arrlen(s) != 0) fail("jsonl_bom", "samples left behind after an error");
    else {
        cuset_text_samples_free(s); s = NULL;
        if (cuset_jsonl_parse(bom, (size_t)(strchr(bom, '\n') - bom + 1), "t.jsonl", &s, err, sizeof err) || arrlen(s) != 1) fail("jsonl_bom", "%s", err);
        else pass("jsonl_bom");
    }
    cuset_text_samples_free(s); s = NULL;

    // nesting: 63 arrays inside the sample object (depth 64) is fine
    char *deep = NULL;
    const char *a = "{\"x\": ", *b = ", \"prompt\": \"p\", \"completion\": \"c\"}";
    memcpy(arraddnptr(deep, strlen(a)), a, strlen(a));
    for (int i = 0; i < 63; i++) arrput(deep, '[');
    for (int i = 0; i < 63; i++) arrput(deep, ']');
    memcpy(arraddnptr(deep, strlen(b)), b, strlen(b));
    if (cuset_jsonl_parse(deep, arrlenu(deep), "t.jsonl", &s, err, sizeof err)) fail("jsonl_depth_64_ok", "%s", err);
    else pass("jsonl_depth_64_ok");
    arrfree(deep);
    cuset_text_samples_free(s); s = NULL;

    // appending: a second parse adds to the array; a failing one leaves it as it was
    int ok = parse_str("{\"prompt\": \"a\", \"completion\": \"b\"}", &s, err, sizeof err) == 0 &&
             parse_str("{\"prompt\": \"c\", \"completion\": \"d\"}\n{\"prompt\": \"e\", \"completion\": \"f\"}", &s, err, sizeof err) == 0 &&
             parse_str("{\"prompt\": \"g\", \"completion\": \"h\"}\n{\"prompt\": \"i\"}", &s, err, sizeof err) != 0;
    if (!ok || arrlen(s) != 3 || strcmp(s[2].completion, "f")) fail("jsonl_append_and_rollback", "%td samples", arrlen(s));
    else pass("jsonl_append_and_rollback");
    cuset_text_samples_free(s); s = NULL;

    // other member names
    const char *alpaca = "{\"instruction\": \"add\", \"output\": \"__global__ void k() {}\", \"prompt\": 7}";
    if (cuset_jsonl_parse_keys(alpaca, strlen(alpaca), "a.jsonl", "instruction", "output", &s, err, sizeof err) ||
        strcmp(s[0].prompt, "add") != 0)
        fail("jsonl_parse_keys", "%s", err);
    else pass("jsonl_parse_keys");
    cuset_text_samples_free(s); s = NULL;
}

// ----------------------------------------------------------------------------
// JSON lines: what is rejected, and where

typedef struct { const char *what, *text; size_t len; const char *pos, *msg; } ErrCase;

static void test_json_errors(void) {
    char bomb[128];
    int k = snprintf(bomb, sizeof bomb, "{\"x\": ");
    for (int i = 0; i < 64; i++) bomb[k++] = '[';
    bomb[k] = 0;
    const char nul_text[] = "{\"prompt\": \"a\",\0 \"completion\": \"b\"}";
    ErrCase cases[] = {
        {"missing closing quote", "{\"prompt\": \"abc}\n{\"prompt\": \"a\", \"completion\": \"b\"}\n", 0, "1:17",
         "the line ends inside the string that opens at column 12"},
        {"missing opening quote of a name", "{prompt\": \"a\", \"completion\": \"b\"}", 0, "1:2", "expected a member name"},
        {"unescaped quote in a string", "{\"prompt\": \"say \"hi\"\", \"completion\": \"b\"}", 0, "1:18",
         "expected ',' or '}' after the member, found 'h'"},
        {"bad escape", "{\"prompt\": \"a\\qb\", \"completion\": \"c\"}", 0, "1:14", "invalid escape '\\q'"},
        {"bad \\u hex", "{\"prompt\": \"\\u12G4\", \"completion\": \"c\"}", 0, "1:13", "4 hex digits"},
        {"short \\u at the end", "{\"prompt\": \"\\u12", 0, "1:13", "4 hex digits"},
        {"lone high surrogate", "{\"prompt\": \"\\ud800x\", \"completion\": \"c\"}", 0, "1:13",
         "high surrogate \\uD800 is not followed by a low surrogate"},
        {"high surrogate + non-surrogate", "{\"prompt\": \"\\ud800\\u0041\", \"completion\": \"c\"}", 0, "1:13",
         "high surrogate \\uD800 is not followed"},
        {"two high surrogates", "{\"prompt\": \"\\uDBFF\\uD800\", \"completion\": \"c\"}", 0, "1:13",
         "high surrogate \\uDBFF is not followed"},
        {"high surrogate + bad hex", "{\"prompt\": \"\\ud800\\u00zz\", \"completion\": \"c\"}", 0, "1:19", "4 hex digits"},
        {"lone low surrogate", "{\"prompt\": \"\\udc00\", \"completion\": \"c\"}", 0, "1:13", "lone low surrogate \\uDC00"},
        {"raw tab in a string", "{\"prompt\": \"a\tb\", \"completion\": \"c\"}", 0, "1:14", "raw control character 0x09"},
        {"raw 0x1F in a string", "{\"prompt\": \"\x1f\", \"completion\": \"c\"}", 0, "1:13", "raw control character 0x1F"},
        {"trailing comma in the object", "{\"prompt\": \"a\", \"completion\": \"b\",}", 0, "1:35", "trailing comma"},
        {"trailing comma and space", "{\"prompt\": \"a\", \"completion\": \"b\", }", 0, "1:36", "trailing comma"},
        {"trailing comma in an array", "{\"x\": [1, 2,], \"prompt\": \"a\", \"completion\": \"b\"}", 0, "1:13", "trailing comma"},
        {"trailing garbage", "{\"prompt\": \"a\", \"completion\": \"b\"} x", 0, "1:36", "unexpected 'x' after the sample object"},
        {"two objects on a line", "{\"prompt\": \"a\", \"completion\": \"b\"}{\"prompt\": \"a\", \"completion\": \"b\"}", 0,
         "1:35", "unexpected '{' after the sample object"},
        {"missing completion", "{\"prompt\": \"a\"}", 0, "1:1", "no \"completion\" member"},
        {"missing prompt", "{\"completion\": \"a\", \"Prompt\": \"b\"}", 0, "1:1", "no \"prompt\" member"},
        {"empty object", "{}", 0, "1:1", "neither a \"prompt\" nor a \"completion\""},
        {"non-string prompt", "{\"prompt\": 5, \"completion\": \"b\"}", 0, "1:12", "\"prompt\" member must be a string, found a number"},
        {"null prompt", "{\"prompt\": null, \"completion\": \"b\"}", 0, "1:12", "must be a string, found null"},
        {"object completion", "{\"prompt\": \"a\", \"completion\": {\"x\": 1}}", 0, "1:31", "must be a string, found an object"},
        {"array prompt", "{\"prompt\": [\"a\"], \"completion\": \"b\"}", 0, "1:12", "must be a string, found an array"},
        {"bad word as prompt", "{\"prompt\": True, \"completion\": \"b\"}", 0, "1:12", "unknown word 'True'"},
        {"duplicate prompt", "{\"prompt\": \"a\", \"prompt\": \"b\", \"completion\": \"c\"}", 0, "1:17",
         "duplicate \"prompt\" member (the first is at column 2)"},
        {"duplicate escaped completion", "{\"prompt\": \"a\", \"completion\": \"b\", \"\\u0063ompletion\": \"c\"}", 0, "1:36",
         "duplicate \"completion\" member"},
        {"truncated inside a string", "{\"prompt\": \"a\", \"compl", 0, "1:23",
         "the input ends inside the string that opens at column 17"},
        {"truncated after a member", "{\"prompt\": \"a\"", 0, "1:15", "the input ends inside the object that opens at column 1"},
        {"truncated in an escape", "{\"prompt\": \"a\\", 0, "1:14", "ends in an escape"},
        {"truncated after ':'", "{\"prompt\":", 0, "1:11", "the input ends inside the object that opens at column 1, where a value"},
        {"invalid UTF-8 byte 0xFF", "{\"prompt\": \"a\xff\", \"completion\": \"b\"}", 0, "1:14", "never occurs in UTF-8"},
        {"overlong UTF-8", "{\"prompt\": \"\xc0\x80\", \"completion\": \"b\"}", 0, "1:13", "overlong"},
        {"overlong 3-byte UTF-8", "{\"prompt\": \"\xe0\x80\xaf\", \"completion\": \"b\"}", 0, "1:13", "overlong"},
        {"UTF-8 surrogate", "{\"prompt\": \"\xed\xa0\x80\", \"completion\": \"b\"}", 0, "1:13", "surrogate"},
        {"UTF-8 above U+10FFFF", "{\"prompt\": \"\xf4\x90\x80\x80\", \"completion\": \"b\"}", 0, "1:13", "above U+10FFFF"},
        {"UTF-8 cut short", "{\"prompt\": \"\xe2\x82\", \"completion\": \"b\"}", 0, "1:13", "needs 2 continuation bytes but has 1"},
        {"UTF-8 stray continuation", "{\"prompt\": \"ab\x80\", \"completion\": \"b\"}", 0, "1:15", "continuation byte"},
        {"UTF-8 cut by the end", "{\"prompt\": \"\xf0\x9f\x98", 0, "1:13", "needs 3 continuation bytes but has 2"},
        {"non-ASCII outside strings", "{\"prompt\": \"a\", \xc3\xa9: 1}", 0, "1:17", "found byte 0xC3 (outside strings only ASCII"},
        {"depth bomb", bomb, 0, "1:70", "nested deeper than 64 levels"},
        {"not an object", "[\"prompt\", \"completion\"]", 0, "1:1", "expected '{' opening a sample, found '['"},
        {"bare word line", "hello", 0, "1:1", "expected '{' opening a sample, found 'h'"},
        {"single quotes", "{'prompt': 'a'}", 0, "1:2", "JSON strings use double quotes"},
        {"leading zero", "{\"x\": 01, \"prompt\": \"a\", \"completion\": \"b\"}", 0, "1:7", "leading zeros"},
        {"plus sign", "{\"x\": +1}", 0, "1:7", "expected a value (string, number, object, array, true, false or null), found '+'"},
        {"minus alone", "{\"x\": -}", 0, "1:8", "expected a digit after '-'"},
        {"no fraction digits", "{\"x\": 1.}", 0, "1:9", "expected a digit after the decimal point"},
        {"no exponent digits", "{\"x\": 1e+}", 0, "1:10", "expected a digit in the exponent"},
        {"hex number", "{\"x\": 0x1F}", 0, "1:8", "expected ',' or '}' after the member, found 'x'"},
        {"bad literal", "{\"x\": tru, \"prompt\": \"a\", \"completion\": \"b\"}", 0, "1:7", "unknown word 'tru'"},
        {"NaN", "{\"x\": NaN}", 0, "1:7", "unknown word 'NaN'"},
        {"missing colon", "{\"prompt\" \"a\"}", 0, "1:11", "expected ':' after the member name, found '\"'"},
        {"missing comma", "{\"prompt\": \"a\" \"completion\": \"b\"}", 0, "1:16", "expected ',' or '}' after the member"},
        {"missing comma in an array", "{\"x\": [1 2]}", 0, "1:10", "expected ',' or ']' after an array element"},
        {"pretty-printed object", "{\n  \"prompt\": \"a\",\n  \"completion\": \"b\"\n}\n", 0, "1:2",
         "the line ends inside the object that opens at column 1"},
        {"newline inside an array", "{\"x\": [1,\n2]}", 0, "1:10", "the line ends inside the array that opens at column 7"},
        {"NUL byte outside strings", nul_text, sizeof nul_text - 1, "1:16", "found byte 0x00"},
        {"vertical tab as whitespace", "{\"prompt\": \"a\",\v\"completion\": \"b\"}", 0, "1:16", "found byte 0x0B"},
        {"comment after the object", "{\"prompt\": \"a\", \"completion\": \"b\"} // c", 0, "1:36", "unexpected '/'"},
        {"error on line 3, CRLF", "{\"prompt\": \"a\", \"completion\": \"b\"}\r\n\r\n{\"prompt\": 1}\r\n", 0, "3:12",
         "must be a string"},
        {"error after a blank line", "\n   \n\t{\"prompt\": \"a\", \"completion\": \"b\"", 0, "3:35",
         "the input ends inside the object that opens at column 2"},
    };
    int n = (int)(sizeof cases / sizeof cases[0]), bad = 0;
    for (int i = 0; i < n; i++) {
        ErrCase *c = &cases[i];
        size_t len = c->len ? c->len : strlen(c->text);
        CusetTextSample *s = NULL;
        char err[512] = "", want[64];
        parse_str("{\"prompt\": \"keep\", \"completion\": \"me\"}", &s, err, sizeof err); // must survive the failure
        int rc = cuset_jsonl_parse(c->text, len, "t.jsonl", &s, err, sizeof err);
        snprintf(want, sizeof want, "t.jsonl:%s: ", c->pos);
        if (rc != -1) { fail("jsonl_errors", "%s: accepted", c->what); bad++; }
        else if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, c->msg)) {
            fail("jsonl_errors", "%s: got \"%s\", want \"%s...%s...\"", c->what, err, want, c->msg); bad++;
        } else if (arrlen(s) != 1 || strcmp(s[0].prompt, "keep") != 0) {
            fail("jsonl_errors", "%s: the samples already in *out changed", c->what); bad++;
        }
        if (getenv("CUSET_TEST_VERBOSE")) printf("  %-32s %s\n", c->what, err);
        cuset_text_samples_free(s);
    }
    // no samples at all
    const char *empties[] = {"", "\n", "  \r\n\t\n\n"};
    for (int i = 0; i < 3; i++) {
        CusetTextSample *s = NULL;
        char err[512] = "";
        if (parse_str(empties[i], &s, err, sizeof err) != -1 || !strstr(err, "t.jsonl: no samples")) {
            fail("jsonl_errors", "empty input %d: got \"%s\"", i, err); bad++;
        }
        cuset_text_samples_free(s);
    }
    if (!bad) { printf("PASS jsonl_errors (%d malformed inputs, each at its LINE:COL)\n", n + 3); }
}

static void test_jsonl_read(void) {
    char path[128], err[512];
    CusetTextSample *s = NULL;
    snprintf(path, sizeof path, "%s/r.jsonl", tmpdir);
    const char *text = "{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": 2}\n";
    write_file(path, text, strlen(text));
    char want[160];
    snprintf(want, sizeof want, "%s:2:12: ", path);
    if (cuset_jsonl_read(path, &s, err, sizeof err) != -1 || strncmp(err, want, strlen(want)) != 0)
        fail("jsonl_read_names_the_file", "got \"%s\"", err);
    else pass("jsonl_read_names_the_file");
    snprintf(path, sizeof path, "%s/does-not-exist.jsonl", tmpdir);
    if (cuset_jsonl_read(path, &s, err, sizeof err) != -1 || !strstr(err, "cannot open: No such file"))
        fail("jsonl_read_missing_file", "got \"%s\"", err);
    else pass("jsonl_read_missing_file");
    if (cuset_jsonl_read(tmpdir, &s, err, sizeof err) != -1 || !strstr(err, "read error"))
        fail("jsonl_read_directory", "got \"%s\"", err);
    else pass("jsonl_read_directory");
    // a file whose size stat does not know (proc files say 0): read by growing the buffer
    if (access("/proc/self/status", R_OK) != 0) skip("jsonl_read_unsized_file", "no /proc/self/status");
    else if (cuset_jsonl_read("/proc/self/status", &s, err, sizeof err) != -1 ||
             !strstr(err, "/proc/self/status:1:1: expected '{' opening a sample, found 'N'"))
        fail("jsonl_read_unsized_file", "got \"%s\"", err);
    else pass("jsonl_read_unsized_file");
    cuset_text_samples_free(s);
}

// ----------------------------------------------------------------------------
// .cu directories

static void mkfile(const char *rel, const char *text, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/cu/%s", tmpdir, rel);
    write_file(path, text, n);
}

static void test_cu_dir(void) {
    const char *name = "cu_dir_read";
    char path[256], target[256], err[512];
    const char *dirs[] = {"cu", "cu/a", "cu/a/b", "cu/d.cu", "cu/empty_dir", "nocu", "nocu/sub", "empty"};
    for (int i = 0; i < 8; i++) { snprintf(path, sizeof path, "%s/%s", tmpdir, dirs[i]); mkdir(path, 0755); }
    mkfile("b.cu", "B", 1);
    mkfile("a/z.cu", "AZ", 2);
    mkfile("a/b/c.cu", "ABC\0nul", 7);
    mkfile("d.cu/k.cu", "DK", 2);   // a directory named *.cu is searched, not read
    mkfile("empty.cu", "", 0);
    mkfile("notes.txt", "no", 2);
    mkfile("x.cuh", "no", 2);
    mkfile("y.cu.bak", "no", 2);
    mkfile(".cu", "no", 2);         // no stem
    mkfile("a/CAPS.CU", "no", 2);   // case matters
    snprintf(path, sizeof path, "%s/cu/link.cu", tmpdir);
    snprintf(target, sizeof target, "%s/cu/b.cu", tmpdir);
    int links = symlink(target, path) == 0;
    snprintf(path, sizeof path, "%s/cu/linkdir", tmpdir);
    snprintf(target, sizeof target, "%s/cu/a", tmpdir);
    links = links && symlink(target, path) == 0;     // not followed: no linkdir/z.cu
    snprintf(path, sizeof path, "%s/nocu/sub/readme.md", tmpdir);
    write_file(path, "x", 1);

    CusetTextSample *s = NULL;
    snprintf(path, sizeof path, "%s/cu/", tmpdir);
    const char *want[] = {"ABC\0nul", "AZ", "B", "DK", "", "B"}; // a/b/c a/z b d.cu/k empty link
    size_t want_len[] = {7, 2, 1, 2, 0, 1};
    int nwant = links ? 6 : 5;
    if (cuset_cu_dir_read(path, &s, err, sizeof err)) fail(name, "%s", err);
    else if (arrlen(s) != nwant) fail(name, "%td files, want %d", arrlen(s), nwant);
    else {
        int ok = 1;
        for (int i = 0; i < nwant; i++)
            ok = ok && s[i].prompt_len == 0 && s[i].prompt[0] == 0 && s[i].completion_len == want_len[i] &&
                 memcmp(s[i].completion, want[i], want_len[i]) == 0 && s[i].completion[want_len[i]] == 0;
        if (!ok) fail(name, "wrong contents or order");
        else pass(name);
    }
    cuset_text_samples_free(s); s = NULL;

    snprintf(path, sizeof path, "%s/dangling/x.cu", tmpdir);
    snprintf(target, sizeof target, "%s/dangling", tmpdir);
    mkdir(target, 0755);
    if (symlink("/nonexistent/target.cu", path) != 0) links = 0;
    const char *errdirs[][2] = {{"nocu", "no *.cu file in this directory or below it"},
                                {"dangling", "x.cu: cannot follow the symbolic link: No such file or directory"},
                                {"empty", "no *.cu file"},
                                {"missing", "cannot open directory: No such file or directory"},
                                {"cu/b.cu", "cannot open directory: Not a directory"}};
    int bad = 0;
    for (int i = 0; i < 5; i++) {
        if (i == 1 && !links) continue; // no symbolic links here
        snprintf(path, sizeof path, "%s/%s", tmpdir, errdirs[i][0]);
        err[0] = 0;
        parse_str("{\"prompt\": \"keep\", \"completion\": \"me\"}", &s, err, sizeof err);
        if (cuset_cu_dir_read(path, &s, err, sizeof err) != -1 || !strstr(err, errdirs[i][1]) || !strstr(err, path) ||
            arrlen(s) != 1) {
            fail("cu_dir_read_errors", "%s: got \"%s\"", errdirs[i][0], err);
            bad++;
        }
        cuset_text_samples_free(s); s = NULL;
    }
    if (!bad) pass("cu_dir_read_errors");
}

// ----------------------------------------------------------------------------
// text -> tokens

// A tiny kernel and its launch. The spans, by the annotator's rules (cuset.h), written out
// by hand: the whole __global__ definition through its '}', and the launch from the
// kernel name through the ';'.
static const char kernel_src[] =
    "__global__ void k(float *x) { x[0] = 1; }\n"
    "int main() { float *d; k<<<1, 1>>>(d); return 0; }\n";
static const char *kernel_spans[] = {"__global__ void k(float *x) { x[0] = 1; }", "k<<<1, 1>>>(d);"};

// Checks the layout of s against the texts and tk; "" when fine.
static const char *check_layout(const CusetSample *s, const CusetTokenizer *tk, const char *p, size_t np,
                                const char *c, size_t nc) {
    static char why[128];
    char *out = NULL;
    why[0] = 0;
    if (s->np < 2 || s->prompt[0] != CUSET_TOK_PROMPT || s->prompt[s->np - 1] != CUSET_TOK_TARGET)
        snprintf(why, sizeof why, "prompt not framed by PROMPT ... TARGET");
    else if (s->nt < 1 || s->target[s->nt - 1] != CUSET_TOK_EOS || s->target_cuda[s->nt - 1] != 0)
        snprintf(why, sizeof why, "target does not end with EOS (flag 0)");
    if (!why[0]) {
        cuset_tok_decode(tk, s->prompt + 1, s->np - 2, &out);
        if ((size_t)arrlen(out) != np || memcmp(out, p, np)) snprintf(why, sizeof why, "prompt does not decode to its text");
        arrsetlen(out, 0);
        cuset_tok_decode(tk, s->target, s->nt - 1, &out);
        if ((size_t)arrlen(out) != nc || memcmp(out, c, nc)) snprintf(why, sizeof why, "target does not decode to its text");
    }
    for (int k = 1; k + 1 < s->np && !why[0]; k++)
        if (s->prompt[k] >= CUSET_TOK_NBYTES && s->prompt[k] < CUSET_TOK_FIRST_MERGE) snprintf(why, sizeof why, "special id inside");
    arrfree(out);
    return why;
}

static void test_sample_from_text(void) {
    const char *name = "sample_from_text_layout_and_flags";
    const char *prompt = "Write a kernel that sets x[0] to 1.";
    size_t nc = sizeof kernel_src - 1;
    size_t a[2], b[2]; // the hand-written spans as byte ranges
    for (int i = 0; i < 2; i++) {
        a[i] = (size_t)(strstr(kernel_src, kernel_spans[i]) - kernel_src);
        b[i] = a[i] + strlen(kernel_spans[i]);
    }
    // 1. bytes only: the flagged tokens spell exactly the two spans
    CusetTokenizer tk = {0};
    cuset_tok_init(&tk);
    CusetSample s;
    cuset_sample_from_text(&s, &tk, prompt, strlen(prompt), kernel_src, nc);
    const char *why = check_layout(&s, &tk, prompt, strlen(prompt), kernel_src, nc);
    char flagged[256] = "";
    size_t nf = 0;
    for (int k = 0; k + 1 < s.nt; k++) if (s.target_cuda[k]) flagged[nf++] = (char)s.target[k];
    flagged[nf] = 0;
    char want[256];
    snprintf(want, sizeof want, "%s%s", kernel_spans[0], kernel_spans[1]);
    if (why[0]) fail(name, "bytes: %s", why);
    else if (s.np != (int)strlen(prompt) + 2 || s.nt != (int)nc + 1) fail(name, "bytes: np %d nt %d", s.np, s.nt);
    else if (strcmp(flagged, want) != 0) fail(name, "bytes: flagged \"%s\", want \"%s\"", flagged, want);
    free(s.prompt); free(s.target); free(s.target_cuda);
    if (why[0] || strcmp(flagged, want) != 0) { cuset_tok_free(&tk); return; }

    // 2. a trained tokenizer: tokens cross span edges; a token is flagged exactly when
    //    any of its bytes is in a span
    const char *texts[2] = {tok_test_snippet, kernel_src};
    size_t lens[2] = {sizeof tok_test_snippet - 1, nc};
    cuset_tok_train(&tk, texts, lens, 2, 400, 0);
    cuset_sample_from_text(&s, &tk, prompt, strlen(prompt), kernel_src, nc);
    why = check_layout(&s, &tk, prompt, strlen(prompt), kernel_src, nc);
    size_t pos = 0;
    int bad = -1, straddle = 0;
    char *shown = NULL; // the flagged tokens, for the log
    for (int k = 0; k + 1 < s.nt; k++) {
        size_t len;
        const char *t = cuset_tok_bytes(&tk, s.target[k], &len);
        int want_flag = 0;
        for (int i = 0; i < 2; i++) want_flag |= pos < b[i] && pos + len > a[i];
        for (int i = 0; i < 2; i++) straddle += s.target_cuda[k] && (pos < a[i] && pos + len > a[i]);
        if (s.target_cuda[k] != want_flag && bad < 0) bad = k;
        if (s.target_cuda[k]) {
            arrput(shown, '|');
            for (size_t j = 0; j < len; j++) {
                if (t[j] == '\n') { arrput(shown, '\\'); arrput(shown, 'n'); }
                else arrput(shown, t[j]);
            }
        }
        pos += len;
    }
    arrput(shown, 0);
    if (why[0]) fail(name, "trained: %s", why);
    else if (bad >= 0) fail(name, "trained: target token %d flag %d is wrong", bad, s.target_cuda[bad]);
    else if (straddle != 1) fail(name, "expected one token crossing a span start (\" k\" before <<<), got %d", straddle);
    else printf("PASS %s (flagged tokens %s|)\n", name, shown);
    arrfree(shown);
    free(s.prompt); free(s.target); free(s.target_cuda);

    // 3. empty texts: the frame alone
    cuset_sample_from_text(&s, &tk, "", 0, "", 0);
    if (s.np != 2 || s.nt != 1 || s.target[0] != CUSET_TOK_EOS || s.target_cuda[0] != 0)
        fail("sample_from_text_empty", "np %d nt %d", s.np, s.nt);
    else pass("sample_from_text_empty");
    free(s.prompt); free(s.target); free(s.target_cuda);
    cuset_tok_free(&tk);
}

// Cuts text into n pieces (at line starts), for a small set of samples.
static CusetTextSample *pieces_of(const char *text, int n) {
    CusetTextSample *s = NULL;
    size_t len = strlen(text), at = 0;
    for (int i = 0; i < n; i++) {
        size_t end = i == n - 1 ? len : (len * (size_t)(i + 1)) / (size_t)n;
        while (end < len && text[end - 1] != '\n') end++;
        CusetTextSample t;
        char p[64];
        snprintf(p, sizeof p, "Write part %d of the program.", i);
        t.prompt = strdup(p); t.prompt_len = strlen(p);
        t.completion = (char *)malloc(end - at + 1);
        memcpy(t.completion, text + at, end - at);
        t.completion[end - at] = 0; t.completion_len = end - at;
        arrput(s, t);
        at = end;
    }
    return s;
}

static void test_dataset_from_text(CusetTokenizer *tk) {
    const char *name = "dataset_from_text";
    CusetTextSample *s = pieces_of(tok_test_snippet, 40);
    CusetDataset d;
    cuset_dataset_from_text(&d, tk, s, arrlenu(s));
    int bad = d.n != 40 || d.vocab_size != tk->vocab_size || d.fingerprint != cuset_dataset_fingerprint(&d);
    for (int i = 0; i < d.n && !bad; i++) {
        CusetSample one;
        cuset_sample_from_text(&one, tk, s[i].prompt, s[i].prompt_len, s[i].completion, s[i].completion_len);
        bad = one.np != d.samples[i].np || one.nt != d.samples[i].nt ||
              memcmp(one.prompt, d.samples[i].prompt, one.np * sizeof(int)) ||
              memcmp(one.target, d.samples[i].target, one.nt * sizeof(int)) ||
              memcmp(one.target_cuda, d.samples[i].target_cuda, one.nt);
        free(one.prompt); free(one.target); free(one.target_cuda);
    }
    if (bad) fail(name, "the parallel dataset differs from sample-by-sample results");
    else pass(name);
    cuset_dataset_free(&d);
    cuset_text_samples_free(s);
}

static void test_tok_fingerprint(CusetTokenizer *tk) {
    const char *name = "tok_fingerprint";
    CusetTokenizer bytes = {0}, copy = {0};
    cuset_tok_init(&bytes);
    cuset_tok_init(&copy);
    unsigned char *b = NULL;
    size_t n = cuset_tok_save(tk, &b);
    cuset_tok_load(&copy, b, n, NULL, 0);
    if (cuset_tok_fingerprint(tk) != fnv1a(b, n)) fail(name, "not FNV-1a over the saved bytes");
    else if (cuset_tok_fingerprint(&copy) != cuset_tok_fingerprint(tk)) fail(name, "a loaded copy differs");
    else if (cuset_tok_fingerprint(&bytes) == cuset_tok_fingerprint(tk)) fail(name, "byte-level and trained tokenizers agree");
    else pass(name);
    arrfree(b);
    cuset_tok_free(&bytes);
    cuset_tok_free(&copy);
}

// ----------------------------------------------------------------------------
// token data files

static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static void test_data_roundtrip(CusetTokenizer *tk) {
    const char *name = "data_save_load_roundtrip";
    char p1[128], p2[128], err[512];
    CusetTextSample *s = pieces_of(tok_test_snippet, 12);
    CusetDataset d, d2 = {0};
    CusetTokenizer tk2 = {0};
    cuset_tok_init(&tk2);
    uint64_t stamp = 0x0123456789ABCDEFull, stamp2 = 0;
    cuset_dataset_from_text(&d, tk, s, arrlenu(s));
    snprintf(p1, sizeof p1, "%s/a.dat", tmpdir);
    snprintf(p2, sizeof p2, "%s/b.dat", tmpdir);
    unsigned char *f1 = NULL, *f2 = NULL, *ser = NULL;
    size_t n1 = 0, n2 = 0;
    if (cuset_data_save(p1, &d, tk, stamp, err, sizeof err)) { fail(name, "save: %s", err); goto done; }
    if (cuset_data_load(p1, &d2, &tk2, &stamp2, err, sizeof err)) { fail(name, "load: %s", err); goto done; }
    if (!same_dataset(&d, &d2)) { fail(name, "loaded dataset differs"); goto done; }
    if (cuset_tok_fingerprint(&tk2) != cuset_tok_fingerprint(tk) || stamp2 != stamp) { fail(name, "tokenizer or stamp differs"); goto done; }
    if (cuset_data_save(p2, &d2, &tk2, stamp2, err, sizeof err)) { fail(name, "re-save: %s", err); goto done; }
    f1 = read_file(p1, &n1); f2 = read_file(p2, &n2);
    if (cuset_data_serialize(&d, tk, stamp, &ser, err, sizeof err)) { fail(name, "serialize: %s", err); goto done; }
    if (!f1 || !f2 || n1 != n2 || memcmp(f1, f2, n1) != 0) { fail(name, "re-saved file differs"); goto done; }
    if ((size_t)arrlen(ser) != n1 || memcmp(ser, f1, n1) != 0) { fail(name, "serialize differs from save"); goto done; }
    // the layout, field by field
    uint64_t P = 0, Q = 0;
    for (int i = 0; i < d.n; i++) { P += d.samples[i].np; Q += d.samples[i].nt; }
    unsigned char *tb = NULL;
    size_t K = cuset_tok_save(tk, &tb);
    size_t L = 72 + K, ids = L + 8 * (size_t)d.n;
    int lay = memcmp(f1, "CUSETDAT", 8) == 0 && get32(f1 + 8) == 2 && get32(f1 + 12) == 72 &&
              get32(f1 + 16) == (uint32_t)tk->vocab_size && get32(f1 + 20) == (uint32_t)d.n && get64(f1 + 24) == P &&
              get64(f1 + 32) == Q && get64(f1 + 40) == stamp && get64(f1 + 48) == K && get64(f1 + 56) == d.fingerprint &&
              get64(f1 + 64) == cuset_tok_fingerprint(tk) && memcmp(f1 + 72, tb, K) == 0 && get32(f1 + L) == (uint32_t)d.samples[0].np &&
              get32(f1 + L + 4) == (uint32_t)d.samples[0].nt && get32(f1 + ids) == CUSET_TOK_PROMPT &&
              get32(f1 + ids + 4 * (size_t)d.samples[0].np) == (uint32_t)d.samples[0].target[0] &&
              n1 == 72 + K + 8 * (size_t)d.n + 4 * (P + Q) + Q &&
              memcmp(f1 + n1 - d.samples[d.n - 1].nt, d.samples[d.n - 1].target_cuda, d.samples[d.n - 1].nt) == 0;
    arrfree(tb);
    if (!lay) { fail(name, "the file layout differs from the documented one"); goto done; }
    char tmpname[160];
    snprintf(tmpname, sizeof tmpname, "%s.tmp.%d", p1, (int)getpid());
    if (access(tmpname, F_OK) == 0) { fail(name, "temporary file left behind"); goto done; }
    printf("PASS %s (%d samples, %llu prompt + %llu target tokens, %zu bytes; byte-identical re-save)\n", name, d.n,
           (unsigned long long)P, (unsigned long long)Q, n1);
done:
    free(f1); free(f2); arrfree(ser);
    cuset_dataset_free(&d); cuset_dataset_free(&d2);
    cuset_tok_free(&tk2);
    cuset_text_samples_free(s);
}

typedef struct { const char *what; size_t at; int width; uint64_t value; int delta; const char *msg; } Corrupt;

static void test_data_rejects(CusetTokenizer *tk) {
    const char *name = "data_load_rejects";
    char err[512];
    CusetTextSample *s = pieces_of(tok_test_snippet, 5);
    CusetDataset d;
    cuset_dataset_from_text(&d, tk, s, arrlenu(s));
    cuset_text_samples_free(s);
    unsigned char *good = NULL;
    if (cuset_data_serialize(&d, tk, 42, &good, err, sizeof err)) { fail(name, "%s", err); return; }
    size_t n = arrlenu(good), K = get64(good + 48), L = 72 + K, ids = L + 8 * (size_t)d.n;
    uint64_t P = get64(good + 24), Q = get64(good + 32);
    size_t flags = ids + 4 * (P + Q);
    int np0 = d.samples[0].np, nt0 = d.samples[0].nt, V = tk->vocab_size;
    size_t zero_flag = flags; // a flag that is 0, to flip to a valid 1
    uint32_t merge0 = get32(good + 72 + 16); // the first merge's first id, to change to another valid byte
    while (good[zero_flag]) zero_flag++;
    char m[20][160];
    snprintf(m[0], 160, "truncated: the file has %zu bytes, its header implies %zu", n - 1, n);
    snprintf(m[1], 160, "trailing bytes: the file has %zu bytes, its header implies %zu", n + 1, n);
    snprintf(m[2], 160, "sample 0: prompt length 0 at byte %zu", L);
    snprintf(m[3], 160, "sample 0: target length 0 at byte %zu", L + 4);
    snprintf(m[4], 160, "sample 0, target token 0 (byte %zu): id %d is outside the vocabulary [0, %d)", ids + 4 * (size_t)np0, V, V);
    snprintf(m[5], 160, "sample 0, prompt token 1 (byte %zu): id -1 is outside the vocabulary", ids + 4);
    snprintf(m[6], 160, "sample 0, prompt token 0 (byte %zu): id 65 where CUSET_TOK_PROMPT (256) belongs", ids);
    snprintf(m[7], 160, "sample 0, prompt token 1 (byte %zu): special id 258 (CUSET_TOK_EOS) inside the prompt", ids + 4);
    snprintf(m[8], 160, "sample 0, target token %d (byte %zu): id 10 where CUSET_TOK_EOS (258) belongs", nt0 - 1,
             ids + 4 * (size_t)(np0 + nt0 - 1));
    snprintf(m[9], 160, "sample 0, CUDA flag of target token 0 (byte %zu) is 2, not 0 or 1", flags);
    snprintf(m[10], 160, "the prompt lengths add up to %llu, but byte 24 says %llu", (unsigned long long)P - 1, (unsigned long long)P);
    snprintf(m[11], 160, "the prompt lengths of samples 0..0 (through byte %zu) add up to more than the %llu prompt tokens",
             L + 7, (unsigned long long)P);
    snprintf(m[12], 160, "vocabulary size %d at byte 16 differs from the tokenizer's %d", V + 1, V);
    Corrupt cases[] = {
        {"truncated", 0, -1, 0, 0, m[0]},
        {"trailing byte", 0, -2, 0, 0, m[1]},
        {"shorter than the header", 0, -3, 0, 0, "t.dat: 10 bytes, shorter than the 64-byte header"},
        {"wrong magic", 0, 1, 'X', 0, "t.dat: bad magic at byte 0 (expected \"CUSETDAT\")"},
        {"wrong version", 8, 4, 3, 0, "t.dat: version 3 at byte 8; this reader knows versions 1 and 2"},
        {"wrong header size", 12, 4, 64, 0, "t.dat: header size 64 at byte 12; version 2 has a 72-byte header"},
        {"vocabulary out of range", 16, 4, 100, 0, "t.dat: vocabulary size 100 at byte 16 is outside 259.."},
        {"vocabulary differs from the tokenizer's", 16, 4, (uint64_t)V + 1, 0, m[12]},
        {"no samples", 20, 4, 0, 0, "t.dat: 0 samples at byte 20"},
        {"counts overflow", 24, 8, 1ull << 62, 0, "imply a file larger than 2^64 bytes"},
        {"total tokens too large", 32, 8, Q + 1, 0, "truncated: the file has"},
        {"corrupted tokenizer", 72 + 16, 4, 259, 0, "t.dat: the tokenizer at bytes 72.."},
        {"valid-looking merge change", 72 + 16, 4, merge0 ^ 1, 0, "t.dat: the tokenizer fingerprint 0x"},
        {"tokenizer fingerprint", 64, 8, 12345, 0, "the tokenizer fingerprint 0x0000000000003039 at byte 64 does not match"},
        {"np = 0", L, 4, 0, 0, m[2]},
        {"nt = 0", L + 4, 4, 0, 0, m[3]},
        {"np too small for the total", L, 4, (uint64_t)np0 - 1, 0, m[10]},
        {"np too large for the total", L, 4, P + 1, 0, m[11]},
        {"token id = vocabulary size", ids + 4 * (size_t)np0, 4, (uint64_t)V, 0, m[4]},
        {"negative token id", ids + 4, 4, 0xFFFFFFFFu, 0, m[5]},
        {"prompt does not open with PROMPT", ids, 4, 65, 0, m[6]},
        {"special id inside the prompt", ids + 4, 4, CUSET_TOK_EOS, 0, m[7]},
        {"target does not end with EOS", ids + 4 * (size_t)(np0 + nt0 - 1), 4, 10, 0, m[8]},
        {"bad flag", flags, 1, 2, 0, m[9]},
        {"valid-looking flag flip", zero_flag, 1, 1, 0, "at byte 56 does not match the samples'"},
        {"fingerprint", 56, 8, 12345, 0, "t.dat: the dataset fingerprint 0x0000000000003039 at byte 56 does not match"},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]), bad = 0;
    // what the failures must leave alone
    CusetDataset keep;
    CusetTokenizer ktk = {0};
    cuset_tok_init(&ktk);
    uint64_t kstamp = 7;
    cuset_dataset_synthetic(&keep, 3, 300, 2, 5, 1);
    CusetSample *keep_samples = keep.samples;
    uint64_t keep_fp = cuset_tok_fingerprint(&ktk);
    for (int i = 0; i < nc; i++) {
        Corrupt *c = &cases[i];
        unsigned char *b = (unsigned char *)malloc(n + 1);
        memcpy(b, good, n);
        size_t len = n;
        if (c->width == -1) len = n - 1;
        else if (c->width == -2) { b[n] = 0; len = n + 1; }
        else if (c->width == -3) len = 10;
        else if (c->width == 1) b[c->at] = (unsigned char)c->value;
        else if (c->width == 4) put32(b + c->at, (uint32_t)c->value);
        else put64(b + c->at, c->value);
        err[0] = 0;
        int rc = cuset_data_parse(b, len, "t.dat", &keep, &ktk, &kstamp, err, sizeof err);
        if (rc != -1) { fail(name, "%s: accepted", c->what); bad++; }
        else if (!strstr(err, c->msg) || strncmp(err, "t.dat: ", 7) != 0) {
            fail(name, "%s: got \"%s\", want \"...%s...\"", c->what, err, c->msg); bad++;
        } else if (keep.samples != keep_samples || keep.n != 3 || cuset_tok_fingerprint(&ktk) != keep_fp || kstamp != 7) {
            fail(name, "%s: the outputs changed on failure", c->what); bad++;
        }
        if (getenv("CUSET_TEST_VERBOSE")) printf("  %-40s %s\n", c->what, err);
        free(b);
    }
    if (!bad) printf("PASS %s (%d corruptions, each named with its byte)\n", name, nc);
    // the stamp is data, not checked: a changed stamp parses
    unsigned char *b = (unsigned char *)malloc(n);
    memcpy(b, good, n);
    put64(b + 40, 99);
    CusetDataset d3 = {0};
    if (cuset_data_parse(b, n, "t.dat", &d3, &ktk, &kstamp, err, sizeof err) || kstamp != 99 || !same_dataset(&d, &d3))
        fail("data_stamp_roundtrip", "%s", err);
    else pass("data_stamp_roundtrip");
    free(b);
    // version 1, the same without the tokenizer fingerprint (a 64-byte header), still loads
    b = (unsigned char *)malloc(n - 8);
    memcpy(b, good, 64);
    memcpy(b + 64, good + 72, n - 72);
    put32(b + 8, 1);
    put32(b + 12, 64);
    CusetDataset d5 = {0};
    if (cuset_data_parse(b, n - 8, "t.dat", &d5, &ktk, &kstamp, err, sizeof err) || !same_dataset(&d, &d5))
        fail("data_version_1_loads", "%s", err);
    else pass("data_version_1_loads");
    free(b);
    cuset_dataset_free(&d5);
    cuset_dataset_free(&d3);
    cuset_dataset_free(&keep);
    cuset_tok_free(&ktk);

    // load: missing file; save: what it refuses to write, and where it cannot write
    char path[160];
    snprintf(path, sizeof path, "%s/none.dat", tmpdir);
    CusetDataset d4 = {0};
    CusetTokenizer t4 = {0};
    cuset_tok_init(&t4);
    if (cuset_data_load(path, &d4, &t4, NULL, err, sizeof err) != -1 || !strstr(err, "cannot open: No such file"))
        fail("data_load_missing_file", "got \"%s\"", err);
    else pass("data_load_missing_file");
    int sbad = 0;
    d.vocab_size++;
    if (cuset_data_save(path, &d, tk, 0, err, sizeof err) != -1 || !strstr(err, "vocabulary size") || access(path, F_OK) == 0) sbad++;
    d.vocab_size--;
    int saved = d.samples[1].np;
    d.samples[1].np = 0;
    if (cuset_data_save(path, &d, tk, 0, err, sizeof err) != -1 || !strstr(err, "sample 1: 0 prompt tokens") || access(path, F_OK) == 0) sbad++;
    d.samples[1].np = saved;
    d.samples[2].target_cuda[0] = 3;
    if (cuset_data_save(path, &d, tk, 0, err, sizeof err) != -1 || !strstr(err, "sample 2, CUDA flag of target token 0 is 3")) sbad++;
    d.samples[2].target_cuda[0] = 0;
    snprintf(path, sizeof path, "%s/no-such-dir/x.dat", tmpdir);
    if (cuset_data_save(path, &d, tk, 0, err, sizeof err) != -1 || !strstr(err, "cannot create")) sbad++;
    if (sbad) fail("data_save_refuses", "%d of 4 cases wrong; last message \"%s\"", sbad, err);
    else pass("data_save_refuses");
    cuset_tok_free(&t4);
    cuset_dataset_free(&d);
    arrfree(good);
}

// ----------------------------------------------------------------------------
// the real programs: CUDABench

static void test_cudabench(void) {
    const char *name = "cudabench_dataset";
    const char *cands[] = {getenv("CUSET_CUDABENCH"), "../shared/cudabench/cudabench-dev.jsonl",
                           "../../shared/cudabench/cudabench-dev.jsonl"};
    const char *path = NULL;
    for (int i = 0; i < 3 && !path; i++) if (cands[i] && access(cands[i], R_OK) == 0) path = cands[i];
    if (!path) { skip(name, "../shared/cudabench/cudabench-dev.jsonl not found (set CUSET_CUDABENCH)"); return; }
    size_t len;
    char err[512];
    unsigned char *raw = read_file(path, &len);
    CusetTextSample *orig = NULL, *back = NULL;
    char *jl = NULL, out[160];
    CusetTokenizer tk = {0};
    CusetDataset d = {0}, d2 = {0};
    cuset_tok_init(&tk);
    // 1. read the original objects by their own member names
    if (!raw || cuset_jsonl_parse_keys((const char *)raw, len, path, "level1_prompt", "bench.cu", &orig, err, sizeof err)) {
        fail(name, "%s", raw ? err : "cannot read");
        goto done;
    }
    // 2. write prompt/completion JSON lines with our own writer, read them back
    for (size_t i = 0; i < arrlenu(orig); i++) json_put_sample(&jl, &orig[i]);
    snprintf(out, sizeof out, "%s/cudabench.jsonl", tmpdir);
    if (write_file(out, jl, arrlenu(jl))) { fail(name, "cannot write %s", out); goto done; }
    if (cuset_jsonl_read(out, &back, err, sizeof err)) { fail(name, "%s", err); goto done; }
    if (arrlen(back) != arrlen(orig) || !same_samples(orig, back, arrlenu(orig))) {
        fail(name, "the converted file reads back differently");
        goto done;
    }
    printf("PASS cudabench_jsonl_convert (%td samples from %s, %zu bytes -> %td bytes of prompt/completion JSON lines,"
           " read back identical)\n", arrlen(orig), path, len, arrlen(jl));
    // 3. tokenizer (vocab 1024) on prompts and programs, then the dataset
    size_t n = arrlenu(back);
    const char **texts = (const char **)malloc(2 * n * sizeof *texts);
    size_t *lens = (size_t *)malloc(2 * n * sizeof *lens);
    for (size_t i = 0; i < n; i++) {
        texts[2 * i] = back[i].prompt; lens[2 * i] = back[i].prompt_len;
        texts[2 * i + 1] = back[i].completion; lens[2 * i + 1] = back[i].completion_len;
    }
    double t0 = cuset_time();
    cuset_tok_train(&tk, texts, lens, 2 * n, 1024, 0);
    double t1 = cuset_time();
    cuset_dataset_from_text(&d, &tk, back, n);
    double t2 = cuset_time();
    free(texts); free(lens);
    // every sample decodes to its texts; flags agree with the spans by interval overlap
    uint64_t tgt = 0, cuda = 0, prm = 0, bytes = 0;
    int bad = -1;
    for (int i = 0; i < d.n; i++) {
        const CusetSample *s = &d.samples[i];
        if (check_layout(s, &tk, back[i].prompt, back[i].prompt_len, back[i].completion, back[i].completion_len)[0]) { bad = i; break; }
        CusetSpan *spans = NULL;
        size_t ns = cuset_annotate(back[i].completion, back[i].completion_len, &spans), pos = 0;
        for (int k = 0; k + 1 < s->nt; k++) {
            size_t l;
            cuset_tok_bytes(&tk, s->target[k], &l);
            int f = 0;
            for (size_t j = 0; j < ns && !f; j++) f = pos < spans[j].end && pos + l > spans[j].start;
            if (f != s->target_cuda[k]) bad = i;
            pos += l;
            cuda += s->target_cuda[k];
        }
        arrfree(spans);
        tgt += (uint64_t)s->nt - 1; // without EOS
        prm += (uint64_t)s->np - 2;
        bytes += back[i].completion_len;
    }
    if (bad >= 0) { fail(name, "sample %d: layout or flags wrong", bad); goto done; }
    // 4. the data file: save, load, same
    snprintf(out, sizeof out, "%s/cudabench.dat", tmpdir);
    uint64_t st = 0;
    CusetTokenizer tk2 = {0};
    cuset_tok_init(&tk2);
    double t3 = cuset_time();
    int rc = cuset_data_save(out, &d, &tk, (uint64_t)len, err, sizeof err);
    double t4 = cuset_time();
    rc = rc || cuset_data_load(out, &d2, &tk2, &st, err, sizeof err);
    double t5 = cuset_time();
    int same = rc == 0 && same_dataset(&d, &d2) && st == (uint64_t)len && cuset_tok_fingerprint(&tk) == cuset_tok_fingerprint(&tk2);
    cuset_tok_free(&tk2);
    if (!same) { fail(name, "data file round trip: %s", rc ? err : "differs"); goto done; }
    size_t flen = 0;
    free(read_file(out, &flen));
    printf("PASS %s (%d samples, vocab %d: mean target %.1f tokens (%.2f bytes/token), mean prompt %.1f tokens,"
           " %.1f%% of target tokens CUDA-sensitive (EOS excluded); tokenizer %.2f s, tokenize+annotate %.3f s,"
           " data file %zu bytes saved in %.3f s, loaded in %.3f s)\n",
           name, d.n, tk.vocab_size, (double)tgt / d.n, (double)bytes / (double)tgt, (double)prm / d.n,
           100.0 * (double)cuda / (double)tgt, t1 - t0, t2 - t1, flen, t4 - t3, t5 - t4);
done:
    free(raw);
    arrfree(jl);
    cuset_text_samples_free(orig);
    cuset_text_samples_free(back);
    cuset_dataset_free(&d); cuset_dataset_free(&d2);
    cuset_tok_free(&tk);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cuset_data_test.XXXXXX");
    if (!mkdtemp(tmpdir)) { printf("FAIL setup: cannot create %s\n", tmpdir); return 1; }
    test_json_escapes();
    test_json_raw_utf8_and_members();
    test_json_lines();
    test_json_errors();
    test_jsonl_read();
    test_cu_dir();
    test_sample_from_text();
    CusetTokenizer tk = {0};
    const char *texts[1] = {tok_test_snippet};
    size_t lens[1] = {sizeof tok_test_snippet - 1};
    cuset_tok_train(&tk, texts, lens, 1, 512, 0);
    test_dataset_from_text(&tk);
    test_tok_fingerprint(&tk);
    test_data_roundtrip(&tk);
    test_data_rejects(&tk);
    cuset_tok_free(&tk);
    test_cudabench();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", tmpdir);
    printf("%s\n", n_fail ? "SOME CHECKS FAILED" : "all data checks passed");
    return n_fail ? 1 : 0;
}
