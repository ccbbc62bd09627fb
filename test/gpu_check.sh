#!/usr/bin/env bash
# The one prepared check for a machine with a GPU (made for an H100/H200 lent for ~15
# minutes; it builds for the GPU it finds). Stages, one summary line each:
#   tools      nvcc, gcc, make, stb_ds.h (libstb-dev, or the copy --prepare carries);
#              a python3 with PyTorch and CUDA (optional: only the benchmark's comparison)
#   gpu        nvidia-smi sees a GPU, and its driver supports the toolkit's CUDA version
#   build      train, gen, the GPU tests and benchmark for that GPU (SASS + PTX);
#              nvcc prints no warning and no spill
#   kernels    test_gpu, test_gpu_attn_loss at real sizes: each kernel and whole steps vs the CPU
#   train      train and gen on the GPU: resume is exact, two runs are bit-identical, the CPU
#              trains on from the GPU's step-20 checkpoint within 2e-2 of the GPU's losses
#   sanitizer  compute-sanitizer: memcheck on the small suite, racecheck on the fused
#              attention and loss at small sizes
#   native     the programs the emulator checks in make test, built by nvcc and run on the
#              GPU: one corpus reference per family and test/cudabench_smallest.jsonl, and
#              the launches it refuses (test/emu/launch_bounds.cu, registers.cu)
#              (--long: the smallest size of every CUDABench task, carried by --prepare)
#   experiment make experiment PRESET=smoke on the GPU: every row trained with --device cuda
#              and its programs built by nvcc and run on the GPU (gen --eval's runner), in
#              bubblewrap's sandbox (installed, or the Debian package --prepare carries)
#   bench      test/bench_gpu.sh: cuset's speed, PyTorch's beside it when it can
# Verdicts: PASS; FAIL; TIMEOUT (past its own limit); SKIP (an optional part, with the
# reason); NO-GPU; MISSING (something it needs is absent) and NOT-RUN (a stage it needs did
# not pass, or the check's time ran out) -- never passes.
# Last line: "gpu_check: PASSED" (exit 0: every stage PASS or SKIP), "FAILED" (exit 1: a FAIL
# or TIMEOUT), "INCOMPLETE" (exit 2: nothing failed, but not everything ran).
# All of it stays within 8 minutes (--long: 25); each stage has its own share. The log and
# each stage's output go to $OUT when set (the device tool's folder that comes back), else
# to a folder in /tmp named at the end.
#   bash test/gpu_check.sh [--long] [--no-bench] [--dry-run] [--only STAGES]
#   --only     a rerun after a fix: tools, gpu and build, then only the stages named
#              (comma-separated, e.g. kernels,native); the others are NOT-RUN
#   --dry-run  without a GPU, run every stage anyway (built for sm_90, 25 minutes allowed):
#              each stage after the build must reach its "no GPU" failure cleanly, reported as
#              NO-GPU; this checks the script itself
#   bash test/gpu_check.sh --prepare   where libstb-dev is installed, before sending the tree
#       to a machine without it and without network: copies stb_ds.h (and, for --long,
#       ../shared/cudabench's tasks) to .gpu_carry/, which git ignores, and unpacks Debian's
#       bubblewrap package there (apt-get download); carry .gpu_carry with the tree (the
#       device tool: carry [".gpu_carry"]).
set -u
cd "$(dirname "$0")/.."
long=0 bench=1 dry=0 nogpu=0 only=""
stages="kernels train sanitizer native experiment bench"
while [ $# -gt 0 ]; do
    arg=$1; shift
    case "$arg" in
        --only)
            only=${1:-}; shift
            for s in ${only//,/ }; do
                [[ " $stages " == *" $s "* ]] || { echo "gpu_check.sh: --only takes some of: ${stages// /,} (not '$s')" >&2; exit 2; }
            done
            [ -n "$only" ] || { echo "gpu_check.sh: --only needs a list of stages (${stages// /,})" >&2; exit 2; } ;;
        --long) long=1 ;;
        --no-bench) bench=0 ;;
        --dry-run) dry=1 ;;
        --prepare)
            hdr=$(echo '#include <stb/stb_ds.h>' | gcc -M -x c - 2>/dev/null | grep -o '[^ ]*/stb/stb_ds\.h' | head -1)
            [ -n "$hdr" ] || { echo "gpu_check --prepare: no stb_ds.h here either (bash test/deps.sh build installs it)" >&2; exit 1; }
            install -D -m 644 "$hdr" .gpu_carry/include/stb/stb_ds.h
            [ ! -f ../shared/cudabench/cudabench-dev.jsonl ] || install -m 644 ../shared/cudabench/cudabench-dev.jsonl .gpu_carry/
            deb=$(mktemp -d /tmp/gpu_check_deb.XXXXXX)
            if (cd "$deb" && apt-get download bubblewrap >/dev/null 2>&1) && rm -rf .gpu_carry/bwrap \
                && dpkg -x "$deb"/bubblewrap_*.deb .gpu_carry/bwrap; then :
            else echo "gpu_check --prepare: could not download and unpack bubblewrap (apt-get download bubblewrap):" \
                "the experiment stage will need it installed there" >&2; fi
            rm -rf "$deb"
            echo "copied to .gpu_carry/: $(cd .gpu_carry && find . -mindepth 1 -maxdepth 1 | sed 's|^\./||' | sort | paste -sd' ');" \
                "on the GPU machine: bash test/gpu_check.sh, carrying .gpu_carry"
            exit 0 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "gpu_check.sh: unknown argument $arg (--help)" >&2; exit 2 ;;
    esac
