/* cuset.cu — the GPU backend of cuset: every CUDA kernel of the training step and of
   incremental decoding, and the C ABI declared in cuset.h ("The GPU backend").

   The CPU code of cuset.h is the reference: test/test_gpu.cu checks every kernel here
   against the CPU function that computes the same thing, and test/test_gpu_attn_loss.cu
   the fused attention (against the materialised cuset__attention_forward/_backward) and
   the fused loss.
   Layout: utilities; fused causal attention and the fused loss; matmul (tensor cores);
   column sums; layernorm; elementwise layers; the embedding; AdamW and the gradient
   norm; the decoding kernels; host launchers; the model (one allocation, forward,
   backward); the C ABI (the step); decoding; entry points for the tests.

   Matmuls run on tensor cores through the WMMA API (nvcuda::wmma) with precision::tf32,
   shape m16n16k8, accumulating in fp32. Why tf32: the tensors stay fp32 in memory (no
   conversion kernels, no second copy of the weights, the same buffers as the CPU code),
   each input is rounded to tf32 (10 explicit mantissa bits) as it is loaded into a
   fragment, and products are summed in fp32, so a dot product of length K has a relative
   error of about 1e-3 (2^-11 per rounded input) -- plenty for training, and the tests
   state that tolerance. Everything else is fp32 with fp32 arithmetic, but for sums kept in
   double: the loss's per-position and per-sample terms and ASFT's KL sum, CuSeT's
   hardest-window search, and the gradient norm.

   Determinism: no floating-point atomics anywhere. Every sum (matmul tiles, column sums
   for bias and LayerNorm gradients, the embedding gradient, the gradient norm) runs in an
   order fixed by the shapes alone, so the same seed on the same GPU gives bit-identical
   losses. Build: nvcc -O3 --std=c++17 -c cuset.cu (see the Makefile). */
#include <cuda_runtime.h>
#include <mma.h>
#include <type_traits>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <float.h>
#define CUSET_CUDA_INTERNALS
#include "cuset.h"

// ---- utilities ---------------------------------------------------------------------------

// Every CUDA runtime call and every launch is checked; an error names the file and line
// and exits, like CUSET_DIE on the CPU. Each launch has its own check (CUSET_CHECK_LAUNCH
// right after it): in a build with -DCUSET_DEBUG that check also waits for the kernel, so
// a fault inside it is reported at its own launch rather than at a later call.
static void cuset__cuda_check(cudaError_t e, const char *file, int line) {
    if (e != cudaSuccess) {
        fprintf(stderr, "cuset: CUDA error at %s:%d: %s (%s)\n", file, line, cudaGetErrorString(e), cudaGetErrorName(e));
        exit(1);
    }
}
#define CUSET_CHECK(call) cuset__cuda_check((call), __FILE__, __LINE__)
// calloc of host memory, or an exit saying how much ran short.
static void *cuset__host_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) { fprintf(stderr, "cuset: out of host memory allocating %zu x %zu bytes\n", n, size); exit(1); }
    return p;
}
// The error of the launch just made (a bad configuration, no kernel image for the device);
// with CUSET_DEBUG also of its execution.
static cudaError_t cuset__launch_error(void) {
    cudaError_t e = cudaGetLastError();
#ifdef CUSET_DEBUG
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
#endif
    return e;
}
#define CUSET_CHECK_LAUNCH() cuset__cuda_check(cuset__launch_error(), __FILE__, __LINE__)

static inline int cuset__ceil_div(long a, long b) { return (int)((a + b - 1) / b); }

// Sum over the 32 lanes of a warp by butterfly: every lane gets the same, fixed-order sum.
static __device__ __forceinline__ float cuset__warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// ---- fused causal attention (forward, backward) and the fused loss ---------------------
//
// Attention is flash style in fp32 on the CUDA cores: a block owns a tile of queries (or
// keys), the other side streams through shared memory in tiles, the softmax is computed
// online, tiles above the causal diagonal are never touched, and no T x T matrix exists in
// device memory. The forward pass saves each query's log-sum-exp so that the backward
// pass can recompute the probabilities; the backward pass is deterministic (no atomics):
// one kernel owns keys (dK, dV), another owns queries (dQ).
//
// The loss runs the three phases of cuset_loss (cuset.h) on the GPU and calls the very
// same CUSET_HD functions of cuset.h section 2 for the objective's math.

// ---- attention --------------------------------------------------------------------------
//
// Thread layout shared by the three tiled kernels: every row (a query, or a key) of the
// block's tile belongs to a group of G adjacent lanes of a warp, and lane g of the group
// holds the D = HS / G dimensions g, g + G, g + 2G, ... of the row's vectors in registers.
// A dot product with a row in shared memory is D multiply-adds per lane, then a butterfly
// of log2(G) shuffles inside the group (every lane ends with the same bits, since float
// addition is commutative). Interleaving the dimensions makes the G lanes read G adjacent
// words of shared memory, so there are no bank conflicts (other groups read the same words:
// broadcast). G is chosen so that D <= 16 keeps register use moderate:
//     HS   16  32  48  64  96 128
//     G     1   2   4   4   8   8
//     D    16  16  12  16  12  16
// The dK/dV kernel holds four vectors per lane (k, v, dk, dv) where the others hold two or
// three: where D = 16 it uses twice the lanes, GK = 2G per key (DK = 8), so that a lane
// needs at most 64 registers (at HS = 128: 1024 threads, 32 resident warps per SM, where
// 8 lanes per key took 123 registers x 512 threads, 16 warps). At HS = 48 and 96 (D = 12)
// it keeps GK = G: 88 and 98 registers (ptxas, sm_90).
template <int HS> struct CusetAttnShape {
    static constexpr int G = HS <= 16 ? 1 : HS <= 32 ? 2 : HS <= 64 ? 4 : 8;
    static constexpr int D = HS / G;
    static constexpr int GK = D == 16 ? 2 * G : G;
    static constexpr int DK = HS / GK;
    static_assert(HS % G == 0 && HS % GK == 0 && HS % 4 == 0 && HS <= 128, "unsupported head size");
};

#define CUSET_ATT_BQ 64  // queries per block (forward, dQ); keys per block (dK dV)
#define CUSET_ATT_BK 32  // rows per shared-memory tile streamed through a block
static_assert(CUSET_ATT_BQ % CUSET_ATT_BK == 0, "a block's first row starts a tile");

// Sum of x over the G lanes of a group; every lane of the warp must call it.
template <int G> static __device__ __forceinline__ float cuset__group_sum(float x) {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

// Copies rows r0 .. r0+CUSET_ATT_BK-1 (HS floats each, row stride `stride` floats, rows
// >= T as zeros) of a head's matrix into a shared tile, as float4s, by the whole block.
template <int HS>
static __device__ __forceinline__ void cuset__load_tile(float *tile, const float *src, int r0, int T, size_t stride) {
    float4 *dst = (float4 *)tile;
    for (int idx = threadIdx.x; idx < CUSET_ATT_BK * HS / 4; idx += blockDim.x) {
        int r = idx / (HS / 4), c4 = idx % (HS / 4);
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r0 + r < T) x = *(const float4 *)(src + (size_t)(r0 + r) * stride + 4 * c4);
        dst[idx] = x;
    }
}

// Lane g's D floats of row r (row stride `stride` floats) of a head's matrix: x[d] = column
// d * G + g, zeros where r >= T. The G lanes of a row hold it all.
template <int G, int D>
static __device__ __forceinline__ void cuset__load_lane_row(float *x, const float *src, int r, int T, size_t stride, int g) {
#pragma unroll
    for (int d = 0; d < D; d++) x[d] = r < T ? src[(size_t)r * stride + d * G + g] : 0.0f;
}

// Attention forward. One block: CUSET_ATT_BQ queries of one (batch, head), G lanes per query
// (CUSET_ATT_BQ * G threads). grid (B * NH, ceil(T / CUSET_ATT_BQ)); the heaviest query
// tiles (late ones, most keys) are launched first. Key and value tiles of CUSET_ATT_BK rows
// (2 x CUSET_ATT_BK x HS floats of static shared memory: 32 KiB at HS = 128) stream through
// shared memory up to the block's last query; per tile the lanes compute
// the tile's scores into registers, rescale the running sum and output once, then add the
// tile's values. qkv (B,T,3C) -> out (B,T,C), lse (B,NH,T) of the scaled scores.
template <int HS>
static __global__ void __launch_bounds__(CUSET_ATT_BQ * CusetAttnShape<HS>::G)
cuset__attention_forward_kernel(float *out, float *lse, const float *qkv, int T, int C, int NH, float scale) {
    constexpr int G = CusetAttnShape<HS>::G, D = CusetAttnShape<HS>::D, BK = CUSET_ATT_BK;
    __shared__ __align__(16) float ks[CUSET_ATT_BK * HS];
    __shared__ __align__(16) float vs[CUSET_ATT_BK * HS];
    int bh = blockIdx.x, b = bh / NH, h = bh % NH;
    int q0 = (gridDim.y - 1 - blockIdx.y) * CUSET_ATT_BQ;
    int g = threadIdx.x % G, i = q0 + threadIdx.x / G; // this lane's part of the head and its query
    size_t stride = 3 * (size_t)C;
    const float *qbase = qkv + (size_t)b * T * stride + h * HS, *kbase = qbase + C, *vbase = qbase + 2 * C;

    float q[D], acc[D] = {};
    cuset__load_lane_row<G, D>(q, qbase, i, T, stride, g);
    float m = -INFINITY, l = 0.0f; // running max and sum of exp(score - m)
    int kend = min(T, q0 + CUSET_ATT_BQ); // keys 0..kend-1 are visible to some query here
    for (int k0 = 0; k0 < kend; k0 += BK) {
        __syncthreads(); // the previous tile is consumed
        cuset__load_tile<HS>(ks, kbase, k0, T, stride);
        cuset__load_tile<HS>(vs, vbase, k0, T, stride);
        __syncthreads();
        float s[BK], mt = -INFINITY;
#pragma unroll
        for (int jj = 0; jj < BK; jj++) {
            float x = 0.0f;
#pragma unroll
            for (int d = 0; d < D; d++) x += q[d] * ks[jj * HS + d * G + g];
            x = cuset__group_sum<G>(x) * scale;
            s[jj] = k0 + jj <= i ? x : -INFINITY; // causal mask (also hides keys >= T)
            mt = fmaxf(mt, s[jj]);
        }
        // Tile 0 holds key 0 <= i, so m is finite from the first tile on: no inf - inf.
        float mnew = fmaxf(m, mt), corr = expf(m - mnew);
        l *= corr;
#pragma unroll
        for (int d = 0; d < D; d++) acc[d] *= corr;
#pragma unroll
        for (int jj = 0; jj < BK; jj++) {
            float p = expf(s[jj] - mnew);
            l += p;
#pragma unroll
            for (int d = 0; d < D; d++) acc[d] += p * vs[jj * HS + d * G + g];
        }
        m = mnew;
    }
    if (i < T) {
        float *o = out + ((size_t)b * T + i) * C + h * HS;
        float inv = 1.0f / l;
#pragma unroll
        for (int d = 0; d < D; d++) o[d * G + g] = acc[d] * inv;
        if (g == 0) lse[(size_t)bh * T + i] = m + logf(l);
    }
}

// delta (B,NH,T) = per head, the row sum of dout * out (the softmax backward's dot product
// sum_j P_ij dP_ij, computed without P). One warp per (b, t, h): lanes stride over the hs
// channels, then a shuffle reduction. grid ceil(B*T*NH / 8) x 256 threads.
static __global__ void cuset__attention_delta_kernel(float *delta, const float *dout, const float *out, int B, int T,
                                              int C, int NH) {
    long w = (long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, bt = w / NH; // (B * T * NH may pass 2^31)
    int lane = threadIdx.x % 32;
    if (w >= (long)B * T * NH) return; // a whole warp leaves together
    int hs = C / NH, h = (int)(w % NH), b = (int)(bt / T), t = (int)(bt % T);
    const float *dy = dout + (size_t)bt * C + h * hs, *y = out + (size_t)bt * C + h * hs;
    float x = 0.0f;
    for (int d = lane; d < hs; d += 32) x += dy[d] * y[d];
    x = cuset__warp_sum(x);
    if (lane == 0) delta[((size_t)b * NH + h) * T + t] = x;
}

// Attention backward, keys' side. One block: CUSET_ATT_BQ keys j of one (batch, head), GK
// lanes per key holding k_j, v_j and their gradients; grid (B * NH, ceil(T / CUSET_ATT_BQ)).
// Tiles of CUSET_ATT_BK queries (q, dout, lse, delta: 2 x CUSET_ATT_BK x (HS + 1) floats,
// static) stream through shared memory from the diagonal to T. Per query i >= j: P_ij = exp(scale q_i.k_j - lse_i),
// dV_j += P_ij dout_i, dS_ij = P_ij (dout_i.v_j - delta_i), dK_j += scale dS_ij q_i.
// Writes (not accumulates) the k and v parts of dqkv (B,T,3C).
template <int HS>
static __global__ void __launch_bounds__(CUSET_ATT_BQ * CusetAttnShape<HS>::GK)
cuset__attention_backward_dkdv_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse,
                                      const float *delta, int T, int C, int NH, float scale) {
    constexpr int G = CusetAttnShape<HS>::GK, D = CusetAttnShape<HS>::DK, BK = CUSET_ATT_BK;
    __shared__ __align__(16) float qs[CUSET_ATT_BK * HS];
    __shared__ __align__(16) float dos[CUSET_ATT_BK * HS];
    __shared__ float lses[CUSET_ATT_BK], dels[CUSET_ATT_BK];
    int bh = blockIdx.x, b = bh / NH, h = bh % NH;
    int k0 = blockIdx.y * CUSET_ATT_BQ; // early key tiles see the most queries: launched first
    int g = threadIdx.x % G, j = k0 + threadIdx.x / G;
    size_t stride = 3 * (size_t)C;
    const float *qbase = qkv + (size_t)b * T * stride + h * HS, *kbase = qbase + C, *vbase = qbase + 2 * C;
    const float *dobase = dout + (size_t)b * T * C + h * HS;

    float k[D], v[D], dk[D], dv[D];
#pragma unroll
    for (int d = 0; d < D; d++) {
        k[d] = j < T ? kbase[(size_t)j * stride + d * G + g] : 0.0f;
        v[d] = j < T ? vbase[(size_t)j * stride + d * G + g] : 0.0f;
        dk[d] = dv[d] = 0.0f;
    }
    for (int i0 = k0; i0 < T; i0 += BK) { // (k0, a multiple of CUSET_ATT_BQ, is one of BK)
        __syncthreads();
        cuset__load_tile<HS>(qs, qbase, i0, T, stride);
        cuset__load_tile<HS>(dos, dobase, i0, T, C);
        for (int r = threadIdx.x; r < BK; r += blockDim.x) {
            lses[r] = i0 + r < T ? lse[(size_t)bh * T + i0 + r] : 0.0f;
            dels[r] = i0 + r < T ? delta[(size_t)bh * T + i0 + r] : 0.0f;
        }
        __syncthreads();
        for (int ii = 0; ii < BK; ii++) {
            float s = 0.0f, dp = 0.0f;
#pragma unroll
            for (int d = 0; d < D; d++) {
                s += qs[ii * HS + d * G + g] * k[d];
                dp += dos[ii * HS + d * G + g] * v[d];
            }
            s = cuset__group_sum<G>(s);
            dp = cuset__group_sum<G>(dp);
            int i = i0 + ii;
            float p = (i >= j && i < T) ? expf(s * scale - lses[ii]) : 0.0f;
            float ds = p * (dp - dels[ii]);
#pragma unroll
            for (int d = 0; d < D; d++) {
                dv[d] += p * dos[ii * HS + d * G + g];
                dk[d] += ds * qs[ii * HS + d * G + g];
            }
        }
    }
    if (j < T) {
        float *dkp = dqkv + ((size_t)b * T + j) * stride + C + h * HS, *dvp = dkp + C;
#pragma unroll
        for (int d = 0; d < D; d++) {
            dkp[d * G + g] = dk[d] * scale;
            dvp[d * G + g] = dv[d];
        }
    }
}

