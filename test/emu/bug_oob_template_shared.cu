// Planted bug: a write one past a __shared__ tile of a template kernel (the common
// TILE-parameter form), which AddressSanitizer must report too, and without it the guard
// after the tile.
#include <cuda_runtime.h>
#include <stdio.h>

template <int TILE>
__global__ void shift_tile(const float *in, float *out) {
    __shared__ float tile[TILE][TILE];
    int r = threadIdx.y, c = threadIdx.x;
    tile[r][c + (r == TILE - 1)] = in[r * TILE + c]; // the last row writes one past the tile
    __syncthreads();
    out[r * TILE + c] = tile[c][r];
}

int main() {
    float *in, *out;
    cudaMalloc(&in, 16 * 16 * sizeof(float));
    cudaMalloc(&out, 16 * 16 * sizeof(float));
    cudaMemset(in, 0, 16 * 16 * sizeof(float));
    shift_tile<16><<<1, dim3(16, 16)>>>(in, out);
    cudaDeviceSynchronize();
    printf("finished without a report\n");
    return 0;
}
