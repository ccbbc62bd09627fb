/* cuset.h — CuSeT (CUDA-Sensitive Instruction Tuning) in one header.

   A small GPT, trained on the CPU by plain C (this file) or on one NVIDIA GPU by the
   kernels of cuset.cu, with the CuSeT objective and its baselines (SFT, DFT, ProFit,
   EAFT, ASFT) of ../shared/METHOD.md inside one fused loss.

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_IMPLEMENTATION
       #include "cuset.h"
   The objective's math (section 2) is `static inline` and marked CUSET_HD so that the
   CUDA loss kernel calls the very same functions as the CPU loss.

   Sections: 1 types and declarations, 2 the objective's math (METHOD.md equations),
   3 implementation: utilities, parameters, matmul, layers forward/backward, the model,
   incremental decoding, the loss, AdamW, batches and data, sampling, the tokenizer, the
   annotator, the data layer (JSON lines, .cu directories, token files), checkpoints.
   Depends on libc, libm, OpenMP (optional) and stb_ds (Debian libstb-dev). */
#ifndef CUSET_H
#define CUSET_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h> // FILE, for cuset_json_write_string
// stb_ds (Debian libstb-dev): the tokenizer's and annotator's hash maps and growable
// arrays, which their functions take and return. cuset.h compiles stb_ds's implementation
// with its own unless the program did so already before including cuset.h.
#ifdef STB_DS_IMPLEMENTATION
#define CUSET__STB_DS_COMPILED
#endif
#include <stb/stb_ds.h>

#ifdef __CUDACC__
#define CUSET_HD __host__ __device__
#else
#define CUSET_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------ */
/* 1. Types and declarations                                                             */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    int32_t vocab_size;        // V: real tokens
    int32_t padded_vocab_size; // Vp: V rounded up to a multiple of 64; rows V..Vp-1 of wte stay 0
    int32_t max_seq_len;       // maxT: positions of wpe
    int32_t n_layer;           // L
    int32_t n_head;            // NH
    int32_t n_embd;            // C (a multiple of NH)
} CusetConfig;

// The parameter tensors, in checkpoint order. Shapes in the comments.
#define CUSET_NUM_TENSORS 16
typedef struct {
    float *wte;      // (Vp, C)   token embedding, tied to the output head
    float *wpe;      // (maxT, C) position embedding
    float *ln1w;     // (L, C)
    float *ln1b;     // (L, C)
    float *qkvw;     // (L, 3C, C)
    float *qkvb;     // (L, 3C)
    float *attprojw; // (L, C, C)
    float *attprojb; // (L, C)
    float *ln2w;     // (L, C)
    float *ln2b;     // (L, C)
    float *fcw;      // (L, 4C, C)
    float *fcb;      // (L, 4C)
    float *fcprojw;  // (L, C, 4C)
    float *fcprojb;  // (L, C)
    float *lnfw;     // (C)
    float *lnfb;     // (C)
} CusetParams;

extern const char *const cuset_tensor_names[CUSET_NUM_TENSORS];
extern const int cuset_tensor_decay[CUSET_NUM_TENSORS]; // 1: AdamW weight decay applies

// Forward activations for a (B, T) batch, one allocation, named pointers.
typedef struct {
    float *encoded;   // (B, T, C)
    float *ln1;       // (L, B, T, C)
    float *ln1_mean;  // (L, B, T)
    float *ln1_rstd;  // (L, B, T)
    float *qkv;       // (L, B, T, 3C)
    float *att;       // (L, B, NH, T, T) softmax probabilities (causal: only t2 <= t used)
    float *atty;      // (L, B, T, C)   attention output before the projection
    float *residual2; // (L, B, T, C)   after the attention block
    float *ln2;       // (L, B, T, C)
    float *ln2_mean;  // (L, B, T)
    float *ln2_rstd;  // (L, B, T)
    float *fch;       // (L, B, T, 4C)  before GELU
    float *fch_gelu;  // (L, B, T, 4C)
    float *residual3; // (L, B, T, C)   after the MLP block = the layer's output
    float *lnf;       // (B, T, C)
    float *lnf_mean;  // (B, T)
    float *lnf_rstd;  // (B, T)
    float *logits;    // (B, T, Vp)     the loss overwrites it with d(loss)/d(logits)
} CusetActs;
#define CUSET_NUM_ACTS 18

// Backward scratch: gradients of activations, reused layer after layer.
typedef struct {
    float *dresidual; // (B, T, C)   gradient flowing down the residual stream
    float *dbt_c;     // (B, T, C)
    float *dbt_c2;    // (B, T, C)
    float *dqkv;      // (B, T, 3C)
    float *datt;      // (B, NH, T, T)
    float *dfch;      // (B, T, 4C)
    float *att_t;     // (B, NH, T, T)  attention's transposes: att^T, dpre^T
    float *kv_t;      // (B, NH, hs, T) attention's transposes: K^T (forward), V^T (backward)
} CusetGradActs;
#define CUSET_NUM_GRAD_ACTS 8

// One sample per row, padded. Row n holds prompt then target; position t predicts
// targets[t]. The target positions of a row are contiguous: tgt_start[n] ..
// tgt_start[n] + tgt_len[n] - 1. is_target marks them; is_cuda marks target tokens that
// lie in CUDA-sensitive code (METHOD.md eq. 3). Filled by cuset_batch_set_row.
typedef struct {
    int B, T;
    int *inputs;              // (B, T)
    int *targets;             // (B, T)
    unsigned char *is_target; // (B, T)
    unsigned char *is_cuda;   // (B, T)
    int *tgt_start;           // (B)
    int *tgt_len;             // (B) T_n
} CusetBatch;

typedef enum {
    CUSET_OBJ_SFT = 0, CUSET_OBJ_DFT, CUSET_OBJ_PROFIT, CUSET_OBJ_EAFT, CUSET_OBJ_ASFT, CUSET_OBJ_CUSET,
    CUSET_OBJ_COUNT
} CusetObjectiveKind;
extern const char *const cuset_objective_names[CUSET_OBJ_COUNT];

// The objective and its parameters. The three switches apply to kind == CUSET_OBJ_CUSET.
typedef struct {
    int32_t kind;      // CusetObjectiveKind
    int32_t conf_mask; // CuSeT switch: confidence mask 1[c > tau] (off: every token passes)
    int32_t cuda_mask; // CuSeT switch: + lambda on CUDA-sensitive tokens
    int32_t reweight;  // CuSeT switch: sample weight w_n = 1 - C_n (off: w_n = 1)
    float tau;         // confidence threshold (CuSeT, ProFit), paper default 0.1
    float lambda;      // CUDA mask weight, paper default 1.0
    int32_t window;    // window length l in tokens, paper default 256
    float alpha;       // EAFT exponent, default 1
    float beta;        // ASFT KL weight, default 0.1
} CusetObjective;
CusetObjective cuset_objective_default(CusetObjectiveKind kind);

// Sums over the target tokens (and samples) of one or more micro-batches; divide by ntok
// (nsamples for weight) to report means. loss is already normalised by the step's N.
typedef struct {
    double loss;     // objective value (contribution to the step's L)
    double ce;       // sum of -log c
    double conf;     // sum of c
    double pass;     // count of c > tau
    double weight;   // sum over samples with T_n > 0 of w_n = 1 - C_n (computed for every objective)
    double ntok;     // target tokens
    double nsamples; // samples with at least one target token
} CusetStats;

typedef struct {
    CusetConfig cfg;
    size_t tensor_sizes[CUSET_NUM_TENSORS];
    size_t num_params;
    float *params_memory; CusetParams params;
    float *grads_memory;  CusetParams grads;   // allocated on first backward
    float *m_memory, *v_memory;                // AdamW moments, allocated on first update
    int B, T;                                  // size the activations were allocated for
    float *acts_memory;  CusetActs acts;
    float *gacts_memory; CusetGradActs gacts;
    float *scratch;      // transposes for the matmuls
    float *loss_scratch; // per position lse, conf, aux (3 B T) and per row w (B)
} CusetGPT;

// Optimizer and schedule.
typedef struct {
    float max_lr, min_lr;   // peak and final learning rate
    int32_t warmup;         // linear warmup steps
    int32_t total;          // steps of the whole schedule (cosine reaches min_lr there)
    float beta1, beta2, eps;
    float weight_decay;     // decoupled, on the tensors of cuset_tensor_decay
    float grad_clip;        // global-norm clip; 0 disables
} CusetOptim;
CusetOptim cuset_optim_default(void);
float cuset_lr_at(const CusetOptim *o, int step);

// Model.
int cuset_config_check(const CusetConfig *c, char *err, size_t errlen);
int cuset_pad_vocab(int V);
void cuset_gpt_init(CusetGPT *m, const CusetConfig *cfg);           // allocate parameters
void cuset_gpt_init_random(CusetGPT *m, uint64_t seed, float std);  // GPT-2 style init
void cuset_gpt_free(CusetGPT *m);
void cuset_gpt_forward(CusetGPT *m, const int *inputs, int B, int T);  // fills acts.logits
// Loss on m->acts.logits (overwritten by dlogits). ref_logits: ASFT's frozen model
// logits (B,T,Vp) or NULL. inv_norm = 1/N with N the target tokens of the whole step.
void cuset_loss(CusetGPT *m, const CusetBatch *b, const CusetObjective *obj,
                const float *ref_logits, float inv_norm, CusetStats *stats);
// The same loss on the GPU (cuset.cu), liftable on its own: every pointer but obj and
// stats is a device pointer. logits (B,T,Vp) in, d(loss)/d(logits) out, in place;
// ref_logits (B,T,Vp) for ASFT or NULL; targets, is_target, is_cuda (B,T); tgt_start,
// tgt_len (B) as in CusetBatch. workspace: cuset_cuda_loss_workspace_bytes(B, T) bytes of
// device memory. stream: a cudaStream_t (NULL: the default stream). stats (host, or NULL
// to skip the one device-to-host copy and the sync it costs) += this call's sums, added
// in the same order as cuset_loss, so two runs are bit-identical. Returns 0 or a
// cudaError_t code.
size_t cuset_cuda_loss_workspace_bytes(int B, int T);
int cuset_cuda_loss(float *logits, const float *ref_logits, const int *targets, const unsigned char *is_target,
                    const unsigned char *is_cuda, const int *tgt_start, const int *tgt_len, int B, int T, int V, int Vp,
                    const CusetObjective *obj, float inv_norm, void *workspace, CusetStats *stats, void *stream);
void cuset_gpt_zero_grad(CusetGPT *m);
void cuset_gpt_backward(CusetGPT *m, const int *inputs);   // accumulates into grads
float cuset_gpt_grad_norm(const CusetGPT *m);
// Clips to o->grad_clip (if > 0) using norm, then one AdamW step; step is 0-based.
void cuset_gpt_update(CusetGPT *m, const CusetOptim *o, int step, float grad_norm);

// Batches.
void cuset_batch_alloc(CusetBatch *b, int B, int T);
void cuset_batch_free(CusetBatch *b);
// Row n from a sample: prompt (np >= 1 tokens) then target (nt tokens, per-token CUDA
// flags). Returns the number of target tokens dropped because the row is full
// (truncation), or -1 when the prompt alone does not leave room for one target token.
int cuset_batch_set_row(CusetBatch *b, int n, const int *prompt, int np, const int *target,
                        const unsigned char *target_cuda, int nt);
int cuset_batch_check(const CusetBatch *b, int vocab_size, char *err, size_t errlen);
int cuset_batch_target_tokens(const CusetBatch *b);

