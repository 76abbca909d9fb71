#!/bin/bash
# The convergence study's jobs on a lent GPU machine (reports/EVIDENCE.md, "Compute plan"): waves of up to 16
# jobs at once in all, trained, averaged and translated there exactly as `onmt-xl evidence --stage main` does
# here (--gpu yes); their results (the archive's job directories, no checkpoints) come back and are merged here.
# On an H200 a job trains 14-20 steps/s with 16 at once (reports/bench_gpu_jobs_h200.txt): an 8,000-step wave
# takes about 11 minutes, more than one call, so the waves run in the background and a later call collects them.
#
#   here:    bash tools/study/gpu_evidence.sh wheels; WAVE=1 bash tools/study/gpu_evidence.sh stage   # .whl/, .gpu/ (carried)
#   device:  run(carry=[".whl", ".gpu"], command="WAVE=1 bash tools/study/gpu_evidence.sh run")   starts the wave,
#            waits WAIT s, packs $OUT/jobs_NAME.tgz per work directory (the jobs done so far); then, at once
#            again (the machine goes back after 30 s idle), `bash tools/study/gpu_evidence.sh run` until it says
#            "all waves finished"
#   here:    FROM=runs/evidence_jaen bash tools/study/gpu_evidence.sh merge FILES_AT/jobs_NAME.tgz   # FILES_AT: the run's
#            files_at; into runs/NAME (given FROM's splits, links and preorderers where it has none) and reports/NAME
#
# The study's waves (WAVE), each comparison wholly on one device and in one work directory: 1 = tier d in
# runs/evidence_jaen_gpu_d with its own default runs, HeadXL and Combination seed 1 (10), and the first 6 of tier c
# in runs/evidence_jaen_gpu (its own baseline and Combination x 2 seeds, and the encoder-free Transformer x 2: the
# sanity check that the models converged); 2 = the other 16 of tier c; 3 = tier h (the rest of Tab. 4: encoder-free
# with no, relative and InXL PE, and the LSTM, x 2 seeds) in runs/evidence_jaen_gpu beside wave 1's encoder-free runs,
# once the LSTM's optimiser is chosen (reports/TUNING.md). (Tier b, en→ja, ran in wave 1 of 2026-11-26 and is merged.) Both work directories are
# runs/evidence_jaen's splits, links and preorderers (FROM), without its runs; their archives are reports/NAME.
# Since reports/PREREG_decisive_baselines.md the CPU queue trains tiers c, d and h on the decisive split instead
# (tools/study/decisive_queue.sh); waves 1-3 train them on the study's 500-pair split. Waves 4-6 are the same tiers on the
# decisive split (FROM runs/decisive_jaen: 43,000 training pairs, 5,500 test pairs), each comparison on the GPU:
# runs/decisive_jaen_gpu holds its own baseline x 4 and Combination x 2 beside tiers c and i x 2 (InXL's start as the
# design's, identity) and then tier h x 2 (the default start: a call of its own, wave 6), runs/decisive_jaen_gpu_d
# tier d with its own default runs (HeadXL and Combination seed 1). 4 = baselines, Relative PE, encoder-free, DiSAN,
# REs, ExGRE (16); 5 = ReFSR, pre-reordering, the oracle rows, Combination (10) and 6 of tier d; 6 = the other 4 of
# tier d and tier h (12). Merge with FROM=runs/decisive_jaen. 7 = the LSTM's plateau stage (`--stage plateau`
# with tools/study/study_queue.sh's options) in runs/decisive_jaen from step 0 (FROM: a prepared runs/decisive_jaen
# elsewhere); its calls bring back plateau_NAME.tgz (the stage's state, curves and logs so far, no checkpoints),
# which counts only if the stage reached its verdict there (reports/PREREG_decisive_baselines.md, the note of
# 2026-12-04): then unpack it and collect its archive part with tools/study/collect_archive.py --replace (not `merge`).
# Without WAVE, one work directory: W (runs/evidence_enja), FROM (W), TIER (b), JOBS (comma-separated, required
# to start), EVIDENCE (more `onmt-xl evidence` options, one string); its archive is reports/NAME of W (merge: A).
# Also S steps (8000), WAIT seconds (530; 0: start only), STATE (the device's folder of waves), MORE (options added
# to every line's, e.g. a rehearsal: S=1000 MORE="--every 200"). `list` prints a
# wave's lines: W FROM TIER JOBS EVIDENCE.
# tools/study/gpu_site.sh installs them there. .whl/ (`wheels`) holds Python 3.12 wheels of OpenNMT-py 3.5.1, ConfigArgParse, pyonmttok, rapidfuzz, pyahocorasick
# and fasttext-wheel; the device's image has torch, numba, sacrebleu.
set -u
cd "$(dirname "$0")/../.." || exit 1
S=${S:-8000} WAIT=${WAIT:-530} ROOT=${STATE:-${TMPDIR:-/tmp}/onmt_xl_gpu_evidence}  # ROOT: one folder per work directory
ENJA="--src en --tgt ja --gold-text '' --gold-align '' --max-steps $S --inxl-init identity"  # en→ja kept InXL's first start
TIER_C="--max-steps $S --systems baseline,combination,disan,enc_re,both_re,exgre,refsr,prereorder,encoder_free --seeds 1,2"
TIER_H="--max-steps $S --systems encoder_free_none,encoder_free_relative,encoder_free_inxl,lstm --seeds 1,2"
DECISIVE="--test-from-train 5000 --max-steps $S"  # waves 4-6: the decisive split (reports/PREREG_decisive_baselines.md)
# wave 7: the LSTM's plateau stage (tools/study/study_queue.sh's options but the layout), from step 0 on the device
PLATEAU="--test-from-train 5000 --max-steps 10000 --plateau-system lstm --seeds 1,2 --score-every 1000 --threads 4"
# each line: W FROM TIER JOBS EVIDENCE
case ${WAVE:-} in
  "") EXTRA_DEFAULT=$([ "${W:-runs/evidence_enja}" = runs/evidence_enja ] && echo "$ENJA" || echo "--max-steps $S")
      WAVES="${W:-runs/evidence_enja} ${FROM:-${W:-runs/evidence_enja}} ${TIER:-b} ${JOBS:--} ${EVIDENCE:-$EXTRA_DEFAULT}" ;;
  1) WAVES="runs/evidence_jaen_gpu_d runs/evidence_jaen d combination_s1,headxl_s1,headxl_tau0_s1,headxl_tau1_s1,headxl_tau3_s1,headxl_tau4_s1,combination_noise5_s1,combination_noise10_s1,combination_noise15_s1,combination_noise20_s1 --max-steps $S --systems headxl,combination --seeds 1
