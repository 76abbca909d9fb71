"""``onmt-xl evidence --stage payoff`` (reports/PREREG_xlpos.md): the level files, the ends of the path reproducing the
``test`` and ``oracle`` variants word for word on a tiny trained model, the stage's choice of jobs, resuming, the
JSON, table and plot, and the queue's order."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onmt_xl.experiments.payoff import LEVELS, level_suffix, level_variant

#: a tiny HeadXL with every first-layer head on X+PE_XL, the encoder's only order information, so that its test and
#: oracle translations differ (a Combination this small starts InXL from PE_abs and may translate both alike:
#: it did on CI's machine), in a few seconds of one core
TINY = dict(enc_layers=1, dec_layers=1, heads=2, hidden_size=32, word_vec_size=32, transformer_ff=64, xl_heads=2,
            batch_size=512, valid_batch_size=512, bucket_size=1024, learning_rate=2.0, warmup_steps=20,
            report_every=20)
STEPS = 300


def _split_study(wd: Path, n_train=240, n_valid=20, n_test=30):
    """A work directory as ``--stage prepare`` leaves it, on the synthetic corpus: ``data/`` (train, valid, test with
    ``test.ref``), ``align/test.gdfa`` (the corpus' own links, standing in for eflomal's) and the preorderer."""
    from onmt_xl.core.data import synthetic
    from onmt_xl.core.reorder.preorderer import Preorderer

    corpus = synthetic.generate(n_train + n_valid + n_test, seed=3)
    (wd / "data").mkdir(parents=True)
    (wd / "align").mkdir()
    cut = {"train": (0, n_train), "valid": (n_train, n_train + n_valid), "test": (n_train + n_valid, None)}
    for split, (a, b) in cut.items():
        src, tgt, links = corpus.src[a:b], corpus.tgt[a:b], corpus.links[a:b]
        (wd / "data" / f"{split}.src").write_text("".join(" ".join(s) + "\n" for s in src))
        for name in (f"{split}.tgt",) + (("test.ref",) if split == "test" else ()):
            (wd / "data" / name).write_text("".join(" ".join(t) + "\n" for t in tgt))
        (wd / "align" / f"{split}.gdfa").write_text(
            "".join(" ".join(f"{i}-{j}" for i, j in sorted(l)) + "\n" for l in links))
    Preorderer.train(corpus.src[:n_train], corpus.links[:n_train], iterations=3, progress=False).save(
        str(wd / "preorderer.xlp"))
    return corpus


def _runner(wd: Path, jobs=()):
    from onmt_xl.experiments.runner import Corpus, Runner

    runner = Runner(Corpus("a", "b", "c", "d"), str(wd), list(jobs), preset="demo", train_steps=STEPS, gpu=False,
                    parallel=1)
    runner.threads = 1
    return runner


def _job(name="combination_s1", system="combination", seed=1):
    from onmt_xl.experiments.plan import Job

    return Job(name, system, seed, overrides={**TINY, "save_checkpoint_steps": STEPS, "valid_steps": STEPS},
               train_steps=STEPS, final_step=STEPS, average=1, variants=["test", "oracle"], experiments=["main"])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny HeadXL trained and translated by the main stage's code (variants test and oracle)."""
    wd = tmp_path_factory.mktemp("payoff") / "wd"
    _split_study(wd)
    job = _job("headxl_s1", "headxl")
    runner = _runner(wd, [job])
    runner.vocab()
    runner.train(job)
    for variant in job.variants:
        runner.translate(job, variant)
    return wd, job


