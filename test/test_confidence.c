// test_confidence.c - the confidence analysis (data/confidence.h) on hand-made
// confidences with hand-computed answers, and eq. 7's located window against
// cuset_hardest_window on fresh random inputs (the seed is printed; CUSET_SEED=N repeats it).
//   test/test_confidence [KS_FILE]   KS_FILE: writes a random KS case for scipy to check
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"
#define CUSET_CONFIDENCE_IMPLEMENTATION
#include "../data/confidence.h"
#include "testlib.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol; }

static uint64_t rng; // the random cases' state, seeded in main

static void test_ks(void) {
    const float a[] = {1, 2, 3}, b[] = {2.5f, 3.5f, 4.5f, 5.5f};
    double d = cuset_ks_statistic(a, 3, b, 4); // largest gap at 3: F_a = 1, F_b = 1/4
    if (close_to(d, 0.75, 1e-12)) pass("ks_statistic_hand");
    else fail("ks_statistic_hand", "D = %.6f, want 0.75", d);
    const float t1[] = {0.5f, 0.5f}, t2[] = {0.5f, 0.7f}; // a tie: both CDFs step at 0.5 together
    d = cuset_ks_statistic(t1, 2, t2, 2);
    if (close_to(d, 0.5, 1e-12)) pass("ks_statistic_ties");
    else fail("ks_statistic_ties", "D = %.6f, want 0.5", d);
    // a NaN (from a model whose logits overflowed) ends the walk instead of stalling it: an
    // alarm stops the test if it does not
    const float n1[] = {0.2f, NAN, 0.9f}, n2[] = {NAN, 0.4f};
    alarm(10);
    d = cuset_ks_statistic(n1, 3, n2, 2) + cuset_ks_statistic(n2, 2, n1, 3);
    alarm(0);
    if (d >= 0.0 && d <= 2.0) pass("ks_statistic_with_nan_ends");
    else fail("ks_statistic_with_nan_ends", "D sum = %g", d);
    // D = 0.5 with 8 and 8 samples: x = sqrt(4) * 0.5 = 1; Q(1) = 2 (e^-2 - e^-8 + e^-18 - ...)
    double p = cuset_ks_pvalue(0.5, 8, 8), want = 2 * (exp(-2.0) - exp(-8.0) + exp(-18.0) - exp(-32.0));
    if (close_to(p, want, 1e-12) && close_to(p, 0.2699996717, 1e-9)) pass("ks_pvalue_hand");
    else fail("ks_pvalue_hand", "p = %.10f, want %.10f", p, want);
    if (cuset_ks_pvalue(0.0, 10, 10) == 1.0 && cuset_ks_pvalue(1.0, 1000, 1000) < 1e-100) pass("ks_pvalue_ends");
    else fail("ks_pvalue_ends", "p(0) = %g, p(1, n = 1000) = %g", cuset_ks_pvalue(0.0, 10, 10), cuset_ks_pvalue(1.0, 1000, 1000));
}

