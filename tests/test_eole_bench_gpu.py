"""``tools/bench/bench_gpu.py --sections eole`` at smoke size on the CPU: ``eole train`` of Eole's Transformer and
Combination timed from their logs, then ``eole serve`` answering one request with the XL model."""

import json
import re
import subprocess
import sys
from importlib.util import find_spec

import pytest

from tests.conftest import REPO, run_env

pytestmark = pytest.mark.skipif(any(find_spec(m) is None for m in ("eole", "fastapi", "uvicorn")),
                                reason="needs Eole 0.6.4 and its server (tools/install.sh eole)")


def test_eole_section_trains_both_and_serves_the_xl_model(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "bench_gpu.py"), "--out", str(out),
                           "--smoke", "--sections", "eole"], capture_output=True, text=True, env=run_env(),
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (out / "bench_gpu.txt").read_text()
    assert re.search(r"^baseline +\d+\.\d{3} \(.*\) +1\.000 \(1\.000-1\.000\)$", text, re.M), text
    assert re.search(r"^combination +\d+\.\d{3} \(", text, re.M)
    assert re.search(r"eole serve: the combination model \(10 steps\) on cpu, ready in \d+ s; one request of 5 "
                     r"lines \(the last empty\): answered in [\d.]+ s, 4 non-empty outputs, empty line -> ''", text)
    serve = json.loads((out / "bench_gpu.json").read_text())["eole"]["serve"]
    assert serve["device"] == "cpu" and serve["error"] is None and len(serve["outputs"]) == 5
