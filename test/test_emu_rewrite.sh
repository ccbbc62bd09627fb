#!/usr/bin/env bash
# Tests of emu/nvcc-emu's source rewrite (launches, extern __shared__, __shared__ at function
# scope) and its scan for unmodelled features, through --rewrite-only; then the driver's
# compile path with a stand-in runtime header (a copy of the driver beside a stub cuemu.h).
# Prints PASS/FAIL lines; exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
EMU=./emu/nvcc-emu
[ -x $EMU ] || make -s emu/nvcc-emu >/dev/null || { echo "FAIL emu_rewrite_build: make emu/nvcc-emu"; exit 1; }
T=$(mktemp -d /tmp/cuset_emu_rewrite.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass() { echo "PASS emu_rewrite $1"; }
fail() { echo "FAIL emu_rewrite $1: $2"; fails=$((fails + 1)); }

# rewrite NAME: the source on fd 3 and the expected output (without the #line) on fd 4
rewrite() {
    local name=$1
    cat <&3 >"$T/$name.cu"
    cat <&4 >"$T/$name.want"
    $EMU --rewrite-only "$T/$name.cu" >"$T/$name.got" 2>"$T/$name.err"
    local rc=$?
    if [ $rc -ne 0 ]; then fail "$name" "exit $rc: $(head -3 "$T/$name.err")"; return; fi
    if [ "$(head -1 "$T/$name.got")" != "#line 1 \"$T/$name.cu\"" ]; then fail "$name" "first line: $(head -1 "$T/$name.got")"; return; fi
    tail -n +2 "$T/$name.got" >"$T/$name.body"
    if ! cmp -s "$T/$name.body" "$T/$name.want"; then
        fail "$name" "output differs: $(diff "$T/$name.want" "$T/$name.body" | head -6 | tr '\n' '|')"
    elif [ "$(wc -l <"$T/$name.cu")" -ne "$(wc -l <"$T/$name.body")" ]; then fail "$name" "line count changed"
    else pass "$name"; fi
}

rewrite plain 3<<'EOF' 4<<'EOF'
int main() {
    add<<<grid, block>>>(a, b, c, n);
    add<<<(n + 255) / 256, 256>>>(a, n);
    noargs<<<1, 1>>>();
}
EOF
int main() {
    ::cuemu::launch(::cuemu::Config(grid, block), "add", __FILE__, __LINE__, [&](auto &...cuemu_a_) { add(cuemu_a_...); }, a, b, c, n);
    ::cuemu::launch(::cuemu::Config((n + 255) / 256, 256), "add", __FILE__, __LINE__, [&](auto &...cuemu_a_) { add(cuemu_a_...); }, a, n);
    ::cuemu::launch(::cuemu::Config(1, 1), "noargs", __FILE__, __LINE__, [&](auto &...cuemu_a_) { noargs(cuemu_a_...); });
}
EOF

rewrite null_arguments 3<<'EOF' 4<<'EOF'
void f() {
    k<<<1, 32>>>(NULL, n, f(NULL), (int *)NULL,
                 NULL, 0, 0u, 0x0UL, 00, 0.0f, 0x, 10, n - 0, (0));
}
EOF
void f() {
    ::cuemu::launch(::cuemu::Config(1, 32), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, ::cuemu::Zero{}, n, f(NULL), (int *)NULL,
                 ::cuemu::Zero{}, ::cuemu::Zero{}, ::cuemu::Zero{}, ::cuemu::Zero{}, ::cuemu::Zero{}, 0.0f, 0x, 10, n - 0, (0));
}
EOF

rewrite config_forms 3<<'EOF' 4<<'EOF'
void f() {
    k<<<dim3(gx, gy), dim3(16, 16)>>>(x);
    k<<<blocks, threads, threads * sizeof(float)>>>(x);
    k<<<blocks, threads, smem, stream>>>(x);
    k<<<std::min<int>(n, 64), 256>>>(x);
    k<<<n >> 8, (a > b ? a : b)>>>(x);
    k<<<dim3{1, 2}, 32>>>(x);
}
EOF
void f() {
    ::cuemu::launch(::cuemu::Config(dim3(gx, gy), dim3(16, 16)), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(blocks, threads, threads * sizeof(float)), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(blocks, threads, smem, stream), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(std::min<int>(n, 64), 256), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(n >> 8, (a > b ? a : b)), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(dim3{1, 2}, 32), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, x);
}
EOF

rewrite kernel_forms 3<<'EOF' 4<<'EOF'
void f() {
    scale<float, 4><<<g, b>>>(x);
    k<T, (N > 4)><<<g, b>>>(x);
    k<Vec<float, 4>, Op<int>><<<g, b>>>(x);
    k<A<B<int>>><<<g, b>>>(x);
    ns::k<<<g, b>>>(x);
    ::k<<<g, b>>>(x);
    a::b::k<float><<<g, b>>>(x);
    ns::template k<T><<<g, b>>>(x);
    (kernel_ptr)<<<g, b>>>(x);
    table[i]<<<g, b>>>(x);
    plan.steps[i].kernel<<<g, b>>>(x);
    p->fns[2]<<<g, b>>>(x);
    this->k<<<g, b>>>(x);
}
EOF
void f() {
    ::cuemu::launch(::cuemu::Config(g, b), "scale<float, 4>", __FILE__, __LINE__, [&](auto &...cuemu_a_) { scale<float, 4>(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "k<T, (N > 4)>", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k<T, (N > 4)>(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "k<Vec<float, 4>, Op<int>>", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k<Vec<float, 4>, Op<int>>(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "k<A<B<int>>>", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k<A<B<int>>>(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "ns::k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { ns::k(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "::k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { ::k(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "a::b::k<float>", __FILE__, __LINE__, [&](auto &...cuemu_a_) { a::b::k<float>(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "ns::template k<T>", __FILE__, __LINE__, [&](auto &...cuemu_a_) { ns::template k<T>(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b), "(kernel_ptr)", __FILE__, __LINE__, [&](auto &...cuemu_a_) { (kernel_ptr)(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b).launching(::cuemu::function_address(table[i])), "table[i]", __FILE__, __LINE__, [&](auto &...cuemu_a_) { table[i](cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b).launching(::cuemu::function_address(plan.steps[i].kernel)), "plan.steps[i].kernel", __FILE__, __LINE__, [&](auto &...cuemu_a_) { plan.steps[i].kernel(cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b).launching(::cuemu::function_address(p->fns[2])), "p->fns[2]", __FILE__, __LINE__, [&](auto &...cuemu_a_) { p->fns[2](cuemu_a_...); }, x);
    ::cuemu::launch(::cuemu::Config(g, b).launching(::cuemu::function_address(this->k)), "this->k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { this->k(cuemu_a_...); }, x);
}
EOF

rewrite args_verbatim 3<<'EOF' 4<<'EOF'
void f() {
    k<<<1, 256>>>(f(a, g(b)), "<<<)", ')', [&](int i) { return h<1, 2>(i); }, std::max<int>(m, n));
    k<<<1, 1>>>(/* none */);
}
EOF
void f() {
    ::cuemu::launch(::cuemu::Config(1, 256), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, f(a, g(b)), "<<<)", ')', [&](int i) { return h<1, 2>(i); }, std::max<int>(m, n));
    ::cuemu::launch(::cuemu::Config(1, 1), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }/* none */);
}
EOF

rewrite comments_and_strings 3<<'EOF' 4<<'EOF'
// k<<<1, 1>>>(x); in a line comment
/* k<<<1, 1>>>(x); in a block
   comment */ const char *s = "k<<<1, 1>>>(x)";
const char *r = R"x(k<<<1, 1>>>(")"; tex2D(t); asm("nop"))x";
char c = '<'; int n = 1'000'000; // asm("trap") and tex2D in a comment
int my_tex2D_count = 0, asm_lines = 2, texture_count = 3;
EOF
// k<<<1, 1>>>(x); in a line comment
/* k<<<1, 1>>>(x); in a block
   comment */ const char *s = "k<<<1, 1>>>(x)";
const char *r = R"x(k<<<1, 1>>>(")"; tex2D(t); asm("nop"))x";
char c = '<'; int n = 1'000'000; // asm("trap") and tex2D in a comment
int my_tex2D_count = 0, asm_lines = 2, texture_count = 3;
EOF

rewrite multiline_launch 3<<'EOF' 4<<'EOF'
void f() {
    big_kernel<float,
               8>
        <<<dim3(gx,
                gy),
           block>>>
        (a,
         b);
    int line_after = __LINE__;
}
EOF
void f() {
    ::cuemu::launch(::cuemu::Config(dim3(gx,                 gy),            block), "big_kernel<float,                8>", __FILE__, __LINE__, [&](auto &...cuemu_a_) { big_kernel<float,
               8>(cuemu_a_...); }, 



a,
         b);
    int line_after = __LINE__;
}
EOF

rewrite define_launch 3<<'EOF' 4<<'EOF'
#define LAUNCH(k, n) k<<<((n) + 255) / 256, 256>>>(x, n)
#define LAUNCH2(k) \
    do { \
        k<<<grid, \
            block>>>(a, b); \
    } while (0)
int after_macros = __LINE__;
EOF
#define LAUNCH(k, n) ::cuemu::launch(::cuemu::Config(((n) + 255) / 256, 256), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, x, n)
#define LAUNCH2(k) \
    do { \
        ::cuemu::launch(::cuemu::Config(grid,              block), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); },  \
a, b); \
    } while (0)
int after_macros = __LINE__;
EOF

rewrite extern_shared 3<<'EOF' 4<<'EOF'
extern __shared__ float file_smem[];
__global__ void k1() {
    extern __shared__ float s[];
    extern __shared__ __align__(16) unsigned char raw[];
    extern __shared__ alignas(8) double d[0];
    extern __shared__ volatile int v[];
}
template <typename T> __global__ void k2() {
    extern __shared__ __align__(sizeof(T)) unsigned char bytes[];
    extern __shared__ Pair<T, int> pairs[];
}
EOF
float *const file_smem = reinterpret_cast<float *>(::cuemu::dyn_smem);
__global__ void k1() {
    float *const s = reinterpret_cast<float *>(::cuemu::dyn_smem);
    unsigned char *const raw = reinterpret_cast<unsigned char *>(::cuemu::dyn_smem);
    double *const d = reinterpret_cast<double *>(::cuemu::dyn_smem);
    volatile int *const v = reinterpret_cast<volatile int *>(::cuemu::dyn_smem);
}
template <typename T> __global__ void k2() {
    unsigned char *const bytes = reinterpret_cast<unsigned char *>(::cuemu::dyn_smem);
    Pair < T , int > *const pairs = reinterpret_cast<Pair < T , int > *>(::cuemu::dyn_smem);
}
EOF

rewrite shared_decls 3<<'EOF' 4<<'EOF'
__shared__ float file_scope[32];
namespace ns { __shared__ int in_namespace; }
static __shared__ int file_static;
__global__ void k() {
    __shared__ float s[256];
    __shared__ float a[T][T + 1], b[T][T];
    __shared__ int count;
    __shared__ __align__(16) float4 buf[64];
    static __shared__ float x[32];
    __shared__ Pair<int, float> p[4], *q;
    if (threadIdx.x == 0) { __shared__ unsigned long long w; }
}
struct S { __device__ void m() { __shared__ double t[8]; } };
EOF
__shared__ float file_scope[32];
namespace ns { __shared__ int in_namespace; }
__shared__ int file_static;
__global__ void k() {
    static char cuemu_shared_26[1]; float (&s)[256] = ::cuemu::shared_var<float [256]>(&cuemu_shared_26[0]);
    static char cuemu_shared_33[2]; float (&a)[T][T + 1] = ::cuemu::shared_var<float [T][T + 1]>(&cuemu_shared_33[0]); float (&b)[T][T] = ::cuemu::shared_var<float [T][T]>(&cuemu_shared_33[1]);
    static char cuemu_shared_53[1]; int (&count) = ::cuemu::shared_var<int>(&cuemu_shared_53[0]);
    static char cuemu_shared_57[1]; float4 (&buf)[64] = ::cuemu::shared_var<float4 [64]>(&cuemu_shared_57[0]);
    static char cuemu_shared_69[1]; float (&x)[32] = ::cuemu::shared_var<float [32]>(&cuemu_shared_69[0]);
    static char cuemu_shared_76[2]; Pair<int, float> (&p)[4] = ::cuemu::shared_var<Pair<int, float> [4]>(&cuemu_shared_76[0]); Pair<int, float> * (&q) = ::cuemu::shared_var<Pair<int, float> *>(&cuemu_shared_76[1]);
    if (threadIdx.x == 0) { static char cuemu_shared_101[1]; unsigned long long (&w) = ::cuemu::shared_var<unsigned long long>(&cuemu_shared_101[0]); }
}
struct S { __device__ void m() { static char cuemu_shared_118[1]; double (&t)[8] = ::cuemu::shared_var<double [8]>(&cuemu_shared_118[0]); } };
EOF

rewrite host_after_device_code 3<<'EOF' 4<<'EOF'
__device__ float helper(float x);
__device__ int table[3] = {1, 2, 3};
__global__ void k(float *x) { x[0] = helper(1.0f); }
int main() { auto l = [] __device__ (int i) { return i; }; k<<<1, 1>>>(p); }
EOF
__device__ float helper(float x);
__device__ int table[3] = {1, 2, 3};
__global__ void k(float *x) { x[0] = helper(1.0f); }
int main() { auto l = [] __device__ (int i) { return i; }; ::cuemu::launch(::cuemu::Config(1, 1), "k", __FILE__, __LINE__, [&](auto &...cuemu_a_) { k(cuemu_a_...); }, p); }
EOF

# __launch_bounds__: a check first in the body (the bound's first argument; a template's
# parameter, nested parentheses, over lines; before a __shared__ rewritten at the same
# place; before __global__ with `static` between) and the kernel's name and parameter count
# registered after it (not inside a struct); neither for a declaration or in a #define. A
# definition without a bound takes that of a declaration with the same name and parameter
# count, both outside templates or both templates (MAX then names the definition's template
# parameters, matched by position); one with none gets a check of 0 (no bound) where a
# bounded kernel has its name and parameter count, so that probing it returns at once.
rewrite launch_bounds 3<<'EOF' 4<<'EOF'
__global__ void __launch_bounds__(256) a(float *x) { x[0] = 1; }
template <int B> __global__ void __launch_bounds__(B, (B > 64 ? 2 : 4)) b(float *x)
{
    x[0] = 2;
}
__global__ __launch_bounds__(
    MAX(64, 32)) void c(float *x) {}
__global__ void __launch_bounds__(128) d(float *x);
#define BOUNDED(name) __global__ void __launch_bounds__(64) name(float *x) { x[0] = 3; }
__global__ void __launch_bounds__(32) e(float *x) {__shared__ float s[32]; x[0] = s[0]; }
__global__ void d(float *x) { x[0] = 4; }
__global__ void d(float *x, int n) { x[n] = 5; }
template <int B> __global__ void __launch_bounds__(B) t(float *x);
template <int B> __global__ void t(float *x) { x[0] = 6; }
__launch_bounds__(96) static __global__ void f(void) {}
struct S { friend __global__ void __launch_bounds__(64) g(int *y) { y[0] = 1; } };
__global__ void a(int *y) { y[0] = 7; }
template <int N, typename T = Vec<float>> __global__ void __launch_bounds__(N / 2 + sizeof(T)) u(T *x);
template <int M, typename U> __global__ void u(U *x) { x[0] = M; }
template <int B> __global__ void __launch_bounds__(B) v(float *x);
__global__ void v(float *x) { x[0] = 8; }
EOF
__global__ void __launch_bounds__(256) a(float *x) { if (::cuemu::over_launch_bound(256)) return; x[0] = 1; } static const bool cuemu_bounded_0 = ::cuemu::bounded_kernel("a", 1);
template <int B> __global__ void __launch_bounds__(B, (B > 64 ? 2 : 4)) b(float *x)
{ if (::cuemu::over_launch_bound(B)) return;
    x[0] = 2;
} static const bool cuemu_bounded_26 = ::cuemu::bounded_kernel("b", 1);
__global__ __launch_bounds__(
    MAX(64, 32)) void c(float *x) { if (::cuemu::over_launch_bound(MAX(64, 32))) return;} static const bool cuemu_bounded_57 = ::cuemu::bounded_kernel("c", 1);
__global__ void __launch_bounds__(128) d(float *x);
#define BOUNDED(name) __global__ void __launch_bounds__(64) name(float *x) { x[0] = 3; }
__global__ void __launch_bounds__(32) e(float *x) { if (::cuemu::over_launch_bound(32)) return;static char cuemu_shared_129[1]; float (&s)[32] = ::cuemu::shared_var<float [32]>(&cuemu_shared_129[0]); x[0] = s[0]; } static const bool cuemu_bounded_116 = ::cuemu::bounded_kernel("e", 1);
__global__ void d(float *x) { if (::cuemu::over_launch_bound(128)) return; x[0] = 4; } static const bool cuemu_bounded_147 = ::cuemu::bounded_kernel("d", 1);
__global__ void d(float *x, int n) { x[n] = 5; }
template <int B> __global__ void __launch_bounds__(B) t(float *x);
template <int B> __global__ void t(float *x) { if (::cuemu::over_launch_bound(B)) return; x[0] = 6; } static const bool cuemu_bounded_207 = ::cuemu::bounded_kernel("t", 1);
__launch_bounds__(96) static __global__ void f(void) { if (::cuemu::over_launch_bound(96)) return;} static const bool cuemu_bounded_229 = ::cuemu::bounded_kernel("f", 0);
struct S { friend __global__ void __launch_bounds__(64) g(int *y) { if (::cuemu::over_launch_bound(64)) return; y[0] = 1; } };
__global__ void a(int *y) { if (::cuemu::over_launch_bound(0)) return; y[0] = 7; } static const bool cuemu_bounded_264 = ::cuemu::bounded_kernel("a", 1);
template <int N, typename T = Vec<float>> __global__ void __launch_bounds__(N / 2 + sizeof(T)) u(T *x);
template <int M, typename U> __global__ void u(U *x) { if (::cuemu::over_launch_bound(M / 2 + sizeof(U))) return; x[0] = M; } static const bool cuemu_bounded_322 = ::cuemu::bounded_kernel("u", 1);
template <int B> __global__ void __launch_bounds__(B) v(float *x);
__global__ void v(float *x) { if (::cuemu::over_launch_bound(0)) return; x[0] = 8; } static const bool cuemu_bounded_357 = ::cuemu::bounded_kernel("v", 1);
EOF

# Standard math calls go to ::cuemu::dev (rewrite 5): NAMEf and NAME, std::NAME and
# ::std::NAME, in kernels, host code and #define bodies; not other qualified ones (::,
# another namespace, members), declarations, names not called, or names the program makes
# its own (a macro, a function it defines: log1p of a string, a member cos; or a variable:
# a lambda named sinh).
rewrite std_math 3<<'EOF' 4<<'EOF'
#define SIG(v) (1.0f / (1.0f + expf(-(v))))
#define tanhf(v) fast_tanh(v)
extern "C" float expf(float);
__device__ float log1p(const char *tag) { return tag[0]; }
struct Acc { __device__ double cos(double v) const { return v; } __device__ double f(double v) { return cos(v); } };
__global__ void k(float *y, const float *x, double *d) {
    float s, c; sincosf(x[0], &s, &c); sincos(d[0], &d[1], &d[2]);
    y[0] = expf(x[0]) + std::exp(x[1]) + ::logf(x[2]) + powf(x[3], 2.0f) + SIG(x[4]) + ::std::tanh(x[5]);
    if (x[5] > 0) return tanhf(x[5]), void(); else erff(x[6]);
    d[0] = exp(d[1]) + pow(d[2], 3) + log1p("x") + my::exp(d[3]) + Acc().cos(d[4]) + log(2);
}
float (*fp)(float) = logf; struct S { float expf(float); } obj; float h = obj.expf(1.0f) + atan2f(1, 2);
auto sinh = [](float v) { return v; }; float z = sinh(1.0f) + cosh(1.0f);
EOF
#define SIG(v) (1.0f / (1.0f + ::cuemu::dev::expf(-(v))))
#define tanhf(v) fast_tanh(v)
extern "C" float expf(float);
__device__ float log1p(const char *tag) { return tag[0]; }
struct Acc { __device__ double cos(double v) const { return v; } __device__ double f(double v) { return cos(v); } };
__global__ void k(float *y, const float *x, double *d) {
    float s, c; ::cuemu::dev::sincosf(x[0], &s, &c); ::cuemu::dev::sincos(d[0], &d[1], &d[2]);
    y[0] = ::cuemu::dev::expf(x[0]) + ::cuemu::dev::exp(x[1]) + ::logf(x[2]) + ::cuemu::dev::powf(x[3], 2.0f) + SIG(x[4]) + ::cuemu::dev::tanh(x[5]);
    if (x[5] > 0) return tanhf(x[5]), void(); else ::cuemu::dev::erff(x[6]);
    d[0] = ::cuemu::dev::exp(d[1]) + ::cuemu::dev::pow(d[2], 3) + log1p("x") + my::exp(d[3]) + Acc().cos(d[4]) + ::cuemu::dev::log(2);
}
float (*fp)(float) = logf; struct S { float expf(float); } obj; float h = obj.expf(1.0f) + ::cuemu::dev::atan2f(1, 2);
auto sinh = [](float v) { return v; }; float z = sinh(1.0f) + ::cuemu::dev::cosh(1.0f);
EOF

# nvcc-emu's list of those functions and the runtime's (cuemu.h) are the same
emu_list=$(sed -n '/^static const char \*const std_math\[\]/,/NULL };/p' emu/nvcc-emu.c | grep -o '"[a-z0-9]*"' | tr -d '"' | sort)
rt_list=$( (sed -n '/^#define CUEMU_STD_MATH(X)/,/^#define CUEMU_DEV_GENERIC(/p' emu/cuemu.h | grep -o 'X([a-z0-9]*' | cut -c3-;
            grep -o 'inline void sincos(double' emu/cuemu.h | cut -c13-18) | sort)
[ -n "$emu_list" ] && [ "$emu_list" = "$rt_list" ] && pass "std_math_lists_agree ($(echo "$emu_list" | wc -l) functions)" \
    || fail "std_math_lists_agree" "nvcc-emu: $(echo $emu_list) | cuemu.h: $(echo $rt_list)"

# Any number of bounded declarations: 300 declared, then 300 definitions, each checked.
for i in $(seq 300); do echo "__global__ void __launch_bounds__($i) k$i(int *y);"; done >"$T/many_bounds.cu"
for i in $(seq 300); do echo "__global__ void k$i(int *y) { y[0] = $i; }"; done >>"$T/many_bounds.cu"
checked=$($EMU --rewrite-only "$T/many_bounds.cu" | grep -c 'k\([0-9]*\)(int \*y) { if (::cuemu::over_launch_bound(\1))')
[ "$checked" = 300 ] && pass "launch_bounds_many_declarations" \
    || fail "launch_bounds_many_declarations" "$checked of 300 definitions checked against their declared bound"

# feature NAME WANT_LINE WANT_NAME: the source on fd 3 is refused with exit 3 and the message
feature() {
    local name=$1 line=$2 want=$3
    cat <&3 >"$T/$name.cu"
    $EMU -o "$T/$name.out" "$T/$name.cu" >"$T/$name.got" 2>"$T/$name.err"
    local rc=$?
    if [ $rc -ne 3 ]; then fail "feature_$name" "exit $rc, want 3: $(head -2 "$T/$name.err")"
    elif ! grep -qF "nvcc-emu: $T/$name.cu:$line: unsupported feature: $want (" "$T/$name.err"; then
        fail "feature_$name" "want line $line '$want', got: $(head -2 "$T/$name.err")"
    elif [ -e "$T/$name.out" ]; then fail "feature_$name" "an executable was written"
    else pass "feature_$name"; fi
}
feature texture_object 3 "texture objects" 3<<'EOF'
#include <cuda_runtime.h>
__global__ void k(float *o,
                  cudaTextureObject_t t) { o[0] = tex1Dfetch<float>(t, 0); }
EOF
feature tex2D 2 "texture objects" 3<<'EOF'
__global__ void k(float *o, long t) {
    o[0] = tex2D<float>(t, 0.5f, 0.5f); }
EOF
feature texture_reference 1 "texture references" 3<<'EOF'
texture<float, 1, cudaReadModeElementType> tex;
EOF
feature surface 2 "surface objects" 3<<'EOF'
__global__ void k(long s) {
    surf2Dwrite(1.0f, s, 0, 0); }
EOF
feature inline_ptx 3 "inline PTX" 3<<'EOF'
__device__ unsigned lane() {
    unsigned r; // asm in a comment is fine
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
    return r; }
EOF
feature inline_ptx_plain 1 "inline PTX" 3<<'EOF'
__device__ void f() { asm("trap;"); }
EOF
feature grid_sync 4 "grid-wide sync" 3<<'EOF'
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k() {
    cg::grid_group grid = cg::this_grid();
    grid.sync(); }
EOF
feature cooperative_launch 2 "grid-wide sync" 3<<'EOF'
int main() {
    cudaLaunchCooperativeKernel((void *)k, 1, 1, args, 0, 0); }
EOF
feature dynamic_parallelism 3 "dynamic parallelism" 3<<'EOF'
__global__ void child(int *x) { x[0] = 1; }
__global__ void parent(int *x) {
    if (threadIdx.x == 0) child<<<1, 1>>>(x);
}
EOF
feature graphs 2 "CUDA graphs" 3<<'EOF'
int main() {
    cudaGraph_t g; cudaGraphExec_t e; }
EOF
feature cublas 2 "cuBLAS" 3<<'EOF'
#include <cuda_runtime.h>
#include <cublas_v2.h>
EOF
feature cufft 1 "cuFFT" 3<<'EOF'
#include "cufft.h"
EOF
feature curand 1 "cuRAND" 3<<'EOF'
#include <curand_kernel.h>
EOF
feature curand_call 1 "cuRAND" 3<<'EOF'
__global__ void k(curandState *s) {
    curand_init(1, 0, 0, s); }
EOF
feature thrust 3 "Thrust" 3<<'EOF'
// #include <cublas_v2.h> in a comment is fine
#include <vector>
#include <thrust/device_vector.h>
EOF
feature cub 1 "CUB" 3<<'EOF'
#include <cub/cub.cuh>
EOF
feature libcudacxx 1 "libcu++" 3<<'EOF'
#include <cuda/std/atomic>
EOF
feature cuda_barrier 1 "CUDA barriers" 3<<'EOF'
#include <cuda/barrier>
EOF
feature cuda_pipeline 1 "CUDA pipelines" 3<<'EOF'
#include <cuda_pipeline.h>
EOF
feature memcpy3d 2 "cudaMemcpy3D" 3<<'EOF'
int main() {
    cudaMemcpy3D(&p); }
EOF

# two features: one line each; a false-positive check: nothing flagged for near-miss names
cat >"$T/two.cu" <<'EOF'
#include <cufft.h>
__device__ void f() { asm("trap;"); }
__device__ void g() { asm("exit;"); }
EOF
$EMU "$T/two.cu" >/dev/null 2>"$T/two.err"; rc=$?
if [ $rc -eq 3 ] && [ "$(grep -c 'unsupported feature' "$T/two.err")" -eq 2 ]; then pass "feature_one_line_each"
else fail "feature_one_line_each" "exit $rc: $(tr '\n' '|' <"$T/two.err")"; fi
cat >"$T/near.cu" <<'EOF'
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cuda_fp16.h>
namespace cg = cooperative_groups;
int my_tex2D_count, texture_size, asm_count, surface = 1, graph_sync, cublas_like; // tex2D(t) asm("x")
__global__ void k(float *x, dim3 grid) { cg::thread_block b = cg::this_thread_block(); b.sync(); x[0] = grid.x; }
__device__ float curand_like(float v) { return v; }
int main() { cudaMemPrefetchAsync(0, 0, 0); k<<<1, 1>>>(0, dim3(1)); const char *s = "cudaGraphLaunch asm("; }
EOF
$EMU --rewrite-only "$T/near.cu" >/dev/null 2>"$T/near.err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$T/near.err" ] && pass "no_false_positives" || fail "no_false_positives" "exit $rc: $(head -2 "$T/near.err")"

# the command line
$EMU --help | grep -q "usage: nvcc-emu" && pass "help" || fail "help" "no usage line"
$EMU >/dev/null 2>&1; rc=$?; [ $rc -eq 2 ] && pass "no_input_exit_2" || fail "no_input_exit_2" "exit $rc"
$EMU "$T/none.cu" >/dev/null 2>"$T/none.err"; rc=$?
[ $rc -eq 2 ] && grep -q "cannot read" "$T/none.err" && pass "unreadable_exit_2" || fail "unreadable_exit_2" "exit $rc"
$EMU -arch=sm_90 -O3 -lineinfo --use_fast_math -Xptxas -v -gencode arch=compute_90,code=sm_90 -std=c++17 \
    --rewrite-only "$T/plain.cu" >"$T/flags.got" 2>&1; rc=$?
[ $rc -eq 0 ] && cmp -s <(tail -n +2 "$T/flags.got") "$T/plain.want" && pass "nvcc_flags_ignored" \
    || fail "nvcc_flags_ignored" "exit $rc: $(head -2 "$T/flags.got")"

# the compile path, against a stand-in runtime: a copy of the driver beside a stub cuemu.h
mkdir -p "$T/stub/include"
cp $EMU "$T/stub/nvcc-emu"
: >"$T/stub/include/cuda_runtime.h"
cat >"$T/stub/cuemu.h" <<'EOF'
#include <cstdio>
#define __global__
#define __shared__ static
namespace cuemu {
inline char dyn_smem[1024];
struct Config { template <class... A> Config(A...) {} };
template <class T> T &shared_var(const void *) { static T v; return v; }
template <class F, class... A> void launch(Config, const char *name, const char *file, int line, F f, A... a) {
    std::printf("%s %s:%d\n", name, file, line);
    f(a...);
}
}
EOF
cat >"$T/prog.cu" <<'EOF'
#include <cuda_runtime.h>
#include <cstdio>
__global__ void k(int *x, int v) { __shared__ int s; s = v; extern __shared__ int d[]; d[0] = s; *x = d[0]; }
int main() {
    int x = 0;
    k<<<1,
        1>>>(&x,
             MAGIC);
    std::printf("x=%d line=%d\n", x, __LINE__);
    return 0;
}
EOF
if "$T/stub/nvcc-emu" -O3 -arch=sm_80 -D MAGIC=42 -o "$T/prog" "$T/prog.cu" >"$T/prog.err" 2>&1; then
    out=$("$T/prog")
    want="k $T/prog.cu:6
x=42 line=9"
    [ "$out" = "$want" ] && pass "compile_and_run_stub" || fail "compile_and_run_stub" "output: $(echo "$out" | tr '\n' '|')"
else fail "compile_and_run_stub" "$(head -3 "$T/prog.err")"; fi
printf '#include <cuda_runtime.h>\nint main() {\n    k<<<1, 1>>>(0);\n    int y = undeclared_name;\n}\n' >"$T/bad.cu"
"$T/stub/nvcc-emu" -o "$T/bad" "$T/bad.cu" >"$T/bad.err" 2>&1; rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 3 ] && grep -q "bad.cu:4:.*undeclared_name" "$T/bad.err"; then pass "compile_error_points_at_user_line"
else fail "compile_error_points_at_user_line" "exit $rc: $(head -2 "$T/bad.err")"; fi
rm -f "$T/stub/cuemu.h"
"$T/stub/nvcc-emu" -o "$T/prog" "$T/prog.cu" >"$T/nohdr.err" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "cuemu.h is missing" "$T/nohdr.err" && pass "missing_runtime_exit_2" || fail "missing_runtime_exit_2" "exit $rc"

# The rewriter under AddressSanitizer and UBSan on hostile text (what a model writes may be
# any text): edge cases, and each test/emu program cut at 10 random points (a fresh seed
# each run): an exit status of 0-3 and no sanitizer report.
if gcc -std=c11 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o "$T/nvcc-emu-asan" \
    emu/nvcc-emu.c 2>"$T/asan-build.err"; then
    mkdir -p "$T/hostile"
    printf '' >"$T/hostile/empty.cu"
    printf 'int x;\n' >"$T/hostile/no_edits.cu"
    printf '{ k<<<1, 1>>>(); }\n' >"$T/hostile/leading_brace.cu"
    printf 'int main() { k<<<' >"$T/hostile/open_launch.cu"
    printf '>>>(x);\n__global__' >"$T/hostile/close_first.cu"
    printf '/* never closed\n k<<<1,1>>>();' >"$T/hostile/open_comment.cu"
    printf 'const char *s = "never closed\n' >"$T/hostile/open_string.cu"
    printf 'auto s = R"x(never closed' >"$T/hostile/open_raw_string.cu"
    printf 'extern "C" {' >"$T/hostile/open_extern.cu"
    printf '%0.s{' $(seq 600) >"$T/hostile/deep.cu"
    seed=${EMU_REWRITE_SEED:-$(( $(date +%s) % 100000 ))}
    RANDOM=$seed
    for f in test/emu/*.cu; do
        size=$(wc -c <"$f")
        for k in $(seq 10); do head -c $(( (RANDOM * 32768 + RANDOM) % (size + 1) )) "$f" >"$T/hostile/$(basename "$f" .cu)_$k.cu"; done
    done
    bad=""
    for f in "$T"/hostile/*.cu; do
        ASAN_OPTIONS=detect_leaks=0 timeout 20 "$T/nvcc-emu-asan" --rewrite-only "$f" >/dev/null 2>"$T/hostile.err"
        rc=$?
        if [ $rc -gt 3 ] || grep -qE "runtime error|ERROR: AddressSanitizer" "$T/hostile.err"; then
            bad="$(basename "$f") exit $rc: $(grep -m1 -E "runtime error|ERROR" "$T/hostile.err")"
            break
        fi
    done
    n=$(ls "$T"/hostile/*.cu | wc -l)
    [ -z "$bad" ] && pass "hostile_text_sanitized ($n inputs, seed $seed)" \
        || fail "hostile_text_sanitized" "$bad (seed $seed; EMU_REWRITE_SEED=$seed reproduces)"
else echo "SKIP emu_rewrite hostile_text_sanitized: gcc -fsanitize=address,undefined: $(head -1 "$T/asan-build.err")"; fi

[ $fails -eq 0 ]
