#!/usr/bin/env bash
# GPU benchmark (make bench-gpu): on one config, side by side in one run,
#   training tokens/s of ./train (--device cuda) and of the same model in PyTorch;
#   the fused loss's bandwidth against a device-to-device copy;
#   fused attention forward/backward against torch's scaled_dot_product_attention;
#   the tf32 matmul's TFLOP/s against torch.matmul (tf32).
# Needs a GPU, ./train built with the backend and test/bench_gpu; PyTorch with CUDA (PYTHON)
# is optional: without it the PyTorch column is "-" and a SKIP line says why.
# Any failure stops the script with a message and a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; echo "Settings: L H C T B V STEPS (environment)."; exit 0; fi
[ $# -eq 0 ] || { echo "bench_gpu.sh: takes no arguments (settings come from L H C T B V STEPS; --help)" >&2; exit 2; }
PYTHON=${PYTHON:-python3}
L=${L:-6} H=${H:-12} C=${C:-768} T=${T:-1024} B=${B:-8} V=${V:-8192} STEPS=${STEPS:-30}
TMP=$(mktemp -d /tmp/cuset_bench_gpu.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
die() { echo "bench_gpu: $*" >&2; exit 1; }
[ -x ./train ] || die "./train is missing (make)"
[ -x ./test/bench_gpu ] || die "test/bench_gpu is missing (make test/bench_gpu)"
echo "config: $L layers, $H heads, $C channels, batch $B x $T tokens, vocabulary $V, $STEPS steps"

# cuset: synthetic rows of full length so every row is long; the log has tokens/s per step
./train --device cuda --layers "$L" --heads "$H" --embd "$C" --ctx "$T" --seq "$T" --batch "$B" --vocab "$V" \
    --synthetic-n 2048 --synthetic-len $((T / 2 - 2)):$((T / 2 - 2)) --steps "$STEPS" --objective sft --quiet \
    --ckpt "$TMP/b.ckpt" --log "$TMP/b.jsonl" >"$TMP/train.out" 2>&1 || { cat "$TMP/train.out"; die "train failed"; }
grep -q "device: cuda" "$TMP/train.out" || { cat "$TMP/train.out"; die "train did not run on the GPU"; }
cuset_tokps=$("$PYTHON" -c "
import json, statistics, sys
v = [json.loads(l)['tokens_per_s'] for l in open('$TMP/b.jsonl') if '\"tokens_per_s\"' in l][5:]
print(f'{statistics.median(v):.0f}' if v else sys.exit('no steps logged'))")
./test/bench_gpu "$B" "$T" "$C" "$H" "$V" >"$TMP/kern.out" 2>&1 || { cat "$TMP/kern.out"; die "test/bench_gpu failed"; }
no_torch=$("$PYTHON" -c "import torch; torch.cuda.is_available() or print('torch', torch.__version__, 'sees no GPU')" 2>&1) ||
    no_torch="$PYTHON cannot import torch"
if [ -z "$no_torch" ]; then
    "$PYTHON" test/bench_gpu_torch.py --layers "$L" --heads "$H" --embd "$C" --seq "$T" --batch "$B" --vocab "$V" \
        --steps "$STEPS" >"$TMP/torch.out" 2>&1 || { cat "$TMP/torch.out"; die "the PyTorch benchmark failed"; }
else
    echo "SKIP the PyTorch column: $(echo "$no_torch" | tail -1)"
    : >"$TMP/torch.out"
fi
get() { # FILE NAME: the value of line "NAME value unit" ("-" for the absent PyTorch side)
    local v
    [ -s "$1" ] || { echo -; return; }
    v=$(awk -v n="$2" '$1 == n { print $2 }' "$1")
    [ -n "$v" ] || die "no '$2' in $(basename "$1"): $(cat "$1")"
    echo "$v"
}
head -1 "$TMP/kern.out"
[ ! -s "$TMP/torch.out" ] || head -1 "$TMP/torch.out"
printf '%-40s %14s %14s\n' "" "cuset" "pytorch"
printf '%-40s %14s %14s\n' "training tokens/s (sft)" "$cuset_tokps" "$(get "$TMP/torch.out" torch_train_tokps)"
printf '%-40s %14s %14s\n' "matmul $(get "$TMP/kern.out" matmul_shape) TFLOP/s" "$(get "$TMP/kern.out" matmul_forward_TFLOPs)" \
    "$(get "$TMP/torch.out" torch_matmul_TFLOPs)"
printf '%-40s %14s %14s\n' "matmul backward TFLOP/s" "$(get "$TMP/kern.out" matmul_backward_TFLOPs)" "-"
printf '%-40s %14s %14s\n' "attention forward ms" "$(get "$TMP/kern.out" attention_forward_ms)" \
    "$(get "$TMP/torch.out" torch_attention_forward_ms)"
printf '%-40s %14s %14s\n' "attention backward ms" "$(get "$TMP/kern.out" attention_backward_ms)" \
    "$(get "$TMP/torch.out" torch_attention_backward_ms)"
printf '%-40s %14s %14s\n' "loss (sft) GB/s, 3 passes over logits" "$(get "$TMP/kern.out" loss_sft_GBps)" "-"
printf '%-40s %14s %14s\n' "loss (cuset) GB/s" "$(get "$TMP/kern.out" loss_cuset_GBps)" "-"
printf '%-40s %14s %14s\n' "device-to-device copy GB/s" "$(get "$TMP/kern.out" copy_GBps)" "$(get "$TMP/torch.out" torch_copy_GBps)"
