#!/bin/bash
# Tests of the CUDA CPU emulator (emu/cuemu.h built through emu/nvcc-emu): correct programs
# under test/emu/ must match their own CPU references (in plain and reordered runs), and
# planted bugs must be caught (a race by reordering, out-of-bounds writes by
# AddressSanitizer and shared-memory overruns also without it, broken collectives with
# exit status 86).
# Prints PASS/FAIL/SKIP per check; exits non-zero if any check failed.
cd "$(dirname "$0")/.." || exit 2
make -s emu/nvcc-emu >/dev/null || { echo "FAIL build: make emu/nvcc-emu"; exit 1; }
DRV=emu/nvcc-emu
SRC=test/emu
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=1; }

# build NAME OUT [driver flags...]: compile test/emu/NAME.cu to $TMP/OUT; says why on failure.
build() {
    local name=$1 out=$2
    shift 2
    $DRV "$@" -I $SRC $SRC/$name.cu -o "$TMP/$out" >"$TMP/$out.build" 2>&1
    local rc=$?
    if [ $rc -ne 0 ]; then
        fail "$out" "build failed (exit $rc): $(head -c 300 "$TMP/$out.build" | tr '\n' ' ')"
        return 1
    fi
}

# expect_ok NAME OUT [ENV...]: the program prints OK and exits 0.
expect_ok() {
    local label=$1 out=$2
    shift 2
    env "$@" "$TMP/$out" >"$TMP/$out.stdout" 2>"$TMP/$out.stderr"
    local rc=$?
    if [ $rc -eq 0 ] && grep -q '^OK' "$TMP/$out.stdout"; then pass "$label"
    else fail "$label" "exit $rc: $(head -c 300 "$TMP/$out.stdout" "$TMP/$out.stderr" | tr '\n' ' ')"; fi
}

# Correct programs: plain order, then a reordered run (results must not depend on order).
for t in reduce_shared warp_shuffle block_scan matmul_tiled histogram votes cg_reduce wmma_gemm half_convert \
         grid_index errors zero_args; do
    build $t $t || continue
    expect_ok "$t" $t
    expect_ok "$t (CUEMU_REORDER=3)" $t CUEMU_REORDER=3
done
[ -x "$TMP/errors" ] && expect_ok "errors (CUEMU_NO_DEVICE=1)" errors CUEMU_NO_DEVICE=1
# a setting that is not a number in its range stops the program and says so (it used to
# mean 0, or the default, without a word)
for setting in CUEMU_REORDER=abc CUEMU_STACK_KB=8 CUEMU_NO_DEVICE=yes; do
    [ -x "$TMP/errors" ] || break
    env "$setting" "$TMP/errors" >/dev/null 2>"$TMP/setting.err"
    rc=$?
    if [ $rc = 2 ] && grep -q "^cuemu: ${setting%%=*}='${setting#*=}': a whole number in" "$TMP/setting.err"; then
        pass "setting_refused ($setting)"
    else fail "setting_refused ($setting)" "exit $rc: $(head -c 200 "$TMP/setting.err")"; fi
