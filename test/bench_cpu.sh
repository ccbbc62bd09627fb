#!/usr/bin/env bash
# CPU training throughput, side by side on this machine: the C trainer (sft and the full
# CuSeT objective) and a PyTorch model of identical shape (test/bench_torch.py), same
# batch, same thread count. A benchmark, not a test: run it on a quiet machine.
#   bash test/bench_cpu.sh [steps]      (make bench-cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
STEPS=${1:-12}
THREADS=${THREADS:-$(nproc)}
L=4 H=4 C=128 V=2048 T=256 B=8
TMP=$(mktemp -d /tmp/cuset_bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
make -s train

# Rows are full: prompt 128 + target 128 tokens of the synthetic task. The median step
# after two warm-up steps is reported.
c_run() {
    ./train --layers $L --heads $H --embd $C --vocab $V --ctx $T --seq $T --batch $B --steps "$STEPS" --warmup 2 \
        --synthetic-len 127:127 --synthetic-n 512 --val-frac 0 --threads "$THREADS" --objective "$1" \
        --ckpt "$TMP/b.ckpt" --log "$TMP/$1.jsonl" >/dev/null
    "$PYTHON" -c 'import json, statistics, sys
r = [json.loads(l)["tokens_per_s"] for l in open(sys.argv[1]) if "tokens_per_s" in l][2:]
print("%.0f" % statistics.median(r))' "$TMP/$1.jsonl"
}
c_sft=$(c_run sft)
c_cuset=$(c_run cuset)
torch=$("$PYTHON" test/bench_torch.py --layers $L --heads $H --embd $C --vocab $V --seq $T --batch $B \
    --steps "$STEPS" --warmup 2 --threads "$THREADS" | awk '/tokens_per_s/ { printf "%.0f", $3 }')
echo "CPU training throughput: $L layers, $H heads, $C channels, vocabulary $V, batch $B x $T tokens, $THREADS threads"
echo "$(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p'), $STEPS steps (median after 2 warm-up)"
printf '| %-34s | %10s | %8s |\n' "implementation" "tokens/s" "vs torch"
printf '|%s|%s|%s|\n' "------------------------------------" "------------" "----------"
for row in "C, objective sft:$c_sft" "C, objective cuset (all switches):$c_cuset" "PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)') eager, cross-entropy:$torch"; do
    name=${row%:*} v=${row##*:}
    printf '| %-34s | %10s | %7.2fx |\n' "$name" "$v" "$(awk -v a="$v" -v b="$torch" 'BEGIN { print a / b }')"
done
