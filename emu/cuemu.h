// cuemu.h - a CPU execution model of CUDA C++, for checking CUDA programs on a machine
// without a GPU. It is a checking tool (faithful semantics, race and out-of-bounds
// detection), not a fast way to run CUDA: every thread of every block runs on one core.
//
// Build. emu/nvcc-emu rewrites launches and `__shared__` declarations and compiles:
//   g++ -std=c++17 -O1 -g -w -I emu/include -include emu/cuemu.h -x c++ REWRITTEN.cu -lm
// (add -fsanitize=address for out-of-bounds checks). emu/include/ holds stand-ins for
// cuda_runtime.h, cuda_fp16.h, mma.h, cooperative_groups.h, ... that include this file.
// A launch `k<<<G, B, S, ST>>>(args)` becomes
//   ::cuemu::launch(::cuemu::Config(G, B, S, ST), "k", __FILE__, __LINE__,
//                   [&](auto &...a) { k(a...); }, args);
//
// What it models. Each CUDA thread is a cooperative fiber (ucontext); blocks run one after
// another, the threads of a block interleave only at collectives (__syncthreads, warp
// shuffles and votes, cooperative-groups syncs, WMMA). Collectives are checked: a lane
// outside its own mask, lanes of a mask that exit or wait elsewhere, barrier divergence
// and deadlocks stop the program with a message and exit status 86. Device memory is
// malloc'd and filled with garbage (0xCD bytes), shared memory is garbage (0xFF bytes) at
// the start of every block, so missing initialisation shows; under AddressSanitizer
// out-of-bounds accesses to global, static shared and dynamic shared memory are reported,
// and without it a write just past a shared array stops the program (exit 86) when its
// block ends.
// Kernel pointer arguments must point into device-accessible memory (cudaMalloc,
// cudaMallocManaged, cudaMallocHost, symbols, __managed__ variables). With
// CUEMU_REORDER=SEED the order of blocks, of thread starts and of resumptions after each
// collective is a seeded random permutation and garbage is random, so a data race (say a
// missing __syncthreads) changes results from seed to seed.
//
// Environment: CUEMU_REORDER=SEED (nonzero), CUEMU_STACK_KB (fiber stack, default 256),
// CUEMU_NO_DEVICE=1 (behave like a machine without a GPU: cudaErrorNoDevice),
// CUEMU_ULP=SEED (nonzero: the fast intrinsics, rsqrtf and, in kernels, the standard
// math functions are off by up to the error CUDA documents for them: all up,
// odd seeds, or up and down at random, even seeds; so a tolerance too tight for a GPU shows).
// Launches a GPU refuses (bad configurations; with nvcc-emu --ptxas-info, more threads
// than the kernel's registers allow or too much shared memory) do not run and set the
// error, as there.
// Exit status 86: the program broke a CUDA rule that a GPU would hang, fault or
// misbehave on (the message on stderr says which).
//
// What it does NOT model: timing and performance; the memory model (weak ordering,
// caches, memory fences are no-ops); warp-synchronous lockstep execution without
// __syncwarp (threads of a warp do not run in lockstep here, so such code sees the race it
// has on Volta and later); inline PTX (asm); textures and surfaces; grid-wide sync
// (cooperative_groups::this_grid) and cooperative launches; dynamic parallelism;
// __CUDA_ARCH__-specific code paths (__CUDA_ARCH__ is not defined: device code takes its
// host path; __CUDACC__ is defined); the precise float results of fast intrinsics
// (__expf, __fdividef, ...: computed as the accurate functions) and of the standard
// math functions in kernels (expf, exp, tanhf, ...: the host's), or as far off as
// CUDA allows with CUEMU_ULP; and the accumulation order
// of tensor cores (WMMA accumulates in float, k in order); streams run their work at once,
// in call order. Unsupported features fail to compile or stop with "unsupported".
#ifndef CUEMU_H
#define CUEMU_H
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <cxxabi.h>
#include <dlfcn.h>
#include <ctime>
#include <limits>
#include <new>
#include <map>
#include <math.h>
#include <cmath>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CUEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUEMU_ASAN 1
#endif
#endif
#ifdef CUEMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
// CUDA programs rarely free everything before exiting (the driver does it for them), so
// leak reports would fail correct programs; ASAN_OPTIONS=detect_leaks=1 turns them back on.
extern "C" __attribute__((weak)) const char *__asan_default_options() { return "detect_leaks=0"; }
#endif

// ---------------------------------------------------------------------------------------
// Qualifiers and version macros
// ---------------------------------------------------------------------------------------
#define __CUDACC__ 1
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 4
#define CUDART_VERSION 12040
#define CUDA_VERSION 12040
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ /* empty: libstdc++ spells __attribute__((__noinline__)) */
#define __launch_bounds__(...)
#define __maxnreg__(n)
#define __grid_constant__
#define __constant__
#define __managed__ __attribute__((section("cuemu_managed"), used))
#define __shared__ static // file scope only: the driver rewrites __shared__ in functions (shared_var)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __cudart_builtin__
#define CUDART_CB

// ---------------------------------------------------------------------------------------
// Vector types (sizes and alignments as in vector_types.h) and dim3
// ---------------------------------------------------------------------------------------
#define CUEMU_VEC1(T, N, A)                                                                \
    struct __attribute__((aligned(A))) N##1 { T x; };                                      \
    inline N##1 make_##N##1(T x) { return N##1{x}; }
#define CUEMU_VEC2(T, N, A)                                                                \
    struct __attribute__((aligned(A))) N##2 { T x, y; };                                   \
    inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define CUEMU_VEC3(T, N, A)                                                                \
    struct __attribute__((aligned(A))) N##3 { T x, y, z; };                                \
    inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define CUEMU_VEC4(T, N, A)                                                                \
    struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };                             \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define CUEMU_VECS(T, N, A1, A2, A3, A4)                                                   \
    CUEMU_VEC1(T, N, A1) CUEMU_VEC2(T, N, A2) CUEMU_VEC3(T, N, A3) CUEMU_VEC4(T, N, A4)
CUEMU_VECS(signed char, char, 1, 2, 1, 4)
CUEMU_VECS(unsigned char, uchar, 1, 2, 1, 4)
CUEMU_VECS(short, short, 2, 4, 2, 8)
CUEMU_VECS(unsigned short, ushort, 2, 4, 2, 8)
CUEMU_VECS(int, int, 4, 8, 4, 16)
CUEMU_VECS(unsigned int, uint, 4, 8, 4, 16)
CUEMU_VECS(long, long, 8, 16, 8, 16)
CUEMU_VECS(unsigned long, ulong, 8, 16, 8, 16)
CUEMU_VECS(long long, longlong, 8, 16, 8, 16)
CUEMU_VECS(unsigned long long, ulonglong, 8, 16, 8, 16)
CUEMU_VECS(float, float, 4, 8, 4, 16)
CUEMU_VECS(double, double, 8, 16, 8, 16)
#undef CUEMU_VECS
#undef CUEMU_VEC1
#undef CUEMU_VEC2
#undef CUEMU_VEC3
#undef CUEMU_VEC4

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---------------------------------------------------------------------------------------
// Runtime types that the launch machinery needs (the API itself is further down)
// ---------------------------------------------------------------------------------------
enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidPitchValue = 12,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

namespace cuemu {

// ---------------------------------------------------------------------------------------
// Settings, garbage and the reorder random generator
// ---------------------------------------------------------------------------------------
struct Settings {
    uint64_t reorder_seed; // 0: deterministic order
    uint64_t ulp_seed;     // 0: fast intrinsics computed as the accurate functions
    size_t stack_bytes;
    bool no_device;
};
// CUEMU_NAME as a whole number in [lo, hi], or dflt when unset or empty; anything else
// stops the program with a message (a setting misspelt would otherwise test something else
// quietly).
inline uint64_t setting(const char *name, uint64_t lo, uint64_t hi, uint64_t dflt) {
    const char *e = getenv(name);
    if (!e || !*e) return dflt;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    if (end == e || *end || errno || *e == '-' || v < lo || v > hi) {
        fprintf(stderr, "cuemu: %s='%s': a whole number in [%llu, %llu] is expected\n", name, e,
                (unsigned long long)lo, (unsigned long long)hi);
        exit(2);
    }
    return v;
}
inline Settings read_settings() {
    Settings s;
    s.reorder_seed = setting("CUEMU_REORDER", 0, UINT64_MAX, 0);
    s.ulp_seed = setting("CUEMU_ULP", 0, UINT64_MAX, 0);
    s.stack_bytes = setting("CUEMU_STACK_KB", 16, 1 << 30, 256) * 1024;
    s.no_device = setting("CUEMU_NO_DEVICE", 0, 1, 0) != 0;
    return s;
}
inline const Settings g_settings = read_settings();
inline uint64_t g_rng = g_settings.reorder_seed * 0x9E3779B97F4A7C15ull + 1;
inline bool reordering() { return g_settings.reorder_seed != 0; }
inline uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
inline uint64_t random_u64() { return splitmix64(&g_rng); }
// CUEMU_ULP=SEED: the fast intrinsics, rsqrtf and the standard math functions (in
// kernels) err as much as CUDA documents they may
// on a GPU (the Programming Guide's bounds), by a seeded random amount: all up for an odd
// seed (the worst case for a sum), up or down at random for an even one (the worst case
// for a ratio, a softmax say, where errors all up cancel), so that a program's tolerance
// is tested against the GPU's math and not the host's.
inline uint64_t g_ulp_rng = g_settings.ulp_seed * 0x9E3779B97F4A7C15ull + 7;
inline int ulp_sign() { return g_settings.ulp_seed & 1 || splitmix64(&g_ulp_rng) & 1 ? 1 : -1; }
// v (a float or a double) moved by a random whole number of ulps, up to ulps (0, inf and
// nan stay).
template <class T> inline T ulp_error(T v, int ulps) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    using Bits = std::conditional_t<std::is_same_v<T, float>, uint32_t, uint64_t>;
    constexpr Bits sign = Bits(1) << (8 * sizeof(T) - 1);
    const Bits inf = std::is_same_v<T, float> ? 0x7f800000u : 0x7ff0000000000000u;
    if (!g_settings.ulp_seed || !std::isfinite(v) || v == 0) return v;
    int k = ulp_sign() * (int)(splitmix64(&g_ulp_rng) % (uint64_t)(ulps + 1));
    Bits bits;
    memcpy(&bits, &v, sizeof bits);
    Bits mag = (bits & ~sign) + (Bits)(v > 0 ? k : -k); // steps up (k > 0) or down (below 0 wraps past inf)
    if (mag == 0 || mag >= inf) return v;
    bits = (bits & sign) | mag;
    memcpy(&v, &bits, sizeof v);
    return v;
}
// v moved by a random amount, up to err.
inline float abs_error(float v, double err) {
    if (!g_settings.ulp_seed || !std::isfinite(v)) return v;
    return (float)((double)v + ulp_sign() * err * (double)(splitmix64(&g_ulp_rng) >> 11) / 9007199254740992.0);
}
// A fast logarithm: an absolute error near 1, ulps elsewhere; sine and cosine: an
// absolute error on [-pi, pi] (beyond it the Guide gives no bound: accurate here).
inline constexpr double fast_abs_error = 3.6e-7; // 2^-21.41: __logf near 1, __sinf, __cosf
inline float fast_log(float v, float x, double near_one, int ulps) {
    return x >= 0.5f && x <= 2.0f ? abs_error(v, near_one) : ulp_error(v, ulps);
}
inline float fast_trig(float v, float x) { return fabsf(x) <= 3.14159265f ? abs_error(v, fast_abs_error) : v; }
template <class T> inline void shuffle(T *v, size_t n) {
    for (size_t i = n; i > 1; i--) std::swap(v[i - 1], v[random_u64() % i]);
}
// Uninitialised memory: a fixed byte pattern, or random bytes when reordering.
inline void fill_garbage(void *p, size_t n, unsigned char pattern) {
    unsigned char *b = (unsigned char *)p;
    if (!reordering()) { memset(b, pattern, n); return; }
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)random_u64();
}

// ---------------------------------------------------------------------------------------
// Threads and fibers
// ---------------------------------------------------------------------------------------
enum class State : unsigned char { unstarted, running, waiting, done };
enum class Scope : unsigned char { block, warp, converged }; // converged: __activemask
struct Thread;
// Completes a collective once every participant arrived: reads each participant's `in`
// (or `ptr`) and writes each participant's `out`. Members come in lane/thread order.
using CompleteFn = void (*)(Thread *const *members, int n);
struct Fiber {
    ucontext_t ctx;
    void *stack;
    size_t size;
    void *asan_fake_stack;
};
struct Thread {
    uint3 tid;
    int lin; // linear index in the block; lane = lin % 32
    State state;
    Fiber *fiber;
    // The collective this thread waits at (valid while state == waiting).
    Scope scope;
    const char *what, *file;
    int line;
    unsigned mask; // warp scope: the lanes that take part
    CompleteFn complete;
    uint64_t in;  // value contributed (bit copy)
    int arg;      // shuffle source lane / delta / xor mask
    int width;    // shuffle segment width
    void *ptr;    // larger contributions (WMMA fragments)
    uint64_t out; // result
};

inline Thread g_threads[1024];
inline Thread g_host_thread{};      // threadIdx & co read zeros outside kernels
inline Thread *g_cur = &g_host_thread;
inline uint3 g_block_idx;
inline dim3 g_block_dim, g_grid_dim;
inline int g_nthreads;              // threads per block of the running launch
inline bool g_in_kernel;
inline const char *g_kernel = "", *g_launch_file = "";
inline int g_launch_line;
inline bool g_over_bound;  // the running launch's block exceeds its kernel's __launch_bounds__
inline bool g_probing;     // a kernel is called only to read its bound (launch_bound_at)
inline long long g_probed; // the bound it read
inline cudaError_t g_last_error = cudaSuccess;

// Thread start order within the block and the next thread to start.
inline int g_order[1024];
inline int g_next_start, g_live;
inline std::vector<Thread *> g_runq; // released threads waiting to resume
inline size_t g_runq_head;
// The thread body of the running launch (type-erased).
inline void (*g_body)(void *);
inline void *g_body_ctx;

// Fibers: started lazily, never freed; idle ones are reused across blocks and launches. The
// list itself is never destroyed either, so the fibers stay reachable for LeakSanitizer at exit.
inline std::vector<Fiber *> &g_idle_fibers = *new std::vector<Fiber *>;
inline ucontext_t g_sched_ctx;
inline Fiber *g_entering;           // the fiber the scheduler switches to
inline void *g_sched_fake_stack;
inline const void *g_sched_stack_bottom;
inline size_t g_sched_stack_size;

// ASan must be told about every stack switch, or it reports false positives.
inline void asan_start_switch(void **fake_save, const void *bottom, size_t size) {
#ifdef CUEMU_ASAN
    __sanitizer_start_switch_fiber(fake_save, bottom, size);
#else
    (void)fake_save, (void)bottom, (void)size;
#endif
}
inline void asan_finish_switch(void *fake_save, const void **old_bottom, size_t *old_size) {
#ifdef CUEMU_ASAN
    __sanitizer_finish_switch_fiber(fake_save, old_bottom, old_size);
#else
    (void)fake_save, (void)old_bottom, (void)old_size;
#endif
}

// ---------------------------------------------------------------------------------------
// Diagnostics
// ---------------------------------------------------------------------------------------
enum { exit_code = 86 };
inline std::string vformat(const char *fmt, va_list ap) {
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    return buf;
}
inline std::string format(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    return s;
}
// Where we are: "KERNEL (file:line), block (x,y,z) thread (x,y,z)".
inline std::string where(const Thread *t) {
    std::string s = format("%s (%s:%d)", g_kernel, g_launch_file, g_launch_line);
    if (t) s += format(", block (%u,%u,%u) thread (%u,%u,%u)", g_block_idx.x, g_block_idx.y, g_block_idx.z,
                       t->tid.x, t->tid.y, t->tid.z);
    return s;
}
// A broken CUDA rule: report and stop with exit status 86.
[[noreturn]] inline void fail(const Thread *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = vformat(fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (g_in_kernel) fprintf(stderr, "cuemu: error: %s: %s\n", where(t).c_str(), msg.c_str());
    else fprintf(stderr, "cuemu: error: %s\n", msg.c_str());
    fflush(stderr);
    _exit(exit_code);
}
inline void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = vformat(fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "cuemu: %s\n", msg.c_str());
}
// "0-15,32-47" from a sorted list of thread indices.
inline std::string ranges(const std::vector<int> &ids) {
    std::string s;
    for (size_t i = 0; i < ids.size();) {
        size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) j++;
        if (!s.empty()) s += ",";
        s += i == j ? format("%d", ids[i]) : format("%d-%d", ids[i], ids[j]);
        i = j + 1;
    }
    return s;
}
inline std::string site(const Thread *t) { return format("%s (%s:%d)", t->what, t->file, t->line); }

