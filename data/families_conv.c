// families_conv.c - convolutions: 1-D with the filter in __constant__ memory (global loads, a shared
// tile with halo, or grid-stride); 2-D correlation / convolution, 3x3 or 5x5 filter in constant or global
// memory, direct or a shared tile with halo. Included by corpus.c after families_matrix.c (mx_* helpers,
// its conventions: kernel parameters and locals lower case, macros never an upper-cased size name).

// The reference of both families: y = the correlation of the R x C image x with the KR x KC
// filter w (flipped in both directions when flip), same size (the filter centred, pixels
// outside the image taken as 0) or valid. A 1-D convolution is one row with a 1 x K filter.
static void mxcv_correlate(const float *x, const float *w, float *y, long R, long C, long KR, long KC, int same,
                           int flip) {
    long OR = same ? R : R - KR + 1, OC = same ? C : C - KC + 1, sr = same ? KR / 2 : 0, sc = same ? KC / 2 : 0;
    for (long r = 0; r < OR; r++)
        for (long c = 0; c < OC; c++) {
            double s = 0;
            for (long i = 0; i < KR; i++)
                for (long j = 0; j < KC; j++) {
                    long rr = r + i - sr, cc = c + j - sc;
                    if (rr < 0 || rr >= R || cc < 0 || cc >= C) continue;
                    double wv = flip ? w[(KR - 1 - i) * KC + (KC - 1 - j)] : w[i * KC + j];
                    s += wv * x[rr * C + cc];
                }
            y[r * OC + c] = (float)s;
        }
}

// ----------------------------------------------------------------------------
// 1-D convolution with the filter in __constant__ memory

enum { MXC1_N, MXC1_TAPS, MXC1_PAD, MXC1_MODE, MXC1_CAPACITY, MXC1_BLOCK, MXC1_CAP, MXC1_LOOP, MXC1_KNAME, MXC1_NAMES,
       MXC1_TNAME, MXC1_DNAMES, MXC1_CNAME, MXC1_NP };
static const char *const mxcv_pads[] = { "same", "valid", NULL };
static const char *const mxc1_modes[] = { "global", "shared_tile", "grid_stride", NULL };
static const char *const mxc1_capacity[] = { "exact", "max_taps", NULL };
static const ParamDesc mxc1_params[] = {
    [MXC1_N] = { "n", NULL, 1, "1000 4096 10000 65536 100000 262144 1000000" },
    [MXC1_TAPS] = { "taps", NULL, 1, "3 5 7 9 11 15 17 25 31" }, [MXC1_PAD] = { "pad", mxcv_pads, 1, "*" },
    [MXC1_MODE] = { "mode", mxc1_modes, 1, "*" }, [MXC1_CAPACITY] = { "capacity", mxc1_capacity, 1, "*" },
    [MXC1_BLOCK] = { "block", NULL, 1, "64 128 256 256 512" }, [MXC1_CAP] = { "cap", NULL, 0, "256 512 1024 2048" },
    [MXC1_LOOP] = { "loop", NULL, 0, "0..1" }, [MXC1_KNAME] = { "kname", NULL, 0, "0..3" },
    [MXC1_NAMES] = { "names", NULL, 0, "0..4" }, [MXC1_TNAME] = { "tname", NULL, 0, "0..2" },
    [MXC1_DNAMES] = { "dnames", NULL, 0, "0..2" }, [MXC1_CNAME] = { "cname", NULL, 0, "0..3" }, [MXC1_NP] = { NULL } };
static const char *const mxc1_dnames[][3] = { { "n", "taps", "n_out" }, { "len", "ksize", "out_len" },
                                              { "length", "width", "result_len" } };
// the input, the filter, the output
static const char *const mxc1_names[] = { "x w y", "signal filt filtered", "in filter out", "input weights output",
                                          "data mask result" };
static const char *const mxc1_cnames[] = { "c_filter", "c_weights", "const_mask", "filter_c" };
static const char *const mxc1_kn[] = { "conv1d", "convolve1D", "conv1d_const", "fir_filter" };

static void mxc1_draw(Task *t, Rng *r) {
    if (t->p[MXC1_PAD] == 1) t->p[MXC1_TAPS] = rng_pick(r, "2 3 4 5 7 8 9 16 31"); // valid: any count; same: odd
    if (t->p[MXC1_MODE] != 2) t->p[MXC1_CAP] = 0;
    if (t->p[MXC1_MODE] != 0) t->p[MXC1_LOOP] = 0;
    task_names(t, 2, mxc1_names[t->p[MXC1_NAMES]], mxc1_kn[t->p[MXC1_KNAME]], "conv1d");
}

