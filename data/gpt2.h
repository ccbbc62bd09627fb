/* data/gpt2.h — GPT-2-family checkpoints in and out: Hugging Face and llm.c.

   The model of cuset.h is GPT-2's architecture, so pretrained GPT-2-family models can be
   fine-tuned here and a fine-tuned model can leave for the usual tools:

   Import
     - a Hugging Face directory: config.json + model.safetensors (dtypes F32, F16, BF16,
       converted to float32), tokenizer.json, or vocab.json + merges.txt;
     - an llm.c checkpoint (gpt2_124M.bin format: version 3 float32, version 5 bfloat16)
       with llm.c's tokenizer file (gpt2_tokenizer.bin, versions 1 and 2).
     Supported: config.json with model_type "gpt2" (GPT2LMHeadModel: gpt2, gpt2-medium,
     -large, -xl, distilgpt2, codeparrot and other GPT-2-architecture models) with a tanh
     GELU (activation_function gelu_new, gelu_pytorch_tanh or gelu_fast), layer_norm_epsilon
     1e-5, n_inner null or 4 n_embd, tied embeddings, scale_attn_weights true and
     scale_attn_by_inverse_layer_idx false; one model.safetensors file (not shards, not
     pytorch_model.bin). Anything else is refused with the field that differs.
   Export
     a Hugging Face directory: config.json, model.safetensors (float32), tokenizer.json,
     tokenizer_config.json, which transformers loads with GPT2LMHeadModel.from_pretrained and
     AutoTokenizer.from_pretrained. The tokenizer is either an imported GPT-2 tokenizer or the
     project's own (data/tokenizer.h), written as a byte-level BPE whose pre-split is a regex
     (cuset_gpt2_cuset_split_regex below).

   The GPT-2 tokenizer (CusetGpt2Tok): byte-level BPE. Text is cut into pieces by GPT-2's
   pre-tokenization regex
       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
   written out by hand (cuset__g2_piece_end) with Unicode 14's letter and number classes
   (the tables at the end, the version the tokenizers library matches) and White_Space for
   \s; bytes that are not valid UTF-8 count as one non-letter character each, so any byte
   string encodes and decode(encode(x)) == x. Each piece is then merged by BPE: repeatedly
   the adjacent pair of lowest rank (leftmost on ties). Ranks come from a merges list
   (tokenizer.json, merges.txt: rank = line) or, for llm.c's tokenizer, which has no merges,
   from the vocabulary as tiktoken does (a pair's rank is the id of the two tokens joined,
   which is GPT-2's merge order). Added tokens (<|endoftext|>) are only ever inserted by the
   caller: text that spells "<|endoftext|>" encodes as plain text. Unsupported tokenizer.json
   settings (a normalizer, add_prefix_space, a non-byte-level model) are refused by name.
   Inside a cuset checkpoint the tokenizer travels as the bytes of cuset_gpt2_tok_save
   (magic "CUSETBPE"; data/tokenizer.h's own tokenizer has magic "CUSETTOK"), so a
   checkpoint says which kind it holds (cuset_gpt2_tok_kind).

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_GPT2_IMPLEMENTATION
       #include "data/gpt2.h"
   after cuset.h's and data/tokenizer.h's implementations (it uses both). Depends on libc,
   POSIX (mmap, mkdir) and stb_ds. */
#ifndef CUSET_GPT2_H
#define CUSET_GPT2_H

#include <stddef.h>
#include <stdint.h>
#include "../cuset.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

// A byte-level BPE tokenizer of the GPT-2 kind. Ids 0 .. vocab_size-1; token id's bytes are
// bytes[offset[id] .. offset[id+1]). All arrays are stb_ds arrays.
typedef struct {
    int vocab_size;
    unsigned char *bytes;   // token bytes back to back
    unsigned *offset;       // (vocab_size + 1)
    unsigned char *added;   // (vocab_size) 1: an added token (never produced by encode)
    int byte_id[256];       // the id of each single byte
    int eot;                // id of <|endoftext|>, -1 if none
    int *rules;             // 4 ints per merge rule: left id, right id, rank, merged id
    // lookup (left, right) -> rule: open addressing, linear probing, at most half full
    uint64_t *pair_key;     // (1 << pair_bits) slots: left << 32 | right, or ~0 when empty
    int *pair_rule;         // the rule's index
    int pair_bits;
} CusetGpt2Tok;

enum { CUSET_TOKKIND_NONE = 0, CUSET_TOKKIND_CUSET, CUSET_TOKKIND_GPT2 };
// Which tokenizer serialized bytes hold: CUSET_TOKKIND_CUSET ("CUSETTOK", data/tokenizer.h),
// CUSET_TOKKIND_GPT2 ("CUSETBPE", this file), or CUSET_TOKKIND_NONE.
int cuset_gpt2_tok_kind(const unsigned char *buf, size_t len);

// Loads a tokenizer from path: a directory (tokenizer.json, else vocab.json + merges.txt),
// a tokenizer.json file, or an llm.c tokenizer file. 0, or -1 with a message.
int cuset_gpt2_tok_load(CusetGpt2Tok *tk, const char *path, char *err, size_t errlen);
void cuset_gpt2_tok_free(CusetGpt2Tok *tk);
// Appends the ids of the n bytes at s to the stb_ds array *ids; returns how many.
size_t cuset_gpt2_tok_encode(const CusetGpt2Tok *tk, const char *s, size_t n, int **ids);
// Appends the bytes of n ids to the stb_ds array *out; returns how many. Added tokens give
// their text; ids outside the vocabulary are skipped.
size_t cuset_gpt2_tok_decode(const CusetGpt2Tok *tk, const int *ids, size_t n, char **out);
// Serialized form for checkpoints: appends to the stb_ds array *buf; returns the bytes.
size_t cuset_gpt2_tok_save(const CusetGpt2Tok *tk, unsigned char **buf);
int cuset_gpt2_tok_load_bytes(CusetGpt2Tok *tk, const unsigned char *buf, size_t len, char *err, size_t errlen);

// Reads a model: a Hugging Face directory (config.json + model.safetensors) or an llm.c
// .bin file. Allocates m (cuset_gpt_init). 0, or -1 with a message naming the file and
// the tensor or field.
int cuset_gpt2_load_model(const char *path, CusetGPT *m, char *err, size_t errlen);
// Model and tokenizer together. tok_path NULL: the directory itself, or for an llm.c .bin
// gpt2_tokenizer.bin beside it. Refuses a tokenizer with more ids than the model has.
int cuset_gpt2_import(const char *path, const char *tok_path, CusetGPT *m, CusetGpt2Tok *tk, char *err,
                      size_t errlen);

// Writes a Hugging Face directory (created if missing; files written to .tmp then
// renamed). Exactly one of gtk (a GPT-2 tokenizer) and ctk (the project's) is non-NULL.
int cuset_gpt2_export(const char *dir, const CusetGPT *m, const CusetGpt2Tok *gtk, const CusetTokenizer *ctk,
                      char *err, size_t errlen);
// The regex that expresses data/tokenizer.h's pre-split in tokenizer.json (onig syntax).
// Exact when every chunk of 64 characters or fewer also has 64 bytes or fewer (always for
// ASCII; a run of non-ASCII letters longer than 64 bytes may be cut elsewhere).
extern const char cuset_gpt2_cuset_split_regex[];

#ifdef __cplusplus
}
#endif
#endif // CUSET_GPT2_H

#ifdef CUSET_GPT2_IMPLEMENTATION
#ifndef CUSET_GPT2_IMPLEMENTATION_DONE
#define CUSET_GPT2_IMPLEMENTATION_DONE

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int cuset__g2_err(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

// ---- files ------------------------------------------------------------------------------

// A whole file, read-only, mapped (empty files give data NULL, size 0).
typedef struct { const unsigned char *data; size_t size; } cuset__g2_file;

static int cuset__g2_map(const char *path, cuset__g2_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return cuset__g2_err(err, errlen, "%s: cannot open: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) { close(fd); return cuset__g2_err(err, errlen, "%s: is a directory", path); }
    f->size = (size_t)st.st_size;
    if (f->size) {
        void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) { close(fd); return cuset__g2_err(err, errlen, "%s: cannot map: %s", path, strerror(errno)); }
        f->data = (const unsigned char *)p;
    }
    close(fd);
    return 0;
}

static void cuset__g2_unmap(cuset__g2_file *f) {
    if (f->data) munmap((void *)f->data, f->size);
    memset(f, 0, sizeof *f);
}

static int cuset__g2_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cuset__g2_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

// ---- JSON: a small DOM ------------------------------------------------------------------
// Nodes in document order; a container's children follow it, and node.end is the index
// after its subtree, so the children of i are i+1, nodes[i+1].end, ... while < nodes[i].end.
// Strings (values and keys) are decoded to UTF-8 into one buffer, NUL-terminated.

enum { CUSET__J_NULL, CUSET__J_BOOL, CUSET__J_NUM, CUSET__J_STR, CUSET__J_ARR, CUSET__J_OBJ };
typedef struct { int type, end, key, str, slen; double num; } cuset__g2_jnode; // key, str: offsets in text
typedef struct {
    cuset__g2_jnode *n; // stb_ds
    char *text;         // stb_ds
    const char *s, *p, *e; // parser state
    const char *why;
} cuset__g2_json;

static void cuset__g2_json_free(cuset__g2_json *j) { arrfree(j->n); arrfree(j->text); }

static void cuset__g2_ws(cuset__g2_json *j) {
    while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static void cuset__g2_put_utf8(char **out, uint32_t c) {
    if (c < 0x80) arrput(*out, (char)c);
    else if (c < 0x800) { arrput(*out, (char)(0xC0 | c >> 6)); arrput(*out, (char)(0x80 | (c & 63))); }
    else if (c < 0x10000) {
        arrput(*out, (char)(0xE0 | c >> 12)); arrput(*out, (char)(0x80 | (c >> 6 & 63)));
        arrput(*out, (char)(0x80 | (c & 63)));
    } else {
        arrput(*out, (char)(0xF0 | c >> 18)); arrput(*out, (char)(0x80 | (c >> 12 & 63)));
        arrput(*out, (char)(0x80 | (c >> 6 & 63))); arrput(*out, (char)(0x80 | (c & 63)));
    }
}

static int cuset__g2_hex4(const char *p, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        *v = *v * 16 + (uint32_t)d;
    }
    return 0;
}

// Parses a string at j->p (on the quote) into j->text; returns its offset or -1.
static int cuset__g2_jstring(cuset__g2_json *j, int *len) {
    int start = (int)arrlen(j->text);
    j->p++;
    while (j->p < j->e && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20) { j->why = "control character in a string"; return -1; }
        if (c != '\\') { arrput(j->text, (char)c); continue; }
        if (j->p >= j->e) break;
        char esc = *j->p++;
        const char *plain = strchr("\"\\/bfnrt", esc);
        if (plain && esc) { arrput(j->text, "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"]); continue; }
        uint32_t u, lo;
        if (esc != 'u' || j->e - j->p < 4 || cuset__g2_hex4(j->p, &u)) { j->why = "bad escape in a string"; return -1; }
        j->p += 4;
        if (u >= 0xD800 && u < 0xDC00 && j->e - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' &&
            !cuset__g2_hex4(j->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            j->p += 6;
        } else if (u >= 0xD800 && u < 0xE000) {
            j->why = "unpaired surrogate in a string";
            return -1;
        }
        cuset__g2_put_utf8(&j->text, u);
    }
    if (j->p >= j->e) { j->why = "unterminated string"; return -1; }
    j->p++;
    *len = (int)arrlen(j->text) - start;
    arrput(j->text, 0);
    return start;
}

static int cuset__g2_jvalue(cuset__g2_json *j, int key, int depth) {
    cuset__g2_ws(j);
    if (j->p >= j->e) { j->why = "unexpected end"; return -1; }
    if (depth > 64) { j->why = "nested too deeply"; return -1; }
    cuset__g2_jnode nd = {0};
    nd.key = key;
    int me = (int)arrlen(j->n);
    char c = *j->p;
    if (c == '{' || c == '[') {
        nd.type = c == '{' ? CUSET__J_OBJ : CUSET__J_ARR;
        arrput(j->n, nd);
        j->p++;
        cuset__g2_ws(j);
        if (j->p < j->e && *j->p == (c == '{' ? '}' : ']')) j->p++;
        else for (;;) {
            int k = -1, klen;
            cuset__g2_ws(j);
            if (c == '{') {
                if (j->p >= j->e || *j->p != '"') { j->why = "expected a key"; return -1; }
                if ((k = cuset__g2_jstring(j, &klen)) < 0) return -1;
                cuset__g2_ws(j);
                if (j->p >= j->e || *j->p != ':') { j->why = "expected ':'"; return -1; }
                j->p++;
            }
            if (cuset__g2_jvalue(j, k, depth + 1) != 0) return -1;
            cuset__g2_ws(j);
            if (j->p < j->e && *j->p == ',') { j->p++; continue; }
            if (j->p < j->e && *j->p == (c == '{' ? '}' : ']')) { j->p++; break; }
            j->why = c == '{' ? "expected ',' or '}'" : "expected ',' or ']'";
            return -1;
        }
        j->n[me].end = (int)arrlen(j->n);
        return 0;
    }
    if (c == '"') {
        nd.type = CUSET__J_STR;
        if ((nd.str = cuset__g2_jstring(j, &nd.slen)) < 0) return -1;
    } else if (c == 't' && j->e - j->p >= 4 && !memcmp(j->p, "true", 4)) { nd.type = CUSET__J_BOOL; nd.num = 1; j->p += 4; }
    else if (c == 'f' && j->e - j->p >= 5 && !memcmp(j->p, "false", 5)) { nd.type = CUSET__J_BOOL; j->p += 5; }
    else if (c == 'n' && j->e - j->p >= 4 && !memcmp(j->p, "null", 4)) { nd.type = CUSET__J_NULL; j->p += 4; }
    else if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t n = 0;
        while (j->p + n < j->e && n < sizeof buf - 1 && strchr("+-.eE0123456789", j->p[n])) n++;
        memcpy(buf, j->p, n);
        buf[n] = 0;
        char *end;
        nd.type = CUSET__J_NUM;
        nd.num = strtod(buf, &end);
        if (end != buf + n) { j->why = "bad number"; return -1; }
        j->p += n;
    } else {
        j->why = "unexpected character";
        return -1;
    }
    nd.end = me + 1;
    arrput(j->n, nd);
    return 0;
}

