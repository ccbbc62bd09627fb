// train: trains a small GPT with the CuSeT objective or one of its baselines, on the CPU or
// on the GPU (cuset_gpt_step is the same call for both). See `train --help` and README.md
// (the method, the flags, the formats).
#define CUSET_IMPLEMENTATION
#include "cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "data/textdata.h"
#define CUSET_GPT2_IMPLEMENTATION
#include "data/gpt2.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *usage_text =
    "usage: train [options]\n"
    "Trains a small GPT with CuSeT (CUDA-sensitive instruction tuning) or a baseline objective.\n"
    "\n"
    "data\n"
    "  --data SRC            training data: a .jsonl file of {\"prompt\": ..., \"completion\": ...}\n"
    "                        lines, a directory of .cu files (empty prompts), a .tok file that\n"
    "                        an earlier run cached (SRC.tok beside the source), or 'synthetic':\n"
    "                        a sequence-reversal task on token ids whose target tokens with\n"
    "                        id % 4 == 0 count as CUDA-sensitive                [synthetic]\n"
    "  --synthetic-n N       samples in the synthetic set                       [4096]\n"
    "  --synthetic-len A:B   lengths of the synthetic sequences                 [8:48]\n"
    "  --val-frac F          share of samples held out for validation           [0.05]\n"
    "  --val-data SRC        validate on this text data instead (tokenized like --data);\n"
    "                        then no training sample is held out\n"
    "model (a new run; --init and --resume take the model from the checkpoint)\n"
    "  --layers L --heads H --embd C --ctx N     [4, 4, 128, 256]\n"
    "  --vocab V             vocabulary: of the tokenizer trained on text data (a new model\n"
    "                        on a new source), or of the synthetic task         [2048]\n"
    "  --init FILE           start from this checkpoint's parameters (fine-tuning), fresh optimizer;\n"
    "                        --batch, --seq and --accum not given are the checkpoint's. Also a\n"
    "                        GPT-2-family model: a Hugging Face directory (config.json,\n"
    "                        model.safetensors, tokenizer.json or vocab.json + merges.txt) or an\n"
    "                        llm.c .bin with gpt2_tokenizer.bin beside it (data/gpt2.h)\n"
    "training\n"
    "  --batch B             rows (samples) per micro-batch                     [8]\n"
    "  --seq T               tokens per row, at most the model's context        [min(256, context)]\n"
    "  --accum A             micro-batches per optimizer step                   [1]\n"
    "  --steps N | --epochs E  length of the run (one of the two is required)\n"
    "  --lr X --min-lr X     peak and final learning rate                       [3e-4, 3e-5]\n"
    "  --warmup N            linear warmup steps, then cosine decay             [steps/20]\n"
    "  --wd X                AdamW weight decay on the weight matrices          [0.1]\n"
    "  --clip X              global gradient-norm clip, 0 = off                 [1.0]\n"
    "  --beta1 X --beta2 X   AdamW moments                                      [0.9, 0.95]\n"
    "objective (README.md, \"The method\")\n"
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
    "                        (a save that fails goes to a rescue file in $TMPDIR or /tmp)\n"
    "  --ckpt-every N        also checkpoint every N steps (0: only at the end) [0]\n"
    "  --keep-every N        also keep the checkpoint of every Nth step as PATH.stepN (whole\n"
    "                        checkpoints: to analyse the model along training, or resume from)\n"
    "  --ckpt-minutes M      also checkpoint when the last one is M minutes old, so that a\n"
    "                        crash (a kill, a power cut) loses at most that (0: off) [10]\n"
    "  --resume              continue exactly from --ckpt (model, optimizer, step and settings come\n"
    "                        from the checkpoint; give the same data flags)\n"
    "  --stop-at N           stop after step N, checkpointed, as if interrupted (for time-limited jobs)\n"
    "  --val-every N         validate every N steps (0: only at the end)        [0]\n"
    "  --until-val-loss X    stop, checkpointed, at the first validation (--val-every) whose\n"
    "                        cross-entropy on the targets is X or lower (not the objective's value,\n"
    "                        which a masked objective can bring to 0): --steps becomes a limit\n"
    "                        (and sets the schedule)\n"
    "  --log FILE            per-step numbers as JSON lines (--resume appends)  [PATH of --ckpt + .jsonl]\n"
    "  --device D            cpu | cuda | auto                                  [auto]\n"
    "  --threads N           OpenMP threads                                     [all cores]\n"
    "  --quiet               print every 10th step only\n"
    "  -h, --help            this text\n";

// rc, or 1 when stdout did not take all that went to it (a full disk, a closed pipe): the
// messages are lost, which is no success, though not the run's work when it saved (`saved`
// says what holds it; NULL when nothing ran).
static int stdout_written(int rc, const char *saved) {
    int e = cuset_stdout_error();
    if (!e) return rc;
    fprintf(stderr, "train: writing to standard output failed: %s%s%s\n", strerror(e),
            saved ? "; the run's messages are lost, not its work: " : "", saved ? saved : "");
    return rc ? rc : 1;
}

// 1: Ctrl-C or SIGTERM; 2: --stop-at; 3: stdout's reader went away (a closed pipe: `| head`,
// a tee ended by the same Ctrl-C), so the run stops as if interrupted instead of dying unsaved.
static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) { stop_requested = sig == SIGPIPE ? 3 : 1; }

static void fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(train --help lists the options)\n");
    exit(2);
}

// A number flag's value (cuset_parse_number: in [lo, hi], whole for a count); a bad one
// ends the program with its message.
static double num(const char *flag, const char *v, double lo, double hi, int whole) {
    double x = 0;
    char err[300];
    if (cuset_parse_number(flag, v, lo, hi, whole, &x, err, sizeof err)) fail("%s%s", err, "");
    return x;
}

// The flags of a run's settings: where each lives in CusetTrainSettings, its kind (a
// number: int32 'i' or float 'f'; 's' a switch that turns the setting off; 'o' an
// objective's name) and its range. A resumed run's settings are checked against the same.
#define SETTING(flag, field, type, lo, hi) { flag, offsetof(CusetTrainSettings, field), type, lo, hi }
static const struct { const char *flag; size_t offset; char type; double lo, hi; } setting_flags[] = {
    SETTING("--batch", B, 'i', 1, 1 << 16), SETTING("--seq", T, 'i', 2, 65536),
    SETTING("--accum", accum, 'i', 1, 1 << 16), SETTING("--steps", steps, 'i', 0, 1e9),
    SETTING("--seed", seed, 'i', 0, 2147483647), SETTING("--val-every", val_every, 'i', 0, 1e9),
    SETTING("--ckpt-every", ckpt_every, 'i', 0, 1e9), SETTING("--objective", obj.kind, 'o', 0, CUSET_OBJ_COUNT - 1),
    SETTING("--no-conf-mask", obj.conf_mask, 's', 0, 1), SETTING("--no-cuda-mask", obj.cuda_mask, 's', 0, 1),
    SETTING("--no-reweight", obj.reweight, 's', 0, 1), SETTING("--tau", obj.tau, 'f', 0, 1),
    SETTING("--lambda", obj.lambda, 'f', 0, 1e6), SETTING("--window", obj.window, 'i', 1, 1 << 20),
    SETTING("--alpha", obj.alpha, 'f', 0, 100), SETTING("--beta", obj.beta, 'f', 0, 1e6),
    SETTING("--lr", optim.max_lr, 'f', 0, 10), SETTING("--min-lr", optim.min_lr, 'f', 0, 10),
    SETTING("--warmup", optim.warmup, 'i', 0, 1e9), SETTING("--wd", optim.weight_decay, 'f', 0, 10),
    SETTING("--clip", optim.grad_clip, 'f', 0, 1e9), SETTING("--beta1", optim.beta1, 'f', 0, 0.999999),
    SETTING("--beta2", optim.beta2, 'f', 0, 0.999999), SETTING("--val-frac", val_frac, 'f', 0, 0.5)};
#define NUM_SETTING_FLAGS (int)(sizeof setting_flags / sizeof *setting_flags)

static int setting_index(const char *flag) {
    for (int k = 0; k < NUM_SETTING_FLAGS; k++)
        if (!strcmp(setting_flags[k].flag, flag)) return k;
    return -1;
}
static double setting_get(const CusetTrainSettings *s, int k) {
    const char *field = (const char *)s + setting_flags[k].offset;
    return setting_flags[k].type == 'f' ? *(const float *)field : *(const int32_t *)field;
}
static void setting_set(CusetTrainSettings *s, int k, double v) {
    char *field = (char *)s + setting_flags[k].offset;
    if (setting_flags[k].type == 'f') *(float *)field = (float)v;
    else *(int32_t *)field = (int32_t)v;
}

