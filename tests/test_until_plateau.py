"""``onmt-xl pipeline`` trained to the study's plateau rule (issue 77, :mod:`onmt_xl.experiments.until_plateau`): what
stops the rounds (plateau, cap, time budget), which checkpoints are averaged and kept, a rerun that goes on instead of
training again, and a refused command that changes nothing on disk.

The rules are checked on a stand-in runner that "trains" by writing checkpoint files and scores by a given BLEU
curve; the last tests train and translate for real, a few steps on the tiny raw corpus of ``test_raw_text.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import pytest
import yaml

from onmt_xl.experiments.curve import checkpoints
from onmt_xl.experiments.until_plateau import PlateauTraining, Schedule, duration
from tests.conftest import run_env


class StandInRunner:
    """What :class:`PlateauTraining` asks of :class:`onmt_xl.experiments.runner.Runner`; training a job to N steps
    writes its checkpoints every ``every`` steps, its ``config.yaml`` and a ``done.json`` measuring
    ``seconds_per_step``."""

    def __init__(self, workdir: Path, every: int, seconds_per_step: float = 1.0):
        self.workdir, self.every, self.seconds_per_step = workdir, every, seconds_per_step
        self.parallel, self.beam_size, self.overrides, self.jobs = 1, 5, {}, []
        self.started = time.perf_counter()
        self.trained: List[tuple] = []  # (system, from step, to step)
        self.finals: List[tuple] = []  # (system, final step, average)
        (workdir / "data").mkdir(parents=True, exist_ok=True)
        (workdir / "data" / "test.ref").write_text("a\n", encoding="utf-8")

    def path(self, *parts: str) -> Path:
        return self.workdir.joinpath(*parts)

    def run(self, argv=()):
        self._run_jobs()
        return {}

    def _record_run(self, **kw) -> None:
        pass

    def _run_jobs(self):
        for job in self.jobs:
            jd = self.path("jobs", job.name)
            jd.mkdir(parents=True, exist_ok=True)
            start = max(checkpoints(jd), default=0)
            if job.final_step:
                self.finals.append((job.name, job.final_step, job.average))
                assert job.train_steps == start  # translating trains nothing more
                continue
            if job.train_steps <= start:
                continue
            self.trained.append((job.name, start, job.train_steps))
            (jd / "config.yaml").write_text(yaml.safe_dump({"train_steps": job.train_steps}), encoding="utf-8")
            for step in range(start + self.every, job.train_steps + 1, self.every):
                (jd / f"model_step_{step}.pt").write_bytes(b"")
            (jd / "done.json").write_text(json.dumps({
                "train_seconds": self.seconds_per_step * (job.train_steps - start),
                "resumed_from": f"model_step_{start}.pt" if start else None}), encoding="utf-8")
        return None


class Scripted(PlateauTraining):
    """Scores each checkpoint by ``bleu(system, step)``, taking ``translate_seconds`` per checkpoint; the average of
    the last N checkpoints up to a step by ``averaged(system, step, N)`` (default: the checkpoint's BLEU, a tie)."""

    def __init__(self, runner, systems, schedule, budget_s=None, bleu: Callable[[str, int], float] = None,
                 translate_seconds: float = 0.0, averaged: Callable[[str, int, int], float] = None):
        super().__init__(runner, systems, schedule, budget_s)
        self.bleu, self.translate_seconds = bleu, translate_seconds
        self.averaged_bleu = averaged or (lambda system, step, n: bleu(system, step))
        self.averages_scored: List[tuple] = []

    def averaged_valid_bleu(self, system: str, final: int, average: int) -> float:
        self.averages_scored.append((system, final, average))
        return self.averaged_bleu(system, final, average)

    def score(self, system: str) -> None:
        jd = self.runner.path("jobs", system)
        path = jd / "curve.jsonl"
        done = {json.loads(l)["step"] for l in path.read_text().splitlines()} if path.exists() else set()
        with open(path, "a", encoding="utf-8") as f:
            for step in sorted(checkpoints(jd)):
                if step % self.schedule.every == 0 and step not in done:
                    f.write(json.dumps({"step": step, "bleu": self.bleu(system, step), "valid_ppl": 10.0,
                                        "translate_seconds": self.translate_seconds}) + "\n")


SYSTEMS = ["baseline", "combination"]


def kept(runner, system: str) -> List[int]:
    return sorted(checkpoints(runner.path("jobs", system)))


def test_stops_at_the_plateau_and_averages_up_to_it(tmp_path, capsys):
    runner = StandInRunner(tmp_path, every=2)
    # BLEU climbs to 6 at step 6, then stays: the rule holds at step 6 once the curves run 4 steps past it
    sch = Schedule(every=2, round=4, window=4, cap=40, average=5)
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: float(min(step, 6))).run()
    out = capsys.readouterr().out
    assert "training stopped by the plateau: the plateau rule holds at step 6 for every system" in out
    assert [t for t in runner.trained if t[0] == "baseline"] == [("baseline", 0, 4), ("baseline", 4, 8),
                                                                 ("baseline", 8, 12)]
    # the average of the checkpoints at 2, 4 and 6 (fewer than 5 exist up to step 6)
    assert sorted(runner.finals) == [("baseline", 6, 3), ("combination", 6, 3)]
    state = json.loads((tmp_path / "plateau.json").read_text())
    assert (state["status"], state["step"], state["final_step"], state["average"]) == ("plateau", 6, 6, 3)
    assert (tmp_path / "learning_curves.png").stat().st_size > 0
    assert f"learning curves (validation BLEU and perplexity per checkpoint): {tmp_path / 'learning_curves.png'}" in out


