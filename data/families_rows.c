// families_rows.c - one matrix row per thread block, warp or thread: softmax (two-pass or
// online), log-softmax, LayerNorm, RMSNorm, row mean and variance (two-pass, sum of squares,
// Welford), argmin per row, top-k per row, row-wise cumulative sums. Included by corpus.c.
//
// The families share their first parameters (RO_PARAMS) and the pieces of their kernels: a
// row is handled by one block (a shared-memory tree, or warp shuffles plus per-warp partials
// in shared memory), by one warp (__shfl_xor_sync butterflies, or __shfl_down_sync and a
// broadcast), or by one thread. Families over a 1-D array (dot_atomic in families_reduce.c,
// argmax_array in families_select.c) use the same pieces on one block or warp of their
// grid: ro_as_block.
//
// Tolerances. Expected outputs are computed in double. A float sum of n terms in another
// order is off by about u*sqrt(n)/3 relative to the sum for positive terms (u = 2^-24,
// rounding errors as a random walk), so ro_sum_rel allows 2e-7*sqrt(n) + 1e-6 (about ten of
// those standard deviations). Selections (min, top-k) and integer sums are exact.

#define RO_LOWEST "-3.402823466e+38f"
#define RO_HIGHEST "3.402823466e+38f"
#define RO_INT_MIN "(-2147483647 - 1)"
#define RO_INT_MAX "2147483647"

// Relative error allowed for a float sum of n positive terms in any order.
static double ro_sum_rel(long n) { return 1e-6 + 2e-7 * sqrt((double)n); }
// Relative error of expf/__expf/exp2f-based exponentials of arguments up to span in
// magnitude (__expf: 2 + 1.16*|x| ulp), in float ulps of 2^-23.
static double ro_exp_rel(double span) { return (4 + 1.2 * span) * 1.2e-7; }

enum { RO_BLOCK, RO_WARP, RO_THREAD };
static const char *const ro_maps[] = { "block_per_row", "warp_per_row", "thread_per_row", NULL };
enum { RO_TREE, RO_XOR, RO_DOWN };
static const char *const ro_reds[] = { "tree", "shfl_xor", "shfl_down", NULL };
enum { RO_DEFINE, RO_TEMPLATE, RO_DYNAMIC };
static const char *const ro_shmems[] = { "define", "template", "dynamic", NULL };
static const char *const ro_dtypes[] = { "float32", "int32", NULL };
enum { RO_SUM, RO_MAX, RO_MIN };

// The parameters every row family starts with (maps: the pick of the mapping); the
// family's own follow from RP_X on. block, reduce, shmem and helper follow the mapping
// (ro_draw).
enum { RP_ROWS, RP_COLS, RP_MAP, RP_BLOCK, RP_RED, RP_SHMEM, RP_HELPER, RP_MASK, RP_KNAME, RP_NAMES, RP_TNAME, RP_X };
#define RO_PARAMS(maps)                                                                      \
    [RP_ROWS] = { "rows", NULL, 1, "64 128 256 500 1000 2048 4096" },                        \
    [RP_COLS] = { "cols", NULL, 1, "32 64 100 128 256 500 768 1000 1024 2048 4096" },        \
    [RP_MAP] = { "map", ro_maps, 1, maps }, [RP_BLOCK] = { "block", NULL, 1, NULL },         \
    [RP_RED] = { "reduce", ro_reds, 1, NULL }, [RP_SHMEM] = { "shmem", ro_shmems, 0, NULL }, \
    [RP_HELPER] = { "helper", NULL, 0, NULL }, [RP_MASK] = { "mask", NULL, 0, "0..2" },      \
    [RP_KNAME] = { "kname", NULL, 0, "0..3" }, [RP_NAMES] = { "names", NULL, 0, "0..3" },    \
    [RP_TNAME] = { "tname", NULL, 0, "0..2" }

static int ro_map(const Task *t) { return t->p[RP_MAP]; }
static int ro_tree(const Task *t) { return t->p[RP_MAP] == RO_BLOCK && t->p[RP_RED] == RO_TREE; }
static int ro_shuffles(const Task *t) { return t->p[RP_MAP] != RO_THREAD && t->p[RP_RED] != RO_TREE; }
// Whether the row reduces through a shared-memory tree sized as shmem says (RO_DEFINE:
// BLOCK_SIZE, RO_TEMPLATE: the template parameter BLOCK, RO_DYNAMIC: blockDim.x, dynamic).
static int ro_tree_shmem(const Task *t, int shmem) { return ro_tree(t) && t->p[RP_SHMEM] == shmem; }
// The intrinsic that shuffle reductions combine lanes with.
static const char *ro_shfl_fn(const Task *t) {
    return t->p[RP_RED] == RO_DOWN ? "__shfl_down_sync" : "__shfl_xor_sync";
}

// After params_draw: rows x cols at most maxprod, and what follows from the mapping.
// tree_only: block mappings always use the shared-memory tree.
static void ro_draw(Task *t, Rng *r, long maxprod, int tree_only) {
    params_redraw(t, r, RP_ROWS, RP_COLS, 0, maxprod);
    int m = t->p[RP_MAP];
    t->p[RP_BLOCK] = rng_pick(r, m == RO_BLOCK ? "64 128 256 512 1024" : m == RO_WARP ? "32 64 128 256" : "64 128 256");
    while (m == RO_BLOCK && t->p[RP_BLOCK] > 64 && t->p[RP_BLOCK] >= 2 * t->p[RP_COLS]) t->p[RP_BLOCK] /= 2;
    t->p[RP_RED] = m == RO_THREAD || (m == RO_BLOCK && tree_only) ? RO_TREE : rng_int(r, m == RO_WARP, 2);
    t->p[RP_SHMEM] = ro_tree(t) ? rng_int(r, 0, 2) : RO_DEFINE;
    t->p[RP_HELPER] = m == RO_BLOCK ? !ro_tree(t) : m == RO_WARP ? rng_int(r, 0, 1) : 0;
}

// A copy of a 1-D family's task whose RP_* slots describe one block (or warp) of its grid,
// so that it can use the row pieces below (helpers, all-reduces, shared arrays, prelude).
static Task ro_as_block(const Task *t, int map, int block, int red, int mask, int kname) {
    Task tt = *t;
    tt.p[RP_MAP] = map;
    tt.p[RP_BLOCK] = block;
    tt.p[RP_RED] = red;
    tt.p[RP_SHMEM] = RO_DEFINE;
    tt.p[RP_HELPER] = map == RO_WARP || red != RO_TREE;
    tt.p[RP_MASK] = mask;
    tt.p[RP_KNAME] = kname;
    tt.p[RP_NAMES] = 0;
    return tt;
}

// Names: tensors from a row of the family's names table, the kernel (and a helper) from
// its kernel names table, both rows chosen by parameters (task_names).
static void ro_names(Task *t, int nin, const char *const *names, const char *const *kernels, const char *slug) {
    task_names(t, nin, names[t->p[RP_NAMES]], kernels[t->p[RP_KNAME]], slug);
}

// Input 0 is rows x cols (size constants 0 and 1); outputs: whole rows (matrix) or one
// value per row.
static void ro_layout(Task *t, int nin, int nout, DType dt) {
    t->nin = nin;
    t->nout = nout;
    int rr = add_size(t, "rows", t->p[RP_ROWS]), cc = add_size(t, "cols", t->p[RP_COLS]);
    tshape(&t->in[0], dt, 2, t->p[RP_ROWS], t->p[RP_COLS], rr, cc);
}
static void ro_out_matrix(Task *t, DType dt) { tshape(&t->out[0], dt, 2, t->p[RP_ROWS], t->p[RP_COLS], 0, 1); }
static void ro_out_rows(Task *t, Tensor *x, DType dt) { tshape(x, dt, 1, t->p[RP_ROWS], 0, 0, -1); }

// How a row is mapped, for task descriptions.
static const char *ro_map_desc(const Task *t) {
    if (ro_map(t) == RO_THREAD) return "Use one thread per row.";
    if (ro_tree(t))
        return fmt("Use one thread block of %d threads per row, reducing through a shared-memory tree.",
                   t->p[RP_BLOCK]);
    if (ro_map(t) == RO_BLOCK)
        return fmt("Use one thread block of %d threads per row, reducing with %s inside each warp and shared memory "
                   "across warps.", t->p[RP_BLOCK], ro_shfl_fn(t));
    return fmt("Use one warp per row (%d warp%s per block), reducing across lanes with %s.", t->p[RP_BLOCK] / 32,
               t->p[RP_BLOCK] > 32 ? "s" : "", ro_shfl_fn(t));
}
// The same in a few words, for kernel comments.
static const char *ro_how(const Task *t) {
    return pick3(ro_map(t), "one block per row", "one warp per row", "one thread per row");
}
// The Task Name (title), and the first sentence of the description: "X is a R x C row-major
// <what> in [lo, hi)", the range closed for whole numbers.
static void ro_intro(Buf *name, Buf *desc, const Task *t, const char *title, const char *what) {
    buf_puts(name, title);
    const Tensor *x = &t->in[0];
    buf_printf(desc, "%s is %s x %d row-major %s in [%s, %s%s. ", x->name, a_num(t->p[RP_ROWS]), t->p[RP_COLS], what,
               fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")");
}

// CPU references: element k of a float32 or int32 array (exact in double), and a store.
static double ro_get(const void *p, int is_int, long k) { // (each branch a double: int ? int : float is a float)
    return is_int ? (double)((const int *)p)[k] : (double)((const float *)p)[k];
}
static void ro_put(void *p, int is_int, long k, double v) {
    if (is_int) ((int *)p)[k] = wrap_i32(v);
    else ((float *)p)[k] = (float)v;
}
// The mean of a row (0 without with_mean) and the sum of squared deviations from it, in double.
static double ro_moments(const float *xr, long C, int with_mean, double *m2) {
    double mu = 0;
    for (long c = 0; c < C && with_mean; c++) mu += xr[c];
    mu /= (double)C;
    *m2 = 0;
    for (long c = 0; c < C; c++) *m2 += ((double)xr[c] - mu) * ((double)xr[c] - mu);
    return mu;
}

