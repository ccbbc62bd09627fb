// families_reduce.c - reductions: a shared-memory tree reduction per block (finished by
// a second pass over the block partials or by atomics), and warp-shuffle reductions
// (__shfl_down_sync / __shfl_xor_sync) over a whole array or one warp per matrix row, and
// a dot product finished with atomicAdd. Included by corpus.c, after families_rows.c.

#define RED_SIZES "1000 4096 65536 100000 262144 1000000 1048576"

// nin arrays of n values in [-1, 1) reduced to one value (accumulated by atomics where
// zero_init), compared exactly. For a sum the values lie on a grid of step 2^-k (RED_GRID,
// coarser for squares and products, whose terms need twice the bits), so that every
// partial sum in any order of additions is a float: all orders give the exact sum, and one
// value left out shows (with floats drawn freely, the tolerance a long float sum needs
// let a program pass that dropped the last partial block). step 0: no grid (max |x|).
#define RED_GRID (1.0 / 64)
static void red_layout(Task *t, int nin, long n, int zero_init, double step) {
    vectors_1d(t, "n", n, nin, -1, 1);
    for (int k = 0; k < nin && step > 0; k++) tgrid(&t->in[k], step, 1);
    tshape(&t->out[0], DT_F32, 1, 1, 0, -1, -1); // one value
    t->out[0].zero_init = zero_init;
    t->atol = t->rtol = 0;
}

// The grid of a launch over n elements, `threads` threads a block: grid_1d's (cap: at most
// that many blocks, for grid-stride kernels), or with two elements a thread half as many blocks.
static const char red_grid2_tpl[] = R"(
const int threads = $threads;
const int blocks = ($n + 2 * threads - 1) / (2 * threads);
)";
static const char *red_grid(const char *threads, const char *n, int two_per_thread, int cap) {
    return two_per_thread ? FRAG(red_grid2_tpl, "threads", threads, "n", n) : grid_1d(threads, n, cap);
}

// ----------------------------------------------------------------------------
// reduce_block: a tree in shared memory per block, then a second pass or atomics

enum { RB_OP, RB_N, RB_BLOCK, RB_FINISH, RB_LOAD, RB_SHMEM, RB_KNAME, RB_NAMES, RB_TNAME, RB_CAP, RB_NP };
static const char *const rb_ops[] = { "sum", "sumsq", "absmax", NULL };
enum { RB_SUM, RB_SUMSQ, RB_ABSMAX };
static const char *const rb_finish[] = { "two_pass", "atomic", NULL };
enum { RB_TWO_PASS, RB_ATOMIC };
static const char *const rb_loads[] = { "one_per_thread", "two_per_thread", "grid_stride", NULL };
enum { RB_ONE_PER_THREAD, RB_TWO_PER_THREAD, RB_GRID_STRIDE };
static const ParamDesc rb_params[] = {
    [RB_OP] = { "op", rb_ops, 1, "*" }, [RB_N] = { "n", NULL, 1, RED_SIZES },
    [RB_BLOCK] = { "block", NULL, 1, "128 256 512 1024" }, [RB_FINISH] = { "finish", rb_finish, 1, "*" },
    [RB_LOAD] = { "load", rb_loads, 1, "*" }, [RB_SHMEM] = { "shmem", ro_shmems, 0, "*" },
    [RB_KNAME] = { "kname", NULL, 0, "0..3" }, [RB_NAMES] = { "names", NULL, 0, "0..3" },
    [RB_TNAME] = { "tname", NULL, 0, "0..2" }, [RB_CAP] = { "cap", NULL, 0, "128 256 1024" }, [RB_NP] = { NULL } };

// The operations, by op: kernel names (by kname), Task Names (by tname), the prompt's formula.
static const struct { const char *kn, *tname, *what; } rb_op[] = {
    { "reduce_sum blockReduceSum sum_kernel reduce_block", "Sum_Reduction Array_Sum Parallel_Reduction_Sum",
      "the sum of all %d elements of %s" },
    { "reduce_sumsq sumOfSquares sumsq_kernel reduce_squares", "Sum_Of_Squares Squared_Norm Sum_Squares_Reduction",
      "the sum of the squares of all %d elements of %s" },
    { "reduce_absmax absMaxKernel absmax_kernel reduce_max_abs", "Max_Abs_Reduction Absolute_Maximum Infinity_Norm",
      "the largest absolute value among the %d elements of %s" } };
