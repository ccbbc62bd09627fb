// families_reduce.c - reductions: a shared-memory tree reduction per block (finished by
// a second pass over the block partials or by atomics), and warp-shuffle reductions
// (__shfl_down_sync / __shfl_xor_sync) over a whole array or one warp per matrix row.
// Included by corpus.c.

static const int red_sizes[] = { 1000, 4096, 65536, 100000, 262144, 1000000, 1048576 };

// ----------------------------------------------------------------------------
// Block reduction in shared memory

enum { RB_OP, RB_N, RB_BLOCK, RB_FINISH, RB_LOAD, RB_SHMEM, RB_KNAME, RB_NAMES, RB_TNAME, RB_CAP, RB_NP };
static const char *const rb_ops[] = { "sum", "sumsq", "absmax", NULL };
static const char *const rb_finish[] = { "two_pass", "atomic", NULL };
static const char *const rb_loads[] = { "one_per_thread", "two_per_thread", "grid_stride", NULL };
static const char *const rb_shmem[] = { "define", "template", "dynamic", NULL };
static const ParamDesc rb_params[] = {
    { "op", rb_ops, 1 }, { "n", NULL, 1 }, { "block", NULL, 1 }, { "finish", rb_finish, 1 }, { "load", rb_loads, 1 },
    { "shmem", rb_shmem, 0 }, { "kname", NULL, 0 }, { "names", NULL, 0 }, { "tname", NULL, 0 }, { "cap", NULL, 0 },
    { NULL, NULL, 0 } };
static const char *const rb_names[][2] = { { "x", "sum" }, { "input", "total" }, { "values", "result" }, { "data", "out" } };
static const char *const rb_kn[3][4] = { { "reduce_sum", "blockReduceSum", "sum_kernel", "reduce_block" },
                                         { "reduce_sumsq", "sumOfSquares", "sumsq_kernel", "reduce_squares" },
                                         { "reduce_absmax", "absMaxKernel", "absmax_kernel", "reduce_max_abs" } };

static void rb_draw(Task *t, Rng *r) {
    static const int blocks[] = { 128, 256, 512, 1024 };
    static const int caps[] = { 128, 256, 1024 };
    t->p[RB_OP] = rng_int(r, 0, 2);
    t->p[RB_N] = red_sizes[RPICK(r, red_sizes)];
    t->p[RB_BLOCK] = blocks[RPICK(r, blocks)];
    t->p[RB_FINISH] = rng_int(r, 0, 1);
    t->p[RB_LOAD] = rng_int(r, 0, 2);
    t->p[RB_SHMEM] = rng_int(r, 0, 2);
    t->p[RB_KNAME] = rng_int(r, 0, 3);
    t->p[RB_NAMES] = rng_int(r, 0, 3);
    t->p[RB_TNAME] = rng_int(r, 0, 2);
    t->p[RB_CAP] = caps[RPICK(r, caps)];
    snprintf(t->in[0].name, sizeof t->in[0].name, "%s", rb_names[t->p[RB_NAMES]][0]);
    snprintf(t->out[0].name, sizeof t->out[0].name, "%s", rb_names[t->p[RB_NAMES]][1]);
    snprintf(t->kname[0], sizeof t->kname[0], "%s", rb_kn[t->p[RB_OP]][t->p[RB_KNAME]]);
    static const char *const fin[] = { "reduce_final", "finalReduce", "reduce_partials", "finish_reduction" };
    snprintf(t->kname[1], sizeof t->kname[1], "%s", fin[t->p[RB_KNAME]]);
    snprintf(t->slug, sizeof t->slug, "%s", rb_ops[t->p[RB_OP]]);
}

// A reduction over n values in [-1, 1): float sums differ with the order of additions.
static void red_tolerance(Task *t, long n, int exact) {
    t->atol = exact ? 0 : 1e-4 * sqrt((double)n) + 1e-5;
    t->rtol = exact ? 0 : 1e-4;
}

