// bench_tokenizer.c - speed and compression of the byte-level BPE tokenizer.
// Build and run from the repository root:
//   gcc -std=gnu11 -O2 -Wall -Wextra -o bench_tokenizer test/bench_tokenizer.c && ./bench_tokenizer
// Trains at vocab 2048 on the CUDABench programs (../shared/cudabench or $CUSET_CUDABENCH;
// the embedded snippet when absent), encodes and decodes them repeatedly for about a
// second each, and prints a table. A second table shows held-out compression for a few
// vocabulary sizes: train on the programs of the even-numbered tasks, measure on the
// others (the five variants of a task are near copies, so the split is by task).
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#include "tok_testlib.h"

#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void) {
    const char *where;
    int *task = NULL;
    char **progs = tok_test_find_cudabench(&where, &task);
    if (!progs) {
        char *snip = NULL;
        memcpy(arraddnptr(snip, sizeof tok_test_snippet - 1), tok_test_snippet, sizeof tok_test_snippet - 1);
        arrput(progs, snip);
        where = "the embedded snippet (cudabench not found)";
    }
    size_t n = (size_t)arrlen(progs), total = 0;
    const char **texts = NULL;
    size_t *lens = NULL;
    for (size_t i = 0; i < n; i++) {
        arrput(texts, progs[i]);
        arrput(lens, (size_t)arrlen(progs[i]));
        total += (size_t)arrlen(progs[i]);
    }
    printf("corpus: %zu programs, %.2f MB, from %s\n", n, (double)total / 1e6, where);

    // training at the default vocabulary size, on everything
    CusetTokenizer tk = {0};
    double t0 = now();
    int merges = cuset_tok_train(&tk, texts, lens, n, CUSET_TOK_DEFAULT_VOCAB, 0);
    double train_s = now() - t0;

    // encode repeatedly for about a second
    int *ids = NULL;
    size_t ntok = 0, reps = 0;
    t0 = now();
    do {
        arrsetlen(ids, 0);
        for (size_t i = 0; i < n; i++) cuset_tok_encode(&tk, texts[i], lens[i], &ids);
        ntok = (size_t)arrlen(ids);
        reps++;
    } while (now() - t0 < 1.0);
    double enc_mbs = (double)total * (double)reps / (now() - t0) / 1e6;

    // decode the whole token stream repeatedly
    char *out = NULL;
    size_t dreps = 0;
    t0 = now();
    do {
        arrsetlen(out, 0);
        cuset_tok_decode(&tk, ids, ntok, &out);
        dreps++;
    } while (now() - t0 < 1.0);
    double dec_mbs = (double)total * (double)dreps / (now() - t0) / 1e6;
    int same = (size_t)arrlen(out) == total;
    for (size_t i = 0, at = 0; i < n && same; at += lens[i], i++) same = memcmp(out + at, texts[i], lens[i]) == 0;

    printf("\n| vocab | merges | train s | encode MB/s | decode MB/s | bytes/token | round trip |\n");
    printf("| ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    printf("| %d | %d | %.3f | %.1f | %.1f | %.3f | %s |\n", tk.vocab_size, merges, train_s, enc_mbs,
           dec_mbs, (double)total / (double)ntok, same ? "exact" : "BROKEN");

    // held-out compression against vocabulary size
    if (task && n >= 4) {
        const char **tr = NULL;
        size_t *trl = NULL, held_bytes = 0;
        for (size_t i = 0; i < n; i++) {
            if (task[i] % 2 == 0) { arrput(tr, texts[i]); arrput(trl, lens[i]); }
            else held_bytes += lens[i];
        }
        printf("\ntrained on the %td programs of even-numbered tasks, measured on the %td others (%.2f MB)\n",
               arrlen(tr), (ptrdiff_t)n - arrlen(tr), (double)held_bytes / 1e6);
        printf("| vocab | merges | train s | held-out bytes/token | training bytes/token |\n");
        printf("| ---: | ---: | ---: | ---: | ---: |\n");
        int sizes[] = {259, 512, 1024, 2048, 4096, 8192};
        for (size_t v = 0; v < sizeof sizes / sizeof *sizes; v++) {
            CusetTokenizer t = {0};
            t0 = now();
            int m = cuset_tok_train(&t, tr, trl, (size_t)arrlen(tr), sizes[v], 0);
            double s = now() - t0;
            size_t tok_held = 0, tok_train = 0;
            for (size_t i = 0; i < n; i++) {
                arrsetlen(ids, 0);
                size_t k = cuset_tok_encode(&t, texts[i], lens[i], &ids);
                if (task[i] % 2) tok_held += k; else tok_train += k;
            }
            printf("| %d | %d | %.3f | %.3f | %.3f |\n", sizes[v], m, s, (double)held_bytes / (double)tok_held,
                   (double)(total - held_bytes) / (double)tok_train);
            cuset_tok_free(&t);
        }
        arrfree(tr); arrfree(trl);
    }

    // training on a corpus with many distinct chunks (the CUDABench programs have few):
    // random identifiers made of syllables, numbers, operators and indentation
    {
        static const char *syl[] = {"th", "read", "idx", "blk", "dim", "sum", "acc", "tile", "row", "col", "ptr",
                                    "buf", "val", "max", "min", "off", "str", "ide", "in", "out", "tmp", "k",
                                    "lane", "warp", "sh", "mem", "ld", "st", "x", "y", "z", "_"};
        static const char *sep[] = {" ", ", ", " = ", ";\n    ", "(", ")", ".", "->", " + ", " * ", "[", "]",
                                    " <<<", ">>>(", "\n        ", " += ", " < ", "++) {\n"};
        char *big = NULL;
        unsigned long long r = 88172645463325252ULL;
        while (arrlen(big) < 8000000) {
            r ^= r << 13; r ^= r >> 7; r ^= r << 17;
            for (unsigned k = 0, ns = 1 + (unsigned)(r % 4); k < ns; k++) {
                const char *w = syl[(r >> (8 + 5 * k)) % 32];
                memcpy(arraddnptr(big, strlen(w)), w, strlen(w));
            }
            if ((r >> 40) % 5 == 0) { char num[16]; int m = snprintf(num, sizeof num, "%u", (unsigned)(r >> 44) % 4096); memcpy(arraddnptr(big, m), num, (size_t)m); }
            const char *sp = sep[(r >> 52) % (sizeof sep / sizeof *sep)];
            memcpy(arraddnptr(big, strlen(sp)), sp, strlen(sp));
        }
        const char *bt[1] = {big};
        size_t bl[1] = {(size_t)arrlen(big)};
        printf("\ntraining on %.1f MB of synthetic code with many distinct chunks\n", (double)bl[0] / 1e6);
        printf("| vocab | merges | train s |\n| ---: | ---: | ---: |\n");
        int sizes[] = {2048, 8192, 32768};
        for (size_t v = 0; v < sizeof sizes / sizeof *sizes; v++) {
            CusetTokenizer t = {0};
            t0 = now();
            int m = cuset_tok_train(&t, bt, bl, 1, sizes[v], 0);
            printf("| %d | %d | %.2f |\n", sizes[v], m, now() - t0);
            cuset_tok_free(&t);
        }
        arrfree(big);
    }

    cuset_tok_free(&tk);
    arrfree(ids); arrfree(out); arrfree(texts); arrfree(lens);
    tok_test_free_progs(progs);
    arrfree(task);
    return same ? 0 : 1;
}
