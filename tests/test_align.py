"""Tests for onmt_xl.core.align: symmetrization, AER, gold reader, eflomal alignment and the CLI."""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from pathlib import Path

import pytest

from onmt_xl.core.align.aer import (
    AERScores,
    check_links_in_range,
    parse_gold_line,
    read_gold,
    read_joint_text,
    score_alignments,
)
from onmt_xl.core.align.cli import add_subcommands
from onmt_xl.cli import main
from onmt_xl.core.align.pharaoh import read_pharaoh
from onmt_xl.core.align.symmetrize import grow_diag, grow_diag_final, grow_diag_final_and, intersection, union
from onmt_xl.core.errors import XLInputError

REPO = Path(__file__).resolve().parents[1]
GOLD_DIR = REPO / ".." / "shared" / "data" / "gold"
ENJA_DIR = REPO / ".." / "shared" / "data" / "enja"


# --- symmetrization (hand-checked; links are (source, target)) -------------------------------------

# 4x4 case. forward: t0<-s3, t1<-s1, t2<-s0, t3<-s0; reverse: s0->t3, s1->t1, s2->t3, s3->t1.
FWD = [(3, 0), (1, 1), (0, 2), (0, 3)]
REV = [(0, 3), (1, 1), (2, 3), (3, 1)]


def test_intersection_union():
    assert intersection(FWD, REV) == [(0, 3), (1, 1)]
    assert union(FWD, REV) == [(0, 2), (0, 3), (1, 1), (2, 3), (3, 0), (3, 1)]


def test_grow_diag_hand_case():
    # Start {(1,1),(0,3)}; scanning (t1,s1) its diagonal (t2,s0) = (0,2) is in the union with t2 unaligned:
    # added. No other union point neighbours the alignment with an unaligned word.
    assert grow_diag(FWD, REV, 4, 4) == [(0, 2), (0, 3), (1, 1)]


def test_grow_diag_final_and_hand_case():
    # Final-and, forward-only points first: (3,0) has s3 and t0 unaligned -> added. Then reverse-only,
    # in target order: (3,1): s3 now aligned -> no; (2,3): t3 aligned -> no (final-and needs both free).
    assert grow_diag_final_and(FWD, REV, 4, 4) == [(0, 2), (0, 3), (1, 1), (3, 0)]


def test_grow_diag_final_hand_case():
    # Plain final: (3,1) has both words aligned -> no; (2,3) has s2 unaligned -> added.
    assert grow_diag_final(FWD, REV, 4, 4) == [(0, 2), (0, 3), (1, 1), (2, 3), (3, 0)]


def test_grow_diag_diagonal_step():
    # forward t0<-s0, t1<-s1, t2<-s1; reverse s0->t0, s1->t1, s2->t2. From (1,1): (1,2) is added
    # (t2 free), then its diagonal (2,2) (s2 free): the whole union.
    fwd, rev = [(0, 0), (1, 1), (1, 2)], [(0, 0), (1, 1), (2, 2)]
    assert grow_diag_final_and(fwd, rev, 3, 3) == [(0, 0), (1, 1), (1, 2), (2, 2)]


def test_final_and_takes_forward_only_points_first():
    # (3,2) forward-only and (3,3) reverse-only compete for s3, out of reach of the intersection {(0,0)}.
    # symal adds the forward-only (inverse-alignment) points first.
    fwd, rev = [(0, 0), (3, 2)], [(0, 0), (3, 3)]
    assert grow_diag_final_and(fwd, rev, 4, 4) == [(0, 0), (3, 2)]
    assert grow_diag_final_and(rev, fwd, 4, 4) == [(0, 0), (3, 3)]
    assert grow_diag_final(fwd, rev, 4, 4) == [(0, 0), (3, 2), (3, 3)]


def test_symmetrize_edge_cases():
    assert grow_diag_final_and([], [], 0, 0) == []
    assert grow_diag_final_and([], [(0, 0)], 1, 1) == [(0, 0)]  # final-and adds a lone point
    with pytest.raises(ValueError, match="outside"):
        grow_diag_final_and([(0, 5)], [], 2, 2)


# --- AER ----------------------------------------------------------------------------------------------


def test_aer_hand_computed():
    hyp = [{(0, 0), (1, 1), (2, 2)}, {(0, 1)}]
    sure = [{(0, 0), (1, 2)}, {(0, 0)}]
    possible = [{(1, 1)}, set()]  # sure links count as possible too
    s = score_alignments(hyp, sure, possible)
    # |A| = 4, |S| = 3, |A&S| = 1 ((0,0)), |A&P| = 2 ((0,0), (1,1))
    assert (s.n_hyp, s.n_sure, s.n_hyp_sure, s.n_hyp_possible, s.n_possible) == (4, 3, 1, 2, 4)
    assert s.precision == pytest.approx(2 / 4)
    assert s.recall == pytest.approx(1 / 3)
    assert s.aer == pytest.approx(1 - 3 / 7)
    assert "AER 0.5714" in s.format() and "P 0.5000" in s.format() and "R 0.3333" in s.format()


