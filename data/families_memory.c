// families_memory.c - indexed memory access: gather (1-D and embedding rows), scatter
// (permutation, scatter-add and scatter-max with atomics) and histograms (global
// atomics, or privatised per block in shared memory). Included by corpus.c.

// The element loop (loop_frag) with an int index whatever the program's index type: for
// kernels whose count is an int (a product of sizes, or an "int n" parameter).
static const char *mem_int_loop(const Task *t, int loop, const char *n, const char *body) {
    Task ti = *t;
    ti.st.idxtype = 0;
    return loop_frag(&ti, loop, n, body);
}

// ----------------------------------------------------------------------------
// Gather

enum { G_OP, G_N, G_M, G_D, G_BLOCK, G_LOOP, G_KNAME, G_NAMES, G_CAP, G_TNAME, G_FN, G_NP };
enum { GL_IF, GL_RETURN, GL_GRID, GL_BLOCK_ROW, GL_GRID2D };
static const char *const gather_ops[] = { "gather1d", "gather_rows", NULL };
static const char *const gather_loops[] = { "if_guard", "early_return", "grid_stride", "block_per_row", "grid_2d",
                                            NULL };
static const ParamDesc gather_params[] = {
    [G_OP] = { "op", gather_ops, 1, "*" }, [G_N] = { "n", NULL, 1, NULL }, [G_M] = { "m", NULL, 1, NULL },
    [G_D] = { "d", NULL, 1, NULL }, [G_BLOCK] = { "block", NULL, 1, "128 256 512" },
    [G_LOOP] = { "loop", gather_loops, 1, NULL }, [G_KNAME] = { "kname", NULL, 0, "0..3" },
    [G_NAMES] = { "names", NULL, 0, "0..3" }, [G_CAP] = { "cap", NULL, 0, "1024 4096" },
    [G_TNAME] = { "tname", NULL, 0, "0..2" }, [G_FN] = { "fn", NULL, 0, "0..3" }, [G_NP] = { NULL } };
// The ops: tensor names (by names), kernel names (by kname), slug, Task Names (by tname) and
// the description (a template: $s the values, $ix the indices, $o the output, $n $m $d the sizes).
static const struct { const char *names[4], *kn[4], *slug, *tname[3], *desc; } gather_op[] = {
    { { "src idx out", "table indices gathered", "values ids result", "x positions y" },
      { "gather_kernel", "gatherKernel", "gather", "indexed_load" }, "gather",
      { "Gather", "Indexed_Gather", "Gather_By_Index" },
      "Gather values by index: $o[i] = $s[$ix[i]] for i in [0, $n). Every index in $ix lies in [0, $m)." },
    { { "table ids out", "embeddings tokens vectors", "weight indices rows_out", "emb idx result" },
      { "embedding_lookup", "gatherRows", "embedding_forward", "gather_rows" }, "embedding",
      { "Embedding_Lookup", "Gather_Rows", "Embedding_Gather" },
      "Embedding lookup: row r of $o is row $ix[r] of $s, a $m x $d table, for r in [0, $n). Indices lie in "
      "[0, $m); matrices are row-major." } };

// The sizes depend on the op: n indices into m values, or n rows of a vocab (m) x dim (d)
// table of at most 2,000,000 values (and at most 1,100,000 output values).
static void gather_draw(Task *t, Rng *r) {
    int rows = t->p[G_OP] == 1;
    if (!rows) {
        t->p[G_N] = rng_pick(r, "1000 4096 10000 65536 100000 262144 1000000");
        t->p[G_M] = rng_pick(r, "256 1000 4096 50000 100000");
        t->p[G_D] = 1;
        t->p[G_LOOP] = rng_int(r, 0, 2);
    } else {
        t->p[G_N] = rng_pick(r, "64 256 1000 4096");
        do {
            t->p[G_M] = rng_pick(r, "100 1000 5000 30000");
            t->p[G_D] = rng_pick(r, "16 32 64 100 128 256 300");
        } while ((long)t->p[G_M] * t->p[G_D] > 2000000 || (long)t->p[G_N] * t->p[G_D] > 1100000);
        t->p[G_LOOP] = rng_int(r, 0, 4);
    }
    if (t->p[G_LOOP] == GL_BLOCK_ROW && t->p[G_BLOCK] > 256) t->p[G_BLOCK] = 128;
    task_names(t, 2, gather_op[rows].names[t->p[G_NAMES]], gather_op[rows].kn[t->p[G_KNAME]], gather_op[rows].slug);
}

