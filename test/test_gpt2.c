// test/test_gpt2.c — the C side of test/test_gpt2.py: data/gpt2.h's import, tokenizers and
// export, driven one command at a time so that Python can compare with transformers and
// tokenizers. Binary files are little-endian: ids int32, logits float32.
//   import PATH [TOK]           import model and tokenizer; prints "ok V=.. C=.." or the error (exit 1)
//   logits PATH IDS OUT         the model's logits (T, V) for the ids (one row)
//   encode TOK TEXTS OUT        TEXTS: (u32 n, n bytes)*; OUT: (u32 n, n int32)*; checks decode(encode(x)) == x
//   export SRC DIR              import SRC, export DIR, re-import DIR: parameters bit-equal
//   finetune SRC DIR STEPS      import SRC, STEPS steps of SFT on its own tokens, export DIR, re-import: bit-equal
//   cuset TEXTS VOCAB DIR OUT   train the project's tokenizer on TEXTS, a random model, export DIR; OUT: its ids
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#define CUSET_GPT2_IMPLEMENTATION
#include "../data/gpt2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[1024];

static void die(const char *what) {
    fprintf(stderr, "test_gpt2: %s\n", what);
    exit(1);
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) die(path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = (unsigned char *)malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n) die(path);
    fclose(f);
    return b;
}

// The texts of a (u32 n, n bytes)* file: stb_ds arrays of pointers and lengths into buf.
static unsigned char *read_texts(const char *path, const char ***texts, size_t **lens) {
    size_t n, at = 0;
    unsigned char *buf = slurp(path, &n);
    while (at + 4 <= n) {
        uint32_t len;
        memcpy(&len, buf + at, 4);
        if (len > n - at - 4) die("bad texts file");
        arrput(*texts, (const char *)buf + at + 4);
        arrput(*lens, len);
        at += 4 + len;
    }
    return buf;
}

static int same_params(const CusetGPT *a, const CusetGPT *b) {
    return a->num_params == b->num_params && !memcmp(a->params_memory, b->params_memory, a->num_params * sizeof(float));
}

// Export m with tk to dir, import dir again, and check the parameters are bit-equal.
static void export_reimport(const CusetGPT *m, const CusetGpt2Tok *tk, const char *dir) {
    if (cuset_gpt2_export(dir, m, tk, NULL, err, sizeof err) != 0) die(err);
    CusetGPT back;
    CusetGpt2Tok tk2 = {0};
    if (cuset_gpt2_import(dir, NULL, &back, &tk2, err, sizeof err) != 0) die(err);
    unsigned char *b1 = NULL, *b2 = NULL;
    cuset_gpt2_tok_save(tk, &b1);
    cuset_gpt2_tok_save(&tk2, &b2);
    int same_tok = tk->vocab_size == tk2.vocab_size && tk->eot == tk2.eot && !memcmp(tk->bytes, tk2.bytes, arrlenu(tk->bytes));
    printf("reimport: parameters %s, tokenizer vocabulary %s\n", same_params(m, &back) ? "bit-equal" : "DIFFER",
           same_tok ? "equal" : "DIFFERS");
    arrfree(b1); arrfree(b2);
    cuset_gpt2_tok_free(&tk2);
    cuset_gpt_free(&back);
}

