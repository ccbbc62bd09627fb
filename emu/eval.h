/* emu/eval.h - evaluation of generated CUDA programs: compile, run, compare, pass@k.

   What `gen --eval` does, as a header that can be copied with data/textdata.h (it uses its
   JSON-lines reader and writer and cuset_read_file, nothing of the model):
   - cuset_pass_at_k: the unbiased pass@k estimator of the paper's evaluation;
   - cuset_run_limited: a child process in its own process group, under resource limits
     and a wall-clock timeout, its whole group killed afterwards;
   - small file helpers: private temporary directories, copies, removal;
   - cuset_eval_main: for each task of a corpus split file (data/corpus's DIR/SPLIT.jsonl)
     and each program (sampled through a CusetEvalSampler, or read from a --programs file):
     a private directory with prog.cu and the task's inputs, nvcc (when present) for the
     compilation check, a run on the GPU or under the CPU emulator emu/nvcc-emu, then
     data/corpus --compare against the expected outputs; one JSON line per program and a
     report of compilation and functional pass@k, outcomes and pass@1 per family. Every
     compilation, run and comparison happens in the sandbox of emu/sandbox.h (bubblewrap),
     or, where there is none, not at all unless o->unsafe_no_sandbox says so;
   - its command line: cuset_eval_option reads gen's --eval flags into CusetEvalOpts,
     cuset_eval_usage is their part of gen --help.
   Errors: the library functions return -1 with the message in err (cuset__err of
   cuset.h); cuset_eval_main, a driver like a main, exits with "gen: ..." on bad options
   or input (cuset__eval_fail).

   stb style: include it anywhere for the declarations; in exactly one C file write
       #define CUSET_EVAL_IMPLEMENTATION
       #include "emu/eval.h"
   after data/textdata.h's implementation (CUSET_TEXTDATA_IMPLEMENTATION).
   Linux (prctl's PR_SET_PDEATHSIG; bubblewrap through emu/sandbox.h) and POSIX (fork,
   execv, setpgid, setrlimit, waitpid). Messages start with
   CUSET_EVAL_WHO ("gen" unless defined before the include). */
#ifndef CUSET_EVAL_H
#define CUSET_EVAL_H

#include <stddef.h>
#include <stdint.h>
#include "../data/textdata.h" // JSON lines in and out, cuset_read_file
#include "sandbox.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------------------
// pass@k, the unbiased estimator over n samples with c successes (README, "Evaluation"):
//     1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k / i)
// computed as that product (no binomials, so no overflow for any n); exactly 1.0 when
// n - c < k (every k-subset holds a success). Invalid arguments - n < 1, c < 0, c > n,
// k < 1 or k > n (k samples cannot be drawn from n) - return NAN: callers check with isnan.
double cuset_pass_at_k(int n, int c, int k);

// Runs argv (argv[0] as given when it holds a '/', else the first executable PATH/argv[0],
// run with execv) as a child in its own process group,
// in directory dir (NULL: the current one), with stdin from /dev/null and stdout/stderr
// to out_path/err_path (created or truncated; NULL: /dev/null), under resource limits
// (CusetRunLimits), and kills the whole group with SIGKILL when timeout_s of wall-clock
// time pass (<= 0: no limit). Every other descriptor is closed in the child. Returns
// r->status (also when it is CUSET_RUN_ERROR: the child could not be started - no such
// program, a dir or output file that cannot be opened - with the reason in r->error).
// After the child ends, its group is killed too, so no grandchild outlives it.
typedef enum {
    CUSET_RUN_EXITED = 0,  // exited by itself: exit_code holds the status
    CUSET_RUN_SIGNALED,    // killed by signal `signal` (SIGSEGV, SIGABRT, SIGXCPU, SIGXFSZ, ...)
    CUSET_RUN_TIMEOUT,     // still running at timeout_s: the group was killed (signal = SIGKILL)
    CUSET_RUN_ERROR,       // could not be started
} CusetRunStatus;
typedef struct {
    CusetRunStatus status;
    int exit_code;   // CUSET_RUN_EXITED: the exit status; -1 otherwise
    int signal;      // CUSET_RUN_SIGNALED, CUSET_RUN_TIMEOUT: the signal; 0 otherwise
    int timed_out;   // status == CUSET_RUN_TIMEOUT
    double seconds;  // wall-clock time from fork to the end of the child
    int disk_full;   // the disk watch killed it (status CUSET_RUN_SIGNALED, signal SIGKILL)
    char error[256]; // CUSET_RUN_ERROR: why
} CusetRunResult;
// Resource limits for the child (setrlimit, soft = hard). 0 leaves a limit as inherited.
typedef struct {
    double cpu_s;        // RLIMIT_CPU in seconds (rounded up); SIGXCPU past it
    uint64_t file_bytes; // RLIMIT_FSIZE: largest file the child may write; SIGXFSZ past it
    uint64_t as_bytes;   // RLIMIT_AS: address space (leave 0 for AddressSanitizer builds)
    int nofile;          // RLIMIT_NOFILE: open descriptors
    uint64_t disk_bytes; // the disk watch: kill the group when it has taken more than this
                         // of the disk while it runs (bytes, plus 4 KiB per file); 0: no watch
    int disk_in_dir;     // 1: count what the tree at dir holds (right for a sandboxed child,
                         // which can write nowhere else on disk); 0: the free space of the
                         // file system holding dir (then others' writes count too)
} CusetRunLimits;        // RLIMIT_CORE is always 0: no core files
// The defaults of cuset_run_limited: CPU time ceil(timeout_s) x the number of CPUs + 1 s (the
// wall clock is the real limit; this is a backstop), files 256 MiB, address space 8 GiB,
// 256 descriptors.
CusetRunLimits cuset_run_default_limits(double timeout_s);
int cuset_run_limited(char *const argv[], const char *dir, double timeout_s, const char *out_path,
                      const char *err_path, CusetRunResult *r);
int cuset_run_limited_ex(char *const argv[], const char *dir, double timeout_s, const char *out_path,
                         const char *err_path, const CusetRunLimits *limits, CusetRunResult *r);
// The process group of the child being run now (0 when none), so that a signal handler
// can kill it: if (cuset_run_current_pgid) kill(-cuset_run_current_pgid, SIGKILL).
extern volatile int cuset_run_current_pgid;

// A private temporary directory: mkdtemp of $TMPDIR/PREFIX.XXXXXX ($TMPDIR unset or
// empty: /tmp), mode 0700. Returns a malloc'd path, or NULL with a message.
char *cuset_make_temp_dir(const char *prefix, char *err, size_t errlen);
// Removes path and everything under it (symbolic links are removed, never followed).
// Returns 0, or -1 when something could not be removed (it carries on with the rest).
int cuset_remove_tree(const char *path);
// Copies file src to dst (created or truncated; a new file gets mode 0666 less the umask).
// 0, or -1 with a message.
int cuset_copy_file(const char *src, const char *dst, char *err, size_t errlen);
// Writes len bytes to path (created or truncated). 0, or -1 with a message.
int cuset_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);
// The first max_lines lines of file path, at most cap - 1 bytes, into buf (always
// NUL-terminated; "" when the file is missing or empty). Returns buf.
char *cuset_file_head(const char *path, int max_lines, char *buf, size_t cap);


// ---------------------------------------------------------------------------------------
// The harness (gen --eval). Options, as gen's flags give them (cuset_eval_usage documents each).
typedef struct {
    const char *tasks_path, *programs_path, *results_path, *corpus, *emu, *nvcc, *runner, *k_list;
    int samples, first, count, keep_dirs;
    int unsafe_no_sandbox; // run the programs without isolation (only where the user says so)
    double timeout, compile_timeout;
    double disk_mib;       // what each compilation or run may take of the disk (0: no watch)
    int jobs;              // programs compiled and run at once (0 or 1: one at a time)
    const char *cache_dir; // results kept by task and program text, reused on a rerun (NULL: none)
    const char *summary_path; // the numbers of the report as one JSON object (NULL: none)
} CusetEvalOpts;
// The options' defaults (gen --help gives them).
CusetEvalOpts cuset_eval_defaults(void);
// Reads one of the harness's flags into o: flag is an argument, value the one after it
// (NULL when there is none). Returns how many arguments it took (1: a switch such as
// --keep-dirs, 2: a flag and its value), 0 when flag is not the harness's, or -1 with a
// message in err for a missing or bad value.
int cuset_eval_option(CusetEvalOpts *o, const char *flag, const char *value, char *err, size_t errlen);
// The part of gen --help on --eval: what the harness does and each of its options.
extern const char cuset_eval_usage[];

// Where programs come from when there is no --programs file: a model. open is called once,
// after the options and tasks are checked (return non-zero to stop: the harness returns 1);
// then fits for each task evaluated, before any is sampled (0 with why in `why`: the run
// stops, naming the tasks, exit 2), so that sample is called only for prompts that fit;
// sample writes sample program number s of task `task` (prompt: its prompt's bytes) with
// the given seed into *program (an stb_ds char array, appended to); non-zero with a
// message in err stops the run (exit 2). seed: sample s of task t uses seed + 1000 t + s.
typedef struct {
    void *ctx;
    int (*open)(void *ctx, int samples);
    int (*fits)(void *ctx, int task, const char *prompt, size_t len, char *why, size_t whylen);
    int (*sample)(void *ctx, int task, const char *prompt, size_t len, uint64_t seed, char **program, char *err,
                  size_t errlen);
    // Optional: called before sampling in forked processes (--jobs > 1); returns 0 when
    // the sampler cannot be forked (a model on a GPU), else readies it (one thread each).
    int (*prepare_fork)(void *ctx);
    const char *name;    // the model, for the report and the default results path NAME.eval.jsonl
    char settings[160];  // the sampling settings, for the report
    uint64_t seed;       // at most CUSET_EVAL_SEED_MAX, as every sample's seed must be
} CusetEvalSampler;
// The largest sampling seed: 2^53 - 1, the largest whole number a command line's number (a
// double) holds exactly, so that gen --seed takes every sample's seed and draws it again.
#define CUSET_EVAL_SEED_MAX 9007199254740991ull

// What became of a program; the results file writes the name.
enum { CUSET_EVAL_PASS, CUSET_EVAL_COMPILE_ERROR, CUSET_EVAL_UNSUPPORTED, CUSET_EVAL_CRASH, CUSET_EVAL_TIMEOUT,
       CUSET_EVAL_WRONG_ANSWER, CUSET_EVAL_ERROR, CUSET_EVAL_NSTATUS };
extern const char *const cuset_eval_status_names[CUSET_EVAL_NSTATUS];

// Runs the whole evaluation (sampler NULL: the programs of o->programs_path) and prints
// the report to stdout, progress to stderr. Returns 0, or 1 when sampler->open failed;
// exits 2 (bad options or files) or 1 (the corpus failed) with a message otherwise.
int cuset_eval_main(const CusetEvalOpts *o, const CusetEvalSampler *sampler);

#ifdef __cplusplus
}
#endif
#endif // CUSET_EVAL_H

#ifdef CUSET_EVAL_IMPLEMENTATION
#ifndef CUSET_EVAL_IMPLEMENTATION_DONE
#define CUSET_EVAL_IMPLEMENTATION_DONE

#ifndef CUSET_TEXTDATA_IMPLEMENTATION_DONE
#error "emu/eval.h: its implementation needs data/textdata.h's (and those it needs) before it"
#endif

#ifndef CUSET_EVAL_WHO
#define CUSET_EVAL_WHO "gen"
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>
#define CUSET_SANDBOX_IMPLEMENTATION
#include "sandbox.h"

// ---- the options, as gen's flags ------------------------------------------------------------

const char cuset_eval_usage[] =
    "\n"
    "usage: gen --model FILE --eval TASKS.jsonl [options]      sample programs and test them\n"
    "       gen --eval TASKS.jsonl --programs PROGS.jsonl [options]   test given programs\n"
    "Compiles (nvcc, when on the PATH or in /usr/local/cuda/bin: for the GPU present, else for\n"
    "sm_90) and runs (on the GPU, or without one under the CPU emulator emu/nvcc-emu) each\n"
    "program of each task of a corpus split file (DIR/test.jsonl from make data), compares its\n"
    "outputs with data/corpus --compare, and reports compilation and functional pass@k (the\n"
    "unbiased estimator, averaged over tasks), the outcomes (pass, compile_error, unsupported,\n"
    "crash, timeout, wrong_answer, error) and functional pass@1 per family.\n"
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
    "  --disk-limit MIB      what each compilation or run may write to the disk: it is stopped\n"
    "                        past it (unsandboxed: when the disk's free space falls by more) [1024]\n"
    "  --runner auto|gpu|emu where programs run: auto = the GPU when nvidia-smi -L works and a\n"
    "                        test program runs there, else the emulator (gpu: else stop) [auto]\n"
    "  --corpus PATH         the corpus program        [data/corpus beside the gen binary]\n"
    "  --emu PATH            the emulator's compiler   [emu/nvcc-emu beside the gen binary]\n"
    "  --nvcc PATH|none      the CUDA compiler; none: the emulator's build is the compilation\n"
    "                        check                      [nvcc on the PATH, /usr/local/cuda/bin]\n"
    "  --jobs N              programs compiled and run at once                [1]\n"
    "  --cache DIR           keep each result in DIR, keyed by the task, the program's text and\n"
    "                        how it is built and run; a program met again is not rerun\n"
    "  --summary FILE        the numbers as JSON: pass@k overall, for parameter combinations held\n"
    "                        out of training and the others (\"seen\"), per family and per task\n"
    "  --keep-dirs           keep the work directories ($TMPDIR/cuset_eval.XXXXXX) for a look\n"
    "  --unsafe-no-sandbox   compile and run the programs WITHOUT ISOLATION, with your user's\n"
    "                        rights over your files, processes and network (for a machine\n"
    "                        where bubblewrap cannot make a sandbox)\n"
    "The report goes to stdout, progress to stderr. Each compilation and run happens in a\n"
    "sandbox (emu/sandbox.h: bubblewrap; only its private directory writable, the system\n"
    "read-only, the rest of the file system hidden, no network, its own PID namespace, not\n"
    "root), with stdin from /dev/null, its output in files, and limits on time, CPU time,\n"
    "processes (256), file size (256 MiB), address space (8 GiB: compilers, and programs\n"
    "under the emulator), open files and disk.\n"
    "Without a working bubblewrap gen refuses to run programs unless --unsafe-no-sandbox.\n";

