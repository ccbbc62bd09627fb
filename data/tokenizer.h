/* data/tokenizer.h — the byte-level BPE tokenizer of cuset, in one header.

   Trains on CUDA code, encodes and decodes any bytes exactly, saves to and loads from a
   checked binary format; the rules, the format and the measured speed are below.

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_TOKENIZER_IMPLEMENTATION
       #include "data/tokenizer.h"
   Depends on libc and stb_ds (Debian libstb-dev): arrays in and out are stb_ds arrays, and
   the first implementation of a cuset data header in a program compiles stb_ds's too
   (define CUSET_NO_STB_DS_IMPLEMENTATION where another file does). */
#ifndef CUSET_TOKENIZER_H
#define CUSET_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stb/stb_ds.h>

#ifdef __cplusplus
extern "C" {
#endif

// The tokenizer: byte-level BPE. All arrays passed in and out are stb_ds arrays:
//     CusetTokenizer tk = {0}; cuset_tok_init(&tk);
//     cuset_tok_train(&tk, texts, lens, ntexts, CUSET_TOK_DEFAULT_VOCAB, 1);
//     int *ids = NULL;  cuset_tok_encode(&tk, s, n, &ids);            // appends to ids
//     char *out = NULL; cuset_tok_decode(&tk, ids, arrlen(ids), &out); // appends to out
//     cuset_tok_free(&tk);
//
//
// Vocabulary. Ids 0..255 are the 256 byte values, so every byte string can be encoded.
// Then come three special ids that only the caller inserts: CUSET_TOK_PROMPT (256) opens
// the prompt, CUSET_TOK_TARGET (257) opens the target, CUSET_TOK_EOS (258) ends a sample.
// Merges get ids 259, 260, ... in the order they were learned. Encoding text never
// produces a special id: the text "<|eos|>" encodes like any other seven bytes.
// Specials decode to nothing (cuset_tok_bytes gives them zero bytes), so
// decode(encode(s)) == s exactly for any byte string s, including NUL bytes and invalid
// UTF-8, and the byte offset of every token is the sum of the lengths of the tokens
// before it.
//
// Pre-split. Before BPE, text is cut into chunks and merges never cross a chunk boundary.
// A chunk is one of:
//   word        [A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*   identifiers and keywords as one
//               class, so blockIdx, x1, float4, __syncthreads can become single tokens;
//               bytes >= 0x80 count as letters, so UTF-8 text in comments stays together
//   number      [0-9][A-Za-z0-9_.]*   256, 1024, 0xff, 1.0f, 1e (then -, 5): a literal
//               with its suffix is one chunk, the sign and exponent sign are punctuation
//   punctuation a run of any other bytes except whitespace and NUL
//   whitespace  a run of ' ' \t \n \r \v \f
//   NUL         a 0 byte is always a chunk by itself and is never merged (it never occurs
//               in source code, and this keeps chunks usable as C string keys)
// Leading space: a single ' ' directly before a word, number or punctuation chunk belongs
// to that chunk (GPT-2 style), so "a = b + c" is a| =| b| +| c. When a whitespace run ends
// in ' ' before such a chunk, its last space goes to the chunk and the rest stays a
// whitespace chunk: "\n        return" is "\n       " + " return". This way the body of
// a line always starts with the same " return"/" float"/" if" tokens as mid-line words,
// and indentation runs (newline + N spaces) are their own chunks, which BPE turns into a
// handful of tokens ("\n   ", "\n       ", ...) - one token per line start instead of one
// per 4 spaces.
// Chunks are at most CUSET_TOK_MAX_CHUNK (64) bytes: a longer run is cut into pieces of
// 64 bytes. This bounds the work per chunk (encoding is O(64^2) at worst per chunk, so
// linear in the input), the length of every token, and the memory a hostile tokenizer
// file can make us allocate.
//
// Operators. A punctuation run is one chunk and may merge freely within itself, so
// frequent operators and operator clusters become single tokens: <<<, >>>, ->, ::, ++,
// +=, ==, <=, &&, //, and also clusters such as ");", "){", ">>>(" when they are common.
// We allow this because in CUDA these runs are structure the model must get exactly right
// (a launch is `<<<`, never `<<` + `<`), one token per operator makes per-token
// confidence mean "confidence in this operator" rather than in half of it, and it
// shortens sequences (punctuation is ~15% of the bytes of CUDA code). Operators are not
// hard-coded: BPE learns which runs are frequent, and with the leading-space rule the
// common forms are " ==", " +=", " <=", " &&", "<<<", ">>>(", ");", " {". The price is
// that a rare run may be split oddly ("]->" as "]-" + ">"); byte offsets stay exact.
//
// Training counts chunks (a string hash map chunk -> count), then repeatedly merges the
// most frequent adjacent pair, counted over chunks weighted by their counts. Pair counts
// are kept incrementally: each pair knows which chunks contain it, and a merge only
// recounts those chunks. Ties go to the smallest (left id, right id), so training is
// deterministic. Pairs seen fewer than 2 times are never merged, so a small corpus may
// give a smaller vocabulary than asked for. (8 MB of synthetic code with 266k distinct
// chunks trains to 2048 ids in ~1.3 s, to 32768 in ~1.8 s.)
//
// Vocabulary size: CUSET_TOK_DEFAULT_VOCAB = 2048 (1789 merges) is the recommended
// default for the small models here. Trained on the CUDABench programs of half of the
// tasks and measured on the programs of the other tasks it gives 3.24 bytes per token
// (512: 2.49, 1024: 3.06, 4096: 3.25; bytes alone: 1.00), while the embedding and the
// softmax over 2048 ids stay a small part of a model with d_model 256-512. On a corpus
// this small (0.35 MB) training stops at ~2100 merges anyway (no pair left twice).
//
// Encoding applies, within each chunk, the earliest-learned merge among adjacent pairs
// until none applies, which gives exactly the tokens of applying every merge in training
// order. About 85 MB/s on one core (decode ~1 GB/s); test/bench_tokenizer.c measures it.
//
// File format (little-endian), written by cuset_tok_save and checked by cuset_tok_load:
//   offset  size  field
//   0       8     magic "CUSETTOK"
//   8       4     u32 version (1)
//   12      4     u32 vocab_size V (>= 259)
//   16      8*(V-259)  merges: u32 left id, u32 right id; merge i makes id 259+i
// Both ids of a merge are below its own id and are not special ids, no pair appears
// twice, and no token is longer than CUSET_TOK_MAX_CHUNK bytes.
//
// Thread safety: encode, decode and bytes only read the tokenizer; any number of threads
// may call them on one tokenizer at the same time.
// ---------------------------------------------------------------------------------------



#define CUSET_TOK_NBYTES 256         // ids 0..255 are bytes
#define CUSET_TOK_PROMPT 256         // special: opens the prompt
#define CUSET_TOK_TARGET 257         // special: opens the target (response)
#define CUSET_TOK_EOS 258            // special: ends the sample
#define CUSET_TOK_FIRST_MERGE 259    // first id made by a merge
#define CUSET_TOK_DEFAULT_VOCAB 2048 // recommended vocabulary size (see above)
#define CUSET_TOK_MAX_CHUNK 64       // longest pre-split chunk, hence longest token, in bytes
#define CUSET_TOK_MAX_VOCAB (1 << 24) // largest vocabulary a file may declare
#define CUSET_TOK_VERSION 1          // file format and pre-split rules version

typedef struct {
    int vocab_size;         // 259 + number of merges
    int *merges;            // stb_ds array (left, right) per merge: merge i makes id 259+i
    unsigned char *bytes;   // stb_ds array: the bytes of all tokens, back to back
    unsigned int *offset;   // stb_ds array (vocab_size+1): token id's bytes are
                            //   bytes[offset[id] .. offset[id+1])
    // merge lookup (left,right) -> merged id: an open-addressing hash table with linear
    // probing, at most half full, rebuilt from merges when it grows. A lower merged id is
    // an earlier merge, so the id doubles as the rank. (A plain table rather than an
    // stb_ds map: lookups are the inner loop of encoding, which runs 2x faster this way,
    // and a lookup writes nothing, so threads can share a tokenizer.)
    unsigned long long *pair_key; // stb_ds array, 2^pair_bits slots: (left << 32) | right,
                                  //   or CUSET__TOK_EMPTY
    int *pair_id;                 // stb_ds array, same slots: the merged id
    int pair_bits;
} CusetTokenizer;

// Resets tk to the byte-level tokenizer (259 ids, no merges). tk must be zeroed or valid.
void cuset_tok_init(CusetTokenizer *tk);
// Frees everything and leaves tk zeroed.
void cuset_tok_free(CusetTokenizer *tk);
// Trains on ntexts byte strings (texts[i] has lens[i] bytes) until vocab_size ids or no
// pair occurs twice. Replaces what tk held. Returns the number of merges learned, or -1
// (tk untouched) when vocab_size < 259 or > CUSET_TOK_MAX_VOCAB. verbose: progress on
// stderr.
int cuset_tok_train(CusetTokenizer *tk, const char *const *texts, const size_t *lens,
                    size_t ntexts, int vocab_size, int verbose);
// Appends the ids of the n bytes at s to the stb_ds array *ids; returns how many.
size_t cuset_tok_encode(const CusetTokenizer *tk, const char *s, size_t n, int **ids);
// Appends the bytes of n ids to the stb_ds array *out (not NUL-terminated); returns how
// many. Special ids add nothing; ids outside 0..vocab_size-1 are skipped.
size_t cuset_tok_decode(const CusetTokenizer *tk, const int *ids, size_t n, char **out);
// The bytes of token id (not NUL-terminated) and their count in *len; special ids give
// len 0; ids outside the vocabulary give NULL and len 0.
const char *cuset_tok_bytes(const CusetTokenizer *tk, int id, size_t *len);
int cuset_tok_vocab_size(const CusetTokenizer *tk);
// Appends the serialized tokenizer to the stb_ds array *buf; returns how many bytes.
size_t cuset_tok_save(const CusetTokenizer *tk, unsigned char **buf);
// Reads a serialized tokenizer. On success replaces what tk held and returns 0; on
// failure leaves tk untouched, writes the reason into err (if err and errlen > 0) and
// returns -1. Safe on any bytes.
int cuset_tok_load(CusetTokenizer *tk, const unsigned char *buf, size_t len,
                   char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif // CUSET_TOKENIZER_H

#ifdef CUSET_TOKENIZER_IMPLEMENTATION
#ifndef CUSET_TOKENIZER_IMPLEMENTATION_DONE
#define CUSET_TOKENIZER_IMPLEMENTATION_DONE

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(CUSET__STB_DS_COMPILED) && !defined(CUSET_NO_STB_DS_IMPLEMENTATION)
#define CUSET__STB_DS_COMPILED // once per program (CUSET_NO_STB_DS_IMPLEMENTATION: another file does)
#define STB_DS_IMPLEMENTATION
#include <stb/stb_ds.h>
#undef STB_DS_IMPLEMENTATION
#endif

// pre-split

enum { CUSET__TOK_WS, CUSET__TOK_WORD, CUSET__TOK_NUM, CUSET__TOK_PUNCT, CUSET__TOK_NUL };

// The class of a byte that starts a chunk.
static inline int cuset__tok_class(unsigned char c) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f')
        return CUSET__TOK_WS;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80)
        return CUSET__TOK_WORD;
    if (c >= '0' && c <= '9') return CUSET__TOK_NUM;
    if (c == 0) return CUSET__TOK_NUL;
    return CUSET__TOK_PUNCT;
}