int main(int argc, char **argv) {
    if (argc < 3) die("usage: see the top of test/test_gpt2.c");
    const char *cmd = argv[1];
    CusetGPT m = {0};
    CusetGpt2Tok tk = {0};
    if (!strcmp(cmd, "import")) {
        if (cuset_gpt2_import(argv[2], argc > 3 ? argv[3] : NULL, &m, &tk, err, sizeof err) != 0) die(err);
        printf("ok V=%d C=%d L=%d maxT=%d tokenizer %d ids, eot %d\n", m.cfg.vocab_size, m.cfg.n_embd, m.cfg.n_layer,
               m.cfg.max_seq_len, tk.vocab_size, tk.eot);
    } else if (!strcmp(cmd, "logits") && argc == 5) {
        if (cuset_gpt2_load_model(argv[2], &m, err, sizeof err) != 0) die(err);
        size_t n;
        int *ids = (int *)slurp(argv[3], &n);
        int T = (int)(n / 4), V = m.cfg.vocab_size, Vp = m.cfg.padded_vocab_size;
        cuset_gpt_forward(&m, ids, 1, T);
        FILE *f = fopen(argv[4], "wb");
        for (int t = 0; t < T; t++) fwrite(m.acts.logits + (size_t)t * Vp, sizeof(float), (size_t)V, f);
        fclose(f);
    } else if (!strcmp(cmd, "encode") && argc == 5) {
        if (cuset_gpt2_tok_load(&tk, argv[2], err, sizeof err) != 0) die(err);
        const char **texts = NULL;
        size_t *lens = NULL;
        unsigned char *buf = read_texts(argv[3], &texts, &lens);
        FILE *f = fopen(argv[4], "wb");
        int bad = 0;
        for (ptrdiff_t i = 0; i < arrlen(texts); i++) {
            int *ids = NULL;
            char *back = NULL;
            uint32_t k = (uint32_t)cuset_gpt2_tok_encode(&tk, texts[i], lens[i], &ids);
            cuset_gpt2_tok_decode(&tk, ids, k, &back);
            bad += arrlenu(back) != lens[i] || memcmp(back, texts[i], lens[i]);
            fwrite(&k, 4, 1, f);
            fwrite(ids, 4, k, f);
            arrfree(ids); arrfree(back);
        }
        fclose(f);
        printf("%d texts, decode(encode(x)) != x for %d\n", (int)arrlen(texts), bad);
        arrfree(texts); arrfree(lens); free(buf);
        if (bad) return 1;
    } else if (!strcmp(cmd, "export") && argc == 4) {
        if (cuset_gpt2_import(argv[2], NULL, &m, &tk, err, sizeof err) != 0) die(err);
        export_reimport(&m, &tk, argv[3]);
    } else if (!strcmp(cmd, "finetune") && argc == 5) {
        if (cuset_gpt2_import(argv[2], NULL, &m, &tk, err, sizeof err) != 0) die(err);
        const char *text = "__global__ void add(const float *a, float *b, int n) { b[threadIdx.x] += a[threadIdx.x]; }";
        int *ids = NULL;
        cuset_gpt2_tok_encode(&tk, text, strlen(text), &ids);
        int T = (int)arrlen(ids) < m.cfg.max_seq_len ? (int)arrlen(ids) : m.cfg.max_seq_len, np = 4;
        CusetBatch b;
        cuset_batch_alloc(&b, 1, T);
        cuset_batch_set_row(&b, 0, ids, np, ids + np, NULL, (int)arrlen(ids) - np);
        CusetObjective obj = cuset_objective_default(CUSET_OBJ_SFT);
        CusetOptim opt = cuset_optim_default();
        opt.max_lr = opt.min_lr = 1e-3f;
        opt.warmup = 0;
        opt.total = atoi(argv[4]);
        for (int s = 0; s < opt.total; s++) {
            CusetStats st = {0};
            float norm;
            if (cuset_gpt_step(&m, NULL, NULL, &b, 1, &obj, &st, &norm, err, sizeof err) != 0) die(err);
            cuset_gpt_update(&m, &opt, s + 1, norm);
            printf("step %d: loss %.4f\n", s + 1, st.ce / st.ntok);
        }
        export_reimport(&m, &tk, argv[3]);
        cuset_batch_free(&b);
        arrfree(ids);
    } else if (!strcmp(cmd, "cuset") && argc == 6) {
        const char **texts = NULL;
        size_t *lens = NULL;
        unsigned char *buf = read_texts(argv[2], &texts, &lens);
        CusetTokenizer ct = {0};
        cuset_tok_init(&ct);
        cuset_tok_train(&ct, texts, lens, arrlenu(texts), atoi(argv[3]), 0);
        CusetConfig cfg = {ct.vocab_size, cuset_pad_vocab(ct.vocab_size), 64, 2, 2, 32};
        cuset_gpt_init(&m, &cfg);
        cuset_gpt_init_random(&m, 1, 0.1f);
        if (cuset_gpt2_export(argv[4], &m, NULL, &ct, err, sizeof err) != 0) die(err);
        FILE *f = fopen(argv[5], "wb");
        for (ptrdiff_t i = 0; i < arrlen(texts); i++) {
            int *ids = NULL;
            uint32_t k = (uint32_t)cuset_tok_encode(&ct, texts[i], lens[i], &ids);
            fwrite(&k, 4, 1, f);
            fwrite(ids, 4, k, f);
            arrfree(ids);
        }
        fclose(f);
        printf("project tokenizer: %d ids; exported with a %d-parameter model\n", ct.vocab_size, (int)m.num_params);
        cuset_tok_free(&ct);
        arrfree(texts); arrfree(lens); free(buf);
    } else {
        die("unknown command or wrong arguments (see the top of test/test_gpt2.c)");
    }
    cuset_gpt_free(&m);
    cuset_gpt2_tok_free(&tk);
    return 0;
}
