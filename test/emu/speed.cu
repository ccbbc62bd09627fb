// Emulation speed: a 1M-element elementwise kernel (256-thread blocks, no barriers) and a
// 64K-element shared-memory reduction (barriers in every step); prints wall-clock times.
#include <chrono>
#include <cuda_runtime.h>
#include "common.h"

__global__ void axpb(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

__global__ void reduce(const float *in, float *out, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main() {
    const int n = 1 << 20, m = 1 << 16;
    float *x, *y, *part;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    CHECK(cudaMalloc(&part, (m / 256) * 4));
    CHECK(cudaMemset(x, 0, n * 4));
    auto t0 = std::chrono::steady_clock::now();
    axpb<<<n / 256, 256>>>(x, y, n);
    CHECK(cudaDeviceSynchronize());
    double elementwise = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    reduce<<<m / 256, 256>>>(x, part, m);
    CHECK(cudaDeviceSynchronize());
    double reduction = seconds_since(t0);
    float h[m / 256];
    CHECK(cudaMemcpy(h, part, sizeof h, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (float v : h) bad += v != 0.0f;
    printf("%s elementwise 1M: %.3f s, reduction 64K: %.3f s\n", bad ? "MISMATCH" : "OK", elementwise, reduction);
    return bad != 0;
}
