// families_elementwise.c - element-wise families: unary maps, binary and ternary
// operations, and type conversions (float -> int, int -> float, float <-> half).
//
// All six are map families: a kernel computes out[i] = EXPR(in0[i], in1[i], in2[i]) for
// i < n, with an optional __device__ helper holding EXPR, in one of the loop styles
// (if-guard, early return, grid-stride, float4 for float unary maps). They share one
// parameter layout (M_*) and the family functions map_*; a family is a MapKind: its
// descriptor and a table of ops (MapOp), a row saying all about one op: names, types,
// ranges, CUDA, prompt, reference.

enum { M_OP, M_N, M_BLOCK, M_LOOP, M_HELPER, M_KNAME, M_NAMES, M_CAP, M_TNAME, M_DESC, M_FN, M_NP };
enum { MF_A, MF_B };
enum { LOOP_VEC4 = LOOP_COUNT, };

static const char *const map_loop_names[] = { "if_guard", "early_return", "grid_stride", "vec4", NULL };
static const char *const map_helper_names[] = { "inline", "device_fn", "forceinline", "static_inline", NULL };
static const char *const map_fp[] = { "a", "b", NULL };

#define MAP_SIZES "1000 1024 4096 10000 16384 50000 65536 100000 262144 1000000 1048576"
// The parameters of every map family (M_*): the op, size, block and loop are the combination.
#define MAP_PARAMS(opnames)                                                                                          \
    { [M_OP] = { "op", opnames, 1, "*" },         [M_N] = { "n", NULL, 1, MAP_SIZES },                              \
      [M_BLOCK] = { "block", NULL, 1, "128 256 256 512 1024" }, [M_LOOP] = { "loop", map_loop_names, 1, NULL },     \
      [M_HELPER] = { "helper", map_helper_names, 0, "0 0 0 1 2 3" }, [M_KNAME] = { "kname", NULL, 0, "0..3" },      \
      [M_NAMES] = { "names", NULL, 0, NULL },     [M_CAP] = { "cap", NULL, 0, "0 256 1024 4096" },                  \
      [M_TNAME] = { "tname", NULL, 0, "0..2" },   [M_DESC] = { "desc", NULL, 0, "0..2" },                           \
      [M_FN] = { "fn", NULL, 0, "0..3" },         [M_NP] = { NULL } }
// The Family of a map family's MapKind: its name, summary and op names (the values of op).
#define MAP_FAMILY(name, summary, opnames)                                                                           \
    { name, summary, (const ParamDesc[])MAP_PARAMS(opnames), map_fp, map_draw, map_layout, map_describe, map_kernels, \
      map_launch, map_ref }

// The operands of an op's CPU reference, as doubles (float16 inputs widened), and the
// float parameters a, b as nvcc reads their literals.
typedef struct { double a, b, c; float A, B; } MapArgs;

// The values a float parameter of an op is drawn from: MAP_VALUES(0.5, 2, 4).
typedef struct { const double *v; int n; } MapValues;
#define MAP_VALUES(...) { (const double[]){ __VA_ARGS__ }, NELEM(((const double[]){ __VA_ARGS__ })) }

// An operation of a map family. Its texts have placeholders (filled by map_text): $a $b $c
// the operands (in CUDA the kernel's operand expressions, in the prompt the elements x[i]
// of the inputs), $A $B the float parameters a, b (CUDA literals or prompt numbers), $zp
// parameter b as an integer (a zero point) and $input the first input's name.
// A row of an op table reads: the id, Task Names and kernel names; the types, ranges,
// reference and parameter values; the CUDA spellings and the formula.
typedef struct {
    const char *id;
    const char *task;          // Task Name variants (words), the first also in comments
    const char *kn;            // kernel name variants (words)
    int arity;
    DType in_dt[3], out_dt;    // int32 and uint8 inputs hold whole numbers
    double lo[3], hi[3];       // input ranges
    int repeat;                // EXPR reads an operand twice: load it into a local first
    double (*ref)(const MapArgs *v); // one element; map_store converts it to the output type
    MapValues A, B;            // the values of the float parameters (none: the parameter is 0)
    int paired;                // B takes the value at A's index (a mean and its std)
    int ties;                  // rounds to nearest: a quarter of the inputs x make x * A (A: 1 when the op has
                               // none) a tie, half-way between integers, where 1 / A is a power of two
    double grid;               // > 0: the inputs lie on a grid of this step (sums of float16 values exact in float)
    const char *const *names;  // the op's own tensor name sets (NULL: the family's)
    const char *expr[4];       // EXPR in CUDA, one spelling per value of fn (fn modulo their number)
    const char *formula;       // EXPR for the prompt
} MapOp;

// A map family: its descriptor, its ops, its tensor name sets (in0, in1, in2, out) and its
// tolerance. The descriptor comes first, so that a task's family is its MapKind.
typedef struct {
    Family fam;
    const MapOp *ops;   // in the order of the op parameter's values
    const char *const *names;
    int nnames;
    double atol, rtol;
} MapKind;

