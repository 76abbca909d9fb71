"""The check that a preorderer beats the monotone order on held-out pairs (onmt_xl.core.reorder.monotone_check)."""

import random

import numpy as np
import pytest

from onmt_xl.core.reorder.monotone_check import MIN_GAIN, MonotoneCheck, check_monotone, paired_gain_interval


def _sentences(n: int, seed: int, swap: float):
    """Target ranks of ``n`` sentences: monotone, except that each adjacent pair is swapped with probability ``swap``
    (``swap`` 1.0 is not used; see ``_reversed``)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        m = rng.randint(5, 12)
        ranks = list(range(m))
        i = 0
        while i < m - 1:
            if rng.random() < swap:
                ranks[i], ranks[i + 1] = ranks[i + 1], ranks[i]
                i += 1
            i += 1
        out.append(np.array(ranks))
    return out


def _reversed(n: int, seed: int):
    rng = random.Random(seed)
    return [np.arange(rng.randint(5, 12))[::-1].copy() for _ in range(n)]


def _target_order(ranks):
    return [int(i) for i in np.argsort(ranks, kind="stable")]


def test_clearly_better_beats_and_says_what_it_buys():
    ranks = _reversed(200, 1)  # an SOV-like pair: the monotone order has every pair wrong
    check = check_monotone([_target_order(r) for r in ranks], ranks, "validation pairs")
    assert check.tau == 1.0 and check.monotone_tau == 0.0 and check.oracle_tau == 1.0
    assert check.beats and check.gain_low > 0.9
    line = check.format()
    assert not line.startswith("warning") and "\n" not in line
    assert "Kendall tau 1.0000" in line and "monotone order (0.0000)" in line and "on 200 validation pairs" in line
    assert "recovers 100% of what reordering can gain" in line


def test_equal_to_monotone_does_not_beat():
    ranks = _reversed(200, 2)
    check = check_monotone([list(range(len(r))) for r in ranks], ranks)
    assert check.gain == 0.0 and check.gain_low == 0.0 and not check.beats
    line = check.format()
    assert line.startswith("warning: the preorderer (Kendall tau 0.0000) does not beat the monotone order (0.0000)")
    # the oracle shows the reordering is there: the preorderer has not learnt it
    assert "has not learnt the reordering" in line and "nearly monotone" not in line


def test_worse_than_monotone_on_a_near_monotone_pair():
    """The issue's case: a near-monotone pair, a preorderer that moves words the monotone order had right."""
    ranks = _sentences(1000, 3, swap=0.02)
    rng = random.Random(4)
    pred = []
    for r in ranks:
        order = list(range(len(r)))
        if rng.random() < 0.3:  # a wrong local swap in a third of the sentences
            i = rng.randrange(len(r) - 1)
            order[i], order[i + 1] = order[i + 1], order[i]
        pred.append(order)
    check = check_monotone(pred, ranks)
    assert check.monotone_tau > 0.95 and check.tau < check.monotone_tau
    assert check.gain_high < 0 and not check.beats and check.near_monotone
    line = check.format()
    assert line.startswith(f"warning: the preorderer (Kendall tau {check.tau:.4f}) does not beat the monotone order "
                           f"({check.monotone_tau:.4f}) on 1,000 held-out pairs")
    assert line.endswith("this language pair is nearly monotone here, and XL PE has little to gain; consider the "
                         "baseline")


def test_a_significant_but_tiny_gain_is_not_clear():
    """Many sentences make a gain of a few pairs in a thousand significant; below MIN_GAIN it does not count."""
    ranks = _sentences(3000, 5, swap=0.05)
    rng = random.Random(6)
    pred = [_target_order(r) if rng.random() < 0.05 else list(range(len(r))) for r in ranks]
    check = check_monotone(pred, ranks)
    assert 0 < check.gain < MIN_GAIN and check.gain_low > 0
    assert not check.beats and "does not clearly beat" in check.format()


def test_bootstrap_interval_is_paired_and_deterministic():
    model = np.array([3, 5, 2, 7, 4])
    pairs = np.array([10, 10, 10, 10, 10])
    # model = mono + 1 pair in every sentence: paired, every resample gains exactly 1/10
    assert paired_gain_interval(model, model - 1, pairs) == pytest.approx((0.1, 0.1))
    a = paired_gain_interval(model, model[::-1], pairs, seed=3)
    assert a == paired_gain_interval(model, model[::-1], pairs, seed=3) and a[0] < 0 < a[1]


def test_round_trips_through_its_record():
    ranks = _reversed(20, 7)
    check = check_monotone([_target_order(r) for r in ranks], ranks, "validation pairs")
    record = check.to_dict()
    assert record["beats"] is True and record["gain"] == check.gain
    assert MonotoneCheck.from_dict(record) == check


def test_refuses_a_non_permutation():
    with pytest.raises(ValueError, match="sentence 1"):
        check_monotone([[0, 0]], [np.array([0, 1])])


# --- the commands: preorder-train with held-out pairs, preorder-eval ------------------------------------------------


def _cli(*argv):
    from onmt_xl.cli import main

    return main([str(a) for a in argv])


def _synth(tmp_path, name: str, n: int, seed: int, divergence: float):
    prefix = tmp_path / name
    assert _cli("synth", "--n", n, "--seed", seed, "--divergence", divergence, "--prefix", prefix) == 0
    return [f"{prefix}.{k}" for k in ("src", "tgt", "align")]


