"""``onmt-xl demo --framework eole``: the demo's systems trained and translated by Eole 0.6.4.

The data stages are the OpenNMT-py demo's (:class:`onmt_xl.experiments.runner.Runner`: synthetic corpus, eflomal
links, preorderer), then Eole's own commands, through ``python -m onmt_xl.eole`` (Eole's CLI with the adapter's
seams installed): ``build_vocab`` once, then per system ``train`` and ``predict`` on the test set with the
configurations of ``yaml_configs/eole/`` (:mod:`onmt_xl.experiments.eole_configs`) pointed at the work directory.
Everything Eole writes goes under ``WORKDIR/eole/`` (``vocab.*``, ``SYSTEM.yaml``, ``models/SYSTEM/``, ``hyp/``,
``logs/``, ``results.json``); a second run skips what is done, and a system whose training was interrupted resumes
from its last whole step directory (``training.xl_exact_resume``: the same model as an uninterrupted run). A run
whose configuration of a trained system is another model than ``eole/SYSTEM.yaml`` (what it was trained with) is
refused before any work, as OpenNMT-py's jobs are (:func:`eole_identity`: its steps and schedule may change). Scores
are those of ``onmt-xl demo``: sacrebleu's BLEU and chrF, the paired bootstrap against the baseline. ``onmt-xl
pipeline --framework eole`` runs the same on raw text: ``onmt_tokenize`` in every configuration
(:mod:`onmt_xl.experiments.tokenization`), kept in each model's ``config.json``, so that ``eole predict`` reads raw
text and writes detokenized text, scored against the raw references; without ``--train-steps`` it trains to the
plateau of validation BLEU in rounds (:class:`EoleRounds` under
:class:`onmt_xl.experiments.until_plateau.PlateauTraining`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import yaml

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.eole_configs import EOLE_SYSTEMS, eole_config
from onmt_xl.experiments.jobs import (DEVICE_OPTIONS, RUN_OPTIONS, SCHEDULE_OPTIONS, _differences, in_this_workdir,
                                     positions_change)
from onmt_xl.experiments.plan import EOLE_INSTALL, XLPOS_SUFFIX
from onmt_xl.experiments.stages import Corpus, vocab_line
from onmt_xl.experiments.systems import SYSTEMS
from onmt_xl.experiments.stock import read_lines, say, write_lines
from onmt_xl.core.progress import ticking

#: Eole's log line with the model's size (``BaseModel.count_parameters``)
PARAMETERS = re.compile(r"\* number of parameters: (\d+)")
#: Eole's log line of a training that resumes a step directory (``get_metadata``)
RESUMED = re.compile(r"Loading metadata from .*step_(\d+)")
#: the model directory's record of the steps the last training attempt began to train to
ROUND = "round.json"
#: what every Eole run of the pipeline trains with (``jobs.RUN_OPTIONS`` for OpenNMT-py): RNG states in every step
#: directory, so that a stopped run resumes exactly; on the CPU bf16 autocast where native and onmt_xl's kernels,
#: the same for every system (no effect on a GPU)
EOLE_RUN_OPTIONS = {"xl_exact_resume": True, "xl_cpu_precision": "auto", "xl_cpu_kernels": "fast"}
#: what a step directory holds once Eole has saved it whole (``TrainingModelSaver._save``: ``config.json`` last)
STEP_FILES = ("optimizer.pt", "model.00.safetensors", "vocab.json", "config.json")
#: options (the last key of their place in Eole's config) that say how a run goes, not which model it trains: the
#: steps, when it validates and checkpoints, the device, the resumption (as OpenNMT-py's jobs, onmt_xl.experiments.jobs)
RUN_ONLY = frozenset((*DEVICE_OPTIONS, *RUN_OPTIONS, *SCHEDULE_OPTIONS, "train_steps", "train_from"))


def eole_identity(cfg: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """An Eole configuration as what a changed one is judged on: flat, by dotted place (``model.hidden_size``), without
    :data:`RUN_ONLY`; an absolute path by the file it names (a symbolic link followed)."""
    out: Dict[str, Any] = {}
    for key, value in cfg.items():
        if key in RUN_ONLY:
            continue
        if isinstance(value, dict):
            out.update(eole_identity(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = os.path.realpath(value) if isinstance(value, str) and value.startswith("/") else value
    return out


def trains_on_crossfit(runner, system: str) -> bool:
    """Whether ``system`` trains on cross-fitted positions in ``runner``'s run (``--training-positions crossfit`` and
    a system that uses the preorderer)."""
    return runner.training_positions == "crossfit" and SYSTEMS[system].uses_preorderer


def _suffix(cfg: Dict[str, Any], system: str) -> Optional[str]:
    """The ``xl_positions_suffix`` of ``system``'s transform in an Eole configuration, or None."""
    transform = SYSTEMS[system].transform if system in SYSTEMS else None
    return ((cfg.get("transforms_configs") or {}).get(transform) or {}).get("xl_positions_suffix")


