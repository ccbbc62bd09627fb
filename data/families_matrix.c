// families_matrix.c - dense matrix families: transposes (naive, through a padded shared tile),
// 2-D element-wise operations, matrix products (naive, shared-memory tiled, batched over
// blockIdx.z), matrix-vector products (a thread or a warp per row), vector-matrix and outer
// products. The helpers (mx_*) serve families_conv.c and families_pipeline.c too.
//
// Conventions: kernel parameters and locals are lower case, so they never meet a size
// constant spelled as a macro (#define ROWS ...); kernel macros and template parameters
// (TILE_DIM, BLOCK_ROWS, ...) never equal an upper-cased size name; tensors are never named
// M, N or K. A kernel's parameters are the task's tensors (kernel_params), then its sizes.

// ----------------------------------------------------------------------------
// Shared helpers

static const char *const mx_dtypes[] = { "float32", "int32", NULL };
static const int mx_bdims[][2] = { { 16, 16 }, { 32, 8 }, { 8, 8 }, { 32, 32 }, { 16, 8 }, { 32, 4 }, { 64, 4 } };
// Matrix sides (a pick list): powers of two and sizes that no block or tile divides.
#define MX_SIDES "64 100 128 250 256 300 500 512 640 768 1000 1024 1500 2048"
static const char *const mx_dnames[][2] = { { "rows", "cols" }, { "height", "width" }, { "ny", "nx" }, { "m", "n" } };

// Draws the sides of a matrix of 4,096 to 4,200,000 elements.
static void mx_draw_rc(Rng *r, int *rows, int *cols) {
    do {
        *rows = rng_pick(r, MX_SIDES);
        *cols = rng_pick(r, MX_SIDES);
    } while ((long)*rows * *cols > 4200000 || (long)*rows * *cols < 4096);
}

// A float32 tensor of shape [d0, d1] (or [d0] when d1 = 0) with size[f0] * size[f1]
// elements (f1 < 0: size[f0]); an input when range > 0, its values in [-range, range).
static void mx_f32(Tensor *x, long d0, long d1, int f0, int f1, double range) {
    tshape(x, DT_F32, d1 ? 2 : 1, d0, d1, f0, f1);
    if (range > 0) trange(x, -range, range, 0);
}
// The start of a layout: nin inputs, one output, the size constants dn[0], dn[1] (and dn[2]
// when v2 > 0) = v0, v1, v2.
static void mx_begin(Task *t, int nin, const char *const *dn, long v0, long v1, long v2) {
    t->nin = nin;
    t->nout = 1;
    add_size(t, dn[0], v0);
    add_size(t, dn[1], v1);
    if (v2 > 0) add_size(t, dn[2], v2);
}

// Parameter name of the task (0 if its family has none), for functions shared by families with
// other parameters.
static int mx_par(const Task *t, const char *name) {
    int k = param_index(t->fam, name);
    return k < 0 ? 0 : t->p[k];
}

// Tolerance of outputs that are float32 sums of len terms of magnitude up to mag, added in an
// order the reference (which sums in double) does not know. The rounding errors of a running
// float sum grow like a random walk over the partial sums, about 2^-25 * sigma * len with sigma
// ~ mag / 3 for terms of both signs; this allows ~20 times that, plus a relative 1e-5 for the
// last roundings and sums of one sign.
static void mx_sum_tol(Task *t, long len, double mag) {
    t->atol = mag * (1e-6 + 1.2e-7 * (double)len);
    t->rtol = 1e-5;
}
// Relative error allowance of a float sum of n values reduced on the GPU (per-thread
// partial sums, block trees or shuffles, atomics or a second pass over the partials).
static double mx_red_rel(long n) { return 2e-6 + 2e-8 * sqrt((double)n); }

// body under a bounds guard: if (in) { body } (early = 0) or an early return (early = 1).
static const char *const mx_guard_tpl[] = { R"(
if ($in) {
    $body
}
)", R"(
if ($out) return;
$body
)" };
static const char *mx_guard(int early, const char *cond_in, const char *cond_out, const char *body) {
    return FRAG(mx_guard_tpl[early], "in", cond_in, "out", cond_out, "body", body);
}

// The 2-D thread coordinates: the column from x, the row from y (or swapped).
static const char *mx_index2d(const Task *t, const char *rv, const char *cv, int swap) {
    int tfirst = t->st.idxname & 1; // threadIdx first
    const char *xs = tfirst ? "threadIdx.x + blockIdx.x * blockDim.x" : "blockIdx.x * blockDim.x + threadIdx.x";
    const char *ys = tfirst ? "threadIdx.y + blockIdx.y * blockDim.y" : "blockIdx.y * blockDim.y + threadIdx.y";
    const char *a = swap ? rv : cv, *b = swap ? cv : rv, *q = t->st.idxname == 3 ? "" : "const ";
    if (t->st.idxname == 2) return fmt("const int %s = %s, %s = %s;", a, xs, b, ys);
    return fmt("%sint %s = %s;\n%sint %s = %s;", q, a, xs, q, b, ys);
}

// The elements (rv, cv) of an R x C matrix in a 2-D kernel, around stmt: one thread per
// element behind a guard (if, or an early return: early), or grid-stride loops in both
// directions (stride). swap: thread x runs along rows.
static const char *const mx_loop2d_tpl[] = { R"(
$index
$guarded
)", R"(
for (int $outer = blockIdx.y * blockDim.y + threadIdx.y; $outer < $olen; $outer += blockDim.y * gridDim.y) {
    for (int $inner = blockIdx.x * blockDim.x + threadIdx.x; $inner < $ilen; $inner += blockDim.x * gridDim.x) {
        $stmt
    }
}
)" };
static const char *mx_loop2d(const Task *t, int stride, int early, int swap, const char *rv, const char *cv,
                             const char *R, const char *C, const char *stmt) {
    return FRAG(mx_loop2d_tpl[stride], "index", mx_index2d(t, rv, cv, swap),
                "guarded", stride ? "" : mx_guard(early, fmt("%s < %s && %s < %s", rv, R, cv, C),
                                                  fmt("%s >= %s || %s >= %s", rv, R, cv, C), stmt),
                "stmt", stmt,
                "outer", swap ? cv : rv, "inner", swap ? rv : cv, "olen", swap ? C : R, "ilen", swap ? R : C);
}
// The same with a 1-D launch over the flat index (loop: a loop_frag style), the row rv and
// column cv from / and %.
static const char mx_flat_tpl[] = R"(
const int total = $R * $C;
$loop
)";
static const char *mx_flat(const Task *t, int loop, const char *rv, const char *cv, const char *R, const char *C,
                           const char *stmt) {
    const char *i = IDX(t), *split = t->st.idxtype ? "const int %s = (int)(%s / %s), %s = (int)(%s %% %s);"
                                                   : "const int %s = %s / %s, %s = %s %% %s;";
    return FRAG(mx_flat_tpl, "R", R, "C", C,
                "loop", loop_frag(t, loop, "total", fmt("%s\n%s", fmt(split, rv, i, C, cv, i, C), stmt)));
}

// A thread's dot product: acc starts at init, step adds term p (p < len), out gets the sum.
static const char mx_dot_tpl[] = R"(
float acc = $init;
for (int $p = 0; $p < $len; ++$p) {
    $step
}
$out = acc;
)";

// launch_2d with blocks of mx_bdims[bdim] threads (l.bx and l.by set here).
static void mx_launch_bd(Emit *e, const Task *t, int bdim, Launch2D l) {
    l.bx = fmt("%d", mx_bdims[bdim][0]);
    l.by = fmt("%d", mx_bdims[bdim][1]);
    launch_2d(e, t, l);
}

// ----------------------------------------------------------------------------
// Transposes: in (R, C) float32 or int32 -> out (C, R), an exact copy. Both families have the
// parameters dtype, rows, cols first, and share the task (layout, ref), the tensor names and
// part of the description.

enum { MXT_DT, MXT_ROWS, MXT_COLS };
static const char *const mxt_names[] = { "in out", "src dst", "A A_t", "mat mat_t", "input transposed", "a b" };

static void mxt_layout(Task *t) {
    long R = t->p[MXT_ROWS], C = t->p[MXT_COLS];
    DType dt = t->p[MXT_DT] ? DT_I32 : DT_F32;
    mx_begin(t, 1, mx_dnames[mx_par(t, "dnames")], R, C, 0);
    tshape(&t->in[0], dt, 2, R, C, 0, 1);
    if (dt == DT_I32) trange(&t->in[0], -1000000, 1000000, 1);
    else trange(&t->in[0], -100, 100, 0);
    tshape(&t->out[0], dt, 2, C, R, 1, 0);
    t->atol = t->rtol = 0; // a copy: exact
}

// The first sentence of the description (the tiled transpose's is shorter).
static void mxt_describe_task(const Task *t, Buf *desc, int tiled) {
    const char *x = t->in[0].name, *y = t->out[0].name;
    int R = t->p[MXT_ROWS], C = t->p[MXT_COLS];
    buf_printf(desc, "%s is %s x %d row-major %s matrix%s its transpose to %s (%d x %d%s): %s[c][r] = %s[r][c].", x,
               a_num(R), C, t->p[MXT_DT] ? "int32" : "float32", tiled ? "; write" : ". Write", y, C, R,
               tiled ? "" : ", row-major", y, x);
}

static void mxt_ref(const Task *t, const void *const *in, void *const *out) {
    long R = t->p[MXT_ROWS], C = t->p[MXT_COLS];
    for (long r = 0; r < R; r++)
        for (long c = 0; c < C; c++) memcpy((char *)out[0] + 4 * (c * R + r), (const char *)in[0] + 4 * (r * C + c), 4);
}

// ----------------------------------------------------------------------------
// Naive transpose: one thread per element

enum { MXTN_DT, MXTN_ROWS, MXTN_COLS, MXTN_MODE, MXTN_BDIM, MXTN_BLOCK, MXTN_MAP, MXTN_GUARD, MXTN_CAP, MXTN_DIMS,
       MXTN_KNAME, MXTN_NAMES, MXTN_TNAME, MXTN_DNAMES, MXTN_NP };
static const char *const mxtn_modes[] = { "grid_2d", "flat_1d", "grid_stride_2d", NULL };
static const char *const mxtn_maps[] = { "x_along_cols", "x_along_rows", NULL };
static const ParamDesc mxtn_params[] = {
    [MXTN_DT] = { "dtype", mx_dtypes, 1, "0 0 0 0 0 0 0 1 1 1" }, [MXTN_ROWS] = { "rows", NULL, 1, NULL },
    [MXTN_COLS] = { "cols", NULL, 1, NULL }, [MXTN_MODE] = { "mode", mxtn_modes, 1, "*" },
    [MXTN_BDIM] = { "bdim", NULL, 1, NULL }, [MXTN_BLOCK] = { "block", NULL, 1, NULL },
    [MXTN_MAP] = { "map", mxtn_maps, 0, NULL }, [MXTN_GUARD] = { "guard", NULL, 0, NULL },
    [MXTN_CAP] = { "cap", NULL, 0, NULL }, [MXTN_DIMS] = { "dims", NULL, 0, "0..3" },
    [MXTN_KNAME] = { "kname", NULL, 0, "0..3" }, [MXTN_NAMES] = { "names", NULL, 0, "0..5" },
    [MXTN_TNAME] = { "tname", NULL, 0, "0..2" }, [MXTN_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXTN_NP] = { NULL } };
static const char *const mxtn_kn[] = { "transpose_naive", "transposeNaive", "transpose_kernel", "naive_transpose" };

static void mxtn_draw(Task *t, Rng *r) {
    mx_draw_rc(r, &t->p[MXTN_ROWS], &t->p[MXTN_COLS]);
    if (t->p[MXTN_MODE] == 1) { // flat 1-D: a loop style of loop_frag
        t->p[MXTN_BLOCK] = rng_pick(r, "64 128 256 256 512");
        t->p[MXTN_GUARD] = rng_int(r, 0, 2);
        t->p[MXTN_CAP] = t->p[MXTN_GUARD] == LOOP_GRID ? rng_pick(r, "1024 2048 4096") : 0;
    } else {
        t->p[MXTN_BDIM] = rng_int(r, 0, NELEM(mx_bdims) - 1);
        t->p[MXTN_GUARD] = t->p[MXTN_MODE] == 0 ? rng_int(r, 0, 1) : 0;
        t->p[MXTN_CAP] = t->p[MXTN_MODE] == 2 ? rng_pick(r, "16 32 64 128") : 0;
        t->p[MXTN_MAP] = rng_pick(r, "0 0 0 1");
    }
    task_names(t, 1, mxt_names[t->p[MXTN_NAMES]], mxtn_kn[t->p[MXTN_KNAME]], "transpose");
}