CusetEvalOpts cuset_eval_defaults(void) {
    CusetEvalOpts o = {.runner = "auto", .k_list = "1,3", .timeout = 30, .compile_timeout = 120, .disk_mib = 1024};
    return o;
}

int cuset_eval_option(CusetEvalOpts *o, const char *flag, const char *value, char *err, size_t errlen) {
    if (!strcmp(flag, "--keep-dirs")) return o->keep_dirs = 1;
    if (!strcmp(flag, "--unsafe-no-sandbox")) return o->unsafe_no_sandbox = 1;
    const struct { const char *flag; const char **to; } texts[] = {
        {"--eval", &o->tasks_path}, {"--programs", &o->programs_path}, {"--results", &o->results_path},
        {"--k", &o->k_list}, {"--runner", &o->runner}, {"--corpus", &o->corpus}, {"--emu", &o->emu},
        {"--nvcc", &o->nvcc}, {"--cache", &o->cache_dir}, {"--summary", &o->summary_path}};
    const struct { const char *flag; int *to_int; double *to, lo, hi; } numbers[] = {
        {"--samples", &o->samples, NULL, 1, 1000}, {"--first", &o->first, NULL, 0, 1e9},
        {"--count", &o->count, NULL, 1, 1e9}, {"--jobs", &o->jobs, NULL, 1, 256},
        {"--timeout", NULL, &o->timeout, 0.01, 86400}, {"--compile-timeout", NULL, &o->compile_timeout, 1, 86400},
        {"--disk-limit", NULL, &o->disk_mib, 1, 1 << 24}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        if (strcmp(flag, texts[i].flag)) continue;
        if (!value) return cuset__err(err, errlen, "missing value for %s", flag);
        *texts[i].to = value;
        return 2;
    }
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        if (strcmp(flag, numbers[i].flag)) continue;
        if (!value) return cuset__err(err, errlen, "missing value for %s", flag);
        double x = 0;
        int whole = numbers[i].to_int != NULL; // a count
        if (cuset_parse_number(flag, value, numbers[i].lo, numbers[i].hi, whole, &x, err, errlen)) return -1;
        if (numbers[i].to_int) *numbers[i].to_int = (int)x; else *numbers[i].to = x;
        return 2;
    }
    return 0;
}

// ---- pass@k and the runner ------------------------------------------------------------------

// 1 - C(n-c, k) / C(n, k) as 1 - prod_{i=n-c+1}^{n} (1 - k/i): C(n-c,k)/C(n,k) is the
// chance that k samples drawn without replacement all miss the c successes.
double cuset_pass_at_k(int n, int c, int k) {
    if (n < 1 || c < 0 || c > n || k < 1 || k > n) return NAN;
    if (n - c < k) return 1.0;
    double miss = 1.0;
    for (int i = n - c + 1; i <= n; i++) miss *= 1.0 - (double)k / i;
    return 1.0 - miss;
}

volatile int cuset_run_current_pgid = 0;

CusetRunLimits cuset_run_default_limits(double timeout_s) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    CusetRunLimits l = {.file_bytes = 256ull << 20, .as_bytes = 8ull << 30, .nofile = 256};
    if (timeout_s > 0) l.cpu_s = ceil(timeout_s) * (ncpu > 0 ? ncpu : 1) + 1;
    return l;
}

int cuset_run_limited(char *const argv[], const char *dir, double timeout_s, const char *out_path,
                      const char *err_path, CusetRunResult *r) {
    CusetRunLimits l = cuset_run_default_limits(timeout_s);
    return cuset_run_limited_ex(argv, dir, timeout_s, out_path, err_path, &l, r);
}

// What a child that could not exec tells its parent through the pipe: the step and errno.
// (After fork only async-signal-safe calls are allowed: the parent may have threads.)
typedef struct { int step, err; } cuset__child_fail;
static const char *const cuset__child_steps[] = {"start", "open /dev/null", "open", "open", "chdir to", "setrlimit",
                                                  "exec"};

__attribute__((noreturn))
static void cuset__child_exit(int fd, int step) {
    cuset__child_fail f = {step, errno};
    ssize_t w = write(fd, &f, sizeof f);
    (void)w;
    _exit(127);
}

static void cuset__setlimit(int fd, int resource, uint64_t v) {
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)v;
    if (setrlimit(resource, &rl) == 0) return;
    // a hard limit below ours (inherited) is kept: lowering never fails
    if (getrlimit(resource, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)v) return;
    cuset__child_exit(fd, 5);
}

// Waiting for a child needs SIGCHLD's default action: one ignored by whoever started us
// (SIG_IGN survives exec) has the kernel reap children itself, and waitpid then fails with
// ECHILD instead of giving their exit status.
static void cuset__wait_for_children(void) { signal(SIGCHLD, SIG_DFL); }

// argv[0] as execv needs it: as given when it holds a '/' (then relative to the directory
// the command runs in), else the first executable regular file PATH/argv[0], made absolute
// (the command may run in another directory than a relative PATH entry meant). 0, or -1
// when there is none.
static int cuset__find_program(const char *name, char *out, size_t cap) {
    if (strchr(name, '/')) { snprintf(out, cap, "%s", name); return 0; }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; ; ) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int k = snprintf(out, cap, "%.*s%s%s", (int)n, p, n ? "/" : "", name);
        struct stat st;
        if (k > 0 && (size_t)k < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) {
            char abs[PATH_MAX];
            if (out[0] != '/' && realpath(out, abs)) snprintf(out, cap, "%s", abs);
            return 0;
        }
        if (!e) return -1;
        p = e + 1;
    }
}

// What the file system holding dir (NULL: the working directory) has free: bytes, plus
// 4 KiB per free inode. 0 when it cannot tell.
static uint64_t cuset__disk_free(const char *dir) {
    struct statvfs v;
    if (statvfs(dir ? dir : ".", &v)) return 0;
    return (uint64_t)v.f_bavail * v.f_frsize + (uint64_t)v.f_favail * 4096;
}
// The sum of of(entry) over path and, when it is a directory, every entry below it (links
// are not followed). reopen: a directory its owner closed is opened again (as
// cuset_remove_tree does), so nothing in it hides.
static uint64_t cuset__tree_sum(const char *path, uint64_t (*of)(const char *path, const struct stat *st), int reopen) {
    struct stat st;
    if (lstat(path, &st)) return 0;
    uint64_t n = of(path, &st);
    if (!S_ISDIR(st.st_mode)) return n;
    DIR *d = opendir(path);
    // (not chmod: a program may have put a link there since the lstat, to a file of the user)
    if (!d && reopen && !fchmodat(AT_FDCWD, path, 0700, AT_SYMLINK_NOFOLLOW)) d = opendir(path);
    if (!d) return n;
    for (struct dirent *e; (e = readdir(d));) {
        char sub[4096];
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
            n += cuset__tree_sum(sub, of, reopen);
    }
    closedir(d);
    return n;
}
// What an entry takes of the disk: allocated bytes, plus 4 KiB.
static uint64_t cuset__entry_bytes(const char *path, const struct stat *st) {
    (void)path;
    return (uint64_t)st->st_blocks * 512 + 4096;
}
// What counts against the disk watch now; its growth is what the child took.
static int64_t cuset__disk_used(const char *dir, int in_dir) {
    return in_dir ? (int64_t)cuset__tree_sum(dir ? dir : ".", cuset__entry_bytes, 1) : -(int64_t)cuset__disk_free(dir);
}

// The child of cuset_run_limited_ex: its own process group, default signals, stdin from
// /dev/null, stdout/stderr to the files, the directory, the limits, then exec. What fails
// is reported through wfd (cuset__child_exit). Never returns.
__attribute__((noreturn))
static void cuset__run_child(const char *prog, char *const argv[], const char *dir, const char *out_path,
                             const char *err_path, const CusetRunLimits *lim, int wfd, long open_max) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < 32; s++) if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL);
    int in = open("/dev/null", O_RDONLY);
    if (in < 0) cuset__child_exit(wfd, 1);
    int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) cuset__child_exit(wfd, 2);
    int err = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err < 0) cuset__child_exit(wfd, 3);
    if (dir && chdir(dir)) cuset__child_exit(wfd, 4);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) cuset__child_exit(wfd, 1);
    if (lim) {
        if (lim->cpu_s > 0) cuset__setlimit(wfd, RLIMIT_CPU, (uint64_t)ceil(lim->cpu_s));
        if (lim->file_bytes) cuset__setlimit(wfd, RLIMIT_FSIZE, lim->file_bytes);
        if (lim->as_bytes) cuset__setlimit(wfd, RLIMIT_AS, lim->as_bytes);
        if (lim->nofile > 0) cuset__setlimit(wfd, RLIMIT_NOFILE, (uint64_t)lim->nofile);
    }
    cuset__setlimit(wfd, RLIMIT_CORE, 0);
    for (int fd = 3; fd < open_max; fd++) if (fd != wfd) close(fd); // nothing of the parent's leaks
    execv(prog, argv);
    cuset__child_exit(wfd, 6);
}

// Waits, polling, until child pid ends, the time is up or it has written too much to the
// disk (then its group is killed and r says which); polls often at first, so short runs are
// timed precisely. Returns its wait status.
static int cuset__run_wait(pid_t pid, const char *dir, double timeout_s, const CusetRunLimits *lim, double t0,
                           CusetRunResult *r) {
    int st = 0, watch = lim && lim->disk_bytes;
    int64_t used0 = watch ? cuset__disk_used(dir, lim->disk_in_dir) : 0;
    watch = watch && (lim->disk_in_dir || used0 < 0); // the free space: only when statvfs answers
    long nap_ns = 200000;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) break; // cannot happen for our own child (cuset__wait_for_children)
        int late = timeout_s > 0 && cuset_time() - t0 >= timeout_s;
        int full = watch && cuset__disk_used(dir, lim->disk_in_dir) - used0 > (int64_t)lim->disk_bytes;
        if (late || full) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
            r->timed_out = late;
            r->disk_full = full && !late;
            break;
        }
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        if (nap_ns < 20000000) nap_ns *= 2;
    }
    return st;
}

int cuset_run_limited_ex(char *const argv[], const char *dir, double timeout_s, const char *out_path,
                         const char *err_path, const CusetRunLimits *lim, CusetRunResult *r) {
    cuset__wait_for_children();
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    r->status = CUSET_RUN_ERROR;
    char prog[4096];
    if (!argv || !argv[0]) { snprintf(r->error, sizeof r->error, "no program to run"); return r->status; }
    if (cuset__find_program(argv[0], prog, sizeof prog)) {
        snprintf(r->error, sizeof r->error, "%s: not found on PATH", argv[0]);
        return r->status;
    }
    long open_max = sysconf(_SC_OPEN_MAX);
    if (open_max < 0 || open_max > 65536) open_max = 65536;
    int fds[2];
    if (pipe(fds)) { snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno)); return r->status; }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    fflush(NULL); // nothing buffered twice
    double t0 = cuset_time();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->error, sizeof r->error, "fork: %s", strerror(errno));
        close(fds[0]); close(fds[1]);
        return r->status;
    }
    if (pid == 0) cuset__run_child(prog, argv, dir, out_path, err_path, lim, fds[1], open_max);
    setpgid(pid, pid); // also here, so the group exists before we may have to kill it
    cuset_run_current_pgid = pid;
    close(fds[1]);
    cuset__child_fail f;
    ssize_t got;
    do got = read(fds[0], &f, sizeof f); while (got < 0 && errno == EINTR); // 0: exec succeeded
    close(fds[0]);
    int st = 0;
    if (got == (ssize_t)sizeof f) {
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        cuset_run_current_pgid = 0;
        int step = f.step >= 1 && f.step <= 6 ? f.step : 0;
        const char *what = step == 2 ? out_path : step == 3 ? err_path : step == 4 ? dir : NULL;
        snprintf(r->error, sizeof r->error, "%s: cannot %s%s%s: %s", argv[0], cuset__child_steps[step],
                 what ? " " : "", what ? what : "", strerror(f.err));
        r->seconds = cuset_time() - t0;
        return r->status;
    }
    st = cuset__run_wait(pid, dir, timeout_s, lim, t0, r);
    r->seconds = cuset_time() - t0;
    kill(-pid, SIGKILL); // whatever it left behind in its group
    cuset_run_current_pgid = 0;
    if (r->timed_out) { r->status = CUSET_RUN_TIMEOUT; r->signal = SIGKILL; }
    else if (WIFEXITED(st)) { r->status = CUSET_RUN_EXITED; r->exit_code = WEXITSTATUS(st); }
    else if (WIFSIGNALED(st)) { r->status = CUSET_RUN_SIGNALED; r->signal = WTERMSIG(st); }
    else snprintf(r->error, sizeof r->error, "%s: unexpected wait status 0x%x", argv[0], st);
    return r->status;
}

