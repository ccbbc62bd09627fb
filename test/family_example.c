// family_example.c - the smallest complete family of the CUDA task corpus, the model for
// adding one (README, "Adding a family"). It is not part of the corpus: make test copies
// the generator, adds this file as data/families_example.c, builds it and checks the
// family's programs under the CPU emulator, so every step the README lists stays true.
//
// reverse: y[i] = x[n - 1 - i] for i < n (float32), one thread per element behind a
// guard or an early return, or a grid-stride loop. It reads top to bottom: parameters,
// names, spec, prompt, kernel template, launch, CPU reference, descriptor.

// The parameters, in spec.params order. n, block and loop form the held-out combination
// (combo 1); the kernel name and the Task Name's wording are style (combo 0), pinned to
// their first value by --style plain. params_draw draws each as its pick says.
enum { RV_N, RV_BLOCK, RV_LOOP, RV_KNAME, RV_TNAME, RV_NP };
static const ParamDesc rv_params[] = {
    [RV_N] = { "n", NULL, 1, "1000 4096 100000 1048576" },
    [RV_BLOCK] = { "block", NULL, 1, "128 256 512" },
    [RV_LOOP] = { "loop", loop_names, 1, "*" }, // if_guard, early_return, grid_stride
    [RV_KNAME] = { "kname", NULL, 0, "0..1" },
    [RV_TNAME] = { "tname", NULL, 0, "0..1" },
    [RV_NP] = { NULL } }; // the end of the table

// After params_draw: the names (and whatever depends on other parameters; nothing here).
static void rv_draw(Task *t, Rng *r) {
    (void)r;
    task_names(t, 1, "x y", t->p[RV_KNAME] ? "reverseKernel" : "reverse_array", "reverse");
}

// The spec, from the parameters alone (--materialize calls it again, on a zeroed Task):
// the size constant n, the input x (n floats in [-10, 10)), the output y; a copy, so exact.
static void rv_layout(Task *t) {
    int n = add_size(t, "n", t->p[RV_N]);
    t->nin = t->nout = 1;
    tshape(&t->in[0], DT_F32, 1, t->p[RV_N], 0, n, -1);
    trange(&t->in[0], -10, 10, 0);
    tshape(&t->out[0], DT_F32, 1, t->p[RV_N], 0, n, -1);
    t->atol = t->rtol = 0;
}

// The prompt's Task Name and Task Description (its Input, Output and GPU lines are generic).
static void rv_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, t->p[RV_TNAME] ? "Array_Reverse" : "Reverse_Array");
    buf_printf(desc, "Reverse an array of %d floats: y[i] = x[n - 1 - i] for every i in [0, %d).", t->p[RV_N],
               t->p[RV_N]);
}

// The kernel: the element loop of the drawn style (loop_frag) around one statement.
static const char rv_kernel_tpl[] = R"(
/// y[i] = x[n - 1 - i]: $how.
__global__ void $kname($params, $count) {
    $loop
}
)";
static void rv_kernels(const Task *t, Emit *e) {
    const char *i = IDX(t), *x = t->in[0].name, *y = t->out[0].name;
    TPL(e, t, rv_kernel_tpl, "kname", t->kname[0], "params", kernel_params(t), "count", count_param(t, "n"),
        "how", t->p[RV_LOOP] == LOOP_GRID ? "a grid-stride loop" : "one thread per element",
        "loop", loop_frag(t, t->p[RV_LOOP], "n", fmt("%s[%s] = %s[n - 1 - %s];", y, i, x, i)));
}

// The launch, in the host code's names: a 1-D grid over n, in the program's launch style.
static void rv_launch(const Task *t, Emit *e, const Host *h) {
    launch_1d(e, t, t->kname[0], h->size[0], t->p[RV_BLOCK], 0, kernel_args(h, 1));
}

// The expected outputs, on the CPU.
static void rv_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *y = out[0];
    long n = t->p[RV_N];
    for (long i = 0; i < n; i++) y[i] = x[n - 1 - i];
}

static const Family fam_reverse = {
    "reverse", "y[i] = x[n - 1 - i]: one thread per element or a grid-stride loop (test/family_example.c)",
    rv_params, NULL, rv_draw, rv_layout, rv_describe, rv_kernels, rv_launch, rv_ref };

static const Family *const families_example[] = { &fam_reverse, NULL };