def test_aer_perfect_and_empty():
    s = score_alignments([[(0, 0)]], [{(0, 0)}])
    assert (s.aer, s.precision, s.recall) == (0.0, 1.0, 1.0)
    s = score_alignments([[]], [{(0, 0)}])
    assert s.aer == 1.0 and math.isnan(s.precision) and s.recall == 0.0
    with pytest.raises(ValueError, match="sentence counts differ"):
        score_alignments([[]], [set(), set()])


# --- gold reader ----------------------------------------------------------------------------------------


def test_read_gold_one_indexed_with_possible(tmp_path):
    p = tmp_path / "g.gold"
    p.write_text("1-1 2p3 3-2\n\n1p1 1-1\n", encoding="utf-8")
    sure, possible = read_gold(str(p))
    assert sure == [{(0, 0), (2, 1)}, set(), {(0, 0)}]
    assert possible == [{(0, 0), (1, 2), (2, 1)}, set(), {(0, 0)}]
    assert read_gold(str(p), one_indexed=False)[0][0] == {(1, 1), (3, 2)}


def test_read_gold_errors(tmp_path):
    p = tmp_path / "g.gold"
    p.write_text("1-1\n0-1\n", encoding="utf-8")
    with pytest.raises(XLInputError, match=r"g\.gold, line 2: .*index 0"):
        read_gold(str(p))
    with pytest.raises(XLInputError, match="malformed"):
        parse_gold_line("1-1 x-2")


def test_read_joint_text_keeps_unicode_spaces(tmp_path):
    p = tmp_path / "t.src-tgt"
    p.write_text("天狗 の 山 \u3000 くらま ||| tengu no yama\na b|||c\n", encoding="utf-8")
    src, tgt = read_joint_text(str(p))
    assert src == [["天狗", "の", "山", "\u3000", "くらま"], ["a", "b"]]
    assert tgt == [["tengu", "no", "yama"], ["c"]]
    check_links_in_range([[(4, 2)], [(1, 0)]], src, tgt)
    with pytest.raises(XLInputError, match="line 2: link 2-0"):
        check_links_in_range([[], [(2, 0)]], src, tgt)
    p.write_text("a b c\n", encoding="utf-8")
    with pytest.raises(XLInputError, match="line 1"):
        read_joint_text(str(p))


# --- eflomal end to end -----------------------------------------------------------------------------------


def synthetic_corpus(n=300, seed=0):
    """Target = lexicon translation of the source, in reversed order; gold link i <-> len-1-i."""
    rng = random.Random(seed)
    vocab = [f"w{k}" for k in range(40)]
    lex = {w: f"T{k}" for k, w in enumerate(vocab)}
    src, tgt, gold = [], [], []
    for _ in range(n):
        s = rng.sample(vocab, rng.randint(3, 8))
        src.append(s)
        tgt.append([lex[w] for w in reversed(s)])
        gold.append({(i, len(s) - 1 - i) for i in range(len(s))})
    return src, tgt, gold


def test_align_corpus_synthetic():
    from onmt_xl.core.align.eflomal_aligner import align_corpus, align_with_extra

    src, tgt, gold = synthetic_corpus()
    start = time.perf_counter()
    res = align_corpus(src, tgt)
    wall = time.perf_counter() - start
    assert len(res.forward) == len(res.reverse) == len(res.symmetrized) == len(src)
    assert 0 < res.seconds <= wall  # the eflomal run is timed, and within the call
    for links in (res.forward, res.reverse, res.symmetrized):
        check_links_in_range(links, src, tgt)
        s = score_alignments(links, gold)
        assert s.precision >= 0.9, s.format()
    # forward: every target word has at most one link; reverse: every source word
    assert all(len({j for _, j in ls}) == len(ls) for ls in res.forward)
    assert all(len({i for i, _ in ls}) == len(ls) for ls in res.reverse)

    small = align_with_extra(src[:5], tgt[:5], src[5:], tgt[5:])
    assert len(small.symmetrized) == 5
    assert score_alignments(small.symmetrized, gold[:5]).precision >= 0.9


