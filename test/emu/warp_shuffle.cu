// Warp-shuffle reductions (down and xor), a shuffle broadcast and a warp inclusive scan
// with __shfl_up_sync, against a CPU reference.
#include <cuda_runtime.h>
#include "common.h"

__device__ float warp_sum_down(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v; // lane 0 holds the sum
}
__device__ float warp_sum_xor(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v; // every lane holds the sum
}

// out[warp] = sum by down; check[warp] = 1 if every lane's xor sum and broadcast agree.
__global__ void warp_sums(const float *in, float *down, float *xsum, int *scan, int *agree, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32, warp = i / 32;
    float v = i < n ? in[i] : 0.0f;
    float d = warp_sum_down(v), x = warp_sum_xor(v);
    float b = __shfl_sync(0xffffffff, d, 0); // broadcast lane 0's sum
    int s = 1;                               // inclusive scan of ones: lane + 1
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(0xffffffff, s, o);
        if (lane >= o) s += t;
    }
    int ok = __all_sync(0xffffffff, x == b && s == lane + 1);
    if (lane == 0) { down[warp] = d; xsum[warp] = x; agree[warp] = ok; }
    scan[i] = s;
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int n = 1 << 14, warps = n / 32;
    float *h = (float *)malloc(n * sizeof(float)), hd[warps], hx[warps];
    int ha[warps], *hs = (int *)malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) h[i] = rand_float();
    float *d_in, *d_down, *d_x;
    int *d_scan, *d_agree;
    CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK(cudaMalloc(&d_down, warps * sizeof(float)));
    CHECK(cudaMalloc(&d_x, warps * sizeof(float)));
    CHECK(cudaMalloc(&d_scan, n * sizeof(int)));
    CHECK(cudaMalloc(&d_agree, warps * sizeof(int)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    warp_sums<<<n / 256, 256>>>(d_in, d_down, d_x, d_scan, d_agree, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hd, d_down, sizeof hd, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hx, d_x, sizeof hx, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ha, d_agree, sizeof ha, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hs, d_scan, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int w = 0; w < warps; w++) {
        double ref = 0;
        for (int l = 0; l < 32; l++) ref += h[w * 32 + l];
        if (fabs(hd[w] - ref) > 1e-4 || fabs(hx[w] - ref) > 1e-4 || !ha[w]) bad++;
    }
    for (int i = 0; i < n; i++) bad += hs[i] != i % 32 + 1;
    printf("%s %d bad warps\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
