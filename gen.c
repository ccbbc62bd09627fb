// gen: samples a completion from a trained checkpoint, streaming it as it is produced.
// A checkpoint trained on text carries its tokenizer: the prompt is text and so is the
// output. A checkpoint trained on the synthetic task has none: prompt and output are ids.
#define CUSET_IMPLEMENTATION
#include "cuset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>

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
    "  --runner auto|gpu|emu where programs run: auto = the GPU when nvidia-smi -L works [auto]\n"
    "  --corpus PATH         the corpus program        [data/corpus beside the gen binary]\n"
    "  --emu PATH            the emulator's compiler   [emu/nvcc-emu beside the gen binary]\n"
    "  --nvcc PATH|none      the CUDA compiler; none: the emulator's build is the compilation\n"
    "                        check                      [nvcc on the PATH, /usr/local/cuda/bin]\n"
    "  --keep-dirs           keep the work directories ($TMPDIR/cuset_eval.XXXXXX) for a look\n"
    "The report goes to stdout, progress to stderr. Each program runs in a private temporary\n"
    "directory, in its own process group, with stdin from /dev/null, its output in files,\n"
    "and limits on CPU time, file size (256 MiB), memory (8 GiB, emulator only) and open files.\n";

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
#ifdef CUSET_CUDA
static CusetCudaDecoder *gpu_decoder = NULL;
#endif

// Picks the device for model m per --device; exits with a message when --device cuda has none.
static void use_device(const CusetGPT *m) {
    if (strcmp(device_flag, "cpu") && strcmp(device_flag, "cuda") && strcmp(device_flag, "auto"))
        fail("--device expects cpu, cuda or auto, got ", device_flag);
#ifdef CUSET_CUDA
    char why[256];
    if (!strcmp(device_flag, "cpu")) return;
    if (cuset_cuda_available(why, sizeof why)) {
        gpu_decoder = cuset_cuda_decoder_new(m, why, sizeof why);
        if (gpu_decoder) return;
    }
    if (!strcmp(device_flag, "cuda")) { fprintf(stderr, "gen: --device cuda: no usable GPU: %s; use --device cpu\n", why); exit(2); }
    fprintf(stderr, "gen: note: no usable GPU (%s): sampling on the CPU\n", why);
#else
    (void)m;
    if (!strcmp(device_flag, "cuda")) {
        fprintf(stderr, "gen: --device cuda: this build has no GPU backend (built without nvcc); use --device cpu\n");
        exit(2);
    }
#endif
}

// One position of the forward pass, on the device --device picked; kv->len counts positions.
static const float *decode_step(const CusetGPT *m, CusetKVCache *kv, int token) {
#ifdef CUSET_CUDA
    if (gpu_decoder) { kv->len++; return cuset_cuda_decode(gpu_decoder, token); }
#endif
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
#ifdef CUSET_CUDA
    if (gpu_decoder) cuset_cuda_decoder_reset(gpu_decoder);
#endif
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

// ---- gen --eval: compile, run and check generated programs; pass@k -----------------------
// For each task of a corpus split file (data/corpus's DIR/SPLIT.jsonl) and each program
// (sampled from the model, or given in --programs): a private directory with prog.cu and
// the task's inputs; nvcc (when present) for the compilation check; a run on the GPU, or
// under the CPU emulator emu/nvcc-emu; data/corpus --compare against the expected outputs.

enum { ST_PASS, ST_COMPILE_ERROR, ST_UNSUPPORTED, ST_CRASH, ST_TIMEOUT, ST_WRONG_ANSWER, ST_ERROR, ST_COUNT };
static const char *const status_names[ST_COUNT] = {"pass", "compile_error", "unsupported", "crash", "timeout",
                                                   "wrong_answer", "error"};

typedef struct {
    char *prompt, *reference, *id, *family; // from the task's line
    size_t prompt_len, reference_len;
} EvalTask;

typedef struct {          // one program to evaluate
    int task, sample;
    int has_seed;
    uint64_t seed;
    char *text; size_t len;
} EvalProgram;

typedef struct {          // what became of it
    int status, compile_ok;
    int exit_code, signal; // of the program's run (-1 / 0 when it did not run or exit)
    double seconds;        // compiling and running
    char detail[700];      // the first lines of the compiler's or program's error, or compare's verdict
} EvalResult;

typedef struct {
    const char *tasks_path;
    char corpus_dir[4096], split[16];
    char corpus[4096], emu[4096], nvcc[4096];
    int have_nvcc, use_gpu, keep_dirs;
    double timeout, compile_timeout;
    char *root; // the private temporary directory of this run
} EvalEnv;

static void eval_fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "gen: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(2);
}

// out = dir/name; a path longer than cap is an error.
static char *join(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) { fprintf(stderr, "gen: path too long: %s/%s\n", dir, name); exit(2); }
    return out;
}

// DIR/NAME beside the gen binary (/proc/self/exe), e.g. data/corpus.
static void beside_exe(const char *name, char *out, size_t cap) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) { snprintf(out, cap, "%s", name); return; }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    join(out, cap, exe, name);
}

