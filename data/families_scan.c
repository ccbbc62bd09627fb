// families_scan.c - prefix scans of a 1-D array: the inclusive sum/max scan of each block-sized
// segment (Hillis-Steele with one or two buffers, or Blelloch with optionally padded indices),
// and the exclusive prefix sum of a long array in three kernels (scan each block, scan the
// block totals, add the offsets). Row-wise cumulative sums are in families_rows.c. Included
// after families_rows.c (ro_get, ro_shmems) and families_reduce.c (red_grid), and before
// families_select.c, which uses the 1-D pieces and the shared-memory scans below. Every
// comparison is exact: maxima and integer scans are, and float sums by their inputs (SC_GRID).

static const char *const sc_algos[] = { "hillis_steele", "blelloch", NULL };
static const char *const sc_dtypes[] = { "float32", "int32", NULL };
static const char *const sc_sums[] = { "block_loop", "serial", NULL };
static const char *sc_ct(int is_int) { return is_int ? "int" : "float"; }

// ----------------------------------------------------------------------------
// 1-D tasks: one input array of n ints or floats, outputs of n values or of one

// Float sums of a scan take values in [0, 1) on a grid of 1/16: every partial sum below
// 2^20 (up to 2.2 million values of mean 15/32) is a float, so any order of additions gives
// the exact prefix (a relative tolerance on prefixes up to 5e5 let errors of ~100 pass).
#define SC_GRID (1.0 / 16)

// The input: n ints or floats (the size constant n) in [lo, hi]; no outputs yet; exact.
static void sc_input(Task *t, long n, int is_int, double lo, double hi, int integer) {
    t->nin = 1;
    t->nout = 0;
    tshape(&t->in[0], is_int ? DT_I32 : DT_F32, 1, n, 0, add_size(t, "n", n), -1);
    trange(&t->in[0], lo, hi, integer);
    t->atol = t->rtol = 0;
}
// The next output: as long as the input (whole) or one value.
static Tensor *sc_output(Task *t, DType dt, int whole) {
    Tensor *y = &t->out[t->nout++];
    tshape(y, dt, 1, whole ? t->in[0].shape[0] : 1, 0, whole ? 0 : -1, -1);
    return y;
}
// The value range of a tensor for a prompt: "[lo, hi]" for whole numbers, "[lo, hi)" else.
static const char *sc_range(const Tensor *x) {
    return fmt("[%s, %s%s", fnum(x->lo), fnum(x->hi), x->integer ? "]" : ")");
}
// The prompt's sentence about the input: "x holds 1000 float32 values in [0, 1). ".
static void sc_holds(Buf *desc, const Task *t) {
    const Tensor *x = &t->in[0];
    buf_printf(desc, "%s holds %ld %s values in %s. ", x->name, x->shape[0], dt_names[x->dt], sc_range(x));
}

// ----------------------------------------------------------------------------
// Scans in shared memory, written once for the families here and stream_compact

