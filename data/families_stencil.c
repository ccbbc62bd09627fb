// families_stencil.c - stencils: 1-D with a shared-memory tile and halo, 2-D 5- and
// 9-point stencils over a row-major grid (direct global loads or a shared tile with a
// one-cell halo). Included by corpus.c.

static const char *const bound_names[] = { "zero", "clamp", "copy", NULL };

// ----------------------------------------------------------------------------
// 1-D stencil with a shared-memory halo

enum { S1_R, S1_W, S1_BOUND, S1_N, S1_BLOCK, S1_SHMEM, S1_WSTYLE, S1_LOADFN, S1_KNAME, S1_NAMES, S1_TNAME, S1_NP };
static const char *const s1_weights[] = { "box", "binomial", "second_derivative", NULL };
static const char *const s1_shmem[] = { "define", "template", "dynamic", NULL };
static const char *const s1_wstyles[] = { "constant_array", "literals", NULL };
static const ParamDesc s1_params[] = {
    { "radius", NULL, 1 }, { "weights", s1_weights, 1 }, { "boundary", bound_names, 1 }, { "n", NULL, 1 }, { "block", NULL, 1 },
    { "shmem", s1_shmem, 1 }, { "wstyle", s1_wstyles, 0 }, { "loadfn", NULL, 0 }, { "kname", NULL, 0 }, { "names", NULL, 0 },
    { "tname", NULL, 0 }, { NULL, NULL, 0 } };
static const char *const s1_names[][2] = { { "in", "out" }, { "x", "y" }, { "signal", "filtered" }, { "input", "output" }, { "u", "result" } };
static const char *const s1_kn[] = { "stencil_1d", "stencil1D", "conv1d_shared", "apply_stencil" };

// Weights w[k + R] = num[k + R] / den.
static void s1_weights_of(const Task *t, int *num, int *den) {
    static const int box[3][7] = { { 1, 1, 1 }, { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1, 1, 1 } };
    static const int binom[3][7] = { { 1, 2, 1 }, { 1, 4, 6, 4, 1 }, { 1, 6, 15, 20, 15, 6, 1 } };
    static const int d2[3][7] = { { 1, -2, 1 }, { -1, 16, -30, 16, -1 }, { 2, -27, 270, -490, 270, -27, 2 } };
    static const int dens[3][3] = { { 3, 5, 7 }, { 4, 16, 64 }, { 1, 12, 180 } };
    int R = t->p[S1_R], w = t->p[S1_W];
    const int(*src)[7] = w == 0 ? box : w == 1 ? binom : d2;
    for (int k = 0; k < 2 * R + 1; k++) num[k] = src[R - 1][k];
    *den = dens[w][R - 1];
}

static void s1_draw(Task *t, Rng *r) {
    static const int ns[] = { 1000, 4096, 10000, 65536, 100000, 262144, 1000000 };
    static const int blocks[] = { 128, 256, 512 };
    t->p[S1_R] = rng_int(r, 1, 3);
    t->p[S1_W] = rng_int(r, 0, 2);
    t->p[S1_BOUND] = rng_int(r, 0, 1);
    t->p[S1_N] = ns[RPICK(r, ns)];
    t->p[S1_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[S1_SHMEM] = rng_int(r, 0, 2);
    t->p[S1_WSTYLE] = rng_int(r, 0, 1);
    t->p[S1_LOADFN] = rng_int(r, 0, 3);
    t->p[S1_KNAME] = rng_int(r, 0, 3);
    t->p[S1_NAMES] = rng_int(r, 0, NELEM(s1_names) - 1);
    t->p[S1_TNAME] = rng_int(r, 0, 2);
    snprintf(t->in[0].name, sizeof t->in[0].name, "%s", s1_names[t->p[S1_NAMES]][0]);
    snprintf(t->out[0].name, sizeof t->out[0].name, "%s", s1_names[t->p[S1_NAMES]][1]);
    snprintf(t->kname[0], sizeof t->kname[0], "%s", s1_kn[t->p[S1_KNAME]]);
    static const char *const loadn[] = { "load_at", "fetch", "read_halo", "sample" };
    snprintf(t->kname[1], sizeof t->kname[1], "%s", loadn[(t->p[S1_KNAME] + t->p[S1_NAMES]) % 4]);
    snprintf(t->slug, sizeof t->slug, "stencil1d");
}

static void s1_layout(Task *t) {
    t->nsize = 0;
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[S1_N]);
    tset(&t->in[0], DT_F32, 1, t->p[S1_N], 0);
    tfac(&t->in[0], n, -1);
    trange(&t->in[0], -1, 1, 0);
    tset(&t->out[0], DT_F32, 1, t->p[S1_N], 0);
    tfac(&t->out[0], n, -1);
    t->atol = 2e-5;
    t->rtol = 1e-5;
}