// Samples and data sources. A data source is a list of samples; the trainer draws rows
// from it in an order that is a pure function of (seed, epoch), so a run resumed from a
// checkpoint sees exactly the batches it would have seen.
typedef struct {
    int *prompt; int np;                 // starts with the prompt-opening token
    int *target; int nt;                 // ends with the end-of-sample token
    unsigned char *target_cuda;          // (nt) CUDA-sensitive flags
} CusetSample;
typedef struct {
    CusetSample *samples; int n;
    int vocab_size;
    uint64_t fingerprint;                // hash of all samples: checked on --resume
} CusetDataset;
void cuset_dataset_free(CusetDataset *d);
uint64_t cuset_dataset_fingerprint(const CusetDataset *d);
// Fills the batch with samples order[first .. first+B-1] of d (wrapping). Returns the
// number of target tokens truncated; -1 and a message in err if a prompt does not fit.
int cuset_batch_from_dataset(CusetBatch *b, const CusetDataset *d, const int *order, int norder,
                             long first, char *err, size_t errlen);
void cuset_shuffle(int *order, int n, uint64_t seed, int epoch);
// The samples whose prompt fits a row of T tokens, shuffled by the seed and split into
// training and validation lists (val_frac of them). Returns how many fit; *train (which
// *val points into) is malloc'd: free(*train).
int cuset_split(const CusetDataset *d, int T, double val_frac, uint64_t seed, int **train, int *ntrain, int **val, int *nval);
// A learnable synthetic task (reverse a random sequence) for tests, benchmarks and demos.
// Token 1 opens the prompt, 2 ends the target; target tokens with id % 4 == 0 are
// flagged CUDA-sensitive.
void cuset_dataset_synthetic(CusetDataset *d, int n, int vocab_size, int min_len, int max_len, uint64_t seed);

// ---------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------
// The CUDA-sensitivity annotator (METHOD.md, "The objective", item 3): the byte ranges of
// a CUDA program that CuSeT weights as CUDA-sensitive: __global__ / __device__ function
// definitions, kernel launches and dim3 declarations. A token is CUDA-sensitive when any
// of its bytes lies in a span (cuset_span_flags gives the per-byte answer).
//
// THE SPAN RULES (every span is a byte range [start, end) of src)
//
// 0. Lexing. The source is cut into tokens first; these are skipped as a whole, so
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

// ---------------------------------------------------------------------------------------
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
// or CUDABench's ("level1_prompt", "bench.cu").
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
//   8           4          u32 version (1)
//   12          4          u32 header size (64)
//   16          4          u32 vocabulary size V (= the tokenizer's)
//   20          4          u32 number of samples N (1 .. INT_MAX)
//   24          8          u64 total prompt tokens P (sum of np)
//   32          8          u64 total target tokens Q (sum of nt)
//   40          8          u64 source stamp: the caller's cache key (e.g. size and mtime
//                          of the source); stored and returned, never interpreted
//   48          8          u64 tokenizer bytes K
//   56          8          u64 dataset fingerprint (cuset_dataset_fingerprint), a
//                          checksum over every sample, checked on load
//   64          K          the tokenizer, as cuset_tok_save writes it
//   64+K        8N         per sample: u32 np, u32 nt
//   64+K+8N     4(P+Q)     token ids as int32, sample by sample: its np prompt ids, then
//                          its nt target ids (a sample's tokens are contiguous)
//   ...+4(P+Q)  Q          target CUDA flags, one byte (0 or 1) per target token, sample
//                          by sample
// The file is exactly 64 + K + 8N + 4(P+Q) + Q bytes (K is a multiple of 8, so the ids
// are 4-byte aligned). Every sample has the layout of cuset_sample_from_text: np >= 2,
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
// "<data>") is used in messages. A file parsed and serialized again gives the same bytes.
#define CUSET_DATA_MAGIC "CUSETDAT"
#define CUSET_DATA_VERSION 1
#define CUSET_DATA_HEADER 64
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
// on the text. tk must be cuset_tok_init'ed. On success d and tk hold the data and its
// tokenizer and note says what was done.
int cuset_data_open(const char *src, const CusetTokenizer *fixed, int vocab_size, CusetDataset *d, CusetTokenizer *tk,
                    char *note, size_t notelen, char *err, size_t errlen);

// ---------------------------------------------------------------------------------------
// Checkpoints. A checkpoint holds the parameters and optionally the optimizer state
// (moments, step, training settings), ASFT's frozen reference parameters and the
// tokenizer, so that one file is enough to sample from.
typedef struct {
    int32_t B, T, accum;     // micro-batch shape and micro-batches per step
    int32_t steps;           // optimizer steps of the run
    int32_t seed;
    int32_t val_every, ckpt_every;
    CusetObjective obj;
    CusetOptim optim;
} CusetTrainSettings;
typedef struct {
    CusetConfig cfg;
    int version;                 // of the file read (the writer always writes CUSET_CKPT_VERSION);
                                 // 1: before the eq. 5 correction, see cuset_checkpoint_old_windows
    int has_optimizer, has_reference, has_tokenizer;
    int32_t step;                // optimizer steps completed
    uint64_t data_fingerprint;
    CusetTrainSettings settings;
} CusetCheckpointInfo;
// Writes to path.tmp.PID then renames. ref and tk may be NULL. Returns 0, or -1 with a message.
int cuset_checkpoint_save(const char *path, const CusetGPT *m, const CusetGPT *ref, const CusetTokenizer *tk,
                          const CusetCheckpointInfo *info, int with_optimizer, char *err, size_t errlen);
// 1 when the checkpoint was trained by CuSeT with reweighting under the window rule
// before the 2026-12-01 correction of eq. 5 (checkpoint version 1: a target shorter than
// the window was one window, so C_n differed for ceil(l/2) < T_n < l); the layout is the
// same, so such files still load, and a run continued from one uses eq. 5 as written.
int cuset_checkpoint_old_windows(const CusetCheckpointInfo *info);
// Reads the header only.
int cuset_checkpoint_info(const char *path, CusetCheckpointInfo *info, char *err, size_t errlen);
// Allocates m (and ref when non-NULL and the file has one) and reads them; loads the
// optimizer moments when the file has them and want_optimizer is set; loads the
// tokenizer into tk (cuset_tok_init'ed by the caller) when tk is non-NULL and the file has one.
int cuset_checkpoint_load(const char *path, CusetGPT *m, CusetGPT *ref, CusetTokenizer *tk, int want_optimizer,
                          CusetCheckpointInfo *info, char *err, size_t errlen);

// Incremental decoding with a KV cache: the keys and values of every position so far, per
// layer, so that each new token costs one position's worth of the forward pass.
typedef struct {
    int len;          // positions cached
    float *k, *v;     // (L, maxT, C) each
    float *buf;       // one position's activations: x, ln, qkv, att, y, fch, logits
} CusetKVCache;
void cuset_kv_init(CusetKVCache *kv, const CusetConfig *cfg);
void cuset_kv_free(CusetKVCache *kv);
// Feeds token at position kv->len and returns the logits (Vp) predicting the next one;
// the pointer stays valid until the next call. Requires kv->len < max_seq_len.
const float *cuset_gpt_decode(const CusetGPT *m, CusetKVCache *kv, int token);

// Sampling: a token from one row of logits (the V real columns) with temperature
// (0: greedy), top-k (0: off) and top-p (1: off); work holds V entries.
typedef struct { float prob; int id; } CusetProbId;
int cuset_sample(const float *logits, int V, float temperature, int top_k, float top_p, uint64_t *rng, CusetProbId *work);

// Reads a whole file (or a pipe: "/dev/stdin") into *buf (malloc'd, one NUL byte past the
// end); returns 0, or -1 with a message.
int cuset_read_file(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen);

// Small utilities used by the mains.
uint64_t cuset_rng_next(uint64_t *state);
float cuset_rng_uniform(uint64_t *state);   // [0, 1)
double cuset_time(void);

// ---------------------------------------------------------------------------------------
// The GPU backend (cuset.cu; linked when the build has nvcc, and then the mains are built
// with -DCUSET_CUDA). Plain C types only: the device state is an opaque struct, every
// pointer below is a host pointer. One CusetCudaModel mirrors a CusetGPT on the device
// (parameters, gradients, AdamW moments, ASFT reference parameters and the activations of
// a (B, T) micro-batch, one allocation); one optimizer step on the GPU is
//     cuset_cuda_forward_backward(g, batches, accum, &obj, &stats, &norm);
//     cuset_cuda_update(g, &optim, step, norm);
// exactly like zero_grad + accum x (forward, loss, backward) + grad_norm + update on the
// CPU. Functions that can fail return -1 (NULL) and write the reason into err.
typedef struct CusetCudaModel CusetCudaModel;
typedef struct CusetCudaDecoder CusetCudaDecoder;
// 1 when a CUDA device can be used; 0 with the reason in why (no driver: cudaGetDeviceCount
// error 35, no device, ...). Never crashes.
int cuset_cuda_available(char *why, size_t n);
// Uploads m's parameters (and its AdamW moments if m has them) and ref's (ASFT's frozen
// reference; may be NULL) and allocates everything a (B, T) micro-batch needs.
CusetCudaModel *cuset_cuda_model_new(const CusetGPT *m, const CusetGPT *ref, int B, int T, char *err, size_t errlen);
void cuset_cuda_model_free(CusetCudaModel *g);
// One optimizer step's gradients: zero, then for each of the accum micro-batches (shape
// B x T of cuset_cuda_model_new) forward (+ the reference's for ASFT), the fused loss with
// N = all target tokens of the step, backward. Stats are summed into *stats; *grad_norm is
// the global gradient norm (before clipping). Returns 0, or -1 with a message.
int cuset_cuda_forward_backward(CusetCudaModel *g, const CusetBatch *batches, int accum, const CusetObjective *obj,
                                CusetStats *stats, float *grad_norm, char *err, size_t errlen);
// Clip by grad_norm (o->grad_clip) and one AdamW step (step 0-based), as cuset_gpt_update.
void cuset_cuda_update(CusetCudaModel *g, const CusetOptim *o, int step, float grad_norm);
// Forward and loss only (validation): stats summed into *stats with inv_norm = 1/N.
int cuset_cuda_eval(CusetCudaModel *g, const CusetBatch *b, const CusetObjective *obj, float inv_norm,
                    CusetStats *stats, char *err, size_t errlen);
// Copies the device parameters (and moments, once an update ran or were uploaded) into m,
// which must have m's config (moments are allocated when m has none): for checkpoints.
void cuset_cuda_model_download(const CusetCudaModel *g, CusetGPT *m);
// The gradients (num_params floats, checkpoint order) into host memory: for tests.
void cuset_cuda_download_grads(const CusetCudaModel *g, float *grads);
// Incremental decoding on the GPU, like cuset_kv_init + cuset_gpt_decode: the parameters
// and a KV cache of the model's whole context on the device. decode feeds token at the
// next position and returns the logits (Vp floats, host memory, valid until the next call).
CusetCudaDecoder *cuset_cuda_decoder_new(const CusetGPT *m, char *err, size_t errlen);
const float *cuset_cuda_decode(CusetCudaDecoder *d, int token);
int cuset_cuda_decoder_len(const CusetCudaDecoder *d);
void cuset_cuda_decoder_reset(CusetCudaDecoder *d);   // empties the cache (a new prompt)
void cuset_cuda_decoder_free(CusetCudaDecoder *d);
#ifdef CUSET_CUDA_INTERNALS
// Single kernels for test/test_gpu.cu and test/bench_gpu.cu: device pointers, the default
// stream, synchronous. Shapes and semantics as the CPU functions named in cuset.cu (except
// that matmul_backward overwrites dinp, times gelu'(pre) when pre is non-NULL).
void cuset__cuda_test_matmul_forward(float *out, float *pre, const float *inp, const float *w, const float *bias,
                                     int N, int IC, int OC);
