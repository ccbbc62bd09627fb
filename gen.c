// gen: samples a completion from a trained checkpoint, streaming it as it is produced.
// A checkpoint trained on text carries its tokenizer: the prompt is text and so is the
// output. A checkpoint trained on the synthetic task has none: prompt and output are ids.
// The other modes are library calls: --eval hands the programs it samples to emu/eval.h,
// --analyze runs data/confidence.h, --export-hf data/gpt2.h.
#define CUSET_IMPLEMENTATION
#include "cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "data/textdata.h"
#define CUSET_EVAL_IMPLEMENTATION
#include "emu/eval.h"
#define CUSET_CONFIDENCE_IMPLEMENTATION
#include "data/confidence.h"
#define CUSET_GPT2_IMPLEMENTATION
#include "data/gpt2.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

// gen --help: this, then emu/eval.h's cuset_eval_usage (--eval) and data/confidence.h's
// cuset_conf_usage (--analyze).
static const char *usage_text =
    "usage: gen --model FILE [--prompt TEXT | --prompt-file FILE | --prompt-ids IDS] [options]\n"
    "Samples a completion from a checkpoint written by train and streams it to stdout.\n"
    "  --model FILE          checkpoint (required)\n"
    "  --prompt TEXT         the prompt (a model with a tokenizer); '-' reads it from stdin,\n"
    "                        as does giving no prompt with stdin not a terminal\n"
    "  --prompt-file FILE    the prompt, read from a file\n"
    "  --prompt-jsonl FILE   the prompt of a JSON-lines task file (\"prompt\" member), with\n"
    "  --index K             the K-th task (from 0)                        [0]\n"
    "  --show-prompt         print the prompt before the completion\n"
    "  --prompt-ids \"1 5 9\"  the prompt as token ids (any model; used as given, no special tokens)\n"
    "  --info                print the checkpoint's header and exit\n"
    "  --export-hf DIR       write the model and its tokenizer as a Hugging Face directory\n"
    "                        (GPT2LMHeadModel, AutoTokenizer; data/gpt2.h) and exit\n"
    "  --max-tokens N        most tokens to generate                      [512]\n"
    "  --temperature X       0 = greedy                                   [0.8]\n"
    "  --top-k N             keep the N most probable tokens, 0 = all     [0]\n"
    "  --top-p X             keep the smallest set with mass >= X         [1.0]\n"
    "  --stop ID             the token that ends the sample (not printed), -1 = never\n"
    "                                               [end of sample; 2 without a tokenizer]\n"
    "  --seed N              sampling seed                                [1]\n"
    "  --device D            where sampling runs: cpu | cuda | auto (a GPU when there is one) [auto]\n"
    "  --threads N           OpenMP threads                               [all cores]\n"
    "                        (of the model on the CPU: sampling, --analyze; --eval --jobs N\n"
    "                        samples in N processes of 1 thread each: give one or the other)\n"
    "  -h, --help            this text\n"
    "The completion goes to stdout; the speed (tokens/s, the prompt's prefill timed apart) to stderr.\n";

// rc, or 1 when stdout did not take all that went to it (a full disk, a closed pipe): a
// completion or report cut short is no success.
static int stdout_written(int rc) {
    int e = cuset_stdout_error();
    if (!e) return rc;
    fprintf(stderr, "gen: writing to standard output failed: %s\n", strerror(e));
    return rc ? rc : 1;
}

static void fail(const char *msg, const char *arg) {
    fprintf(stderr, "gen: %s%s\n(gen --help lists the options)\n", msg, arg);
    exit(2);
}

// A number flag's value (cuset_parse_number: in [lo, hi], whole for a count); a bad one
// ends the program with its message.
static double num(const char *flag, const char *v, double lo, double hi, int whole) {
    double x = 0;
    char err[300];
    if (cuset_parse_number(flag, v, lo, hi, whole, &x, err, sizeof err)) fail(err, "");
    return x;
}

typedef struct {
    int max_tokens, top_k;
    float temperature, top_p;
    int stop; // the token that ends a sample
} SampleOpts;