// A kernel that faults (a wild or host pointer, an overflow of its thread's stack, an integer
// division by zero) dies of the signal as any program would, but first names the kernel,
// block and thread, since nothing else would (on a GPU the launch fails, or an integer
// division by zero gives an unspecified value). Installed at the first launch; an --asan
// build leaves faults to AddressSanitizer, whose report says more.
inline void on_kernel_fault(int sig, siginfo_t *info, void *) { // async-signal-safe: snprintf, write
    if (!g_in_kernel) return; // SA_RESETHAND: the fault repeats and kills as usual
    const Fiber *f = g_cur->fiber;
    const char *addr = (const char *)info->si_addr;
    bool overflow = f && addr < (const char *)f->stack && addr >= (const char *)f->stack - 65536;
    char why[256];
    if (sig == SIGFPE) snprintf(why, sizeof why, "SIGFPE, an integer division by zero (or INT_MIN / -1)");
    else if (sig == SIGILL) snprintf(why, sizeof why, "SIGILL, an illegal instruction");
    else if (overflow)
        snprintf(why, sizeof why, "SIGSEGV, the thread's stack of %zu KiB overflowed (deep recursion or large "
                 "local arrays; CUEMU_STACK_KB sets its size)", f->size / 1024);
    else
        snprintf(why, sizeof why, "%s, an invalid memory access (out of bounds, or a host pointer); an --asan "
                 "build of the program shows where", sig == SIGBUS ? "SIGBUS" : "SIGSEGV");
    char msg[768];
    int n = snprintf(msg, sizeof msg, "cuemu: error: %s (%s:%d), block (%u,%u,%u) thread (%u,%u,%u): %s\n",
                     g_kernel, g_launch_file, g_launch_line, g_block_idx.x, g_block_idx.y, g_block_idx.z,
                     g_cur->tid.x, g_cur->tid.y, g_cur->tid.z, why);
    if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0) return; // stderr gone
}
inline void report_kernel_faults() {
#ifndef CUEMU_ASAN
    static bool installed;
    if (installed) return;
    installed = true;
    static char alt_stack[64 * 1024]; // the handler runs here: a fiber's stack may be the fault
    stack_t ss{};
    if (sigaltstack(nullptr, &ss) == 0 && (ss.ss_flags & SS_DISABLE)) { // unless the program has one
        ss = stack_t{};
        ss.ss_sp = alt_stack;
        ss.ss_size = sizeof alt_stack;
        sigaltstack(&ss, nullptr);
    }
    struct sigaction sa{};
    sa.sa_sigaction = on_kernel_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) { // a program's own handler stays
        struct sigaction old{};
        if (sigaction(sig, nullptr, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
            sigaction(sig, &sa, nullptr);
    }
#endif
}

// ---------------------------------------------------------------------------------------
// Fiber switching
// ---------------------------------------------------------------------------------------
inline void fiber_main();
inline Fiber *new_fiber() {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = (g_settings.stack_bytes + page - 1) / page * page;
    char *mem = (char *)mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) fail(nullptr, "cannot map a %zu KiB fiber stack", size / 1024);
    mprotect(mem, page, PROT_NONE); // guard page: a stack overflow faults
    Fiber *f = new Fiber{};
    f->stack = mem + page;
    f->size = size;
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = size;
    f->ctx.uc_link = nullptr;
    makecontext(&f->ctx, fiber_main, 0);
    // Only makecontext reads uc_stack. Clearing it stops ASan's swapcontext interceptor
    // from wiping the shadow of the whole stack at every switch (slow, and it would drop
    // the redzones of the resumed thread's live frames); the fiber annotations suffice.
    f->ctx.uc_stack.ss_sp = nullptr;
    f->ctx.uc_stack.ss_size = 0;
    return f;
}
inline void enter_fiber(Fiber *f) { // scheduler -> fiber
    g_entering = f;
    asan_start_switch(&g_sched_fake_stack, f->stack, f->size);
    swapcontext(&g_sched_ctx, &f->ctx);
    asan_finish_switch(g_sched_fake_stack, nullptr, nullptr);
}
inline void leave_fiber(Fiber *f) { // fiber -> scheduler
    asan_start_switch(&f->asan_fake_stack, g_sched_stack_bottom, g_sched_stack_size);
    swapcontext(&f->ctx, &g_sched_ctx);
    asan_finish_switch(f->asan_fake_stack, nullptr, nullptr);
}
// A fiber runs not-yet-started threads one after another on its stack, so a block without
// collectives runs on one fiber at function-call speed. A thread that waits in a
// collective keeps its fiber; the scheduler then starts the next thread on another one.
inline void fiber_main() {
    asan_finish_switch(nullptr, &g_sched_stack_bottom, &g_sched_stack_size);
    Fiber *self = g_entering;
    for (;;) {
        while (g_next_start < g_nthreads) {
            Thread *t = &g_threads[g_order[g_next_start++]];
            t->fiber = self;
            t->state = State::running;
            g_cur = t;
            g_body(g_body_ctx);
            t->state = State::done;
            g_live--;
        }
        g_idle_fibers.push_back(self);
        leave_fiber(self);
    }
}

// ---------------------------------------------------------------------------------------
// Collectives
// ---------------------------------------------------------------------------------------
// The calling thread contributes (in, arg, width, ptr) and waits until the collective
// completes; returns its `out`.
inline uint64_t collective(Scope scope, const char *what, const char *file, int line, unsigned mask,
                           CompleteFn complete, uint64_t in = 0, int arg = 0, int width = 32,
                           void *ptr = nullptr) {
    Thread *t = g_cur;
    if (!g_in_kernel) fail(nullptr, "%s (%s:%d) called outside a kernel", what, file, line);
    if (scope == Scope::warp && !(mask >> (t->lin & 31) & 1))
        fail(t, "lane %d calls %s (%s:%d) with mask 0x%08x that does not include itself", t->lin & 31, what,
             file, line, mask);
    t->scope = scope;
    t->what = what;
    t->file = file;
    t->line = line;
    t->mask = mask;
    t->complete = complete;
    t->in = in;
    t->arg = arg;
    t->width = width;
    t->ptr = ptr;
    t->state = State::waiting;
    leave_fiber(t->fiber);
    return t->out;
}
inline void complete_nothing(Thread *const *, int) {}

// The lanes of warp w that exist in the block.
inline unsigned existing_lanes(int w) {
    int n = g_nthreads - w * 32;
    return n >= 32 ? 0xffffffffu : (1u << n) - 1;
}
inline void resume(Thread *t) { g_runq.push_back(t); }

// Warp-scope collectives: a group completes once every existing lane of its mask waits at
// a warp collective with the same mask. A lane of the mask that exited never arrives.
inline bool release_warp_groups() {
    bool any = false;
    for (int w = 0; w * 32 < g_nthreads; w++) {
        unsigned exist = existing_lanes(w), handled = 0;
        Thread *lanes = &g_threads[w * 32];
        for (int l = 0; l < 32 && (exist >> l & 1); l++) {
            Thread *t = &lanes[l];
            if (t->state != State::waiting || t->scope != Scope::warp || (handled >> l & 1)) continue;
            unsigned m = t->mask & exist, exited = 0;
            Thread *members[32];
            int n = 0;
            bool ready = true;
            for (int j = 0; j < 32; j++) {
                if (!(m >> j & 1)) continue;
                Thread *u = &lanes[j];
                if (u->state == State::done) exited |= 1u << j;
                else if (u->state != State::waiting || u->scope != Scope::warp || (u->mask & exist) != m) ready = false;
                else members[n++] = u;
            }
            if (exited) {
                std::vector<int> ids;
                for (int j = 0; j < 32; j++) if (exited >> j & 1) ids.push_back(j);
                fail(t, "%s with mask 0x%08x waits for lane(s) %s of the warp, which exited without reaching it "
                        "(every lane named in the mask must execute the same collective)",
                     site(t).c_str(), t->mask, ranges(ids).c_str());
            }
            if (!ready) continue;
            for (int i = 1; i < n; i++)
                if (strcmp(members[i]->what, members[0]->what) != 0)
                    fail(members[i], "lanes of mask 0x%08x reach different collectives: lane %d at %s, lane %d at %s",
                         t->mask, members[0]->lin & 31, site(members[0]).c_str(), members[i]->lin & 31,
                         site(members[i]).c_str());
            handled |= m;
            members[0]->complete(members, n);
            for (int i = 0; i < n; i++) resume(members[i]);
            any = true;
        }
    }
    return any;
}

// __activemask: the lanes of a warp that wait at the same __activemask call once nothing
// else can run are the converged ones.
inline bool release_converged() {
    bool any = false;
    for (int w = 0; w * 32 < g_nthreads; w++) {
        Thread *lanes = &g_threads[w * 32];
        unsigned exist = existing_lanes(w), handled = 0;
        for (int l = 0; l < 32 && (exist >> l & 1); l++) {
            Thread *t = &lanes[l];
            if (t->state != State::waiting || t->scope != Scope::converged || (handled >> l & 1)) continue;
            unsigned m = 0;
            for (int j = l; j < 32 && (exist >> j & 1); j++) {
                Thread *u = &lanes[j];
                if (u->state == State::waiting && u->scope == Scope::converged && u->line == t->line &&
                    strcmp(u->file, t->file) == 0)
                    m |= 1u << j;
            }
            for (int j = 0; j < 32; j++)
                if (m >> j & 1) { lanes[j].out = m; resume(&lanes[j]); }
            handled |= m;
            any = true;
        }
    }
    return any;
}

inline std::unordered_set<std::string> g_warned_sites;
// Nothing can run: either every live thread waits at one block barrier (release it), or
// the block is stuck (report barrier divergence or a deadlock).
inline void release_block_barrier() {
    std::vector<Thread *> waiting;
    for (int i = 0; i < g_nthreads; i++) {
        Thread *t = &g_threads[i];
        if (t->state == State::waiting && t->scope == Scope::block) waiting.push_back(t);
    }
    if ((int)waiting.size() == g_live) {
        Thread *first = waiting[0];
        for (Thread *t : waiting) {
            if (t->line == first->line && strcmp(t->file, first->file) == 0) continue;
            std::vector<int> a, b;
            for (Thread *u : waiting) (u->line == first->line && !strcmp(u->file, first->file) ? a : b).push_back(u->lin);
            fail(t, "barrier divergence: threads %s wait at %s, threads %s at %s (all threads of a block must "
                    "reach the same __syncthreads)", ranges(a).c_str(), site(first).c_str(), ranges(b).c_str(),
                 site(t).c_str());
        }
        if (g_live < g_nthreads && g_warned_sites.insert(site(first)).second)
            note("warning: %s: %s reached by %d of %d threads of block (%u,%u,%u); the others exited "
                 "(continuing, as current GPUs do; warned once per barrier)", where(nullptr).c_str(),
                 site(first).c_str(), g_live, g_nthreads, g_block_idx.x, g_block_idx.y, g_block_idx.z);
        first->complete(waiting.data(), (int)waiting.size());
        for (Thread *t : waiting) resume(t);
        return;
    }
    // Deadlock: describe who waits where, grouped by site and mask.
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    Thread *culprit = nullptr;
    for (int i = 0; i < g_nthreads; i++) {
        Thread *t = &g_threads[i];
        if (t->state != State::waiting) continue;
        if (!culprit && t->scope == Scope::warp) culprit = t;
        std::string key = site(t);
        if (t->scope == Scope::warp) key += format(" with mask 0x%08x (warp %d)", t->mask, i / 32);
        auto g = std::find_if(groups.begin(), groups.end(), [&](auto &p) { return p.first == key; });
        if (g == groups.end()) groups.push_back({key, {i}});
        else g->second.push_back(i);
    }
    std::string msg = "deadlock: no thread of the block can continue:";
    for (auto &g : groups) msg += "\n  threads " + ranges(g.second) + " wait at " + g.first;
    fail(culprit ? culprit : waiting.empty() ? nullptr : waiting[0], "%s", msg.c_str());
}

// Runs one block: starts threads (in order, or permuted when reordering), resumes the
// released ones, and releases collectives when nothing else can run.
inline void run_block() {
    int n = g_nthreads;
    for (int i = 0; i < n; i++) {
        Thread &t = g_threads[i];
        t.lin = i;
        t.tid = uint3{i % g_block_dim.x, i / g_block_dim.x % g_block_dim.y, i / (g_block_dim.x * g_block_dim.y)};
        t.state = State::unstarted;
        g_order[i] = i;
    }
    if (reordering()) shuffle(g_order, (size_t)n);
    g_next_start = 0;
    g_live = n;
    g_runq.clear();
    g_runq_head = 0;
    for (;;) {
        if (g_runq_head < g_runq.size()) {
            Thread *t = g_runq[g_runq_head++];
            t->state = State::running;
            g_cur = t;
            enter_fiber(t->fiber);
        } else if (g_next_start < n) {
            Fiber *f;
            if (g_idle_fibers.empty()) f = new_fiber();
            else { f = g_idle_fibers.back(); g_idle_fibers.pop_back(); }
            enter_fiber(f);
        } else if (g_live == 0) {
            break;
        } else {
            g_runq.clear();
            g_runq_head = 0;
            if (!release_warp_groups() && !release_converged()) release_block_barrier();
            if (reordering()) shuffle(g_runq.data(), g_runq.size());
        }
    }
    g_cur = &g_host_thread;
}

// ---------------------------------------------------------------------------------------
// Shared memory
// ---------------------------------------------------------------------------------------
constexpr size_t max_dyn_smem = 228 * 1024;
constexpr size_t smem_optin_limit = 227 * 1024;
// Without AddressSanitizer, a write past the end of a __shared__ variable or of the launch's
// dynamic shared memory is found when the block ends: each is followed by a guard of
// smem_guard bytes of guard_byte, checked then (a write landing beyond the guard, or one
// that writes guard_byte, goes unseen, as do reads). Under AddressSanitizer every access is
// checked instead, against the exact bounds.
#ifdef CUEMU_ASAN
constexpr size_t smem_guard = 0;
#else
constexpr size_t smem_guard = 256;
#endif
constexpr unsigned char guard_byte = 0xA7;
alignas(128) inline unsigned char dyn_smem[max_dyn_smem + smem_guard];
inline size_t g_dyn_smem_size; // of the current launch
constexpr size_t smem_default = 48 * 1024;
inline size_t g_smem_optin = smem_default; // raised by cudaFuncSetAttribute

// Stops the program if the guard after [mem, mem + size) was written; what: the memory's name.
inline void check_smem_guard(const unsigned char *mem, size_t size, const char *what) {
    for (size_t i = 0; i < smem_guard; i++)
        if (mem[size + i] != guard_byte)
            fail(nullptr, "block (%u,%u,%u) wrote past the end of %s of %zu bytes (at byte %zu past it); a GPU "
                          "would fault or overwrite other shared data", g_block_idx.x, g_block_idx.y, g_block_idx.z,
                 what, size, i);
}

// A __shared__ variable declared in a function lives in the current block: the driver
// rewrites `__shared__ float s[N];` into `float (&s)[N] = shared_var<float[N]>(&key);`
// (key: a static char of that declaration, so one per template instantiation). The first
// thread of the block to reach the declaration allocates it - on the heap, so that
// AddressSanitizer sees its bounds - filled with garbage and followed by the guard; the
// others get the same memory; the block's variables are checked and freed when it ends.
struct SharedVar {
    const void *key;
    void *mem;
    size_t size;
};
inline std::vector<SharedVar> g_block_shared;
template <class T> inline T &shared_var(const void *key) {
    for (const SharedVar &v : g_block_shared)
        if (v.key == key) return *static_cast<T *>(v.mem);
    void *mem = ::operator new(sizeof(T) + smem_guard, std::align_val_t(128));
    fill_garbage(mem, sizeof(T), 0xFF);
    memset((unsigned char *)mem + sizeof(T), guard_byte, smem_guard);
    g_block_shared.push_back({key, mem, sizeof(T)});
    return *static_cast<T *>(mem);
}
// At the end of a block: the guards of its shared memory, static and dynamic, then the frees.
inline void end_block_shared() {
    check_smem_guard(dyn_smem, g_dyn_smem_size, "its dynamic shared memory");
    for (const SharedVar &v : g_block_shared) check_smem_guard((unsigned char *)v.mem, v.size, "a __shared__ variable");
    for (const SharedVar &v : g_block_shared) ::operator delete(v.mem, std::align_val_t(128));
    g_block_shared.clear();
}
// Dynamic shared memory: only [0, size) of the buffer is addressable during a launch.
inline void set_dyn_smem_size(size_t size) {
    g_dyn_smem_size = size;
#ifdef CUEMU_ASAN
    ASAN_UNPOISON_MEMORY_REGION(dyn_smem, size);
    ASAN_POISON_MEMORY_REGION(dyn_smem + size, max_dyn_smem - size);
#endif
}

