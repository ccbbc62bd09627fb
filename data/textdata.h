/* data/textdata.h — text data for cuset, in one header: from files to token samples.

   JSON lines and .cu directories -> text samples -> tokens with per-token CUDA flags
   (data/tokenizer.h, data/annotate.h) -> token data files (a cache), and the checkpoint
   calls that carry a tokenizer; plus the JSON-lines reader and the JSON string writer
   the rest of the project uses.

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_TEXTDATA_IMPLEMENTATION
       #include "data/textdata.h"
   Depends on cuset.h (CusetSample, CusetDataset, checkpoints), data/tokenizer.h and
   data/annotate.h; its implementation goes in the file that has cuset.h's
   (CUSET_IMPLEMENTATION) and the other two's, after them. */
#ifndef CUSET_TEXTDATA_H
#define CUSET_TEXTDATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../cuset.h"
#include "tokenizer.h"
#include "annotate.h"

#ifdef __cplusplus
extern "C" {
#endif

// The data layer: raw text -> text samples -> token samples -> token data files.
//       CusetTextSample *s = NULL;                                   // stb_ds array
//       cuset_jsonl_read("train.jsonl", &s, err, sizeof err);       // or cuset_cu_dir_read
//       cuset_tok_train(&tk, ...);
//       cuset_dataset_from_text(&d, &tk, s, arrlenu(s));             // tokens + CUDA flags
//       cuset_data_save("train.tok", &d, &tk, stamp, err, sizeof err);   // cache
//       cuset_data_load("train.tok", &d, &tk, &stamp, err, sizeof err);  // later runs
//       cuset_text_samples_free(s);
// cuset_data_open does all of it for the trainer, with the cache beside the source.
// Errors never crash or exit: a function that can fail returns -1 and writes into
// err[errlen] what is wrong, where (NAME:LINE:COL for text, a byte offset for binary
// files) and, where it helps, what to do.
// ---------------------------------------------------------------------------------------
// Text samples. A prompt and its completion (the response the model learns to write), as
// bytes. Both are malloc'd and NUL-terminated for convenience, but may contain NUL bytes
// (JSON's \u0000), so use the lengths. Readers append to a caller's stb_ds array
// (initially NULL); cuset_text_samples_free frees the strings and the array.
typedef struct {
    char *prompt; size_t prompt_len;
    char *completion; size_t completion_len;
} CusetTextSample;
void cuset_text_samples_free(CusetTextSample *samples); // an stb_ds array; NULL is fine

// JSON lines, strictly (RFC 8259 per line). Every non-blank line is one JSON object with
// the string members "prompt" and "completion" (the prompt-completion format of common
// SFT tools). Rules:
// - Lines end in "\n" or "\r\n"; a line of only spaces, tabs and CRs is blank and
//   skipped. A UTF-8 byte order mark at the very start of the input is skipped (columns
//   still count its 3 bytes). A sample must sit on one line: a newline inside an object
//   is an error (pretty-printed JSON is not JSON lines).
// - Other members, of any JSON type, are allowed, validated and skipped; so are their
//   duplicates. A duplicate "prompt" or "completion" is an error, and so is a
//   non-string one. Member names are compared after unescaping ("\u0070rompt" is
//   "prompt"; "prompt\u0000" is not).
// - Strings: escapes \" \\ \/ \b \f \n \r \t and \uXXXX; a surrogate pair
//   \uD83D\uDE00 is one code point; a lone or mismatched surrogate is an error; \u0000
//   gives a NUL byte. Raw control characters (< 0x20) in strings are errors; raw bytes
//   >= 0x80 must form valid UTF-8 (no overlongs, no encoded surrogates, nothing above
//   U+10FFFF), so every decoded string is valid UTF-8.
// - Numbers follow the JSON grammar (no leading zeros, no '+', no NaN); literals are
//   true, false, null. Objects and arrays nest at most CUSET_JSONL_MAX_DEPTH deep
//   (the sample object is level 1), which bounds the parser's recursion.
// - After the sample object only whitespace may follow on its line.
// - No samples at all (empty input, only blank lines) is an error too: a trainer needs
//   data, and an empty file is usually a mistake upstream.
// Errors read "NAME:LINE:COL: message", 1-based, COL counted in bytes.
// On success the samples are appended to *out and 0 is returned; on failure *out is left
// as it was (nothing appended) and -1 is returned. name (NULL: "<input>") is only used in
// messages. At most INT_MAX samples (CusetDataset counts them in an int).
#define CUSET_JSONL_MAX_DEPTH 64
int cuset_jsonl_parse(const char *buf, size_t len, const char *name, CusetTextSample **out,
                      char *err, size_t errlen);
// The same with other member names for the two strings, e.g. ("instruction", "output")
// or CUDABench's ("level1_prompt", "bench.cu"); completion_key NULL reads the prompts alone
// (a "completion" member is then optional, skipped as any other, and completion NULL).
int cuset_jsonl_parse_keys(const char *buf, size_t len, const char *name, const char *prompt_key,
                           const char *completion_key, CusetTextSample **out, char *err, size_t errlen);
// Reads the file and parses it, with the path as NAME.
int cuset_jsonl_read(const char *path, CusetTextSample **out, char *err, size_t errlen);

// CUDA sources: every regular file named *.cu (a nonempty stem, so ".cu" alone does not
// count) under dir, recursively, in byte order of the path relative to dir (strcmp, so
// "a/b.cu" < "a/z.cu" < "b.cu"); prompt "" and completion = the file's bytes, as they are
// (no UTF-8 check). Symbolic links to files are followed; symbolic links to directories
// are not (no cycles). A directory without such a file is an error. Appends to *out like
// cuset_jsonl_parse; 0 or -1.
int cuset_cu_dir_read(const char *dir, CusetTextSample **out, char *err, size_t errlen);

// ---------------------------------------------------------------------------------------
// Text -> tokens. The layout of a CusetSample (cuset.h):
//   prompt = [CUSET_TOK_PROMPT] + encode(prompt) + [CUSET_TOK_TARGET]       (np >= 2)
//   target = encode(completion) + [CUSET_TOK_EOS]                           (nt >= 1)
//   target_cuda[k] = 1 when any byte of target token k lies in a span of
//     cuset_annotate(completion); token k covers the completion bytes from the sum of
//     the lengths (cuset_tok_bytes) of tokens 0..k-1, for its own length. EOS: 0.
// The arrays are plain malloc'd (cuset_dataset_free frees them). Whatever out held is
// overwritten, not freed. Texts over 2^31 tokens are not supported (np, nt are int).
void cuset_sample_from_text(CusetSample *out, const CusetTokenizer *tk, const char *prompt, size_t np,
                            const char *completion, size_t nc);
// n samples, in order, in parallel (OpenMP) over samples; sets d->vocab_size to the
// tokenizer's and d->fingerprint (cuset_dataset_fingerprint). d is overwritten, not
// freed (like cuset_dataset_synthetic). n must be at most INT_MAX.
void cuset_dataset_from_text(CusetDataset *d, const CusetTokenizer *tk, const CusetTextSample *s, size_t n);
// FNV-1a (64-bit) over the bytes of cuset_tok_save: equal tokenizers, equal fingerprints.
uint64_t cuset_tok_fingerprint(const CusetTokenizer *tk);

// ---------------------------------------------------------------------------------------
// Token data files: a tokenized dataset together with its tokenizer, so training can
// skip tokenizing (a cache keyed by the caller's source stamp) and a file always carries
// the vocabulary its ids belong to. Little-endian:
//   offset      size       field
//   0           8          magic "CUSETDAT"
//   8           4          u32 version (2)
//   12          4          u32 header size (72)
//   16          4          u32 vocabulary size V (= the tokenizer's)
//   20          4          u32 number of samples N (1 .. INT_MAX)
//   24          8          u64 total prompt tokens P (sum of np)
//   32          8          u64 total target tokens Q (sum of nt)
//   40          8          u64 source stamp: the caller's cache key (e.g. size and mtime
//                          of the source); stored and returned, never interpreted
//   48          8          u64 tokenizer bytes K
//   56          8          u64 dataset fingerprint (cuset_dataset_fingerprint), a
//                          checksum over every sample, checked on load
//   64          8          u64 tokenizer fingerprint (cuset_tok_fingerprint: FNV-1a over
//                          its K bytes), checked on load
//   72          K          the tokenizer, as cuset_tok_save writes it
//   72+K        8N         per sample: u32 np, u32 nt
//   72+K+8N     4(P+Q)     token ids as int32, sample by sample: its np prompt ids, then
//                          its nt target ids (a sample's tokens are contiguous)
//   ...+4(P+Q)  Q          target CUDA flags, one byte (0 or 1) per target token, sample
//                          by sample
// The file is exactly 72 + K + 8N + 4(P+Q) + Q bytes (K is a multiple of 4, of 8 for the
// project's own tokenizer, so the ids are 4-byte aligned). Version 1 (still read) has a
// 64-byte header without the tokenizer fingerprint: a damaged merge that still names
// valid ids passes there. Every sample has the layout of cuset_sample_from_text: np >= 2,
// nt >= 1, ids in [0, V), the prompt opens with CUSET_TOK_PROMPT and closes with
// CUSET_TOK_TARGET, the target closes with CUSET_TOK_EOS, and no special id occurs
// anywhere else; flags are 0 or 1.
//
// Save checks all of that first (it never writes a file that load refuses; d->vocab_size
// must equal the tokenizer's; d->fingerprint is recomputed, not trusted), writes
// PATH.tmp.PID, syncs it and renames it over PATH. Serialize appends the same bytes to an
// stb_ds array.
// Parse checks everything - magic, version, header size, the counts against the exact
// length, the tokenizer (cuset_tok_load), every length, id, special and flag, and last
// the fingerprint - and names the byte at fault. Safe on any bytes; allocates O(len).
// On success it overwrites *d (not freed first, pass a zeroed or freed one), replaces
// what *tk held (tk must be cuset_tok_init'ed or zeroed), sets *source_stamp (if not
// NULL) and returns 0; on failure it changes nothing and returns -1. name (NULL:
// "<data>") is used in messages. A version-2 file parsed and serialized again gives the
// same bytes (a version-1 file comes back as version 2).
#define CUSET_DATA_MAGIC "CUSETDAT"
#define CUSET_DATA_VERSION 2
#define CUSET_DATA_HEADER 72    // version 1's: 64, without the tokenizer fingerprint
int cuset_data_save(const char *path, const CusetDataset *d, const CusetTokenizer *tk, uint64_t source_stamp,
                    char *err, size_t errlen);
int cuset_data_serialize(const CusetDataset *d, const CusetTokenizer *tk, uint64_t source_stamp,
                         unsigned char **buf, char *err, size_t errlen);
int cuset_data_parse(const unsigned char *buf, size_t len, const char *name, CusetDataset *d, CusetTokenizer *tk,
                     uint64_t *source_stamp, char *err, size_t errlen);
int cuset_data_load(const char *path, CusetDataset *d, CusetTokenizer *tk, uint64_t *source_stamp,
                    char *err, size_t errlen);

// Opens training data for the trainer. src: a JSON-lines file (.jsonl), a directory of
// .cu files, or a token data file (.tok). Text is tokenized and cached as SRC.tok beside
// the source (SRC without its trailing '/' for a directory), and the cache is reused when
// it was made from the same text for the same tokenizer. fixed: the tokenizer the data
// must use (a checkpoint's), or NULL to reuse the cache's or train one of vocab_size ids
// on the text (with fixed, vocab_size is the size a new model's run asked for, so that
// its cache is found when its tokenizer ran out of pairs before). tk must be cuset_tok_init'ed. On success d and tk hold the data and its
// tokenizer and note says what was done.
int cuset_data_open(const char *src, const CusetTokenizer *fixed, int vocab_size, CusetDataset *d, CusetTokenizer *tk,
                    char *note, size_t notelen, char *err, size_t errlen);

// Reads a whole file (or a pipe: "/dev/stdin") into *buf (malloc'd, one NUL byte past the
// end); returns 0, or -1 with a message.
int cuset_read_file(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen);
// JSON members of one line, and JSON strings out (the evaluation harness emu/eval.h and the
// confidence analysis data/confidence.h use them besides the JSON-lines reader above).
//
// One top-level member of the JSON object on one line of JSON lines (a line of
// cuset_jsonl_parse's format): finds member `key` and reports its type ('s' string, 'n'
// number, 'o' object, 'a' array, 't'/'f' true/false, 'z' null). A string is decoded into
// *str (malloc'd, NUL-terminated, its length in *str_len); a number is parsed into *num;
// str and num may be NULL. Returns 1 found, 0 not there, -1 the line is not a JSON
// object (message in err, as "name:line_no:COL: ...").
int cuset_json_member(const char *line, size_t len, const char *name, size_t line_no, const char *key, char *type,
                      char **str, size_t *str_len, double *num, char *err, size_t errlen);
// Appends s (len bytes) to f as a JSON string with quotes: escapes ", \ and control
// characters, and writes each byte that is not part of valid UTF-8 as \ufffd, so the
// output is always valid JSON.
void cuset_json_write_string(FILE *f, const char *s, size_t len);

// Checkpoints with their tokenizer: cuset.h's cuset_checkpoint_save and _load with tk as
// its cuset_tok_save bytes. tk may be NULL (save: no tokenizer; load: skip it). Load
// checks the tokenizer and that it matches the model's vocabulary ("its tokenizer: ...");
// tk (cuset_tok_init'ed) is left as it was when the file has none or the checkpoint fails
// to load, and reset by cuset_tok_init when its tokenizer fails (or does not match).
int cuset_checkpoint_save_tok(const char *path, const CusetGPT *m, const CusetGPT *ref, const CusetTokenizer *tk,
                              const CusetCheckpointInfo *info, int with_optimizer, char *err, size_t errlen);
int cuset_checkpoint_load_tok(const char *path, CusetGPT *m, CusetGPT *ref, CusetTokenizer *tk, int want_optimizer,
                              CusetCheckpointInfo *info, char *err, size_t errlen);
// What a loaded checkpoint is (gen --info), to f: the model's shape; its training (steps,
// objective, optimizer state, ASFT reference); its tokenizer (tk, as loaded); and, for a
// version-1 checkpoint, that its windows predate the eq. 5 correction.
void cuset_checkpoint_describe(FILE *f, const char *path, const CusetGPT *m, const CusetTokenizer *tk,
                               const CusetCheckpointInfo *info);

#ifdef __cplusplus
}
#endif
#endif // CUSET_TEXTDATA_H