static const char *const rb_names[] = { "x %s", "input total", "values result", "data out" }; // %s: rb_ops
static const char *const rb_pass2_names[] = { "reduce_final", "finalReduce", "reduce_partials", "finish_reduction" };

static void rb_draw(Task *t, Rng *r) {
    (void)r;
    int k = t->p[RB_KNAME];
    task_names(t, 1, fmt(rb_names[t->p[RB_NAMES]], rb_ops[t->p[RB_OP]]),
               fmt("%s %s", word(rb_op[t->p[RB_OP]].kn, k), rb_pass2_names[k]), rb_ops[t->p[RB_OP]]);
}

// Squares of values on a grid of 1/4 are multiples of 1/16: sums up to 2^20 (n <= 2^20 squares) stay floats.
static void rb_layout(Task *t) {
    int op = t->p[RB_OP];
    red_layout(t, 1, t->p[RB_N], t->p[RB_FINISH] == RB_ATOMIC, op == RB_ABSMAX ? 0 : op == RB_SUMSQ ? 0.25 : RED_GRID);
}

static void rb_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const finish[] = { "; a second kernel launch reduces the per-block partial results.",
                                          "; block results are combined with atomicAdd.",
                                          "; block results are combined with atomicMax on the float bits (valid "
                                          "because they are non-negative)." };
    buf_puts(name, word(rb_op[t->p[RB_OP]].tname, t->p[RB_TNAME]));
    buf_printf(desc, "Compute %s[0] = %s. Each block reduces its part in shared memory with a tree of __syncthreads() "
               "steps%s", t->out[0].name, fmt(rb_op[t->p[RB_OP]].what, t->p[RB_N], t->in[0].name),
               finish[t->p[RB_FINISH] == RB_TWO_PASS ? 0 : t->p[RB_OP] == RB_ABSMAX ? 2 : 1]);
}

// A block's reduction in sdata: the kernel (pass 1), and with two_pass the same kernel shape
// again for pass 2, where one block reduces the partials. load: how the values reach sdata.
static const char rb_kernel[] = R"(
$define
/// $comment
$template
__global__ void $kname($params, int $n) {
    $sdata
    const unsigned int tid = threadIdx.x;
    $load
    __syncthreads();
    //? tree reduction: halve the active threads each step
    for (unsigned int s = $B / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = $tree_combine;
        __syncthreads();
    }
    $finish
}
)";
// By load, then the load of pass 2.
static const char *const rb_load[] = { R"(
const unsigned int i = blockIdx.x * blockDim.x + tid;
sdata[tid] = i < n ? $f_i : 0.0f;
)", R"(
//? each thread starts with two elements, one block width apart
const unsigned int i = blockIdx.x * (blockDim.x * 2) + tid;
float v = 0.0f;
if (i < n) v = $f_i;
if (i + blockDim.x < n) v = $combine_next;
sdata[tid] = v;
)", R"(
//? grid-stride accumulation first
float v = 0.0f;
for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) {
    v = $combine_i;
}
sdata[tid] = v;
)", R"(
float v = 0.0f;
for (int i = tid; i < count; i += blockDim.x) v = $combine_i;
sdata[tid] = v;
)" };

// The value an element contributes, and how two values combine.
static const char *rb_f(const Task *t, const char *v) {
    return pick3(t->p[RB_OP], v, fmt("%s * %s", v, v), fmt("fabsf(%s)", v));
}
static const char *rb_comb(const Task *t, const char *a, const char *b) {
    return t->p[RB_OP] == RB_ABSMAX ? fmt("fmaxf(%s, %s)", a, b) : fmt("%s + %s", a, b);
}
// With a grid-stride load, the pass-1 kernel of sum or absmax serves as pass 2 too (that of
// sumsq would square the partials).
static int rb_self_pass2(const Task *t) { return t->p[RB_LOAD] == RB_GRID_STRIDE && t->p[RB_OP] != RB_SUMSQ; }