// ---------------------------------------------------------------------------------------
// Device memory registry: what kernels and copies may touch as device memory
// ---------------------------------------------------------------------------------------
enum class Mem { device, managed, pinned, symbol };
struct Region {
    size_t size;
    Mem kind;
};
inline std::map<uintptr_t, Region> g_regions;
inline size_t g_device_bytes; // for cudaMemGetInfo
// The region holding [p, p + n), or null. n == 0 also accepts the one-past-end address.
inline const std::pair<const uintptr_t, Region> *find_region(const void *p, size_t n = 1) {
    uintptr_t a = (uintptr_t)p;
    auto it = g_regions.upper_bound(a);
    if (it == g_regions.begin()) return nullptr;
    --it;
    size_t at = a - it->first; // within the region from here: n more bytes must fit (no wrap for a huge n)
    if (at > it->second.size || n > it->second.size - at + (n == 0)) return nullptr;
    return &*it;
}
extern "C" char __start_cuemu_managed[] __attribute__((weak));
extern "C" char __stop_cuemu_managed[] __attribute__((weak));
inline bool device_accessible(const void *p) {
    if (find_region(p, 0)) return true;
    return __start_cuemu_managed && (const char *)p >= __start_cuemu_managed && (const char *)p <= __stop_cuemu_managed;
}

// ---------------------------------------------------------------------------------------
// Kernel resources: registers and static shared memory, as ptxas reported them
// ---------------------------------------------------------------------------------------
// nvcc-emu --ptxas-info FILE defines cuemu_ptxas_info from nvcc -Xptxas -v's report: one
// line "MANGLED_NAME REGISTERS STATIC_SMEM_BYTES" per kernel. Without it nothing is known
// and no launch is refused for its resources.
extern "C" const char cuemu_ptxas_info[] __attribute__((weak));
struct KernelResources {
    std::string mangled, signature, name; // demangled: "void ns::k<256>(float*)"; name: "ns::k<256>"
    int regs;
    size_t smem;
};
// "_Z1kPi" -> "k(int*)"; a name that is not mangled stays as it is.
inline std::string demangle(const char *mangled) {
    int status = 0;
    char *d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string full = status == 0 && d ? d : mangled;
    free(d);
    return full;
}
// "void ns::k<256, float>(float const*, int)" (a demangled signature) -> "ns::k<256,float>"
// (spaces and anonymous namespaces dropped, as launches name the kernel).
inline std::string kernel_name(std::string full) {
    std::string name;
    for (size_t at; (at = full.find("(anonymous namespace)::")) != std::string::npos;) full.erase(at, 23);
    int depth = 0;
    for (char c : full) {
        if (c == '(' && depth == 0) break;
        depth += (c == '<') - (c == '>');
        if (c == ' ' && depth == 0) name.clear(); // what came before was the return type
        else if (c != ' ') name += c;
    }
    return name;
}
inline const std::vector<KernelResources> &ptxas_kernels() {
    static std::vector<KernelResources> table = [] {
        std::vector<KernelResources> t;
        char name[4096];
        int regs, used;
        size_t smem;
        for (const char *p = cuemu_ptxas_info; p && *p; p += used)
            if (sscanf(p, "%4095s %d %zu\n%n", name, &regs, &smem, &used) != 3) break;
            else {
                std::string signature = demangle(name);
                t.push_back({name, signature, kernel_name(signature), regs, smem});
            }
        return t;
    }();
    return table;
}
// The name without namespaces and template arguments: "ns::k<256,float>" -> "k".
inline std::string base_name(const std::string &s) {
    std::string b = s.substr(0, s.find('<'));
    size_t colon = b.rfind("::");
    return colon == std::string::npos ? b : b.substr(colon + 2);
}
// Is the kernel `name` the one a launch wrote as `text`: the same, or the same without the
// namespaces (k for ns::k); or, by_base, the same base name (k for k<BLOCK>)?
inline bool launches(const std::string &name, const std::string &text, bool by_base) {
    if (by_base) return base_name(name) == base_name(text);
    size_t n = text.size() + 2;
    return name == text || (name.size() > n && name.compare(name.size() - n, n, "::" + text) == 0);
}
// The resources of the kernel launched as `text` (the source before <<<), or null: the
// kernels of that name with those template arguments, else of that base name; of several,
// the least demanding, so that a launch a GPU would run is never refused.
inline const KernelResources *kernel_resources(const char *text) {
    static std::unordered_map<const char *, const KernelResources *> cache; // text: a literal per launch site
    auto hit = cache.find(text);
    if (hit != cache.end()) return hit->second;
    std::string want; // without spaces and parentheses: "(ns::k<256, float>)" -> "ns::k<256,float>"
    for (const char *p = text; *p; p++)
        if (*p != ' ' && *p != '(' && *p != ')') want += *p;
    if (want.compare(0, 2, "::") == 0) want.erase(0, 2);
    const KernelResources *best = nullptr;
    for (bool by_base : {false, true}) {
        for (const KernelResources &k : ptxas_kernels())
            if (launches(k.name, want, by_base) &&
                (!best || std::tie(k.regs, k.smem) < std::tie(best->regs, best->smem)))
                best = &k;
        if (best) break;
    }
    return cache[text] = best;
}
// The functions of the running executable by address, from its ELF symbol table
// (.symtab), which also lists those of internal linkage (static, in an anonymous namespace)
// that dladdr cannot see; empty when the file has none (stripped) or cannot be read.
struct ElfHeader {
    unsigned char ident[16];
    uint16_t type, machine;
    uint32_t version;
    uint64_t entry, phoff, shoff;
    uint32_t flags;
    uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct ElfSection {
    uint32_t name, type;
    uint64_t flags, addr, offset, size;
    uint32_t link, info;
    uint64_t addralign, entsize;
};
struct ElfSymbol {
    uint32_t name;
    unsigned char info, other;
    uint16_t shndx;
    uint64_t value, size;
};
static_assert(sizeof(ElfHeader) == 64 && sizeof(ElfSection) == 64 && sizeof(ElfSymbol) == 24, "ELF64 layouts");
inline bool read_at(FILE *f, uint64_t offset, uint64_t n, std::vector<char> &out) {
    out.resize(n);
    return n < (1ull << 31) && fseeko(f, (off_t)offset, SEEK_SET) == 0 && fread(out.data(), 1, n, f) == n;
}
inline const std::unordered_map<uintptr_t, std::string> &local_functions() {
    static const std::unordered_map<uintptr_t, std::string> table = [] {
        std::unordered_map<uintptr_t, std::string> t;
        Dl_info self;
        FILE *f = dladdr((const void *)&read_at, &self) ? fopen("/proc/self/exe", "rb") : nullptr;
        std::vector<char> bytes, syms, names;
        ElfHeader h;
        bool ok = f && read_at(f, 0, sizeof h, bytes);
        if (ok) memcpy(&h, bytes.data(), sizeof h);
        ok = ok && !memcmp(h.ident, "\x7f" "ELF", 4) && h.ident[4] == 2 /* 64-bit */ &&
             h.shentsize == sizeof(ElfSection) && read_at(f, h.shoff, h.shnum * sizeof(ElfSection), bytes);
        const ElfSection *sec = (const ElfSection *)bytes.data();
        uintptr_t bias = ok && h.type == 3 ? (uintptr_t)self.dli_fbase : 0; // ET_DYN (PIE): loaded at an offset
        for (int k = 0; ok && k < h.shnum; k++) {
            if (sec[k].type != 2 /* SHT_SYMTAB */ || sec[k].link >= h.shnum) continue;
            const ElfSection &strtab = sec[sec[k].link];
            if (!read_at(f, sec[k].offset, sec[k].size, syms) || !read_at(f, strtab.offset, strtab.size, names))
                continue;
            for (size_t j = 0; j + sizeof(ElfSymbol) <= syms.size(); j += sizeof(ElfSymbol)) {
                ElfSymbol sym;
                memcpy(&sym, syms.data() + j, sizeof sym);
                if ((sym.info & 0xf) != 2 /* STT_FUNC */ || !sym.value || sym.name >= names.size()) continue;
                const char *name = names.data() + sym.name;
                t.emplace(bias + sym.value, std::string(name, strnlen(name, names.size() - sym.name)));
            }
        }
        if (f) fclose(f);
        return t;
    }();
    return table;
}
// The (mangled) symbol of the kernel at address f, or null: dladdr's (nvcc-emu links with
// -rdynamic, so it finds kernels of external linkage, naming the symbol that holds f,
// which must also start there), else the executable's symbol table's.
inline const char *symbol_at(const void *f) {
    Dl_info info;
    if (dladdr(f, &info) && info.dli_sname && info.dli_saddr == f) return info.dli_sname;
    auto it = local_functions().find((uintptr_t)f);
    return it == local_functions().end() ? nullptr : it->second.c_str();
}
// The resources of the kernel at address f (cudaFuncGetAttributes, the occupancy API), by
// its symbol; null for a kernel without one or without a report.
inline const KernelResources *kernel_resources_at(const void *f) {
    const char *sym = cuemu_ptxas_info ? symbol_at(f) : nullptr;
    if (!sym) return nullptr;
    for (const KernelResources &k : ptxas_kernels())
        if (k.mangled == sym) return &k;
    std::string signature = demangle(sym); // g++ mangles kernels of internal linkage unlike nvcc
    for (const KernelResources &k : ptxas_kernels())
        if (k.signature == signature) return &k;
    return nullptr;
}
// Registers are allocated per warp in units of 256; a block (and an SM) has 65,536.
inline int regs_per_warp(int regs) { return (regs * 32 + 255) / 256 * 256; }
// The most threads a block may have on sm_90 with regs registers per thread.
inline int max_threads_for(int regs) { return regs > 0 ? std::min(1024, 65536 / regs_per_warp(regs) * 32) : 1024; }

// ---------------------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------------------
// A launch's configuration; function: the kernel's address where the launch names it by a
// value (table[i].kernel<<<...>>>: nvcc-emu adds .launching(...)), else null.
struct Config {
    dim3 grid, block;
    size_t dyn_smem;
    cudaStream_t stream;
    const void *function = nullptr;
    Config(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0) : grid(g), block(b), dyn_smem(s), stream(st) {}
    Config &launching(const void *f) { return function = f, *this; }
};
template <class T> inline const void *function_address(T *p) {
    if constexpr (std::is_function_v<T>) return (const void *)p;
    else return nullptr;
}
inline cudaError_t set_error(cudaError_t e) {
    if (e != cudaSuccess) g_last_error = e;
    return e;
}
// CUDA's limits; on failure the launch does not run and the last error is set. The
// kernel's registers and static shared memory count when ptxas reported them: found by the
// launch's text, else, for a launch through a function pointer, by its address.
inline bool valid_config(const Config &c, const char *kernel, const char *file, int line) {
    const dim3 &g = c.grid, &b = c.block;
    uint64_t threads = (uint64_t)b.x * b.y * b.z;
    const KernelResources *k = kernel_resources(kernel);
    if (!k && c.function) k = kernel_resources_at(c.function);
    size_t static_smem = k ? k->smem : 0, smem = c.dyn_smem + static_smem;
    bool opted_in = g_smem_optin != smem_default; // else static and dynamic share 48 KiB
    std::string why;
    cudaError_t err = cudaErrorInvalidConfiguration;
    if (threads == 0 || threads > 1024) why = "a block must have 1 to 1024 threads";
    else if (b.x > 1024 || b.y > 1024 || b.z > 64) why = "block dimensions are limited to (1024,1024,64)";
    else if (g.x == 0 || g.y == 0 || g.z == 0) why = "grid dimensions must be positive";
    else if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) why = "grid dimensions are limited to (2^31-1,65535,65535)";
    else if (smem > smem_optin_limit || c.dyn_smem > g_smem_optin || (!opted_in && smem > smem_default)) {
        std::string what = static_smem ? format("%zu bytes of static (ptxas) and %zu of dynamic shared memory",
                                                static_smem, c.dyn_smem)
                                        : "dynamic shared memory";
        why = what + (smem > smem_optin_limit ? ": more than the device's 227 KiB per block"
                      : opted_in ? format(": more than the %zu bytes set with cudaFuncSetAttribute", g_smem_optin)
                                 : ": above 48 KiB, which needs cudaFuncSetAttribute(kernel, "
                                   "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first");
        err = cudaErrorInvalidValue;
    } else if (k && threads > (uint64_t)max_threads_for(k->regs)) {
        why = format("too many resources requested for launch: ptxas gave the kernel %d registers per thread, so a "
                     "block may have at most %d threads", k->regs, max_threads_for(k->regs));
        err = cudaErrorLaunchOutOfResources;
    }
    if (why.empty()) return true;
    note("note: launch of %s (%s:%d) with grid (%u,%u,%u), block (%u,%u,%u), %zu bytes of dynamic shared memory "
         "fails: %s; the kernel does not run (%s)", kernel, file, line, g.x, g.y, g.z, b.x, b.y, b.z, c.dyn_smem,
         why.c_str(), err == cudaErrorInvalidValue ? "cudaErrorInvalidValue"
                      : err == cudaErrorLaunchOutOfResources ? "cudaErrorLaunchOutOfResources"
                                                             : "cudaErrorInvalidConfiguration");
    set_error(err);
    return false;
}
// nvcc-emu puts `if (::cuemu::over_launch_bound(MAX)) return;` first in the body of a
// kernel declared with __launch_bounds__(MAX, ...) (and MAX 0, no bound, in an unbounded
// kernel with the name and parameter count of a bounded one). A GPU refuses a launch whose
// blocks have more threads (cudaErrorInvalidValue, as an H200 with CUDA 13.0 answered) and
// the kernel does not run: here every thread returns at once, and the first sets the error
// and says why. While probing, the call only reports MAX.
inline bool over_launch_bound(long long max) {
    if (g_probing) {
        g_probed = max;
        return true;
    }
    if (max <= 0 || g_nthreads <= max) return false;
    if (!g_over_bound) {
        g_over_bound = true;
        note("note: launch of %s (%s:%d) with block (%u,%u,%u) fails: invalid argument: the kernel's "
             "__launch_bounds__ allow at most %lld threads per block; the kernel does not run (cudaErrorInvalidValue)",
             g_kernel, g_launch_file, g_launch_line, g_block_dim.x, g_block_dim.y, g_block_dim.z, max);
        set_error(cudaErrorInvalidValue);
    }
    return true;
}
// The kernels that start with that check (nvcc-emu registers each after its body, by base
// name and parameter count), and the bound of the kernel at f for the attribute and
// occupancy API: such a kernel, found by its symbol (symbol_at), is called with zeroed
// arguments while probing, and returns at its first statement; 0 for any other.
inline std::vector<std::pair<std::string, int>> &bounded_kernels() {
    static std::vector<std::pair<std::string, int>> kernels;
    return kernels;
}
inline bool bounded_kernel(const char *name, int nparams) {
    bounded_kernels().emplace_back(name, nparams);
    return true;
}
template <class T> inline T zeroed() {
    if constexpr (std::is_default_constructible_v<T>) return T{};
    else {
        alignas(T) unsigned char bytes[sizeof(T)] = {};
        return *reinterpret_cast<T *>(bytes);
    }
}
template <class F> inline long long launch_bound_at(F *) { return 0; }
template <class... A> inline long long launch_bound_at(void (*f)(A...)) {
    const char *sym = bounded_kernels().empty() ? nullptr : symbol_at((const void *)f);
    if (!sym) return 0;
    const std::pair<std::string, int> key(base_name(kernel_name(demangle(sym))), (int)sizeof...(A));
    if (std::find(bounded_kernels().begin(), bounded_kernels().end(), key) == bounded_kernels().end()) return 0;
    g_probing = true;
    g_probed = 0;
    f(zeroed<A>()...);
    g_probing = false;
    return g_probed;
}
// A pointer argument a GPU could not dereference: a host address.
template <class T> inline void check_arg(const T &v, int index) {
    if constexpr (std::is_pointer_v<T> && !std::is_function_v<std::remove_pointer_t<T>>) {
        if (v && !device_accessible((const void *)v))
            fail(nullptr, "%s (%s:%d): argument %d is the host address %p, which is not device memory "
                          "(cudaMalloc, cudaMallocManaged, cudaMallocHost, a symbol address); a GPU would fault "
                          "with cudaErrorIllegalAddress", g_kernel, g_launch_file, g_launch_line, index, (const void *)v);
    }
}
template <class Body> inline void call_body(void *body) { (*(Body *)body)(); }
inline void run_grid(const Config &c) {
    g_grid_dim = c.grid;
    g_block_dim = c.block;
    g_nthreads = (int)(c.block.x * c.block.y * c.block.z);
    set_dyn_smem_size(c.dyn_smem);
    uint64_t nblocks = (uint64_t)c.grid.x * c.grid.y * c.grid.z;
    // Block order when reordering: i -> (a*i + b) mod nblocks with a coprime to nblocks.
    uint64_t a = 1, b = 0;
    if (reordering() && nblocks > 1 && nblocks < (1ull << 32)) {
        do a = random_u64() % nblocks; while (std::__gcd(a, nblocks) != 1);
        b = random_u64() % nblocks;
    }
    g_in_kernel = true;
    for (uint64_t i = 0; i < nblocks; i++) {
        uint64_t k = (a * i + b) % nblocks;
        g_block_idx = uint3{(unsigned)(k % c.grid.x), (unsigned)(k / c.grid.x % c.grid.y),
                            (unsigned)(k / ((uint64_t)c.grid.x * c.grid.y))};
        fill_garbage(dyn_smem, c.dyn_smem, 0xFF);
        memset(dyn_smem + c.dyn_smem, guard_byte, smem_guard);
        run_block();
        end_block_shared();
    }
    g_in_kernel = false;
}
// A kernel argument written NULL or 0 (nvcc-emu writes Zero{} for it): it becomes what the
// literal 0 would as the parameter, a null pointer, a 0, a dim3(0).
struct Zero {
    template <class T> constexpr operator T() const { return T(0); }
};
// Arguments are evaluated once on the host and kept as decayed copies; every thread calls
// the kernel with them (a by-value kernel parameter is then a per-thread copy, as on a GPU).
template <class F, class... A>
inline void launch(const Config &c, const char *kernel, const char *file, int line, F &&f, A &&...args) {
    std::tuple<std::decay_t<A>...> argv(std::forward<A>(args)...);
    if (g_in_kernel) fail(g_cur, "launch of %s (%s:%d) from device code: dynamic parallelism is unsupported", kernel, file, line);
    if (g_settings.no_device) { set_error(cudaErrorNoDevice); return; }
    if (!valid_config(c, kernel, file, line)) return;
    g_kernel = kernel;
    g_launch_file = file;
    g_launch_line = line;
    g_over_bound = false;
    report_kernel_faults();
    std::apply([](const auto &...v) { int i = 0; (check_arg(v, i++), ...); }, argv);
    auto body = [&] { std::apply(f, argv); };
    g_body = &call_body<decltype(body)>;
    g_body_ctx = &body;
    run_grid(c);
}

} // namespace cuemu