static void test_windows(void) {
    const float c[] = {0.9f, 0.9f, 0.1f, 0.2f, 0.9f};
    float mean;
    int at = cuset_lowest_window(c, 5, 2, &mean);
    if (at == 2 && close_to(mean, 0.15, 1e-6)) pass("lowest_window_hand");
    else fail("lowest_window_hand", "start %d mean %.4f, want 2 and 0.15", at, mean);
    at = cuset_lowest_window(c, 5, 64, &mean); // shorter than the window: the whole sample
    if (at == 0 && close_to(mean, 0.6, 1e-6)) pass("lowest_window_short");
    else fail("lowest_window_short", "start %d mean %.4f, want 0 and 0.6", at, mean);
    // the worked case of eq. 5 (l = 7, T = 6): the window of t = 6 (1-based) is 3..6, mean 0.3
    const float w[] = {0.9f, 0.9f, 0.9f, 0.1f, 0.1f, 0.1f};
    int lo, hi;
    mean = cuset_hardest_window_at(w, 6, 7, &lo, &hi);
    if (lo == 2 && hi == 5 && close_to(mean, 0.3, 1e-6)) pass("hardest_window_at_worked_case");
    else fail("hardest_window_at_worked_case", "window %d..%d mean %.4f, want 2..5 and 0.3", lo, hi, mean);
    // fresh random inputs: the located window is one of eq. 5's, its mean (summed here) is
    // the C_n returned, and no window's mean (each summed here) is below it
    int bad = 0;
    for (int rep = 0; rep < 300; rep++) {
        int n = 1 + (int)(cuset_rng_next(&rng) % 300), l = 1 + (int)(cuset_rng_next(&rng) % 80), is_window = 0;
        float x[300];
        for (int k = 0; k < n; k++) x[k] = cuset_rng_uniform(&rng);
        float C = cuset_hardest_window_at(x, n, l, &lo, &hi);
        double least = 2.0, located = 0.0;
        for (int t = 0; t < n; t++) {
            int a, b;
            cuset_window(t, n, l, &a, &b);
            double s = 0.0;
            for (int k = a; k <= b; k++) s += x[k];
            if (s / (b - a + 1) < least) least = s / (b - a + 1);
            is_window |= a == lo && b == hi;
        }
        for (int k = lo; k <= hi; k++) located += x[k];
        located /= hi - lo + 1;
        if (!is_window || !close_to(located, C, 1e-5) || !close_to(least, C, 1e-5)) {
            if (!bad++)
                fail("hardest_window_at_random", "n %d l %d: window %d..%d (of eq. 5: %d) mean %.6f, returned %.6f, least %.6f",
                     n, l, lo, hi, is_window, located, C, least);
        }
    }
    if (!bad) pass("hardest_window_at_random (300 fresh cases)");
}

// The prompt states 16384, 0.5, 32 and 255 (and "0", "float32", "1e-5", which are not
// numbers of two or more characters standing alone). In the program: 16384 (twice, once
// with a suffix), 0.5 (with f), 32 and 255 are copied; 1 is one character; v16384, 320,
// 16384.5, 32.0, 0x255 and the 32 of float32 are other literals or parts of names.
static void test_given_numbers(void) {
    const char *prompt = "Compute y[i] = x[i] * 0.5 + 32, clamp to 255, for i in [0, 16384). Input: x (float32, [16384]), eps 1e-5.";
    const char *text = "int n = 16384; y = x * 0.5f + 32; int v16384 = 320 + 1; z = 16384.5 + 32.0; "
                       "k = 0x255; float32 w; m = 255; p = 16384u;";
    const char *want[] = {"16384", "0.5", "32", "255", "16384"};
    CusetConfRange *r = NULL;
    size_t n = cuset_given_numbers(prompt, strlen(prompt), text, strlen(text), &r), k = 0;
    int ok = n == sizeof want / sizeof *want;
    for (; ok && k < n; k++)
        ok = r[k].end - r[k].start == strlen(want[k]) && !memcmp(text + r[k].start, want[k], strlen(want[k]));
    if (ok) pass("given_numbers_hand");
    else {
        fail("given_numbers_hand", "%zu numbers, want 5; number %zu differs", n, k);
        for (k = 0; k < n; k++) fprintf(stderr, "  [%zu, %zu) \"%.*s\"\n", r[k].start, r[k].end, (int)(r[k].end - r[k].start), text + r[k].start);
    }
    arrfree(r);
}

