// families_stencil.c - stencils: 1-D with a shared-memory tile and halo, 2-D 5- and 9-point
// stencils over a row-major grid (direct global loads or a shared tile with a one-cell halo).
// Included by corpus.c.

static const char *const bound_names[] = { "zero", "clamp", "copy", NULL };

// ----------------------------------------------------------------------------
// 1-D stencil with a shared-memory halo

enum { S1_R, S1_W, S1_BOUND, S1_N, S1_BLOCK, S1_SHMEM, S1_WSTYLE, S1_LOADFN, S1_KNAME, S1_NAMES, S1_TNAME, S1_NP };
static const char *const s1_weights[] = { "box", "binomial", "second_derivative", NULL };
static const char *const s1_shmem[] = { "define", "template", "dynamic", NULL };
static const char *const s1_wstyles[] = { "constant_array", "literals", NULL };
static const ParamDesc s1_params[] = {
    [S1_R] = { "radius", NULL, 1, "1..3" }, [S1_W] = { "weights", s1_weights, 1, "*" },
    [S1_BOUND] = { "boundary", bound_names, 1, "0..1" },
    [S1_N] = { "n", NULL, 1, "1000 4096 10000 65536 100000 262144 1000000" },
    [S1_BLOCK] = { "block", NULL, 1, "128 256 512" }, [S1_SHMEM] = { "shmem", s1_shmem, 1, "*" },
    [S1_WSTYLE] = { "wstyle", s1_wstyles, 0, "*" }, [S1_LOADFN] = { "loadfn", NULL, 0, "0..3" },
    [S1_KNAME] = { "kname", NULL, 0, "0..3" }, [S1_NAMES] = { "names", NULL, 0, "0..4" },
    [S1_TNAME] = { "tname", NULL, 0, "0..2" }, [S1_NP] = { NULL } };
static const char *const s1_names[] = { "in out", "x y", "signal filtered", "input output", "u result" };
static const char *const s1_kn[] = { "stencil_1d", "stencil1D", "conv1d_shared", "apply_stencil" };

// The weights, by weights: Task Names (by tname), and for radius 1, 2, 3 the taps
// w[k + R] = num[k + R] / den.
static const struct { const char *tname[3]; int num[3][7], den[3]; } s1_w[] = {
    { { "Moving_Average_1D", "Box_Filter_1D", "Stencil_1D_Average" },
      { { 1, 1, 1 }, { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1, 1, 1 } }, { 3, 5, 7 } },
    { { "Binomial_Smoothing_1D", "Gaussian_Stencil_1D", "Binomial_Filter_1D" },
      { { 1, 2, 1 }, { 1, 4, 6, 4, 1 }, { 1, 6, 15, 20, 15, 6, 1 } }, { 4, 16, 64 } },
    { { "Second_Derivative_1D", "Laplacian_1D", "Finite_Difference_1D" },
      { { 1, -2, 1 }, { -1, 16, -30, 16, -1 }, { 2, -27, 270, -490, 270, -27, 2 } }, { 1, 12, 180 } } };
static const int *s1_num(const Task *t) { return s1_w[t->p[S1_W]].num[t->p[S1_R] - 1]; }
static int s1_den(const Task *t) { return s1_w[t->p[S1_W]].den[t->p[S1_R] - 1]; }

static void s1_draw(Task *t, Rng *r) {
    (void)r;
    static const char *const loadn[] = { "load_at", "fetch", "read_halo", "sample" };
    int k = t->p[S1_KNAME], n = t->p[S1_NAMES];
    task_names(t, 1, s1_names[n], fmt("%s %s", s1_kn[k], loadn[(k + n) % 4]), "stencil1d");
}

static void s1_layout(Task *t) {
    vectors_1d(t, "n", t->p[S1_N], 1, -1, 1);
    t->atol = 2e-5;
    t->rtol = 1e-5;
}

