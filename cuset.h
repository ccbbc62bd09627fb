/* cuset.h — CuSeT (CUDA-Sensitive Instruction Tuning): the model and the method.

   A small GPT, trained on the CPU by plain C (this file) or on one NVIDIA GPU by the
   kernels of cuset.cu, with the CuSeT objective and its baselines (SFT, DFT, ProFit,
   EAFT, ASFT) inside one fused loss. The method, equation by equation, is written out in
   README.md ("The method"); the equation numbers below are its.

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_IMPLEMENTATION
       #include "cuset.h"
   The objective's math (section 2) is `static inline` and marked CUSET_HD so that the
   CUDA loss kernel calls the very same functions as the CPU loss.

   Sections: 1 types and declarations, 2 the objective's math (the equations),
   3 implementation: utilities, parameters, matmul, layers forward/backward, the model
   (forward, backward), incremental decoding, the loss, AdamW, batches and data, sampling, checkpoints.
   The data side lives in its own headers: data/tokenizer.h, data/annotate.h (eq. 3's
   spans), data/textdata.h (text files, token files, checkpoints with a tokenizer),
   data/confidence.h (the confidence analysis), data/gpt2.h and data/json.h (GPT-2 models).
   Depends on libc, libm, POSIX (stat, fsync, getpid), OpenMP (optional) and GCC/Clang's
   weak symbols (the GPU stand-ins below). */
#ifndef CUSET_H
#define CUSET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>

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
    float *att_lse;   // (L, B, NH, T)  log-sum-exp of each attention row's scaled scores
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
// The sizes in floats of the tensors of CusetActs, in order, for a (B, T) batch: one table
// for both backends (the GPU's activations are the same struct).
void cuset_acts_sizes(const CusetConfig *c, int B, int T, size_t sizes[CUSET_NUM_ACTS]);

// Backward scratch: gradients of activations, reused layer after layer.
typedef struct {
    float *dresidual; // (B, T, C)   gradient flowing down the residual stream
    float *dbt_c;     // (B, T, C)
    float *dbt_c2;    // (B, T, C)
    float *dqkv;      // (B, T, 3C)
    float *dfch;      // (B, T, 4C)
    float *kv_t;      // (B, NH, 2, hs, T) attention's scratch: K^T and V^T
} CusetGradActs;
#define CUSET_NUM_GRAD_ACTS 6

// Points the n named pointers of `table` (a struct of float*: CusetParams, CusetActs, ...) one
// after another into one block, sizes[i] floats each: the CPU backend's parameters and
// activations, the GPU backend's parameter tensors.
static inline void cuset__point(float **table, int n, const size_t *sizes, float *memory) {
    for (int i = 0; i < n; i++) { table[i] = memory; memory += sizes[i]; }
}

// One sample per row, padded. Row n holds prompt then target; position t predicts
// targets[t]. The target positions of a row are contiguous: tgt_start[n] ..
// tgt_start[n] + tgt_len[n] - 1. is_target marks them; is_cuda marks target tokens that
// lie in CUDA-sensitive code (eq. 3). Filled by cuset_batch_set_row; a padding row
// (cuset_batch_clear_row) has no target: tgt_len[n] = 0.
typedef struct {
    int B, T;
    int *inputs;              // (B, T)
    int *targets;             // (B, T)
    unsigned char *is_target; // (B, T)
    unsigned char *is_cuda;   // (B, T)
    int *tgt_start;           // (B)
    int *tgt_len;             // (B) T_n
} CusetBatch;

// What a step needs of its accum micro-batches to stay within the model's buffers, checked
// by both backends before they read a token: rows no longer than the context max_T, input
// ids and target ids (where is_target) in [0, V). 0, or -1 and the first offence in err.
static inline int cuset_batches_fit(const CusetBatch *batches, int accum, int V, int max_T, char *err,
                                    size_t errlen) {
    for (int i = 0; i < accum; i++) {
        const CusetBatch *b = &batches[i];
        if (b->T > max_T) {
            snprintf(err, errlen, "micro-batch %d: rows of %d tokens, longer than the model's context %d", i, b->T,
                     max_T);
            return -1;
        }
        for (long k = 0; k < (long)b->B * b->T; k++) {
            int in = b->inputs[k], tg = b->targets[k];
            int bad_in = in < 0 || in >= V, bad_tg = b->is_target[k] && (tg < 0 || tg >= V);
            if (bad_in || bad_tg) {
                snprintf(err, errlen, "micro-batch %d, row %ld, position %ld: %s %d outside the vocabulary [0, %d)", i,
                         k / b->T, k % b->T, bad_in ? "input" : "target", bad_in ? in : tg, V);
                return -1;
            }
        }
    }
    return 0;
}

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
// kind with CuSeT's paper defaults: every switch on, tau 0.1, lambda 1, l 256, alpha 1, beta 0.1.
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
// Adds one sample's sums over its ntok target tokens (and its w_n) into s: both backends.
void cuset_stats_add_sample(CusetStats *s, double loss, double ce, double conf, double pass, double wn, int ntok);

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
    float *scratch;      // the matmuls' packed operand
    float *loss_scratch; // per position lse, conf, EAFT weight (3 B T) and per row w_n (B)
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
// The scalars of one AdamW step (cuset_adamw_one), the same for every parameter.
typedef struct { float lr, clip, beta1, beta2, bc1, bc2, eps; } CusetAdamW;
// Those of optimizer step `step` (0-based) for gradients of norm grad_norm: the schedule's
// rate, the clip factor, the bias corrections.
CusetAdamW cuset_adamw_at(const CusetOptim *o, int step, float grad_norm);
// lr 3e-4 falling to 3e-5, no warmup, betas 0.9 / 0.95, eps 1e-8, weight decay 0.1, clip 1.
CusetOptim cuset_optim_default(void);
float cuset_lr_at(const CusetOptim *o, int step);

// Model.
// 0, or -1 and why: vocabulary in [2, 2^24] and padded by cuset_pad_vocab, context in
// [1, 65536], 1..256 layers, n_embd in [1, 16384] and a multiple of n_head.
int cuset_config_check(const CusetConfig *c, char *err, size_t errlen);
int cuset_pad_vocab(int V);
void cuset_gpt_init(CusetGPT *m, const CusetConfig *cfg);           // allocate parameters (cfg checked: stops if bad)
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
void cuset_gpt_zero_grad(CusetGPT *m);                     // grads = 0 (allocated on first use)
void cuset_gpt_backward(CusetGPT *m, const int *inputs);   // accumulates into grads
float cuset_gpt_grad_norm(const CusetGPT *m);              // the global L2 norm of all grads
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
// Row n as padding only, no target (a batch with fewer samples than rows).
void cuset_batch_clear_row(CusetBatch *b, int n);
// 0, or -1 and the first row and position where tokens leave [0, vocab_size), is_target
// disagrees with tgt_start/tgt_len, or a CUDA flag sits outside the target.
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
// Fills row k of the batch with sample ids[k] of d for k < count (at most B), and the rows
// from count on with padding (no target). Returns how many of the samples lost target
// tokens at the row's end; -1 and a message in err, the batch unchanged, if an id is outside
// the data or a prompt does not fit.
int cuset_batch_from_dataset(CusetBatch *b, const CusetDataset *d, const int *ids, int count, char *err,
                             size_t errlen);
// order = a permutation of 0..n-1, a pure function of (seed, epoch) (cuset_split uses epoch -1).
void cuset_shuffle(int *order, int n, uint64_t seed, int epoch);
// The samples whose prompt fits a row of T tokens, shuffled by the seed and split into
// training and validation lists (val_frac of them). Returns how many fit; *train (which
// *val points into) is malloc'd: free(*train).
int cuset_split(const CusetDataset *d, int T, double val_frac, uint64_t seed, int **train, int *ntrain, int **val, int *nval);
// A learnable synthetic task (reverse a random sequence) for tests, benchmarks and demos.
// Token 1 opens the prompt, 2 ends the target; target tokens with id % 4 == 0 are
// flagged CUDA-sensitive.
void cuset_dataset_synthetic(CusetDataset *d, int n, int vocab_size, int min_len, int max_len, uint64_t seed);

// One training step, the same entry for the CPU and the GPU. gpu: the model on the device
// (cuset_cuda_model_new; then m and ref are not touched) or NULL: m on the CPU, with ref
// ASFT's frozen model (NULL unless the objective is ASFT; the step refuses ASFT without one),
// input and target ids checked against the vocabulary, rows against the context. Counts
// eq. 9's N = every target token of the accum micro-batches, masked or not; then per
// micro-batch ASFT's reference forward, the forward, the loss with 1/N and the backward,
// gradients summed from zero; *grad_norm is
// the global gradient norm before clipping. stats += the step's sums. The update follows:
// cuset_gpt_update, or cuset_cuda_update on the GPU. Returns 0, or -1 with a message.
typedef struct CusetCudaModel CusetCudaModel; // the GPU backend's model (end of this section)
int cuset_gpt_step(CusetGPT *m, CusetGPT *ref, CusetCudaModel *gpu, const CusetBatch *batches, int accum,
                   const CusetObjective *obj, CusetStats *stats, float *grad_norm, char *err, size_t errlen);
// The evaluation loss: forward and loss only, over samples order[0 .. n-1] of d in
// batches of b's shape, with N = all their target tokens; stats (zeroed first) gets the sums.
int cuset_gpt_validate(CusetGPT *m, CusetGPT *ref, CusetCudaModel *gpu, const CusetDataset *d, const int *order,
                       int n, CusetBatch *b, const CusetObjective *obj, CusetStats *stats, char *err, size_t errlen);

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
    float val_frac;          // share of the data held out for validation (0 with --val-data);
                             // -1: unknown (read from a checkpoint before version 3, or saved from one)
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
// The tokenizer travels as opaque bytes (data/tokenizer.h's format; data/textdata.h's
// cuset_checkpoint_save_tok and _load_tok convert). Writes to path.tmp.PID then renames.
// ref and tok may be NULL. Returns 0, or -1 with a message.
int cuset_checkpoint_save(const char *path, const CusetGPT *m, const CusetGPT *ref, const void *tok, size_t tok_len,
                          const CusetCheckpointInfo *info, int with_optimizer, char *err, size_t errlen);
// Whether a file can be written at path the way the writers here do it (path.tmp.PID, then
// a rename onto path): for a long run to find out before it starts. 0, or -1 with why.
int cuset_check_writable(const char *path, char *err, size_t errlen);
// 1 when paths a and b name one file: the same inode when both exist, else the same name
// in the same directory (a run's outputs checked against its inputs and each other).
int cuset_same_file(const char *a, const char *b);
// 1 when the checkpoint was trained by CuSeT with reweighting under the window rule
// before the 2026-12-01 correction of eq. 5 (checkpoint version 1: a target shorter than
// the window was one window, so C_n differed for ceil(l/2) < T_n < l); the layout is the
// same, so such files still load, and a run continued from one uses eq. 5 as written.
int cuset_checkpoint_old_windows(const CusetCheckpointInfo *info);
// Reads the header only.
int cuset_checkpoint_info(const char *path, CusetCheckpointInfo *info, char *err, size_t errlen);
// Allocates m (and ref when non-NULL and the file has one: neither may hold a model, which
// would leak; cuset_gpt_free it first) and reads them; loads the
// optimizer moments when the file has them and want_optimizer is set; when tok is non-NULL,
// *tok (malloc'd) and *tok_len receive the tokenizer's bytes (NULL and 0 if it has none).
int cuset_checkpoint_load(const char *path, CusetGPT *m, CusetGPT *ref, unsigned char **tok, size_t *tok_len,
                          int want_optimizer, CusetCheckpointInfo *info, char *err, size_t errlen);

// Incremental decoding with a KV cache: the keys and values of every position so far, per
// layer, so that each new token costs one position's worth of the forward pass.
typedef struct {
    int len;          // positions cached
    float *k, *v;     // (L, maxT, C) each
    float *buf;       // one position's activations: x (C), ln (C), qkv (3C), y (C), fch (4C), att (maxT), logits (Vp)
} CusetKVCache;
void cuset_kv_init(CusetKVCache *kv, const CusetConfig *cfg);
void cuset_kv_free(CusetKVCache *kv);
// Feeds token at position kv->len and returns the logits (Vp) predicting the next one;
// the pointer stays valid until the next call. Requires kv->len < max_seq_len.
const float *cuset_gpt_decode(const CusetGPT *m, CusetKVCache *kv, int token);

// Sampling: a token from one row of logits (the V real columns) with temperature
// (0: greedy), top-k (0: off) and top-p (1: off); work holds V entries. -1 when a logit is
// not finite (weights that overflow: a damaged or diverged model).
typedef struct { float prob; int id; } CusetProbId;
int cuset_sample(const float *logits, int V, float temperature, int top_k, float top_p, uint64_t *rng, CusetProbId *work);
// cuset_sample's check: 1 when the V logits are finite, 0 when not, said so as CUSET_NONFINITE_LOGITS.
int cuset_logits_finite(const float *logits, int V);
#define CUSET_NONFINITE_LOGITS \
    "the model's logits are not finite (weights that overflow: a damaged or diverged checkpoint)"

