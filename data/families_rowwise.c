// families_rowwise.c - row-wise and scan-style families: softmax (one block per row with
// shared-memory reductions; one warp per row, two-pass or online), log-softmax, layernorm,
// RMSNorm, row mean and variance (two-pass, sum of squares, Welford), inclusive scans within
// a block (Hillis-Steele, Blelloch), a multi-kernel exclusive scan of a long array, row-wise
// cumulative sums, argmax of an array and argmin per row (lowest index wins ties), top-k
// per row, a dot product with atomicAdd of block partials, atomic max/min (on ints, and on
// floats through their bits), deterministic scan-based stream compaction and count_if with
// atomics. Included by corpus.c.
//
// Most row families share one parameter layout (R_*) and one engine (rx_*): a row is
// handled by one thread block (reductions in a shared-memory tree, or warp shuffles plus a
// shared array of per-warp partials), by one warp (__shfl_xor_sync butterflies or
// __shfl_down_sync plus a broadcast), or by one thread.
//
// Tolerances. Expected outputs are computed in double. A float sum of n terms in another
// order (a tree, a strided loop, or the plain left-to-right loop a model may write) is off
// by about u*sqrt(n)/3 relative to the sum for positive terms (u = 2^-24, rounding errors
// as a random walk), so rx_sum_rel allows 2e-7*sqrt(n) + 1e-6 (about ten of those
// standard deviations); mixed-sign sums use an absolute allowance that grows like n.
// Selections (max, argmax, top-k, compaction, counts) and integer scans are exact.

// ----------------------------------------------------------------------------
// Shared machinery

static const int rx_rows[] = { 64, 128, 256, 500, 1000, 2048, 4096 };
static const int rx_cols[] = { 32, 64, 100, 128, 256, 500, 768, 1000, 1024, 2048, 4096 };
static const int rx_ns[] = { 1000, 4096, 10000, 65536, 100000, 262144, 1000000, 1048576 };

#define RX_LOWEST "-3.402823466e+38f"
#define RX_HIGHEST "3.402823466e+38f"
#define RX_INT_MIN "(-2147483647 - 1)"
#define RX_INT_MAX "2147483647"

// Relative error allowed for a float sum of n positive terms in any order.
static double rx_sum_rel(long n) { return 1e-6 + 2e-7 * sqrt((double)n); }
// A float parameter as nvcc reads its literal (flit prints "%.9g" + "f").
static float rx_fpar(const Task *t, int k) { return strtof(fmt("%.9g", t->f[k]), NULL); }

enum { RX_BLOCK, RX_WARP, RX_THREAD };
static const char *const rx_maps[] = { "block_per_row", "warp_per_row", "thread_per_row", NULL };
enum { RED_TREE, RED_XOR, RED_DOWN };
static const char *const rx_reds[] = { "tree", "shfl_xor", "shfl_down", NULL };
enum { SHM_DEFINE, SHM_TEMPLATE, SHM_DYNAMIC };
static const char *const rx_shmems[] = { "define", "template", "dynamic", NULL };
static const char *const rx_dtypes[] = { "float32", "int32", NULL };
enum { OP_SUM, OP_MAX, OP_MIN };

// The parameters every row family starts with; family parameters follow from R_X on.
enum { R_ROWS, R_COLS, R_MAP, R_BLOCK, R_RED, R_SHMEM, R_HELPER, R_MASK, R_KNAME, R_NAMES, R_TNAME, R_X };
#define RX_PARAMS                                                                                             \
    { "rows", NULL, 1, NULL }, { "cols", NULL, 1, NULL }, { "map", rx_maps, 1, NULL }, { "block", NULL, 1, NULL },                   \
    { "reduce", rx_reds, 1, NULL }, { "shmem", rx_shmems, 0, NULL }, { "helper", NULL, 0, NULL }, { "mask", NULL, 0, NULL },        \
    { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL }, { "tname", NULL, 0, NULL }

static int rx_map(const Task *t) { return t->p[R_MAP]; }
static int rx_tree(const Task *t) { return t->p[R_MAP] == RX_BLOCK && t->p[R_RED] == RED_TREE; }
static int rx_shuffles(const Task *t) { return t->p[R_MAP] != RX_THREAD && t->p[R_RED] != RED_TREE; }


// Names from a table of name sets (NAMES picks the set).
static void rx_set_names(Task *t, const char *const *set, int nin, int nout) {
    for (int k = 0; k < nin; k++) snprintf(t->in[k].name, sizeof t->in[k].name, "%s", set[k]);
    for (int k = 0; k < nout; k++) snprintf(t->out[k].name, sizeof t->out[k].name, "%s", set[nin + k]);
}


static const char *rx_mask(const Task *t) {
    return t->p[R_MASK] == 0 ? "0xffffffff" : t->p[R_MASK] == 1 ? "0xffffffffu" : "FULL_MASK";
}
// The threads per block in kernel code.
static const char *rx_B(const Task *t) {
    if (!rx_tree(t)) return "blockDim.x";
    return t->p[R_SHMEM] == SHM_DEFINE ? "BLOCK_SIZE" : t->p[R_SHMEM] == SHM_TEMPLATE ? "BLOCK" : "blockDim.x";
}
// The thread's first column and the column stride of the mapping.

static const char *rx_comb(int op, const char *a, const char *b) {
    return op == OP_SUM ? fmt("%s + %s", a, b) : fmt("%s(%s, %s)", op == OP_MAX ? "fmaxf" : "fminf", a, b);
}
static const char *rx_identity(int op) { return op == OP_SUM ? "0.0f" : op == OP_MAX ? RX_LOWEST : RX_HIGHEST; }

static const char *rx_opname(int op, int cap) {
    static const char *const lo[] = { "sum", "max", "min" }, *const up[] = { "Sum", "Max", "Min" };
    return cap ? up[op] : lo[op];
}
static const char *rx_warp_fn(const Task *t, int op) {
    switch (t->p[R_KNAME] % 3) {
    case 0: return fmt("warp_reduce_%s", rx_opname(op, 0));
    case 1: return fmt("warpReduce%s", rx_opname(op, 1));
    default: return fmt("warp_all%s", rx_opname(op, 0));
    }
}
static const char *rx_block_fn(const Task *t, int op) {
    switch (t->p[R_KNAME] % 3) {
    case 0: return fmt("block_reduce_%s", rx_opname(op, 0));
    case 1: return fmt("blockReduce%s", rx_opname(op, 1));
    default: return fmt("block_all%s", rx_opname(op, 0));
    }
}

// #defines the kernels need: FULL_MASK, BLOCK_SIZE.
static void rx_prelude(Emit *e, const Task *t, int block_define) {
    int any = 0;
    if (rx_shuffles(t) && t->p[R_MASK] == 2) { em_line(e, "#define FULL_MASK 0xffffffffu"); any = 1; }
    if (block_define && rx_tree(t) && t->p[R_SHMEM] == SHM_DEFINE) { em_line(e, "#define BLOCK_SIZE %d", t->p[R_BLOCK]); any = 1; }
    if (any) em_blank(e);
}

// The shuffle loop that combines v across the lanes of a warp (down: lane 0 ends with
// the result; xor: every lane does).
static void rx_shfl_loop(Emit *e, const Task *t, const char *v, int op, int down) {
    const char *sh = fmt("%s(%s, %s, offset)", down ? "__shfl_down_sync" : "__shfl_xor_sync", rx_mask(t), v);
    em_line(e, "#pragma unroll");
    em_line(e, "for (int offset = 16; offset > 0; offset >>= 1) {");
    em_in(e);
    if (op == OP_SUM) em_line(e, "%s += %s;", v, sh);
    else em_line(e, "%s = %s;", v, rx_comb(op, v, sh));
    em_out(e);
    em_line(e, "}");
}

// __device__ helpers: warp all-reduce for each op in ops (a bit mask of 1 << OP_*), and
// for block mappings with shuffles the block all-reduce built on it.
static void rx_helpers(Emit *e, const Task *t, int ops) {
    if (!rx_shuffles(t) || (rx_map(t) == RX_WARP && !t->p[R_HELPER])) return;
    int down = t->p[R_RED] == RED_DOWN;
    for (int op = 0; op < 3; op++) {
        if (!((ops >> op) & 1)) continue;
        em_comment(e, t, down ? fmt("Warp-wide %s: a __shfl_down_sync tree leaves it in lane 0, which broadcasts it to all lanes.", rx_opname(op, 0))
                              : fmt("Warp-wide %s with a __shfl_xor_sync butterfly; every lane ends with the result.", rx_opname(op, 0)), 0);
        em_fn_open(e, t, "", t->p[R_KNAME] & 1 ? "__inline__ __device__ float" : "__device__ __forceinline__ float",
                   rx_warp_fn(t, op), "float v");
        rx_shfl_loop(e, t, "v", op, down);
        if (down) em_line(e, "return __shfl_sync(%s, v, 0);", rx_mask(t));
        else em_line(e, "return v;");
        em_fn_close(e);
        em_blank(e);
    }
    if (rx_map(t) != RX_BLOCK) return;
    for (int op = 0; op < 3; op++) {
        if (!((ops >> op) & 1)) continue;
        em_comment(e, t, fmt("Block-wide %s: each warp reduces with shuffles, the per-warp results meet in shared memory, "
                             "and every warp reduces those again, so all threads return the block's %s.", rx_opname(op, 0), rx_opname(op, 0)), 0);
        em_fn_open(e, t, "", "__device__ float", rx_block_fn(t, op), "float v");
        em_line(e, "__shared__ float warp_part[32];");
        em_line(e, "const int lane = threadIdx.x & 31;");
        em_line(e, "const int wid = threadIdx.x >> 5;");
        em_line(e, "v = %s(v);", rx_warp_fn(t, op));
        em_line(e, "if (lane == 0) warp_part[wid] = v;");
        em_line(e, "__syncthreads();");
        em_line(e, "const int nwarps = (blockDim.x + 31) >> 5;");
        em_line(e, "v = lane < nwarps ? warp_part[lane] : %s;", rx_identity(op));
        em_line(e, "v = %s(v);", rx_warp_fn(t, op));
        em_note(e, t, "warp_part is reused by the next call: wait until everyone has read it");
        em_line(e, "__syncthreads();");
        em_line(e, "return v;");
        em_fn_close(e);
        em_blank(e);
    }
}

// Combines v (float) over the threads of a row; afterwards all of them hold the result.
// Block trees use sdata[] (declared by rx_kernel_head).
static void rx_allreduce(Emit *e, const Task *t, const char *v, int op) {
    if (rx_map(t) == RX_THREAD) return;
    if (rx_map(t) == RX_BLOCK) {
        if (t->p[R_RED] != RED_TREE) {
            em_line(e, "%s = %s(%s);", v, rx_block_fn(t, op), v);
            return;
        }
        em_line(e, "sdata[tid] = %s;", v);
        em_line(e, "__syncthreads();");
        em_line(e, "for (int s = %s / 2; s > 0; s >>= 1) {", rx_B(t));
        em_in(e);
        em_line(e, "if (tid < s) sdata[tid] = %s;", rx_comb(op, "sdata[tid]", "sdata[tid + s]"));
        em_line(e, "__syncthreads();");
        em_out(e);
        em_line(e, "}");
        em_line(e, "%s = sdata[0];", v);
        em_line(e, "__syncthreads();");
        return;
    }
    if (t->p[R_HELPER]) {
        em_line(e, "%s = %s(%s);", v, rx_warp_fn(t, op), v);
        return;
    }
    rx_shfl_loop(e, t, v, op, t->p[R_RED] == RED_DOWN);
    if (t->p[R_RED] == RED_DOWN) em_line(e, "%s = __shfl_sync(%s, %s, 0);", v, rx_mask(t), v);
}



static void rx_end(Emit *e) {
    em_out(e);
    em_line(e, "}");
}