// The weighted sum w[0] * tile[l - R] + ... over the taps, as the prompt (x[i-1]) or
// the kernel (tile[l - 1], coefficients as float literals) writes it.
static const char *s1_sum(const Task *t, const char *x, const char *i, int literals) {
    const int *num = s1_num(t);
    int R = t->p[S1_R];
    const char *sum = "";
    for (int k = -R; k <= R; k++) {
        int w = num[k + R];
        const char *term = k == 0 ? fmt("%s[%s]", x, i)
                                  : fmt(literals ? "%s[%s %c %d]" : "%s[%s%c%d]", x, i, k < 0 ? '-' : '+', abs(k));
        const char *coef = abs(w) == 1 ? "" : literals ? fmt("%s * ", flit(abs(w))) : fmt("%d*", abs(w));
        const char *sign = w < 0 ? "-" : k == -R ? "" : "+";
        sum = fmt(k == -R ? "%s%s%s%s" : "%s %s %s%s", sum, sign, coef, term);
    }
    return sum;
}

static void s1_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const bound[] = { "Elements outside [0, %d) count as 0. ",
                                         "Indices outside [0, %d) are clamped to the nearest end. " };
    const char *x = t->in[0].name, *y = t->out[0].name;
    int den = s1_den(t), R = t->p[S1_R];
    buf_puts(name, s1_w[t->p[S1_W]].tname[t->p[S1_TNAME]]);
    buf_printf(desc, "1-D stencil of radius %d over %d elements: %s[i] = (%s", R, t->p[S1_N], y, s1_sum(t, x, "i", 0));
    buf_printf(desc, ")%s. ", den == 1 ? "" : fmt(" / %d", den));
    buf_printf(desc, bound[t->p[S1_BOUND]], t->p[S1_N]);
    buf_puts(desc, "Load each block's tile plus a halo into shared memory first.");
}

// The kernel (after any #defines, the __constant__ weights and the load function): each block
// stages its tile and halo in shared memory, then each thread sums its taps.
static const char s1_body_tpl[] = R"(
$tile
const int g = blockIdx.x * blockDim.x + threadIdx.x;
const int l = threadIdx.x + RADIUS;
//? the element of this thread, then the halo on both sides
$load_g
if (threadIdx.x < RADIUS) {
    $halo
    $load_left
    $load_right
}
__syncthreads();
if (g < n) {
    $sum
}
)";
static const char s1_weights_tpl[] = R"(
/// Stencil weights, index k + radius for offset k.
__constant__ float c_weights[$taps] = { $weights };

)";
static const char s1_load_fn_tpl[] = R"(
/// $what
$spec $load($xparam, int j, int n) {
    return $value;
}

)";
static const char s1_loop_sum_tpl[] = R"(
float acc = 0.0f;
#pragma unroll
for (int k = -RADIUS; k <= RADIUS; ++k) acc += c_weights[k + RADIUS] * tile[l + k];
$y[g] = acc;
)";

