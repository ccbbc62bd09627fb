// Planted bug: a write past the launch's dynamic shared memory (AddressSanitizer must say
// so, and without it the guard after the buffer).
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void shift(const float *in, float *out) {
    extern __shared__ float s[];
    s[threadIdx.x + 1] = in[threadIdx.x]; // the launch gives blockDim.x floats
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}

int main() {
    float *in, *out;
    cudaMalloc(&in, 128 * sizeof(float));
    cudaMalloc(&out, 128 * sizeof(float));
    cudaMemset(in, 0, 128 * sizeof(float));
    shift<<<1, 128, 128 * sizeof(float)>>>(in, out);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