static void rb_kernels(const Task *t, Emit *e) {
    int sh = t->p[RB_SHMEM], two_pass = t->p[RB_FINISH] == RB_TWO_PASS, op = t->p[RB_OP];
    const char *B = pick3(sh, "BLOCK_SIZE", "BLOCK", "blockDim.x"), *x = t->in[0].name, *o = t->out[0].name;
    const char *tmpl = sh == RO_TEMPLATE ? "template <int BLOCK>" : "", *xi = fmt("%s[i]", x);
    const char *sdata = sh == RO_DYNAMIC ? "extern __shared__ float sdata[];" : fmt("__shared__ float sdata[%s];", B);
    const char *finish = two_pass ? "partial[blockIdx.x] = sdata[0];"
                         : op == RB_ABSMAX ? fmt("atomicMax((int *)%s, __float_as_int(sdata[0]));", o)
                                           : fmt("atomicAdd(%s, sdata[0]);", o);
    const char *comment =
        two_pass ? "Pass 1: each block reduces its elements and writes one partial result."
                 : "Each block reduces its elements in shared memory; thread 0 adds the block's result to the output.";
    const char *load = FRAG(rb_load[t->p[RB_LOAD]], "f_i", rb_f(t, xi), "combine_i", rb_comb(t, "v", rb_f(t, xi)),
                            "combine_next", rb_comb(t, "v", rb_f(t, fmt("%s[i + blockDim.x]", x))));
    TPL(e, t, rb_kernel, "define", sh == RO_DEFINE ? fmt("#define BLOCK_SIZE %d\n\n", t->p[RB_BLOCK]) : "",
        "comment", comment, "template", tmpl, "kname", t->kname[0], "n", "n", "sdata", sdata, "B", B,
        "params", fmt("%s, %s", ptr_param(t, "float", x, 1), ptr_param(t, "float", two_pass ? "partial" : o, 0)),
        "load", load, "tree_combine", rb_comb(t, "sdata[tid]", "sdata[tid + s]"),
        "finish", FRAG("if (tid == 0) {\n    $finish\n}", "finish", finish));
    if (!two_pass || rb_self_pass2(t)) return;
    em_blank(e);
    TPL(e, t, rb_kernel, "define", "", "comment", "Pass 2: one block reduces the per-block partial results.",
        "template", tmpl, "kname", t->kname[1], "n", "count", "sdata", sdata, "B", B,
        "params", fmt("%s, %s", ptr_param(t, "float", "partial", 1), ptr_param(t, "float", o, 0)),
        "load", FRAG(rb_load[3], "combine_i", rb_comb(t, "v", "partial[i]")),
        "tree_combine", rb_comb(t, "sdata[tid]", "sdata[tid + s]"),
        "finish", fmt("if (tid == 0) %s[0] = sdata[0];", o));
}

// The launch: blocks by load (two elements a thread, or a capped grid-stride grid), pass 1,
// and with two_pass pass 2 over the partials in a scratch buffer.
static const char rb_launch_tpl[] = R"(
$grid
$alloc
$k1<<<blocks$smem>>>($in, $out1, $n);
$pass2
)";
static const char rb_pass2_launch[] = R"(
$k2<<<1$smem>>>($partial, $out, blocks);
$free
)";

