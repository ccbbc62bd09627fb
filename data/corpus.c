// corpus.c - the generator of cuset's default data: CUDA programming tasks.
//   gcc -std=gnu11 -O2 -Wall -Wextra -o data/corpus data/corpus.c -lm
//
//   data/corpus --out DIR [--seed S] [--train N] [--val N] [--test N] [--families A,B,..]
//               [--style varied|plain]
//       writes DIR/train.jsonl, DIR/val.jsonl, DIR/test.jsonl (defaults 2000/200/200, seed 1);
//       --families keeps only the named families; --style plain writes every program in one
//       short style (I/O inline in main, no comments, one name per kernel and helper)
//       instead of drawing a style and names per task
//   data/corpus --materialize DIR --split test --index K --to WORKDIR
//       writes task K's inputs (NAME.bin), expected outputs (NAME.expected.bin), spec.json
//       and the reference program (reference.cu) into WORKDIR
//   data/corpus --compare WORKDIR
//       compares each output NAME.bin with NAME.expected.bin under spec.json's tolerance;
//       prints PASS/FAIL with the worst error; exit 0 (pass), 1 (fail), 2 (usage, bad files)
//   data/corpus --reference WORKDIR
//       computes NAME.expected.bin from spec.json and the NAME.bin inputs in WORKDIR
//   data/corpus --emit-family NAME [--seed S] [--prompt]
//       prints one target program of the family (with --prompt, the prompt first, to stderr)
//   data/corpus --list
//       lists the families and their parameters
//
// One JSON object per line: {"prompt", "completion", "family", "id", "spans": [[start, end,
// "global"|"device"|"launch"|"dim3"], ...] (byte ranges of the completion, found by the
// annotator data/annotate.h), "spec": {"family", "params", "inputs": [{name, dtype, shape,
// lo, hi, integer, gen}], "outputs": [{name, dtype, shape}], "seed", "atol", "rtol"}, "combo": the
// parameter combination ("op=relu,n=4096,..."), "heldout": true when that combination never
// occurs in train/val}. An output passes when |got - expected| <= atol + rtol * |expected| for
// every element.
//
// Splits. Every family has combo parameters (ParamDesc.combo: op, sizes, block size, loop
// style, ...); a hash of the family name and their values puts 15% of the combinations
// aside ("held out"): they only occur in test. Other instances go to train, val or test by
// a hash of the prompt and program text (80/10/10), so one text can only ever land in one
// split, whatever the seed. Half of the test split is held-out combinations, half unseen
// instances of seen combinations. Families take turns, so each split covers all of them.
#define _GNU_SOURCE
#include "corpus.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "annotate.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "families_elementwise.c"
#include "families_memory.c"
#include "families_stencil.c"
#include "families_rows.c"
#include "families_reduce.c"
#include "families_matrix.c"
#include "families_conv.c"
#include "families_scan.c"
#include "families_select.c"
#include "families_pipeline.c"

// New family files: #include them above and add their list here.
static const Family *const *const family_lists[] = { families_elementwise, families_memory, families_stencil,
                                                      families_reduce,      families_matrix, families_conv,
                                                      families_rows,        families_scan,   families_select,
                                                      families_pipeline,    NULL };

#define MAX_FAMILIES 64
static const Family *fams[MAX_FAMILIES];
static int nfams;

static void families_init(void) {
    nfams = 0;
    for (int l = 0; family_lists[l]; l++)
        for (int k = 0; family_lists[l][k]; k++) {
            if (nfams == MAX_FAMILIES) die("too many families");
            const Family *f = family_lists[l][k];
            for (int j = 0; j < nfams; j++)
                if (strcmp(fams[j]->name, f->name) == 0) die("two families named %s", f->name);
            if (param_count(f) > MAX_IP || fparam_count(f) > MAX_FP) die("%s: too many parameters", f->name);
            fams[nfams++] = f;
        }
}
static const Family *family_by_name(const char *name) {
    for (int k = 0; k < nfams; k++)
        if (strcmp(fams[k]->name, name) == 0) return fams[k];
    return NULL;
}

// --families a,b,c: keep only the named families, in the order given.
static void families_keep(const char *list) {
    const Family *keep[MAX_FAMILIES];
    int nkeep = 0;
    char name[64];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof name) die("--families: expected names separated by commas, got '%s'", list);
        memcpy(name, p, n);
        name[n] = 0;
        const Family *f = family_by_name(name);
        if (!f) die("--families: unknown family '%s' (corpus --list lists them)", name);
        for (int j = 0; j < nkeep; j++)
            if (keep[j] == f) die("--families: '%s' named twice", name);
        keep[nkeep++] = f;
        p += n + (p[n] == ',');
    }
    memcpy(fams, keep, sizeof *keep * (size_t)nkeep);
    nfams = nkeep;
}

