// fuzz_annotate.c - libFuzzer target for the CUDA-sensitivity annotator (cuset.h).
//   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 -o /tmp/fuzz_annotate test/fuzz_annotate.c
//   /tmp/fuzz_annotate -max_total_time=180 CORPUS_DIR
// Any input must give spans in bounds, non-empty, sorted, of known kinds, and flags
// equal to the naive union of the spans; the sanitizers catch reads past the input.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char *what) {
    if (!ok) { fprintf(stderr, "invariant broken: %s\n", what); abort(); }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    CusetSpan *sp = NULL;
    size_t n = cuset_annotate((const char *)data, size, &sp);
    check((size_t)arrlen(sp) == n, "return value equals number appended");
    for (size_t k = 0; k < n; k++) {
        check(sp[k].start < sp[k].end && sp[k].end <= size, "0 <= start < end <= len");
        check(sp[k].kind >= CUSET_SPAN_GLOBAL_DEF && sp[k].kind <= CUSET_SPAN_DIM3, "known kind");
        if (k) check(sp[k - 1].start < sp[k].start || (sp[k - 1].start == sp[k].start && sp[k - 1].end >= sp[k].end),
                     "sorted by start, outer first");
    }
    unsigned char *flags = malloc(size + 1), *naive = calloc(size + 1, 1);
    cuset_span_flags(sp, n, flags, size);
    for (size_t k = 0; k < n; k++) memset(naive + sp[k].start, 1, sp[k].end - sp[k].start);
    check(size == 0 || memcmp(flags, naive, size) == 0, "flags equal the union of the spans");
    free(flags);
    free(naive);
    arrfree(sp);
    return 0;
}