static int is_executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

// nvcc on PATH, else /usr/local/cuda/bin/nvcc.
static int find_nvcc(char *out, size_t cap) {
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; p && *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(out, cap, "%.*s/nvcc", (int)n, p);
        if (n && is_executable(out)) return 1;
        p = e ? e + 1 : NULL;
    }
    snprintf(out, cap, "/usr/local/cuda/bin/nvcc");
    return is_executable(out);
}

// Tasks: prompt and reference from the strict JSON-lines reader; id, family and spec
// (which marks a corpus split file) from each line.
static EvalTask *eval_load_tasks(const char *path) {
    char err[600];
    unsigned char *buf;
    size_t len;
    if (cuset_read_file(path, &buf, &len, err, sizeof err)) eval_fail("%s%s", err, "");
    CusetTextSample *s = NULL;
    if (cuset_jsonl_parse((const char *)buf, len, path, &s, err, sizeof err)) eval_fail("%s%s", err, "");
    EvalTask *tasks = NULL;
    size_t line_no = 0;
    for (size_t i = len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3) ? 3 : 0; i < len;) { // after a byte order mark
        size_t j = i;
        while (j < len && buf[j] != '\n') j++;
        line_no++;
        size_t k = i;
        while (k < j && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\r')) k++;
        if (k < j) { // not blank: the next sample
            size_t t = arrlenu(tasks);
            EvalTask task = {s[t].prompt, s[t].completion, NULL, NULL, s[t].prompt_len, s[t].completion_len};
            char type = 0;
            int found = cuset_json_member((const char *)buf + i, j - i, path, line_no, "spec", &type, NULL, NULL, NULL,
                                          err, sizeof err);
            if (found < 0) eval_fail("%s%s", err, "");
            if (!found || type != 'o') {
                fprintf(stderr, "gen: %s:%zu: the task has no \"spec\" object: --eval needs a split file written by "
                                "data/corpus (DIR/test.jsonl after make data), whose tasks carry their test spec\n",
                        path, line_no);
                exit(2);
            }
            cuset_json_member((const char *)buf + i, j - i, path, line_no, "id", &type, &task.id, NULL, NULL, err, sizeof err);
            cuset_json_member((const char *)buf + i, j - i, path, line_no, "family", &type, &task.family, NULL, NULL, err,
                              sizeof err);
            if (!task.id) task.id = strdup("");
            if (!task.family) task.family = strdup("?");
            arrput(tasks, task);
        }
        i = j + 1;
    }
    arrfree(s); // the strings now belong to the tasks
    free(buf);
    return tasks;
}

// --programs: {"index": K, "program": "..."} per line.
static EvalProgram *eval_load_programs(const char *path, int ntasks) {
    char err[600];
    unsigned char *buf;
    size_t len;
    if (cuset_read_file(path, &buf, &len, err, sizeof err)) eval_fail("%s%s", err, "");
    EvalProgram *progs = NULL;
    int *per_task = (int *)calloc(ntasks, sizeof(int));
    size_t line_no = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && buf[j] != '\n') j++;
        line_no++;
        size_t k = i;
        while (k < j && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\r')) k++;
        if (k < j) {
            const char *line = (const char *)buf + i;
            char type = 0;
            double index = -1;
            EvalProgram p = {0};
            int found = cuset_json_member(line, j - i, path, line_no, "index", &type, NULL, NULL, &index, err, sizeof err);
            if (found < 0) eval_fail("%s%s", err, "");
            if (!found || type != 'n' || index != floor(index) || index < 0 || index >= ntasks) {
                fprintf(stderr, "gen: %s:%zu: \"index\" must be a task index in [0, %d) of the tasks file\n", path,
                        line_no, ntasks);
                exit(2);
            }
            found = cuset_json_member(line, j - i, path, line_no, "program", &type, &p.text, &p.len, NULL, err, sizeof err);
            if (found < 1 || type != 's') {
                fprintf(stderr, "gen: %s:%zu: every line needs a \"program\" string\n", path, line_no);
                exit(2);
            }
            p.task = (int)index;
            p.sample = per_task[p.task]++;
            arrput(progs, p);
        }
        i = j + 1;
    }
    if (!arrlen(progs)) eval_fail("%s: no programs (one {\"index\": K, \"program\": \"...\"} per line)%s", path, "");
    free(per_task);
    free(buf);
    return progs;
}

// The first line of file path that contains needle, or the file's first lines.
static void head_or_line(const char *path, const char *needle, char *out, size_t cap) {
    char buf[8192];
    cuset_file_head(path, 200, buf, sizeof buf);
    const char *hit = needle ? strstr(buf, needle) : NULL;
    if (hit) {
        while (hit > buf && hit[-1] != '\n') hit--; // the whole line
        const char *end = strchr(hit, '\n');
        snprintf(out, cap, "%.*s", (int)(end ? end - hit : (long)strlen(hit)), hit);
    } else {
        cuset_file_head(path, 6, out, cap);
    }
}

