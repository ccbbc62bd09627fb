// testlib.h - the result lines of the C tests: "PASS name", "SKIP name: why",
// "FAIL name: why" (test/run_tests.sh tallies them); n_fail counts the failures for the
// test's exit status.
#ifndef TESTLIB_H
#define TESTLIB_H

#include <stdarg.h>
#include <stdio.h>

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

#endif