// ---------------------------------------------------------------------------------------
// Built-in variables (per fiber) and block/warp intrinsics
// ---------------------------------------------------------------------------------------
#define threadIdx (static_cast<const uint3 &>(::cuemu::g_cur->tid))
#define blockIdx (static_cast<const uint3 &>(::cuemu::g_block_idx))
#define blockDim (static_cast<const dim3 &>(::cuemu::g_block_dim))
#define gridDim (static_cast<const dim3 &>(::cuemu::g_grid_dim))
constexpr int warpSize = 32;

namespace cuemu {
#define CUEMU_SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()
// Block votes: out = number of true predicates | participants << 32.
inline void complete_count(Thread *const *m, int n) {
    uint64_t c = 0;
    for (int i = 0; i < n; i++) c += m[i]->in != 0;
    for (int i = 0; i < n; i++) m[i]->out = c | (uint64_t)n << 32;
}
inline uint64_t block_vote(const char *what, int pred, const char *file, int line) {
    return collective(Scope::block, what, file, line, 0, complete_count, pred != 0);
}
// An unspecified value (reading a lane outside the collective): the caller's own value,
// or garbage when reordering.
inline uint64_t unspecified(uint64_t own) { return reordering() ? random_u64() : own; }
enum ShflMode { shfl_idx, shfl_up, shfl_down, shfl_xor };
template <int Mode> inline void complete_shfl(Thread *const *m, int n) {
    Thread *by_lane[32] = {};
    for (int i = 0; i < n; i++) by_lane[m[i]->lin & 31] = m[i];
    for (int i = 0; i < n; i++) {
        Thread *t = m[i];
        int lane = t->lin & 31, w = t->width, seg = lane & ~(w - 1), src = lane;
        if (Mode == shfl_idx) src = seg + (t->arg & (w - 1));
        else if (Mode == shfl_up) src = lane - t->arg >= seg ? lane - t->arg : lane;
        else if (Mode == shfl_down) src = lane + t->arg < seg + w ? lane + t->arg : lane;
        else src = ((lane ^ t->arg) & ~(w - 1)) == seg ? lane ^ t->arg : lane;
        Thread *s = src >= 0 && src < 32 ? by_lane[src] : nullptr;
        t->out = s ? s->in : unspecified(t->in);
    }
}
template <class T> inline T shuffle_value(int mode, const char *what, unsigned mask, T v, int arg, int width,
                                          const char *file, int line) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move values of at most 8 bytes");
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail(g_cur, "%s (%s:%d): width %d is not a power of 2 in 1..32", what, file, line, width);
    static const CompleteFn fns[] = {complete_shfl<shfl_idx>, complete_shfl<shfl_up>, complete_shfl<shfl_down>,
                                     complete_shfl<shfl_xor>};
    uint64_t in = 0;
    memcpy(&in, &v, sizeof(T));
    uint64_t out = collective(Scope::warp, what, file, line, mask, fns[mode], in, arg, width);
    T r;
    memcpy(&r, &out, sizeof(T));
    return r;
}
// Warp votes: out = ballot bits | participating lanes << 32.
inline void complete_ballot(Thread *const *m, int n) {
    uint64_t bits = 0, part = 0;
    for (int i = 0; i < n; i++) {
        bits |= (uint64_t)(m[i]->in != 0) << (m[i]->lin & 31);
        part |= 1ull << (m[i]->lin & 31);
    }
    for (int i = 0; i < n; i++) m[i]->out = bits | part << 32;
}
inline uint64_t warp_vote(const char *what, unsigned mask, int pred, const char *file, int line) {
    return collective(Scope::warp, what, file, line, mask, complete_ballot, pred != 0);
}
inline void complete_match_any(Thread *const *m, int n) {
    for (int i = 0; i < n; i++) {
        unsigned same = 0;
        for (int j = 0; j < n; j++) if (m[j]->in == m[i]->in) same |= 1u << (m[j]->lin & 31);
        m[i]->out = same;
    }
}
inline void complete_match_all(Thread *const *m, int n) {
    unsigned part = 0;
    bool equal = true;
    for (int i = 0; i < n; i++) { part |= 1u << (m[i]->lin & 31); equal &= m[i]->in == m[0]->in; }
    for (int i = 0; i < n; i++) m[i]->out = equal ? part : 0;
}
template <class T, class Op> inline void complete_reduce(Thread *const *m, int n) {
    T acc = (T)m[0]->in;
    for (int i = 1; i < n; i++) acc = Op()(acc, (T)m[i]->in);
    for (int i = 0; i < n; i++) m[i]->out = (uint64_t)acc;
}
struct op_add { template <class T> T operator()(T a, T b) const { return a + b; } };
struct op_min { template <class T> T operator()(T a, T b) const { return b < a ? b : a; } };
struct op_max { template <class T> T operator()(T a, T b) const { return a < b ? b : a; } };
struct op_and { template <class T> T operator()(T a, T b) const { return a & b; } };
struct op_or { template <class T> T operator()(T a, T b) const { return a | b; } };
struct op_xor { template <class T> T operator()(T a, T b) const { return a ^ b; } };
template <class T, class Op> inline T warp_reduce(const char *what, unsigned mask, T v, const char *file, int line) {
    return (T)collective(Scope::warp, what, file, line, mask, complete_reduce<T, Op>, (uint64_t)v);
}
} // namespace cuemu