// --device: sampling runs its forward passes on the GPU (a decoder with the parameters and
// the KV cache on the device; logits come back for cuset_sample) or on the CPU.
static const char *device_flag = "auto";
static CusetCudaDecoder *gpu_decoder = NULL;

// Picks the device for model m per --device; exits with a message when --device cuda has none.
static void use_device(const CusetGPT *m) {
    if (!strcmp(device_flag, "cpu")) return;
    char why[256];
    int avail = cuset_cuda_available(why, sizeof why); // -1: a build without the GPU backend
    if (avail > 0 && (gpu_decoder = cuset_cuda_decoder_new(m, why, sizeof why))) return;
    if (!strcmp(device_flag, "cuda")) {
        fprintf(stderr, "gen: --device cuda: %s%s; use --device cpu\n", avail < 0 ? "" : "no usable GPU: ", why);
        exit(2);
    }
    if (avail >= 0) fprintf(stderr, "gen: note: no usable GPU (%s): sampling on the CPU\n", why);
}

// A checkpoint: the model, its tokenizer (empty when it was trained on token ids) and
// header; to sample, also the KV cache and cuset_sample's scratch (ready_to_sample).
typedef struct {
    CusetGPT m;
    CusetTokenizer tk;
    CusetCheckpointInfo info;
    CusetKVCache kv;
    CusetProbId *work; // NULL until ready_to_sample
    double prefill_s;  // how long sample_completion's last prefill of the prompt took
} Model;

// Loads the checkpoint at path into md; on failure says why and returns -1.
static int load_model(const char *path, Model *md) {
    char err[4600];
    memset(md, 0, sizeof *md);
    cuset_tok_init(&md->tk);
    if (cuset_checkpoint_load_tok(path, &md->m, NULL, &md->tk, 0, &md->info, err, sizeof err)) {
        fprintf(stderr, "gen: %s\n", err);
        struct stat st;
        char config[4200];
        snprintf(config, sizeof config, "%s/config.json", path);
        int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        if (is_dir ? access(config, R_OK) == 0 : cuset_gpt2_recognize(path)) // GPT-2's family: train imports it
            fprintf(stderr, "gen: %s is a GPT-2-family model (Hugging Face or llm.c), not a cuset checkpoint: fine-tune "
                            "it with ./train --init %s --data TASKS.jsonl --steps N --ckpt FILE, then gen --model FILE\n",
                    path, path);
        return -1;
    }
    return 0;
}

// The device (--device), the KV cache (on the CPU only: the GPU's decoder holds its own;
// kv.len counts positions either way) and the scratch of cuset_sample.
static void ready_to_sample(Model *md) {
    use_device(&md->m);
    md->kv = (CusetKVCache){0};
    if (!gpu_decoder) cuset_kv_init(&md->kv, &md->m.cfg);
    md->work = (CusetProbId *)CUSET_CALLOC(md->m.cfg.vocab_size, sizeof *md->work);
}

static void free_model(Model *md) {
    if (md->work) {
        cuset_kv_free(&md->kv);
        free(md->work);
        cuset_cuda_decoder_free(gpu_decoder);
        gpu_decoder = NULL;
    }
    cuset_gpt_free(&md->m);
    cuset_tok_free(&md->tk);
}

// Exits 2 when the model at path has no tokenizer; `so` says what that rules out.
static void need_tokenizer(const char *path, const Model *md, const char *so) {
    if (md->info.has_tokenizer) return;
    fprintf(stderr, "gen: %s has no tokenizer (it was trained on token ids): %s\n", path, so);
    exit(2);
}

// A prompt's text as the model reads it: [PROMPT] text [TARGET], appended to *tokens (stb_ds).
static void encode_prompt(const CusetTokenizer *tk, const char *text, size_t n, int **tokens) {
    arrput(*tokens, CUSET_TOK_PROMPT);
    cuset_tok_encode(tk, text, n, tokens);
    arrput(*tokens, CUSET_TOK_TARGET);
}

// One position of the forward pass, on the device --device picked; kv->len counts positions.
static const float *decode_step(Model *md, int token) {
    if (gpu_decoder) { md->kv.len++; return cuset_cuda_decode(gpu_decoder, token); }
    return cuset_gpt_decode(&md->m, &md->kv, token);
}