def _whole(step_dir: Path) -> bool:
    if not all((step_dir / name).is_file() for name in STEP_FILES):
        return False
    try:
        json.loads((step_dir / "config.json").read_text(encoding="utf-8"))
    except ValueError:
        return False
    return True


def eole_command() -> List[str]:
    """Eole's CLI with the adapter's seams installed first (:mod:`onmt_xl.eole.__main__`)."""
    return [sys.executable, "-m", "onmt_xl.eole"]


def check_eole(systems: List[str]) -> None:
    """A usage error, before any work, when Eole is missing or a system is not ported to it."""
    if importlib.util.find_spec("eole") is None:
        raise XLUsageError(None, None, f"--framework eole needs Eole 0.6.4 in this Python: {EOLE_INSTALL}")
    missing = [s for s in systems if s not in EOLE_SYSTEMS]
    if missing:
        raise XLUsageError(None, None, f"--systems {','.join(missing)}: not ported to Eole yet; --framework eole has "
                           f"{', '.join(EOLE_SYSTEMS)}")


def average_eole_models(step_dirs: Sequence[Path], out: Path) -> Path:
    """Average Eole checkpoints into the model directory ``out``; returns ``out``.

    Eole 0.6.4 has no checkpoint-averaging tool (nothing like OpenNMT-py's ``onmt_average_models``), so this does
    what that tool does: each floating-point tensor of the checkpoints' ``model.00.safetensors`` is the mean over
    ``step_dirs`` (Eole's ``MODEL_PATH/step_N/`` directories, each a whole model), summed in float64 and stored in
    its own dtype; other tensors, ``config.json``, ``vocab.json`` and the transforms' artifacts (the preorderer) are
    the last directory's; the optimizer state is left out. ``eole predict -model_path OUT`` reads it as any model.
    """
    import torch
    from safetensors.torch import load_file, save_file

    dirs = [Path(d) for d in step_dirs]
    weights = "model.00.safetensors"
    last = load_file(str(dirs[-1] / weights))
    sums = {k: v.to(torch.float64) for k, v in last.items() if v.is_floating_point()}
    for d in dirs[:-1]:
        for k, v in load_file(str(d / weights)).items():
            if k in sums:
                sums[k] += v.to(torch.float64)
    averaged = {k: (sums[k] / len(dirs)).to(v.dtype) if k in sums else v for k, v in last.items()}
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for item in dirs[-1].iterdir():
        if item.name not in (weights, "optimizer.pt") and item.is_file():
            shutil.copy2(item.resolve(), tmp / item.name)
    save_file(averaged, str(tmp / weights))
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return out