done
LOGS=${OUT:-$(mktemp -d /tmp/gpu_check.XXXXXX)}
mkdir -p "$LOGS"
deadline=$((SECONDS + (long || dry ? 1500 : 480)))
verdicts=""

# report NAME VERDICT DETAIL...: the stage's summary line; a FAIL or TIMEOUT shows the end of its log
report() {
    local name=$1 verdict=$2; shift 2
    if [ $nogpu -eq 1 ] && [ "$name" != build ] && [[ $verdict == FAIL || $verdict == TIMEOUT ]]; then
        verdict=NO-GPU; set -- "failed as it must without a GPU ($*)"
    elif [ $verdict = TIMEOUT ] && [ $((deadline - SECONDS)) -lt 5 ]; then # the whole check's time, not the stage's
        verdict=NOT-RUN; set -- "stopped when the check's time ran out ($*); --long allows 25 minutes"
    fi
    printf '[%s] %s: %s\n' "$name" "$verdict" "$*"
    verdicts="$verdicts $verdict"
    case "$verdict" in
        FAIL|TIMEOUT) [ ! -s "$LOGS/$name.log" ] || { echo "  last lines of $LOGS/$name.log:"; tail -15 "$LOGS/$name.log" | sed 's/^/  | /'; } ;;
    esac
}
# timed CAP LOG CMD...: CMD, its output appended to LOG, stopped after CAP seconds or at the
# overall deadline; exit 124 when stopped
timed() {
    local cap=$1 log=$2 left=$((deadline - SECONDS)); shift 2
    [ "$left" -lt "$cap" ] && cap=$left
    [ "$cap" -ge 5 ] || { echo "no time left (the whole check's limit)" >>"$log"; return 124; }
    timeout -k 5 "$cap" "$@" >>"$log" 2>&1
}
counts() { # LOG: "N passed, N failed" from PASS/FAIL lines
    echo "$(grep -c '^PASS' "$1") passed, $(grep -c '^FAIL' "$1") failed"
}

