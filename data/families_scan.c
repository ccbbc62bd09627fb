// families_scan.c - prefix scans of a 1-D array: an inclusive sum/max scan of each
// block-sized segment (Hillis-Steele with one or two buffers, or Blelloch, optionally with
// padded shared-memory indices), and the exclusive prefix sum of a long array in three
// kernels (scan each block, scan the block totals, add the offsets). Row-wise cumulative
// sums are in families_rows.c. Included by corpus.c, after families_rows.c (ro_sum_rel).
//
// Tolerances: float sums in another order, as in families_rows.c; maxima and integer
// scans are exact.

#define SC_LOWEST "-3.402823466e+38f"
#define SC_INT_MIN "(-2147483647 - 1)"
static const char *const sc_algos[] = { "hillis_steele", "blelloch", NULL };
static const char *const sc_dtypes[] = { "float32", "int32", NULL };

// The up-sweep and down-sweep of Blelloch's scan over s[0..m) with 'offset' (starts at 1):
// leaves the exclusive scan in s. $root: what happens at the root between the two sweeps.
static const char sc_blelloch_tpl[] = R"(
int offset = 1;
//? up-sweep: build partial results in place up the tree
for (int d = $m >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (tid < d) {
        int a = offset * (2 * tid + 1) - 1;
        int b = offset * (2 * tid + 2) - 1;
        $pad
        $s[b] = $up;
    }
    offset <<= 1;
}
$root
//? down-sweep: push the prefixes back down; this leaves the exclusive scan
for (int d = 1; d < $m; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (tid < d) {
        int a = offset * (2 * tid + 1) - 1;
        int b = offset * (2 * tid + 2) - 1;
        $pad
        const $T tmp = $s[a];
        $s[a] = $s[b];
        $s[b] = $down;
    }
}
__syncthreads();
)";
static const char *sc_blelloch(const char *T, const char *s, const char *m, int pad, const char *up, const char *down,
                               const char *root) {
    return FRAG(sc_blelloch_tpl, "T", T, "s", s, "m", m, "up", up, "down", down, "root", root,
                "pad", pad ? "a += CONFLICT_FREE_OFFSET(a);\nb += CONFLICT_FREE_OFFSET(b);" : "");
}
// The Hillis-Steele inclusive scan of s[0..B) in place (read the partner, wait, update).
static const char sc_hs_tpl[] = R"(
for (int off = 1; off < $B; off <<= 1) {
    const $T other = tid >= off ? s[tid - off] : $I;
    __syncthreads();
    s[tid] = $comb;
    __syncthreads();
}
)";

// ----------------------------------------------------------------------------
// Inclusive scan within a block (segments of the array scanned independently)

enum { SB_N, SB_BLOCK, SB_ALGO, SB_BUFFER, SB_PAD, SB_DTYPE, SB_OP, SB_SHMEM, SB_KNAME, SB_NAMES, SB_TNAME, SB_NP };
static const char *const sb_buffers[] = { "double", "single", NULL };
static const char *const sb_ops[] = { "sum", "max", NULL };
static const char *const sb_shmems[] = { "define", "template", "dynamic", NULL };
static const ParamDesc sb_params[] = {
    [SB_N] = { "n", NULL, 1, "1000 4096 10000 65536 100000 262144 1000000" },
    [SB_BLOCK] = { "block", NULL, 1, "64 128 256 512 1024" }, [SB_ALGO] = { "algo", sc_algos, 1, "*" },
    [SB_BUFFER] = { "buffer", sb_buffers, 0, "*" }, [SB_PAD] = { "padding", NULL, 0, "0..1" },
    [SB_DTYPE] = { "dtype", sc_dtypes, 1, "*" }, [SB_OP] = { "op", sb_ops, 1, "0 0 1" },
    [SB_SHMEM] = { "shmem", sb_shmems, 0, "*" }, [SB_KNAME] = { "kname", NULL, 0, "0..3" },
    [SB_NAMES] = { "names", NULL, 0, "0..3" }, [SB_TNAME] = { "tname", NULL, 0, "0..2" }, [SB_NP] = { NULL } };

static int sb_seg(const Task *t) { return t->p[SB_ALGO] ? 2 * t->p[SB_BLOCK] : t->p[SB_BLOCK]; }

