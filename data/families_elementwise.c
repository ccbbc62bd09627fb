// families_elementwise.c - element-wise families: unary maps, binary and ternary
// operations, and type conversions (float -> int, int -> float, float <-> half).
// Included by corpus.c after corpus.h.
//
// All six share one parameter layout (M_*) and one kernel writer (map_kernels): a kernel
// computes out[i] = EXPR(in0[i], in1[i], in2[i]) for i < n, with an optional __device__
// helper holding EXPR, in one of the loop styles (if-guard, early return, grid-stride,
// and for float unary maps float4 vectors).

enum { M_OP, M_N, M_BLOCK, M_LOOP, M_HELPER, M_KNAME, M_NAMES, M_CAP, M_TNAME, M_DESC, M_FN, M_NP };
enum { MF_A, MF_B };
enum { LOOP_VEC4 = LOOP_COUNT, };

static const char *const map_loop_names[] = { "if_guard", "early_return", "grid_stride", "vec4", NULL };
static const char *const map_helper_names[] = { "inline", "device_fn", "forceinline", "static_inline", NULL };
static const char *const map_fp[] = { "a", "b", NULL };

// The parameters of every map family (M_*): the op, size, block and loop are the combination.
#define MAP_PARAMS(opnames)                                                                                          \
    { [M_OP] = { "op", opnames, 1, "*" },         [M_N] = { "n", NULL, 1, MAP_SIZES },                              \
      [M_BLOCK] = { "block", NULL, 1, "128 256 256 512 1024" }, [M_LOOP] = { "loop", map_loop_names, 1, NULL },     \
      [M_HELPER] = { "helper", map_helper_names, 0, "0 0 0 1 2 3" }, [M_KNAME] = { "kname", NULL, 0, "0..3" },      \
      [M_NAMES] = { "names", NULL, 0, NULL },     [M_CAP] = { "cap", NULL, 0, "0 256 1024 4096" },                  \
      [M_TNAME] = { "tname", NULL, 0, "0..2" },   [M_DESC] = { "desc", NULL, 0, "0..2" },                           \
      [M_FN] = { "fn", NULL, 0, "0..3" },         [M_NP] = { NULL, NULL, 0, NULL } }
#define MAP_SIZES "1000 1024 4096 10000 16384 50000 65536 100000 262144 1000000 1048576"

// An operation of a map family.
typedef struct {
    const char *id;
    const char *task[3];   // Task Name variants
    const char *kn[4];     // kernel name variants
    int arity;
    DType in_dt[3], out_dt;
    double lo[3], hi[3];   // input ranges
    int integer[3];        // integer-valued inputs
    int repeat;            // EXPR reads an operand twice: load it into a local first
} MapOp;

// What differs between the six families.
typedef struct {
    const MapOp *ops;
    int nops;
    const char *const (*names)[4];   // tensor name sets: in0, in1, in2, out
    int nnames;
    // EXPR for operands a[] (a C expression of the operands), as CUDA source
    const char *(*expr)(const Task *t, const char *const *a);
    // the formula for the prompt, with tensor names indexed by i
    const char *(*formula)(const Task *t);
    void (*ref1)(const Task *t, const void *const *in, void *out, long i); // element i
    double atol, rtol;
} MapKind;

static const MapKind *map_kind(const Task *t);
static const MapOp *map_op(const Task *t) { return &map_kind(t)->ops[t->p[M_OP]]; }

// Does the operation's output type allow a plain float4 path?
static int map_vec4_ok(const MapOp *o) {
    if (o->out_dt != DT_F32 || o->arity != 1) return 0;
    return o->in_dt[0] == DT_F32;
}

// After params_draw: the loop style (float4 only where it fits) and the names.
static void map_draw(Task *t, Rng *r) {
    const MapKind *k = map_kind(t);
    const MapOp *o = &k->ops[t->p[M_OP]];
    t->p[M_LOOP] = rng_int(r, 0, map_vec4_ok(o) && t->p[M_N] % 4 == 0 ? 3 : 2);
    t->p[M_NAMES] = rng_int(r, 0, k->nnames - 1);
    const char *const *nm = k->names[t->p[M_NAMES]];
    for (int j = 0; j < o->arity; j++) SETNAME(t->in[j].name, "%s", nm[j]);
    SETNAME(t->out[0].name, "%s", nm[3]);
    SETNAME(t->kname[0], "%s", o->kn[t->p[M_KNAME]]);
    static const char *const helper_fmt[] = { "%s_op", "apply_%s", "%s_fn", "dev_%s" };
    SETNAME(t->kname[1], helper_fmt[(t->p[M_KNAME] + t->p[M_NAMES]) % 4], o->id);
    SETNAME(t->slug, "%s", o->id);
}

static void map_layout(Task *t) {
    const MapKind *k = map_kind(t);
    const MapOp *o = map_op(t);
    t->nsize = 0;
    int n = add_size(t, "n", t->p[M_N]);
    t->nin = o->arity;
    for (int j = 0; j < o->arity; j++) {
        tshape(&t->in[j], o->in_dt[j], 1, t->p[M_N], 0, n, -1);
        trange(&t->in[j], o->lo[j], o->hi[j], o->integer[j]);
        if (o->in_dt[j] == DT_F16) t->need_fp16 = 1;
    }
    t->nout = 1;
    tshape(&t->out[0], o->out_dt, 1, t->p[M_N], 0, n, -1);
    if (o->out_dt == DT_F16 || strcmp(t->fam->name, "convert_half") == 0) t->need_fp16 = 1;
    t->atol = k->atol;
    t->rtol = k->rtol;
}

static void map_describe(const Task *t, Buf *name, Buf *desc) {
    const MapKind *k = map_kind(t);
    const MapOp *o = map_op(t);
    buf_puts(name, o->task[t->p[M_TNAME]]);
    const char *f = k->formula(t);
    const char *out = t->out[0].name;
    long n = t->p[M_N];
    switch (t->p[M_DESC]) {
    case 0: buf_printf(desc, "Compute %s[i] = %s for every i in [0, %ld).", out, f, n); break;
    case 1: buf_printf(desc, "Element-wise over %ld elements: %s[i] = %s.", n, out, f); break;
    default:
        buf_printf(desc,
                   "For each of the %ld elements, set %s[i] = %s, one GPU thread per element or a grid-stride loop.", n,
                   out, f);
        break;
    }
    if (t->p[M_LOOP] == LOOP_VEC4) buf_puts(desc, " Use float4 vector loads and stores.");
}

