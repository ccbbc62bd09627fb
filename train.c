// train: trains a small GPT with the CuSeT objective or one of its baselines.
// See `train --help`, README.md and ../shared/METHOD.md.
#define CUSET_IMPLEMENTATION
#include "cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "data/textdata.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_text =
    "usage: train [options]\n"
    "Trains a small GPT with CuSeT (CUDA-sensitive instruction tuning) or a baseline objective.\n"
    "\n"
    "data\n"
    "  --data SRC            training data: a .jsonl file of {\"prompt\": ..., \"completion\": ...}\n"
    "                        lines, a directory of .cu files (empty prompts), a .tok file that\n"
    "                        an earlier run cached (SRC.tok beside the source), or 'synthetic':\n"
    "                        a sequence-reversal task on token ids whose target tokens with\n"
    "                        id %% 4 == 0 count as CUDA-sensitive                [synthetic]\n"
    "  --synthetic-n N       samples in the synthetic set                       [4096]\n"
    "  --synthetic-len A:B   lengths of the synthetic sequences                 [8:48]\n"
    "  --val-frac F          share of samples held out for validation           [0.05]\n"
    "  --val-data SRC        validate on this text data instead (tokenized like --data);\n"
    "                        then no training sample is held out\n"
    "model (a new run; --init and --resume take the model from the checkpoint)\n"
    "  --layers L --heads H --embd C --ctx N     [4, 4, 128, 256]\n"
    "  --vocab V             vocabulary: of the tokenizer trained on text data (a new model\n"
    "                        on a new source), or of the synthetic task         [2048]\n"
    "  --init FILE           start from this checkpoint's parameters (fine-tuning), fresh optimizer\n"
    "training\n"
    "  --batch B             rows (samples) per micro-batch                     [8]\n"
    "  --seq T               tokens per row, at most the model's context        [256]\n"
    "  --accum A             micro-batches per optimizer step                   [1]\n"
    "  --steps N | --epochs E  length of the run (one of the two is required)\n"
    "  --lr X --min-lr X     peak and final learning rate                       [3e-4, 3e-5]\n"
    "  --warmup N            linear warmup steps, then cosine decay             [steps/20]\n"
    "  --wd X                AdamW weight decay on the weight matrices          [0.1]\n"
    "  --clip X              global gradient-norm clip, 0 = off                 [1.0]\n"
    "  --beta1 X --beta2 X   AdamW moments                                      [0.9, 0.95]\n"
    "objective (../shared/METHOD.md)\n"
    "  --objective NAME      sft | dft | profit | eaft | asft | cuset           [cuset]\n"
    "  --no-conf-mask --no-cuda-mask --no-reweight   CuSeT ablation switches (all on by default)\n"
    "  --tau X               confidence threshold (cuset, profit)               [0.1]\n"
    "  --lambda X            CUDA mask weight                                   [1.0]\n"
    "  --window L            window length in tokens for w_n                    [256]\n"
    "  --alpha X             EAFT exponent                                      [1.0]\n"
    "  --beta X              ASFT KL weight                                     [0.1]\n"
    "run\n"
    "  --seed N              initialisation and data order                      [1337]\n"
    "  --ckpt PATH           checkpoint file (written atomically)               [model.ckpt]\n"
    "  --ckpt-every N        also checkpoint every N steps (0: only at the end) [0]\n"
    "  --resume              continue exactly from --ckpt (model, optimizer, step and settings come\n"
    "                        from the checkpoint; give the same data flags)\n"
    "  --stop-at N           stop after step N, checkpointed, as if interrupted (for time-limited jobs)\n"
    "  --val-every N         validate every N steps (0: only at the end)        [0]\n"
    "  --log FILE            append per-step numbers as JSON lines              [PATH of --ckpt + .jsonl]\n"
    "  --device D            cpu | cuda | auto                                  [auto]\n"
    "  --threads N           OpenMP threads                                     [all cores]\n"
    "  --quiet               print every 10th step only\n"
    "  -h, --help            this text\n";

static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static void fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(train --help lists the options)\n");
    exit(2);
}

// Parses a number flag strictly: the whole string must be a number in [lo, hi].
static double num(const char *flag, const char *v, double lo, double hi) {
    char *end;
    double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || !(x >= lo && x <= hi)) {
        char range[96];
        snprintf(range, sizeof range, "%s expects a number in [%g, %g], got '%%s'", flag, lo, hi);
        fail(range, v, "");
    }
    return x;
}