static void sb_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const names[][2] = { { "x", "y" }, { "input", "scanned" }, { "values", "prefix" },
                                            { "data", "out" } };
    static const char *const kn[] = { "block_scan", "blockScanInclusive", "scan_segments", "inclusive_scan_block" };
    if (t->p[SB_ALGO]) t->p[SB_BUFFER] = 0;
    else t->p[SB_PAD] = 0;
    SETNAME(t->in[0].name, "%s", names[t->p[SB_NAMES]][0]);
    SETNAME(t->out[0].name, "%s", names[t->p[SB_NAMES]][1]);
    SETNAME(t->kname[0], "%s", kn[t->p[SB_KNAME]]);
    SETNAME(t->slug, "block_scan");
}
static void sb_layout(Task *t) {
    int is_int = t->p[SB_DTYPE], mx = t->p[SB_OP];
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[SB_N]);
    tshape(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[SB_N], 0, n, -1);
    if (is_int) trange(&t->in[0], mx ? -1000000 : -100, mx ? 1000000 : 100, 1);
    else trange(&t->in[0], mx ? -100 : 0, mx ? 100 : 1, 0);
    tshape(&t->out[0], t->in[0].dt, 1, t->p[SB_N], 0, n, -1);
    int exact = is_int || mx;
    t->atol = exact ? 0 : 1e-6;
    t->rtol = exact ? 0 : ro_sum_rel(sb_seg(t));
}
static void sb_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Block_Inclusive_Scan", "Segmented_Prefix_Sum", "Per_Block_Scan" },
                                          { "Block_Running_Max", "Segmented_Prefix_Max", "Per_Block_Max_Scan" } };
    buf_puts(name, nm[t->p[SB_OP]][t->p[SB_TNAME]]);
    const Tensor *x = &t->in[0];
    int seg = sb_seg(t);
    buf_printf(
        desc,
        "%s holds %d %s values in [%s, %s%s. Split it into consecutive segments of %d elements (the last one may "
        "be shorter) and compute the inclusive prefix %s within each segment: %s[i] = %s of %s[s..i], where "
        "s = i - i %% %d is the start of i's segment. ",
        x->name, t->p[SB_N], dt_names[x->dt], fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")", seg,
        t->p[SB_OP] ? "maximum" : "sum", t->out[0].name, t->p[SB_OP] ? "the maximum" : "the sum", x->name, seg);
    if (t->p[SB_ALGO])
        buf_printf(
            desc,
            "One block of %d threads per segment, two elements per thread, with the work-efficient Blelloch scan in "
            "shared memory (up-sweep, clear the root, down-sweep gives the exclusive scan; combine each element "
            "with its own value)%s.",
            t->p[SB_BLOCK], t->p[SB_PAD] ? ", padding shared-memory indices to avoid bank conflicts" : "");
    else
        buf_printf(desc,
                   "One block of %d threads per segment, one element per thread, with the Hillis-Steele scan in shared "
                   "memory (%s).",
                   t->p[SB_BLOCK],
                   t->p[SB_BUFFER] ? "one buffer: read the partner, __syncthreads(), then update"
                                   : "double buffering between steps");
}