stage_tools() {
    local missing=()
    NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    [ -x "$NVCC" ] || missing+=("nvcc (the CUDA toolkit; set NVCC=)")
    for c in gcc g++ make; do command -v $c >/dev/null || missing+=("$c"); done
    if ! echo '#include <stb/stb_ds.h>' | gcc -E -x c - >/dev/null 2>&1; then
        if [ -f .gpu_carry/include/stb/stb_ds.h ]; then
            # a system header, as libstb-dev's is: gcc warns in it otherwise (CPATH would be -I)
            export C_INCLUDE_PATH=$PWD/.gpu_carry/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
            export CPLUS_INCLUDE_PATH=$PWD/.gpu_carry/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
        elif ! timeout 120 bash test/deps.sh build; then
            missing+=("stb_ds.h: libstb-dev is not installed and could not be; run bash test/gpu_check.sh --prepare where it is, and carry .gpu_carry")
        fi
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        report tools MISSING "$(IFS=';'; echo "${missing[*]}")"
        return 1
    fi
    # a python3 whose torch sees CUDA, for the benchmark's PyTorch column (optional)
    local p why=""
    PY=""
    for p in ${PYTHON:-} python3 /usr/bin/python3; do
        command -v "$p" >/dev/null || continue
        if "$p" -c "import torch, numpy; assert torch.cuda.is_available()" >/dev/null 2>&1; then PY=$p; break; fi
        why="$why${why:+; }$p: $("$p" -c "import torch, numpy; print('torch', torch.__version__, 'sees no GPU')" 2>&1 | tail -1)"
    done
    SAN=${SAN:-$(command -v compute-sanitizer || echo "$(dirname "$NVCC")/compute-sanitizer")}
    report tools PASS "$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p'), gcc $(gcc -dumpfullversion)," \
        "stb_ds.h $([ -n "${C_INCLUDE_PATH:-}" ] && echo "carried in .gpu_carry" || echo "installed")," \
        "compute-sanitizer $([ -x "$SAN" ] && echo found || echo "not found")," \
        "$([ -n "$PY" ] && echo "PyTorch with CUDA: $PY" || echo "PyTorch with CUDA: none ($why): the benchmark's comparison will SKIP")"
    if [ -z "$PY" ]; then # CUDABench's scripts need numpy only
        for p in ${PYTHON:-} python3 /usr/bin/python3; do "$p" -c "import numpy" >/dev/null 2>&1 && { PY=$p; break; }; done
        PY=${PY:-python3}
    fi
}

stage_gpu() {
    if ! command -v nvidia-smi >/dev/null; then report gpu NO-GPU "nvidia-smi not found: no NVIDIA driver here"; return 1; fi
    local q
    if ! q=$(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>&1) || [ -z "$q" ]; then
        report gpu NO-GPU "nvidia-smi finds no GPU: $(echo "$q" | head -1)"; return 1
    fi
    q=$(echo "$q" | head -1)
    local name driver cc drv_cuda tk_cuda
    IFS=, read -r name driver cc _ <<<"$q"
    driver=$(echo $driver) cc=$(echo $cc | tr -d .)
    drv_cuda=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
    tk_cuda=$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
    SM=$cc
    if [ -z "$drv_cuda" ] || [ -z "$tk_cuda" ]; then
        report gpu FAIL "cannot read the driver's CUDA version ($drv_cuda) or the toolkit's ($tk_cuda)"; return 1
    elif [ "${drv_cuda%%.*}" -lt "${tk_cuda%%.*}" ]; then
        report gpu FAIL "$name: driver $driver supports CUDA up to $drv_cuda, but nvcc is CUDA $tk_cuda: its programs fail" \
            "with 'CUDA driver version is insufficient'; use a toolkit <= $drv_cuda or a newer driver"
        return 1
    fi
    local note=""
    awk -v d="$drv_cuda" -v t="$tk_cuda" 'BEGIN { exit !(d + 0 < t + 0) }' &&
        note=" (older minor version: runs through CUDA's minor-version compatibility)"
    report gpu PASS "$name (sm_$cc, $(echo $q | cut -d, -f4 | sed 's/^ //')), driver $driver for CUDA $drv_cuda, toolkit $tk_cuda$note"
}

stage_build() {
    local log="$LOGS/build.log" t0=$SECONDS rc
    FLAGS="-O3 -gencode arch=compute_$SM,code=sm_$SM -gencode arch=compute_$SM,code=compute_$SM -Xptxas -warn-spills --std=c++17"
    rm -f cuset_cuda.o train gen test/test_gpu test/test_gpu_attn_loss test/bench_gpu
    echo "NVCCFLAGS=$FLAGS" >"$log"
    timed 240 "$log" make -s -j"$(nproc)" NVCC="$NVCC" NVCCFLAGS="$FLAGS" \
        train gen test/test_gpu test/test_gpu_attn_loss test/bench_gpu data/corpus emu/nvcc-emu
    rc=$?
    if [ $rc -eq 124 ]; then report build TIMEOUT "make did not finish"; return 1
    elif [ $rc -ne 0 ]; then report build FAIL "make exit $rc"; return 1
    elif grep -qiE "warning|bytes spill" "$log"; then report build FAIL "nvcc printed warnings: $(grep -m1 -iE "warning|bytes spill" "$log")"; return 1; fi
    report build PASS "$((SECONDS - t0)) s, flags $FLAGS"
}

