"""``onmt-xl evidence --stage aer`` and the report's attention AER (Ding et al. 2020 Tab. 3): per-sentence link
counts, the seed-pooled bootstrap of Δ AER, the stage's choice of jobs and model, the report section."""

import json
from pathlib import Path
from argparse import Namespace

import pytest

from onmt_xl.experiments.scoring import aer_bootstrap, aer_counts, aer_from_counts, attention_aer

# two gold sentences (0-based, source first): sentence 0 has sure links 0-0 and 1-1 and a possible 2-1;
# sentence 1 one sure link 0-0
SURE = [{(0, 0), (1, 1)}, {(0, 0)}]
POSSIBLE = [{(0, 0), (1, 1), (2, 1)}, {(0, 0)}]


def _hyp(links):
    return [("w ||| " + " ".join(f"{i}-{j}" for i, j in sorted(ls))).rstrip() for ls in links]


def test_link_counts_per_sentence_sum_to_the_corpus_scores():
    hyp = _hyp([{(0, 0), (2, 1), (1, 2)}, {(1, 0)}])
    counts = aer_counts(hyp, SURE, POSSIBLE)
    # |A|, |S|, |A & S|, |A & P| by hand: sentence 0 hits 0-0 (sure) and 2-1 (possible); sentence 1 misses
    assert counts.tolist() == [[3, 2, 1, 2], [1, 1, 0, 0]]
    aer, precision, recall = aer_from_counts(counts.sum(axis=0))
    assert aer == pytest.approx(1 - (1 + 2) / (4 + 3)) and precision == pytest.approx(2 / 4)
    assert recall == pytest.approx(1 / 3)
    whole = attention_aer(hyp, SURE, POSSIBLE)
    assert (aer, precision, recall) == pytest.approx((whole.aer, whole.precision, whole.recall))
    with pytest.raises(ValueError, match="sentence counts differ"):
        aer_counts(hyp[:1], SURE, POSSIBLE)


def _runs(*links_per_run, copies=10):
    """Per-sentence counts of each run, the two gold sentences repeated ``copies`` times."""
    return [aer_counts(_hyp(links * copies), SURE * copies, POSSIBLE * copies) for links in links_per_run]


PERFECT = [{(0, 0), (1, 1)}, {(0, 0)}]  # AER 0
HALF = [{(0, 0), (0, 1)}, {(1, 0)}]  # |A| 3, |S| 3, one sure hit: AER 1 - 2/6 = 2/3
WRONG = [{(2, 0), (0, 1)}, {(1, 0)}]  # AER 1