static const MapKind *map_kind(const Task *t) { return (const MapKind *)t->fam; }
static const MapOp *map_op(const Task *t) { return &map_kind(t)->ops[t->p[M_OP]]; }

// An op's text with its placeholders filled (see MapOp); a: the three operands.
static const char *map_text(const Task *t, const char *text, const char *const *a, int cuda) {
    const char *(*num)(double) = cuda ? flit : fnum;
    const char *s = FRAG(text, "a", a[0], "b", a[1], "c", a[2], "A", num(t->f[MF_A]), "B", num(t->f[MF_B]),
                         "zp", fmt("%d", (int)t->f[MF_B]), "input", t->in[0].name);
    return fmt("%.*s", (int)strcspn(s, "\n"), s); // the one line, without its newline
}
// EXPR in CUDA for operands a, in the spelling that fn picks.
static const char *map_expr(const Task *t, const char *const *a) {
    const MapOp *o = map_op(t);
    int n = 0;
    while (n < 4 && o->expr[n]) n++;
    return map_text(t, o->expr[t->p[M_FN] % n], a, 1);
}
// EXPR for the prompt, in terms of the inputs' elements NAME[i].
static const char *map_formula(const Task *t) {
    const char *x[3] = { "", "", "" };
    for (int j = 0; j < map_op(t)->arity; j++) x[j] = fmt("%s[i]", t->in[j].name);
    return map_text(t, map_op(t)->formula, x, 0);
}

// After params_draw: the loop style (float4 only where it fits), the names, the float
// parameters.
static void map_draw(Task *t, Rng *r) {
    const MapKind *k = map_kind(t);
    const MapOp *o = &k->ops[t->p[M_OP]];
    int vec4_ok = o->arity == 1 && o->in_dt[0] == DT_F32 && o->out_dt == DT_F32 && t->p[M_N] % 4 == 0;
    t->p[M_LOOP] = rng_int(r, 0, vec4_ok ? LOOP_VEC4 : LOOP_GRID);
    t->p[M_NAMES] = rng_int(r, 0, k->nnames - 1);
    const char *nm = (o->names ? o->names : k->names)[t->p[M_NAMES]];
    int named = word_count(nm) - 1; // every word but the last names an input (the op's arity says how many)
    static const char *const helper_fmt[] = { "%s_op", "apply_%s", "%s_fn", "dev_%s" };
    const char *helper = fmt(helper_fmt[(t->p[M_KNAME] + t->p[M_NAMES]) % 4], o->id);
    task_names(t, named, nm, fmt("%s %s", word(o->kn, t->p[M_KNAME]), helper), o->id);
    int a = o->A.n ? rng_int(r, 0, o->A.n - 1) : 0;
    if (o->A.n) t->f[MF_A] = o->A.v[a];
    if (o->B.n) t->f[MF_B] = o->B.v[o->paired ? a : rng_int(r, 0, o->B.n - 1)];
    if (o->out_dt == DT_U8) t->p[M_HELPER] = t->p[M_HELPER] ? 1 : 0; // min/max on int: keep the helper plain
}

static void map_layout(Task *t) {
    const MapKind *k = map_kind(t);
    const MapOp *o = map_op(t);
    int n = add_size(t, "n", t->p[M_N]);
    t->nin = o->arity;
    for (int j = 0; j < o->arity; j++) {
        tshape(&t->in[j], o->in_dt[j], 1, t->p[M_N], 0, n, -1);
        trange(&t->in[j], o->lo[j], o->hi[j], o->in_dt[j] == DT_I32 || o->in_dt[j] == DT_U8);
        if (o->grid > 0) tgrid(&t->in[j], o->grid, 1);
    }
    double tie_step = 0.5 / (o->A.n ? t->f[MF_A] : 1); // x on odd multiples of it: x * A ends in .5
    if (o->ties && tie_step == ldexp(1, ilogb(tie_step))) tgrid(&t->in[0], tie_step, 0.25);
    t->nout = 1;
    tshape(&t->out[0], o->out_dt, 1, t->p[M_N], 0, n, -1);
    t->need_fp16 = strcmp(t->fam->name, "convert_half") == 0; // every op with a float16 in or out is there
    t->atol = k->atol;
    t->rtol = k->rtol;
}

// The Task Description, by desc ($f: the formula).
static const char *const map_desc_tpl[] = {
    "Compute $out[i] = $f for every i in [0, $n).", "Element-wise over $n elements: $out[i] = $f.",
    "For each of the $n elements, set $out[i] = $f, one GPU thread per element or a grid-stride loop." };
