// families_select.c - finding and selecting elements of a 1-D array: argmax (value and first
// index), atomic max / min (on ints, and on floats through their bits), stream compaction
// (deterministic, scan based) and count_if with atomics. Included after families_rows.c, whose
// (value, index) reductions (ro_arg_helpers, ro_arg_allreduce) run here on one block or warp
// (ro_as_block), and after families_scan.c (the 1-D pieces sc_input, ..., and the scans).
// Selections and counts are exact: tolerances are zero.

#define SL_SIZES "1000 4096 10000 65536 100000 262144 1000000 1048576"
// The largest and smallest value of a type, as CUDA source.
static const char *sl_lowest(int is_int) { return is_int ? RO_INT_MIN : RO_LOWEST; }
static const char *sl_highest(int is_int) { return is_int ? RO_INT_MAX : RO_HIGHEST; }
// The full mask of warp votes and shuffles, in three spellings (FULL_MASK is #defined).
static const char *sl_mask(int k) { return pick3(k, "0xffffffff", "0xffffffffu", "FULL_MASK"); }
// The #define of FULL_MASK, for kernels that vote and spell the mask so ("" for the others).
static const char *sl_mask_define(int votes, int k) { return votes && k == 2 ? "#define FULL_MASK 0xffffffffu" : ""; }
// One of the numbers of a list ("0 0.5 -0.25"), each as likely.
static double sl_pick_real(Rng *r, const char *list) {
    return atof(word_at(list, rng_int(r, 0, word_count(list) - 1)));
}
// Order-preserving map of a float's (or int's, [is_int]) bits to unsigned int, and back.
static const char *const sl_ordered_tpl[] = { R"(
/// Order-preserving map of float bits to unsigned: flip all bits of negatives, only the sign bit of the rest.
__device__ __forceinline__ unsigned int ordered_bits(float v) {
    const unsigned int u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

)", R"(
/// Order-preserving map of int to unsigned: flip the sign bit.
__device__ __forceinline__ unsigned int ordered_bits(int v) {
    return (unsigned int)v ^ 0x80000000u;
}

)" };
static const char *sl_unordered(int is_int, const char *k) {
    return is_int ? fmt("(int)(%s ^ 0x80000000u)", k)
                  : fmt("__uint_as_float((%s & 0x80000000u) ? (%s & 0x7fffffffu) : ~%s)", k, k, k);
}

// The predicates of stream_compact and count_if on an element v, with the task's numbers
// a = f[0] and b = f[1]: CUDA source and the prompt's wording (templates over $v, $a, $b
// and $abs), and the CPU reference (sl_holds).
enum { SL_GREATER, SL_IN_RANGE, SL_ABS_LESS, SL_EQUAL, SL_MULTIPLE_OF, SL_ABS_GREATER };
static const struct { const char *cuda, *prompt; } sl_preds[] = {
    [SL_GREATER] = { "$v > $a", "$v > $a" },
    [SL_IN_RANGE] = { "$v >= $a && $v < $b", "$a <= $v < $b" },
    [SL_ABS_LESS] = { "$abs($v) < $a", "|$v| < $a" },
    [SL_EQUAL] = { "$v == $a", "$v == $a" },
    [SL_MULTIPLE_OF] = { "$v % $a == 0", "$v is a multiple of $a" },
    [SL_ABS_GREATER] = { "$abs($v) > $a", "|$v| > $a" } };
static int sl_holds(int pred, double v, double a, double b) {
    switch (pred) {
    case SL_GREATER: return v > a;
    case SL_IN_RANGE: return v >= a && v < b;
    case SL_ABS_LESS: return fabs(v) < a;
    case SL_EQUAL: return v == a;
    case SL_MULTIPLE_OF: return (long)v % (long)a == 0;
    default: return fabs(v) > a;
    }
}
// The numbers as CUDA source ("500" for ints, "0.5f" for floats) or for the prompt ("0.5").
static const char *sl_pred(const Task *t, int pred, int is_int, const char *v, int prompt) {
    const char *a = prompt ? fnum(t->f[0]) : is_int ? fmt("%d", (int)t->f[0]) : flit(t->f[0]);
    const char *b = prompt ? fnum(t->f[1]) : is_int ? fmt("%d", (int)t->f[1]) : flit(t->f[1]);
    const char *s = FRAG(prompt ? sl_preds[pred].prompt : sl_preds[pred].cuda, "v", v, "a", a, "b", b,
                         "abs", is_int ? "abs" : "fabsf");
    return fmt("%.*s", (int)strlen(s) - 1, s); // without the fragment's newline
}

// ----------------------------------------------------------------------------
// Argmax of an array: value and index (the lowest index wins ties)

enum { AX_N, AX_BLOCK, AX_ALGO, AX_DTYPE, AX_DATA, AX_CAP, AX_SHFL, AX_MASK, AX_KNAME, AX_NAMES, AX_TNAME, AX_NP };
static const char *const ax_algos[] = { "two_pass_tree", "two_pass_shuffle", "packed_atomic", NULL };
static const char *const ax_shfls[] = { "xor", "down", NULL };
static const ParamDesc ax_params[] = {
    [AX_N] = { "n", NULL, 1, SL_SIZES }, [AX_BLOCK] = { "block", NULL, 1, "128 256 512 1024" },
    [AX_ALGO] = { "algo", ax_algos, 1, "*" }, [AX_DTYPE] = { "dtype", sc_dtypes, 1, "*" },
    [AX_DATA] = { "data", am_data, 1, "*" }, [AX_CAP] = { "cap", NULL, 0, "64 256 1024" },
    [AX_SHFL] = { "shfl", ax_shfls, 0, "*" }, [AX_MASK] = { "mask", NULL, 0, "0..2" },
    [AX_KNAME] = { "kname", NULL, 0, "0..3" }, [AX_NAMES] = { "names", NULL, 0, "0..3" },
    [AX_TNAME] = { "tname", NULL, 0, "0..2" }, [AX_NP] = { NULL } };

static void ax_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const names[] = { "x max_val max_idx", "scores top top_idx", "values peak peak_pos",
                                         "input value index" };
    static const char *const kn[] = {
        "argmax_partial argmax_final argmax_unpack", "argMaxBlocks argMaxFinal unpackArgMax",
        "block_argmax final_argmax decode_argmax", "argmax_pass1 argmax_pass2 argmax_decode" };
    task_names(t, 1, names[t->p[AX_NAMES]], kn[t->p[AX_KNAME]], "argmax");
}
static void ax_layout(Task *t) {
    int is_int = t->p[AX_DTYPE];
    // small_ints: whole numbers up to n / 2, so that the maximum repeats (a tie in most
    // tasks) and its first occurrence lies anywhere (with [0, 100] it was in block 0)
    if (t->p[AX_DATA]) sc_input(t, t->p[AX_N], is_int, 0, t->p[AX_N] / 2, 1);
    else if (is_int) sc_input(t, t->p[AX_N], 1, -1000000000, 1000000000, 1);
    else sc_input(t, t->p[AX_N], 0, -1000, 1000, 0);
    sc_output(t, t->in[0].dt, 0);
    sc_output(t, DT_I32, 0);
}
static void ax_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const how[] = {
        "Reduce (value, index) pairs: a grid-stride loop per thread, a shared-memory tree per block of %d threads "
        "writing one pair per block, and a second single-block kernel over the block results.",
        "Reduce (value, index) pairs with warp shuffles inside blocks of %d threads, one pair per block, then a second "
        "single-block kernel over the block results.",
        "Pack each warp's best pair into a 64-bit key (order-preserving bits of the value in the high word, the "
        "complemented index in the low word), combine the keys with atomicMax on unsigned long long, then decode the "
        "key in a one-thread kernel." };
    const Tensor *x = &t->in[0];
    buf_puts(name, pick3(t->p[AX_TNAME], "Argmax", "Array_Argmax", "Max_With_Index"));
    buf_printf(desc,
               "%s holds %d %s values (%s in %s). Write %s[0] = the largest value and %s[0] = the index of its first "
               "occurrence (the lowest index among equal maxima). ",
               x->name, t->p[AX_N], dt_names[x->dt], x->integer ? "whole numbers" : "reals", sc_range(x),
               t->out[0].name, t->out[1].name);
    buf_printf(desc, how[t->p[AX_ALGO]], t->p[AX_BLOCK]); // the packed atomic's text has no %d
}