// The kernels: an optional __device__ helper holding EXPR, then the kernel, whose body
// is the element loop around one of the statement forms below.
static const char map_helper_tpl[] = R"(
/// $task for one element.
$spec $helper($params) {
    return $expr;
}

)";
static const char map_kernel_tpl[] = R"(
/// $task: $out[i] = $formula. $how
__global__ void $kname($params) {
    $loop
}
)";
static const char map_vec4_tpl[] = R"(
float4 v = $in[$i];
$components
$out[$i] = v;
)";
static const char map_locals_tpl[] = R"(
$locals
$out[$i] = $expr;
)";

static void map_kernels(const Task *t, Emit *e) {
    const MapOp *o = map_op(t);
    const MapKind *k = map_kind(t);
    int loop = t->p[M_LOOP], vec4 = loop == LOOP_VEC4, helper = t->p[M_HELPER];
    const char *i = IDX(t), *out = t->out[0].name, *out_ct = dt_ctypes[o->out_dt];
    const char *const *vn =
        o->arity == 1 ? (const char *const[]){ "v", "w", "s" } : (const char *const[]){ "a", "b", "c" };
    char hparams[160] = "", kparams[300] = "", args[200] = "";
    for (int j = 0; j < o->arity; j++) {
        const char *ct = dt_ctypes[o->in_dt[j]], *sep = j ? ", " : "";
        snprintf(hparams + strlen(hparams), sizeof hparams - strlen(hparams), "%s%s %s", sep, ct, vn[j]);
        snprintf(kparams + strlen(kparams), sizeof kparams - strlen(kparams), "%s, ",
                 ptr_param(t, vec4 ? "float4" : ct, t->in[j].name, 1));
        snprintf(args + strlen(args), sizeof args - strlen(args), "%s%s[%s]", sep, t->in[j].name, i);
    }
    snprintf(kparams + strlen(kparams), sizeof kparams - strlen(kparams), "%s, %s",
             ptr_param(t, vec4 ? "float4" : out_ct, out, 0), count_param(t, vec4 ? "n4" : "n"));
    if (helper) {
        static const char *const spec[] = { "", "__device__ %s", "__device__ __forceinline__ %s",
                                            "static __device__ inline %s" };
        TPL(e, t, map_helper_tpl, "task", o->task[0], "spec", fmt(spec[helper], out_ct), "helper", t->kname[1],
            "params", hparams, "expr", k->expr(t, vn));
    }

    const char *body;
    if (vec4) {
        Buf c = { 0 };
        for (const char *comp = "xyzw"; *comp; comp++)
            buf_printf(&c, "v.%c = %s;\n", *comp,
                       helper ? fmt("%s(v.%c)", t->kname[1], *comp)
                              : k->expr(t, (const char *const[]){ fmt("v.%c", *comp) }));
        body = FRAG(map_vec4_tpl, "in", t->in[0].name, "i", i, "components", buf_str(&c), "out", out);
        buf_free(&c);
    } else if (helper) {
        body = FRAG("//? each thread handles its own element\n$out[$i] = $helper($args);", "out", out, "i", i, "helper",
                    t->kname[1], "args", args);
    } else if (o->repeat || t->p[M_FN] == 3) { // operands into locals first (no tensor is named va, vb, vc)
        const char *a[3];
        Buf l = { 0 };
        for (int j = 0; j < o->arity; j++) {
            a[j] = o->arity == 1 ? "v" : (const char *const[]){ "va", "vb", "vc" }[j];
            buf_printf(&l, "const %s %s = %s[%s];\n", dt_ctypes[o->in_dt[j]], a[j], t->in[j].name, i);
        }
        body = FRAG(map_locals_tpl, "locals", buf_str(&l), "out", out, "i", i, "expr", k->expr(t, a));
        buf_free(&l);
    } else {
        const char *a[3];
        for (int j = 0; j < o->arity; j++) a[j] = fmt("%s[%s]", t->in[j].name, i);
        body = fmt("%s[%s] = %s;", out, i, k->expr(t, a));
    }
    TPL(e, t, map_kernel_tpl, "task", o->task[0], "out", out, "formula", k->formula(t), "kname", t->kname[0], "params",
        kparams, "how",
        loop == LOOP_GRID ? "Grid-stride loop over the elements."
        : vec4            ? "Each thread handles one float4 (four elements)."
                          : "One thread per element.",
        "loop", loop_frag(t, vec4 ? LOOP_IF : loop, vec4 ? "n4" : "n", body));
}

static void map_launch(const Task *t, Emit *e, const Host *h) {
    const MapOp *o = map_op(t);
    int loop = t->p[M_LOOP];
    char args[300] = "";
    if (loop == LOOP_VEC4) {
        snprintf(args, sizeof args, "(const float4 *)%s, (float4 *)%s, %s / 4", h->in[0], h->out[0], h->size[0]);
        launch_1d(e, t, t->kname[0], fmt("%s / 4", h->size[0]), t->p[M_BLOCK], 0, args);
        return;
    }
    for (int j = 0; j < o->arity; j++) snprintf(args + strlen(args), sizeof args - strlen(args), "%s, ", h->in[j]);
    snprintf(args + strlen(args), sizeof args - strlen(args), "%s, %s", h->out[0], h->size[0]);
    launch_1d(e, t, t->kname[0], h->size[0], t->p[M_BLOCK], loop == LOOP_GRID ? t->p[M_CAP] : 0, args);
}

static void map_ref(const Task *t, const void *const *in, void *const *out) {
    const MapKind *k = map_kind(t);
    for (long i = 0; i < t->p[M_N]; i++) k->ref1(t, in, out[0], i);
}


// ----------------------------------------------------------------------------
// Unary maps