// Arg-reductions: the pair (v, i) with the best value, the lowest index on ties.
// dir: OP_MAX or OP_MIN. vt: the value type ("float", "int").
static const char *rx_better(int dir, const char *ov, const char *oi, const char *v, const char *i) {
    return fmt("%s %s %s || (%s == %s && %s < %s)", ov, dir == OP_MAX ? ">" : "<", v, ov, v, oi, i);
}
static const char *rx_arg_identity(int dir, const char *vt) {
    if (strcmp(vt, "int") == 0) return dir == OP_MAX ? RX_INT_MIN : RX_INT_MAX;
    return dir == OP_MAX ? RX_LOWEST : RX_HIGHEST;
}
static const char *rx_warp_arg_fn(const Task *t, int dir) {
    const char *d = dir == OP_MAX ? "max" : "min";
    switch (t->p[R_KNAME] % 3) {
    case 0: return fmt("warp_arg%s", d);
    case 1: return fmt("warpArg%s", dir == OP_MAX ? "Max" : "Min");
    default: return fmt("warp_reduce_arg%s", d);
    }
}
static const char *rx_block_arg_fn(const Task *t, int dir) {
    const char *d = dir == OP_MAX ? "max" : "min";
    switch (t->p[R_KNAME] % 3) {
    case 0: return fmt("block_arg%s", d);
    case 1: return fmt("blockArg%s", dir == OP_MAX ? "Max" : "Min");
    default: return fmt("block_reduce_arg%s", d);
    }
}
// The shuffle loop over a (v, i) pair.
static void rx_arg_shfl_loop(Emit *e, const Task *t, const char *vt, const char *v, const char *i, int dir, int down) {
    const char *fn = down ? "__shfl_down_sync" : "__shfl_xor_sync";
    em_line(e, "for (int offset = 16; offset > 0; offset >>= 1) {");
    em_in(e);
    em_line(e, "const %s ov = %s(%s, %s, offset);", vt, fn, rx_mask(t), v);
    em_line(e, "const int oi = %s(%s, %s, offset);", fn, rx_mask(t), i);
    em_line(e, "if (%s) {", rx_better(dir, "ov", "oi", v, i));
    em_in(e);
    em_line(e, "%s = ov;", v);
    em_line(e, "%s = oi;", i);
    em_out(e);
    em_line(e, "}");
    em_out(e);
    em_line(e, "}");
    if (down) {
        em_line(e, "%s = __shfl_sync(%s, %s, 0);", v, rx_mask(t), v);
        em_line(e, "%s = __shfl_sync(%s, %s, 0);", i, rx_mask(t), i);
    }
}
static void rx_arg_helpers(Emit *e, const Task *t, const char *vt, int dir) {
    if (!rx_shuffles(t) || (rx_map(t) == RX_WARP && !t->p[R_HELPER])) return;
    int down = t->p[R_RED] == RED_DOWN;
    em_comment(e, t, fmt("Warp-wide arg%s of (v, i) pairs: the %s value, the lower index on ties; all lanes end with it.",
                         dir == OP_MAX ? "max" : "min", dir == OP_MAX ? "larger" : "smaller"), 0);
    em_fn_open(e, t, "", "__device__ __forceinline__ void", rx_warp_arg_fn(t, dir), fmt("%s &v, int &i", vt));
    rx_arg_shfl_loop(e, t, vt, "v", "i", dir, down);
    em_fn_close(e);
    em_blank(e);
    if (rx_map(t) != RX_BLOCK) return;
    em_comment(e, t, fmt("Block-wide arg%s: warps reduce with shuffles, per-warp winners meet in shared memory.", dir == OP_MAX ? "max" : "min"), 0);
    em_fn_open(e, t, "", "__device__ void", rx_block_arg_fn(t, dir), fmt("%s &v, int &i", vt));
    em_line(e, "__shared__ %s warp_val[32];", vt);
    em_line(e, "__shared__ int warp_idx[32];");
    em_line(e, "const int lane = threadIdx.x & 31;");
    em_line(e, "const int wid = threadIdx.x >> 5;");
    em_line(e, "%s(v, i);", rx_warp_arg_fn(t, dir));
    em_line(e, "if (lane == 0) {");
    em_in(e);
    em_line(e, "warp_val[wid] = v;");
    em_line(e, "warp_idx[wid] = i;");
    em_out(e);
    em_line(e, "}");
    em_line(e, "__syncthreads();");
    em_line(e, "const int nwarps = (blockDim.x + 31) >> 5;");
    em_line(e, "v = lane < nwarps ? warp_val[lane] : %s;", rx_arg_identity(dir, vt));
    em_line(e, "i = lane < nwarps ? warp_idx[lane] : %s;", RX_INT_MAX);
    em_line(e, "%s(v, i);", rx_warp_arg_fn(t, dir));
    em_line(e, "__syncthreads();");
    em_fn_close(e);
    em_blank(e);
}
// All-reduce of (v, i) over a row's threads; block trees use sval[] and sidx[].
static void rx_arg_allreduce(Emit *e, const Task *t, const char *vt, const char *v, const char *i, int dir) {
    if (rx_map(t) == RX_THREAD) return;
    if (rx_map(t) == RX_BLOCK) {
        if (t->p[R_RED] != RED_TREE) {
            em_line(e, "%s(%s, %s);", rx_block_arg_fn(t, dir), v, i);
            return;
        }
        em_line(e, "sval[tid] = %s;", v);
        em_line(e, "sidx[tid] = %s;", i);
        em_line(e, "__syncthreads();");
        em_line(e, "for (int s = %s / 2; s > 0; s >>= 1) {", rx_B(t));
        em_in(e);
        em_line(e, "if (tid < s) {");
        em_in(e);
        em_line(e, "const %s ov = sval[tid + s];", vt);
        em_line(e, "const int oi = sidx[tid + s];");
        em_line(e, "if (%s) {", rx_better(dir, "ov", "oi", "sval[tid]", "sidx[tid]"));
        em_in(e);
        em_line(e, "sval[tid] = ov;");
        em_line(e, "sidx[tid] = oi;");
        em_out(e);
        em_line(e, "}");
        em_out(e);
        em_line(e, "}");
        em_line(e, "__syncthreads();");
        em_out(e);
        em_line(e, "}");
        em_line(e, "%s = sval[0];", v);
        em_line(e, "%s = sidx[0];", i);
        em_line(e, "__syncthreads();");
        return;
    }
    if (t->p[R_HELPER]) em_line(e, "%s(%s, %s);", rx_warp_arg_fn(t, dir), v, i);
    else rx_arg_shfl_loop(e, t, vt, v, i, dir, t->p[R_RED] == RED_DOWN);
}


// The shared arrays sval/sidx of an arg tree (after the kernel head).
static void rx_arg_shared(Emit *e, const Task *t, const char *vt) {
    if (!rx_tree(t)) return;
    if (t->p[R_SHMEM] == SHM_DYNAMIC) {
        em_line(e, "extern __shared__ int smem_raw[];");
        em_line(e, "%s *sval = (%s *)smem_raw;", vt, vt);
        em_line(e, "int *sidx = smem_raw + blockDim.x;");
    } else {
        em_line(e, "__shared__ %s sval[%s];", vt, rx_B(t));
        em_line(e, "__shared__ int sidx[%s];", rx_B(t));
    }
}

// ----------------------------------------------------------------------------
// One-dimensional families borrow the row writers through a copy of the task whose R_*
// slots describe one block (rx_as_block).

static Task rx_as_block(const Task *t, int block, int red, int shmem, int mask, int kname) {
    Task tt = *t;
    tt.p[R_MAP] = RX_BLOCK;
    tt.p[R_BLOCK] = block;
    tt.p[R_RED] = red;
    tt.p[R_SHMEM] = shmem;
    tt.p[R_HELPER] = red != RED_TREE;
    tt.p[R_MASK] = mask;
    tt.p[R_KNAME] = kname;
    tt.p[R_NAMES] = 0;
    return tt;
}
static const char *rx_ct(int is_int) { return is_int ? "int" : "float"; }
static const char *rx_zero(int is_int) { return is_int ? "0" : "0.0f"; }
static const char *rx_scratch(const Task *t, const char *name) {
    return fmt("%s%s%s", dev_affix[t->st.devname][0], name, dev_affix[t->st.devname][1]);
}

// ----------------------------------------------------------------------------
// Inclusive scan within a block (segments of the array scanned independently)

enum { SB_N, SB_BLOCK, SB_ALGO, SB_BUFFER, SB_PAD, SB_DTYPE, SB_OP, SB_SHMEM, SB_KNAME, SB_NAMES, SB_TNAME, SB_NP };
static const char *const sb_algos[] = { "hillis_steele", "blelloch", NULL };
static const char *const sb_buffers[] = { "double", "single", NULL };
static const char *const sb_ops[] = { "sum", "max", NULL };
static const ParamDesc sb_params[] = {
    { "n", NULL, 1, NULL }, { "block", NULL, 1, NULL }, { "algo", sb_algos, 1, NULL }, { "buffer", sb_buffers, 0, NULL }, { "padding", NULL, 0, NULL },
    { "dtype", rx_dtypes, 1, NULL }, { "op", sb_ops, 1, NULL }, { "shmem", rx_shmems, 0, NULL }, { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL },
    { "tname", NULL, 0, NULL }, { NULL, NULL, 0, NULL } };
static const char *const sb_names[][2] = { { "x", "y" }, { "input", "scanned" }, { "values", "prefix" }, { "data", "out" } };
static const char *const sb_kn[] = { "block_scan", "blockScanInclusive", "scan_segments", "inclusive_scan_block" };

static int sb_seg(const Task *t) { return t->p[SB_ALGO] ? 2 * t->p[SB_BLOCK] : t->p[SB_BLOCK]; }

static void sb_draw(Task *t, Rng *r) {
    static const int ns[] = { 1000, 4096, 10000, 65536, 100000, 262144, 1000000 };
    static const int blocks[] = { 64, 128, 256, 512, 1024 };
    t->p[SB_N] = ns[RPICK(r, ns)];
    t->p[SB_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[SB_ALGO] = rng_int(r, 0, 1);
    t->p[SB_BUFFER] = t->p[SB_ALGO] ? 0 : rng_int(r, 0, 1);
    t->p[SB_PAD] = t->p[SB_ALGO] ? rng_int(r, 0, 1) : 0;
    t->p[SB_DTYPE] = rng_int(r, 0, 1);
    t->p[SB_OP] = rng_chance(r, 70) ? 0 : 1;
    t->p[SB_SHMEM] = rng_int(r, 0, 2);
    t->p[SB_KNAME] = rng_int(r, 0, 3);
    t->p[SB_NAMES] = rng_int(r, 0, 3);
    t->p[SB_TNAME] = rng_int(r, 0, 2);
    rx_set_names(t, sb_names[t->p[SB_NAMES]], 1, 1);
    snprintf(t->kname[0], sizeof t->kname[0], "%s", sb_kn[t->p[SB_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "block_scan");
}
static void sb_layout(Task *t) {
    int is_int = t->p[SB_DTYPE], mx = t->p[SB_OP];
    t->nsize = 0;
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[SB_N]);
    tset(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[SB_N], 0);
    tfac(&t->in[0], n, -1);
    if (is_int) trange(&t->in[0], mx ? -1000000 : -100, mx ? 1000000 : 100, 1);
    else trange(&t->in[0], mx ? -100 : 0, mx ? 100 : 1, 0);
    tset(&t->out[0], t->in[0].dt, 1, t->p[SB_N], 0);
    tfac(&t->out[0], n, -1);
    int exact = is_int || mx;
    t->atol = exact ? 0 : 1e-6;
    t->rtol = exact ? 0 : rx_sum_rel(sb_seg(t));
}
static void sb_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Block_Inclusive_Scan", "Segmented_Prefix_Sum", "Per_Block_Scan" },
                                          { "Block_Running_Max", "Segmented_Prefix_Max", "Per_Block_Max_Scan" } };
    buf_puts(name, nm[t->p[SB_OP]][t->p[SB_TNAME]]);
    const Tensor *x = &t->in[0];
    int seg = sb_seg(t);
    buf_printf(desc, "%s holds %d %s values in [%s, %s%s. Split it into consecutive segments of %d elements (the last one may be shorter) and "
                     "compute the inclusive prefix %s within each segment: %s[i] = %s of %s[s..i], where s = i - i %% %d is the start of i's segment. ",
               x->name, t->p[SB_N], dt_names[x->dt], fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")", seg, t->p[SB_OP] ? "maximum" : "sum",
               t->out[0].name, t->p[SB_OP] ? "the maximum" : "the sum", x->name, seg);
    if (t->p[SB_ALGO])
        buf_printf(desc, "One block of %d threads per segment, two elements per thread, with the work-efficient Blelloch scan in shared memory "
                         "(up-sweep, clear the root, down-sweep gives the exclusive scan; combine each element with its own value)%s.",
                   t->p[SB_BLOCK], t->p[SB_PAD] ? ", padding shared-memory indices to avoid bank conflicts" : "");
    else
        buf_printf(desc, "One block of %d threads per segment, one element per thread, with the Hillis-Steele scan in shared memory (%s).",
                   t->p[SB_BLOCK], t->p[SB_BUFFER] ? "one buffer: read the partner, __syncthreads(), then update" : "double buffering between steps");
}
static const char *sb_op(const Task *t, const char *a, const char *b) {
    if (!t->p[SB_OP]) return fmt("%s + %s", a, b);
    return fmt("%s(%s, %s)", t->p[SB_DTYPE] ? "max" : "fmaxf", a, b);
}
static const char *sb_ident(const Task *t) {
    if (!t->p[SB_OP]) return rx_zero(t->p[SB_DTYPE]);
    return t->p[SB_DTYPE] ? RX_INT_MIN : RX_LOWEST;
}
static void sb_kernels(const Task *t, Emit *e) {
    const char *T = rx_ct(t->p[SB_DTYPE]), *I = sb_ident(t);
    const char *x = t->in[0].name, *y = t->out[0].name;
    int sh = t->p[SB_SHMEM], bl = t->p[SB_ALGO], pad = t->p[SB_PAD], dbl = !bl && !t->p[SB_BUFFER];
    const char *B = sh == SHM_DEFINE ? "BLOCK_SIZE" : sh == SHM_TEMPLATE ? "BLOCK" : "blockDim.x";
    if (sh == SHM_DEFINE) em_line(e, "#define BLOCK_SIZE %d", t->p[SB_BLOCK]);
    if (pad) {
        em_line(e, "#define LOG_NUM_BANKS 5");
        em_line(e, "#define CONFLICT_FREE_OFFSET(k) ((k) >> LOG_NUM_BANKS)");
    }
    if (sh == SHM_DEFINE || pad) em_blank(e);
    const char *params = fmt("%s, %s, int n", ptr_param(t, T, x, 1), ptr_param(t, T, y, 0));
    const char *tmpl = sh == SHM_TEMPLATE ? "template <int BLOCK>\n" : "";
    if (!bl) {
        em_comment(e, t, fmt("Inclusive %s scan of each block's %s elements (Hillis-Steele, %s).", t->p[SB_OP] ? "max" : "sum", B,
                             dbl ? "double-buffered" : "single buffer"), 0);
        em_fn_open(e, t, tmpl, "__global__ void", t->kname[0], params);
        const char *at_out, *at_in, *at_sh;
        if (dbl) {
            if (sh == SHM_DYNAMIC) {
                em_line(e, "extern __shared__ %s buf[];", T);
                at_out = "buf[pout * blockDim.x + tid]";
                at_in = "buf[pin * blockDim.x + tid]";
                at_sh = "buf[pin * blockDim.x + tid - off]";
            } else {
                em_line(e, "__shared__ %s buf[2][%s];", T, B);
                at_out = "buf[pout][tid]";
                at_in = "buf[pin][tid]";
                at_sh = "buf[pin][tid - off]";
            }
        } else {
            if (sh == SHM_DYNAMIC) em_line(e, "extern __shared__ %s s[];", T);
            else em_line(e, "__shared__ %s s[%s];", T, B);
            at_out = at_in = "s[tid]";
            at_sh = "s[tid - off]";
        }
        em_line(e, "const int tid = threadIdx.x;");
        em_line(e, "const int i = blockIdx.x * blockDim.x + tid;");
        if (dbl) {
            em_line(e, "int pout = 0, pin = 1;");
            em_line(e, "%s = i < n ? %s[i] : %s;", at_out, x, I);
        } else {
            em_line(e, "s[tid] = i < n ? %s[i] : %s;", x, I);
        }
        em_line(e, "__syncthreads();");
        em_line(e, "for (int off = 1; off < %s; off <<= 1) {", B);
        em_in(e);
        if (dbl) {
            em_note(e, t, "swap the roles of the two buffers");
            em_line(e, "pout = 1 - pout;");
            em_line(e, "pin = 1 - pout;");
            em_line(e, "if (tid >= off) %s = %s;", at_out, sb_op(t, at_sh, at_in));
            em_line(e, "else %s = %s;", at_out, at_in);
            em_line(e, "__syncthreads();");
        } else {
            em_line(e, "const %s other = tid >= off ? %s : %s;", T, at_sh, I);
            em_line(e, "__syncthreads();");
            em_line(e, "s[tid] = %s;", sb_op(t, "s[tid]", "other"));
            em_line(e, "__syncthreads();");
        }
        rx_end(e);
        em_line(e, "if (i < n) %s[i] = %s;", y, at_out);
        em_fn_close(e);
        return;
    }
    const char *P = pad ? "%s + CONFLICT_FREE_OFFSET(%s)" : "%s";
    em_comment(e, t, fmt("Inclusive %s scan of each block's 2 * %s elements: Blelloch's work-efficient scan in shared memory%s.",
                         t->p[SB_OP] ? "max" : "sum", B, pad ? " with padded indices" : ""), 0);
    em_fn_open(e, t, tmpl, "__global__ void", t->kname[0], params);
    if (sh == SHM_DYNAMIC) em_line(e, "extern __shared__ %s temp[];", T);
    else if (pad) em_line(e, "__shared__ %s temp[2 * %s + CONFLICT_FREE_OFFSET(2 * %s)];", T, B, B);
    else em_line(e, "__shared__ %s temp[2 * %s];", T, B);
    em_line(e, "const int tid = threadIdx.x;");
    em_line(e, "const int nseg = 2 * %s;", B);
    em_line(e, "const int base = blockIdx.x * nseg;");
    em_line(e, "const int ai = tid, bi = tid + nseg / 2;");
    em_line(e, "const %s xa = base + ai < n ? %s[base + ai] : %s;", T, x, I);
    em_line(e, "const %s xb = base + bi < n ? %s[base + bi] : %s;", T, x, I);
    if (pad) {
        em_line(e, "const int pa = ai + CONFLICT_FREE_OFFSET(ai), pb = bi + CONFLICT_FREE_OFFSET(bi);");
        em_line(e, "temp[pa] = xa;");
        em_line(e, "temp[pb] = xb;");
    } else {
        em_line(e, "temp[ai] = xa;");
        em_line(e, "temp[bi] = xb;");
    }
    em_line(e, "int offset = 1;");
    em_note(e, t, "up-sweep: build partial results in place up the tree");
    em_line(e, "for (int d = nseg >> 1; d > 0; d >>= 1) {");
    em_in(e);
    em_line(e, "__syncthreads();");
    em_line(e, "if (tid < d) {");
    em_in(e);
    em_line(e, "int a = offset * (2 * tid + 1) - 1;");
    em_line(e, "int b = offset * (2 * tid + 2) - 1;");
    if (pad) {
        em_line(e, "a += CONFLICT_FREE_OFFSET(a);");
        em_line(e, "b += CONFLICT_FREE_OFFSET(b);");
    }
    em_line(e, "temp[b] = %s;", sb_op(t, "temp[b]", "temp[a]"));
    rx_end(e);
    em_line(e, "offset <<= 1;");
    rx_end(e);
    const char *last = fmt(P, "nseg - 1", "nseg - 1");
    em_line(e, "if (tid == 0) temp[%s] = %s;", last, I);
    em_note(e, t, "down-sweep: push the prefixes back down; this leaves the exclusive scan");
    em_line(e, "for (int d = 1; d < nseg; d <<= 1) {");
    em_in(e);
    em_line(e, "offset >>= 1;");
    em_line(e, "__syncthreads();");
    em_line(e, "if (tid < d) {");
    em_in(e);
    em_line(e, "int a = offset * (2 * tid + 1) - 1;");
    em_line(e, "int b = offset * (2 * tid + 2) - 1;");
    if (pad) {
        em_line(e, "a += CONFLICT_FREE_OFFSET(a);");
        em_line(e, "b += CONFLICT_FREE_OFFSET(b);");
    }
    em_line(e, "const %s tmp = temp[a];", T);
    em_line(e, "temp[a] = temp[b];");
    em_line(e, "temp[b] = %s;", sb_op(t, "temp[b]", "tmp"));
    rx_end(e);
    rx_end(e);
    em_line(e, "__syncthreads();");
    em_note(e, t, "inclusive = exclusive combined with the element itself");
    em_line(e, "if (base + ai < n) %s[base + ai] = %s;", y, sb_op(t, pad ? "temp[pa]" : "temp[ai]", "xa"));
    em_line(e, "if (base + bi < n) %s[base + bi] = %s;", y, sb_op(t, pad ? "temp[pb]" : "temp[bi]", "xb"));
    em_fn_close(e);
}
static void sb_launch(const Task *t, Emit *e, const Host *h) {
    int sh = t->p[SB_SHMEM], B = t->p[SB_BLOCK];
    const char *T = rx_ct(t->p[SB_DTYPE]);
    const char *k = sh == SHM_TEMPLATE ? fmt("%s<%d>", t->kname[0], B) : t->kname[0];
    if (sh == SHM_DEFINE) em_line(e, "const int threads = BLOCK_SIZE;");
    else em_line(e, "const int threads = %d;", B);
    const char *per = t->p[SB_ALGO] ? "2 * threads" : "threads";
    em_line(e, "const int blocks = (%s + %s - 1) / (%s);", h->size[0], per, per);
    const char *cfg = "blocks, threads";
    if (sh == SHM_DYNAMIC) {
        if (t->p[SB_ALGO] && t->p[SB_PAD]) em_line(e, "const size_t smem = (2 * threads + ((2 * threads) >> 5)) * sizeof(%s);", T);
        else if (t->p[SB_ALGO] || !t->p[SB_BUFFER]) em_line(e, "const size_t smem = 2 * threads * sizeof(%s);", T);
        else em_line(e, "const size_t smem = threads * sizeof(%s);", T);
        cfg = "blocks, threads, smem";
    }
    em_launch(e, k, cfg, fmt("%s, %s, %s", h->in[0], h->out[0], h->size[0]));
}
static void sb_ref(const Task *t, const void *const *in, void *const *out) {
    long n = t->p[SB_N], seg = sb_seg(t);
    int is_int = t->p[SB_DTYPE], mx = t->p[SB_OP];
    double acc = 0;
    for (long i = 0; i < n; i++) {
        double v = is_int ? (double)((const int *)in[0])[i] : (double)((const float *)in[0])[i];
        if (i % seg == 0) acc = v;
        else acc = mx ? (v > acc ? v : acc) : acc + v;
        if (is_int) ((int *)out[0])[i] = (int)acc;
        else ((float *)out[0])[i] = (float)acc;
    }
}
static const Family fam_scan_block = { "scan_block", "inclusive sum/max scan of each block-sized segment in shared memory: Hillis-Steele (double or single buffer) or Blelloch (optionally padded)",
                                       sb_params, NULL, sb_draw, sb_layout, sb_describe, sb_kernels, sb_launch, sb_ref };

