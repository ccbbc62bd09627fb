// Launches that a GPU refuses for a kernel's resources, with the report of ptxas that
// resources.ptxas stands in for (hand-written register and shared-memory counts; nvcc-emu
// --ptxas-info reads it). On sm_90 a block gets at most 65,536 registers, allocated per
// warp in units of 256, so with R registers per thread a block may have at most
// min(1024, floor(65536 / (ceil(32 R / 256) * 256)) * 32) threads:
//   64 -> 1024, 65 -> 896 (2,304 per warp: 28 warps), 72 -> 896, 128 -> 512, 255 -> 256.
// Static and dynamic shared memory share 48 KiB until cudaFuncSetAttribute raises it.
// Built with -DNO_REPORT (no --ptxas-info) nothing is known and every launch runs.
#include <cuda_runtime.h>
#include "common.h"

__global__ void k64(float *y) { y[threadIdx.x] = 1.0f; }
__global__ void k65(float *y) { y[threadIdx.x] = 2.0f; }
__global__ void k255(float *y) { y[threadIdx.x] = 3.0f; }
template <int B> __global__ void tk(float *y) { y[threadIdx.x] = B; }
namespace ns {
__global__ void inner(float *y) { y[threadIdx.x] = 4.0f; }
}
__global__ void tiles(float *y) {
    __shared__ float t[10240]; // 40,960 bytes: the report says so too
    t[threadIdx.x] = 5.0f;
    __syncthreads();
    y[threadIdx.x] = t[threadIdx.x];
}
#define BIG 256

static int failures = 0;
// The launch just made ran (want cudaSuccess) or was refused with the error want.
static void expect(const char *what, cudaError_t want) {
    cudaError_t got = cudaGetLastError();
#ifdef NO_REPORT
    want = cudaSuccess;
#endif
    if (got != want) {
        printf("MISMATCH %s: %s, want %s\n", what, cudaGetErrorName(got), cudaGetErrorName(want));
        failures++;
    }
}

int main() {
    float *y;
    CHECK(cudaMalloc(&y, 1024 * sizeof(float)));
    k64<<<1, 1024>>>(y);
    expect("64 registers, 1024 threads", cudaSuccess);
    k65<<<1, 1024>>>(y);
    expect("65 registers, 1024 threads", cudaErrorLaunchOutOfResources);
    k65<<<1, 896>>>(y);
    expect("65 registers, 896 threads", cudaSuccess);
    k65<<<2, dim3(32, 29)>>>(y);
    expect("65 registers, 32 x 29 threads", cudaErrorLaunchOutOfResources);
    k255<<<1, 256>>>(y);
    expect("255 registers, 256 threads", cudaSuccess);
    k255<<<1, 257>>>(y);
    expect("255 registers, 257 threads", cudaErrorLaunchOutOfResources);
    tk<256><<<1, 1024>>>(y); // tk<256>: 128 registers
    expect("tk<256> (128 registers), 1024 threads", cudaErrorLaunchOutOfResources);
    tk<256><<<1, 512>>>(y);
    expect("tk<256> (128 registers), 512 threads", cudaSuccess);
    tk<128><<<1, 1024>>>(y); // tk<128>: 40 registers
    expect("tk<128> (40 registers), 1024 threads", cudaSuccess);
    // tk<BIG> is tk<256>, but the launch's text does not say so: of the kernels named tk
    // the least demanding counts (never refuse what a GPU may run)
    tk<BIG><<<1, 1024>>>(y);
    expect("tk<BIG>, 1024 threads", cudaSuccess);
    ns::inner<<<1, 1024>>>(y); // 72 registers
    expect("ns::inner (72 registers), 1024 threads", cudaErrorLaunchOutOfResources);
    ns::inner<<<1, 896>>>(y);
    expect("ns::inner (72 registers), 896 threads", cudaSuccess);
    tiles<<<1, 256, 7 * 1024>>>(y); // 40 KiB static + 7 KiB dynamic
    expect("40 KiB static + 7 KiB dynamic shared memory", cudaSuccess);
    tiles<<<1, 256, 9 * 1024>>>(y); // 49 KiB in all
    expect("40 KiB static + 9 KiB dynamic shared memory", cudaErrorInvalidValue);
    CHECK(cudaFuncSetAttribute(tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
    tiles<<<1, 256, 9 * 1024>>>(y);
    expect("40 KiB static + 9 KiB dynamic shared memory after the opt-in", cudaSuccess);
    CHECK(cudaDeviceSynchronize());
    if (failures) return 1;
    printf("OK 16 launches ran or were refused as on a GPU%s\n", "");
    return 0;
}