// Runs argv in dir with the run limits (program) or the compile limits (compilers: no
// address-space or CPU limit, the wall clock only); stdout/stderr to dir/NAME.out/.err.
static void eval_run(const EvalEnv *E, char *const argv[], const char *dir, const char *name, int program,
                     uint64_t as_bytes, CusetRunResult *r, char *err_path, size_t cap) {
    char out_path[4200], file[64];
    snprintf(file, sizeof file, "%s.out", name);
    join(out_path, sizeof out_path, dir, file);
    snprintf(file, sizeof file, "%s.err", name);
    join(err_path, cap, dir, file);
    double timeout = program ? E->timeout : E->compile_timeout;
    CusetRunLimits lim = cuset_run_default_limits(timeout);
    lim.as_bytes = as_bytes;
    if (!program) { lim.cpu_s = 0; lim.nofile = 1024; }
    cuset_run_limited_ex(argv, dir, timeout, out_path, err_path, &lim, r);
}

// Does the file hold AddressSanitizer's runtime? (It reserves terabytes of address
// space, so RLIMIT_AS would kill it at start.)
static int uses_asan(const char *path) {
    unsigned char *b;
    size_t n;
    if (cuset_read_file(path, &b, &n, NULL, 0)) return 0;
    int hit = 0;
    for (size_t i = 0; i + 11 <= n && !hit; i++) hit = b[i] == '_' && memcmp(b + i, "__asan_init", 11) == 0;
    free(b);
    return hit;
}

// Copies the files of the materialized task directory into dir: inputs and spec.json
// before the run (expected = 0), the expected outputs after it (expected = 1), over
// anything the program wrote under their names.
static int copy_task_files(const char *taskdir, const char *dir, int expected, char *err, size_t errlen) {
    DIR *d = opendir(taskdir);
    if (!d) { snprintf(err, errlen, "%s: %s", taskdir, strerror(errno)); return -1; }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) && !rc) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        int is_expected = len > 13 && !strcmp(n + len - 13, ".expected.bin");
        int is_input = !is_expected && ((len > 4 && !strcmp(n + len - 4, ".bin")) || !strcmp(n, "spec.json"));
        if (expected ? !is_expected : !is_input) continue;
        char src[4200], dst[4200];
        join(src, sizeof src, taskdir, n);
        join(dst, sizeof dst, dir, n);
        unlink(dst); // the program may have left a link or a read-only file there
        rc = cuset_copy_file(src, dst, err, errlen);
    }
    closedir(d);
    return rc;
}