static void gather_layout(Task *t) {
    int rows = t->p[G_OP] == 1, dim = rows ? t->p[G_D] : 0;
    t->nin = 2;
    t->nout = 1;
    int n = add_size(t, "n", t->p[G_N]), m = add_size(t, rows ? "vocab" : "m", t->p[G_M]);
    int d = rows ? add_size(t, "dim", t->p[G_D]) : -1;
    tshape(&t->in[0], DT_F32, 1 + rows, t->p[G_M], dim, m, d);
    trange(&t->in[0], rows ? -1 : -100, rows ? 1 : 100, 0);
    tshape(&t->in[1], DT_I32, 1, t->p[G_N], 0, n, -1);
    trange(&t->in[1], 0, t->p[G_M] - 1, 1);
    tshape(&t->out[0], DT_F32, 1 + rows, t->p[G_N], dim, n, d);
    t->atol = t->rtol = 0;
}

// The op's description, then the kernel's shape where the embedding's loop prescribes one.
static void gather_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, gather_op[t->p[G_OP]].tname[t->p[G_TNAME]]);
    buf_put_line(desc, FRAG(gather_op[t->p[G_OP]].desc, "s", t->in[0].name, "ix", t->in[1].name, "o", t->out[0].name,
                            "n", fmt("%d", t->p[G_N]), "m", fmt("%d", t->p[G_M]), "d", fmt("%d", t->p[G_D])));
    if (t->p[G_LOOP] == GL_BLOCK_ROW) buf_puts(desc, " Use one thread block per output row.");
    if (t->p[G_LOOP] == GL_GRID2D) buf_puts(desc, " Use a 2-D grid: x over columns, y over rows.");
}

// One kernel: out[i] = src[idx[i]] in a 1-D loop, or the rows of an embedding table
// (flattened, one block per row, or a 2-D grid).
static const char gather_flat_tpl[] = R"(
const int row = $i / dim;
const int col = $i % dim;
$o[$i] = $s[$ix[row] * dim + col];
)";
static const char gather_block_row_tpl[] = R"(
const int row = blockIdx.x;
if (row >= n) return;
const float *from = $s + (size_t)$ix[row] * dim;
float *to = $o + (size_t)row * dim;
for (int c = threadIdx.x; c < dim; c += blockDim.x) {
    to[c] = from[c];
}
)";
static const char gather_grid2d_tpl[] = R"(
const int col = blockIdx.x * blockDim.x + threadIdx.x;
const int row = blockIdx.y * blockDim.y + threadIdx.y;
if (row < n && col < dim) {
    $o[(size_t)row * dim + col] = $s[(size_t)$ix[row] * dim + col];
}
)";

static void gather_kernels(const Task *t, Emit *e) {
    const char *s = t->in[0].name, *ix = t->in[1].name, *o = t->out[0].name, *i = IDX(t);
    int loop = t->p[G_LOOP], ldg = t->p[G_FN] & 1;
    if (t->p[G_OP] == 0) { // fn: the index in a local j or not, the load through __ldg or not
        int local = t->p[G_FN] >= 2;
        const char *j = local ? "j" : fmt("%s[%s]", ix, i);
        const char *load = !ldg ? fmt("%s[%s]", s, j) : local ? fmt("__ldg(&%s[j])", s) : fmt("__ldg(%s + %s)", s, j);
        const char *body = fmt("%s%s[%s] = %s;", local ? fmt("const int j = %s[%s];\n", ix, i) : "", o, i, load);
        const char *how = loop == GL_GRID ? "grid-stride loop" : "one thread per output";
        emit_kernel(e, t, "", "", fmt("%s[i] = %s[%s[i]]: %s.", o, s, ix, how), count_param(t, "n"),
                    loop_frag(t, loop, "n", body));
    } else { // rows: one block per row, a 2-D grid, or a 1-D loop over the flattened result
        const char *tpl = loop == GL_BLOCK_ROW ? gather_block_row_tpl : loop == GL_GRID2D ? gather_grid2d_tpl
                                                                                          : gather_flat_tpl;
        const char *comment = loop == GL_BLOCK_ROW ? "One block per output row; its threads copy the row's columns."
                              : loop == GL_GRID2D  ? "2-D grid: x covers the columns, y the rows."
                                                   : "One thread per output element of the n x dim result (flattened).";
        const char *body = FRAG(tpl, "i", i, "s", s, "ix", ix, "o", o);
        if (loop < GL_BLOCK_ROW) body = fmt("const int total = n * dim;\n%s", mem_int_loop(t, loop, "total", body));
        emit_kernel(e, t, "", "", comment, "int n, int dim", body);
    }
}