// Fills the KV cache with the prompt (emptied first), then samples up to max_tokens
// tokens (or until the stop token or the end of the context) with the rng seeded by
// seed. With a tokenizer (tk) each token's bytes go to stream (if not NULL) and to *text
// (an stb_ds char array, if not NULL); without one, the ids, space-separated. Returns the
// number of tokens sampled, the stop token included, or -1 when the logits are not finite.
static int sample_completion(Model *md, const CusetTokenizer *tk, const int *prompt, int n, const SampleOpts *o,
                             uint64_t seed, FILE *stream, char **text) {
    const CusetConfig *c = &md->m.cfg;
    uint64_t rng = seed;
    const float *logits = NULL;
    md->kv.len = 0;
    if (gpu_decoder) cuset_cuda_decoder_reset(gpu_decoder);
    double t0 = cuset_time();
    for (int i = 0; i < n; i++) logits = decode_step(md, prompt[i]);
    md->prefill_s = cuset_time() - t0;
    int produced = 0;
    while (produced < o->max_tokens) {
        int next = cuset_sample(logits, c->vocab_size, o->temperature, o->top_k, o->top_p, &rng, md->work);
        if (next < 0) return -1;
        produced++;
        if (next == o->stop) break;
        char idbuf[16];
        size_t len;
        const char *bytes = idbuf;
        if (tk) bytes = cuset_tok_bytes(tk, next, &len);
        else len = (size_t)snprintf(idbuf, sizeof idbuf, "%s%d", produced > 1 ? " " : "", next);
        if (stream) { fwrite(bytes, 1, len, stream); fflush(stream); }
        if (text && len) memcpy(arraddnptr(*text, len), bytes, len);
        if (md->kv.len == c->max_seq_len) break;
        logits = decode_step(md, next);
    }
    return produced;
}

// ---- gen --eval: the model writes the programs, emu/eval.h compiles, runs and checks them --
typedef struct {
    const char *path;
    SampleOpts so;
    Model md;
    int task;    // the task whose prompt is in prompt
    int *prompt; // stb_ds: its token ids
} EvalModel;

static int eval_open(void *ctx, int samples) {
    EvalModel *e = (EvalModel *)ctx;
    if (load_model(e->path, &e->md)) return 1;
    need_tokenizer(e->path, &e->md, "it cannot write programs");
    if (samples > 1 && e->so.temperature == 0)
        fprintf(stderr, "gen: note: --temperature 0 is greedy, so the %d samples of a task are all the same\n", samples);
    ready_to_sample(&e->md);
    e->so.stop = CUSET_TOK_EOS;
    if (e->so.max_tokens <= 0) e->so.max_tokens = e->md.m.cfg.max_seq_len; // to the end of the context
    e->task = -1;
    return 0;
}

// Task `task`'s prompt as token ids in e->prompt (encoded once for its samples); their number.
static int eval_encode(EvalModel *e, int task, const char *prompt, size_t len) {
    if (task != e->task) {
        arrsetlen(e->prompt, 0);
        encode_prompt(&e->md.tk, prompt, len, &e->prompt);
        e->task = task;
    }
    return (int)arrlen(e->prompt);
}

static int eval_fits(void *ctx, int task, const char *prompt, size_t len, char *why, size_t whylen) {
    EvalModel *e = (EvalModel *)ctx;
    int n = eval_encode(e, task, prompt, len), ctx_len = e->md.m.cfg.max_seq_len;
    if (n < ctx_len) return 1;
    snprintf(why, whylen, "task %d's prompt is %d tokens, but the model's context is %d", task, n, ctx_len);
    return 0;
}

static int eval_sample(void *ctx, int task, const char *prompt, size_t len, uint64_t seed, char **program, char *err,
                       size_t errlen) {
    EvalModel *e = (EvalModel *)ctx;
    int n = eval_encode(e, task, prompt, len); // fits the context: eval_fits said so
    if (sample_completion(&e->md, &e->md.tk, e->prompt, n, &e->so, seed, NULL, program) < 0) {
        snprintf(err, errlen, "task %d: " CUSET_NONFINITE_LOGITS, task);
        return -1;
    }
    return 0;
}

