// fuzz_checkpoint.c - libFuzzer target for the checkpoint reader (cuset_checkpoint_load).
//   make fuzz-checkpoint   (clang -fsanitize=fuzzer,address,undefined; FUZZ_SECONDS=180)
// The input is written to a file and loaded with and without a tokenizer. Any input must
// be rejected with a message or accepted; an accepted one must save back to the same bytes
// (the format has no slack: every byte is a header field, a parameter or the tokenizer),
// but for the version field of an older version, which the writer brings up to date.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "../data/annotate.h"
#define CUSET_TEXTDATA_IMPLEMENTATION
#include "../data/textdata.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64], path2[64];

// Before the corpus is read, writes small valid checkpoints (one with optimizer state,
// reference and tokenizer, one plain) into the directory CUSET_FUZZ_SEED_DIR, if set.
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    snprintf(path, sizeof path, "/tmp/cuset_fuzz_ckpt_%d", (int)getpid());
    snprintf(path2, sizeof path2, "/tmp/cuset_fuzz_ckpt_%d_out", (int)getpid());
    const char *dir = getenv("CUSET_FUZZ_SEED_DIR");
    if (!dir) return 0;
    const char *text = "__global__ void k(float *x) { x[threadIdx.x] = 0; }\nk<<<1, 32>>>(x);\n";
    size_t len = strlen(text);
    CusetTokenizer tk = {0};
    cuset_tok_train(&tk, &text, &len, 1, 270, 0);
    CusetConfig cfg = {cuset_tok_vocab_size(&tk), cuset_pad_vocab(cuset_tok_vocab_size(&tk)), 4, 1, 1, 4};
    CusetGPT m, r;
    cuset_gpt_init(&m, &cfg);
    cuset_gpt_init(&r, &cfg);
    cuset_gpt_init_random(&m, 1, 0.02f);
    cuset_gpt_zero_grad(&m); // a zero-gradient step, so that the file holds optimizer state
    cuset_gpt_update(&m, &(CusetOptim){1e-3f, 1e-4f, 0, 1, 0.9f, 0.95f, 1e-8f, 0.1f, 0}, 0, 0.0f);
    CusetCheckpointInfo info = {.cfg = cfg, .step = 1};
    char out[4096], err[256];
    snprintf(out, sizeof out, "%s/seed_full.ckpt", dir);
    cuset_checkpoint_save_tok(out, &m, &r, &tk, &info, 1, err, sizeof err);
    snprintf(out, sizeof out, "%s/seed_plain.ckpt", dir);
    cuset_checkpoint_save_tok(out, &m, NULL, NULL, &info, 0, err, sizeof err);
    cuset_gpt_free(&m); cuset_gpt_free(&r); cuset_tok_free(&tk);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, size, f);
    fclose(f);
    char err[512];
    CusetGPT m, r;
    CusetTokenizer tk = {0};
    CusetCheckpointInfo info;
    cuset_tok_init(&tk);
    if (cuset_checkpoint_load_tok(path, &m, NULL, NULL, 0, &info, err, sizeof err) == 0) cuset_gpt_free(&m);
    else if (!err[0]) abort(); // a rejection always says why
    if (cuset_checkpoint_load_tok(path, &m, &r, &tk, 1, &info, err, sizeof err) == 0) {
        CusetGPT *ref = info.has_reference ? &r : NULL;
        if (cuset_checkpoint_save_tok(path2, &m, ref, info.has_tokenizer ? &tk : NULL, &info, 1, err, sizeof err) != 0) abort();
        FILE *g = fopen(path2, "rb");
        unsigned char *back = (unsigned char *)malloc(size + 1);
        size_t n = fread(back, 1, size + 1, g);
        fclose(g);
        if (n == size && info.version != CUSET_CKPT_VERSION) { // the save writes the current version
            memcpy(back + 8, data + 8, 4);                          // slot 2: the version
            if (info.version < 3) memcpy(back + 164, data + 164, 4); // slot 41: unknown val_frac -1, reserved 0 before
        }
        if (n != size || memcmp(back, data, size) != 0) abort(); // not a fixed point of load + save
        free(back);
        cuset_gpt_free(&m);
        if (ref) cuset_gpt_free(&r);
    }
    cuset_tok_free(&tk);
    return 0;
}
