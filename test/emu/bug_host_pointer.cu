// Planted bug: a host array passed to a kernel (a GPU faults with an illegal address).
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

int main() {
    float host[64] = {0};
    scale<<<1, 64>>>(host, 64); // should be a cudaMalloc'd copy
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