void cuset__cuda_test_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                      const float *w, const float *pre, int N, int IC, int OC);
void cuset__cuda_test_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                        const float *b, int N, int C);
void cuset__cuda_test_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                         const float *w, const float *mean, const float *rstd, int N, int C);
void cuset__cuda_test_residual_forward(float *out, const float *a, const float *b, size_t n);
void cuset__cuda_test_encoder_forward(float *out, const int *inputs, const float *wte, const float *wpe, int B, int T, int C);
void cuset__cuda_test_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *host_inputs, int B, int T, int C);
void cuset__cuda_test_adamw(float *params, float *m, float *v, const float *grads, size_t n, float lr, float beta1,
                            float beta2, float bc1, float bc2, float eps, float wd, float clip);
float cuset__cuda_test_global_norm(const float *x, size_t n);
void cuset__cuda_test_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH);
void cuset__cuda_test_attention_backward(float *dqkv, float *delta, const float *dout, const float *qkv, const float *out,
                                         const float *lse, int B, int T, int C, int NH);
#endif

// ---------------------------------------------------------------------------------------
// JSON members of one line, and JSON strings out (the evaluation harness emu/eval.h and the
// corpus tools use them besides the JSON-lines reader above).
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

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------------------------ */
/* 2. The objective's math, METHOD.md equation by equation. Shared by the CPU loss and   */
/*    the CUDA loss kernel; every quantity here is a stop-gradient constant.             */
/* ------------------------------------------------------------------------------------ */

// Eq. 2: confidence mask 1[c > tau].
CUSET_HD static inline float cuset_conf_mask(float c, float tau) { return c > tau ? 1.0f : 0.0f; }

// Eq. 3: CUDA mask lambda * 1[token is CUDA-sensitive].
CUSET_HD static inline float cuset_cuda_mask(int is_cuda, float lambda) { return is_cuda ? lambda : 0.0f; }

// Eq. 4: hybrid mask M = Mconf + Mcuda, with each switch of the ablation table.
// With the confidence mask off every token passes (Mconf = 1), so all switches off is SFT.
CUSET_HD static inline float cuset_hybrid_mask(const CusetObjective *o, float c, int is_cuda) {
    float m = o->conf_mask ? cuset_conf_mask(c, o->tau) : 1.0f;
    if (o->cuda_mask) m += cuset_cuda_mask(is_cuda, o->lambda);
    return m;
}

// Eq. 5: window of target index j (0-based here; METHOD.md is 1-based) in a target of
// n tokens: [j - floor(l/2), j + ceil(l/2) - 1] clipped to [0, n-1]. The same rule for
// every n: only when n <= ceil(l/2) is every window the whole target.
CUSET_HD static inline void cuset_window(int j, int n, int l, int *lo, int *hi) {
    int a = j - l / 2, b = j + (l + 1) / 2 - 1;
    *lo = a < 0 ? 0 : a;
    *hi = b > n - 1 ? n - 1 : b;
}

// Eqs. 6-7: C_n = the minimum over j of the mean confidence of window j (eq. 5, clipped
// windows included, whatever n is), so C_n moves by at most one token's share when a
// token is appended. conf holds the n confidences of the sample in order; n = 0 gives 1.
// Both window ends only move forward with j, so one running sum in double does it: O(n).
CUSET_HD static inline float cuset_hardest_window(const float *conf, int n, int l) {
    if (n <= 0) return 1.0f;
    double sum = 0.0, best = 1e30;
    int lo = 0, hi = -1; // the running window [lo, hi]
    for (int j = 0; j < n; j++) {
        int wlo, whi;
        cuset_window(j, n, l, &wlo, &whi);
        while (hi < whi) sum += conf[++hi];
        while (lo < wlo) sum -= conf[lo++];
        double mean = sum / (hi - lo + 1);
        if (mean < best) best = mean;
    }
    return (float)best;
}

// Eq. 8: sample weight w_n = 1 - C_n.
CUSET_HD static inline float cuset_sample_weight(float hardest_window) { return 1.0f - hardest_window; }

// EAFT: keep the k largest logits of a row, sorted descending in top[0..*n-1].
CUSET_HD static inline void cuset_topk_push(float *top, int *n, int k, float z) {
    if (*n == k && z <= top[k - 1]) return;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && top[i - 1] < z) { top[i] = top[i - 1]; i--; }
    top[i] = z;
}

// EAFT: (H / 3.0)^alpha, H the entropy of the softmax over the n largest logits
// (sorted descending, so top[0] is the max).
#define CUSET_EAFT_TOPK 20
CUSET_HD static inline float cuset_eaft_weight(const float *top, int n, float alpha) {
    float z = 0.0f, s = 0.0f;
    for (int i = 0; i < n; i++) { float e = expf(top[i] - top[0]); z += e; s += e * (top[i] - top[0]); }
    float entropy = logf(z) - s / z; // -sum q log q with q = e / z
    return powf(entropy / 3.0f, alpha);
}

// Eq. 9 and the baselines: the per-token coefficient a such that the token contributes
// a * (-log c) to the loss and a * (softmax - onehot) to the logits' gradient (both then
// scaled by 1/N). c is the token's confidence, w the sample weight (CuSeT, reweighting
// on; 1 otherwise), eaft the EAFT weight of the position (unused by the others).
CUSET_HD static inline float cuset_token_coef(const CusetObjective *o, float c, int is_cuda, float w, float eaft) {
    switch (o->kind) {
    case CUSET_OBJ_SFT:    return 1.0f;
    case CUSET_OBJ_DFT:    return c;                          // -p log p, p constant
    case CUSET_OBJ_PROFIT: return c >= o->tau ? 1.0f : 0.0f;  // 1[p >= tau] (-log p)
    case CUSET_OBJ_EAFT:   return eaft;
    case CUSET_OBJ_ASFT:   return c;                          // DFT part; the KL term is separate
    case CUSET_OBJ_CUSET:  return w * cuset_hybrid_mask(o, c, is_cuda);
    default:               return 0.0f;
    }
}

// ASFT: the KL(p_ref || p_theta) term's logit gradient on one vocabulary entry, before 1/N.
CUSET_HD static inline float cuset_kl_grad(float p_theta, float p_ref, float beta) { return beta * (p_theta - p_ref); }
// ASFT: one vocabulary entry's share of KL(p_ref || p_theta) given the two log-probabilities.
CUSET_HD static inline float cuset_kl_term(float logp_ref, float logp_theta) { return expf(logp_ref) * (logp_ref - logp_theta); }

#endif // CUSET_H

/* ------------------------------------------------------------------------------------ */
/* 3. Implementation                                                                      */
/* ------------------------------------------------------------------------------------ */
#ifdef CUSET_IMPLEMENTATION
#ifndef CUSET_IMPLEMENTATION_DONE
#define CUSET_IMPLEMENTATION_DONE

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if !defined(CUSET__STB_DS_COMPILED) && !defined(CUSET_NO_STB_DS_IMPLEMENTATION)
#define CUSET__STB_DS_COMPILED
#define STB_DS_IMPLEMENTATION
#include <stb/stb_ds.h>
#endif

const char *const cuset_tensor_names[CUSET_NUM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};
const int cuset_tensor_decay[CUSET_NUM_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};
const char *const cuset_objective_names[CUSET_OBJ_COUNT] = {"sft", "dft", "profit", "eaft", "asft", "cuset"};

// Loops with less work than this run on one thread: waking the others costs more.
#define CUSET_PAR_MIN 16384

// ---- utilities ----------------------------------------------------------------------

static void cuset__die(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cuset: %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}
#define CUSET_DIE(...) cuset__die(__FILE__, __LINE__, __VA_ARGS__)

static void *cuset__calloc(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size);
    if (!p) cuset__die(file, line, "out of memory allocating %zu x %zu bytes", n, size);
    return p;
}
#define CUSET_CALLOC(n, size) cuset__calloc((n), (size), __FILE__, __LINE__)