#ifdef CUSET_TEXTDATA_IMPLEMENTATION
#ifndef CUSET_TEXTDATA_IMPLEMENTATION_DONE
#define CUSET_TEXTDATA_IMPLEMENTATION_DONE

#if !defined(CUSET_IMPLEMENTATION_DONE) || !defined(CUSET_TOKENIZER_IMPLEMENTATION_DONE) || \
    !defined(CUSET_ANNOTATE_IMPLEMENTATION_DONE)
#error "data/textdata.h: its implementation needs those of cuset.h, data/tokenizer.h and data/annotate.h before it"
#endif
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Reads a whole file into *buf (malloc'd, one NUL byte past the end) and its size into
// *len. Sized by fstat when it is a regular file, grown by doubling otherwise (pipes).
int cuset_read_file(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return cuset__err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    size_t cap = 1 << 16, n = 0;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size < SIZE_MAX - 2)
        cap = (size_t)st.st_size + 1; // + 1 so that reading EOF needs no growth
    unsigned char *b = (unsigned char *)malloc(cap + 1);
    if (!b) { fclose(f); return cuset__err(err, errlen, "%s: out of memory for %zu bytes", path, cap); }
    for (;;) {
        if (n == cap) {
            unsigned char *nb = cap < SIZE_MAX / 4 ? (unsigned char *)realloc(b, 2 * cap + 1) : NULL;
            if (!nb) { free(b); fclose(f); return cuset__err(err, errlen, "%s: out of memory after %zu bytes", path, n); }
            b = nb; cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno;
                free(b); fclose(f);
                return cuset__err(err, errlen, "%s: read error after %zu bytes: %s", path, n, strerror(e));
            }
            break;
        }
    }
    fclose(f);
    b[n] = 0;
    *buf = b; *len = n;
    return 0;
}

void cuset_text_samples_free(CusetTextSample *samples) {
    for (size_t i = 0; i < arrlenu(samples); i++) { free(samples[i].prompt); free(samples[i].completion); }
    arrfree(samples);
}

// ---- JSON lines ----------------------------------------------------------------------------
// The JSON-lines reader (cuset_jsonl_parse and cuset_json_member share it) and, further
// down, the JSON string writer. Whole documents (config.json, tokenizer.json, the corpus
// generator's spec.json) are read into a tree by data/json.h instead; this reader streams
// a file of samples, validates its UTF-8 and says what is wrong in a user's terms (line,
// column, the member or character). test/test_corpus.c reads the generator's samples back
// through it.
// A recursive-descent parser over one buffer. Every sample is on one line, so every error
// is on the current line: its column is the offset minus the line's first offset, + 1.

typedef struct {
    const unsigned char *s; size_t n, i; // input, length, cursor
    size_t line, line_start;             // 1-based line number; offset of its first byte
    size_t open; char open_kind;         // innermost open object/array: offset, '{' or '['
    const char *name;
    char *err; size_t errlen;
    char *buf;                           // stb_ds: the string being decoded
} cuset__json;

