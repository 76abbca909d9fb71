#!/bin/bash
# The decisive design (reports/PREREG_decisive.md) on the CPU, in work directories of its own: the test split is
# the 500 dev pairs and N = 5,000 pairs carved from the training pairs (--test-from-train), the models train on
# the 43,000 left. In the preregistered order: tier e (ja→en baseline and Combination, the primary comparison),
# then f (HeadXL) and g (InXL), then en→ja's baseline and Combination (enja), each with SEEDS. Every stage resumes
# (finished jobs are skipped, a killed one continues exactly from its last checkpoint), so after a restart this
# one command picks the design up where it stopped. Consecutive ja→en tiers train in one call (no idle job slot).
# The work directory is prepared (splits, carve, alignments, preorderer, vocabularies) by the first call.
#
#   mkdir -p runs && nohup setsid bash tools/decisive_queue.sh > runs/decisive_queue.log 2>&1 &
#   bash tools/decisive_queue.sh status    # each tier's jobs and the hours left (beside the training)
#
# Env: S steps per run (8000), P jobs at once (2), NICE (10), N carved test pairs (5000: fixed by the
# preregistration), SEEDS (1,2,3,4,5; the precision rule's extension: 1,2,3,4,5,6,7,8), TIERS (e; "e f g enja" for
# the secondary comparisons, in that order). The seed-1 pair of ja→en trains to 10,000 steps as the study's curve
# jobs did (its 8,000-step checkpoints are the ones used), so the plateau rule can be checked on the new split.
set -u
cd "$(dirname "$0")/.." || exit 1
S=${S:-8000} P=${P:-2} NICE=${NICE:-10} N=${N:-5000} SEEDS=${SEEDS:-1,2,3,4,5}
STAGE=main
case ${1:-} in
  "") ;;
  status) STAGE=status ;;
  *) echo "decisive_queue: unknown argument '$1' (none, or status)" >&2; exit 2 ;;
esac
TIERS=${TIERS:-e}
for tier in $TIERS; do
  case $tier in
    e|f|g|enja) ;;
    *) echo "decisive_queue: unknown tier '$tier' (e, f, g or enja)" >&2; exit 2 ;;
  esac
done
JAEN=(--workdir runs/decisive_jaen --archive reports/decisive_jaen --test-from-train "$N" --seeds "$SEEDS"
      --max-steps 10000)
ENJA=(--workdir runs/decisive_enja --archive reports/decisive_enja --test-from-train "$N" --seeds "$SEEDS"
      --src en --tgt ja --gold-text "" --gold-align "" --max-steps "$S")

run() {  # $1: enja, or ja→en tiers joined by commas (e,f,g)
  local args tier=$1
  case $1 in
    enja) args=("${ENJA[@]}" --speed-from runs/decisive_jaen) tier=e ;;  # status: ja→en's speed until it starts
    *) args=("${JAEN[@]}") ;;
  esac
  if [ "$STAGE" = status ]; then
    [ -d "${args[1]}" ] || { echo "[$1] ${args[1]}: not started"; return; }
    python3 -m onmt_xl.experiments evidence --stage status --steps "$S" --tier "$tier" --parallel "$P" "${args[@]}" || exit 1
    return
  fi
  echo "[decisive_queue] $(date -u '+%F %T') $1"
  nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage main --steps "$S" --tier "$tier" --parallel "$P" \
    "${args[@]}" || { echo "[decisive_queue] $1 failed ($?)" >&2; exit 1; }
}

group=""  # ja→en tiers waiting to train together
for tier in $TIERS; do
  if [ "$tier" = enja ] || [ "$STAGE" = status ]; then  # status: one table per tier
    [ -n "$group" ] && run "$group"
    group=""
    run "$tier"
  else
    group=${group:+$group,}$tier
  fi
done
[ -n "$group" ] && run "$group"
[ "$STAGE" = status ] && exit 0
echo "[decisive_queue] $(date -u '+%F %T') done: the report, reports/PREREG_decisive.md (Commands)"