// Each thread scans a grid-stride share (ax_scan_tpl, which pass 2 uses again over the
// blocks' pairs); then two passes over (value, index) pairs (a block's pair, then one block
// over the blocks' pairs), or one 64-bit atomicMax per warp on keys that pack the value's
// ordered bits above the complemented index.
static const char ax_scan_tpl[] = R"(
$T best = $id;
int best_i = 2147483647;
for ($loop) {
    const $T v = $value;
    $index
    if ($better) {
        best = v;
        best_i = i;
    }
}
)";
// A pass of the two-pass kernels: each thread's best pair, the block's best, stored by thread 0.
static const char ax_pass_tpl[] = R"(
/// $what
__global__ void $k($params) {
    $shared
    const int tid = threadIdx.x;
    $scan
    $reduce
    if (tid == 0) {
        $val = best;
        $idx = best_i;
    }
}
)";
static const char ax_packed_tpl[] = R"(
$prelude
$helpers
$ordered
/// Each warp finds its best (value, index) with shuffles; lane 0 folds it into key with a 64-bit atomicMax.
__global__ void $k1($xparam, unsigned long long *key, int n) {
    $scan
    $warp(best, best_i);
    if ((threadIdx.x & 31) == 0 && best_i < n) {
        const unsigned long long packed = ((unsigned long long)ordered_bits(best) << 32) | (unsigned int)(~best_i);
        atomicMax(key, packed);
    }
}

/// Decodes the winning key into the value and the index.
__global__ void $k3(const unsigned long long *key, $outs) {
    const unsigned long long k = key[0];
    const unsigned int hi = (unsigned int)(k >> 32);
    $val[0] = $decode;
    $idx[0] = (int)~(unsigned int)(k & 0xffffffffu);
}
)";
static void ax_kernels(const Task *t, Emit *e) {
    int algo = t->p[AX_ALGO], is_int = t->p[AX_DTYPE], red = algo == 0 ? RO_TREE : t->p[AX_SHFL] ? RO_DOWN : RO_XOR;
    const char *T = sc_ct(is_int), *x = t->in[0].name, *val = t->out[0].name, *idx = t->out[1].name;
    Task tt = ro_as_block(t, algo == 2 ? RO_WARP : RO_BLOCK, t->p[AX_BLOCK], red, t->p[AX_MASK], t->p[AX_KNAME] % 3);
    // each thread's best pair: of its grid-stride share of x, or (pass 2) of the blocks' pairs
    const char *scan = FRAG(ax_scan_tpl, "T", T, "id", sl_lowest(is_int), "value", fmt("%s[i]", x),
                            "loop", "int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x",
                            "index", "//? indices grow along the loop, so > keeps the first occurrence",
                            "better", "v > best");
    const char *scan2 = FRAG(ax_scan_tpl, "T", T, "id", sl_lowest(is_int), "value", "part_val[j]",
                             "loop", "int j = tid; j < count; j += blockDim.x", "index", "const int i = part_idx[j];",
                             "better", ro_better(RO_MAX, "v", "i", "best", "best_i"));
    const char *outs = fmt("%s, %s", ptr_param(t, T, val, 0), ptr_param(t, "int", idx, 0));
    if (algo == 2) {
        TPL(e, t, ax_packed_tpl, "prelude", ro_prelude(&tt), "helpers", ro_arg_helpers(&tt, T, RO_MAX),
            "ordered", sl_ordered_tpl[is_int], "k1", t->kname[0], "xparam", ptr_param(t, T, x, 1), "scan", scan,
            "warp", ro_fn(&tt, "warp", "argmax"), "k3", t->kname[2], "outs", outs, "val", val, "idx", idx,
            "decode", sl_unordered(is_int, "hi"));
        return;
    }
    const char *parts[2]; // the per-block pairs: written by pass 1, read by pass 2
    for (int c = 0; c < 2; c++)
        parts[c] = fmt("%s, %s", ptr_param(t, T, "part_val", c), ptr_param(t, "int", "part_idx", c));
    const char *shared = ro_shared(&tt, fmt("arg:%s", T));
    const char *reduce = ro_arg_allreduce(&tt, T, "best", "best_i", RO_MAX);
    const char *pass1 = FRAG(ax_pass_tpl, "k", t->kname[0], "shared", shared, "scan", scan, "reduce", reduce,
                             "what", "Pass 1: every block reduces its grid-stride share to one (value, index) pair.",
                             "params", fmt("%s, %s, int n", ptr_param(t, T, x, 1), parts[0]),
                             "val", "part_val[blockIdx.x]", "idx", "part_idx[blockIdx.x]");
    const char *pass2 = FRAG(ax_pass_tpl, "k", t->kname[1], "shared", shared, "scan", scan2, "reduce", reduce,
                             "what", "Pass 2: one block reduces the per-block pairs; on equal values the lower index "
                                     "wins.",
                             "params", fmt("%s, %s, int count", parts[1], outs),
                             "val", fmt("%s[0]", val), "idx", fmt("%s[0]", idx));
    TPL(e, t, "$prelude\n$helpers\n$pass1\n\n$pass2", "prelude", ro_prelude(&tt),
        "helpers", ro_arg_helpers(&tt, T, RO_MAX), "pass1", pass1, "pass2", pass2);
}
static const char ax_launch_tpl[] = R"(
$grid
$alloc
$alloc2
$k1<<<blocks, threads>>>($in, $bufs, $n);
$k2<<<$cfg2>>>($bufs, $outs$count);
$free
)";
static void ax_launch(const Task *t, Emit *e, const Host *h) {
    int packed = t->p[AX_ALGO] == 2;
    // the 64-bit key (zeroed), or the blocks' values and indices
    const char *buf = dname(t, packed ? "key" : "part_val"), *pi = dname(t, "part_idx");
    const char *alloc2 = packed ? checked(t, fmt("cudaMemset(%s, 0, sizeof(unsigned long long))", buf))
                                : dev_alloc(t, "int", pi, "blocks");
    TPL(e, t, ax_launch_tpl,
        "grid", grid_1d(t->p[AX_ALGO] == 0 ? "BLOCK_SIZE" : fmt("%d", t->p[AX_BLOCK]), h->size[0], t->p[AX_CAP]),
        "alloc", dev_alloc(t, packed ? "unsigned long long" : sc_ct(t->p[AX_DTYPE]), buf, packed ? "1" : "blocks"),
        "alloc2", alloc2, "k1", t->kname[0], "in", h->in[0], "bufs", packed ? buf : fmt("%s, %s", buf, pi),
        "n", h->size[0], "k2", t->kname[packed ? 2 : 1], "cfg2", packed ? "1, 1" : "1, threads",
        "outs", fmt("%s, %s", h->out[0], h->out[1]), "count", packed ? "" : ", blocks",
        "free", sync_free(t, buf, packed ? NULL : pi));
}
static void ax_ref(const Task *t, const void *const *in, void *const *out) {
    int is_int = t->p[AX_DTYPE];
    long best = 0;
    for (long i = 1; i < t->p[AX_N]; i++)
        if (ro_get(in[0], is_int, i) > ro_get(in[0], is_int, best)) best = i;
    ro_put(out[0], is_int, 0, ro_get(in[0], is_int, best));
    ((int *)out[1])[0] = (int)best;
}
static const Family fam_argmax = {
    "argmax_array",
    "argmax of an array with its value, first index on ties: two passes over (value, index) pairs (shared tree or "
    "shuffles) or 64-bit packed atomicMax",
    ax_params, NULL, ax_draw, ax_layout, ax_describe, ax_kernels, ax_launch, ax_ref };