static long mxc1_nout(const Task *t) { return t->p[MXC1_PAD] == 0 ? t->p[MXC1_N] : t->p[MXC1_N] - t->p[MXC1_TAPS] + 1; }

static void mxc1_layout(Task *t) {
    const char *const *dn = mxc1_dnames[t->p[MXC1_DNAMES]];
    long N = t->p[MXC1_N], K = t->p[MXC1_TAPS];
    mx_begin(t, 2, dn, N, K, 0);
    int out = t->p[MXC1_PAD] == 1 ? add_size(t, dn[2], mxc1_nout(t)) : 0; // valid: a size of its own
    mx_f32(&t->in[0], N, 0, 0, -1, 1);
    mx_f32(&t->in[1], K, 0, 1, -1, 1);
    mx_f32(&t->out[0], mxc1_nout(t), 0, out, -1, 0);
    mx_sum_tol(t, K, 1.0);
}

static void mxc1_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, pick3(t->p[MXC1_TNAME], "Convolution_1D", "FIR_Filter_Constant_Memory", "Conv1D_Constant_Filter"));
    const char *x = t->in[0].name, *w = t->in[1].name, *y = t->out[0].name;
    int N = t->p[MXC1_N], K = t->p[MXC1_TAPS];
    buf_printf(desc, "%s has %d elements and %s holds %d filter taps", x, N, w, K);
    if (t->p[MXC1_PAD] == 0)
        buf_printf(desc, " (odd, radius %d). Compute the same-size 1-D convolution %s[i] = sum over j in [0, %d) of "
                   "%s[j] * %s[i + j - %d], with elements of %s outside [0, %d) taken as 0.",
                   K / 2, y, K, w, x, K / 2, x, N);
    else
        buf_printf(desc, ". Compute the valid 1-D convolution (no padding) %s[i] = sum over j in [0, %d) of %s[j] * "
                   "%s[i + j] for i in [0, %ld).",
                   y, K, w, x, mxc1_nout(t));
    buf_puts(desc, " The filter is not flipped (cross-correlation form).");
    buf_printf(desc, " Keep the filter in __constant__ memory (cudaMemcpyToSymbol from the device buffer of %s)%s.", w,
               pick3(t->p[MXC1_MODE], "; one thread per output element",
                     "; each block stages its input window plus the filter's halo in shared memory",
                     "; threads walk the outputs with a grid-stride loop"));
}

// The filter in __constant__ memory (FILTER_TAPS of it, or a MAX_TAPS capacity and the count as
// an argument); one thread per output or a grid-stride loop (mx_dot_tpl in a loop_frag), or a
// shared tile with the halo.
static const char mxc1_kernel_tpl[] = R"(
$capacity
$block_size

/// The filter taps: read by every thread, cached in constant memory.
__constant__ float $cn[$CAPN];

/// $y[i] = sum over j of $cn[j] * $x[i + j$center]$zero.
__global__ void $kname($params) {
    $body
}
)";
static const char mxc1_tile_tpl[] = R"(
__shared__ float tile[BLOCK_SIZE + $CAPN - 1];
const int base = blockIdx.x * BLOCK_SIZE;
const int start = base$center;
//? the block's window of the input plus the halo, zero outside [0, n)
for (int j = threadIdx.x; j < BLOCK_SIZE + $TAPS - 1; j += BLOCK_SIZE) {
    const int g = start + j;
    tile[j] = (g >= 0 && g < $n) ? $x[g] : 0.0f;
}
__syncthreads();
const int i = base + threadIdx.x;
if (i < $nout) {
    float acc = 0.0f;
    $unroll
    for (int j = 0; j < $TAPS; ++j) acc += $cn[j] * tile[threadIdx.x + j];
    $y[i] = acc;
}
)";