// Attention backward, queries' side. One block: CUSET_ATT_BQ queries i of one (batch, head),
// G lanes per query holding q_i, dout_i, dQ_i; grid (B * NH, ceil(T / CUSET_ATT_BQ)), late
// tiles first. Key and value tiles (2 x CUSET_ATT_BK x HS floats, static) stream through
// shared memory up to the diagonal; per
// key j <= i: P_ij recomputed from lse_i, dS_ij = P_ij (dout_i.v_j - delta_i),
// dQ_i += scale dS_ij k_j. Writes the q part of dqkv (B,T,3C).
template <int HS>
static __global__ void __launch_bounds__(CUSET_ATT_BQ * CusetAttnShape<HS>::G)
cuset__attention_backward_dq_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse,
                                    const float *delta, int T, int C, int NH, float scale) {
    constexpr int G = CusetAttnShape<HS>::G, D = CusetAttnShape<HS>::D, BK = CUSET_ATT_BK;
    __shared__ __align__(16) float ks[CUSET_ATT_BK * HS];
    __shared__ __align__(16) float vs[CUSET_ATT_BK * HS];
    int bh = blockIdx.x, b = bh / NH, h = bh % NH;
    int q0 = (gridDim.y - 1 - blockIdx.y) * CUSET_ATT_BQ;
    int g = threadIdx.x % G, i = q0 + threadIdx.x / G;
    size_t stride = 3 * (size_t)C;
    const float *qbase = qkv + (size_t)b * T * stride + h * HS, *kbase = qbase + C, *vbase = qbase + 2 * C;

    float q[D], dy[D], dq[D] = {};
    cuset__load_lane_row<G, D>(q, qbase, i, T, stride, g);
    cuset__load_lane_row<G, D>(dy, dout + (size_t)b * T * C + h * HS, i, T, C, g);
    float lse_i = i < T ? lse[(size_t)bh * T + i] : 0.0f, delta_i = i < T ? delta[(size_t)bh * T + i] : 0.0f;
    int kend = min(T, q0 + CUSET_ATT_BQ);
    for (int k0 = 0; k0 < kend; k0 += BK) {
        __syncthreads();
        cuset__load_tile<HS>(ks, kbase, k0, T, stride);
        cuset__load_tile<HS>(vs, vbase, k0, T, stride);
        __syncthreads();
        for (int jj = 0; jj < BK; jj++) {
            float s = 0.0f, dp = 0.0f;
#pragma unroll
            for (int d = 0; d < D; d++) {
                s += q[d] * ks[jj * HS + d * G + g];
                dp += dy[d] * vs[jj * HS + d * G + g];
            }
            s = cuset__group_sum<G>(s);
            dp = cuset__group_sum<G>(dp);
            float p = (k0 + jj <= i && i < T) ? expf(s * scale - lse_i) : 0.0f;
            float ds = p * (dp - delta_i);
#pragma unroll
            for (int d = 0; d < D; d++) dq[d] += ds * ks[jj * HS + d * G + g];
        }
    }
    if (i < T) {
        float *dqp = dqkv + ((size_t)b * T + i) * stride + h * HS;
#pragma unroll
        for (int d = 0; d < D; d++) dqp[d * G + g] = dq[d] * scale;
    }
}

// Calls LAUNCH(HS) for a head size hs the attention kernels are built for, else runs
// OTHERWISE. cuset_cuda_model_new refuses a model of another head size (through
// cuset__attention_head_size_ok), so the launchers' OTHERWISE is an internal error.
#define CUSET__ATT_DISPATCH(hs, LAUNCH, OTHERWISE) \
    switch (hs) {                                   \
    case 16: LAUNCH(16); break;                     \
    case 32: LAUNCH(32); break;                     \
    case 48: LAUNCH(48); break;                     \
    case 64: LAUNCH(64); break;                     \
    case 96: LAUNCH(96); break;                     \
    case 128: LAUNCH(128); break;                   \
    default: OTHERWISE;                             \
    }
#define CUSET__ATT_HEAD_SIZES "16, 32, 48, 64, 96 or 128"
#define CUSET__ATT_UNSUPPORTED(hs) \
    (fprintf(stderr, "cuset attention: head size %d unsupported (" CUSET__ATT_HEAD_SIZES ")\n", hs), exit(EXIT_FAILURE))

static bool cuset__attention_head_size_ok(int hs) {
#define CUSET__ATT_OK(HS) return true
    CUSET__ATT_DISPATCH(hs, CUSET__ATT_OK, return false)
#undef CUSET__ATT_OK
}

static void cuset__attention_check(int B, int T, int C, int NH) {
    if (B < 1 || T < 1 || NH < 1 || C % NH != 0) {
        fprintf(stderr, "cuset attention: bad shape B=%d T=%d C=%d NH=%d\n", B, T, C, NH);
        exit(EXIT_FAILURE);
    }
}

// qkv (B,T,3C): q | k | v, head h at channels h*hs..(h+1)*hs-1 of each (row stride 3C);
// out (B,T,C); lse (B,NH,T): log-sum-exp of each query's scaled scores, for the backward.
static void cuset__cuda_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH,
                                          cudaStream_t s) {
    cuset__attention_check(B, T, C, NH);
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    dim3 grid(B * NH, cuset__ceil_div(T, CUSET_ATT_BQ));
#define CUSET__ATT_FWD(HS) \
    cuset__attention_forward_kernel<HS><<<grid, CUSET_ATT_BQ * CusetAttnShape<HS>::G, 0, s>>>(out, lse, qkv, T, C, NH, scale)
    CUSET__ATT_DISPATCH(hs, CUSET__ATT_FWD, CUSET__ATT_UNSUPPORTED(hs))
#undef CUSET__ATT_FWD
    CUSET_CHECK_LAUNCH();
}

// dout (B,T,C) -> dqkv (B,T,3C), overwritten (not accumulated); delta (B,NH,T) is scratch.
// out and lse are the forward pass's.
static void cuset__cuda_attention_backward(float *dqkv, float *delta, const float *dout, const float *qkv,
                                           const float *out, const float *lse, int B, int T, int C, int NH,
                                           cudaStream_t s) {
    cuset__attention_check(B, T, C, NH);
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    long rows = (long)B * T * NH;
    cuset__attention_delta_kernel<<<cuset__ceil_div(rows, 8), 256, 0, s>>>(delta, dout, out, B, T, C, NH);
    CUSET_CHECK_LAUNCH();
    dim3 grid(B * NH, cuset__ceil_div(T, CUSET_ATT_BQ));
#define CUSET__ATT_BWD(HS)                                                                         \
    do {                                                                                           \
        cuset__attention_backward_dkdv_kernel<HS><<<grid, CUSET_ATT_BQ * CusetAttnShape<HS>::GK, 0, s>>>( \
            dqkv, dout, qkv, lse, delta, T, C, NH, scale);                                         \
        CUSET_CHECK_LAUNCH();                                                                      \
        cuset__attention_backward_dq_kernel<HS><<<grid, CUSET_ATT_BQ * CusetAttnShape<HS>::G, 0, s>>>(   \
            dqkv, dout, qkv, lse, delta, T, C, NH, scale);                                         \
        CUSET_CHECK_LAUNCH();                                                                      \
    } while (0)
    CUSET__ATT_DISPATCH(hs, CUSET__ATT_BWD, CUSET__ATT_UNSUPPORTED(hs))
#undef CUSET__ATT_BWD
}

// ---- the fused loss ----------------------------------------------------------------------
//
// Four launches, all on `stream`:
//   phase 1  one block per row of logits: lse, confidence, EAFT weight, ASFT's reference lse
//   phase 2  one thread per sample: hardest window C_n and w_n = 1 - C_n
//   phase 3  one block per row: coefficient, dlogits in place, the row's stat terms
//   sums     one thread per sample: the sample's stat sums, in the order of cuset_loss
// then (when stats is given) one copy of B x 6 doubles and the final sum on the host.
// Rows are read as float4s when Vp % 4 == 0 and logits (and ASFT's ref_logits) are 16-byte
// aligned (always, for cudaMalloc'd (B,T,Vp) tensors with Vp a multiple of 64).

#define CUSET_LOSS_THREADS 256
#define CUSET_LOSS_SAMPLE_FIELDS 6 // loss, ce, conf, pass, w, tgt_len

// The workspace, carved from one allocation: doubles first, so everything stays aligned.
typedef struct {
    double *row;    // (B*T, 4): per position loss term, -log c, c, 1[c > tau]; zeros off target
    double *sample; // (B, 6):   per sample sums of the four, then w_n and T_n
    float *lse;     // (B*T) log-sum-exp of the row over the V real columns
    float *conf;    // (B*T) c = softmax(logits)[target]
    float *eaft;    // (B*T) EAFT weight (EAFT only)
    float *lse_ref; // (B*T) lse of the reference row (ASFT only)
    float *wn;      // (B)   w_n = 1 - C_n
} CusetLossWork;

static size_t cuset__loss_work(void *base, int B, int T, CusetLossWork *w) {
    size_t BT = (size_t)B * T, off = 0;
    char *p = (char *)base;
    w->row = (double *)(p + off);     off += 4 * BT * sizeof(double);
    w->sample = (double *)(p + off);  off += CUSET_LOSS_SAMPLE_FIELDS * (size_t)B * sizeof(double);
    w->lse = (float *)(p + off);      off += BT * sizeof(float);
    w->conf = (float *)(p + off);     off += BT * sizeof(float);
    w->eaft = (float *)(p + off);     off += BT * sizeof(float);
    w->lse_ref = (float *)(p + off);  off += BT * sizeof(float);
    w->wn = (float *)(p + off);       off += (size_t)B * sizeof(float);
    return off;
}

extern "C" size_t cuset_cuda_loss_workspace_bytes(int B, int T) {
    CusetLossWork w;
    return cuset__loss_work(NULL, B, T, &w);
}

// Four consecutive columns c..c+3 (c % 4 == 0) of a row: one float4 when vec, else scalar
// loads of the columns below n (the rest read as 0).
static __device__ __forceinline__ float4 cuset__load4(const float *row, int c, int n, bool vec) {
    if (vec) return *(const float4 *)(row + c);
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (c < n) x.x = row[c];
    if (c + 1 < n) x.y = row[c + 1];
    if (c + 2 < n) x.z = row[c + 2];
    if (c + 3 < n) x.w = row[c + 3];
    return x;
}
static __device__ __forceinline__ void cuset__store4(float *row, int c, int n, bool vec, float4 x) {
    if (vec) { *(float4 *)(row + c) = x; return; }
    if (c < n) row[c] = x.x;
    if (c + 1 < n) row[c + 1] = x.y;
    if (c + 2 < n) row[c + 2] = x.z;
    if (c + 3 < n) row[c + 3] = x.w;
}

