// fuzz_data.c - libFuzzer target for token data files (cuset.h).
// Build and run (3 minutes) from the repository root:
//   clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -o /tmp/fuzz_data test/fuzz_data.c -lm
//   mkdir -p corpus && /tmp/fuzz_data -max_total_time=180 corpus test/fuzz/seeds/data
// (Debian: if clang lacks libFuzzer, apt-get install libclang-rt-14-dev.) Without libFuzzer,
// -DFUZZ_STANDALONE gives a main that runs the target on each file named on the command
// line; -DFUZZ_WRITE_SEEDS gives a main that writes valid data files into the directory
// named on the command line (the seeds of test/fuzz/seeds/data):
//   gcc -std=gnu11 -fopenmp -DFUZZ_WRITE_SEEDS -o /tmp/seeds test/fuzz_data.c -lm && /tmp/seeds test/fuzz/seeds/data
//
// Every input is first given whole to cuset_data_parse: a file it accepts must serialize to
// the very same bytes. Then, unless the input starts with 'C' (as a data file does), it
// drives a structured check; any failed check aborts:
//   byte 0: bits 0-2 the number of dataset edits, bits 3-5 the number of byte edits, bit 6
//           the tokenizer (0: bytes only, 1: trained on a CUDA snippet)
//   then 6 bytes per dataset edit: kind, sample, index (u16), value (u16)
//   then 5 bytes per byte edit: offset (u32, modulo the file size), value
//   the rest: text, cut at 0xFF bytes into prompt, completion, prompt, ... (at most 8 samples)
// The samples become a dataset (cuset_dataset_from_text), which must serialize and parse
// back identically. The dataset edits then break it in memory (an id, a flag, a length
// shortened, the vocabulary size); its bytes are written without checks, and parse must
// accept them exactly when save's checks do (and then give the edited dataset back).
// Last the byte edits corrupt the bytes of the valid file: parse must not crash, and what
// it accepts must serialize to the same bytes.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"
#include "tok_testlib.h"

#include <stdint.h>

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz check failed: %s (line %d)\n", #cond, __LINE__); abort(); } } while (0)

static CusetTokenizer trained, bytes_only;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    const char *texts[1] = {tok_test_snippet};
    size_t lens[1] = {sizeof tok_test_snippet - 1};
    CHECK(cuset_tok_train(&trained, texts, lens, 1, 400, 0) > 100);
    cuset_tok_init(&bytes_only);
    return 0;
}

static int same_dataset(const CusetDataset *a, const CusetDataset *b) {
    if (a->n != b->n || a->vocab_size != b->vocab_size) return 0;
    for (int i = 0; i < a->n; i++) {
        const CusetSample *x = &a->samples[i], *y = &b->samples[i];
        if (x->np != y->np || x->nt != y->nt || memcmp(x->prompt, y->prompt, x->np * sizeof(int)) ||
            memcmp(x->target, y->target, x->nt * sizeof(int)) || memcmp(x->target_cuda, y->target_cuda, x->nt))
            return 0;
    }
    return 1;
}