static void mxc1_kernels(const Task *t, Emit *e) {
    const char *const *dn = mxc1_dnames[t->p[MXC1_DNAMES]];
    const char *x = t->in[0].name, *y = t->out[0].name, *n = dn[0], *kk = dn[1], *cn = mxc1_cnames[t->p[MXC1_CNAME]],
               *i = IDX(t);
    int mode = t->p[MXC1_MODE], same = t->p[MXC1_PAD] == 0, cap = t->p[MXC1_CAPACITY] == 1;
    const char *TAPS = cap ? kk : "FILTER_TAPS", *CAPN = cap ? "MAX_TAPS" : "FILTER_TAPS", *nout = same ? n : dn[2];
    const char *center = same ? fmt(" - %s / 2", TAPS) : "";
    const char *step =
        same ? fmt("const int src = (int)%s + j - %s / 2;\nif (src >= 0 && src < %s) acc += %s[j] * %s[src];", i, TAPS,
                   n, cn, x)
             : fmt("acc += %s[j] * %s[%s + j];", cn, x, i);
    const char *capacity =
        cap ? "#define MAX_TAPS 64 // capacity of the constant filter; the kernel takes the actual count"
            : fmt("#define FILTER_TAPS %d", t->p[MXC1_TAPS]);
    const char *params = fmt("%s, %s, int %s%s%s", ptr_param(t, "float", x, 1), ptr_param(t, "float", y, 0), n,
                             same ? "" : fmt(", int %s", dn[2]), cap ? fmt(", int %s", kk) : "");
    const char *body = mode == 1 ? FRAG(mxc1_tile_tpl, "CAPN", CAPN, "TAPS", TAPS, "center", center, "n", n, "x", x,
                                        "nout", nout, "cn", cn, "y", y, "unroll", cap ? "" : "#pragma unroll")
                                 : loop_frag(t, mode == 2 ? LOOP_GRID : t->p[MXC1_LOOP], nout,
                                             FRAG(mx_dot_tpl, "init", "0.0f", "p", "j", "len", TAPS, "step", step,
                                                  "out", fmt("%s[%s]", y, i)));
    TPL(e, t, mxc1_kernel_tpl, "cn", cn, "CAPN", CAPN, "y", y, "x", x, "center", center, "kname", t->kname[0],
        "capacity", capacity, "block_size", mode == 1 ? fmt("#define BLOCK_SIZE %d", t->p[MXC1_BLOCK]) : "",
        "zero", same ? " (zero outside the input)" : "", "params", params, "body", body);
}

static void mxc1_launch(const Task *t, Emit *e, const Host *h) {
    int same = t->p[MXC1_PAD] == 0, cap = t->p[MXC1_CAPACITY] == 1;
    const char *n = h->size[0], *kk = h->size[1], *no = same ? n : h->size[2], *cn = mxc1_cnames[t->p[MXC1_CNAME]];
    const char *args =
        fmt("%s, %s, %s%s%s", h->in[0], h->out[0], n, same ? "" : fmt(", %s", no), cap ? fmt(", %s", kk) : "");
    host_call(e, t, "cudaMemcpyToSymbol(%s, %s, %s * sizeof(float), 0, cudaMemcpyDeviceToDevice)", cn, h->in[1], kk);
    if (t->p[MXC1_MODE] == 1)
        TPL(e, t, "const int blocks = ($n + BLOCK_SIZE - 1) / BLOCK_SIZE;\n$k<<<blocks, BLOCK_SIZE>>>($args);", "n", no,
            "k", t->kname[0], "args", args);
    else launch_1d(e, t, t->kname[0], no, t->p[MXC1_BLOCK], t->p[MXC1_CAP], args);
}

static void mxc1_ref(const Task *t, const void *const *in, void *const *out) {
    mxcv_correlate(in[0], in[1], out[0], 1, t->p[MXC1_N], 1, t->p[MXC1_TAPS], t->p[MXC1_PAD] == 0, 0);
}

static const Family fam_mx_conv1d = {
    "conv1d_constant",
    "1-D convolution (same or valid) with the filter in __constant__ memory via "
    "cudaMemcpyToSymbol; global, shared tile + halo, or grid-stride",
    mxc1_params, NULL, mxc1_draw, mxc1_layout, mxc1_describe, mxc1_kernels, mxc1_launch, mxc1_ref };

// ----------------------------------------------------------------------------
// 2-D convolution with a 3x3 or 5x5 filter

enum { MXC2_SIZE, MXC2_K, MXC2_PAD, MXC2_FLIP, MXC2_MODE, MXC2_FMEM, MXC2_BDIM, MXC2_DIMS, MXC2_KNAME, MXC2_NAMES,
       MXC2_TNAME, MXC2_DNAMES, MXC2_MACROS, MXC2_NP };
