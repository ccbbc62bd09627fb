// test_sandbox.c - hostile programs through `gen --eval --programs`, each of which must be
// contained by the sandbox (emu/sandbox.h) and reported as crash, timeout or wrong_answer.
// Build and run from the repository root (make test does both):
//   make test/test_sandbox && ./test/test_sandbox
// Prints PASS/FAIL/SKIP per check and exits non-zero when a check fails.
// The programs (CUDA files the emulator builds, or nvcc on a GPU) try to: write and delete
// files outside their directory (in the project checkout and in /tmp), read a secret the
// test planted, connect to a listener the test opens on 127.0.0.1, kill every process
// (kill(-1, SIGKILL)) and their parents, fork without end, leave a setsid'd grandchild
// behind, fill the disk, and sleep forever. Afterwards the test checks that the planted
// files are unchanged, nothing was created outside, the listener saw no connection, no
// process of theirs is left and the secret is in no output. Without isolation on this
// machine (no bubblewrap, no user namespaces) the hostile programs are never run: those
// checks are SKIPped, and the test checks that gen refuses to run programs unless
// --unsafe-no-sandbox is given; with it, the reference and a harmless control program
// run unisolated, and the control's effects (a connection, a file in /tmp, a leftover
// process) must be seen, so the checks above are known to see what they look for.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"
#define CUSET_EVAL_IMPLEMENTATION
#include "../emu/eval.h" // the runner, and the sandbox's implementation with it

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testlib.h"

static char *tmp;        // this run's private directory (gen's TMPDIR)
static char tok[16];     // in every name this run plants, and the programs' process name
static char checkout[4096];

static char *path_in(const char *name) { // tmp/name, malloc'd (and never freed: a test)
    size_t n = strlen(tmp) + strlen(name) + 2;
    char *b = malloc(n);
    snprintf(b, n, "%s/%s", tmp, name);
    return b;
}

static CusetRunResult run_gen(char *const *argv, double timeout) {
    CusetRunResult r;
    cuset_run_limited_ex(argv, NULL, timeout, path_in("gen.out"), path_in("gen.err"),
                         &(CusetRunLimits){.file_bytes = 1ull << 30, .nofile = 256}, &r);
    return r;
}

static void show_gen_output(void) {
    char b[3000];
    printf("  stdout: %s\n", cuset_file_head(path_in("gen.out"), 30, b, sizeof b));
    printf("  stderr: %s\n", cuset_file_head(path_in("gen.err"), 30, b, sizeof b));
}

static void put_program(FILE *f, const char *text) {
    fprintf(f, "{\"index\": 0, \"program\": ");
    cuset_json_write_string(f, text, strlen(text));
    fprintf(f, "}\n");
}

// A hostile program: what they all start with (the names they attack, the listener's
// PORT, TEST_PID, and a process name, sbx + tok, by which the test finds whatever of them
// survives), then body.
static char *hostile(const char *body, int port) {
    const char *fmt =
        "#include <cerrno>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <csignal>\n"
        "#include <unistd.h>\n#include <fcntl.h>\n#include <sys/prctl.h>\n#include <sys/socket.h>\n"
        "#include <netinet/in.h>\n#include <arpa/inet.h>\n"
        "#define PORT \"%d\"\n#define TEST_PID %d\n"
        "static const char *planted[] = {\"%s/sbx_%s_planted\", \"/tmp/sbx_%s_planted\"};\n"
        "static const char *created[] = {\"%s/sbx_%s_created\", \"/tmp/sbx_%s_created\"};\n"
        "static void name(void) { prctl(PR_SET_NAME, \"sbx%s\"); }\n"
        "%s";
    size_t n = strlen(fmt) + strlen(body) + 4 * sizeof checkout + 200;
    char *s = malloc(n);
    snprintf(s, n, fmt, port, (int)getpid(), checkout, tok, tok, checkout, tok, tok, tok, body);
    return s;
}