static void s1_describe(const Task *t, Buf *name, Buf *desc) {
    int num[7], den, R = t->p[S1_R];
    s1_weights_of(t, num, &den);
    static const char *const nm[3][3] = { { "Moving_Average_1D", "Box_Filter_1D", "Stencil_1D_Average" },
                                          { "Binomial_Smoothing_1D", "Gaussian_Stencil_1D", "Binomial_Filter_1D" },
                                          { "Second_Derivative_1D", "Laplacian_1D", "Finite_Difference_1D" } };
    buf_puts(name, nm[t->p[S1_W]][t->p[S1_TNAME]]);
    const char *x = t->in[0].name, *y = t->out[0].name;
    buf_printf(desc, "1-D stencil of radius %d over %d elements: %s[i] = (", R, t->p[S1_N], y);
    for (int k = -R; k <= R; k++) {
        int w = num[k + R];
        const char *term = k == 0 ? fmt("%s[i]", x) : fmt("%s[i%s%d]", x, k < 0 ? "-" : "+", k < 0 ? -k : k);
        if (k == -R) buf_printf(desc, "%s%s%s", w < 0 ? "-" : "", abs(w) == 1 ? "" : fmt("%d*", abs(w)), term);
        else buf_printf(desc, " %s %s%s", w < 0 ? "-" : "+", abs(w) == 1 ? "" : fmt("%d*", abs(w)), term);
    }
    buf_printf(desc, ")%s. ", den == 1 ? "" : fmt(" / %d", den));
    if (t->p[S1_BOUND] == 0) buf_printf(desc, "Elements outside [0, %d) count as 0. ", t->p[S1_N]);
    else buf_printf(desc, "Indices outside [0, %d) are clamped to the nearest end. ", t->p[S1_N]);
    buf_puts(desc, "Load each block's tile plus a halo into shared memory first.");
}

