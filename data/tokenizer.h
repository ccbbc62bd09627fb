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
// file can make us allocate. (GPT-2's pre-split, for imported tokenizers, has no such
// bound on a piece: a longer one is encoded with a heap, O(n log n).)
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
// GPT-2's pre-split (split == CUSET_TOK_SPLIT_GPT2). A tokenizer imported from a GPT-2-family
// model (data/gpt2.h) keeps this vocabulary layout - bytes, the three specials, merges in
// order - but cuts text as GPT-2 does, with its regex
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// written out by hand (cuset__tok_gpt2_piece_end) with Unicode 14's letter and number
// classes (the tables below; the version the tokenizers library's regex matches) and
// White_Space for \s. Bytes that are not valid UTF-8 are one non-letter character each,
// so decode(encode(s)) == s still holds for any bytes. Pieces have no length limit, and
// tokens may be up to CUSET_TOK_MAX_GPT2_TOKEN bytes. Such a tokenizer is never trained here.
// Its file is version 2: the same layout with a u32 pre-split kind (1) after the vocab
// size, so the merges start at offset 20; tokenizers with the pre-split above are still
// written as version 1, byte for byte as before.
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
#define CUSET_TOK_VERSION_SPLIT 2    // the same with a pre-split kind (GPT-2's)
#define CUSET_TOK_SPLIT_CUSET 0      // the pre-split described above
#define CUSET_TOK_SPLIT_GPT2 1       // GPT-2's regex (imported tokenizers, data/gpt2.h)
#define CUSET_TOK_MAX_GPT2_TOKEN 1024 // longest token, in bytes, of a GPT-2 pre-split tokenizer

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
    int split;                    // CUSET_TOK_SPLIT_CUSET or CUSET_TOK_SPLIT_GPT2
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