static void s1_kernels(const Task *t, Emit *e) {
    const int *num = s1_num(t);
    int den = s1_den(t), R = t->p[S1_R], sh = t->p[S1_SHMEM], lit = t->p[S1_WSTYLE], lf = t->p[S1_LOADFN];
    const char *x = t->in[0].name, *y = t->out[0].name, *BS = pick3(sh, "BLOCK_SIZE", "BLOCK", "blockDim.x");
    int zero = t->p[S1_BOUND] == 0; // outside [0, n): 0, or the nearest end
    const char *defines = sh == 1   ? ""
                          : sh == 0 ? fmt("#define RADIUS %d\n#define BLOCK_SIZE %d\n\n", R, t->p[S1_BLOCK])
                                    : fmt("#define RADIUS %d\n\n", R);
    const char *weights = ""; // the __constant__ table's initializers
    for (int k = 0; lit == 0 && k < 2 * R + 1; k++)
        weights = fmt("%s%s%s", weights, k ? ", " : "", flit((double)(float)((double)num[k] / den)));
    // The load function x[j] (loadfn 1..3, its spelling), for loads at any j.
    static const char *const spec[] = { "", "__device__ float", "__device__ __forceinline__ float",
                                        "static __device__ inline float" };
    const char *value =
        zero ? fmt("(j >= 0 && j < n) ? %s[j] : 0.0f", x) : fmt("%s[j < 0 ? 0 : (j >= n ? n - 1 : j)]", x);
    const char *what = zero ? "x[j], or 0 outside [0, n)." : "x[j] with j clamped to [0, n - 1].";
    const char *load_fn = !lf ? ""
                              : FRAG(s1_load_fn_tpl, "spec", spec[lf], "load", t->kname[1],
                                     "xparam", ptr_param(t, "float", x, 1), "value", value, "what", what);
    const char *tile = sh == 2 ? "extern __shared__ float tile[]; // blockDim.x + 2 * RADIUS floats"
                               : fmt("__shared__ float tile[%s + 2 * RADIUS];", BS);
    // The loads of the thread's element and of the halo on its left and right: through the load
    // function, or inline, checking only the end that each can cross (g < n, left >= 0, right < n).
    const char *dst[3] = { "tile[l]", "tile[l - RADIUS]", fmt("tile[l + %s]", BS) },
               *j[3] = { "g", "g - RADIUS", fmt("g + %s", BS) },
               *inl[3] = { zero ? fmt("g < n ? %s[g] : 0.0f", x) : fmt("%s[min(g, n - 1)]", x),
                           zero ? fmt("left >= 0 ? %s[left] : 0.0f", x) : fmt("%s[max(left, 0)]", x),
                           zero ? fmt("right < n ? %s[right] : 0.0f", x) : fmt("%s[min(right, n - 1)]", x) }, *load[3];
    for (int k = 0; k < 3; k++)
        load[k] = lf ? fmt("%s = %s(%s, %s, n);", dst[k], t->kname[1], x, j[k]) : fmt("%s = %s;", dst[k], inl[k]);
    const char *sum = lit ? fmt("const float acc = %s;\n%s[g] = acc%s;", s1_sum(t, "tile", "l", 1), y,
                                den == 1 ? "" : fmt(" / %s", flit(den)))
                          : FRAG(s1_loop_sum_tpl, "y", y);
    emit_kernel(e, t,
                FRAG("$defines\n$weights\n$load_fn", "defines", defines, "load_fn", load_fn,
                     "weights", lit ? "" : FRAG(s1_weights_tpl, "taps", fmt("%d", 2 * R + 1), "weights", weights)),
                sh == 1 ? "template <int BLOCK, int RADIUS>" : "",
                fmt("%s[i] = weighted sum of %s[i - R .. i + R]; each block stages its tile and a halo of R on each "
                    "side in shared memory.", y, x), "int n",
                FRAG(s1_body_tpl, "tile", tile, "load_g", load[0], "load_left", load[1], "load_right", load[2],
                     "halo", lf ? "" : fmt("const int left = g - RADIUS, right = g + %s;", BS), "sum", sum));
}

static const char *const s1_launch_tpl[] = { R"(
const int blocks = ($n + BLOCK_SIZE - 1) / BLOCK_SIZE;
$k<<<blocks, BLOCK_SIZE>>>($args);
)", R"(
const int blocks = ($n + $B1) / $B;
$k<$B, $R><<<blocks, $B>>>($args);
)", R"(
$grid
const size_t shmem = (threads + 2 * RADIUS) * sizeof(float);
$k<<<blocks, threads, shmem>>>($args);
)" };

static void s1_launch(const Task *t, Emit *e, const Host *h) {
    int B = t->p[S1_BLOCK];
    const char *n = h->size[0], *threads = fmt("%d", B);
    TPL(e, t, s1_launch_tpl[t->p[S1_SHMEM]], "n", n, "k", t->kname[0], "B", threads, "B1", fmt("%d", B - 1),
        "R", fmt("%d", t->p[S1_R]), "grid", grid_1d(threads, n, 0), "args", kernel_args(h, 1));
}

static void s1_ref(const Task *t, const void *const *in, void *const *out) {
    const int *num = s1_num(t);
    int den = s1_den(t), R = t->p[S1_R];
    const float *x = in[0];
    float *y = out[0];
    long n = t->p[S1_N];
    for (long i = 0; i < n; i++) {
        double acc = 0;
        for (int k = -R; k <= R; k++) {
            long j = i + k;
            double v;
            if (t->p[S1_BOUND] == 0) v = j >= 0 && j < n ? x[j] : 0.0;
            else v = x[j < 0 ? 0 : j >= n ? n - 1 : j];
            acc += num[k + R] * v;
        }
        y[i] = (float)(acc / den);
    }
}

