#!/usr/bin/env bash
# CUDABench's programs (../shared/cudabench/cudabench-dev.jsonl, 255 tasks) under the CPU
# emulator. One task: a temporary directory with data/, gen.py writes the inputs and the
# references there, emu/nvcc-emu builds bench.cu, it runs there, compare.py prints T or F.
#   test/cudabench.sh [--smallest] [--names a,b,c] [--ids 1,2] [--jobs N] [--timeout S] [--reorder SEED]
#                     [--asan] [--ptxas] [--keep] [--file JSONL]
#     --smallest   only the smallest size (total input bytes) of each task name
#     --names      only these task names (comma-separated);  --ids  only these task ids
#     --timeout    seconds for the program's run (default 120; gen.py gets 600)
#     --reorder    run with CUEMU_REORDER=SEED;  --keep  keep the directories of failures
#     --ptxas      compile with nvcc -arch=sm_90 -Xptxas -v first and give its report to the
#                  emulator's build (nvcc-emu --ptxas-info), so a launch a GPU would refuse for
#                  the kernel's registers or shared memory fails here too
# One line per task: "PASS id name 0.8 s", "UNSUPPORTED id name: feature NAME",
# "SLOW id name: ..." (not done within --timeout: these are reference programs, so the
# emulator's speed, not a failure), "NEEDS-GPU id name: ..." (gen.py, the task's input
# generator, needs a GPU, e.g. torch.cuda), "GEN-ERROR id name: ..." (gen.py needs a Python
# module that is missing), "FAIL id name: reason"; then a summary. Only FAIL lines make the
# exit 1 (a program that uses only modelled features fails, or gen.py fails otherwise); exit
# 0 with a SKIP line when the tasks or python's numpy are missing.
# test/cudabench_smallest.jsonl holds four tasks copied verbatim from CUDABench (see
# ../shared/cudabench/README.md), so make test and test/gpu_check.sh run them anywhere.
# PYTHON (default /usr/bin/python3) runs gen.py and compare.py; NVCC_EMU overrides the driver.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
default_file=../shared/cudabench/cudabench-dev.jsonl
file=$default_file smallest=0 names="" ids="" jobs=$(nproc) timeout_s=120 reorder="" asan="" keep=0
nvcc=""
while [ $# -gt 0 ]; do
    case "$1" in
        --smallest) smallest=1 ;;
        --names) names=${2:?--names needs a list}; shift ;;
        --ids) ids=${2:?--ids needs a list}; shift ;;
        --jobs) jobs=${2:?--jobs needs a number}; shift ;;
        --timeout) timeout_s=${2:?--timeout needs seconds}; shift ;;
        --reorder) reorder=${2:?--reorder needs a seed}; shift ;;
        --asan) asan=--asan ;;
        --ptxas) nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
                 [ -x "$nvcc" ] || { echo "cudabench.sh: --ptxas needs nvcc (on the PATH or in /usr/local/cuda/bin)" >&2; exit 2; } ;;
        --keep) keep=1 ;;
        --file) file=${2:?--file needs a path}; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "cudabench.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "cudabench.sh: --jobs expects a whole number, at least 1, got '$jobs'" >&2; exit 2; }
if [ ! -f "$file" ]; then
    [ "$file" = "$default_file" ] || { echo "cudabench.sh: --file $file: not a readable file" >&2; exit 2; }
    echo "SKIP cudabench: $file is absent"; exit 0 # (the benchmark beside the checkout: optional)
fi
if ! "$PYTHON" -c "import numpy" 2>/dev/null; then echo "SKIP cudabench: $PYTHON cannot import numpy"; exit 0; fi
[ -x emu/nvcc-emu ] && [ emu/nvcc-emu -nt emu/nvcc-emu.c ] || make -s emu/nvcc-emu >/dev/null || exit 2

TMP=$(mktemp -d /tmp/cuset_cudabench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# unpack the chosen tasks into $TMP/tasks/ID/{bench.cu,gen.py,compare.py}; list "ID NAME"
"$PYTHON" - "$file" "$TMP/tasks" "$smallest" "$names" "$ids" >"$TMP/list" <<'EOF' || exit 2
import json, math, os, re, sys
path, out, smallest, names, ids = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5]
try:
    tasks = [json.loads(line) for line in open(path) if line.strip()]
