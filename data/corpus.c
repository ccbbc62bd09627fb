// corpus.c - the generator of cuset's default data: CUDA programming tasks.
//   gcc -std=gnu11 -O2 -Wall -Wextra -o data/corpus data/corpus.c -lm   (gcc: the templates are raw
//   string literals, R"(...)", a GNU C extension that clang's C lacks)
//
//   The commands and what they write: usage() below (corpus --help prints it).
//
// One JSON object per line: {"prompt", "completion", "family", "id", "spans": [[start, end,
// "global"|"device"|"launch"|"dim3"], ...] (byte ranges of the completion, found by the
// annotator data/annotate.h), "spec": {"family", "params", "inputs": [{name, dtype, shape,
// lo, hi, integer, gen}], "outputs": [{name, dtype, shape}], "seed", "atol", "rtol"},
// "combo": the parameter combination ("op=relu,n=4096,..."), "heldout": true when that
// combination never occurs in train/val}. An output passes when |got - expected| <= atol +
// rtol * |expected| for every element.
//
// Splits. Every family has combo parameters (ParamDesc.combo: op, sizes, block size, loop
// style, ...); a hash of the family name and their values puts 15% of the combinations
// aside ("held out"): they only occur in test. Other instances go to train, val or test by
// a hash of the prompt and program text (80/10/10), so one text can only ever land in one
// split, whatever the seed. Half of the test split is held-out combinations, half instances
// of the other ("seen") combinations: those may also be drawn for training, by chance (the
// space is large: in the default corpus, 4 of 100 were). Families take turns, so each split
// covers all of them.
#define _GNU_SOURCE
#include "corpus.h"
#define CUSET_ANNOTATE_IMPLEMENTATION
#include "annotate.h"
#include "json.h"

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

static const Family *family_by_name(const char *name) {
    for (int k = 0; k < nfams; k++)
        if (strcmp(fams[k]->name, name) == 0) return fams[k];
    return NULL;
}
static void families_init(void) {
    for (int l = 0; family_lists[l]; l++)
        for (int k = 0; family_lists[l][k]; k++) {
            const Family *f = family_lists[l][k];
            if (nfams == MAX_FAMILIES) die("too many families");
            if (family_by_name(f->name)) die("two families named %s", f->name);
            if (param_count(f) > MAX_IP || fparam_count(f) > MAX_FP) die("%s: too many parameters", f->name);
            fams[nfams++] = f;
        }
}

// --families a,b,c: keep only the named families, in the order given.
static void families_keep(const char *list) {
    static int given;
    if (given++) die("--families given twice: name every family in one list (--families A,B)");
    const Family *keep[MAX_FAMILIES];
    int nkeep = 0;
    char name[64];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof name || (p[n] == ',' && !p[n + 1]))
            die("--families: expected names separated by commas, got '%s'", list);
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        const Family *f = family_by_name(name);
        if (!f) die("--families: unknown family '%s' (corpus --list lists them)", name);
        for (int j = 0; j < nkeep; j++)
            if (keep[j] == f) die("--families: '%s' named twice", name);
        keep[nkeep++] = f;
        p += n + (p[n] == ',');
    }
    if (nkeep == 0) die("--families: expected names separated by commas, got an empty list");
    memcpy(fams, keep, sizeof *keep * (size_t)nkeep);
    nfams = nkeep;
}

static int plain_style; // --style plain: every task written in style_plain, params_pin

// ----------------------------------------------------------------------------
// Tasks and their text

// Whether s is a C identifier (the name of a tensor, its variables and its file).
static int valid_ident(const char *s) {
    size_t n = 0;
    while (ident_char(s[n])) n++;
    return n > 0 && !isdigit((unsigned char)s[0]) && s[n] == 0;
}

