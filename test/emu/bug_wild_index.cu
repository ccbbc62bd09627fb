// Planted bug: a row index used as an element index, far past the buffer (a plain build
// dies of SIGSEGV; the emulator must first name the kernel, block and thread).
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void scale_rows(float *x, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) x[(size_t)r * cols * 1000000] *= 2.0f; // should be x[r * cols + c] in a loop over c
}

int main() {
    const int rows = 512, cols = 256;
    float *d;
    cudaMalloc(&d, rows * cols * sizeof(float));
    scale_rows<<<(rows + 127) / 128, 128>>>(d, rows, cols);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
