// Planted bug: an integer division by a bucket width that is 0 for small inputs (on a GPU
// the quotient is unspecified; on a CPU it traps, and the emulator must say where).
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void bucketize(const int *x, int *bucket, int n, int buckets, int range) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bucket[i] = x[i] / (range / buckets); // range < buckets: a width of 0
}

int main() {
    const int n = 256;
    int *x, *bucket;
    cudaMalloc(&x, n * sizeof(int));
    cudaMalloc(&bucket, n * sizeof(int));
    cudaMemset(x, 0, n * sizeof(int));
    bucketize<<<1, n>>>(x, bucket, n, 16, 10);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