static void mxtn_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, pick3(t->p[MXTN_TNAME], "Matrix_Transpose", "Naive_Transpose", "Transpose_2D"));
    mxt_describe_task(t, desc, 0);
    buf_puts(desc, pick3(t->p[MXTN_MODE],
                         " One thread per element on a 2-D grid of 2-D blocks (dim3), reading and writing global "
                         "memory directly.",
                         " Use a 1-D launch over the flat element index and recover the row and column with / and %.",
                         " Use a 2-D grid of 2-D blocks (dim3) with grid-stride loops in both directions; the grid "
                         "may be smaller than the matrix."));
}

static void mxtn_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[MXTN_DNAMES]];
    const char *x = t->in[0].name, *y = t->out[0].name, *R = dn[0], *C = dn[1];
    int mode = t->p[MXTN_MODE], sw = t->p[MXTN_MAP];
    const char *copy = fmt("%s[col * %s + row] = %s[row * %s + col];", y, R, x, C);
    const char *body = mode == 1 ? mx_flat(t, t->p[MXTN_GUARD], "r", "c", R, C,
                                           fmt("%s[(size_t)c * %s + r] = %s[%s];", y, R, x, IDX(t)))
                                 : mx_loop2d(t, mode == 2, t->p[MXTN_GUARD], sw, "row", "col", R, C, copy);
    const char *what = sw && mode != 1
                           ? "Thread x runs along the input rows, so the writes are coalesced and the reads strided."
                           : pick3(mode, "One thread per element: reads are coalesced along a row, writes are strided.",
                                   "One thread per element of the flat index; row = i / cols, column = i % cols.",
                                   "2-D grid-stride loops: each thread transposes several elements.");
    emit_kernel(e, t, "", "", fmt("%s[c][r] = %s[r][c]. %s", y, x, what), fmt("int %s, int %s", R, C), body);
}

static void mxtn_launch(const Task *t, Emit *e, const Host *h) {
    const char *R = h->size[0], *C = h->size[1];
    int sw = t->p[MXTN_MAP];
    if (t->p[MXTN_MODE] == 1)
        launch_1d(e, t, t->kname[0], fmt("%s * %s", R, C), t->p[MXTN_BLOCK], t->p[MXTN_CAP], kernel_args(h, 2));
    else mx_launch_bd(e, t, t->p[MXTN_BDIM], (Launch2D){ .dims = t->p[MXTN_DIMS], .xc = sw ? R : C, .yc = sw ? C : R,
                                                         .ycap = t->p[MXTN_CAP], .args = kernel_args(h, 2) });
}

static const Family fam_mx_transpose_naive = {
    "transpose_naive",
    "matrix transpose, one thread per element: 2-D dim3 grid, flat 1-D index, or 2-D grid-stride; float32 or int32",
    mxtn_params, NULL, mxtn_draw, mxt_layout, mxtn_describe, mxtn_kernels, mxtn_launch, mxt_ref };

// ----------------------------------------------------------------------------
// Transpose through a shared-memory tile padded by one column

enum { MXTT_DT, MXTT_ROWS, MXTT_COLS, MXTT_TILE, MXTT_BROWS, MXTT_TDEF, MXTT_DIMS, MXTT_KNAME, MXTT_NAMES, MXTT_TNAME,
       MXTT_DNAMES, MXTT_VARS, MXTT_NP };
static const char *const mx_tdefs[] = { "define", "template", "constexpr", NULL };
static const ParamDesc mxtt_params[] = {
    [MXTT_DT] = { "dtype", mx_dtypes, 1, "0 0 0 1" }, [MXTT_ROWS] = { "rows", NULL, 1, NULL },
    [MXTT_COLS] = { "cols", NULL, 1, NULL }, [MXTT_TILE] = { "tile", NULL, 1, "16 32" },
    [MXTT_BROWS] = { "block_rows", NULL, 1, "0 8 4 8" }, [MXTT_TDEF] = { "tdef", mx_tdefs, 0, "*" },
    [MXTT_DIMS] = { "dims", NULL, 0, "0..3" }, [MXTT_KNAME] = { "kname", NULL, 0, "0..3" },
    [MXTT_NAMES] = { "names", NULL, 0, "0..5" }, [MXTT_TNAME] = { "tname", NULL, 0, "0..2" },
    [MXTT_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXTT_VARS] = { "vars", NULL, 0, "0..1" }, [MXTT_NP] = { NULL } };
static const char *const mxtt_kn[] = { "transpose_shared", "transposeCoalesced", "transpose_tiled", "smem_transpose" };

static void mxtt_draw(Task *t, Rng *r) {
    mx_draw_rc(r, &t->p[MXTT_ROWS], &t->p[MXTT_COLS]);
    if (t->p[MXTT_BROWS] == 0) t->p[MXTT_BROWS] = t->p[MXTT_TILE]; // the full tile: one element per thread
    task_names(t, 1, mxt_names[t->p[MXTT_NAMES]], mxtt_kn[t->p[MXTT_KNAME]], "transpose_tiled");
}

static void mxtt_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, pick3(t->p[MXTT_TNAME], "Shared_Memory_Transpose", "Tiled_Transpose", "Coalesced_Transpose"));
    int R = t->p[MXTT_ROWS], C = t->p[MXTT_COLS], T = t->p[MXTT_TILE], B = t->p[MXTT_BROWS];
    mxt_describe_task(t, desc, 1);
    buf_printf(desc, " Stage %d x %d tiles in shared memory padded to %d columns (avoids bank conflicts) so that both "
                     "the global reads and the global writes are coalesced; ", T, T, T + 1);
    buf_printf(desc, "blocks of %d x %d threads (dim3), %s.", T, B,
               B == T ? "one element per thread" : fmt("each thread moving %d elements of its tile column", T / B));
    if (R % T || C % T) buf_puts(desc, " The sides are not multiples of the tile: guard every load and store.");
}

static const char mxtt_body_tpl[] = R"(
__shared__ $ct tile[$TD][$TD + 1];
int $xv = blockIdx.x * $TD + threadIdx.x;
int $yv = blockIdx.y * $TD + threadIdx.y;
//? load the tile: thread (tx, ty) reads row y + j, column x
$load
__syncthreads();
//? the transposed block: swap the block indices, read the tile by column
$xv = blockIdx.y * $TD + threadIdx.x;
$yv = blockIdx.x * $TD + threadIdx.y;
$store
)";
// One element per thread, or BLOCK_ROWS rows of the tile at a time.
static const char *const mxtt_move_tpl[] = { R"(
if ($xv < $xlen && $yv < $ylen) $to = $from;
)", R"(
for (int j = 0; j < $TD; j += BLOCK_ROWS) {
    if ($xv < $xlen && $yv + j < $ylen) $to = $from;
}
)" };

// Element (row yv (+ j when not full), column xv) of a matrix m with len columns.
static const char *mxtt_elem(int full, const char *m, const char *yv, const char *len, const char *xv) {
    return full ? fmt("%s[%s * %s + %s]", m, yv, len, xv) : fmt("%s[(%s + j) * %s + %s]", m, yv, len, xv);
}
static void mxtt_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[MXTT_DNAMES]];
    const char *ct = t->p[MXTT_DT] ? "int" : "float", *x = t->in[0].name, *y = t->out[0].name, *R = dn[0], *C = dn[1];
    int T = t->p[MXTT_TILE], B = t->p[MXTT_BROWS], td = t->p[MXTT_TDEF], full = B == T;
    const char *TD = td == 1 ? "TILE" : "TILE_DIM", *xv = t->p[MXTT_VARS] ? "x" : "col",
               *yv = t->p[MXTT_VARS] ? "y" : "row";
    const char *f = td == 0 ? "#define %s %d\n" : "constexpr int %s = %d;\n", *j = full ? "" : " + j";
    const char *defines = td == 1 ? "" : fmt("%s%s\n", fmt(f, "TILE_DIM", T), full ? "" : fmt(f, "BLOCK_ROWS", B));
    const char *load = FRAG(mxtt_move_tpl[!full], "xv", xv, "yv", yv, "xlen", C, "ylen", R, "TD", TD,
                            "to", fmt("tile[threadIdx.y%s][threadIdx.x]", j), "from", mxtt_elem(full, x, yv, C, xv));
    const char *store = FRAG(mxtt_move_tpl[!full], "xv", xv, "yv", yv, "xlen", R, "ylen", C, "TD", TD,
                             "to", mxtt_elem(full, y, yv, R, xv), "from", fmt("tile[threadIdx.x][threadIdx.y%s]", j));
    emit_kernel(e, t, defines,
                td != 1 ? "" : full ? "template <int TILE>" : "template <int TILE, int BLOCK_ROWS>",
                fmt("Transpose through a shared tile: coalesced reads of %s, coalesced writes of %s. The extra column "
                    "of the tile puts the elements of a tile column in different banks.", x, y),
                fmt("int %s, int %s", R, C),
                FRAG(mxtt_body_tpl, "ct", ct, "TD", TD, "xv", xv, "yv", yv, "load", load, "store", store));
}

static void mxtt_launch(const Task *t, Emit *e, const Host *h) {
    int T = t->p[MXTT_TILE], B = t->p[MXTT_BROWS], tmpl = t->p[MXTT_TDEF] == 1, full = B == T;
    const char *k = !tmpl ? t->kname[0] : full ? fmt("%s<%d>", t->kname[0], T) : fmt("%s<%d, %d>", t->kname[0], T, B);
    const char *bx = tmpl ? fmt("%d", T) : "TILE_DIM", *by = tmpl ? fmt("%d", B) : full ? "TILE_DIM" : "BLOCK_ROWS";
    // the grid covers tiles of TILE x TILE, not blocks of threads
    launch_2d(e, t, (Launch2D){ .dims = t->p[MXTT_DIMS], .k = k, .bx = bx, .by = by, .tx = bx, .ty = full ? NULL : bx,
                                .xc = h->size[1], .yc = h->size[0], .args = kernel_args(h, 2) });
}

static const Family fam_mx_transpose_tiled = {
    "transpose_tiled",
    "transpose through a TILE x (TILE+1) shared tile (tile 16/32, 1-4 rows"
    " per thread), dim3 grid, ragged sides guarded",
    mxtt_params, NULL, mxtt_draw, mxt_layout, mxtt_describe, mxtt_kernels, mxtt_launch, mxt_ref };

// ----------------------------------------------------------------------------
// Element-wise matrix operations on a 2-D grid

enum { MXME_OP, MXME_ROWS, MXME_COLS, MXME_MODE, MXME_BDIM, MXME_GUARD, MXME_CAP, MXME_COEF, MXME_HELPER, MXME_DIMS,
       MXME_KNAME, MXME_NAMES, MXME_TNAME, MXME_DNAMES, MXME_NP };
static const char *const mxme_ops[] = { "add", "sub", "mul", "scale", "axpby", NULL };
static const char *const mxme_modes[] = { "grid_2d", "grid_stride_2d", NULL };
static const char *const mxme_coefs[] = { "literal", "kernel_arg", NULL };
static const ParamDesc mxme_params[] = {
    [MXME_OP] = { "op", mxme_ops, 1, "*" }, [MXME_ROWS] = { "rows", NULL, 1, NULL },
    [MXME_COLS] = { "cols", NULL, 1, NULL }, [MXME_MODE] = { "mode", mxme_modes, 1, "0 0 1" },
    [MXME_BDIM] = { "bdim", NULL, 1, "0..6" }, [MXME_GUARD] = { "guard", NULL, 0, NULL },
    [MXME_CAP] = { "cap", NULL, 0, NULL }, [MXME_COEF] = { "coef", mxme_coefs, 0, NULL },
    [MXME_HELPER] = { "helper", NULL, 0, "0..2" }, [MXME_DIMS] = { "dims", NULL, 0, "0..3" },
    [MXME_KNAME] = { "kname", NULL, 0, "0..3" }, [MXME_NAMES] = { "names", NULL, 0, "0..4" },
    [MXME_TNAME] = { "tname", NULL, 0, "0..2" }, [MXME_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXME_NP] = { NULL } };
