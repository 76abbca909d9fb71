"""``onmt-xl pipeline`` trained to the study's plateau rule on the validation pairs, within a time budget, then
translated with the average of the last checkpoints.

Without ``--train-steps``, every system of ``--systems`` trains in rounds of :attr:`Schedule.round` steps, each
resuming the last one's checkpoint exactly (``-xl_exact_resume``: the same model as one longer run), with a
checkpoint and a validation every :attr:`Schedule.every` steps. After each round every new checkpoint translates the
validation source as the test set is translated (raw text in, detokenized text out) and is scored by sacrebleu
against the validation targets; its validation perplexity is read from ``onmt_train``'s log
(``jobs/SYSTEM/curve.jsonl``). The rounds stop at the first of

- ``plateau``: the study's rule (:func:`onmt_xl.experiments.curve.plateau_step`) holds at a step S for every system
  together;
- ``cap``: the systems reached ``--max-steps``;
- ``budget``: another round would end past ``--time-budget``, by the seconds per step its training measured and the
  seconds its validation translations took (the first round always runs: nothing is measured before it),

and one line says which. Every system is then translated with the average of its last ``--average`` checkpoints up
to S, or up to the last step every system reached (cap, budget; then only the last checkpoints within the rule's
tolerance of the last one's validation BLEU, so that a still rising curve is not averaged), by ``onmt_average_models``,
where that average translates the validation source at least as well (sacrebleu's BLEU) as the checkpoint at S
alone; otherwise with that checkpoint (averaging in the early checkpoints of a curve flat from its start gives a
worse model). ``translate.yaml`` and ``serve.json`` name the model chosen. ``learning_curves.png`` plots the
validation points of every system. ``plateau.json`` records where the rounds stand; a rerun goes on from there (after a budget stop it trains
on, after a plateau it only reports). As the rounds go, a checkpoint no step the rule could still choose needs is
deleted.

The framework-specific parts (train a round, translate a checkpoint, list and delete checkpoints, average, translate
the test set) are a ``rounds`` object: :class:`OpenNMTRounds` (the above, through the runner's jobs) or, for
``--framework eole``, :class:`onmt_xl.experiments.eole_demo.EoleRounds` (``eole train`` with
``training.xl_exact_resume``, ``eole predict``, the step directories averaged; ``plateau.json``,
``learning_curves.png`` and the curves under ``WORKDIR/eole/``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set

import yaml

from onmt_xl.experiments.configs import TRAINING
from onmt_xl.experiments.curve import checkpoints, plateau_step, plot_curves, read_curve, validation_log
from onmt_xl.experiments.jobs import whole_checkpoints
from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.plateau import next_round, round_begun, trained_steps
from onmt_xl.experiments.stock import read_lines, say, stock
from onmt_xl.core.progress import ticking

PLATEAU, CAP, BUDGET = "plateau", "cap", "budget"
CURVE_PLOT = "learning_curves.png"


@dataclass(frozen=True)
class Schedule:
    """How a preset trains to its plateau: a checkpoint, a validation and a scored point every ``every`` steps;
    ``round`` steps between two readings of the rule; the rule's ``window`` and ``tolerance`` (BLEU); at most
    ``cap`` steps; the last ``average`` checkpoints averaged."""

    every: int
    round: int
    window: int
    cap: int
    average: int = 5
    tolerance: float = 0.5


#: per preset (:data:`onmt_xl.experiments.configs.PRESETS`); ``enja``: the study's (checkpoints every 500 steps, the
#: rule's 2,000-step window and 0.5 BLEU, the average of the last 5)
SCHEDULES: Dict[str, Schedule] = {
    "demo": Schedule(every=100, round=400, window=400, cap=4000),
    "enja": Schedule(every=500, round=2000, window=2000, cap=30000),
    "base": Schedule(every=5000, round=20000, window=20000, cap=200000),
    "big": Schedule(every=5000, round=20000, window=20000, cap=300000),
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*$")


def duration(text: str) -> float:
    """``--time-budget``'s seconds: ``90m``, ``2h``, ``45s`` or ``1.5h``; a bare number is minutes."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive duration such as 90m, 2h or 45s")
    return float(m.group(1)) * {"s": 1, "h": 3600}.get(m.group(2) or "m", 60)


def schedule_for(preset: str, cap: Optional[int] = None, average: Optional[int] = None) -> Schedule:
    """The preset's :class:`Schedule`, with ``--max-steps`` and ``--average`` where given."""
    sch = SCHEDULES[preset]
    return replace(sch, cap=cap or sch.cap, average=average or sch.average)