// ----------------------------------------------------------------------------
// Kernel pieces

static const char *ro_mask(const Task *t) { return pick3(t->p[RP_MASK], "0xffffffff", "0xffffffffu", "FULL_MASK"); }
// The threads per block in kernel code.
static const char *ro_B(const Task *t) {
    return !ro_tree(t) ? "blockDim.x" : pick3(t->p[RP_SHMEM], "BLOCK_SIZE", "BLOCK", "blockDim.x");
}
// The #defines the kernels need: FULL_MASK, BLOCK_SIZE (a fragment, "" for none).
static const char *ro_prelude(const Task *t) {
    const char *mask = ro_shuffles(t) && t->p[RP_MASK] == 2 ? "#define FULL_MASK 0xffffffffu\n" : "";
    const char *bs = ro_tree_shmem(t, RO_DEFINE) ? fmt("#define BLOCK_SIZE %d\n", t->p[RP_BLOCK]) : "";
    return *mask || *bs ? fmt("%s%s\n", mask, bs) : "";
}
static const char *ro_opname(int op) { return pick3(op, "sum", "max", "min"); }
static const char *ro_argname(int dir) { return dir == RO_MAX ? "argmax" : "argmin"; }
static const char *ro_comb(int op, const char *a, const char *b) {
    return op == RO_SUM ? fmt("%s + %s", a, b) : fmt("%s(%s, %s)", op == RO_MAX ? "fmaxf" : "fminf", a, b);
}
static const char *ro_identity(int op) { return pick3(op, "0.0f", RO_LOWEST, RO_HIGHEST); }
// Helper names in the kernel name's spelling: warp_reduce_sum, warpReduceSum, warp_allsum.
static const char *ro_fn(const Task *t, const char *scope, const char *what) {
    int k = t->p[RP_KNAME] % 3;
    const char *w = k == 1 ? fmt("%c%s", what[0] - 32, what + 1) : what; // camel case: Sum
    return fmt(pick3(k, "%s_reduce_%s", "%sReduce%s", "%s_all%s"), scope, w);
}

// A shuffle loop over offsets 16..1 around step (reduce_warp and matvec_warp_per_row use it
// too).
static const char ro_shfl_loop_tpl[] = R"(
#pragma unroll
for (int offset = 16; offset > 0; offset >>= 1) {
    $step
}
)";
// The loop; with __shfl_down_sync lane 0 ends with the result and broadcasts v (and i,
// unless NULL) to the warp.
static const char *ro_shfl(const Task *t, const char *step, const char *v, const char *i) {
    int down = t->p[RP_RED] == RO_DOWN;
    const char *bv = down ? fmt("%s = __shfl_sync(%s, %s, 0);", v, ro_mask(t), v) : "";
    const char *bi = down && i ? fmt("%s = __shfl_sync(%s, %s, 0);", i, ro_mask(t), i) : "";
    const char *loop = FRAG(ro_shfl_loop_tpl, "step", step);
    return FRAG("$loop\n$bcast_v\n$bcast_i", "loop", loop, "bcast_v", bv, "bcast_i", bi);
}
// One combining step of v with the lane offset away.
static const char *ro_step(const Task *t, const char *v, int op) {
    const char *o = fmt("%s(%s, %s, offset)", ro_shfl_fn(t), ro_mask(t), v);
    return op == RO_SUM ? fmt("%s += %s;", v, o) : fmt("%s = %s;", v, ro_comb(op, v, o));
}

// Arg reductions: the pair (v, i) with the best value, the lowest index on ties.
static const char *ro_better(int dir, const char *ov, const char *oi, const char *v, const char *i) {
    return fmt("%s %s %s || (%s == %s && %s < %s)", ov, dir == RO_MAX ? ">" : "<", v, ov, v, oi, i);
}
static const char *ro_arg_identity(int dir, const char *vt) {
    if (strcmp(vt, "int") == 0) return dir == RO_MAX ? RO_INT_MIN : RO_INT_MAX;
    return dir == RO_MAX ? RO_LOWEST : RO_HIGHEST;
}
static const char ro_arg_step_tpl[] = R"(
const $T ov = $fn($mask, $v, offset);
const int oi = $fn($mask, $i, offset);
if ($better) {
    $v = ov;
    $i = oi;
}
)";
static const char *ro_arg_step(const Task *t, const char *T, const char *v, const char *i, int dir) {
    return FRAG(ro_arg_step_tpl, "T", T, "fn", ro_shfl_fn(t), "mask", ro_mask(t), "v", v, "i", i,
                "better", ro_better(dir, "ov", "oi", v, i));
}

// The __device__ helpers of shuffle reductions: a warp all-reduce, and for block mappings
// the block all-reduce built on it (per-warp results through shared memory).
static const char ro_warp_fn_tpl[] = R"(
/// Warp-wide $what: $how
$spec $name($params) {
    $shuffle
    $ret
}

)";
static const char ro_block_fn_tpl[] = R"(
/// Block-wide $what: each warp reduces with shuffles, the warps' results meet in shared memory,
/// all threads get the result.
__device__ $type $name($params) {
    __shared__ $T warp_val[32];
    $shared_idx
    const int lane = threadIdx.x & 31;
    const int wid = threadIdx.x >> 5;
    $warp_call
    if (lane == 0) {
        warp_val[wid] = v;
        $store_idx
    }
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    v = lane < nwarps ? warp_val[lane] : $identity;
    $load_idx
    $warp_call
    //? the shared array is reused by the next call: wait until everyone has read it
    __syncthreads();
    $ret
}

)";
// Whether the kernel calls helpers: block mappings that shuffle always, warp mappings by choice.
static int ro_has_helpers(const Task *t) { return ro_shuffles(t) && (ro_map(t) == RO_BLOCK || t->p[RP_HELPER]); }
// The helpers of the reductions ops (a bit mask of 1 << RO_*) of float values: the warp
// all-reduces, then for block mappings the block all-reduces that call them.
static const char *ro_helpers(const Task *t, int ops) {
    if (!ro_has_helpers(t)) return "";
    const char *how = t->p[RP_RED] == RO_DOWN ? "a __shfl_down_sync tree, then lane 0 broadcasts it."
                                               : "a __shfl_xor_sync butterfly; every lane ends with it.";
    const char *spec = t->p[RP_KNAME] & 1 ? "__inline__ __device__ float" : "__device__ __forceinline__ float";
    Buf b = { 0 };
    for (int op = 0; op < 3; op++)
        if ((ops >> op) & 1)
            buf_puts(&b, FRAG(ro_warp_fn_tpl, "what", ro_opname(op), "how", how, "spec", spec,
                              "name", ro_fn(t, "warp", ro_opname(op)), "params", "float v",
                              "shuffle", ro_shfl(t, ro_step(t, "v", op), "v", NULL), "ret", "return v;"));
    for (int op = 0; op < 3 && ro_map(t) == RO_BLOCK; op++)
        if ((ops >> op) & 1)
            buf_puts(&b, FRAG(ro_block_fn_tpl, "what", ro_opname(op), "type", "float", "T", "float",
                              "name", ro_fn(t, "block", ro_opname(op)), "params", "float v", "shared_idx", "",
                              "store_idx", "", "load_idx", "", "identity", ro_identity(op),
                              "warp_call", fmt("v = %s(v);", ro_fn(t, "warp", ro_opname(op))), "ret", "return v;"));
    const char *s = FRAG("$s", "s", buf_str(&b));
    buf_free(&b);
    return s;
}
// The same for (value, index) pairs of type T, best in direction dir.
static const char *ro_arg_helpers(const Task *t, const char *T, int dir) {
    if (!ro_has_helpers(t)) return "";
    const char *what = ro_argname(dir), *wn = ro_fn(t, "warp", what), *params = fmt("%s &v, int &i", T);
    const char *w = FRAG(ro_warp_fn_tpl, "what", fmt("%s of (v, i) pairs", what),
                         "how", "the lower index wins ties; all lanes end with it.", "name", wn,
                         "spec", "__device__ __forceinline__ void", "params", params,
                         "shuffle", ro_shfl(t, ro_arg_step(t, T, "v", "i", dir), "v", "i"), "ret", "");
    if (ro_map(t) != RO_BLOCK) return w;
    const char *b = FRAG(ro_block_fn_tpl, "what", what, "type", "void", "T", T, "name", ro_fn(t, "block", what),
                         "params", params, "shared_idx", "__shared__ int warp_idx[32];",
                         "store_idx", "warp_idx[wid] = i;",
                         "load_idx", "i = lane < nwarps ? warp_idx[lane] : " RO_INT_MAX ";",
                         "identity", ro_arg_identity(dir, T), "warp_call", fmt("%s(v, i);", wn), "ret", "");
    return FRAG("$w$b", "w", w, "b", b);
}