// One program: compile, run, compare. dir exists and is empty.
static void eval_program(const EvalEnv *E, const char *taskdir, const char *dir, const char *text, size_t len,
                         EvalResult *res) {
    memset(res, 0, sizeof *res);
    res->exit_code = -1;
    res->compile_ok = 0;
    char path[4200], err_path[4200], err[600];
    CusetRunResult r;
    double t0 = cuset_time();
    join(path, sizeof path, dir, "prog.cu");
    if (cuset_write_file(path, text, len, err, sizeof err) || copy_task_files(taskdir, dir, 0, err, sizeof err)) {
        res->status = ST_ERROR;
        snprintf(res->detail, sizeof res->detail, "%s", err);
        goto done;
    }
    // the compilation check: nvcc, when there is one
    if (E->have_nvcc) {
        char *argv[] = {(char *)E->nvcc, "-arch=sm_90", "-o", "prog", "prog.cu", NULL};
        eval_run(E, argv, dir, "nvcc", 0, 0, &r, err_path, sizeof err_path);
        if (r.status == CUSET_RUN_ERROR) { res->status = ST_ERROR; snprintf(res->detail, sizeof res->detail, "%s", r.error); goto done; }
        if (r.status != CUSET_RUN_EXITED || r.exit_code != 0) {
            res->status = ST_COMPILE_ERROR;
            if (r.timed_out) snprintf(res->detail, sizeof res->detail, "nvcc did not finish in %g s", E->compile_timeout);
            else head_or_line(err_path, " error", res->detail, sizeof res->detail);
            goto done;
        }
        res->compile_ok = 1;
    }
    // the program to run: nvcc's on a GPU, else the emulator's build
    const char *exe = "./prog";
    uint64_t as = 0; // CUDA reserves much address space on a GPU: no RLIMIT_AS there
    if (!E->use_gpu) {
        char *argv[] = {(char *)E->emu, "prog.cu", "-o", "prog_emu", NULL};
        eval_run(E, argv, dir, "emu_build", 0, 0, &r, err_path, sizeof err_path);
        if (r.status == CUSET_RUN_ERROR) { res->status = ST_ERROR; snprintf(res->detail, sizeof res->detail, "%s", r.error); goto done; }
        if (r.status == CUSET_RUN_EXITED && r.exit_code == 3) {
            res->status = ST_UNSUPPORTED;
            head_or_line(err_path, "unsupported feature", res->detail, sizeof res->detail);
            goto done;
        }
        if (r.status != CUSET_RUN_EXITED || r.exit_code != 0) {
            char why[600];
            if (r.timed_out) snprintf(why, sizeof why, "did not finish in %g s", E->compile_timeout);
            else head_or_line(err_path, "error", why, sizeof why);
            // nvcc accepted it: the emulator's limit, not the program's fault
            res->status = E->have_nvcc ? ST_UNSUPPORTED : ST_COMPILE_ERROR;
            snprintf(res->detail, sizeof res->detail, "%s%s", E->have_nvcc ? "the emulator could not build a program "
                     "nvcc compiles: " : "", why);
            goto done;
        }
        if (!E->have_nvcc) res->compile_ok = 1;
        exe = "./prog_emu";
        join(path, sizeof path, dir, "prog_emu");
        as = uses_asan(path) ? 0 : 8ull << 30;
    }
    char *argv[] = {(char *)exe, NULL};
    eval_run(E, argv, dir, "run", 1, as, &r, err_path, sizeof err_path);
    res->exit_code = r.exit_code;
    res->signal = r.signal;
    if (r.status == CUSET_RUN_ERROR) { res->status = ST_ERROR; snprintf(res->detail, sizeof res->detail, "%s", r.error); goto done; }
    if (r.status == CUSET_RUN_TIMEOUT || (r.status == CUSET_RUN_SIGNALED && r.signal == SIGXCPU)) {
        res->status = ST_TIMEOUT;
        snprintf(res->detail, sizeof res->detail, r.timed_out ? "killed after %g s" : "CPU time limit of %g s", E->timeout);
        goto done;
    }
    if (r.status == CUSET_RUN_SIGNALED || r.exit_code != 0) {
        char head[600];
        head_or_line(err_path, NULL, head, sizeof head);
        if (r.status == CUSET_RUN_EXITED && r.exit_code == 3 && strstr(head, "unsupported feature")) {
            res->status = ST_UNSUPPORTED;
            head_or_line(err_path, "unsupported feature", res->detail, sizeof res->detail);
            goto done;
        }
        res->status = ST_CRASH;
        if (r.status == CUSET_RUN_SIGNALED)
            snprintf(res->detail, sizeof res->detail, "killed by signal %d (%s)%s%s", r.signal, strsignal(r.signal),
                     head[0] ? ": " : "", head);
        else
            snprintf(res->detail, sizeof res->detail, "exit %d%s%s%s", r.exit_code,
                     !E->use_gpu && r.exit_code == 86 ? " (the emulator found an error)" : "", head[0] ? ": " : "", head);
        goto done;
    }
    // outputs against the expected ones
    if (copy_task_files(taskdir, dir, 1, err, sizeof err)) {
        res->status = ST_ERROR;
        snprintf(res->detail, sizeof res->detail, "%s", err);
        goto done;
    }
    char *cargv[] = {(char *)E->corpus, "--compare", ".", NULL};
    eval_run(E, cargv, dir, "compare", 0, 0, &r, err_path, sizeof err_path);
    char out_path[4200];
    join(out_path, sizeof out_path, dir, "compare.out");
    if (r.status == CUSET_RUN_EXITED && r.exit_code == 0) res->status = ST_PASS;
    else if (r.status == CUSET_RUN_EXITED && r.exit_code == 1) {
        res->status = ST_WRONG_ANSWER;
        head_or_line(out_path, "FAIL", res->detail, sizeof res->detail);
    } else {
        res->status = ST_ERROR;
        if (r.status == CUSET_RUN_ERROR) snprintf(res->detail, sizeof res->detail, "%s", r.error);
        else head_or_line(err_path, NULL, res->detail, sizeof res->detail);
    }
done:
    res->seconds = cuset_time() - t0;
}

typedef struct {
    const char *tasks_path, *programs_path, *results_path, *corpus, *emu, *nvcc, *runner, *k_list;
    int samples, first, count, keep_dirs;
    double timeout, compile_timeout;
} EvalOpts;