// ----------------------------------------------------------------------------
// Atomic max / min of an array (ints directly; floats through their bits)

enum { MM_N, MM_BLOCK, MM_OP, MM_DTYPE, MM_METHOD, MM_AGG, MM_INIT, MM_DATA, MM_CAP, MM_MASK, MM_KNAME, MM_NAMES,
       MM_TNAME, MM_NP };
static const char *const mm_ops[] = { "max", "min", "both", NULL };
static const char *const mm_methods[] = { "native_int", "sign_split", "ordered_uint", "cas_loop", NULL };
static const char *const mm_aggs[] = { "per_element", "warp_first", "block_first", NULL };
static const char *const mm_inits[] = { "init_kernel", "host_copy", NULL };
static const ParamDesc mm_params[] = {
    [MM_N] = { "n", NULL, 1, SL_SIZES }, [MM_BLOCK] = { "block", NULL, 1, "128 256 512" },
    [MM_OP] = { "op", mm_ops, 1, "*" }, [MM_DTYPE] = { "dtype", sc_dtypes, 1, "*" },
    [MM_METHOD] = { "method", mm_methods, 1, "1..3" }, [MM_AGG] = { "agg", mm_aggs, 1, "*" },
    [MM_INIT] = { "init", mm_inits, 0, "*" }, [MM_DATA] = { "data", NULL, 1, "0..2" },
    [MM_CAP] = { "cap", NULL, 0, "256 1024 4096" }, [MM_MASK] = { "mask", NULL, 0, "0..2" },
    [MM_KNAME] = { "kname", NULL, 0, "0..3" }, [MM_NAMES] = { "names", NULL, 0, "0..3" },
    [MM_TNAME] = { "tname", NULL, 0, "0..2" }, [MM_NP] = { NULL } };

