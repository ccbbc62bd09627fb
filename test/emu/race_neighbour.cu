// Planted race: adjacent differences read the left neighbour's shared value without a
// __syncthreads. Threads started in order 0..n-1 happen to see written values; a
// reordered run (CUEMU_REORDER) does not.
#include <cuda_runtime.h>
#include "common.h"

#define BLOCK 128

__global__ void adjacent_difference(const int *in, int *out, int n) {
    __shared__ int s[BLOCK];
    int tid = threadIdx.x, i = blockIdx.x * BLOCK + tid;
    s[tid] = i < n ? in[i] : 0;
    // missing: __syncthreads();
    if (i < n) out[i] = tid > 0 ? s[tid] - s[tid - 1] : s[tid];
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int n = 4096;
    int h[n], got[n], *d_in, *d_out;
    for (int i = 0; i < n; i++) h[i] = (int)(rand_u32() % 1000);
    CHECK(cudaMalloc(&d_in, sizeof h));
    CHECK(cudaMalloc(&d_out, sizeof got));
    CHECK(cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice));
    adjacent_difference<<<n / BLOCK, BLOCK>>>(d_in, d_out, n);
    CHECK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) bad += got[i] != (i % BLOCK ? h[i] - h[i - 1] : h[i]);
    printf("%s %d wrong differences\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