// the inputs a and b (a unary operation has only a), the output
static const char *const mxme_names[] = { "A B C", "x y z", "lhs rhs out", "mat_a mat_b result", "P Q S" };
// The operations (in the order of mxme_ops): the formula as a printf format of (a, b) or,
// scaled ones, of (alpha, a) and (alpha, a, beta, b); kernel names; task names.
static const struct {
    const char *formula, *kn[4], *tn[3];
} mxme_op[] = {
    { "%s + %s", { "matrix_add", "matAdd2D", "add_matrices", "madd_kernel" },
      { "Matrix_Addition", "Matrix_Add_2D", "Elementwise_Matrix_Sum" } },
    { "%s - %s", { "matrix_sub", "matSub2D", "subtract_matrices", "msub_kernel" },
      { "Matrix_Subtraction", "Matrix_Sub_2D", "Elementwise_Matrix_Difference" } },
    { "%s * %s", { "matrix_hadamard", "matMul2DElementwise", "hadamard_product", "emul_kernel" },
      { "Hadamard_Product", "Elementwise_Matrix_Product", "Matrix_Multiply_Elementwise" } },
    { "%s * %s", { "matrix_scale", "matScale2D", "scale_matrix", "mscale_kernel" },
      { "Matrix_Scale", "Scale_Matrix_2D", "Matrix_Scalar_Multiply" } },
    { "%s * %s + %s * %s", { "matrix_axpby", "matAxpby2D", "axpby_matrices", "axpby_kernel" },
      { "Matrix_AXPBY", "Scaled_Matrix_Sum", "Linear_Combination_Of_Matrices" } } };
static const char *const mxme_fp[] = { "alpha", "beta", NULL };
enum { MX_F_A, MX_F_B };
static const double mxme_alphas[] = { 0.5, 2, -1.25, 1.5, 0.25, 3, -0.75 };
static const double mxme_betas[] = { 0.75, -1.5, 0.5, 2, -2.5 };

static int mxme_binary(const Task *t) { return t->p[MXME_OP] != 3; }

static void mxme_draw(Task *t, Rng *r) {
    static const char *const hn[] = { "combine", "elem_op", "apply_op", "op2" };
    int op = t->p[MXME_OP];
    mx_draw_rc(r, &t->p[MXME_ROWS], &t->p[MXME_COLS]);
    t->p[MXME_GUARD] = t->p[MXME_MODE] == 0 ? rng_int(r, 0, 1) : 0;
    t->p[MXME_CAP] = t->p[MXME_MODE] == 1 ? rng_pick(r, "16 32 64 128") : 0;
    t->p[MXME_COEF] = op >= 3 ? rng_int(r, 0, 1) : 0;
    t->f[MX_F_A] = op >= 3 ? mxme_alphas[RPICK(r, mxme_alphas)] : 0;
    t->f[MX_F_B] = op == 4 ? mxme_betas[RPICK(r, mxme_betas)] : 0;
    int k = t->p[MXME_KNAME], n = t->p[MXME_NAMES];
    task_names(t, 2, mxme_names[n], fmt("%s %s", mxme_op[op].kn[k], hn[(k + n) % 4]), fmt("matrix_%s", mxme_ops[op]));
}

static void mxme_layout(Task *t) {
    long R = t->p[MXME_ROWS], C = t->p[MXME_COLS];
    mx_begin(t, mxme_binary(t) ? 2 : 1, mx_dnames[t->p[MXME_DNAMES]], R, C, 0);
    for (int k = 0; k < t->nin; k++) mx_f32(&t->in[k], R, C, 0, 1, 10);
    mx_f32(&t->out[0], R, C, 0, 1, 0);
    // One correctly rounded operation agrees exactly; alpha * a + beta * b may be contracted to
    // an fma (one rounding less than the reference's double expression): up to one ulp of each term.
    t->atol = t->p[MXME_OP] == 4 ? 3e-7 * (fabs(t->f[MX_F_A]) * 10 + fabs(t->f[MX_F_B]) * 10) : 1e-6;
    t->rtol = 1e-6;
}

// The operation's formula on a and b, the coefficients as numbers (prompt), float literals or
// alpha and beta (kernel).
static const char *mxme_formula(const Task *t, const char *a, const char *b, int prompt) {
    const char *al = prompt ? fnum(t->f[MX_F_A]) : flit(t->f[MX_F_A]),
               *be = prompt ? fnum(t->f[MX_F_B]) : flit(t->f[MX_F_B]);
    if (!prompt && t->p[MXME_COEF] == 1) al = "alpha", be = "beta";
    if (t->p[MXME_OP] < 3) return fmt(mxme_op[t->p[MXME_OP]].formula, a, b);
    return fmt(mxme_op[t->p[MXME_OP]].formula, al, a, be, b);
}

static void mxme_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, mxme_op[t->p[MXME_OP]].tn[t->p[MXME_TNAME]]);
    int two = mxme_binary(t);
    const char *a = t->in[0].name, *b = two ? t->in[1].name : "", *c = t->out[0].name;
    buf_printf(desc, "%s%s%s %s %d x %d row-major float32 matri%s. Compute %s[r][c] = %s for every row r and column c",
               a, two ? " and " : "", b, two ? "are" : "is a", t->p[MXME_ROWS], t->p[MXME_COLS], two ? "ces" : "x", c,
               mxme_formula(t, fmt("%s[r][c]", a), fmt("%s[r][c]", b), 1));
    if (t->p[MXME_MODE] == 0) buf_puts(desc, ", one thread per element on a 2-D grid of 2-D thread blocks (dim3).");
    else buf_puts(desc, " on a 2-D grid of 2-D thread blocks (dim3) with grid-stride loops over rows and columns.");
}

// The coefficients passed as kernel arguments (coef kernel_arg), as a list's tail: ", alpha" or
// ", alpha, beta" (axpby) in the form given; "" when they are literals in the formula.
static const char *mxme_coef_list(const Task *t, const char *alpha, const char *beta) {
    if (!t->p[MXME_COEF]) return "";
    return t->p[MXME_OP] == 4 ? fmt(", %s, %s", alpha, beta) : fmt(", %s", alpha);
}

static const char mxme_helper_tpl[] = R"(
/// The operation on one element.
$spec $helper(float u$v$coefs) {
    return $formula;
}

)";

static void mxme_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[MXME_DNAMES]], *R = dn[0], *C = dn[1];
    const char *a = t->in[0].name, *b = mxme_binary(t) ? t->in[1].name : NULL, *c = t->out[0].name;
    int helper = t->p[MXME_HELPER], mode = t->p[MXME_MODE];
    const char *coefs = mxme_coef_list(t, "float alpha", "float beta"), *coef_args = mxme_coef_list(t, "alpha", "beta");
    const char *ai = fmt("%s[idx]", a), *bi = b ? fmt("%s[idx]", b) : "";
    const char *val =
        helper ? fmt("%s(%s%s%s%s)", t->kname[1], ai, b ? ", " : "", bi, coef_args) : mxme_formula(t, ai, bi, 0);
    const char *spec = helper == 1 ? "__device__ float" : "__device__ __forceinline__ float";
    emit_kernel(e, t,
                !helper ? ""
                        : FRAG(mxme_helper_tpl, "spec", spec, "helper", t->kname[1], "v", b ? ", float v" : "",
                               "coefs", coefs, "formula", mxme_formula(t, "u", "v", 0)),
                "",
                fmt("%s[r][c] = %s; %s", c, mxme_formula(t, fmt("%s[r][c]", a), b ? fmt("%s[r][c]", b) : "", 1),
                    mode ? "grid-stride loops in both dimensions." : "one thread per element."),
                fmt("int %s, int %s%s", R, C, coefs),
                mx_loop2d(t, mode, t->p[MXME_GUARD], 0, "row", "col", R, C,
                          fmt("const int idx = row * %s + col;\n%s[idx] = %s;", C, c, val)));
}

static void mxme_launch(const Task *t, Emit *e, const Host *h) {
    const char *coefs = mxme_coef_list(t, flit(t->f[MX_F_A]), flit(t->f[MX_F_B]));
    mx_launch_bd(e, t, t->p[MXME_BDIM], (Launch2D){ .dims = t->p[MXME_DIMS], .xc = h->size[1], .yc = h->size[0],
                                                    .ycap = t->p[MXME_CAP],
                                                    .args = fmt("%s%s", kernel_args(h, 2), coefs) });
}

static void mxme_ref(const Task *t, const void *const *in, void *const *out) {
    long n = (long)t->p[MXME_ROWS] * t->p[MXME_COLS];
    const float *a = in[0], *b = mxme_binary(t) ? in[1] : NULL;
    float *c = out[0];
    double al = fpar(t, MX_F_A), be = fpar(t, MX_F_B);
    for (long i = 0; i < n; i++) {
        double v;
        switch (t->p[MXME_OP]) {
        case 0: v = (double)a[i] + b[i]; break;
        case 1: v = (double)a[i] - b[i]; break;
        case 2: v = (double)a[i] * b[i]; break;
        case 3: v = al * a[i]; break;
        default: v = al * a[i] + be * b[i]; break;
        }
        c[i] = (float)v;
    }
}

static const Family fam_mx_matrix_ew2d = {
    "matrix_elementwise_2d",
    "C = A + B, A - B, A .* B, alpha A, alpha A + beta B on a 2-D dim3 grid (one thread per element or grid-stride)",
    mxme_params, mxme_fp, mxme_draw, mxme_layout, mxme_describe, mxme_kernels, mxme_launch, mxme_ref };

// ----------------------------------------------------------------------------
// Matrix products: shared pieces

// Pick lists of the sides M, N, K: any, multiples of every tile (aligned), mostly not (ragged).
#define MXMM_SIDES "64 96 100 128 200 256 300 384 500 512 640 1000 1024"
#define MXMM_ALIGNED "64 128 192 256 384 512 768 1024"
#define MXMM_RAGGED "100 129 200 250 257 300 333 500 600 1000"
static const char *const mxmm_dnames[][3] = { { "m", "n", "k" }, { "rows", "cols", "inner" }, { "m", "n", "depth" },
                                              { "n_rows", "n_cols", "n_inner" } };
static const char *const mxmm_names[] = { "A B C", "lhs rhs out", "X W Y", "mat_a mat_b mat_c", "left right prod" };
static const char *const mxmm_ops[] = { "ab", "abt", "atb", NULL };

// Draws M, N, K from a list with M*N*K at most 1.4e8 (the CPU reference does M*N*K steps)
// and M*N at least 4,096.
static void mxmm_draw_mnk(Rng *r, const char *list, int *m, int *n, int *k) {
    do {
        *m = rng_pick(r, list);
        *n = rng_pick(r, list);
        *k = rng_pick(r, list);
    } while ((long)*m * *n * *k > 140000000L || (long)*m * *n < 4096);
}

// C = op(A) op(B) in double; op 0: A[M][K] B[K][N], 1: A[M][K] B[N][K] (B transposed),
// 2: A[K][M] (A transposed) B[K][N].
static void mxmm_ref_core(int op, long M, long N, long K, const float *A, const float *B, float *C) {
    double *row = malloc(sizeof *row * (size_t)N);
    for (long i = 0; i < M; i++) {
        for (long j = 0; j < N; j++) row[j] = 0;
        for (long p = 0; p < K; p++) {
            double a = op == 2 ? A[p * M + i] : A[i * K + p];
            for (long j = 0; j < N; j++) row[j] += a * (op == 1 ? B[j * K + p] : B[p * N + j]);
        }
        for (long j = 0; j < N; j++) C[i * N + j] = (float)row[j];
    }
    free(row);
}

// The naive and the tiled product share the task: parameters op (none in the tiled one: A B),
// m, n, k and dnames.

static void mxmm_layout(Task *t) {
    int op = mx_par(t, "op"), M = mx_par(t, "m"), N = mx_par(t, "n"), K = mx_par(t, "k");
    int at = op == 2, bt = op == 1; // A stored as K x M, B stored as N x K
    const int m = 0, n = 1, k = 2; // the size constants
    mx_begin(t, 2, mxmm_dnames[mx_par(t, "dnames")], M, N, K);
    mx_f32(&t->in[0], at ? K : M, at ? M : K, at ? k : m, at ? m : k, 1);
    mx_f32(&t->in[1], bt ? N : K, bt ? K : N, bt ? n : k, bt ? k : n, 1);
    mx_f32(&t->out[0], M, N, m, n, 0);
    mx_sum_tol(t, K, 1.0);
}

