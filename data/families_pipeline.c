// families_pipeline.c - tasks of two or three kernels in a row with scratch buffers between
// them: standardize a vector (mean and variance by reduction, then normalize), softmax /
// log-softmax of a whole vector (atomic float max, atomicAdd of the exponentials, divide),
// SAXPY then the L2 norm, and row normalization then a matrix-vector product. Included by
// corpus.c after families_matrix.c (mx_* helpers) and families_select.c (sl_pick_real).
// Tolerances: float sums reduced on the GPU in another order (mx_red_rel), see each layout.

#define PL_SIZES "1000 4096 10000 65536 100000 262144 1000000 1048576"
#define PL_BLOCKS "128 256 256 512 1024"
#define PL_CAPS "0 64 256 1024" // 0: one element per thread in the reduction passes
static const char *const pl_reduces[] = { "shared_tree", "warp_shuffle", NULL };
static const char *const pl_vnames[] = { "x y", "input output", "data result", "signal out", "a z" };
static const char *const pl_dn[] = { "n", "len", "count" };
static const char *const pl_helper_names[][2] = { { "block_sum", "block_max" }, { "blockReduceSum", "blockReduceMax" },
                                                  { "reduce_block_sum", "reduce_block_max" },
                                                  { "block_total", "block_maximum" } };

// __device__ float NAME(float v), NAME from pl_reduce_name: the block's sum (op 0) or maximum (op 1)
// of v, valid in thread 0, by a shared-memory tree over BLOCK_SIZE floats (a power of two) or warp
// shuffles (parameter "reduce"). Ends with __syncthreads(), so a kernel may call it several times.
static const char *const pl_block_reduce_tpl[] = { R"(
/// Block-wide $what of v (blockDim.x == BLOCK_SIZE threads); the result is valid in thread 0.
$spec $name(float v) {
    __shared__ float buf[BLOCK_SIZE];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) $tree
        __syncthreads();
    }
    const float total = buf[0];
    __syncthreads(); // buf may be reused by the next call
    return total;
}

)", R"(
/// Block-wide $what of v (blockDim.x == BLOCK_SIZE threads); the result is valid in thread 0.
$spec $name(float v) {
    __shared__ float warp_vals[32];
    const int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset >>= 1) $shfl
    if (lane == 0) warp_vals[wid] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warp_vals[threadIdx.x] : $identity;
    if (wid == 0) {
        for (int offset = 16; offset > 0; offset >>= 1) $shfl
    }
    __syncthreads(); // warp_vals may be reused by the next call
    return v;
}

)" };
static const char *pl_reduce_name(const Task *t, int op) { return pl_helper_names[mx_par(t, "kname")][op]; }
static const char *pl_block_reduce(const Task *t, int op) {
    const char *tree = op ? "buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);"
                          : "buf[threadIdx.x] += buf[threadIdx.x + s];";
    const char *shfl = op ? "v = fmaxf(v, __shfl_down_sync(0xffffffff, v, offset));"
                          : "v += __shfl_down_sync(0xffffffff, v, offset);";
    return FRAG(pl_block_reduce_tpl[mx_par(t, "reduce")], "what", op ? "maximum" : "sum",
                "spec", t->st.idxname & 1 ? "__device__ __forceinline__ float" : "__device__ float",
                "name", pl_reduce_name(t, op), "tree", tree, "shfl", shfl,
                "identity", op ? "-3.402823466e+38f" : "0.0f");
}
// The grid-stride loop over n of the reduction passes, around body.
static const char pl_stride_tpl[] = R"(
for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < $n; i += blockDim.x * gridDim.x) {
    $body
}
)";
static const char *pl_stride(const char *n, const char *body) { return FRAG(pl_stride_tpl, "n", n, "body", body); }
// A float pointer parameter of a kernel: "const float *__restrict__ x" in some programs.
static const char *pl_fptr(const Task *t, const char *name, int is_const) {
    return ptr_param(t, "float", name, is_const);
}

// The host code of the three vector pipelines: the grids (elem_blocks: one thread per element;
// red_blocks, pl_red_blocks: as many, at most cap when cap > 0, for the reduction passes),
// scratch buffers, first pass, what comes between, last pass, then sync_free's lines.
static const char pl_launch_tpl[] = R"(
const int threads = BLOCK_SIZE;
const int elem_blocks = ($n + threads - 1) / threads;
const int red_blocks = $red_blocks;
$alloc
$init
$k1<<<$grid1, threads>>>($args1);
$alloc2
$launch2
$k3<<<$cfg3>>>($args3);
$free
)";
static const char *pl_red_blocks(int cap) {
    return cap ? fmt("elem_blocks < %d ? elem_blocks : %d", cap, cap) : "elem_blocks";
}

// ----------------------------------------------------------------------------
// Pipeline: standardize a vector (mean and variance by reduction, then normalize)

enum { PS_N, PS_METHOD, PS_REDUCE, PS_BLOCK, PS_DDOF, PS_STATS, PS_RANGE, PS_CAP, PS_LOOP, PS_INV, PS_KNAME, PS_NAMES,
       PS_TNAME, PS_DNAME, PS_NP };
enum { PS_TWO_MOMENT, PS_CENTERED, PS_PARTIALS };
static const char *const ps_methods[] = { "two_moment", "centered", "partials", NULL };
static const ParamDesc ps_params[] = {
    [PS_N] = { "n", NULL, 1, PL_SIZES }, [PS_METHOD] = { "method", ps_methods, 1, "*" },
    [PS_REDUCE] = { "reduce", pl_reduces, 1, "*" }, [PS_BLOCK] = { "block", NULL, 1, PL_BLOCKS },
    [PS_DDOF] = { "ddof", NULL, 1, "0 0 1" }, [PS_STATS] = { "stats", NULL, 1, "0 0 0 1 1" },
    [PS_RANGE] = { "range", NULL, 0, "=0..6" }, [PS_CAP] = { "cap", NULL, 0, PL_CAPS },
    [PS_LOOP] = { "loop", loop_names, 0, "*" }, [PS_INV] = { "inv", NULL, 0, "0..1" },
    [PS_KNAME] = { "kname", NULL, 0, "0..3" }, [PS_NAMES] = { "names", NULL, 0, "0..4" },
    [PS_TNAME] = { "tname", NULL, 0, "0..2" }, [PS_DNAME] = { "dname", NULL, 0, "0..2" }, [PS_NP] = { NULL } };
static const double ps_ranges[][2] = { { -1, 1 }, { 0, 1 }, { 0, 10 }, { -5, 15 }, { -100, 100 }, { 10, 12 },
                                       { 100, 104 } };
static const char *const ps_fp[] = { "eps", NULL };

