// gen: samples from a trained checkpoint.
// Until the tokenizer lands, prompts and completions are token ids (the synthetic task's
// vocabulary: 1 opens the prompt, 2 ends the target).
#define CUSET_IMPLEMENTATION
#include "cuset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_text =
    "usage: gen --model FILE [options]\n"
    "Samples a completion from a checkpoint written by train.\n"
    "  --model FILE          checkpoint (required)\n"
    "  --prompt-ids \"1 5 9\"  prompt as token ids separated by spaces or commas\n"
    "  --info                print the checkpoint's header and exit\n"
    "  --max-tokens N        most tokens to generate                  [64]\n"
    "  --temperature X       0 = greedy                               [0.8]\n"
    "  --top-k N             keep the N most probable tokens, 0 = all [0]\n"
    "  --top-p X             keep the smallest set with mass >= X    [1.0]\n"
    "  --stop ID             stop after this token                    [2]\n"
    "  --seed N              sampling seed                            [1]\n"
    "  -h, --help            this text\n";

static void fail(const char *msg, const char *arg) {
    fprintf(stderr, "gen: %s%s\n(gen --help lists the options)\n", msg, arg);
    exit(2);
}

static double num(const char *flag, const char *v, double lo, double hi) {
    char *end;
    double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || !(x >= lo && x <= hi)) {
        fprintf(stderr, "gen: %s expects a number in [%g, %g], got '%s'\n", flag, lo, hi, v);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt_text = NULL;
    int info_only = 0, max_tokens = 64, top_k = 0, stop = 2;
    float temperature = 0.8f, top_p = 1.0f;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) { fputs(usage_text, stdout); return 0; }
        if (!strcmp(k, "--info")) { info_only = 1; continue; }
        if (i + 1 >= argc) fail("missing value for ", k);
        const char *v = argv[++i];
        if (!strcmp(k, "--model")) model_path = v;
        else if (!strcmp(k, "--prompt-ids")) prompt_text = v;
        else if (!strcmp(k, "--max-tokens")) max_tokens = (int)num(k, v, 1, 1 << 20);
        else if (!strcmp(k, "--temperature")) temperature = (float)num(k, v, 0, 100);
        else if (!strcmp(k, "--top-k")) top_k = (int)num(k, v, 0, 1 << 24);
        else if (!strcmp(k, "--top-p")) top_p = (float)num(k, v, 1e-6, 1);
        else if (!strcmp(k, "--stop")) stop = (int)num(k, v, -1, 1 << 24);
        else if (!strcmp(k, "--seed")) seed = (uint64_t)num(k, v, 0, 1e18);
        else fail("unknown option ", k);
    }
    if (!model_path) fail("--model FILE is required", "");
    char err[512];
    CusetGPT m;
    CusetCheckpointInfo info;
    if (cuset_checkpoint_load(model_path, &m, NULL, NULL, 0, &info, err, sizeof err)) {
        fprintf(stderr, "gen: %s\n", err);
        return 1;
    }
    const CusetConfig *c = &m.cfg;
    if (info_only) {
        printf("%s: %d layers, %d heads, %d channels, context %d, vocabulary %d (padded %d), %zu parameters\n", model_path,
               c->n_layer, c->n_head, c->n_embd, c->max_seq_len, c->vocab_size, c->padded_vocab_size, m.num_params);
        printf("trained %d steps with %s; optimizer state %s; ASFT reference %s\n", info.step,
               cuset_objective_names[info.settings.obj.kind % CUSET_OBJ_COUNT], info.has_optimizer ? "yes" : "no",
               info.has_reference ? "yes" : "no");
        return 0;
    }
    if (!prompt_text) fail("--prompt-ids is required (or --info)", "");
    int *tokens = (int *)calloc(c->max_seq_len, sizeof(int)), n = 0;
    for (const char *p = prompt_text; *p;) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || id < 0 || id >= c->vocab_size) {
            fprintf(stderr, "gen: --prompt-ids: '%.16s' is not a token id in [0, %d)\n", p, c->vocab_size);
            return 2;
        }
        if (n == c->max_seq_len) {
            fprintf(stderr, "gen: the prompt is longer than the model's context of %d tokens\n", c->max_seq_len);
            return 2;
        }
        tokens[n++] = (int)id;
        p = end;
    }
    if (n == 0) fail("--prompt-ids holds no token", "");
    CusetProbId *work = (CusetProbId *)calloc(c->vocab_size, sizeof *work);
    CusetKVCache kv;
    cuset_kv_init(&kv, c);
    uint64_t rng = seed;
    const float *logits = NULL;
    for (int i = 0; i < n; i++) logits = cuset_gpt_decode(&m, &kv, tokens[i]); // the prompt fills the cache
    double t0 = cuset_time();
    int produced = 0;
    while (produced < max_tokens) {
        int next = cuset_sample(logits, c->vocab_size, temperature, top_k, top_p, &rng, work);
        produced++;
        printf("%s%d", produced > 1 ? " " : "", next);
        fflush(stdout);
        if (next == stop || kv.len == c->max_seq_len) break;
        logits = cuset_gpt_decode(&m, &kv, next);
    }
    double dt = cuset_time() - t0;
    printf("\n");
    fprintf(stderr, "gen: %d tokens in %.2fs (%.1f tokens/s)%s\n", produced, dt, produced / (dt > 0 ? dt : 1),
            kv.len == c->max_seq_len ? ", stopped at the context length" : "");
    cuset_kv_free(&kv);
    free(tokens);
    free(work);
    cuset_gpt_free(&m);
    return 0;
}
