#!/bin/bash
# Issue 76's compute (reports/PREREG_xlpos.md), in its preregistered order, in the work directory
# runs/decisive_jaen_xlpos (archive reports/decisive_jaen_xlpos), seeded from runs/decisive_jaen's inputs (splits,
# eflomal links, vocabularies, preorderer), which this call prepares again from the decisive archive where the
# machine lacks it. Every call resumes (finished jobs are skipped, a killed one continues exactly from its last
# checkpoint), so this one command picks the design up where it stopped, on this machine or a new one.
#
#   crossfit  stage 1: the training split's cross-fitted positions (5 folds) and crossfit.json (Kendall tau of the
#             full preorderer and of the cross-fitted positions on the same 5,000 training sentences, seen/unseen)
#   source    stage 2's chosen source (reports/sources_xlpos/choice.json, tools/study/choose_source.py) in a work directory
#             of its own, runs/decisive_jaen_xlpos_src (archive reports/decisive_jaen_xlpos_src; the same splits,
#             links and vocabularies): its preorderer on the 43,000 pairs, scored on tuning and test, and its
#             cross-fitted training positions with crossfit.json
#   drift     baseline seeds 1 and 2 retrained on the current code (the control's drift check), tier e's options
#   x         stage 3: combination_xfit seeds 1-8 (tier x) on the chosen source's cross-fitted positions
#   payoff    stage 3's payoff curve (descriptive; stage x runs it too, each time a job has finished, while the model is
#             here): each finished tier-x model translates the test pairs with positions part way from the
#             preorderer's to the BTG oracle's (alpha 0, .25, .5, .75, 1; one thread), BLEU against Kendall tau in
#             runs/decisive_jaen_xlpos_src/payoff.{json,md,png} (and the archive), the control's archived baseline
#             runs (reports/decisive_jaen) as the plot's line
#   inxl      issue 78, after this design's jobs: InXL with its default start (absolute), seeds 1-8, on the decisive
#             split (runs/decisive_jaen_inxl, archive reports/decisive_jaen_inxl; the design's tier g had identity)
#   fewseed   issue 78: the few-seed rows whose verdict the seed variance decides (ExGRE and ReFSR), seeds 3-8 beside
#             the design's 1-2, in runs/decisive_jaen (archive reports/decisive_jaen), the design's options
#   encfree   the two Tab. 4 rows whose verdict the pooled seed variance decides (reports/PREREG_encfree_seeds.md):
#             encoder_free (tier c), encoder_free_relative and encoder_free_inxl (tier h), seeds 3-8 beside the
#             design's 1-2, in runs/decisive_jaen (archive reports/decisive_jaen), the design's options; two seeds
#             at a time, so that a queue stopped part way leaves each system with the same seeds
#
# Run it from a snapshot of the code and bring finished jobs back:
#   bash tools/study/queue_restart.sh       # (re)starts it in runs/queue_code on main, keeping what it wrote
#   bash tools/study/queue_restart.sh --collect   # finished jobs into reports/ to commit (runs/ goes with the machine)
#   or by hand: git worktree add --detach runs/queue_code HEAD
#   (cd runs/queue_code && nohup setsid bash tools/study/xlpos_queue.sh >> ../xlpos_queue.log 2>&1 &)
#   (cd runs/queue_code && bash tools/study/xlpos_queue.sh status)
#   python3 tools/study/collect_archive.py --from runs/queue_code/reports/decisive_jaen_xlpos --to reports/decisive_jaen_xlpos
#
# Env: P jobs at once (2), NICE (10), STAGES ("crossfit source drift x payoff inxl fewseed encfree", in that order),
# PAYOFF_EVERY (120): seconds between stage x's looks for newly finished jobs.
set -u
cd "$(dirname "$0")/../.." || exit 1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
P=${P:-2} NICE=${NICE:-10} STAGES=${STAGES:-crossfit source drift x payoff inxl fewseed encfree}
PAYOFF_EVERY=${PAYOFF_EVERY:-120}
FROM=runs/decisive_jaen WORK=runs/decisive_jaen_xlpos
DESIGN=(--test-from-train 5000 --max-steps 10000 --steps 8000)
XLPOS=(--workdir "$WORK" --archive reports/decisive_jaen_xlpos "${DESIGN[@]}")
# the chosen source's preorderer options: the design's and the candidate's (tools/study/choose_source.py)
CHOICE=reports/sources_xlpos/choice.json SRCWORK=runs/decisive_jaen_xlpos_src
OPTIONS=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["chosen_options"]
print(json.dumps({"tiebreak_null": "none", **c}))' "$CHOICE") || { echo "xlpos_queue: cannot read $CHOICE" >&2; exit 1; }
SRC=(--workdir "$SRCWORK" --archive reports/decisive_jaen_xlpos_src "${DESIGN[@]}" --preorder-options "$OPTIONS")
INXLWORK=runs/decisive_jaen_inxl
INXL=(--workdir "$INXLWORK" --archive reports/decisive_jaen_inxl "${DESIGN[@]}" --tier g --seeds 1,2,3,4,5,6,7,8)
FEW=(--workdir "$FROM" --archive reports/decisive_jaen "${DESIGN[@]}" --tier c --inxl-init identity --seeds 3,4,5,6,7,8
     --only exgre_s3,exgre_s4,exgre_s5,exgre_s6,exgre_s7,exgre_s8,refsr_s3,refsr_s4,refsr_s5,refsr_s6,refsr_s7,refsr_s8)
