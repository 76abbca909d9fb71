"""A system trained on to its own plateau (``onmt-xl evidence --stage plateau``): the 6-layer LSTM of Ding et al.
2020 Tab. 4, which has not converged at the study's 8,000 steps (reports/PREREG_decisive_baselines.md, Deviations).

Jobs ``SYSTEM_plateau_sSEED`` continue ``SYSTEM_sSEED`` from its checkpoint at ``--plateau-from`` (the same
configuration and seed, resumed exactly: the same model as one longer run), in rounds of ``--plateau-round`` steps up
to ``--plateau-cap``. After each round every kept checkpoint from ``--plateau-from`` on, at a multiple of
``--score-every`` steps, is translated on the validation pairs; the rounds stop at the study's plateau rule
(:func:`onmt_xl.experiments.curve.plateau_step`, over all seeds together). Each job is then translated (validation
and test) with the average of its last ``--average`` checkpoints up to the plateau step, like every main run.

``plateau_SYSTEM.json`` in the work directory (and the archive) records where the rounds stand::

    {"system", "seeds", "from_step", "round", "cap", "score_every", "tolerance", "window",
     "reached": {job: steps}, "step": S or null, "status": "training" | "plateau" | "cap"}
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import yaml

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.archive import save_curve, save_run
from onmt_xl.experiments.curve import checkpoints, plateau_step, read_curve
from onmt_xl.experiments.jobs import _differences, _identity, whole_checkpoints
from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.stock import say

PLATEAU, CAP, TRAINING = "plateau", "cap", "training"
#: options that name a job's own files, not what it trains
_OWN_PATHS = ("save_model", "save_data")


def plateau_name(system: str, seed: int) -> str:
    return f"{system}_plateau_s{seed}"


def state_path(workdir: Path, system: str) -> Path:
    """Where the rounds of ``system`` are recorded (an archived run file: ``plateau_*.json``)."""
    return Path(workdir) / f"plateau_{system}.json"


def read_state(workdir: Path, system: str) -> Optional[Dict[str, Any]]:
    path = state_path(workdir, system)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def describe(workdir: str, system: str) -> str:
    """One line on where ``system``'s rounds stand (``tools/study/study_queue.sh status``)."""
    state = read_state(Path(workdir), system)
    if state is None:
        return f"plateau ({system}): not started"
    reached = ", ".join(f"{name} {steps:,}" for name, steps in state["reached"].items())
    found = f" at step {state['step']:,}" if state.get("step") else ""
    return f"plateau ({system}): {state['status']}{found}; trained {reached} (cap {state['cap']:,})"


def trained_steps(runner, job: Job) -> int:
    """The steps ``job`` has trained: its last checkpoint, or, finished without checkpoints (restored from an
    archive), the ``train_steps`` it finished; 0 when it has not started."""
    jd = runner.path("jobs", job.name)
    ckpts = checkpoints(jd)
    if ckpts:
        return max(ckpts)
    return round_begun(runner, job) if (jd / "done.json").exists() else 0


def round_begun(runner, job: Job) -> int:
    """The ``train_steps`` of the last round ``job`` began (its ``config.yaml``), 0 before its first: a round cut
    short by a stop is finished, never shortened, whatever step the stop left."""
    cfg = runner.path("jobs", job.name, "config.yaml")
    return int(yaml.safe_load(cfg.read_text(encoding="utf-8"))["train_steps"]) if cfg.exists() else 0


def continue_from(runner, job: Job, source: str, step: int, average: int) -> bool:
    """Give ``job`` (not started) the checkpoint of job ``source`` at ``step``, and the average of its last
    ``average`` checkpoints there where it was kept, by hard link (a copy across file systems), so that ``job``
    continues that model. The two jobs must be the same model: their configurations may differ only in
    ``train_steps`` and their own paths. False where ``source`` has no such checkpoint (``job`` then trains from
    step 0, the same model from its start)."""
    jd, sd = runner.path("jobs", job.name), runner.path("jobs", source)
    if checkpoints(jd) or (jd / "done.json").exists():
        return False
    ckpt = sd / f"model_step_{step}.pt"
    if not ckpt.exists():
        say(f"  {job.name}: {source} has no checkpoint at step {step} here; it trains from step 0")
        return False
    ours = {k: v for k, v in _identity(runner.job_config(job)).items() if k not in _OWN_PATHS}
    theirs = {k: v for k, v in _identity(yaml.safe_load((sd / "config.yaml").read_text(encoding="utf-8"))).items()
              if k not in _OWN_PATHS}
    if ours != theirs:
        raise XLUsageError(str(sd / "config.yaml"), None, f"job {job.name} cannot continue {source}: they differ in "
                           f"{_differences(theirs, ours)}")
    jd.mkdir(parents=True, exist_ok=True)
    for src in (ckpt, sd / f"average{average}_step_{step}.pt"):
        if src.exists():
            try:
                os.link(src, jd / src.name)
            except OSError:
                shutil.copy2(src, jd / src.name)
    say(f"  {job.name}: continues {source} from step {step}")
    return True