// The up-sweep and down-sweep of Blelloch's scan over temp[0..nseg) with 'offset' (starts at
// 1): leaves the exclusive scan in temp. $root: what happens at the root between the sweeps.
static const char sc_blelloch_tpl[] = R"(
int offset = 1;
//? up-sweep: build partial results in place up the tree
for (int d = nseg >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (tid < d) {
        int a = offset * (2 * tid + 1) - 1;
        int b = offset * (2 * tid + 2) - 1;
        $pad
        temp[b] = $up;
    }
    offset <<= 1;
}
$root
//? down-sweep: push the prefixes back down; this leaves the exclusive scan
for (int d = 1; d < nseg; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (tid < d) {
        int a = offset * (2 * tid + 1) - 1;
        int b = offset * (2 * tid + 2) - 1;
        $pad
        const $T tmp = temp[a];
        temp[a] = temp[b];
        temp[b] = $down;
    }
}
__syncthreads();
)";
// The Hillis-Steele inclusive scan of s[0..B) in place (read the partner, wait, update).
static const char sc_hs_tpl[] = R"(
for (int off = 1; off < $B; off <<= 1) {
    const $T other = tid >= off ? s[tid - off] : $I;
    __syncthreads();
    s[tid] = $comb;
    __syncthreads();
}
)";
// The Hillis-Steele sum scan of s[0..B) of type T.
static const char *sc_hs_sum(const char *B, const char *T) {
    return FRAG(sc_hs_tpl, "B", B, "T", T, "I", "0", "comb", "s[tid] + other");
}
// One block turns the per-block values $a[0..$n) (totals, counts) into exclusive offsets in
// place: chunk by chunk of $B with the Hillis-Steele scan $hs, carrying the running total,
// or one thread serially. $total: an optional statement that stores the total.
static const char *const sc_offsets_tpl[] = { R"(
$shared
const int tid = threadIdx.x;
$T carry = $Z;
for (int base = 0; base < $n; base += $B) {
    const int i = base + tid;
    s[tid] = i < $n ? $a[i] : $Z;
    __syncthreads();
    $hs
    if (i < $n) $a[i] = carry + (tid > 0 ? s[tid - 1] : $Z);
    carry += s[$B - 1];
    __syncthreads();
}
$total
)", R"(
if ($guard) return;
$T run = $Z;
for (int b = 0; b < $n; b++) {
    const $T $v = $a[b];
    $a[b] = run;
    run += $v;
}
$total
)" };

