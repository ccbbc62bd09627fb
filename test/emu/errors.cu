// Runtime error codes: an invalid launch configuration sets a sticky last error that
// cudaGetLastError returns once; copies in the wrong direction, too long or with sizes
// that wrap around, and bad frees fail; error strings and names exist.
#include <cuda_runtime.h>
#include <string.h>
#include "common.h"

__global__ void touch(int *p) { p[threadIdx.x] = 1; }
__device__ int sym[4];

int main() {
    int bad = 0, *d, host[4] = {0}, count = -1;
    cudaError_t e = cudaGetDeviceCount(&count);
    const char *no_device = getenv("CUEMU_NO_DEVICE");
    if (no_device && *no_device == '1') { // a machine without a GPU
        bad = e != cudaErrorNoDevice || count != 0 || cudaMalloc(&d, 4) != cudaErrorNoDevice;
        printf("%s no device\n", bad ? "MISMATCH" : "OK");
        return bad;
    }
    CHECK(cudaMalloc(&d, 4096 * sizeof(int)));
    touch<<<1, 2048>>>(d); // more than 1024 threads per block
    cudaError_t peek = cudaPeekAtLastError(), last = cudaGetLastError(), after = cudaGetLastError();
    if (peek != cudaErrorInvalidConfiguration || last != cudaErrorInvalidConfiguration || after != cudaSuccess) {
        printf("launch errors: peek %d last %d after %d\n", peek, last, after);
        bad++;
    }
    touch<<<dim3(1, 70000), 32>>>(d); // grid y above 65535
    bad += cudaGetLastError() != cudaErrorInvalidConfiguration;
    touch<<<1, 32, 100 * 1024>>>(d); // 100 KiB of dynamic shared memory without opting in
    bad += cudaGetLastError() != cudaErrorInvalidValue;
    touch<<<1, 32>>>(d);
    bad += cudaGetLastError() != cudaSuccess;
    bad += cudaMemcpy(host, d, sizeof host, cudaMemcpyHostToDevice) != cudaErrorInvalidValue; // swapped
    bad += cudaGetLastError() != cudaErrorInvalidValue;
    bad += cudaMemcpy(host, d, 8192 * sizeof(int), cudaMemcpyDeviceToHost) != cudaErrorInvalidValue; // too long
    bad += cudaFree(host) != cudaErrorInvalidValue;
    // sizes whose sums wrap around: refused, not taken for small ones
    int v = 7;
    bad += cudaMemcpyToSymbol(sym, &v, sizeof v, (size_t)-4) != cudaErrorInvalidValue;
    bad += cudaMemcpyFromSymbol(&v, sym, sizeof v, (size_t)-4) != cudaErrorInvalidValue;
    bad += cudaMemcpy(host, d + 1, (size_t)-2, cudaMemcpyDeviceToHost) != cudaErrorInvalidValue;
    int *pitched = NULL;
    size_t pitch = 0;
    bad += cudaMallocPitch(&pitched, &pitch, (size_t)1 << 40, (size_t)1 << 30) != cudaErrorMemoryAllocation;
    cudaGetLastError();
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
    bad += host[0] != 1 || host[3] != 1;
    const cudaError_t codes[] = {cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                                 cudaErrorInvalidConfiguration, cudaErrorNoDevice, cudaErrorInsufficientDriver};
    for (cudaError_t e : codes) bad += !cudaGetErrorString(e) || !*cudaGetErrorString(e) || strncmp(cudaGetErrorName(e), "cuda", 4);
    bad += strcmp(cudaGetErrorName(cudaErrorInvalidConfiguration), "cudaErrorInvalidConfiguration") != 0;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    bad += e != cudaSuccess || count != 1 || prop.major != 9 || prop.warpSize != 32 || prop.maxThreadsPerBlock != 1024;
    printf("%s %d wrong error codes\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