# stage encfree: tier c's encoder_free with tier h's defaults for the other two (InXL's default start, as seeds 1-2)
ENCFREE_SYSTEMS=(encoder_free encoder_free_relative encoder_free_inxl)
ENCFREE=(--workdir "$FROM" --archive reports/decisive_jaen "${DESIGN[@]}" --tier c,h)
case ${1:-} in
  "") STAGE=main ;;
  status) STAGE=status ;;
  *) echo "xlpos_queue: unknown argument '$1' (none, or status)" >&2; exit 2 ;;
esac
# nice acts only within a scheduler autogroup (one per session, where the kernel groups them): a queue started with
# setsid is a group of its own and would share the CPU equally with the foreground. Lower the group's weight too.
if [ "$STAGE" = main ] && [ -w /proc/self/autogroup ]; then echo "$NICE" > /proc/self/autogroup 2>/dev/null || true; fi

seed_workdir() {  # on first use: runs/decisive_jaen's inputs (prepared from its archive if missing), copied
  local f
  if [ ! -d "$SRCWORK" ] && [ -f "$FROM/data/ready" ]; then  # the chosen source's: all but the preorderer
    mkdir -p "$SRCWORK" || exit 1
    for f in data align vocab.src vocab.tgt vocab_config.yaml; do cp -a "$FROM/$f" "$SRCWORK/" || exit 1; done
    rm -f "$SRCWORK/data/train.src.xlpos"
  fi
  if [ ! -d "$INXLWORK" ] && [ -f "$FROM/data/ready" ]; then  # InXL's default start: the design's inputs as they are
    mkdir -p "$INXLWORK" || exit 1
    for f in data align vocab.src vocab.tgt vocab_config.yaml preorderer.xlp preorderer.json; do
      cp -a "$FROM/$f" "$INXLWORK/" || exit 1
    done
  fi
  [ -d "$WORK" ] && return 0
  if [ ! -f "$FROM/data/ready" ]; then
    python3 -m onmt_xl.experiments evidence --workdir "$FROM" --archive reports/decisive_jaen --test-from-train 5000 \
      --stage prepare || { echo "xlpos_queue: preparing $FROM failed" >&2; exit 1; }
  fi
  mkdir -p "$WORK" || exit 1
  for f in data align vocab.src vocab.tgt vocab_config.yaml preorderer.xlp preorderer.json; do
    cp -a "$FROM/$f" "$WORK/" || exit 1
  done
  seed_workdir
}

finished_x() {  # how many tier-x jobs are archived (trained and translated)
  local n=0 f
  for f in reports/decisive_jaen_xlpos_src/jobs/*_xfit_s*/done.json; do [ -f "$f" ] && n=$((n + 1)); done
  echo "$n"
}

payoff() {  # the payoff stage on tier x's finished jobs; $@: more of evidence's arguments
  nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage payoff "$@" --tier x "${SRC[@]}" \
    --baseline-from reports/decisive_jaen
}

run_stage() {  # $1: the stage's name; the rest: evidence's arguments
  local name=$1; shift
  if [ "$STAGE" = status ]; then
    [ -d "$WORK" ] || { echo "[$name] $WORK: not started"; return 0; }
    python3 -m onmt_xl.experiments evidence --stage status --parallel "$P" "${XLPOS[@]}" "$@" || exit 1
    return 0
  fi
  echo "[xlpos_queue] $(date -u '+%F %T') $name"
  nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage main --parallel "$P" "${XLPOS[@]}" "$@" \
    || { echo "[xlpos_queue] $name failed ($?)" >&2; exit 1; }
}