stage_kernels() {
    local log="$LOGS/kernels.log" rc1 rc2 c1 c2
    timed 240 "$log.1" ./test/test_gpu; rc1=$?
    timed 60 "$log.2" ./test/test_gpu_attn_loss; rc2=$?
    c1=$(counts "$log.1") c2=$(counts "$log.2")
    cat "$log.1" "$log.2" >"$log" && rm -f "$log.1" "$log.2"
    local detail="test_gpu $c1 (exit $rc1), test_gpu_attn_loss $c2 (exit $rc2), real sizes"
    if [ $rc1 -eq 124 ] || [ $rc2 -eq 124 ]; then report kernels TIMEOUT "$detail"; return 1; fi
    if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ] || grep -q '^FAIL' "$log"; then report kernels FAIL "$detail"; return 1; fi
    report kernels PASS "$detail"
}

stage_train() {
    local T why rc
    T=$(mktemp -d /tmp/gpu_check_train.XXXXXX)
    why=$(train_checks "$T"); rc=$?
    rm -rf "$T"
    if [ $rc -eq 0 ]; then report train PASS "$why"
    elif [ $rc -eq 124 ]; then report train TIMEOUT "$why"
    else report train FAIL "$why"; fi
}
# losses LOG: a training log's "step": N, "loss": X pairs, a line each
losses() { grep -o '"step": [0-9]*, "loss": [-0-9.e]*' "$1"; }
# loss_drift REF LOG: of LOG's training steps, how many, how many REF lacks, and the largest
# relative difference of their losses from REF's at the same step
loss_drift() {
    awk -F'[:,] *' 'NR == FNR { ref[$2] = $4; next }
        { n++; if (!($2 in ref)) { unmatched++; next }
          e = ref[$2] - $4; d = $4; if (e < 0) e = -e; if (d < 0) d = -d; if (d < 1e-30) d = 1e-30
          if (e / d > worst) worst = e / d }
        END { printf "%d %d %.2e\n", n, unmatched, worst }' <(losses "$1") <(losses "$2")
}
train_checks() { # DIR: prints what passed, or what failed (exit 1; 124 when out of time)
    local T=$1 log="$LOGS/train.log" tiny run
    tiny=(--layers 2 --heads 2 --embd 64 --ctx 64 --seq 64 --vocab 64 --batch 8 --synthetic-n 512 --synthetic-len 4:20)
    run=(./train "${tiny[@]}" --device cuda --steps 40 --objective cuset --window 8 --accum 2)
    must() { # WHAT CAP CMD...: CMD through timed; on failure says WHAT failed and returns its exit
        local what=$1 cap=$2 rc; shift 2
        timed "$cap" "$log" "$@"; rc=$?
        [ $rc -eq 0 ] || echo "$what failed$([ $rc -eq 124 ] && echo ": out of time" || echo " (exit $rc)")"
        return $rc
    }
    must "train --device cuda" 40 "${run[@]}" --ckpt "$T/g.ckpt" --val-every 20 || return
    grep -q "device: cuda" "$log" || { echo "train did not use the GPU: $(grep -m1 -i "note\|device" "$log")"; return 1; }
    local nsteps; nsteps=$(losses "$T/g.ckpt.jsonl" | wc -l) # the comparisons below need every step's loss
    [ "$nsteps" -eq 40 ] || { echo "the GPU run's log has $nsteps training steps with a loss, not 40"; return 1; }
    must "train --stop-at 20" 30 "${run[@]}" --ckpt "$T/p.ckpt" --stop-at 20 || return
    cp "$T/p.ckpt" "$T/c.ckpt" # the GPU's step 20, for the CPU to continue below
    must "train --resume" 30 ./train --resume --ckpt "$T/p.ckpt" "${tiny[@]}" --device cuda || return
    diff <(losses "$T/g.ckpt.jsonl") <(losses "$T/p.ckpt.jsonl") >>"$log" || { echo "resume on the GPU is not exact"; return 1; }
    must "a second identical run" 40 "${run[@]}" --ckpt "$T/d.ckpt" --val-every 20 || return
    diff <(losses "$T/g.ckpt.jsonl") <(losses "$T/d.ckpt.jsonl") >>"$log" || { echo "two GPU runs differ (determinism)"; return 1; }
    must "the CPU continuing the GPU's step-20 checkpoint" 30 ./train --resume --ckpt "$T/c.ckpt" "${tiny[@]}" --device cpu \
        --log "$T/cpu.jsonl" || return
    local drift; drift=$(loss_drift "$T/g.ckpt.jsonl" "$T/cpu.jsonl")
    awk -v d="$drift" 'BEGIN { split(d, f, " "); exit !(f[1] == 20 && f[2] == 0 && f[3] <= 2e-2) }' || {
        echo "the CPU's steps 21-40 from the GPU's checkpoint do not follow the GPU's own (steps, of them unmatched," \
            "max relative loss difference: $drift; allowed: 20, 0, 2e-2)"; return 1; }
    # greedy samples of the GPU's model on each device: the tokens (stdout) alone, gen's
    # messages to the log
    sample() { timeout -k 5 20 ./gen --model "$T/g.ckpt" --prompt-ids "1 5 7 9 11" --max-tokens 16 --temperature 0 \
        --device "$1" >"$T/$1.sample" 2>>"$log"; }
    sample cuda || { echo "gen --device cuda failed"; return 1; }
    sample cpu || { echo "gen --device cpu failed on the GPU's checkpoint"; return 1; }
    local same="greedy GPU and CPU samples equal"
    cmp -s "$T/cuda.sample" "$T/cpu.sample" || same="greedy GPU and CPU samples differ (not a failure: tf32 can flip a near-tie)"
    { echo "== greedy samples, GPU then CPU"; cat "$T/cuda.sample"; echo; cat "$T/cpu.sample"; echo; } >>"$log"
    echo "resume exact, two runs identical, the CPU continues a GPU checkpoint (steps 21-40 within" \
        "$(echo "$drift" | cut -d' ' -f3) of the GPU's losses), gen on the GPU; $same"
}