// A running softmax denominator: s = sum of exp(x - m) over the values seen, m their max.
struct CusetMaxSum { float m, s; };
static __device__ __forceinline__ void cuset__maxsum_push(CusetMaxSum *a, float x) {
    if (x > a->m) { a->s = a->s * expf(a->m - x) + 1.0f; a->m = x; }
    else a->s += expf(x - a->m);
}
// Merging is commutative bit for bit (one max, two products, one addition), so a butterfly
// leaves the same value in every lane.
static __device__ __forceinline__ CusetMaxSum cuset__maxsum_merge(CusetMaxSum a, CusetMaxSum b) {
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return a; // nothing seen on either side
    CusetMaxSum r = {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
    return r;
}

// The block's log-sum-exp from each thread's running (max, sum): a warp butterfly, then
// the warps' results in order through shared memory. Every thread gets the result.
static __device__ float cuset__block_lse(CusetMaxSum ms) {
    __shared__ CusetMaxSum warp_ms[CUSET_LOSS_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1) {
        CusetMaxSum other = {__shfl_xor_sync(0xffffffffu, ms.m, o), __shfl_xor_sync(0xffffffffu, ms.s, o)};
        ms = cuset__maxsum_merge(ms, other);
    }
    if (threadIdx.x % 32 == 0) warp_ms[threadIdx.x / 32] = ms;
    __syncthreads();
    CusetMaxSum all = warp_ms[0];
    for (int w = 1; w < (int)blockDim.x / 32; w++) all = cuset__maxsum_merge(all, warp_ms[w]);
    __syncthreads(); // warp_ms may be reused by the next call
    return all.m + logf(all.s);
}

// The log-sum-exp of columns 0..V-1 of one row, by the whole block (CUSET_LOSS_THREADS
// threads, thread k reading columns 4k..4k+3, then 4(k + 256).., as float4s when vec), in
// one pass; with EAFT each thread also keeps the top-20 of its columns in top[0..*ntop-1].
template <bool EAFT>
static __device__ float cuset__block_row_lse(const float *row, int V, int Vp, bool vec, float *top, int *ntop) {
    int k = V < CUSET_EAFT_TOPK ? V : CUSET_EAFT_TOPK;
    CusetMaxSum ms = {-INFINITY, 0.0f};
    for (int c = 4 * threadIdx.x; c < V; c += 4 * blockDim.x) {
        float4 x4 = cuset__load4(row, c, Vp, vec);
        float x[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (c + e >= V) break;
            cuset__maxsum_push(&ms, x[e]);
            if (EAFT) cuset_topk_push(top, ntop, k, x[e]);
        }
    }
    return cuset__block_lse(ms);
}

// Loss phase 1. One block (CUSET_LOSS_THREADS threads) per row i of logits (B,T,Vp), grid
// B*T; rows that are not target positions leave at once. One read of the row: its lse over
// the V real columns, c = exp(z[target] - lse), and with EAFT the top-20 logits (each
// thread keeps its own top-20 with cuset_topk_push during the same pass, then the lists are
// merged pairwise in shared memory, 8 levels: 256 x 21 floats and 256 ints, 22 KiB static)
// and their weight cuset_eaft_weight. With ASFT
// also the lse of the reference row (its one read before phase 3).
template <bool EAFT>
static __global__ void __launch_bounds__(CUSET_LOSS_THREADS)
cuset__loss_phase1_kernel(CusetLossWork w, const float *logits, const float *ref_logits, const int *targets,
                          const unsigned char *is_target, int V, int Vp, bool vec, CusetObjective obj) {
    int i = blockIdx.x, tid = threadIdx.x;
    if (!is_target[i]) return; // the whole block leaves together
    const float *z = logits + (size_t)i * Vp;
    float top[CUSET_EAFT_TOPK];
    int n = 0;
    float lse = cuset__block_row_lse<EAFT>(z, V, Vp, vec, top, &n);
    if (tid == 0) {
        w.lse[i] = lse;
        w.conf[i] = cuset_confidence(z[targets[i]], lse);
    }
    if (ref_logits) { // ASFT: the reference row's lse, for phase 3
        float lse_ref = cuset__block_row_lse<false>(ref_logits + (size_t)i * Vp, V, Vp, vec, NULL, NULL);
        if (tid == 0) w.lse_ref[i] = lse_ref;
    }
    if (EAFT) {
        // rows of 21 floats: thread tid's word r sits in bank (21 tid + r) % 32, distinct
        // across a warp (a stride of 20 put 4 threads on each bank)
        __shared__ float tops[CUSET_LOSS_THREADS][CUSET_EAFT_TOPK + 1];
        __shared__ int ntops[CUSET_LOSS_THREADS];
        int k = V < CUSET_EAFT_TOPK ? V : CUSET_EAFT_TOPK;
        for (int r = 0; r < n; r++) tops[tid][r] = top[r];
        ntops[tid] = n;
        // Level by level, list tid takes in list tid + half: the top-k of a union is the
        // top-k of the members' top-k lists, and ties are equal values, so the final list
        // holds exactly the values the CPU's single pass keeps.
        for (int half = blockDim.x / 2; half > 0; half /= 2) {
            __syncthreads();
            if (tid < half) {
                for (int r = 0; r < ntops[tid + half]; r++) cuset_topk_push(top, &n, k, tops[tid + half][r]);
                for (int r = 0; r < n; r++) tops[tid][r] = top[r];
                ntops[tid] = n;
            }
        }
        if (tid == 0) w.eaft[i] = cuset_eaft_weight(top, n, obj.alpha);
    }
}

// Loss phase 2. One thread per sample n (grid ceil(B/64) x 64): the hardest window C_n of
// its target confidences and w_n = 1 - C_n, with the functions of cuset.h (sequential,
// O(T_n), in double).
static __global__ void cuset__loss_phase2_kernel(CusetLossWork w, const int *tgt_start, const int *tgt_len, int B, int T,
                                          int window) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= B) return;
    w.wn[n] = cuset_sample_weight(cuset_hardest_window(w.conf + (size_t)n * T + tgt_start[n], tgt_len[n], window));
}

// Loss phase 3. One block (CUSET_LOSS_THREADS threads) per row i of logits, grid B*T. A
// target row is read once and overwritten with a (softmax - onehot) / N, plus with ASFT the
// KL gradient beta (softmax - softmax_ref) / N; its KL sum is reduced in double across the
// block in a fixed order. Thread 0 writes the row's stat terms. Non-target rows and the pad
// columns V..Vp-1 become zeros.
static __global__ void __launch_bounds__(CUSET_LOSS_THREADS)
cuset__loss_phase3_kernel(CusetLossWork w, float *logits, const float *ref_logits, const int *targets,
                          const unsigned char *is_target, const unsigned char *is_cuda, int T, int V, int Vp,
                          bool vec, CusetObjective obj, float inv_norm) {
    __shared__ double warp_kl[CUSET_LOSS_THREADS / 32];
    int i = blockIdx.x;
    float *z = logits + (size_t)i * Vp;
    double *row = w.row + 4 * (size_t)i;
    if (!is_target[i]) {
        for (int c = 4 * threadIdx.x; c < Vp; c += 4 * blockDim.x)
            cuset__store4(z, c, Vp, vec, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
        if (threadIdx.x == 0) row[0] = row[1] = row[2] = row[3] = 0.0;
        return;
    }
    int asft = obj.kind == CUSET_OBJ_ASFT, tgt = targets[i]; // (ASFT always comes with ref_logits)
    float lse = w.lse[i], c = w.conf[i], zt = z[tgt];
    float a = cuset_token_coef(&obj, c, is_cuda[i], w.wn[i / T], obj.kind == CUSET_OBJ_EAFT ? w.eaft[i] : 0.0f);
    float lse_ref = asft ? w.lse_ref[i] : 0.0f;
    const float *zr = asft ? ref_logits + (size_t)i * Vp : NULL;
    __syncthreads(); // every thread has read z[tgt] before anyone overwrites it
    double kl = 0.0;
    for (int c0 = 4 * threadIdx.x; c0 < Vp; c0 += 4 * blockDim.x) {
        float4 x = cuset__load4(z, c0, Vp, vec), xr = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (asft) xr = cuset__load4(zr, c0, Vp, vec);
        float *xs = &x.x, *xrs = &xr.x;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int col = c0 + e;
            float gz = 0.0f;
            if (col < V) {
                float lp = xs[e] - lse, lp_ref = asft ? xrs[e] - lse_ref : 0.0f;
                if (asft) kl += cuset_kl_term(lp_ref, lp);
                gz = cuset_logit_grad(&obj, a, lp, lp_ref, col == tgt, inv_norm);
            }
            xs[e] = gz;
        }
        cuset__store4(z, c0, Vp, vec, x);
    }
    if (asft) { // block sum of kl: warp butterflies, then the warps in order
        for (int o = 16; o > 0; o >>= 1) kl += __shfl_xor_sync(0xffffffffu, kl, o);
        if (threadIdx.x % 32 == 0) warp_kl[threadIdx.x / 32] = kl;
        __syncthreads();
        if (threadIdx.x == 0)
            for (int k = 1; k < (int)blockDim.x / 32; k++) kl += warp_kl[k];
    }
    if (threadIdx.x == 0) {
        float nll = lse - zt;
        row[0] = cuset_loss_term(&obj, a, nll, kl, inv_norm);
        row[1] = nll;
        row[2] = c;
        row[3] = cuset_conf_mask(c, obj.tau); // the pass statistic: eq. 2
    }
}

// Loss sums. One thread per sample n (grid ceil(B/64) x 64): the sums over t = 0..T-1 of the
// row terms, in order (cuset_loss's order: off-target rows add exact zeros), then w_n and
// T_n. sample (B, 6).
static __global__ void cuset__loss_sums_kernel(CusetLossWork w, const int *tgt_len, int B, int T) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= B) return;
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    for (int t = 0; t < T; t++)
        for (int f = 0; f < 4; f++) s[f] += w.row[4 * ((size_t)n * T + t) + f];
    double *out = w.sample + CUSET_LOSS_SAMPLE_FIELDS * (size_t)n;
    for (int f = 0; f < 4; f++) out[f] = s[f];
    out[4] = w.wn[n];
    out[5] = tgt_len[n];
}

// The final sum on the host of the loss's per-sample sums h (B, 6), sample by sample, as
// cuset_loss adds into stats.
static void cuset__loss_stats_add(CusetStats *stats, const double *h, int B) {
    for (const double *r = h; r < h + CUSET_LOSS_SAMPLE_FIELDS * (size_t)B; r += CUSET_LOSS_SAMPLE_FIELDS)
        cuset_stats_add_sample(stats, r[0], r[1], r[2], r[3], r[4], (int)r[5]);
}

extern "C" int cuset_cuda_loss(float *logits, const float *ref_logits, const int *targets,
                               const unsigned char *is_target, const unsigned char *is_cuda, const int *tgt_start,
                               const int *tgt_len, int B, int T, int V, int Vp, const CusetObjective *obj,
                               float inv_norm, void *workspace, CusetStats *stats, void *stream) {
    if (B < 1 || T < 1 || V < 1 || V > Vp || !logits || !targets || !is_target || !is_cuda || !tgt_start ||
        !tgt_len || !obj || !workspace || obj->kind < 0 || obj->kind >= CUSET_OBJ_COUNT ||
        (obj->kind == CUSET_OBJ_ASFT && !ref_logits))
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    CusetLossWork w;
    cuset__loss_work(workspace, B, T, &w);
    const float *ref = obj->kind == CUSET_OBJ_ASFT ? ref_logits : NULL;
    bool vec = Vp % 4 == 0 && (size_t)logits % 16 == 0 && (!ref || (size_t)ref % 16 == 0);
    int rows = B * T;
    cudaError_t err;
    if (obj->kind == CUSET_OBJ_EAFT)
        cuset__loss_phase1_kernel<true><<<rows, CUSET_LOSS_THREADS, 0, s>>>(w, logits, ref, targets, is_target, V, Vp, vec, *obj);
    else
        cuset__loss_phase1_kernel<false><<<rows, CUSET_LOSS_THREADS, 0, s>>>(w, logits, ref, targets, is_target, V, Vp, vec, *obj);
    if ((err = cuset__launch_error()) != cudaSuccess) return (int)err;
    cuset__loss_phase2_kernel<<<cuset__ceil_div(B, 64), 64, 0, s>>>(w, tgt_start, tgt_len, B, T, obj->window);
    if ((err = cuset__launch_error()) != cudaSuccess) return (int)err;
    cuset__loss_phase3_kernel<<<rows, CUSET_LOSS_THREADS, 0, s>>>(w, logits, ref, targets, is_target, is_cuda, T, V, Vp,
                                                                   vec, *obj, inv_norm);
    if ((err = cuset__launch_error()) != cudaSuccess) return (int)err;
    cuset__loss_sums_kernel<<<cuset__ceil_div(B, 64), 64, 0, s>>>(w, tgt_len, B, T);
    if ((err = cuset__launch_error()) != cudaSuccess) return (int)err;
    if (!stats) return 0;
    size_t bytes = CUSET_LOSS_SAMPLE_FIELDS * (size_t)B * sizeof(double);
    double *h = (double *)malloc(bytes);
    if (!h) return (int)cudaErrorMemoryAllocation;
    err = cudaMemcpyAsync(h, w.sample, bytes, cudaMemcpyDeviceToHost, s);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    if (err == cudaSuccess) cuset__loss_stats_add(stats, h, B);
    free(h);
    return (int)err;
}

// ---- matmul on tensor cores ------------------------------------------------------------------

namespace wmma = nvcuda::wmma;

// A block computes a 64 x 64 tile of C (M, N) = A (M, K) B (K, N), stepping through K 32
// at a time. Each step loads the 64 x 32 tile of A and the 32 x 64 tile of B into shared
// memory (bounds-checked, zero-padded past M, N, K, so any shape works), then each of the
// 4 warps multiplies its 32 x 32 quarter as 2 x 2 WMMA fragments of 16 x 16, k = 8.
// Operands are read in whatever orientation they have in memory (A_ROW: A(m, k) at
// A[m lda + k], else A[k lda + m]; B_ROW: B(k, n) at B[k ldb + n], else B[n ldb + k]):
// the tile keeps that orientation in shared memory and is handed to WMMA as a row- or
// column-major fragment, so global reads are coalesced and nothing is transposed.
#define CUSET_MM_BM 64
#define CUSET_MM_BN 64
#define CUSET_MM_BK 32
#define CUSET_MM_THREADS 128
#define CUSET_MM_PAD 4 // shared rows padded by 4 floats: fewer bank conflicts, ldm stays a multiple of 4
#define CUSET_MM_OPERAND_FLOATS (CUSET_MM_BM * (CUSET_MM_BK + CUSET_MM_PAD)) // 2304: either tile in either orientation
static_assert(CUSET_MM_BM == CUSET_MM_BN && CUSET_MM_BK * (CUSET_MM_BN + CUSET_MM_PAD) <= CUSET_MM_OPERAND_FLOATS,
              "the tiles outgrow their buffers");