static int plain_style; // --style plain: every task written in style_plain, params_pin

// ----------------------------------------------------------------------------
// Tasks and their text

static int valid_ident(const char *s) {
    if (!s[0] || (s[0] >= '0' && s[0] <= '9')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

// Checks what layout produced: valid unique names, counts equal to the size constants.
static const char *task_problem(const Task *t) {
    if (t->nin < 1 || t->nin > MAX_T || t->nout < 1 || t->nout > MAX_T) return "bad number of tensors";
    for (int k = 0; k < t->nin + t->nout; k++) {
        const Tensor *x = k < t->nin ? &t->in[k] : &t->out[k - t->nin];
        if (!valid_ident(x->name)) return fmt("tensor %d has no valid name", k);
        for (int j = 0; j < k; j++) {
            const Tensor *y = j < t->nin ? &t->in[j] : &t->out[j - t->nin];
            if (strcmp(x->name, y->name) == 0) return fmt("two tensors named %s", x->name);
        }
        long c = 1;
        for (int f = 0; f < x->nfac; f++) c *= t->size[x->fac[f]].value;
        if (c != tensor_count(x))
            return fmt("%s: %ld elements but its size constants give %ld", x->name, tensor_count(x), c);
        if (x->ndim < 1 || x->ndim > MAX_DIMS) return fmt("%s: bad rank", x->name);
    }
    return NULL;
}

static void task_draw(Task *t, const Family *f, Rng *r) {
    memset(t, 0, sizeof *t);
    t->fam = f;
    style_draw(&t->st, r);
    if (plain_style) style_plain(&t->st);
    params_draw(t, r);
    if (plain_style) params_pin(t);
    f->draw(t, r);
    f->layout(t);
    t->seed = rng_next(r) >> 20; // 44 bits: exact as a JSON number
    const char *why = task_problem(t);
    if (why) die("family %s: %s", f->name, why);
}

typedef struct {
    Task t;
    Buf prompt;
    Emit code;
    uint64_t hash;  // of prompt and completion
    int heldout;
} Sample;

static uint64_t text_hash(const Buf *prompt, const Buf *code) {
    uint64_t h = hash_bytes(prompt->s, prompt->len, 0x5eed);
    return hash_bytes(code->s, code->len, h);
}

static void sample_text(Sample *s) {
    buf_clear(&s->prompt);
    emit_prompt(&s->t, &s->prompt);
    em_free(&s->code);
    em_init(&s->code, s->t.st.iw);
    emit_program(&s->t, &s->code);
    em_check(&s->code, s->t.fam->name);
    s->hash = text_hash(&s->prompt, &s->code.b);
}

// The parameter combination of a task, "op=relu,n=4096,block=256,loop=grid_stride": the
// family's combo parameters and their values.
static const char *combo_key(const Task *t) {
    static char s[512];
    const Family *f = t->fam;
    s[0] = 0;
    for (int k = 0; f->ip[k].name; k++) {
        if (!f->ip[k].combo) continue;
        size_t l = strlen(s);
        if (f->ip[k].values)
            snprintf(s + l, sizeof s - l, "%s%s=%s", l ? "," : "", f->ip[k].name, f->ip[k].values[t->p[k]]);
        else snprintf(s + l, sizeof s - l, "%s%s=%d", l ? "," : "", f->ip[k].name, t->p[k]);
    }
    return s;
}
// The held-out decision: a hash of the family name and the combination.
#define HELDOUT_PERMILLE 150
static int combo_heldout(const Task *t) {
    uint64_t h = hash_str(combo_key(t), hash_str(t->fam->name, 0xc0b0));
    return (int)(h % 1000) < HELDOUT_PERMILLE;
}
// The split an instance of a seen combination belongs to: 0 train, 1 val, 2 test.
static int instance_split(uint64_t hash) {
    int b = (int)(mix64(hash ^ 0x5917) % 100);
    return b < 80 ? 0 : b < 90 ? 1 : 2;
}

static void json_line(Buf *b, const Sample *s, const char *id) {
    buf_puts(b, "{\"prompt\":");
    json_str(b, s->prompt.s, s->prompt.len);
    buf_puts(b, ",\"completion\":");
    json_str(b, s->code.b.s, s->code.b.len);
    buf_puts(b, ",\"family\":");
    json_str(b, s->t.fam->name, strlen(s->t.fam->name));
    buf_puts(b, ",\"id\":");
    json_str(b, id, strlen(id));
    buf_puts(b, ",\"spans\":[");
    CusetSpan *sp = NULL;
    size_t nsp = cuset_annotate(s->code.b.s, s->code.b.len, &sp);
    for (size_t k = 0; k < nsp; k++)
        buf_printf(b, "%s[%zu,%zu,\"%s\"]", k ? "," : "", sp[k].start, sp[k].end, span_names[sp[k].kind]);
    arrfree(sp);
    buf_puts(b, "],\"spec\":");
    json_spec(b, &s->t);
    buf_puts(b, ",\"combo\":");
    const char *c = combo_key(&s->t);
    json_str(b, c, strlen(c));
    buf_printf(b, ",\"heldout\":%s}\n", s->heldout ? "true" : "false");
}

// ----------------------------------------------------------------------------
// Files

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    Buf b = { 0 };
    char tmp[65536];
    size_t n;
    buf_reserve(&b, 1);
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf_putn(&b, tmp, n);
    fclose(f);
    *len = b.len;
    return b.s;
}
// Writes path.tmp then renames it over path.
static void write_file(const char *path, const void *data, size_t len) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) die("cannot write %s: %s", tmp, strerror(errno));
    if (len && fwrite(data, 1, len, f) != len) die("cannot write %s: %s", tmp, strerror(errno));
    if (fclose(f)) die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, path)) die("cannot rename %s to %s: %s", tmp, path, strerror(errno));
}
static void make_dir(const char *path) {
    if (mkdir(path, 0755) && errno != EEXIST) die("cannot create %s: %s", path, strerror(errno));
}