inline void __syncthreads(CUEMU_SITE) {
    ::cuemu::collective(::cuemu::Scope::block, "__syncthreads", file, line, 0, ::cuemu::complete_nothing);
}
inline int __syncthreads_count(int pred, CUEMU_SITE) {
    return (int)(uint32_t)::cuemu::block_vote("__syncthreads_count", pred, file, line);
}
inline int __syncthreads_or(int pred, CUEMU_SITE) {
    return (uint32_t)::cuemu::block_vote("__syncthreads_or", pred, file, line) != 0;
}
inline int __syncthreads_and(int pred, CUEMU_SITE) {
    uint64_t r = ::cuemu::block_vote("__syncthreads_and", pred, file, line);
    return (uint32_t)r == (uint32_t)(r >> 32);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, CUEMU_SITE) {
    ::cuemu::collective(::cuemu::Scope::warp, "__syncwarp", file, line, mask, ::cuemu::complete_nothing);
}
template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_idx, "__shfl_sync", mask, v, src, width, file, line);
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_up, "__shfl_up_sync", mask, v, (int)delta, width, file, line);
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_down, "__shfl_down_sync", mask, v, (int)delta, width, file, line);
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_xor, "__shfl_xor_sync", mask, v, lane_mask, width, file, line);
}
// Pre-Volta shuffles without a mask: the whole warp.
template <class T> inline T __shfl(T v, int src, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_idx, "__shfl", 0xffffffffu, v, src, width, file, line);
}
template <class T> inline T __shfl_up(T v, unsigned delta, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_up, "__shfl_up", 0xffffffffu, v, (int)delta, width, file, line);
}
template <class T> inline T __shfl_down(T v, unsigned delta, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_down, "__shfl_down", 0xffffffffu, v, (int)delta, width, file, line);
}
template <class T> inline T __shfl_xor(T v, int lane_mask, int width = 32, CUEMU_SITE) {
    return ::cuemu::shuffle_value(::cuemu::shfl_xor, "__shfl_xor", 0xffffffffu, v, lane_mask, width, file, line);
}
inline unsigned __ballot_sync(unsigned mask, int pred, CUEMU_SITE) {
    return (uint32_t)::cuemu::warp_vote("__ballot_sync", mask, pred, file, line);
}
inline int __any_sync(unsigned mask, int pred, CUEMU_SITE) {
    return (uint32_t)::cuemu::warp_vote("__any_sync", mask, pred, file, line) != 0;
}
inline int __all_sync(unsigned mask, int pred, CUEMU_SITE) {
    uint64_t r = ::cuemu::warp_vote("__all_sync", mask, pred, file, line);
    return (uint32_t)r == (uint32_t)(r >> 32);
}
inline unsigned __activemask(CUEMU_SITE) {
    return (unsigned)::cuemu::collective(::cuemu::Scope::converged, "__activemask", file, line, 0,
                                         ::cuemu::complete_nothing);
}
template <class T> inline unsigned __match_any_sync(unsigned mask, T v, CUEMU_SITE) {
    static_assert(sizeof(T) <= 8, "__match_any_sync takes 32- or 64-bit values");
    uint64_t in = 0;
    memcpy(&in, &v, sizeof(T));
    return (unsigned)::cuemu::collective(::cuemu::Scope::warp, "__match_any_sync", file, line, mask,
                                         ::cuemu::complete_match_any, in);
}
template <class T> inline unsigned __match_all_sync(unsigned mask, T v, int *pred, CUEMU_SITE) {
    static_assert(sizeof(T) <= 8, "__match_all_sync takes 32- or 64-bit values");
    uint64_t in = 0;
    memcpy(&in, &v, sizeof(T));
    unsigned r = (unsigned)::cuemu::collective(::cuemu::Scope::warp, "__match_all_sync", file, line, mask,
                                               ::cuemu::complete_match_all, in);
    *pred = r != 0;
    return r;
}
#define CUEMU_WARP_REDUCE(NAME, T, OP)                                                                   \
    inline T NAME(unsigned mask, T v, CUEMU_SITE) {                                                      \
        return ::cuemu::warp_reduce<T, ::cuemu::OP>(#NAME, mask, v, file, line);                         \
    }
CUEMU_WARP_REDUCE(__reduce_add_sync, int, op_add)
CUEMU_WARP_REDUCE(__reduce_add_sync, unsigned, op_add)
CUEMU_WARP_REDUCE(__reduce_min_sync, int, op_min)
CUEMU_WARP_REDUCE(__reduce_min_sync, unsigned, op_min)
CUEMU_WARP_REDUCE(__reduce_max_sync, int, op_max)
CUEMU_WARP_REDUCE(__reduce_max_sync, unsigned, op_max)
CUEMU_WARP_REDUCE(__reduce_and_sync, unsigned, op_and)
CUEMU_WARP_REDUCE(__reduce_or_sync, unsigned, op_or)
CUEMU_WARP_REDUCE(__reduce_xor_sync, unsigned, op_xor)
#undef CUEMU_WARP_REDUCE

// ---------------------------------------------------------------------------------------
// Atomics (one OS thread runs every fiber: a plain read-modify-write is atomic), fences,
// loads, clocks
// ---------------------------------------------------------------------------------------
#define CUEMU_ATOMIC(NAME, T, EXPR)                                                                      \
    inline T NAME(T *a, T v) { T old = *a; *a = (EXPR); return old; }                                 \
    inline T NAME##_block(T *a, T v) { return NAME(a, v); }                                           \
    inline T NAME##_system(T *a, T v) { return NAME(a, v); }
#define CUEMU_ATOMIC_INT(T)                                                                              \
    CUEMU_ATOMIC(atomicAdd, T, old + v)                                                                  \
    CUEMU_ATOMIC(atomicExch, T, v)                                                                       \
    CUEMU_ATOMIC(atomicMin, T, v < old ? v : old)                                                        \
    CUEMU_ATOMIC(atomicMax, T, v > old ? v : old)                                                        \
    CUEMU_ATOMIC(atomicAnd, T, old & v)                                                                  \
    CUEMU_ATOMIC(atomicOr, T, old | v)                                                                   \
    CUEMU_ATOMIC(atomicXor, T, old ^ v)
CUEMU_ATOMIC_INT(int)
CUEMU_ATOMIC_INT(unsigned)
CUEMU_ATOMIC_INT(unsigned long long)
CUEMU_ATOMIC(atomicMin, long long, v < old ? v : old)
CUEMU_ATOMIC(atomicMax, long long, v > old ? v : old)
CUEMU_ATOMIC(atomicSub, int, old - v)
CUEMU_ATOMIC(atomicSub, unsigned, old - v)
CUEMU_ATOMIC(atomicAdd, float, old + v)
CUEMU_ATOMIC(atomicAdd, double, old + v)
CUEMU_ATOMIC(atomicExch, float, v)
CUEMU_ATOMIC(atomicInc, unsigned, old >= v ? 0 : old + 1)               // CUDA's wrap-around
CUEMU_ATOMIC(atomicDec, unsigned, old == 0 || old > v ? v : old - 1)
#undef CUEMU_ATOMIC_INT
#define CUEMU_ATOMIC_CAS(T)                                                                              \
    inline T atomicCAS(T *a, T cmp, T v) { T old = *a; if (old == cmp) *a = v; return old; }          \
    inline T atomicCAS_block(T *a, T cmp, T v) { return atomicCAS(a, cmp, v); }                       \
    inline T atomicCAS_system(T *a, T cmp, T v) { return atomicCAS(a, cmp, v); }
CUEMU_ATOMIC_CAS(int)
CUEMU_ATOMIC_CAS(unsigned)
CUEMU_ATOMIC_CAS(unsigned long long)
CUEMU_ATOMIC_CAS(unsigned short)
#undef CUEMU_ATOMIC_CAS

inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __nanosleep(unsigned) {}
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline T __ldca(const T *p) { return *p; }
template <class T> inline T __ldcs(const T *p) { return *p; }
template <class T> inline T __ldlu(const T *p) { return *p; }
template <class T> inline T __ldcv(const T *p) { return *p; }
template <class T> inline void __stcg(T *p, T v) { *p = v; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }
inline long long clock64() {
    return (long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------------------
// Math: CUDA-only functions (the rest comes from <cmath>)
// ---------------------------------------------------------------------------------------
namespace cuemu {
template <class To, class From> inline To bit_cast(From f) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast between types of one size");
    To t;
    memcpy(&t, &f, sizeof t);
    return t;
}
// Float -> integer conversions saturate, and NaN gives 0, as on a GPU.
template <class I, class F> inline I saturate_to(F x) {
    if (x != x) return 0;
    if (x <= (F)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
    if (x >= (F)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)x;
}
// Directed rounding of an exact (or nearly exact) double result to float.
inline float round_float(double d, int dir) { // dir: 0 toward zero, 1 up, -1 down
    float f = (float)d;
    if (dir == 0 && std::fabs((double)f) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    if (dir == 1 && (double)f < d) f = std::nextafter(f, INFINITY);
    if (dir == -1 && (double)f > d) f = std::nextafter(f, -INFINITY);
    return f;
}
// erfinv by Newton's method on erf, in double.
inline double erfinv(double y) {
    if (y <= -1) return y == -1 ? -INFINITY : NAN;
    if (y >= 1) return y == 1 ? INFINITY : NAN;
    double w = -std::log((1.0 - y) * (1.0 + y)), x = std::copysign(std::sqrt(std::fmax(w - std::log(w) - 1.0, 0.0) ), y);
    if (std::fabs(y) < 0.7) x = y * 0.886226925452758; // sqrt(pi)/2 * y
    for (int i = 0; i < 60; i++) {
        double dx = (std::erf(x) - y) / (1.1283791670955126 * std::exp(-x * x));
        x -= dx;
        if (std::fabs(dx) <= 1e-16 * std::fabs(x)) break;
    }
    return x;
}
inline double erfcinv(double y) { // Newton on erfc, accurate for small y
    if (y <= 0) return y == 0 ? INFINITY : NAN;
    if (y >= 2) return y == 2 ? -INFINITY : NAN;
    double x = erfinv(1.0 - y);
    for (int i = 0; i < 60 && std::isfinite(x); i++) {
        double dx = (std::erfc(x) - y) / (-1.1283791670955126 * std::exp(-x * x));
        x -= dx;
        if (std::fabs(dx) <= 1e-16 * std::fabs(x)) break;
    }
    return x;
}
} // namespace cuemu

// The fast intrinsics: the accurate functions, or with CUEMU_ULP as far off as the CUDA
// Programming Guide's table of intrinsic error bounds allows (an absolute error on
// [0.5, 2] for the logarithms and on [-pi, pi] for sine and cosine, ulps elsewhere).
// __powf and __tanf, whose bounds the Guide derives from their implementation, stay accurate.
inline float __expf(float x) { return cuemu::ulp_error(expf(x), 2 + (int)fabsf(1.173f * x)); }
inline float __exp10f(float x) { return cuemu::ulp_error(powf(10.0f, x), 2 + (int)fabsf(2.97f * x)); }
inline float __logf(float x) { return cuemu::fast_log(logf(x), x, cuemu::fast_abs_error, 3); }
inline float __log2f(float x) { return cuemu::fast_log(log2f(x), x, 2.4e-7 /* 2^-22 */, 2); }
inline float __log10f(float x) { return cuemu::fast_log(log10f(x), x, 6.0e-8 /* 2^-24 */, 3); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float x) { return cuemu::fast_trig(sinf(x), x); }
inline float __cosf(float x) { return cuemu::fast_trig(cosf(x), x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) { *s = __sinf(x); *c = __cosf(x); }
inline float __fdividef(float a, float b) { return cuemu::ulp_error(a / b, 2); }
inline float fdividef(float a, float b) { return a / b; } // __fdividef only with --use_fast_math
// The standard math functions as a kernel computes them: nvcc-emu writes each call of one
// in the program's source (expf(...), exp(...), std::exp(...)) as ::cuemu::dev::NAME(...).
// The host's result; with CUEMU_ULP, inside a kernel, off by up to the maximum ulp error
// the CUDA Programming Guide gives for it (compute capability 5.2 and later; lgamma(f)
// outside [-23.0001, -2.2637] and [-10.001, -2.264]), as the fast intrinsics are. NAMEf
// and NAME of float arguments have the single-precision bound and compute in float, as
// CUDA's float overloads do; NAME of anything else, the host's overload (with ADL), and
// the double-precision bound when it gives a double. A __host__ __device__ function called
// on the host gets the host's result.
namespace cuemu::dev {
template <class T> inline T device_error(T v, int float_ulps, int double_ulps) {
    if constexpr (std::is_same_v<T, float>) return g_in_kernel ? ulp_error(v, float_ulps) : v;
    else if constexpr (std::is_same_v<T, double>) return g_in_kernel ? ulp_error(v, double_ulps) : v;
    else return v;
}
// name, its single- and double-precision bounds
#define CUEMU_STD_MATH(X)                                                                                             \
    X(exp, 2, 1) X(exp2, 2, 1) X(exp10, 2, 1) X(expm1, 1, 1) X(log, 1, 1) X(log2, 1, 1) X(log10, 2, 1) X(log1p, 1, 1) \
    X(sin, 2, 2) X(cos, 2, 2) X(tan, 4, 2) X(asin, 2, 2) X(acos, 2, 2) X(atan, 2, 2) X(sinh, 3, 2) X(cosh, 2, 1)      \
    X(tanh, 2, 1) X(asinh, 3, 3) X(acosh, 4, 3) X(atanh, 3, 2) X(erf, 2, 2) X(erfc, 4, 5) X(cbrt, 1, 1)              \
    X(tgamma, 5, 10) X(lgamma, 6, 4)
#define CUEMU_STD_MATH2(X) X(pow, 4, 2) X(atan2, 3, 2) X(hypot, 3, 2)
#define CUEMU_DEV_GENERIC(name, fulps, dulps)                                                                         \
    namespace host {                                                                                                  \
    using ::name;                                                                                                     \
    template <class... A> inline auto call_##name(A... a) { return name(a...); }                                    \
    }                                                                                                                 \
    template <class... A> inline auto name(A... a) {                                                                  \
        if constexpr ((std::is_same_v<A, float> && ...)) return name##f(a...);                                        \
        else return device_error(host::call_##name(a...), fulps, dulps);                                              \
    }
#define CUEMU_DEV_FN(name, fulps, dulps)                                                                              \
    inline float name##f(float x) { return device_error(::name##f(x), fulps, 0); }                                    \
    CUEMU_DEV_GENERIC(name, fulps, dulps)
#define CUEMU_DEV_FN2(name, fulps, dulps)                                                                             \
    inline float name##f(float x, float y) { return device_error(::name##f(x, y), fulps, 0); }                        \
    CUEMU_DEV_GENERIC(name, fulps, dulps)
CUEMU_STD_MATH(CUEMU_DEV_FN)
CUEMU_STD_MATH2(CUEMU_DEV_FN2)
#undef CUEMU_DEV_GENERIC
#undef CUEMU_DEV_FN
#undef CUEMU_DEV_FN2
#undef CUEMU_STD_MATH
#undef CUEMU_STD_MATH2
inline void sincosf(float x, float *s, float *c) {
    ::sincosf(x, s, c);
    *s = device_error(*s, 2, 0), *c = device_error(*c, 2, 0);
}
inline void sincos(float x, float *s, float *c) { sincosf(x, s, c); }
inline void sincos(double x, double *s, double *c) {
    ::sincos(x, s, c);
    *s = device_error(*s, 0, 2), *c = device_error(*c, 0, 2);
}
} // namespace cuemu::dev
#if !(defined(__GLIBC_PREREQ) && __GLIBC_PREREQ(2, 41)) // C23 added these to glibc
inline float rsqrtf(float x) { return cuemu::ulp_error(1.0f / sqrtf(x), 2); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float sinpif(float x) { return (float)sin(M_PI * (double)x); }
inline float cospif(float x) { return (float)cos(M_PI * (double)x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
#endif
inline void sincospif(float x, float *s, float *c) { *s = (float)sin(M_PI * (double)x); *c = (float)cos(M_PI * (double)x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float rhypotf(float a, float b) { return 1.0f / hypotf(a, b); }
inline float norm3df(float a, float b, float c) { return (float)sqrt((double)a * a + (double)b * b + (double)c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * (float)M_SQRT1_2); }
inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
inline float erfinvf(float y) { return (float)::cuemu::erfinv(y); }
inline float erfcinvf(float y) { return (float)::cuemu::erfcinv(y); }
inline double erfinv(double y) { return ::cuemu::erfinv(y); }
inline double erfcinv(double y) { return ::cuemu::erfcinv(y); }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; } // NaN -> 0
inline float __frsqrt_rn(float x) { return (float)(1.0 / sqrt((double)x)); }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fadd_rz(float a, float b) { return ::cuemu::round_float((double)a + b, 0); }
inline float __fadd_ru(float a, float b) { return ::cuemu::round_float((double)a + b, 1); }
inline float __fadd_rd(float a, float b) { return ::cuemu::round_float((double)a + b, -1); }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fsub_rz(float a, float b) { return ::cuemu::round_float((double)a - b, 0); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmul_rz(float a, float b) { return ::cuemu::round_float((double)a * b, 0); }
inline float __fmul_ru(float a, float b) { return ::cuemu::round_float((double)a * b, 1); }
inline float __fmul_rd(float a, float b) { return ::cuemu::round_float((double)a * b, -1); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline int __float_as_int(float f) { return ::cuemu::bit_cast<int>(f); }
inline unsigned __float_as_uint(float f) { return ::cuemu::bit_cast<unsigned>(f); }
inline float __int_as_float(int i) { return ::cuemu::bit_cast<float>(i); }
inline float __uint_as_float(unsigned i) { return ::cuemu::bit_cast<float>(i); }
inline long long __double_as_longlong(double d) { return ::cuemu::bit_cast<long long>(d); }
inline double __longlong_as_double(long long i) { return ::cuemu::bit_cast<double>(i); }
inline int __double2hiint(double d) { return (int)(::cuemu::bit_cast<unsigned long long>(d) >> 32); }
inline int __double2loint(double d) { return (int)::cuemu::bit_cast<unsigned long long>(d); }
inline double __hiloint2double(int hi, int lo) {
    return ::cuemu::bit_cast<double>((unsigned long long)(unsigned)hi << 32 | (unsigned)lo);
}
inline int __float2int_rn(float x) { return ::cuemu::saturate_to<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return ::cuemu::saturate_to<int>(truncf(x)); }
inline int __float2int_ru(float x) { return ::cuemu::saturate_to<int>(ceilf(x)); }
inline int __float2int_rd(float x) { return ::cuemu::saturate_to<int>(floorf(x)); }
inline unsigned __float2uint_rn(float x) { return ::cuemu::saturate_to<unsigned>(nearbyintf(x)); }
inline unsigned __float2uint_rz(float x) { return ::cuemu::saturate_to<unsigned>(truncf(x)); }
inline unsigned __float2uint_rd(float x) { return ::cuemu::saturate_to<unsigned>(floorf(x)); }
inline unsigned __float2uint_ru(float x) { return ::cuemu::saturate_to<unsigned>(ceilf(x)); }
inline long long __float2ll_rn(float x) { return ::cuemu::saturate_to<long long>(nearbyintf(x)); }
inline long long __float2ll_rz(float x) { return ::cuemu::saturate_to<long long>(truncf(x)); }
inline int __double2int_rn(double x) { return ::cuemu::saturate_to<int>(nearbyint(x)); }
inline int __double2int_rz(double x) { return ::cuemu::saturate_to<int>(trunc(x)); }
inline float __double2float_rn(double x) { return (float)x; }
inline float __int2float_rn(int i) { return (float)i; }
inline float __uint2float_rn(unsigned i) { return (float)i; }
inline float __ll2float_rn(long long i) { return (float)i; }
inline float __ull2float_rn(unsigned long long i) { return (float)i; }
inline double __int2double_rn(int i) { return (double)i; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= (x >> i & 1u) << (31 - i);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    return (unsigned long long)__brev((unsigned)x) << 32 | __brev((unsigned)(x >> 32));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) { // bytes of y:x picked by selector nibbles
    unsigned long long v = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)(v >> ((s >> (4 * i) & 7) * 8) & 0xff) << (8 * i);
    return r;
}
inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffff) * (b & 0xffffff); }
inline int __mulhi(int a, int b) { return (int)((long long)a * b >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)((unsigned long long)a * b >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)((__int128)a * b >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)((unsigned __int128)a * b >> 64);
}
inline unsigned __sad(int x, int y, unsigned z) { return (unsigned)(x > y ? (long long)x - y : (long long)y - x) + z; }
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return (x > y ? x - y : y - x) + z; }
inline int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b + 1) >> 1); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32 | lo) << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((unsigned long long)hi << 32 | lo) >> (s & 31));
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32 | lo) << (s < 32 ? s : 32)) >> 32);
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((unsigned long long)hi << 32 | lo) >> (s < 32 ? s : 32));
}

// math_constants.h
#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
#define CUDART_MIN_DENORM_F __int_as_float(0x00000001)
#define CUDART_MAX_NORMAL_F __int_as_float(0x7f7fffff)
#define CUDART_NEG_ZERO_F __int_as_float(0x80000000)
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_SQRT_TWO_F 1.414213562f
#define CUDART_PI_F 3.141592654f
#define CUDART_PIO2_F 1.570796327f
#define CUDART_PIO4_F 0.785398163f
#define CUDART_2_OVER_PI_F 0.636619772f
#define CUDART_L2E_F 1.442695041f
#define CUDART_L2T_F 3.321928094f
#define CUDART_LG2_F 0.301029996f
#define CUDART_LGE_F 0.434294482f
#define CUDART_LN2_F 0.693147181f
#define CUDART_LNT_F 2.302585093f
#define CUDART_INF __longlong_as_double(0x7ff0000000000000ULL)
#define CUDART_NAN __longlong_as_double(0xfff8000000000000ULL)
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_PIO2 1.5707963267948966e+0
#define CUDART_SQRT_2PI 2.5066282746310002e+0
#define CUDART_LN2 6.9314718055994529e-1

// CUDA's global min/max accept any mix of arithmetic types. Non-template overloads for
// every pair, so that `using namespace std; min(a, b)` picks these over std::min.
#define CUEMU_MINMAX(A, B)                                                                               \
    inline std::common_type_t<A, B> min(A a, B b) {                                                     \
        using C = std::common_type_t<A, B>;                                                              \
        if constexpr (std::is_floating_point_v<C>) return std::fmin((C)a, (C)b);                       \
        else return (C)b < (C)a ? (C)b : (C)a;                                                           \
    }                                                                                                    \
    inline std::common_type_t<A, B> max(A a, B b) {                                                     \
        using C = std::common_type_t<A, B>;                                                              \
        if constexpr (std::is_floating_point_v<C>) return std::fmax((C)a, (C)b);                       \
        else return (C)a < (C)b ? (C)b : (C)a;                                                           \
    }
#define CUEMU_MINMAX_ROW(A)                                                                              \
    CUEMU_MINMAX(A, int) CUEMU_MINMAX(A, unsigned) CUEMU_MINMAX(A, long) CUEMU_MINMAX(A, unsigned long)  \
    CUEMU_MINMAX(A, long long) CUEMU_MINMAX(A, unsigned long long) CUEMU_MINMAX(A, float)               \
    CUEMU_MINMAX(A, double)
CUEMU_MINMAX_ROW(int)
CUEMU_MINMAX_ROW(unsigned)
CUEMU_MINMAX_ROW(long)
CUEMU_MINMAX_ROW(unsigned long)
CUEMU_MINMAX_ROW(long long)
CUEMU_MINMAX_ROW(unsigned long long)
CUEMU_MINMAX_ROW(float)
CUEMU_MINMAX_ROW(double)
#undef CUEMU_MINMAX_ROW
#undef CUEMU_MINMAX
#define CUEMU_UMINMAX(N, T, OP) inline T N(T a, T b) { return OP(a, b); }
CUEMU_UMINMAX(umin, unsigned, min)
CUEMU_UMINMAX(umax, unsigned, max)
CUEMU_UMINMAX(llmin, long long, min)
CUEMU_UMINMAX(llmax, long long, max)
CUEMU_UMINMAX(ullmin, unsigned long long, min)
CUEMU_UMINMAX(ullmax, unsigned long long, max)
#undef CUEMU_UMINMAX