static void rb_layout(Task *t) {
    t->nsize = 0;
    t->nin = t->nout = 1;
    int n = add_size(t, "n", t->p[RB_N]);
    tset(&t->in[0], DT_F32, 1, t->p[RB_N], 0);
    tfac(&t->in[0], n, -1);
    trange(&t->in[0], -1, 1, 0);
    tset(&t->out[0], DT_F32, 1, 1, 0);
    tfac(&t->out[0], -1, -1);
    t->out[0].zero_init = t->p[RB_FINISH] == 1;
    red_tolerance(t, t->p[RB_N], t->p[RB_OP] == 2);
}

static void rb_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[3][3] = { { "Sum_Reduction", "Array_Sum", "Parallel_Reduction_Sum" },
                                          { "Sum_Of_Squares", "Squared_Norm", "Sum_Squares_Reduction" },
                                          { "Max_Abs_Reduction", "Absolute_Maximum", "Infinity_Norm" } };
    buf_puts(name, nm[t->p[RB_OP]][t->p[RB_TNAME]]);
    const char *x = t->in[0].name, *o = t->out[0].name;
    static const char *const what[] = { "the sum of all %d elements of %s", "the sum of the squares of all %d elements of %s",
                                        "the largest absolute value among the %d elements of %s" };
    buf_printf(desc, "Compute %s[0] = ", o);
    buf_printf(desc, what[t->p[RB_OP]], t->p[RB_N], x);
    buf_puts(desc, ". Each block reduces its part in shared memory with a tree of __syncthreads() steps");
    if (t->p[RB_FINISH] == 0) buf_puts(desc, "; a second kernel launch reduces the per-block partial results.");
    else if (t->p[RB_OP] == 2) buf_puts(desc, "; block results are combined with atomicMax on the float bits (valid because they are non-negative).");
    else buf_puts(desc, "; block results are combined with atomicAdd.");
}

static const char *rb_f(const Task *t, const char *v) {
    return t->p[RB_OP] == 0 ? v : t->p[RB_OP] == 1 ? fmt("%s * %s", v, v) : fmt("fabsf(%s)", v);
}
static const char *rb_comb(const Task *t, const char *a, const char *b) {
    return t->p[RB_OP] == 2 ? fmt("fmaxf(%s, %s)", a, b) : fmt("%s + %s", a, b);
}

// The tree over sdata[0..B) and the __syncthreads() steps.
static void rb_tree(const Task *t, Emit *e, const char *B) {
    em_note(e, t, "tree reduction: halve the active threads each step");
    em_line(e, "for (unsigned int s = %s / 2; s > 0; s >>= 1) {", B);
    em_in(e);
    em_line(e, "if (tid < s) sdata[tid] = %s;", rb_comb(t, "sdata[tid]", "sdata[tid + s]"));
    em_line(e, "__syncthreads();");
    em_out(e);
    em_line(e, "}");
}