// Whether byte c continues a chunk of class cls that started with a non-whitespace byte.
static inline int cuset__tok_continues(int cls, unsigned char c) {
    int k = cuset__tok_class(c);
    if (cls == CUSET__TOK_WORD) return k == CUSET__TOK_WORD || k == CUSET__TOK_NUM;
    if (cls == CUSET__TOK_NUM) return k == CUSET__TOK_WORD || k == CUSET__TOK_NUM || c == '.';
    return k == cls; // punctuation
}

// Returns the end (exclusive) of the chunk that starts at s[i], i < n (rules above).
static size_t cuset__tok_chunk_end(const unsigned char *s, size_t n, size_t i) {
    size_t max = n - i > CUSET_TOK_MAX_CHUNK ? i + CUSET_TOK_MAX_CHUNK : n;
    size_t j = i + 1;
    int cls = cuset__tok_class(s[i]);
    if (cls == CUSET__TOK_NUL) return j;
    if (cls == CUSET__TOK_WS) {
        while (j < max && cuset__tok_class(s[j]) == CUSET__TOK_WS) j++;
        // does the run end in a space that should lead the next chunk?
        int next = j < n ? cuset__tok_class(s[j]) : CUSET__TOK_WS;
        if (s[j - 1] != ' ' || next == CUSET__TOK_WS || next == CUSET__TOK_NUL) return j;
        if (j - 1 > i) return j - 1; // the run without its last space
        cls = next;                   // a lone space: it leads the chunk starting at s[j]
        j++;
    }
    while (j < max && cuset__tok_continues(cls, s[j])) j++;
    return j;
}