static_assert(CUSET_MM_BM * (CUSET_MM_BN + CUSET_MM_PAD) <= 2 * CUSET_MM_OPERAND_FLOATS,
              "the output staging outgrows both tiles");

// What the epilogue does with the fp32 result v of output (m, n), index i = m N + n:
enum {
    CUSET_EPI_STORE = 0,         // out[i] = v + bias[n]            (bias may be NULL)
    CUSET_EPI_ACCUM = 1,         // out[i] += v                     (weight gradients accumulate)
    CUSET_EPI_GELU = 2,          // aux[i] = v + bias[n]; out[i] = gelu(aux[i])
    CUSET_EPI_GELU_BACKWARD = 3  // out[i] = v * gelu'(aux[i])      (aux: the pre-GELU activation)
};

// C (M, N) = A (M, K) B (K, N) with the epilogue EPI, on tensor cores (tf32 in, fp32 sums).
// Launch: grid (ceil(N / 64), ceil(M / 64)), block 128 threads (4 warps, 2 x 2).
template <bool A_ROW, bool B_ROW, int EPI>
static __global__ void __launch_bounds__(CUSET_MM_THREADS) cuset__matmul_kernel(float *out, float *aux, const float *A, int lda,
                                                            const float *B, int ldb, const float *bias,
                                                            int M, int N, int K) {
    typedef typename std::conditional<A_ROW, wmma::row_major, wmma::col_major>::type LayoutA;
    typedef typename std::conditional<B_ROW, wmma::row_major, wmma::col_major>::type LayoutB;
    // A tile: A_ROW as [64][32 + 4] (row-major), else [32][64 + 4] (column-major view).
    // B tile: B_ROW as [32][64 + 4] (row-major), else [64][32 + 4] (column-major view).
    // The epilogue stages the 64 x 64 output as [64][64 + 4] over both: 18,432 bytes a
    // block, so shared memory no longer limits the blocks per SM (registers do).
    __shared__ __align__(128) float tiles[2 * CUSET_MM_OPERAND_FLOATS];
    float *As = tiles, *Bs = tiles + CUSET_MM_OPERAND_FLOATS;
    const int lda_s = A_ROW ? CUSET_MM_BK + CUSET_MM_PAD : CUSET_MM_BM + CUSET_MM_PAD;
    const int ldb_s = B_ROW ? CUSET_MM_BN + CUSET_MM_PAD : CUSET_MM_BK + CUSET_MM_PAD;
    int tid = threadIdx.x, warp = tid / 32;
    int m0 = blockIdx.y * CUSET_MM_BM, n0 = blockIdx.x * CUSET_MM_BN;
    int wm = (warp / 2) * 32, wn = (warp % 2) * 32; // this warp's 32 x 32 quarter of the tile

    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += CUSET_MM_BK) {
        // Load both tiles; consecutive threads read consecutive addresses.
        for (int e = tid; e < CUSET_MM_BM * CUSET_MM_BK; e += CUSET_MM_THREADS) {
            int m, k;
            if (A_ROW) { m = e / CUSET_MM_BK; k = e % CUSET_MM_BK; } else { k = e / CUSET_MM_BM; m = e % CUSET_MM_BM; }
            int gm = m0 + m, gk = k0 + k;
            float x = 0.0f;
            if (gm < M && gk < K) x = A_ROW ? A[(size_t)gm * lda + gk] : A[(size_t)gk * lda + gm];
            As[A_ROW ? m * lda_s + k : k * lda_s + m] = x;
        }
        for (int e = tid; e < CUSET_MM_BK * CUSET_MM_BN; e += CUSET_MM_THREADS) {
            int k, n;
            if (B_ROW) { k = e / CUSET_MM_BN; n = e % CUSET_MM_BN; } else { n = e / CUSET_MM_BK; k = e % CUSET_MM_BK; }
            int gk = k0 + k, gn = n0 + n;
            float x = 0.0f;
            if (gk < K && gn < N) x = B_ROW ? B[(size_t)gk * ldb + gn] : B[(size_t)gn * ldb + gk];
            Bs[B_ROW ? k * ldb_s + n : n * ldb_s + k] = x;
        }
        __syncthreads();
        for (int kk = 0; kk < CUSET_MM_BK; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, LayoutA> af[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, LayoutB> bf[2];
            for (int i = 0; i < 2; i++) {
                int r = wm + 16 * i; // fragment (r.., kk..) of the A tile
                wmma::load_matrix_sync(af[i], As + (A_ROW ? r * lda_s + kk : kk * lda_s + r), lda_s);
                for (int t = 0; t < af[i].num_elements; t++) af[i].x[t] = wmma::__float_to_tf32(af[i].x[t]);
            }
            for (int j = 0; j < 2; j++) {
                int c = wn + 16 * j; // fragment (kk.., c..) of the B tile
                wmma::load_matrix_sync(bf[j], Bs + (B_ROW ? kk * ldb_s + c : c * ldb_s + kk), ldb_s);
                for (int t = 0; t < bf[j].num_elements; t++) bf[j].x[t] = wmma::__float_to_tf32(bf[j].x[t]);
            }
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
        }
        __syncthreads();
    }

    // Epilogue: the accumulators go through shared memory (tiles, as a [64][68] tile), then
    // the block writes the output row by row, consecutive threads on consecutive columns
    // (thread t: elements t, t + 128, ...): coalesced, bounds-checked.
    const int ldc_s = CUSET_MM_BN + CUSET_MM_PAD;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(tiles + (wm + 16 * i) * ldc_s + wn + 16 * j, acc[i][j], ldc_s, wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < CUSET_MM_BM * CUSET_MM_BN; e += CUSET_MM_THREADS) {
        int m = e / CUSET_MM_BN, n = e % CUSET_MM_BN, gm = m0 + m, gn = n0 + n;
        if (gm >= M || gn >= N) continue;
        float v = tiles[m * ldc_s + n];
        size_t i = (size_t)gm * N + gn;
        if (EPI == CUSET_EPI_STORE) {
            out[i] = bias ? v + bias[gn] : v;
        } else if (EPI == CUSET_EPI_ACCUM) {
            out[i] += v;
        } else if (EPI == CUSET_EPI_GELU) {
            v = bias ? v + bias[gn] : v;
            aux[i] = v;
            out[i] = cuset_gelu(v);
        } else { // CUSET_EPI_GELU_BACKWARD
            out[i] = v * cuset_gelu_grad(aux[i]);
        }
    }
}

// ---- column sums (bias and LayerNorm parameter gradients), deterministic ---------------------

// Rows per partial sum. The grouping depends on the shapes only (never on the GPU), and
// a second kernel adds the partials in order, so the sums are reproducible bit for bit.
#define CUSET_COLSUM_ROWS 256

// The column sums of chunk c of CUSET_COLSUM_ROWS rows of dout (N, C), r over its rows:
// pb[c][j] = sum of dout[r][j] (a bias's or a LayerNorm's db), and with NORM also
// pw[c][j] = sum of dout[r][j] * (inp[r][j] - mean[r]) * rstd[r] (a LayerNorm's dw).
// pb, pw (ceil(N / 256), C). Launch: grid (ceil(C / 32), ceil(N / 256)), block (32, 8):
// 32 columns, 8 row strides.
template <bool NORM>
static __global__ void cuset__colsum_partial_kernel(float *pb, float *pw, const float *dout, const float *inp,
                                                    const float *mean, const float *rstd, int N, int C) {
    __shared__ float shb[8][33], shw[NORM ? 8 : 1][33]; // shw: pw's, unused without NORM
    int j = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * CUSET_COLSUM_ROWS;
    int r1 = min(r0 + CUSET_COLSUM_ROWS, N);
    float sb = 0.0f, sw = 0.0f;
    if (j < C)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) {
            float dy = dout[(size_t)r * C + j];
            sb += dy;
            if constexpr (NORM) sw += dy * (inp[(size_t)r * C + j] - mean[r]) * rstd[r];
        }
    shb[threadIdx.y][threadIdx.x] = sb;
    if constexpr (NORM) shw[threadIdx.y][threadIdx.x] = sw;
    __syncthreads();
    if (threadIdx.y == 0 && j < C) {
        float tb = 0.0f, tw = 0.0f;
        for (int i = 0; i < 8; i++) {
            tb += shb[i][threadIdx.x];
            if constexpr (NORM) tw += shw[i][threadIdx.x];
        }
        pb[(size_t)blockIdx.y * C + j] = tb;
        if constexpr (NORM) pw[(size_t)blockIdx.y * C + j] = tw;
    }
}

// dst (n) += sum over c of partial[c][i], c in order. Launch: ceil(n / 256) x 256 threads.
static __global__ void cuset__sum_partials_kernel(float *dst, const float *partial, int nchunks, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int c = 0; c < nchunks; c++) s += partial[(size_t)c * n + i];
    dst[i] += s;
}

// ---- LayerNorm --------------------------------------------------------------------------------

// The row kernels (LayerNorm's, decoding's matrix-vector product) give each row a warp,
// CUSET_ROW_WARPS rows to a block.
#define CUSET_ROW_WARPS 4

// out (N, C) = (inp - mean) * rstd * w + b per row; saves mean and rstd (N). As cuset.h's
// cuset__layernorm_forward. Launch: ceil(N / CUSET_ROW_WARPS) x 32 CUSET_ROW_WARPS threads.
static __global__ void cuset__layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                         const float *b, int N, int C) {
    int row = blockIdx.x * CUSET_ROW_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += x[c];
    float m = cuset__warp_sum(s) / C;
    float v = 0.0f;
    for (int c = lane; c < C; c += 32) v += (x[c] - m) * (x[c] - m);
    float r = 1.0f / sqrtf(cuset__warp_sum(v) / C + CUSET_LN_EPS);
    for (int c = lane; c < C; c += 32) out[(size_t)row * C + c] = (x[c] - m) * r * w[c] + b[c];
    if (lane == 0) { mean[row] = m; rstd[row] = r; }
}

// dinp (N, C) += the gradient through the normalisation, per row, as the first loop of
// cuset.h's cuset__layernorm_backward. Launch: as the forward's.
static __global__ void cuset__layernorm_backward_kernel(float *dinp, const float *dout, const float *inp, const float *w,
                                          const float *mean, const float *rstd, int N, int C) {
    int row = blockIdx.x * CUSET_ROW_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *dy = dout + (size_t)row * C;
    float m = mean[row], r = rstd[row], a = 0.0f, bsum = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float dnorm = w[c] * dy[c];
        a += dnorm;
        bsum += dnorm * (x[c] - m) * r;
    }
    float dnorm_mean = cuset__warp_sum(a) / C, dnorm_norm_mean = cuset__warp_sum(bsum) / C;
    for (int c = lane; c < C; c += 32) {
        float norm = (x[c] - m) * r, dnorm = w[c] * dy[c];
        dinp[(size_t)row * C + c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * r;
    }
}

// ---- elementwise layers -------------------------------------------------------------------------

// out (n) = a + b (the residual stream). Launch: ceil(n / 256) x 256 threads.
static __global__ void cuset__residual_forward_kernel(float *out, const float *a, const float *b, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

// out (n) = gelu(inp) (decoding; training fuses GELU into the matmul). ceil(n / 256) x 256.
static __global__ void cuset__gelu_forward_kernel(float *out, const float *inp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = cuset_gelu(inp[i]);
}

// ---- the embedding --------------------------------------------------------------------------------

// out (BT, C) = wte[inputs[i]] + wpe[i % T]. Launch: ceil(BT C / 256) x 256 threads.
static __global__ void cuset__encoder_forward_kernel(float *out, const int *inputs, const float *wte, const float *wpe,
                                       int BT, int T, int C) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)BT * C) return;
    int i = (int)(idx / C), c = (int)(idx % C);
    out[idx] = wte[(size_t)inputs[i] * C + c] + wpe[(size_t)(i % T) * C + c];
}

// dwpe (T, C) += sum over b of dout[b][t], b in order. Launch: ceil(T C / 256) x 256.
static __global__ void cuset__wpe_backward_kernel(float *dwpe, const float *dout, int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * C) return;
    float s = 0.0f;
    for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + idx];
    dwpe[idx] += s;
}

// The wte gradient in two deterministic passes over the host's token index
// (cuset__build_token_index: positions sorted by token, cut into segments of at most
// CUSET_WTE_SEGMENT positions), so a token at many positions (the padding token at every
// pad) is summed by many blocks, not one.
// Pass 1: partial (nseg, C): segment s's sum of dout over its positions, in increasing order.
// Launch: grid (segments), block min(C, 256) threads striding channels.
#define CUSET_WTE_SEGMENT 32 // bounds a pass-1 block's serial sum; a token at n positions leaves ceil(n / 32) partials
static __global__ void cuset__wte_backward_partial_kernel(float *partial, const float *dout, const int *segment,
                                                          const int *positions, int C) {
    int sg = blockIdx.x, lo = segment[sg], hi = segment[sg + 1];
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float s = 0.0f;
        for (int p = lo; p < hi; p++) s += dout[(size_t)positions[p] * C + c];
        partial[(size_t)sg * C + c] = s;
    }
}
// Pass 2: dwte[tokens[u]] += the partials of token u's segments useg[u] .. useg[u+1]-1, in
// order; no two blocks touch the same row, so no atomics. Launch: as pass 1, grid (tokens).
static __global__ void cuset__wte_backward_sum_kernel(float *dwte, const float *partial, const int *tokens,
                                                      const int *useg, int C) {
    int u = blockIdx.x;
    float *row = dwte + (size_t)tokens[u] * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float s = 0.0f;
        for (int sg = useg[u]; sg < useg[u + 1]; sg++) s += partial[(size_t)sg * C + c];
        row[c] += s;
    }
}

// ---- AdamW and the global gradient norm --------------------------------------------------------

// One AdamW step on the n parameters of one tensor, as cuset_gpt_update: cuset_adamw_one
// with the step's scalars a and the tensor's weight decay wd. Launch: ceil(n / 256) x 256.
static __global__ void cuset__adamw_kernel(float *params, float *m, float *v, const float *grads, size_t n, CusetAdamW a,
                                           float wd) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) cuset_adamw_one(params + i, m + i, v + i, grads[i], a, wd);
}