__attribute__((format(printf, 3, 4)))
static int cuset__json_fail(cuset__json *J, size_t at, const char *fmt, ...) {
    if (J->err && J->errlen) {
        int k = snprintf(J->err, J->errlen, "%s:%zu:%zu: ", J->name, J->line, at - J->line_start + 1);
        if (k >= 0 && (size_t)k < J->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(J->err + k, J->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

// What is at offset at, for messages: 'c', byte 0xNN, the end of the line/input.
static const char *cuset__json_found(const cuset__json *J, size_t at, char *b, size_t bn) {
    if (at >= J->n) return "the end of the input";
    unsigned char c = J->s[at];
    if (c == '\n') return "the end of the line";
    if (c == '\'') snprintf(b, bn, "a single quote");
    else if (c > 0x20 && c < 0x7f) snprintf(b, bn, "'%c'", c);
    else snprintf(b, bn, "byte 0x%02X", c);
    return b;
}

// Fails at the cursor where `what` was expected; at the end of a line or of the input
// says which object or array was left open.
static int cuset__json_expected(cuset__json *J, const char *what) {
    const char *kind = J->open_kind == '[' ? "array" : "object";
    size_t col = J->open - J->line_start + 1;
    if (J->i >= J->n)
        return cuset__json_fail(J, J->i, "the input ends inside the %s that opens at column %zu, where %s"
                                " was expected (truncated file?)", kind, col, what);
    if (J->s[J->i] == '\n')
        return cuset__json_fail(J, J->i, "the line ends inside the %s that opens at column %zu, where %s was"
                                " expected (a sample must be one JSON object on one line; pretty-printed"
                                " JSON is not JSON lines)", kind, col, what);
    char b[32];
    unsigned char c = J->s[J->i];
    const char *hint = c == '\'' ? " (JSON strings use double quotes)"
                     : c >= 0x80 ? " (outside strings only ASCII may appear)" : "";
    return cuset__json_fail(J, J->i, "expected %s, found %s%s", what, cuset__json_found(J, J->i, b, sizeof b), hint);
}

static void cuset__json_ws(cuset__json *J) { // JSON whitespace, less the newline that ends a sample
    while (J->i < J->n && (J->s[J->i] == ' ' || J->s[J->i] == '\t' || J->s[J->i] == '\r')) J->i++;
}

static int cuset__json_digit(cuset__json *J, size_t i) { return i < J->n && J->s[i] >= '0' && J->s[i] <= '9'; }

// The length of the valid UTF-8 sequence at s[at] (a byte >= 0x80), or 0 after failing.
// The ranges are Unicode's Table 3-7 (well-formed UTF-8 byte sequences).
static size_t cuset__json_utf8(cuset__json *J, size_t at) {
    const unsigned char *s = J->s;
    unsigned char c = s[at];
    const char *fix = "the input must be UTF-8; convert it (e.g. iconv -t UTF-8) or escape the text";
    if (c < 0xC2 || c > 0xF4) {
        cuset__json_fail(J, at, "invalid UTF-8: %s 0x%02X; %s", c < 0xC0 ? "continuation byte without a lead byte:"
                         : c < 0xC2 ? "overlong 2-byte sequence, lead byte" : "a byte that never occurs in UTF-8:", c, fix);
        return 0;
    }
    size_t need = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    for (size_t k = 1; k < need; k++) {
        if (at + k >= J->n || (s[at + k] & 0xC0) != 0x80) {
            cuset__json_fail(J, at, "invalid UTF-8: lead byte 0x%02X needs %zu continuation bytes but has %zu; %s",
                             c, need - 1, k - 1, fix);
            return 0;
        }
        if (k == 1 && (s[at + 1] < lo || s[at + 1] > hi)) {
            cuset__json_fail(J, at, "invalid UTF-8: 0x%02X 0x%02X begins %s; %s", c, s[at + 1],
                             c == 0xED ? "an encoded UTF-16 surrogate (U+D800..U+DFFF)"
                             : c == 0xF4 ? "a code point above U+10FFFF" : "an overlong sequence", fix);
            return 0;
        }
    }
    return need;
}

static void cuset__json_put_utf8(char **b, unsigned cp) {
    if (cp < 0x80) { arrput(*b, (char)cp); return; }
    if (cp < 0x800) { arrput(*b, (char)(0xC0 | cp >> 6)); }
    else {
        if (cp < 0x10000) arrput(*b, (char)(0xE0 | cp >> 12));
        else { arrput(*b, (char)(0xF0 | cp >> 18)); arrput(*b, (char)(0x80 | (cp >> 12 & 0x3F))); }
        arrput(*b, (char)(0x80 | (cp >> 6 & 0x3F)));
    }
    arrput(*b, (char)(0x80 | (cp & 0x3F)));
}

// The 4 hex digits of the \u escape at s[at] ('\\'), or -1.
static long cuset__json_hex4(const cuset__json *J, size_t at) {
    if (at + 6 > J->n || J->s[at] != '\\' || J->s[at + 1] != 'u') return -1;
    long v = 0;
    for (size_t k = at + 2; k < at + 6; k++) {
        unsigned char c = J->s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

// The string at the cursor (a '"'); appends its decoded bytes to J->buf when keep.
// Leaves the cursor after the closing quote.
static int cuset__json_string(cuset__json *J, int keep) {
    const unsigned char *s = J->s;
    size_t open = J->i++;
    for (;;) {
        size_t run = J->i; // copy runs of plain bytes at once
        while (J->i < J->n && s[J->i] != '"' && s[J->i] != '\\' && s[J->i] >= 0x20 && s[J->i] < 0x80) J->i++;
        if (keep && J->i > run) memcpy(arraddnptr(J->buf, J->i - run), s + run, J->i - run);
        if (J->i >= J->n)
            return cuset__json_fail(J, J->i, "the input ends inside the string that opens at column %zu"
                                    " (truncated file?)", open - J->line_start + 1);
        unsigned char c = s[J->i];
        if (c == '"') { J->i++; return 0; }
        if (c >= 0x80) {
            size_t k = cuset__json_utf8(J, J->i);
            if (!k) return -1;
            if (keep) memcpy(arraddnptr(J->buf, k), s + J->i, k);
            J->i += k;
            continue;
        }
        if (c == '\n')
            return cuset__json_fail(J, J->i, "the line ends inside the string that opens at column %zu (a"
                                    " missing '\"'? a newline inside a string is written \\n)", open - J->line_start + 1);
        if (c < 0x20)
            return cuset__json_fail(J, J->i, "raw control character 0x%02X inside a string (JSON needs it"
                                    " escaped: \\u%04X%s)", c, c, c == '\t' ? " or \\t" : c == '\r' ? " or \\r" : "");
        // c == '\\'
        size_t esc = J->i;
        if (esc + 1 >= J->n)
            return cuset__json_fail(J, esc, "the input ends in an escape sequence (truncated file?)");
        unsigned char e = s[esc + 1];
        const char *plain = "\"\"\\\\//b\bf\fn\nr\rt\t"; // escape letter, then the byte it stands for
        const char *p = NULL;
        for (int k = 0; plain[k]; k += 2) if ((unsigned char)plain[k] == e) { p = plain + k + 1; break; }
        if (p) {
            if (keep) arrput(J->buf, *p);
            J->i += 2;
            continue;
        }
        if (e != 'u') {
            char b[32];
            if (e == '\n') snprintf(b, sizeof b, "end of line"); else if (e > 0x20 && e < 0x7f) snprintf(b, sizeof b, "\\%c", e);
            else snprintf(b, sizeof b, "\\ + byte 0x%02X", e);
            return cuset__json_fail(J, esc, "invalid escape '%s' in a string (valid: \\\" \\\\ \\/ \\b \\f \\n \\r \\t"
                                    " \\uXXXX; a backslash itself is written \\\\)", b);
        }
        long cp = cuset__json_hex4(J, esc);
        if (cp < 0)
            return cuset__json_fail(J, esc, "\\u must be followed by 4 hex digits (\\u00e9, \\u20AC)");
        J->i += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return cuset__json_fail(J, esc, "lone low surrogate \\u%04lX: it may only follow a high surrogate"
                                    " \\uD800..\\uDBFF", cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int has_u = J->i + 1 < J->n && s[J->i] == '\\' && s[J->i + 1] == 'u';
            long lo = cuset__json_hex4(J, J->i);
            if (has_u && lo < 0)
                return cuset__json_fail(J, J->i, "\\u must be followed by 4 hex digits (\\u00e9, \\u20AC)");
            if (lo < 0xDC00 || lo > 0xDFFF)
                return cuset__json_fail(J, esc, "high surrogate \\u%04lX is not followed by a low surrogate"
                                        " \\uDC00..\\uDFFF (a lone surrogate is not a character; write a"
                                        " character above U+FFFF as a pair, e.g. \\uD83D\\uDE00)", cp);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            J->i += 6;
        }
        if (keep) cuset__json_put_utf8(&J->buf, (unsigned)cp);
    }
}

static int cuset__json_number(cuset__json *J) {
    char b[32];
    size_t i = J->i;
    if (J->s[i] == '-') i++;
    if (!cuset__json_digit(J, i))
        return cuset__json_fail(J, i, "expected a digit after '-', found %s", cuset__json_found(J, i, b, sizeof b));
    if (J->s[i] == '0') {
        if (cuset__json_digit(J, i + 1))
            return cuset__json_fail(J, i, "a number may not have leading zeros (write 7, not 07)");
        i++;
    } else while (cuset__json_digit(J, i)) i++;
    if (i < J->n && J->s[i] == '.') {
        i++;
        if (!cuset__json_digit(J, i))
            return cuset__json_fail(J, i, "expected a digit after the decimal point, found %s", cuset__json_found(J, i, b, sizeof b));
        while (cuset__json_digit(J, i)) i++;
    }
    if (i < J->n && (J->s[i] == 'e' || J->s[i] == 'E')) {
        i++;
        if (i < J->n && (J->s[i] == '+' || J->s[i] == '-')) i++;
        if (!cuset__json_digit(J, i))
            return cuset__json_fail(J, i, "expected a digit in the exponent, found %s", cuset__json_found(J, i, b, sizeof b));
        while (cuset__json_digit(J, i)) i++;
    }
    J->i = i;
    return 0;
}

static int cuset__json_is_word(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The length of the word (letters, digits, _) at the cursor, and the literal it is: 1
// true, 2 false, 3 null, 0 none.
static int cuset__json_literal(const cuset__json *J, size_t *len) {
    size_t k = J->i;
    while (k < J->n && cuset__json_is_word(J->s[k])) k++;
    *len = k - J->i;
    const char *w = (const char *)J->s + J->i;
    if (*len == 4 && memcmp(w, "true", 4) == 0) return 1;
    if (*len == 5 && memcmp(w, "false", 5) == 0) return 2;
    if (*len == 4 && memcmp(w, "null", 4) == 0) return 3;
    return 0;
}

static int cuset__json_object(cuset__json *J, int depth, CusetTextSample *top, const char *const keys[2]);
static int cuset__json_array(cuset__json *J, int depth);

// Any value at the cursor, validated and skipped. depth: that of the enclosing container.
static int cuset__json_value(cuset__json *J, int depth) {
    if (J->i >= J->n || J->s[J->i] == '\n') return cuset__json_expected(J, "a value");
    unsigned char c = J->s[J->i];
    if (c == '"') return cuset__json_string(J, 0);
    if (c == '{' || c == '[') {
        if (depth >= CUSET_JSONL_MAX_DEPTH)
            return cuset__json_fail(J, J->i, "objects and arrays nested deeper than %d levels (a limit of this"
                                    " reader that keeps it safe on hostile input)", CUSET_JSONL_MAX_DEPTH);
        return c == '{' ? cuset__json_object(J, depth + 1, NULL, NULL) : cuset__json_array(J, depth + 1);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return cuset__json_number(J);
    if (cuset__json_is_word(c)) {
        size_t len;
        if (cuset__json_literal(J, &len)) { J->i += len; return 0; }
        return cuset__json_fail(J, J->i, "unknown word '%.*s%s' (JSON's literals are true, false and null, in"
                                " lowercase; strings need double quotes)", len > 24 ? 24 : (int)len,
                                (const char *)J->s + J->i, len > 24 ? "..." : "");
    }
    return cuset__json_expected(J, "a value (string, number, object, array, true, false or null)");
}

static int cuset__json_array(cuset__json *J, int depth) {
    size_t save_open = J->open;
    char save_kind = J->open_kind;
    J->open = J->i++; J->open_kind = '[';
    cuset__json_ws(J);
    if (J->i < J->n && J->s[J->i] == ']') { J->i++; goto done; }
    for (;;) {
        cuset__json_ws(J);
        if (cuset__json_value(J, depth)) return -1;
        cuset__json_ws(J);
        if (J->i < J->n && J->s[J->i] == ',') {
            J->i++;
            cuset__json_ws(J);
            if (J->i < J->n && J->s[J->i] == ']')
                return cuset__json_fail(J, J->i, "expected a value after ',', found ']' (JSON does not allow a"
                                        " trailing comma)");
            continue;
        }
        if (J->i < J->n && J->s[J->i] == ']') { J->i++; break; }
        return cuset__json_expected(J, "',' or ']' after an array element");
    }
done:
    J->open = save_open; J->open_kind = save_kind;
    return 0;
}

// An object at the cursor. At the top (top != NULL) the members named keys[0] and
// keys[1] must be strings and are decoded into top->prompt and top->completion (freed by
// the caller, also on failure); elsewhere everything is validated and skipped.
static int cuset__json_object(cuset__json *J, int depth, CusetTextSample *top, const char *const keys[2]) {
    size_t save_open = J->open, key_at[2] = {0, 0};
    char save_kind = J->open_kind;
    size_t open = J->open = J->i++;
    int have[2] = {0, 0};
    J->open_kind = '{';
    cuset__json_ws(J);
    if (J->i < J->n && J->s[J->i] == '}') { J->i++; goto done; }
    for (;;) {
        cuset__json_ws(J);
        if (J->i >= J->n || J->s[J->i] != '"') return cuset__json_expected(J, "a member name (a string in double quotes)");
        size_t kat = J->i;
        int which = -1;
        if (top) {
            arrsetlen(J->buf, 0);
            if (cuset__json_string(J, 1)) return -1;
            for (int k = 0; k < 2; k++)
                if (keys[k] && arrlenu(J->buf) == strlen(keys[k]) && memcmp(J->buf, keys[k], arrlenu(J->buf)) == 0)
                    which = k;
        } else if (cuset__json_string(J, 0)) return -1;
        cuset__json_ws(J);
        if (J->i >= J->n || J->s[J->i] != ':') return cuset__json_expected(J, "':' after the member name");
        J->i++;
        cuset__json_ws(J);
        if (which < 0) {
            if (cuset__json_value(J, depth)) return -1;
        } else {
            if (have[which])
                return cuset__json_fail(J, kat, "duplicate \"%s\" member (the first is at column %zu); a sample has"
                                        " exactly one", keys[which], key_at[which] - J->line_start + 1);
            if (J->i >= J->n || J->s[J->i] != '"') {
                unsigned char c = J->i < J->n ? J->s[J->i] : 0;
                size_t len;
                int lit = J->i < J->n && cuset__json_is_word(c) ? cuset__json_literal(J, &len) : 0;
                const char *type = c == '{' ? "an object" : c == '[' ? "an array"
                                 : c == '-' || (c >= '0' && c <= '9') ? "a number"
                                 : lit == 1 ? "true" : lit == 2 ? "false" : lit == 3 ? "null" : NULL;
                if (type)
                    return cuset__json_fail(J, J->i, "the \"%s\" member must be a string, found %s", keys[which], type);
                if (cuset__json_value(J, depth)) return -1; // says what is wrong with it
                return cuset__json_fail(J, kat, "the \"%s\" member must be a string", keys[which]); // not reached
            }
            arrsetlen(J->buf, 0);
            if (cuset__json_string(J, 1)) return -1;
            size_t len = arrlenu(J->buf);
            char *copy = (char *)malloc(len + 1);
            if (!copy) return cuset__json_fail(J, kat, "out of memory for a string of %zu bytes", len);
            if (len) memcpy(copy, J->buf, len);
            copy[len] = 0;
            if (which == 0) { top->prompt = copy; top->prompt_len = len; }
            else { top->completion = copy; top->completion_len = len; }
            have[which] = 1; key_at[which] = kat;
        }
        cuset__json_ws(J);
        if (J->i < J->n && J->s[J->i] == ',') {
            J->i++;
            cuset__json_ws(J);
            if (J->i < J->n && J->s[J->i] == '}')
                return cuset__json_fail(J, J->i, "expected a member name after ',', found '}' (JSON does not allow"
                                        " a trailing comma)");
            continue;
        }
        if (J->i < J->n && J->s[J->i] == '}') { J->i++; break; }
        return cuset__json_expected(J, "',' or '}' after the member");
    }
done:
    J->open = save_open; J->open_kind = save_kind;
    if (top && !(have[0] && (have[1] || !keys[1]))) {
        if (!keys[1])
            return cuset__json_fail(J, open, "the object has no \"%s\" member (a string)", keys[0]);
        if (!have[0] && !have[1])
            return cuset__json_fail(J, open, "the object has neither a \"%s\" nor a \"%s\" member (every sample"
                                    " needs both, as strings)", keys[0], keys[1]);
        return cuset__json_fail(J, open, "the object has no \"%s\" member (every sample needs \"%s\" and \"%s\","
                                " as strings)", keys[have[0]], keys[0], keys[1]);
    }
    return 0;
}

int cuset_jsonl_parse_keys(const char *buf, size_t len, const char *name, const char *prompt_key,
                           const char *completion_key, CusetTextSample **out, char *err, size_t errlen) {
    const char *const keys[2] = {prompt_key, completion_key};
    char members[300]; // what a line holds, for the messages
    snprintf(members, sizeof members, completion_key ? "string members \"%s\" and \"%s\"" : "a string member \"%s\"",
             prompt_key, completion_key);
    cuset__json J = {0};
    J.s = (const unsigned char *)buf; J.n = buf ? len : 0;
    J.line = 1; J.name = name ? name : "<input>"; J.err = err; J.errlen = errlen;
    size_t before = arrlenu(*out);
    if (J.n >= 3 && memcmp(J.s, "\xEF\xBB\xBF", 3) == 0) J.i = 3; // byte order mark
    for (;;) {
        cuset__json_ws(&J);
        if (J.i >= J.n) break;
        if (J.s[J.i] == '\n') { J.i++; J.line++; J.line_start = J.i; continue; }
        if (J.s[J.i] != '{') {
            char b[32];
            cuset__json_fail(&J, J.i, "expected '{' opening a sample, found %s (every non-blank line must be one"
                             " JSON object with %s)", cuset__json_found(&J, J.i, b, sizeof b), members);
            goto fail;
        }
        CusetTextSample smp = {0};
        int bad = cuset__json_object(&J, 1, &smp, keys);
        if (!bad) {
            cuset__json_ws(&J);
            if (J.i < J.n && J.s[J.i] != '\n') {
                char b[32];
                bad = cuset__json_fail(&J, J.i, "unexpected %s after the sample object (one JSON object per line;"
                                       " remove the trailing text)", cuset__json_found(&J, J.i, b, sizeof b));
            } else if (arrlenu(*out) - before >= INT_MAX)
                bad = cuset__json_fail(&J, J.i, "more than %d samples", INT_MAX);
        }
        if (bad) { free(smp.prompt); free(smp.completion); goto fail; }
        arrput(*out, smp);
    }
    if (arrlenu(*out) == before) {
        cuset__err(err, errlen, "%s: no samples: the input is empty or has only blank lines (expected one JSON"
                   " object with %s per line)", J.name, members);
        goto fail;
    }
    arrfree(J.buf);
    return 0;
fail:
    for (size_t k = before; k < arrlenu(*out); k++) { free((*out)[k].prompt); free((*out)[k].completion); }
    if (*out) arrsetlen(*out, before);
    arrfree(J.buf);
    return -1;
}

int cuset_jsonl_parse(const char *buf, size_t len, const char *name, CusetTextSample **out, char *err, size_t errlen) {
    return cuset_jsonl_parse_keys(buf, len, name, "prompt", "completion", out, err, errlen);
}

int cuset_jsonl_read(const char *path, CusetTextSample **out, char *err, size_t errlen) {
    unsigned char *buf;
    size_t len;
    if (cuset_read_file(path, &buf, &len, err, errlen)) return -1;
    int rc = cuset_jsonl_parse((const char *)buf, len, path, out, err, errlen);
    free(buf);
    return rc;
}

// ---- .cu directories -------------------------------------------------------------------------

static int cuset__cu_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// dir + "/" + rel (rel "" gives dir), malloc'd.
static char *cuset__cu_join(const char *dir, const char *rel) {
    size_t a = strlen(dir), b = strlen(rel);
    char *p = (char *)malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    if (b) { p[a] = '/'; memcpy(p + a + 1, rel, b + 1); } else p[a] = 0;
    return p;
}

int cuset_cu_dir_read(const char *dir, CusetTextSample **out, char *err, size_t errlen) {
    char **files = NULL, **todo = NULL; // stb_ds arrays of malloc'd paths relative to dir
    char *full = NULL, *child = NULL, *rel = NULL, *root = NULL;
    size_t before = arrlenu(*out);
    DIR *dp = NULL;
    int rc = -1;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;   // "data/" -> "data", for tidy messages
    root = (char *)malloc(n + 1);
    char *empty = (char *)malloc(1);
    if (!root || !empty) { free(root); free(empty); return cuset__err(err, errlen, "%s: out of memory", dir); }
    memcpy(root, dir, n); root[n] = 0; empty[0] = 0;
    arrput(todo, empty);
    while (arrlen(todo) > 0) {
        rel = arrpop(todo);
        if (!(full = cuset__cu_join(root, rel))) { cuset__err(err, errlen, "%s: out of memory", root); goto done; }
        if (!(dp = opendir(full))) {
            cuset__err(err, errlen, "%s: cannot open directory: %s", full, strerror(errno));
            goto done;
        }
        struct dirent *e;
        while ((e = readdir(dp)) != NULL) {
            const char *nm = e->d_name;
            size_t len = strlen(nm);
            if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0) continue;
            size_t rl = strlen(rel);
            char *crel = (char *)malloc(rl + len + 2);
            if (!crel) { cuset__err(err, errlen, "%s: out of memory", full); goto done; }
            if (rl) { memcpy(crel, rel, rl); crel[rl] = '/'; memcpy(crel + rl + 1, nm, len + 1); }
            else memcpy(crel, nm, len + 1);
            if (!(child = cuset__cu_join(root, crel))) { free(crel); cuset__err(err, errlen, "%s: out of memory", full); goto done; }
            struct stat st;
            int is_cu = len > 3 && strcmp(nm + len - 3, ".cu") == 0;
            if (lstat(child, &st) != 0) {
                cuset__err(err, errlen, "%s: cannot stat: %s", child, strerror(errno));
                free(crel); goto done;
            }
            if (S_ISDIR(st.st_mode)) { arrput(todo, crel); crel = NULL; }
            else if (is_cu && S_ISLNK(st.st_mode) && stat(child, &st) != 0) {
                cuset__err(err, errlen, "%s: cannot follow the symbolic link: %s", child, strerror(errno));
                free(crel); goto done;
            }
            if (crel && is_cu && S_ISREG(st.st_mode)) { arrput(files, crel); crel = NULL; }
            free(crel);
            free(child); child = NULL;
        }
        closedir(dp); dp = NULL;
        free(full); full = NULL;
        free(rel); rel = NULL;
    }
    if (arrlen(files) == 0) {
        cuset__err(err, errlen, "%s: no *.cu file in this directory or below it (symbolic links to directories"
                   " are not followed)", root);
        goto done;
    }
    qsort(files, arrlenu(files), sizeof *files, cuset__cu_cmp);
    for (size_t k = 0; k < arrlenu(files); k++) {
        unsigned char *buf;
        size_t len;
        if (!(full = cuset__cu_join(root, files[k]))) { cuset__err(err, errlen, "%s: out of memory", root); goto done; }
        if (cuset_read_file(full, &buf, &len, err, errlen)) goto done;
        CusetTextSample s = {0};
        s.prompt = (char *)calloc(1, 1);
        if (!s.prompt) { free(buf); cuset__err(err, errlen, "%s: out of memory", full); goto done; }
        s.completion = (char *)buf; s.completion_len = len; // slurp left a NUL after the bytes
        arrput(*out, s);
        free(full); full = NULL;
    }
    rc = 0;
done:
    if (dp) closedir(dp);
    free(full); free(child); free(rel); free(root);
    for (size_t k = 0; k < arrlenu(todo); k++) free(todo[k]);
    for (size_t k = 0; k < arrlenu(files); k++) free(files[k]);
    arrfree(todo); arrfree(files);
    if (rc != 0) {
        for (size_t k = before; k < arrlenu(*out); k++) { free((*out)[k].prompt); free((*out)[k].completion); }
        if (*out) arrsetlen(*out, before);
    }
    return rc;
}

// ---- text -> tokens ---------------------------------------------------------------------------

void cuset_sample_from_text(CusetSample *out, const CusetTokenizer *tk, const char *prompt, size_t np,
                            const char *completion, size_t nc) {
    int *ids = NULL; // stb_ds scratch
    arrput(ids, CUSET_TOK_PROMPT);
    cuset_tok_encode(tk, prompt, np, &ids);
    arrput(ids, CUSET_TOK_TARGET);
    out->np = (int)arrlen(ids);
    out->prompt = (int *)CUSET_CALLOC(out->np, sizeof(int));
    memcpy(out->prompt, ids, (size_t)out->np * sizeof(int));

    arrsetlen(ids, 0);
    cuset_tok_encode(tk, completion, nc, &ids);
    arrput(ids, CUSET_TOK_EOS);
    out->nt = (int)arrlen(ids);
    out->target = (int *)CUSET_CALLOC(out->nt, sizeof(int));
    memcpy(out->target, ids, (size_t)out->nt * sizeof(int));
    out->target_cuda = (unsigned char *)CUSET_CALLOC(out->nt, 1);

    // per-byte flags of the completion, then a token is flagged when any of its bytes is
    CusetSpan *spans = NULL;
    size_t nspans = cuset_annotate(completion, nc, &spans);
    unsigned char *byte_flag = (unsigned char *)CUSET_CALLOC(nc, 1);
    cuset_span_flags(spans, nspans, byte_flag, nc);
    size_t pos = 0;
    for (int k = 0; k + 1 < out->nt; k++) { // the last is EOS: 0 bytes, flag 0
        size_t len;
        cuset_tok_bytes(tk, out->target[k], &len);
        unsigned char f = 0;
        for (size_t b = pos; b < pos + len && b < nc && !f; b++) f = byte_flag[b];
        out->target_cuda[k] = f;
        pos += len;
    }
    free(byte_flag);
    arrfree(spans);
    arrfree(ids);
}

void cuset_dataset_from_text(CusetDataset *d, const CusetTokenizer *tk, const CusetTextSample *s, size_t n) {
    if (n > INT_MAX) CUSET_DIE("cuset_dataset_from_text: %zu samples, at most %d", n, INT_MAX);
    memset(d, 0, sizeof *d);
    d->n = (int)n;
    d->samples = (CusetSample *)CUSET_CALLOC(n, sizeof(CusetSample));
    // samples differ in length by 100x: hand them out one by one
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (long i = 0; i < (long)n; i++)
        cuset_sample_from_text(&d->samples[i], tk, s[i].prompt, s[i].prompt_len, s[i].completion, s[i].completion_len);
    d->vocab_size = tk->vocab_size;
    d->fingerprint = cuset_dataset_fingerprint(d);
}

static uint64_t cuset__fnv1a(const unsigned char *b, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

uint64_t cuset_tok_fingerprint(const CusetTokenizer *tk) {
    unsigned char *b = NULL;
    size_t n = cuset_tok_save(tk, &b);
    uint64_t h = cuset__fnv1a(b, n);
    arrfree(b);
    return h;
}

// ---- token data files -------------------------------------------------------------------------

// Output goes through a small buffer to a FILE or to an stb_ds array.
typedef struct {
    FILE *f;              // write here when set,
    unsigned char **arr;  // else append to this stb_ds array
    int failed;           // a write to f failed
    size_t used;
    unsigned char buf[1 << 14];
} cuset__data_sink;

static void cuset__data_flush(cuset__data_sink *w) {
    if (w->used == 0) return;
    if (w->f) { if (!w->failed && fwrite(w->buf, 1, w->used, w->f) != w->used) w->failed = 1; }
    else memcpy(arraddnptr(*w->arr, w->used), w->buf, w->used);
    w->used = 0;
}

static void cuset__data_put(cuset__data_sink *w, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    while (n) {
        if (w->used == sizeof w->buf) cuset__data_flush(w);
        size_t k = sizeof w->buf - w->used < n ? sizeof w->buf - w->used : n;
        memcpy(w->buf + w->used, b, k);
        w->used += k; b += k; n -= k;
    }
}

static void cuset__data_put_u32(cuset__data_sink *w, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    cuset__data_put(w, b, 4);
}

static void cuset__data_put_u64(cuset__data_sink *w, uint64_t v) {
    cuset__data_put_u32(w, (uint32_t)v);
    cuset__data_put_u32(w, (uint32_t)(v >> 32));
}

static uint32_t cuset__data_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t cuset__data_u64(const unsigned char *p) { return cuset__data_u32(p) | (uint64_t)cuset__data_u32(p + 4) << 32; }

static const char *cuset__data_special_name(int id) {
    return id == CUSET_TOK_PROMPT ? "CUSET_TOK_PROMPT" : id == CUSET_TOK_TARGET ? "CUSET_TOK_TARGET" : "CUSET_TOK_EOS";
}

// Checks every sample of d against the layout of cuset_sample_from_text and the
// vocabulary size V. ids_at and flags_at are the file offsets of the first token id and
// the first flag when d was read from a file (messages then name the byte), 0 otherwise.
static int cuset__data_check(const CusetDataset *d, int V, const char *name, size_t ids_at, size_t flags_at,
                             char *err, size_t errlen) {
    size_t ids = 0, flags = 0; // tokens and flags before this sample
    char at[48] = "";
    for (int i = 0; i < d->n; i++) {
        const CusetSample *s = &d->samples[i];
        if (s->np < 2)
            return cuset__err(err, errlen, "%s: sample %d: %d prompt tokens; a prompt holds at least CUSET_TOK_PROMPT"
                              " and CUSET_TOK_TARGET", name, i, s->np);
        if (s->nt < 1)
            return cuset__err(err, errlen, "%s: sample %d: %d target tokens; a target holds at least CUSET_TOK_EOS",
                              name, i, s->nt);
        for (int part = 0; part < 2; part++) {
            const int *t = part ? s->target : s->prompt;
            int len = part ? s->nt : s->np;
            for (int k = 0; k < len; k++) {
                int id = t[k];
                // the special id expected here, or -1 for an ordinary token
                int want = part == 0 && k == 0 ? CUSET_TOK_PROMPT : part == 0 && k == len - 1 ? CUSET_TOK_TARGET
                         : part == 1 && k == len - 1 ? CUSET_TOK_EOS : -1;
                int special = id >= CUSET_TOK_NBYTES && id < CUSET_TOK_FIRST_MERGE;
                if (id >= 0 && id < V && (want < 0 ? !special : id == want)) continue;
                if (ids_at) snprintf(at, sizeof at, " (byte %zu)", ids_at + 4 * (ids + (size_t)(part ? s->np : 0) + (size_t)k));
                if (id < 0 || id >= V)
                    return cuset__err(err, errlen, "%s: sample %d, %s token %d%s: id %d is outside the vocabulary"
                                      " [0, %d)", name, i, part ? "target" : "prompt", k, at, id, V);
                if (want >= 0)
                    return cuset__err(err, errlen, "%s: sample %d, %s token %d%s: id %d where %s (%d) belongs (a %s %s"
                                      " with it)", name, i, part ? "target" : "prompt", k, at, id,
                                      cuset__data_special_name(want), want, part ? "target" : "prompt",
                                      want == CUSET_TOK_PROMPT ? "starts" : "ends");
                return cuset__err(err, errlen, "%s: sample %d, %s token %d%s: special id %d (%s) inside the %s",
                                  name, i, part ? "target" : "prompt", k, at, id, cuset__data_special_name(id),
                                  part ? "target" : "prompt");
            }
        }
        for (int k = 0; k < s->nt; k++) {
            if (s->target_cuda[k] <= 1) continue;
            if (flags_at) snprintf(at, sizeof at, " (byte %zu)", flags_at + flags + (size_t)k);
            return cuset__err(err, errlen, "%s: sample %d, CUDA flag of target token %d%s is %u, not 0 or 1",
                              name, i, k, at, s->target_cuda[k]);
        }
        ids += (size_t)s->np + (size_t)s->nt;
        flags += (size_t)s->nt;
    }
    return 0;
}

// What save and serialize refuse to write.
static int cuset__data_check_save(const CusetDataset *d, const CusetTokenizer *tk, const char *name, char *err,
                                  size_t errlen) {
    if (d->n < 1) return cuset__err(err, errlen, "%s: the dataset has no samples", name);
    if (d->vocab_size != tk->vocab_size)
        return cuset__err(err, errlen, "%s: the dataset's vocabulary size %d differs from the tokenizer's %d (save"
                          " a dataset with the tokenizer that made it)", name, d->vocab_size, tk->vocab_size);
    return cuset__data_check(d, d->vocab_size, name, 0, 0, err, errlen);
}

static void cuset__data_write(cuset__data_sink *w, const CusetDataset *d, const CusetTokenizer *tk, uint64_t stamp) {
    uint64_t P = 0, Q = 0;
    for (int i = 0; i < d->n; i++) { P += (uint64_t)d->samples[i].np; Q += (uint64_t)d->samples[i].nt; }
    unsigned char *tb = NULL; // stb_ds
    size_t K = cuset_tok_save(tk, &tb);
    cuset__data_put(w, CUSET_DATA_MAGIC, 8);
    cuset__data_put_u32(w, CUSET_DATA_VERSION);
    cuset__data_put_u32(w, CUSET_DATA_HEADER);
    cuset__data_put_u32(w, (uint32_t)d->vocab_size);
    cuset__data_put_u32(w, (uint32_t)d->n);
    cuset__data_put_u64(w, P);
    cuset__data_put_u64(w, Q);
    cuset__data_put_u64(w, stamp);
    cuset__data_put_u64(w, K);
    cuset__data_put_u64(w, cuset_dataset_fingerprint(d));
    cuset__data_put_u64(w, cuset__fnv1a(tb, K));
    cuset__data_put(w, tb, K);
    arrfree(tb);
    for (int i = 0; i < d->n; i++) {
        cuset__data_put_u32(w, (uint32_t)d->samples[i].np);
        cuset__data_put_u32(w, (uint32_t)d->samples[i].nt);
    }
    for (int i = 0; i < d->n; i++) {
        const CusetSample *s = &d->samples[i];
        for (int k = 0; k < s->np; k++) cuset__data_put_u32(w, (uint32_t)s->prompt[k]);
        for (int k = 0; k < s->nt; k++) cuset__data_put_u32(w, (uint32_t)s->target[k]);
    }
    for (int i = 0; i < d->n; i++) cuset__data_put(w, d->samples[i].target_cuda, (size_t)d->samples[i].nt);
    cuset__data_flush(w);
}

int cuset_data_serialize(const CusetDataset *d, const CusetTokenizer *tk, uint64_t source_stamp,
                         unsigned char **buf, char *err, size_t errlen) {
    if (cuset__data_check_save(d, tk, "dataset", err, errlen)) return -1;
    cuset__data_sink *w = (cuset__data_sink *)calloc(1, sizeof *w);
    if (!w) return cuset__err(err, errlen, "dataset: out of memory");
    w->arr = buf;
    cuset__data_write(w, d, tk, source_stamp);
    free(w);
    return 0;
}

int cuset_data_save(const char *path, const CusetDataset *d, const CusetTokenizer *tk, uint64_t source_stamp,
                    char *err, size_t errlen) {
    if (cuset__data_check_save(d, tk, path, err, errlen)) return -1;
    size_t n = strlen(path) + 32;
    char *tmp = (char *)malloc(n);
    cuset__data_sink *w = (cuset__data_sink *)calloc(1, sizeof *w);
    if (!tmp || !w) { free(tmp); free(w); return cuset__err(err, errlen, "%s: out of memory", path); }
    snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        cuset__err(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp); free(w);
        return -1;
    }
    w->f = f;
    cuset__data_write(w, d, tk, source_stamp);
    int ok = !w->failed && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) != 0) { ok = 0; e = errno; }
    if (!ok) {
        remove(tmp);
        cuset__err(err, errlen, "%s: write failed: %s (disk full? directory writable?)", path, strerror(e ? e : EIO));
    }
    free(tmp); free(w);
    return ok ? 0 : -1;
}

int cuset_data_parse(const unsigned char *buf, size_t len, const char *name, CusetDataset *d, CusetTokenizer *tk,
                     uint64_t *source_stamp, char *err, size_t errlen) {
    size_t H = 64; // version 1's header, until the version is known
    CusetDataset nd = {0};
    CusetTokenizer ntk = {0};
    char why[256];
    const unsigned char *p, *fl; // ids and flags cursors (declared before the gotos, for C++)
    uint64_t got;
    if (!name) name = "<data>";
    if (!buf) len = 0;
    if (len < H)
        return cuset__err(err, errlen, "%s: %zu bytes, shorter than the %zu-byte header (truncated, or not a cuset"
                          " token data file)", name, len, H);
    if (memcmp(buf, CUSET_DATA_MAGIC, 8) != 0)
        return cuset__err(err, errlen, "%s: bad magic at byte 0 (expected \"%s\"): not a cuset token data file",
                          name, CUSET_DATA_MAGIC);
    uint32_t version = cuset__data_u32(buf + 8), hsize = cuset__data_u32(buf + 12);
    if (version != 1 && version != CUSET_DATA_VERSION)
        return cuset__err(err, errlen, "%s: version %u at byte 8; this reader knows versions 1 and %d (rebuild the"
                          " file from its source)", name, version, CUSET_DATA_VERSION);
    if (version == CUSET_DATA_VERSION) H = CUSET_DATA_HEADER;
    if (hsize != H)
        return cuset__err(err, errlen, "%s: header size %u at byte 12; version %u has a %zu-byte header", name, hsize,
                          version, H);
    if (len < H)
        return cuset__err(err, errlen, "%s: %zu bytes, shorter than the %zu-byte header (truncated)", name, len, H);
    uint32_t V = cuset__data_u32(buf + 16), N = cuset__data_u32(buf + 20);
    uint64_t P = cuset__data_u64(buf + 24), Q = cuset__data_u64(buf + 32), stamp = cuset__data_u64(buf + 40);
    uint64_t K = cuset__data_u64(buf + 48), fp = cuset__data_u64(buf + 56);
    if (V < CUSET_TOK_FIRST_MERGE || V > CUSET_TOK_MAX_VOCAB)
        return cuset__err(err, errlen, "%s: vocabulary size %u at byte 16 is outside %d..%d", name, V,
                          CUSET_TOK_FIRST_MERGE, CUSET_TOK_MAX_VOCAB);
    if (N < 1 || N > INT_MAX)
        return cuset__err(err, errlen, "%s: %u samples at byte 20; a data file holds 1..%d", name, N, INT_MAX);
    // the exact length: H + K + 8N + 4(P+Q) + Q, without overflow
    uint64_t need = H, t;
    int ovf = __builtin_add_overflow(need, K, &need) || __builtin_add_overflow(need, 8 * (uint64_t)N, &need)
           || __builtin_add_overflow(P, Q, &t) || __builtin_mul_overflow(t, 4, &t) || __builtin_add_overflow(need, t, &need)
           || __builtin_add_overflow(need, Q, &need);
    if (ovf)
        return cuset__err(err, errlen, "%s: the header's counts (bytes 20..55: %u samples, %llu prompt and %llu target"
                          " tokens, %llu tokenizer bytes) imply a file larger than 2^64 bytes: corrupt header", name, N,
                          (unsigned long long)P, (unsigned long long)Q, (unsigned long long)K);
    if (need != len)
        return cuset__err(err, errlen, "%s: %s: the file has %zu bytes, its header implies %llu (%zu-byte header +"
                          " %llu tokenizer bytes + 8 x %u samples + 4 x (%llu prompt + %llu target tokens) + %llu flags)",
                          name, len < need ? "truncated" : "trailing bytes", len, (unsigned long long)need, H,
                          (unsigned long long)K, N, (unsigned long long)P, (unsigned long long)Q, (unsigned long long)Q);
    if (cuset_tok_load(&ntk, buf + H, (size_t)K, why, sizeof why) != 0)
        return cuset__err(err, errlen, "%s: the tokenizer at bytes %zu..%llu is invalid (its byte numbers count from"
                          " byte %zu): %s", name, H, (unsigned long long)(H + K - 1), H, why);
    size_t L = H + (size_t)K, ids_at = L + 8 * (size_t)N, flags_at = ids_at + 4 * (size_t)(P + Q);
    uint64_t sp = 0, sq = 0, tok_fp = cuset__fnv1a(buf + H, (size_t)K);
    if (version >= 2 && tok_fp != cuset__data_u64(buf + 64)) {
        cuset__err(err, errlen, "%s: the tokenizer fingerprint 0x%016llx at byte 64 does not match its bytes %zu..%llu"
                   " (0x%016llx): the tokenizer is corrupt (rebuild the file from its source)", name,
                   (unsigned long long)cuset__data_u64(buf + 64), H, (unsigned long long)(H + K - 1),
                   (unsigned long long)tok_fp);
        goto fail;
    }
    if ((uint32_t)ntk.vocab_size != V) {
        cuset__err(err, errlen, "%s: vocabulary size %u at byte 16 differs from the tokenizer's %d", name, V, ntk.vocab_size);
        goto fail;
    }
    for (uint32_t i = 0; i < N; i++) {
        size_t at = L + 8 * (size_t)i;
        uint32_t np = cuset__data_u32(buf + at), nt = cuset__data_u32(buf + at + 4);
        if (np < 2 || np > INT_MAX) {
            cuset__err(err, errlen, "%s: sample %u: prompt length %u at byte %zu; a prompt holds 2..%d tokens (at least"
                       " CUSET_TOK_PROMPT and CUSET_TOK_TARGET)", name, i, np, at, INT_MAX);
            goto fail;
        }
        if (nt < 1 || nt > INT_MAX) {
            cuset__err(err, errlen, "%s: sample %u: target length %u at byte %zu; a target holds 1..%d tokens (at least"
                       " CUSET_TOK_EOS)", name, i, nt, at + 4, INT_MAX);
            goto fail;
        }
        sp += np; sq += nt;
        if (sp > P || sq > Q) {
            cuset__err(err, errlen, "%s: the %s lengths of samples 0..%u (through byte %zu) add up to more than the %llu"
                       " %s tokens at byte %d", name, sp > P ? "prompt" : "target", i, at + 7,
                       (unsigned long long)(sp > P ? P : Q), sp > P ? "prompt" : "target", sp > P ? 24 : 32);
            goto fail;
        }
    }
    if (sp != P || sq != Q) {
        cuset__err(err, errlen, "%s: the %s lengths add up to %llu, but byte %d says %llu", name,
                   sp != P ? "prompt" : "target", (unsigned long long)(sp != P ? sp : sq), sp != P ? 24 : 32,
                   (unsigned long long)(sp != P ? P : Q));
        goto fail;
    }
    nd.samples = (CusetSample *)calloc(N, sizeof(CusetSample));
    if (!nd.samples) { cuset__err(err, errlen, "%s: out of memory for %u samples", name, N); goto fail; }
    nd.n = (int)N; nd.vocab_size = (int)V;
    p = buf + ids_at; fl = buf + flags_at;
    for (uint32_t i = 0; i < N; i++) {
        CusetSample *s = &nd.samples[i];
        s->np = (int)cuset__data_u32(buf + L + 8 * (size_t)i);
        s->nt = (int)cuset__data_u32(buf + L + 8 * (size_t)i + 4);
        s->prompt = (int *)malloc((size_t)s->np * sizeof(int));
        s->target = (int *)malloc((size_t)s->nt * sizeof(int));
        s->target_cuda = (unsigned char *)malloc((size_t)s->nt);
        if (!s->prompt || !s->target || !s->target_cuda) {
            cuset__err(err, errlen, "%s: out of memory at sample %u", name, i);
            goto fail;
        }
        for (int k = 0; k < s->np; k++, p += 4) s->prompt[k] = (int)(int32_t)cuset__data_u32(p);
        for (int k = 0; k < s->nt; k++, p += 4) s->target[k] = (int)(int32_t)cuset__data_u32(p);
        memcpy(s->target_cuda, fl, (size_t)s->nt);
        fl += s->nt;
    }
    if (cuset__data_check(&nd, (int)V, name, ids_at, flags_at, err, errlen)) goto fail;
    got = cuset_dataset_fingerprint(&nd);
    if (got != fp) {
        cuset__err(err, errlen, "%s: the dataset fingerprint 0x%016llx at byte 56 does not match the samples'"
                   " (0x%016llx): the token data is corrupt (rebuild the file from its source)", name,
                   (unsigned long long)fp, (unsigned long long)got);
        goto fail;
    }
    nd.fingerprint = fp;
    *d = nd;
    cuset_tok_free(tk);
    *tk = ntk;
    if (source_stamp) *source_stamp = stamp;
    return 0;
fail:
    cuset_dataset_free(&nd);
    cuset_tok_free(&ntk);
    return -1;
}

int cuset_data_load(const char *path, CusetDataset *d, CusetTokenizer *tk, uint64_t *source_stamp,
                    char *err, size_t errlen) {
    unsigned char *buf;
    size_t len;
    if (cuset_read_file(path, &buf, &len, err, errlen)) return -1;
    int rc = cuset_data_parse(buf, len, path, d, tk, source_stamp, err, errlen);
    free(buf);
    return rc;
}

// ---- opening training data, with a cache beside the source ----------------------------------

// The cache key: the text, and the tokenizer it was (or would be) tokenized with.
static uint64_t cuset__data_stamp(const CusetTextSample *s, size_t n, const CusetTokenizer *fixed, int vocab_size) {
    uint64_t h = 1469598103934665603ull;
#define CUSET__MIX(byte) (h = (h ^ (uint64_t)(byte)) * 1099511628211ull)
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 8; k++) CUSET__MIX(s[i].prompt_len >> (8 * k) & 255);
        for (size_t k = 0; k < s[i].prompt_len; k++) CUSET__MIX((unsigned char)s[i].prompt[k]);
        for (int k = 0; k < 8; k++) CUSET__MIX(s[i].completion_len >> (8 * k) & 255);
        for (size_t k = 0; k < s[i].completion_len; k++) CUSET__MIX((unsigned char)s[i].completion[k]);
    }
#undef CUSET__MIX
    return h ^ (fixed ? cuset_tok_fingerprint(fixed) : (uint64_t)vocab_size * 0x9E3779B97F4A7C15ull);
}

static int cuset__has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

int cuset_data_open(const char *src, const CusetTokenizer *fixed, int vocab_size, CusetDataset *d, CusetTokenizer *tk,
                    char *note, size_t notelen, char *err, size_t errlen) {
    struct stat st;
    if (stat(src, &st) != 0) return cuset__err(err, errlen, "%s: cannot open: %s", src, strerror(errno));
    uint64_t stamp;
    if (cuset__has_suffix(src, ".tok")) { // already tokenized
        if (cuset_data_load(src, d, tk, &stamp, err, errlen) != 0) return -1;
        if (fixed && cuset_tok_fingerprint(fixed) != cuset_tok_fingerprint(tk)) {
            cuset_dataset_free(d);
            return cuset__err(err, errlen, "%s was tokenized with another tokenizer than the model's; give its "
                                           "source (.jsonl or directory) instead, to tokenize it with the model's", src);
        }
        snprintf(note, notelen, "data: %d samples from %s", d->n, src);
        return 0;
    }
    CusetTextSample *texts = NULL;
    int rc;
    if (S_ISDIR(st.st_mode)) rc = cuset_cu_dir_read(src, &texts, err, errlen);
    else if (cuset__has_suffix(src, ".jsonl")) rc = cuset_jsonl_read(src, &texts, err, errlen);
    else return cuset__err(err, errlen, "%s: unknown kind of data: give a .jsonl file of {\"prompt\": ..., "
                                        "\"completion\": ...} lines, a directory of .cu files, or a .tok file", src);
    if (rc != 0) return -1;
    size_t n = arrlenu(texts);
    stamp = cuset__data_stamp(texts, n, fixed, vocab_size);
    char cache[4096];
    snprintf(cache, sizeof cache, "%s", src);
    for (size_t k = strlen(cache); k > 1 && cache[k - 1] == '/'; k--) cache[k - 1] = '\0';
    strncat(cache, ".tok", sizeof cache - strlen(cache) - 1);

    CusetTokenizer cached = {0};
    uint64_t cached_stamp = 0;
    char ignored[256];
    cuset_tok_init(&cached);
    if (cuset_data_load(cache, d, &cached, &cached_stamp, ignored, sizeof ignored) == 0) {
        // made from this text with this tokenizer; for a checkpoint's, also a cache a new model's
        // run made from this text whose tokenizer is the same (its stamp has the vocabulary size
        // asked for: the size reached, or, where training ran out of pairs first, as here)
        int same_tokenizer = fixed && cuset_tok_fingerprint(&cached) == cuset_tok_fingerprint(fixed);
        if (cached_stamp == stamp ||
            (same_tokenizer && (cached_stamp == cuset__data_stamp(texts, n, NULL, cached.vocab_size) ||
                                cached_stamp == cuset__data_stamp(texts, n, NULL, vocab_size)))) {
            cuset_tok_free(tk);
            *tk = cached;
            cuset_text_samples_free(texts);
            snprintf(note, notelen, "data: %d samples from %s (tokenized cache %s)", d->n, src, cache);
            return 0;
        }
        cuset_dataset_free(d);
    }
    cuset_tok_free(&cached);

    const char *how = "tokenized with the model's tokenizer";
    if (fixed) { // copy the checkpoint's tokenizer through its serial form
        unsigned char *bytes = NULL;
        size_t len = cuset_tok_save(fixed, &bytes);
        rc = cuset_tok_load(tk, bytes, len, err, errlen);
        arrfree(bytes);
        if (rc != 0) { cuset_text_samples_free(texts); return -1; }
    } else { // train one on every prompt and completion
        const char **p = (const char **)CUSET_CALLOC(2 * n, sizeof *p);
        size_t *lens = (size_t *)CUSET_CALLOC(2 * n, sizeof *lens);
        for (size_t i = 0; i < n; i++) {
            p[2 * i] = texts[i].prompt; lens[2 * i] = texts[i].prompt_len;
            p[2 * i + 1] = texts[i].completion; lens[2 * i + 1] = texts[i].completion_len;
        }
        rc = cuset_tok_train(tk, p, lens, 2 * n, vocab_size, 0);
        free(p); free(lens);
        if (rc < 0) {
            cuset_text_samples_free(texts);
            return cuset__err(err, errlen, "vocabulary size %d: the tokenizer needs %d to %d ids", vocab_size,
                              CUSET_TOK_FIRST_MERGE, CUSET_TOK_MAX_VOCAB);
        }
        how = "tokenizer trained on it";
    }
    cuset_dataset_from_text(d, tk, texts, n);
    cuset_text_samples_free(texts);
    char why[512];
    int saved = cuset_data_save(cache, d, tk, stamp, why, sizeof why) == 0;
    snprintf(note, notelen, "data: %d samples from %s, %s (%d ids); %s%s", d->n, src, how, cuset_tok_vocab_size(tk),
             saved ? "cached in " : "not cached: ", saved ? cache : why);
    return 0;
}

// ---- JSON members of one line, JSON strings out --------------------------------------------

int cuset_json_member(const char *line, size_t len, const char *name, size_t line_no, const char *key, char *type,
                      char **str, size_t *str_len, double *num, char *err, size_t errlen) {
    cuset__json J = {0};
    J.s = (const unsigned char *)line; J.n = len;
    J.line = line_no; J.name = name ? name : "<input>"; J.err = err; J.errlen = errlen;
    int found = 0;
    size_t klen = strlen(key);
    if (str) *str = NULL;
    cuset__json_ws(&J);
    if (J.i >= J.n || J.s[J.i] != '{') { cuset__json_expected(&J, "'{' opening an object"); goto fail; }
    J.open = J.i++; J.open_kind = '{';
    cuset__json_ws(&J);
    if (J.i < J.n && J.s[J.i] == '}') { J.i++; goto done; }
    for (;;) {
        cuset__json_ws(&J);
        if (J.i >= J.n || J.s[J.i] != '"') { cuset__json_expected(&J, "a member name (a string in double quotes)"); goto fail; }
        arrsetlen(J.buf, 0);
        if (cuset__json_string(&J, 1)) goto fail;
        int match = !found && arrlenu(J.buf) == klen && memcmp(J.buf, key, klen) == 0;
        cuset__json_ws(&J);
        if (J.i >= J.n || J.s[J.i] != ':') { cuset__json_expected(&J, "':' after the member name"); goto fail; }
        J.i++;
        cuset__json_ws(&J);
        size_t at = J.i;
        unsigned char c = at < J.n ? J.s[at] : 0;
        if (match && c == '"') {
            arrsetlen(J.buf, 0);
            if (cuset__json_string(&J, 1)) goto fail;
            if (str) {
                size_t n = arrlenu(J.buf);
                *str = (char *)CUSET_CALLOC(n + 1, 1);
                if (n) memcpy(*str, J.buf, n);
                if (str_len) *str_len = n;
            }
        } else if (cuset__json_value(&J, 1)) goto fail;
        if (match) {
            found = 1;
            char t = c == '"' ? 's' : c == '{' ? 'o' : c == '[' ? 'a' : c == 't' ? 't' : c == 'f' ? 'f' : c == 'n' ? 'z' : 'n';
            if (type) *type = t;
            if (t == 'n' && num) { // the whole literal (JSON puts no bound on its digits)
                char *tmp = (char *)CUSET_CALLOC(J.i - at + 1, 1);
                memcpy(tmp, J.s + at, J.i - at);
                *num = strtod(tmp, NULL);
                free(tmp);
            }
        }
        cuset__json_ws(&J);
        if (J.i < J.n && J.s[J.i] == ',') { J.i++; continue; }
        if (J.i < J.n && J.s[J.i] == '}') { J.i++; break; }
        cuset__json_expected(&J, "',' or '}' after the member");
        goto fail;
    }
done:
    cuset__json_ws(&J);
    if (J.i < J.n && J.s[J.i] != '\n' && J.s[J.i] != '\r') {
        cuset__json_fail(&J, J.i, "unexpected text after the object");
        goto fail;
    }
    arrfree(J.buf);
    return found;
fail:
    arrfree(J.buf);
    if (str && *str) { free(*str); *str = NULL; }
    return -1;
}

// The length of the valid UTF-8 sequence at s[0..n), or 0 when it is not one.
static size_t cuset__utf8_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t k;
    unsigned char lo = 0x80, hi = 0xBF; // the range of the second byte
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) { k = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { k = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if (n < k || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < k; i++) if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return k;
}

void cuset_json_write_string(FILE *f, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') { fputc('\\', f); fputc(c, f); i++; }
        else if (c == '\n') { fputs("\\n", f); i++; }
        else if (c == '\t') { fputs("\\t", f); i++; }
        else if (c == '\r') { fputs("\\r", f); i++; }
        else if (c < 0x20 || c == 0x7F) { fprintf(f, "\\u%04x", c); i++; }
        else {
            size_t k = cuset__utf8_len(s + i, len - i);
            if (k) { fwrite(s + i, 1, k, f); i += k; }
            else { fputs("\\ufffd", f); i++; }
        }
    }
    fputc('"', f);
}

// ---- checkpoints with their tokenizer --------------------------------------------------------

int cuset_checkpoint_save_tok(const char *path, const CusetGPT *m, const CusetGPT *ref, const CusetTokenizer *tk,
                              const CusetCheckpointInfo *info, int with_optimizer, char *err, size_t errlen) {
    unsigned char *tok = NULL; // stb_ds array
    size_t n = tk ? cuset_tok_save(tk, &tok) : 0;
    int rc = cuset_checkpoint_save(path, m, ref, tok, n, info, with_optimizer, err, errlen);
    arrfree(tok);
    return rc;
}

int cuset_checkpoint_load_tok(const char *path, CusetGPT *m, CusetGPT *ref, CusetTokenizer *tk, int want_optimizer,
                              CusetCheckpointInfo *info, char *err, size_t errlen) {
    unsigned char *tok = NULL;
    size_t n = 0;
    if (cuset_checkpoint_load(path, m, ref, tk ? &tok : NULL, &n, want_optimizer, info, err, errlen)) return -1;
    char why[400];
    int rc = 0;
    if (tok && cuset_tok_load(tk, tok, n, why, sizeof why) != 0)
        rc = cuset__err(err, errlen, "%s: its tokenizer: %s", path, why);
    else if (tok && cuset_tok_vocab_size(tk) != info->cfg.vocab_size)
        rc = cuset__err(err, errlen, "%s: its tokenizer has %d tokens but the model's vocabulary is %d", path,
                        cuset_tok_vocab_size(tk), info->cfg.vocab_size);
    free(tok);
    if (rc) {
        cuset_tok_init(tk);
        cuset_gpt_free(m);
        if (ref) cuset_gpt_free(ref);
    }
    return rc;
}

void cuset_checkpoint_describe(FILE *f, const char *path, const CusetGPT *m, const CusetTokenizer *tk,
                               const CusetCheckpointInfo *info) {
    const CusetConfig *c = &m->cfg;
    fprintf(f, "%s: %d layers, %d heads, %d channels, context %d, vocabulary %d (padded %d), %zu parameters\n", path,
            c->n_layer, c->n_head, c->n_embd, c->max_seq_len, c->vocab_size, c->padded_vocab_size, m->num_params);
    fprintf(f, "trained %d steps with %s; optimizer state %s; ASFT reference %s; tokenizer %s\n", info->step,
            cuset_objective_names[info->settings.obj.kind], info->has_optimizer ? "yes" : "no",
            info->has_reference ? "yes" : "no", !info->has_tokenizer ? "no (token ids only)"
            : tk->split == CUSET_TOK_SPLIT_GPT2 ? "yes (GPT-2's pre-split)" : "yes");
    if (cuset_checkpoint_old_windows(info))
        fprintf(f, "checkpoint version 1: CuSeT's windows before the eq. 5 correction (a target shorter than the window "
                   "was one window)\n");
}

#endif // CUSET_TEXTDATA_IMPLEMENTATION_DONE
#endif // CUSET_TEXTDATA_IMPLEMENTATION