static void mm_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const names[] = { "x max_val min_val", "data max_out min_out", "values vmax vmin",
                                         "input result_max result_min" };
    // the kernels for max, min and both, the one that sets the identities, the one that decodes ordered bits
    static const char *const kn[] = {
        "atomic_max_kernel atomic_min_kernel atomic_minmax_kernel init_result decode_result",
        "atomicMaxReduce atomicMinReduce atomicMinMaxReduce initExtrema decodeOrdered",
        "global_max global_min global_minmax set_identity from_ordered_bits",
        "max_atomic min_atomic minmax_atomic reset_output unmap_output" };
    if (t->p[MM_DTYPE]) t->p[MM_METHOD] = 0; // ints have atomicMax/atomicMin
    int op = t->p[MM_OP];
    const char *nm = names[t->p[MM_NAMES]], *k = kn[t->p[MM_KNAME]];
    task_names(t, 1, op == 1 ? fmt("%s %s", word(nm, 0), word(nm, 2)) : nm,
               fmt("%s %s %s", word(k, op), word(k, 3), word(k, 4)), op == 2 ? "minmax" : mm_ops[op]);
}
static void mm_layout(Task *t) {
    // the value ranges of the data kinds (both signs, negative only, positive only): floats, ints
    static const double lo[2][3] = { { -1000, -50, 0.5 }, { -1000000, -1000, 0 } };
    static const double hi[2][3] = { { 1000, -1, 100 }, { 1000000, -1, 1000000000 } };
    int is_int = t->p[MM_DTYPE], d = t->p[MM_DATA];
    sc_input(t, t->p[MM_N], is_int, lo[is_int][d], hi[is_int][d], is_int);
    for (int k = 0; k < (t->p[MM_OP] == 2 ? 2 : 1); k++) sc_output(t, t->in[0].dt, 0);
}
static void mm_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[3][3] = { { "Atomic_Max", "Global_Max_Atomic", "Array_Maximum" },
                                          { "Atomic_Min", "Global_Min_Atomic", "Array_Minimum" },
                                          { "Atomic_Min_Max", "Global_Extrema_Atomic", "Array_Min_And_Max" } };
    // $atomic: atomicMax, atomicMin or both, as the operation needs
    static const char *const how[] = {
        " Use $atomic on int.",
        " Floats have no atomicMax, so use their bits: non-negative floats order like their int bits (atomicMax/"
        "atomicMin on int), negative ones in reverse like their unsigned bits (atomicMin/atomicMax on unsigned int).",
        " Map each float to order-preserving unsigned bits (flip all bits of negatives, only the sign bit otherwise), "
        "use $atomic on unsigned int, and decode the result in a one-thread kernel.",
        " Use an atomicCAS loop on the float's bits that retries while the stored value is still worse." };
    static const char *const agg[] = { ", one atomic per element (grid-stride loop).",
                                       ", one atomic per warp after a shuffle reduction.",
                                       ", one atomic per block after a shared-memory reduction." };
    int op = t->p[MM_OP];
    buf_puts(name, nm[op][t->p[MM_TNAME]]);
    sc_holds(desc, t);
    if (op == 2)
        buf_printf(desc, "Compute %s[0] = the largest and %s[0] = the smallest value ", t->out[0].name, t->out[1].name);
    else buf_printf(desc, "Compute %s[0] = the %s value ", t->out[0].name, op ? "smallest" : "largest");
    buf_printf(desc, "with atomic operations on the output%s", agg[t->p[MM_AGG]]);
    const char *atomic = pick3(op, "atomicMax", "atomicMin", "atomicMax and atomicMin");
    buf_put_line(desc, FRAG(how[t->p[MM_METHOD]], "atomic", atomic));
    buf_puts(desc, t->p[MM_INIT] ? " Initialise the output from the host before the launch."
                                 : " Initialise the output with a one-thread kernel.");
}

