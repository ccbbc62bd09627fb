// sandbox.h - runs an untrusted program (and its compilation) isolated, with bubblewrap.
// stb style: #define CUSET_SANDBOX_IMPLEMENTATION in exactly one C file before including.
// Linux only; needs bwrap (Debian package `bubblewrap`), and prlimit and setpriv (util-linux).
//
//   CusetSandbox sb;
//   if (cuset_sandbox_init(&sb, gpu)) refuse, or go on unisolated only if the user said so
//   cuset_sandbox_add_tool(&sb, "/path/to/emu", err, sizeof err);  // visible read-only
//   cuset_sandbox_prepare_dir(&sb, dir, err, sizeof err);          // the writable directory
//   char **cmd = cuset_sandbox_argv(&sb, dir, argv);  // fork + execv(cmd[0], cmd): argv, isolated
//   cuset_sandbox_argv_free(cmd); cuset_sandbox_free(&sb);
//
// What a command started with cuset_sandbox_argv gets (each is a namespace or mount that
// bubblewrap sets up before exec; cuset_sandbox_init checks once that it works here):
// - Files: the system read-only (/usr, /etc, /opt and the /bin, /lib... links into /usr);
//   the tools added read-only at their own paths; its work directory read-write (its
//   working directory, at its own path). Nothing else exists for it: not /home, /root, the
//   project checkout, other work directories, the host's /tmp, /run, /var, /mnt, /sys
//   (/sys is there read-only with a GPU). /proc is its own (its processes only), /dev a
//   minimal one (null, zero, full, random, urandom, tty, plus /dev/nvidia* with a GPU), /tmp
//   and /dev/shm private memory file systems of CUSET_SANDBOX_TMP_BYTES each, and the root
//   and /dev themselves read-only, so nothing else can be written.
// - No network: its own network namespace holds only a loopback device.
// - Its own PID namespace: it sees and can signal only its own processes; when its first
//   process ends, or the process that started bubblewrap dies, the kernel kills every
//   process in it (a setsid'd, double-forked child included).
// - Its own IPC, UTS and cgroup namespaces.
// - Not root: it runs as the caller's user, or as nobody (65534) when the caller is root
//   (setpriv drops to it before bubblewrap starts), without capabilities, with
//   no_new_privs (setuid programs do not raise it), and unable to make user namespaces.
// - At most CUSET_SANDBOX_NPROC processes (RLIMIT_NPROC, set inside its user namespace so
//   it counts its own processes only): a fork bomb fails at fork.
// - An environment of PATH, LANG, LC_ALL, CXX, CUDA_*, CUEMU_*, NVCC_EMU_* only (no tokens
//   or keys of the caller's), with HOME set to the work directory and TMPDIR to /tmp.
// What it does not do:
// - Limit time, CPU, memory, file sizes or the disk: the runner does that (rlimits, the
//   wall clock, a watch on the disk: what the work directory holds when the program is
//   isolated, the file system's free space when not). Memory is then limited per process
//   only: up to CUSET_SANDBOX_NPROC processes can together still exhaust the machine's.
// - Protect against kernel bugs: same kernel, no seccomp filter.
// - Hide world-readable system files (/etc/passwd, installed packages), or the GPU: with
//   a GPU, the program shares the device with everything else on the machine. The device
//   nodes must exist before the sandbox starts (nvidia-modprobe, which makes
//   /dev/nvidia-uvm on first use, is setuid and cannot work inside), so a GPU sandbox
//   runs nvidia-modprobe first when /dev/nvidia-uvm is missing.
// - Make what the program leaves in its directory trustworthy: a later step must expect
//   symbolic links, FIFOs and odd permissions there.
#ifndef CUSET_SANDBOX_H
#define CUSET_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#define CUSET_SANDBOX_NPROC 256                // processes and threads a sandbox may have
#define CUSET_SANDBOX_TMP_BYTES (256ull << 20) // the size of its /tmp and of its /dev/shm
#define CUSET_SANDBOX_NOBODY 65534             // whom a root caller's programs run as

typedef struct {
    int isolated;       // 1: bubblewrap works here and cuset_sandbox_argv isolates
    char why[800];      // isolated == 0: why not, in a sentence
    uid_t uid;          // who the programs run as
    gid_t gid;
    int drop_root;      // the caller is root: setpriv makes the programs nobody
    int gpu;            // /dev/nvidia* and /sys are reachable
    char bwrap[4096], prlimit[4096], setpriv[4096];
    char **binds;       // bound at their own paths: the tools (read-only), the GPU's device nodes
    int nbinds;
} CusetSandbox;

