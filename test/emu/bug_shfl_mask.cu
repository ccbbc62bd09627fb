// Planted bug: all 32 lanes shuffle with the mask 0xffff, which leaves out lanes 16-31.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void warp_sum(const int *in, int *out) {
    int v = in[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffff, v, o);
    if (threadIdx.x == 0) *out = v;
}

int main() {
    int *in, *out;
    cudaMalloc(&in, 32 * sizeof(int));
    cudaMalloc(&out, sizeof(int));
    cudaMemset(in, 0, 32 * sizeof(int));
    warp_sum<<<1, 32>>>(in, out);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