// Hillis-Steele, one element per thread (double buffering swaps pin and pout each step),
// or Blelloch, two elements per thread.
static const char sb_hs_tpl[] = R"(
$defines
/// Inclusive $op scan of each block's $B elements (Hillis-Steele, $buffers).
$template
__global__ void $kname($params) {
    $shared
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    $load
    __syncthreads();
    $scan
    if (i < n) $y[i] = $result;
}
)";
static const char sb_double_tpl[] = R"(
for (int off = 1; off < $B; off <<= 1) {
    //? swap the roles of the two buffers
    pout = 1 - pout;
    pin = 1 - pout;
    if (tid >= off) $out = $comb;
    else $out = $in;
    __syncthreads();
}
)";
static const char sb_blelloch_tpl[] = R"(
$defines
/// Inclusive $op scan of each block's 2 * $B elements: Blelloch's work-efficient scan in shared memory$padded.
$template
__global__ void $kname($params) {
    $shared
    const int tid = threadIdx.x;
    const int nseg = 2 * $B;
    const int base = blockIdx.x * nseg;
    const int ai = tid, bi = tid + nseg / 2;
    const $T xa = base + ai < n ? $x[base + ai] : $I;
    const $T xb = base + bi < n ? $x[base + bi] : $I;
    $pads
    temp[$pa] = xa;
    temp[$pb] = xb;
    $scan
    //? inclusive = exclusive combined with the element itself
    if (base + ai < n) $y[base + ai] = $out_a;
    if (base + bi < n) $y[base + bi] = $out_b;
}
)";
static const char *sb_op(const Task *t, const char *a, const char *b) {
    return t->p[SB_OP] ? fmt("%s(%s, %s)", t->p[SB_DTYPE] ? "max" : "fmaxf", a, b) : fmt("%s + %s", a, b);
}
static void sb_kernels(const Task *t, Emit *e) {
    const char *T = t->p[SB_DTYPE] ? "int" : "float", *x = t->in[0].name, *y = t->out[0].name;
    const char *I = t->p[SB_OP] ? (t->p[SB_DTYPE] ? SC_INT_MIN : SC_LOWEST) : t->p[SB_DTYPE] ? "0" : "0.0f";
    int sh = t->p[SB_SHMEM], pad = t->p[SB_PAD], dbl = !t->p[SB_ALGO] && !t->p[SB_BUFFER], dyn = sh == 2;
    const char *B = pick3(sh, "BLOCK_SIZE", "BLOCK", "blockDim.x");
    const char *defines =
        fmt("%s%s", sh == 0 ? fmt("#define BLOCK_SIZE %d\n", t->p[SB_BLOCK]) : "",
            pad ? "#define LOG_NUM_BANKS 5\n#define CONFLICT_FREE_OFFSET(k) ((k) >> LOG_NUM_BANKS)\n" : "");
    const char *params = fmt("%s, %s, int n", ptr_param(t, T, x, 1), ptr_param(t, T, y, 0));
    const char *tmpl = sh == 1 ? "template <int BLOCK>" : "", *op = t->p[SB_OP] ? "max" : "sum";
    if (*defines) defines = fmt("%s\n", defines);
    if (t->p[SB_ALGO]) {
        const char *shared = dyn ? fmt("extern __shared__ %s temp[];", T)
                             : pad ? fmt("__shared__ %s temp[2 * %s + CONFLICT_FREE_OFFSET(2 * %s)];", T, B, B)
                                   : fmt("__shared__ %s temp[2 * %s];", T, B);
        const char *last = pad ? "nseg - 1 + CONFLICT_FREE_OFFSET(nseg - 1)" : "nseg - 1";
        TPL(e, t, sb_blelloch_tpl, "defines", defines, "op", op, "B", B, "padded", pad ? " with padded indices" : "",
            "template", tmpl, "kname", t->kname[0], "params", params, "shared", shared, "T", T, "x", x, "y", y, "I", I,
            "pads", pad ? "const int pa = ai + CONFLICT_FREE_OFFSET(ai), pb = bi + CONFLICT_FREE_OFFSET(bi);" : "",
            "pa", pad ? "pa" : "ai", "pb", pad ? "pb" : "bi", "scan",
            sc_blelloch(T, "temp", "nseg", pad, sb_op(t, "temp[b]", "temp[a]"), sb_op(t, "temp[b]", "tmp"),
                        fmt("if (tid == 0) temp[%s] = %s;", last, I)),
            "out_a", sb_op(t, pad ? "temp[pa]" : "temp[ai]", "xa"), "out_b",
            sb_op(t, pad ? "temp[pb]" : "temp[bi]", "xb"));
        return;
    }
    const char *out = dyn ? "buf[pout * blockDim.x + tid]" : "buf[pout][tid]";
    const char *in = dyn ? "buf[pin * blockDim.x + tid]" : "buf[pin][tid]";
    const char *other = dyn ? "buf[pin * blockDim.x + tid - off]" : "buf[pin][tid - off]";
    const char *shared = dbl ? (dyn ? fmt("extern __shared__ %s buf[];", T) : fmt("__shared__ %s buf[2][%s];", T, B))
                             : (dyn ? fmt("extern __shared__ %s s[];", T) : fmt("__shared__ %s s[%s];", T, B));
    TPL(e, t, sb_hs_tpl, "defines", defines, "op", op, "B", B, "buffers", dbl ? "double-buffered" : "single buffer",
        "template", tmpl, "kname", t->kname[0], "params", params, "shared", shared, "y", y, "result",
        dbl ? out : "s[tid]", "load",
        dbl ? fmt("int pout = 0, pin = 1;\n%s = i < n ? %s[i] : %s;", out, x, I)
            : fmt("s[tid] = i < n ? %s[i] : %s;", x, I),
        "scan",
        dbl ? FRAG(sb_double_tpl, "B", B, "out", out, "in", in, "comb", sb_op(t, other, in))
            : FRAG(sc_hs_tpl, "B", B, "T", T, "I", I, "comb", sb_op(t, "s[tid]", "other")));
}
static const char sb_launch_tpl[] = R"(
const int threads = $threads;
const int blocks = ($n + $per - 1) / ($per);
$smem
$k<<<blocks, threads$sm>>>($args);
)";
static void sb_launch(const Task *t, Emit *e, const Host *h) {
    int sh = t->p[SB_SHMEM], B = t->p[SB_BLOCK];
    const char *T = t->p[SB_DTYPE] ? "int" : "float";
    const char *smem = t->p[SB_ALGO] && t->p[SB_PAD] ? "(2 * threads + ((2 * threads) >> 5))"
                       : t->p[SB_ALGO] || !t->p[SB_BUFFER] ? "2 * threads" : "threads";
    TPL(e, t, sb_launch_tpl, "threads", sh == 0 ? "BLOCK_SIZE" : fmt("%d", B), "n", h->size[0],
        "per", t->p[SB_ALGO] ? "2 * threads" : "threads", "k", sh == 1 ? fmt("%s<%d>", t->kname[0], B) : t->kname[0],
        "smem", sh == 2 ? fmt("const size_t smem = %s * sizeof(%s);", smem, T) : "", "sm", sh == 2 ? ", smem" : "",
        "args", kernel_args(h, 1));
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
static const Family fam_scan_block = {
    "scan_block",
    "inclusive sum/max scan of each block-sized segment in shared memory: Hillis-Steele"
    " (double or single buffer) or Blelloch (optionally padded)",
    sb_params, NULL, sb_draw, sb_layout, sb_describe, sb_kernels, sb_launch, sb_ref };

// ----------------------------------------------------------------------------
// Exclusive scan of a long array: scan each block, scan the block totals, add offsets

enum { SE_N, SE_BLOCK, SE_ALGO, SE_DTYPE, SE_SUMS, SE_SHMEM, SE_KNAME, SE_NAMES, SE_TNAME, SE_NP };
static const char *const se_sums[] = { "block_loop", "serial", NULL };
static const char *const se_shmems[] = { "define", "dynamic", NULL };
static const ParamDesc se_params[] = {
    [SE_N] = { "n", NULL, 1, "10000 65536 100000 262144 1000000 1048576 2000000" },
    [SE_BLOCK] = { "block", NULL, 1, "128 256 512 1024" }, [SE_ALGO] = { "algo", sc_algos, 1, "*" },
    [SE_DTYPE] = { "dtype", sc_dtypes, 1, "*" }, [SE_SUMS] = { "sums", se_sums, 1, "*" },
    [SE_SHMEM] = { "shmem", se_shmems, 0, "*" }, [SE_KNAME] = { "kname", NULL, 0, "0..3" },
    [SE_NAMES] = { "names", NULL, 0, "0..3" }, [SE_TNAME] = { "tname", NULL, 0, "0..2" }, [SE_NP] = { NULL } };

static void se_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const names[][2] = { { "x", "y" }, { "input", "prefix" }, { "values", "offsets" },
                                            { "counts", "starts" } };
    static const char *const kn[3][4] = { { "scan_blocks", "blockScanKernel", "local_scan", "scan_per_block" },
                                          { "scan_block_sums", "scanBlockTotals", "scan_totals", "scan_partials" },
                                          { "add_block_offsets", "addBlockOffsets", "uniform_add", "add_offsets" } };
    SETNAME(t->in[0].name, "%s", names[t->p[SE_NAMES]][0]);
    SETNAME(t->out[0].name, "%s", names[t->p[SE_NAMES]][1]);
    for (int k = 0; k < 3; k++) SETNAME(t->kname[k], "%s", kn[k][t->p[SE_KNAME]]);
    SETNAME(t->slug, "exclusive_scan");
}
static void se_layout(Task *t) {
    int is_int = t->p[SE_DTYPE], big = t->p[SE_N] > 1000000;
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[SE_N]);
    tshape(&t->in[0], is_int ? DT_I32 : DT_F32, 1, t->p[SE_N], 0, n, -1);
    if (is_int) trange(&t->in[0], big ? 0 : -100, big ? 9 : 100, 1);
    else trange(&t->in[0], 0, 1, 0);
    tshape(&t->out[0], t->in[0].dt, 1, t->p[SE_N], 0, n, -1);
    t->atol = is_int ? 0 : 1e-6;
    t->rtol = is_int ? 0 : ro_sum_rel(t->p[SE_N]);
}
static void se_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[] = { "Exclusive_Scan", "Exclusive_Prefix_Sum", "Large_Array_Prefix_Sum" };
    buf_puts(name, nm[t->p[SE_TNAME]]);
    const Tensor *x = &t->in[0];
    const char *y = t->out[0].name;
    int B = t->p[SE_BLOCK], seg = t->p[SE_ALGO] ? 2 * B : B;
    buf_printf(
        desc,
        "Compute the exclusive prefix sum of the %d %s values of %s (in [%s, %s%s): %s[0] = 0 and %s[i] = %s[0] + "
        "... + %s[i-1]. Use three kernels: each block of %d threads scans its %d elements in shared memory (%s) "
        "and writes its total; ",
        t->p[SE_N], dt_names[x->dt], x->name, fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")", y, y, x->name, x->name,
        B, seg, t->p[SE_ALGO] ? "Blelloch" : "Hillis-Steele");
    buf_puts(desc, t->p[SE_SUMS] ? "a single thread scans the block totals; "
                                 : "one block scans the block totals in chunks, carrying the running total; ");
    buf_puts(desc, "a third kernel adds each block's offset to its elements.");
}