// Finds bubblewrap (the file CUSET_BWRAP names, else bwrap on PATH) and its helpers, and
// runs `true` in a sandbox to see that this machine allows one (user namespaces). gpu:
// keep the NVIDIA device nodes reachable. Returns 0 when programs can run isolated, else
// -1 with the reason in sb->why.
int cuset_sandbox_init(CusetSandbox *sb, int gpu);
// Makes path (a file or a directory) visible read-only inside, at the same path: the
// compilers, emulator and comparison programs that are not under /usr, /etc or /opt. When
// the programs run as nobody, path must be open to others (r and x). 0, or -1 with a message.
int cuset_sandbox_add_tool(CusetSandbox *sb, const char *path, char *err, size_t errlen);
// Makes dir a directory the sandboxed programs can write: when they run as nobody, dir and
// what is directly in it are given to nobody (links themselves, never what they point
// to), and each directory above it must let others through (a mkdtemp directory does
// not: chmod it 0711). Call it before each command, after adding files. 0, or -1.
int cuset_sandbox_prepare_dir(const CusetSandbox *sb, const char *dir, char *err, size_t errlen);
// 0 when the programs' user can get into dir (always, when they run as the caller), else
// -1 saying which directory stops it: a check, at the start, of where work directories go.
int cuset_sandbox_can_reach(const CusetSandbox *sb, const char *dir, char *err, size_t errlen);
// The command line that runs argv (argv[0] an absolute path or a name on PATH) inside the
// sandbox, with dir (absolute; NULL: none) its writable working directory. When
// sb->isolated is 0 it is a copy of argv: the caller decides whether to run it so.
// malloc'd; free with cuset_sandbox_argv_free.
char **cuset_sandbox_argv(const CusetSandbox *sb, const char *dir, char *const argv[]);
void cuset_sandbox_argv_free(char **cmd);
// The signal that ended a sandboxed command which exited with exit_code (bubblewrap tells
// a death by signal N as exit 128 + N, as a shell does), 0 for a plain exit.
int cuset_sandbox_signal(const CusetSandbox *sb, int exit_code);
void cuset_sandbox_free(CusetSandbox *sb);

#endif // CUSET_SANDBOX_H

#ifdef CUSET_SANDBOX_IMPLEMENTATION
#ifndef CUSET_SANDBOX_IMPLEMENTATION_DONE // emu/eval.h's implementation brings it along too
#define CUSET_SANDBOX_IMPLEMENTATION_DONE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

// printf into out (cap bytes, truncated): the messages, which quote paths of any length.
// A twin of cuset.h's cuset__err, kept because this header works without cuset.h.
__attribute__((format(printf, 3, 4)))
static void cuset__sb_say(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, cap, fmt, ap);
    va_end(ap);
}

// name found on PATH (or in /usr/bin, /bin) as an absolute path into out. 0, or -1.
static int cuset__sb_which(const char *name, char *out, size_t cap) {
    const char *path = getenv("PATH");
    char all[8192];
    snprintf(all, sizeof all, "%s:/usr/bin:/bin", path && *path ? path : "");
    for (char *save = NULL, *dir = strtok_r(all, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        if (dir[0] != '/') continue; // a relative PATH entry names nothing reliable
        int n = snprintf(out, cap, "%s/%s", dir, name);
        struct stat st;
        if (n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) return 0;
    }
    return -1;
}

static void cuset__sb_bind(CusetSandbox *sb, const char *path) {
    sb->binds = (char **)realloc(sb->binds, (sb->nbinds + 1) * sizeof *sb->binds);
    sb->binds[sb->nbinds++] = strdup(path);
}

// A growing, NULL-terminated argv of malloc'd strings.
typedef struct { char **v; int n, cap; } cuset__sb_args;

static void cuset__sb_push(cuset__sb_args *a, const char *s) {
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->v = (char **)realloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = strdup(s);
    a->v[a->n] = NULL;
}

static void cuset__sb_push2(cuset__sb_args *a, const char *opt, const char *v) {
    cuset__sb_push(a, opt);
    cuset__sb_push(a, v);
}

static void cuset__sb_push3(cuset__sb_args *a, const char *opt, const char *v1, const char *v2) {
    cuset__sb_push(a, opt);
    cuset__sb_push(a, v1);
    cuset__sb_push(a, v2);
}

static int cuset__sb_under(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == 0);
}