static void mxmm_describe_task(const Task *t, Buf *desc) {
    int op = mx_par(t, "op"), M = mx_par(t, "m"), N = mx_par(t, "n"), K = mx_par(t, "k");
    const char *a = t->in[0].name, *b = t->in[1].name, *c = t->out[0].name;
    if (op == 0)
        buf_printf(desc, "Compute the matrix product %s = %s * %s: %s is %d x %d, %s is %d x %d, %s is %d x %d (all "
                   "row-major float32), %s[i][j] = sum over p of %s[i][p] * %s[p][j].",
                   c, a, b, a, M, K, b, K, N, c, M, N, c, a, b);
    else if (op == 1)
        buf_printf(desc, "Compute %s = %s * %s^T: %s is %d x %d and %s is stored as %d x %d (row-major float32), so "
                   "%s[i][j] = sum over p of %s[i][p] * %s[j][p]; %s is %d x %d.",
                   c, a, b, a, M, K, b, N, K, c, a, b, c, M, N);
    else
        buf_printf(desc, "Compute %s = %s^T * %s: %s is stored as %d x %d and %s as %d x %d (row-major float32), so "
                   "%s[i][j] = sum over p of %s[p][i] * %s[p][j]; %s is %d x %d.",
                   c, a, b, a, K, M, b, K, N, c, a, b, c, M, N);
}

static void mxmm_ref(const Task *t, const void *const *in, void *const *out) {
    mxmm_ref_core(mx_par(t, "op"), mx_par(t, "m"), mx_par(t, "n"), mx_par(t, "k"), in[0], in[1], out[0]);
}

// ----------------------------------------------------------------------------
// Naive matrix multiply: one thread per output element

enum { MXMN_OP, MXMN_M, MXMN_N, MXMN_K, MXMN_BDIM, MXMN_GUARD, MXMN_ACC, MXMN_DIMS, MXMN_KNAME, MXMN_NAMES, MXMN_TNAME,
       MXMN_DNAMES, MXMN_VARS, MXMN_NP };
static const char *const mxmn_accs[] = { "plain", "fmaf", "dot_helper", NULL };
static const ParamDesc mxmn_params[] = {
    [MXMN_OP] = { "op", mxmm_ops, 1, "0 0 0 1 2" }, [MXMN_M] = { "m", NULL, 1, NULL },
    [MXMN_N] = { "n", NULL, 1, NULL }, [MXMN_K] = { "k", NULL, 1, NULL }, [MXMN_BDIM] = { "bdim", NULL, 1, "0..4" },
    [MXMN_GUARD] = { "guard", NULL, 0, "0..1" }, [MXMN_ACC] = { "acc", mxmn_accs, 0, "*" },
    [MXMN_DIMS] = { "dims", NULL, 0, "0..3" }, [MXMN_KNAME] = { "kname", NULL, 0, "0..3" },
    [MXMN_NAMES] = { "names", NULL, 0, "0..4" }, [MXMN_TNAME] = { "tname", NULL, 0, "0..2" },
    [MXMN_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXMN_VARS] = { "vars", NULL, 0, "0..2" }, [MXMN_NP] = { NULL } };
static const char *const mxmn_kn[] = { "matmul_naive", "matMulKernel", "gemm_naive", "matrix_multiply" };
static const char *const mxmn_vars[][3] = { { "row", "col", "p" }, { "r", "c", "kk" }, { "i", "j", "e" } };

static void mxmn_draw(Task *t, Rng *r) {
    static const char *const hn[] = { "dot_strided", "strided_dot", "dotProduct", "dot" };
    mxmm_draw_mnk(r, MXMM_SIDES, &t->p[MXMN_M], &t->p[MXMN_N], &t->p[MXMN_K]);
    task_names(t, 2, mxmm_names[t->p[MXMN_NAMES]], fmt("%s %s", mxmn_kn[t->p[MXMN_KNAME]], hn[t->p[MXMN_KNAME]]),
               "matmul");
}

static void mxmn_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[3][3] = { { "Matrix_Multiplication", "Naive_GEMM", "Matrix_Product" },
                                          { "Matrix_Multiply_Transposed_B", "GEMM_NT", "Matrix_Times_Transpose" },
                                          { "Matrix_Multiply_Transposed_A", "GEMM_TN", "Transpose_Times_Matrix" } };
    buf_puts(name, nm[t->p[MXMN_OP]][t->p[MXMN_TNAME]]);
    mxmm_describe_task(t, desc);
    buf_puts(desc, " One thread per output element on a 2-D grid of 2-D blocks (dim3), each thread looping over the "
                   "shared dimension in global memory.");
}

static const char mxmn_helper_tpl[] = R"(
/// Dot product of len elements of u (stride su) and v (stride sv).
$spec $helper(const float *u, int su, const float *v, int sv, int len) {
    float s = 0.0f;
    for (int q = 0; q < len; ++q) s += u[q * su] * v[q * sv];
    return s;
}

)";

static void mxmn_kernels(const Task *t, Emit *e) {
    const char *const *dn = mxmm_dnames[t->p[MXMN_DNAMES]], *const *v = mxmn_vars[t->p[MXMN_VARS]];
    const char *a = t->in[0].name, *b = t->in[1].name, *c = t->out[0].name, *m = dn[0], *n = dn[1], *k = dn[2];
    const char *row = v[0], *col = v[1], *p = v[2], *h = t->kname[1];
    int op = t->p[MXMN_OP], acc = t->p[MXMN_ACC];
    const char *ai = op == 2 ? fmt("%s[%s * %s + %s]", a, p, m, row) : fmt("%s[%s * %s + %s]", a, row, k, p);
    const char *bi = op == 1 ? fmt("%s[%s * %s + %s]", b, col, k, p) : fmt("%s[%s * %s + %s]", b, p, n, col);
    const char *call = op == 0 ? fmt("%s(%s + %s * %s, 1, %s + %s, %s, %s)", h, a, row, k, b, col, n, k)
                     : op == 1 ? fmt("%s(%s + %s * %s, 1, %s + %s * %s, 1, %s)", h, a, row, k, b, col, k, k)
                               : fmt("%s(%s + %s, %s, %s + %s, %s, %s)", h, a, row, m, b, col, n, k);
    const char *out = fmt("%s[%s * %s + %s]", c, row, n, col);
    const char *step = acc == 1 ? fmt("acc = fmaf(%s, %s, acc);", ai, bi) : fmt("acc += %s * %s;", ai, bi);
    const char *body = acc == 2 ? fmt("%s = %s;", out, call)
                                : FRAG(mx_dot_tpl, "init", "0.0f", "p", p, "len", k, "step", step, "out", out);
    const char *spec = t->p[MXMN_KNAME] & 1 ? "__device__ __forceinline__ float" : "__device__ float";
    emit_kernel(e, t, acc == 2 ? FRAG(mxmn_helper_tpl, "spec", spec, "helper", h) : "", "",
                fmt("One thread computes %s[%s][%s] as a dot product over the %s dimension.", c, row, col, k),
                fmt("int %s, int %s, int %s", m, n, k),
                mx_loop2d(t, 0, t->p[MXMN_GUARD], 0, row, col, m, n, body));
}

static void mxmn_launch(const Task *t, Emit *e, const Host *h) {
    mx_launch_bd(e, t, t->p[MXMN_BDIM], (Launch2D){ .dims = t->p[MXMN_DIMS], .xc = h->size[1], .yc = h->size[0],
                                                    .args = kernel_args(h, 3) });
}

static const Family fam_mx_matmul_naive = {
    "matmul_naive",
    "C = A B, A B^T or A^T B with one thread per output on a 2-D dim3 grid; plain, fmaf or __device__ dot helper",
    mxmn_params, NULL, mxmn_draw, mxmm_layout, mxmn_describe, mxmn_kernels, mxmn_launch, mxmm_ref };

// ----------------------------------------------------------------------------
// Tiled matrix multiply with shared-memory tiles

enum { MXMT_M, MXMT_N, MXMT_K, MXMT_ALIGNED, MXMT_TILE, MXMT_CHECKS, MXMT_TDEF, MXMT_LOOP, MXMT_UNROLL, MXMT_DIMS,
       MXMT_KNAME, MXMT_NAMES, MXMT_TNAME, MXMT_DNAMES, MXMT_SHN, MXMT_NP };
static const ParamDesc mxmt_params[] = {
    [MXMT_M] = { "m", NULL, 1, NULL }, [MXMT_N] = { "n", NULL, 1, NULL }, [MXMT_K] = { "k", NULL, 1, NULL },
    [MXMT_ALIGNED] = { "aligned", NULL, 1, "0..1" }, [MXMT_TILE] = { "tile", NULL, 1, "8 16 16 32" },
    [MXMT_CHECKS] = { "checks", NULL, 1, NULL }, [MXMT_TDEF] = { "tdef", mx_tdefs, 0, "*" },
    [MXMT_LOOP] = { "loop", NULL, 0, "0..1" }, [MXMT_UNROLL] = { "unroll", NULL, 0, "0..1" },
    [MXMT_DIMS] = { "dims", NULL, 0, "0..3" }, [MXMT_KNAME] = { "kname", NULL, 0, "0..3" },
    [MXMT_NAMES] = { "names", NULL, 0, "0..4" }, [MXMT_TNAME] = { "tname", NULL, 0, "0..2" },
    [MXMT_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXMT_SHN] = { "shnames", NULL, 0, "0..3" }, [MXMT_NP] = { NULL } };
static const char *const mxmt_kn[] = { "matmul_tiled", "matMulShared", "gemm_tiled", "tiled_matmul" };
static const char *const mxmt_shn[][2] = { { "As", "Bs" }, { "tile_a", "tile_b" }, { "sA", "sB" },
                                           { "a_tile", "b_tile" } };
static const char *const mxmt_macros[] = { "TILE", "TILE_SIZE", "BLOCK_SIZE", "TILE_WIDTH" };

static void mxmt_draw(Task *t, Rng *r) {
    int aligned = t->p[MXMT_ALIGNED];
    mxmm_draw_mnk(r, aligned ? MXMM_ALIGNED : MXMM_RAGGED, &t->p[MXMT_M], &t->p[MXMT_N], &t->p[MXMT_K]);
    t->p[MXMT_CHECKS] = aligned ? rng_int(r, 0, 1) : 1;
    task_names(t, 2, mxmm_names[t->p[MXMT_NAMES]], mxmt_kn[t->p[MXMT_KNAME]], "matmul_tiled");
}

static void mxmt_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name,
             pick3(t->p[MXMT_TNAME], "Tiled_Matrix_Multiplication", "Shared_Memory_GEMM", "Matrix_Multiply_Tiled"));
    int T = t->p[MXMT_TILE];
    mxmm_describe_task(t, desc);
    buf_printf(desc, " Use %d x %d thread blocks (dim3), one thread per output element, and stage %d x %d tiles of "
               "both inputs in shared memory, synchronising before and after each tile is used.", T, T, T, T);
    if (t->p[MXMT_M] % T || t->p[MXMT_N] % T || t->p[MXMT_K] % T)
        buf_printf(desc, " The sizes are not all multiples of %d: pad partial tiles with zeros and guard the stores.",
                   T);
    else if (!t->p[MXMT_CHECKS]) buf_printf(desc, " All sizes are multiples of %d, so no bounds checks are needed.", T);
    else buf_puts(desc, " Keep bounds checks on the loads and the store so the kernel also works for other sizes.");
}

static const char mxmt_body_tpl[] = R"(
__shared__ float $sa[$TL][$TL];
__shared__ float $sb[$TL][$TL];
const int tx = threadIdx.x, ty = threadIdx.y;
const int row = blockIdx.y * $TL + ty;
const int col = blockIdx.x * $TL + tx;
float acc = 0.0f;
$tile_loop {
    $base
    //? each thread loads one element of each tile (zero outside the matrices)
    $load_a
    $load_b
    __syncthreads();
    $unroll
    for (int e = 0; e < $TL; ++e) acc += $sa[ty][e] * $sb[e][tx];
    __syncthreads();
}
$store
)";