typedef struct {
    const char *data, *val_data, *init, *ckpt, *log, *device;
    int synthetic_n, syn_min, syn_max, vocab, resume, threads, quiet, stop_at;
    double val_frac, epochs;
    CusetConfig cfg;
    CusetTrainSettings s;
} Args;

static void parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    a->data = "synthetic"; a->ckpt = "model.ckpt"; a->device = "auto";
    a->synthetic_n = 4096; a->syn_min = 8; a->syn_max = 48; a->vocab = 2048; a->val_frac = 0.05;
    a->cfg = (CusetConfig){0, 0, 256, 4, 4, 128};
    a->s = (CusetTrainSettings){8, 256, 1, 0, 1337, 0, 0, cuset_objective_default(CUSET_OBJ_CUSET), cuset_optim_default()};
    a->s.optim.warmup = -1;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) { fputs(usage_text, stdout); exit(0); }
        if (!strcmp(k, "--resume")) { a->resume = 1; continue; }
        if (!strcmp(k, "--quiet")) { a->quiet = 1; continue; }
        if (!strcmp(k, "--no-conf-mask")) { a->s.obj.conf_mask = 0; continue; }
        if (!strcmp(k, "--no-cuda-mask")) { a->s.obj.cuda_mask = 0; continue; }
        if (!strcmp(k, "--no-reweight")) { a->s.obj.reweight = 0; continue; }
        if (strncmp(k, "--", 2) != 0) fail("unexpected argument '%s'%s", k, "");
        if (i + 1 >= argc) fail("%s needs a value%s", k, "");
        const char *v = argv[++i];
        CusetObjective *o = &a->s.obj;
        CusetOptim *op = &a->s.optim;
        if (!strcmp(k, "--data")) a->data = v;
        else if (!strcmp(k, "--synthetic-n")) a->synthetic_n = (int)num(k, v, 2, 1e8);
        else if (!strcmp(k, "--synthetic-len")) {
            if (sscanf(v, "%d:%d", &a->syn_min, &a->syn_max) != 2 || a->syn_min < 1 || a->syn_max < a->syn_min)
                fail("--synthetic-len expects MIN:MAX with 1 <= MIN <= MAX, got '%s'%s", v, "");
        } else if (!strcmp(k, "--val-frac")) a->val_frac = num(k, v, 0, 0.5);
        else if (!strcmp(k, "--val-data")) a->val_data = v;
        else if (!strcmp(k, "--layers")) a->cfg.n_layer = (int)num(k, v, 1, 256);
        else if (!strcmp(k, "--heads")) a->cfg.n_head = (int)num(k, v, 1, 1024);
        else if (!strcmp(k, "--embd")) a->cfg.n_embd = (int)num(k, v, 1, 16384);
        else if (!strcmp(k, "--ctx")) a->cfg.max_seq_len = (int)num(k, v, 2, 65536);
        else if (!strcmp(k, "--vocab")) a->vocab = (int)num(k, v, 8, 1 << 24);
        else if (!strcmp(k, "--init")) a->init = v;
        else if (!strcmp(k, "--batch")) a->s.B = (int)num(k, v, 1, 1 << 16);
        else if (!strcmp(k, "--seq")) a->s.T = (int)num(k, v, 2, 65536);
        else if (!strcmp(k, "--accum")) a->s.accum = (int)num(k, v, 1, 1 << 16);
        else if (!strcmp(k, "--steps")) a->s.steps = (int)num(k, v, -1e9, 1e9);
        else if (!strcmp(k, "--epochs")) a->epochs = num(k, v, -1e9, 1e6);
        else if (!strcmp(k, "--lr")) op->max_lr = (float)num(k, v, 0, 10);
        else if (!strcmp(k, "--min-lr")) op->min_lr = (float)num(k, v, 0, 10);
        else if (!strcmp(k, "--warmup")) op->warmup = (int)num(k, v, 0, 1e9);
        else if (!strcmp(k, "--wd")) op->weight_decay = (float)num(k, v, 0, 10);
        else if (!strcmp(k, "--clip")) op->grad_clip = (float)num(k, v, 0, 1e9);
        else if (!strcmp(k, "--beta1")) op->beta1 = (float)num(k, v, 0, 0.999999);
        else if (!strcmp(k, "--beta2")) op->beta2 = (float)num(k, v, 0, 0.999999);
        else if (!strcmp(k, "--objective")) {
            int kind = -1;
            for (int j = 0; j < CUSET_OBJ_COUNT; j++) if (!strcmp(v, cuset_objective_names[j])) kind = j;
            if (kind < 0) fail("unknown objective '%s' (sft, dft, profit, eaft, asft or cuset)%s", v, "");
            o->kind = kind;
        } else if (!strcmp(k, "--tau")) o->tau = (float)num(k, v, 0, 1);
        else if (!strcmp(k, "--lambda")) o->lambda = (float)num(k, v, 0, 1e6);
        else if (!strcmp(k, "--window")) o->window = (int)num(k, v, 1, 1 << 20);
        else if (!strcmp(k, "--alpha")) o->alpha = (float)num(k, v, 0, 100);
        else if (!strcmp(k, "--beta")) o->beta = (float)num(k, v, 0, 1e6);
        else if (!strcmp(k, "--seed")) a->s.seed = (int)num(k, v, 0, 2147483647);
        else if (!strcmp(k, "--ckpt")) a->ckpt = v;
        else if (!strcmp(k, "--ckpt-every")) a->s.ckpt_every = (int)num(k, v, 0, 1e9);
        else if (!strcmp(k, "--val-every")) a->s.val_every = (int)num(k, v, 0, 1e9);
        else if (!strcmp(k, "--log")) a->log = v;
        else if (!strcmp(k, "--device")) a->device = v;
        else if (!strcmp(k, "--stop-at")) a->stop_at = (int)num(k, v, 1, 1e9);
        else if (!strcmp(k, "--threads")) a->threads = (int)num(k, v, 1, 1024);
        else fail("unknown option '%s'%s", k, "");
    }
    if (strcmp(a->device, "cpu") && strcmp(a->device, "cuda") && strcmp(a->device, "auto"))
        fail("--device expects cpu, cuda or auto, got '%s'%s", a->device, "");
}