// Parses n bytes; on error says where (byte offset) and what, prefixed by name.
static int cuset__g2_json_parse(cuset__g2_json *j, const char *s, size_t n, const char *name, char *err, size_t errlen) {
    memset(j, 0, sizeof *j);
    j->s = j->p = s;
    j->e = s + n;
    int rc = cuset__g2_jvalue(j, -1, 0);
    cuset__g2_ws(j);
    if (rc == 0 && j->p != j->e) { j->why = "trailing characters"; rc = -1; }
    if (rc != 0) {
        int r = cuset__g2_err(err, errlen, "%s: not valid JSON at byte %ld: %s", name, (long)(j->p - s), j->why);
        cuset__g2_json_free(j);
        return r;
    }
    return 0;
}

// The member `key` of object node i, or -1.
static int cuset__g2_jget(const cuset__g2_json *j, int i, const char *key) {
    if (i < 0 || j->n[i].type != CUSET__J_OBJ) return -1;
    for (int c = i + 1; c < j->n[i].end; c = j->n[c].end)
        if (!strcmp(j->text + j->n[c].key, key)) return c;
    return -1;
}

static const char *cuset__g2_jstr(const cuset__g2_json *j, int i) {
    return i >= 0 && j->n[i].type == CUSET__J_STR ? j->text + j->n[i].str : NULL;
}

static int cuset__g2_jcount(const cuset__g2_json *j, int i) {
    int k = 0;
    for (int c = i + 1; c < j->n[i].end; c = j->n[c].end) k++;
    return k;
}

// Appends s as a JSON string literal (with quotes) to the stb_ds array *out.
static void cuset__g2_jwrite_str(char **out, const char *s, size_t n) {
    arrput(*out, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { arrput(*out, '\\'); arrput(*out, (char)c); }
        else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); memcpy(arraddnptr(*out, 6), b, 6); }
        else arrput(*out, (char)c);
    }
    arrput(*out, '"');
}

static void cuset__g2_printf(char **out, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(arraddnptr(*out, (size_t)n), buf, (size_t)n);
}

// ---- safetensors ---------------------------------------------------------------------------
// An 8-byte little-endian header length N, N bytes of JSON {name: {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data; offsets count from
// the end of the header. Every entry is checked: a known dtype, the size its shape implies,
// inside the file, not overlapping another.

enum { CUSET__ST_F32, CUSET__ST_F16, CUSET__ST_BF16 };
typedef struct {
    const char *name;
    int dtype, ndim, used;
    int64_t shape[8];
    const unsigned char *data;
    size_t begin, end;
} cuset__g2_tensor;
typedef struct {
    const char *path;
    cuset__g2_file file;
    cuset__g2_json json;
    cuset__g2_tensor *t; // stb_ds
} cuset__g2_st;

static void cuset__g2_st_close(cuset__g2_st *st) {
    arrfree(st->t);
    cuset__g2_json_free(&st->json);
    cuset__g2_unmap(&st->file);
}