static void mxmt_kernels(const Task *t, Emit *e) {
    const char *const *dn = mxmm_dnames[t->p[MXMT_DNAMES]], *const *sh = mxmt_shn[t->p[MXMT_SHN]];
    const char *a = t->in[0].name, *b = t->in[1].name, *c = t->out[0].name, *m = dn[0], *n = dn[1], *k = dn[2];
    int T = t->p[MXMT_TILE], td = t->p[MXMT_TDEF], chk = t->p[MXMT_CHECKS], counted = t->p[MXMT_LOOP];
    const char *TL = td == 1 ? "TILE" : mxmt_macros[t->p[MXMT_KNAME]], *t0 = counted ? "base" : "t0";
    const char *la = fmt("%s[row * %s + %s + tx]", a, k, t0), *lb = fmt("%s[(%s + ty) * %s + col]", b, t0, n);
    const char *tile_loop =
        counted ? fmt("const int num_tiles = (%s + %s - 1) / %s;\nfor (int tt = 0; tt < num_tiles; ++tt)", k, TL, TL)
                : fmt("for (int t0 = 0; t0 < %s; t0 += %s)", k, TL);
    const char *a_val = chk ? fmt("(row < %s && %s + tx < %s) ? %s : 0.0f", m, t0, k, la) : la;
    const char *b_val = chk ? fmt("(%s + ty < %s && col < %s) ? %s : 0.0f", t0, k, n, lb) : lb;
    const char *store = chk ? fmt("if (row < %s && col < %s) %s[row * %s + col] = acc;", m, n, c, n)
                            : fmt("%s[row * %s + col] = acc;", c, n);
    const char *body = FRAG(mxmt_body_tpl, "TL", TL, "sa", sh[0], "sb", sh[1], "tile_loop", tile_loop,
                            "base", counted ? fmt("const int base = tt * %s;", TL) : "",
                            "load_a", fmt("%s[ty][tx] = %s;", sh[0], a_val),
                            "load_b", fmt("%s[ty][tx] = %s;", sh[1], b_val),
                            "unroll", t->p[MXMT_UNROLL] ? "#pragma unroll" : "", "store", store);
    emit_kernel(e, t,
                td == 0 ? fmt("#define %s %d\n\n", TL, T) : td == 2 ? fmt("constexpr int %s = %d;\n\n", TL, T) : "",
                td == 1 ? "template <int TILE>" : "",
                fmt("%s = %s * %s with %s x %s tiles of both inputs staged in shared memory; one thread per output "
                    "element.", c, a, b, TL, TL),
                fmt("int %s, int %s, int %s", m, n, k), body);
}

static void mxmt_launch(const Task *t, Emit *e, const Host *h) {
    int tmpl = t->p[MXMT_TDEF] == 1;
    const char *k = tmpl ? fmt("%s<%d>", t->kname[0], t->p[MXMT_TILE]) : t->kname[0];
    const char *ts = tmpl ? fmt("%d", t->p[MXMT_TILE]) : mxmt_macros[t->p[MXMT_KNAME]];
    launch_2d(e, t, (Launch2D){ .dims = t->p[MXMT_DIMS], .k = k, .bx = ts, .by = ts, .xc = h->size[1], .yc = h->size[0],
                                .args = kernel_args(h, 3) });
}

static const Family fam_mx_matmul_tiled = {
    "matmul_tiled",
    "C = A B with TILE x TILE shared-memory tiles (8/16/32), sizes multiple of"
    " the tile or ragged with zero padding and guards",
    mxmt_params, NULL, mxmt_draw, mxmm_layout, mxmt_describe, mxmt_kernels, mxmt_launch, mxmm_ref };

// ----------------------------------------------------------------------------
// Matrix-vector products y = A x (+ b): inputs A [rows, cols], x [cols] (, b [rows]), output y
// [rows]. Both families have the parameters rows, cols first and bias sixth, and share the task
// (layout, ref), the tensor names and the description's first sentence.

#define MXMV_ROWS_PICK "128 256 500 1000 1024 2048 4096 5000 8192 10000"
#define MXMV_COLS_PICK "32 64 100 128 256 500 512 1000 1024 2048 4096"
enum { MXMV_ROWS, MXMV_COLS, MXMV_MODE, MXMV_BLOCK, MXMV_LOOP, MXMV_BIAS, MXMV_ACC, MXMV_CAP, MXMV_KNAME, MXMV_NAMES,
       MXMV_TNAME, MXMV_DNAMES, MXMV_NP };
// the matrix, the vector, the bias (when there is one), the output
static const char *const mxmv_names[] = { "A x b y", "mat vec bias out", "W v bvec result",
                                          "weights input bias output", "M_in x_in b_in y_out" };

static void mxmv_layout(Task *t) {
    long R = t->p[MXMV_ROWS], C = t->p[MXMV_COLS];
    int bias = t->p[MXMV_BIAS];
    mx_begin(t, bias ? 3 : 2, mx_dnames[mx_par(t, "dnames")], R, C, 0);
    mx_f32(&t->in[0], R, C, 0, 1, 1);
    mx_f32(&t->in[1], C, 0, 1, -1, 1);
    if (bias) mx_f32(&t->in[2], R, 0, 0, -1, 1);
    mx_f32(&t->out[0], R, 0, 0, -1, 0);
    mx_sum_tol(t, C + bias, 1.0);
}

static void mxmv_describe_task(const Task *t, Buf *desc) {
    const char *A = t->in[0].name, *x = t->in[1].name, *y = t->out[0].name;
    const char *b = t->p[MXMV_BIAS] ? t->in[2].name : NULL;
    buf_printf(desc, "%s is %s x %d row-major float32 matrix and %s a vector of %d. Compute %s = %s * %s%s, i.e. "
               "%s[r] = sum over c of %s[r][c] * %s[c]%s.", A, a_num(t->p[MXMV_ROWS]), t->p[MXMV_COLS], x,
               t->p[MXMV_COLS], y, A, x, b ? fmt(" + %s", b) : "", y, A, x, b ? fmt(" + %s[r]", b) : "");
}

static void mxmv_ref(const Task *t, const void *const *in, void *const *out) {
    long R = t->p[MXMV_ROWS], C = t->p[MXMV_COLS];
    const float *A = in[0], *x = in[1], *b = t->p[MXMV_BIAS] ? in[2] : NULL;
    for (long r = 0; r < R; r++) {
        double s = b ? b[r] : 0.0;
        for (long c = 0; c < C; c++) s += (double)A[r * C + c] * x[c];
        ((float *)out[0])[r] = (float)s;
    }
}

// ----------------------------------------------------------------------------
// Matrix-vector product, one thread per row

static const char *const mxmv_modes[] = { "global", "shared_x", NULL };
static const ParamDesc mxmv_params[] = {
    [MXMV_ROWS] = { "rows", NULL, 1, MXMV_ROWS_PICK }, [MXMV_COLS] = { "cols", NULL, 1, MXMV_COLS_PICK },
    [MXMV_MODE] = { "mode", mxmv_modes, 1, "*" }, [MXMV_BLOCK] = { "block", NULL, 1, "64 128 256 256 512" },
    [MXMV_LOOP] = { "loop", loop_names, 1, NULL }, [MXMV_BIAS] = { "bias", NULL, 1, "0 0 1" },
    [MXMV_ACC] = { "acc", NULL, 0, "0..1" }, [MXMV_CAP] = { "cap", NULL, 0, NULL },
    [MXMV_KNAME] = { "kname", NULL, 0, "0..3" }, [MXMV_NAMES] = { "names", NULL, 0, "0..4" },
    [MXMV_TNAME] = { "tname", NULL, 0, "0..2" }, [MXMV_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXMV_NP] = { NULL } };
static const char *const mxmv_kn[] = { "matvec", "gemv_row_per_thread", "matVecKernel", "mv_rows" };

static void mxmv_draw(Task *t, Rng *r) {
    params_redraw(t, r, MXMV_ROWS, MXMV_COLS, 8192, 4200000);
    t->p[MXMV_LOOP] = t->p[MXMV_MODE] == 0 ? rng_int(r, 0, 2) : LOOP_IF; // a block-wide __syncthreads: no early exit
    t->p[MXMV_CAP] = t->p[MXMV_LOOP] == LOOP_GRID ? rng_pick(r, "16 32 64 128") : 0;
    task_names(t, 3, mxmv_names[t->p[MXMV_NAMES]], mxmv_kn[t->p[MXMV_KNAME]], "matvec");
}

static void mxmv_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, pick3(t->p[MXMV_TNAME], "Matrix_Vector_Product", "GEMV_Row_Per_Thread", "Matrix_Vector_Multiply"));
    mxmv_describe_task(t, desc);
    if (t->p[MXMV_MODE] == 0) buf_puts(desc, " One thread per row, reading the row and the vector from global memory.");
    else buf_puts(desc, " One thread per row; each block stages the vector in shared memory one block-sized chunk at "
                        "a time.");
}

static const char mxmv_shared_tpl[] = R"(
__shared__ float xs[CHUNK];
const int row = blockIdx.x * blockDim.x + threadIdx.x;
float acc = 0.0f;
//? every thread of the block takes part in the loads and barriers, even past the last row
for (int c0 = 0; c0 < $C; c0 += CHUNK) {
    if (c0 + threadIdx.x < $C) xs[threadIdx.x] = $x[c0 + threadIdx.x];
    __syncthreads();
    const int len = min(CHUNK, $C - c0);
    if (row < $R) {
        for (int j = 0; j < len; ++j) {
            $step
        }
    }
    __syncthreads();
}
if (row < $R) $y[row] = acc$bias;
)";

static void mxmv_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[MXMV_DNAMES]], *R = dn[0], *C = dn[1], *i = IDX(t);
    const char *A = t->in[0].name, *x = t->in[1].name, *b = t->p[MXMV_BIAS] ? t->in[2].name : NULL, *y = t->out[0].name;
    int mode = t->p[MXMV_MODE];
    const char *fma_fmt = t->p[MXMV_ACC] ? "acc = fmaf(%s, %s, acc);" : "acc += %s * %s;";
    const char *row = FRAG(mx_dot_tpl, "init", b ? fmt("%s[%s]", b, i) : "0.0f", "p", "c", "len", C,
                           "step", fmt(fma_fmt, fmt("%s[(size_t)%s * %s + c]", A, i, C), fmt("%s[c]", x)),
                           "out", fmt("%s[%s]", y, i));
    const char *body = mode == 0 ? loop_frag(t, t->p[MXMV_LOOP], R, row)
                                 : FRAG(mxmv_shared_tpl, "C", C, "R", R, "x", x, "y", y,
                                        "bias", b ? fmt(" + %s[row]", b) : "",
                                        "step", fmt(fma_fmt, fmt("%s[(size_t)row * %s + c0 + j]", A, C), "xs[j]"));
    const char *chunk = "#define CHUNK %d // threads per block = vector elements staged per step\n\n";
    emit_kernel(e, t, mode ? fmt(chunk, t->p[MXMV_BLOCK]) : "", "",
                mode ? fmt("One thread per row of %s; the block shares chunks of %s through shared memory.", A, x)
                     : fmt("One thread per row: %s[r] = dot(row r of %s, %s).", y, A, x),
                fmt("int %s, int %s", R, C), body);
}

static void mxmv_launch(const Task *t, Emit *e, const Host *h) {
    const char *args = kernel_args(h, 2);
    if (t->p[MXMV_MODE] == 0) launch_1d(e, t, t->kname[0], h->size[0], t->p[MXMV_BLOCK], t->p[MXMV_CAP], args);
    else TPL(e, t, "const int blocks = ($n + CHUNK - 1) / CHUNK;\n$k<<<blocks, CHUNK>>>($args);", "n", h->size[0],
             "k", t->kname[0], "args", args);
}

static const Family fam_mx_matvec_thread = {
    "matvec_thread_per_row",
    "y = A x (+ b), one thread per row: vector from global memory or staged in shared chunks; if/return/grid-stride",
    mxmv_params, NULL, mxmv_draw, mxmv_layout, mxmv_describe, mxmv_kernels, mxmv_launch, mxmv_ref };

// ----------------------------------------------------------------------------
// Matrix-vector product, one warp per row with shuffles

enum { MXMW_ROWS, MXMW_COLS, MXMW_BLOCK, MXMW_SHFL, MXMW_VEC, MXMW_BIAS, MXMW_HELPER, MXMW_MASK, MXMW_CFG, MXMW_KNAME,
       MXMW_NAMES, MXMW_TNAME, MXMW_DNAMES, MXMW_NP };
