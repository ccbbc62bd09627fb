// a * b + c where fusing matters: (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 exactly, and 0 when
// the product is rounded first (1 + 2^-11 + 2^-24 rounds to 1 + 2^-11). Built with
// nvcc-emu --fma -DFUSED, the kernel's a * b + c is one fused multiply-add, as nvcc makes it.
#include <cuda_runtime.h>
#include "common.h"

__global__ void mad(const float *x, float *out) { out[0] = x[0] * x[1] + x[2]; }

int main() {
    const float x[3] = {1.0f + 1.0f / 4096, 1.0f + 1.0f / 4096, -(1.0f + 1.0f / 2048)};
    float *dx, *dout, got;
    CHECK(cudaMalloc(&dx, sizeof x));
    CHECK(cudaMalloc(&dout, sizeof got));
    CHECK(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice));
    mad<<<1, 1>>>(dx, dout);
    CHECK(cudaMemcpy(&got, dout, sizeof got, cudaMemcpyDeviceToHost));
#ifdef FUSED
    const float want = 1.0f / 4096 / 4096;
#else
    const float want = 0.0f;
#endif
    if (got != want) { printf("MISMATCH a * b + c = %.9g, want %.9g\n", got, want); return 1; }
    printf("OK a * b + c = %.9g\n", got);
    return 0;
}