// ----------------------------------------------------------------------------
// Generation

static const char *const split_names[] = { "train", "val", "test" };

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct { const char *text; size_t len; int split, index; } Seen;
static int cmp_seen(const void *a, const void *b) {
    const Seen *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->text, y->text, x->len);
}

// A set of 64-bit hashes (open addressing; 0 is mapped to 1).
typedef struct { uint64_t *slot; size_t cap, n; } HashSet;
static int hs_insert(HashSet *s, uint64_t h) { // 1 when new
    if (!h) h = 1;
    if (2 * (s->n + 1) > s->cap) {
        HashSet g = { calloc(s->cap ? s->cap * 2 : 1024, 8), s->cap ? s->cap * 2 : 1024, 0 };
        for (size_t k = 0; k < s->cap; k++)
            if (s->slot[k]) hs_insert(&g, s->slot[k]);
        free(s->slot);
        *s = g;
    }
    size_t k = (size_t)(h % s->cap);
    while (s->slot[k]) {
        if (s->slot[k] == h) return 0;
        k = (k + 1) % s->cap;
    }
    s->slot[k] = h;
    s->n++;
    return 1;
}

static int generate(const char *dir, uint64_t seed, const int count[3]) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    make_dir(dir);
    HashSet used = { 0 };
    Seen *seen = malloc(sizeof *seen * (size_t)(count[0] + count[1] + count[2] + 1));
    int nseen = 0;
    long draws = 0;
    Sample s;
    memset(&s, 0, sizeof s);
    em_init(&s.code, 4);
    for (int sp = 0; sp < 3; sp++) {
        Rng r = rng_seeded(seed, 1000 + (uint64_t)sp);
        Buf out = { 0 };
        size_t *lens = malloc(sizeof *lens * (size_t)(count[sp] + 1));
        int *per_family = calloc((size_t)nfams, sizeof *per_family), nheld = 0;
        for (int i = 0; i < count[sp]; i++) {
            const Family *f = fams[(i + 3 * sp) % nfams];
            int want_held = sp == 2 && i % 2 == 0;
            int tries = 0;
            for (;; tries++) {
                if (tries == 200000) die("%s: no acceptable %s sample after %d draws", f->name, split_names[sp], tries);
                draws++;
                task_draw(&s.t, f, &r);
                s.heldout = combo_heldout(&s.t);
                if (s.heldout != want_held) continue;
                sample_text(&s);
                if (!want_held && instance_split(s.hash) != sp) continue;
                if (!hs_insert(&used, s.hash)) continue;
                break;
            }
            char id[64];
            snprintf(id, sizeof id, "%s-%05d", split_names[sp], i);
            json_line(&out, &s, id);
            lens[i] = s.code.b.len;
            per_family[(i + 3 * sp) % nfams]++;
            nheld += s.heldout;
            Buf both = { 0 };
            buf_putn(&both, s.prompt.s, s.prompt.len);
            buf_putn(&both, "\0", 1);
            buf_putn(&both, s.code.b.s, s.code.b.len);
            seen[nseen].text = both.s;
            seen[nseen].len = both.len;
            seen[nseen].split = sp;
            seen[nseen].index = i;
            nseen++;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.jsonl", dir, split_names[sp]);
        write_file(path, out.s, out.len);
        double mean = 0;
        for (int i = 0; i < count[sp]; i++) mean += (double)lens[i];
        mean = count[sp] ? mean / count[sp] : 0;
        qsort(lens, (size_t)count[sp], sizeof *lens, cmp_size);
        size_t p95 = count[sp] ? lens[(size_t)((count[sp] - 1) * 0.95)] : 0, mx = count[sp] ? lens[count[sp] - 1] : 0;
        fprintf(stderr, "%s: %d samples (%d held-out combinations), target chars mean %.0f, p95 %zu, max %zu -> %s\n",
                split_names[sp], count[sp], nheld, mean, p95, mx, path);
        buf_free(&out);
        free(lens);
        free(per_family);
    }
    // The assertion: no prompt + completion occurs in two splits (nor twice in one), by
    // comparing the texts themselves, not their hashes.
    qsort(seen, (size_t)nseen, sizeof *seen, cmp_seen);
    for (int k = 1; k < nseen; k++)
        if (cmp_seen(&seen[k], &seen[k - 1]) == 0)
            die("the same prompt and completion twice: %s %d and %s %d", split_names[seen[k - 1].split],
                seen[k - 1].index, split_names[seen[k].split], seen[k].index);
    for (int k = 0; k < nseen; k++) free((char *)seen[k].text);
    free(seen);
    free(used.slot);
    buf_free(&s.prompt);
    em_free(&s.code);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "%d families, %ld draws, %.2f s\n", nfams, draws,
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return 0;
}

