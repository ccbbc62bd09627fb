// gen: samples a completion from a trained checkpoint, streaming it as it is produced.
// A checkpoint trained on text carries its tokenizer: the prompt is text and so is the
// output. A checkpoint trained on the synthetic task has none: prompt and output are ids.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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
    "  --stop ID             stop after this token    [end of sample; 2 without a tokenizer]\n"
    "  --seed N              sampling seed                                [1]\n"
    "  --device D            cpu | cuda | auto (the GPU when there is one) [auto]\n"
    "  -h, --help            this text\n"
    "The completion goes to stdout; the speed (tokens/s) to stderr.\n"
    "\n"
    "usage: gen --model FILE --eval TASKS.jsonl [options]      sample programs and test them\n"
    "       gen --eval TASKS.jsonl --programs PROGS.jsonl [options]   test given programs\n"
    "Compiles (nvcc -arch=sm_90, when nvcc is on the PATH or in /usr/local/cuda/bin) and runs\n"
    "(on the GPU, or without one under the CPU emulator emu/nvcc-emu) each program of each task\n"
    "of a corpus split file (DIR/test.jsonl from make data), compares its outputs with\n"
    "data/corpus --compare, and reports compilation and functional pass@k (the unbiased\n"
    "estimator, averaged over tasks), the outcomes (pass, compile_error, unsupported, crash,\n"
    "timeout, wrong_answer, error) and functional pass@1 per family.\n"
    "  --eval TASKS.jsonl    the tasks: a corpus split file DIR/{train,val,test}.jsonl\n"
    "  --programs FILE       programs to test instead of sampling: {\"index\": K, \"program\": \"...\"}\n"
    "                        per line, K the task's line in TASKS.jsonl (from 0), any number per task\n"
    "  --k LIST              the k of pass@k                               [1,3]\n"
    "  --samples N           programs sampled per task (<= 1000)           [largest k]\n"
    "  --first I, --count C  the tasks I .. I+C-1                          [all]\n"
    "  --max-tokens N        most tokens per program           [to the end of the context]\n"
    "  --temperature, --top-k, --top-p, --seed  as above; sample s of task K uses the seed\n"
    "                        SEED + 1000 K + s, so gen --prompt-jsonl TASKS --index K --seed\n"
    "                        (that seed) --max-tokens (the same) writes that program again\n"
    "  --results FILE        one JSON line per program (status, compiler or program errors,\n"
    "                        the program)                   [MODEL.eval.jsonl, PROGS.eval.jsonl]\n"
    "  --timeout SEC         wall-clock limit of each run                  [30]\n"
    "  --compile-timeout SEC wall-clock limit of each compilation          [120]\n"
    "  --disk-limit MIB      what each compilation or run may take of the disk: it is stopped\n"
    "                        when the disk's free space falls by more while it runs   [1024]\n"
    "  --runner auto|gpu|emu where programs run: auto = the GPU when nvidia-smi -L works [auto]\n"
    "  --corpus PATH         the corpus program        [data/corpus beside the gen binary]\n"
    "  --emu PATH            the emulator's compiler   [emu/nvcc-emu beside the gen binary]\n"
    "  --nvcc PATH|none      the CUDA compiler; none: the emulator's build is the compilation\n"
    "                        check                      [nvcc on the PATH, /usr/local/cuda/bin]\n"
    "  --jobs N              programs compiled and run at once                [1]\n"
    "  --cache DIR           keep each result in DIR, keyed by the task, the program's text and\n"
    "                        how it is built and run; a program met again is not rerun\n"
    "  --summary FILE        the numbers as JSON: pass@k overall, for seen and held-out parameter\n"
    "                        combinations, per family and per task\n"
    "  --keep-dirs           keep the work directories ($TMPDIR/cuset_eval.XXXXXX) for a look\n"
    "  --unsafe-no-sandbox   compile and run the programs WITHOUT ISOLATION, with your user's\n"
    "                        rights over your files, processes and network (for a machine\n"
    "                        where bubblewrap cannot make a sandbox)\n"
    "The report goes to stdout, progress to stderr. Each compilation and run happens in a\n"
    "sandbox (emu/sandbox.h: bubblewrap; only its private directory writable, the system\n"
    "read-only, the rest of the file system hidden, no network, its own PID namespace, not\n"
    "root), with stdin from /dev/null, its output in files, and limits on time, CPU time,\n"
    "processes (256), file size (256 MiB), memory (8 GiB, emulator only), open files and disk.\n"
    "Without a working bubblewrap gen refuses to run programs unless --unsafe-no-sandbox.\n"
    "\n"
    "usage: gen --model FILE --analyze DATA.jsonl [options]   the confidence analysis\n"
    "Teacher-forces the model on each prompt/completion of DATA.jsonl and reports its confidence\n"
    "(the probability of the true token) on CUDA-sensitive versus neutral target tokens: means,\n"
    "medians, histograms, a two-sample KS test; the share of samples with a PROBE-token window\n"
    "whose mean is below the neutral-token mean and what those windows touch (kernel\n"
    "definitions, launches, dim3); the hardest window of eq. 7 and w_n (data/confidence.h).\n"
    "  --first I, --count C  the samples I .. I+C-1                        [all]\n"
    "  --window L            CuSeT's window l for eq. 7     [the checkpoint's training setting]\n"
    "  --probe N             the window of the low-confidence search       [64]\n"
    "  --views N             samples shown token by token in the JSON      [3]\n"
    "  --json FILE           the JSON written                              [MODEL.analysis.json]\n"
    "The text report goes to stdout; data/experiment_report.py --view FILE draws the JSON.\n";