// Checks what layout produced: a problem it found, names valid and unique, counts equal to
// the size constants.
static const char *task_problem(const Task *t) {
    if (t->problem) return t->problem;
    if (t->nin < 1 || t->nin > MAX_T || t->nout < 1 || t->nout > MAX_T) return "bad number of tensors";
    for (int k = 0; k < t->nin + t->nout; k++) {
        const Tensor *x = tensor_at(t, k);
        if (!valid_ident(x->name)) return fmt("tensor %d has no valid name", k);
        for (int j = 0; j < k; j++)
            if (strcmp(x->name, tensor_at(t, j)->name) == 0) return fmt("two tensors named %s", x->name);
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
    buffer_names_resolve(t);
    t->seed = rng_next(r) >> 20; // 44 bits: exact as a JSON number
    const char *why = task_problem(t);
    if (why) die("family %s: %s", f->name, why);
}

// A task with its prompt and program.
typedef struct {
    Task t;
    Buf prompt;
    Emit code;
    uint64_t hash;  // of prompt and completion
    int heldout;
} Sample;

static void sample_text(Sample *s) {
    buf_clear(&s->prompt);
    emit_prompt(&s->t, &s->prompt);
    em_free(&s->code);
    em_init(&s->code, s->t.st.iw);
    emit_program(&s->t, &s->code);
    tidy_signs(&s->prompt);
    tidy_signs(&s->code.b);
    em_check(&s->code, s->t.fam->name);
    s->hash = hash_bytes(s->code.b.s, s->code.b.len, hash_bytes(s->prompt.s, s->prompt.len, 0x5eed));
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
        const char *value = f->ip[k].values ? f->ip[k].values[t->p[k]] : fmt("%d", t->p[k]);
        snprintf(s + l, sizeof s - l, "%s%s=%s", l ? "," : "", f->ip[k].name, value);
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

// The JSONL line of a sample. Spans: the annotator (data/annotate.h) finds them in the
// finished program; span_names are their names, indexed by CusetSpanKind.
static const char *const span_names[] = { "?", "global", "device", "launch", "dim3" };
static void json_line(Buf *b, const Sample *s, const char *id) {
    CusetSpan *sp = NULL;
    size_t nsp = cuset_annotate(s->code.b.s, s->code.b.len, &sp);
    json_key_str(b, "{", "prompt", s->prompt.s);
    json_key_str(b, ",", "completion", s->code.b.s);
    json_key_str(b, ",", "family", s->t.fam->name);
    json_key_str(b, ",", "id", id);
    json_key(b, ",", "spans");
    buf_puts(b, "[");
    for (size_t k = 0; k < nsp; k++)
        buf_printf(b, "%s[%zu,%zu,\"%s\"]", k ? "," : "", sp[k].start, sp[k].end, span_names[sp[k].kind]);
    arrfree(sp);
    json_key(b, "],", "spec");
    json_spec(b, &s->t);
    json_key_str(b, ",", "combo", combo_key(&s->t));
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
// The same, or die with the reason.
static char *read_or_die(const char *path, size_t *len) {
    char *text = read_file(path, len);
    if (!text) die("cannot read %s: %s", path, strerror(errno));
    return text;
}
// DIR/NAME, for the work directory's files (a ring of 8, so a call may use several; fmt's
// strings are too short for a deep directory).
static const char *path_in(const char *dir, const char *name) {
    static char ring[8][4200];
    static int k;
    char *p = ring[k++ & 7];
    if (!*dir) die("an empty directory name (give . for the working directory)"); // "" + "/NAME" is the root's
    if (snprintf(p, sizeof ring[0], "%s/%s", dir, name) >= (int)sizeof ring[0]) die("path too long: %.60s...", dir);
    return p;
}
// Writes path.tmp then renames it over path.
static void write_file(const char *path, const void *data, size_t len) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f && (!len || fwrite(data, 1, len, f) == len);
    if (f && fclose(f)) ok = 0;
    if (ok && rename(tmp, path)) ok = 0;
    if (!ok) { // no half-written file stays behind
        int e = errno;
        remove(tmp);
        die("cannot write %s: %s", path, strerror(e));
    }
}
// Creates directory path and any missing parents (as mkdir -p).
static void make_dir(const char *path) {
    char p[4200];
    if (!*path) die("an empty directory name");
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) die("path too long: %.60s...", path);
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0; // p is now the path up to this separator
        if (mkdir(p, 0755) && errno != EEXIST) die("cannot create %s: %s", p, strerror(errno));
        if (!(*s = c)) break;
    }
}
// The bytes of a tensor.
static size_t tensor_bytes(const Tensor *x) { return (size_t)tensor_count(x) * (size_t)dt_sizes[x->dt]; }

// ----------------------------------------------------------------------------
// Generation

static const char *const split_names[] = { "train", "val", "test" };

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}
// The line on split sp that generate prints: the samples, how many are held-out
// combinations, and the programs' lengths lens[0..n) (mean, p95, max; sorts lens).
static void split_report(int sp, size_t *lens, int n, int nheld, const char *path) {
    double mean = 0;
    for (int i = 0; i < n; i++) mean += (double)lens[i];
    mean = n ? mean / n : 0;
    qsort(lens, (size_t)n, sizeof *lens, cmp_size); // p95: the nearest rank, ceil(0.95 n)
    fprintf(stderr, "%s: %d sample%s (%d held-out combinations), target chars mean %.0f, p95 %zu, max %zu -> %s\n",
            split_names[sp], n, n == 1 ? "" : "s", nheld, mean, n ? lens[(n * 95 + 99) / 100 - 1] : 0,
            n ? lens[n - 1] : 0, path);
}

// The hashes of the texts written so far: a set, open addressing with linear probing in a
// power-of-two table at most half full (slot 0 = empty; the hash 0 is a flag of its own).
// Not stb_ds's hash map: its hash of 8-byte keys shifts bytes >= 128 into an int's sign
// bit, which UBSan reports for keys like these.
typedef struct { uint64_t *slot; size_t cap, n; int has_zero; } TextSet;