// One block's scan of its elements of x into y in shared memory, a kernel's whole body (the
// array, sc_scan_shared, then tid and the scan): Hillis-Steele, one element per thread, in one array s or
// in two that swap roles each step (buf[pin], buf[pout]); or Blelloch, two elements per
// thread in temp (pad: indices padded against bank conflicts). Inclusive (scan_block), or
// exclusive with the block's total into block_sums (step 1 of scan_exclusive).
typedef struct {
    int blelloch, dbl, pad, dyn, max, is_int, excl;
    const char *T, *B, *I; // the element type, the block size, the identity of the operation
} ScScan;
static const char sc_hs_body_tpl[] = R"(
$shared
const int tid = threadIdx.x;
const int i = blockIdx.x * blockDim.x + tid;
$load
__syncthreads();
$scan
$store
)";
static const char sc_hs_exclusive_tpl[] = R"(
//? shift by one: the exclusive result is the inclusive result of the left neighbour
if (i < n) $y[i] = tid > 0 ? s[tid - 1] : $I;
if (tid == blockDim.x - 1) block_sums[blockIdx.x] = s[tid];
)";
static const char sc_double_tpl[] = R"(
for (int off = 1; off < $B; off <<= 1) {
    //? swap the roles of the two buffers
    pout = 1 - pout;
    pin = 1 - pout;
    if (tid >= off) $out = $comb;
    else $out = $in;
    __syncthreads();
}
)";
static const char sc_blelloch_body_tpl[] = R"(
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
$why
if (base + ai < n) $y[base + ai] = $out_a;
if (base + bi < n) $y[base + bi] = $out_b;
)";
static const char sc_blelloch_root_tpl[] = R"(
if (tid == 0) {
    block_sums[blockIdx.x] = temp[$last];
    temp[$last] = $I;
}
)";
static const char *sc_op(const ScScan *o, const char *a, const char *b) {
    return o->max ? fmt("%s(%s, %s)", o->is_int ? "max" : "fmaxf", a, b) : fmt("%s + %s", a, b);
}
// Element tid (+ off) of double buffer p: a [2][B] array, or one dynamic array of 2 * B.
static const char *sc_buf(int dyn, const char *p, const char *off) {
    return dyn ? fmt("buf[%s * blockDim.x + tid%s]", p, off) : fmt("buf[%s][tid%s]", p, off);
}
static const char *sc_scan_shared(const ScScan *o) {
    const char *arr = o->blelloch ? "temp" : o->dbl ? "buf" : "s", *B = o->B;
    const char *dims = !o->blelloch ? fmt(o->dbl ? "[2][%s]" : "[%s]", B)
                       : o->pad ? fmt("[2 * %s + CONFLICT_FREE_OFFSET(2 * %s)]", B, B) : fmt("[2 * %s]", B);
    return o->dyn ? fmt("extern __shared__ %s %s[];", o->T, arr) : fmt("__shared__ %s %s%s;", o->T, arr, dims);
}
static const char *sc_scan_body(const Task *t, const ScScan *o) {
    const char *x = t->in[0].name, *y = t->out[0].name, *T = o->T, *B = o->B, *I = o->I, *sh = sc_scan_shared(o);
    if (o->blelloch) {
        const char *last = o->pad ? "nseg - 1 + CONFLICT_FREE_OFFSET(nseg - 1)" : "nseg - 1";
        const char *pa = o->pad ? "pa" : "ai", *pb = o->pad ? "pb" : "bi";
        const char *pads = "const int pa = ai + CONFLICT_FREE_OFFSET(ai), pb = bi + CONFLICT_FREE_OFFSET(bi);";
        const char *root = o->excl ? FRAG(sc_blelloch_root_tpl, "last", last, "I", I)
                                   : fmt("if (tid == 0) temp[%s] = %s;", last, I);
        const char *scan = FRAG(sc_blelloch_tpl, "T", T, "up", sc_op(o, "temp[b]", "temp[a]"), "root", root,
                                "down", sc_op(o, "temp[b]", "tmp"),
                                "pad", o->pad ? "a += CONFLICT_FREE_OFFSET(a);\nb += CONFLICT_FREE_OFFSET(b);" : "");
        const char *out_a = fmt("temp[%s]", pa), *out_b = fmt("temp[%s]", pb);
        return FRAG(sc_blelloch_body_tpl, "shared", sh, "B", B, "T", T, "x", x, "y", y, "I", I, "pa", pa, "pb", pb,
                    "pads", o->pad ? pads : "", "scan", scan,
                    "why", o->excl ? "" : "//? inclusive = exclusive combined with the element itself",
                    "out_a", o->excl ? out_a : sc_op(o, out_a, "xa"), "out_b", o->excl ? out_b : sc_op(o, out_b, "xb"));
    }
    if (!o->dbl)
        return FRAG(sc_hs_body_tpl, "shared", sh, "load", fmt("s[tid] = i < n ? %s[i] : %s;", x, I),
                    "scan", FRAG(sc_hs_tpl, "B", B, "T", T, "I", I, "comb", sc_op(o, "s[tid]", "other")),
                    "store", o->excl ? FRAG(sc_hs_exclusive_tpl, "y", y, "I", I)
                                     : fmt("if (i < n) %s[i] = s[tid];", y));
    const char *out = sc_buf(o->dyn, "pout", ""), *in = sc_buf(o->dyn, "pin", "");
    const char *other = sc_buf(o->dyn, "pin", " - off");
    return FRAG(sc_hs_body_tpl, "shared", sh,
                "load", fmt("int pout = 0, pin = 1;\n%s = i < n ? %s[i] : %s;", out, x, I),
                "scan", FRAG(sc_double_tpl, "B", B, "out", out, "in", in, "comb", sc_op(o, other, in)),
                "store", fmt("if (i < n) %s[i] = %s;", y, out));
}

// ----------------------------------------------------------------------------
// Inclusive scan within a block (segments of the array scanned independently)

