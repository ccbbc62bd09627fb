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
     AutoTokenizer.from_pretrained. tokenizer.json is a byte-level BPE in our ids (below)
     with the tokenizer's pre-split: GPT-2's ByteLevel, or for the project's own tokenizer a
     Split regex (cuset_gpt2_cuset_split_regex). Import -> export -> import gives the same
     model and tokenizer, bit for bit.

   Tokenizers come in as ours (data/tokenizer.h's CusetTokenizer), with GPT-2's pre-split
   (its regex, in data/tokenizer.h) and the vocabulary in our layout: byte b is id b, the
   specials <|prompt|> <|target|> <|endoftext|> are ids 256-258, merge k makes id 259 + k.
   So a file's ids are permuted (cuset_gpt2_tok_load gives the map) and so are the rows of
   the model's embedding, and every part of this project - data files, the annotator's byte
   offsets, checkpoints, sampling - works unchanged; a checkpoint's tokenizer says which
   pre-split it uses (version 2 of data/tokenizer.h's format). GPT-2's <|endoftext|> ends a
   sample, as CUSET_TOK_EOS does; <|prompt|> and <|target|> are new rows, the mean of the
   embedding at first. Merges come from the merges list (tokenizer.json, merges.txt) or, for
   llm.c's tokenizer file, which has none, from its ids (GPT-2's merge order): each token
   is the merge of the two tokens the merges before it make of its bytes. Text is encoded
   as text: "<|endoftext|>" in it is 13 characters, never the special.

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_GPT2_IMPLEMENTATION
       #include "data/gpt2.h"
   after cuset.h's and data/tokenizer.h's implementations (it uses both). Depends on libc,
   POSIX (mmap, mkdir), stb_ds and data/json.h (JSON documents). */
#ifndef CUSET_GPT2_H
#define CUSET_GPT2_H

#include <stddef.h>
#include <stdint.h>
#include "../cuset.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

// Reads a tokenizer from path - a directory (tokenizer.json, else vocab.json + merges.txt),
// a tokenizer.json file, or an llm.c tokenizer file - as one of ours (data/tokenizer.h) with
// GPT-2's pre-split (or the project's, for a tokenizer.json this file exported): byte b is
// id b, <|prompt|> <|target|> <|endoftext|> are CUSET_TOK_PROMPT, _TARGET, _EOS, merge k
// makes id 259 + k. *perm (malloc'd, *n entries) maps the file's ids to ours. Other added
// tokens, a vocabulary without all 256 bytes, a normalizer, add_prefix_space: refused.
int cuset_gpt2_tok_load(CusetTokenizer *tk, int **perm, int *n, const char *path, char *err, size_t errlen);
// Reads a model in the file's ids: a Hugging Face directory (config.json +
// model.safetensors) or an llm.c .bin file. Allocates m (cuset_gpt_init). 0, or -1 with a
// message naming the file and the tensor or field.
int cuset_gpt2_load_model(const char *path, CusetGPT *m, char *err, size_t errlen);
// 1 when path is a directory (a Hugging Face model, or else nothing) or an llm.c checkpoint.
int cuset_gpt2_recognize(const char *path);
// Model and tokenizer together, in our ids (wte's rows permuted; specials the file lacks
// start as the mean row). tok_path NULL: the directory itself, or gpt2_tokenizer.bin beside
// an llm.c .bin. Refuses a tokenizer with more ids than the model. perm: as above, or NULL.
int cuset_gpt2_import(const char *path, const char *tok_path, CusetGPT *m, CusetTokenizer *tk, int **perm, char *err,
                      size_t errlen);
// Writes a Hugging Face directory (created if missing; each file written to NAME.tmp.PID,
// all renamed once all are written): config.json, model.safetensors (float32),
// tokenizer.json, tokenizer_config.json. 0, or -1 with a message.
int cuset_gpt2_export(const char *dir, const CusetGPT *m, const CusetTokenizer *tk, char *err, size_t errlen);
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

#if !defined(CUSET_IMPLEMENTATION_DONE) || !defined(CUSET_TOKENIZER_IMPLEMENTATION_DONE)
#error "data/gpt2.h: its implementation needs those of cuset.h and data/tokenizer.h before it"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "json.h"

// ---- files ------------------------------------------------------------------------------

// A whole file, read-only, mapped (an empty file: size 0, data a valid empty string).
typedef struct { const unsigned char *data; size_t size; } cuset__g2_file;

static int cuset__g2_map(const char *path, cuset__g2_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return cuset__err(err, errlen, "%s: cannot open: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) { close(fd); return cuset__err(err, errlen, "%s: is a directory", path); }
    f->size = (size_t)st.st_size;
    f->data = (const unsigned char *)""; // an empty file: no mapping, but a pointer to offset
    if (f->size) {
        void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) { close(fd); return cuset__err(err, errlen, "%s: cannot map: %s", path, strerror(errno)); }
        f->data = (const unsigned char *)p;
    }
    close(fd);
    return 0;
}

static void cuset__g2_unmap(cuset__g2_file *f) {
    if (f->size) munmap((void *)f->data, f->size);
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

// ---- JSON --------------------------------------------------------------------------------
// Documents are read with data/json.h; these say which file a failure is in.

// Parses n bytes; on error says where (byte offset) and what, prefixed by name.
// A key or string of the document that holds a NUL byte (\u0000) is refused: the reader
// takes names, types and tokens as C strings, so "gpt2\u0000llama" would pass for "gpt2".
// (No file of a GPT-2 model has one: byte-level BPE spells byte 0 as U+0100.)
static int cuset__g2_json_parse(CusetJDoc *j, const char *s, size_t n, const char *name, char *err, size_t errlen) {
    const char *why;
    size_t at;
    if (cuset_jdoc_parse(j, s, n, &why, &at) != 0)
        return cuset__err(err, errlen, "%s: not valid JSON at byte %zu: %s", name, at, why);
    for (int i = 0; i < j->nnode; i++) {
        const CusetJNode *v = &j->node[i];
        int bad_key = v->key >= 0 && memchr(j->text + v->key, 0, (size_t)v->klen) != NULL;
        if (bad_key || (v->type == CUSET_JSTR && memchr(j->text + v->str, 0, (size_t)v->slen) != NULL)) {
            cuset_jdoc_free(j);
            return cuset__err(err, errlen, "%s: a %s holds a NUL byte (\\u0000): not something GPT-2's files hold", name,
                              bad_key ? "key" : "string");
        }
    }
    return 0;
}

// Parses the JSON file at path, a whole document.
static int cuset__g2_json_file(CusetJDoc *j, const char *path, char *err, size_t errlen) {
    cuset__g2_file f;
    if (cuset__g2_map(path, &f, err, errlen) != 0) return -1;
    int rc = cuset__g2_json_parse(j, (const char *)f.data, f.size, path, err, errlen);
    cuset__g2_unmap(&f);
    return rc;
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

// Appends the formatted text to *out (an stb_ds char array), however long it is.
static void cuset__g2_printf(char **out, const char *fmt, ...) {
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        size_t at = arrlenu(*out);
        arrsetlen(*out, at + (size_t)n + 1); // room for vsnprintf's NUL, then dropped
        vsnprintf(*out + at, (size_t)n + 1, fmt, again);
        arrsetlen(*out, at + (size_t)n);
    }
    va_end(again);
}

// ---- safetensors ---------------------------------------------------------------------------
// An 8-byte little-endian header length N, N bytes of JSON {name: {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data; offsets count from
// the end of the header. Every entry is checked: a known dtype, the size its shape implies,
// inside the file; together they cover the data bytes exactly, without overlap, gap or
// trailing bytes (as the safetensors library requires).

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
    CusetJDoc json;
    cuset__g2_tensor *t; // stb_ds
} cuset__g2_st;

static void cuset__g2_st_close(cuset__g2_st *st) {
    arrfree(st->t);
    cuset_jdoc_free(&st->json);
    cuset__g2_unmap(&st->file);
}

static int cuset__g2_by_begin(const void *a, const void *b) {
    const cuset__g2_tensor *x = (const cuset__g2_tensor *)a, *y = (const cuset__g2_tensor *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
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
        return cuset__err(err, errlen, "%s: truncated or not safetensors: %zu bytes, header length %llu", path, size,
                          (unsigned long long)hlen);
    }
    if (cuset__g2_json_parse(&st->json, (const char *)d + 8, hlen, path, err, errlen) != 0) {
        cuset__g2_unmap(&st->file);
        return -1;
    }
    const CusetJDoc *j = &st->json;
    size_t base = 8 + hlen, avail = size - base;
    char why[256] = "";
    if (j->node[0].type != CUSET_JOBJ) snprintf(why, sizeof why, "the header is not a JSON object");
    for (int c = 1; c < j->node[0].end && !why[0]; c = j->node[c].end) {
        cuset__g2_tensor t = {0};
        t.name = j->text + j->node[c].key;
        if (!strcmp(t.name, "__metadata__")) continue;
        const char *dt = cuset_jdoc_str(j, cuset_jdoc_get(j, c, "dtype", -1));
        int shape = cuset_jdoc_get(j, c, "shape", -1), offs = cuset_jdoc_get(j, c, "data_offsets", -1);
        if (!dt || shape < 0 || offs < 0 || j->node[shape].type != CUSET_JARR || j->node[offs].type != CUSET_JARR ||
            cuset_jdoc_count(j, offs) != 2 || cuset_jdoc_count(j, shape) > 8) {
            snprintf(why, sizeof why, "tensor %s: needs dtype, shape (at most 8 dims) and data_offsets [begin, end]", t.name);
            break;
        }
        size_t esize;
        if (!strcmp(dt, "F32")) { t.dtype = CUSET__ST_F32; esize = 4; }
        else if (!strcmp(dt, "F16")) { t.dtype = CUSET__ST_F16; esize = 2; }
        else if (!strcmp(dt, "BF16")) { t.dtype = CUSET__ST_BF16; esize = 2; }
        else { snprintf(why, sizeof why, "tensor %s: dtype %s is not supported (F32, F16, BF16)", t.name, dt); break; }
        double numel = 1;
        for (int k = shape + 1; k < j->node[shape].end; k = j->node[k].end) {
            double v = j->node[k].num;
            if (j->node[k].type != CUSET_JNUM || v < 0 || v != (double)(int64_t)v || v > 1e12) {
                snprintf(why, sizeof why, "tensor %s: bad shape", t.name);
                break;
            }
            t.shape[t.ndim++] = (int64_t)v;
            numel *= v;
        }
        double b = j->node[offs + 1].num, e = j->node[j->node[offs + 1].end].num;
        if (why[0]) break;
        if (j->node[offs + 1].type != CUSET_JNUM || j->node[j->node[offs + 1].end].type != CUSET_JNUM || b < 0 || e < b ||
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
    if (!why[0]) {
        ptrdiff_t n = arrlen(st->t);
        cuset__g2_tensor *s = (cuset__g2_tensor *)CUSET_CALLOC((size_t)n, sizeof *s);
        if (n) memcpy(s, st->t, (size_t)n * sizeof *s);
        qsort(s, (size_t)n, sizeof *s, cuset__g2_by_begin);
        size_t at = 0; // where the next tensor must begin
        for (ptrdiff_t i = 0; i < n && !why[0]; i++) {
            if (s[i].begin < at)
                snprintf(why, sizeof why, "tensors %s and %s overlap (data_offsets)", s[i - 1].name, s[i].name);
            else if (s[i].begin > at)
                snprintf(why, sizeof why, "a gap of %zu bytes before tensor %s (data_offsets)", s[i].begin - at, s[i].name);
            at = s[i].end;
        }
        if (!why[0] && at != avail)
            snprintf(why, sizeof why, "%zu bytes after the last tensor's data (damaged?)", avail - at);
        free(s);
    }
    if (why[0]) {
        cuset__g2_st_close(st);
        return cuset__err(err, errlen, "%s: %s", path, why);
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
    if (!t) return cuset__err(err, errlen, "%s: tensor %s is missing", st->path, name);
    int ndim = cols ? 2 : 1;
    if (t->ndim != ndim || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char got[128] = "";
        for (int k = 0; k < t->ndim; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "", (long long)t->shape[k]);
        return cuset__err(err, errlen, "%s: tensor %s has shape (%s), the config needs (%lld%s%.0lld)", st->path, name,
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
    CusetJDoc j;
    if (cuset__g2_json_file(&j, path, err, errlen) != 0) return -1;
    char why[512] = "";
    int type_at = cuset_jdoc_get(&j, 0, "model_type", -1);
    const char *type = cuset_jdoc_str(&j, type_at);
    const char *act = cuset_jdoc_str(&j, cuset_jdoc_get(&j, 0, "activation_function", -1));
    int v[5];
    const char *names[5] = {"vocab_size", "n_positions", "n_layer", "n_head", "n_embd"};
    if (!type || strcmp(type, "gpt2") != 0) {
        snprintf(why, sizeof why, "model_type \"%s\" is not supported: only GPT-2's architecture (model_type \"gpt2\": "
                 "gpt2, gpt2-medium/large/xl, distilgpt2, codeparrot, ...)",
                 type ? type : type_at >= 0 ? "(not a string)" : "(missing)");
    }
    for (int i = 0; i < 5 && !why[0]; i++) {
        int k = cuset_jdoc_get(&j, 0, names[i], -1);
        if (k < 0 && i == 1) k = cuset_jdoc_get(&j, 0, "n_ctx", -1);
        if (k < 0 || j.node[k].type != CUSET_JNUM || j.node[k].num < 1 || j.node[k].num != floor(j.node[k].num))
            snprintf(why, sizeof why, "%s is missing or not a positive integer", names[i]);
        else if (j.node[k].num > (1 << 24))
            snprintf(why, sizeof why, "%s %.0f is beyond what this project reads (at most %d)", names[i], j.node[k].num,
                     1 << 24);
        else v[i] = (int)j.node[k].num;
    }
    int inner = cuset_jdoc_get(&j, 0, "n_inner", -1), eps = cuset_jdoc_get(&j, 0, "layer_norm_epsilon", -1);
    static const char *const must_true[] = {"tie_word_embeddings", "scale_attn_weights"};
    static const char *const must_false[] = {"scale_attn_by_inverse_layer_idx", "add_cross_attention"};
    if (why[0]) {
    } else if (act && strcmp(act, "gelu_new") && strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu_fast")) {
        snprintf(why, sizeof why, "activation_function \"%s\" is not supported (the tanh GELU: gelu_new, "
                 "gelu_pytorch_tanh, gelu_fast)", act);
    } else if (inner >= 0 && j.node[inner].type != CUSET_JNULL && j.node[inner].num != 4.0 * v[4]) {
        snprintf(why, sizeof why, "n_inner %.0f is not supported (null or 4 n_embd = %d)", j.node[inner].num, 4 * v[4]);
    } else if (eps >= 0 && j.node[eps].type != CUSET_JNUM) {
        snprintf(why, sizeof why, "layer_norm_epsilon is not a number (1e-5)");
    } else if (eps >= 0 && fabs(j.node[eps].num - 1e-5) > 1e-12) {
        snprintf(why, sizeof why, "layer_norm_epsilon %g is not supported (1e-5)", j.node[eps].num);
    }
    for (int i = 0; i < 2 && !why[0]; i++) {
        int a = cuset_jdoc_get(&j, 0, must_true[i], -1), b = cuset_jdoc_get(&j, 0, must_false[i], -1);
        if (a >= 0 && !(j.node[a].type == CUSET_JBOOL && j.node[a].num)) snprintf(why, sizeof why, "%s must be true", must_true[i]);
        else if (b >= 0 && !(j.node[b].type == CUSET_JBOOL && !j.node[b].num))
            snprintf(why, sizeof why, "%s must be false", must_false[i]);
    }
    cuset_jdoc_free(&j);
    if (why[0]) return cuset__err(err, errlen, "%s: %s", path, why);
    cfg->vocab_size = v[0];
    cfg->padded_vocab_size = cuset_pad_vocab(v[0]);
    cfg->max_seq_len = v[1];
    cfg->n_layer = v[2];
    cfg->n_head = v[3];
    cfg->n_embd = v[4];
    if (cuset_config_check(cfg, why, sizeof why) != 0) return cuset__err(err, errlen, "%s: %s", path, why);
    return 0;
}

static int cuset__g2_load_hf(const char *dir, CusetGPT *m, char *err, size_t errlen) {
    CusetConfig cfg;
    if (cuset__g2_read_config(dir, &cfg, err, errlen) != 0) return -1;
    char path[4096], name[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!cuset__g2_exists(path)) {
        snprintf(name, sizeof name, "%s/model.safetensors.index.json", dir);
        return cuset__err(err, errlen, "%s: missing%s; only one model.safetensors file is read (convert "
                          "pytorch_model.bin with safetensors' convert script or save_pretrained)", path,
                          cuset__g2_exists(name) ? " (the model is sharded)" : "");
    }
    cuset__g2_st st;
    if (cuset__g2_st_open(&st, path, err, errlen) != 0) return -1;
    // config.json's sizes against the file's, before allocating what config.json asks for:
    // every parameter but wte's padding rows is in the file, in 2 bytes at least
    size_t sizes[CUSET_NUM_TENSORS], need = 0, have = 0;
    cuset__tensor_sizes(&cfg, sizes);
    for (int i = 0; i < CUSET_NUM_TENSORS; i++) need += sizes[i];
    need = 2 * (need - (size_t)(cfg.padded_vocab_size - cfg.vocab_size) * cfg.n_embd);
    for (ptrdiff_t i = 0; i < arrlen(st.t); i++) have += st.t[i].end - st.t[i].begin;
    if (have < need) {
        cuset__g2_st_close(&st);
        return cuset__err(err, errlen, "%s: %zu bytes of tensors, but the model of config.json (%d layers, %d channels, "
                          "vocabulary %d, %d positions) needs %zu at least", path, have, cfg.n_layer, cfg.n_embd,
                          cfg.vocab_size, cfg.max_seq_len, need);
    }
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
                    rc = cuset__err(err, errlen, "%s: lm_head.weight differs from wte.weight: only tied heads are "
                                    "supported", path);
            continue;
        }
        rc = cuset__err(err, errlen, "%s: unexpected tensor %s (not part of GPT-2's architecture)", path, t->name);
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
        int V = h[3], Vp = V >= 2 && V <= 1 << 24 ? cuset_pad_vocab(V) : 0; // (the check below names a bad V)
        cfg = (CusetConfig){V, Vp, h[2], h[4], h[5], h[6]};
        if (cuset_config_check(&cfg, why, sizeof why) == 0 && h[7] < h[3])
            snprintf(why, sizeof why, "padded vocabulary %d smaller than the vocabulary %d", h[7], h[3]);
    }
    size_t esize = !why[0] && h[1] == 5 ? 2 : 4, np = 0, s[CUSET_NUM_TENSORS];
    if (!why[0]) { // the file's size from the header, before any allocation the header asks for
        cuset__tensor_sizes(&cfg, s);
        s[0] = (size_t)h[7] * cfg.n_embd;
        for (int i = 0; i < CUSET_NUM_TENSORS; i++) np += s[i];
        if (f.size != sizeof h + np * esize)
            snprintf(why, sizeof why, "%s: %zu bytes, the header implies %zu", f.size < sizeof h + np * esize ? "truncated" :
                     "trailing bytes", f.size, sizeof h + np * esize);
    }
    if (why[0]) { cuset__g2_unmap(&f); return cuset__err(err, errlen, "%s: %s", path, why); }
    cuset_gpt_init(m, &cfg);
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
    int rc = cuset__g2_is_dir(path) ? cuset__g2_load_hf(path, m, err, errlen) : cuset__g2_load_llmc(path, m, err, errlen);
    char why[200];
    if (rc == 0 && cuset__find_nonfinite(m, m->params_memory, "", why, sizeof why)) {
        cuset_gpt_free(m);
        return cuset__err(err, errlen, "%s: %s: the model cannot be trained or sampled from", path, why);
    }
    return rc;
}

// ---- tokenizer files ------------------------------------------------------------------------------
// A tokenizer as its files give it, in their ids: the bytes of each token, which are added
// tokens, and the merges in rank order as (left, right, result). It becomes a CusetTokenizer
// (bytes, specials, merges in order) by cuset__g2_convert, with a map from its ids to ours.

typedef struct {
    unsigned char *bytes;   // stb_ds: token bytes back to back
    unsigned *offset;       // stb_ds (n + 1)
    unsigned char *added;   // stb_ds (n): 1 for added tokens (<|endoftext|> ...)
    int *merges;            // stb_ds: 3 ints per merge; empty for llm.c's file (no merges)
    int split;              // CUSET_TOK_SPLIT_GPT2, or _CUSET for a tokenizer this file exported
} cuset__g2_vocab;

static void cuset__g2_vocab_free(cuset__g2_vocab *v) {
    arrfree(v->bytes); arrfree(v->offset); arrfree(v->added); arrfree(v->merges);
    memset(v, 0, sizeof *v);
}

static int cuset__g2_vocab_n(const cuset__g2_vocab *v) { return (int)arrlen(v->added); }

static const unsigned char *cuset__g2_token(const cuset__g2_vocab *v, int id, size_t *len) {
    *len = v->offset[id + 1] - v->offset[id];
    return *len ? v->bytes + v->offset[id] : (const unsigned char *)""; // bytes is NULL while empty
}

// GPT-2's byte <-> character map: printable Latin-1 bytes are themselves, the other 68
// bytes are U+0100 onwards in byte order, so every token is a printable string.
static uint32_t cuset__g2_byte_char(int b) {
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return (uint32_t)b;
    int k = 0;
    for (int x = 0; x < b; x++) k += !((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF));
    return 256u + (uint32_t)k;
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
        if (c >= 0x80 && c < 0xC2) { *bad = c; return -1; } // not a lead byte, or an overlong one
        if (len > 1) {
            c &= 0x7F >> len;
            for (int i = 1; i < len; i++) {
                if ((u[i] & 0xC0) != 0x80) { *bad = *u; return -1; } // cut short (by the NUL, too)
                c = c << 6 | (u[i] & 0x3F);
            }
        }
        if (c >= 324 || !to_byte[c]) { *bad = c; return -1; }
        arrput(*out, (unsigned char)(to_byte[c] - 1));
        u += len;
    }
    return 0;
}

// The names of our three specials in tokenizer files (CUSET_TOK_PROMPT, _TARGET, _EOS).
static const char *const cuset__g2_special[3] = {"<|prompt|>", "<|target|>", "<|endoftext|>"};

static int cuset__g2_special_id(const unsigned char *p, size_t n) {
    for (int k = 0; k < 3; k++)
        if (strlen(cuset__g2_special[k]) == n && !memcmp(p, cuset__g2_special[k], n)) return CUSET_TOK_NBYTES + k;
    return -1;
}

typedef struct { char *key; int value; } cuset__g2_strmap; // stb_ds string map: token text -> id

// Fills v's tokens from the JSON object `vocab` (text -> id) and the array `added`
// (tokenizer.json's added_tokens, or -1); *map receives text -> id for the merges.
static int cuset__g2_read_vocab(cuset__g2_vocab *v, const CusetJDoc *j, int vocab, int added, cuset__g2_strmap **map,
                                const char *where, char *err, size_t errlen) {
    if (vocab < 0 || j->node[vocab].type != CUSET_JOBJ) return cuset__err(err, errlen, "%s: no vocabulary object", where);
    int V = 0;
    const char **text = NULL; // stb_ds, by id
    unsigned char *is_added = NULL;
    for (int pass = 0; pass < 2; pass++) { // the vocabulary, then the added tokens
        int list = pass ? added : vocab;
        if (list < 0) continue;
        for (int c = list + 1; c < j->node[list].end; c = j->node[c].end) {
            int idn = pass ? cuset_jdoc_get(j, c, "id", -1) : c;
            const char *s = pass ? cuset_jdoc_str(j, cuset_jdoc_get(j, c, "content", -1)) : j->text + j->node[c].key;
            double id = idn >= 0 && j->node[idn].type == CUSET_JNUM ? j->node[idn].num : -1;
            if (!s || id < 0 || id >= CUSET_TOK_MAX_VOCAB || id != (int)id) {
                arrfree(text); arrfree(is_added);
                return cuset__err(err, errlen, "%s: %s entry \"%s\" has no valid id", where, pass ? "added token" : "vocabulary",
                                  s ? s : "?");
            }
            while (V <= (int)id) { arrput(text, NULL); arrput(is_added, 0); V++; }
            if (text[(int)id] && !pass) {
                int d = (int)id;
                arrfree(text); arrfree(is_added);
                return cuset__err(err, errlen, "%s: id %d is given to two vocabulary entries", where, d);
            }
            text[(int)id] = s;
            is_added[(int)id] |= (unsigned char)(pass || cuset__g2_special_id((const unsigned char *)s, strlen(s)) >= 0);
            if (!pass) shput(*map, (char *)s, (int)id);
        }
    }
    int rc = 0, to_byte[324];
    cuset__g2_char_table(to_byte);
    arrput(v->offset, 0);
    for (int id = 0; id < V && !rc; id++) {
        uint32_t bad;
        if (!text[id]) rc = cuset__err(err, errlen, "%s: no token has id %d (ids must be 0..%d without gaps)", where, id, V - 1);
        else if (is_added[id]) memcpy(arraddnptr(v->bytes, strlen(text[id])), text[id], strlen(text[id]));
        else if (cuset__g2_from_chars(text[id], to_byte, &v->bytes, &bad) != 0)
            rc = cuset__err(err, errlen, "%s: vocabulary entry %d \"%s\" is not byte-level (character U+%04X): not a "
                            "GPT-2-style byte-level BPE", where, id, text[id], bad);
        arrput(v->offset, (unsigned)arrlenu(v->bytes));
        arrput(v->added, is_added[id]);
    }
    arrfree(text); arrfree(is_added);
    return rc;
}

// Appends the merge of the tokens with texts a and b.
static int cuset__g2_merge(cuset__g2_vocab *v, cuset__g2_strmap *map, const char *a, const char *b, int rank,
                           const char *where, char *err, size_t errlen) {
    char buf[2 * CUSET_TOK_MAX_GPT2_TOKEN + 1];
    snprintf(buf, sizeof buf, "%s%s", a, b);
    // (shgeti on an empty map, NULL, would allocate a header this copy of the pointer loses)
    int ia = map ? (int)shgeti(map, (char *)a) : -1, ib = map ? (int)shgeti(map, (char *)b) : -1;
    int im = map ? (int)shgeti(map, buf) : -1;
    if (ia < 0 || ib < 0 || im < 0)
        return cuset__err(err, errlen, "%s: merge %d (\"%s\" \"%s\") names a token that is not in the vocabulary", where,
                          rank, a, b);
    int r[3] = {map[ia].value, map[ib].value, map[im].value};
    memcpy(arraddnptr(v->merges, 3), r, sizeof r);
    return 0;
}

// The pre-tokenizer of a tokenizer.json: GPT-2's ByteLevel, or the Split + ByteLevel this
// file writes for the project's own tokenizer. -1 with the reason for anything else.
static int cuset__g2_pretokenizer(const CusetJDoc *j, int pre, char *why, size_t n) {
    const char *type = cuset_jdoc_str(j, cuset_jdoc_get(j, pre, "type", -1));
    int ps = cuset_jdoc_get(j, pre, "add_prefix_space", -1), re = cuset_jdoc_get(j, pre, "use_regex", -1);
    if (type && !strcmp(type, "ByteLevel")) {
        if ((ps >= 0 && j->node[ps].num) || (re >= 0 && !j->node[re].num)) {
            snprintf(why, n, "ByteLevel with add_prefix_space true or use_regex false is not supported");
            return -1;
        }
        return CUSET_TOK_SPLIT_GPT2;
    }
    int list = cuset_jdoc_get(j, pre, "pretokenizers", -1);
    if (type && !strcmp(type, "Sequence") && list >= 0 && cuset_jdoc_count(j, list) == 2) {
        int split = list + 1, bl = j->node[split].end;
        const char *pattern = cuset_jdoc_str(j, cuset_jdoc_get(j, cuset_jdoc_get(j, split, "pattern", -1), "Regex", -1));
        const char *blt = cuset_jdoc_str(j, cuset_jdoc_get(j, bl, "type", -1));
        int blre = cuset_jdoc_get(j, bl, "use_regex", -1);
        if (pattern && !strcmp(pattern, cuset_gpt2_cuset_split_regex) && blt && !strcmp(blt, "ByteLevel") && blre >= 0 &&
            !j->node[blre].num)
            return CUSET_TOK_SPLIT_CUSET;
    }
    snprintf(why, n, "pre_tokenizer %s is not supported (GPT-2's ByteLevel, or the Split this project exports)",
             type ? type : "null");
    return -1;
}

// Reads tokenizer.json: model BPE with merges, no normalizer, a pre-tokenizer we know.
static int cuset__g2_load_json(cuset__g2_vocab *v, const char *path, char *err, size_t errlen) {
    CusetJDoc j;
    if (cuset__g2_json_file(&j, path, err, errlen) != 0) return -1;
    int model = cuset_jdoc_get(&j, 0, "model", -1), norm = cuset_jdoc_get(&j, 0, "normalizer", -1);
    int merges = cuset_jdoc_get(&j, model, "merges", -1);
    const char *mtype = cuset_jdoc_str(&j, cuset_jdoc_get(&j, model, "type", -1));
    const char *sub = cuset_jdoc_str(&j, cuset_jdoc_get(&j, model, "continuing_subword_prefix", -1));
    const char *eow = cuset_jdoc_str(&j, cuset_jdoc_get(&j, model, "end_of_word_suffix", -1));
    char why[256] = "";
    if (model < 0 || (mtype && strcmp(mtype, "BPE")))
        snprintf(why, sizeof why, "model is not BPE (type %s)", mtype ? mtype : model < 0 ? "missing" : "?");
    else if (merges < 0 || j.node[merges].type != CUSET_JARR)
        snprintf(why, sizeof why, "the BPE model has no merges list");
    else if (norm >= 0 && j.node[norm].type != CUSET_JNULL) snprintf(why, sizeof why, "a normalizer is not supported");
    else if ((v->split = cuset__g2_pretokenizer(&j, cuset_jdoc_get(&j, 0, "pre_tokenizer", -1), why, sizeof why)) < 0) {}
    else if ((sub && sub[0]) || (eow && eow[0]))
        snprintf(why, sizeof why, "continuing_subword_prefix or end_of_word_suffix is not supported");
    if (why[0]) { cuset_jdoc_free(&j); return cuset__err(err, errlen, "%s: %s", path, why); }
    cuset__g2_strmap *map = NULL;
    int rc = cuset__g2_read_vocab(v, &j, cuset_jdoc_get(&j, model, "vocab", -1), cuset_jdoc_get(&j, 0, "added_tokens", -1), &map,
                                  path, err, errlen);
    int rank = 0;
    for (int c = merges + 1; c < j.node[merges].end && !rc; c = j.node[c].end, rank++) {
        const char *s = cuset_jdoc_str(&j, c), *a = NULL, *b = NULL;
        char pair[2 * CUSET_TOK_MAX_GPT2_TOKEN + 2];
        if (s && strlen(s) < sizeof pair && strchr(s, ' ')) { // "a b"
            strcpy(pair, s);
            *strchr(pair, ' ') = 0;
            a = pair;
            b = pair + strlen(pair) + 1;
        } else if (j.node[c].type == CUSET_JARR && cuset_jdoc_count(&j, c) == 2) { // ["a", "b"]
            a = cuset_jdoc_str(&j, c + 1);
            b = cuset_jdoc_str(&j, j.node[c + 1].end);
        }
        if (!a || !b) rc = cuset__err(err, errlen, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", path, rank);
        else rc = cuset__g2_merge(v, map, a, b, rank, path, err, errlen);
    }
    shfree(map);
    cuset_jdoc_free(&j);
    return rc;
}

// Reads vocab.json + merges.txt (GPT-2's original files).
static int cuset__g2_load_vocab_merges(cuset__g2_vocab *v, const char *dir, char *err, size_t errlen) {
    char vpath[4096], mpath[4096];
    snprintf(vpath, sizeof vpath, "%s/vocab.json", dir);
    snprintf(mpath, sizeof mpath, "%s/merges.txt", dir);
    cuset__g2_file mf;
    CusetJDoc j;
    if (cuset__g2_json_file(&j, vpath, err, errlen) != 0) return -1;
    if (cuset__g2_map(mpath, &mf, err, errlen) != 0) { cuset_jdoc_free(&j); return -1; }
    cuset__g2_strmap *map = NULL;
    v->split = CUSET_TOK_SPLIT_GPT2;
    int rc = cuset__g2_read_vocab(v, &j, 0, -1, &map, vpath, err, errlen);
    const char *p = (const char *)mf.data, *e = p + mf.size;
    for (int rank = 0, line = 1; p < e && !rc; line++) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(e - p));
        if (!nl) nl = e;
        char buf[2 * CUSET_TOK_MAX_GPT2_TOKEN + 2];
        size_t n = (size_t)(nl - p);
        if (n && p[n - 1] == '\r') n--;
        if (n >= sizeof buf) n = sizeof buf - 1;
        memcpy(buf, p, n);
        buf[n] = 0;
        p = nl + 1;
        if (!n || !strncmp(buf, "#version", 8)) continue;
        char *sp = strchr(buf, ' ');
        if (!sp || strchr(sp + 1, ' ')) { rc = cuset__err(err, errlen, "%s:%d: not \"a b\"", mpath, line); break; }
        *sp = 0;
        rc = cuset__g2_merge(v, map, buf, sp + 1, rank++, mpath, err, errlen);
    }
    cuset__g2_unmap(&mf);
    shfree(map);
    cuset_jdoc_free(&j);
    return rc;
}

// llm.c's tokenizer file: 256 uint32 (magic 20240328, version 1 or 2, vocab size, version 2:
// the <|endoftext|> id), then per token a length byte and the bytes. It has no merges: its
// ids are GPT-2's merge order, which cuset__g2_convert recovers.
static int cuset__g2_load_llmc_tok(cuset__g2_vocab *v, const char *path, char *err, size_t errlen) {
    cuset__g2_file f;
    if (cuset__g2_map(path, &f, err, errlen) != 0) return -1;
    uint32_t h[256];
    char why[256] = "";
    size_t at = sizeof h;
    if (f.size < sizeof h) snprintf(why, sizeof why, "%zu bytes, shorter than the 1024-byte header", f.size);
    else if (memcpy(h, f.data, sizeof h), h[0] != 20240328)
        snprintf(why, sizeof why, "neither a tokenizer.json nor an llm.c tokenizer (magic %u)", h[0]);
    else if (h[1] != 1 && h[1] != 2) snprintf(why, sizeof why, "llm.c tokenizer version %u (1 and 2 are read)", h[1]);
    else if (h[2] < 256 || h[2] > CUSET_TOK_MAX_VOCAB) snprintf(why, sizeof why, "vocabulary size %u", h[2]);
    v->split = CUSET_TOK_SPLIT_GPT2;
    arrput(v->offset, 0);
    for (uint32_t id = 0; !why[0] && id < h[2]; id++) {
        size_t n = at < f.size ? f.data[at] : 0;
        if (!n || at + 1 + n > f.size) { snprintf(why, sizeof why, "truncated or empty token at id %u", id); break; }
        memcpy(arraddnptr(v->bytes, n), f.data + at + 1, n);
        arrput(v->offset, (unsigned)arrlenu(v->bytes));
        arrput(v->added, (h[1] == 2 && id == h[3]) || cuset__g2_special_id(f.data + at + 1, n) >= 0);
        at += 1 + n;
    }
    if (!why[0] && at != f.size) snprintf(why, sizeof why, "%zu trailing bytes", f.size - at);
    cuset__g2_unmap(&f);
    return why[0] ? cuset__err(err, errlen, "%s: %s", path, why) : 0;
}

// Builds our tokenizer from v: byte b is id b, the added tokens <|prompt|>, <|target|>,
// <|endoftext|> are CUSET_TOK_PROMPT, _TARGET, _EOS, and merge k makes id 259 + k. perm
// (v's n ids) receives our id of each of v's ids. Merges come from v->merges, or for llm.c's
// file (none) from the ids: in id order, a token is the merge of the two tokens that our
// BPE so far makes of its bytes.
static int cuset__g2_convert(const cuset__g2_vocab *v, CusetTokenizer *tk, int *perm, const char *where, char *err,
                             size_t errlen) {
    int n = cuset__g2_vocab_n(v), nm = (int)(arrlen(v->merges) / 3), rc = 0;
    size_t max_token = v->split == CUSET_TOK_SPLIT_GPT2 ? CUSET_TOK_MAX_GPT2_TOKEN : CUSET_TOK_MAX_CHUNK;
    cuset_tok_init(tk);
    tk->split = v->split;
    for (int id = 0; id < n && !rc; id++) {
        size_t len;
        const unsigned char *p = cuset__g2_token(v, id, &len);
        perm[id] = v->added[id] ? cuset__g2_special_id(p, len) : len == 1 ? p[0] : -1;
        if (v->added[id] && perm[id] < 0)
            rc = cuset__err(err, errlen, "%s: added token \"%.*s\" (id %d) is not supported (only <|endoftext|>, "
                            "<|prompt|>, <|target|>)", where, (int)len, (const char *)p, id);
    }
    int seen[CUSET_TOK_FIRST_MERGE] = {0};
    for (int id = 0; id < n && !rc; id++)
        if (perm[id] >= 0 && seen[perm[id]]++)
            rc = cuset__err(err, errlen, "%s: token %d is byte or special %d a second time", where, id, perm[id]);
    for (int b = 0; b < CUSET_TOK_NBYTES && !rc; b++)
        if (!seen[b])
            rc = cuset__err(err, errlen, "%s: no token for byte 0x%02x: a byte-level BPE needs all 256 bytes (train it "
                            "with the ByteLevel alphabet as initial_alphabet)", where, b);
    int *ids = NULL;
    for (int k = 0, id = 0; !rc && (nm ? k < nm : id < n); k++, id++) {
        int a, b, made;
        if (nm) {
            a = perm[v->merges[3 * k]], b = perm[v->merges[3 * k + 1]], made = v->merges[3 * k + 2];
        } else { // llm.c: the next token that is not a byte or special
            while (id < n && perm[id] >= 0) id++;
            if (id == n) break;
            size_t len;
            const unsigned char *p = cuset__g2_token(v, id, &len);
            arrsetlen(ids, 0);
            cuset__tok_encode_chunk(tk, p, (int)len, &ids);
            a = arrlen(ids) == 2 ? ids[0] : -1, b = arrlen(ids) == 2 ? ids[1] : -1, made = id;
        }
        size_t la, lb;
        if (a < 0 || b < 0 || perm[made] >= 0)
            rc = cuset__err(err, errlen, "%s: token %d is not the merge of two earlier tokens (merge %d)", where, made, k);
        else if (cuset__tok_rank(tk, a, b) != INT_MAX)
            rc = cuset__err(err, errlen, "%s: merge %d repeats the pair (%d, %d)", where, k, a, b);
        else if (cuset_tok_bytes(tk, a, &la), cuset_tok_bytes(tk, b, &lb), la + lb > max_token)
            rc = cuset__err(err, errlen, "%s: token %d has %zu bytes, more than %zu", where, made, la + lb, max_token);
        else if (arrlenu(tk->bytes) + la + lb > UINT32_MAX) // the tokenizer's offsets are 32-bit
            rc = cuset__err(err, errlen, "%s: the tokens' bytes pass 4 GiB at merge %d", where, k);
        else {
            perm[made] = tk->vocab_size;
            cuset__tok_add_merge(tk, a, b);
        }
    }
    arrfree(ids);
    for (int id = 0; id < n && !rc; id++)
        if (perm[id] < 0) rc = cuset__err(err, errlen, "%s: token %d is made by no merge", where, id);
    if (rc) cuset_tok_free(tk);
    return rc;
}

int cuset_gpt2_tok_load(CusetTokenizer *tk, int **perm, int *n, const char *path, char *err, size_t errlen) {
    cuset__g2_vocab v = {0};
    char p[4096];
    int rc;
    if (cuset__g2_is_dir(path)) {
        snprintf(p, sizeof p, "%s/tokenizer.json", path);
        char vocab[4096];
        snprintf(vocab, sizeof vocab, "%s/vocab.json", path);
        if (cuset__g2_exists(p)) rc = cuset__g2_load_json(&v, p, err, errlen);
        else if (cuset__g2_exists(vocab)) rc = cuset__g2_load_vocab_merges(&v, path, err, errlen);
        else rc = cuset__err(err, errlen, "%s: no tokenizer: neither tokenizer.json nor vocab.json + merges.txt", path);
    } else {
        FILE *f = fopen(path, "rb");
        int c = f ? fgetc(f) : EOF;
        if (f) fclose(f);
        rc = c == '{' ? cuset__g2_load_json(&v, path, err, errlen) : cuset__g2_load_llmc_tok(&v, path, err, errlen);
    }
    CusetTokenizer t = {0};
    *n = cuset__g2_vocab_n(&v);
    *perm = (int *)CUSET_CALLOC(*n ? *n : 1, sizeof(int));
    if (rc == 0) rc = cuset__g2_convert(&v, &t, *perm, path, err, errlen);
    cuset__g2_vocab_free(&v);
    if (rc != 0) { free(*perm); *perm = NULL; return -1; }
    cuset_tok_free(tk);
    *tk = t;
    return 0;
}

int cuset_gpt2_recognize(const char *path) {
    if (cuset__g2_is_dir(path)) return 1;
    FILE *f = fopen(path, "rb");
    int32_t magic = 0;
    int ok = f && fread(&magic, 4, 1, f) == 1 && magic == 20240326;
    if (f) fclose(f);
    return ok;
}

int cuset_gpt2_import(const char *path, const char *tok_path, CusetGPT *m, CusetTokenizer *tk, int **perm_out, char *err,
                      size_t errlen) {
    char def[4096];
    struct stat st;
    snprintf(def, sizeof def, "%s/config.json", path);
    if (cuset__g2_is_dir(path) && stat(def, &st) != 0)
        return cuset__err(err, errlen, "%s is a directory without config.json: not a Hugging Face model", path);
    if (!tok_path) {
        const char *slash = strrchr(path, '/');
        if (cuset__g2_is_dir(path)) snprintf(def, sizeof def, "%s", path);
        else snprintf(def, sizeof def, "%.*sgpt2_tokenizer.bin", slash ? (int)(slash - path + 1) : 0, path);
        tok_path = def;
    }
    CusetTokenizer t = {0};
    CusetGPT src;
    int *perm, n;
    if (cuset_gpt2_tok_load(&t, &perm, &n, tok_path, err, errlen) != 0) return -1;
    if (cuset_gpt2_load_model(path, &src, err, errlen) != 0) { cuset_tok_free(&t); free(perm); return -1; }
    if (n > src.cfg.vocab_size) {
        int mv = src.cfg.vocab_size;
        cuset_tok_free(&t); free(perm); cuset_gpt_free(&src);
        return cuset__err(err, errlen, "%s: the tokenizer has %d ids but the model %s only %d: they do not belong "
                          "together", tok_path, n, path, mv);
    }
    // the model in our ids: row perm[i] is the file's row i; specials the file lacks get
    // the mean of the rows (a neutral start that fine-tuning moves)
    CusetConfig cfg = src.cfg;
    cfg.vocab_size = t.vocab_size;
    cfg.padded_vocab_size = cuset_pad_vocab(t.vocab_size);
    cuset_gpt_init(m, &cfg);
    size_t C = (size_t)cfg.n_embd;
    unsigned char *filled = (unsigned char *)CUSET_CALLOC((size_t)t.vocab_size, 1);
    float *mean = (float *)CUSET_CALLOC(C, sizeof(float));
    for (int i = 0; i < n; i++) {
        memcpy(m->params.wte + (size_t)perm[i] * C, src.params.wte + (size_t)i * C, C * sizeof(float));
        filled[perm[i]] = 1;
        for (size_t c = 0; c < C; c++) mean[c] += src.params.wte[(size_t)i * C + c] / n;
    }
    for (int id = 0; id < t.vocab_size; id++)
        if (!filled[id]) memcpy(m->params.wte + (size_t)id * C, mean, C * sizeof(float));
    memcpy(m->params.wpe, src.params.wpe, (m->num_params - m->tensor_sizes[0]) * sizeof(float)); // the rest, same layout
    free(filled); free(mean);
    cuset_gpt_free(&src);
    cuset_tok_free(tk);
    *tk = t;
    if (perm_out) *perm_out = perm;
    else free(perm);
    return 0;
}

// ---- export: a Hugging Face directory ------------------------------------------------------------

// The files of an export. Each is first written to NAME.tmp.PID (cuset__g2_stage); only when
// all four are written are they renamed into place, so a failed write (a full disk) leaves
// the directory as it was, not a new config.json beside an older model. (The renames, in
// one directory, need no space; a failure among them would leave the first ones done.)
static const char *const cuset__g2_export_files[] = { "config.json", "model.safetensors", "tokenizer.json",
                                                      "tokenizer_config.json" };
#define CUSET__G2_NEXPORT (int)(sizeof cuset__g2_export_files / sizeof cuset__g2_export_files[0])
static void cuset__g2_staged(char *tmp, size_t n, const char *dir, const char *name) {
    snprintf(tmp, n, "%s/%s.tmp.%d", dir, name, (int)getpid());
}
// Writes n bytes to dir/name's temporary.
static int cuset__g2_stage(const char *dir, const char *name, const void *data, size_t n, char *err, size_t errlen) {
    char tmp[4200];
    cuset__g2_staged(tmp, sizeof tmp, dir, name);
    FILE *f = fopen(tmp, "wb");
    if (!f) return cuset__err(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
    int ok = fwrite(data, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        int e = errno;
        remove(tmp);
        return cuset__err(err, errlen, "%s/%s: write failed: %s", dir, name, strerror(e));
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
    unsigned char *file = (unsigned char *)CUSET_CALLOC(total, 1);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)hlen >> 8 * i);
    memcpy(file + 8, h, hlen);
    memcpy(file + 8 + hlen, data, at);
    int rc = cuset__g2_stage(dir, "model.safetensors", file, total, err, errlen);
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

// tokenizer.json and tokenizer_config.json: a byte-level BPE in our ids (bytes, the three
// specials as added tokens, merges in order) with the tokenizer's pre-split.
static int cuset__g2_export_tokenizer(const char *dir, const CusetTokenizer *tk, int max_len, char *err, size_t errlen) {
    int V = tk->vocab_size, rc = 0;
    char **text = (char **)CUSET_CALLOC((size_t)V, sizeof(char *)); // each token's text, NUL-terminated
    cuset__g2_strmap *seen = NULL;
    for (int id = 0; id < V && !rc; id++) {
        size_t n;
        const unsigned char *p = (const unsigned char *)cuset_tok_bytes(tk, id, &n);
        if (id >= CUSET_TOK_NBYTES && id < CUSET_TOK_FIRST_MERGE) {
            const char *name = cuset__g2_special[id - CUSET_TOK_NBYTES];
            memcpy(arraddnptr(text[id], strlen(name)), name, strlen(name));
        } else {
            for (size_t i = 0; i < n; i++) {
                char u[4];
                int len = cuset_json_utf8(cuset__g2_byte_char(p[i]), u);
                memcpy(arraddnptr(text[id], len), u, (size_t)len);
            }
        }
        arrput(text[id], 0);
        if (shgeti(seen, text[id]) >= 0)
            rc = cuset__err(err, errlen, "%s: ids %d and %d have the same bytes \"%s\"; tokenizer.json cannot tell them "
                            "apart", dir, shget(seen, text[id]), id, text[id]);
        shput(seen, text[id], id);
    }
    char *j = NULL;
    if (!rc) {
        cuset__g2_printf(&j, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[");
        for (int id = CUSET_TOK_NBYTES; id < CUSET_TOK_FIRST_MERGE; id++)
            cuset__g2_printf(&j, "%s{\"id\":%d,\"content\":\"%s\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
                             "\"normalized\":false,\"special\":true}", id > CUSET_TOK_NBYTES ? "," : "", id, text[id]);
        cuset__g2_printf(&j, "],\"normalizer\":null,\"pre_tokenizer\":");
        if (tk->split == CUSET_TOK_SPLIT_GPT2) {
            cuset__g2_printf(&j, "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}");
        } else {
            cuset__g2_printf(&j, "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":");
            cuset__g2_jwrite_str(&j, cuset_gpt2_cuset_split_regex, strlen(cuset_gpt2_cuset_split_regex));
            cuset__g2_printf(&j, "},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":"
                             "false,\"trim_offsets\":false,\"use_regex\":false}]}");
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
        for (int id = CUSET_TOK_FIRST_MERGE; id < V; id++) {
            char *pair = NULL;
            int k = id - CUSET_TOK_FIRST_MERGE;
            cuset__g2_printf(&pair, "%s %s", text[tk->merges[2 * k]], text[tk->merges[2 * k + 1]]);
            cuset__g2_jwrite_str(&j, pair, arrlenu(pair));
            if (id + 1 < V) arrput(j, ',');
            arrfree(pair);
        }
        cuset__g2_printf(&j, "]}}\n");
        rc = cuset__g2_stage(dir, "tokenizer.json", j, arrlenu(j), err, errlen);
    }
    if (!rc) {
        const char *e = cuset__g2_special[CUSET_TOK_EOS - CUSET_TOK_NBYTES];
        arrsetlen(j, 0);
        cuset__g2_printf(&j, "{\"tokenizer_class\":\"GPT2TokenizerFast\",\"model_max_length\":%d,\"add_prefix_space\":false,"
                         "\"bos_token\":\"%s\",\"eos_token\":\"%s\",\"unk_token\":\"%s\"}\n", max_len, e, e, e);
        rc = cuset__g2_stage(dir, "tokenizer_config.json", j, arrlenu(j), err, errlen);
    }
    arrfree(j);
    for (int id = 0; id < V; id++) arrfree(text[id]);
    free(text);
    shfree(seen);
    return rc;
}

int cuset_gpt2_export(const char *dir, const CusetGPT *m, const CusetTokenizer *tk, char *err, size_t errlen) {
    const CusetConfig *c = &m->cfg;
    if (tk->vocab_size > c->vocab_size)
        return cuset__err(err, errlen, "export: the tokenizer has %d ids, the model only %d", tk->vocab_size, c->vocab_size);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return cuset__err(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
    if (!cuset__g2_is_dir(dir))
        return cuset__err(err, errlen, "%s exists and is not a directory: give a directory to export into", dir);
    char *j = NULL;
    cuset__g2_printf(&j, "{\"architectures\":[\"GPT2LMHeadModel\"],\"model_type\":\"gpt2\",\"vocab_size\":%d,"
                     "\"n_positions\":%d,\"n_ctx\":%d,\"n_embd\":%d,\"n_layer\":%d,\"n_head\":%d,\"n_inner\":null,"
                     "\"activation_function\":\"gelu_new\",\"layer_norm_epsilon\":1e-05,\"resid_pdrop\":0.0,"
                     "\"embd_pdrop\":0.0,\"attn_pdrop\":0.0,\"initializer_range\":0.02,\"scale_attn_weights\":true,"
                     "\"scale_attn_by_inverse_layer_idx\":false,\"reorder_and_upcast_attn\":false,"
                     "\"tie_word_embeddings\":true,\"use_cache\":true,\"torch_dtype\":\"float32\","
                     "\"bos_token_id\":%d,\"eos_token_id\":%d}\n",
                     c->vocab_size, c->max_seq_len, c->max_seq_len, c->n_embd, c->n_layer, c->n_head, CUSET_TOK_EOS,
                     CUSET_TOK_EOS);
    int rc = cuset__g2_stage(dir, "config.json", j, arrlenu(j), err, errlen);
    arrfree(j);
    if (!rc) rc = cuset__g2_export_weights(dir, m, err, errlen);
    if (!rc) rc = cuset__g2_export_tokenizer(dir, tk, c->max_seq_len, err, errlen);
    for (int i = 0; i < CUSET__G2_NEXPORT; i++) { // all written: into place; otherwise none
        const char *name = cuset__g2_export_files[i];
        char tmp[4200], path[4200];
        cuset__g2_staged(tmp, sizeof tmp, dir, name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (!rc && rename(tmp, path) != 0)
            rc = cuset__err(err, errlen, "%s: cannot rename into place: %s", path, strerror(errno));
        if (rc) remove(tmp);
    }
    return rc;
}

#endif // CUSET_GPT2_IMPLEMENTATION_DONE
#endif // CUSET_GPT2_IMPLEMENTATION