static const MapOp un_ops[] = {
    { "relu", { "ReLU", "ReLU_Activation", "Rectified_Linear_Unit" },
      { "relu_kernel", "reluKernel", "apply_relu", "relu_forward" },
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, { 0 }, 0 },
    { "leaky_relu", { "Leaky_ReLU", "LeakyReLU_Activation", "Leaky_Rectifier" },
      { "leaky_relu_kernel", "leakyReluKernel", "leaky_relu", "lrelu_forward" },
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, { 0 }, 1 },
    { "scale_shift", { "Scale_And_Shift", "Affine_Transform", "Scale_Shift" },
      { "scale_shift_kernel", "scaleShiftKernel", "affine", "scale_and_shift" },
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, { 0 }, 0 },
    { "sigmoid", { "Sigmoid", "Sigmoid_Activation", "Logistic_Function" },
      { "sigmoid_kernel", "sigmoidKernel", "apply_sigmoid", "sigmoid_forward" },
      1, { DT_F32 }, DT_F32, { -8 }, { 8 }, { 0 }, 0 },
    { "abs", { "Absolute_Value", "Abs", "Elementwise_Abs" }, { "abs_kernel", "absKernel", "absolute", "abs_values" },
      1, { DT_F32 }, DT_F32, { -100 }, { 100 }, { 0 }, 0 },
    { "square", { "Square", "Elementwise_Square", "Squaring" },
      { "square_kernel", "squareKernel", "square", "sq_values" },
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, { 0 }, 1 },
    { "tanh", { "Tanh", "Tanh_Activation", "Hyperbolic_Tangent" },
      { "tanh_kernel", "tanhKernel", "apply_tanh", "tanh_forward" },
      1, { DT_F32 }, DT_F32, { -5 }, { 5 }, { 0 }, 0 },
    { "exp", { "Exponential", "Elementwise_Exp", "Exp" }, { "exp_kernel", "expKernel", "exponential", "exp_values" },
      1, { DT_F32 }, DT_F32, { -4 }, { 4 }, { 0 }, 0 },
    { "softplus", { "Softplus", "Softplus_Activation", "Smooth_ReLU" },
      { "softplus_kernel", "softplusKernel", "softplus", "softplus_forward" },
      1, { DT_F32 }, DT_F32, { -8 }, { 8 }, { 0 }, 0 },
    { "silu", { "SiLU", "Swish_Activation", "Sigmoid_Linear_Unit" },
      { "silu_kernel", "siluKernel", "swish", "silu_forward" },
      1, { DT_F32 }, DT_F32, { -8 }, { 8 }, { 0 }, 1 },
};
static const char *const un_op_names[] = { "relu", "leaky_relu", "scale_shift", "sigmoid", "abs", "square", "tanh",
                                           "exp", "softplus", "silu", NULL };
static const char *const un_tensor_names[][4] = {
    { "x", "", "", "y" }, { "input", "", "", "output" }, { "in", "", "", "out" }, { "src", "", "", "dst" },
    { "data", "", "", "result" }, { "a", "", "", "b" } };
static const double leaky_slopes[] = { 0.01, 0.02, 0.05, 0.1, 0.2 };
static const double scales[] = { 0.5, 1.5, 2, 2.5, 3, -1, 0.25, -0.5, 4 };
static const double shifts[] = { 1, -1, 0.5, 0.75, -0.25, 3, 0.1 };

static const char *un_expr(const Task *t, const char *const *a) {
    const char *x = a[0];
    switch (t->p[M_OP]) {
    case 0: return t->p[M_FN] & 1 ? fmt("fmaxf(%s, 0.0f)", x) : fmt("%s > 0.0f ? %s : 0.0f", x, x);
    case 1: return fmt("%s > 0.0f ? %s : %s * %s", x, x, flit(t->f[MF_A]), x);
    case 2: return fmt("%s * %s + %s", flit(t->f[MF_A]), x, flit(t->f[MF_B]));
    case 3: return t->p[M_FN] & 1 ? fmt("1.0f / (1.0f + expf(-%s))", x) : fmt("1.0f / (1.0f + __expf(-%s))", x);
    case 4: return fmt("fabsf(%s)", x);
    case 5: return fmt("%s * %s", x, x);
    case 6: return fmt("tanhf(%s)", x);
    case 7: return fmt("expf(%s)", x);
    case 8: return fmt("log1pf(expf(%s))", x);
    default: return fmt("%s / (1.0f + expf(-%s))", x, x);
    }
}
static const char *un_formula(const Task *t) {
    const char *x = fmt("%s[i]", t->in[0].name);
    switch (t->p[M_OP]) {
    case 0: return fmt("max(%s, 0)", x);
    case 1:
        return fmt("%s if %s > 0, else %s * %s (leaky ReLU with slope %s)", x, x, fnum(t->f[MF_A]), x,
                   fnum(t->f[MF_A]));
    case 2: return fmt("%s * %s + %s", fnum(t->f[MF_A]), x, fnum(t->f[MF_B]));
    case 3: return fmt("1 / (1 + exp(-%s)) (the logistic sigmoid)", x);
    case 4: return fmt("|%s| (absolute value)", x);
    case 5: return fmt("%s * %s", x, x);
    case 6: return fmt("tanh(%s)", x);
    case 7: return fmt("exp(%s)", x);
    case 8: return fmt("log(1 + exp(%s)) (softplus)", x);
    default: return fmt("%s / (1 + exp(-%s)) (SiLU / swish)", x, x);
    }
}
static void un_ref1(const Task *t, const void *const *in, void *out, long i) {
    double x = ((const float *)in[0])[i], y;
    switch (t->p[M_OP]) {
    case 0: y = x > 0 ? x : 0; break;
    case 1: y = x > 0 ? x : (double)(fpar(t, MF_A) * (float)x); break;
    case 2: y = (double)fpar(t, MF_A) * x + (double)fpar(t, MF_B); break;
    case 3: y = 1.0 / (1.0 + exp(-x)); break;
    case 4: y = fabs(x); break;
    case 5: y = (double)((float)x * (float)x); break;
    case 6: y = tanh(x); break;
    case 7: y = exp(x); break;
    case 8: y = log1p(exp(x)); break;
    default: y = x / (1.0 + exp(-x)); break;
    }
    ((float *)out)[i] = (float)y;
}
static const MapKind un_kind = { un_ops, NELEM(un_ops), un_tensor_names, NELEM(un_tensor_names), un_expr, un_formula,
                                 un_ref1, 1e-6, 1e-5 };

