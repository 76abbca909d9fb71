#!/usr/bin/env bash
# One-command, idempotent install of onmt_xl and its stack into the current Python environment.
#   bash tools/install.sh             onmt_xl with OpenNMT-py 3.5.1
#   bash tools/install.sh eole        the same, plus Eole 0.6.4 (both adapters, one environment)
#   bash tools/install.sh docs        the same, plus the docs extra (MkDocs: mkdocs build --strict builds docs/)
#   bash tools/install.sh eole docs   both
# OpenNMT-py 3.5.1 pins torch<2.3; it runs on torch 2.13 (CPU build), so it goes in with --no-deps and
# its runtime dependencies come from tools/requirements-opennmt.txt. It is installed last: pip reports an
# installed package's unmet requirements (here OpenNMT-py's torch pin) as an ERROR whenever it installs
# something that package depends on, and it skips that check for a --no-deps install.
# Eole 0.6.4 accepts torch 2.13 (torch>=2.10,<2.15); its `eole` command imports aiohttp, which Eole does not
# declare (reports/EOLE.md), so aiohttp goes in beside it.
# PYTHON picks the interpreter (default python3); EDITABLE=1 installs this checkout with `pip install -e`.
set -euo pipefail
cd "$(dirname "$0")/.."
EOLE=0 EXTRAS=test
for arg in "$@"; do
    case "$arg" in
        eole) EOLE=1 ;;
        docs) EXTRAS=test,docs ;;
        *) echo "usage: bash tools/install.sh [eole] [docs]   (eole: also install Eole 0.6.4; docs: MkDocs)" >&2
           exit 2 ;;
    esac
done
PY=${PYTHON:-python3}
PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" -r tools/requirements-opennmt.txt
if [ "$EOLE" = 1 ]; then "${PIP[@]}" "eole==0.6.4" aiohttp; fi
if [ "${EDITABLE:-0}" = 1 ]; then "${PIP[@]}" -e ".[$EXTRAS]"; else "${PIP[@]}" ".[$EXTRAS]"; fi
"${PIP[@]}" --no-deps "OpenNMT-py==3.5.1"
$PY -W ignore -c "import onmt_xl, onmt; print('onmt_xl', onmt_xl.__version__, 'with OpenNMT-py', onmt.__version__)"
if [ "$EOLE" = 1 ]; then $PY -W ignore -c "import eole, onmt_xl.eole; print('and Eole', eole.__version__)"; fi
if [ "$EXTRAS" = test,docs ]; then $PY -m mkdocs --version; fi