// ----------------------------------------------------------------------------
// Specs back into tasks

static int spec_fail(char *err, size_t errlen, const char *msg) {
    snprintf(err, errlen, "%s", msg);
    return -1;
}

static int read_tensor(const JVal *v, Tensor *x, int is_input, char *err, size_t errlen) {
    const JVal *name = jget(v, "name"), *dt = jget(v, "dtype"), *shape = jget(v, "shape");
    if (!name || name->type != JSTR || !valid_ident(name->str) || strlen(name->str) >= sizeof x->name)
        return spec_fail(err, errlen, "a tensor without a valid \"name\"");
    snprintf(x->name, sizeof x->name, "%s", name->str);
    if (!dt || dt->type != JSTR || dt_from_name(dt->str) < 0)
        return spec_fail(err, errlen, fmt("%s: bad dtype", x->name));
    x->dt = (DType)dt_from_name(dt->str);
    if (!shape || shape->type != JARR || shape->n < 1 || shape->n > MAX_DIMS)
        return spec_fail(err, errlen, fmt("%s: bad shape", x->name));
    x->ndim = shape->n;
    for (int d = 0; d < shape->n; d++) {
        if (shape->items[d].type != JNUM || shape->items[d].num < 1 || shape->items[d].num > 1e9)
            return spec_fail(err, errlen, fmt("%s: bad shape", x->name));
        x->shape[d] = (long)shape->items[d].num;
    }
    if (is_input) {
        const JVal *lo = jget(v, "lo"), *hi = jget(v, "hi"), *in = jget(v, "integer"), *gen = jget(v, "gen");
        if (!lo || lo->type != JNUM || !hi || hi->type != JNUM || lo->num > hi->num)
            return spec_fail(err, errlen, fmt("%s: bad lo/hi", x->name));
        x->lo = lo->num;
        x->hi = hi->num;
        x->integer = in && in->type == JBOOL && in->num != 0;
        x->gen = gen && gen->type == JSTR && strcmp(gen->str, "perm") == 0 ? GEN_PERM : GEN_UNIFORM;
    }
    return 0;
}