static int cuset__g2_by_begin(const void *a, const void *b) {
    const cuset__g2_tensor *x = (const cuset__g2_tensor *)a, *y = (const cuset__g2_tensor *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int cuset__g2_by_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cuset__g2_st_open(cuset__g2_st *st, const char *path, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    st->path = path;
    if (cuset__g2_map(path, &st->file, err, errlen) != 0) return -1;
    const unsigned char *d = st->file.data;
    size_t size = st->file.size;
    uint64_t hlen = 0;
    if (size >= 8) for (int i = 7; i >= 0; i--) hlen = hlen << 8 | d[i];
    if (size < 8 || hlen > size - 8 || hlen > (100u << 20)) {
        cuset__g2_st_close(st);
        return cuset__g2_err(err, errlen, "%s: truncated or not safetensors: %zu bytes, header length %llu", path, size,
                             (unsigned long long)hlen);
    }
    if (cuset__g2_json_parse(&st->json, (const char *)d + 8, hlen, path, err, errlen) != 0) {
        cuset__g2_unmap(&st->file);
        return -1;
    }
    const cuset__g2_json *j = &st->json;
    size_t base = 8 + hlen, avail = size - base;
    char why[256] = "";
    if (j->n[0].type != CUSET__J_OBJ) snprintf(why, sizeof why, "the header is not a JSON object");
    for (int c = 1; c < j->n[0].end && !why[0]; c = j->n[c].end) {
        cuset__g2_tensor t = {0};
        t.name = j->text + j->n[c].key;
        if (!strcmp(t.name, "__metadata__")) continue;
        const char *dt = cuset__g2_jstr(j, cuset__g2_jget(j, c, "dtype"));
        int shape = cuset__g2_jget(j, c, "shape"), offs = cuset__g2_jget(j, c, "data_offsets");
        if (!dt || shape < 0 || offs < 0 || j->n[shape].type != CUSET__J_ARR || j->n[offs].type != CUSET__J_ARR ||
            cuset__g2_jcount(j, offs) != 2 || cuset__g2_jcount(j, shape) > 8) {
            snprintf(why, sizeof why, "tensor %s: needs dtype, shape (at most 8 dims) and data_offsets [begin, end]", t.name);
            break;
        }
        size_t esize;
        if (!strcmp(dt, "F32")) { t.dtype = CUSET__ST_F32; esize = 4; }
        else if (!strcmp(dt, "F16")) { t.dtype = CUSET__ST_F16; esize = 2; }
        else if (!strcmp(dt, "BF16")) { t.dtype = CUSET__ST_BF16; esize = 2; }
        else { snprintf(why, sizeof why, "tensor %s: dtype %s is not supported (F32, F16, BF16)", t.name, dt); break; }
        double numel = 1;
        for (int k = shape + 1; k < j->n[shape].end; k = j->n[k].end) {
            double v = j->n[k].num;
            if (j->n[k].type != CUSET__J_NUM || v < 0 || v != (double)(int64_t)v || v > 1e12) {
                snprintf(why, sizeof why, "tensor %s: bad shape", t.name);
                break;
            }
            t.shape[t.ndim++] = (int64_t)v;
            numel *= v;
        }
        double b = j->n[offs + 1].num, e = j->n[j->n[offs + 1].end].num;
        if (why[0]) break;
        if (j->n[offs + 1].type != CUSET__J_NUM || j->n[j->n[offs + 1].end].type != CUSET__J_NUM || b < 0 || e < b ||
            b != (double)(int64_t)b || e != (double)(int64_t)e || e > (double)avail) {
            snprintf(why, sizeof why, "tensor %s: data_offsets [%.0f, %.0f] reach beyond the %zu data bytes of the file "
                     "(truncated?)", t.name, b, e, avail);
            break;
        }
        if (e - b != numel * (double)esize) {
            snprintf(why, sizeof why, "tensor %s: %s shape needs %.0f bytes but data_offsets [%.0f, %.0f] span %.0f", t.name,
                     dt, numel * (double)esize, b, e, e - b);
            break;
        }
        t.begin = (size_t)b;
        t.end = (size_t)e;
        t.data = d + base + t.begin;
        arrput(st->t, t);
    }
    if (!why[0] && arrlen(st->t)) {
        cuset__g2_tensor *s = (cuset__g2_tensor *)malloc(arrlenu(st->t) * sizeof *s);
        memcpy(s, st->t, arrlenu(st->t) * sizeof *s);
        qsort(s, arrlenu(st->t), sizeof *s, cuset__g2_by_begin);
        for (ptrdiff_t i = 1; i < arrlen(st->t) && !why[0]; i++)
            if (s[i].begin < s[i - 1].end)
                snprintf(why, sizeof why, "tensors %s and %s overlap (data_offsets)", s[i - 1].name, s[i].name);
        free(s);
    }
    if (why[0]) {
        cuset__g2_st_close(st);
        return cuset__g2_err(err, errlen, "%s: %s", path, why);
    }
    return 0;
}

static float cuset__g2_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = h >> 10 & 31, m = h & 1023, bits;
    if (e == 31) bits = sign | 0x7F800000u | m << 13;           // inf, nan
    else if (e) bits = sign | (e + 112) << 23 | m << 13;         // normal
    else if (!m) bits = sign;                                    // zero
    else { // subnormal: m * 2^-24
        float f = (float)m * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// Element i of t as float32.
static float cuset__g2_st_at(const cuset__g2_tensor *t, size_t i) {
    const unsigned char *p = t->data + i * (t->dtype == CUSET__ST_F32 ? 4 : 2);
    if (t->dtype == CUSET__ST_F32) { float f; memcpy(&f, p, 4); return f; }
    uint16_t h = (uint16_t)(p[0] | p[1] << 8);
    if (t->dtype == CUSET__ST_F16) return cuset__g2_half(h);
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// Reads tensor `name` of shape (rows) or (rows, cols) (cols 0: one dimension) into out,
// transposed to (cols, rows) when transpose is set.
static int cuset__g2_st_read(cuset__g2_st *st, const char *name, int64_t rows, int64_t cols, int transpose, float *out,
                             char *err, size_t errlen) {
    cuset__g2_tensor *t = NULL;
    for (ptrdiff_t i = 0; i < arrlen(st->t); i++) if (!strcmp(st->t[i].name, name)) t = &st->t[i];
    if (!t) return cuset__g2_err(err, errlen, "%s: tensor %s is missing", st->path, name);
    int ndim = cols ? 2 : 1;
    if (t->ndim != ndim || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char got[128] = "";
        for (int k = 0; k < t->ndim; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "", (long long)t->shape[k]);
        return cuset__g2_err(err, errlen, "%s: tensor %s has shape (%s), the config needs (%lld%s%.0lld)", st->path, name,
                             got, (long long)rows, cols ? ", " : "", (long long)cols);
    }
    t->used = 1;
    if (!cols) cols = 1;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            out[transpose ? c * rows + r : r * cols + c] = cuset__g2_st_at(t, (size_t)(r * cols + c));
    return 0;
}

// ---- the model: Hugging Face names and shapes ------------------------------------------------
// HF's GPT-2 keeps its linear weights as Conv1D, (in, out); cuset.h keeps (out, in), so
// those are transposed both ways. Per layer, h.<l>.<name>, with shapes in multiples of C:
static const struct { const char *name; int tensor, in, out; } cuset__g2_layer[] = {
    {"ln_1.weight", 2, 0, 1},       {"ln_1.bias", 3, 0, 1},         {"attn.c_attn.weight", 4, 1, 3},
    {"attn.c_attn.bias", 5, 0, 3},  {"attn.c_proj.weight", 6, 1, 1}, {"attn.c_proj.bias", 7, 0, 1},
    {"ln_2.weight", 8, 0, 1},       {"ln_2.bias", 9, 0, 1},          {"mlp.c_fc.weight", 10, 1, 4},
    {"mlp.c_fc.bias", 11, 0, 4},    {"mlp.c_proj.weight", 12, 4, 1}, {"mlp.c_proj.bias", 13, 0, 1},
};
#define CUSET__G2_NLAYER (int)(sizeof cuset__g2_layer / sizeof cuset__g2_layer[0])

// Reads config.json into cfg, refusing what cuset.h's model does not compute.
static int cuset__g2_read_config(const char *dir, CusetConfig *cfg, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cuset__g2_file f;
    cuset__g2_json j;
    if (cuset__g2_map(path, &f, err, errlen) != 0) return -1;
    int rc = cuset__g2_json_parse(&j, (const char *)f.data, f.size, path, err, errlen);
    cuset__g2_unmap(&f);
    if (rc != 0) return -1;
    char why[512] = "";
    const char *type = cuset__g2_jstr(&j, cuset__g2_jget(&j, 0, "model_type"));
    const char *act = cuset__g2_jstr(&j, cuset__g2_jget(&j, 0, "activation_function"));
    int v[5];
    const char *names[5] = {"vocab_size", "n_positions", "n_layer", "n_head", "n_embd"};
    if (!type || strcmp(type, "gpt2") != 0) {
        snprintf(why, sizeof why, "model_type \"%s\" is not supported: only GPT-2's architecture (model_type \"gpt2\": "
                 "gpt2, gpt2-medium/large/xl, distilgpt2, codeparrot, ...)", type ? type : "(missing)");
    }
    for (int i = 0; i < 5 && !why[0]; i++) {
        int k = cuset__g2_jget(&j, 0, names[i]);
        if (k < 0 && i == 1) k = cuset__g2_jget(&j, 0, "n_ctx");
        if (k < 0 || j.n[k].type != CUSET__J_NUM || j.n[k].num < 1 || j.n[k].num > (1 << 24) || j.n[k].num != (int)j.n[k].num)
            snprintf(why, sizeof why, "%s is missing or not a positive integer", names[i]);
        else v[i] = (int)j.n[k].num;
    }
    int inner = cuset__g2_jget(&j, 0, "n_inner"), eps = cuset__g2_jget(&j, 0, "layer_norm_epsilon");
    static const char *const must_true[] = {"tie_word_embeddings", "scale_attn_weights"};
    static const char *const must_false[] = {"scale_attn_by_inverse_layer_idx", "add_cross_attention"};
    if (why[0]) {
    } else if (act && strcmp(act, "gelu_new") && strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu_fast")) {
        snprintf(why, sizeof why, "activation_function \"%s\" is not supported (the tanh GELU: gelu_new, "
                 "gelu_pytorch_tanh, gelu_fast)", act);
    } else if (inner >= 0 && j.n[inner].type != CUSET__J_NULL && j.n[inner].num != 4.0 * v[4]) {
        snprintf(why, sizeof why, "n_inner %.0f is not supported (null or 4 n_embd = %d)", j.n[inner].num, 4 * v[4]);
    } else if (eps >= 0 && fabs(j.n[eps].num - 1e-5) > 1e-12) {
        snprintf(why, sizeof why, "layer_norm_epsilon %g is not supported (1e-5)", j.n[eps].num);
    }
    for (int i = 0; i < 2 && !why[0]; i++) {
        int a = cuset__g2_jget(&j, 0, must_true[i]), b = cuset__g2_jget(&j, 0, must_false[i]);
        if (a >= 0 && !(j.n[a].type == CUSET__J_BOOL && j.n[a].num)) snprintf(why, sizeof why, "%s must be true", must_true[i]);
        else if (b >= 0 && !(j.n[b].type == CUSET__J_BOOL && !j.n[b].num))
            snprintf(why, sizeof why, "%s must be false", must_false[i]);
    }
    cuset__g2_json_free(&j);
    if (why[0]) return cuset__g2_err(err, errlen, "%s: %s", path, why);
    cfg->vocab_size = v[0];
    cfg->padded_vocab_size = cuset_pad_vocab(v[0]);
    cfg->max_seq_len = v[1];
    cfg->n_layer = v[2];
    cfg->n_head = v[3];
    cfg->n_embd = v[4];
    if (cuset_config_check(cfg, why, sizeof why) != 0) return cuset__g2_err(err, errlen, "%s: %s", path, why);
    return 0;
}

static int cuset__g2_load_hf(const char *dir, CusetGPT *m, char *err, size_t errlen) {
    CusetConfig cfg;
    if (cuset__g2_read_config(dir, &cfg, err, errlen) != 0) return -1;
    char path[4096], name[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!cuset__g2_exists(path)) {
        snprintf(name, sizeof name, "%s/model.safetensors.index.json", dir);
        return cuset__g2_err(err, errlen, "%s: missing%s; only one model.safetensors file is read (convert "
                             "pytorch_model.bin with safetensors' convert script or save_pretrained)", path,
                             cuset__g2_exists(name) ? " (the model is sharded)" : "");
    }
    cuset__g2_st st;
    if (cuset__g2_st_open(&st, path, err, errlen) != 0) return -1;
    cuset_gpt_init(m, &cfg);
    const char *pre = "";
    for (ptrdiff_t i = 0; i < arrlen(st.t); i++) if (!strncmp(st.t[i].name, "transformer.", 12)) pre = "transformer.";
    int64_t V = cfg.vocab_size, C = cfg.n_embd, L = cfg.n_layer;
    CusetParams p = m->params;
    int rc = 0;
#define CUSET__G2_READ(n, rows, cols, tr, out)                                                                     \
    (snprintf(name, sizeof name, "%s%s", pre, n), rc = rc ? rc : cuset__g2_st_read(&st, name, rows, cols, tr, out, err, errlen))
    CUSET__G2_READ("wte.weight", V, C, 0, p.wte);
    CUSET__G2_READ("wpe.weight", (int64_t)cfg.max_seq_len, C, 0, p.wpe);
    CUSET__G2_READ("ln_f.weight", C, 0, 0, p.lnfw);
    CUSET__G2_READ("ln_f.bias", C, 0, 0, p.lnfb);
    for (int l = 0; l < L && !rc; l++)
        for (int k = 0; k < CUSET__G2_NLAYER; k++) {
            int t = cuset__g2_layer[k].tensor, in = cuset__g2_layer[k].in, out = cuset__g2_layer[k].out;
            float *dst = ((float **)&m->params)[t] + m->tensor_sizes[t] / L * l;
            char n[128];
            snprintf(n, sizeof n, "h.%d.%s", l, cuset__g2_layer[k].name);
            if (in) CUSET__G2_READ(n, in * C, out * C, 1, dst);
            else CUSET__G2_READ(n, out * C, 0, 0, dst);
        }
#undef CUSET__G2_READ
    // what is left: the causal-mask buffers of old versions, and a head that must be tied
    for (ptrdiff_t i = 0; i < arrlen(st.t) && !rc; i++) {
        cuset__g2_tensor *t = &st.t[i];
        size_t n = strlen(t->name);
        if (t->used || (n > 9 && !strcmp(t->name + n - 9, ".attn.bias")) || strstr(t->name, ".attn.masked_bias")) continue;
        if (!strcmp(t->name, "lm_head.weight") && t->ndim == 2 && t->shape[0] == V && t->shape[1] == C) {
            for (size_t e = 0; e < (size_t)(V * C) && !rc; e++)
                if (cuset__g2_st_at(t, e) != p.wte[e])
                    rc = cuset__g2_err(err, errlen, "%s: lm_head.weight differs from wte.weight: only tied heads are "
                                       "supported", path);
            continue;
        }
        rc = cuset__g2_err(err, errlen, "%s: unexpected tensor %s (not part of GPT-2's architecture)", path, t->name);
    }
    cuset__g2_st_close(&st);
    if (rc) cuset_gpt_free(m);
    return rc;
}

// llm.c's checkpoint: 256 int32 (magic 20240326, version 3 = float32 or 5 = bfloat16, maxT,
// V, L, NH, C, Vp), then the 16 tensors in cuset.h's order with Vp rows of wte.
static int cuset__g2_load_llmc(const char *path, CusetGPT *m, char *err, size_t errlen) {
    cuset__g2_file f;
    if (cuset__g2_map(path, &f, err, errlen) != 0) return -1;
    int32_t h[256];
    char why[256] = "";
    if (f.size < sizeof h) snprintf(why, sizeof why, "%zu bytes, shorter than llm.c's 1024-byte header", f.size);
    else if (memcpy(h, f.data, sizeof h), h[0] != 20240326) snprintf(why, sizeof why, "not an llm.c checkpoint (magic %d)", h[0]);
    else if (h[1] != 3 && h[1] != 5) snprintf(why, sizeof why, "llm.c checkpoint version %d: versions 3 (float32) and 5 (bfloat16) are read", h[1]);
    CusetConfig cfg = {0};
    if (!why[0]) {
        cfg = (CusetConfig){h[3], cuset_pad_vocab(h[3]), h[2], h[4], h[5], h[6]};
        if (cuset_config_check(&cfg, why, sizeof why) == 0 && h[7] < h[3])
            snprintf(why, sizeof why, "padded vocabulary %d smaller than the vocabulary %d", h[7], h[3]);
    }
    size_t esize = !why[0] && h[1] == 5 ? 2 : 4, np = 0, s[CUSET_NUM_TENSORS];
    if (!why[0]) {
        cuset_gpt_init(m, &cfg);
        memcpy(s, m->tensor_sizes, sizeof s);
        s[0] = (size_t)h[7] * cfg.n_embd;
        for (int i = 0; i < CUSET_NUM_TENSORS; i++) np += s[i];
        if (f.size != sizeof h + np * esize) {
            snprintf(why, sizeof why, "%s: %zu bytes, the header implies %zu", f.size < sizeof h + np * esize ? "truncated" :
                     "trailing bytes", f.size, sizeof h + np * esize);
            cuset_gpt_free(m);
        }
    }
    if (why[0]) { cuset__g2_unmap(&f); return cuset__g2_err(err, errlen, "%s: %s", path, why); }
    cuset__g2_tensor t = {0};
    t.dtype = esize == 2 ? CUSET__ST_BF16 : CUSET__ST_F32;
    t.data = f.data + sizeof h;
    for (int i = 0; i < CUSET_NUM_TENSORS; i++) {
        float *dst = ((float **)&m->params)[i];
        size_t n = i == 0 ? (size_t)cfg.vocab_size * cfg.n_embd : s[i]; // our padding rows stay 0
        for (size_t e = 0; e < n; e++) dst[e] = cuset__g2_st_at(&t, e);
        t.data += s[i] * esize;
    }
    cuset__g2_unmap(&f);
    return 0;
}

int cuset_gpt2_load_model(const char *path, CusetGPT *m, char *err, size_t errlen) {
    return cuset__g2_is_dir(path) ? cuset__g2_load_hf(path, m, err, errlen) : cuset__g2_load_llmc(path, m, err, errlen);
}

// ---- the GPT-2 tokenizer: characters and pieces -------------------------------------------

// Unicode 14's letters (\p{L}: Lu Ll Lt Lm Lo) and numbers (\p{N}: Nd Nl No) as sorted
// ranges: the version whose classes the tokenizers library's regex uses (its 15.0 letters
// are not letters there). Made with Python 3.11's unicodedata (Unicode 14.0.0):
//   [c for c in range(0x110000) if unicodedata.category(chr(c))[0] == 'L'], merged to ranges.
static const uint32_t cuset__g2_letters[][2] = {
    {0x41,0x5A}, {0x61,0x7A}, {0xAA,0xAA}, {0xB5,0xB5}, {0xBA,0xBA}, {0xC0,0xD6}, {0xD8,0xF6}, {0xF8,0x2C1},
    {0x2C6,0x2D1}, {0x2E0,0x2E4}, {0x2EC,0x2EC}, {0x2EE,0x2EE}, {0x370,0x374}, {0x376,0x377}, {0x37A,0x37D},
    {0x37F,0x37F}, {0x386,0x386}, {0x388,0x38A}, {0x38C,0x38C}, {0x38E,0x3A1}, {0x3A3,0x3F5}, {0x3F7,0x481},
    {0x48A,0x52F}, {0x531,0x556}, {0x559,0x559}, {0x560,0x588}, {0x5D0,0x5EA}, {0x5EF,0x5F2}, {0x620,0x64A},
    {0x66E,0x66F}, {0x671,0x6D3}, {0x6D5,0x6D5}, {0x6E5,0x6E6}, {0x6EE,0x6EF}, {0x6FA,0x6FC}, {0x6FF,0x6FF},
    {0x710,0x710}, {0x712,0x72F}, {0x74D,0x7A5}, {0x7B1,0x7B1}, {0x7CA,0x7EA}, {0x7F4,0x7F5}, {0x7FA,0x7FA},
    {0x800,0x815}, {0x81A,0x81A}, {0x824,0x824}, {0x828,0x828}, {0x840,0x858}, {0x860,0x86A}, {0x870,0x887},
    {0x889,0x88E}, {0x8A0,0x8C9}, {0x904,0x939}, {0x93D,0x93D}, {0x950,0x950}, {0x958,0x961}, {0x971,0x980},
    {0x985,0x98C}, {0x98F,0x990}, {0x993,0x9A8}, {0x9AA,0x9B0}, {0x9B2,0x9B2}, {0x9B6,0x9B9}, {0x9BD,0x9BD},
    {0x9CE,0x9CE}, {0x9DC,0x9DD}, {0x9DF,0x9E1}, {0x9F0,0x9F1}, {0x9FC,0x9FC}, {0xA05,0xA0A}, {0xA0F,0xA10},
    {0xA13,0xA28}, {0xA2A,0xA30}, {0xA32,0xA33}, {0xA35,0xA36}, {0xA38,0xA39}, {0xA59,0xA5C}, {0xA5E,0xA5E},
    {0xA72,0xA74}, {0xA85,0xA8D}, {0xA8F,0xA91}, {0xA93,0xAA8}, {0xAAA,0xAB0}, {0xAB2,0xAB3}, {0xAB5,0xAB9},
    {0xABD,0xABD}, {0xAD0,0xAD0}, {0xAE0,0xAE1}, {0xAF9,0xAF9}, {0xB05,0xB0C}, {0xB0F,0xB10}, {0xB13,0xB28},
    {0xB2A,0xB30}, {0xB32,0xB33}, {0xB35,0xB39}, {0xB3D,0xB3D}, {0xB5C,0xB5D}, {0xB5F,0xB61}, {0xB71,0xB71},
    {0xB83,0xB83}, {0xB85,0xB8A}, {0xB8E,0xB90}, {0xB92,0xB95}, {0xB99,0xB9A}, {0xB9C,0xB9C}, {0xB9E,0xB9F},
    {0xBA3,0xBA4}, {0xBA8,0xBAA}, {0xBAE,0xBB9}, {0xBD0,0xBD0}, {0xC05,0xC0C}, {0xC0E,0xC10}, {0xC12,0xC28},
    {0xC2A,0xC39}, {0xC3D,0xC3D}, {0xC58,0xC5A}, {0xC5D,0xC5D}, {0xC60,0xC61}, {0xC80,0xC80}, {0xC85,0xC8C},
    {0xC8E,0xC90}, {0xC92,0xCA8}, {0xCAA,0xCB3}, {0xCB5,0xCB9}, {0xCBD,0xCBD}, {0xCDD,0xCDE}, {0xCE0,0xCE1},
    {0xCF1,0xCF2}, {0xD04,0xD0C}, {0xD0E,0xD10}, {0xD12,0xD3A}, {0xD3D,0xD3D}, {0xD4E,0xD4E}, {0xD54,0xD56},
    {0xD5F,0xD61}, {0xD7A,0xD7F}, {0xD85,0xD96}, {0xD9A,0xDB1}, {0xDB3,0xDBB}, {0xDBD,0xDBD}, {0xDC0,0xDC6},
    {0xE01,0xE30}, {0xE32,0xE33}, {0xE40,0xE46}, {0xE81,0xE82}, {0xE84,0xE84}, {0xE86,0xE8A}, {0xE8C,0xEA3},
    {0xEA5,0xEA5}, {0xEA7,0xEB0}, {0xEB2,0xEB3}, {0xEBD,0xEBD}, {0xEC0,0xEC4}, {0xEC6,0xEC6}, {0xEDC,0xEDF},
    {0xF00,0xF00}, {0xF40,0xF47}, {0xF49,0xF6C}, {0xF88,0xF8C}, {0x1000,0x102A}, {0x103F,0x103F}, {0x1050,0x1055},
    {0x105A,0x105D}, {0x1061,0x1061}, {0x1065,0x1066}, {0x106E,0x1070}, {0x1075,0x1081}, {0x108E,0x108E},
    {0x10A0,0x10C5}, {0x10C7,0x10C7}, {0x10CD,0x10CD}, {0x10D0,0x10FA}, {0x10FC,0x1248}, {0x124A,0x124D},
    {0x1250,0x1256}, {0x1258,0x1258}, {0x125A,0x125D}, {0x1260,0x1288}, {0x128A,0x128D}, {0x1290,0x12B0},
    {0x12B2,0x12B5}, {0x12B8,0x12BE}, {0x12C0,0x12C0}, {0x12C2,0x12C5}, {0x12C8,0x12D6}, {0x12D8,0x1310},
    {0x1312,0x1315}, {0x1318,0x135A}, {0x1380,0x138F}, {0x13A0,0x13F5}, {0x13F8,0x13FD}, {0x1401,0x166C},
    {0x166F,0x167F}, {0x1681,0x169A}, {0x16A0,0x16EA}, {0x16F1,0x16F8}, {0x1700,0x1711}, {0x171F,0x1731},
    {0x1740,0x1751}, {0x1760,0x176C}, {0x176E,0x1770}, {0x1780,0x17B3}, {0x17D7,0x17D7}, {0x17DC,0x17DC},
    {0x1820,0x1878}, {0x1880,0x1884}, {0x1887,0x18A8}, {0x18AA,0x18AA}, {0x18B0,0x18F5}, {0x1900,0x191E},
    {0x1950,0x196D}, {0x1970,0x1974}, {0x1980,0x19AB}, {0x19B0,0x19C9}, {0x1A00,0x1A16}, {0x1A20,0x1A54},
    {0x1AA7,0x1AA7}, {0x1B05,0x1B33}, {0x1B45,0x1B4C}, {0x1B83,0x1BA0}, {0x1BAE,0x1BAF}, {0x1BBA,0x1BE5},
    {0x1C00,0x1C23}, {0x1C4D,0x1C4F}, {0x1C5A,0x1C7D}, {0x1C80,0x1C88}, {0x1C90,0x1CBA}, {0x1CBD,0x1CBF},
    {0x1CE9,0x1CEC}, {0x1CEE,0x1CF3}, {0x1CF5,0x1CF6}, {0x1CFA,0x1CFA}, {0x1D00,0x1DBF}, {0x1E00,0x1F15},
    {0x1F18,0x1F1D}, {0x1F20,0x1F45}, {0x1F48,0x1F4D}, {0x1F50,0x1F57}, {0x1F59,0x1F59}, {0x1F5B,0x1F5B},
    {0x1F5D,0x1F5D}, {0x1F5F,0x1F7D}, {0x1F80,0x1FB4}, {0x1FB6,0x1FBC}, {0x1FBE,0x1FBE}, {0x1FC2,0x1FC4},
    {0x1FC6,0x1FCC}, {0x1FD0,0x1FD3}, {0x1FD6,0x1FDB}, {0x1FE0,0x1FEC}, {0x1FF2,0x1FF4}, {0x1FF6,0x1FFC},
    {0x2071,0x2071}, {0x207F,0x207F}, {0x2090,0x209C}, {0x2102,0x2102}, {0x2107,0x2107}, {0x210A,0x2113},
    {0x2115,0x2115}, {0x2119,0x211D}, {0x2124,0x2124}, {0x2126,0x2126}, {0x2128,0x2128}, {0x212A,0x212D},
    {0x212F,0x2139}, {0x213C,0x213F}, {0x2145,0x2149}, {0x214E,0x214E}, {0x2183,0x2184}, {0x2C00,0x2CE4},
    {0x2CEB,0x2CEE}, {0x2CF2,0x2CF3}, {0x2D00,0x2D25}, {0x2D27,0x2D27}, {0x2D2D,0x2D2D}, {0x2D30,0x2D67},
    {0x2D6F,0x2D6F}, {0x2D80,0x2D96}, {0x2DA0,0x2DA6}, {0x2DA8,0x2DAE}, {0x2DB0,0x2DB6}, {0x2DB8,0x2DBE},
    {0x2DC0,0x2DC6}, {0x2DC8,0x2DCE}, {0x2DD0,0x2DD6}, {0x2DD8,0x2DDE}, {0x2E2F,0x2E2F}, {0x3005,0x3006},
    {0x3031,0x3035}, {0x303B,0x303C}, {0x3041,0x3096}, {0x309D,0x309F}, {0x30A1,0x30FA}, {0x30FC,0x30FF},
    {0x3105,0x312F}, {0x3131,0x318E}, {0x31A0,0x31BF}, {0x31F0,0x31FF}, {0x3400,0x4DBF}, {0x4E00,0xA48C},
    {0xA4D0,0xA4FD}, {0xA500,0xA60C}, {0xA610,0xA61F}, {0xA62A,0xA62B}, {0xA640,0xA66E}, {0xA67F,0xA69D},
    {0xA6A0,0xA6E5}, {0xA717,0xA71F}, {0xA722,0xA788}, {0xA78B,0xA7CA}, {0xA7D0,0xA7D1}, {0xA7D3,0xA7D3},
    {0xA7D5,0xA7D9}, {0xA7F2,0xA801}, {0xA803,0xA805}, {0xA807,0xA80A}, {0xA80C,0xA822}, {0xA840,0xA873},
    {0xA882,0xA8B3}, {0xA8F2,0xA8F7}, {0xA8FB,0xA8FB}, {0xA8FD,0xA8FE}, {0xA90A,0xA925}, {0xA930,0xA946},
    {0xA960,0xA97C}, {0xA984,0xA9B2}, {0xA9CF,0xA9CF}, {0xA9E0,0xA9E4}, {0xA9E6,0xA9EF}, {0xA9FA,0xA9FE},
    {0xAA00,0xAA28}, {0xAA40,0xAA42}, {0xAA44,0xAA4B}, {0xAA60,0xAA76}, {0xAA7A,0xAA7A}, {0xAA7E,0xAAAF},
    {0xAAB1,0xAAB1}, {0xAAB5,0xAAB6}, {0xAAB9,0xAABD}, {0xAAC0,0xAAC0}, {0xAAC2,0xAAC2}, {0xAADB,0xAADD},
    {0xAAE0,0xAAEA}, {0xAAF2,0xAAF4}, {0xAB01,0xAB06}, {0xAB09,0xAB0E}, {0xAB11,0xAB16}, {0xAB20,0xAB26},
    {0xAB28,0xAB2E}, {0xAB30,0xAB5A}, {0xAB5C,0xAB69}, {0xAB70,0xABE2}, {0xAC00,0xD7A3}, {0xD7B0,0xD7C6},
    {0xD7CB,0xD7FB}, {0xF900,0xFA6D}, {0xFA70,0xFAD9}, {0xFB00,0xFB06}, {0xFB13,0xFB17}, {0xFB1D,0xFB1D},
    {0xFB1F,0xFB28}, {0xFB2A,0xFB36}, {0xFB38,0xFB3C}, {0xFB3E,0xFB3E}, {0xFB40,0xFB41}, {0xFB43,0xFB44},
    {0xFB46,0xFBB1}, {0xFBD3,0xFD3D}, {0xFD50,0xFD8F}, {0xFD92,0xFDC7}, {0xFDF0,0xFDFB}, {0xFE70,0xFE74},
    {0xFE76,0xFEFC}, {0xFF21,0xFF3A}, {0xFF41,0xFF5A}, {0xFF66,0xFFBE}, {0xFFC2,0xFFC7}, {0xFFCA,0xFFCF},
    {0xFFD2,0xFFD7}, {0xFFDA,0xFFDC}, {0x10000,0x1000B}, {0x1000D,0x10026}, {0x10028,0x1003A}, {0x1003C,0x1003D},
    {0x1003F,0x1004D}, {0x10050,0x1005D}, {0x10080,0x100FA}, {0x10280,0x1029C}, {0x102A0,0x102D0}, {0x10300,0x1031F},
    {0x1032D,0x10340}, {0x10342,0x10349}, {0x10350,0x10375}, {0x10380,0x1039D}, {0x103A0,0x103C3}, {0x103C8,0x103CF},
    {0x10400,0x1049D}, {0x104B0,0x104D3}, {0x104D8,0x104FB}, {0x10500,0x10527}, {0x10530,0x10563}, {0x10570,0x1057A},
    {0x1057C,0x1058A}, {0x1058C,0x10592}, {0x10594,0x10595}, {0x10597,0x105A1}, {0x105A3,0x105B1}, {0x105B3,0x105B9},
    {0x105BB,0x105BC}, {0x10600,0x10736}, {0x10740,0x10755}, {0x10760,0x10767}, {0x10780,0x10785}, {0x10787,0x107B0},
    {0x107B2,0x107BA}, {0x10800,0x10805}, {0x10808,0x10808}, {0x1080A,0x10835}, {0x10837,0x10838}, {0x1083C,0x1083C},
    {0x1083F,0x10855}, {0x10860,0x10876}, {0x10880,0x1089E}, {0x108E0,0x108F2}, {0x108F4,0x108F5}, {0x10900,0x10915},
    {0x10920,0x10939}, {0x10980,0x109B7}, {0x109BE,0x109BF}, {0x10A00,0x10A00}, {0x10A10,0x10A13}, {0x10A15,0x10A17},
    {0x10A19,0x10A35}, {0x10A60,0x10A7C}, {0x10A80,0x10A9C}, {0x10AC0,0x10AC7}, {0x10AC9,0x10AE4}, {0x10B00,0x10B35},
    {0x10B40,0x10B55}, {0x10B60,0x10B72}, {0x10B80,0x10B91}, {0x10C00,0x10C48}, {0x10C80,0x10CB2}, {0x10CC0,0x10CF2},
    {0x10D00,0x10D23}, {0x10E80,0x10EA9}, {0x10EB0,0x10EB1}, {0x10F00,0x10F1C}, {0x10F27,0x10F27}, {0x10F30,0x10F45},
    {0x10F70,0x10F81}, {0x10FB0,0x10FC4}, {0x10FE0,0x10FF6}, {0x11003,0x11037}, {0x11071,0x11072}, {0x11075,0x11075},
    {0x11083,0x110AF}, {0x110D0,0x110E8}, {0x11103,0x11126}, {0x11144,0x11144}, {0x11147,0x11147}, {0x11150,0x11172},
    {0x11176,0x11176}, {0x11183,0x111B2}, {0x111C1,0x111C4}, {0x111DA,0x111DA}, {0x111DC,0x111DC}, {0x11200,0x11211},
    {0x11213,0x1122B}, {0x11280,0x11286}, {0x11288,0x11288}, {0x1128A,0x1128D}, {0x1128F,0x1129D}, {0x1129F,0x112A8},
    {0x112B0,0x112DE}, {0x11305,0x1130C}, {0x1130F,0x11310}, {0x11313,0x11328}, {0x1132A,0x11330}, {0x11332,0x11333},
    {0x11335,0x11339}, {0x1133D,0x1133D}, {0x11350,0x11350}, {0x1135D,0x11361}, {0x11400,0x11434}, {0x11447,0x1144A},
    {0x1145F,0x11461}, {0x11480,0x114AF}, {0x114C4,0x114C5}, {0x114C7,0x114C7}, {0x11580,0x115AE}, {0x115D8,0x115DB},
    {0x11600,0x1162F}, {0x11644,0x11644}, {0x11680,0x116AA}, {0x116B8,0x116B8}, {0x11700,0x1171A}, {0x11740,0x11746},
    {0x11800,0x1182B}, {0x118A0,0x118DF}, {0x118FF,0x11906}, {0x11909,0x11909}, {0x1190C,0x11913}, {0x11915,0x11916},
    {0x11918,0x1192F}, {0x1193F,0x1193F}, {0x11941,0x11941}, {0x119A0,0x119A7}, {0x119AA,0x119D0}, {0x119E1,0x119E1},
    {0x119E3,0x119E3}, {0x11A00,0x11A00}, {0x11A0B,0x11A32}, {0x11A3A,0x11A3A}, {0x11A50,0x11A50}, {0x11A5C,0x11A89},
    {0x11A9D,0x11A9D}, {0x11AB0,0x11AF8}, {0x11C00,0x11C08}, {0x11C0A,0x11C2E}, {0x11C40,0x11C40}, {0x11C72,0x11C8F},
    {0x11D00,0x11D06}, {0x11D08,0x11D09}, {0x11D0B,0x11D30}, {0x11D46,0x11D46}, {0x11D60,0x11D65}, {0x11D67,0x11D68},
    {0x11D6A,0x11D89}, {0x11D98,0x11D98}, {0x11EE0,0x11EF2}, {0x11FB0,0x11FB0}, {0x12000,0x12399}, {0x12480,0x12543},
    {0x12F90,0x12FF0}, {0x13000,0x1342E}, {0x14400,0x14646}, {0x16800,0x16A38}, {0x16A40,0x16A5E}, {0x16A70,0x16ABE},
    {0x16AD0,0x16AED}, {0x16B00,0x16B2F}, {0x16B40,0x16B43}, {0x16B63,0x16B77}, {0x16B7D,0x16B8F}, {0x16E40,0x16E7F},
    {0x16F00,0x16F4A}, {0x16F50,0x16F50}, {0x16F93,0x16F9F}, {0x16FE0,0x16FE1}, {0x16FE3,0x16FE3}, {0x17000,0x187F7},
    {0x18800,0x18CD5}, {0x18D00,0x18D08}, {0x1AFF0,0x1AFF3}, {0x1AFF5,0x1AFFB}, {0x1AFFD,0x1AFFE}, {0x1B000,0x1B122},
    {0x1B150,0x1B152}, {0x1B164,0x1B167}, {0x1B170,0x1B2FB}, {0x1BC00,0x1BC6A}, {0x1BC70,0x1BC7C}, {0x1BC80,0x1BC88},
    {0x1BC90,0x1BC99}, {0x1D400,0x1D454}, {0x1D456,0x1D49C}, {0x1D49E,0x1D49F}, {0x1D4A2,0x1D4A2}, {0x1D4A5,0x1D4A6},
    {0x1D4A9,0x1D4AC}, {0x1D4AE,0x1D4B9}, {0x1D4BB,0x1D4BB}, {0x1D4BD,0x1D4C3}, {0x1D4C5,0x1D505}, {0x1D507,0x1D50A},
    {0x1D50D,0x1D514}, {0x1D516,0x1D51C}, {0x1D51E,0x1D539}, {0x1D53B,0x1D53E}, {0x1D540,0x1D544}, {0x1D546,0x1D546},
    {0x1D54A,0x1D550}, {0x1D552,0x1D6A5}, {0x1D6A8,0x1D6C0}, {0x1D6C2,0x1D6DA}, {0x1D6DC,0x1D6FA}, {0x1D6FC,0x1D714},
    {0x1D716,0x1D734}, {0x1D736,0x1D74E}, {0x1D750,0x1D76E}, {0x1D770,0x1D788}, {0x1D78A,0x1D7A8}, {0x1D7AA,0x1D7C2},
    {0x1D7C4,0x1D7CB}, {0x1DF00,0x1DF1E}, {0x1E100,0x1E12C}, {0x1E137,0x1E13D}, {0x1E14E,0x1E14E}, {0x1E290,0x1E2AD},
    {0x1E2C0,0x1E2EB}, {0x1E7E0,0x1E7E6}, {0x1E7E8,0x1E7EB}, {0x1E7ED,0x1E7EE}, {0x1E7F0,0x1E7FE}, {0x1E800,0x1E8C4},
    {0x1E900,0x1E943}, {0x1E94B,0x1E94B}, {0x1EE00,0x1EE03}, {0x1EE05,0x1EE1F}, {0x1EE21,0x1EE22}, {0x1EE24,0x1EE24},
    {0x1EE27,0x1EE27}, {0x1EE29,0x1EE32}, {0x1EE34,0x1EE37}, {0x1EE39,0x1EE39}, {0x1EE3B,0x1EE3B}, {0x1EE42,0x1EE42},
    {0x1EE47,0x1EE47}, {0x1EE49,0x1EE49}, {0x1EE4B,0x1EE4B}, {0x1EE4D,0x1EE4F}, {0x1EE51,0x1EE52}, {0x1EE54,0x1EE54},
    {0x1EE57,0x1EE57}, {0x1EE59,0x1EE59}, {0x1EE5B,0x1EE5B}, {0x1EE5D,0x1EE5D}, {0x1EE5F,0x1EE5F}, {0x1EE61,0x1EE62},
    {0x1EE64,0x1EE64}, {0x1EE67,0x1EE6A}, {0x1EE6C,0x1EE72}, {0x1EE74,0x1EE77}, {0x1EE79,0x1EE7C}, {0x1EE7E,0x1EE7E},
    {0x1EE80,0x1EE89}, {0x1EE8B,0x1EE9B}, {0x1EEA1,0x1EEA3}, {0x1EEA5,0x1EEA9}, {0x1EEAB,0x1EEBB}, {0x20000,0x2A6DF},
    {0x2A700,0x2B738}, {0x2B740,0x2B81D}, {0x2B820,0x2CEA1}, {0x2CEB0,0x2EBE0}, {0x2F800,0x2FA1D}, {0x30000,0x3134A},
};
static const uint32_t cuset__g2_numbers[][2] = {
    {0x30,0x39}, {0xB2,0xB3}, {0xB9,0xB9}, {0xBC,0xBE}, {0x660,0x669}, {0x6F0,0x6F9}, {0x7C0,0x7C9}, {0x966,0x96F},
    {0x9E6,0x9EF}, {0x9F4,0x9F9}, {0xA66,0xA6F}, {0xAE6,0xAEF}, {0xB66,0xB6F}, {0xB72,0xB77}, {0xBE6,0xBF2},
    {0xC66,0xC6F}, {0xC78,0xC7E}, {0xCE6,0xCEF}, {0xD58,0xD5E}, {0xD66,0xD78}, {0xDE6,0xDEF}, {0xE50,0xE59},
    {0xED0,0xED9}, {0xF20,0xF33}, {0x1040,0x1049}, {0x1090,0x1099}, {0x1369,0x137C}, {0x16EE,0x16F0}, {0x17E0,0x17E9},
    {0x17F0,0x17F9}, {0x1810,0x1819}, {0x1946,0x194F}, {0x19D0,0x19DA}, {0x1A80,0x1A89}, {0x1A90,0x1A99},
    {0x1B50,0x1B59}, {0x1BB0,0x1BB9}, {0x1C40,0x1C49}, {0x1C50,0x1C59}, {0x2070,0x2070}, {0x2074,0x2079},
    {0x2080,0x2089}, {0x2150,0x2182}, {0x2185,0x2189}, {0x2460,0x249B}, {0x24EA,0x24FF}, {0x2776,0x2793},
    {0x2CFD,0x2CFD}, {0x3007,0x3007}, {0x3021,0x3029}, {0x3038,0x303A}, {0x3192,0x3195}, {0x3220,0x3229},
    {0x3248,0x324F}, {0x3251,0x325F}, {0x3280,0x3289}, {0x32B1,0x32BF}, {0xA620,0xA629}, {0xA6E6,0xA6EF},
    {0xA830,0xA835}, {0xA8D0,0xA8D9}, {0xA900,0xA909}, {0xA9D0,0xA9D9}, {0xA9F0,0xA9F9}, {0xAA50,0xAA59},
    {0xABF0,0xABF9}, {0xFF10,0xFF19}, {0x10107,0x10133}, {0x10140,0x10178}, {0x1018A,0x1018B}, {0x102E1,0x102FB},
    {0x10320,0x10323}, {0x10341,0x10341}, {0x1034A,0x1034A}, {0x103D1,0x103D5}, {0x104A0,0x104A9}, {0x10858,0x1085F},
    {0x10879,0x1087F}, {0x108A7,0x108AF}, {0x108FB,0x108FF}, {0x10916,0x1091B}, {0x109BC,0x109BD}, {0x109C0,0x109CF},
    {0x109D2,0x109FF}, {0x10A40,0x10A48}, {0x10A7D,0x10A7E}, {0x10A9D,0x10A9F}, {0x10AEB,0x10AEF}, {0x10B58,0x10B5F},
    {0x10B78,0x10B7F}, {0x10BA9,0x10BAF}, {0x10CFA,0x10CFF}, {0x10D30,0x10D39}, {0x10E60,0x10E7E}, {0x10F1D,0x10F26},
    {0x10F51,0x10F54}, {0x10FC5,0x10FCB}, {0x11052,0x1106F}, {0x110F0,0x110F9}, {0x11136,0x1113F}, {0x111D0,0x111D9},
    {0x111E1,0x111F4}, {0x112F0,0x112F9}, {0x11450,0x11459}, {0x114D0,0x114D9}, {0x11650,0x11659}, {0x116C0,0x116C9},
    {0x11730,0x1173B}, {0x118E0,0x118F2}, {0x11950,0x11959}, {0x11C50,0x11C6C}, {0x11D50,0x11D59}, {0x11DA0,0x11DA9},
    {0x11FC0,0x11FD4}, {0x12400,0x1246E}, {0x16A60,0x16A69}, {0x16AC0,0x16AC9}, {0x16B50,0x16B59}, {0x16B5B,0x16B61},
    {0x16E80,0x16E96}, {0x1D2E0,0x1D2F3}, {0x1D360,0x1D378}, {0x1D7CE,0x1D7FF}, {0x1E140,0x1E149}, {0x1E2F0,0x1E2F9},
    {0x1E8C7,0x1E8CF}, {0x1E950,0x1E959}, {0x1EC71,0x1ECAB}, {0x1ECAD,0x1ECAF}, {0x1ECB1,0x1ECB4}, {0x1ED01,0x1ED2D},
    {0x1ED2F,0x1ED3D}, {0x1F100,0x1F10C}, {0x1FBF0,0x1FBF9},
};
#define CUSET__G2_NLETTERS (int)(sizeof cuset__g2_letters / sizeof cuset__g2_letters[0])
#define CUSET__G2_NNUMBERS (int)(sizeof cuset__g2_numbers / sizeof cuset__g2_numbers[0])

static int cuset__g2_in(const uint32_t (*r)[2], int n, uint32_t c) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < r[mid][0]) hi = mid - 1;
        else if (c > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

static int cuset__g2_space(uint32_t c) { // Unicode White_Space
    return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The character at s (n > 0 bytes left): its length, and its class in *cls. Bytes that do
// not start a valid UTF-8 sequence are one "other" character each.
enum { CUSET__G2_SPACE, CUSET__G2_LETTER, CUSET__G2_NUMBER, CUSET__G2_OTHER };
static int cuset__g2_char(const unsigned char *s, size_t n, int *cls) {
    uint32_t c = s[0];
    int len = 1;
    if (c >= 0xC2 && c <= 0xF4) {
        int need = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        uint32_t v = c & (0x7F >> need);
        int ok = (size_t)need <= n;
        for (int i = 1; ok && i < need; i++) ok = (s[i] & 0xC0) == 0x80, v = v << 6 | (s[i] & 0x3F);
        if (ok && need == 3 && (v < 0x800 || (v >= 0xD800 && v < 0xE000))) ok = 0;
        if (ok && need == 4 && (v < 0x10000 || v > 0x10FFFF)) ok = 0;
        if (ok) { c = v; len = need; }
        else c = 0xFFFFFFFF;
    } else if (c >= 0x80) {
        c = 0xFFFFFFFF;
    }
    *cls = cuset__g2_space(c) ? CUSET__G2_SPACE
         : cuset__g2_in(cuset__g2_letters, CUSET__G2_NLETTERS, c) ? CUSET__G2_LETTER
         : cuset__g2_in(cuset__g2_numbers, CUSET__G2_NNUMBERS, c) ? CUSET__G2_NUMBER : CUSET__G2_OTHER;
    return len;
}

// The end of the piece of GPT-2's regex that starts at s[i], i < n:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
static size_t cuset__g2_piece_end(const unsigned char *s, size_t n, size_t i) {
    if (s[i] == '\'' && i + 1 < n) {
        if (strchr("stmd", s[i + 1]) && s[i + 1]) return i + 2;
        if (i + 2 < n && (!memcmp(s + i + 1, "re", 2) || !memcmp(s + i + 1, "ve", 2) || !memcmp(s + i + 1, "ll", 2)))
            return i + 3;
    }
    int cls, k;
    size_t j = i + (size_t)cuset__g2_char(s + i, n - i, &cls);
    if (s[i] == ' ' && j < n) { // " ?" before a letter, number or other run
        size_t len = (size_t)cuset__g2_char(s + j, n - j, &k);
        if (k != CUSET__G2_SPACE) { cls = k; j += len; }
    }
    if (cls == CUSET__G2_SPACE) {
        size_t last = i; // where the run's last character starts
        while (j < n) {
            size_t len = (size_t)cuset__g2_char(s + j, n - j, &k);
            if (k != CUSET__G2_SPACE) break;
            last = j;
            j += len;
        }
        if (j == n) return j;        // \s+(?!\S) at the end
        return last > i ? last : j;  // \s+(?!\S) gives back the last space; else \s+, one character
    }
    while (j < n) {
        size_t len = (size_t)cuset__g2_char(s + j, n - j, &k);
        if (k != cls) break;
        j += len;
    }
    return j;
}

// GPT-2's byte <-> character map: printable Latin-1 bytes are themselves, the other 68
// bytes are U+0100 onwards in byte order, so every token is a printable string.
static uint32_t cuset__g2_byte_char(int b) {
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return (uint32_t)b;
    int k = 0;
    for (int x = 0; x < b; x++) k += !((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF));
    return 256u + (uint32_t)k;
}

// Appends the byte-level string of bytes b[0..n) to the stb_ds array *out.
static void cuset__g2_to_chars(char **out, const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++) cuset__g2_put_utf8(out, cuset__g2_byte_char(b[i]));
}

// to_byte[c] = 1 + the byte of character c (c < 324), 0 for the other characters.
static void cuset__g2_char_table(int to_byte[324]) {
    memset(to_byte, 0, 324 * sizeof(int));
    for (int b = 0; b < 256; b++) to_byte[cuset__g2_byte_char(b)] = b + 1;
}

// Converts a byte-level string (UTF-8, NUL-terminated) to bytes; -1 at a character outside
// the 256 (its code point in *bad).
static int cuset__g2_from_chars(const char *s, const int to_byte[324], unsigned char **out, uint32_t *bad) {
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        uint32_t c = *u;
        int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (len > 1) {
            c &= 0x7F >> len;
            for (int i = 1; i < len; i++) c = c << 6 | (u[i] & 0x3F);
        }
        if (c >= 324 || !to_byte[c]) { *bad = c; return -1; }
        arrput(*out, (unsigned char)(to_byte[c] - 1));
        u += len;
    }
    return 0;
}

// ---- the GPT-2 tokenizer: vocabulary, merges, encode, decode ---------------------------------

#define CUSET__G2_EMPTY (~0ULL)
static size_t cuset__g2_slot(uint64_t key, int bits) { return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits)); }

// The rule merging (a, b), or -1.
static int cuset__g2_rule(const CusetGpt2Tok *tk, int a, int b) {
    if (!tk->pair_bits) return -1;
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t mask = ((size_t)1 << tk->pair_bits) - 1;
    for (size_t h = cuset__g2_slot(key, tk->pair_bits);; h = (h + 1) & mask) {
        if (tk->pair_key[h] == key) return tk->pair_rule[h];
        if (tk->pair_key[h] == CUSET__G2_EMPTY) return -1;
    }
}

// Builds the lookup of tk->rules (a pair met twice keeps its first rule).
static void cuset__g2_index(CusetGpt2Tok *tk) {
    int n = (int)(arrlen(tk->rules) / 4);
    tk->pair_bits = 4;
    while ((1 << tk->pair_bits) < 2 * n) tk->pair_bits++;
    size_t slots = (size_t)1 << tk->pair_bits, mask = slots - 1;
    arrsetlen(tk->pair_key, slots);
    arrsetlen(tk->pair_rule, slots);
    memset(tk->pair_key, 0xff, slots * sizeof *tk->pair_key);
    for (int r = 0; r < n; r++) {
        uint64_t key = (uint64_t)(uint32_t)tk->rules[4 * r] << 32 | (uint32_t)tk->rules[4 * r + 1];
        size_t h = cuset__g2_slot(key, tk->pair_bits);
        while (tk->pair_key[h] != CUSET__G2_EMPTY && tk->pair_key[h] != key) h = (h + 1) & mask;
        if (tk->pair_key[h] == key) continue;
        tk->pair_key[h] = key;
        tk->pair_rule[h] = r;
    }
}

void cuset_gpt2_tok_free(CusetGpt2Tok *tk) {
    arrfree(tk->bytes); arrfree(tk->offset); arrfree(tk->added); arrfree(tk->rules);
    arrfree(tk->pair_key); arrfree(tk->pair_rule);
    memset(tk, 0, sizeof *tk);
}

static const unsigned char *cuset__g2_tok(const CusetGpt2Tok *tk, int id, size_t *len) {
    *len = tk->offset[id + 1] - tk->offset[id];
    return tk->bytes + tk->offset[id];
}

// Checks a freshly filled vocabulary (bytes, offset, added) and finds the byte ids and
// <|endoftext|>. Every byte needs a token of its own.
static int cuset__g2_finish_vocab(CusetGpt2Tok *tk, const char *where, char *err, size_t errlen) {
    tk->vocab_size = (int)arrlen(tk->added);
    for (int b = 0; b < 256; b++) tk->byte_id[b] = -1;
    tk->eot = -1;
    for (int id = tk->vocab_size - 1; id >= 0; id--) {
        size_t len;
        const unsigned char *p = cuset__g2_tok(tk, id, &len);
        if (len == 1 && !tk->added[id]) tk->byte_id[p[0]] = id;
        if (len == 13 && !memcmp(p, "<|endoftext|>", 13)) { tk->eot = id; tk->added[id] = 1; }
    }
    for (int b = 0; b < 256; b++)
        if (tk->byte_id[b] < 0)
            return cuset__g2_err(err, errlen, "%s: no token for byte 0x%02x: a byte-level BPE needs all 256 bytes "
                                 "(train it with the ByteLevel alphabet as initial_alphabet)", where, b);
    return 0;
}

static void cuset__g2_piece(const CusetGpt2Tok *tk, const unsigned char *s, size_t n, int **ids, int **scratch) {
    arrsetlen(*scratch, 2 * n);
    int *t = *scratch, *r = *scratch + n; // tokens, and the rule of each adjacent pair
    for (size_t i = 0; i < n; i++) t[i] = tk->byte_id[s[i]];
    for (size_t i = 0; i + 1 < n; i++) r[i] = cuset__g2_rule(tk, t[i], t[i + 1]);
#define CUSET__G2_RANK(x) ((x) < 0 ? INT32_MAX : tk->rules[4 * (x) + 2])
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++) if (CUSET__G2_RANK(r[i]) < CUSET__G2_RANK(r[best])) best = i;
        if (r[best] < 0) break;
        t[best] = tk->rules[4 * r[best] + 3];
        for (size_t i = best + 1; i + 1 < n; i++) { t[i] = t[i + 1]; r[i - 1] = r[i]; }
        n--;
        if (best > 0) r[best - 1] = cuset__g2_rule(tk, t[best - 1], t[best]);
        if (best + 1 < n) r[best] = cuset__g2_rule(tk, t[best], t[best + 1]);
    }