// ---------------------------------------------------------------------------------------
// Half and bfloat16 (cuda_fp16.h, cuda_bf16.h): 16-bit storage, round-to-nearest-even
// conversions; arithmetic is done in float and rounded once (exact for + - * /: float has
// more than twice the bits of half and bf16).
// ---------------------------------------------------------------------------------------
namespace cuemu {
inline unsigned short float_to_half_bits(float f, bool toward_zero = false) {
    uint32_t x = bit_cast<uint32_t>(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return 0x7fff;                                   // NaN
    if (ax >= (toward_zero ? 0x47800000u : 0x477ff000u))                   // >= 65536 / 65520
        return (unsigned short)(sign | (toward_zero && ax != 0x7f800000u ? 0x7bffu : 0x7c00u));
    if (ax < 0x33000000u) return (unsigned short)sign;                     // below half the smallest subnormal
    uint32_t h, rem, halfway;
    if (ax < 0x38800000u) { // subnormal result: units of 2^-24
        uint32_t m = (ax & 0x7fffffu) | 0x800000u, shift = 126 - (ax >> 23);
        h = m >> shift;
        rem = m & ((1u << shift) - 1);
        halfway = 1u << (shift - 1);
    } else {
        h = ((ax >> 23) - 112) << 10 | (ax >> 13 & 0x3ffu);
        rem = ax & 0x1fffu;
        halfway = 0x1000u;
    }
    if (!toward_zero && (rem > halfway || (rem == halfway && (h & 1)))) h++; // may carry into inf: correct
    return (unsigned short)(sign | h);
}
inline float half_bits_to_float(unsigned short h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = h >> 10 & 0x1f, m = h & 0x3ffu;
    if (e == 0) return bit_cast<float>(sign) + (sign ? -ldexpf((float)m, -24) : ldexpf((float)m, -24));
    if (e == 31) return bit_cast<float>(sign | 0x7f800000u | m << 13);
    return bit_cast<float>(sign | (e + 112) << 23 | m << 13);
}
inline unsigned short float_to_bf16_bits(float f, bool toward_zero = false) {
    uint32_t x = bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff; // NaN
    if (!toward_zero) x += 0x7fffu + (x >> 16 & 1);
    return (unsigned short)(x >> 16);
}
inline float bf16_bits_to_float(unsigned short b) { return bit_cast<float>((uint32_t)b << 16); }
} // namespace cuemu

struct __half_raw { unsigned short x; };
struct __nv_bfloat16_raw { unsigned short x; };
#define CUEMU_HALF_TYPE(H, RAW, TO_BITS, TO_FLOAT)                                                       \
    struct H {                                                                                           \
        unsigned short __x;                                                                              \
        H() = default;                                                                                   \
        constexpr H(RAW r) : __x(r.x) {}                                                                 \
        H(float f) : __x(::cuemu::TO_BITS(f)) {}                                                         \
        H(double d) : H((float)d) {}                                                                     \
        H(short i) : H((float)i) {}                                                                      \
        H(unsigned short i) : H((float)i) {}                                                             \
        H(int i) : H((float)i) {}                                                                        \
        H(unsigned i) : H((float)i) {}                                                                   \
        H(long i) : H((float)i) {}                                                                       \
        H(unsigned long i) : H((float)i) {}                                                              \
        H(long long i) : H((float)i) {}                                                                  \
        H(unsigned long long i) : H((float)i) {}                                                         \
        operator float() const { return ::cuemu::TO_FLOAT(__x); }                                        \
        operator RAW() const { return RAW{__x}; }                                                        \
    };                                                                                                   \
    inline H operator+(const H &a, const H &b) { return H((float)a + (float)b); }                        \
    inline H operator-(const H &a, const H &b) { return H((float)a - (float)b); }                        \
    inline H operator*(const H &a, const H &b) { return H((float)a * (float)b); }                        \
    inline H operator/(const H &a, const H &b) { return H((float)a / (float)b); }                        \
    inline H &operator+=(H &a, const H &b) { return a = a + b; }                                         \
    inline H &operator-=(H &a, const H &b) { return a = a - b; }                                         \
    inline H &operator*=(H &a, const H &b) { return a = a * b; }                                         \
    inline H &operator/=(H &a, const H &b) { return a = a / b; }                                         \
    inline H operator-(const H &a) { H r = a; r.__x ^= 0x8000; return r; }                              \
    inline H operator+(const H &a) { return a; }                                                         \
    inline bool operator==(const H &a, const H &b) { return (float)a == (float)b; }                      \
    inline bool operator!=(const H &a, const H &b) { return (float)a != (float)b; }                      \
    inline bool operator<(const H &a, const H &b) { return (float)a < (float)b; }                        \
    inline bool operator>(const H &a, const H &b) { return (float)a > (float)b; }                        \
    inline bool operator<=(const H &a, const H &b) { return (float)a <= (float)b; }                      \
    inline bool operator>=(const H &a, const H &b) { return (float)a >= (float)b; }                      \
    inline H __hadd(H a, H b) { return a + b; }                                                          \
    inline H __hsub(H a, H b) { return a - b; }                                                          \
    inline H __hmul(H a, H b) { return a * b; }                                                          \
    inline H __hdiv(H a, H b) { return a / b; }                                                          \
    inline H __hfma(H a, H b, H c) { return H((float)fma((double)(float)a, (double)(float)b, (double)(float)c)); } \
    inline H __hneg(H a) { return -a; }                                                                  \
    inline H __habs(H a) { H r = a; r.__x &= 0x7fff; return r; }                                        \
    inline H __hmax(H a, H b) { return H(fmaxf(a, b)); }                                                 \
    inline H __hmin(H a, H b) { return H(fminf(a, b)); }                                                 \
    inline H __hmax_nan(H a, H b) { return a != a || b != b ? H(NAN) : __hmax(a, b); }                   \
    inline H __hmin_nan(H a, H b) { return a != a || b != b ? H(NAN) : __hmin(a, b); }                   \
    inline bool __heq(H a, H b) { return a == b; }                                                       \
    inline bool __hne(H a, H b) { return a != b; }                                                       \
    inline bool __hlt(H a, H b) { return a < b; }                                                        \
    inline bool __hgt(H a, H b) { return a > b; }                                                        \
    inline bool __hle(H a, H b) { return a <= b; }                                                       \
    inline bool __hge(H a, H b) { return a >= b; }                                                       \
    inline bool __hisnan(H a) { return a != a; }                                                         \
    inline int __hisinf(H a) { return (a.__x & 0x7fff) == ::cuemu::TO_BITS(INFINITY) ? (a.__x >> 15 ? -1 : 1) : 0; } \
    inline H hexp(H a) { return H(expf(a)); }                                                            \
    inline H hexp2(H a) { return H(exp2f(a)); }                                                          \
    inline H hlog(H a) { return H(logf(a)); }                                                            \
    inline H hlog2(H a) { return H(log2f(a)); }                                                          \
    inline H hsqrt(H a) { return H(sqrtf(a)); }                                                          \
    inline H hrsqrt(H a) { return H(1.0f / sqrtf(a)); }                                                  \
    inline H hrcp(H a) { return H(1.0f / (float)a); }                                                    \
    inline H hsin(H a) { return H(sinf(a)); }                                                            \
    inline H hcos(H a) { return H(cosf(a)); }                                                            \
    inline H htanh(H a) { return H(tanhf(a)); }                                                          \
    inline H hfloor(H a) { return H(floorf(a)); }                                                        \
    inline H hceil(H a) { return H(ceilf(a)); }                                                          \
    inline H htrunc(H a) { return H(truncf(a)); }                                                        \
    inline H hrint(H a) { return H(rintf(a)); }
CUEMU_HALF_TYPE(__half, __half_raw, float_to_half_bits, half_bits_to_float)
CUEMU_HALF_TYPE(__nv_bfloat16, __nv_bfloat16_raw, float_to_bf16_bits, bf16_bits_to_float)
#undef CUEMU_HALF_TYPE

#define CUEMU_HALF2_TYPE(H2, H, FROM2, TO2, MAKE)                                                        \
    struct __attribute__((aligned(4))) H2 {                                                              \
        H x, y;                                                                                          \
        H2() = default;                                                                                  \
        constexpr H2(H a, H b) : x(a), y(b) {}                                                           \
    };                                                                                                   \
    inline H2 operator+(const H2 &a, const H2 &b) { return H2(a.x + b.x, a.y + b.y); }                   \
    inline H2 operator-(const H2 &a, const H2 &b) { return H2(a.x - b.x, a.y - b.y); }                   \
    inline H2 operator*(const H2 &a, const H2 &b) { return H2(a.x * b.x, a.y * b.y); }                   \
    inline H2 operator/(const H2 &a, const H2 &b) { return H2(a.x / b.x, a.y / b.y); }                   \
    inline H2 &operator+=(H2 &a, const H2 &b) { return a = a + b; }                                      \
    inline H2 &operator-=(H2 &a, const H2 &b) { return a = a - b; }                                      \
    inline H2 &operator*=(H2 &a, const H2 &b) { return a = a * b; }                                      \
    inline H2 __hadd2(H2 a, H2 b) { return a + b; }                                                      \
    inline H2 __hsub2(H2 a, H2 b) { return a - b; }                                                      \
    inline H2 __hmul2(H2 a, H2 b) { return a * b; }                                                      \
    inline H2 __h2div(H2 a, H2 b) { return a / b; }                                                      \
    inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }     \
    inline H2 __hneg2(H2 a) { return H2(-a.x, -a.y); }                                                   \
    inline H2 __habs2(H2 a) { return H2(__habs(a.x), __habs(a.y)); }                                     \
    inline H2 __hmax2(H2 a, H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                     \
    inline H2 __hmin2(H2 a, H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                     \
    inline H2 __halves2##MAKE(H a, H b) { return H2(a, b); }                                             \
    inline H2 make_##MAKE(H a, H b) { return H2(a, b); }                                                 \
    inline H2 __##MAKE##2##MAKE(H a) { return H2(a, a); }                                                \
    inline H2 __lows2##MAKE(H2 a, H2 b) { return H2(a.x, b.x); }                                         \
    inline H2 __highs2##MAKE(H2 a, H2 b) { return H2(a.y, b.y); }                                        \
    inline H2 __low2##MAKE(H2 a) { return H2(a.x, a.x); }                                                \
    inline H2 __high2##MAKE(H2 a) { return H2(a.y, a.y); }                                               \
    inline H2 FROM2(float2 f) { return H2(H(f.x), H(f.y)); }                                             \
    inline float2 TO2(H2 h) { return make_float2(h.x, h.y); }                                            \
    inline float __low2float(H2 h) { return h.x; }                                                       \
    inline float __high2float(H2 h) { return h.y; }
CUEMU_HALF2_TYPE(__half2, __half, __float22half2_rn, __half22float2, half2)
CUEMU_HALF2_TYPE(__nv_bfloat162, __nv_bfloat16, __float22bfloat162_rn, __bfloat1622float2, bfloat162)
#undef CUEMU_HALF2_TYPE
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __float2half_rz(float f) { return __half_raw{::cuemu::float_to_half_bits(f, true)}; }
inline __half __double2half(double d) { return __half(d); }
inline float __half2float(__half h) { return h; }
inline __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return (short)h.__x; }
inline __half __ushort_as_half(unsigned short u) { return __half_raw{u}; }
inline __half __short_as_half(short s) { return __half_raw{(unsigned short)s}; }
inline __half __int2half_rn(int i) { return __half((float)i); }
inline __half __uint2half_rn(unsigned i) { return __half((float)i); }
inline int __half2int_rn(__half h) { return __float2int_rn(h); }
inline int __half2int_rz(__half h) { return __float2int_rz(h); }
inline unsigned __half2uint_rn(__half h) { return __float2uint_rn(h); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rz(float f) { return __nv_bfloat16_raw{::cuemu::float_to_bf16_bits(f, true)}; }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16(d); }
inline float __bfloat162float(__nv_bfloat16 b) { return b; }
inline __nv_bfloat162 __float2bfloat162_rn(float f) { return __nv_bfloat162(__nv_bfloat16(f), __nv_bfloat16(f)); }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b)); }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16_raw{u}; }
inline int __bfloat162int_rn(__nv_bfloat16 b) { return __float2int_rn(b); }
inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __nv_bfloat16((float)i); }
CUEMU_ATOMIC(atomicAdd, __half, old + v)
CUEMU_ATOMIC(atomicAdd, __half2, old + v)
CUEMU_ATOMIC(atomicAdd, __nv_bfloat16, old + v)
CUEMU_ATOMIC(atomicAdd, __nv_bfloat162, old + v)
#undef CUEMU_ATOMIC

// ---------------------------------------------------------------------------------------
// Runtime API: device memory is host memory; work on streams runs at once, in call order
// ---------------------------------------------------------------------------------------
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceMapHost 0x08
#define cudaCpuDeviceId (-1)
enum cudaFuncCache { cudaFuncCachePreferNone, cudaFuncCachePreferShared, cudaFuncCachePreferL1, cudaFuncCachePreferEqual };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault, cudaSharedMemBankSizeFourByte, cudaSharedMemBankSizeEightByte };
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum cudaMemoryType { cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice, cudaMemoryTypeManaged };
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX = 2, cudaDevAttrMaxBlockDimY = 3,
    cudaDevAttrMaxBlockDimZ = 4, cudaDevAttrMaxGridDimX = 5, cudaDevAttrMaxGridDimY = 6, cudaDevAttrMaxGridDimZ = 7,
    cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrTotalConstantMemory = 9, cudaDevAttrWarpSize = 10,
    cudaDevAttrMaxRegistersPerBlock = 12, cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrIntegrated = 18, cudaDevAttrCanMapHostMemory = 19, cudaDevAttrConcurrentKernels = 31,
    cudaDevAttrEccEnabled = 32, cudaDevAttrMemoryClockRate = 36, cudaDevAttrGlobalMemoryBusWidth = 37,
    cudaDevAttrL2CacheSize = 38, cudaDevAttrMaxThreadsPerMultiProcessor = 39, cudaDevAttrAsyncEngineCount = 40,
    cudaDevAttrUnifiedAddressing = 41, cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81, cudaDevAttrMaxRegistersPerMultiprocessor = 82,
    cudaDevAttrManagedMemory = 83, cudaDevAttrConcurrentManagedAccess = 89, cudaDevAttrCooperativeLaunch = 95,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97, cudaDevAttrMaxBlocksPerMultiprocessor = 106,
};
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock;
    int regsPerBlock, warpSize;
    size_t memPitch;
    int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
    size_t totalConstMem;
    int major, minor;
    size_t textureAlignment, texturePitchAlignment;
    int deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled, integrated, canMapHostMemory, computeMode;
    int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver, asyncEngineCount;
    int unifiedAddressing, memoryClockRate, memoryBusWidth, l2CacheSize, persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor, streamPrioritiesSupported, globalL1CacheSupported, localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID;
    int singleToDoublePrecisionPerfRatio, pageableMemoryAccess, concurrentManagedAccess;
    int computePreemptionSupported, canUseHostPointerForRegisteredMem, cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;
    size_t sharedMemPerBlockOptin;
    int maxBlocksPerMultiProcessor, accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
};
struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA, maxDynamicSharedSizeBytes;
};
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer, *hostPointer;
};
struct CUstream_st { unsigned flags; int priority; };
struct CUevent_st { unsigned flags; bool recorded; double ms; };