// The gradient norm in two passes of CUSET_NORM_THREADS threads: CUSET_NORM_BLOCKS
// partial sums, then one block adds them, a thread each. Constants, not functions of the
// GPU, so the grouping (and the result) never changes.
#define CUSET_NORM_BLOCKS 256
#define CUSET_NORM_THREADS 256
static_assert(CUSET_NORM_BLOCKS == CUSET_NORM_THREADS, "pass 2 gives each partial one thread");

// The block's sum of sh[0 .. CUSET_NORM_THREADS - 1] by a fixed tree, left in sh[0].
static __device__ void cuset__norm_tree(double *sh) {
    __syncthreads();
    for (int w = CUSET_NORM_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
}

// Pass 1 of the sum of squares: block b sums x[i]^2 (in double) over i = b*256 + t +
// k*CUSET_NORM_BLOCKS*256 (256 = CUSET_NORM_THREADS), then the tree.
// Launch: CUSET_NORM_BLOCKS x CUSET_NORM_THREADS.
static __global__ void cuset__sumsq_partial_kernel(double *partial, const float *x, size_t n) {
    __shared__ double sh[CUSET_NORM_THREADS];
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * CUSET_NORM_THREADS + threadIdx.x; i < n;
         i += (size_t)CUSET_NORM_BLOCKS * CUSET_NORM_THREADS)
        s += (double)x[i] * x[i];
    sh[threadIdx.x] = s;
    cuset__norm_tree(sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

// Pass 2: out[0] = sqrt(sum of the CUSET_NORM_BLOCKS partials), the same tree.
// Launch: 1 x CUSET_NORM_THREADS.
static __global__ void cuset__sumsq_final_kernel(float *out, const double *partial) {
    __shared__ double sh[CUSET_NORM_THREADS];
    sh[threadIdx.x] = partial[threadIdx.x];
    cuset__norm_tree(sh);
    if (threadIdx.x == 0) out[0] = (float)sqrt(sh[0]);
}

// ---- decoding: one position --------------------------------------------------------------------

// x (C) = wte[token] + wpe[t]. Launch: ceil(C / 256) x 256.
static __global__ void cuset__embed_one_kernel(float *x, const float *wte, const float *wpe, int token, int t, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) x[c] = wte[(size_t)token * C + c] + wpe[(size_t)t * C + c];
}

// out (OC) = W (OC, IC) x + b (b may be NULL), as cuset.h's cuset__matvec: one warp per output, its
// lanes striding the row (coalesced), a butterfly sum. Launch: cuset__matvec.
static __global__ void cuset__matvec_kernel(float *out, const float *x, const float *w, const float *b, int IC, int OC) {
    int o = blockIdx.x * CUSET_ROW_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (o >= OC) return;
    const float *row = w + (size_t)o * IC;
    float s = 0.0f;
    for (int i = lane; i < IC; i += 32) s += row[i] * x[i];
    s = cuset__warp_sum(s);
    if (lane == 0) out[o] = s + (b ? b[o] : 0.0f);
}

// Launches cuset__matvec_kernel: ceil(OC / CUSET_ROW_WARPS) x 32 CUSET_ROW_WARPS threads.
static void cuset__matvec(float *out, const float *x, const float *w, const float *b, int IC, int OC, cudaStream_t s) {
    cuset__matvec_kernel<<<cuset__ceil_div(OC, CUSET_ROW_WARPS), 32 * CUSET_ROW_WARPS, 0, s>>>(out, x, w, b, IC, OC);
    CUSET_CHECK_LAUNCH();
}

// Attention of the new position t over the cache: for each head h, scores q . k[t2] /
// sqrt(hs) for t2 <= t (k[t] was just written), softmax, y = sum att v. att (NH, maxT) is
// scratch. Launch: NH blocks of 256 threads; threads stride t2, then channels.
static __global__ void cuset__decode_attention_kernel(float *y, float *att, const float *qkv, const float *kc, const float *vc,
                                        int t, int C, int NH, int maxT) {
    __shared__ float red[256];
    int h = blockIdx.x, hs = C / NH, tid = threadIdx.x;
    const float *q = qkv + h * hs;
    float *a = att + (size_t)h * maxT, scale = 1.0f / sqrtf((float)hs);
    float mx = -INFINITY;
    for (int t2 = tid; t2 <= t; t2 += blockDim.x) {
        const float *k = kc + (size_t)t2 * C + h * hs;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += q[i] * k[i];
        a[t2] = s * scale;
        mx = fmaxf(mx, a[t2]);
    }
    red[tid] = mx;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (tid < w) red[tid] = fmaxf(red[tid], red[tid + w]);
        __syncthreads();
    }
    mx = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int t2 = tid; t2 <= t; t2 += blockDim.x) { a[t2] = expf(a[t2] - mx); sum += a[t2]; }
    red[tid] = sum;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (tid < w) red[tid] += red[tid + w];
        __syncthreads();
    }
    sum = red[0];
    for (int i = tid; i < hs; i += blockDim.x) {
        float acc = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) acc += a[t2] / sum * vc[(size_t)t2 * C + h * hs + i];
        y[h * hs + i] = acc;
    }
}

// ---- host launchers ---------------------------------------------------------------------------------

// Rows of a matmul's output are blocks along grid.y, which CUDA caps at 65535 (4M rows).
static dim3 cuset__matmul_grid(int M, int N) {
    if (cuset__ceil_div(M, CUSET_MM_BM) > 65535) {
        fprintf(stderr, "cuset: matmul with %d rows is beyond the grid's 65535 x 64\n", M);
        exit(1);
    }
    return dim3(cuset__ceil_div(N, CUSET_MM_BN), cuset__ceil_div(M, CUSET_MM_BM));
}

// db (C) += the column sums of dout (N, C); with dw non-NULL (a LayerNorm: inp, mean and
// rstd as saved by its forward) also dw (C) += the column sums of dout * the normalised inp.
// partial holds ceil(N / 256) * C floats, twice that with dw.
static void cuset__colsums(float *db, float *dw, const float *dout, const float *inp, const float *mean,
                           const float *rstd, int N, int C, float *partial, cudaStream_t s) {
    int nchunks = cuset__ceil_div(N, CUSET_COLSUM_ROWS);
    dim3 grid(cuset__ceil_div(C, 32), nchunks), block(32, 8);
    float *pb = partial, *pw = partial + (size_t)nchunks * C;
    if (dw) cuset__colsum_partial_kernel<true><<<grid, block, 0, s>>>(pb, pw, dout, inp, mean, rstd, N, C);
    else cuset__colsum_partial_kernel<false><<<grid, block, 0, s>>>(pb, NULL, dout, NULL, NULL, NULL, N, C);
    CUSET_CHECK_LAUNCH();
    cuset__sum_partials_kernel<<<cuset__ceil_div(C, 256), 256, 0, s>>>(db, pb, nchunks, C);
    CUSET_CHECK_LAUNCH();
    if (dw) {
        cuset__sum_partials_kernel<<<cuset__ceil_div(C, 256), 256, 0, s>>>(dw, pw, nchunks, C);
        CUSET_CHECK_LAUNCH();
    }
}

// out (N, OC) = inp (N, IC) W (OC, IC)^T + bias, as cuset__matmul_forward. With pre
// non-NULL the GELU is fused: pre = that product, out = gelu(pre). A layer's rows are N, as
// in cuset.h; the kernel, a plain GEMM, calls its output (M, N): here (M, N, K) = (N, OC, IC).
static void cuset__matmul_forward(float *out, float *pre, const float *inp, const float *w, const float *bias, int N, int IC,
                           int OC, cudaStream_t s) {
    dim3 grid = cuset__matmul_grid(N, OC);
    if (pre) cuset__matmul_kernel<true, false, CUSET_EPI_GELU><<<grid, CUSET_MM_THREADS, 0, s>>>(out, pre, inp, IC, w, IC, bias, N, OC, IC);
    else cuset__matmul_kernel<true, false, CUSET_EPI_STORE><<<grid, CUSET_MM_THREADS, 0, s>>>(out, nullptr, inp, IC, w, IC, bias, N, OC, IC);
    CUSET_CHECK_LAUNCH();
}

// Given dout (N, OC), as cuset__matmul_backward except that dinp is overwritten:
// dinp (N, IC) = dout W (times gelu'(pre) when pre is non-NULL: the GELU's backward fused),
// dw (OC, IC) += dout^T inp, dbias (OC) += column sums of dout (dbias may be NULL; partial
// holds ceil(N / 256) * OC floats). The kernel's (M, N, K): (N, IC, OC) for dinp, (OC, IC, N)
// for dw.
static void cuset__matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w,
                            const float *pre, int N, int IC, int OC, float *partial, cudaStream_t s) {
    dim3 gi = cuset__matmul_grid(N, IC);
    if (pre) cuset__matmul_kernel<true, true, CUSET_EPI_GELU_BACKWARD><<<gi, CUSET_MM_THREADS, 0, s>>>(dinp, (float *)pre, dout, OC, w, IC, nullptr, N, IC, OC);
    else cuset__matmul_kernel<true, true, CUSET_EPI_STORE><<<gi, CUSET_MM_THREADS, 0, s>>>(dinp, nullptr, dout, OC, w, IC, nullptr, N, IC, OC);
    CUSET_CHECK_LAUNCH();
    dim3 gw = cuset__matmul_grid(OC, IC);
    cuset__matmul_kernel<false, true, CUSET_EPI_ACCUM><<<gw, CUSET_MM_THREADS, 0, s>>>(dw, nullptr, dout, OC, inp, IC, nullptr, OC, IC, N);
    CUSET_CHECK_LAUNCH();
    if (dbias) cuset__colsums(dbias, NULL, dout, NULL, NULL, NULL, N, OC, partial, s);
}

static void cuset__layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                              int N, int C, cudaStream_t s) {
    cuset__layernorm_forward_kernel<<<cuset__ceil_div(N, CUSET_ROW_WARPS), 32 * CUSET_ROW_WARPS, 0, s>>>(out, mean, rstd, inp, w, b, N, C);
    CUSET_CHECK_LAUNCH();
}

// dinp += ..., dw += ..., db += ... as cuset__layernorm_backward; partial holds
// 2 * ceil(N / 256) * C floats.
static void cuset__layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, int N, int C, float *partial, cudaStream_t s) {
    cuset__layernorm_backward_kernel<<<cuset__ceil_div(N, CUSET_ROW_WARPS), 32 * CUSET_ROW_WARPS, 0, s>>>(dinp, dout, inp, w, mean, rstd, N, C);
    CUSET_CHECK_LAUNCH();
    cuset__colsums(db, dw, dout, inp, mean, rstd, N, C, partial, s);
}

static void cuset__residual_forward(float *out, const float *a, const float *b, size_t n, cudaStream_t s) {
    cuset__residual_forward_kernel<<<cuset__ceil_div((long)n, 256), 256, 0, s>>>(out, a, b, n);
    CUSET_CHECK_LAUNCH();
}

static void cuset__encoder_forward(float *out, const int *inputs, const float *wte, const float *wpe, int BT, int T, int C,
                            cudaStream_t s) {
    cuset__encoder_forward_kernel<<<cuset__ceil_div((long)BT * C, 256), 256, 0, s>>>(out, inputs, wte, wpe, BT, T, C);
    CUSET_CHECK_LAUNCH();
}

// The embedding's token index on the host, for the wte gradient: the distinct tokens of
// inputs (BT) in increasing order (tokens, nu of them), all positions sorted by token then
// position (positions), cut into segments of at most CUSET_WTE_SEGMENT positions of one token
// (segment s: positions[segment[s]] .. positions[segment[s+1]-1]; token u owns segments
// useg[u] .. useg[u+1]-1). tokens and positions hold BT ints, useg and segment BT + 1.
// order (BT) is scratch.
typedef struct { int token, pos; } CusetTokPos;
typedef struct { int *tokens, *useg, *segment, *positions; int nu, nseg; } CusetTokenIndex;
static int cuset__cmp_tokpos(const void *a, const void *b) {
    const CusetTokPos *x = (const CusetTokPos *)a, *y = (const CusetTokPos *)b;
    return x->token != y->token ? (x->token < y->token ? -1 : 1) : (x->pos < y->pos ? -1 : x->pos > y->pos);
}
static void cuset__build_token_index(const int *inputs, int BT, CusetTokPos *order, CusetTokenIndex *ix) {
    for (int i = 0; i < BT; i++) { order[i].token = inputs[i]; order[i].pos = i; }
    qsort(order, BT, sizeof *order, cuset__cmp_tokpos);
    int nu = 0, nseg = 0;
    for (int i = 0; i < BT; i++) {
        int first = i == 0 || order[i].token != order[i - 1].token;
        if (first) { ix->tokens[nu] = order[i].token; ix->useg[nu++] = nseg; }
        if (first || i - ix->segment[nseg - 1] == CUSET_WTE_SEGMENT) ix->segment[nseg++] = i;
        ix->positions[i] = order[i].pos;
    }
    ix->useg[nu] = nseg;
    ix->segment[nseg] = BT;
    ix->nu = nu;
    ix->nseg = nseg;
}
// Points ix's arrays into base (4 BT + 2 ints): tokens, useg, segment, positions.
static void cuset__token_index_carve(CusetTokenIndex *ix, int *base, int BT) {
    ix->tokens = base;
    ix->useg = base + BT;
    ix->segment = base + 2 * BT + 1;
    ix->positions = base + 3 * BT + 2;
}