// Mean objective value and cross-entropy over a held-out set (no gradients are kept).
// gpu: the model on the device (then m and ref are not used), or NULL.
static void validate(CusetGPT *m, CusetGPT *ref, CusetCudaModel *gpu, const CusetDataset *d, const int *order, int n,
                     CusetBatch *b, const CusetObjective *obj, CusetStats *st) {
    memset(st, 0, sizeof *st);
    char err[256];
    long ntok = 0;
    for (long first = 0; first < n; first += b->B) { // N of the objective = all validation target tokens
        cuset_batch_from_dataset(b, d, order, n, first, err, sizeof err);
        ntok += cuset_batch_target_tokens(b);
    }
    for (long first = 0; first < n; first += b->B) {
        cuset_batch_from_dataset(b, d, order, n, first, err, sizeof err);
#ifdef CUSET_CUDA
        if (gpu) {
            if (cuset_cuda_eval(gpu, b, obj, ntok ? 1.0f / ntok : 0.0f, st, err, sizeof err)) {
                fprintf(stderr, "train: validation: %s\n", err);
                exit(1);
            }
            continue;
        }
#else
        (void)gpu;
#endif
        const float *ref_logits = NULL;
        if (ref) { cuset_gpt_forward(ref, b->inputs, b->B, b->T); ref_logits = ref->acts.logits; }
        cuset_gpt_forward(m, b->inputs, b->B, b->T);
        cuset_loss(m, b, obj, ref_logits, ntok ? 1.0f / ntok : 0.0f, st);
    }
}