static void rb_kernels(const Task *t, Emit *e) {
    int sh = t->p[RB_SHMEM], load = t->p[RB_LOAD], fin = t->p[RB_FINISH], op = t->p[RB_OP];
    const char *B = sh == 0 ? "BLOCK_SIZE" : sh == 1 ? "BLOCK" : "blockDim.x";
    const char *tmpl = sh == 1 ? "template <int BLOCK>\n" : "";
    const char *x = t->in[0].name;
    if (sh == 0) {
        em_line(e, "#define BLOCK_SIZE %d", t->p[RB_BLOCK]);
        em_blank(e);
    }
    const char *outp = fin == 0 ? "partial" : t->out[0].name;
    em_comment(e, t, fin == 0 ? "Pass 1: each block reduces its elements and writes one partial result."
                              : "Each block reduces its elements in shared memory; thread 0 adds the block's result to the output.", 0);
    em_fn_open(e, t, SPAN_GLOBAL, tmpl, "__global__ void", t->kname[0],
               fmt("%s, %s, int n", ptr_param(t, "float", x, 1), ptr_param(t, "float", outp, 0)));
    if (sh == 2) em_line(e, "extern __shared__ float sdata[];");
    else em_line(e, "__shared__ float sdata[%s];", B);
    em_line(e, "const unsigned int tid = threadIdx.x;");
    if (load == 0) {
        em_line(e, "const unsigned int i = blockIdx.x * blockDim.x + tid;");
        em_line(e, "sdata[tid] = i < n ? %s : 0.0f;", rb_f(t, fmt("%s[i]", x)));
    } else if (load == 1) {
        em_note(e, t, "each thread starts with two elements, one block width apart");
        em_line(e, "const unsigned int i = blockIdx.x * (blockDim.x * 2) + tid;");
        em_line(e, "float v = 0.0f;");
        em_line(e, "if (i < n) v = %s;", rb_f(t, fmt("%s[i]", x)));
        em_line(e, "if (i + blockDim.x < n) v = %s;", rb_comb(t, "v", rb_f(t, fmt("%s[i + blockDim.x]", x))));
        em_line(e, "sdata[tid] = v;");
    } else {
        em_note(e, t, "grid-stride accumulation first");
        em_line(e, "float v = 0.0f;");
        em_line(e, "for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) {");
        em_in(e);
        em_line(e, "v = %s;", rb_comb(t, "v", rb_f(t, fmt("%s[i]", x))));
        em_out(e);
        em_line(e, "}");
        em_line(e, "sdata[tid] = v;");
    }
    em_line(e, "__syncthreads();");
    rb_tree(t, e, B);
    em_line(e, "if (tid == 0) {");
    em_in(e);
    if (fin == 0) em_line(e, "partial[blockIdx.x] = sdata[0];");
    else if (op == 2) em_line(e, "atomicMax((int *)%s, __float_as_int(sdata[0]));", outp);
    else em_line(e, "atomicAdd(%s, sdata[0]);", outp);
    em_out(e);
    em_line(e, "}");
    em_fn_close(e);
    if (fin == 0 && !(load == 2 && op != 1)) {
        em_blank(e);
        em_comment(e, t, "Pass 2: one block reduces the per-block partial results.", 0);
        em_fn_open(e, t, SPAN_GLOBAL, tmpl, "__global__ void", t->kname[1],
                   fmt("%s, %s, int count", ptr_param(t, "float", "partial", 1), ptr_param(t, "float", t->out[0].name, 0)));
        if (sh == 2) em_line(e, "extern __shared__ float sdata[];");
        else em_line(e, "__shared__ float sdata[%s];", B);
        em_line(e, "const unsigned int tid = threadIdx.x;");
        em_line(e, "float v = 0.0f;");
        em_line(e, "for (int i = tid; i < count; i += blockDim.x) v = %s;", rb_comb(t, "v", "partial[i]"));
        em_line(e, "sdata[tid] = v;");
        em_line(e, "__syncthreads();");
        rb_tree(t, e, B);
        em_line(e, "if (tid == 0) %s[0] = sdata[0];", t->out[0].name);
        em_fn_close(e);
    }
}

static void rb_launch(const Task *t, Emit *e, const Host *h) {
    int sh = t->p[RB_SHMEM], load = t->p[RB_LOAD], fin = t->p[RB_FINISH], op = t->p[RB_OP], B = t->p[RB_BLOCK];
    const char *n = h->size[0];
    const char *k1 = sh == 1 ? fmt("%s<%d>", t->kname[0], B) : t->kname[0];
    int reuse = load == 2 && op != 1;
    const char *k2 = reuse ? k1 : sh == 1 ? fmt("%s<%d>", t->kname[1], B) : t->kname[1];
    if (sh == 0) em_line(e, "const int threads = BLOCK_SIZE;");
    else em_line(e, "const int threads = %d;", B);
    if (load == 0) em_line(e, "const int blocks = (%s + threads - 1) / threads;", n);
    else if (load == 1) em_line(e, "const int blocks = (%s + 2 * threads - 1) / (2 * threads);", n);
    else {
        em_line(e, "int blocks = (%s + threads - 1) / threads;", n);
        em_line(e, "if (blocks > %d) blocks = %d;", t->p[RB_CAP], t->p[RB_CAP]);
    }
    const char *cfg = sh == 2 ? "blocks, threads, threads * sizeof(float)" : "blocks, threads";
    const char *cfg1 = sh == 2 ? "1, threads, threads * sizeof(float)" : "1, threads";
    if (fin == 1) {
        em_launch(e, k1, cfg, fmt("%s, %s, %s", h->in[0], h->out[0], n));
        return;
    }
    const char *pn = fmt("%spartial%s", dev_affix[t->st.devname][0], dev_affix[t->st.devname][1]);
    host_dev_alloc(e, t, "float", pn, "blocks");
    em_launch(e, k1, cfg, fmt("%s, %s, %s", h->in[0], pn, n));
    em_launch(e, k2, cfg1, fmt("%s, %s, blocks", pn, h->out[0]));
    host_call(e, t, "cudaDeviceSynchronize()");
    host_call(e, t, "cudaFree(%s)", pn);
}