def test_stops_at_the_cap_and_keeps_only_the_checkpoints_an_average_can_need(tmp_path, capsys):
    runner = StandInRunner(tmp_path, every=2)
    sch = Schedule(every=2, round=6, window=4, cap=20, average=3)
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: float(step)).run()  # rising: no plateau
    out = capsys.readouterr().out
    # still rising by 2 BLEU a checkpoint: averaging the earlier ones in would give a worse model than the last
    assert "training stopped by the cap: the step cap of 20 (--max-steps) was reached without a plateau; " \
           "translating with the checkpoint of step 20" in out
    assert max(t[2] for t in runner.trained) == 20  # rounds 6, 12, 18, then the cap
    assert sorted(runner.finals) == [("baseline", 20, 1), ("combination", 20, 1)]
    # every earlier step is beaten by a later one: none can be chosen, their checkpoints are gone
    assert kept(runner, "baseline") == [16, 18, 20]
    assert json.loads((tmp_path / "plateau.json").read_text())["status"] == "cap"


@pytest.mark.parametrize("curve,average", [
    ({16: 9.8, 18: 9.9, 20: 10.0}, 3),  # within 0.5 of step 20's BLEU: 16, 18, 20 averaged
    ({16: 9.4, 18: 9.6, 20: 10.0}, 2),  # 16 is 0.6 below: 18 and 20 only
    ({16: 9.9, 18: 8.0, 20: 10.0}, 1)])  # the one before the last is far below: the last alone
def test_before_the_plateau_only_checkpoints_close_to_the_last_are_averaged(tmp_path, curve, average):
    runner = StandInRunner(tmp_path, every=2)
    sch = Schedule(every=2, round=20, window=100, cap=20, average=3)
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: curve.get(step, step / 10)).run()
    assert sorted(runner.finals) == [("baseline", 20, average), ("combination", 20, average)]


def test_the_systems_share_one_average(tmp_path):
    runner = StandInRunner(tmp_path, every=2)
    sch = Schedule(every=2, round=20, window=100, cap=20, average=3)
    curves = {"baseline": {16: 9.8, 18: 9.9, 20: 10.0}, "combination": {16: 5.0, 18: 9.9, 20: 10.0}}
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: curves[s].get(step, step / 10)).run()
    assert sorted(runner.finals) == [("baseline", 20, 2), ("combination", 20, 2)]