def test_align_corpus_empty_sides_and_odd_tokens():
    from onmt_xl.core.align.eflomal_aligner import align_corpus

    src, tgt, _ = synthetic_corpus(100)
    src = src + [[], ["w1"], ["a\u3000b", "w2"]]
    tgt = tgt + [["T1"], [], ["X", "T2", "Y"]]
    res = align_corpus(src, tgt)
    assert res.forward[-3:-1] == res.reverse[-3:-1] == res.symmetrized[-3:-1] == [[], []]
    check_links_in_range(res.symmetrized, src, tgt)
    assert align_corpus([], []).symmetrized == []
    with pytest.raises(XLInputError, match="2 source sentences but 1 target"):
        align_corpus([["a"], ["b"]], [["c"]])
    with pytest.raises(XLInputError, match="line 1: source sentence has an empty"):
        align_corpus([["a", ""]], [["c"]])


def test_align_corpus_options(tmp_path):
    from onmt_xl.core.align.eflomal_aligner import align_corpus

    src, tgt, gold = synthetic_corpus(100)
    priors = tmp_path / "priors.txt"  # eflomal priors format: LEX src tgt alpha, HMMF jump alpha, ...
    priors.write_text("LEX\tw1\tT1\t10\nHMMF\t-1\t5\n", encoding="utf-8")
    res = align_corpus(src, tgt, model=2, n_iterations=(2, 2, 2), n_samplers=1, priors=str(priors))
    assert score_alignments(res.symmetrized, gold).precision >= 0.9
    with pytest.raises(ValueError, match="model must be"):
        align_corpus(src, tgt, model=4)


def _write(path: Path, sents) -> str:
    path.write_text("".join(" ".join(s) + "\n" for s in sents), encoding="utf-8")
    return str(path)