// A shared-memory tree over the block's threads: store puts this thread's value(s) in the
// shared arrays, step merges element tid + s into element tid, load reads the result.
static const char ro_tree_tpl[] = R"(
$store
__syncthreads();
for (int s = $B / 2; s > 0; s >>= 1) {
    $step
    __syncthreads();
}
$load
)";
static const char *ro_tree_frag(const Task *t, const char *store, const char *step, const char *load) {
    return FRAG(ro_tree_tpl, "B", ro_B(t), "store", store, "step", step, "load", load);
}
static const char ro_arg_tree_step_tpl[] = R"(
if (tid < s) {
    const $T ov = sval[tid + s];
    const int oi = sidx[tid + s];
    if ($better) {
        sval[tid] = ov;
        sidx[tid] = oi;
    }
}
)";
// All-reduce over a row's threads. With i NULL: of v with op (block trees use sdata[]);
// otherwise of the pair (v, i) of type T, best in direction op (block trees use sval[] and
// sidx[]). Shuffles inline, or a call of the helper (ro_helpers, ro_arg_helpers).
static const char *ro_arg_allreduce(const Task *t, const char *T, const char *v, const char *i, int op) {
    if (ro_map(t) == RO_THREAD) return "";
    if (ro_tree(t) && i)
        return ro_tree_frag(t, fmt("sval[tid] = %s;\nsidx[tid] = %s;", v, i),
                            FRAG(ro_arg_tree_step_tpl, "T", T,
                                 "better", ro_better(op, "ov", "oi", "sval[tid]", "sidx[tid]")),
                            fmt("%s = sval[0];\n%s = sidx[0];\n__syncthreads();", v, i));
    if (ro_tree(t))
        return ro_tree_frag(t, fmt("sdata[tid] = %s;", v),
                            fmt("if (tid < s) sdata[tid] = %s;", ro_comb(op, "sdata[tid]", "sdata[tid + s]")),
                            fmt("%s = sdata[0];\n__syncthreads();", v));
    if (ro_map(t) == RO_WARP && !t->p[RP_HELPER])
        return ro_shfl(t, i ? ro_arg_step(t, T, v, i, op) : ro_step(t, v, op), v, i);
    const char *fn = ro_fn(t, ro_map(t) == RO_BLOCK ? "block" : "warp", i ? ro_argname(op) : ro_opname(op));
    return i ? fmt("%s(%s, %s);", fn, v, i) : fmt("%s = %s(%s);", v, fn, v);
}
static const char *ro_allreduce(const Task *t, const char *v, int op) {
    return ro_arg_allreduce(t, "float", v, NULL, op);
}

// A row kernel (emit_kernel): the prelude and helpers, the signature (the tensors, rows,
// cols, then extra: "" or ", int k"), the shared arrays, the row (and tid or lane) of this
// thread, the body. shared: the element type of sdata[] ("" none), or "arg:T" for the pair
// arrays sval (T) and sidx (int); a declaration of its own otherwise.
static const char *const ro_index_tpl[] = { R"(
const int row = blockIdx.x;
const int tid = threadIdx.x;
)", R"(
const int row = $warp_row;
const int lane = threadIdx.x $lane;
if (row >= rows) return; // the whole warp leaves together
)", R"(
const int row = $gidx;
if (row >= rows) return;
)" };
static const char *ro_shared(const Task *t, const char *shared) {
    if (!ro_tree(t) || !*shared) return "";
    const char *B = ro_B(t);
    int dyn = t->p[RP_SHMEM] == RO_DYNAMIC, arg = strncmp(shared, "arg:", 4) == 0;
    const char *T = arg ? shared + 4 : shared;
    if (arg && dyn)
        return fmt("extern __shared__ int smem_raw[];\n%s *sval = (%s *)smem_raw;\nint *sidx = smem_raw + blockDim.x;",
                   T, T);
    if (arg) return fmt("__shared__ %s sval[%s];\n__shared__ int sidx[%s];", T, B, B);
    if (strchr(shared, ';')) return shared;
    return dyn ? fmt("extern __shared__ %s sdata[];", shared) : fmt("__shared__ %s sdata[%s];", shared, B);
}
static void ro_kernel(Emit *e, const Task *t, const char *helpers, const char *comment, const char *extra,
                      const char *shared, const char *body) {
    const char *warp_row = t->p[RP_KNAME] & 1 ? "blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32"
                                              : "(blockIdx.x * blockDim.x + threadIdx.x) / 32";
    const char *index = FRAG(ro_index_tpl[ro_map(t)], "gidx", gidx_expr(t, 0),
                             "lane", t->p[RP_NAMES] & 1 ? "& 31" : "% 32", "warp_row", warp_row);
    const char *tmpl = ro_tree_shmem(t, RO_TEMPLATE) ? "template <int BLOCK>" : "";
    emit_kernel(e, t, FRAG("$prelude\n$helpers", "prelude", ro_prelude(t), "helpers", helpers), tmpl, comment,
                fmt("int rows, int cols%s", extra),
                FRAG("$shared\n$index\n$body", "shared", ro_shared(t, shared), "index", index, "body", body));
}
// The body of a row kernel: the row's pointers (yr where the output is a matrix), the
// statistics, then the writes (a kernel that computes and writes in one loop, the
// cumulative sum, passes it all as stats).
static const char ro_body_tpl[] = R"(
const $T *xr = $x + (size_t)row * cols;
$yr
$stats
$scale
$write
$save
)";
static const char *ro_body(const Task *t, const char *stats, const char *scale, const char *write, const char *save) {
    const Tensor *y = &t->out[0];
    const char *yr = y->ndim == 2 ? fmt("%s *yr = %s + (size_t)row * cols;", dt_ctypes[y->dt], y->name) : "";
    return FRAG(ro_body_tpl, "T", dt_ctypes[t->in[0].dt], "x", t->in[0].name, "yr", yr, "stats", stats, "scale", scale,
                "write", write, "save", save);
}
// for (int c = first; c < cols; c += stride) { body }
static const char *ro_cols(const Task *t, const char *body) {
    const char *head = ro_map(t) == RO_THREAD ? "for (int c = 0; c < cols; c++) {"
                       : fmt("for (int c = %s; c < cols; c += %s) {", ro_map(t) == RO_BLOCK ? "tid" : "lane",
                             ro_map(t) == RO_BLOCK ? ro_B(t) : "32");
    return FRAG("$head\n    $body\n}", "head", head, "body", body);
}
// body done by the thread that writes a row's scalar results.
static const char *ro_lead(const Task *t, const char *body) {
    if (ro_map(t) == RO_THREAD) return body;
    return FRAG("if ($lead) {\n    $body\n}", "lead", ro_map(t) == RO_BLOCK ? "tid == 0" : "lane == 0", "body", body);
}
// The launch of a row kernel, one block per row in two spellings. smem: the dynamic shared
// bytes per thread ("sizeof(float)"), for dynamic shared trees.
static const char *const ro_launch_tpl[] = { R"(
const int threads = $threads;
$smem
//? one block per row
$k<<<$rows, threads$sm>>>($args);
)", R"(
const int threads = $threads;
$smem
dim3 grid($rows);
dim3 block(threads);
$k<<<grid, block$sm>>>($args);
)" };
// One warp per row, in two spellings: a grid of blocks of $block threads, or $warps warps a
// block. reduce_warp and matvec_warp_per_row launch their warps per row so too.
static const char *const ro_warp_launch_tpl[] = { R"(
dim3 block($block);
dim3 grid(($rows * 32 + block.x - 1) / block.x);
$k<<<grid, block>>>($args);
)", R"(
const int warps_per_block = $warps;
const int blocks = ($rows + warps_per_block - 1) / warps_per_block;
$k<<<blocks, warps_per_block * 32>>>($args);
)" };
static void ro_launch(Emit *e, const Task *t, const Host *h, const char *args, const char *smem) {
    int B = t->p[RP_BLOCK], dyn = ro_tree_shmem(t, RO_DYNAMIC);
    if (ro_map(t) == RO_THREAD) {
        launch_1d(e, t, t->kname[0], h->size[0], B, 0, args);
        return;
    }
    const char *tpl = ro_map(t) == RO_WARP ? ro_warp_launch_tpl[t->st.cfg & 1] : ro_launch_tpl[!(t->st.cfg & 1)];
    TPL(e, t, tpl, "rows", h->size[0], "args", args, "block", fmt("%d", B),
        "warps", fmt("%d", B / 32), "threads", ro_tree_shmem(t, RO_DEFINE) ? "BLOCK_SIZE" : fmt("%d", B),
        "k", ro_tree_shmem(t, RO_TEMPLATE) ? fmt("%s<%d>", t->kname[0], B) : t->kname[0],
        "smem", dyn ? fmt("const size_t smem = threads * %s;", smem) : "", "sm", dyn ? ", smem" : "");
}

// The launch of a kernel whose arguments are the tensors, rows and cols, with a float per
// thread of dynamic shared memory.
static void ro_launch_float(const Task *t, Emit *e, const Host *h) {
    ro_launch(e, t, h, kernel_args(h, 2), "sizeof(float)");
}

// ----------------------------------------------------------------------------
// Softmax and log-softmax per row (three families on one writer)

enum { SM_EXP = RP_X, SM_STORE, SM_RANGE, SM_ALGO, SM_VARS, SM_LOG, SM_NP };
static const char *const sm_exps[] = { "expf", "__expf", "exp2f", NULL };
static const char *const sm_stores[] = { "recompute", "store", NULL };
static const char *const sm_algos[] = { "two_pass", "online", NULL };
static const char *const sm_logs[] = { "logf", "__logf", NULL };
static const ParamDesc smb_params[] = {
    RO_PARAMS("0"), [SM_EXP] = { "exp", sm_exps, 1, "*" }, [SM_STORE] = { "store", sm_stores, 1, "*" },
    [SM_RANGE] = { "range", NULL, 1, "1 4 10" }, [SM_ALGO] = { "algo", sm_algos, 0, "0" },
    [SM_VARS] = { "vars", NULL, 0, "0..2" }, [SM_LOG] = { NULL } };
static const ParamDesc smw_params[] = {
    RO_PARAMS("1"), [SM_EXP] = { "exp", sm_exps, 1, "*" }, [SM_STORE] = { "store", sm_stores, 0, "*" },
    [SM_RANGE] = { "range", NULL, 1, "1 4 10" }, [SM_ALGO] = { "algo", sm_algos, 1, "*" },
    [SM_VARS] = { "vars", NULL, 0, "0..2" }, [SM_LOG] = { NULL } };
static const ParamDesc lsm_params[] = {
    RO_PARAMS("0 1"), [SM_EXP] = { "exp", sm_exps, 1, "*" }, [SM_STORE] = { "store", sm_stores, 0, "0" },
    [SM_RANGE] = { "range", NULL, 1, "1 4 10" }, [SM_ALGO] = { "algo", sm_algos, 0, "0" },
    [SM_VARS] = { "vars", NULL, 0, "0..2" }, [SM_LOG] = { "log", sm_logs, 1, "*" }, [SM_NP] = { NULL } };
static const char *const sm_names[] = { "x y", "logits probs", "scores weights", "input output" };
static const char *const lsm_names[] = { "x y", "logits log_probs", "scores logp", "input output" };
// the kernel, then the helper that merges two lanes' (max, sum)
static const char *const smb_kn[] = { "softmax_rows warp_merge", "softmaxKernel warpMergeMaxSum",
                                      "row_softmax merge_max_sum", "softmax_block_per_row combine_lanes" };