// The 2-D grid: blocks 32 wide, in a spelling of its own or launch_2d's first.
static const char gather_grid2d_launch[] = R"(
dim3 block(32, $by), grid(($dim + 31) / 32, ($n + $by1) / $by);
$k<<<grid, block>>>($args);
)";

static void gather_launch(const Task *t, Emit *e, const Host *h) {
    int loop = t->p[G_LOOP], b = t->p[G_BLOCK], cap = loop == GL_GRID ? t->p[G_CAP] : 0;
    const char *n = h->size[0], *dim = h->size[2], *args = fmt("%s, %s", kernel_args(h, 1), dim);
    if (t->p[G_OP] == 0) launch_1d(e, t, t->kname[0], n, b, cap, kernel_args(h, 1));
    else if (loop == GL_BLOCK_ROW)
        TPL(e, t, "const int threads = $b;\n$k<<<$n, threads>>>($args);", "b", fmt("%d", b), "k", t->kname[0], "n", n,
            "args", args);
    else if (loop == GL_GRID2D && t->st.cfg & 1)
        launch_2d(e, t, (Launch2D){ .dims = 0, .bx = "32", .by = fmt("%d", b / 32), .xc = dim, .yc = n, .args = args });
    else if (loop == GL_GRID2D)
        TPL(e, t, gather_grid2d_launch, "by", fmt("%d", b / 32), "by1", fmt("%d", b / 32 - 1), "dim", dim, "n", n,
            "k", t->kname[0], "args", args);
    else launch_1d(e, t, t->kname[0], fmt("%s * %s", n, dim), b, cap, args);
}

static void gather_ref(const Task *t, const void *const *in, void *const *out) {
    const float *s = in[0];
    const int *ix = in[1];
    float *o = out[0];
    long n = t->p[G_N], m = t->p[G_M], d = t->p[G_OP] ? t->p[G_D] : 1;
    for (long r = 0; r < n; r++) {
        long j = ix[r];
        for (long c = 0; c < d; c++) o[r * d + c] = j >= 0 && j < m ? s[j * d + c] : 0.0f;
    }
}

static const Family fam_gather = {
    "gather",
    "out[i] = src[idx[i]]; embedding rows (flat, block per row, 2-D grid)",
    gather_params, NULL, gather_draw, gather_layout, gather_describe, gather_kernels, gather_launch, gather_ref };

// ----------------------------------------------------------------------------
// Scatter

enum { SC_OP, SC_N, SC_M, SC_BLOCK, SC_LOOP, SC_KNAME, SC_NAMES, SC_CAP, SC_TNAME, SC_FN, SC_NP };
static const char *const scatter_ops[] = { "perm", "add_f32", "add_i32", "max_i32", NULL };
static const ParamDesc scatter_params[] = {
    [SC_OP] = { "op", scatter_ops, 1, "*" }, [SC_N] = { "n", NULL, 1, "1000 4096 10000 65536 100000 262144 1000000" },
    [SC_M] = { "m", NULL, 1, "16 100 1000 4096 65536" }, [SC_BLOCK] = { "block", NULL, 1, "128 256 512 1024" },
    [SC_LOOP] = { "loop", loop_names, 1, "*" }, [SC_KNAME] = { "kname", NULL, 0, "0..3" },
    [SC_NAMES] = { "names", NULL, 0, "0..3" }, [SC_CAP] = { "cap", NULL, 0, "1024 2048" },
    [SC_TNAME] = { "tname", NULL, 0, "0..2" }, [SC_FN] = { "fn", NULL, 0, "0..3" }, [SC_NP] = { NULL } };