def test_each_system_is_translated_with_its_average_or_its_checkpoint_whichever_is_better_on_validation(
        tmp_path, capsys):
    runner = StandInRunner(tmp_path, every=2)
    sch = Schedule(every=2, round=4, window=4, cap=40, average=5)
    # flat from the start: the plateau at step 2 ... 6; the combination's average is worse than its checkpoint
    averaged = {"baseline": 6.0, "combination": 5.2}
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: float(min(step, 6)),
             averaged=lambda s, step, n: averaged[s]).run()
    out = capsys.readouterr().out
    assert sorted(runner.finals) == [("baseline", 6, 3), ("combination", 6, 1)]
    assert "baseline: validation BLEU 6.00 with the average, 6.00 with the checkpoint of step 6 alone: " \
           "translating with the average" in out  # a tie keeps the average
    assert "combination: validation BLEU 5.20 with the average, 6.00 with the checkpoint of step 6 alone: " \
           "translating with the checkpoint" in out
    state = json.loads((tmp_path / "plateau.json").read_text())
    assert state["averages"] == {"baseline": 3, "combination": 1} and state["average"] == 3
    assert state["validation"]["combination"] == {"average": 1, "bleu_averaged": 5.2, "bleu_checkpoint": 6.0}
    from onmt_xl.experiments.until_plateau import translated_with

    assert translated_with(tmp_path).startswith(
        "translated with, each chosen on the validation pairs: baseline the average of the last 3 checkpoints up to "
        "step 6; combination the checkpoint of step 6 (training stopped by the plateau; learning_curves.png")
    # a rerun that chooses otherwise translates again only the system whose model changed
    for s in SYSTEMS:
        (tmp_path / "jobs" / s / "hyp.test").write_text("x\n")
    runner.finals.clear()
    averaged["combination"] = 6.5
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: float(min(step, 6)),
             averaged=lambda s, step, n: averaged[s]).run()
    assert sorted(runner.finals) == [("baseline", 6, 3), ("combination", 6, 3)]
    assert (tmp_path / "jobs" / "baseline" / "hyp.test").exists()
    assert not (tmp_path / "jobs" / "combination" / "hyp.test").exists()


def test_one_checkpoint_to_translate_scores_no_average(tmp_path):
    runner = StandInRunner(tmp_path, every=2)
    sch = Schedule(every=2, round=6, window=4, cap=20, average=3)
    training = Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: float(step))  # rising: the last checkpoint alone
    training.run()
    assert training.averages_scored == [] and sorted(runner.finals) == [("baseline", 20, 1), ("combination", 20, 1)]


def test_validation_translations_short_of_a_line_are_never_scored(tmp_path):
    runner = StandInRunner(tmp_path, every=2)
    training = PlateauTraining(runner, SYSTEMS, Schedule(every=2, round=6, window=4, cap=20, average=3))
    (tmp_path / "data" / "valid.tgt").write_text("the cat sat on the mat\nthe dog ran in the park\n", encoding="utf-8")
    hyp = tmp_path / "hyp.valid"
    hyp.write_text("the cat sat on the mat\nthe dog ran in the park\n", encoding="utf-8")
    assert training.validation_scores(hyp)["bleu"] == pytest.approx(100.0)
    hyp.write_text("the dog ran in the park\n", encoding="utf-8")  # a line dropped: the later ones shift
    with pytest.raises(ValueError, match="hyp.valid: 1 lines but 2 validation targets"):
        training.validation_scores(hyp)


def test_a_step_that_can_still_be_chosen_keeps_its_checkpoints(tmp_path):
    runner = StandInRunner(tmp_path, every=2)
    sch = Schedule(every=2, round=8, window=100, cap=8, average=2)
    # best at step 4; later points no more than 0.5 above it: 4 may still be the plateau step
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: {2: 1.0, 4: 5.0, 6: 5.2, 8: 4.0}[step]).run()
    assert kept(runner, "combination") == [2, 4, 6, 8]  # 2: averaged with 4


