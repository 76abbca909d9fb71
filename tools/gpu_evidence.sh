#!/bin/bash
# The convergence study's jobs on a lent GPU machine (reports/EVIDENCE.md, "Compute plan"): one wave of up to 16
# named jobs at once, trained, averaged and translated there exactly as `onmt-xl evidence --stage main` does here
# (--gpu yes), their results (the archive's job directories, no checkpoints) brought back and merged here.
# On an H200 a job trains 14-20 steps/s with 16 at once (reports/bench_gpu_jobs_h200.txt): an 8,000-step wave
# takes about 11 minutes, more than one call, so the wave runs in the background and a second call collects it.
#
#   here:    bash tools/gpu_evidence.sh stage          # copies W (less jobs/) into .gpu/, checks .whl/
#   device:  run(command="JOBS=baseline_s1,combination_s1 bash tools/gpu_evidence.sh run", carry=[".whl", ".gpu"])
#            (at once again, within the machine's 30 s, until it says "wave finished"; each call packs
#            $OUT/jobs.tgz with the jobs finished so far)
#   here:    bash tools/gpu_evidence.sh merge FILES_AT/jobs.tgz   # FILES_AT: the run's files_at
#
# Env: W work directory (runs/evidence_enja), A its archive (reports/evidence_enja), TIER (b), JOBS (comma-separated,
# required on the device: jobs nothing here trains), S steps (8000), WAIT seconds per call (530), EVIDENCE extra
# options as one string (default for W=runs/evidence_enja: the reversed corpus's).
# .whl/ holds Python 3.12 wheels of OpenNMT-py 3.5.1, ConfigArgParse, pyonmttok, rapidfuzz, pyahocorasick and
# fasttext-wheel (tools/gpu_experiments.sh; the device's image has torch, numba, sacrebleu).
set -u
cd "$(dirname "$0")/.." || exit 1
W=${W:-runs/evidence_enja} A=${A:-reports/evidence_enja} TIER=${TIER:-b} S=${S:-8000} WAIT=${WAIT:-530}
if [ "$W" = runs/evidence_enja ]; then DEFAULT_EXTRA="--src en --tgt ja --gold-text '' --gold-align '' --max-steps $S"
else DEFAULT_EXTRA="--max-steps 10000"; fi
EVIDENCE=${EVIDENCE:-$DEFAULT_EXTRA}
die() { echo "gpu_evidence: $*" >&2; exit 2; }

case ${1:-} in
stage)
  [ -f "$W/data/ready" ] || die "$W is not prepared (run its --stage prepare first)"
  ls .whl/OpenNMT_py-3.5.1-*.whl > /dev/null 2>&1 || die ".whl/ lacks the wheels (see this script's header)"
  rm -rf ".gpu/$W" && mkdir -p ".gpu/$W" || exit 1
  for f in "$W"/*; do [ "$(basename "$f")" = jobs ] || cp -a "$f" ".gpu/$W/"; done
  grep -qxF "/.gpu/" .git/info/exclude 2>/dev/null || echo "/.gpu/" >> .git/info/exclude
  du -sh .gpu .whl
  ;;
run)
  : "${OUT:?OUT: the folder whose files come back (this runs on the device machine)}"
  [ -n "${JOBS:-}" ] || die "JOBS: name the jobs to train there (e.g. baseline_s1,combination_s1)"
  STATE=${STATE:-/tmp/onmt_xl_gpu_evidence} SITE_DIR=${STATE}/site RUN=${STATE}/checkout
  mkdir -p "$STATE"
  if [ ! -f "$SITE_DIR/.ok" ]; then  # the first call on this machine: install, copy the checkout, start the wave
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE_DIR" .whl/*.whl || exit 1
    mkdir -p "$SITE_DIR/spacy" && echo '"""Stub: only OpenNMT-py'"'"'s terminology transform uses spaCy."""' > "$SITE_DIR/spacy/__init__.py"
    touch "$SITE_DIR/.ok"
  fi
  export PYTHONPATH="$RUN:$SITE_DIR" PATH="$SITE_DIR/bin:$PATH" PYTHONUNBUFFERED=1
  cp onmt_xl_hook.pth "$(python3 -c 'import site;print(site.getsitepackages()[0])')/"
  if [ ! -d "$RUN/$W" ]; then
    mkdir -p "$RUN" && cp -a onmt_xl tools reports onmt_xl_hook.py "$RUN/" && mkdir -p "$RUN/$(dirname "$W")" &&
      cp -a ".gpu/$W" "$RUN/$W" || die ".gpu/$W missing: run 'bash tools/gpu_evidence.sh stage' here first, carry .gpu"
    cd "$RUN" || exit 1
    mkdir -p ../shared/data/enja && touch ../shared/data/enja/{train,dev}.{ja,en}  # staged in $W/data already
    nvidia-cuda-mps-control -d 2>/dev/null && echo "MPS started"  # lets the concurrent jobs share the GPU truly
    n=$(echo "$JOBS" | tr ',' '\n' | grep -c .)
    eval "set -- $EVIDENCE"
    setsid nohup python3 -m onmt_xl.experiments evidence --stage main --steps "$S" --tier "$TIER" --gpu yes \
      --parallel "$n" --only "$JOBS" --workdir "$W" --archive "$A" "$@" > "$STATE/wave.log" 2>&1 &
    echo $! > "$STATE/wave.pid"
    echo "wave started: $n jobs ($JOBS), $S steps each"
  fi
  cd "$RUN" || exit 1
  pid=$(cat "$STATE/wave.pid")
  for ((t = 0; t < WAIT; t += 10)); do kill -0 "$pid" 2>/dev/null || break; sleep 10; done
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
  grep -h "Step .*/" "$W"/jobs/*/train.log 2>/dev/null | tail -3
  done_jobs=$(cd "$A/jobs" 2>/dev/null && for j in ${JOBS//,/ }; do [ -f "$j/done.json" ] && echo "$j"; done)
  [ -n "$done_jobs" ] && tar czf "$OUT/jobs.tgz" -C "$A/jobs" $done_jobs
  cp "$STATE/wave.log" "$OUT/wave.log"
  echo "finished: ${done_jobs:-none}" | tr '\n' ' '; echo
  if kill -0 "$pid" 2>/dev/null; then echo "wave running: call again at once"; else echo "wave finished"; tail -5 "$STATE/wave.log"; fi
  ;;
merge)
  tgz=${2:-}; [ -f "$tgz" ] || die "merge: give the jobs.tgz a run brought back"
  tmp=$(mktemp -d) && tar xzf "$tgz" -C "$tmp" || exit 1
  for jd in "$tmp"/*/; do
    j=$(basename "$jd")
    [ -f "$jd/done.json" ] || die "merge: $j has no done.json"
    [ -e "$A/jobs/$j" ] && die "merge: $A/jobs/$j exists already (trained here too?); nothing merged"
    ls "$W/jobs/$j"/model_step_*.pt > /dev/null 2>&1 && die "merge: $W/jobs/$j has checkpoints here; nothing merged"
  done
  mkdir -p "$A/jobs" && cp -a "$tmp"/*/ "$A/jobs/" && rm -rf "$tmp"
  python3 -c "import sys; from pathlib import Path; from onmt_xl.experiments.archive import restore
print('restored into', sys.argv[2] + ':', ', '.join(restore(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())) or 'nothing')" "$A" "$W"
  ;;
*) die "give stage (here), run (on the device) or merge FILE (here)" ;;
esac