// The float atomics (sign split or CAS loop, one per wanted extreme), the one-thread
// kernels that set the identities and decode ordered bits, and the kernel: an atomic per
// element, or per warp / block after a shuffle / shared-memory reduction. Pieces written
// once per wanted extreme (m = 0 max, 1 min) are templates over $o (the output), $v (the
// thread's value), $s (its shared array), $f (fmaxf / max / ...), $update (its atomic).
static const char *const mm_float_atomic_tpl[] = { NULL, R"(
/// Float atomic$M through the bits: ints order non-negative floats, unsigned ints order negative floats backwards.
__device__ void $fn(float *addr, float v) {
    if (v >= 0.0f) $A((int *)addr, __float_as_int(v));
    else $B((unsigned int *)addr, __float_as_uint(v));
}

)", NULL, R"(
/// Float atomic $m with compare-and-swap: retry until the stored value is $bound v or our value is in.
__device__ void $fn(float *addr, float v) {
    int *p = (int *)addr;
    int old = *p;
    while (__int_as_float(old) $worse v) {
        const int assumed = old;
        old = atomicCAS(p, assumed, __float_as_int(v));
        if (old == assumed) break;
    }
}

)" };
// The kernel's body: each thread's grid-stride share, then its combine.
static const char mm_body_tpl[] = R"(
$shared
$locals
for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    $step
}
$combine
)";
static const char *const mm_combine_tpl[] = { "", R"(
for (int offset = 16; offset > 0; offset >>= 1) {
    $shfl
}
if ((threadIdx.x & 31) == 0) {
    $update
}
)", R"(
const int tid = threadIdx.x;
$store
__syncthreads();
for (int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
    if (tid < s) {
        $tree
    }
    __syncthreads();
}
if (tid == 0) {
    $update
}
)" };
// The name of the float atomic helper of extreme m (0 the maximum, 1 the minimum).
static const char *mm_fn(const Task *t, int m) {
    static const char *const f[4][2] = { { "atomic_max_float", "atomic_min_float" },
                                         { "atomicMaxFloat", "atomicMinFloat" },
                                         { "atomic_fmax", "atomic_fmin" }, { "float_atomic_max", "float_atomic_min" } };
    return f[t->p[MM_KNAME]][m];
}
// text once per wanted output (m = 0 the maximum, 1 the minimum), joined by sep: a template
// over the output's name $o (in the kernels, or the host's h), its pieces (above), the
// thread's $update, the extreme's identity as a value of the element type ($identity: what
// a thread's running extreme starts from) and as the output holds it ($out_identity:
// ordered bits in ordered_uint programs), and the host's initial value $var, $byte.
static const char *mm_each(const Task *t, const Host *h, const char *text, const char *sep) {
    int op = t->p[MM_OP], is_int = t->p[MM_DTYPE], meth = t->p[MM_METHOD], agg = t->p[MM_AGG];
    const char *s = "";
    for (int m = 0; m < 2; m++) {
        if (op != 2 && op != m) continue;
        const char *o = h ? h->out[op == 2 ? m : 0] : t->out[op == 2 ? m : 0].name;
        const char *A = m ? "atomicMin" : "atomicMax", *v = m ? "lo" : "hi", *sh = m ? "slo" : "shi";
        const char *val = agg == 0 ? "v" : agg == 1 ? v : fmt("%s[0]", sh);
        const char *update = meth == 2 ? fmt("%s((unsigned int *)%s, ordered_bits(%s));", A, o, val)
                                       : fmt("%s(%s, %s);", meth ? mm_fn(t, m) : A, o, val);
        const char *identity = m ? sl_highest(is_int) : sl_lowest(is_int);
        const char *out_identity = meth == 2 ? (m ? "0xffffffffu" : "0u") : identity;
        const char *one = FRAG(text, "o", o, "v", v, "s", sh, "update", update, "identity", identity,
                               "out_identity", out_identity, "k", fmt("k%d", m),
                               "f", is_int ? (m ? "min" : "max") : (m ? "fminf" : "fmaxf"),
                               "mask", sl_mask(t->p[MM_MASK]), "var", m ? "init_min" : "init_max",
                               "byte", m ? "0xff" : "0");
        s = fmt("%s%s%.*s", s, *s ? sep : "", (int)strlen(one) - 1, one); // without the fragment's last newline
    }
    return s;
}
static void mm_kernels(const Task *t, Emit *e) {
    static const char *const comment[] = {
        "Every element goes straight to the output with an atomic update.",
        "Each thread keeps its own extreme, a warp combines them with shuffles, lane 0 updates the output.",
        "Each thread keeps its own extreme, the block combines them in shared memory, thread 0 updates the output." };
    int is_int = t->p[MM_DTYPE], meth = t->p[MM_METHOD], agg = t->p[MM_AGG];
    const char *T = sc_ct(is_int), *x = t->in[0].name, *ptrs = mm_each(t, NULL, ptr_param(t, T, "$o", 0), ", ");
    Task tt = ro_as_block(t, agg == 1 ? RO_WARP : RO_BLOCK, t->p[MM_BLOCK], agg == 1 ? RO_XOR : RO_TREE,
                          t->p[MM_MASK], 0);
    Buf helpers = { 0 }; // sign_split's and cas_loop's float atomics (ordered_uint has sl_ordered_tpl)
    for (int m = 0; m < 2 && (meth == 1 || meth == 3); m++)
        if (t->p[MM_OP] == 2 || t->p[MM_OP] == m)
            buf_puts(&helpers, FRAG(mm_float_atomic_tpl[meth], "M", m ? "Min" : "Max", "m", m ? "min" : "max",
                                    "fn", mm_fn(t, m), "A", m ? "atomicMin" : "atomicMax",
                                    "B", m ? "atomicMax" : "atomicMin", "bound", m ? "at most" : "at least",
                                    "worse", m ? ">" : "<"));
    // before the kernel: the prelude, helpers, then the one-thread kernels (each then a blank line): the
    // identities into the outputs, the ordered bits back to floats
    const char *init_comment = meth == 2 ? "Puts the identities (as ordered bits) into the outputs."
                                         : "Puts the identities into the outputs.";
    const char *set = meth == 2 ? "*(unsigned int *)$o = $out_identity;" : "$o[0] = $out_identity;";
    const char *init = kernel_frag(t->kname[1], init_comment, ptrs, mm_each(t, NULL, set, "\n"));
    const char *unmap = fmt("const unsigned int $k = *(const unsigned int *)$o;\n$o[0] = %s;", sl_unordered(0, "$k"));
    const char *decode = kernel_frag(t->kname[2], "Turns the ordered bits back into floats, in place.",
                                     mm_each(t, NULL, ptr_param(t, "float", "$o", 0), ", "),
                                     mm_each(t, NULL, unmap, "\n"));
    const char *pre = FRAG("$prelude\n$helpers\n$init\n$decode", "prelude", agg ? ro_prelude(&tt) : "",
                           "helpers", meth == 2 ? sl_ordered_tpl[0] : buf_str(&helpers),
                           "init", t->p[MM_INIT] ? "" : FRAG("$k\n\n", "k", init),
                           "decode", meth == 2 ? FRAG("$k\n\n", "k", decode) : "");
    // the kernel: each thread's elements (straight to the atomics, or into its own extremes), then its combine
    const char *load = fmt("const %s v = %s[i];", T, x);
    const char *step = agg == 0 ? fmt("%s\n%s", load, mm_each(t, NULL, "$update", "\n"))
                       : t->p[MM_OP] == 2 ? fmt("%s\n%s", load, mm_each(t, NULL, "$v = $f($v, v);", "\n"))
                                          : mm_each(t, NULL, fmt("$v = $f($v, %s[i]);", x), "");
    const char *combine =
        FRAG(mm_combine_tpl[agg], "shfl", mm_each(t, NULL, "$v = $f($v, __shfl_xor_sync($mask, $v, offset));", "\n"),
             "update", mm_each(t, NULL, "$update", "\n"), "store", mm_each(t, NULL, "$s[tid] = $v;", "\n"),
             "tree", mm_each(t, NULL, "$s[tid] = $f($s[tid], $s[tid + s]);", "\n"));
    const char *shared = agg == 2 ? mm_each(t, NULL, fmt("__shared__ %s $s[BLOCK_SIZE];", T), "\n") : "";
    const char *locals = agg ? mm_each(t, NULL, fmt("%s $v = $identity;", T), "\n") : "";
    emit_kernel(e, t, pre, "", comment[agg], "int n",
                FRAG(mm_body_tpl, "shared", shared, "locals", locals, "step", step, "combine", combine));
    buf_free(&helpers);
}
static void mm_launch(const Task *t, Emit *e, const Host *h) {
    const char *T = sc_ct(t->p[MM_DTYPE]), *outs = mm_each(t, h, "$o", ", ");
    const char *set = t->p[MM_METHOD] == 2 ? checked(t, "cudaMemset($o, $byte, sizeof(unsigned int))")
                      : fmt("const %s $var = $out_identity;\n%s", T,
                            checked(t, fmt("cudaMemcpy($o, &$var, sizeof(%s), cudaMemcpyHostToDevice)", T)));
    TPL(e, t, "$init\n$grid\n$k<<<blocks, threads>>>($x, $outs, $n);\n$decode",
        "init", t->p[MM_INIT] ? mm_each(t, h, set, "\n") : fmt("%s<<<1, 1>>>(%s);", t->kname[1], outs),
        "grid", grid_1d(t->p[MM_AGG] == 2 ? "BLOCK_SIZE" : fmt("%d", t->p[MM_BLOCK]), h->size[0], t->p[MM_CAP]),
        "n", h->size[0], "k", t->kname[0], "x", h->in[0], "outs", outs,
        "decode", t->p[MM_METHOD] == 2 ? fmt("%s<<<1, 1>>>(%s);", t->kname[2], outs) : "");
}
static void mm_ref(const Task *t, const void *const *in, void *const *out) {
    double hi = -INFINITY, lo = INFINITY;
    for (long i = 0; i < t->p[MM_N]; i++) {
        double v = ro_get(in[0], t->p[MM_DTYPE], i);
        hi = v > hi ? v : hi;
        lo = v < lo ? v : lo;
    }
    ro_put(out[0], t->p[MM_DTYPE], 0, t->p[MM_OP] == 1 ? lo : hi);
    if (t->nout == 2) ro_put(out[1], t->p[MM_DTYPE], 0, lo);
}
static const Family fam_atomic_minmax = {
    "atomic_minmax",
    "max / min / both of an array with atomics: atomicMax/Min on int, float via sign-split int/uint bits, ordered uint "
    "bits or an atomicCAS loop",
    mm_params, NULL, mm_draw, mm_layout, mm_describe, mm_kernels, mm_launch, mm_ref };

// ----------------------------------------------------------------------------
// Stream compaction. An atomic counter handing out output slots would make the order of
// the kept values depend on scheduling, so the output is made deterministic with a scan:
// count per block, exclusive scan of the counts, then each block writes its kept values at
// its offset in their original order. out[0..count) holds the kept values, the rest zeros.