static void un_draw(Task *t, Rng *r) {
    map_draw(t, r);
    t->f[MF_A] = t->p[M_OP] == 1   ? leaky_slopes[RPICK(r, leaky_slopes)]
                 : t->p[M_OP] == 2 ? scales[RPICK(r, scales)]
                                   : 0;
    t->f[MF_B] = t->p[M_OP] == 2 ? shifts[RPICK(r, shifts)] : 0;
}

static const ParamDesc un_params[] = MAP_PARAMS(un_op_names);
static const Family fam_unary = {
    "elementwise_unary",
    "y = f(x) for activation-style f, optional __device__ helper, float4 path",
    un_params, map_fp, un_draw, map_layout, map_describe, map_kernels, map_launch, map_ref };

// ----------------------------------------------------------------------------
// Binary operations

#define F3 { DT_F32, DT_F32, DT_F32 }
static const MapOp bin_ops[] = {
    { "add", { "Vector_Add", "Elementwise_Addition", "Vector_Addition" },
      { "add_kernel", "vecAdd", "vector_add", "add_arrays" },
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, { 0 }, 0 },
    { "sub", { "Vector_Subtract", "Elementwise_Difference", "Vector_Subtraction" },
      { "sub_kernel", "vecSub", "vector_sub", "subtract_arrays" },
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, { 0 }, 0 },
    { "mul", { "Vector_Multiply", "Hadamard_Product", "Elementwise_Product" },
      { "mul_kernel", "vecMul", "hadamard", "multiply_arrays" },
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, { 0 }, 0 },
    { "div", { "Vector_Divide", "Elementwise_Division", "Safe_Divide" },
      { "div_kernel", "vecDiv", "vector_div", "divide_arrays" },
      2, F3, DT_F32, { -10, 0.5 }, { 10, 4 }, { 0 }, 0 },
    { "max", { "Elementwise_Maximum", "Vector_Max", "Pairwise_Max" },
      { "max_kernel", "vecMax", "elementwise_max", "maximum" },
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, { 0 }, 0 },
    { "min", { "Elementwise_Minimum", "Vector_Min", "Pairwise_Min" },
      { "min_kernel", "vecMin", "elementwise_min", "minimum" },
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, { 0 }, 0 },
    { "axpy", { "AXPY", "SAXPY", "Scaled_Vector_Add" }, { "axpy_kernel", "saxpy", "axpy", "scaled_add" },
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, { 0 }, 0 },
    { "sqdiff", { "Squared_Difference", "Elementwise_Squared_Error", "Squared_Diff" },
      { "sqdiff_kernel", "squaredDiff", "squared_error", "sq_diff" },
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, { 0 }, 1 },
};
static const char *const bin_op_names[] = { "add", "sub", "mul", "div", "max", "min", "axpy", "sqdiff", NULL };
static const char *const bin_tensor_names[][4] = {
    { "a", "b", "", "c" }, { "x", "y", "", "z" }, { "lhs", "rhs", "", "out" }, { "in1", "in2", "", "result" },
    { "input_a", "input_b", "", "output" }, { "x", "y", "", "out" } };
static const double axpy_alphas[] = { 2, 0.5, -1, 1.5, 3, 0.25, -2.5 };

static const char *bin_expr(const Task *t, const char *const *a) {
    switch (t->p[M_OP]) {
    case 0: return fmt("%s + %s", a[0], a[1]);
    case 1: return fmt("%s - %s", a[0], a[1]);
    case 2: return fmt("%s * %s", a[0], a[1]);
    case 3: return fmt("%s / %s", a[0], a[1]);
    case 4: return t->p[M_FN] & 1 ? fmt("fmaxf(%s, %s)", a[0], a[1]) : fmt("%s > %s ? %s : %s", a[0], a[1], a[0], a[1]);
    case 5: return t->p[M_FN] & 1 ? fmt("fminf(%s, %s)", a[0], a[1]) : fmt("%s < %s ? %s : %s", a[0], a[1], a[0], a[1]);
    case 6: return fmt("%s * %s + %s", flit(t->f[MF_A]), a[0], a[1]);
    default: return fmt("(%s - %s) * (%s - %s)", a[0], a[1], a[0], a[1]);
    }
}
static const char *bin_formula(const Task *t) {
    const char *x = fmt("%s[i]", t->in[0].name), *y = fmt("%s[i]", t->in[1].name);
    switch (t->p[M_OP]) {
    case 0: return fmt("%s + %s", x, y);
    case 1: return fmt("%s - %s", x, y);
    case 2: return fmt("%s * %s", x, y);
    case 3: return fmt("%s / %s (the divisor is never zero)", x, y);
    case 4: return fmt("max(%s, %s)", x, y);
    case 5: return fmt("min(%s, %s)", x, y);
    case 6: return fmt("%s * %s + %s", fnum(t->f[MF_A]), x, y);
    default: return fmt("(%s - %s)^2", x, y);
    }
}
static void bin_ref1(const Task *t, const void *const *in, void *out, long i) {
    float a = ((const float *)in[0])[i], b = ((const float *)in[1])[i];
    double y;
    switch (t->p[M_OP]) {
    case 0: y = (double)a + b; break;
    case 1: y = (double)a - b; break;
    case 2: y = (double)a * b; break;
    case 3: y = (double)a / b; break;
    case 4: y = a > b ? a : b; break;
    case 5: y = a < b ? a : b; break;
    case 6: y = (double)fpar(t, MF_A) * a + b; break;
    default: y = ((double)a - b) * ((double)a - b); break;
    }
    ((float *)out)[i] = (float)y;
}
static const MapKind bin_kind = { bin_ops, NELEM(bin_ops), bin_tensor_names, NELEM(bin_tensor_names), bin_expr,
                                  bin_formula,
                                  bin_ref1, 1e-5, 1e-5 };