// Small utilities used by the mains.
uint64_t cuset_rng_next(uint64_t *state);
float cuset_rng_uniform(uint64_t *state);   // [0, 1)
double cuset_time(void);
// Flushes stdout: 0 when it took all that was written to it, else the failure's errno (a
// full disk, a closed pipe; when an earlier write failed and this flush had nothing left to
// write, errno as that write left it, EIO if 0). The mains count output cut short as a
// failure (gen: exit 1; train too, saying what its run saved).
int cuset_stdout_error(void);
// A command-line number, strictly: all of v is a decimal number in [lo, hi], and a whole number
// when whole (a count). Returns 0 with *out, or -1 with "FLAG expects a [whole ]number in
// [lo, hi], got 'v'" in err.
int cuset_parse_number(const char *flag, const char *v, double lo, double hi, int whole, double *out, char *err,
                       size_t errlen);

// ---------------------------------------------------------------------------------------
// The GPU backend (cuset.cu, linked when the build has nvcc). Plain C types only: the
// device state is an opaque struct, every pointer below is a host pointer. One
// CusetCudaModel mirrors a CusetGPT on the device (parameters, gradients, AdamW moments,
// ASFT reference parameters and the activations of a (B, T) micro-batch, one allocation);
// one optimizer step on the GPU is cuset_gpt_step(NULL, NULL, g, ...) then
// cuset_cuda_update, exactly like the CPU's. Functions that can fail return -1 (NULL) and
// write the reason into err. A program without cuset.cu gets stand-ins from cuset.h's
// implementation (weak symbols: cuset.cu's replace them when linked) that answer "no GPU
// backend", so the mains need no #ifdef; cuset_cuda_loss, its workspace size,
// cuset_cuda_download_grads and cuset_cuda_decoder_len have none (only programs built
// with cuset.cu call them).
typedef struct CusetCudaDecoder CusetCudaDecoder;
// 1 when a CUDA device can be used (its name in why); 0 with the reason in why (no driver:
// cudaGetDeviceCount error 35, no device, ...); -1 when the program has no GPU backend.
// Never crashes.
int cuset_cuda_available(char *why, size_t n);
// Uploads m's parameters (and its AdamW moments if m has them) and ref's (ASFT's frozen
// reference; may be NULL) and allocates everything a (B, T) micro-batch needs. NULL, with
// the reason in err, when no device answers, when device memory runs short, or when the
// kernels do not take the shape (an attention head size other than 16, 32, 48, 64, 96 or
// 128, a batch of more than 65535 x 64 rows, a padded vocabulary of more than 65535 x 64).
// Exits when host memory runs short.
CusetCudaModel *cuset_cuda_model_new(const CusetGPT *m, const CusetGPT *ref, int B, int T, char *err, size_t errlen);
void cuset_cuda_model_free(CusetCudaModel *g);
// cuset_gpt_step's device half: zero the gradients, then for each of the accum
// micro-batches (shape B x T of cuset_cuda_model_new) forward (+ the reference's for
// ASFT), the fused loss with inv_norm = 1/N, backward. Stats are summed into *stats;
// *grad_norm is the global gradient norm (before clipping). Returns 0, or -1 with a message.
int cuset_cuda_forward_backward(CusetCudaModel *g, const CusetBatch *batches, int accum, const CusetObjective *obj,
                                float inv_norm, CusetStats *stats, float *grad_norm, char *err, size_t errlen);
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
int cuset_cuda_decoder_len(const CusetCudaDecoder *d);  // positions in the cache
void cuset_cuda_decoder_reset(CusetCudaDecoder *d);   // empties the cache (a new prompt)
void cuset_cuda_decoder_free(CusetCudaDecoder *d);
#ifdef CUSET_CUDA_INTERNALS
// Single kernels for test/test_gpu.cu and test/bench_gpu.cu: device pointers, the default
// stream, synchronous. Shapes and semantics as the CPU functions named in cuset.cu (except
// that matmul_backward overwrites dinp, times gelu'(pre) when pre is non-NULL, and
// attention_backward overwrites dqkv; the CPU functions accumulate into both).
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
void cuset__cuda_test_adamw(float *params, float *m, float *v, const float *grads, size_t n, CusetAdamW a, float wd);
float cuset__cuda_test_global_norm(const float *x, size_t n);
void cuset__cuda_test_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH);
void cuset__cuda_test_attention_backward(float *dqkv, float *delta, const float *dout, const float *qkv, const float *out,
                                         const float *lse, int B, int T, int C, int NH);
#endif


#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------------------------ */
/* 2. The objective's math, equation by equation (README.md, "The method"). Shared by  */
/*    the CPU loss and the CUDA loss kernel; every quantity here is a stop-gradient      */
/*    constant.                                                                          */
/* ------------------------------------------------------------------------------------ */

// Eq. 1: token confidence c = p_theta(y_t | x, y_<t) = softmax(z)[target], from the
// target's logit and the log-sum-exp of the row's V real columns.
CUSET_HD static inline float cuset_confidence(float z_target, float lse) { return expf(z_target - lse); }

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

// Eq. 5: window of target index j (0-based here; the method is 1-based) in a target of
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
// [*best_lo, *best_hi] gets that window (the first of equal means; 0, -1 for n = 0): the
// confidence analysis shows it.
CUSET_HD static inline float cuset_hardest_window_at(const float *conf, int n, int l, int *best_lo, int *best_hi) {
    *best_lo = 0, *best_hi = -1;
    if (n <= 0) return 1.0f;
    double sum = 0.0, best = 1e30;
    int lo = 0, hi = -1; // the running window [lo, hi]
    for (int j = 0; j < n; j++) {
        int wlo, whi;
        cuset_window(j, n, l, &wlo, &whi);
        while (hi < whi) sum += conf[++hi];
        while (lo < wlo) sum -= conf[lo++];
        double mean = sum / (hi - lo + 1);
        if (mean < best) best = mean, *best_lo = lo, *best_hi = hi;
    }
    return (float)best;
}
CUSET_HD static inline float cuset_hardest_window(const float *conf, int n, int l) {
    int lo, hi;
    return cuset_hardest_window_at(conf, n, l, &lo, &hi);
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
// a * (-log c) to the loss (cuset_loss_term) and a * (softmax - onehot) to the logits'
// gradient (cuset_logit_grad), both scaled by 1/N. c is the token's confidence, wn its
// sample's w_n (eq. 8; CuSeT applies it when reweighting is on), eaft the EAFT weight of
// the position (unused by the others).
CUSET_HD static inline float cuset_token_coef(const CusetObjective *o, float c, int is_cuda, float wn, float eaft) {
    switch (o->kind) {
    case CUSET_OBJ_SFT:    return 1.0f;
    case CUSET_OBJ_DFT:    return c;                          // -p log p, p constant
    case CUSET_OBJ_PROFIT: return c >= o->tau ? 1.0f : 0.0f;  // 1[p >= tau] (-log p)
    case CUSET_OBJ_EAFT:   return eaft;
    case CUSET_OBJ_ASFT:   return c;                          // DFT part; the KL term is separate
    case CUSET_OBJ_CUSET:  return (o->reweight ? wn : 1.0f) * cuset_hybrid_mask(o, c, is_cuda);
    default:               return 0.0f;
    }
}

// ASFT: the KL(p_ref || p_theta) term's logit gradient on one vocabulary entry, before 1/N.
CUSET_HD static inline float cuset_kl_grad(float p_theta, float p_ref, float beta) { return beta * (p_theta - p_ref); }
// ASFT: one vocabulary entry's share of KL(p_ref || p_theta) given the two log-probabilities.
CUSET_HD static inline float cuset_kl_term(float logp_ref, float logp_theta) { return expf(logp_ref) * (logp_ref - logp_theta); }

// The gradient: d(loss)/d(z_v) of one vocabulary entry v of a target position, given its
// probability p = exp(z_v - lse), a = cuset_token_coef, and (ASFT) the reference model's
// p_ref: a (p - 1[v = target]) / N, plus beta (p - p_ref) / N under ASFT. From p, so a
// backend may compute exp its own way (the CPU's vectorised cuset__expf);
// cuset_logit_grad takes the log-probabilities lp, lp_ref and uses libm's expf.
CUSET_HD static inline float cuset_logit_grad_p(const CusetObjective *o, float a, float p, float p_ref, int is_target,
                                                float inv_norm) {
    float g = o->kind == CUSET_OBJ_ASFT ? (a * p + cuset_kl_grad(p, p_ref, o->beta)) * inv_norm : a * p * inv_norm;
    return is_target ? g - a * inv_norm : g;
}
CUSET_HD static inline float cuset_logit_grad(const CusetObjective *o, float a, float lp, float lp_ref, int is_target,
                                              float inv_norm) {
    return cuset_logit_grad_p(o, a, expf(lp), o->kind == CUSET_OBJ_ASFT ? expf(lp_ref) : 0.0f, is_target, inv_norm);
}

// Eq. 9's term of one target position: (a (-log c) + beta KL) / N, KL = sum over v of
// cuset_kl_term (ASFT; 0 for the others).
CUSET_HD static inline double cuset_loss_term(const CusetObjective *o, float a, float nll, double kl, float inv_norm) {
    return (a * nll + o->beta * kl * (o->kind == CUSET_OBJ_ASFT)) * inv_norm;
}

// Not the objective, but shared by both backends the same way: GELU, tanh form,
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), and its derivative.
#define CUSET_GELU_SCALE 0.7978845608028654f // sqrt(2 / pi)
// GELU from x and th = tanh(cuset_gelu_arg(x)), so a backend may compute tanh its own way
// (the CPU's vectorised cuset__tanhf); cuset_gelu and cuset_gelu_grad use libm's tanhf.
CUSET_HD static inline float cuset_gelu_arg(float x) { return CUSET_GELU_SCALE * (x + 0.044715f * x * x * x); }
CUSET_HD static inline float cuset_gelu_th(float x, float th) { return 0.5f * x * (1.0f + th); }
CUSET_HD static inline float cuset_gelu_grad_th(float x, float th) {
    float sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * CUSET_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}
CUSET_HD static inline float cuset_gelu(float x) { return cuset_gelu_th(x, tanhf(cuset_gelu_arg(x))); }
CUSET_HD static inline float cuset_gelu_grad(float x) { return cuset_gelu_grad_th(x, tanhf(cuset_gelu_arg(x))); }
// LayerNorm's epsilon, added to the variance (GPT-2's).
#define CUSET_LN_EPS 1e-5f

// AdamW on one parameter p with moments m, v (updated in place) from its gradient g: g
// times the clip factor, the moments, their bias corrections bc1 = 1 - beta1^(step+1) and
// bc2 = 1 - beta2^(step+1), the decoupled weight decay wd (0 for tensors without decay).
// cuset_adamw_at gives the step's scalars.
CUSET_HD static inline void cuset_adamw_one(float *p, float *m, float *v, float g, CusetAdamW a, float wd) {
    g *= a.clip;
    float mi = *m = a.beta1 * *m + (1.0f - a.beta1) * g;
    float vi = *v = a.beta2 * *v + (1.0f - a.beta2) * g * g;
    *p -= a.lr * ((mi / a.bc1) / (sqrtf(vi / a.bc2) + a.eps) + wd * *p);
}

#endif // CUSET_H

/* ------------------------------------------------------------------------------------ */
/* 3. Implementation                                                                      */
/* ------------------------------------------------------------------------------------ */
#ifdef CUSET_IMPLEMENTATION
#ifndef CUSET_IMPLEMENTATION_DONE
#define CUSET_IMPLEMENTATION_DONE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __AVX512F__
#include <immintrin.h>
#endif

const char *const cuset_tensor_names[CUSET_NUM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};
const int cuset_tensor_decay[CUSET_NUM_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};
const char *const cuset_objective_names[CUSET_OBJ_COUNT] = {"sft", "dft", "profit", "eaft", "asft", "cuset"};

// Loops with less work than this run on one thread: waking the others costs more.
#define CUSET_PAR_MIN 16384

// Profiling hooks. A program that defines CUSET_PROFILE before including this file (the
// per-op profile of test/bench_cpu.c) provides cuset__prof_lap, called after every op of
// the CPU training step with the op's name and its floating-point operations (0: not
// counted); the time since the previous lap is that op's. Otherwise they compile to nothing.
#ifdef CUSET_PROFILE
static void cuset__prof_lap(const char *op, double flop);
#define CUSET__LAP(op, flop) cuset__prof_lap(op, (double)(flop))
#else
#define CUSET__LAP(op, flop) ((void)0)
#endif

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
    if (!p) { // the big ones are the model's parameters, optimizer state and activations
        double gib = (double)n * (double)size / (1u << 30);
        cuset__die(file, line, "out of memory allocating %zu x %zu bytes (%.2f GiB)%s", n, size, gib,
                   gib >= 1 ? ": a smaller model (layers, width, vocabulary), batch (rows, tokens per row) or data set "
                              "needs less" : "");
    }
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

