"""``onmt-xl demo``/``pipeline --seeds N`` (:mod:`onmt_xl.experiments.seeds`): N runs of every system, each with its
own seed and files, trained together (to the plateau too), and "does it help?" answered over them by the
seed-pooled paired bootstrap; through OpenNMT-py and Eole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu
import yaml

from onmt_xl.experiments.demo import does_it_help, summary, system_jobs
from onmt_xl.experiments.seeds import run_names, runs_by_system, seed_results
from tests.conftest import run_env
from tests.test_training_positions import pipeline


def test_run_names_first_runs_keep_the_system_name():
    runs = run_names(["baseline", "combination"], 3, 1234)
    assert list(runs) == ["baseline", "combination", "baseline_seed2", "combination_seed2", "baseline_seed3",
                          "combination_seed3"]
    assert runs["combination"] == ("combination", 1234) and runs["combination_seed3"] == ("combination", 1236)
    assert runs_by_system(runs) == {"baseline": ["baseline", "baseline_seed2", "baseline_seed3"],
                                    "combination": ["combination", "combination_seed2", "combination_seed3"]}
    assert list(run_names(["inxl"], 1, 7)) == ["inxl"]


def test_system_jobs_carry_seed_and_training_positions():
    jobs = system_jobs(["baseline", "combination"], "pipeline", "crossfit", seeds=2)
    assert [(j.name, j.system, j.seed, j.xl_train) for j in jobs] == [
        ("baseline", "baseline", 1234, "preorderer"), ("combination", "combination", 1234, "crossfit"),
        ("baseline_seed2", "baseline", 1235, "preorderer"), ("combination_seed2", "combination", 1235, "crossfit")]


def test_every_round_of_a_run_to_the_plateau_is_that_runs_own_job():
    """Each round's job keeps what the command gave its run: its system, seed and training positions (a round once
    rebuilt the job from the system's name alone, so ``--training-positions crossfit`` was lost to the plateau)."""
    from onmt_xl.experiments.until_plateau import OpenNMTRounds

    class Runner:
        workdir = "."
        jobs = system_jobs(["combination"], "pipeline", "crossfit", seeds=2)

    rounds = OpenNMTRounds(Runner())
    job = rounds.job("combination_seed2", 400, final=400, average=3)
    assert (job.name, job.system, job.seed, job.xl_train) == ("combination_seed2", "combination", 1235, "crossfit")
    assert (job.train_steps, job.final_step, job.average, job.variants) == (400, 400, 3, ["test"])
    assert rounds.job("combination", 0).xl_train == "crossfit" and rounds.job("combination", 0).variants == []
    assert rounds.job("baseline", 8).seed == 1234  # not among the runner's jobs: the system, the study's seed


def corpus(n: int = 60):
    refs = [f"the cat number {i} sat on the mat near door {i % 7} ." for i in range(n)]

    def noisy(k: int, rate: int):
        return [r if (i * 7 + k) % rate else r.replace("cat", "dog").replace("mat", "hat") for i, r in enumerate(refs)]

    return refs, noisy


def test_seed_results_pool_the_runs_of_each_side(tmp_path):
    refs, noisy = corpus()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.ref").write_text("\n".join(refs) + "\n", encoding="utf-8")
    runs = run_names(["baseline", "combination"], 3, 1234)
    hyps = {}
    for k, name in enumerate(runs):
        hyps[name] = noisy(k, 2 if name.startswith("baseline") else 5)
        (tmp_path / f"{name}.hyp").write_text("\n".join(hyps[name]) + "\n", encoding="utf-8")
    res = {"jobs": {}}
    seed_results(res, runs, lambda n: tmp_path / f"{n}.hyp", tmp_path, tmp_path / "results.json")
    assert res["seed_runs"]["combination"] == {"runs": ["combination", "combination_seed2", "combination_seed3"],
                                               "seeds": [1234, 1235, 1236]}
    c = res["seed_pooled"]["combination"]

    def mean_bleu(system):
        names = res["seed_runs"][system]["runs"]
        return sum(sacrebleu.corpus_bleu(hyps[n], [refs]).score for n in names) / len(names)

    assert c["delta"] == pytest.approx(mean_bleu("combination") - mean_bleu("baseline"), abs=1e-9)
    assert c["low"] < c["delta"] < c["high"] and 0 < c["p"] <= 1 and (c["runs"], c["baseline_runs"]) == (3, 3)
    assert c["delta"] > 0 and c["low"] > 0  # a fifth of the sentences hurt against every second one
    assert json.loads((tmp_path / "results.json").read_text())["seed_pooled"]["combination"] == c