// Why a checkpoint's settings cannot be resumed (each within its flag's range, its step
// not beyond the run's length: a finished run gets a note later, its rows within the
// model's context, the optimizer's own constants sane), or NULL.
static const char *resume_check(const CusetCheckpointInfo *in, char *why, size_t n) {
    const CusetTrainSettings *s = &in->settings;
    for (int k = 0; k < NUM_SETTING_FLAGS; k++) {
        double v = setting_get(s, k), lo = setting_flags[k].lo, hi = setting_flags[k].hi;
        if (!(v >= lo && v <= hi)) {
            snprintf(why, n, "%s %.10g is outside [%.10g, %.10g]", setting_flags[k].flag, v, lo, hi);
            return why;
        }
    }
    if (s->steps < 1 || in->step > s->steps) snprintf(why, n, "step %d of %d", in->step, s->steps);
    else if (s->T > in->cfg.max_seq_len)
        snprintf(why, n, "rows of %d tokens, beyond the model's context of %d", s->T, in->cfg.max_seq_len);
    else if (!(s->optim.eps > 0 && s->optim.eps < 1) || s->optim.total != s->steps)
        snprintf(why, n, "AdamW eps %g, schedule of %d steps", s->optim.eps, s->optim.total);
    else return NULL;
    return why;
}

typedef struct {
    const char *data, *val_data, *init, *ckpt, *log, *device;
    int synthetic_n, syn_min, syn_max, vocab, resume, threads, quiet, stop_at, keep_every;
    double ckpt_minutes, until_val_loss;
    const char *given[64];    // the flags given, each once
    int ngiven;
    const char *src[3];       // where batch, seq and accum come from: "flag", "checkpoint", "default",
                              // "the model's context" (seq: the default capped)
    double epochs;
    CusetConfig cfg;
    CusetTrainSettings s;
} Args;

static int flag_given(const Args *a, const char *flag) {
    for (int i = 0; i < a->ngiven; i++)
        if (!strcmp(a->given[i], flag)) return 1;
    return 0;
}

static void parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    a->data = "synthetic"; a->ckpt = "model.ckpt"; a->device = "auto";
    a->synthetic_n = 4096; a->syn_min = 8; a->syn_max = 48; a->vocab = 2048; a->ckpt_minutes = 10;
    a->cfg = (CusetConfig){0, 0, 256, 4, 4, 128};
    a->s = (CusetTrainSettings){8, 256, 1, 0, 1337, 0, 0, cuset_objective_default(CUSET_OBJ_CUSET), cuset_optim_default(),
                                0.05f};
    a->s.optim.warmup = -1;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) { fputs(usage_text, stdout); exit(stdout_written(0, NULL)); }
        if (!flag_given(a, k) && a->ngiven < (int)(sizeof a->given / sizeof *a->given)) a->given[a->ngiven++] = k;
        if (!strcmp(k, "--resume")) { a->resume = 1; continue; }
        if (!strcmp(k, "--quiet")) { a->quiet = 1; continue; }
        int setting = setting_index(k);
        if (setting >= 0 && setting_flags[setting].type == 's') { setting_set(&a->s, setting, 0); continue; }
        if (strncmp(k, "--", 2) != 0) fail("unexpected argument '%s'%s", k, "");
        const char *v = i + 1 < argc ? argv[++i] : NULL; // the value, needed once the flag is known (IS)
#define IS(flag) (!strcmp(k, flag) && (v || (fail("%s needs a value%s", k, ""), 0)))
        if (setting >= 0 && !v) fail("%s needs a value%s", k, "");
        if (setting >= 0 && setting_flags[setting].type == 'o') {
            int kind = -1;
            for (int j = 0; j < CUSET_OBJ_COUNT; j++) if (!strcmp(v, cuset_objective_names[j])) kind = j;
            if (kind < 0) fail("unknown objective '%s' (sft, dft, profit, eaft, asft or cuset)%s", v, "");
            a->s.obj.kind = kind;
        } else if (setting >= 0) {
            int whole = setting_flags[setting].type == 'i';
            setting_set(&a->s, setting, num(k, v, setting_flags[setting].lo, setting_flags[setting].hi, whole));
        } else if (IS("--data")) a->data = v;
        else if (IS("--synthetic-n")) a->synthetic_n = (int)num(k, v, 2, 1e8, 1);
        else if (IS("--synthetic-len")) {
            char *end;
            long lo = strtol(v, &end, 10), hi = *end == ':' ? strtol(end + 1, &end, 10) : 0;
            if (*end || lo < 1 || hi < lo || hi > 65536)
                fail("--synthetic-len expects MIN:MAX with 1 <= MIN <= MAX <= 65536, got '%s'%s", v, "");
            a->syn_min = (int)lo, a->syn_max = (int)hi;
        } else if (IS("--val-data")) a->val_data = v;
        else if (IS("--layers")) a->cfg.n_layer = (int)num(k, v, 1, 256, 1);
        else if (IS("--heads")) a->cfg.n_head = (int)num(k, v, 1, 1024, 1);
        else if (IS("--embd")) a->cfg.n_embd = (int)num(k, v, 1, 16384, 1);
        else if (IS("--ctx")) a->cfg.max_seq_len = (int)num(k, v, 2, 65536, 1);
        else if (IS("--vocab")) a->vocab = (int)num(k, v, 8, 1 << 24, 1);
        else if (IS("--init")) a->init = v;
        else if (IS("--epochs")) a->epochs = num(k, v, 0, 1e6, 0);
        else if (IS("--ckpt")) a->ckpt = v;
        else if (IS("--log")) a->log = v;
        else if (IS("--device")) a->device = v;
        else if (IS("--stop-at")) a->stop_at = (int)num(k, v, 1, 1e9, 1);
        else if (IS("--until-val-loss")) a->until_val_loss = num(k, v, 1e-9, 1e9, 0);
        else if (IS("--keep-every")) a->keep_every = (int)num(k, v, 1, 1e9, 1);
        else if (IS("--ckpt-minutes")) a->ckpt_minutes = num(k, v, 0, 1e6, 0);
        else if (IS("--threads")) a->threads = (int)num(k, v, 1, 1024, 1);
        else fail("unknown option '%s'%s", k, "");
#undef IS
    }
    if (flag_given(a, "--steps") && flag_given(a, "--epochs")) fail("give --steps N or --epochs E, not both%s%s", "", "");
    if (a->resume && a->init) fail("give --resume (continue this run) or --init FILE (fine-tune from it), not both%s%s", "", "");
    if (flag_given(a, "--val-frac") && a->val_data) fail("give --val-frac F or --val-data SRC, not both%s%s", "", "");
    if (a->val_data && !strcmp(a->data, "synthetic")) fail("--val-data goes with a text --data, not --data synthetic%s%s", "", "");
    const char *synthetic_flag = flag_given(a, "--synthetic-n") ? "--synthetic-n" : "--synthetic-len";
    if (flag_given(a, synthetic_flag) && strcmp(a->data, "synthetic"))
        fail("%s goes with --data synthetic, not --data %s", synthetic_flag, a->data);
    // one objective's weights and switches given with another do nothing: a note, not an error (a sweep
    // may give them to every row)
    static const struct { const char *flag; CusetObjectiveKind kind; } own[] = {
        {"--lambda", CUSET_OBJ_CUSET}, {"--no-conf-mask", CUSET_OBJ_CUSET}, {"--no-cuda-mask", CUSET_OBJ_CUSET},
        {"--no-reweight", CUSET_OBJ_CUSET}, {"--alpha", CUSET_OBJ_EAFT}, {"--beta", CUSET_OBJ_ASFT}};
    for (size_t i = 0; i < sizeof own / sizeof *own && !a->resume; i++)
        if (flag_given(a, own[i].flag) && a->s.obj.kind != (int)own[i].kind)
            printf("note: %s is %s's; --objective %s does not use it\n", own[i].flag,
                   cuset_objective_names[own[i].kind], cuset_objective_names[a->s.obj.kind]);
    CusetOptim *o = &a->s.optim; // the schedule falls from --lr to --min-lr, never rises
    if (!a->resume && o->max_lr == 0)
        fail("--lr: a learning rate of 0 trains nothing (%s); give one above 0%s", "below 1e-45 is 0 as a float", "");
    if (!a->resume && o->min_lr > o->max_lr) {
        char lo[32], hi[32];
        snprintf(lo, sizeof lo, "%g", o->min_lr), snprintf(hi, sizeof hi, "%g", o->max_lr);
        if (flag_given(a, "--min-lr")) fail("--min-lr %s is above --lr %s: the schedule falls from --lr to --min-lr", lo, hi);
        printf("note: --lr %s is below the default --min-lr %s: the rate stays at %s after the warmup\n", hi, lo, hi);
        o->min_lr = o->max_lr;
    }
    const char *shape_flags[3] = {"--batch", "--seq", "--accum"};
    for (int i = 0; i < 3; i++) a->src[i] = flag_given(a, shape_flags[i]) ? "flag" : "default";
    if (strcmp(a->device, "cpu") && strcmp(a->device, "cuda") && strcmp(a->device, "auto"))
        fail("--device expects cpu, cuda or auto, got '%s'%s", a->device, "");
    if (strcmp(a->data, "synthetic") && flag_given(a, "--vocab") && a->vocab < CUSET_TOK_FIRST_MERGE) {
        char v[16], lo[64];
        snprintf(v, sizeof v, "%d", a->vocab), snprintf(lo, sizeof lo, "%d", CUSET_TOK_FIRST_MERGE);
        fail("--vocab %s: a tokenizer for --data needs at least %s ids (the 256 bytes and 3 special tokens)", v, lo);
    }
}