// For the attacks on the comparison: for_each_output(SUFFIX, f) calls f(NAME SUFFIX, bytes) for
// each output of the task, as the spec.json beside the program lists them (read into spec).
#define SPEC_OUTPUTS                                                                                          \
    "#include <sys/stat.h>\n"                                                                                 \
    "static char spec[1 << 20];\n"                                                                            \
    "static void for_each_output(const char *suffix, void (*f)(const char *path, long bytes)) {\n"            \
    "    FILE *s = fopen(\"spec.json\", \"rb\");\n"                                                           \
    "    size_t n = s ? fread(spec, 1, sizeof spec - 1, s) : 0;\n"                                            \
    "    if (s) fclose(s);\n"                                                                                 \
    "    spec[n] = 0;\n"                                                                                      \
    "    for (char *p = strstr(spec, \"\\\"outputs\\\":[\"); p && (p = strstr(p + 1, \"{\\\"name\\\"\"));) {\n" \
    "        char name[128], dt[16], path[200];\n"                                                            \
    "        long a = 1, b = 1;\n"                                                                            \
    "        if (sscanf(p, \"{\\\"name\\\":\\\"%127[^\\\"]\\\",\\\"dtype\\\":\\\"%15[^\\\"]\\\",\\\"shape\\\":[%ld,%ld\", name, dt, &a, &b) < 3) break;\n" \
    "        snprintf(path, sizeof path, \"%s%s\", name, suffix);\n"                                          \
    "        f(path, a * b * (!strcmp(dt, \"float16\") ? 2 : !strcmp(dt, \"uint8\") ? 1 : 4));\n"             \
    "    }\n"                                                                                                 \
    "}\n"