namespace cuemu {
inline cudaError_t api_fail(cudaError_t e, const char *fmt, ...) { // a failing call: a note and the error
    va_list ap;
    va_start(ap, fmt);
    std::string msg = vformat(fmt, ap);
    va_end(ap);
    note("note: %s", msg.c_str());
    return set_error(e);
}
inline cudaError_t device_alloc(void **p, size_t n, Mem kind, const char *what) {
    if (g_settings.no_device) return set_error(cudaErrorNoDevice);
    if (!p) return api_fail(cudaErrorInvalidValue, "%s: null result pointer", what);
    *p = nullptr;
    if (n == 0) return cudaSuccess;
    if (n > (size_t)141e9 - g_device_bytes || posix_memalign(p, 256, n) != 0)
        return api_fail(cudaErrorMemoryAllocation, "%s of %zu bytes: out of memory", what, n);
    if (kind != Mem::pinned) fill_garbage(*p, n, 0xCD); // like device memory: not zero
    g_regions[(uintptr_t)*p] = Region{n, kind};
    if (kind != Mem::pinned) g_device_bytes += n;
    return cudaSuccess;
}
inline cudaError_t device_free(void *p, bool pinned, const char *what) {
    if (!p) return cudaSuccess;
    auto it = g_regions.find((uintptr_t)p);
    if (it == g_regions.end() || (it->second.kind == Mem::pinned) != pinned || it->second.kind == Mem::symbol)
        return api_fail(cudaErrorInvalidValue, "%s(%p): not a pointer from %s", what, p,
                        pinned ? "cudaMallocHost/cudaHostAlloc" : "cudaMalloc");
    if (!pinned) g_device_bytes -= it->second.size;
    g_regions.erase(it);
    free(p);
    return cudaSuccess;
}
// A copy's device side must lie in device memory and its host side must not be device
// memory from cudaMalloc (managed and pinned memory are fine on either side).
inline bool copy_side_ok(const void *p, size_t n, bool device_side) {
    auto *r = find_region(p, n);
    if (device_side) return r || (__start_cuemu_managed && (const char *)p >= __start_cuemu_managed &&
                                   (const char *)p + n <= __stop_cuemu_managed);
    return !r || r->second.kind != Mem::device;
}
inline cudaError_t copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind, const char *what) {
    if (n == 0) return cudaSuccess;
    if (!dst || !src) return api_fail(cudaErrorInvalidValue, "%s: null pointer", what);
    if ((unsigned)kind > cudaMemcpyDefault) return api_fail(cudaErrorInvalidMemcpyDirection, "%s: kind %d", what, (int)kind);
    bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    static const char *names[] = {"cudaMemcpyHostToHost", "cudaMemcpyHostToDevice", "cudaMemcpyDeviceToHost",
                                  "cudaMemcpyDeviceToDevice", "cudaMemcpyDefault"};
    if (kind != cudaMemcpyDefault && (!copy_side_ok(dst, n, dst_dev) || !copy_side_ok(src, n, src_dev)))
        return api_fail(cudaErrorInvalidValue, "%s(%p, %p, %zu, %s): the %s does not match the direction or "
                        "the range exceeds its allocation", what, dst, src, n, names[kind],
                        !copy_side_ok(dst, n, dst_dev) ? "destination" : "source");
    memmove(dst, src, n);
    return cudaSuccess;
}
} // namespace cuemu

template <class T> inline cudaError_t cudaMalloc(T **p, size_t n) {
    return ::cuemu::device_alloc((void **)p, n, ::cuemu::Mem::device, "cudaMalloc");
}
template <class T> inline cudaError_t cudaMallocManaged(T **p, size_t n, unsigned = cudaMemAttachGlobal) {
    return ::cuemu::device_alloc((void **)p, n, ::cuemu::Mem::managed, "cudaMallocManaged");
}
template <class T> inline cudaError_t cudaMallocAsync(T **p, size_t n, cudaStream_t = 0) {
    return ::cuemu::device_alloc((void **)p, n, ::cuemu::Mem::device, "cudaMallocAsync");
}
template <class T> inline cudaError_t cudaMallocHost(T **p, size_t n, unsigned = 0) {
    return ::cuemu::device_alloc((void **)p, n, ::cuemu::Mem::pinned, "cudaMallocHost");
}
template <class T> inline cudaError_t cudaHostAlloc(T **p, size_t n, unsigned) {
    return ::cuemu::device_alloc((void **)p, n, ::cuemu::Mem::pinned, "cudaHostAlloc");
}
template <class T> inline cudaError_t cudaMallocPitch(T **p, size_t *pitch, size_t width, size_t height) {
    if (!pitch) return ::cuemu::set_error(cudaErrorInvalidValue);
    *pitch = (width + 511) / 512 * 512;
    if (*pitch < width || (height && *pitch > SIZE_MAX / height)) // the size wraps: more than any device holds
        return ::cuemu::api_fail(cudaErrorMemoryAllocation, "cudaMallocPitch: %zu x %zu bytes", width, height);
    return ::cuemu::device_alloc((void **)p, *pitch * height, ::cuemu::Mem::device, "cudaMallocPitch");
}
inline cudaError_t cudaFree(void *p) { return ::cuemu::device_free(p, false, "cudaFree"); }
inline cudaError_t cudaFreeAsync(void *p, cudaStream_t = 0) { return ::cuemu::device_free(p, false, "cudaFreeAsync"); }
inline cudaError_t cudaFreeHost(void *p) { return ::cuemu::device_free(p, true, "cudaFreeHost"); }
inline cudaError_t cudaHostRegister(void *p, size_t n, unsigned) {
    if (!p || !n) return ::cuemu::set_error(cudaErrorInvalidValue);
    ::cuemu::g_regions[(uintptr_t)p] = ::cuemu::Region{n, ::cuemu::Mem::symbol};
    return cudaSuccess;
}
inline cudaError_t cudaHostUnregister(void *p) { ::cuemu::g_regions.erase((uintptr_t)p); return cudaSuccess; }
inline cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned) { *d = h; return cudaSuccess; }
inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    return ::cuemu::copy(dst, src, n, kind, "cudaMemcpy");
}
inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t = 0) {
    return ::cuemu::copy(dst, src, n, kind, "cudaMemcpyAsync");
}
inline cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                size_t height, cudaMemcpyKind kind) {
    if (width > dpitch || width > spitch) return ::cuemu::api_fail(cudaErrorInvalidPitchValue, "cudaMemcpy2D: width > pitch");
    for (size_t r = 0; r < height; r++) {
        cudaError_t e = ::cuemu::copy((char *)dst + r * dpitch, (const char *)src + r * spitch, width, kind, "cudaMemcpy2D");
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                     size_t height, cudaMemcpyKind kind, cudaStream_t = 0) {
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
inline cudaError_t cudaMemset(void *p, int v, size_t n) {
    if (n && !::cuemu::copy_side_ok(p, n, true))
        return ::cuemu::api_fail(cudaErrorInvalidValue, "cudaMemset(%p, %d, %zu): not device memory, or past its end", p, v, n);
    memset(p, v, n);
    return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t = 0) { return cudaMemset(p, v, n); }
inline cudaError_t cudaMemset2D(void *p, size_t pitch, int v, size_t width, size_t height) {
    for (size_t r = 0; r < height; r++) {
        cudaError_t e = cudaMemset((char *)p + r * pitch, v, width);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
// Symbols are ordinary globals; the API takes them by reference, as CUDA's templates do.
template <class T> inline cudaError_t cudaMemcpyToSymbol(const T &sym, const void *src, size_t n, size_t off = 0,
                                                         cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
    if (off > sizeof(T) || n > sizeof(T) - off) return ::cuemu::api_fail(cudaErrorInvalidValue, "cudaMemcpyToSymbol: %zu bytes at offset %zu exceed the symbol's %zu", n, off, sizeof(T));
    (void)kind;
    memmove((char *)&sym + off, src, n);
    return cudaSuccess;
}
template <class T> inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &sym, size_t n, size_t off = 0,
                                                           cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
    if (off > sizeof(T) || n > sizeof(T) - off) return ::cuemu::api_fail(cudaErrorInvalidValue, "cudaMemcpyFromSymbol: %zu bytes at offset %zu exceed the symbol's %zu", n, off, sizeof(T));
    (void)kind;
    memmove(dst, (const char *)&sym + off, n);
    return cudaSuccess;
}
template <class T> inline cudaError_t cudaMemcpyToSymbolAsync(const T &sym, const void *src, size_t n, size_t off = 0,
                                                              cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t = 0) {
    return cudaMemcpyToSymbol(sym, src, n, off, kind);
}
template <class T> inline cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const T &sym, size_t n, size_t off = 0,
                                                                cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t = 0) {
    return cudaMemcpyFromSymbol(dst, sym, n, off, kind);
}
template <class T> inline cudaError_t cudaGetSymbolAddress(void **p, const T &sym) {
    *p = (void *)&sym;
    ::cuemu::g_regions[(uintptr_t)&sym] = ::cuemu::Region{sizeof(T), ::cuemu::Mem::symbol};
    return cudaSuccess;
}
template <class T> inline cudaError_t cudaGetSymbolSize(size_t *n, const T &) { *n = sizeof(T); return cudaSuccess; }
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
    auto *r = ::cuemu::find_region(p, 0);
    a->type = !r ? cudaMemoryTypeUnregistered : r->second.kind == ::cuemu::Mem::pinned ? cudaMemoryTypeHost
            : r->second.kind == ::cuemu::Mem::managed ? cudaMemoryTypeManaged : cudaMemoryTypeDevice;
    a->device = 0;
    a->devicePointer = r ? (void *)p : nullptr;
    a->hostPointer = !r || r->second.kind != ::cuemu::Mem::device ? (void *)p : nullptr;
    return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    *total = (size_t)141e9;
    *free_bytes = *total - ::cuemu::g_device_bytes;
    return cudaSuccess;
}
inline cudaError_t cudaMemPrefetchAsync(const void *, size_t, int, cudaStream_t = 0) { return cudaSuccess; }

// Errors: the last error is sticky until cudaGetLastError reads it.
inline cudaError_t cudaGetLastError() { cudaError_t e = ::cuemu::g_last_error; ::cuemu::g_last_error = cudaSuccess; return e; }
inline cudaError_t cudaPeekAtLastError() { return ::cuemu::g_last_error; }
namespace cuemu {
struct ErrorName { cudaError_t code; const char *name, *text; };
inline const ErrorName error_names[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};
inline const ErrorName *error_name(cudaError_t e) {
    for (const ErrorName &n : error_names) if (n.code == e) return &n;
    return nullptr;
}
} // namespace cuemu
inline const char *cudaGetErrorString(cudaError_t e) { auto *n = ::cuemu::error_name(e); return n ? n->text : "unrecognized error code"; }
inline const char *cudaGetErrorName(cudaError_t e) { auto *n = ::cuemu::error_name(e); return n ? n->name : "unrecognized error code"; }

// Device and properties: one plausible H200.
inline cudaError_t cudaGetDeviceCount(int *n) {
    *n = ::cuemu::g_settings.no_device ? 0 : 1;
    return ::cuemu::g_settings.no_device ? ::cuemu::set_error(cudaErrorNoDevice) : cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) {
    if (::cuemu::g_settings.no_device) return ::cuemu::set_error(cudaErrorNoDevice);
    return d == 0 ? cudaSuccess : ::cuemu::set_error(cudaErrorInvalidDevice);
}
inline cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceFlags(unsigned *f) { *f = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (::cuemu::g_settings.no_device) return ::cuemu::set_error(cudaErrorNoDevice);
    if (d != 0) return ::cuemu::set_error(cudaErrorInvalidDevice);
    *p = cudaDeviceProp{};
    strcpy(p->name, "cuemu (CPU emulation of an NVIDIA H200)");
    p->totalGlobalMem = (size_t)141e9;
    p->sharedMemPerBlock = 48 * 1024;
    p->regsPerBlock = p->regsPerMultiprocessor = 65536;
    p->warpSize = 32;
    p->memPitch = (size_t)1 << 31;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->clockRate = 1980000;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->textureAlignment = 512;
    p->texturePitchAlignment = 32;
    p->deviceOverlap = p->concurrentKernels = p->canMapHostMemory = p->unifiedAddressing = 1;
    p->multiProcessorCount = 132;
    p->ECCEnabled = 1;
    p->asyncEngineCount = 3;
    p->memoryClockRate = 2619000;
    p->memoryBusWidth = 6144;
    p->l2CacheSize = 50 * 1024 * 1024;
    p->persistingL2CacheMaxSize = 78643200;
    p->maxThreadsPerMultiProcessor = 2048;
    p->streamPrioritiesSupported = p->globalL1CacheSupported = p->localL1CacheSupported = 1;
    p->sharedMemPerMultiprocessor = 228 * 1024;
    p->managedMemory = p->concurrentManagedAccess = p->computePreemptionSupported = p->cooperativeLaunch = 1;
    p->singleToDoublePrecisionPerfRatio = 2;
    p->sharedMemPerBlockOptin = ::cuemu::smem_optin_limit;
    p->maxBlocksPerMultiProcessor = 32;
    p->accessPolicyMaxWindowSize = 134213632;
    p->reservedSharedMemPerBlock = 1024;
    return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, d);
    if (e != cudaSuccess) return e;
    switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: case cudaDevAttrMaxBlockDimZ:
        *v = p.maxThreadsDim[a - cudaDevAttrMaxBlockDimX]; break;
    case cudaDevAttrMaxGridDimX: case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ:
        *v = p.maxGridSize[a - cudaDevAttrMaxGridDimX]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: *v = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: case cudaDevAttrMaxRegistersPerMultiprocessor: *v = 65536; break;
    case cudaDevAttrClockRate: *v = p.clockRate; break;
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrIntegrated: *v = 0; break;
    case cudaDevAttrMemoryClockRate: *v = p.memoryClockRate; break;
    case cudaDevAttrGlobalMemoryBusWidth: *v = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *v = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrAsyncEngineCount: *v = p.asyncEngineCount; break;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *v = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrCanMapHostMemory: case cudaDevAttrConcurrentKernels: case cudaDevAttrEccEnabled:
    case cudaDevAttrUnifiedAddressing: case cudaDevAttrManagedMemory: case cudaDevAttrConcurrentManagedAccess:
    case cudaDevAttrCooperativeLaunch: *v = 1; break;
    default: return ::cuemu::api_fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: attribute %d is not modelled", (int)a);
    }
    return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int *v) { *v = CUDART_VERSION; return cudaSuccess; }
inline cudaError_t cudaRuntimeGetVersion(int *v) { *v = CUDART_VERSION; return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return ::cuemu::g_last_error == cudaErrorNoDevice ? cudaErrorNoDevice : cudaSuccess; }
inline cudaError_t cudaThreadSynchronize() { return cudaDeviceSynchronize(); }
inline cudaError_t cudaDeviceReset() { // frees every allocation, as destroying the context does
    for (auto &r : ::cuemu::g_regions)
        if (r.second.kind != ::cuemu::Mem::symbol) free((void *)r.first);
    ::cuemu::g_regions.clear();
    ::cuemu::g_device_bytes = 0;
    ::cuemu::g_last_error = cudaSuccess;
    return cudaSuccess;
}
inline cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetLimit(int, size_t) { return cudaSuccess; }
inline cudaError_t cudaDeviceCanAccessPeer(int *can, int, int) { *can = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncSetCacheConfig(F *, cudaFuncCache) { return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncSetSharedMemConfig(F *, cudaSharedMemConfig) { return cudaSuccess; }
// The opt-in to more than 48 KiB of dynamic shared memory applies to every kernel here.
template <class F> inline cudaError_t cudaFuncSetAttribute(F *, cudaFuncAttribute attr, int value) {
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || (size_t)value > ::cuemu::smem_optin_limit)
            return ::cuemu::api_fail(cudaErrorInvalidValue, "cudaFuncSetAttribute: %d bytes of dynamic shared memory exceed 227 KiB", value);
        ::cuemu::g_smem_optin = std::max(::cuemu::g_smem_optin, (size_t)value);
    }
    return cudaSuccess;
}
// A kernel's attributes: its registers and static shared memory from ptxas's report when
// there is one (nvcc-emu --ptxas-info), else those of a light kernel (32 registers); its
// maxThreadsPerBlock within its __launch_bounds__ too.
template <class F> inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, F *f) {
    const ::cuemu::KernelResources *k = ::cuemu::kernel_resources_at((const void *)f);
    int regs = k ? k->regs : 32, max_threads = ::cuemu::max_threads_for(regs);
    if (long long bound = ::cuemu::launch_bound_at(f); bound > 0 && bound < max_threads) max_threads = (int)bound;
    size_t smem = k ? k->smem : 0, optin = ::cuemu::g_smem_optin;
    int max_dyn = (int)(optin == ::cuemu::smem_default ? optin - smem : optin);
    *a = cudaFuncAttributes{smem, 0, 0, max_threads, regs, 90, 90, 0, max_dyn};
    return cudaSuccess;
}
// Occupancy on an H200's SM (2048 threads, 32 blocks, 228 KiB of shared memory with 1 KiB
// reserved per block, 65,536 registers) for the kernel's attributes; none for a block
// larger than it may have.
template <class F> inline int cuemu_blocks_per_sm(F *f, int block, size_t dyn_smem) {
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, f);
    if (block > a.maxThreadsPerBlock) return 0;
    int warps = (std::max(block, 1) + 31) / 32;
    int by_threads = 2048 / std::max(block, 1), by_regs = 65536 / ::cuemu::regs_per_warp(a.numRegs) / warps;
    int by_smem = (int)(228 * 1024 / (dyn_smem + a.sharedSizeBytes + 1024));
    return std::max(0, std::min({32, by_threads, by_regs, by_smem}));
}
template <class F> inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, F *f, int block, size_t smem) {
    *n = cuemu_blocks_per_sm(f, block, smem);
    return cudaSuccess;
}
// The largest block the kernel may have (at most limit), and a grid that fills the GPU.
template <class F>
inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int *min_grid, int *block, F *f, size_t smem = 0, int limit = 0) {
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, f);
    *block = limit > 0 ? std::min(limit, a.maxThreadsPerBlock) : a.maxThreadsPerBlock;
    *min_grid = 132 * cuemu_blocks_per_sm(f, *block, smem);
    return cudaSuccess;
}

