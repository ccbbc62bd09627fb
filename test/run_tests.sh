#!/usr/bin/env bash
# The test suite: `make test` runs it after building. Every check prints one line
# PASS/FAIL/SKIP; the last line is "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
TMP=$(mktemp -d /tmp/cuset_tests.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0 skip=0
failures=() # each FAIL line, repeated above the summary so that a log's tail names them

tally() { # count PASS/FAIL/SKIP lines of a test program's output (on stdin), echoing them
    while IFS= read -r line; do
        echo "$line"
        case "$line" in
            PASS*) pass=$((pass + 1)) ;;
            FAIL*) fail=$((fail + 1)); failures+=("$line") ;;
            SKIP*) skip=$((skip + 1)) ;;
        esac
    done
}
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); failures+=("FAIL $1: $2"); }
# checks NAME CMD...: a test program's PASS/FAIL/SKIP lines counted; a non-zero exit with no
# FAIL line among them (a crash, a check that printed nothing) is one failure more, NAME_exit
checks() {
    local name=$1 before=$fail; shift
    tally < <("$@"; echo "exit $?" >"$TMP/rc")
    grep -q "exit 0" "$TMP/rc" || [ "$fail" -gt "$before" ] || bad "${name}_exit" "$(cat "$TMP/rc"), no FAIL line"
}
# emu_check NAME DIR ARGS...: the test split of the corpus in DIR under the emulator
# (test/emu_corpus.sh DIR test ARGS...) as one check, its summary or first failures shown
emu_check() {
    local name=$1 dir=$2; shift 2
    if bash test/emu_corpus.sh "$dir" test "$@" >"$dir.out" 2>&1; then
        ok "$name: $(tail -1 "$dir.out" | sed 's/^emu_corpus: //')"
    else bad "$name" "$(grep -m3 -E '^FAIL|passed, ' "$dir.out" | tr '\n' '|')"; fi
}

# why emu/nvcc-emu refuses --fma here (a CPU without fused multiply-adds); nothing, and a
# non-zero status, when it fuses
fma_refused() { emu/nvcc-emu --fma -I test/emu -c -o "$TMP/fused.o" test/emu/fused.cu 2>&1 | grep -o "nvcc-emu: --fma: .*"; }

# expect NAME WANT_RC PATTERN CMD...: the command exits WANT_RC and its stderr+stdout match PATTERN
expect() {
    local name=$1 want=$2 pattern=$3; shift 3
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne "$want" ]; then bad "$name" "exit $rc, want $want: $(echo "$out" | tail -2)"
    elif ! grep -qE -- "$pattern" <<<"$out"; then bad "$name" "output lacks /$pattern/: $(echo "$out" | tail -2)"
    else ok "$name"; fi
}

echo "== unit tests (test/test_cuset)"
checks test_cuset ./test/test_cuset

echo "== tokenizer, annotator, data layer (test/test_tokenizer, test_annotate, test_data)"
for prog in test_tokenizer test_annotate test_data; do
    checks ${prog} ./test/$prog
done
# the annotator's checks size every buffer exactly, so that a read past its end shows: once
# more under AddressSanitizer and UBSan, where it does
asan=(-std=gnu11 -O1 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all -I .) # (the CPU path's too)
if gcc "${asan[@]}" -o "$TMP/test_annotate_asan" test/test_annotate.c -lm 2>"$TMP/asan_build.err"; then
    "$TMP/test_annotate_asan" >"$TMP/annotate_asan.out" 2>&1; rc=$?
    if [ $rc -eq 0 ] && ! grep -qE "^FAIL|Sanitizer|runtime error" "$TMP/annotate_asan.out"; then
        ok "test_annotate_under_asan ($(grep -c '^PASS' "$TMP/annotate_asan.out") checks, no report)"
    else bad "test_annotate_under_asan" "exit $rc: $(grep -m2 -E '^FAIL|Sanitizer|runtime error' "$TMP/annotate_asan.out")"; fi
else bad "test_annotate_asan_build" "$(head -3 "$TMP/asan_build.err")"; fi

# the headers, implementations included, as C++17 without a warning of -Wall (they are meant
# to be copied into C++ projects too; a header's static functions that a program leaves unused are fine)
if g++ -std=c++17 -O1 -fopenmp -Wall -Wno-unused-function -Werror -I . -o "$TMP/cxx_headers" test/cxx_headers.cpp -lm \
    >"$TMP/cxx.out" 2>&1; then
    "$TMP/cxx_headers" >"$TMP/cxx.out" 2>&1 && ok "headers_build_and_run_as_cxx" \
        || bad "headers_build_and_run_as_cxx" "$(head -c 300 "$TMP/cxx.out")"
else bad "headers_build_and_run_as_cxx" "g++ -std=c++17 -Wall -Werror: $(grep -m2 error "$TMP/cxx.out")"; fi
# the build's CPU flags follow the machine: AVX-512 vectors on x86-64, gcc's -mcpu=native on
# aarch64 (Grace), where the x86 option stops gcc (a stand-in uname says aarch64)
mkdir -p "$TMP/arm" && printf '#!/bin/sh\n[ "$1" = -m ] && echo aarch64 || exec /bin/uname "$@"\n' >"$TMP/arm/uname"
chmod +x "$TMP/arm/uname"
x86=$(make -s -n -B train NVCC= | grep -m1 'train\.c') arm=$(PATH="$TMP/arm:$PATH" make -s -n -B train NVCC= | grep -m1 'train\.c')
if [[ $(uname -m) != x86_64 || $x86 == *-mprefer-vector-width=512* ]] && [[ $arm == *-mcpu=native* && $arm != *-mprefer* ]]
then ok "build_flags_follow_the_cpu"; else bad "build_flags_follow_the_cpu" "x86-64: $x86 | aarch64: $arm"; fi
# the GPU code a toolkit can make: sm_80 and sm_90 (with sm_90's PTX) from CUDA 11.8 on,
# sm_80 and its PTX before (stand-in nvcc scripts say which release they are)
for rel in 11.7 11.8 13.0; do
    printf '#!/bin/sh\necho "Cuda compilation tools, release %s, V%s.0"\n' $rel $rel >"$TMP/arm/nvcc$rel"
    chmod +x "$TMP/arm/nvcc$rel"
done
old=$(make -s -n -B cuset_cuda.o NVCC="$TMP/arm/nvcc11.7") new=$(make -s -n -B cuset_cuda.o NVCC="$TMP/arm/nvcc11.8")
now=$(make -s -n -B cuset_cuda.o NVCC="$TMP/arm/nvcc13.0")
if [[ $old == *code=sm_80*compute_80,code=compute_80* && $old != *compute_90* && $new == *code=sm_90*code=compute_90* &&
      $now == "${new/nvcc11.8/nvcc13.0}" ]]; then ok "gpu_code_follows_the_toolkit"
else bad "gpu_code_follows_the_toolkit" "11.7: $old | 11.8: $new | 13.0: $now"; fi
# each header copied alone (README, Layout): its declarations build by themselves; its
# implementation builds and links, as C and as C++, with those of the headers it names
# first and nothing else; without them it stops at an #error that says what it needs
while read header macro needs; do # (plain read: a line ending in \ goes on)
    src=$TMP/alone.c why=""
    printf '#include "%s"\nint main(void) { return 0; }\n' "$PWD/$header" >"$src"
    for cc in "gcc -std=gnu11" "g++ -x c++ -std=c++17"; do
        $cc -Wall -Werror -c "$src" -o "$TMP/alone.o" 2>"$TMP/alone.err" \
            || why="$why ${cc%% *} declarations: $(grep -m1 error "$TMP/alone.err");"
    done
    : >"$src"
    for m in $needs $macro; do printf '#define %s_IMPLEMENTATION\n#include "%s"\n' "${m%%:*}" "$PWD/${m#*:}" >>"$src"; done
    echo 'int main(void) { return 0; }' >>"$src"
    for cc in "gcc -std=gnu11" "g++ -x c++ -std=c++17"; do
        $cc -fopenmp -Wall -Wno-unused-function -Werror "$src" -o "$TMP/alone" -lm 2>"$TMP/alone.err" \
            || why="$why ${cc%% *} with $(echo $needs | sed 's/[A-Z_]*://g; s/ /, /g'): $(grep -m1 error "$TMP/alone.err");"
    done
    if [ -n "$needs" ]; then
        printf '#define %s_IMPLEMENTATION\n#include "%s"\n' "${macro%%:*}" "$PWD/${macro#*:}" >"$src"
        gcc -std=gnu11 -c "$src" -o "$TMP/alone.o" 2>"$TMP/alone.err" && why="$why builds without what it needs;"
        grep -m1 error "$TMP/alone.err" | grep -q "#error \"$header: its implementation needs" \
            || why="$why without what it needs: $(grep -m1 error "$TMP/alone.err");"
    fi
    if [ -z "$why" ]; then ok "header_alone: $header"; else bad "header_alone: $header" "$why"; fi
done <<'EOF'
cuset.h CUSET:cuset.h
data/tokenizer.h CUSET_TOKENIZER:data/tokenizer.h
data/annotate.h CUSET_ANNOTATE:data/annotate.h
data/json.h CUSET_JSON:data/json.h
emu/sandbox.h CUSET_SANDBOX:emu/sandbox.h
data/textdata.h CUSET_TEXTDATA:data/textdata.h CUSET:cuset.h CUSET_TOKENIZER:data/tokenizer.h CUSET_ANNOTATE:data/annotate.h
data/gpt2.h CUSET_GPT2:data/gpt2.h CUSET:cuset.h CUSET_TOKENIZER:data/tokenizer.h
data/confidence.h CUSET_CONFIDENCE:data/confidence.h CUSET:cuset.h CUSET_TOKENIZER:data/tokenizer.h \
                  CUSET_ANNOTATE:data/annotate.h CUSET_TEXTDATA:data/textdata.h
emu/eval.h CUSET_EVAL:emu/eval.h CUSET:cuset.h CUSET_TOKENIZER:data/tokenizer.h CUSET_ANNOTATE:data/annotate.h \
           CUSET_TEXTDATA:data/textdata.h
EOF

echo "== GPT-2-family models in and out (test/test_gpt2 selftest; data/json.h against Python's json; test/test_gpt2.py against transformers and tokenizers)"
checks test_gpt2_selftest ./test/test_gpt2 selftest
checks test_json "$PYTHON" test/test_json.py
# (with the Hugging Face libraries that make test installed from PyPI: test/deps.sh)
checks test_gpt2 "$(PYTHON=$PYTHON bash test/deps.sh --hf-python)" test/test_gpt2.py --tmp "$TMP/gpt2"

echo "== oracle: C float32 against PyTorch float64 (test/oracle.py)"
if ! "$PYTHON" -c "import torch, numpy" 2>/dev/null; then
    bad "oracle" "$PYTHON cannot import torch and numpy (apt-get install python3-torch python3-numpy)"
