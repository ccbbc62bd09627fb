// test_tokenizer.c - checks of the byte-level BPE tokenizer (cuset.h).
// Build and run from the repository root:
//   gcc -std=gnu11 -O2 -Wall -Wextra -o test_tokenizer test/test_tokenizer.c && ./test_tokenizer
// Prints PASS/FAIL/SKIP per check and exits non-zero when a check fails. The random
// round trip uses a fresh seed each run (printed); CUSET_SEED=<n> repeats one.
// Uses ../shared/cudabench/cudabench-dev.jsonl (or $CUSET_CUDABENCH) when present.
#define CUSET_IMPLEMENTATION
#include "../cuset.h"
#define CUSET_TOKENIZER_IMPLEMENTATION
#include "../data/tokenizer.h"
#include "tok_testlib.h"

#include <stdarg.h>
#include <stdint.h>
#include <time.h>
#include "testlib.h"

// xorshift64* - a small PRNG so runs repeat exactly for a given seed
static uint64_t rng_state;
static uint64_t rng(void) {
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}
static size_t rng_below(size_t n) { return n ? (size_t)(rng() % n) : 0; }

// ----------------------------------------------------------------------------
// helpers

// Checks one string: decode(encode(s)) == s, ids in range and never special, and no token
// crosses a pre-split chunk boundary. Returns NULL when fine, else what went wrong.
static const char *check_roundtrip(const CusetTokenizer *tk, const char *s, size_t n) {
    static char why[160];
    int *ids = NULL;
    char *out = NULL;
    const char *res = NULL;
    size_t nid = cuset_tok_encode(tk, s, n, &ids), pos = 0, chunk_end = 0;
    cuset_tok_decode(tk, ids, nid, &out);
    if ((size_t)arrlen(out) != n || (n && memcmp(out, s, n) != 0)) {
        snprintf(why, sizeof why, "decode(encode(s)) differs (%zu bytes in, %zu out)", n, (size_t)arrlen(out));
        res = why;
    }
    for (size_t i = 0; i < nid && !res; i++) {
        size_t len;
        if (ids[i] < 0 || ids[i] >= tk->vocab_size) { snprintf(why, sizeof why, "id %d out of range", ids[i]); res = why; break; }
        if (ids[i] >= CUSET_TOK_NBYTES && ids[i] < CUSET_TOK_FIRST_MERGE) { snprintf(why, sizeof why, "special id %d produced at byte %zu", ids[i], pos); res = why; break; }
        cuset_tok_bytes(tk, ids[i], &len);
        while (chunk_end <= pos) chunk_end = cuset__tok_chunk_end((const unsigned char *)s, n, chunk_end);
        if (pos + len > chunk_end) { snprintf(why, sizeof why, "token %d at byte %zu crosses the chunk boundary at %zu", ids[i], pos, chunk_end); res = why; break; }
        pos += len;
    }
    arrfree(ids);
    arrfree(out);
    return res;
}