// Adds h; returns 1 if it was not in the set.
static int textset_add(TextSet *s, uint64_t h) {
    if (h == 0) return s->has_zero ? 0 : (s->has_zero = 1);
    if (2 * (s->n + 1) > s->cap) { // grow and rehash
        size_t cap = s->cap ? 2 * s->cap : 1024;
        TextSet g = { calloc(cap, sizeof(uint64_t)), cap, 0, s->has_zero };
        if (!g.slot) die("out of memory");
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) textset_add(&g, s->slot[i]);
        free(s->slot);
        *s = g;
    }
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->slot[i] == h) return 0;
        if (!s->slot[i]) { s->slot[i] = h; s->n++; return 1; }
    }
}

// Draws task after task of family f until one fits split sp (a held-out combination or not
// as wanted; an instance hashed into this split) and its text is new. All splits share the
// set of used texts (their hashes), so no prompt and completion occurs twice in a corpus.
static void sample_draw(Sample *s, const Family *f, int sp, int want_held, Rng *r, TextSet *used, long *draws) {
    for (int tries = 0;; tries++) {
        if (tries == 200000) die("%s: no acceptable %s sample after %d draws", f->name, split_names[sp], tries);
        (*draws)++;
        task_draw(&s->t, f, r);
        s->heldout = combo_heldout(&s->t);
        if (s->heldout != want_held) continue;
        sample_text(s);
        if (!want_held && instance_split(s->hash) != sp) continue;
        if (textset_add(used, s->hash)) return;
    }
}

static int generate(const char *dir, uint64_t seed, const int count[3]) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    make_dir(dir);
    TextSet used = { 0 };
    long draws = 0;
    Sample s = { 0 }; // sample_text sets up s.code
    for (int sp = 0; sp < 3; sp++) {
        Rng r = rng_seeded(seed, 1000 + (uint64_t)sp);
        Buf out = { 0 };
        size_t *lens = malloc(sizeof *lens * (size_t)(count[sp] + 1));
        int nheld = 0, n = count[sp];
        // Families take turns; half of test is held-out combinations, and a family's turns
        // alternate between the two, whatever the number of families.
        for (int i = 0; i < n; i++) {
            int round = i / nfams, turn = i % nfams;
            sample_draw(&s, fams[(i + 3 * sp) % nfams], sp, sp == 2 && (round + turn) % 2 == 0, &r, &used, &draws);
            json_line(&out, &s, fmt("%s-%05d", split_names[sp], i));
            lens[i] = s.code.b.len;
            nheld += s.heldout;
        }
        const char *path = path_in(dir, fmt("%s.jsonl", split_names[sp]));
        write_file(path, out.s, out.len);
        split_report(sp, lens, n, nheld, path);
        buf_free(&out);
        free(lens);
    }
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

// Member key of object node o of d as a node of the type (-1: any), or NULL.
static const CusetJNode *jget(const CusetJDoc *d, int o, const char *key, int type) {
    int i = cuset_jdoc_get(d, o, key, type);
    return i < 0 ? NULL : &d->node[i];
}
// The string member key of object node o, or NULL.
static const char *jstr(const CusetJDoc *d, int o, const char *key) {
    return cuset_jdoc_str(d, cuset_jdoc_get(d, o, key, -1));
}

// Parses the whole text s[0..n) into d (0), or gives what is wrong and where (-1).
static int jparse_text(const char *s, size_t n, CusetJDoc *d, const char **err) {
    size_t at;
    if (cuset_jdoc_parse(d, s, n, err, &at) == 0) return 0;
    *err = fmt("%s at column %zu", *err, at + 1);
    return -1;
}

// Whether make_input draws whole numbers for x: integer types, and float tensors marked integer.
static int draws_whole(const Tensor *x) { return x->integer || x->dt == DT_I32 || x->dt == DT_U32 || x->dt == DT_U8; }