static const Family fam_stencil1d = {
    "stencil_1d",
    "weighted 1-D stencil (radius 1-3) with a shared-memory tile and halo; zero or clamped ends",
    s1_params, NULL, s1_draw, s1_layout, s1_describe, s1_kernels, s1_launch, s1_ref };

// ----------------------------------------------------------------------------
// 2-D stencil

enum { S2_OP, S2_BOUND, S2_ROWS, S2_COLS, S2_BX, S2_BY, S2_SHARED, S2_TDEF, S2_KNAME, S2_NAMES, S2_TNAME, S2_DIMS,
       S2_DNAMES, S2_NP };
static const char *const s2_ops[] = { "avg5", "laplace5", "box9", "gauss9", NULL };
static const char *const s2_shared[] = { "global", "shared_tile", NULL };
static const ParamDesc s2_params[] = {
    [S2_OP] = { "op", s2_ops, 1, "*" }, [S2_BOUND] = { "boundary", bound_names, 1, "*" },
    [S2_ROWS] = { "rows", NULL, 1, NULL }, [S2_COLS] = { "cols", NULL, 1, NULL }, [S2_BX] = { "bx", NULL, 1, NULL },
    [S2_BY] = { "by", NULL, 1, NULL }, [S2_SHARED] = { "shared", s2_shared, 1, "*" },
    [S2_TDEF] = { "tdef", NULL, 0, "0..1" }, [S2_KNAME] = { "kname", NULL, 0, "0..3" },
    [S2_NAMES] = { "names", NULL, 0, "0..5" }, [S2_TNAME] = { "tname", NULL, 0, "0..2" },
    [S2_DIMS] = { "dims", NULL, 0, "0..3" }, [S2_DNAMES] = { "dnames", NULL, 0, "0..2" }, [S2_NP] = { NULL } };