enum { SB_N, SB_BLOCK, SB_ALGO, SB_BUFFER, SB_PAD, SB_DTYPE, SB_OP, SB_SHMEM, SB_KNAME, SB_NAMES, SB_TNAME, SB_NP };
static const char *const sb_buffers[] = { "double", "single", NULL };
static const char *const sb_ops[] = { "sum", "max", NULL };
static const ParamDesc sb_params[] = {
    [SB_N] = { "n", NULL, 1, "1000 4096 10000 65536 100000 262144 1000000" },
    [SB_BLOCK] = { "block", NULL, 1, "64 128 256 512 1024" }, [SB_ALGO] = { "algo", sc_algos, 1, "*" },
    [SB_BUFFER] = { "buffer", sb_buffers, 0, "*" }, [SB_PAD] = { "padding", NULL, 0, "0..1" },
    [SB_DTYPE] = { "dtype", sc_dtypes, 1, "*" }, [SB_OP] = { "op", sb_ops, 1, "0 0 1" },
    [SB_SHMEM] = { "shmem", ro_shmems, 0, "*" }, [SB_KNAME] = { "kname", NULL, 0, "0..3" },
    [SB_NAMES] = { "names", NULL, 0, "0..3" }, [SB_TNAME] = { "tname", NULL, 0, "0..2" }, [SB_NP] = { NULL } };

// The segment: a block's elements, one per thread (Hillis-Steele) or two (Blelloch); at
// least 1, since a spec read back may say block 0.
static int sb_seg(const Task *t) { return (t->p[SB_ALGO] ? 2 : 1) * (t->p[SB_BLOCK] > 0 ? t->p[SB_BLOCK] : 1); }

static void sb_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const names[] = { "x y", "input scanned", "values prefix", "data out" };
    static const char *const kn[] = { "block_scan", "blockScanInclusive", "scan_segments", "inclusive_scan_block" };
    if (t->p[SB_ALGO]) t->p[SB_BUFFER] = 0;
    else t->p[SB_PAD] = 0;
    task_names(t, 1, names[t->p[SB_NAMES]], kn[t->p[SB_KNAME]], "block_scan");
}
static void sb_layout(Task *t) {
    int is_int = t->p[SB_DTYPE], mx = t->p[SB_OP];
    if (is_int) sc_input(t, t->p[SB_N], 1, mx ? -1000000 : -100, mx ? 1000000 : 100, 1);
    else sc_input(t, t->p[SB_N], 0, mx ? -100 : 0, mx ? 100 : 1, 0);
    if (!is_int && !mx) tgrid(&t->in[0], SC_GRID, 1); // exact: see SC_GRID
    sc_output(t, t->in[0].dt, 1);
}
static void sb_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Block_Inclusive_Scan", "Segmented_Prefix_Sum", "Per_Block_Scan" },
                                          { "Block_Running_Max", "Segmented_Prefix_Max", "Per_Block_Max_Scan" } };
    const char *x = t->in[0].name, *op = t->p[SB_OP] ? "maximum" : "sum";
    int seg = sb_seg(t);
    buf_puts(name, nm[t->p[SB_OP]][t->p[SB_TNAME]]);
    sc_holds(desc, t);
    buf_printf(desc,
               "Split it into consecutive segments of %d elements (the last one may be shorter) and compute the "
               "inclusive prefix %s within each segment: %s[i] = the %s of %s[s..i], where s = i - i %% %d is the "
               "start of i's segment. One block of %d threads per segment, ",
               seg, op, t->out[0].name, op, x, seg, t->p[SB_BLOCK]);
    if (t->p[SB_ALGO])
        buf_printf(desc, "two elements per thread, with the work-efficient Blelloch scan in shared memory (up-sweep, "
                   "clear the root, down-sweep gives the exclusive scan; combine each element with its own value)%s.",
                   t->p[SB_PAD] ? ", padding shared-memory indices to avoid bank conflicts" : "");
    else
        buf_printf(desc, "one element per thread, with the Hillis-Steele scan in shared memory (%s).",
                   t->p[SB_BUFFER] ? "one buffer: read the partner, __syncthreads(), then update"
                                   : "double buffering between steps");
}