evidence_stage() {  # $1: the name it logs; the rest: evidence's arguments, --workdir DIR first (status: only if DIR is)
  local name=$1
  shift
  if [ "$STAGE" = status ]; then
    [ -d "$2" ] && python3 -m onmt_xl.experiments evidence --stage status --parallel "$P" "$@"
    return 0
  fi
  echo "[xlpos_queue] $(date -u '+%F %T') $name"
  nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage main --parallel "$P" "$@" \
    || { echo "[xlpos_queue] $name failed ($?)" >&2; exit 1; }
}

[ "$STAGE" = main ] && seed_workdir
for stage in $STAGES; do
  case $stage in
    crossfit)
      if [ "$STAGE" = status ]; then
        [ -f "$WORK/crossfit.json" ] && echo "[crossfit] done: $WORK/crossfit.json" || echo "[crossfit] not done"
      else
        echo "[xlpos_queue] $(date -u '+%F %T') crossfit"
        nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage prepare --crossfit "${XLPOS[@]}" \
          || { echo "[xlpos_queue] crossfit failed ($?)" >&2; exit 1; }
      fi ;;
    source)
      if [ "$STAGE" = status ]; then
        [ -f "$SRCWORK/crossfit.json" ] && echo "[source] done: $SRCWORK/crossfit.json" || echo "[source] not done"
      else
        echo "[xlpos_queue] $(date -u '+%F %T') source: $OPTIONS"
        # the tagger's packages, at the versions the candidates were scored with (reports/SOURCES_xlpos.md)
        python3 -c "import fugashi, unidic_lite" 2>/dev/null || python3 -m pip install -q "fugashi==1.5.2" \
          "unidic-lite==1.0.8" || { echo "[xlpos_queue] installing the tagger failed" >&2; exit 1; }
        nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage prepare --crossfit "${SRC[@]}" \
          || { echo "[xlpos_queue] source failed ($?)" >&2; exit 1; }
      fi ;;
    drift) run_stage drift --tier e --systems baseline --seeds 1,2 ;;
    x)
      if [ "$STAGE" = status ]; then
        [ -d "$SRCWORK" ] && python3 -m onmt_xl.experiments evidence --stage status --parallel "$P" --tier x "${SRC[@]}"
      else
        echo "[xlpos_queue] $(date -u '+%F %T') x"
        nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage main --parallel "$P" --tier x "${SRC[@]}" &
        main=$!
        # each finished model's payoff levels while its checkpoint is here (a new machine has only the archive,
        # which keeps the translations, not the model): the payoff stage again whenever another job has finished
        seen=$(finished_x)
        while kill -0 "$main" 2> /dev/null; do
          sleep "$PAYOFF_EVERY"
          now=$(finished_x)
          [ "$now" -gt "$seen" ] || continue
          seen=$now
          echo "[xlpos_queue] $(date -u '+%F %T') payoff of the $now finished x job(s)"
          payoff --parallel 1 || echo "[xlpos_queue] payoff failed ($?); stage payoff retries" >&2
        done
        wait "$main" || { echo "[xlpos_queue] x failed ($?)" >&2; exit 1; }
      fi ;;
    payoff)
      if [ "$STAGE" = status ]; then
        [ -f "$SRCWORK/payoff.json" ] && echo "[payoff] written: $SRCWORK/payoff.json (rerun to add finished jobs)" \
          || echo "[payoff] not done"
      else
        echo "[xlpos_queue] $(date -u '+%F %T') payoff"
        payoff || { echo "[xlpos_queue] payoff failed ($?)" >&2; exit 1; }
      fi ;;
    inxl) evidence_stage inxl "${INXL[@]}" ;;
    fewseed) evidence_stage fewseed "${FEW[@]}" ;;
    encfree)
      for pair in 3,4 5,6 7,8; do
        only=$(for sys in "${ENCFREE_SYSTEMS[@]}"; do for s in ${pair/,/ }; do printf '%s_s%s,' "$sys" "$s"; done; done)
        evidence_stage "encfree, seeds $pair" "${ENCFREE[@]}" --seeds "$pair" --only "${only%,}"
      done ;;
    *) echo "xlpos_queue: unknown stage '$stage' (crossfit, source, drift, x, payoff, inxl, fewseed, encfree)" >&2
       exit 2 ;;
  esac
done
[ "$STAGE" = main ] && echo "[xlpos_queue] $(date -u '+%F %T') done"
exit 0
