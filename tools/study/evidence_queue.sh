#!/bin/bash
# The convergence study's main runs (reports/EVIDENCE.md), tier after tier in the priority order of the study:
# (a) ja→en, the five systems × 3 seeds and the preorderer-quality runs; (b) en→ja, baseline and Combination
# × 3 seeds; (c) the other baselines and the oracle rows; (d) the τ sweep and the noise attack; (h) the rest of
# Tab. 4: encoder-free with no, relative and InXL PE, and the LSTM. Every stage
# resumes (finished jobs are skipped, a killed one continues from its last checkpoint with the same data
# order), so after a restart this one command picks the study up where it stopped. A failing tier stops it.
# Consecutive tiers of one work directory (a, c, d, h: ja→en) train in one call, so a job slot freed at a tier's
# end goes to the next tier's first job at once. Tiers c, d and h now train on the decisive design's split instead
# (reports/PREREG_decisive_baselines.md: TIERS="c d h" bash tools/study/decisive_queue.sh), so the default TIERS is
# a and b; here c, d and h stay runnable by name.
#
#   nohup setsid bash tools/study/evidence_queue.sh > runs/evidence_queue.log 2>&1 &
#   bash tools/study/evidence_queue.sh status    # each tier's jobs and the hours left (beside the training; trains nothing)
#
# Env: S steps per run (the learning curve's step rule gave 8000), P jobs at once (2), TIERS (a b; c d h by name), NICE (10).
set -u
cd "$(dirname "$0")/../.." || exit 1
S=${S:-8000} P=${P:-2} NICE=${NICE:-10}
NAME=evidence_queue KNOWN="a b c d h" APART=b TIERS=${TIERS:-a b}
JAEN=(--workdir runs/evidence_jaen --archive reports/evidence_jaen --max-steps 10000)
# en→ja's Combination was trained before reports/TUNING.md changed InXL's default start: its runs keep identity
ENJA=(--workdir runs/evidence_enja --archive reports/evidence_enja --src en --tgt ja --gold-text "" --gold-align ""
      --max-steps "$S" --inxl-init identity)

tier_args() {  # $1: one tier, or several of ja→en joined by commas (a,c,d)
  case $1 in
    b) ARGS=("${ENJA[@]}" --speed-from runs/evidence_jaen) ;;  # status: the ja→en jobs' speed until b starts
    *a*) ARGS=("${JAEN[@]}" --preorder-pairs 10000,25000 --preorder-seeds 1,2) ;;
    *) ARGS=("${JAEN[@]}") ;;
  esac
}

. tools/study/queue_lib.sh
queue_main "$@"
[ "$STAGE" = status ] && exit 0
echo "[evidence_queue] $(date -u '+%F %T') done: onmt-xl evidence --stage report ... (reports/EVIDENCE.md, Commands)"