static void ps_draw(Task *t, Rng *r) {
    static const char *const stat_names[] = { "stats", "moments", "mean_var" };
    // by method: the kernels of the statistics (one or two) and the one that normalizes
    static const char *const kn[3][4] = {
        { "moments_kernel - normalize_kernel", "block_moments - standardize", "sum_and_sumsq - apply_standardize",
          "reduceMoments - normalizeKernel" },
        { "sum_kernel sq_dev_kernel normalize_kernel", "block_sum_pass centered_sumsq standardize",
          "reduce_sum reduce_sq_dev apply_standardize", "reduceSum reduceSqDev normalizeKernel" },
        { "partial_moments finalize_stats normalize_kernel", "block_moments_partial reduce_partials standardize",
          "moments_pass1 moments_pass2 apply_standardize", "partialMoments finalizeStats normalizeKernel" } };
    // the two-moment variance (E[x^2] - mean^2) cancels badly when |mean| >> std: offset
    // ranges only for the centered method
    t->p[PS_RANGE] = rng_int(r, 0, t->p[PS_METHOD] == PS_CENTERED ? NELEM(ps_ranges) - 1 : 4);
    t->f[0] = sl_pick_real(r, "1e-5 1e-6 1e-8 1e-12");
    int k = t->p[PS_KNAME];
    task_names(t, 1, fmt("%s %s", pl_vnames[t->p[PS_NAMES]], stat_names[k % 3]), kn[t->p[PS_METHOD]][k],
               "standardize");
}
static void ps_layout(Task *t) {
    long N = t->p[PS_N];
    const double *rg = ps_ranges[t->p[PS_RANGE]];
    vectors_1d(t, pl_dn[t->p[PS_DNAME]], N, 1, rg[0], rg[1]);
    if (t->p[PS_STATS]) {
        t->nout = 2;
        tshape(&t->out[1], DT_F32, 1, 2, 0, add_size(t, "nstats", 2), -1);
    }
    // Error budget (float sums on the GPU): the mean is off by about c * (|mu| + sigma), the
    // variance by a relative c (centered) or 3 c E[x^2] / var (E[x^2] - mean^2); y inherits
    // d(mean) / sigma absolutely and half the variance's error relatively.
    double mu = (rg[0] + rg[1]) / 2, sd = (rg[1] - rg[0]) / sqrt(12.0), c = mx_red_rel(N);
    double factor = t->p[PS_METHOD] == PS_CENTERED ? 1 : 3 * (mu * mu + sd * sd) / (sd * sd);
    double am = c * (fabs(mu) + sd);
    t->atol = am / sd + 2e-7 * (fabs(mu) + sd) / sd + 1e-6 + (t->p[PS_STATS] ? am : 0);
    t->rtol = factor * c + 1e-5;
}
static void ps_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const how[] = {
        " Use two kernels: the first reduces sum($x) and sum($x^2) (block reductions, then atomicAdd into a two-float "
        "buffer); the second derives mean and var from them and normalizes.",
        " Use three kernels: reduce sum($x) (atomicAdd), then reduce the squared deviations from the mean (atomicAdd), "
        "then normalize.",
        " Use three kernels: each block writes its partial sum($x) and sum($x^2); a single block reduces the partials "
        "into mean and var; a third kernel normalizes." };
    const char *x = t->in[0].name, *y = t->out[0].name;
    long N = t->p[PS_N];
    buf_puts(name, pick3(t->p[PS_TNAME], "Standardize_Vector", "Z_Score_Normalization", "Mean_Variance_Normalize"));
    buf_put_line(desc, FRAG("Standardize the $N values of $x: mean = sum($x) / $N, var = sum(($x - mean)^2) / $div, "
                            "and $y[i] = ($x[i] - mean) / sqrt(var + $eps).",
                            "N", fmt("%ld", N), "x", x, "y", y, "eps", fnum(t->f[0]),
                            "div", t->p[PS_DDOF] ? fmt("%ld (the unbiased estimate)", N - 1) : fmt("%ld", N)));
    if (t->p[PS_STATS]) buf_printf(desc, " Also write %s[0] = mean and %s[1] = var.", t->out[1].name, t->out[1].name);
    buf_put_line(desc, FRAG(how[t->p[PS_METHOD]], "x", x));
    buf_printf(desc, " Block reductions use %s.",
               t->p[PS_REDUCE] ? "warp shuffles (__shfl_down_sync)" : "a shared-memory tree with __syncthreads()");
}

// Pass 1 reduces sum(x) (and sum(x^2)) into acc or per-block partials; pass 2 (centered:
// the squared deviations; partials: the partials, in one block); the last pass normalizes.
static const char ps_kernels_tpl[] = R"(
#define BLOCK_SIZE $B
#define EPS $eps

$bsum_fn
/// $comment1
__global__ void $k1($xp, $accp, int $n) {
    float s = 0.0f$q;
    $loop1
    s = $bsum(s);
    $qsum
    if (threadIdx.x == 0) {
        $publish
    }
}