static void bin_draw(Task *t, Rng *r) {
    map_draw(t, r);
    t->f[MF_A] = t->p[M_OP] == 6 ? axpy_alphas[RPICK(r, axpy_alphas)] : 0;
}
static const ParamDesc bin_params[] = MAP_PARAMS(bin_op_names);
static const Family fam_binary = {
    "elementwise_binary",
    "c = a (op) b: add, sub, mul, div, max, min, axpy, squared difference",
    bin_params, map_fp, bin_draw, map_layout, map_describe, map_kernels, map_launch, map_ref };

// ----------------------------------------------------------------------------
// Ternary operations

static const MapOp ter_ops[] = {
    { "fma", { "Fused_Multiply_Add", "Elementwise_FMA", "Multiply_Add" },
      { "fma_kernel", "fmaKernel", "multiply_add", "fused_mul_add" },
      3, F3, DT_F32, { -10, -10, -10 }, { 10, 10, 10 }, { 0 }, 0 },
    { "where", { "Where_Select", "Conditional_Select", "Masked_Select" },
      { "where_kernel", "selectKernel", "masked_select", "where_select" },
      3, { DT_I32, DT_F32, DT_F32 }, DT_F32, { 0, -10, -10 }, { 1, 10, 10 }, { 1, 0, 0 }, 0 },
    { "clamp", { "Clamp_To_Bounds", "Elementwise_Clamp", "Bounded_Clip" },
      { "clamp_kernel", "clampKernel", "clip_values", "clamp_between" },
      3, F3, DT_F32, { -4, -2, 0 }, { 4, 0, 2 }, { 0 }, 0 },
    { "lerp", { "Linear_Interpolation", "Lerp", "Elementwise_Lerp" },
      { "lerp_kernel", "lerpKernel", "interpolate", "lerp_arrays" },
      3, F3, DT_F32, { -10, -10, 0 }, { 10, 10, 1 }, { 0 }, 1 },
};
static const char *const ter_op_names[] = { "fma", "where", "clamp", "lerp", NULL };
// per op the name sets differ in meaning, so they are chosen per op (see ter_names)
static const char *const ter_tensor_names[][4] = {
    { "a", "b", "c", "d" }, { "x", "y", "z", "out" }, { "a", "b", "c", "result" }, { "p", "q", "r", "out" } };
static const char *const ter_where_names[][4] = {
    { "cond", "a", "b", "out" }, { "mask", "x", "y", "z" }, { "flag", "on_true", "on_false", "result" },
    { "pred", "p", "q", "out" } };
static const char *const ter_clamp_names[][4] = {
    { "x", "lo", "hi", "y" }, { "values", "lower", "upper", "clamped" }, { "x", "low", "high", "out" },
    { "v", "vmin", "vmax", "result" } };
static const char *const ter_lerp_names[][4] = {
    { "a", "b", "t", "out" }, { "p", "q", "w", "result" }, { "x0", "x1", "alpha", "y" },
    { "from", "to", "weight", "blend" } };

static const char *ter_expr(const Task *t, const char *const *a) {
    switch (t->p[M_OP]) {
    case 0: return t->p[M_FN] & 1 ? fmt("fmaf(%s, %s, %s)", a[0], a[1], a[2]) : fmt("%s * %s + %s", a[0], a[1], a[2]);
    case 1: return t->p[M_FN] & 1 ? fmt("%s != 0 ? %s : %s", a[0], a[1], a[2]) : fmt("%s ? %s : %s", a[0], a[1], a[2]);
    case 2: return t->p[M_FN] & 1 ? fmt("fminf(fmaxf(%s, %s), %s)", a[0], a[1], a[2])
                                  : fmt("%s < %s ? %s : (%s > %s ? %s : %s)", a[0], a[1], a[1], a[0], a[2], a[2], a[0]);
    default: return fmt("%s + %s * (%s - %s)", a[0], a[2], a[1], a[0]);
    }
}
static const char *ter_formula(const Task *t) {
    const char *x = fmt("%s[i]", t->in[0].name), *y = fmt("%s[i]", t->in[1].name), *z = fmt("%s[i]", t->in[2].name);
    switch (t->p[M_OP]) {
    case 0: return fmt("%s * %s + %s", x, y, z);
    case 1: return fmt("%s if %s != 0, else %s", y, x, z);
    case 2: return fmt("%s clamped to [%s, %s] (lower bounds never exceed upper bounds)", x, y, z);
    default: return fmt("%s + %s * (%s - %s), with %s in [0, 1)", x, z, y, x, z);
    }
}
static void ter_ref1(const Task *t, const void *const *in, void *out, long i) {
    const float *b = in[1], *c = in[2];
    double y;
    switch (t->p[M_OP]) {
    case 0: { const float *a = in[0]; y = (double)a[i] * b[i] + c[i]; break; }
    case 1: { const int *m = in[0]; y = m[i] != 0 ? b[i] : c[i]; break; }
    case 2: { const float *a = in[0]; y = a[i] < b[i] ? b[i] : a[i] > c[i] ? c[i] : a[i]; break; }
    default: { const float *a = in[0]; y = (double)a[i] + (double)c[i] * ((double)b[i] - a[i]); break; }
    }
    ((float *)out)[i] = (float)y;
}
static const MapKind ter_kind = { ter_ops, NELEM(ter_ops), ter_tensor_names, NELEM(ter_tensor_names), ter_expr,
                                  ter_formula,
                                  ter_ref1, 1e-5, 1e-5 };
static void ter_draw(Task *t, Rng *r) {
    map_draw(t, r);
    const char *const (*nm)[4] = t->p[M_OP] == 1 ? ter_where_names : t->p[M_OP] == 2 ? ter_clamp_names
                               : t->p[M_OP] == 3 ? ter_lerp_names : ter_tensor_names;
    t->p[M_NAMES] %= 4;
    for (int j = 0; j < 3; j++) snprintf(t->in[j].name, sizeof t->in[j].name, "%s", nm[t->p[M_NAMES]][j]);
    snprintf(t->out[0].name, sizeof t->out[0].name, "%s", nm[t->p[M_NAMES]][3]);
}
static const ParamDesc ter_params[] = MAP_PARAMS(ter_op_names);
static const Family fam_ternary = {
    "elementwise_ternary",
    "d = f(a, b, c): fma, where (select by an int mask), clamp to bounds, lerp",
    ter_params, map_fp, ter_draw, map_layout, map_describe, map_kernels, map_launch, map_ref };