static void rb_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    double acc = 0;
    for (long i = 0; i < t->p[RB_N]; i++) {
        double v = x[i];
        if (t->p[RB_OP] == 0) acc += v;
        else if (t->p[RB_OP] == 1) acc += v * v;
        else if (fabs(v) > acc) acc = fabs(v);
    }
    ((float *)out[0])[0] = (float)acc;
}

static const Family fam_reduce_block = { "reduce_block", "sum / sum of squares / max |x| with a shared-memory tree and __syncthreads; second pass or atomics",
                                         rb_params, NULL, rb_draw, rb_layout, rb_describe, rb_kernels, rb_launch, rb_ref };

// ----------------------------------------------------------------------------
// Warp-shuffle reductions

enum { RW_OP, RW_N, RW_ROWS, RW_COLS, RW_BLOCK, RW_SHFL, RW_HELPER, RW_MASK, RW_KNAME, RW_NAMES, RW_TNAME, RW_CAP, RW_NP };
static const char *const rw_ops[] = { "total_sum", "block_sum", "row_sum", "row_max", "row_norm", NULL };
static const char *const rw_shfl[] = { "down", "xor", NULL };
static const ParamDesc rw_params[] = {
    { "op", rw_ops, 1 }, { "n", NULL, 1 }, { "rows", NULL, 1 }, { "cols", NULL, 1 }, { "block", NULL, 1 }, { "shfl", rw_shfl, 1 },
    { "helper", NULL, 0 }, { "mask", NULL, 0 }, { "kname", NULL, 0 }, { "names", NULL, 0 }, { "tname", NULL, 0 }, { "cap", NULL, 0 },
    { NULL, NULL, 0 } };
static const char *const rw_names[][2] = { { "x", "out" }, { "input", "result" }, { "values", "sums" }, { "data", "reduced" } };
static const char *const rw_kn[5][4] = { { "warp_sum_kernel", "warpReduceSumKernel", "sum_shfl", "reduce_warp" },
                                         { "block_sum_kernel", "blockSumWarps", "sum_two_level", "reduce_block_warps" },
                                         { "row_sum_kernel", "rowSumWarp", "row_sums", "sum_rows" },
                                         { "row_max_kernel", "rowMaxWarp", "row_max", "max_rows" },
                                         { "row_norm_kernel", "rowNormWarp", "row_l2_norm", "norm_rows" } };

static int rw_is_row(const Task *t) { return t->p[RW_OP] >= 2; }

