#!/bin/bash
# Issue 40's remaining compute, in the order of reports/EVIDENCE.md (Compute plan): the decisive design's addendum
# (reports/PREREG_decisive_tuned.md) and its attention AER; tiers c (with i), d and h on the decisive split
# (reports/PREREG_decisive_baselines.md); the secondary tiers f and g with their attention AER; tier a's
# preorderer-quality runs; last, the LSTM trained on to its own plateau (onmt_xl.experiments.plateau), the one stage
# that a new machine starts again from step 0 (its rounds continue checkpoints, which stay on the machine that wrote
# them) and that takes longer than a session there, so it comes after every job one session can finish. Every call
# resumes (finished jobs are skipped, a killed one continues exactly from its last checkpoint; a lost work directory
# is prepared again from the archive's links), so this one command picks the study up where it stopped, on this
# machine or a new one. A failing call is logged and the next one runs
# (they share no job); the addendum's failure stops it (its AER needs its runs).
#
# Run it from a snapshot of the code, so that later edits of the checkout do not change the jobs in training, and
# bring each snapshot archive's finished jobs back with tools/study/collect_archive.py:
#   git worktree add --detach runs/queue_code HEAD
#   (cd runs/queue_code && nohup setsid bash tools/study/study_queue.sh >> ../study_queue.log 2>&1 &)
#   (cd runs/queue_code && bash tools/study/study_queue.sh status)     # each tier's jobs and the hours left
#   python3 tools/study/collect_archive.py --from runs/queue_code/reports/decisive_jaen --to reports/decisive_jaen
#
# Tiers f and g's attention AER runs beside their training, every AER_EVERY seconds (600) and once at the end: it
# needs each finished job's model, which a new machine would not have.
#
# NICE ranks the queue's processes among themselves and against others of its session only where the kernel
# groups processes by session (/proc/sys/kernel/sched_autogroup_enabled = 1): work started in another session (a
# shell, setsid) then shares the CPU evenly with the whole queue, whatever its nice. To give such work a smaller
# share: echo 10 > /proc/PID/autogroup (PID: any process of that session; 19 leaves it almost nothing).
#
# Env: NICE (10), AER_EVERY (600).
set -u
cd "$(dirname "$0")/../.." || exit 1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
NICE=${NICE:-10} AER_EVERY=${AER_EVERY:-600}
case ${1:-} in
  "") STAGE=main ;;
  status) STAGE=status ;;
  *) echo "study_queue: unknown argument '$1' (none, or status)" >&2; exit 2 ;;
esac

aer() {  # the attention AER of Tab. 3 for finished jobs (one thread, resumable; not for status)
  [ "$STAGE" = status ] && return 0
  OMP_NUM_THREADS=1 nice -n "$NICE" python3 -m onmt_xl.experiments evidence --test-from-train 5000 --stage aer \
    --steps 8000 --max-steps 10000 "$@"
}
aer_beside() {  # $1: the pid of a tier's training; its jobs' AER as they finish (every AER_EVERY s), then once more
  local pid=$1 waited=0; shift
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1; waited=$((waited + 1))
    if [ "$waited" -ge "$AER_EVERY" ]; then aer "$@" || echo "[study_queue] aer (beside the training) failed"; waited=0; fi
  done
  aer "$@"
}
args=(); [ "$STAGE" = status ] && args=(status)

# the design's own runs are all archived: on a new machine this call prepares runs/decisive_jaen again from the
# archive (links, preorderer, vocabularies, the finished jobs), which the addendum and tiers c-h train from
SEEDS=1,2,3,4,5,6,7,8 TIERS=e bash tools/study/decisive_queue.sh "${args[@]}" || exit 1
SEEDS=1,2,3,4,5,6,7,8 TIERS=tuned bash tools/study/decisive_queue.sh "${args[@]}" || exit 1
aer --workdir runs/decisive_jaen_tuned --archive reports/decisive_jaen_tuned --tier e --seeds 1,2,3,4,5,6,7,8 \
  || echo "[study_queue] the addendum's aer failed"
for t in c d h; do
  TIERS=$t bash tools/study/decisive_queue.sh "${args[@]}" || echo "[study_queue] tier $t failed"
done
# the secondaries with the primary's final seeds (reports/PREREG_decisive.md: k = 8 after the precision rule)
SEEDS=1,2,3,4,5,6,7,8 TIERS="f g" bash tools/study/decisive_queue.sh "${args[@]}" &
training=$!
aer_beside "$training" --workdir runs/decisive_jaen --archive reports/decisive_jaen --tier f,g --seeds 1,2,3,4,5,6,7,8 \
  --inxl-init identity || echo "[study_queue] tiers f g's aer failed"
wait "$training" || echo "[study_queue] tiers f g failed"
TIERS=a bash tools/study/evidence_queue.sh "${args[@]}" || echo "[study_queue] tier a (pre) failed"
# the LSTM trained on to its own plateau (reports/PREREG_decisive_baselines.md, Deviations): lstm_plateau_s1/_s2
# continue lstm_s1/_s2 from their 8,000-step checkpoints (where this machine has them, else from step 0) in rounds
# until the study's step rule holds (or 40,000)
PLATEAU=(--workdir runs/decisive_jaen --archive reports/decisive_jaen --test-from-train 5000 --max-steps 10000
         --plateau-system lstm --seeds 1,2 --parallel 2 --score-every 1000 --threads 1)
if [ "$STAGE" = status ]; then
  python3 -m onmt_xl.experiments evidence --stage plateau-status "${PLATEAU[@]}"
else
  echo "[study_queue] $(date -u '+%F %T') the LSTM's plateau"
  nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage plateau "${PLATEAU[@]}" \
    || echo "[study_queue] the LSTM's plateau failed"
fi
[ "$STAGE" = status ] || echo "[study_queue] $(date -u '+%F %T') done: bash tools/study/papers_report.sh (after collecting)"