// The attacks, each with the status gen must report.
static const struct { const char *name, *want, *body; } attacks[] = {
    {"write_outside", "crash",
     "int main() {\n"
     "    name();\n"
     "    int done = 0;\n"
     "    for (int i = 0; i < 2; i++) {\n"
     "        FILE *f = fopen(created[i], \"w\");\n"
     "        if (f) { fputs(\"written\", f); fclose(f); done++; }\n"
     "        f = fopen(planted[i], \"a\");\n"
     "        if (f) { fputs(\"changed\", f); fclose(f); done++; }\n"
     "        done += unlink(planted[i]) == 0;\n"
     "    }\n"
     "    fprintf(stderr, \"%d of 6 changes to those paths succeeded, as far as it can see\\n\", done);\n"
     "    return 1;\n"
     "}\n"},
    {"read_secret", "crash",
     "int main() {\n"
     "    name();\n"
     "    for (int i = 0; i < 2; i++) {\n"
     "        char b[200] = \"\";\n"
     "        FILE *f = fopen(planted[i], \"r\");\n"
     "        if (f) { size_t n = fread(b, 1, sizeof b - 1, f); b[n] = 0; fclose(f); }\n"
     "        printf(\"read: %s\\n\", b);\n"
     "        fprintf(stderr, \"read %s: %s\\n\", planted[i], f ? b : \"(cannot open)\");\n"
     "        FILE *o = fopen(\"result.bin\", \"w\");\n"
     "        if (o) { fputs(b, o); fclose(o); }\n"
     "    }\n"
     "    return 1;\n"
     "}\n"},
    {"connect_listener", "crash",
     "int main() {\n"
     "    name();\n"
     "    int s = socket(AF_INET, SOCK_STREAM, 0);\n"
     "    struct sockaddr_in a;\n"
     "    memset(&a, 0, sizeof a);\n"
     "    a.sin_family = AF_INET;\n"
     "    a.sin_port = htons(atoi(PORT));\n"
     "    a.sin_addr.s_addr = htonl(0x7f000001);\n"
     "    int c = connect(s, (struct sockaddr *)&a, sizeof a);\n"
     "    if (c == 0) { ssize_t w = write(s, \"hello\", 5); (void)w; }\n"
     "    fprintf(stderr, \"connect to 127.0.0.1:%s: %s\\n\", PORT, c == 0 ? \"connected\" : strerror(errno));\n"
     "    return 1;\n"
     "}\n"},
    {"kill_everything", "crash",
     "int main() {\n"
     "    name();\n"
     "    int a = kill(-1, SIGKILL), b = kill(getppid(), SIGKILL), c = kill(TEST_PID, SIGKILL);\n"
     "    fprintf(stderr, \"kill(-1): %d, kill(parent %d): %d, kill(test %d): %d\\n\", a, (int)getppid(), b, TEST_PID, c);\n"
     "    return 1;\n"
     "}\n"},
    {"fork_bomb", "timeout",
     "int main() {\n"
     "    name();\n"
     "    for (;;) fork();\n"
     "}\n"},
    {"setsid_survivor", "wrong_answer",
     "int main() {\n"
     "    name();\n"
     "    if (fork() == 0) {\n"
     "        setsid();\n"
     "        if (fork() == 0) {\n"
     "            for (;;) { FILE *f = fopen(created[1], \"w\"); if (f) fclose(f); sleep(1); }\n"
     "        }\n"
     "        _exit(0);\n"
     "    }\n"
     "    return 0;\n"
     "}\n"},
    {"fill_disk", "crash",
     "int main() {\n"
     "    name();\n"
     "    static char block[1 << 20];\n"
     "    memset(block, 'x', sizeof block);\n"
     "    const char *dirs[] = {\"/tmp\", \"/dev/shm\", \".\"};\n"
     "    long mb = 0;\n"
     "    for (int d = 0; d < 3; d++) {\n"
     "        for (int i = 0;; i++) {\n"
     "            char p[256];\n"
     "            snprintf(p, sizeof p, \"%s/fill%d\", dirs[d], i);\n"
     "            FILE *f = fopen(p, \"w\");\n"
     "            if (!f) break;\n"
     "            int full = 0;\n"
     "            for (int k = 0; k < 64 && !full; k++, mb++) full = fwrite(block, 1, sizeof block, f) != sizeof block;\n"
     "            if (fclose(f) || full) break;\n"
     "        }\n"
     "    }\n"
     "    fprintf(stderr, \"wrote %ld MiB\\n\", mb);\n"
     "    return 1;\n"
     "}\n"},
    {"sleep_forever", "timeout",
     "int main() {\n"
     "    name();\n"
     "    for (;;) sleep(1000);\n"
     "}\n"},
    // outputs of zeros, and a spec.json that allows any error: the comparison reads the task's own
    {"spec_rewritten", "wrong_answer",
     SPEC_OUTPUTS
     "static void zeros(const char *path, long bytes) {\n"
     "    FILE *o = fopen(path, \"wb\");\n"
     "    for (long j = 0; o && j < bytes; j++) fputc(0, o);\n"
     "    if (o) fclose(o);\n"
     "}\n"
     "int main() {\n"
     "    name();\n"
     "    for_each_output(\".bin\", zeros);\n"
     "    char *at = strstr(spec, \"\\\"atol\\\":\"), *id = strstr(spec, \"\\\"id\\\":\");\n"
     "    FILE *f = fopen(\"spec.json\", \"wb\");\n"
     "    if (f && at && id) { fwrite(spec, 1, at - spec, f); fputs(\"\\\"atol\\\":1e30,\\\"rtol\\\":1e30,\", f); fputs(id, f); }\n"
     "    if (f) fclose(f);\n"
     "    return 0;\n"
     "}\n"},
    // outputs that are pipes (a read would wait forever) and directories where the expected
    // outputs go: the program's failure, not the harness's
    {"outputs_are_pipes", "wrong_answer",
     SPEC_OUTPUTS
     "static void fifo(const char *path, long) { mkfifo(path, 0666); }\n"
     "int main() { name(); for_each_output(\".bin\", fifo); return 0; }\n"},
    {"expected_names_are_directories", "wrong_answer",
     SPEC_OUTPUTS
     "static void dirs(const char *path, long) {\n"
     "    char sub[300];\n"
     "    snprintf(sub, sizeof sub, \"%s/x\", path);\n"
     "    mkdir(path, 0777);\n"
     "    mkdir(sub, 0777);\n"
     "}\n"
     "int main() { name(); for_each_output(\".expected.bin\", dirs); return 0; }\n"},
    // a program whose compilation would take all the memory there is: the compiler's
    // address-space limit stops it (at 8 GiB; it touches about 4 GiB for a few seconds)
    {"compiler_memory", "compile_error",
     "#include \"/dev/zero\"\n"
     "int main() { name(); }\n"},
};
#define N_ATTACKS (int)(sizeof attacks / sizeof attacks[0])

