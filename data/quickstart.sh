#!/usr/bin/env bash
# The quick start (`make quickstart`): build; write a small corpus of CUDA tasks (one
# family, element-wise binary operations, in one plain style: the easiest of the
# experiment's cpu preset, so that ~10 minutes of CPU training can pass its tasks); train
# a small GPT on it with plain SFT; fine-tune that base model with CuSeT; then score the
# CuSeT model on test tasks it never saw (compile with nvcc, run under the CPU emulator or
# on a GPU, compare the outputs) and print a program it wrote that passes.
# CuSeT is a post-training objective: from random weights every confidence is below tau,
# so the base model comes first. Override the lengths with SFT_STEPS=N CUSET_STEPS=N.
set -euo pipefail
[ -z "${RUN:-}" ] || [[ $RUN == /* ]] || RUN=$PWD/$RUN # a relative RUN names a directory where the command was given
cd "$(dirname "$0")/.."
# At 1,500 SFT steps the score hung on the training seed (7 to 25 of the 30 test tasks over
# five seeds); at 2,500 each of the three seeds tried (the two weakest among them) passed all 30.
SFT_STEPS=${SFT_STEPS:-2500}
CUSET_STEPS=${CUSET_STEPS:-40}
TASKS=${TASKS:-10}
for v in SFT_STEPS CUSET_STEPS TASKS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "quickstart: $v: a whole number, at least 1, got '${!v}'" >&2; exit 2; }
done
[ ${#TASKS} -le 2 ] && [ "$TASKS" -le 30 ] || { echo "quickstart: TASKS: at most 30 (the test tasks of its corpus), got $TASKS" >&2; exit 2; }
for v in SFT_STEPS CUSET_STEPS; do
    n=${!v}
    [ ${#n} -le 9 ] || [ "$n" = 1000000000 ] || { echo "quickstart: $v: at most 1000000000 (train's --steps), got $n" >&2; exit 2; }
done
# train_phase ARGS...: train; Ctrl-C there (train saves and exits 130) ends the quick start
# with what a rerun does (train's own --resume hint would need every flag of this script)
train_phase() {
    ./train "$@" || { local rc=$?; [ $rc != 130 ] || echo "quickstart: interrupted; rerun make quickstart to continue (phase 1 resumes from its checkpoint, or is kept once done)" >&2; exit $rc; }
}
RUN=${RUN:-runs/quickstart}
DATA=$RUN/data

# The GPU backend only pays off with a GPU: without one, skip its (minutes-long) nvcc build.
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=(); where="the GPU"
else gpu=(NVCC=); where="the CPU (no GPU found)"; fi
bash test/deps.sh eval # what the build needs, and bubblewrap: gen --eval runs programs in a sandbox
echo "== building train, gen, the corpus generator and the CUDA emulator"
make -s -j2 "${gpu[@]}" all data/corpus
mkdir -p "$RUN"
echo "== a corpus of CUDA tasks in $DATA: element-wise binary operations (add, multiply, squared difference, ...)"
./data/corpus --out "$DATA" --families elementwise_binary --style plain \
    --train 3000 --val 60 --test 30
model=(--layers 4 --heads 4 --embd 128 --ctx 1024 --seq 1024 --batch 4)

echo
echo "== phase 1 on $where: a base model, plain SFT, $SFT_STEPS steps (progress every 10 steps)"
# kept across reruns: base.ckpt.done holds the key (steps, data) of a finished phase 1,
# base.ckpt.started that of one that was interrupted (train checkpointed it: the rerun resumes it)
data_flags=(--data "$DATA/train.jsonl" --val-data "$DATA/val.jsonl")
key="steps=$SFT_STEPS data=$(cat "$DATA/train.jsonl" "$DATA/val.jsonl" | cksum | cut -d' ' -f1)"
if [ "$(cat "$RUN/base.ckpt.done" 2>/dev/null)" = "$key" ] && [ -f "$RUN/base.ckpt" ]; then
    echo "   done before: $RUN/base.ckpt ($SFT_STEPS steps on the same data) is kept (remove it to train it again)"
elif [ "$(cat "$RUN/base.ckpt.started" 2>/dev/null)" = "$key" ] && [ -f "$RUN/base.ckpt" ]; then
    echo "   resuming the interrupted phase 1 from $RUN/base.ckpt"
    train_phase --resume "${data_flags[@]}" --quiet --ckpt "$RUN/base.ckpt"
else
    rm -f "$RUN/base.ckpt" "$RUN/base.ckpt.done" "$RUN/base.ckpt.jsonl"
    echo "$key" >"$RUN/base.ckpt.started"
    train_phase "${data_flags[@]}" "${model[@]}" --objective sft --steps "$SFT_STEPS" --lr 2e-3 --min-lr 2e-4 \
        --warmup 20 --val-every 0 --quiet --ckpt "$RUN/base.ckpt"
fi
mv "$RUN/base.ckpt.started" "$RUN/base.ckpt.done" 2>/dev/null || true

echo
echo "== phase 2: CuSeT fine-tuning of the base model, $CUSET_STEPS steps"
train_phase --init "$RUN/base.ckpt" "${data_flags[@]}" --objective cuset \
    --steps "$CUSET_STEPS" --lr 5e-4 --min-lr 5e-5 --warmup 5 --val-every 0 --quiet --ckpt "$RUN/cuset.ckpt"

echo
echo "== phase 3: the CuSeT model writes a program for each of $TASKS test tasks (greedy); each is compiled,"
echo "   run and its outputs compared with the task's (gen --eval; details in $RUN/eval.jsonl)"
if ! ./gen --model "$RUN/cuset.ckpt" --eval "$DATA/test.jsonl" --count "$TASKS" --samples 1 --k 1 --temperature 0 \
    --max-tokens 1000 --jobs 2 --results "$RUN/eval.jsonl" --summary "$RUN/eval.json" 2>"$RUN/eval.log" >"$RUN/eval.txt"; then
    echo "quickstart: gen --eval failed; the end of its log, $RUN/eval.log:" >&2
    tail -n 4 "$RUN/eval.log" >&2
    exit 1
fi
grep -E "^(compilation|functional) +pass|^outcomes" "$RUN/eval.txt"
# the first task it passed; greedy decoding writes the same program again
pass=$(grep -m1 '"status": "pass"' "$RUN/eval.jsonl" | sed 's/^{"task": \([0-9]*\),.*/\1/' || true)
echo
if [ -n "$pass" ]; then
    echo "== a passing program: test task $pass, its prompt and what the model wrote"
    ./gen --model "$RUN/cuset.ckpt" --prompt-jsonl "$DATA/test.jsonl" --index "$pass" --show-prompt --temperature 0 \
        --max-tokens 1000
else
    echo "== no test task passed: the first program and why it failed (train longer: SFT_STEPS=N make quickstart)"
    grep -m1 '"task"' "$RUN/eval.jsonl" |
        sed 's/.*"status": "\([a-z_]*\)".*"detail": "\(\([^"\\]\|\\.\)*\)".*/status \1: \2/; s/\\"/"/g'
    ./gen --model "$RUN/cuset.ckpt" --prompt-jsonl "$DATA/test.jsonl" --index 0 --show-prompt --temperature 0 \
        --max-tokens 1000
fi
echo
echo "== done: checkpoints, JSON-lines logs and the evaluation in $RUN/ (make experiment compares every objective)"