except (OSError, ValueError) as e:
    sys.exit("cudabench.sh: cannot read %s: %s" % (path, e))
if names:
    want = set(names.split(","))
    unknown = want - {t["task_name"] for t in tasks}
    if unknown:
        sys.exit("cudabench.sh: no task named " + ", ".join(sorted(unknown)))
    tasks = [t for t in tasks if t["task_name"] in want]
size = {"float16": 2, "float64": 8, "int64": 8, "uint64": 8, "int8": 1, "uint8": 1, "bool": 1}
def nbytes(t):
    return sum(math.prod(int(d) for d in re.findall(r"\d+", x["shape"])) * size.get(x["dtype"], 4) for x in t["inputs"])
if ids:
    unknown = set(ids.split(",")) - {str(t["id"]) for t in tasks}
    if unknown:
        sys.exit("cudabench.sh: no task with id " + ", ".join(sorted(unknown)))
    tasks = [t for t in tasks if str(t["id"]) in ids.split(",")]
if smallest:
    best = {}
    for t in tasks:
        if t["task_name"] not in best or nbytes(t) < nbytes(best[t["task_name"]]):
            best[t["task_name"]] = t
    tasks = [t for t in tasks if best[t["task_name"]] is t]
for t in tasks:
    d = os.path.join(out, str(t["id"]))
    os.makedirs(os.path.join(d, "data"))
    for f in ("bench.cu", "gen.py", "compare.py"):
        with open(os.path.join(d, f), "w") as fh:
            fh.write(t[f])
    print(t["id"], t["task_name"])
EOF

run_task() {
    local id=$1 name=$2 w="$TMP/tasks/$1" rc t0 t1
    local tag="$id $name" report=()
    if [ -n "$nvcc" ]; then
        if ! "$nvcc" -arch=sm_90 -Xptxas -v -c -o "$w/bench.o" "$w/bench.cu" 2>"$w/ptxas.log"; then
            echo "FAIL $tag: nvcc compile error: $(grep -m2 error "$w/ptxas.log" | tr '\n' '|' | cut -c1-400)"
            [ $keep -eq 1 ] || rm -rf "$w"; return
        fi
        report=(--ptxas-info "$w/ptxas.log")
    fi
    "$NVCC_EMU" $asan "${report[@]}" -O3 -o "$w/bench" "$w/bench.cu" >"$w/build.log" 2>&1
    rc=$?
    if [ $rc -eq 3 ]; then
        echo "UNSUPPORTED $tag: feature $(sed -n 's/.*unsupported feature: \(.*\) (.*/\1/p' "$w/build.log" | paste -sd, -)"
        rm -rf "$w"; return
    elif [ $rc -ne 0 ]; then
        echo "FAIL $tag: compile error: $(grep -m2 -E 'error|nvcc-emu' "$w/build.log" | tr '\n' '|' | cut -c1-400)"
        [ $keep -eq 1 ] || rm -rf "$w"; return
    fi
    if ! (cd "$w" && timeout -k 5 600 "$PYTHON" gen.py >gen.out 2>&1); then
        local module
        module=$(sed -n "s/.*ModuleNotFoundError: No module named '\([^'.]*\).*/\1/p" "$w/gen.out" | head -1)
        if grep -qE "$gpu_needed" "$w/gen.out"; then
            echo "NEEDS-GPU $tag: gen.py needs a GPU ($(grep -m1 -oE "$gpu_needed" "$w/gen.out"))"
        elif [ -n "$module" ]; then
            echo "GEN-ERROR $tag: gen.py needs the Python module $module (Debian: python3-${module,,})"
        else
            echo "FAIL $tag: gen.py failed ($(tail -1 "$w/gen.out" | cut -c1-200))"
        fi
        [ $keep -eq 1 ] || rm -rf "$w"; return
    fi
    t0=$(date +%s.%N)
    (cd "$w" && CUEMU_REORDER=$reorder timeout -k 5 "$timeout_s" ./bench >run.out 2>run.err)
    rc=$?
    t1=$(date +%s.%N)
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "SLOW $tag: still running after ${timeout_s} s (the emulator is slow on large inputs; raise --timeout)"
    elif grep -q "fails: too many resources requested for launch" "$w/run.err"; then
        echo "FAIL $tag: launch refused for the kernel's registers ($(grep -m1 -o "ptxas gave.*threads" "$w/run.err"))"
    elif [ $rc -ne 0 ]; then
        echo "FAIL $tag: crash (exit $rc: $(tail -2 "$w/run.err" | tr '\n' '|' | cut -c1-300))"
    else
        (cd "$w" && timeout 600 "$PYTHON" compare.py >cmp.out 2>&1)
        if [ "$(grep -v '^\s*$' "$w/cmp.out" | tail -1)" = T ]; then
            echo "PASS $tag $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
            rm -rf "$w"; return
        fi
        echo "FAIL $tag: wrong answer ($(tail -3 "$w/cmp.out" | tr '\n' '|' | cut -c1-300))"
    fi
    if [ $keep -eq 1 ]; then touch "$w/.keep"; else rm -rf "$w"; fi
}
# what PyTorch (or CuPy, numba) prints when a generator asks for a GPU that is not there
gpu_needed="Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available|CUDA driver version is insufficient|no CUDA-capable device|CUDARuntimeError|CudaSupportError"
export -f run_task
export NVCC_EMU=${NVCC_EMU:-$ROOT/emu/nvcc-emu}
export TMP ROOT PYTHON asan reorder timeout_s keep gpu_needed nvcc