// One kernel: the block's scan (sc_scan_body) of its segment.
static void sb_kernels(const Task *t, Emit *e) {
    int sh = t->p[SB_SHMEM], pad = t->p[SB_PAD], dbl = !t->p[SB_ALGO] && !t->p[SB_BUFFER];
    const char *T = sc_ct(t->p[SB_DTYPE]), *B = pick3(sh, "BLOCK_SIZE", "BLOCK", "blockDim.x");
    const char *I = t->p[SB_OP] ? (t->p[SB_DTYPE] ? RO_INT_MIN : RO_LOWEST) : t->p[SB_DTYPE] ? "0" : "0.0f";
    ScScan o = { .blelloch = t->p[SB_ALGO], .dbl = dbl, .pad = pad, .dyn = sh == RO_DYNAMIC, .max = t->p[SB_OP],
                 .is_int = t->p[SB_DTYPE], .T = T, .B = B, .I = I };
    const char *defines =
        fmt("%s%s", sh == RO_DEFINE ? fmt("#define BLOCK_SIZE %d\n", t->p[SB_BLOCK]) : "",
            pad ? "#define LOG_NUM_BANKS 5\n#define CONFLICT_FREE_OFFSET(k) ((k) >> LOG_NUM_BANKS)\n" : "");
    const char *what = t->p[SB_ALGO] ? fmt("2 * %s elements: Blelloch's work-efficient scan in shared memory%s", B,
                                           pad ? " with padded indices" : "")
                                     : fmt("%s elements (Hillis-Steele, %s)", B,
                                           dbl ? "double-buffered" : "single buffer");
    emit_kernel(e, t, *defines ? fmt("%s\n", defines) : "", sh == RO_TEMPLATE ? "template <int BLOCK>" : "",
                fmt("Inclusive %s scan of each block's %s.", t->p[SB_OP] ? "max" : "sum", what), "int n",
                sc_scan_body(t, &o));
}
static void sb_launch(const Task *t, Emit *e, const Host *h) {
    int sh = t->p[SB_SHMEM], B = t->p[SB_BLOCK];
    const char *smem = t->p[SB_ALGO] && t->p[SB_PAD] ? "(2 * threads + ((2 * threads) >> 5))"
                       : t->p[SB_ALGO] || !t->p[SB_BUFFER] ? "2 * threads" : "threads";
    const char *threads = sh == RO_DEFINE ? "BLOCK_SIZE" : fmt("%d", B);
    TPL(e, t, "$grid\n$smem\n$k<<<blocks, threads$sm>>>($args);",
        "grid", red_grid(threads, h->size[0], t->p[SB_ALGO], 0), // Blelloch: two a thread
        "k", sh == RO_TEMPLATE ? fmt("%s<%d>", t->kname[0], B) : t->kname[0],
        "smem", sh == RO_DYNAMIC ? fmt("const size_t smem = %s * sizeof(%s);", smem, sc_ct(t->p[SB_DTYPE])) : "",
        "sm", sh == RO_DYNAMIC ? ", smem" : "", "args", kernel_args(h, 1));
}
static void sb_ref(const Task *t, const void *const *in, void *const *out) {
    long seg = sb_seg(t);
    int is_int = t->p[SB_DTYPE];
    double acc = 0;
    for (long i = 0; i < t->p[SB_N]; i++) {
        double v = ro_get(in[0], is_int, i);
        acc = i % seg == 0 ? v : !t->p[SB_OP] ? acc + v : v > acc ? v : acc;
        ro_put(out[0], is_int, i, acc);
    }
}
static const Family fam_scan_block = {
    "scan_block",
    "inclusive sum/max scan of each block-sized segment in shared memory: Hillis-Steele (double or single buffer) or "
    "Blelloch (optionally padded)",
    sb_params, NULL, sb_draw, sb_layout, sb_describe, sb_kernels, sb_launch, sb_ref };

// ----------------------------------------------------------------------------
// Exclusive scan of a long array: scan each block, scan the block totals, add offsets