// ----------------------------------------------------------------------------
// float32 -> int32 / uint8

static const MapOp f2i_ops[] = {
    { "round", { "Float_To_Int_Round", "Round_To_Nearest_Int", "Float_Rounding" },
      { "round_kernel", "float2intRound", "to_int_rn", "round_to_int" },
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, { 0 }, 0 },
    { "trunc", { "Float_To_Int_Truncate", "Truncate_To_Int", "Float_Truncation" },
      { "trunc_kernel", "float2intTrunc", "to_int_rz", "truncate_to_int" },
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, { 0 }, 0 },
    { "floor", { "Float_To_Int_Floor", "Floor_To_Int", "Floor_Conversion" },
      { "floor_kernel", "float2intFloor", "to_int_rd", "floor_to_int" },
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, { 0 }, 0 },
    { "ceil", { "Float_To_Int_Ceil", "Ceil_To_Int", "Ceiling_Conversion" },
      { "ceil_kernel", "float2intCeil", "to_int_ru", "ceil_to_int" },
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, { 0 }, 0 },
    { "scale_round", { "Fixed_Point_Conversion", "Scaled_Round_To_Int", "Float_To_Fixed" },
      { "to_fixed_kernel", "floatToFixed", "quantize_fixed", "fixed_point" },
      1, { DT_F32 }, DT_I32, { -50 }, { 50 }, { 0 }, 0 },
    { "quantize_u8", { "Quantize_To_Uint8", "Uint8_Quantization", "Affine_Quantize" },
      { "quantize_kernel", "quantizeU8", "quantize_uint8", "to_uint8" },
      1, { DT_F32 }, DT_U8, { -3 }, { 3 }, { 0 }, 0 },
};
static const char *const f2i_op_names[] = { "round", "trunc", "floor", "ceil", "scale_round", "quantize_u8", NULL };
static const char *const f2i_tensor_names[][4] = {
    { "x", "", "", "q" }, { "input", "", "", "output" }, { "values", "", "", "ints" }, { "src", "", "", "dst" },
    { "f", "", "", "i32" } };
static const double f2i_scales[] = { 2, 4, 10, 16, 100, 256, 1000 };
static const double q_scales[] = { 16, 32, 40, 42.5, 50 }; // x * scale + zero_point
static const double q_zps[] = { 128, 127, 100, 0 };

static const char *f2i_expr(const Task *t, const char *const *a) {
    int fn = t->p[M_FN];
    const char *x = a[0];
    switch (t->p[M_OP]) {
    case 0:
        return fn == 0   ? fmt("__float2int_rn(%s)", x)
               : fn == 1 ? fmt("(int)rintf(%s)", x)
               : fn == 2 ? fmt("(int)lrintf(%s)", x)
                         : fmt("(int)nearbyintf(%s)", x);
    case 1: return fn & 1 ? fmt("__float2int_rz(%s)", x) : fmt("(int)%s", x);
    case 2: return fn & 1 ? fmt("__float2int_rd(%s)", x) : fmt("(int)floorf(%s)", x);
    case 3: return fn & 1 ? fmt("__float2int_ru(%s)", x) : fmt("(int)ceilf(%s)", x);
    case 4:
        return fn & 1 ? fmt("__float2int_rn(%s * %s)", x, flit(t->f[MF_A]))
                      : fmt("(int)rintf(%s * %s)", x, flit(t->f[MF_A]));
    default:
        return fmt("(unsigned char)min(max(__float2int_rn(%s * %s) + %d, 0), 255)", x, flit(t->f[MF_A]),
                   (int)t->f[MF_B]);
    }
}
static const char *f2i_formula(const Task *t) {
    const char *x = fmt("%s[i]", t->in[0].name);
    switch (t->p[M_OP]) {
    case 0: return fmt("%s rounded to the nearest integer, ties to even, as int32", x);
    case 1: return fmt("%s truncated toward zero, as int32", x);
    case 2: return fmt("floor(%s) as int32", x);
    case 3: return fmt("ceil(%s) as int32", x);
    case 4:
        return fmt("round(%s * %s) as int32 (fixed point with %s steps per unit; the product is computed in float32 "
                   "and rounded to nearest, ties to even)",
                   x, fnum(t->f[MF_A]), fnum(t->f[MF_A]));
    default:
        return fmt(
            "clamp(round(%s * %s) + %d, 0, 255) as uint8 (the product in float32, rounded to nearest, ties to even)", x,
            fnum(t->f[MF_A]), (int)t->f[MF_B]);
    }
}
static void f2i_ref1(const Task *t, const void *const *in, void *out, long i) {
    float x = ((const float *)in[0])[i];
    int q;
    switch (t->p[M_OP]) {
    case 0: q = (int)rintf(x); break;
    case 1: q = (int)x; break;
    case 2: q = (int)floorf(x); break;
    case 3: q = (int)ceilf(x); break;
    case 4: { volatile float p = x * fpar(t, MF_A); q = (int)rintf(p); break; }
    default: {
        volatile float p = x * fpar(t, MF_A);
        q = (int)rintf(p) + (int)t->f[MF_B];
        q = q < 0 ? 0 : q > 255 ? 255 : q;
        ((unsigned char *)out)[i] = (unsigned char)q;
        return;
    }
    }
    ((int *)out)[i] = q;
}
static const MapKind f2i_kind = { f2i_ops, NELEM(f2i_ops), f2i_tensor_names, NELEM(f2i_tensor_names), f2i_expr,
                                  f2i_formula,
                                  f2i_ref1, 0, 0 };
