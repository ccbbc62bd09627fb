// WMMA: C = A*B with one warp per 16x16 output tile, in half (16x16x16, float
// accumulator) and in tf32 (16x16x8), against a CPU reference with tolerances that
// allow for the rounded inputs.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include "common.h"
using namespace nvcuda;

// A (M,K) row-major half, B (K,N) col-major half, C (M,N) row-major float.
__global__ void gemm_half(const half *A, const half *B, float *C, int M, int N, int K) {
    int tile_m = blockIdx.y, tile_n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (tile_n * 16 >= N) return; // the whole warp leaves together
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + tile_m * 16 * K + k, K);
        wmma::load_matrix_sync(b, B + tile_n * 16 * K + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    for (int e = 0; e < acc.num_elements; e++) acc.x[e] *= 2.0f; // elementwise over x[]: C = 2AB
    wmma::store_matrix_sync(C + tile_m * 16 * N + tile_n * 16, acc, N, wmma::mem_row_major);
}

// All row-major float; inputs converted to tf32 as programs do.
__global__ void gemm_tf32(const float *A, const float *B, float *C, int M, int N, int K) {
    int tile_m = blockIdx.y, tile_n = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 8) {
        wmma::load_matrix_sync(a, A + tile_m * 16 * K + k, K);
        wmma::load_matrix_sync(b, B + k * N + tile_n * 16, N);
        for (int e = 0; e < a.num_elements; e++) a.x[e] = wmma::__float_to_tf32(a.x[e]);
        for (int e = 0; e < b.num_elements; e++) b.x[e] = wmma::__float_to_tf32(b.x[e]);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + tile_m * 16 * N + tile_n * 16, acc, N, wmma::mem_row_major);
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int M = 48, N = 64, K = 64;
    float *A = (float *)malloc(M * K * 4), *B = (float *)malloc(K * N * 4);
    float *C = (float *)malloc(M * N * 4);
    half *Ah = (half *)malloc(M * K * 2), *Bh = (half *)malloc(K * N * 2);
    for (int i = 0; i < M * K; i++) { A[i] = rand_float(); Ah[i] = __float2half(A[i]); }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            B[k * N + j] = rand_float();
            Bh[j * K + k] = __float2half(B[k * N + j]); // column-major copy
        }
    half *dAh, *dBh;
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dAh, M * K * 2));
    CHECK(cudaMalloc(&dBh, K * N * 2));
    CHECK(cudaMalloc(&dA, M * K * 4));
    CHECK(cudaMalloc(&dB, K * N * 4));
    CHECK(cudaMalloc(&dC, M * N * 4));
    CHECK(cudaMemcpy(dAh, Ah, M * K * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dBh, Bh, K * N * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dA, A, M * K * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, B, K * N * 4, cudaMemcpyHostToDevice));
    int bad_half = 0, bad_tf32 = 0;
    // Half: 3 warps per block along N (the last block has a warp with no tile).
    gemm_half<<<dim3((N / 16 + 2) / 3, M / 16), 96>>>(dAh, dBh, dC, M, N, K);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(C, dC, M * N * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double ref = 0, exact = 0;
            for (int k = 0; k < K; k++) {
                ref += (double)__half2float(Ah[r * K + k]) * __half2float(Bh[c * K + k]);
                exact += (double)A[r * K + k] * B[k * N + c];
            }
            bad_half += fabs(C[r * N + c] - 2 * ref) > 1e-3 || fabs(C[r * N + c] - 2 * exact) > 0.1;
        }
    gemm_tf32<<<dim3(N / 16, M / 16), 32>>>(dA, dB, dC, M, N, K);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(C, dC, M * N * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double exact = 0, bound = 0;
            for (int k = 0; k < K; k++) {
                exact += (double)A[r * K + k] * B[k * N + c];
                bound += fabs(A[r * K + k] * B[k * N + c]);
            }
            // tf32 keeps 10 mantissa bits: relative error per product about 2^-10
            bad_tf32 += fabs(C[r * N + c] - exact) > bound * 2.0 / 1024 + 1e-5;
        }
    printf("%s half: %d wrong, tf32: %d wrong\n", bad_half || bad_tf32 ? "MISMATCH" : "OK", bad_half, bad_tf32);
    return bad_half || bad_tf32;
}