// A tensor of a spec (object node v): name, dtype and shape; inputs also how their data is
// drawn.
static const char *read_tensor(const CusetJDoc *d, int v, Tensor *x, int is_input) {
    const char *name = jstr(d, v, "name"), *dt = jstr(d, v, "dtype");
    int shape = cuset_jdoc_get(d, v, "shape", CUSET_JARR), ndim = shape < 0 ? 0 : cuset_jdoc_count(d, shape);
    if (!name || !valid_ident(name) || strlen(name) >= sizeof x->name) return "a tensor without a valid \"name\"";
    snprintf(x->name, sizeof x->name, "%s", name);
    if (!dt || dt_from_name(dt) < 0) return fmt("%s: bad dtype", x->name);
    x->dt = (DType)dt_from_name(dt);
    if (ndim < 1 || ndim > MAX_DIMS) return fmt("%s: bad shape", x->name);
    x->ndim = ndim;
    for (int c = shape + 1, k = 0; k < ndim; c = d->node[c].end, k++) {
        double side = d->node[c].num;
        if (d->node[c].type != CUSET_JNUM || side < 1 || side > 1e9 || side != floor(side))
            return fmt("%s: bad shape (each side a whole number in [1, 1e9])", x->name);
        x->shape[k] = (long)side;
    }
    if (!is_input) return NULL;
    const CusetJNode *lo = jget(d, v, "lo", CUSET_JNUM), *hi = jget(d, v, "hi", CUSET_JNUM);
    const CusetJNode *in = jget(d, v, "integer", CUSET_JBOOL);
    const char *gen = jstr(d, v, "gen");
    // the range make_input draws from: within the type (whole floats exact in float32), and
    // holding a whole number where it draws whole numbers
    x->integer = in && in->num != 0;
    int whole = draws_whole(x);
    double most = x->dt == DT_F32 && whole ? 16777216.0 : dt_max[x->dt];
    double least = x->dt == DT_U32 || x->dt == DT_U8 ? 0 : x->dt == DT_I32 ? -most - 1 : -most;
    if (!lo || !hi || !(lo->num >= least && lo->num <= hi->num && hi->num <= most) ||
        (whole && ceil(lo->num) > floor(hi->num)))
        return fmt("%s: bad lo/hi (want least <= lo <= hi <= most, with %g and %g for its type%s)", x->name,
                   least, most, whole ? ", and a whole number between" : "");
    x->lo = lo->num;
    x->hi = hi->num;
    if (gen && strcmp(gen, "uniform") && strcmp(gen, "perm"))
        return fmt("%s: bad gen '%s' (uniform or perm)", x->name, gen);
    x->gen = gen && strcmp(gen, "perm") == 0 ? GEN_PERM : GEN_UNIFORM;
    if (x->gen == GEN_PERM && x->dt != DT_I32) // make_input writes the permutation as int32
        return fmt("%s: gen perm (a permutation of 0..count-1) needs dtype int32, not %s", x->name, dt_names[x->dt]);
    const CusetJNode *grid = jget(d, v, "grid", CUSET_JNUM), *on_grid = jget(d, v, "on_grid", CUSET_JNUM);
    x->grid = grid ? grid->num : 0;
    x->on_grid = on_grid ? on_grid->num : 1;
    if (grid && (whole || !(x->grid > 0 && x->grid <= x->hi - x->lo) || !(x->on_grid > 0 && x->on_grid <= 1)))
        return fmt("%s: bad grid/on_grid (want floats, 0 < grid <= hi - lo and 0 < on_grid <= 1)", x->name);
    return NULL;
}

// Parameter key of a spec (its value: node v, and str, its text when a string) into the task.
static const char *read_param(Task *t, const char *key, const CusetJNode *v, const char *str) {
    const Family *f = t->fam;
    int ip = param_index(f, key);
    if (ip >= 0 && f->ip[ip].values) {
        for (int j = 0; v->type == CUSET_JSTR && f->ip[ip].values[j]; j++)
            if (strcmp(f->ip[ip].values[j], str) == 0) {
                t->p[ip] = j;
                return NULL;
            }
        return fmt("params.%s: unknown value", key);
    }
    if (ip >= 0) {
        int lo, hi;
        param_bounds(&f->ip[ip], &lo, &hi);
        if (v->type != CUSET_JNUM || v->num != floor(v->num) || v->num < lo || v->num > hi)
            return fmt("params.%s: not a whole number in [%d, %d]", key, lo, hi);
        t->p[ip] = (int)v->num;
        return NULL;
    }
    for (int j = 0; f->fp && f->fp[j]; j++)
        if (strcmp(f->fp[j], key) == 0) { // the families draw them within +-1000
            if (v->type != CUSET_JNUM || fabs(v->num) > 1e6) return fmt("params.%s: not a number in [-1e6, 1e6]", key);
            t->f[j] = v->num;
            return NULL;
        }
    return fmt("params.%s: unknown parameter of %s", key, f->name);
}