// ----------------------------------------------------------------------------
// vocabulary

#define CUSET__TOK_EMPTY (~0ULL) // an empty slot of the merge table (no pair has this key)

static inline unsigned long long cuset__tok_key(int a, int b) {
    return ((unsigned long long)(unsigned)a << 32) | (unsigned)b;
}

// First slot to probe for key: Fibonacci hashing (multiply, keep the top bits).
static inline size_t cuset__tok_slot(unsigned long long key, int bits) {
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

// The id that merges (a, b), or INT_MAX when no merge does.
static inline int cuset__tok_rank(const CusetTokenizer *tk, int a, int b) {
    unsigned long long key = cuset__tok_key(a, b);
    size_t mask = ((size_t)1 << tk->pair_bits) - 1;
    if (tk->pair_bits == 0) return INT_MAX;
    for (size_t h = cuset__tok_slot(key, tk->pair_bits);; h = (h + 1) & mask) {
        if (tk->pair_key[h] == key) return tk->pair_id[h];
        if (tk->pair_key[h] == CUSET__TOK_EMPTY) return INT_MAX;
    }
}

// Puts (a, b) -> id into the merge table; the table has a free slot.
static void cuset__tok_table_put(CusetTokenizer *tk, int a, int b, int id) {
    unsigned long long key = cuset__tok_key(a, b);
    size_t mask = ((size_t)1 << tk->pair_bits) - 1, h = cuset__tok_slot(key, tk->pair_bits);
    while (tk->pair_key[h] != CUSET__TOK_EMPTY) h = (h + 1) & mask;
    tk->pair_key[h] = key;
    tk->pair_id[h] = id;
}

static inline size_t cuset__tok_len(const CusetTokenizer *tk, int id) {
    return tk->offset[id + 1] - tk->offset[id];
}

// Doubles the merge table (1024 slots at first) and re-inserts every merge.
static void cuset__tok_table_grow(CusetTokenizer *tk) {
    tk->pair_bits = tk->pair_bits ? tk->pair_bits + 1 : 10;
    arrsetlen(tk->pair_key, (size_t)1 << tk->pair_bits);
    arrsetlen(tk->pair_id, (size_t)1 << tk->pair_bits);
    memset(tk->pair_key, 0xff, arrlenu(tk->pair_key) * sizeof *tk->pair_key); // all EMPTY
    for (ptrdiff_t i = 0; i < arrlen(tk->merges) / 2; i++)
        cuset__tok_table_put(tk, tk->merges[2 * i], tk->merges[2 * i + 1],
                             CUSET_TOK_FIRST_MERGE + (int)i);
}

// Appends the merge (a, b) as id tk->vocab_size: its bytes, and its table entry.
// Caller has checked a and b.
static void cuset__tok_add_merge(CusetTokenizer *tk, int a, int b) {
    int id = tk->vocab_size++;
    size_t la = cuset__tok_len(tk, a), lb = cuset__tok_len(tk, b);
    unsigned char *dst = arraddnptr(tk->bytes, la + lb); // may move tk->bytes: copy after
    memcpy(dst, tk->bytes + tk->offset[a], la);
    memcpy(dst + la, tk->bytes + tk->offset[b], lb);
    arrput(tk->offset, (unsigned)arrlenu(tk->bytes));
    arrput(tk->merges, a);
    arrput(tk->merges, b);
    if (arrlenu(tk->merges) > arrlenu(tk->pair_key)) cuset__tok_table_grow(tk); // > half full
    else cuset__tok_table_put(tk, a, b, id);
}

void cuset_tok_free(CusetTokenizer *tk) {
    arrfree(tk->merges);
    arrfree(tk->bytes);
    arrfree(tk->offset);
    arrfree(tk->pair_key);
    arrfree(tk->pair_id);
    memset(tk, 0, sizeof *tk);
}

void cuset_tok_init(CusetTokenizer *tk) {
    cuset_tok_free(tk);
    for (int i = 0; i < CUSET_TOK_NBYTES; i++) {
        arrput(tk->offset, (unsigned)i);
        arrput(tk->bytes, (unsigned char)i);
    }
    for (int i = CUSET_TOK_NBYTES; i <= CUSET_TOK_FIRST_MERGE; i++) // specials: empty
        arrput(tk->offset, (unsigned)CUSET_TOK_NBYTES);
    tk->vocab_size = CUSET_TOK_FIRST_MERGE;
}

int cuset_tok_vocab_size(const CusetTokenizer *tk) { return tk->vocab_size; }

const char *cuset_tok_bytes(const CusetTokenizer *tk, int id, size_t *len) {
    if (id < 0 || id >= tk->vocab_size) { *len = 0; return NULL; }
    *len = cuset__tok_len(tk, id);
    return (const char *)tk->bytes + tk->offset[id];
}

// ----------------------------------------------------------------------------
// encode / decode

// Encodes one chunk of n (1..CUSET_TOK_MAX_CHUNK) bytes: start from the bytes and
// repeatedly apply the earliest-learned merge among adjacent pairs (leftmost on ties),
// which is exactly what training did to this chunk. r[i] caches the merge of (t[i],t[i+1])
// so each step costs a scan of ints and two hash lookups.
static void cuset__tok_encode_chunk(const CusetTokenizer *tk, const unsigned char *c, int n,
                                    int **ids) {
    int t[CUSET_TOK_MAX_CHUNK], r[CUSET_TOK_MAX_CHUNK];
    for (int i = 0; i < n; i++) t[i] = c[i];
    for (int i = 0; i + 1 < n; i++) r[i] = cuset__tok_rank(tk, t[i], t[i + 1]);
    while (n > 1) {
        int best = 0;
        for (int i = 1; i + 1 < n; i++) if (r[i] < r[best]) best = i;
        if (r[best] == INT_MAX) break;
        // t[best], t[best+1] -> r[best]; close the gap in t and in r
        t[best] = r[best];
        for (int i = best + 1; i + 1 < n; i++) { t[i] = t[i + 1]; r[i - 1] = r[i]; }
        n--;
        if (best > 0) r[best - 1] = cuset__tok_rank(tk, t[best - 1], t[best]);
        if (best + 1 < n) r[best] = cuset__tok_rank(tk, t[best], t[best + 1]);
    }
    memcpy(arraddnptr(*ids, n), t, (size_t)n * sizeof *t);
}

size_t cuset_tok_encode(const CusetTokenizer *tk, const char *s, size_t n, int **ids) {
    const unsigned char *u = (const unsigned char *)s;
    size_t before = arrlenu(*ids);
    for (size_t i = 0, end; i < n; i = end) {
        end = cuset__tok_chunk_end(u, n, i);
        if (end - i == 1) arrput(*ids, u[i]); // common: ( ) ; \n ...
        else cuset__tok_encode_chunk(tk, u + i, (int)(end - i), ids);
    }
    return arrlenu(*ids) - before;
}

size_t cuset_tok_decode(const CusetTokenizer *tk, const int *ids, size_t n, char **out) {
    size_t before = arrlenu(*out);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *b = cuset_tok_bytes(tk, ids[i], &len);
        if (len > 0) memcpy(arraddnptr(*out, len), b, len);
    }
    return arrlenu(*out) - before;
}