// Rebuilds the task of a spec object: the family's parameters, tensor names, data ranges,
// seed and tolerance; the family's layout must give the same dtypes and shapes.
static int task_from_spec(const JVal *spec, Task *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    const JVal *fam = jget(spec, "family"), *params = jget(spec, "params"), *ins = jget(spec, "inputs"),
               *outs = jget(spec, "outputs"), *seed = jget(spec, "seed"), *atol = jget(spec, "atol"),
               *rtol = jget(spec, "rtol");
    if (!fam || fam->type != JSTR) return spec_fail(err, errlen, "spec without \"family\"");
    t->fam = family_by_name(fam->str);
    if (!t->fam) return spec_fail(err, errlen, fmt("unknown family %s", fam->str));
    if (!params || params->type != JOBJ) return spec_fail(err, errlen, "spec without \"params\"");
    const Family *f = t->fam;
    for (int k = 0; k < params->n; k++) {
        const char *key = params->keys[k];
        const JVal *v = &params->items[k];
        int ip = param_index(f, key);
        if (ip >= 0) {
            if (f->ip[ip].values) {
                int found = -1;
                for (int j = 0; v->type == JSTR && f->ip[ip].values[j]; j++)
                    if (strcmp(f->ip[ip].values[j], v->str) == 0) found = j;
                if (found < 0) return spec_fail(err, errlen, fmt("params.%s: unknown value", key));
                t->p[ip] = found;
            } else {
                if (v->type != JNUM || v->num != floor(v->num) || fabs(v->num) > 2e9)
                    return spec_fail(err, errlen, fmt("params.%s: not an integer", key));
                t->p[ip] = (int)v->num;
            }
            continue;
        }
        int fp = -1;
        for (int j = 0; f->fp && f->fp[j]; j++)
            if (strcmp(f->fp[j], key) == 0) fp = j;
        if (fp < 0 || v->type != JNUM)
            return spec_fail(err, errlen, fmt("params.%s: unknown parameter of %s", key, f->name));
        t->f[fp] = v->num;
    }
    if (!ins || ins->type != JARR || !outs || outs->type != JARR || ins->n > MAX_T || outs->n > MAX_T)
        return spec_fail(err, errlen, "spec without \"inputs\" and \"outputs\" arrays");
    Tensor jin[MAX_T], jout[MAX_T];
    memset(jin, 0, sizeof jin);
    memset(jout, 0, sizeof jout);
    for (int k = 0; k < ins->n; k++)
        if (read_tensor(&ins->items[k], &jin[k], 1, err, errlen)) return -1;
    for (int k = 0; k < outs->n; k++)
        if (read_tensor(&outs->items[k], &jout[k], 0, err, errlen)) return -1;
    for (int k = 0; k < ins->n; k++) memcpy(t->in[k].name, jin[k].name, sizeof jin[k].name);
    for (int k = 0; k < outs->n; k++) memcpy(t->out[k].name, jout[k].name, sizeof jout[k].name);
    // sizes the family cannot handle would crash its reference: bound them first
    for (int k = 0; k < ins->n; k++)
        if (tensor_count(&jin[k]) > 100000000L) return spec_fail(err, errlen, fmt("%s: too large", jin[k].name));
    f->layout(t);
    if (t->nin != ins->n || t->nout != outs->n)
        return spec_fail(err, errlen, fmt("%s with these params has %d inputs and %d outputs, the spec lists %d and %d",
                                          f->name, t->nin, t->nout, ins->n, outs->n));
    for (int k = 0; k < t->nin + t->nout; k++) {
        Tensor *x = k < t->nin ? &t->in[k] : &t->out[k - t->nin];
        const Tensor *j = k < t->nin ? &jin[k] : &jout[k - t->nin];
        int same = x->dt == j->dt && x->ndim == j->ndim;
        for (int d = 0; same && d < x->ndim; d++) same = x->shape[d] == j->shape[d];
        if (!same)
            return spec_fail(err, errlen,
                             fmt("%s: dtype or shape differs from what %s's params give", x->name, f->name));
        if (k < t->nin) {
            x->lo = j->lo;
            x->hi = j->hi;
            x->integer = j->integer;
            x->gen = j->gen;
        }
    }
    if (!seed || seed->type != JNUM || seed->num < 0) return spec_fail(err, errlen, "spec without a \"seed\"");
    t->seed = (uint64_t)seed->num;
    if (!atol || atol->type != JNUM || !rtol || rtol->type != JNUM || atol->num < 0 || rtol->num < 0)
        return spec_fail(err, errlen, "spec without \"atol\" and \"rtol\"");
    t->atol = atol->num;
    t->rtol = rtol->num;
    const char *why = task_problem(t);
    if (why) return spec_fail(err, errlen, why);
    return 0;
}