enum { CP_N, CP_BLOCK, CP_LOCAL, CP_SUMS, CP_DTYPE, CP_PRED, CP_MASK, CP_KNAME, CP_NAMES, CP_TNAME, CP_NP };
static const char *const cp_locals[] = { "shared_scan", "warp_ballot", NULL };
static const char *const cp_preds[] = { "greater", "abs_greater", NULL };
static const char *const cp_fp[] = { "threshold", NULL };
static const ParamDesc cp_params[] = {
    [CP_N] = { "n", NULL, 1, "1000 4096 10000 65536 100000 262144 1000000" },
    [CP_BLOCK] = { "block", NULL, 1, "128 256 512 1024" }, [CP_LOCAL] = { "local", cp_locals, 1, "*" },
    [CP_SUMS] = { "sums", sc_sums, 1, "*" }, [CP_DTYPE] = { "dtype", sc_dtypes, 1, "*" },
    [CP_PRED] = { "pred", cp_preds, 1, "*" }, [CP_MASK] = { "mask", NULL, 0, "0..2" },
    [CP_KNAME] = { "kname", NULL, 0, "0..3" }, [CP_NAMES] = { "names", NULL, 0, "0..3" },
    [CP_TNAME] = { "tname", NULL, 0, "0..2" }, [CP_NP] = { NULL } };

static void cp_draw(Task *t, Rng *r) {
    static const char *const names[] = { "x out count", "input kept num_kept", "values selected n_selected",
                                         "data compacted length" };
    static const char *const kn[] = {
        "count_kept scan_counts scatter_kept", "countPerBlock scanBlockCounts scatterKept",
        "block_counts_kernel offsets_from_counts compact_write", "flag_count exclusive_scan_counts write_selected" };
    static const char *const thr[2][2] = { { "0 0.5 -0.25 0.75 0.875", "0.5 0.25 0.875" },
                                           { "0 500 -200 900", "500 100 900" } };
    t->f[0] = sl_pick_real(r, thr[t->p[CP_DTYPE]][t->p[CP_PRED]]);
    task_names(t, 1, names[t->p[CP_NAMES]], kn[t->p[CP_KNAME]], "compact");
}
static void cp_layout(Task *t) {
    if (t->p[CP_DTYPE]) sc_input(t, t->p[CP_N], 1, -1000, 1000, 1);
    else sc_input(t, t->p[CP_N], 0, -1, 1, 0);
    sc_output(t, t->in[0].dt, 1)->zero_init = 1;
    sc_output(t, DT_I32, 0);
}
// The predicate on v: x > t or |x| > t.
static const char *cp_pred(const Task *t, const char *v, int prompt) {
    return sl_pred(t, t->p[CP_PRED] ? SL_ABS_GREATER : SL_GREATER, t->p[CP_DTYPE], v, prompt);
}
static void cp_describe(const Task *t, Buf *name, Buf *desc) {
    const char *o = t->out[0].name, *c = t->out[1].name;
    buf_puts(name, pick3(t->p[CP_TNAME], "Stream_Compaction", "Filter_By_Threshold", "Select_If"));
    sc_holds(desc, t);
    buf_printf(desc,
               "Keep the elements with %s, in their original order: %s[0..k) = the kept values, %s[k..%d) = 0, and "
               "%s[0] = k. The result must not depend on thread scheduling, so do not hand out slots with an atomic "
               "counter: count the kept elements per block of %d, exclusive-scan the block counts (%s), then let each "
               "block write its kept elements at its offset, ranked within the block %s.",
               cp_pred(t, fmt("%s[i]", t->in[0].name), 1), o, o, t->p[CP_N], c, t->p[CP_BLOCK],
               t->p[CP_SUMS] ? "one thread" : "one block, chunk by chunk",
               t->p[CP_LOCAL] ? "with __ballot_sync and __popc" : "by a shared-memory scan of the keep flags");
}

// Pass 1 counts (a shared tree of the flags, or __syncthreads_count), pass 2 scans the
// counts (one thread, or one block chunk by chunk), pass 3 ranks the kept elements within
// the block (a shared scan of the flags, or ballot + popc per warp) and scatters them.
static const char cp_kernels_tpl[] = R"(
#define BLOCK_SIZE $B
$full_mask

/// Pass 1: how many elements of each block are kept.
__global__ void $k1($xparam, int *block_counts, int n) {
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    const int keep = i < n && $pred;
    $count
}

/// Pass 2: exclusive scan of the block counts (each block's first output slot) and the total.
__global__ void $k2(int *block_counts, $cparam, int nblocks) {
    $scan
}