def test_the_ends_of_the_path_are_the_test_and_oracle_variants_word_for_word(trained, capsys):
    from onmt_xl.experiments.payoff import payoff_stage
    from onmt_xl.core.reorder.positions_file import read_positions

    wd, job = trained
    jd = wd / "jobs" / job.name
    test, oracle = (jd / "hyp.test").read_text(), (jd / "hyp.oracle").read_text()
    assert test != oracle  # the model reads its positions: the check below can fail
    runner = _runner(wd, [job])
    assert payoff_stage(runner, [job]) == 0
    out = capsys.readouterr().out
    assert (jd / "hyp.payoff000").read_text() == test
    assert (jd / "hyp.payoff100").read_text() == oracle
    for alpha in LEVELS:
        header, rows = read_positions(str(wd / "data" / ("test.src" + level_suffix(alpha))))
        assert header.made["alpha"] == alpha and len(rows) == 30
        assert f"-xl_positions_suffix .{level_variant(alpha)}.xlpos" in (jd / "commands.sh").read_text()
    result = json.loads((wd / "payoff.json").read_text())
    assert list(result["levels"]) == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    taus = [lv["corpus_tau"] for lv in result["levels"].values()]
    means = [lv["mean_tau"] for lv in result["levels"].values()]
    assert means == sorted(means) and means[-1] == 1.0  # the synthetic links: the oracle orders every pair
    assert taus == sorted(taus) and taus[0] < taus[-1]
    from onmt_xl.core.reorder.preorderer import Preorderer

    # level 0's tau is the preorderer's test tau as preorderer.json reports it; level 1's the oracle's
    scores = runner.preorderer_scores(Preorderer.load(str(wd / "preorderer.xlp")), "test")
    assert taus[0] == pytest.approx(scores["tau"], abs=1e-12) and taus[-1] == pytest.approx(scores["oracle_tau"])
    assert result["levels"]["0.00"]["swaps"] == 0 and result["levels"]["1.00"]["discordant"] == 0
    assert result["ends"] == {job.name: {"payoff000 = test": True, "payoff100 = oracle": True}}
    level = result["levels"]["0.50"]
    assert set(level["bleu"]) == {job.name} and level["mean"] == level["bleu"][job.name] and level["sd"] is None
    md = (wd / "payoff.md").read_text()
    assert "| 0.50 |" in md and "word for word" in md and (wd / "payoff.png").stat().st_size > 0
    assert f"{job.name} [payoff050]: BLEU " in out
    # resumed: scored again, nothing translated again
    stamps = {p.name: p.stat().st_mtime_ns for p in jd.glob("hyp.payoff*")}
    assert payoff_stage(_runner(wd, [job]), [job]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in jd.glob("hyp.payoff*")} == stamps
    assert "translated before" in capsys.readouterr().out


# -- the stage's choice of jobs, the baseline, the messages (translations faked) -----------------------------------

@pytest.fixture
def study(tmp_path):
    """A prepared work directory, no model: ``_run`` replaced by a fake translation that records its arguments and
    writes the references as its "translation"; ``job_dir`` makes a job directory in a given state."""
    from onmt_xl.experiments.evidence import main_jobs

    wd = tmp_path / "wd"
    _split_study(wd)
    jobs = main_jobs(["baseline", "combination"], [1, 2, 3, 4], steps=20, every=10, average=2, curve_seed=99,
                     curve_steps=40)
    runner = _runner(wd, jobs)
    calls = []

    def fake_run(args, log, commands, echo="", tag=""):
        calls.append([str(a) for a in args])
        assert str(args[args.index("-src") + 1]) == str(wd / "data" / "test.src")
        args[args.index("-output") + 1].write_text((wd / "data" / "test.ref").read_text())
        return 1.0

    runner._run = fake_run

    def job_dir(name, done=True, hyps=("valid", "test", "oracle"), model=True):
        jd = wd / "jobs" / name
        jd.mkdir(parents=True)
        if done:
            (jd / "done.json").write_text("{}")
        for v in hyps:
            (jd / f"hyp.{v}").write_text((wd / "data" / ("valid.tgt" if v == "valid" else "test.ref")).read_text())
        if model:
            (jd / "average2_step_20.pt").write_bytes(b"model")
        return jd

    return wd, runner, jobs, calls, job_dir