_Static_assert((int)MXMW_BIAS == (int)MXMV_BIAS, "mxmv_layout, mxmv_describe_task and mxmv_ref read bias there");
static const char *const mxmw_shfl[] = { "down", "xor", NULL };
static const char *const mxmw_vec[] = { "scalar", "float4", NULL };
static const ParamDesc mxmw_params[] = {
    [MXMW_ROWS] = { "rows", NULL, 1, MXMV_ROWS_PICK }, [MXMW_COLS] = { "cols", NULL, 1, MXMV_COLS_PICK },
    [MXMW_BLOCK] = { "block", NULL, 1, "64 128 256 512" }, [MXMW_SHFL] = { "shfl", mxmw_shfl, 1, "*" },
    [MXMW_VEC] = { "vec", mxmw_vec, 1, "0 0 0 1 1" }, [MXMW_BIAS] = { "bias", NULL, 1, "0 0 1" },
    [MXMW_HELPER] = { "helper", NULL, 0, "0..2" }, [MXMW_MASK] = { "mask", NULL, 0, "0..2" },
    [MXMW_CFG] = { "cfg", NULL, 0, "0..1" }, [MXMW_KNAME] = { "kname", NULL, 0, "0..3" },
    [MXMW_NAMES] = { "names", NULL, 0, "0..4" }, [MXMW_TNAME] = { "tname", NULL, 0, "0..2" },
    [MXMW_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXMW_NP] = { NULL } };
// the kernel, then the warp's sum
static const char *const mxmw_kn[] = { "matvec_warp warp_reduce_sum", "gemvWarpPerRow warpSum",
                                       "warp_matvec warp_allreduce_sum", "mv_warp_rows shfl_sum" };

static void mxmw_draw(Task *t, Rng *r) {
    params_redraw(t, r, MXMW_ROWS, MXMW_COLS, 8192, 4200000);
    if (t->p[MXMW_COLS] % 4) t->p[MXMW_VEC] = 0;
    task_names(t, 3, mxmv_names[t->p[MXMW_NAMES]], mxmw_kn[t->p[MXMW_KNAME]], "matvec_warp");
}

static void mxmw_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name,
             pick3(t->p[MXMW_TNAME], "Warp_Per_Row_GEMV", "Matrix_Vector_Warp_Shuffle", "Matrix_Vector_Product_Warp"));
    mxmv_describe_task(t, desc);
    buf_printf(desc, " Use one warp (32 threads) per row: lanes stride over the columns%s, then combine the 32 "
               "partial sums with %s.",
               t->p[MXMW_VEC] ? " with float4 loads" : "", t->p[MXMW_SHFL] ? "__shfl_xor_sync" : "__shfl_down_sync");
}

// Lanes stride over the row (scalar or float4 loads), then a shuffle reduction (the row
// families' ro_shfl_loop_tpl, reduce_warp's rw_helper).
static const char mxmw_body_tpl[] = R"(
$index
if (row >= $R) return; // the whole warp leaves together
float sum = 0.0f;
$loop
$reduce
if (lane == 0) $y[row] = sum$bias;
)";
static const char *const mxmw_loop_tpl[] = { R"(
const float *arow = $A + (size_t)row * $C;
for (int c = lane; c < $C; c += 32) {
    sum += arow[c] * $x[c];
}
)", R"(
const float4 *arow = reinterpret_cast<const float4 *>($A + (size_t)row * $C);
const float4 *xv = reinterpret_cast<const float4 *>($x);
for (int c = lane; c < $C / 4; c += 32) {
    const float4 p = arow[c], q = xv[c];
    sum += p.x * q.x + p.y * q.y + p.z * q.z + p.w * q.w;
}
)" };

static void mxmw_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[MXMW_DNAMES]];
    const char *A = t->in[0].name, *x = t->in[1].name, *y = t->out[0].name, *R = dn[0], *C = dn[1];
    const char *mask = pick3(t->p[MXMW_MASK], "0xffffffff", "0xFFFFFFFFu", "FULL_MASK");
    const char *sh = fmt("%s(%s, %%s, offset)", t->p[MXMW_SHFL] ? "__shfl_xor_sync" : "__shfl_down_sync", mask);
    const char *helper = "";
    if (t->p[MXMW_HELPER])
        helper = FRAG(rw_helper, "spec", t->p[MXMW_HELPER] == 1 ? "__device__ float" : "__inline__ __device__ float",
                      "helper", t->kname[1], "shuffle", FRAG(ro_shfl_loop_tpl, "step", fmt("v += %s;", fmt(sh, "v"))),
                      "comment", fmt("Sum over the 32 lanes of a warp; %s gets the total.",
                                     t->p[MXMW_SHFL] ? "every lane" : "lane 0"));
    const char *index =
        t->p[MXMW_KNAME] & 1
            ? "const int lane = threadIdx.x & 31;\nconst int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);"
            : "const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;\nconst int lane = threadIdx.x % 32;";
    const char *reduce = t->p[MXMW_HELPER] ? fmt("sum = %s(sum);", t->kname[1])
                                           : FRAG(ro_shfl_loop_tpl, "step", fmt("sum += %s;", fmt(sh, "sum")));
    const char *body = FRAG(mxmw_body_tpl, "R", R, "y", y, "index", index,
                            "loop", FRAG(mxmw_loop_tpl[t->p[MXMW_VEC]], "A", A, "C", C, "x", x), "reduce", reduce,
                            "bias", t->p[MXMW_BIAS] ? fmt(" + %s[row]", t->in[2].name) : "");
    emit_kernel(e, t, fmt("%s%s", t->p[MXMW_MASK] == 2 ? "#define FULL_MASK 0xffffffffu\n\n" : "", helper), "",
                fmt("One warp per row of %s: strided partial dot products, then a shuffle reduction.", A),
                fmt("int %s, int %s", R, C), body);
}

static void mxmw_launch(const Task *t, Emit *e, const Host *h) {
    int B = t->p[MXMW_BLOCK];
    TPL(e, t, ro_warp_launch_tpl[t->p[MXMW_CFG]], "block", fmt("%d", B), "warps", fmt("%d", B / 32), "rows", h->size[0],
        "k", t->kname[0], "args", kernel_args(h, 2));
}

static const Family fam_mx_matvec_warp = {
    "matvec_warp_per_row",
    "y = A x (+ b), one warp per row: strided (or float4) partial sums, __shfl_down_sync / __shfl_xor_sync",
    mxmw_params, NULL, mxmw_draw, mxmv_layout, mxmw_describe, mxmw_kernels, mxmw_launch, mxmv_ref };

// ----------------------------------------------------------------------------
// Vector-matrix product y = x^T A (and column sums)

enum { MXVM_OP, MXVM_ROWS, MXVM_COLS, MXVM_MODE, MXVM_BLOCK, MXVM_BY, MXVM_CHUNK, MXVM_LOOP, MXVM_DIMS, MXVM_KNAME,
       MXVM_NAMES, MXVM_TNAME, MXVM_DNAMES, MXVM_NP };
static const char *const mxvm_ops[] = { "xta", "colsum", NULL };
static const char *const mxvm_modes[] = { "thread_per_col", "row_chunks_atomic", "block_reduce_2d", NULL };
static const ParamDesc mxvm_params[] = {
    [MXVM_OP] = { "op", mxvm_ops, 1, "*" }, [MXVM_ROWS] = { "rows", NULL, 1, MXMV_ROWS_PICK },
    [MXVM_COLS] = { "cols", NULL, 1, MXMV_COLS_PICK }, [MXVM_MODE] = { "mode", mxvm_modes, 1, "*" },
    [MXVM_BLOCK] = { "block", NULL, 1, "64 128 256 256 512" }, [MXVM_BY] = { "by", NULL, 1, "4 8 16" },
    [MXVM_CHUNK] = { "chunk", NULL, 1, "32 64 128 256" }, [MXVM_LOOP] = { "loop", NULL, 0, "0..1" },
    [MXVM_DIMS] = { "dims", NULL, 0, "0..3" }, [MXVM_KNAME] = { "kname", NULL, 0, "0..3" },
    [MXVM_NAMES] = { "names", NULL, 0, "0..3" }, [MXVM_TNAME] = { "tname", NULL, 0, "0..2" },
    [MXVM_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXVM_NP] = { NULL } };
// the matrix, the vector (vecmat only), the output
static const char *const mxvm_names[] = { "A x y", "mat w out", "data coef result", "M_in u v" };
static const char *const mxvm_kn[2][4] = { { "vecmat", "xTA_kernel", "vector_matrix", "gevm_col_per_thread" },
                                           { "column_sums", "colSumKernel", "sum_columns", "col_reduce" } };

static void mxvm_draw(Task *t, Rng *r) {
    int mode = t->p[MXVM_MODE], op = t->p[MXVM_OP];
    params_redraw(t, r, MXVM_ROWS, MXVM_COLS, 8192, 4200000);
    if (mode == 2) t->p[MXVM_BLOCK] = 32;
    if (mode != 2) t->p[MXVM_BY] = 0;
    if (mode != 1) t->p[MXVM_CHUNK] = 0;
    if (mode != 0) t->p[MXVM_LOOP] = 0;
    task_names(t, 2, mxvm_names[t->p[MXVM_NAMES]], mxvm_kn[op][t->p[MXVM_KNAME]], op ? "column_sums" : "vecmat");
}

static void mxvm_layout(Task *t) {
    long R = t->p[MXVM_ROWS], C = t->p[MXVM_COLS];
    mx_begin(t, t->p[MXVM_OP] == 0 ? 2 : 1, mx_dnames[t->p[MXVM_DNAMES]], R, C, 0);
    mx_f32(&t->in[0], R, C, 0, 1, 1);
    mx_f32(&t->in[1], R, 0, 0, -1, 1);
    mx_f32(&t->out[0], C, 0, 1, -1, 0);
    t->out[0].zero_init = t->p[MXVM_MODE] == 1;
    mx_sum_tol(t, R, 1.0);
}

static void mxvm_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[2][3] = { { "Vector_Matrix_Product", "Row_Vector_Times_Matrix", "Transposed_GEMV" },
                                          { "Column_Sums", "Matrix_Column_Reduction", "Sum_Over_Rows" } };
    buf_puts(name, nm[t->p[MXVM_OP]][t->p[MXVM_TNAME]]);
    const char *A = t->in[0].name, *x = t->in[1].name, *y = t->out[0].name;
    int R = t->p[MXVM_ROWS], C = t->p[MXVM_COLS], by = t->p[MXVM_BY];
    if (t->p[MXVM_OP] == 0)
        buf_printf(desc, "%s is %s x %d row-major float32 matrix and %s a vector of %d. Compute the row vector "
                   "%s = %s^T * %s: %s[c] = sum over r of %s[r] * %s[r][c].", A, a_num(R), C, x, R, y, x, A, y, x, A);
    else
        buf_printf(desc, "%s is %s x %d row-major float32 matrix. Compute %s[c] = sum over r of %s[r][c] (the sum "
                   "of each column).", A, a_num(R), C, y, A);
    buf_puts(desc, pick3(t->p[MXVM_MODE],
                         " One thread per column, looping down the rows, so neighbouring threads read neighbouring "
                         "addresses.",
                         fmt(" Split the rows into chunks of %d: a 2-D grid (dim3) with blockIdx.y selecting the chunk;"
                             " each thread sums its column over the chunk and adds it to the output with atomicAdd (the"
                             " output starts at zero).", t->p[MXVM_CHUNK]),
                         fmt(" Use 32 x %d thread blocks (dim3): threadIdx.x picks the column, the %d rows of threads "
                             "stride down the rows, and the partial sums are combined in shared memory.", by, by)));
}

// A thread per column; chunks of rows on blockIdx.y added with atomicAdd; or 32 x BY blocks
// reducing in shared memory.
static const char *const mxvm_body_tpl[] = { R"(
const int col = blockIdx.x * blockDim.x + threadIdx.x;
$guarded
)", R"(
const int col = blockIdx.x * blockDim.x + threadIdx.x;
const int r0 = blockIdx.y * ROWS_PER_CHUNK;
if (col >= $C) return;
const int r1 = min(r0 + ROWS_PER_CHUNK, $R);
float acc = 0.0f;
for (int r = r0; r < r1; ++r) acc += $term;
atomicAdd(&$y[col], acc);
)", R"(
__shared__ float part[BLOCK_Y][BLOCK_X + 1];
const int col = blockIdx.x * BLOCK_X + threadIdx.x;
float acc = 0.0f;
if (col < $C) {
    for (int r = threadIdx.y; r < $R; r += BLOCK_Y) acc += $term;
}
part[threadIdx.y][threadIdx.x] = acc;
__syncthreads();
if (threadIdx.y == 0 && col < $C) {
    for (int j = 1; j < BLOCK_Y; ++j) acc += part[j][threadIdx.x];
    $y[col] = acc;
}
)" };
static const char mxvm_column_tpl[] = R"(
float acc = 0.0f;
for (int r = 0; r < $R; ++r) acc += $term;
$y[col] = acc;
)";