// The project's one random number generator (splitmix64), used by everything that
// includes cuset.h. Two programs keep a copy on purpose, because they must build without
// cuset.h: the corpus generator (data/corpus.h: a seed must mean the same corpus on every
// machine, forever) and the emulator runtime (emu/cuemu.h, compiled into arbitrary CUDA
// programs).
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

int cuset_stdout_error(void) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    return errno ? errno : EIO;
}

int cuset_parse_number(const char *flag, const char *v, double lo, double hi, int whole, double *out, char *err,
                       size_t errlen) {
    char *end;
    double x = strtod(v, &end);
    int decimal = v[strspn(v, "0123456789+-.eE")] == '\0'; // strtod also takes " 5", 0x5 and infinity
    if (*v == '\0' || *end != '\0' || !decimal || !(x >= lo && x <= hi) || (whole && x != floor(x)))
        return cuset__err(err, errlen, "%s expects a %snumber in [%.16g, %.16g], got '%s'", flag, whole ? "whole " : "",
                          lo, hi, v); // %.16g: every whole number a double holds exactly (to 2^53)
    *out = x;
    return 0;
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
    return (float)(o->min_lr + 0.5 * (o->max_lr - o->min_lr) * (1.0 + cos(3.14159265358979323846 * progress)));
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

void cuset_gpt_init(CusetGPT *m, const CusetConfig *cfg) {
    char why[300];
    if (cuset_config_check(cfg, why, sizeof why)) CUSET_DIE("cuset_gpt_init: %s", why); // a caller's precondition
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

void cuset_acts_sizes(const CusetConfig *c, int B, int T, size_t a[CUSET_NUM_ACTS]) {
    size_t L = c->n_layer, C = c->n_embd, NH = c->n_head, Vp = c->padded_vocab_size, BT = (size_t)B * T;
    size_t s[CUSET_NUM_ACTS] = {BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * B * NH * T,
                                L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT, L * BT * 4 * C,
                                L * BT * 4 * C, L * BT * C, BT * C, BT, BT, BT * Vp};
    memcpy(a, s, sizeof s);
}

static void cuset__alloc_acts(CusetGPT *m, int B, int T) {
    if (m->acts_memory && m->B == B && m->T == T) return;
    free(m->acts_memory); free(m->gacts_memory); free(m->scratch); free(m->loss_scratch);
    size_t C = m->cfg.n_embd, Vp = m->cfg.padded_vocab_size, BT = (size_t)B * T, a[CUSET_NUM_ACTS];
    cuset_acts_sizes(&m->cfg, B, T, a);
    size_t g[CUSET_NUM_GRAD_ACTS] = {BT * C, BT * C, BT * C, BT * 3 * C, BT * 4 * C, 2 * BT * C};
    size_t na = 0, ng = 0;
    for (int i = 0; i < CUSET_NUM_ACTS; i++) na += a[i];
    for (int i = 0; i < CUSET_NUM_GRAD_ACTS; i++) ng += g[i];
    m->acts_memory = (float *)CUSET_CALLOC(na, sizeof(float));
    m->gacts_memory = (float *)CUSET_CALLOC(ng, sizeof(float));
    cuset__point((float **)&m->acts, CUSET_NUM_ACTS, a, m->acts_memory);
    cuset__point((float **)&m->gacts, CUSET_NUM_GRAD_ACTS, g, m->gacts_memory);
    // The matmuls' packed operand B (K x N, N rounded up to 32), for (IC, OC) among (C, 3C),
    // (C, C), (C, 4C), (4C, C) and (C, Vp): the forward's weight (N = OC, K = IC), the
    // backward's for dinp (N = IC, K = OC) and its input for dweight (N = IC, K <= BT).
    size_t wide = Vp > 4 * C ? Vp : 4 * C, r32_wide = (wide + 31) / 32 * 32, r32_c = (C + 31) / 32 * 32,
           r32_4c = (4 * C + 31) / 32 * 32;
    size_t s = r32_wide * C;
    if (r32_c * wide > s) s = r32_c * wide;
    if (r32_4c * BT > s) s = r32_4c * BT;
    m->scratch = (float *)CUSET_CALLOC(s, sizeof(float));
    m->loss_scratch = (float *)CUSET_CALLOC(3 * BT + B, sizeof(float));
    m->B = B; m->T = T;
}

void cuset_gpt_free(CusetGPT *m) {
    free(m->params_memory); free(m->grads_memory); free(m->m_memory); free(m->v_memory);
    free(m->acts_memory); free(m->gacts_memory); free(m->scratch); free(m->loss_scratch);
    memset(m, 0, sizeof *m);
}

// ---- matmul: one packed, register-tiled kernel C += A B ------------------------------------

// The register tile of every product (the matmuls and attention): C (8, nr) += A (8, K)
// B (K, nr) (= without accumulate), nr <= 32, where A(r, k) = A[r * ras + k * cas] (so A
// may be a transposed operand) and row k of B starts at B + k * ldb (a packed panel of the
// matmuls, ldb = 32, or a tile of attention's operands). Reference: for r, j < nr:
// acc = accumulate ? C[r][j] : 0; for k in order: acc = fma(A(r,k), B[k][j], acc);
// C[r][j] = acc. AVX-512: 16 accumulators of 16 lanes (lanes past nr masked off), per k
// two loads of B, 8 broadcasts of A and 16 FMAs; otherwise the same loop in C.
#define CUSET_MR 8
#define CUSET_NR 32
#ifdef __AVX512F__
// cuset__gemm_micro's AVX-512 body; columns 0-15 and 16-31 of B and C are the lanes in
// masks m0 and m1. Inlined with constant masks, so that whole tiles use plain loads and
// stores (masked loads everywhere made attention 1.6-2x slower on this AMD EPYC).
static inline __attribute__((always_inline)) void
cuset__gemm_micro_lanes(__mmask16 m0, __mmask16 m1, int K, const float *A, size_t ras, size_t cas, const float *B,
                        size_t ldb, float *C, size_t ldc, int accumulate) {
#define CUSET__LOAD(m, p) ((m) == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps((m), (p)))
    __m512 c[CUSET_MR][2];
    for (int r = 0; r < CUSET_MR; r++) {
        c[r][0] = accumulate ? CUSET__LOAD(m0, C + r * ldc) : _mm512_setzero_ps();
        c[r][1] = accumulate ? CUSET__LOAD(m1, C + r * ldc + 16) : _mm512_setzero_ps();
    }
    for (int k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb, *a = A + k * cas;
        __m512 b0 = CUSET__LOAD(m0, b), b1 = CUSET__LOAD(m1, b + 16);
#ifndef __CUDACC__ // nvcc's front end warns on a pragma it does not know (test/test_gpu.cu's host code)
#pragma GCC unroll 8
#endif
        for (int r = 0; r < CUSET_MR; r++) {
            __m512 ar = _mm512_set1_ps(a[r * ras]);
            c[r][0] = _mm512_fmadd_ps(ar, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(ar, b1, c[r][1]);
        }
    }
#undef CUSET__LOAD
    for (int r = 0; r < CUSET_MR; r++) {
        _mm512_mask_storeu_ps(C + r * ldc, m0, c[r][0]);
        _mm512_mask_storeu_ps(C + r * ldc + 16, m1, c[r][1]);
    }
}
#endif
static void cuset__gemm_micro(int nr, int K, const float *A, size_t ras, size_t cas, const float *B, size_t ldb, float *C,
                              size_t ldc, int accumulate) {
#ifdef __AVX512F__
    if (nr == CUSET_NR) cuset__gemm_micro_lanes(0xFFFF, 0xFFFF, K, A, ras, cas, B, ldb, C, ldc, accumulate);
    else
        cuset__gemm_micro_lanes(nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1),
                                nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0, K, A, ras, cas, B, ldb, C, ldc,
                                accumulate);
#else
    float acc[CUSET_MR][CUSET_NR];
    for (int r = 0; r < CUSET_MR; r++)
        for (int j = 0; j < nr; j++) acc[r][j] = accumulate ? C[r * ldc + j] : 0.0f;
    for (int k = 0; k < K; k++)
        for (int r = 0; r < CUSET_MR; r++) {
            float a = A[r * ras + k * cas];
            for (int j = 0; j < nr; j++) acc[r][j] = fmaf(a, B[(size_t)k * ldb + j], acc[r][j]);
        }
    for (int r = 0; r < CUSET_MR; r++)
        for (int j = 0; j < nr; j++) C[r * ldc + j] = acc[r][j];
#endif
}

// A tile of attention's products: C (mr, nr) += A (mr, K) B (K, nr) (= without accumulate),
// mr <= 8, nr <= 32, A and B as in cuset__gemm_micro, C row-major with leading dimension
// ldc. Eight rows go to the microkernel; fewer (the last rows when T is not a multiple of
// 8) run the same sums in the same order in plain C.
static void cuset__gemm_tile(int mr, int nr, int K, const float *A, size_t ras, size_t cas, const float *B, size_t ldb,
                             float *C, size_t ldc, int accumulate) {
    if (mr == CUSET_MR) { cuset__gemm_micro(nr, K, A, ras, cas, B, ldb, C, ldc, accumulate); return; }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            float acc = accumulate ? C[(size_t)r * ldc + j] : 0.0f;
            for (int k = 0; k < K; k++) acc = fmaf(A[r * ras + k * cas], B[(size_t)k * ldb + j], acc);
            C[(size_t)r * ldc + j] = acc;
        }
}

// C (M, N) += A (M, K) B (K, N), with A(i, k) = A[i * ras + k * cas] and B(k, j) =
// B[k * rbs + j * cbs] (either may be a transposed operand: no transpose pass), C
// row-major with leading dimension ldc. pack: ceil(N / 32) * 32 * K floats of workspace.
// Reference: for i, j: acc = C[i][j]; for k = 0..K-1: acc = fma(A(i,k), B(k,j), acc); C[i][j] = acc.
// B is packed once into panels of 32 columns (K x 32 contiguous, zeros past N). Jobs are
// (block of 64 rows, panel) pairs; a job runs its 8 x 32 tiles over K in blocks of 128 k's,
// storing C between blocks, so a block of the panel (16 KB) stays in L1 for 8 tiles; edge
// tiles go through a zero-padded 8 x 32 copy. Threads split the packing and the jobs
// (parallel only when the work pays for it); each output is summed by one thread in k order,
// so results do not depend on the thread count.
#define CUSET_MC 64
#define CUSET_KC 128
#define CUSET_GEMM_PAR_MIN (1 << 18) // multiply-adds below which one thread does it all
static void cuset__gemm(int M, int N, int K, const float *A, size_t ras, size_t cas, const float *B, size_t rbs,
                        size_t cbs, float *C, int ldc, float *pack) {
    int np = (N + CUSET_NR - 1) / CUSET_NR, nb = (M + CUSET_MC - 1) / CUSET_MC;
#pragma omp parallel if ((double)M * N * K >= CUSET_GEMM_PAR_MIN)
    {
#pragma omp for schedule(static)
        for (int p = 0; p < np; p++) { // panel p: pack[p][k][j] = B(k, 32 p + j)
            float *dst = pack + (size_t)p * K * CUSET_NR;
            int j0 = p * CUSET_NR, nr = N - j0 < CUSET_NR ? N - j0 : CUSET_NR;
            for (int k = 0; k < K; k++) {
                const float *src = B + (size_t)k * rbs + (size_t)j0 * cbs;
                for (int j = 0; j < nr; j++) dst[(size_t)k * CUSET_NR + j] = src[j * cbs];
                for (int j = nr; j < CUSET_NR; j++) dst[(size_t)k * CUSET_NR + j] = 0.0f;
            }
        }
#pragma omp for schedule(static)
        for (int job = 0; job < nb * np; job++) {
            int i0 = job / np * CUSET_MC, p = job % np, j0 = p * CUSET_NR;
            int i1 = i0 + CUSET_MC < M ? i0 + CUSET_MC : M, nr = N - j0 < CUSET_NR ? N - j0 : CUSET_NR;
            for (int k0 = 0; k0 < K; k0 += CUSET_KC) {
                int kc = K - k0 < CUSET_KC ? K - k0 : CUSET_KC;
                const float *bp = pack + ((size_t)p * K + k0) * CUSET_NR;
                for (int i = i0; i < i1; i += CUSET_MR) {
                    int mr = i1 - i < CUSET_MR ? i1 - i : CUSET_MR;
                    const float *a = A + (size_t)i * ras + (size_t)k0 * cas;
                    float *c = C + (size_t)i * ldc + j0;
                    if (mr == CUSET_MR) { cuset__gemm_micro(nr, kc, a, ras, cas, bp, CUSET_NR, c, ldc, 1); continue; }
                    // fewer than 8 rows: A's rows and C's through zero-padded 8-row copies
                    float edge[CUSET_MR * CUSET_NR] = {0}, a_edge[CUSET_MR * CUSET_KC];
                    for (int r = 0; r < mr; r++) memcpy(edge + r * CUSET_NR, c + (size_t)r * ldc, nr * sizeof(float));
                    for (int k = 0; k < kc; k++)
                        for (int r = 0; r < CUSET_MR; r++) a_edge[k * CUSET_MR + r] = r < mr ? a[r * ras + k * cas] : 0.0f;
                    cuset__gemm_micro(nr, kc, a_edge, 1, CUSET_MR, bp, CUSET_NR, edge, CUSET_NR, 1);
                    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, edge + r * CUSET_NR, nr * sizeof(float));
                }
            }
        }
    }
}

