#!/bin/bash
# The decisive design (reports/PREREG_decisive.md) on the CPU, in work directories of its own: the test split is
# the 500 dev pairs and N = 5,000 pairs carved from the training pairs (--test-from-train), the models train on
# the 43,000 left. In the preregistered order: tier e (ja→en baseline and Combination, the primary comparison),
# then f (HeadXL) and g (InXL), then en→ja's baseline and Combination (enja), each with SEEDS. Every stage resumes
# (finished jobs are skipped, a killed one continues exactly from its last checkpoint), so after a restart this
# one command picks the design up where it stopped. Consecutive ja→en tiers train in one call (no idle job slot).
# The work directory is prepared (splits, carve, alignments, preorderer, vocabularies) by the first call.
#
#   mkdir -p runs && nohup setsid bash tools/study/decisive_queue.sh > runs/decisive_queue.log 2>&1 &
#   bash tools/study/decisive_queue.sh status    # each tier's jobs and the hours left (beside the training)
#
# Env: S steps per run (8000), P jobs at once (2), NICE (10), N carved test pairs (5000: fixed by the
# preregistration), SEEDS (1,2,3,4,5; the precision rule's extension: 1,2,3,4,5,6,7,8), TIERS (e; "e f g enja" for
# the secondary comparisons, in that order; "tuned" for the addendum of reports/PREREG_decisive_tuned.md, always
# seeds 1-8; "c", "d" and "h" for the other papers' systems and sweeps on the same split,
# reports/PREREG_decisive_baselines.md, always seeds 1-2: c = the study's tiers c and i, d and h = its tiers d and
# h). The seed-1 pair of ja→en trains to 10,000 steps as the study's curve jobs did (its 8,000-step checkpoints are
# the ones used), so the plateau rule can be checked on the new split.
set -u
cd "$(dirname "$0")/../.." || exit 1
S=${S:-8000} P=${P:-2} NICE=${NICE:-10} N=${N:-5000} SEEDS=${SEEDS:-1,2,3,4,5}
NAME=decisive_queue KNOWN="e f g enja tuned c d h" APART="enja tuned c d h" TIERS=${TIERS:-e}
# --inxl-init identity: the preregistered systems, trained before reports/TUNING.md changed InXL's default start
JAEN=(--workdir runs/decisive_jaen --archive reports/decisive_jaen --test-from-train "$N" --seeds "$SEEDS"
      --max-steps 10000 --inxl-init identity)
ENJA=(--workdir runs/decisive_enja --archive reports/decisive_enja --test-from-train "$N" --seeds "$SEEDS"
      --src en --tgt ja --gold-text "" --gold-align "" --max-steps "$S" --inxl-init identity)

# tuned (reports/PREREG_decisive_tuned.md): Combination with InXL's tuned start (the default, no --inxl-init) against
# the design's 8 archived baseline runs, k = 8 fixed, in a work directory seeded from runs/decisive_jaen's inputs
TUNED=(--workdir runs/decisive_jaen_tuned --archive reports/decisive_jaen_tuned --test-from-train "$N"
       --seeds 1,2,3,4,5,6,7,8 --max-steps 10000)

# c, d, h (reports/PREREG_decisive_baselines.md): the other papers' systems on the design's split against its
# baseline runs, seeds 1-2 (tier d: seed 1); c and d keep the design's InXL start (Combination on oracle indices and
# with noisy indices sit beside the design's Combination), h takes the default (InXL's tuned start: no Combination
# to match)
BASELINES=(--workdir runs/decisive_jaen --archive reports/decisive_jaen --test-from-train "$N" --seeds 1,2
           --max-steps 10000)

seed_tuned() {  # on first use: runs/decisive_jaen's splits, links, preorderer and vocabularies; its baseline runs
  local from=runs/decisive_jaen to=${TUNED[1]} archive=${TUNED[3]} f s
  if [ ! -d "$to" ]; then
    [ -f "$from/data/ready" ] || { echo "$NAME: $from is not prepared: the addendum reuses its inputs" >&2; exit 1; }
    mkdir -p "$to" || exit 1
    for f in data align vocab.src vocab.tgt vocab_config.yaml preorderer.xlp preorderer.json; do
      cp -a "$from/$f" "$to/" || exit 1
    done
  fi
  mkdir -p "$archive/jobs" || exit 1
  for s in 1 2 3 4 5 6 7 8; do
    [ -d "$archive/jobs/baseline_s$s" ] && continue
    [ -f "reports/decisive_jaen/jobs/baseline_s$s/done.json" ] \
      || { echo "$NAME: reports/decisive_jaen lacks baseline_s$s, which the addendum reuses" >&2; exit 1; }
    cp -a "reports/decisive_jaen/jobs/baseline_s$s" "$archive/jobs/" || exit 1
  done
}

tier_args() {  # $1: enja, tuned, c, d, h, or ja→en tiers joined by commas (e,f,g)
  case $1 in
    enja) ARGS=("${ENJA[@]}" --speed-from runs/decisive_jaen) TIER=e ;;  # status: ja→en's speed until it starts
    tuned) ARGS=("${TUNED[@]}" --speed-from runs/decisive_jaen) TIER=e
           [ "$STAGE" = main ] && seed_tuned ;;
    c) ARGS=("${BASELINES[@]}" --inxl-init identity) TIER=c,i ;;
    d) ARGS=("${BASELINES[@]}" --inxl-init identity) ;;
    h) ARGS=("${BASELINES[@]}") ;;
    *) ARGS=("${JAEN[@]}") ;;
  esac
  [ -d "${ARGS[1]}" ] || SKIP="[$1] ${ARGS[1]}: not started"
}

. tools/study/queue_lib.sh
queue_main "$@"
[ "$STAGE" = status ] && exit 0
echo "[decisive_queue] $(date -u '+%F %T') done: the report, reports/PREREG_decisive.md (Commands)"