static const char *const smw_kn[] = { "softmax_warp warp_merge", "softmaxWarpPerRow warpMergeMaxSum",
                                      "warp_softmax merge_max_sum", "softmax_rows_warp combine_lanes" };
static const char *const lsm_kn[] = { "log_softmax_rows warp_merge", "logSoftmaxKernel warpMergeMaxSum",
                                      "row_log_softmax merge_max_sum", "log_softmax_kernel combine_lanes" };

static const Family fam_softmax_block, fam_softmax_warp, fam_log_softmax;
static int sm_is_log(const Task *t) { return t->fam == &fam_log_softmax; }

static void sm_draw(Task *t, Rng *r) {
    ro_draw(t, r, 2100000, 0);
    if (t->p[SM_ALGO] == 1) t->p[SM_STORE] = 0;
    int lg = sm_is_log(t), warp = t->fam == &fam_softmax_warp;
    ro_names(t, 1, lg ? lsm_names : sm_names, lg ? lsm_kn : warp ? smw_kn : smb_kn,
             lg ? "log_softmax" : warp ? "softmax_warp" : "softmax");
}

static void sm_layout(Task *t) {
    ro_layout(t, 1, 1, DT_F32);
    double R = t->p[SM_RANGE];
    trange(&t->in[0], -R, R, 0);
    ro_out_matrix(t, DT_F32);
    long C = t->p[RP_COLS];
    if (sm_is_log(t)) {
        // y = x - max - log(sum): absolute errors from the sum, exp, log and the final subtraction
        t->atol = 6e-6 + ro_sum_rel(C) + ro_exp_rel(2 * R);
        t->rtol = 2e-7;
    } else {
        t->atol = 1e-9;
        t->rtol = 1e-6 + ro_sum_rel(C) + (t->p[SM_ALGO] ? 6 : 3) * ro_exp_rel(2 * R);
    }
    t->need_math = 1;
}

static void sm_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[4][3] = { { "Softmax", "Row_Softmax", "Softmax_Block_Per_Row" },
                                          { "Softmax_Warp_Per_Row", "Row_Softmax_Warp", "Warp_Softmax" },
                                          { "Online_Softmax", "Online_Softmax_Warp", "Single_Pass_Softmax" },
                                          { "Log_Softmax", "Row_Log_Softmax", "LogSoftmax" } };
    int lg = sm_is_log(t);
    const char *x = t->in[0].name, *y = t->out[0].name;
    ro_intro(name, desc, t, nm[lg ? 3 : t->p[SM_ALGO] ? 2 : t->fam == &fam_softmax_warp][t->p[RP_TNAME]],
             "matrix with values");
    if (lg)
        buf_printf(desc, "Compute the log-softmax of every row: %s[r][c] = %s[r][c] - m_r - "
                         "log(sum_j exp(%s[r][j] - m_r)), with m_r the maximum of row r. ", y, x, x);
    else
        buf_printf(desc, "Compute the softmax of every row: %s[r][c] = exp(%s[r][c] - m_r) / "
                         "sum_j exp(%s[r][j] - m_r), with m_r the maximum of row r (subtracting it keeps exp in "
                         "range). ", y, x, x);
    buf_puts(desc, ro_map_desc(t));
    if (t->p[SM_ALGO])
        buf_puts(desc, " Find m_r and the sum in a single pass with the online rescaling (when a larger value appears, "
                       "scale the running sum by exp(old_max - new_max)), merging the lanes' (max, sum) pairs with "
                       "shuffles; then write the outputs.");
    else if (t->p[SM_STORE] && !lg)
        buf_puts(desc, " Store the exponentials in the output during the sum pass and scale them in place by 1/sum.");
}

// Two passes (the row maximum, then the sum of exponentials), or one online pass that
// rescales the running sum when the maximum grows and merges the lanes' (max, sum) pairs.
static const char sm_two_pass_tpl[] = R"(
//? pass 1: the row maximum keeps the exponentials in range
float $M = -3.402823466e+38f;
$max_loop
$max_reduce
//? pass 2: the sum of the exponentials
float $S = 0.0f;
$sum_loop
$sum_reduce
)";
static const char sm_online_tpl[] = R"(
float $M = -3.402823466e+38f, $S = 0.0f;
//? one pass: rescale the running sum whenever the maximum grows
$loop
$merge
)";
static const char sm_online_step_tpl[] = R"(
const float v = xr[c];
if (v > $M) {
    $S = $S * $e_mv + 1.0f;
    $M = v;
} else {
    $S += $e_vm;
}
)";
static const char sm_merge_step_tpl[] = R"(
const float om = $fn($mask, $M, offset);
const float os = $fn($mask, $S, offset);
const float nm = fmaxf($M, om);
$S = $S * $e_m + os * $e_o;
$M = nm;
)";
static const char sm_merge_fn_tpl[] = R"(
/// Merges the (max, sum of exp(x - max)) pairs of the 32 lanes; every lane ends with the row's pair.
__device__ __forceinline__ void $name(float &m, float &s) {
    $merge
}

)";

static const char *sm_exp(const Task *t, const char *a) {
    return pick3(t->p[SM_EXP], fmt("expf(%s)", a), fmt("__expf(%s)", a), fmt("exp2f((%s) * 1.44269504f)", a));
}
static const char *sm_merge(const Task *t, const char *M, const char *S) {
    return ro_shfl(t, FRAG(sm_merge_step_tpl, "fn", ro_shfl_fn(t), "mask", ro_mask(t), "M", M, "S", S,
                           "e_m", sm_exp(t, fmt("%s - nm", M)), "e_o", sm_exp(t, "om - nm")), M, S);
}

static void sm_kernels(const Task *t, Emit *e) {
    const char *M = pick3(t->p[SM_VARS], "m", "row_max", "mx"), *S = pick3(t->p[SM_VARS], "sum", "row_sum", "denom");
    int online = t->p[SM_ALGO] == 1, lg = sm_is_log(t), store = t->p[SM_STORE] && !lg && !online;
    const char *xm = sm_exp(t, fmt("xr[c] - %s", M)), *stats, *helpers;
    if (online) {
        const char *step = FRAG(sm_online_step_tpl, "M", M, "S", S, "e_mv", sm_exp(t, fmt("%s - v", M)),
                                "e_vm", sm_exp(t, fmt("v - %s", M)));
        const char *merge = t->p[RP_HELPER] ? fmt("%s(%s, %s);", t->kname[1], M, S) : sm_merge(t, M, S);
        stats = FRAG(sm_online_tpl, "M", M, "S", S, "loop", ro_cols(t, step), "merge", merge);
        helpers = t->p[RP_HELPER] ? FRAG(sm_merge_fn_tpl, "name", t->kname[1], "merge", sm_merge(t, "m", "s")) : "";
    } else {
        const char *sum = store ? fmt("const float ev = %s;\nyr[c] = ev;\n%s += ev;", xm, S) : fmt("%s += %s;", S, xm);
        stats = FRAG(sm_two_pass_tpl, "M", M, "S", S, "max_loop", ro_cols(t, fmt("%s = fmaxf(%s, xr[c]);", M, M)),
                     "max_reduce", ro_allreduce(t, M, RO_MAX), "sum_loop", ro_cols(t, sum),
                     "sum_reduce", ro_allreduce(t, S, RO_SUM));
        helpers = ro_helpers(t, (1 << RO_MAX) | (1 << RO_SUM));
    }
    const char *scale = lg ? fmt("const float lse = %s + %s(%s);", M, sm_logs[t->p[SM_LOG]], S)
                      : t->p[SM_VARS] == 1 && !store ? "" : fmt("const float inv = 1.0f / %s;", S);
    const char *write = lg ? "yr[c] = xr[c] - lse;" : store ? "yr[c] *= inv;"
                      : t->p[SM_VARS] == 1 ? fmt("yr[c] = %s / %s;", xm, S) : fmt("yr[c] = %s * inv;", xm);
    ro_kernel(e, t, helpers,
              fmt("%s, %s: %s.", lg ? "Log-softmax of each row" : "Softmax of each row", ro_how(t),
                  online ? "an online pass for (max, sum), then a pass writing the outputs"
                         : "max, then sum of exponentials, then normalise"),
              "", "float", ro_body(t, stats, scale, ro_cols(t, write), ""));
}

static void sm_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *y = out[0];
    long R = t->p[RP_ROWS], C = t->p[RP_COLS];
    for (long r = 0; r < R; r++) {
        const float *xr = x + r * C;
        double m = xr[0], s = 0;
        for (long c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        for (long c = 0; c < C; c++) s += exp((double)xr[c] - m);
        for (long c = 0; c < C; c++)
            y[r * C + c] = (float)(sm_is_log(t) ? (double)xr[c] - m - log(s) : exp((double)xr[c] - m) / s);
    }
}

static const Family fam_softmax_block = {
    "softmax_row_block",
    "softmax per row, one block per row: max and sum through a shared-memory tree or warp shuffles + shared partials",
    smb_params, NULL, sm_draw, sm_layout, sm_describe, sm_kernels, ro_launch_float, sm_ref };
static const Family fam_softmax_warp = {
    "softmax_row_warp",
    "softmax per row, one warp per row: two passes with shuffle all-reduces, or one online (max, sum) pass",
    smw_params, NULL, sm_draw, sm_layout, sm_describe, sm_kernels, ro_launch_float, sm_ref };
static const Family fam_log_softmax = {
    "log_softmax_row",
    "log-softmax per row (x - max - log sum exp), block or warp per row",
    lsm_params, NULL, sm_draw, sm_layout, sm_describe, sm_kernels, ro_launch_float, sm_ref };

// ----------------------------------------------------------------------------
// LayerNorm and RMSNorm per row