static const char *const mxc2_flips[] = { "correlation", "convolution", NULL };
static const char *const mxc2_modes[] = { "global", "shared_tile", NULL };
static const char *const mxc2_fmems[] = { "constant", "global", NULL };
static const ParamDesc mxc2_params[] = {
    [MXC2_SIZE] = { "size", NULL, 1, "0..9" }, [MXC2_K] = { "ksize", NULL, 1, "3 3 3 5 5" },
    [MXC2_PAD] = { "pad", mxcv_pads, 1, "*" }, [MXC2_FLIP] = { "flip", mxc2_flips, 1, "0 0 1" },
    [MXC2_MODE] = { "mode", mxc2_modes, 1, "*" }, [MXC2_FMEM] = { "filter_mem", mxc2_fmems, 1, "0 0 0 1 1" },
    [MXC2_BDIM] = { "bdim", NULL, 1, "0 1 2 4 5" }, [MXC2_DIMS] = { "dims", NULL, 0, "0..3" },
    [MXC2_KNAME] = { "kname", NULL, 0, "0..3" }, [MXC2_NAMES] = { "names", NULL, 0, "0..4" },
    [MXC2_TNAME] = { "tname", NULL, 0, "0..2" }, [MXC2_DNAMES] = { "dnames", NULL, 0, "0..2" },
    [MXC2_MACROS] = { "macros", NULL, 0, "0..2" }, [MXC2_NP] = { NULL } };
static const int mxc2_sizes[][2] = { { 64, 64 }, { 100, 200 }, { 256, 256 }, { 333, 555 }, { 480, 640 }, { 512, 512 },
                                     { 1000, 1000 }, { 768, 1024 }, { 1024, 1024 }, { 2048, 512 } };
static const char *const mxc2_dnames[][5] = { { "rows", "cols", "ksize", "out_rows", "out_cols" },
                                              { "height", "width", "fsize", "out_h", "out_w" },
                                              { "ny", "nx", "kdim", "ony", "onx" } };
static const char *const mxc2_names[] = { "img filt out", "image kern conv", "input mask output", "src weights dst",
                                          "x w y" };
static const char *const mxc2_macros[][2] = { { "FILTER_DIM", "FILTER_RADIUS" }, { "MASK_DIM", "MASK_RADIUS" },
                                              { "KW", "KR" } };
static const char *const mxc2_kn[] = { "conv2d", "convolution2D", "conv2d_kernel", "filter2d" };

// The input's rows (d = 0) or columns (d = 1), and the output's: the input's, less K - 1 when valid.
static long mxc2_in(const Task *t, int d) { return mxc2_sizes[t->p[MXC2_SIZE]][d]; }
static long mxc2_out(const Task *t, int d) { return mxc2_in(t, d) - (t->p[MXC2_PAD] ? t->p[MXC2_K] - 1 : 0); }

static void mxc2_draw(Task *t, Rng *r) {
    (void)r;
    task_names(t, 2, mxc2_names[t->p[MXC2_NAMES]], mxc2_kn[t->p[MXC2_KNAME]], "conv2d");
}

static void mxc2_layout(Task *t) {
    const char *const *dn = mxc2_dnames[t->p[MXC2_DNAMES]];
    long R = mxc2_in(t, 0), C = mxc2_in(t, 1), K = t->p[MXC2_K];
    mx_begin(t, 2, dn, R, C, K); // size constants 0 rows, 1 cols, 2 the filter's side
    int orr = t->p[MXC2_PAD] ? add_size(t, dn[3], mxc2_out(t, 0)) : 0; // valid: sizes of their own
    int occ = t->p[MXC2_PAD] ? add_size(t, dn[4], mxc2_out(t, 1)) : 1;
    mx_f32(&t->in[0], R, C, 0, 1, 0);
    trange(&t->in[0], (t->p[MXC2_NAMES] & 1) ? 0 : -1, 1, 0);
    mx_f32(&t->in[1], K, K, 2, 2, 1);
    mx_f32(&t->out[0], mxc2_out(t, 0), mxc2_out(t, 1), orr, occ, 0);
    mx_sum_tol(t, K * K, 1.0);
}