#undef CUSET__G2_RANK
    memcpy(arraddnptr(*ids, n), t, n * sizeof *t);
}

size_t cuset_gpt2_tok_encode(const CusetGpt2Tok *tk, const char *s, size_t n, int **ids) {
    const unsigned char *u = (const unsigned char *)s;
    size_t before = arrlenu(*ids);
    int *scratch = NULL;
    for (size_t i = 0, end; i < n; i = end) {
        end = cuset__g2_piece_end(u, n, i);
        cuset__g2_piece(tk, u + i, end - i, ids, &scratch);
    }
    arrfree(scratch);
    return arrlenu(*ids) - before;
}

size_t cuset_gpt2_tok_decode(const CusetGpt2Tok *tk, const int *ids, size_t n, char **out) {
    size_t before = arrlenu(*out);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tk->vocab_size) continue;
        size_t len;
        const unsigned char *p = cuset__g2_tok(tk, ids[i], &len);
        if (len) memcpy(arraddnptr(*out, len), p, len);
    }
    return arrlenu(*out) - before;
}

// ---- loading tokenizers ------------------------------------------------------------------------

typedef struct { char *key; int value; } cuset__g2_strmap; // stb_ds string map: token text -> id

// Fills tk's vocabulary from the JSON object `vocab` (text -> id) and the array `added`
// (tokenizer.json's added_tokens, or -1); *map receives text -> id for the merges.
static int cuset__g2_vocab(CusetGpt2Tok *tk, const cuset__g2_json *j, int vocab, int added, cuset__g2_strmap **map,
                           const char *where, char *err, size_t errlen) {
    if (vocab < 0 || j->n[vocab].type != CUSET__J_OBJ) return cuset__g2_err(err, errlen, "%s: no vocabulary object", where);
    int V = 0;
    const char **text = NULL; // stb_ds, by id
    unsigned char *is_added = NULL;
    for (int pass = 0; pass < 2; pass++) { // the vocabulary, then the added tokens
        int list = pass ? added : vocab;
        if (list < 0) continue;
        for (int c = list + 1; c < j->n[list].end; c = j->n[c].end) {
            int idn = pass ? cuset__g2_jget(j, c, "id") : c;
            const char *s = pass ? cuset__g2_jstr(j, cuset__g2_jget(j, c, "content")) : j->text + j->n[c].key;
            double id = idn >= 0 && j->n[idn].type == CUSET__J_NUM ? j->n[idn].num : -1;
            if (!s || id < 0 || id >= CUSET_TOK_MAX_VOCAB || id != (int)id) {
                arrfree(text); arrfree(is_added);
                return cuset__g2_err(err, errlen, "%s: %s entry \"%s\" has no valid id", where, pass ? "added token" : "vocabulary",
                                     s ? s : "?");
            }
            while (V <= (int)id) { arrput(text, NULL); arrput(is_added, 0); V++; }
            if (text[(int)id] && !pass) {
                int d = (int)id;
                arrfree(text); arrfree(is_added);
                return cuset__g2_err(err, errlen, "%s: id %d is given to two vocabulary entries", where, d);
            }
            text[(int)id] = s;
            is_added[(int)id] |= (unsigned char)pass;
            if (!pass) shput(*map, (char *)s, (int)id);
        }
    }
    int rc = 0, to_byte[324];
    cuset__g2_char_table(to_byte);
    arrput(tk->offset, 0);
    for (int id = 0; id < V && !rc; id++) {
        uint32_t bad;
        if (!text[id]) rc = cuset__g2_err(err, errlen, "%s: no token has id %d (ids must be 0..%d without gaps)", where, id, V - 1);
        else if (is_added[id]) memcpy(arraddnptr(tk->bytes, strlen(text[id])), text[id], strlen(text[id]));
        else if (cuset__g2_from_chars(text[id], to_byte, &tk->bytes, &bad) != 0)
            rc = cuset__g2_err(err, errlen, "%s: vocabulary entry %d \"%s\" is not byte-level (character U+%04X): not a "
                               "GPT-2-style byte-level BPE", where, id, text[id], bad);
        arrput(tk->offset, (unsigned)arrlenu(tk->bytes));
        arrput(tk->added, is_added[id]);
    }
    arrfree(text); arrfree(is_added);
    return rc ? rc : cuset__g2_finish_vocab(tk, where, err, errlen);
}