// Processes whose name is sbx + tok (the hostile programs'), after waiting up to wait_s
// for them to go (a PID namespace's processes die asynchronously); end_them: SIGKILL
// each (they are this test's own programs' children).
static int survivors(double wait_s, int end_them) {
    char want[32];
    snprintf(want, sizeof want, "sbx%s", tok);
    double t0 = cuset_time();
    for (;;) {
        int n = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            char p[300], comm[64] = "";
            snprintf(p, sizeof p, "/proc/%s/comm", e->d_name);
            cuset_file_head(p, 1, comm, sizeof comm);
            comm[strcspn(comm, "\n")] = 0;
            if (strcmp(comm, want)) continue;
            n++;
            if (end_them) kill(atoi(e->d_name), SIGKILL);
        }
        if (d) closedir(d);
        if (!n || cuset_time() - t0 > wait_s) return n;
        usleep(100000);
    }
}

// A listening TCP socket on 127.0.0.1 (non-blocking, so accept tells at once whether
// anyone connected); its port in *port. -1 when there is none.
static int listener(int *port) {
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 16) || getsockname(ls, (struct sockaddr *)&a, &al)) {
        fail("sandbox_listener", "cannot listen on 127.0.0.1: %s", strerror(errno));
        if (ls >= 0) close(ls);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return ls;
}

// Did anyone connect to listener ls? 1 yes, 0 no, -1 cannot tell (errno says why).
static int connected(int ls) {
    int c = accept(ls, NULL, NULL);
    if (c >= 0) close(c);
    return c >= 0 ? 1 : errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
}

static char *slurp(const char *path) {
    unsigned char *b;
    size_t n;
    if (cuset_read_file(path, &b, &n, NULL, 0)) return NULL;
    return (char *)b;
}

// gen refuses to run programs without isolation unless --unsafe-no-sandbox; with it, it
// warns and runs them: the task's reference, which passes, and a harmless control that
// does unisolated what the attacks try (connects to the listener, creates a file in /tmp,
// leaves a sleeping setsid'd child), to show that this test's checks see such effects.
static void test_refuses_without_sandbox(const char *tasks, const char *reference) {
    int port, ls = listener(&port);
    if (ls < 0) return;
    char created[200];
    snprintf(created, sizeof created, "/tmp/sbx_%s_created", tok);
    char *control = hostile("int main() {\n"
                            "    name();\n"
                            "    int s = socket(AF_INET, SOCK_STREAM, 0);\n"
                            "    struct sockaddr_in a;\n"
                            "    memset(&a, 0, sizeof a);\n"
                            "    a.sin_family = AF_INET;\n"
                            "    a.sin_port = htons(atoi(PORT));\n"
                            "    a.sin_addr.s_addr = htonl(0x7f000001);\n"
                            "    int c = connect(s, (struct sockaddr *)&a, sizeof a);\n"
                            "    FILE *f = fopen(created[1], \"w\");\n"
                            "    if (f) fclose(f);\n"
                            "    if (fork() == 0) { setsid(); if (fork() == 0) sleep(60); _exit(0); }\n"
                            "    return c == 0 ? 1 : 2;\n"
                            "}\n", port);
    FILE *f = fopen(path_in("ref.jsonl"), "wb");
    put_program(f, reference);
    put_program(f, control);
    fclose(f);
    free(control);
    setenv("CUSET_BWRAP", "/nonexistent/bwrap", 1); // as on a machine without bubblewrap
    char *argv[] = {"./gen", "--eval", (char *)tasks, "--programs", path_in("ref.jsonl"), "--results",
                    path_in("ref.results.jsonl"), "--timeout", "20", NULL, NULL};
    CusetRunResult r = run_gen(argv, 300);
    char err[3000];
    cuset_file_head(path_in("gen.err"), 20, err, sizeof err);
    int ok = r.status == CUSET_RUN_EXITED && r.exit_code == 2 && strstr(err, "--unsafe-no-sandbox") &&
             strstr(err, "bubblewrap");
    if (ok) pass("sandbox_refuses_without_isolation");
    else { fail("sandbox_refuses_without_isolation", "exit %d, want 2 and a message naming --unsafe-no-sandbox", r.exit_code); show_gen_output(); }
    argv[9] = "--unsafe-no-sandbox";
    r = run_gen(argv, 300);
    cuset_file_head(path_in("gen.err"), 20, err, sizeof err);
    char *res = slurp(path_in("ref.results.jsonl"));
    ok = r.status == CUSET_RUN_EXITED && r.exit_code == 0 && strstr(err, "WITHOUT ISOLATION") && res &&
         strstr(res, "\"status\": \"pass\"");
    if (ok) pass("sandbox_unsafe_flag_runs_unisolated");
    else { fail("sandbox_unsafe_flag_runs_unisolated", "exit %d, want 0, a warning and a pass", r.exit_code); show_gen_output(); }
    free(res);
    unsetenv("CUSET_BWRAP");
    int seen_connection = connected(ls) == 1, seen_file = access(created, F_OK) == 0, seen_process = survivors(0, 1) > 0;
    if (seen_connection && seen_file && seen_process) pass("sandbox_checks_see_unisolated_effects");
    else fail("sandbox_checks_see_unisolated_effects", "without the sandbox the control's connection %s, file %s, "
              "setsid'd child %s", seen_connection ? "seen" : "NOT SEEN", seen_file ? "seen" : "NOT SEEN",
              seen_process ? "seen" : "NOT SEEN");
    unlink(created);
    close(ls);
}