static int cuset__err(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

uint64_t cuset_rng_next(uint64_t *s) { // splitmix64
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
float cuset_rng_uniform(uint64_t *s) { return (cuset_rng_next(s) >> 40) * (1.0f / 16777216.0f); }
static float cuset__rng_normal(uint64_t *s) { // Box-Muller
    float u1 = cuset_rng_uniform(s), u2 = cuset_rng_uniform(s);
    return sqrtf(-2.0f * logf(u1 + 1e-12f)) * cosf(6.2831853f * u2);
}

double cuset_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

CusetObjective cuset_objective_default(CusetObjectiveKind kind) {
    CusetObjective o = {kind, 1, 1, 1, 0.1f, 1.0f, 256, 1.0f, 0.1f};
    return o;
}

CusetOptim cuset_optim_default(void) {
    CusetOptim o = {3e-4f, 3e-5f, 0, 1, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    return o;
}

// Linear warmup to max_lr over `warmup` steps, then cosine decay to min_lr at `total`.
float cuset_lr_at(const CusetOptim *o, int step) {
    if (step < o->warmup) return o->max_lr * (step + 1) / o->warmup;
    int span = o->total - o->warmup > 1 ? o->total - o->warmup : 1;
    double progress = (double)(step - o->warmup) / span;
    if (progress > 1.0) progress = 1.0;
    return (float)(o->min_lr + 0.5 * (o->max_lr - o->min_lr) * (1.0 + cos(M_PI * progress)));
}

// ---- parameters -----------------------------------------------------------------------

int cuset_pad_vocab(int V) { return (V + 63) / 64 * 64; }

int cuset_config_check(const CusetConfig *c, char *err, size_t errlen) {
    if (c->vocab_size < 2 || c->vocab_size > (1 << 24))
        return cuset__err(err, errlen, "vocab_size %d out of range [2, 2^24]", c->vocab_size);
    if (c->padded_vocab_size != cuset_pad_vocab(c->vocab_size))
        return cuset__err(err, errlen, "padded_vocab_size %d is not vocab_size %d rounded up to 64",
                          c->padded_vocab_size, c->vocab_size);
    if (c->max_seq_len < 1 || c->max_seq_len > (1 << 16))
        return cuset__err(err, errlen, "max_seq_len %d out of range [1, 65536]", c->max_seq_len);
    if (c->n_layer < 1 || c->n_layer > 256) return cuset__err(err, errlen, "n_layer %d out of range [1, 256]", c->n_layer);
    if (c->n_head < 1 || c->n_embd < 1 || c->n_embd > 16384 || c->n_embd % c->n_head)
        return cuset__err(err, errlen, "n_embd %d must be in [1, 16384] and a multiple of n_head %d", c->n_embd, c->n_head);
    return 0;
}

static void cuset__tensor_sizes(const CusetConfig *c, size_t *s) {
    size_t Vp = c->padded_vocab_size, maxT = c->max_seq_len, L = c->n_layer, C = c->n_embd;
    s[0] = Vp * C;  s[1] = maxT * C;
    s[2] = L * C;   s[3] = L * C;
    s[4] = L * 3 * C * C; s[5] = L * 3 * C;
    s[6] = L * C * C; s[7] = L * C;
    s[8] = L * C;   s[9] = L * C;
    s[10] = L * 4 * C * C; s[11] = L * 4 * C;
    s[12] = L * C * 4 * C; s[13] = L * C;
    s[14] = C;      s[15] = C;
}

// Points the n named pointers of `table` (a struct of float*) into one block.
static void cuset__point(float **table, int n, const size_t *sizes, float *memory) {
    for (int i = 0; i < n; i++) { table[i] = memory; memory += sizes[i]; }
}

void cuset_gpt_init(CusetGPT *m, const CusetConfig *cfg) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    cuset__tensor_sizes(cfg, m->tensor_sizes);
    for (int i = 0; i < CUSET_NUM_TENSORS; i++) m->num_params += m->tensor_sizes[i];
    m->params_memory = (float *)CUSET_CALLOC(m->num_params, sizeof(float));
    cuset__point((float **)&m->params, CUSET_NUM_TENSORS, m->tensor_sizes, m->params_memory);
}

// GPT-2 init: N(0, std) for the matrices, std / sqrt(2L) for the two projections into
// the residual stream, zero biases, unit LayerNorm gains; padding rows of wte stay 0.
void cuset_gpt_init_random(CusetGPT *m, uint64_t seed, float std) {
    const CusetConfig *c = &m->cfg;
    uint64_t rng = seed * 0x2545F4914F6CDD1Dull + 1;
    for (int t = 0; t < CUSET_NUM_TENSORS; t++) {
        float *p = ((float **)&m->params)[t];
        size_t n = m->tensor_sizes[t];
        if (t == 2 || t == 8 || t == 14) { for (size_t i = 0; i < n; i++) p[i] = 1.0f; continue; }
        if (!cuset_tensor_decay[t]) { memset(p, 0, n * sizeof(float)); continue; }
        float s = (t == 6 || t == 12) ? std / sqrtf(2.0f * c->n_layer) : std;
        if (t == 0) n = (size_t)c->vocab_size * c->n_embd; // keep padding rows zero
        for (size_t i = 0; i < n; i++) p[i] = s * cuset__rng_normal(&rng);
    }
}

static void cuset__alloc_acts(CusetGPT *m, int B, int T) {
    if (m->acts_memory && m->B == B && m->T == T) return;
    free(m->acts_memory); free(m->gacts_memory); free(m->scratch); free(m->loss_scratch);
    size_t L = m->cfg.n_layer, C = m->cfg.n_embd, NH = m->cfg.n_head, Vp = m->cfg.padded_vocab_size;
    size_t BT = (size_t)B * T;
    size_t a[CUSET_NUM_ACTS] = {BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * B * NH * T * T,
                                L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT, L * BT * 4 * C,
                                L * BT * 4 * C, L * BT * C, BT * C, BT, BT, BT * Vp};
    size_t g[CUSET_NUM_GRAD_ACTS] = {BT * C, BT * C, BT * C, BT * 3 * C, B * NH * T * T, BT * 4 * C,
                                     B * NH * T * T, BT * C};
    size_t na = 0, ng = 0;
    for (int i = 0; i < CUSET_NUM_ACTS; i++) na += a[i];
    for (int i = 0; i < CUSET_NUM_GRAD_ACTS; i++) ng += g[i];
    m->acts_memory = (float *)CUSET_CALLOC(na, sizeof(float));
    m->gacts_memory = (float *)CUSET_CALLOC(ng, sizeof(float));
    cuset__point((float **)&m->acts, CUSET_NUM_ACTS, a, m->acts_memory);
    cuset__point((float **)&m->gacts, CUSET_NUM_GRAD_ACTS, g, m->gacts_memory);
    // Transpose scratch: the largest weight (Vp x C or 4C x C) or output gradient (BT x Vp or BT x 4C).
    size_t widest = Vp > 4 * C ? Vp : 4 * C, s = (BT > C ? BT : C) * widest;
    m->scratch = (float *)CUSET_CALLOC(s, sizeof(float));
    m->loss_scratch = (float *)CUSET_CALLOC(3 * BT + B, sizeof(float));
    m->B = B; m->T = T;
}

void cuset_gpt_free(CusetGPT *m) {
    free(m->params_memory); free(m->grads_memory); free(m->m_memory); free(m->v_memory);
    free(m->acts_memory); free(m->gacts_memory); free(m->scratch); free(m->loss_scratch);
    memset(m, 0, sizeof *m);
}

// ---- matmul: one blocked kernel C += A B, and transposes around it ---------------------

// C (M, N) += A (M, K) B (K, N), all row-major with leading dimensions lda, ldb, ldc.
// Register tiles of 8 rows x 32 columns: per k, 8 broadcasts of A times one 32-wide row
// of B, accumulated in registers (gcc vectorises the fixed-size inner loops). Tiles are
// independent, so threads split them and every output is summed in one fixed order.
#define CUSET_MR 8
#define CUSET_NR 32
static void cuset__gemm_tile(int mr, int nr, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    if (mr == CUSET_MR && nr == CUSET_NR) {
        float acc[CUSET_MR][CUSET_NR];
        for (int r = 0; r < CUSET_MR; r++)
            for (int j = 0; j < CUSET_NR; j++) acc[r][j] = C[(size_t)r * ldc + j];
        for (int k = 0; k < K; k++) {
            const float *b = B + (size_t)k * ldb;
            for (int r = 0; r < CUSET_MR; r++) {
                float a = A[(size_t)r * lda + k];
                for (int j = 0; j < CUSET_NR; j++) acc[r][j] += a * b[j];
            }
        }
        for (int r = 0; r < CUSET_MR; r++)
            for (int j = 0; j < CUSET_NR; j++) C[(size_t)r * ldc + j] = acc[r][j];
        return;
    }
    for (int r = 0; r < mr; r++) // edge tiles: same order of summation, no register tile
        for (int j = 0; j < nr; j++) {
            float acc = C[(size_t)r * ldc + j];
            for (int k = 0; k < K; k++) acc += A[(size_t)r * lda + k] * B[(size_t)k * ldb + j];
            C[(size_t)r * ldc + j] = acc;
        }
}

static void cuset__gemm(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    int tm = (M + CUSET_MR - 1) / CUSET_MR, tn = (N + CUSET_NR - 1) / CUSET_NR;
#pragma omp parallel for schedule(static) if ((size_t)M * N * K >= CUSET_PAR_MIN)
    for (int tile = 0; tile < tm * tn; tile++) {
        int i = tile / tn * CUSET_MR, j = tile % tn * CUSET_NR;
        int mr = M - i < CUSET_MR ? M - i : CUSET_MR, nr = N - j < CUSET_NR ? N - j : CUSET_NR;
        cuset__gemm_tile(mr, nr, K, A + (size_t)i * lda, lda, B + j, ldb, C + (size_t)i * ldc + j, ldc);
    }
}

// out (cols, rows) = in (rows, cols) transposed, in 32x32 blocks.
static void cuset__transpose(float *out, const float *in, int rows, int cols) {
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)rows * cols >= CUSET_PAR_MIN)
    for (int i0 = 0; i0 < rows; i0 += 32)
        for (int j0 = 0; j0 < cols; j0 += 32)
            for (int i = i0; i < i0 + 32 && i < rows; i++)
                for (int j = j0; j < j0 + 32 && j < cols; j++) out[(size_t)j * rows + i] = in[(size_t)i * cols + j];
}

// out (N, OC) = inp (N, IC) @ weight (OC, IC)^T + bias (OC) (bias may be NULL).
static void cuset__matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                                  int N, int IC, int OC, float *scratch) {
#pragma omp parallel for schedule(static) if ((size_t)N * OC >= CUSET_PAR_MIN)
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) out[(size_t)i * OC + o] = bias ? bias[o] : 0.0f;
    cuset__transpose(scratch, weight, OC, IC); // (IC, OC)
    cuset__gemm(N, OC, IC, inp, IC, scratch, OC, out, OC);
}

// Given dout (N, OC): dinp (N, IC) += dout @ weight, dweight (OC, IC) += dout^T @ inp,
// dbias (OC) += column sums of dout (dbias may be NULL).
static void cuset__matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                   const float *weight, int N, int IC, int OC, float *scratch) {
    cuset__gemm(N, IC, OC, dout, OC, weight, IC, dinp, IC);
    cuset__transpose(scratch, dout, N, OC); // (OC, N)
    cuset__gemm(OC, IC, N, scratch, N, inp, IC, dweight, IC);
    if (dbias) {
#pragma omp parallel for schedule(static) if ((size_t)OC * N >= CUSET_PAR_MIN)
        for (int o = 0; o < OC; o++) {
            float s = 0.0f;
            for (int i = 0; i < N; i++) s += scratch[(size_t)o * N + i];
            dbias[o] += s;
        }
    }
}

// ---- the other layers, forward and backward -------------------------------------------

// out (B,T,C) = wte[inputs] + wpe[t]
static void cuset__encoder_forward(float *out, const int *inputs, const float *wte, const float *wpe, int BT, int T, int C) {
#pragma omp parallel for schedule(static) if ((size_t)BT * C >= CUSET_PAR_MIN)
    for (int i = 0; i < BT; i++) {
        const float *te = wte + (size_t)inputs[i] * C, *pe = wpe + (size_t)(i % T) * C;
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = te[c] + pe[c];
    }
}

// dwte[inputs] += dout, dwpe[t] += dout. Parallel over channels, so no two threads touch
// the same element and the sums keep one order.
static void cuset__encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inputs, int BT, int T, int C) {
#pragma omp parallel for schedule(static) if ((size_t)BT * C >= CUSET_PAR_MIN)
    for (int c = 0; c < C; c++)
        for (int i = 0; i < BT; i++) {
            float d = dout[(size_t)i * C + c];
            dwte[(size_t)inputs[i] * C + c] += d;
            dwpe[(size_t)(i % T) * C + c] += d;
        }
}

// out (N,C) = (inp - mean) * rstd * w + b per row; saves mean and rstd (N).
static void cuset__layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                     const float *b, int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= CUSET_PAR_MIN)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float m = 0.0f, v = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        float s = 1.0f / sqrtf(v / C + 1e-5f);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = (x[c] - m) * s * w[c] + b[c];
        mean[i] = m; rstd[i] = s;
    }
}

static void cuset__layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                      const float *w, const float *mean, const float *rstd, int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= CUSET_PAR_MIN)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float norm = (x[c] - mean[i]) * rstd[i], dnorm = w[c] * dy[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C; dnorm_norm_mean /= C;
        for (int c = 0; c < C; c++) {
            float norm = (x[c] - mean[i]) * rstd[i], dnorm = w[c] * dy[c];
            dinp[(size_t)i * C + c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[i];
        }
    }
#pragma omp parallel for schedule(static) if ((size_t)N * C >= CUSET_PAR_MIN)
    for (int c = 0; c < C; c++) {
        float sw = 0.0f, sb = 0.0f;
        for (int i = 0; i < N; i++) {
            float dy = dout[(size_t)i * C + c];
            sw += dy * (inp[(size_t)i * C + c] - mean[i]) * rstd[i];
            sb += dy;
        }
        dw[c] += sw; db[c] += sb;
    }
}

// Causal multi-head attention, one (batch, head) pair per task, its products done by the
// matmul's register tiles: only the tiles on or below the diagonal of the T x T score
// matrix are computed, and the products with att stop at the diagonal too.
// qkv (B,T,3C) holds q, k, v; head h uses channels h*hs..(h+1)*hs-1 of each (row stride
// 3C). att (B,NH,T,T) keeps the softmax rows (zero above the diagonal); out (B,T,C).
// kv_t (B,NH,hs,T) is scratch for K^T.

// Tiles of C (T, N) += A (T, K) B (K, N) where row block i of A is zero past column
// i + MR - 1 (lower triangular A: att, dpre): K shrinks with the block.
static void cuset__gemm_lower(int T, int N, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    for (int i = 0; i < T; i += CUSET_MR)
        for (int j = 0; j < N; j += CUSET_NR) {
            int mr = T - i < CUSET_MR ? T - i : CUSET_MR, nr = N - j < CUSET_NR ? N - j : CUSET_NR;
            cuset__gemm_tile(mr, nr, i + mr, A + (size_t)i * lda, lda, B + j, ldb, C + (size_t)i * ldc + j, ldc);
        }
}

// Tiles of C (T, N) += A (T, T) B (T, N) for upper triangular A (att^T, dpre^T): row block
// i of A is zero before column i.
static void cuset__gemm_upper(int T, int N, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    for (int i = 0; i < T; i += CUSET_MR)
        for (int j = 0; j < N; j += CUSET_NR) {
            int mr = T - i < CUSET_MR ? T - i : CUSET_MR, nr = N - j < CUSET_NR ? N - j : CUSET_NR;
            cuset__gemm_tile(mr, nr, T - i, A + (size_t)i * lda + i, lda, B + (size_t)i * ldb + j, ldb,
                             C + (size_t)i * ldc + j, ldc);
        }
}

