#!/usr/bin/env bash
# The experiment (`make experiment`): the paper's comparison (Table 2) and ablation
# (Table 5) in miniature, plus its confidence analysis.
#
#   make experiment [PRESET=cpu|gpu|smoke] [SEEDS=1,2,3] [SET="NAME=VALUE ..."] [RUN=DIR] [REUSE=DIR] [JOBS=N]
#   PRESET=gpu bash data/experiment.sh --settings   prints a preset's settings and exits
#   bash data/experiment.sh --help                   prints this
#
# SET changes a preset's settings, e.g. SET="BASE_STEPS=900 FT_STEPS=400": the corpus sizes
# (NBASE NFT NVAL NTEST EVAL_TASKS), training (BASE_STEPS BASE_LOSS BASE_LR BASE_SEED FT_STEPS FT_LR BATCH) and
# evaluation (SAMPLES TEMPERATURE MAX_TOKENS ANALYZE WINDOW TAU). SET="NEW_FAMILIES=a,b" leaves
# those families out of the base part, so the fine-tuning part teaches them new. SET is the
# one way to change them: one given otherwise (make experiment FT_STEPS=5, an exported
# variable), which the preset would replace without a word, is refused.
#
# RUN, where everything goes: runs/experiment-PRESET, or with SET runs/experiment-PRESET+SET
# (its words joined by +), so a changed run keeps the preset's results. REUSE=DIR: a
# finished run whose stages made with the same settings are linked into RUN instead of run
# again; a SET run in its default RUN reuses runs/experiment-PRESET.
#
# 1. a corpus of CUDA tasks (data/corpus); its training split is cut in two disjoint
#    parts: the base part and the fine-tuning part;
# 2. one base model: plain SFT on the base part (the paper's "vanilla" model);
# 3. from that one base checkpoint, for every seed, one fine-tuned model per objective
#    (sft, dft, profit, eaft, asft, cuset and CuSeT's two partial ablations), all with
#    the same fine-tuning data, steps, schedule and seed;
# 4. every model, the base included, scored on the test split with gen --eval
#    (compilation and functional pass@1 and pass@3 from n samples per task);
# 5. gen --analyze: the confidence analysis on the validation split, for every model;
# 6. data/experiment_report.py: results.json, results.md and report.html in RUN (with REUSE,
#    the rows scored otherwise here, paired with the reused run's).
#
# A stage whose outputs exist for the same settings is skipped, so rerunning continues
# where a run stopped; an interrupted training stage resumes from its checkpoint. Ctrl-C
# leaves nothing half-written: outputs appear under their names only when complete.
set -euo pipefail
for v in RUN REUSE; do # a relative RUN or REUSE names a directory where the command was given
    [ -z "${!v:-}" ] || [[ ${!v} == /* ]] || printf -v "$v" '%s/%s' "$PWD" "${!v}"
done
cd "$(dirname "$0")/.."
if [ "$*" = --help ] || [ "$*" = -h ]; then sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0; fi
[ $# -eq 0 ] || [ "$*" = --settings ] || { echo "experiment: unknown arguments '$*' (settings come from PRESET, SEEDS, RUN, JOBS, SET; --settings prints a preset's, --help the usage)" >&2; exit 2; }
# the settings SET may change. The preset assigns each of them, so a value in the environment
# would be replaced without a word (`make experiment FT_STEPS=5`, which make exports to this
# script, ran the preset's steps): SET is the one way in, and a name set in the environment
# (to something other than empty) is refused unless SET gives it the same value
SETTINGS=(NBASE NFT NVAL NTEST EVAL_TASKS BASE_STEPS BASE_LOSS BASE_LR BASE_SEED FT_STEPS FT_LR BATCH SAMPLES TEMPERATURE
          MAX_TOKENS ANALYZE WINDOW TAU NEW_FAMILIES)
outside=() differ=()
for name in "${SETTINGS[@]}"; do
    [ -n "${!name:-}" ] || continue
    if [[ " ${SET:-} " == *" $name="* ]]; then
        [[ " ${SET:-} " == *" $name=${!name} "* ]] || differ+=("$name")
    else outside+=("$name=${!name}"); fi
done
if [ ${#differ[@]} -gt 0 ]; then
    echo "experiment: ${differ[*]}: set both in the environment (a make command-line variable is one) and in SET" \
        "('${SET:-}'), to other values: give each once, in SET" >&2
    exit 2
elif [ ${#outside[@]} -gt 0 ]; then
    read -r -a want <<<"${SET:-} ${outside[*]}" # (SET's words and these, as one SET)
    echo "experiment: ${outside[*]}: set in the environment (a make command-line variable is one), where the preset" \
        "would replace it: give it through SET, as in make experiment SET=\"${want[*]}\" (or unset it)" >&2
    exit 2
fi
# a make command-line variable that neither this script nor the build reads: a typo (SEED=2
# for SEEDS=2) would run the preset's defaults without a word. The build's are the Makefile's.
for name in ${MAKE_VARIABLES:-}; do
    [[ " PRESET SEEDS RUN REUSE SET JOBS ${SETTINGS[*]} " == *" $name "* ]] && continue
    grep -qE "^$name[[:space:]]*[?:+]?=|\\\$[({]$name[:)}]" Makefile && continue
    echo "experiment: $name: a make variable that neither the experiment nor the build reads (the experiment's" \
        "are PRESET, SEEDS, RUN, REUSE, SET and JOBS; a preset's settings go in SET; bash data/experiment.sh --help)" >&2
    exit 2
done
PRESET=${PRESET:-}
if [ -z "$PRESET" ]; then
    if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then PRESET=gpu; else PRESET=cpu; fi
fi
SEEDS=${SEEDS:-1}
JOBS=${JOBS:-$(nproc --all)} # (plain nproc follows OMP_NUM_THREADS)

# --- presets: the corpus, the model, the training and the evaluation --------------------
# Every row of the comparison shares these. The cpu preset's base model (the validation loss
# it trains to) and the temperature were calibrated on the base model's test score (README,
# "How the cpu preset was chosen"); nothing was chosen by the fine-tuned rows' scores.
TEMPERATURE=0.2 SAMPLES=3 KS=1,3  # sampling for pass@k: n = 3 programs per task at T = 0.2 (Codex's pass@1 setting)
WINDOW=256                       # CuSeT's l (the paper's default)
TAU=0.1                          # the confidence threshold of ProFit's and CuSeT's masks (the paper's default)
NEW_FAMILIES=                    # families left out of the base part (none: every family in both parts)
BASE_SEED=1337                   # the base model's training seed (initial weights, data order); SEEDS: the fine-tuning's
BASE_LOSS=0                      # the base model's SFT stops at this validation loss (0: it trains all BASE_STEPS)
case "$PRESET" in
smoke) # every stage end to end in a couple of minutes (CI runs it); measures nothing
    FAMILIES=elementwise_binary,convert_int_to_float STYLE=plain
    NBASE=48 NFT=24 NVAL=8 NTEST=4 EVAL_TASKS=4
    MODEL=(--layers 1 --heads 2 --embd 32 --ctx 1024 --vocab 512) SEQ=1024 BATCH=2
    BASE_STEPS=6 BASE_LR=3e-3 FT_STEPS=3 FT_LR=1e-3 MAX_TOKENS=160 ANALYZE=8 ;;
cpu) # sized for 2 CPU cores: see README, "The experiment"
    FAMILIES=elementwise_binary,convert_float_to_int,convert_int_to_float STYLE=plain
    # base: until a validation loss of 0.009, at most 3,000 steps (2 epochs of the base part);
    # fine-tuning: 250 steps, one epoch of the fine-tuning part (one task per row); 60 test
    # tasks for tighter intervals
    NBASE=6000 NFT=1000 NVAL=60 NTEST=60
    MODEL=(--layers 4 --heads 4 --embd 128 --ctx 1024 --vocab 2048) SEQ=1024 BATCH=4
    BASE_STEPS=3000 BASE_LOSS=0.009 BASE_LR=2e-3 FT_STEPS=250 FT_LR=5e-4 MAX_TOKENS=1000 ANALYZE=20 EVAL_TASKS=60 ;;
gpu) # the whole corpus and a larger model, for one H100/H200-class GPU. Its varied-style
    # samples take up to 1,922 tokens, their targets up to 1,713 (the 8,000 base tasks of seed 1
    # with their 4096-id tokenizer; 52% of them are over 1,024): a context of 2048 holds them whole
    FAMILIES=all STYLE=varied
    NBASE=8000 NFT=2000 NVAL=200 NTEST=100 EVAL_TASKS=100
    MODEL=(--layers 8 --heads 8 --embd 512 --ctx 2048 --vocab 4096) SEQ=2048 BATCH=8
    BASE_STEPS=3000 BASE_LR=1e-3 FT_STEPS=300 FT_LR=2e-4 MAX_TOKENS=1800 ANALYZE=200 ;;
*) echo "experiment: unknown PRESET '$PRESET' (cpu, gpu or smoke)" >&2; exit 2 ;;
esac
SET=${SET:-}
read -r -a sets <<<"$SET"
given=" "
for kv in "${sets[@]}"; do # the preset's settings that SET changes, each checked before anything runs
    [[ $kv == *=* ]] || { echo "experiment: SET: '$kv' is not NAME=VALUE" >&2; exit 2; }
    name=${kv%%=*} value=${kv#*=}
    [[ $given != *" $name "* ]] || { echo "experiment: SET: $name given twice in '$SET'" >&2; exit 2; }
    given+="$name "
    case "$name" in
    NBASE|NFT|NVAL|NTEST|EVAL_TASKS|BASE_STEPS|FT_STEPS|BATCH|SAMPLES|MAX_TOKENS|ANALYZE|WINDOW) pattern='^[1-9][0-9]*$' what="a whole number, at least 1" ;;
    BASE_SEED) pattern='^(0|[1-9][0-9]*)$' what="a whole number (no leading zeros)" ;;
    BASE_LR|BASE_LOSS|FT_LR|TEMPERATURE|TAU) pattern='^(0|[1-9][0-9]*)(\.[0-9]+)?(e-?[0-9]+)?$' what="a number such as 5e-4 or 0.2" ;;
    NEW_FAMILIES) pattern='^[a-z0-9_]+(,[a-z0-9_]+)*$' what="family names separated by commas" ;;
    *) echo "experiment: SET: '$name' is not a setting it can change (${SETTINGS[*]})" >&2; exit 2 ;;
    esac
    [[ $value =~ $pattern ]] || { echo "experiment: SET: $name wants $what, got '${value}' in '$kv'" >&2; exit 2; }
    printf -v "$name" '%s' "$value"
done
REUSE=${REUSE:-}
if [ -z "${RUN:-}" ]; then # the preset's run; with SET, a run of its own that reuses the preset's
    RUN=runs/experiment-$PRESET
    if [ ${#sets[@]} -gt 0 ]; then
        [ -n "$REUSE" ] || [ ! -d "$RUN" ] || REUSE=$RUN
        RUN+=+$(IFS=+; echo "${sets[*]}")
    fi
fi
[ -z "$REUSE" ] || [ -d "$REUSE" ] || { echo "experiment: REUSE: '$REUSE' is not a directory (give a finished run's RUN: its stages made with the same settings are linked in)" >&2; exit 2; }
[ ${#BASE_SEED} -le 10 ] && [ "$BASE_SEED" -le 2147483647 ] || { echo "experiment: BASE_SEED ($BASE_SEED) is train's --seed: at most 2147483647" >&2; exit 2; }
# at_most NAME HI [WHY]: train's and gen's limits, checked now rather than after hours of training
at_most() { awk -v x="${!1}" -v hi="$2" 'BEGIN { exit !(x <= hi) }' || { echo "experiment: $1 (${!1})${3:-}: at most $2" >&2; exit 2; }; }
at_most TAU 1 " is a confidence threshold"; at_most TEMPERATURE 100; at_most WINDOW 1048576; at_most MAX_TOKENS 1048576
at_most BASE_LR 10; at_most FT_LR 10
at_most BASE_STEPS 1000000000 " is train's --steps"; at_most FT_STEPS 1000000000 " is train's --steps"
at_most BATCH 65536 " is train's --batch"; at_most SAMPLES 1000 " is gen's --samples"
at_most NVAL 10000000 " is data/corpus's --val"; at_most NTEST 10000000 " is data/corpus's --test"
awk -v x="$((NBASE + NFT))" 'BEGIN { exit !(x <= 10000000 && '"${#NBASE}"' < 10 && '"${#NFT}"' < 10) }' ||
    { echo "experiment: NBASE + NFT ($NBASE + $NFT) is data/corpus's --train: at most 10000000" >&2; exit 2; }
for v in BASE_LR FT_LR; do
    awk -v x="${!v}" 'BEGIN { exit !(x > 0) }' || { echo "experiment: $v is 0: the model would not change" >&2; exit 2; }
done
[ "$(tr , '\n' <<<"$NEW_FAMILIES" | sort | uniq -d)" = "" ] || { echo "experiment: SET: NEW_FAMILIES names a family twice ($NEW_FAMILIES)" >&2; exit 2; }
[ "$EVAL_TASKS" -le "$NTEST" ] || { echo "experiment: EVAL_TASKS ($EVAL_TASKS) is more than the test split holds (NTEST $NTEST)" >&2; exit 2; }
[ "$ANALYZE" -le "$NVAL" ] || { echo "experiment: ANALYZE ($ANALYZE) is more than the validation split holds (NVAL $NVAL)" >&2; exit 2; }
# check_new_families FAMILY_LIST: checks NEW_FAMILIES against the families the corpus draws (a
# list; 'all' is checked once the corpus program is built) and that the base part keeps one
check_new_families() {
    local f
    [ -n "$NEW_FAMILIES" ] && [ "$1" != all ] || return 0
    for f in ${NEW_FAMILIES//,/ }; do
        [[ ,$1, == *,$f,* ]] || { echo "experiment: SET: NEW_FAMILIES: '$f' is not one of the preset's families ($1)" >&2; exit 2; }
    done
    [ "$(tr , '\n' <<<"$NEW_FAMILIES" | sort -u | wc -l)" -lt "$(tr , '\n' <<<"$1" | sort -u | wc -l)" ] ||
        { echo "experiment: SET: NEW_FAMILIES leaves no family for the base part ($NEW_FAMILIES of $1)" >&2; exit 2; }
}
check_new_families "$FAMILIES"
[ "$SAMPLES" -ge "${KS##*,}" ] || { echo "experiment: SAMPLES ($SAMPLES) is below the largest k of pass@k (KS=$KS): it needs k programs per task" >&2; exit 2; }
IFS=, read -r -a seeds <<<"$SEEDS"
[[ $SEEDS != *, ]] || seeds+=("") # a trailing comma: an empty seed, refused below
for s in "${seeds[@]}"; do
    [[ $s =~ ^(0|[1-9][0-9]*)$ ]] && [ ${#s} -le 10 ] && [ "$s" -le 2147483647 ] ||
        { echo "experiment: SEEDS: whole numbers up to 2147483647 (no leading zeros) separated by commas, got '$SEEDS'" >&2; exit 2; }
done
[ -z "$(printf '%s\n' "${seeds[@]}" | sort | uniq -d)" ] || { echo "experiment: SEEDS: each seed once (a repeat would count one run twice in the spread), got '$SEEDS'" >&2; exit 2; }
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "experiment: JOBS: a whole number of parallel jobs, at least 1, got '$JOBS'" >&2; exit 2; }
if [ "${1:-}" = --settings ]; then # as shell assignments (make test checks that each preset's context fits its corpus)
    declare -p PRESET SET FAMILIES NEW_FAMILIES STYLE NBASE NFT NVAL NTEST EVAL_TASKS MODEL SEQ BATCH BASE_STEPS BASE_LOSS BASE_LR BASE_SEED FT_STEPS FT_LR \
        MAX_TOKENS ANALYZE TEMPERATURE SAMPLES KS WINDOW TAU RUN REUSE
    exit 0
fi
if [ "$PRESET" = gpu ] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
    echo "experiment: PRESET=gpu needs a GPU and nvidia-smi finds none; on the CPU it would take days (PRESET=cpu is sized for a CPU)" >&2
    exit 2
fi
ROWS=(sft dft profit eaft asft cuset cuset_conf_cuda cuset_conf_rew)
row_flags() {
    case $1 in
    cuset_conf_cuda) echo "--objective cuset --no-reweight" ;;
    cuset_conf_rew) echo "--objective cuset --no-cuda-mask" ;;
    *) echo "--objective $1" ;;
    esac
}

# --- bookkeeping: stage keys, atomic outputs, progress -----------------------------------
mkdir -p "$RUN" 2>/dev/null && [ -w "$RUN" ] ||
    { echo "experiment: RUN: cannot write to the directory '$RUN' (a file of that name, or no permission): give another RUN=DIR" >&2; exit 1; }
exec 9>"$RUN/.lock" # one run per directory: a second one would write into the same files
flock -n 9 || { echo "experiment: another run is using $RUN (wait for it, or give another RUN=DIR)" >&2; exit 1; }
T0=$(date +%s)
# the run's time over every invocation, for the report: RUN/.elapsed holds the seconds of the
# earlier ones, how many there were and when the first started (written at each stage and at the end)
read -r prior_s prior_n first_start 2>/dev/null <"$RUN/.elapsed" || true
[[ ${prior_s:-} =~ ^[0-9]+$ && ${prior_n:-} =~ ^[0-9]+$ && ${first_start:-} =~ ^[0-9]+$ ]] || prior_s=0 prior_n=0 first_start=$T0
save_elapsed() { echo "$(( prior_s + $(date +%s) - T0 )) $(( prior_n + 1 )) $first_start" >"$RUN/.elapsed"; }
trap save_elapsed EXIT # finished, failed or interrupted
interrupted() { echo; echo "experiment: interrupted; rerun the same command to continue (finished stages are kept)" >&2; exit 130; }
# failed RC: a stage's program failed (its message above)
failed() {
    [ "$1" != 130 ] || interrupted
    echo "experiment: that stage failed (exit $1); finished stages are kept. If the message names a damaged file of" \
        "this run, remove it and the FILE.key beside it; then rerun the same command" >&2
    exit "$1"
}
trap interrupted INT TERM # train catches Ctrl-C itself (saves, exits 130), and then the shell does not see it
# done_with FILE KEY: FILE exists and was made with exactly these settings
done_with() { [ -f "$1" ] && [ -f "$1.key" ] && [ "$(cat "$1.key")" = "$2" ]; }
mark() { printf '%s' "$2" >"$1.key.tmp" && mv "$1.key.tmp" "$1.key"; }
# found FILE KEY OUTPUT...: whether the stage that writes FILE is done with these settings,
# here or in REUSE (the same path under it); from REUSE, its OUTPUTs (files, or a directory
# whole) are first linked here (hard links, or copies across file systems; every writer
# here renames a new file into place, so a link is never written through), FILE's key last.
# Says which, naming the first OUTPUT.
found() {
    local f=$1 key=$2 x from; shift 2
    if done_with "$f" "$key"; then echo "   done before (same settings): $1"; return 0; fi
    [ -n "$REUSE" ] && done_with "$REUSE/${f#"$RUN"/}" "$key" || return 1
    for x in "$@"; do
        from=$REUSE/${x#"$RUN"/}
        rm -rf "$x.tmp"
        cp -al "$from" "$x.tmp" 2>/dev/null || { rm -rf "$x.tmp"; cp -a "$from" "$x.tmp"; }
        rm -rf "$x" && mv "$x.tmp" "$x"
    done
    rm -f "$f.started" && mark "$f" "$key"
    echo "   done before in $REUSE (same settings), linked: $1"
}
# The work left, for the ETA: training tokens and evaluated programs, at the rates of the
# stages run so far or found done (their logs record how long they took). No guess before
# a rate is known: on a GPU and on 2 cores they differ by orders of magnitude.
nseeds=${#seeds[@]} nrows=${#ROWS[@]}
train_left=$(( (BASE_STEPS + nseeds * nrows * FT_STEPS) * BATCH * SEQ ))
progs_left=$(( nseeds * (nrows + 1) * EVAL_TASKS * SAMPLES ))
train_s=0 train_done=0 eval_s=0 eval_done=0
stage_no=0 stages=$(( 2 + nseeds * nrows + nseeds * (nrows + 1) * 2 + 1 ))
about() { [ "$1" -lt 60 ] && echo "under a minute" || echo "about $(( ($1 + 30) / 60 ))m"; } # seconds, in words
time_left() {
    local t=0
    if [ "$train_left" -gt 0 ]; then
        [ "$train_done" -gt 0 ] || { echo "time left: known after the first training stage"; return; }
        t=$(( train_left * train_s / train_done ))
    fi
    if [ "$progs_left" -gt 0 ] && [ "$eval_done" -eq 0 ]; then
        [ "$train_left" -gt 0 ] && echo "$(about "$t") of training left, then the evaluations" || echo "time left: known after the first evaluation"
        return
    fi
    [ "$progs_left" -gt 0 ] && t=$(( t + progs_left * eval_s / eval_done ))
    echo "$(about "$t") left"
}
say() { # (and the run's time so far: a kill, which runs no EXIT trap, loses one stage's at most)
    save_elapsed
    stage_no=$((stage_no + 1))
    local el=$(( $(date +%s) - T0 ))
    printf '\n== [%d/%d] %s  (elapsed %dm%02ds, %s)\n' "$stage_no" "$stages" "$1" $((el / 60)) $((el % 60)) "$(time_left)"
}

key_common="preset=$PRESET families=$FAMILIES style=$STYLE model=${MODEL[*]} seq=$SEQ batch=$BATCH"

# --- 0. build ----------------------------------------------------------------------------
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=(); else gpu=(NVCC=); fi
bash test/deps.sh eval # the build, and bubblewrap for gen --eval's sandbox
make -s -j"$JOBS" "${gpu[@]}" all data/corpus
[ "$FAMILIES" = all ] && check_new_families "$(./data/corpus --list | awk '/^[a-z]/ {print $1}' | paste -sd,)"

# --- 1. the corpus -----------------------------------------------------------------------
DATA=$RUN/data
say "corpus: $FAMILIES ($STYLE style), $((NBASE + NFT)) training / $NVAL validation / $NTEST test tasks${NEW_FAMILIES:+; $NEW_FAMILIES new in fine-tuning}"
k="$key_common n=$NBASE+$NFT/$NVAL/$NTEST${NEW_FAMILIES:+ new=$NEW_FAMILIES}"
if ! found "$DATA/ft.jsonl" "$k" "$DATA"; then
    rm -rf "$DATA.tmp"
    fam=(); [ "$FAMILIES" = all ] || fam=(--families "$FAMILIES")
    ./data/corpus --out "$DATA.tmp" --seed 1 "${fam[@]}" --style "$STYLE" --train $((NBASE + NFT)) --val "$NVAL" --test "$NTEST"
    # the base part and the fine-tuning part: disjoint, every family in both (families take turns)
    head -n "$NBASE" "$DATA.tmp/train.jsonl" >"$DATA.tmp/base.jsonl"
    if [ -n "$NEW_FAMILIES" ]; then # the base part without their tasks (that much smaller)
        grep -vE "\"family\": *\"(${NEW_FAMILIES//,/|})\"" "$DATA.tmp/base.jsonl" >"$DATA.tmp/base.kept" || [ $? -eq 1 ]
        mv "$DATA.tmp/base.kept" "$DATA.tmp/base.jsonl"
        [ -s "$DATA.tmp/base.jsonl" ] || { echo "experiment: the base part's $NBASE tasks are all of NEW_FAMILIES ($NEW_FAMILIES): raise NBASE" >&2; exit 2; }
    fi
    tail -n "$NFT" "$DATA.tmp/train.jsonl" >"$DATA.tmp/ft.jsonl"
    rm -rf "$DATA" && mv "$DATA.tmp" "$DATA"
    mark "$DATA/ft.jsonl" "$k"
fi

# train_stage CKPT KEY STEPS ARGS...: trains unless done; resumes an interrupted run
train_stage() {
    local ckpt=$1 key=$2 steps=$3 secs nsteps rc; shift 3
    if ! found "$ckpt" "$key" "$ckpt" "$ckpt.jsonl"; then
        local args=("$@") a skip=0
        local started=; [ -f "$ckpt.started" ] && started=$(cat "$ckpt.started")
        if [ -f "$ckpt" ] && [ "$started" = "$key" ]; then
            echo "   resuming the interrupted run in $ckpt"
            args=(--resume) # the same arguments without --init FILE: the checkpoint has the weights
            for a in "$@"; do
                if [ $skip = 1 ]; then skip=0; elif [ "$a" = --init ]; then skip=1; else args+=("$a"); fi
            done
        else # say what is discarded, if anything
            if [ "$started" = "$key" ]; then
                echo "   starting over: the interrupted run in $ckpt stopped before its first checkpoint (train writes one every 10 minutes)"
            elif [ -n "$started" ]; then echo "   starting over: the interrupted run in $ckpt was started with other settings"
            elif [ -f "$ckpt.key" ]; then echo "   training again: $ckpt was made with other settings"; fi
            rm -f "$ckpt" "$ckpt.jsonl" "$ckpt.key"
            printf '%s' "$key" >"$ckpt.started"
        fi
        ./train "${args[@]}" --ckpt "$ckpt" --quiet || { rc=$?; [ $rc = 130 ] && interrupted; failed $rc; }
        mark "$ckpt" "$key"
        rm -f "$ckpt.started"
    fi
    # its training time, for the ETA, whether it ran now, in parts or before: the sum over
    # its logged steps of tokens / (tokens/s)
    read -r secs nsteps < <(awk -v bt=$((BATCH * SEQ)) 'match($0, /"tokens_per_s": [0-9.]+/) {
        s += bt / substr($0, RSTART + 16, RLENGTH - 16); n++ } END { printf "%d %d\n", s + 0.5, n }' "$ckpt.jsonl" 2>/dev/null || echo "0 0")
    train_s=$((train_s + secs)) train_done=$((train_done + nsteps * BATCH * SEQ))
    train_left=$((train_left - steps * BATCH * SEQ))
}

# --- 2. the base model -------------------------------------------------------------------
# With BASE_LOSS, it validates 30 times along its schedule of BASE_STEPS and stops at the first
# validation loss at or below BASE_LOSS (train --until-val-loss): the base model is then as good
# whatever the seed and the corpus's draw (README, "The experiment").
bs=; [ "$BASE_SEED" = 1337 ] || bs=" seed=$BASE_SEED" # (the default unnamed: runs made before BASE_SEED existed stay done)
until=(--val-every 0)
if awk -v x="$BASE_LOSS" 'BEGIN { exit !(x > 0) }'; then
    until=(--val-every $(( (BASE_STEPS + 29) / 30 )) --until-val-loss "$BASE_LOSS") bs+=" until=$BASE_LOSS"
    say "base model: plain SFT on the base part until validation loss $BASE_LOSS (at most $BASE_STEPS steps), seed $BASE_SEED"
else say "base model: plain SFT on the base part, $BASE_STEPS steps, seed $BASE_SEED"; fi
train_stage "$RUN/base.ckpt" "$(cat "$DATA/ft.jsonl.key") base_steps=$BASE_STEPS lr=$BASE_LR$bs" "$BASE_STEPS" \
    --data "$DATA/base.jsonl" --val-data "$DATA/val.jsonl" "${MODEL[@]}" --seq "$SEQ" --batch "$BATCH" \
    --objective sft --steps "$BASE_STEPS" --lr "$BASE_LR" --min-lr "$(awk "BEGIN{print $BASE_LR/10}")" \
    --warmup $((BASE_STEPS / 20 + 1)) "${until[@]}" --seed "$BASE_SEED"
# the steps it trained and its last validation loss, for the report
read -r base_trained base_val < <(grep -o '"step": [0-9]*, "val_loss": [0-9.]*' "$RUN/base.ckpt.jsonl" | tr -d '",:' |
    awk '{ s = $2; v = $4 } END { print s + 0, (NR ? v : "null") }')

# --- 3. fine-tuning: one model per objective and seed, all from base.ckpt ----------------
for s in "${seeds[@]}"; do
    mkdir -p "$RUN/seed$s"
    for row in "${ROWS[@]}"; do
        say "fine-tune $row (seed $s): $FT_STEPS steps from base.ckpt"
        w=; [[ $row == cuset || $row == cuset_conf_rew ]] && w=" window=$WINDOW" # l enters the loss only through w_n
        [[ $row == profit || $row == cuset* ]] && w+=" tau=$TAU" # tau only through the confidence mask
        # shellcheck disable=SC2046 # row_flags gives several words
        train_stage "$RUN/seed$s/$row.ckpt" "$key_common ft=$row$w seed=$s steps=$FT_STEPS lr=$FT_LR base=$(cat "$RUN/base.ckpt.key")" "$FT_STEPS" \
            --init "$RUN/base.ckpt" --data "$DATA/ft.jsonl" --val-data "$DATA/val.jsonl" --seq "$SEQ" --batch "$BATCH" \
            $(row_flags "$row") --window "$WINDOW" --tau "$TAU" --steps "$FT_STEPS" --lr "$FT_LR" \
            --min-lr "$(awk "BEGIN{print $FT_LR/10}")" --warmup $((FT_STEPS / 10 + 1)) --val-every 0 --seed "$s"
    done
done

# --- 4. evaluation and 5. analysis of every model ----------------------------------------
models() { for s in "${seeds[@]}"; do echo "vanilla $s $RUN/base.ckpt"; for row in "${ROWS[@]}"; do echo "$row $s $RUN/seed$s/$row.ckpt"; done; done; }
while read -r row s ckpt; do
    out=$RUN/seed$s/$row
    say "evaluate $row (seed $s): $EVAL_TASKS test tasks x $SAMPLES programs, temperature $TEMPERATURE"
    k="$(cat "$ckpt.key") eval tasks=$EVAL_TASKS n=$SAMPLES T=$TEMPERATURE k=$KS max=$MAX_TOKENS seed=$s"
    if ! found "$out.eval.json" "$k" "$out.eval.json" "$out.eval.jsonl" "$out.eval.txt"; then
        ./gen --model "$ckpt" --eval "$DATA/test.jsonl" --count "$EVAL_TASKS" --samples "$SAMPLES" --k "$KS" --temperature "$TEMPERATURE" \
            --max-tokens "$MAX_TOKENS" --seed "$s" --jobs "$JOBS" --cache "$RUN/eval-cache" \
            --results "$out.eval.jsonl.tmp" --summary "$out.eval.json.tmp" >"$out.eval.txt.tmp" || failed $?
        # gen names the files it wrote, the temporary names: the record names them as they are kept
        sed -E -i '/^(results|summary): /s/\.tmp$//' "$out.eval.txt.tmp"
        mv "$out.eval.jsonl.tmp" "$out.eval.jsonl"; mv "$out.eval.txt.tmp" "$out.eval.txt"; mv "$out.eval.json.tmp" "$out.eval.json"
        mark "$out.eval.json" "$k"
        grep -E "^(compilation|functional)" "$out.eval.txt" | sed 's/^/   /' || true
    fi
    # its time, for the ETA, whether it ran now or before: the summary's seconds
    secs=$(grep -o '"seconds": [0-9.]*' "$out.eval.json" | awk '{ printf "%d", $2 + 0.5 }' || true) # none in old summaries
    [ -n "$secs" ] && eval_s=$((eval_s + secs)) eval_done=$((eval_done + EVAL_TASKS * SAMPLES))
    progs_left=$((progs_left - EVAL_TASKS * SAMPLES))

    label="$row (seed $s)"
    [ "$row" = vanilla ] && out=$RUN/base label="the base model" # one analysis of it, whatever the seed
    say "analyse $label: confidences on $ANALYZE validation samples"
    # (prompt-numbers, gradient-shares, masked-numbers: analyses made before they counted the numbers copied from
    # the prompt, their share of each objective's gradient or those the mask drops, are made again)
    k="$(cat "$ckpt.key") analyze n=$ANALYZE window=64 l=$WINDOW tau=$TAU prompt-numbers gradient-shares masked-numbers"
    t0=$(date +%s)
    if ! found "$out.analysis.json" "$k" "$out.analysis.json" "$out.analysis.txt"; then
        ./gen --model "$ckpt" --analyze "$DATA/val.jsonl" --count "$ANALYZE" --window "$WINDOW" --tau "$TAU" \
            --json "$out.analysis.json.tmp" >"$out.analysis.txt.tmp" || failed $?
        mv "$out.analysis.txt.tmp" "$out.analysis.txt"; mv "$out.analysis.json.tmp" "$out.analysis.json"
        mark "$out.analysis.json" "$k"
        eval_s=$((eval_s + $(date +%s) - t0)) # the ETA counts the analyses with the evaluations
    fi
done < <(models)

# --- 6. the report -----------------------------------------------------------------------
say "report: $RUN/results.json, results.md, report.html"
settings=$(printf '{"preset":"%s","set":"%s","seeds":"%s","families":"%s","new_families":"%s","style":"%s","model":"%s","seq":%d,"batch":%d,"base_tasks":%d,"ft_tasks":%d,"val_tasks":%d,"test_tasks":%d,"eval_tasks":%d,"base_steps":%d,"base_loss":%s,"base_trained_steps":%d,"base_val_loss":%s,"base_lr":%s,"base_seed":%d,"ft_steps":%d,"ft_lr":%s,"window":%d,"tau":%s,"samples":%d,"temperature":%s,"max_tokens":%d,"analyzed":%d,"started":"%s","invocations":%d,"machine":"%s"}' \
    "$PRESET" "$SET" "$SEEDS" "$FAMILIES" "$NEW_FAMILIES" "$STYLE" "${MODEL[*]}" "$SEQ" "$BATCH" "$(wc -l <"$DATA/base.jsonl")" "$NFT" "$NVAL" "$NTEST" "$EVAL_TASKS" "$BASE_STEPS" "$BASE_LOSS" "$base_trained" "$base_val" "$BASE_LR" "$BASE_SEED" \
    "$FT_STEPS" "$FT_LR" "$WINDOW" "$TAU" "$SAMPLES" "$TEMPERATURE" "$MAX_TOKENS" "$ANALYZE" "$(date -u -d @"$first_start" +%FT%TZ)" \
    "$(( prior_n + 1 ))" "$(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//; s/"//g')")
# the objectives' parameters the experiment leaves at train's defaults (CuSeT's lambda, EAFT's alpha,
# ASFT's beta), as train --help states them, for the report (null if it states none)
# (awk reads train's help to its end: one that stopped early could make train die of SIGPIPE, and
# the pipeline fail)
train_default() { ./train --help 2>&1 | awk -v f="$1" '$1 == f && !found { v = $NF; gsub(/[][]/, "", v); print v; found = 1 }'; }
for f in lambda:lambda alpha:eaft_alpha beta:asft_beta; do # (train's flag: the name in the settings)
    v=$(train_default "--${f%%:*}") || v=; [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || v=null
    settings="${settings%\}},\"${f#*:}\":$v}"
done
"${PYTHON:-/usr/bin/python3}" data/experiment_report.py "$RUN" --settings "$settings" --seconds $(( prior_s + $(date +%s) - T0 )) \
    ${REUSE:+--against "$REUSE"} # (the rows this run scored otherwise, paired with the reused run's)
el=$(( $(date +%s) - T0 ))
echo
echo "== done in $((el / 60))m$((el % 60))s: $RUN/results.md, $RUN/report.html"
cat "$RUN/results.md"