def test_each_run_is_compared_with_the_baseline_run_of_its_seed(tmp_path):
    """results.json's per-run p and sign test: the run against the baseline's run of the same training seed, never
    against the baseline's first run (what the scoring shared with single runs gives every run); the baseline's runs
    get none."""
    from onmt_xl.experiments.scoring import paired_bootstrap, sign_test

    refs, noisy = corpus()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.ref").write_text("\n".join(refs) + "\n", encoding="utf-8")
    runs = run_names(["baseline", "combination"], 3, 1234)
    rates = {"baseline": 2, "baseline_seed2": 9, "baseline_seed3": 3, "combination": 5, "combination_seed2": 3,
             "combination_seed3": 4}
    hyps = {name: noisy(k, rates[name]) for k, name in enumerate(runs)}
    for name, lines in hyps.items():
        (tmp_path / f"{name}.hyp").write_text("\n".join(lines) + "\n", encoding="utf-8")
    stale = dict(p_bootstrap=0.5, sign_better=1, sign_worse=1, p_sign=1.0)  # as collect leaves them
    res = {"jobs": {n: {"variants": {"test": dict(stale) if n != "baseline" else {}}} for n in runs}}
    seed_results(res, runs, lambda n: tmp_path / f"{n}.hyp", tmp_path, tmp_path / "results.json")
    written = json.loads((tmp_path / "results.json").read_text())["jobs"]
    for k, name in ((1, "combination"), (2, "combination_seed2"), (3, "combination_seed3")):
        base = "baseline" if k == 1 else f"baseline_seed{k}"
        test = written[name]["variants"]["test"]
        st = sign_test(hyps[name], hyps[base], refs)
        assert test["baseline_run"] == base
        assert test["p_bootstrap"] == paired_bootstrap({name: hyps[name]}, hyps[base], refs)[name]
        assert (test["sign_better"], test["sign_worse"], test["p_sign"]) == (st.better, st.worse, st.p_value)
        if k > 1:  # the runs differ enough that the other pairing would read otherwise
            assert sign_test(hyps[name], hyps["baseline"], refs) != st
    for name in ("baseline", "baseline_seed2", "baseline_seed3"):
        assert written[name]["variants"]["test"] == {}


def seeded_res():
    def job(bleu, chrf=50.0):
        return {"variants": {"test": {"bleu": bleu, "chrf": chrf}}, "parameters": 1000}

    return {"jobs": {"baseline": job(30.0), "combination": job(30.9, 51.0), "baseline_seed2": job(30.4),
                     "combination_seed2": job(31.1, 52.0)},
            "seed_runs": {"baseline": {"runs": ["baseline", "baseline_seed2"], "seeds": [1234, 1235]},
                          "combination": {"runs": ["combination", "combination_seed2"], "seeds": [1234, 1235]}},
            "seed_pooled": {"combination": {"delta": 0.8, "low": 0.21, "high": 1.37, "p": 0.004, "runs": 2,
                                            "baseline_runs": 2, "n_samples": 1000, "seed": 12345}}}


def test_the_summary_gives_mean_and_sd_and_the_seed_pooled_answer():
    res = seeded_res()
    lines = does_it_help(res)
    assert lines[0] == ("does it help? combination: +0.80 BLEU against the baseline, the means of 2 and 2 runs (95% "
                        "interval [+0.21, +1.37]; seed-pooled paired bootstrap p 0.004): better than the baseline at "
                        "0.05")
    assert lines[1].startswith("  (2 training runs a system, seeds 1234-1235: the interval and p count the variation "
                               "between test sentences and between training runs")
    text = summary(res).splitlines()
    assert text[1] == ("baseline     BLEU  30.20 ± 0.28  chrF  50.00 ± 0.00  params 1,000  (mean ± sd of 2 runs: BLEU "
                       "30.00, 30.40)")
    assert text[2].startswith("combination  BLEU  31.00 ± 0.14  chrF  51.50 ± 0.71  params 1,000")
    assert not any("seed2" in line for line in text)  # the runs are inside their system's line
    # the baseline alone, or no baseline: no answer, and never one run against another
    res["jobs"]["baseline_seed2"]["variants"]["test"]["p_bootstrap"] = 0.01
    alone = {"jobs": {n: e for n, e in res["jobs"].items() if n.startswith("baseline")},
             "seed_runs": {"baseline": res["seed_runs"]["baseline"]}, "seed_pooled": {}}
    assert does_it_help(alone) == [] and "does it help?" not in summary(alone)