// Appends the merge of the tokens with texts a and b as rule `rank`.
static int cuset__g2_merge(CusetGpt2Tok *tk, cuset__g2_strmap *map, const char *a, const char *b, int rank,
                           const char *where, char *err, size_t errlen) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s", a, b);
    int ia = (int)shgeti(map, (char *)a), ib = (int)shgeti(map, (char *)b), im = (int)shgeti(map, buf);
    if (ia < 0 || ib < 0 || im < 0)
        return cuset__g2_err(err, errlen, "%s: merge %d (\"%s\" \"%s\") names a token that is not in the vocabulary", where,
                             rank, a, b);
    int r[4] = {map[ia].value, map[ib].value, rank, map[im].value};
    memcpy(arraddnptr(tk->rules, 4), r, sizeof r);
    return 0;
}

// Reads tokenizer.json: model BPE, pre_tokenizer ByteLevel (GPT-2's regex, no prefix space),
// no normalizer.
static int cuset__g2_load_json(CusetGpt2Tok *tk, const char *path, char *err, size_t errlen) {
    cuset__g2_file f;
    cuset__g2_json j;
    if (cuset__g2_map(path, &f, err, errlen) != 0) return -1;
    int rc = cuset__g2_json_parse(&j, (const char *)f.data, f.size, path, err, errlen);
    cuset__g2_unmap(&f);
    if (rc != 0) return -1;
    int model = cuset__g2_jget(&j, 0, "model"), pre = cuset__g2_jget(&j, 0, "pre_tokenizer");
    int norm = cuset__g2_jget(&j, 0, "normalizer"), ps = cuset__g2_jget(&j, pre, "add_prefix_space");
    int re = cuset__g2_jget(&j, pre, "use_regex"), merges = cuset__g2_jget(&j, model, "merges");
    const char *mtype = cuset__g2_jstr(&j, cuset__g2_jget(&j, model, "type"));
    const char *ptype = cuset__g2_jstr(&j, cuset__g2_jget(&j, pre, "type"));
    const char *sub = cuset__g2_jstr(&j, cuset__g2_jget(&j, model, "continuing_subword_prefix"));
    const char *eow = cuset__g2_jstr(&j, cuset__g2_jget(&j, model, "end_of_word_suffix"));
    char why[256] = "";
    if (model < 0 || (mtype && strcmp(mtype, "BPE")) || merges < 0 || j.n[merges].type != CUSET__J_ARR)
        snprintf(why, sizeof why, "model is not BPE with a merges list (type %s)", mtype ? mtype : "?");
    else if (norm >= 0 && j.n[norm].type != CUSET__J_NULL) snprintf(why, sizeof why, "a normalizer is not supported");
    else if (!ptype || strcmp(ptype, "ByteLevel"))
        snprintf(why, sizeof why, "pre_tokenizer %s is not supported (GPT-2's ByteLevel only)", ptype ? ptype : "null");
    else if ((ps >= 0 && j.n[ps].num) || (re >= 0 && !j.n[re].num))
        snprintf(why, sizeof why, "ByteLevel with add_prefix_space true or use_regex false is not supported");
    else if ((sub && sub[0]) || (eow && eow[0]))
        snprintf(why, sizeof why, "continuing_subword_prefix or end_of_word_suffix is not supported");
    if (why[0]) { cuset__g2_json_free(&j); return cuset__g2_err(err, errlen, "%s: %s", path, why); }
    cuset__g2_strmap *map = NULL;
    rc = cuset__g2_vocab(tk, &j, cuset__g2_jget(&j, model, "vocab"), cuset__g2_jget(&j, 0, "added_tokens"), &map, path,
                         err, errlen);
    int rank = 0;
    for (int c = merges + 1; c < j.n[merges].end && !rc; c = j.n[c].end, rank++) {
        const char *s = cuset__g2_jstr(&j, c), *a = NULL, *b = NULL;
        char pair[1024];
        if (s && strlen(s) < sizeof pair && strchr(s, ' ')) { // "a b"
            strcpy(pair, s);
            *strchr(pair, ' ') = 0;
            a = pair;
            b = pair + strlen(pair) + 1;
        } else if (j.n[c].type == CUSET__J_ARR && cuset__g2_jcount(&j, c) == 2) { // ["a", "b"]
            a = cuset__g2_jstr(&j, c + 1);
            b = cuset__g2_jstr(&j, j.n[c + 1].end);
        }
        if (!a || !b) rc = cuset__g2_err(err, errlen, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", path, rank);
        else rc = cuset__g2_merge(tk, map, a, b, rank, path, err, errlen);
    }
    shfree(map);
    cuset__g2_json_free(&j);
    return rc;
}

// Reads vocab.json + merges.txt (GPT-2's original files).
static int cuset__g2_load_vocab_merges(CusetGpt2Tok *tk, const char *dir, char *err, size_t errlen) {
    char vpath[4096], mpath[4096];
    snprintf(vpath, sizeof vpath, "%s/vocab.json", dir);
    snprintf(mpath, sizeof mpath, "%s/merges.txt", dir);
    cuset__g2_file vf, mf;
    cuset__g2_json j;
    if (cuset__g2_map(vpath, &vf, err, errlen) != 0) return -1;
    int rc = cuset__g2_json_parse(&j, (const char *)vf.data, vf.size, vpath, err, errlen);
    cuset__g2_unmap(&vf);
    if (rc != 0) return -1;
    if (cuset__g2_map(mpath, &mf, err, errlen) != 0) { cuset__g2_json_free(&j); return -1; }
    cuset__g2_strmap *map = NULL;
    rc = cuset__g2_vocab(tk, &j, 0, -1, &map, vpath, err, errlen);
    const char *p = (const char *)mf.data, *e = p + mf.size;
    for (int rank = 0, line = 1; p < e && !rc; line++) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        if (!nl) nl = e;
        char buf[1024];
        size_t n = (size_t)(nl - p);
        if (n && p[n - 1] == '\r') n--;
        if (n >= sizeof buf) n = sizeof buf - 1;
        memcpy(buf, p, n);
        buf[n] = 0;
        p = nl + 1;
        if (!n || !strncmp(buf, "#version", 8)) continue;
        char *sp = strchr(buf, ' ');
        if (!sp || strchr(sp + 1, ' ')) { rc = cuset__g2_err(err, errlen, "%s:%d: not \"a b\"", mpath, line); break; }
        *sp = 0;
        rc = cuset__g2_merge(tk, map, buf, sp + 1, rank++, mpath, err, errlen);
    }
    cuset__g2_unmap(&mf);
    shfree(map);
    cuset__g2_json_free(&j);
    return rc;
}