char *cuset_make_temp_dir(const char *prefix, char *err, size_t errlen) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    size_t cap = strlen(base) + strlen(prefix) + 16;
    char *path = (char *)CUSET_CALLOC(cap, 1);
    snprintf(path, cap, "%s/%s.XXXXXX", base, prefix);
    if (!mkdtemp(path)) {
        cuset__err(err, errlen, "cannot make a temporary directory %s: %s", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

int cuset_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st)) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path) ? -1 : 0;
    int rc = 0;
    chmod(path, 0700); // a program may have taken its own permissions away
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            size_t cap = strlen(path) + strlen(e->d_name) + 2;
            char *sub = (char *)CUSET_CALLOC(cap, 1);
            snprintf(sub, cap, "%s/%s", path, e->d_name);
            if (cuset_remove_tree(sub)) rc = -1;
            free(sub);
        }
        closedir(d);
    } else rc = -1;
    return rmdir(path) ? -1 : rc;
}

int cuset_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) return cuset__err(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    size_t put = len ? fwrite(data, 1, len, f) : 0;
    int bad = put != len;
    if (fclose(f)) bad = 1;
    if (bad) return cuset__err(err, errlen, "%s: write error: %s", path, strerror(errno));
    return 0;
}

int cuset_copy_file(const char *src, const char *dst, char *err, size_t errlen) {
    unsigned char *buf;
    size_t len;
    if (cuset_read_file(src, &buf, &len, err, errlen)) return -1;
    int rc = cuset_write_file(dst, buf, len, err, errlen);
    free(buf);
    return rc;
}

char *cuset_file_head(const char *path, int max_lines, char *buf, size_t cap) {
    if (!cap) return buf;
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return buf;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\n' && ++lines == max_lines) { buf[i] = 0; break; }
        else if (buf[i] == 0) buf[i] = ' ';
    return buf;
}


// ---- the harness ----------------------------------------------------------------------------

const char *const cuset_eval_status_names[CUSET_EVAL_NSTATUS] = {"pass", "compile_error", "unsupported", "crash",
                                                                  "timeout", "wrong_answer", "error"};

typedef struct {
    char *prompt, *id, *family; // from the task's line
    size_t prompt_len;
    int heldout;   // the line's "heldout": a parameter combination that training never saw
    uint64_t key;  // a hash of the whole line (spec included): the task, for the cache
} cuset__EvalTask;

typedef struct {          // one program to evaluate
    int task, sample;
    int has_seed;
    uint64_t seed;
    char *text; size_t len;
} cuset__EvalProgram;

typedef struct {          // what became of it
    int status, compile_ok;
    int exit_code, signal; // of the program's run (-1 / 0 when it did not run or exit)
    double seconds;        // compiling and running
    char detail[700];      // the first lines of the compiler's or program's error, or compare's verdict
} cuset__EvalResult;

typedef struct {
    const char *tasks_path;
    char corpus_dir[4096], split[16];
    char corpus[4096], emu[4096], nvcc[4096];
    char arch[16];   // nvcc's -arch: the GPU's, from nvidia-smi (sm_86, sm_90, ...); sm_90 without one
    int have_nvcc, use_gpu, keep_dirs;
    uint64_t tools_stamp; // the result cache's key of the tools' files and the environment (cuset__eval_stamp_tools)
    double timeout, compile_timeout, disk_mib;
    char *root;      // the private temporary directory of this run
    CusetSandbox sb; // where every compilation and run happens (sb.isolated 0: --unsafe-no-sandbox)
} cuset__EvalEnv;

// A bad option or input: "gen: " and the message on stderr, then exit 2 (the harness is a
// driver, like a main; the library functions above return -1 with the message in err).
static void cuset__eval_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, CUSET_EVAL_WHO ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

// out = dir/name; a path longer than cap is an error.
static char *cuset__eval_join(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) cuset__eval_fail("path too long: %s/%s", dir, name);
    return out;
}

// ROOT/task-T: task t's files, materialized by data/corpus.
static char *cuset__eval_task_dir(const cuset__EvalEnv *E, int t, char *out, size_t cap) {
    char name[64];
    snprintf(name, sizeof name, "task-%d", t);
    return cuset__eval_join(out, cap, E->root, name);
}

// The compilation check, in words.
static const char *cuset__eval_compiler(const cuset__EvalEnv *E) {
    if (!E->have_nvcc) return "none (no nvcc: the emulator's build is the compilation check)";
    static char words[40];
    snprintf(words, sizeof words, "nvcc -arch=%s", E->arch);
    return words;
}

// A result before anything ran: nothing compiled, no exit code.
static void cuset__eval_result_init(cuset__EvalResult *r) {
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
}

// Gives res its verdict, status and detail (printf-style). Returns 0: nothing more to do.
__attribute__((format(printf, 3, 4)))
static int cuset__eval_verdict(cuset__EvalResult *res, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    res->status = status;
    vsnprintf(res->detail, sizeof res->detail, fmt, ap);
    va_end(ap);
    return 0;
}

// DIR/NAME beside the gen binary (/proc/self/exe), e.g. data/corpus.
static void cuset__eval_beside_exe(const char *name, char *out, size_t cap) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) { snprintf(out, cap, "%s", name); return; }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    cuset__eval_join(out, cap, exe, name);
}

static int cuset__eval_is_executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

// nvcc on PATH (absolute entries: the sandbox's rule), else /usr/local/cuda/bin/nvcc.
static int cuset__eval_find_nvcc(char *out, size_t cap) {
    if (cuset__sb_which("nvcc", out, cap) == 0) return 1;
    snprintf(out, cap, "/usr/local/cuda/bin/nvcc");
    return cuset__eval_is_executable(out);
}

// FNV-1a, 64 bits, continuing from h (0: a fresh hash).
static uint64_t cuset__eval_hash(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = (const unsigned char *)data;
    if (!h) h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

// JSON lines: the next line of buf with more than blanks, from *at on (a byte order mark at
// the start skipped, as the JSON-lines reader does), as [*start, *end); advances *at and
// counts *line_no. 0 at the end.
static int cuset__eval_next_line(const unsigned char *buf, size_t len, size_t *at, size_t *line_no, size_t *start,
                                 size_t *end) {
    if (*at == 0 && len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) *at = 3;
    while (*at < len) {
        size_t i = *at, j = i, k = i;
        while (j < len && buf[j] != '\n') j++;
        ++*line_no;
        *at = j + 1;
        while (k < j && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\r')) k++;
        if (k < j) { *start = i, *end = j; return 1; }
    }
    return 0;
}

// Tasks: the prompt from the strict JSON-lines reader; id, family and spec
// (which marks a corpus split file) from each line.
static cuset__EvalTask *cuset__eval_load_tasks(const char *path) {
    char err[600];
    unsigned char *buf;
    size_t len;
    if (cuset_read_file(path, &buf, &len, err, sizeof err)) cuset__eval_fail("%s", err);
    CusetTextSample *s = NULL;
    if (cuset_jsonl_parse((const char *)buf, len, path, &s, err, sizeof err)) cuset__eval_fail("%s", err);
    cuset__EvalTask *tasks = NULL;
    size_t line_no = 0;
    for (size_t at = 0, i, j; cuset__eval_next_line(buf, len, &at, &line_no, &i, &j);) { // sample t's line
        size_t t = arrlenu(tasks);
        cuset__EvalTask task = {s[t].prompt, NULL, NULL, s[t].prompt_len, 0, cuset__eval_hash(buf + i, j - i, 0)};
        free(s[t].completion); // the reference program: the corpus materializes what the comparison needs
        char type = 0;
        int found = cuset_json_member((const char *)buf + i, j - i, path, line_no, "spec", &type, NULL, NULL, NULL,
                                      err, sizeof err);
        if (found < 0) cuset__eval_fail("%s", err);
        if (!found || type != 'o')
            cuset__eval_fail("%s:%zu: the task has no \"spec\" object: --eval needs a split file written by "
                             "data/corpus (DIR/test.jsonl after make data), whose tasks carry their test spec",
                             path, line_no);
        cuset_json_member((const char *)buf + i, j - i, path, line_no, "id", &type, &task.id, NULL, NULL, err, sizeof err);
        cuset_json_member((const char *)buf + i, j - i, path, line_no, "family", &type, &task.family, NULL, NULL, err,
                          sizeof err);
        double held = 0;
        if (cuset_json_member((const char *)buf + i, j - i, path, line_no, "heldout", &type, NULL, NULL, &held, err,
                              sizeof err) == 1 && type == 't')
            task.heldout = 1;
        if (!task.id) task.id = strdup("");
        if (!task.family) task.family = strdup("?");
        arrput(tasks, task);
    }
    arrfree(s); // the prompts now belong to the tasks
    free(buf);
    return tasks;
}

// --programs: {"index": K, "program": "..."} per line.
static cuset__EvalProgram *cuset__eval_load_programs(const char *path, int ntasks) {
    char err[600];
    unsigned char *buf;
    size_t len;
    if (cuset_read_file(path, &buf, &len, err, sizeof err)) cuset__eval_fail("%s", err);
    cuset__EvalProgram *progs = NULL;
    int *per_task = (int *)CUSET_CALLOC(ntasks, sizeof(int));
    size_t line_no = 0;
    for (size_t at = 0, i, j; cuset__eval_next_line(buf, len, &at, &line_no, &i, &j);) {
        const char *line = (const char *)buf + i;
        char type = 0;
        double index = -1;
        cuset__EvalProgram p = {0};
        int found = cuset_json_member(line, j - i, path, line_no, "index", &type, NULL, NULL, &index, err, sizeof err);
        if (found < 0) cuset__eval_fail("%s", err);
        if (!found || type != 'n' || index != floor(index) || index < 0 || index >= ntasks)
            cuset__eval_fail("%s:%zu: \"index\" must be a task index in [0, %d) of the tasks file", path, line_no,
                             ntasks);
        found = cuset_json_member(line, j - i, path, line_no, "program", &type, &p.text, &p.len, NULL, err, sizeof err);
        if (found < 1 || type != 's') cuset__eval_fail("%s:%zu: every line needs a \"program\" string", path, line_no);
        p.task = (int)index;
        p.sample = per_task[p.task]++;
        arrput(progs, p);
    }
    if (!arrlen(progs)) cuset__eval_fail("%s: no programs (one {\"index\": K, \"program\": \"...\"} per line)", path);
    free(per_task);
    free(buf);
    return progs;
}

// The first line of file path that contains needle, or the file's first lines.
static void cuset__eval_head_or_line(const char *path, const char *needle, char *out, size_t cap) {
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

// Runs argv in dir, in the sandbox, with the run limits (program) or the compile limits
// (compilers: no CPU-time limit, 1024 open files; the wall clock, the file size and the
// disk watch as for programs); as_bytes: the address-space limit (0: none); stdout/stderr
// to dir/NAME.out/.err, made anew (what a program left under those names may be a link).
static void cuset__eval_run(const cuset__EvalEnv *E, const char *const argv[], const char *dir, const char *name,
                            int program, uint64_t as_bytes, CusetRunResult *r, char *err_path, size_t cap) {
    char out_path[4200], file[64];
    snprintf(file, sizeof file, "%s.out", name);
    cuset__eval_join(out_path, sizeof out_path, dir, file);
    snprintf(file, sizeof file, "%s.err", name);
    cuset__eval_join(err_path, cap, dir, file);
    unlink(out_path);
    unlink(err_path);
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    r->status = CUSET_RUN_ERROR;
    if (cuset_sandbox_prepare_dir(&E->sb, dir, r->error, sizeof r->error)) return; // the sandbox's user owns all there
    double timeout = program ? E->timeout : E->compile_timeout;
    CusetRunLimits lim = cuset_run_default_limits(timeout);
    lim.as_bytes = as_bytes;
    lim.disk_bytes = (uint64_t)(E->disk_mib * 1048576);
    lim.disk_in_dir = E->sb.isolated; // in the sandbox, its directory is all of the disk it can write
    if (!program) { lim.cpu_s = 0; lim.nofile = 1024; }
    char **cmd = cuset_sandbox_argv(&E->sb, dir, (char *const *)argv); // execv's type
    cuset_run_limited_ex(cmd, dir, timeout, out_path, err_path, &lim, r);
    cuset_sandbox_argv_free(cmd);
    int sig = r->status == CUSET_RUN_EXITED ? cuset_sandbox_signal(&E->sb, r->exit_code) : 0;
    if (sig) { r->status = CUSET_RUN_SIGNALED; r->signal = sig; r->exit_code = -1; }
}

// Does the emulator build its programs with AddressSanitizer? Only when the compiler it
// calls (CXX) asks for it: AddressSanitizer reserves terabytes of address space, so
// RLIMIT_AS would kill it at start. (Decided from how gen builds, never from the program:
// the bytes of a program's binary are the program's to choose.)
static int cuset__eval_asan_build(void) {
    const char *cxx = getenv("CXX");
    return cxx && strstr(cxx, "-fsanitize=") && strstr(cxx, "address");
}

// Copies the files of the materialized task directory into dir: inputs and spec.json
// before the run (expected = 0), the expected outputs and spec.json again after it
// (expected = 1: the comparison reads the task's tolerances, not what the program may have
// written there), over anything the program left under their names, directories included.
static int cuset__eval_copy_task_files(const char *taskdir, const char *dir, int expected, char *err, size_t errlen) {
    DIR *d = opendir(taskdir);
    if (!d) { snprintf(err, errlen, "%s: %s", taskdir, strerror(errno)); return -1; }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) && !rc) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        int is_expected = len > 13 && !strcmp(n + len - 13, ".expected.bin");
        int is_spec = !strcmp(n, "spec.json"), is_input = !is_expected && len > 4 && !strcmp(n + len - 4, ".bin");
        if (!is_spec && (expected ? !is_expected : !is_input)) continue;
        char src[4200], dst[4200];
        cuset__eval_join(src, sizeof src, taskdir, n);
        cuset__eval_join(dst, sizeof dst, dir, n);
        cuset_remove_tree(dst); // the program may have left a link, a read-only file or a directory there
        rc = cuset_copy_file(src, dst, err, errlen);
    }
    closedir(d);
    return rc;
}