// Rebuilds the task of a spec object (node spec of d): the family's parameters, tensor
// names, data ranges, seed and tolerance; the family's layout must give the same dtypes and
// shapes. NULL, or what is wrong.
static const char *task_from_spec(const CusetJDoc *d, int spec, Task *t) {
    const char *fam = jstr(d, spec, "family");
    int params = cuset_jdoc_get(d, spec, "params", CUSET_JOBJ);
    int arrs[2] = { cuset_jdoc_get(d, spec, "inputs", CUSET_JARR), cuset_jdoc_get(d, spec, "outputs", CUSET_JARR) };
    const CusetJNode *seed = jget(d, spec, "seed", CUSET_JNUM), *atol = jget(d, spec, "atol", CUSET_JNUM),
                     *rtol = jget(d, spec, "rtol", CUSET_JNUM);
    Tensor js[2 * MAX_T] = { 0 }; // the spec's inputs, then its outputs
    const char *why;
    memset(t, 0, sizeof *t);
    if (!fam) return "spec without \"family\"";
    if (!(t->fam = family_by_name(fam))) return fmt("unknown family %s", fam);
    if (params < 0) return "spec without \"params\"";
    for (int c = params + 1; c < d->node[params].end; c = d->node[c].end)
        if ((why = read_param(t, d->text + d->node[c].key, &d->node[c], cuset_jdoc_str(d, c)))) return why;
    int nin = arrs[0] < 0 ? -1 : cuset_jdoc_count(d, arrs[0]), nout = arrs[1] < 0 ? -1 : cuset_jdoc_count(d, arrs[1]);
    if (nin < 0 || nout < 0 || nin > MAX_T || nout > MAX_T) return "spec without \"inputs\" and \"outputs\" arrays";
    for (int a = 0, k = 0; a < 2; a++) // the tensors: inputs (a = 0), then outputs
        for (int c = arrs[a] + 1; c < d->node[arrs[a]].end; c = d->node[c].end, k++) {
            if ((why = read_tensor(d, c, &js[k], a == 0))) return why;
            if (tensor_count(&js[k]) > 100000000L) return fmt("%s: too large", js[k].name); // before the reference
            Tensor *named = a == 0 ? &t->in[k] : &t->out[k - nin]; // layout keeps the names
            memcpy(named->name, js[k].name, sizeof named->name);
        }
    t->fam->layout(t);
    if (t->nin != nin || t->nout != nout)
        return fmt("%s with these params has %d inputs and %d outputs, the spec lists %d and %d", t->fam->name,
                   t->nin, t->nout, nin, nout);
    for (int k = 0; k < t->nin + t->nout; k++) {
        Tensor *x = k < t->nin ? &t->in[k] : &t->out[k - t->nin];
        int same = x->dt == js[k].dt && x->ndim == js[k].ndim;
        for (int d = 0; same && d < x->ndim; d++) same = x->shape[d] == js[k].shape[d];
        if (!same) return fmt("%s: dtype or shape differs from what %s's params give", x->name, t->fam->name);
        if (k >= t->nin) continue;
        x->lo = js[k].lo;
        x->hi = js[k].hi;
        x->integer = js[k].integer;
        x->gen = js[k].gen;
    }
    if (!seed || seed->num < 0 || seed->num >= 0x1p64 || seed->num != floor(seed->num))
        return "spec without a \"seed\" (a whole number in [0, 2^64))";
    if (!atol || !rtol) return "spec without \"atol\" and \"rtol\"";
    if (!(atol->num >= 0 && rtol->num >= 0)) return "spec with a negative \"atol\" or \"rtol\"";
    t->seed = (uint64_t)seed->num;
    t->atol = atol->num;
    t->rtol = rtol->num;
    return task_problem(t);
}

// The task of WORKDIR/spec.json (dies when it cannot make one).
static void spec_load(const char *dir, Task *t) {
    const char *path = path_in(dir, "spec.json");
    size_t len;
    CusetJDoc spec;
    const char *why = NULL;
    char *text = read_or_die(path, &len);
    if (jparse_text(text, len, &spec, &why) == 0) {
        why = task_from_spec(&spec, 0, t);
        cuset_jdoc_free(&spec);
    }
    free(text);
    if (why) die("%s: %s", path, why);
}

// ----------------------------------------------------------------------------
// Test data

// The inputs of a spec: for input k a generator seeded with (seed, k + 1); floats are
// lo + (hi - lo) * u, u uniform in [0, 1) (53 bits), on a grid snapped down to lo + a
// multiple of grid (a share on_grid of them: one more draw each when below 1), rounded to
// float32 (or float16); integers lo + (draw mod (hi - lo + 1)); "perm" a Fisher-Yates
// shuffle of 0..count-1.
static void *make_input(const Tensor *x, uint64_t seed, int k) {
    long n = tensor_count(x);
    void *buf = malloc(tensor_bytes(x) + 1);
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
        if (draws_whole(x)) {
            long lo = (long)ceil(x->lo), hi = (long)floor(x->hi);
            v = (double)(lo + (long)(rng_next(&r) % (uint64_t)(hi - lo + 1)));
        } else {
            v = x->lo + (x->hi - x->lo) * rng_unit(&r);
            if (x->grid > 0 && (x->on_grid >= 1 || rng_unit(&r) < x->on_grid))
                v = x->lo + x->grid * floor((v - x->lo) / x->grid);
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
// Element i of a tensor's data as a double.
static double elem(const void *p, DType dt, long i) {
    switch (dt) {
    case DT_F32: return ((const float *)p)[i];
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_U32: return ((const uint32_t *)p)[i];
    case DT_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const uint8_t *)p)[i];
    }
}

// The expected outputs of the inputs in, written to DIR/NAME.expected.bin.
static void run_reference(const Task *t, void *const *in, const char *dir) {
    void *out[MAX_T];
    for (int k = 0; k < t->nout; k++) out[k] = calloc(tensor_bytes(&t->out[k]), 1);
    t->fam->ref(t, (const void *const *)in, out);
    for (int k = 0; k < t->nout; k++) {
        write_file(path_in(dir, fmt("%s.expected.bin", t->out[k].name)), out[k], tensor_bytes(&t->out[k]));
        free(out[k]);
    }
}