def check_seeded_summary(out: str, results: Path) -> None:
    assert "Traceback" not in out
    summary_text = out.split("results: ", 1)[1]
    assert "baseline     BLEU" in summary_text and "(mean ± sd of 2 runs: BLEU" in summary_text
    assert "seed-pooled paired bootstrap p" in summary_text and "2 training runs a system, seeds 1234-1235" in out
    res = json.loads(results.read_text())
    assert set(res["jobs"]) == {"baseline", "combination", "baseline_seed2", "combination_seed2"}
    assert res["seed_pooled"]["combination"]["runs"] == 2


def test_pipeline_seeds_through_opennmt(tmp_path):
    from tests.test_raw_text import write_raw_corpus

    files = write_raw_corpus(tmp_path / "corpus")
    wd = tmp_path / "run"
    done = pipeline(files, wd, "--seeds", "2", "--train-steps", "4", "--systems", "baseline,combination", "--gpu", "no",
                    "--if-monotone", "train")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    check_seeded_summary(done.stdout, wd / "results.json")
    assert ("seeds: every system trains 2 times (--seeds), with the training seeds 1234-1235: as SYSTEM, then "
            "SYSTEM_seed2; the summary pools the runs of each system") in done.stdout
    for name, seed in (("combination", 1234), ("combination_seed2", 1235)):
        cfg = yaml.safe_load((wd / "jobs" / name / "config.yaml").read_text())
        assert cfg["seed"] == seed and cfg["save_model"].startswith(str(wd / "jobs" / name))
        assert json.loads((wd / "jobs" / name / "done.json").read_text())["system"] == "combination"
    assert (wd / "jobs" / "combination" / "model_step_4.pt").read_bytes() != \
        (wd / "jobs" / "combination_seed2" / "model_step_4.pt").read_bytes()  # another initialisation
    # the closing commands name a system's first run
    assert f"onmt_translate -config {wd / 'jobs' / 'combination' / 'translate.yaml'}" in done.stdout


def test_pipeline_seeds_to_the_plateau_trains_every_run(tmp_path, monkeypatch):
    """Every run is a curve of the plateau rule; each is translated with its own final model."""
    from onmt_xl.experiments.runner import Runner
    from onmt_xl.experiments.stages import Corpus
    from onmt_xl.experiments.until_plateau import PlateauTraining, Schedule
    from tests.test_raw_text import write_raw_corpus

    monkeypatch.setenv("PYTHONPATH", run_env()["PYTHONPATH"])
    files = write_raw_corpus(tmp_path / "corpus", (("train", 200), ("valid", 20), ("test", 20)))
    corpus = Corpus(str(files["train_src"]), str(files["train_tgt"]), str(files["test_src"]), str(files["test_tgt"]),
                    valid_src=str(files["valid_src"]), valid_tgt=str(files["valid_tgt"]))
    wd = tmp_path / "run"
    runner = Runner(corpus, str(wd), system_jobs(["combination"], "pipeline", seeds=2), preset="demo", train_steps=4,
                    beam_size=1, gpu=False, parallel=1, preorder_iterations=1, tokenize="auto")
    res = PlateauTraining(runner, [j.name for j in runner.jobs], Schedule(every=2, round=4, window=100, cap=4,
                                                                           average=2)).run()
    assert set(res["jobs"]) == {"combination", "combination_seed2"}
    state = json.loads((wd / "plateau.json").read_text())
    assert state["final_step"] == 4 and set(state["validation"]) == {"combination", "combination_seed2"}
    for name, seed in (("combination", 1234), ("combination_seed2", 1235)):
        jd = wd / "jobs" / name
        assert yaml.safe_load((jd / "config.yaml").read_text())["seed"] == seed
        assert [json.loads(line)["step"] for line in (jd / "curve.jsonl").read_text().splitlines()] == [2, 4]
        assert (jd / "hyp.test").read_text(encoding="utf-8").count("\n") == 20


@pytest.mark.needs_eole
def test_pipeline_seeds_through_eole(tmp_path, monkeypatch, capsys):
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    import argparse

    from onmt_xl.experiments.eole_demo import run_eole_demo
    from onmt_xl.experiments.stages import Corpus
    from tests.test_raw_text import write_raw_corpus

    monkeypatch.setenv("PYTHONPATH", run_env()["PYTHONPATH"])
    files = {k: str(v) for k, v in write_raw_corpus(tmp_path / "corpus", (("train", 200), ("valid", 20),
                                                                          ("test", 20))).items()}
    corpus = Corpus(files["train_src"], files["train_tgt"], files["test_src"], files["test_tgt"],
                    valid_src=files["valid_src"], valid_tgt=files["valid_tgt"])
    wd = tmp_path / "run"
    args = argparse.Namespace(systems=["baseline", "combination"], workdir=str(wd), train_steps=4, beam_size=1,
                              gpu="no", parallel=1, preorder_iterations=1, tokenize="auto", subword_size=None,
                              if_monotone="train", preset="demo", seeds=2)
    assert run_eole_demo(corpus, args, summary) == 0
    check_seeded_summary(capsys.readouterr().out, wd / "eole" / "results.json")
    for name, seed in (("combination", 1234), ("combination_seed2", 1235)):
        cfg = yaml.safe_load((wd / "eole" / f"{name}.yaml").read_text())
        assert cfg["seed"] == seed and cfg["training"]["model_path"] == str(wd / "eole" / "models" / name)
        assert json.loads((wd / "eole" / "models" / name / "done.json").read_text())["system"] == "combination"