$pass2
/// Last pass: $y[i] = ($x[i] - mean) / sqrt(var + eps), one element per thread.
__global__ void $k3($params3) {
    const float mean = $mean;
    const float var = $var;
    const float inv = $inv;
    $write_stats
    $loop3
}
)";
static const char *const ps_pass2_tpl[] = { "", R"(
/// Pass 2: the sum of squared deviations from the mean, accumulated into acc[1].
__global__ void $k2($xp, float *acc, int $n) {
    const float mean = acc[0] / $n;
    float q = 0.0f;
    $loop
    q = $bsum(q);
    if (threadIdx.x == 0) atomicAdd(&acc[1], q);
}

)", R"(
/// Pass 2 (one block): reduce the partials; acc[0] = mean, acc[1] = var.
__global__ void $k2($pp, int nblocks, float *acc, int $n) {
    float s = 0.0f, q = 0.0f;
    for (int b = threadIdx.x; b < nblocks; b += blockDim.x) {
        s += partial[b];
        q += partial[nblocks + b];
    }
    s = $bsum(s);
    q = $bsum(q);
    if (threadIdx.x == 0) {
        const float mean = s / $n;
        acc[1] = $var;
        acc[0] = mean;
    }
}

)" };
// The two-moment variance from the sum s and the sum of squares q, with mean = s / n.
static const char *ps_var(const char *s, const char *q, const char *n, int ddof) {
    if (ddof) return fmt("fmaxf((%s - mean * %s) / (%s - 1), 0.0f)", q, s, n);
    return fmt("fmaxf(%s / %s - mean * mean, 0.0f)", q, n);
}
static void ps_kernels(const Task *t, Emit *e) {
    static const char *const comment1[] = {
        "Pass 1: sum($x) and sum($x^2) of each block, added into acc[0] and acc[1].",
        "Pass 1: the sum of $x, accumulated into acc[0].",
        "Pass 1: each block writes its sum($x) to partial[b] and its sum($x^2) to partial[gridDim.x + b]." };
    static const char *const publish[] = { "atomicAdd(&acc[0], s);\natomicAdd(&acc[1], q);", "atomicAdd(&acc[0], s);",
                                           "partial[blockIdx.x] = s;\npartial[gridDim.x + blockIdx.x] = q;" };
    const char *x = t->in[0].name, *y = t->out[0].name, *st = t->p[PS_STATS] ? t->out[1].name : NULL;
    const char *n = pl_dn[t->p[PS_DNAME]], *bsum = pl_reduce_name(t, 0), *i = IDX(t), *xp = pl_fptr(t, x, 1);
    int method = t->p[PS_METHOD], centered = method == PS_CENTERED, partials = method == PS_PARTIALS;
    int ddof = t->p[PS_DDOF];
    // what the last pass reads: acc holds the sums, or (partials) the mean and the variance
    const char *var = partials   ? "acc[1]"
                      : centered ? fmt("acc[1] / %s", ddof ? fmt("(%s - 1)", n) : n)
                                 : ps_var("acc[0]", "acc[1]", n, ddof);
    const char *sums =
        centered ? fmt("s += %s[i];", x) : fmt("const float val = %s[i];\ns += val;\nq += val * val;", x);
    const char *pass2 = FRAG(ps_pass2_tpl[method], "k2", t->kname[1], "xp", xp, "n", n, "bsum", bsum,
                             "pp", pl_fptr(t, "partial", 1), "var", ps_var("s", "q", n, ddof),
                             "loop", pl_stride(n, fmt("const float d = %s[i] - mean;\nq += d * d;", x)));
    const char *params3 =
        fmt("%s, const float *acc, %s%s, int %s", xp, pl_fptr(t, y, 0), st ? fmt(", %s", pl_fptr(t, st, 0)) : "", n);
    const char *write_stats =
        st ? fmt("if (blockIdx.x == 0 && threadIdx.x == 0) {\n    %s[0] = mean;\n    %s[1] = var;\n}", st, st) : "";
    TPL(e, t, ps_kernels_tpl, "B", fmt("%d", t->p[PS_BLOCK]), "eps", flit(t->f[0]),
        "bsum_fn", pl_block_reduce(t, 0), "comment1", FRAG(comment1[method], "x", x),
        "k1", t->kname[0], "xp", xp, "accp", pl_fptr(t, partials ? "partial" : "acc", 0), "n", n,
        "q", centered ? "" : ", q = 0.0f", "bsum", bsum, "qsum", centered ? "" : fmt("q = %s(q);", bsum),
        "publish", publish[method], "loop1", pl_stride(n, sums), "pass2", pass2, "y", y, "x", x, "k3", t->kname[2],
        "params3", params3, "mean", partials ? "acc[0]" : fmt("acc[0] / %s", n), "var", var,
        "inv", t->p[PS_INV] ? "rsqrtf(var + EPS)" : "1.0f / sqrtf(var + EPS)", "write_stats", write_stats,
        "loop3", loop_frag(t, t->p[PS_LOOP], n, fmt("%s[%s] = (%s[%s] - mean) * inv;", y, i, x, i)));
}
// Pass 1 adds into acc (zeroed first), or writes 2 * red_blocks partials that pass 2 sums in
// one block: then the grid is capped (1024 blocks when cap is 0).
static void ps_launch(const Task *t, Emit *e, const Host *h) {
    const char *n = h->size[0], *x = h->in[0], *y = h->out[0];
    const char *acc = dname(t, "acc"), *part = dname(t, "partial");
    int centered = t->p[PS_METHOD] == PS_CENTERED, partials = t->p[PS_METHOD] == PS_PARTIALS;
    const char *init = partials ? dev_alloc(t, "float", part, "2 * red_blocks")
                                : checked(t, fmt("cudaMemset(%s, 0, 2 * sizeof(float))", acc));
    const char *launch2 = centered   ? fmt("%s<<<red_blocks, threads>>>(%s, %s, %s);", t->kname[1], x, acc, n)
                          : partials ? fmt("%s<<<1, threads>>>(%s, red_blocks, %s, %s);", t->kname[1], part, acc, n)
                                     : "";
    TPL(e, t, pl_launch_tpl, "n", n, "red_blocks", pl_red_blocks(partials && !t->p[PS_CAP] ? 1024 : t->p[PS_CAP]),
        "alloc", dev_alloc(t, "float", acc, "2"), "init", init, "k1", t->kname[0], "grid1", "red_blocks",
        "args1", fmt("%s, %s, %s", x, partials ? part : acc, n), "alloc2", "", "launch2", launch2, "k3", t->kname[2],
        "cfg3", t->p[PS_LOOP] == LOOP_GRID ? "red_blocks, threads" : "elem_blocks, threads",
        "args3", fmt("%s, %s, %s, %s%s", x, acc, y, t->p[PS_STATS] ? fmt("%s, ", h->out[1]) : "", n),
        "free", sync_free(t, acc, partials ? part : NULL));
}
static void ps_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *y = out[0];
    long N = t->p[PS_N];
    double s = 0, q = 0;
    for (long i = 0; i < N; i++) s += x[i];
    double mean = s / N;
    for (long i = 0; i < N; i++) q += (x[i] - mean) * (x[i] - mean);
    double var = q / (N - t->p[PS_DDOF]);
    double inv = 1.0 / sqrt(var + fpar(t, 0));
    for (long i = 0; i < N; i++) y[i] = (float)((x[i] - mean) * inv);
    if (t->p[PS_STATS]) {
        ((float *)out[1])[0] = (float)mean;
        ((float *)out[1])[1] = (float)var;
    }
}
static const Family fam_pl_standardize = {
    "pipeline_standardize",
    "z-score a vector with 2-3 kernels: reduce sum / sum of squares (atomics or per-"
    "block partials), then normalize; tree or shuffle reductions",
    ps_params, ps_fp, ps_draw, ps_layout, ps_describe, ps_kernels, ps_launch, ps_ref };

// ----------------------------------------------------------------------------
// Pipeline: softmax over a whole vector in three kernels (max, sum of exp, divide)

enum { PM_N, PM_OP, PM_MAXOP, PM_REDUCE, PM_STORE, PM_BLOCK, PM_RANGE, PM_INIT, PM_CAP, PM_LOOP, PM_KNAME, PM_NAMES,
       PM_TNAME, PM_DNAME, PM_NP };