// Reference trainer: a full recount of all pairs before every merge. Returns the merges
// as an stb_ds array (left, right, left, right, ...).
static int *reference_train(const char *const *texts, const size_t *lens, size_t ntexts, int vocab_size) {
    struct { char *key; long long value; } *counts = NULL;
    struct { unsigned long long key; long long value; } *pairs = NULL;
    int **words = NULL, *merges = NULL;
    char buf[CUSET_TOK_MAX_CHUNK + 1];
    sh_new_strdup(counts);
    for (size_t t = 0; t < ntexts; t++)
        for (size_t i = 0, end; i < lens[t]; i = end) {
            end = cuset__tok_chunk_end((const unsigned char *)texts[t], lens[t], i);
            if (end - i < 2) continue;
            memcpy(buf, texts[t] + i, end - i); buf[end - i] = 0;
            long long c = shget(counts, buf) + 1; // not inside shput: its macro puts first
            shput(counts, buf, c);
        }
    for (ptrdiff_t k = 0; k < shlen(counts); k++) {
        int *w = NULL;
        for (const char *c = counts[k].key; *c; c++) arrput(w, (unsigned char)*c);
        arrput(words, w);
    }
    for (int id = CUSET_TOK_FIRST_MERGE; id < vocab_size; id++) {
        hmfree(pairs);
        for (ptrdiff_t w = 0; w < arrlen(words); w++)
            for (ptrdiff_t i = 0; i + 1 < arrlen(words[w]); i++) {
                unsigned long long key = (unsigned long long)words[w][i] << 32 | (unsigned)words[w][i + 1];
                long long c = hmget(pairs, key) + counts[w].value;
                hmput(pairs, key, c);
            }
        ptrdiff_t best = -1;
        for (ptrdiff_t k = 0; k < hmlen(pairs); k++)
            if (best < 0 || pairs[k].value > pairs[best].value ||
                (pairs[k].value == pairs[best].value && pairs[k].key < pairs[best].key)) best = k;
        if (best < 0 || pairs[best].value < 2) break;
        int a = (int)(pairs[best].key >> 32), b = (int)(pairs[best].key & 0xffffffffu);
        arrput(merges, a); arrput(merges, b);
        for (ptrdiff_t w = 0; w < arrlen(words); w++) {
            int *t = words[w], n = (int)arrlen(t), j = 0;
            for (int k = 0; k < n; j++) {
                if (k + 1 < n && t[k] == a && t[k + 1] == b) { t[j] = id; k += 2; }
                else t[j] = t[k++];
            }
            arrsetlen(words[w], j);
        }
    }
    for (ptrdiff_t w = 0; w < arrlen(words); w++) arrfree(words[w]);
    arrfree(words);
    hmfree(pairs);
    shfree(counts);
    return merges;
}

// Makes one random test string into *s (stb_ds array, cleared first): mixes of random
// bytes (NULs, invalid UTF-8), CUDA text with corruptions, long runs, valid UTF-8.
static void random_string(char **s, const char *const *corpus, const size_t *lens, size_t ncorpus) {
    static const char alphabet[] = " \n\t\r\0\x80\xff\xc3\xa9_aZz09.{}()<>=-+*/;,#\"'\\";
    static const char *pieces[] = {"<<<", ">>>", "->", "::", "__global__", " float", "\n    ",
                                   "threadIdx.x", "1.0f", "0xff", "<|eos|>", "\xe6\x97\xa5\xe6\x9c\xac",
                                   "\xf0\x9f\x9a\x80", "\xed\xa0\x80", "\xc0\xaf", "\x00\x00"};
    arrsetlen(*s, 0);
    size_t len = rng_below(4) == 0 ? rng_below(2000) : rng_below(200);
    switch (rng_below(5)) {
    case 0: // uniform random bytes
        for (size_t i = 0; i < len; i++) arrput(*s, (char)rng());
        break;
    case 1: // bytes from an alphabet of class boundaries
        for (size_t i = 0; i < len; i++) arrput(*s, alphabet[rng_below(sizeof alphabet - 1)]);
        break;
    case 2: { // a slice of CUDA text with a few corrupted bytes
        size_t t = rng_below(ncorpus), start = rng_below(lens[t]);
        if (len > lens[t] - start) len = lens[t] - start;
        memcpy(arraddnptr(*s, len), corpus[t] + start, len);
        for (size_t k = rng_below(4); k > 0 && len > 0; k--) (*s)[rng_below(len)] = (char)rng();
        break;
    }
    case 3: { // long runs of one byte, possibly after a space
        char c = alphabet[rng_below(sizeof alphabet - 1)];
        if (rng_below(2)) arrput(*s, ' ');
        for (size_t i = 0; i < len * 3; i++) arrput(*s, c);
        break;
    }
    default: // pieces glued together
        for (size_t i = 0; i < len / 8 + 1; i++) {
            size_t p = rng_below(sizeof pieces / sizeof *pieces);
            size_t n = p == sizeof pieces / sizeof *pieces - 1 ? 2 : strlen(pieces[p]);
            memcpy(arraddnptr(*s, n), pieces[p], n);
        }
    }
}