// out (N, OC) = residual (N, OC) + inp (N, IC) @ weight (OC, IC)^T + bias (OC) (residual
// and bias may be NULL: the residual add fused into the projections that end a block).
// Reference: out[i][o] = residual[i][o] + bias[o], then += inp[i][c] * weight[o][c] for c
// in order. residual + bias initialises out; the gemm reads weight as the transposed
// operand B(c, o).
static void cuset__matmul_residual_forward(float *out, const float *residual, const float *inp, const float *weight,
                                           const float *bias, int N, int IC, int OC, float *scratch) {
#pragma omp parallel for schedule(static) if ((size_t)N * OC >= CUSET_PAR_MIN)
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++)
            out[(size_t)i * OC + o] = (residual ? residual[(size_t)i * OC + o] : 0.0f) + (bias ? bias[o] : 0.0f);
    cuset__gemm(N, OC, IC, inp, IC, 1, weight, 1, IC, out, OC, scratch);
}

// out (N, OC) = inp (N, IC) @ weight (OC, IC)^T + bias (OC) (bias may be NULL).
static void cuset__matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                                  int N, int IC, int OC, float *scratch) {
    cuset__matmul_residual_forward(out, NULL, inp, weight, bias, N, IC, OC, scratch);
}

// Given dout (N, OC): dinp (N, IC) += dout @ weight, dweight (OC, IC) += dout^T @ inp,
// dbias (OC) += column sums of dout (dbias may be NULL).
// Reference: dinp[i][c] += sum_o dout[i][o] w[o][c]; dweight[o][c] += sum_i dout[i][o] inp[i][c];
// dbias[o] += sum_i dout[i][o], each sum in index order. dout^T is read in place (A(o, i) =
// dout[i][o]); the column sums run over rows in order, threads splitting the columns.
static void cuset__matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                   const float *weight, int N, int IC, int OC, float *scratch) {
    cuset__gemm(N, IC, OC, dout, OC, 1, weight, IC, 1, dinp, IC, scratch);
    cuset__gemm(OC, IC, N, dout, 1, OC, inp, IC, 1, dweight, IC, scratch);
    if (dbias) {
        int chunks = (OC + 63) / 64;
#pragma omp parallel for schedule(static) if ((size_t)OC * N >= 4 * CUSET_PAR_MIN)
        for (int ch = 0; ch < chunks; ch++) {
            int o0 = ch * 64, o1 = o0 + 64 < OC ? o0 + 64 : OC;
            float s[64] = {0};
            for (int i = 0; i < N; i++)
                for (int o = o0; o < o1; o++) s[o - o0] += dout[(size_t)i * OC + o];
            for (int o = o0; o < o1; o++) dbias[o] += s[o - o0];
        }
    }
}

// ---- the other layers, forward and backward -------------------------------------------

// expf and tanhf without calls or branches, so that gcc vectorises the loops around them.
// exp: x = n ln 2 + r, |r| <= ln 2 / 2, exp(r) by Cephes' degree-6 polynomial, 2^n put
// into the exponent bits; relative error < 1e-7 on [-87, 88] (clamped outside).
// tanh(u) = 1 - 2 / (exp(2u) + 1): absolute error < 2e-7 (libm's tanhf: 1e-7), which is
// what GELU needs (it multiplies 1 + tanh by x/2).
static inline float cuset__expf(float x) {
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; // round(x / ln 2)
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;                // x - n ln 2, in two parts
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23; // unsigned: defined for any n (a NaN x: p is NaN anyway)
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}
static inline float cuset__tanhf(float u) { return 1.0f - 2.0f / (cuset__expf(2.0f * u) + 1.0f); }

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

// Row sums (LayerNorms, the softmax): sum of x[c] * y[c] (y NULL: of x[c]) over c < n, in 16
// lanes (lane j takes the c = j mod 16, in order), the lanes then added in order. A fixed
// order that gcc vectorises; a running sum would be a chain of n dependent adds.
static inline float cuset__dot_lanes(const float *x, const float *y, int n) {
    float lane[16] = {0}, s = 0.0f;
    int n16 = n / 16 * 16;
    for (int c0 = 0; c0 < n16; c0 += 16)
        for (int j = 0; j < 16; j++) lane[j] += x[c0 + j] * (y ? y[c0 + j] : 1.0f);
    for (int c = n16; c < n; c++) lane[c - n16] += x[c] * (y ? y[c] : 1.0f);
    for (int j = 0; j < 16; j++) s += lane[j];
    return s;
}

// The largest of x[c], c < n (n >= 1), in 16 lanes (the max is exact in any order).
static inline float cuset__max_lanes(const float *x, int n) {
    float lane[16], m = x[0];
    for (int j = 0; j < 16; j++) lane[j] = x[0];
    int n16 = n / 16 * 16;
    for (int c0 = 0; c0 < n16; c0 += 16)
        for (int j = 0; j < 16; j++) lane[j] = x[c0 + j] > lane[j] ? x[c0 + j] : lane[j];
    for (int c = n16; c < n; c++) lane[c - n16] = x[c] > lane[c - n16] ? x[c] : lane[c - n16];
    for (int j = 0; j < 16; j++) m = lane[j] > m ? lane[j] : m;
    return m;
}

// out (N,C) = (inp - mean) * rstd * w + b per row; saves mean and rstd (N). Reference:
// m = sum of x[c] / C, v = sum of (x[c] - m)^2 / C, each sum in c order; here in lanes
// (cuset__dot_lanes), x - m kept in out between the passes.
static void cuset__layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                     const float *b, int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= CUSET_PAR_MIN)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *o = out + (size_t)i * C, m = cuset__dot_lanes(x, NULL, C) / C;
        for (int c = 0; c < C; c++) o[c] = x[c] - m;
        float s = 1.0f / sqrtf(cuset__dot_lanes(o, o, C) / C + CUSET_LN_EPS);
        for (int c = 0; c < C; c++) o[c] = o[c] * s * w[c] + b[c];
        mean[i] = m; rstd[i] = s;
    }
}

// Given dout (N,C): dinp (N,C) += the gradient through the LayerNorm of inp (N,C) with the
// saved mean and rstd (N); dw, db (C) += the gradients of its scale and shift.
static void cuset__layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                      const float *w, const float *mean, const float *rstd, int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= CUSET_PAR_MIN)
    for (int i = 0; i < N; i++) { // the mean of dnorm and of dnorm * norm over c, in lanes as above
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float mu = mean[i], rs = rstd[i], l1[16] = {0}, l2[16] = {0}, dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        int c16 = C / 16 * 16;
        for (int c0 = 0; c0 < c16; c0 += 16)
            for (int j = 0; j < 16; j++) {
                float norm = (x[c0 + j] - mu) * rs, dnorm = w[c0 + j] * dy[c0 + j];
                l1[j] += dnorm; l2[j] += dnorm * norm;
            }
        for (int c = c16; c < C; c++) {
            float norm = (x[c] - mu) * rs, dnorm = w[c] * dy[c];
            l1[c - c16] += dnorm; l2[c - c16] += dnorm * norm;
        }
        for (int j = 0; j < 16; j++) { dnorm_mean += l1[j]; dnorm_norm_mean += l2[j]; }
        dnorm_mean /= C; dnorm_norm_mean /= C;
        for (int c = 0; c < C; c++) {
            float norm = (x[c] - mu) * rs, dnorm = w[c] * dy[c];
            dinp[(size_t)i * C + c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rs;
        }
    }
    // dw[c] += sum over i in order of dout[i][c] norm[i][c], db[c] += sum of dout[i][c]:
    // threads split the columns in groups of 16, each group's rows read in order
#pragma omp parallel for schedule(static) if ((size_t)N * C >= CUSET_PAR_MIN)
    for (int c0 = 0; c0 < C; c0 += 16) {
        int nc = C - c0 < 16 ? C - c0 : 16;
        float sw[16] = {0}, sb[16] = {0};
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * C + c0, *dy = dout + (size_t)i * C + c0;
            for (int c = 0; c < nc; c++) {
                sw[c] += dy[c] * (x[c] - mean[i]) * rstd[i];
                sb[c] += dy[c];
            }
        }
        for (int c = 0; c < nc; c++) { dw[c0 + c] += sw[c]; db[c0 + c] += sb[c]; }
    }
}

// Tiles of C (T, N) += A (T, K) B (K, N) where row block i of A is zero past column
// i + MR - 1 (lower triangular A: att, dpre): K shrinks with the block.
static void cuset__gemm_lower(int T, int N, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    for (int i = 0; i < T; i += CUSET_MR)
        for (int j = 0; j < N; j += CUSET_NR) {
            int mr = T - i < CUSET_MR ? T - i : CUSET_MR, nr = N - j < CUSET_NR ? N - j : CUSET_NR;
            cuset__gemm_tile(mr, nr, i + mr, A + (size_t)i * lda, lda, 1, B + j, ldb, C + (size_t)i * ldc + j, ldc, 1);
        }
}

// Tiles of C (T, N) += A (T, T) B (T, N) for upper triangular A (att^T, dpre^T): row block
// i of A is zero before column i.
static void cuset__gemm_upper(int T, int N, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    for (int i = 0; i < T; i += CUSET_MR)
        for (int j = 0; j < N; j += CUSET_NR) {
            int mr = T - i < CUSET_MR ? T - i : CUSET_MR, nr = N - j < CUSET_NR ? N - j : CUSET_NR;
            cuset__gemm_tile(mr, nr, T - i, A + (size_t)i * lda + i, lda, 1, B + (size_t)i * ldb + j, ldb,
                             C + (size_t)i * ldc + j, ldc, 1);
        }
}

// S (T, T) = A (T, K) Bt (K, T) on the tiles that touch the lower triangle (t2 <= t).
static void cuset__gemm_causal_scores(int T, int K, const float *A, int lda, const float *Bt, float *S) {
    memset(S, 0, (size_t)T * T * sizeof(float));
    for (int i = 0; i < T; i += CUSET_MR)
        for (int j = 0; j < i + CUSET_MR && j < T; j += CUSET_NR) {
            int mr = T - i < CUSET_MR ? T - i : CUSET_MR, nr = T - j < CUSET_NR ? T - j : CUSET_NR;
            cuset__gemm_tile(mr, nr, K, A + (size_t)i * lda, lda, 1, Bt + j, T, S + (size_t)i * T + j, T, 1);
        }
}

// out (cols, rows) = in (rows, cols) with a row stride of ld, on one thread, 16 rows at a
// time, so that consecutive writes fill a cache line (writing one row of in at a time, each
// write rows floats from the last, made flash attention 3-5% slower at T = 1024).
static void cuset__transpose_serial(float *out, const float *in, int rows, int cols, int ld) {
    for (int i0 = 0; i0 < rows; i0 += 16) {
        int i1 = i0 + 16 < rows ? i0 + 16 : rows;
        for (int j = 0; j < cols; j++)
            for (int i = i0; i < i1; i++) out[(size_t)j * rows + i] = in[(size_t)i * ld + j];
    }
}

// Causal multi-head attention, materialised: the reference that the flash-style version
// below (which training runs) and the GPU kernels are tested against. One (batch, head)
// pair per task, its products done by the register tiles: only the tiles on or below the
// diagonal of the T x T score matrix are computed, and the products with att stop at the
// diagonal too. qkv (B,T,3C) holds q, k, v; head h uses channels h*hs..(h+1)*hs-1 of each
// (row stride 3C). att (B,NH,T,T) keeps the softmax rows (zero above the diagonal); out
// (B,T,C). kv_t (B,NH,hs,T) is scratch for K^T. (Unused outside the tests: marked so.)
__attribute__((unused)) static void cuset__attention_forward(float *out, float *att, float *kv_t, const float *qkv, int B, int T, int C, int NH) {
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
            for (int t = 0; t < T; t++) { // softmax over t2 <= t (exp as cuset__expf), zeros beyond
                float *row = a + (size_t)t * T, maxv = -INFINITY, sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) maxv = fmaxf(maxv, row[t2] * scale);
                for (int t2 = 0; t2 <= t; t2++) row[t2] = cuset__expf(row[t2] * scale - maxv);
                for (int t2 = 0; t2 <= t; t2++) sum += row[t2];
                for (int t2 = 0; t2 <= t; t2++) row[t2] /= sum;
                for (int t2 = t + 1; t2 < T; t2++) row[t2] = 0.0f;
                for (int i = 0; i < hs; i++) y[(size_t)t * C + i] = 0.0f;
            }
            cuset__gemm_lower(T, hs, a, T, v, 3 * C, y, C); // y = att v
        }
}