static void rb_launch(const Task *t, Emit *e, const Host *h) {
    int sh = t->p[RB_SHMEM], B = t->p[RB_BLOCK], load = t->p[RB_LOAD], two_pass = t->p[RB_FINISH] == RB_TWO_PASS;
    const char *inst = sh == RO_TEMPLATE ? fmt("<%d>", B) : ""; // templates: the instance for this block size
    const char *k1 = fmt("%s%s", t->kname[0], inst), *k2 = rb_self_pass2(t) ? k1 : fmt("%s%s", t->kname[1], inst);
    const char *pn = dname(t, "partial"), *smem = sh == RO_DYNAMIC ? ", threads, threads * sizeof(float)" : ", threads";
    const char *pass2 = !two_pass ? ""
                                  : FRAG(rb_pass2_launch, "k2", k2, "smem", smem, "partial", pn, "out", h->out[0],
                                         "free", sync_free(t, pn, NULL));
    const char *threads = sh == RO_DEFINE ? "BLOCK_SIZE" : fmt("%d", B), *n = h->size[0];
    const char *grid = red_grid(threads, n, load == RB_TWO_PER_THREAD, load == RB_GRID_STRIDE ? t->p[RB_CAP] : 0);
    TPL(e, t, rb_launch_tpl, "grid", grid, "alloc", two_pass ? dev_alloc(t, "float", pn, "blocks") : "", "k1", k1,
        "smem", smem, "in", h->in[0], "out1", two_pass ? pn : h->out[0], "n", n, "pass2", pass2);
}

static void rb_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    double acc = 0;
    for (long i = 0; i < t->p[RB_N]; i++) {
        double v = t->p[RB_OP] == RB_SUM ? x[i] : t->p[RB_OP] == RB_SUMSQ ? (double)x[i] * x[i] : fabs(x[i]);
        acc = t->p[RB_OP] == RB_ABSMAX ? fmax(acc, v) : acc + v;
    }
    ((float *)out[0])[0] = (float)acc;
}

static const Family fam_reduce_block = {
    "reduce_block",
    "sum / sum of squares / max |x| with a shared-memory tree and __syncthreads; second pass or atomics",
    rb_params, NULL, rb_draw, rb_layout, rb_describe, rb_kernels, rb_launch, rb_ref };

// ----------------------------------------------------------------------------
// reduce_warp: warp-shuffle reductions of a whole array or of each row (one warp per row)

enum { RW_OP, RW_N, RW_ROWS, RW_COLS, RW_BLOCK, RW_SHFL, RW_HELPER, RW_MASK, RW_KNAME, RW_NAMES, RW_TNAME, RW_CAP, RW_NP
       };
static const char *const rw_ops[] = { "total_sum", "block_sum", "row_sum", "row_max", "row_norm", NULL };
enum { RW_TOTAL_SUM, RW_BLOCK_SUM, RW_ROW_SUM, RW_ROW_MAX, RW_ROW_NORM };
static const char *const rw_shfl[] = { "down", "xor", NULL };
static const ParamDesc rw_params[] = {
    [RW_OP] = { "op", rw_ops, 1, "*" }, [RW_N] = { "n", NULL, 1, RED_SIZES }, [RW_ROWS] = { "rows", NULL, 1, NULL },
    [RW_COLS] = { "cols", NULL, 1, NULL }, [RW_BLOCK] = { "block", NULL, 1, NULL },
    [RW_SHFL] = { "shfl", rw_shfl, 1, "*" }, [RW_HELPER] = { "helper", NULL, 0, "0..2" },
    [RW_MASK] = { "mask", NULL, 0, "0..2" }, [RW_KNAME] = { "kname", NULL, 0, "0..3" },
    [RW_NAMES] = { "names", NULL, 0, "0..3" }, [RW_TNAME] = { "tname", NULL, 0, "0..2" },
    [RW_CAP] = { "cap", NULL, 0, "256 1024 2048" }, [RW_NP] = { NULL } };

// The operations, by op: kernel names (by kname), Task Names (by tname), and the prompt's
// formula: for the whole-array sums how the warps' sums are combined (%s: the output), for
// the row operations the value of row r.
static const struct { const char *kn, *tname, *what; } rw_op[] = {
    { "warp_sum_kernel warpReduceSumKernel sum_shfl reduce_warp",
      "Warp_Shuffle_Sum Sum_With_Warp_Shuffles Shuffle_Reduction",
      "; lane 0 of each warp adds its warp's sum to %s[0] with atomicAdd." },
    { "block_sum_kernel blockSumWarps sum_two_level reduce_block_warps",
      "Two_Level_Warp_Sum Block_Sum_Warp_Shuffle Hierarchical_Sum",
      ", combine the warp sums of a block through shared memory with a second warp-level step, then atomicAdd the "
      "block sum." },
    { "row_sum_kernel rowSumWarp row_sums sum_rows", "Row_Sum Matrix_Row_Sums Row_Wise_Sum", "the sum of row r" },
    { "row_max_kernel rowMaxWarp row_max max_rows", "Row_Max Matrix_Row_Maximum Row_Wise_Max", "the maximum of row r" },
    { "row_norm_kernel rowNormWarp row_l2_norm norm_rows", "Row_L2_Norm Matrix_Row_Norms Row_Wise_Euclidean_Norm",
      "sqrt(sum of squares of row r)" } };