/// Pass 3: each kept element goes to its block's offset plus its rank among the kept elements
/// before it in the block ($how).
__global__ void $k3($xparam, const int *block_offsets, $oparam, int n) {
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    const int keep = i < n && $pred;
    $scatter
}
)";
static const char *const cp_count_tpl[] = { R"(
__shared__ int s[BLOCK_SIZE];
s[tid] = keep;
__syncthreads();
for (int stride = BLOCK_SIZE / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
}
if (tid == 0) block_counts[blockIdx.x] = s[0];
)", R"(
//? __syncthreads_count: a barrier that also counts the non-zero arguments
const int total = __syncthreads_count(keep);
if (tid == 0) block_counts[blockIdx.x] = total;
)" };
static const char *const cp_scatter_tpl[] = { R"(
__shared__ int s[BLOCK_SIZE];
s[tid] = keep;
__syncthreads();
$hs
//? inclusive scan minus the own flag: the number of kept elements before this one
if (keep) $o[block_offsets[blockIdx.x] + s[tid] - 1] = $x[i];
)", R"(
__shared__ int warp_base[BLOCK_SIZE / 32];
const int lane = tid & 31, wid = tid >> 5;
//? every lane takes part in the ballot, also those past the end of the array
const unsigned int bits = __ballot_sync($mask, keep);
const int rank_in_warp = __popc(bits & ((1u << lane) - 1u));
if (lane == 0) warp_base[wid] = __popc(bits);
__syncthreads();
if (tid == 0) {
    int run = 0;
    for (int w = 0; w < BLOCK_SIZE / 32; w++) {
        const int c = warp_base[w];
        warp_base[w] = run;
        run += c;
    }
}
__syncthreads();
if (keep) $o[block_offsets[blockIdx.x] + warp_base[wid] + rank_in_warp] = $x[i];
)" };
static void cp_kernels(const Task *t, Emit *e) {
    const char *T = sc_ct(t->p[CP_DTYPE]), *x = t->in[0].name, *o = t->out[0].name, *c = t->out[1].name;
    const char *hs = sc_hs_sum("BLOCK_SIZE", "int");
    int ballot = t->p[CP_LOCAL], serial = t->p[CP_SUMS];
    const char *scan = FRAG(sc_offsets_tpl[serial], "shared", "__shared__ int s[BLOCK_SIZE];", "T", "int", "Z", "0",
                            "hs", hs, "n", "nblocks", "a", "block_counts", "B", "BLOCK_SIZE",
                            "guard", "threadIdx.x != 0", "v", "c",
                            "total", serial ? fmt("%s[0] = run;", c) : fmt("if (tid == 0) %s[0] = carry;", c));
    TPL(e, t, cp_kernels_tpl, "B", fmt("%d", t->p[CP_BLOCK]), "full_mask", sl_mask_define(ballot, t->p[CP_MASK]),
        "k1", t->kname[0], "k2", t->kname[1], "k3", t->kname[2], "xparam", ptr_param(t, T, x, 1),
        "pred", cp_pred(t, fmt("%s[i]", x), 0), "cparam", ptr_param(t, "int", c, 0), "oparam", ptr_param(t, T, o, 0),
        "count", cp_count_tpl[ballot], "scan", scan,
        "how", ballot ? "ballot + popc per warp, then the warp counts" : "a shared-memory scan of the flags",
        "scatter", FRAG(cp_scatter_tpl[ballot], "hs", hs, "o", o, "x", x, "mask", sl_mask(t->p[CP_MASK])));
}
static const char cp_launch_tpl[] = R"(
$grid
$alloc
$k1<<<blocks, threads>>>($x, $bc, $n);
$k2<<<1, $t2>>>($bc, $count, blocks);
$k3<<<blocks, threads>>>($x, $bc, $out, $n);
$free
)";
static void cp_launch(const Task *t, Emit *e, const Host *h) {
    const char *bc = dname(t, "block_counts");
    TPL(e, t, cp_launch_tpl, "grid", grid_1d("BLOCK_SIZE", h->size[0], 0), "n", h->size[0],
        "alloc", dev_alloc(t, "int", bc, "blocks"), "bc", bc, "x", h->in[0], "out", h->out[0], "count", h->out[1],
        "k1", t->kname[0], "k2", t->kname[1], "k3", t->kname[2], "t2", t->p[CP_SUMS] ? "1" : "threads",
        "free", sync_free(t, bc, NULL));
}
static void cp_ref(const Task *t, const void *const *in, void *const *out) {
    int is_int = t->p[CP_DTYPE], pred = t->p[CP_PRED] ? SL_ABS_GREATER : SL_GREATER;
    double thr = is_int ? t->f[0] : fpar(t, 0);
    long k = 0;
    for (long i = 0; i < t->p[CP_N]; i++) {
        double v = ro_get(in[0], is_int, i);
        if (sl_holds(pred, v, thr, 0)) ro_put(out[0], is_int, k++, v);
    }
    // the rest stays zero (outputs start zeroed)
    ((int *)out[1])[0] = (int)k;
}
static const Family fam_compact = {
    "stream_compact",
    "deterministic stream compaction (keep x > t or |x| > t in order): block counts, exclusive scan, ranked scatter "
    "(shared scan or ballot/popc)",
    cp_params, cp_fp, cp_draw, cp_layout, cp_describe, cp_kernels, cp_launch, cp_ref };

// ----------------------------------------------------------------------------
// count_if with atomics

enum { CI_N, CI_BLOCK, CI_AGG, CI_PRED, CI_DTYPE, CI_OUT, CI_LOOP, CI_CAP, CI_MASK, CI_KNAME, CI_NAMES, CI_TNAME, CI_NP
       };
static const char *const ci_aggs[] = { "per_element", "warp_ballot", "block_shared", "syncthreads_count", NULL };
static const char *const ci_preds[] = { "greater", "in_range", "abs_less", "equal", "multiple_of", NULL };
static const char *const ci_loops[] = { "one_per_thread", "grid_stride", NULL };
static const char *const ci_outs[] = { "int32", "uint32", NULL };
static const char *const ci_fp[] = { "a", "b", NULL };
static const ParamDesc ci_params[] = {
    [CI_N] = { "n", NULL, 1, SL_SIZES }, [CI_BLOCK] = { "block", NULL, 1, "128 256 512 1024" },
    [CI_AGG] = { "agg", ci_aggs, 1, "*" }, [CI_PRED] = { "pred", ci_preds, 1, NULL },
    [CI_DTYPE] = { "dtype", sc_dtypes, 1, "*" }, [CI_OUT] = { "out", ci_outs, 0, "*" },
    [CI_LOOP] = { "loop", ci_loops, 1, "*" }, [CI_CAP] = { "cap", NULL, 0, "256 1024 4096" },
    [CI_MASK] = { "mask", NULL, 0, "0..2" }, [CI_KNAME] = { "kname", NULL, 0, "0..3" },
    [CI_NAMES] = { "names", NULL, 0, "0..3" }, [CI_TNAME] = { "tname", NULL, 0, "0..2" }, [CI_NP] = { NULL } };