@pytest.mark.parametrize("divergence", [1.0, 0.0])
def test_commands_say_whether_it_beats_the_monotone_order(tmp_path, capsys, divergence):
    """SOV targets: one line with the gain; a monotone target side (divergence 0): the warning, from both commands."""
    train = _synth(tmp_path, "train", 300, 1, divergence)
    held = _synth(tmp_path, "held", 200, 2, divergence)
    model = tmp_path / "m.xlp"
    corpus = ["--src", train[0], "--tgt", train[1], "--align", train[2]]
    heldout = ["--heldout-src", held[0], "--heldout-tgt", held[1], "--heldout-align", held[2]]
    assert _cli("preorder-train", *corpus, "--model", model, "--iterations", 2, "--quiet", "--hash-bits", 18,
                *heldout) == 0
    err = capsys.readouterr().err
    checks = [l for l in err.splitlines() if "the monotone order (" in l]
    assert len(checks) == 1 and "on 200 held-out pairs" in checks[0]
    if divergence:
        assert checks[0].startswith("preorder-train: the preorderer (Kendall tau") and " beats " in checks[0]
    else:
        assert checks[0].startswith("preorder-train: warning: the preorderer (Kendall tau")
        assert "nearly monotone here, and XL PE has little to gain; consider the baseline" in checks[0]
    assert _cli("preorder-eval", "--model", model, "--src", held[0], "--tgt", held[1], "--align", held[2]) == 0
    captured = capsys.readouterr()
    where = captured.out if divergence else captured.err
    assert [l for l in where.splitlines() if "the monotone order (" in l] == [checks[0].replace("train", "eval", 1)]


def test_preorder_train_without_heldout_pairs_says_how_to_check(tmp_path, capsys):
    train = _synth(tmp_path, "train", 100, 1, 1.0)
    assert _cli("preorder-train", "--src", train[0], "--tgt", train[1], "--align", train[2], "--model",
                tmp_path / "m.xlp", "--iterations", 1, "--quiet", "--hash-bits", 16) == 0
    assert "give --heldout-src, --heldout-tgt and --heldout-align" in capsys.readouterr().err
    assert _cli("preorder-train", "--src", train[0], "--tgt", train[1], "--align", train[2], "--model",
                tmp_path / "m2.xlp", "--heldout-src", train[0]) == 2
    assert "give all three of --heldout-src" in capsys.readouterr().err and not (tmp_path / "m2.xlp").exists()


# --- the pipeline: the check before any training --------------------------------------------------------------------


def test_pipeline_stops_before_training_on_a_monotone_pair(tmp_path, capsys):
    """A monotone target side: one warning line, a stop before the vocabularies and any training, exit status 0, the
    figures in the manifest and ``monotone_check.json``."""
    import json

    from onmt_xl.experiments.cli import main

    train, valid, test = (_synth(tmp_path, n, k, s, 0.0) for n, k, s in (("tr", 400, 3), ("va", 100, 4), ("te", 100, 5)))
    capsys.readouterr()
    wd = tmp_path / "wd"
    argv = ["pipeline", "--train-src", train[0], "--train-tgt", train[1], "--valid-src", valid[0], "--valid-tgt",
            valid[1], "--test-src", test[0], "--test-ref", test[1], "--workdir", wd, "--preorder-iterations", 2,
            "--tokenize", "none"]  # the synthetic corpus is tokenized already
    assert main([str(a) for a in argv]) == 0
    out = capsys.readouterr().out
    warnings = [l for l in out.splitlines() if "does not beat the monotone order" in l]
    assert len(warnings) == 1 and "on 100 validation pairs" in warnings[0]
    assert warnings[0].startswith("[onmt-xl] warning: the preorderer (Kendall tau ")
    assert "stopped before training any model" in out and "--if-monotone train" in out
    assert not (wd / "vocab.src").exists() and not (wd / "jobs").exists() and not (wd / "results.json").exists()
    manifest = json.loads((wd / "manifest.json").read_text())
    assert manifest["monotone_check"]["beats"] is False and manifest["monotone_check"]["sentences"] == 100
    assert manifest["runs"][-1]["status"].startswith("stopped before training: the preorderer does not clearly beat")
    assert json.loads((wd / "monotone_check.json").read_text()) == manifest["monotone_check"]


def _gate(tmp_path, monkeypatch, check):
    from onmt_xl.experiments.runner import Runner
    from onmt_xl.experiments.stages import Corpus

    runner = Runner(Corpus("s", "t", "ts", "tr"), str(tmp_path / "wd"), [], preset="demo", gpu=False)
    monkeypatch.setattr(runner, "monotone_check", lambda: check)
    return runner.monotone_gate


def test_the_gate_stops_only_when_asked_and_when_it_matters(tmp_path, monkeypatch, capsys):
    ranks = _reversed(50, 8)
    flat = check_monotone([list(range(len(r))) for r in ranks], ranks, "validation pairs")
    good = check_monotone([_target_order(r) for r in ranks], ranks, "validation pairs")
    gate = _gate(tmp_path, monkeypatch, flat)
    assert "does not clearly beat" in gate(["baseline", "combination"], "stop")
    assert capsys.readouterr().out.count("\n") == 2  # the check's line and the stop's
    assert gate(["baseline", "combination"], "train") is None
    assert gate(["baseline"], "stop") is None  # no system uses the preorderer: nothing to stop for
    assert "warning: the preorderer" in capsys.readouterr().out
    assert _gate(tmp_path, monkeypatch, good)(["combination"], "stop") is None
    assert " beats the monotone order" in capsys.readouterr().out


def test_the_summary_carries_the_check():
    from onmt_xl.experiments.demo import summary

    ranks = _reversed(30, 9)
    check = check_monotone([_target_order(r) for r in ranks], ranks, "validation pairs")
    res = {"preorderer": {"tau": 1.0, "monotone_tau": 0.0}, "jobs": {}, "monotone_check": check.to_dict()}
    assert summary(res).splitlines()[1] == check.format()
    assert len(summary({"jobs": {}}).splitlines()) == 1
