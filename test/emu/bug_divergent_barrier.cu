// Planted bug: __syncthreads inside a branch that only half of the block takes.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void diverge(int *out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    if (threadIdx.x < 16) __syncthreads();
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}

int main() {
    int *out;
    cudaMalloc(&out, 64 * sizeof(int));
    diverge<<<1, 64>>>(out);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