def test_the_stage_translates_finished_xl_jobs_only_and_keeps_them_in_the_archive(study, capsys):
    from onmt_xl.experiments.payoff import payoff_stage

    wd, runner, jobs, calls, job_dir = study
    runner.archive = wd.parent / "archive"
    job_dir("combination_s1")
    training = job_dir("combination_s2", done=False, hyps=())
    job_dir("combination_s3", hyps=("valid", "test"))  # the main stage still translates its oracle variant
    job_dir("combination_s4", model=False)  # restored from an archive: nothing to translate with
    job_dir("baseline_s1")
    assert payoff_stage(runner, jobs) == 0
    out = capsys.readouterr().out
    assert "baseline_s1: skipped (reads no XL positions)" in out
    assert "combination_s2: skipped (not finished)" in out and not (training / "hyp.payoff000").exists()
    assert "combination_s3: skipped (finished, but oracle not translated yet)" in out
    assert "combination_s4: skipped (no checkpoint" in out
    assert len(calls) == len(LEVELS)
    for args, alpha in zip(calls, LEVELS):
        assert args[args.index("-model") + 1].endswith("combination_s1/average2_step_20.pt")
        assert args[args.index("-src") + 1] == str(wd / "data" / "test.src")
        assert args[args.index("-xl_positions_suffix") + 1] == level_suffix(alpha)
        assert args[args.index("-xl_preorderer") + 1] == str(wd / "preorderer.xlp")
        assert "-xl_source" not in args and args[args.index("-transforms") + 1] == "xl_position"
    result = json.loads((wd / "payoff.json").read_text())
    assert set(result["skipped"]) == {"baseline_s1", "combination_s2", "combination_s3", "combination_s4",
                                      "baseline_s2", "baseline_s3", "baseline_s4"}
    assert result["levels"]["0.25"]["bleu"] == {"combination_s1": pytest.approx(100.0)}  # the fake gives the references
    assert result["ends"]["combination_s1"] == {"payoff000 = test": True, "payoff100 = oracle": True}
    assert (runner.archive / "jobs" / "combination_s1" / "hyp.payoff075.gz").exists()
    assert (runner.archive / "payoff.json").read_text() == (wd / "payoff.json").read_text()
    assert str(wd) not in (runner.archive / "payoff.json").read_text()  # no machine path in an archived file
    # an end that differs from its variant is said, in the run and in the table
    (wd / "jobs" / "combination_s1" / "hyp.oracle").write_text("other\n" * 30)
    assert payoff_stage(runner, jobs) == 0
    assert "combination_s1: warning: payoff100 differs from the oracle variant's translation" in capsys.readouterr().out
    assert "differ: combination_s1 (payoff100 = oracle)" in (wd / "payoff.md").read_text()


def test_the_stage_translates_runner_parallel_at_a_time_other_jobs_together(study, capsys):
    import threading
    import time

    from onmt_xl.experiments.payoff import payoff_stage

    wd, runner, jobs, calls, job_dir = study
    for name in ("combination_s1", "combination_s2", "combination_s3"):
        job_dir(name)
    fake, lock, running, together = runner._run, threading.Lock(), [], []

    def slow_run(args, log, commands, echo="", tag=""):
        job = Path(args[args.index("-model") + 1]).parent.name
        with lock:
            running.append(job)
            together.append(tuple(running))
        time.sleep(0.05)
        try:
            return fake(args, log, commands, echo, tag)
        finally:
            with lock:
                running.remove(job)

    runner._run = slow_run
    runner.parallel = 2
    assert payoff_stage(runner, jobs) == 0
    assert len(calls) == 3 * len(LEVELS)
    assert max(len(t) for t in together) == 2  # two at a time, never more
    assert all(len(set(t)) == len(t) for t in together)  # level by level: two translations of one job never together
    result = json.loads((wd / "payoff.json").read_text())
    assert all(set(result["levels"][f"{a:.2f}"]["bleu"]) == {"combination_s1", "combination_s2", "combination_s3"}
               for a in LEVELS)
    out = capsys.readouterr().out
    assert out.index("combination_s1 [payoff100]: BLEU") < out.index("combination_s2 [payoff000]: BLEU")  # job by job