static void on_signal(int sig) { // Ctrl-C: take the running program down with us
    if (cuset_run_current_pgid) kill(-cuset_run_current_pgid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

// Materializes task index into dir with data/corpus. 0, or -1 with its message in err.
static int eval_materialize(const EvalEnv *E, int index, const char *dir, char *err, size_t errlen) {
    char idx[32], log[4200];
    snprintf(idx, sizeof idx, "%d", index);
    join(log, sizeof log, E->root, "materialize.err");
    char *argv[] = {(char *)E->corpus, "--materialize", (char *)E->corpus_dir, "--split", (char *)E->split, "--index", idx,
                    "--to", (char *)dir, NULL};
    CusetRunResult r;
    CusetRunLimits lim = cuset_run_default_limits(0);
    lim.as_bytes = 0;
    cuset_run_limited_ex(argv, NULL, 300, NULL, log, &lim, &r);
    if (r.status == CUSET_RUN_EXITED && r.exit_code == 0) return 0;
    char head[400];
    if (r.status == CUSET_RUN_ERROR) snprintf(head, sizeof head, "%s", r.error);
    else cuset_file_head(log, 3, head, sizeof head);
    snprintf(err, errlen, "data/corpus --materialize failed for task %d: %s", index, head);
    return -1;
}

static void write_result_line(FILE *f, const EvalTask *t, const EvalProgram *p, const EvalResult *r) {
    fprintf(f, "{\"task\": %d, \"id\": ", p->task);
    cuset_json_write_string(f, t->id, strlen(t->id));
    fprintf(f, ", \"family\": ");
    cuset_json_write_string(f, t->family, strlen(t->family));
    fprintf(f, ", \"sample\": %d, \"seed\": ", p->sample);
    if (p->has_seed) fprintf(f, "%llu", (unsigned long long)p->seed); else fprintf(f, "null");
    fprintf(f, ", \"status\": \"%s\", \"compile_ok\": %s, \"exit_code\": ", status_names[r->status],
            r->compile_ok ? "true" : "false");
    if (r->exit_code >= 0) fprintf(f, "%d", r->exit_code); else fprintf(f, "null");
    fprintf(f, ", \"signal\": ");
    if (r->signal) fprintf(f, "%d", r->signal); else fprintf(f, "null");
    fprintf(f, ", \"seconds\": %.3f, \"detail\": ", r->seconds);
    cuset_json_write_string(f, r->detail, strlen(r->detail));
    fprintf(f, ", \"program\": ");
    cuset_json_write_string(f, p->text, p->len);
    fprintf(f, "}\n");
    fflush(f);
}

typedef struct { int n, c_compile, c_pass, n_unsupported; } TaskTally;

// One report line: pass@k for each k, averaged over the tasks [first, last) that have at
// least k programs; what = 0 compilation, 1 functional, 2 functional with the programs
// the emulator cannot run left out.
static void print_pass_at_k(const char *label, int what, const TaskTally *tally, int first, int last, const int *ks,
                            int nk, int evaluated_tasks) {
    printf("%s", label);
    for (int j = 0; j < nk; j++) {
        double sum = 0;
        int used = 0;
        for (int t = first; t < last; t++) {
            int n = tally[t].n - (what == 2 ? tally[t].n_unsupported : 0);
            if (n < ks[j] || n < 1) continue;
            sum += cuset_pass_at_k(n, what ? tally[t].c_pass : tally[t].c_compile, ks[j]);
            used++;
        }
        if (!used) printf("  pass@%d    n/a", ks[j]);
        else if (what == 2) printf("  pass@%d %6.2f%% (%d tasks)", ks[j], 100 * sum / used, used);
        else {
            printf("  pass@%d %6.2f%%", ks[j], 100 * sum / used);
            if (used < evaluated_tasks) printf(" (%d tasks with >= %d programs)", used, ks[j]);
        }
    }
    printf("\n");
}

// Functional pass@1 per family, each family once, in the order of its first task.
static void print_family_table(const EvalTask *tasks, const TaskTally *tally, int first, int last) {
    printf("functional pass@1 by family:\n");
    printf("  %-28s %6s %9s %8s\n", "family", "tasks", "programs", "pass@1");
    for (int t = first; t < last; t++) {
        if (!tally[t].n) continue;
        int seen = 0;
        for (int u = first; u < t && !seen; u++) seen = tally[u].n && !strcmp(tasks[u].family, tasks[t].family);
        if (seen) continue;
        int nt = 0, np = 0;
        double sum = 0;
        for (int u = t; u < last; u++) {
            if (!tally[u].n || strcmp(tasks[u].family, tasks[t].family)) continue;
            nt++;
            np += tally[u].n;
            sum += cuset_pass_at_k(tally[u].n, tally[u].c_pass, 1);
        }
        printf("  %-28s %6d %9d %7.1f%%\n", tasks[t].family, nt, np, 100 * sum / nt);
    }
}

static int eval_main(const EvalOpts *o, const char *model_path, SampleOpts so, uint64_t seed) {
    EvalEnv E = {0};
    E.tasks_path = o->tasks_path;
    E.keep_dirs = o->keep_dirs;
    E.timeout = o->timeout;
    E.compile_timeout = o->compile_timeout;
    char err[1200];
    if (!!model_path == !!o->programs_path) eval_fail("--eval needs --model CKPT (sample programs) or --programs FILE "
                                                       "(evaluate given ones)%s%s", "", "");
    // k, and samples per task
    int ks[16], nk = 0, kmax = 0;
    for (const char *p = o->k_list; *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p || k < 1 || k > 1000 || nk == 16 || (*end && *end != ',')) eval_fail("--k expects values like 1,3 (each in [1, 1000]), got '%s'%s", o->k_list, "");
        ks[nk++] = (int)k;
        if (k > kmax) kmax = (int)k;
        p = *end ? end + 1 : end;
    }
    if (!nk) eval_fail("--k expects values like 1,3%s%s", "", "");
    int samples = o->samples ? o->samples : kmax;
    if (model_path && samples < kmax) {
        fprintf(stderr, "gen: --k %d needs at least %d samples per task, but --samples is %d\n", kmax, kmax, samples);
        exit(2);
    }
    // the corpus: DIR/SPLIT.jsonl, and the data/corpus binary
    {
        char tmp[4096];
        if (!realpath(o->tasks_path, tmp)) eval_fail("%s: %s", o->tasks_path, strerror(errno));
        char *slash = strrchr(tmp, '/');
        const char *base = slash + 1;
        size_t bl = strlen(base);
        if (bl < 7 || strcmp(base + bl - 6, ".jsonl") || bl - 6 >= sizeof E.split)
            eval_fail("%s is not a corpus split file (DIR/train.jsonl, DIR/val.jsonl or DIR/test.jsonl, as make data "
                      "writes them)%s", o->tasks_path, "");
        snprintf(E.split, sizeof E.split, "%.*s", (int)(bl - 6), base);
        if (strcmp(E.split, "train") && strcmp(E.split, "val") && strcmp(E.split, "test"))
            eval_fail("%s is not a corpus split file: its name must be train.jsonl, val.jsonl or test.jsonl%s",
                      o->tasks_path, "");
        *slash = 0;
        snprintf(E.corpus_dir, sizeof E.corpus_dir, "%s", tmp[0] ? tmp : "/");
    }
    char path[4096];
    if (o->corpus) snprintf(path, sizeof path, "%s", o->corpus); else beside_exe("data/corpus", path, sizeof path);
    if (!is_executable(path) || !realpath(path, E.corpus))
        eval_fail("the corpus program %s is missing (make data/corpus builds it; --corpus PATH gives another)%s", path, "");
    if (!o->nvcc) E.have_nvcc = find_nvcc(E.nvcc, sizeof E.nvcc);
    else if (strcmp(o->nvcc, "none")) {
        if (!is_executable(o->nvcc) || !realpath(o->nvcc, E.nvcc)) eval_fail("--nvcc %s: not an executable file%s", o->nvcc, "");
        E.have_nvcc = 1;
    }
    // the runner
    if (strcmp(o->runner, "auto") && strcmp(o->runner, "gpu") && strcmp(o->runner, "emu"))
        eval_fail("--runner expects auto, gpu or emu, got '%s'%s", o->runner, "");
    int gpu_present = 0;
    if (strcmp(o->runner, "emu")) {
        char *argv[] = {"nvidia-smi", "-L", NULL};
        CusetRunResult r;
        cuset_run_limited(argv, NULL, 30, NULL, NULL, &r);
        gpu_present = r.status == CUSET_RUN_EXITED && r.exit_code == 0;
    }
    if (!strcmp(o->runner, "gpu") && !gpu_present) eval_fail("--runner gpu: no GPU (nvidia-smi -L fails)%s%s", "", "");
    E.use_gpu = gpu_present && E.have_nvcc;
    if (!strcmp(o->runner, "gpu") && !E.have_nvcc) eval_fail("--runner gpu needs nvcc (on PATH or /usr/local/cuda/bin)%s%s", "", "");
    if (!E.use_gpu) {
        if (o->emu) snprintf(path, sizeof path, "%s", o->emu); else beside_exe("emu/nvcc-emu", path, sizeof path);
        if (!is_executable(path) || !realpath(path, E.emu))
            eval_fail("no GPU, and the CPU emulator %s is missing (make emu/nvcc-emu builds it; --emu PATH gives "
                      "another)%s", path, "");
    }
    // tasks and programs
    EvalTask *tasks = eval_load_tasks(o->tasks_path);
    int ntasks = (int)arrlen(tasks);
    if (o->first >= ntasks) {
        fprintf(stderr, "gen: %s holds %d tasks; --first %d is past the end\n", o->tasks_path, ntasks, o->first);
        exit(2);
    }
    int last = o->count > 0 && o->first + o->count < ntasks ? o->first + o->count : ntasks; // tasks [first, last)
    EvalProgram *given = o->programs_path ? eval_load_programs(o->programs_path, ntasks) : NULL;
    // the model
    CusetGPT m;
    CusetTokenizer tk = {0};
    CusetKVCache kv = {0};
    CusetProbId *work = NULL;
    if (model_path) {
        CusetCheckpointInfo info;
        cuset_tok_init(&tk);
        if (cuset_checkpoint_load(model_path, &m, NULL, &tk, 0, &info, err, sizeof err)) { fprintf(stderr, "gen: %s\n", err); return 1; }
        if (!info.has_tokenizer) eval_fail("%s has no tokenizer (trained on token ids): it cannot write programs%s", model_path, "");
        if (samples > 1000) eval_fail("--samples is at most 1000 (sample seeds are seed + 1000 x task + sample)%s%s", "", "");
        if (samples > 1 && so.temperature == 0)
            fprintf(stderr, "gen: note: --temperature 0 is greedy, so the %d samples of a task are all the same\n", samples);
        cuset_kv_init(&kv, &m.cfg);
        use_device(&m);
        work = (CusetProbId *)calloc(m.cfg.vocab_size, sizeof *work);
        so.stop = CUSET_TOK_EOS;
    }
    // the results file and the private directory
    char results_default[4200];
    const char *results_path = o->results_path;
    if (!results_path) {
        snprintf(results_default, sizeof results_default, "%s.eval.jsonl", model_path ? model_path : o->programs_path);
        results_path = results_default;
    }
    FILE *rf = fopen(results_path, "w");
    if (!rf) eval_fail("%s: cannot create: %s", results_path, strerror(errno));
    E.root = cuset_make_temp_dir("cuset_eval", err, sizeof err);
    if (!E.root) eval_fail("%s%s", err, "");
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    const char *compiler = E.have_nvcc ? "nvcc -arch=sm_90" : "none (no nvcc: the emulator's build is the compilation check)";
    fprintf(stderr, "eval: %s tasks %d..%d of %d; compiler %s; runner %s; work in %s\n", o->tasks_path, o->first, last - 1,
            ntasks, compiler, E.use_gpu ? "GPU" : E.emu, E.root);

    // evaluate, task by task
    TaskTally *tally = (TaskTally *)calloc(ntasks, sizeof *tally);
    int counts[ST_COUNT] = {0}, done = 0, evaluated_tasks = 0, total = 0, compiled = 0;
    if (given) { for (int i = 0; i < (int)arrlen(given); i++) total += given[i].task >= o->first && given[i].task < last; }
    else total = (last - o->first) * samples;
    double t0 = cuset_time();
    for (int t = o->first; t < last; t++) {
        int todo = 0;
        if (given) { for (int i = 0; i < (int)arrlen(given); i++) todo += given[i].task == t; }
        else todo = samples;
        if (!todo) continue;
        char taskdir[4200];
        char name[64];
        snprintf(name, sizeof name, "task-%d", t);
        join(taskdir, sizeof taskdir, E.root, name);
        if (eval_materialize(&E, t, taskdir, err, sizeof err)) {
            fprintf(stderr, "gen: %s\n", err);
            cuset_remove_tree(E.root);
            exit(1);
        }
        int *prompt = NULL;
        if (model_path) {
            arrput(prompt, CUSET_TOK_PROMPT);
            cuset_tok_encode(&tk, tasks[t].prompt, tasks[t].prompt_len, &prompt);
            arrput(prompt, CUSET_TOK_TARGET);
            if ((int)arrlen(prompt) >= m.cfg.max_seq_len) {
                fprintf(stderr, "gen: task %d's prompt is %d tokens, but the model's context is %d\n", t,
                        (int)arrlen(prompt), m.cfg.max_seq_len);
                cuset_remove_tree(E.root);
                exit(2);
            }
        }
        evaluated_tasks++;
        for (int s = 0, gi = 0; s < todo; s++) {
            EvalProgram p = {t, s, 0, 0, NULL, 0};
            char *text = NULL; // stb_ds, a sampled program
            if (given) {
                while (given[gi].task != t) gi++;
                p = given[gi++];
            } else {
                p.has_seed = 1;
                p.seed = seed + 1000ull * (uint64_t)t + (uint64_t)s;
                SampleOpts so2 = so;
                if (so2.max_tokens <= 0) so2.max_tokens = m.cfg.max_seq_len; // to the end of the context
                sample_completion(&m, &tk, prompt, (int)arrlen(prompt), &so2, p.seed, NULL, &text, &kv, work);
                p.text = text;
                p.len = arrlenu(text);
            }
            char dir[4300];
            snprintf(name, sizeof name, "task-%d-sample-%d", t, s);
            join(dir, sizeof dir, E.root, name);
            EvalResult res;
            if (mkdir(dir, 0700)) {
                memset(&res, 0, sizeof res);
                res.status = ST_ERROR;
                res.exit_code = -1;
                snprintf(res.detail, sizeof res.detail, "cannot make a directory for the program: %s", strerror(errno));
            } else {
                eval_program(&E, taskdir, dir, p.text ? p.text : "", p.len, &res);
            }
            if (!E.keep_dirs) cuset_remove_tree(dir);
            write_result_line(rf, &tasks[t], &p, &res);
            arrfree(text);
            TaskTally *ty = &tally[t];
            ty->n++;
            ty->c_compile += res.compile_ok;
            ty->c_pass += res.status == ST_PASS;
            ty->n_unsupported += res.status == ST_UNSUPPORTED;
            counts[res.status]++;
            compiled += res.compile_ok;
            done++;
            double el = cuset_time() - t0;
            fprintf(stderr, "eval: task %d/%d %s (%s) sample %d/%d: %s (%.1f s) | %.2f samples/s | passed %d, compiled %d of %d\n",
                    t - o->first + 1, last - o->first, tasks[t].id, tasks[t].family, s + 1, todo, status_names[res.status],
                    res.seconds, done / (el > 0 ? el : 1), counts[ST_PASS], compiled, done);
        }
        arrfree(prompt);
        if (!E.keep_dirs) cuset_remove_tree(taskdir);
    }
    fclose(rf);
    if (!E.keep_dirs) cuset_remove_tree(E.root);
    if (!done) {
        fprintf(stderr, "gen: no program to evaluate for tasks %d..%d (check --first, --count and the indexes in %s)\n",
                o->first, last - 1, o->programs_path ? o->programs_path : "");
        exit(2);
    }

    // the report
    printf("eval: %s, %d tasks (of tasks %d..%d)\n", o->tasks_path, evaluated_tasks, o->first, last - 1);
    if (model_path)
        printf("programs: sampled from %s, %d per task (temperature %g, top-k %d, top-p %g, seed %llu)\n", model_path,
               samples, so.temperature, so.top_k, so.top_p, (unsigned long long)seed);
    else
        printf("programs: %d from %s\n", done, o->programs_path);
    printf("compilation check: %s\n", compiler);
    printf("runs: %s%s, %g s limit\n", E.use_gpu ? "on the GPU (nvcc's binary)" : "on the CPU emulator ", E.use_gpu ? "" : E.emu,
           E.timeout);
    print_pass_at_k("compilation ", 0, tally, o->first, last, ks, nk, evaluated_tasks);
    print_pass_at_k("functional  ", 1, tally, o->first, last, ks, nk, evaluated_tasks);
    if (counts[ST_UNSUPPORTED]) // the same without the programs the emulator cannot run
        print_pass_at_k("functional, unsupported left out:", 2, tally, o->first, last, ks, nk, evaluated_tasks);
    printf("outcomes of %d programs:", done);
    for (int s = 0; s < ST_COUNT; s++) printf(" %s %d%s", status_names[s], counts[s], s + 1 < ST_COUNT ? "," : "\n");
    if (!E.use_gpu)
        printf("(unsupported: the emulator does not model a feature the program uses, or cannot build a program nvcc "
               "compiles; counted as not passing; the line 'unsupported left out' drops them)\n");
    print_family_table(tasks, tally, o->first, last);
    printf("results: %s\n", results_path);
    if (E.keep_dirs) printf("work directories kept in %s\n", E.root);
    for (int t = 0; t < ntasks; t++) { free(tasks[t].prompt); free(tasks[t].reference); free(tasks[t].id); free(tasks[t].family); }
    arrfree(tasks);
    for (int i = 0; i < (int)arrlen(given); i++) free(given[i].text);
    arrfree(given);
    free(tally);
    free(E.root);
    if (model_path) { cuset_kv_free(&kv); free(work); cuset_tok_free(&tk); cuset_gpt_free(&m); }
    return 0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt = NULL, *prompt_file = NULL, *prompt_ids = NULL, *prompt_jsonl = NULL;
    int info_only = 0, max_tokens = 0, top_k = 0, stop = -2, index = 0, show_prompt = 0;
    EvalOpts ev = {.k_list = "1,3", .runner = "auto", .timeout = 30, .compile_timeout = 120};
    float temperature = 0.8f, top_p = 1.0f;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) { fputs(usage_text, stdout); return 0; }
        if (!strcmp(k, "--info")) { info_only = 1; continue; }
        if (!strcmp(k, "--show-prompt")) { show_prompt = 1; continue; }
        if (!strcmp(k, "--keep-dirs")) { ev.keep_dirs = 1; continue; }
        if (strncmp(k, "--", 2) != 0) fail("unexpected argument ", k);
        if (i + 1 >= argc) fail("missing value for ", k);
        const char *v = argv[++i];
        if (!strcmp(k, "--model")) model_path = v;
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
        else if (!strcmp(k, "--runner")) ev.runner = v;
        else if (!strcmp(k, "--corpus")) ev.corpus = v;
        else if (!strcmp(k, "--emu")) ev.emu = v;
        else if (!strcmp(k, "--nvcc")) ev.nvcc = v;
        else fail("unknown option ", k);
    }
    if (ev.tasks_path) {
        if (prompt || prompt_file || prompt_ids || prompt_jsonl || info_only)
            fail("--eval samples its own prompts: drop --prompt, --prompt-file, --prompt-jsonl, --prompt-ids and --info", "");
        SampleOpts so = {max_tokens, temperature, top_k, top_p, stop};
        return eval_main(&ev, model_path, so, seed);
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
    if (cuset_checkpoint_load(model_path, &m, NULL, &tk, 0, &info, err, sizeof err)) {
        fprintf(stderr, "gen: %s\n", err);
        return 1;
    }
    const CusetConfig *c = &m.cfg;
    if (info_only) {
        printf("%s: %d layers, %d heads, %d channels, context %d, vocabulary %d (padded %d), %zu parameters\n", model_path,
               c->n_layer, c->n_head, c->n_embd, c->max_seq_len, c->vocab_size, c->padded_vocab_size, m.num_params);
        printf("trained %d steps with %s; optimizer state %s; ASFT reference %s; tokenizer %s\n", info.step,
               cuset_objective_names[info.settings.obj.kind % CUSET_OBJ_COUNT], info.has_optimizer ? "yes" : "no",
               info.has_reference ? "yes" : "no", info.has_tokenizer ? "yes" : "no (token ids only)");
        if (cuset_checkpoint_old_windows(&info))
            printf("checkpoint version 1: CuSeT's windows before the eq. 5 correction (a target shorter than the window "
                   "was one window)\n");
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
#ifdef CUSET_CUDA
    cuset_cuda_decoder_free(gpu_decoder);
#endif
    arrfree(tokens);
    free(work);
    cuset_tok_free(&tk);
    cuset_gpt_free(&m);
    return 0;
}
