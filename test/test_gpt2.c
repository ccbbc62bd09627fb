// test/test_gpt2.c — the C side of test/test_gpt2.py: data/gpt2.h's import, tokenizers and
// export, driven one command at a time so that Python can compare with transformers and
// tokenizers. Binary files are little-endian: ids int32, logits float32.
//   selftest                    checks that need no Python: GPT-2's pre-split on hand-made cases (pieces
//                               taken from the tokenizers library), the tokenizer's version-2 format
//   import PATH [TOK]           import model and tokenizer; prints "ok V=.. C=.." or the error (exit 1)
//   logits PATH IDS OUT         the model's logits (T, V) for the ids (one row)
//   encode TOK TEXTS OUT [ours] TEXTS: (u32 n, n bytes)*; OUT: (u32 n, n int32)*, the file's ids (ours: our
//                               ids); checks decode(encode(x)) == x
//   perm TOK OUT                the map from the tokenizer file's ids to ours (int32 each)
//   export SRC DIR              import SRC, export DIR, re-import DIR: parameters bit-equal; the
//                               tokenizer through its checkpoint form (cuset_tok_save, _load)
//   finetune SRC DIR STEPS      import SRC, STEPS steps of SFT on its own tokens, export DIR, re-import: bit-equal
//   cuset TEXTS VOCAB DIR OUT   train the project's tokenizer on TEXTS, a random model, export DIR and
//                               re-import it; OUT: the tokenizer's ids of TEXTS
//   json TEXTS                  each text parsed as a JSON document by data/json.h (the reader of
//                               this file's formats): one line each, canonical (print_json) or
//                               "error ..."; test/test_json.py compares them with Python's json
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

static int same_tokenizer(const CusetTokenizer *a, const CusetTokenizer *b) {
    return a->vocab_size == b->vocab_size && a->split == b->split &&
           !memcmp(a->merges, b->merges, arrlenu(a->merges) * sizeof *a->merges);
}

// Export m with tk to dir, import dir again, and check both are bit-equal.
static void export_reimport(const CusetGPT *m, const CusetTokenizer *tk, const char *dir) {
    if (cuset_gpt2_export(dir, m, tk, err, sizeof err) != 0) die(err);
    CusetGPT back;
    CusetTokenizer tk2 = {0};
    if (cuset_gpt2_import(dir, NULL, &back, &tk2, NULL, err, sizeof err) != 0) die(err);
    printf("reimport: parameters %s, tokenizer %s\n", same_params(m, &back) ? "bit-equal" : "DIFFER",
           same_tokenizer(tk, &tk2) ? "equal" : "DIFFERS");
    cuset_tok_free(&tk2);
    cuset_gpt_free(&back);
}

// The n bytes at s in hex, in double quotes.
static void print_hex(const char *s, long n) {
    putchar('"');
    for (long k = 0; k < n; k++) printf("%02x", (unsigned char)s[k]);
    putchar('"');
}

// Node i of d and its subtree, canonically: n t f for null, true, false; numbers as %.17g;
// strings and keys as "hex of their UTF-8 bytes"; [a,b] and {"key":value,...}.
static void print_json(const CusetJDoc *d, int i) {
    const CusetJNode *n = &d->node[i];
    if (n->type == CUSET_JNULL || n->type == CUSET_JBOOL) putchar(n->type == CUSET_JNULL ? 'n' : n->num ? 't' : 'f');
    if (n->type == CUSET_JNUM) printf("%.17g", n->num);
    if (n->type == CUSET_JSTR) print_hex(d->text + n->str, n->slen);
    if (n->type == CUSET_JARR || n->type == CUSET_JOBJ) {
        putchar(n->type == CUSET_JARR ? '[' : '{');
        for (int c = i + 1; c < n->end; c = d->node[c].end) {
            if (c > i + 1) putchar(',');
            if (n->type == CUSET_JOBJ) {
                print_hex(d->text + d->node[c].key, d->node[c].klen);
                putchar(':');
            }
            print_json(d, c);
        }
        putchar(n->type == CUSET_JARR ? ']' : '}');
    }
}