// Sampling in forked processes (gen --eval --jobs N): fine for a model on the CPU, one
// OpenMP thread each (N processes of the default thread count would oversubscribe the
// cores, and decoding one token is too little work to share anyway); not with a GPU.
static int eval_prepare_fork(void *ctx) {
    (void)ctx;
    if (gpu_decoder) return 0;
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    return 1;
}

// --eval with --model: the model writes the programs; without: --programs gives them.
static int run_eval(const CusetEvalOpts *ev, const char *model_path, SampleOpts so, uint64_t seed) {
    if (!model_path) return cuset_eval_main(ev, NULL);
    EvalModel e = {.path = model_path, .so = so};
    CusetEvalSampler s = {&e, eval_open, eval_fits, eval_sample, eval_prepare_fork, model_path, "", seed};
    snprintf(s.settings, sizeof s.settings, "temperature %g, top-k %d, top-p %g", so.temperature, so.top_k, so.top_p);
    int rc = cuset_eval_main(ev, &s);
    free_model(&e.md);
    arrfree(e.prompt);
    return rc;
}

// ---- the other modes: --analyze and --export-hf --------------------------------------------
// --analyze: data/confidence.h's analysis of the samples in data; 0, or 1 when it failed.
static int analyze(const char *model_path, const char *data, CusetConfOpts co) {
    Model md;
    if (load_model(model_path, &md)) return 1;
    need_tokenizer(model_path, &md, "--analyze needs a model trained on text");
    int trained = md.info.settings.obj.window;
    if (co.window <= 0) co.window = trained > 0 ? trained : 256; // eq. 7's l: the checkpoint's training setting
    if (co.tau < 0) co.tau = md.info.settings.obj.tau > 0 ? md.info.settings.obj.tau : 0.1f; // and eq. 2's tau
    char err[9000];
    int rc = cuset_conf_analyze_to_json(&md.m, &md.tk, model_path, data, &co, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "gen: %s\n", err);
    free_model(&md);
    return rc ? 1 : 0;
}

// --export-hf: data/gpt2.h writes the model and its tokenizer as a Hugging Face directory.
static int export_hf(const char *dir, const char *path, const Model *md) {
    char err[4600];
    need_tokenizer(path, md, "nothing to export it with");
    if (cuset_gpt2_export(dir, &md->m, &md->tk, err, sizeof err)) { fprintf(stderr, "gen: --export-hf: %s\n", err); return 1; }
    printf("%s: config.json, model.safetensors, tokenizer.json, tokenizer_config.json (%zu parameters, %d ids)\n", dir,
           md->m.num_params, md->m.cfg.vocab_size);
    return 0;
}

// ---- the command line ----------------------------------------------------------------------
typedef struct {
    const char *model_path, *export_dir, *prompt, *prompt_file, *prompt_ids, *prompt_jsonl, *analyze_path;
    int info_only, index, index_given, show_prompt, threads; // threads: 0 = OpenMP's default
    const char *eval_flag, *analyze_flag, *pick_flag; // an option given of --eval's, --analyze's, both's
    const char *sample_flag, *prompt_flag;            // of sampling's (a prompt and --eval), a prompt's alone
    SampleOpts so;    // max_tokens 0 and stop -2 until the mode sets them
    uint64_t seed;
    CusetEvalOpts ev; // --eval's options (emu/eval.h reads them)
    CusetConfOpts co; // --analyze's
} GenArgs;

// A prompt flag's value; the same flag twice is two prompts, refused as two flags are.
static const char *one_prompt(const char *had, const char *flag, const char *v) {
    if (had) fail(flag, " is given twice: give one prompt");
    return v;
}

static GenArgs parse_args(int argc, char **argv) {
    GenArgs a = {.so = {.temperature = 0.8f, .top_p = 1.0f, .stop = -2}, .seed = 1, .ev = cuset_eval_defaults(),
                 .co = {.probe = 64, .views = 3, .tau = -1}};
    char err[300];
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) {
            printf("%s%s%s", usage_text, cuset_eval_usage, cuset_conf_usage);
            exit(stdout_written(0));
        }
        if (!strcmp(k, "--info")) { a.info_only = 1; continue; }
        if (!strcmp(k, "--show-prompt")) { a.show_prompt = 1, a.prompt_flag = k; continue; }
        int took = cuset_eval_option(&a.ev, k, v, err, sizeof err);
        if (took < 0) fail(err, "");
        if (took) {
            if (!strcmp(k, "--first") || !strcmp(k, "--count")) a.pick_flag = k;
            else if (strcmp(k, "--eval")) a.eval_flag = k;
            i += took - 1;
            continue;
        }
        if (strncmp(k, "--", 2) != 0) fail("unexpected argument ", k);
        i += v != NULL; // the value, needed once the flag is known (IS)