static void test_hostile(const char *tasks, const char *reference) {
    // what the programs attack: a file in the checkout and one in /tmp, each also a secret
    char planted[2][4200], created[2][4200], secret[2][100];
    snprintf(planted[0], sizeof planted[0], "%s/sbx_%s_planted", checkout, tok);
    snprintf(planted[1], sizeof planted[1], "/tmp/sbx_%s_planted", tok);
    snprintf(created[0], sizeof created[0], "%s/sbx_%s_created", checkout, tok);
    snprintf(created[1], sizeof created[1], "/tmp/sbx_%s_created", tok);
    for (int i = 0; i < 2; i++) {
        snprintf(secret[i], sizeof secret[i], "secret-%s-%d-%ld", tok, i, random());
        if (cuset_write_file(planted[i], secret[i], strlen(secret[i]), NULL, 0)) {
            fail("sandbox_plant", "cannot write %s", planted[i]);
            return;
        }
    }
    int port, ls = listener(&port);
    if (ls < 0) return;
    // the programs: the reference (isolation must not stop an honest program), then the attacks
    FILE *f = fopen(path_in("hostile.jsonl"), "wb");
    put_program(f, reference);
    for (int i = 0; i < N_ATTACKS; i++) {
        char *text = hostile(attacks[i].body, port);
        put_program(f, text);
        free(text);
    }
    fclose(f);
    char *argv[] = {"./gen", "--eval", (char *)tasks, "--programs", path_in("hostile.jsonl"), "--results",
                    path_in("hostile.results.jsonl"), "--timeout", "4", "--disk-limit", "64", "--k", "1", NULL};
    double t0 = cuset_time();
    CusetRunResult r = run_gen(argv, 900);
    if (r.status != CUSET_RUN_EXITED || r.exit_code != 0) {
        fail("sandbox_hostile_eval_runs", "gen exit %d signal %d %s", r.exit_code, r.signal, r.error);
        show_gen_output();
    } else {
        printf("PASS sandbox_hostile_eval_runs (%d programs in %.1f s)\n", N_ATTACKS + 1, cuset_time() - t0);
    }
    // each program's status
    char *res = slurp(path_in("hostile.results.jsonl"));
    int line = 0;
    for (char *p = res; p && *p; line++) {
        char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char *status = NULL, *detail = NULL, type, err[600];
        cuset_json_member(p, n, "results", line + 1, "status", &type, &status, NULL, NULL, err, sizeof err);
        cuset_json_member(p, n, "results", line + 1, "detail", &type, &detail, NULL, NULL, err, sizeof err);
        const char *name = line ? (line <= N_ATTACKS ? attacks[line - 1].name : "extra") : "reference";
        const char *want = line ? (line <= N_ATTACKS ? attacks[line - 1].want : "none") : "pass";
        char check[80];
        snprintf(check, sizeof check, "sandbox_%s", name);
        for (char *q = detail; q && *q; q++) if (*q == '\n') *q = ' ';
        if (status && !strcmp(status, want)) printf("PASS %s: %s (%.150s)\n", check, status, detail ? detail : "");
        else fail(check, "status %s, want %s; detail: %s", status ? status : "?", want, detail ? detail : "");
        free(status);
        free(detail);
        p = e ? e + 1 : p + n;
    }
    if (line != N_ATTACKS + 1) fail("sandbox_one_result_per_program", "%d results, want %d", line, N_ATTACKS + 1);
    // nothing outside changed, created, leaked or left running
    int changed = 0;
    for (int i = 0; i < 2; i++) {
        char *now = slurp(planted[i]);
        if (!now || strcmp(now, secret[i])) { printf("  %s: %s\n", planted[i], now ? "changed" : "gone"); changed++; }
        free(now);
    }
    if (changed) fail("sandbox_planted_files_unchanged", "%d of 2 changed or deleted", changed);
    else pass("sandbox_planted_files_unchanged");
    int made = (access(created[0], F_OK) == 0) + (access(created[1], F_OK) == 0);
    if (made) fail("sandbox_nothing_created_outside", "%s or %s exists", created[0], created[1]);
    else pass("sandbox_nothing_created_outside");
    char *out = slurp(path_in("gen.out")), *errs = slurp(path_in("gen.err"));
    int leaked = 0;
    for (int i = 0; i < 2; i++)
        leaked += (res && strstr(res, secret[i])) || (out && strstr(out, secret[i])) || (errs && strstr(errs, secret[i]));
    if (leaked) fail("sandbox_secret_not_read", "a planted secret is in gen's results or output");
    else pass("sandbox_secret_not_read");
    int c = connected(ls);
    if (c) fail("sandbox_listener_not_reached", "%s", c > 0 ? "the listener on 127.0.0.1 got a connection" : strerror(errno));
    else pass("sandbox_listener_not_reached");
    close(ls);
    int left = survivors(10, 1);
    if (left) fail("sandbox_no_process_left", "%d processes named sbx%s still run", left, tok);
    else pass("sandbox_no_process_left");
    for (int i = 0; i < 2; i++) { unlink(planted[i]); unlink(created[i]); }
    free(res);
    free(out);
    free(errs);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    char err[600];
    if (access("./gen", X_OK) || access("./data/corpus", X_OK) || access("./emu/nvcc-emu", X_OK)) {
        fail("sandbox_prerequisites", "needs ./gen, ./data/corpus and ./emu/nvcc-emu (make gen data/corpus emu/nvcc-emu)");
        return 1;
    }
    if (!realpath(".", checkout)) { fail("sandbox_checkout", "realpath .: %s", strerror(errno)); return 1; }
    tmp = cuset_make_temp_dir("cuset_test_sandbox", err, sizeof err);
    if (!tmp) { fail("sandbox_temp_dir", "%s", err); return 1; }
    chmod(tmp, 0711); // run as root, gen's programs run as nobody, who must get through to their directories
    setenv("TMPDIR", tmp, 1);
    srandom((unsigned)(getpid() ^ (unsigned)time(NULL)));
    snprintf(tok, sizeof tok, "%08lx", random() & 0xffffffffl);
    // a small corpus: two test tasks
    char *mk[] = {"./data/corpus", "--out", path_in("corpus"), "--train", "0", "--val", "0", "--test", "2", NULL};
    CusetRunResult r;
    cuset_run_limited(mk, NULL, 120, NULL, path_in("corpus.err"), &r);
    CusetTextSample *t = NULL;
    char *tasks = path_in("corpus/test.jsonl");
    if (r.status != CUSET_RUN_EXITED || r.exit_code != 0 || cuset_jsonl_read(tasks, &t, err, sizeof err) || !arrlen(t)) {
        fail("sandbox_corpus", "data/corpus --out failed (exit %d) %s", r.exit_code, err);
        return 1;
    }
    CusetSandbox sb;
    if (cuset_sandbox_init(&sb, 0)) {
        char why[1000];
        snprintf(why, sizeof why, "no isolation on this machine, so no hostile program is run: %s", sb.why);
        skip("sandbox_hostile_programs", why);
    } else {
        test_hostile(tasks, t[0].completion);
    }
    cuset_sandbox_free(&sb);
    test_refuses_without_sandbox(tasks, t[0].completion);
    cuset_text_samples_free(t);
    cuset_remove_tree(tmp);
    free(tmp);
    return n_fail ? 1 : 0;
}
