// Half and bfloat16 conversions and arithmetic on hand-computed cases, in a kernel and on
// the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include "common.h"

struct Case { float in; unsigned short half_bits, bf16_bits; };
// Expected bits worked out by hand (round to nearest even).
__constant__ Case cases[] = {
    {1.0f / 3.0f, 0x3555, 0x3EAB},     // 1/3
    {65504.0f, 0x7BFF, 0x4780},        // the largest half
    {65519.0f, 0x7BFF, 0x4780},        // rounds down to 65504
    {65520.0f, 0x7C00, 0x4780},        // halfway to 65536: rounds to even = infinity
    {-1e6f, 0xFC00, 0xC974},           // -inf in half; bf16 0xC974 = -999424
    {5.9604645e-08f, 0x0001, 0x3380},  // 2^-24: the smallest half subnormal
    {2.9802322e-08f, 0x0000, 0x3300},  // 2^-25: halfway, rounds to even = 0
    {1.0e-7f, 0x0002, 0x33D7},         // 1.6777 * 2^-24 rounds to 2 * 2^-24
    {6.1035156e-05f, 0x0400, 0x3880},  // 2^-14: the smallest half normal
    {-0.0f, 0x8000, 0x8000},
    {1.00048828125f, 0x3C00, 0x3F80},  // 1 + 2^-11: halfway, to even 1.0
    {1.00146484375f, 0x3C02, 0x3F80},  // 1 + 3*2^-11: halfway, to even 1 + 2^-9
};
const int ncases = sizeof(cases) / sizeof(cases[0]);

__global__ void convert(unsigned short *half_bits, unsigned short *bf16_bits, float *back) {
    int i = threadIdx.x;
    if (i >= ncases) return;
    __half h = __float2half(cases[i].in);
    __nv_bfloat16 b = __float2bfloat16(cases[i].in);
    half_bits[i] = __half_as_ushort(h);
    bf16_bits[i] = __bfloat16_as_ushort(b);
    back[i] = __half2float(h);
}

__global__ void arithmetic(float *out) {
    __half a = __float2half(1.5f), b = __float2half(0.25f);
    __half2 p = __floats2half2_rn(1.0f, 2.0f), q = __halves2half2(a, b);
    float2 r = __half22float2(__hmul2(p, q));
    out[0] = __half2float(__hadd(a, b));               // 1.75
    out[1] = __half2float(__hfma(a, b, a));            // 1.875
    out[2] = r.x + r.y;                                // 1.5 + 0.5
    out[3] = __half2float(a * b - b) + (a > b);        // 0.125 + 1
    __half h = 2.5f;                                   // implicit conversions
    float f = h;
    out[4] = f + __bfloat162float(__float2bfloat16(3.0f)); // 5.5
    out[5] = __half2float(hsqrt(__float2half(9.0f)));   // 3
}

int main() {
    unsigned short *dh, *db, hh[ncases], hb[ncases];
    float *dback, *dout, back[ncases], out[6];
    CHECK(cudaMalloc(&dh, sizeof hh));
    CHECK(cudaMalloc(&db, sizeof hb));
    CHECK(cudaMalloc(&dback, sizeof back));
    CHECK(cudaMalloc(&dout, sizeof out));
    convert<<<1, 32>>>(dh, db, dback);
    arithmetic<<<1, 1>>>(dout);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hh, dh, sizeof hh, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hb, db, sizeof hb, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(back, dback, sizeof back, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < ncases; i++) {
        Case c;
        CHECK(cudaMemcpyFromSymbol(&c, cases, sizeof c, i * sizeof c));
        if (hh[i] != c.half_bits || hb[i] != c.bf16_bits) {
            printf("case %g: half 0x%04x (want 0x%04x), bf16 0x%04x (want 0x%04x)\n", c.in, hh[i], c.half_bits, hb[i], c.bf16_bits);
            bad++;
        }
    }
    bad += back[0] != 0.333251953125f || back[3] != INFINITY || back[5] != 5.9604644775390625e-08f;
    __half nan_h = __float2half(NAN);
    bad += !__hisnan(nan_h) || __half2float(nan_h) == __half2float(nan_h);
    const float want[6] = {1.75f, 1.875f, 2.0f, 1.125f, 5.5f, 3.0f};
    for (int i = 0; i < 6; i++)
        if (out[i] != want[i]) { printf("arithmetic %d: %g, want %g\n", i, out[i], want[i]); bad++; }
    printf("%s %d wrong conversions\n", bad ? "MISMATCH" : "OK", bad);
    return bad != 0;
}
