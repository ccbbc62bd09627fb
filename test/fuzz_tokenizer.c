// fuzz_tokenizer.c - libFuzzer target for the byte-level BPE tokenizer (cuset.h).
// Build and run (3 minutes) from the repository root:
//   clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_tokenizer test/fuzz_tokenizer.c
//   mkdir -p fuzz_corpus && ./fuzz_tokenizer -max_total_time=180 fuzz_corpus
// (Debian: if clang lacks libFuzzer, apt-get install libclang-rt-14-dev.) Without libFuzzer,
// -DFUZZ_STANDALONE gives a main that runs the target on each file named on the command line.
//
// The first input byte picks what to fuzz; any failed check aborts (a crash for libFuzzer):
//   0: cuset_tok_load on hostile bytes; when accepted, save must give back the same bytes
//      and the loaded tokenizer must round-trip text
//   1: encode/decode round trip of the rest with a fixed tokenizer trained on CUDA code,
//      checked against the reference encoder (merges applied in order, per chunk)
//   2: byte 1 says where to split the rest: a hostile tokenizer, then text to round-trip
//   3: train on the rest (cut into texts at '\n'), then round trip, save/load, retrain
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#include "tok_testlib.h"

#include <stdint.h>

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz check failed: %s (line %d)\n", #cond, __LINE__); abort(); } } while (0)

static CusetTokenizer fixed; // trained once on the embedded CUDA snippet

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    const char *texts[1] = {tok_test_snippet};
    size_t lens[1] = {sizeof tok_test_snippet - 1};
    CHECK(cuset_tok_train(&fixed, texts, lens, 1, 512, 0) > 100);
    return 0;
}

// Encodes s with the merges applied one by one in the order learned, per chunk. Its
// loop over all merges dominated the run time with coverage tracing on, and it is not
// code under test, so it is left uninstrumented.

// decode(encode(s)) == s, ids valid and never special, tokens within chunks; optionally
// the same ids as the reference encoder.
static void roundtrip(const CusetTokenizer *tk, const unsigned char *s, size_t n, int with_reference) {
    int *ids = NULL, *ref = NULL;
    char *out = NULL;
    size_t nid = cuset_tok_encode(tk, (const char *)s, n, &ids), pos = 0, chunk_end = 0;
    CHECK(nid == (size_t)arrlen(ids) && nid <= n);
    for (size_t i = 0; i < nid; i++) {
        size_t len;
        CHECK(ids[i] >= 0 && ids[i] < tk->vocab_size);
        CHECK(ids[i] < CUSET_TOK_NBYTES || ids[i] >= CUSET_TOK_FIRST_MERGE);
        const char *b = cuset_tok_bytes(tk, ids[i], &len);
        CHECK(b != NULL && len >= 1 && len <= CUSET_TOK_MAX_CHUNK);
        while (chunk_end <= pos) chunk_end = cuset__tok_chunk_end(s, n, chunk_end);
        CHECK(pos + len <= chunk_end);
        pos += len;
    }
    CHECK(cuset_tok_decode(tk, ids, nid, &out) == n);
    CHECK(n == 0 || memcmp(out, s, n) == 0);
    if (with_reference) {
        reference_encode(tk, (const char *)s, n, &ref);
        CHECK(arrlen(ref) == arrlen(ids));
        CHECK(nid == 0 || memcmp(ref, ids, nid * sizeof *ids) == 0);
    }
    arrfree(ids); arrfree(ref); arrfree(out);
}

// Loads buf; when accepted, checks the canonical form and a round trip. Returns 0/-1.
static int load_and_check(CusetTokenizer *tk, const unsigned char *buf, size_t n) {
    char err[256] = "";
    unsigned char *again = NULL;
    if (cuset_tok_load(tk, buf, n, err, sizeof err) != 0) {
        CHECK(err[0] != 0 && strlen(err) < sizeof err);
        CHECK(tk->vocab_size == 0); // untouched
        return -1;
    }
    CHECK(cuset_tok_save(tk, &again) == n);
    CHECK(memcmp(again, buf, n) == 0);
    arrfree(again);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0: {
        CusetTokenizer tk = {0};
        if (load_and_check(&tk, p, n) == 0) roundtrip(&tk, (const unsigned char *)tok_test_snippet, 600, 1);
        cuset_tok_free(&tk);
        break;
    }
    case 1:
        roundtrip(&fixed, p, n, 1);
        break;
    case 2: {
        if (n == 0) break;
        size_t cut = 16 + (size_t)p[0] * 8; // a header plus p[0] merges
        if (cut > n - 1) cut = n - 1;
        CusetTokenizer tk = {0};
        if (load_and_check(&tk, p + 1, cut) == 0) roundtrip(&tk, p + 1 + cut, n - 1 - cut, 1);
        cuset_tok_free(&tk);
        break;
    }
    default: {
        const char **texts = NULL;
        size_t *lens = NULL, start = 0;
        for (size_t i = 0; i <= n; i++)
            if (i == n || p[i] == '\n') { arrput(texts, (const char *)p + start); arrput(lens, i - start); start = i + 1; }
        CusetTokenizer a = {0}, b = {0};
        unsigned char *sa = NULL, *sb = NULL;
        int vocab = CUSET_TOK_FIRST_MERGE + (int)(n % 300);
        int ma = cuset_tok_train(&a, texts, lens, (size_t)arrlen(texts), vocab, 0);
        CHECK(ma >= 0 && a.vocab_size == CUSET_TOK_FIRST_MERGE + ma && a.vocab_size <= vocab);
        roundtrip(&a, p, n, 1);
        cuset_tok_save(&a, &sa);
        CHECK(load_and_check(&b, sa, (size_t)arrlen(sa)) == 0);
        CHECK(cuset_tok_train(&b, texts, lens, (size_t)arrlen(texts), vocab, 0) == ma); // replaces b
        cuset_tok_save(&b, &sb);
        CHECK(arrlen(sa) == arrlen(sb) && memcmp(sa, sb, (size_t)arrlen(sa)) == 0); // deterministic
        cuset_tok_free(&a); cuset_tok_free(&b);
        arrfree(sa); arrfree(sb); arrfree(texts); arrfree(lens);
    }
    }
    return 0;
}

#ifdef FUZZ_STANDALONE
int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        unsigned char *buf = NULL, tmp[4096];
        size_t got;
        if (!f) { perror(argv[i]); return 1; }
        while ((got = fread(tmp, 1, sizeof tmp, f)) > 0) memcpy(arraddnptr(buf, got), tmp, got);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)arrlen(buf));
        arrfree(buf);
        printf("ok %s\n", argv[i]);
    }
    cuset_tok_free(&fixed);
    return 0;
}
#endif