static void fmt_duration(char *buf, size_t n, double s) {
    if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

// Everything one run holds. The open_* steps fill it in order; each returns 0, or the
// exit code after printing why.
typedef struct {
    Args a;
    CusetTrainSettings *s;             // a.s: the flags', or the resumed checkpoint's
    int use_gpu;
    char device_name[256];
    CusetGPT model, ref_model, *ref;   // ref: ASFT's frozen copy, or NULL
    CusetCudaModel *gpu;               // the model on the device, or NULL
    CusetTokenizer tk;
    CusetCheckpointInfo info;          // of --resume / --init
    int have_model, start_step, synthetic;
    int said_untrained;                // say_untrained's note was printed
    int saved_step;                    // the step --ckpt holds from this run or the resumed one (-1: none)
    CusetDataset data, val_data, *val; // val: &data (held out) or &val_data (--val-data)
    int *train_ids, *val_file_train, *val_order, ntrain, nval;
    int *perm, shuffled_epoch;         // the order of the training split in epoch shuffled_epoch
    int *batch_ids;                    // (B) the samples of one micro-batch
    FILE *log;
    char log_path[4096];
    char log_file[4096], ckpt_file[4096]; // the log and --ckpt with their symlinks followed: the files written
    int log_failed_at;                 // the first step whose log line could not be written (0: none)
    long truncated;                    // rows truncated so far (the log's "truncated"; a resumed run's from its log)
} Run;

// Pushes the log's lines out; the first failure (a full disk) is said once, and the run goes
// on: the checkpoint, not the log, is what a run must not lose.
static void log_flush(Run *r, int step) {
    if (fflush(r->log) == 0 && !ferror(r->log)) return;
    if (!r->log_failed_at) {
        fprintf(stderr, "train: warning: --log %s: writing failed at step %d (%s); training goes on, the log misses "
                        "lines from there\n", r->log_path, step, strerror(errno));
        r->log_failed_at = step;
    }
    clearerr(r->log);
}

// --device: auto takes the GPU when the build has the backend and a device answers.
static int open_device(Run *r) {
    const char *d = r->a.device;
    int avail = strcmp(d, "cpu") ? cuset_cuda_available(r->device_name, sizeof r->device_name) : 0;
    r->use_gpu = avail > 0;
    if (avail < 1 && !strcmp(d, "cuda")) {
        fprintf(stderr, "train: --device cuda: %s%s; use --device cpu\n", avail < 0 ? "" : "no usable GPU: ", r->device_name);
        return 2;
    }
    if (avail == 0 && strcmp(d, "cpu")) printf("note: no usable GPU (%s): training on the CPU\n", r->device_name);
    return 0;
}

// Batch, sequence length and accumulation of a run from a checkpoint: --resume keeps the
// checkpoint's (an exact continuation, checked by resume_check); --init takes the
// checkpoint's unless the flag was given, and the default where the file holds 0 (saved by
// a program that ran no training). Returns 0, or 1 after a message: a value outside its
// flag's range means a damaged file.
static int shape_from_checkpoint(Run *r, const char *path) {
    Args *a = &r->a;
    const CusetTrainSettings *c = &r->info.settings;
    static const char *const flag[3] = {"--batch", "--seq", "--accum"};
    int *v[3] = {&a->s.B, &a->s.T, &a->s.accum};
    const int ckpt[3] = {c->B, c->T, c->accum};
    for (int i = 0; i < 3; i++) {
        if (!a->resume && (!strcmp(a->src[i], "flag") || ckpt[i] == 0)) continue;
        int k = setting_index(flag[i]);
        if (ckpt[i] < setting_flags[k].lo || ckpt[i] > setting_flags[k].hi) {
            fprintf(stderr, "train: --init: %s holds %s %d, outside [%.10g, %.10g]: the file is damaged, or was not "
                            "written by train\n", path, flag[i], ckpt[i], setting_flags[k].lo, setting_flags[k].hi);
            return 1;
        }
        *v[i] = ckpt[i];
        a->src[i] = "checkpoint";
    }
    return 0;
}

// What the checkpoint decides instead of a flag given with it: --resume continues the run
// with its settings and model, --init fine-tunes the checkpoint's model. Each flag that
// says otherwise is ignored, with a note (a script may repeat a run's whole command line).
static void note_ignored_flags(const Run *r, const CusetTrainSettings *flags) {
    const Args *a = &r->a;
    const char *mode = a->resume ? "--resume" : "--init";
    const CusetConfig *m = &r->model.cfg;
    const struct { const char *flag; int flag_value, model_value; } model_flags[] = {
        {"--layers", a->cfg.n_layer, m->n_layer}, {"--heads", a->cfg.n_head, m->n_head},
        {"--embd", a->cfg.n_embd, m->n_embd}, {"--ctx", a->cfg.max_seq_len, m->max_seq_len},
        {"--vocab", a->vocab, m->vocab_size}};
    for (size_t k = 0; k < sizeof model_flags / sizeof *model_flags; k++) {
        int flag = model_flags[k].flag_value, model = model_flags[k].model_value;
        // --vocab caps a tokenizer trained on text, which may stop below it
        int same = !strcmp(model_flags[k].flag, "--vocab") && r->info.has_tokenizer ? flag >= model : flag == model;
        if (flag_given(a, model_flags[k].flag) && !same)
            printf("note: %s takes the model from the checkpoint: %s %d is ignored (the model has %d)\n", mode,
                   model_flags[k].flag, flag, model);
    }
    if (!a->resume) return;
    if (flag_given(a, "--epochs")) printf("note: --resume keeps the checkpoint's --steps %d; --epochs is ignored\n", a->s.steps);
    for (int k = 0; k < NUM_SETTING_FLAGS; k++) {
        double flag = setting_get(flags, k), ckpt = setting_get(&a->s, k);
        if (!flag_given(a, setting_flags[k].flag) || flag == ckpt) continue;
        const char *name = setting_flags[k].flag;
        if (!strncmp(name, "--no-", 5)) printf("note: --resume keeps the checkpoint's settings: %s is ignored\n", name);
        else if (!strcmp(name, "--objective"))
            printf("note: --resume keeps the checkpoint's --objective %s; --objective %s is ignored\n",
                   cuset_objective_names[(int)ckpt], cuset_objective_names[(int)flag]);
        else printf("note: --resume keeps the checkpoint's %s %g; %s %g is ignored%s\n", name, ckpt, name, flag,
                    !strcmp(name, "--steps") ? " (to train on, fine-tune from the checkpoint with --init)" : "");
    }
}

// A checkpoint to continue (--resume) or to fine-tune (--init), with its tokenizer.
static int open_checkpoint(Run *r) {
    Args *a = &r->a;
    char err[512];
    cuset_tok_init(&r->tk);
    if (!a->resume && !a->init) return 0;
    const char *path = a->resume ? a->ckpt : a->init;
    if (!a->resume && cuset_gpt2_recognize(path)) { // a Hugging Face directory or an llm.c checkpoint
        if (cuset_gpt2_import(path, NULL, &r->model, &r->tk, NULL, err, sizeof err)) {
            fprintf(stderr, "train: --init: %s\n", err);
            return 1;
        }
        const CusetConfig *c = &r->model.cfg;
        r->have_model = 1;
        r->info = (CusetCheckpointInfo){.cfg = *c, .version = CUSET_CKPT_VERSION, .has_tokenizer = 1};
        printf("fine-tuning from %s: %d layers, %d heads, %d channels, context %d, %d ids (%s pre-split, data/gpt2.h)\n",
               path, c->n_layer, c->n_head, c->n_embd, c->max_seq_len, c->vocab_size,
               r->tk.split == CUSET_TOK_SPLIT_GPT2 ? "GPT-2's" : "the project's");
        note_ignored_flags(r, &a->s);
        return 0;
    }
    if (cuset_checkpoint_load_tok(path, &r->model, a->resume ? &r->ref_model : NULL, &r->tk, a->resume, &r->info, err,
                                  sizeof err)) {
        fprintf(stderr, "train: %s: %s\n", a->resume ? "--resume" : "--init", err);
        return 1;
    }
    r->have_model = 1;
    if (a->resume && !r->info.has_optimizer) {
        fprintf(stderr, "train: --resume: %s holds no optimizer state; use --init %s to fine-tune from it instead\n", path,
                path);
        return 1;
    }
    CusetTrainSettings flags = a->s;
    if (a->resume) {
        char why[160];
        if (r->info.settings.val_frac < 0) { // unknown (before version 3): the flag's share, as before
            r->info.settings.val_frac = a->val_data ? 0 : flags.val_frac;
            printf("note: %s does not record the run's validation share (a checkpoint from before version 3): it "
                   "goes on with --val-frac %g, the same split only if the run started with it\n", path,
                   r->info.settings.val_frac);
        }
        if (resume_check(&r->info, why, sizeof why)) {
            fprintf(stderr, "train: --resume: %s holds settings that no run can continue from (%s): the file is "
                            "damaged, or was not written by train\n", path, why);
            return 1;
        }
        a->s = r->info.settings; // a resumed run continues with the settings it started with
        r->start_step = r->saved_step = r->info.step;
        if (r->info.has_reference) r->ref = &r->ref_model;
        printf("resuming %s at step %d of %d\n", path, r->start_step, a->s.steps);
        if (r->start_step >= a->s.steps)
            printf("note: the run is complete: nothing to train; to train it further, fine-tune from it (--init %s "
                   "--steps N)\n", path);
    } else {
        printf("fine-tuning from %s (trained %d steps with %s)\n", path, r->info.step,
               cuset_objective_names[r->info.settings.obj.kind]);
    }
    if (shape_from_checkpoint(r, path)) return 1;
    note_ignored_flags(r, &flags);
    if (cuset_checkpoint_old_windows(&r->info))
        printf("note: %s was trained with CuSeT's window rule before the eq. 5 correction (checkpoint version 1: a "
               "target shorter than the window was one window); this run applies eq. 5 to every target length\n", path);
    return 0;
}

// The data; text data brings or trains the tokenizer, and the tokenizer sets the vocabulary.
// --seq neither given nor taken from a checkpoint: 256, or the model's context when shorter
// (known once the checkpoint, if any, is open; the data's rows are cut to it).
static void default_seq(Run *r) {
    Args *a = &r->a;
    int ctx = r->have_model ? r->model.cfg.max_seq_len : a->cfg.max_seq_len;
    if (!strcmp(a->src[1], "default") && r->s->T > ctx) {
        r->s->T = ctx;
        a->src[1] = "the model's context";
    }
}

static int open_data(Run *r) {
    Args *a = &r->a;
    char err[512], note[512];
    const char *ckpt = a->resume ? a->ckpt : a->init;
    r->synthetic = !strcmp(a->data, "synthetic");
    if (r->synthetic) {
        if (r->have_model && r->info.has_tokenizer) {
            fprintf(stderr, "train: %s was trained on text; the synthetic task needs a model without a tokenizer%s\n",
                    ckpt, a->resume ? " (give the run's --data FILE)" : "");
            return 2;
        }
        int V = r->have_model ? r->model.cfg.vocab_size : a->vocab;
        if (V < 8) { fprintf(stderr, "train: the synthetic task needs a vocabulary of at least 8\n"); return 2; }
        cuset_dataset_synthetic(&r->data, a->synthetic_n, V, a->syn_min, a->syn_max, (uint64_t)r->s->seed);
    } else {
        if (r->have_model && !r->info.has_tokenizer) {
            fprintf(stderr, "train: %s has no tokenizer (it was trained on the synthetic task); "
                            "text data needs a model trained on text, or a new model\n", ckpt);
            return 2;
        }
        CusetTokenizer fixed = r->tk; // a checkpoint's tokenizer: the only one its model understands
        r->tk = (CusetTokenizer){0};  // cuset_data_open fills tk anew
        cuset_tok_init(&r->tk);
        if (cuset_data_open(a->data, r->have_model ? &fixed : NULL, a->vocab, &r->data, &r->tk, note, sizeof note, err,
                            sizeof err)) {
            fprintf(stderr, "train: --data: %s\n", err);
            return 1;
        }
        cuset_tok_free(&fixed);
        printf("%s\n", note);
    }
    r->val = &r->data; // validation: held out of --data, or --val-data
    if (a->val_data) {
        CusetTokenizer val_tk = {0};
        cuset_tok_init(&val_tk);
        if (cuset_data_open(a->val_data, &r->tk, a->vocab, &r->val_data, &val_tk, note, sizeof note, err, sizeof err)) {
            fprintf(stderr, "train: --val-data: %s\n", err);
            return 1;
        }
        cuset_tok_free(&val_tk); // the same tokenizer as tk
        printf("validation %s\n", note);
        r->val = &r->val_data;
        if (a->resume && a->s.val_frac > 0) {
            fprintf(stderr, "train: --resume: the run held out --val-frac %g of its data for validation; resume it "
                            "without --val-data (the training split would take those samples)\n", a->s.val_frac);
            return 2;
        }
        a->s.val_frac = 0;
    }
    if (a->resume && r->info.data_fingerprint != r->data.fingerprint) {
        fprintf(stderr, "train: --resume: the data differs from the data the checkpoint was trained on "
                        "(fingerprint %016llx, checkpoint %016llx): give the run's %s\n",
                (unsigned long long)r->data.fingerprint, (unsigned long long)r->info.data_fingerprint,
                r->synthetic ? "--synthetic-n and --synthetic-len" : "--data, its file as it was");
        return 1;
    }
    return 0;
}

// A new model, sized by the data's vocabulary; ASFT's frozen copy of the starting weights.
static int open_model(Run *r) {
    Args *a = &r->a;
    char err[512];
    if (!r->have_model) {
        a->cfg.vocab_size = r->synthetic ? a->vocab : cuset_tok_vocab_size(&r->tk);
        a->cfg.padded_vocab_size = cuset_pad_vocab(a->cfg.vocab_size);
        if (cuset_config_check(&a->cfg, err, sizeof err)) { fprintf(stderr, "train: model: %s\n", err); return 2; }
        cuset_gpt_init(&r->model, &a->cfg);
        cuset_gpt_init_random(&r->model, (uint64_t)r->s->seed, 0.02f);
    }
    const CusetConfig *cfg = &r->model.cfg;
    if (r->s->T > cfg->max_seq_len) {
        fprintf(stderr, "train: --seq %d is longer than the model's context of %d tokens; lower --seq or raise --ctx\n",
                r->s->T, cfg->max_seq_len);
        return 2;
    }
    if (r->s->obj.kind == CUSET_OBJ_ASFT && !r->ref) {
        cuset_gpt_init(&r->ref_model, cfg);
        memcpy(r->ref_model.params_memory, r->model.params_memory, r->model.num_params * sizeof(float));
        r->ref = &r->ref_model;
    }
    return 0;
}

static int cmp_int(const void *x, const void *y) { return *(const int *)x - *(const int *)y; }

// A warning when most training samples do not fit the row (their targets are truncated), with the
// --seq that fits 95% of the training samples. A sample needs np + nt - 1 positions.
static void check_row_length(Run *r) {
    int n = r->ntrain, T = r->s->T, over = 0, *need = (int *)CUSET_CALLOC(n, sizeof(int));
    for (int i = 0; i < n; i++) {
        const CusetSample *x = &r->data.samples[r->train_ids[i]];
        need[i] = x->np + x->nt - 1;
        over += need[i] > T;
    }
    if (2 * over > n) {
        qsort(need, n, sizeof(int), cmp_int);
        int p95 = need[(int)ceil(0.95 * n) - 1], ctx = r->model.cfg.max_seq_len;
        fprintf(stderr, "warning: %d of %d training samples (%.0f%%) do not fit in the row of %d tokens: their targets "
                        "are truncated; --seq %d fits 95%% of the samples", over, n, 100.0 * over / n, T, p95);
        if (p95 > ctx) fprintf(stderr, " (more than the model's context of %d: a new model needs --ctx %d)", ctx, p95);
        fprintf(stderr, "\n");
    }
    free(need);
}

// Splits: samples whose prompt fills a row sit out; a fixed validation split drawn from
// the seed; each epoch a fresh shuffle of the training split. Then the run's length.
static int open_splits(Run *r) {
    Args *a = &r->a;
    CusetTrainSettings *s = r->s;
    int nusable = cuset_split(&r->data, s->T, s->val_frac, (uint64_t)s->seed, &r->train_ids, &r->ntrain, &r->val_order,
                              &r->nval);
    int none; // --val-data validates whole: a share of 1.0 leaves its training part empty
    if (r->val != &r->data)
        cuset_split(r->val, s->T, 1.0, (uint64_t)s->seed, &r->val_file_train, &none, &r->val_order, &r->nval);
    if (nusable < r->data.n)
        printf("note: %d of %d samples sit out: their prompt fills the row of %d tokens (raise --seq to keep them)\n",
               r->data.n - nusable, r->data.n, s->T);
    if (r->val != &r->data && r->nval > 0 && r->nval < r->val->n)
        printf("note: %d of %d --val-data samples sit out: their prompt fills the row of %d tokens (raise --seq to "
               "keep them)\n", r->val->n - r->nval, r->val->n, s->T);
    if (nusable == 0) { // else a sample trains: --val-frac holds out at most half
        fprintf(stderr, "train: no sample fits: each prompt fills the row of %d tokens; raise --seq (and --ctx)\n", s->T);
        return 2;
    }
    if (r->nval == 0) { // say why there is no validation, unless --val-frac 0 asked for none
        if (r->val != &r->data)
            printf("note: no validation: every --val-data sample's prompt fills the row of %d tokens\n", s->T);
        else if (s->val_frac > 0)
            printf("note: no validation: --val-frac %g of %d samples holds out none (raise it, or give --val-data)\n",
                   s->val_frac, nusable);
        else if (s->val_every > 0)
            printf("note: --val-every %d does nothing: --val-frac 0 holds out no validation samples\n", s->val_every);
    }
    if (a->until_val_loss > 0 && (r->nval == 0 || s->val_every == 0)) {
        fprintf(stderr, "train: --until-val-loss %g needs a validation every few steps: %s\n", a->until_val_loss,
                r->nval == 0 ? "there are no validation samples (above)"
                : a->resume ? "the checkpoint's run has --val-every 0, which --resume keeps"
                            : "give --val-every N");
        return 2;
    }
    check_row_length(r);
    r->perm = (int *)CUSET_CALLOC(r->ntrain, sizeof(int));
    r->batch_ids = (int *)CUSET_CALLOC(s->B, sizeof(int));
    r->shuffled_epoch = -1;
    if (a->resume) return 0;
    if (a->epochs != 0) {
        double steps = ceil(a->epochs * r->ntrain / ((double)s->B * s->accum));
        if (steps > 1e9) {
            fprintf(stderr, "train: --epochs %g of %d samples in batches of %d is %.0f steps, more than 1e9; give fewer\n",
                    a->epochs, r->ntrain, s->B * s->accum, steps);
            return 2;
        }
        s->steps = (int)steps;
    }
    if (s->steps < 1) {
        fprintf(stderr, "train: nothing to do: the run has %d steps; give --steps N or --epochs E with N, E > 0\n", s->steps);
        return 2;
    }
    if (s->optim.warmup < 0) s->optim.warmup = s->steps / 20;
    s->optim.total = s->steps;
    if (s->optim.warmup >= s->steps)
        printf("note: --warmup %d is not shorter than the run's %d steps: the learning rate never reaches --lr %g\n",
               s->optim.warmup, s->steps, s->optim.max_lr);
    long per_step = (long)s->B * s->accum;
    if (per_step > r->ntrain) {
        printf("note: a step takes %ld samples (batch %d x accum %d) and the training split holds %d: a step sees "
               "each about %.0f times", per_step, s->B, s->accum, r->ntrain, (double)per_step / r->ntrain);
        if (a->epochs != 0) printf(", so --epochs %g is %.0f epochs", a->epochs, (double)s->steps * per_step / r->ntrain);
        printf("; lower --batch\n");
    }
    return 0;
}

// PATH with its symbolic links followed (also a link to a file not there yet), into out: the
// file that writing through PATH reaches. The writers here put a temporary file beside
// their file and rename it over it, which over a link would replace the link and leave its
// target as it was; they go to out instead. 0, or 1 after a message (a loop of links).
static int follow_links(const char *flag, const char *path, char *out, size_t n) {
    char cur[4096], link[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) break;
        ssize_t len = hops < 40 ? readlink(cur, link, sizeof link - 1) : -1;
        if (len < 0) {
            fprintf(stderr, "train: %s %s: cannot follow its link %s (%s)\n", flag, path, cur,
                    hops < 40 ? strerror(errno) : "a loop of links");
            return 1;
        }
        link[len] = 0;
        const char *slash = strrchr(cur, '/'); // a relative link is relative to its own directory
        char next[4096];
        int m = snprintf(next, sizeof next, "%.*s%s", link[0] == '/' || !slash ? 0 : (int)(slash - cur + 1), cur, link);
        if (m >= (int)sizeof next) {
            fprintf(stderr, "train: %s %s: its link %s leads to a path too long\n", flag, path, cur);
            return 1;
        }
        memcpy(cur, next, (size_t)m + 1);
    }
    if (strlen(cur) >= n) { fprintf(stderr, "train: %s %s: path too long\n", flag, path); return 1; }
    snprintf(out, n, "%s", cur);
    return 0;
}

