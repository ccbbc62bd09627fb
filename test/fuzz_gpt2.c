// fuzz_gpt2.c - libFuzzer target for data/gpt2.h's readers: tokenizer.json and
// vocab.json + merges.txt (cuset_gpt2_tok_load), config.json + model.safetensors and llm.c
// .bin checkpoints (cuset_gpt2_load_model).
//   make fuzz-gpt2   (clang -fsanitize=fuzzer,address,undefined; FUZZ_SECONDS=180)
// The input's first byte picks the reader; the rest is the file, or for the two-file
// formats two files split at the first "\n\x01\n". Any input must be accepted or rejected
// with a message.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_GPT2_IMPLEMENTATION
#include "../data/gpt2.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static const char split_mark[] = "\n\x01\n";

static void put(const char *name, const void *data, size_t size) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
}
static char *get(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = (char *)malloc(*size + 1);
    if (fread(b, 1, *size, f) != *size) abort();
    fclose(f);
    return b;
}

// A seed for reader `which`: that byte, then the file hf/a (and the mark and hf/b).
static void write_seed(const char *seeds, const char *name, int which, const char *hf, const char *a, const char *b) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", seeds, name);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    fputc(which, f);
    for (int k = 0; k < 2 && (k == 0 ? a : b); k++) {
        size_t n;
        snprintf(p, sizeof p, "%s/%s", hf, k == 0 ? a : b);
        char *data = get(p, &n);
        if (!data) abort();
        if (k) fwrite(split_mark, 1, 3, f);
        fwrite(data, 1, n, f);
        free(data);
    }
    fclose(f);
}

// Before the corpus is read: a tiny model and tokenizer exported as a Hugging Face
// directory, written as seeds (tokenizer.json; config.json + model.safetensors) into
// CUSET_FUZZ_SEED_DIR, if set.
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    snprintf(dir, sizeof dir, "/tmp/cuset_fuzz_gpt2_%d", (int)getpid());
    mkdir(dir, 0755);
    const char *seeds = getenv("CUSET_FUZZ_SEED_DIR");
    if (!seeds) return 0;
    const char *text = "__global__ void k(float *x) { x[threadIdx.x] = 0; }\nk<<<1, 32>>>(x);\n";
    size_t len = strlen(text);
    CusetTokenizer tk = {0};
    cuset_tok_train(&tk, &text, &len, 1, 270, 0);
    CusetConfig cfg = {cuset_tok_vocab_size(&tk), cuset_pad_vocab(cuset_tok_vocab_size(&tk)), 8, 1, 2, 8};
    CusetGPT m;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init_random(&m, 1, 0.02f);
    char hf[96], err[256];
    snprintf(hf, sizeof hf, "%s/hf", dir);
    if (cuset_gpt2_export(hf, &m, &tk, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); abort(); }
    write_seed(seeds, "seed_tokenizer_json", 0, hf, "tokenizer.json", NULL);
    write_seed(seeds, "seed_hf_model", 2, hf, "config.json", "model.safetensors");
    cuset_gpt_free(&m);
    cuset_tok_free(&tk);
    return 0;
}

// The two readers: a tokenizer (file or directory) and a model (file or directory).
static int load_tokenizer(const char *path, char *err, size_t errlen) {
    CusetTokenizer tk = {0};
    int *perm = NULL, np = 0;
    int rc = cuset_gpt2_tok_load(&tk, &perm, &np, path, err, errlen);
    if (rc == 0) { cuset_tok_free(&tk); free(perm); }
    return rc;
}
static int load_model(const char *path, char *err, size_t errlen) {
    CusetGPT m;
    int rc = cuset_gpt2_load_model(path, &m, err, errlen);
    if (rc == 0) cuset_gpt_free(&m);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *body = (const char *)data + 1, *second = NULL;
    size_t n = size - 1, n1 = n, n2 = 0;
    for (size_t i = 0; i + 3 <= n; i++)
        if (memcmp(body + i, split_mark, 3) == 0) { n1 = i; second = body + i + 3; n2 = n - i - 3; break; }
    char err[512] = "", p[128];
    int rc;
    switch (data[0] % 4) {
    case 0: // tokenizer.json
        put("tokenizer.json", body, n);
        snprintf(p, sizeof p, "%s/tokenizer.json", dir);
        rc = load_tokenizer(p, err, sizeof err);
        break;
    case 1: // vocab.json + merges.txt in a directory
        snprintf(p, sizeof p, "%s/vm", dir);
        mkdir(p, 0755);
        put("vm/vocab.json", body, n1);
        put("vm/merges.txt", second ? second : "", n2);
        rc = load_tokenizer(p, err, sizeof err);
        break;
    case 2: // config.json + model.safetensors in a directory
        snprintf(p, sizeof p, "%s/hfm", dir);
        mkdir(p, 0755);
        put("hfm/config.json", body, n1);
        put("hfm/model.safetensors", second ? second : "", n2);
        rc = load_model(p, err, sizeof err);
        break;
    default: // an llm.c checkpoint
        put("model.bin", body, n);
        snprintf(p, sizeof p, "%s/model.bin", dir);
        rc = load_model(p, err, sizeof err);
        break;
    }
    if (rc != 0 && !err[0]) abort(); // a rejection always says why
    return 0;
}