static void fail(const char *msg, const char *arg) {
    fprintf(stderr, "gen: %s%s\n(gen --help lists the options)\n", msg, arg);
    exit(2);
}

static double num(const char *flag, const char *v, double lo, double hi) {
    char *end;
    double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || !(x >= lo && x <= hi)) {
        fprintf(stderr, "gen: %s expects a number in [%g, %g], got '%s'\n", flag, lo, hi, v);
        exit(2);
    }
    return x;
}

typedef struct {
    int max_tokens;
    float temperature;
    int top_k;
    float top_p;
    int stop; // the token that ends a sample
} SampleOpts;

// --device: sampling runs its forward passes on the GPU (a decoder with the parameters and
// the KV cache on the device; logits come back for cuset_sample) or on the CPU.
static const char *device_flag = "auto";
static CusetCudaDecoder *gpu_decoder = NULL;

// Picks the device for model m per --device; exits with a message when --device cuda has none.
static void use_device(const CusetGPT *m) {
    if (strcmp(device_flag, "cpu") && strcmp(device_flag, "cuda") && strcmp(device_flag, "auto"))
        fail("--device expects cpu, cuda or auto, got ", device_flag);
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

// One position of the forward pass, on the device --device picked; kv->len counts positions.
static const float *decode_step(const CusetGPT *m, CusetKVCache *kv, int token) {
    if (gpu_decoder) { kv->len++; return cuset_cuda_decode(gpu_decoder, token); }
    return cuset_gpt_decode(m, kv, token);
}

// Fills the KV cache with the prompt (kv is reset first), then samples up to max_tokens
// tokens (or until the stop token or the end of the context) with the rng seeded by
// seed. With a tokenizer (tk) each token's bytes go to stream (if not NULL) and to *text
// (an stb_ds char array, if not NULL); without one, the ids, space-separated. Returns the
// number of tokens sampled, the stop token included.
static int sample_completion(const CusetGPT *m, const CusetTokenizer *tk, const int *prompt, int n, const SampleOpts *o,
                             uint64_t seed, FILE *stream, char **text, CusetKVCache *kv, CusetProbId *work) {
    const CusetConfig *c = &m->cfg;
    uint64_t rng = seed;
    const float *logits = NULL;
    kv->len = 0;
    if (gpu_decoder) cuset_cuda_decoder_reset(gpu_decoder);
    for (int i = 0; i < n; i++) logits = decode_step(m, kv, prompt[i]);
    int produced = 0;
    while (produced < o->max_tokens) {
        int next = cuset_sample(logits, c->vocab_size, o->temperature, o->top_k, o->top_p, &rng, work);
        produced++;
        if (next == o->stop) break;
        char idbuf[16];
        size_t len;
        const char *bytes = idbuf;
        if (tk) bytes = cuset_tok_bytes(tk, next, &len);
        else len = (size_t)snprintf(idbuf, sizeof idbuf, "%s%d", produced > 1 ? " " : "", next);
        if (stream) { fwrite(bytes, 1, len, stream); fflush(stream); }
        if (text && len) memcpy(arraddnptr(*text, len), bytes, len);
        if (kv->len == c->max_seq_len) break;
        logits = decode_step(m, kv, next);
    }
    return produced;
}

// ---- gen --eval: emu/eval.h compiles, runs and checks the programs the model writes -------
typedef struct {
    const char *path;
    SampleOpts so;
    CusetGPT m;
    CusetTokenizer tk;
    CusetKVCache kv;
    CusetProbId *work;
    int task;    // the task whose prompt is in prompt
    int *prompt; // stb_ds: its token ids
} EvalModel;

static int eval_open(void *ctx, int samples) {
    EvalModel *e = (EvalModel *)ctx;
    char err[1200];
    CusetCheckpointInfo info;
    cuset_tok_init(&e->tk);
    if (cuset_checkpoint_load_tok(e->path, &e->m, NULL, &e->tk, 0, &info, err, sizeof err)) { fprintf(stderr, "gen: %s\n", err); return 1; }
    if (!info.has_tokenizer) {
        fprintf(stderr, "gen: %s has no tokenizer (trained on token ids): it cannot write programs\n", e->path);
        exit(2);
    }
    if (samples > 1 && e->so.temperature == 0)
        fprintf(stderr, "gen: note: --temperature 0 is greedy, so the %d samples of a task are all the same\n", samples);
    cuset_kv_init(&e->kv, &e->m.cfg);
    use_device(&e->m);
    e->work = (CusetProbId *)calloc(e->m.cfg.vocab_size, sizeof *e->work);
    e->so.stop = CUSET_TOK_EOS;
    if (e->so.max_tokens <= 0) e->so.max_tokens = e->m.cfg.max_seq_len; // to the end of the context
    e->task = -1;
    return 0;
}

static int eval_sample(void *ctx, int task, const char *prompt, size_t len, uint64_t seed, char **program, char *err,
                       size_t errlen) {
    EvalModel *e = (EvalModel *)ctx;
    if (task != e->task) {
        arrsetlen(e->prompt, 0);
        arrput(e->prompt, CUSET_TOK_PROMPT);
        cuset_tok_encode(&e->tk, prompt, len, &e->prompt);
        arrput(e->prompt, CUSET_TOK_TARGET);
        e->task = task;
    }
    int n = (int)arrlen(e->prompt);
    if (n >= e->m.cfg.max_seq_len) {
        snprintf(err, errlen, "task %d's prompt is %d tokens, but the model's context is %d", task, n, e->m.cfg.max_seq_len);
        return -1;
    }
    sample_completion(&e->m, &e->tk, e->prompt, n, &e->so, seed, NULL, program, &e->kv, e->work);
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

// --analyze: the confidence analysis of data/confidence.h, JSON to a file, text to stdout.
static int analyze(const char *model_path, const char *data, int first, int count, int window, int probe, int views,
                   const char *json_path) {
    char err[9000], path[4200];
    CusetGPT m;
    CusetTokenizer tk = {0};
    CusetCheckpointInfo info;
    cuset_tok_init(&tk);
    if (cuset_checkpoint_load_tok(model_path, &m, NULL, &tk, 0, &info, err, sizeof err)) {
        fprintf(stderr, "gen: %s\n", err);
        return 1;
    }
    if (!info.has_tokenizer) fail("--analyze needs a model trained on text (this checkpoint has no tokenizer)", "");
    if (window <= 0) window = info.settings.obj.window > 0 ? info.settings.obj.window : 256;
    if (!json_path) snprintf(path, sizeof path, "%s.analysis.json", model_path), json_path = path;
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", json_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) { fprintf(stderr, "gen: %s: cannot create: %s\n", tmp, strerror(errno)); return 1; }
    printf("model %s, data %s, window l = %d, probe %d tokens\n", model_path, data, window, probe);
    int rc = cuset_conf_analyze_file(&m, &tk, data, first, count > 0 ? count : -1, window, probe, views, f, stdout, err,
                                     sizeof err);
    if (fclose(f) != 0 && !rc) rc = -1, snprintf(err, sizeof err, "%s: cannot write: %s", tmp, strerror(errno));
    if (rc || rename(tmp, json_path)) {
        if (!rc) snprintf(err, sizeof err, "%s: cannot rename to %s: %s", tmp, json_path, strerror(errno));
        fprintf(stderr, "gen: %s\n", err);
        unlink(tmp);
    } else printf("json: %s\n", json_path);
    cuset_gpt_free(&m);
    cuset_tok_free(&tk);
    return rc ? 1 : 0;
}

// --eval with --model: the model writes the programs; without: --programs gives them.
static int eval_with_model(const CusetEvalOpts *ev, const char *model_path, SampleOpts so, uint64_t seed) {
    if (!model_path) return cuset_eval_main(ev, NULL);
    EvalModel e = {.path = model_path, .so = so};
    CusetEvalSampler s = {&e, eval_open, eval_sample, eval_prepare_fork, model_path, "", seed};
    snprintf(s.settings, sizeof s.settings, "temperature %g, top-k %d, top-p %g", so.temperature, so.top_k, so.top_p);
    int rc = cuset_eval_main(ev, &s);
    if (e.work) { cuset_kv_free(&e.kv); free(e.work); cuset_gpt_free(&e.m); }
    cuset_tok_free(&e.tk);
    arrfree(e.prompt);
    return rc;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *export_dir = NULL, *prompt = NULL, *prompt_file = NULL, *prompt_ids = NULL, *prompt_jsonl = NULL;
    int info_only = 0, max_tokens = 0, top_k = 0, stop = -2, index = 0, show_prompt = 0;
    CusetEvalOpts ev = {.k_list = "1,3", .runner = "auto", .timeout = 30, .compile_timeout = 120, .disk_mib = 1024};
    float temperature = 0.8f, top_p = 1.0f;
    uint64_t seed = 1;
    const char *analyze_path = NULL, *json_path = NULL;
    int window = 0, probe = 64, views = 3;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) { fputs(usage_text, stdout); return 0; }
        if (!strcmp(k, "--info")) { info_only = 1; continue; }
        if (!strcmp(k, "--show-prompt")) { show_prompt = 1; continue; }
        if (!strcmp(k, "--keep-dirs")) { ev.keep_dirs = 1; continue; }
        if (!strcmp(k, "--unsafe-no-sandbox")) { ev.unsafe_no_sandbox = 1; continue; }
        if (strncmp(k, "--", 2) != 0) fail("unexpected argument ", k);
        if (i + 1 >= argc) fail("missing value for ", k);
        const char *v = argv[++i];
        if (!strcmp(k, "--model")) model_path = v;
        else if (!strcmp(k, "--export-hf")) export_dir = v;
        else if (!strcmp(k, "--prompt")) prompt = v;
        else if (!strcmp(k, "--prompt-file")) prompt_file = v;
        else if (!strcmp(k, "--prompt-ids")) prompt_ids = v;
        else if (!strcmp(k, "--prompt-jsonl")) prompt_jsonl = v;
        else if (!strcmp(k, "--index")) index = (int)num(k, v, 0, 1e9);
        else if (!strcmp(k, "--max-tokens")) max_tokens = (int)num(k, v, 1, 1 << 20);
        else if (!strcmp(k, "--temperature")) temperature = (float)num(k, v, 0, 100);
        else if (!strcmp(k, "--top-k")) top_k = (int)num(k, v, 0, 1 << 24);
        else if (!strcmp(k, "--top-p")) top_p = (float)num(k, v, 1e-6, 1);
        else if (!strcmp(k, "--stop")) stop = (int)num(k, v, -1, 1 << 24);
        else if (!strcmp(k, "--seed")) seed = (uint64_t)num(k, v, 0, 1e18);
        else if (!strcmp(k, "--device")) device_flag = v;
        else if (!strcmp(k, "--eval")) ev.tasks_path = v;
        else if (!strcmp(k, "--programs")) ev.programs_path = v;
        else if (!strcmp(k, "--results")) ev.results_path = v;
        else if (!strcmp(k, "--k")) ev.k_list = v;
        else if (!strcmp(k, "--samples")) ev.samples = (int)num(k, v, 1, 1000);
        else if (!strcmp(k, "--first")) ev.first = (int)num(k, v, 0, 1e9);
        else if (!strcmp(k, "--count")) ev.count = (int)num(k, v, 1, 1e9);
        else if (!strcmp(k, "--timeout")) ev.timeout = num(k, v, 0.01, 86400);
        else if (!strcmp(k, "--compile-timeout")) ev.compile_timeout = num(k, v, 1, 86400);
        else if (!strcmp(k, "--disk-limit")) ev.disk_mib = num(k, v, 1, 1 << 24);
        else if (!strcmp(k, "--runner")) ev.runner = v;
        else if (!strcmp(k, "--corpus")) ev.corpus = v;
        else if (!strcmp(k, "--emu")) ev.emu = v;
        else if (!strcmp(k, "--nvcc")) ev.nvcc = v;
        else if (!strcmp(k, "--jobs")) ev.jobs = (int)num(k, v, 1, 256);
        else if (!strcmp(k, "--cache")) ev.cache_dir = v;
        else if (!strcmp(k, "--summary")) ev.summary_path = v;
        else if (!strcmp(k, "--analyze")) analyze_path = v;
        else if (!strcmp(k, "--window")) window = (int)num(k, v, 1, 1 << 24);
        else if (!strcmp(k, "--probe")) probe = (int)num(k, v, 1, 1 << 24);
        else if (!strcmp(k, "--views")) views = (int)num(k, v, 0, 1 << 20);
        else if (!strcmp(k, "--json")) json_path = v;
        else fail("unknown option ", k);
    }
    if (analyze_path) {
        if (!model_path) fail("--analyze needs --model FILE", "");
        if (ev.tasks_path || prompt || prompt_file || prompt_ids || prompt_jsonl || info_only)
            fail("--analyze reads its own samples: drop --eval, --prompt, --prompt-file, --prompt-jsonl, --prompt-ids and --info", "");
        return analyze(model_path, analyze_path, ev.first, ev.count, window, probe, views, json_path);
    }
    if (ev.tasks_path) {
        if (prompt || prompt_file || prompt_ids || prompt_jsonl || info_only)
            fail("--eval samples its own prompts: drop --prompt, --prompt-file, --prompt-jsonl, --prompt-ids and --info", "");
        SampleOpts so = {max_tokens, temperature, top_k, top_p, stop};
        return eval_with_model(&ev, model_path, so, seed);
    }
    if (ev.programs_path) fail("--programs goes with --eval TASKS.jsonl", "");
    if (max_tokens == 0) max_tokens = 512;
    if (!model_path) fail("--model FILE is required", "");
    if (!!prompt + !!prompt_file + !!prompt_ids + !!prompt_jsonl > 1)
        fail("give one of --prompt, --prompt-file, --prompt-jsonl, --prompt-ids", "");
    char err[512];
    CusetGPT m;
    CusetTokenizer tk = {0};
    CusetCheckpointInfo info;
    cuset_tok_init(&tk);
    if (cuset_checkpoint_load_tok(model_path, &m, NULL, &tk, 0, &info, err, sizeof err)) {
        fprintf(stderr, "gen: %s\n", err);
        return 1;
    }
    const CusetConfig *c = &m.cfg;
    if (info_only) {
        printf("%s: %d layers, %d heads, %d channels, context %d, vocabulary %d (padded %d), %zu parameters\n", model_path,
               c->n_layer, c->n_head, c->n_embd, c->max_seq_len, c->vocab_size, c->padded_vocab_size, m.num_params);
        printf("trained %d steps with %s; optimizer state %s; ASFT reference %s; tokenizer %s\n", info.step,
               cuset_objective_names[info.settings.obj.kind % CUSET_OBJ_COUNT], info.has_optimizer ? "yes" : "no",
               info.has_reference ? "yes" : "no", !info.has_tokenizer ? "no (token ids only)"
               : tk.split == CUSET_TOK_SPLIT_GPT2 ? "yes (GPT-2's pre-split)" : "yes");
        if (cuset_checkpoint_old_windows(&info))
            printf("checkpoint version 1: CuSeT's windows before the eq. 5 correction (a target shorter than the window "
                   "was one window)\n");
        return 0;
    }

    if (export_dir) {
        if (!info.has_tokenizer) {
            fprintf(stderr, "gen: %s has no tokenizer (it was trained on token ids): nothing to export it with\n",
                    model_path);
            return 2;
        }
        if (cuset_gpt2_export(export_dir, &m, &tk, err, sizeof err)) { fprintf(stderr, "gen: --export-hf: %s\n", err); return 1; }
        printf("%s: config.json, model.safetensors, tokenizer.json, tokenizer_config.json (%zu parameters, %d ids)\n",
               export_dir, m.num_params, c->vocab_size);
        return 0;
    }

    // --- the prompt, as token ids ---
    int *tokens = NULL; // stb_ds array
    if (prompt_ids) {
        for (const char *p = prompt_ids; *p;) {
            while (*p == ' ' || *p == ',') p++;
            if (!*p) break;
            char *end;
            long id = strtol(p, &end, 10);
            if (end == p || id < 0 || id >= c->vocab_size) {
                fprintf(stderr, "gen: --prompt-ids: '%.16s' is not a token id in [0, %d)\n", p, c->vocab_size);
                return 2;
            }
            arrput(tokens, (int)id);
            p = end;
        }
    } else {
        if (!info.has_tokenizer) {
            fprintf(stderr, "gen: %s has no tokenizer (it was trained on token ids): use --prompt-ids\n", model_path);
            return 2;
        }
        size_t n = 0;
        char *text = NULL;
        if (prompt && strcmp(prompt, "-") != 0) {
            n = strlen(prompt);
            text = strdup(prompt);
        } else if (prompt_jsonl) {
            CusetTextSample *tasks = NULL;
            if (cuset_jsonl_read(prompt_jsonl, &tasks, err, sizeof err)) { fprintf(stderr, "gen: %s\n", err); return 1; }
            if (index >= (int)arrlen(tasks)) {
                fprintf(stderr, "gen: %s holds %d tasks; --index %d is past the end\n", prompt_jsonl, (int)arrlen(tasks), index);
                return 2;
            }
            n = tasks[index].prompt_len;
            text = (char *)malloc(n + 1);
            memcpy(text, tasks[index].prompt, n + 1);
            cuset_text_samples_free(tasks);
        } else if (prompt_file || prompt || !isatty(0)) {
            if (cuset_read_file(prompt_file ? prompt_file : "/dev/stdin", (unsigned char **)&text, &n, err, sizeof err)) {
                fprintf(stderr, "gen: the prompt: %s\n", err);
                return 1;
            }
        } else {
            fail("give a prompt: --prompt TEXT, --prompt-file FILE or on stdin", "");
        }
        if (show_prompt) printf("%.*s\n\n", (int)n, text);
        arrput(tokens, CUSET_TOK_PROMPT);
        cuset_tok_encode(&tk, text, n, &tokens);
        arrput(tokens, CUSET_TOK_TARGET);
        free(text);
    }
    int n = (int)arrlen(tokens);
    if (n == 0) fail("the prompt holds no token", "");
    if (n >= c->max_seq_len) {
        fprintf(stderr, "gen: the prompt is %d tokens, but the model's context is %d: nothing left to generate; "
                        "shorten the prompt\n", n, c->max_seq_len);
        return 2;
    }
    if (stop == -2) stop = info.has_tokenizer ? CUSET_TOK_EOS : 2;

    // --- prefill the KV cache with the prompt, then sample and stream ---
    CusetProbId *work = (CusetProbId *)calloc(c->vocab_size, sizeof *work);
    CusetKVCache kv;
    cuset_kv_init(&kv, c);
    use_device(&m);
    SampleOpts so = {max_tokens, temperature, top_k, top_p, stop};
    double t0 = cuset_time();
    int produced = sample_completion(&m, info.has_tokenizer && !prompt_ids ? &tk : NULL, tokens, n, &so, seed, stdout,
                                     NULL, &kv, work);
    double dt = cuset_time() - t0;
    printf("\n");
    fprintf(stderr, "gen: %d prompt tokens, %d generated in %.2fs (%.1f tokens/s)%s\n", n, produced, dt,
            produced / (dt > 0 ? dt : 1), kv.len == c->max_seq_len ? ", stopped at the context length" : "");
    cuset_kv_free(&kv);
    cuset_cuda_decoder_free(gpu_decoder);
    arrfree(tokens);
    free(work);
    cuset_tok_free(&tk);
    cuset_gpt_free(&m);
    return 0;
}