// A run resumed at a checkpoint's step drops the log's lines of later steps, which the run
// that stopped had logged after it (after a crash, up to --ckpt-minutes of them), so that
// the log holds each step once; *truncated gets the count of the last line kept, so the
// log goes on as one run's. The log is rewritten as FILE (PATH with its links followed).
// A log that is not a regular file (a device such as /dev/null, a pipe) is appended to
// as it is: a rewrite would replace it with a regular file. 0, or 1 after saying why.
static int trim_log(const char *path, const char *file, int step, long *truncated) {
    size_t n;
    unsigned char *bytes;
    char err[512];
    struct stat st;
    if (stat(file, &st) != 0) return 0; // no log yet: nothing to trim
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        printf("note: --log %s is not a regular file (a device or a pipe): it is appended to, not trimmed of the "
               "steps after %d\n", path, step);
        return 0;
    }
    if (access(file, W_OK) != 0) { // the rename below would replace a log the run may not write
        fprintf(stderr, "train: --log %s: cannot open for writing (%s)\n", path, strerror(errno));
        return 1;
    }
    if (cuset_read_file(path, &bytes, &n, err, sizeof err)) {
        fprintf(stderr, "train: --log %s\n", err);
        return 1;
    }
    char *text = (char *)bytes;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", file, (int)getpid());
    FILE *f = fopen(tmp, "w");
    int ok = f != NULL, line_step;
    for (char *line = text, *end; ok && line < text + n; line = end + 1) {
        end = memchr(line, '\n', (size_t)(text + n - line));
        if (!end) break; // a line cut by the crash
        if (sscanf(line, "{\"step\": %d", &line_step) == 1 && line_step > step) continue;
        ok = fwrite(line, 1, (size_t)(end - line + 1), f) == (size_t)(end - line + 1);
        *end = 0; // the line as a string, for strstr
        const char *field = strstr(line, "\"truncated\": ");
        if (field) *truncated = strtol(field + 13, NULL, 10);
    }
    if (f) ok = (fclose(f) == 0) && ok;
    free(text);
    if (!ok || rename(tmp, file) != 0) {
        fprintf(stderr, "train: --log %s: cannot rewrite it: %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

// (is_keep_copy: whether NAME, a file name, is CKPT.stepN of such a step, with the copy's path)
static int keep_copy_name(const Run *r, const char *name, char *copy, size_t n) {
    const char *ckpt = r->a.ckpt, *slash = strrchr(ckpt, '/'), *base = slash ? slash + 1 : ckpt;
    size_t nb = strlen(base);
    if (strncmp(name, base, nb) || strncmp(name + nb, ".step", 5) || name[nb + 5] < '0' || name[nb + 5] > '9') return 0;
    char *end;
    long step = strtol(name + nb + 5, &end, 10);
    int k = r->a.keep_every;
    if (*end || step <= r->start_step || step > r->s->steps || step % k) return 0;
    snprintf(copy, n, "%s.step%ld", ckpt, step);
    return 1;
}

// 1 when FILE is, or where it is not there yet would be, one of the copies CKPT.stepN that
// --keep-every N writes in this run (the steps after its start, to its last, that are
// multiples of N), with that copy's name in copy: FILE by its own name, and the copies
// already in the checkpoint's directory (a link or a second name of FILE among them).
static int is_keep_copy(const Run *r, const char *file, char *copy, size_t n) {
    if (!r->a.keep_every) return 0;
    const char *name = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    if (keep_copy_name(r, name, copy, n) && cuset_same_file(file, copy)) return 1;
    char dir[4096]; // the checkpoint's directory with its '/', or "" for the working directory
    const char *slash = strrchr(r->a.ckpt, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - r->a.ckpt + 1) : 0, r->a.ckpt);
    DIR *d = opendir(dir[0] ? dir : ".");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = keep_copy_name(r, e->d_name, copy, n) && cuset_same_file(file, copy);
    if (d) closedir(d);
    return found;
}

// 1 when the output `flag path` would write over a file the run reads (its data, their
// token caches DATA.tok, the --init checkpoint) or its other output (say --ckpt tasks with
// --data tasks.jsonl: the log is tasks.jsonl), after a message. A NULL path: the copies
// that --keep-every writes (say --init q.ckpt.step4 with --ckpt q.ckpt --keep-every 2).
static int writes_over(const Run *r, const char *flag, const char *path, const char *other_flag, const char *other) {
    const Args *a = &r->a;
    const char *data = r->synthetic ? NULL : a->data;
    char cache[2][4200];
    snprintf(cache[0], sizeof cache[0], "%s.tok", data ? data : "");
    snprintf(cache[1], sizeof cache[1], "%s.tok", a->val_data ? a->val_data : "");
    const struct { const char *what, *path; } used[] = {
        {"--data", data}, {"--val-data", a->val_data}, {"--data's token cache", data ? cache[0] : NULL},
        {"--val-data's token cache", a->val_data ? cache[1] : NULL}, {"--init", a->init}, {other_flag, other}};
    char copy[4200];
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        if (used[i].path && (path ? cuset_same_file(path, used[i].path) : is_keep_copy(r, used[i].path, copy, sizeof copy))) {
            fprintf(stderr, "train: %s %s is also %s %s: the run would write over it; give another path\n", flag,
                    path ? path : copy, used[i].what, used[i].path);
            return 1;
        }
    return 0;
}

// One run at a time on a checkpoint: an exclusive flock on CKPT.lock (beside the file the
// saves reach), held while the process lives, so that a second run (a --resume beside the
// run still going) stops before it trims the log both write or saves over the other's
// steps. The lock ends with the process, a kill -9 too; the file stays, and holds the
// process id of the run that has it, for the message. 0, or 1 after a message.
static int lock_checkpoint(const Run *r) {
    char path[4200];
    snprintf(path, sizeof path, "%s.lock", r->ckpt_file);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "train: --ckpt %s: cannot open its lock file %s (%s)\n", r->a.ckpt, path, strerror(errno));
        return 1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) { // a file system without locks (ENOLCK): the run goes on unguarded
            printf("note: --ckpt %s: cannot lock %s (%s): a second run on this checkpoint would not be noticed\n",
                   r->a.ckpt, path, strerror(errno));
            return 0;
        }
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        fprintf(stderr, "train: --ckpt %s is in use by another run (process %s, which holds %s); wait for it to end, "
                        "or give another --ckpt\n", r->a.ckpt, pid[0] ? pid : "unknown", path);
        close(fd);
        return 1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {} // (only the message would miss it)
    return 0; // fd stays open: the lock is the process's until it ends
}