// Splits s into chunks and compares with the expected list (joined by '|').
static int split_is(const char *s, size_t n, const char *expect) {
    char *got = NULL;
    for (size_t i = 0, end; i < n; i = end) {
        end = cuset__tok_chunk_end((const unsigned char *)s, n, i);
        if (i > 0) arrput(got, '|');
        for (size_t k = i; k < end; k++) arrput(got, s[k] ? s[k] : '0');
    }
    arrput(got, 0);
    int ok = strcmp(got, expect) == 0;
    if (!ok) printf("    split of \"%s\": got \"%s\", expected \"%s\"\n", s, got, expect);
    arrfree(got);
    return ok;
}

// ----------------------------------------------------------------------------
// checks

static void test_split(void) {
    int ok = 1;
    ok &= split_is("a = b + c;", strlen("a = b + c;"), "a| =| b| +| c|;");
    ok &= split_is("\n        return x;", strlen("\n        return x;"), "\n       | return| x|;");
    ok &= split_is("kernel<<<grid, block>>>(d_a, 1.0f);", strlen("kernel<<<grid, block>>>(d_a, 1.0f);"), "kernel|<<<|grid|,| block|>>>(|d_a|,| 1.0f|);");
    ok &= split_is("__syncthreads();", strlen("__syncthreads();"), "__syncthreads|();");
    ok &= split_is("x1 = 0xff + float4(2.5e-3f)", strlen("x1 = 0xff + float4(2.5e-3f)"), "x1| =| 0xff| +| float4|(|2.5e|-|3f|)");
    ok &= split_is("p->q :: r", strlen("p->q :: r"), "p|->|q| ::| r");
    ok &= split_is("a  b\t c \n", strlen("a  b\t c \n"), "a| | b|\t| c| \n");
    ok &= split_is("x\0\0y z", 6, "x|0|0|y| z");
    ok &= split_is("caf\xc3\xa9 \xe6\x97\xa5x", strlen("caf\xc3\xa9 \xe6\x97\xa5x"), "caf\xc3\xa9| \xe6\x97\xa5x");
    ok &= split_is(" ", strlen(" "), " ");
    ok &= split_is("  ", strlen("  "), "  ");
    // a run longer than CUSET_TOK_MAX_CHUNK is cut into pieces of at most that size
    char run[200];
    memset(run, '-', sizeof run);
    size_t i = 0, end, pieces = 0;
    for (; i < sizeof run; i = end, pieces++) {
        end = cuset__tok_chunk_end((const unsigned char *)run, sizeof run, i);
        if (end - i > CUSET_TOK_MAX_CHUNK || end <= i) ok = 0;
    }
    if (pieces != (sizeof run + CUSET_TOK_MAX_CHUNK - 1) / CUSET_TOK_MAX_CHUNK) ok = 0;
    if (ok) pass("split_rules");
    else fail("split_rules", "pre-split differs from the documented rules (see above)");
}