// The stencils, by op: kernel names (by kname), Task Names (by tname), the prompt's formula
// (a template: $y the output, $x the input), and for the CPU reference the weights of the
// 3 x 3 neighbourhood (row by row) and their divisor.
static const struct { const char *kn[4], *tname[3], *formula; int w[9], div; } s2_op[] = {
    { { "jacobi5", "average5_kernel", "stencil5_avg", "jacobiStep" },
      { "Jacobi_Average_5pt", "Five_Point_Average", "Stencil_2D_Average" },
      "Compute $y[r][c] = ($x[r][c] + $x[r-1][c] + $x[r+1][c] + $x[r][c-1] + $x[r][c+1]) / 5.",
      { 0, 1, 0, 1, 1, 1, 0, 1, 0 }, 5 },
    { { "laplacian5", "laplace_kernel", "stencil5_laplace", "laplacian2D" },
      { "Laplacian_5pt", "Discrete_Laplacian", "Five_Point_Laplacian" },
      "Compute the 5-point Laplacian $y[r][c] = $x[r-1][c] + $x[r+1][c] + $x[r][c-1] + $x[r][c+1] - 4 * "
      "$x[r][c].",
      { 0, 1, 0, 1, -4, 1, 0, 1, 0 }, 1 },
    { { "box_blur3x3", "boxFilter3x3", "mean_filter", "blur9" },
      { "Box_Blur_3x3", "Mean_Filter_3x3", "Box_Filter_2D" },
      "Compute the 3x3 box blur: $y[r][c] is the mean of the 9 cells $x[r+dr][c+dc], dr, dc in {-1, 0, 1}.",
      { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 9 },
    { { "gaussian_blur3x3", "gaussBlur3x3", "gauss_filter", "smooth9" },
      { "Gaussian_Blur_3x3", "Gaussian_Smoothing_3x3", "Binomial_Blur_2D" },
      "Compute $y[r][c], the 3x3 Gaussian blur with weights [[1, 2, 1], [2, 4, 2], [1, 2, 1]] / 16 over "
      "$x[r+dr][c+dc].",
      { 1, 2, 1, 2, 4, 2, 1, 2, 1 }, 16 } };
// The boundaries, by boundary, as the prompt says them (%s: the input).
static const char *const s2_bound_desc[] = {
    " Cells outside the grid count as 0.", " Coordinates outside the grid are clamped to the nearest edge cell.",
    " Boundary cells (first and last row and column) are copied unchanged from %s." };
static const int s2_sizes[][2] = { { 64, 64 }, { 100, 200 }, { 256, 256 }, { 480, 640 }, { 512, 512 },
                                   { 1000, 1000 }, { 768, 1024 }, { 1024, 1024 }, { 2048, 512 } };
static const int s2_bdims[][2] = { { 16, 16 }, { 32, 8 }, { 8, 8 }, { 32, 32 }, { 16, 8 }, { 32, 4 } };
static const char *const s2_names[] = { "in out", "u u_new", "img blurred", "src dst", "field result", "input output" };
static const char *const s2_dnames[][2] = { { "rows", "cols" }, { "height", "width" }, { "ny", "nx" } };

// rows x cols and the block shape, each a pair from its table.
static void s2_draw(Task *t, Rng *r) {
    static const char *const at[] = { "at", "cell", "pixel", "load_cell" };
    int sz = RPICK(r, s2_sizes), bd = RPICK(r, s2_bdims);
    t->p[S2_ROWS] = s2_sizes[sz][0];
    t->p[S2_COLS] = s2_sizes[sz][1];
    t->p[S2_BX] = s2_bdims[bd][0];
    t->p[S2_BY] = s2_bdims[bd][1];
    int k = t->p[S2_KNAME], n = t->p[S2_NAMES];
    task_names(t, 1, s2_names[n], fmt("%s %s", s2_op[t->p[S2_OP]].kn[k], at[(k + n) % 4]), "stencil2d");
}

static void s2_layout(Task *t) {
    const char *const *dn = s2_dnames[t->p[S2_DNAMES]];
    int R = t->p[S2_ROWS], C = t->p[S2_COLS];
    int rr = add_size(t, dn[0], R), cc = add_size(t, dn[1], C);
    t->nin = t->nout = 1;
    tshape(&t->in[0], DT_F32, 2, R, C, rr, cc);
    trange(&t->in[0], t->p[S2_OP] >= 2 ? 0 : -1, 1, 0);
    tshape(&t->out[0], DT_F32, 2, R, C, rr, cc);
    t->atol = t->rtol = 1e-5;
}

static void s2_describe(const Task *t, Buf *name, Buf *desc) {
    const char *x = t->in[0].name, *y = t->out[0].name;
    int R = t->p[S2_ROWS], C = t->p[S2_COLS];
    buf_puts(name, s2_op[t->p[S2_OP]].tname[t->p[S2_TNAME]]);
    buf_printf(desc, "%s is %s x %d row-major grid (%d rows, %d columns). ", x, a_num(R), C, R, C);
    buf_put_line(desc, FRAG(s2_op[t->p[S2_OP]].formula, "y", y, "x", x));
    buf_printf(desc, s2_bound_desc[t->p[S2_BOUND]], x);
    if (t->p[S2_SHARED]) buf_puts(desc, " Stage each block's tile with a one-cell halo in shared memory.");
}

static const char s2_gauss_tpl[] = R"(
/// 3x3 Gaussian weights (sum 1).
__constant__ float c_gauss[3][3] = {
    { 0.0625f, 0.125f, 0.0625f },
    { 0.125f, 0.25f, 0.125f },
    { 0.0625f, 0.125f, 0.0625f } };

)";
// The cell loader; s2_cell_bound holds, by boundary (zero, clamp), the end of its comment and
// its bounds handling.
static const char s2_cell_tpl[] = R"(
/// The cell (r, c)$what.
$spec $cell($xparam, int r, int c, int $R, int $C) {
    $bound
    return $x[r * $C + c];
}

)";
static const char *const s2_cell_bound[][2] = {
    { ", or 0 outside the grid", "if (r < 0 || r >= $R || c < 0 || c >= $C) return 0.0f;" },
    { " with both coordinates clamped to the grid",
      "r = r < 0 ? 0 : (r >= $R ? $R - 1 : r);\nc = c < 0 ? 0 : (c >= $C ? $C - 1 : c);" } };