static const unsigned char *cuset__g2_sorted_base; // for qsort: the vocabulary being sorted
static const unsigned *cuset__g2_sorted_off;
static int cuset__g2_by_bytes(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    size_t lx = cuset__g2_sorted_off[x + 1] - cuset__g2_sorted_off[x], ly = cuset__g2_sorted_off[y + 1] - cuset__g2_sorted_off[y];
    int c = memcmp(cuset__g2_sorted_base + cuset__g2_sorted_off[x], cuset__g2_sorted_base + cuset__g2_sorted_off[y], lx < ly ? lx : ly);
    return c ? c : lx != ly ? (lx < ly ? -1 : 1) : (x > y) - (x < y);
}

// The lowest id whose bytes are p[0..n), among ids sorted by bytes; -1 if none.
static int cuset__g2_find(const CusetGpt2Tok *tk, const int *sorted, const unsigned char *p, size_t n) {
    int lo = 0, hi = tk->vocab_size; // first id not below p
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        size_t len;
        const unsigned char *q = cuset__g2_tok(tk, sorted[mid], &len);
        int c = memcmp(q, p, len < n ? len : n);
        if (c < 0 || (c == 0 && len < n)) lo = mid + 1;
        else hi = mid;
    }
    size_t len;
    if (lo == tk->vocab_size) return -1;
    const unsigned char *q = cuset__g2_tok(tk, sorted[lo], &len);
    return len == n && !memcmp(q, p, n) ? sorted[lo] : -1;
}

