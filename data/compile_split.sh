#!/usr/bin/env bash
# Compiles the reference program of every task of a split with nvcc (make compile-test-split).
#   bash data/compile_split.sh [DIR] [SPLIT]      defaults: data/default test
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,3s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
dir=${1:-data/default} split=${2:-test}
case "$split" in train|val|test) ;; *) echo "compile_split: SPLIT must be train, val or test, got '$split'" >&2; exit 2 ;; esac
command -v nvcc >/dev/null || { echo "compile_split: nvcc not found (the CUDA toolkit is needed)" >&2; exit 1; }
[ -f "$dir/$split.jsonl" ] || { echo "compile_split: no $dir/$split.jsonl: run make data first" >&2; exit 1; }
tmp=$(mktemp -d /tmp/cuset_compile.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# a program that compiles with a warning (nvcc's own, the host compiler's under these
# flags, or ptxas's for double-precision arithmetic in a kernel) fails too: the programs
# are what a model learns to write
flags=(-arch=sm_90 -Xcompiler -Wall,-Wextra,-Wshadow,-Wconversion -Xptxas -warn-double-usage)
n=$(wc -l <"$dir/$split.jsonl") pass=0 fail=0
for k in $(seq 0 $((n - 1))); do
    if ! out=$(./data/corpus --materialize "$dir" --split "$split" --index "$k" --to "$tmp/$k" 2>&1 >/dev/null); then
        fail=$((fail + 1)); echo "FAIL $split:$k: $out"; continue
    fi
    if out=$(nvcc "${flags[@]}" -o "$tmp/$k/prog" "$tmp/$k/reference.cu" 2>&1) && [ -z "$out" ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL $split:$k: $(echo "$out" | head -2)"; fi
    rm -rf "$tmp/$k"
done
echo "$split split: $pass of $n reference programs compile without a warning (nvcc ${flags[*]}), $fail fail"
[ "$fail" -eq 0 ]