static void rw_draw(Task *t, Rng *r) {
    static const int rows[] = { 128, 1000, 4096, 10000 };
    static const int cols[] = { 32, 100, 256, 1000, 1024, 4096 };
    static const int blocks_total[] = { 128, 256, 512, 1024 };
    static const int blocks_row[] = { 32, 64, 128, 256 };
    static const int caps[] = { 256, 1024, 2048 };
    t->p[RW_OP] = rng_int(r, 0, 4);
    if (rw_is_row(t)) {
        t->p[RW_N] = 0;
        do {
            t->p[RW_ROWS] = rows[RPICK(r, rows)];
            t->p[RW_COLS] = cols[RPICK(r, cols)];
        } while ((long)t->p[RW_ROWS] * t->p[RW_COLS] > 2100000);
        t->p[RW_BLOCK] = blocks_row[RPICK(r, blocks_row)];
    } else {
        t->p[RW_N] = red_sizes[RPICK(r, red_sizes)];
        t->p[RW_ROWS] = t->p[RW_COLS] = 0;
        t->p[RW_BLOCK] = blocks_total[RPICK(r, blocks_total)];
    }
    t->p[RW_SHFL] = rng_int(r, 0, 1);
    t->p[RW_HELPER] = rng_int(r, 0, 2);
    t->p[RW_MASK] = rng_int(r, 0, 2);
    t->p[RW_KNAME] = rng_int(r, 0, 3);
    t->p[RW_NAMES] = rng_int(r, 0, 3);
    t->p[RW_TNAME] = rng_int(r, 0, 2);
    t->p[RW_CAP] = caps[RPICK(r, caps)];
    snprintf(t->in[0].name, sizeof t->in[0].name, "%s", rw_names[t->p[RW_NAMES]][0]);
    snprintf(t->out[0].name, sizeof t->out[0].name, "%s", rw_names[t->p[RW_NAMES]][1]);
    snprintf(t->kname[0], sizeof t->kname[0], "%s", rw_kn[t->p[RW_OP]][t->p[RW_KNAME]]);
    static const char *const hn[] = { "warp_reduce", "warpReduce", "warp_allreduce", "shfl_reduce" };
    snprintf(t->kname[1], sizeof t->kname[1], "%s%s", hn[t->p[RW_KNAME]], t->p[RW_OP] == 3 ? (t->p[RW_KNAME] == 1 ? "Max" : "_max") : (t->p[RW_KNAME] == 1 ? "Sum" : "_sum"));
    snprintf(t->slug, sizeof t->slug, "%s", rw_ops[t->p[RW_OP]]);
}

static void rw_layout(Task *t) {
    t->nsize = 0;
    t->nin = t->nout = 1;
    if (rw_is_row(t)) {
        int rr = add_size(t, "rows", t->p[RW_ROWS]), cc = add_size(t, "cols", t->p[RW_COLS]);
        tset(&t->in[0], DT_F32, 2, t->p[RW_ROWS], t->p[RW_COLS]);
        tfac(&t->in[0], rr, cc);
        tset(&t->out[0], DT_F32, 1, t->p[RW_ROWS], 0);
        tfac(&t->out[0], rr, -1);
        trange(&t->in[0], -1, 1, 0);
        if (t->p[RW_OP] == 3) { t->atol = 0; t->rtol = 0; }
        else if (t->p[RW_OP] == 4) { t->atol = 1e-6; t->rtol = 1e-5; }
        else { t->atol = 1e-5 * sqrt((double)t->p[RW_COLS]) + 1e-6; t->rtol = 1e-5; }
    } else {
        int n = add_size(t, "n", t->p[RW_N]);
        tset(&t->in[0], DT_F32, 1, t->p[RW_N], 0);
        tfac(&t->in[0], n, -1);
        tset(&t->out[0], DT_F32, 1, 1, 0);
        tfac(&t->out[0], -1, -1);
        t->out[0].zero_init = 1;
        trange(&t->in[0], -1, 1, 0);
        red_tolerance(t, t->p[RW_N], 0);
    }
    t->need_math = t->p[RW_OP] == 4;
}

static void rw_describe(const Task *t, Buf *name, Buf *desc) {
    static const char *const nm[5][3] = { { "Warp_Shuffle_Sum", "Sum_With_Warp_Shuffles", "Shuffle_Reduction" },
                                          { "Two_Level_Warp_Sum", "Block_Sum_Warp_Shuffle", "Hierarchical_Sum" },
                                          { "Row_Sum", "Matrix_Row_Sums", "Row_Wise_Sum" },
                                          { "Row_Max", "Matrix_Row_Maximum", "Row_Wise_Max" },
                                          { "Row_L2_Norm", "Matrix_Row_Norms", "Row_Wise_Euclidean_Norm" } };
    buf_puts(name, nm[t->p[RW_OP]][t->p[RW_TNAME]]);
    const char *x = t->in[0].name, *o = t->out[0].name, *sh = t->p[RW_SHFL] ? "__shfl_xor_sync" : "__shfl_down_sync";
    switch (t->p[RW_OP]) {
    case 0: buf_printf(desc, "Compute %s[0] = the sum of the %d elements of %s. Reduce within each warp with %s; lane 0 of each warp adds its warp's sum to %s[0] with atomicAdd.", o, t->p[RW_N], x, sh, o); break;
    case 1: buf_printf(desc, "Compute %s[0] = the sum of the %d elements of %s. Reduce within each warp with %s, combine the warp sums of a block through shared memory with a second warp-level step, then atomicAdd the block sum.", o, t->p[RW_N], x, sh); break;
    case 2: buf_printf(desc, "%s is a %d x %d row-major matrix. Compute %s[r] = the sum of row r, one warp per row, reducing across lanes with %s.", x, t->p[RW_ROWS], t->p[RW_COLS], o, sh); break;
    case 3: buf_printf(desc, "%s is a %d x %d row-major matrix. Compute %s[r] = the maximum of row r, one warp per row, reducing across lanes with %s.", x, t->p[RW_ROWS], t->p[RW_COLS], o, sh); break;
    default: buf_printf(desc, "%s is a %d x %d row-major matrix. Compute %s[r] = sqrt(sum of squares of row r), one warp per row, reducing across lanes with %s.", x, t->p[RW_ROWS], t->p[RW_COLS], o, sh); break;
    }
}