// llm.c's tokenizer file: 256 uint32 (magic 20240328, version 1 or 2, vocab size, version 2:
// the <|endoftext|> id), then per token a length byte and the bytes. It has no merges: as in
// tiktoken, joining tokens a and b has the rank of the token a+b (GPT-2's ids are its merge
// order), so every split of every token into two tokens is a rule.
static int cuset__g2_load_llmc_tok(CusetGpt2Tok *tk, const char *path, char *err, size_t errlen) {
    cuset__g2_file f;
    if (cuset__g2_map(path, &f, err, errlen) != 0) return -1;
    uint32_t h[256];
    char why[256] = "";
    size_t at = sizeof h;
    if (f.size < sizeof h) snprintf(why, sizeof why, "%zu bytes, shorter than the 1024-byte header", f.size);
    else if (memcpy(h, f.data, sizeof h), h[0] != 20240328) snprintf(why, sizeof why, "not a tokenizer.json, nor an llm.c tokenizer (magic %u)", h[0]);
    else if (h[1] != 1 && h[1] != 2) snprintf(why, sizeof why, "llm.c tokenizer version %u (1 and 2 are read)", h[1]);
    else if (h[2] < 256 || h[2] > CUSET_TOK_MAX_VOCAB) snprintf(why, sizeof why, "vocabulary size %u", h[2]);
    arrput(tk->offset, 0);
    for (uint32_t id = 0; !why[0] && id < h[2]; id++) {
        size_t n = at < f.size ? f.data[at] : 0;
        if (!n || at + 1 + n > f.size) { snprintf(why, sizeof why, "truncated or empty token at id %u", id); break; }
        memcpy(arraddnptr(tk->bytes, n), f.data + at + 1, n);
        arrput(tk->offset, (unsigned)arrlenu(tk->bytes));
        arrput(tk->added, 0);
        at += 1 + n;
    }
    if (!why[0] && at != f.size) snprintf(why, sizeof why, "%zu trailing bytes", f.size - at);
    cuset__g2_unmap(&f);
    if (why[0]) return cuset__g2_err(err, errlen, "%s: %s", path, why);
    if (cuset__g2_finish_vocab(tk, path, err, errlen) != 0) return -1;
    int *sorted = (int *)malloc((size_t)tk->vocab_size * sizeof(int));
    for (int i = 0; i < tk->vocab_size; i++) sorted[i] = i;
    cuset__g2_sorted_base = tk->bytes;
    cuset__g2_sorted_off = tk->offset;
    qsort(sorted, (size_t)tk->vocab_size, sizeof(int), cuset__g2_by_bytes);
    for (int id = 0; id < tk->vocab_size; id++) {
        size_t n;
        const unsigned char *p = cuset__g2_tok(tk, id, &n);
        if (tk->added[id]) continue;
        for (size_t s = 1; s < n; s++) {
            int a = cuset__g2_find(tk, sorted, p, s), b = cuset__g2_find(tk, sorted, p + s, n - s);
            if (a < 0 || b < 0 || tk->added[a] || tk->added[b]) continue;
            int r[4] = {a, b, id, id};
            memcpy(arraddnptr(tk->rules, 4), r, sizeof r);
        }
    }
    free(sorted);
    return 0;
}

int cuset_gpt2_tok_load(CusetGpt2Tok *tk, const char *path, char *err, size_t errlen) {
    CusetGpt2Tok t = {0};
    char p[4096];
    int rc;
    if (cuset__g2_is_dir(path)) {
        snprintf(p, sizeof p, "%s/tokenizer.json", path);
        rc = cuset__g2_exists(p) ? cuset__g2_load_json(&t, p, err, errlen) : cuset__g2_load_vocab_merges(&t, path, err, errlen);
    } else {
        FILE *f = fopen(path, "rb");
        int c = f ? fgetc(f) : EOF;
        if (f) fclose(f);
        rc = c == '{' ? cuset__g2_load_json(&t, path, err, errlen) : cuset__g2_load_llmc_tok(&t, path, err, errlen);
    }
    if (rc != 0) { cuset_gpt2_tok_free(&t); return -1; }
    cuset__g2_index(&t);
    cuset_gpt2_tok_free(tk);
    *tk = t;
    return 0;
}

// ---- the tokenizer in a checkpoint -------------------------------------------------------------
// Little-endian: "CUSETBPE", u32 version 1, u32 vocab size V, i32 <|endoftext|> id, u32 rules
// R; per token a u8 added flag, a u32 length and the bytes; R rules of 4 i32 (left, right,
// rank, merged id).

int cuset_gpt2_tok_kind(const unsigned char *buf, size_t len) {
    if (len >= 8 && !memcmp(buf, "CUSETTOK", 8)) return CUSET_TOKKIND_CUSET;
    if (len >= 8 && !memcmp(buf, "CUSETBPE", 8)) return CUSET_TOKKIND_GPT2;
    return CUSET_TOKKIND_NONE;
}

static void cuset__g2_put32(unsigned char **buf, uint32_t v) {
    unsigned char *p = arraddnptr(*buf, 4);
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> 8 * i);
}

size_t cuset_gpt2_tok_save(const CusetGpt2Tok *tk, unsigned char **buf) {
    size_t before = arrlenu(*buf);
    memcpy(arraddnptr(*buf, 8), "CUSETBPE", 8);
    cuset__g2_put32(buf, 1);
    cuset__g2_put32(buf, (uint32_t)tk->vocab_size);
    cuset__g2_put32(buf, (uint32_t)tk->eot);
    cuset__g2_put32(buf, (uint32_t)(arrlen(tk->rules) / 4));
    for (int id = 0; id < tk->vocab_size; id++) {
        size_t n;
        const unsigned char *p = cuset__g2_tok(tk, id, &n);
        arrput(*buf, tk->added[id]);
        cuset__g2_put32(buf, (uint32_t)n);
        memcpy(arraddnptr(*buf, n), p, n);
    }
    for (ptrdiff_t i = 0; i < arrlen(tk->rules); i++) cuset__g2_put32(buf, (uint32_t)tk->rules[i]);
    return arrlenu(*buf) - before;
}

int cuset_gpt2_tok_load_bytes(CusetGpt2Tok *tk, const unsigned char *buf, size_t len, char *err, size_t errlen) {
    CusetGpt2Tok t = {0};
    size_t at = 24;
    uint32_t h[4] = {0};
    const char *why = NULL;
    if (len < 24 || memcmp(buf, "CUSETBPE", 8)) why = "not a GPT-2 tokenizer (magic is not CUSETBPE)";
    else for (int i = 0; i < 4; i++) h[i] = (uint32_t)buf[8 + 4 * i] | (uint32_t)buf[9 + 4 * i] << 8 |
                                        (uint32_t)buf[10 + 4 * i] << 16 | (uint32_t)buf[11 + 4 * i] << 24;
    if (!why && (h[0] != 1 || h[1] < 256 || h[1] > CUSET_TOK_MAX_VOCAB || h[3] > (1u << 26)))
        why = "bad header (version, vocabulary size or rule count)";
    arrput(t.offset, 0);
    for (uint32_t id = 0; !why && id < h[1]; id++) {
        uint32_t n;
        if (len - at < 5) { why = "truncated vocabulary"; break; }
        memcpy(&n, buf + at + 1, 4);
        if (buf[at] > 1 || n > len - at - 5) { why = "bad token entry"; break; }
        arrput(t.added, buf[at]);
        memcpy(arraddnptr(t.bytes, n), buf + at + 5, n);
        arrput(t.offset, (unsigned)arrlenu(t.bytes));
        at += 5 + n;
    }
    if (!why && len - at != 16 * (size_t)h[3]) why = "rule count does not match the size";
    for (uint32_t i = 0; !why && i < 4 * h[3]; i++) {
        int32_t v;
        memcpy(&v, buf + at + 4 * (size_t)i, 4);
        if (v < 0 || (i % 4 != 2 && v >= (int32_t)h[1])) why = "a merge rule names an id outside the vocabulary";
        arrput(t.rules, v);
    }
    char e2[256];
    if (!why && cuset__g2_finish_vocab(&t, "checkpoint tokenizer", e2, sizeof e2) != 0) why = e2;
    if (why) {
        cuset__g2_err(err, errlen, "GPT-2 tokenizer: %s", why);
        cuset_gpt2_tok_free(&t);
        return -1;
    }
    cuset__g2_index(&t);
    cuset_gpt2_tok_free(tk);
    *tk = t;
    return 0;
}