def next_round(reached: int, start: int, round_steps: int, cap: int) -> int:
    """The end of the round after ``reached`` steps: the first of ``start`` + k · ``round_steps`` (k ≥ 1) above
    ``reached``, at most ``cap``."""
    k = max(0, reached - start) // round_steps + 1
    return min(start + k * round_steps, cap)


def scored_curves(runner, jobs: Sequence[Job], start: int) -> Dict[str, List[Dict[str, Any]]]:
    """Each job's scored validation points from step ``start`` on."""
    return {job.name: [r for r in read_curve(runner.path("jobs", job.name)) if r["step"] >= start] for job in jobs}


def run_plateau(args, runner, seeds: Sequence[int], overrides: Dict[str, Any], score: Callable[..., Any]) -> int:
    """``--stage plateau``: the module docstring's rounds, resumable (run it again after a stop). ``overrides``: the
    jobs' checkpoint options (those of ``SYSTEM_sSEED``); ``score``: the scorer of kept checkpoints
    (:func:`onmt_xl.experiments.evidence.score_checkpoints`)."""
    system, start, round_steps, cap = args.plateau_system, args.plateau_from, args.plateau_round, args.plateau_cap
    every, score_every = args.every, args.score_every or 1000
    if round_steps <= 0 or cap <= start or score_every % every or round_steps % score_every:
        raise XLUsageError(None, None, "--plateau-round must be a positive multiple of --score-every, itself a "
                           "multiple of --every, and --plateau-cap above --plateau-from")
    workdir = Path(runner.workdir)
    state: Dict[str, Any] = dict(system=system, seeds=seeds, from_step=start, round=round_steps, cap=cap,
                                 score_every=score_every, tolerance=args.plateau_tolerance, window=args.plateau_window,
                                 reached={}, step=None, status=TRAINING)

    def job(seed: int, steps: int, final: Optional[int] = None) -> Job:
        variants = ["valid", "test"] if final else []
        return Job(plateau_name(system, seed), system, seed, overrides=dict(overrides), train_steps=steps,
                   final_step=final, average=args.average if final else 1, variants=variants, experiments=["plateau"])

    def save() -> None:
        state["reached"] = {j.name: trained_steps(runner, j) for j in (job(seed, start) for seed in seeds)}
        state_path(workdir, system).write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
        if runner.archive is not None:
            save_run(workdir, runner.archive, data=runner.corpus_dir())

    def score_all(jobs: Sequence[Job]) -> None:
        def one(j: Job) -> None:
            if not (workdir / "jobs" / j.name).is_dir():
                return
            score(runner, j, score_every, args.threads, first=start)
            if runner.archive is not None:
                save_curve(workdir, runner.archive, j.name)
        with ThreadPoolExecutor(max_workers=max(1, runner.parallel)) as pool:
            list(pool.map(one, jobs))

    if args.threads:  # else the runner's layout (one thread per job without a GPU)
        runner.threads = args.threads
    while True:
        probe = [job(seed, start) for seed in seeds]
        for j in probe:  # a checkpoint cut short by a stop is neither scored nor counted as trained
            if runner.path("jobs", j.name).is_dir():
                whole_checkpoints(runner.path("jobs", j.name), j.name)
        score_all(probe)
        s = plateau_step(scored_curves(runner, probe, start), args.plateau_tolerance, args.plateau_window)
        low = min(trained_steps(runner, j) for j in probe)
        if s is not None or low >= cap:
            break
        target = next_round(low, start, round_steps, cap)
        jobs = [job(seed, max(target, trained_steps(runner, j), round_begun(runner, j)))
                for seed, j in zip(seeds, probe)]
        for j in jobs:
            jd = runner.path("jobs", j.name)
            if (jd / "done.json").exists() and not checkpoints(jd):  # restored from an archive: trained again
                (jd / "curve.jsonl").unlink(missing_ok=True)  # its lost run's points stay in the archive only
            continue_from(runner, j, f"{system}_s{j.seed}", start, args.average)
        say(f"[plateau] {system}: no plateau yet (seeds {', '.join(map(str, seeds))} at "
            f"{', '.join(str(trained_steps(runner, j)) for j in jobs)} steps); training to "
            f"{', '.join(str(j.train_steps) for j in jobs)}")
        runner.jobs = jobs
        runner.run(sys.argv[1:])
        save()
    state["step"] = s
    state["status"] = PLATEAU if s is not None else CAP
    if s is None:
        say(f"[plateau] {system}: no plateau by the cap of {cap} steps (rule: no later validation BLEU more than "
            f"{args.plateau_tolerance} above, {args.plateau_window} steps past it); not translated")
        save()
        return 0
    say(f"[plateau] {system}: plateau at step {s}; translating the average of the last {args.average} checkpoints")
    runner.jobs = [job(seed, trained_steps(runner, job(seed, start)), s) for seed in seeds]
    runner.run(sys.argv[1:])
    for seed in seeds:  # the disk: every checkpoint but the last (to extend it) and the averaged model goes
        ckpts = sorted(checkpoints(runner.path("jobs", plateau_name(system, seed))).items())
        for _, path in ckpts[:-1]:
            path.unlink()
    save()
    return 0
