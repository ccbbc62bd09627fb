// The standard math functions in a kernel, on fresh random inputs, against the same
// functions on the host: each function by its float name (expf) and by its generic name
// (exp) on float and on double arguments. Plain: equal to the host's. With CUEMU_ULP=SEED:
// within the maximum ulp error the CUDA Programming Guide gives for each (the float bound
// for expf and exp of a float, the double bound for exp of a double; +1 for the rounding
// of the host's result), all above them (odd SEED) or above and below at random (even;
// each side for at least a sixth of the inputs), and off for most inputs. A __host__
// __device__ function gives the host's result when the host calls it, whatever CUEMU_ULP
// says.
#include <cmath>
#include <cuda_runtime.h>
#include "common.h"

// name, the Guide's maximum ulp error in single and in double precision, the input range
// [lo, hi] (the second argument of the two-argument functions is drawn from the same range)
#define FUNCTIONS(X)                                                                                                  \
    X(exp, 2, 1, -80, 80) X(exp2, 2, 1, -100, 100) X(exp10, 2, 1, -30, 30) X(expm1, 1, 1, -5, 5)                       \
    X(log, 1, 1, 1e-6, 1e6) X(log2, 1, 1, 1e-6, 1e6) X(log10, 2, 1, 1e-6, 1e6) X(log1p, 1, 1, -0.9, 100)             \
    X(sin, 2, 2, -100, 100) X(cos, 2, 2, -100, 100) X(tan, 4, 2, -1.5, 1.5) X(asin, 2, 2, -1, 1)                     \
    X(acos, 2, 2, -1, 1) X(atan, 2, 2, -50, 50) X(sinh, 3, 2, -20, 20) X(cosh, 2, 1, -20, 20) X(tanh, 2, 1, -5, 5)   \
    X(asinh, 3, 3, -50, 50) X(acosh, 4, 3, 1, 50) X(atanh, 3, 2, -0.99, 0.99) X(erf, 2, 2, -3, 3)                    \
    X(erfc, 4, 5, -3, 3) X(cbrt, 1, 1, -1e3, 1e3) X(tgamma, 5, 10, 0.1, 20) X(lgamma, 6, 4, 0.1, 50)
#define FUNCTIONS2(X) X(pow, 4, 2, 0.1, 10) X(atan2, 3, 2, -10, 10) X(hypot, 3, 2, -1e3, 1e3)
#define ENUM(name, fulps, dulps, lo, hi) F_##name,
enum { FUNCTIONS(ENUM) FUNCTIONS2(ENUM) F_sincos, NF };
#define ROW(name, fulps, dulps, lo, hi) {#name, fulps, dulps, lo, hi},
static const struct { const char *name; int fulps, dulps; double lo, hi; } fn[NF] = {
    FUNCTIONS(ROW) FUNCTIONS2(ROW) ROW(sincos, 2, 2, -100, 100)};
const int n = 2048;

// Function f of (x, y) by its float name, and by its generic name on T (sincos: the sine).
// The calls are written out: nvcc-emu sees the program's text before the preprocessor does.
__device__ float by_float_name(int f, float x, float y) {
    float s, c;
    switch (f) {
    case F_exp: return expf(x);     case F_exp2: return exp2f(x);   case F_exp10: return exp10f(x);
    case F_expm1: return expm1f(x); case F_log: return logf(x);     case F_log2: return log2f(x);
    case F_log10: return log10f(x); case F_log1p: return log1pf(x); case F_sin: return sinf(x);
    case F_cos: return cosf(x);     case F_tan: return tanf(x);     case F_asin: return asinf(x);
    case F_acos: return acosf(x);   case F_atan: return atanf(x);   case F_sinh: return sinhf(x);
    case F_cosh: return coshf(x);   case F_tanh: return tanhf(x);   case F_asinh: return asinhf(x);
    case F_acosh: return acoshf(x); case F_atanh: return atanhf(x); case F_erf: return erff(x);
    case F_erfc: return erfcf(x);   case F_cbrt: return cbrtf(x);   case F_tgamma: return tgammaf(x);
    case F_lgamma: return lgammaf(x); case F_pow: return powf(x, y); case F_atan2: return atan2f(x, y);
    case F_hypot: return hypotf(x, y);
    }
    sincosf(x, &s, &c);
    return s;
}
template <class T> __device__ T by_generic_name(int f, T x, T y) {
    T s, c;
    switch (f) {
    case F_exp: return exp(x);     case F_exp2: return exp2(x);   case F_exp10: return exp10(x);
    case F_expm1: return expm1(x); case F_log: return log(x);     case F_log2: return log2(x);
    case F_log10: return log10(x); case F_log1p: return log1p(x); case F_sin: return sin(x);
    case F_cos: return cos(x);     case F_tan: return tan(x);     case F_asin: return asin(x);
    case F_acos: return acos(x);   case F_atan: return atan(x);   case F_sinh: return sinh(x);
    case F_cosh: return cosh(x);   case F_tanh: return std::tanh(x); case F_asinh: return asinh(x);
    case F_acosh: return acosh(x); case F_atanh: return atanh(x); case F_erf: return erf(x);
    case F_erfc: return erfc(x);   case F_cbrt: return cbrt(x);   case F_tgamma: return tgamma(x);
    case F_lgamma: return lgamma(x); case F_pow: return ::std::pow(x, y); case F_atan2: return atan2(x, y);
    case F_hypot: return hypot(x, y);
    }
    sincos(x, &s, &c);
    return s;
}

