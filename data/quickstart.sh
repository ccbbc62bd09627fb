#!/usr/bin/env bash
# The quick start (`make quickstart`): build, make the default corpus, train a small GPT on
# it with plain SFT, fine-tune that base model with CuSeT, and print a program the model
# writes for a task of the test split: 330 steps of 4 x 1024 tokens (1.35M tokens) on the CPU.
# CuSeT is a post-training objective: from random weights every confidence is below tau,
# so the base model comes first. Override the lengths with SFT_STEPS=N CUSET_STEPS=N.
set -euo pipefail
cd "$(dirname "$0")/.."
SFT_STEPS=${SFT_STEPS:-240}
CUSET_STEPS=${CUSET_STEPS:-90}
RUN=${RUN:-runs/quickstart}

# The GPU backend only pays off with a GPU: without one, skip its (minutes-long) nvcc build.
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=(); where="the GPU"
else gpu=(NVCC=); where="the CPU (no GPU found)"; fi
# make first checks the packages the build needs (test/deps.sh: installs them as root)
echo "== building train, gen and the corpus generator; writing the default corpus to data/default"
make -s -j2 "${gpu[@]}" all data
echo "== training on $where"
mkdir -p "$RUN"
model=(--layers 4 --heads 4 --embd 128 --ctx 1024 --seq 1024 --batch 4)

echo
echo "== phase 1: a base model, plain SFT, $SFT_STEPS steps (progress every 10 steps)"
./train --data data/default/train.jsonl --val-data data/default/val.jsonl "${model[@]}" --objective sft \
    --steps "$SFT_STEPS" --lr 2e-3 --min-lr 2e-4 --warmup 20 --val-every 120 --quiet --ckpt "$RUN/base.ckpt"

echo
echo "== phase 2: CuSeT fine-tuning of the base model, $CUSET_STEPS steps"
./train --init "$RUN/base.ckpt" --data data/default/train.jsonl --val-data data/default/val.jsonl --seq 1024 \
    --batch 4 --objective cuset --steps "$CUSET_STEPS" --lr 5e-4 --min-lr 5e-5 --warmup 10 --val-every 0 --quiet \
    --ckpt "$RUN/cuset.ckpt"

echo
echo "== a program written by the CuSeT model for the first task of the test split (greedy)"
./gen --model "$RUN/cuset.ckpt" --prompt-jsonl data/default/test.jsonl --index 0 --show-prompt --temperature 0 \
    --max-tokens 1000
echo
echo "== done: checkpoints and JSON-lines logs in $RUN/"