// Step 1 scans each block's elements (Hillis-Steele: one per thread, Blelloch: two) and
// writes the block's total; step 2 scans the totals (one thread, or one block chunk by
// chunk); step 3 adds each block's offset.
static const char se_kernels_tpl[] = R"(
$define
/// Step 1: exclusive scan of each block's $per elements in shared memory; the block's total goes to block_sums.
__global__ void $k1($params1) {
    $shared1
    const int tid = threadIdx.x;
    $step1
}

/// $comment2
__global__ void $k2($params2) {
    $step2
}

/// Step 3: add each block's offset to its elements.
__global__ void $k3($params3) {
    const $T add = sums[blockIdx.x];
    $step3
}
)";
static const char se_hs_tpl[] = R"(
const int i = blockIdx.x * blockDim.x + tid;
s[tid] = i < n ? $x[i] : $Z;
__syncthreads();
$hs
//? shift by one: the exclusive result is the inclusive result of the left neighbour
if (i < n) $y[i] = tid > 0 ? s[tid - 1] : $Z;
if (tid == blockDim.x - 1) block_sums[blockIdx.x] = s[tid];
)";
static const char se_blelloch_tpl[] = R"(
const int m = 2 * blockDim.x;
const int base = blockIdx.x * m;
s[tid] = base + tid < n ? $x[base + tid] : $Z;
s[tid + blockDim.x] = base + tid + blockDim.x < n ? $x[base + tid + blockDim.x] : $Z;
$scan
if (base + tid < n) $y[base + tid] = s[tid];
if (base + tid + blockDim.x < n) $y[base + tid + blockDim.x] = s[tid + blockDim.x];
)";
static const char *const se_sums_tpl[] = { R"(
$shared
const int tid = threadIdx.x;
$T carry = $Z;
for (int base = 0; base < count; base += blockDim.x) {
    const int i = base + tid;
    s[tid] = i < count ? sums[i] : $Z;
    __syncthreads();
    $hs
    if (i < count) sums[i] = carry + (tid > 0 ? s[tid - 1] : $Z);
    carry += s[blockDim.x - 1];
    __syncthreads();
}
)", R"(
if (threadIdx.x != 0 || blockIdx.x != 0) return;
$T run = $Z;
for (int b = 0; b < count; b++) {
    const $T v = sums[b];
    sums[b] = run;
    run += v;
}
)" };
static void se_kernels(const Task *t, Emit *e) {
    const char *T = t->p[SE_DTYPE] ? "int" : "float", *Z = t->p[SE_DTYPE] ? "0" : "0.0f";
    const char *x = t->in[0].name, *y = t->out[0].name;
    int dyn = t->p[SE_SHMEM] == 1, bl = t->p[SE_ALGO];
    const char *B = dyn ? "blockDim.x" : "BLOCK_SIZE", *sums = ptr_param(t, T, "sums", 0);
    const char *shared = dyn ? fmt("extern __shared__ %s s[];", T) : fmt("__shared__ %s s[%s];", T, B);
    const char *hs = FRAG(sc_hs_tpl, "B", B, "T", T, "I", "0", "comb", "s[tid] + other");
    const char *root = "if (tid == 0) {\n    block_sums[blockIdx.x] = s[m - 1];\n    s[m - 1] = $Z;\n}";
    TPL(e, t, se_kernels_tpl, "define", dyn ? "" : fmt("#define BLOCK_SIZE %d\n", t->p[SE_BLOCK]), "T", T, "per",
        bl ? "2 * blockDim.x" : "blockDim.x", "k1", t->kname[0], "k2", t->kname[1], "k3", t->kname[2], "params1",
        fmt("%s, %s, %s, int n", ptr_param(t, T, x, 1), ptr_param(t, T, y, 0), ptr_param(t, T, "block_sums", 0)),
        "shared1", dyn || !bl ? shared : fmt("__shared__ %s s[2 * %s];", T, B), "step1",
        bl ? FRAG(se_blelloch_tpl, "x", x, "y", y, "Z", Z, "scan",
                  sc_blelloch(T, "s", "m", 0, "s[b] + s[a]", "s[b] + tmp", FRAG(root, "Z", Z)))
           : FRAG(se_hs_tpl, "x", x, "y", y, "Z", Z, "hs", hs),
        "comment2",
        t->p[SE_SUMS]
            ? "Step 2: one thread turns the block totals into exclusive offsets."
            : "Step 2: one block turns the block totals into exclusive offsets, a chunk of blockDim.x at a time.",
        "params2", fmt("%s, int count", sums), "step2",
        FRAG(se_sums_tpl[t->p[SE_SUMS]], "shared", shared, "T", T, "Z", Z, "hs", hs), "params3",
        fmt("%s, %s, int n", ptr_param(t, T, y, 0), ptr_param(t, T, "sums", 1)), "step3",
        bl ? fmt("const int i = blockIdx.x * 2 * blockDim.x + threadIdx.x;\nif (i < n) %s[i] += add;\n"
                 "if (i + blockDim.x < n) %s[i + blockDim.x] += add;",
                 y, y)
           : fmt("const int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i < n) %s[i] += add;", y));
}
static const char se_launch_tpl[] = R"(
const int threads = $threads;
const int blocks = ($n + $per - 1) / ($per);
$alloc
$smem
$k1<<<blocks, threads$sm1>>>($in, $out, $sums, $n);
$k2<<<1, $cfg2>>>($sums, blocks);
$k3<<<blocks, threads>>>($out, $sums, $n);
$sync
$free
)";
static void se_launch(const Task *t, Emit *e, const Host *h) {
    const char *T = t->p[SE_DTYPE] ? "int" : "float", *per = t->p[SE_ALGO] ? "2 * threads" : "threads";
    int dyn = t->p[SE_SHMEM] == 1, serial = t->p[SE_SUMS];
    const char *sums = dname(t, "block_sums");
    TPL(e, t, se_launch_tpl, "threads", dyn ? fmt("%d", t->p[SE_BLOCK]) : "BLOCK_SIZE", "n", h->size[0], "per", per,
        "alloc", dev_alloc(t, T, sums, "blocks"), "smem",
        dyn ? fmt("const size_t smem = %s * sizeof(%s);", per, T) : "", "k1", t->kname[0], "k2", t->kname[1], "k3",
        t->kname[2], "sm1", dyn ? ", smem" : "", "in", h->in[0], "out", h->out[0], "sums", sums, "cfg2",
        serial ? "1"
        : dyn  ? fmt("threads, threads * sizeof(%s)", T)
               : "threads",
        "sync", checked(t, "cudaDeviceSynchronize()"), "free", checked(t, fmt("cudaFree(%s)", sums)));
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
static const Family fam_scan_exclusive = {
    "scan_exclusive",
    "exclusive prefix sum of a long array in three kernels: per-block scan (Hillis-"
    "Steele or Blelloch), scan of block totals, add offsets",
    se_params, NULL, se_draw, se_layout, se_describe, se_kernels, se_launch, se_ref };

static const Family *const families_scan[] = { &fam_scan_block, &fam_scan_exclusive, NULL };