// Visible anyway: under a system directory the sandbox binds whole.
static int cuset__sb_is_system(const char *path) {
    return cuset__sb_under(path, "/usr") || cuset__sb_under(path, "/etc") || cuset__sb_under(path, "/opt");
}

static int cuset__sb_env_passes(const char *var) {
    const char *keep[] = {"PATH=", "LANG=", "LC_ALL=", "CXX=", "CUDA_", "CUEMU_", "NVCC_EMU_"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (!strncmp(var, keep[i], strlen(keep[i]))) return 1;
    return 0;
}

char **cuset_sandbox_argv(const CusetSandbox *sb, const char *dir, char *const argv[]) {
    cuset__sb_args a = {NULL, 0, 0};
    if (!sb->isolated) {
        for (int i = 0; argv[i]; i++) cuset__sb_push(&a, argv[i]);
        return a.v;
    }
    char num[64];
    if (sb->drop_root) { // bubblewrap itself runs as nobody, so RLIMIT_NPROC counts (root is exempt)
        cuset__sb_push(&a, sb->setpriv);
        snprintf(num, sizeof num, "--reuid=%d", (int)sb->uid);
        cuset__sb_push(&a, num);
        snprintf(num, sizeof num, "--regid=%d", (int)sb->gid);
        cuset__sb_push(&a, num);
        cuset__sb_push(&a, "--clear-groups");
        cuset__sb_push(&a, "--no-new-privs");
        cuset__sb_push(&a, "--");
    }
    cuset__sb_push(&a, sb->bwrap);
    const char *ns[] = {"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) cuset__sb_push(&a, ns[i]);
    // the system, read-only; /bin, /lib, ... as they are here (links into /usr, or directories)
    cuset__sb_push3(&a, "--ro-bind", "/usr", "/usr");
    const char *top[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        struct stat st;
        char target[4096];
        if (lstat(top[i], &st)) continue;
        ssize_t n = S_ISLNK(st.st_mode) ? readlink(top[i], target, sizeof target - 1) : -1;
        if (n > 0) {
            target[n] = 0;
            cuset__sb_push3(&a, "--symlink", target, top[i]);
        } else if (S_ISDIR(st.st_mode)) {
            cuset__sb_push3(&a, "--ro-bind", top[i], top[i]);
        }
    }
    cuset__sb_push3(&a, "--ro-bind", "/etc", "/etc");
    cuset__sb_push3(&a, "--ro-bind-try", "/opt", "/opt");
    cuset__sb_push2(&a, "--proc", "/proc");
    cuset__sb_push2(&a, "--dev", "/dev");
    snprintf(num, sizeof num, "%llu", (unsigned long long)CUSET_SANDBOX_TMP_BYTES);
    cuset__sb_push2(&a, "--size", num);
    cuset__sb_push2(&a, "--tmpfs", "/tmp");
    cuset__sb_push2(&a, "--size", num);
    cuset__sb_push2(&a, "--tmpfs", "/dev/shm");
    if (sb->gpu) cuset__sb_push3(&a, "--ro-bind", "/sys", "/sys");
    for (int i = 0; i < sb->nbinds; i++)
        cuset__sb_push3(&a, !strncmp(sb->binds[i], "/dev/", 5) ? "--dev-bind" : "--ro-bind", sb->binds[i], sb->binds[i]);
    if (dir) cuset__sb_push3(&a, "--bind", dir, dir);
    cuset__sb_push2(&a, "--chdir", dir ? dir : "/");
    // nothing else writable: the root and /dev (the mounts on them stay as they are)
    cuset__sb_push2(&a, "--remount-ro", "/dev");
    cuset__sb_push2(&a, "--remount-ro", "/");
    // the environment: a short list of the caller's, nothing that may hold a secret
    cuset__sb_push(&a, "--clearenv");
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || !cuset__sb_env_passes(*e)) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        cuset__sb_push3(&a, "--setenv", name, eq + 1);
    }
    if (!getenv("PATH")) cuset__sb_push3(&a, "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin");
    cuset__sb_push3(&a, "--setenv", "HOME", dir ? dir : "/");
    cuset__sb_push3(&a, "--setenv", "TMPDIR", "/tmp");
    // the command, under a process limit set inside (so it counts the sandbox's processes)
    cuset__sb_push(&a, "--");
    cuset__sb_push(&a, sb->prlimit);
    snprintf(num, sizeof num, "--nproc=%d:%d", CUSET_SANDBOX_NPROC, CUSET_SANDBOX_NPROC);
    cuset__sb_push(&a, num);
    cuset__sb_push(&a, "--");
    for (int i = 0; argv[i]; i++) cuset__sb_push(&a, argv[i]);
    return a.v;
}