// S (T, T) = A (T, K) Bt (K, T) on the tiles that touch the lower triangle (t2 <= t).
static void cuset__gemm_causal_scores(int T, int K, const float *A, int lda, const float *Bt, float *S) {
    memset(S, 0, (size_t)T * T * sizeof(float));
    for (int i = 0; i < T; i += CUSET_MR)
        for (int j = 0; j < i + CUSET_MR && j < T; j += CUSET_NR) {
            int mr = T - i < CUSET_MR ? T - i : CUSET_MR, nr = T - j < CUSET_NR ? T - j : CUSET_NR;
            cuset__gemm_tile(mr, nr, K, A + (size_t)i * lda, lda, Bt + j, T, S + (size_t)i * T + j, T);
        }
}

// out (cols, rows) = in (rows, cols) with a row stride of ld, on one thread.
static void cuset__transpose_serial(float *out, const float *in, int rows, int cols, int ld) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) out[(size_t)j * rows + i] = in[(size_t)i * ld + j];
}

static void cuset__attention_forward(float *out, float *att, float *kv_t, const float *qkv, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (size_t)b * T * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
            float *a = att + ((size_t)b * NH + h) * T * T, *kt = kv_t + ((size_t)b * NH + h) * hs * T;
            float *y = out + (size_t)b * T * C + h * hs;
            cuset__transpose_serial(kt, k, T, hs, 3 * C);
            cuset__gemm_causal_scores(T, hs, q, 3 * C, kt, a); // a[t][t2] = q_t . k_t2
            for (int t = 0; t < T; t++) { // softmax over t2 <= t, zeros beyond
                float *row = a + (size_t)t * T, maxv = -INFINITY, sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) maxv = fmaxf(maxv, row[t2] * scale);
                for (int t2 = 0; t2 <= t; t2++) { row[t2] = expf(row[t2] * scale - maxv); sum += row[t2]; }
                for (int t2 = 0; t2 <= t; t2++) row[t2] /= sum;
                for (int t2 = t + 1; t2 < T; t2++) row[t2] = 0.0f;
                for (int i = 0; i < hs; i++) y[(size_t)t * C + i] = 0.0f;
            }
            cuset__gemm_lower(T, hs, a, T, v, 3 * C, y, C); // y = att v
        }
}

// Given dout (B,T,C): dqkv (B,T,3C) += the gradient through attention. datt (B,NH,T,T)
// becomes d(scores); att_t and kv_t are scratch.
static void cuset__attention_backward(float *dqkv, float *datt, float *att_t, float *kv_t, const float *dout,
                                      const float *qkv, const float *att, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t bh = (size_t)b * NH + h;
            const float *q = qkv + (size_t)b * T * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
            const float *a = att + bh * T * T, *dy = dout + (size_t)b * T * C + h * hs;
            float *dq = dqkv + (size_t)b * T * 3 * C + h * hs, *dk = dq + C, *dv = dq + 2 * C;
            float *da = datt + bh * T * T, *at = att_t + bh * T * T, *vt = kv_t + bh * hs * T;
            cuset__transpose_serial(at, a, T, T, T);
            cuset__gemm_upper(T, hs, at, T, dy, C, dv, 3 * C); // dv += att^T dy
            cuset__transpose_serial(vt, v, T, hs, 3 * C);
            cuset__gemm_causal_scores(T, hs, dy, C, vt, da);   // da = dy v^T
            for (int t = 0; t < T; t++) { // softmax backward: dpre = a (da - sum a da), scaled
                const float *ar = a + (size_t)t * T;
                float *dr = da + (size_t)t * T, dot = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) dot += ar[t2] * dr[t2];
                for (int t2 = 0; t2 <= t; t2++) dr[t2] = ar[t2] * (dr[t2] - dot) * scale;
                for (int t2 = t + 1; t2 < T; t2++) dr[t2] = 0.0f;
            }
            cuset__gemm_lower(T, hs, da, T, k, 3 * C, dq, 3 * C); // dq += dpre k
            cuset__transpose_serial(at, da, T, T, T);
            cuset__gemm_upper(T, hs, at, T, q, 3 * C, dk, 3 * C); // dk += dpre^T q
        }
}

#define CUSET_GELU_SCALE 0.7978845608028654f // sqrt(2 / pi)
// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
static void cuset__gelu_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for schedule(static) if (n >= CUSET_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(CUSET_GELU_SCALE * (x + 0.044715f * x * x * x)));
    }
}

static void cuset__gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
#pragma omp parallel for schedule(static) if (n >= CUSET_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i], u = CUSET_GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = tanhf(u), sech2 = 1.0f - th * th;
        float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * CUSET_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = grad * dout[i];
    }
}

static void cuset__residual_forward(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for schedule(static) if (n >= CUSET_PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// ---- the model ---------------------------------------------------------------------------

void cuset_gpt_forward(CusetGPT *m, const int *inputs, int B, int T) {
    const CusetConfig *c = &m->cfg;
    if (T > c->max_seq_len) CUSET_DIE("sequence length %d exceeds the model's context %d", T, c->max_seq_len);
    cuset__alloc_acts(m, B, T);
    int L = c->n_layer, C = c->n_embd, NH = c->n_head, Vp = c->padded_vocab_size, BT = B * T;
    CusetParams p = m->params;
    CusetActs a = m->acts;
    cuset__encoder_forward(a.encoded, inputs, p.wte, p.wpe, BT, T, C);
    for (int l = 0; l < L; l++) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * BT * C;
        size_t lc = (size_t)l * BT * C;
        float *ln1 = a.ln1 + lc, *qkv = a.qkv + 3 * lc, *atty = a.atty + lc, *res2 = a.residual2 + lc;
        float *ln2 = a.ln2 + lc, *fch = a.fch + 4 * lc, *fchg = a.fch_gelu + 4 * lc, *res3 = a.residual3 + lc;
        float *att = a.att + (size_t)l * B * NH * T * T;
        float *tmp = m->gacts.dbt_c; // the projections' output before the residual add
        cuset__layernorm_forward(ln1, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, residual,
                                 p.ln1w + l * C, p.ln1b + l * C, BT, C);
        cuset__matmul_forward(qkv, ln1, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, BT, C, 3 * C, m->scratch);
        cuset__attention_forward(atty, att, m->gacts.kv_t, qkv, B, T, C, NH);
        cuset__matmul_forward(tmp, atty, p.attprojw + (size_t)l * C * C, p.attprojb + l * C, BT, C, C, m->scratch);
        cuset__residual_forward(res2, residual, tmp, (size_t)BT * C);
        cuset__layernorm_forward(ln2, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, res2,
                                 p.ln2w + l * C, p.ln2b + l * C, BT, C);
        cuset__matmul_forward(fch, ln2, p.fcw + (size_t)l * 4 * C * C, p.fcb + l * 4 * C, BT, C, 4 * C, m->scratch);
        cuset__gelu_forward(fchg, fch, (size_t)BT * 4 * C);
        cuset__matmul_forward(tmp, fchg, p.fcprojw + (size_t)l * 4 * C * C, p.fcprojb + l * C, BT, 4 * C, C, m->scratch);
        cuset__residual_forward(res3, res2, tmp, (size_t)BT * C);
    }
    const float *last = a.residual3 + (size_t)(L - 1) * BT * C;
    cuset__layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, p.lnfw, p.lnfb, BT, C);
    cuset__matmul_forward(a.logits, a.lnf, p.wte, NULL, BT, C, Vp, m->scratch);
}

// ---- incremental decoding ------------------------------------------------------------------

void cuset_kv_init(CusetKVCache *kv, const CusetConfig *c) {
    size_t n = (size_t)c->n_layer * c->max_seq_len * c->n_embd;
    kv->len = 0;
    kv->k = (float *)CUSET_CALLOC(n, sizeof(float));
    kv->v = (float *)CUSET_CALLOC(n, sizeof(float));
    kv->buf = (float *)CUSET_CALLOC(11 * (size_t)c->n_embd + c->max_seq_len + c->padded_vocab_size, sizeof(float));
}

void cuset_kv_free(CusetKVCache *kv) {
    free(kv->k); free(kv->v); free(kv->buf);
    memset(kv, 0, sizeof *kv);
}

// out (OC) = W (OC, IC) x + b, one dot product per output.
static void cuset__matvec(float *out, const float *x, const float *w, const float *b, int IC, int OC) {
#pragma omp parallel for schedule(static) if ((size_t)OC * IC >= 4 * CUSET_PAR_MIN)
    for (int o = 0; o < OC; o++) {
        const float *row = w + (size_t)o * IC;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int i = 0; i < IC; i++) s += row[i] * x[i];
        out[o] = s + (b ? b[o] : 0.0f);
    }
}

// The forward pass of cuset_gpt_forward for one position t = kv->len, reading the
// keys and values of positions 0..t-1 from the cache; the layers are the same functions
// with N = 1 row.
const float *cuset_gpt_decode(const CusetGPT *m, CusetKVCache *kv, int token) {
    const CusetConfig *c = &m->cfg;
    int L = c->n_layer, C = c->n_embd, NH = c->n_head, hs = C / NH, T = c->max_seq_len, t = kv->len;
    if (t >= T) CUSET_DIE("KV cache full: the context holds %d tokens", T);
    CusetParams p = m->params;
    float *x = kv->buf, *ln = x + C, *qkv = ln + C, *y = qkv + 3 * C, *fch = y + C, *att = fch + 4 * C;
    float *logits = att + T, mean, rstd;
    cuset__encoder_forward(x, &token, p.wte, p.wpe + (size_t)t * C, 1, 1, C);
    for (int l = 0; l < L; l++) {
        float *kc = kv->k + (size_t)l * T * C, *vc = kv->v + (size_t)l * T * C;
        cuset__layernorm_forward(ln, &mean, &rstd, x, p.ln1w + l * C, p.ln1b + l * C, 1, C);
        cuset__matvec(qkv, ln, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, C, 3 * C);
        memcpy(kc + (size_t)t * C, qkv + C, C * sizeof(float));
        memcpy(vc + (size_t)t * C, qkv + 2 * C, C * sizeof(float));
        for (int h = 0; h < NH; h++) { // softmax(q k^T / sqrt(hs)) v over positions 0..t
            const float *q = qkv + h * hs;
            float maxv = -INFINITY, sum = 0.0f;
            for (int t2 = 0; t2 <= t; t2++) {
                const float *k = kc + (size_t)t2 * C + h * hs;
                float s = 0.0f;
                for (int i = 0; i < hs; i++) s += q[i] * k[i];
                att[t2] = s / sqrtf((float)hs);
                maxv = fmaxf(maxv, att[t2]);
            }
            for (int t2 = 0; t2 <= t; t2++) { att[t2] = expf(att[t2] - maxv); sum += att[t2]; }
            for (int i = 0; i < hs; i++) y[h * hs + i] = 0.0f;
            for (int t2 = 0; t2 <= t; t2++)
                for (int i = 0; i < hs; i++) y[h * hs + i] += att[t2] / sum * vc[(size_t)t2 * C + h * hs + i];
        }
        cuset__matvec(ln, y, p.attprojw + (size_t)l * C * C, p.attprojb + l * C, C, C);
        cuset__residual_forward(x, x, ln, C);
        cuset__layernorm_forward(ln, &mean, &rstd, x, p.ln2w + l * C, p.ln2b + l * C, 1, C);
        cuset__matvec(fch, ln, p.fcw + (size_t)l * 4 * C * C, p.fcb + l * 4 * C, C, 4 * C);
        cuset__gelu_forward(fch, fch, 4 * C);
        cuset__matvec(ln, fch, p.fcprojw + (size_t)l * 4 * C * C, p.fcprojb + l * C, 4 * C, C);
        cuset__residual_forward(x, x, ln, C);
    }
    cuset__layernorm_forward(ln, &mean, &rstd, x, p.lnfw, p.lnfb, 1, C);
    cuset__matvec(logits, ln, p.wte, NULL, C, c->padded_vocab_size);
    kv->len = t + 1;
    return logits;
}