enum { SE_N, SE_BLOCK, SE_ALGO, SE_DTYPE, SE_SUMS, SE_SHMEM, SE_KNAME, SE_NAMES, SE_TNAME, SE_NP };
static const char *const se_shmems[] = { "define", "dynamic", NULL };
static const ParamDesc se_params[] = {
    [SE_N] = { "n", NULL, 1, "10000 65536 100000 262144 1000000 1048576 2000000" },
    [SE_BLOCK] = { "block", NULL, 1, "128 256 512 1024" }, [SE_ALGO] = { "algo", sc_algos, 1, "*" },
    [SE_DTYPE] = { "dtype", sc_dtypes, 1, "*" }, [SE_SUMS] = { "sums", sc_sums, 1, "*" },
    [SE_SHMEM] = { "shmem", se_shmems, 0, "*" }, [SE_KNAME] = { "kname", NULL, 0, "0..3" },
    [SE_NAMES] = { "names", NULL, 0, "0..3" }, [SE_TNAME] = { "tname", NULL, 0, "0..2" }, [SE_NP] = { NULL } };

static void se_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const names[] = { "x y", "input prefix", "values offsets", "counts starts" };
    static const char *const kn[] = {
        "scan_blocks scan_block_sums add_block_offsets", "blockScanKernel scanBlockTotals addBlockOffsets",
        "local_scan scan_totals uniform_add", "scan_per_block scan_partials add_offsets" };
    task_names(t, 1, names[t->p[SE_NAMES]], kn[t->p[SE_KNAME]], "exclusive_scan");
}
static void se_layout(Task *t) {
    int big = t->p[SE_N] > 1000000;
    if (t->p[SE_DTYPE]) sc_input(t, t->p[SE_N], 1, big ? 0 : -100, big ? 9 : 100, 1);
    else {
        sc_input(t, t->p[SE_N], 0, 0, 1, 0);
        tgrid(&t->in[0], SC_GRID, 1);
    }
    sc_output(t, t->in[0].dt, 1);
}
static void se_describe(const Task *t, Buf *name, Buf *desc) {
    const char *x = t->in[0].name, *y = t->out[0].name;
    int B = t->p[SE_BLOCK];
    buf_puts(name, pick3(t->p[SE_TNAME], "Exclusive_Scan", "Exclusive_Prefix_Sum", "Large_Array_Prefix_Sum"));
    buf_printf(desc,
               "Compute the exclusive prefix sum of the %d %s values of %s (in %s): %s[0] = 0 and %s[i] = %s[0] + "
               "... + %s[i-1]. Use three kernels: each block of %d threads scans its %d elements in shared memory (%s) "
               "and writes its total; %s; a third kernel adds each block's offset to its elements.",
               t->p[SE_N], dt_names[t->in[0].dt], x, sc_range(&t->in[0]), y, y, x, x, B, t->p[SE_ALGO] ? 2 * B : B,
               t->p[SE_ALGO] ? "Blelloch" : "Hillis-Steele",
               t->p[SE_SUMS] ? "a single thread scans the block totals"
                             : "one block scans the block totals in chunks, carrying the running total");
}

// Step 1 (emit_kernel) scans each block's elements (sc_scan_body, exclusive) and writes the block's
// total; step 2 scans the totals (one thread, or one block chunk by chunk); step 3 adds the offsets.
static const char se_kernels_tpl[] = R"(
$kernel2