static const char *const scatter_names[] = { "src idx out", "values targets acc", "x index_map y",
                                             "updates positions result" };
// The ops: kernel names (by kname), slug, Task Names (by tname), what a thread does (the
// kernel's comment), the range [-range, range] of the values (max_i32: at least [-n, n])
// and the description (a template: $s the values, $ix the indices, $o the output, $n the
// values' count, $m the output's).
#define SCATTER_ADD_DESC                                                                                    \
    "Scatter-add: $o starts at zero, then for every i in [0, $n), $s[i] is added to $o[$ix[i]]. Indices lie " \
    "in [0, $m) and repeat, so use atomic additions."
static const struct { const char *kn[4], *slug, *tname[3], *what; double range; const char *desc; } scatter_op[] = {
    { { "scatter_kernel", "scatterPerm", "permute_scatter", "scatter" }, "scatter",
      { "Scatter", "Permutation_Scatter", "Scatter_By_Index" }, "writes its element to the permuted position", 100,
      "Scatter: $o[$ix[i]] = $s[i] for i in [0, $n). $ix is a permutation of 0..$last, so every output is written "
      "once." },
    { { "scatter_add_kernel", "scatterAdd", "index_add", "scatter_add" }, "scatter_add",
      { "Scatter_Add", "Index_Add", "Atomic_Scatter_Add" }, "adds its value atomically", 8,
      SCATTER_ADD_DESC " The values are whole numbers, so the sums are exact." },
    { { "scatter_add_kernel", "scatterAddInt", "index_add_int", "scatter_add_i32" }, "scatter_add",
      { "Scatter_Add", "Index_Add", "Atomic_Scatter_Add" }, "adds its value atomically", 1000, SCATTER_ADD_DESC },
    { { "scatter_max_kernel", "scatterMax", "index_max", "scatter_max" }, "scatter_max",
      { "Scatter_Max", "Index_Max", "Atomic_Scatter_Max" }, "raises the target with atomicMax", 1000,
      "Scatter-max: $o starts at zero, then for every i in [0, $n), $o[$ix[i]] = max($o[$ix[i]], $s[i]). Indices "
      "lie in [0, $m) and repeat, so use atomicMax." } };

static void scatter_draw(Task *t, Rng *r) {
    (void)r;
    if (t->p[SC_OP] == 0) t->p[SC_M] = t->p[SC_N]; // a permutation
    task_names(t, 2, scatter_names[t->p[SC_NAMES]], scatter_op[t->p[SC_OP]].kn[t->p[SC_KNAME]],
               scatter_op[t->p[SC_OP]].slug);
}

static void scatter_layout(Task *t) {
    int op = t->p[SC_OP];
    t->nin = 2;
    t->nout = 1;
    int n = add_size(t, "n", t->p[SC_N]);
    int m = op == 0 ? n : add_size(t, "m", t->p[SC_M]);
    DType vt = op == 0 || op == 1 ? DT_F32 : DT_I32;
    tshape(&t->in[0], vt, 1, t->p[SC_N], 0, n, -1);
    // whole numbers where they are summed; maxima over [-n, n] at least, so that a bucket's
    // maximum is not reached early (1000 is, after 2000 draws: the rest of the input untested)
    double range = op == 3 && t->p[SC_N] > scatter_op[op].range ? t->p[SC_N] : scatter_op[op].range;
    trange(&t->in[0], -range, range, op != 0);
    tshape(&t->in[1], DT_I32, 1, t->p[SC_N], 0, n, -1);
    trange(&t->in[1], 0, t->p[SC_M] - 1, 1);
    if (op == 0) t->in[1].gen = GEN_PERM;
    tshape(&t->out[0], vt, 1, t->p[SC_M], 0, m, -1);
    t->out[0].zero_init = op != 0;
    t->atol = t->rtol = 0;
}