// The log, what the run is, and the model on the device.
static int open_log_and_device(Run *r) {
    Args *a = &r->a;
    CusetTrainSettings *s = r->s;
    char err[512];
    // The checkpoint is written at the end (and every --ckpt-every steps): a place where it
    // cannot be written stops the run now, not after the training it would hold.
    // A --ckpt that is a symlink is saved through it (ckpt_file); one that the run has no
    // permission to write stops it too, though the save's rename would replace it.
    if (follow_links("--ckpt", a->ckpt, r->ckpt_file, sizeof r->ckpt_file)) return 1;
    if (cuset_check_writable(r->ckpt_file, err, sizeof err)) {
        fprintf(stderr, "train: --ckpt %s; give a file in a writable directory\n", err);
        return 1;
    }
    if (access(r->ckpt_file, F_OK) == 0 && access(r->ckpt_file, W_OK) != 0) {
        fprintf(stderr, "train: --ckpt %s: no permission to write it (%s); give another path, or make it writable\n",
                a->ckpt, strerror(errno));
        return 1;
    }
    if (lock_checkpoint(r)) return 1;
    snprintf(r->log_path, sizeof r->log_path, "%s", a->log ? a->log : a->ckpt);
    if (!a->log) strncat(r->log_path, ".jsonl", sizeof r->log_path - strlen(r->log_path) - 1);
    const char *log_flag = a->log ? "--log" : "the log";
    if (writes_over(r, "--ckpt", a->ckpt, log_flag, r->log_path) || writes_over(r, log_flag, r->log_path, NULL, NULL) ||
        writes_over(r, "--keep-every's copy", NULL, log_flag, r->log_path))
        return 1;
    if (follow_links(log_flag, r->log_path, r->log_file, sizeof r->log_file)) return 1;
    if (a->resume && trim_log(r->log_path, r->log_file, r->start_step, &r->truncated)) return 1;
    r->log = fopen(r->log_path, a->resume ? "a" : "w");
    if (!r->log) { fprintf(stderr, "train: --log %s: cannot open for writing (%s)\n", r->log_path, strerror(errno)); return 1; }
    const CusetConfig *cfg = &r->model.cfg;
    const CusetObjective *obj = &s->obj;
    printf("model: %d layers, %d heads, %d channels, context %d, vocabulary %d (padded %d): %.2fM parameters\n",
           cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->max_seq_len, cfg->vocab_size, cfg->padded_vocab_size,
           r->model.num_params / 1e6);
    printf("objective: %s", cuset_objective_names[obj->kind]);
    if (obj->kind == CUSET_OBJ_CUSET)
        printf(" (confidence mask %s, CUDA mask %s, reweighting %s) tau %g lambda %g window %d", obj->conf_mask ? "on" : "off",
               obj->cuda_mask ? "on" : "off", obj->reweight ? "on" : "off", obj->tau, obj->lambda, obj->window);
    if (obj->kind == CUSET_OBJ_PROFIT) printf(" tau %g", obj->tau);
    if (obj->kind == CUSET_OBJ_EAFT) printf(" alpha %g", obj->alpha);
    if (obj->kind == CUSET_OBJ_ASFT) printf(" beta %g", obj->beta);
    printf("\ndata: %s, %d train / %d validation samples; batch %d x %d tokens x %d accum; %d steps; lr %g -> %g, warmup %d\n",
           a->data, r->ntrain, r->nval, s->B, s->T, s->accum, s->steps, s->optim.max_lr, s->optim.min_lr, s->optim.warmup);
    printf("settings: batch %d (%s), seq %d (%s), accum %d (%s)\n", s->B, a->src[0], s->T, a->src[1], s->accum, a->src[2]);
    // --device auto trains on the CPU what the GPU backend refuses (a head size its
    // attention kernels do not take, a model beyond the device's memory), and says why
    if (r->use_gpu && !(r->gpu = cuset_cuda_model_new(&r->model, r->ref, s->B, s->T, err, sizeof err))) {
        if (strcmp(a->device, "auto")) { fprintf(stderr, "train: --device %s: %s\n", a->device, err); return 1; }
        printf("note: the GPU (%s) cannot train this model: %s; training on the CPU\n", r->device_name, err);
    }
    if (r->gpu) printf("device: cuda (%s); checkpoint %s; log %s\n", r->device_name, a->ckpt, r->log_path);
    else {
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        printf("device: cpu, %d threads; checkpoint %s; log %s\n", threads, a->ckpt, r->log_path);
    }
    fflush(stdout);
    return 0;
}