static void map_describe(const Task *t, Buf *name, Buf *desc) {
    buf_puts(name, word(map_op(t)->task, t->p[M_TNAME]));
    buf_put_line(desc, FRAG(map_desc_tpl[t->p[M_DESC]], "out", t->out[0].name, "f", map_formula(t),
                            "n", fmt("%d", t->p[M_N])));
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
static const char map_vec4_tpl[] = R"(
float4 v = $in[$i];
v.x = $x;
v.y = $y;
v.z = $z;
v.w = $w;
$out[$i] = v;
)";
static const char map_locals_tpl[] = R"(
$locals
$out[$i] = $expr;
)";
static const char map_call_tpl[] = R"(
//? each thread handles its own element
$out[$i] = $helper($args);
)";

static void map_kernels(const Task *t, Emit *e) {
    const MapOp *o = map_op(t);
    int loop = t->p[M_LOOP], vec4 = loop == LOOP_VEC4, helper = t->p[M_HELPER];
    const char *i = IDX(t), *out = t->out[0].name, *out_ct = dt_ctypes[o->out_dt];
    // the operands as the helper's parameters, as the locals (no tensor is named va, vb, vc),
    // and as the inputs' elements
    const char *const *hv = o->arity == 1 ? (const char *const[]){ "v", "w", "s" }
                                          : (const char *const[]){ "a", "b", "c" };
    const char *const *lv = o->arity == 1 ? (const char *const[]){ "v", "", "" }
                                          : (const char *const[]){ "va", "vb", "vc" };
    const char *x[3] = { "", "", "" };
    char hparams[512] = "", args[512] = "";
    Buf locals = { 0 };
    for (int j = 0; j < o->arity; j++) {
        const char *ct = dt_ctypes[o->in_dt[j]];
        x[j] = fmt("%s[%s]", t->in[j].name, i);
        list_add(hparams, fmt("%s %s", ct, hv[j]));
        buf_printf(&locals, "const %s %s = %s;\n", ct, lv[j], x[j]);
        list_add(args, x[j]);
    }
    static const char *const spec[] = { "", "__device__ %s", "__device__ __forceinline__ %s",
                                        "static __device__ inline %s" };
    const char *helper_fn = !helper ? "" : FRAG(map_helper_tpl, "task", word(o->task, 0), "spec",
                                                fmt(spec[helper], out_ct), "helper", t->kname[1], "params", hparams,
                                                "expr", map_expr(t, hv));
    const char *body;
    if (vec4) {
        const char *c[4]; // the new value of each component
        for (int k = 0; k < 4; k++) {
            const char *v = fmt("v.%c", "xyzw"[k]);
            c[k] = helper ? fmt("%s(%s)", t->kname[1], v) : map_expr(t, (const char *const[]){ v, "", "" });
        }
        body = FRAG(map_vec4_tpl, "in", t->in[0].name, "i", i, "x", c[0], "y", c[1], "z", c[2], "w", c[3], "out", out);
    } else if (helper) {
        body = FRAG(map_call_tpl, "out", out, "i", i, "helper", t->kname[1], "args", args);
    } else if (o->repeat || t->p[M_FN] == 3) {
        body = FRAG(map_locals_tpl, "locals", buf_str(&locals), "out", out, "i", i, "expr", map_expr(t, lv));
    } else {
        body = fmt("%s[%s] = %s;", out, i, map_expr(t, x));
    }
    const char *params = vec4 ? fmt("%s, %s", ptr_param(t, "float4", t->in[0].name, 1), ptr_param(t, "float4", out, 0))
                              : kernel_params(t);
    const char *how = loop == LOOP_GRID ? "Grid-stride loop over the elements."
                      : vec4            ? "Each thread handles one float4 (four elements)."
                                        : "One thread per element.";
    const char *comment = FRAG("$task: $out[i] = $formula. $how", "task", word(o->task, 0), "out", out,
                               "formula", map_formula(t), "how", how);
    TPL(e, t, "$helper\n$kernel", "helper", helper_fn,
        "kernel", kernel_frag(t->kname[0], comment, fmt("%s, %s", params, count_param(t, vec4 ? "n4" : "n")),
                              loop_frag(t, vec4 ? LOOP_IF : loop, vec4 ? "n4" : "n", body)));
    buf_free(&locals);
}

static void map_launch(const Task *t, Emit *e, const Host *h) {
    if (t->p[M_LOOP] == LOOP_VEC4)
        launch_1d(e, t, t->kname[0], fmt("%s / 4", h->size[0]), t->p[M_BLOCK], 0,
                  fmt("(const float4 *)%s, (float4 *)%s, %s / 4", h->in[0], h->out[0], h->size[0]));
    else launch_1d(e, t, t->kname[0], h->size[0], t->p[M_BLOCK], t->p[M_LOOP] == LOOP_GRID ? t->p[M_CAP] : 0,
                   kernel_args(h, 1));
}

