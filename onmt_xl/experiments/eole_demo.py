"""``onmt-xl demo --framework eole``: the demo's systems trained and translated by Eole 0.6.4.

The data stages are the OpenNMT-py demo's (:class:`onmt_xl.experiments.runner.Runner`: synthetic corpus, eflomal
links, preorderer), then Eole's own commands, through ``python -m onmt_xl.eole`` (Eole's CLI with the adapter's
seams installed): ``build_vocab`` once, then per system ``train`` and ``predict`` on the test set with the
configurations of ``yaml_configs/eole/`` (:mod:`onmt_xl.experiments.eole_configs`) pointed at the work directory.
Everything Eole writes goes under ``WORKDIR/eole/`` (``vocab.*``, ``SYSTEM.yaml``, ``models/SYSTEM/``, ``hyp/``,
``logs/``, ``results.json``); a second run skips what is done (a system whose training was interrupted is trained
again from the start). Scores are those of ``onmt-xl demo``: sacrebleu's BLEU and chrF, the paired bootstrap
against the baseline. ``onmt-xl pipeline --framework eole`` runs the same on raw text: ``onmt_tokenize`` in every
configuration (:mod:`onmt_xl.experiments.tokenization`), kept in each model's ``config.json``, so that
``eole predict`` reads raw text and writes detokenized text, scored against the raw references.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Sequence

import yaml

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.eole_configs import EOLE_SYSTEMS, eole_config
from onmt_xl.experiments.stages import Corpus, vocab_line
from onmt_xl.experiments.stock import read_lines, say
from onmt_xl.core.progress import ticking

#: Eole's log line with the model's size (``BaseModel.count_parameters``)
PARAMETERS = re.compile(r"\* number of parameters: (\d+)")


def eole_command() -> List[str]:
    """Eole's CLI with the adapter's seams installed first (:mod:`onmt_xl.eole.__main__`)."""
    return [sys.executable, "-m", "onmt_xl.eole"]


def check_eole(systems: List[str]) -> None:
    """A usage error, before any work, when Eole is missing or a system is not ported to it."""
    if importlib.util.find_spec("eole") is None:
        raise XLUsageError(None, None, "--framework eole needs Eole 0.6.4 in this Python: `bash tools/install.sh eole`")
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

    def __init__(self, runner, systems: List[str], average: int = 1):
        self.runner, self.systems, self.average = runner, list(systems), average
        self.root = runner.path("eole")

    def config(self, system: str) -> Dict[str, Any]:
        return eole_config(system, str(self.runner.workdir), self.runner.overrides, self.runner.preset)

    def _eole(self, args: List[Any], log: Path, echo: str = "", tag: str = "") -> float:
        return self.runner._run(eole_command() + list(args), log, self.root / "commands.sh", echo=echo, tag=tag)

    def _write_config(self, system: str) -> Path:
        path = self.root / f"{system}.yaml"
        path.write_text(yaml.safe_dump(self.config(system), sort_keys=False), encoding="utf-8")
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

    def train(self, system: str) -> Dict[str, Any]:
        model = Path(self.config(system)["training"]["model_path"])
        done = model / "done.json"
        if done.exists():
            return json.loads(done.read_text())
        if model.exists():  # an interrupted training: Eole's steps are not resumed exactly, so start again
            say(f"  {system}: removing the unfinished {model}")
            shutil.rmtree(model)
        say(f"eole train {system}")
        log = self.root / "logs" / f"train_{system}.log"
        log.unlink(missing_ok=True)
        seconds = self._eole(["train", "-config", self._write_config(system)], log, echo="Step",
                             tag=f"{system}: " if self.runner.parallel > 1 else "")
        found = PARAMETERS.findall(log.read_text(encoding="utf-8"))
        if not (model / "config.json").exists() or not found:
            raise RuntimeError(f"eole train {system} finished without a model in {model}; see {log}")
        info = dict(system=system, framework="eole", train_seconds=seconds, parameters=int(found[-1]),
                    threads=self.runner.threads, device=self.runner.device_name())
        done.write_text(json.dumps(info, indent=2))
        return info

    def final_model(self, system: str) -> Path:
        """The model ``system`` is translated with: its model directory, or with :attr:`average` > 1 the average
        of its last checkpoints (``average{N}_step_{S}/`` beside them, made once)."""
        model = Path(self.config(system)["training"]["model_path"])
        steps = sorted((int(d.name.split("_", 1)[1]), d) for d in model.glob("step_*") if d.name[5:].isdigit())
        if self.average <= 1 or len(steps) < 2:
            return model
        chosen = [d for _, d in steps[-self.average:]]
        out = model / f"average{len(chosen)}_step_{steps[-1][0]}"
        if not out.exists():
            say(f"  {system}: averaging the checkpoints of steps {', '.join(d.name[5:] for d in chosen)}")
            average_eole_models(chosen, out)
        return out

    def predict(self, system: str) -> Path:
        hyp = self.root / "hyp" / f"{system}.test"
        if hyp.exists():
            return hyp
        hyp.parent.mkdir(parents=True, exist_ok=True)
        tmp = hyp.with_name(hyp.name + ".partial")
        say(f"  eole predict {system} [test]")
        args = ["predict", "-model_path", self.final_model(system), "-src",
                self.runner.path("data", "test.src"), "-output", tmp, "-beam_size", self.runner.beam_size,
                "-batch_size", 64, "-batch_type", "sents", "-seed", self.config(system)["seed"]]
        if self.runner.gpu:
            args += ["-gpu_ranks", 0, "-world_size", 1]
        with ticking(f"eole predict {system} [test]"):
            seconds = self._eole(args, self.root / "logs" / f"predict_{system}.log")
        tmp.replace(hyp)
        done = Path(self.config(system)["training"]["model_path"]) / "done.json"
        done.write_text(json.dumps({**json.loads(done.read_text()), "translate_seconds": seconds}, indent=2))
        return hyp

    def _system(self, system: str) -> Dict[str, Any]:
        self.train(system)
        self.predict(system)
        return json.loads((Path(self.config(system)["training"]["model_path"]) / "done.json").read_text())

    def run(self) -> Dict[str, Any]:
        self.root.mkdir(parents=True, exist_ok=True)
        self.vocab()
        with ThreadPoolExecutor(max_workers=self.runner.parallel) as pool:
            infos = dict(zip(self.systems, pool.map(self._system, self.systems)))
        return self.scores(infos)

    def scores(self, infos: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
        """``results.json``: the preorderer's scores, per system BLEU/chrF (and the p-value against the baseline),
        in the shape of :func:`onmt_xl.experiments.scoring.collect` so that the demo's summary prints it."""
        from onmt_xl.experiments.scoring import paired_bootstrap, scores_note, text_scores, tokenization_of

        ref = read_lines(self.runner.path("data", "test.ref"))
        hyps = {s: read_lines(self.root / "hyp" / f"{s}.test") for s in self.systems}
        tokenization = tokenization_of(self.runner.workdir)
        out: Dict[str, Any] = {"framework": "eole", "jobs": {}, "scores": scores_note(tokenization)}
        pre = self.runner.path("preorderer.json")
        if pre.exists():
            out["preorderer"] = json.loads(pre.read_text())
        check = self.runner.path("monotone_check.json")
        if check.exists():
            out["monotone_check"] = json.loads(check.read_text())
        for s, hyp in hyps.items():
            if len(hyp) != len(ref):
                raise ValueError(f"{self.root / 'hyp' / (s + '.test')}: {len(hyp)} lines but {len(ref)} references")
            test = dict(text_scores(hyp, ref, tokenization), translate_seconds=infos[s].get("translate_seconds"))
            out["jobs"][s] = dict(infos[s], variants={"test": test})
        if "baseline" in hyps:
            others = {s: h for s, h in hyps.items() if s != "baseline"}
            for s, p in paired_bootstrap(others, hyps["baseline"], ref).items():
                out["jobs"][s]["variants"]["test"]["p_bootstrap"] = p
        (self.root / "results.json").write_text(json.dumps(out, indent=2))
        return out


