// bench_gpu: kernel timings of the GPU backend, for test/bench_gpu.sh (which prints them
// next to PyTorch's). One line per number, "name value unit", so a script can read it.
//   test/bench_gpu [B T C NH V]      defaults 8 1024 768 12 8192
// - the fused loss: achieved bandwidth, counting 3 passes over the (B,T,Vp) logits (read in
//   phase 1, read and written in phase 3), against a device-to-device copy of the same
//   tensor (2 passes: read + write);
// - fused attention forward and backward at (B, T, C, NH);
// - the tf32 matmul: TFLOP/s of the forward (B*T, C) x (4C, C)^T, and of its two backward
//   products.
// Every call is synchronous; times are the median of 20 runs after 3 warm-ups.
#define CUSET_IMPLEMENTATION
#define CUSET_CUDA_INTERNALS
#include "../cuset.h"
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "bench_gpu: CUDA error at %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Median seconds of fn() over 20 runs (after 3 warm-ups); fn synchronizes.
template <typename F> static double timeit(F fn) {
    for (int i = 0; i < 3; i++) fn();
    double t[20];
    for (int i = 0; i < 20; i++) {
        double t0 = now();
        fn();
        CK(cudaDeviceSynchronize());
        t[i] = now() - t0;
    }
    std::sort(t, t + 20);
    return t[10];
}