static void test_random_roundtrip(const CusetTokenizer *tk, const char *const *corpus,
                                  const size_t *lens, size_t ncorpus, uint64_t seed) {
    char *s = NULL, name[64];
    int *fast = NULL, *ref = NULL;
    int n = 3000, bad = 0;
    snprintf(name, sizeof name, "roundtrip_random(seed=%llu)", (unsigned long long)seed);
    rng_state = seed ? seed : 1;
    for (int k = 0; k < n && bad < 5; k++) {
        random_string(&s, corpus, lens, ncorpus);
        const char *why = check_roundtrip(tk, s, (size_t)arrlen(s));
        if (!why) { // the fast encoder must agree with the definition
            arrsetlen(fast, 0); arrsetlen(ref, 0);
            cuset_tok_encode(tk, s, (size_t)arrlen(s), &fast);
            reference_encode(tk, s, (size_t)arrlen(s), &ref);
            if (arrlen(fast) != arrlen(ref) || memcmp(fast, ref, sizeof *fast * (size_t)arrlen(fast)) != 0)
                why = "encode differs from the reference encoder";
        }
        if (why) { fail(name, "string %d (%zu bytes): %s", k, (size_t)arrlen(s), why); bad++; }
    }
    // every single byte value, and a string of all 256 bytes
    for (int c = 0; c < 256 && !bad; c++) {
        char b = (char)c;
        const char *why = check_roundtrip(tk, &b, 1);
        if (why) { fail(name, "byte %d: %s", c, why); bad++; }
    }
    char all[256];
    for (int c = 0; c < 256; c++) all[c] = (char)c;
    if (!bad && check_roundtrip(tk, all, 256)) { fail(name, "all 256 bytes: %s", check_roundtrip(tk, all, 256)); bad++; }
    if (!bad && check_roundtrip(tk, "", 0)) { fail(name, "empty string"); bad++; }
    if (!bad) { pass(name); printf("    %d random strings (NULs, invalid UTF-8, long runs) round-trip\n", n); }
    arrfree(s); arrfree(fast); arrfree(ref);
}

static void test_corpus_roundtrip(const char *name, const CusetTokenizer *tk, char **progs) {
    int bad = 0;
    for (ptrdiff_t i = 0; i < arrlen(progs) && bad < 5; i++) {
        const char *why = check_roundtrip(tk, progs[i], (size_t)arrlen(progs[i]));
        if (why) { fail(name, "program %td: %s", i, why); bad++; }
    }
    if (!bad) { pass(name); printf("    all %td programs round-trip\n", arrlen(progs)); }
}

// The test's own JSON string decoder (used to read CUDABench).
static void test_json_unescape(void) {
    const char *in = "a\\n\\t\\\"q\\\\\\/\\u00e9\\u65e5\\ud83d\\ude80z\" tail";
    const char *want = "a\n\t\"q\\/\xc3\xa9\xe6\x97\xa5\xf0\x9f\x9a\x80z";
    char *got = tok_test_json_string(in, in + strlen(in));
    if (got && (size_t)arrlen(got) == strlen(want) && memcmp(got, want, strlen(want)) == 0) pass("json_unescape");
    else fail("json_unescape", "decoded %td bytes, expected %zu", got ? arrlen(got) : -1, strlen(want));
    arrfree(got);
}

// The fast encoder against the definition on every distinct chunk of the given texts.
static void test_reference_encode(const CusetTokenizer *tk, char **progs) {
    struct { char *key; int value; } *seen = NULL;
    int *fast = NULL, *ref = NULL, bad = 0;
    char buf[CUSET_TOK_MAX_CHUNK + 1];
    sh_new_strdup(seen);
    for (ptrdiff_t p = 0; p < arrlen(progs) && !bad; p++) {
        const char *s = progs[p];
        size_t n = (size_t)arrlen(progs[p]);
        for (size_t i = 0, end; i < n && !bad; i = end) {
            end = cuset__tok_chunk_end((const unsigned char *)s, n, i);
            memcpy(buf, s + i, end - i); buf[end - i] = 0;
            if (end - i < 2 || shgeti(seen, buf) >= 0) continue;
            shput(seen, buf, 1);
            arrsetlen(fast, 0); arrsetlen(ref, 0);
            cuset_tok_encode(tk, s + i, end - i, &fast);
            reference_encode(tk, s + i, end - i, &ref);
            if (arrlen(fast) != arrlen(ref) || memcmp(fast, ref, sizeof *fast * (size_t)arrlen(fast)) != 0) {
                fail("encode_matches_reference", "chunk \"%s\": %td tokens vs %td from the reference", buf, arrlen(fast), arrlen(ref));
                bad = 1;
            }
        }
    }
    if (!bad) { pass("encode_matches_reference"); printf("    %td distinct chunks\n", shlen(seen)); }
    shfree(seen); arrfree(fast); arrfree(ref);
}

