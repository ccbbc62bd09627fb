#!/usr/bin/env bash
# The corpus's reference programs under the CPU emulator: for each family, the first sample
# of that family in the split (or, with --all, every sample) is materialized
# (data/corpus --materialize), built with emu/nvcc-emu, run in its directory and checked
# against the generator's expected outputs (data/corpus --compare).
#   test/emu_corpus.sh [DIR] [SPLIT] [--all] [--reorder SEED] [--ulp SEED] [--fma] [--asan] [--leaks] [--jobs N] [--timeout S] [--keep]
#     DIR      the corpus directory (default data/default; made with `make data` when absent)
#     SPLIT    train, val or test (default test)
#     --reorder SEED  run with CUEMU_REORDER=SEED (the runtime's thread-order shuffle)
#     --ulp SEED      run with CUEMU_ULP=SEED (fast intrinsics as far off as CUDA allows)
#     --fma    contract a * b + c into fused multiply-adds, as nvcc does by default (--fmad=true)
#     --asan   build with AddressSanitizer;  --keep  keep the work directories of failures
#     --leaks  --asan, and memory (host or device) a program leaves allocated at exit fails it
# One line per sample: "PASS family (split:index) 1.2 s (build 3.4 s)" or
# "FAIL family (split:index): reason"; then a summary. Exit 1 when any sample fails.
# NVCC_EMU overrides the driver (default emu/nvcc-emu), CORPUS the generator that
# materializes and compares (default data/corpus; test/family_example.c's copy in make test).
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
dir=data/default split=test all=0 reorder="" ulp="" fma="" asan="" leaks=0 jobs=$(nproc) timeout_s=120 keep=0 npos=0
while [ $# -gt 0 ]; do
    case "$1" in
        --all) all=1 ;;
        --reorder) reorder=${2:?--reorder needs a seed}; shift ;;
        --ulp) ulp=${2:?--ulp needs a seed}; shift
               [[ $ulp =~ ^[1-9][0-9]*$ ]] || { echo "emu_corpus.sh: --ulp needs a seed above 0 (0 is off)" >&2; exit 2; } ;;
        --fma) fma=--fma ;;
        --asan) asan=--asan ;;
        --leaks) asan=--asan leaks=1 ;;
        --jobs) jobs=${2:?--jobs needs a number}; shift ;;
        --timeout) timeout_s=${2:?--timeout needs seconds}; shift ;;
        --keep) keep=1 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        -*) echo "emu_corpus.sh: unknown option $1" >&2; exit 2 ;;
        *) if [ $npos -eq 0 ]; then dir=$1; else split=$1; fi; npos=$((npos + 1)) ;;
    esac
    shift
done
case "$split" in train|val|test) ;; *) echo "emu_corpus.sh: split must be train, val or test" >&2; exit 2 ;; esac
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "emu_corpus.sh: --jobs expects a whole number, at least 1, got '$jobs'" >&2; exit 2; }
[ -x data/corpus ] && [ data/corpus -nt data/corpus.c ] || make -s data/corpus >/dev/null || exit 2
[ -x emu/nvcc-emu ] && [ emu/nvcc-emu -nt emu/nvcc-emu.c ] || make -s emu/nvcc-emu >/dev/null || exit 2
if [ ! -f "$dir/$split.jsonl" ]; then
    if [ "$dir" = data/default ]; then
        ./data/corpus --out data/default >/dev/null || { echo "emu_corpus.sh: data/corpus --out data/default failed (exit $?)" >&2; exit 2; }
    else echo "emu_corpus.sh: no $dir/$split.jsonl" >&2; exit 2; fi
