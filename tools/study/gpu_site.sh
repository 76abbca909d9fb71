# Sourced by tools/study/gpu_experiments.sh and tools/study/gpu_evidence.sh on a lent GPU machine (their header says what
# .whl/ holds): `gpu_site DIR` installs the carried wheels into DIR once per machine (with a stub for spaCy, which
# only OpenNMT-py's terminology transform imports), starts CUDA MPS so that concurrent jobs share the GPU truly,
# puts DIR's scripts on PATH and the registration hook (where the checkout is on PYTHONPATH) into the
# interpreter's site-packages.
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