static const char *const pm_ops[] = { "softmax", "log_softmax", NULL };
static const char *const pm_maxops[] = { "cas_loop", "ordered_int", NULL };
static const char *const pm_stores[] = { "recompute", "store_exp", NULL };
static const char *const pm_inits[] = { "memcpy", "init_kernel", NULL };
static const ParamDesc pm_params[] = {
    [PM_N] = { "n", NULL, 1, PL_SIZES }, [PM_OP] = { "op", pm_ops, 1, "0 0 1" },
    [PM_MAXOP] = { "max_atomic", pm_maxops, 1, "*" }, [PM_REDUCE] = { "reduce", pl_reduces, 1, "*" },
    [PM_STORE] = { "store", pm_stores, 1, "*" }, [PM_BLOCK] = { "block", NULL, 1, PL_BLOCKS },
    [PM_RANGE] = { "range", NULL, 0, "0..4" }, [PM_INIT] = { "init", pm_inits, 0, "*" },
    [PM_CAP] = { "cap", NULL, 0, PL_CAPS }, [PM_LOOP] = { "loop", loop_names, 0, "*" },
    [PM_KNAME] = { "kname", NULL, 0, "0..3" }, [PM_NAMES] = { "names", NULL, 0, "0..4" },
    [PM_TNAME] = { "tname", NULL, 0, "0..2" }, [PM_DNAME] = { "dname", NULL, 0, "0..2" }, [PM_NP] = { NULL } };
static const double pm_ranges[][2] = { { -4, 4 }, { -10, 10 }, { 0, 20 }, { -1, 1 }, { -30, 0 } };

static void pm_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const kn[] = { "reduce_max sum_exp normalize", "max_kernel exp_sum_kernel softmax_divide",
                                      "softmax_max_pass softmax_sum_pass softmax_final_pass",
                                      "maxReduce sumExp divideBySum" };
    if (t->p[PM_OP]) t->p[PM_STORE] = 0; // log-softmax reads x again
    task_names(t, 1, pl_vnames[t->p[PM_NAMES]], kn[t->p[PM_KNAME]], t->p[PM_OP] ? "log_softmax" : "softmax");
}
static void pm_layout(Task *t) {
    long N = t->p[PM_N];
    const double *rg = pm_ranges[t->p[PM_RANGE]];
    vectors_1d(t, pl_dn[t->p[PM_DNAME]], N, 1, rg[0], rg[1]);
    t->need_math = 1;
    // the sum of exponentials is off by a relative c; expf by ~2 ulp; x - max rounds by
    // half an ulp of the range, which expf turns into a relative error
    double c = mx_red_rel(N), span = rg[1] - rg[0];
    t->atol = t->p[PM_OP] ? c + 2e-7 * (1 + span + log((double)N)) + 1e-6 : 1e-12;
    t->rtol = t->p[PM_OP] ? 1e-6 : c + 3e-7 + 6e-8 * span + 1e-5;
}
static void pm_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Softmax_Vector", "Global_Softmax", "Softmax_Three_Pass" },
                                          { "Log_Softmax_Vector", "Global_Log_Softmax", "Log_Softmax_Three_Pass" } };
    const char *x = t->in[0].name, *y = t->out[0].name;
    buf_puts(name, nm[t->p[PM_OP]][t->p[PM_TNAME]]);
    buf_put_line(desc, FRAG("Compute the $op over all $N elements of $x: $y[i] = $formula with m = max($x) and S = sum "
                            "over j of exp($x[j] - m).",
                            "op", t->p[PM_OP] ? "log-softmax" : "softmax", "N", fmt("%d", t->p[PM_N]), "x", x, "y", y,
                            "formula", t->p[PM_OP] ? fmt("%s[i] - m - log(S)", x) : fmt("exp(%s[i] - m) / S", x)));
    buf_printf(desc,
               " Use three kernels: a block-reduced maximum combined across blocks with an atomic float max (%s), "
               "a block-reduced sum of exponentials combined with atomicAdd%s, and a final element-wise kernel.",
               t->p[PM_MAXOP] ? "atomicMax/atomicMin on the float's bits" : "an atomicCAS loop",
               t->p[PM_STORE] ? " (it also stores exp(x - m) into the output, which the last kernel scales in place)"
                              : "");
}

// An atomic float max (a CAS loop, or int / unsigned atomics on the bits), the block
// reductions, then: max into red[0], sum of exponentials into red[1], element-wise last pass.
static const char *const pm_atomic_max_tpl[] = { R"(
/// Atomic maximum of a float through atomicCAS on its bits; returns the old value.
__device__ float $name(float *addr, float value) {
    int *addr_i = (int *)addr;
    int old = *addr_i;
    while (__int_as_float(old) < value) {
        const int assumed = old;
        old = atomicCAS(addr_i, assumed, __float_as_int(value));
        if (old == assumed) break;
    }
    return __int_as_float(old);
}

)", R"(
/// Atomic maximum of a float: non-negative floats order like their int bits,
/// negative ones in reverse like their unsigned bits.
__device__ float $name(float *addr, float value) {
    if (value >= 0.0f) return __int_as_float(atomicMax((int *)addr, __float_as_int(value)));
    return __uint_as_float(atomicMin((unsigned int *)addr, __float_as_uint(value)));
}

)" };
static const char pm_kernels_tpl[] = R"(
#define BLOCK_SIZE $B

$atomic_max
$bmax_fn
$bsum_fn
$init
/// Kernel 1: red[0] = max($x).
__global__ void $k1($xp, float *red, int $n) {
    float m = -3.402823466e+38f;
    $loop1
    m = $bmax(m);
    if (threadIdx.x == 0) $am(&red[0], m);
}

/// Kernel 2: red[1] = sum of exp($x[i] - red[0])$stored.
__global__ void $k2($params2) {
    const float m = red[0];
    float s = 0.0f;
    $loop2
    s = $bsum(s);
    if (threadIdx.x == 0) atomicAdd(&red[1], s);
}

/// Kernel 3: $comment3
__global__ void $k3($params3) {
    $head3
    $loop3
}
)";
static const char pm_init_tpl[] = R"(
/// red[0] = running maximum (starts at -FLT_MAX), red[1] = running sum.
__global__ void init_reduction(float *red) {
    red[0] = -3.402823466e+38f;
    red[1] = 0.0f;
}

)";
// The last pass (comment, head, element statement): log-softmax, softmax scaling the stored
// exponentials in place, or softmax from x.
static const char *const pm_last[][3] = {
    { "$y[i] = $x[i] - max - log(sum).", "const float shift = red[0] + logf(red[1]);", "$y[$i] = $x[$i] - shift;" },
    { "scale $y in place by 1 / sum.", "const float inv = 1.0f / red[1];", "$y[$i] *= inv;" },
    { "$y[i] = exp($x[i] - max) / sum.", "const float m = red[0];\nconst float total = red[1];",
      "$y[$i] = expf($x[$i] - m) / total;" } };