fi
case "$dir" in /*) ;; *) dir=$ROOT/$dir ;; esac

TMP=$(mktemp -d /tmp/cuset_emu_corpus.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# the samples: "index family" lines (the first of each family unless --all)
awk -v all=$all '{
    if (!match($0, /"family": *"[^"]*"/)) next
    f = substr($0, RSTART, RLENGTH); sub(/"family": *"/, "", f); sub(/"$/, "", f)
    if (all || !(f in seen)) print NR - 1, f
    seen[f] = 1
}' "$dir/$split.jsonl" >"$TMP/samples"
[ -s "$TMP/samples" ] || { echo "emu_corpus.sh: no samples with a family in $dir/$split.jsonl" >&2; exit 2; }

# one sample: prints its line
run_one() {
    local index=$1 family=$2 w="$TMP/s$1" t0 t1 t2 rc
    local tag="$family ($split:$index)"
    mkdir -p "$w"
    if ! "$CORPUS" --materialize "$dir" --split "$split" --index "$index" --to "$w" >"$w/mat.log" 2>&1; then
        echo "FAIL $tag: materialize failed: $(tail -1 "$w/mat.log")"; return
    fi
    t0=$(date +%s.%N)
    "$NVCC_EMU" $asan $fma -O3 -o "$w/prog" "$w/reference.cu" >"$w/build.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    if [ $rc -eq 3 ]; then
        echo "FAIL $tag: unsupported feature: $(grep -o 'unsupported feature: .*' "$w/build.log" | head -3 | tr '\n' ';')"; return
    elif [ $rc -ne 0 ]; then
        echo "FAIL $tag: compile error (exit $rc): $(grep -m3 -E 'error|nvcc-emu' "$w/build.log" | tr '\n' '|' | cut -c1-400)"
        [ $keep -eq 1 ] && touch "$w/.keep"; return
    fi
    local asan_options=${ASAN_OPTIONS:-}
    [ "$leaks" = 1 ] && asan_options+="${asan_options:+:}detect_leaks=1"
    (cd "$w" && ASAN_OPTIONS=$asan_options CUEMU_REORDER=$reorder CUEMU_ULP=$ulp timeout -k 5 "$timeout_s" ./prog >run.out 2>run.err)
    rc=$?
    t2=$(date +%s.%N)
    local secs build
    secs=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
    build=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "FAIL $tag: timeout after ${timeout_s} s"; [ $keep -eq 1 ] && touch "$w/.keep"; return
    elif grep -q 'LeakSanitizer: detected memory leaks' "$w/run.err"; then
        echo "FAIL $tag: $(grep -m1 -o '[0-9]* byte(s) leaked in [0-9]* allocation(s)' "$w/run.err"), the first at $(grep -m1 -o '[^ /]*\.cu:[0-9]*' "$w/run.err")"
        [ $keep -eq 1 ] && touch "$w/.keep"; return
    elif [ $rc -ne 0 ]; then
        echo "FAIL $tag: exit $rc: $(tail -3 "$w/run.err" | tr '\n' '|' | cut -c1-400)"; [ $keep -eq 1 ] && touch "$w/.keep"; return
    fi
    if "$CORPUS" --compare "$w" >"$w/cmp.out" 2>&1; then
        echo "PASS $tag $secs s (build $build s)"
        rm -rf "$w"
    else
        echo "FAIL $tag: mismatch: $(grep -m2 FAIL "$w/cmp.out" | tr '\n' '|' | cut -c1-400)$(grep -v FAIL "$w/cmp.out" | grep -m1 corpus)"
        [ $keep -eq 1 ] && touch "$w/.keep"
    fi
}
export -f run_one
export NVCC_EMU=${NVCC_EMU:-$ROOT/emu/nvcc-emu} CORPUS=${CORPUS:-$ROOT/data/corpus}
export TMP ROOT dir split asan leaks fma reorder ulp timeout_s keep

checks=${asan:+, AddressSanitizer}; [ $leaks = 1 ] && checks+=" and leak checks"
echo "emu_corpus: $(wc -l <"$TMP/samples") samples of $dir/$split.jsonl, $jobs jobs${checks}${reorder:+, CUEMU_REORDER=$reorder}${ulp:+, CUEMU_ULP=$ulp}${fma:+, fused multiply-adds}"
start=$(date +%s)
xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1"' <"$TMP/samples" | tee "$TMP/results"
end=$(date +%s)
npass=$(grep -c '^PASS' "$TMP/results")
nfail=$(grep -c '^FAIL' "$TMP/results")
echo "emu_corpus: $npass passed, $nfail failed of $(wc -l <"$TMP/samples") in $((end - start)) s"
if [ $keep -eq 1 ] && [ $nfail -gt 0 ]; then
    kept=$(mktemp -d /tmp/cuset_emu_corpus_failures.XXXXXX)
    for k in "$TMP"/s*/.keep; do [ -e "$k" ] && mv "$(dirname "$k")" "$kept/"; done
    echo "emu_corpus: failing work directories kept in $kept"
fi
[ "$nfail" -eq 0 ] && [ "$npass" -eq "$(wc -l <"$TMP/samples")" ]