static float *dev_random(size_t n, float scale, uint64_t *rng) {
    float *h = (float *)malloc(n * sizeof(float)), *d;
    for (size_t i = 0; i < n; i++) h[i] = scale * (2.0f * ((cuset_rng_next(rng) >> 40) / 16777216.0f) - 1.0f);
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

int main(int argc, char **argv) {
    int B = 8, T = 1024, C = 768, NH = 12, V = 8192;
    if (argc == 6) { B = atoi(argv[1]); T = atoi(argv[2]); C = atoi(argv[3]); NH = atoi(argv[4]); V = atoi(argv[5]); }
    else if (argc != 1) { fprintf(stderr, "usage: bench_gpu [B T C NH V]\n"); return 2; }
    char why[256];
    if (!cuset_cuda_available(why, sizeof why)) { fprintf(stderr, "bench_gpu: no usable GPU: %s\n", why); return 1; }
    printf("device %s\n", why);
    printf("shape B=%d T=%d C=%d NH=%d V=%d\n", B, T, C, NH, V);
    uint64_t rng = 1;
    int BT = B * T, Vp = cuset_pad_vocab(V);

    // the fused loss (SFT; every position a target) against a device-to-device copy
    {
        size_t n = (size_t)BT * Vp;
        float *logits = dev_random(n, 3.0f, &rng), *copy;
        CK(cudaMalloc(&copy, n * sizeof(float)));
        int *h_tgt = (int *)malloc(BT * sizeof(int)), *h_start = (int *)malloc(B * sizeof(int)), *h_len = (int *)malloc(B * sizeof(int));
        unsigned char *h_is = (unsigned char *)malloc(BT), *h_cuda = (unsigned char *)malloc(BT);
        for (int i = 0; i < BT; i++) { h_tgt[i] = (int)(cuset_rng_next(&rng) % V); h_is[i] = 1; h_cuda[i] = i % 3 == 0; }
        for (int b = 0; b < B; b++) { h_start[b] = 0; h_len[b] = T; }
        int *tgt, *start, *len;
        unsigned char *is, *cuda;
        CK(cudaMalloc(&tgt, BT * sizeof(int))); CK(cudaMalloc(&start, B * sizeof(int))); CK(cudaMalloc(&len, B * sizeof(int)));
        CK(cudaMalloc(&is, BT)); CK(cudaMalloc(&cuda, BT));
        CK(cudaMemcpy(tgt, h_tgt, BT * sizeof(int), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(start, h_start, B * sizeof(int), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(len, h_len, B * sizeof(int), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(is, h_is, BT, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(cuda, h_cuda, BT, cudaMemcpyHostToDevice));
        void *ws;
        CK(cudaMalloc(&ws, cuset_cuda_loss_workspace_bytes(B, T)));
        for (int kind = 0; kind < 2; kind++) {
            CusetObjective obj = cuset_objective_default(kind ? CUSET_OBJ_CUSET : CUSET_OBJ_SFT);
            double t = timeit([&] {
                // the loss overwrites the logits with their gradient; refresh them from copy
                // outside the timed region is not possible per call, so values drift: fine for timing
                CusetStats st = {0};
                int rc = cuset_cuda_loss(logits, NULL, tgt, is, cuda, start, len, B, T, V, Vp, &obj, 1.0f / BT, ws, &st, NULL);
                if (rc) { fprintf(stderr, "bench_gpu: cuset_cuda_loss failed: %d\n", rc); exit(1); }
            });
            printf("loss_%s_ms %.4f ms\n", kind ? "cuset" : "sft", 1e3 * t);
            printf("loss_%s_GBps %.1f GB/s\n", kind ? "cuset" : "sft", 3.0 * n * sizeof(float) / t / 1e9);
        }
        double tc = timeit([&] { CK(cudaMemcpy(copy, logits, n * sizeof(float), cudaMemcpyDeviceToDevice)); });
        printf("copy_GBps %.1f GB/s\n", 2.0 * n * sizeof(float) / tc / 1e9);
        CK(cudaFree(logits)); CK(cudaFree(copy)); CK(cudaFree(tgt)); CK(cudaFree(start)); CK(cudaFree(len));
        CK(cudaFree(is)); CK(cudaFree(cuda)); CK(cudaFree(ws));
        free(h_tgt); free(h_start); free(h_len); free(h_is); free(h_cuda);
    }

    // attention forward and backward
    {
        float *qkv = dev_random((size_t)BT * 3 * C, 1.0f, &rng), *dout = dev_random((size_t)BT * C, 1.0f, &rng);
        float *out, *lse, *dqkv, *delta;
        CK(cudaMalloc(&out, (size_t)BT * C * sizeof(float)));
        CK(cudaMalloc(&lse, (size_t)B * NH * T * sizeof(float)));
        CK(cudaMalloc(&delta, (size_t)B * NH * T * sizeof(float)));
        CK(cudaMalloc(&dqkv, (size_t)BT * 3 * C * sizeof(float)));
        double tf = timeit([&] { cuset__cuda_test_attention_forward(out, lse, qkv, B, T, C, NH); });
        double tb = timeit([&] { cuset__cuda_test_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, C, NH); });
        printf("attention_forward_ms %.4f ms\n", 1e3 * tf);
        printf("attention_backward_ms %.4f ms\n", 1e3 * tb);
        CK(cudaFree(qkv)); CK(cudaFree(dout)); CK(cudaFree(out)); CK(cudaFree(lse)); CK(cudaFree(delta)); CK(cudaFree(dqkv));
    }

    // the matmul: (BT, C) x (4C, C)^T, the MLP's first product, and its backward
    {
        int N = BT, IC = C, OC = 4 * C;
        float *inp = dev_random((size_t)N * IC, 1.0f, &rng), *w = dev_random((size_t)OC * IC, 1.0f, &rng);
        float *bias = dev_random(OC, 1.0f, &rng), *dout = dev_random((size_t)N * OC, 1.0f, &rng), *out, *dinp, *dw;
        CK(cudaMalloc(&out, (size_t)N * OC * sizeof(float)));
        CK(cudaMalloc(&dinp, (size_t)N * IC * sizeof(float)));
        CK(cudaMalloc(&dw, (size_t)OC * IC * sizeof(float)));
        double flop = 2.0 * N * IC * OC;
        double tf = timeit([&] { cuset__cuda_test_matmul_forward(out, nullptr, inp, w, bias, N, IC, OC); });
        // the two products only: no bias gradient, so the call allocates no scratch either
        double tb = timeit([&] { cuset__cuda_test_matmul_backward(dinp, dw, nullptr, dout, inp, w, nullptr, N, IC, OC); });
        printf("matmul_shape %dx%dx%d\n", N, IC, OC);
        printf("matmul_forward_TFLOPs %.2f TFLOP/s\n", flop / tf / 1e12);
        printf("matmul_backward_TFLOPs %.2f TFLOP/s\n", 2 * flop / tb / 1e12); // dinp and dweight
        CK(cudaFree(inp)); CK(cudaFree(w)); CK(cudaFree(bias)); CK(cudaFree(dout)); CK(cudaFree(out));
        CK(cudaFree(dinp)); CK(cudaFree(dw));
    }
    return 0;
}