enum { LN_STATS = RP_X, LN_RSQRT, LN_SAVE, LN_RANGE, LN_DIV, LN_NP };
enum { LNF_EPS };
static const char *const ln_stats[] = { "two_pass", "one_pass", NULL };
static const char *const ln_rsqrts[] = { "rsqrtf", "one_over_sqrtf", NULL };
static const char *const ln_fp[] = { "eps", NULL };
static const ParamDesc ln_params[] = {
    RO_PARAMS("0 1"), [LN_STATS] = { "stats", ln_stats, 1, "*" }, [LN_RSQRT] = { "rsqrt", ln_rsqrts, 0, "*" },
    [LN_SAVE] = { "save_stats", NULL, 1, "0 0 1" }, [LN_RANGE] = { "range", NULL, 1, "0..3" },
    [LN_DIV] = { "div", NULL, 0, "0..2" }, [LN_NP] = { NULL } };
static const ParamDesc rms_params[] = {
    RO_PARAMS("0 1"), [LN_STATS] = { "stats", ln_stats, 0, "0" }, [LN_RSQRT] = { "rsqrt", ln_rsqrts, 0, "*" },
    [LN_SAVE] = { "save_stats", NULL, 0, "0" }, [LN_RANGE] = { "range", NULL, 1, "0..2" },
    [LN_DIV] = { "div", NULL, 0, "0..2" }, [LN_NP] = { NULL } };
// input ranges [lo, hi) and E[x^2] / var of each (how much one-pass variances lose)
static const double ln_lo[] = { -1, -3, 0, 0 }, ln_hi[] = { 1, 3, 2, 4 }, ln_amp[] = { 1, 1, 4, 4 };
static const char *const ln_names[] = { "x gamma beta y mean inv_std", "input weight bias output means rstds",
                                        "h g b out row_mean row_rstd", "act scale shift normed mean_out rstd_out" };
static const char *const rms_names[] = { "x weight y", "input gamma output", "h w out", "hidden scale normed" };
static const char *const ln_kn[] = { "layernorm_rows", "layerNormKernel", "layer_norm_forward", "layernorm" };
static const char *const rms_kn[] = { "rmsnorm_rows", "rmsNormKernel", "rms_norm_forward", "rmsnorm" };

static const Family fam_layernorm, fam_rmsnorm;
static int ln_is_rms(const Task *t) { return t->fam == &fam_rmsnorm; }

static void ln_draw(Task *t, Rng *r) {
    static const double eps[] = { 1e-5, 1e-6, 1e-5, 1e-3, 1e-12 };
    ro_draw(t, r, 2100000, 0);
    t->f[LNF_EPS] = eps[RPICK(r, eps)];
    if (ln_is_rms(t)) ro_names(t, 2, rms_names, rms_kn, "rmsnorm");
    else ro_names(t, 3, ln_names, ln_kn, "layernorm");
}

static void ln_layout(Task *t) {
    int rms = ln_is_rms(t), g = t->p[LN_RANGE];
    ro_layout(t, rms ? 2 : 3, rms ? 1 : t->p[LN_SAVE] ? 3 : 1, DT_F32);
    trange(&t->in[0], ln_lo[g], ln_hi[g], 0);
    for (int k = 1; k < t->nin; k++) {
        tshape(&t->in[k], DT_F32, 1, t->p[RP_COLS], 0, 1, -1);
        trange(&t->in[k], k == 1 ? 0.5 : -0.5, k == 1 ? 1.5 : 0.5, 0);
    }
    ro_out_matrix(t, DT_F32);
    for (int k = 1; k < t->nout; k++) ro_out_rows(t, &t->out[k], DT_F32);
    double sr = ro_sum_rel(t->p[RP_COLS]);
    // RMSNorm: relative errors only. LayerNorm: |y - beta| <= about 3, so the variance's
    // relative error (times E[x^2]/var for a one-pass variance) and the mean's error turn
    // into absolute errors of y.
    t->atol = rms ? 1e-7 : 2e-6 + (3 * ln_amp[g] + 3) * sr;
    t->rtol = rms ? 1e-6 + sr : 1e-5;
    t->need_math = 1;
}

static void ln_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "LayerNorm", "Layer_Normalization", "Row_LayerNorm" },
                                          { "RMSNorm", "RMS_Normalization", "Root_Mean_Square_Norm" } };
    int rms = ln_is_rms(t);
    const char *x = t->in[0].name, *w = t->in[1].name, *y = t->out[0].name, *eps = fnum(t->f[LNF_EPS]);
    ro_intro(name, desc, t, nm[rms][t->p[RP_TNAME]], "matrix with values");
    if (rms) {
        buf_printf(desc, "RMS-normalise every row and scale it: %s[r][c] = %s[r][c] / sqrt(mean_c(%s[r][c]^2) + %s) "
                         "* %s[c].", y, x, x, eps, w);
    } else {
        buf_printf(desc, "Layer-normalise every row: %s[r][c] = (%s[r][c] - mean_r) / sqrt(var_r + %s) * %s[c] + "
                         "%s[c], where mean_r and var_r are the mean and the population variance (divide by %d) of "
                         "row r.", y, x, eps, w, t->in[2].name, t->p[RP_COLS]);
        if (t->p[LN_SAVE])
            buf_printf(desc, " Also write %s[r] = mean_r and %s[r] = 1 / sqrt(var_r + %s).", t->out[1].name,
                       t->out[2].name, eps);
        buf_puts(desc, t->p[LN_STATS] ? " Get the statistics in one pass over the row (sum and sum of squares)."
                                      : " Get the mean first, then the variance as the mean squared deviation.");
    }
    buf_printf(desc, " %s", ro_map_desc(t));
}

// The statistics (RMSNorm: the mean square; LayerNorm: the mean and the variance, in one
// or two passes), then one pass writing the outputs.
static const char *const ln_stats_tpl[] = { R"(
float sum = 0.0f;
$sum_loop
$sum_reduce
const float mu = $mean;
//? second pass: squared deviations from the mean
float var = 0.0f;
$var_loop
$var_reduce
const float rstd = $rstd_var;
)", R"(
float sum = 0.0f, sq = 0.0f;
$sumsq_loop
$sum_reduce
$sq_reduce
const float mu = $mean;
//? E[x^2] - mean^2 can round below zero
const float var = fmaxf($mean_sq - mu * mu, 0.0f);
const float rstd = $rstd_onepass;
)", R"(
float sq = 0.0f;
$sq_loop
$sq_reduce
const float rstd = $rstd_rms;
)" };

static void ln_kernels(const Task *t, Emit *e) {
    int rms = ln_is_rms(t), one = t->p[LN_STATS] == 1;
    const char *w = t->in[1].name, *eps = flit(t->f[LNF_EPS]);
    const char *dv = pick3(t->p[LN_DIV], "%s / cols", "%s / (float)cols", "%s * (1.0f / cols)");
    const char *rs = t->p[LN_RSQRT] ? "1.0f / sqrtf(%s + %s)" : "rsqrtf(%s + %s)";
    const char *stats = FRAG(ln_stats_tpl[rms ? 2 : one], "sum_loop", ro_cols(t, "sum += xr[c];"),
                             "mean", fmt(dv, "sum"),
                             "var_loop", ro_cols(t, "const float d = xr[c] - mu;\nvar += d * d;"),
                             "mean_sq", fmt(dv, "sq"),
                             "sumsq_loop", ro_cols(t, "const float v = xr[c];\nsum += v;\nsq += v * v;"),
                             "sq_loop", ro_cols(t, "const float v = xr[c];\nsq += v * v;"),
                             "sum_reduce", ro_allreduce(t, "sum", RO_SUM), "var_reduce", ro_allreduce(t, "var", RO_SUM),
                             "sq_reduce", ro_allreduce(t, "sq", RO_SUM), "rstd_var", fmt(rs, fmt(dv, "var"), eps),
                             "rstd_onepass", fmt(rs, "var", eps), "rstd_rms", fmt(rs, fmt(dv, "sq"), eps));
    const char *write =
        rms ? (t->p[LN_DIV] == 1 ? fmt("yr[c] = %s[c] * (xr[c] * rstd);", w) : fmt("yr[c] = xr[c] * rstd * %s[c];", w))
            : fmt("yr[c] = (xr[c] - mu) * rstd * %s[c] + %s[c];", w, t->in[2].name);
    const char *save =
        t->nout == 3 ? ro_lead(t, fmt("%s[row] = mu;\n%s[row] = rstd;", t->out[1].name, t->out[2].name)) : "";
    ro_kernel(e, t, ro_helpers(t, 1 << RO_SUM),
              rms ? fmt("RMSNorm of each row: y = x / sqrt(mean(x^2) + eps) * w, %s.", ro_how(t))
                  : fmt("LayerNorm of each row (%s statistics), %s.", one ? "one-pass" : "two-pass", ro_how(t)),
              "", "float", ro_body(t, stats, "", ro_cols(t, write), save));
}

static void ln_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0], *w = in[1], *b = ln_is_rms(t) ? NULL : in[2];
    long R = t->p[RP_ROWS], C = t->p[RP_COLS];
    for (long r = 0; r < R; r++) {
        const float *xr = x + r * C;
        double var, mu = ro_moments(xr, C, b != NULL, &var); // RMSNorm: var is the mean square
        double rstd = 1.0 / sqrt(var / (double)C + fpar(t, LNF_EPS));
        float *y = (float *)out[0] + r * C;
        for (long c = 0; c < C; c++) y[c] = (float)(((double)xr[c] - mu) * rstd * w[c] + (b ? b[c] : 0.0));
        if (t->nout == 3) {
            ((float *)out[1])[r] = (float)mu;
            ((float *)out[2])[r] = (float)rstd;
        }
    }
}

static const Family fam_layernorm = {
    "layernorm_row",
    "LayerNorm per row with gamma/beta: two-pass or one-pass statistics, "
    "block or warp per row, optional mean/rstd outputs",
    ln_params, ln_fp, ln_draw, ln_layout, ln_describe, ln_kernels, ro_launch_float, ln_ref };
static const Family fam_rmsnorm = {
    "rmsnorm_row",
    "RMSNorm per row with a weight vector, block or warp per row, rsqrtf or 1/sqrtf",
    rms_params, ln_fp, ln_draw, ln_layout, ln_describe, ln_kernels, ro_launch_float, ln_ref };