static const char s2_shared_setup[] = R"(
__shared__ float tile[$TY + 2][$TX + 2];
const int r0 = blockIdx.y * $TY, c0 = blockIdx.x * $TX;
//? cooperative load of the tile and its halo
for (int ty = threadIdx.y; ty < $TY + 2; ty += $TY) {
    for (int tx = threadIdx.x; tx < $TX + 2; tx += $TX) {
        tile[ty][tx] = $cell($x, r0 + ty - 1, c0 + tx - 1, $R, $C);
    }
}
__syncthreads();
const int r = r0 + threadIdx.y, c = c0 + threadIdx.x;
)";
static const char s2_global_setup[] = R"(
const int c = blockIdx.x * blockDim.x + threadIdx.x;
const int r = blockIdx.y * blockDim.y + threadIdx.y;
)";
static const char s2_copy_border[] = R"(
if (r == 0 || c == 0 || r == $R - 1 || c == $C - 1) {
    $dst = $x[r * $C + c];
    return;
}
)";
// The stencils, by op (the two 3x3 ones share a loop): $c00, $cm0, ... are the cells at fixed
// offsets (m: -1, p: +1, 0: none), $cdd the cell at (dr, dc) (s2_cell).
static const char *const s2_body_tpl[] = { R"(
$dst = ($c00 + $cm0 + $cp0 +
        $c0m + $c0p) / 5.0f;
)", R"(
$dst = $cm0 + $cp0 +
        $c0m + $c0p - 4.0f * $c00;
)", R"(
float acc = 0.0f;
for (int dr = -1; dr <= 1; ++dr) {
    for (int dc = -1; dc <= 1; ++dc) {
        acc += $weight$cdd;
    }
}
$dst = $result;
)" };

static const char *s2_off(int d) { return d == 0 ? "" : d < 0 ? fmt(" - %d", -d) : fmt(" + %d", d); }
// The input cell at row offset dr and column offset dc (" - 1", " + dr", "" for none): in the
// shared tile, in global memory, or through the loader function.
static const char *s2_cell(const Task *t, const char *dr, const char *dc) {
    const char *const *dn = s2_dnames[t->p[S2_DNAMES]];
    const char *x = t->in[0].name, *R = dn[0], *C = dn[1];
    if (t->p[S2_SHARED]) return fmt("tile[ly%s][lx%s]", dr, dc);
    if (t->p[S2_BOUND] == 2) return fmt("%s[%s * %s + c%s]", x, *dr ? fmt("(r%s)", dr) : "r", C, dc);
    return fmt("%s(%s, r%s, c%s, %s, %s)", t->kname[1], x, dr, dc, R, C);
}
// The input cell at the fixed offset (dr, dc).
static const char *s2_at(const Task *t, int dr, int dc) { return s2_cell(t, s2_off(dr), s2_off(dc)); }