// The step's micro-batches. The run reads the training split as one stream of rows: row g
// is sample g % ntrain of epoch g / ntrain's order, so every epoch has each sample once,
// also when a micro-batch spans two epochs. Returns 0, or 1 after a message; r->truncated
// counts the samples whose target was cut off at the row's end.
static int next_batches(Run *r, CusetBatch *batches, int step) {
    CusetTrainSettings *s = r->s;
    char err[512];
    for (int i = 0; i < s->accum; i++) {
        for (int k = 0; k < s->B; k++) {
            long row = ((long)step * s->accum + i) * s->B + k;
            int epoch = (int)(row / r->ntrain);
            if (epoch != r->shuffled_epoch) {
                cuset_shuffle(r->perm, r->ntrain, (uint64_t)s->seed, epoch);
                r->shuffled_epoch = epoch;
            }
            r->batch_ids[k] = r->train_ids[r->perm[row % r->ntrain]];
        }
        int t = cuset_batch_from_dataset(&batches[i], &r->data, r->batch_ids, s->B, err, sizeof err);
        if (t < 0) { fprintf(stderr, "train: %s\n", err); return 1; }
        if (t > 0 && r->truncated == 0)
            printf("note: targets that do not fit in the row of %d tokens after their prompt are truncated (the log's "
                   "\"truncated\" counts such rows)\n", s->T);
        r->truncated += t;
    }
    return 0;
}