static const char *const rw_names[] = { "x out", "input result", "values %s", "data reduced" }; // %s: sums, ...
static const char *const rw_helper_names[] = { "warp_reduce", "warpReduce", "warp_allreduce", "shfl_reduce" };

static int rw_is_row(const Task *t) { return t->p[RW_OP] >= RW_ROW_SUM; }

// Row operations: rows x cols (at most 2.1 M values) and 1-8 warps a block; whole-array sums: n.
static void rw_draw(Task *t, Rng *r) {
    if (rw_is_row(t)) {
        t->p[RW_N] = 0;
        do {
            t->p[RW_ROWS] = rng_pick(r, "128 1000 4096 10000");
            t->p[RW_COLS] = rng_pick(r, "32 100 256 1000 1024 4096");
        } while ((long)t->p[RW_ROWS] * t->p[RW_COLS] > 2100000);
    }
    t->p[RW_BLOCK] = rng_pick(r, rw_is_row(t) ? "32 64 128 256" : "128 256 512 1024");
    int op = t->p[RW_OP], k = t->p[RW_KNAME], camel = k == 1;
    const char *values = op == RW_ROW_MAX ? "maxima" : op == RW_ROW_NORM ? "norms" : "sums";
    const char *suffix = op == RW_ROW_MAX ? (camel ? "Max" : "_max") : (camel ? "Sum" : "_sum"); // the helper's
    task_names(t, 1, fmt(rw_names[t->p[RW_NAMES]], values),
               fmt("%s %s%s", word(rw_op[op].kn, k), rw_helper_names[k], suffix), rw_ops[op]);
}

static void rw_layout(Task *t) {
    int op = t->p[RW_OP];
    t->need_math = op == RW_ROW_NORM;
    if (!rw_is_row(t)) {
        red_layout(t, 1, t->p[RW_N], 1, RED_GRID);
        return;
    }
    t->nin = t->nout = 1;
    trange(&t->in[0], -1, 1, 0);
    if (op == RW_ROW_SUM) tgrid(&t->in[0], RED_GRID, 1); // exact, as red_layout's sums
    int rr = add_size(t, "rows", t->p[RW_ROWS]), cc = add_size(t, "cols", t->p[RW_COLS]);
    tshape(&t->in[0], DT_F32, 2, t->p[RW_ROWS], t->p[RW_COLS], rr, cc);
    tshape(&t->out[0], DT_F32, 1, t->p[RW_ROWS], 0, rr, -1);
    t->atol = op == RW_ROW_NORM ? 1e-6 : 0;
    t->rtol = op == RW_ROW_NORM ? 1e-5 : 0;
}

static void rw_describe(const Task *t, Buf *name, Buf *desc) {
    const char *x = t->in[0].name, *o = t->out[0].name, *sh = t->p[RW_SHFL] ? "__shfl_xor_sync" : "__shfl_down_sync";
    buf_puts(name, word(rw_op[t->p[RW_OP]].tname, t->p[RW_TNAME]));
    if (rw_is_row(t)) {
        buf_printf(desc, "%s is %s x %d row-major matrix. Compute %s[r] = %s, one warp per row, reducing across "
                   "lanes with %s.", x, a_num(t->p[RW_ROWS]), t->p[RW_COLS], o, rw_op[t->p[RW_OP]].what, sh);
        return;
    }
    buf_printf(desc, "Compute %s[0] = the sum of the %d elements of %s. Reduce within each warp with %s", o,
               t->p[RW_N], x, sh);
    buf_printf(desc, rw_op[t->p[RW_OP]].what, o);
}

