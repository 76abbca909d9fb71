#!/bin/bash
# Issue 80 on a lent GPU machine in one call: tools/bench/bench_gpu.py's sections, most wanted first (a call cut by
# its time limit still brings back what finished: bench_gpu.txt is written line by line, bench_gpu.json after each
# section). Three steps:
#   here:   bash tools/study/gpu_bench80.sh wheels   Python 3.12 wheels of what the device's image lacks -> .whl/
#           bash tools/study/gpu_bench80.sh stage    the study's data (FROM, default runs/decisive_jaen) -> .gpu/bench
#   there:  run(command="bash tools/study/gpu_bench80.sh run", carry=[".whl", ".gpu"], timeout_s=600)
# Env for run: SECTIONS (default below), REPS (3), LIMIT (seconds the bench may take, default 540, so the call ends
# inside timeout_s with the files written), ARGS (more bench_gpu.py arguments). Both folders are ignored by git.
# The device image has PyTorch but neither framework, nor pydantic/fastapi/uvicorn (Eole's config and server);
# gpu_site installs the wheels once per machine.
set -u
die() { echo "gpu_bench80: $*" >&2; exit 2; }
exclude() { grep -qxF "$1" .git/info/exclude 2>/dev/null || echo "$1" >> .git/info/exclude; }
# Eole 0.6.4 and the packages its train/predict/serve import that the image lacks, beside OpenNMT-py's
# (gpu_site.sh), at the versions installed here (pydantic and pydantic-core must match each other)
PINNED="pydantic pydantic-core typing-inspection annotated-types fastapi starlette uvicorn opentelemetry-api"
case ${1:-} in
wheels)
  pins=""
  for pkg in $PINNED; do
    v=$(python3 -m pip show "$pkg" 2>/dev/null | sed -n 's/^Version: //p')
    [ -n "$v" ] || die "wheels: $pkg is not installed here (bash tools/install.sh eole first)"
    pins="$pins $pkg==$v"
  done
  . tools/study/gpu_site.sh && gpu_wheels $GPU_ONMT_WHEELS eole==0.6.4 $pins || die "wheels: see above"
  ;;
stage)
  FROM=${FROM:-runs/decisive_jaen}
  [ -f "$FROM/preorderer.xlp" ] && [ -f "$FROM/vocab.src" ] || die "$FROM lacks preorderer.xlp or vocab.src (FROM=...)"
  exclude "/.gpu/"
  rm -rf .gpu/bench && mkdir -p .gpu/bench/data .gpu/bench/align || exit 1
  cp "$FROM"/data/{train,valid}.{src,tgt} "$FROM"/data/test.src .gpu/bench/data/ &&
    cp "$FROM"/align/train.gdfa .gpu/bench/align/ && cp "$FROM"/preorderer.xlp "$FROM"/vocab.{src,tgt} .gpu/bench/ || exit 1
  # the precomputed positions of the first-epoch rows (+pre), made here rather than in device time
  python3 -m onmt_xl.experiments positions --src .gpu/bench/data/train.src --preorderer .gpu/bench/preorderer.xlp \
    --out .gpu/bench/data/train.src.xlpos --quiet || die "onmt-xl positions failed"
  du -sh .gpu/bench .whl 2>/dev/null
  ;;
run)
  : "${OUT:?OUT: the folder whose files come back (this runs on the device machine)}"
  ls .whl/OpenNMT_py-3.5.1-*.whl .whl/eole-0.6.4-*.whl > /dev/null 2>&1 || die ".whl/ lacks the wheels: carry .whl"
  [ -f .gpu/bench/preorderer.xlp ] || die ".gpu/bench missing: 'bash tools/study/gpu_bench80.sh stage' here, carry .gpu"
  SITE_DIR=${TMPDIR:-/tmp}/onmt_xl_bench80_site
  . tools/study/gpu_site.sh && gpu_site "$SITE_DIR" || die "installing the wheels failed"
  export PYTHONPATH="$PWD:$SITE_DIR" HF_HUB_OFFLINE=1
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader

  SECTIONS=${SECTIONS:-profile,first_epoch,speed_base,eole,speed_big,speed_study}
  timeout --signal=INT "${LIMIT:-540}" python3 tools/bench/bench_gpu.py --out "$OUT" --workdir .gpu/bench \
    --sections "$SECTIONS" --reps "${REPS:-3}" --systems baseline,inxl,headxl,combination \
    --big-systems baseline,inxl,headxl,combination ${ARGS:-}
  echo "bench_gpu exit status $?"
  ;;
*) die "usage: bash tools/study/gpu_bench80.sh wheels|stage|run" ;;
esac
