// Planted bug: a write one past a static __shared__ array (AddressSanitizer must say so, and
// without it the guard after the array).
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void shift(const float *in, float *out) {
    __shared__ float s[256];
    s[threadIdx.x + 1] = in[threadIdx.x]; // thread 255 writes s[256]
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}

int main() {
    float *in, *out;
    cudaMalloc(&in, 256 * sizeof(float));
    cudaMalloc(&out, 256 * sizeof(float));
    cudaMemset(in, 0, 256 * sizeof(float));
    shift<<<1, 256>>>(in, out);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