void cuset_sandbox_argv_free(char **cmd) {
    for (int i = 0; cmd && cmd[i]; i++) free(cmd[i]);
    free(cmd);
}

int cuset_sandbox_signal(const CusetSandbox *sb, int exit_code) {
    return sb->isolated && exit_code > 128 && exit_code < 128 + 65 ? exit_code - 128 : 0;
}

// Runs cmd with stdin and stdout on /dev/null and its stderr into msg (the first cap - 1
// bytes, trailing newlines dropped), for at most timeout_s. Its exit status, or -1.
static int cuset__sb_probe(char **cmd, double timeout_s, char *msg, size_t cap) {
    int fds[2];
    msg[0] = 0;
    if (pipe(fds)) { cuset__sb_say(msg, cap, "pipe: %s", strerror(errno)); return -1; }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) { cuset__sb_say(msg, cap, "fork: %s", strerror(errno)); close(fds[0]); close(fds[1]); return -1; }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(fds[1], 2) < 0) _exit(127);
        long open_max = sysconf(_SC_OPEN_MAX);
        for (int fd = 3; fd < (open_max > 0 && open_max < 65536 ? open_max : 65536); fd++) close(fd);
        execv(cmd[0], cmd);
        dprintf(2, "cannot run %s: %s", cmd[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) { // its stderr, until it closes it or the time is up
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = timeout_s - (double)(now.tv_sec - t0.tv_sec) - 1e-9 * (double)(now.tv_nsec - t0.tv_nsec);
        struct pollfd p = {fds[0], POLLIN, 0};
        int r = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { kill(pid, SIGKILL); cuset__sb_say(msg, cap, "no answer in %g s", timeout_s); break; }
        char buf[512];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n && got + 1 < cap; i++) msg[got++] = buf[i];
        msg[got] = 0;
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    while (got > 0 && (msg[got - 1] == '\n' || msg[got - 1] == ' ')) msg[--got] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Until a first CUDA program runs on a freshly booted machine, /dev/nvidia-uvm (and maybe
// /dev/nvidia0) does not exist: the CUDA runtime has the setuid nvidia-modprobe make them,
// which it cannot do inside the sandbox. So they are made here, before the sandbox binds
// what /dev holds; without nvidia-modprobe, the GPU runner's test program finds out.
static void cuset__sb_make_gpu_nodes(void) {
    char tool[4096], msg[200];
    if (access("/dev/nvidia-uvm", F_OK) == 0 || cuset__sb_which("nvidia-modprobe", tool, sizeof tool)) return;
    char u[] = "-u", c0[] = "-c=0";
    char *cmd[] = {tool, u, c0, NULL};
    cuset__sb_probe(cmd, 30, msg, sizeof msg);
}

int cuset_sandbox_init(CusetSandbox *sb, int gpu) {
    memset(sb, 0, sizeof *sb);
    sb->drop_root = geteuid() == 0;
    sb->uid = sb->drop_root ? CUSET_SANDBOX_NOBODY : getuid();
    sb->gid = sb->drop_root ? CUSET_SANDBOX_NOBODY : getgid();
    sb->gpu = gpu;
    const char *bwrap = getenv("CUSET_BWRAP");
    if (bwrap && *bwrap) {
        snprintf(sb->bwrap, sizeof sb->bwrap, "%s", bwrap);
        if (bwrap[0] != '/' || access(bwrap, X_OK)) {
            cuset__sb_say(sb->why, sizeof sb->why, "bubblewrap: CUSET_BWRAP=%s is not an executable given by its "
                          "absolute path", bwrap);
            return -1;
        }
    } else if (cuset__sb_which("bwrap", sb->bwrap, sizeof sb->bwrap)) {
        cuset__sb_say(sb->why, sizeof sb->why, "bubblewrap is not installed (no bwrap on PATH; Debian: apt-get "
                      "install bubblewrap)");
        return -1;
    }
    if (cuset__sb_which("prlimit", sb->prlimit, sizeof sb->prlimit) ||
        (sb->drop_root && cuset__sb_which("setpriv", sb->setpriv, sizeof sb->setpriv))) {
        cuset__sb_say(sb->why, sizeof sb->why, "prlimit or setpriv is missing (Debian: apt-get install util-linux)");
        return -1;
    }
    if (gpu) { // the device nodes the CUDA runtime opens: nvidiactl, nvidia-uvm, nvidia0, ...
        cuset__sb_make_gpu_nodes();
        DIR *d = opendir("/dev");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strncmp(e->d_name, "nvidia", 6)) continue;
            char path[300];
            snprintf(path, sizeof path, "/dev/%s", e->d_name);
            cuset__sb_bind(sb, path);
        }
        if (d) closedir(d);
    }
    sb->isolated = 1; // so that cuset_sandbox_argv builds the real command
    char true_[] = "true", msg[400];
    char *argv[] = {true_, NULL};
    char **cmd = cuset_sandbox_argv(sb, NULL, argv);
    int rc = cuset__sb_probe(cmd, 30, msg, sizeof msg);
    cuset_sandbox_argv_free(cmd);
    if (rc != 0) {
        sb->isolated = 0;
        cuset__sb_say(sb->why, sizeof sb->why, "bubblewrap cannot make a sandbox here (%s); it needs unprivileged "
                      "user namespaces (user.max_user_namespaces > 0, and in a container a seccomp profile and "
                      "AppArmor policy that allow them)", msg[0] ? msg : "no message");
        return -1;
    }
    return 0;
}