void cuset_gpt_zero_grad(CusetGPT *m) {
    if (!m->grads_memory) {
        m->grads_memory = (float *)CUSET_CALLOC(m->num_params, sizeof(float));
        cuset__point((float **)&m->grads, CUSET_NUM_TENSORS, m->tensor_sizes, m->grads_memory);
    }
    memset(m->grads_memory, 0, m->num_params * sizeof(float));
}

// Backward from acts.logits holding dlogits (written by cuset_loss); accumulates into
// grads (call cuset_gpt_zero_grad at the start of each optimizer step).
void cuset_gpt_backward(CusetGPT *m, const int *inputs) {
    if (!m->grads_memory) cuset_gpt_zero_grad(m);
    const CusetConfig *c = &m->cfg;
    int B = m->B, T = m->T, L = c->n_layer, C = c->n_embd, NH = c->n_head, Vp = c->padded_vocab_size, BT = B * T;
    CusetParams p = m->params, g = m->grads;
    CusetActs a = m->acts;
    CusetGradActs d = m->gacts;
    size_t btc = (size_t)BT * C;
    // head and final LayerNorm: dresidual = d(loss)/d(last layer output)
    memset(d.dbt_c, 0, btc * sizeof(float));
    cuset__matmul_backward(d.dbt_c, g.wte, NULL, a.logits, a.lnf, p.wte, BT, C, Vp, m->scratch);
    memset(d.dresidual, 0, btc * sizeof(float));
    cuset__layernorm_backward(d.dresidual, g.lnfw, g.lnfb, d.dbt_c, a.residual3 + (size_t)(L - 1) * btc,
                              p.lnfw, a.lnf_mean, a.lnf_rstd, BT, C);
    for (int l = L - 1; l >= 0; l--) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * btc;
        size_t lc = (size_t)l * btc;
        // MLP block: res3 = res2 + fcproj(gelu(fc(ln2(res2))))
        memset(d.dfch, 0, 4 * btc * sizeof(float));
        cuset__matmul_backward(d.dfch, g.fcprojw + (size_t)l * 4 * C * C, g.fcprojb + l * C, d.dresidual,
                               a.fch_gelu + 4 * lc, p.fcprojw + (size_t)l * 4 * C * C, BT, 4 * C, C, m->scratch);
        cuset__gelu_backward(d.dfch, a.fch + 4 * lc, d.dfch, 4 * btc);
        memset(d.dbt_c, 0, btc * sizeof(float));
        cuset__matmul_backward(d.dbt_c, g.fcw + (size_t)l * 4 * C * C, g.fcb + l * 4 * C, d.dfch,
                               a.ln2 + lc, p.fcw + (size_t)l * 4 * C * C, BT, C, 4 * C, m->scratch);
        cuset__layernorm_backward(d.dresidual, g.ln2w + l * C, g.ln2b + l * C, d.dbt_c, a.residual2 + lc,
                                  p.ln2w + l * C, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, BT, C);
        // attention block: res2 = residual + attproj(attention(qkv(ln1(residual))))
        memset(d.dbt_c, 0, btc * sizeof(float));
        cuset__matmul_backward(d.dbt_c, g.attprojw + (size_t)l * C * C, g.attprojb + l * C, d.dresidual,
                               a.atty + lc, p.attprojw + (size_t)l * C * C, BT, C, C, m->scratch);
        memset(d.dqkv, 0, 3 * btc * sizeof(float));
        cuset__attention_backward(d.dqkv, d.datt, d.att_t, d.kv_t, d.dbt_c, a.qkv + 3 * lc, a.att + (size_t)l * B * NH * T * T,
                                  B, T, C, NH);
        memset(d.dbt_c2, 0, btc * sizeof(float));
        cuset__matmul_backward(d.dbt_c2, g.qkvw + (size_t)l * 3 * C * C, g.qkvb + l * 3 * C, d.dqkv,
                               a.ln1 + lc, p.qkvw + (size_t)l * 3 * C * C, BT, C, 3 * C, m->scratch);
        cuset__layernorm_backward(d.dresidual, g.ln1w + l * C, g.ln1b + l * C, d.dbt_c2, residual,
                                  p.ln1w + l * C, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, BT, C);
    }
    cuset__encoder_backward(g.wte, g.wpe, d.dresidual, inputs, BT, T, C);
}

// ---- the loss: three phases, no probability tensor kept ----------------------------------

// Phase 1, one row of logits: the log-sum-exp over the V real columns and, for EAFT, the
// top-20 weight. Returns lse.
static float cuset__row_lse(const float *z, int V, const CusetObjective *o, float *eaft) {
    float maxv = -INFINITY;
    for (int v = 0; v < V; v++) maxv = z[v] > maxv ? z[v] : maxv;
    float sum = 0.0f;
    for (int v = 0; v < V; v++) sum += expf(z[v] - maxv);
    if (o->kind == CUSET_OBJ_EAFT) {
        float top[CUSET_EAFT_TOPK];
        int n = 0, k = V < CUSET_EAFT_TOPK ? V : CUSET_EAFT_TOPK;
        for (int v = 0; v < V; v++) cuset_topk_push(top, &n, k, z[v]);
        *eaft = cuset_eaft_weight(top, n, o->alpha);
    }
    return maxv + logf(sum);
}

// logits (B,T,Vp) in, d(loss)/d(logits) out, in place. Phase 1: per target position the
// row's log-sum-exp, the confidence c = softmax(target), the EAFT weight. Phase 2: per
// sample the hardest window C_n and w_n. Phase 3: per target position the coefficient and
// the gradient a * (softmax - onehot) / N (+ ASFT's KL gradient); other rows get zeros.
void cuset_loss(CusetGPT *m, const CusetBatch *b, const CusetObjective *obj, const float *ref_logits,
                float inv_norm, CusetStats *stats) {
    int B = b->B, T = b->T, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    float *logits = m->acts.logits;
    float *lse = m->loss_scratch, *conf = lse + B * T, *eaft = conf + B * T, *wn = eaft + B * T;
    int asft = obj->kind == CUSET_OBJ_ASFT;
    double row_loss[B], row_ce[B], row_conf[B], row_pass[B];

#pragma omp parallel for schedule(static)
    for (int i = 0; i < B * T; i++) { // phase 1
        if (!b->is_target[i]) continue;
        const float *z = logits + (size_t)i * Vp;
        lse[i] = cuset__row_lse(z, V, obj, &eaft[i]);
        conf[i] = expf(z[b->targets[i]] - lse[i]);
    }
    for (int n = 0; n < B; n++) // phase 2
        wn[n] = cuset_sample_weight(cuset_hardest_window(conf + n * T + b->tgt_start[n], b->tgt_len[n], obj->window));

#pragma omp parallel for schedule(static)
    for (int n = 0; n < B; n++) { // phase 3, a row per task so the sums keep one order
        row_loss[n] = row_ce[n] = row_conf[n] = row_pass[n] = 0.0;
        float w = obj->kind == CUSET_OBJ_CUSET && obj->reweight ? wn[n] : 1.0f;
        for (int t = 0; t < T; t++) {
            int i = n * T + t;
            float *z = logits + (size_t)i * Vp;
            if (!b->is_target[i]) { memset(z, 0, Vp * sizeof(float)); continue; }
            float c = conf[i], nll = lse[i] - z[b->targets[i]];
            float a = cuset_token_coef(obj, c, b->is_cuda[i], w, eaft[i]);
            double kl = 0.0;
            if (asft) {
                const float *zr = ref_logits + (size_t)i * Vp;
                float lse_ref = cuset__row_lse(zr, V, obj, NULL);
                for (int v = 0; v < V; v++) {
                    float lp = z[v] - lse[i], lp_ref = zr[v] - lse_ref;
                    kl += cuset_kl_term(lp_ref, lp);
                    z[v] = (a * expf(lp) + cuset_kl_grad(expf(lp), expf(lp_ref), obj->beta)) * inv_norm;
                }
            } else {
                for (int v = 0; v < V; v++) z[v] = a * expf(z[v] - lse[i]) * inv_norm;
            }
            z[b->targets[i]] -= a * inv_norm;
            for (int v = V; v < Vp; v++) z[v] = 0.0f;
            row_loss[n] += (a * nll + obj->beta * kl * asft) * inv_norm;
            row_ce[n] += nll;
            row_conf[n] += c;
            row_pass[n] += c > obj->tau;
        }
    }
    for (int n = 0; n < B; n++) {
        stats->loss += row_loss[n]; stats->ce += row_ce[n]; stats->conf += row_conf[n]; stats->pass += row_pass[n];
        stats->ntok += b->tgt_len[n];
        if (b->tgt_len[n] > 0) { stats->weight += wn[n]; stats->nsamples += 1; }
    }
}

// ---- AdamW -------------------------------------------------------------------------------------

float cuset_gpt_grad_norm(const CusetGPT *m) {
    double s = 0.0;
    for (size_t i = 0; i < m->num_params; i++) s += (double)m->grads_memory[i] * m->grads_memory[i];
    return (float)sqrt(s);
}

void cuset_gpt_update(CusetGPT *m, const CusetOptim *o, int step, float grad_norm) {
    if (!m->m_memory) {
        m->m_memory = (float *)CUSET_CALLOC(m->num_params, sizeof(float));
        m->v_memory = (float *)CUSET_CALLOC(m->num_params, sizeof(float));
    }
    float lr = cuset_lr_at(o, step), clip = 1.0f;
    if (o->grad_clip > 0.0f && grad_norm > o->grad_clip) clip = o->grad_clip / grad_norm;
    float bc1 = 1.0f - powf(o->beta1, step + 1), bc2 = 1.0f - powf(o->beta2, step + 1);
    size_t off = 0;
    for (int t = 0; t < CUSET_NUM_TENSORS; t++) {
        float wd = cuset_tensor_decay[t] ? o->weight_decay : 0.0f;
        size_t n = m->tensor_sizes[t];
#pragma omp parallel for schedule(static)
        for (size_t i = off; i < off + n; i++) {
            float g = m->grads_memory[i] * clip;
            float mi = m->m_memory[i] = o->beta1 * m->m_memory[i] + (1.0f - o->beta1) * g;
            float vi = m->v_memory[i] = o->beta2 * m->v_memory[i] + (1.0f - o->beta2) * g * g;
            float *p = &m->params_memory[i];
            *p -= lr * ((mi / bc1) / (sqrtf(vi / bc2) + o->eps) + wd * *p);
        }
        off += n;
    }
}

// ---- batches and data -------------------------------------------------------------------------

void cuset_batch_alloc(CusetBatch *b, int B, int T) {
    b->B = B; b->T = T;
    b->inputs = (int *)CUSET_CALLOC((size_t)B * T, sizeof(int));
    b->targets = (int *)CUSET_CALLOC((size_t)B * T, sizeof(int));
    b->is_target = (unsigned char *)CUSET_CALLOC((size_t)B * T, 1);
    b->is_cuda = (unsigned char *)CUSET_CALLOC((size_t)B * T, 1);
    b->tgt_start = (int *)CUSET_CALLOC(B, sizeof(int));
    b->tgt_len = (int *)CUSET_CALLOC(B, sizeof(int));
}

void cuset_batch_free(CusetBatch *b) {
    free(b->inputs); free(b->targets); free(b->is_target); free(b->is_cuda); free(b->tgt_start); free(b->tgt_len);
    memset(b, 0, sizeof *b);
}