def run_eole_demo(corpus: Corpus, args, summary) -> int:
    """``onmt-xl demo --framework eole``: the OpenNMT-py demo's data stages, then :class:`EoleDemo`."""
    check_eole(args.systems)
    from onmt_xl.experiments.runner import Runner

    runner = Runner(corpus, args.workdir, [], preset=getattr(args, "preset", "demo"), train_steps=args.train_steps,
                    beam_size=args.beam_size,
                    gpu={"auto": None, "yes": True, "no": False}[args.gpu], parallel=args.parallel,
                    preorder_iterations=args.preorder_iterations, tokenize=getattr(args, "tokenize", None),
                    subword_size=getattr(args, "subword_size", None))
    runner.workdir.mkdir(parents=True, exist_ok=True)
    lock = runner._lock_workdir()  # noqa: F841 - held for the process's lifetime
    runner.stage_data()
    runner.tokenize(runner.tokenize_as, runner.subword_size)  # onmt-xl pipeline: raw text (tokenization.py)
    runner.align()
    runner.preorder()
    if runner.monotone_gate(args.systems, args.if_monotone):
        return 0
    average = getattr(args, "average", None) or 1
    if average > 1:  # the last checkpoints every save_checkpoint_steps are kept to average them
        runner.overrides.update(keep_checkpoint=average)
        if getattr(args, "eole_every", None):
            runner.overrides.update(save_checkpoint_steps=args.eole_every)
    demo = EoleDemo(runner, args.systems, average)
    res = demo.run()
    from onmt_xl.experiments.usage import next_steps

    models = {s: demo.final_model(s) for s in args.systems}
    say(f"results: {runner.path('eole', 'results.json')}\n" + summary(res)
        + next_steps(runner, args.systems, "eole", models))
    return 0