// ----------------------------------------------------------------------------
// training

// A distinct chunk of the corpus, as token ids tok[start .. start+len) (shrinks as merges
// apply), weighted by how often it occurs.
typedef struct { int start, len, stamp; long long count; } cuset__tok_word;

// Statistics of one adjacent pair: its count over the corpus, the count last pushed on
// the heap, and the words it occurs in (may hold words that no longer contain it).
typedef struct { long long count, pushed; int *where; } cuset__tok_stat;
typedef struct { unsigned long long key; cuset__tok_stat value; } cuset__tok_stat_entry;

// Max-heap entry: the pair with the highest count, then the smallest key, is on top.
typedef struct { long long count; unsigned long long key; } cuset__tok_heap_item;

typedef struct {
    int *tok;                      // stb_ds: token ids of all words, back to back
    cuset__tok_word *words;        // stb_ds
    cuset__tok_stat_entry *stats;  // stb_ds hash map pair -> stats
    cuset__tok_heap_item *heap;    // stb_ds binary heap, lazily invalidated
    ptrdiff_t *touched;            // stb_ds: stats entries changed by the current merge
} cuset__tok_train_state;

static inline int cuset__tok_heap_above(cuset__tok_heap_item x, cuset__tok_heap_item y) {
    return x.count > y.count || (x.count == y.count && x.key < y.key);
}