// The optional helper holding the shuffle loop (ro_shfl_loop_tpl, offsets 16, 8, 4, 2, 1);
// the kernels' bodies (one warp per row, or the whole array).
static const char rw_helper[] = R"(
/// $comment
$spec $helper(float v) {
    $shuffle
    return v;
}

)";
static const char rw_row_body[] = R"(
const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
const int lane = threadIdx.x $lane;
if (warp >= rows) return; // whole warps leave together
const float *row = $x + (size_t)warp * cols;
float v = $init;
for (int c = lane; c < cols; c += 32) {
    $accumulate
}
$reduce
if (lane == 0) $out[warp] = $result;
)";
static const char rw_total_body[] = R"(
$shared
float v = 0.0f;
for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    v += $x[i];
}
$reduce
$finish
)";
static const char rw_two_level[] = R"(
const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
if (lane == 0) warp_sums[warp] = v;
__syncthreads();
if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    $reduce
    if (lane == 0) atomicAdd($out, v);
}
)";

static void rw_kernels(const Task *t, Emit *e) {
    const char *x = t->in[0].name, *o = t->out[0].name;
    int op = t->p[RW_OP];
    const char *mask = pick3(t->p[RW_MASK], "0xffffffff", "0xFFFFFFFFu", "FULL_MASK");
    const char *shfl = fmt("%s(%s, v, offset)", t->p[RW_SHFL] ? "__shfl_xor_sync" : "__shfl_down_sync", mask);
    const char *step = op == RW_ROW_MAX ? fmt("v = fmaxf(v, %s);", shfl) : fmt("v += %s;", shfl);
    const char *shuffle = FRAG(ro_shfl_loop_tpl, "step", step);
    const char *reduce = t->p[RW_HELPER] ? fmt("v = %s(v);", t->kname[1]) : shuffle;
    if (t->p[RW_MASK] == 2) TPL(e, t, "#define FULL_MASK 0xffffffffu\n\n", NULL);
    if (t->p[RW_HELPER]) {
        const char *comment = t->p[RW_SHFL]
                                  ? "Butterfly reduction across the 32 lanes of a warp; every lane gets the result."
                                  : "Reduction across the 32 lanes of a warp; lane 0 gets the result.";
        TPL(e, t, rw_helper,
            "spec", t->p[RW_HELPER] == 1 ? "__inline__ __device__ float" : "__device__ __forceinline__ float",
            "helper", t->kname[1], "shuffle", shuffle, "comment", comment);
    }
    if (rw_is_row(t))
        emit_kernel(e, t, "", "", "One warp per row: lanes stride over the columns, then reduce with shuffles.",
                    "int rows, int cols",
                    FRAG(rw_row_body, "x", x, "lane", t->p[RW_KNAME] & 1 ? "& 31" : "% 32",
                         "init", op == RW_ROW_MAX ? "-3.402823466e+38f" : "0.0f", "reduce", reduce, "out", o,
                         "accumulate", pick3(op - RW_ROW_SUM, "v += row[c];", "v = fmaxf(v, row[c]);",
                                             "v += row[c] * row[c];"),
                         "result", op == RW_ROW_NORM ? "sqrtf(v)" : "v"));
    else {
        const char *comment =
            op == RW_TOTAL_SUM
                ? "Grid-stride partial sums per thread, a warp-level shuffle reduction, one atomicAdd per warp."
                : "Per-thread partial sums, warp shuffles, warp sums through shared memory, one atomicAdd per block.";
        const char *finish = op == RW_TOTAL_SUM ? fmt("if ((threadIdx.x & 31) == 0) atomicAdd(%s, v);", o)
                                                : FRAG(rw_two_level, "reduce", reduce, "out", o);
        emit_kernel(e, t, "", "", comment, "int n",
                    FRAG(rw_total_body, "x", x, "reduce", reduce, "finish", finish,
                         "shared", op == RW_BLOCK_SUM ? "__shared__ float warp_sums[32];" : ""));
    }
}

