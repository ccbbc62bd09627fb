// Planted bug: a recursive device function far deeper than a thread's stack (the emulator's
// fiber stack, CUEMU_STACK_KB; on a GPU the launch fails): the message must say so.
#include <cuda_runtime.h>
#include <stdio.h>

__device__ int sum_to(int n) {
    volatile int frame[64]; // a frame of some size, so the recursion is not turned into a loop
    frame[0] = n;
    return n == 0 ? 0 : frame[0] + sum_to(n - 1);
}

__global__ void triangle(int *out, int n) { out[threadIdx.x] = sum_to(n); }

int main() {
    int *d;
    cudaMalloc(&d, 32 * sizeof(int));
    triangle<<<1, 32>>>(d, 1000000);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