// Given dout (B,T,C): dqkv (B,T,3C) += the gradient through attention. datt (B,NH,T,T)
// becomes d(scores); att_t and kv_t are scratch.
__attribute__((unused)) static void cuset__attention_backward(float *dqkv, float *datt, float *att_t, float *kv_t, const float *dout,
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

// Flash-style causal attention, what the training step runs: cuset__attention_forward and
// _backward above (the reference, which tests compare against) up to rounding, with no
// T x T buffer. One (batch, head) pair per task; its T queries in tiles of 64, each
// meeting the key tiles up to the diagonal only (those above it are skipped), so a tile's
// scores, probabilities and their gradients stay in L1. The products run on the register
// tiles (cuset__gemm_tile); on the diagonal tile they stop at the diagonal.
// Forward: for a query row, an online softmax over the key tiles: S = q.k scale, the
// running max m and sum l, y rescaled by exp(m_old - m) when m grows, y += exp(S - m) v;
// at the end y /= l and lse = m + log l (B,NH,T) is kept. Backward from lse: per tile
// P = exp(S - lse), dv += P^T dy, dP = dy v^T, dS = P (dP - D) scale with D_t = dy_t . y_t,
// dq += dS k, dk += dS^T q. Sums run in a fixed order (the pair's tiles in order), so the
// thread count does not change them. scratch: (B,NH,2,hs,T) floats (K^T, then V^T).
#define CUSET_ATT_TILE 64

// A tile of scores: S (ni, nj; row stride CUSET_ATT_TILE) = A (ni, hs; row stride lda)
// Bt (hs, nj; row stride T), on the diagonal tile only the 8 x 32 tiles that reach it.
static void cuset__att_scores(float *S, const float *A, int lda, const float *Bt, int ni, int nj, int diag, int hs, int T) {
    for (int r = 0; r < ni; r += CUSET_MR) {
        int mr = ni - r < CUSET_MR ? ni - r : CUSET_MR;
        for (int c = 0; c < nj && (!diag || c < r + mr); c += CUSET_NR) {
            int nr = nj - c < CUSET_NR ? nj - c : CUSET_NR;
            cuset__gemm_tile(mr, nr, hs, A + (size_t)r * lda, lda, 1, Bt + c, T, S + (size_t)r * CUSET_ATT_TILE + c,
                             CUSET_ATT_TILE, 0);
        }
    }
}

// out (ni, n; row stride ldo) += P (ni, nj; row stride CUSET_ATT_TILE) X (nj, n; row stride
// ldx); on the diagonal tile (P zero past column r) row block r stops at key r + MR - 1.
static void cuset__att_pv(float *out, int ldo, const float *P, const float *X, int ldx, int ni, int nj, int n, int diag) {
    for (int r = 0; r < ni; r += CUSET_MR) {
        int mr = ni - r < CUSET_MR ? ni - r : CUSET_MR, k = diag && r + mr < nj ? r + mr : nj;
        for (int c = 0; c < n; c += CUSET_NR)
            cuset__gemm_tile(mr, n - c < CUSET_NR ? n - c : CUSET_NR, k, P + (size_t)r * CUSET_ATT_TILE, CUSET_ATT_TILE, 1,
                             X + c, ldx, out + (size_t)r * ldo + c, ldo, 1);
    }
}

// out (nj, n; row stride ldo) += P^T X, P (ni, nj) as above, X (ni, n; row stride ldx);
// P^T is read in place (A(c, r) = P[r][c]). On the diagonal tile key block c starts at
// query c.
static void cuset__att_ptx(float *out, int ldo, const float *P, const float *X, int ldx, int ni, int nj, int n, int diag) {
    for (int c = 0; c < nj; c += CUSET_MR) {
        int mr = nj - c < CUSET_MR ? nj - c : CUSET_MR, k0 = diag ? c : 0;
        for (int j = 0; j < n; j += CUSET_NR)
            cuset__gemm_tile(mr, n - j < CUSET_NR ? n - j : CUSET_NR, ni - k0, P + (size_t)k0 * CUSET_ATT_TILE + c, 1,
                             CUSET_ATT_TILE, X + (size_t)k0 * ldx + j, ldx, out + (size_t)c * ldo + j, ldo, 1);
    }
}

// out (B,T,C) = attention of qkv (B,T,3C); lse (B,NH,T) the log-sum-exp of each row of
// scaled scores.
static void cuset__attention_forward_flash(float *out, float *lse, float *scratch, const float *qkv, int B, int T, int C,
                                           int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t bh = (size_t)b * NH + h;
            const float *q = qkv + (size_t)b * T * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
            float *y = out + (size_t)b * T * C + h * hs, *kt = scratch + bh * 2 * hs * T, *l = lse + bh * T;
            float S[CUSET_ATT_TILE * CUSET_ATT_TILE], mx[CUSET_ATT_TILE], sum[CUSET_ATT_TILE];
            cuset__transpose_serial(kt, k, T, hs, 3 * C);
            for (int i0 = 0; i0 < T; i0 += CUSET_ATT_TILE) {
                int ni = T - i0 < CUSET_ATT_TILE ? T - i0 : CUSET_ATT_TILE;
                for (int r = 0; r < ni; r++) {
                    mx[r] = -INFINITY; sum[r] = 0.0f;
                    memset(y + (size_t)(i0 + r) * C, 0, hs * sizeof(float));
                }
                for (int j0 = 0; j0 <= i0; j0 += CUSET_ATT_TILE) {
                    int nj = T - j0 < CUSET_ATT_TILE ? T - j0 : CUSET_ATT_TILE, diag = j0 == i0;
                    cuset__att_scores(S, q + (size_t)i0 * 3 * C, 3 * C, kt + j0, ni, nj, diag, hs, T);
                    for (int r = 0; r < ni; r++) { // online softmax: S becomes exp(S scale - m)
                        int n = diag ? r + 1 : nj; // keys up to the query
                        float *s = S + (size_t)r * CUSET_ATT_TILE, m = fmaxf(mx[r], cuset__max_lanes(s, n) * scale);
                        for (int c = 0; c < n; c++) s[c] = cuset__expf(s[c] * scale - m);
                        for (int c = n; c < nj; c++) s[c] = 0.0f;
                        float rs = cuset__dot_lanes(s, NULL, n), corr = cuset__expf(mx[r] - m), *yr = y + (size_t)(i0 + r) * C;
                        for (int i = 0; i < hs; i++) yr[i] *= corr;
                        sum[r] = sum[r] * corr + rs;
                        mx[r] = m;
                    }
                    cuset__att_pv(y + (size_t)i0 * C, C, S, v + (size_t)j0 * 3 * C, 3 * C, ni, nj, hs, diag);
                }
                for (int r = 0; r < ni; r++) {
                    float *yr = y + (size_t)(i0 + r) * C;
                    for (int i = 0; i < hs; i++) yr[i] /= sum[r];
                    l[i0 + r] = mx[r] + logf(sum[r]);
                }
            }
        }
}

// Given dout (B,T,C), the forward's out (B,T,C) and lse: dqkv (B,T,3C) += the gradient
// through attention.
static void cuset__attention_backward_flash(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                            const float *out, const float *lse, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t bh = (size_t)b * NH + h;
            const float *q = qkv + (size_t)b * T * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
            const float *dy = dout + (size_t)b * T * C + h * hs, *y = out + (size_t)b * T * C + h * hs, *l = lse + bh * T;
            float *dq = dqkv + (size_t)b * T * 3 * C + h * hs, *dk = dq + C, *dv = dq + 2 * C;
            float *kt = scratch + bh * 2 * hs * T, *vt = kt + (size_t)hs * T;
            float P[CUSET_ATT_TILE * CUSET_ATT_TILE], dS[CUSET_ATT_TILE * CUSET_ATT_TILE], D[CUSET_ATT_TILE];
            cuset__transpose_serial(kt, k, T, hs, 3 * C);
            cuset__transpose_serial(vt, v, T, hs, 3 * C);
            for (int i0 = 0; i0 < T; i0 += CUSET_ATT_TILE) {
                int ni = T - i0 < CUSET_ATT_TILE ? T - i0 : CUSET_ATT_TILE;
                for (int r = 0; r < ni; r++) { // D_t = dy_t . y_t
                    const float *a = dy + (size_t)(i0 + r) * C, *c = y + (size_t)(i0 + r) * C;
                    float d = 0.0f;
                    for (int i = 0; i < hs; i++) d += a[i] * c[i];
                    D[r] = d;
                }
                for (int j0 = 0; j0 <= i0; j0 += CUSET_ATT_TILE) {
                    int nj = T - j0 < CUSET_ATT_TILE ? T - j0 : CUSET_ATT_TILE, diag = j0 == i0;
                    cuset__att_scores(P, q + (size_t)i0 * 3 * C, 3 * C, kt + j0, ni, nj, diag, hs, T);
                    cuset__att_scores(dS, dy + (size_t)i0 * C, C, vt + j0, ni, nj, diag, hs, T); // dP = dy v^T
                    for (int r = 0; r < ni; r++) {
                        float *p = P + (size_t)r * CUSET_ATT_TILE, *ds = dS + (size_t)r * CUSET_ATT_TILE, lr = l[i0 + r];
                        int n = diag ? r + 1 : nj;
                        for (int c = 0; c < n; c++) {
                            p[c] = cuset__expf(p[c] * scale - lr);
                            ds[c] = p[c] * (ds[c] - D[r]) * scale;
                        }
                        for (int c = n; c < nj; c++) p[c] = ds[c] = 0.0f;
                    }
                    cuset__att_ptx(dv + (size_t)j0 * 3 * C, 3 * C, P, dy + (size_t)i0 * C, C, ni, nj, hs, diag);
                    cuset__att_pv(dq + (size_t)i0 * 3 * C, 3 * C, dS, k + (size_t)j0 * 3 * C, 3 * C, ni, nj, hs, diag);
                    cuset__att_ptx(dk + (size_t)j0 * 3 * C, 3 * C, dS, q + (size_t)i0 * 3 * C, 3 * C, ni, nj, hs, diag);
                }
            }
        }
}

// GELU and its derivative, as cuset_gelu and cuset_gelu_grad (section 2, tanh form) with
// cuset__tanhf: out (n) = gelu(inp); dinp (n) = gelu'(inp) * dout (dinp may be dout).
// Elementwise, threads split the range.
static void cuset__gelu_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= CUSET_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = cuset_gelu_th(x, cuset__tanhf(cuset_gelu_arg(x)));
    }
}

static void cuset__gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= CUSET_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        dinp[i] = cuset_gelu_grad_th(x, cuset__tanhf(cuset_gelu_arg(x))) * dout[i];
    }
}