static void rw_launch(const Task *t, Emit *e, const Host *h) {
    int B = t->p[RW_BLOCK];
    if (!rw_is_row(t)) {
        launch_1d(e, t, t->kname[0], h->size[0], B, t->p[RW_CAP], kernel_args(h, 1));
        return;
    }
    TPL(e, t, ro_warp_launch_tpl[t->st.cfg & 1], "block", fmt("%d", B), "warps", fmt("%d", B / 32), "rows", h->size[0],
        "k", t->kname[0], "args", kernel_args(h, 2));
}

// A whole-array sum is the sum of one row of n values.
static void rw_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *o = out[0];
    int op = t->p[RW_OP];
    long R = rw_is_row(t) ? t->p[RW_ROWS] : 1, C = rw_is_row(t) ? t->p[RW_COLS] : t->p[RW_N];
    for (long r = 0; r < R; r++) {
        double s = op == RW_ROW_MAX ? -INFINITY : 0;
        for (long c = 0; c < C; c++) {
            double v = x[r * C + c];
            if (op == RW_ROW_MAX) s = v > s ? v : s;
            else s += op == RW_ROW_NORM ? v * v : v;
        }
        o[r] = (float)(op == RW_ROW_NORM ? sqrt(s) : s);
    }
}

static const Family fam_reduce_warp = {
    "reduce_warp",
    "warp-shuffle reductions: whole-array sum (per warp or two-level), row sum/max/L2 norm with one warp per row",
    rw_params, NULL, rw_draw, rw_layout, rw_describe, rw_kernels, rw_launch, rw_ref };

// ----------------------------------------------------------------------------
// dot_atomic: grid-stride partial products, a block reduction, atomicAdd of the block sum.
// The block reduction is the row families' (families_rows.c) on one block (ro_as_block).

enum { DP_N, DP_BLOCK, DP_RED, DP_CAP, DP_FMA, DP_VEC4, DP_MASK, DP_KNAME, DP_NAMES, DP_TNAME, DP_NP };
static const ParamDesc dp_params[] = {
    [DP_N] = { "n", NULL, 1, "1000 4096 10000 65536 100000 262144 1000000 1048576" },
    [DP_BLOCK] = { "block", NULL, 1, "128 256 512 1024" }, [DP_RED] = { "reduce", ro_reds, 1, "*" },
    [DP_CAP] = { "cap", NULL, 0, "128 256 1024 4096" }, [DP_FMA] = { "fma", NULL, 0, "0..1" },
    [DP_VEC4] = { "vec4", NULL, 1, "0 0 1" }, [DP_MASK] = { "mask", NULL, 0, "0..2" },
    [DP_KNAME] = { "kname", NULL, 0, "0..3" }, [DP_NAMES] = { "names", NULL, 0, "0..3" },
    [DP_TNAME] = { "tname", NULL, 0, "0..2" }, [DP_NP] = { NULL } };