int cuset_gpt2_import(const char *path, const char *tok_path, CusetGPT *m, CusetGpt2Tok *tk, char *err, size_t errlen) {
    char def[4096];
    if (!tok_path) {
        const char *slash = strrchr(path, '/');
        if (cuset__g2_is_dir(path)) snprintf(def, sizeof def, "%s", path);
        else snprintf(def, sizeof def, "%.*sgpt2_tokenizer.bin", slash ? (int)(slash - path + 1) : 0, path);
        tok_path = def;
    }
    if (cuset_gpt2_tok_load(tk, tok_path, err, errlen) != 0) return -1;
    if (cuset_gpt2_load_model(path, m, err, errlen) != 0) { cuset_gpt2_tok_free(tk); return -1; }
    if (tk->vocab_size > m->cfg.vocab_size) {
        int tv = tk->vocab_size, mv = m->cfg.vocab_size;
        cuset_gpt2_tok_free(tk);
        cuset_gpt_free(m);
        return cuset__g2_err(err, errlen, "%s: the tokenizer has %d ids but the model %s only %d: they do not belong "
                             "together", tok_path, tv, path, mv);
    }
    return 0;
}

// ---- export: a Hugging Face directory ------------------------------------------------------------

// Writes n bytes to dir/name through a temporary file and a rename.
static int cuset__g2_write(const char *dir, const char *name, const void *data, size_t n, char *err, size_t errlen) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return cuset__g2_err(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
    int ok = fwrite(data, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return cuset__g2_err(err, errlen, "%s: write failed: %s", path, strerror(e));
    }
    return 0;
}

static int cuset__g2_export_weights(const char *dir, const CusetGPT *m, char *err, size_t errlen) {
    const CusetConfig *c = &m->cfg;
    size_t V = c->vocab_size, C = c->n_embd, L = c->n_layer, at = 0;
    char *h = NULL;
    float *data = NULL;
    cuset__g2_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
#define CUSET__G2_ENTRY(name, rows, cols)                                                                            \
    do {                                                                                                             \
        size_t bytes = (rows) * ((cols) ? (cols) : 1) * 4;                                                           \
        cuset__g2_printf(&h, ",\"transformer.%s\":{\"dtype\":\"F32\",\"shape\":[%zu", name, (size_t)(rows));         \
        if (cols) cuset__g2_printf(&h, ",%zu", (size_t)(cols));                                                      \
        cuset__g2_printf(&h, "],\"data_offsets\":[%zu,%zu]}", at, at + bytes);                                      \
        at += bytes;                                                                                                 \
    } while (0)
    CUSET__G2_ENTRY("wte.weight", V, C);
    size_t vc = V * C;
    memcpy(arraddnptr(data, vc), m->params.wte, vc * sizeof(float));
    CUSET__G2_ENTRY("wpe.weight", (size_t)c->max_seq_len, C);
    memcpy(arraddnptr(data, m->tensor_sizes[1]), m->params.wpe, m->tensor_sizes[1] * sizeof(float));
    for (size_t l = 0; l < L; l++)
        for (int k = 0; k < CUSET__G2_NLAYER; k++) {
            int t = cuset__g2_layer[k].tensor;
            size_t in = cuset__g2_layer[k].in * C, out = cuset__g2_layer[k].out * C, n = m->tensor_sizes[t] / L;
            const float *src = ((const float *const *)&m->params)[t] + n * l;
            char name[128];
            snprintf(name, sizeof name, "h.%zu.%s", l, cuset__g2_layer[k].name);
            CUSET__G2_ENTRY(name, in ? in : out, in ? out : 0);
            float *dst = arraddnptr(data, n);
            for (size_t i = 0; i < n; i++) dst[i] = in ? src[(i % out) * in + i / out] : src[i]; // (out,in) -> (in,out)
        }
    CUSET__G2_ENTRY("ln_f.weight", C, 0);
    memcpy(arraddnptr(data, C), m->params.lnfw, C * sizeof(float));
    CUSET__G2_ENTRY("ln_f.bias", C, 0);
    memcpy(arraddnptr(data, C), m->params.lnfb, C * sizeof(float));
#undef CUSET__G2_ENTRY
    arrput(h, '}');
    while (arrlen(h) % 8) arrput(h, ' ');
    size_t hlen = arrlenu(h), total = 8 + hlen + at;
    unsigned char *file = (unsigned char *)malloc(total);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)hlen >> 8 * i);
    memcpy(file + 8, h, hlen);
    memcpy(file + 8 + hlen, data, at);
    int rc = cuset__g2_write(dir, "model.safetensors", file, total, err, errlen);
    free(file);
    arrfree(h);
    arrfree(data);
    return rc;
}

// The project's pre-split (data/tokenizer.h) as one regex for a Split pre-tokenizer: NUL;
// a word, number or punctuation run with or without its leading space, at most 64
// characters; a whitespace run that leaves its last space to a following chunk; a
// whitespace run.
#define CUSET__G2_W "A-Za-z_\\x{80}-\\x{10FFFF}"
#define CUSET__G2_S " \\t\\n\\r\\x0B\\f"
const char cuset_gpt2_cuset_split_regex[] =
    "\\x00"
    "| [" CUSET__G2_W "][0-9" CUSET__G2_W "]{0,62}|[" CUSET__G2_W "][0-9" CUSET__G2_W "]{0,63}"
    "| [0-9][.0-9" CUSET__G2_W "]{0,62}|[0-9][.0-9" CUSET__G2_W "]{0,63}"
    "| [^0-9" CUSET__G2_W CUSET__G2_S "\\x00]{1,63}|[^0-9" CUSET__G2_W CUSET__G2_S "\\x00]{1,64}"
    "|[" CUSET__G2_S "]{1,63}(?= [^" CUSET__G2_S "\\x00])|[" CUSET__G2_S "]{1,64}";
#undef CUSET__G2_W
#undef CUSET__G2_S

static const char *const cuset__g2_cuset_special[3] = {"<|prompt|>", "<|target|>", "<|endoftext|>"};

// tokenizer.json (and tokenizer_config.json) for either tokenizer.
static int cuset__g2_export_tokenizer(const char *dir, const CusetGpt2Tok *gtk, const CusetTokenizer *ctk, int max_len,
                                      char *err, size_t errlen) {
    int V = gtk ? gtk->vocab_size : ctk->vocab_size, eot = gtk ? gtk->eot : CUSET_TOK_EOS;
    char **text = (char **)calloc((size_t)V, sizeof(char *)); // each token's text, NUL-terminated
    int *added = (int *)calloc((size_t)V, sizeof(int));
    cuset__g2_strmap *seen = NULL;
    int rc = 0;
    for (int id = 0; id < V && !rc; id++) {
        size_t n;
        const unsigned char *p = gtk ? cuset__g2_tok(gtk, id, &n) : (const unsigned char *)cuset_tok_bytes(ctk, id, &n);
        added[id] = gtk ? gtk->added[id] : id >= CUSET_TOK_NBYTES && id < CUSET_TOK_FIRST_MERGE;
        if (added[id]) {
            if (!gtk) p = (const unsigned char *)cuset__g2_cuset_special[id - CUSET_TOK_NBYTES], n = strlen((const char *)p);
            memcpy(arraddnptr(text[id], n), p, n);
        } else {
            cuset__g2_to_chars(&text[id], p, n);
        }
        arrput(text[id], 0);
        if (shgeti(seen, text[id]) >= 0)
            rc = cuset__g2_err(err, errlen, "%s: ids %d and %d have the same bytes \"%s\"; tokenizer.json cannot tell them "
                               "apart", dir, shget(seen, text[id]), id, text[id]);
        shput(seen, text[id], id);
    }
    char *j = NULL;
    if (rc) goto done;
    cuset__g2_printf(&j, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[");
    for (int id = 0, first = 1; id < V; id++) {
        if (!added[id]) continue;
        cuset__g2_printf(&j, "%s{\"id\":%d,\"content\":", first ? "" : ",", id);
        cuset__g2_jwrite_str(&j, text[id], strlen(text[id]));
        cuset__g2_printf(&j, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}");
        first = 0;
    }
    cuset__g2_printf(&j, "],\"normalizer\":null,\"pre_tokenizer\":");
    if (gtk) {
        cuset__g2_printf(&j, "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}");
    } else {
        cuset__g2_printf(&j, "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":");
        cuset__g2_jwrite_str(&j, cuset_gpt2_cuset_split_regex, strlen(cuset_gpt2_cuset_split_regex));
        cuset__g2_printf(&j, "},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                         "\"trim_offsets\":false,\"use_regex\":false}]}");
    }
    cuset__g2_printf(&j, ",\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                     "\"trim_offsets\":true,\"use_regex\":true},\"model\":{\"type\":\"BPE\",\"dropout\":null,"
                     "\"unk_token\":null,\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,"
                     "\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":false,\"vocab\":{");
    for (int id = 0; id < V; id++) {
        cuset__g2_jwrite_str(&j, text[id], strlen(text[id]));
        cuset__g2_printf(&j, ":%d%s", id, id + 1 < V ? "," : "");
    }
    cuset__g2_printf(&j, "},\"merges\":[");
    // merges in rank order (rules of equal rank, from llm.c's tokenizer, by their ids)
    int nr = gtk ? (int)(arrlen(gtk->rules) / 4) : V - CUSET_TOK_FIRST_MERGE;
    int64_t *order = (int64_t *)malloc((size_t)(nr ? nr : 1) * sizeof *order);
    for (int r = 0; r < nr; r++) order[r] = gtk ? (int64_t)gtk->rules[4 * r + 2] << 32 | r : r;
    if (gtk) qsort(order, (size_t)nr, sizeof *order, cuset__g2_by_i64);
    for (int k = 0; k < nr; k++) {
        int r = (int)(order[k] & 0xFFFFFFFF);
        int a = gtk ? gtk->rules[4 * r] : ctk->merges[2 * r], b = gtk ? gtk->rules[4 * r + 1] : ctk->merges[2 * r + 1];
        char *pair = NULL;
        cuset__g2_printf(&pair, "%s %s", text[a], text[b]);
        cuset__g2_jwrite_str(&j, pair, arrlenu(pair));
        if (k + 1 < nr) arrput(j, ',');
        arrfree(pair);
    }
    cuset__g2_printf(&j, "]}}\n");
    free(order);
    rc = cuset__g2_write(dir, "tokenizer.json", j, arrlenu(j), err, errlen);
    arrsetlen(j, 0);
    const char *e = eot >= 0 ? text[eot] : "<|endoftext|>";
    cuset__g2_printf(&j, "{\"tokenizer_class\":\"GPT2TokenizerFast\",\"model_max_length\":%d,\"add_prefix_space\":false,"
                     "\"bos_token\":\"%s\",\"eos_token\":\"%s\",\"unk_token\":\"%s\"}\n", max_len, e, e, e);
    if (!rc) rc = cuset__g2_write(dir, "tokenizer_config.json", j, arrlenu(j), err, errlen);
done:
    arrfree(j);
    for (int id = 0; id < V; id++) arrfree(text[id]);
    free(text);
    free(added);
    shfree(seen);
    return rc;
}

int cuset_gpt2_export(const char *dir, const CusetGPT *m, const CusetGpt2Tok *gtk, const CusetTokenizer *ctk,
                      char *err, size_t errlen) {
    const CusetConfig *c = &m->cfg;
    if (!gtk == !ctk) return cuset__g2_err(err, errlen, "export: give exactly one tokenizer");
    int tv = gtk ? gtk->vocab_size : ctk->vocab_size, eot = gtk ? gtk->eot : CUSET_TOK_EOS;
    if (tv > c->vocab_size)
        return cuset__g2_err(err, errlen, "export: the tokenizer has %d ids, the model only %d", tv, c->vocab_size);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return cuset__g2_err(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
    char *j = NULL;
    cuset__g2_printf(&j, "{\"architectures\":[\"GPT2LMHeadModel\"],\"model_type\":\"gpt2\",\"vocab_size\":%d,"
                     "\"n_positions\":%d,\"n_ctx\":%d,\"n_embd\":%d,\"n_layer\":%d,\"n_head\":%d,\"n_inner\":null,"
                     "\"activation_function\":\"gelu_new\",\"layer_norm_epsilon\":1e-05,\"resid_pdrop\":0.0,"
                     "\"embd_pdrop\":0.0,\"attn_pdrop\":0.0,\"initializer_range\":0.02,\"scale_attn_weights\":true,"
                     "\"scale_attn_by_inverse_layer_idx\":false,\"reorder_and_upcast_attn\":false,"
                     "\"tie_word_embeddings\":true,\"use_cache\":true,\"torch_dtype\":\"float32\"",
                     c->vocab_size, c->max_seq_len, c->max_seq_len, c->n_embd, c->n_layer, c->n_head);
    if (eot >= 0) cuset__g2_printf(&j, ",\"bos_token_id\":%d,\"eos_token_id\":%d", eot, eot);
    cuset__g2_printf(&j, "}\n");
    int rc = cuset__g2_write(dir, "config.json", j, arrlenu(j), err, errlen);
    arrfree(j);
    if (!rc) rc = cuset__g2_export_weights(dir, m, err, errlen);
    if (!rc) rc = cuset__g2_export_tokenizer(dir, gtk, ctk, c->max_seq_len, err, errlen);
    return rc;
}

#endif // CUSET_GPT2_IMPLEMENTATION_DONE
#endif // CUSET_GPT2_IMPLEMENTATION
