// Cooperative groups: a block reduction through 32- and 16-thread tiles, once with
// cg::reduce and once by hand with tile.shfl_down; checked against a CPU reference.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>
#include "common.h"
namespace cg = cooperative_groups;

__global__ void tile_sums(const int *in, int *out32, int *out16, int *manual, int *block_max, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<16> half = cg::tiled_partition<16>(block);
    int i = blockIdx.x * block.size() + block.thread_rank();
    int v = i < n ? in[i] : 0;
    int s32 = cg::reduce(warp, v, cg::plus<int>());
    int s16 = cg::reduce(half, v, cg::plus<int>());
    int m = v; // by hand: lane 0 of each warp tile ends with the sum
    for (int o = warp.size() / 2; o > 0; o /= 2) m += warp.shfl_down(m, o);
    __shared__ int warp_max[32];
    int wmax = cg::reduce(warp, v, cg::greater<int>());
    if (warp.thread_rank() == 0) warp_max[warp.meta_group_rank()] = wmax;
    block.sync();
    if (block.thread_rank() == 0) {
        int bm = warp_max[0];
        for (unsigned w = 1; w < warp.meta_group_size(); w++) bm = max(bm, warp_max[w]);
        block_max[blockIdx.x] = bm;
    }
    if (warp.thread_rank() == 0) { out32[i / 32] = s32; manual[i / 32] = m; }
    if (half.thread_rank() == 0) out16[i / 16] = s16;
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int B = 256, G = 8, n = B * G;
    int h[n], o32[n / 32], o16[n / 16], man[n / 32], bmax[G];
    for (int i = 0; i < n; i++) h[i] = (int)(rand_u32() % 1000) - 500;
    int *d_in, *d32, *d16, *dman, *dmax;
    CHECK(cudaMalloc(&d_in, sizeof h));
    CHECK(cudaMalloc(&d32, sizeof o32));
    CHECK(cudaMalloc(&d16, sizeof o16));
    CHECK(cudaMalloc(&dman, sizeof man));
    CHECK(cudaMalloc(&dmax, sizeof bmax));
    CHECK(cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice));
    tile_sums<<<G, B>>>(d_in, d32, d16, dman, dmax, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(o32, d32, sizeof o32, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(o16, d16, sizeof o16, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(man, dman, sizeof man, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(bmax, dmax, sizeof bmax, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int t = 0; t < n / 16; t++) {
        int s = 0;
        for (int k = 0; k < 16; k++) s += h[t * 16 + k];
        bad += o16[t] != s;
    }
    for (int t = 0; t < n / 32; t++) {
        int s = 0;
        for (int k = 0; k < 32; k++) s += h[t * 32 + k];
        bad += o32[t] != s || man[t] != s;
    }
    for (int g = 0; g < G; g++) {
        int m = h[g * B];
        for (int k = 1; k < B; k++) m = h[g * B + k] > m ? h[g * B + k] : m;
        bad += bmax[g] != m;
    }
    printf("%s %d wrong tile results\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