static void s1_kernels(const Task *t, Emit *e) {
    int num[7], den, R = t->p[S1_R], B = t->p[S1_BLOCK], sh = t->p[S1_SHMEM], lit = t->p[S1_WSTYLE], lf = t->p[S1_LOADFN];
    s1_weights_of(t, num, &den);
    const char *x = t->in[0].name, *y = t->out[0].name;
    const char *RAD = sh == 1 ? "RADIUS" : "RADIUS", *BS = sh == 0 ? "BLOCK_SIZE" : sh == 1 ? "BLOCK" : "blockDim.x";
    if (sh != 1) {
        em_line(e, "#define RADIUS %d", R);
        if (sh == 0) em_line(e, "#define BLOCK_SIZE %d", B);
        em_blank(e);
    }
    if (!lit) {
        em_comment(e, t, "Stencil weights, index k + radius for offset k.", 0);
        em_indent(e);
        em_fmt(e, "__constant__ float c_weights[%d] = {", 2 * R + 1);
        for (int k = 0; k < 2 * R + 1; k++) em_fmt(e, "%s%s", k ? ", " : " ", flit((double)(float)((double)num[k] / den)));
        em_raw(e, " };\n\n");
    }
    // the load with the boundary rule
    const char *load_zero = "(j >= 0 && j < n) ? %s[j] : 0.0f", *load_clamp = "%s[j < 0 ? 0 : (j >= n ? n - 1 : j)]";
    int bound = t->p[S1_BOUND];
    if (lf) {
        em_comment(e, t, bound == 0 ? "x[j], or 0 outside [0, n)." : "x[j] with j clamped to [0, n - 1].", 0);
        static const char *const spec[] = { "", "__device__ float", "__device__ __forceinline__ float", "static __device__ inline float" };
        em_fn_open(e, t, SPAN_DEVICE, "", spec[lf], t->kname[1], fmt("%s, int j, int n", ptr_param(t, "float", x, 1)));
        em_line(e, "return %s;", fmt(bound == 0 ? load_zero : load_clamp, x));
        em_fn_close(e);
        em_blank(e);
    }
    em_comment(e, t, fmt("%s[i] = weighted sum of %s[i - R .. i + R]; each block stages its tile and a halo of R on each side in shared memory.", y, x), 0);
    em_fn_open(e, t, SPAN_GLOBAL, sh == 1 ? "template <int BLOCK, int RADIUS>\n" : "", "__global__ void", t->kname[0],
               fmt("%s, %s, int n", ptr_param(t, "float", x, 1), ptr_param(t, "float", y, 0)));
    if (sh == 2) em_line(e, "extern __shared__ float tile[]; // blockDim.x + 2 * RADIUS floats");
    else em_line(e, "__shared__ float tile[%s + 2 * %s];", BS, RAD);
    em_line(e, "const int g = blockIdx.x * blockDim.x + threadIdx.x;");
    em_line(e, "const int l = threadIdx.x + %s;", RAD);
#define S1_LOAD(dst, jexpr)                                                                                 \
    do {                                                                                                    \
        if (lf) em_line(e, "%s = %s(%s, %s, n);", dst, t->kname[1], x, jexpr);                              \
        else {                                                                                              \
            em_line(e, "{");                                                                                \
            em_in(e);                                                                                       \
            em_line(e, "const int j = %s;", jexpr);                                                         \
            em_line(e, "%s = %s;", dst, fmt(bound == 0 ? load_zero : load_clamp, x));                       \
            em_out(e);                                                                                      \
            em_line(e, "}");                                                                                \
        }                                                                                                   \
    } while (0)
    em_note(e, t, "the element of this thread, then the halo on both sides");
    S1_LOAD("tile[l]", "g");
    em_line(e, "if (threadIdx.x < %s) {", RAD);
    em_in(e);
    S1_LOAD(fmt("tile[l - %s]", RAD), fmt("g - %s", RAD));
    S1_LOAD(fmt("tile[l + %s]", BS), fmt("g + %s", BS));
    em_out(e);
    em_line(e, "}");
#undef S1_LOAD
    em_line(e, "__syncthreads();");
    em_line(e, "if (g < n) {");
    em_in(e);
    if (!lit) {
        em_line(e, "float acc = 0.0f;");
        em_line(e, "#pragma unroll");
        em_line(e, "for (int k = -%s; k <= %s; ++k) acc += c_weights[k + %s] * tile[l + k];", RAD, RAD, RAD);
        em_line(e, "%s[g] = acc;", y);
    } else {
        Buf s = { 0 };
        for (int k = -R; k <= R; k++) {
            int w = num[k + R];
            const char *term = k == 0 ? "tile[l]" : fmt("tile[l %s %d]", k < 0 ? "-" : "+", k < 0 ? -k : k);
            const char *coef = abs(w) == 1 ? "" : fmt("%s * ", flit(abs(w)));
            if (k == -R) buf_printf(&s, "%s%s%s", w < 0 ? "-" : "", coef, term);
            else buf_printf(&s, " %s %s%s", w < 0 ? "-" : "+", coef, term);
        }
        em_line(e, "const float acc = %s;", buf_str(&s));
        buf_free(&s);
        if (den == 1) em_line(e, "%s[g] = acc;", y);
        else em_line(e, "%s[g] = acc / %s;", y, flit(den));
    }
    em_out(e);
    em_line(e, "}");
    em_fn_close(e);
}