static void f2i_draw(Task *t, Rng *r) {
    map_draw(t, r);
    t->f[MF_A] = t->p[M_OP] == 4   ? f2i_scales[RPICK(r, f2i_scales)]
                 : t->p[M_OP] == 5 ? q_scales[RPICK(r, q_scales)]
                                   : 0;
    t->f[MF_B] = t->p[M_OP] == 5 ? q_zps[RPICK(r, q_zps)] : 0;
    if (t->p[M_OP] == 5) t->p[M_HELPER] = t->p[M_HELPER] ? 1 : 0; // min/max on int: keep the helper plain
}
static const ParamDesc f2i_params[] = MAP_PARAMS(f2i_op_names);
static const Family fam_f2i = {
    "convert_float_to_int",
    "float32 -> int32 (round/trunc/floor/ceil/fixed point), float32 -> uint8 quantisation",
    f2i_params, map_fp, f2i_draw, map_layout, map_describe, map_kernels, map_launch, map_ref };

// ----------------------------------------------------------------------------
// int32 / uint8 -> float32

static const MapOp i2f_ops[] = {
    { "dequantize", { "Dequantize_Int8", "Int_Dequantization", "Affine_Dequantize" },
      { "dequantize_kernel", "dequantize", "int_to_float", "dequant" },
      1, { DT_I32 }, DT_F32, { -128 }, { 127 }, { 1 }, 0 },
    { "scale_bias", { "Int_To_Float_Scale", "Scaled_Int_Conversion", "Int_Scale_Bias" },
      { "int_scale_kernel", "intToFloatScaled", "scale_ints", "convert_scale" },
      1, { DT_I32 }, DT_F32, { -100000 }, { 100000 }, { 1 }, 0 },
    { "normalize_u8", { "Normalize_Uint8_Pixels", "Pixel_Normalization", "Uint8_To_Float_Normalize" },
      { "normalize_kernel", "normalizePixels", "u8_to_float", "pixel_norm" },
      1, { DT_U8 }, DT_F32, { 0 }, { 255 }, { 1 }, 0 },
    { "to_float", { "Int_To_Float", "Integer_To_Float_Cast", "Int32_To_Float32" },
      { "int2float_kernel", "intToFloat", "cast_to_float", "to_float" },
      1, { DT_I32 }, DT_F32, { -10000000 }, { 10000000 }, { 1 }, 0 },
};
static const char *const i2f_op_names[] = { "dequantize", "scale_bias", "normalize_u8", "to_float", NULL };
static const char *const i2f_tensor_names[][4] = {
    { "q", "", "", "x" }, { "input", "", "", "output" }, { "codes", "", "", "values" }, { "src", "", "", "dst" },
    { "ints", "", "", "floats" } };
static const double dq_scales[] = { 0.05, 0.1, 0.02, 0.25, 0.125, 0.01 };
static const double dq_zps[] = { 0, 3, -5, 10 };
static const double sb_scales[] = { 0.001, 0.5, 2, 0.0625, 1e-4 };
static const double sb_bias[] = { 0, 1, -0.5, 10 };
static const double u8_means[] = { 127.5, 128, 0, 100 };
static const double u8_stds[] = { 127.5, 64, 255, 58.5 };

static const char *i2f_expr(const Task *t, const char *const *a) {
    const char *x = a[0];
    switch (t->p[M_OP]) {
    case 0: return fmt("(float)(%s - %d) * %s", x, (int)t->f[MF_B], flit(t->f[MF_A]));
    case 1: return t->p[M_FN] & 1 ? fmt("__int2float_rn(%s) * %s + %s", x, flit(t->f[MF_A]), flit(t->f[MF_B]))
                                  : fmt("(float)%s * %s + %s", x, flit(t->f[MF_A]), flit(t->f[MF_B]));
    case 2: return fmt("((float)%s - %s) / %s", x, flit(t->f[MF_A]), flit(t->f[MF_B]));
    default: return t->p[M_FN] & 1 ? fmt("__int2float_rn(%s)", x) : fmt("(float)%s", x);
    }
}
static const char *i2f_formula(const Task *t) {
    const char *x = fmt("%s[i]", t->in[0].name);
    switch (t->p[M_OP]) {
    case 0: return fmt("(%s - %d) * %s", x, (int)t->f[MF_B], fnum(t->f[MF_A]));
    case 1: return fmt("float(%s) * %s + %s", x, fnum(t->f[MF_A]), fnum(t->f[MF_B]));
    case 2: return fmt("(float(%s) - %s) / %s", x, fnum(t->f[MF_A]), fnum(t->f[MF_B]));
    default: return fmt("%s converted to float32 (round to nearest)", x);
    }
}
static void i2f_ref1(const Task *t, const void *const *in, void *out, long i) {
    double y;
    switch (t->p[M_OP]) {
    case 0: y = (double)(((const int *)in[0])[i] - (int)t->f[MF_B]) * fpar(t, MF_A); break;
    case 1: y = (double)((const int *)in[0])[i] * fpar(t, MF_A) + fpar(t, MF_B); break;
    case 2: y = ((double)((const unsigned char *)in[0])[i] - fpar(t, MF_A)) / fpar(t, MF_B); break;
    default: y = (double)((const int *)in[0])[i]; break;
    }
    ((float *)out)[i] = (float)y;
}
static const MapKind i2f_kind = { i2f_ops, NELEM(i2f_ops), i2f_tensor_names, NELEM(i2f_tensor_names), i2f_expr,
                                  i2f_formula,
                                  i2f_ref1, 1e-6, 1e-6 };
static void i2f_draw(Task *t, Rng *r) {
    map_draw(t, r);
    switch (t->p[M_OP]) {
    case 0: t->f[MF_A] = dq_scales[RPICK(r, dq_scales)]; t->f[MF_B] = dq_zps[RPICK(r, dq_zps)]; break;
    case 1: t->f[MF_A] = sb_scales[RPICK(r, sb_scales)]; t->f[MF_B] = sb_bias[RPICK(r, sb_bias)]; break;
    case 2: { int k = RPICK(r, u8_means); t->f[MF_A] = u8_means[k]; t->f[MF_B] = u8_stds[k]; break; }
    default: break;
    }
}
static const ParamDesc i2f_params[] = MAP_PARAMS(i2f_op_names);
static const Family fam_i2f = {
    "convert_int_to_float",
    "int32 -> float32 (dequantise, scale+bias, plain cast), uint8 pixels -> normalised float32",
    i2f_params, map_fp, i2f_draw, map_layout, map_describe, map_kernels, map_launch, map_ref };