// Three samples whose summary is worked out by hand (probe window 2, l = 2):
//   A: c = .9 .9 .9 .1 .1 .1, token 3 a launch: lowest pair 3-4 (mean .1), touches the launch
//   B: c = .8 .8 .8 .8, tokens 0-1 a kernel definition: lowest pair mean .8, not low
//   C: c = .05 .05 .95 .95, tokens 2-3 dim3: lowest pair 0-1 (mean .05), neutral tokens;
//      its text "ddcd"
// CUDA-sensitive c: .1 .8 .8 .95 .95 (mean .72, median .8); neutral: .9 .9 .9 .1 .1 .8 .8
// .05 .05 (mean 4.6/9, median .8); KS D = .4 (at .9: F_cuda = .6, F_neutral = 1).
// Low samples: A and C (2 of 3); of those, 1 of 2 touches a span (a launch).
// w_n: A 1 - .1, B 1 - .8, C 1 - .05: mean .68333.
// At tau = .5 the mask drops A's d (a launch, a given number), e, f and C's d, d: 5 tokens,
// 1 CUDA-sensitive, 1 given; "d" 3 times; their -log c, 3 ln 10 + 2 ln 20, is .907727 of the
// sum over all 14 tokens (3 ln 10/9 + 3 ln 10 + 4 ln 5/4 + 2 ln 20 + 2 ln 20/19, with c
// rounded to float).
// Given numbers: A's token 3 (c .1, a launch) and B's token 2 (c .8, neutral): mean c .45,
// their -log c, ln 10 + ln 5/4, is .177737 of the sum.
// Their share of each objective's logit gradient, sum of a (1 - c) over A's given token (the
// CUDA-sensitive one) and over B's (neutral) / over all tokens, at tau .5 with w_n .9, .2,
// .95 and the EAFT weights ea, eb, ec below:
//   sft a = 1: .9 / 5.8 = .155172, .2 / 5.8 = .034483;  dft a = c: .09 / 1.37, .16 / 1.37;
//   profit a = 1[c >= .5]: 0, .2 / 1.2;  eaft a = weight: 1.8 / 6.2, .2 / 6.2;
//   cuset a = w (1[c > .5] + 1[CUDA]): .81 / 1.51, .04 / 1.51;
//   cuset_conf_cuda a = 1[c > .5] + 1[CUDA]: .9 / 2.6, .2 / 2.6;
//   cuset_conf_rew a = w 1[c > .5]: 0 (A's token is masked), .04 / .525.
static void test_report(void) {
    float ca[] = {.9f, .9f, .9f, .1f, .1f, .1f}, cb[] = {.8f, .8f, .8f, .8f}, cc[] = {.05f, .05f, .95f, .95f};
    unsigned char ka[] = {0, 0, 0, CUSET_CONF_LAUNCH, 0, 0}, kb[] = {CUSET_CONF_DEF, CUSET_CONF_DEF, 0, 0},
                  kc[] = {0, 0, CUSET_CONF_DIM3, CUSET_CONF_DIM3};
    unsigned char ga[] = {0, 0, 0, 1, 0, 0}, gb[] = {0, 0, 1, 0}, gc[] = {0, 0, 0, 0};
    float ea[] = {.5f, .5f, .5f, 2, 1, 1}, eb[] = {.5f, .5f, 1, .5f}, ec[] = {1, 1, .5f, .5f};
    size_t bytes[] = {0, 1, 2, 3, 4, 5, 6};
    const char *texts[] = {"abcdef", "abcd", "ddcd"};
    CusetConfSample s[3] = {{.nt = 6, .conf = ca, .kinds = ka, .given = ga, .eaft = ea, .byte_start = bytes},
                            {.nt = 4, .conf = cb, .kinds = kb, .given = gb, .eaft = eb, .byte_start = bytes},
                            {.nt = 4, .conf = cc, .kinds = kc, .given = gc, .eaft = ec, .byte_start = bytes}};
    for (int i = 0; i < 3; i++) cuset_conf_windows(&s[i], 2, 2);
    char *buf = NULL, *report = NULL;
    size_t len = 0, report_len = 0;
    FILE *f = open_memstream(&buf, &len), *text = open_memstream(&report, &report_len);
    cuset_conf_report(s, 3, texts, 2, 2, 0.5f, 1, f, text);
    fclose(f);
    fclose(text);
    const char *want[] = {"\"tokens\":{\"cuda\":5,\"neutral\":9}", "\"mean\":{\"cuda\":0.720000,\"neutral\":0.511111}",
                          "\"median\":{\"cuda\":0.800000,\"neutral\":0.800000}", "\"ks\":{\"d\":0.400000",
                          "\"low_share\":0.666667,\"low_samples\":2",
                          "\"low_overlap\":{\"any\":0.500000,\"definition\":0.000000,\"launch\":0.500000,\"dim3\":0.000000}",
                          "\"mean_w\":0.683333", "\"hard\":[3,4],\"low\":[3,4]", "\"given\":[3],\"eaft\":[0.5,0.5,0.5,2,1,1],\"tokens\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]",
                          "\"given\":{\"tokens\":2,\"cuda\":1,\"mean\":0.450000,\"mean_cuda\":0.100000,\"mean_neutral\":0.800000,"
                          "\"nll_share\":0.177737,\"grad_share\":{\"sft\":[0.155172,0.034483],\"dft\":[0.065693,0.116788],"
                          "\"profit\":[0.000000,0.166667],\"eaft\":[0.290323,0.032258],\"cuset\":[0.536424,0.026490],"
                          "\"cuset_conf_cuda\":[0.346154,0.076923],\"cuset_conf_rew\":[0.000000,0.076190]}}",
                          "\"masked\":{\"tau\":0.5,\"tokens\":5,\"cuda\":1,\"neutral\":4,\"given\":1,\"nll_share\":0.907727,\"most\":["
                          "{\"text\":\"d\",\"count\":3,\"cuda\":1},{\"text\":\"e\",\"count\":1,\"cuda\":0},"
                          "{\"text\":\"f\",\"count\":1,\"cuda\":0}]}"};
    int ok = 1;
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        if (!strstr(buf, want[k])) fail("report_hand", "the JSON lacks %s: %s", want[k], buf), ok = 0;
    const char *line = "most often: \"d\" 3 (1 CUDA-sensitive), \"e\" 1, \"f\" 1\n";
    if (!strstr(report, "5 of 14 target tokens (35.71%; CUDA-sensitive 1, neutral 4) at tau = 0.5,\n"
                        "                    1 of them numbers from the prompt, 90.8% of the summed -log c") ||
        !strstr(report, line))
        fail("report_hand", "the text report lacks the masked tokens' lines: %s", report), ok = 0;
    if (!strstr(report, "2 of 14 target tokens (14.29%) copy a number the prompt states: mean c 0.450\n"
                        "                    (CUDA-sensitive 1: 0.100, neutral 1: 0.800), 17.8% of the summed -log c;\n"
                        "                    their share of each objective's logit gradient at tau 0.5 (CUDA-sensitive + "
                        "neutral): sft 15.52 + 3.45%, dft 6.57 + 11.68%, profit 0.00 + 16.67%, eaft 29.03 + 3.23%, "
                        "cuset 53.64 + 2.65%, cuset_conf_cuda 34.62 + 7.69%, cuset_conf_rew 0.00 + 7.62%\n"))
        fail("report_hand", "the text report lacks the given numbers' line: %s", report), ok = 0;
    if (ok) pass("report_hand (shares, means, medians, KS, w_n, the view, the given numbers, the tokens the mask drops)");
    free(buf);
    free(report);
}