// out (n) = a + b: the residual connection (out may be a).
static void cuset__residual_forward(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for schedule(static) if (n >= CUSET_PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// ---- the model ---------------------------------------------------------------------------

// The forward pass, with the head's logits only for the rows i (of B T) where
// need_logits[i] is set (NULL: every row); the other rows of acts.logits keep what they
// held. Training passes the batch's is_target, since the loss reads no other row: the
// rows of prompts and padding cost nothing in the head. A row's logits are the same
// whichever rows are computed with it (cuset__gemm sums each output alone, in k order).
static void cuset__gpt_forward(CusetGPT *m, const int *inputs, int B, int T, const unsigned char *need_logits) {
    const CusetConfig *c = &m->cfg;
    if (T > c->max_seq_len) CUSET_DIE("sequence length %d exceeds the model's context %d", T, c->max_seq_len);
    for (long i = 0; i < (long)B * T; i++)
        if (inputs[i] < 0 || inputs[i] >= c->vocab_size)
            CUSET_DIE("input %ld: token %d outside the vocabulary [0, %d)", i, inputs[i], c->vocab_size);
    cuset__alloc_acts(m, B, T);
    int L = c->n_layer, C = c->n_embd, NH = c->n_head, Vp = c->padded_vocab_size, BT = B * T;
    CusetParams p = m->params;
    CusetActs a = m->acts;
    double mm = 2.0 * BT * C * C, at = 2.0 * B * NH * (T * (T + 1.0) / 2) * (C / NH) * 2; // flop of one C x C matmul, of attention
    cuset__encoder_forward(a.encoded, inputs, p.wte, p.wpe, BT, T, C);
    CUSET__LAP("fwd encoder", 0);
    for (int l = 0; l < L; l++) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * BT * C;
        size_t lc = (size_t)l * BT * C;
        float *ln1 = a.ln1 + lc, *qkv = a.qkv + 3 * lc, *atty = a.atty + lc, *res2 = a.residual2 + lc;
        float *ln2 = a.ln2 + lc, *fch = a.fch + 4 * lc, *fchg = a.fch_gelu + 4 * lc, *res3 = a.residual3 + lc;
        float *lse = a.att_lse + (size_t)l * B * NH * T;
        cuset__layernorm_forward(ln1, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, residual,
                                 p.ln1w + l * C, p.ln1b + l * C, BT, C);
        CUSET__LAP("fwd layernorm", 0);
        cuset__matmul_forward(qkv, ln1, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, BT, C, 3 * C, m->scratch);
        CUSET__LAP("fwd matmul qkv", 3 * mm);
        cuset__attention_forward_flash(atty, lse, m->gacts.kv_t, qkv, B, T, C, NH);
        CUSET__LAP("fwd attention", at);
        cuset__matmul_residual_forward(res2, residual, atty, p.attprojw + (size_t)l * C * C, p.attprojb + l * C, BT, C, C,
                                       m->scratch);
        CUSET__LAP("fwd matmul attproj", mm);
        cuset__layernorm_forward(ln2, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, res2,
                                 p.ln2w + l * C, p.ln2b + l * C, BT, C);
        CUSET__LAP("fwd layernorm", 0);
        cuset__matmul_forward(fch, ln2, p.fcw + (size_t)l * 4 * C * C, p.fcb + l * 4 * C, BT, C, 4 * C, m->scratch);
        CUSET__LAP("fwd matmul fc", 4 * mm);
        cuset__gelu_forward(fchg, fch, (size_t)BT * 4 * C);
        CUSET__LAP("fwd gelu", 0);
        cuset__matmul_residual_forward(res3, res2, fchg, p.fcprojw + (size_t)l * 4 * C * C, p.fcprojb + l * C, BT, 4 * C, C,
                                       m->scratch);
        CUSET__LAP("fwd matmul fcproj", 4 * mm);
    }
    const float *last = a.residual3 + (size_t)(L - 1) * BT * C;
    cuset__layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, p.lnfw, p.lnfb, BT, C);
    CUSET__LAP("fwd layernorm", 0);
    long head_rows = 0;
    for (int r0 = 0, r1 = 0; r0 < BT; r0 = r1) { // each run of rows that need logits, in order
        while (r0 < BT && need_logits && !need_logits[r0]) r0++;
        for (r1 = r0; r1 < BT && (!need_logits || need_logits[r1]); r1++) {}
        if (r1 > r0) cuset__matmul_forward(a.logits + (size_t)r0 * Vp, a.lnf + (size_t)r0 * C, p.wte, NULL, r1 - r0, C, Vp,
                                           m->scratch);
        head_rows += r1 - r0;
    }
    CUSET__LAP("fwd matmul head", 2.0 * head_rows * C * Vp);
    (void)mm; (void)at; (void)head_rows;
}

void cuset_gpt_forward(CusetGPT *m, const int *inputs, int B, int T) { cuset__gpt_forward(m, inputs, B, T, NULL); }

void cuset_gpt_zero_grad(CusetGPT *m) {
    if (!m->grads_memory) {
        m->grads_memory = (float *)CUSET_CALLOC(m->num_params, sizeof(float));
        cuset__point((float **)&m->grads, CUSET_NUM_TENSORS, m->tensor_sizes, m->grads_memory);
    }
    memset(m->grads_memory, 0, m->num_params * sizeof(float));
}

// 1 if the n floats at x are all zero.
static int cuset__zero_row(const float *x, int n) {
    for (int i = 0; i < n; i++)
        if (x[i] != 0.0f) return 0;
    return 1;
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
    // flop as in the forward, twice (attention: dP, dV, dQ, dK; the recomputed scores not counted)
    double mm = 4.0 * BT * C * C, at = 4.0 * B * NH * (T * (T + 1.0) / 2) * (C / NH) * 2;
    // head and final LayerNorm: dresidual = d(loss)/d(last layer output). The rows of dlogits
    // outside the targets are zero (cuset_loss writes zeros there) and add nothing, so the
    // head's products run over each run of nonzero rows, in row order: the same sums.
    memset(d.dbt_c, 0, btc * sizeof(float));
    long head_rows = 0;
    for (int r0 = 0, r1 = 0; r0 < BT; r0 = r1) {
        while (r0 < BT && cuset__zero_row(a.logits + (size_t)r0 * Vp, Vp)) r0++;
        for (r1 = r0; r1 < BT && !cuset__zero_row(a.logits + (size_t)r1 * Vp, Vp); r1++) {}
        if (r1 > r0)
            cuset__matmul_backward(d.dbt_c + (size_t)r0 * C, g.wte, NULL, a.logits + (size_t)r0 * Vp, a.lnf + (size_t)r0 * C,
                                   p.wte, r1 - r0, C, Vp, m->scratch);
        head_rows += r1 - r0;
    }
    CUSET__LAP("bwd matmul head", 4.0 * head_rows * C * Vp);
    (void)head_rows;
    memset(d.dresidual, 0, btc * sizeof(float));
    cuset__layernorm_backward(d.dresidual, g.lnfw, g.lnfb, d.dbt_c, a.residual3 + (size_t)(L - 1) * btc,
                              p.lnfw, a.lnf_mean, a.lnf_rstd, BT, C);
    CUSET__LAP("bwd layernorm", 0);
    for (int l = L - 1; l >= 0; l--) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * btc;
        size_t lc = (size_t)l * btc;
        // MLP block: res3 = res2 + fcproj(gelu(fc(ln2(res2))))
        memset(d.dfch, 0, 4 * btc * sizeof(float));
        cuset__matmul_backward(d.dfch, g.fcprojw + (size_t)l * 4 * C * C, g.fcprojb + l * C, d.dresidual,
                               a.fch_gelu + 4 * lc, p.fcprojw + (size_t)l * 4 * C * C, BT, 4 * C, C, m->scratch);
        CUSET__LAP("bwd matmul fcproj", 4 * mm);
        cuset__gelu_backward(d.dfch, a.fch + 4 * lc, d.dfch, 4 * btc);
        CUSET__LAP("bwd gelu", 0);
        memset(d.dbt_c, 0, btc * sizeof(float));
        cuset__matmul_backward(d.dbt_c, g.fcw + (size_t)l * 4 * C * C, g.fcb + l * 4 * C, d.dfch,
                               a.ln2 + lc, p.fcw + (size_t)l * 4 * C * C, BT, C, 4 * C, m->scratch);
        CUSET__LAP("bwd matmul fc", 4 * mm);
        cuset__layernorm_backward(d.dresidual, g.ln2w + l * C, g.ln2b + l * C, d.dbt_c, a.residual2 + lc,
                                  p.ln2w + l * C, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, BT, C);
        CUSET__LAP("bwd layernorm", 0);
        // attention block: res2 = residual + attproj(attention(qkv(ln1(residual))))
        memset(d.dbt_c, 0, btc * sizeof(float));
        cuset__matmul_backward(d.dbt_c, g.attprojw + (size_t)l * C * C, g.attprojb + l * C, d.dresidual,
                               a.atty + lc, p.attprojw + (size_t)l * C * C, BT, C, C, m->scratch);
        CUSET__LAP("bwd matmul attproj", mm);
        memset(d.dqkv, 0, 3 * btc * sizeof(float));
        cuset__attention_backward_flash(d.dqkv, d.kv_t, d.dbt_c, a.qkv + 3 * lc, a.atty + lc, a.att_lse + (size_t)l * B * NH * T,
                                        B, T, C, NH);
        CUSET__LAP("bwd attention", at);
        memset(d.dbt_c2, 0, btc * sizeof(float));
        cuset__matmul_backward(d.dbt_c2, g.qkvw + (size_t)l * 3 * C * C, g.qkvb + l * 3 * C, d.dqkv,
                               a.ln1 + lc, p.qkvw + (size_t)l * 3 * C * C, BT, C, 3 * C, m->scratch);
        CUSET__LAP("bwd matmul qkv", 3 * mm);
        cuset__layernorm_backward(d.dresidual, g.ln1w + l * C, g.ln1b + l * C, d.dbt_c2, residual,
                                  p.ln1w + l * C, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, BT, C);
        CUSET__LAP("bwd layernorm", 0);
    }
    cuset__encoder_backward(g.wte, g.wpe, d.dresidual, inputs, BT, T, C);
    CUSET__LAP("bwd encoder", 0);
    (void)mm; (void)at;
}

// ---- incremental decoding ------------------------------------------------------------------

void cuset_kv_init(CusetKVCache *kv, const CusetConfig *c) {
    size_t n = (size_t)c->n_layer * c->max_seq_len * c->n_embd;
    kv->len = 0;
    kv->k = (float *)CUSET_CALLOC(n, sizeof(float));
    kv->v = (float *)CUSET_CALLOC(n, sizeof(float));
    kv->buf = (float *)CUSET_CALLOC(10 * (size_t)c->n_embd + c->max_seq_len + c->padded_vocab_size, sizeof(float));
}

void cuset_kv_free(CusetKVCache *kv) {
    free(kv->k); free(kv->v); free(kv->buf);
    memset(kv, 0, sizeof *kv);
}

// out (OC) = W (OC, IC) x + b, one dot product per output (decoding: one token at a time).
// Threads split the outputs only for a matrix of a million entries or more: below that the
// dot products take microseconds and a parallel region costs as much, or, when another
// program holds a core, a whole scheduler slice (gen with 2 threads on a busy machine).
static void cuset__matvec(float *out, const float *x, const float *w, const float *b, int IC, int OC) {
#pragma omp parallel for schedule(static) if ((size_t)OC * IC >= ((size_t)1 << 20))
    for (int o = 0; o < OC; o++) {
        const float *row = w + (size_t)o * IC;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int i = 0; i < IC; i++) s += row[i] * x[i];
        out[o] = s + (b ? b[o] : 0.0f);
    }
}

// The forward pass of cuset_gpt_forward for one position t = kv->len, reading the
// keys and values of positions 0..t-1 from the cache: the same LayerNorm, GELU, residual
// and embedding functions with one row, the matmuls as matrix-vector products
// (cuset__matvec) and attention written out for the one query.
const float *cuset_gpt_decode(const CusetGPT *m, CusetKVCache *kv, int token) {
    const CusetConfig *c = &m->cfg;
    int L = c->n_layer, C = c->n_embd, NH = c->n_head, hs = C / NH, T = c->max_seq_len, t = kv->len;
    if (t >= T) CUSET_DIE("KV cache full: the context holds %d tokens", T);
    if (token < 0 || token >= c->vocab_size) CUSET_DIE("token %d outside the vocabulary [0, %d)", token, c->vocab_size);
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

// ---- the loss: three phases, no probability tensor kept ----------------------------------

// Phase 1, one row of logits: the log-sum-exp over the V real columns and, for EAFT, the
// top-20 weight. Returns lse. Reference: maxv = max of z[v]; sum = sum of expf(z[v] - maxv)
// over v in order; lse = maxv + logf(sum). Here the max (cuset__max_lanes) and the sum run
// in 16 lanes (lane j takes the v = j mod 16), the lanes then added in order: a fixed
// order, which gcc vectorises, with exp as cuset__expf.
static float cuset__row_lse(const float *z, int V, const CusetObjective *o, float *eaft) {
    enum { W = 16 };
    float lsum[W] = {0}, maxv = cuset__max_lanes(z, V), sum = 0.0f;
    int vw = V / W * W; // whole groups of 16, then the rest
    for (int v0 = 0; v0 < vw; v0 += W)
        for (int j = 0; j < W; j++) lsum[j] += cuset__expf(z[v0 + j] - maxv);
    for (int v = vw; v < V; v++) lsum[v - vw] += cuset__expf(z[v] - maxv);
    for (int j = 0; j < W; j++) sum += lsum[j];
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
        conf[i] = cuset_confidence(z[b->targets[i]], lse[i]);
    }
    for (int n = 0; n < B; n++) // phase 2
        wn[n] = cuset_sample_weight(cuset_hardest_window(conf + n * T + b->tgt_start[n], b->tgt_len[n], obj->window));

#pragma omp parallel for schedule(static)
    for (int n = 0; n < B; n++) { // phase 3, a row per task so the sums keep one order
        row_loss[n] = row_ce[n] = row_conf[n] = row_pass[n] = 0.0;
        for (int t = 0; t < T; t++) {
            int i = n * T + t;
            float *z = logits + (size_t)i * Vp;
            if (!b->is_target[i]) { memset(z, 0, Vp * sizeof(float)); continue; }
            int tgt = b->targets[i];
            float c = conf[i], l = lse[i], nll = l - z[tgt];
            float a = cuset_token_coef(obj, c, b->is_cuda[i], wn[n], eaft[i]);
            const float *zr = asft ? ref_logits + (size_t)i * Vp : NULL;
            float lse_ref = asft ? cuset__row_lse(zr, V, obj, NULL) : 0.0f;
            double kl = 0.0;
            if (asft)
                for (int v = 0; v < V; v++) {
                    float lp = z[v] - l, lp_ref = zr[v] - lse_ref;
                    kl += cuset_kl_term(lp_ref, lp);
                    z[v] = cuset_logit_grad(obj, a, lp, lp_ref, v == tgt, inv_norm);
                }
            else // vectorised, exp as cuset__expf
                for (int v = 0; v < V; v++) z[v] = cuset_logit_grad_p(obj, a, cuset__expf(z[v] - l), 0.0f, v == tgt, inv_norm);
            for (int v = V; v < Vp; v++) z[v] = 0.0f;
            row_loss[n] += cuset_loss_term(obj, a, nll, kl, inv_norm);
            row_ce[n] += nll;
            row_conf[n] += c;
            row_pass[n] += cuset_conf_mask(c, obj->tau); // the pass statistic: eq. 2
        }
    }
    for (int n = 0; n < B; n++)
        cuset_stats_add_sample(stats, row_loss[n], row_ce[n], row_conf[n], row_pass[n], wn[n], b->tgt_len[n]);
}