// A double rounded once to float16, to nearest, ties to even (what __hadd does with the
// exact sum of two halves): through float, then corrected where rounding twice differs.
static uint16_t f64_to_f16(double s) {
    float sf = (float)s;
    uint16_t h = f32_to_f16(sf), best = h;
    if ((double)sf == s) return h;
    for (int d = -1; d <= 1; d += 2) {
        uint16_t c = (uint16_t)(h + d);
        double v = f16_to_f32(c), dv = fabs(v - s), db = fabs(f16_to_f32(best) - s);
        if (dv < db || (dv == db && (c & 1) == 0)) best = c;
    }
    return best;
}
// Element i of a tensor as a double, and y stored as element i of a tensor: to an integer
// as the GPU converts (saturating; NaN gives 0), so that any input has a defined reference.
static double map_load(DType dt, const void *p, long i) {
    switch (dt) {
    case DT_I32: return ((const int *)p)[i];
    case DT_U8: return ((const unsigned char *)p)[i];
    case DT_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}
static void map_store(DType dt, void *p, long i, double y) {
    switch (dt) {
    case DT_I32: ((int *)p)[i] = cvt_i32(y); break;
    case DT_U8: ((unsigned char *)p)[i] = (unsigned char)(y != y ? 0 : fmin(fmax(y, 0), 255)); break;
    case DT_F16: ((uint16_t *)p)[i] = f64_to_f16(y); break;
    default: ((float *)p)[i] = (float)y; break;
    }
}

static double map_convert(const MapArgs *v) { return v->a; } // a plain conversion: map_store does it
static void map_ref(const Task *t, const void *const *in, void *const *out) {
    const MapOp *o = map_op(t);
    MapArgs v = { 0, 0, 0, fpar(t, MF_A), fpar(t, MF_B) };
    double *operand[3] = { &v.a, &v.b, &v.c };
    for (long i = 0; i < t->p[M_N]; i++) {
        for (int j = 0; j < o->arity; j++) *operand[j] = map_load(o->in_dt[j], in[j], i);
        map_store(o->out_dt, out[0], i, o->ref(&v));
    }
}

// ----------------------------------------------------------------------------
// Unary maps

static double un_relu(const MapArgs *v) { return v->a > 0 ? v->a : 0; }
static double un_leaky_relu(const MapArgs *v) { return v->a > 0 ? v->a : (double)(v->A * (float)v->a); }
static double un_scale_shift(const MapArgs *v) { return (double)v->A * v->a + (double)v->B; }
static double un_sigmoid(const MapArgs *v) { return 1.0 / (1.0 + exp(-v->a)); }
static double un_abs(const MapArgs *v) { return fabs(v->a); }
static double un_square(const MapArgs *v) { return (double)((float)v->a * (float)v->a); }
static double un_tanh(const MapArgs *v) { return tanh(v->a); }
static double un_exp(const MapArgs *v) { return exp(v->a); }
static double un_softplus(const MapArgs *v) { return log1p(exp(v->a)); }
static double un_silu(const MapArgs *v) { return v->a / (1.0 + exp(-v->a)); }

static const MapOp un_ops[] = {
    { "relu", "ReLU ReLU_Activation Rectified_Linear_Unit", "relu_kernel reluKernel apply_relu relu_forward",
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, 0, un_relu,
      .expr = { "$a > 0.0f ? $a : 0.0f", "fmaxf($a, 0.0f)" }, .formula = "max($a, 0)" },
    { "leaky_relu", "Leaky_ReLU LeakyReLU_Activation Leaky_Rectifier",
      "leaky_relu_kernel leakyReluKernel leaky_relu lrelu_forward",
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, 1, un_leaky_relu, .A = MAP_VALUES(0.01, 0.02, 0.05, 0.1, 0.2),
      .expr = { "$a > 0.0f ? $a : $A * $a" }, .formula = "$a if $a > 0, else $A * $a (leaky ReLU with slope $A)" },
    { "scale_shift", "Scale_And_Shift Affine_Transform Scale_Shift",
      "scale_shift_kernel scaleShiftKernel affine scale_and_shift",
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, 0, un_scale_shift,
      .A = MAP_VALUES(0.5, 1.5, 2, 2.5, 3, -2, 0.25, -0.5, 4), .B = MAP_VALUES(1, -1, 0.5, 0.75, -0.25, 3, 0.1),
      .expr = { "$A * $a + $B" }, .formula = "$A * $a + $B" },
    { "sigmoid", "Sigmoid Sigmoid_Activation Logistic_Function",
      "sigmoid_kernel sigmoidKernel apply_sigmoid sigmoid_forward",
      1, { DT_F32 }, DT_F32, { -8 }, { 8 }, 0, un_sigmoid,
      .expr = { "1.0f / (1.0f + __expf(-$a))", "1.0f / (1.0f + expf(-$a))" },
      .formula = "1 / (1 + exp(-$a)) (the logistic sigmoid)" },
    { "abs", "Absolute_Value Abs Elementwise_Abs", "abs_kernel absKernel absolute abs_values",
      1, { DT_F32 }, DT_F32, { -100 }, { 100 }, 0, un_abs,
      .expr = { "fabsf($a)" }, .formula = "|$a| (absolute value)" },
    { "square", "Square Elementwise_Square Squaring", "square_kernel squareKernel square sq_values",
      1, { DT_F32 }, DT_F32, { -10 }, { 10 }, 1, un_square, .expr = { "$a * $a" }, .formula = "$a * $a" },
    { "tanh", "Tanh Tanh_Activation Hyperbolic_Tangent", "tanh_kernel tanhKernel apply_tanh tanh_forward",
      1, { DT_F32 }, DT_F32, { -5 }, { 5 }, 0, un_tanh, .expr = { "tanhf($a)" }, .formula = "tanh($a)" },
    { "exp", "Exponential Elementwise_Exp Exp", "exp_kernel expKernel exponential exp_values",
      1, { DT_F32 }, DT_F32, { -4 }, { 4 }, 0, un_exp, .expr = { "expf($a)" }, .formula = "exp($a)" },
    { "softplus", "Softplus Softplus_Activation Smooth_ReLU",
      "softplus_kernel softplusKernel softplus softplus_forward",
      1, { DT_F32 }, DT_F32, { -8 }, { 8 }, 0, un_softplus,
      .expr = { "log1pf(expf($a))" }, .formula = "log(1 + exp($a)) (softplus)" },
    { "silu", "SiLU Swish_Activation Sigmoid_Linear_Unit", "silu_kernel siluKernel swish silu_forward",
      1, { DT_F32 }, DT_F32, { -8 }, { 8 }, 1, un_silu,
      .expr = { "$a / (1.0f + expf(-$a))" }, .formula = "$a / (1 + exp(-$a)) (SiLU / swish)" },
};
static const char *const un_op_names[] = { "relu", "leaky_relu", "scale_shift", "sigmoid", "abs", "square", "tanh",
                                           "exp", "softplus", "silu", NULL };
static const char *const un_tensor_names[] = { "x y", "input output", "in out", "src dst", "data result", "a b" };
static const MapKind un_kind = {
    MAP_FAMILY("elementwise_unary",
               "y = f(x) for activation-style f, optional __device__ helper, float4 path", un_op_names),
    un_ops, un_tensor_names, NELEM(un_tensor_names), 1e-6, 1e-5 };

// ----------------------------------------------------------------------------
// Binary operations

static double bin_add(const MapArgs *v) { return v->a + v->b; }
static double bin_sub(const MapArgs *v) { return v->a - v->b; }
static double bin_mul(const MapArgs *v) { return v->a * v->b; }
static double bin_div(const MapArgs *v) { return v->a / v->b; }
static double bin_max(const MapArgs *v) { return v->a > v->b ? v->a : v->b; }
static double bin_min(const MapArgs *v) { return v->a < v->b ? v->a : v->b; }
static double bin_axpy(const MapArgs *v) { return (double)v->A * v->a + v->b; }
static double bin_sqdiff(const MapArgs *v) { return (v->a - v->b) * (v->a - v->b); }

#define F3 { DT_F32, DT_F32, DT_F32 }
static const MapOp bin_ops[] = {
    { "add", "Vector_Add Elementwise_Addition Vector_Addition", "add_kernel vecAdd vector_add add_arrays",
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, 0, bin_add, .expr = { "$a + $b" }, .formula = "$a + $b" },
    { "sub", "Vector_Subtract Elementwise_Difference Vector_Subtraction",
      "sub_kernel vecSub vector_sub subtract_arrays",
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, 0, bin_sub, .expr = { "$a - $b" }, .formula = "$a - $b" },
    { "mul", "Vector_Multiply Hadamard_Product Elementwise_Product", "mul_kernel vecMul hadamard multiply_arrays",
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, 0, bin_mul, .expr = { "$a * $b" }, .formula = "$a * $b" },
    { "div", "Vector_Divide Elementwise_Division Safe_Divide", "div_kernel vecDiv vector_div divide_arrays",
      2, F3, DT_F32, { -10, 0.5 }, { 10, 4 }, 0, bin_div,
      .expr = { "$a / $b" }, .formula = "$a / $b (the divisor is never zero)" },
    { "max", "Elementwise_Maximum Vector_Max Pairwise_Max", "max_kernel vecMax elementwise_max maximum",
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, 0, bin_max,
      .expr = { "$a > $b ? $a : $b", "fmaxf($a, $b)" }, .formula = "max($a, $b)" },
    { "min", "Elementwise_Minimum Vector_Min Pairwise_Min", "min_kernel vecMin elementwise_min minimum",
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, 0, bin_min,
      .expr = { "$a < $b ? $a : $b", "fminf($a, $b)" }, .formula = "min($a, $b)" },
    { "axpy", "AXPY SAXPY Scaled_Vector_Add", "axpy_kernel saxpy axpy scaled_add",
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, 0, bin_axpy, .A = MAP_VALUES(2, 0.5, -0.75, 1.5, 3, 0.25, -2.5),
      .expr = { "$A * $a + $b" }, .formula = "$A * $a + $b" },
    { "sqdiff", "Squared_Difference Elementwise_Squared_Error Squared_Diff",
      "sqdiff_kernel squaredDiff squared_error sq_diff",
      2, F3, DT_F32, { -10, -10 }, { 10, 10 }, 1, bin_sqdiff,
      .expr = { "($a - $b) * ($a - $b)" }, .formula = "($a - $b)^2" },
};
static const char *const bin_op_names[] = { "add", "sub", "mul", "div", "max", "min", "axpy", "sqdiff", NULL };
static const char *const bin_tensor_names[] = { "a b c", "x y z", "lhs rhs out",
                                                "in1 in2 result", "input_a input_b output", "x y out" };
static const MapKind bin_kind = {
    MAP_FAMILY("elementwise_binary",
               "c = a (op) b: add, sub, mul, div, max, min, axpy, squared difference", bin_op_names),
    bin_ops, bin_tensor_names, NELEM(bin_tensor_names), 1e-5, 1e-5 };

// ----------------------------------------------------------------------------
// Ternary operations

// the name sets differ in meaning per op, so where, clamp and lerp have their own
static const char *const ter_tensor_names[] = { "a b c d", "x y z out", "a b c result", "p q r out" };
static const char *const ter_where_names[] = { "cond a b out", "mask x y z", "flag on_true on_false result",
                                               "pred p q out" };
static const char *const ter_clamp_names[] = { "x lo hi y", "values lower upper clamped", "x low high out",
                                               "v vmin vmax result" };
static const char *const ter_lerp_names[] = { "a b t out", "p q w result", "x0 x1 alpha y", "from to weight blend" };

static double ter_fma(const MapArgs *v) { return v->a * v->b + v->c; }
static double ter_where(const MapArgs *v) { return v->a != 0 ? v->b : v->c; }
static double ter_clamp(const MapArgs *v) { return v->a < v->b ? v->b : v->a > v->c ? v->c : v->a; }
static double ter_lerp(const MapArgs *v) { return v->a + v->c * (v->b - v->a); }

static const MapOp ter_ops[] = {
    { "fma", "Fused_Multiply_Add Elementwise_FMA Multiply_Add", "fma_kernel fmaKernel multiply_add fused_mul_add",
      3, F3, DT_F32, { -10, -10, -10 }, { 10, 10, 10 }, 0, ter_fma,
      .expr = { "$a * $b + $c", "fmaf($a, $b, $c)" }, .formula = "$a * $b + $c" },
    { "where", "Where_Select Conditional_Select Masked_Select", "where_kernel selectKernel masked_select where_select",
      3, { DT_I32, DT_F32, DT_F32 }, DT_F32, { 0, -10, -10 }, { 1, 10, 10 }, 0, ter_where, .names = ter_where_names,
      .expr = { "$a ? $b : $c", "$a != 0 ? $b : $c" }, .formula = "$b if $a != 0, else $c" },
    { "clamp", "Clamp_To_Bounds Elementwise_Clamp Bounded_Clip", "clamp_kernel clampKernel clip_values clamp_between",
      3, F3, DT_F32, { -4, -2, 0 }, { 4, 0, 2 }, 0, ter_clamp, .names = ter_clamp_names,
      .expr = { "$a < $b ? $b : ($a > $c ? $c : $a)", "fminf(fmaxf($a, $b), $c)" },
      .formula = "$a clamped to [$b, $c] (lower bounds never exceed upper bounds)" },
    { "lerp", "Linear_Interpolation Lerp Elementwise_Lerp", "lerp_kernel lerpKernel interpolate lerp_arrays",
      3, F3, DT_F32, { -10, -10, 0 }, { 10, 10, 1 }, 1, ter_lerp, .names = ter_lerp_names,
      .expr = { "$a + $c * ($b - $a)" }, .formula = "$a + $c * ($b - $a), with $c in [0, 1)" },
};
static const char *const ter_op_names[] = { "fma", "where", "clamp", "lerp", NULL };
static const MapKind ter_kind = {
    MAP_FAMILY("elementwise_ternary",
               "d = f(a, b, c): fma, where (select by an int mask), clamp to bounds, lerp", ter_op_names),
    ter_ops, ter_tensor_names, NELEM(ter_tensor_names), 1e-5, 1e-5 };

// ----------------------------------------------------------------------------
// float32 -> int32 / uint8

// x * a in float32 as the GPU rounds it (volatile: no excess precision, no contraction)
static float f2i_product(const MapArgs *v) {
    volatile float p = (float)v->a * v->A;
    return p;
}
static double f2i_round(const MapArgs *v) { return rint(v->a); }
static double f2i_trunc(const MapArgs *v) { return trunc(v->a); }
static double f2i_floor(const MapArgs *v) { return floor(v->a); }
static double f2i_ceil(const MapArgs *v) { return ceil(v->a); }
static double f2i_scale_round(const MapArgs *v) { return rintf(f2i_product(v)); }
static double f2i_quantize_u8(const MapArgs *v) {
    double q = rintf(f2i_product(v)) + (int)v->B;
    return q < 0 ? 0 : q > 255 ? 255 : q;
}

static const MapOp f2i_ops[] = {
    { "round", "Float_To_Int_Round Round_To_Nearest_Int Float_Rounding",
      "round_kernel float2intRound to_int_rn round_to_int",
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, 0, f2i_round, .ties = 1,
      .expr = { "__float2int_rn($a)", "(int)rintf($a)", "(int)lrintf($a)", "(int)nearbyintf($a)" },
      .formula = "$a rounded to the nearest integer, ties to even, as int32" },
    { "trunc", "Float_To_Int_Truncate Truncate_To_Int Float_Truncation",
      "trunc_kernel float2intTrunc to_int_rz truncate_to_int",
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, 0, f2i_trunc,
      .expr = { "(int)$a", "__float2int_rz($a)" }, .formula = "$a truncated toward zero, as int32" },
    { "floor", "Float_To_Int_Floor Floor_To_Int Floor_Conversion", "floor_kernel float2intFloor to_int_rd floor_to_int",
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, 0, f2i_floor,
      .expr = { "(int)floorf($a)", "__float2int_rd($a)" }, .formula = "floor($a) as int32" },
    { "ceil", "Float_To_Int_Ceil Ceil_To_Int Ceiling_Conversion", "ceil_kernel float2intCeil to_int_ru ceil_to_int",
      1, { DT_F32 }, DT_I32, { -1000 }, { 1000 }, 0, f2i_ceil,
      .expr = { "(int)ceilf($a)", "__float2int_ru($a)" }, .formula = "ceil($a) as int32" },
    { "scale_round", "Fixed_Point_Conversion Scaled_Round_To_Int Float_To_Fixed",
      "to_fixed_kernel floatToFixed quantize_fixed fixed_point",
      1, { DT_F32 }, DT_I32, { -50 }, { 50 }, 0, f2i_scale_round, .A = MAP_VALUES(2, 4, 10, 16, 100, 256, 1000),
      .ties = 1,
      .expr = { "(int)rintf($a * $A)", "__float2int_rn($a * $A)" },
      .formula = "round($a * $A) as int32 (fixed point with $A steps per unit; the product is computed in float32 "
                 "and rounded to nearest, ties to even)" },
    { "quantize_u8", "Quantize_To_Uint8 Uint8_Quantization Affine_Quantize",
      "quantize_kernel quantizeU8 quantize_uint8 to_uint8",
      1, { DT_F32 }, DT_U8, { -3 }, { 3 }, 0, f2i_quantize_u8, .A = MAP_VALUES(16, 32, 40, 42.5, 50),
      .B = MAP_VALUES(128, 127, 100, 64), .ties = 1,
      .expr = { "(unsigned char)min(max(__float2int_rn($a * $A) + $zp, 0), 255)" },
      .formula = "clamp(round($a * $A) + $zp, 0, 255) as uint8 (the product in float32, rounded to nearest, "
                 "ties to even)" },
};
static const char *const f2i_op_names[] = { "round", "trunc", "floor", "ceil", "scale_round", "quantize_u8", NULL };
static const char *const f2i_tensor_names[] = { "x q", "input output", "values ints", "src dst", "f i32" };
static const MapKind f2i_kind = {
    MAP_FAMILY("convert_float_to_int",
               "float32 -> int32 (round/trunc/floor/ceil/fixed point), float32 -> uint8 quantisation", f2i_op_names),
    f2i_ops, f2i_tensor_names, NELEM(f2i_tensor_names), 0, 0 };

// ----------------------------------------------------------------------------
// int32 / uint8 -> float32

static double i2f_dequantize(const MapArgs *v) { return (v->a - (int)v->B) * v->A; }
static double i2f_scale_bias(const MapArgs *v) { return v->a * v->A + v->B; }
static double i2f_normalize_u8(const MapArgs *v) { return (v->a - v->A) / v->B; }

static const MapOp i2f_ops[] = {
    { "dequantize", "Dequantize_Int8 Int_Dequantization Affine_Dequantize",
      "dequantize_kernel dequantize int_to_float dequant",
      1, { DT_I32 }, DT_F32, { -128 }, { 127 }, 0, i2f_dequantize, .A = MAP_VALUES(0.05, 0.1, 0.02, 0.25, 0.125, 0.01),
      .B = MAP_VALUES(7, 3, -5, 10),
      .expr = { "(float)($a - $zp) * $A" }, .formula = "($a - $zp) * $A" },
    { "scale_bias", "Int_To_Float_Scale Scaled_Int_Conversion Int_Scale_Bias",
      "int_scale_kernel intToFloatScaled scale_ints convert_scale",
      1, { DT_I32 }, DT_F32, { -100000 }, { 100000 }, 0, i2f_scale_bias, .A = MAP_VALUES(0.001, 0.5, 2, 0.0625, 1e-4),
      .B = MAP_VALUES(0.25, 1, -0.5, 10),
      .expr = { "(float)$a * $A + $B", "__int2float_rn($a) * $A + $B" }, .formula = "float($a) * $A + $B" },
    { "normalize_u8", "Normalize_Uint8_Pixels Pixel_Normalization Uint8_To_Float_Normalize",
      "normalize_kernel normalizePixels u8_to_float pixel_norm",
      1, { DT_U8 }, DT_F32, { 0 }, { 255 }, 0, i2f_normalize_u8, .A = MAP_VALUES(127.5, 128, 123.675, 100),
      .B = MAP_VALUES(127.5, 64, 58.395, 58.5), .paired = 1,
      .expr = { "((float)$a - $A) / $B" }, .formula = "(float($a) - $A) / $B" },
    { "to_float", "Int_To_Float Integer_To_Float_Cast Int32_To_Float32",
      "int2float_kernel intToFloat cast_to_float to_float",
      1, { DT_I32 }, DT_F32, { -10000000 }, { 10000000 }, 0, map_convert,
      .expr = { "(float)$a", "__int2float_rn($a)" }, .formula = "$a converted to float32 (round to nearest)" },
};
static const char *const i2f_op_names[] = { "dequantize", "scale_bias", "normalize_u8", "to_float", NULL };
static const char *const i2f_tensor_names[] = { "q x", "input output", "codes values", "src dst", "ints floats" };
static const MapKind i2f_kind = {
    MAP_FAMILY("convert_int_to_float",
               "int32 -> float32 (dequantise, scale+bias, plain cast), uint8 pixels -> normalised float32",
               i2f_op_names),
    i2f_ops, i2f_tensor_names, NELEM(i2f_tensor_names), 1e-6, 1e-6 };

// ----------------------------------------------------------------------------
// float32 <-> float16 (float16 operands reach the references widened to double, map_store rounds once).
// Compared exactly: each op rounds once (half_add's inputs on a grid of 2^-8 make the float
// sum of two of them exact, so adding in float then rounding to float16 rounds once too),
// and a conversion that truncates, or none at all, is within 1e-3 of the right one.

static double half_from_half(const MapArgs *v) { return (float)v->a * v->A; }
static double half_roundtrip(const MapArgs *v) { return f16_to_f32(f32_to_f16((float)v->a)); }

static const MapOp half_ops[] = {
    { "to_half", "Float_To_Half FP32_To_FP16 Half_Precision_Cast",
      "to_half_kernel floatToHalf f32_to_f16 convert_to_half",
      1, { DT_F32 }, DT_F16, { -100 }, { 100 }, 0, map_convert,
      .expr = { "__float2half($a)", "__float2half_rn($a)" },
      .formula = "$a converted to float16 (round to nearest even)" },
    { "from_half", "Half_To_Float_Scaled FP16_To_FP32_Scale Half_Dequantize",
      "from_half_kernel halfToFloat f16_to_f32 convert_from_half",
      1, { DT_F16 }, DT_F32, { -10 }, { 10 }, 0, half_from_half, .A = MAP_VALUES(4, 0.5, 2, 0.125, 10),
      .expr = { "__half2float($a) * $A" }, .formula = "float32($a) * $A ($input holds float16 values)" },
    { "roundtrip", "Half_Round_Trip FP16_Quantization_Error Half_Rounding",
      "roundtrip_kernel halfRoundTrip through_half fp16_round",
      1, { DT_F32 }, DT_F32, { -1000 }, { 1000 }, 0, half_roundtrip,
      .expr = { "__half2float(__float2half($a))", "__half2float(__float2half_rn($a))" },
      .formula = "$a rounded to float16 (nearest even) and converted back to float32" },
    { "half_add", "Half_Precision_Add FP16_Vector_Add Half_Add", "hadd_kernel halfAdd add_half fp16_add",
      2, { DT_F16, DT_F16 }, DT_F16, { -10, -10 }, { 10, 10 }, 0, bin_add, .grid = 1.0 / 256,
      .expr = { "__float2half(__half2float($a) + __half2float($b))", "__hadd($a, $b)" },
      .formula = "$a + $b in float16 (round to nearest even)" },
};
static const char *const half_op_names[] = { "to_half", "from_half", "roundtrip", "half_add", NULL };
static const char *const half_tensor_names[] = { "x w y", "input other output", "src src2 dst", "a b c" };
static const MapKind half_kind = {
    MAP_FAMILY("convert_half",
               "float32 <-> float16 with __float2half/__half2float, half round trip, __hadd", half_op_names),
    half_ops, half_tensor_names, NELEM(half_tensor_names), 0, 0 };

static const Family *const families_elementwise[] = { &un_kind.fam, &bin_kind.fam, &ter_kind.fam, &f2i_kind.fam,
                                                      &i2f_kind.fam, &half_kind.fam, NULL };
