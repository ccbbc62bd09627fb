#!/usr/bin/env bash
# CPU training throughput against the machine's arithmetic limit and against PyTorch.
#   bash test/bench_cpu.sh [steps]      (make bench-cpu)
# 1. test/bench_cpu probe: the float32 FMA peak on 1 thread and on all threads.
# 2. At B4 x T64, B8 x T256 and B4 x T1024 (4 layers, 4 heads, 128 channels, vocabulary
#    2048; every row full: prompt T/2 + target T/2 tokens of the synthetic task): train with
#    the sft and the cuset objective on all threads, and test/bench_torch.py (PyTorch eager,
#    float32, cross-entropy) at each thread count in TORCH_THREADS: each reported, its best compared.
#    Median step after two warm-up steps. Share of peak = tokens/s x the step's counted
#    FLOP per token (test/bench_cpu flops: matmuls and causal attention) / the all-thread peak.
# PROFILE=1 also prints test/bench_cpu profile (time and GFLOP/s per op) at each shape.
# A benchmark, not a test: run it on a quiet machine (the load average is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0; fi
[ $# -le 1 ] && [[ ${1:-10} =~ ^[1-9][0-9]*$ ]] || { echo "bench_cpu.sh: usage: bash test/bench_cpu.sh [steps, at least 1] (--help)" >&2; exit 2; }
STEPS=${1:-10}
THREADS=${THREADS:-$(nproc)}
TORCH_THREADS=${TORCH_THREADS:-$( [ "$THREADS" -gt 1 ] && echo "1 $THREADS" || echo 1)}
SHAPES=${SHAPES:-"4x64 8x256 4x1024"}
L=4 H=4 C=128 V=2048
TMP=$(mktemp -d /tmp/cuset_bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
make -s train test/bench_cpu

median() { # the median tokens_per_s of a JSON-lines log after the two warm-up steps
    "$PYTHON" -c 'import json, statistics, sys
r = [json.loads(l)["tokens_per_s"] for l in open(sys.argv[1]) if "tokens_per_s" in l][2:]
print("%.0f" % statistics.median(r))' "$1"
}
c_run() { # OBJECTIVE B T
    local half=$(($3 / 2 - 1))
    ./train --layers $L --heads $H --embd $C --vocab $V --ctx "$3" --seq "$3" --batch "$2" --steps $((STEPS + 2)) \
        --warmup 2 --synthetic-len $half:$half --synthetic-n 512 --val-frac 0 --threads "$THREADS" --objective "$1" \
        --ckpt "$TMP/b.ckpt" --log "$TMP/$1.jsonl" >/dev/null
    median "$TMP/$1.jsonl"
    rm -f "$TMP/$1.jsonl"
}

read -r _ _ _ peak1 < <(./test/bench_cpu probe --threads 1 | head -1)
read -r _ _ _ peakn < <(./test/bench_cpu probe --threads "$THREADS" | tail -1)
torch_version=$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none)
echo "CPU training throughput, $(date -u '+%F %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores;"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "FMA peak (test/bench_cpu probe): $peak1 GFLOP/s on 1 thread, $peakn GFLOP/s on $THREADS threads"
echo "model: $L layers, $H heads, $C channels, vocabulary $V; cuset on $THREADS threads; PyTorch $torch_version eager,"
echo "best of $TORCH_THREADS threads; $STEPS steps, median after 2 warm-up; % = share of the $THREADS-thread peak"
echo
printf '| %-10s | %9s | %11s | %14s | %11s | %9s | %9s | %9s | %s\n' "shape" "sft tok/s" "cuset tok/s" "PyTorch tok/s" \
    "sft/PyTorch" "sft %peak" "cuset %" "PyTorch %" "PyTorch by threads |"
echo "|------------|-----------|-------------|----------------|-------------|-----------|-----------|-----------|---------------------|"
for shape in $SHAPES; do
    B=${shape%x*} T=${shape#*x}
    flop=$(./test/bench_cpu flops --layers $L --heads $H --embd $C --vocab $V --batch "$B" --seq "$T" | awk '{ print $2 }')
    sft=$(c_run sft "$B" "$T")
    cuset=$(c_run cuset "$B" "$T")
    torch=0 torch_th=- torch_all=
    if [ "$torch_version" != none ]; then
        for th in $TORCH_THREADS; do
            v=$("$PYTHON" test/bench_torch.py --layers $L --heads $H --embd $C --vocab $V --seq "$T" --batch "$B" \
                --steps "$STEPS" --warmup 2 --threads "$th" | awk '/tokens_per_s/ { printf "%.0f", $3 }')
            torch_all="$torch_all ${th}T $v"
            if [ "$v" -gt "$torch" ]; then torch=$v torch_th=$th; fi
        done
    fi
    awk -v s="B${B}xT${T}" -v a="$sft" -v b="$cuset" -v t="$torch" -v th="$torch_th" -v f="$flop" -v p="$peakn" \
        -v all="${torch_all# }" 'BEGIN {
        ratio = t > 0 ? sprintf("%.2fx", a / t) : "-";
        printf "| %-10s | %9d | %11d | %9d (%sT) | %11s | %8.1f%% | %8.1f%% | %8.1f%% | %-19s |\n", s, a, b, t, th, ratio,
               100 * a * f / 1e9 / p, 100 * b * f / 1e9 / p, 100 * t * f / 1e9 / p, all }'
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${PROFILE:-0}" = 1 ]; then
    for shape in $SHAPES; do
        echo
        ./test/bench_cpu profile --layers $L --heads $H --embd $C --vocab $V --batch "${shape%x*}" --seq "${shape#*x}" \
            --steps "$STEPS" --threads "$THREADS"
    done
fi
