// Shared-memory tree reduction; with -DMISSING_SYNC the barrier inside the loop is missing
// (a planted race that reordering must expose).
#include <cuda_runtime.h>
#include "common.h"

#define BLOCK 256

__global__ void reduce(const int *in, int *out, int n) {
    __shared__ int s[BLOCK];
    int tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? in[i] : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
#ifndef MISSING_SYNC
        __syncthreads();
#endif
    }
    if (tid == 0) atomicAdd(out, s[0]);
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    int n = argc > 2 ? atoi(argv[2]) : 100000;
    int *h = (int *)malloc(n * sizeof(int));
    long long ref = 0;
    for (int i = 0; i < n; i++) { h[i] = (int)(rand_u32() % 1000); ref += h[i]; }
    int *d_in, *d_out, got;
    CHECK(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK(cudaMalloc(&d_out, sizeof(int)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_out, 0, sizeof(int)));
    reduce<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_in, d_out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&got, d_out, sizeof(int), cudaMemcpyDeviceToHost));
    printf("%s sum %d reference %lld\n", got == ref ? "OK" : "MISMATCH", got, ref);
    cudaFree(d_in);
    cudaFree(d_out);
    free(h);
    return got == ref ? 0 : 1;
}
