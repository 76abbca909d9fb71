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
mkdir -p /work/shared/data/enja && touch /work/shared/data/enja/{train,dev}.{ja,en}  # staged in runs/ already
nvidia-cuda-mps-control -d 2>/dev/null && echo "MPS started"  # lets concurrent jobs share the GPU truly
if [ ! -f /tmp/site/.ok ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  mkdir -p /tmp/site/spacy
  echo '"""Stub: spaCy is absent here; only OpenNMT-py'"'"'s terminology transform uses it."""' > /tmp/site/spacy/__init__.py
  touch /tmp/site/.ok
fi
if [ ! -d /work/main/onmt_xl ]; then
  mkdir -p /work/main && cp -a . /work/main/
else
  cp -a onmt_xl tools /work/main/  # code updates on a warm machine; runs/ there is the live state
fi
cd /work/main
export PYTHONPATH=/work/main:/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${THREADS:-2}
SITE=$(python3 -c 'import site;print(site.getsitepackages()[0])'); cp onmt_xl_hook.pth "$SITE/"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
ARGS=(--workdir runs/exp_enja --gpu yes --parallel "${P:-8}" --report-dir /tmp/rep)
[ -n "${TB:-}" ] && ARGS+=(--time-budget "$TB")
[ -n "${ONLY:-}" ] && ARGS+=(--only "$ONLY")
( while sleep 60; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; uptime; done ) > $OUT/gpu_util.log 2>&1 &
timeout "${BUDGET:-500}" python3 -m onmt_xl.experiments experiments "${ARGS[@]}" > $OUT/runner.log 2>&1
echo "runner rc=$?"
tail -25 $OUT/runner.log
ls runs/exp_enja/jobs/*/done.json 2>/dev/null | wc -l
tar czf $OUT/results.tgz --exclude='*.pt' --exclude='*.partial' runs/exp_enja/jobs runs/exp_enja/manifest.json runs/exp_enja/preorderer.json
ls -la $OUT
