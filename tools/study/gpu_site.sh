# Sourced by tools/study/gpu_experiments.sh and tools/study/gpu_evidence.sh on a lent GPU machine (their header says what
# .whl/ holds): `gpu_site DIR` installs the carried wheels into DIR once per machine (with a stub for spaCy, which
# only OpenNMT-py's terminology transform imports), starts CUDA MPS so that concurrent jobs share the GPU truly,
# puts DIR's scripts on PATH and the registration hook (where the checkout is on PYTHONPATH) into the
# interpreter's site-packages. `gpu_wheels PKG...` (here, where PyPI is reachable) downloads what the image lacks.
#: OpenNMT-py and what it imports that the device image lacks
GPU_ONMT_WHEELS="OpenNMT-py==3.5.1 ConfigArgParse pyonmttok rapidfuzz pyahocorasick fasttext-wheel"
gpu_wheels() {  # PKG...: Python 3.12 wheels for x86-64 into .whl/ (ignored by git); returns 1 naming a missing one
  grep -qxF "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
  local pkg
  for pkg in "$@"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d .whl "$pkg" || { echo "gpu_wheels: pip found no wheel of $pkg" >&2; return 1; }
  done
  du -sh .whl
}
gpu_site() {
  local dir=$1
  if [ ! -f "$dir/.ok" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$dir" .whl/*.whl || return 1
    mkdir -p "$dir/spacy" &&
      echo '"""Stub: spaCy is absent here; only OpenNMT-py'"'"'s terminology transform uses it."""' > "$dir/spacy/__init__.py"
    touch "$dir/.ok"
    nvidia-cuda-mps-control -d 2>/dev/null && echo "MPS started"
  fi
  export PATH="$dir/bin:$PATH" PYTHONUNBUFFERED=1
  # the hook wherever onmt_xl_hook is importable (the checkout on PYTHONPATH); other Pythons start without a word
  echo 'import importlib.util; importlib.util.find_spec("onmt_xl_hook") and __import__("onmt_xl_hook")' \
    > "$(python3 -c 'import site;print(site.getsitepackages()[0])')/onmt_xl_hook.pth"
}