static void mxvm_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[MXVM_DNAMES]], *R = dn[0], *C = dn[1];
    const char *A = t->in[0].name, *x = t->p[MXVM_OP] == 0 ? t->in[1].name : NULL, *y = t->out[0].name;
    int mode = t->p[MXVM_MODE];
    const char *term = x ? fmt("%s[r] * %s[(size_t)r * %s + col]", x, A, C) : fmt("%s[(size_t)r * %s + col]", A, C);
    const char *column = FRAG(mxvm_column_tpl, "R", R, "term", term, "y", y);
    emit_kernel(e, t,
                pick3(mode, "", fmt("#define ROWS_PER_CHUNK %d\n\n", t->p[MXVM_CHUNK]),
                      fmt("#define BLOCK_X 32\n#define BLOCK_Y %d\n\n", t->p[MXVM_BY])),
                "",
                fmt("%s[c] = sum over r of %s. %s", y, x ? fmt("%s[r] * %s[r][c]", x, A) : fmt("%s[r][c]", A),
                    pick3(mode, "One thread per column: coalesced reads down the rows.",
                          "blockIdx.y picks a chunk of rows; partial column sums are added with atomicAdd.",
                          "A 32-wide block of columns; the block's rows of threads split the rows, then reduce in "
                          "shared memory.")),
                fmt("int %s, int %s", R, C),
                FRAG(mxvm_body_tpl[mode], "C", C, "R", R, "y", y, "term", term,
                     "guarded", mx_guard(t->p[MXVM_LOOP], fmt("col < %s", C), fmt("col >= %s", C), column)));
}

static void mxvm_launch(const Task *t, Emit *e, const Host *h) {
    const char *R = h->size[0], *C = h->size[1], *args = kernel_args(h, 2);
    int mode = t->p[MXVM_MODE];
    if (mode == 0) launch_1d(e, t, t->kname[0], C, t->p[MXVM_BLOCK], 0, args);
    else if (mode == 1)
        launch_2d(e, t, (Launch2D){ .dims = t->p[MXVM_DIMS], .bx = fmt("%d", t->p[MXVM_BLOCK]), .by = "1",
                                    .ty = "ROWS_PER_CHUNK", .xc = C, .yc = R, .args = args });
    else
        launch_2d(e, t, (Launch2D){ .dims = t->p[MXVM_DIMS], .bx = "BLOCK_X", .by = "BLOCK_Y", .xc = C, .args = args });
}

static void mxvm_ref(const Task *t, const void *const *in, void *const *out) {
    long R = t->p[MXVM_ROWS], C = t->p[MXVM_COLS];
    const float *A = in[0], *x = t->p[MXVM_OP] == 0 ? in[1] : NULL;
    double *acc = calloc((size_t)C, sizeof *acc);
    for (long r = 0; r < R; r++)
        for (long c = 0; c < C; c++) acc[c] += (x ? x[r] : 1.0) * A[r * C + c];
    for (long c = 0; c < C; c++) ((float *)out[0])[c] = (float)acc[c];
    free(acc);
}

static const Family fam_mx_vecmat = {
    "vecmat",
    "y = x^T A or column sums: thread per column, row chunks + atomicAdd on a "
    "2-D grid, or 32 x BY blocks reduced in shared memory",
    mxvm_params, NULL, mxvm_draw, mxvm_layout, mxvm_describe, mxvm_kernels, mxvm_launch, mxvm_ref };

// ----------------------------------------------------------------------------
// Outer product and rank-1 update

enum { MXOP_OP, MXOP_M, MXOP_N, MXOP_MODE, MXOP_BDIM, MXOP_BLOCK, MXOP_CAP, MXOP_GUARD, MXOP_DIMS, MXOP_KNAME,
       MXOP_NAMES, MXOP_TNAME, MXOP_DNAMES, MXOP_NP };
static const char *const mxop_ops[] = { "outer", "scaled", "ger", NULL };
static const char *const mxop_modes[] = { "grid_2d", "shared_vectors", "flat_grid_stride", NULL };
static const ParamDesc mxop_params[] = {
    [MXOP_OP] = { "op", mxop_ops, 1, "*" }, [MXOP_M] = { "m", NULL, 1, MX_SIDES },
    [MXOP_N] = { "n", NULL, 1, MX_SIDES }, [MXOP_MODE] = { "mode", mxop_modes, 1, "*" },
    [MXOP_BDIM] = { "bdim", NULL, 1, "0..6" }, [MXOP_BLOCK] = { "block", NULL, 1, "64 128 256 256 512" },
    [MXOP_CAP] = { "cap", NULL, 0, "1024 2048 4096" }, [MXOP_GUARD] = { "guard", NULL, 0, "0..1" },
    [MXOP_DIMS] = { "dims", NULL, 0, "0..3" }, [MXOP_KNAME] = { "kname", NULL, 0, "0..3" },
    [MXOP_NAMES] = { "names", NULL, 0, "0..3" }, [MXOP_TNAME] = { "tname", NULL, 0, "0..2" },
    [MXOP_DNAMES] = { "dnames", NULL, 0, "0..3" }, [MXOP_NP] = { NULL } };
// The tensor names: ger's input matrix A, the vectors x and y, the output.
static const char *const mxop_names[] = { "A x y C", "base u v outer", "mat a b result", "A_in col_vec row_vec A_out" };
// The operations (in the order of mxop_ops): kernel names and task names.
static const char *const mxop_kn[3][4] = {
    { "outer_product", "outerProduct", "outer_kernel", "vec_outer" },
    { "scaled_outer", "scaledOuterProduct", "outer_scaled_kernel", "alpha_outer" },
    { "ger_update", "rank1Update", "ger_kernel", "rank_one_update" } };
static const char *const mxop_tn[3][3] = { { "Outer_Product", "Vector_Outer_Product", "Rank_One_Matrix" },
                                           { "Scaled_Outer_Product", "Alpha_Outer_Product", "Scaled_Rank_One_Matrix" },
                                           { "Rank_One_Update", "GER_Update", "Outer_Product_Accumulate" } };
static const double mxop_alphas[] = { 0.5, 2, -2, -0.25, 1.5, 3 };
static const char *const mxop_fp[] = { "alpha", NULL };

// The inputs are A, x, y (ger) or x, y (outer, scaled: the names from the second word on).
static void mxop_draw(Task *t, Rng *r) {
    int mode = t->p[MXOP_MODE], ger = t->p[MXOP_OP] == 2;
    params_redraw(t, r, MXOP_M, MXOP_N, 4096, 4200000);
    if (mode == 2) t->p[MXOP_BDIM] = t->p[MXOP_GUARD] = 0;
    else t->p[MXOP_BLOCK] = t->p[MXOP_CAP] = 0;
    if (mode == 1) t->p[MXOP_GUARD] = 0;
    t->f[0] = t->p[MXOP_OP] ? mxop_alphas[RPICK(r, mxop_alphas)] : 0;
    task_names(t, ger ? 3 : 2, word_at(mxop_names[t->p[MXOP_NAMES]], !ger), mxop_kn[t->p[MXOP_OP]][t->p[MXOP_KNAME]],
               ger ? "ger" : "outer");
}

static void mxop_layout(Task *t) {
    long M = t->p[MXOP_M], N = t->p[MXOP_N];
    int ger = t->p[MXOP_OP] == 2;
    mx_begin(t, ger ? 3 : 2, mx_dnames[t->p[MXOP_DNAMES]], M, N, 0);
    mx_f32(&t->in[0], M, N, 0, 1, 1); // A of ger (x otherwise: the next line sets it again)
    mx_f32(&t->in[ger], M, 0, 0, -1, 2);
    mx_f32(&t->in[ger + 1], N, 0, 1, -1, 2);
    mx_f32(&t->out[0], M, N, 0, 1, 0);
    // outer: one rounding; scaled: two; ger: A + alpha x y, possibly contracted to an fma
    t->atol = ger ? 3e-7 * (1 + 4 * fabs(t->f[0])) * 2 : 1e-7;
    t->rtol = 1e-6;
}

static void mxop_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, mxop_tn[t->p[MXOP_OP]][t->p[MXOP_TNAME]]);
    int ger = t->p[MXOP_OP] == 2, M = t->p[MXOP_M], N = t->p[MXOP_N];
    const char *x = t->in[ger].name, *y = t->in[ger + 1].name, *c = t->out[0].name, *A = t->in[0].name,
               *al = fnum(t->f[0]);
    buf_printf(desc, "%s has %d elements and %s has %d. ", x, M, y, N);
    if (t->p[MXOP_OP] == 0)
        buf_printf(desc, "Compute the %d x %d row-major outer product %s[i][j] = %s[i] * %s[j].", M, N, c, x, y);
    else if (!ger)
        buf_printf(desc, "Compute the %d x %d row-major matrix %s[i][j] = %s * %s[i] * %s[j].", M, N, c, al, x, y);
    else
        buf_printf(desc, "%s is %s x %d row-major float32 matrix. Compute the rank-1 update %s[i][j] = %s[i][j] + "
                   "%s * %s[i] * %s[j].", A, a_num(M), N, c, A, al, x, y);
    buf_puts(desc, pick3(t->p[MXOP_MODE], " One thread per output element on a 2-D grid of 2-D blocks (dim3).",
                         " Use a 2-D grid of 2-D blocks (dim3); each block first stages the slices of both vectors "
                         "it needs in shared memory.",
                         " Use a 1-D grid-stride loop over the flat output index (row = i / columns, column = i % "
                         "columns)."));
}

// One thread per element on a 2-D grid (mx_loop2d), the block's vector slices staged in shared
// memory, or mx_flat.
static const char mxop_shared_tpl[] = R"(
__shared__ float xs[BLOCK_Y];
__shared__ float ys[BLOCK_X];
const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
const int col = blockIdx.x * BLOCK_X + threadIdx.x;
if (threadIdx.x == 0 && row < $M) xs[threadIdx.y] = $x[row];
if (threadIdx.y == 0 && col < $N) ys[threadIdx.x] = $y[col];
__syncthreads();
if (row < $M && col < $N) {
    const int idx = row * $N + col;
    $c[idx] = $A_idx${alpha}xs[threadIdx.y] * ys[threadIdx.x];
}
)";

static void mxop_kernels(const Task *t, Emit *e) {
    const char *const *dn = mx_dnames[t->p[MXOP_DNAMES]], *M = dn[0], *N = dn[1], *i = IDX(t);
    int ger = t->p[MXOP_OP] == 2, mode = t->p[MXOP_MODE];
    const char *A = t->in[0].name, *x = t->in[ger].name, *y = t->in[ger + 1].name, *c = t->out[0].name;
    const char *al = t->p[MXOP_OP] ? fmt("%s * ", flit(t->f[0])) : "", *Ai = ger ? fmt("%s[idx] + ", A) : "";
    const int *bd = mx_bdims[t->p[MXOP_BDIM]];
    const char *product = fmt("%s%s[row] * %s[col];", al, x, y); // what ger adds to A
    const char *body =
        mode == 0 ? mx_loop2d(t, 0, t->p[MXOP_GUARD], 0, "row", "col", M, N,
                              fmt("const int idx = row * %s + col;\n%s[idx] = %s%s", N, c, Ai, product))
        : mode == 1 ? FRAG(mxop_shared_tpl, "M", M, "N", N, "x", x, "y", y, "c", c, "A_idx", Ai, "alpha", al)
                    : mx_flat(t, LOOP_GRID, "row", "col", M, N,
                              fmt("%s[%s] = %s%s", c, i, ger ? fmt("%s[%s] + ", A, i) : "", product));
    emit_kernel(e, t, mode == 1 ? fmt("#define BLOCK_X %d\n#define BLOCK_Y %d\n\n", bd[0], bd[1]) : "", "",
                fmt("%s[i][j] = %s%s%s[i] * %s[j]%s.", c, ger ? fmt("%s[i][j] + ", A) : "",
                    t->p[MXOP_OP] ? fmt("%s * ", fnum(t->f[0])) : "", x, y,
                    mode == 1 ? "; the block's slices of the vectors are staged in shared memory" : ""),
                fmt("int %s, int %s", M, N), body);
}

