// Kernel arguments written as the literal 0 or NULL, as CUDA code passes an absent optional
// pointer or a zero count: each becomes the parameter's zero (a null pointer, 0, 0.0f), in
// plain and template kernels, and a dim3 made from it (0, 1, 1); checked against a CPU
// reference.
#include <cuda_runtime.h>
#include "common.h"

// y[i] = (bias ? bias[i] : 1) * scale + offset for i < n.
__global__ void affine(const float *bias, float *y, int n, float scale, long offset) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (bias ? bias[i] : 1.0f) * scale + offset;
}
// y[i] = bias ? bias[i] : 2 for i < n, for T = float and T = int.
template <typename T> __global__ void fill(const T *bias, T *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = bias ? bias[i] : T(2);
}
// out = (d.x, d.y, d.z).
__global__ void dims(dim3 d, unsigned *out) {
    out[0] = d.x, out[1] = d.y, out[2] = d.z;
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int n = 100;
    float scale = rand_float(), b[n], got[n], *db, *dy;
    for (int i = 0; i < n; i++) b[i] = rand_float();
    CHECK(cudaMalloc(&db, sizeof b));
    CHECK(cudaMalloc(&dy, sizeof got));
    CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
    int bad = 0;
    affine<<<1, 128>>>(0, dy, n, scale, 0);
    CHECK(cudaMemcpy(got, dy, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) bad += got[i] != scale;
    affine<<<1, 128>>>(NULL, dy, n, 0, 3);
    CHECK(cudaMemcpy(got, dy, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) bad += got[i] != 3.0f;
    affine<<<1, 128>>>(db, dy, n, scale, 0L);
    CHECK(cudaMemcpy(got, dy, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) bad += got[i] != b[i] * scale;
    affine<<<1, 128>>>(db, NULL, 0, 0, 0); // n = 0: no thread writes
    fill<float><<<1, 128>>>(0, dy, n);
    CHECK(cudaMemcpy(got, dy, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) bad += got[i] != 2.0f;
    int *di, goti[n];
    CHECK(cudaMalloc(&di, sizeof goti));
    fill<int><<<1, 128>>>(NULL, di, n);
    CHECK(cudaMemcpy(goti, di, sizeof goti, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) bad += goti[i] != 2;
    unsigned *dd, d[3];
    CHECK(cudaMalloc(&dd, sizeof d));
    dims<<<1, 1>>>(0, dd);
    CHECK(cudaMemcpy(d, dd, sizeof d, cudaMemcpyDeviceToHost));
    bad += d[0] != 0 || d[1] != 1 || d[2] != 1;
    CHECK(cudaGetLastError());
    printf("%s %d wrong values\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