#define IS(flag) (!strcmp(k, flag) && (v || (fail("missing value for ", k), 0)))
        if (IS("--model")) a.model_path = v;
        else if (IS("--export-hf")) a.export_dir = v;
        else if (IS("--prompt")) a.prompt = one_prompt(a.prompt, k, v);
        else if (IS("--prompt-file")) a.prompt_file = one_prompt(a.prompt_file, k, v);
        else if (IS("--prompt-ids")) a.prompt_ids = one_prompt(a.prompt_ids, k, v);
        else if (IS("--prompt-jsonl")) a.prompt_jsonl = one_prompt(a.prompt_jsonl, k, v);
        else if (IS("--index")) a.index = (int)num(k, v, 0, 1e9, 1), a.index_given = 1;
        else if (IS("--max-tokens")) a.so.max_tokens = (int)num(k, v, 1, 1 << 20, 1), a.sample_flag = k;
        else if (IS("--temperature")) a.so.temperature = (float)num(k, v, 0, 100, 0), a.sample_flag = k;
        else if (IS("--top-k")) a.so.top_k = (int)num(k, v, 0, 1 << 24, 1), a.sample_flag = k;
        else if (IS("--top-p")) a.so.top_p = (float)num(k, v, 1e-6, 1, 0), a.sample_flag = k;
        else if (IS("--seed")) a.seed = (uint64_t)num(k, v, 0, CUSET_EVAL_SEED_MAX, 1), a.sample_flag = k;
        else if (IS("--stop")) a.so.stop = (int)num(k, v, -1, 1 << 24, 1), a.prompt_flag = k;
        else if (IS("--device")) {
            if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto"))
                fail("--device expects cpu, cuda or auto, got ", v);
            device_flag = v;
        }
        else if (IS("--threads")) a.threads = (int)num(k, v, 1, 1024, 1);
        else if (IS("--analyze")) a.analyze_path = v;
        else if (IS("--window")) a.co.window = (int)num(k, v, 1, 1 << 24, 1), a.analyze_flag = k;
        else if (IS("--probe")) a.co.probe = (int)num(k, v, 1, 1 << 24, 1), a.analyze_flag = k;
        else if (IS("--tau")) a.co.tau = (float)num(k, v, 0, 1, 0), a.analyze_flag = k;
        else if (IS("--views")) a.co.views = (int)num(k, v, 0, 1 << 20, 1), a.analyze_flag = k;
        else if (IS("--json")) a.co.json_path = v, a.analyze_flag = k;
        else fail("unknown option ", k);
#undef IS
    }
    a.co.first = a.ev.first, a.co.count = a.ev.count; // --first and --count pick --analyze's samples too
    return a;
}