// The progress line and the step's JSON line.
static void log_step(Run *r, int step, const CusetStats *st, float lr, float norm, double dt, double elapsed) {
    CusetTrainSettings *s = r->s;
    double tokens = (double)s->B * s->accum * s->T, eta = elapsed / (step + 1 - r->start_step) * (s->steps - step - 1);
    double ce = st->ntok ? st->ce / st->ntok : 0, conf = st->ntok ? st->conf / st->ntok : 0;
    double pass = st->ntok ? st->pass / st->ntok : 0, w = st->nsamples ? st->weight / st->nsamples : 0;
    char etas[32];
    fmt_duration(etas, sizeof etas, eta);
    if (!r->a.quiet || (step + 1) % 10 == 0 || step + 1 == s->steps)
        printf("step %5d/%d %5.1f%% | loss %.4f | ce %.4f | conf %.3f | pass %.3f | w %.3f | lr %.2e | norm %.3f | %.0f tok/s | eta %s\n",
               step + 1, s->steps, 100.0 * (step + 1) / s->steps, st->loss, ce, conf, pass, w, lr, norm, tokens / dt, etas);
    fprintf(r->log, "{\"step\": %d, \"loss\": %.6f, \"ce\": %.6f, \"conf\": %.6f, \"pass\": %.6f, \"w\": %.6f, "
                    "\"lr\": %.6e, \"grad_norm\": %.6f, \"tokens_per_s\": %.1f, \"truncated\": %ld, \"elapsed_s\": %.3f}\n",
            step + 1, st->loss, ce, conf, pass, w, lr, norm, tokens / dt, r->truncated, elapsed);
    fflush(stdout);
    log_flush(r, step + 1);
}

// The mean objective value and cross-entropy over the held-out samples, printed and logged
// at step (0-based); *ce: the cross-entropy per target token.
static int validate(Run *r, int step, CusetBatch *b, double *ce) {
    CusetStats vs;
    char err[512];
    if (cuset_gpt_validate(&r->model, r->ref, r->gpu, r->val, r->val_order, r->nval, b, &r->s->obj, &vs, err, sizeof err)) {
        fprintf(stderr, "train: validation: %s\n", err);
        return 1;
    }
    double vce = vs.ntok ? vs.ce / vs.ntok : 0;
    printf("val  %5d | loss %.4f | ce %.4f | conf %.3f\n", step + 1, vs.loss, vce, vs.ntok ? vs.conf / vs.ntok : 0);
    fprintf(r->log, "{\"step\": %d, \"val_loss\": %.6f, \"val_ce\": %.6f}\n", step + 1, vs.loss, vce);
    log_flush(r, step + 1);
    *ce = vce;
    return 0;
}

// The run at step STEP as a checkpoint at PATH (the model already downloaded from the GPU).
static int write_ckpt(Run *r, const char *path, int step, char *err, size_t errlen) {
    CusetCheckpointInfo out = {.cfg = r->model.cfg, .step = step, .data_fingerprint = r->data.fingerprint, .settings = *r->s};
    return cuset_checkpoint_save_tok(path, &r->model, r->ref, r->synthetic ? NULL : &r->tk, &out, 1, err, errlen);
}