done
# started with SIGCHLD ignored (SIG_IGN survives exec; some daemons and shells do it), the
# driver still sees the compiler's exit status: a build succeeds, a broken source fails
ignoring_sigchld() { perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV or die "exec: $!"' "$@"; }
if ignoring_sigchld $DRV -I $SRC $SRC/zero_args.cu -o "$TMP/zero_args_ign" >"$TMP/ign.build" 2>&1; then
    expect_ok "zero_args (built with SIGCHLD ignored)" zero_args_ign
else fail "zero_args (built with SIGCHLD ignored)" "exit $?: $(head -c 300 "$TMP/ign.build" | tr '\n' ' ')"; fi
printf 'int main() { return undeclared; }\n' >"$TMP/broken.cu"
ignoring_sigchld $DRV "$TMP/broken.cu" -o "$TMP/broken" >"$TMP/broken.build" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "undeclared" "$TMP/broken.build"; then pass "a compile error with SIGCHLD ignored: exit 1"
else fail "a compile error with SIGCHLD ignored" "exit $rc: $(head -c 300 "$TMP/broken.build" | tr '\n' ' ')"; fi
# a * b + c rounded twice by default, fused with --fma (as nvcc does by default; on a CPU
# without FMA nvcc-emu refuses --fma, saying so: a skip)
build fused fused && expect_ok "fused (plain: the product rounded first)" fused
if $DRV --fma -DFUSED -I $SRC $SRC/fused.cu -o "$TMP/fused_fma" >"$TMP/fused_fma.build" 2>&1; then
    expect_ok "fused (--fma: one fused multiply-add)" fused_fma
elif grep -q "nvcc-emu: --fma:" "$TMP/fused_fma.build"; then echo "SKIP fused --fma: $(cat "$TMP/fused_fma.build")"
else fail "fused_fma" "build failed: $(head -c 300 "$TMP/fused_fma.build" | tr '\n' ' ')"; fi
# The fast intrinsics: accurate by default, as far off as CUDA allows with CUEMU_ULP
if build fast_math fast_math; then
    expect_ok "fast_math" fast_math
    expect_ok "fast_math (CUEMU_ULP=$((2 * $$ + 1)), errors up)" fast_math CUEMU_ULP=$((2 * $$ + 1))
    expect_ok "fast_math (CUEMU_ULP=$((2 * $$)), errors either way)" fast_math CUEMU_ULP=$((2 * $$))
fi

# The standard single-precision functions in kernels: the host's results by default, as far
# off as CUDA allows with CUEMU_ULP, the host's results on the host either way
if build std_math std_math; then
    expect_ok "std_math" std_math
    expect_ok "std_math (CUEMU_ULP=$((2 * $$ + 1)), errors up)" std_math CUEMU_ULP=$((2 * $$ + 1))
    expect_ok "std_math (CUEMU_ULP=$((2 * $$)), errors either way)" std_math CUEMU_ULP=$((2 * $$))
fi

# Launches a GPU refuses for a kernel's __launch_bounds__: each refused (7 of 17), with one note
if build launch_bounds launch_bounds; then
    expect_ok "launch_bounds (a macro, a template parameter, in a namespace, over lines, on a declaration, also a template's)" launch_bounds
    notes=$(grep -c "__launch_bounds__ allow at most" "$TMP/launch_bounds.stderr")
    [ "$notes" = 7 ] && pass "launch_bounds: one note per refused launch" \
        || fail "launch_bounds: one note per refused launch" "$notes notes: $(head -c 300 "$TMP/launch_bounds.stderr")"
fi

# Launches a GPU refuses for a kernel's registers or shared memory, from ptxas's report
# (nvcc-emu --ptxas-info): a hand-written report with chosen counts, then nvcc's own.
if build resources resources --ptxas-info $SRC/resources.ptxas; then
    expect_ok "resources (a report of hand-chosen counts)" resources
    grep -q "ptxas gave the kernel 65 registers per thread, so a block may have at most 896 threads" \
        "$TMP/resources.stderr" && pass "resources: the refusal says why" \
        || fail "resources: the refusal says why" "$(head -c 300 "$TMP/resources.stderr")"
fi
build resources resources_none -DNO_REPORT && expect_ok "resources (no report: every launch runs)" resources_none
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$NVCC" ]; then
    if ! "$NVCC" -arch=sm_90 -Xptxas -v -I $SRC $SRC/registers.cu -o "$TMP/registers_gpu" 2>"$TMP/registers.ptxas"; then
        fail "registers (nvcc's report)" "nvcc failed: $(head -c 300 "$TMP/registers.ptxas" | tr '\n' ' ')"
    elif build registers registers --ptxas-info "$TMP/registers.ptxas"; then
        "$TMP/registers" >"$TMP/registers.out" 2>&1
        # each kernel: refused at 1024 threads (through the table and by name), run at 256,
        # and cudaFuncGetAttributes gives the report's count
        got=$(grep -c "1024 threads: cudaErrorLaunchOutOfResources, y\[0\] = 0$" "$TMP/registers.out")
        ran=$(grep -c "256 threads: cudaSuccess, y\[0\] = 192$" "$TMP/registers.out")
        counts="" attrs=0 low=0
        for k in _Z5heavy heavy_static heavy_anon; do
            regs=$(grep -A3 "entry function '[^']*$k" "$TMP/registers.ptxas" | sed -nE 's/.*Used ([0-9]+) registers.*/\1/p' | head -1)
            counts="$counts ${regs:-none}"
            [ -n "$regs" ] && [ "$regs" -le 64 ] && low=1
            grep -qx "${k#_Z5} registers: $regs" "$TMP/registers.out" && attrs=$((attrs + 1))
        done
        if [[ "$counts" == *none* ]]; then fail "registers (nvcc's report)" "register counts$counts in $(head -c 300 "$TMP/registers.ptxas")"
        elif [ $low = 1 ]; then echo "SKIP registers (nvcc's report): this nvcc gives the kernels only$counts registers"
        elif [ "$got" = 6 ] && [ "$ran" = 3 ] && [ $attrs = 3 ]; then
            pass "registers (nvcc's report:$counts per thread; external, static and anonymous-namespace kernels, through pointers and by name: 1024 threads refused, 256 run, cudaFuncGetAttributes agrees)"
        else fail "registers (nvcc's report:$counts per thread)" "$(tr '\n' ' ' <"$TMP/registers.out" | head -c 600)"; fi
    fi
else echo "SKIP registers (nvcc's report): no nvcc"; fi

# A missing __syncthreads in a tree reduction: wrong for some seed; the correct one never.
if [ -x "$TMP/reduce_shared" ] && build reduce_shared reduce_racy -DMISSING_SYNC; then
    wrong=0 correct_bad=""
    for seed in 1 2 3 4 5; do
        CUEMU_REORDER=$seed "$TMP/reduce_racy" >"$TMP/racy.out" 2>&1
        grep -q '^MISMATCH' "$TMP/racy.out" && wrong=$((wrong + 1))
        CUEMU_REORDER=$seed "$TMP/reduce_shared" >"$TMP/ok.out" 2>&1 || correct_bad="$correct_bad $seed"
    done
    [ $wrong -gt 0 ] && pass "race: missing __syncthreads gives a wrong sum ($wrong of 5 seeds)" \
        || fail "race: missing __syncthreads" "the sum was right under all 5 seeds"
    [ -z "$correct_bad" ] && pass "race: the correct reduction is right under seeds 1-5" \
        || fail "race: correct reduction" "wrong under seeds$correct_bad"
fi

# A race that in-order execution hides: each thread reads its left neighbour's shared
# value without a barrier. Plain order happens to be right; some reordered seed is not.
if build race_neighbour race_neighbour; then
    "$TMP/race_neighbour" >"$TMP/rn.out" 2>&1
    plain=$(head -c 40 "$TMP/rn.out")
    wrong=0
    for seed in 1 2 3 4 5; do
        CUEMU_REORDER=$seed "$TMP/race_neighbour" >"$TMP/rn.out" 2>&1
        grep -q '^MISMATCH' "$TMP/rn.out" && wrong=$((wrong + 1))
    done
    [ $wrong -gt 0 ] && pass "race: unsynchronised neighbour read is wrong under $wrong of 5 seeds (plain order: $plain)" \
        || fail "race: unsynchronised neighbour read" "right under all 5 seeds"
fi

# Out-of-bounds writes: AddressSanitizer reports them.
for t in bug_oob_global bug_oob_static_shared bug_oob_template_shared bug_oob_dynamic_shared; do
    build $t $t --asan || continue
    "$TMP/$t" >"$TMP/$t.stdout" 2>"$TMP/$t.stderr"
    rc=$?
    if [ $rc -ne 0 ] && grep -q AddressSanitizer "$TMP/$t.stderr"; then
        pass "$t: $(grep -o 'AddressSanitizer: [a-z-]*' "$TMP/$t.stderr" | head -1)"
    else fail "$t" "exit $rc, no AddressSanitizer report"; fi
done
# ... and without AddressSanitizer, the guard after each shared array stops the program (exit 86)
# when its block ends.
for t in bug_oob_static_shared bug_oob_template_shared bug_oob_dynamic_shared; do
    build $t plain_$t || continue
    "$TMP/plain_$t" >"$TMP/plain_$t.stdout" 2>"$TMP/plain_$t.stderr"
    rc=$?
    if [ $rc -eq 86 ] && grep -q "wrote past the end of .* (at byte 0 past it)" "$TMP/plain_$t.stderr"; then
        pass "$t without ASan: $(grep -o 'wrote past the end of [a-z_ ]*of [0-9]* bytes' "$TMP/plain_$t.stderr")"
    else fail "$t without ASan" "exit $rc (86 expected): $(head -c 300 "$TMP/plain_$t.stderr" | tr '\n' ' ')"; fi
done
# ... and correct programs raise no false reports under ASan (fiber stacks, dynamic smem).
for t in reduce_shared matmul_tiled cg_reduce warp_shuffle; do
    build $t asan_$t --asan || continue
    expect_ok "$t (--asan, CUEMU_REORDER=2)" asan_$t CUEMU_REORDER=2
done

# LeakSanitizer (ASAN_OPTIONS=detect_leaks=1) reports the program's own leaks (histogram.cu
# frees none of its buffers) and none of the emulator's: its idle fibers stay reachable at exit.
if build histogram leaks_histogram --asan; then
    ASAN_OPTIONS=detect_leaks=1 "$TMP/leaks_histogram" >/dev/null 2>"$TMP/leaks.err"
    if ! grep -q 'Direct leak' "$TMP/leaks.err"; then fail "leaks_program_only" "no leak report (is LeakSanitizer on?)"
    elif grep -q new_fiber "$TMP/leaks.err"; then fail "leaks_program_only" "the emulator's fibers reported as leaks"
    else pass "leaks_program_only: $(grep -o 'SUMMARY.*' "$TMP/leaks.err")"; fi
fi

# Broken collectives: exit status 86 and a message saying what is wrong.
expect_86() {
    local t=$1 pattern=$2
    build $t $t || return
    "$TMP/$t" >"$TMP/$t.stdout" 2>"$TMP/$t.stderr"
    local rc=$?
    if [ $rc -eq 86 ] && grep -q "$pattern" "$TMP/$t.stderr"; then pass "$t: exit 86, \"$pattern\""
    else fail "$t" "exit $rc (want 86 and \"$pattern\"): $(head -c 300 "$TMP/$t.stderr" | tr '\n' ' ')"; fi
}
expect_86 bug_shfl_mask "does not include itself"
expect_86 bug_divergent_barrier "barrier divergence"
expect_86 bug_exited_lane "exited without reaching it"
expect_86 bug_host_pointer "not device memory"

# Faults in kernels (plain builds): the program still dies of the signal, as it would
# natively, but first names the kernel, block and thread and the likely cause.
expect_fault() {
    local t=$1 sig=$2 pattern=$3
    build $t $t || return
    # (no core file left in the checkout; 2>/dev/null: bash's "Segmentation fault" line)
    { (ulimit -c 0; exec "$TMP/$t") >"$TMP/$t.stdout" 2>"$TMP/$t.stderr"; } 2>/dev/null
    local rc=$?
    if [ $rc -eq $((128 + sig)) ] && grep -q "^cuemu: error: .*$pattern" "$TMP/$t.stderr" \
        && ! grep -q finished "$TMP/$t.stdout"; then pass "$t: signal $sig, \"$pattern\""
    else fail "$t" "exit $rc (want $((128 + sig)) and \"$pattern\"): $(head -c 300 "$TMP/$t.stderr" | tr '\n' ' ')"; fi
}
expect_fault bug_wild_index 11 "scale_rows (.*bug_wild_index.cu:15), block (0,0,0) thread (1,0,0): SIGSEGV, an invalid memory access"
if [ "$(uname -m)" = x86_64 ]; then # (aarch64's division gives 0 without a trap, as a GPU goes on)
    expect_fault bug_div_zero 8 "bucketize (.*bug_div_zero.cu:17), block (0,0,0) thread (0,0,0): SIGFPE, an integer division by zero"
else echo "SKIP bug_div_zero: $(uname -m) does not trap an integer division by zero"; fi
expect_fault bug_stack_overflow 11 "triangle (.*), block (0,0,0) thread (0,0,0): SIGSEGV, the thread's stack of 256 KiB overflowed"

# Speed: printed, with only a loose bound (a 1M elementwise launch well under a second,
# a 64K shared-memory reduction a few seconds at most).
if build speed speed; then
    "$TMP/speed" >"$TMP/speed.out" 2>&1
    line=$(grep '^OK' "$TMP/speed.out")
    read -r ew red <<<"$(echo "$line" | sed -E 's/.*1M: ([0-9.]+) s.*64K: ([0-9.]+) s.*/\1 \2/')"
    if [ -n "$line" ] && awk -v a="$ew" -v b="$red" 'BEGIN { exit !(a < 1.0 && b < 5.0) }'; then
        pass "speed: elementwise 1M ${ew}s, reduction 64K ${red}s"
    else fail "speed" "$(head -c 200 "$TMP/speed.out")"; fi
fi

exit $failed