static void cuset__tok_heap_push(cuset__tok_heap_item **heap, cuset__tok_heap_item it) {
    cuset__tok_heap_item *h;
    size_t i = arrlenu(*heap);
    arrput(*heap, it);
    h = *heap;
    while (i > 0 && cuset__tok_heap_above(h[i], h[(i - 1) / 2])) {
        cuset__tok_heap_item tmp = h[i]; h[i] = h[(i - 1) / 2]; h[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static cuset__tok_heap_item cuset__tok_heap_pop(cuset__tok_heap_item **heap) {
    cuset__tok_heap_item *h = *heap, top = h[0];
    size_t n = arrlenu(h) - 1, i = 0;
    h[0] = h[n];
    arrsetlen(*heap, n); // shrinking: no reallocation, h stays valid
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cuset__tok_heap_above(h[l], h[m])) m = l;
        if (r < n && cuset__tok_heap_above(h[r], h[m])) m = r;
        if (m == i) break;
        cuset__tok_heap_item tmp = h[i]; h[i] = h[m]; h[m] = tmp;
        i = m;
    }
    return top;
}

// Adds delta to the count of pair (a, b); records word w as containing it when w >= 0.
static void cuset__tok_count(cuset__tok_train_state *st, int a, int b, long long delta, int w) {
    unsigned long long key = cuset__tok_key(a, b);
    ptrdiff_t k = hmgeti(st->stats, key);
    if (k < 0) {
        cuset__tok_stat zero = {0, 0, NULL};
        hmput(st->stats, key, zero);
        k = hmgeti(st->stats, key);
    }
    cuset__tok_stat *s = &st->stats[k].value;
    s->count += delta;
    if (w >= 0 && (arrlen(s->where) == 0 || arrlast(s->where) != w)) arrput(s->where, w);
    arrput(st->touched, k);
}

// Applies merge (a, b) -> id to word w and updates the pair counts: the word's old pairs
// are uncounted, the merge is applied left to right, the new pairs are counted, and the
// word is filed under each new pair that contains id.
static void cuset__tok_merge_word(cuset__tok_train_state *st, int w, int a, int b, int id) {
    cuset__tok_word *wd = &st->words[w];
    int *t = st->tok + wd->start, n = wd->len, i, j;
    if (wd->stamp == id) return; // already done (listed twice)
    wd->stamp = id;
    for (i = 0; i + 1 < n && !(t[i] == a && t[i + 1] == b); i++) {}
    if (i + 1 >= n) return; // stale entry: an earlier merge took the pair away
    for (i = 0; i + 1 < n; i++) cuset__tok_count(st, t[i], t[i + 1], -wd->count, -1);
    for (i = 0, j = 0; i < n; j++) {
        if (i + 1 < n && t[i] == a && t[i + 1] == b) { t[j] = id; i += 2; }
        else t[j] = t[i++];
    }
    wd->len = n = j;
    for (i = 0; i + 1 < n; i++)
        cuset__tok_count(st, t[i], t[i + 1], wd->count, (t[i] == id || t[i + 1] == id) ? w : -1);
}

// Pushes a fresh heap entry for every pair whose count changed since its last push.
static void cuset__tok_push_touched(cuset__tok_train_state *st) {
    for (size_t i = 0; i < arrlenu(st->touched); i++) {
        cuset__tok_stat_entry *e = &st->stats[st->touched[i]];
        if (e->value.count != e->value.pushed) {
            e->value.pushed = e->value.count;
            if (e->value.count > 0) {
                cuset__tok_heap_item it = {e->value.count, e->key};
                cuset__tok_heap_push(&st->heap, it);
            }
        }
    }
    arrsetlen(st->touched, 0);
}

// Counts the chunks of all texts in a string hash map, then makes one word per distinct
// chunk. Chunks of one byte are skipped: they hold no pair. Chunks of 2+ bytes never hold
// a NUL (NUL is a chunk by itself), so they are valid C string keys.
static void cuset__tok_count_chunks(cuset__tok_train_state *st, const char *const *texts,
                                    const size_t *lens, size_t ntexts) {
    struct { char *key; long long value; } *counts = NULL;
    char buf[CUSET_TOK_MAX_CHUNK + 1];
    sh_new_strdup(counts); // the map keeps a copy of each key (sh_new_arena would too, but
                           // its storage trick trips clang's UBSan bounds check)
    for (size_t t = 0; t < ntexts; t++) {
        const unsigned char *s = (const unsigned char *)texts[t];
        for (size_t i = 0, end; i < lens[t]; i = end) {
            end = cuset__tok_chunk_end(s, lens[t], i);
            if (end - i < 2) continue;
            memcpy(buf, s + i, end - i);
            buf[end - i] = 0;
            ptrdiff_t k = shgeti(counts, buf);
            if (k < 0) shput(counts, buf, 1);
            else counts[k].value++;
        }
    }
    for (ptrdiff_t k = 0; k < shlen(counts); k++) { // insertion order: deterministic
        cuset__tok_word w = {(int)arrlen(st->tok), (int)strlen(counts[k].key), 0, counts[k].value};
        for (int i = 0; i < w.len; i++) arrput(st->tok, (unsigned char)counts[k].key[i]);
        arrput(st->words, w);
    }
    shfree(counts);
}

int cuset_tok_train(CusetTokenizer *tk, const char *const *texts, const size_t *lens,
                    size_t ntexts, int vocab_size, int verbose) {
    cuset__tok_train_state st = {0};
    if (vocab_size < CUSET_TOK_FIRST_MERGE || vocab_size > CUSET_TOK_MAX_VOCAB) return -1;
    cuset_tok_init(tk);
    cuset__tok_count_chunks(&st, texts, lens, ntexts);

    // initial pair counts, and one heap entry per pair
    for (int w = 0; w < (int)arrlen(st.words); w++) {
        const int *t = st.tok + st.words[w].start;
        for (int i = 0; i + 1 < st.words[w].len; i++)
            cuset__tok_count(&st, t[i], t[i + 1], st.words[w].count, w);
    }
    cuset__tok_push_touched(&st);

    while (tk->vocab_size < vocab_size) {
        // the valid top of the heap is the most frequent pair (entries whose count is no
        // longer the pair's count are stale and dropped)
        ptrdiff_t k = -1;
        while (arrlen(st.heap) > 0) {
            cuset__tok_heap_item top = cuset__tok_heap_pop(&st.heap);
            ptrdiff_t c = hmgeti(st.stats, top.key);
            if (st.stats[c].value.count == top.count) { k = c; break; }
        }
        if (k < 0 || st.stats[k].value.count < 2) break;
        unsigned long long key = st.stats[k].key;
        long long count = st.stats[k].value.count;
        int a = (int)(key >> 32), b = (int)(key & 0xffffffffu), id = tk->vocab_size;
        cuset__tok_add_merge(tk, a, b);

        // recount only the words that contain (a, b)
        int *where = st.stats[k].value.where;
        st.stats[k].value.where = NULL;
        for (size_t i = 0; i < arrlenu(where); i++) cuset__tok_merge_word(&st, where[i], a, b, id);
        arrfree(where);
        cuset__tok_push_touched(&st);

        if (verbose && ((id - CUSET_TOK_FIRST_MERGE) % 256 == 0 || tk->vocab_size == vocab_size)) {
            size_t len;
            const char *p = cuset_tok_bytes(tk, id, &len);
            fprintf(stderr, "cuset_tok_train: merge %d: (%d, %d) -> %d count %lld \"",
                    id - CUSET_TOK_FIRST_MERGE, a, b, id, count);
            for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)p[i];
                if (c >= 32 && c < 127 && c != '"' && c != '\\') fputc(c, stderr);
                else fprintf(stderr, "\\x%02x", c);
            }
            fprintf(stderr, "\"\n");
        }
    }
    if (verbose)
        fprintf(stderr, "cuset_tok_train: %d distinct chunks, %d merges, vocab %d\n",
                (int)arrlen(st.words), tk->vocab_size - CUSET_TOK_FIRST_MERGE, tk->vocab_size);

    for (ptrdiff_t k = 0; k < hmlen(st.stats); k++) arrfree(st.stats[k].value.where);
    hmfree(st.stats);
    arrfree(st.heap);
    arrfree(st.touched);
    arrfree(st.words);
    arrfree(st.tok);
    return tk->vocab_size - CUSET_TOK_FIRST_MERGE;
}