// The steps of one program's evaluation, in dir: each returns 1 when the program goes on
// to the next step, 0 when res holds the verdict.

// Why the disk watch stopped a build (what: the build), rather than its warnings as if they
// were its error. In the sandbox it counts what the build wrote; without one it watches the
// free space of the whole file system, so the writer may also be another job: say so.
static const char *cuset__eval_disk_why(const cuset__EvalEnv *E, const char *what, char *out, size_t cap) {
    if (E->sb.isolated) snprintf(out, cap, "stopped: %s wrote more than %g MiB to the disk", what, E->disk_mib);
    else snprintf(out, cap, "stopped: the disk's free space fell by more than %g MiB while %s ran (its output, or "
                  "another job writing)", E->disk_mib, what);
    return out;
}

// What a compiler may take of the address space: a program can make one take all the
// memory there is (#include "/dev/zero"); a corpus program builds (nvcc, the emulator) in 2 GiB.
#define CUSET__EVAL_COMPILE_AS (8ull << 30)

// The compilation check: nvcc. For the emulator, with ptxas's report of each kernel's
// registers and shared memory (-Xptxas -v, into nvcc.err), which its build takes.
static int cuset__eval_compile(const cuset__EvalEnv *E, const char *dir, cuset__EvalResult *res) {
    char err_path[4200], why[300];
    CusetRunResult r;
    char arch[24];
    snprintf(arch, sizeof arch, "-arch=%s", E->arch);
    const char *report = E->use_gpu ? NULL : "-Xptxas"; // (NULL ends the list there)
    const char *argv[] = {E->nvcc, arch, "-o", "prog", "prog.cu", report, "-v", NULL};
    cuset__eval_run(E, argv, dir, "nvcc", 0, CUSET__EVAL_COMPILE_AS, &r, err_path, sizeof err_path);
    if (r.status == CUSET_RUN_ERROR) return cuset__eval_verdict(res, CUSET_EVAL_ERROR, "%s", r.error);
    if (r.status != CUSET_RUN_EXITED || r.exit_code != 0) {
        if (r.timed_out)
            return cuset__eval_verdict(res, CUSET_EVAL_COMPILE_ERROR, "nvcc did not finish in %g s", E->compile_timeout);
        if (r.disk_full)
            return cuset__eval_verdict(res, CUSET_EVAL_COMPILE_ERROR, "%s",
                                       cuset__eval_disk_why(E, "nvcc", why, sizeof why));
        res->status = CUSET_EVAL_COMPILE_ERROR;
        cuset__eval_head_or_line(err_path, " error", res->detail, sizeof res->detail);
        return 0;
    }
    res->compile_ok = 1;
    return 1;
}

// Without a GPU, the program to run is the emulator's build, prog_emu, which refuses the
// launches a GPU would refuse for the kernels' resources when nvcc reported them; *as gets
// its address-space limit.
static int cuset__eval_build_emu(const cuset__EvalEnv *E, const char *dir, cuset__EvalResult *res, uint64_t *as) {
    char err_path[4200], path[4200];
    CusetRunResult r;
    const char *resources = E->have_nvcc ? "--ptxas-info" : NULL; // (NULL ends the list there)
    const char *argv[] = {E->emu, "prog.cu", "-o", "prog_emu", resources, "nvcc.err", NULL};
    cuset__eval_run(E, argv, dir, "emu_build", 0, CUSET__EVAL_COMPILE_AS, &r, err_path, sizeof err_path);
    if (r.status == CUSET_RUN_ERROR) return cuset__eval_verdict(res, CUSET_EVAL_ERROR, "%s", r.error);
    if (r.status == CUSET_RUN_EXITED && r.exit_code == 3) {
        res->status = CUSET_EVAL_UNSUPPORTED;
        cuset__eval_head_or_line(err_path, "unsupported feature", res->detail, sizeof res->detail);
        return 0;
    }
    if (r.status != CUSET_RUN_EXITED || r.exit_code != 0) {
        char why[600];
        if (r.timed_out) snprintf(why, sizeof why, "did not finish in %g s", E->compile_timeout);
        else if (r.disk_full) cuset__eval_disk_why(E, "the emulator's build", why, sizeof why);
        else cuset__eval_head_or_line(err_path, "error", why, sizeof why);
        // nvcc accepted it: the emulator's limit, not the program's fault
        return cuset__eval_verdict(res, E->have_nvcc ? CUSET_EVAL_UNSUPPORTED : CUSET_EVAL_COMPILE_ERROR, "%s%s",
                                   E->have_nvcc ? "the emulator could not build a program nvcc compiles: " : "", why);
    }
    if (!E->have_nvcc) res->compile_ok = 1;
    cuset__eval_join(path, sizeof path, dir, "prog_emu");
    *as = cuset__eval_asan_build() ? 0 : 8ull << 30;
    return 1;
}

// The run: nvcc's program on a GPU, else the emulator's; a timeout, a crash or the
// emulator's "unsupported feature" is the verdict.
static int cuset__eval_execute(const cuset__EvalEnv *E, const char *dir, uint64_t as, cuset__EvalResult *res) {
    char err_path[4200], head[600];
    CusetRunResult r;
    const char *argv[] = {E->use_gpu ? "./prog" : "./prog_emu", NULL};
    cuset__eval_run(E, argv, dir, "run", 1, as, &r, err_path, sizeof err_path);
    res->exit_code = r.exit_code;
    res->signal = r.signal;
    if (r.status == CUSET_RUN_ERROR) return cuset__eval_verdict(res, CUSET_EVAL_ERROR, "%s", r.error);
    if (r.status == CUSET_RUN_TIMEOUT || (r.status == CUSET_RUN_SIGNALED && r.signal == SIGXCPU))
        return r.timed_out ? cuset__eval_verdict(res, CUSET_EVAL_TIMEOUT, "killed after %g s", E->timeout)
                           : cuset__eval_verdict(res, CUSET_EVAL_TIMEOUT, "CPU time limit of %g s (%g s a core)",
                                                 cuset_run_default_limits(E->timeout).cpu_s, E->timeout);
    if (r.status == CUSET_RUN_EXITED && r.exit_code == 0) return 1;
    cuset__eval_head_or_line(err_path, NULL, head, sizeof head);
    if (r.status == CUSET_RUN_EXITED && r.exit_code == 3 && strstr(head, "unsupported feature")) {
        res->status = CUSET_EVAL_UNSUPPORTED;
        cuset__eval_head_or_line(err_path, "unsupported feature", res->detail, sizeof res->detail);
        return 0;
    }
    if (r.disk_full)
        return cuset__eval_verdict(res, CUSET_EVAL_CRASH, "stopped: it wrote more than %g MiB to the disk", E->disk_mib);
    if (r.status == CUSET_RUN_SIGNALED)
        return cuset__eval_verdict(res, CUSET_EVAL_CRASH, "killed by signal %d (%s)%s%s", r.signal, strsignal(r.signal),
                                   head[0] ? ": " : "", head);
    return cuset__eval_verdict(res, CUSET_EVAL_CRASH, "exit %d%s%s%s", r.exit_code,
                               !E->use_gpu && r.exit_code == 86 ? " (the emulator found an error)" : "",
                               head[0] ? ": " : "", head);
}

// The outputs against the expected ones (data/corpus --compare): pass or wrong answer.
static void cuset__eval_compare(const cuset__EvalEnv *E, const char *taskdir, const char *dir, cuset__EvalResult *res) {
    char err[600], err_path[4200], out_path[4200];
    CusetRunResult r;
    if (cuset__eval_copy_task_files(taskdir, dir, 1, err, sizeof err)) {
        cuset__eval_verdict(res, CUSET_EVAL_ERROR, "%s", err);
        return;
    }
    const char *argv[] = {E->corpus, "--compare", ".", NULL};
    cuset__eval_run(E, argv, dir, "compare", 0, 0, &r, err_path, sizeof err_path);
    cuset__eval_join(out_path, sizeof out_path, dir, "compare.out");
    if (r.status == CUSET_RUN_EXITED && r.exit_code == 0) res->status = CUSET_EVAL_PASS;
    else if (r.status == CUSET_RUN_EXITED && r.exit_code == 1) {
        res->status = CUSET_EVAL_WRONG_ANSWER;
        cuset__eval_head_or_line(out_path, "FAIL", res->detail, sizeof res->detail);
    } else if (r.status == CUSET_RUN_ERROR) cuset__eval_verdict(res, CUSET_EVAL_ERROR, "%s", r.error);
    else if (r.timed_out) cuset__eval_verdict(res, CUSET_EVAL_ERROR, "the comparison did not finish in %g s", E->compile_timeout);
    else {
        res->status = CUSET_EVAL_ERROR;
        cuset__eval_head_or_line(err_path, NULL, res->detail, sizeof res->detail);
    }
}

// One program: compile, run, compare. dir exists and is empty.
static void cuset__eval_program(const cuset__EvalEnv *E, const char *taskdir, const char *dir, const char *text, size_t len,
                                cuset__EvalResult *res) {
    char path[4200], err[600];
    double t0 = cuset_time();
    uint64_t as = 0; // CUDA reserves much address space on a GPU: no RLIMIT_AS there
    cuset__eval_result_init(res);
    cuset__eval_join(path, sizeof path, dir, "prog.cu");
    if (cuset_write_file(path, text, len, err, sizeof err) || cuset__eval_copy_task_files(taskdir, dir, 0, err, sizeof err))
        cuset__eval_verdict(res, CUSET_EVAL_ERROR, "%s", err);
    else if ((!E->have_nvcc || cuset__eval_compile(E, dir, res)) &&
             (E->use_gpu || cuset__eval_build_emu(E, dir, res, &as)) && cuset__eval_execute(E, dir, as, res))
        cuset__eval_compare(E, taskdir, dir, res);
    res->seconds = cuset_time() - t0;
}


static pid_t cuset__eval_workers[256]; // the running workers (0: a free slot), for Ctrl-C
// The output being written (PATH.tmp.PID, set while cuset__eval_partial_open): an output
// is renamed over PATH only when complete, so an interrupted run leaves the old file whole.
static char cuset__eval_partial[4352];
static volatile sig_atomic_t cuset__eval_partial_open;

static void cuset__eval_on_signal(int sig) { // Ctrl-C: take the running programs down with us
    if (cuset__eval_partial_open) unlink(cuset__eval_partial);
    if (cuset_run_current_pgid) kill(-cuset_run_current_pgid, SIGKILL);
    for (int w = 0; w < 256; w++)
        if (cuset__eval_workers[w] > 0) kill(cuset__eval_workers[w], SIGTERM);
    signal(sig, SIG_DFL);
    raise(sig);
}

// Forks a worker, as fork() returns. The worker forgets gen's list of workers and is sent
// SIGTERM when gen dies, even by SIGKILL, so that its handler above takes its running
// program down instead of letting it run on to its timeout.
static pid_t cuset__eval_fork_worker(void) {
    fflush(NULL); // nothing buffered twice
    pid_t gen_pid = getpid(), pid = fork();
    if (pid == 0) {
        memset(cuset__eval_workers, 0, sizeof cuset__eval_workers);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != gen_pid) raise(SIGTERM); // gen died before prctl
    }
    return pid;
}

// A guardian removes the work directory root when gen ends without doing so (Ctrl-C, a
// kill, a crash; after a normal end it finds nothing left). It is a grandchild, so no wait()
// of gen's sees it, and it waits for end-of-file on a pipe whose write end only gen and its
// workers hold: close-on-exec, so the compilers and programs they run do not keep it open.
// It runs as a shell whose command line is not gen's, so that `pkill -f 'gen --eval'`,
// even with -9, takes gen down and not its guardian.
static void cuset__eval_guard(const char *root) {
    int fd[2];
    if (pipe(fd)) return; // no guardian: then an interrupted run leaves the directory behind
    fcntl(fd[1], F_SETFD, FD_CLOEXEC);
    pid_t child = fork();
    if (child == 0) {
        if (fork() == 0) {
            setsid(); // a session of its own: no Ctrl-C or hangup from gen's terminal
            signal(SIGINT, SIG_IGN); // ignored signals stay ignored across exec
            signal(SIGTERM, SIG_IGN);
            dup2(fd[0], 0); // the shell's read waits on the pipe
            for (int f = 1; f < 1024; f++) close(f); // holds nobody's output open
            execl("/bin/sh", "sh", "-c", "read -r _; exec rm -rf -- \"$1\"", "cuset-eval-guard", root, (char *)NULL);
            char c; // no shell: wait and remove the directory here
            while (read(0, &c, 1) < 0 && errno == EINTR) {}
            cuset_remove_tree(root);
        }
        _exit(0);
    }
    if (child > 0) waitpid(child, NULL, 0);
    close(fd[0]);
}

// Materializes task index into dir with data/corpus. 0, or -1 with its message in err.
static int cuset__eval_materialize(const cuset__EvalEnv *E, int index, const char *dir, char *err, size_t errlen) {
    char idx[32], log[4200];
    snprintf(idx, sizeof idx, "%d", index);
    cuset__eval_join(log, sizeof log, E->root, "materialize.err");
    const char *argv[] = {E->corpus, "--materialize", E->corpus_dir, "--split", E->split, "--index", idx,
                          "--to", dir, NULL};
    CusetRunResult r;
    CusetRunLimits lim = cuset_run_default_limits(0);
    lim.as_bytes = 0;
    cuset_run_limited_ex((char *const *)argv, NULL, 300, NULL, log, &lim, &r); // execv's type
    char head[400], spec[4200];
    if (r.status == CUSET_RUN_EXITED && r.exit_code == 0) {
        if (access(cuset__eval_join(spec, sizeof spec, dir, "spec.json"), R_OK) == 0) return 0;
        snprintf(err, errlen, "%.300s --materialize exited 0 for task %d but wrote no spec.json in %.600s: is --corpus "
                 "cuset's data/corpus?", E->corpus, index, dir);
        return -1;
    }
    if (r.status == CUSET_RUN_ERROR) snprintf(head, sizeof head, "%s", r.error);
    else if (r.status == CUSET_RUN_SIGNALED)
        snprintf(head, sizeof head, "killed by signal %d (%s)%s", r.signal, strsignal(r.signal),
                 r.signal == SIGXFSZ ? ": a file of the task is over the 256 MiB file-size limit" : "");
    else if (r.status == CUSET_RUN_TIMEOUT) snprintf(head, sizeof head, "it did not finish in 300 s");
    else cuset_file_head(log, 3, head, sizeof head);
    snprintf(err, errlen, "data/corpus --materialize failed for task %d: %s", index, head);
    return -1;
}