// ----------------------------------------------------------------------------
// Exclusive scan of a long array: scan each block, scan the block totals, add offsets

enum { SE_N, SE_BLOCK, SE_ALGO, SE_DTYPE, SE_SUMS, SE_SHMEM, SE_KNAME, SE_NAMES, SE_TNAME, SE_NP };
static const char *const se_sums[] = { "block_loop", "serial", NULL };
static const char *const se_shmems[] = { "define", "dynamic", NULL };
static const ParamDesc se_params[] = {
    { "n", NULL, 1, NULL }, { "block", NULL, 1, NULL }, { "algo", sb_algos, 1, NULL }, { "dtype", rx_dtypes, 1, NULL }, { "sums", se_sums, 1, NULL },
    { "shmem", se_shmems, 0, NULL }, { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL }, { "tname", NULL, 0, NULL }, { NULL, NULL, 0, NULL } };
static const char *const se_names[][2] = { { "x", "y" }, { "input", "prefix" }, { "values", "offsets" }, { "counts", "starts" } };
static const char *const se_kn[3][4] = { { "scan_blocks", "blockScanKernel", "local_scan", "scan_per_block" },
                                         { "scan_block_sums", "scanBlockTotals", "scan_totals", "scan_partials" },
                                         { "add_block_offsets", "addBlockOffsets", "uniform_add", "add_offsets" } };