// The three results of element i of every function; one thread per i.
__global__ void compute(const float *x, const float *y, const double *xd, const double *yd, float *out_named,
                        float *out_generic, double *out_double) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int f = 0; f < NF; f++) {
        int k = f * n + i;
        out_named[k] = by_float_name(f, x[k], y[k]);
        out_generic[k] = by_generic_name(f, x[k], y[k]);
        out_double[k] = by_generic_name(f, xd[k], yd[k]);
    }
}

__host__ __device__ float both(float v) { return expf(v) + tanh(v); }

// The host's result (calls after :: are not rewritten).
static float host_value(int f, float x, float y) {
#define HOST(name, fulps, dulps, lo, hi) case F_##name: return ::name##f(x);
#define HOST2(name, fulps, dulps, lo, hi) case F_##name: return ::name##f(x, y);
    switch (f) {
        FUNCTIONS(HOST)
        FUNCTIONS2(HOST2)
    }
    return ::sinf(x);
}
static double host_value(int f, double x, double y) {
#define HOSTD(name, fulps, dulps, lo, hi) case F_##name: return ::name(x);
#define HOSTD2(name, fulps, dulps, lo, hi) case F_##name: return ::name(x, y);
    switch (f) {
        FUNCTIONS(HOSTD)
        FUNCTIONS2(HOSTD2)
    }
    return ::sin(x);
}

// Checks results got[f * n + i] of one kind against the host's; the number of failures.
template <class T> static int check(const char *kind, const T *got, const T *x, const T *y, long long seed) {
    int perturbed = seed != 0, up = seed & 1, bad = 0;
    for (int f = 0; f < NF; f++) {
        int bound = sizeof(T) == 4 ? fn[f].fulps : fn[f].dulps;
        long off = 0, below = 0, finite = 0;
        for (int i = 0; i < n; i++) {
            int k = f * n + i;
            T exact = host_value(f, x[k], y[k]);
            if (!std::isfinite(exact) || exact == 0) continue;
            finite++;
            off += got[k] != exact;
            below += got[k] < exact;
            int ok = perturbed ? ulps_apart(got[k], exact) <= bound + 1 && (!up || got[k] >= exact) : got[k] == exact;
            if (!ok && bad++ < 5)
                printf("MISMATCH %s %s(%.17g) at %d: %.17g, host %.17g\n", kind, fn[f].name, (double)x[k], i,
                       (double)got[k], (double)exact);
        }
        // a bound of b ulps moves a result by 0..b ulps: off for b / (b + 1) of the inputs
        long want_off = finite * bound / (bound + 1) * 3 / 4;
        if (perturbed && (off < want_off || (!up && (below < finite / 6 || off - below < finite / 6))))
            printf("MISMATCH %s %s: %ld of %ld results off the host's, %ld below\n", kind, fn[f].name, off, finite,
                   below), bad++;
    }
    return bad;
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    static float x[NF * n], y[NF * n], out_named[NF * n], out_generic[NF * n];
    static double xd[NF * n], yd[NF * n], out_double[NF * n];
    for (int f = 0; f < NF; f++)
        for (int i = 0; i < n; i++) {
            double u = (rand_float() + 1) / 2, v = (rand_float() + 1) / 2; // [0, 1]
            xd[f * n + i] = fn[f].lo + u * (fn[f].hi - fn[f].lo);
            yd[f * n + i] = fn[f].lo + v * (fn[f].hi - fn[f].lo);
            x[f * n + i] = (float)xd[f * n + i];
            y[f * n + i] = (float)yd[f * n + i];
        }
    float *dx = device_copy(x, NF * n), *dy = device_copy(y, NF * n), *dnamed, *dgeneric;
    double *dxd = device_copy(xd, NF * n), *dyd = device_copy(yd, NF * n), *ddouble;
    CHECK(cudaMalloc(&dnamed, sizeof out_named));
    CHECK(cudaMalloc(&dgeneric, sizeof out_generic));
    CHECK(cudaMalloc(&ddouble, sizeof out_double));
    compute<<<(n + 255) / 256, 256>>>(dx, dy, dxd, dyd, dnamed, dgeneric, ddouble);
    CHECK(cudaMemcpy(out_named, dnamed, sizeof out_named, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out_generic, dgeneric, sizeof out_generic, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out_double, ddouble, sizeof out_double, cudaMemcpyDeviceToHost));
    long long seed = getenv("CUEMU_ULP") ? atoll(getenv("CUEMU_ULP")) : 0;
    int bad = check("float-name", out_named, x, y, seed) + check("generic-float", out_generic, x, y, seed) +
              check("generic-double", out_double, xd, yd, seed);
    if (both(0.75f) != ::expf(0.75f) + ::tanhf(0.75f))
        printf("MISMATCH the host's call of a __host__ __device__ function: %.9g\n", both(0.75f)), bad++;
    if (bad) return 1;
    printf("OK %s\n", !seed ? "equal to the host's functions"
                     : seed & 1 ? "within CUDA's bounds, all above"
                                : "within CUDA's bounds, above and below");
    return 0;
}
