// Planted bug: lanes return early, then the rest shuffle with a full mask that names them.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void partial_sum(const int *in, int *out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    int v = in[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (i == 0) *out = v;
}

int main() {
    int *in, *out;
    cudaMalloc(&in, 32 * sizeof(int));
    cudaMalloc(&out, sizeof(int));
    cudaMemset(in, 0, 32 * sizeof(int));
    partial_sum<<<1, 32>>>(in, out, 20);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