// ----------------------------------------------------------------------------
// float32 <-> float16

static const MapOp half_ops[] = {
    { "to_half", { "Float_To_Half", "FP32_To_FP16", "Half_Precision_Cast" },
      { "to_half_kernel", "floatToHalf", "f32_to_f16", "convert_to_half" },
      1, { DT_F32 }, DT_F16, { -100 }, { 100 }, { 0 }, 0 },
    { "from_half", { "Half_To_Float_Scaled", "FP16_To_FP32_Scale", "Half_Dequantize" },
      { "from_half_kernel", "halfToFloat", "f16_to_f32", "convert_from_half" },
      1, { DT_F16 }, DT_F32, { -10 }, { 10 }, { 0 }, 0 },
    { "roundtrip", { "Half_Round_Trip", "FP16_Quantization_Error", "Half_Rounding" },
      { "roundtrip_kernel", "halfRoundTrip", "through_half", "fp16_round" },
      1, { DT_F32 }, DT_F32, { -1000 }, { 1000 }, { 0 }, 0 },
    { "half_add", { "Half_Precision_Add", "FP16_Vector_Add", "Half_Add" },
      { "hadd_kernel", "halfAdd", "add_half", "fp16_add" },
      2, { DT_F16, DT_F16 }, DT_F16, { -10, -10 }, { 10, 10 }, { 0 }, 0 },
};
static const char *const half_op_names[] = { "to_half", "from_half", "roundtrip", "half_add", NULL };
static const char *const half_tensor_names[][4] = {
    { "x", "w", "", "y" }, { "input", "other", "", "output" }, { "src", "src2", "", "dst" }, { "a", "b", "", "c" } };
static const double half_scales[] = { 1, 0.5, 2, 0.125, 10 };

static const char *half_expr(const Task *t, const char *const *a) {
    int fn = t->p[M_FN] & 1;
    switch (t->p[M_OP]) {
    case 0: return fn ? fmt("__float2half_rn(%s)", a[0]) : fmt("__float2half(%s)", a[0]);
    case 1: return fmt("__half2float(%s) * %s", a[0], flit(t->f[MF_A]));
    case 2: return fn ? fmt("__half2float(__float2half_rn(%s))", a[0]) : fmt("__half2float(__float2half(%s))", a[0]);
    default:
        return fn ? fmt("__hadd(%s, %s)", a[0], a[1])
                  : fmt("__float2half(__half2float(%s) + __half2float(%s))", a[0], a[1]);
    }
}
static const char *half_formula(const Task *t) {
    const char *x = fmt("%s[i]", t->in[0].name);
    switch (t->p[M_OP]) {
    case 0: return fmt("%s converted to float16 (round to nearest even)", x);
    case 1: return fmt("float32(%s) * %s (%s holds float16 values)", x, fnum(t->f[MF_A]), t->in[0].name);
    case 2: return fmt("%s rounded to float16 (nearest even) and converted back to float32", x);
    default: return fmt("%s + %s in float16 (round to nearest even)", x, fmt("%s[i]", t->in[1].name));
    }
}
static void half_ref1(const Task *t, const void *const *in, void *out, long i) {
    switch (t->p[M_OP]) {
    case 0: ((uint16_t *)out)[i] = f32_to_f16(((const float *)in[0])[i]); break;
    case 1: ((float *)out)[i] = f16_to_f32(((const uint16_t *)in[0])[i]) * fpar(t, MF_A); break;
    case 2: ((float *)out)[i] = f16_to_f32(f32_to_f16(((const float *)in[0])[i])); break;
    default: {
        // the exact sum of two halves rounded once to half (what __hadd does): double holds it exactly
        double s = (double)f16_to_f32(((const uint16_t *)in[0])[i]) + f16_to_f32(((const uint16_t *)in[1])[i]);
        float sf = (float)s;
        uint16_t h = f32_to_f16(sf);
        if ((double)sf != s) { // rounded twice: redo with the exact value
            double lo = f16_to_f32(h), best = lo;
            uint16_t hb = h;
            for (int d = -1; d <= 1; d += 2) {
                uint16_t c = (uint16_t)(h + d);
                double v = f16_to_f32(c);
                if (fabs(v - s) < fabs(best - s) || (fabs(v - s) == fabs(best - s) && (c & 1) == 0)) {
                    best = v;
                    hb = c;
                }
            }
            h = hb;
        }
        ((uint16_t *)out)[i] = h;
        break;
    }
    }
}
static const MapKind half_kind = { half_ops, NELEM(half_ops), half_tensor_names, NELEM(half_tensor_names), half_expr,
                                   half_formula, half_ref1, 1e-7, 1e-3 };
static void half_draw(Task *t, Rng *r) {
    map_draw(t, r);
    t->f[MF_A] = t->p[M_OP] == 1 ? half_scales[RPICK(r, half_scales)] : 0;
}
static const ParamDesc half_params[] = MAP_PARAMS(half_op_names);
static const Family fam_half = {
    "convert_half",
    "float32 <-> float16 with __float2half/__half2float, half round trip, __hadd",
    half_params, map_fp, half_draw, map_layout, map_describe, map_kernels, map_launch, map_ref };

static const MapKind *map_kind(const Task *t) {
    const Family *f = t->fam;
    if (f == &fam_unary) return &un_kind;
    if (f == &fam_binary) return &bin_kind;
    if (f == &fam_ternary) return &ter_kind;
    if (f == &fam_f2i) return &f2i_kind;
    if (f == &fam_i2f) return &i2f_kind;
    return &half_kind;
}

static const Family *const families_elementwise[] = { &fam_unary, &fam_binary, &fam_ternary, &fam_f2i, &fam_i2f,
                                                      &fam_half, NULL };