def test_identical_systems_differ_by_nothing():
    base = _runs(HALF, PERFECT)
    cmp = aer_bootstrap(base, base, n_samples=200, seed=3)
    assert (cmp.delta, cmp.p_value) == (0.0, 1.0) and cmp.low <= 0 <= cmp.high
    assert (cmp.system_runs, cmp.baseline_runs, cmp.sentences, cmp.n_samples, cmp.seed) == (2, 2, 20, 200, 3)
    one = aer_bootstrap(base[:1], base[:1], n_samples=50, seed=3)  # one run each: every replicate is the same
    assert (one.delta, one.low, one.high, one.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_more_correct_links_lower_the_aer_seeds_pooled():
    # the baseline's two seed runs: AER 2/3 and 1 (mean 5/6); the system's: 0 in every sentence of both
    base, system = _runs(HALF, WRONG), _runs(PERFECT, PERFECT)
    cmp = aer_bootstrap(system, base, n_samples=300, seed=5)
    assert cmp.delta == pytest.approx(0 - 5 / 6)
    assert cmp.low <= cmp.delta <= cmp.high < 0
    assert cmp.p_value == pytest.approx(1 / 301)  # no replicate strays 5/6 from their mean: |Δ| <= 1/3 apart
    assert aer_bootstrap(system, base, n_samples=300, seed=5) == cmp  # the recorded seed reproduces it
    assert aer_bootstrap(base, system, n_samples=300, seed=5).delta == pytest.approx(-cmp.delta)
    # sentence 0 alone, one run each: 0-0 and 1-1 (AER 0) against 0-0 and 0-1 (AER 1 - 2/4), in every replicate
    good = aer_counts(_hyp([PERFECT[0]] * 8), SURE[:1] * 8, POSSIBLE[:1] * 8)
    half = aer_counts(_hyp([HALF[0]] * 8), SURE[:1] * 8, POSSIBLE[:1] * 8)
    one = aer_bootstrap([good], [half], n_samples=99, seed=1)
    assert (one.delta, one.low, one.high) == pytest.approx((-0.5, -0.5, -0.5)) and one.p_value == pytest.approx(1 / 100)
    with pytest.raises(ValueError, match="sentences"):
        aer_bootstrap(_runs(PERFECT), _runs(HALF, copies=3))


# -- the stage ---------------------------------------------------------------------------------------------------


def _workdir(tmp_path):
    """A work directory with a gold set of 3 pairs; the runner of tier-e-like jobs (every 10 steps, average 2 at
    step 20) with ``_run`` replaced by a fake translation that records its arguments."""
    import torch

    from onmt_xl.experiments.evidence import main_jobs
    from onmt_xl.experiments.runner import Corpus, Runner

    data = tmp_path / "data"
    data.mkdir(parents=True)
    (data / "gold.src").write_text("a b\nc d e\nf\n")
    (data / "gold.tgt").write_text("x y\nz\nv w\n")
    (data / "gold.align").write_text("1-1 2-2\n1-1 3p1\n1-2\n")
    (data / "gold.keep").write_text("0 1 2\n")
    jobs = main_jobs(["baseline", "combination"], [1, 2, 3, 4], steps=20, every=10, average=2, curve_seed=99,
                     curve_steps=40)
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), jobs, preset="demo", train_steps=20, gpu=False)
    calls = []

    def fake_run(args, log, commands, echo="", tag=""):
        calls.append([str(a) for a in args])
        out = args[args.index("-output") + 1]
        src = args[args.index("-src") + 1]
        n = len(Path(src).read_text().splitlines())
        out.write_text("w ||| 0-0\n" * n)
        return 1.0

    runner._run = fake_run

    def job_dir(name, done=True, hyps=("valid", "test"), models=()):
        jd = tmp_path / "jobs" / name
        jd.mkdir(parents=True)
        if done:
            (jd / "done.json").write_text(json.dumps({"resumed_exactly": True}))
        for v in hyps:
            (jd / f"hyp.{v}").write_text("w\n")
        for name, marker in models:
            torch.save({"model": {"w": torch.tensor([marker])}, "generator": {}, "optim": {"big": torch.zeros(2)},
                        "opt": Namespace(dec_layers=3, alignment_layer=-3, alignment_heads=1)}, str(jd / name))
        return jd

    return runner, jobs, calls, job_dir


def test_alignment_model_is_made_from_the_model_the_job_is_translated_with(tmp_path):
    import torch

    from onmt_xl.experiments.plan import Job

    runner, jobs, _, job_dir = _workdir(tmp_path)
    averaged = jobs[0]
    assert (averaged.name, averaged.average, averaged.final_step) == ("baseline_s1", 2, 20)
    job_dir("baseline_s1", models=[("model_step_10.pt", 1.0), ("model_step_20.pt", 2.0), ("average2_step_20.pt", 1.5)])
    assert runner.final_model_path(averaged).name == "average2_step_20.pt" and runner.has_final_model(averaged)
    path = runner.alignment_model(averaged)
    copy = torch.load(str(path), weights_only=False)
    assert path.name == "average2_step_20_align.pt" and copy["model"]["w"].item() == 1.5  # the average, not step 20
    assert (copy["opt"].alignment_layer, copy["opt"].alignment_heads) == (1, 0) and "optim" not in copy
    # a job translated with its last checkpoint (the 1,500-step pipeline) keeps model_align.pt from model_path
    plain = Job("baseline", "baseline", 1)
    job_dir("baseline", models=[("model_step_20.pt", 7.0)])
    assert runner.final_model_path(plain) == runner.model_path(plain)
    path = runner.alignment_model(plain)
    assert path.name == "model_align.pt" and torch.load(str(path), weights_only=False)["model"]["w"].item() == 7.0