# memcheck on every kernel of the small suite; racecheck on the fused attention and loss,
# whose blocks share memory between barriers (racecheck on test_gpu --small did not finish
# its first matmul checks in 200 s on an H100; on test_gpu_attn_loss at real sizes it took
# 150 s for 60 of 366 checks, 2026-12-05)
stage_sanitizer() {
    local log="$LOGS/sanitizer.log" rc done="" tool cap prog
    if [ ! -x "$SAN" ]; then report sanitizer SKIP "compute-sanitizer not found (SAN=)"; return 0; fi
    for tool in memcheck racecheck; do
        if [ $tool = memcheck ]; then cap=120 prog=test_gpu; else cap=150 prog=test_gpu_attn_loss; fi
        echo "== $tool ./test/$prog --small" >>"$log"
        timed $cap "$log" "$SAN" --tool $tool --error-exitcode 9 "./test/$prog" --small
        rc=$?
        if grep -qE "Device not supported|not supported on this platform|Target application.*unsupported" "$log"; then
            report sanitizer SKIP "compute-sanitizer cannot run on this machine: $(grep -m1 -E "not supported|unsupported" "$log")"; return 0
        elif [ $rc -eq 124 ]; then report sanitizer TIMEOUT "$tool on $prog --small did not finish in $cap s${done:+ ($done passed)}"; return 1
        elif [ $rc -ne 0 ]; then report sanitizer FAIL "$tool on $prog exit $rc: $(grep -m1 -E "ERROR SUMMARY|Invalid|Race|hazard" "$log")"; return 1; fi
        done="$done${done:+, }$tool on $prog --small"
    done
    report sanitizer PASS "clean: $done"
}