def test_stops_when_another_round_would_exceed_the_time_budget(tmp_path, capsys):
    runner = StandInRunner(tmp_path, every=2, seconds_per_step=10.0)
    sch = Schedule(every=2, round=4, window=4, cap=40, average=5)
    # the first round (4 steps) always runs; the next one: 4 steps at 10 s for each of the 2 systems one after the
    # other, and 2 checkpoints each at 3 s: 92 s
    Scripted(runner, SYSTEMS, sch, budget_s=60.0, bleu=lambda s, step: float(step), translate_seconds=3.0).run()
    out = capsys.readouterr().out
    assert runner.trained == [("baseline", 0, 4), ("combination", 0, 4)]
    assert sorted(runner.finals) == [("baseline", 4, 1), ("combination", 4, 1)]  # 2 is 2 BLEU below 4
    assert "training stopped by the budget: another round (about 1.5 min) would exceed the time budget of 1 min" in out
    assert json.loads((tmp_path / "plateau.json").read_text())["status"] == "budget"
    # the same command with a larger budget goes on from step 4
    capsys.readouterr()
    runner.trained.clear()
    Scripted(runner, SYSTEMS, sch, budget_s=3600.0, bleu=lambda s, step: float(min(step, 6))).run()
    assert runner.trained[0][1:] == (4, 8)


def test_a_rerun_after_the_plateau_trains_nothing(tmp_path):
    runner = StandInRunner(tmp_path, every=2)
    sch = Schedule(every=2, round=4, window=4, cap=40, average=5)
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: float(min(step, 6))).run()
    runner.trained.clear()
    runner.finals.clear()
    Scripted(runner, SYSTEMS, sch, bleu=lambda s, step: float(min(step, 6))).run()
    assert runner.trained == [] and sorted(runner.finals) == [("baseline", 6, 3), ("combination", 6, 3)]