// Long pieces (GPT-2's pre-split has no bound on one: cuset__tok_encode_long, a heap) give
// what applying the merges in order does, and on chunks of at most 64 bytes the heap and
// the rescanning loop agree (the reference: tok_testlib.h's reference_encode_piece). Fresh
// random strings over a few bytes the corpus merges often.
static void test_long_pieces(const CusetTokenizer *tk) {
    static const char alphabet[] = "    ==**//__ee00xx\n";
    int *got = NULL, *want = NULL, bad = 0, longest = 0;
    unsigned char buf[4000];
    for (int rep = 0; rep < 200 && !bad; rep++) {
        int n = rep < 100 ? 2 + (int)rng_below(CUSET_TOK_MAX_CHUNK - 1) : 65 + (int)rng_below(sizeof buf - 65);
        for (int k = 0; k < n; k++) buf[k] = (unsigned char)alphabet[rng_below(sizeof alphabet - 1)];
        if (n > longest) longest = n;
        arrsetlen(got, 0); arrsetlen(want, 0);
        cuset__tok_encode_long(tk, buf, n, &got);
        if (n <= CUSET_TOK_MAX_CHUNK) cuset__tok_encode_chunk(tk, buf, n, &want); // the rescanning loop
        else reference_encode_piece(tk, buf, n, &want);
        if (arrlen(got) != arrlen(want) || memcmp(got, want, sizeof *got * (size_t)arrlen(got)) != 0) {
            fail("encode_long_pieces", "a piece of %d bytes: %td tokens, %td from the %s", n, arrlen(got), arrlen(want),
                 n <= CUSET_TOK_MAX_CHUNK ? "rescanning loop" : "reference");
            bad = 1;
        }
    }
    if (!bad) printf("PASS encode_long_pieces (200 random pieces of 2 to %d bytes)\n", longest);
    arrfree(got); arrfree(want);
}

static void test_determinism(const char *const *texts, const size_t *lens, size_t n, int vocab) {
    CusetTokenizer a = {0}, b = {0};
    unsigned char *ba = NULL, *bb = NULL;
    int ma = cuset_tok_train(&a, texts, lens, n, vocab, 0);
    int mb = cuset_tok_train(&b, texts, lens, n, vocab, 0);
    cuset_tok_save(&a, &ba);
    cuset_tok_save(&b, &bb);
    if (ma != mb || arrlen(ba) != arrlen(bb) || memcmp(ba, bb, (size_t)arrlen(ba)) != 0)
        fail("train_deterministic", "two trainings differ (%d vs %d merges)", ma, mb);
    else { pass("train_deterministic"); printf("    %d merges, identical bytes twice\n", ma); }
    cuset_tok_free(&a); cuset_tok_free(&b); arrfree(ba); arrfree(bb);
}

// The incremental trainer against a full recount per merge on a small corpus.
static void test_reference_train(const char *const *texts, const size_t *lens, size_t n, int vocab) {
    CusetTokenizer tk = {0};
    int m = cuset_tok_train(&tk, texts, lens, n, vocab, 0);
    int *ref = reference_train(texts, lens, n, vocab);
    if (m < 0 || arrlen(ref) != 2 * m || memcmp(ref, tk.merges, sizeof *ref * (size_t)arrlen(ref)) != 0) {
        ptrdiff_t i = 0;
        while (i < arrlen(ref) && i < 2 * m && ref[i] == tk.merges[i]) i++;
        fail("train_matches_full_recount", "%d merges vs %td from the full recount; first difference at merge %td: (%d, %d) vs (%d, %d)",
             m, arrlen(ref) / 2, i / 2, i < 2 * m ? tk.merges[i & ~1] : -1, i < 2 * m ? tk.merges[i | 1] : -1,
             i < arrlen(ref) ? ref[i & ~1] : -1, i < arrlen(ref) ? ref[i | 1] : -1);
    } else { pass("train_matches_full_recount"); printf("    %d merges identical\n", m); }
    cuset_tok_free(&tk); arrfree(ref);
}

