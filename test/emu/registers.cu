// A kernel that nvcc gives more than 64 registers per thread (each thread keeps 96 loaded
// values live, fully unrolled), launched with 1024 threads per block, which a GPU refuses
// (cudaErrorLaunchOutOfResources), and with 256, which it runs. Prints what each launch
// gave; test_emu.sh builds it with nvcc -Xptxas -v's report (nvcc-emu --ptxas-info) and
// compares with the register count the report holds.
#include <cuda_runtime.h>
#include "common.h"

__global__ void heavy(const float *x, float *y, int n) {
    float a[96];
#pragma unroll
    for (int k = 0; k < 96; k++) a[k] = x[(threadIdx.x + 37 * k) % n];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 96; k++) s += a[k] * a[95 - k] + a[(k * 7) % 96];
    y[threadIdx.x] = s;
}

int main() {
    const int n = 1024;
    float *x, *y;
    CHECK(cudaMallocManaged(&x, n * sizeof(float)));
    CHECK(cudaMallocManaged(&y, n * sizeof(float)));
    for (int i = 0; i < n; i++) x[i] = 1.0f;
    for (int threads : {1024, 256}) {
        y[0] = 0.0f;
        heavy<<<1, threads>>>(x, y, n);
        cudaError_t e = cudaGetLastError();
        CHECK(cudaDeviceSynchronize());
        printf("%d threads: %s, y[0] = %g\n", threads, cudaGetErrorName(e), y[0]); // 192 when it ran
    }
    return 0;
}