// dwte += and dwpe += the embedding's gradients from dout (B, T, C), given the token index
// ix (device arrays; nu and nseg as built on the host); partial: scratch of nseg * C floats.
static void cuset__encoder_backward(float *dwte, float *dwpe, const float *dout, const CusetTokenIndex *ix,
                                    float *partial, int B, int T, int C, cudaStream_t s) {
    cuset__wpe_backward_kernel<<<cuset__ceil_div((long)T * C, 256), 256, 0, s>>>(dwpe, dout, B, T, C);
    CUSET_CHECK_LAUNCH();
    if (ix->nu > 0) {
        int threads = C < 256 ? C : 256;
        cuset__wte_backward_partial_kernel<<<ix->nseg, threads, 0, s>>>(partial, dout, ix->segment, ix->positions, C);
        CUSET_CHECK_LAUNCH();
        cuset__wte_backward_sum_kernel<<<ix->nu, threads, 0, s>>>(dwte, partial, ix->tokens, ix->useg, C);
        CUSET_CHECK_LAUNCH();
    }
}

// out[0] (device) = the L2 norm of x (n), deterministic; partial holds CUSET_NORM_BLOCKS doubles.
static void cuset__global_norm(float *out, const float *x, size_t n, double *partial, cudaStream_t s) {
    cuset__sumsq_partial_kernel<<<CUSET_NORM_BLOCKS, CUSET_NORM_THREADS, 0, s>>>(partial, x, n);
    CUSET_CHECK_LAUNCH();
    cuset__sumsq_final_kernel<<<1, CUSET_NORM_THREADS, 0, s>>>(out, partial);
    CUSET_CHECK_LAUNCH();
}

// ---- the model on the device: one allocation, named pointers ---------------------------------

// Backward scratch, reused layer after layer.
typedef struct {
    float *dresidual; // (B, T, C)
    float *dbt_c;     // (B, T, C)
    float *dbt_c2;    // (B, T, C)
    float *dqkv;      // (B, T, 3C)
    float *dfch;      // (B, T, 4C)
    float *delta;     // (B, NH, T)  attention backward scratch
} CusetCudaGradActs;
#define CUSET_CUDA_NUM_GRAD_ACTS 6

struct CusetCudaModel {
    CusetConfig cfg;
    int B, T;
    size_t num_params, tensor_sizes[CUSET_NUM_TENSORS];
    cudaStream_t stream;
    void *memory;                       // the one device allocation; everything below points into it
    size_t memory_bytes;
    float *params, *grads, *m, *v;      // num_params each, checkpoint order
    float *ref;                         // ASFT's frozen reference parameters, or NULL
    CusetParams p, g, rp;               // named tensors of params, grads, ref
    int has_moments;                    // the moments hold optimizer state (uploaded or updated)
    CusetActs acts;
    CusetCudaGradActs gacts;
    float *ref_logits;                  // (B, T, Vp) ASFT: the reference's logits, or NULL
    float *partial;                     // column-sum partials: ceil(BT / 256) x 4C, the most a bias
                                        // (OC <= 4C) or a LayerNorm (2C) needs
    double *norm_partial;               // CUSET_NORM_BLOCKS
    float *norm;                        // 1: the gradient norm
    void *loss_workspace;               // cuset_cuda_loss_workspace_bytes(B, T)
    CusetBatch batch;                   // the micro-batch
    CusetTokenIndex emb;                // its token index (4 BT + 2 ints), for the wte gradient
    // The host side, page-locked so that copies from and to it are asynchronous: the
    // micro-batch and its token index as uploaded (free again once the event `staged` has
    // passed; stage_bytes, laid out as batch and emb above), and the loss's per-sample sums
    // of each micro-batch of a step (B x 6 doubles for each of loss_sums_slots), added into
    // the stats after the step's one sync.
    void *h_stage;
    size_t stage_bytes;
    CusetBatch h_batch;
    CusetTokenIndex h_emb;
    cudaEvent_t staged;
    double *h_loss_sums;
    int loss_sums_slots;
    CusetTokPos *h_order;               // scratch of cuset__build_token_index
};

// A bump allocator over one block: measure with base NULL, then carve the real block.
typedef struct { char *base; size_t off; } CusetBump;
static void *cuset__bump(CusetBump *b, size_t bytes) {
    size_t o = (b->off + 255) & ~(size_t)255;
    b->off = o + bytes;
    return b->base ? b->base + o : NULL;
}

// A micro-batch (B, T) and its token index, carved from b in one order for the device
// block and the page-locked staging block: both carvings start on a 256-byte boundary, so
// the two are laid out alike and one copy uploads them.
static void cuset__batch_carve(CusetBump *b, CusetBatch *batch, CusetTokenIndex *ix, int B, int T) {
    size_t BT = (size_t)B * T;
    batch->B = B; batch->T = T;
    batch->inputs = (int *)cuset__bump(b, BT * sizeof(int));
    batch->targets = (int *)cuset__bump(b, BT * sizeof(int));
    batch->tgt_start = (int *)cuset__bump(b, B * sizeof(int));
    batch->tgt_len = (int *)cuset__bump(b, B * sizeof(int));
    batch->is_target = (unsigned char *)cuset__bump(b, BT);
    batch->is_cuda = (unsigned char *)cuset__bump(b, BT);
    int *emb = (int *)cuset__bump(b, (4 * BT + 2) * sizeof(int));
    if (b->base) cuset__token_index_carve(ix, emb, (int)BT);
}

static size_t cuset__model_layout(CusetCudaModel *g, char *base, int with_ref) {
    CusetBump b = {base, 0};
    size_t C = g->cfg.n_embd, NH = g->cfg.n_head, Vp = g->cfg.padded_vocab_size;
    size_t B = g->B, T = g->T, BT = B * T, np = g->num_params, F = sizeof(float);
    g->params = (float *)cuset__bump(&b, np * F);
    g->grads = (float *)cuset__bump(&b, np * F);
    g->m = (float *)cuset__bump(&b, np * F);
    g->v = (float *)cuset__bump(&b, np * F);
    g->ref = with_ref ? (float *)cuset__bump(&b, np * F) : NULL;
    size_t a[CUSET_NUM_ACTS];
    cuset_acts_sizes(&g->cfg, g->B, g->T, a);
    float **ap = (float **)&g->acts;
    for (int i = 0; i < CUSET_NUM_ACTS; i++) ap[i] = (float *)cuset__bump(&b, a[i] * F);
    size_t d[CUSET_CUDA_NUM_GRAD_ACTS] = {BT * C, BT * C, BT * C, BT * 3 * C, BT * 4 * C, B * NH * T};
    float **dp = (float **)&g->gacts;
    for (int i = 0; i < CUSET_CUDA_NUM_GRAD_ACTS; i++) dp[i] = (float *)cuset__bump(&b, d[i] * F);
    g->ref_logits = with_ref ? (float *)cuset__bump(&b, BT * Vp * F) : NULL;
    g->partial = (float *)cuset__bump(&b, (size_t)cuset__ceil_div(BT, CUSET_COLSUM_ROWS) * 4 * C * F);
    g->norm_partial = (double *)cuset__bump(&b, CUSET_NORM_BLOCKS * sizeof(double));
    g->norm = (float *)cuset__bump(&b, F);
    g->loss_workspace = cuset__bump(&b, cuset_cuda_loss_workspace_bytes((int)B, (int)T));
    cuset__batch_carve(&b, &g->batch, &g->emb, (int)B, (int)T);
    if (base) {
        cuset__point((float **)&g->p, CUSET_NUM_TENSORS, g->tensor_sizes, g->params);
        cuset__point((float **)&g->g, CUSET_NUM_TENSORS, g->tensor_sizes, g->grads);
        if (g->ref) cuset__point((float **)&g->rp, CUSET_NUM_TENSORS, g->tensor_sizes, g->ref);
    }
    return b.off;
}

static void cuset__copy_tensor_sizes(CusetCudaModel *g, const CusetGPT *m) {
    g->cfg = m->cfg;
    g->num_params = m->num_params;
    memcpy(g->tensor_sizes, m->tensor_sizes, sizeof g->tensor_sizes);
}

// Uploads one micro-batch and its token index (for the embedding's backward) through the
// page-locked staging area: the host waits only until the previous micro-batch's copies
// have left it (they run before that micro-batch's kernels), never for the kernels.
static void cuset__upload_batch(CusetCudaModel *g, const CusetBatch *b) {
    int B = g->B, T = g->T, BT = B * T;
    cudaStream_t s = g->stream;
    CusetBatch *h = &g->h_batch;
    CUSET_CHECK(cudaEventSynchronize(g->staged));
    memcpy(h->inputs, b->inputs, BT * sizeof(int));
    memcpy(h->targets, b->targets, BT * sizeof(int));
    memcpy(h->is_target, b->is_target, BT);
    memcpy(h->is_cuda, b->is_cuda, BT);
    memcpy(h->tgt_start, b->tgt_start, B * sizeof(int));
    memcpy(h->tgt_len, b->tgt_len, B * sizeof(int));
    cuset__build_token_index(b->inputs, BT, g->h_order, &g->h_emb);
    g->emb.nu = g->h_emb.nu;
    g->emb.nseg = g->h_emb.nseg;
    // the batch and the whole index at once: the device's are laid out as the staging block
    CUSET_CHECK(cudaMemcpyAsync(g->batch.inputs, h->inputs, g->stage_bytes, cudaMemcpyHostToDevice, s));
    CUSET_CHECK(cudaEventRecord(g->staged, s));
}

// The forward pass of cuset_gpt_forward with parameters p (the model's or the reference's)
// on the uploaded micro-batch; fills g->acts, logits last.
static void cuset__gpt_forward(CusetCudaModel *g, const CusetParams *p) {
    int B = g->B, T = g->T, L = g->cfg.n_layer, C = g->cfg.n_embd, NH = g->cfg.n_head;
    int Vp = g->cfg.padded_vocab_size, BT = B * T;
    CusetActs a = g->acts;
    cudaStream_t s = g->stream;
    size_t btc = (size_t)BT * C;
    float *tmp = g->gacts.dbt_c; // the projections' output before the residual add
    cuset__encoder_forward(a.encoded, g->batch.inputs, p->wte, p->wpe, BT, T, C, s);
    for (int l = 0; l < L; l++) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * btc;
        size_t lc = (size_t)l * btc;
        float *ln1 = a.ln1 + lc, *qkv = a.qkv + 3 * lc, *atty = a.atty + lc, *res2 = a.residual2 + lc;
        float *ln2 = a.ln2 + lc, *fch = a.fch + 4 * lc, *fchg = a.fch_gelu + 4 * lc, *res3 = a.residual3 + lc;
        cuset__layernorm_forward(ln1, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, residual, p->ln1w + l * C, p->ln1b + l * C, BT, C, s);
        cuset__matmul_forward(qkv, NULL, ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, BT, C, 3 * C, s);
        cuset__cuda_attention_forward(atty, a.att_lse + (size_t)l * B * NH * T, qkv, B, T, C, NH, s);
        cuset__matmul_forward(tmp, NULL, atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, BT, C, C, s);
        cuset__residual_forward(res2, residual, tmp, btc, s);
        cuset__layernorm_forward(ln2, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, res2, p->ln2w + l * C, p->ln2b + l * C, BT, C, s);
        cuset__matmul_forward(fchg, fch, ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, BT, C, 4 * C, s);
        cuset__matmul_forward(tmp, NULL, fchg, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, BT, 4 * C, C, s);
        cuset__residual_forward(res3, res2, tmp, btc, s);
    }
    cuset__layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, a.residual3 + (size_t)(L - 1) * btc, p->lnfw, p->lnfb, BT, C, s);
    cuset__matmul_forward(a.logits, NULL, a.lnf, p->wte, NULL, BT, C, Vp, s);
}

// The backward pass of cuset_gpt_backward from acts.logits holding dlogits; accumulates
// into g->grads.
static void cuset__gpt_backward(CusetCudaModel *g) {
    int B = g->B, T = g->T, L = g->cfg.n_layer, C = g->cfg.n_embd, NH = g->cfg.n_head;
    int Vp = g->cfg.padded_vocab_size, BT = B * T;
    CusetParams p = g->p, gr = g->g;
    CusetActs a = g->acts;
    CusetCudaGradActs d = g->gacts;
    cudaStream_t s = g->stream;
    size_t btc = (size_t)BT * C;
    // the head (tied to wte) and the final LayerNorm: dresidual = d(loss)/d(last layer output)
    cuset__matmul_backward(d.dbt_c, gr.wte, NULL, a.logits, a.lnf, p.wte, NULL, BT, C, Vp, g->partial, s);
    CUSET_CHECK(cudaMemsetAsync(d.dresidual, 0, btc * sizeof(float), s));
    cuset__layernorm_backward(d.dresidual, gr.lnfw, gr.lnfb, d.dbt_c, a.residual3 + (size_t)(L - 1) * btc, p.lnfw,
                       a.lnf_mean, a.lnf_rstd, BT, C, g->partial, s);
    for (int l = L - 1; l >= 0; l--) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * btc;
        size_t lc = (size_t)l * btc;
        // MLP block: res3 = res2 + fcproj(gelu(fc(ln2(res2)))); dfch = (dres3 fcprojw) * gelu'(fch)
        cuset__matmul_backward(d.dfch, gr.fcprojw + (size_t)l * 4 * C * C, gr.fcprojb + l * C, d.dresidual, a.fch_gelu + 4 * lc,
                        p.fcprojw + (size_t)l * 4 * C * C, a.fch + 4 * lc, BT, 4 * C, C, g->partial, s);
        cuset__matmul_backward(d.dbt_c, gr.fcw + (size_t)l * 4 * C * C, gr.fcb + l * 4 * C, d.dfch, a.ln2 + lc,
                        p.fcw + (size_t)l * 4 * C * C, NULL, BT, C, 4 * C, g->partial, s);
        cuset__layernorm_backward(d.dresidual, gr.ln2w + l * C, gr.ln2b + l * C, d.dbt_c, a.residual2 + lc, p.ln2w + l * C,
                           a.ln2_mean + l * BT, a.ln2_rstd + l * BT, BT, C, g->partial, s);
        // attention block: res2 = residual + attproj(attention(qkv(ln1(residual))))
        cuset__matmul_backward(d.dbt_c, gr.attprojw + (size_t)l * C * C, gr.attprojb + l * C, d.dresidual, a.atty + lc,
                        p.attprojw + (size_t)l * C * C, NULL, BT, C, C, g->partial, s);
        cuset__cuda_attention_backward(d.dqkv, d.delta, d.dbt_c, a.qkv + 3 * lc, a.atty + lc,
                                       a.att_lse + (size_t)l * B * NH * T, B, T, C, NH, s);
        cuset__matmul_backward(d.dbt_c2, gr.qkvw + (size_t)l * 3 * C * C, gr.qkvb + l * 3 * C, d.dqkv, a.ln1 + lc,
                        p.qkvw + (size_t)l * 3 * C * C, NULL, BT, C, 3 * C, g->partial, s);
        cuset__layernorm_backward(d.dresidual, gr.ln1w + l * C, gr.ln1b + l * C, d.dbt_c2, residual, p.ln1w + l * C,
                           a.ln1_mean + l * BT, a.ln1_rstd + l * BT, BT, C, g->partial, s);
    }
    cuset__encoder_backward(gr.wte, gr.wpe, d.dresidual, &g->emb, d.dbt_c, B, T, C, s); // dbt_c: free scratch of BT * C
}