static void test_specials(const CusetTokenizer *tk) {
    const char *texts[] = {"<|eos|>", "<|prompt|>", "<|target|>", "<|endoftext|>", "<|eos|><|eos|>\n",
                           "\x01\x00\x02", "\xff\xfe\xfd\x80"};
    size_t lens[] = {7, 10, 10, 13, 15, 3, 4};
    int bad = 0;
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        const char *why = check_roundtrip(tk, texts[i], lens[i]);
        if (why) { fail("specials", "\"%s\": %s", texts[i], why); bad = 1; }
    }
    // specials decode to nothing and have no bytes
    int ids[] = {'a', CUSET_TOK_PROMPT, 'b', CUSET_TOK_TARGET, 'c', CUSET_TOK_EOS, -1, 1 << 30};
    char *out = NULL;
    cuset_tok_decode(tk, ids, 8, &out);
    if (arrlen(out) != 3 || memcmp(out, "abc", 3) != 0) { fail("specials", "decode of a special/invalid id is not empty"); bad = 1; }
    for (int id = CUSET_TOK_NBYTES; id < CUSET_TOK_FIRST_MERGE; id++) {
        size_t len = 99;
        if (!cuset_tok_bytes(tk, id, &len) || len != 0) { fail("specials", "id %d has %zu bytes", id, len); bad = 1; }
    }
    size_t len = 99;
    if (cuset_tok_bytes(tk, tk->vocab_size, &len) != NULL || len != 0) { fail("specials", "id vocab_size gives bytes"); bad = 1; }
    if (!bad) pass("specials");
    arrfree(out);
}

static void test_save_load(const CusetTokenizer *tk, char **progs) {
    unsigned char *buf = NULL, *buf2 = NULL;
    CusetTokenizer lt = {0};
    char err[256] = "";
    int *a = NULL, *b = NULL, bad = 0;
    cuset_tok_save(tk, &buf);
    if (cuset_tok_load(&lt, buf, (size_t)arrlen(buf), err, sizeof err) != 0) { fail("save_load", "load of a saved tokenizer failed: %s", err); bad = 1; }
    if (!bad) {
        cuset_tok_save(&lt, &buf2);
        if (arrlen(buf) != arrlen(buf2) || memcmp(buf, buf2, (size_t)arrlen(buf)) != 0) { fail("save_load", "save(load(save(tk))) != save(tk)"); bad = 1; }
        for (ptrdiff_t i = 0; i < arrlen(progs) && !bad; i++) {
            arrsetlen(a, 0); arrsetlen(b, 0);
            cuset_tok_encode(tk, progs[i], (size_t)arrlen(progs[i]), &a);
            cuset_tok_encode(&lt, progs[i], (size_t)arrlen(progs[i]), &b);
            if (arrlen(a) != arrlen(b) || memcmp(a, b, sizeof *a * (size_t)arrlen(a)) != 0) { fail("save_load", "text %td encodes differently after load", i); bad = 1; }
        }
    }
    if (!bad) { pass("save_load"); printf("    %td bytes, vocab %d\n", arrlen(buf), cuset_tok_vocab_size(&lt)); }
    cuset_tok_free(&lt); arrfree(buf); arrfree(buf2); arrfree(a); arrfree(b);
}

// Loads a corrupted copy; expects failure, a message containing `want`, and tk unchanged.
static int expect_reject(const char *what, const unsigned char *buf, size_t len, const char *want) {
    CusetTokenizer tk = {0};
    char err[256] = "";
    cuset_tok_init(&tk);
    int rc = cuset_tok_load(&tk, buf, len, err, sizeof err);
    int ok = rc == -1 && strstr(err, want) != NULL && tk.vocab_size == CUSET_TOK_FIRST_MERGE;
    if (!ok) printf("    %s: rc %d, message \"%s\" (wanted \"%s\")\n", what, rc, err, want);
    else printf("    %-22s -> %s\n", what, err);
    cuset_tok_free(&tk);
    return ok;
}