// Appends " FLAG VALUE" to the command line cmd (of size cap), the value quoted for the shell
// where it holds anything but letters, digits and -_./:=+,@%.
static void cmd_add(char *cmd, size_t cap, const char *flag, const char *value) {
    size_t n = strlen(cmd);
    n += snprintf(cmd + n, cap - n, " %s ", flag);
    if (n >= cap) return;
    if (value[0] && value[strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./:=+,@%")] == 0) {
        snprintf(cmd + n, cap - n, "%s", value);
        return;
    }
    cmd[n++] = '\'';
    for (const char *c = value; *c && n + 5 < cap; c++) {
        if (*c == '\'') n += snprintf(cmd + n, cap - n, "'\\''"); // a quote: close, an escaped one, reopen
        else cmd[n++] = *c;
    }
    snprintf(cmd + n, cap - n, "'");
}

// The flags that continue this run: --resume --ckpt, the data flags (the checkpoint checks the
// data, it does not name it) and the options of this invocation the checkpoint does not keep
// (the checkpoint holds the settings; these say where the run reads and logs, or end or copy it).
static const char *resume_flags(const Run *r) {
    static char flags[16500];
    const Args *a = &r->a;
    char num[32];
    flags[0] = 0;
    cmd_add(flags, sizeof flags, "--resume --ckpt", a->ckpt);
    if (!r->synthetic) cmd_add(flags, sizeof flags, "--data", a->data);
    if (a->val_data) cmd_add(flags, sizeof flags, "--val-data", a->val_data);
    if (r->synthetic && flag_given(a, "--synthetic-n"))
        snprintf(num, sizeof num, "%d", a->synthetic_n), cmd_add(flags, sizeof flags, "--synthetic-n", num);
    if (r->synthetic && flag_given(a, "--synthetic-len"))
        snprintf(num, sizeof num, "%d:%d", a->syn_min, a->syn_max), cmd_add(flags, sizeof flags, "--synthetic-len", num);
    if (flag_given(a, "--log")) cmd_add(flags, sizeof flags, "--log", a->log);
    if (a->until_val_loss > 0)
        snprintf(num, sizeof num, "%g", a->until_val_loss), cmd_add(flags, sizeof flags, "--until-val-loss", num);
    if (a->keep_every) snprintf(num, sizeof num, "%d", a->keep_every), cmd_add(flags, sizeof flags, "--keep-every", num);
    return flags + 1; // past the first space
}

// Saves the run at step. When --ckpt cannot be written (a full disk, a directory removed
// meanwhile), the run goes to a rescue file in $TMPDIR (or /tmp) instead, so that its work is
// not lost, and stops: 1.
static int save(Run *r, int step) {
    char err[512], rescue[4096];
    if (r->gpu) cuset_cuda_model_download(r->gpu, &r->model); // parameters and moments, for the checkpoint
    if (!write_ckpt(r, r->ckpt_file, step, err, sizeof err)) {
        r->saved_step = step;
        return 0;
    }
    fprintf(stderr, "train: step %d: %s\n", step, err);
    const char *tmpdir = getenv("TMPDIR"), *name = strrchr(r->a.ckpt, '/');
    snprintf(rescue, sizeof rescue, "%s/%s.rescue.%d", tmpdir && *tmpdir ? tmpdir : "/tmp", name ? name + 1 : r->a.ckpt,
             (int)getpid());
    char last[64] = "it has no save of this run";
    if (r->saved_step >= 0) // (the file may have gone with its directory)
        snprintf(last, sizeof last, access(r->a.ckpt, F_OK) ? "its last save, of step %d, is gone" :
                 "its last save was step %d", r->saved_step);
    if (write_ckpt(r, rescue, step, err, sizeof err))
        fprintf(stderr, "train: the rescue copy failed too (%s): the steps after %s's last save are lost (%s)\n", err,
                r->a.ckpt, last);
    else {
        char resume[4200] = ""; // a finished run has nothing to continue
        if (step < r->s->steps) snprintf(resume, sizeof resume, " and continue with %s", resume_flags(r));
        fprintf(stderr, "train: step %d saved to %s instead (%s: %s); once it can be written, mv %s %s%s\n", step,
                rescue, r->a.ckpt, last, rescue, r->a.ckpt, resume);
    }
    return 1;
}

// --keep-every: the checkpoint just saved, again as PATH.stepN. A copy that cannot be
// written stops the run (the checkpoint itself holds it), rather than leave a gap unseen.
static int keep_copy(Run *r, int step) {
    char err[512], copy[4200], path[4096];
    snprintf(copy, sizeof copy, "%s.step%d", r->a.ckpt, step);
    if (follow_links("--keep-every", copy, path, sizeof path)) return 1; // a link is written through, as --ckpt
    if (!write_ckpt(r, path, step, err, sizeof err)) return 0;
    if (step < r->s->steps)
        fprintf(stderr, "train: step %d: --keep-every: %s; the run is saved in %s: continue with %s\n", step, err,
                r->a.ckpt, resume_flags(r));
    else fprintf(stderr, "train: step %d: --keep-every: %s; the finished run is in %s\n", step, err, r->a.ckpt);
    return 1;
}

// Removes the temporary files CKPT.*.tmp.PID beside ckpt whose process is gone; their count.
static int remove_stale_temporaries(const char *ckpt) {
    char dir[4096]; // the checkpoint's directory with its '/', or "" for the working directory
    const char *slash = strrchr(ckpt, '/'), *base = slash ? slash + 1 : ckpt;
    snprintf(dir, sizeof dir, "%.*s", (int)(base - ckpt), ckpt);
    size_t nb = strlen(base);
    int removed = 0;
    DIR *d = opendir(dir[0] ? dir : ".");
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *tmp = strncmp(e->d_name, base, nb) || e->d_name[nb] != '.' ? NULL : strstr(e->d_name + nb, ".tmp.");
        char *end;
        long pid = tmp ? strtol(tmp + 5, &end, 10) : 0;
        if (pid <= 0 || *end || pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[8200];
        snprintf(path, sizeof path, "%s%s", dir, e->d_name);
        removed += unlink(path) == 0;
    }
    if (d) closedir(d);
    return removed;
}

// Before training: what a run killed while saving (kill -9, a power cut) left. Its
// temporary files (CKPT.tmp.PID, CKPT.stepN.tmp.PID, of processes no longer running) are
// removed; a resumed run at a multiple of --keep-every whose copy is missing (the kill came
// between the checkpoint and its copy) writes it, the model being that step's. 0, or 1.
static int tidy_after_kill(Run *r) {
    // (a --ckpt that is a link saves beside its target, its copies beside the link)
    int removed = remove_stale_temporaries(r->a.ckpt);
    if (strcmp(r->ckpt_file, r->a.ckpt)) removed += remove_stale_temporaries(r->ckpt_file);
    if (removed)
        printf("note: removed %d temporary file%s (%s.*.tmp.PID) of a run killed while saving\n", removed,
               removed > 1 ? "s" : "", r->a.ckpt);
    int k = r->a.keep_every, step = r->start_step;
    if (!r->a.resume || !k || step == 0 || step % k) return 0;
    char copy[4200];
    snprintf(copy, sizeof copy, "%s.step%d", r->a.ckpt, step);
    if (access(copy, F_OK) == 0) return 0;
    printf("note: --keep-every: writing %s, which the run that stopped did not get to\n", copy);
    return keep_copy(r, step);
}

static void close_run(Run *r, CusetBatch *batches, CusetBatch *val_batch) {
    fclose(r->log);
    for (int i = 0; i < r->s->accum; i++) cuset_batch_free(&batches[i]);
    cuset_batch_free(val_batch);
    cuset_dataset_free(&r->data);
    if (r->val != &r->data) { cuset_dataset_free(&r->val_data); free(r->val_file_train); }
    cuset_tok_free(&r->tk);
    free(r->train_ids); free(r->perm); free(r->batch_ids);
    cuset_cuda_model_free(r->gpu);
    cuset_gpt_free(&r->model);
    if (r->ref) cuset_gpt_free(r->ref);
}

// A step whose gradient is exactly 0 trained nothing: say so once, and why when the
// objective's confidence mask is the cause (a model that does not yet predict its data
// has every confidence far below tau: about 1/V at random weights).
static void say_untrained(Run *r, int step) {
    const CusetObjective *o = &r->s->obj;
    r->said_untrained = 1;
    printf("note: step %d trained nothing (gradient 0)", step + 1);
    if (o->kind == CUSET_OBJ_PROFIT || (o->kind == CUSET_OBJ_CUSET && o->conf_mask))
        printf(": no target token's confidence reached --tau %g%s. %s fine-tunes a model that already predicts its "
               "data: train one with --objective sft first and start from its checkpoint (--init), or lower --tau",
               o->tau, o->kind == CUSET_OBJ_CUSET && o->cuda_mask ? " and none is CUDA-sensitive" : "",
               o->kind == CUSET_OBJ_PROFIT ? "ProFit" : "CuSeT");
    printf("\n");
}

// --stop-at N must be a step the run trains: after its start, at most its last.
static int check_stop_at(const Run *r) {
    int n = r->a.stop_at, first = r->start_step + 1, last = r->s->steps;
    if (!n || (n >= first && n <= last)) return 0;
    if (first > last) fprintf(stderr, "train: --stop-at %d: the run is complete (step %d of %d)\n", n, last, last);
    else fprintf(stderr, "train: --stop-at %d: the run trains steps %d..%d; give one of them\n", n, first, last);
    return 2;
}

int main(int argc, char **argv) {
    Run run = {.saved_step = -1}, *r = &run;
    parse_args(argc, argv, &r->a);
    r->s = &r->a.s;
#ifdef _OPENMP
    if (r->a.threads) omp_set_num_threads(r->a.threads);
#endif
    int rc;
    if ((rc = open_device(r)) || (rc = open_checkpoint(r))) return rc;
    default_seq(r);
    if ((rc = open_data(r)) || (rc = open_model(r)) || (rc = open_splits(r)) || (rc = check_stop_at(r)) ||
        (rc = open_log_and_device(r)))
        return rc;
    if (tidy_after_kill(r)) return 1;
    CusetTrainSettings *s = r->s;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, on_signal);
    CusetBatch batches[s->accum], val_batch;
    for (int i = 0; i < s->accum; i++) cuset_batch_alloc(&batches[i], s->B, s->T);
    cuset_batch_alloc(&val_batch, s->B, s->T);
    int step = r->start_step;
    double t_start = cuset_time(), tokens_done = 0, train_seconds = 0, last_save = t_start;
    char err[512];

    int reached = 0; // --until-val-loss: the run ends at this step
    for (; step < s->steps && !stop_requested && !reached; step++) {
        double t0 = cuset_time();
        if (next_batches(r, batches, step)) return 1;
        CusetStats st = {0};
        float norm;
        if (cuset_gpt_step(&r->model, r->ref, r->gpu, batches, s->accum, &s->obj, &st, &norm, err, sizeof err)) {
            fprintf(stderr, "train: step %d: %s\n", step + 1, err);
            return 1;
        }
        if (!isfinite(norm) || !isfinite(st.loss)) {
            fprintf(stderr, "train: step %d: the loss or gradient is not finite (loss %g, grad norm %g); "
                            "lower --lr; the last checkpoint is untouched\n", step + 1, st.loss, norm);
            return 1;
        }
        if (norm == 0 && !r->said_untrained) say_untrained(r, step);
        float lr = cuset_lr_at(&s->optim, step);
        if (r->gpu) cuset_cuda_update(r->gpu, &s->optim, step, norm);
        else cuset_gpt_update(&r->model, &s->optim, step, norm);
        double dt = cuset_time() - t0;
        tokens_done += (double)s->B * s->accum * s->T;
        train_seconds += dt;
        log_step(r, step, &st, lr, norm, dt, cuset_time() - t_start);
        int last = step + 1 == s->steps;
        double val_ce = INFINITY;
        if (r->nval > 0 && ((s->val_every && (step + 1) % s->val_every == 0) || last) &&
            validate(r, step, &val_batch, &val_ce))
            return 1;
        if (r->a.stop_at == step + 1) stop_requested = 2;
        if (r->a.until_val_loss > 0 && val_ce <= r->a.until_val_loss) {
            printf("validation cross-entropy %.4f <= %g (--until-val-loss) at step %d of %d\n", val_ce, r->a.until_val_loss,
                   step + 1, s->steps);
            last = reached = 1;
        }
        int stale = r->a.ckpt_minutes > 0 && cuset_time() - last_save >= 60 * r->a.ckpt_minutes;
        int keep = r->a.keep_every && (step + 1) % r->a.keep_every == 0;
        if ((s->ckpt_every && (step + 1) % s->ckpt_every == 0) || keep || stale || last || stop_requested) {
            if (save(r, step + 1) || (keep && keep_copy(r, step + 1))) return 1;
            last_save = cuset_time();
        }
    }
    // stopped short of its end (a run that reached it is done, whatever came during its last
    // step: a --stop-at at its last step, a late Ctrl-C)
    int stopped = stop_requested && step < s->steps && !reached;
    // a signal that came after the step's save check (or before the first step) ends the
    // loop without a save: the checkpoint must hold the step the message names
    if (stopped && r->saved_step != step && save(r, step)) return 1;
    double elapsed = cuset_time() - t_start;
    if (stopped)
        printf("stopped after step %d; checkpoint %s holds it: continue with %s\n", step, r->a.ckpt, resume_flags(r));
    else
        printf("done: %d steps in %.1fs (%.0f training tok/s); checkpoint %s\n", step - r->start_step, elapsed,
               tokens_done / (train_seconds > 0 ? train_seconds : 1), r->a.ckpt);
    if (r->log_failed_at) printf("note: the log %s misses lines from step %d (a write failed)\n", r->log_path, r->log_failed_at);
    char saved[17000]; // for stdout_written: what the lost lines said
    int n = snprintf(saved, sizeof saved, "checkpoint %s holds step %d of %d", r->a.ckpt, step, s->steps);
    if (stopped && n < (int)sizeof saved) snprintf(saved + n, sizeof saved - n, " (continue with %s)", resume_flags(r));
    close_run(r, batches, &val_batch);
    return stdout_written(stopped && stop_requested == 1 ? 130 : 0, saved); // (a closed pipe: 1, from stdout's error)
}