// ----------------------------------------------------------------------------
// Row mean and variance (two outputs)

enum { MV_ALGO = RP_X, MV_DDOF, MV_RANGE, MV_NP };
static const char *const mv_algos[] = { "two_pass", "sum_of_squares", "welford", NULL };
static const ParamDesc mv_params[] = {
    RO_PARAMS("0..2"), [MV_ALGO] = { "algo", mv_algos, 1, "*" }, [MV_DDOF] = { "ddof", NULL, 1, "0 1" },
    [MV_RANGE] = { "range", NULL, 1, "0..3" }, [MV_NP] = { NULL } };
static const double mv_lo[] = { -1, -10, 0, 0 }, mv_hi[] = { 1, 10, 10, 1 }, mv_amp[] = { 1, 1, 4, 4 };
static const char *const mv_names[] = { "x mean var", "data means variances", "samples avg variance",
                                        "input row_mean row_var" };
// the kernel, then the helper that merges two partial (count, mean, M2)
static const char *const mv_kn[] = { "row_mean_var welford_merge", "rowMeanVariance welfordCombine",
                                     "row_moments merge_stats", "mean_var_rows combine_moments" };

static void mv_draw(Task *t, Rng *r) {
    ro_draw(t, r, 2100000, t->p[MV_ALGO] == 2);
    ro_names(t, 1, mv_names, mv_kn, "mean_var");
}

static void mv_layout(Task *t) {
    int g = t->p[MV_RANGE];
    ro_layout(t, 1, 2, DT_F32);
    trange(&t->in[0], mv_lo[g], mv_hi[g], 0);
    for (int k = 0; k < 2; k++) ro_out_rows(t, &t->out[k], DT_F32);
    t->atol = 1e-6 * fmax(fabs(mv_lo[g]), fabs(mv_hi[g]));
    t->rtol = 2e-6 + 1.5 * mv_amp[g] * ro_sum_rel(t->p[RP_COLS]);
}

static void mv_describe(const Task *t, Buf *name, Buf *desc) {
    ro_intro(name, desc, t, pick3(t->p[RP_TNAME], "Row_Mean_And_Variance", "Row_Moments", "Per_Row_Mean_Var"),
             "matrix with values");
    buf_printf(desc, "For every row r compute %s[r] = the mean of the row and %s[r] = its %s variance (sum of squared "
                     "deviations divided by %s). %s %s", t->out[0].name, t->out[1].name,
               t->p[MV_DDOF] ? "sample (unbiased)" : "population", t->p[MV_DDOF] ? "cols - 1" : "cols",
               pick3(t->p[MV_ALGO], "Two passes: the mean, then the squared deviations.",
                     "One pass accumulating the sum and the sum of squares.",
                     ro_map(t) == RO_THREAD ? "Welford's algorithm: keep (count, mean, M2) and update it with each "
                                              "element of the row."
                                            : "Welford's algorithm: each thread keeps (count, mean, M2) and the "
                                              "partial states are merged with Chan's formula."),
               ro_map_desc(t));
}

// Two passes, the sum and the sum of squares, or Welford states (count, mean, M2) merged
// with Chan's formula through a shared tree or shuffles.
static const char *const mv_stats_tpl[] = { R"(
float total = 0.0f;
$sum_loop
$total_reduce
const float mu = total / cols;
float m2 = 0.0f;
$dev_loop
$m2_reduce
)", R"(
float total = 0.0f, total_sq = 0.0f;
$sumsq_loop
$total_reduce
$sq_reduce
const float mu = total / cols;
const float m2 = fmaxf(total_sq - total * mu, 0.0f);
)", R"(
float cnt = 0.0f, mu = 0.0f, m2 = 0.0f;
$welford_loop
$merge
)" };
static const char mv_welford_step[] = R"(
const float v = xr[c];
cnt += 1.0f;
const float d = v - mu;
mu += d / cnt;
m2 += d * (v - mu);
)";
static const char mv_merge_fn_tpl[] = R"(
/// Chan et al.: merges the Welford state (n, mean, M2) of another set of values into (n, mean, m2).
__device__ __forceinline__ void $name(float &n, float &mean, float &m2, float nb, float mean_b, float m2_b) {
    const float total = n + nb;
    if (total == 0.0f) return;
    const float delta = mean_b - mean;
    const float fb = nb / total;
    mean += delta * fb;
    m2 += m2_b + delta * delta * n * fb;
    n = total;
}

)";
// One step of the shared tree (ro_tree_frag): merge the state tid + s into tid's, store it.
static const char mv_tree_step_tpl[] = R"(
if (tid < s) {
    $merge(cnt, mu, m2, sn[tid + s], smu[tid + s], sm2[tid + s]);
    $store
}
)";
static const char mv_merge_shfl_tpl[] = R"(
for (int offset = 16; offset > 0; offset >>= 1) {
    const float on = $fn($mask, cnt, offset);
    const float om = $fn($mask, mu, offset);
    const float oq = $fn($mask, m2, offset);
    $merge(cnt, mu, m2, on, om, oq);
}
)";

static void mv_kernels(const Task *t, Emit *e) {
    int algo = t->p[MV_ALGO], m = ro_map(t);
    const char *B = ro_B(t), *merge = t->kname[1], *stats, *shared = "float", *helpers = "";
    if (algo < 2) {
        stats = FRAG(mv_stats_tpl[algo], "sum_loop", ro_cols(t, "total += xr[c];"),
                     "sumsq_loop", ro_cols(t, "const float v = xr[c];\ntotal += v;\ntotal_sq += v * v;"),
                     "dev_loop", ro_cols(t, "const float d = xr[c] - mu;\nm2 += d * d;"),
                     "total_reduce", ro_allreduce(t, "total", RO_SUM), "sq_reduce", ro_allreduce(t, "total_sq", RO_SUM),
                     "m2_reduce", ro_allreduce(t, "m2", RO_SUM));
        helpers = ro_helpers(t, 1 << RO_SUM);
    } else {
        // Welford: the threads' states merged through a shared tree (sn, smu, sm2) or shuffles
        const char *store = "sn[tid] = cnt;\nsmu[tid] = mu;\nsm2[tid] = m2;";
        const char *step = FRAG(mv_tree_step_tpl, "merge", merge, "store", store);
        const char *merge_all = pick3(m, ro_tree_frag(t, store, step, ""),
                                      FRAG(mv_merge_shfl_tpl, "fn", ro_shfl_fn(t), "mask", ro_mask(t), "merge", merge),
                                      "");
        stats = FRAG(mv_stats_tpl[algo], "welford_loop", ro_cols(t, mv_welford_step), "merge", merge_all);
        shared = t->p[RP_SHMEM] != RO_DYNAMIC
                     ? fmt("__shared__ float sn[%s], smu[%s], sm2[%s];", B, B, B)
                     : "extern __shared__ float sdata[];\n"
                       "float *sn = sdata, *smu = sdata + blockDim.x, *sm2 = sdata + 2 * blockDim.x;";
        helpers = m != RO_THREAD ? FRAG(mv_merge_fn_tpl, "name", merge) : "";
    }
    ro_kernel(e, t, helpers,
              fmt("Mean and %s variance of each row (%s), %s.", t->p[MV_DDOF] ? "sample" : "population",
                  pick3(algo, "two passes", "sum and sum of squares", "Welford"), ro_how(t)),
              "", shared,
              ro_body(t, stats, "", "",
                      ro_lead(t, fmt("%s[row] = mu;\n%s[row] = m2 / %s;", t->out[0].name, t->out[1].name,
                                     t->p[MV_DDOF] ? "(cols - 1)" : "cols"))));
}

static void mv_launch(const Task *t, Emit *e, const Host *h) {
    ro_launch(e, t, h, kernel_args(h, 2), t->p[MV_ALGO] == 2 ? "3 * sizeof(float)" : "sizeof(float)");
}

static void mv_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    long R = t->p[RP_ROWS], C = t->p[RP_COLS];
    for (long r = 0; r < R; r++) {
        double m2, mu = ro_moments(x + r * C, C, 1, &m2);
        ((float *)out[0])[r] = (float)mu;
        ((float *)out[1])[r] = (float)(m2 / (double)(C - t->p[MV_DDOF]));
    }
}

static const Family fam_mean_var = {
    "row_mean_var",
    "mean and variance of each row (two outputs): two-pass, sum of squares or Welford; block, warp or thread per row",
    mv_params, NULL, mv_draw, mv_layout, mv_describe, mv_kernels, mv_launch, mv_ref };

// ----------------------------------------------------------------------------
// Argmin per row (value and index; the lowest index wins ties)

enum { AM_DTYPE = RP_X, AM_DATA, AM_NP };
static const char *const am_data[] = { "real", "small_ints", NULL };
static const ParamDesc am_params[] = {
    RO_PARAMS("0 1"), [AM_DTYPE] = { "dtype", ro_dtypes, 1, "*" }, [AM_DATA] = { "data", am_data, 1, "*" },
    [AM_NP] = { NULL } };
static const char *const am_names[] = { "x min_val min_idx", "scores low low_idx", "dist nearest_dist nearest",
                                        "input values indices" };
static const char *const am_kn[] = { "row_argmin", "rowArgMin", "argmin_rows", "argmin_kernel" };

