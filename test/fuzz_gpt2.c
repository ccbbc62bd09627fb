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

// Before the corpus is read: a tiny model and tokenizer exported as a Hugging Face
// directory, written as seeds (one per reader) into CUSET_FUZZ_SEED_DIR, if set.
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
    char hf[96], err[256], p[160];
    snprintf(hf, sizeof hf, "%s/hf", dir);
    if (cuset_gpt2_export(hf, &m, &tk, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); abort(); }
    static const char *const one[][2] = { { "tokenizer.json", "seed_tokenizer_json" } };
    for (size_t k = 0; k < sizeof one / sizeof one[0]; k++) {
        size_t n;
        snprintf(p, sizeof p, "%s/%s", hf, one[k][0]);
        char *b = get(p, &n);
        snprintf(p, sizeof p, "%s/%s", seeds, one[k][1]);
        FILE *f = fopen(p, "wb");
        fputc(0, f);
        fwrite(b, 1, n, f);
        fclose(f);
        free(b);
    }
    size_t nc, nm;
    snprintf(p, sizeof p, "%s/config.json", hf);
    char *c = get(p, &nc);
    snprintf(p, sizeof p, "%s/model.safetensors", hf);
    char *w = get(p, &nm);
    snprintf(p, sizeof p, "%s/seed_hf_model", seeds);
    FILE *f = fopen(p, "wb");
    fputc(2, f);
    fwrite(c, 1, nc, f);
    fwrite(split_mark, 1, 3, f);
    fwrite(w, 1, nm, f);
    fclose(f);
    free(c);
    free(w);
    cuset_gpt_free(&m);
    cuset_tok_free(&tk);
    return 0;
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
    case 0: { // tokenizer.json
        put("tokenizer.json", body, n);
        snprintf(p, sizeof p, "%s/tokenizer.json", dir);
        CusetTokenizer tk = {0};
        int *perm = NULL, np = 0;
        rc = cuset_gpt2_tok_load(&tk, &perm, &np, p, err, sizeof err);
        if (rc == 0) { cuset_tok_free(&tk); free(perm); }
        break;
    }
    case 1: { // vocab.json + merges.txt in a directory
        char sub[128];
        snprintf(sub, sizeof sub, "%s/vm", dir);
        mkdir(sub, 0755);
        put("vm/vocab.json", body, n1);
        put("vm/merges.txt", second ? second : "", n2);
        unlink(strcat(strcpy(p, sub), "/tokenizer.json"));
        CusetTokenizer tk = {0};
        int *perm = NULL, np = 0;
        rc = cuset_gpt2_tok_load(&tk, &perm, &np, sub, err, sizeof err);
        if (rc == 0) { cuset_tok_free(&tk); free(perm); }
        break;
    }
    case 2: { // config.json + model.safetensors in a directory
        char sub[128];
        snprintf(sub, sizeof sub, "%s/hfm", dir);
        mkdir(sub, 0755);
        put("hfm/config.json", body, n1);
        put("hfm/model.safetensors", second ? second : "", n2);
        CusetGPT m;
        rc = cuset_gpt2_load_model(sub, &m, err, sizeof err);
        if (rc == 0) cuset_gpt_free(&m);
        break;
    }
    default: { // an llm.c checkpoint
        put("model.bin", body, n);
        snprintf(p, sizeof p, "%s/model.bin", dir);
        CusetGPT m;
        rc = cuset_gpt2_load_model(p, &m, err, sizeof err);
        if (rc == 0) cuset_gpt_free(&m);
        break;
    }
    }
    if (rc != 0 && !err[0]) abort(); // a rejection always says why
    return 0;
}