class OpenNMTRounds:
    """OpenNMT-py's side of :class:`PlateauTraining`: the runner's jobs (``jobs/SYSTEM/``: ``model_step_N.pt``,
    ``config.yaml``, ``done.json``, ``train.log``), trained by ``onmt_train`` with ``-xl_exact_resume`` and scored by
    ``onmt_translate``; ``plateau.json`` and the plot in the work directory. :class:`onmt_xl.experiments.eole_demo.
    EoleRounds` is Eole's."""

    def __init__(self, runner):
        self.runner, self.root = runner, Path(runner.workdir)
        #: the runner's jobs by name, as the command made them (system, seed, ``xl_train``): every round's job of a
        #: run is its own, with the round's steps
        self.templates: Dict[str, Job] = {j.name: j for j in runner.jobs}

    def configure(self, schedule: Schedule) -> None:
        self.runner.overrides.update(save_checkpoint_steps=schedule.every, valid_steps=schedule.every,
                                     keep_checkpoint=-1)

    def job(self, system: str, steps: int, final: Optional[int] = None, average: int = 1) -> Job:
        """The job of run ``system`` (a runner's job of that name, else the system itself with the study's seed)
        trained to ``steps``, translating the test set with its final model where ``final`` is given."""
        template = self.templates.get(system) or Job(system, system, TRAINING["seed"])
        return replace(template, train_steps=steps, final_step=final, average=average,
                       variants=["test"] if final else [], experiments=["pipeline"])

    def job_dir(self, system: str) -> Path:
        """Where ``system``'s ``curve.jsonl`` and validation translations go."""
        return self.runner.path("jobs", system)

    def checkpoints(self, system: str) -> Dict[int, Path]:
        return checkpoints(self.job_dir(system))

    def whole_checkpoints(self, system: str) -> Dict[int, Path]:
        """The checkpoints, the last ones cut short by a stop set aside."""
        return {int(c.stem.rsplit("_", 1)[1]): c for c in whole_checkpoints(self.job_dir(system), system)}

    def remove(self, checkpoint: Path) -> None:
        checkpoint.unlink()

    def trained(self, system: str) -> int:
        return trained_steps(self.runner, self.job(system, 0))

    def begun(self, system: str) -> int:
        return round_begun(self.runner, self.job(system, 0))

    def last_attempt(self, system: str) -> Optional[tuple]:
        """``(seconds, steps)`` of ``system``'s last training attempt (``done.json``), None before any."""
        done = self.job_dir(system) / "done.json"
        if not done.exists():
            return None
        info = json.loads(done.read_text(encoding="utf-8"))
        start = int(re.sub(r"\D", "", info.get("resumed_from") or "") or 0)
        return info.get("train_seconds"), self.begun(system) - start

    def start(self, steps: Dict[str, int], argv: Sequence[str]) -> bool:
        """The data stages and the first round (or the rest of an interrupted one); False when the monotone check
        stopped the run."""
        self.runner.jobs = [self.job(s, n) for s, n in steps.items()]
        return self.runner.run(argv) is not None

    def train(self, steps: Dict[str, int]) -> bool:
        """Train each system on to ``steps[system]``; False when the runner stopped (not expected: its own budget is
        off here)."""
        self.runner.jobs = [self.job(s, n) for s, n in steps.items()]
        return not self.runner._run_jobs()

    def translate_valid(self, system: str, step: int, checkpoint: Path, out: Path) -> float:
        """Translate the validation source with ``checkpoint`` into ``out`` as the test set is; returns seconds."""
        r, jd = self.runner, self.job_dir(system)
        job = self.job(system, 0)
        cfg = jd / "translate_curve.yaml"
        cfg.write_text(yaml.safe_dump(r.translate_options(job, checkpoint), sort_keys=False), encoding="utf-8")
        return r._run([stock("onmt_translate"), "-config", cfg, "-src", r.path("data", "valid.src"), "-output", out,
                       "-seed", job.seed], jd / "translate_curve.log", jd / "commands.sh")

    def validation(self, system: str, every: int) -> Dict[int, Dict[str, float]]:
        """``{step: {"valid_ppl", "valid_acc"}}`` from ``onmt_train``'s log."""
        log = self.job_dir(system) / "train.log"
        return validation_log(log.read_text(encoding="utf-8"), every) if log.exists() else {}

    def averaged_model(self, system: str, final: int, average: int, steps: int) -> Path:
        """The average of ``system``'s last ``average`` checkpoints up to ``final`` (``averageN_step_S.pt``, made
        once by ``onmt_average_models``)."""
        return self.runner.final_model(self.job(system, steps, final, average))

    def translate_test(self, final: int, averages: Dict[str, int], steps: Dict[str, int]) -> None:
        """Translate the test set with each system's average of its last ``averages[system]`` checkpoints up to
        ``final`` (its checkpoint at ``final`` for 1)."""
        self.runner.jobs = [self.job(s, steps[s], final, averages[s]) for s in steps]
        self.runner._run_jobs()

    def forget_test(self, system: str) -> None:
        self.job_dir(system).joinpath("hyp.test").unlink(missing_ok=True)

    def record(self, **kw: Any) -> None:
        self.runner._record_run(**kw)

    def results(self) -> Dict[str, Any]:
        from onmt_xl.experiments.scoring import collect

        return collect(self.runner.workdir, self.runner.jobs)