// Page-locked room for the loss's per-sample sums of n micro-batches (B x 6 doubles each).
static double *cuset__loss_sums_room(CusetCudaModel *g, int n) {
    if (n > g->loss_sums_slots) {
        CUSET_CHECK(cudaStreamSynchronize(g->stream)); // no copy into the old room is in flight
        if (g->h_loss_sums) CUSET_CHECK(cudaFreeHost(g->h_loss_sums));
        CUSET_CHECK(cudaMallocHost(&g->h_loss_sums, (size_t)n * CUSET_LOSS_SAMPLE_FIELDS * g->B * sizeof(double)));
        g->loss_sums_slots = n;
    }
    return g->h_loss_sums;
}

// Forward (the reference's first for ASFT) and the fused loss on the uploaded micro-batch;
// the loss's per-sample sums go to sums (page-locked, B x 6 doubles) without waiting, or
// nowhere when sums is NULL: add them with cuset__loss_stats_add after a sync.
static int cuset__forward_loss(CusetCudaModel *g, const CusetObjective *obj, float inv_norm, double *sums, char *err,
                        size_t errlen) {
    const float *ref_logits = NULL;
    size_t nlogits = (size_t)g->B * g->T * g->cfg.padded_vocab_size;
    if (obj->kind == CUSET_OBJ_ASFT) {
        if (!g->ref) { snprintf(err, errlen, "ASFT needs the reference model: pass ref to cuset_cuda_model_new"); return -1; }
        cuset__gpt_forward(g, &g->rp);
        CUSET_CHECK(cudaMemcpyAsync(g->ref_logits, g->acts.logits, nlogits * sizeof(float), cudaMemcpyDeviceToDevice,
                                    g->stream));
        ref_logits = g->ref_logits;
    }
    cuset__gpt_forward(g, &g->p);
    const CusetBatch *b = &g->batch;
    int rc = cuset_cuda_loss(g->acts.logits, ref_logits, b->targets, b->is_target, b->is_cuda, b->tgt_start,
                             b->tgt_len, g->B, g->T, g->cfg.vocab_size, g->cfg.padded_vocab_size, obj, inv_norm,
                             g->loss_workspace, NULL, (void *)g->stream);
    if (rc) {
        snprintf(err, errlen, "the fused loss failed: %s", cudaGetErrorString((cudaError_t)rc));
        return -1;
    }
    if (sums) {
        CusetLossWork w;
        cuset__loss_work(g->loss_workspace, g->B, g->T, &w);
        CUSET_CHECK(cudaMemcpyAsync(sums, w.sample, CUSET_LOSS_SAMPLE_FIELDS * (size_t)g->B * sizeof(double),
                                    cudaMemcpyDeviceToHost, g->stream));
    }
    return 0;
}

// ---- the C ABI --------------------------------------------------------------------------------------

// flag (1 int) = 1: when this runs, the build holds code that the device can run (machine
// code for its architecture, or PTX that the driver compiles for it). Launch: 1 x 1.
static __global__ void cuset__probe_kernel(int *flag) { *flag = 1; }

#define CUSET__STR(...) #__VA_ARGS__
#define CUSET__XSTR(x) CUSET__STR(x)
#ifdef __CUDA_ARCH_LIST__
#define CUSET__BUILT_FOR "compute " CUSET__XSTR(__CUDA_ARCH_LIST__)
#else
#define CUSET__BUILT_FOR "the architectures in NVCCFLAGS"
#endif

// Launches cuset__probe_kernel on device 0 (once per process; the answer is kept): 0 and
// why when no kernel of this build runs there.
static int cuset__probe_device(const cudaDeviceProp *prop, char *why, size_t n) {
    static int probed = 0; // 0: not yet, 1: runs, -1: does not
    static char probe_why[512]; // holds the longest message below: the name and error cut to 100 and 160 characters
    if (!probed) {
        int *d = NULL, flag = 0;
        cudaError_t e = cudaMalloc(&d, sizeof(int));
        if (e == cudaSuccess) {
            cuset__probe_kernel<<<1, 1>>>(d);
            e = cudaGetLastError();
            if (e == cudaSuccess) e = cudaMemcpy(&flag, d, sizeof(int), cudaMemcpyDeviceToHost);
            cudaFree(d);
        }
        if (e == cudaSuccess && flag == 1) probed = 1;
        else {
            snprintf(probe_why, sizeof probe_why, "%.100s (sm_%d%d) runs no kernel of this build (%s): %.160s; rebuild cuset.cu "
                     "with -gencode arch=compute_%d%d,code=sm_%d%d", prop->name, prop->major, prop->minor,
                     CUSET__BUILT_FOR, e == cudaSuccess ? "the test kernel wrote nothing" : cudaGetErrorString(e),
                     prop->major, prop->minor, prop->major, prop->minor);
            cudaGetLastError(); // clear it
            probed = -1;
        }
    }
    if (probed < 0 && why && n) snprintf(why, n, "%s", probe_why);
    return probed > 0;
}

extern "C" int cuset_cuda_available(char *why, size_t n) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        if (why && n) snprintf(why, n, "cudaGetDeviceCount: %s (error %d)",
                               cudaGetErrorString(e), (int)e);
        cudaGetLastError(); // clear it
        return 0;
    }
    if (count == 0) {
        if (why && n) snprintf(why, n, "no CUDA device found");
        return 0;
    }
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) {
        if (why && n) snprintf(why, n, "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
        return 0;
    }
    if (prop.major < 8) {
        if (why && n) snprintf(why, n, "%s has compute capability %d.%d; the backend needs 8.0 or newer (tf32 tensor cores)",
                               prop.name, prop.major, prop.minor);
        return 0;
    }
    if (!cuset__probe_device(&prop, why, n)) return 0;
    if (why && n) snprintf(why, n, "%s", prop.name);
    return 1;
}

extern "C" CusetCudaModel *cuset_cuda_model_new(const CusetGPT *m, const CusetGPT *ref, int B, int T, char *err,
                                                size_t errlen) {
    if (!cuset_cuda_available(err, errlen)) return NULL;
    if (B < 1 || T < 1 || T > m->cfg.max_seq_len) {
        snprintf(err, errlen, "batch %d x %d does not fit the model (context %d)", B, T, m->cfg.max_seq_len);
        return NULL;
    }
    if (ref && memcmp(&ref->cfg, &m->cfg, sizeof m->cfg)) { // (the same count of parameters is not the same model)
        snprintf(err, errlen, "the reference model has another configuration");
        return NULL;
    }
    int C = m->cfg.n_embd, NH = m->cfg.n_head;
    if (!cuset__attention_head_size_ok(C / NH)) {
        snprintf(err, errlen, "head size %d (%d channels / %d heads): the attention kernels take " CUSET__ATT_HEAD_SIZES,
                 C / NH, C, NH);
        return NULL;
    }
    // a matmul's rows (grid.y blocks of CUSET_MM_BM): the batch's B x T, and the head's
    // weight gradient's Vp (the other weights' gradients have at most 4C <= 65536 rows, as
    // cuset_config_check keeps C <= 16384: at most 1024 blocks)
    if (cuset__ceil_div((long)B * T, CUSET_MM_BM) > 65535) {
        snprintf(err, errlen, "batch %d x %d: a matmul's rows are at most 65535 x %d", B, T, CUSET_MM_BM);
        return NULL;
    }
    if (cuset__ceil_div((long)m->cfg.padded_vocab_size, CUSET_MM_BM) > 65535) {
        snprintf(err, errlen, "vocabulary %d (padded): the head's weight gradient, a matmul with a row per token, has "
                 "at most 65535 x %d rows", m->cfg.padded_vocab_size, CUSET_MM_BM);
        return NULL;
    }
    CusetCudaModel *g = (CusetCudaModel *)cuset__host_calloc(1, sizeof *g);
    cuset__copy_tensor_sizes(g, m);
    g->B = B; g->T = T;
    g->memory_bytes = cuset__model_layout(g, NULL, ref != NULL);
    cudaError_t e = cudaMalloc(&g->memory, g->memory_bytes);
    if (e != cudaSuccess) {
        cudaGetLastError(); // clear it, or the next launch check would report it
        snprintf(err, errlen, "cudaMalloc of %.1f MB for the model and a %d x %d batch failed: %s", g->memory_bytes / 1e6,
                 B, T, cudaGetErrorString(e));
        free(g);
        return NULL;
    }
    cuset__model_layout(g, (char *)g->memory, ref != NULL);
    CUSET_CHECK(cudaStreamCreate(&g->stream));
    size_t bytes = m->num_params * sizeof(float);
    CUSET_CHECK(cudaMemcpy(g->params, m->params_memory, bytes, cudaMemcpyHostToDevice));
    CUSET_CHECK(cudaMemset(g->grads, 0, bytes));
    if (m->m_memory && m->v_memory) {
        CUSET_CHECK(cudaMemcpy(g->m, m->m_memory, bytes, cudaMemcpyHostToDevice));
        CUSET_CHECK(cudaMemcpy(g->v, m->v_memory, bytes, cudaMemcpyHostToDevice));
        g->has_moments = 1;
    } else {
        CUSET_CHECK(cudaMemset(g->m, 0, bytes));
        CUSET_CHECK(cudaMemset(g->v, 0, bytes));
    }
    if (ref) CUSET_CHECK(cudaMemcpy(g->ref, ref->params_memory, bytes, cudaMemcpyHostToDevice));
    CusetBump hb = {NULL, 0};
    cuset__batch_carve(&hb, &g->h_batch, &g->h_emb, B, T); // measure, then carve the page-locked block
    g->stage_bytes = hb.off;
    CUSET_CHECK(cudaMallocHost(&g->h_stage, g->stage_bytes));
    hb.base = (char *)g->h_stage;
    hb.off = 0;
    cuset__batch_carve(&hb, &g->h_batch, &g->h_emb, B, T);
    CUSET_CHECK(cudaEventCreateWithFlags(&g->staged, cudaEventDisableTiming));
    g->h_order = (CusetTokPos *)cuset__host_calloc((size_t)B * T, sizeof(CusetTokPos));
    return g;
}

extern "C" void cuset_cuda_model_free(CusetCudaModel *g) {
    if (!g) return;
    CUSET_CHECK(cudaStreamSynchronize(g->stream));
    CUSET_CHECK(cudaStreamDestroy(g->stream));
    CUSET_CHECK(cudaFree(g->memory));
    CUSET_CHECK(cudaEventDestroy(g->staged));
    CUSET_CHECK(cudaFreeHost(g->h_stage));
    if (g->h_loss_sums) CUSET_CHECK(cudaFreeHost(g->h_loss_sums));
    free(g->h_order);
    free(g);
}

// The accum micro-batches have the device model's shape and fit the model (their ids in the
// vocabulary: a kernel reads wte's row of each). 0, or -1 with a message.
static int cuset__check_batches(const CusetCudaModel *g, const CusetBatch *batches, int accum, char *err,
                                size_t errlen) {
    for (int i = 0; i < accum; i++)
        if (batches[i].B != g->B || batches[i].T != g->T) {
            snprintf(err, errlen, "micro-batch %d: %d x %d, but the device model was made for %d x %d", i, batches[i].B,
                     batches[i].T, g->B, g->T);
            return -1;
        }
    return cuset_batches_fit(batches, accum, g->cfg.vocab_size, g->cfg.max_seq_len, err, errlen);
}

extern "C" int cuset_cuda_forward_backward(CusetCudaModel *g, const CusetBatch *batches, int accum,
                                           const CusetObjective *obj, float inv_norm, CusetStats *stats,
                                           float *grad_norm, char *err, size_t errlen) {
    if (cuset__check_batches(g, batches, accum, err, errlen)) return -1;
    double *sums = stats ? cuset__loss_sums_room(g, accum) : NULL;
    size_t slot = CUSET_LOSS_SAMPLE_FIELDS * (size_t)g->B;
    CUSET_CHECK(cudaMemsetAsync(g->grads, 0, g->num_params * sizeof(float), g->stream));
    for (int i = 0; i < accum; i++) {
        cuset__upload_batch(g, &batches[i]);
        if (cuset__forward_loss(g, obj, inv_norm, sums ? sums + i * slot : NULL, err, errlen)) return -1;
        cuset__gpt_backward(g);
    }
    cuset__global_norm(g->norm, g->grads, g->num_params, g->norm_partial, g->stream);
    CUSET_CHECK(cudaMemcpyAsync(grad_norm, g->norm, sizeof(float), cudaMemcpyDeviceToHost, g->stream));
    CUSET_CHECK(cudaStreamSynchronize(g->stream)); // the step's one wait for the device
    for (int i = 0; sums && i < accum; i++) cuset__loss_stats_add(stats, sums + i * slot, g->B);
    return 0;
}