/// Step 3: add each block's offset to its elements.
__global__ void $k3($params3) {
    const $T add = sums[blockIdx.x];
    const int i = blockIdx.x * $per + threadIdx.x;
    if (i < n) $y[i] += add;
    $add2
}
)";
static void se_kernels(const Task *t, Emit *e) {
    const char *T = sc_ct(t->p[SE_DTYPE]), *Z = t->p[SE_DTYPE] ? "0" : "0.0f";
    const char *y = t->out[0].name;
    int dyn = t->p[SE_SHMEM] == 1, bl = t->p[SE_ALGO];
    const char *B = dyn ? "blockDim.x" : "BLOCK_SIZE", *per = bl ? "2 * blockDim.x" : "blockDim.x";
    const char *shared = dyn ? fmt("extern __shared__ %s s[];", T) : fmt("__shared__ %s s[%s];", T, B);
    ScScan o = { .blelloch = bl, .dyn = dyn, .is_int = t->p[SE_DTYPE], .excl = 1, .T = T, .B = B, .I = Z };
    const char *step2 = FRAG(sc_offsets_tpl[t->p[SE_SUMS]], "shared", shared, "T", T, "Z", Z, "hs", sc_hs_sum(B, T),
                             "n", "count", "a", "sums", "B", "blockDim.x",
                             "guard", "threadIdx.x != 0 || blockIdx.x != 0", "v", "v", "total", "");
    emit_kernel(e, t, dyn ? "" : fmt("#define BLOCK_SIZE %d\n", t->p[SE_BLOCK]), "",
                fmt("Step 1: exclusive scan of each block's %s elements in shared memory; the block's total goes to "
                    "block_sums.", per), fmt("%s, int n", ptr_param(t, T, "block_sums", 0)), sc_scan_body(t, &o));
    em_blank(e);
    const char *comment2 = t->p[SE_SUMS] ? "Step 2: one thread turns the block totals into exclusive offsets."
                                         : "Step 2: one block turns the block totals into exclusive offsets, a chunk "
                                           "of blockDim.x at a time.";
    TPL(e, t, se_kernels_tpl, "T", T, "y", y, "per", per, "k3", t->kname[2],
        "kernel2", kernel_frag(t->kname[1], comment2, fmt("%s, int count", ptr_param(t, T, "sums", 0)), step2),
        "params3", fmt("%s, %s, int n", ptr_param(t, T, y, 0), ptr_param(t, T, "sums", 1)),
        "add2", bl ? fmt("if (i + blockDim.x < n) %s[i + blockDim.x] += add;", y) : "");
}
static const char se_launch_tpl[] = R"(
$grid
$alloc
$smem
$k1<<<blocks, threads$sm1>>>($in, $out, $sums, $n);
$k2<<<1, $cfg2>>>($sums, blocks);
$k3<<<blocks, threads>>>($out, $sums, $n);
$free
)";
static void se_launch(const Task *t, Emit *e, const Host *h) {
    const char *T = sc_ct(t->p[SE_DTYPE]), *per = t->p[SE_ALGO] ? "2 * threads" : "threads";
    const char *sums = dname(t, "block_sums");
    int dyn = t->p[SE_SHMEM] == 1;
    const char *threads = dyn ? fmt("%d", t->p[SE_BLOCK]) : "BLOCK_SIZE";
    TPL(e, t, se_launch_tpl, "grid", red_grid(threads, h->size[0], t->p[SE_ALGO], 0), "n", h->size[0],
        "alloc", dev_alloc(t, T, sums, "blocks"),
        "smem", dyn ? fmt("const size_t smem = %s * sizeof(%s);", per, T) : "", "k1", t->kname[0], "k2", t->kname[1],
        "k3", t->kname[2], "sm1", dyn ? ", smem" : "", "in", h->in[0], "out", h->out[0], "sums", sums,
        "cfg2", t->p[SE_SUMS] ? "1" : dyn ? fmt("threads, threads * sizeof(%s)", T) : "threads",
        "free", sync_free(t, sums, NULL));
}
static void se_ref(const Task *t, const void *const *in, void *const *out) {
    double acc = 0;
    for (long i = 0; i < t->p[SE_N]; i++) {
        ro_put(out[0], t->p[SE_DTYPE], i, acc);
        acc += ro_get(in[0], t->p[SE_DTYPE], i);
    }
}
static const Family fam_scan_exclusive = {
    "scan_exclusive",
    "exclusive prefix sum of a long array in three kernels: per-block scan (Hillis-Steele or Blelloch), scan of block "
    "totals, add offsets",
    se_params, NULL, se_draw, se_layout, se_describe, se_kernels, se_launch, se_ref };

static const Family *const families_scan[] = { &fam_scan_block, &fam_scan_exclusive, NULL };