stage_native() {
    local log="$LOGS/native.log" wrapper rc1 rc2 rc3=0 rc4=0 bench_file
    wrapper=$(mktemp /tmp/gpu_check_nvcc.XXXXXX)
    printf '#!/bin/sh\nexec "%s" -arch=sm_%s "$@"\n' "$NVCC" "$SM" >"$wrapper"
    chmod +x "$wrapper"
    echo "== corpus references" >>"$log"
    NVCC_EMU=$wrapper timed 120 "$log" bash test/emu_corpus.sh --jobs "$(nproc)"; rc1=$?
    echo "== CUDABench tasks carried in test/" >>"$log"
    NVCC_EMU=$wrapper PYTHON=$PY timed 90 "$log" bash test/cudabench.sh --file test/cudabench_smallest.jsonl --jobs "$(nproc)"; rc2=$?
    local corpus; corpus=$(grep -m1 -oE '[0-9]+ passed, [0-9]+ failed' "$log" || echo "no result (exit $rc1): $(grep -m1 'emu_corpus.sh:' "$log")")
    local detail="corpus $corpus; CUDABench: $(grep '^cudabench: .* failed of' "$log" | tail -1 | cut -d, -f1,6)"
    if grep -q '^SKIP cudabench' "$log"; then # its tasks or numpy are missing: not a pass
        rc2=200 detail="$detail $(grep -m1 '^SKIP cudabench' "$log")"
    fi
    if [ $long -eq 1 ]; then
        bench_file=.gpu_carry/cudabench-dev.jsonl
        [ -f "$bench_file" ] || bench_file=../shared/cudabench/cudabench-dev.jsonl
        if [ -f "$bench_file" ]; then
            echo "== CUDABench, the smallest size of every task" >>"$log"
            NVCC_EMU=$wrapper PYTHON=$PY timed 600 "$log" bash test/cudabench.sh --file "$bench_file" --smallest --jobs "$(nproc)"; rc3=$?
            detail="$detail; all names: $(grep '^cudabench: .* failed of' "$log" | tail -1 | cut -d: -f2)"
        else
            detail="$detail; all names: MISSING (no $bench_file nor .gpu_carry/cudabench-dev.jsonl: --prepare copies it)"; rc3=200
        fi
    fi
    # launches the emulator refuses as a GPU would (test_emu.sh): the GPU's own answers
    echo "== test/emu/launch_bounds.cu and registers.cu on the GPU" >>"$log"
    local refusals=0
    timed 60 "$log" "$wrapper" -I test/emu -o "$wrapper.lb" test/emu/launch_bounds.cu \
        && timed 30 "$log" "$wrapper.lb" && refusals=$((refusals + 1))
    timed 60 "$log" "$wrapper" -I test/emu -o "$wrapper.regs" test/emu/registers.cu && timed 30 "$log" "$wrapper.regs" \
        && [ "$(grep -c " 1024 threads: cudaErrorLaunchOutOfResources, y\[0\] = 0$" "$log")" = 6 ] \
        && [ "$(grep -c " 256 threads: cudaSuccess, y\[0\] = 192$" "$log")" = 3 ] && refusals=$((refusals + 1))
    detail="$detail; refused launches as the emulator refuses them: $refusals of 2 programs"
    [ $refusals = 2 ] || rc4=1
    rm -f "$wrapper" "$wrapper.lb" "$wrapper.regs"
    if [ $rc1 -eq 124 ] || [ $rc2 -eq 124 ] || [ $rc3 -eq 124 ]; then report native TIMEOUT "$detail"; return 1
    elif [ $rc2 -eq 200 ] || [ $rc3 -eq 200 ]; then report native MISSING "$detail"; return 1
    elif [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ] || [ $rc3 -ne 0 ] || [ $rc4 -ne 0 ]; then report native FAIL "$detail"; return 1; fi
    report native PASS "$detail"
}

