// Per-block inclusive scan in shared memory (Hillis-Steele, double buffered), then a CPU
// pass adds block offsets; checked against a CPU prefix sum.
#include <cuda_runtime.h>
#include "common.h"

#define BLOCK 512

__global__ void block_scan(const int *in, int *out, int *block_sums, int n) {
    __shared__ int buf[2][BLOCK];
    int tid = threadIdx.x, i = blockIdx.x * BLOCK + tid, cur = 0;
    buf[0][tid] = i < n ? in[i] : 0;
    __syncthreads();
    for (int o = 1; o < BLOCK; o <<= 1) {
        int v = buf[cur][tid];
        if (tid >= o) v += buf[cur][tid - o];
        buf[1 - cur][tid] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    if (i < n) out[i] = buf[cur][tid];
    if (tid == BLOCK - 1) block_sums[blockIdx.x] = buf[cur][tid];
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int n = 100000, blocks = (n + BLOCK - 1) / BLOCK;
    int *h = (int *)malloc(n * sizeof(int)), *got = (int *)malloc(n * sizeof(int)), sums[blocks];
    for (int i = 0; i < n; i++) h[i] = (int)(rand_u32() % 100);
    int *d_in, *d_out, *d_sums;
    CHECK(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK(cudaMalloc(&d_out, n * sizeof(int)));
    CHECK(cudaMalloc(&d_sums, blocks * sizeof(int)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    block_scan<<<blocks, BLOCK>>>(d_in, d_out, d_sums, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
    long long ref = 0, offset = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && i % BLOCK == 0) offset += sums[i / BLOCK - 1];
        ref += h[i];
        bad += got[i] + offset != ref;
    }
    printf("%s %d wrong prefix sums\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