// Parses buf; when accepted, it must serialize to the same bytes. Returns parse's result;
// *out (if not NULL) receives the dataset, else it is freed.
static int parse_and_resave(const unsigned char *buf, size_t len, CusetDataset *out) {
    CusetDataset d = {0};
    CusetTokenizer tk = {0};
    uint64_t stamp = 0;
    char err[512];
    cuset_tok_init(&tk);
    int rc = cuset_data_parse(buf, len, "f", &d, &tk, &stamp, err, sizeof err);
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        unsigned char *again = NULL;
        CHECK(d.fingerprint == cuset_dataset_fingerprint(&d));
        if (cuset_data_serialize(&d, &tk, stamp, &again, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); CHECK(0); }
        CHECK((size_t)arrlen(again) == len && memcmp(again, buf, len) == 0);
        arrfree(again);
    } else CHECK(strncmp(err, "f: ", 3) == 0 && d.samples == NULL);
    if (out && rc == 0) *out = d;
    else cuset_dataset_free(&d);
    cuset_tok_free(&tk);
    return rc;
}

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parse_and_resave(data, size, NULL);
    if (size == 0 || data[0] == 'C') return 0;

    int nedits = data[0] & 7, nbytes = (data[0] >> 3) & 7;
    const CusetTokenizer *tk = (data[0] & 64) ? &trained : &bytes_only;
    size_t at = 1, need = 1 + 6 * (size_t)nedits + 5 * (size_t)nbytes;
    if (size < need) return 0;
    const uint8_t *edits = data + at, *bedits = data + at + 6 * (size_t)nedits;
    at = need;
    // the text samples
    CusetTextSample *s = NULL;
    char *parts[16];
    size_t lens[16];
    int np = 0;
    while (np < 16) {
        const uint8_t *ff = at < size ? (const uint8_t *)memchr(data + at, 0xFF, size - at) : NULL;
        size_t end = ff ? (size_t)(ff - data) : size;
        parts[np] = (char *)(data + at); lens[np] = end - at; np++;
        if (!ff) break;
        at = end + 1;
    }
    for (int i = 0; i < np; i += 2) {
        CusetTextSample t = {parts[i], lens[i], i + 1 < np ? parts[i + 1] : (char *)"", i + 1 < np ? lens[i + 1] : 0};
        arrput(s, t);
    }
    CusetDataset d, back = {0};
    cuset_dataset_from_text(&d, tk, s, arrlenu(s));
    arrfree(s); // the strings belong to data
    unsigned char *file = NULL;
    char err[512];
    if (cuset_data_serialize(&d, tk, 0xC0FFEE, &file, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); CHECK(0); }
    CHECK(parse_and_resave(file, arrlenu(file), &back) == 0 && same_dataset(&d, &back));
    cuset_dataset_free(&back);

    // dataset edits: save's checks and parse must agree on the unchecked bytes
    if (nedits) {
        for (int e = 0; e < nedits; e++) {
            const uint8_t *p = edits + 6 * e;
            CusetSample *x = &d.samples[p[1] % d.n];
            uint32_t idx = rd16(p + 2), v = rd16(p + 4);
            int id = (int)v - 64; // a few negative ids too
            switch (p[0] % 6) {
            case 0: if (x->np > 0) x->prompt[idx % (uint32_t)x->np] = id; break;
            case 1: if (x->nt > 0) x->target[idx % (uint32_t)x->nt] = id; break;
            case 2: if (x->nt > 0) x->target_cuda[idx % (uint32_t)x->nt] = (unsigned char)v; break;
            case 3: if ((int)(v % 4) < x->np) x->np = (int)(v % 4); break; // shorten only: arrays stay in bounds
            case 4: if ((int)(v % 3) < x->nt) x->nt = (int)(v % 3); break;
            default: d.vocab_size += (int)(v % 5) - 2; break;
            }
        }
        char err2[512];
        int ok_save = cuset__data_check_save(&d, tk, "d", err2, sizeof err2) == 0;
        // write without checks (cuset_data_serialize would refuse); a vocabulary size that
        // differs from the tokenizer's is written as it is, like any other field
        cuset__data_sink *w = (cuset__data_sink *)calloc(1, sizeof *w);
        unsigned char *raw = NULL;
        w->arr = &raw;
        int n_ok = d.n >= 1;
        if (n_ok) cuset__data_write(w, &d, tk, 7);
        free(w);
        if (n_ok) {
            CusetDataset got = {0};
            int rc = parse_and_resave(raw, arrlenu(raw), &got);
            if ((rc == 0) != ok_save) {
                fprintf(stderr, "save says %s, parse says %d\n", ok_save ? "ok" : err2, rc);
                CHECK(0);
            }
            if (rc == 0) CHECK(same_dataset(&d, &got));
            cuset_dataset_free(&got);
        }
        arrfree(raw);
    }

    // byte edits of the valid file: no crash; what parses re-saves identically
    if (nbytes) {
        size_t len = arrlenu(file);
        for (int e = 0; e < nbytes; e++) {
            const uint8_t *p = bedits + 5 * e;
            uint32_t off = rd16(p) | rd16(p + 2) << 16;
            file[off % len] = p[4];
        }
        parse_and_resave(file, len, NULL);
    }
    arrfree(file);
    cuset_dataset_free(&d);
    return 0;
}

#ifdef FUZZ_WRITE_SEEDS
// Writes valid data files (and a few structured-mode inputs) into argv[1].
int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    LLVMFuzzerInitialize(&argc, &argv);
    const char *texts[][2] = {
        {"Add two vectors.", "__global__ void add(const float *a, const float *b, float *c, int n) {\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] = a[i] + b[i];\n}\n"
                             "void run(const float *a, const float *b, float *c, int n) {\n"
                             "    dim3 grid((n + 255) / 256), block(256);\n    add<<<grid, block>>>(a, b, c, n);\n}\n"},
        {"", "int main() { return 0; }\n"},
        {"p", ""},
    };
    char path[4096], err[512];
    for (int t = 0; t < 2; t++) {
        for (int k = 1; k <= 3; k++) {
            CusetTextSample *s = NULL;
            for (int i = 0; i < k; i++) {
                CusetTextSample x = {(char *)texts[i][0], strlen(texts[i][0]), (char *)texts[i][1], strlen(texts[i][1])};
                arrput(s, x);
            }
            const CusetTokenizer *tk = t ? &trained : &bytes_only;
            CusetDataset d;
            cuset_dataset_from_text(&d, tk, s, arrlenu(s));
            snprintf(path, sizeof path, "%s/valid_%s_%d.dat", argv[1], t ? "trained" : "bytes", k);
            if (cuset_data_save(path, &d, tk, 1234567, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
            cuset_dataset_free(&d);
            arrfree(s);
        }
    }
    // structured-mode inputs: header byte, edits, text
    const unsigned char structured[][48] = {
        {0x40, 'P', 'r', 'o', 'm', 'p', 't', 0xFF, 'k', '<', '<', '<', '1', ',', '1', '>', '>', '>', '(', ')', ';'},
        {0x41, 0, 0, 1, 0, 0x50, 0, 'a', 0xFF, 'b'},
        {0x09, 2, 0, 0, 0, 2, 0, 9, 0, 0, 0, 7, 'x', 0xFF, 'y'},
    };
    const size_t slen[] = {21, 10, 15};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/structured_%d", argv[1], i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(structured[i], 1, slen[i], f) != slen[i] || fclose(f)) { perror(path); return 1; }
    }
    cuset_tok_free(&trained); cuset_tok_free(&bytes_only);
    return 0;
}
#endif

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
    cuset_tok_free(&trained); cuset_tok_free(&bytes_only);
    return 0;
}
#endif