// Streams and events.
inline cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = new CUstream_st{0, 0}; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { *s = new CUstream_st{f, 0}; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned f, int p) { *s = new CUstream_st{f, p}; return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (s == cudaStreamLegacy || s == cudaStreamPerThread) return cudaSuccess;
    delete s;
    return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) { return cudaSuccess; }
typedef void (*cudaHostFn_t)(void *);
inline cudaError_t cudaLaunchHostFunc(cudaStream_t, cudaHostFn_t fn, void *data) { fn(data); return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new CUevent_st{0, false, 0}; return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) { *e = new CUevent_st{f, false, 0}; return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = 0) {
    if (!e) return ::cuemu::set_error(cudaErrorInvalidResourceHandle);
    e->recorded = true;
    e->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) { return e ? cudaSuccess : ::cuemu::set_error(cudaErrorInvalidResourceHandle); }
inline cudaError_t cudaEventQuery(cudaEvent_t e) { return e ? cudaSuccess : ::cuemu::set_error(cudaErrorInvalidResourceHandle); }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (!a || !b || !a->recorded || !b->recorded || ((a->flags | b->flags) & cudaEventDisableTiming))
        return ::cuemu::set_error(cudaErrorInvalidResourceHandle);
    *ms = (float)(b->ms - a->ms);
    return cudaSuccess;
}

// ---------------------------------------------------------------------------------------
// Cooperative groups: the block, static tiles of a warp, coalesced groups. Grid groups
// (this_grid, grid sync) are not modelled and fail to compile.
// ---------------------------------------------------------------------------------------
namespace cuemu {
template <class> constexpr bool dependent_false = false;
inline unsigned block_rank() { return (unsigned)g_cur->lin; }
inline unsigned block_size() { return (unsigned)g_nthreads; }
} // namespace cuemu
namespace cooperative_groups {
class thread_group {
  protected:
    unsigned tile_; // 0: the whole block; otherwise lanes per tile (1..32)
    unsigned mask_; // the warp lanes of a tile or coalesced group
    bool coalesced_;
    thread_group(unsigned tile, unsigned mask, bool coalesced) : tile_(tile), mask_(mask), coalesced_(coalesced) {}
    unsigned lane() const { return ::cuemu::block_rank() & 31; }

  public:
    void sync(CUEMU_SITE) const {
        if (tile_ == 0) ::__syncthreads(file, line);
        else ::__syncwarp(mask_, file, line);
    }
    unsigned thread_rank() const {
        if (tile_ == 0) return ::cuemu::block_rank();
        if (coalesced_) return (unsigned)__builtin_popcount(mask_ & ((1u << lane()) - 1));
        return ::cuemu::block_rank() % tile_;
    }
    unsigned num_threads() const {
        return tile_ == 0 ? ::cuemu::block_size() : coalesced_ ? (unsigned)__builtin_popcount(mask_) : tile_;
    }
    unsigned size() const { return num_threads(); }
};
class thread_block : public thread_group {
  public:
    thread_block() : thread_group(0, 0, false) {}
    dim3 group_index() const { return ::cuemu::g_block_idx; }
    dim3 thread_index() const { return ::cuemu::g_cur->tid; }
    dim3 group_dim() const { return ::cuemu::g_block_dim; }
    dim3 dim_threads() const { return ::cuemu::g_block_dim; }
};
inline thread_block this_thread_block() { return thread_block(); }

// A group of lanes of one warp: a static tile or the coalesced lanes.
class warp_group : public thread_group {
  protected:
    using thread_group::thread_group;
    unsigned lane_of_rank(unsigned r) const { // the lane holding group rank r (r < size)
        if (!coalesced_) return (lane() & ~(tile_ - 1)) + r;
        unsigned m = mask_;
        for (unsigned i = 0; i < r; i++) m &= m - 1;
        return m ? (unsigned)__builtin_ctz(m) : lane();
    }
    unsigned width() const { return coalesced_ ? 32 : tile_; }

  public:
    template <class T> T shfl(T v, unsigned src_rank, CUEMU_SITE) const {
        unsigned src = coalesced_ ? lane_of_rank(src_rank % size()) : src_rank;
        return ::__shfl_sync(mask_, v, (int)src, (int)width(), file, line);
    }
    template <class T> T shfl_down(T v, unsigned d, CUEMU_SITE) const {
        if (!coalesced_) return ::__shfl_down_sync(mask_, v, d, (int)tile_, file, line);
        unsigned r = thread_rank() + d;
        return ::__shfl_sync(mask_, v, (int)(r < size() ? lane_of_rank(r) : lane()), 32, file, line);
    }
    template <class T> T shfl_up(T v, unsigned d, CUEMU_SITE) const {
        if (!coalesced_) return ::__shfl_up_sync(mask_, v, d, (int)tile_, file, line);
        unsigned r = thread_rank();
        return ::__shfl_sync(mask_, v, (int)(r >= d ? lane_of_rank(r - d) : lane()), 32, file, line);
    }
    template <class T> T shfl_xor(T v, unsigned m, CUEMU_SITE) const {
        return ::__shfl_xor_sync(mask_, v, (int)m, (int)width(), file, line);
    }
    int any(int pred, CUEMU_SITE) const { return ::__any_sync(mask_, pred, file, line); }
    int all(int pred, CUEMU_SITE) const { return ::__all_sync(mask_, pred, file, line); }
    unsigned ballot(int pred, CUEMU_SITE) const { // bit i: the thread of rank i
        unsigned b = ::__ballot_sync(mask_, pred, file, line), r = 0, i = 0;
        for (int l = 0; l < 32; l++)
            if (mask_ >> l & 1) r |= (b >> l & 1) << i++;
        return r;
    }
    template <class T> unsigned match_any(T v, CUEMU_SITE) const { return ::__match_any_sync(mask_, v, file, line); }
};
template <unsigned N> class thread_block_tile : public warp_group {
    static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16 || N == 32, "tiles have 1, 2, 4, 8, 16 or 32 threads");

  public:
    thread_block_tile()
        : warp_group(N, (N == 32 ? 0xffffffffu : (1u << N) - 1) << (::cuemu::block_rank() & 31 & ~(N - 1)), false) {}
    unsigned meta_group_rank() const { return ::cuemu::block_rank() / N; }
    unsigned meta_group_size() const { return (::cuemu::block_size() + N - 1) / N; }
};
template <unsigned N, class Parent> inline thread_block_tile<N> tiled_partition(const Parent &) { return {}; }
class coalesced_group : public warp_group {
  public:
    explicit coalesced_group(unsigned mask) : warp_group(32, mask, true) {}
    unsigned meta_group_rank() const { return 0; }
    unsigned meta_group_size() const { return 1; }
};
inline coalesced_group coalesced_threads(CUEMU_SITE) { return coalesced_group(::__activemask(file, line)); }
template <class G> inline void sync(const G &g, CUEMU_SITE) { g.sync(file, line); }
struct grid_group {}; // exists only so that this_grid() can say it is unsupported
template <class Unsupported = void> inline grid_group this_grid() {
    static_assert(::cuemu::dependent_false<Unsupported>,
                  "cuemu: cooperative_groups::this_grid() (grid-wide synchronisation) is unsupported");
    return {};
}
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };    // the smaller
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } }; // the larger
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };
// Every thread of the group gets op folded over the group's values.
template <unsigned N, class T, class Op> inline T reduce(const thread_block_tile<N> &g, T v, Op op, CUEMU_SITE) {
    for (unsigned d = N / 2; d > 0; d /= 2) v = op(v, g.shfl_xor(v, d, file, line));
    return v;
}
template <class T, class Op> inline T reduce(const coalesced_group &g, T v, Op op, CUEMU_SITE) {
    T acc = g.shfl(v, 0, file, line);
    for (unsigned r = 1; r < g.size(); r++) acc = op(acc, g.shfl(v, r, file, line));
    return acc;
}
} // namespace cooperative_groups

// ---------------------------------------------------------------------------------------
// WMMA (mma.h): a functional model. Lane l holds elements l*E .. l*E+E-1 of its fragment's
// tile in row-major order (E = num_elements). load, mma and store are collectives of the
// whole warp; mma computes D = A*B + C in float, k in order (tf32 inputs are rounded to
// 10 mantissa bits first).
// ---------------------------------------------------------------------------------------
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision { struct tf32 {}; }
inline float __float_to_tf32(float f) { // round to nearest even, keeping 10 mantissa bits
    uint32_t u = ::cuemu::bit_cast<uint32_t>(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return f;
    u += 0xfffu + (u >> 13 & 1);
    return ::cuemu::bit_cast<float>(u & 0xffffe000u);
}
template <class T> struct storage_of { using type = T; };
template <> struct storage_of<precision::tf32> { using type = float; };
template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
    static_assert((M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16) ||
                  (M == 16 && N == 16 && K == 8), "cuemu models the WMMA shapes 16x16x16, 32x8x16, 8x32x16 and 16x16x8");
    static_assert((K == 8) == std::is_same_v<T, precision::tf32> || std::is_same_v<Use, accumulator>,
                  "the 16x16x8 shape goes with precision::tf32");
    static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
    static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
    static constexpr int num_elements = rows * cols / 32;
    using element_type = typename storage_of<T>::type;
    element_type x[num_elements];
};
template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v) {
    for (auto &e : f.x) e = (typename fragment<Use, M, N, K, T, L>::element_type)v;
}
} // namespace wmma
} // namespace nvcuda
namespace cuemu {
// The whole warp must take part in every WMMA operation.
inline void wmma_sync(const char *what, const char *file, int line) {
    if ((g_cur->lin & ~31) + 32 > g_nthreads)
        fail(g_cur, "%s (%s:%d) in a warp with fewer than 32 threads (the block has %d)", what, file, line, g_nthreads);
    collective(Scope::warp, what, file, line, 0xffffffffu, complete_nothing);
}
// Element (r, c) of a tile stored at p with leading dimension ldm.
template <class P> inline P &at(P *p, unsigned ldm, int r, int c, bool row_major) {
    return row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}
template <class Frag, class P> inline void wmma_load(Frag &f, const P *p, unsigned ldm, bool row_major) {
    int base = (g_cur->lin & 31) * Frag::num_elements;
    for (int e = 0; e < Frag::num_elements; e++)
        f.x[e] = (typename Frag::element_type)at(p, ldm, (base + e) / Frag::cols, (base + e) % Frag::cols, row_major);
}
struct MmaOperands { void *d; const void *a, *b, *c; };
template <class T> inline float mma_input(T v) { return (float)v; }
template <> inline float mma_input(float v) { return v; }
template <class FD, class FA, class FB, class FC, bool Tf32> inline void complete_mma(Thread *const *m, int n) {
    constexpr int M = FA::rows, K = FA::cols, N = FB::cols;
    float A[M][K], B[K][N], C[M][N];
    for (int i = 0; i < n; i++) {
        const MmaOperands *o = (const MmaOperands *)m[i]->ptr;
        int lane = m[i]->lin & 31;
        for (int e = 0; e < FA::num_elements; e++) {
            int k = lane * FA::num_elements + e;
            float v = mma_input(((const FA *)o->a)->x[e]);
            A[k / K][k % K] = Tf32 ? nvcuda::wmma::__float_to_tf32(v) : v;
        }
        for (int e = 0; e < FB::num_elements; e++) {
            int k = lane * FB::num_elements + e;
            float v = mma_input(((const FB *)o->b)->x[e]);
            B[k / N][k % N] = Tf32 ? nvcuda::wmma::__float_to_tf32(v) : v;
        }
        for (int e = 0; e < FC::num_elements; e++) {
            int k = lane * FC::num_elements + e;
            C[k / N][k % N] = mma_input(((const FC *)o->c)->x[e]);
        }
    }
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            float acc = C[r][c];
            for (int k = 0; k < K; k++) acc += A[r][k] * B[k][c];
            C[r][c] = acc;
        }
    for (int i = 0; i < n; i++) { // D may alias C: written only after all of C was read
        FD *d = (FD *)((const MmaOperands *)m[i]->ptr)->d;
        for (int e = 0; e < FD::num_elements; e++) {
            int k = (m[i]->lin & 31) * FD::num_elements + e;
            d->x[e] = (typename FD::element_type)C[k / N][k % N];
        }
    }
}
} // namespace cuemu
namespace nvcuda {
namespace wmma {
template <class Use, int M, int N, int K, class T, class L, class P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const P *p, unsigned ldm, CUEMU_SITE) {
    static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load takes a layout_t");
    ::cuemu::wmma_sync("wmma::load_matrix_sync", file, line);
    ::cuemu::wmma_load(f, p, ldm, std::is_same_v<L, row_major>);
}
template <int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const P *p, unsigned ldm, layout_t layout, CUEMU_SITE) {
    ::cuemu::wmma_sync("wmma::load_matrix_sync", file, line);
    ::cuemu::wmma_load(f, p, ldm, layout == mem_row_major);
}
template <int M, int N, int K, class T, class P>
inline void store_matrix_sync(P *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm, layout_t layout, CUEMU_SITE) {
    using Frag = fragment<accumulator, M, N, K, T>;
    ::cuemu::wmma_sync("wmma::store_matrix_sync", file, line);
    int base = (::cuemu::g_cur->lin & 31) * Frag::num_elements;
    for (int e = 0; e < Frag::num_elements; e++)
        ::cuemu::at(p, ldm, (base + e) / N, (base + e) % N, layout == mem_row_major) = (P)f.x[e];
}
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC>
inline void mma_sync(fragment<accumulator, M, N, K, TC> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, TC> &c,
                     bool satf = false, CUEMU_SITE) {
    static_assert(std::is_same_v<TA, TB>, "matrix_a and matrix_b fragments must have one element type");
    using FC = fragment<accumulator, M, N, K, TC>;
    ::cuemu::MmaOperands ops{&d, &a, &b, &c};
    if ((::cuemu::g_cur->lin & ~31) + 32 > ::cuemu::g_nthreads)
        ::cuemu::fail(::cuemu::g_cur, "wmma::mma_sync (%s:%d) in a warp with fewer than 32 threads", file, line);
    ::cuemu::collective(::cuemu::Scope::warp, "wmma::mma_sync", file, line, 0xffffffffu,
                        ::cuemu::complete_mma<FC, fragment<matrix_a, M, N, K, TA, LA>, fragment<matrix_b, M, N, K, TB, LB>,
                                              FC, std::is_same_v<TA, precision::tf32>>, 0, 0, 32, &ops);
    if (satf) for (auto &e : d.x) e = (typename FC::element_type)__saturatef((float)e);
}
} // namespace wmma
} // namespace nvcuda

// ---------------------------------------------------------------------------------------
// Unsupported features: named here so that a program using them stops with a clear message
// (textures and surfaces are not declared at all and fail to compile).
// ---------------------------------------------------------------------------------------
template <class... A> inline cudaError_t cudaLaunchCooperativeKernel(A...) {
    static_assert(::cuemu::dependent_false<std::tuple<A...>>, "cuemu: cooperative launches (grid sync) are unsupported");
    return cudaErrorNotSupported;
}
template <class... A> inline cudaError_t cudaLaunchKernel(A...) {
    static_assert(::cuemu::dependent_false<std::tuple<A...>>, "cuemu: cudaLaunchKernel is unsupported; use <<<...>>>");
    return cudaErrorNotSupported;
}

#endif // CUEMU_H