def test_each_system_serves_its_run_best_on_validation(tmp_path):
    from onmt_xl.experiments.seeds import served_runs

    runs = run_names(["baseline", "combination"], 2, 1234)
    assert served_runs(runs, tmp_path) == {"baseline": "baseline", "combination": "combination"}  # unscored: first
    (tmp_path / "plateau.json").write_text(json.dumps({"final_step": 4, "validation": {
        "combination_seed2": {"average": 3, "bleu_averaged": 31.0}}}))
    for name, bleu in (("baseline", 20.0), ("baseline_seed2", 19.0), ("combination", 30.0)):
        (tmp_path / "jobs" / name).mkdir(parents=True)
        (tmp_path / "jobs" / name / "curve.jsonl").write_text(json.dumps({"step": 4, "bleu": bleu}) + "\n")
    assert served_runs(runs, tmp_path) == {"baseline": "baseline", "combination": "combination_seed2"}
    assert served_runs(run_names(["baseline"], 1, 1234), tmp_path) == {}


def test_the_closing_commands_name_the_served_run(tmp_path):
    from onmt_xl.experiments.tokenization import Tokenization
    from onmt_xl.experiments.usage import next_steps

    class Runner:
        workdir, beam_size, tokenization = tmp_path, 5, Tokenization("words")

        def path(self, *parts):
            return tmp_path.joinpath(*parts)

    (tmp_path / "jobs" / "combination_seed2").mkdir(parents=True)
    (tmp_path / "jobs" / "combination_seed2" / "translate.yaml").write_text("model: m.pt\n")
    text = next_steps(Runner(), ["combination"], served={"combination": "combination_seed2"})
    assert ("translate new raw text with combination_seed2 (of combination's runs, the best on the validation pairs; "
            "detokenized output):") in text
    assert f"-config {tmp_path / 'jobs' / 'combination_seed2' / 'translate.yaml'}" in text
    eole = next_steps(Runner(), ["combination"], "eole", {"combination": Path("m2")}, tmp_path / "serve.yaml",
                      {"combination": "combination_seed2"})
    assert "eole predict -model_path m2 " in eole and '"model": "combination"' in eole


def test_split_run_inverts_run_names():
    from onmt_xl.experiments.seeds import split_run

    runs = run_names(["baseline", "disan_nogate"], 3, 1234)
    assert [split_run(n) for n in runs] == [("baseline", 1), ("disan_nogate", 1), ("baseline", 2),
                                           ("disan_nogate", 2), ("baseline", 3), ("disan_nogate", 3)]


def test_the_learning_curves_colour_each_system_once(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from onmt_xl.experiments.curve import plot_curves

    rows = [{"step": 100, "bleu": 1.0, "valid_ppl": 20.0}, {"step": 200, "bleu": 2.0, "valid_ppl": 15.0}]
    seen, real = [], plt.Axes.plot

    def plot(self, *args, **kw):
        seen.append((kw["label"], kw["color"], kw["linestyle"]))
        return real(self, *args, **kw)

    monkeypatch.setattr(plt.Axes, "plot", plot)
    names = list(run_names(["baseline", "combination"], 2, 1234))
    assert plot_curves({n: rows for n in names}, tmp_path / "c.png") == tmp_path / "c.png"
    assert seen[::2] == [("baseline", "C0", "-"), ("combination", "C1", "-"), ("baseline_seed2", "C0", "--"),
                         ("combination_seed2", "C1", "--")]


def test_seeds_is_a_count_and_a_list_is_refused_in_words(capsys):
    from onmt_xl.experiments.cli import main

    for value, said in (("1234,5678", "'1234,5678': the number of training runs a system, e.g. 3 (the training seeds "
                                      "1234, 1235, 1236); a list of seeds is onmt-xl experiments' --seeds"),
                        ("0", "'0': a whole number of at least 1")):
        with pytest.raises(SystemExit) as stop:
            main(["demo", "--seeds", value])
        assert stop.value.code == 2 and said in capsys.readouterr().err