static void pm_kernels(const Task *t, Emit *e) {
    static const char *const amn[] = { "atomic_max_float", "atomicMaxFloat", "atomic_fmax", "atomicMaxF" };
    const char *x = t->in[0].name, *y = t->out[0].name, *n = pl_dn[t->p[PM_DNAME]], *i = IDX(t);
    const char *xp = pl_fptr(t, x, 1), *yp = pl_fptr(t, y, 0), *am = amn[t->p[PM_KNAME]];
    int store = t->p[PM_STORE];
    const char *const *last = pm_last[t->p[PM_OP] ? 0 : store ? 1 : 2];
    const char *exps = fmt("const float ex = expf(%s[i] - m);\n%ss += ex;", x, store ? fmt("%s[i] = ex;\n", y) : "");
    TPL(e, t, pm_kernels_tpl, "B", fmt("%d", t->p[PM_BLOCK]),
        "atomic_max", FRAG(pm_atomic_max_tpl[t->p[PM_MAXOP]], "name", am), "bmax_fn", pl_block_reduce(t, 1),
        "bsum_fn", pl_block_reduce(t, 0), "init", t->p[PM_INIT] ? pm_init_tpl : "", "x", x, "n", n,
        "k1", t->kname[0], "xp", xp, "loop1", pl_stride(n, fmt("m = fmaxf(m, %s[i]);", x)),
        "bmax", pl_reduce_name(t, 1), "am", am, "stored", store ? fmt("; %s[i] = exp(%s[i] - red[0])", y, x) : "",
        "k2", t->kname[1], "params2", fmt("%s, float *red, %sint %s", xp, store ? fmt("%s, ", yp) : "", n),
        "loop2", pl_stride(n, exps), "bsum", pl_reduce_name(t, 0), "comment3", FRAG(last[0], "x", x, "y", y),
        "k3", t->kname[2], "params3", fmt("%sconst float *red, %s, int %s", store ? "" : fmt("%s, ", xp), yp, n),
        "head3", last[1], "loop3", loop_frag(t, t->p[PM_LOOP], n, FRAG(last[2], "x", x, "y", y, "i", i)));
}
// red[0] starts at -FLT_MAX (a copy from the host, or a one-thread kernel), red[1] at 0.
static void pm_launch(const Task *t, Emit *e, const Host *h) {
    const char *n = h->size[0], *x = h->in[0], *y = h->out[0], *red = dname(t, "red");
    int store = t->p[PM_STORE];
    const char *init =
        t->p[PM_INIT]
            ? fmt("init_reduction<<<1, 1>>>(%s);", red)
            : fmt("const float red_init[2] = { -3.402823466e+38f, 0.0f }; // max starts at -FLT_MAX, sum at 0\n%s",
                  checked(t, fmt("cudaMemcpy(%s, red_init, sizeof(red_init), cudaMemcpyHostToDevice)", red)));
    const char *launch2 =
        fmt("%s<<<red_blocks, threads>>>(%s, %s, %s%s);", t->kname[1], x, red, store ? fmt("%s, ", y) : "", n);
    TPL(e, t, pl_launch_tpl, "n", n, "red_blocks", pl_red_blocks(t->p[PM_CAP]),
        "alloc", dev_alloc(t, "float", red, "2"), "init", init, "k1", t->kname[0], "grid1", "red_blocks",
        "args1", fmt("%s, %s, %s", x, red, n), "alloc2", "", "launch2", launch2, "k3", t->kname[2],
        "cfg3", t->p[PM_LOOP] == LOOP_GRID ? "red_blocks, threads" : "elem_blocks, threads",
        "args3", fmt("%s%s, %s, %s", store ? "" : fmt("%s, ", x), red, y, n), "free", sync_free(t, red, NULL));
}
static void pm_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *y = out[0];
    long N = t->p[PM_N];
    double m = -INFINITY, s = 0;
    for (long i = 0; i < N; i++) m = x[i] > m ? x[i] : m;
    for (long i = 0; i < N; i++) s += exp(x[i] - m);
    for (long i = 0; i < N; i++) y[i] = (float)(t->p[PM_OP] ? x[i] - m - log(s) : exp(x[i] - m) / s);
}
static const Family fam_pl_softmax = {
    "pipeline_softmax",
    "softmax / log-softmax of a whole vector in 3 kernels: atomic float max "
    "(CAS or int ordering), atomicAdd of exp sums, divide",
    pm_params, NULL, pm_draw, pm_layout, pm_describe, pm_kernels, pm_launch, pm_ref };

// ----------------------------------------------------------------------------
// Pipeline: SAXPY, then the L2 norm of the result

enum { PN_N, PN_LOOP, PN_NORM, PN_REDUCE, PN_BLOCK, PN_CAP, PN_ALPHA_ARG, PN_KNAME, PN_NAMES, PN_TNAME, PN_DNAME,
       PN_NP };
static const char *const pn_norms[] = { "atomic_then_sqrt", "partials_then_block", NULL };
static const ParamDesc pn_params[] = {
    [PN_N] = { "n", NULL, 1, PL_SIZES }, [PN_LOOP] = { "loop", loop_names, 1, "*" },
    [PN_NORM] = { "norm", pn_norms, 1, "*" }, [PN_REDUCE] = { "reduce", pl_reduces, 1, "*" },
    [PN_BLOCK] = { "block", NULL, 1, PL_BLOCKS }, [PN_CAP] = { "cap", NULL, 0, NULL },
    [PN_ALPHA_ARG] = { "alpha_arg", NULL, 0, "0..1" }, [PN_KNAME] = { "kname", NULL, 0, "0..3" },
    [PN_NAMES] = { "names", NULL, 0, "0..3" }, [PN_TNAME] = { "tname", NULL, 0, "0..2" },
    [PN_DNAME] = { "dname", NULL, 0, "0..2" }, [PN_NP] = { NULL } };
static const char *const pn_fp[] = { "alpha", NULL };