def test_the_stage_translates_finished_jobs_only_and_resumes(tmp_path, capsys):
    from onmt_xl.experiments.evidence import aer_stage

    runner, jobs, calls, job_dir = _workdir(tmp_path)
    runner.archive = tmp_path / "archive"
    job_dir("baseline_s1", models=[("average2_step_20.pt", 1.5)])  # finished: translated
    training = job_dir("baseline_s2", done=False, hyps=(), models=[("model_step_10.pt", 1.0)])  # another process's
    before = {p.name: p.stat().st_mtime_ns for p in training.iterdir()}
    job_dir("baseline_s3")  # restored from an archive: no checkpoint
    job_dir("combination_s1", models=[("average2_step_20.pt", 1.5)])  # its oracle translation not done yet
    assert aer_stage(runner, jobs) == 0
    out = capsys.readouterr().out
    assert "baseline_s1 [gold_align]: AER " in out and "baseline_s2: skipped (not finished)" in out
    assert "test_align" not in out  # no eflomal links of the test pairs in this work directory
    assert "baseline_s3: skipped (no checkpoint" in out and "combination_s1: skipped (finished, but oracle" in out
    assert "baseline_s4: skipped (not finished)" in out and not (tmp_path / "jobs" / "baseline_s4").exists()
    assert {p.name: p.stat().st_mtime_ns for p in training.iterdir()} == before
    (args,) = calls
    model = args[args.index("-model") + 1]
    assert model.endswith("baseline_s1/average2_step_20_align.pt") and "-gold_align" in args
    assert args[args.index("-tgt") + 1].endswith("data/gold.tgt") and "-report_align" in args
    assert args[args.index("-src") + 1].endswith("data/gold.src")
    hyps = sorted(p.parent.name for p in (tmp_path / "jobs").glob("*/hyp.gold_align"))
    assert hyps == ["baseline_s1"]
    assert json.loads((tmp_path / "jobs" / "baseline_s1" / "translate_seconds.json").read_text())["gold_align"] == 1.0
    assert (runner.archive / "jobs" / "baseline_s1" / "hyp.gold_align.gz").exists()
    # every link 0-0 against the gold set by hand: sure hits in sentences 0 and 1, |A| 3, |S| 4: AER 1 - 4/7
    assert f"AER {100 * (1 - 4 / 7):.2f} %" in out
    assert aer_stage(runner, jobs) == 0 and len(calls) == 1  # resumed: scored again, not translated again
    assert "translated before" in capsys.readouterr().out


def test_the_stage_needs_a_gold_set_and_steps(tmp_path):
    import subprocess
    import sys

    from tests.conftest import run_env
    from tests.test_evidence import _staged

    wd, corpus_args = _staged(tmp_path)
    base = [sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "aer", "--workdir", str(wd),
            *corpus_args, "--preset", "demo", "--tier", "e"]
    for extra, message in (([], "needs --steps"), (["--steps", "20"], "no gold alignment set")):
        proc = subprocess.run(base + extra, capture_output=True, text=True, env=run_env())
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


# -- the report --------------------------------------------------------------------------------------------------