runs/evidence_jaen_gpu runs/evidence_jaen c baseline_s1,baseline_s2,combination_s1,combination_s2,encoder_free_s1,encoder_free_s2 $TIER_C" ;;
  2) WAVES="runs/evidence_jaen_gpu runs/evidence_jaen c disan_s1,disan_s2,enc_re_s1,enc_re_s2,both_re_s1,both_re_s2,exgre_s1,exgre_s2,refsr_s1,refsr_s2,prereorder_s1,prereorder_s2,combination_oracle_s1,combination_oracle_s2,prereorder_oracle_s1,prereorder_oracle_s2 $TIER_C" ;;
  3) WAVES="runs/evidence_jaen_gpu runs/evidence_jaen h encoder_free_none_s1,encoder_free_none_s2,encoder_free_relative_s1,encoder_free_relative_s2,encoder_free_inxl_s1,encoder_free_inxl_s2,lstm_s1,lstm_s2 $TIER_H" ;;
  4) WAVES="runs/decisive_jaen_gpu runs/decisive_jaen e,c,i baseline_s1,baseline_s2,baseline_s3,baseline_s4,relative_pe_s1,relative_pe_s2,encoder_free_s1,encoder_free_s2,disan_s1,disan_s2,enc_re_s1,enc_re_s2,both_re_s1,both_re_s2,exgre_s1,exgre_s2 $DECISIVE --seeds 1,2,3,4 --inxl-init identity" ;;
  5) WAVES="runs/decisive_jaen_gpu runs/decisive_jaen e,c refsr_s1,refsr_s2,prereorder_s1,prereorder_s2,combination_oracle_s1,combination_oracle_s2,prereorder_oracle_s1,prereorder_oracle_s2,combination_s1,combination_s2 $DECISIVE --seeds 1,2 --inxl-init identity
runs/decisive_jaen_gpu_d runs/decisive_jaen d combination_s1,headxl_s1,headxl_tau0_s1,headxl_tau4_s1,combination_noise5_s1,combination_noise20_s1 $DECISIVE --systems headxl,combination --seeds 1 --inxl-init identity" ;;
  6) WAVES="runs/decisive_jaen_gpu_d runs/decisive_jaen d headxl_tau1_s1,headxl_tau3_s1,combination_noise10_s1,combination_noise15_s1 $DECISIVE --systems headxl,combination --seeds 1 --inxl-init identity
