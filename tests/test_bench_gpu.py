"""``tools/bench/bench_gpu.py``'s issue-80 sections at smoke size on the CPU (the script's own check before a GPU
call: its figures mean nothing here): the profile table and files, the first-epoch rows and their ratios."""

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_env

BENCH = REPO / "tools" / "bench" / "bench_gpu.py"


def test_profile_and_first_epoch_sections_print_every_row(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(BENCH), "--out", str(out), "--smoke", "--sections", "profile,first_epoch",
                           "--profile-systems", "baseline,combination",
                           "--first-epoch-rows", "baseline,combination,combination+pre,baseline+w2,combination+w2"],
                          capture_output=True, text=True, env=run_env(), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (out / "bench_gpu.txt").read_text()
    for system in ("baseline", "combination"):
        assert re.search(rf"^{system} +\d+\.\d\d +0\.00 +nan% +0 +\d+$", text, re.M), text
        assert "sorted by self_cpu_time_total" in (out / f"profile_{system}.txt").read_text()
    assert "data/train.src.xlpos written by onmt-xl positions" in text
    rows = dict(re.findall(r"^(\S+) +\d+\.\d{3} \(\d+\.\d{3}-\d+\.\d{3}\) +(\S+ \(\S+\)|-)", text, re.M))
    assert rows["baseline"] == "1.000 (1.000-1.000)" and set(rows) >= {"combination", "combination+pre"}
    assert re.search(r"^combination\+w2 .*\(vs baseline\+w2\)$", text, re.M)
    data = json.loads((out / "bench_gpu.json").read_text())
    assert set(data["profile"]["base"]) == {"baseline", "combination"}
    assert all(len(v) == 2 for v in data["first_epoch"]["study"].values())  # --smoke: 2 repetitions


def test_first_epoch_rows_are_checked_before_any_work(tmp_path):
    sys.path.insert(0, str(BENCH.parent))
    import bench_gpu

    assert bench_gpu.first_epoch_rows("baseline,combination+pre+w2") == [
        ("baseline", "baseline", {}),
        ("combination+pre+w2", "combination", {"xl_positions_suffix": ".xlpos", "num_workers": 2})]
    for bad in ("baseline+pre", "combination+fast"):
        with pytest.raises(SystemExit, match="--first-epoch-rows"):
            bench_gpu.first_epoch_rows(bad)