void cuset_stats_add_sample(CusetStats *s, double loss, double ce, double conf, double pass, double wn, int ntok) {
    s->loss += loss; s->ce += ce; s->conf += conf; s->pass += pass;
    s->ntok += ntok;
    if (ntok > 0) { s->weight += wn; s->nsamples += 1; }
}

// ---- AdamW -------------------------------------------------------------------------------------

// sqrt(sum of squares) in double over chunks of a fixed size (summed in order), so the
// threads that split the chunks do not change the result. Within a chunk, 8 lanes (lane j
// takes the i = j mod 8) added in lane order at the end, which gcc vectorises.
float cuset_gpt_grad_norm(const CusetGPT *m) {
    enum { CHUNK = 1 << 15, W = 8 };
    size_t n = m->num_params, nchunks = (n + CHUNK - 1) / CHUNK;
    const float *g = m->grads_memory;
    double *part = (double *)CUSET_CALLOC(nchunks, sizeof(double)), s = 0.0;
#pragma omp parallel for schedule(static) if (n >= 4 * CHUNK)
    for (size_t c = 0; c < nchunks; c++) {
        size_t i = c * CHUNK, end = (c + 1) * CHUNK < n ? (c + 1) * CHUNK : n;
        double lane[W] = {0}, cs = 0.0;
        for (; i + W <= end; i += W)
            for (int j = 0; j < W; j++) lane[j] += (double)g[i + j] * g[i + j];
        for (int j = 0; i + j < end; j++) lane[j] += (double)g[i + j] * g[i + j];
        for (int j = 0; j < W; j++) cs += lane[j];
        part[c] = cs;
    }
    for (size_t c = 0; c < nchunks; c++) s += part[c];
    free(part);
    return (float)sqrt(s);
}

CusetAdamW cuset_adamw_at(const CusetOptim *o, int step, float grad_norm) {
    CusetAdamW a = {cuset_lr_at(o, step), 1.0f, o->beta1, o->beta2, 1.0f - powf(o->beta1, step + 1),
                    1.0f - powf(o->beta2, step + 1), o->eps};
    if (o->grad_clip > 0.0f && grad_norm > o->grad_clip) a.clip = o->grad_clip / grad_norm;
    return a;
}

// cuset_adamw_one on n parameters; the loop at the end is the reference. gcc does not
// vectorise sqrtf (errno), so with AVX-512 16 parameters at a time in intrinsics (the same
// operations in the same order; sqrt and division correctly rounded either way).
static void cuset__adamw(float *__restrict p, float *__restrict m, float *__restrict v, const float *__restrict g, size_t n,
                         CusetAdamW a, float wd) {
    size_t i = 0;
#ifdef __AVX512F__
    __m512 vclip = _mm512_set1_ps(a.clip), vb1 = _mm512_set1_ps(a.beta1), vb2 = _mm512_set1_ps(a.beta2);
    __m512 va1 = _mm512_set1_ps(1.0f - a.beta1), va2 = _mm512_set1_ps(1.0f - a.beta2), vbc1 = _mm512_set1_ps(a.bc1);
    __m512 vbc2 = _mm512_set1_ps(a.bc2), veps = _mm512_set1_ps(a.eps), vlr = _mm512_set1_ps(a.lr), vwd = _mm512_set1_ps(wd);
    for (; i + 16 <= n; i += 16) {
        __m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g + i), vclip), pi = _mm512_loadu_ps(p + i);
        __m512 mi = _mm512_fmadd_ps(vb1, _mm512_loadu_ps(m + i), _mm512_mul_ps(va1, gi));
        __m512 vi = _mm512_fmadd_ps(vb2, _mm512_loadu_ps(v + i), _mm512_mul_ps(_mm512_mul_ps(va2, gi), gi));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_div_ps(vi, vbc2)), veps);
        __m512 upd = _mm512_fmadd_ps(vwd, pi, _mm512_div_ps(_mm512_div_ps(mi, vbc1), den));
        _mm512_storeu_ps(p + i, _mm512_fnmadd_ps(vlr, upd, pi));
    }
#endif
    for (; i < n; i++) cuset_adamw_one(p + i, m + i, v + i, g[i], a, wd);
}

// Elementwise over all parameters in one parallel region, threads splitting chunks of
// each tensor.
void cuset_gpt_update(CusetGPT *m, const CusetOptim *o, int step, float grad_norm) {
    if (!m->m_memory) {
        m->m_memory = (float *)CUSET_CALLOC(m->num_params, sizeof(float));
        m->v_memory = (float *)CUSET_CALLOC(m->num_params, sizeof(float));
    }
    CusetAdamW a = cuset_adamw_at(o, step, grad_norm);
    enum { CHUNK = 1 << 14 };
#pragma omp parallel if (m->num_params >= 4 * CHUNK)
    {
        size_t off = 0;
        for (int t = 0; t < CUSET_NUM_TENSORS; t++) {
            float wd = cuset_tensor_decay[t] ? o->weight_decay : 0.0f;
            size_t n = m->tensor_sizes[t];
#pragma omp for schedule(static) nowait
            for (size_t c = 0; c < n; c += CHUNK) {
                size_t i = off + c;
                cuset__adamw(m->params_memory + i, m->m_memory + i, m->v_memory + i, m->grads_memory + i,
                             n - c < CHUNK ? n - c : CHUNK, a, wd);
            }
            off += n;
        }
    }
}

// ---- one training step, the evaluation loss ----------------------------------------------------

// Eq. 9's N: every target token of the batches, masked or not.
static long cuset__target_tokens(const CusetBatch *b, int n) {
    long ntok = 0;
    for (int i = 0; i < n; i++) ntok += cuset_batch_target_tokens(&b[i]);
    return ntok;
}

// The forward pass and the loss of one micro-batch on the CPU (ASFT: the reference first).
static void cuset__forward_loss(CusetGPT *m, CusetGPT *ref, const CusetBatch *b, const CusetObjective *obj,
                                float inv_norm, CusetStats *stats) {
    const float *ref_logits = NULL;
    if (ref) { cuset__gpt_forward(ref, b->inputs, b->B, b->T, b->is_target); ref_logits = ref->acts.logits; }
    cuset__gpt_forward(m, b->inputs, b->B, b->T, b->is_target);
    cuset_loss(m, b, obj, ref_logits, inv_norm, stats);
    CUSET__LAP("loss", 0);
}

// What a CPU step needs to stay within its buffers: ASFT's reference model, and batches
// that fit the model (cuset_batches_fit). 0, or -1.
static int cuset__step_inputs_ok(const CusetGPT *m, const CusetGPT *ref, const CusetBatch *batches, int accum,
                                 const CusetObjective *obj, char *err, size_t errlen) {
    if (obj->kind == CUSET_OBJ_ASFT && !ref)
        return cuset__err(err, errlen, "ASFT needs its reference model (ref: a frozen copy of the model it starts from)");
    return cuset_batches_fit(batches, accum, m->cfg.vocab_size, m->cfg.max_seq_len, err, errlen);
}

int cuset_gpt_step(CusetGPT *m, CusetGPT *ref, CusetCudaModel *gpu, const CusetBatch *batches, int accum,
                   const CusetObjective *obj, CusetStats *stats, float *grad_norm, char *err, size_t errlen) {
    long ntok = cuset__target_tokens(batches, accum);
    float inv_norm = ntok ? 1.0f / ntok : 0.0f;
    if (gpu) return cuset_cuda_forward_backward(gpu, batches, accum, obj, inv_norm, stats, grad_norm, err, errlen);
    if (cuset__step_inputs_ok(m, ref, batches, accum, obj, err, errlen)) return -1;
    cuset_gpt_zero_grad(m);
    CUSET__LAP("zero grad", 0);
    for (int i = 0; i < accum; i++) {
        cuset__forward_loss(m, ref, &batches[i], obj, inv_norm, stats);
        cuset_gpt_backward(m, batches[i].inputs);
    }
    *grad_norm = cuset_gpt_grad_norm(m);
    CUSET__LAP("grad norm", 0);
    return 0;
}

// Samples order[first ..] of the n held out as one batch: the last batch's rows past
// order[n - 1] are padding, so each sample counts once.
static int cuset__validation_batch(CusetBatch *b, const CusetDataset *d, const int *order, int n, int first,
                                   char *err, size_t errlen) {
    int count = n - first < b->B ? n - first : b->B;
    return cuset_batch_from_dataset(b, d, order + first, count, err, errlen) < 0 ? -1 : 0;
}

