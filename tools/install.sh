#!/usr/bin/env bash
# One-command, idempotent install of onmt_xl and its stack into the current Python environment.
# OpenNMT-py 3.5.1 pins torch<2.3; it runs on torch 2.13 (CPU build), so it goes in with --no-deps and
# its runtime dependencies come from onmt_xl's own requirements (setup.cfg).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
$PY -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
$PY -m pip install --quiet --disable-pip-version-check --no-deps "OpenNMT-py==3.5.1"
$PY -m pip install --quiet --disable-pip-version-check ".[test]"
$PY -W ignore -c "import onmt_xl, onmt; print('onmt_xl', onmt_xl.__version__, 'with OpenNMT-py', onmt.__version__)"
