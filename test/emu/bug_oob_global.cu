// Planted bug: an off-by-one write past a cudaMalloc'd buffer (AddressSanitizer must say so).
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void fill(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0f; // should be i < n
}

int main() {
    const int n = 1000;
    float *d;
    cudaMalloc(&d, n * sizeof(float));
    fill<<<(n + 255) / 256, 256>>>(d, n);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