runs/decisive_jaen_gpu runs/decisive_jaen h encoder_free_none_s1,encoder_free_none_s2,encoder_free_relative_s1,encoder_free_relative_s2,encoder_free_inxl_s1,encoder_free_inxl_s2,lstm_s1,lstm_s2 $DECISIVE --seeds 1,2" ;;
  7) WAVES="runs/decisive_jaen ${FROM:-runs/decisive_jaen} plateau lstm_plateau_s1,lstm_plateau_s2 $PLATEAU" ;;
  *) echo "gpu_evidence: WAVE=$WAVE: 1 to 7" >&2; exit 2 ;;
esac
die() { echo "gpu_evidence: $*" >&2; exit 2; }
seed() {  # FROM DEST: what a work directory's jobs read (splits, links, vocabularies, preorderers), no history
  mkdir -p "$2" || return 1
  for f in data align vocab.src vocab.tgt vocab_config.yaml "$1"/preorderer*; do
    f=${f#"$1"/}
    [ -e "$1/$f" ] && { cp -a "$1/$f" "$2/" || return 1; }
  done
  return 0
}

case ${1:-} in
list) echo "$WAVES" ;;  # W FROM TIER JOBS EVIDENCE per line
wheels)  # here: what the device's image lacks, as Python 3.12 wheels for x86-64, into .whl/ (ignored by git)
  . tools/study/gpu_site.sh && gpu_wheels $GPU_ONMT_WHEELS || die "wheels: see above"
  ;;
stage)
  ls .whl/OpenNMT_py-3.5.1-*.whl > /dev/null 2>&1 || die ".whl/ lacks the wheels: bash tools/study/gpu_evidence.sh wheels"
  rm -rf .gpu  # only this wave's work directories travel (the carry holds 64 MiB in all)
  while read -r W FROM _; do
    [ -f "$FROM/data/ready" ] || die "$FROM is not prepared (run its --stage prepare first)"
    rm -rf ".gpu/$W" && seed "$FROM" ".gpu/$W" || exit 1
    du -sh ".gpu/$W"
  done <<< "$WAVES"
  grep -qxF "/.gpu/" .git/info/exclude 2>/dev/null || echo "/.gpu/" >> .git/info/exclude
  ;;