// ---- sampling from a prompt ------------------------------------------------------------------
// The text of --prompt, the --index-th task of --prompt-jsonl, --prompt-file or stdin
// (malloc'd, *n bytes). Exits with a message when there is none or it cannot be read.
static char *prompt_text(const GenArgs *a, size_t *n) {
    char err[4600], *text = NULL;
    if (a->prompt && strcmp(a->prompt, "-") != 0) {
        *n = strlen(a->prompt);
        return strdup(a->prompt);
    }
    if (a->prompt_jsonl) {
        CusetTextSample *tasks = NULL; // the prompts alone: a completion is not needed
        unsigned char *buf = NULL;
        size_t len = 0;
        if (cuset_read_file(a->prompt_jsonl, &buf, &len, err, sizeof err) ||
            cuset_jsonl_parse_keys((const char *)buf, len, a->prompt_jsonl, "prompt", NULL, &tasks, err, sizeof err)) {
            fprintf(stderr, "gen: %s\n", err);
            exit(1);
        }
        free(buf);
        if (a->index >= (int)arrlen(tasks)) {
            fprintf(stderr, "gen: %s holds %d tasks; --index %d is past the end\n", a->prompt_jsonl, (int)arrlen(tasks),
                    a->index);
            exit(2);
        }
        *n = tasks[a->index].prompt_len;
        text = (char *)CUSET_CALLOC(*n + 1, 1);
        memcpy(text, tasks[a->index].prompt, *n + 1);
        cuset_text_samples_free(tasks);
        return text;
    }
    if (!a->prompt_file && !a->prompt && isatty(0))
        fail("give a prompt: --prompt TEXT, --prompt-file FILE or on stdin", "");
    if (cuset_read_file(a->prompt_file ? a->prompt_file : "/dev/stdin", (unsigned char **)&text, n, err, sizeof err)) {
        fprintf(stderr, "gen: the prompt: %s\n", err);
        exit(1);
    }
    return text;
}

// The prompt as token ids (stb_ds): --prompt-ids as given, or the text between [PROMPT]
// and [TARGET]. Exits with a message for an id outside the vocabulary.
static int *prompt_tokens(const GenArgs *a, const Model *md) {
    int *tokens = NULL, vocab = md->m.cfg.vocab_size;
    if (a->prompt_ids) {
        for (const char *p = a->prompt_ids; *p;) {
            while (*p == ' ' || *p == ',') p++;
            if (!*p) break;
            char *end;
            long id = strtol(p, &end, 10);
            if (end == p || (*end && *end != ' ' && *end != ',') || id < 0 || id >= vocab) {
                int len = (int)strcspn(p, " ,"); // the offending item, cut at 40 characters
                fprintf(stderr, "gen: --prompt-ids: '%.*s%s' is not a token id in [0, %d)\n", len < 40 ? len : 40, p,
                        len > 40 ? "..." : "", vocab);
                exit(2);
            }
            arrput(tokens, (int)id);
            p = end;
        }
        return tokens;
    }
    need_tokenizer(a->model_path, md, "use --prompt-ids");
    size_t n = 0;
    char *text = prompt_text(a, &n);
    if (a->show_prompt) printf("%.*s\n\n", (int)n, text);
    encode_prompt(&md->tk, text, n, &tokens);
    free(text);
    return tokens;
}

// Prefills the KV cache with the prompt, then samples and streams the completion; the
// generation's speed and the prefill's time go to stderr.
static int generate(const GenArgs *a, Model *md) {
    const CusetConfig *c = &md->m.cfg;
    int *tokens = prompt_tokens(a, md);
    int n = (int)arrlen(tokens);
    if (n == 0) fail("the prompt holds no token", "");
    if (n >= c->max_seq_len) {
        fprintf(stderr, "gen: the prompt is %d tokens, but the model's context is %d: nothing left to generate; "
                        "shorten the prompt\n", n, c->max_seq_len);
        return 2;
    }
    SampleOpts so = a->so;
    if (so.max_tokens == 0) so.max_tokens = 512;
    if (so.stop == -2) so.stop = md->info.has_tokenizer ? CUSET_TOK_EOS : 2;
    if (so.stop >= c->vocab_size) {
        fprintf(stderr, "gen: --stop %d is not a token id of this model (its vocabulary is %d; -1 never stops)\n",
                so.stop, c->vocab_size);
        return 2;
    }
    ready_to_sample(md);
    double t0 = cuset_time();
    const CusetTokenizer *tk = md->info.has_tokenizer && !a->prompt_ids ? &md->tk : NULL;
    int produced = sample_completion(md, tk, tokens, n, &so, a->seed, stdout, NULL);
    if (produced < 0) {
        fprintf(stderr, "\ngen: " CUSET_NONFINITE_LOGITS "\n");
        return 1;
    }
    double dt = cuset_time() - t0 - md->prefill_s; // the generation's speed, not the prompt's
    printf("\n");
    fprintf(stderr, "gen: %d prompt tokens, %d generated in %.2fs (%.1f tokens/s; the prompt's prefill took %.2fs)%s\n",
            n, produced, dt, produced / (dt > 0 ? dt : 1), md->prefill_s,
            md->kv.len == c->max_seq_len ? ", stopped at the context length" : "");
    arrfree(tokens);
    return 0;
}