// The shuffle loop v = v (op) shfl(v, offset) for offset 16, 8, 4, 2, 1.
static void rw_shuffle(const Task *t, Emit *e, const char *v) {
    const char *mask = t->p[RW_MASK] == 0 ? "0xffffffff" : t->p[RW_MASK] == 1 ? "0xFFFFFFFFu" : "FULL_MASK";
    const char *fn = t->p[RW_SHFL] ? "__shfl_xor_sync" : "__shfl_down_sync";
    const char *s = fmt("%s(%s, %s, offset)", fn, mask, v);
    em_line(e, "#pragma unroll");
    em_line(e, "for (int offset = 16; offset > 0; offset >>= 1) {");
    em_in(e);
    if (t->p[RW_OP] == 3) em_line(e, "%s = fmaxf(%s, %s);", v, v, s);
    else em_line(e, "%s += %s;", v, s);
    em_out(e);
    em_line(e, "}");
}
// Either a call of the helper or the loop inline.
static void rw_reduce(const Task *t, Emit *e, const char *v) {
    if (t->p[RW_HELPER]) em_line(e, "%s = %s(%s);", v, t->kname[1], v);
    else rw_shuffle(t, e, v);
}

static void rw_kernels(const Task *t, Emit *e) {
    const char *x = t->in[0].name, *o = t->out[0].name;
    int op = t->p[RW_OP];
    if (t->p[RW_MASK] == 2) {
        em_line(e, "#define FULL_MASK 0xffffffffu");
        em_blank(e);
    }
    if (t->p[RW_HELPER]) {
        em_comment(e, t, t->p[RW_SHFL] ? "Butterfly reduction across the 32 lanes of a warp; every lane gets the result."
                                       : "Reduction across the 32 lanes of a warp; lane 0 gets the result.", 0);
        em_fn_open(e, t, SPAN_DEVICE, "", t->p[RW_HELPER] == 1 ? "__inline__ __device__ float" : "__device__ __forceinline__ float",
                   t->kname[1], "float v");
        rw_shuffle(t, e, "v");
        em_line(e, "return v;");
        em_fn_close(e);
        em_blank(e);
    }
    if (rw_is_row(t)) {
        em_comment(e, t, "One warp per row: lanes stride over the columns, then reduce with shuffles.", 0);
        em_fn_open(e, t, SPAN_GLOBAL, "", "__global__ void", t->kname[0],
                   fmt("%s, %s, int rows, int cols", ptr_param(t, "float", x, 1), ptr_param(t, "float", o, 0)));
        em_line(e, "const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;");
        em_line(e, "const int lane = threadIdx.x %s;", t->p[RW_KNAME] & 1 ? "& 31" : "% 32");
        em_line(e, "if (warp >= rows) return; // whole warps leave together");
        em_line(e, "const float *row = %s + (size_t)warp * cols;", x);
        em_line(e, "float v = %s;", op == 3 ? "-3.402823466e+38f" : "0.0f");
        em_line(e, "for (int c = lane; c < cols; c += 32) {");
        em_in(e);
        if (op == 2) em_line(e, "v += row[c];");
        else if (op == 3) em_line(e, "v = fmaxf(v, row[c]);");
        else em_line(e, "v += row[c] * row[c];");
        em_out(e);
        em_line(e, "}");
        rw_reduce(t, e, "v");
        em_line(e, "if (lane == 0) %s[warp] = %s;", o, op == 4 ? "sqrtf(v)" : "v");
        em_fn_close(e);
        return;
    }
    em_comment(e, t, op == 0 ? "Grid-stride partial sums per thread, a warp-level shuffle reduction, one atomicAdd per warp."
                             : "Per-thread partial sums, warp shuffles, warp sums through shared memory, one atomicAdd per block.", 0);
    em_fn_open(e, t, SPAN_GLOBAL, "", "__global__ void", t->kname[0],
               fmt("%s, %s, int n", ptr_param(t, "float", x, 1), ptr_param(t, "float", o, 0)));
    if (op == 1) em_line(e, "__shared__ float warp_sums[32];");
    em_line(e, "float v = 0.0f;");
    em_line(e, "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {");
    em_in(e);
    em_line(e, "v += %s[i];", x);
    em_out(e);
    em_line(e, "}");
    rw_reduce(t, e, "v");
    if (op == 0) {
        em_line(e, "if ((threadIdx.x & 31) == 0) atomicAdd(%s, v);", o);
    } else {
        em_line(e, "const int lane = threadIdx.x %% 32, warp = threadIdx.x / 32;");
        em_line(e, "if (lane == 0) warp_sums[warp] = v;");
        em_line(e, "__syncthreads();");
        em_line(e, "if (warp == 0) {");
        em_in(e);
        em_line(e, "v = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;");
        rw_reduce(t, e, "v");
        em_line(e, "if (lane == 0) atomicAdd(%s, v);", o);
        em_out(e);
        em_line(e, "}");
    }
    em_fn_close(e);
}