// Task t's files in WORKDIR: its inputs (NAME.bin), expected outputs (NAME.expected.bin)
// and spec.json, with the sample's id.
static void write_task(const Task *t, const char *id, const char *wdir) {
    void *in[MAX_T];
    for (int j = 0; j < t->nin; j++) {
        in[j] = make_input(&t->in[j], t->seed, j);
        write_file(path_in(wdir, fmt("%s.bin", t->in[j].name)), in[j], tensor_bytes(&t->in[j]));
    }
    run_reference(t, in, wdir);
    for (int j = 0; j < t->nin; j++) free(in[j]);
    Buf b = { 0 };
    json_spec(&b, t);
    b.len--; // reopen the object to add the sample id
    json_key_str(&b, ",", "id", id);
    buf_puts(&b, "}\n");
    write_file(path_in(wdir, "spec.json"), b.s, b.len);
    buf_free(&b);
}

// --materialize: line `index` of DIR/SPLIT.jsonl (0-based, blank lines not counted) into
// WORKDIR: its inputs, expected outputs, spec.json (with the sample's id) and reference.cu.
// An error dies (exit 2), as in --reference.
static void materialize(const char *cdir, const char *split, long index, const char *wdir) {
    const char *path = path_in(cdir, fmt("%s.jsonl", split));
    size_t len, llen = 0;
    char *text = read_or_die(path, &len), *line = NULL;
    long k = 0;
    for (size_t i = 0, j; i < len && !line; i = j + 1) {
        j = i + strcspn(text + i, "\n");
        if (j > i && k++ == index) line = text + i, llen = j - i;
    }
    if (!line) die("%s has %ld samples, no index %ld", path, k, index);
    CusetJDoc obj;
    Task t;
    const char *why = NULL;
    if (jparse_text(line, llen, &obj, &why) == 0) {
        int spec = cuset_jdoc_get(&obj, 0, "spec", -1);
        why = spec >= 0 ? task_from_spec(&obj, spec, &t) : "no \"spec\"";
    }
    if (why) die("%s:%ld: %s", path, index + 1, why);
    free(text);
    const char *completion = jstr(&obj, 0, "completion"), *id = jstr(&obj, 0, "id");
    if (!id) id = "";
    make_dir(wdir);
    write_task(&t, id, wdir);
    if (completion) write_file(path_in(wdir, "reference.cu"), completion, strlen(completion));
    fprintf(stderr, "%s %s:%ld (%s) -> %s: %d inputs, %d outputs\n", id, split, index, t.fam->name, wdir, t.nin,
            t.nout);
    cuset_jdoc_free(&obj);
}

// --reference: the expected outputs of WORKDIR's spec.json and inputs.
static void reference(const char *wdir) {
    Task t;
    void *in[MAX_T];
    spec_load(wdir, &t);
    for (int k = 0; k < t.nin; k++) {
        const char *path = path_in(wdir, fmt("%s.bin", t.in[k].name));
        size_t len;
        in[k] = read_or_die(path, &len);
        if (len != tensor_bytes(&t.in[k])) die("%s: %zu bytes, expected %zu", path, len, tensor_bytes(&t.in[k]));
    }
    run_reference(&t, in, wdir);
    for (int k = 0; k < t.nin; k++) free(in[k]);
}