def test_the_baseline_line_comes_from_its_runs(study):
    import gzip

    from onmt_xl.core.errors import XLInputError, XLUsageError
    from onmt_xl.experiments.payoff import payoff_stage

    wd, runner, jobs, calls, job_dir = study
    job_dir("combination_s1")
    archive = wd.parent / "control"
    refs = (wd / "data" / "test.ref").read_text().splitlines()
    for seed, keep in ((1, len(refs)), (2, len(refs) // 2)):
        jd = archive / "jobs" / f"baseline_s{seed}"
        jd.mkdir(parents=True)
        (jd / "done.json").write_text("{}")
        lines = refs[:keep] + ["w"] * (len(refs) - keep)
        with gzip.open(jd / "hyp.test.gz", "wt", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    unfinished = archive / "jobs" / "baseline_s3"
    unfinished.mkdir()
    (unfinished / "hyp.test").write_text("w\n")  # no done.json: not counted (its line count would be refused)
    assert payoff_stage(runner, jobs, [str(archive)]) == 0
    base = json.loads((wd / "payoff.json").read_text())["baseline"]
    assert base["runs"] == 2 and base["bleu"]["baseline_s1"] == pytest.approx(100.0)
    assert base["mean"] == pytest.approx((100.0 + base["bleu"]["baseline_s2"]) / 2) and base["sd"] > 0
    assert "Baseline (Transformer, no XL positions): " in (wd / "payoff.md").read_text()
    (unfinished / "done.json").write_text("{}")
    with pytest.raises(XLInputError, match=r"baseline_s3/hyp.test: 1 line, but this work directory's test split "
                                           "has 30"):
        payoff_stage(runner, jobs, [str(archive)])
    with pytest.raises(XLUsageError, match="--baseline-from: no such directory"):
        payoff_stage(runner, jobs, [str(wd / "nowhere")])


def test_the_cli_stage_takes_the_tier_s_combination_jobs_and_says_what_it_needs(study):
    from tests.conftest import run_env

    wd, runner, jobs, calls, job_dir = study
    base = [sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "payoff", "--workdir", str(wd),
            "--data", str(wd / "data"), "--src", "src", "--tgt", "tgt", "--train", "train", "--test", "test",
            "--gold-text", "", "--gold-align", "", "--preset", "demo", "--tier", "e", "--gpu", "no"]
    proc = subprocess.run(base, capture_output=True, text=True, env=run_env())
    assert proc.returncode == 2 and "needs --steps" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(base + ["--steps", "20"], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "combination_s5: skipped (not finished)" in proc.stdout and "baseline_s1" not in proc.stdout
    assert "level 0.50: mean Kendall tau " in proc.stdout
    proc = subprocess.run(base + ["--steps", "20", "--systems", "baseline"], capture_output=True, text=True,
                          env=run_env())
    assert proc.returncode == 0 and "baseline_s1: skipped (reads no XL positions)" in proc.stdout
    (wd / "preorderer.xlp").unlink()
    proc = subprocess.run(base + ["--steps", "20"], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 2 and "preorderer.xlp: not found: --stage payoff needs the prepared test split" in \
        proc.stderr and "Traceback" not in proc.stderr


def test_the_queue_runs_the_payoff_stage_after_tier_x_and_before_inxl(tmp_path):
    """tools/study/xlpos_queue.sh: stage payoff between x and inxl, with tier x's options and the control's archive."""
    import argparse
    import os

    from onmt_xl.experiments.evidence import add_evidence
    from tests.conftest import REPO

    shim = tmp_path / "bin"
    shim.mkdir()
    calls = tmp_path / "calls"
    # python3 -c (the choice file's options) answers {}; every other call is recorded
    (shim / "python3").write_text(f'#!/bin/sh\nif [ "$1" = -c ]; then echo "{{}}"; exit 0; fi\n'
                                  f'printf "%s\\0" "$@" >> {calls}\nprintf "\\n" >> {calls}\n')
    (shim / "python3").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", STAGES="x payoff inxl", PAYOFF_EVERY="0.1")
    parser = argparse.ArgumentParser()
    add_evidence(parser.add_subparsers(dest="command"))
    text = (REPO / "tools" / "study" / "xlpos_queue.sh").read_text()
    assert "crossfit source drift x payoff inxl fewseed encfree" in text
    work = tmp_path / "work"
    (work / "tools" / "study").mkdir(parents=True)
    (work / "tools" / "study" / "xlpos_queue.sh").write_text(text)
    for d in ("runs/decisive_jaen_xlpos", "runs/decisive_jaen_xlpos_src", "runs/decisive_jaen_inxl"):
        (work / d).mkdir(parents=True)
    proc = subprocess.run(["bash", str(work / "tools" / "study" / "xlpos_queue.sh")], capture_output=True, text=True,
                          env=env, cwd=work)
    assert proc.returncode == 0, proc.stderr
    runs = [parser.parse_args(line.split("\0")[2:-1]) for line in calls.read_text().splitlines()]
    assert [(a.stage, a.tier) for a in runs] == [("main", "x"), ("payoff", "x"), ("main", "g")]
    x, payoff = runs[0], runs[1]
    assert (payoff.workdir, payoff.archive, payoff.steps) == (x.workdir, x.archive, x.steps)
    assert payoff.baseline_from == "reports/decisive_jaen" and payoff.preorder_options == x.preorder_options


def test_the_queue_runs_the_payoff_stage_as_tier_x_jobs_finish(tmp_path):
    """tools/study/xlpos_queue.sh, stage x: while the training runs, each newly archived tier-x job triggers the payoff
    stage (its model is on this machine only until the session ends), with tier x's options; none before one is."""
    import os

    from tests.conftest import REPO

    shim = tmp_path / "bin"
    shim.mkdir()
    calls = tmp_path / "calls"
    done = "reports/decisive_jaen_xlpos_src/jobs/combination_xfit_s1"
    # the stage-x training: records its call, archives one finished job after a moment, runs on a while longer
    (shim / "python3").write_text(
        '#!/bin/bash\nif [ "$1" = -c ]; then echo "{}"; exit 0; fi\n'
        f'echo "$*" >> {calls}\n'
        f'if [[ "$*" == *"--stage main"*"--tier x"* ]]; then sleep 0.5; mkdir -p {done}; touch {done}/done.json; '
        'sleep 1.5; fi\n')
    (shim / "python3").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", STAGES="x", PAYOFF_EVERY="0.2")
    work = tmp_path / "work"
    (work / "tools" / "study").mkdir(parents=True)
    (work / "tools" / "study" / "xlpos_queue.sh").write_text((REPO / "tools" / "study" / "xlpos_queue.sh").read_text())
    for d in ("runs/decisive_jaen_xlpos", "runs/decisive_jaen_xlpos_src", "runs/decisive_jaen_inxl"):
        (work / d).mkdir(parents=True)
    proc = subprocess.run(["bash", "tools/study/xlpos_queue.sh"], capture_output=True, text=True, env=env, cwd=work,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = calls.read_text().splitlines()
    stages = [(line.split("--stage ")[1].split()[0], line.split("--tier ")[1].split()[0]) for line in lines]
    assert stages == [("main", "x"), ("payoff", "x")]  # once: one job finished, looked at about 8 times
    assert "--parallel 1" in lines[1] and "--baseline-from reports/decisive_jaen" in lines[1]
    assert lines[0].split("--tier x ")[1] in lines[1]  # the same work directory, archive, steps and source options
    assert "payoff of the 1 finished x job(s)" in proc.stdout