ntask=$(wc -l <"$TMP/list")
echo "cudabench: $ntask tasks from $file, $jobs jobs, timeout ${timeout_s} s${reorder:+, CUEMU_REORDER=$reorder}${nvcc:+, with the register counts of $nvcc -Xptxas -v}"
start=$(date +%s)
xargs -r -P "$jobs" -L 1 bash -c 'run_task "$0" "$1"' <"$TMP/list" | tee "$TMP/results"
end=$(date +%s)
npass=$(grep -c '^PASS' "$TMP/results")
nuns=$(grep -c '^UNSUPPORTED' "$TMP/results")
nfail=$(grep -c '^FAIL' "$TMP/results")
nslow=$(grep -c '^SLOW' "$TMP/results")
ngpu=$(grep -c '^NEEDS-GPU' "$TMP/results")
ngen=$(grep -c '^GEN-ERROR' "$TMP/results")
echo "cudabench: $npass passed, $nuns unsupported, $nslow not finished within ${timeout_s} s, $ngpu need a GPU for their inputs," \
    "$ngen inputs not generated (missing Python module), $nfail failed of $ntask in $((end - start)) s"
[ "$nuns" -eq 0 ] || echo "  unsupported by feature: $(sed -n 's/^UNSUPPORTED [^:]*: feature //p' "$TMP/results" | tr ',' '\n' |
    sort | uniq -c | sort -rn | awk '{ c = $1; $1 = ""; printf "%s%s: %d", sep, substr($0, 2), c; sep = ", " }')"
[ "$nfail" -eq 0 ] || echo "  failed by reason: $(sed -n 's/^FAIL [^:]*: //p' "$TMP/results" |
    sed -E 's/^(compile error|nvcc compile error|launch refused|crash|wrong answer|gen\.py failed).*/\1/' | sort | uniq -c | sort -rn | awk '{ c = $1; $1 = ""; printf "%s%s: %d", sep, substr($0, 2), c; sep = ", " }')"
if [ $keep -eq 1 ] && [ "$nfail" -gt 0 ]; then
    kept=$(mktemp -d /tmp/cuset_cudabench_failures.XXXXXX)
    for k in "$TMP"/tasks/*/.keep; do [ -e "$k" ] && mv "$(dirname "$k")" "$kept/"; done
    echo "cudabench: failing task directories kept in $kept"
fi
nreported=$(grep -cE '^(PASS|FAIL|UNSUPPORTED|SLOW|NEEDS-GPU|GEN-ERROR) ' "$TMP/results")
[ "$nreported" -eq "$ntask" ] || { echo "cudabench.sh: $nreported of $ntask tasks reported a result" >&2; exit 1; }
[ "$nfail" -eq 0 ] # SLOW, NEEDS-GPU and GEN-ERROR tasks are reported above, not failures