static void pn_draw(Task *t, Rng *r) {
    static const char *const names[] = { "x y z norm", "a_vec b_vec out l2", "u v w nrm", "xs ys result result_norm" };
    static const char *const kn[] = { "saxpy sum_squares finish_norm", "saxpy_kernel norm_sq_kernel sqrt_kernel",
                                      "axpy sumsq_pass norm_final", "saxpyKernel sumSquares finishNorm" };
    // the partials need a fixed grid: at most cap blocks, cap > 0
    t->p[PN_CAP] = rng_pick(r, t->p[PN_NORM] ? "64 128 256 512 1024" : PL_CAPS);
    t->f[0] = sl_pick_real(r, "2 0.5 -2 1.5 -0.25 3 4");
    task_names(t, 2, names[t->p[PN_NAMES]], kn[t->p[PN_KNAME]], "saxpy_norm");
}
static void pn_layout(Task *t) {
    long N = t->p[PN_N];
    vectors_1d(t, pl_dn[t->p[PN_DNAME]], N, 2, -5, 5);
    t->nout = 2;
    tshape(&t->out[1], DT_F32, 1, 1, 0, -1, -1);
    t->out[1].zero_init = t->p[PN_NORM] == 0;
    t->need_math = 1;
    // z: alpha * x + y, perhaps contracted to an fma (up to an ulp of each term);
    // the norm: a float sum of n squares (relative c), halved by the square root
    t->atol = 3e-7 * (fabs(t->f[0]) * 5 + 5);
    t->rtol = mx_red_rel(N) + 1e-6;
}
static void pn_describe(const Task *t, Buf *name, Buf *desc) {
    const char *x = t->in[0].name, *y = t->in[1].name, *z = t->out[0].name, *nr = t->out[1].name;
    buf_puts(name, pick3(t->p[PN_TNAME], "SAXPY_Then_L2_Norm", "Axpy_And_Norm", "SAXPY_Norm_Pipeline"));
    buf_put_line(desc, FRAG("$x and $y have $N elements. First compute $z[i] = $alpha * $x[i] + $y[i] (SAXPY), then "
                            "$nr[0] = sqrt(sum over i of $z[i]^2), the L2 norm of $z, "
                            "with a second kernel that reads $z.",
                            "x", x, "y", y, "z", z, "nr", nr, "N", fmt("%d", t->p[PN_N]), "alpha", fnum(t->f[0])));
    buf_puts(desc, t->p[PN_NORM] ? " The norm kernel writes one partial sum of squares per block; a single-block "
                                   "kernel adds the partials and writes the square root."
                                 : fmt(" The norm kernel adds each block's sum of squares into %s[0] (zeroed first) "
                                       "with atomicAdd; a one-thread kernel then takes the square root.", nr));
}

// SAXPY element-wise; the block sums of squares added into the norm (atomicAdd) or written
// per block; then the square root (pn_finish_tpl: one thread, or one block over the partials).
static const char pn_kernels_tpl[] = R"(
#define BLOCK_SIZE $B

$bsum_fn
/// Kernel 1 (SAXPY): $z[i] = $alpha_c * $x[i] + $y[i].
__global__ void $k1($params1) {
    $loop1
}

/// Kernel 2: $comment2
__global__ void $k2($zp, $dstp, int $n) {
    float s = 0.0f;
    $loop2
    s = $bsum(s);
    if (threadIdx.x == 0) $publish;
}

$finish
)";
static const char *const pn_finish_tpl[] = { R"(
/// Kernel 3 (one thread): $nr[0] = sqrt($nr[0]).
__global__ void $k3($nrp) {
    $nr[0] = sqrtf($nr[0]);
}
)", R"(
/// Kernel 3 (one block): $nr[0] = sqrt(the sum of the partials).
__global__ void $k3($pp, int count, $nrp) {
    float s = 0.0f;
    for (int b = threadIdx.x; b < count; b += blockDim.x) s += partial[b];
    s = $bsum(s);
    if (threadIdx.x == 0) $nr[0] = sqrtf(s);
}
)" };
static void pn_kernels(const Task *t, Emit *e) {
    const char *x = t->in[0].name, *y = t->in[1].name, *z = t->out[0].name, *nr = t->out[1].name;
    const char *n = pl_dn[t->p[PN_DNAME]], *bsum = pl_reduce_name(t, 0), *i = IDX(t);
    const char *alpha = t->p[PN_ALPHA_ARG] ? "alpha" : flit(t->f[0]);
    int part = t->p[PN_NORM];
    const char *params1 = fmt("%s%s, %s, %s, int %s", t->p[PN_ALPHA_ARG] ? "float alpha, " : "", pl_fptr(t, x, 1),
                              pl_fptr(t, y, 1), pl_fptr(t, z, 0), n);
    const char *comment2 = part ? fmt("partial[b] = the sum of %s[i]^2 over block b's elements.", z)
                                : fmt("%s[0] += the sum of %s[i]^2 over the block's elements.", nr, z);
    const char *publish = part ? "partial[blockIdx.x] = s" : fmt("atomicAdd(%s, s)", nr);
    const char *finish = FRAG(pn_finish_tpl[part], "k3", t->kname[2], "nr", nr, "nrp", pl_fptr(t, nr, 0),
                              "pp", pl_fptr(t, "partial", 1), "bsum", bsum);
    TPL(e, t, pn_kernels_tpl, "B", fmt("%d", t->p[PN_BLOCK]), "bsum_fn", pl_block_reduce(t, 0), "z", z, "x", x,
        "y", y, "n", n, "alpha_c", t->p[PN_ALPHA_ARG] ? "alpha" : fnum(t->f[0]), "k1", t->kname[0], "params1", params1,
        "loop1", loop_frag(t, t->p[PN_LOOP], n, fmt("%s[%s] = %s * %s[%s] + %s[%s];", z, i, alpha, x, i, y, i)),
        "comment2", comment2, "k2", t->kname[1], "zp", pl_fptr(t, z, 1), "dstp", pl_fptr(t, part ? "partial" : nr, 0),
        "loop2", pl_stride(n, fmt("s += %s[i] * %s[i];", z, z)), "bsum", bsum, "publish", publish, "finish", finish);
}
// The partials: a buffer of red_blocks floats, summed by one block of the last pass.
static void pn_launch(const Task *t, Emit *e, const Host *h) {
    const char *n = h->size[0], *z = h->out[0], *nr = h->out[1], *pn = dname(t, "partial");
    int part = t->p[PN_NORM];
    const char *alpha_arg = t->p[PN_ALPHA_ARG] ? fmt("%s, ", flit(t->f[0])) : "";
    const char *args1 = fmt("%s%s, %s, %s, %s", alpha_arg, h->in[0], h->in[1], z, n);
    TPL(e, t, pl_launch_tpl, "n", n, "red_blocks", pl_red_blocks(t->p[PN_CAP]), "alloc", "", "init", "",
        "k1", t->kname[0], "grid1", t->p[PN_LOOP] == LOOP_GRID ? "red_blocks" : "elem_blocks", "args1", args1,
        "alloc2", part ? dev_alloc(t, "float", pn, "red_blocks") : "",
        "launch2", fmt("%s<<<red_blocks, threads>>>(%s, %s, %s);", t->kname[1], z, part ? pn : nr, n),
        "k3", t->kname[2], "cfg3", part ? "1, threads" : "1, 1", "args3", part ? fmt("%s, red_blocks, %s", pn, nr) : nr,
        "free", part ? sync_free(t, pn, NULL) : "");
}
static void pn_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0], *y = in[1];
    float *z = out[0];
    double a = fpar(t, 0), s = 0;
    for (long i = 0; i < t->p[PN_N]; i++) {
        z[i] = (float)(a * x[i] + y[i]);
        s += (double)z[i] * z[i];
    }
    ((float *)out[1])[0] = (float)sqrt(s);
}
static const Family fam_pl_saxpy_norm = {
    "pipeline_saxpy_norm",
    "z = alpha x + y, then ||z||_2 by a second kernel: atomicAdd + one-thread"
    " sqrt, or per-block partials + one-block finish",
    pn_params, pn_fp, pn_draw, pn_layout, pn_describe, pn_kernels, pn_launch, pn_ref };

