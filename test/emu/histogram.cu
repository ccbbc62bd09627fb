// Histogram with shared-memory atomics merged by global atomics, plus atomicMax/Min/CAS/
// Inc/Exch, against a CPU reference.
#include <cuda_runtime.h>
#include "common.h"

#define BINS 64

__global__ void histogram(const unsigned *in, int n, unsigned *hist, int *maxv, int *minv, unsigned *wrap, float *fsum) {
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(&local[in[i] % BINS], 1u);
        atomicMax(maxv, (int)in[i]);
        atomicMin(minv, (int)in[i]);
        atomicInc(wrap, 9u); // counts modulo 10
        atomicAdd(fsum, 0.5f);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&hist[b], local[b]);
}

// Float atomic max by compare-and-swap, the classic loop.
__global__ void cas_max(const float *in, int n, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int *addr = (int *)out, old = *addr, assumed;
    do {
        assumed = old;
        old = atomicCAS(addr, assumed, __float_as_int(fmaxf(in[i], __int_as_float(assumed))));
    } while (assumed != old);
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int n = 50000;
    unsigned *h = (unsigned *)malloc(n * 4), ref[BINS] = {0}, got[BINS], wrap;
    float *hf = (float *)malloc(n * 4), fmax_ref = -1e30f, fmax_got, fsum;
    int maxv, minv, max_ref = 0, min_ref = 1 << 30;
    for (int i = 0; i < n; i++) {
        h[i] = rand_u32() % 100000;
        hf[i] = rand_float();
        ref[h[i] % BINS]++;
        max_ref = h[i] > (unsigned)max_ref ? h[i] : max_ref;
        min_ref = h[i] < (unsigned)min_ref ? h[i] : min_ref;
        fmax_ref = fmaxf(fmax_ref, hf[i]);
    }
    unsigned *d_in, *d_hist, *d_wrap;
    int *d_max, *d_min;
    float *d_f, *d_fmax, *d_fsum;
    CHECK(cudaMalloc(&d_in, n * 4));
    CHECK(cudaMalloc(&d_hist, sizeof got));
    CHECK(cudaMalloc(&d_wrap, 4));
    CHECK(cudaMalloc(&d_max, 4));
    CHECK(cudaMalloc(&d_min, 4));
    CHECK(cudaMalloc(&d_f, n * 4));
    CHECK(cudaMalloc(&d_fmax, 4));
    CHECK(cudaMalloc(&d_fsum, 4));
    CHECK(cudaMemcpy(d_in, h, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_f, hf, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_hist, 0, sizeof got));
    CHECK(cudaMemset(d_wrap, 0, 4));
    CHECK(cudaMemset(d_max, 0, 4));
    CHECK(cudaMemset(d_fsum, 0, 4));
    int big = 1 << 30;
    float lowest = -1e30f;
    CHECK(cudaMemcpy(d_min, &big, 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_fmax, &lowest, 4, cudaMemcpyHostToDevice));
    histogram<<<32, 128>>>(d_in, n, d_hist, d_max, d_min, d_wrap, d_fsum);
    cas_max<<<(n + 255) / 256, 256>>>(d_f, n, d_fmax);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d_hist, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&maxv, d_max, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&minv, d_min, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&wrap, d_wrap, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&fmax_got, d_fmax, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&fsum, d_fsum, 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < BINS; b++) bad += got[b] != ref[b];
    bad += maxv != max_ref;
    bad += minv != min_ref;
    bad += wrap != n % 10;
    bad += fmax_got != fmax_ref;
    bad += fsum != n * 0.5f;
    printf("%s %d wrong results\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