static void scatter_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, scatter_op[t->p[SC_OP]].tname[t->p[SC_TNAME]]);
    buf_put_line(desc, FRAG(scatter_op[t->p[SC_OP]].desc, "s", t->in[0].name, "ix", t->in[1].name, "o", t->out[0].name,
                            "n", fmt("%d", t->p[SC_N]), "m", fmt("%d", t->p[SC_M]), "last", fmt("%d", t->p[SC_N] - 1)));
}

static void scatter_kernels(const Task *t, Emit *e) {
    const char *s = t->in[0].name, *ix = t->in[1].name, *o = t->out[0].name, *i = IDX(t);
    int op = t->p[SC_OP];
    const char *target = t->p[SC_FN] & 1 ? fmt("%s + %s[%s]", o, ix, i) : fmt("&%s[%s[%s]]", o, ix, i);
    const char *body = op == 0 ? fmt("%s[%s[%s]] = %s[%s];", o, ix, i, s, i)
                               : fmt("%s(%s, %s[%s]);", op == 3 ? "atomicMax" : "atomicAdd", target, s, i);
    emit_kernel(e, t, "", "", fmt("Each thread %s.", scatter_op[op].what), count_param(t, "n"),
                loop_frag(t, t->p[SC_LOOP], "n", body));
}

static void scatter_launch(const Task *t, Emit *e, const Host *h) {
    launch_1d(e, t, t->kname[0], h->size[0], t->p[SC_BLOCK], t->p[SC_LOOP] == LOOP_GRID ? t->p[SC_CAP] : 0,
              kernel_args(h, 1));
}

// In double, every op is exact here: float values, and int sums far below 2^31 (values
// in [-1000, 1000], n <= 1,000,000).
static void scatter_ref(const Task *t, const void *const *in, void *const *out) {
    long n = t->p[SC_N], m = t->p[SC_M];
    int op = t->p[SC_OP], floats = op <= 1;
    const int *ix = in[1];
    double *acc = calloc((size_t)m, sizeof *acc); // outputs start at zero
    for (long i = 0; i < n; i++) {
        if (ix[i] < 0 || ix[i] >= m) continue;
        double x = floats ? ((const float *)in[0])[i] : ((const int *)in[0])[i], *o = &acc[ix[i]];
        *o = op == 0 ? x : op == 3 ? fmax(*o, x) : *o + x;
    }
    for (long j = 0; j < m; j++) {
        if (floats) ((float *)out[0])[j] = (float)acc[j];
        else ((int *)out[0])[j] = wrap_i32(acc[j]);
    }
    free(acc);
}

static const Family fam_scatter = {
    "scatter",
    "out[idx[i]] = x[i] (permutation); scatter-add / scatter-max with atomics",
    scatter_params, NULL, scatter_draw, scatter_layout, scatter_describe, scatter_kernels, scatter_launch,
    scatter_ref };

// ----------------------------------------------------------------------------
// Histogram

enum { H_OP, H_N, H_BINS, H_BLOCK, H_VARIANT, H_LOOP, H_SHMEM, H_CTYPE, H_KNAME, H_NAMES, H_CAP, H_TNAME, H_NP };
static const char *const hist_ops[] = { "int_values", "uint8_pixels", "float_unit", NULL };
static const char *const hist_variants[] = { "global_atomics", "shared_private", NULL };
static const char *const hist_loops[] = { "one_per_thread", "grid_stride", NULL };
static const char *const hist_shmem[] = { "define", "template", "dynamic", NULL };
static const char *const hist_ctypes[] = { "uint32", "int32", NULL };
static const ParamDesc hist_params[] = {
    [H_OP] = { "op", hist_ops, 1, "*" }, [H_N] = { "n", NULL, 1, "4096 10000 65536 100000 262144 1000000 1048576" },
    [H_BINS] = { "bins", NULL, 1, "16 32 64 100 128 256 1000 1024" }, [H_BLOCK] = { "block", NULL, 1, "128 256 512" },
    [H_VARIANT] = { "variant", hist_variants, 1, "*" }, [H_LOOP] = { "loop", hist_loops, 1, "*" },
    [H_SHMEM] = { "shmem", hist_shmem, 0, "*" }, [H_CTYPE] = { "count_type", hist_ctypes, 0, "0 0 0 0 0 0 0 1 1 1" },
    [H_KNAME] = { "kname", NULL, 0, "0..3" }, [H_NAMES] = { "names", NULL, 0, "0..3" },
    [H_CAP] = { "cap", NULL, 0, "256 1024" }, [H_TNAME] = { "tname", NULL, 0, "0..2" }, [H_NP] = { NULL } };
