// The standard single-precision math functions in a kernel, on fresh random inputs, against
// the same functions on the host. Plain: equal to them. With CUEMU_ULP=SEED: within the
// maximum ulp error the CUDA Programming Guide gives for each (+1 for the rounding of the
// host's result), all above them (odd SEED) or above and below at random (even; each side
// for at least a sixth of the inputs), and off for most inputs. A __host__ __device__
// function gives the host's result when the host calls it, whatever CUEMU_ULP says.
#include <cmath>
#include <cuda_runtime.h>
#include "common.h"

// name, the Guide's maximum ulp error, the input range [lo, hi] (the second argument of
// the two-argument functions is drawn from the same range)
#define FUNCTIONS(X)                                                                                                  \
    X(expf, 2, -80, 80) X(exp2f, 2, -100, 100) X(exp10f, 2, -30, 30) X(expm1f, 1, -5, 5) X(logf, 1, 1e-6, 1e6)    \
    X(log2f, 1, 1e-6, 1e6) X(log10f, 2, 1e-6, 1e6) X(log1pf, 1, -0.9, 100) X(sinf, 2, -100, 100)                  \
    X(cosf, 2, -100, 100) X(tanf, 4, -1.5, 1.5) X(asinf, 2, -1, 1) X(acosf, 2, -1, 1) X(atanf, 2, -50, 50)         \
    X(sinhf, 3, -20, 20) X(coshf, 2, -20, 20) X(tanhf, 2, -5, 5) X(asinhf, 3, -50, 50) X(acoshf, 4, 1, 50)         \
    X(atanhf, 3, -0.99, 0.99) X(erff, 2, -3, 3) X(erfcf, 4, -3, 3) X(cbrtf, 1, -1e3, 1e3) X(tgammaf, 5, 0.1, 20)   \
    X(lgammaf, 6, 0.1, 50)
#define FUNCTIONS2(X) X(powf, 4, 0.1, 10) X(atan2f, 3, -10, 10) X(hypotf, 3, -1e3, 1e3)
#define ENUM(name, ulps, lo, hi) F_##name,
enum { FUNCTIONS(ENUM) FUNCTIONS2(ENUM) F_SIN_OF_SINCOS, NF };
#define ROW(name, ulps, lo, hi) {#name, ulps, (float)lo, (float)hi},
static const struct { const char *name; int ulps; float lo, hi; } fn[NF] = {
    FUNCTIONS(ROW) FUNCTIONS2(ROW){"sincosf", 2, -100, 100}};
const int n = 2048;

// out[f * n + i] = function f of x[f * n + i] (and y[f * n + i]); one thread per i. The
// calls are written out: nvcc-emu sees the program's text before the preprocessor does.
#define O(f) out[F_##f * n + i]
#define X(f) x[F_##f * n + i]
#define Y(f) y[F_##f * n + i]
__global__ void compute(const float *x, const float *y, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    O(expf) = expf(X(expf)); O(exp2f) = exp2f(X(exp2f)); O(exp10f) = exp10f(X(exp10f));
    O(expm1f) = expm1f(X(expm1f)); O(logf) = logf(X(logf)); O(log2f) = log2f(X(log2f));
    O(log10f) = log10f(X(log10f)); O(log1pf) = log1pf(X(log1pf)); O(sinf) = sinf(X(sinf)); O(cosf) = cosf(X(cosf));
    O(tanf) = tanf(X(tanf)); O(asinf) = asinf(X(asinf)); O(acosf) = acosf(X(acosf)); O(atanf) = atanf(X(atanf));
    O(sinhf) = sinhf(X(sinhf)); O(coshf) = coshf(X(coshf)); O(tanhf) = tanhf(X(tanhf));
    O(asinhf) = asinhf(X(asinhf)); O(acoshf) = acoshf(X(acoshf)); O(atanhf) = atanhf(X(atanhf));
    O(erff) = erff(X(erff)); O(erfcf) = erfcf(X(erfcf)); O(cbrtf) = cbrtf(X(cbrtf));
    O(tgammaf) = tgammaf(X(tgammaf)); O(lgammaf) = lgammaf(X(lgammaf)); O(powf) = powf(X(powf), Y(powf));
    O(atan2f) = atan2f(X(atan2f), Y(atan2f)); O(hypotf) = hypotf(X(hypotf), Y(hypotf));
    float c;
    sincosf(X(SIN_OF_SINCOS), &O(SIN_OF_SINCOS), &c);
}

__host__ __device__ float both(float v) { return expf(v) + tanhf(v); }

static float host_value(int f, float x, float y) {
#define HOST(name, ulps, lo, hi) case F_##name: return ::name(x);
#define HOST2(name, ulps, lo, hi) case F_##name: return ::name(x, y);
    switch (f) {
        FUNCTIONS(HOST)
        FUNCTIONS2(HOST2)
    }
    return ::sinf(x);
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    static float x[NF * n], y[NF * n], out[NF * n];
    for (int f = 0; f < NF; f++)
        for (int i = 0; i < n; i++) {
            float u = (rand_float() + 1) / 2, v = (rand_float() + 1) / 2; // [0, 1]
            x[f * n + i] = fn[f].lo + u * (fn[f].hi - fn[f].lo);
            y[f * n + i] = fn[f].lo + v * (fn[f].hi - fn[f].lo);
        }
    float *dx = device_copy(x, sizeof x / 4), *dy = device_copy(y, sizeof y / 4), *dout;
    CHECK(cudaMalloc(&dout, sizeof out));
    compute<<<(n + 255) / 256, 256>>>(dx, dy, dout);
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    long long seed = getenv("CUEMU_ULP") ? atoll(getenv("CUEMU_ULP")) : 0;
    int perturbed = seed != 0, up = seed & 1, bad = 0;
    for (int f = 0; f < NF; f++) {
        long off = 0, below = 0, finite = 0;
        for (int i = 0; i < n; i++) {
            float got = out[f * n + i], exact = host_value(f, x[f * n + i], y[f * n + i]);
            if (!std::isfinite(exact) || exact == 0.0f) continue;
            finite++;
            off += got != exact;
            below += got < exact;
            int ok = perturbed ? ulps_apart(got, exact) <= fn[f].ulps + 1 && (!up || got >= exact) : got == exact;
            if (!ok && bad++ < 5)
                printf("MISMATCH %s(%.9g) at %d: %.9g, host %.9g\n", fn[f].name, x[f * n + i], i, got, exact);
        }
        // a bound of b ulps moves a result by 0..b ulps: off for b / (b + 1) of the inputs
        long want_off = finite * fn[f].ulps / (fn[f].ulps + 1) * 3 / 4;
        if (perturbed && (off < want_off || (!up && (below < finite / 6 || off - below < finite / 6))))
            printf("MISMATCH %s: %ld of %ld results off the host's, %ld below\n", fn[f].name, off, finite, below), bad++;
    }
    if (both(0.75f) != ::expf(0.75f) + ::tanhf(0.75f))
        printf("MISMATCH the host's call of a __host__ __device__ function: %.9g\n", both(0.75f)), bad++;
    if (bad) return 1;
    printf("OK %s\n", !perturbed ? "equal to the host's functions"
                       : up       ? "within CUDA's bounds, all above"
                                  : "within CUDA's bounds, above and below");
    return 0;
}
