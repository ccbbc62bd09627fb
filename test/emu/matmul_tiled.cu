// Tiled matrix multiply C = A*B with both tiles in dynamic (extern) shared memory, on
// sizes that are not multiples of the tile.
#include <cuda_runtime.h>
#include "common.h"

#define TILE 16

__global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K) {
    extern __shared__ float tiles[]; // As then Bs, TILE*TILE each
    float *As = tiles, *Bs = tiles + TILE * TILE;
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        int ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;
        As[threadIdx.y * TILE + threadIdx.x] = row < M && ka < K ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y * TILE + threadIdx.x] = kb < K && col < N ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y * TILE + k] * Bs[k * TILE + threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int M = 70, N = 45, K = 83;
    float *A = (float *)malloc(M * K * 4), *B = (float *)malloc(K * N * 4), *C = (float *)malloc(M * N * 4);
    for (int i = 0; i < M * K; i++) A[i] = rand_float();
    for (int i = 0; i < K * N; i++) B[i] = rand_float();
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, M * K * 4));
    CHECK(cudaMalloc(&dB, K * N * 4));
    CHECK(cudaMalloc(&dC, M * N * 4));
    CHECK(cudaMemcpy(dA, A, M * K * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, B, K * N * 4, cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul<<<grid, block, 2 * TILE * TILE * sizeof(float)>>>(dA, dB, dC, M, N, K);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(C, dC, M * N * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double ref = 0;
            for (int k = 0; k < K; k++) ref += (double)A[r * K + k] * B[k * N + c];
            bad += fabs(C[r * N + c] - ref) > 1e-4;
        }
    printf("%s %d wrong elements\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
