#!/bin/bash
# Runs `onmt-xl experiments` on a lent GPU machine that has torch but not OpenNMT-py, and packs what the
# report needs (no checkpoints) into $OUT/results.tgz. Prepare here first: the runner's data, align and
# preorder stages in runs/exp_enja (e.g. `--time-budget 0`), and wheels for Python 3.12 in .whl/
# (OpenNMT-py 3.5.1, ConfigArgParse, pyonmttok, rapidfuzz, pyahocorasick, fasttext-wheel); carry .whl and
# runs/exp_enja. Env: P jobs at once, THREADS per job, TB time budget (minutes), BUDGET runner seconds, ONLY.
# Measured 2026-11-23 on one H100 (no MPS): 13 jobs at once made ~1.5 steps/s each, 7 at once ~2.6 (non-XL)
# and ~1.8 (XL) steps/s each, the GPU at 99 % either way: about 20 steps/s in all, so a 1,500-step job takes
# minutes even on a GPU. Size each call so that its jobs finish inside it: a machine given back loses them.
set -u
: "${OUT:?OUT: the folder whose files come back}"
# State kept between calls on a warm machine, outside the checkout (each call brings a fresh copy of it): a copy
# of the checkout whose runs/exp_enja is the live run, the installed wheels, the report. STATE: where (default:
# a folder in the temporary directory).
STATE=${STATE:-${TMPDIR:-/tmp}/onmt_xl_gpu}
RUN=$STATE/checkout SITE_DIR=$STATE/site
mkdir -p "$STATE" || exit 1
. tools/study/gpu_site.sh && gpu_site "$SITE_DIR" || exit 1
if [ ! -d "$RUN/onmt_xl" ]; then
  mkdir -p "$RUN" && cp -a . "$RUN/"
else
  cp -a onmt_xl tools "$RUN/"  # code updates on a warm machine; runs/ there is the live state
fi
cd "$RUN" || exit 1
# the runner's default --data, ../shared/data/enja beside the checkout: staged in runs/ already
mkdir -p ../shared/data/enja && touch ../shared/data/enja/{train,dev}.{ja,en}
export PYTHONPATH="$RUN:$SITE_DIR" OMP_NUM_THREADS=${THREADS:-2}
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
ARGS=(--workdir runs/exp_enja --gpu yes --parallel "${P:-8}" --report-dir "$STATE/report")
[ -n "${TB:-}" ] && ARGS+=(--time-budget "$TB")
[ -n "${ONLY:-}" ] && ARGS+=(--only "$ONLY")
( while sleep 60; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; uptime; done ) > "$OUT/gpu_util.log" 2>&1 &
timeout "${BUDGET:-500}" python3 -m onmt_xl.experiments experiments "${ARGS[@]}" > "$OUT/runner.log" 2>&1
echo "runner rc=$?"
tail -25 "$OUT/runner.log"
ls runs/exp_enja/jobs/*/done.json 2>/dev/null | wc -l
tar czf "$OUT/results.tgz" --exclude='*.pt' --exclude='*.partial' runs/exp_enja/jobs runs/exp_enja/manifest.json runs/exp_enja/preorderer.json
ls -la "$OUT"
