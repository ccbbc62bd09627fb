// A kernel that nvcc gives more than 64 registers per thread (each thread keeps 96 loaded
// values live, fully unrolled), launched with 1024 threads per block, which a GPU refuses
// (cudaErrorLaunchOutOfResources), and with 256, which it runs; as a kernel of external
// linkage, a static one and one in an anonymous namespace (whose symbols g++ and nvcc
// mangle differently), each launched through a table of function pointers and by name.
// Prints what each launch gave and the registers cudaFuncGetAttributes reports;
// test_emu.sh builds it with nvcc -Xptxas -v's report (nvcc-emu --ptxas-info) and compares
// with the register counts the report holds.
#include <cuda_runtime.h>
#include "common.h"

__device__ __forceinline__ void heavy_body(const float *x, float *y, int n) {
    float a[96];
#pragma unroll
    for (int k = 0; k < 96; k++) a[k] = x[(threadIdx.x + 37 * k) % n];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 96; k++) s += a[k] * a[95 - k] + a[(k * 7) % 96];
    y[threadIdx.x] = s;
}
__global__ void heavy(const float *x, float *y, int n) { heavy_body(x, y, n); }
static __global__ void heavy_static(const float *x, float *y, int n) { heavy_body(x, y, n); }
namespace {
__global__ void heavy_anon(const float *x, float *y, int n) { heavy_body(x, y, n); }
}

int main() {
    const int n = 1024;
    float *x, *y;
    CHECK(cudaMallocManaged(&x, n * sizeof(float)));
    CHECK(cudaMallocManaged(&y, n * sizeof(float)));
    for (int i = 0; i < n; i++) x[i] = 1.0f;
    const struct { const char *name; void (*kernel)(const float *, float *, int); } kernels[] = {
        { "heavy", heavy }, { "heavy_static", heavy_static }, { "heavy_anon", heavy_anon } };
    for (const auto &k : kernels) {
        for (int threads : { 1024, 256 }) {
            y[0] = 0.0f;
            k.kernel<<<1, threads>>>(x, y, n);
            cudaError_t e = cudaGetLastError();
            CHECK(cudaDeviceSynchronize());
            printf("%s %d threads: %s, y[0] = %g\n", k.name, threads, cudaGetErrorName(e), y[0]); // 192 when it ran
        }
        y[0] = 0.0f;
        if (k.kernel == heavy) heavy<<<1, 1024>>>(x, y, n);
        else if (k.kernel == heavy_static) heavy_static<<<1, 1024>>>(x, y, n);
        else heavy_anon<<<1, 1024>>>(x, y, n);
        cudaError_t e = cudaGetLastError();
        CHECK(cudaDeviceSynchronize());
        printf("%s by name 1024 threads: %s, y[0] = %g\n", k.name, cudaGetErrorName(e), y[0]);
        cudaFuncAttributes a;
        CHECK(cudaFuncGetAttributes(&a, k.kernel));
        printf("%s registers: %d\n", k.name, a.numRegs);
    }
    return 0;
}