static void dp_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const names[] = { "a b result", "x y dot", "u v_in out", "lhs rhs sum" };
    static const char *const kn[] = { "dot_kernel", "dotProductAtomic", "dot_product", "inner_product" };
    if (t->p[DP_N] % 4) t->p[DP_VEC4] = 0; // float4 loads cover the whole array
    task_names(t, 2, names[t->p[DP_NAMES]], kn[t->p[DP_KNAME]], "dot");
}
static void dp_layout(Task *t) {
    // products of values on a grid of 1/32 are multiples of 2^-10 in (-1, 1], with mixed
    // signs: partial sums stay far below 2^14, where they would stop being floats
    red_layout(t, 2, t->p[DP_N], 1, 1.0 / 32);
}
static void dp_describe(const Task *t, Buf *name, Buf *desc) {
    const char *o = t->out[0].name, *vec = t->p[DP_VEC4] ? " with float4 loads" : "";
    const char *how = t->p[DP_RED] == RO_TREE ? "in a shared-memory tree"
                                               : "with warp shuffles and a shared array of warp sums";
    buf_puts(name, pick3(t->p[DP_TNAME], "Dot_Product", "Vector_Dot_Product", "Inner_Product_Atomic"));
    buf_printf(desc, "Compute %s[0] = sum over i of %s[i] * %s[i] for the %d elements (values in [-1, 1)). Each "
               "thread accumulates a grid-stride share%s, each block of %d threads reduces its partial sums %s, and "
               "thread 0 adds the block's sum to %s[0] with atomicAdd (%s[0] starts at zero).",
               o, t->in[0].name, t->in[1].name, t->p[DP_N], vec, t->p[DP_BLOCK], how, o, o);
}
// The kernel's body (after the reductions' prelude and helpers).
static const char dp_body_tpl[] = R"(
$shared
const int tid = threadIdx.x;
float acc = 0.0f;
$vec
for (int i = blockIdx.x * blockDim.x + tid; i < $count; i += blockDim.x * gridDim.x) {
    $step
}
$reduce
if (tid == 0) atomicAdd($o, acc);
)";
// The accumulation of one index, by vec4 then fma, and the float4 views of vec4 kernels.
static const char *const dp_step[2][2] = { { "acc += $a[i] * $b[i];", "acc = fmaf($a[i], $b[i], acc);" }, { R"(
const float4 p = a4[i], q = b4[i];
acc += p.x * q.x + p.y * q.y + p.z * q.z + p.w * q.w;
)", R"(
const float4 p = a4[i], q = b4[i];
acc = fmaf(p.x, q.x, acc);
acc = fmaf(p.y, q.y, acc);
acc = fmaf(p.z, q.z, acc);
acc = fmaf(p.w, q.w, acc);
)" } };
static const char dp_vec4_tpl[] = R"(
const float4 *a4 = reinterpret_cast<const float4 *>($a);
const float4 *b4 = reinterpret_cast<const float4 *>($b);
)";
static void dp_kernels(const Task *t, Emit *e) {
    Task tt = ro_as_block(t, RO_BLOCK, t->p[DP_BLOCK], t->p[DP_RED], t->p[DP_MASK], t->p[DP_KNAME] % 3);
    const char *a = t->in[0].name, *b = t->in[1].name;
    int vec4 = t->p[DP_VEC4];
    emit_kernel(e, t, FRAG("$prelude\n$helpers", "prelude", ro_prelude(&tt), "helpers", ro_helpers(&tt, 1 << RO_SUM)),
                "", "Dot product: grid-stride partial sums, a block reduction, one atomicAdd per block.", "int n",
                FRAG(dp_body_tpl, "shared", ro_shared(&tt, "float"), "count", vec4 ? "n / 4" : "n",
                     "vec", vec4 ? FRAG(dp_vec4_tpl, "a", a, "b", b) : "",
                     "step", FRAG(dp_step[vec4][t->p[DP_FMA]], "a", a, "b", b),
                     "reduce", ro_allreduce(&tt, "acc", RO_SUM), "o", t->out[0].name));
}
static void dp_launch(const Task *t, Emit *e, const Host *h) {
    const char *threads = t->p[DP_RED] == RO_TREE ? "BLOCK_SIZE" : fmt("%d", t->p[DP_BLOCK]);
    TPL(e, t, "$grid\n$k<<<blocks, threads>>>($args);",
        "grid", grid_1d(threads, t->p[DP_VEC4] ? fmt("%s / 4", h->size[0]) : h->size[0], t->p[DP_CAP]),
        "k", t->kname[0], "args", kernel_args(h, 1));
}
static void dp_ref(const Task *t, const void *const *in, void *const *out) {
    const float *a = in[0], *b = in[1];
    double s = 0;
    for (long i = 0; i < t->p[DP_N]; i++) s += (double)a[i] * b[i];
    ((float *)out[0])[0] = (float)s;
}
static const Family fam_dot = {
    "dot_atomic",
    "dot product: grid-stride partials (optionally fmaf, float4), shared tree"
    " or shuffle block reduction, atomicAdd per block",
    dp_params, NULL, dp_draw, dp_layout, dp_describe, dp_kernels, dp_launch, dp_ref };

static const Family *const families_reduce[] = { &fam_reduce_block, &fam_reduce_warp, &fam_dot, NULL };