static const char *const hist_names[] = { "data hist", "values counts", "samples histogram", "keys freq" };
static const char *const hist_pix_names[] = { "pixels hist", "image histogram", "img counts", "gray bins_out" };
// The ops: Task Names (by tname), the description (a template: $x the input, $y the output,
// $bins the bins, $last the last bin) and the input's type.
static const struct { const char *tname[3], *desc; DType dt; } hist_op[] = {
    { { "Histogram", "Integer_Histogram", "Value_Counts" },
      "Count how many elements of $x take each value: $y[b] = number of i with $x[i] == b, for $bins bins. "
      "Every value lies in [0, $bins).", DT_I32 },
    { { "Image_Histogram", "Grayscale_Histogram", "Pixel_Histogram" },
      "$x is an 8-bit grayscale image. Compute its 256-bin histogram: $y[v] = the number of pixels equal to v.",
      DT_U8 },
    { { "Float_Histogram", "Uniform_Bin_Histogram", "Binned_Counts" },
      "Histogram of values in [0, 1) with $bins equal bins: element x goes to bin (int)(x * $bins) computed in "
      "float32, clamped to $last; $y[b] counts the elements of $x in bin b.", DT_F32 } };
static const char *const hist_kn[][4] = {
    { "histogram_kernel", "histogramGlobal", "hist_atomic", "count_values" },
    { "histogram_shared", "histogramShared", "hist_privatized", "block_histogram" } };

static void hist_draw(Task *t, Rng *r) {
    (void)r;
    if (t->p[H_OP] == 1) t->p[H_BINS] = 256; // uint8 pixels
    task_names(t, 1, (t->p[H_OP] == 1 ? hist_pix_names : hist_names)[t->p[H_NAMES]],
               hist_kn[t->p[H_VARIANT]][t->p[H_KNAME]], "histogram");
}

static void hist_layout(Task *t) {
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[H_N]), b = add_size(t, "bins", t->p[H_BINS]);
    tshape(&t->in[0], hist_op[t->p[H_OP]].dt, 1, t->p[H_N], 0, n, -1);
    trange(&t->in[0], 0, t->p[H_OP] == 2 ? 1 : t->p[H_BINS] - 1, t->p[H_OP] != 2); // floats in [0, 1), or bins
    tshape(&t->out[0], t->p[H_CTYPE] ? DT_I32 : DT_U32, 1, t->p[H_BINS], 0, b, -1);
    t->out[0].zero_init = 1;
    t->atol = t->rtol = 0;
}

static void hist_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, hist_op[t->p[H_OP]].tname[t->p[H_TNAME]]);
    buf_put_line(desc, FRAG(hist_op[t->p[H_OP]].desc, "x", t->in[0].name, "y", t->out[0].name,
                            "bins", fmt("%d", t->p[H_BINS]), "last", fmt("%d", t->p[H_BINS] - 1)));
    buf_puts(desc, t->p[H_VARIANT] == 1 ? " Privatise the histogram per thread block in shared memory, then merge it "
                                          "into the output with atomics."
                                        : " Use atomicAdd on the output counts.");
}

// Global atomics on the output, or a private histogram per block in shared memory merged into
// the output at the end (the body below).
static const char hist_shared_tpl[] = R"(
$local_hist
//? zero the block's private copy
for (int b = threadIdx.x; b < $nb; b += blockDim.x) local_hist[b] = 0;
__syncthreads();
$loop
__syncthreads();
//? merge into the global histogram
for (int b = threadIdx.x; b < $nb; b += blockDim.x) {
    if (local_hist[b] != 0) atomicAdd(&$o[b], local_hist[b]);
}
)";