class EoleDemo:
    """Eole's build_vocab, train and predict for ``systems`` in ``runner``'s work directory (data prepared by it);
    ``average``: translate with the average of the last ``average`` checkpoints (:func:`average_eole_models`)."""

    def __init__(self, runner, systems: List[str], average: int = 1, runs: Optional[Dict[str, tuple]] = None):
        self.runner, self.systems, self.average = runner, list(systems), average
        #: run name -> (system, training seed) (``--seeds``, :func:`onmt_xl.experiments.seeds.run_names`; a name not
        #: in it is a system's own run); every method's ``system`` is a run's name
        self.runs: Dict[str, tuple] = dict(runs or {})
        self.root = runner.path("eole")
        #: system -> the model its test set is translated with, where the rounds chose it (:class:`EoleRounds`)
        self.chosen: Dict[str, Path] = {}

    def system_of(self, name: str) -> str:
        """The system run ``name`` trains."""
        return self.runs.get(name, (name, None))[0]

    def config(self, system: str) -> Dict[str, Any]:
        """Run ``system``'s Eole configuration (:func:`eole_config`; a further seed's run under its own name, with its
        seed); with ``--training-positions crossfit`` a system using the preorderer trains on the cross-fitted
        positions (:meth:`DataStages.crossfit_training`)."""
        name, (system, seed) = system, self.runs.get(system, (system, None))
        overrides = self.runner.overrides if name == system else {**self.runner.overrides, "seed": seed}
        cfg = eole_config(system, str(self.runner.workdir), overrides, self.runner.preset, name=name)
        if trains_on_crossfit(self.runner, system):
            cfg["data"]["train"] = self.runner.crossfit_training(cfg["data"]["train"])
            cfg["transforms_configs"][SYSTEMS[system].transform]["xl_positions_suffix"] = XLPOS_SUFFIX
        return cfg

    def _eole(self, args: List[Any], log: Path, echo: str = "", tag: str = "") -> float:
        return self.runner._run(eole_command() + list(args), log, self.root / "commands.sh", echo=echo, tag=tag)

    def config_path(self, system: str) -> Path:
        """``eole/SYSTEM.yaml``: the configuration ``system`` last trained (or built the vocabularies) with."""
        return self.root / f"{system}.yaml"

    def config_problem(self, system: str) -> Optional[XLUsageError]:
        """Why ``system``'s configuration cannot go on from the model :meth:`config_path` trained, or None: another
        model (:func:`eole_identity`). Reads only."""
        path, model = self.config_path(system), self.model_dir(system)
        if not path.exists() or not (self.step_dirs(system) or (model / "done.json").exists()):
            return None
        cfg = self.config(system)
        old = in_this_workdir(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, cfg, str(self.runner.workdir))
        was, now = eole_identity(old), eole_identity(cfg)
        if was == now:
            return None
        what = positions_change(*(_suffix(c, system) for c in (old, cfg))) or _differences(was, now)
        return XLUsageError(str(path), None, f"differs from what {system} needs now in {what}: "
                            f"use another --workdir, or delete {model} to retrain it")

    def check_configs(self) -> None:
        """Refuse a run in which a trained system's model changed (:meth:`config_problem`), before any work."""
        for system in self.systems:
            problem = self.config_problem(system)
            if problem is not None:
                raise problem

    def _write_config(self, system: str, cfg: Optional[Dict[str, Any]] = None) -> Path:
        path = self.config_path(system)
        path.write_text(yaml.safe_dump(cfg or self.config(system), sort_keys=False), encoding="utf-8")
        return path

    def vocab(self) -> None:
        cfg = self.config("baseline")  # the vocabularies of the raw training data, shared by every system
        if Path(cfg["tgt_vocab"]).exists():
            return
        r = self.runner
        say(vocab_line("eole build_vocab", len(read_lines(r.path("data", "train.src"))), r.tokenization))
        with ticking("eole build_vocab"):
            self._eole(["build_vocab", "-config", self._write_config("baseline"), "-n_sample", -1],
                       self.root / "logs" / "build_vocab.log")

    def model_dir(self, system: str) -> Path:
        """Eole's ``model_path`` of ``system`` (its ``step_N/`` directories, ``done.json``, the rounds' files)."""
        return Path(self.config(system)["training"]["model_path"])

    def step_dirs(self, system: str) -> Dict[int, Path]:
        """``system``'s checkpoints by step: Eole's ``MODEL_PATH/step_N/`` directories."""
        model = self.model_dir(system)
        return {int(d.name[5:]): d for d in model.glob("step_*") if d.name[5:].isdigit() and d.is_dir()}

    def whole_step_dirs(self, system: str) -> Dict[int, Path]:
        """:meth:`step_dirs`, after setting aside (as ``step_N.broken``) the last ones a stop cut short: Eole writes
        a step's ``optimizer.pt``, weights and artifacts, then ``vocab.json`` and ``config.json``."""
        dirs = dict(sorted(self.step_dirs(system).items()))
        while dirs and not _whole(dirs[max(dirs)]):
            d = dirs.pop(max(dirs))
            d.replace(d.with_name(d.name + ".broken"))
            say(f"  {system}: {d.name} is cut short (the run stopped while saving it): set aside as {d.name}.broken")
        return dirs

    def train(self, system: str, steps: Optional[int] = None) -> Dict[str, Any]:
        """Train ``system`` to ``steps`` (default: its configuration's), from its last whole checkpoint where it has
        one (``train_from`` with ``xl_exact_resume``: the same model as one uninterrupted run); ``done.json``."""
        problem = self.config_problem(system)
        if problem is not None:
            raise problem
        steps = steps or self.config(system)["training"]["train_steps"]
        model = self.model_dir(system)
        done = model / "done.json"
        info = json.loads(done.read_text()) if done.exists() else None
        if info is not None and info.get("train_steps", steps) >= steps:  # without train_steps: an older finished run
            if info.get("train_steps", steps) > steps:
                say(f"  {system}: trained to {info['train_steps']:,} steps already, more than the {steps:,} asked: "
                    f"that model goes on (delete {model} to train {steps:,} steps)")
            return info
        ckpts = self.whole_step_dirs(system)
        last = max(ckpts, default=0)
        if not ckpts and model.exists():  # nothing to resume from
            say(f"  {system}: removing the unfinished {model}")
            shutil.rmtree(model)
        if not ckpts:  # from step 0: a test translation left by a model deleted to retrain it is not this one's
            (self.root / "hyp" / f"{system}.test").unlink(missing_ok=True)
        model.mkdir(parents=True, exist_ok=True)
        log = self.root / "logs" / f"train_{system}.log"
        seconds, resumed = None, None
        if last < steps:
            (model / ROUND).write_text(json.dumps({"train_steps": steps}))
            cfg = self.config(system)
            cfg["training"].update(train_steps=steps, **EOLE_RUN_OPTIONS)
            if ckpts:
                resumed = ckpts[last]
                cfg["training"]["train_from"] = str(resumed)
            say(f"eole train {system}" + (f" from step {last:,} to {steps:,}" if ckpts else ""))
            seconds = self._eole(["train", "-config", self._write_config(system, cfg)], log, echo="Step",
                                 tag=f"{system}: " if self.runner.parallel > 1 else "")
        found = PARAMETERS.findall(log.read_text(encoding="utf-8")) if log.exists() else []
        if not (model / "config.json").exists() or not found:
            raise RuntimeError(f"eole train {system} finished without a model in {model}; see {log}")
        info = dict(system=self.system_of(system), seed=self.config(system)["seed"], framework="eole",
                    train_seconds=seconds, train_steps=steps, resumed_from=resumed.name if resumed else None,
                    parameters=int(found[-1]),
                    threads=self.runner.threads, device=self.runner.device_name())
        done.write_text(json.dumps(info, indent=2))
        return info

    def final_model(self, system: str) -> Path:
        """The model ``system`` is translated with: :attr:`chosen` (training to the plateau), its model directory,
        or with :attr:`average` > 1 the average of its last checkpoints (``average{N}_step_{S}/`` beside them, made
        once)."""
        if system in self.chosen:
            return self.chosen[system]
        steps = sorted(self.step_dirs(system).items())
        if self.average <= 1 or len(steps) < 2:
            return self.model_dir(system)
        return self.averaged_model(system, [d for _, d in steps[-self.average:]])

    def averaged_model(self, system: str, chosen: Sequence[Path]) -> Path:
        """The average of the step directories ``chosen`` (``average{N}_step_{S}/`` beside them, made once); the
        step directory itself for one."""
        if len(chosen) == 1:
            return Path(chosen[0])
        out = self.model_dir(system) / f"average{len(chosen)}_{Path(chosen[-1]).name}"
        if not out.exists():
            say(f"  {system}: averaging the checkpoints of steps {', '.join(Path(d).name[5:] for d in chosen)}")
            average_eole_models(chosen, out)
        return out

    def predict(self, system: str) -> Path:
        """Translate the test source with :meth:`final_model` (again where an earlier run translated another)."""
        hyp = self.root / "hyp" / f"{system}.test"
        model = self.final_model(system)
        done = self.model_dir(system) / "done.json"
        earlier = json.loads(done.read_text()).get("translated_with", str(self.model_dir(system)))  # older: the last
        if hyp.exists() and earlier == str(model):
            return hyp
        hyp.parent.mkdir(parents=True, exist_ok=True)
        tmp = hyp.with_name(hyp.name + ".partial")
        say(f"  eole predict {system} [test]")
        with ticking(f"eole predict {system} [test]"):
            seconds = self.translate(system, model, self.runner.path("data", "test.src"), tmp,
                                     self.root / "logs" / f"predict_{system}.log")
        tmp.replace(hyp)
        done.write_text(json.dumps({**json.loads(done.read_text()), "translate_seconds": seconds,
                                    "translated_with": str(model)}, indent=2))
        return hyp

    def translate(self, system: str, model: Path, src: Path, out: Path, log: Path) -> float:
        """``eole predict`` of ``src`` into ``out`` with ``model`` as the test set is translated; returns seconds.
        An empty (or whitespace-only) source line gets an empty line at its place: stock ``eole predict`` drops it
        (every later line would pair with the wrong reference), so the others are translated without it."""
        lines = read_lines(src)
        empty = {i for i, line in enumerate(lines) if not line.split()}
        if not empty:
            return self._predict(system, model, src, out, log)
        kept, got = out.with_name(out.name + ".src"), out.with_name(out.name + ".kept")
        write_lines(kept, [line for i, line in enumerate(lines) if i not in empty])
        seconds = self._predict(system, model, kept, got, log) if len(empty) < len(lines) else 0.0
        translated = iter(read_lines(got) if got.exists() else [])
        write_lines(out, ["" if i in empty else next(translated) for i in range(len(lines))])
        kept.unlink()
        got.unlink(missing_ok=True)
        return seconds

    def _predict(self, system: str, model: Path, src: Path, out: Path, log: Path) -> float:
        args = ["predict", "-model_path", model, "-src", src, "-output", out, "-beam_size", self.runner.beam_size,
                "-batch_size", 64, "-batch_type", "sents", "-seed", self.config(system)["seed"]]
        if self.runner.gpu:
            args += ["-gpu_ranks", 0, "-world_size", 1]
        return self._eole(args, log)

    def _system(self, system: str) -> Dict[str, Any]:
        self.train(system)
        self.predict(system)
        return self.info(system)

    def info(self, system: str) -> Dict[str, Any]:
        return json.loads((self.model_dir(system) / "done.json").read_text())

    def run(self) -> Dict[str, Any]:
        self.root.mkdir(parents=True, exist_ok=True)
        self.vocab()
        with ThreadPoolExecutor(max_workers=self.runner.parallel) as pool:
            infos = dict(zip(self.systems, pool.map(self._system, self.systems)))
        return self.scores(infos)

    def scores(self, infos: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
        """``results.json``: the preorderer's scores, per system BLEU/chrF (and the p-value against the baseline),
        in the shape of :func:`onmt_xl.experiments.scoring.collect` so that the demo's summary prints it."""
        from onmt_xl.experiments.scoring import (bleu_tokenizer_of, paired_bootstrap, run_records, scores_note,
                                                 seen_test_lines, text_scores, tokenization_of)

        ref = read_lines(self.runner.path("data", "test.ref"))
        hyps = {s: read_lines(self.root / "hyp" / f"{s}.test") for s in self.systems}
        tokenization = tokenization_of(self.runner.workdir)
        out: Dict[str, Any] = {"framework": "eole", "jobs": {}, "scores": scores_note(tokenization),
                               **run_records(self.runner.workdir)}
        seen = seen_test_lines(out)
        for s, hyp in hyps.items():
            test = dict(text_scores(hyp, ref, tokenization, path=self.root / "hyp" / (s + ".test"), seen=seen),
                        translate_seconds=infos[s].get("translate_seconds"))
            out["jobs"][s] = dict(infos[s], variants={"test": test})
        if "baseline" in hyps:
            others = {s: h for s, h in hyps.items() if s != "baseline"}
            for s, p in paired_bootstrap(others, hyps["baseline"], ref,
                                         tokenize=bleu_tokenizer_of(tokenization)).items():
                out["jobs"][s]["variants"]["test"]["p_bootstrap"] = p
        (self.root / "results.json").write_text(json.dumps(out, indent=2))
        return out


class EoleRounds:
    """Eole's side of :class:`onmt_xl.experiments.until_plateau.PlateauTraining` for ``demo``'s systems: a round is
    ``eole train`` from the last whole ``step_N/`` with ``train_steps`` raised (``training.xl_exact_resume``: the
    same model as one longer run, :mod:`onmt_xl.eole.seams`); a checkpoint is scored by ``eole predict`` on the
    validation source; the final models are :func:`average_eole_models` of the chosen step directories. Everything
    under ``WORKDIR/eole/``: ``plateau.json``, ``learning_curves.png``, and per system in ``models/SYSTEM/``
    ``curve.jsonl`` and ``hyp.valid.stepN``. The validation perplexity of each checkpoint is read from Eole's train
    log (``logs/train_SYSTEM.log``: one ``Validation perplexity`` line every ``valid_steps``, counted from the step
    directory an attempt resumed)."""

    def __init__(self, demo: EoleDemo):
        self.demo, self.runner, self.root = demo, demo.runner, demo.root

    def configure(self, schedule) -> None:
        self.runner.overrides.update(save_checkpoint_steps=schedule.every, valid_steps=schedule.every,
                                     keep_checkpoint=-1)

    def job_dir(self, system: str) -> Path:
        return self.demo.model_dir(system)

    def checkpoints(self, system: str) -> Dict[int, Path]:
        return self.demo.step_dirs(system)

    def whole_checkpoints(self, system: str) -> Dict[int, Path]:
        return self.demo.whole_step_dirs(system)

    def remove(self, checkpoint: Path) -> None:
        shutil.rmtree(checkpoint)

    def trained(self, system: str) -> int:
        return max(self.checkpoints(system), default=0)

    def begun(self, system: str) -> int:
        path = self.job_dir(system) / ROUND
        return int(json.loads(path.read_text())["train_steps"]) if path.exists() else 0

    def last_attempt(self, system: str):
        done = self.job_dir(system) / "done.json"
        if not done.exists():
            return None
        info = json.loads(done.read_text())
        start = int((info.get("resumed_from") or "step_0")[5:])
        return info.get("train_seconds"), info.get("train_steps", 0) - start

    def start(self, steps: Dict[str, int], argv=()) -> bool:
        """The vocabularies and the first round (the data stages ran before, in :func:`run_eole_demo`)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.demo.vocab()
        return self.train(steps)

    def train(self, steps: Dict[str, int]) -> bool:
        with ThreadPoolExecutor(max_workers=self.runner.parallel) as pool:
            list(pool.map(lambda s: self.demo.train(s, steps[s]), steps))
        return True

    def translate_valid(self, system: str, step: int, checkpoint: Path, out: Path) -> float:
        return self.demo.translate(system, checkpoint, self.runner.path("data", "valid.src"), out,
                                   self.root / "logs" / f"predict_valid_{system}.log")

    def validation(self, system: str, every: int) -> Dict[int, Dict[str, float]]:
        from onmt_xl.experiments.curve import validation_log

        log = self.root / "logs" / f"train_{system}.log"
        return validation_log(log.read_text(encoding="utf-8"), every, RESUMED) if log.exists() else {}

    def averaged_model(self, system: str, final: int, average: int, steps: int = 0) -> Path:
        """The average of ``system``'s last ``average`` step directories up to ``final`` (made once)."""
        every, dirs = self.runner.overrides["save_checkpoint_steps"], self.checkpoints(system)
        return self.demo.averaged_model(system, [dirs[final - k * every] for k in reversed(range(average))])

    def translate_test(self, final: int, averages: Dict[str, int], steps: Dict[str, int]) -> None:
        for s in steps:
            self.demo.chosen[s] = self.averaged_model(s, final, averages[s])
        with ThreadPoolExecutor(max_workers=self.runner.parallel) as pool:
            list(pool.map(self.demo.predict, steps))

    def forget_test(self, system: str) -> None:
        (self.root / "hyp" / f"{system}.test").unlink(missing_ok=True)

    def record(self, **kw) -> None:
        pass  # plateau.json records the rounds; Eole's runs keep no manifest

    def results(self) -> Dict[str, Any]:
        return self.demo.scores({s: self.demo.info(s) for s in self.demo.systems})


def run_eole_demo(corpus: Corpus, args, summary) -> int:
    """``onmt-xl demo --framework eole`` and ``onmt-xl pipeline --framework eole``: the OpenNMT-py demo's data
    stages, then :class:`EoleDemo`: the preset's steps, or with ``args.schedule`` (``pipeline`` without
    ``--train-steps``) to the plateau (:class:`EoleRounds`)."""
    check_eole(args.systems)
    from onmt_xl.experiments.runner import Runner

    schedule = getattr(args, "schedule", None)
    runner = Runner(corpus, args.workdir, [], preset=getattr(args, "preset", "demo"),
                    train_steps=args.train_steps or (schedule.cap if schedule else None), beam_size=args.beam_size,
                    gpu={"auto": None, "yes": True, "no": False}[args.gpu], parallel=args.parallel,
                    preorder_iterations=args.preorder_iterations, tokenize=getattr(args, "tokenize", None),
                    subword_size=getattr(args, "subword_size", None),
                    bleu_tokenize=getattr(args, "bleu_tokenize", "auto"))
    runner.training_positions = getattr(args, "training_positions", "preorderer")
    runner.workdir.mkdir(parents=True, exist_ok=True)
    lock = runner._lock_workdir()  # noqa: F841 - held for the process's lifetime
    if runner.tokenize_as is not None and runner.path("tok", "tokenization.json").exists():
        runner.tokenize(runner.tokenize_as, runner.subword_size)  # recorded: only read, so the configurations are whole
    from onmt_xl.experiments.configs import TRAINING
    from onmt_xl.experiments.seeds import run_names

    seeds = getattr(args, "seeds", 1)
    runs = run_names(args.systems, seeds, TRAINING["seed"])  # --seeds: every system's runs, the first its own
    EoleDemo(runner, list(runs), runs=runs).check_configs()  # a refused run changes nothing
    runner.stage_data()
    runner.tokenize(runner.tokenize_as, runner.subword_size)  # onmt-xl pipeline: raw text (tokenization.py)
    runner.align()
    runner.preorder()
    if runner.monotone_gate(args.systems, args.if_monotone):
        return 0
    crossfit = any(trains_on_crossfit(runner, s) for s in args.systems)
    if crossfit:
        runner.crossfit()
    from onmt_xl.experiments.usage import next_steps

    if schedule is not None:
        from onmt_xl.experiments.until_plateau import PlateauTraining, translated_with

        demo = EoleDemo(runner, list(runs), runs=runs)
        res = PlateauTraining(runner, list(runs), schedule, getattr(args, "time_budget", None),
                              rounds=EoleRounds(demo)).run()
        if res is None:  # nothing scored to translate with: the stop line said why
            return 0
        res["translated_with"] = translated_with(demo.root)
    else:
        average = getattr(args, "average", None) or 1
        if average > 1:  # the last checkpoints every save_checkpoint_steps are kept to average them
            runner.overrides.update(keep_checkpoint=average)
            if getattr(args, "eole_every", None):
                runner.overrides.update(save_checkpoint_steps=args.eole_every)
        demo = EoleDemo(runner, list(runs), average, runs=runs)
        res = demo.run()
    if crossfit:
        res["training_positions"] = runner.crossfit_line()
    served = {}
    if seeds > 1:  # the runs pooled; each system's run best on the validation pairs is the one served
        from onmt_xl.experiments.seeds import seed_results, served_runs

        seed_results(res, runs, lambda name: demo.root / "hyp" / f"{name}.test", runner.workdir,
                     demo.root / "results.json")
        served = served_runs(runs, demo.root, "models")
    models = {s: demo.final_model(served.get(s, s)) for s in args.systems}
    serve = write_serve_config(runner.path("eole", SERVE_CONFIG), models, runner.beam_size)
    say(f"results: {runner.path('eole', 'results.json')}\n" + summary(res)
        + next_steps(runner, args.systems, "eole", models, serve, served))
    return 0


#: ``eole serve -c`` configuration of a run's final models, in ``WORKDIR/eole/``
SERVE_CONFIG = "serve.yaml"


def write_serve_config(path: Path, models: Dict[str, Path], beam_size: int) -> Path:
    """``eole serve -c PATH``: one model per system (its id the system's name), the directory each is translated
    with (the average where there is one), preloaded; ``beam_size`` as in the test translations (Eole's server
    takes decoding options from each request, so the printed request repeats it). Paths are absolute: Eole 0.6.4's
    server reads a model's ``path`` relative to the directory it runs in, not to ``models_root``, after asking the
    Hugging Face Hub whether it names a repository there (``models/baseline`` would)."""
    root = path.parent
    entries = [{"id": system, "path": str(Path(model).resolve()), "preload": True, "config": {"beam_size": beam_size}}
               for system, model in models.items()]
    path.write_text(yaml.safe_dump({"models_root": str(root.resolve()), "models": entries}, sort_keys=False),
                    encoding="utf-8")
    return path
