#!/bin/bash
# The convergence study's main runs (reports/EVIDENCE.md), tier after tier in the priority order of the study:
# (a) ja→en, the five systems × 3 seeds and the preorderer-quality runs; (b) en→ja, baseline and Combination
# × 3 seeds; (c) the other baselines and the oracle rows; (d) the τ sweep and the noise attack; (h, not in the
# default TIERS) the rest of Tab. 4: encoder-free with no, relative and InXL PE, and the LSTM. Every stage
# resumes (finished jobs are skipped, a killed one continues from its last checkpoint with the same data
# order), so after a restart this one command picks the study up where it stopped. A failing tier stops it.
# Consecutive tiers of one work directory (a, c, d, h: ja→en) train in one call, so a job slot freed at a tier's
# end goes to the next tier's first job at once.
#
#   nohup setsid bash tools/evidence_queue.sh > runs/evidence_queue.log 2>&1 &
#   bash tools/evidence_queue.sh status    # each tier's jobs and the hours left (beside the training; trains nothing)
#
# Env: S steps per run (the learning curve's step rule gave 8000), P jobs at once (2), TIERS (a b c d; add h for Tab. 4), NICE (10).
set -u
cd "$(dirname "$0")/.." || exit 1
S=${S:-8000} P=${P:-2} NICE=${NICE:-10}
STAGE=main
case ${1:-} in
  "") ;;
  status) STAGE=status ;;
  *) echo "evidence_queue: unknown argument '$1' (none, or status)" >&2; exit 2 ;;
esac
TIERS=${TIERS:-a b c d}
for tier in $TIERS; do
  case $tier in
    a|b|c|d|h) ;;
    *) echo "evidence_queue: unknown tier '$tier' (a, b, c, d or h)" >&2; exit 2 ;;
  esac
done
JAEN=(--workdir runs/evidence_jaen --archive reports/evidence_jaen --max-steps 10000)
ENJA=(--workdir runs/evidence_enja --archive reports/evidence_enja --src en --tgt ja --gold-text "" --gold-align ""
      --max-steps "$S")

run() {  # $1: one tier, or several of ja→en joined by commas (a,c,d)
  local args
  case $1 in
    b) args=("${ENJA[@]}" --speed-from runs/evidence_jaen) ;;  # status: the ja→en jobs' speed until b starts
    *a*) args=("${JAEN[@]}" --preorder-pairs 10000,25000 --preorder-seeds 1,2) ;;
    *) args=("${JAEN[@]}") ;;
  esac
  if [ "$STAGE" = status ]; then
    python3 -m onmt_xl.experiments evidence --stage status --steps "$S" --tier "$1" --parallel "$P" "${args[@]}" || exit 1
    return
  fi
  echo "[evidence_queue] $(date -u '+%F %T') tier $1"
  nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage main --steps "$S" --tier "$1" --parallel "$P" \
    "${args[@]}" || { echo "[evidence_queue] tier $1 failed ($?)" >&2; exit 1; }
}

group=""  # ja→en tiers waiting to train together
for tier in $TIERS; do
  if [ "$tier" = b ] || [ "$STAGE" = status ]; then  # status: one table per tier
    [ -n "$group" ] && run "$group"
    group=""
    run "$tier"
  else
    group=${group:+$group,}$tier
  fi
done
[ -n "$group" ] && run "$group"
[ "$STAGE" = status ] && exit 0
echo "[evidence_queue] $(date -u '+%F %T') done: onmt-xl evidence --stage report ... (reports/EVIDENCE.md, Commands)"