def test_report_section_and_json(tmp_path):
    from onmt_xl.experiments import stats
    from onmt_xl.experiments.evidence_markdown import markdown
    from onmt_xl.experiments.evidence_report import build_report
    from tests.test_evidence import _fake_study

    _fake_study(tmp_path)
    rep = build_report(tmp_path, ["baseline", "combination"], [1, 2, 3], n_samples=50, seed=7)
    assert rep["attention_aer"] is None and "Attention alignment" not in markdown(rep)  # no gold set: no section
    copies = 6
    data = tmp_path / "data"
    (data / "gold.src").write_text("s0 s1 s2\nq0\n" * copies)
    (data / "gold.tgt").write_text("t0 t1\nr0\n" * copies)
    (data / "gold.align").write_text("1-1 2-2 3p2\n1-1\n" * copies)  # SURE and POSSIBLE, 1-indexed
    (data / "gold.keep").write_text(" ".join(map(str, range(2 * copies))) + "\n")
    (tmp_path / "vocab.src").write_text("s0\t5\ns1\t4\n")  # s2 and q0 unknown: 2 of 4 source tokens
    (tmp_path / "vocab.tgt").write_text("t0\t5\nt1\t4\nr0\t3\n")
    links = {("baseline", 1): HALF, ("baseline", 2): WRONG, ("baseline", 3): HALF,
             ("combination", 1): PERFECT, ("combination", 2): HALF, ("inxl", 1): PERFECT, ("inxl", 3): PERFECT}
    for (system, seed), ls in links.items():
        (tmp_path / "jobs" / f"{system}_s{seed}" / "hyp.gold_align").write_text("\n".join(_hyp(ls * copies)) + "\n")
    rep = build_report(tmp_path, ["baseline", "combination", "inxl"], [1, 2, 3], n_samples=200, seed=7)
    aer = rep["attention_aer"]
    assert aer["sentences"] == 2 * copies
    assert aer["systems"]["baseline"]["seeds"] == [1, 2, 3] and aer["systems"]["inxl"]["seeds"] == [1]  # s3 resumed
    assert aer["systems"]["baseline"]["aer"]["values"] == pytest.approx([2 / 3, 1, 2 / 3])
    assert aer["systems"]["combination"]["aer"]["mean"] == pytest.approx(1 / 3)
    assert aer["systems"]["combination"]["precision"]["values"] == pytest.approx([1, 1 / 3])  # HALF: 1 of 3 possible
    assert aer["systems"]["inxl"]["aer"]["sd"] is None and aer["systems"]["inxl"]["recall"]["mean"] == 1.0
    comps = aer["comparisons"]
    assert set(comps) == {"combination", "inxl"}
    assert comps["combination"]["delta"] == pytest.approx(1 / 3 - 7 / 9)
    direct = aer_bootstrap(*(_runs(*(links[(s, k)] for k in seeds), copies=copies)
                             for s, seeds in (("combination", (1, 2)), ("baseline", (1, 2, 3)))), n_samples=200, seed=7)
    assert (comps["combination"]["low"], comps["combination"]["p"]) == (direct.low, direct.p_value)
    assert {k: c["p_holm"] for k, c in comps.items()} == stats.holm({k: c["p"] for k, c in comps.items()})
    assert comps["inxl"]["verdict"] in ("lower AER", "no evidence either way") and comps["inxl"]["delta"] < 0
    assert set(aer["chance"]) == {"random", "diagonal"} and 0 <= aer["chance"]["diagonal"]["aer"] <= 1
    assert aer["unknown_tokens"]["src"] == pytest.approx(2 / 4) and aer["unknown_tokens"]["tgt"] == 0
    assert json.loads(json.dumps(rep))["attention_aer"] == aer  # JSON as it is
    md = markdown(rep)
    section = md.split("## Attention alignment (Ding et al. 2020 Tab. 3)")[1]
    b = aer["systems"]["baseline"]["aer"]
    assert f"| baseline | 1,2,3 | {100 * b['mean']:.2f} ± {100 * b['sd']:.2f} |" in section
    assert "KFTT" in section and "50.0 % of the source tokens and 0.0 % of the target tokens" in section
    assert "| *chance: diagonal* | – |" in section and "+ Combination 24.7" in section
    c = comps["combination"]
    assert (f"| combination | {100 * c['delta']:+.2f} [{100 * c['low']:+.2f}, {100 * c['high']:+.2f}] | "
            f"{c['p']:.3f} | {c['p_holm']:.3f} | {c['verdict']} |") in section
    assert "Holm over these 2 comparisons" in section and "seed 7" in section
    worse = [k for k, r in aer["systems"].items() if r["aer"]["mean"] >= aer["chance"]["diagonal"]["aer"]]
    assert ("No better than the diagonal links" in section) == bool(worse)
    assert all(name in section.split("No better than the diagonal links")[1] for name in worse)


def test_the_stage_also_scores_the_test_pairs_eflomal_links(tmp_path, capsys):
    from onmt_xl.experiments.evidence import aer_stage

    runner, jobs, calls, job_dir = _workdir(tmp_path)
    (tmp_path / "data" / "test.src").write_text("a b\nc\n")
    (tmp_path / "data" / "test.ref").write_text("x\ny z\n")
    (tmp_path / "align").mkdir()
    (tmp_path / "align" / "test.gdfa").write_text("0-0 1-0\n0-1\n")
    job_dir("baseline_s1", models=[("average2_step_20.pt", 1.5)])
    assert aer_stage(runner, jobs[:1]) == 0
    gold, test = calls
    assert test[test.index("-src") + 1].endswith("data/test.src") and test[test.index("-tgt") + 1].endswith("data/test.ref")
    assert "-report_align" in test and "-gold_align" in test
    # every link 0-0 against 0-0, 1-0 | 0-1: one sure hit of |A| 2 and |S| 3: AER 1 - 2/5
    assert f"baseline_s1 [test_align]: AER {100 * (1 - 2 / 5):.2f} %" in capsys.readouterr().out
    assert (tmp_path / "jobs" / "baseline_s1" / "hyp.test_align").exists()