stage_experiment() {
    local log="$LOGS/experiment.log" T rc ntrain ncuda neval ngpu
    if ! command -v bwrap >/dev/null && [ -x .gpu_carry/bwrap/usr/bin/bwrap ]; then
        export PATH=$PWD/.gpu_carry/bwrap/usr/bin:$PATH
    fi
    if ! command -v bwrap >/dev/null; then
        report experiment MISSING "bubblewrap (gen --eval's sandbox): not installed, not carried (--prepare carries it)"; return 1
    fi
    T=$(mktemp -d /tmp/gpu_check_exp.XXXXXX)
    # its report needs only Python's standard library: the python3 found above (there may be
    # no /usr/bin/python3, the script's default)
    PRESET=smoke SEEDS=1 RUN="$T/run" PYTHON=$PY timed 150 "$log" bash data/experiment.sh; rc=$?
    ntrain=$(grep -c '^device: ' "$log") ncuda=$(grep -c '^device: cuda' "$log")
    neval=$(grep -c '^eval: .* runner ' "$log") ngpu=$(grep -c '^eval: .* runner GPU' "$log")
    local detail="exit $rc; $ncuda of $ntrain trainings on the GPU, $ngpu of $neval evaluations run on the GPU"
    if [ $rc -eq 124 ]; then report experiment TIMEOUT "$detail"
    elif [ $rc -ne 0 ]; then report experiment FAIL "$detail: $(grep -m1 -iE 'error|refuse|cannot|failed' "$log")"
    elif [ ! -s "$T/run/results.md" ]; then report experiment FAIL "$detail, but no results.md"
    elif [ "$ntrain" -eq 0 ] || [ "$ncuda" -ne "$ntrain" ]; then report experiment FAIL "$detail: $(grep '^device: ' "$log" | grep -vm1 '^device: cuda')"
    elif [ "$neval" -eq 0 ] || [ "$ngpu" -ne "$neval" ]; then report experiment FAIL "$detail: $(grep -m1 '^eval: .* runner [^G]' "$log")"
    else report experiment PASS "$detail; $(grep -m1 -oE 'isolated by bubblewrap|NOT ISOLATED' "$log"); its results.md at the end of $log"; fi
    [ ! -s "$T/run/results.md" ] || { echo "== results.md"; cat "$T/run/results.md"; } >>"$log"
    rm -rf "$T"
}

stage_bench() {
    local log="$LOGS/bench.log" rc
    if [ $bench -eq 0 ]; then report bench SKIP "--no-bench"; return 0; fi
    PYTHON=$PY timed 150 "$log" bash test/bench_gpu.sh; rc=$?
    if [ $rc -eq 124 ]; then report bench TIMEOUT "bench_gpu.sh did not finish"; return 1
    elif [ $rc -ne 0 ]; then report bench FAIL "bench_gpu.sh exit $rc: $(tail -1 "$log")"; return 1; fi
    sed -n '/^ *cuset *pytorch/,$p' "$log" | sed 's/^/  /'
    report bench PASS "the table above$(grep -m1 '^SKIP the PyTorch' "$log" | sed 's/^SKIP the PyTorch column: /; PyTorch column SKIP: /')"
}

main() {
    echo "gpu_check: $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, budget $(( deadline - SECONDS )) s$([ $long -eq 1 ] && echo ", --long")"
    local later="build $stages"
    if ! stage_tools; then
        for s in gpu $later; do report $s NOT-RUN "the tools are missing"; done
    elif ! stage_gpu && ! { [ $dry -eq 1 ] && [[ $verdicts == *NO-GPU* ]] && nogpu=1 SM=90; }; then
        local why; why=$([[ $verdicts == *NO-GPU* ]] && echo NO-GPU || echo NOT-RUN)
        for s in $later; do report $s "$why" "needs a GPU whose driver fits the toolkit (--dry-run runs them anyway)"; done
    elif ! stage_build; then
        for s in $stages; do report $s NOT-RUN "the build did not pass"; done
    else
        for s in $stages; do
            if [ -z "$only" ] || [[ ",$only," == *",$s,"* ]]; then "stage_$s"
            else report $s NOT-RUN "not asked for (--only $only)"; fi
        done
    fi
    echo
    if [[ $verdicts == *FAIL* || $verdicts == *TIMEOUT* ]]; then
        echo "gpu_check: FAILED (stage lines above; logs in $LOGS)"; return 1
    elif [[ $verdicts =~ NO-GPU|MISSING|NOT-RUN ]]; then
        echo "gpu_check: INCOMPLETE: not every stage ran, nothing failed (logs in $LOGS)"; return 2
    fi
    echo "gpu_check: PASSED in $((SECONDS)) s (logs in $LOGS)"
}
main 2>&1 | tee -a "$LOGS/gpu_check.log"
exit "${PIPESTATUS[0]}"
