// Warp votes (__ballot_sync, __any_sync, __all_sync, __popc), __match_any_sync,
// __reduce_add_sync and block votes (__syncthreads_count/and/or) against a CPU reference.
#include <cuda_runtime.h>
#include "common.h"

// Per warp: ballot, any, all, popc, a match mask, reduce; per block: count/and/or.
__global__ void votes(const int *in, unsigned *ballot, int *any, int *all, int *popc, unsigned *match,
                      int *wsum, int *bcount, int *band, int *bor) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32, w = i / 32;
    int p = in[i] > 0;
    unsigned b = __ballot_sync(0xffffffff, p);
    int a = __any_sync(0xffffffff, p), l = __all_sync(0xffffffff, p);
    unsigned m = __match_any_sync(0xffffffff, in[i] % 4);
    int s = __reduce_add_sync(0xffffffff, in[i]);
    int c = __syncthreads_count(p), ba = __syncthreads_and(p), bo = __syncthreads_or(p);
    if (lane == 0) { ballot[w] = b; any[w] = a; all[w] = l; popc[w] = __popc(b); wsum[w] = s; }
    match[i] = m;
    if (threadIdx.x == 0) { bcount[blockIdx.x] = c; band[blockIdx.x] = ba; bor[blockIdx.x] = bo; }
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int B = 128, G = 16, n = B * G, W = n / 32;
    int h[n];
    for (int i = 0; i < n; i++) {
        int kind = (i / 32) % 4; // warps all positive, all non-positive, or mixed
        h[i] = kind == 0 ? 1 + (int)(rand_u32() % 9) : kind == 1 ? -(int)(rand_u32() % 9) : (int)(rand_u32() % 9) - 4;
    }
    int *d_in, *d_any, *d_all, *d_popc, *d_wsum, *d_bc, *d_ba, *d_bo;
    unsigned *d_ballot, *d_match;
    CHECK(cudaMalloc(&d_in, n * 4));
    CHECK(cudaMalloc(&d_ballot, W * 4));
    CHECK(cudaMalloc(&d_any, W * 4));
    CHECK(cudaMalloc(&d_all, W * 4));
    CHECK(cudaMalloc(&d_popc, W * 4));
    CHECK(cudaMalloc(&d_wsum, W * 4));
    CHECK(cudaMalloc(&d_match, n * 4));
    CHECK(cudaMalloc(&d_bc, G * 4));
    CHECK(cudaMalloc(&d_ba, G * 4));
    CHECK(cudaMalloc(&d_bo, G * 4));
    CHECK(cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice));
    votes<<<G, B>>>(d_in, d_ballot, d_any, d_all, d_popc, d_match, d_wsum, d_bc, d_ba, d_bo);
    CHECK(cudaGetLastError());
    unsigned ballot[W], match[n];
    int any[W], all[W], popc[W], wsum[W], bc[G], ba[G], bo[G];
    CHECK(cudaMemcpy(ballot, d_ballot, sizeof ballot, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(any, d_any, sizeof any, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(all, d_all, sizeof all, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(popc, d_popc, sizeof popc, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(wsum, d_wsum, sizeof wsum, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(match, d_match, sizeof match, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(bc, d_bc, sizeof bc, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ba, d_ba, sizeof ba, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(bo, d_bo, sizeof bo, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int w = 0; w < W; w++) {
        unsigned rb = 0;
        int rs = 0;
        for (int l = 0; l < 32; l++) { rb |= (unsigned)(h[w * 32 + l] > 0) << l; rs += h[w * 32 + l]; }
        bad += ballot[w] != rb || any[w] != (rb != 0) || all[w] != (rb == 0xffffffffu) ||
               popc[w] != __builtin_popcount(rb) || wsum[w] != rs;
        for (int l = 0; l < 32; l++) {
            unsigned rm = 0;
            for (int k = 0; k < 32; k++) rm |= (unsigned)(h[w * 32 + k] % 4 == h[w * 32 + l] % 4) << k;
            bad += match[w * 32 + l] != rm;
        }
    }
    for (int g = 0; g < G; g++) {
        int c = 0;
        for (int t = 0; t < B; t++) c += h[g * B + t] > 0;
        bad += bc[g] != c || ba[g] != (c == B) || bo[g] != (c > 0);
    }
    printf("%s %d wrong votes\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
