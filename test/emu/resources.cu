// Launches that a GPU refuses for a kernel's resources, with the report of ptxas that
// resources.ptxas stands in for (hand-written register and shared-memory counts; nvcc-emu
// --ptxas-info reads it). On sm_90 a block gets at most 65,536 registers, allocated per
// warp in units of 256, so with R registers per thread a block may have at most
// min(1024, floor(65536 / (ceil(32 R / 256) * 256)) * 32) threads:
//   64 -> 1024, 65 -> 896 (2,304 per warp: 28 warps), 72 -> 896, 128 -> 512, 255 -> 256.
// Static and dynamic shared memory share 48 KiB until cudaFuncSetAttribute raises it.
// cudaFuncGetAttributes and the occupancy API answer with the same counts. Built with
// -DNO_REPORT (no --ptxas-info) nothing is known: every launch runs, and the attributes are
// those of a light kernel (32 registers).
#include <cuda_runtime.h>
#include "common.h"

__global__ void k64(float *y) { y[threadIdx.x] = 1.0f; }
__global__ void k65(float *y) { y[threadIdx.x] = 2.0f; }
__global__ void k255(float *y) { y[threadIdx.x] = 3.0f; }
static __global__ void hidden(float *y) { y[threadIdx.x] = 6.0f; } // not exported: found in the symbol table
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
    // the attributes and the occupancy API say the same (a light kernel without the report)
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, k65));
    int block, grid, blocks_per_sm;
    CHECK(cudaOccupancyMaxPotentialBlockSize(&grid, &block, k65));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, k65, 256, 0));
#ifdef NO_REPORT
    const int want[5] = {32, 1024, 0, 1024, 8};
#else // 65 registers: 2,304 per warp, 28 warps of 65,536; 8 of them per block of 256 threads: 3 blocks
    const int want[5] = {65, 896, 0, 896, 3};
#endif
    const int got[5] = {a.numRegs, a.maxThreadsPerBlock, (int)a.sharedSizeBytes, block, blocks_per_sm};
    const char *what[5] = {"numRegs", "maxThreadsPerBlock", "sharedSizeBytes", "potential block size", "blocks per SM"};
    for (int i = 0; i < 5; i++)
        if (got[i] != want[i]) {
            printf("MISMATCH k65's %s: %d, want %d\n", what[i], got[i], want[i]);
            failures++;
        }
    k65<<<grid, block>>>(y);
    expect("65 registers, the potential block size", cudaSuccess);
    CHECK(cudaFuncGetAttributes(&a, hidden));
#ifdef NO_REPORT
    const int hidden_regs = 32;
#else // static: g++ names it _ZL6hiddenPf, ptxas _Z6hiddenPf
    const int hidden_regs = 200;
#endif
    if (a.numRegs != hidden_regs) {
        printf("MISMATCH hidden's numRegs: %d, want %d\n", a.numRegs, hidden_regs);
        failures++;
    }
    CHECK(cudaFuncGetAttributes(&a, tiles));
#ifndef NO_REPORT // 40 KiB of static shared memory; the opt-in above raised the dynamic part to 64 KiB
    if (a.sharedSizeBytes != 40960 || a.maxDynamicSharedSizeBytes != 65536) {
        printf("MISMATCH tiles' shared memory: %zu static, %d dynamic at most\n", a.sharedSizeBytes,
               a.maxDynamicSharedSizeBytes);
        failures++;
    }
#endif
    CHECK(cudaDeviceSynchronize());
    if (failures) return 1;
    printf("OK 16 launches ran or were refused as on a GPU; attributes and occupancy agree%s\n", "");
    return 0;
}