// A closed stdout (gen ... | head) fails the writes to it instead of killing gen, so that what
// gen writes to files (--results, --summary, --json) is completed, and gen exits 1 saying so
// (stdout_written). A handler, not SIG_IGN: the programs --eval runs get the default on exec.
static void on_sigpipe(int sig) { (void)sig; }

int main(int argc, char **argv) {
    signal(SIGPIPE, on_sigpipe);
    GenArgs a = parse_args(argc, argv);
    int prompts = !!a.prompt + !!a.prompt_file + !!a.prompt_ids + !!a.prompt_jsonl;
    if (prompts > 1) fail("give one of --prompt, --prompt-file, --prompt-jsonl, --prompt-ids", "");
    if (!!a.analyze_path + !!a.ev.tasks_path + a.info_only + !!a.export_dir + prompts > 1)
        fail("give one of --analyze, --eval, --info, --export-hf or a prompt (each is a mode of its own)", "");
    if (a.eval_flag && !a.ev.tasks_path) fail(a.eval_flag, " goes with --eval TASKS.jsonl");
    if (a.analyze_flag && !a.analyze_path) fail(a.analyze_flag, " goes with --analyze FILE");
    if (a.pick_flag && !a.ev.tasks_path && !a.analyze_path) fail(a.pick_flag, " goes with --eval or --analyze");
    if (a.index_given && !a.prompt_jsonl) fail("--index goes with --prompt-jsonl FILE", "");
    if (a.show_prompt && a.prompt_ids) fail("--show-prompt goes with a text prompt (--prompt, --prompt-file, --prompt-jsonl)", "");
    int sampling = !a.analyze_path && !a.info_only && !a.export_dir; // a prompt, or --eval
    int from_prompt = sampling && !a.ev.tasks_path;
    if (a.sample_flag && !sampling) fail(a.sample_flag, " goes with a prompt or --eval (it is an option of sampling)");
    if (a.prompt_flag && !from_prompt) fail(a.prompt_flag, " goes with a prompt");
    if (a.sample_flag && a.ev.programs_path) fail(a.sample_flag, " goes with sampling, not with --programs (programs given)");
    const char *cpu_mode = a.analyze_path ? "--analyze" : a.info_only ? "--info" : a.export_dir ? "--export-hf"
                         : a.ev.tasks_path && !a.model_path ? "--eval --programs" : NULL; // no sampling: no GPU
    if (cpu_mode && !strcmp(device_flag, "cuda")) {
        char msg[200];
        snprintf(msg, sizeof msg, "--device cuda: %s runs no model on the GPU (only sampling does: a prompt, --eval "
                                  "--model); ", cpu_mode);
        fail(msg, "leave --device out");
    }
    if (a.threads && cpu_mode && strcmp(cpu_mode, "--analyze"))
        fail(cpu_mode, " runs no model: --threads goes with a prompt, --eval --model or --analyze");
    if (a.threads && a.ev.tasks_path && a.ev.jobs > 1) // (eval_prepare_fork)
        fail("--threads goes with --jobs 1: --eval --jobs N samples in N processes of 1 thread each", "");
#ifdef _OPENMP
    if (a.threads) omp_set_num_threads(a.threads);
#endif
    if (a.analyze_path) {
        if (!a.model_path) fail("--analyze needs --model FILE", "");
        return stdout_written(analyze(a.model_path, a.analyze_path, a.co));
    }
    if (a.ev.tasks_path) return stdout_written(run_eval(&a.ev, a.model_path, a.so, a.seed));
    if (!a.model_path) fail("--model FILE is required", "");
    Model md;
    if (load_model(a.model_path, &md)) return 1;
    int rc = 0;
    if (a.info_only) cuset_checkpoint_describe(stdout, a.model_path, &md.m, &md.tk, &md.info);
    else if (a.export_dir) rc = export_hf(a.export_dir, a.model_path, &md);
    else rc = generate(&a, &md);
    free_model(&md);
    return stdout_written(rc);
}
