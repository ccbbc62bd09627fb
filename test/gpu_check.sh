#!/usr/bin/env bash
# The one prepared script for a machine with a GPU (sm_90, e.g. H100/H200): builds for
# sm_90 only (faster), runs the GPU test suite at real sizes (make test-gpu), the small
# suite under compute-sanitizer (memcheck, racecheck), train/gen on the GPU end to end, the
# corpus references and CUDABench's smallest tasks natively (the same programs the CPU
# emulator runs in make test / make cudabench, so both must pass their checks), and the
# benchmark. Stops at the first failure with a non-zero exit. Each part has a timeout
# so the whole fits a short device session (about 8 minutes on an H200).
#   bash test/gpu_check.sh [--no-bench]
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SAN=${SAN:-$(command -v compute-sanitizer || echo "$(dirname "$NVCC")/compute-sanitizer")}
FLAGS="-O3 -gencode arch=compute_90,code=sm_90 -Xptxas -warn-spills --std=c++17"
step() { echo; echo "== $*"; date +%T; }
die() { echo "gpu_check: FAILED: $*" >&2; exit 1; }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || die "nvidia-smi"

step "build (sm_90): train, gen, test/test_gpu, test/bench_gpu; no warnings from cuset.cu"
rm -f cuset_cuda.o train gen test/test_gpu test/test_gpu_attn_loss test/bench_gpu
"$NVCC" $FLAGS -c cuset.cu -o cuset_cuda.o 2>&1 | tee /tmp/gpu_check_nvcc.log
[ ! -s /tmp/gpu_check_nvcc.log ] || die "nvcc printed warnings for cuset.cu (see above)"
make NVCC="$NVCC" NVCCFLAGS="$FLAGS" train gen test/test_gpu test/test_gpu_attn_loss test/bench_gpu data/corpus >/tmp/gpu_check_make.log 2>&1 \
    || { tail -30 /tmp/gpu_check_make.log; die "make"; }

step "make test-gpu: every kernel and whole steps against the CPU, real sizes"
timeout 300 ./test/test_gpu || die "test_gpu (real sizes)"
timeout 120 ./test/test_gpu_attn_loss || die "test_gpu_attn_loss (real sizes)"

step "compute-sanitizer memcheck and racecheck on the small suite"
if [ -x "$SAN" ]; then
    timeout 240 "$SAN" --tool memcheck --error-exitcode 9 --leak-check full ./test/test_gpu --small >/tmp/gpu_check_memcheck.log 2>&1 \
        || { tail -40 /tmp/gpu_check_memcheck.log; die "memcheck"; }
    tail -2 /tmp/gpu_check_memcheck.log
    timeout 300 "$SAN" --tool racecheck --error-exitcode 9 ./test/test_gpu --small >/tmp/gpu_check_racecheck.log 2>&1 \
        || { tail -40 /tmp/gpu_check_racecheck.log; die "racecheck"; }
    tail -2 /tmp/gpu_check_racecheck.log
else
    echo "compute-sanitizer not found at $SAN: skipped"
fi

step "train and gen on the GPU: checkpoint, resume, sampling; the CPU continues a GPU checkpoint"
T=$(mktemp -d /tmp/gpu_check.XXXXXX)
tiny=(--layers 2 --heads 2 --embd 64 --ctx 64 --seq 64 --vocab 64 --batch 8 --synthetic-n 512 --synthetic-len 4:20)
timeout 120 ./train "${tiny[@]}" --device cuda --steps 40 --objective cuset --window 8 --accum 2 --ckpt "$T/g.ckpt" \
    --val-every 20 >"$T/g.out" 2>&1 || { cat "$T/g.out"; die "train --device cuda"; }
grep -q "device: cuda" "$T/g.out" || die "train did not use the GPU"
tail -3 "$T/g.out"
timeout 120 ./train "${tiny[@]}" --device cuda --steps 40 --objective cuset --window 8 --accum 2 --ckpt "$T/p.ckpt" \
    --stop-at 20 >/dev/null 2>&1 || die "train --stop-at"
timeout 120 ./train --resume --ckpt "$T/p.ckpt" "${tiny[@]}" --device cuda >/dev/null 2>&1 || die "train --resume"
losses() { grep -o '"step": [0-9]*, "loss": [-0-9.e]*' "$1"; }
diff <(losses "$T/g.ckpt.jsonl") <(losses "$T/p.ckpt.jsonl") >/dev/null || die "resume on the GPU is not exact"
echo "resume after --stop-at 20 gives the same losses"
timeout 120 ./train "${tiny[@]}" --device cuda --steps 3 --objective cuset --window 8 --accum 2 --ckpt "$T/d1.ckpt" >/dev/null 2>&1
timeout 120 ./train "${tiny[@]}" --device cuda --steps 3 --objective cuset --window 8 --accum 2 --ckpt "$T/d2.ckpt" >/dev/null 2>&1
diff <(losses "$T/d1.ckpt.jsonl") <(losses "$T/d2.ckpt.jsonl") >/dev/null || die "two GPU runs differ (determinism)"
echo "two GPU runs: bit-identical losses"
timeout 120 ./train --resume --ckpt "$T/p.ckpt" "${tiny[@]}" --device cpu --steps 45 --log "$T/cpu.jsonl" >/dev/null 2>&1 \
    || die "the CPU cannot continue a GPU checkpoint"
timeout 60 ./gen --model "$T/g.ckpt" --prompt-ids "1 5 7 9 11" --max-tokens 16 --temperature 0 --device cuda >"$T/gg.out" 2>&1 \
    || { cat "$T/gg.out"; die "gen --device cuda"; }
timeout 60 ./gen --model "$T/g.ckpt" --prompt-ids "1 5 7 9 11" --max-tokens 16 --temperature 0 --device cpu >"$T/gc.out" 2>&1
[ "$(head -1 "$T/gg.out")" = "$(head -1 "$T/gc.out")" ] || echo "note: greedy GPU and CPU samples differ (tf32/fp32 ties): $(head -1 "$T/gg.out") | $(head -1 "$T/gc.out")"
echo "gen --device cuda: $(head -1 "$T/gg.out")"
rm -rf "$T"

step "the programs the emulator checks, natively: one corpus reference per family, CUDABench's smallest tasks"
native=$(mktemp /tmp/gpu_check_nvcc.XXXXXX)
printf '#!/bin/sh\nexec "%s" -arch=sm_90 "$@"\n' "$NVCC" >"$native" && chmod +x "$native"
NVCC_EMU=$native timeout 300 bash test/emu_corpus.sh --jobs "$(nproc)" | tail -3 || die "corpus references, natively"
NVCC_EMU=$native timeout 600 bash test/cudabench.sh --smallest --jobs "$(nproc)" | tail -4 || die "CUDABench, natively"
rm -f "$native"

if [ "${1:-}" != "--no-bench" ]; then
    step "benchmark: cuset against PyTorch"
    timeout 300 bash test/bench_gpu.sh || die "bench_gpu.sh"
fi
echo
echo "gpu_check: all passed"