// Unicode 14's letters (\p{L}: Lu Ll Lt Lm Lo) and numbers (\p{N}: Nd Nl No) as sorted
// ranges: the version whose classes the tokenizers library's regex uses (its 15.0 letters
// are not letters there). Made with Python 3.11's unicodedata (Unicode 14.0.0):
//   [c for c in range(0x110000) if unicodedata.category(chr(c))[0] == 'L'], merged to ranges.
static const uint32_t cuset__tok_gpt2_letters[][2] = {
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
static const uint32_t cuset__tok_gpt2_numbers[][2] = {
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
#define CUSET__TOK_GPT2_NLETTERS (int)(sizeof cuset__tok_gpt2_letters / sizeof cuset__tok_gpt2_letters[0])
#define CUSET__TOK_GPT2_NNUMBERS (int)(sizeof cuset__tok_gpt2_numbers / sizeof cuset__tok_gpt2_numbers[0])

static int cuset__tok_gpt2_in(const uint32_t (*r)[2], int n, uint32_t c) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < r[mid][0]) hi = mid - 1;
        else if (c > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

static int cuset__tok_gpt2_space(uint32_t c) { // Unicode White_Space
    return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The character at s (n > 0 bytes left): its length, and its class in *cls. Bytes that do
// not start a valid UTF-8 sequence are one "other" character each.
enum { CUSET__TOK_GPT2_SPACE, CUSET__TOK_GPT2_LETTER, CUSET__TOK_GPT2_NUMBER, CUSET__TOK_GPT2_OTHER };
static int cuset__tok_gpt2_char(const unsigned char *s, size_t n, int *cls) {
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
    *cls = cuset__tok_gpt2_space(c) ? CUSET__TOK_GPT2_SPACE
         : cuset__tok_gpt2_in(cuset__tok_gpt2_letters, CUSET__TOK_GPT2_NLETTERS, c) ? CUSET__TOK_GPT2_LETTER
         : cuset__tok_gpt2_in(cuset__tok_gpt2_numbers, CUSET__TOK_GPT2_NNUMBERS, c) ? CUSET__TOK_GPT2_NUMBER : CUSET__TOK_GPT2_OTHER;
    return len;
}

// The end of the piece of GPT-2's regex that starts at s[i], i < n:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
static size_t cuset__tok_gpt2_piece_end(const unsigned char *s, size_t n, size_t i) {
    if (s[i] == '\'' && i + 1 < n) {
        if (strchr("stmd", s[i + 1]) && s[i + 1]) return i + 2;
        if (i + 2 < n && (!memcmp(s + i + 1, "re", 2) || !memcmp(s + i + 1, "ve", 2) || !memcmp(s + i + 1, "ll", 2)))
            return i + 3;
    }
    int cls, k;
    size_t j = i + (size_t)cuset__tok_gpt2_char(s + i, n - i, &cls);
    if (s[i] == ' ' && j < n) { // " ?" before a letter, number or other run
        size_t len = (size_t)cuset__tok_gpt2_char(s + j, n - j, &k);
        if (k != CUSET__TOK_GPT2_SPACE) { cls = k; j += len; }
    }
    if (cls == CUSET__TOK_GPT2_SPACE) {
        size_t last = i; // where the run's last character starts
        while (j < n) {
            size_t len = (size_t)cuset__tok_gpt2_char(s + j, n - j, &k);
            if (k != CUSET__TOK_GPT2_SPACE) break;
            last = j;
            j += len;
        }
        if (j == n) return j;        // \s+(?!\S) at the end
        return last > i ? last : j;  // \s+(?!\S) gives back the last space; else \s+, one character
    }
    while (j < n) {
        size_t len = (size_t)cuset__tok_gpt2_char(s + j, n - j, &k);
        if (k != cls) break;
        j += len;
    }
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

// A max-heap (stb_ds array) of (count, key) items: the highest count, then the smallest
// key, on top. Training keeps its pairs by count in it; encoding a long piece its pairs by
// merge id (count = -id) and position (key).
typedef struct { long long count; unsigned long long key; } cuset__tok_heap_item;

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

// cuset__tok_encode_chunk for a long piece (GPT-2's pre-split puts no bound on one, and
// rescanning it after every merge is quadratic): the tokens in a linked list, every adjacent
// pair in the heap, so the pair taken is still the earliest-learned merge, leftmost on ties
// (list order is position order); a pair popped that no longer stands (a side merged since)
// is skipped, and each merge pushes the two pairs it makes. O(n log n).
static void cuset__tok_encode_long(const CusetTokenizer *tk, const unsigned char *c, int n, int **ids) {
    int *t = NULL; // t[i]: the token at list node i (-1: merged into the node before), next, prev
    arrsetlen(t, 3 * (size_t)n);
    int *next = t + n, *prev = next + n;
    cuset__tok_heap_item *heap = NULL; // (-merge id, node): the earliest merge, then the leftmost
    for (int i = 0; i < n; i++) t[i] = c[i], next[i] = i + 1, prev[i] = i - 1;
    for (int i = 0; i + 1 < n; i++) {
        int r = cuset__tok_rank(tk, t[i], t[i + 1]);
        if (r != INT_MAX) cuset__tok_heap_push(&heap, (cuset__tok_heap_item){-(long long)r, (unsigned)i});
    }
    while (arrlenu(heap) > 0) {
        cuset__tok_heap_item p = cuset__tok_heap_pop(&heap);
        int rank = (int)-p.count, a = (int)p.key, b = next[a];
        if (t[a] < 0 || b >= n || cuset__tok_rank(tk, t[a], t[b]) != rank) continue; // stale
        t[a] = rank, t[b] = -1; // b merged into a
        next[a] = next[b];
        if (next[a] < n) prev[next[a]] = a;
        for (int side = 0; side < 2; side++) { // the new pairs: (prev, a) and (a, next)
            int at = side ? a : prev[a];
            int r = at >= 0 && next[at] < n ? cuset__tok_rank(tk, t[at], t[next[at]]) : INT_MAX;
            if (r != INT_MAX) cuset__tok_heap_push(&heap, (cuset__tok_heap_item){-(long long)r, (unsigned)at});
        }
    }
    for (int i = 0; i < n; i = next[i]) arrput(*ids, t[i]);
    arrfree(t);
    arrfree(heap);
}

// Encodes one chunk of n >= 1 bytes: start from the bytes and
// repeatedly apply the earliest-learned merge among adjacent pairs (leftmost on ties),
// which is exactly what training did to this chunk. r[i] caches the merge of (t[i],t[i+1])
// so each step costs a scan of ints and two hash lookups: quadratic in n, fine for the
// project's chunks of at most 64 bytes; a longer piece (GPT-2's pre-split) goes to
// cuset__tok_encode_long.
static void cuset__tok_encode_chunk(const CusetTokenizer *tk, const unsigned char *c, int n,
                                    int **ids) {
    if (n > CUSET_TOK_MAX_CHUNK) { cuset__tok_encode_long(tk, c, n, ids); return; }
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
        end = tk->split == CUSET_TOK_SPLIT_GPT2 ? cuset__tok_gpt2_piece_end(u, n, i) : cuset__tok_chunk_end(u, n, i);
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


typedef struct {
    int *tok;                      // stb_ds: token ids of all words, back to back
    cuset__tok_word *words;        // stb_ds
    cuset__tok_stat_entry *stats;  // stb_ds hash map pair -> stats
    cuset__tok_heap_item *heap;    // stb_ds binary heap, lazily invalidated
    ptrdiff_t *touched;            // stb_ds: stats entries changed by the current merge
} cuset__tok_train_state;

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
    cuset__tok_put_u32(buf, tk->split ? CUSET_TOK_VERSION_SPLIT : CUSET_TOK_VERSION);
    cuset__tok_put_u32(buf, (unsigned)tk->vocab_size);
    if (tk->split) cuset__tok_put_u32(buf, (unsigned)tk->split);
    for (ptrdiff_t i = 0; i < arrlen(tk->merges); i++)
        cuset__tok_put_u32(buf, (unsigned)tk->merges[i]);
    return arrlenu(*buf) - before;
}

int cuset_tok_load(CusetTokenizer *tk, const unsigned char *buf, size_t len,
                   char *err, size_t errlen) {
    CusetTokenizer nt = {0};
    char msg[256];
    size_t header = 16, max_token = CUSET_TOK_MAX_CHUNK;
    unsigned version = 0, vocab = 0, split = CUSET_TOK_SPLIT_CUSET;
    size_t need = 0;
#define CUSET__TOK_FAIL(...) do { snprintf(msg, sizeof msg, __VA_ARGS__); goto fail; } while (0)
    if (buf == NULL || len < header)
        CUSET__TOK_FAIL("tokenizer: %zu bytes, shorter than the %zu-byte header",
                        buf ? len : 0, header);
    if (memcmp(buf, "CUSETTOK", 8) != 0)
        CUSET__TOK_FAIL("tokenizer: bad magic at byte 0 (expected \"CUSETTOK\")");
    version = cuset__tok_get_u32(buf + 8);
    vocab = cuset__tok_get_u32(buf + 12);
    if (version != CUSET_TOK_VERSION && version != CUSET_TOK_VERSION_SPLIT)
        CUSET__TOK_FAIL("tokenizer: version %u at byte 8, this reader knows versions %d and %d",
                        version, CUSET_TOK_VERSION, CUSET_TOK_VERSION_SPLIT);
    if (version == CUSET_TOK_VERSION_SPLIT) {
        header = 20;
        split = len >= header ? cuset__tok_get_u32(buf + 16) : ~0u;
        max_token = CUSET_TOK_MAX_GPT2_TOKEN;
        if (split != CUSET_TOK_SPLIT_GPT2)
            CUSET__TOK_FAIL("tokenizer: pre-split kind %d at byte 16 (or truncated), this reader knows %d (GPT-2's)",
                            (int)split, CUSET_TOK_SPLIT_GPT2);
    }
    if (vocab < CUSET_TOK_FIRST_MERGE || vocab > CUSET_TOK_MAX_VOCAB)
        CUSET__TOK_FAIL("tokenizer: vocab size %u at byte 12 is outside %d..%d",
                        vocab, CUSET_TOK_FIRST_MERGE, CUSET_TOK_MAX_VOCAB);
    need = header + 8 * (size_t)(vocab - CUSET_TOK_FIRST_MERGE);
    if (len != need)
        CUSET__TOK_FAIL("tokenizer: %zu bytes, but vocab size %u needs %zu (%zu-byte header"
                        " + 8 per merge): %s", len, vocab, need, header, len < need ? "truncated" : "trailing bytes");
    cuset_tok_init(&nt);
    nt.split = (int)split;
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
        if (tlen > max_token)
            CUSET__TOK_FAIL("tokenizer: merge for id %u at byte %zu: token of %zu bytes, longer"
                            " than %zu", id, at, tlen, max_token);
        if (arrlenu(nt.bytes) + tlen > UINT32_MAX) // the offsets are 32-bit
            CUSET__TOK_FAIL("tokenizer: merge for id %u at byte %zu: the tokens' bytes pass 4 GiB", id, at);
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