static int spec_load(const char *dir, Task *t, JVal *spec) {
    char path[4200], err[300];
    snprintf(path, sizeof path, "%s/spec.json", dir);
    size_t len;
    char *text = read_file(path, &len);
    if (!text) { fprintf(stderr, "corpus: cannot read %s: %s\n", path, strerror(errno)); return -1; }
    const char *jerr;
    if (jparse_text(text, len, spec, &jerr)) { fprintf(stderr, "corpus: %s: %s\n", path, jerr); free(text); return -1; }
    free(text);
    if (task_from_spec(spec, t, err, sizeof err)) {
        fprintf(stderr, "corpus: %s: %s\n", path, err);
        jfree(spec);
        return -1;
    }
    return 0;
}

// ----------------------------------------------------------------------------
// Test data

// The inputs of a spec: for input k a generator seeded with (seed, k + 1); floats are
// lo + (hi - lo) * u, u uniform in [0, 1) (53 bits), rounded to float32 (or float16);
// integers lo + (draw mod (hi - lo + 1)); "perm" a Fisher-Yates shuffle of 0..count-1.
static void *make_input(const Tensor *x, uint64_t seed, int k) {
    long n = tensor_count(x);
    void *buf = malloc((size_t)n * (size_t)dt_sizes[x->dt] + 1);
    Rng r = rng_seeded(seed, (uint64_t)k + 1);
    if (x->gen == GEN_PERM) {
        int *p = buf;
        for (long i = 0; i < n; i++) p[i] = (int)i;
        for (long i = n - 1; i > 0; i--) {
            long j = (long)(rng_next(&r) % (uint64_t)(i + 1));
            int tmp = p[i];
            p[i] = p[j];
            p[j] = tmp;
        }
        return buf;
    }
    for (long i = 0; i < n; i++) {
        double v;
        if (x->integer || x->dt == DT_I32 || x->dt == DT_U32 || x->dt == DT_U8) {
            long lo = (long)ceil(x->lo), hi = (long)floor(x->hi);
            v = (double)(lo + (long)(rng_next(&r) % (uint64_t)(hi - lo + 1)));
        } else {
            v = x->lo + (x->hi - x->lo) * rng_unit(&r);
        }
        switch (x->dt) {
        case DT_F32: ((float *)buf)[i] = (float)v; break;
        case DT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
        case DT_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
        case DT_F16: ((uint16_t *)buf)[i] = f32_to_f16((float)v); break;
        default: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        }
    }
    return buf;
}

static void run_reference(const Task *t, void *const *in, const char *dir) {
    void *out[MAX_T];
    for (int k = 0; k < t->nout; k++) out[k] = calloc((size_t)tensor_count(&t->out[k]), (size_t)dt_sizes[t->out[k].dt]);
    t->fam->ref(t, (const void *const *)in, out);
    for (int k = 0; k < t->nout; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.expected.bin", dir, t->out[k].name);
        write_file(path, out[k], (size_t)tensor_count(&t->out[k]) * (size_t)dt_sizes[t->out[k].dt]);
        free(out[k]);
    }
}

static int materialize(const char *cdir, const char *split, long index, const char *wdir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.jsonl", cdir, split);
    size_t len;
    char *text = read_file(path, &len);
    if (!text) { fprintf(stderr, "corpus: cannot read %s: %s\n", path, strerror(errno)); return 2; }
    // line `index` (0-based, blank lines not counted)
    char *line = NULL;
    size_t llen = 0;
    long k = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        if (j > i) {
            if (k == index) { line = text + i; llen = j - i; break; }
            k++;
        }
        i = j + 1;
    }
    if (!line) { fprintf(stderr, "corpus: %s has %ld samples, no index %ld\n", path, k, index); free(text); return 2; }
    JVal obj, *spec;
    const char *jerr;
    if (jparse_text(line, llen, &obj, &jerr)) {
        fprintf(stderr, "corpus: %s:%ld: %s\n", path, index + 1, jerr);
        free(text);
        return 2;
    }
    free(text);
    spec = (JVal *)jget(&obj, "spec");
    const JVal *completion = jget(&obj, "completion"), *id = jget(&obj, "id");
    Task t;
    char err[300];
    if (!spec || task_from_spec(spec, &t, err, sizeof err)) {
        fprintf(stderr, "corpus: %s:%ld: %s\n", path, index + 1, spec ? err : "no \"spec\"");
        jfree(&obj);
        return 2;
    }
    make_dir(wdir);
    void *in[MAX_T];
    for (int j = 0; j < t.nin; j++) {
        in[j] = make_input(&t.in[j], t.seed, j);
        snprintf(path, sizeof path, "%s/%s.bin", wdir, t.in[j].name);
        write_file(path, in[j], (size_t)tensor_count(&t.in[j]) * (size_t)dt_sizes[t.in[j].dt]);
    }
    run_reference(&t, in, wdir);
    for (int j = 0; j < t.nin; j++) free(in[j]);
    Buf b = { 0 };
    json_spec(&b, &t);
    b.len--; // reopen the object to add the sample id
    buf_puts(&b, ",\"id\":");
    json_str(&b, id && id->type == JSTR ? id->str : "", id && id->type == JSTR ? strlen(id->str) : 0);
    buf_puts(&b, "}\n");
    snprintf(path, sizeof path, "%s/spec.json", wdir);
    write_file(path, b.s, b.len);
    buf_free(&b);
    if (completion && completion->type == JSTR) {
        snprintf(path, sizeof path, "%s/reference.cu", wdir);
        write_file(path, completion->str, strlen(completion->str));
    }
    fprintf(stderr, "%s %s:%ld (%s) -> %s: %d inputs, %d outputs\n", id && id->type == JSTR ? id->str : "", split,
            index, t.fam->name, wdir, t.nin, t.nout);
    jfree(&obj);
    return 0;
}

