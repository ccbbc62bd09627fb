// testlib.h - the result lines of the C tests: "PASS name", "SKIP name: why",
// "FAIL name: why" (test/run_tests.sh tallies them); n_fail counts the failures for the
// test's exit status; test_seed gives the seed of a test's random cases.
#ifndef TESTLIB_H
#define TESTLIB_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TESTLIB_FN static __attribute__((unused)) // not every test uses every helper

static int n_fail = 0;

TESTLIB_FN void pass(const char *name) { printf("PASS %s\n", name); }
TESTLIB_FN void skip(const char *name, const char *why) { printf("SKIP %s: %s\n", name, why); }
__attribute__((format(printf, 2, 3)))
TESTLIB_FN void fail(const char *name, const char *fmt, ...) {
    va_list ap;
    printf("FAIL %s: ", name);
    va_start(ap, fmt); vprintf(fmt, ap); va_end(ap);
    printf("\n");
    n_fail++;
}

// A fresh seed each run, or CUSET_SEED's; printed, so that a failure can be repeated.
TESTLIB_FN uint64_t test_seed(const char *test) {
    const char *env = getenv("CUSET_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    printf("# %s seed %llu (rerun with CUSET_SEED=%llu)\n", test, (unsigned long long)seed, (unsigned long long)seed);
    return seed;
}

#endif
