// gen: samples a completion from a trained checkpoint, streaming it as it is produced.
// A checkpoint trained on text carries its tokenizer: the prompt is text and so is the
// output. A checkpoint trained on the synthetic task has none: prompt and output are ids.
#define CUSET_IMPLEMENTATION
#include "cuset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "usage: gen --model FILE [--prompt TEXT | --prompt-file FILE | --prompt-ids IDS] [options]\n"
    "Samples a completion from a checkpoint written by train and streams it to stdout.\n"
    "  --model FILE          checkpoint (required)\n"
    "  --prompt TEXT         the prompt (a model with a tokenizer); '-' reads it from stdin,\n"
    "                        as does giving no prompt with stdin not a terminal\n"
    "  --prompt-file FILE    the prompt, read from a file\n"
    "  --prompt-jsonl FILE   the prompt of a JSON-lines task file (\"prompt\" member), with\n"
    "  --index K             the K-th task (from 0)                        [0]\n"
    "  --show-prompt         print the prompt before the completion\n"
    "  --prompt-ids \"1 5 9\"  the prompt as token ids (any model; used as given, no special tokens)\n"
    "  --info                print the checkpoint's header and exit\n"
    "  --max-tokens N        most tokens to generate                      [512]\n"
    "  --temperature X       0 = greedy                                   [0.8]\n"
    "  --top-k N             keep the N most probable tokens, 0 = all     [0]\n"
    "  --top-p X             keep the smallest set with mass >= X         [1.0]\n"
    "  --stop ID             stop after this token    [end of sample; 2 without a tokenizer]\n"
    "  --seed N              sampling seed                                [1]\n"
    "  -h, --help            this text\n"
    "The completion goes to stdout; the speed (tokens/s) to stderr.\n";

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
    const char *model_path = NULL, *prompt = NULL, *prompt_file = NULL, *prompt_ids = NULL, *prompt_jsonl = NULL;
    int info_only = 0, max_tokens = 512, top_k = 0, stop = -2, index = 0, show_prompt = 0;
    float temperature = 0.8f, top_p = 1.0f;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) { fputs(usage_text, stdout); return 0; }
        if (!strcmp(k, "--info")) { info_only = 1; continue; }
        if (!strcmp(k, "--show-prompt")) { show_prompt = 1; continue; }
        if (strncmp(k, "--", 2) != 0) fail("unexpected argument ", k);
        if (i + 1 >= argc) fail("missing value for ", k);
        const char *v = argv[++i];
        if (!strcmp(k, "--model")) model_path = v;
        else if (!strcmp(k, "--prompt")) prompt = v;
        else if (!strcmp(k, "--prompt-file")) prompt_file = v;
        else if (!strcmp(k, "--prompt-ids")) prompt_ids = v;
        else if (!strcmp(k, "--prompt-jsonl")) prompt_jsonl = v;
        else if (!strcmp(k, "--index")) index = (int)num(k, v, 0, 1e9);
        else if (!strcmp(k, "--max-tokens")) max_tokens = (int)num(k, v, 1, 1 << 20);
        else if (!strcmp(k, "--temperature")) temperature = (float)num(k, v, 0, 100);
        else if (!strcmp(k, "--top-k")) top_k = (int)num(k, v, 0, 1 << 24);
        else if (!strcmp(k, "--top-p")) top_p = (float)num(k, v, 1e-6, 1);
        else if (!strcmp(k, "--stop")) stop = (int)num(k, v, -1, 1 << 24);
        else if (!strcmp(k, "--seed")) seed = (uint64_t)num(k, v, 0, 1e18);
        else fail("unknown option ", k);
    }
    if (!model_path) fail("--model FILE is required", "");
    if (!!prompt + !!prompt_file + !!prompt_ids + !!prompt_jsonl > 1)
        fail("give one of --prompt, --prompt-file, --prompt-jsonl, --prompt-ids", "");
    char err[512];
    CusetGPT m;
    CusetTokenizer tk = {0};
    CusetCheckpointInfo info;
    cuset_tok_init(&tk);
    if (cuset_checkpoint_load(model_path, &m, NULL, &tk, 0, &info, err, sizeof err)) {
        fprintf(stderr, "gen: %s\n", err);
        return 1;
    }
    const CusetConfig *c = &m.cfg;
    if (info_only) {
        printf("%s: %d layers, %d heads, %d channels, context %d, vocabulary %d (padded %d), %zu parameters\n", model_path,
               c->n_layer, c->n_head, c->n_embd, c->max_seq_len, c->vocab_size, c->padded_vocab_size, m.num_params);
        printf("trained %d steps with %s; optimizer state %s; ASFT reference %s; tokenizer %s\n", info.step,
               cuset_objective_names[info.settings.obj.kind % CUSET_OBJ_COUNT], info.has_optimizer ? "yes" : "no",
               info.has_reference ? "yes" : "no", info.has_tokenizer ? "yes" : "no (token ids only)");
        return 0;
    }

    // --- the prompt, as token ids ---
    int *tokens = NULL; // stb_ds array
    if (prompt_ids) {
        for (const char *p = prompt_ids; *p;) {
            while (*p == ' ' || *p == ',') p++;
            if (!*p) break;
            char *end;
            long id = strtol(p, &end, 10);
            if (end == p || id < 0 || id >= c->vocab_size) {
                fprintf(stderr, "gen: --prompt-ids: '%.16s' is not a token id in [0, %d)\n", p, c->vocab_size);
                return 2;
            }
            arrput(tokens, (int)id);
            p = end;
        }
    } else {
        if (!info.has_tokenizer) {
            fprintf(stderr, "gen: %s has no tokenizer (it was trained on token ids): use --prompt-ids\n", model_path);
            return 2;
        }
        size_t n = 0;
        char *text = NULL;
        if (prompt && strcmp(prompt, "-") != 0) {
            n = strlen(prompt);
            text = strdup(prompt);
        } else if (prompt_jsonl) {
            CusetTextSample *tasks = NULL;
            if (cuset_jsonl_read(prompt_jsonl, &tasks, err, sizeof err)) { fprintf(stderr, "gen: %s\n", err); return 1; }
            if (index >= (int)arrlen(tasks)) {
                fprintf(stderr, "gen: %s holds %d tasks; --index %d is past the end\n", prompt_jsonl, (int)arrlen(tasks), index);
                return 2;
            }
            n = tasks[index].prompt_len;
            text = (char *)malloc(n + 1);
            memcpy(text, tasks[index].prompt, n + 1);
            cuset_text_samples_free(tasks);
        } else if (prompt_file || prompt || !isatty(0)) {
            if (cuset_read_file(prompt_file ? prompt_file : "/dev/stdin", (unsigned char **)&text, &n, err, sizeof err)) {
                fprintf(stderr, "gen: the prompt: %s\n", err);
                return 1;
            }
        } else {
            fail("give a prompt: --prompt TEXT, --prompt-file FILE or on stdin", "");
        }
        if (show_prompt) printf("%.*s\n\n", (int)n, text);
        arrput(tokens, CUSET_TOK_PROMPT);
        cuset_tok_encode(&tk, text, n, &tokens);
        arrput(tokens, CUSET_TOK_TARGET);
        free(text);
    }
    int n = (int)arrlen(tokens);
    if (n == 0) fail("the prompt holds no token", "");
    if (n >= c->max_seq_len) {
        fprintf(stderr, "gen: the prompt is %d tokens, but the model's context is %d: nothing left to generate; "
                        "shorten the prompt\n", n, c->max_seq_len);
        return 2;
    }
    if (stop == -2) stop = info.has_tokenizer ? CUSET_TOK_EOS : 2;

    // --- prefill the KV cache with the prompt, then sample and stream ---
    CusetProbId *work = (CusetProbId *)calloc(c->vocab_size, sizeof *work);
    CusetKVCache kv;
    cuset_kv_init(&kv, c);
    uint64_t rng = seed;
    const float *logits = NULL;
    for (int i = 0; i < n; i++) logits = cuset_gpt_decode(&m, &kv, tokens[i]);
    double t0 = cuset_time();
    int produced = 0;
    while (produced < max_tokens) {
        int next = cuset_sample(logits, c->vocab_size, temperature, top_k, top_p, &rng, work);
        produced++;
        if (next == stop) break;
        if (info.has_tokenizer && !prompt_ids) {
            size_t len;
            const char *bytes = cuset_tok_bytes(&tk, next, &len);
            fwrite(bytes, 1, len, stdout);
        } else {
            printf("%s%d", produced > 1 ? " " : "", next);
        }
        fflush(stdout);
        if (kv.len == c->max_seq_len) break;
        logits = cuset_gpt_decode(&m, &kv, next);
    }
    double dt = cuset_time() - t0;
    printf("\n");
    fprintf(stderr, "gen: %d prompt tokens, %d generated in %.2fs (%.1f tokens/s)%s\n", n, produced, dt,
            produced / (dt > 0 ? dt : 1), kv.len == c->max_seq_len ? ", stopped at the context length" : "");
    cuset_kv_free(&kv);
    arrfree(tokens);
    free(work);
    cuset_tok_free(&tk);
    cuset_gpt_free(&m);
    return 0;
}