static void se_draw(Task *t, Rng *r) {
    static const int ns[] = { 10000, 65536, 100000, 262144, 1000000, 1048576, 2000000 };
    static const int blocks[] = { 128, 256, 512, 1024 };
    t->p[SE_N] = ns[RPICK(r, ns)];
    t->p[SE_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[SE_ALGO] = rng_int(r, 0, 1);
    t->p[SE_DTYPE] = rng_int(r, 0, 1);
    t->p[SE_SUMS] = rng_int(r, 0, 1);
    t->p[SE_SHMEM] = rng_int(r, 0, 1);
    t->p[SE_KNAME] = rng_int(r, 0, 3);
    t->p[SE_NAMES] = rng_int(r, 0, 3);
    t->p[SE_TNAME] = rng_int(r, 0, 2);
    rx_set_names(t, se_names[t->p[SE_NAMES]], 1, 1);
    for (int k = 0; k < 3; k++) snprintf(t->kname[k], sizeof t->kname[k], "%s", se_kn[k][t->p[SE_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "exclusive_scan");
}
static void se_layout(Task *t) {
    int is_int = t->p[SE_DTYPE];
    t->nsize = 0;
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[SE_N]);
    tset(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[SE_N], 0);
    tfac(&t->in[0], n, -1);
    if (is_int) trange(&t->in[0], t->p[SE_N] > 1000000 ? 0 : -100, t->p[SE_N] > 1000000 ? 9 : 100, 1);
    else trange(&t->in[0], 0, 1, 0);
    tset(&t->out[0], t->in[0].dt, 1, t->p[SE_N], 0);
    tfac(&t->out[0], n, -1);
    t->atol = is_int ? 0 : 1e-6;
    t->rtol = is_int ? 0 : rx_sum_rel(t->p[SE_N]);
}
static void se_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[] = { "Exclusive_Scan", "Exclusive_Prefix_Sum", "Large_Array_Prefix_Sum" };
    buf_puts(name, nm[t->p[SE_TNAME]]);
    const Tensor *x = &t->in[0];
    int B = t->p[SE_BLOCK], seg = t->p[SE_ALGO] ? 2 * B : B;
    buf_printf(desc, "Compute the exclusive prefix sum of the %d %s values of %s (in [%s, %s%s): %s[0] = 0 and %s[i] = %s[0] + ... + %s[i-1]. "
                     "Use three kernels: each block of %d threads scans its %d elements in shared memory (%s) and writes its total; ",
               t->p[SE_N], dt_names[x->dt], x->name, fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")", t->out[0].name, t->out[0].name,
               x->name, x->name, B, seg, t->p[SE_ALGO] ? "Blelloch" : "Hillis-Steele");
    buf_puts(desc, t->p[SE_SUMS] ? "a single thread scans the block totals; " : "one block scans the block totals in chunks, carrying the running total; ");
    buf_puts(desc, "a third kernel adds each block's offset to its elements.");
}
// The shared-memory Hillis-Steele inclusive scan of s[0..B) (every thread calls it).
static void se_hs(Emit *e, const char *T, const char *B) {
    em_line(e, "for (int off = 1; off < %s; off <<= 1) {", B);
    em_in(e);
    em_line(e, "const %s other = tid >= off ? s[tid - off] : 0;", T);
    em_line(e, "__syncthreads();");
    em_line(e, "s[tid] += other;");
    em_line(e, "__syncthreads();");
    rx_end(e);
}
static void se_kernels(const Task *t, Emit *e) {
    const char *T = rx_ct(t->p[SE_DTYPE]), *Z = rx_zero(t->p[SE_DTYPE]);
    const char *x = t->in[0].name, *y = t->out[0].name;
    int dyn = t->p[SE_SHMEM] == 1, bl = t->p[SE_ALGO];
    const char *B = dyn ? "blockDim.x" : "BLOCK_SIZE";
    if (!dyn) {
        em_line(e, "#define BLOCK_SIZE %d", t->p[SE_BLOCK]);
        em_blank(e);
    }
    // kernel 1
    em_comment(e, t, fmt("Step 1: exclusive scan of each block's %s elements in shared memory; the block's total goes to block_sums.",
                         bl ? "2 * blockDim.x" : "blockDim.x"), 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[0],
               fmt("%s, %s, %s, int n", ptr_param(t, T, x, 1), ptr_param(t, T, y, 0), ptr_param(t, T, "block_sums", 0)));
    if (!bl) {
        if (dyn) em_line(e, "extern __shared__ %s s[];", T);
        else em_line(e, "__shared__ %s s[%s];", T, B);
        em_line(e, "const int tid = threadIdx.x;");
        em_line(e, "const int i = blockIdx.x * blockDim.x + tid;");
        em_line(e, "s[tid] = i < n ? %s[i] : %s;", x, Z);
        em_line(e, "__syncthreads();");
        se_hs(e, T, B);
        em_note(e, t, "shift by one: the exclusive result is the inclusive result of the left neighbour");
        em_line(e, "if (i < n) %s[i] = tid > 0 ? s[tid - 1] : %s;", y, Z);
        em_line(e, "if (tid == blockDim.x - 1) block_sums[blockIdx.x] = s[tid];");
    } else {
        if (dyn) em_line(e, "extern __shared__ %s s[];", T);
        else em_line(e, "__shared__ %s s[2 * %s];", T, B);
        em_line(e, "const int tid = threadIdx.x;");
        em_line(e, "const int m = 2 * blockDim.x;");
        em_line(e, "const int base = blockIdx.x * m;");
        em_line(e, "s[tid] = base + tid < n ? %s[base + tid] : %s;", x, Z);
        em_line(e, "s[tid + blockDim.x] = base + tid + blockDim.x < n ? %s[base + tid + blockDim.x] : %s;", x, Z);
        em_line(e, "int offset = 1;");
        em_line(e, "for (int d = m >> 1; d > 0; d >>= 1) {");
        em_in(e);
        em_line(e, "__syncthreads();");
        em_line(e, "if (tid < d) s[offset * (2 * tid + 2) - 1] += s[offset * (2 * tid + 1) - 1];");
        em_line(e, "offset <<= 1;");
        rx_end(e);
        em_line(e, "if (tid == 0) {");
        em_in(e);
        em_line(e, "block_sums[blockIdx.x] = s[m - 1];");
        em_line(e, "s[m - 1] = %s;", Z);
        rx_end(e);
        em_line(e, "for (int d = 1; d < m; d <<= 1) {");
        em_in(e);
        em_line(e, "offset >>= 1;");
        em_line(e, "__syncthreads();");
        em_line(e, "if (tid < d) {");
        em_in(e);
        em_line(e, "const int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;");
        em_line(e, "const %s tmp = s[a];", T);
        em_line(e, "s[a] = s[b];");
        em_line(e, "s[b] += tmp;");
        rx_end(e);
        rx_end(e);
        em_line(e, "__syncthreads();");
        em_line(e, "if (base + tid < n) %s[base + tid] = s[tid];", y);
        em_line(e, "if (base + tid + blockDim.x < n) %s[base + tid + blockDim.x] = s[tid + blockDim.x];", y);
    }
    em_fn_close(e);
    em_blank(e);
    // kernel 2
    if (t->p[SE_SUMS]) {
        em_comment(e, t, "Step 2: one thread turns the block totals into exclusive offsets.", 0);
        em_fn_open(e, t, "", "__global__ void", t->kname[1], fmt("%s, int count", ptr_param(t, T, "sums", 0)));
        em_line(e, "if (threadIdx.x != 0 || blockIdx.x != 0) return;");
        em_line(e, "%s run = %s;", T, Z);
        em_line(e, "for (int b = 0; b < count; b++) {");
        em_in(e);
        em_line(e, "const %s v = sums[b];", T);
        em_line(e, "sums[b] = run;");
        em_line(e, "run += v;");
        rx_end(e);
    } else {
        em_comment(e, t, "Step 2: one block turns the block totals into exclusive offsets, a chunk of blockDim.x at a time.", 0);
        em_fn_open(e, t, "", "__global__ void", t->kname[1], fmt("%s, int count", ptr_param(t, T, "sums", 0)));
        if (dyn) em_line(e, "extern __shared__ %s s[];", T);
        else em_line(e, "__shared__ %s s[%s];", T, B);
        em_line(e, "const int tid = threadIdx.x;");
        em_line(e, "%s carry = %s;", T, Z);
        em_line(e, "for (int base = 0; base < count; base += blockDim.x) {");
        em_in(e);
        em_line(e, "const int i = base + tid;");
        em_line(e, "s[tid] = i < count ? sums[i] : %s;", Z);
        em_line(e, "__syncthreads();");
        se_hs(e, T, B);
        em_line(e, "if (i < count) sums[i] = carry + (tid > 0 ? s[tid - 1] : %s);", Z);
        em_line(e, "carry += s[blockDim.x - 1];");
        em_line(e, "__syncthreads();");
        rx_end(e);
    }
    em_fn_close(e);
    em_blank(e);
    // kernel 3
    em_comment(e, t, "Step 3: add each block's offset to its elements.", 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[2], fmt("%s, %s, int n", ptr_param(t, T, y, 0), ptr_param(t, T, "sums", 1)));
    em_line(e, "const %s add = sums[blockIdx.x];", T);
    if (bl) {
        em_line(e, "const int i = blockIdx.x * 2 * blockDim.x + threadIdx.x;");
        em_line(e, "if (i < n) %s[i] += add;", y);
        em_line(e, "if (i + blockDim.x < n) %s[i + blockDim.x] += add;", y);
    } else {
        em_line(e, "const int i = blockIdx.x * blockDim.x + threadIdx.x;");
        em_line(e, "if (i < n) %s[i] += add;", y);
    }
    em_fn_close(e);
}
static void se_launch(const Task *t, Emit *e, const Host *h) {
    const char *T = rx_ct(t->p[SE_DTYPE]);
    int dyn = t->p[SE_SHMEM] == 1, bl = t->p[SE_ALGO];
    if (dyn) em_line(e, "const int threads = %d;", t->p[SE_BLOCK]);
    else em_line(e, "const int threads = BLOCK_SIZE;");
    const char *per = bl ? "2 * threads" : "threads";
    em_line(e, "const int blocks = (%s + %s - 1) / (%s);", h->size[0], per, per);
    const char *sums = rx_scratch(t, "block_sums");
    host_dev_alloc(e, t, T, sums, "blocks");
    const char *cfg1 = "blocks, threads", *cfg2 = t->p[SE_SUMS] ? "1, 1" : "1, threads";
    if (dyn) {
        em_line(e, "const size_t smem = %s * sizeof(%s);", per, T);
        cfg1 = "blocks, threads, smem";
        if (!t->p[SE_SUMS]) cfg2 = fmt("1, threads, threads * sizeof(%s)", T);
    }
    em_launch(e, t->kname[0], cfg1, fmt("%s, %s, %s, %s", h->in[0], h->out[0], sums, h->size[0]));
    em_launch(e, t->kname[1], cfg2, fmt("%s, blocks", sums));
    em_launch(e, t->kname[2], "blocks, threads", fmt("%s, %s, %s", h->out[0], sums, h->size[0]));
    host_call(e, t, "cudaDeviceSynchronize()");
    host_call(e, t, "cudaFree(%s)", sums);
}
static void se_ref(const Task *t, const void *const *in, void *const *out) {
    double acc = 0;
    for (long i = 0; i < t->p[SE_N]; i++) {
        if (t->p[SE_DTYPE]) {
            ((int *)out[0])[i] = (int)acc;
            acc += ((const int *)in[0])[i];
        } else {
            ((float *)out[0])[i] = (float)acc;
            acc += ((const float *)in[0])[i];
        }
    }
}
static const Family fam_scan_exclusive = { "scan_exclusive", "exclusive prefix sum of a long array in three kernels: per-block scan (Hillis-Steele or Blelloch), scan of block totals, add offsets",
                                           se_params, NULL, se_draw, se_layout, se_describe, se_kernels, se_launch, se_ref };

// ----------------------------------------------------------------------------
// Argmax of an array: value and index (the lowest index wins ties)

enum { AX_N, AX_BLOCK, AX_ALGO, AX_DTYPE, AX_DATA, AX_CAP, AX_SHFL, AX_MASK, AX_KNAME, AX_NAMES, AX_TNAME, AX_NP };
static const char *const ax_algos[] = { "two_pass_tree", "two_pass_shuffle", "packed_atomic", NULL };
static const char *const ax_shfls[] = { "xor", "down", NULL };
static const ParamDesc ax_params[] = {
    { "n", NULL, 1, NULL }, { "block", NULL, 1, NULL }, { "algo", ax_algos, 1, NULL }, { "dtype", rx_dtypes, 1, NULL }, { "data", am_data, 1, NULL },
    { "cap", NULL, 0, NULL }, { "shfl", ax_shfls, 0, NULL }, { "mask", NULL, 0, NULL }, { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL }, { "tname", NULL, 0, NULL },
    { NULL, NULL, 0, NULL } };
static const char *const ax_names[][3] = { { "x", "max_val", "max_idx" }, { "scores", "top", "top_idx" }, { "values", "peak", "peak_pos" },
                                           { "input", "value", "index" } };
static const char *const ax_kn[3][4] = { { "argmax_partial", "argMaxBlocks", "block_argmax", "argmax_pass1" },
                                         { "argmax_final", "argMaxFinal", "final_argmax", "argmax_pass2" },
                                         { "argmax_unpack", "unpackArgMax", "decode_argmax", "argmax_decode" } };

static void ax_draw(Task *t, Rng *r) {
    static const int blocks[] = { 128, 256, 512, 1024 };
    static const int caps[] = { 64, 256, 1024 };
    t->p[AX_N] = rx_ns[RPICK(r, rx_ns)];
    t->p[AX_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[AX_ALGO] = rng_int(r, 0, 2);
    t->p[AX_DTYPE] = rng_int(r, 0, 1);
    t->p[AX_DATA] = rng_int(r, 0, 1);
    t->p[AX_CAP] = caps[RPICK(r, caps)];
    t->p[AX_SHFL] = rng_int(r, 0, 1);
    t->p[AX_MASK] = rng_int(r, 0, 2);
    t->p[AX_KNAME] = rng_int(r, 0, 3);
    t->p[AX_NAMES] = rng_int(r, 0, 3);
    t->p[AX_TNAME] = rng_int(r, 0, 2);
    rx_set_names(t, ax_names[t->p[AX_NAMES]], 1, 2);
    for (int k = 0; k < 3; k++) snprintf(t->kname[k], sizeof t->kname[k], "%s", ax_kn[k][t->p[AX_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "argmax");
}
static void ax_layout(Task *t) {
    int is_int = t->p[AX_DTYPE], small = t->p[AX_DATA];
    t->nsize = 0;
    t->nin = 1;
    t->nout = 2;
    int n = add_size(t, "n", t->p[AX_N]);
    tset(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[AX_N], 0);
    tfac(&t->in[0], n, -1);
    if (small) trange(&t->in[0], 0, 100, 1);
    else if (is_int) trange(&t->in[0], -1000000000, 1000000000, 1);
    else trange(&t->in[0], -1000, 1000, 0);
    tset(&t->out[0], t->in[0].dt, 1, 1, 0);
    tfac(&t->out[0], -1, -1);
    tset(&t->out[1], DT_I32, 1, 1, 0);
    tfac(&t->out[1], -1, -1);
    t->atol = t->rtol = 0;
}
static void ax_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[] = { "Argmax", "Array_Argmax", "Max_With_Index" };
    buf_puts(name, nm[t->p[AX_TNAME]]);
    const Tensor *x = &t->in[0];
    buf_printf(desc, "%s holds %d %s values (%s in [%s, %s%s). Write %s[0] = the largest value and %s[0] = the index of its first occurrence "
                     "(the lowest index among equal maxima). ",
               x->name, t->p[AX_N], dt_names[x->dt], x->integer ? "whole numbers" : "reals", fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")",
               t->out[0].name, t->out[1].name);
    switch (t->p[AX_ALGO]) {
    case 0: buf_printf(desc, "Reduce (value, index) pairs: a grid-stride loop per thread, a shared-memory tree per block of %d threads writing one pair per block, and a second single-block kernel over the block results.", t->p[AX_BLOCK]); break;
    case 1: buf_printf(desc, "Reduce (value, index) pairs with warp shuffles inside blocks of %d threads, one pair per block, then a second single-block kernel over the block results.", t->p[AX_BLOCK]); break;
    default: buf_printf(desc, "Pack each warp's best pair into a 64-bit key (order-preserving bits of the value in the high word, the complemented index in the low word), combine the keys with atomicMax on unsigned long long, then decode the key in a one-thread kernel."); break;
    }
}
static void ax_kernels(const Task *t, Emit *e) {
    int algo = t->p[AX_ALGO], is_int = t->p[AX_DTYPE];
    const char *T = rx_ct(is_int), *x = t->in[0].name;
    Task tt = rx_as_block(t, t->p[AX_BLOCK], algo == 0 ? RED_TREE : t->p[AX_SHFL] ? RED_DOWN : RED_XOR, SHM_DEFINE, t->p[AX_MASK], t->p[AX_KNAME] % 3);
    if (algo == 2) tt.p[R_RED] = t->p[AX_SHFL] ? RED_DOWN : RED_XOR, tt.p[R_MAP] = RX_WARP, tt.p[R_HELPER] = 1;
    rx_prelude(e, &tt, 1);
    rx_arg_helpers(e, &tt, T, OP_MAX);
    const char *id = rx_arg_identity(OP_MAX, T);
    if (algo == 2) {
        em_comment(e, t, is_int ? "Order-preserving map of int to unsigned: flip the sign bit."
                                : "Order-preserving map of float bits to unsigned: flip all bits of negatives, only the sign bit of the rest.", 0);
        em_fn_open(e, t, "", "__device__ __forceinline__ unsigned int", "ordered_bits", fmt("%s v", T));
        if (is_int) em_line(e, "return (unsigned int)v ^ 0x80000000u;");
        else {
            em_line(e, "const unsigned int u = __float_as_uint(v);");
            em_line(e, "return (u & 0x80000000u) ? ~u : (u | 0x80000000u);");
        }
        em_fn_close(e);
        em_blank(e);
        em_comment(e, t, "Each warp finds its best (value, index) with shuffles; lane 0 folds it into key with a 64-bit atomicMax.", 0);
        em_fn_open(e, t, "", "__global__ void", t->kname[0],
                   fmt("%s, unsigned long long *key, int n", ptr_param(t, T, x, 1)));
    } else {
        em_comment(e, t, "Pass 1: every block reduces its grid-stride share to one (value, index) pair.", 0);
        em_fn_open(e, t, "", "__global__ void", t->kname[0],
                   fmt("%s, %s, %s, int n", ptr_param(t, T, x, 1), ptr_param(t, T, "part_val", 0), ptr_param(t, "int", "part_idx", 0)));
        rx_arg_shared(e, &tt, T);
        em_line(e, "const int tid = threadIdx.x;");
    }
    em_line(e, "%s best = %s;", T, id);
    em_line(e, "int best_i = %s;", RX_INT_MAX);
    em_line(e, "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {");
    em_in(e);
    em_line(e, "const %s v = %s[i];", T, x);
    em_note(e, t, "indices grow along the loop, so > keeps the first occurrence");
    em_line(e, "if (v > best) {");
    em_in(e);
    em_line(e, "best = v;");
    em_line(e, "best_i = i;");
    rx_end(e);
    rx_end(e);
    if (algo == 2) {
        em_line(e, "%s(best, best_i);", rx_warp_arg_fn(&tt, OP_MAX));
        em_line(e, "if ((threadIdx.x & 31) == 0 && best_i < n) {");
        em_in(e);
        em_line(e, "const unsigned long long packed = ((unsigned long long)ordered_bits(best) << 32) | (unsigned int)(~best_i);");
        em_line(e, "atomicMax(key, packed);");
        rx_end(e);
        em_fn_close(e);
        em_blank(e);
        em_comment(e, t, "Decodes the winning key into the value and the index.", 0);
        em_fn_open(e, t, "", "__global__ void", t->kname[2],
                   fmt("const unsigned long long *key, %s, %s", ptr_param(t, T, t->out[0].name, 0), ptr_param(t, "int", t->out[1].name, 0)));
        em_line(e, "const unsigned long long k = key[0];");
        em_line(e, "const unsigned int hi = (unsigned int)(k >> 32);");
        if (is_int) em_line(e, "%s[0] = (int)(hi ^ 0x80000000u);", t->out[0].name);
        else em_line(e, "%s[0] = __uint_as_float((hi & 0x80000000u) ? (hi & 0x7fffffffu) : ~hi);", t->out[0].name);
        em_line(e, "%s[0] = (int)~(unsigned int)(k & 0xffffffffu);", t->out[1].name);
        em_fn_close(e);
        return;
    }
    rx_arg_allreduce(e, &tt, T, "best", "best_i", OP_MAX);
    em_line(e, "if (tid == 0) {");
    em_in(e);
    em_line(e, "part_val[blockIdx.x] = best;");
    em_line(e, "part_idx[blockIdx.x] = best_i;");
    rx_end(e);
    em_fn_close(e);
    em_blank(e);
    em_comment(e, t, "Pass 2: one block reduces the per-block pairs; on equal values the lower index wins.", 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[1],
               fmt("%s, %s, %s, %s, int count", ptr_param(t, T, "part_val", 1), ptr_param(t, "int", "part_idx", 1),
                   ptr_param(t, T, t->out[0].name, 0), ptr_param(t, "int", t->out[1].name, 0)));
    rx_arg_shared(e, &tt, T);
    em_line(e, "const int tid = threadIdx.x;");
    em_line(e, "%s best = %s;", T, id);
    em_line(e, "int best_i = %s;", RX_INT_MAX);
    em_line(e, "for (int j = tid; j < count; j += blockDim.x) {");
    em_in(e);
    em_line(e, "const %s v = part_val[j];", T);
    em_line(e, "const int i = part_idx[j];");
    em_line(e, "if (%s) {", rx_better(OP_MAX, "v", "i", "best", "best_i"));
    em_in(e);
    em_line(e, "best = v;");
    em_line(e, "best_i = i;");
    rx_end(e);
    rx_end(e);
    rx_arg_allreduce(e, &tt, T, "best", "best_i", OP_MAX);
    em_line(e, "if (tid == 0) {");
    em_in(e);
    em_line(e, "%s[0] = best;", t->out[0].name);
    em_line(e, "%s[0] = best_i;", t->out[1].name);
    rx_end(e);
    em_fn_close(e);
}
static void ax_launch(const Task *t, Emit *e, const Host *h) {
    const char *T = rx_ct(t->p[AX_DTYPE]);
    const char *n = h->size[0];
    int algo = t->p[AX_ALGO];
    if (algo == 0) em_line(e, "const int threads = BLOCK_SIZE;");
    else em_line(e, "const int threads = %d;", t->p[AX_BLOCK]);
    em_line(e, "int blocks = (%s + threads - 1) / threads;", n);
    em_line(e, "if (blocks > %d) blocks = %d;", t->p[AX_CAP], t->p[AX_CAP]);
    if (algo == 2) {
        const char *key = rx_scratch(t, "key");
        host_dev_alloc(e, t, "unsigned long long", key, "1");
        host_call(e, t, "cudaMemset(%s, 0, sizeof(unsigned long long))", key);
        em_launch(e, t->kname[0], "blocks, threads", fmt("%s, %s, %s", h->in[0], key, n));
        em_launch(e, t->kname[2], "1, 1", fmt("%s, %s, %s", key, h->out[0], h->out[1]));
        host_call(e, t, "cudaDeviceSynchronize()");
        host_call(e, t, "cudaFree(%s)", key);
        return;
    }
    const char *pv = rx_scratch(t, "part_val"), *pi = rx_scratch(t, "part_idx");
    host_dev_alloc(e, t, T, pv, "blocks");
    host_dev_alloc(e, t, "int", pi, "blocks");
    em_launch(e, t->kname[0], "blocks, threads", fmt("%s, %s, %s, %s", h->in[0], pv, pi, n));
    em_launch(e, t->kname[1], "1, threads", fmt("%s, %s, %s, %s, blocks", pv, pi, h->out[0], h->out[1]));
    host_call(e, t, "cudaDeviceSynchronize()");
    host_call(e, t, "cudaFree(%s)", pv);
    host_call(e, t, "cudaFree(%s)", pi);
}
static void ax_ref(const Task *t, const void *const *in, void *const *out) {
    long bi = 0;
    if (t->p[AX_DTYPE]) {
        const int *x = in[0];
        for (long i = 1; i < t->p[AX_N]; i++) if (x[i] > x[bi]) bi = i;
        ((int *)out[0])[0] = x[bi];
    } else {
        const float *x = in[0];
        for (long i = 1; i < t->p[AX_N]; i++) if (x[i] > x[bi]) bi = i;
        ((float *)out[0])[0] = x[bi];
    }
    ((int *)out[1])[0] = (int)bi;
}
static const Family fam_argmax = { "argmax_array", "argmax of an array with its value, first index on ties: two passes over (value, index) pairs (shared tree or shuffles) or 64-bit packed atomicMax",
                                   ax_params, NULL, ax_draw, ax_layout, ax_describe, ax_kernels, ax_launch, ax_ref };

// ----------------------------------------------------------------------------
// Dot product: per-thread partial sums, a block reduction, atomicAdd of the block result

enum { DP_N, DP_BLOCK, DP_RED, DP_CAP, DP_FMA, DP_VEC4, DP_MASK, DP_KNAME, DP_NAMES, DP_TNAME, DP_NP };
static const ParamDesc dp_params[] = {
    { "n", NULL, 1, NULL }, { "block", NULL, 1, NULL }, { "reduce", rx_reds, 1, NULL }, { "cap", NULL, 0, NULL }, { "fma", NULL, 0, NULL }, { "vec4", NULL, 1, NULL },
    { "mask", NULL, 0, NULL }, { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL }, { "tname", NULL, 0, NULL }, { NULL, NULL, 0, NULL } };
static const char *const dp_names[][3] = { { "a", "b", "result" }, { "x", "y", "dot" }, { "u", "v_in", "out" }, { "lhs", "rhs", "sum" } };
static const char *const dp_kn[] = { "dot_kernel", "dotProductAtomic", "dot_product", "inner_product" };

static void dp_draw(Task *t, Rng *r) {
    static const int blocks[] = { 128, 256, 512, 1024 };
    static const int caps[] = { 128, 256, 1024, 4096 };
    t->p[DP_N] = rx_ns[RPICK(r, rx_ns)];
    t->p[DP_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[DP_RED] = rng_int(r, 0, 2);
    t->p[DP_CAP] = caps[RPICK(r, caps)];
    t->p[DP_FMA] = rng_int(r, 0, 1);
    t->p[DP_VEC4] = t->p[DP_N] % 4 == 0 && rng_chance(r, 35);
    t->p[DP_MASK] = rng_int(r, 0, 2);
    t->p[DP_KNAME] = rng_int(r, 0, 3);
    t->p[DP_NAMES] = rng_int(r, 0, 3);
    t->p[DP_TNAME] = rng_int(r, 0, 2);
    rx_set_names(t, dp_names[t->p[DP_NAMES]], 2, 1);
    snprintf(t->kname[0], sizeof t->kname[0], "%s", dp_kn[t->p[DP_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "dot");
}
static void dp_layout(Task *t) {
    t->nsize = 0;
    t->nin = 2;
    t->nout = 1;
    int n = add_size(t, "n", t->p[DP_N]);
    for (int k = 0; k < 2; k++) {
        tset(&t->in[k], DT_F32, 1, t->p[DP_N], 0);
        tfac(&t->in[k], n, -1);
        trange(&t->in[k], -1, 1, 0);
    }
    tset(&t->out[0], DT_F32, 1, 1, 0);
    tfac(&t->out[0], -1, -1);
    t->out[0].zero_init = 1;
    // products of two values in [-1, 1): standard deviation 1/3, mixed signs; a plain
    // left-to-right float loop is off by about 8e-9 * n (one standard deviation)
    t->atol = 1e-5 + 5e-8 * t->p[DP_N];
    t->rtol = 1e-5;
}
static void dp_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[] = { "Dot_Product", "Vector_Dot_Product", "Inner_Product_Atomic" };
    buf_puts(name, nm[t->p[DP_TNAME]]);
    buf_printf(desc, "Compute %s[0] = sum over i of %s[i] * %s[i] for the %d elements (values in [-1, 1)). Each thread accumulates a grid-stride share%s, "
                     "each block of %d threads reduces its partial sums %s, and thread 0 adds the block's sum to %s[0] with atomicAdd (%s[0] starts at zero).",
               t->out[0].name, t->in[0].name, t->in[1].name, t->p[DP_N], t->p[DP_VEC4] ? " with float4 loads" : "", t->p[DP_BLOCK],
               t->p[DP_RED] == RED_TREE ? "in a shared-memory tree" : "with warp shuffles and a shared array of warp sums", t->out[0].name, t->out[0].name);
}
static void dp_kernels(const Task *t, Emit *e) {
    Task tt = rx_as_block(t, t->p[DP_BLOCK], t->p[DP_RED], SHM_DEFINE, t->p[DP_MASK], t->p[DP_KNAME] % 3);
    const char *a = t->in[0].name, *b = t->in[1].name, *o = t->out[0].name;
    rx_prelude(e, &tt, 1);
    rx_helpers(e, &tt, 1 << OP_SUM);
    em_comment(e, t, "Dot product: grid-stride partial sums, a block reduction, one atomicAdd per block.", 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[0],
               fmt("%s, %s, %s, int n", ptr_param(t, "float", a, 1), ptr_param(t, "float", b, 1), ptr_param(t, "float", o, 0)));
    if (rx_tree(&tt)) em_line(e, "__shared__ float sdata[BLOCK_SIZE];");
    em_line(e, "const int tid = threadIdx.x;");
    em_line(e, "float acc = 0.0f;");
    if (t->p[DP_VEC4]) {
        em_line(e, "const float4 *a4 = reinterpret_cast<const float4 *>(%s);", a);
        em_line(e, "const float4 *b4 = reinterpret_cast<const float4 *>(%s);", b);
        em_line(e, "for (int i = blockIdx.x * blockDim.x + tid; i < n / 4; i += blockDim.x * gridDim.x) {");
        em_in(e);
        em_line(e, "const float4 p = a4[i], q = b4[i];");
        if (t->p[DP_FMA]) {
            em_line(e, "acc = fmaf(p.x, q.x, acc);");
            em_line(e, "acc = fmaf(p.y, q.y, acc);");
            em_line(e, "acc = fmaf(p.z, q.z, acc);");
            em_line(e, "acc = fmaf(p.w, q.w, acc);");
        } else {
            em_line(e, "acc += p.x * q.x + p.y * q.y + p.z * q.z + p.w * q.w;");
        }
    } else {
        em_line(e, "for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) {");
        em_in(e);
        if (t->p[DP_FMA]) em_line(e, "acc = fmaf(%s[i], %s[i], acc);", a, b);
        else em_line(e, "acc += %s[i] * %s[i];", a, b);
    }
    rx_end(e);
    rx_allreduce(e, &tt, "acc", OP_SUM);
    em_line(e, "if (tid == 0) atomicAdd(%s, acc);", o);
    em_fn_close(e);
}
static void dp_launch(const Task *t, Emit *e, const Host *h) {
    const char *n = h->size[0];
    if (t->p[DP_RED] == RED_TREE) em_line(e, "const int threads = BLOCK_SIZE;");
    else em_line(e, "const int threads = %d;", t->p[DP_BLOCK]);
    em_line(e, "int blocks = (%s%s + threads - 1) / threads;", n, t->p[DP_VEC4] ? " / 4" : "");
    em_line(e, "if (blocks > %d) blocks = %d;", t->p[DP_CAP], t->p[DP_CAP]);
    em_launch(e, t->kname[0], "blocks, threads", fmt("%s, %s, %s, %s", h->in[0], h->in[1], h->out[0], n));
}
static void dp_ref(const Task *t, const void *const *in, void *const *out) {
    const float *a = in[0], *b = in[1];
    double s = 0;
    for (long i = 0; i < t->p[DP_N]; i++) s += (double)a[i] * b[i];
    ((float *)out[0])[0] = (float)s;
}
static const Family fam_dot = { "dot_atomic", "dot product: grid-stride partials (optionally fmaf, float4), shared tree or shuffle block reduction, atomicAdd per block",
                                dp_params, NULL, dp_draw, dp_layout, dp_describe, dp_kernels, dp_launch, dp_ref };

// ----------------------------------------------------------------------------
// Atomic max / min of an array (ints directly; floats through their bits)

enum { MM_N, MM_BLOCK, MM_OP, MM_DTYPE, MM_METHOD, MM_AGG, MM_INIT, MM_DATA, MM_CAP, MM_MASK, MM_KNAME, MM_NAMES, MM_TNAME, MM_NP };
static const char *const mm_ops[] = { "max", "min", "both", NULL };
static const char *const mm_methods[] = { "native_int", "sign_split", "ordered_uint", "cas_loop", NULL };
static const char *const mm_aggs[] = { "per_element", "warp_first", "block_first", NULL };
static const char *const mm_inits[] = { "init_kernel", "host_copy", NULL };
static const ParamDesc mm_params[] = {
    { "n", NULL, 1, NULL }, { "block", NULL, 1, NULL }, { "op", mm_ops, 1, NULL }, { "dtype", rx_dtypes, 1, NULL }, { "method", mm_methods, 1, NULL },
    { "agg", mm_aggs, 1, NULL }, { "init", mm_inits, 0, NULL }, { "data", NULL, 1, NULL }, { "cap", NULL, 0, NULL }, { "mask", NULL, 0, NULL },
    { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL }, { "tname", NULL, 0, NULL }, { NULL, NULL, 0, NULL } };
static const double mm_flo[] = { -1000, -50, 0.5 }, mm_fhi[] = { 1000, -1, 100 };
static const double mm_ilo[] = { -1000000, -1000, 0 }, mm_ihi[] = { 1000000, -1, 1000000000 };
static const char *const mm_names[][3] = { { "x", "max_val", "min_val" }, { "data", "max_out", "min_out" }, { "values", "vmax", "vmin" },
                                           { "input", "result_max", "result_min" } };
static const char *const mm_kn[][4] = { { "atomic_max_kernel", "atomicMaxReduce", "global_max", "max_atomic" },
                                        { "atomic_min_kernel", "atomicMinReduce", "global_min", "min_atomic" },
                                        { "atomic_minmax_kernel", "atomicMinMaxReduce", "global_minmax", "minmax_atomic" } };

static void mm_draw(Task *t, Rng *r) {
    static const int blocks[] = { 128, 256, 512 };
    static const int caps[] = { 256, 1024, 4096 };
    t->p[MM_N] = rx_ns[RPICK(r, rx_ns)];
    t->p[MM_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[MM_OP] = rng_int(r, 0, 2);
    t->p[MM_DTYPE] = rng_int(r, 0, 1);
    t->p[MM_METHOD] = t->p[MM_DTYPE] ? 0 : rng_int(r, 1, 3);
    t->p[MM_AGG] = rng_int(r, 0, 2);
    t->p[MM_INIT] = rng_int(r, 0, 1);
    t->p[MM_DATA] = rng_int(r, 0, 2);
    t->p[MM_CAP] = caps[RPICK(r, caps)];
    t->p[MM_MASK] = rng_int(r, 0, 2);
    t->p[MM_KNAME] = rng_int(r, 0, 3);
    t->p[MM_NAMES] = rng_int(r, 0, 3);
    t->p[MM_TNAME] = rng_int(r, 0, 2);
    const char *const *nm = mm_names[t->p[MM_NAMES]];
    snprintf(t->in[0].name, sizeof t->in[0].name, "%s", nm[0]);
    if (t->p[MM_OP] == 2) {
        snprintf(t->out[0].name, sizeof t->out[0].name, "%s", nm[1]);
        snprintf(t->out[1].name, sizeof t->out[1].name, "%s", nm[2]);
    } else {
        snprintf(t->out[0].name, sizeof t->out[0].name, "%s", nm[1 + t->p[MM_OP]]);
    }
    snprintf(t->kname[0], sizeof t->kname[0], "%s", mm_kn[t->p[MM_OP]][t->p[MM_KNAME]]);
    static const char *const ik[] = { "init_result", "initExtrema", "set_identity", "reset_output" };
    static const char *const dk[] = { "decode_result", "decodeOrdered", "from_ordered_bits", "unmap_output" };
    snprintf(t->kname[1], sizeof t->kname[1], "%s", ik[t->p[MM_KNAME]]);
    snprintf(t->kname[2], sizeof t->kname[2], "%s", dk[t->p[MM_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "%s", t->p[MM_OP] == 2 ? "minmax" : mm_ops[t->p[MM_OP]]);
}
static void mm_layout(Task *t) {
    int is_int = t->p[MM_DTYPE], d = t->p[MM_DATA];
    t->nsize = 0;
    t->nin = 1;
    t->nout = t->p[MM_OP] == 2 ? 2 : 1;
    int n = add_size(t, "n", t->p[MM_N]);
    tset(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[MM_N], 0);
    tfac(&t->in[0], n, -1);
    if (is_int) trange(&t->in[0], mm_ilo[d], mm_ihi[d], 1);
    else trange(&t->in[0], mm_flo[d], mm_fhi[d], 0);
    for (int k = 0; k < t->nout; k++) {
        tset(&t->out[k], t->in[0].dt, 1, 1, 0);
        tfac(&t->out[k], -1, -1);
    }
    t->atol = t->rtol = 0;
}
static void mm_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[3][3] = { { "Atomic_Max", "Global_Max_Atomic", "Array_Maximum" },
                                          { "Atomic_Min", "Global_Min_Atomic", "Array_Minimum" },
                                          { "Atomic_Min_Max", "Global_Extrema_Atomic", "Array_Min_And_Max" } };
    int op = t->p[MM_OP], is_int = t->p[MM_DTYPE];
    buf_puts(name, nm[op][t->p[MM_TNAME]]);
    const Tensor *x = &t->in[0];
    buf_printf(desc, "%s holds %d %s values in [%s, %s%s. ", x->name, t->p[MM_N], dt_names[x->dt], fnum(x->lo), fnum(x->hi), is_int ? "]" : ")");
    if (op == 2) buf_printf(desc, "Compute %s[0] = the largest and %s[0] = the smallest value ", t->out[0].name, t->out[1].name);
    else buf_printf(desc, "Compute %s[0] = the %s value ", t->out[0].name, op ? "smallest" : "largest");
    buf_puts(desc, "with atomic operations on the output");
    switch (t->p[MM_METHOD]) {
    case 0: buf_puts(desc, " (atomicMax / atomicMin on int)"); break;
    case 1: buf_puts(desc, ": floats have no atomicMax, so use their bits: non-negative floats order like their int bits (atomicMax/atomicMin on int), negative ones in reverse like their unsigned bits (atomicMin/atomicMax on unsigned int)"); break;
    case 2: buf_puts(desc, ": map each float to order-preserving unsigned bits (flip all bits of negatives, only the sign bit otherwise), use atomicMax/atomicMin on unsigned int, and decode the result in a one-thread kernel"); break;
    default: buf_puts(desc, ": an atomicCAS loop on the float's bits that retries while the stored value is still worse"); break;
    }
    buf_puts(desc, t->p[MM_AGG] == 0 ? ", one atomic per element (grid-stride loop)." : t->p[MM_AGG] == 1 ? ", one atomic per warp after a shuffle reduction."
                                                                                                          : ", one atomic per block after a shared-memory reduction.");
    buf_puts(desc, t->p[MM_INIT] ? " Initialise the output from the host before the launch." : " Initialise the output with a one-thread kernel.");
}
static const char *mm_fn(const Task *t, int mx) {
    static const char *const f[4][2] = { { "atomic_max_float", "atomic_min_float" }, { "atomicMaxFloat", "atomicMinFloat" },
                                         { "atomic_fmax", "atomic_fmin" }, { "float_atomic_max", "float_atomic_min" } };
    return f[t->p[MM_KNAME]][!mx];
}
// The atomic update of out (pointer expression p) with value v.
static const char *mm_update(const Task *t, int mx, const char *p, const char *v) {
    switch (t->p[MM_METHOD]) {
    case 0: return fmt("%s(%s, %s);", mx ? "atomicMax" : "atomicMin", p, v);
    case 2: return fmt("%s((unsigned int *)%s, ordered_bits(%s));", mx ? "atomicMax" : "atomicMin", p, v);
    default: return fmt("%s(%s, %s);", mm_fn(t, mx), p, v);
    }
}
// The ordered-bits method's last kernel: decode the keys back into floats, in place.
static void mm_decode_kernel(Emit *e, const Task *t, const int *want, const char *const *outs) {
    if (t->p[MM_METHOD] != 2) return;
    em_blank(e);
    em_comment(e, t, "Turns the ordered bits back into floats, in place.", 0);
    char ps[200] = "";
    for (int m = 0; m < 2; m++)
        if (want[m]) snprintf(ps + strlen(ps), sizeof ps - strlen(ps), "%s%s", ps[0] ? ", " : "", ptr_param(t, "float", outs[m], 0));
    em_fn_open(e, t, "", "__global__ void", t->kname[2], ps);
    for (int m = 0; m < 2; m++)
        if (want[m]) {
            em_line(e, "const unsigned int k%d = *(const unsigned int *)%s;", m, outs[m]);
            em_line(e, "%s[0] = __uint_as_float((k%d & 0x80000000u) ? (k%d & 0x7fffffffu) : ~k%d);", outs[m], m, m, m);
        }
    em_fn_close(e);
}

static void mm_kernels(const Task *t, Emit *e) {
    int op = t->p[MM_OP], is_int = t->p[MM_DTYPE], meth = t->p[MM_METHOD], agg = t->p[MM_AGG];
    const char *T = rx_ct(is_int), *x = t->in[0].name;
    int want[2] = { op != 1, op != 0 }; // max, min
    const char *outs[2];
    outs[0] = op == 2 ? t->out[0].name : op == 0 ? t->out[0].name : NULL;
    outs[1] = op == 2 ? t->out[1].name : op == 1 ? t->out[0].name : NULL;
    Task tt = rx_as_block(t, t->p[MM_BLOCK], agg == 1 ? RED_XOR : RED_TREE, SHM_DEFINE, t->p[MM_MASK], t->p[MM_KNAME] % 3);
    if (agg == 1) tt.p[R_MAP] = RX_WARP, tt.p[R_HELPER] = 0;
    if (agg != 0) rx_prelude(e, &tt, 1);
    if (meth == 1) {
        for (int m = 0; m < 2; m++) {
            if (!want[m]) continue;
            int mx = m == 0;
            em_comment(e, t, mx ? "Float atomicMax through the bits: ints order non-negative floats, unsigned ints order negative floats backwards."
                                : "Float atomicMin through the bits: ints order non-negative floats, unsigned ints order negative floats backwards.", 0);
            em_fn_open(e, t, "", "__device__ void", mm_fn(t, mx), "float *addr, float v");
            em_line(e, "if (v >= 0.0f) %s((int *)addr, __float_as_int(v));", mx ? "atomicMax" : "atomicMin");
            em_line(e, "else %s((unsigned int *)addr, __float_as_uint(v));", mx ? "atomicMin" : "atomicMax");
            em_fn_close(e);
            em_blank(e);
        }
    } else if (meth == 3) {
        for (int m = 0; m < 2; m++) {
            if (!want[m]) continue;
            int mx = m == 0;
            em_comment(e, t, fmt("Float atomic %s with compare-and-swap: retry until the stored value is %s v or our value is in.",
                                 mx ? "max" : "min", mx ? "at least" : "at most"), 0);
            em_fn_open(e, t, "", "__device__ void", mm_fn(t, mx), "float *addr, float v");
            em_line(e, "int *p = (int *)addr;");
            em_line(e, "int old = *p;");
            em_line(e, "while (__int_as_float(old) %s v) {", mx ? "<" : ">");
            em_in(e);
            em_line(e, "const int assumed = old;");
            em_line(e, "old = atomicCAS(p, assumed, __float_as_int(v));");
            em_line(e, "if (old == assumed) break;");
            rx_end(e);
            em_fn_close(e);
            em_blank(e);
        }
    } else if (meth == 2) {
        em_comment(e, t, "Order-preserving map of float bits to unsigned: flip all bits of negatives, only the sign bit of the rest.", 0);
        em_fn_open(e, t, "", "__device__ __forceinline__ unsigned int", "ordered_bits", "float v");
        em_line(e, "const unsigned int u = __float_as_uint(v);");
        em_line(e, "return (u & 0x80000000u) ? ~u : (u | 0x80000000u);");
        em_fn_close(e);
        em_blank(e);
    }
    // identities: what the outputs hold before the first update
    const char *idv[2];
    if (meth == 2) idv[0] = "0u", idv[1] = "0xffffffffu";
    else if (is_int) idv[0] = RX_INT_MIN, idv[1] = RX_INT_MAX;
    else idv[0] = RX_LOWEST, idv[1] = RX_HIGHEST;
    if (!t->p[MM_INIT]) {
        em_comment(e, t, meth == 2 ? "Puts the identities (as ordered bits) into the outputs." : "Puts the identities into the outputs.", 0);
        char params[200] = "";
        for (int m = 0; m < 2; m++)
            if (want[m]) snprintf(params + strlen(params), sizeof params - strlen(params), "%s%s", params[0] ? ", " : "", ptr_param(t, T, outs[m], 0));
        em_fn_open(e, t, "", "__global__ void", t->kname[1], params);
        for (int m = 0; m < 2; m++)
            if (want[m]) {
                if (meth == 2) em_line(e, "*(unsigned int *)%s = %s;", outs[m], idv[m]);
                else em_line(e, "%s[0] = %s;", outs[m], idv[m]);
            }
        em_fn_close(e);
        em_blank(e);
    }
    char params[300];
    snprintf(params, sizeof params, "%s", ptr_param(t, T, x, 1));
    for (int m = 0; m < 2; m++)
        if (want[m]) snprintf(params + strlen(params), sizeof params - strlen(params), ", %s", ptr_param(t, T, outs[m], 0));
    snprintf(params + strlen(params), sizeof params - strlen(params), ", int n");
    em_comment(e, t, agg == 0 ? "Every element goes straight to the output with an atomic update."
                              : agg == 1 ? "Each thread keeps its own extreme, a warp combines them with shuffles, lane 0 updates the output."
                                         : "Each thread keeps its own extreme, the block combines them in shared memory, thread 0 updates the output.", 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[0], params);
    static const char *const loc[2] = { "hi", "lo" };
    static const char *const sh[2] = { "shi", "slo" };
    if (agg == 0) {
        em_line(e, "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {");
        em_in(e);
        em_line(e, "const %s v = %s[i];", T, x);
        for (int m = 0; m < 2; m++)
            if (want[m]) em_line(e, "%s", mm_update(t, m == 0, outs[m], "v"));
        rx_end(e);
        em_fn_close(e);
        mm_decode_kernel(e, t, want, outs);
        return;
    }
    if (agg == 2)
        for (int m = 0; m < 2; m++)
            if (want[m]) em_line(e, "__shared__ %s %s[BLOCK_SIZE];", T, sh[m]);
    const char *fmx = is_int ? "max" : "fmaxf", *fmn = is_int ? "min" : "fminf";
    for (int m = 0; m < 2; m++)
        if (want[m]) em_line(e, "%s %s = %s;", T, loc[m], m == 0 ? (is_int ? RX_INT_MIN : RX_LOWEST) : (is_int ? RX_INT_MAX : RX_HIGHEST));
    em_line(e, "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {");
    em_in(e);
    if (op == 2) {
        em_line(e, "const %s v = %s[i];", T, x);
        em_line(e, "hi = %s(hi, v);", fmx);
        em_line(e, "lo = %s(lo, v);", fmn);
    } else {
        em_line(e, "%s = %s(%s, %s[i]);", loc[op], op ? fmn : fmx, loc[op], x);
    }
    rx_end(e);
    if (agg == 1) {
        em_line(e, "for (int offset = 16; offset > 0; offset >>= 1) {");
        em_in(e);
        for (int m = 0; m < 2; m++)
            if (want[m]) em_line(e, "%s = %s(%s, __shfl_xor_sync(%s, %s, offset));", loc[m], m ? fmn : fmx, loc[m], rx_mask(&tt), loc[m]);
        rx_end(e);
        em_line(e, "if ((threadIdx.x & 31) == 0) {");
    } else {
        em_line(e, "const int tid = threadIdx.x;");
        for (int m = 0; m < 2; m++)
            if (want[m]) em_line(e, "%s[tid] = %s;", sh[m], loc[m]);
        em_line(e, "__syncthreads();");
        em_line(e, "for (int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {");
        em_in(e);
        em_line(e, "if (tid < s) {");
        em_in(e);
        for (int m = 0; m < 2; m++)
            if (want[m]) em_line(e, "%s[tid] = %s(%s[tid], %s[tid + s]);", sh[m], m ? fmn : fmx, sh[m], sh[m]);
        rx_end(e);
        em_line(e, "__syncthreads();");
        rx_end(e);
        em_line(e, "if (tid == 0) {");
    }
    em_in(e);
    for (int m = 0; m < 2; m++)
        if (want[m]) em_line(e, "%s", mm_update(t, m == 0, outs[m], agg == 2 ? fmt("%s[0]", sh[m]) : loc[m]));
    rx_end(e);
    em_fn_close(e);
    mm_decode_kernel(e, t, want, outs);
}
static void mm_launch(const Task *t, Emit *e, const Host *h) {
    int op = t->p[MM_OP], is_int = t->p[MM_DTYPE], meth = t->p[MM_METHOD], agg = t->p[MM_AGG];
    const char *T = rx_ct(is_int);
    int want[2] = { op != 1, op != 0 };
    const char *douts[2];
    douts[0] = op == 1 ? NULL : h->out[0];
    douts[1] = op == 2 ? h->out[1] : op == 1 ? h->out[0] : NULL;
    char olist[160] = "";
    for (int m = 0; m < 2; m++)
        if (want[m]) snprintf(olist + strlen(olist), sizeof olist - strlen(olist), "%s%s", olist[0] ? ", " : "", douts[m]);
    if (t->p[MM_INIT]) {
        static const char *const hv[2] = { "init_max", "init_min" };
        for (int m = 0; m < 2; m++) {
            if (!want[m]) continue;
            if (meth == 2) {
                host_call(e, t, "cudaMemset(%s, %s, sizeof(unsigned int))", douts[m], m ? "0xff" : "0");
            } else {
                em_line(e, "const %s %s = %s;", T, hv[m], m ? (is_int ? RX_INT_MAX : RX_HIGHEST) : (is_int ? RX_INT_MIN : RX_LOWEST));
                host_call(e, t, "cudaMemcpy(%s, &%s, sizeof(%s), cudaMemcpyHostToDevice)", douts[m], hv[m], T);
            }
        }
    } else {
        em_launch(e, t->kname[1], "1, 1", olist);
    }
    if (agg == 2) em_line(e, "const int threads = BLOCK_SIZE;");
    else em_line(e, "const int threads = %d;", t->p[MM_BLOCK]);
    em_line(e, "int blocks = (%s + threads - 1) / threads;", h->size[0]);
    em_line(e, "if (blocks > %d) blocks = %d;", t->p[MM_CAP], t->p[MM_CAP]);
    em_launch(e, t->kname[0], "blocks, threads", fmt("%s, %s, %s", h->in[0], olist, h->size[0]));
    if (meth == 2) em_launch(e, t->kname[2], "1, 1", olist);
}
static void mm_ref(const Task *t, const void *const *in, void *const *out) {
    int op = t->p[MM_OP];
    long n = t->p[MM_N];
    double hi = -INFINITY, lo = INFINITY;
    for (long i = 0; i < n; i++) {
        double v = t->p[MM_DTYPE] ? (double)((const int *)in[0])[i] : (double)((const float *)in[0])[i];
        hi = v > hi ? v : hi;
        lo = v < lo ? v : lo;
    }
    double res[2] = { op == 1 ? lo : hi, lo };
    for (int k = 0; k < t->nout; k++) {
        if (t->p[MM_DTYPE]) ((int *)out[k])[0] = (int)res[k];
        else ((float *)out[k])[0] = (float)res[k];
    }
}
static const Family fam_atomic_minmax = { "atomic_minmax", "max / min / both of an array with atomics: atomicMax/Min on int, float via sign-split int/uint bits, ordered uint bits or an atomicCAS loop",
                                          mm_params, NULL, mm_draw, mm_layout, mm_describe, mm_kernels, mm_launch, mm_ref };

// ----------------------------------------------------------------------------
// Stream compaction. An atomic counter handing out output slots would make the order of
// the kept values depend on scheduling, so the output is made deterministic with a scan:
// count per block, exclusive scan of the counts, then each block writes its kept values at
// its offset in their original order. out[0..count) holds the kept values, the rest zeros.

enum { CP_N, CP_BLOCK, CP_LOCAL, CP_SUMS, CP_DTYPE, CP_PRED, CP_MASK, CP_KNAME, CP_NAMES, CP_TNAME, CP_NP };
enum { CPF_THR };
static const char *const cp_locals[] = { "shared_scan", "warp_ballot", NULL };
static const char *const cp_preds[] = { "greater", "abs_greater", NULL };
static const char *const cp_fp[] = { "threshold", NULL };
static const ParamDesc cp_params[] = {
    { "n", NULL, 1, NULL }, { "block", NULL, 1, NULL }, { "local", cp_locals, 1, NULL }, { "sums", se_sums, 1, NULL }, { "dtype", rx_dtypes, 1, NULL },
    { "pred", cp_preds, 1, NULL }, { "mask", NULL, 0, NULL }, { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL }, { "tname", NULL, 0, NULL }, { NULL, NULL, 0, NULL } };
static const char *const cp_names[][3] = { { "x", "out", "count" }, { "input", "kept", "num_kept" }, { "values", "selected", "n_selected" },
                                           { "data", "compacted", "length" } };
static const char *const cp_kn[3][4] = { { "count_kept", "countPerBlock", "block_counts_kernel", "flag_count" },
                                         { "scan_counts", "scanBlockCounts", "offsets_from_counts", "exclusive_scan_counts" },
                                         { "scatter_kept", "scatterKept", "compact_write", "write_selected" } };

static void cp_draw(Task *t, Rng *r) {
    static const int ns[] = { 1000, 4096, 10000, 65536, 100000, 262144, 1000000 };
    static const int blocks[] = { 128, 256, 512, 1024 };
    static const double fthr[] = { 0, 0.5, -0.25, 0.75, 0.875 }, fabs_thr[] = { 0.5, 0.25, 0.875 };
    static const double ithr[] = { 0, 500, -200, 900 }, iabs_thr[] = { 500, 100, 900 };
    t->p[CP_N] = ns[RPICK(r, ns)];
    t->p[CP_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[CP_LOCAL] = rng_int(r, 0, 1);
    t->p[CP_SUMS] = rng_int(r, 0, 1);
    t->p[CP_DTYPE] = rng_int(r, 0, 1);
    t->p[CP_PRED] = rng_int(r, 0, 1);
    t->p[CP_MASK] = rng_int(r, 0, 2);
    t->p[CP_KNAME] = rng_int(r, 0, 3);
    t->p[CP_NAMES] = rng_int(r, 0, 3);
    t->p[CP_TNAME] = rng_int(r, 0, 2);
    if (t->p[CP_DTYPE]) t->f[CPF_THR] = t->p[CP_PRED] ? iabs_thr[RPICK(r, iabs_thr)] : ithr[RPICK(r, ithr)];
    else t->f[CPF_THR] = t->p[CP_PRED] ? fabs_thr[RPICK(r, fabs_thr)] : fthr[RPICK(r, fthr)];
    rx_set_names(t, cp_names[t->p[CP_NAMES]], 1, 2);
    for (int k = 0; k < 3; k++) snprintf(t->kname[k], sizeof t->kname[k], "%s", cp_kn[k][t->p[CP_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "compact");
}
static void cp_layout(Task *t) {
    int is_int = t->p[CP_DTYPE];
    t->nsize = 0;
    t->nin = 1;
    t->nout = 2;
    int n = add_size(t, "n", t->p[CP_N]);
    tset(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[CP_N], 0);
    tfac(&t->in[0], n, -1);
    if (is_int) trange(&t->in[0], -1000, 1000, 1);
    else trange(&t->in[0], -1, 1, 0);
    tset(&t->out[0], t->in[0].dt, 1, t->p[CP_N], 0);
    tfac(&t->out[0], n, -1);
    t->out[0].zero_init = 1;
    tset(&t->out[1], DT_I32, 1, 1, 0);
    tfac(&t->out[1], -1, -1);
    t->atol = t->rtol = 0;
}
static const char *cp_thr(const Task *t) { return t->p[CP_DTYPE] ? fmt("%d", (int)t->f[CPF_THR]) : flit(t->f[CPF_THR]); }
static const char *cp_pred(const Task *t, const char *v) {
    if (!t->p[CP_PRED]) return fmt("%s > %s", v, cp_thr(t));
    return fmt("%s(%s) > %s", t->p[CP_DTYPE] ? "abs" : "fabsf", v, cp_thr(t));
}
static void cp_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[] = { "Stream_Compaction", "Filter_By_Threshold", "Select_If" };
    buf_puts(name, nm[t->p[CP_TNAME]]);
    const Tensor *x = &t->in[0];
    const char *o = t->out[0].name, *c = t->out[1].name;
    buf_printf(desc, "%s holds %d %s values in [%s, %s%s. Keep the elements with %s, in their original order: %s[0..k) = the kept values, "
                     "%s[k..%d) = 0, and %s[0] = k. The result must not depend on thread scheduling, so do not hand out slots with an atomic counter: "
                     "count the kept elements per block of %d, exclusive-scan the block counts (%s), then let each block write its kept elements at its offset, "
                     "ranked within the block %s.",
               x->name, t->p[CP_N], dt_names[x->dt], fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")",
               t->p[CP_PRED] ? fmt("|%s[i]| > %s", x->name, fnum(t->f[CPF_THR])) : fmt("%s[i] > %s", x->name, fnum(t->f[CPF_THR])),
               o, o, t->p[CP_N], c, t->p[CP_BLOCK], t->p[CP_SUMS] ? "one thread" : "one block, chunk by chunk",
               t->p[CP_LOCAL] ? "with __ballot_sync and __popc" : "by a shared-memory scan of the keep flags");
}
static void cp_kernels(const Task *t, Emit *e) {
    const char *T = rx_ct(t->p[CP_DTYPE]), *x = t->in[0].name, *o = t->out[0].name, *cnt = t->out[1].name;
    int ballot = t->p[CP_LOCAL];
    const char *mask = t->p[CP_MASK] == 0 ? "0xffffffff" : t->p[CP_MASK] == 1 ? "0xffffffffu" : "FULL_MASK";
    em_line(e, "#define BLOCK_SIZE %d", t->p[CP_BLOCK]);
    if (ballot && t->p[CP_MASK] == 2) em_line(e, "#define FULL_MASK 0xffffffffu");
    em_blank(e);
    // kernel 1
    em_comment(e, t, "Pass 1: how many elements of each block are kept.", 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[0], fmt("%s, int *block_counts, int n", ptr_param(t, T, x, 1)));
    em_line(e, "const int tid = threadIdx.x;");
    em_line(e, "const int i = blockIdx.x * blockDim.x + tid;");
    em_line(e, "const int keep = i < n && %s;", cp_pred(t, fmt("%s[i]", x)));
    if (ballot) {
        em_note(e, t, "__syncthreads_count: a barrier that also counts the non-zero arguments");
        em_line(e, "const int total = __syncthreads_count(keep);");
        em_line(e, "if (tid == 0) block_counts[blockIdx.x] = total;");
    } else {
        em_line(e, "__shared__ int s[BLOCK_SIZE];");
        em_line(e, "s[tid] = keep;");
        em_line(e, "__syncthreads();");
        em_line(e, "for (int stride = BLOCK_SIZE / 2; stride > 0; stride >>= 1) {");
        em_in(e);
        em_line(e, "if (tid < stride) s[tid] += s[tid + stride];");
        em_line(e, "__syncthreads();");
        rx_end(e);
        em_line(e, "if (tid == 0) block_counts[blockIdx.x] = s[0];");
    }
    em_fn_close(e);
    em_blank(e);
    // kernel 2
    em_comment(e, t, "Pass 2: exclusive scan of the block counts (each block's first output slot) and the total.", 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[1], fmt("int *block_counts, %s, int nblocks", ptr_param(t, "int", cnt, 0)));
    if (t->p[CP_SUMS]) {
        em_line(e, "if (threadIdx.x != 0) return;");
        em_line(e, "int run = 0;");
        em_line(e, "for (int b = 0; b < nblocks; b++) {");
        em_in(e);
        em_line(e, "const int c = block_counts[b];");
        em_line(e, "block_counts[b] = run;");
        em_line(e, "run += c;");
        rx_end(e);
        em_line(e, "%s[0] = run;", cnt);
    } else {
        em_line(e, "__shared__ int s[BLOCK_SIZE];");
        em_line(e, "const int tid = threadIdx.x;");
        em_line(e, "int carry = 0;");
        em_line(e, "for (int base = 0; base < nblocks; base += BLOCK_SIZE) {");
        em_in(e);
        em_line(e, "const int i = base + tid;");
        em_line(e, "s[tid] = i < nblocks ? block_counts[i] : 0;");
        em_line(e, "__syncthreads();");
        se_hs(e, "int", "BLOCK_SIZE");
        em_line(e, "if (i < nblocks) block_counts[i] = carry + (tid > 0 ? s[tid - 1] : 0);");
        em_line(e, "carry += s[BLOCK_SIZE - 1];");
        em_line(e, "__syncthreads();");
        rx_end(e);
        em_line(e, "if (tid == 0) %s[0] = carry;", cnt);
    }
    em_fn_close(e);
    em_blank(e);
    // kernel 3
    em_comment(e, t, fmt("Pass 3: each kept element goes to its block's offset plus its rank among the kept elements before it in the block (%s).",
                         ballot ? "ballot + popc per warp, then the warp counts" : "a shared-memory scan of the flags"), 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[2],
               fmt("%s, const int *block_offsets, %s, int n", ptr_param(t, T, x, 1), ptr_param(t, T, o, 0)));
    em_line(e, "const int tid = threadIdx.x;");
    em_line(e, "const int i = blockIdx.x * blockDim.x + tid;");
    em_line(e, "const int keep = i < n && %s;", cp_pred(t, fmt("%s[i]", x)));
    if (ballot) {
        em_line(e, "__shared__ int warp_base[BLOCK_SIZE / 32];");
        em_line(e, "const int lane = tid & 31, wid = tid >> 5;");
        em_note(e, t, "every lane takes part in the ballot, also those past the end of the array");
        em_line(e, "const unsigned int bits = __ballot_sync(%s, keep);", mask);
        em_line(e, "const int rank_in_warp = __popc(bits & ((1u << lane) - 1u));");
        em_line(e, "if (lane == 0) warp_base[wid] = __popc(bits);");
        em_line(e, "__syncthreads();");
        em_line(e, "if (tid == 0) {");
        em_in(e);
        em_line(e, "int run = 0;");
        em_line(e, "for (int w = 0; w < BLOCK_SIZE / 32; w++) {");
        em_in(e);
        em_line(e, "const int c = warp_base[w];");
        em_line(e, "warp_base[w] = run;");
        em_line(e, "run += c;");
        rx_end(e);
        rx_end(e);
        em_line(e, "__syncthreads();");
        em_line(e, "if (keep) %s[block_offsets[blockIdx.x] + warp_base[wid] + rank_in_warp] = %s[i];", o, x);
    } else {
        em_line(e, "__shared__ int s[BLOCK_SIZE];");
        em_line(e, "s[tid] = keep;");
        em_line(e, "__syncthreads();");
        se_hs(e, "int", "BLOCK_SIZE");
        em_note(e, t, "inclusive scan minus the own flag: the number of kept elements before this one");
        em_line(e, "if (keep) %s[block_offsets[blockIdx.x] + s[tid] - 1] = %s[i];", o, x);
    }
    em_fn_close(e);
}
static void cp_launch(const Task *t, Emit *e, const Host *h) {
    em_line(e, "const int threads = BLOCK_SIZE;");
    em_line(e, "const int blocks = (%s + threads - 1) / threads;", h->size[0]);
    const char *bc = rx_scratch(t, "block_counts");
    host_dev_alloc(e, t, "int", bc, "blocks");
    em_launch(e, t->kname[0], "blocks, threads", fmt("%s, %s, %s", h->in[0], bc, h->size[0]));
    em_launch(e, t->kname[1], t->p[CP_SUMS] ? "1, 1" : "1, threads", fmt("%s, %s, blocks", bc, h->out[1]));
    em_launch(e, t->kname[2], "blocks, threads", fmt("%s, %s, %s, %s", h->in[0], bc, h->out[0], h->size[0]));
    host_call(e, t, "cudaDeviceSynchronize()");
    host_call(e, t, "cudaFree(%s)", bc);
}
static void cp_ref(const Task *t, const void *const *in, void *const *out) {
    long n = t->p[CP_N], k = 0;
    int is_int = t->p[CP_DTYPE], ab = t->p[CP_PRED];
    for (long i = 0; i < n; i++) {
        if (is_int) {
            int v = ((const int *)in[0])[i], thr = (int)t->f[CPF_THR];
            if ((ab ? abs(v) : v) > thr) ((int *)out[0])[k++] = v;
        } else {
            float v = ((const float *)in[0])[i], thr = rx_fpar(t, CPF_THR);
            if ((ab ? fabsf(v) : v) > thr) ((float *)out[0])[k++] = v;
        }
    }
    // the rest stays zero (outputs start zeroed)
    ((int *)out[1])[0] = (int)k;
}
static const Family fam_compact = { "stream_compact", "deterministic stream compaction (keep x > t or |x| > t in order): block counts, exclusive scan, ranked scatter (shared scan or ballot/popc)",
                                    cp_params, cp_fp, cp_draw, cp_layout, cp_describe, cp_kernels, cp_launch, cp_ref };

// ----------------------------------------------------------------------------
// count_if with atomics

enum { CI_N, CI_BLOCK, CI_AGG, CI_PRED, CI_DTYPE, CI_OUT, CI_LOOP, CI_CAP, CI_MASK, CI_KNAME, CI_NAMES, CI_TNAME, CI_NP };
enum { CIF_A, CIF_B };
static const char *const ci_aggs[] = { "per_element", "warp_ballot", "block_shared", "syncthreads_count", NULL };
static const char *const ci_preds[] = { "greater", "in_range", "abs_less", "equal", "multiple_of", NULL };
static const char *const ci_loops[] = { "one_per_thread", "grid_stride", NULL };
static const char *const ci_outs[] = { "int32", "uint32", NULL };
static const char *const ci_fp[] = { "a", "b", NULL };
static const ParamDesc ci_params[] = {
    { "n", NULL, 1, NULL }, { "block", NULL, 1, NULL }, { "agg", ci_aggs, 1, NULL }, { "pred", ci_preds, 1, NULL }, { "dtype", rx_dtypes, 1, NULL },
    { "out", ci_outs, 0, NULL }, { "loop", ci_loops, 1, NULL }, { "cap", NULL, 0, NULL }, { "mask", NULL, 0, NULL }, { "kname", NULL, 0, NULL }, { "names", NULL, 0, NULL },
    { "tname", NULL, 0, NULL }, { NULL, NULL, 0, NULL } };
static const char *const ci_names[][2] = { { "x", "count" }, { "data", "matches" }, { "values", "num_hits" }, { "input", "total" } };
static const char *const ci_kn[] = { "count_if_kernel", "countIf", "count_matches", "predicate_count" };

static void ci_draw(Task *t, Rng *r) {
    static const int blocks[] = { 128, 256, 512, 1024 };
    static const int caps[] = { 256, 1024, 4096 };
    t->p[CI_N] = rx_ns[RPICK(r, rx_ns)];
    t->p[CI_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[CI_AGG] = rng_int(r, 0, 3);
    t->p[CI_DTYPE] = rng_int(r, 0, 1);
    t->p[CI_PRED] = t->p[CI_DTYPE] ? rng_int(r, 0, 4) : rng_int(r, 0, 2);
    t->p[CI_OUT] = rng_int(r, 0, 1);
    t->p[CI_LOOP] = rng_int(r, 0, 1);
    t->p[CI_CAP] = caps[RPICK(r, caps)];
    t->p[CI_MASK] = rng_int(r, 0, 2);
    t->p[CI_KNAME] = rng_int(r, 0, 3);
    t->p[CI_NAMES] = rng_int(r, 0, 3);
    t->p[CI_TNAME] = rng_int(r, 0, 2);
    static const double fa[] = { 0, 0.5, -0.75, 0.25 }, fw[] = { 0.25, 0.5, 0.125 };
    static const int ia[] = { 0, 10, -100, 500 }, iw[] = { 10, 100, 250 }, ieq[] = { 0, 3, 7, 15 }, imod[] = { 2, 3, 7, 16 };
    switch (t->p[CI_PRED]) {
    case 0: t->f[CIF_A] = t->p[CI_DTYPE] ? ia[RPICK(r, ia)] : fa[RPICK(r, fa)]; t->f[CIF_B] = 0; break;
    case 1: {
        double a = t->p[CI_DTYPE] ? ia[RPICK(r, ia)] : fa[RPICK(r, fa)];
        t->f[CIF_A] = a;
        t->f[CIF_B] = a + (t->p[CI_DTYPE] ? iw[RPICK(r, iw)] : fw[RPICK(r, fw)]);
        break;
    }
    case 2: t->f[CIF_A] = t->p[CI_DTYPE] ? iw[RPICK(r, iw)] : fw[RPICK(r, fw)]; t->f[CIF_B] = 0; break;
    case 3: t->f[CIF_A] = ieq[RPICK(r, ieq)]; t->f[CIF_B] = 0; break;
    default: t->f[CIF_A] = imod[RPICK(r, imod)]; t->f[CIF_B] = 0; break;
    }
    rx_set_names(t, ci_names[t->p[CI_NAMES]], 1, 1);
    snprintf(t->kname[0], sizeof t->kname[0], "%s", ci_kn[t->p[CI_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "count_if");
}
static void ci_layout(Task *t) {
    int is_int = t->p[CI_DTYPE];
    t->nsize = 0;
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[CI_N]);
    tset(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[CI_N], 0);
    tfac(&t->in[0], n, -1);
    if (is_int && t->p[CI_PRED] == 3) trange(&t->in[0], 0, 20, 1);
    else if (is_int) trange(&t->in[0], -1000, 1000, 1);
    else trange(&t->in[0], -1, 1, 0);
    tset(&t->out[0], t->p[CI_OUT] ? DT_U32 : DT_I32, 1, 1, 0);
    tfac(&t->out[0], -1, -1);
    t->out[0].zero_init = 1;
    t->atol = t->rtol = 0;
}
static const char *ci_num(const Task *t, int k) { return t->p[CI_DTYPE] ? fmt("%d", (int)t->f[k]) : flit(t->f[k]); }
static const char *ci_pred(const Task *t, const char *v) {
    switch (t->p[CI_PRED]) {
    case 0: return fmt("%s > %s", v, ci_num(t, CIF_A));
    case 1: return fmt("%s >= %s && %s < %s", v, ci_num(t, CIF_A), v, ci_num(t, CIF_B));
    case 2: return fmt("%s(%s) < %s", t->p[CI_DTYPE] ? "abs" : "fabsf", v, ci_num(t, CIF_A));
    case 3: return fmt("%s == %s", v, ci_num(t, CIF_A));
    default: return fmt("%s %% %s == 0", v, ci_num(t, CIF_A));
    }
}
static int ci_ref_pred(const Task *t, double v) {
    double a = t->p[CI_DTYPE] ? t->f[CIF_A] : rx_fpar(t, CIF_A), b = t->p[CI_DTYPE] ? t->f[CIF_B] : rx_fpar(t, CIF_B);
    switch (t->p[CI_PRED]) {
    case 0: return v > a;
    case 1: return v >= a && v < b;
    case 2: return fabs(v) < a;
    case 3: return v == a;
    default: return (long)v % (long)a == 0;
    }
}
static void ci_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[] = { "Count_If", "Predicate_Count", "Count_Matching_Elements" };
    buf_puts(name, nm[t->p[CI_TNAME]]);
    const Tensor *x = &t->in[0];
    const char *c = t->out[0].name;
    char cond[160];
    const char *v = fmt("%s[i]", x->name);
    switch (t->p[CI_PRED]) {
    case 0: snprintf(cond, sizeof cond, "%s > %s", v, fnum(t->f[CIF_A])); break;
    case 1: snprintf(cond, sizeof cond, "%s <= %s < %s", fnum(t->f[CIF_A]), v, fnum(t->f[CIF_B])); break;
    case 2: snprintf(cond, sizeof cond, "|%s| < %s", v, fnum(t->f[CIF_A])); break;
    case 3: snprintf(cond, sizeof cond, "%s == %s", v, fnum(t->f[CIF_A])); break;
    default: snprintf(cond, sizeof cond, "%s is a multiple of %s", v, fnum(t->f[CIF_A])); break;
    }
    buf_printf(desc, "%s holds %d %s values in [%s, %s%s. Count the elements with %s and write the count to %s[0] (%s, zeroed before the launch), "
                     "accumulating with atomicAdd: ",
               x->name, t->p[CI_N], dt_names[x->dt], fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")", cond, c, dt_names[t->out[0].dt]);
    switch (t->p[CI_AGG]) {
    case 0: buf_puts(desc, "one atomicAdd per matching element."); break;
    case 1: buf_puts(desc, "warp-aggregated, one atomicAdd of __popc(__ballot_sync(...)) per warp."); break;
    case 2: buf_puts(desc, "each thread counts its elements, the block adds them into a __shared__ counter with shared-memory atomics, and one thread adds the block's count to the output."); break;
    default: buf_puts(desc, "__syncthreads_count gives each block's count, which thread 0 adds to the output."); break;
    }
    if (t->p[CI_LOOP]) buf_printf(desc, " Launch at most %d blocks of %d threads and loop over the array.", t->p[CI_CAP], t->p[CI_BLOCK]);
    else buf_printf(desc, " One thread per element, blocks of %d threads.", t->p[CI_BLOCK]);
}
static void ci_kernels(const Task *t, Emit *e) {
    int agg = t->p[CI_AGG], gs = t->p[CI_LOOP];
    const char *T = rx_ct(t->p[CI_DTYPE]), *x = t->in[0].name, *c = t->out[0].name;
    const char *U = t->p[CI_OUT] ? "unsigned int" : "int", *one = t->p[CI_OUT] ? "1u" : "1";
    const char *mask = t->p[CI_MASK] == 0 ? "0xffffffff" : t->p[CI_MASK] == 1 ? "0xffffffffu" : "FULL_MASK";
    if (agg == 1 && t->p[CI_MASK] == 2) {
        em_line(e, "#define FULL_MASK 0xffffffffu");
        em_blank(e);
    }
    const char *params = fmt("%s, %s, int n", ptr_param(t, T, x, 1), ptr_param(t, U, c, 0));
    static const char *const cm[] = { "Counts matching elements: one atomicAdd per match.",
                                      "Counts matching elements: the warp votes with __ballot_sync and lane 0 adds the number of set bits.",
                                      "Counts matching elements: per-thread counts meet in a __shared__ counter, thread 0 adds it to the total.",
                                      "Counts matching elements: __syncthreads_count counts the block's matches in the barrier itself." };
    em_comment(e, t, cm[agg], 0);
    em_fn_open(e, t, "", "__global__ void", t->kname[0], params);
    char pr[160];
    snprintf(pr, sizeof pr, "%s", ci_pred(t, "v"));
    if (agg == 0 || agg == 2) {
        // per-thread loop over elements
        if (agg == 2) {
            em_line(e, "__shared__ %s block_count;", U);
            em_line(e, "if (threadIdx.x == 0) block_count = 0;");
            em_line(e, "__syncthreads();");
            em_line(e, "%s mine = 0;", U);
        }
        if (gs) em_line(e, "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {");
        else {
            em_line(e, "const int i = blockIdx.x * blockDim.x + threadIdx.x;");
            em_line(e, "if (i < n) {");
        }
        em_in(e);
        em_line(e, "const %s v = %s[i];", T, x);
        if (agg == 0) em_line(e, "if (%s) atomicAdd(%s, %s);", pr, c, one);
        else em_line(e, "if (%s) mine++;", pr);
        rx_end(e);
        if (agg == 2) {
            em_line(e, "if (mine) atomicAdd(&block_count, mine);");
            em_line(e, "__syncthreads();");
            em_line(e, "if (threadIdx.x == 0 && block_count) atomicAdd(%s, block_count);", c);
        }
        em_fn_close(e);
        return;
    }
    // warp ballots and block counts: every thread of a warp (block) must reach the vote, so
    // a grid-stride loop strides by whole blocks and guards the element instead of the loop
    if (agg == 3) em_line(e, "%s block_total = 0;", U);
    if (gs) {
        em_line(e, "for (int base = blockIdx.x * blockDim.x; base < n; base += blockDim.x * gridDim.x) {");
        em_in(e);
        em_line(e, "const int i = base + threadIdx.x;");
    } else {
        em_line(e, "const int i = blockIdx.x * blockDim.x + threadIdx.x;");
    }
    em_line(e, "int hit = 0;");
    em_line(e, "if (i < n) {");
    em_in(e);
    em_line(e, "const %s v = %s[i];", T, x);
    em_line(e, "hit = %s;", pr);
    rx_end(e);
    if (agg == 1) {
        em_line(e, "const unsigned int votes = __ballot_sync(%s, hit);", mask);
        em_line(e, "if ((threadIdx.x & 31) == 0 && votes) atomicAdd(%s, (%s)__popc(votes));", c, U);
    } else {
        em_line(e, "block_total += __syncthreads_count(hit);");
    }
    if (gs) rx_end(e);
    if (agg == 3) em_line(e, "if (threadIdx.x == 0 && block_total) atomicAdd(%s, block_total);", c);
    em_fn_close(e);
}
static void ci_launch(const Task *t, Emit *e, const Host *h) {
    const char *args = fmt("%s, %s, %s", h->in[0], h->out[0], h->size[0]);
    if (t->p[CI_LOOP]) {
        em_line(e, "const int threads = %d;", t->p[CI_BLOCK]);
        em_line(e, "int blocks = (%s + threads - 1) / threads;", h->size[0]);
        em_line(e, "if (blocks > %d) blocks = %d;", t->p[CI_CAP], t->p[CI_CAP]);
        em_launch(e, t->kname[0], "blocks, threads", args);
    } else {
        launch_1d(e, t, t->kname[0], h->size[0], t->p[CI_BLOCK], 0, args);
    }
}
static void ci_ref(const Task *t, const void *const *in, void *const *out) {
    long k = 0;
    for (long i = 0; i < t->p[CI_N]; i++) {
        double v = t->p[CI_DTYPE] ? (double)((const int *)in[0])[i] : (double)((const float *)in[0])[i];
        k += ci_ref_pred(t, v);
    }
    if (t->p[CI_OUT]) ((uint32_t *)out[0])[0] = (uint32_t)k;
    else ((int32_t *)out[0])[0] = (int32_t)k;
}
static const Family fam_count_if = { "count_if", "count elements matching a predicate with atomicAdd: per element, warp-aggregated ballot/popc, shared counter, __syncthreads_count",
                                     ci_params, ci_fp, ci_draw, ci_layout, ci_describe, ci_kernels, ci_launch, ci_ref };

static const Family *const families_rowwise[] = { &fam_scan_block,
                                                  &fam_scan_exclusive, &fam_argmax, &fam_dot, &fam_atomic_minmax, &fam_compact,
                                                  &fam_count_if, NULL };