// ----------------------------------------------------------------------------
// serialization

static void cuset__tok_put_u32(unsigned char **buf, unsigned v) {
    unsigned char *p = arraddnptr(*buf, 4);
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

static unsigned cuset__tok_get_u32(const unsigned char *p) {
    return (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 | (unsigned)p[3] << 24;
}

size_t cuset_tok_save(const CusetTokenizer *tk, unsigned char **buf) {
    size_t before = arrlenu(*buf);
    memcpy(arraddnptr(*buf, 8), "CUSETTOK", 8);
    cuset__tok_put_u32(buf, CUSET_TOK_VERSION);
    cuset__tok_put_u32(buf, (unsigned)tk->vocab_size);
    for (ptrdiff_t i = 0; i < arrlen(tk->merges); i++)
        cuset__tok_put_u32(buf, (unsigned)tk->merges[i]);
    return arrlenu(*buf) - before;
}

int cuset_tok_load(CusetTokenizer *tk, const unsigned char *buf, size_t len,
                   char *err, size_t errlen) {
    CusetTokenizer nt = {0};
    char msg[256];
    const size_t header = 16;
    unsigned version = 0, vocab = 0;
    size_t need = 0;
#define CUSET__TOK_FAIL(...) do { snprintf(msg, sizeof msg, __VA_ARGS__); goto fail; } while (0)
    if (buf == NULL || len < header)
        CUSET__TOK_FAIL("tokenizer: %zu bytes, shorter than the %zu-byte header",
                        buf ? len : 0, header);
    if (memcmp(buf, "CUSETTOK", 8) != 0)
        CUSET__TOK_FAIL("tokenizer: bad magic at byte 0 (expected \"CUSETTOK\")");
    version = cuset__tok_get_u32(buf + 8);
    vocab = cuset__tok_get_u32(buf + 12);
    if (version != CUSET_TOK_VERSION)
        CUSET__TOK_FAIL("tokenizer: version %u at byte 8, this reader knows version %d",
                        version, CUSET_TOK_VERSION);
    if (vocab < CUSET_TOK_FIRST_MERGE || vocab > CUSET_TOK_MAX_VOCAB)
        CUSET__TOK_FAIL("tokenizer: vocab size %u at byte 12 is outside %d..%d",
                        vocab, CUSET_TOK_FIRST_MERGE, CUSET_TOK_MAX_VOCAB);
    need = header + 8 * (size_t)(vocab - CUSET_TOK_FIRST_MERGE);
    if (len != need)
        CUSET__TOK_FAIL("tokenizer: %zu bytes, but vocab size %u needs %zu (16-byte header"
                        " + 8 per merge): %s", len, vocab, need, len < need ? "truncated" : "trailing bytes");
    cuset_tok_init(&nt);
    for (unsigned id = CUSET_TOK_FIRST_MERGE; id < vocab; id++) {
        size_t at = header + 8 * (size_t)(id - CUSET_TOK_FIRST_MERGE);
        unsigned ab[2] = {cuset__tok_get_u32(buf + at), cuset__tok_get_u32(buf + at + 4)};
        for (int s = 0; s < 2; s++) {
            if (ab[s] >= id)
                CUSET__TOK_FAIL("tokenizer: merge for id %u at byte %zu: %s id %u is not below %u",
                                id, at + 4 * (size_t)s, s ? "right" : "left", ab[s], id);
            if (ab[s] >= CUSET_TOK_NBYTES && ab[s] < CUSET_TOK_FIRST_MERGE)
                CUSET__TOK_FAIL("tokenizer: merge for id %u at byte %zu: %s id %u is a special"
                                " token", id, at + 4 * (size_t)s, s ? "right" : "left", ab[s]);
        }
        int prev = cuset__tok_rank(&nt, (int)ab[0], (int)ab[1]);
        if (prev != INT_MAX)
            CUSET__TOK_FAIL("tokenizer: merge for id %u at byte %zu: pair (%u, %u) already"
                            " makes id %d", id, at, ab[0], ab[1], prev);
        size_t tlen = cuset__tok_len(&nt, (int)ab[0]) + cuset__tok_len(&nt, (int)ab[1]);
        if (tlen > CUSET_TOK_MAX_CHUNK)
            CUSET__TOK_FAIL("tokenizer: merge for id %u at byte %zu: token of %zu bytes, longer"
                            " than %d", id, at, tlen, CUSET_TOK_MAX_CHUNK);
        cuset__tok_add_merge(&nt, (int)ab[0], (int)ab[1]);
    }
#undef CUSET__TOK_FAIL
    cuset_tok_free(tk);
    *tk = nt;
    return 0;
fail:
    cuset_tok_free(&nt);
    if (err && errlen > 0) snprintf(err, errlen, "%s", msg);
    return -1;
}

#endif // CUSET_TOKENIZER_IMPLEMENTATION_DONE
#endif // CUSET_TOKENIZER_IMPLEMENTATION