// A random KS case written for scipy.stats.ks_2samp to check (run_tests.sh).
static void write_ks_case(const char *path) {
    int na = 50 + (int)(cuset_rng_next(&rng) % 400), nb = 50 + (int)(cuset_rng_next(&rng) % 400);
    float *a = malloc(sizeof *a * (size_t)na), *b = malloc(sizeof *b * (size_t)nb);
    for (int k = 0; k < na; k++) a[k] = cuset_rng_uniform(&rng);
    for (int k = 0; k < nb; k++) b[k] = powf(cuset_rng_uniform(&rng), 1.3f); // a little skewed
    FILE *f = fopen(path, "w");
    if (!f) { fail("ks_case", "cannot write %s", path); return; }
    double d = cuset_ks_statistic(a, (size_t)na, b, (size_t)nb);
    fprintf(f, "%.17g %.17g\n", d, cuset_ks_pvalue(d, (size_t)na, (size_t)nb));
    for (int k = 0; k < na; k++) fprintf(f, "%.9g%c", a[k], k + 1 < na ? ' ' : '\n');
    for (int k = 0; k < nb; k++) fprintf(f, "%.9g%c", b[k], k + 1 < nb ? ' ' : '\n');
    fclose(f);
    free(a), free(b);
}

int main(int argc, char **argv) {
    rng = test_seed("test_confidence");
    test_ks();
    test_windows();
    test_given_numbers();
    test_report();
    if (argc > 1) write_ks_case(argv[1]);
    return n_fail ? 1 : 0;
}