def test_align_files_and_cli(tmp_path, capsys):
    from onmt_xl.core.align.eflomal_aligner import align_files

    src, tgt, gold = synthetic_corpus()
    src[7], tgt[9] = [], []  # empty lines stay parallel, with empty alignments
    sp, tp = _write(tmp_path / "c.src", src), _write(tmp_path / "c.tgt", tgt)
    res = align_files(sp, tp, str(tmp_path / "out"))
    for ext in ("fwd", "rev", "gdfa"):
        lines = (tmp_path / f"out.{ext}").read_text(encoding="utf-8").split("\n")
        assert len(lines) == len(src) + 1 and lines[-1] == ""
        assert lines[7] == "" and lines[9] == ""
    assert read_pharaoh(str(tmp_path / "out.gdfa")) == res.symmetrized

    # the aer command on a 1-indexed gold file written from the synthetic gold
    gp = tmp_path / "c.gold"
    gp.write_text("".join(" ".join(f"{i + 1}-{j + 1}" for i, j in sorted(g)) + "\n" for g in gold), encoding="utf-8")
    assert main(["aer", "--hyp", str(tmp_path / "out.gdfa"), "--gold", str(gp)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("AER ") and f"{len(src)} sentences" in out
    expected = score_alignments(res.symmetrized, read_gold(str(gp))[0])
    assert f"AER {expected.aer:.4f}" in out

    # align command with extra data: only the first file's rows are written
    _write(tmp_path / "s.src", src[:4])
    _write(tmp_path / "s.tgt", tgt[:4])
    assert main([
        "align", "--src", str(tmp_path / "s.src"), "--tgt", str(tmp_path / "s.tgt"), "--out-prefix",
        str(tmp_path / "small"), "--extra-src", sp, "--extra-tgt", tp, "--model", "2",
    ]) == 0
    assert "wall time" in capsys.readouterr().err
    assert len(read_pharaoh(str(tmp_path / "small.gdfa"))) == 4


def test_mismatched_line_counts(tmp_path, capsys):
    from onmt_xl.core.align.eflomal_aligner import align_files

    sp = _write(tmp_path / "a.src", [["x"], ["y"]])
    tp = _write(tmp_path / "a.tgt", [["X"]])
    with pytest.raises(XLInputError, match=r"a\.tgt: has 1 line but .*a\.src has 2"):
        align_files(sp, tp, str(tmp_path / "o"))
    assert main(["align", "--src", sp, "--tgt", tp, "--out-prefix", str(tmp_path / "o")]) == 1  # a data error (the line counts differ)
    assert "a.tgt" in capsys.readouterr().err

    gp = tmp_path / "g.gold"
    gp.write_text("1-1\n", encoding="utf-8")
    hp = tmp_path / "h.al"
    hp.write_text("0-0\n0-0\n", encoding="utf-8")
    with pytest.raises(XLInputError, match=r"h\.al: has 2 lines but the gold file"):
        main_args = argparse.Namespace(hyp=str(hp), gold=str(gp), one_indexed=True, text=None)
        from onmt_xl.core.align.cli import run_aer

        run_aer(main_args)


def test_add_subcommands_wiring():
    parser = argparse.ArgumentParser(prog="onmt-xl")
    add_subcommands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["aer", "--hyp", "h", "--gold", "g", "--zero-indexed"])
    assert args.func.__name__ == "run_aer" and args.one_indexed is False
    args = parser.parse_args(["align", "--src", "s", "--tgt", "t", "--out-prefix", "p"])
    assert args.func.__name__ == "run_align" and args.model == 3 and args.extra_src is None


# --- real gold data (KFTT ja-en), when the shared data is present ------------------------------------------


def test_gold_jaen_with_extra_data():
    if not GOLD_DIR.is_dir():
        pytest.skip(f"gold data folder {GOLD_DIR} not present")
    if not (ENJA_DIR / "train.ja").is_file() or not (ENJA_DIR / "train.en").is_file():
        pytest.skip(f"extra training data {ENJA_DIR}/train.{{ja,en}} not present")
    from onmt_xl.core.align.eflomal_aligner import align_with_extra, read_parallel

    src, tgt = read_joint_text(str(GOLD_DIR / "jaen.src-tgt"))
    sure, possible = read_gold(str(GOLD_DIR / "jaen.gold"))
    check_links_in_range(possible, src, tgt, "jaen.gold")
    extra_src, extra_tgt = read_parallel(str(ENJA_DIR / "train.ja"), str(ENJA_DIR / "train.en"))
    res = align_with_extra(src, tgt, extra_src, extra_tgt)
    scores: AERScores = score_alignments(res.symmetrized, sure, possible)
    assert scores.n_sentences == 582
    assert scores.aer < 0.7, scores.format()


# --- the benchmark tools, on tiny synthetic data ---------------------------------------------------------------


def _load_tool(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_align_tool(tmp_path, capsys):
    import json

    src, tgt, gold = synthetic_corpus(150, seed=4)
    (tmp_path / "g.src-tgt").write_text(
        "".join(" ".join(s) + " ||| " + " ".join(t) + "\n" for s, t in zip(src[:20], tgt[:20])), encoding="utf-8"
    )
    # 1-indexed gold with one possible link per sentence
    (tmp_path / "g.gold").write_text(
        "".join(" ".join(f"{i + 1}{'p' if i == 0 else '-'}{j + 1}" for i, j in sorted(g)) + "\n" for g in gold[:20]),
        encoding="utf-8",
    )
    _write(tmp_path / "x.src", src[20:])
    _write(tmp_path / "x.tgt", tgt[20:])
    out = tmp_path / "r.json"
    rc = _load_tool("bench_align").main([
        "--text", str(tmp_path / "g.src-tgt"), "--gold", str(tmp_path / "g.gold"), "--extra-src",
        str(tmp_path / "x.src"), "--extra-tgt", str(tmp_path / "x.tgt"), "--runs", "2", "--json", str(out),
        "--subword", "bpe:20", "--in-process",
    ])
    assert rc == 0
    text = capsys.readouterr().out
    assert "| gdfa | " in text and "| forward | " in text and "| reverse | " in text
    res = json.loads(out.read_text(encoding="utf-8"))
    assert len(res["runs"]) == 2 and res["sentences"] == 20
    assert res["summary"]["gdfa"]["aer"]["mean"] < 0.2
    assert res["summary"]["gdfa"]["precision"]["mean"] > 0.8
    sub = res["subword"]["bpe:20"]
    assert len(sub["runs"]) == 2 and sub["runs"][0]["pieces_per_word"] > 1
    # Och & Ney by hand from each run's P, R and |A|: AER = 1 - (R·|S| + P·|A|) / (|A| + |S|), |S| the sure gold
    # links (word 0's link of each sentence is possible-only); the summary is the mean over runs
    n_sure = sum(len(g) - 1 for g in gold[:20])
    for run in res["runs"] + sub["runs"]:
        for method in ("gdfa", "forward", "reverse"):
            m = run[method]
            want = 1 - (m["recall"] * n_sure + m["precision"] * m["links"]) / (m["links"] + n_sure)
            assert m["aer"] == pytest.approx(want, abs=1e-12), (method, m)
    for block in (res, sub):
        for k in ("aer", "precision", "recall"):
            assert block["summary"]["gdfa"][k]["mean"] == pytest.approx(statistics.mean(r["gdfa"][k] for r in block["runs"]))
    assert sub["summary"]["gdfa"]["aer"]["mean"] < 0.2  # sub-word links collapsed to words still find the reversal