static void mxc2_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Convolution_2D", "Image_Filter_2D", "Conv2D_Single_Channel" },
                                          { "True_Convolution_2D", "Flipped_Kernel_Conv2D", "Image_Convolution" } };
    buf_puts(name, nm[t->p[MXC2_FLIP]][t->p[MXC2_TNAME]]);
    const char *x = t->in[0].name, *w = t->in[1].name, *y = t->out[0].name;
    long R = mxc2_in(t, 0), C = mxc2_in(t, 1);
    int K = t->p[MXC2_K], H = K / 2;
    const char *wt = t->p[MXC2_FLIP] ? fmt("%s[%d - i][%d - j]", w, K - 1, K - 1) : fmt("%s[i][j]", w);
    buf_printf(desc, "%s is %s x %ld row-major float32 image and %s a %d x %d filter. ", x, a_num(R), C, w, K, K);
    if (t->p[MXC2_PAD] == 0)
        buf_printf(desc, "Compute the same-size output: %s[r][c] = sum over i, j in [0, %d) of %s * "
                   "%s[r + i - %d][c + j - %d], with pixels outside the image taken as 0.",
                   y, K, wt, x, H, H);
    else
        buf_printf(desc, "Compute the valid output (%ld x %ld, no padding): %s[r][c] = sum over i, j in [0, %d) of "
                   "%s * %s[r + i][c + j].",
                   mxc2_out(t, 0), mxc2_out(t, 1), y, K, wt, x);
    if (t->p[MXC2_FLIP]) buf_puts(desc, " This is a true convolution: the filter is flipped in both directions.");
    buf_printf(desc, " One thread per output pixel on a 2-D grid of 2-D blocks (dim3)%s; the filter %s.",
               t->p[MXC2_MODE] ? ", each block staging its input tile plus the halo in shared memory"
                               : ", reading the image from global memory",
               t->p[MXC2_FMEM] ? "is read from global memory" : "lives in __constant__ memory (cudaMemcpyToSymbol)");
}

// One thread per output pixel: the neighbourhood read from global memory (skipping pixels
// outside the image), or from a shared tile loaded with its halo (mxc2_tile_tpl, then the sum
// of mxc2_sum_tpl); the filter in __constant__ memory or a kernel argument.
static const char mxc2_kernel_tpl[] = R"(
#define $FD $K
#define $FR ($FD / 2)
$tile

$cmask
/// One thread per output pixel: a $FD x $FD weighted sum of the neighbourhood$how.
__global__ void $kname($params, int $R, int $C) {
    $out_size
    $setup
    if (row >= $orows || col >= $ocols) return;
    float acc = 0.0f;
    $sum
    $y[row * $ocols + col] = acc;
}
)";
static const char mxc2_tile_tpl[] = R"(
__shared__ float tile[TILE_H + $FD - 1][TILE_W + $FD - 1];
const int r0 = blockIdx.y * TILE_H, c0 = blockIdx.x * TILE_W;
const int oy = r0$minus_r, ox = c0$minus_r; // the tile's top-left input pixel
for (int ty = threadIdx.y; ty < TILE_H + $FD - 1; ty += TILE_H) {
    for (int tx = threadIdx.x; tx < TILE_W + $FD - 1; tx += TILE_W) {
        const int rr = oy + ty, cc = ox + tx;
        tile[ty][tx] = (rr >= 0 && rr < $R && cc >= 0 && cc < $C) ? $x[rr * $C + cc] : 0.0f;
    }
}
__syncthreads();
const int row = r0 + threadIdx.y, col = c0 + threadIdx.x;
)";
static const char *const mxc2_sum_tpl[] = { R"(
for (int i = 0; i < $FD; ++i) {
    const int rr = row + i$minus_r;
    $skip_r
    for (int j = 0; j < $FD; ++j) {
        const int cc = col + j$minus_r;
        $skip_c
        acc += $w * $x[rr * $C + cc];
    }
}
)", R"(
for (int i = 0; i < $FD; ++i) {
    for (int j = 0; j < $FD; ++j) acc += $w * tile[threadIdx.y + i][threadIdx.x + j];
}
)" };