// ----------------------------------------------------------------------------
// Pipeline: normalize the rows of a matrix, then multiply by a vector

enum { PR_ROWS, PR_COLS, PR_NORM, PR_STAGES, PR_BLOCK, PR_BDIM, PR_MVBLOCK, PR_REDUCE, PR_DIMS, PR_KNAME, PR_NAMES,
       PR_TNAME, PR_DNAMES, PR_NP };
static const char *const pr_norms[] = { "l2", "l1", NULL };
static const char *const pr_stages[] = { "norms_scale_matvec", "block_normalize_warp_matvec", NULL };
static const ParamDesc pr_params[] = {
    [PR_ROWS] = { "rows", NULL, 1, MXMV_ROWS_PICK }, [PR_COLS] = { "cols", NULL, 1, MXMV_COLS_PICK },
    [PR_NORM] = { "norm", pr_norms, 1, "0 0 1" }, [PR_STAGES] = { "stages", pr_stages, 1, "*" },
    [PR_BLOCK] = { "block", NULL, 1, "64 128 256 256 512" }, [PR_BDIM] = { "bdim", NULL, 1, "0..6" },
    [PR_MVBLOCK] = { "mv_block", NULL, 0, "64 128 256 256 512" }, [PR_REDUCE] = { "reduce", pl_reduces, 0, "*" },
    [PR_DIMS] = { "dims", NULL, 0, "0..3" }, [PR_KNAME] = { "kname", NULL, 0, "0..3" },
    [PR_NAMES] = { "names", NULL, 0, "0..3" }, [PR_TNAME] = { "tname", NULL, 0, "0..2" },
    [PR_DNAMES] = { "dnames", NULL, 0, "0..3" }, [PR_NP] = { NULL } };

static void pr_draw(Task *t, Rng *r) {
    static const char *const names[] = { "A x A_norm y", "mat vec mat_normed out", "W v W_hat result",
                                         "data query unit_rows scores" };
    // by the number of stages: three kernels, or two
    static const char *const kn[2][4] = {
        { "row_norms scale_rows matvec", "rowNormsWarp scaleRows matVec", "compute_row_norms divide_rows gemv_rows",
          "row_norm_kernel row_scale_kernel matvec_kernel" },
        { "normalize_rows matvec_warp", "normalizeRows matVecWarp", "row_normalize gemv_warp",
          "normalize_rows_kernel warp_matvec" } };
    long size = (long)t->p[PR_ROWS] * t->p[PR_COLS];
    while (t->p[PR_COLS] < 64 || size < 8192 || size > 2100000) { // at least 64 columns, 8192 to 2.1M elements
        t->p[PR_ROWS] = param_pick(&t->fam->ip[PR_ROWS], r);
        t->p[PR_COLS] = param_pick(&t->fam->ip[PR_COLS], r);
        size = (long)t->p[PR_ROWS] * t->p[PR_COLS];
    }
    if (t->p[PR_STAGES]) t->p[PR_BDIM] = 0; // no 2-D kernel
    else t->p[PR_REDUCE] = 0;               // no block reduction
    task_names(t, 2, names[t->p[PR_NAMES]], kn[t->p[PR_STAGES]][t->p[PR_KNAME]], "rownorm_matvec");
}
static void pr_layout(Task *t) {
    long R = t->p[PR_ROWS], C = t->p[PR_COLS];
    mx_begin(t, 2, mx_dnames[t->p[PR_DNAMES]], R, C, 0);
    t->nout = 2; // the normalized matrix and y
    mx_f32(&t->in[0], R, C, 0, 1, 1);
    mx_f32(&t->in[1], C, 0, 1, -1, 1);
    mx_f32(&t->out[0], R, C, 0, 1, 0);
    mx_f32(&t->out[1], R, 0, 0, -1, 0);
    t->need_math = 1;
    // the normalized entries carry the relative error of the row's float norm; y is a
    // float sum of C products whose size is about 3.5 / sqrt(C) (L2) or 4 / C (L1)
    mx_sum_tol(t, C, t->p[PR_NORM] == 0 ? 3.5 / sqrt((double)C) : 4.0 / (double)C);
    t->rtol = mx_red_rel(C) + 1e-5;
}
static void pr_describe(const Task *t, Buf *name, Buf *desc) {
    const char *A = t->in[0].name, *x = t->in[1].name, *An = t->out[0].name, *y = t->out[1].name;
    int R = t->p[PR_ROWS], C = t->p[PR_COLS];
    buf_puts(name, pick3(t->p[PR_TNAME], "Row_Normalize_Then_Matvec", "Normalized_Rows_Times_Vector",
                         t->p[PR_NORM] ? "L1_Row_Normalize_Matvec" : "Cosine_Scores_Pipeline"));
    buf_put_line(desc, FRAG("$A is $a_R x $C row-major float32 matrix and $x a vector of $C. First divide each row of "
                            "$A by its $norm norm and store the result in $An ($R x $C); then compute $y = $An * $x "
                            "($y[r] = sum over c of $An[r][c] * $x[c]) from $An with a separate kernel.",
                            "A", A, "An", An, "x", x, "y", y, "R", fmt("%d", R), "a_R", a_num(R), "C", fmt("%d", C),
                            "norm", t->p[PR_NORM] ? "L1 (sum of absolute values)" : "L2 (Euclidean)"));
    buf_puts(desc, t->p[PR_STAGES] ? " Use two kernels: one block per row reduces the row's norm and scales the row, "
                                     "then a matrix-vector kernel with one warp per row and shuffle reductions."
                                   : " Use three kernels: row norms (one warp per row, shuffle reduction) into a "
                                     "scratch buffer, a 2-D (dim3) kernel that scales every element, and a "
                                     "matrix-vector kernel with one thread per row.");
}

// Three kernels (warp-per-row norms, 2-D scale, thread-per-row matvec), or two (block-per-row
// normalize, warp-per-row matvec).
static const char *const pr_kernels_tpl[] = { R"(
/// Kernel 1: norms[r] = the $L norm of row r of $A; one warp per row.
__global__ void $k1($Ap, $normsp, int $R, int $C) {
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= $R) return;
    const float *arow = $A + (size_t)row * $C;
    float s = 0.0f;
    for (int c = lane; c < $C; c += 32) s += $term;
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffff, s, offset);
    if (lane == 0) norms[row] = $fin;
}