run)
  : "${OUT:?OUT: the folder whose files come back (this runs on the device machine)}"
  SITE_DIR=$ROOT/site
  [ -n "${WAVE:-}${JOBS:-}" ] || ls "$ROOT"/*/wave.meta > /dev/null 2>&1 || die "no wave on this machine yet: WAVE= or JOBS= starts one"
  mkdir -p "$ROOT"
  . tools/study/gpu_site.sh && gpu_site "$SITE_DIR" || exit 1
  while read -r W FROM TIER JOBS EVIDENCE; do
    NAME=$(basename "$W") A=reports/$(basename "$W")
    [ "$JOBS" != - ] && [ ! -f "$ROOT/$NAME/wave.pid" ] || continue
    RUN=$ROOT/$NAME/checkout
    [ -d ".gpu/$W" ] || die ".gpu/$W missing: run 'bash tools/study/gpu_evidence.sh stage' here first (same WAVE), carry .gpu"
    mkdir -p "$RUN/$(dirname "$W")" && cp -a onmt_xl tools reports onmt_xl_hook.py "$RUN/" && cp -a ".gpu/$W" "$RUN/$W" || exit 1
    mkdir -p "$RUN/../shared/data/enja" && touch "$RUN"/../shared/data/enja/{train,dev}.{ja,en}  # staged in W/data
    n=$(echo "$JOBS" | tr ',' '\n' | grep -c .)
    # --parallel: every job of the wave at once, and the runner's thread share (CPUs / parallel) counted over all
    # the wave's work directories, so that they do not ask for more threads than the machine has
    all=$(while read -r _ _ _ jobs _; do [ "$jobs" = - ] || echo "$jobs"; done <<< "$WAVES" | tr ',' '\n' | grep -c .)
    eval "set -- $EVIDENCE ${MORE:-}"
    here=$PWD && cd "$RUN" || exit 1
    if [ "$TIER" = plateau ]; then  # the stage's own rounds: the archive's copy there drops rounds trained elsewhere
      rm -rf "$RUN/$A"/jobs/*_plateau_s* "$RUN/$A"/plateau_*.json
      stage=(--stage plateau)
    else stage=(--stage main --steps "$S" --tier "$TIER" --only "$JOBS"); fi
    PYTHONPATH="$RUN:$SITE_DIR" setsid nohup python3 -m onmt_xl.experiments evidence "${stage[@]}" \
      --gpu yes --parallel "$((all > n ? all : n))" --workdir "$W" --archive "$A" "$@" \
      > "$ROOT/$NAME/wave.log" 2>&1 < /dev/null &  # its own session: it outlives this call
    echo $! > "$ROOT/$NAME/wave.pid"
    cd "$here" || exit 1
    printf '%s\n' "$W" "$A" "$JOBS" "$TIER" > "$ROOT/$NAME/wave.meta"
    if [ "$TIER" = plateau ]; then echo "wave $NAME started: the plateau stage of $JOBS, from step 0"
    else echo "wave $NAME started: $n jobs ($JOBS), $S steps each"; fi
  done <<< "$WAVES"
  running() { for p in "$ROOT"/*/wave.pid; do [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null && return 0; done; return 1; }
  for ((t = 0; t < WAIT; t += 10)); do running || break; sleep 10; done
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
  for meta in "$ROOT"/*/wave.meta; do
    [ -f "$meta" ] || continue
    d=$(dirname "$meta") name=$(basename "$(dirname "$meta")")
    { read -r w; read -r a; read -r jobs; read -r tier; } < "$meta"
    if [ "$tier" = plateau ]; then  # the rounds so far: state, curves, logs (no checkpoints), finished or not
      (cd "$d/checkout" && tar czf "$OUT/plateau_$name.tgz" "$a"/plateau_*.json "$a"/jobs/*_plateau_s* \
        "$w"/plateau_*.json "$w"/jobs/*_plateau_s*/{train.log,curve.jsonl,config.yaml} 2>/dev/null)
    else
      finished=$(cd "$d/checkout/$a/jobs" 2>/dev/null && for j in ${jobs//,/ }; do [ -f "$j/done.json" ] && echo "$j"; done)
      [ -n "$finished" ] && tar czf "$OUT/jobs_$name.tgz" -C "$d/checkout/$a/jobs" $finished
      echo "wave $name: finished $(echo $finished | wc -w) of $(echo "${jobs//,/ }" | wc -w): ${finished//$'\n'/ }"
    fi
    cp "$d/wave.log" "$OUT/wave_$name.log"
    grep -h "Step .*/" "$d/checkout/$w"/jobs/*/train.log 2>/dev/null | tail -2
  done
  if running; then echo "waves running: call again at once"; else echo "all waves finished"; fi
  ;;
merge)
  tgz=${2:-}; [ -f "$tgz" ] || die "merge: give a jobs_NAME.tgz that a run brought back"
  name=$(basename "$tgz" .tgz) && name=${name#jobs_}  # W: runs/NAME unless given
  W=${W:-runs/$name} && A=${A:-reports/$(basename "$W")}
  if [ ! -f "$W/data/ready" ] && [ -n "${FROM:-}" ]; then  # a work directory only a device trained in: the report
    [ -f "$FROM/data/ready" ] || die "$FROM is not prepared (run its --stage prepare first)"  # reads its splits
    seed "$FROM" "$W" || die "merge: could not copy $FROM's splits into $W"
  fi
  tmp=$(mktemp -d) && tar xzf "$tgz" -C "$tmp" || exit 1
  merged=0
  for jd in "$tmp"/*/; do  # a job trained here too (finished or begun) keeps what was trained here
    j=$(basename "$jd")
    if [ ! -f "$jd/done.json" ]; then echo "gpu_evidence: merge: $j left out: no done.json" >&2
    elif [ -e "$A/jobs/$j" ]; then echo "gpu_evidence: merge: $j left out: $A/jobs/$j exists already" >&2
    elif ls "$W/jobs/$j"/model_step_*.pt > /dev/null 2>&1; then
      echo "gpu_evidence: merge: $j left out: $W/jobs/$j has checkpoints here (in training?)" >&2
    else mkdir -p "$A/jobs" && cp -a "$jd" "$A/jobs/$j" && merged=$((merged + 1)); fi
  done
  rm -rf "$tmp"
  [ "$merged" -gt 0 ] || die "merge: nothing merged"
  [ -f "$W/data/ready" ] || echo "gpu_evidence: merge: $W has no splits, which its report reads: merge with FROM=" \
    "the work directory the wave was staged from (runs/evidence_jaen)" >&2
  python3 -c "import sys; from pathlib import Path; from onmt_xl.experiments.archive import restore
print('restored into', sys.argv[2] + ':', ', '.join(restore(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())) or 'nothing')" "$A" "$W"
  ;;
*) die "give wheels or stage (here), run (on the device), merge FILE (here) or list" ;;
esac
