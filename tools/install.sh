#!/usr/bin/env bash
# One-command, idempotent install of onmt_xl and its stack into the current Python environment.
# OpenNMT-py 3.5.1 pins torch<2.3; it runs on torch 2.13 (CPU build), so it goes in with --no-deps and
# its runtime dependencies come from tools/requirements-opennmt.txt. It is installed last: pip reports an
# installed package's unmet requirements (here OpenNMT-py's torch pin) as an ERROR whenever it installs
# something that package depends on, and it skips that check for a --no-deps install.
# PYTHON picks the interpreter (default python3); EDITABLE=1 installs this checkout with `pip install -e`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" -r tools/requirements-opennmt.txt
if [ "${EDITABLE:-0}" = 1 ]; then "${PIP[@]}" -e ".[test]"; else "${PIP[@]}" ".[test]"; fi
"${PIP[@]}" --no-deps "OpenNMT-py==3.5.1"
$PY -W ignore -c "import onmt_xl, onmt; print('onmt_xl', onmt_xl.__version__, 'with OpenNMT-py', onmt.__version__)"