static void am_draw(Task *t, Rng *r) {
    ro_draw(t, r, 2100000, 0);
    if (t->p[AM_DTYPE]) t->p[AM_DATA] = 1;
    ro_names(t, 1, am_names, am_kn, "argmin_rows");
}
static void am_layout(Task *t) {
    DType dt = t->p[AM_DTYPE] ? DT_I32 : DT_F32;
    ro_layout(t, 1, 2, dt);
    if (t->p[AM_DATA]) trange(&t->in[0], t->p[AM_DTYPE] ? -50 : 0, t->p[AM_DTYPE] ? 50 : 20, 1);
    else trange(&t->in[0], -1000, 1000, 0);
    ro_out_rows(t, &t->out[0], dt);
    ro_out_rows(t, &t->out[1], DT_I32);
    t->atol = t->rtol = 0;
}
static void am_describe(const Task *t, Buf *name, Buf *desc) {
    ro_intro(name, desc, t, pick3(t->p[RP_TNAME], "Row_Argmin", "Argmin_Per_Row", "Row_Minimum_With_Index"),
             fmt("%s matrix with %svalues", dt_names[t->in[0].dt], t->in[0].integer ? "whole-number " : ""));
    buf_printf(desc, "For every row r write %s[r] = the smallest value of the row and %s[r] = its column index; when "
                     "the minimum occurs several times, take the lowest column index. %s",
               t->out[0].name, t->out[1].name, ro_map_desc(t));
}
// The best (value, index) of a row, the lowest index among equal values: each thread scans
// its columns (after: statements before the test, take: the test), then the row's threads
// reduce their pairs. Argmin, and each round of top-k.
static const char am_search_tpl[] = R"(
$T best = $identity;
int best_i = 2147483647;
$note
$loop
$reduce
)";
static const char am_step_tpl[] = R"(
const $T v = xr[c];
$after
if ($take) {
    best = v;
    best_i = c;
}
)";
static const char *am_search(const Task *t, const char *T, int dir, const char *note, const char *after,
                             const char *take) {
    return FRAG(am_search_tpl, "T", T, "identity", ro_arg_identity(dir, T), "note", note,
                "loop", ro_cols(t, FRAG(am_step_tpl, "T", T, "after", after, "take", take)),
                "reduce", ro_arg_allreduce(t, T, "best", "best_i", dir));
}
static void am_kernels(const Task *t, Emit *e) {
    const char *T = t->p[AM_DTYPE] ? "int" : "float";
    ro_kernel(e, t, ro_arg_helpers(t, T, RO_MIN),
              fmt("Minimum of each row and its lowest column index, %s.", ro_how(t)), "", fmt("arg:%s", T),
              ro_body(t, am_search(t, T, RO_MIN, "//? columns are visited in increasing order: a strict < keeps the "
                                                 "first minimum", "", "v < best"), "", "",
                      ro_lead(t, fmt("%s[row] = best;\n%s[row] = best_i;", t->out[0].name, t->out[1].name))));
}
static void am_launch(const Task *t, Emit *e, const Host *h) {
    ro_launch(e, t, h, kernel_args(h, 2), "(sizeof(float) + sizeof(int))");
}
static void am_ref(const Task *t, const void *const *in, void *const *out) {
    long R = t->p[RP_ROWS], C = t->p[RP_COLS];
    int is_int = t->p[AM_DTYPE];
    for (long r = 0; r < R; r++) {
        long bi = 0;
        for (long c = 1; c < C; c++)
            if (ro_get(in[0], is_int, r * C + c) < ro_get(in[0], is_int, r * C + bi)) bi = c;
        ro_put(out[0], is_int, r, ro_get(in[0], is_int, r * C + bi));
        ((int *)out[1])[r] = (int)bi;
    }
}
static const Family fam_argmin_row = {
    "argmin_row",
    "argmin of each row with its value, lowest index on ties; (value, index) pairs through a shared tree or shuffles",
    am_params, NULL, am_draw, am_layout, am_describe, am_kernels, am_launch, am_ref };

// ----------------------------------------------------------------------------
// Top-k per row (k <= 8): values and indices, best first, the lower index first on ties

enum { TK_K = RP_X, TK_ORDER, TK_DATA, TK_KSTYLE, TK_NP };
static const char *const tk_orders[] = { "largest", "smallest", NULL };
static const char *const tk_kstyles[] = { "template", "kmax", NULL };
static const ParamDesc tk_params[] = {
    RO_PARAMS("0..2"), [TK_K] = { "k", NULL, 1, "1 2 3 4 5 8" }, [TK_ORDER] = { "order", tk_orders, 1, "0 0 1" },
    [TK_DATA] = { "data", am_data, 1, "*" }, [TK_KSTYLE] = { "kstyle", tk_kstyles, 0, "*" }, [TK_NP] = { NULL } };
static const char *const tk_names[] = { "x top_vals top_idx", "scores values indices", "logits topk_val topk_idx",
                                        "input best_vals best_ids" };
static const char *const tk_kn[] = { "topk_rows", "topKPerRow", "row_topk", "select_topk" };

static void tk_draw(Task *t, Rng *r) {
    ro_draw(t, r, 1100000, 0);
    ro_names(t, 1, tk_names, tk_kn, "topk");
}
static void tk_layout(Task *t) {
    ro_layout(t, 1, 2, DT_F32);
    if (t->p[TK_DATA]) trange(&t->in[0], 0, 15, 1);
    else trange(&t->in[0], -1, 1, 0);
    int kk = add_size(t, "topk", t->p[TK_K]);
    for (int j = 0; j < 2; j++) tshape(&t->out[j], j ? DT_I32 : DT_F32, 2, t->p[RP_ROWS], t->p[TK_K], 0, kk);
    t->atol = t->rtol = 0;
}
static void tk_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Top_K_Per_Row", "Row_TopK", "TopK_Selection" },
                                          { "Bottom_K_Per_Row", "Row_K_Smallest", "K_Smallest_Selection" } };
    int sm = t->p[TK_ORDER], K = t->p[TK_K];
    ro_intro(name, desc, t, nm[sm][t->p[RP_TNAME]],
             t->in[0].integer ? "matrix of whole numbers stored as float32" : "matrix of float32 values");
    if (K == 1)
        buf_printf(desc, "For every row r, write the %s value of the row to %s[r][0] and its column index to %s[r][0], "
                         "the lowest index among equal values. %s", tk_orders[sm], t->out[0].name,
                   t->out[1].name, ro_map_desc(t));
    else
        buf_printf(desc, "For every row r, write the %d %s values of the row in %s order to %s[r][0..%d) and their "
                         "column indices to %s[r][0..%d); equal values are ordered by column index, the lower index "
                         "first (so the selection is unique). %s", K, tk_orders[sm],
                   sm ? "increasing" : "decreasing", t->out[0].name, K, t->out[1].name, K, ro_map_desc(t));
    if (ro_map(t) == RO_THREAD)
        buf_puts(desc, " Each thread keeps a sorted list of its best k in registers and inserts every element of the "
                       "row.");
    else if (K > 1)
        buf_printf(desc, " Select in %d rounds: each round picks the best element that ranks after the previous pick.",
                   K);
}
// One thread per row: insertion into a sorted list in registers (K a template parameter,
// or k at run time in arrays of KMAX). Blocks and warps: k selection rounds.
static const char tk_thread_tpl[] = R"(
const int row = $gidx;
if (row >= rows) return;
const float *xr = $x + (size_t)row * cols;
float bv[$KMAX];
int bi[$KMAX];
$unroll
for (int j = 0; j < $K; j++) {
    bv[j] = $identity;
    bi[j] = -1;
}
for (int c = 0; c < cols; c++) {
    const float v = xr[c];
    //? strict comparisons: an equal value seen later stays behind the earlier one
    if (v $gt bv[$K - 1]) {
        int j = $K - 1;
        while (j > 0 && bv[j - 1] $lt v) {
            bv[j] = bv[j - 1];
            bi[j] = bi[j - 1];
            j--;
        }
        bv[j] = v;
        bi[j] = c;
    }
}
$unroll
for (int j = 0; j < $K; j++) {
    $ov[(size_t)row * $K + j] = bv[j];
    $oi[(size_t)row * $K + j] = bi[j];
}
)";
static const char tk_rounds_tpl[] = R"(
const float *xr = $x + (size_t)row * cols;
float prev_v = 0.0f;
int prev_i = -1;
for (int r = 0; r < k; r++) {
    $search
    $write
    prev_v = best;
    prev_i = best_i;
}
)";
static void tk_kernels(const Task *t, Emit *e) {
    int sm = t->p[TK_ORDER], dir = sm ? RO_MIN : RO_MAX, tmpl = t->p[TK_KSTYLE] == 0;
    const char *x = t->in[0].name, *ov = t->out[0].name, *oi = t->out[1].name, *lt = sm ? ">" : "<",
               *gt = sm ? "<" : ">";
    if (ro_map(t) == RO_THREAD) {
        const char *K = tmpl ? "K" : "k";
        emit_kernel(e, t, tmpl ? "" : "#define KMAX 8\n\n", tmpl ? "template <int K>" : "",
                    fmt("Top-%s (%s first) of each row, one thread per row: insertion into a sorted list kept in "
                        "registers.", K, tk_orders[sm]), tmpl ? "int rows, int cols" : "int rows, int cols, int k",
                    FRAG(tk_thread_tpl, "K", K, "KMAX", tmpl ? "K" : "KMAX", "gidx", gidx_expr(t, 0), "x", x,
                         "unroll", tmpl ? "#pragma unroll" : "", "identity", ro_arg_identity(dir, "float"),
                         "gt", gt, "lt", lt, "ov", ov, "oi", oi));
        return;
    }
    const char *after = fmt("//? only elements ranked after the previous pick (value, then index) take part\n"
                            "const bool after = r == 0 || v %s prev_v || (v == prev_v && c > prev_i);", lt);
    ro_kernel(
        e, t, ro_arg_helpers(t, "float", dir),
        fmt("Top-k (%s first) of each row, %s, in k rounds: round r selects the best element ranking after pick r - 1.",
            tk_orders[sm], ro_how(t)),
        ", int k", "arg:float",
        FRAG(tk_rounds_tpl, "x", x, "search", am_search(t, "float", dir, "", after, fmt("after && v %s best", gt)),
             "write", ro_lead(t, fmt("%s[(size_t)row * k + r] = best;\n%s[(size_t)row * k + r] = best_i;", ov, oi))));
}
static void tk_launch(const Task *t, Emit *e, const Host *h) {
    if (ro_map(t) == RO_THREAD && t->p[TK_KSTYLE] == 0)
        launch_1d(e, t, fmt("%s<%d>", t->kname[0], t->p[TK_K]), h->size[0], t->p[RP_BLOCK], 0, kernel_args(h, 2));
    else ro_launch(e, t, h, fmt("%s, %s", kernel_args(h, 2), h->size[2]), "(sizeof(float) + sizeof(int))");
}
// Ranks (v, i) before (w, j) in the requested order (NaN after every number).
static int tk_before(int smallest, float v, long i, float w, long j) {
    if (v != v || w != w) return w != w && (v == v || i < j);
    return smallest ? (v < w || (v == w && i < j)) : (v > w || (v == w && i < j));
}
static void tk_ref(const Task *t, const void *const *in, void *const *out) {
    long R = t->p[RP_ROWS], C = t->p[RP_COLS], K = t->p[TK_K];
    int sm = t->p[TK_ORDER];
    for (long r = 0; r < R; r++) {
        const float *x = (const float *)in[0] + r * C;
        long pick[8];
        for (long k = 0; k < K && k < C; k++) {
            long b = -1;
            for (long c = 0; c < C; c++) {
                if (k > 0 && !tk_before(sm, x[pick[k - 1]], pick[k - 1], x[c], c)) continue;
                if (b < 0 || tk_before(sm, x[c], c, x[b], b)) b = c;
            }
            pick[k] = b;
            ((float *)out[0])[r * K + k] = x[b];
            ((int *)out[1])[r * K + k] = (int)b;
        }
    }
}
static const Family fam_topk_row = {
    "topk_row",
    "top-k (k <= 8) values and indices per row, largest or smallest, index tie-"
    "break; thread (register insertion), warp or block (k rounds)",
    tk_params, NULL, tk_draw, tk_layout, tk_describe, tk_kernels, tk_launch, tk_ref };