static void ci_draw(Task *t, Rng *r) {
    static const char *const names[] = { "x count", "data matches", "values num_hits", "input total" };
    static const char *const kn[] = { "count_if_kernel", "countIf", "count_matches", "predicate_count" };
    // a: the threshold, lower bound, bound of |x|, value or divisor; b: in_range's upper bound (a + width)
    static const char *const a[2][5] = { { "0 0.5 -0.75 0.25", "0 0.5 -0.75 0.25", "0.25 0.5 0.125" },
                                         { "0 10 -100 500", "0 10 -100 500", "10 100 250", "0 3 7 15", "2 3 7 16" } };
    int is_int = t->p[CI_DTYPE];
    t->p[CI_PRED] = rng_int(r, 0, is_int ? 4 : 2); // equal and multiple_of only for ints
    t->f[0] = sl_pick_real(r, a[is_int][t->p[CI_PRED]]);
    t->f[1] = t->p[CI_PRED] == 1 ? t->f[0] + sl_pick_real(r, is_int ? "10 100 250" : "0.25 0.5 0.125") : 0;
    task_names(t, 1, names[t->p[CI_NAMES]], kn[t->p[CI_KNAME]], "count_if");
}
static void ci_layout(Task *t) {
    int eq = t->p[CI_PRED] == SL_EQUAL; // small ints, so that values repeat
    if (t->p[CI_DTYPE]) sc_input(t, t->p[CI_N], 1, eq ? 0 : -1000, eq ? 20 : 1000, 1);
    else sc_input(t, t->p[CI_N], 0, -1, 1, 0);
    sc_output(t, t->p[CI_OUT] ? DT_U32 : DT_I32, 0)->zero_init = 1;
    if (t->p[CI_PRED] == SL_MULTIPLE_OF && !(t->f[0] >= 1 && t->f[0] == floor(t->f[0])))
        t->problem = "params.a: multiple_of needs a whole number >= 1";
}
static void ci_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const how[] = {
        "one atomicAdd per matching element.", "warp-aggregated, one atomicAdd of __popc(__ballot_sync(...)) per warp.",
        "each thread counts its elements, the block adds them into a __shared__ counter with shared-memory atomics, "
        "and one thread adds the block's count to the output.",
        "__syncthreads_count gives each block's count, which thread 0 adds to the output." };
    buf_puts(name, pick3(t->p[CI_TNAME], "Count_If", "Predicate_Count", "Count_Matching_Elements"));
    sc_holds(desc, t);
    buf_printf(desc,
               "Count the elements with %s and write the count to %s[0] (%s, zeroed before the launch), accumulating "
               "with atomicAdd: %s", sl_pred(t, t->p[CI_PRED], t->p[CI_DTYPE], fmt("%s[i]", t->in[0].name), 1),
               t->out[0].name, dt_names[t->out[0].dt], how[t->p[CI_AGG]]);
    if (t->p[CI_LOOP])
        buf_printf(desc, " Launch at most %d blocks of %d threads and loop over the array.", t->p[CI_CAP],
                   t->p[CI_BLOCK]);
    else buf_printf(desc, " One thread per element, blocks of %d threads.", t->p[CI_BLOCK]);
}

// Per element or a per-thread count into a __shared__ counter: a loop over the thread's
// elements. Ballots and __syncthreads_count need every thread of the warp (block) at the
// vote, so their grid-stride loop strides by whole blocks and guards the element instead.
static const char *const ci_loop_tpl[2][2] = { // [vote][grid-stride]: the loop around $body
    { "const int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i < n) {\n    $body\n}",
      "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {\n    $body\n}" },
    { "const int i = blockIdx.x * blockDim.x + threadIdx.x;\n$body",
      "for (int base = blockIdx.x * blockDim.x; base < n; base += blockDim.x * gridDim.x) {\n"
      "    const int i = base + threadIdx.x;\n    $body\n}" } };
// A thread's vote (ballots, __syncthreads_count): whether its element, if it has one, matches.
static const char ci_hit_tpl[] = "int hit = 0;\nif (i < n) {\n    const $T v = $x[i];\n    hit = $pred;\n}";
static const char *const ci_parts[][3] = { // before the loop, its body, after it
    { "", "const $T v = $x[i];\nif ($pred) atomicAdd($c, $one);", "" },
    { "", "$hit\nconst unsigned int votes = __ballot_sync($mask, hit);\n"
          "if ((threadIdx.x & 31) == 0 && votes) atomicAdd($c, ($U)__popc(votes));", "" },
    { "__shared__ $U block_count;\nif (threadIdx.x == 0) block_count = 0;\n__syncthreads();\n$U mine = 0;",
      "const $T v = $x[i];\nif ($pred) mine++;",
      "if (mine) atomicAdd(&block_count, mine);\n__syncthreads();\nif (threadIdx.x == 0 && block_count) atomicAdd($c, "
      "block_count);" },
    { "$U block_total = 0;", "$hit\nblock_total += __syncthreads_count(hit);",
      "if (threadIdx.x == 0 && block_total) atomicAdd($c, block_total);" } };
static void ci_kernels(const Task *t, Emit *e) {
    static const char *const how[] = { "one atomicAdd per match.",
                                       "the warp votes with __ballot_sync and lane 0 adds the number of set bits.",
                                       "per-thread counts meet in a __shared__ counter, thread 0 adds it to the total.",
                                       "__syncthreads_count counts the block's matches in the barrier itself." };
    int agg = t->p[CI_AGG], vote = agg == 1 || agg == 3;
    const char *T = sc_ct(t->p[CI_DTYPE]), *U = t->p[CI_OUT] ? "unsigned int" : "int", *const *p = ci_parts[agg];
    const char *x = t->in[0].name, *pred = sl_pred(t, t->p[CI_PRED], t->p[CI_DTYPE], "v", 0);
    const char *kv[] = { "T", T, "U", U, "x", x, "c", t->out[0].name, "one", t->p[CI_OUT] ? "1u" : "1", "pred", pred,
                         "hit", FRAG(ci_hit_tpl, "T", T, "x", x, "pred", pred), "mask", sl_mask(t->p[CI_MASK]), NULL };
    emit_kernel(e, t, sl_mask_define(agg == 1, t->p[CI_MASK]), "", fmt("Counts matching elements: %s", how[agg]),
                "int n", FRAG("$head\n$loop\n$tail", "head", tpl_frag(p[0], kv), "tail", tpl_frag(p[2], kv),
                              "loop", FRAG(ci_loop_tpl[vote][t->p[CI_LOOP]], "body", tpl_frag(p[1], kv))));
}
static void ci_launch(const Task *t, Emit *e, const Host *h) {
    if (t->p[CI_LOOP])
        TPL(e, t, "$grid\n$k<<<blocks, threads>>>($args);",
            "grid", grid_1d(fmt("%d", t->p[CI_BLOCK]), h->size[0], t->p[CI_CAP]), "k", t->kname[0],
            "args", kernel_args(h, 1));
    else launch_1d(e, t, t->kname[0], h->size[0], t->p[CI_BLOCK], 0, kernel_args(h, 1));
}
static void ci_ref(const Task *t, const void *const *in, void *const *out) {
    int is_int = t->p[CI_DTYPE];
    double a = is_int ? t->f[0] : fpar(t, 0), b = is_int ? t->f[1] : fpar(t, 1);
    long k = 0;
    for (long i = 0; i < t->p[CI_N]; i++) k += sl_holds(t->p[CI_PRED], ro_get(in[0], is_int, i), a, b);
    ((uint32_t *)out[0])[0] = (uint32_t)k; // int32 or uint32: the same bits
}
static const Family fam_count_if = {
    "count_if",
    "count elements matching a predicate with atomicAdd: per element, warp-aggregated ballot/popc, shared counter, "
    "__syncthreads_count",
    ci_params, ci_fp, ci_draw, ci_layout, ci_describe, ci_kernels, ci_launch, ci_ref };

static const Family *const families_select[] = { &fam_argmax, &fam_atomic_minmax, &fam_compact, &fam_count_if, NULL };
