#!/usr/bin/env bash
# onmt_xl against another OpenNMT-py release (default 3.5.0, the one before the 3.5.1 we target): installs it
# --no-deps into a throwaway venv that sees this environment's packages (torch, onmt_xl's dependencies), then runs
# the tests of the import hook, the seams and stock equality there. Every seam should apply, or say in one line
# what is lost; `import onmt` must work either way.
#
#   bash tools/ci/onmt_release_check.sh [VERSION]
set -euo pipefail
VERSION=${1:-3.5.0}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "OpenNMT-py==$VERSION"
export PATH="$tmp/venv/bin:$PATH"  # its onmt_* commands first
cd "$tmp"  # not the checkout: the venv's onmt, this checkout's onmt_xl (PYTHONPATH below)
PYTHONPATH="$OLDPWD" python -W ignore -c "
import onmt, onmt_xl.opennmt.seams as seams
assert onmt.__version__ == '$VERSION', onmt.__version__
print('OpenNMT-py', onmt.__version__, 'from', onmt.__file__)
print('seams that could not apply:', sorted(seams.failed()) or 'none')
"
cd "$OLDPWD"
python -m pytest -q -p no:cacheprovider tests/test_seams.py tests/test_plugin.py tests/test_stock.py