static void fmt_duration(char *buf, size_t n, double s) {
    if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

int main(int argc, char **argv) {
    Args a;
    parse_args(argc, argv, &a);
    char err[512];
#ifdef _OPENMP
    if (a.threads) omp_set_num_threads(a.threads);
#endif
    // --device: auto takes the GPU when the build has the backend and a device answers
#ifdef CUSET_CUDA
    char device_name[256] = "";
    int use_gpu = 0;
    if (strcmp(a.device, "cpu")) {
        use_gpu = cuset_cuda_available(device_name, sizeof device_name);
        if (!use_gpu && !strcmp(a.device, "cuda")) {
            fprintf(stderr, "train: --device cuda: no usable GPU: %s; use --device cpu\n", device_name);
            return 2;
        }
        if (!use_gpu) printf("note: no usable GPU (%s): training on the CPU\n", device_name);
    }
#else
    if (!strcmp(a.device, "cuda")) {
        fprintf(stderr, "train: --device cuda: this build has no GPU backend (built without nvcc); use --device cpu\n");
        return 2;
    }
#endif

    // --- a checkpoint to continue (--resume) or to fine-tune (--init), with its tokenizer ---
    CusetGPT model, ref_model, *ref = NULL;
    CusetTokenizer tk = {0};
    int start_step = 0, have_model = 0;
    CusetCheckpointInfo info = {0};
    cuset_tok_init(&tk);
    if (a.resume || a.init) {
        const char *path = a.resume ? a.ckpt : a.init;
        if (cuset_checkpoint_load_tok(path, &model, a.resume ? &ref_model : NULL, &tk, a.resume, &info, err, sizeof err)) {
            fprintf(stderr, "train: %s: %s\n", a.resume ? "--resume" : "--init", err);
            return 1;
        }
        have_model = 1;
        if (a.resume && !info.has_optimizer) {
            fprintf(stderr, "train: --resume: %s holds no optimizer state; use --init %s to fine-tune from it instead\n",
                    path, path);
            return 1;
        }
        if (a.resume) {
            a.s = info.settings; // a resumed run continues with the settings it started with
            start_step = info.step;
            if (info.has_reference) ref = &ref_model;
            printf("resuming %s at step %d of %d\n", path, start_step, a.s.steps);
        } else {
            printf("fine-tuning from %s (trained %d steps with %s)\n", path, info.step,
                   cuset_objective_names[info.settings.obj.kind % CUSET_OBJ_COUNT]);
        }
    }
    if (have_model && cuset_checkpoint_old_windows(&info))
        printf("note: %s was trained with CuSeT's window rule before the eq. 5 correction (checkpoint version 1: a "
               "target shorter than the window was one window); this run applies eq. 5 to every target length\n",
               a.resume ? a.ckpt : a.init);
    CusetTrainSettings *s = &a.s;

    // --- data; text data brings or trains the tokenizer, and the tokenizer sets the vocabulary ---
    CusetDataset data;
    int synthetic = !strcmp(a.data, "synthetic");
    if (synthetic) {
        if (have_model && info.has_tokenizer) {
            fprintf(stderr, "train: %s was trained on text; the synthetic task needs a model without a tokenizer\n",
                    a.resume ? a.ckpt : a.init);
            return 2;
        }
        int V = have_model ? model.cfg.vocab_size : a.vocab;
        if (V < 8) { fprintf(stderr, "train: the synthetic task needs a vocabulary of at least 8\n"); return 2; }
        cuset_dataset_synthetic(&data, a.synthetic_n, V, a.syn_min, a.syn_max, (uint64_t)s->seed);
    } else {
        if (have_model && !info.has_tokenizer) {
            fprintf(stderr, "train: %s has no tokenizer (it was trained on the synthetic task); "
                            "text data needs a model trained on text, or a new model\n", a.resume ? a.ckpt : a.init);
            return 2;
        }
        char note[512];
        CusetTokenizer fixed = tk; // a checkpoint's tokenizer: the only one its model understands
        tk = (CusetTokenizer){0};  // cuset_data_open fills tk anew
        cuset_tok_init(&tk);
        if (cuset_data_open(a.data, have_model ? &fixed : NULL, a.vocab, &data, &tk, note, sizeof note, err, sizeof err)) {
            fprintf(stderr, "train: --data: %s\n", err);
            return 1;
        }
        cuset_tok_free(&fixed);
        printf("%s\n", note);
    }
    CusetDataset val_data = {0}, *val = &data; // validation: held out of --data, or --val-data
    if (a.val_data) {
        char note[512];
        CusetTokenizer val_tk = {0};
        cuset_tok_init(&val_tk);
        if (synthetic || cuset_data_open(a.val_data, &tk, a.vocab, &val_data, &val_tk, note, sizeof note, err, sizeof err)) {
            fprintf(stderr, "train: --val-data: %s\n", synthetic ? "needs text --data" : err);
            return 1;
        }
        cuset_tok_free(&val_tk); // the same tokenizer as tk
        printf("validation %s\n", note);
        val = &val_data;
        a.val_frac = 0;
    }
    if (a.resume && info.data_fingerprint != data.fingerprint) {
        fprintf(stderr, "train: --resume: the data differs from the data the checkpoint was trained on "
                        "(fingerprint %016llx, checkpoint %016llx); pass the same --data flags\n",
                (unsigned long long)data.fingerprint, (unsigned long long)info.data_fingerprint);
        return 1;
    }

    // --- a new model, sized by the data's vocabulary ---
    if (!have_model) {
        a.cfg.vocab_size = synthetic ? a.vocab : cuset_tok_vocab_size(&tk);
        a.cfg.padded_vocab_size = cuset_pad_vocab(a.cfg.vocab_size);
        if (cuset_config_check(&a.cfg, err, sizeof err)) { fprintf(stderr, "train: model: %s\n", err); return 2; }
        cuset_gpt_init(&model, &a.cfg);
        cuset_gpt_init_random(&model, (uint64_t)s->seed, 0.02f);
    }
    const CusetConfig *cfg = &model.cfg;
    if (s->T > cfg->max_seq_len) {
        fprintf(stderr, "train: --seq %d is longer than the model's context of %d tokens; lower --seq or raise --ctx\n",
                s->T, cfg->max_seq_len);
        return 2;
    }
    if (s->obj.kind == CUSET_OBJ_ASFT && !ref) { // the frozen copy of the starting weights
        cuset_gpt_init(&ref_model, cfg);
        memcpy(ref_model.params_memory, model.params_memory, model.num_params * sizeof(float));
        ref = &ref_model;
    }
    // --- splits: samples whose prompt fills a row sit out; a fixed validation split drawn
    //     from the seed; each epoch a fresh shuffle of the training split ---
    int *train_ids, *val_order, ntrain, nval;
    int nusable = cuset_split(&data, s->T, a.val_frac, (uint64_t)s->seed, &train_ids, &ntrain, &val_order, &nval);
    int *val_ids = NULL, nval_unused;
    if (val != &data) cuset_split(val, s->T, 1.0, (uint64_t)s->seed, &val_ids, &nval_unused, &val_order, &nval);
    if (nusable < data.n)
        printf("note: %d of %d samples sit out: their prompt fills the row of %d tokens (raise --seq to keep them)\n",
               data.n - nusable, data.n, s->T);
    if (ntrain < 1) { fprintf(stderr, "train: no training samples left after the validation split\n"); return 2; }
    int *perm = (int *)CUSET_CALLOC(ntrain, sizeof(int)), *order = (int *)CUSET_CALLOC(ntrain, sizeof(int));
    long rows_per_step = (long)s->B * s->accum;
    if (!a.resume) {
        if (a.epochs != 0) s->steps = (int)ceil(a.epochs * ntrain / rows_per_step);
        if (s->steps < 1) {
            fprintf(stderr, "train: nothing to do: the run has %d steps; give --steps N or --epochs E with N, E > 0\n", s->steps);
            return 2;
        }
        if (s->optim.warmup < 0) s->optim.warmup = s->steps / 20;
        s->optim.total = s->steps;
    }

    // --- the log ---
    char log_path[4096];
    snprintf(log_path, sizeof log_path, "%s", a.log ? a.log : a.ckpt);
    if (!a.log) strncat(log_path, ".jsonl", sizeof log_path - strlen(log_path) - 1);
    FILE *log = fopen(log_path, a.resume ? "a" : "w");
    if (!log) { fprintf(stderr, "train: --log %s: cannot open for writing\n", log_path); return 1; }

    const CusetObjective *obj = &s->obj;
    printf("model: %d layers, %d heads, %d channels, context %d, vocabulary %d (padded %d): %.2fM parameters\n",
           cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->max_seq_len, cfg->vocab_size, cfg->padded_vocab_size,
           model.num_params / 1e6);
    printf("objective: %s", cuset_objective_names[obj->kind]);
    if (obj->kind == CUSET_OBJ_CUSET)
        printf(" (confidence mask %s, CUDA mask %s, reweighting %s) tau %g lambda %g window %d", obj->conf_mask ? "on" : "off",
               obj->cuda_mask ? "on" : "off", obj->reweight ? "on" : "off", obj->tau, obj->lambda, obj->window);
    if (obj->kind == CUSET_OBJ_PROFIT) printf(" tau %g", obj->tau);
    if (obj->kind == CUSET_OBJ_EAFT) printf(" alpha %g", obj->alpha);
    if (obj->kind == CUSET_OBJ_ASFT) printf(" beta %g", obj->beta);
    printf("\ndata: %s, %d train / %d validation samples; batch %d x %d tokens x %d accum; %d steps; lr %g -> %g, warmup %d\n",
           a.data, ntrain, nval, s->B, s->T, s->accum, s->steps, s->optim.max_lr, s->optim.min_lr, s->optim.warmup);
    CusetCudaModel *gpu = NULL; // the model, its optimizer state and the reference on the GPU
#ifdef CUSET_CUDA
    if (use_gpu) {
        gpu = cuset_cuda_model_new(&model, ref, s->B, s->T, err, sizeof err);
        if (!gpu) { fprintf(stderr, "train: --device %s: %s\n", a.device, err); return 1; }
        printf("device: cuda (%s); checkpoint %s; log %s\n", device_name, a.ckpt, log_path);
    } else
#endif
    printf("device: cpu, %d threads; checkpoint %s; log %s\n",
#ifdef _OPENMP
           omp_get_max_threads(),
#else
           1,
#endif
           a.ckpt, log_path);
    fflush(stdout);

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    CusetBatch batches[s->accum], val_batch;
    for (int i = 0; i < s->accum; i++) cuset_batch_alloc(&batches[i], s->B, s->T);
    cuset_batch_alloc(&val_batch, s->B, s->T);
    CusetCheckpointInfo out = {.cfg = *cfg, .data_fingerprint = data.fingerprint, .settings = *s};
    long truncated = 0;
    int shuffled_epoch = -1, step = start_step;
    double t_start = cuset_time(), tokens_done = 0, train_seconds = 0;

    for (; step < s->steps && !stop_requested; step++) {
        double t0 = cuset_time();
        int ntok = 0;
        for (int i = 0; i < s->accum; i++) { // the step's micro-batches first: N counts them all
            long row = ((long)step * s->accum + i) * s->B;
            int epoch = (int)(row / ntrain);
            if (epoch != shuffled_epoch) { // order = the training split in this epoch's order
                cuset_shuffle(perm, ntrain, (uint64_t)s->seed, epoch);
                for (int k = 0; k < ntrain; k++) order[k] = train_ids[perm[k]];
                shuffled_epoch = epoch;
            }
            int t = cuset_batch_from_dataset(&batches[i], &data, order, ntrain, row % ntrain, err, sizeof err);
            if (t < 0) { fprintf(stderr, "train: %s\n", err); return 1; }
            if (t > 0 && truncated == 0)
                printf("note: targets longer than the row of %d tokens are truncated (the log counts them)\n", s->T);
            truncated += t;
            ntok += cuset_batch_target_tokens(&batches[i]);
        }
        CusetStats st = {0};
        float norm;
#ifdef CUSET_CUDA
        if (gpu) { // the same step on the device: accum x (forward, loss, backward), the norm
            if (cuset_cuda_forward_backward(gpu, batches, s->accum, obj, &st, &norm, err, sizeof err)) {
                fprintf(stderr, "train: step %d: %s\n", step + 1, err);
                return 1;
            }
        } else
#endif
        {
            cuset_gpt_zero_grad(&model);
            for (int i = 0; i < s->accum; i++) {
                const float *ref_logits = NULL;
                if (ref) { cuset_gpt_forward(ref, batches[i].inputs, s->B, s->T); ref_logits = ref->acts.logits; }
                cuset_gpt_forward(&model, batches[i].inputs, s->B, s->T);
                cuset_loss(&model, &batches[i], obj, ref_logits, ntok ? 1.0f / ntok : 0.0f, &st);
                cuset_gpt_backward(&model, batches[i].inputs);
            }
            norm = cuset_gpt_grad_norm(&model);
        }
        if (!isfinite(norm) || !isfinite(st.loss)) {
            fprintf(stderr, "train: step %d: the loss or gradient is not finite (loss %g, grad norm %g); "
                            "lower --lr; the last checkpoint is untouched\n", step + 1, st.loss, norm);
            return 1;
        }
        float lr = cuset_lr_at(&s->optim, step);
#ifdef CUSET_CUDA
        if (gpu) cuset_cuda_update(gpu, &s->optim, step, norm);
        else
#endif
        cuset_gpt_update(&model, &s->optim, step, norm);
        double dt = cuset_time() - t0, tokens = (double)rows_per_step * s->T;
        tokens_done += tokens;
        train_seconds += dt;
        double elapsed = cuset_time() - t_start, eta = elapsed / (step + 1 - start_step) * (s->steps - step - 1);
        double ce = st.ntok ? st.ce / st.ntok : 0, conf = st.ntok ? st.conf / st.ntok : 0;
        double pass = st.ntok ? st.pass / st.ntok : 0, w = st.nsamples ? st.weight / st.nsamples : 0;
        char etas[32];
        fmt_duration(etas, sizeof etas, eta);
        if (!a.quiet || (step + 1) % 10 == 0 || step + 1 == s->steps)
            printf("step %5d/%d %5.1f%% | loss %.4f | ce %.4f | conf %.3f | pass %.3f | w %.3f | lr %.2e | norm %.3f | %.0f tok/s | eta %s\n",
                   step + 1, s->steps, 100.0 * (step + 1) / s->steps, st.loss, ce, conf, pass, w, lr, norm,
                   tokens / dt, etas);
        fprintf(log, "{\"step\": %d, \"loss\": %.6f, \"ce\": %.6f, \"conf\": %.6f, \"pass\": %.6f, \"w\": %.6f, "
                     "\"lr\": %.6e, \"grad_norm\": %.6f, \"tokens_per_s\": %.1f, \"truncated\": %ld, \"elapsed_s\": %.3f}\n",
                step + 1, st.loss, ce, conf, pass, w, lr, norm, tokens / dt, truncated, elapsed);
        fflush(stdout);
        fflush(log);
        int last = step + 1 == s->steps;
        if (nval > 0 && ((s->val_every && (step + 1) % s->val_every == 0) || last)) {
            CusetStats vs;
            validate(&model, ref, gpu, val, val_order, nval, &val_batch, obj, &vs);
            double vce = vs.ntok ? vs.ce / vs.ntok : 0;
            printf("val  %5d | loss %.4f | ce %.4f | conf %.3f\n", step + 1, vs.loss, vce, vs.ntok ? vs.conf / vs.ntok : 0);
            fprintf(log, "{\"step\": %d, \"val_loss\": %.6f, \"val_ce\": %.6f}\n", step + 1, vs.loss, vce);
            fflush(log);
        }
        if (a.stop_at == step + 1) stop_requested = 2;
        if ((s->ckpt_every && (step + 1) % s->ckpt_every == 0) || last || stop_requested) {
            out.step = step + 1;
#ifdef CUSET_CUDA
            if (gpu) cuset_cuda_model_download(gpu, &model); // parameters and moments, for the checkpoint
#endif
            if (cuset_checkpoint_save_tok(a.ckpt, &model, ref, synthetic ? NULL : &tk, &out, 1, err, sizeof err)) {
                fprintf(stderr, "train: %s\n", err);
                return 1;
            }
        }
    }
    double elapsed = cuset_time() - t_start;
    if (stop_requested) {
        printf("stopped after step %d; checkpoint %s holds it: continue with --resume --ckpt %s\n", step, a.ckpt, a.ckpt);
        return stop_requested == 2 ? 0 : 130;
    }
    printf("done: %d steps in %.1fs (%.0f training tok/s); checkpoint %s\n", step - start_step, elapsed,
           tokens_done / (train_seconds > 0 ? train_seconds : 1), a.ckpt);
    fclose(log);
    for (int i = 0; i < s->accum; i++) cuset_batch_free(&batches[i]);
    cuset_batch_free(&val_batch);
    cuset_dataset_free(&data);
    if (val != &data) { cuset_dataset_free(&val_data); free(val_ids); }
    cuset_tok_free(&tk);
    free(train_ids); free(perm); free(order);
#ifdef CUSET_CUDA
    cuset_cuda_model_free(gpu);
#endif
    cuset_gpt_free(&model);
    if (ref) cuset_gpt_free(ref);
    return 0;
}