static void hist_kernels(const Task *t, Emit *e) {
    const char *x = t->in[0].name, *o = t->out[0].name, *i = IDX(t);
    const char *ct = dt_ctypes[t->out[0].dt], *one = t->p[H_CTYPE] ? "1" : "1u";
    int loop = t->p[H_LOOP] == 1 ? LOOP_GRID : LOOP_IF, shared = t->p[H_VARIANT] == 1, sh = t->p[H_SHMEM];
    const char *nb = !shared ? "bins" : pick3(sh, "NUM_BINS", "NBINS", "bins"), *hist = shared ? "local_hist" : o;
    const char *v = fmt("%s[%s]", x, i);
    const char *bin = t->p[H_OP] == 2   ? fmt("min((int)(%s * %s), %s - 1)", v, nb, nb)
                      : t->p[H_OP] == 1 ? fmt("(int)%s", v)
                                        : v;
    const char *body = t->p[H_OP] == 0 ? fmt("atomicAdd(&%s[%s], %s);", hist, v, one)
                                       : fmt("const int b = %s;\natomicAdd(&%s[b], %s);", bin, hist, one);
    const char *lp = mem_int_loop(t, loop, "n", body);
    if (!shared) {
        emit_kernel(e, t, "", "", "Every element increments its bin in global memory with atomicAdd.",
                    "int n, int bins", lp);
        return;
    }
    const char *local_hist =
        sh == 2 ? fmt("extern __shared__ %s local_hist[];", ct) : fmt("__shared__ %s local_hist[%s];", ct, nb);
    const char *define = sh == 0 ? fmt("#define NUM_BINS %d\n\n", t->p[H_BINS]) : "";
    emit_kernel(e, t, define, sh == 1 ? "template <int NBINS>" : "",
                "Each block builds a private histogram in shared memory, then adds it to the global one.",
                sh == 1 ? "int n" : "int n, int bins",
                FRAG(hist_shared_tpl, "local_hist", local_hist, "nb", nb, "loop", lp, "o", o));
}

static const char hist_dynamic_launch[] = R"(
const int threads = $block;
const int blocks = $blocks;
const size_t shmem = $bins * sizeof($ct);
$k<<<blocks, threads, shmem>>>($args);
)";

static void hist_launch(const Task *t, Emit *e, const Host *h) {
    int shared = t->p[H_VARIANT] == 1, grid = t->p[H_LOOP] == 1;
    // the bins as a template argument, or the shared memory's size given at the launch
    int tmpl = shared && t->p[H_SHMEM] == 1, dynamic = shared && t->p[H_SHMEM] == 2;
    const char *args = kernel_args(h, tmpl ? 1 : 2); // a template kernel knows its bins
    const char *kname = tmpl ? fmt("%s<%d>", t->kname[0], t->p[H_BINS]) : t->kname[0];
    if (!dynamic) launch_1d(e, t, kname, h->size[0], t->p[H_BLOCK], grid ? t->p[H_CAP] : 0, args);
    else TPL(e, t, hist_dynamic_launch, "block", fmt("%d", t->p[H_BLOCK]), "bins", h->size[1], "k", kname, "args", args,
             "blocks", grid ? fmt("%d", t->p[H_CAP]) : fmt("(%s + threads - 1) / threads", h->size[0]),
             "ct", dt_ctypes[t->out[0].dt]);
}

static void hist_ref(const Task *t, const void *const *in, void *const *out) {
    long n = t->p[H_N], bins = t->p[H_BINS];
    unsigned *o = out[0]; // int32 and uint32 counts have the same bits here
    for (long b = 0; b < bins; b++) o[b] = 0;
    for (long i = 0; i < n; i++) {
        long b;
        if (t->p[H_OP] == 0) b = ((const int *)in[0])[i];
        else if (t->p[H_OP] == 1) b = ((const unsigned char *)in[0])[i];
        else {
            volatile float p = ((const float *)in[0])[i] * (float)bins;
            b = cvt_i32(p);
            if (b > bins - 1) b = bins - 1;
        }
        if (b >= 0 && b < bins) o[b]++;
    }
}

static const Family fam_histogram = {
    "histogram",
    "counts per bin with atomicAdd: global atomics or shared-memory privatised; int, uint8 or float input",
    hist_params, NULL, hist_draw, hist_layout, hist_describe, hist_kernels, hist_launch, hist_ref };

static const Family *const families_memory[] = { &fam_gather, &fam_scatter, &fam_histogram, NULL };