/// Kernel 2: $An[r][c] = $A[r][c] / norms[r] on a 2-D grid.
__global__ void $k2($Ap, $normscp, $Anp, int $R, int $C) {
    $index
    if (row < $R && col < $C) $An[row * $C + col] = $A[row * $C + col] / norms[row];
}

/// Kernel 3: $y = $An * $x, one thread per row.
__global__ void $k3($Ancp, $xp, $yp, int $R, int $C) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= $R) return;
    float acc = 0.0f;
    for (int c = 0; c < $C; ++c) acc += $An[(size_t)row * $C + c] * $x[c];
    $y[row] = acc;
}
)", R"(
#define BLOCK_SIZE $B

$bsum_fn
/// Kernel 1: one block per row: reduce the row's $L norm, then scale the row into $An.
__global__ void $k1($Ap, $Anp, int $R, int $C) {
    __shared__ float row_norm;
    const int row = blockIdx.x;
    const float *arow = $A + (size_t)row * $C;
    float s = 0.0f;
    for (int c = threadIdx.x; c < $C; c += blockDim.x) s += $term;
    s = $bsum(s);
    if (threadIdx.x == 0) row_norm = $fin;
    __syncthreads();
    for (int c = threadIdx.x; c < $C; c += blockDim.x) $An[(size_t)row * $C + c] = arow[c] / row_norm;
}

/// Kernel 2: $y = $An * $x, one warp per row with a shuffle reduction.
__global__ void $k2($Ancp, $xp, $yp, int $R, int $C) {
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= $R) return;
    float acc = 0.0f;
    for (int c = lane; c < $C; c += 32) acc += $An[(size_t)row * $C + c] * $x[c];
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffff, acc, offset);
    if (lane == 0) $y[row] = acc;
}
)" };
static void pr_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[PR_DNAMES]];
    const char *A = t->in[0].name, *x = t->in[1].name, *An = t->out[0].name, *y = t->out[1].name;
    int l1 = t->p[PR_NORM] == 1;
    TPL(e, t, pr_kernels_tpl[t->p[PR_STAGES]], "L", l1 ? "L1" : "L2", "A", A, "An", An, "x", x, "y", y, "R", dn[0],
        "C", dn[1], "k1", t->kname[0], "k2", t->kname[1], "k3", t->kname[2], "Ap", pl_fptr(t, A, 1),
        "Anp", pl_fptr(t, An, 0), "Ancp", pl_fptr(t, An, 1), "xp", pl_fptr(t, x, 1), "yp", pl_fptr(t, y, 0),
        "normsp", pl_fptr(t, "norms", 0), "normscp", pl_fptr(t, "norms", 1),
        "term", l1 ? "fabsf(arow[c])" : "arow[c] * arow[c]", "fin", l1 ? "s" : "sqrtf(s)",
        "index", mx_index2d(t, "row", "col", 0), "B", fmt("%d", t->p[PR_BLOCK]), "bsum_fn", pl_block_reduce(t, 0),
        "bsum", pl_reduce_name(t, 0));
}
// The launches: two kernels (normalize each row in one block, then the product), or three
// (the norms, the scaling on a 2-D grid, the product).
static const char pr_fused_launch_tpl[] = R"(
$k1<<<$R, BLOCK_SIZE>>>($A, $An, $R, $C);
const int rows_per_block = $rpb;
$k2<<<($R + rows_per_block - 1) / rows_per_block, rows_per_block * 32>>>($An, $x, $y, $R, $C);
)";
static const char pr_norms_launch_tpl[] = R"(
$alloc
const int warp_blocks = ($R * 32 + $B - 1) / $B;
$k1<<<warp_blocks, $B>>>($A, $norms, $R, $C);
)";
static const char pr_product_launch_tpl[] = R"(
$k3<<<($R + $MB1) / $MB, $MB>>>($An, $x, $y, $R, $C);
$free
)";
static void pr_launch(const Task *t, Emit *e, const Host *h) {
    const char *R = h->size[0], *C = h->size[1], *A = h->in[0], *x = h->in[1], *An = h->out[0], *y = h->out[1];
    int B = t->p[PR_BLOCK], MB = t->p[PR_MVBLOCK];
    if (t->p[PR_STAGES]) {
        TPL(e, t, pr_fused_launch_tpl, "k1", t->kname[0], "k2", t->kname[1], "R", R, "C", C, "A", A, "An", An, "x", x,
            "y", y, "rpb", fmt("%d", MB / 32));
        return;
    }
    const char *nm = dname(t, "norms");
    TPL(e, t, pr_norms_launch_tpl, "alloc", dev_alloc(t, "float", nm, R), "R", R, "C", C, "B", fmt("%d", B),
        "k1", t->kname[0], "A", A, "norms", nm);
    mx_launch_bd(e, t, t->p[PR_BDIM], (Launch2D){ .dims = t->p[PR_DIMS], .k = t->kname[1], .xc = C, .yc = R,
                                                  .args = fmt("%s, %s, %s, %s, %s", A, nm, An, R, C) });
    TPL(e, t, pr_product_launch_tpl, "k3", t->kname[2], "R", R, "C", C, "MB1", fmt("%d", MB - 1), "MB", fmt("%d", MB),
        "An", An, "x", x, "y", y, "free", sync_free(t, nm, NULL));
}
static void pr_ref(const Task *t, const void *const *in, void *const *out) {
    const float *A = in[0], *x = in[1];
    float *An = out[0], *y = out[1];
    long R = t->p[PR_ROWS], C = t->p[PR_COLS];
    for (long r = 0; r < R; r++) {
        double s = 0;
        for (long c = 0; c < C; c++) s += t->p[PR_NORM] ? fabs(A[r * C + c]) : (double)A[r * C + c] * A[r * C + c];
        double nrm = t->p[PR_NORM] ? s : sqrt(s), acc = 0;
        for (long c = 0; c < C; c++) {
            An[r * C + c] = (float)(A[r * C + c] / nrm);
            acc += (double)An[r * C + c] * x[c]; // the GPU multiplies the stored floats
        }
        y[r] = (float)acc;
    }
}
static const Family fam_pl_rownorm_mv = {
    "pipeline_rownorm_matvec",
    "normalize matrix rows (L2 / L1), then y = A_norm x: norms + 2-D scale + thread-"
    "per-row matvec, or block-per-row normalize + warp matvec",
    pr_params, NULL, pr_draw, pr_layout, pr_describe, pr_kernels, pr_launch, pr_ref };

static const Family *const families_pipeline[] = { &fam_pl_standardize, &fam_pl_softmax, &fam_pl_saxpy_norm,
                                                   &fam_pl_rownorm_mv, NULL };