static void mxop_launch(const Task *t, Emit *e, const Host *h) {
    const char *M = h->size[0], *N = h->size[1], *args = kernel_args(h, 2);
    if (t->p[MXOP_MODE] == 2)
        launch_1d(e, t, t->kname[0], fmt("%s * %s", M, N), t->p[MXOP_BLOCK], t->p[MXOP_CAP], args);
    else if (t->p[MXOP_MODE] == 1)
        launch_2d(e, t, (Launch2D){ .dims = t->p[MXOP_DIMS], .bx = "BLOCK_X", .by = "BLOCK_Y", .xc = N, .yc = M,
                                    .args = args });
    else mx_launch_bd(e, t, t->p[MXOP_BDIM], (Launch2D){ .dims = t->p[MXOP_DIMS], .xc = N, .yc = M, .args = args });
}

static void mxop_ref(const Task *t, const void *const *in, void *const *out) {
    long M = t->p[MXOP_M], N = t->p[MXOP_N];
    int ger = t->p[MXOP_OP] == 2;
    const float *A = ger ? in[0] : NULL, *x = in[ger], *y = in[ger + 1];
    double al = t->p[MXOP_OP] ? fpar(t, 0) : 1.0;
    float *c = out[0];
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) c[i * N + j] = (float)((A ? A[i * N + j] : 0.0) + al * x[i] * y[j]);
}

static const Family fam_mx_outer = {
    "outer_product",
    "C = x y^T, alpha x y^T, or A + alpha x y^T: 2-D dim3 grid, vectors staged in shared memory, or flat grid-stride",
    mxop_params, mxop_fp, mxop_draw, mxop_layout, mxop_describe, mxop_kernels, mxop_launch, mxop_ref };

// ----------------------------------------------------------------------------
// Batched small matrix multiply, the batch index in blockIdx.z

enum { MXBM_SHAPE, MXBM_N, MXBM_BATCH, MXBM_MODE, MXBM_BDIM, MXBM_TDEF, MXBM_PAD, MXBM_GUARD, MXBM_DIMS, MXBM_KNAME,
       MXBM_NAMES, MXBM_TNAME, MXBM_DNAMES, MXBM_NP };
static const char *const mxbm_shapes[] = { "both_batched", "shared_rhs", NULL };
static const char *const mxbm_modes[] = { "global", "shared", NULL };
static const ParamDesc mxbm_params[] = {
    [MXBM_SHAPE] = { "shape", mxbm_shapes, 1, "0 0 0 0 0 0 0 1 1 1" },
    [MXBM_N] = { "n", NULL, 1, "4 8 16 24 32 48 64" },
    [MXBM_BATCH] = { "batch", NULL, 1, "16 32 64 100 128 256 500 1000 2048" },
    [MXBM_MODE] = { "mode", mxbm_modes, 1, "*" }, [MXBM_BDIM] = { "bdim", NULL, 1, "0 2 4 1" },
    [MXBM_TDEF] = { "tdef", NULL, 0, "0..1" }, [MXBM_PAD] = { "pad", NULL, 0, "0..1" },
    [MXBM_GUARD] = { "guard", NULL, 0, "0..1" }, [MXBM_DIMS] = { "dims", NULL, 0, "0..3" },
    [MXBM_KNAME] = { "kname", NULL, 0, "0..3" }, [MXBM_NAMES] = { "names", NULL, 0, "0..3" },
    [MXBM_TNAME] = { "tname", NULL, 0, "0..2" }, [MXBM_DNAMES] = { "dnames", NULL, 0, "0..2" }, [MXBM_NP] = { NULL } };
static const char *const mxbm_dnames[][3] = { { "batch", "n", "nn" }, { "count", "dim", "elems" },
                                              { "num_mats", "order", "mat_size" } };
static const char *const mxbm_names[] = { "A B C", "lhs rhs out", "X W Y", "mats_a mats_b mats_c" };
static const char *const mxbm_kn[] = { "batched_matmul", "bmmKernel", "matmul_batched", "batch_gemm" };

static void mxbm_draw(Task *t, Rng *r) {
    long el;
    while ((el = (long)t->p[MXBM_BATCH] * t->p[MXBM_N] * t->p[MXBM_N]) > 4200000 || el < 4096) {
        t->p[MXBM_N] = param_pick(&t->fam->ip[MXBM_N], r);
        t->p[MXBM_BATCH] = param_pick(&t->fam->ip[MXBM_BATCH], r);
    }
    if (t->p[MXBM_N] > 32) t->p[MXBM_MODE] = 0; // one block per matrix: at most 32 x 32 threads
    if (t->p[MXBM_MODE]) t->p[MXBM_BDIM] = 0;
    else t->p[MXBM_TDEF] = t->p[MXBM_PAD] = 0;
    task_names(t, 2, mxbm_names[t->p[MXBM_NAMES]], mxbm_kn[t->p[MXBM_KNAME]], "batched_matmul");
}

// A [B, N, N] tensor, batch * (n * n) elements (size constants 0 and 2).
static void mxbm_batched(Tensor *x, long B, long N) {
    tshape(x, DT_F32, 3, B, N, 0, 2);
    x->shape[2] = N;
}

static void mxbm_layout(Task *t) {
    long B = t->p[MXBM_BATCH], N = t->p[MXBM_N];
    mx_begin(t, 2, mxbm_dnames[t->p[MXBM_DNAMES]], B, N, N * N); // sizes: batch, n, n * n
    mxbm_batched(&t->in[0], B, N);
    if (t->p[MXBM_SHAPE] == 1) tshape(&t->in[1], DT_F32, 2, N, N, 1, 1); // one matrix for all
    else mxbm_batched(&t->in[1], B, N);
    for (int k = 0; k < 2; k++) trange(&t->in[k], -1, 1, 0);
    mxbm_batched(&t->out[0], B, N);
    mx_sum_tol(t, N, 1.0);
}

static void mxbm_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, pick3(t->p[MXBM_TNAME], "Batched_Matrix_Multiply", "Batched_GEMM", "Many_Small_Matmuls"));
    const char *a = t->in[0].name, *b = t->in[1].name, *c = t->out[0].name;
    int B = t->p[MXBM_BATCH], N = t->p[MXBM_N];
    if (t->p[MXBM_SHAPE] == 0)
        buf_printf(desc, "%s and %s hold %d row-major %d x %d float32 matrices each (shape [%d, %d, %d]). Compute "
                   "%s[b] = %s[b] * %s[b] for every b.", a, b, B, N, N, B, N, N, c, a, b);
    else
        buf_printf(desc, "%s holds %d row-major %d x %d float32 matrices (shape [%d, %d, %d]) and %s is one %d x %d "
                   "matrix. Compute %s[b] = %s[b] * %s for every b.", a, B, N, N, B, N, N, b, N, N, c, a, b);
    if (t->p[MXBM_MODE] == 0)
        buf_puts(desc, " Use a 3-D grid (dim3): blockIdx.z is the batch index, x and y cover the columns and rows of "
                       "the output, one thread per output element.");
    else
        buf_printf(desc, " Use one %d x %d thread block per matrix (blockIdx.z is the batch index): load both operands "
                   "into shared memory, synchronise, then each thread computes one output element.", N, N);
}

// A 3-D grid, one thread per output element, or one N x N block per matrix with both operands
// in shared memory.
static const char *const mxbm_body_tpl[] = { R"(
const int item = blockIdx.z;
$index
$guarded
)", R"(
__shared__ float sa[$D][$D$pad];
__shared__ float sb[$D][$D$pad];
const int item = blockIdx.z;
if (item >= $B) return; // uniform across the block
const int r = threadIdx.y, c = threadIdx.x;
const size_t off = (size_t)item * $D * $D;
sa[r][c] = $a[off + r * $D + c];
sb[r][c] = $b[${off}r * $D + c];
__syncthreads();
float acc = 0.0f;
#pragma unroll
for (int p = 0; p < $D; ++p) acc += sa[r][p] * sb[p][c];
$c[off + r * $D + c] = acc;
)" };
static const char mxbm_product_tpl[] = R"(
const size_t off = (size_t)item * $n * $n;
const float *pa = $a + off;
const float *pb = $b$b_off;
float acc = 0.0f;
for (int p = 0; p < $n; ++p) acc += pa[row * $n + p] * pb[p * $n + col];
$c[off + row * $n + col] = acc;
)";

static void mxbm_kernels(const Task *t, Emit *e) {
    const char *const *dn = mxbm_dnames[t->p[MXBM_DNAMES]];
    const char *a = t->in[0].name, *b = t->in[1].name, *c = t->out[0].name, *B = dn[0], *n = dn[1];
    int shared_rhs = t->p[MXBM_SHAPE] == 1, tmpl = t->p[MXBM_TDEF], mode = t->p[MXBM_MODE];
    const char *D = tmpl ? "TILE_N" : "MAT_DIM";
    const char *product = FRAG(mxbm_product_tpl, "n", n, "a", a, "b", b, "c", c, "b_off", shared_rhs ? "" : " + off");
    const char *guarded = mx_guard(t->p[MXBM_GUARD], fmt("item < %s && row < %s && col < %s", B, n, n),
                                   fmt("item >= %s || row >= %s || col >= %s", B, n, n), product);
    const char *body = FRAG(mxbm_body_tpl[mode], "a", a, "b", b, "c", c, "B", B, "D", D,
                            "pad", t->p[MXBM_PAD] ? " + 1" : "", "off", shared_rhs ? "" : "off + ",
                            "index", mx_index2d(t, "row", "col", 0), "guarded", guarded);
    const char *comment =
        mode ? fmt("One %s x %s block per matrix (blockIdx.z): both operands in shared memory, one thread per output "
                   "element.", D, D)
             : fmt("%s[item] = %s[item] * %s%s; blockIdx.z selects the matrix, one thread per output element.", c, a,
                   b, shared_rhs ? "" : "[item]");
    // the global kernel has no tile constant (draw sets tdef 0), and it reads n too
    emit_kernel(e, t, mode && !tmpl ? fmt("#define MAT_DIM %d\n\n", t->p[MXBM_N]) : "",
                tmpl ? "template <int TILE_N>" : "", comment, mode ? fmt("int %s", B) : fmt("int %s, int %s", B, n),
                body);
}

static const char *const mxbm_launch_tpl[] = { R"(
dim3 block($D, $D);
dim3 grid(1, 1, $B);
$k<<<grid, block>>>($args);
)", R"(
const dim3 threads($D, $D), blocks(1, 1, $B);
$k<<<blocks, threads>>>($args);
)", R"(
$k<<<dim3(1, 1, $B), dim3($D, $D)>>>($args);
)", R"(
dim3 block_dim($D, $D);
dim3 grid_dim;
grid_dim.z = $B; // one block per matrix
$k<<<grid_dim, block_dim>>>($args);
)" };

static void mxbm_launch(const Task *t, Emit *e, const Host *h) {
    const char *B = h->size[0], *n = h->size[1];
    if (t->p[MXBM_MODE] == 0)
        mx_launch_bd(e, t, t->p[MXBM_BDIM], (Launch2D){ .dims = t->p[MXBM_DIMS], .xc = n, .yc = n, .zc = B,
                                                        .args = kernel_args(h, 2) });
    else TPL(e, t, mxbm_launch_tpl[t->p[MXBM_DIMS]], "D", n, "B", B, "args", kernel_args(h, 1),
             "k", t->p[MXBM_TDEF] ? fmt("%s<%d>", t->kname[0], t->p[MXBM_N]) : t->kname[0]);
}

static void mxbm_ref(const Task *t, const void *const *in, void *const *out) {
    long B = t->p[MXBM_BATCH], N = t->p[MXBM_N];
    const float *a = in[0], *b = in[1];
    float *c = out[0];
    for (long k = 0; k < B; k++)
        mxmm_ref_core(0, N, N, N, a + k * N * N, t->p[MXBM_SHAPE] == 1 ? b : b + k * N * N, c + k * N * N);
}

static const Family fam_mx_matmul_batched = {
    "matmul_batched",
    "many small N x N products, batch index in blockIdx.z: global loads on a 3-D"
    " grid or one block per matrix with shared operands",
    mxbm_params, NULL, mxbm_draw, mxbm_layout, mxbm_describe, mxbm_kernels, mxbm_launch, mxbm_ref };

static const Family *const families_matrix[] = {
    &fam_mx_transpose_naive, &fam_mx_transpose_tiled, &fam_mx_matrix_ew2d, &fam_mx_matmul_naive, &fam_mx_matmul_tiled,
    &fam_mx_matvec_thread, &fam_mx_matvec_warp, &fam_mx_vecmat, &fam_mx_outer, &fam_mx_matmul_batched, NULL };