extern "C" void cuset_cuda_update(CusetCudaModel *g, const CusetOptim *o, int step, float grad_norm) {
    CusetAdamW a = cuset_adamw_at(o, step, grad_norm);
    size_t off = 0;
    for (int t = 0; t < CUSET_NUM_TENSORS; t++) {
        size_t n = g->tensor_sizes[t];
        float wd = cuset_tensor_decay[t] ? o->weight_decay : 0.0f;
        cuset__adamw_kernel<<<cuset__ceil_div((long)n, 256), 256, 0, g->stream>>>(g->params + off, g->m + off, g->v + off, g->grads + off,
                                                                   n, a, wd);
        CUSET_CHECK_LAUNCH();
        off += n;
    }
    g->has_moments = 1;
}

extern "C" int cuset_cuda_eval(CusetCudaModel *g, const CusetBatch *b, const CusetObjective *obj, float inv_norm,
                               CusetStats *stats, char *err, size_t errlen) {
    if (cuset__check_batches(g, b, 1, err, errlen)) return -1;
    cuset__upload_batch(g, b);
    double *sums = stats ? cuset__loss_sums_room(g, 1) : NULL;
    int rc = cuset__forward_loss(g, obj, inv_norm, sums, err, errlen);
    CUSET_CHECK(cudaStreamSynchronize(g->stream));
    if (rc == 0 && sums) cuset__loss_stats_add(stats, sums, g->B);
    return rc;
}

extern "C" void cuset_cuda_model_download(const CusetCudaModel *g, CusetGPT *m) {
    size_t bytes = g->num_params * sizeof(float);
    CUSET_CHECK(cudaStreamSynchronize(g->stream));
    CUSET_CHECK(cudaMemcpy(m->params_memory, g->params, bytes, cudaMemcpyDeviceToHost));
    if (!g->has_moments) return;
    if (!m->m_memory) m->m_memory = (float *)cuset__host_calloc(g->num_params, sizeof(float));
    if (!m->v_memory) m->v_memory = (float *)cuset__host_calloc(g->num_params, sizeof(float));
    CUSET_CHECK(cudaMemcpy(m->m_memory, g->m, bytes, cudaMemcpyDeviceToHost));
    CUSET_CHECK(cudaMemcpy(m->v_memory, g->v, bytes, cudaMemcpyDeviceToHost));
}

extern "C" void cuset_cuda_download_grads(const CusetCudaModel *g, float *grads) {
    CUSET_CHECK(cudaStreamSynchronize(g->stream));
    CUSET_CHECK(cudaMemcpy(grads, g->grads, g->num_params * sizeof(float), cudaMemcpyDeviceToHost));
}

// ---- decoding -------------------------------------------------------------------------------------

struct CusetCudaDecoder {
    CusetConfig cfg;
    int len;                         // positions cached
    void *memory;                    // one device allocation:
    CusetParams p;                   //   the parameters
    float *k, *v;                    //   the KV cache, (L, maxT, C) each
    float *x, *ln, *qkv, *y, *fch;   //   one position: (C), (C), (3C), (C), (4C)
    float *stat;                     //   LayerNorm mean and rstd (2)
    float *att;                      //   (NH, maxT) attention scratch
    float *logits;                   //   (Vp)
    float *host_logits;              // (Vp) host copy returned by cuset_cuda_decode
    cudaStream_t stream;
};

extern "C" CusetCudaDecoder *cuset_cuda_decoder_new(const CusetGPT *m, char *err, size_t errlen) {
    if (!cuset_cuda_available(err, errlen)) return NULL;
    CusetCudaDecoder *d = (CusetCudaDecoder *)cuset__host_calloc(1, sizeof *d);
    d->cfg = m->cfg;
    size_t L = m->cfg.n_layer, C = m->cfg.n_embd, NH = m->cfg.n_head, maxT = m->cfg.max_seq_len;
    size_t Vp = m->cfg.padded_vocab_size, F = sizeof(float);
    CusetBump b = {NULL, 0};
    for (int pass = 0; pass < 2; pass++) {
        float *params = (float *)cuset__bump(&b, m->num_params * F);
        d->k = (float *)cuset__bump(&b, L * maxT * C * F);
        d->v = (float *)cuset__bump(&b, L * maxT * C * F);
        d->x = (float *)cuset__bump(&b, C * F);
        d->ln = (float *)cuset__bump(&b, C * F);
        d->qkv = (float *)cuset__bump(&b, 3 * C * F);
        d->y = (float *)cuset__bump(&b, C * F);
        d->fch = (float *)cuset__bump(&b, 4 * C * F);
        d->stat = (float *)cuset__bump(&b, 2 * F);
        d->att = (float *)cuset__bump(&b, NH * maxT * F);
        d->logits = (float *)cuset__bump(&b, Vp * F);
        if (pass == 0) {
            cudaError_t e = cudaMalloc(&d->memory, b.off);
            if (e != cudaSuccess) {
                cudaGetLastError(); // clear it, or the next launch check would report it
                snprintf(err, errlen, "cudaMalloc of %.1f MB for the decoder failed: %s", b.off / 1e6, cudaGetErrorString(e));
                free(d);
                return NULL;
            }
            b.base = (char *)d->memory;
            b.off = 0;
        } else {
            cuset__point((float **)&d->p, CUSET_NUM_TENSORS, m->tensor_sizes, params);
            CUSET_CHECK(cudaMemcpy(params, m->params_memory, m->num_params * F, cudaMemcpyHostToDevice));
        }
    }
    d->host_logits = (float *)cuset__host_calloc(Vp, F);
    CUSET_CHECK(cudaStreamCreate(&d->stream));
    return d;
}

// The forward pass of cuset_gpt_decode for position t = d->len on the device.
extern "C" const float *cuset_cuda_decode(CusetCudaDecoder *d, int token) {
    const CusetConfig *c = &d->cfg;
    int L = c->n_layer, C = c->n_embd, NH = c->n_head, T = c->max_seq_len, Vp = c->padded_vocab_size, t = d->len;
    if (t >= T) { fprintf(stderr, "cuset: KV cache full: the context holds %d tokens\n", T); exit(1); }
    if (token < 0 || token >= c->vocab_size) {
        fprintf(stderr, "cuset: token %d outside the vocabulary [0, %d)\n", token, c->vocab_size);
        exit(1);
    }
    CusetParams p = d->p;
    cudaStream_t s = d->stream;
    float *mean = d->stat, *rstd = d->stat + 1;
    cuset__embed_one_kernel<<<cuset__ceil_div(C, 256), 256, 0, s>>>(d->x, p.wte, p.wpe, token, t, C);
    CUSET_CHECK_LAUNCH();
    for (int l = 0; l < L; l++) {
        float *kc = d->k + (size_t)l * T * C, *vc = d->v + (size_t)l * T * C;
        cuset__layernorm_forward(d->ln, mean, rstd, d->x, p.ln1w + l * C, p.ln1b + l * C, 1, C, s);
        cuset__matvec(d->qkv, d->ln, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, C, 3 * C, s);
        CUSET_CHECK(cudaMemcpyAsync(kc + (size_t)t * C, d->qkv + C, C * sizeof(float), cudaMemcpyDeviceToDevice, s));
        CUSET_CHECK(cudaMemcpyAsync(vc + (size_t)t * C, d->qkv + 2 * C, C * sizeof(float), cudaMemcpyDeviceToDevice, s));
        cuset__decode_attention_kernel<<<NH, 256, 0, s>>>(d->y, d->att, d->qkv, kc, vc, t, C, NH, T);
        CUSET_CHECK_LAUNCH();
        cuset__matvec(d->ln, d->y, p.attprojw + (size_t)l * C * C, p.attprojb + l * C, C, C, s);
        cuset__residual_forward(d->x, d->x, d->ln, C, s);
        cuset__layernorm_forward(d->ln, mean, rstd, d->x, p.ln2w + l * C, p.ln2b + l * C, 1, C, s);
        cuset__matvec(d->fch, d->ln, p.fcw + (size_t)l * 4 * C * C, p.fcb + l * 4 * C, C, 4 * C, s);
        cuset__gelu_forward_kernel<<<cuset__ceil_div(4 * C, 256), 256, 0, s>>>(d->fch, d->fch, 4 * C);
        CUSET_CHECK_LAUNCH();
        cuset__matvec(d->ln, d->fch, p.fcprojw + (size_t)l * 4 * C * C, p.fcprojb + l * C, 4 * C, C, s);
        cuset__residual_forward(d->x, d->x, d->ln, C, s);
    }
    cuset__layernorm_forward(d->ln, mean, rstd, d->x, p.lnfw, p.lnfb, 1, C, s);
    cuset__matvec(d->logits, d->ln, p.wte, nullptr, C, Vp, s);
    CUSET_CHECK(cudaMemcpyAsync(d->host_logits, d->logits, Vp * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUSET_CHECK(cudaStreamSynchronize(s));
    d->len = t + 1;
    return d->host_logits;
}

extern "C" int cuset_cuda_decoder_len(const CusetCudaDecoder *d) { return d->len; }
extern "C" void cuset_cuda_decoder_reset(CusetCudaDecoder *d) { d->len = 0; }

extern "C" void cuset_cuda_decoder_free(CusetCudaDecoder *d) {
    if (!d) return;
    CUSET_CHECK(cudaStreamSynchronize(d->stream));
    CUSET_CHECK(cudaStreamDestroy(d->stream));
    CUSET_CHECK(cudaFree(d->memory));
    free(d->host_logits);
    free(d);
}

// ---- entry points for test/test_gpu.cu and test/bench_gpu.cu ---------------------------------------
// Device pointers, the default stream, synchronous; declared in cuset.h under
// CUSET_CUDA_INTERNALS. Each runs one launcher above.

extern "C" void cuset__cuda_test_matmul_forward(float *out, float *pre, const float *inp, const float *w,
                                                const float *bias, int N, int IC, int OC) {
    cuset__matmul_forward(out, pre, inp, w, bias, N, IC, OC, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
}

// dbias NULL: no bias gradient and no scratch for it, so nothing but the two products
// runs (test/bench_gpu.cu times that).
extern "C" void cuset__cuda_test_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                                 const float *w, const float *pre, int N, int IC, int OC) {
    float *partial = NULL;
    if (dbias) CUSET_CHECK(cudaMalloc(&partial, (size_t)cuset__ceil_div(N, CUSET_COLSUM_ROWS) * OC * sizeof(float)));
    cuset__matmul_backward(dinp, dw, dbias, dout, inp, w, pre, N, IC, OC, partial, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
    if (partial) CUSET_CHECK(cudaFree(partial));
}

extern "C" void cuset__cuda_test_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                                   const float *b, int N, int C) {
    cuset__layernorm_forward(out, mean, rstd, inp, w, b, N, C, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
}

extern "C" void cuset__cuda_test_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                                    const float *w, const float *mean, const float *rstd, int N, int C) {
    float *partial = NULL;
    CUSET_CHECK(cudaMalloc(&partial, 2 * (size_t)cuset__ceil_div(N, CUSET_COLSUM_ROWS) * C * sizeof(float)));
    cuset__layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, partial, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
    CUSET_CHECK(cudaFree(partial));
}

extern "C" void cuset__cuda_test_residual_forward(float *out, const float *a, const float *b, size_t n) {
    cuset__residual_forward(out, a, b, n, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
}

extern "C" void cuset__cuda_test_encoder_forward(float *out, const int *inputs, const float *wte, const float *wpe,
                                                 int B, int T, int C) {
    cuset__encoder_forward(out, inputs, wte, wpe, B * T, T, C, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
}

// host_inputs: the (B, T) tokens in host memory (the CSR is built here, as in training).
extern "C" void cuset__cuda_test_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *host_inputs,
                                                  int B, int T, int C) {
    int BT = B * T;
    size_t nidx = 4 * (size_t)BT + 2;
    CusetTokPos *order = (CusetTokPos *)malloc(BT * sizeof(CusetTokPos));
    int *h = (int *)malloc(nidx * sizeof(int)), *d = NULL;
    float *partial = NULL;
    CusetTokenIndex hix, dix;
    cuset__token_index_carve(&hix, h, BT);
    cuset__build_token_index(host_inputs, BT, order, &hix);
    CUSET_CHECK(cudaMalloc(&d, nidx * sizeof(int)));
    CUSET_CHECK(cudaMalloc(&partial, (size_t)hix.nseg * C * sizeof(float)));
    CUSET_CHECK(cudaMemcpy(d, h, nidx * sizeof(int), cudaMemcpyHostToDevice));
    cuset__token_index_carve(&dix, d, BT);
    dix.nu = hix.nu;
    dix.nseg = hix.nseg;
    cuset__encoder_backward(dwte, dwpe, dout, &dix, partial, B, T, C, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
    CUSET_CHECK(cudaFree(d));
    CUSET_CHECK(cudaFree(partial));
    free(order);
    free(h);
}

extern "C" void cuset__cuda_test_adamw(float *params, float *m, float *v, const float *grads, size_t n, CusetAdamW a,
                                       float wd) {
    cuset__adamw_kernel<<<cuset__ceil_div((long)n, 256), 256>>>(params, m, v, grads, n, a, wd);
    CUSET_CHECK_LAUNCH();
    CUSET_CHECK(cudaDeviceSynchronize());
}

extern "C" float cuset__cuda_test_global_norm(const float *x, size_t n) {
    double *partial = NULL;
    float *out = NULL, norm = 0.0f;
    CUSET_CHECK(cudaMalloc(&partial, CUSET_NORM_BLOCKS * sizeof(double)));
    CUSET_CHECK(cudaMalloc(&out, sizeof(float)));
    cuset__global_norm(out, x, n, partial, 0);
    CUSET_CHECK(cudaMemcpy(&norm, out, sizeof(float), cudaMemcpyDeviceToHost));
    CUSET_CHECK(cudaFree(partial));
    CUSET_CHECK(cudaFree(out));
    return norm;
}

extern "C" void cuset__cuda_test_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH) {
    cuset__cuda_attention_forward(out, lse, qkv, B, T, C, NH, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
}

extern "C" void cuset__cuda_test_attention_backward(float *dqkv, float *delta, const float *dout, const float *qkv,
                                                    const float *out, const float *lse, int B, int T, int C, int NH) {
    cuset__cuda_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, C, NH, 0);
    CUSET_CHECK(cudaDeviceSynchronize());
}
