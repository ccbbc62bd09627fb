// __launch_bounds__: a launch with more threads per block than the kernel's bound is
// refused (cudaErrorInvalidValue, as an H200 with CUDA 13.0 answered; the kernel does not
// run); up to the bound it runs.
// The bound as a macro, as a template parameter (with a second argument), written before
// `void` in a namespace, spread over lines, and on a declaration only (its definition has
// none; also a template's, whose definition names its parameter differently: nvcc -ptx
// gives .maxntid for it). cudaFuncGetAttributes gives the bound as maxThreadsPerBlock (an
// unbounded overload of a bounded kernel, with another parameter count or the same, has
// none; a static kernel and one in an anonymous namespace, which have no dynamic symbol,
// have theirs), and the block size cudaOccupancyMaxPotentialBlockSize picks launches.
// Prints OK when every answer is what a GPU gives; test_emu.sh also counts the runtime's
// notes: one per refused launch.
#include <cuda_runtime.h>
#include "common.h"

#define BOUND 128

__global__ void __launch_bounds__(BOUND) flat(int *y) { y[blockIdx.x * blockDim.x + threadIdx.x] = 1; }

template <int B>
__global__ void __launch_bounds__(B, 2) tiled(int *y) {
    y[blockIdx.x * B + threadIdx.y * blockDim.x + threadIdx.x] = 2;
}

namespace ns {
__global__ __launch_bounds__(256) void inner(int *y) { y[threadIdx.x] = 3; }
}

__global__ void
__launch_bounds__(
    2 * 32)
spread(int *y) {
    y[threadIdx.x] = 4;
}

__global__ void unbounded(int *y) { y[threadIdx.x] = 5; }

__global__ void __launch_bounds__(32) declared(int *y);
__global__ void declared(int *y) { y[threadIdx.x] = 6; }
__global__ void declared(int *y, int v) { y[threadIdx.x] = v; }

template <int N> __global__ void __launch_bounds__(N) late(int *y);
template <int M> __global__ void late(int *y) { y[threadIdx.x] = M; }

static __global__ void __launch_bounds__(48) lone(int *y) { y[threadIdx.x] = 10; }
namespace {
__global__ void __launch_bounds__(80) hidden(int *y) { y[threadIdx.x] = 11; }
}

__global__ void __launch_bounds__(64) twin(int *y) { y[threadIdx.x] = 8; }
__global__ void twin(float *y) { y[threadIdx.x] = 9.0f; }

static int *y, bad;
static const int n = 4096;

// Runs one launch (through `launch`) on a zeroed y: the error it gave and the number of
// elements it wrote must be the expected ones.
template <class L> static void check(const char *what, L launch, cudaError_t want_error, int want_written) {
    for (int i = 0; i < n; i++) y[i] = 0;
    launch();
    cudaError_t e = cudaGetLastError();
    CHECK(cudaDeviceSynchronize());
    int written = 0;
    for (int i = 0; i < n; i++) written += y[i] != 0;
    if (e != want_error || written != want_written) {
        printf("MISMATCH %s: %s with %d elements written, want %s with %d\n", what, cudaGetErrorName(e), written,
               cudaGetErrorName(want_error), want_written);
        bad = 1;
    }
}

int main() {
    CHECK(cudaMallocManaged(&y, n * sizeof(int)));
    const cudaError_t ok = cudaSuccess, refused = cudaErrorInvalidValue;
    check("flat 3 x 128", [] { flat<<<3, 128>>>(y); }, ok, 384);
    check("flat 3 x 129", [] { flat<<<3, 129>>>(y); }, refused, 0);
    check("tiled<64> 2 x 64", [] { tiled<64><<<2, dim3(8, 8)>>>(y); }, ok, 128);
    check("tiled<64> 1 x 128", [] { tiled<64><<<1, dim3(8, 16)>>>(y); }, refused, 0);
    check("tiled<256> 1 x 128", [] { tiled<256><<<1, dim3(8, 16)>>>(y); }, ok, 128);
    check("ns::inner 256", [] { ns::inner<<<1, 256>>>(y); }, ok, 256);
    check("ns::inner 512", [] { ns::inner<<<1, 512>>>(y); }, refused, 0);
    check("spread 64", [] { spread<<<1, 64>>>(y); }, ok, 64);
    check("spread 65", [] { spread<<<1, 65>>>(y); }, refused, 0);
    check("declared 32", [] { declared<<<1, 32>>>(y); }, ok, 32);
    check("declared 33", [] { declared<<<1, 33>>>(y); }, refused, 0);
    check("declared(y, 7) 64, another overload", [] { declared<<<1, 64>>>(y, 7); }, ok, 64);
    check("late<64> 64", [] { late<64><<<1, 64>>>(y); }, ok, 64);
    check("late<64> 65, the bound of its declaration", [] { late<64><<<1, 65>>>(y); }, refused, 0);
    check("twin(int *) 65", [] { twin<<<1, 65>>>(y); }, refused, 0);
    check("twin(float *) 128, the unbounded overload", [] { twin<<<1, 128>>>((float *)y); }, ok, 128);
    cudaFuncAttributes a[12];
    CHECK(cudaFuncGetAttributes(&a[0], flat));
    CHECK(cudaFuncGetAttributes(&a[1], tiled<64>));
    CHECK(cudaFuncGetAttributes(&a[2], ns::inner));
    CHECK(cudaFuncGetAttributes(&a[3], spread));
    CHECK(cudaFuncGetAttributes(&a[4], unbounded));
    CHECK(cudaFuncGetAttributes(&a[5], (void (*)(int *))declared));
    CHECK(cudaFuncGetAttributes(&a[6], (void (*)(int *, int))declared));
    CHECK(cudaFuncGetAttributes(&a[7], (void (*)(int *))twin));
    CHECK(cudaFuncGetAttributes(&a[8], (void (*)(float *))twin));
    CHECK(cudaFuncGetAttributes(&a[9], late<96>));
    CHECK(cudaFuncGetAttributes(&a[10], lone));
    CHECK(cudaFuncGetAttributes(&a[11], hidden));
    const int want[12] = { 128, 64, 256, 64, 1024, 32, 1024, 64, 1024, 96, 48, 80 };
    for (int k = 0; k < 12; k++)
        if (a[k].maxThreadsPerBlock != want[k]) {
            printf("MISMATCH kernel %d: maxThreadsPerBlock %d, want %d\n", k, a[k].maxThreadsPerBlock, want[k]);
            bad = 1;
        }
    int min_grid, block;
    CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, tiled<64>));
    check("tiled<64> with the occupancy API's block", [&] { tiled<64><<<1, block>>>(y); }, ok, 64);
    if (!bad) printf("OK\n");
    return bad;
}