// The values got of output x against the expected ones: prints the PASS/FAIL line (the worst
// element); 0 pass, 1 fail.
static int compare_values(const Tensor *x, const void *got, const void *expected, double atol, double rtol) {
    double worst_ratio = 0, worst_abs = 0;
    long worst_i = 0, nbad = 0;
    for (long i = 0; i < tensor_count(x); i++) {
        double a = elem(got, x->dt, i), e = elem(expected, x->dt, i), d = fabs(a - e), ratio;
        if (isnan(e) && isnan(a)) continue;
        if (isnan(a) || isnan(e) || ((isinf(a) || isinf(e)) && a != e)) ratio = INFINITY, d = INFINITY;
        else if (a == e) ratio = 0;
        else ratio = atol + rtol * fabs(e) > 0 ? d / (atol + rtol * fabs(e)) : INFINITY;
        if (ratio > 1) nbad++;
        if (ratio > worst_ratio || (ratio == worst_ratio && d > worst_abs)) {
            worst_ratio = ratio;
            worst_abs = d;
            worst_i = i;
        }
    }
    printf("%s %s: max_abs_err %.6g, %ld of %ld elements outside |err| <= %g + %g*|expected|; worst at %ld: "
           "got %.9g, expected %.9g\n", nbad ? "FAIL" : "PASS", x->name, worst_abs, nbad, tensor_count(x), atol, rtol,
           worst_i, elem(got, x->dt, worst_i), elem(expected, x->dt, worst_i));
    return nbad > 0;
}
// Output x of WORKDIR (NAME.bin) against NAME.expected.bin: 0 pass, 1 fail (a line on stdout
// says why); dies when the expected file is missing or has the wrong size.
static int compare_output(const char *wdir, const Tensor *x, double atol, double rtol) {
    const char *pg = path_in(wdir, fmt("%s.bin", x->name)),
               *pe = path_in(wdir, fmt("%s.expected.bin", x->name));
    size_t lg, le, want = tensor_bytes(x);
    char *ex = read_file(pe, &le), *g = NULL;
    int rc = 1;
    if (!ex) die("%s: %s", pe, strerror(errno));
    if (le != want) die("%s: %zu bytes, expected %zu (%ld x %s)", pe, le, want, tensor_count(x), dt_names[x->dt]);
    struct stat st; // the program's output: a regular file (not a link, a directory or a pipe that blocks the read)
    if (lstat(pg, &st) == 0 && !S_ISREG(st.st_mode))
        printf("FAIL %s: %s.bin is not a regular file\n", x->name, x->name);
    else if (!(g = read_file(pg, &lg))) printf("FAIL %s: %s.bin was not written\n", x->name, x->name);
    else if (lg != want)
        printf("FAIL %s: %s.bin has %zu bytes, expected %zu (%ld x %s)\n", x->name, x->name, lg, want,
               tensor_count(x), dt_names[x->dt]);
    else rc = compare_values(x, g, ex, atol, rtol);
    free(g);
    free(ex);
    return rc;
}

