"""``onmt-xl evidence --stage plateau``: a system trained on from its main job's checkpoint, in rounds, to the study's
step rule (or a cap), then translated at the plateau; and how the reports read it."""

import argparse
import json
import os

import pytest
import torch
import yaml

from onmt_xl.core.errors import XLInputError
from onmt_xl.experiments import evidence, papers
from onmt_xl.experiments.evidence import add_evidence
from onmt_xl.experiments.jobs import whole_checkpoint
from onmt_xl.experiments.plateau import describe, next_round, read_state, run_plateau
from onmt_xl.experiments.runner import Corpus, Runner


def _args(*extra):
    parser = argparse.ArgumentParser()
    add_evidence(parser.add_subparsers(dest="command"))
    return parser.parse_args(["evidence", "--stage", "plateau", "--seeds", "1,2", "--score-every", "1000", *extra])


def _setup(tmp_path, monkeypatch, bleu, **cfg_change):
    """A work directory whose lstm_s1/_s2 stopped at 8,000 steps (checkpoint and average kept), a runner whose
    ``run`` writes checkpoints every 500 steps up to each job's ``train_steps`` (and the translations it asks
    for), and a scorer that gives checkpoint ``step`` of seed ``seed`` the validation BLEU ``bleu(step, seed)``."""
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [], preset="demo", train_steps=8000, gpu=False)
    runner.parallel = 2
    calls = []
    for seed in (1, 2):
        source = evidence.Job(f"lstm_s{seed}", "lstm", seed, overrides=evidence._every(500), train_steps=8000)
        jd = tmp_path / "jobs" / source.name
        jd.mkdir(parents=True)
        (jd / "config.yaml").write_text(yaml.safe_dump({**runner.job_config(source), **cfg_change}))
        torch.save(f"lstm seed {seed} at 8000", jd / "model_step_8000.pt")
        (jd / "average5_step_8000.pt").write_text(f"lstm seed {seed} averaged")
        (jd / "done.json").write_text("{}")

    def run(argv):
        calls.append([(j.name, j.train_steps, j.final_step, j.average, tuple(j.variants)) for j in runner.jobs])
        for job in runner.jobs:
            jd = runner.path("jobs", job.name)
            cfg = runner._checked_config(job)  # refuses fewer steps; a finished job given more resumes
            if (jd / "done.json").exists() and not job.variants:
                continue
            jd.mkdir(parents=True, exist_ok=True)
            (jd / "config.yaml").write_text(yaml.safe_dump(cfg))
            last = max([int(p.stem.rsplit("_", 1)[1]) for p in jd.glob("model_step_*.pt")], default=0)
            for step in range(last + 500, job.train_steps + 1, 500):
                torch.save(step, jd / f"model_step_{step}.pt")
            (jd / "done.json").write_text("{}")
            for variant in job.variants:
                (jd / f"hyp.{variant}").write_text(f"average of {job.average} up to {job.final_step}\n")
        return {}

    def score(runner_, job, every, threads=None, first=0):
        jd = runner_.path("jobs", job.name)
        curve = jd / "curve.jsonl"
        done = {json.loads(line)["step"] for line in curve.read_text().splitlines()} if curve.exists() else set()
        for p in sorted(jd.glob("model_step_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1])):
            step = int(p.stem.rsplit("_", 1)[1])
            if step % every == 0 and step >= first and step not in done:
                assert whole_checkpoint(p), f"{p} scored though cut short"
                with open(curve, "a") as f:
                    f.write(json.dumps({"step": step, "bleu": bleu(step, job.seed)}) + "\n")

    monkeypatch.setattr(runner, "run", run)
    return runner, calls, score


def test_rounds_continue_the_main_jobs_checkpoint_until_the_step_rule_holds(tmp_path, monkeypatch):
    """BLEU rises until 20,000 steps (seed 2 until 18,000), then stays: rounds of 4,000 steps from 8,000 stop once
    2,000 steps past 20,000 are scored; each seed is translated with the average of its 5 checkpoints up to 20,000;
    only its last checkpoint stays."""
    runner, calls, score = _setup(tmp_path, monkeypatch, lambda step, seed: min(step, 22000 - 2000 * seed) / 1000)
    assert run_plateau(_args("--workdir", str(tmp_path)), runner, [1, 2], evidence._every(500), score) == 0
    rounds = [{name: steps for name, steps, *_ in call} for call in calls[:-1]]
    assert rounds == [{"lstm_plateau_s1": t, "lstm_plateau_s2": t} for t in (12000, 16000, 20000, 24000)]
    assert calls[-1] == [(f"lstm_plateau_s{s}", 24000, 20000, 5, ("valid", "test")) for s in (1, 2)]
    state = read_state(tmp_path, "lstm")
    assert (state["status"], state["step"], state["cap"], state["from_step"]) == ("plateau", 20000, 40000, 8000)
    assert state["reached"] == {"lstm_plateau_s1": 24000, "lstm_plateau_s2": 24000}
    for seed in (1, 2):
        jd = tmp_path / "jobs" / f"lstm_plateau_s{seed}"
        assert [p.name for p in jd.glob("model_step_*.pt")] == ["model_step_24000.pt"]
        assert (jd / "hyp.test").read_text() == "average of 5 up to 20000\n"
        points = [json.loads(line)["step"] for line in (jd / "curve.jsonl").read_text().splitlines()]
        assert points == list(range(8000, 24001, 1000))  # scored from the continued checkpoint on
        # the source's checkpoint was linked, not trained again; the source job keeps its own
        assert (jd / "average5_step_8000.pt").read_text() == f"lstm seed {seed} averaged"
        assert (tmp_path / "jobs" / f"lstm_s{seed}" / "model_step_8000.pt").exists()
    assert "plateau at step 20,000" in describe(str(tmp_path), "lstm")
    calls.clear()  # run again: nothing left to train or translate
    assert run_plateau(_args("--workdir", str(tmp_path)), runner, [1, 2], evidence._every(500), score) == 0
    assert [[c[1:] for c in call] for call in calls] == [[(24000, 20000, 5, ("valid", "test"))] * 2]


def test_the_cap_ends_the_rounds_without_a_translation(tmp_path, monkeypatch):
    runner, calls, score = _setup(tmp_path, monkeypatch, lambda step, seed: step / 1000)
    assert run_plateau(_args("--workdir", str(tmp_path), "--plateau-cap", "14000"), runner, [1, 2], evidence._every(500), score) == 0
    assert [[c[1] for c in call] for call in calls] == [[12000, 12000], [14000, 14000]]
    state = read_state(tmp_path, "lstm")
    assert (state["status"], state["step"]) == ("cap", None)
    assert not list(tmp_path.glob("jobs/lstm_plateau_s*/hyp.*"))
    assert describe(str(tmp_path), "lstm").startswith("plateau (lstm): cap;")


def test_a_checkpoint_cut_short_by_a_stop_is_set_aside_before_scoring_and_the_rounds_go_on(tmp_path, monkeypatch):
    runner, calls, score = _setup(tmp_path, monkeypatch, lambda step, seed: step / 1000)
    run_plateau(_args("--workdir", str(tmp_path), "--plateau-cap", "12000"), runner, [1, 2], evidence._every(500), score)
    jd = tmp_path / "jobs" / "lstm_plateau_s1"
    (jd / "curve.jsonl").write_text("".join(line + "\n" for line in (jd / "curve.jsonl").read_text().splitlines()[:-1]))
    # the stop came while OpenNMT saved the round's last checkpoint: not scored, the round not recorded as done
    cut = (jd / "model_step_12000.pt").read_bytes()[:100]
    (jd / "model_step_12000.pt").write_bytes(cut)
    (jd / "done.json").unlink()
    calls.clear()
    run_plateau(_args("--workdir", str(tmp_path), "--plateau-cap", "16000"), runner, [1, 2], evidence._every(500), score)
    assert (jd / "model_step_12000.pt.broken").read_bytes() == cut
    assert [[c[1] for c in call] for call in calls] == [[12000, 12000], [16000, 16000]]  # the round ended first
    assert torch.load(jd / "model_step_12000.pt") == 12000  # trained again from 11,500
    points = [json.loads(line)["step"] for line in (jd / "curve.jsonl").read_text().splitlines()]
    assert points == list(range(8000, 16001, 1000))
    assert read_state(tmp_path, "lstm")["reached"] == {"lstm_plateau_s1": 16000, "lstm_plateau_s2": 16000}


def test_a_round_begun_again_from_step_0_is_finished_after_a_stop_before_the_plateau_steps(tmp_path, monkeypatch):
    """Restored from an archive (the round to 12,000 finished elsewhere, checkpoints not kept) and without its
    source's checkpoint here, a job trains its next round from step 0; a stop at 6,500 steps leaves that round's end
    (16,000) in place, not the round that 6,500 steps alone would give (12,000), which the job would refuse."""
    runner, calls, score = _setup(tmp_path, monkeypatch, lambda step, seed: step / 1000)
    for seed in (1, 2):
        os.unlink(tmp_path / "jobs" / f"lstm_s{seed}" / "model_step_8000.pt")
    run_plateau(_args("--workdir", str(tmp_path), "--plateau-cap", "12000"), runner, [1, 2], evidence._every(500), score)
    jds = [tmp_path / "jobs" / f"lstm_plateau_s{seed}" for seed in (1, 2)]
    for jd in jds:  # the archive keeps config, curve and done.json, not the checkpoints
        for p in jd.glob("model_step_*.pt"):
            p.unlink()
    calls.clear()
    stop = RuntimeError("the session ended")
    real_run = runner.run

    def stopped(argv):  # trains the round to its end, then loses every checkpoint past 6,500 and its done.json
        real_run(argv)
        for jd in jds:
            for p in jd.glob("model_step_*.pt"):
                if int(p.stem.rsplit("_", 1)[1]) > 6500:
                    p.unlink()
            (jd / "done.json").unlink()
            (jd / "curve.jsonl").unlink(missing_ok=True)
        raise stop
    monkeypatch.setattr(runner, "run", stopped)
    with pytest.raises(RuntimeError, match="the session ended"):
        run_plateau(_args("--workdir", str(tmp_path), "--plateau-cap", "16000"), runner, [1, 2], evidence._every(500),
                    score)
    monkeypatch.setattr(runner, "run", real_run)
    run_plateau(_args("--workdir", str(tmp_path), "--plateau-cap", "16000"), runner, [1, 2], evidence._every(500), score)
    assert [[c[1] for c in call] for call in calls] == [[16000, 16000], [16000, 16000]]
    assert read_state(tmp_path, "lstm")["reached"] == {"lstm_plateau_s1": 16000, "lstm_plateau_s2": 16000}
    for jd in jds:
        points = [json.loads(line)["step"] for line in (jd / "curve.jsonl").read_text().splitlines()]
        assert points == list(range(8000, 16001, 1000))


def test_a_source_of_another_configuration_is_refused_and_a_missing_one_trains_from_step_0(tmp_path, monkeypatch):
    runner, calls, score = _setup(tmp_path, monkeypatch, lambda step, seed: 1.0, hidden_size=999)
    with pytest.raises(XLInputError, match=r"lstm_plateau_s1 cannot continue lstm_s1: they differ in hidden_size"):
        run_plateau(_args("--workdir", str(tmp_path)), runner, [1, 2], evidence._every(500), score)
    runner, calls, score = _setup(tmp_path / "other", monkeypatch, lambda step, seed: step / 1000)
    os.unlink(tmp_path / "other" / "jobs" / "lstm_s2" / "model_step_8000.pt")
    run_plateau(_args("--workdir", str(tmp_path / "other"), "--plateau-cap", "12000"), runner, [1, 2],
                evidence._every(500), score)
    steps = {s: sorted(int(p.stem.rsplit("_", 1)[1]) for p in (tmp_path / "other" / "jobs" / f"lstm_plateau_s{s}")
                       .glob("model_step_*")) for s in (1, 2)}
    assert steps[1][0] == 8000 and steps[2][0] == 500  # seed 2 trained from step 0: the same model from its start
    assert not (tmp_path / "other" / "jobs" / "lstm_plateau_s2" / "average5_step_8000.pt").exists()


def test_round_ends_and_option_checks():
    assert [next_round(r, 8000, 4000, 40000) for r in (0, 8000, 9500, 12000, 39000)] == [12000, 12000, 12000, 16000,
                                                                                           40000]
    with pytest.raises(XLInputError, match="--plateau-round must be a positive multiple of --score-every"):
        run_plateau(_args("--plateau-round", "1500"), None, [1, 2], {}, None)


def _study(**extra):
    rep = {"workdir": "decisive_jaen", "test_sentences": 5500, "novel_sentences": 5000, "seen_source_sentences": 0,
           "bootstrap": {"samples": 10, "seed": 1}, "comparisons": {}, "sweeps": [], "by_reordering": {}}
    rep.update(extra)
    return rep


def _state(status, step=None):
    return {"system": "lstm", "seeds": [1, 2], "from_step": 8000, "round": 4000, "cap": 40000, "score_every": 1000,
            "tolerance": 0.5, "window": 2000, "reached": {"lstm_plateau_s1": 16000, "lstm_plateau_s2": 16000},
            "step": step, "status": status}


def test_the_papers_read_the_lstm_claim_at_its_plateau_apart_from_the_preregistered_orderings():
    plateau_claim = "The same, the LSTM trained on to its own plateau"
    claim = lambda rep: next(c for c in rep["claims"] if c["claim"].startswith(plateau_claim))  # noqa: E731
    rep = papers.build({"decisive": _study(plateaus={"lstm": _state("training")})}, heads=4)
    assert claim(rep)["verdict"] == papers.NOT_RUN
    assert claim(rep)["measured"][0]["figure"] == "no plateau yet (seeds at 16,000, 16,000 steps)"
    assert "not run yet (the LSTM's plateau stage)" in papers.markdown(rep)
    rep = papers.build({"decisive": _study(plateaus={"lstm": _state("cap")})}, heads=4)
    assert claim(rep)["verdict"] == papers.NOT_MEASURABLE  # as the deviation states
    pair = {"a": "encoder_free_inxl", "b": "lstm_plateau", "family": "plateau", "delta": 0.2, "low": -0.3, "high": 0.7,
            "p": 0.4, "p_holm": 0.4, "system_runs": 2, "baseline_runs": 2}
    at_8000 = {**pair, "b": "lstm", "delta": 9.0, "low": 8.5, "high": 9.5, "p": 0.0, "p_holm": 0.0}
    rep = papers.build({"decisive": _study(plateaus={"lstm": _state("plateau", 20000)},
                                           pairs={"encoder_free_inxl > lstm": at_8000},
                                           plateau_pairs={"encoder_free_inxl > lstm_plateau": pair})}, heads=4)
    row = claim(rep)["measured"][0]
    assert (row["delta"], row["m"], claim(rep)["verdict"]) == (0.2, 1, papers.NOT_MEASURABLE)
    preregistered = next(c for c in rep["claims"] if c["claim"].endswith("8,000 steps (preregistered)"))
    assert preregistered["measured"][0]["delta"] == 9.0 and preregistered["verdict"].startswith(papers.REPRODUCED)


def test_the_evidence_report_shows_the_plateau_and_its_orderings(tmp_path):
    from onmt_xl.experiments.evidence_markdown import _plateau_section
    from onmt_xl.experiments.evidence_report import PLATEAU_FAMILY, pair_rows, plateau_states

    refs = {"test": ["the cat sat on the mat", "a dog ran"], "valid": ["it rains today"]}
    for name, hyps in (("encoder_free_inxl_s1", refs), ("lstm_plateau_s1", {"test": ["the cat", "a dog"],
                                                                              "valid": ["it rains"]})):
        jd = tmp_path / "jobs" / name
        jd.mkdir(parents=True)
        (jd / "done.json").write_text(json.dumps({"resumed_exactly": True, "device": "gpu"}))
        for split, lines in hyps.items():
            (jd / f"hyp.{split}").write_text("\n".join(lines) + "\n")
    (tmp_path / "plateau_lstm.json").write_text(json.dumps(_state("plateau", 20000)))
    states = plateau_states(tmp_path, refs)
    assert states["lstm"]["runs"]["seeds"] == [1] and states["lstm"]["runs"]["test_bleu"]["mean"] < 100
    pairs = pair_rows(tmp_path, [("encoder_free_inxl", "lstm_plateau")], [1, 2], refs["test"], 20, 1, 0.05, PLATEAU_FAMILY)
    assert pairs["encoder_free_inxl > lstm_plateau"]["family"] == PLATEAU_FAMILY
    text = "\n".join(_plateau_section({"plateaus": states, "plateau_pairs": pairs}))
    assert "plateau at step 20,000" in text and "encoder_free_inxl > lstm_plateau" in text
    assert "a family of its own" in text