static void cuset__eval_write_result(FILE *f, const cuset__EvalTask *t, const cuset__EvalProgram *p, const cuset__EvalResult *r) {
    fprintf(f, "{\"task\": %d, \"id\": ", p->task);
    cuset_json_write_string(f, t->id, strlen(t->id));
    fprintf(f, ", \"family\": ");
    cuset_json_write_string(f, t->family, strlen(t->family));
    fprintf(f, ", \"sample\": %d, \"seed\": ", p->sample);
    if (p->has_seed) fprintf(f, "%llu", (unsigned long long)p->seed); else fprintf(f, "null");
    fprintf(f, ", \"status\": \"%s\", \"compile_ok\": %s, \"exit_code\": ", cuset_eval_status_names[r->status],
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

typedef struct { int n, c_compile, c_pass, n_unsupported; } cuset__EvalTally;

// pass@k averaged over the tasks [first, last) of a group (heldout -1 all, 0 seen, 1
// held-out combinations; family NULL every family) that have at least k programs; what = 0
// compilation, 1 functional, 2 functional with the programs the emulator cannot run left
// out. *used: the tasks averaged (0: there is no mean, and 0 is returned).
static double cuset__eval_mean_pass(const cuset__EvalTask *tasks, const cuset__EvalTally *tally, int first, int last,
                                    int k, int what, int heldout, const char *family, int *used) {
    double sum = 0;
    *used = 0;
    for (int t = first; t < last; t++) {
        int n = tally[t].n - (what == 2 ? tally[t].n_unsupported : 0);
        if (n < k || (heldout >= 0 && tasks[t].heldout != heldout) || (family && strcmp(family, tasks[t].family))) continue;
        sum += cuset_pass_at_k(n, what ? tally[t].c_pass : tally[t].c_compile, k);
        ++*used;
    }
    return *used ? sum / *used : 0;
}

// "s" after a count other than 1 ("1 task", "2 tasks").
static const char *cuset__eval_s(long n) { return n == 1 ? "" : "s"; }

// One report line: pass@k for each k over the tasks [first, last) (cuset__eval_mean_pass).
static void cuset__eval_print_pass_at_k(const char *label, int what, const cuset__EvalTask *tasks,
                                        const cuset__EvalTally *tally, int first, int last, const int *ks, int nk,
                                        int evaluated_tasks) {
    printf("%s", label);
    for (int j = 0; j < nk; j++) {
        int used;
        double mean = cuset__eval_mean_pass(tasks, tally, first, last, ks[j], what, -1, NULL, &used);
        if (!used) printf("  pass@%d    n/a", ks[j]);
        else if (what == 2) printf("  pass@%d %6.2f%% (%d task%s)", ks[j], 100 * mean, used, cuset__eval_s(used));
        else {
            printf("  pass@%d %6.2f%%", ks[j], 100 * mean);
            if (used < evaluated_tasks)
                printf(" (%d task%s with >= %d program%s)", used, cuset__eval_s(used), ks[j], cuset__eval_s(ks[j]));
        }
    }
    printf("\n");
}

// Is task t the first scored task of its family among tasks[first..t]? (Families are
// listed once each, in the order of their first task.)
static int cuset__eval_family_first(const cuset__EvalTask *tasks, const cuset__EvalTally *tally, int first, int t) {
    if (!tally[t].n) return 0;
    for (int u = first; u < t; u++)
        if (tally[u].n && !strcmp(tasks[u].family, tasks[t].family)) return 0;
    return 1;
}

// Functional pass@1 per family, each family once, in the order of its first task.
static void cuset__eval_print_families(const cuset__EvalTask *tasks, const cuset__EvalTally *tally, int first, int last) {
    printf("functional pass@1 by family:\n");
    printf("  %-28s %6s %9s %8s\n", "family", "tasks", "programs", "pass@1");
    for (int t = first; t < last; t++) {
        if (!cuset__eval_family_first(tasks, tally, first, t)) continue;
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

// ---- the result cache: one small file per (task, program, how it was built and run) -----
// Greedy programs of different models are often the same text, and a rerun of an
// experiment meets every program again: a result found here is not recomputed. The key
// covers the task's whole line, the program's text, the compiler and runner, the limits
// (the CPU-time limit too: it is per core), the environment that reaches the builds and
// the programs (the sandbox's list: CXX, the emulator's CUEMU_* and NVCC_EMU_* settings,
// PATH, ...) and the tools' files as they are (both in E->tools_stamp: the compiler, the
// corpus binary and, under the CPU emulator, its driver, runtime and headers), so that a fixed or
// upgraded tool, or another setting, is not answered with the old one's results. File:
// "cuset-eval-cache 1 STATUS COMPILE_OK EXIT SIGNAL SECONDS", a newline, the detail.

// The variables of the environment that the sandbox passes on, hashed in any order.
static uint64_t cuset__eval_env_stamp(void) {
    uint64_t s = 0;
    for (char **e = environ; *e; e++)
        if (cuset__sb_env_passes(*e)) s += cuset__eval_hash(*e, strlen(*e), 0);
    return s;
}

// An entry's path, modification time and size, hashed (summed over a tree: in any order).
static uint64_t cuset__eval_entry_stamp(const char *path, const struct stat *st) {
    long long v[2] = {(long long)st->st_mtime, (long long)st->st_size};
    return cuset__eval_hash(v, sizeof v, cuset__eval_hash(path, strlen(path), 0));
}

static void cuset__eval_cache_path(const cuset__EvalEnv *E, const char *dir, const cuset__EvalTask *t,
                                   const cuset__EvalProgram *p, char *out, size_t cap) {
    char how[12400];
    snprintf(how, sizeof how, "%s|%s %s|%s|%d|%g|%g|%g|%g|%016llx", E->use_gpu ? "gpu" : E->emu,
             E->have_nvcc ? E->nvcc : "-", E->arch, E->corpus, E->sb.isolated, E->timeout,
             cuset_run_default_limits(E->timeout).cpu_s, E->compile_timeout, E->disk_mib,
             (unsigned long long)E->tools_stamp);
    uint64_t a = cuset__eval_hash(how, strlen(how), t->key), b = 0x9e3779b97f4a7c15ull ^ a;
    a = cuset__eval_hash(p->text ? p->text : "", p->len, a);
    b = cuset__eval_hash(p->text ? p->text : "", p->len, cuset__eval_hash(how, strlen(how), b ^ t->key));
    snprintf(out, cap, "%s/%016llx%016llx", dir, (unsigned long long)a, (unsigned long long)b);
}

static int cuset__eval_cache_get(const char *path, cuset__EvalResult *r) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    memset(r, 0, sizeof *r);
    int ok = fscanf(f, "cuset-eval-cache 1 %d %d %d %d %lf", &r->status, &r->compile_ok, &r->exit_code, &r->signal,
                    &r->seconds) == 5 && fgetc(f) == '\n' && r->status >= 0 && r->status < CUSET_EVAL_NSTATUS;
    size_t n = ok ? fread(r->detail, 1, sizeof r->detail - 1, f) : 0; // the detail, its newlines kept
    r->detail[n] = 0;
    fclose(f);
    return ok;
}

static void cuset__eval_cache_put(const char *path, const cuset__EvalResult *r) {
    char tmp[4240];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return; // a cache that cannot be written only costs time
    fprintf(f, "cuset-eval-cache 1 %d %d %d %d %.3f\n%s", r->status, r->compile_ok, r->exit_code, r->signal, r->seconds,
            r->detail);
    if (fclose(f) == 0) rename(tmp, path); else unlink(tmp);
}

// ---- running programs in parallel: each in a worker process that reports its result ----
// Evaluates program p (index i of the run) in a forked worker; the result comes back
// through fd. Returns the worker's pid, or -1 (then *res holds the error).
static pid_t cuset__eval_start(const cuset__EvalEnv *E, const char *taskdir, const cuset__EvalProgram *p, int i, int fd) {
    pid_t pid = cuset__eval_fork_worker();
    if (pid != 0) return pid;
    cuset__EvalResult res;
    char dir[4300], name[64];
    snprintf(name, sizeof name, "program-%d", i);
    cuset__eval_join(dir, sizeof dir, E->root, name);
    cuset__eval_result_init(&res);
    if (mkdir(dir, 0700))
        cuset__eval_verdict(&res, CUSET_EVAL_ERROR, "cannot make a directory for the program: %s", strerror(errno));
    else cuset__eval_program(E, taskdir, dir, p->text ? p->text : "", p->len, &res);
    if (!E->keep_dirs) cuset_remove_tree(dir);
    size_t put = 0; // the parent reads until end of file
    for (ssize_t n; put < sizeof res && (n = write(fd, (char *)&res + put, sizeof res - put)) != 0;)
        if (n > 0) put += (size_t)n; else if (errno != EINTR) break;
    _exit(put == sizeof res ? 0 : 1);
}

// ---- the numbers as JSON: pass@k overall, seen / held-out combinations, per family ------
// A group: heldout -1 all tasks, 0 seen, 1 held-out; family NULL every family.
static void cuset__eval_group_json(FILE *f, const cuset__EvalTask *tasks, const cuset__EvalTally *tally, int first,
                                   int last, const int *ks, int nk, int heldout, const char *family) {
    int ntask = 0;
    for (int t = first; t < last; t++)
        ntask += tally[t].n && (heldout < 0 || tasks[t].heldout == heldout) && (!family || !strcmp(family, tasks[t].family));
    fprintf(f, "{\"tasks\": %d", ntask);
    for (int what = 0; what < 2; what++) {
        fprintf(f, ", \"%s\": {", what ? "functional" : "compile");
        for (int j = 0; j < nk; j++) {
            int used;
            double mean = cuset__eval_mean_pass(tasks, tally, first, last, ks[j], what, heldout, family, &used);
            fprintf(f, "%s\"%d\": ", j ? ", " : "", ks[j]);
            if (used) fprintf(f, "%.6f", mean); else fprintf(f, "null");
        }
        fprintf(f, "}");
    }
    fprintf(f, "}");
}

// An output: written to cuset__eval_partial, renamed over path by cuset__eval_commit.
static FILE *cuset__eval_create(const char *path) {
    snprintf(cuset__eval_partial, sizeof cuset__eval_partial, "%s.tmp.%ld", path, (long)getpid());
    cuset__eval_partial_open = 1;
    FILE *f = fopen(cuset__eval_partial, "w");
    if (!f) cuset__eval_fail("%s: cannot create: %s", cuset__eval_partial, strerror(errno));
    return f;
}

// Closes f and renames it over path; when a write failed, removes it and stops the run.
static void cuset__eval_commit(FILE *f, const char *path) {
    int failed = ferror(f);
    if (fclose(f) != 0 || failed || rename(cuset__eval_partial, path) != 0) {
        const char *why = failed ? "a write failed (disk full?)" : strerror(errno);
        remove(cuset__eval_partial); // nothing half-written stays behind
        cuset__eval_fail("%s: cannot write: %s", path, why);
    }
    cuset__eval_partial_open = 0;
}

static void cuset__eval_summary(const char *path, const cuset__EvalTask *tasks, const cuset__EvalTally *tally, int first,
                                int last, const int *ks, int nk, const int *counts, int samples, double seconds) {
    FILE *f = cuset__eval_create(path);
    fprintf(f, "{\"samples\": %d, \"seconds\": %.1f, \"k\": [", samples, seconds);
    for (int j = 0; j < nk; j++) fprintf(f, "%s%d", j ? ", " : "", ks[j]);
    fprintf(f, "],\n \"all\": ");
    cuset__eval_group_json(f, tasks, tally, first, last, ks, nk, -1, NULL);
    fprintf(f, ",\n \"seen\": ");
    cuset__eval_group_json(f, tasks, tally, first, last, ks, nk, 0, NULL);
    fprintf(f, ",\n \"heldout\": ");
    cuset__eval_group_json(f, tasks, tally, first, last, ks, nk, 1, NULL);
    fprintf(f, ",\n \"outcomes\": {");
    for (int s = 0; s < CUSET_EVAL_NSTATUS; s++) fprintf(f, "%s\"%s\": %d", s ? ", " : "", cuset_eval_status_names[s], counts[s]);
    fprintf(f, "},\n \"families\": {");
    int nf = 0;
    for (int t = first; t < last; t++) {
        if (!cuset__eval_family_first(tasks, tally, first, t)) continue;
        fprintf(f, "%s\n  ", nf++ ? "," : "");
        cuset_json_write_string(f, tasks[t].family, strlen(tasks[t].family));
        fprintf(f, ": ");
        cuset__eval_group_json(f, tasks, tally, first, last, ks, nk, -1, tasks[t].family);
    }
    fprintf(f, "},\n \"per_task\": [");
    int np = 0;
    for (int t = first; t < last; t++) {
        if (!tally[t].n) continue;
        fprintf(f, "%s\n  {\"index\": %d, \"id\": ", np++ ? "," : "", t);
        cuset_json_write_string(f, tasks[t].id, strlen(tasks[t].id));
        fprintf(f, ", \"family\": ");
        cuset_json_write_string(f, tasks[t].family, strlen(tasks[t].family));
        fprintf(f, ", \"heldout\": %s, \"n\": %d, \"compiled\": %d, \"passed\": %d, \"result\": ", tasks[t].heldout ? "true" : "false",
                tally[t].n, tally[t].c_compile, tally[t].c_pass);
        cuset__eval_group_json(f, tasks, tally, t, t + 1, ks, nk, -1, NULL);
        fprintf(f, "}");
    }
    fprintf(f, "]}\n");
    cuset__eval_commit(f, path);
}

// A NUL-terminated copy of the len bytes at s (a program may hold NUL bytes: strndup would
// stop at the first and leave len bytes claimed of a shorter copy).
static char *cuset__eval_copy(const char *s, size_t len) {
    char *c = (char *)CUSET_CALLOC(len + 1, 1);
    if (len) memcpy(c, s, len);
    return c;
}

// Asks the sampler for program p's text (an stb_ds char array in *text). 0, or -1 with a message in err.
static int cuset__eval_sample_one(const CusetEvalSampler *sampler, const cuset__EvalTask *tasks,
                                  const cuset__EvalProgram *p, char **text, char *err, size_t errlen) {
    const cuset__EvalTask *t = &tasks[p->task];
    return sampler->sample(sampler->ctx, p->task, t->prompt, t->prompt_len, p->seed, text, err, errlen) ? -1 : 0;
}

// A sampling process: programs w, w + jobs, ... of progs, each written to fd as its index
// (int), its length (size_t) and its text. Never returns.
__attribute__((noreturn))
static void cuset__eval_sampling_worker(const CusetEvalSampler *sampler, const cuset__EvalTask *tasks,
                                        const cuset__EvalProgram *progs, int n, int w, int jobs, int fd) {
    char err[1200];
    FILE *out = fdopen(fd, "wb");
    for (int i = w; i < n; i += jobs) {
        char *text = NULL;
        if (cuset__eval_sample_one(sampler, tasks, &progs[i], &text, err, sizeof err)) {
            fprintf(stderr, CUSET_EVAL_WHO ": %s\n", err);
            _exit(2);
        }
        size_t len = arrlenu(text);
        if (fwrite(&i, sizeof i, 1, out) != 1 || fwrite(&len, sizeof len, 1, out) != 1 ||
            (len && fwrite(text, 1, len, out) != len))
            _exit(1);
        arrfree(text);
    }
    _exit(fclose(out) == 0 ? 0 : 1);
}

// Samples the programs in `jobs` forked processes (program i in process i mod jobs) and
// reads their texts back. A failure stops the run (exit 2).
static void cuset__eval_sample_forked(const cuset__EvalEnv *E, const CusetEvalSampler *sampler,
                                      const cuset__EvalTask *tasks, cuset__EvalProgram *progs, int n, int jobs, double t0) {
    int fds[256];
    pid_t pids[256];
    for (int w = 0; w < jobs; w++) {
        int pfd[2];
        if (pipe(pfd)) cuset__eval_fail("pipe: %s", strerror(errno));
        pids[w] = cuset__eval_fork_worker();
        if (pids[w] < 0) cuset__eval_fail("fork: %s", strerror(errno));
        if (pids[w] == 0) { close(pfd[0]); cuset__eval_sampling_worker(sampler, tasks, progs, n, w, jobs, pfd[1]); }
        close(pfd[1]);
        fds[w] = pfd[0];
        cuset__eval_workers[w] = pids[w];
    }
    int got = 0, failed = 0;
    for (int w = 0; w < jobs; w++) { // a worker blocked on a full pipe waits for its turn: no cycle
        FILE *in = fdopen(fds[w], "rb");
        int i;
        size_t len;
        while (fread(&i, sizeof i, 1, in) == 1) {
            if (i < 0 || i >= n || fread(&len, sizeof len, 1, in) != 1) { failed = 1; break; }
            char *text = (char *)CUSET_CALLOC(len + 1, 1);
            if (len && fread(text, 1, len, in) != len) { free(text); failed = 1; break; }
            text[len] = 0;
            progs[i].text = text, progs[i].len = len;
            if (++got % 10 == 0 || got == n) fprintf(stderr, "eval: sampled %d/%d programs (%.1f s, %d processes)\n", got, n,
                                                     cuset_time() - t0, jobs);
        }
        fclose(in);
        int ws = 0;
        pid_t done;
        do done = waitpid(pids[w], &ws, 0); while (done < 0 && errno == EINTR);
        cuset__eval_workers[w] = 0;
        if (done < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws)) failed = 1;
    }
    if (failed || got != n) {
        cuset_remove_tree(E->root);
        cuset__eval_fail("a sampling process failed (%d of %d programs written)", got, n);
    }
}

// Samples the text of every program, in `jobs` forked processes when the sampler allows
// it (the seeds are per program, so the texts do not depend on jobs). A failure stops the
// run (exit 2).
static void cuset__eval_sample_all(const cuset__EvalEnv *E, const CusetEvalSampler *sampler, const cuset__EvalTask *tasks,
                                   cuset__EvalProgram *progs, int n, int jobs) {
    double t0 = cuset_time();
    if (jobs < 2 || n < 2 || !sampler->prepare_fork || !sampler->prepare_fork(sampler->ctx)) jobs = 1;
    if (jobs > n) jobs = n;
    if (jobs > 1) { cuset__eval_sample_forked(E, sampler, tasks, progs, n, jobs, t0); return; }
    char err[1200];
    for (int i = 0; i < n; i++) {
        char *text = NULL; // stb_ds
        cuset__EvalProgram *p = &progs[i];
        if (cuset__eval_sample_one(sampler, tasks, p, &text, err, sizeof err)) {
            cuset_remove_tree(E->root);
            cuset__eval_fail("%s", err);
        }
        p->len = arrlenu(text);
        p->text = cuset__eval_copy(text, p->len);
        arrfree(text);
        if ((i + 1) % 10 == 0 || i + 1 == n)
            fprintf(stderr, "eval: sampled %d/%d programs (%.1f s)\n", i + 1, n, cuset_time() - t0);
    }
}

// ---- the run: cuset_eval_main's steps, in the order it calls them -------------------------
// What the steps share: the settings, checked once; the tasks; the programs and their results.
typedef struct {
    const CusetEvalOpts *o;
    const CusetEvalSampler *sampler; // NULL: the programs come from o->programs_path
    cuset__EvalEnv E;
    int ks[16], nk, samples;         // the k of pass@k; programs sampled per task
    cuset__EvalTask *tasks;          // stb_ds: every task of the file
    int ntasks, first, last;         // the tasks evaluated: [first, last)
    cuset__EvalProgram *given;       // stb_ds: the --programs file's programs (NULL when sampling)
    cuset__EvalProgram *progs;       // stb_ds: the programs to evaluate, task by task
    cuset__EvalResult *results;      // what became of each program
    cuset__EvalTally *tally;         // (ntasks) the results per task
    int counts[CUSET_EVAL_NSTATUS];  // the outcomes of all programs
    int evaluated_tasks, cached, jobs;
    const char *results_path;
    char results_default[4200];
    double t_start, t_eval;          // when the tasks were first touched; when evaluating began
} cuset__EvalRun;

// Where the programs come from, the k of pass@k and the programs per task; exits 2 when
// they do not fit together.
static void cuset__eval_check_options(cuset__EvalRun *R) {
    const CusetEvalOpts *o = R->o;
    if (!!R->sampler == !!o->programs_path)
        cuset__eval_fail(R->sampler ? "give --eval one of --model CKPT (sample programs) or --programs FILE (evaluate "
                                      "given ones), not both"
                                    : "--eval needs --model CKPT (sample programs) or --programs FILE (evaluate given ones)");
    int kmax = 0;
    for (const char *p = o->k_list; *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p || k < 1 || k > 1000 || (*end && *end != ',') || (*end == ',' && !end[1]))
            cuset__eval_fail("--k expects values like 1,3 (each in [1, 1000]), got '%s'", o->k_list);
        if (R->nk == 16) cuset__eval_fail("--k takes at most 16 values, got '%s'", o->k_list);
        for (int i = 0; i < R->nk; i++)
            if (R->ks[i] == k) cuset__eval_fail("--k lists %ld twice, got '%s'", k, o->k_list);
        R->ks[R->nk++] = (int)k;
        if (k > kmax) kmax = (int)k;
        p = *end ? end + 1 : end;
    }
    if (!R->nk) cuset__eval_fail("--k expects values like 1,3");
    if (!R->sampler && o->samples)
        cuset__eval_fail("--samples goes with --model (sampling); with --programs a task has the programs FILE gives it");
    R->samples = o->samples ? o->samples : kmax;
    if (R->sampler && R->samples < kmax)
        cuset__eval_fail("--k %d needs at least %d samples per task, but --samples is %d", kmax, kmax, R->samples);
}

// The corpus of the tasks file DIR/SPLIT.jsonl: E->corpus_dir = DIR, E->split = SPLIT.
static void cuset__eval_locate_split(cuset__EvalEnv *E, const char *tasks_path) {
    char tmp[4096];
    if (!realpath(tasks_path, tmp)) cuset__eval_fail("--eval %s: %s", tasks_path, strerror(errno));
    char *slash = strrchr(tmp, '/');
    const char *base = slash + 1;
    size_t bl = strlen(base);
    if (bl < 7 || strcmp(base + bl - 6, ".jsonl") || bl - 6 >= sizeof E->split)
        cuset__eval_fail("%s is not a corpus split file (DIR/train.jsonl, DIR/val.jsonl or DIR/test.jsonl, as make data "
                         "writes them)", tasks_path);
    snprintf(E->split, sizeof E->split, "%.*s", (int)(bl - 6), base);
    if (strcmp(E->split, "train") && strcmp(E->split, "val") && strcmp(E->split, "test"))
        cuset__eval_fail("%s is not a corpus split file: its name must be train.jsonl, val.jsonl or test.jsonl",
                         tasks_path);
    *slash = 0;
    snprintf(E->corpus_dir, sizeof E->corpus_dir, "%s", tmp[0] ? tmp : "/");
}

// The first GPU's architecture as nvcc names it ("sm_80" from nvidia-smi's compute_cap
// "8.0") into arch; unchanged, with a note, when nvidia-smi cannot say.
static void cuset__eval_gpu_arch(char *arch, size_t cap) {
    char err[300], out[4200], line[64] = "";
    int major = 0, minor = -1;
    char *dir = cuset_make_temp_dir("cuset_gpu_arch", err, sizeof err);
    if (dir) {
        const char *argv[] = {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader", NULL};
        CusetRunResult r;
        cuset__eval_join(out, sizeof out, dir, "out");
        cuset_run_limited((char *const *)argv, NULL, 30, out, NULL, &r);
        FILE *f = fopen(out, "r");
        if (f && fgets(line, sizeof line, f)) sscanf(line, "%d.%d", &major, &minor);
        if (f) fclose(f);
        cuset_remove_tree(dir);
        free(dir);
    }
    if (major > 0 && major < 100 && minor >= 0 && minor < 10) snprintf(arch, cap, "sm_%d%d", major, minor);
    else
        fprintf(stderr, CUSET_EVAL_WHO ": nvidia-smi does not give the GPU's compute capability; building for %s\n",
                arch);
}

// The CPU emulator: --emu, else emu/nvcc-emu beside the executable.
static char *cuset__eval_emulator_path(const CusetEvalOpts *o, char *path, size_t cap) {
    if (o->emu) snprintf(path, cap, "%s", o->emu); else cuset__eval_beside_exe("emu/nvcc-emu", path, cap);
    return path;
}

// Programs run under the CPU emulator, built by nvcc for sm_90 (the compilation check).
static void cuset__eval_find_emulator(cuset__EvalEnv *E, const CusetEvalOpts *o) {
    char path[4096];
    E->use_gpu = 0;
    snprintf(E->arch, sizeof E->arch, "sm_90");
    cuset__eval_emulator_path(o, path, sizeof path);
    if (!cuset__eval_is_executable(path) || !realpath(path, E->emu))
        cuset__eval_fail("no GPU, and the CPU emulator %s is missing (make emu/nvcc-emu builds it; --emu PATH gives "
                         "another)", path);
}

// The tools: data/corpus, nvcc (when there is one) and where programs run: the GPU when
// --runner allows it and one answers (with nvcc), else the CPU emulator.
static void cuset__eval_find_tools(cuset__EvalEnv *E, const CusetEvalOpts *o) {
    char path[4096];
    if (o->corpus) snprintf(path, sizeof path, "%s", o->corpus); else cuset__eval_beside_exe("data/corpus", path, sizeof path);
    if (!cuset__eval_is_executable(path) || !realpath(path, E->corpus))
        cuset__eval_fail("the corpus program %s is missing (make data/corpus builds it; --corpus PATH gives another)", path);
    if (!o->nvcc) // an absolute path, also from a relative PATH entry (the programs build in their own directory)
        E->have_nvcc = cuset__eval_find_nvcc(path, sizeof path) && realpath(path, E->nvcc);
    else if (strcmp(o->nvcc, "none")) {
        if (!cuset__eval_is_executable(o->nvcc) || !realpath(o->nvcc, E->nvcc))
            cuset__eval_fail("--nvcc %s: not an executable file", o->nvcc);
        E->have_nvcc = 1;
    }
    if (strcmp(o->runner, "auto") && strcmp(o->runner, "gpu") && strcmp(o->runner, "emu"))
        cuset__eval_fail("--runner expects auto, gpu or emu, got '%s'", o->runner);
    int gpu_present = 0;
    if (strcmp(o->runner, "emu")) {
        const char *argv[] = {"nvidia-smi", "-L", NULL};
        CusetRunResult r;
        cuset_run_limited((char *const *)argv, NULL, 30, NULL, NULL, &r);
        gpu_present = r.status == CUSET_RUN_EXITED && r.exit_code == 0;
    }
    if (!strcmp(o->runner, "gpu") && !gpu_present) cuset__eval_fail("--runner gpu: no GPU (nvidia-smi -L fails)");
    E->use_gpu = gpu_present && E->have_nvcc;
    if (!strcmp(o->runner, "gpu") && !E->have_nvcc) cuset__eval_fail("--runner gpu needs nvcc (on PATH or /usr/local/cuda/bin)");
    if (!E->use_gpu) { cuset__eval_find_emulator(E, o); return; }
    // programs run here: built for this GPU (an sm_90 build does not run on an A100); sm_90,
    // the prompts' H200, when nvidia-smi cannot say
    snprintf(E->arch, sizeof E->arch, "sm_90");
    cuset__eval_gpu_arch(E->arch, sizeof E->arch);
}

// The emulator's directory, where nvcc-emu finds its runtime and headers: EMUDIR/name.
static char *cuset__eval_emu_path(const cuset__EvalEnv *E, const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s", E->emu);
    if (strrchr(out, '/')) *strrchr(out, '/') = 0;
    if (*name) snprintf(out + strlen(out), cap - strlen(out), "/%s", name);
    return out;
}

// The sandbox sees the emulator's directory: 0, or -1 with a message. Nothing to do
// without a sandbox.
static int cuset__eval_sandbox_add_emulator(cuset__EvalEnv *E, char *err, size_t cap) {
    char dir[4096];
    return E->sb.isolated ? cuset_sandbox_add_tool(&E->sb, cuset__eval_emu_path(E, "", dir, sizeof dir), err, cap) : 0;
}

// The result cache's key of the tools, once the runner is settled: modification times and
// sizes of nvcc, the corpus program and, under the emulator, nvcc-emu, its runtime and its
// headers (pch/ is made from the runtime); and the environment the sandbox passes on.
static void cuset__eval_stamp_tools(cuset__EvalEnv *E) {
    char runtime[4200], headers[4200];
    E->tools_stamp = cuset__eval_env_stamp() + cuset__tree_sum(E->corpus, cuset__eval_entry_stamp, 0) +
                     (E->have_nvcc ? cuset__tree_sum(E->nvcc, cuset__eval_entry_stamp, 0) : 0);
    if (!E->use_gpu)
        E->tools_stamp += cuset__tree_sum(E->emu, cuset__eval_entry_stamp, 0) +
                          cuset__tree_sum(cuset__eval_emu_path(E, "cuemu.h", runtime, sizeof runtime),
                                          cuset__eval_entry_stamp, 0) +
                          cuset__tree_sum(cuset__eval_emu_path(E, "include", headers, sizeof headers),
                                          cuset__eval_entry_stamp, 0);
}

// The sandbox, which sees the tools read-only: the emulator's directory (its headers), the
// corpus program (--compare), nvcc's toolkit. Without one the run stops, unless unsafe.
static void cuset__eval_isolate(cuset__EvalEnv *E, int unsafe_no_sandbox) {
    char err[1200], toolkit[4096];
    if (unsafe_no_sandbox) {
        fprintf(stderr, CUSET_EVAL_WHO ": WARNING: --unsafe-no-sandbox: the programs are compiled and run WITHOUT "
                "ISOLATION, with the rights of user %d over files, processes and the network\n", (int)getuid());
        return;
    }
    if (cuset_sandbox_init(&E->sb, E->use_gpu))
        cuset__eval_fail("cannot isolate the programs on this machine: %s. Model-written programs run only in a "
                         "sandbox; --unsafe-no-sandbox runs them without one, with all your rights", E->sb.why);
    snprintf(toolkit, sizeof toolkit, "%s", E->nvcc); // TOOLKIT/bin/nvcc
    for (int up = 0; up < 2 && strrchr(toolkit, '/'); up++) *strrchr(toolkit, '/') = 0;
    if ((!E->use_gpu && cuset__eval_sandbox_add_emulator(E, err, sizeof err)) ||
        cuset_sandbox_add_tool(&E->sb, E->corpus, err, sizeof err) ||
        (E->have_nvcc && cuset_sandbox_add_tool(&E->sb, toolkit, err, sizeof err)))
        cuset__eval_fail("the sandbox: %s", err);
}

// The tasks, the range [first, last) that --first and --count pick, and the --programs file;
// when sampling, stops unless every sample's seed is one that --seed takes.
static void cuset__eval_load(cuset__EvalRun *R) {
    const CusetEvalOpts *o = R->o;
    R->tasks = cuset__eval_load_tasks(o->tasks_path);
    R->ntasks = (int)arrlen(R->tasks);
    if (o->first >= R->ntasks)
        cuset__eval_fail("%s holds %d tasks; --first %d is past the end", o->tasks_path, R->ntasks, o->first);
    R->first = o->first;
    R->last = o->count > 0 && o->first + o->count < R->ntasks ? o->first + o->count : R->ntasks;
    R->given = o->programs_path ? cuset__eval_load_programs(o->programs_path, R->ntasks) : NULL;
    if (!R->sampler) return;
    uint64_t seed = R->sampler->seed, last = seed + 1000ull * (uint64_t)(R->last - 1) + (uint64_t)(R->samples - 1);
    if (last > CUSET_EVAL_SEED_MAX) // (no overflow: the seed is at most that, the rest below 2^41)
        cuset__eval_fail("--seed %llu: the last sample, of task %d, would take seed %llu (SEED + 1000 K + s), past "
                         "%llu, the largest --seed that draws it again; give a smaller --seed",
                         (unsigned long long)seed, R->last - 1, (unsigned long long)last, CUSET_EVAL_SEED_MAX);
}

// Whether programs built here run on the GPU, in the sandbox as every program will: 1, or 0
// with why (a driver older than the toolkit, a device the sandbox does not reach, ...). The
// test program: a kernel writes 42, the host reads it back.
static int cuset__eval_gpu_runs(const cuset__EvalEnv *E, char *why, size_t cap) {
    static const char probe[] =
        "#include <cstdio>\n"
        "__global__ void probe(int *x) { *x = 42; }\n"
        "int main() {\n"
        "    int *d = nullptr, h = 0;\n"
        "    cudaError_t e = cudaMalloc(&d, sizeof(int));\n"
        "    if (e == cudaSuccess) { probe<<<1, 1>>>(d); e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost); }\n"
        "    if (e != cudaSuccess || h != 42) { fprintf(stderr, \"%s (read %d)\\n\", cudaGetErrorString(e), h); return 1; }\n"
        "    return 0;\n"
        "}\n";
    char dir[4200], path[4200], err[600] = "";
    cuset__EvalResult res;
    cuset__eval_result_init(&res);
    cuset__eval_join(dir, sizeof dir, E->root, "gpu_probe");
    cuset__eval_join(path, sizeof path, dir, "prog.cu");
    int ok = !mkdir(dir, 0755) && !cuset_write_file(path, probe, sizeof probe - 1, err, sizeof err) &&
             cuset__eval_compile(E, dir, &res) && cuset__eval_execute(E, dir, 0, &res);
    if (!ok) snprintf(why, cap, "%s", res.detail[0] ? res.detail : err[0] ? err : strerror(errno));
    for (char *nl; (nl = strchr(why, '\n'));) *nl = ' ';
    for (size_t n = strlen(why); n > 0 && why[n - 1] == ' ';) why[--n] = 0;
    cuset_remove_tree(dir);
    return ok;
}

// 1 when path lies in the directory dir, or under it, or is it (by inode, as cuset_same_file:
// links and other spellings count); a path not yet there, when the directory it would be
// written in does.
static int cuset__eval_inside(const char *path, const char *dir) {
    struct stat sd, st;
    char at[4096], real[PATH_MAX];
    if (stat(dir, &sd) || !S_ISDIR(sd.st_mode)) return 0;
    if (!realpath(path, real)) {
        const char *slash = strrchr(path, '/');
        snprintf(at, sizeof at, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
        if (!realpath(at, real)) return 0; // no such directory: nothing can be written there
    }
    for (;;) { // real, then each directory above it (dir is not the root)
        if (!stat(real, &st) && st.st_dev == sd.st_dev && st.st_ino == sd.st_ino) return 1;
        char *up = strrchr(real, '/');
        if (!up || up == real) return 0;
        *up = 0;
    }
}

// The results file (--results, else NAME.eval.jsonl); stops when it or the summary would
// write over a file the run reads or runs: the tasks, the programs, the model, the corpus
// program, the emulator and its runtime (cuemu.h, pch/, include/ beside it, where nvcc-emu
// finds them), nvcc, and the program running the evaluation (gen); or over each other.
// After cuset__eval_find_tools.
static void cuset__eval_choose_outputs(cuset__EvalRun *R) {
    const CusetEvalOpts *o = R->o;
    char emu[4096], emudir[PATH_MAX], runtime[PATH_MAX + 16], pch[PATH_MAX + 16], headers[PATH_MAX + 16], self[4096];
    cuset__eval_emulator_path(o, emu, sizeof emu); // also where the GPU runs the programs: it is their fallback
    if (!realpath(emu, emudir)) snprintf(emudir, sizeof emudir, "%s", emu); // nvcc-emu's own directory, links resolved
    if (strrchr(emudir, '/')) *strrchr(emudir, '/') = 0; else snprintf(emudir, sizeof emudir, ".");
    snprintf(runtime, sizeof runtime, "%s/cuemu.h", emudir);
    snprintf(pch, sizeof pch, "%s/pch", emudir);
    snprintf(headers, sizeof headers, "%s/include", emudir);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    R->results_path = o->results_path;
    if (!R->results_path) {
        snprintf(R->results_default, sizeof R->results_default, "%s.eval.jsonl", R->sampler ? R->sampler->name : o->programs_path);
        R->results_path = R->results_default;
    }
    // tree: a directory, none of whose files (nor a new one) an output may be
    const struct { const char *flag, *path; int tree; } out[] = {{"--results", R->results_path, 0},
                                                                  {"--summary", o->summary_path, 0}},
        in[] = {{"--eval", o->tasks_path, 0}, {"--programs", o->programs_path, 0},
                {"--model", R->sampler ? R->sampler->name : NULL, 0}, {"--results", R->results_path, 0},
                {"--corpus", R->E.corpus, 0}, {"--emu", emu, 0}, {"the emulator's runtime", runtime, 0},
                {"the emulator's precompiled runtime", pch, 1}, {"the emulator's headers", headers, 1},
                {"--nvcc", R->E.have_nvcc ? R->E.nvcc : NULL, 0}, {CUSET_EVAL_WHO "'s own executable", n > 0 ? self : NULL, 0}};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < (int)(sizeof in / sizeof in[0]) && out[i].path; k++)
            if (in[k].path && strcmp(in[k].flag, out[i].flag) &&
                (in[k].tree ? cuset__eval_inside(out[i].path, in[k].path) : cuset_same_file(out[i].path, in[k].path)))
                cuset__eval_fail("%s %s is %s %s %s: the evaluation would write %s; give another path", out[i].flag,
                                 out[i].path, in[k].tree ? "inside" : "also", in[k].flag, in[k].path,
                                 in[k].tree ? "into it" : "over it");
}

// The outputs, checked (written at the end), and the private work directory, open to the
// sandbox's user; Ctrl-C from now on takes the running programs down too.
static void cuset__eval_open_run(cuset__EvalRun *R) {
    const CusetEvalOpts *o = R->o;
    cuset__EvalEnv *E = &R->E;
    char err[1200];
    if (cuset_check_writable(R->results_path, err, sizeof err)) cuset__eval_fail("--results %s", err);
    if (o->summary_path && cuset_check_writable(o->summary_path, err, sizeof err))
        cuset__eval_fail("--summary %s", err);
    if (o->cache_dir) { // made now, not after the sampling
        struct stat st;
        if ((mkdir(o->cache_dir, 0755) && errno != EEXIST) || stat(o->cache_dir, &st))
            cuset__eval_fail("--cache %s: %s", o->cache_dir, strerror(errno));
        if (!S_ISDIR(st.st_mode)) cuset__eval_fail("--cache %s: not a directory", o->cache_dir);
    }
    E->root = cuset_make_temp_dir("cuset_eval", err, sizeof err);
    if (!E->root) cuset__eval_fail("%s", err);
    char *abs = realpath(E->root, NULL); // the sandbox binds directories by absolute paths
    if (abs) { free(E->root); E->root = abs; }
    if (E->sb.drop_root) chmod(E->root, 0711); // nobody, the programs' user, passes through to their directories
    if (cuset_sandbox_can_reach(&E->sb, E->root, err, sizeof err)) {
        cuset_remove_tree(E->root);
        cuset__eval_fail("the sandbox: %s (or set TMPDIR to a directory open to others)", err);
    }
    if (!E->keep_dirs) cuset__eval_guard(E->root);
    char why[800];
    if (E->use_gpu && !cuset__eval_gpu_runs(E, why, sizeof why)) { // e.g. a driver older than the toolkit
        if (!strcmp(o->runner, "gpu"))
            cuset__eval_fail("--runner gpu: a test program built with nvcc -arch=%s does not run on the GPU: %s",
                             E->arch, why);
        fprintf(stderr, CUSET_EVAL_WHO ": a test program built with nvcc -arch=%s does not run on the GPU (%s); the "
                "programs run under the CPU emulator instead\n", E->arch, why);
        cuset__eval_find_emulator(E, o);
        if (cuset__eval_sandbox_add_emulator(E, err, sizeof err)) cuset__eval_fail("the sandbox: %s", err);
    }
    cuset__eval_stamp_tools(E);
    signal(SIGINT, cuset__eval_on_signal);
    signal(SIGTERM, cuset__eval_on_signal);
    fprintf(stderr, "eval: %s tasks %d..%d of %d; compiler %s; runner %s; work in %s; %s\n", o->tasks_path, R->first,
            R->last - 1, R->ntasks, cuset__eval_compiler(E), E->use_gpu ? "GPU" : E->emu, E->root,
            E->sb.isolated ? "isolated by bubblewrap" : "NOT ISOLATED");
}

// Every prompt fits the sampler (a model's context) before any is sampled: else the run
// stops with the first misfit's reason, the others' count and indexes, and what to do.
static void cuset__eval_check_prompts(const cuset__EvalRun *R) {
    const CusetEvalSampler *sp = R->sampler;
    char why[600] = "", w[600], also[120] = "";
    int bad = 0;
    for (int t = R->first; t < R->last; t++) {
        if (sp->fits(sp->ctx, t, R->tasks[t].prompt, R->tasks[t].prompt_len, w, sizeof w)) continue;
        if (!bad++) snprintf(why, sizeof why, "%s", w);
        else if (bad <= 6) snprintf(also + strlen(also), sizeof also - strlen(also), "%s%d", bad > 2 ? ", " : "", t);
    }
    if (bad)
        cuset__eval_fail("%s; %d of tasks %d..%d have a prompt too long for the model%s%s%s: sample from a model with "
                         "a longer context, or leave them out with --first and --count", why, bad, R->first,
                         R->last - 1, bad > 1 ? " (also tasks " : "", also, bad > 6 ? ", ...)" : bad > 1 ? ")" : "");
}

// Each task with programs gets its files (ROOT/task-T, from data/corpus) and its programs
// a place in R->progs: the --programs file's, or `samples` to sample, each with its seed.
static void cuset__eval_collect(cuset__EvalRun *R) {
    char err[1200], taskdir[4200];
    R->t_start = cuset_time();
    for (int t = R->first; t < R->last; t++) {
        int todo = 0;
        if (R->given) { for (int i = 0; i < (int)arrlen(R->given); i++) todo += R->given[i].task == t; }
        else todo = R->samples;
        if (!todo) continue;
        if (cuset__eval_materialize(&R->E, t, cuset__eval_task_dir(&R->E, t, taskdir, sizeof taskdir), err, sizeof err)) {
            fprintf(stderr, CUSET_EVAL_WHO ": %s\n", err);
            cuset_remove_tree(R->E.root);
            exit(1); // the corpus failed, not the command line
        }
        R->evaluated_tasks++;
        for (int s = 0, gi = 0; s < todo; s++) {
            cuset__EvalProgram p = {t, s, 0, 0, NULL, 0};
            if (R->given) {
                while (R->given[gi].task != t) gi++;
                p = R->given[gi++];
                p.text = cuset__eval_copy(p.text, p.len);
            } else {
                p.has_seed = 1;
                p.seed = R->sampler->seed + 1000ull * (uint64_t)t + (uint64_t)s;
            }
            arrput(R->progs, p);
        }
    }
}

// The cache file of program i.
static char *cuset__eval_cache_file(const cuset__EvalRun *R, int i, char *out, size_t cap) {
    cuset__eval_cache_path(&R->E, R->o->cache_dir, &R->tasks[R->progs[i].task], &R->progs[i], out, cap);
    return out;
}

// Program i's result from the cache (--cache), when it is there: 1, else 0.
static int cuset__eval_from_cache(cuset__EvalRun *R, int i) {
    char cpath[4200];
    if (!R->o->cache_dir || !cuset__eval_cache_get(cuset__eval_cache_file(R, i, cpath, sizeof cpath), &R->results[i]))
        return 0;
    R->cached++;
    return 1;
}

// Starts a worker for program i; *fd gets the pipe its result comes through. Returns its pid.
static pid_t cuset__eval_launch(const cuset__EvalRun *R, int i, int *fd) {
    char taskdir[4200];
    int pipefd[2];
    pid_t pid = -1;
    cuset__eval_task_dir(&R->E, R->progs[i].task, taskdir, sizeof taskdir);
    if (pipe(pipefd) || (pid = cuset__eval_start(&R->E, taskdir, &R->progs[i], i, pipefd[1])) < 0)
        cuset__eval_fail("cannot start a worker: %s", strerror(errno));
    close(pipefd[1]);
    *fd = pipefd[0];
    for (int w = 0; w < 256; w++)
        if (!cuset__eval_workers[w]) { cuset__eval_workers[w] = pid; break; }
    return pid;
}

// Waits for a worker and takes the result of its program: an error result when the worker
// died, else it goes to the cache too. Returns the program's index, or -1 (interrupted, or
// a child that is not one of the workers).
static int cuset__eval_reap(cuset__EvalRun *R, pid_t *pids, const int *fds, int started) {
    int ws;
    pid_t pid = wait(&ws);
    if (pid < 0) {
        if (errno != EINTR) cuset__eval_fail("wait: %s", strerror(errno));
        return -1;
    }
    int i = 0;
    while (i < started && pids[i] != pid) i++;
    if (i == started) return -1;
    cuset__EvalResult *r = &R->results[i];
    size_t got = 0;
    for (ssize_t n; got < sizeof *r && (n = read(fds[i], (char *)r + got, sizeof *r - got)) != 0;)
        if (n > 0) got += (size_t)n; else if (errno != EINTR) break;
    close(fds[i]);
    for (int w = 0; w < 256; w++)
        if (cuset__eval_workers[w] == pid) cuset__eval_workers[w] = 0;
    pids[i] = 0;
    char cpath[4200];
    if (got != sizeof *r || !WIFEXITED(ws) || WEXITSTATUS(ws)) {
        cuset__eval_result_init(r);
        cuset__eval_verdict(r, CUSET_EVAL_ERROR, "the worker evaluating this program died (status %d)", ws);
    } else if (R->o->cache_dir && r->status != CUSET_EVAL_ERROR)
        cuset__eval_cache_put(cuset__eval_cache_file(R, i, cpath, sizeof cpath), r);
    return i;
}

// Evaluates every program: a result from the cache at once, the others in workers, up to
// --jobs at a time, with a progress line for each.
static void cuset__eval_run_all(cuset__EvalRun *R) {
    const CusetEvalOpts *o = R->o;
    int total = (int)arrlen(R->progs), done = 0, running = 0, next = 0;
    R->results = (cuset__EvalResult *)CUSET_CALLOC(total + 1, sizeof *R->results);
    int *fds = (int *)CUSET_CALLOC(total + 1, sizeof(int));
    pid_t *pids = (pid_t *)CUSET_CALLOC(total + 1, sizeof *pids);
    R->jobs = o->jobs < 1 ? 1 : o->jobs > 256 ? 256 : o->jobs;
    R->t_eval = cuset_time();
    while (done < total) {
        for (; next < total && running < R->jobs; next++) { // start what may start; take cached results at once
            if (cuset__eval_from_cache(R, next)) done++;
            else pids[next] = cuset__eval_launch(R, next, &fds[next]), running++;
        }
        if (!running) continue;
        int i = cuset__eval_reap(R, pids, fds, next);
        if (i < 0) continue;
        running--, done++;
        const cuset__EvalTask *t = &R->tasks[R->progs[i].task];
        double el = cuset_time() - R->t_eval;
        fprintf(stderr, "eval: %d/%d task %s (%s) sample %d: %s (%.1f s) | %.2f programs/s, %d from the cache\n", done,
                total, t->id, t->family, R->progs[i].sample, cuset_eval_status_names[R->results[i].status],
                R->results[i].seconds, done / (el > 0 ? el : 1), R->cached);
    }
    free(fds), free(pids);
}

// Writes one JSON line per program to the results file, in program order, and counts the
// outcomes per task and overall. Exits 2 when there was no program at all.
static void cuset__eval_record(cuset__EvalRun *R) {
    int total = (int)arrlen(R->progs);
    R->tally = (cuset__EvalTally *)calloc(R->ntasks, sizeof *R->tally);
    FILE *rf = cuset__eval_create(R->results_path);
    for (int i = 0; i < total; i++) {
        const cuset__EvalResult *r = &R->results[i];
        cuset__eval_write_result(rf, &R->tasks[R->progs[i].task], &R->progs[i], r);
        cuset__EvalTally *ty = &R->tally[R->progs[i].task];
        ty->n++;
        ty->c_compile += r->compile_ok;
        ty->c_pass += r->status == CUSET_EVAL_PASS;
        ty->n_unsupported += r->status == CUSET_EVAL_UNSUPPORTED;
        R->counts[r->status]++;
    }
    if (!R->E.keep_dirs) cuset_remove_tree(R->E.root);
    cuset__eval_commit(rf, R->results_path);
    if (!total)
        cuset__eval_fail("no program to evaluate for tasks %d..%d (check --first, --count and the indexes in %s)", R->first,
                         R->last - 1, R->o->programs_path ? R->o->programs_path : "");
}

// The report on stdout: what was evaluated and how, pass@k, the outcomes, pass@1 per family.
static void cuset__eval_report(const cuset__EvalRun *R) {
    const CusetEvalOpts *o = R->o;
    const cuset__EvalEnv *E = &R->E;
    int total = (int)arrlen(R->progs);
    double el = cuset_time() - R->t_eval;
    printf("eval: %s, %d task%s (of tasks %d..%d)\n", o->tasks_path, R->evaluated_tasks,
           cuset__eval_s(R->evaluated_tasks), R->first, R->last - 1);
    if (R->sampler)
        printf("programs: sampled from %s, %d per task (%s, seed %llu)\n", R->sampler->name, R->samples,
               R->sampler->settings, (unsigned long long)R->sampler->seed);
    else
        printf("programs: %d from %s\n", total, o->programs_path);
    printf("evaluated: %d program%s in %.1f s (%.2f per minute, %d job%s), %d result%s from the cache%s%s\n", total,
           cuset__eval_s(total), el, 60.0 * total / (el > 0 ? el : 1), R->jobs, cuset__eval_s(R->jobs), R->cached,
           cuset__eval_s(R->cached), o->cache_dir ? " " : "", o->cache_dir ? o->cache_dir : "");
    printf("compilation check: %s\n", cuset__eval_compiler(E));
    printf("runs: %s%s, %g s limit\n", E->use_gpu ? "on the GPU (nvcc's binary)" : "on the CPU emulator ", E->use_gpu ? "" : E->emu,
           E->timeout);
    cuset__eval_print_pass_at_k("compilation ", 0, R->tasks, R->tally, R->first, R->last, R->ks, R->nk, R->evaluated_tasks);
    cuset__eval_print_pass_at_k("functional  ", 1, R->tasks, R->tally, R->first, R->last, R->ks, R->nk, R->evaluated_tasks);
    if (R->counts[CUSET_EVAL_UNSUPPORTED]) // the same without the programs the emulator cannot run
        cuset__eval_print_pass_at_k("functional, unsupported left out:", 2, R->tasks, R->tally, R->first, R->last, R->ks, R->nk,
                                    R->evaluated_tasks);
    printf("outcomes of %d program%s:", total, cuset__eval_s(total));
    for (int s = 0; s < CUSET_EVAL_NSTATUS; s++)
        printf(" %s %d%s", cuset_eval_status_names[s], R->counts[s], s + 1 < CUSET_EVAL_NSTATUS ? "," : "\n");
    if (!E->use_gpu)
        printf("(unsupported: the emulator does not model a feature the program uses, or cannot build a program nvcc "
               "compiles; counted as not passing; the line 'unsupported left out' drops them)\n");
    cuset__eval_print_families(R->tasks, R->tally, R->first, R->last);
    printf("results: %s\n", R->results_path);
    if (E->keep_dirs) printf("work directories kept in %s\n", E->root);
    if (o->summary_path) printf("summary: %s\n", o->summary_path);
}

static void cuset__eval_free(cuset__EvalRun *R) {
    for (int t = 0; t < R->ntasks; t++) {
        cuset__EvalTask *k = &R->tasks[t];
        free(k->prompt), free(k->id), free(k->family);
    }
    arrfree(R->tasks);
    for (int i = 0; i < (int)arrlen(R->given); i++) free(R->given[i].text);
    arrfree(R->given);
    for (int i = 0; i < (int)arrlen(R->progs); i++) free(R->progs[i].text);
    arrfree(R->progs);
    free(R->results);
    free(R->tally);
    free(R->E.root);
    cuset_sandbox_free(&R->E.sb);
}

int cuset_eval_main(const CusetEvalOpts *o, const CusetEvalSampler *sampler) {
    cuset__wait_for_children();
    cuset__EvalRun R = {.o = o, .sampler = sampler, .E = {.tasks_path = o->tasks_path, .keep_dirs = o->keep_dirs,
                        .timeout = o->timeout, .compile_timeout = o->compile_timeout, .disk_mib = o->disk_mib}};
    cuset__eval_check_options(&R);
    cuset__eval_locate_split(&R.E, o->tasks_path);
    cuset__eval_find_tools(&R.E, o);
    cuset__eval_choose_outputs(&R);
    cuset__eval_isolate(&R.E, o->unsafe_no_sandbox);
    cuset__eval_load(&R);
    if (sampler && sampler->open(sampler->ctx, R.samples)) { cuset__eval_free(&R); return 1; }
    if (sampler) cuset__eval_check_prompts(&R);
    cuset__eval_open_run(&R);
    cuset__eval_collect(&R);
    if (!R.given) cuset__eval_sample_all(&R.E, sampler, R.tasks, R.progs, (int)arrlen(R.progs), o->jobs);
    cuset__eval_run_all(&R);
    cuset__eval_record(&R);
    if (o->summary_path)
        cuset__eval_summary(o->summary_path, R.tasks, R.tally, R.first, R.last, R.ks, R.nk, R.counts, sampler ? R.samples : 0,
                            cuset_time() - R.t_start);
    cuset__eval_report(&R);
    cuset__eval_free(&R);
    return 0;
}


#endif // CUSET_EVAL_IMPLEMENTATION_DONE
#endif // CUSET_EVAL_IMPLEMENTATION
