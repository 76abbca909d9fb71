"""reports/PREORDER.md regenerates from its archive, reports/preorder_enja, by one command, bit for bit; and the
collector's kept orders give back the preorderer's own scores."""

import json
import subprocess
import sys
from pathlib import Path

from onmt_xl.core.align.pharaoh import write_pharaoh
from tests.conftest import run_env
from onmt_xl.core.reorder.preorderer import Preorderer
from tests.helpers import tiny_corpus

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "study" / "preorder_report.py"


def _tool(*args, cwd=REPO):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, env=run_env(), cwd=cwd)


def test_preorder_md_regenerates_from_the_archive(tmp_path):
    proc = _tool("render", "--out", tmp_path / "PREORDER.md")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "PREORDER.md").read_bytes() == (REPO / "reports" / "PREORDER.md").read_bytes()


def _workdir(tmp_path):
    """A tiny work directory laid out as onmt-xl evidence leaves it after --stage prepare."""
    wd = tmp_path / "wd"
    (wd / "data").mkdir(parents=True)
    (wd / "align").mkdir()
    corpus = tiny_corpus(tmp_path, n=120)
    cuts = {"train": (0, 80), "tune": (80, 100), "test": (100, 120)}
    for split, (a, b) in cuts.items():
        (wd / "data" / f"{split}.src").write_text("".join(" ".join(s) + "\n" for s in corpus.src[a:b]), encoding="utf-8")
        (wd / "data" / f"{split}.{'ref' if split == 'test' else 'tgt'}").write_text(
            "".join(" ".join(t) + "\n" for t in corpus.tgt[a:b]), encoding="utf-8")
        write_pharaoh(str(wd / "align" / f"{split}.gdfa"), corpus.links[a:b])
    Preorderer.train(corpus.src[:80], corpus.links[:80], iterations=3, progress=False).save(str(wd / "preorderer.xlp"))
    (wd / "manifest.json").write_text(json.dumps({"preorder_options": {}, "preorderer_train_seconds": 1.5}))
    return wd, corpus


def test_collect_and_render_recompute_the_preorderers_scores(tmp_path):
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks

    wd, corpus = _workdir(tmp_path)
    archive = tmp_path / "archive"
    proc = _tool("collect", "--workdir", wd, "--archive", archive, "--steps", "orders")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _tool("render", "--archive", archive, "--out", tmp_path / "P.md")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (tmp_path / "P.md").read_text(encoding="utf-8")

    model = Preorderer.load(str(wd / "preorderer.xlp"))
    scores = {}
    for split, (a, b) in {"tune": (80, 100), "test": (100, 120)}.items():
        src = corpus.src[a:b]
        scores[split] = evaluate(model.reorder_batch(src), [target_ranks(len(s), ls) for s, ls in zip(src, corpus.links[a:b])])
    row = next(line for line in report.splitlines() if line.startswith("| **preorderer** |"))
    assert row.split(" | ")[2:4] == [f"{scores['tune'].tau:.4f}", f"{scores['test'].tau:.4f}"]
    assert f"Test: 20 sentences, {scores['test'].n_pairs:,} aligned pairs" in report
    assert str(tmp_path) not in report
    # the same archive renders the same bytes twice
    proc = _tool("render", "--archive", archive, "--out", tmp_path / "P2.md")
    assert (tmp_path / "P2.md").read_bytes() == (tmp_path / "P.md").read_bytes()


def test_collect_names_what_is_missing(tmp_path):
    proc = _tool("collect", "--workdir", tmp_path, "--archive", tmp_path / "a", "--steps", "orders")
    assert proc.returncode == 2 and "preorderer.xlp: not found" in proc.stderr and "Traceback" not in proc.stderr
    proc = _tool("collect", "--workdir", tmp_path, "--steps", "ordres")
    assert proc.returncode == 2 and "unknown ordres" in proc.stderr
    proc = _tool("render", "--archive", tmp_path / "none", "--out", tmp_path / "P.md")
    assert proc.returncode != 0 and "study.json: not found" in proc.stderr and "Traceback" not in proc.stderr