def test_time_budget_durations():
    import argparse

    assert [duration(t) for t in ("90m", "2h", "45s", "1.5h", "30")] == [5400, 7200, 45, 5400, 1800]
    for bad in ("", "0m", "2d", "-5m", "soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="a positive duration"):
            duration(bad)


# --- for real: a few steps on the tiny raw corpus --------------------------------------------------------------


def tree(root: Path) -> Dict[str, tuple]:
    """Every file under ``root`` with its size and modification time (the lock file apart: its pid)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def real_run(files, wd: Path, cap: int):
    from onmt_xl.experiments.runner import Runner
    from onmt_xl.experiments.stages import Corpus

    corpus = Corpus(str(files["train_src"]), str(files["train_tgt"]), str(files["test_src"]), str(files["test_tgt"]),
                    valid_src=str(files["valid_src"]), valid_tgt=str(files["valid_tgt"]))
    runner = Runner(corpus, str(wd), [], preset="demo", train_steps=cap, beam_size=1, gpu=False, parallel=1,
                    preorder_iterations=1, tokenize="auto")
    return PlateauTraining(runner, ["combination"], Schedule(every=2, round=4, window=100, cap=cap, average=3)).run()


def chosen_model(wd: Path, step: int) -> str:
    """The combination's final model as ``plateau.json`` records its choice, checked against its validation scores."""
    state = json.loads((wd / "plateau.json").read_text())
    v = state["validation"]["combination"]
    assert state["final_step"] == step and v["average"] == (3 if v["bleu_averaged"] >= v["bleu_checkpoint"] else 1)
    return f"average3_step_{step}.pt" if v["average"] == 3 else f"model_step_{step}.pt"


def test_for_real_averaged_model_served_rerun_resumes_and_a_refusal_writes_nothing(tmp_path, monkeypatch, capsys):
    from tests.test_raw_text import write_raw_corpus

    monkeypatch.setenv("PYTHONPATH", run_env()["PYTHONPATH"])
    files = write_raw_corpus(tmp_path / "corpus")
    wd = tmp_path / "run"
    res = real_run(files, wd, cap=6)
    jd = wd / "jobs" / "combination"
    out = capsys.readouterr().out
    assert "training stopped by the cap" in out
    # the average of the checkpoints at steps 2, 4, 6 (onmt_average_models) translates the validation source; it, or
    # the checkpoint of step 6 where that scores higher there, is translated and served
    assert (jd / "average3_step_6.pt").exists() and "onmt_average_models" in (jd / "commands.sh").read_text()
    assert (jd / "hyp.valid.average3_step6").read_text().count("\n") == 40
    chosen = chosen_model(wd, 6)
    assert yaml.safe_load((jd / "translate.yaml").read_text())["model"] == str(jd / chosen)
    assert json.loads((jd / "serve.json").read_text())["models"][0]["model"] == chosen
    assert res["jobs"]["combination"]["variants"]["test"]["bleu_signature"].startswith("nrefs:1|case:mixed")
    rows = [json.loads(l) for l in (jd / "curve.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4, 6] and all("valid_ppl" in r for r in rows)
    assert (wd / "learning_curves.png").exists()
    # the same run again: nothing trained or translated
    log = (jd / "train.log").read_text()
    before = tree(wd / "jobs")
    real_run(files, wd, cap=6)
    assert (jd / "train.log").read_text() == log and tree(wd / "jobs") == before
    # a higher cap resumes exactly from step 6
    real_run(files, wd, cap=8)
    log = (jd / "train.log").read_text()
    assert "Loading checkpoint from" in log and "model_step_6.pt" in log.split("Loading checkpoint from")[-1][:400]
    # every round resumed exactly: from step 4 to 6 in the first run, from 6 to 8 now
    assert log.count("then restoring the checkpoint's RNG states") == log.count("Loading checkpoint from") == 2
    assert yaml.safe_load((jd / "translate.yaml").read_text())["model"] == str(jd / chosen_model(wd, 8))
    # another model in the same work directory is refused: one line, nothing on disk changed
    before = tree(wd)
    cmd = [sys.executable, "-m", "onmt_xl.experiments", "pipeline", "--workdir", wd, "--systems", "combination",
           "--train-src", files["train_src"], "--train-tgt", files["train_tgt"], "--valid-src", files["valid_src"],
           "--valid-tgt", files["valid_tgt"], "--test-src", files["test_src"], "--test-ref", files["test_tgt"],
           "--preset", "enja", "--preorder-iterations", "1", "--gpu", "no"]
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=run_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "differs from what job combination needs now in" in done.stderr
    assert "Traceback" not in done.stderr
    assert tree(wd) == before


def test_checkpoint_translation_options_on_tokenized_text(tmp_path):
    """--tokenize none: a stock system's checkpoints translate with no transform at all (onmt_translate refuses an
    empty list), an XL system's with xl_position alone."""
    from onmt_xl.experiments.plan import Job
    from onmt_xl.experiments.runner import Runner
    from onmt_xl.experiments.stages import Corpus

    runner = Runner(Corpus(*(str(tmp_path / n) for n in ("a", "b", "c", "d"))), str(tmp_path), [], preset="demo",
                    gpu=False)
    base = runner.translate_options(Job("baseline", "baseline", 1), tmp_path / "m.pt")
    assert "transforms" not in base and base["model"] == str(tmp_path / "m.pt")
    assert runner.translate_options(Job("combination", "combination", 1), tmp_path / "m.pt")["transforms"] == \
        ["xl_position"]


def test_eole_checkpoint_average(tmp_path):
    """Eole has no averaging tool: ours averages the float tensors of the checkpoints' safetensors (other tensors,
    the configuration, vocabulary and artifacts from the last checkpoint; no optimizer state)."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    from onmt_xl.experiments.eole_demo import average_eole_models

    dirs = []
    for k, value in enumerate((1.0, 2.0, 6.0)):
        d = tmp_path / "model" / f"step_{100 * (k + 1)}"
        d.mkdir(parents=True)
        save_file({"w": torch.full((2, 3), value, dtype=torch.float32), "n": torch.tensor([k])},
                  str(d / "model.00.safetensors"))
        for name in ("config.json", "vocab.json", "optimizer.pt", "preorderer.xlp"):
            (d / name).write_text(f"{name} {k}")
        dirs.append(d)
    out = average_eole_models(dirs, tmp_path / "model" / "average3_step_300")
    avg = load_file(str(out / "model.00.safetensors"))
    assert torch.equal(avg["w"], torch.full((2, 3), 3.0)) and avg["w"].dtype == torch.float32
    assert avg["n"].tolist() == [2]
    assert (out / "config.json").read_text() == "config.json 2" and (out / "preorderer.xlp").exists()
    assert not (out / "optimizer.pt").exists()


@pytest.mark.needs_eole
def test_eole_pipeline_translates_with_the_averaged_model(tmp_path, monkeypatch, capsys):
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    import argparse

    from onmt_xl.experiments.demo import summary
    from onmt_xl.experiments.eole_demo import run_eole_demo
    from onmt_xl.experiments.stages import Corpus
    from tests.test_raw_text import write_raw_corpus

    monkeypatch.setenv("PYTHONPATH", run_env()["PYTHONPATH"])
    files = {k: str(v) for k, v in write_raw_corpus(tmp_path / "corpus").items()}
    corpus = Corpus(files["train_src"], files["train_tgt"], files["test_src"], files["test_tgt"],
                    valid_src=files["valid_src"], valid_tgt=files["valid_tgt"])
    args = argparse.Namespace(systems=["combination"], workdir=str(tmp_path / "run"), train_steps=30, beam_size=1,
                              gpu="no", parallel=1, preorder_iterations=1, tokenize="auto", subword_size=None,
                              if_monotone="train", preset="demo", average=3, eole_every=10)
    assert run_eole_demo(corpus, args, summary) == 0
    out = capsys.readouterr().out
    model = tmp_path / "run" / "eole" / "models" / "combination"
    averaged = model / "average3_step_30"
    assert "combination: averaging the checkpoints of steps 10, 20, 30" in out
    assert (averaged / "model.00.safetensors").exists() and (averaged / "preorderer.xlp").exists()
    assert f"eole predict -model_path {averaged} -src new.txt" in out
    assert f"-model_path {averaged}" in (tmp_path / "run" / "eole" / "commands.sh").read_text()
    hyp = (tmp_path / "run" / "eole" / "hyp" / "combination.test").read_text(encoding="utf-8").splitlines()
    assert len(hyp) == 40 and not any("\uffed" in line for line in hyp)


def test_the_closing_commands_name_the_system_best_on_validation(tmp_path):
    from onmt_xl.experiments.usage import shown_system

    systems = ["baseline", "combination"]
    assert shown_system(systems, tmp_path) == "combination"  # no plateau.json: the last non-baseline system
    (tmp_path / "plateau.json").write_text(json.dumps({"final_step": 4}), encoding="utf-8")
    for system, bleu in (("baseline", 33.4), ("combination", 33.0)):
        (tmp_path / "jobs" / system).mkdir(parents=True)
        (tmp_path / "jobs" / system / "curve.jsonl").write_text(
            json.dumps({"step": 2, "bleu": 40.0 if system == "combination" else 1.0}) + "\n"
            + json.dumps({"step": 4, "bleu": bleu}) + "\n", encoding="utf-8")
    assert shown_system(systems, tmp_path) == "baseline"  # at the final step, not the best step
    (tmp_path / "plateau.json").write_text(json.dumps({"final_step": 6}), encoding="utf-8")
    assert shown_system(systems, tmp_path) == "combination"  # no score at the final step: the old rule
    # the final models' validation BLEU where an average was chosen
    (tmp_path / "plateau.json").write_text(json.dumps({"final_step": 4, "validation": {
        "baseline": {"average": 1, "bleu_checkpoint": 33.4}, "combination": {"average": 5, "bleu_averaged": 33.9,
                                                                              "bleu_checkpoint": 33.0}}}))
    assert shown_system(systems, tmp_path) == "combination"


def eole_run(files, wd: Path, cap: int, capsys) -> str:
    """``pipeline --framework eole`` to the plateau (:class:`onmt_xl.experiments.eole_demo.EoleRounds`) with a tiny
    schedule: a checkpoint every 2 steps, rounds of 4, at most ``cap`` steps; returns what it printed."""
    import argparse

    from onmt_xl.experiments.demo import summary
    from onmt_xl.experiments.eole_demo import run_eole_demo
    from onmt_xl.experiments.stages import Corpus

    corpus = Corpus(files["train_src"], files["train_tgt"], files["test_src"], files["test_tgt"],
                    valid_src=files["valid_src"], valid_tgt=files["valid_tgt"])
    args = argparse.Namespace(systems=["combination"], workdir=str(wd), train_steps=None, beam_size=1, gpu="no",
                              parallel=1, preorder_iterations=1, tokenize="auto", subword_size=None,
                              if_monotone="train", preset="demo", time_budget=3600.0,
                              schedule=Schedule(every=2, round=4, window=100, cap=cap, average=2))
    assert run_eole_demo(corpus, args, summary) == 0
    return capsys.readouterr().out


@pytest.mark.needs_eole
def test_eole_to_the_plateau_resumes_exactly_and_goes_on(tmp_path, monkeypatch, capsys):
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    from tests.test_raw_text import write_raw_corpus

    monkeypatch.setenv("PYTHONPATH", run_env()["PYTHONPATH"])
    files = {k: str(v) for k, v in write_raw_corpus(tmp_path / "corpus", (("train", 200), ("valid", 20),
                                                                          ("test", 20))).items()}
    wd = tmp_path / "run"
    root, model = wd / "eole", wd / "eole" / "models" / "combination"
    out = eole_run(files, wd, 4, capsys)
    assert "[plateau] training stopped by the cap" in out
    rows = [json.loads(line) for line in (model / "curve.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4] and all("valid_ppl" in r for r in rows)  # from Eole's train log
    assert (root / "learning_curves.png").stat().st_size > 0
    state = json.loads((root / "plateau.json").read_text())
    assert (state["status"], state["final_step"]) == ("cap", 4)
    n = state["averages"]["combination"]
    used = "the checkpoint of step 4" if n == 1 else "the average of the last 2 checkpoints up to step 4"
    over = "" if state["average"] == 1 else "chosen on the validation pairs over " + (
        "the average of the last 2 checkpoints; " if n == 1 else "that checkpoint alone; ")
    assert f"translated with {used} ({over}training stopped by the cap; learning_curves.png" in out
    if state["average"] == 2:  # the average and the checkpoint were both scored on the validation pairs
        v = state["validation"]["combination"]
        assert n == (2 if v["bleu_averaged"] >= v["bleu_checkpoint"] else 1)
        assert (model / "hyp.valid.average2_step4").read_text(encoding="utf-8").count("\n") == 20
    shown = out.split("eole predict -model_path ")[-1].split(" -src")[0]
    assert Path(shown) == (model / "step_4" if n == 1 else model / "average2_step_4")
    assert Path(shown).is_dir() and json.loads((model / "done.json").read_text())["translated_with"] == shown
    # a higher cap: the same command goes on from step 4, resumed exactly
    log = root / "logs" / "train_combination.log"
    out = eole_run(files, wd, 6, capsys)
    text = log.read_text()
    assert text.count("Start training loop") == 2
    assert f"Loading metadata from {model / 'step_4'}" in text
    assert "xl_exact_resume: skipping the batches of steps 1-4, then restoring the checkpoint's RNG states" in text
    assert [json.loads(line)["step"] for line in (model / "curve.jsonl").read_text().splitlines()] == [2, 4, 6]
    assert json.loads((root / "plateau.json").read_text())["final_step"] == 6
    assert "translated with the checkpoint of step 6 " in out or "checkpoints up to step 6 " in out
    # the same command again trains and translates nothing
    hyp = (root / "hyp" / "combination.test").stat().st_mtime_ns
    eole_run(files, wd, 6, capsys)
    assert log.read_text() == text and (root / "hyp" / "combination.test").stat().st_mtime_ns == hyp
    # another model in the same work directory is refused, as OpenNMT-py's: one line, nothing on disk changed
    before = tree(wd)
    cmd = [sys.executable, "-m", "onmt_xl.experiments", "pipeline", "--framework", "eole", "--workdir", wd,
           "--systems", "combination", "--train-src", files["train_src"], "--train-tgt", files["train_tgt"],
           "--valid-src", files["valid_src"], "--valid-tgt", files["valid_tgt"], "--test-src", files["test_src"],
           "--test-ref", files["test_tgt"], "--preset", "enja", "--preorder-iterations", "1", "--gpu", "no"]
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=run_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1
    assert "combination.yaml: differs from what combination needs now in" in done.stderr
    assert "Traceback" not in done.stderr
    assert tree(wd) == before


def test_eole_pipeline_takes_the_time_budget(tmp_path):
    """``--time-budget`` with ``--framework eole``: trained to the plateau like OpenNMT-py (no refusal)."""
    import argparse

    from onmt_xl.experiments.demo import _choose_preset
    from tests.test_raw_text import write_raw_corpus

    files = write_raw_corpus(tmp_path, sizes=(("train", 20),))
    args = argparse.Namespace(gpu="no", train_src=str(files["train_src"]), preset="demo", train_steps=None,
                              framework="eole", time_budget=600.0, max_steps=6, average=None)
    _choose_preset(args)
    assert args.schedule is not None and args.schedule.cap == 6 and args.train_steps is None


def test_eole_refuses_another_model_in_the_same_work_directory(tmp_path, capsys):
    """As OpenNMT-py's jobs (:meth:`onmt_xl.experiments.jobs.JobStages.config_problem`): a trained system whose
    configuration is another model than ``eole/SYSTEM.yaml`` is refused, naming the file, what differs and what to do;
    what only concerns the run (steps, validation and checkpoint steps, the resumption, the device, the same files
    under another path) goes on. No training: the recorded configuration and a step directory are written here."""
    from onmt_xl.core.errors import XLUsageError
    from onmt_xl.experiments.eole_demo import EoleDemo
    from onmt_xl.experiments.runner import Runner
    from onmt_xl.experiments.stages import Corpus

    def demo(preset: str = "demo", **overrides) -> EoleDemo:
        runner = Runner(Corpus(*(str(tmp_path / n) for n in ("a", "b", "c", "d"))), str(tmp_path / "run"), [],
                        preset=preset, gpu=False)
        runner.overrides.update(overrides)
        return EoleDemo(runner, ["combination"])

    d = demo()
    d.root.mkdir(parents=True)
    trained = d.config("combination")
    trained["training"].update(train_steps=4, xl_exact_resume=True,
                               train_from=str(d.model_dir("combination") / "step_2"))
    # the same files, spelled through a link to the work directory
    (tmp_path / "link").symlink_to(tmp_path / "run")
    text = yaml.safe_dump(trained, sort_keys=False).replace(str(tmp_path / "run"), str(tmp_path / "link"))
    d.config_path("combination").write_text(text, encoding="utf-8")
    changed = demo(hidden_size=64)
    assert changed.config_problem("combination") is None  # written, nothing trained yet: nothing to refuse
    (d.model_dir("combination") / "step_4").mkdir(parents=True)
    for run in (demo(), demo(train_steps=400, valid_steps=10, save_checkpoint_steps=10, keep_checkpoint=-1),
                demo(gpu_ranks=[0], world_size=1)):
        assert run.config_problem("combination") is None
        run.check_configs()
    # the work directory moved here from elsewhere: the same run
    d.config_path("combination").write_text(text.replace(str(tmp_path / "link"), "/old/machine/run"))
    assert demo().config_problem("combination") is None
    assert "needs now in model.hidden_size (" in str(changed.config_problem("combination"))
    d.config_path("combination").write_text(text, encoding="utf-8")
    problem = changed.config_problem("combination")
    assert isinstance(problem, XLUsageError) and str(problem).startswith(str(d.config_path("combination")) + ": ")
    assert "differs from what combination needs now in model.hidden_size (" in str(problem)
    assert f"use another --workdir, or delete {d.model_dir('combination')} to retrain it" in str(problem)
    with pytest.raises(XLUsageError, match=r"needs now in model\.layers \(2 there, 3 now\)"):
        demo(preset="enja").check_configs()
    with pytest.raises(XLUsageError, match="needs now in seed"):
        demo(seed=2).train("combination")  # trains nothing
    # fewer steps than a finished system was trained to: that model, said in one line (nothing trained)
    (d.model_dir("combination") / "done.json").write_text(json.dumps({"train_steps": 4}))
    assert demo(train_steps=2).train("combination") == {"train_steps": 4}
    said = capsys.readouterr().out
    assert "combination: trained to 4 steps already, more than the 2 asked: that model goes on" in said