static int reference(const char *wdir) {
    Task t;
    JVal spec;
    if (spec_load(wdir, &t, &spec)) return 2;
    jfree(&spec);
    void *in[MAX_T];
    for (int k = 0; k < t.nin; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.bin", wdir, t.in[k].name);
        size_t len, want = (size_t)tensor_count(&t.in[k]) * (size_t)dt_sizes[t.in[k].dt];
        in[k] = read_file(path, &len);
        if (!in[k]) { fprintf(stderr, "corpus: cannot read %s: %s\n", path, strerror(errno)); return 2; }
        if (len != want) { fprintf(stderr, "corpus: %s: %zu bytes, expected %zu\n", path, len, want); return 2; }
    }
    run_reference(&t, in, wdir);
    for (int k = 0; k < t.nin; k++) free(in[k]);
    return 0;
}

static double elem(const void *p, DType dt, long i) {
    switch (dt) {
    case DT_F32: return ((const float *)p)[i];
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_U32: return ((const uint32_t *)p)[i];
    case DT_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const uint8_t *)p)[i];
    }
}

static int compare(const char *wdir) {
    Task t;
    JVal spec;
    if (spec_load(wdir, &t, &spec)) return 2;
    jfree(&spec);
    int ok = 1;
    for (int k = 0; k < t.nout; k++) {
        const Tensor *x = &t.out[k];
        char pg[4200], pe[4200];
        snprintf(pg, sizeof pg, "%s/%s.bin", wdir, x->name);
        snprintf(pe, sizeof pe, "%s/%s.expected.bin", wdir, x->name);
        size_t lg, le, want = (size_t)tensor_count(x) * (size_t)dt_sizes[x->dt];
        char *g = read_file(pg, &lg), *ex = read_file(pe, &le);
        if (!ex || le != want) {
            fprintf(stderr, "corpus: %s: %s\n", pe, ex ? "wrong size" : strerror(errno));
            free(g);
            free(ex);
            return 2;
        }
        if (!g) { printf("FAIL %s: %s.bin was not written\n", x->name, x->name); ok = 0; free(ex); continue; }
        if (lg != want) {
            printf("FAIL %s: %s.bin has %zu bytes, expected %zu (%ld x %s)\n", x->name, x->name, lg, want,
                   tensor_count(x), dt_names[x->dt]);
            ok = 0;
            free(g);
            free(ex);
            continue;
        }
        double worst_ratio = 0, worst_abs = 0;
        long worst_i = 0, nbad = 0;
        for (long i = 0; i < tensor_count(x); i++) {
            double a = elem(g, x->dt, i), e = elem(ex, x->dt, i), d = fabs(a - e), allowed = t.atol + t.rtol * fabs(e);
            double ratio;
            if (isnan(e) && isnan(a)) continue;
            if (isnan(a) || isnan(e) || (isinf(a) && a != e)) ratio = INFINITY, d = INFINITY;
            else if (a == e) ratio = 0;
            else ratio = allowed > 0 ? d / allowed : INFINITY;
            if (ratio > 1) nbad++;
            if (ratio > worst_ratio || (ratio == worst_ratio && d > worst_abs)) {
                worst_ratio = ratio;
                worst_abs = d;
                worst_i = i;
            }
        }
        double a = elem(g, x->dt, worst_i), e = elem(ex, x->dt, worst_i);
        printf("%s %s: max_abs_err %.6g, %ld of %ld elements outside |err| <= %g + %g*|expected|; worst at %ld: got "
               "%.9g, expected %.9g\n",
               nbad ? "FAIL" : "PASS", x->name, worst_abs, nbad, tensor_count(x), t.atol, t.rtol, worst_i, a, e);
        if (nbad) ok = 0;
        free(g);
        free(ex);
    }
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

// ----------------------------------------------------------------------------
// Command line

static void usage(void) {
    fprintf(
        stderr,
        "usage:\n"
        "  corpus --out DIR [--seed S] [--train N] [--val N] [--test N] [--families A,B,..] [--style varied|plain]\n"
        "  corpus --materialize DIR --split train|val|test --index K --to WORKDIR\n"
        "  corpus --compare WORKDIR\n"
        "  corpus --reference WORKDIR\n"
        "  corpus --emit-family NAME [--seed S] [--prompt]\n"
        "  corpus --list\n");
    exit(2);
}

static long parse_long(const char *s, const char *flag, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        die("%s: expected a whole number in [%ld, %ld], got '%s'", flag, lo, hi, s);
    return v;
}

int main(int argc, char **argv) {
    families_init();
    const char *out = NULL, *mat = NULL, *split = NULL, *to = NULL, *cmp = NULL, *ref = NULL, *emit = NULL;
    long index = -1;
    uint64_t seed = 1;
    int count[3] = { 2000, 200, 200 }, list = 0, prompt = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
#define ARG(name) (strcmp(a, name) == 0 && (has || (die("%s needs a value", name), 0)))
        if (ARG("--out")) out = argv[++i];
        else if (ARG("--seed")) {
            char *end;
            errno = 0;
            seed = strtoull(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || argv[i][0] == '-')
                die("--seed: expected a whole number, got '%s'", argv[i]);
        } else if (ARG("--train")) count[0] = (int)parse_long(argv[++i], a, 0, 10000000);
        else if (ARG("--val")) count[1] = (int)parse_long(argv[++i], a, 0, 10000000);
        else if (ARG("--test")) count[2] = (int)parse_long(argv[++i], a, 0, 10000000);
        else if (ARG("--materialize")) mat = argv[++i];
        else if (ARG("--split")) split = argv[++i];
        else if (ARG("--index")) index = parse_long(argv[++i], a, 0, 1000000000);
        else if (ARG("--to")) to = argv[++i];
        else if (ARG("--compare")) cmp = argv[++i];
        else if (ARG("--reference")) ref = argv[++i];
        else if (ARG("--emit-family")) emit = argv[++i];
        else if (ARG("--families")) families_keep(argv[++i]);
        else if (ARG("--style")) {
            const char *v = argv[++i];
            if (strcmp(v, "plain") && strcmp(v, "varied")) die("--style: plain or varied, got '%s'", v);
            plain_style = strcmp(v, "plain") == 0;
        }
        else if (strcmp(a, "--list") == 0) list = 1;
        else if (strcmp(a, "--prompt") == 0) prompt = 1;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) usage();
        else die("unknown argument '%s' (--help lists the commands)", a);
#undef ARG
    }
    if ((out != NULL) + (mat != NULL) + (cmp != NULL) + (ref != NULL) + (emit != NULL) + list != 1) usage();
    if (list) {
        for (int k = 0; k < nfams; k++) {
            const Family *f = fams[k];
            printf("%-22s %s\n  params:", f->name, f->summary);
            for (int j = 0; f->ip[j].name; j++) printf(" %s%s", f->ip[j].name, f->ip[j].combo ? "*" : "");
            for (int j = 0; f->fp && f->fp[j]; j++) printf(" %s", f->fp[j]);
            printf("   (* = part of the held-out combination)\n");
        }
        return 0;
    }
    if (cmp) return compare(cmp);
    if (ref) return reference(ref);
    if (mat) {
        if (!split || index < 0 || !to) usage();
        if (strcmp(split, "train") && strcmp(split, "val") && strcmp(split, "test")) die("--split: train, val or test");
        return materialize(mat, split, index, to);
    }
    if (emit) {
        const Family *f = family_by_name(emit);
        if (!f) die("unknown family '%s' (--list lists them)", emit);
        Rng r = rng_seeded(seed, hash_str(f->name, 77)); // styles differ between families for one seed
        Sample s;
        memset(&s, 0, sizeof s);
        em_init(&s.code, 4);
        task_draw(&s.t, f, &r);
        sample_text(&s);
        if (prompt) fprintf(stderr, "%s\n", s.prompt.s);
        fwrite(s.code.b.s, 1, s.code.b.len, stdout);
        buf_free(&s.prompt);
        em_free(&s.code);
        return 0;
    }
    return generate(out, seed, count);
}