class PlateauTraining:
    """The module docstring's rounds for ``systems`` through ``runner`` (:class:`onmt_xl.experiments.runner.Runner`);
    ``budget_s``: ``--time-budget`` in seconds, counted from the runner's start; ``rounds``: the framework's side
    (:class:`OpenNMTRounds` by default, :class:`onmt_xl.experiments.eole_demo.EoleRounds` for Eole)."""

    def __init__(self, runner, systems: Sequence[str], schedule: Schedule, budget_s: Optional[float] = None,
                 rounds=None):
        self.runner, self.systems, self.schedule, self.budget_s = runner, list(systems), schedule, budget_s
        self.rounds = rounds if rounds is not None else OpenNMTRounds(runner)
        self.rounds.configure(schedule)
        self.state_path = self.rounds.root / "plateau.json"

    # -- where the systems stand -----------------------------------------------------------------------------
    def steps_now(self, system: str) -> int:
        """The steps ``system`` has trained, or the end of the round it began (a round cut short is finished)."""
        return max(self.rounds.trained(system), self.rounds.begun(system))

    def reached(self) -> int:
        return min(self.rounds.trained(s) for s in self.systems)

    def curves(self) -> Dict[str, List[Dict[str, Any]]]:
        return {s: read_curve(self.rounds.job_dir(s)) for s in self.systems}

    def read_state(self) -> Dict[str, Any]:
        return json.loads(self.state_path.read_text(encoding="utf-8")) if self.state_path.exists() else {}

    def save_state(self, **kw: Any) -> None:
        state = self.read_state()
        state.update(kw, schedule=asdict(self.schedule), reached={s: self.rounds.trained(s) for s in self.systems})
        self.state_path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")

    # -- scoring ---------------------------------------------------------------------------------------------
    def score(self, system: str) -> None:
        """Translate the validation source with each whole checkpoint of ``system`` at a multiple of
        :attr:`Schedule.every` that ``curve.jsonl`` lacks; append its BLEU, chrF and validation perplexity."""
        jd = self.rounds.job_dir(system)
        if not jd.is_dir():
            return
        done = {row["step"] for row in read_curve(jd)}
        todo = sorted(self.rounds.whole_checkpoints(system).items())
        todo = [(step, c) for step, c in todo if step % self.schedule.every == 0 and step not in done]
        if not todo:
            return
        valid = self.rounds.validation(system, self.schedule.every)
        for step, ckpt in todo:
            hyp = jd / f"hyp.valid.step{step}"
            seconds = self.translate_validation(system, step, ckpt, hyp, f"{system} step {step}")
            scores = self.validation_scores(hyp)
            row = dict(step=step, bleu=scores["bleu"], chrf=scores["chrf"], translate_seconds=seconds,
                       **valid.get(step, {}))
            with open(jd / "curve.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            ppl = f", perplexity {row['valid_ppl']:.2f}" if "valid_ppl" in row else ""
            say(f"  {system} step {step}: validation BLEU {row['bleu']:.2f}{ppl}")

    def translate_validation(self, system: str, step: int, model: Path, hyp: Path, what: str) -> float:
        """Translate the validation source with ``model`` into ``hyp`` as the test set is; returns seconds."""
        tmp = hyp.with_name(hyp.name + ".partial")
        with ticking(f"{what}: translating the validation source"):
            seconds = self.rounds.translate_valid(system, step, model, tmp)
        tmp.replace(hyp)
        return seconds

    def validation_scores(self, hyp: Path) -> Dict[str, Any]:
        """sacrebleu's scores of ``hyp`` against the validation targets
        (:func:`~onmt_xl.experiments.scoring.text_scores`)."""
        from onmt_xl.experiments.scoring import text_scores, tokenization_of

        return text_scores(read_lines(hyp), read_lines(self.runner.path("data", "valid.tgt")),
                           tokenization_of(self.runner.workdir), path=hyp, refs_name="validation targets")

    def score_all(self) -> None:
        with ThreadPoolExecutor(max_workers=max(1, self.runner.parallel)) as pool:
            list(pool.map(self.score, self.systems))

    # -- the budget ------------------------------------------------------------------------------------------
    def seconds_per_step(self) -> Optional[float]:
        """Wall seconds one step of every system takes: the slowest system's training seconds per step in its last
        attempt (``done.json``), times the waves of ``--parallel`` jobs training them all; None before any."""
        rates = []
        for s in self.systems:
            seconds, steps = self.rounds.last_attempt(s) or (None, 0)
            if seconds and steps > 0:
                rates.append(seconds / steps)
        if not rates:
            return None
        return max(rates) * math.ceil(len(self.systems) / max(1, self.runner.parallel))

    def round_estimate(self, reached: int, target: int) -> Optional[float]:
        """Seconds training from ``reached`` to ``target`` and scoring its checkpoints will take (None: unmeasured)."""
        per_step = self.seconds_per_step()
        if per_step is None:
            return None
        times = [row["translate_seconds"] for rows in self.curves().values() for row in rows
                 if row.get("translate_seconds")]
        per_ckpt = (sum(times) / len(times)) if times else 0.0
        waves = math.ceil(len(self.systems) / max(1, self.runner.parallel))
        return per_step * (target - reached) + per_ckpt * ((target - reached) // self.schedule.every) * waves

    # -- checkpoints kept ------------------------------------------------------------------------------------
    def needed(self, curves: Dict[str, List[Dict[str, Any]]]) -> Set[int]:
        """The steps whose checkpoints an average may still need: the last ``average`` up to each scored step the
        rule could still choose (none later beats it by more than the tolerance) and up to the last common one."""
        sch = self.schedule
        steps = sorted(set.intersection(*({r["step"] for r in rows} for rows in curves.values()))) if curves else []
        if not steps:
            return set()

        def open_(s: int) -> bool:
            for rows in curves.values():
                at = next(r["bleu"] for r in rows if r["step"] == s)
                if any(r["bleu"] - at > sch.tolerance for r in rows if r["step"] > s):
                    return False
            return True

        candidates = {s for s in steps if open_(s)} | {steps[-1]}
        return {t for s in candidates for t in range(s - (sch.average - 1) * sch.every, s + 1, sch.every)}

    def prune(self) -> None:
        """Delete each system's scored checkpoints that :meth:`needed` leaves out, never its last."""
        curves = self.curves()
        keep = self.needed(curves)
        for s in self.systems:
            scored = {r["step"] for r in curves[s]}
            ckpts = sorted(self.rounds.checkpoints(s).items())
            for step, path in ckpts[:-1]:
                if step in scored and step not in keep:
                    self.rounds.remove(path)

    # -- the run ---------------------------------------------------------------------------------------------
    def run(self, argv: Sequence[str] = ()) -> Optional[Dict[str, Any]]:
        """Train to the plateau, the cap or the budget, translate the averaged models; returns the framework's results
        (:func:`onmt_xl.experiments.scoring.collect`'s shape; None when the monotone check stopped the run)."""
        r, sch, rounds = self.runner, self.schedule, self.rounds
        # the first round (or the rest of an interrupted one): the runner's data stages and its refusal check first
        if not rounds.start({s: self.steps_now(s) or min(sch.round, sch.cap) for s in self.systems}, argv):
            return None
        rounds.record(status="training to the plateau")  # not finished: the runner's own word after its round
        while True:
            self.score_all()
            self.prune()
            curves = self.curves()
            found = plateau_step(curves, sch.tolerance, sch.window)
            reached = self.reached()
            if found is not None or reached >= sch.cap:
                reason = PLATEAU if found is not None else CAP
                break
            target = next_round(reached, 0, sch.round, sch.cap)
            need = self.round_estimate(reached, target)
            spent = time.perf_counter() - r.started
            if self.budget_s is not None and need is not None and spent + need > self.budget_s:
                reason = BUDGET
                break
            say(f"[plateau] no plateau yet at step {reached:,} (rule: no later validation BLEU more than "
                f"{sch.tolerance} above, {sch.window:,} steps past it); training to step {target:,}"
                + (f" (about {need / 60:.1f} min)" if need is not None else ""))
            self.save_state(status="training")
            if not rounds.train({s: max(target, self.steps_now(s)) for s in self.systems}):
                return None
        final = found if reason == PLATEAU else self.last_common(curves, min(reached, sch.cap))
        average = self.averaged(final, None if reason == PLATEAU else curves) if final else 0
        say(self.stop_line(reason, found, reached, final, average, need if reason == BUDGET else None))
        if final is None:
            self.save_state(status=reason, step=None)
            return None
        validation = self.choose_models(final, average, curves)
        averages = {s: v["average"] for s, v in validation.items()}
        self.forget_stale(final, averages)
        rounds.translate_test(final, averages, {s: self.steps_now(s) for s in self.systems})
        self.save_state(status=reason, step=found, final_step=final, average=average, averages=averages,
                        validation=validation)
        self.prune()
        plot = plot_curves(self.curves(), rounds.root / CURVE_PLOT, r.beam_size)
        if plot is not None:
            say(f"learning curves (validation BLEU and perplexity per checkpoint): {plot}")
        rounds.record(status=f"finished: stopped by the {reason}", final_step=final, average=average,
                      averages=averages)
        return rounds.results()

    # -- the final models ------------------------------------------------------------------------------------
    def averaged_valid_bleu(self, system: str, final: int, average: int) -> float:
        """Validation BLEU of ``system``'s average of its last ``average`` checkpoints up to ``final``, translated
        and scored as a checkpoint is (``hyp.valid.averageN_stepS`` in its job directory, translated once)."""
        hyp = self.rounds.job_dir(system) / f"hyp.valid.average{average}_step{final}"
        if not hyp.exists():
            model = self.rounds.averaged_model(system, final, average, self.steps_now(system))
            self.translate_validation(system, final, model, hyp, f"{system}, the average")
        return self.validation_scores(hyp)["bleu"]

    def choose_models(self, final: int, average: int,
                      curves: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Dict[str, Any]]:
        """Per system, the model its test set is translated with: the average of its last ``average`` checkpoints up
        to ``final`` where its validation BLEU is at least that of the checkpoint at ``final`` alone (a tie keeps the
        average), else that checkpoint. ``{system: {"average": N chosen (1: the checkpoint), "bleu_averaged",
        "bleu_checkpoint"}}``; one line per system says which."""
        if average <= 1:
            return {s: {"average": 1} for s in self.systems}
        at_final = {s: next((r["bleu"] for r in curves.get(s, []) if r["step"] == final), None) for s in self.systems}
        with ThreadPoolExecutor(max_workers=max(1, self.runner.parallel)) as pool:
            averaged = dict(zip(self.systems, pool.map(lambda s: self.averaged_valid_bleu(s, final, average),
                                                       self.systems)))
        chosen = {}
        for s in self.systems:
            checkpoint = at_final[s]
            keep = checkpoint is None or averaged[s] >= checkpoint
            chosen[s] = {"average": average if keep else 1, "bleu_averaged": averaged[s], "bleu_checkpoint": checkpoint}
            alone = f"{checkpoint:.2f}" if checkpoint is not None else "not scored"
            say(f"  {s}: validation BLEU {averaged[s]:.2f} with the average, {alone} with the checkpoint of step "
                f"{final:,} alone: translating with the {'average' if keep else 'checkpoint'}")
        return chosen

    def averaged(self, final: int, rising: Optional[Dict[str, List[Dict[str, Any]]]] = None) -> int:
        """How many checkpoints the final models average: ``--average``, or fewer where a system lacks one of them
        (the first steps; a checkpoint deleted by an earlier run with another ``--max-steps``). ``rising``: the
        validation curves when training stopped before the plateau (cap, budget); then only checkpoints within the
        rule's tolerance of the final one's validation BLEU are averaged, for every system (averaging the steep part
        of a curve in gives a worse model than its last checkpoint)."""
        every, n = self.schedule.every, self.schedule.average
        for s in self.systems:
            have = self.rounds.checkpoints(s)
            bleu = {r["step"]: r.get("bleu") for r in (rising or {}).get(s, [])}
            k = 0
            while k < n and final - k * every > 0 and (final - k * every) in have:
                if rising is not None and k > 0 and not self._close(bleu.get(final - k * every), bleu.get(final)):
                    break
                k += 1
            n = k
        return max(n, 1)

    def _close(self, bleu: Optional[float], final_bleu: Optional[float]) -> bool:
        return bleu is not None and final_bleu is not None and bleu >= final_bleu - self.schedule.tolerance

    @staticmethod
    def last_common(curves: Dict[str, List[Dict[str, Any]]], limit: int) -> Optional[int]:
        """The last step at most ``limit`` that every curve has scored."""
        common = set.intersection(*({r["step"] for r in rows} for rows in curves.values())) if curves else set()
        below = [s for s in common if s <= limit]
        return max(below) if below else None

    def stop_line(self, reason: str, found: Optional[int], reached: int, final: Optional[int], average: int,
                  need: Optional[float]) -> str:
        sch = self.schedule
        if not final:
            what = "nothing to translate: no checkpoint was scored"
        elif average > 1:
            what = (f"the average of the last {average} checkpoints up to step {final:,}, or that checkpoint alone "
                    f"where it scores higher on the validation pairs")
        else:
            what = f"the checkpoint of step {final:,}"
        if reason == PLATEAU:
            why = (f"the plateau rule holds at step {found:,} for every system (no later validation BLEU more than "
                   f"{sch.tolerance} above it, {sch.window:,} steps past it)")
        elif reason == CAP:
            why = f"the step cap of {sch.cap:,} (--max-steps) was reached without a plateau"
        else:
            why = (f"another round (about {need / 60:.1f} min) would exceed the time budget of "
                   f"{self.budget_s / 60:.0f} min ({(time.perf_counter() - self.runner.started) / 60:.1f} min spent) "
                   f"at step {reached:,}; the same command with a budget goes on from there")
        return f"[plateau] training stopped by the {reason}: {why}; translating with {what}"

    def forget_stale(self, final: int, averages: Dict[str, int]) -> None:
        """A test translation of another final model (an earlier run stopped elsewhere, or one that chose otherwise)
        is translated again."""
        state = self.read_state()
        if state.get("final_step") is None:
            return
        before = state.get("averages") or {s: state.get("average") for s in self.systems}
        for s in self.systems:
            if state["final_step"] != final or before.get(s) != averages[s]:
                self.rounds.forget_test(s)


def describe_schedule(sch: Schedule, budget_s: Optional[float]) -> str:
    """The pipeline's line on how the systems train (after the preset line)."""
    budget = f", within {budget_s / 60:.0f} min (--time-budget)" if budget_s else ""
    final = (f"the average of the last {sch.average} checkpoints (--average), or the last alone where it scores higher "
             f"on the validation pairs" if sch.average > 1 else "the last checkpoint (--average 1)")
    return (f"training: to the plateau of validation BLEU (the study's rule: no later checkpoint more than "
            f"{sch.tolerance} BLEU above, {sch.window:,} steps past it), checkpoints every {sch.every:,} steps, rounds "
            f"of {sch.round:,}, at most {sch.cap:,} steps (--max-steps){budget}; then {final}; --train-steps N trains "
            f"N steps instead")


def translated_with(workdir: Path) -> str:
    """The summary's line on the model every system was translated with (``plateau.json``), or ""."""
    path = Path(workdir) / "plateau.json"
    state = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if not state.get("final_step"):
        return ""
    step = state["final_step"]
    averages = state.get("averages") or {"": state["average"]}

    def model(n: int) -> str:
        return f"the average of the last {n} checkpoints up to step {step:,}" if n > 1 else \
            f"the checkpoint of step {step:,}"

    how = f"training stopped by the {state['status']}; {CURVE_PLOT}: the learning curves"
    candidates = state["average"] if "averages" in state else 1  # older runs: no choice made
    if len(set(averages.values())) == 1:
        n = next(iter(averages.values()))
        if candidates > 1:  # chosen on the validation pairs (choose_models)
            how = ("chosen on the validation pairs over " + ("that checkpoint alone" if n > 1 else
                   f"the average of the last {candidates} checkpoints") + f"; {how}")
        return f"translated with {model(n)} ({how})"
    each = "; ".join(f"{s} {model(n)}" for s, n in averages.items())
    return f"translated with, each chosen on the validation pairs: {each} ({how})"

