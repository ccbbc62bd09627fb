// Shared helpers of the emulator test programs: a seeded random generator and a check.
#pragma once
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <unistd.h>
#include <cuda_runtime.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

// Inputs are fresh each run (seeded from the time and pid) unless argv[1] gives a seed.
static unsigned long long rng_state;
static void seed_inputs(int argc, char **argv) {
    rng_state = argc > 1 ? strtoull(argv[1], 0, 10) : (unsigned long long)time(0) * 1000003u + getpid();
}
static unsigned rand_u32() {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng_state >> 33);
}
static float rand_float() { return (rand_u32() % 2000001) / 1000000.0f - 1.0f; } // [-1, 1]

// A device copy of the n values at h.
template <class T> static T *device_copy(const T *h, size_t n) {
    T *d;
    CHECK(cudaMalloc(&d, n * sizeof *d));
    CHECK(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
    return d;
}
// ulps between two finite floats (or doubles) of one sign.
static long ulps_apart(float a, float b) {
    int ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    return labs((long)ia - (long)ib);
}
static long ulps_apart(double a, double b) {
    long long ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    return (long)llabs(ia - ib);
}