// The kernel: an optional __constant__ table and cell loader, then one thread per cell
// reading its neighbours from global memory or from a shared tile with a one-cell halo.
static void s2_kernels(const Task *t, Emit *e) {
    const char *const *dn = s2_dnames[t->p[S2_DNAMES]];
    const char *x = t->in[0].name, *y = t->out[0].name, *R = dn[0], *C = dn[1];
    int shared = t->p[S2_SHARED], tmpl = t->p[S2_TDEF], bound = t->p[S2_BOUND], op = t->p[S2_OP];
    const char *TX = tmpl ? "TX" : "TILE_X", *TY = tmpl ? "TY" : "TILE_Y", *dst = fmt("%s[r * %s + c]", y, C);
    const char *body = FRAG(s2_body_tpl[op < 2 ? op : 2], "dst", dst, "c00", s2_at(t, 0, 0), "cm0", s2_at(t, -1, 0),
                            "cp0", s2_at(t, 1, 0), "c0m", s2_at(t, 0, -1), "c0p", s2_at(t, 0, 1),
                            "cdd", s2_cell(t, " + dr", " + dc"), "weight", op == 3 ? "c_gauss[dr + 1][dc + 1] * " : "",
                            "result", op == 2 ? "acc / 9.0f" : "acc");
    if (shared) body = fmt("const int ly = threadIdx.y + 1, lx = threadIdx.x + 1;\n%s", body);
    const char *cell_fn =
        bound != 2 || shared // the loader: zero padding or clamping (a copied border clamps in the tile)
            ? FRAG(s2_cell_tpl, "what", s2_cell_bound[bound == 1][0],
                   "bound", FRAG(s2_cell_bound[bound == 1][1], "R", R, "C", C),
                   "spec", t->st.allman ? "__device__ __forceinline__ float" : "__device__ float", "cell", t->kname[1],
                   "xparam", ptr_param(t, "float", x, 1), "R", R, "C", C, "x", x)
            : "";
    const char *tile_defines =
        shared && !tmpl ? fmt("#define TILE_X %d\n#define TILE_Y %d\n\n", t->p[S2_BX], t->p[S2_BY]) : "";
    const char *comment =
        shared ? "One thread per output cell; the block's tile plus a one-cell halo is staged in shared memory."
               : "One thread per output cell, reading its neighbours from global memory.";
    const char *setup = shared ? FRAG(s2_shared_setup, "TX", TX, "TY", TY, "cell", t->kname[1], "x", x, "R", R, "C", C)
                               : s2_global_setup;
    emit_kernel(e, t, FRAG("$tile_defines\n$gauss\n$cell_fn", "tile_defines", tile_defines,
                           "gauss", op == 3 ? s2_gauss_tpl : "", "cell_fn", cell_fn),
                shared && tmpl ? "template <int TX, int TY>" : "", comment, fmt("int %s, int %s", R, C),
                FRAG("$setup\nif (r >= $R || c >= $C) return;\n$copy_border\n$body", "setup", setup, "R", R, "C", C,
                     "copy_border", bound == 2 ? FRAG(s2_copy_border, "R", R, "C", C, "dst", dst, "x", x) : "",
                     "body", body));
}

// The 2-D launch configuration, in one of launch_2d's four spellings.
static void s2_launch(const Task *t, Emit *e, const Host *h) {
    int bx = t->p[S2_BX], by = t->p[S2_BY], named = t->p[S2_SHARED] && !t->p[S2_TDEF];
    const char *k = t->p[S2_SHARED] && t->p[S2_TDEF] ? fmt("%s<%d, %d>", t->kname[0], bx, by) : t->kname[0];
    launch_2d(e, t, (Launch2D){ .dims = t->p[S2_DIMS], .k = k, .bx = named ? "TILE_X" : fmt("%d", bx),
                                .by = named ? "TILE_Y" : fmt("%d", by), .xc = h->size[1], .yc = h->size[0],
                                .args = kernel_args(h, 2) });
}

static void s2_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *y = out[0];
    long R = t->p[S2_ROWS], C = t->p[S2_COLS];
    int bound = t->p[S2_BOUND];
    for (long r = 0; r < R; r++)
        for (long c = 0; c < C; c++) {
            if (bound == 2 && (r == 0 || c == 0 || r == R - 1 || c == C - 1)) { y[r * C + c] = x[r * C + c]; continue; }
            double s = 0;
            for (int k = 0; k < 9; k++) {
                long rr = r + k / 3 - 1, cc = c + k % 3 - 1;
                if (bound == 1) { rr = rr < 0 ? 0 : rr >= R ? R - 1 : rr; cc = cc < 0 ? 0 : cc >= C ? C - 1 : cc; }
                s += s2_op[t->p[S2_OP]].w[k] * (rr >= 0 && rr < R && cc >= 0 && cc < C ? x[rr * C + cc] : 0.0);
            }
            y[r * C + c] = (float)(s / s2_op[t->p[S2_OP]].div);
        }
}

static const Family fam_stencil2d = {
    "stencil_2d",
    "5-point average/Laplacian and 3x3 box/Gaussian blur on a 2-D grid; dim3 launch, optional shared tile",
    s2_params, NULL, s2_draw, s2_layout, s2_describe, s2_kernels, s2_launch, s2_ref };

static const Family *const families_stencil[] = { &fam_stencil1d, &fam_stencil2d, NULL };
