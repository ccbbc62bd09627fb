// The fast intrinsics and rsqrtf on fresh random inputs, against the accurate functions on
// the host. Plain: equal to them. With CUEMU_ULP=SEED: within CUDA's documented error
// bounds of them, all above them (odd SEED) or above and below at random (even; each side
// for at least a quarter of the inputs), and off for most inputs (else the setting would
// test nothing).
#include <cmath>
#include <cuda_runtime.h>
#include "common.h"

enum { EXP, LOG, DIV, RSQRT, SIN, NFN };
static const char *const names[NFN] = {"__expf", "__logf", "__fdividef", "rsqrtf", "__sinf"};
const int n = 4096;

// out[f * n + i] = function f of x[i] (and y[i] for the division); one thread per i.
__global__ void fast(const float *x, const float *y, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[EXP * n + i] = __expf(x[i]);
    out[LOG * n + i] = __logf(y[i]);
    out[DIV * n + i] = __fdividef(x[i], y[i]);
    out[RSQRT * n + i] = rsqrtf(y[i]);
    out[SIN * n + i] = __sinf(x[i] * 0.03f);
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    static float x[n], y[n], out[NFN * n];
    for (int i = 0; i < n; i++) {
        x[i] = 80.0f * rand_float();                        // [-80, 80]: __expf's bound grows to 95 ulps
        y[i] = ldexpf(1.0f + fabsf(rand_float()), (int)(rand_u32() % 40) - 20); // positive, 2^-20 .. 2^21
    }
    float *dx = device_copy(x, sizeof x / 4), *dy = device_copy(y, sizeof y / 4), *dout;
    CHECK(cudaMalloc(&dout, sizeof out));
    fast<<<(n + 255) / 256, 256>>>(dx, dy, dout);
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    long long seed = getenv("CUEMU_ULP") ? atoll(getenv("CUEMU_ULP")) : 0;
    int perturbed = seed != 0, up = seed & 1, bad = 0;
    long off[NFN] = {0}, below[NFN] = {0};
    for (int i = 0; i < n; i++) {
        float xs = x[i] * 0.03f;
        float exact[NFN] = {expf(x[i]), logf(y[i]), x[i] / y[i], 1.0f / sqrtf(y[i]), sinf(xs)};
        // the bound (+1 ulp for the rounding of the host's result or of the perturbed one):
        // ulps, or an absolute error
        long ulps[NFN] = {3 + (long)fabsf(1.173f * x[i]), 4, 3, 3, 0};
        double abs_err[NFN] = {0, y[i] >= 0.5f && y[i] <= 2.0f ? 3.6e-7 : 0, 0, 0, 3.6e-7};
        for (int f = 0; f < NFN; f++) {
            float got = out[f * n + i];
            off[f] += got != exact[f];
            below[f] += got < exact[f];
            int ok = (abs_err[f] > 0 ? fabs((double)got - exact[f]) <= abs_err[f] + 1.2e-7 * fabsf(exact[f]) + 1e-12
                                     : ulps_apart(got, exact[f]) <= ulps[f]) &&
                     (!up || got >= exact[f]);
            if (perturbed ? !ok : got != exact[f]) {
                if (bad++ < 5) printf("MISMATCH %s at %d: %.9g, accurate %.9g\n", names[f], i, got, exact[f]);
            }
        }
    }
    for (int f = 0; f < NFN && perturbed; f++)
        if (off[f] < n / 2 || (!up && (below[f] < n / 4 || off[f] - below[f] < n / 4)))
            printf("MISMATCH %s: %ld of %d results off the accurate value, %ld below it\n", names[f], off[f], n,
                   below[f]), bad++;
    if (bad) return 1;
    printf("OK %s\n", !perturbed ? "equal to the accurate functions"
                       : up       ? "within CUDA's bounds, all above"
                                  : "within CUDA's bounds, above and below");
    return 0;
}