// GPT-2's regex on cases whose pieces (joined by '|') the tokenizers library gave.
static int selftest(void) {
    static const char *const cases[][2] = {
        {"Hello world", "Hello| world"},
        {"it's they'LL we've", "it|'s| they|'|LL| we|'ve"},
        {"  x", " | x"},
        {"a\n\nb", "a|\n|\n|b"},
        {"x = 3.14;  // \u03c0 \u2248 3\n", "x| =| 3|.|14|;| | //| \u03c0| \u2248| 3|\n"},
        {"\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8 123 \u216b", "\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8| 123| \u216b"},
        {"end   ", "end|   "},
        {"\t\tfoo", "\t|\t|foo"},
        {"'s'S", "'s|'|S"},
        {"__global__ void k<<<1,2>>>(a);", "__|global|__| void| k|<<<|1|,|2|>>>(|a|);"},
    };
    int fails = 0, n = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < n; c++) {
        const unsigned char *s = (const unsigned char *)cases[c][0];
        char got[256] = "";
        for (size_t i = 0, end, len = strlen(cases[c][0]); i < len; i = end) {
            end = cuset__tok_gpt2_piece_end(s, len, i);
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%.*s", i ? "|" : "", (int)(end - i), s + i);
        }
        if (strcmp(got, cases[c][1])) { printf("FAIL gpt2_presplit: \"%s\" gives %s\n", cases[c][0], got); fails++; }
    }
    if (!fails) printf("PASS gpt2_presplit: %d cases with letters, numbers, contractions, spaces of every kind\n", n);
    // a tokenizer with GPT-2's pre-split survives its file (version 2); a bad kind is refused
    CusetTokenizer tk = {0}, back = {0};
    cuset_tok_init(&tk);
    const char *text = "__global__ void add(float *x) { x[threadIdx.x] += 1.0f; }";
    size_t len = strlen(text);
    cuset_tok_train(&tk, &text, &len, 1, 300, 0);
    tk.split = CUSET_TOK_SPLIT_GPT2;
    unsigned char *bytes = NULL;
    size_t nb = cuset_tok_save(&tk, &bytes);
    int ok = cuset_tok_load(&back, bytes, nb, err, sizeof err) == 0 && same_tokenizer(&tk, &back) && bytes[8] == 2;
    bytes[16] = 7;
    ok = ok && cuset_tok_load(&back, bytes, nb, err, sizeof err) != 0 && strstr(err, "pre-split kind 7");
    printf("%s gpt2_tokenizer_format: version 2 round trip, pre-split kind checked (%s)\n", ok ? "PASS" : "FAIL", err);
    arrfree(bytes);
    cuset_tok_free(&tk);
    cuset_tok_free(&back);
    // merges of long tokens (up to 256 + 256 bytes: 512 as text) go through tokenizer.json
    // whole: GPT-2's pre-split puts no bound on a token below 1024 bytes
    unsigned char *tf = NULL;
    memcpy(arraddnptr(tf, 8), "CUSETTOK", 8);
    uint32_t head[3] = {2, 259 + 9, CUSET_TOK_SPLIT_GPT2}, prev = 'a'; // version, ids, pre-split
    memcpy(arraddnptr(tf, 12), head, 12);
    for (uint32_t k = 0; k < 9; k++, prev = 259 + k - 1) { // a+a, aa+aa, ... : 2, 4, ..., 512 a's
        uint32_t pair[2] = {prev, prev};
        memcpy(arraddnptr(tf, 8), pair, 8);
    }
    CusetTokenizer longt = {0}, longback = {0};
    CusetGPT tiny, tinyback;
    char dir[] = "/tmp/cuset_gpt2_selftest.XXXXXX";
    int long_ok = cuset_tok_load(&longt, tf, arrlenu(tf), err, sizeof err) == 0 && mkdtemp(dir);
    if (long_ok) {
        CusetConfig cfg = {longt.vocab_size, cuset_pad_vocab(longt.vocab_size), 8, 1, 1, 8};
        cuset_gpt_init(&tiny, &cfg);
        long_ok = cuset_gpt2_export(dir, &tiny, &longt, err, sizeof err) == 0 &&
                  cuset_gpt2_import(dir, NULL, &tinyback, &longback, NULL, err, sizeof err) == 0;
        if (long_ok) {
            long_ok = same_tokenizer(&longt, &longback);
            cuset_gpt_free(&tinyback);
        }
        cuset_gpt_free(&tiny);
        char rm[128];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        if (system(rm)) long_ok = 0;
    }
    printf("%s gpt2_long_merges_exported: 9 merges up to 512 bytes, exported and imported again%s%s\n",
           long_ok ? "PASS" : "FAIL", long_ok ? "" : ": ", long_ok ? "" : err);
    arrfree(tf);
    cuset_tok_free(&longt);
    cuset_tok_free(&longback);
    // data/json.h finds a member by its whole key ("a" is not "a\u0000b"), the first of twins,
    // and only with the type asked for
    const char *doc = "{\"a\\u0000b\": 1, \"a\": 2, \"a\": 3}", *why;
    size_t at;
    CusetJDoc d;
    int k = cuset_jdoc_parse(&d, doc, strlen(doc), &why, &at) ? -1 : cuset_jdoc_get(&d, 0, "a", CUSET_JNUM);
    int found = k > 0 && d.node[k].num == 2 && cuset_jdoc_get(&d, 0, "a", CUSET_JSTR) < 0;
    printf("%s json_member_lookup: %s\n", found ? "PASS" : "FAIL", doc);
    cuset_jdoc_free(&d);
    return fails || !ok || !found || !long_ok;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "selftest")) return selftest();
    if (argc < 3) die("usage: see the top of test/test_gpt2.c");
    const char *cmd = argv[1];
    CusetGPT m = {0};
    CusetTokenizer tk = {0};
    if (!strcmp(cmd, "import")) {
        if (cuset_gpt2_import(argv[2], argc > 3 ? argv[3] : NULL, &m, &tk, NULL, err, sizeof err) != 0) die(err);
        printf("ok V=%d C=%d L=%d maxT=%d, tokenizer %d ids, pre-split %s\n", m.cfg.vocab_size, m.cfg.n_embd,
               m.cfg.n_layer, m.cfg.max_seq_len, tk.vocab_size, tk.split == CUSET_TOK_SPLIT_GPT2 ? "GPT-2" : "cuset");
    } else if (!strcmp(cmd, "logits") && argc == 5) {
        if (cuset_gpt2_load_model(argv[2], &m, err, sizeof err) != 0) die(err);
        size_t n;
        int *ids = (int *)slurp(argv[3], &n);
        int T = (int)(n / 4), V = m.cfg.vocab_size, Vp = m.cfg.padded_vocab_size;
        cuset_gpt_forward(&m, ids, 1, T);
        FILE *f = fopen(argv[4], "wb");
        for (int t = 0; t < T; t++) fwrite(m.acts.logits + (size_t)t * Vp, sizeof(float), (size_t)V, f);
        fclose(f);
    } else if (!strcmp(cmd, "encode") && (argc == 5 || argc == 6)) {
        int *perm, n, ours = argc == 6 && !strcmp(argv[5], "ours");
        if (cuset_gpt2_tok_load(&tk, &perm, &n, argv[2], err, sizeof err) != 0) die(err);
        int *file_id = (int *)malloc((size_t)tk.vocab_size * sizeof(int)); // ours -> the file's
        for (int i = 0; i < tk.vocab_size; i++) file_id[i] = -1;
        for (int i = 0; i < n; i++) file_id[perm[i]] = i;
        const char **texts = NULL;
        size_t *lens = NULL;
        unsigned char *buf = read_texts(argv[3], &texts, &lens);
        FILE *f = fopen(argv[4], "wb");
        int bad = 0;
        for (ptrdiff_t i = 0; i < arrlen(texts); i++) {
            int *ids = NULL;
            char *back = NULL;
            uint32_t k = (uint32_t)cuset_tok_encode(&tk, texts[i], lens[i], &ids);
            cuset_tok_decode(&tk, ids, k, &back);
            bad += arrlenu(back) != lens[i] || memcmp(back, texts[i], lens[i]);
            for (uint32_t j = 0; j < k && !ours; j++) ids[j] = file_id[ids[j]];
            fwrite(&k, 4, 1, f);
            fwrite(ids, 4, k, f);
            arrfree(ids); arrfree(back);
        }
        fclose(f);
        printf("%d texts, decode(encode(x)) != x for %d\n", (int)arrlen(texts), bad);
        arrfree(texts); arrfree(lens); free(buf); free(perm); free(file_id);
        if (bad) return 1;
    } else if (!strcmp(cmd, "export") && argc == 4) {
        if (cuset_gpt2_import(argv[2], NULL, &m, &tk, NULL, err, sizeof err) != 0) die(err);
        export_reimport(&m, &tk, argv[3]);
        unsigned char *bytes = NULL; // the form a checkpoint holds (data/tokenizer.h's format)
        CusetTokenizer back = {0};
        size_t nb = cuset_tok_save(&tk, &bytes);
        if (cuset_tok_load(&back, bytes, nb, err, sizeof err) != 0) die(err);
        printf("checkpoint form: version %u, tokenizer %s\n", bytes[8], same_tokenizer(&tk, &back) ? "equal" : "DIFFERS");
        arrfree(bytes);
        cuset_tok_free(&back);
    } else if (!strcmp(cmd, "perm") && argc == 4) {
        int *perm, n;
        if (cuset_gpt2_tok_load(&tk, &perm, &n, argv[2], err, sizeof err) != 0) die(err);
        FILE *f = fopen(argv[3], "wb");
        fwrite(perm, sizeof(int), (size_t)n, f);
        fclose(f);
        free(perm);
    } else if (!strcmp(cmd, "finetune") && argc == 5) {
        if (cuset_gpt2_import(argv[2], NULL, &m, &tk, NULL, err, sizeof err) != 0) die(err);
        const char *text = "__global__ void add(const float *a, float *b, int n) { b[threadIdx.x] += a[threadIdx.x]; }";
        int *ids = NULL;
        arrput(ids, CUSET_TOK_PROMPT);
        cuset_tok_encode(&tk, text, strlen(text), &ids);
        arrput(ids, CUSET_TOK_EOS);
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
    } else if (!strcmp(cmd, "json") && argc == 3) {
        const char **texts = NULL;
        size_t *lens = NULL;
        unsigned char *buf = read_texts(argv[2], &texts, &lens);
        for (size_t i = 0; i < arrlenu(texts); i++) {
            CusetJDoc d;
            const char *why;
            size_t at;
            if (cuset_jdoc_parse(&d, texts[i], lens[i], &why, &at) != 0) printf("error at byte %zu: %s", at, why);
            else print_json(&d, 0);
            putchar('\n');
            cuset_jdoc_free(&d);
        }
        arrfree(texts);
        arrfree(lens);
        free(buf);
    } else if (!strcmp(cmd, "cuset") && argc == 6) {
        const char **texts = NULL;
        size_t *lens = NULL;
        unsigned char *buf = read_texts(argv[2], &texts, &lens);
        cuset_tok_init(&tk);
        cuset_tok_train(&tk, texts, lens, arrlenu(texts), atoi(argv[3]), 0);
        CusetConfig cfg = {tk.vocab_size, cuset_pad_vocab(tk.vocab_size), 64, 2, 2, 32};
        cuset_gpt_init(&m, &cfg);
        cuset_gpt_init_random(&m, 1, 0.1f);
        export_reimport(&m, &tk, argv[4]);
        FILE *f = fopen(argv[5], "wb");
        for (ptrdiff_t i = 0; i < arrlen(texts); i++) {
            int *ids = NULL;
            uint32_t k = (uint32_t)cuset_tok_encode(&tk, texts[i], lens[i], &ids);
            fwrite(&k, 4, 1, f);
            fwrite(ids, 4, k, f);
            arrfree(ids);
        }
        fclose(f);
        printf("project tokenizer: %d ids; exported with a %d-parameter model\n", tk.vocab_size, (int)m.num_params);
        arrfree(texts); arrfree(lens); free(buf);
    } else {
        die("unknown command or wrong arguments (see the top of test/test_gpt2.c)");
    }
    cuset_gpt_free(&m);
    cuset_tok_free(&tk);
    return 0;
}