// --compare: every output of WORKDIR; exit 0 (all pass), 1 (a failure), 2 (bad files).
static int compare(const char *wdir) {
    Task t;
    int ok = 1;
    spec_load(wdir, &t);
    for (int k = 0; k < t.nout; k++)
        if (compare_output(wdir, &t.out[k], t.atol, t.rtol)) ok = 0;
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

// ----------------------------------------------------------------------------
// Command line

// The commands: --help asks for them (stdout, exit 0); a wrong command line gets them on
// stderr, exit 2.
static void usage(int asked) {
    fputs("usage:\n"
          "  corpus --out DIR [--seed S] [--train N] [--val N] [--test N] [--families A,B,..] [--style varied|plain]\n"
          "      writes DIR/train.jsonl, DIR/val.jsonl, DIR/test.jsonl (defaults 2000/200/200, seed 1);\n"
          "      --families keeps only the named families; --style plain writes every program in one\n"
          "      short style (I/O inline in main, no comments but a few in the kernels' own text,\n"
          "      one name per kernel and helper)\n"
          "      instead of drawing a style and names per task\n"
          "  corpus --materialize DIR --split train|val|test --index K --to WORKDIR\n"
          "      writes task K's inputs (NAME.bin), expected outputs (NAME.expected.bin), spec.json\n"
          "      and the reference program (reference.cu) into WORKDIR\n"
          "  corpus --compare WORKDIR\n"
          "      compares each output NAME.bin with NAME.expected.bin under spec.json's tolerance;\n"
          "      prints PASS/FAIL with the worst error; exit 0 (pass), 1 (fail), 2 (usage, bad files)\n"
          "  corpus --reference WORKDIR\n"
          "      computes NAME.expected.bin from spec.json and the NAME.bin inputs in WORKDIR\n"
          "  corpus --emit-family NAME [--seed S] [--style varied|plain] [--prompt]\n"
          "      prints one target program of the family (with --prompt, the prompt first, to stderr)\n"
          "  corpus --list\n"
          "      lists the families and their parameters\n"
          "  corpus --help\n"
          "      this text\n",
          asked ? stdout : stderr);
    exit(asked ? 0 : 2);
}

// Whether argument a is flag, a flag that takes a value: dies when a is the last argument.
static int is_flag_with_value(const char *a, const char *flag, int has_value) {
    if (strcmp(a, flag) != 0) return 0;
    if (!has_value) die("%s needs a value", flag);
    return 1;
}

// Whether list (words separated by spaces) holds word w.
static int has_word(const char *list, const char *w) {
    for (int k = 0; k < word_count(list); k++)
        if (strcmp(word(list, k), w) == 0) return 1;
    return 0;
}

static long parse_long(const char *s, const char *flag, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        die("%s: expected a whole number in [%ld, %ld], got '%s'", flag, lo, hi, s);
    return v;
}

// --list: the families, their parameters (combination marked) and float parameters.
static int list_families(void) {
    for (int k = 0; k < nfams; k++) {
        const Family *f = fams[k];
        printf("%-22s %s\n  params:", f->name, f->summary);
        for (int j = 0; f->ip[j].name; j++) printf(" %s%s", f->ip[j].name, f->ip[j].combo ? "*" : "");
        for (int j = 0; f->fp && f->fp[j]; j++) printf(" %s", f->fp[j]);
        printf("   (* = part of the held-out combination)\n");
    }
    return 0;
}

// --emit-family: one program of the family (with --prompt, its prompt first, to stderr).
static int emit_family(const char *name, uint64_t seed, int prompt) {
    const Family *f = family_by_name(name);
    if (!f) die("unknown family '%s' (--list lists them)", name);
    Rng r = rng_seeded(seed, hash_str(f->name, 77)); // styles differ between families for one seed
    Sample s = { 0 }; // sample_text sets up s.code
    task_draw(&s.t, f, &r);
    sample_text(&s);
    if (prompt) fprintf(stderr, "%s\n", s.prompt.s);
    fwrite(s.code.b.s, 1, s.code.b.len, stdout);
    buf_free(&s.prompt);
    em_free(&s.code);
    return 0;
}

int main(int argc, char **argv) {
    families_init();
    const char *out = NULL, *mat = NULL, *split = NULL, *to = NULL, *cmp = NULL, *ref = NULL, *emit = NULL;
    long index = -1;
    uint64_t seed = 1;
    int count[3] = { 2000, 200, 200 }, list = 0, prompt = 0;
    const struct { const char *flag, **value; } text_flags[] = {
        { "--out", &out }, { "--materialize", &mat }, { "--split", &split }, { "--to", &to },
        { "--compare", &cmp }, { "--reference", &ref }, { "--emit-family", &emit } };
    // The options that go with some commands only (commands below says which), and whether given.
    static const char *const options[] = { "--seed", "--train", "--val", "--test", "--families", "--style",
                                           "--prompt", "--split", "--index", "--to" };
    int given[NELEM(options)] = { 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        for (int k = 0; k < NELEM(options); k++)
            if (strcmp(a, options[k]) == 0) given[k] = 1;
        const char **dst = NULL; // the flags whose value is kept as it is
        for (int k = 0; k < NELEM(text_flags); k++)
            if (is_flag_with_value(a, text_flags[k].flag, has)) dst = text_flags[k].value;
        if (dst) *dst = argv[++i];
        else if (is_flag_with_value(a, "--seed", has)) {
            char *end;
            errno = 0;
            seed = strtoull(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || !isdigit((unsigned char)argv[i][0])) // (strtoull takes " -1")
                die("--seed: expected a whole number, got '%s'", argv[i]);
        } else if (is_flag_with_value(a, "--train", has)) count[0] = (int)parse_long(argv[++i], a, 0, 10000000);
        else if (is_flag_with_value(a, "--val", has)) count[1] = (int)parse_long(argv[++i], a, 0, 10000000);
        else if (is_flag_with_value(a, "--test", has)) count[2] = (int)parse_long(argv[++i], a, 0, 10000000);
        else if (is_flag_with_value(a, "--index", has)) index = parse_long(argv[++i], a, 0, 1000000000);
        else if (is_flag_with_value(a, "--families", has)) families_keep(argv[++i]);
        else if (is_flag_with_value(a, "--style", has)) {
            const char *v = argv[++i];
            if (strcmp(v, "plain") && strcmp(v, "varied")) die("--style: plain or varied, got '%s'", v);
            plain_style = strcmp(v, "plain") == 0;
        }
        else if (strcmp(a, "--list") == 0) list = 1;
        else if (strcmp(a, "--prompt") == 0) prompt = 1;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) usage(1);
        else die("unknown argument '%s' (--help lists the commands)", a);
    }
    // The one command given (cmd), and the options it takes.
    const struct { const char *flag; int given; const char *takes; } commands[] = {
        { "--out", out != NULL, "--seed --train --val --test --families --style" },
        { "--materialize", mat != NULL, "--split --index --to" },
        { "--compare", cmp != NULL, "" },
        { "--reference", ref != NULL, "" },
        { "--emit-family", emit != NULL, "--seed --style --prompt" },
        { "--list", list, "" } };
    int ncommands = 0, cmd = 0;
    for (int k = 0; k < NELEM(commands); k++) {
        ncommands += commands[k].given;
        if (commands[k].given) cmd = k;
    }
    if (ncommands == 0) usage(0);
    if (ncommands > 1)
        die("%d commands given; give one of --out, --materialize, --compare, --reference, --emit-family, --list",
            ncommands);
    for (int k = 0; k < NELEM(options); k++)
        if (given[k] && !has_word(commands[cmd].takes, options[k]))
            die("%s does not go with %s (--help lists each command's options)", options[k], commands[cmd].flag);
    if (list) return list_families();
    if (cmp) return compare(cmp);
    if (ref) { reference(ref); return 0; }
    if (emit) return emit_family(emit, seed, prompt);
    if (!mat) return generate(out, seed, count);
    if (!split || index < 0 || !to)
        die("--materialize needs %s (--help shows the command)", !split ? "--split" : index < 0 ? "--index" : "--to");
    if (strcmp(split, "train") && strcmp(split, "val") && strcmp(split, "test")) die("--split: train, val or test");
    materialize(mat, split, index, to);
    return 0;
}