// The sequence is s = prompt ++ target; position t reads s[t] and predicts s[t+1], so
// target token k is predicted at position np - 1 + k. Padding is token 0, not a target.
int cuset_batch_set_row(CusetBatch *b, int n, const int *prompt, int np, const int *target,
                        const unsigned char *target_cuda, int nt) {
    int T = b->T;
    if (np < 1 || np > T) return -1;
    int keep = nt < T - np + 1 ? nt : T - np + 1;
    int *in = b->inputs + n * T, *tg = b->targets + n * T;
    unsigned char *ist = b->is_target + n * T, *isc = b->is_cuda + n * T;
    memset(in, 0, T * sizeof(int)); memset(tg, 0, T * sizeof(int));
    memset(ist, 0, T); memset(isc, 0, T);
    for (int t = 0; t < np; t++) in[t] = prompt[t];
    for (int t = 0; t + 1 < np; t++) tg[t] = prompt[t + 1];
    for (int k = 0; k < keep; k++) {
        int pos = np - 1 + k;
        tg[pos] = target[k];
        ist[pos] = 1;
        isc[pos] = target_cuda ? target_cuda[k] : 0;
        if (pos + 1 < T) in[pos + 1] = target[k];
    }
    b->tgt_start[n] = np - 1;
    b->tgt_len[n] = keep;
    return nt - keep;
}

int cuset_batch_check(const CusetBatch *b, int vocab_size, char *err, size_t errlen) {
    for (int n = 0; n < b->B; n++) {
        int s = b->tgt_start[n], len = b->tgt_len[n];
        if (len < 0 || s < 0 || s + len > b->T)
            return cuset__err(err, errlen, "row %d: target positions %d..%d outside the row of %d", n, s, s + len - 1, b->T);
        for (int t = 0; t < b->T; t++) {
            int i = n * b->T + t;
            if (b->inputs[i] < 0 || b->inputs[i] >= vocab_size || b->targets[i] < 0 || b->targets[i] >= vocab_size)
                return cuset__err(err, errlen, "row %d position %d: token out of the vocabulary [0, %d)", n, t, vocab_size);
            if (b->is_target[i] != (t >= s && t < s + len))
                return cuset__err(err, errlen, "row %d position %d: is_target disagrees with the target range %d..%d",
                                  n, t, s, s + len - 1);
            if (b->is_cuda[i] && !b->is_target[i])
                return cuset__err(err, errlen, "row %d position %d: CUDA flag on a non-target position", n, t);
        }
    }
    return 0;
}

int cuset_batch_target_tokens(const CusetBatch *b) {
    int n = 0;
    for (int i = 0; i < b->B; i++) n += b->tgt_len[i];
    return n;
}

void cuset_dataset_free(CusetDataset *d) {
    for (int i = 0; i < d->n; i++) { free(d->samples[i].prompt); free(d->samples[i].target); free(d->samples[i].target_cuda); }
    free(d->samples);
    memset(d, 0, sizeof *d);
}

uint64_t cuset_dataset_fingerprint(const CusetDataset *d) { // FNV-1a over the samples
    uint64_t h = 1469598103934665603ull;
#define CUSET_MIX(x) (h = (h ^ (uint64_t)(uint32_t)(x)) * 1099511628211ull)
    CUSET_MIX(d->n); CUSET_MIX(d->vocab_size);
    for (int i = 0; i < d->n; i++) {
        const CusetSample *s = &d->samples[i];
        CUSET_MIX(s->np); CUSET_MIX(s->nt);
        for (int k = 0; k < s->np; k++) CUSET_MIX(s->prompt[k]);
        for (int k = 0; k < s->nt; k++) { CUSET_MIX(s->target[k]); CUSET_MIX(s->target_cuda[k]); }
    }
#undef CUSET_MIX
    return h;
}

// Fisher-Yates, seeded by (seed, epoch): the order of an epoch never depends on history.
void cuset_shuffle(int *order, int n, uint64_t seed, int epoch) {
    uint64_t rng = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(epoch + 1));
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(cuset_rng_next(&rng) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j]; order[j] = t;
    }
}

int cuset_split(const CusetDataset *d, int T, double val_frac, uint64_t seed, int **train, int *ntrain, int **val, int *nval) {
    int *perm = (int *)CUSET_CALLOC(d->n, sizeof(int)), *ids = (int *)CUSET_CALLOC(d->n, sizeof(int)), n = 0;
    for (int i = 0; i < d->n; i++) if (d->samples[i].np <= T) perm[n++] = i; // the usable ones, for now
    cuset_shuffle(ids, n, seed, -1);
    for (int i = 0; i < n; i++) ids[i] = perm[ids[i]];
    free(perm);
    *nval = (int)(n * val_frac);
    *ntrain = n - *nval;
    *train = ids;
    *val = ids + *ntrain;
    return n;
}

int cuset_batch_from_dataset(CusetBatch *b, const CusetDataset *d, const int *order, int norder, long first,
                             char *err, size_t errlen) {
    int truncated = 0;
    for (int n = 0; n < b->B; n++) {
        int idx = order[(first + n) % norder];
        const CusetSample *s = &d->samples[idx];
        int dropped = cuset_batch_set_row(b, n, s->prompt, s->np, s->target, s->target_cuda, s->nt);
        if (dropped < 0)
            return cuset__err(err, errlen, "sample %d: prompt of %d tokens leaves no room for a target in a row of %d",
                              idx, s->np, b->T);
        truncated += dropped > 0;
    }
    return truncated;
}

void cuset_dataset_synthetic(CusetDataset *d, int n, int vocab_size, int min_len, int max_len, uint64_t seed) {
    memset(d, 0, sizeof *d);
    d->n = n; d->vocab_size = vocab_size;
    d->samples = (CusetSample *)CUSET_CALLOC(n, sizeof(CusetSample));
    uint64_t rng = seed * 0xD1B54A32D192ED03ull + 7;
    for (int i = 0; i < n; i++) {
        CusetSample *s = &d->samples[i];
        int len = min_len + (int)(cuset_rng_next(&rng) % (uint64_t)(max_len - min_len + 1));
        s->np = len + 1; s->nt = len + 1;
        s->prompt = (int *)CUSET_CALLOC(s->np, sizeof(int));
        s->target = (int *)CUSET_CALLOC(s->nt, sizeof(int));
        s->target_cuda = (unsigned char *)CUSET_CALLOC(s->nt, 1);
        s->prompt[0] = 1;
        for (int k = 0; k < len; k++) s->prompt[1 + k] = 3 + (int)(cuset_rng_next(&rng) % (uint64_t)(vocab_size - 3));
        for (int k = 0; k < len; k++) s->target[k] = s->prompt[len - k];
        s->target[len] = 2;
        for (int k = 0; k < s->nt; k++) s->target_cuda[k] = s->target[k] % 4 == 0;
    }
    d->fingerprint = cuset_dataset_fingerprint(d);
}

// ---- sampling ------------------------------------------------------------------------------------

static int cuset__by_prob_desc(const void *a, const void *b) {
    const CusetProbId *x = (const CusetProbId *)a, *y = (const CusetProbId *)b;
    if (x->prob != y->prob) return x->prob < y->prob ? 1 : -1;
    return x->id - y->id;
}

int cuset_sample(const float *logits, int V, float temperature, int top_k, float top_p, uint64_t *rng, CusetProbId *w) {
    int best = 0;
    for (int v = 1; v < V; v++) if (logits[v] > logits[best]) best = v;
    if (temperature <= 0.0f) return best;
    double sum = 0.0;
    for (int v = 0; v < V; v++) { w[v].prob = expf((logits[v] - logits[best]) / temperature); w[v].id = v; sum += w[v].prob; }
    int n = V;
    if ((top_k > 0 && top_k < V) || top_p < 1.0f) { // keep the most probable tokens only
        qsort(w, V, sizeof *w, cuset__by_prob_desc);
        if (top_k > 0 && top_k < n) n = top_k;
        double cum = 0.0;
        for (int i = 0; i < n; i++) {
            cum += w[i].prob / sum;
            if (cum >= top_p) { n = i + 1; break; }
        }
    }
    double kept = 0.0;
    for (int i = 0; i < n; i++) kept += w[i].prob;
    double r = cuset_rng_uniform(rng) * kept, cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += w[i].prob;
        if (r < cum) return w[i].id;
    }
    return w[n - 1].id;
}

// ---- the tokenizer --------------------------------------------------------------------------


// ----------------------------------------------------------------------------
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

// ---- the annotator ----------------------------------------------------------------------------


// ----------------------------------------------------------------------------
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

// ---- the data layer -----------------------------------------------------------------------------

// ---- files -------------------------------------------------------------------------------

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
                if (arrlenu(J->buf) == strlen(keys[k]) && memcmp(J->buf, keys[k], arrlenu(J->buf)) == 0) which = k;
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
    if (top && !(have[0] && have[1])) {
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
                             " JSON object with string members \"%s\" and \"%s\")",
                             cuset__json_found(&J, J.i, b, sizeof b), keys[0], keys[1]);
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
                   " object with \"%s\" and \"%s\" per line)", J.name, keys[0], keys[1]);
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