// Can nobody (as "others") reach path: x on every directory above it, and the permissions
// `need` (S_IROTH, S_IXOTH) on path itself? 0, or -1 naming the first that stops it.
static int cuset__sb_nobody_reaches(const char *path, mode_t need, char *err, size_t errlen) {
    char walk[4096];
    snprintf(walk, sizeof walk, "%s", path);
    for (char *slash = strchr(walk + 1, '/');; slash = strchr(slash + 1, '/')) {
        if (slash) *slash = 0;
        mode_t want = slash ? S_IXOTH : need;
        struct stat st;
        if (stat(walk, &st) || (st.st_mode & want) != want) {
            cuset__sb_say(err, errlen, "%s is not %s by nobody (uid %d), whom generated programs run as when the "
                          "evaluation runs as root: open it to others (chmod o+%s), or run as an ordinary user", walk,
                          want & S_IROTH ? "readable" : "searchable", CUSET_SANDBOX_NOBODY, want & S_IROTH ? "rx" : "x");
            return -1;
        }
        if (!slash) return 0;
        *slash = '/';
    }
}

int cuset_sandbox_can_reach(const CusetSandbox *sb, const char *dir, char *err, size_t errlen) {
    return sb->isolated && sb->drop_root ? cuset__sb_nobody_reaches(dir, S_IXOTH, err, errlen) : 0;
}

int cuset_sandbox_add_tool(CusetSandbox *sb, const char *path, char *err, size_t errlen) {
    char real[4096];
    if (!realpath(path, real)) { cuset__sb_say(err, errlen, "%s: %s", path, strerror(errno)); return -1; }
    if (cuset__sb_is_system(real)) return 0;
    if (sb->drop_root && cuset__sb_nobody_reaches(real, S_IROTH | S_IXOTH, err, errlen)) return -1;
    cuset__sb_bind(sb, real);
    return 0;
}

int cuset_sandbox_prepare_dir(const CusetSandbox *sb, const char *dir, char *err, size_t errlen) {
    if (!sb->isolated || !sb->drop_root) return 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    int rc = d && fchown(fd, sb->uid, sb->gid) == 0 ? 0 : -1;
    struct dirent *e;
    while (!rc && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rc = fchownat(fd, e->d_name, sb->uid, sb->gid, AT_SYMLINK_NOFOLLOW);
    if (rc) cuset__sb_say(err, errlen, "cannot give %s to nobody for the sandbox: %s", dir, strerror(errno));
    if (d) closedir(d);
    else if (fd >= 0) close(fd);
    if (rc) return -1;
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    if (strrchr(parent, '/')) *strrchr(parent, '/') = 0;
    return cuset_sandbox_can_reach(sb, parent[0] ? parent : "/", err, errlen);
}

void cuset_sandbox_free(CusetSandbox *sb) {
    for (int i = 0; i < sb->nbinds; i++) free(sb->binds[i]);
    free(sb->binds);
    sb->binds = NULL;
    sb->nbinds = 0;
}

#endif // CUSET_SANDBOX_IMPLEMENTATION_DONE
#endif // CUSET_SANDBOX_IMPLEMENTATION