static void s1_launch(const Task *t, Emit *e, const Host *h) {
    int B = t->p[S1_BLOCK], sh = t->p[S1_SHMEM];
    const char *args = fmt("%s, %s, %s", h->in[0], h->out[0], h->size[0]);
    if (sh == 0) {
        em_line(e, "const int blocks = (%s + BLOCK_SIZE - 1) / BLOCK_SIZE;", h->size[0]);
        em_launch(e, t->kname[0], "blocks, BLOCK_SIZE", args);
    } else if (sh == 1) {
        em_line(e, "const int blocks = (%s + %d) / %d;", h->size[0], B - 1, B);
        em_launch(e, fmt("%s<%d, %d>", t->kname[0], B, t->p[S1_R]), fmt("blocks, %d", B), args);
    } else {
        em_line(e, "const int threads = %d;", B);
        em_line(e, "const int blocks = (%s + threads - 1) / threads;", h->size[0]);
        em_line(e, "const size_t shmem = (threads + 2 * RADIUS) * sizeof(float);");
        em_launch(e, t->kname[0], "blocks, threads, shmem", args);
    }
}

static void s1_ref(const Task *t, const void *const *in, void *const *out) {
    int num[7], den, R = t->p[S1_R];
    s1_weights_of(t, num, &den);
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

static const Family fam_stencil1d = { "stencil_1d", "weighted 1-D stencil (radius 1-3) with a shared-memory tile and halo; zero or clamped ends",
                                      s1_params, NULL, s1_draw, s1_layout, s1_describe, s1_kernels, s1_launch, s1_ref };

// ----------------------------------------------------------------------------
// 2-D stencil

enum { S2_OP, S2_BOUND, S2_ROWS, S2_COLS, S2_BX, S2_BY, S2_SHARED, S2_TDEF, S2_KNAME, S2_NAMES, S2_TNAME, S2_DIMS, S2_DNAMES, S2_NP };
static const char *const s2_ops[] = { "avg5", "laplace5", "box9", "gauss9", NULL };
static const char *const s2_shared[] = { "global", "shared_tile", NULL };
static const ParamDesc s2_params[] = {
    { "op", s2_ops, 1 }, { "boundary", bound_names, 1 }, { "rows", NULL, 1 }, { "cols", NULL, 1 }, { "bx", NULL, 1 }, { "by", NULL, 1 }, { "shared", s2_shared, 1 },
    { "tdef", NULL, 0 }, { "kname", NULL, 0 }, { "names", NULL, 0 }, { "tname", NULL, 0 }, { "dims", NULL, 0 },
    { "dnames", NULL, 0 }, { NULL, NULL, 0 } };
static const int s2_sizes[][2] = { { 64, 64 }, { 100, 200 }, { 256, 256 }, { 480, 640 }, { 512, 512 },
                                   { 1000, 1000 }, { 768, 1024 }, { 1024, 1024 }, { 2048, 512 } };
static const int s2_bdims[][2] = { { 16, 16 }, { 32, 8 }, { 8, 8 }, { 32, 32 }, { 16, 8 }, { 32, 4 } };
static const char *const s2_names[][2] = { { "in", "out" }, { "u", "u_new" }, { "img", "blurred" }, { "src", "dst" },
                                           { "field", "result" }, { "input", "output" } };
static const char *const s2_dnames[][2] = { { "rows", "cols" }, { "height", "width" }, { "ny", "nx" } };
static const char *const s2_kn[4][4] = { { "jacobi5", "average5_kernel", "stencil5_avg", "jacobiStep" },
                                         { "laplacian5", "laplace_kernel", "stencil5_laplace", "laplacian2D" },
                                         { "box_blur3x3", "boxFilter3x3", "mean_filter", "blur9" },
                                         { "gaussian_blur3x3", "gaussBlur3x3", "gauss_filter", "smooth9" } };

static void s2_draw(Task *t, Rng *r) {
    t->p[S2_OP] = rng_int(r, 0, 3);
    t->p[S2_BOUND] = rng_int(r, 0, 2);
    int sz = rng_int(r, 0, NELEM(s2_sizes) - 1);
    t->p[S2_ROWS] = s2_sizes[sz][0];
    t->p[S2_COLS] = s2_sizes[sz][1];
    int bd = rng_int(r, 0, NELEM(s2_bdims) - 1);
    t->p[S2_BX] = s2_bdims[bd][0];
    t->p[S2_BY] = s2_bdims[bd][1];
    t->p[S2_SHARED] = rng_int(r, 0, 1);
    t->p[S2_TDEF] = rng_int(r, 0, 1);
    t->p[S2_KNAME] = rng_int(r, 0, 3);
    t->p[S2_NAMES] = rng_int(r, 0, NELEM(s2_names) - 1);
    t->p[S2_TNAME] = rng_int(r, 0, 2);
    t->p[S2_DIMS] = rng_int(r, 0, 3);
    t->p[S2_DNAMES] = rng_int(r, 0, 2);
    snprintf(t->in[0].name, sizeof t->in[0].name, "%s", s2_names[t->p[S2_NAMES]][0]);
    snprintf(t->out[0].name, sizeof t->out[0].name, "%s", s2_names[t->p[S2_NAMES]][1]);
    snprintf(t->kname[0], sizeof t->kname[0], "%s", s2_kn[t->p[S2_OP]][t->p[S2_KNAME]]);
    static const char *const at[] = { "at", "cell", "pixel", "load_cell" };
    snprintf(t->kname[1], sizeof t->kname[1], "%s", at[(t->p[S2_KNAME] + t->p[S2_NAMES]) % 4]);
    snprintf(t->slug, sizeof t->slug, "stencil2d");
}

static void s2_layout(Task *t) {
    const char *const *dn = s2_dnames[t->p[S2_DNAMES]];
    int R = t->p[S2_ROWS], C = t->p[S2_COLS];
    t->nsize = 0;
    int rr = add_size(t, dn[0], R), cc = add_size(t, dn[1], C);
    t->nin = t->nout = 1;
    tset(&t->in[0], DT_F32, 2, R, C);
    tfac(&t->in[0], rr, cc);
    trange(&t->in[0], t->p[S2_OP] >= 2 ? 0 : -1, 1, 0);
    tset(&t->out[0], DT_F32, 2, R, C);
    tfac(&t->out[0], rr, cc);
    t->atol = 1e-5;
    t->rtol = 1e-5;
}

static const int s2_w9[2][9] = { { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, { 1, 2, 1, 2, 4, 2, 1, 2, 1 } };

static void s2_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[4][3] = { { "Jacobi_Average_5pt", "Five_Point_Average", "Stencil_2D_Average" },
                                          { "Laplacian_5pt", "Discrete_Laplacian", "Five_Point_Laplacian" },
                                          { "Box_Blur_3x3", "Mean_Filter_3x3", "Box_Filter_2D" },
                                          { "Gaussian_Blur_3x3", "Gaussian_Smoothing_3x3", "Binomial_Blur_2D" } };
    buf_puts(name, nm[t->p[S2_OP]][t->p[S2_TNAME]]);
    const char *x = t->in[0].name, *y = t->out[0].name;
    int R = t->p[S2_ROWS], C = t->p[S2_COLS];
    buf_printf(desc, "%s is a %d x %d row-major grid (%d rows, %d columns). ", x, R, C, R, C);
    switch (t->p[S2_OP]) {
    case 0: buf_printf(desc, "Compute %s[r][c] = (%s[r][c] + %s[r-1][c] + %s[r+1][c] + %s[r][c-1] + %s[r][c+1]) / 5.", y, x, x, x, x, x); break;
    case 1: buf_printf(desc, "Compute the 5-point Laplacian %s[r][c] = %s[r-1][c] + %s[r+1][c] + %s[r][c-1] + %s[r][c+1] - 4 * %s[r][c].", y, x, x, x, x, x); break;
    case 2: buf_printf(desc, "Compute the 3x3 box blur: %s[r][c] is the mean of the 9 cells %s[r+dr][c+dc], dr, dc in {-1, 0, 1}.", y, x); break;
    default: buf_printf(desc, "Compute the 3x3 Gaussian blur with weights [[1, 2, 1], [2, 4, 2], [1, 2, 1]] / 16 over %s[r+dr][c+dc].", x); break;
    }
    switch (t->p[S2_BOUND]) {
    case 0: buf_puts(desc, " Cells outside the grid count as 0."); break;
    case 1: buf_puts(desc, " Coordinates outside the grid are clamped to the nearest edge cell."); break;
    default: buf_printf(desc, " Boundary cells (first and last row and column) are copied unchanged from %s.", x); break;
    }
    if (t->p[S2_SHARED]) buf_puts(desc, " Stage each block's tile with a one-cell halo in shared memory.");
}

// The stencil expression in terms of a cell accessor acc(dr, dc) given as a format with
// two %s (row offset, column offset): "tile[ly%s][lx%s]" or "at(in, r%s, c%s, rows, cols)".
static const char *s2_off(int d) { return d == 0 ? "" : d < 0 ? fmt(" - %d", -d) : fmt(" + %d", d); }

static void s2_body(const Task *t, Emit *e, const char *cellfmt, const char *dst) {
    int op = t->p[S2_OP];
#define CELL(dr, dc) fmt(cellfmt, s2_off(dr), s2_off(dc))
    if (op == 0) {
        em_line(e, "%s = (%s + %s + %s +", dst, CELL(0, 0), CELL(-1, 0), CELL(1, 0));
        em_line(e, "        %s + %s) / 5.0f;", CELL(0, -1), CELL(0, 1));
    } else if (op == 1) {
        em_line(e, "%s = %s + %s +", dst, CELL(-1, 0), CELL(1, 0));
        em_line(e, "        %s + %s - 4.0f * %s;", CELL(0, -1), CELL(0, 1), CELL(0, 0));
    } else {
        em_line(e, "float acc = 0.0f;");
        em_line(e, "for (int dr = -1; dr <= 1; ++dr) {");
        em_in(e);
        em_line(e, "for (int dc = -1; dc <= 1; ++dc) {");
        em_in(e);
        const char *c = fmt(cellfmt, " + dr", " + dc");
        if (op == 2) em_line(e, "acc += %s;", c);
        else em_line(e, "acc += c_gauss[dr + 1][dc + 1] * %s;", c);
        em_out(e);
        em_line(e, "}");
        em_out(e);
        em_line(e, "}");
        em_line(e, "%s = %s;", dst, op == 2 ? "acc / 9.0f" : "acc");
    }
#undef CELL
}

static void s2_kernels(const Task *t, Emit *e) {
    const char *const *dn = s2_dnames[t->p[S2_DNAMES]];
    const char *x = t->in[0].name, *y = t->out[0].name, *R = dn[0], *C = dn[1];
    int bx = t->p[S2_BX], by = t->p[S2_BY], shared = t->p[S2_SHARED], tmpl = t->p[S2_TDEF];
    int bound = t->p[S2_BOUND];
    const char *TX = tmpl ? "TX" : "TILE_X", *TY = tmpl ? "TY" : "TILE_Y";
    if (shared && !tmpl) {
        em_line(e, "#define TILE_X %d", bx);
        em_line(e, "#define TILE_Y %d", by);
        em_blank(e);
    }
    if (t->p[S2_OP] == 3) {
        em_comment(e, t, "3x3 Gaussian weights (sum 1).", 0);
        em_line(e, "__constant__ float c_gauss[3][3] = {");
        em_line(e, "    { 0.0625f, 0.125f, 0.0625f },");
        em_line(e, "    { 0.125f, 0.25f, 0.125f },");
        em_line(e, "    { 0.0625f, 0.125f, 0.0625f } };");
        em_blank(e);
    }
    // the cell loader (zero padding, or clamping); "copy" needs one only for the shared tile
    int need_at = bound != 2 || shared;
    if (need_at) {
        int b = bound == 1 ? 1 : 0;
        em_comment(e, t, b ? "The cell (r, c) with both coordinates clamped to the grid." : "The cell (r, c), or 0 outside the grid.", 0);
        em_fn_open(e, t, SPAN_DEVICE, "", t->st.allman ? "__device__ __forceinline__ float" : "__device__ float", t->kname[1],
                   fmt("%s, int r, int c, int %s, int %s", ptr_param(t, "float", x, 1), R, C));
        if (b) {
            em_line(e, "r = r < 0 ? 0 : (r >= %s ? %s - 1 : r);", R, R);
            em_line(e, "c = c < 0 ? 0 : (c >= %s ? %s - 1 : c);", C, C);
            em_line(e, "return %s[r * %s + c];", x, C);
        } else {
            em_line(e, "if (r < 0 || r >= %s || c < 0 || c >= %s) return 0.0f;", R, C);
            em_line(e, "return %s[r * %s + c];", x, C);
        }
        em_fn_close(e);
        em_blank(e);
    }
    em_comment(e, t, shared ? "One thread per output cell; the block's tile plus a one-cell halo is staged in shared memory."
                            : "One thread per output cell, reading its neighbours from global memory.", 0);
    em_fn_open(e, t, SPAN_GLOBAL, shared && tmpl ? "template <int TX, int TY>\n" : "", "__global__ void", t->kname[0],
               fmt("%s, %s, int %s, int %s", ptr_param(t, "float", x, 1), ptr_param(t, "float", y, 0), R, C));
    if (shared) {
        em_line(e, "__shared__ float tile[%s + 2][%s + 2];", TY, TX);
        em_line(e, "const int r0 = blockIdx.y * %s, c0 = blockIdx.x * %s;", TY, TX);
        em_note(e, t, "cooperative load of the tile and its halo");
        em_line(e, "for (int ty = threadIdx.y; ty < %s + 2; ty += %s) {", TY, TY);
        em_in(e);
        em_line(e, "for (int tx = threadIdx.x; tx < %s + 2; tx += %s) {", TX, TX);
        em_in(e);
        em_line(e, "tile[ty][tx] = %s(%s, r0 + ty - 1, c0 + tx - 1, %s, %s);", t->kname[1], x, R, C);
        em_out(e);
        em_line(e, "}");
        em_out(e);
        em_line(e, "}");
        em_line(e, "__syncthreads();");
        em_line(e, "const int r = r0 + threadIdx.y, c = c0 + threadIdx.x;");
    } else {
        em_line(e, "const int c = blockIdx.x * blockDim.x + threadIdx.x;");
        em_line(e, "const int r = blockIdx.y * blockDim.y + threadIdx.y;");
    }
    em_line(e, "if (r >= %s || c >= %s) return;", R, C);
    const char *dst = fmt("%s[r * %s + c]", y, C);
    if (bound == 2) {
        em_line(e, "if (r == 0 || c == 0 || r == %s - 1 || c == %s - 1) {", R, C);
        em_in(e);
        em_line(e, "%s = %s[r * %s + c];", dst, x, C);
        em_line(e, "return;");
        em_out(e);
        em_line(e, "}");
    }
    char cellfmt[160];
    if (shared) {
        em_line(e, "const int ly = threadIdx.y + 1, lx = threadIdx.x + 1;");
        snprintf(cellfmt, sizeof cellfmt, "tile[ly%%s][lx%%s]");
    } else if (bound == 2) {
        snprintf(cellfmt, sizeof cellfmt, "%s[(r%%s) * %s + (c%%s)]", x, C);
    } else {
        snprintf(cellfmt, sizeof cellfmt, "%s(%s, r%%s, c%%s, %s, %s)", t->kname[1], x, R, C);
    }
    s2_body(t, e, cellfmt, dst);
    em_fn_close(e);
}

static void s2_launch(const Task *t, Emit *e, const Host *h) {
    int bx = t->p[S2_BX], by = t->p[S2_BY];
    const char *R = h->size[0], *C = h->size[1];
    const char *k = t->p[S2_SHARED] && t->p[S2_TDEF] ? fmt("%s<%d, %d>", t->kname[0], bx, by) : t->kname[0];
    const char *args = fmt("%s, %s, %s, %s", h->in[0], h->out[0], R, C);
    const char *bxs = t->p[S2_SHARED] && !t->p[S2_TDEF] ? "TILE_X" : fmt("%d", bx);
    const char *bys = t->p[S2_SHARED] && !t->p[S2_TDEF] ? "TILE_Y" : fmt("%d", by);
    switch (t->p[S2_DIMS]) {
    case 0:
        em_dim3(e, NULL, fmt("block(%s, %s)", bxs, bys));
        em_dim3(e, NULL, fmt("grid((%s + block.x - 1) / block.x, (%s + block.y - 1) / block.y)", C, R));
        em_launch(e, k, "grid, block", args);
        break;
    case 1:
        em_dim3(e, "const", fmt("threads(%s, %s)", bxs, bys));
        em_dim3(e, "const", fmt("blocks((%s + %s - 1) / %s, (%s + %s - 1) / %s)", C, bxs, bxs, R, bys, bys));
        em_launch(e, k, "blocks, threads", args);
        break;
    case 2:
        em_dim3(e, NULL, fmt("block(%s, %s), grid((%s + %s - 1) / %s, (%s + %s - 1) / %s)", bxs, bys, C, bxs, bxs, R, bys, bys));
        em_launch(e, k, "grid, block", args);
        break;
    default:
        em_dim3(e, NULL, fmt("block_dim(%s, %s)", bxs, bys));
        em_dim3(e, NULL, "grid_dim");
        em_line(e, "grid_dim.x = (%s + block_dim.x - 1) / block_dim.x;", C);
        em_line(e, "grid_dim.y = (%s + block_dim.y - 1) / block_dim.y;", R);
        em_launch(e, k, "grid_dim, block_dim", args);
        break;
    }
}

static void s2_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *y = out[0];
    long R = t->p[S2_ROWS], C = t->p[S2_COLS];
    int op = t->p[S2_OP], bound = t->p[S2_BOUND];
    for (long r = 0; r < R; r++)
        for (long c = 0; c < C; c++) {
            if (bound == 2 && (r == 0 || c == 0 || r == R - 1 || c == C - 1)) { y[r * C + c] = x[r * C + c]; continue; }
            double v[3][3];
            for (int dr = -1; dr <= 1; dr++)
                for (int dc = -1; dc <= 1; dc++) {
                    long rr = r + dr, cc = c + dc;
                    if (bound == 1) { rr = rr < 0 ? 0 : rr >= R ? R - 1 : rr; cc = cc < 0 ? 0 : cc >= C ? C - 1 : cc; }
                    v[dr + 1][dc + 1] = rr >= 0 && rr < R && cc >= 0 && cc < C ? x[rr * C + cc] : 0.0;
                }
            double s;
            if (op == 0) s = (v[1][1] + v[0][1] + v[2][1] + v[1][0] + v[1][2]) / 5;
            else if (op == 1) s = v[0][1] + v[2][1] + v[1][0] + v[1][2] - 4 * v[1][1];
            else {
                s = 0;
                for (int k = 0; k < 9; k++) s += s2_w9[op - 2][k] * v[k / 3][k % 3];
                s /= op == 2 ? 9 : 16;
            }
            y[r * C + c] = (float)s;
        }
}

static const Family fam_stencil2d = { "stencil_2d", "5-point average/Laplacian and 3x3 box/Gaussian blur on a 2-D grid; dim3 launch, optional shared tile",
                                      s2_params, NULL, s2_draw, s2_layout, s2_describe, s2_kernels, s2_launch, s2_ref };

static const Family *const families_stencil[] = { &fam_stencil1d, &fam_stencil2d, NULL };