uint64_t cuset_tok_fingerprint(const CusetTokenizer *tk) {
    unsigned char *b = NULL;
    size_t n = cuset_tok_save(tk, &b);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
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
    const size_t H = CUSET_DATA_HEADER;
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
    uint32_t V = cuset__data_u32(buf + 16), N = cuset__data_u32(buf + 20);
    uint64_t P = cuset__data_u64(buf + 24), Q = cuset__data_u64(buf + 32), stamp = cuset__data_u64(buf + 40);
    uint64_t K = cuset__data_u64(buf + 48), fp = cuset__data_u64(buf + 56);
    if (version != CUSET_DATA_VERSION)
        return cuset__err(err, errlen, "%s: version %u at byte 8; this reader knows version %d (rebuild the file from"
                          " its source)", name, version, CUSET_DATA_VERSION);
    if (hsize != H)
        return cuset__err(err, errlen, "%s: header size %u at byte 12; version %d has a %zu-byte header", name, hsize,
                          CUSET_DATA_VERSION, H);
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
        return cuset__err(err, errlen, "%s: %s: the file has %zu bytes, its header implies %llu (64-byte header + %llu"
                          " tokenizer bytes + 8 x %u samples + 4 x (%llu prompt + %llu target tokens) + %llu flags)",
                          name, len < need ? "truncated" : "trailing bytes", len, (unsigned long long)need,
                          (unsigned long long)K, N, (unsigned long long)P, (unsigned long long)Q, (unsigned long long)Q);
    if (cuset_tok_load(&ntk, buf + H, (size_t)K, why, sizeof why) != 0)
        return cuset__err(err, errlen, "%s: the tokenizer at bytes %zu..%llu is invalid (its byte numbers count from"
                          " byte %zu): %s", name, H, (unsigned long long)(H + K - 1), H, why);
    size_t L = H + (size_t)K, ids_at = L + 8 * (size_t)N, flags_at = ids_at + 4 * (size_t)(P + Q);
    uint64_t sp = 0, sq = 0;
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
            return cuset__err(err, errlen, "%s was tokenized with another tokenizer than the checkpoint's; give its "
                                           "source (.jsonl or directory) instead, to tokenize it with the checkpoint's", src);
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
        if (cached_stamp == stamp) {
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
            if (t == 'n' && num) {
                char tmp[64];
                size_t n = J.i - at < sizeof tmp - 1 ? J.i - at : sizeof tmp - 1;
                memcpy(tmp, J.s + at, n);
                tmp[n] = 0;
                *num = strtod(tmp, NULL);
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

// ---- checkpoints -------------------------------------------------------------------------------
// Layout (little-endian): a 256-byte header of int32 slots, then float32 parameters, then
// (if CUSET_CKPT_OPTIMIZER) the AdamW moments m and v, then (if CUSET_CKPT_REFERENCE)
// ASFT's frozen reference parameters, then (if CUSET_CKPT_TOKENIZER) the tokenizer as
// cuset_tok_save writes it.
//   slot 0-1 magic "CUSETCKP", 2 version, 3 header bytes, 4-9 config (V, Vp, maxT, L, NH, C),
//   10 contents flags, 11 step, 12-13 number of parameters (uint64), 14-15 data
//   fingerprint (uint64), 16-40 CusetTrainSettings, 62-63 tokenizer bytes (uint64).
// Versions: 2 since the eq. 5 correction (2026-12-01); 1 before it, the same layout, read
// too (the version tells which window rule trained the model).
#define CUSET_CKPT_MAGIC "CUSETCKP"
#define CUSET_CKPT_VERSION 2
#define CUSET_CKPT_OLDEST_VERSION 1
#define CUSET_CKPT_HEADER 256
#define CUSET_CKPT_OPTIMIZER 1
#define CUSET_CKPT_REFERENCE 2
#define CUSET_CKPT_TOKENIZER 4
#define CUSET_CKPT_TOK_SLOT 62
#ifdef __cplusplus
#define _Static_assert static_assert
#endif
_Static_assert(16 * 4 + sizeof(CusetTrainSettings) <= CUSET_CKPT_TOK_SLOT * 4, "checkpoint header too small");

static size_t cuset__ckpt_bytes(size_t nparams, int contents, uint64_t tok_bytes) {
    size_t copies = 1 + ((contents & CUSET_CKPT_OPTIMIZER) ? 2 : 0) + ((contents & CUSET_CKPT_REFERENCE) ? 1 : 0);
    return CUSET_CKPT_HEADER + copies * nparams * sizeof(float) + tok_bytes;
}

int cuset_checkpoint_save(const char *path, const CusetGPT *m, const CusetGPT *ref, const CusetTokenizer *tk,
                          const CusetCheckpointInfo *info, int with_optimizer, char *err, size_t errlen) {
    unsigned char h[CUSET_CKPT_HEADER] = {0};
    int32_t *slot = (int32_t *)h;
    int contents = (with_optimizer && m->m_memory ? CUSET_CKPT_OPTIMIZER : 0) | (ref ? CUSET_CKPT_REFERENCE : 0) |
                   (tk ? CUSET_CKPT_TOKENIZER : 0);
    uint64_t np = m->num_params, tok_bytes = 0;
    unsigned char *tok = NULL; // stb_ds array
    if (tk) tok_bytes = cuset_tok_save(tk, &tok);
    memcpy(h, CUSET_CKPT_MAGIC, 8);
    slot[2] = CUSET_CKPT_VERSION; slot[3] = CUSET_CKPT_HEADER;
    memcpy(&slot[4], &m->cfg, sizeof m->cfg);
    slot[10] = contents; slot[11] = info->step;
    memcpy(&slot[12], &np, 8);
    memcpy(&slot[14], &info->data_fingerprint, 8);
    memcpy(&slot[16], &info->settings, sizeof info->settings);
    memcpy(&slot[CUSET_CKPT_TOK_SLOT], &tok_bytes, 8);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) { arrfree(tok); return cuset__err(err, errlen, "%s: cannot create: %s", tmp, strerror(errno)); }
    int ok = fwrite(h, 1, sizeof h, f) == sizeof h;
    ok = ok && fwrite(m->params_memory, sizeof(float), np, f) == np;
    if (contents & CUSET_CKPT_OPTIMIZER)
        ok = ok && fwrite(m->m_memory, sizeof(float), np, f) == np && fwrite(m->v_memory, sizeof(float), np, f) == np;
    if (contents & CUSET_CKPT_REFERENCE) ok = ok && fwrite(ref->params_memory, sizeof(float), np, f) == np;
    if (tok_bytes) ok = ok && fwrite(tok, 1, tok_bytes, f) == tok_bytes;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (fclose(f) == 0) && ok;
    arrfree(tok);
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return cuset__err(err, errlen, "%s: write failed: %s", path, strerror(e));
    }
    return 0;
}

static int cuset__nonzero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) if (p[i]) return 1;
    return 0;
}

// Reads and validates the header; on success leaves f positioned at the parameters.
static int cuset__ckpt_open(const char *path, FILE **fp, CusetCheckpointInfo *info, int *contents, uint64_t *tok_bytes,
                            char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return cuset__err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    unsigned char h[CUSET_CKPT_HEADER];
    int32_t slot[CUSET_CKPT_HEADER / 4];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char why[512] = "";
    if (size < CUSET_CKPT_HEADER || fread(h, 1, sizeof h, f) != sizeof h)
        snprintf(why, sizeof why, "%ld bytes, shorter than the %d-byte checkpoint header", size, CUSET_CKPT_HEADER);
    else if (memcpy(slot, h, sizeof h), memcmp(h, CUSET_CKPT_MAGIC, 8) != 0)
        snprintf(why, sizeof why, "not a cuset checkpoint (magic is not %s)", CUSET_CKPT_MAGIC);
    else if (slot[2] < CUSET_CKPT_OLDEST_VERSION || slot[2] > CUSET_CKPT_VERSION || slot[3] != CUSET_CKPT_HEADER)
        snprintf(why, sizeof why, "checkpoint version %d (header %d bytes); this build reads versions %d to %d", slot[2],
                 slot[3], CUSET_CKPT_OLDEST_VERSION, CUSET_CKPT_VERSION);
    if (why[0]) { fclose(f); return cuset__err(err, errlen, "%s: %s", path, why); }
    memset(info, 0, sizeof *info);
    info->version = slot[2];
    memcpy(&info->cfg, &slot[4], sizeof info->cfg);
    *contents = slot[10];
    info->step = slot[11];
    memcpy(&info->data_fingerprint, &slot[14], 8);
    memcpy(&info->settings, &slot[16], sizeof info->settings);
    memcpy(tok_bytes, &slot[CUSET_CKPT_TOK_SLOT], 8);
    info->has_optimizer = !!(*contents & CUSET_CKPT_OPTIMIZER);
    info->has_reference = !!(*contents & CUSET_CKPT_REFERENCE);
    info->has_tokenizer = !!(*contents & CUSET_CKPT_TOKENIZER);
    size_t sizes[CUSET_NUM_TENSORS], np = 0;
    uint64_t np_file;
    memcpy(&np_file, &slot[12], 8);
    char cfg_why[256];
    if (cuset_config_check(&info->cfg, cfg_why, sizeof cfg_why) != 0) {
        snprintf(why, sizeof why, "bad model config in header: %s", cfg_why);
    } else if (cuset__nonzero(h + 64 + sizeof info->settings, CUSET_CKPT_TOK_SLOT * 4 - 64 - sizeof info->settings) ||
               cuset__nonzero(h + CUSET_CKPT_TOK_SLOT * 4 + 8, CUSET_CKPT_HEADER - CUSET_CKPT_TOK_SLOT * 4 - 8)) {
        snprintf(why, sizeof why, "bad header: reserved bytes are not zero");
    } else if (*contents & ~(CUSET_CKPT_OPTIMIZER | CUSET_CKPT_REFERENCE | CUSET_CKPT_TOKENIZER) || info->step < 0 ||
               (*tok_bytes != 0) != info->has_tokenizer || *tok_bytes > (1u << 30)) {
        snprintf(why, sizeof why, "bad header (contents flags %d, step %d, tokenizer bytes %llu)", *contents, info->step,
                 (unsigned long long)*tok_bytes);
    } else {
        cuset__tensor_sizes(&info->cfg, sizes);
        for (int i = 0; i < CUSET_NUM_TENSORS; i++) np += sizes[i];
        size_t want = cuset__ckpt_bytes(np, *contents, *tok_bytes);
        if (np_file != np)
            snprintf(why, sizeof why, "header says %llu parameters but its config needs %zu", (unsigned long long)np_file, np);
        else if ((size_t)size != want)
            snprintf(why, sizeof why, "%s: file has %ld bytes, header implies %zu",
                     (size_t)size < want ? "truncated" : "trailing bytes", size, want);
    }
    if (why[0]) { fclose(f); return cuset__err(err, errlen, "%s: %s", path, why); }
    *fp = f;
    return 0;
}

int cuset_checkpoint_old_windows(const CusetCheckpointInfo *info) {
    const CusetObjective *o = &info->settings.obj;
    return info->version < 2 && o->kind == CUSET_OBJ_CUSET && o->reweight;
}

int cuset_checkpoint_info(const char *path, CusetCheckpointInfo *info, char *err, size_t errlen) {
    FILE *f;
    int contents;
    uint64_t tok_bytes;
    if (cuset__ckpt_open(path, &f, info, &contents, &tok_bytes, err, errlen) != 0) return -1;
    fclose(f);
    return 0;
}

int cuset_checkpoint_load(const char *path, CusetGPT *m, CusetGPT *ref, CusetTokenizer *tk, int want_optimizer,
                          CusetCheckpointInfo *info, char *err, size_t errlen) {
    FILE *f;
    int contents;
    uint64_t tok_bytes;
    if (cuset__ckpt_open(path, &f, info, &contents, &tok_bytes, err, errlen) != 0) return -1;
    cuset_gpt_init(m, &info->cfg);
    if (ref) memset(ref, 0, sizeof *ref);
    size_t np = m->num_params;
    char why[512] = "";
    int ok = fread(m->params_memory, sizeof(float), np, f) == np;
    if (ok && (contents & CUSET_CKPT_OPTIMIZER)) {
        if (want_optimizer) {
            m->m_memory = (float *)CUSET_CALLOC(np, sizeof(float));
            m->v_memory = (float *)CUSET_CALLOC(np, sizeof(float));
            ok = fread(m->m_memory, sizeof(float), np, f) == np && fread(m->v_memory, sizeof(float), np, f) == np;
        } else {
            ok = fseek(f, (long)(2 * np * sizeof(float)), SEEK_CUR) == 0;
        }
    }
    if (ok && (contents & CUSET_CKPT_REFERENCE)) {
        if (ref) {
            cuset_gpt_init(ref, &info->cfg);
            ok = fread(ref->params_memory, sizeof(float), np, f) == np;
        } else {
            ok = fseek(f, (long)(np * sizeof(float)), SEEK_CUR) == 0;
        }
    }
    if (ok && tk && tok_bytes) {
        unsigned char *buf = (unsigned char *)CUSET_CALLOC(tok_bytes, 1);
        char tok_why[400];
        ok = fread(buf, 1, tok_bytes, f) == tok_bytes;
        if (ok && cuset_tok_load(tk, buf, tok_bytes, tok_why, sizeof tok_why) != 0)
            snprintf(why, sizeof why, "its tokenizer: %s", tok_why);
        else if (ok && cuset_tok_vocab_size(tk) != info->cfg.vocab_size)
            snprintf(why, sizeof why, "its tokenizer has %d tokens but the model's vocabulary is %d",
                     cuset_tok_vocab_size(tk), info->cfg.vocab_size);
        free(buf);
    }
    fclose(f);
    if (!ok) snprintf(why, sizeof why, "read error");
    // padding rows of wte must be zero: a non-zero one means a damaged or foreign file
    const float *wte = m->params.wte;
    for (size_t i = (size_t)info->cfg.vocab_size * info->cfg.n_embd; i < m->tensor_sizes[0] && !why[0]; i++)
        if (wte[i] != 0.0f) snprintf(why, sizeof why, "padding rows of wte are not zero");
    if (why[0]) {
        cuset_gpt_free(m);
        if (ref) cuset_gpt_free(ref);
        if (tk && tok_bytes) cuset_tok_init(tk);
        return cuset__err(err, errlen, "%s: %s", path, why);
    }
    return 0;
}

#endif // CUSET_IMPLEMENTATION_DONE
#endif // CUSET_IMPLEMENTATION