static void rw_launch(const Task *t, Emit *e, const Host *h) {
    int B = t->p[RW_BLOCK];
    if (rw_is_row(t)) {
        const char *args = fmt("%s, %s, %s, %s", h->in[0], h->out[0], h->size[0], h->size[1]);
        if (t->st.cfg & 1) {
            em_line(e, "const int warps_per_block = %d;", B / 32);
            em_line(e, "const int blocks = (%s + warps_per_block - 1) / warps_per_block;", h->size[0]);
            em_launch(e, t->kname[0], "blocks, warps_per_block * 32", args);
        } else {
            em_dim3(e, NULL, fmt("block(%d)", B));
            em_dim3(e, NULL, fmt("grid((%s * 32 + block.x - 1) / block.x)", h->size[0]));
            em_launch(e, t->kname[0], "grid, block", args);
        }
        return;
    }
    launch_1d(e, t, t->kname[0], h->size[0], B, t->p[RW_CAP], fmt("%s, %s, %s", h->in[0], h->out[0], h->size[0]));
}

static void rw_ref(const Task *t, const void *const *in, void *const *out) {
    const float *x = in[0];
    float *o = out[0];
    if (!rw_is_row(t)) {
        double s = 0;
        for (long i = 0; i < t->p[RW_N]; i++) s += x[i];
        o[0] = (float)s;
        return;
    }
    long R = t->p[RW_ROWS], C = t->p[RW_COLS];
    for (long r = 0; r < R; r++) {
        double s = t->p[RW_OP] == 3 ? -INFINITY : 0;
        for (long c = 0; c < C; c++) {
            double v = x[r * C + c];
            if (t->p[RW_OP] == 2) s += v;
            else if (t->p[RW_OP] == 3) s = v > s ? v : s;
            else s += v * v;
        }
        o[r] = (float)(t->p[RW_OP] == 4 ? sqrt(s) : s);
    }
}

static const Family fam_reduce_warp = { "reduce_warp", "warp-shuffle reductions: whole-array sum (per warp or two-level), row sum/max/L2 norm with one warp per row",
                                        rw_params, NULL, rw_draw, rw_layout, rw_describe, rw_kernels, rw_launch, rw_ref };

static const Family *const families_reduce[] = { &fam_reduce_block, &fam_reduce_warp, NULL };