// ----------------------------------------------------------------------------
// Row-wise cumulative sum

enum { CS_DTYPE = RP_X, CS_KIND, CS_DIR, CS_NP };
static const char *const cs_kinds[] = { "inclusive", "exclusive", NULL };
static const char *const cs_dirs[] = { "forward", "reverse", NULL };
static const ParamDesc cs_params[] = {
    RO_PARAMS("0..2"), [CS_DTYPE] = { "dtype", ro_dtypes, 1, "*" }, [CS_KIND] = { "kind", cs_kinds, 1, "*" },
    [CS_DIR] = { "direction", cs_dirs, 1, "0 0 1" }, [CS_NP] = { NULL } };
static const char *const cs_names[] = { "x y", "input cumsum", "values prefix", "data running" };
// the kernel, then the warp's inclusive scan
static const char *const cs_kn[] = { "row_cumsum warp_inclusive_scan", "rowCumSum warpScanInclusive",
                                     "cumsum_rows warp_scan", "row_prefix_sum scan_warp" };

static void cs_draw(Task *t, Rng *r) {
    ro_draw(t, r, 2100000, 1);
    if (ro_map(t) == RO_WARP) t->p[RP_RED] = RO_XOR; // the warp scan is __shfl_up_sync whatever this says
    ro_names(t, 1, cs_names, cs_kn, "cumsum");
}
static void cs_layout(Task *t) {
    DType dt = t->p[CS_DTYPE] ? DT_I32 : DT_F32;
    ro_layout(t, 1, 1, dt);
    if (dt == DT_I32) trange(&t->in[0], -100, 100, 1);
    else trange(&t->in[0], 0, 1, 0);
    ro_out_matrix(t, dt);
    t->atol = dt == DT_I32 ? 0 : 1e-6;
    t->rtol = dt == DT_I32 ? 0 : ro_sum_rel(t->p[RP_COLS]);
}
static void cs_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Row_Cumulative_Sum", "Cumsum_Along_Rows", "Row_Prefix_Sum" },
                                          { "Reverse_Row_Cumsum", "Suffix_Sum_Along_Rows", "Row_Suffix_Sum" } };
    int ex = t->p[CS_KIND], rev = t->p[CS_DIR], B = t->p[RP_BLOCK];
    const Tensor *x = &t->in[0];
    ro_intro(name, desc, t, nm[rev][t->p[RP_TNAME]], fmt("%s matrix with values", dt_names[x->dt]));
    buf_printf(desc, "Compute the %s %scumulative sum along each row%s: %s[r][c] = sum of %s[r][j] for j %s%s c.",
               cs_kinds[ex], rev ? "reverse " : "", rev ? " (from the right end)" : "",
               t->out[0].name, x->name, rev ? ">" : "<", ex ? "" : "=");
    if (ro_map(t) == RO_BLOCK)
        buf_printf(desc, " Use one block of %d threads per row, scanning chunks of the row in shared memory "
                         "(Hillis-Steele) and carrying each chunk's total into the next.", B);
    else if (ro_map(t) == RO_WARP)
        buf_printf(desc, " Use one warp per row (%d warp%s per block), scanning 32 columns at a time with "
                         "__shfl_up_sync and carrying the running total.", B / 32, B > 32 ? "s" : "");
    else buf_puts(desc, " Use one thread per row, walking the row sequentially.");
}
// A thread walks its row; a block scans chunks of blockDim.x columns in shared memory; a
// warp scans 32 columns at a time with __shfl_up_sync. Both carry the chunk totals.
static const char *const cs_body_tpl[] = { R"(
$T carry = $zero;
for (int base = 0; base < cols; base += $B) {
    const int c = base + tid;
    $col
    sdata[tid] = c < cols ? xr[$at] : $zero;
    __syncthreads();
    //? Hillis-Steele: read the partner, wait, then add
    for (int off = 1; off < $B; off <<= 1) {
        const $T add = tid >= off ? sdata[tid - off] : $zero;
        __syncthreads();
        sdata[tid] += add;
        __syncthreads();
    }
    if (c < cols) yr[$at] = carry + $block_value;
    carry += sdata[$B - 1];
    //? everyone has read the chunk total before the next chunk overwrites sdata
    __syncthreads();
}
)", R"(
$T carry = $zero;
for (int base = 0; base < cols; base += 32) {
    const int c = base + lane;
    $col
    $T v = c < cols ? xr[$at] : $zero;
    $scan
    $before
    if (c < cols) yr[$at] = carry + $warp_value;
    carry += __shfl_sync($mask, v, 31);
}
)", R"(
$T acc = $zero;
$loop {
    $step
}
)" };
static const char cs_scan_tpl[] = R"(
#pragma unroll
for (int off = 1; off < 32; off <<= 1) {
    const $T up = __shfl_up_sync($mask, v, off);
    if (lane >= off) v += up;
}
)";
static const char cs_helper_tpl[] = R"(
/// Inclusive prefix sum across the 32 lanes of a warp (Hillis-Steele with __shfl_up_sync).
__device__ __forceinline__ $T $name($T v, int lane) {
    $scan
    return v;
}

)";
static void cs_kernels(const Task *t, Emit *e) {
    const char *T = t->p[CS_DTYPE] ? "int" : "float", *Z = t->p[CS_DTYPE] ? "0" : "0.0f";
    int ex = t->p[CS_KIND], rev = t->p[CS_DIR], helper = ro_map(t) == RO_WARP && t->p[RP_HELPER];
    const char *scan = FRAG(cs_scan_tpl, "T", T, "mask", ro_mask(t));
    // exclusive: the value before each element (the warp's left neighbour, or 0 for lane 0)
    const char *before =
        ex ? fmt("%s before = __shfl_up_sync(%s, v, 1);\nif (lane == 0) before = %s;", T, ro_mask(t), Z) : "";
    const char *body = FRAG(cs_body_tpl[ro_map(t)], "T", T, "zero", Z, "B", ro_B(t), "mask", ro_mask(t),
                            "col", rev ? "const int col = cols - 1 - c;" : "", "at", rev ? "col" : "c",
                            "block_value", ex ? fmt("(tid > 0 ? sdata[tid - 1] : %s)", Z) : "sdata[tid]",
                            "scan", helper ? fmt("v = %s(v, lane);", t->kname[1]) : scan,
                            "warp_value", ex ? "before" : "v", "before", before,
                            "loop", rev ? "for (int c = cols - 1; c >= 0; c--)" : "for (int c = 0; c < cols; c++)",
                            "step", ex ? "yr[c] = acc;\nacc += xr[c];" : "acc += xr[c];\nyr[c] = acc;");
    ro_kernel(e, t, helper ? FRAG(cs_helper_tpl, "T", T, "name", t->kname[1], "scan", scan) : "",
              fmt("%s %s cumulative sum of each row, %s.", ex ? "Exclusive" : "Inclusive",
                  rev ? "right-to-left" : "left-to-right",
                  pick3(ro_map(t), "one block per row, chunk by chunk through a shared-memory scan",
                        "one warp per row, 32 columns at a time", "one thread per row")),
              "", T, ro_body(t, body, "", "", ""));
}
static void cs_launch(const Task *t, Emit *e, const Host *h) {
    ro_launch(e, t, h, kernel_args(h, 2), t->p[CS_DTYPE] ? "sizeof(int)" : "sizeof(float)");
}
static void cs_ref(const Task *t, const void *const *in, void *const *out) {
    long R = t->p[RP_ROWS], C = t->p[RP_COLS];
    int ex = t->p[CS_KIND], rev = t->p[CS_DIR];
    for (long r = 0; r < R; r++) {
        double acc = 0;
        for (long j = 0; j < C; j++) {
            long c = rev ? C - 1 - j : j;
            double v = ro_get(in[0], t->p[CS_DTYPE], r * C + c);
            if (!ex) acc += v;
            ro_put(out[0], t->p[CS_DTYPE], r * C + c, acc);
            if (ex) acc += v;
        }
    }
}
static const Family fam_row_cumsum = {
    "row_cumsum",
    "cumulative sum along rows (inclusive/exclusive, forward/reverse, float/int): thread, "
    "warp (__shfl_up_sync) or block (shared scan + carry) per row",
    cs_params, NULL, cs_draw, cs_layout, cs_describe, cs_kernels, cs_launch, cs_ref };

static const Family *const families_rows[] = { &fam_softmax_block, &fam_softmax_warp, &fam_log_softmax, &fam_layernorm,
                                               &fam_rmsnorm,
                                               &fam_mean_var, &fam_argmin_row, &fam_topk_row, &fam_row_cumsum, NULL };