else
    if "$PYTHON" test/oracle.py selftest >"$TMP/selftest.out" 2>&1; then ok "oracle_selftest"
    else cat "$TMP/selftest.out"; bad "oracle_selftest" "the oracle's own hand-computed checks failed"; fi
    # Each case: an objective (and for cuset the three switches), a window length; a fresh
    # seed per run, retried when a confidence lands within 1e-4 of tau (exit 3).
    # fields: objective conf cuda rew steps accum embd heads seq window (defaults 1 1 1 3 2 16 2
    # random, and the window from the list below)
    cases=("sft" "dft" "profit" "eaft" "asft" "dft 0 0 0 1 3" "eaft 0 0 0 2 1" "sft 1 1 1 2 1 64 2 41" "cuset 1 1 1 2 1 64 2 40")
    for sw in "0 0 0" "1 0 0" "0 1 0" "0 0 1" "1 1 0" "1 0 1" "0 1 1" "1 1 1"; do cases+=("cuset $sw"); done
    # eq. 5's clipped windows in targets of ceil(l/2) < T_n < l tokens, odd and even l
    cases+=("cuset 0 0 1 2 1 16 2 26 13" "cuset 1 1 1 2 1 16 2 26 12")
    base_seed=${ORACLE_SEED:-$(( $(date +%s) % 100000 ))}
    echo "  oracle seeds start at $base_seed (ORACLE_SEED=$base_seed reproduces)"
    windows=(1 2 3 4 5 7 8 64)
    i=0
    for c in "${cases[@]}"; do
        set -- $c
        obj=$1 conf=${2:-1} cuda=${3:-1} rew=${4:-1} steps=${5:-3} accum=${6:-2} embd=${7:-16} heads=${8:-2} seq=${9:-0}
        w=${10:-${windows[$((i % ${#windows[@]}))]}}
        clip=$([ $((i % 2)) -eq 0 ] && echo 0.05 || echo 0)
        switches=$([ "$obj" = cuset ] && echo " conf=$conf cuda=$cuda rew=$rew")
        label="$obj$switches l=$w steps=$steps accum=$accum clip=$clip C=$embd"
        rc=3 tries=0
        while [ $rc -eq 3 ] && [ $tries -lt 6 ]; do
            seed=$((base_seed + 1000 * i + tries))
            ./test/oracle_case --seed $seed --objective "$obj" --conf "$conf" --cuda "$cuda" --rew "$rew" --window "$w" \
                --steps "$steps" --accum "$accum" --clip "$clip" --embd "$embd" --heads "$heads" --seq "$seq" \
                --out "$TMP/case.bin" || { rc=99; break; }
            "$PYTHON" test/oracle.py check "$TMP/case.bin" --label "$label (seed $seed)" >"$TMP/oracle.out" 2>&1
            rc=$?
            tries=$((tries + 1))
        done
        if [ $rc -eq 0 ]; then
            # the worst relative error of the forward and of the gradients, for the record
            worst=$(awk '/relerr=/ { split($2, a, "="); v = a[2] + 0; g = ($1 ~ /^grad/) ? "grad" : ($1 ~ /^final/) ? "param" : "fwd";
                     if (v > m[g]) m[g] = v } END { printf "fwd %.1e grad %.1e param %.1e", m["fwd"], m["grad"], m["param"] }' "$TMP/oracle.out")
            ok "oracle $label: $worst"
        elif [ $rc -eq 3 ]; then
            echo "SKIP oracle $label: every seed put a confidence within 1e-4 of tau"; skip=$((skip + 1))
        else
            cat "$TMP/oracle.out"; bad "oracle $label" "exit $rc (seed $seed)"
        fi
        i=$((i + 1))
    done
fi

echo "== command line: bad input gives a clear message and a non-zero exit"
tiny=(--layers 1 --heads 2 --embd 16 --ctx 32 --seq 32 --vocab 40 --batch 4 --synthetic-n 64 --synthetic-len 3:10)
expect "train_help" 0 "usage: train" ./train --help
expect "gen_help" 0 "usage: gen" ./gen --help
# --stop's token ends the sample and is not printed (it read "stop after this token")
expect "gen_help_stop_not_printed" 0 "the token that ends the sample \(not printed\)" ./gen --help
expect "train_unknown_flag" 2 "unknown option '--bogus'" ./train --bogus 1
expect "train_missing_value" 2 "needs a value" ./train --steps
# a misspelt flag given last is unknown, not a flag without its value
expect "train_unknown_flag_last" 2 "unknown option '--bogus'" ./train --steps 1 --bogus
expect "gen_unknown_flag_last" 2 "unknown option --frob" ./gen --model x --frob
expect "gen_missing_value" 2 "missing value for --temperature" ./gen --model x --temperature
expect "train_bad_number" 2 "--lr expects a number" ./train --lr fast --steps 1
expect "train_val_data_synthetic" 2 "--val-data goes with a text --data, not --data synthetic" ./train --steps 1 --val-data v.jsonl
expect "train_min_lr_above_lr" 2 "--min-lr 0.001 is above --lr 1e-05: the schedule falls" ./train --lr 1e-5 --min-lr 1e-3 --steps 1
expect "train_lr_below_default_min_lr" 0 "note: --lr 1e-05 is below the default --min-lr 3e-05: the rate stays at 1e-05" \
    ./train "${tiny[@]}" --lr 1e-5 --steps 1 --ckpt "$TMP/z.ckpt"
# a count is a whole number (1.5 used to run 1 step, silently); ranges print in full
expect "train_fractional_count" 2 "--steps expects a whole number in \[0, 1000000000\], got '1.5'" ./train --steps 1.5
expect "train_negative_steps" 2 "--steps expects a whole number" ./train --steps -3
expect "train_fractional_model" 2 "--embd expects a whole number in \[1, 16384\]" ./train --embd 16.5 --steps 1
expect "train_synthetic_len_trailing" 2 "--synthetic-len expects MIN:MAX" ./train --synthetic-len 8:48x --steps 1
expect "gen_fractional_count" 2 "--max-tokens expects a whole number in \[1, 1048576\], got '2.5'" ./gen --model x \
    --prompt-ids 1 --max-tokens 2.5
expect "gen_eval_fractional_count" 2 "--samples expects a whole number in \[1, 1000\], got '1.5'" ./gen --model x \
    --eval x --samples 1.5
expect "train_zero_steps" 2 "nothing to do" ./train "${tiny[@]}" --steps 0 --ckpt "$TMP/z.ckpt"
expect "train_no_length" 2 "nothing to do" ./train "${tiny[@]}" --ckpt "$TMP/z.ckpt"
expect "train_steps_and_epochs" 2 "give --steps N or --epochs E, not both" ./train "${tiny[@]}" --steps 1 --epochs 1 \
    --ckpt "$TMP/z.ckpt"
# a log that cannot be written (/dev/full: a full disk) is said, and the run goes on to its checkpoint
expect "train_log_disk_full" 0 "warning: --log /dev/full: writing failed at step 1 \(No space left on device\)" \
    ./train "${tiny[@]}" --steps 2 --ckpt "$TMP/z.ckpt" --log /dev/full
expect "train_log_disk_full_summary" 0 "note: the log /dev/full misses lines from step 1" \
    ./train "${tiny[@]}" --steps 2 --ckpt "$TMP/z.ckpt" --log /dev/full
# what stdout does not take (/dev/full) is a failure, as in gen; the message says what the
# lost lines did: the checkpoint and its step (and how to continue a run stopped early)
expect "train_stdout_full" 1 "train: writing to standard output failed: No space left on device; the run's messages are \
lost, not its work: checkpoint .*/z.ckpt holds step 2 of 2$" sh -c './train "$@" >/dev/full' _ "${tiny[@]}" --steps 2 \
    --ckpt "$TMP/z.ckpt"
expect "train_stopped_stdout_full" 1 "checkpoint .*/z.ckpt holds step 1 of 3 \(continue with --resume --ckpt .*/z.ckpt \
--synthetic-n 64 --synthetic-len 3:10\)" sh -c './train "$@" >/dev/full' _ "${tiny[@]}" --steps 3 --stop-at 1 --ckpt "$TMP/z.ckpt"
# a closed pipe (| head) stops the run as Ctrl-C does, saved, exit 1 (SIGPIPE killed it unsaved)
{ ./train "${tiny[@]}" --steps 3000 --ckpt "$TMP/pp.ckpt" 2>"$TMP/pp.err"; echo $? >"$TMP/pp.rc"; } | head -2 >/dev/null
if [ "$(cat "$TMP/pp.rc")" = 1 ] && grep -q "Broken pipe; .* holds step [0-9]* of 3000 (continue with --resume" "$TMP/pp.err" &&
   ./train --resume --ckpt "$TMP/pp.ckpt" "${tiny[@]}" --stop-at 3 >/dev/null 2>&1; then ok "train_closed_pipe_saves_and_stops"
else bad "train_closed_pipe_saves_and_stops" "exit $(cat "$TMP/pp.rc"): $(tail -1 "$TMP/pp.err")"; fi
expect "train_help_stdout_full" 1 "train: writing to standard output failed" sh -c './train --help >/dev/full'
# a learning rate of 0 (or one that is 0 as a float) trains nothing: refused, not run with a note
expect "train_lr_zero" 2 "^train: --lr: a learning rate of 0 trains nothing" ./train "${tiny[@]}" --lr 0 --steps 1 --ckpt "$TMP/z0.ckpt"
expect "train_lr_underflow" 2 "^train: --lr: a learning rate of 0 trains nothing" ./train "${tiny[@]}" --lr 1e-50 --steps 1 \
    --ckpt "$TMP/z0.ckpt"
expect "train_resume_and_init" 2 "give --resume \(continue this run\) or --init FILE \(fine-tune from it\), not both" \
    ./train "${tiny[@]}" --resume --init "$TMP/z.ckpt" --ckpt "$TMP/z.ckpt"
expect "train_other_objectives_flag" 0 "note: --alpha is eaft's; --objective sft does not use it" ./train "${tiny[@]}" \
    --objective sft --alpha 2 --steps 1 --ckpt "$TMP/z.ckpt"
# a model too big for memory (38.7 GB of parameters; address space capped, so it fails whatever
# the kernel's overcommit): its size in GiB and what to make smaller, exit 1
expect "train_out_of_memory" 1 "out of memory allocating [0-9]+ x 4 bytes \(36\.04 GiB\): a smaller model" \
    bash -c 'ulimit -v 8000000; exec ./train --layers 48 --heads 32 --embd 4096 --steps 1 --ckpt "$1/z.ckpt"' _ "$TMP"
expect "train_seq_beyond_context" 2 "longer than the model's context" ./train "${tiny[@]}" --seq 64 --steps 1 --ckpt "$TMP/z.ckpt"
# without --seq, rows are the model's context where it is shorter than the default 256
expect "train_default_seq_is_context" 0 "seq 48 \(the model's context\)" ./train --layers 1 --heads 2 --embd 16 \
    --ctx 48 --vocab 40 --batch 4 --synthetic-n 64 --synthetic-len 3:10 --steps 1 --ckpt "$TMP/z.ckpt"
expect "train_bad_objective" 2 "unknown objective 'xent'" ./train --objective xent --steps 1
expect "train_bad_model" 2 "multiple of n_head" ./train "${tiny[@]}" --heads 3 --steps 1 --ckpt "$TMP/z.ckpt"
# a step that trains nothing says so once, and why: CuSeT from random weights (every
# confidence about 1/V, below tau) without the CUDA mask; SFT at the same weights trains
expect "train_untrained_step_noted" 0 "^note: step 1 trained nothing \(gradient 0\): no target token's confidence reached --tau 0.1\. CuSeT" \
    ./train "${tiny[@]}" --no-cuda-mask --steps 2 --device cpu --ckpt "$TMP/z.ckpt"
out=$(./train "${tiny[@]}" --objective sft --steps 2 --device cpu --ckpt "$TMP/z.ckpt" 2>&1); rc=$?
if [ $rc -ne 0 ] || ! grep -q "^done: 2 steps" <<<"$out"; then bad "train_sft_step_not_noted" "exit $rc: $(tail -2 <<<"$out")"
elif grep -q "trained nothing" <<<"$out"; then bad "train_sft_step_not_noted" "noted: $(grep "trained nothing" <<<"$out")"
else ok "train_sft_step_not_noted"; fi
# settings that make a run other than it looks are said at start-up: a warmup as long as
# the run, a step larger than the training split (and what that makes of --epochs)
expect "train_warmup_longer_than_run_noted" 0 "^note: --warmup 5 is not shorter than the run's 3 steps" \
    ./train "${tiny[@]}" --warmup 5 --steps 3 --device cpu --ckpt "$TMP/z.ckpt"
expect "train_batch_beyond_split_noted" 0 "^note: a step takes 1000 samples .* holds 4: .*--epochs 1 is 250 epochs" \
    ./train --layers 1 --heads 2 --embd 16 --ctx 32 --vocab 40 --synthetic-len 3:10 --batch 1000 --synthetic-n 4 \
    --epochs 1 --device cpu --ckpt "$TMP/z.ckpt"
# --device cuda without a GPU (or without the backend) is an error; auto falls back to the CPU
# (the skip asks the driver whether there is a GPU, not train, so a train that ran --device
# cuda on the CPU fails here)
if nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP train_device_cuda_unavailable: a GPU answers here"; skip=$((skip + 1))
else
    expect "train_device_cuda_unavailable" 2 "no GPU backend|no usable GPU" ./train "${tiny[@]}" --device cuda --steps 1 --ckpt "$TMP/z.ckpt"
    expect "train_device_auto_falls_back" 0 "device: cpu" ./train "${tiny[@]}" --device auto --steps 1 --ckpt "$TMP/z.ckpt"
    expect "gen_device_cuda_unavailable" 2 "no GPU backend|no usable GPU" ./gen --model "$TMP/z.ckpt" --prompt-ids 1 --device cuda
    if grep -q cudaGetDeviceCount train; then # a build with the GPU backend says why it uses the CPU
        expect "train_device_auto_notice" 0 "note: no usable GPU .*training on the CPU" ./train "${tiny[@]}" --steps 1 --ckpt "$TMP/z.ckpt"
    fi
fi
# --device is checked in every mode; where no model runs on the GPU, --device cuda is refused, not ignored
expect "gen_device_bogus_with_info" 2 "--device expects cpu, cuda or auto, got bogus" ./gen --model "$TMP/z.ckpt" --info \
    --device bogus
expect "gen_device_cuda_with_info" 2 "--device cuda: --info runs no model on the GPU" ./gen --model "$TMP/z.ckpt" --info \
    --device cuda
# a checkpoint that cannot be written stops the run before it trains, not after
expect "train_ckpt_unwritable" 1 "--ckpt .*/none/m.ckpt: cannot be written there \(the save writes .*\.tmp\.[0-9]* first: No such file" \
    ./train "${tiny[@]}" --steps 1 --log "$TMP/l.jsonl" --ckpt "$TMP/none/m.ckpt"
# a regular file whose directory takes no new file: the message names the file the save creates
expect "train_ckpt_in_proc" 1 "--ckpt /proc/version: cannot be written there \(the save writes /proc/version.tmp.[0-9]* first" \
    ./train --steps 1 --ckpt /proc/version
expect "train_ckpt_is_directory" 1 "--ckpt .*: cannot be written there \(it is a directory\)" \
    ./train "${tiny[@]}" --steps 1 --ckpt "$TMP"
mkfifo "$TMP/fifo" # (as /dev/null would be, which the save's rename would replace)
expect "train_ckpt_not_a_file" 1 "--ckpt .*fifo: cannot be written there \(it is not a regular file" \
    ./train "${tiny[@]}" --steps 1 --ckpt "$TMP/fifo"
expect "train_ckpt_empty" 1 "--ckpt an empty path" ./train "${tiny[@]}" --steps 1 --ckpt ""
expect "train_bad_device" 2 "--device expects cpu, cuda or auto" ./train --device tpu --steps 1
head -c 1000 /dev/urandom >"$TMP/foreign.ckpt"
expect "train_init_foreign_file" 1 "not a cuset checkpoint" ./train --init "$TMP/foreign.ckpt" --steps 1 --ckpt "$TMP/z.ckpt"
expect "train_init_missing_file" 1 "cannot open" ./train --init "$TMP/none.ckpt" --steps 1 --ckpt "$TMP/z.ckpt"
expect "gen_foreign_file" 1 "not a cuset checkpoint" ./gen --model "$TMP/foreign.ckpt" --prompt-ids 1
expect "gen_checkpoint_is_directory" 1 "not a checkpoint file \(a directory or a device\)" ./gen --model "$TMP" --info

echo "== train, checkpoint, resume exactly, fine-tune, sample"
# 64 samples, 3 held out (5%), 4 rows a step: one epoch is ceil(61 / 4) = 16 steps
expect "train_epochs" 0 "61 train / 3 validation samples.*; 16 steps;" ./train "${tiny[@]}" --epochs 1 --ckpt "$TMP/e.ckpt" \
    --val-every 5 --log "$TMP/e.jsonl"
[ "$(grep -c val_loss "$TMP/e.jsonl")" -eq 4 ] && ok "val_every_5_of_16" || bad "val_every_5_of_16" "$(grep -c val_loss "$TMP/e.jsonl") validations"
./train "${tiny[@]}" --steps 6 --objective cuset --window 4 --ckpt "$TMP/full.ckpt" --log "$TMP/full.jsonl" >"$TMP/full.out" 2>&1 \
    && ok "train_6_steps" || bad "train_6_steps" "$(tail -3 "$TMP/full.out")"
for f in loss ce conf pass w tokens_per_s; do
    grep -q "\"$f\"" "$TMP/full.jsonl" || { bad "log_has_$f" "missing in the JSON lines log"; continue; }
    ok "log_has_$f"
done
grep -qE "step +6/6 .*loss .*ce .*conf .*pass .*w .*tok/s .*eta" "$TMP/full.out" && ok "progress_line" || bad "progress_line" "$(grep step "$TMP/full.out" | tail -1)"
losses() { grep -o '"step": [0-9]*, "loss": [-0-9.e]*' "$1"; }
same_losses() { # NAME LOG_A LOG_B: the two logs hold the same losses at the same steps
    if diff <(losses "$2") <(losses "$3") >/dev/null && [ -n "$(losses "$2")" ]; then ok "$1"
    else bad "$1" "losses differ: $(diff <(losses "$2") <(losses "$3") | head -4 | tr '\n' ' ')"; fi
}
run=(./train "${tiny[@]}" --steps 12 --objective cuset --window 4 --accum 2)
"${run[@]}" --ckpt "$TMP/r.ckpt" --log "$TMP/r.jsonl" >/dev/null 2>&1
expect "stop_at_keeps_checkpoint" 0 "stopped after step 5" "${run[@]}" --ckpt "$TMP/p.ckpt" --log "$TMP/p.jsonl" --stop-at 5
cp "$TMP/p.ckpt" "$TMP/p5.ckpt"
expect "resume_from_step_5" 0 "resuming .* at step 5 of 12" ./train --resume --ckpt "$TMP/p.ckpt" "${tiny[@]}" --log "$TMP/p.jsonl"
same_losses "resume_is_exact" "$TMP/r.jsonl" "$TMP/p.jsonl"
# --stop-at outside the steps a run trains is refused, not ignored; a complete run says so
cp "$TMP/p5.ckpt" "$TMP/x5.ckpt" && cp "$TMP/r.ckpt" "$TMP/x12.ckpt"
expect "stop_at_before_resumed_step" 2 "--stop-at 3: the run trains steps 6..12; give one of them" \
    ./train --resume --ckpt "$TMP/x5.ckpt" "${tiny[@]}" --stop-at 3 --log "$TMP/x.jsonl"
expect "stop_at_past_last_step" 2 "--stop-at 13: the run trains steps 1..12" "${run[@]}" --ckpt "$TMP/x.ckpt" --stop-at 13
# --stop-at at the last step: the run is done, not stopped (it printed a resume command for a complete run)
expect "stop_at_last_step_is_done" 0 "^done: 12 steps" "${run[@]}" --ckpt "$TMP/sl.ckpt" --log "$TMP/sl.jsonl" --stop-at 12
expect "resume_complete_run" 0 "note: the run is complete: nothing to train; .*--init .*x12.ckpt" \
    ./train --resume --ckpt "$TMP/x12.ckpt" "${tiny[@]}" --log "$TMP/x.jsonl"
expect "epochs_too_many_steps" 2 "--epochs 1e\+06 of [0-9]+ samples in batches of 4 is [0-9]+ steps, more than 1e9" \
    ./train "${tiny[@]}" --synthetic-n 10000 --epochs 1e6 --ckpt "$TMP/x.ckpt"
expect "synthetic_len_too_long" 2 "--synthetic-len expects MIN:MAX with 1 <= MIN <= MAX <= 65536, got '3:99999999999'" \
    ./train "${tiny[@]}" --synthetic-len 3:99999999999 --steps 1 --ckpt "$TMP/x.ckpt"
# --keep-every 5 of 12 steps keeps steps 5 and 10 as whole checkpoints: step 5's is the bytes a
# run stopped there saved, and resuming step 10's gives the end's bytes; training is unchanged
"${run[@]}" --ckpt "$TMP/k.ckpt" --log "$TMP/k.jsonl" --keep-every 5 >/dev/null 2>&1
kept=$(cd "$TMP" && echo k.ckpt.step*)
[ "$kept" = "k.ckpt.step10 k.ckpt.step5" ] && ok "keep_every_copies" || bad "keep_every_copies" "kept: $kept"
cmp -s "$TMP/k.ckpt.step5" "$TMP/p5.ckpt" && ok "keep_every_copy_is_the_checkpoint" || bad "keep_every_copy_is_the_checkpoint" "step 5 differs"
same_losses "keep_every_trains_alike" "$TMP/r.jsonl" "$TMP/k.jsonl"
cp "$TMP/k.ckpt.step10" "$TMP/k10.ckpt"
./train --resume --ckpt "$TMP/k10.ckpt" "${tiny[@]}" --log "$TMP/k10.jsonl" >/dev/null 2>&1
cmp -s "$TMP/k10.ckpt" "$TMP/k.ckpt" && ok "keep_every_copy_resumes" || bad "keep_every_copy_resumes" "the resumed end differs"
mkdir -p "$TMP/kd.ckpt.step5" # a copy that cannot be written stops the run, the checkpoint holding it
expect "keep_every_unwritable" 1 "step 5: --keep-every: .*kd.ckpt.step5.*continue with --resume --ckpt .*kd.ckpt" \
    "${run[@]}" --ckpt "$TMP/kd.ckpt" --log "$TMP/kd.jsonl" --keep-every 5
# a --keep-every copy that the run will write may not be one of its inputs or its log (a
# copy saved as its own --init source, a checkpoint in place of the log): refused before training
cp "$TMP/p5.ckpt" "$TMP/q.ckpt.step2"
expect "keep_every_copy_is_init" 1 "--keep-every's copy .*q.ckpt.step2 is also --init .*q.ckpt.step2: the run would write over it" \
    ./train --init "$TMP/q.ckpt.step2" --steps 2 --ckpt "$TMP/q.ckpt" --keep-every 2 --log "$TMP/q.jsonl"
cmp -s "$TMP/q.ckpt.step2" "$TMP/p5.ckpt" && ok "keep_every_copy_is_init_kept" || bad "keep_every_copy_is_init_kept" "--init changed"
expect "keep_every_copy_is_log" 1 "--keep-every's copy .*o.ckpt.step1 is also --log .*o.ckpt.step1: the run would write over it" \
    ./train "${tiny[@]}" --steps 2 --ckpt "$TMP/o.ckpt" --log "$TMP/o.ckpt.step1" --keep-every 1
# A --ckpt or --log that is a symbolic link is written through to its target (the save and the
# resumed log's trim write a temporary file and rename it: over the link they replaced it, and
# the target never changed); a log that is not a regular file (a pipe, a device) is appended
# to as it is, not trimmed (the trim read the pipe, waiting for ever, or replaced a device)
mkdir -p "$TMP/lt" && ln -s lt/t.ckpt "$TMP/lk.ckpt" # (a link to a file not there yet)
./train "${tiny[@]}" --steps 3 --ckpt "$TMP/lk.ckpt" --log "$TMP/lk.jsonl" >"$TMP/lk.out" 2>&1
if [ -L "$TMP/lk.ckpt" ] && ./gen --model "$TMP/lt/t.ckpt" --info 2>&1 | grep -q "trained 3 steps"; then ok "ckpt_symlink_written_through"
else bad "ckpt_symlink_written_through" "$(ls -l "$TMP/lk.ckpt" "$TMP/lt" | tr '\n' ' ') $(tail -1 "$TMP/lk.out")"; fi
cp "$TMP/p5.ckpt" "$TMP/ls.ckpt" && cp "$TMP/r.jsonl" "$TMP/lt/real.jsonl" && ln -s lt/real.jsonl "$TMP/ls.jsonl"
./train --resume --ckpt "$TMP/ls.ckpt" "${tiny[@]}" --log "$TMP/ls.jsonl" >"$TMP/ls.out" 2>&1
if [ -L "$TMP/ls.jsonl" ] && [ "$(losses "$TMP/lt/real.jsonl" | wc -l)" -eq 12 ] && diff <(losses "$TMP/r.jsonl") \
    <(losses "$TMP/lt/real.jsonl") >/dev/null; then ok "resumed_log_symlink_trimmed_through"
else bad "resumed_log_symlink_trimmed_through" "$(ls -l "$TMP/ls.jsonl" | cut -c1-10) $(losses "$TMP/lt/real.jsonl" | wc -l) steps"; fi
cp "$TMP/p5.ckpt" "$TMP/lp.ckpt" && mkfifo "$TMP/lp.pipe"
timeout 60 cat "$TMP/lp.pipe" >"$TMP/lp.read" &
reader=$!
expect "resumed_log_pipe_not_trimmed" 0 "note: --log .*lp.pipe is not a regular file \(a device or a pipe\): it is appended to, not trimmed" \
    timeout 30 ./train --resume --ckpt "$TMP/lp.ckpt" "${tiny[@]}" --log "$TMP/lp.pipe"
kill $reader 2>/dev/null; wait $reader 2>/dev/null
[ -p "$TMP/lp.pipe" ] && [ "$(losses "$TMP/lp.read" | wc -l)" -eq 7 ] && ok "resumed_log_pipe_kept" \
    || bad "resumed_log_pipe_kept" "$(ls -l "$TMP/lp.pipe" | cut -c1-10), $(losses "$TMP/lp.read" | wc -l) steps read"
# a --ckpt the run may not write (read-only, in a directory it may write) stops the run before
# training, as a read-only --log does: the save's rename would have replaced it. Root, whom a
# mode does not stop, would write over it: the check runs as nobody there.
mkdir -p "$TMP/ro" && cp "$TMP/p5.ckpt" "$TMP/ro/r.ckpt" && chmod 444 "$TMP/ro/r.ckpt"
cp "$TMP/p5.ckpt" "$TMP/ro/s.ckpt" && cp "$TMP/p.jsonl" "$TMP/ro/s.jsonl" && chmod 444 "$TMP/ro/s.jsonl"
as=()
[ "$(id -u)" = 0 ] && chmod o+x "$TMP" && chown -R nobody "$TMP/ro" && as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
if [ ${#as[@]} -gt 0 ] && ! "${as[@]}" ./train --help >/dev/null 2>&1; then
    echo "SKIP train_ckpt_read_only, resume_log_read_only: root, and nobody cannot run ./train here"; skip=$((skip + 2))
else
    expect "train_ckpt_read_only" 1 "--ckpt .*ro/r.ckpt: no permission to write it \(Permission denied\)" \
        "${as[@]}" ./train "${tiny[@]}" --steps 1 --ckpt "$TMP/ro/r.ckpt" --log "$TMP/ro/r.jsonl"
    cmp -s "$TMP/ro/r.ckpt" "$TMP/p5.ckpt" && [ "$(stat -c %a "$TMP/ro/r.ckpt")" = 444 ] && ok "train_ckpt_read_only_kept" \
        || bad "train_ckpt_read_only_kept" "$(ls -l "$TMP/ro/r.ckpt")"
    expect "resume_log_read_only" 1 "--log .*ro/s.jsonl: cannot open for writing \(Permission denied\)" \
        "${as[@]}" ./train --resume --ckpt "$TMP/ro/s.ckpt" "${tiny[@]}" --log "$TMP/ro/s.jsonl"
fi
# What a run killed while saving leaves, tidied by the resumed run: a --keep-every copy the
# kill came before (the checkpoint was renamed into place, its copy not yet written) is
# written; a temporary file of a process no longer running is removed. The resumed log counts
# truncated rows on from the stopped run's (rows of 32 tokens truncate samples of 20-40).
long=(./train "${tiny[@]}" --synthetic-len 20:40 --steps 12)
"${long[@]}" --ckpt "$TMP/t.ckpt" --log "$TMP/t.jsonl" --keep-every 5 >/dev/null 2>&1
"${long[@]}" --ckpt "$TMP/u.ckpt" --log "$TMP/u.jsonl" --keep-every 5 --stop-at 10 >/dev/null 2>&1
rm -f "$TMP/u.ckpt.step10"
true & dead=$!; wait $dead
echo partial >"$TMP/u.ckpt.tmp.$dead"
out=$(./train --resume --ckpt "$TMP/u.ckpt" "${tiny[@]}" --synthetic-len 20:40 --log "$TMP/u.jsonl" --keep-every 5 2>&1)
if grep -q "removed 1 temporary file" <<<"$out" && [ ! -e "$TMP/u.ckpt.tmp.$dead" ] && grep -q "writing .*u.ckpt.step10" <<<"$out" \
    && cmp -s "$TMP/u.ckpt.step10" "$TMP/t.ckpt.step10" && cmp -s "$TMP/u.ckpt" "$TMP/t.ckpt"; then
    ok "resume_tidies_after_kill"
else bad "resume_tidies_after_kill" "$(tail -3 <<<"$out" | tr '\n' ' ')"; fi
truncated() { grep -o '"truncated": [0-9]*' "$1" | grep -o '[0-9]*$'; } # each step's count so far
if [ "$(truncated "$TMP/t.jsonl")" = "$(truncated "$TMP/u.jsonl")" ] && [ "$(truncated "$TMP/t.jsonl" | tail -1)" -gt 0 ]
then ok "resume_log_counts_truncated_on"
else bad "resume_log_counts_truncated_on" "$(diff <(truncated "$TMP/t.jsonl") <(truncated "$TMP/u.jsonl") | head -3 | tr '\n' ' ')"; fi
# --until-val-loss X ends the run, checkpointed, at the first validation whose cross-entropy
# is X or lower (here the lowest of a reference run's first three validations, as logged to 6
# decimals, plus half the last digit); the steps before are the reference's, and --steps is a
# limit only
"${run[@]}" --steps 40 --val-every 5 --ckpt "$TMP/u_ref.ckpt" --log "$TMP/u_ref.jsonl" >/dev/null 2>&1
read -r target first < <(grep -o '"step": [0-9]*, "val_loss": [0-9.]*, "val_ce": [0-9.]*' "$TMP/u_ref.jsonl" |
    tr -d '",:' | awk '{ $4 = $6 } NR <= 3 && (NR == 1 || $4 < min) { min = $4 } { v[NR] = $4; s[NR] = $2 }
         END { for (i = 1; i <= NR; i++) if (v[i] <= min) { printf "%.7f %d\n", min + 5e-7, s[i]; exit } }')
expect "until_val_loss_stops" 0 "\\(--until-val-loss\\) at step $first of 40" \
    "${run[@]}" --steps 40 --val-every 5 --ckpt "$TMP/u.ckpt" --log "$TMP/u.jsonl" --until-val-loss "$target"
losses "$TMP/u_ref.jsonl" | head -n "$first" >"$TMP/u_ref.losses"
same_losses "until_val_loss_trains_alike" "$TMP/u_ref.losses" "$TMP/u.jsonl"
expect "until_val_loss_checkpoint_step" 0 "trained $first steps" ./gen --model "$TMP/u.ckpt" --info
# ... not the objective's value: ProFit at tau 0.99 keeps no token, its loss is 0 from the start
expect "until_val_loss_is_cross_entropy" 0 "^done: 10 steps" \
    ./train "${tiny[@]}" --steps 10 --objective profit --tau 0.99 --val-every 5 --ckpt "$TMP/u3.ckpt" --until-val-loss 0.01
expect "until_val_loss_needs_val_every" 2 "needs a validation every few steps: give --val-every N" \
    "${run[@]}" --ckpt "$TMP/u2.ckpt" --until-val-loss 1
# (resumed, --val-every is the checkpoint's: the advice to give it was one that could not be followed)
expect "until_val_loss_resume_without_validation" 2 "the checkpoint's run has --val-every 0, which --resume keeps" \
    ./train --resume --ckpt "$TMP/p.ckpt" "${tiny[@]}" --until-val-loss 1 --val-every 2 --log "$TMP/p2.jsonl"
# an interrupted run (SIGINT during training) saves the step it finished and resumes exactly
# (1,200 steps: on a quiet machine 60 took 0.1 s and could end before the signal came)
long=(./train "${tiny[@]}" --steps 1200 --objective asft --accum 2 --quiet)
"${long[@]}" --ckpt "$TMP/l.ckpt" --log "$TMP/l.jsonl" >/dev/null 2>&1
"${long[@]}" --ckpt "$TMP/i.ckpt" --log "$TMP/i.jsonl" >"$TMP/i.out" 2>&1 &
pid=$!
for _ in $(seq 200); do n=$(grep -c loss "$TMP/i.jsonl" 2>/dev/null); [ "${n:-0}" -ge 3 ] && break; sleep 0.05; done
kill -INT $pid; wait $pid; rc=$?
if [ $rc -eq 130 ] && grep -q "continue with --resume" "$TMP/i.out"; then ok "sigint_saves_and_exits_130"
else bad "sigint_saves_and_exits_130" "exit $rc: $(tail -1 "$TMP/i.out")"; fi
./train --resume --ckpt "$TMP/i.ckpt" "${tiny[@]}" --log "$TMP/i.jsonl" >/dev/null 2>&1
same_losses "sigint_resume_is_exact" "$TMP/l.jsonl" "$TMP/i.jsonl"
# one run at a time on a checkpoint: a second (a --resume beside the run still going, stopped
# here meanwhile) stops before it starts, naming the first, whose log it would have trimmed;
# a run killed outright (kill -9) leaves no lock behind, only the file CKPT.lock
"${long[@]}" --ckpt "$TMP/two.ckpt" --log "$TMP/two.jsonl" --ckpt-every 1 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do [ -f "$TMP/two.ckpt" ] && break; sleep 0.05; done
kill -STOP $pid
expect "second_run_on_checkpoint_refused" 1 "--ckpt .*two.ckpt is in use by another run \(process $pid, which holds .*two.ckpt.lock\)" \
    ./train --resume --ckpt "$TMP/two.ckpt" "${tiny[@]}" --log "$TMP/two.jsonl"
kill -9 $pid; wait $pid 2>/dev/null # (a stopped process dies of SIGKILL as it is)
expect "checkpoint_lock_ends_with_its_run" 0 "done: 1 steps" ./train "${tiny[@]}" --steps 1 --ckpt "$TMP/two.ckpt" --log "$TMP/two.jsonl"
# a run killed outright (SIGKILL: no handler runs) resumes from its last timed checkpoint
# (--ckpt-minutes) exactly, and its log keeps each step once
crash=(./train "${tiny[@]}" --steps 1200 --objective cuset --window 4 --accum 2 --quiet)
"${crash[@]}" --ckpt "$TMP/c_ref.ckpt" --log "$TMP/c_ref.jsonl" >/dev/null 2>&1
"${crash[@]}" --ckpt "$TMP/c.ckpt" --log "$TMP/c.jsonl" --ckpt-minutes 0.0003 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 400); do n=$(grep -c loss "$TMP/c.jsonl" 2>/dev/null); [ -f "$TMP/c.ckpt" ] && [ "${n:-0}" -ge 150 ] && break; sleep 0.05; done
if kill -9 $pid 2>/dev/null; then
    wait $pid 2>/dev/null
    ./train --resume --ckpt "$TMP/c.ckpt" "${tiny[@]}" --log "$TMP/c.jsonl" --quiet >/dev/null 2>&1
    same_losses "sigkill_resume_is_exact" "$TMP/c_ref.jsonl" "$TMP/c.jsonl"
else bad "sigkill_resume_is_exact" "the run ended before it could be killed"; fi
# a checkpoint that cannot be written at the end (its directory removed during the run, as a
# full disk would) goes to a rescue file in $TMPDIR, from which the run resumes exactly
mkdir -p "$TMP/gone"
TMPDIR="$TMP" "${crash[@]}" --ckpt "$TMP/gone/g.ckpt" --log "$TMP/g.jsonl" >"$TMP/g.out" 2>&1 &
pid=$!
for _ in $(seq 200); do n=$(grep -c loss "$TMP/g.jsonl" 2>/dev/null); [ "${n:-0}" -ge 3 ] && break; sleep 0.05; done
rm -rf "$TMP/gone"; kill -INT $pid; wait $pid; rc=$?
rescue=$(ls "$TMP"/g.ckpt.rescue.* 2>/dev/null)
if [ $rc -eq 1 ] && [ -f "$rescue" ] && grep -q "saved to .*rescue.* instead (.*g.ckpt: it has no save" "$TMP/g.out"; then
    ok "unwritable_checkpoint_goes_to_rescue_file"
else bad "unwritable_checkpoint_goes_to_rescue_file" "exit $rc: $(tail -1 "$TMP/g.out")"; fi
mkdir -p "$TMP/gone" && mv "$rescue" "$TMP/gone/g.ckpt" 2>/dev/null
./train --resume --ckpt "$TMP/gone/g.ckpt" "${tiny[@]}" --log "$TMP/g.jsonl" --quiet >/dev/null 2>&1
same_losses "rescue_resume_is_exact" "$TMP/c_ref.jsonl" "$TMP/g.jsonl"
# the same after saves: the rescue message says the last save went with its directory
mkdir -p "$TMP/gone2"
TMPDIR="$TMP" "${crash[@]}" --ckpt-every 2 --ckpt "$TMP/gone2/g.ckpt" --log "$TMP/g2.jsonl" >"$TMP/g2.out" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -f "$TMP/gone2/g.ckpt" ] && break; sleep 0.05; done
# (train stopped meanwhile: a save running beside rm made rmdir fail, "Directory not empty",
# or looked for the checkpoint before rm reached it)
kill -STOP $pid; rm -rf "$TMP/gone2"; kill -CONT $pid; kill -INT $pid 2>/dev/null; wait $pid; rc=$?
if [ $rc -eq 1 ] && grep -q "saved to .*rescue.* instead (.*g.ckpt: its last save, of step [0-9]*, is gone)" "$TMP/g2.out"
then ok "rescue_message_says_last_save_is_gone"
else bad "rescue_message_says_last_save_is_gone" "exit $rc: $(tail -1 "$TMP/g2.out")"; fi
rm -f "$TMP"/g.ckpt.rescue.*
expect "resume_other_data" 1 "data differs" ./train --resume --ckpt "$TMP/p.ckpt" "${tiny[@]}" --synthetic-n 65 --log "$TMP/x.jsonl"
head -c 5000 "$TMP/full.ckpt" >"$TMP/trunc.ckpt"
expect "resume_truncated" 1 "truncated: file has 5000 bytes" ./train --resume --ckpt "$TMP/trunc.ckpt" --log "$TMP/x.jsonl"
expect "finetune_asft_from_checkpoint" 0 "objective: asft" ./train --init "$TMP/full.ckpt" \
    --objective asft --steps 2 --seq 32 --batch 4 --synthetic-n 64 --synthetic-len 3:10 --ckpt "$TMP/ft.ckpt" --log "$TMP/ft.jsonl"
mkdir -p "$TMP/not_a_model"
expect "finetune_from_a_plain_directory" 1 "not_a_model is a directory without config.json: not a Hugging Face model" \
    ./train --init "$TMP/not_a_model" --steps 1 --ckpt "$TMP/z.ckpt"
expect "finetune_seq_beyond_context" 2 "longer than the model's context of 32" ./train --init "$TMP/full.ckpt" --seq 33 --steps 1 \
    --ckpt "$TMP/z.ckpt"
# a run from a checkpoint keeps its batch, sequence and accumulation unless given, and says so
expect "finetune_keeps_checkpoint_shape" 0 "settings: batch 4 \(checkpoint\), seq 32 \(checkpoint\), accum 2 \(checkpoint\)" \
    ./train --init "$TMP/r.ckpt" --synthetic-n 64 --synthetic-len 3:10 --steps 1 --ckpt "$TMP/z.ckpt"
expect "finetune_flag_over_checkpoint" 0 "settings: batch 4 \(checkpoint\), seq 24 \(flag\), accum 2 \(checkpoint\)" \
    ./train --init "$TMP/r.ckpt" --synthetic-n 64 --synthetic-len 3:10 --seq 24 --steps 1 --ckpt "$TMP/z.ckpt"
expect "resume_ignores_other_batch" 0 "keeps the checkpoint's --batch 4; --batch 8 is ignored" \
    ./train --resume --ckpt "$TMP/r.ckpt" "${tiny[@]}" --batch 8
# every flag that the checkpoint overrides is named; repeating the run's own flags says nothing
out=$(./train --resume --ckpt "$TMP/r.ckpt" "${tiny[@]}" --steps 30 --objective sft --lr 0.5 --no-reweight --layers 2 2>&1)
notes=("--layers 2 is ignored \(the model has 1\)" "--steps 12; --steps 30 is ignored" "--objective cuset; --objective sft"
       "--no-reweight is ignored" "--lr 0.0003; --lr 0.5 is ignored")
missing=$(for n in "${notes[@]}"; do grep -qE -- "$n" <<<"$out" || echo "/$n/"; done)
[ -z "$missing" ] && ok "resume_names_ignored_flags" || bad "resume_names_ignored_flags" "no note $missing"
out=$(./train --resume --ckpt "$TMP/r.ckpt" "${run[@]:1}" --objective cuset --lr 3e-4 2>&1); rc=$?
if [ $rc -ne 0 ] || ! grep -q "resuming .* at step 12 of 12" <<<"$out"; then bad "resume_same_flags_quiet" "exit $rc: $(tail -2 <<<"$out")"
elif grep -q "is ignored" <<<"$out"; then bad "resume_same_flags_quiet" "$(grep "is ignored" <<<"$out" | head -1)"
else ok "resume_same_flags_quiet"; fi
# the validation share is one of the run's settings (checkpoint version 3): a resumed run
# keeps its split, and a version 2 checkpoint, which lacks it, goes on with the flag's and says so
./train "${tiny[@]}" --val-frac 0.2 --steps 3 --stop-at 1 --ckpt "$TMP/vf.ckpt" --log "$TMP/vf.jsonl" >/dev/null 2>&1
cp "$TMP/vf.ckpt" "$TMP/vf2.ckpt"
expect "resume_keeps_val_frac" 0 "keeps the checkpoint's --val-frac 0.2; --val-frac 0.5 is ignored" \
    ./train --resume --ckpt "$TMP/vf.ckpt" "${tiny[@]}" --val-frac 0.5 --stop-at 2 --log "$TMP/vf.jsonl"
expect "resume_keeps_val_frac_split" 0 "52 train / 12 validation" ./train --resume --ckpt "$TMP/vf.ckpt" "${tiny[@]}" \
    --log "$TMP/vf.jsonl"
printf '\x02' | dd of="$TMP/vf2.ckpt" bs=1 seek=8 conv=notrunc 2>/dev/null # version 2, slot 41 (val_frac) reserved
cp "$TMP/vf2.ckpt" "$TMP/vf2_slot41.ckpt"
printf '\0\0\0\0' | dd of="$TMP/vf2.ckpt" bs=1 seek=164 conv=notrunc 2>/dev/null
expect "resume_version_2_val_frac_unknown" 0 "does not record the run's validation share .*: it goes on with --val-frac 0.2" \
    ./train --resume --ckpt "$TMP/vf2.ckpt" "${tiny[@]}" --val-frac 0.2 --log "$TMP/vf2.jsonl"
expect "ckpt_version_2_slot_41_reserved" 1 "reserved bytes are not zero" ./gen --model "$TMP/vf2_slot41.ckpt" --info
# the header's settings (from byte 64: batch, seq, accum, steps, seed, val_every, ckpt_every, objective, ...) are
# checked: a damaged one is refused, not trained on (a batch of 0 made the resumed run loop forever)
cp "$TMP/r.ckpt" "$TMP/b0.ckpt" && printf '\000\000\000\000' | dd of="$TMP/b0.ckpt" bs=1 seek=64 conv=notrunc status=none
expect "resume_damaged_settings" 1 "b0.ckpt holds settings that no run can continue from \(--batch 0 is outside \[1, 65536\]\)" \
    timeout -k 5 20 ./train --resume --ckpt "$TMP/b0.ckpt" "${tiny[@]}"
cp "$TMP/r.ckpt" "$TMP/k9.ckpt" && printf '\011\000\000\000' | dd of="$TMP/k9.ckpt" bs=1 seek=92 conv=notrunc status=none
expect "checkpoint_bad_objective" 1 "bad header .*objective 9" ./gen --model "$TMP/k9.ckpt" --info
expect "init_ignores_model_flags" 0 "--init takes the model from the checkpoint: --embd 32 is ignored \(the model has 16\)" \
    ./train --init "$TMP/r.ckpt" "${tiny[@]}" --embd 32 --steps 1 --ckpt "$TMP/z.ckpt"
expect "new_run_settings_sources" 0 "settings: batch 4 \(flag\), seq 32 \(flag\), accum 1 \(default\)" \
    ./train "${tiny[@]}" --steps 1 --ckpt "$TMP/z.ckpt"
expect "truncation_warning" 0 "warning: [0-9]+ of [0-9]+ training samples .* truncated; --seq [0-9]+ fits 95% of the samples" \
    ./train "${tiny[@]}" --synthetic-len 20:30 --steps 1 --ckpt "$TMP/z.ckpt"
# the speed is the generation's: the prompt's prefill is timed apart (it counted in the tokens/s)
expect "gen_speed_without_prefill" 0 "20 prompt tokens, 2 generated in [0-9.]+s \([0-9.]+ tokens/s; the prompt's prefill took [0-9.]+s\)" \
    ./gen --model "$TMP/full.ckpt" --prompt-ids "$(seq -s ' ' 1 20)" --max-tokens 2 --stop -1
expect "gen_samples" 0 "4 prompt tokens, 5 generated in .*tokens/s" ./gen --model "$TMP/full.ckpt" --prompt-ids "1 5 7 9" \
    --max-tokens 5 --stop -1
expect "gen_info" 0 "trained 6 steps with cuset" ./gen --model "$TMP/full.ckpt" --info
# --threads, as train's: OpenMP threads in [1, 1024], for the modes that run the model on the
# CPU; not with --jobs N, whose sampling processes run 1 thread each, nor where no model runs
expect "gen_threads_zero" 2 "--threads expects a whole number in \[1, 1024\], got '0'" ./gen --model "$TMP/full.ckpt" \
    --prompt-ids 1 --threads 0
expect "gen_threads_not_a_number" 2 "--threads expects a whole number in \[1, 1024\], got 'x'" ./gen --model "$TMP/full.ckpt" \
    --prompt-ids 1 --threads x
expect "gen_threads_one" 0 "1 prompt tokens, 5 generated in .*tokens/s" ./gen --model "$TMP/full.ckpt" --prompt-ids 1 \
    --max-tokens 5 --stop -1 --threads 1
expect "gen_threads_with_info" 2 "--info runs no model: --threads goes with a prompt, --eval --model or --analyze" \
    ./gen --model "$TMP/full.ckpt" --info --threads 1
expect "gen_threads_with_jobs" 2 "--threads goes with --jobs 1: --eval --jobs N samples in N processes of 1 thread each" \
    ./gen --model "$TMP/full.ckpt" --eval x.jsonl --jobs 2 --threads 1
# what stdout does not take (/dev/full: a full disk) is a failure, not a success
expect "gen_sample_stdout_full" 1 "gen: writing to standard output failed: No space left on device" \
    sh -c './gen --model "$1" --prompt-ids 1 --max-tokens 5 >/dev/full' _ "$TMP/full.ckpt"
expect "gen_info_stdout_full" 1 "gen: writing to standard output failed" sh -c './gen --model "$1" --info >/dev/full' \
    _ "$TMP/full.ckpt"
expect "gen_info_and_export" 2 "give one of --analyze, --eval, --info, --export-hf or a prompt" ./gen --model "$TMP/full.ckpt" --info \
    --export-hf "$TMP/hf"
expect "gen_info_and_prompt" 2 "give one of --analyze, --eval, --info, --export-hf or a prompt" ./gen --model "$TMP/full.ckpt" --info \
    --prompt-ids 1
# damaged numbers: an accumulation of 16711681 (header slot 18) is refused by --init, which
# took it from the file without a check and crashed; a NaN weight (wte[0]) is refused on load
cp "$TMP/full.ckpt" "$TMP/accum.ckpt" && printf '\001\000\377\000' | dd of="$TMP/accum.ckpt" bs=1 seek=72 conv=notrunc status=none
expect "train_init_damaged_accum" 1 "holds --accum 16711681, outside \[1, 65536\]: the file is damaged" \
    ./train "${tiny[@]}" --init "$TMP/accum.ckpt" --steps 1 --ckpt "$TMP/z.ckpt"
cp "$TMP/full.ckpt" "$TMP/nan.ckpt" && printf '\000\000\300\177' | dd of="$TMP/nan.ckpt" bs=1 seek=256 conv=notrunc status=none
expect "gen_refuses_nan_weights" 1 "wte holds nan at element 0: a damaged file, or saved from a run that diverged" \
    ./gen --model "$TMP/nan.ckpt" --prompt-ids 1
# finite weights whose products overflow (four of 3e38 in wte's first row) give inf logits:
# refused when sampling, not sampled from
cp "$TMP/full.ckpt" "$TMP/big.ckpt"
for at in 256 260 264 268; do printf '\346\261\141\177' | dd of="$TMP/big.ckpt" bs=1 seek=$at conv=notrunc status=none; done
expect "gen_refuses_nonfinite_logits" 1 "the model's logits are not finite" ./gen --model "$TMP/big.ckpt" --prompt-ids 1
# a version-1 checkpoint (trained before the eq. 5 correction) still loads, and says so (made
# from a version 3 one: its version, and slot 41, the validation share, zero: reserved then)
cp "$TMP/full.ckpt" "$TMP/v1.ckpt" && printf '\001' | dd of="$TMP/v1.ckpt" bs=1 seek=8 conv=notrunc status=none \
    && printf '\0\0\0\0' | dd of="$TMP/v1.ckpt" bs=1 seek=164 conv=notrunc status=none
expect "gen_info_version_1" 0 "checkpoint version 1: CuSeT's windows before the eq. 5 correction" ./gen --model "$TMP/v1.ckpt" --info
expect "train_init_version_1_note" 0 "trained with CuSeT's window rule before the eq. 5 correction" \
    ./train "${tiny[@]}" --init "$TMP/v1.ckpt" --steps 1 --ckpt "$TMP/v1b.ckpt"
expect "gen_prompt_beyond_context" 2 "the model.s context is 32" ./gen --model "$TMP/full.ckpt" \
    --prompt-ids "$(seq -s ' ' 1 33)"
expect "gen_eval_option_alone" 2 "--jobs goes with --eval TASKS.jsonl" ./gen --model "$TMP/full.ckpt" --prompt-ids 1 --jobs 2
expect "gen_analyze_option_alone" 2 "--probe goes with --analyze FILE" ./gen --model "$TMP/full.ckpt" --prompt-ids 1 --probe 8
# a second --prompt is a second prompt, refused as --prompt with --prompt-file is (the last one won)
expect "gen_prompt_twice" 2 "--prompt is given twice: give one prompt" ./gen --model "$TMP/full.ckpt" --prompt x --prompt y
expect "gen_index_without_jsonl" 2 "--index goes with --prompt-jsonl" ./gen --model "$TMP/full.ckpt" --prompt-ids 1 --index 3
expect "gen_bad_token" 2 "not a token id" ./gen --model "$TMP/full.ckpt" --prompt-ids "1 99999"
# the message quotes the whole bad item: a long number, digits with letters after them
expect "gen_bad_token_quoted_whole" 2 "'99999999999999999999' is not a token id" ./gen --model "$TMP/full.ckpt" \
    --prompt-ids "1 99999999999999999999 2"
expect "gen_token_with_suffix" 2 "'12x' is not a token id" ./gen --model "$TMP/full.ckpt" --prompt-ids "1,12x,3"
# sampling's options (--seed, --temperature, ...) do nothing for --info, --analyze, --export-hf;
# --stop and --show-prompt nothing for --eval (its programs end at the end-of-sample token)
expect "gen_sampling_option_with_info" 2 "--seed goes with a prompt or --eval" ./gen --model "$TMP/full.ckpt" --info --seed 3
expect "gen_stop_with_eval" 2 "--stop goes with a prompt" ./gen --model "$TMP/full.ckpt" --eval x.jsonl --stop 3
expect "gen_index_with_eval" 2 "--index goes with --prompt-jsonl" ./gen --model "$TMP/full.ckpt" --eval x.jsonl --index 3
expect "gen_eval_model_and_programs" 2 "give --eval one of --model CKPT .* or --programs FILE .*, not both" \
    ./gen --model "$TMP/full.ckpt" --eval x.jsonl --programs p.jsonl
expect "gen_programs_with_sampling_option" 2 "--temperature goes with sampling, not with --programs" \
    ./gen --eval x.jsonl --programs p.jsonl --temperature 0.5
expect "gen_k_trailing_comma" 2 "--k expects values like 1,3 \(each in \[1, 1000\]\), got '1,3,'" \
    ./gen --eval x.jsonl --programs p.jsonl --k 1,3,
expect "gen_k_too_many" 2 "--k takes at most 16 values" ./gen --eval x.jsonl --programs p.jsonl --k "$(seq -s, 17)"
expect "gen_programs_with_samples" 2 "--samples goes with --model \(sampling\)" ./gen --eval x.jsonl --programs p.jsonl \
    --samples 3
expect "gen_stop_beyond_vocab" 2 "--stop 99999 is not a token id of this model" ./gen --model "$TMP/full.ckpt" \
    --prompt-ids 1 --stop 99999

echo "== text data: JSON lines and .cu directories, the tokenized cache, tokenizers that must match"
mkdir -p "$TMP/kernels/sub"
kernel='__global__ void scale(float *x, float a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n'
host='int main() {\n    dim3 block(256), grid((n + 255) / 256);\n    scale<<<grid, block>>>(x, 2.0f, n);\n    return 0;\n}\n'
for i in $(seq 1 24); do
    printf '{"prompt": "Task Name: scale %d\\nTask Description: multiply by a \\u0026 store", "completion": "%s%s"}\n' \
        "$i" "${kernel//n)/n + $i)}" "$host" >>"$TMP/tasks.jsonl"
done
printf "$kernel$host" >"$TMP/kernels/a.cu"; printf "$kernel" >"$TMP/kernels/sub/b.cu"; echo "not cuda" >"$TMP/kernels/notes.txt"
text_model=(--layers 1 --heads 2 --embd 16 --ctx 96 --seq 96 --batch 4 --vocab 300 --steps 2)
text=("${text_model[@]}" --val-frac 0.1)
expect "text_jsonl_trains_tokenizer" 0 "24 samples from .*tokenizer trained on it .*cached in .*tasks.jsonl.tok" \
    ./train --data "$TMP/tasks.jsonl" "${text[@]}" --ckpt "$TMP/t.ckpt"
# --val-data on resuming a run that held out --val-frac would train on those samples
expect "resume_val_data_refused" 2 "held out --val-frac 0.1 of its data for validation; resume it without --val-data" \
    ./train --resume --data "$TMP/tasks.jsonl" "${text_model[@]}" --val-data "$TMP/tasks.jsonl" --ckpt "$TMP/t.ckpt"
# the command a stopped run prints continues it as it is, run verbatim: its data, its validation
# set and its log (a path with a space and a quote in it)
mkdir -p "$TMP/rc d'ir"
./train --data "$TMP/tasks.jsonl" --val-data "$TMP/tasks.jsonl" "${text_model[@]}" --steps 3 --val-every 1 --stop-at 1 \
    --ckpt "$TMP/rc d'ir/r.ckpt" --log "$TMP/rc d'ir/r.jsonl" >"$TMP/rc.out" 2>&1
continue_with=$(sed -n 's/^stopped after step 1; .* continue with //p' "$TMP/rc.out")
if [ -n "$continue_with" ] && eval "./train $continue_with" >"$TMP/rc2.out" 2>&1 && grep -q "^done: 2 steps" "$TMP/rc2.out" &&
   [ "$(grep -c '"val_loss"' "$TMP/rc d'ir/r.jsonl")" = 3 ]; then ok "resume_command_printed_runs_verbatim"
else bad "resume_command_printed_runs_verbatim" "'$continue_with': $(tail -1 "$TMP/rc2.out" 2>/dev/null || tail -1 "$TMP/rc.out")"; fi
# a vocabulary too small for a tokenizer is the flag's error (exit 2), not the data's (it said "--data: ...", exit 1)
expect "text_vocab_too_small" 2 "^train: --vocab 100: a tokenizer for --data needs at least 259 ids" \
    ./train --data "$TMP/tasks.jsonl" "${text_model[@]}" --vocab 100 --ckpt "$TMP/v100.ckpt"
expect "text_jsonl_uses_cache" 0 "tokenized cache .*tasks.jsonl.tok" ./train --data "$TMP/tasks.jsonl" "${text[@]}" --ckpt "$TMP/t2.ckpt"
expect "text_tok_file_directly" 0 "24 samples from .*tasks.jsonl.tok" ./train --data "$TMP/tasks.jsonl.tok" "${text[@]}" --ckpt "$TMP/t3.ckpt"
# fine-tuning the model on the text it was trained on uses the cache its run made (the same tokenizer)
expect "finetune_uses_cache_of_same_tokenizer" 0 "data: 24 samples from .*tasks.jsonl \(tokenized cache .*tasks.jsonl.tok\)" \
    ./train --init "$TMP/t.ckpt" --data "$TMP/tasks.jsonl" --seq 96 --batch 4 --steps 1 --ckpt "$TMP/ft1.ckpt"
# ... also when the new model's tokenizer ran out of pairs before the --vocab asked for (2048 by default)
head -6 "$TMP/tasks.jsonl" >"$TMP/few.jsonl"
./train --data "$TMP/few.jsonl" "${text_model[@]}" --vocab 2048 --steps 1 --ckpt "$TMP/few.ckpt" >/dev/null 2>&1
expect "finetune_uses_cache_when_vocab_not_reached" 0 "data: 6 samples from .*few.jsonl \(tokenized cache .*few.jsonl.tok\)" \
    ./train --init "$TMP/few.ckpt" --data "$TMP/few.jsonl" --seq 96 --batch 4 --steps 1 --ckpt "$TMP/few2.ckpt"
head -5 "$TMP/tasks.jsonl" >"$TMP/val.jsonl"
expect "gen_analyze_json_over_model" 1 "the JSON path .*t.ckpt is also the model: the analysis would write over it" \
    ./gen --model "$TMP/t.ckpt" --analyze "$TMP/tasks.jsonl" --json "$TMP/t.ckpt"
expect "gen_analyze_json_over_data" 1 "the JSON path .*tasks.jsonl is also the data file" \
    ./gen --model "$TMP/t.ckpt" --analyze "$TMP/tasks.jsonl" --json "$TMP/./tasks.jsonl"
expect "gen_analyze_threads_one" 0 "confidence analysis: 5 samples" ./gen --model "$TMP/t.ckpt" --analyze "$TMP/val.jsonl" \
    --json "$TMP/threads.json" --threads 1
expect "gen_analyze_stdout_full" 1 "gen: writing to standard output failed" \
    sh -c './gen --model "$1" --analyze "$2" --json "$3" >/dev/full' _ "$TMP/t.ckpt" "$TMP/val.jsonl" "$TMP/val.json"
# a closed pipe (gen ... | head) fails the writes, not gen (SIGPIPE killed it): --json is written whole, exit 1
out=$("$PYTHON" - ./gen --model "$TMP/t.ckpt" --analyze "$TMP/val.jsonl" --json "$TMP/pipe.json" <<'PY' 2>&1
import os, subprocess, sys
r, w = os.pipe()
os.close(r)  # stdout: a pipe whose reader is gone
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
print(p.returncode, p.stderr.decode().strip().splitlines()[-1:])
PY
)
if [ "$out" = "1 ['gen: writing to standard output failed: Broken pipe']" ] &&
   "$PYTHON" -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/pipe.json"; then ok "gen_closed_pipe_completes_json"
else bad "gen_closed_pipe_completes_json" "$out"; fi
expect "gen_analyze_json_unwritable" 1 "none/a.json: cannot be written there \(the save writes .*\.tmp\.[0-9]* first: No such file" \
    ./gen --model "$TMP/t.ckpt" --analyze "$TMP/tasks.jsonl" --json "$TMP/none/a.json"
# finite weights whose logits overflow (as gen_refuses_nonfinite_logits) stop the analysis:
# no report of nan, no JSON with bare nan in it
cp "$TMP/t.ckpt" "$TMP/big_t.ckpt"
for at in 256 260 264 268; do printf '\346\261\141\177' | dd of="$TMP/big_t.ckpt" bs=1 seek=$at conv=notrunc status=none; done
expect "gen_analyze_refuses_nonfinite_logits" 1 "val.jsonl: sample 0: the model's logits are not finite" \
    ./gen --model "$TMP/big_t.ckpt" --analyze "$TMP/val.jsonl" --json "$TMP/big_t.json"
[ ! -e "$TMP/big_t.json" ] && ok "gen_analyze_nonfinite_writes_no_json" || bad "gen_analyze_nonfinite_writes_no_json" \
    "$(head -c 200 "$TMP/big_t.json")"
# with no CUDA-sensitive token there is nothing to compare: n/a, not the statistics of an empty set
echo '{"prompt": "Task Name: plain", "completion": "int x = 1; int y = x + 2;"}' >"$TMP/plain.jsonl"
expect "gen_analyze_no_cuda_tokens" 0 "mean confidence +n/a \(no CUDA-sensitive tokens\).*two-sample KS +n/a" \
    sh -c './gen --model "$1" --analyze "$2" --json "$3" | tr "\n" " "' _ "$TMP/t.ckpt" "$TMP/plain.jsonl" "$TMP/plain.json"
# samples the analysis leaves out or cuts short are counted, each with its reason (context 96:
# the two tasks and the long one are cut, the empty one left out)
{ head -2 "$TMP/tasks.jsonl"; echo '{"prompt": "Task Name: none", "completion": ""}'
  printf '{"prompt": "Task Name: long", "completion": "%s"}\n' "$(printf 'x = x + 1; %.0s' $(seq 60))"; } >"$TMP/odd.jsonl"
expect "gen_analyze_notes_left_out_and_cut" 0 "note: 1 samples left out: their completion is empty" \
    ./gen --model "$TMP/t.ckpt" --analyze "$TMP/odd.jsonl" --json "$TMP/odd.json"
expect "gen_analyze_notes_cut" 0 "note: 3 samples cut at the model's context of 96 tokens: [0-9]+ of their target tokens" \
    ./gen --model "$TMP/t.ckpt" --analyze "$TMP/odd.jsonl" --json "$TMP/odd.json"
expect "gen_analyze_only_empty" 1 "no sample of 2..2 has a target token to analyse \(0 with a prompt that fills .*, 1 with an empty completion\)" \
    ./gen --model "$TMP/t.ckpt" --analyze "$TMP/odd.jsonl" --first 2 --count 1 --json "$TMP/odd.json"
# an analysis stopped half way leaves no file (the JSON is built in memory, written when complete);
# SIGTERM, as a background job ignores SIGINT
for i in $(seq 2000); do cat "$TMP/tasks.jsonl"; done >"$TMP/many.jsonl" # 48,000 samples: 10 s or more
./gen --model "$TMP/t.ckpt" --analyze "$TMP/many.jsonl" --json "$TMP/many.json" >/dev/null 2>"$TMP/many.err" &
pid=$!
until grep -q "^analyze: " "$TMP/many.err" || ! kill -0 $pid 2>/dev/null; do sleep 0.1; done # 2 s in
kill -TERM $pid 2>/dev/null; wait $pid; rc=$?
left=$(ls "$TMP" | grep -E '^many\.json($|\.tmp)')
if [ $rc -ne 143 ]; then bad "gen_analyze_interrupted_leaves_nothing" "exit $rc before the interrupt (make many.jsonl longer)"
elif [ -n "$left" ]; then bad "gen_analyze_interrupted_leaves_nothing" "left $left"
else ok "gen_analyze_interrupted_leaves_nothing"; fi
# the log of --ckpt tasks is tasks.jsonl: the run would write over its data; and no output
# over a token cache, the --init checkpoint or the other output (as a new file too)
expect "train_log_over_data" 1 "the log .*tasks.jsonl is also --data .*tasks.jsonl: the run would write over it" \
    ./train --data "$TMP/tasks.jsonl" "${text[@]}" --ckpt "$TMP/tasks"
expect "train_ckpt_over_val_data" 1 "--ckpt .*val.jsonl is also --val-data .*val.jsonl: the run would write over it" \
    ./train --data "$TMP/tasks.jsonl" --val-data "$TMP/val.jsonl" "${text_model[@]}" --ckpt "$TMP/val.jsonl"
expect "train_ckpt_over_token_cache" 1 "--ckpt .*tasks.jsonl.tok is also --data's token cache" \
    ./train --data "$TMP/tasks.jsonl" "${text[@]}" --ckpt "$TMP/tasks.jsonl.tok"
expect "train_log_over_init" 1 "--log .*t.ckpt is also --init .*t.ckpt" \
    ./train --init "$TMP/t.ckpt" --data "$TMP/tasks.jsonl" --steps 1 --ckpt "$TMP/ft2.ckpt" --log "$TMP/t.ckpt"
expect "train_log_over_ckpt" 1 "--ckpt .*new_same.ckpt is also --log .*new_same.ckpt" \
    ./train --data "$TMP/tasks.jsonl" "${text[@]}" --ckpt "$TMP/new_same.ckpt" --log "$TMP/./new_same.ckpt"
expect "text_val_data" 0 "validation data: 5 samples from .*val.jsonl" ./train --data "$TMP/tasks.jsonl" --val-data "$TMP/val.jsonl" \
    "${text_model[@]}" --ckpt "$TMP/v.ckpt"
# --val-data samples whose prompt fills the row sit out with a note, as --data's do (they went unsaid)
{ head -3 "$TMP/val.jsonl"; for i in 1 2; do printf '{"prompt": "%s", "completion": "x"}\n' "$(printf 'long prompt %d ' $(seq 60))"
  done; } >"$TMP/val_long.jsonl"
expect "val_data_sit_out_note" 0 "note: 2 of 5 --val-data samples sit out: their prompt fills the row of 96 tokens" \
    ./train --data "$TMP/tasks.jsonl" --val-data "$TMP/val_long.jsonl" "${text_model[@]}" --ckpt "$TMP/v.ckpt"
expect "val_data_holds_nothing_out" 0 "24 train / 5 validation" \
    ./train --data "$TMP/tasks.jsonl" --val-data "$TMP/val.jsonl" "${text_model[@]}" --ckpt "$TMP/v.ckpt"
expect "val_frac_and_val_data" 2 "give --val-frac F or --val-data SRC, not both" ./train --data "$TMP/tasks.jsonl" \
    --val-data "$TMP/val.jsonl" "${text[@]}" --ckpt "$TMP/v.ckpt"
expect "synthetic_flag_with_text" 2 "--synthetic-len goes with --data synthetic" ./train --data "$TMP/tasks.jsonl" \
    --synthetic-len 3:9 "${text[@]}" --ckpt "$TMP/v.ckpt"
expect "text_no_validation_note" 0 "note: no validation: --val-frac 0.01 of 24 samples holds out none" ./train \
    --data "$TMP/tasks.jsonl" "${text_model[@]}" --val-frac 0.01 --ckpt "$TMP/v.ckpt"
expect "val_every_without_validation" 0 "note: --val-every 1 does nothing: --val-frac 0 holds out no validation" \
    ./train --data "$TMP/tasks.jsonl" "${text_model[@]}" --val-frac 0 --val-every 1 --ckpt "$TMP/v.ckpt"
expect "text_nothing_fits" 2 "no sample fits: each prompt fills the row of 8 tokens; raise --seq" ./train \
    --data "$TMP/tasks.jsonl" "${text[@]}" --seq 8 --ckpt "$TMP/v.ckpt"
# gen given an exported (Hugging Face) directory says how to make a checkpoint of it
./gen --model "$TMP/t.ckpt" --export-hf "$TMP/hf_t" >/dev/null 2>&1
expect "gen_model_is_hf_directory" 1 "hf_t is a GPT-2-family model .*fine-tune it with ./train --init" \
    ./gen --model "$TMP/hf_t" --prompt "x"
expect "export_hf_into_a_file" 1 "--export-hf: .*t2.ckpt exists and is not a directory" ./gen --model "$TMP/t.ckpt" \
    --export-hf "$TMP/t2.ckpt"
expect "text_cu_directory" 0 "2 samples from .*kernels" ./train --data "$TMP/kernels/" "${text[@]}" --val-frac 0 --ckpt "$TMP/k.ckpt"
[ -f "$TMP/kernels.tok" ] && ok "cu_directory_cache_beside_it" || bad "cu_directory_cache_beside_it" "no $TMP/kernels.tok"
expect "finetune_rejects_foreign_tok_file" 1 "another tokenizer than the model's" ./train --init "$TMP/k.ckpt" \
    --data "$TMP/tasks.jsonl.tok" --seq 96 --batch 4 --steps 1 --ckpt "$TMP/ft3.ckpt"
expect "finetune_uses_checkpoint_tokenizer" 0 "tokenized with the model's tokenizer" ./train --init "$TMP/k.ckpt" \
    --data "$TMP/tasks.jsonl" --seq 96 --batch 4 --steps 1 --ckpt "$TMP/ft2.ckpt"
# An export that fails part-way (a file-size limit here, as a full disk) leaves the directory
# as it was: the earlier export's files, no temporary, no new config.json beside the old model.
./gen --model "$TMP/k.ckpt" --export-hf "$TMP/hf_keep" >/dev/null 2>&1
before=$(cat "$TMP"/hf_keep/* | cksum)
./train --data "$TMP/kernels/" "${text[@]}" --layers 2 --val-frac 0 --ckpt "$TMP/k2.ckpt" >/dev/null 2>&1
expect "export_hf_failure_keeps_directory" 1 "model.safetensors: write failed" \
    bash -c "trap '' XFSZ; ulimit -f 8; exec ./gen --model '$TMP/k2.ckpt' --export-hf '$TMP/hf_keep'"
[ "$(cat "$TMP"/hf_keep/* | cksum)" = "$before" ] && [ "$(ls "$TMP/hf_keep" | wc -l)" -eq 4 ] \
    && ok "export_hf_failure_leaves_files_as_they_were" \
    || bad "export_hf_failure_leaves_files_as_they_were" "$(ls "$TMP/hf_keep" | tr '\n' ' ')"
expect "finetune_text_on_synthetic_model" 2 "has no tokenizer" ./train --init "$TMP/full.ckpt" --data "$TMP/tasks.jsonl" \
    --seq 32 --steps 1 --ckpt "$TMP/ft4.ckpt"
printf '{"prompt": "a", "completion": "b"}\n{"prompt": "a", "completion": "b\\q"}\n' >"$TMP/bad.jsonl"
expect "malformed_json_line_column" 1 "bad.jsonl:2:33: " ./train --data "$TMP/bad.jsonl" "${text[@]}" --ckpt "$TMP/b.ckpt"
expect "unknown_data_kind" 1 "unknown kind of data" ./train --data "$TMP/kernels/notes.txt" "${text[@]}" --ckpt "$TMP/b.ckpt"
expect "gen_text_prompt" 0 "prompt tokens, 8 generated" ./gen --model "$TMP/t.ckpt" --prompt "Task Name: scale" --max-tokens 8 \
    --stop -1
expect "gen_prompt_from_stdin" 0 "prompt tokens" sh -c "echo 'Task Name: scale' | ./gen --model '$TMP/t.ckpt' --max-tokens 4"
expect "gen_long_text_prompt" 2 "the model's context is 96" ./gen --model "$TMP/t.ckpt" --prompt "$(head -c 2000 "$TMP/tasks.jsonl")"
expect "gen_ids_model_needs_ids" 2 "no tokenizer" ./gen --model "$TMP/full.ckpt" --prompt "hello"
expect "gen_prompt_from_jsonl" 0 "Task Name: scale 3" ./gen --model "$TMP/t.ckpt" --prompt-jsonl "$TMP/tasks.jsonl" --index 2 \
    --show-prompt --max-tokens 4
# --prompt-jsonl reads the "prompt" member alone: a task without a "completion" is a prompt too
printf '{"prompt": "Task Name: scale"}\n' >"$TMP/prompt_only.jsonl"
expect "gen_prompt_jsonl_without_completion" 0 "prompt tokens, 2 generated" ./gen --model "$TMP/t.ckpt" \
    --prompt-jsonl "$TMP/prompt_only.jsonl" --max-tokens 2 --stop -1
expect "gen_jsonl_index_past_end" 2 "holds 24 tasks" ./gen --model "$TMP/t.ckpt" --prompt-jsonl "$TMP/tasks.jsonl" --index 24
expect "gen_show_prompt_of_ids" 2 "--show-prompt goes with a text prompt" ./gen --model "$TMP/full.ckpt" --prompt-ids 1 --show-prompt
expect "gen_seed_out_of_range" 2 "--seed expects a whole number in \[0, 9007199254740991\], got '9007199254740993'" \
    ./gen --model "$TMP/full.ckpt" --prompt-ids 1 --seed 9007199254740993
# a seed past 2^31, as --eval gives its samples (SEED + 1000 K + s), draws that sample again
expect "gen_seed_of_an_eval_sample" 0 "1 prompt tokens, 2 generated" ./gen --model "$TMP/full.ckpt" --prompt-ids 1 \
    --seed 2147486648 --max-tokens 2 --stop -1
expect "gen_missing_prompt_file" 1 "the prompt: .*cannot open" ./gen --model "$TMP/t.ckpt" --prompt-file "$TMP/none.txt"

echo "== the CUDA task corpus (data/): determinism, splits, spans against the annotator, references, nvcc"
checks test_corpus ./test/test_corpus
# a spec read back may ask for "perm" (a permutation, written as int32) on int32 inputs only:
# on float16 it overran the input's buffer (a segfault in --materialize); an unknown gen is refused
./data/corpus --out "$TMP/perm" --families convert_half --train 0 --val 0 --test 1 --seed 3 >/dev/null 2>&1
mkdir -p "$TMP/perm_half" "$TMP/perm_gauss"
sed 's/"gen":"uniform"/"gen":"perm"/' "$TMP/perm/test.jsonl" >"$TMP/perm_half/test.jsonl"
sed 's/"gen":"uniform"/"gen":"gauss"/' "$TMP/perm/test.jsonl" >"$TMP/perm_gauss/test.jsonl"
expect "corpus_spec_perm_needs_int32" 2 "gen perm \(a permutation of 0..count-1\) needs dtype int32, not float" \
    ./data/corpus --materialize "$TMP/perm_half" --split test --index 0 --to "$TMP/perm_wd"
expect "corpus_spec_unknown_gen" 2 "bad gen 'gauss' \(uniform or perm\)" \
    ./data/corpus --materialize "$TMP/perm_gauss" --split test --index 0 --to "$TMP/perm_wd2"
# no program declares a name twice in one block of a function (one of the default corpus's did), read
# from the text: the default corpus (as `make data` writes it) and 10,000 tasks of a fresh seed
names_seed=$((RANDOM + 1)) out="data/corpus failed"
if ./data/corpus --out "$TMP/names_default" >/dev/null 2>&1 \
    && ./data/corpus --out "$TMP/names" --seed $names_seed --train 10000 --val 0 --test 0 >/dev/null 2>&1 \
    && out=$("$PYTHON" test/check_names.py "$TMP"/names_default/*.jsonl "$TMP/names/train.jsonl" 2>&1); then
    ok "corpus_names_declared_once (seed $names_seed): $out"
else bad "corpus_names_declared_once" "seed $names_seed: $(echo "$out" | head -3 | tr '\n' ' ')"; fi

# a seed gives the same corpus on every machine: data/corpus built by the Makefile's own
# command for a CPU with fused multiply-adds (x86-64-v3; aarch64 has them always) writes the
# same bytes, and the same inputs and expected outputs, as the plain build (fresh seed)
if [ "$(uname -m)" = x86_64 ] && grep -qw fma /proc/cpuinfo; then
    cmd=$(make -s -n -B data/corpus NVCC= | grep -m1 'data/corpus\.c')
    seed=$RANDOM same=1
    eval "${cmd/ -o data\/corpus / -march=x86-64-v3 -o $TMP/corpus_fma }" 2>"$TMP/fma.err" || same=0
    for c in data/corpus "$TMP/corpus_fma"; do
        "$c" --out "$TMP/fma_${c##*/}" --seed $seed --train 300 --val 20 --test 40 >/dev/null 2>&1 || same=0
        for k in 0 7 13 22 31 39; do
            "$c" --materialize "$TMP/fma_${c##*/}" --split test --index $k --to "$TMP/fma_${c##*/}/m$k" >/dev/null 2>&1 || same=0
        done
    done
    if [ $same = 1 ] && diff -r "$TMP/fma_corpus" "$TMP/fma_corpus_fma" >/dev/null; then ok "corpus_same_bytes_with_fma (seed $seed)"
    else bad "corpus_same_bytes_with_fma" "seed $seed: $(diff -rq "$TMP/fma_corpus" "$TMP/fma_corpus_fma" 2>&1 | head -2 | tr '\n' ' ')$(head -2 "$TMP/fma.err")"; fi
else echo "SKIP corpus_same_bytes_with_fma: not an x86-64 CPU with FMA"; skip=$((skip + 1)); fi

echo "== evaluation: pass@k, the sandboxed runner, gen --eval end to end (test/test_eval)"
checks test_eval ./test/test_eval

# Ctrl-C during gen --eval, or `pkill -9 -f` of its command line, leaves no work directory
# behind (its guardian, a process with another command line, removes it), and the results
# file of an earlier run as it was (written beside it and renamed when complete)
./data/corpus --out "$TMP/evi" --families elementwise_binary --train 1 --val 1 --test 6 --seed 5 >/dev/null 2>&1
"$PYTHON" -c 'import json, sys
for i, l in enumerate(open(sys.argv[1])): print(json.dumps({"index": i, "program": json.loads(l)["completion"]}))' \
    "$TMP/evi/test.jsonl" >"$TMP/evi/programs.jsonl"
mkdir -p "$TMP/evi/tmp" && chmod o+x "$TMP" "$TMP/evi" "$TMP/evi/tmp" # the programs run as nobody under root
# a --corpus that is not cuset's data/corpus (it writes no task) stops the run, not one task
expect "eval_corpus_not_cuset" 1 "--materialize exited 0 for task 0 but wrote no spec.json .*is --corpus cuset's data/corpus" \
    ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 --corpus /bin/true --results "$TMP/evi/t.jsonl"
for how in interrupted:-INT pkill_9_f:-9; do # (in a subshell that keeps its "Killed" line to itself)
    out="$TMP/evi/out.${how%%:*}"
    echo '{"earlier": 1}' >"$TMP/evi/earlier.jsonl"
    (TMPDIR="$TMP/evi/tmp" ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" \
        --results "$TMP/evi/earlier.jsonl" >"$out" 2>&1; true) 2>/dev/null &
    for _ in $(seq 300); do grep -q "task test-00000" "$out" && break; sleep 0.1; done
    killed=0; pkill "${how#*:}" -f "gen --eval $TMP/evi/test.jsonl" && killed=1; wait $!
    for _ in $(seq 100); do [ -z "$(ls "$TMP/evi/tmp")" ] && break; sleep 0.1; done
    # (gen was stopped mid-run: the signal reached it, and it printed no report)
    if [ $killed = 1 ] && grep -q "task test-00000" "$out" && ! grep -qE "^functional +pass@1" "$out" \
        && [ -z "$(ls "$TMP/evi/tmp")" ]; then ok "eval_${how%%:*}_leaves_no_work_dir"
    else bad "eval_${how%%:*}_leaves_no_work_dir" "signalled: $killed; left: $(ls "$TMP/evi/tmp") $(tail -c 200 "$out")"; fi
    if [ "$(cat "$TMP/evi/earlier.jsonl")" = '{"earlier": 1}' ] && ! ls "$TMP/evi" | grep -q 'earlier.jsonl.tmp'; then
        ok "eval_${how%%:*}_keeps_earlier_results"
    else bad "eval_${how%%:*}_keeps_earlier_results" "$(ls "$TMP/evi" | grep earlier) $(head -c 100 "$TMP/evi/earlier.jsonl")"; fi
done
# `kill -9` of gen alone (not its workers): each worker learns of it (PR_SET_PDEATHSIG) and
# takes its program down, so a program that would run to its 60 s timeout is gone at once
printf '%s\n' '{"index": 0, "program": "#include <unistd.h>\nint main() { for (;;) sleep(1); }\n"}' >"$TMP/evi/hang.jsonl"
(TMPDIR="$TMP/evi/tmp" ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/hang.jsonl" --count 1 --timeout 60 \
    >"$TMP/evi/out.hang" 2>&1 & echo $! >"$TMP/evi/gen.pid"; wait) 2>/dev/null &
for _ in $(seq 600); do pgrep -f "$TMP/evi/tmp/cuset_eval.*/program-0" >/dev/null && break; sleep 0.1; done
hang_ran=$(pgrep -fc "$TMP/evi/tmp/cuset_eval.*/program-0")
kill -9 "$(cat "$TMP/evi/gen.pid")"; wait $!
for _ in $(seq 100); do [ -z "$(ls "$TMP/evi/tmp")" ] && ! pgrep -f "$TMP/evi/tmp/cuset_eval" >/dev/null && break; sleep 0.1; done
if [ "$hang_ran" -gt 0 ] && [ -z "$(ls "$TMP/evi/tmp")" ] && ! pgrep -f "$TMP/evi/tmp/cuset_eval" >/dev/null; then
    ok "eval_kill_9_of_gen_stops_its_programs"
else bad "eval_kill_9_of_gen_stops_its_programs" "ran: $hang_ran; left: $(ls "$TMP/evi/tmp") $(pgrep -fa "$TMP/evi/tmp/cuset_eval" | head -2)"; fi
# the disk watch counts what a sandboxed program and its builds write in their directory, not
# what other jobs write meanwhile: honest programs pass while 64 MiB files come and go beside them
(while :; do dd if=/dev/zero of="$TMP/evi/busy" bs=1M count=64 conv=fsync status=none; rm -f "$TMP/evi/busy"; done) &
busy=$!
expect "eval_disk_limit_ignores_other_jobs" 0 "functional +pass@1 100.00%" ./gen --eval "$TMP/evi/test.jsonl" \
    --programs "$TMP/evi/programs.jsonl" --count 3 --disk-limit 16 --results "$TMP/evi/r.jsonl"
kill $busy; wait $busy 2>/dev/null; rm -f "$TMP/evi/busy"
# a program cannot lift its own 8 GiB address-space limit by holding the name of
# AddressSanitizer's runtime (the harness once looked for those bytes in the binary)
"$PYTHON" -c 'import json, sys
guard = """#include <stdio.h>
#include <unistd.h>
#include <sys/resource.h>
static const char *marker = "__asan_init";
__attribute__((constructor)) static void limit_or_fail(void) {
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur == RLIM_INFINITY) { fputs(marker, stderr); _exit(1); }
}
"""
print(json.dumps({"index": 0, "program": guard + json.loads(open(sys.argv[1]).readline())["completion"]}))' \
    "$TMP/evi/test.jsonl" >"$TMP/evi/asan_name.jsonl"
expect "eval_memory_limit_not_lifted_by_program" 0 "functional +pass@1 100.00%" ./gen --eval "$TMP/evi/test.jsonl" \
    --programs "$TMP/evi/asan_name.jsonl" --count 1 --runner emu --results "$TMP/evi/asan_r.jsonl"
# nvcc found through a relative PATH entry still builds the programs (in their own directories)
if [ -x /usr/local/cuda/bin/nvcc ]; then
    expect "eval_nvcc_from_relative_path" 0 "functional +pass@1 100.00%" bash -c 'cd /usr/local/cuda && PATH=bin:$PATH exec \
        "$1/gen" --eval "$2/test.jsonl" --programs "$2/programs.jsonl" --count 1 --results "$2/rel.jsonl"' _ "$PWD" "$TMP/evi"
else echo "SKIP eval_nvcc_from_relative_path: no /usr/local/cuda/bin/nvcc"; skip=$((skip + 1)); fi
# a programs file that starts with a byte order mark reads like a tasks file that does
{ printf '\xEF\xBB\xBF'; cat "$TMP/evi/programs.jsonl"; } >"$TMP/evi/bom.jsonl"
expect "eval_programs_with_byte_order_mark" 0 "functional +pass@1 100.00%" ./gen --eval "$TMP/evi/test.jsonl" \
    --programs "$TMP/evi/bom.jsonl" --count 1 --results "$TMP/evi/bom_r.jsonl"
# a program is its bytes, NUL bytes included (a model can write one): the results file holds it
# whole (a copy that stopped at the NUL made the rest bytes read past the copy's end)
"$PYTHON" -c 'import json, sys
p = json.loads(open(sys.argv[1]).readline())["completion"].replace("\n", "\n// \u0000 a NUL byte\n", 1)
print(json.dumps({"index": 0, "program": p}))' "$TMP/evi/test.jsonl" >"$TMP/evi/nul.jsonl"
./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/nul.jsonl" --count 1 --results "$TMP/evi/nul_r.jsonl" >/dev/null 2>&1
if "$PYTHON" -c 'import json, sys
given = json.loads(open(sys.argv[1]).readline())["program"]
got = json.loads(open(sys.argv[2]).readline())["program"]
sys.exit(0 if given == got and "\0" in got else 1)' "$TMP/evi/nul.jsonl" "$TMP/evi/nul_r.jsonl"; then ok "eval_program_with_nul_byte"
else bad "eval_program_with_nul_byte" "the results file's program differs from the one given: $(head -c 300 "$TMP/evi/nul_r.jsonl")"; fi
# --cache: a rerun takes every result from the cache, with the same numbers; a changed tool
# (here the emulator's runtime, in a copy of emu/) is not answered with the old one's results
cp -r emu "$TMP/emu2" && chmod -R o+rX "$TMP/emu2"
cache_run() { ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 2 --runner emu \
    --emu "$TMP/emu2/nvcc-emu" --cache "$TMP/evi/cache" --results "$TMP/evi/r.jsonl" 2>&1 | grep -E "^evaluated|pass@1"; }
first=$(cache_run); second=$(cache_run)
if grep -q "0 results from the cache" <<<"$first" && grep -q "2 results from the cache" <<<"$second" \
    && grep -q pass@1 <<<"$first" && [ "$(grep pass@1 <<<"$first")" = "$(grep pass@1 <<<"$second")" ]; then
    ok "eval_cache_reuses_results"
else bad "eval_cache_reuses_results" "first: $first; second: $second"; fi
echo "// changed" >>"$TMP/emu2/cuemu.h"
expect "eval_cache_misses_a_changed_emulator" 0 "0 results from the cache" cache_run
# the environment that reaches the programs (here an emulator setting) is part of the key too
cache_run >/dev/null # the changed emulator's results, cached
out=$(CUEMU_REORDER=1 cache_run)
if grep -q "0 results from the cache" <<<"$out"; then ok "eval_cache_misses_another_setting"
else bad "eval_cache_misses_another_setting" "with CUEMU_REORDER=1: $out"; fi
# an output never writes over an input or the other output: the files stay whole
cp "$TMP/evi/test.jsonl" "$TMP/evi/test.keep" && cp "$TMP/evi/programs.jsonl" "$TMP/evi/programs.keep"
expect "eval_results_over_tasks" 2 "--results .*test.jsonl is also --eval .*test.jsonl: the evaluation would write over it" \
    ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 --results "$TMP/evi/test.jsonl"
expect "eval_summary_over_programs" 2 "--summary .*programs.jsonl is also --programs .*programs.jsonl" \
    ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 --summary "$TMP/evi/../evi/programs.jsonl"
expect "eval_summary_over_results" 2 "--summary .*new.json is also --results .*new.json" ./gen --eval "$TMP/evi/test.jsonl" \
    --programs "$TMP/evi/programs.jsonl" --count 1 --results "$TMP/evi/new.json" --summary "$TMP/evi/./new.json"
if cmp -s "$TMP/evi/test.jsonl" "$TMP/evi/test.keep" && cmp -s "$TMP/evi/programs.jsonl" "$TMP/evi/programs.keep"; then
    ok "eval_inputs_kept_whole"
else bad "eval_inputs_kept_whole" "the tasks or programs file changed"; fi
# ... nor over a tool the run runs: the corpus program, the emulator, nvcc
cp data/corpus "$TMP/evi/corpus.copy" && printf '#!/bin/sh\nexit 1\n' >"$TMP/evi/nvcc" && chmod +x "$TMP/evi/nvcc"
expect "eval_results_over_corpus" 2 "--results .*corpus.copy is also --corpus .*corpus.copy: the evaluation would write over it" \
    ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 --corpus "$TMP/evi/corpus.copy" \
    --results "$TMP/evi/corpus.copy"
expect "eval_results_over_emulator" 2 "--results .*nvcc-emu is also --emu .*nvcc-emu" ./gen --eval "$TMP/evi/test.jsonl" \
    --programs "$TMP/evi/programs.jsonl" --count 1 --runner emu --emu "$TMP/emu2/nvcc-emu" --results "$TMP/emu2/nvcc-emu"
expect "eval_summary_over_nvcc" 2 "--summary .*nvcc is also --nvcc .*nvcc" ./gen --eval "$TMP/evi/test.jsonl" \
    --programs "$TMP/evi/programs.jsonl" --count 1 --nvcc "$TMP/evi/nvcc" --summary "$TMP/evi/nvcc"
# ... nor into the emulator's runtime beside it (cuemu.h, pch/, include/: new files count) or
# over gen itself (a copy of it, here, run with the tools of the checkout)
expect "eval_results_over_emulator_runtime" 2 "--results .*emu2/include/cuda.h is inside the emulator's headers .*emu2/include: \
the evaluation would write into it" ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 \
    --runner emu --emu "$TMP/emu2/nvcc-emu" --results "$TMP/emu2/include/cuda.h"
expect "eval_summary_over_emulator_pch" 2 "--summary .*emu2/pch/new.json is inside the emulator's precompiled runtime" \
    ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 --runner emu --emu "$TMP/emu2/nvcc-emu" \
    --summary "$TMP/emu2/pch/new.json"
expect "eval_results_over_emulator_header" 2 "--results .*emu2/\./cuemu.h is also the emulator's runtime .*emu2/cuemu.h" \
    ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 --runner emu --emu "$TMP/emu2/nvcc-emu" \
    --results "$TMP/emu2/./cuemu.h"
cp gen "$TMP/evi/gen.copy"
expect "eval_results_over_gen" 2 "--results .*gen.copy is also gen's own executable .*gen.copy: the evaluation would write over it" \
    "$TMP/evi/gen.copy" --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 --corpus data/corpus \
    --runner emu --emu emu/nvcc-emu --results "$TMP/evi/gen.copy"
if cmp -s data/corpus "$TMP/evi/corpus.copy" && cmp -s emu/nvcc-emu "$TMP/emu2/nvcc-emu" && cmp -s emu/include/cuda.h "$TMP/emu2/include/cuda.h" \
    && cmp -s gen "$TMP/evi/gen.copy" && [ ! -e "$TMP/emu2/pch/new.json" ] && [ -s "$TMP/evi/nvcc" ]; then
    ok "eval_tools_kept_whole"
else bad "eval_tools_kept_whole" "the corpus program, the emulator, its runtime, gen or nvcc changed"; fi
# the report says 1 program, 1 job, 1 task (it said 1 programs, 1 jobs, 1 tasks)
expect "eval_report_singular" 0 "eval: .*, 1 task \(of tasks 0..0\).*evaluated: 1 program in .* 1 job\), 0 results from the cache.*outcomes of 1 program:" \
    sh -c './gen --eval "$1" --programs "$2" --count 1 --results "$3" | tr "\n" " "' _ "$TMP/evi/test.jsonl" \
    "$TMP/evi/programs.jsonl" "$TMP/evi/one.jsonl"
# prompts longer than the model's context (96: the text model's) stop the run before any is
# sampled, with one message that counts and names them (it stopped at the first, once per
# sampling process); nothing runs, so no sandbox is needed
expect "eval_prompts_too_long_before_sampling" 2 "^gen: task 0's prompt is [0-9]+ tokens, but the model's context is 96; 3 of tasks 0..2 have a prompt too long for the model \(also tasks 1, 2\): sample from a model with a longer context, or leave them out with --first and --count$" \
    ./gen --model "$TMP/t.ckpt" --eval "$TMP/evi/test.jsonl" --count 3 --samples 1 --k 1 --jobs 2 --unsafe-no-sandbox \
    --results "$TMP/evi/long.jsonl"
# every sample's seed (SEED + 1000 K + s) is one --seed takes, to draw that sample again
expect "eval_sample_seeds_past_largest" 2 "--seed 9007199254740991: the last sample, of task 1, would take seed 9007199254741991 .*give a smaller --seed" \
    ./gen --model "$TMP/t.ckpt" --eval "$TMP/evi/test.jsonl" --count 2 --samples 1 --k 1 --seed 9007199254740991 \
    --unsafe-no-sandbox --results "$TMP/evi/seed.jsonl"
# without a GPU, a launch that a GPU would refuse fails under the emulator too. refused_eval
# NAME ERROR KERNEL LAUNCH BIG SMALL: two programs, task 0's reference run after KERNEL's
# LAUNCH (%d: the threads per block) with BIG threads (refused: the program exits 1, a crash
# whose message has ERROR, the runtime's string for the error a GPU gives) and with SMALL
# (runs: a pass)
refused_eval() {
    local name=$1 error=$2 out=$TMP/evi/$1
    "$PYTHON" - "$TMP/evi/test.jsonl" "${@:3}" >"$out.jsonl" <<'PY'
import json, re, sys
ref = json.loads(open(sys.argv[1]).readline())["completion"]
ref, n = re.subn(r"\bint main\((void)?\)", "static int reference_main(void)", ref)
assert n == 1, "no int main() in task 0's reference"
for threads in sys.argv[4:6]:
    main = ("int main(void) {\n    float *x;\n    cudaMalloc(&x, 2048 * sizeof(float));\n    %s\n"
            "    cudaError_t e = cudaGetLastError();\n"
            "    if (e != cudaSuccess) { fprintf(stderr, \"launch: %%s\\n\", cudaGetErrorString(e)); return 1; }\n"
            "    return reference_main();\n}\n") % (sys.argv[3] % int(threads))
    print(json.dumps({"index": 0, "program": ref + sys.argv[2] + main}))
PY
    ./gen --eval "$TMP/evi/test.jsonl" --programs "$out.jsonl" --runner emu --results "$out.r.jsonl" >"$out.out" 2>&1
    local first second
    first=$(sed -n 1p "$out.r.jsonl") second=$(sed -n 2p "$out.r.jsonl")
    if grep -q '"status": "crash"' <<<"$first" && grep -q "$error" <<<"$first" \
        && grep -q '"status": "pass"' <<<"$second"; then ok "$name"
    else bad "$name" "$first $second $(tail -3 "$out.out")"; fi
}
# a kernel of more than 64 registers per thread (nvcc's ptxas report goes to the emulator's
# build), launched with 1024 and 256 threads
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
    refused_eval eval_emulator_refuses_too_many_registers "too many resources requested for launch" \
        "$(sed '/^int main/,$d; /common.h/d' test/emu/registers.cu)" \
        "heavy<<<1, %d>>>(x, x + 1024, 1024);" 1024 256
else echo "SKIP eval_emulator_refuses_too_many_registers: no nvcc"; skip=$((skip + 1)); fi
# a kernel bounded to 128 threads, launched with 256 and 128
refused_eval eval_emulator_refuses_past_launch_bounds "invalid argument" \
    "__global__ void __launch_bounds__(128) touch(float *y) { y[threadIdx.x] = 1.0f; }" "touch<<<1, %d>>>(x);" 256 128
# with a GPU, programs are built for it: nvidia-smi's compute capability gives nvcc's -arch
# (a stand-in nvidia-smi says 8.6 here, or cannot say); and a test program must run on it
# first (here it cannot, there being no GPU): else the emulator runs them, or --runner gpu stops
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
    mkdir -p "$TMP/smi86" "$TMP/smi_old"
    cat >"$TMP/smi86/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in *compute_cap*) echo 8.6 ;; *) echo "GPU 0: stand-in" ;; esac
SH
    cat >"$TMP/smi_old/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.'; exit 2 ;; *) echo "GPU 0: stand-in" ;; esac
SH
    printf '#!/bin/sh\necho "$*" >>"%s"\n' "$TMP/modprobe.log" >"$TMP/smi86/nvidia-modprobe"
    chmod +x "$TMP/smi86/nvidia-smi" "$TMP/smi_old/nvidia-smi" "$TMP/smi86/nvidia-modprobe"
    expect "eval_builds_for_the_gpu_present" 2 "--runner gpu: a test program built with nvcc -arch=sm_86 does not run on the GPU: .*CUDA" \
        env PATH="$TMP/smi86:$PATH" ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 \
        --runner gpu --results "$TMP/evi/r.jsonl"
    rm -f "$TMP/evi/r.jsonl"
    expect "eval_gpu_that_fails_falls_back_to_emulator" 0 "does not run on the GPU .*the programs run under the CPU emulator" \
        env PATH="$TMP/smi86:$PATH" ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 \
        --results "$TMP/evi/r.jsonl"
    grep -q '"status": "pass"' "$TMP/evi/r.jsonl" && ok "eval_gpu_fallback_programs_pass" \
        || bad "eval_gpu_fallback_programs_pass" "$(head -c 300 "$TMP/evi/r.jsonl")"
    # on a fresh machine /dev/nvidia-uvm is made by the setuid nvidia-modprobe, which cannot
    # work inside the sandbox: the sandbox has it make the nodes first (a stand-in here)
    if [ -e /dev/nvidia-uvm ]; then echo "SKIP eval_gpu_sandbox_makes_uvm_node: /dev/nvidia-uvm exists"; skip=$((skip + 1))
    elif grep -qx -- "-u -c=0" "$TMP/modprobe.log" 2>/dev/null; then ok "eval_gpu_sandbox_makes_uvm_node"
    else bad "eval_gpu_sandbox_makes_uvm_node" "nvidia-modprobe calls: $(cat "$TMP/modprobe.log" 2>&1)"; fi
    expect "eval_gpu_arch_unknown_builds_sm_90" 0 "does not give the GPU's compute capability; building for sm_90" \
        env PATH="$TMP/smi_old:$PATH" ./gen --eval "$TMP/evi/test.jsonl" --programs "$TMP/evi/programs.jsonl" --count 1 \
        --results "$TMP/evi/r.jsonl"
else echo "SKIP eval_builds_for_the_gpu_present: no nvcc"; skip=$((skip + 1)); fi

echo "== the sandbox: hostile generated programs through gen --eval are contained (test/test_sandbox)"
checks test_sandbox ./test/test_sandbox

echo "== the confidence analysis (data/confidence.h): hand-made cases; KS p-value against scipy"
checks test_confidence ./test/test_confidence "$TMP/ks.txt"
if "$PYTHON" -c "import scipy" 2>/dev/null; then
    # a fresh random case: D as scipy.stats.ks_2samp computes it, p from the Kolmogorov
    # limiting distribution (scipy.stats.kstwobign) that cuset_ks_pvalue implements
    if out=$("$PYTHON" - "$TMP/ks.txt" <<'PY' 2>&1
import math, sys, scipy.stats as st
rows = open(sys.argv[1]).read().split("\n")
d, p = map(float, rows[0].split()); a = [float(x) for x in rows[1].split()]; b = [float(x) for x in rows[2].split()]
r = st.ks_2samp(a, b, method="asymp"); q = st.kstwobign.sf(math.sqrt(len(a) * len(b) / (len(a) + len(b))) * d)
ok = abs(r.statistic - d) < 1e-9 and abs(q - p) < 1e-9 * max(1.0, q)
print("n %d, %d: D %.6f (scipy %.6f), p %.6g (scipy %.6g)" % (len(a), len(b), d, r.statistic, p, q)); sys.exit(0 if ok else 1)
PY
    ); then ok "ks_against_scipy: $out"; else bad "ks_against_scipy" "$out"; fi
else echo "SKIP ks_against_scipy: $PYTHON cannot import scipy (bash test/deps.sh test installs python3-scipy)"; skip=$((skip + 1)); fi

echo "== train, gen and the corpus under AddressSanitizer and UBSan (the CPU path, every objective)"
# Built with the flags of test_annotate's run above (leaks reported): a small corpus, each
# objective for 2 steps on it, a resume, a fine-tune, sampling, the confidence analysis and
# gen --eval of 2 tasks under the emulator. Each run must exit 0 without a sanitizer report.
mkdir -p "$TMP/asan" && chmod o+x "$TMP" "$TMP/asan" # gen --eval's programs run as nobody under root
if gcc "${asan[@]}" -o "$TMP/asan/train" train.c -lm 2>"$TMP/asan/build.err" \
    && gcc "${asan[@]}" -o "$TMP/asan/gen" gen.c -lm 2>>"$TMP/asan/build.err" \
    && gcc "${asan[@]}" -o "$TMP/asan/corpus" data/corpus.c -lm 2>>"$TMP/asan/build.err"; then
    A=$TMP/asan aseed=$RANDOM
    small=(--vocab 512 --layers 2 --heads 2 --embd 64 --ctx 1024 --seq 256 --batch 2) # prompts fit the context
    asan_run() { # NAME COMMAND...: exit 0 and no report
        local name=$1; shift
        ASAN_OPTIONS=detect_leaks=1 "$@" >"$A/out" 2>&1; local rc=$?
        if [ $rc -eq 0 ] && ! grep -qE "Sanitizer|runtime error" "$A/out"; then ok "asan_$name"
        else bad "asan_$name" "exit $rc: $(grep -m3 -E 'ERROR|runtime error|SUMMARY' "$A/out" || tail -2 "$A/out")"; fi
    }
    asan_run "corpus (seed $aseed)" "$A/corpus" --out "$A/c" --train 60 --val 10 --test 4 --seed "$aseed"
    for obj in sft dft profit eaft asft cuset; do # each stopped halfway; sft's run is resumed
        asan_run "train_$obj" "$A/train" --data "$A/c/train.jsonl" "${small[@]}" --objective "$obj" --steps 4 \
            --stop-at 2 --accum 2 --ckpt "$A/$obj.ckpt"
    done
    asan_run train_resume "$A/train" --data "$A/c/train.jsonl" --resume --ckpt "$A/sft.ckpt"
    asan_run train_finetune "$A/train" --data "$A/c/train.jsonl" --val-data "$A/c/val.jsonl" --init "$A/sft.ckpt" \
        --objective cuset --tau 0.001 --steps 2 --ckpt "$A/ft.ckpt" --log "$A/ft.log"
    asan_run gen_sample "$A/gen" --model "$A/ft.ckpt" --prompt-jsonl "$A/c/test.jsonl" --max-tokens 20 --top-k 20 --top-p 0.9
    asan_run gen_analyze "$A/gen" --model "$A/ft.ckpt" --analyze "$A/c/val.jsonl" --count 3 --json "$A/an.json"
    asan_run gen_eval "$A/gen" --model "$A/ft.ckpt" --eval "$A/c/test.jsonl" --count 2 --samples 2 --k 1,2 \
        --max-tokens 40 --nvcc none --corpus "$A/corpus" --emu emu/nvcc-emu --results "$A/ev.jsonl" --jobs 2
else bad "asan_build" "$(head -3 "$TMP/asan/build.err")"; fi

echo "== CUDA on the CPU: emu/nvcc-emu's rewrite, one program per corpus family, a few CUDABench tasks"
checks test_emu_rewrite bash test/test_emu_rewrite.sh
if [ -f test/test_emu.sh ] && [ -f emu/cuemu.h ]; then
    checks test_emu bash test/test_emu.sh
fi
if [ ! -f emu/cuemu.h ]; then
    echo "SKIP emu_corpus, cudabench: no emulator runtime emu/cuemu.h"; skip=$((skip + 1))
else
    checks emu_corpus bash test/emu_corpus.sh
    # the same with one fresh task per family: the default corpus above is the same every
    # run, a new seed gives rare combinations of parameters their turn over runs; built with
    # AddressSanitizer, and a program that leaves host or device memory allocated fails
    fresh=$((RANDOM + 1))
    ./data/corpus --out "$TMP/fresh" --seed $fresh --train 0 --val 0 --test 45 >/dev/null 2>&1
    emu_check "emu_corpus_fresh (seed $fresh)" "$TMP/fresh" --leaks
    # the references compile without a warning of g++ -Wall -Wextra -Wshadow (on the emulator's C++
    # rewrite; nvcc applies no host warnings to device code, so three CUDA idioms are let
    # through: int/unsigned comparisons with threadIdx, #pragma unroll, and the parentheses
    # of the rewritten __shared__ declarations). A kernel takes its task's sizes whether it
    # reads them or not (a block-per-row kernel need not read rows); any other function's
    # unused parameter, such as a launcher's size it never passes on, is a warning, as is a
    # local that hides a tensor (-Wshadow: a warp loop's `offset` hid a bias named offset).
    # One fresh program per family, one with a launcher function where the draw of five has one
    warn=$TMP/warn seed=$RANDOM
    ./data/corpus --out "$warn" --seed $seed --train 0 --val 0 --test 225 >/dev/null 2>&1
    "$PYTHON" - "$warn/test.jsonl" "$warn" <<'PY'
import json, sys
pick = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    launcher = "static void run_" in d["completion"]
    if d["family"] not in pick or (launcher and not pick[d["family"]][0]):
        pick[d["family"]] = (launcher, d["completion"])
for fam, (_, program) in pick.items():
    open(f"{sys.argv[2]}/{fam}.cu", "w").write(program)
PY
    warnings=0 programs=0 first=""
    for cu in "$warn"/*.cu; do
        programs=$((programs + 1))
        emu/nvcc-emu --rewrite-only "$cu" >"${cu%.cu}.cpp" 2>"$warn/rewrite.err" || { first=${first:-"$(basename "$cu"): rewrite failed"}; warnings=$((warnings + 1)); continue; }
        g++ -std=c++17 -fsyntax-only -Wall -Wextra -Wshadow -Wno-sign-compare -Wno-unknown-pragmas -Wno-parentheses \
            -isystem emu/include -isystem emu -include cuemu.h "${cu%.cu}.cpp" 2>&1 | grep -E ' (warning|error): ' >"$warn/w.txt"
        while IFS= read -r w; do # FILE:LINE:COLUMN: warning: TEXT [-Wflag] (an error counts too)
            wfile=${w%%:*} wline=${w#*:} wline=${wline%%:*}
            [[ $w == *-Wunused-parameter* ]] && sed -n "${wline}p" "$wfile" | grep -q __global__ && continue
            warnings=$((warnings + 1)); first=${first:-"$(basename "$wfile"):$wline: ${w#*:*:*: }"}
        done <"$warn/w.txt"
    done
    if [ "$programs" -lt 45 ]; then bad "references_warning_free" "seed $seed: $programs programs, want one per family (45)"
    elif [ "$warnings" -eq 0 ]; then ok "references_warning_free (seed $seed): $programs programs, $(grep -l 'static void run_' "$warn"/*.cu | wc -l) with a launcher"
    else bad "references_warning_free" "seed $seed: $warnings warnings, the first: $first"; fi
    # the references' tolerances hold against a GPU's math, not only the host's: the fast
    # intrinsics and rsqrtf off by as much as CUDA allows (a fresh seed: up or down), and
    # a * b + c fused as nvcc fuses it by default (fresh tasks of the families that use them)
    ulp=$((RANDOM + 1)) # (0 would turn it off)
    ./data/corpus --out "$TMP/gpumath" --seed $ulp --train 0 --val 0 --test 16 --families \
        elementwise_unary,softmax_row_block,softmax_row_warp,log_softmax_row,layernorm_row,rmsnorm_row,pipeline_standardize,pipeline_softmax,matmul_tiled,conv2d,matvec_thread_per_row,stencil_2d,elementwise_ternary \
        >/dev/null 2>&1
    for how in "--ulp $ulp" --fma; do
        if [ "$how" = --fma ] && why=$(fma_refused); then
            echo "SKIP corpus_tolerances_hold --fma: $why"; skip=$((skip + 1)); continue
        fi
        emu_check "corpus_tolerances_hold $how (seed $ulp)" "$TMP/gpumath" --all $how
    done
    # atomic min/max on one-signed inputs (all negative, or all positive), in the programs
    # where each thread's running extreme starts from the identity before its warp or block
    # meets the atomics: an identity that is not the type's extreme (the ordered-bits
    # programs once started the float maximum at 0u) shows only here. One fresh task per
    # (method, op, data) the draw of 240 holds
    mm=$TMP/minmax seed=$RANDOM
    ./data/corpus --out "$mm" --seed $seed --train 0 --val 0 --test 240 --families atomic_minmax >/dev/null 2>&1
    mkdir -p "$mm/one_signed"
    "$PYTHON" - "$mm/test.jsonl" >"$mm/one_signed/test.jsonl" <<'PY'
import json, sys
seen = set()
for line in open(sys.argv[1]):
    p = json.loads(line)["spec"]["params"]
    key = (p["method"], p["op"], p["data"])
    if p["data"] != 0 and p["agg"] != "per_element" and key not in seen:
        seen.add(key)
        print(line, end="")
PY
    if [ "$(wc -l <"$mm/one_signed/test.jsonl")" -lt 12 ]; then
        bad "atomic_minmax_one_signed" "seed $seed: $(wc -l <"$mm/one_signed/test.jsonl") of the 24 combinations among 240 tasks"
    else emu_check "atomic_minmax_one_signed (seed $seed)" "$mm/one_signed" --all; fi
    # README's "Adding a family", step by step, with the model family test/family_example.c:
    # a copy of the generator with it added builds without a warning, and every test-split
    # program of the family (fresh seed) passes under the emulator and compiles with nvcc
    fam=$TMP/family seed=$RANDOM
    mkdir -p "$fam/data" && cp data/*.c data/*.h "$fam/data/" && cp test/family_example.c "$fam/data/families_example.c"
    sed -i 's|^#include "families_pipeline.c"$|&\n#include "families_example.c"|
            s|families_pipeline, *NULL };|families_pipeline, families_example, NULL };|' "$fam/data/corpus.c"
    nvcc_bin=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
    if [ "$(grep -c families_example "$fam/data/corpus.c")" != 2 ]; then
        bad "family_example" "corpus.c's #include lines or family list changed shape: update README's steps and this test"
    elif ! gcc -std=gnu11 -O2 -ffp-contract=off -Wall -Wextra -Werror -o "$fam/corpus" "$fam/data/corpus.c" -lm 2>"$fam/build.err"; then
        bad "family_example" "the generator with it does not build: $(head -3 "$fam/build.err" | tr '\n' '|')"
    elif ! "$fam/corpus" --out "$fam/out" --families reverse --train 8 --val 2 --test 8 --seed $seed >/dev/null 2>&1; then
        bad "family_example" "corpus --families reverse --seed $seed failed"
    elif ! CORPUS=$fam/corpus bash test/emu_corpus.sh "$fam/out" test --all >"$fam/emu.out" 2>&1 \
        || ! grep -q "8 passed, 0 failed" "$fam/emu.out"; then
        bad "family_example" "seed $seed under the emulator: $(grep -m2 -E '^FAIL|passed, [0-9]+ failed' "$fam/emu.out" | tr '\n' '|')"
    elif [ -n "$nvcc_bin" ] && { "$fam/corpus" --materialize "$fam/out" --split test --index 0 --to "$fam/nv" >/dev/null 2>&1 \
        && "$nvcc_bin" -arch=sm_90 -o "$fam/nv/prog" "$fam/nv/reference.cu" >"$fam/nv.err" 2>&1; [ $? -ne 0 ]; }; then
        bad "family_example" "seed $seed, test 0 does not compile with nvcc: $(head -3 "$fam/nv.err" | tr '\n' '|')"
    else ok "family_example: added as README says, 8 of 8 test programs pass (seed $seed)${nvcc_bin:+, nvcc compiles one}"; fi
    # the smallest size of tasks using shared memory (DB4, FDTD_3D), atomics (Max_Subarray_Sum,
    # BCE loss) and cooperative groups (FDTD_3D), copied into test/ from CUDABench
    # (all four pass: one that became unsupported, slow or ungenerated fails here, not only FAILs)
    checks cudabench env PYTHON="$PYTHON" bash -c 'bash test/cudabench.sh --file test/cudabench_smallest.jsonl | tee "$1"
        exit ${PIPESTATUS[0]}' - "$TMP/cudabench.out"
    grep -q "^cudabench: 4 passed, 0 unsupported, 0 not finished" "$TMP/cudabench.out" && ok "cudabench_all_four_pass" \
        || bad "cudabench_all_four_pass" "$(grep -E '^cudabench: [0-9]+ passed' "$TMP/cudabench.out")"
    expect "cudabench_no_such_id" 2 "no task with id 99999" bash test/cudabench.sh --file test/cudabench_smallest.jsonl --ids 99999
    expect "cudabench_missing_file" 2 "--file $TMP/none.jsonl: not a readable file" bash test/cudabench.sh --file "$TMP/none.jsonl"
    # nvcc-emu as nvcc: -c names the object after the source; what it cannot build, and an
    # output over its input, are refused
    mkdir -p "$TMP/nvemu" && printf '__global__ void k(int *y) { y[0] = 1; }\n' >"$TMP/nvemu/c1.cu"
    if (cd "$TMP/nvemu" && "$OLDPWD/emu/nvcc-emu" -c c1.cu) && [ -s "$TMP/nvemu/c1.o" ] && [ ! -e "$TMP/nvemu/a.out" ]; then
        ok "nvcc_emu_object_named_after_source"
    else bad "nvcc_emu_object_named_after_source" "$(ls "$TMP/nvemu")"; fi
    expect "nvcc_emu_output_over_input" 2 "-o .*c1.cu is the input .*c1.cu: it would be overwritten" \
        emu/nvcc-emu "$TMP/nvemu/c1.cu" -o "$TMP/nvemu/c1.cu"
    expect "nvcc_emu_ptx_refused" 2 "-ptx is not supported: it builds an executable, or an object with -c" \
        emu/nvcc-emu -ptx "$TMP/nvemu/c1.cu"
    # a typo of nvcc-emu's own options is refused (it would build without AddressSanitizer);
    # nvcc's options, with their values, are still ignored
    expect "nvcc_emu_typo_refused" 2 "unknown option -asan: did you mean --asan\?" \
        emu/nvcc-emu -asan "$TMP/nvemu/c1.cu" -o "$TMP/nvemu/typo"
    printf '#include <cstdio>\nint main() { printf("built\\n"); }\n' >"$TMP/nvemu/main.cu"
    expect "nvcc_emu_nvcc_options_ignored" 0 "^built$" bash -c 'emu/nvcc-emu -O3 -lineinfo --keep-dir "$1" -cudart static \
        --fmad=true -Wno-deprecated-gpu-targets "$1/main.cu" -o "$1/ignored" && "$1/ignored"' _ "$TMP/nvemu"
    # a task whose input generator needs a missing module or a GPU is its own category, not a failure
    "$PYTHON" - "$TMP/gen_fails.jsonl" <<'EOF'
import json, sys
gens = {1: "import cuset_no_such_module\n", 2: "import torch\ntorch.zeros(1).cuda()\n"}
with open(sys.argv[1], "w") as f:
    for i, gen in gens.items():
        f.write(json.dumps({"id": i, "task_name": f"gen_fails_{i}", "inputs": [], "gen.py": gen,
                            "bench.cu": "int main() { return 0; }\n", "compare.py": "print('T')\n"}) + "\n")
EOF
    out=$(PYTHON=$PYTHON bash test/cudabench.sh --file "$TMP/gen_fails.jsonl" 2>&1)
    if [ $? -eq 0 ] && grep -q "^GEN-ERROR 1 .*module cuset_no_such_module" <<<"$out" && grep -qE "^(NEEDS-GPU|PASS) 2 " <<<"$out"; then
        ok "cudabench_generator_categories: $(grep -oE '^(NEEDS-GPU|GEN-ERROR|PASS) [0-9]+' <<<"$out" | paste -sd' ')"
    else
        bad "cudabench_generator_categories" "$(echo "$out" | grep -vE '^cudabench: [0-9]+ tasks' | head -3 | tr '\n' '|')"
    fi
fi

echo "== the GPU backend (cuset.cu): nvcc builds it without a warning or a register spill"
nvcc_bin=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
if [ -z "$nvcc_bin" ]; then
    echo "SKIP cuset_cu_nvcc_clean: no nvcc"; skip=$((skip + 1))
elif out=$("$nvcc_bin" -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -warn-spills --std=c++17 -c cuset.cu \
          -o "$TMP/cuset_cuda.o" 2>&1) && [ -z "$out" ]; then
    ok "cuset_cu_nvcc_clean (sm_90, -Xptxas -warn-spills)"
else
    bad "cuset_cu_nvcc_clean" "$(echo "$out" | head -5)"
fi

echo "== test/gpu_check.sh --dry-run on a copy of the tree: each stage ends cleanly without a GPU"
# the script runs only on a borrowed GPU, for minutes: a fault in it must show here first
if [ -z "$nvcc_bin" ]; then
    echo "SKIP gpu_check_dry_run: no nvcc"; skip=$((skip + 1))
elif nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP gpu_check_dry_run: a GPU is here, where a dry run is a real one (run bash test/gpu_check.sh)"; skip=$((skip + 1))
elif ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "SKIP gpu_check_dry_run: not a git checkout (it copies the tracked files)"; skip=$((skip + 1))
else
    mkdir -p "$TMP/gck"
    git ls-files -z | xargs -0 cp --parents -t "$TMP/gck"
    PATH="$(dirname "$nvcc_bin"):$PATH" OUT="$TMP/gck_logs" bash "$TMP/gck/test/gpu_check.sh" --dry-run >"$TMP/gck.out" 2>&1
    rc=$?
    stages=$(grep -cE '^\[(tools|gpu|build|kernels|train|sanitizer|native|experiment|bench)\] ' "$TMP/gck.out")
    if [ $rc -eq 2 ] && [ "$stages" -eq 9 ] && grep -q '^\[build\] PASS' "$TMP/gck.out" \
        && ! grep -qE '^\[[a-z]+\] (FAIL|TIMEOUT)' "$TMP/gck.out" && tail -1 "$TMP/gck.out" | grep -q '^gpu_check: INCOMPLETE'; then
        ok "gpu_check_dry_run: $(grep -oE '^\[[a-z]+\] [A-Z-]+' "$TMP/gck.out" | tr -d '[]' | paste -sd, | sed 's/,/, /g')"
    else
        bad "gpu_check_dry_run" "exit $rc (2 expected), $stages of 9 stage lines; $(grep -E '^\[[a-z]+\] (FAIL|TIMEOUT)' "$TMP/gck.out" \
            | head -2 | tr '\n' '|') last line: $(tail -1 "$TMP/gck.out")"
    fi
    rm -rf "$TMP/gck" "$TMP/gck_logs"
fi

echo "== the GPU backend (cuset.cu) under the CPU emulator: each kernel, whole steps, every objective"
if [ ! -x emu/nvcc-emu ] || [ ! -f emu/cuemu.h ]; then
    echo "SKIP test_gpu_emu: no emulator (make emu/nvcc-emu; emu/cuemu.h)"; skip=$((skip + 1))
else
    for t in test_gpu test_gpu_attn_loss; do
        if ! emu/nvcc-emu -I . -o "$TMP/$t" "test/$t.cu" cuset.cu >"$TMP/emu_build.out" 2>&1; then
            bad "${t}_emu_build" "$(tail -5 "$TMP/emu_build.out")"
            continue
        fi
        checks ${t}_emu "$TMP/$t" --small
    done
    # train linked with the emulated backend: a head size the attention kernels do not take
    # is refused before training; --device auto then trains on the CPU, --device cuda stops
    if emu/nvcc-emu -c -I . -o "$TMP/cuset_emu.o" cuset.cu >"$TMP/emu_build.out" 2>&1 \
        && gcc -O2 -fopenmp -std=gnu11 -c -o "$TMP/train_emu.o" train.c 2>>"$TMP/emu_build.out" \
        && emu/nvcc-emu -o "$TMP/train_emu" "$TMP/train_emu.o" "$TMP/cuset_emu.o" -lgomp >>"$TMP/emu_build.out" 2>&1; then
        hs8=(--heads 8 --embd 64 --layers 1 --ctx 32 --seq 32 --vocab 40 --batch 4 --synthetic-n 64 --steps 1)
        expect "train_emu_head_size_auto_uses_cpu" 0 "cannot train this model: head size 8 .*training on the CPU" \
            "$TMP/train_emu" "${hs8[@]}" --device auto --ckpt "$TMP/hs8.ckpt"
        expect "train_emu_head_size_cuda_refused" 1 "^train: --device cuda: head size 8 " \
            "$TMP/train_emu" "${hs8[@]}" --device cuda --ckpt "$TMP/hs8.ckpt"
    else bad "train_emu_build" "$(tail -5 "$TMP/emu_build.out")"; fi
    # the fused attention and loss again, with the threads of each block in a fresh random
    # order between barriers (a missing __syncthreads fails here, not in plain order) and
    # every device and shared-memory access bounds-checked by AddressSanitizer
    order=$((RANDOM % 1000 + 1))
    if emu/nvcc-emu --asan -I . -o "$TMP/attn_asan" test/test_gpu_attn_loss.cu cuset.cu >"$TMP/emu_build.out" 2>&1; then
        ASAN_OPTIONS=detect_leaks=0 CUEMU_REORDER=$order "$TMP/attn_asan" --small >"$TMP/attn_asan.out" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q Sanitizer "$TMP/attn_asan.out"; then ok "test_gpu_attn_loss_reordered_asan (CUEMU_REORDER=$order)"
        else bad "test_gpu_attn_loss_reordered_asan" "CUEMU_REORDER=$order, exit $rc: $(grep -m3 -E 'FAIL|Sanitizer' "$TMP/attn_asan.out")"; fi
    else bad "test_gpu_attn_loss_asan_build" "$(tail -5 "$TMP/emu_build.out")"; fi
    # and with a * b + c fused in the kernels as nvcc fuses it by default, the CPU reference
    # beside them rounding twice: the stated tolerances hold for that difference too
    if why=$(fma_refused); then
        echo "SKIP test_gpu_attn_loss_fma: $why"; skip=$((skip + 1))
    elif emu/nvcc-emu --fma -c -I . -o "$TMP/cuset_fma.o" cuset.cu >"$TMP/emu_build.out" 2>&1 \
        && emu/nvcc-emu -c -I . -o "$TMP/attn.o" test/test_gpu_attn_loss.cu >>"$TMP/emu_build.out" 2>&1 \
        && emu/nvcc-emu -o "$TMP/attn_fma" "$TMP/attn.o" "$TMP/cuset_fma.o" >>"$TMP/emu_build.out" 2>&1; then
        "$TMP/attn_fma" --small >"$TMP/attn_fma.out" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && grep -q "all passed" "$TMP/attn_fma.out"; then ok "test_gpu_attn_loss_fma"
        else bad "test_gpu_attn_loss_fma" "exit $rc: $(grep -m3 FAIL "$TMP/attn_fma.out")"; fi
    else bad "test_gpu_attn_loss_fma_build" "$(tail -5 "$TMP/emu_build.out")"; fi
fi

echo "== make experiment PRESET=smoke: every stage end to end; the tables against gen --eval run by hand"
# Each row and column of results.json / results.md is there, the report is self-contained,
# one model's numbers equal a by-hand gen --eval with the same settings (no cache), and
# the confidence analysis of a checkpoint is recomputed from outside (test/check_analysis.py).
exp=$TMP/experiment
expect "experiment_help" 0 "SET changes a preset's settings" bash data/experiment.sh --help
expect "experiment_bad_preset" 2 "unknown PRESET 'big'" env PRESET=big RUN="$TMP/x" bash data/experiment.sh
expect "experiment_bad_seeds" 2 "SEEDS: whole numbers .*separated by commas, got '1,a'" \
    env PRESET=smoke SEEDS=1,a RUN="$TMP/x" bash data/experiment.sh
expect "experiment_repeated_seed" 2 "SEEDS: each seed once .*, got '1,2,1'" \
    env PRESET=smoke SEEDS=1,2,1 RUN="$TMP/x" bash data/experiment.sh
# a setting given as a make variable (make exports it to the script) or an exported one, which the
# preset would replace without a word, is refused with the SET that gives it; SEEDS still passes
expect "experiment_setting_outside_set" 2 'FT_STEPS=5: set in the environment .*SET="FT_STEPS=5"' \
    make -s experiment PRESET=smoke RUN="$TMP/x" FT_STEPS=5 SEED=2
# a make variable nothing reads (a typo for SEEDS) is refused; the build's own (CC) pass
expect "experiment_unread_make_variable" 2 "SEED: a make variable that neither the experiment nor the build reads" \
    make -s experiment PRESET=smoke RUN="$TMP/x" SEED=2
expect "experiment_build_make_variable" 0 'PRESET="smoke"' env MAKE_VARIABLES="CC CFLAGS NVCC SEEDS" PRESET=smoke \
    bash data/experiment.sh --settings
expect "experiment_setting_in_set_and_environment" 2 "FT_STEPS: set both in the environment .* and in SET \('FT_STEPS=5'\)" \
    env PRESET=smoke SET="FT_STEPS=5" FT_STEPS=7 RUN="$TMP/x" bash data/experiment.sh
expect "experiment_setting_in_set_and_environment_agree" 0 'FT_STEPS="5"' \
    env PRESET=smoke SET="FT_STEPS=5" FT_STEPS=5 bash data/experiment.sh --settings
expect "experiment_seeds_through_make" 2 "SEEDS: each seed once .*, got '1,2,1'" \
    make -s experiment PRESET=smoke SEEDS=1,2,1 RUN="$TMP/x"
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
    expect "experiment_gpu_preset_needs_gpu" 2 "PRESET=gpu needs a GPU" env PRESET=gpu RUN="$TMP/x" bash data/experiment.sh
fi
expect "quickstart_bad_steps" 2 "SFT_STEPS: a whole number, at least 1, got 'abc'" env SFT_STEPS=abc RUN="$TMP/x" \
    bash data/quickstart.sh
[ -e "$TMP/x" ] && bad "experiment_bad_input_writes_nothing" "$TMP/x exists" || ok "experiment_bad_input_writes_nothing"
# the README's first command end to end, at a few steps: corpus, SFT, CuSeT, scoring, and
# the program it prints (a passing one, or the first with why it failed)
if OMP_NUM_THREADS=1 RUN="$TMP/quickstart" SFT_STEPS=3 CUSET_STEPS=2 TASKS=1 bash data/quickstart.sh >"$TMP/quickstart.out" 2>&1 &&
   grep -qE "^functional +pass@1 " "$TMP/quickstart.out" && grep -q "^Task Name: " "$TMP/quickstart.out" &&
   grep -q "^== done: checkpoints" "$TMP/quickstart.out" && [ -s "$TMP/quickstart/cuset.ckpt" ] && [ -s "$TMP/quickstart/eval.json" ]
then ok "quickstart_runs ($(grep -m1 -oE '^(== a passing program|== no test task passed)' "$TMP/quickstart.out"))"
else bad "quickstart_runs" "exit $?: $(tail -3 "$TMP/quickstart.out")"; fi
# a rerun keeps the finished base model; a failing scoring shows gen's message (a bubblewrap
# that cannot make a sandbox, as in a container without user namespaces)
mkdir -p "$TMP/nobwrap" && printf '#!/bin/sh\nexit 1\n' >"$TMP/nobwrap/bwrap" && chmod +x "$TMP/nobwrap/bwrap"
out=$(PATH="$TMP/nobwrap:$PATH" OMP_NUM_THREADS=1 RUN="$TMP/quickstart" SFT_STEPS=3 CUSET_STEPS=2 TASKS=1 \
    bash data/quickstart.sh 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "done before: .*base.ckpt (3 steps on the same data) is kept" <<<"$out" &&
   grep -q "^gen: cannot isolate the programs" <<<"$out"; then ok "quickstart_rerun_keeps_base_and_shows_eval_failure"
else bad "quickstart_rerun_keeps_base_and_shows_eval_failure" "exit $rc: $(tail -3 <<<"$out")"; fi
# every preset's rows hold its samples whole and its evaluation lets a program run to its
# end: the samples of a corpus drawn as the preset draws it (1,000 tasks), tokenized with a
# tokenizer of the preset's vocabulary trained on them, against SEQ and MAX_TOKENS
for preset in cpu gpu; do
    fit=$TMP/fit_$preset
    out=$(
        eval "$(PRESET=$preset bash data/experiment.sh --settings)"
        fam=(); [ "$FAMILIES" = all ] || fam=(--families "$FAMILIES")
        m="${MODEL[*]}" && vocab=${m#*--vocab } && vocab=${vocab%% *}
        ./data/corpus --out "$fit" --seed 1 "${fam[@]}" --style "$STYLE" --train 1000 --val 1 --test 1 >/dev/null 2>&1 &&
        ./train --data "$fit/train.jsonl" --vocab "$vocab" --layers 1 --heads 1 --embd 8 --ctx "$SEQ" --seq "$SEQ" \
            --batch 1 --steps 1 --ckpt "$fit/m.ckpt" >/dev/null 2>&1 &&
        "$PYTHON" - "$fit/train.jsonl.tok" "$SEQ" "$MAX_TOKENS" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
h, n, k = struct.unpack_from("<I", b, 12)[0], struct.unpack_from("<I", b, 20)[0], struct.unpack_from("<Q", b, 48)[0]
lens = [struct.unpack_from("<2I", b, h + k + 8 * i) for i in range(n)]
row, target = max(p + t - 1 for p, t in lens), max(t for p, t in lens)
seq, most = int(sys.argv[2]), int(sys.argv[3])
print(f"rows up to {row} of {seq} positions, targets up to {target} tokens of {most}")
sys.exit(0 if row <= seq and target <= most else 1)
PY
    ) && ok "experiment_preset_fits: $preset: $out" || bad "experiment_preset_fits" "$preset: ${out:-no tokenized corpus}"
done
if ! OMP_NUM_THREADS=1 PRESET=smoke RUN="$exp" bash data/experiment.sh >"$TMP/experiment.out" 2>&1; then
    bad "experiment_smoke" "exit $?: $(tail -5 "$TMP/experiment.out")"
else
    ok "experiment_smoke ($(grep -o 'done in [0-9ms]*' "$TMP/experiment.out"))"
    if out=$("$PYTHON" - "$exp" <<'PY' 2>&1
import json, sys
run = sys.argv[1]
r = json.load(open(run + "/results.json"))["rows"]
md = open(run + "/results.md").read()
html = open(run + "/report.html").read()
rows = ["vanilla", "sft", "dft", "profit", "eaft", "asft", "cuset", "cuset_conf_cuda", "cuset_conf_rew"]
missing = [x for x in rows if x not in r]
assert not missing, "rows missing from results.json: %s" % missing
for x in rows:
    for part in ("all", "seen", "heldout"):
        for m in ("compile@1", "compile@3", "functional@1", "functional@3"):
            assert "mean" in r[x]["metrics"][part][m], (x, part, m)
    assert r[x]["analysis"] and r[x]["families"], x
    assert x == "vanilla" or r[x]["curve"], "no training curve for " + x
for col in ("compile pass@1", "compile pass@3", "functional pass@1", "functional pass@3", "held-out",
            "confidence mask", "CUDA mask", "reweighting", "mean w_n", "KS D", "tokens with c <= tau"):
    assert col in md, "results.md lacks the column " + col
for label in ("SFT", "DFT", "ProFit", "EAFT", "ASFT", "CuSeT", "Vanilla"):
    assert "| " + label in md, "results.md lacks the row " + label
assert "<svg" in html and "http://" not in html and "https://" not in html and "src=" not in html, "report.html"
# the gradient table: each objective's shares at the base model's analysis and at its own
start = r["vanilla"]["analysis"]["given"]["grad_share"]
for x in rows[1:]:
    if x == "asft":
        assert "| ASFT | " not in md.split("## The numbers from the prompt in each objective's gradient")[1], "ASFT in the table"
        continue
    end = r[x]["analysis"]["given"]["grad_share"][x]
    name = r[x]["label"] + (" (trained nothing: gradient 0)" if x in ("profit", "cuset_conf_rew") else "")
    cell = "| %s | %.2f%% / %.2f%% | %.2f%% / %.2f%% |" % (name, 100 * start[x][0], 100 * start[x][1],
                                                       100 * end[0], 100 * end[1])
    assert cell in md, "results.md lacks the gradient table's row " + cell
# a smoke run says at the top that it measures nothing
banner = "Smoke run: it measures nothing."
assert md.startswith("# CuSeT in miniature: results\n\n> **" + banner) and '<div class="banner"><strong>' + banner in html, "smoke banner"
# the rows whose every step had a gradient of 0 (at the base model every token's c is below tau, so the
# confidence mask drops them all: ProFit and "conf + rew"; the CUDA mask keeps CuSeT's and "conf + CUDA"'s)
# are marked in every table they appear in, and said at the top
for x in rows[1:]:
    z, dead = r[x]["zero_gradient"], x in ("profit", "cuset_conf_rew")
    assert z == ({"steps": 3, "of": 3} if dead else {"steps": 0, "of": 3}), (x, z)
    marked = r[x]["label"] + " (trained nothing: gradient 0)"
    assert (md.count("| " + marked + " |") >= 5) == dead and ("| %s |" % r[x]["label"] in md) != dead, (x, md.count("| " + marked + " |"))
assert "> **Rows that did not train**: ProFit (trained nothing: gradient 0); CuSeT: confidence mask + reweighting" in md
# the masked tokens: how many of all target tokens
for x in rows:
    a = r[x]["analysis"]
    total = a["tokens"]["cuda"] + a["tokens"]["neutral"]
    assert "| %d of %d (%.1f%%); %d; " % (a["masked"]["tokens"], total, 100 * a["masked"]["tokens"] / total, a["masked"]["given"]) in md, x
assert md.count("their share of -log c") == 0 and "(the numbers' share of all tokens' -log c)" in md and \
    "the dropped tokens' share of all tokens' -log c" in md, "the two -log c columns"
# the method's parameters and CuSeT's coefficient; tau on every histogram, a caption from the data
for want in ("tau = 0.1 (ProFit's and CuSeT's confidence mask)", "window l = 256 tokens", "lambda = 1;",
             "EAFT's alpha = 1, ASFT's beta = 0.1 (train's defaults)", "w_n = 1 - C_n", 'README, "The method"'):
    assert want in md, "results.md lacks " + want
assert html.count('class="tau"/><text') == 9 and html.count(">tau = 0.1</text>") == 9, "tau on the histograms"
assert "nearly all sit in the last bin" not in html and "100.0% of its tokens in the bin c in [0.00, 0.05) (the first); " \
    "100.0% at or below tau = 0.1" in html, "the histograms' caption"
# the test tasks, seen and held-out, as counted
m = r["vanilla"]["metrics"]
assert "(%d with parameter combinations not held out (\"seen\": training may hold them, by chance), %d with held-out ones)" % (
    m["seen"]["tasks"], m["heldout"]["tasks"]) in md
# the training charts: a legend of the rows drawn (not the base model), rows drawn on top of one
# another named, a zoomed axis said, one objective chart per row (their scales differ); the bars named as the tables do
legend = html.split('<div class="legend">')[1].split("</div>")[0]
assert "Vanilla" not in legend and legend.count("<span>") == 8, legend
assert "Drawn on top of one another (the same values): " in html and "ProFit = conf + rew" in html and "zoomed: a span of " in html
assert "their scales differ" in html and html.count('class="t">objective: ') == 8, "one objective chart per row"
assert ">conf + CUDA<" in html and ">cuset_conf_cuda<" not in html and ">ProFit (gradient 0)<" in html, "bar labels"
assert '<td class="n">%.3f (%.2g)</td>' % (r["cuset"]["analysis"]["ks"]["d"], r["cuset"]["analysis"]["ks"]["p"]) in html, "KS cell"
print("9 rows x 3 parts x 4 metrics, analysis, curves, families, the gradient table; report.html self-contained; "
      "smoke banner, rows with gradient 0 marked, method parameters, tau on the histograms")
PY
    ); then ok "experiment_tables: $out"; else bad "experiment_tables" "$out"; fi
    # each scoring's record (ROW.eval.txt) names the files kept, not gen's temporary names
    if grep -qFx "results: $exp/seed1/cuset.eval.jsonl" "$exp/seed1/cuset.eval.txt" &&
       grep -qFx "summary: $exp/seed1/cuset.eval.json" "$exp/seed1/cuset.eval.txt" &&
       ! grep -q '\.tmp$' "$exp"/seed1/*.eval.txt; then ok "experiment_eval_txt_names_kept_files"
    else bad "experiment_eval_txt_names_kept_files" "$(grep -hE '^(results|summary): ' "$exp"/seed1/*.eval.txt | grep -m2 '\.tmp$')"; fi
    # the CuSeT row by hand: the same programs (seeded), the same verdicts
    temperature=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["settings"]["temperature"])' "$exp/results.json")
    ./gen --model "$exp/seed1/cuset.ckpt" --eval "$exp/data/test.jsonl" --samples 3 --k 1,3 --temperature "$temperature" \
        --max-tokens 160 --seed 1 --summary "$TMP/hand.json" --results "$TMP/hand.jsonl" >/dev/null 2>"$TMP/hand.err"
    # (the smoke models pass nothing, so the 12 numbers are zeros: the programs themselves, one
    # by one, are what shows that the row is CuSeT's seed 1)
    if out=$("$PYTHON" - "$exp/results.json" "$TMP/hand.json" "$exp/seed1/cuset.eval.jsonl" "$TMP/hand.jsonl" <<'PY' 2>&1
import json, sys
row = json.load(open(sys.argv[1]))["rows"]["cuset"]["metrics"]
hand = json.load(open(sys.argv[2]))
for part in ("all", "seen", "heldout"):
    for kind in ("compile", "functional"):
        for k in ("1", "3"):
            got, want = row[part]["%s@%s" % (kind, k)]["mean"], hand[part][kind][k]
            assert abs(got - want) < 1e-9, "%s %s@%s: the table says %s, gen --eval by hand %s" % (part, kind, k, got, want)
def programs(path):
    return [(r["task"], r["sample"], r["status"], r["program"]) for r in map(json.loads, open(path))]
run, by_hand = programs(sys.argv[3]), programs(sys.argv[4])
assert len(run) == len(by_hand) > 0, "%d programs in the run, %d by hand" % (len(run), len(by_hand))
differ = [a[:2] for a, b in zip(run, by_hand) if a != b]
assert not differ, "%d of %d programs or verdicts differ, first (task, sample) %s" % (len(differ), len(run), differ[0])
assert len(set(p for *_, p in run)) > 1, "every program is the same text"
print("12 numbers equal; the same %d programs, the same verdicts" % len(run))
PY
    ); then ok "experiment_equals_gen_eval: $out"; else bad "experiment_equals_gen_eval" "$out $(tail -2 "$TMP/hand.err")"; fi
    ./gen --model "$exp/base.ckpt" --analyze "$exp/data/val.jsonl" --views 100 --json "$TMP/analysis.json" >/dev/null 2>&1
    if out=$("$PYTHON" test/check_analysis.py "$TMP/analysis.json" "$exp/data/val.jsonl" 2>&1); then ok "analysis_recomputed: $out"
    else bad "analysis_recomputed" "$out"; fi
    # resumable: a second run finds every stage done
    if OMP_NUM_THREADS=1 PRESET=smoke RUN="$exp" bash data/experiment.sh >"$TMP/experiment2.out" 2>&1 &&
       [ "$(grep -c 'done before' "$TMP/experiment2.out")" -ge 27 ]; then ok "experiment_rerun_skips_finished_stages"
    else bad "experiment_rerun_skips_finished_stages" "$(grep -c 'done before' "$TMP/experiment2.out") stages skipped: $(tail -2 "$TMP/experiment2.out")"; fi
    # the ETA: nothing guessed before a stage was measured; on the rerun the rates come from
    # the logs of the stages found done (training from the base model's, evaluation from
    # the base model's eval.json), so the fine-tuning stages know the training time left
    stage() { grep -m1 "^== \[[0-9]*/[0-9]*\] $1" "$2"; }
    if stage corpus "$TMP/experiment.out" | grep -q "time left: known after the first training stage)" &&
       stage "evaluate vanilla" "$TMP/experiment.out" | grep -q "time left: known after the first evaluation)" &&
       stage "evaluate sft" "$TMP/experiment.out" | grep -Eq "(about [0-9]+m|under a minute) left\)" &&
       stage "fine-tune sft" "$TMP/experiment2.out" | grep -Eq "(about [0-9]+m|under a minute) of training left, then the evaluations\)" &&
       stage "evaluate sft" "$TMP/experiment2.out" | grep -Eq "(about [0-9]+m|under a minute) left\)"; then ok "experiment_eta"
    else bad "experiment_eta" "$(grep -E '^== \[(1|3|11|13)/' "$TMP/experiment.out" "$TMP/experiment2.out")"; fi
    # an interrupted fine-tuning stage resumes from its checkpoint on the rerun (it passed
    # --init with --resume, which train refuses), exactly: the checkpoint equals that of a
    # run never interrupted, and the log keeps each step once
    res=$TMP/experiment_resume ref=$TMP/experiment_resume_ref
    rm -rf "$res" "$ref" && cp -a "$exp" "$res" && cp -a "$exp" "$ref" && rm -rf "$res/seed1" "$ref/seed1" # corpus, base kept
    # start_run RUN: the experiment in the background, in a process group of its own (env
    # and setsid exec, so pid=$! is its leader), which kill -INT -PID stops as Ctrl-C would
    # for train (a background job's shell ignores SIGINT, so the rest is stopped with SIGTERM)
    start_run() {
        env OMP_NUM_THREADS=1 PRESET=smoke RUN="$1" SET="FT_STEPS=100 EVAL_TASKS=1" setsid bash data/experiment.sh \
            >>"$TMP/resume.out" 2>&1 & pid=$!
    }
    until_sft_done() { # RUN: runs until the sft stage is done, then stops the rest
        start_run "$1"
        for _ in $(seq 1200); do [ -f "$1/seed1/sft.ckpt.key" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
        kill -TERM -- -$pid 2>/dev/null; wait $pid
    }
    start_run "$res"
    for _ in $(seq 600); do # the stage has started (.started) and logged 3 steps
        [ -f "$res/seed1/sft.ckpt.started" ] && [ "$(grep -c '"loss"' "$res/seed1/sft.ckpt.jsonl" 2>/dev/null)" -ge 3 ] && break
        sleep 0.05
    done
    kill -INT -- -$pid; wait $pid # train saves the step it finished
    until_sft_done "$res"
    until_sft_done "$ref"
    steps=$(grep -o '"step": [0-9]*, "loss"' "$res/seed1/sft.ckpt.jsonl" | grep -o '[0-9]*' | paste -sd' ')
    if grep -q "experiment: interrupted; rerun the same command" "$TMP/resume.out" &&
       grep -q "resuming the interrupted run in $res/seed1/sft.ckpt" "$TMP/resume.out" && [ -f "$res/seed1/sft.ckpt.key" ] &&
       [ "$steps" = "$(seq -s' ' 100)" ] && cmp -s "$res/seed1/sft.ckpt" "$ref/seed1/sft.ckpt"; then
        ok "experiment_resumes_fine_tuning ($(grep -m1 -o 'resuming .* at step [0-9]* of 100' "$TMP/resume.out" | grep -o 'step [0-9]*'))"
    else bad "experiment_resumes_fine_tuning" "steps logged: ${steps:0:80}...; $(cmp "$res/seed1/sft.ckpt" "$ref/seed1/sft.ckpt" 2>&1); $(grep -A2 resuming "$TMP/resume.out" | head -3 | tr '\n' ' ')"; fi
    # SET="WINDOW=..." (CuSeT's l) reruns only what l reaches: the two rows whose loss uses it
    # (w_n: cuset, cuset_conf_rew), their scoring, and the analyses; it kept nothing before
    win=$TMP/experiment_window && rm -rf "$win" && cp -a "$exp" "$win"
    OMP_NUM_THREADS=1 PRESET=smoke RUN="$win" SET="WINDOW=128" bash data/experiment.sh >"$TMP/window.out" 2>&1
    kept=$(grep -o "done before (same settings): $win/.*" "$TMP/window.out" | sed "s|.*$win/||" | sort | paste -sd' ')
    want="base.ckpt data seed1/asft.ckpt seed1/asft.eval.json seed1/cuset_conf_cuda.ckpt seed1/cuset_conf_cuda.eval.json"
    want+=" seed1/dft.ckpt seed1/dft.eval.json seed1/eaft.ckpt seed1/eaft.eval.json seed1/profit.ckpt seed1/profit.eval.json"
    want+=" seed1/sft.ckpt seed1/sft.eval.json seed1/vanilla.eval.json"
    if [ "$kept" = "$want" ] && grep -q " window=128 " "$win/seed1/cuset.ckpt.key" "$win/seed1/cuset_conf_rew.ckpt.key" &&
       grep -q "l=128" "$win/base.analysis.json.key"; then ok "experiment_set_window"
    else bad "experiment_set_window" "kept: ${kept:-nothing}; $(tail -2 "$TMP/window.out")"; fi
    # SET="TAU=..." (the confidence threshold) reruns the rows with the confidence mask
    # (profit and CuSeT's three), their scoring and the analyses, which mask at the same tau
    tau=$TMP/experiment_tau && rm -rf "$tau" && cp -a "$exp" "$tau"
    OMP_NUM_THREADS=1 PRESET=smoke RUN="$tau" SET="TAU=0.05" bash data/experiment.sh >"$TMP/tau.out" 2>&1
    kept=$(grep -o "done before (same settings): $tau/.*" "$TMP/tau.out" | sed "s|.*$tau/||" | sort | paste -sd' ')
    want="base.ckpt data seed1/asft.ckpt seed1/asft.eval.json seed1/dft.ckpt seed1/dft.eval.json seed1/eaft.ckpt"
    want+=" seed1/eaft.eval.json seed1/sft.ckpt seed1/sft.eval.json seed1/vanilla.eval.json"
    if [ "$kept" = "$want" ] && [ "$(grep -cE '^objective: .* tau 0.05( |$)' "$TMP/tau.out")" = 4 ] &&
       grep -q '"tau":0.05' "$tau/base.analysis.json" && grep -q '"tau": 0.05' "$tau/results.json"; then ok "experiment_set_tau"
    else bad "experiment_set_tau" "kept: ${kept:-nothing}; $(grep '^objective: ' "$TMP/tau.out" | head -4 | tr '\n' ' ')"; fi
    expect "experiment_set_tau_range" 2 "TAU \\(2\\) is a confidence threshold: at most 1" env PRESET=smoke SET="TAU=2" RUN="$TMP/x" bash data/experiment.sh
    # SET="BASE_SEED=..." (the base model's training seed) trains another base model: of a
    # finished run it keeps only the corpus
    bseed=$TMP/experiment_base_seed && rm -rf "$bseed"
    OMP_NUM_THREADS=1 PRESET=smoke RUN="$bseed" REUSE="$exp" SET="BASE_SEED=7" bash data/experiment.sh >"$TMP/base_seed.out" 2>&1
    linked=$(grep -o "done before in $exp (same settings), linked: $bseed/.*" "$TMP/base_seed.out" | sed "s|.*$bseed/||" | paste -sd' ')
    if [ "$linked" = data ] && grep -q " seed=7$" "$bseed/base.ckpt.key" && ! grep -q " seed=" "$exp/base.ckpt.key" &&
       ! cmp -s "$bseed/base.ckpt" "$exp/base.ckpt" && grep -q '"base_seed": 7' "$bseed/results.json" &&
       grep -q "base model: plain SFT on the base part, 6 steps, seed 7" "$TMP/base_seed.out"; then ok "experiment_set_base_seed"
    else bad "experiment_set_base_seed" "linked: ${linked:-nothing}; key: $(cat "$bseed/base.ckpt.key" 2>&1 | tail -c 60); $(tail -2 "$TMP/base_seed.out")"; fi
    expect "experiment_set_base_seed_range" 2 "BASE_SEED \\(4294967296\\) is train's --seed: at most 2147483647" \
        env PRESET=smoke SET="BASE_SEED=4294967296" RUN="$TMP/x" bash data/experiment.sh
    # SET="BASE_LOSS=X" stops the base model's SFT at the first validation loss at or below X
    # (validated every ceil(6 / 30) = 1 step: with X = 100, the first); the report says where
    bloss=$TMP/experiment_base_loss && rm -rf "$bloss"
    OMP_NUM_THREADS=1 PRESET=smoke RUN="$bloss" REUSE="$exp" SET="BASE_LOSS=100" bash data/experiment.sh >"$TMP/base_loss.out" 2>&1
    if grep -q " until=100$" "$bloss/base.ckpt.key" && grep -q '"base_trained_steps": 1,' "$bloss/results.json" &&
       grep -q "until validation loss 100 (at most 6 steps)" "$TMP/base_loss.out" &&
       [ "$(grep -c '"val_loss"' "$bloss/base.ckpt.jsonl")" = 1 ] &&
       grep -q "SFT until a validation loss of 100: 1 of at most 6 steps (training seed 1337) on 48 tasks, validation loss [0-9.]*;" "$bloss/results.md"
    then ok "experiment_set_base_loss"
    else bad "experiment_set_base_loss" "key: $(tail -c 40 "$bloss/base.ckpt.key" 2>&1); $(grep -o 'Base model: [^(]*' "$bloss/results.md" 2>&1); $(tail -2 "$TMP/base_loss.out")"; fi
    # a changed run in a directory of its own links the stages it shares with a finished run
    # (REUSE) instead of running them, and leaves that run as it was
    reuse=$TMP/experiment_reuse && rm -rf "$reuse"
    OMP_NUM_THREADS=1 PRESET=smoke RUN="$reuse" REUSE="$exp" SET="TAU=0.05" bash data/experiment.sh >"$TMP/reuse.out" 2>&1
    linked=$(grep -o "done before in $exp (same settings), linked: $reuse/.*" "$TMP/reuse.out" | sed "s|.*$reuse/||" | sort | paste -sd' ')
    same=0; for f in data/base.jsonl data/ft.jsonl base.ckpt base.ckpt.jsonl seed1/sft.ckpt seed1/eaft.eval.jsonl; do
        [ "$reuse/$f" -ef "$exp/$f" ] && same=$((same + 1)); done
    if [ "$linked" = "$want" ] && [ $same = 6 ] && [ "$(grep -cE '^objective: .* tau 0.05( |$)' "$TMP/reuse.out")" = 4 ] &&
       ! [ "$reuse/seed1/cuset.ckpt" -ef "$exp/seed1/cuset.ckpt" ] && grep -q '"tau": 0.05' "$reuse/results.json" &&
       grep -q "tau=0.1" "$exp/seed1/cuset.ckpt.key" && grep -q '"tau":0.1' "$exp/base.analysis.json"; then ok "experiment_reuse"
    else bad "experiment_reuse" "linked: ${linked:-nothing}; $same of 6 the same files; $(tail -2 "$TMP/reuse.out")"; fi
    # its report pairs the four rerun rows with the reused run's; made again by hand after
    # CuSeT's first two of four tasks are made to pass here (+50 points, 2 higher, 2 equal)
    if out=$(cd "$reuse" && "$PYTHON" - <<'PY' 2>&1
import json
doc = json.load(open("results.json"))
vs = doc["against"]
assert list(vs["rows"]) == ["profit", "cuset", "cuset_conf_cuda", "cuset_conf_rew"], list(vs["rows"])
assert vs["same"] == ["vanilla", "sft", "dft", "eaft", "asft"], vs["same"]
assert vs["set"] == "" and "## This run against" in open("results.md").read()
p = "seed1/cuset.eval.json"
e = json.load(open(p))
for t in e["per_task"][:2]:
    t["passed"], t["result"]["functional"]["1"] = t["n"], 1.0
json.dump(e, open(p + ".new", "w"))
PY
       ) && mv "$reuse/seed1/cuset.eval.json.new" "$reuse/seed1/cuset.eval.json" &&
       "$PYTHON" data/experiment_report.py "$reuse" --against "$exp" >"$TMP/against.out" 2>&1 &&
       grep -q "^| CuSeT | 50.0 | 0.0 | +50.0 | \[+0.0, +100.0\] | no difference shown | 2 / 0 / 2 |$" "$reuse/results.md" &&
       grep -q "^| ProFit (trained nothing: gradient 0) | 0.0 | 0.0 | +0.0 | " "$reuse/results.md" &&
       grep -q "with TAU=0.05" "$reuse/results.md" && grep -q "over the test tasks both runs scored (all 4;" "$reuse/results.md"
    then ok "experiment_reuse_report"
    else bad "experiment_reuse_report" "${out:0:300} $(grep -E '^\| (CuSeT|ProFit) \|' "$reuse/results.md" | tail -2) $(tail -2 "$TMP/against.out")"; fi
    # runs that scored different tasks: both pass@1 columns are over the tasks both scored, as the
    # difference is (this run's CuSeT without its last task: 2 of 3 pass, against 0 of 4 there)
    cp -r "$reuse" "$TMP/against3"
    "$PYTHON" - "$TMP/against3/seed1/cuset.eval.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
e["per_task"] = e["per_task"][:-1]
json.dump(e, open(sys.argv[1], "w"))
PY
    "$PYTHON" data/experiment_report.py "$TMP/against3" --against "$exp" >"$TMP/against3.out" 2>&1
    if grep -q "^| CuSeT | 66.7 | 0.0 | +66.7 | .* | 2 / 0 / 1 |$" "$TMP/against3/results.md" &&
       grep -q "over the test tasks both runs scored (.*CuSeT: 3 of this run's 3 and that run's 4;" "$TMP/against3/results.md"; then ok "experiment_report_against_shared_tasks"
    else bad "experiment_report_against_shared_tasks" "$(grep -E '^\| CuSeT \| [0-9]' "$TMP/against3/results.md") $(tail -2 "$TMP/against3.out")"; fi
    expect "experiment_report_against_missing" 1 "--against $TMP/none: not a directory" "$PYTHON" data/experiment_report.py "$reuse" --against "$TMP/none"
    # the outcomes table: wrong answers with an output of another size, counted from CuSeT's
    # programs' results made up by hand (2 of these 5: data/corpus --compare's size line), and
    # crashes on an unreadable input (1: the program's "cannot read x.bin"); the table of the
    # sizes asked and written
    cp -r "$reuse" "$TMP/outcomes"
    printf '%s\n' '{"status":"wrong_answer","detail":"FAIL y: y.bin has 40 bytes, expected 400 (100 x float32)\n"}' \
        '{"status":"wrong_answer","detail":"FAIL y: max_abs_err 1.5, 3 of 100 elements outside |err| <= 1e-05\n"}' \
        '{"status":"crash","detail":"exit 1: cannot read x.bin\n"}' '{"status":"crash","detail":"signal 11 (SIGSEGV)\n"}' \
        '{"status":"wrong_answer","detail":"FAIL out: out.bin has 4 bytes, expected 8 (2 x int32)\n"}' >"$TMP/outcomes/seed1/cuset.eval.jsonl"
    if out=$("$PYTHON" data/experiment_report.py "$TMP/outcomes" 2>&1 && "$PYTHON" - "$TMP/outcomes" <<'PY' 2>&1
import json, sys
o = json.load(open(sys.argv[1] + "/results.json"))["rows"]["cuset"]["outcomes"]
n = sum(v for k, v in o.items() if k not in ("wrong_size", "unreadable_input"))
assert o["wrong_size"] == 2 and o["unreadable_input"] == 1, o
row = [l for l in open(sys.argv[1] + "/results.md") if l.startswith("| CuSeT | %d |" % n)]
assert row and row[0].split(" | ")[8] == "%.1f%%" % (200 / n) and row[0].split(" | ")[5] == "%.1f%%" % (100 / n), row
# the sizes asked and written: 100 floats asked, 40 bytes = 10 written; 2 int32 asked, 1 written
sizes = [l for l in open(sys.argv[1] + "/results.md", encoding="utf-8") if l.startswith("| CuSeT | 2 |")]
assert sizes == ["| CuSeT | 2 | 100 (1): 10 x1; 2 (1): 1 x1 |\n"], sizes
print("2 and 1 of %d programs; sizes 100 written as 10, 2 as 1" % n)
PY
    ); then ok "experiment_report_outcomes: $out"; else bad "experiment_report_outcomes" "$out"; fi
    # a run whose only seed is 7: both the confidence table and the curves say they show seed 7's models
    cp -r "$reuse" "$TMP/seed7" && mv "$TMP/seed7/seed1" "$TMP/seed7/seed7"
    out=$("$PYTHON" data/experiment_report.py "$TMP/seed7" --settings '{"preset": "smoke", "seeds": "7"}' --seconds 1 2>&1)
    if grep -q "^## Confidence analysis (validation split, teacher-forced; seed 7's models)$" "$TMP/seed7/results.md" &&
       grep -q "<h2>Training curves (seed 7; " "$TMP/seed7/report.html"
    then ok "experiment_report_shown_seed"
    else bad "experiment_report_shown_seed" "${out:0:300} $(grep -o -E '(Training curves|Confidence analysis) \([^)]*\)' "$TMP/seed7/report.html" | head -2)"; fi
    # an unfinished run's report says what is missing; a results file cut short is named
    cp -r "$reuse" "$TMP/unfinished" && rm "$TMP/unfinished/seed1/asft.eval.json" "$TMP/unfinished/results.json"
    "$PYTHON" data/experiment_report.py "$TMP/unfinished" >/dev/null 2>&1
    if grep -q '^\*\*Unfinished run\*\*: not scored yet: asft (seed 1)\.' "$TMP/unfinished/results.md" &&
       grep -q '^\*\*Settings unknown\*\*' "$TMP/unfinished/results.md" && ! grep -q "Preset None" "$TMP/unfinished/results.md"
    then ok "experiment_report_unfinished_run"
    else bad "experiment_report_unfinished_run" "$(head -5 "$TMP/unfinished/results.md")"; fi
    head -c 200 "$reuse/seed1/sft.eval.json" >"$TMP/unfinished/seed1/sft.eval.json"
    expect "experiment_report_cut_json" 1 "unfinished/seed1/sft.eval.json is not valid JSON .*Remove it" \
        "$PYTHON" data/experiment_report.py "$TMP/unfinished"
    expect "experiment_report_not_a_dir" 1 "none: not a directory" "$PYTHON" data/experiment_report.py "$TMP/none"
    # a run it cannot write into (read-only; and, for root, whom a mode does not stop, a directory in
    # the way of results.json.tmp): a message naming the file and what to do, exit 1, no traceback
    cp -r "$reuse" "$TMP/readonly" && mkdir "$TMP/readonly/results.json.tmp" && chmod a-w "$TMP/readonly"
    out=$("$PYTHON" data/experiment_report.py "$TMP/readonly" 2>&1); rc=$?
    chmod u+w "$TMP/readonly"
    if [ $rc = 1 ] && grep -q "^experiment_report: cannot write $TMP/readonly/results.json (.*copy the run" <<<"$out" &&
       ! grep -q Traceback <<<"$out"; then ok "experiment_report_read_only_run"
    else bad "experiment_report_read_only_run" "exit $rc: $(tail -2 <<<"$out")"; fi
    # a setting beyond the limit of the flag it becomes is refused before anything runs
    expect "experiment_steps_beyond_train" 2 "FT_STEPS \(2000000000\) is train's --steps: at most 1000000000" \
        env PRESET=smoke SET="FT_STEPS=2000000000" bash data/experiment.sh --settings
    expect "experiment_reuse_missing" 2 "REUSE: '$TMP/none' is not a directory" env PRESET=smoke REUSE="$TMP/none" RUN="$TMP/x" bash data/experiment.sh
    expect "experiment_set_run_dir" 0 'RUN="runs/experiment-smoke\+TAU=0.05\+FT_STEPS=4"' \
        env PRESET=smoke SET="TAU=0.05 FT_STEPS=4" bash data/experiment.sh --settings
    # a second seed: only its stages run, and every number becomes the mean and standard
    # deviation over the seeds' own gen --eval summaries
    out=
    if OMP_NUM_THREADS=1 PRESET=smoke SEEDS=1,2 RUN="$exp" bash data/experiment.sh >"$TMP/experiment3.out" 2>&1 &&
       out=$("$PYTHON" - "$exp" "$(grep -c 'done before' "$TMP/experiment3.out")" <<'PY' 2>&1
import fractions, json, statistics, sys
run, skipped = sys.argv[1], int(sys.argv[2])
assert skipped >= 27, "%d stages skipped, expected at least the 27 of seed 1 (corpus, base, its rows, scores and analyses)" % skipped
rows = json.load(open(run + "/results.json"))["rows"]
n = 0
for row in ("vanilla", "sft", "cuset", "cuset_conf_rew"):
    seeds = [json.load(open("%s/seed%d/%s.eval.json" % (run, s, row))) for s in (1, 2)]
    for kind in ("compile", "functional"):
        for k in ("1", "3"):
            got = rows[row]["metrics"]["all"]["%s@%s" % (kind, k)]
            want = [e["all"][kind][k] for e in seeds]
            assert got["kind"] == "std over seeds", got
            assert abs(got["mean"] - statistics.mean(want)) < 1e-9 and abs(got["std"] - statistics.stdev(want)) < 1e-9, \
                "%s %s@%s: %s, the seeds' summaries %s" % (row, kind, k, got, want)
            n += 1
# CuSeT against each row, paired over tasks: recomputed from the seeds' per-task results
def task_means(row):
    v = {}
    for s in (1, 2):
        for t in json.load(open("%s/seed%d/%s.eval.json" % (run, s, row)))["per_task"]:
            v.setdefault(t["id"], []).append(fractions.Fraction(t["passed"], t["n"]))
    return {t: float(statistics.mean(x)) for t, x in v.items()}
a = task_means("cuset")
for row in ("vanilla", "sft", "cuset_conf_rew"):
    b, p = task_means(row), rows["cuset"]["paired"][row]
    d = [a[t] - b[t] for t in a]
    assert p["tasks"] == len(d) and abs(p["mean"] - statistics.mean(d)) < 1e-12, (row, p, d)
    assert (p["higher"], p["lower"], p["equal"]) == (sum(x > 0 for x in d), sum(x < 0 for x in d), sum(x == 0 for x in d)), (row, p)
    n += 1
md = open(run + "/results.md").read()
assert "## CuSeT against each row, paired over test tasks" in md and " per seed |" in md, "results.md: no paired table with seeds"
# the smoke models score 0 everywhere, so also hand-computed cases: a spread of 50%, 70%, 90%
# over three seeds; a paired comparison (tasks both have; every task 50 points up: [+50, +50])
sys.path.insert(0, "data")
import experiment_report
p = experiment_report.paired({"a": 1.0, "b": 0.5, "c": 0.0}, {"a": 0.0, "b": 0.5, "c": 0.0, "d": 1.0})
assert p["tasks"] == 3 and abs(p["mean"] - 1 / 3) < 1e-12 and (p["higher"], p["lower"], p["equal"]) == (1, 0, 2), p
assert 0.0 <= p["lo"] <= p["mean"] <= p["hi"] <= 1.0, p
p = experiment_report.paired({t: 0.75 for t in "abcd"}, {t: 0.25 for t in "abcd"})
assert p["mean"] == p["lo"] == p["hi"] == 0.5, p
s = experiment_report.spread([0.5, 0.7, 0.9], [])
assert abs(s["mean"] - 0.7) < 1e-12 and abs(s["std"] - 0.2) < 1e-12, s
assert experiment_report.fmt(s) == "70.0 ± 20.0", experiment_report.fmt(s)
# the bar chart's grid: round steps up to the highest error bar (87% -> 0, 20, ..., 100)
import re
for hi, want in ((0.87, "0 20 40 60 80 100"), (0.41, "0 10 20 30 40 50"), (0.03, "0 5")):
    bars = {"x": {"label": "x", "metrics": {"all": {"m": {"mean": hi / 2, "lo": 0.0, "hi": hi}}}}}
    got = " ".join(re.findall(r">(\d+)%<", experiment_report.svg_bars(bars, "m")))
    assert got == want, "bar chart grid for a top of %g: %s, want %s" % (hi, got, want)
# the confidence histogram: log scale down to the decade of its smallest share; empty bins draw nothing
svg = experiment_report.svg_hist({"hist": {"cuda": [0.002, 0.0, 0.998], "neutral": [0.0, 0.0004, 0.9996]}})
got = " ".join(re.findall(r">([\d.]+)%<", svg))
assert got == "100 10 1 0.1 0.01", "histogram grid: %s, want 100 10 1 0.1 0.01" % got
assert svg.count("<rect") == 4, "histogram: %d bars for 4 non-empty bins" % svg.count("<rect")
# training curves as means of blocks of steps: 101 steps -> 51 points of 2 steps, the last of 1
pts = experiment_report.block_means([(i, float(i)) for i in range(1, 102)])
assert len(pts) == 51 and pts[0] == (2, 1.5) and pts[49] == (100, 99.5) and pts[50] == (101, 101.0), pts[:2] + pts[-2:]
assert experiment_report.block_means([(1, 4.0), (2, 5.0)]) == [(1, 4.0), (2, 5.0)]
# a task passed 1, 3, 1 of 3 times by one row and 2, 2, 1 by another (gen writes 0.333333,
# 1, 0.333333 and 0.666667, 0.666667, 0.333333) has the same pass@1 in both: a tie
import os, tempfile
# (the seeds' overall pass@1 made 50%, 70%, 90% for CuSeT: the row's spread is theirs)
with tempfile.TemporaryDirectory() as syn:
    for s, counts in ((1, (1, 2)), (2, (3, 2)), (3, (1, 1))):
        os.makedirs("%s/seed%d" % (syn, s))
        for row, c in zip(("cuset", "sft"), counts):
            e = json.load(open("%s/seed1/%s.eval.json" % (run, row)))
            for t in e["per_task"]:
                t["n"], t["passed"] = 3, c
                t["result"]["functional"]["1"] = float("%.6f" % (c / 3))
            e["all"]["functional"]["1"] = (0.5, 0.7, 0.9)[s - 1]
            json.dump(e, open("%s/seed%d/%s.eval.json" % (syn, s, row), "w"))
    got = experiment_report.gather(syn, ["1", "2", "3"])
tie = experiment_report.paired(got["cuset"]["task_functional@1"], got["sft"]["task_functional@1"])
assert (tie["mean"], tie["lo"], tie["hi"], tie["higher"], tie["lower"]) == (0, 0, 0, 0, 0), tie
f1 = got["cuset"]["metrics"]["all"]["functional@1"]
assert abs(f1["mean"] - 0.7) < 1e-12 and abs(f1["std"] - 0.2) < 1e-12, f1
assert got["cuset"]["seed_functional@1"] == [0.5, 0.7, 0.9] and got["cuset"]["seeds"] == 3, got["cuset"]["seed_functional@1"]
assert all(abs(v - 5 / 9) < 1e-12 for v in got["cuset"]["task_functional@1"].values()), "tasks passed 1, 3, 1 of 3: 5/9"
print("%d numbers = mean and std of two seeds or paired differences; %d stages of seed 1 skipped; 50/70/90%% -> 70.0 ± 20.0" % (n, skipped))
PY
       ); then ok "experiment_two_seeds: $out"
    else bad "experiment_two_seeds" "${out:-exit $?: $(tail -3 "$TMP/experiment3.out")}"; fi
    # --against a run with fewer seeds: compared over the seeds both have (here seed 1), so
    # "this run" is seed 1's pass@1, not the mean of seeds 1 and 2
    # (seed 2's CuSeT made to pass every task here, so that the mean of the seeds is not seed 1's)
    cp -r "$exp" "$TMP/two_seeds"
    if out=$("$PYTHON" - "$TMP/two_seeds" <<'PY' 2>&1
import json, sys
p = sys.argv[1] + "/seed2/cuset.eval.json"
e = json.load(open(p))
for t in e["per_task"]:
    t["passed"], t["result"]["functional"]["1"] = t["n"], 1.0
e["all"]["functional"]["1"] = 1.0
json.dump(e, open(p, "w"))
PY
       ) && out=$("$PYTHON" data/experiment_report.py "$TMP/two_seeds" --against "$reuse" 2>&1 && "$PYTHON" - "$TMP/two_seeds" <<'PY' 2>&1
import json, sys
run = sys.argv[1]
vs = json.load(open(run + "/results.json"))["against"]
assert vs["seeds"] == ["1"], vs["seeds"]
want = json.load(open(run + "/seed1/cuset.eval.json"))["all"]["functional"]["1"]
assert want < 1.0 and abs(vs["rows"]["cuset"]["this"] - want) < 1e-12, (vs["rows"]["cuset"], want)
assert "; seeds 1)" in open(run + "/results.md").read()
print("over seed 1 only")
PY
       ); then ok "experiment_against_common_seeds: $out"; else bad "experiment_against_common_seeds" "$out"; fi
    # SET changes a preset's setting: here the scored tasks, so only the 9 evaluations run again
    expect "experiment_set_unknown" 2 "SET: 'SEQ' is not a setting it can change" env PRESET=smoke SET="SEQ=64" RUN="$exp" bash data/experiment.sh
    expect "experiment_set_bad_value" 2 "SET: FT_LR wants a number such as 5e-4 or 0.2, got '1e-3x'" \
        env PRESET=smoke SET="FT_STEPS=2 FT_LR=1e-3x" RUN="$exp" bash data/experiment.sh
    expect "experiment_set_bad_number" 2 "SET: BASE_LR wants a number such as 5e-4 or 0.2, got 'e5'" \
        env PRESET=smoke SET="BASE_LR=e5" RUN="$exp" bash data/experiment.sh
    expect "experiment_new_families_unknown" 2 "NEW_FAMILIES: 'softmax' is not one of the preset's families" \
        env PRESET=smoke SET="NEW_FAMILIES=convert_int_to_float,softmax" RUN="$exp" bash data/experiment.sh
    expect "experiment_new_families_all" 2 "NEW_FAMILIES leaves no family for the base part" \
        env PRESET=smoke SET="NEW_FAMILIES=convert_int_to_float,elementwise_binary" RUN="$exp" bash data/experiment.sh
    # what train or gen would refuse only after hours of training is refused before the first stage
    expect "experiment_temperature_range" 2 "TEMPERATURE \\(200\\): at most 100" env PRESET=smoke SET="TEMPERATURE=200" RUN="$exp" bash data/experiment.sh
    expect "experiment_zero_lr" 2 "FT_LR is 0: the model would not change" env PRESET=smoke SET="FT_LR=0" RUN="$exp" bash data/experiment.sh
    expect "experiment_seed_range" 2 "SEEDS: whole numbers up to 2147483647 .*got '99999999999'" \
        env PRESET=smoke SEEDS=99999999999 RUN="$exp" bash data/experiment.sh
    expect "experiment_seeds_trailing_comma" 2 "SEEDS: .*got '1,2,'" env PRESET=smoke SEEDS=1,2, RUN="$exp" bash data/experiment.sh
    expect "experiment_set_twice" 2 "SET: FT_STEPS given twice" env PRESET=smoke SET="FT_STEPS=4 FT_STEPS=5" RUN="$exp" bash data/experiment.sh
    touch "$TMP/run_file"
    expect "experiment_run_is_a_file" 1 "RUN: cannot write to the directory '.*run_file'" env PRESET=smoke RUN="$TMP/run_file" bash data/experiment.sh
    expect "experiment_relative_run" 0 "RUN=\"$TMP/here/mine\"" sh -c "mkdir -p '$TMP/here' && cd '$TMP/here' && PRESET=smoke RUN=mine bash '$PWD/data/experiment.sh' --settings"
    out=
    if OMP_NUM_THREADS=1 PRESET=smoke SET="EVAL_TASKS=2" RUN="$exp" bash data/experiment.sh >"$TMP/experiment4.out" 2>&1 &&
       out=$("$PYTHON" - "$exp" "$(grep -c 'done before' "$TMP/experiment4.out")" <<'PY' 2>&1
import json, sys
run, skipped = sys.argv[1], int(sys.argv[2])
assert skipped == 19, "%d stages skipped, want 19 (corpus, base model, 8 fine-tunings, 9 analyses)" % skipped
r = json.load(open(run + "/results.json"))
assert r["settings"]["set"] == "EVAL_TASKS=2" and r["settings"]["eval_tasks"] == 2, r["settings"]
for row in r["rows"]:
    tasks = json.load(open("%s/seed1/%s.eval.json" % (run, row)))["per_task"]
    assert len(tasks) == 2, "%s scored %d tasks, want 2" % (row, len(tasks))
assert "Preset smoke with EVAL_TASKS=2;" in open(run + "/results.md").read(), "results.md does not say what SET changed"
print("19 stages kept, 9 rows scored on 2 tasks, results.md names the change")
PY
       ); then ok "experiment_set: $out"
    else bad "experiment_set" "${out:-exit $?: $(tail -3 "$TMP/experiment4.out")}"; fi
    # NEW_FAMILIES: the base part leaves a family out; the fine-tuning part and the test split keep it
    out=
    if OMP_NUM_THREADS=1 PRESET=smoke SET="NEW_FAMILIES=convert_int_to_float EVAL_TASKS=2 ANALYZE=2" RUN="$TMP/expnew" \
           bash data/experiment.sh >"$TMP/experiment5.out" 2>&1 &&
       out=$("$PYTHON" - "$TMP/expnew" <<'PY' 2>&1
import collections, json, sys
run = sys.argv[1]
fams = {part: collections.Counter(json.loads(l)["family"] for l in open("%s/data/%s.jsonl" % (run, part)))
        for part in ("train", "base", "ft", "test")}
assert "convert_int_to_float" not in fams["base"] and fams["base"]["elementwise_binary"] > 0, fams["base"]
assert fams["ft"]["convert_int_to_float"] > 0 and fams["test"]["convert_int_to_float"] > 0, fams
st = json.load(open(run + "/results.json"))["settings"]
nbase = sum(fams["base"].values())
assert st["new_families"] == "convert_int_to_float" and st["base_tasks"] == nbase < 48, st
md = open(run + "/results.md").read()
for want in ("SFT for 6 steps (training seed 1337) on %d tasks" % nbase, "New in fine-tuning: convert_int_to_float.", "| convert_int_to_float (new) |"):
    assert want in md, "results.md lacks %r" % want
print("base part: %d tasks, none of convert_int_to_float; fine-tuning part: %d of its %d; results.md marks it new"
      % (nbase, fams["ft"]["convert_int_to_float"], sum(fams["ft"].values())))
PY
       ); then ok "experiment_new_families: $out"
    else bad "experiment_new_families" "${out:-exit $?: $(tail -3 "$TMP/experiment5.out")}"; fi
fi

if [ "$fail" -gt 0 ]; then
    echo "== the $fail failed checks, again"
    printf '%.400s\n' "${failures[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
