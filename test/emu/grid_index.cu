// A grid-stride loop (saxpy on more elements than threads) and a 3-D grid of 3-D blocks
// where each thread writes its global coordinates; checked against a CPU reference.
#include <cuda_runtime.h>
#include "common.h"

__global__ void saxpy(int n, float a, const float *x, float *y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}

// out[(z*NY + y)*NX + x] = x + 1000*y + 1000000*z over a (NX,NY,NZ) volume.
__global__ void coords(int *out, int NX, int NY, int NZ) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
        z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < NX && y < NY && z < NZ) out[(z * NY + y) * NX + x] = x + 1000 * y + 1000000 * z;
}

int main(int argc, char **argv) {
    seed_inputs(argc, argv);
    const int n = 100003, NX = 37, NY = 21, NZ = 11;
    float a = rand_float(), *x = (float *)malloc(n * 4), *y = (float *)malloc(n * 4), *got = (float *)malloc(n * 4);
    for (int i = 0; i < n; i++) { x[i] = rand_float(); y[i] = rand_float(); }
    float *dx, *dy;
    int *dv, *v = (int *)malloc(NX * NY * NZ * 4);
    CHECK(cudaMalloc(&dx, n * 4));
    CHECK(cudaMalloc(&dy, n * 4));
    CHECK(cudaMalloc(&dv, NX * NY * NZ * 4));
    CHECK(cudaMemcpy(dx, x, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y, n * 4, cudaMemcpyHostToDevice));
    saxpy<<<20, 128>>>(n, a, dx, dy);
    dim3 block(8, 4, 2), grid((NX + 7) / 8, (NY + 3) / 4, (NZ + 1) / 2);
    coords<<<grid, block>>>(dv, NX, NY, NZ);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dy, n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(v, dv, NX * NY * NZ * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) bad += got[i] != a * x[i] + y[i];
    for (int z = 0; z < NZ; z++)
        for (int yy = 0; yy < NY; yy++)
            for (int xx = 0; xx < NX; xx++) bad += v[(z * NY + yy) * NX + xx] != xx + 1000 * yy + 1000000 * z;
    printf("%s %d wrong elements\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