static void put_u32(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

static void test_load_rejects(const CusetTokenizer *tk) {
    unsigned char *good = NULL, *b = NULL;
    cuset_tok_save(tk, &good);
    size_t n = (size_t)arrlen(good);
    int ok = n > 40;
    arrsetlen(b, n);
#define FRESH() memcpy(b, good, n)
    // every truncation must fail (checked silently), one is shown
    for (size_t len = 0; len < n && ok; len++) {
        CusetTokenizer t = {0};
        char err[256] = "";
        if (cuset_tok_load(&t, good, len, err, sizeof err) != -1 || err[0] == 0) { printf("    truncation to %zu bytes accepted\n", len); ok = 0; }
        cuset_tok_free(&t);
    }
    ok &= expect_reject("truncated header", good, 10, "shorter than");
    ok &= expect_reject("truncated merges", good, n - 3, "truncated");
    ok &= expect_reject("NULL buffer", NULL, 0, "shorter than");
    FRESH(); b[0] = 'X';                     ok &= expect_reject("wrong magic", b, n, "magic");
    FRESH(); put_u32(b + 8, 3);              ok &= expect_reject("wrong version", b, n, "version 3");
    FRESH(); put_u32(b + 12, 100);           ok &= expect_reject("vocab too small", b, n, "vocab size 100");
    FRESH(); put_u32(b + 12, 0xffffffffu);   ok &= expect_reject("vocab huge", b, n, "vocab size 4294967295");
    FRESH(); put_u32(b + 12, (unsigned)tk->vocab_size + 1); ok &= expect_reject("vocab != merges", b, n, "truncated");
    FRESH(); put_u32(b + 16, CUSET_TOK_FIRST_MERGE); ok &= expect_reject("merge refs itself", b, n, "left id 259 is not below 259");
    FRESH(); put_u32(b + 24 + 4, 5000);      ok &= expect_reject("merge refs future id", b, n, "right id 5000 is not below 260");
    FRESH(); put_u32(b + 24, CUSET_TOK_EOS); ok &= expect_reject("merge refs special", b, n, "special");
    FRESH(); memcpy(b + 24, b + 16, 8);      ok &= expect_reject("duplicate pair", b, n, "already makes id 259");
    arrsetlen(b, n + 1); memcpy(b, good, n); b[n] = 0;
    ok &= expect_reject("trailing byte", b, n + 1, "trailing");
    // a chain of doublings: 'a'x2, x4, ... would reach 2^k bytes
    {
        unsigned char *c = NULL;
        memcpy(arraddnptr(c, 8), "CUSETTOK", 8);
        unsigned char *h = arraddnptr(c, 8); put_u32(h, 1); put_u32(h + 4, CUSET_TOK_FIRST_MERGE + 8);
        for (int i = 0; i < 8; i++) {
            unsigned char *m = arraddnptr(c, 8);
            int prev = i == 0 ? 'a' : CUSET_TOK_FIRST_MERGE + i - 1;
            put_u32(m, (unsigned)prev); put_u32(m + 4, (unsigned)prev);
        }
        ok &= expect_reject("overlong token", c, (size_t)arrlen(c), "longer than 64");
        arrfree(c);
    }
#undef FRESH
    if (ok) pass("load_rejects_bad_input");
    else fail("load_rejects_bad_input", "a corrupted buffer was accepted or the message was unclear (see above)");
    arrfree(good); arrfree(b);
}

// Bytes per token over the programs whose task parity is `parity` (all when task is NULL).
static double bytes_per_token(const CusetTokenizer *tk, char **progs, const int *task, int parity) {
    size_t bytes = 0, toks = 0;
    int *ids = NULL;
    for (ptrdiff_t i = 0; i < arrlen(progs); i++) {
        if (task && task[i] % 2 != parity) continue;
        arrsetlen(ids, 0);
        toks += cuset_tok_encode(tk, progs[i], (size_t)arrlen(progs[i]), &ids);
        bytes += (size_t)arrlen(progs[i]);
    }
    arrfree(ids);
    return toks ? (double)bytes / (double)toks : 0.0;
}

int main(void) {
    const char *where;
    int *task = NULL; // task index of each program; even tasks train, odd tasks are held out
    char **progs = tok_test_find_cudabench(&where, &task);
    int have_bench = progs != NULL && arrlen(progs) > 0;
    const char **train = NULL;
    size_t *train_len = NULL;
    uint64_t seed = test_seed("test_tokenizer");

    test_split();
    test_json_unescape();

    // the training corpus: the CUDABench programs of even-numbered tasks (half of the
    // tasks; the five variants of a task are near copies, so the split is by task), else
    // the snippet
    if (have_bench) {
        for (ptrdiff_t i = 0; i < arrlen(progs); i++)
            if (task[i] % 2 == 0) { arrput(train, progs[i]); arrput(train_len, (size_t)arrlen(progs[i])); }
        printf("cudabench: %td programs of %d tasks from %s; training on the %td programs of the even-numbered tasks\n",
               arrlen(progs), task[arrlen(task) - 1] + 1, where, arrlen(train));
    } else {
        skip("roundtrip_cudabench", "../shared/cudabench/cudabench-dev.jsonl not found; training on the embedded snippet");
        if (progs) tok_test_free_progs(progs);
        progs = NULL;
        char *snip = NULL;
        memcpy(arraddnptr(snip, sizeof tok_test_snippet - 1), tok_test_snippet, sizeof tok_test_snippet - 1);
        arrput(progs, snip);
        arrput(train, progs[0]); arrput(train_len, (size_t)arrlen(progs[0]));
    }
    size_t ntrain = (size_t)arrlen(train);

    CusetTokenizer tk = {0};
    clock_t t0 = clock();
    int merges = cuset_tok_train(&tk, train, train_len, ntrain, CUSET_TOK_DEFAULT_VOCAB, 0);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (merges < 1) fail("train", "%d merges", merges);
    else { pass("train"); printf("    %d merges (vocab %d) on %zu texts in %.2f s\n", merges, tk.vocab_size, ntrain, secs); }
    if (cuset_tok_train(&tk, train, train_len, ntrain, 100, 0) != -1) fail("train_bad_vocab", "vocab 100 accepted");
    else pass("train_bad_vocab");
    cuset_tok_train(&tk, train, train_len, ntrain, CUSET_TOK_DEFAULT_VOCAB, 0);

    test_random_roundtrip(&tk, train, train_len, ntrain, seed);
    test_corpus_roundtrip(have_bench ? "roundtrip_cudabench" : "roundtrip_snippet", &tk, progs);
    test_reference_encode(&tk, progs);
    test_long_pieces(&tk);
    test_specials(&tk);
    test_determinism(train, train_len, ntrain, CUSET_TOK_DEFAULT_VOCAB);
    test_reference_train(train, train_len, ntrain < 48 ? ntrain : 48, 1200);
    test_save_load(&tk, progs);
    test_load_rejects(&tk);

    if (have_bench) {
        printf("INFO bytes/token at vocab %d: held-out programs (odd tasks) %.3f, training programs (even tasks) %.3f\n",
               tk.vocab_size, bytes_per_token(&tk, progs, task, 1), bytes_per_token(&tk, progs, task, 0));
    } else {
        printf("INFO bytes/token at vocab %d on the (training) snippet: %.3f\n", tk.vocab_size, bytes_per_token(&tk, progs, NULL, 0));
    }

    cuset_tok_free(&tk);
    arrfree(train); arrfree(train_len);
    tok_test_free_progs(progs);
    arrfree(task);
    printf("%s (%d failed)\n", n_fail ? "FAILED" : "ALL PASSED", n_fail);
    return n_fail ? 1 : 0;
}