static void mxc2_kernels(const Task *t, Emit *e) {
    const char *const *dn = mxc2_dnames[t->p[MXC2_DNAMES]], *const *mc = mxc2_macros[t->p[MXC2_MACROS]];
    const char *x = t->in[0].name, *w = t->in[1].name, *y = t->out[0].name, *R = dn[0], *C = dn[1], *FD = mc[0],
               *FR = mc[1];
    int same = t->p[MXC2_PAD] == 0, shared = t->p[MXC2_MODE], cmem = t->p[MXC2_FMEM] == 0;
    const int *bd = mx_bdims[t->p[MXC2_BDIM]];
    const char *ws = cmem ? "c_mask" : w;
    const char *wx =
        t->p[MXC2_FLIP] ? fmt("%s[(%s - 1 - i) * %s + (%s - 1 - j)]", ws, FD, FD, FD) : fmt("%s[i * %s + j]", ws, FD);
    const char *orows = same ? R : "orows", *ocols = same ? C : "ocols";
    const char *cmask =
        cmem ? fmt("/// The filter, row-major, in constant memory.\n__constant__ float c_mask[%s * %s];\n\n", FD, FD)
             : "";
    const char *params =
        cmem ? fmt("%s, %s", ptr_param(t, "float", x, 1), ptr_param(t, "float", y, 0)) : kernel_params(t);
    const char *minus_r = same ? fmt(" - %s", FR) : "";
    const char *setup = shared ? FRAG(mxc2_tile_tpl, "FD", FD, "R", R, "C", C, "x", x, "minus_r", minus_r)
                               : mx_index2d(t, "row", "col", 0);
    const char *sum = FRAG(mxc2_sum_tpl[shared], "FD", FD, "C", C, "x", x, "w", wx, "minus_r", minus_r,
                           "skip_r", same ? fmt("if (rr < 0 || rr >= %s) continue;", R) : "",
                           "skip_c", same ? fmt("if (cc < 0 || cc >= %s) continue;", C) : "");
    TPL(e, t, mxc2_kernel_tpl, "FD", FD, "FR", FR, "K", fmt("%d", t->p[MXC2_K]), "kname", t->kname[0], "R", R, "C", C,
        "y", y, "orows", orows, "ocols", ocols, "cmask", cmask, "params", params, "setup", setup, "sum", sum,
        "tile", shared ? fmt("#define TILE_W %d\n#define TILE_H %d", bd[0], bd[1]) : "",
        "how", shared ? " read from a shared tile with a halo" : "",
        "out_size", same ? "" : fmt("const int orows = %s - %s + 1, ocols = %s - %s + 1;", R, FD, C, FD));
}

static void mxc2_launch(const Task *t, Emit *e, const Host *h) {
    int same = t->p[MXC2_PAD] == 0, cmem = t->p[MXC2_FMEM] == 0, shared = t->p[MXC2_MODE];
    const char *R = h->size[0], *C = h->size[1], *kk = h->size[2];
    const char *orr = same ? R : h->size[3], *occ = same ? C : h->size[4];
    if (cmem)
        host_call(e, t, "cudaMemcpyToSymbol(c_mask, %s, %s * %s * sizeof(float), 0, cudaMemcpyDeviceToDevice)",
                  h->in[1], kk, kk);
    // the filter is a kernel argument when it stays in global memory; shared tiles are TILE_W x TILE_H
    const char *args = fmt("%s, %s%s, %s, %s", h->in[0], cmem ? "" : fmt("%s, ", h->in[1]), h->out[0], R, C);
    const int *bd = mx_bdims[t->p[MXC2_BDIM]];
    launch_2d(e, t, (Launch2D){ .dims = t->p[MXC2_DIMS], .bx = shared ? "TILE_W" : fmt("%d", bd[0]),
                                .by = shared ? "TILE_H" : fmt("%d", bd[1]), .xc = occ, .yc = orr, .args = args });
}

static void mxc2_ref(const Task *t, const void *const *in, void *const *out) {
    int K = t->p[MXC2_K];
    mxcv_correlate(in[0], in[1], out[0], mxc2_in(t, 0), mxc2_in(t, 1), K, K, t->p[MXC2_PAD] == 0, t->p[MXC2_FLIP]);
}

static const Family fam_mx_conv2d = {
    "conv2d",
    "2-D convolution / correlation with a 3x3 or 5x5 filter (constant or global "
    "memory), same or valid, direct or shared tile + halo",
    mxc2_params, NULL, mxc2_draw, mxc2_layout, mxc2_describe, mxc2_kernels, mxc2_launch, mxc2_ref };

static const Family *const families_conv[] = { &fam_mx_conv1d, &fam_mx_conv2d, NULL };