int cuset_gpt_validate(CusetGPT *m, CusetGPT *ref, CusetCudaModel *gpu, const CusetDataset *d, const int *order,
                       int n, CusetBatch *b, const CusetObjective *obj, CusetStats *stats, char *err, size_t errlen) {
    memset(stats, 0, sizeof *stats);
    long ntok = 0;
    for (int first = 0; first < n; first += b->B) { // N = all the samples' target tokens
        if (cuset__validation_batch(b, d, order, n, first, err, errlen)) return -1;
        ntok += cuset_batch_target_tokens(b);
    }
    float inv_norm = ntok ? 1.0f / ntok : 0.0f;
    for (int first = 0; first < n; first += b->B) {
        cuset__validation_batch(b, d, order, n, first, err, errlen); // checked above
        if (gpu) {
            if (cuset_cuda_eval(gpu, b, obj, inv_norm, stats, err, errlen)) return -1;
        } else {
            if (cuset__step_inputs_ok(m, ref, b, 1, obj, err, errlen)) return -1;
            cuset__forward_loss(m, ref, b, obj, inv_norm, stats);
        }
    }
    return 0;
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

void cuset_batch_clear_row(CusetBatch *b, int n) {
    int T = b->T;
    memset(b->inputs + n * T, 0, T * sizeof(int)); memset(b->targets + n * T, 0, T * sizeof(int));
    memset(b->is_target + n * T, 0, T); memset(b->is_cuda + n * T, 0, T);
    b->tgt_start[n] = b->tgt_len[n] = 0;
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
    cuset_batch_clear_row(b, n);
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

int cuset_batch_from_dataset(CusetBatch *b, const CusetDataset *d, const int *ids, int count, char *err,
                             size_t errlen) {
    if (count < 0 || count > b->B) return cuset__err(err, errlen, "%d samples for a batch of %d rows", count, b->B);
    for (int n = 0; n < count; n++) { // every sample checked before a row changes: a refused batch is left as it was
        if (ids[n] < 0 || ids[n] >= d->n)
            return cuset__err(err, errlen, "row %d: sample %d outside the data's [0, %d)", n, ids[n], d->n);
        const CusetSample *s = &d->samples[ids[n]];
        if (s->np < 1 || s->np > b->T)
            return cuset__err(err, errlen, "sample %d: prompt of %d tokens leaves no room for a target in a row of %d",
                              ids[n], s->np, b->T);
    }
    int truncated = 0;
    for (int n = 0; n < b->B; n++) {
        if (n >= count) { cuset_batch_clear_row(b, n); continue; }
        const CusetSample *s = &d->samples[ids[n]];
        truncated += cuset_batch_set_row(b, n, s->prompt, s->np, s->target, s->target_cuda, s->nt) > 0;
    }
    return truncated;
}

void cuset_dataset_synthetic(CusetDataset *d, int n, int vocab_size, int min_len, int max_len, uint64_t seed) {
    if (n < 1 || vocab_size < 4 || min_len < 1 || max_len < min_len)
        CUSET_DIE("cuset_dataset_synthetic: want n >= 1, vocab_size >= 4 (3 special ids and one more), 1 <= min_len <= "
                  "max_len; got %d, %d, %d, %d", n, vocab_size, min_len, max_len);
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

int cuset_logits_finite(const float *logits, int V) {
    for (int v = 0; v < V; v++)
        if (!isfinite(logits[v])) return 0;
    return 1;
}

int cuset_sample(const float *logits, int V, float temperature, int top_k, float top_p, uint64_t *rng, CusetProbId *w) {
    if (!cuset_logits_finite(logits, V)) return -1;
    int best = 0;
    for (int v = 0; v < V; v++)
        if (logits[v] > logits[best]) best = v;
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

// ---- the GPU backend's stand-ins --------------------------------------------------------------
// Weak definitions: a program linked with cuset.cu gets its functions instead; one without
// gets these, which say that there is no GPU backend.
#define CUSET__NO_GPU "this build has no GPU backend (built without nvcc)"
#define CUSET__WEAK __attribute__((weak))
CUSET__WEAK int cuset_cuda_available(char *why, size_t n) { snprintf(why, n, CUSET__NO_GPU); return -1; }
CUSET__WEAK CusetCudaModel *cuset_cuda_model_new(const CusetGPT *m, const CusetGPT *ref, int B, int T, char *err,
                                                 size_t errlen) {
    (void)m; (void)ref; (void)B; (void)T;
    cuset__err(err, errlen, CUSET__NO_GPU);
    return NULL;
}
CUSET__WEAK void cuset_cuda_model_free(CusetCudaModel *g) { (void)g; }
CUSET__WEAK int cuset_cuda_forward_backward(CusetCudaModel *g, const CusetBatch *batches, int accum,
                                            const CusetObjective *obj, float inv_norm, CusetStats *stats,
                                            float *grad_norm, char *err, size_t errlen) {
    (void)g; (void)batches; (void)accum; (void)obj; (void)inv_norm; (void)stats; (void)grad_norm;
    return cuset__err(err, errlen, CUSET__NO_GPU);
}
CUSET__WEAK void cuset_cuda_update(CusetCudaModel *g, const CusetOptim *o, int step, float grad_norm) {
    (void)g; (void)o; (void)step; (void)grad_norm;
}
CUSET__WEAK int cuset_cuda_eval(CusetCudaModel *g, const CusetBatch *b, const CusetObjective *obj, float inv_norm,
                                CusetStats *stats, char *err, size_t errlen) {
    (void)g; (void)b; (void)obj; (void)inv_norm; (void)stats;
    return cuset__err(err, errlen, CUSET__NO_GPU);
}
CUSET__WEAK void cuset_cuda_model_download(const CusetCudaModel *g, CusetGPT *m) { (void)g; (void)m; }
CUSET__WEAK CusetCudaDecoder *cuset_cuda_decoder_new(const CusetGPT *m, char *err, size_t errlen) {
    (void)m;
    cuset__err(err, errlen, CUSET__NO_GPU);
    return NULL;
}
CUSET__WEAK const float *cuset_cuda_decode(CusetCudaDecoder *d, int token) { (void)d; (void)token; return NULL; }
CUSET__WEAK void cuset_cuda_decoder_reset(CusetCudaDecoder *d) { (void)d; }
CUSET__WEAK void cuset_cuda_decoder_free(CusetCudaDecoder *d) { (void)d; }

// ---- checkpoints -------------------------------------------------------------------------------
// Layout (little-endian): a 256-byte header of int32 slots, then float32 parameters, then
// (if CUSET_CKPT_OPTIMIZER) the AdamW moments m and v, then (if CUSET_CKPT_REFERENCE)
// ASFT's frozen reference parameters, then (if CUSET_CKPT_TOKENIZER) the tokenizer as
// data/tokenizer.h's cuset_tok_save writes it (opaque bytes here).
//   slot 0-1 magic "CUSETCKP", 2 version, 3 header bytes, 4-9 config (V, Vp, maxT, L, NH, C),
//   10 contents flags, 11 step, 12-13 number of parameters (uint64), 14-15 data
//   fingerprint (uint64), 16-41 CusetTrainSettings, 62-63 tokenizer bytes (uint64).
// Versions: 3 since 2026-12-07, the settings' validation share in slot 41; 2 since the
// eq. 5 correction (2026-12-01), slot 41 reserved; 1 before it, the same layout. All are
// read (the version tells which window rule trained the model, and whether the share is known).
#define CUSET_CKPT_MAGIC "CUSETCKP"
#define CUSET_CKPT_VERSION 3
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

int cuset_check_writable(const char *path, char *err, size_t errlen) {
    if (!path[0]) return cuset__err(err, errlen, "an empty path");
    if (strlen(path) >= 4096) return cuset__err(err, errlen, "a path of %zu bytes: too long", strlen(path));
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) // the rename would replace a device node as well
        return cuset__err(err, errlen, "%s: cannot be written there (it is %s)", path,
                          S_ISDIR(st.st_mode) ? "a directory" : "not a regular file: a device, a pipe or a socket");
    char tmp[4352];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) // the save writes tmp beside path, then renames it: say which file failed
        return cuset__err(err, errlen, "%s: cannot be written there (the save writes %s first: %s)", path, tmp,
                          strerror(errno));
    fclose(f);
    remove(tmp);
    return 0;
}

// stat of the directory part of path ("." when it has none).
static int cuset__dir_stat(const char *path, struct stat *st) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    return stat(dir, st);
}

int cuset_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea || eb) return ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    const char *na = strrchr(a, '/'), *nb = strrchr(b, '/');
    na = na ? na + 1 : a;
    nb = nb ? nb + 1 : b;
    return strcmp(na, nb) == 0 && cuset__dir_stat(a, &sa) == 0 && cuset__dir_stat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// 1 when a value of x (m->num_params floats laid out as m's tensors: its parameters, a
// moment, ...) is not finite, with why naming the first: "TENSOR PART holds nan at element E".
static int cuset__find_nonfinite(const CusetGPT *m, const float *x, const char *part, char *why, size_t n) {
    for (size_t i = 0; i < m->num_params; i++)
        if (!isfinite(x[i])) {
            int t = 0;
            size_t at = i;
            while (at >= m->tensor_sizes[t]) at -= m->tensor_sizes[t++];
            snprintf(why, n, "%s%s holds %g at element %zu", cuset_tensor_names[t], part, x[i], at);
            return 1;
        }
    return 0;
}

int cuset_checkpoint_save(const char *path, const CusetGPT *m, const CusetGPT *ref, const void *tok, size_t tok_len,
                          const CusetCheckpointInfo *info, int with_optimizer, char *err, size_t errlen) {
    unsigned char h[CUSET_CKPT_HEADER] = {0};
    int32_t *slot = (int32_t *)h;
    int contents = (with_optimizer && m->m_memory ? CUSET_CKPT_OPTIMIZER : 0) | (ref ? CUSET_CKPT_REFERENCE : 0) |
                   (tok && tok_len ? CUSET_CKPT_TOKENIZER : 0);
    uint64_t np = m->num_params, tok_bytes = tok ? tok_len : 0;
    memcpy(h, CUSET_CKPT_MAGIC, 8);
    slot[2] = CUSET_CKPT_VERSION; slot[3] = CUSET_CKPT_HEADER;
    memcpy(&slot[4], &m->cfg, sizeof m->cfg);
    slot[10] = contents; slot[11] = info->step;
    memcpy(&slot[12], &np, 8);
    memcpy(&slot[14], &info->data_fingerprint, 8);
    memcpy(&slot[16], &info->settings, sizeof info->settings);
    memcpy(&slot[CUSET_CKPT_TOK_SLOT], &tok_bytes, 8);
    char tmp[4352]; // path.tmp.PID in full (cut short it could name path itself)
    if (strlen(path) >= 4096) return cuset__err(err, errlen, "a path of %zu bytes: too long", strlen(path));
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return cuset__err(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
    int ok = fwrite(h, 1, sizeof h, f) == sizeof h;
    ok = ok && fwrite(m->params_memory, sizeof(float), np, f) == np;
    if (contents & CUSET_CKPT_OPTIMIZER)
        ok = ok && fwrite(m->m_memory, sizeof(float), np, f) == np && fwrite(m->v_memory, sizeof(float), np, f) == np;
    if (contents & CUSET_CKPT_REFERENCE) ok = ok && fwrite(ref->params_memory, sizeof(float), np, f) == np;
    if (tok_bytes) ok = ok && fwrite(tok, 1, tok_bytes, f) == tok_bytes;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (fclose(f) == 0) && ok;
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
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) { // a directory "opens", and its size is nonsense
        fclose(f);
        return cuset__err(err, errlen, "%s: not a checkpoint file (a directory or a device)", path);
    }
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
    if (info->version < 3) info->settings.val_frac = -1; // not recorded (those bytes were reserved)
    memcpy(tok_bytes, &slot[CUSET_CKPT_TOK_SLOT], 8);
    info->has_optimizer = !!(*contents & CUSET_CKPT_OPTIMIZER);
    info->has_reference = !!(*contents & CUSET_CKPT_REFERENCE);
    info->has_tokenizer = !!(*contents & CUSET_CKPT_TOKENIZER);
    size_t sizes[CUSET_NUM_TENSORS], np = 0;
    uint64_t np_file;
    memcpy(&np_file, &slot[12], 8);
    char cfg_why[256];
    // the settings' bytes in this version's header (before version 3, val_frac's were reserved)
    size_t settings_bytes = info->version < 3 ? offsetof(CusetTrainSettings, val_frac) : sizeof info->settings;
    if (cuset_config_check(&info->cfg, cfg_why, sizeof cfg_why) != 0) {
        snprintf(why, sizeof why, "bad model config in header: %s", cfg_why);
    } else if (cuset__nonzero(h + 64 + settings_bytes, CUSET_CKPT_TOK_SLOT * 4 - 64 - settings_bytes) ||
               cuset__nonzero(h + CUSET_CKPT_TOK_SLOT * 4 + 8, CUSET_CKPT_HEADER - CUSET_CKPT_TOK_SLOT * 4 - 8)) {
        snprintf(why, sizeof why, "bad header: reserved bytes are not zero");
    } else if (*contents & ~(CUSET_CKPT_OPTIMIZER | CUSET_CKPT_REFERENCE | CUSET_CKPT_TOKENIZER) || info->step < 0 ||
               (*tok_bytes != 0) != info->has_tokenizer || *tok_bytes > (1u << 30) ||
               info->settings.obj.kind < 0 || info->settings.obj.kind >= CUSET_OBJ_COUNT) {
        snprintf(why, sizeof why, "bad header (contents flags %d, step %d, tokenizer bytes %llu, objective %d)", *contents,
                 info->step, (unsigned long long)*tok_bytes, info->settings.obj.kind);
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

int cuset_checkpoint_load(const char *path, CusetGPT *m, CusetGPT *ref, unsigned char **tok, size_t *tok_len,
                          int want_optimizer, CusetCheckpointInfo *info, char *err, size_t errlen) {
    FILE *f;
    int contents;
    uint64_t tok_bytes;
    if (cuset__ckpt_open(path, &f, info, &contents, &tok_bytes, err, errlen) != 0) return -1;
    cuset_gpt_init(m, &info->cfg);
    if (ref) memset(ref, 0, sizeof *ref);
    if (tok) { *tok = NULL; *tok_len = 0; }
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
    if (ok && tok && tok_bytes) {
        *tok = (unsigned char *)CUSET_CALLOC(tok_bytes, 1);
        *tok_len = tok_bytes;
        ok = fread(*tok, 1, tok_bytes, f) == tok_bytes;
    }
    fclose(f);
    if (!ok) snprintf(why, sizeof why, "read error");
    // padding rows of wte must be zero: a non-zero one means a damaged or foreign file
    const float *wte = m->params.wte;
    for (size_t i = (size_t)info->cfg.vocab_size * info->cfg.n_embd; i < m->tensor_sizes[0] && !why[0]; i++)
        if (wte[i] != 0.0f) snprintf(why, sizeof why, "padding rows of wte are not zero");
    // every number finite: NaN weights would run (and poison every later step) silently
    const float *parts[4] = {m->params_memory, m->m_memory, m->v_memory, ref ? ref->params_memory : NULL};
    static const char *const part_names[4] = {"", " (first optimizer moment)", " (second optimizer moment)",
                                              " (ASFT reference)"};
    for (int p = 0; p < 4 && !why[0]; p++)
        if (parts[p] && cuset__find_nonfinite(m, parts[p], part_names[p], why, sizeof why))
            strncat(why, ": a damaged file, or saved from a run that diverged", sizeof why - strlen(why) - 1);
    if (why[0]) {
        cuset_gpt_free(m);
        if (ref) cuset_gpt_free(ref);
        if (tok) { free(*tok); *tok = NULL; *tok_len = 0; }
        return cuset__err(err, errlen, "%s: %s", path, why);
    }
    return 0;
}

#endif // CUSET_IMPLEMENTATION_DONE
#endif // CUSET_IMPLEMENTATION
