"""Training and translating one job: ``jobs/NAME/`` in the work directory.

A job is one trained model (a system of :data:`onmt_xl.experiments.systems.SYSTEMS`, a seed and option
overrides); a *variant* is one ``onmt_translate`` run of it (clean test set, swapped words, oracle XL indices
from test-side alignments, forced decoding of a gold reference for attention AER, the Sim metric, a level of the
payoff curve: ``payoffNNN``, :mod:`onmt_xl.experiments.payoff`)::

    jobs/NAME/ config.yaml, train.log, commands.sh, done.json, hyp.VARIANT, translate_VARIANT.log

A killed training resumes from its last whole checkpoint with ``-train_from CKPT -xl_exact_resume``, which continues the
data and the RNG states where the checkpoint left them, so it ends as an uninterrupted run would; a job whose
configuration changed is refused, except that a finished job given more ``train_steps`` resumes to them. A job
written with onmt_xl's legacy option and encoder names (before the ``xl_`` prefix) is the same job under the new
names (:func:`onmt_xl.opennmt.names.upgrade_config`); its logs are read under either name.
"""

from __future__ import annotations

import json
import re
import statistics
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.configs import LEGACY_INXL_INIT, config, uses_inxl
from onmt_xl.experiments.curve import checkpoints
from onmt_xl.experiments.plan import XLPOS_SUFFIX, Job
from onmt_xl.experiments.stock import count_checkpoint_parameters, read_lines, say, stock
from onmt_xl.experiments.systems import SYSTEMS
from onmt_xl.opennmt.names import LEGACY_NOTE, upgrade_config
from onmt_xl.core.progress import ticking

TOK_S = re.compile(r"Step\s+(\d+)/\s*\d+;.*?(\d+)/\s*(\d+) tok/s")

#: Options that say where a job runs, not what it is: a job trained on a GPU resumes or reports on a CPU.
DEVICE_OPTIONS = ("gpu_ranks", "world_size", "xl_cpu_precision")  # xl_cpu_precision: its resolution is in done.json
#: what every job trains with: onmt_xl's CPU kernels (the same for every system, so comparisons stay fair) and
#: RNG states in every checkpoint, so that a killed job resumes exactly
RUN_OPTIONS = {"xl_cpu_kernels": "fast", "xl_exact_resume": True}
#: when a job validates, checkpoints and reports: a job asked for more steps may change them (the pipeline derives
#: them from the steps) and stays the same model, so they are not part of what a changed configuration is judged on
SCHEDULE_OPTIONS = ("valid_steps", "save_checkpoint_steps", "keep_checkpoint", "report_every")

#: The source file each variant translates (others: ``test.VARIANT.src``, the swapped-word sets).
VARIANT_SOURCES = {"test": "test.src", "oracle": "test.src", "test_align": "test.src", "gold_align": "gold.src",
                   "valid": "valid.src"}


def whole_checkpoint(path: Path) -> bool:
    """Whether ``path`` is a whole ``torch.save`` file: a zip archive with its central directory (written last)
    and its pickle."""
    try:
        with zipfile.ZipFile(path) as z:
            return any(name.endswith("data.pkl") for name in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def whole_checkpoints(jd: Path, name: str) -> List[Path]:
    """``jd``'s ``model_step_*.pt`` by step, after setting aside (as ``*.pt.broken``) the last ones that are not
    whole: OpenNMT writes a checkpoint in place, so a run killed while saving leaves it cut short, and resuming
    from it would fail in every later attempt. The one before it resumes exactly as well."""
    ckpts = [path for _, path in sorted(checkpoints(jd).items())]
    while ckpts and not whole_checkpoint(ckpts[-1]):
        broken = ckpts.pop()
        broken.replace(broken.with_name(broken.name + ".broken"))
        say(f"  {name}: {broken.name} is cut short (the run stopped while saving it): set aside as "
            f"{broken.name}.broken; resuming from {ckpts[-1].name if ckpts else 'step 0'}")
    return ckpts


def _identity(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """A job configuration without :data:`DEVICE_OPTIONS`, :data:`SCHEDULE_OPTIONS` and ``train_steps`` (what a
    changed configuration is judged on; ``train_steps`` may grow: the job resumes to them), legacy names read as the new
    ones (a job configured before the ``xl_`` prefix is the same job), and InXL's start spelled out as it was trained:
    one configured before the configurations named it started from
    :data:`~onmt_xl.experiments.configs.LEGACY_INXL_INIT`."""
    cfg = upgrade_config(cfg)
    if uses_inxl(cfg) and "xl_inxl_init" not in cfg:
        cfg["xl_inxl_init"] = LEGACY_INXL_INIT
    return {k: v for k, v in cfg.items()
            if k not in DEVICE_OPTIONS + tuple(RUN_OPTIONS) + SCHEDULE_OPTIONS + ("train_steps",)}


def _leaves(cfg: Any, place: tuple = ()):
    """The ``(place, string)`` of every string in a configuration, through its mappings and lists."""
    if isinstance(cfg, dict):
        for key, value in cfg.items():
            yield from _leaves(value, place + (key,))
    elif isinstance(cfg, list):
        for i, value in enumerate(cfg):
            yield from _leaves(value, place + (i,))
    elif isinstance(cfg, str):
        yield place, cfg


def _moved(cfg: Any, old: str, new: str) -> Any:
    """``cfg`` with every path under directory ``old`` (or ``old`` itself) moved under ``new``."""
    if isinstance(cfg, dict):
        return {key: _moved(value, old, new) for key, value in cfg.items()}
    if isinstance(cfg, list):
        return [_moved(value, old, new) for value in cfg]
    if isinstance(cfg, str) and (cfg == old or cfg.startswith(old + "/")):
        return new + cfg[len(old):]
    return cfg


def in_this_workdir(old: Dict[str, Any], now: Dict[str, Any], workdir: str) -> Dict[str, Any]:
    """``old`` (a configuration written in a work directory since moved or copied to ``workdir``) with its paths
    under that former directory moved to ``workdir``, so that a moved work directory is judged the same run. The
    former directory is read from the paths themselves: where ``now`` has ``workdir/REST`` and ``old`` ends in
    ``/REST`` at the same place, ``old`` minus ``/REST`` (the most frequent such prefix). Paths elsewhere (a
    corpus outside the work directory) are compared as they are."""
    root = workdir.rstrip("/")
    ours = dict(_leaves(now))
    votes: Counter = Counter()
    for place, value in _leaves(old):
        mine = ours.get(place)
        if isinstance(mine, str) and mine.startswith(root + "/"):
            rest = mine[len(root):]
            if value.endswith(rest) and value != rest and value != mine:
                votes[value[:-len(rest)]] += 1
    if not votes:
        return old
    return _moved(old, votes.most_common(1)[0][0], root)


def _differences(old: Dict[str, Any], new: Dict[str, Any], shown: int = 3) -> str:
    """The options whose value differs between two :func:`_identity` configurations, ``name (old there, new now)``,
    the first ``shown`` of them."""
    keys = [k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
    text = ", ".join(f"{k} ({old.get(k, 'unset')} there, {new.get(k, 'unset')} now)" for k in keys[:shown])
    return text + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def positions_change(was: Optional[str], now: Optional[str]) -> Optional[str]:
    """How a trained job's training positions differ from what a run asks (the ``xl_positions_suffix`` of each:
    :data:`XLPOS_SUFFIX` for cross-fitted ones), in the words of ``--training-positions``; None when they agree."""
    def named(suffix: Optional[str]) -> str:
        return "crossfit" if suffix == XLPOS_SUFFIX else "preorderer"

    if named(was) == named(now):
        return None
    return (f"its training positions (it trained with --training-positions {named(was)}, this run asks for "
            f"{named(now)}: pass --training-positions {named(was)} to go on with it)")


def _per_attempt(log_text: str, options, pick) -> str:
    """What ``pick`` (the attempt's last line naming one of ``options``, a string or a tuple of them, or None) says
    of each attempt of a training log, in order, repeats merged ("bf16, then fp32"). An attempt runs from one
    "Starting training on" line to the next. The line saying a legacy name was read (:func:`onmt_xl.opennmt.names.note`)
    names options without saying what they resolved to: it is left out."""
    options = (options,) if isinstance(options, str) else tuple(options)
    attempts = log_text.split("Starting training on")[:-1] or [log_text]
    chosen: List[str] = []
    for attempt in attempts:
        lines = [line for line in attempt.splitlines()
                 if any(option in line for option in options) and LEGACY_NOTE not in line]
        this = pick(lines[-1] if lines else None)
        if not chosen or chosen[-1] != this:
            chosen.append(this)
    return ", then ".join(chosen)


def resolved_precision(log_text: str) -> str:
    """What ``-xl_cpu_precision`` resolved to in a training log: "bf16" or "fp32", or, for a job resumed on
    machines that differ, each attempt's in order ("bf16, then fp32"). One without a bf16 line ran in fp32. Logs
    written before the ``xl_`` prefix name it ``-cpu_precision``."""
    return _per_attempt(log_text, ("-xl_cpu_precision", "-cpu_precision"),
                        lambda line: "bf16" if line and "bf16 autocast" in line else "fp32")


def resolved_cpu(log_text: str) -> str:
    """The CPU each attempt of a training log computed on, as its ``-xl_cpu_precision`` line names it: the bf16
    units where it had them ("AVX512-BF16 and AMX"), else PyTorch's vector ISA ("AVX2"); "?" for an attempt
    without such a line (fp32 asked for, a GPU, a log older than the evidence in it); in order, as
    :func:`resolved_precision`. CPUs that differ here run other bf16 kernels (oneDNN's AMX ones where there
    is AMX), which need not sum in the same order, so a run's last digits differ between them."""
    def pick(line):
        found = line and _CPU_EVIDENCE.search(line)
        if not found:
            return "?"
        evidence = found.group(1)
        return evidence.split(" with ", 1)[1] if " with " in evidence else evidence.split(",", 1)[0]

    return _per_attempt(log_text, ("-xl_cpu_precision", "-cpu_precision"), pick)


_CPU_EVIDENCE = re.compile(r"this CPU(?: \(|: )([^()]+)")  # the evidence of onmt_xl.core.precision.native_bf16


def resolved_dropout_mask(log_text: str) -> str:
    """Which dropout masks each attempt of a training log drew: "fast" or "stock" (an attempt that logs no choice:
    a GPU, stock kernels, or a version without the option), in order, as :func:`resolved_precision`. Logs name
    them on a ``-xl_cpu_kernels`` line, or (before it) a ``-cpu_dropout_mask`` one."""
    def pick(line):
        return "fast" if line and ("-cpu_dropout_mask fast" in line or "fast dropout masks" in line) else "stock"

    attempts = _per_attempt(log_text, "-xl_cpu_kernels", pick)
    legacy = _per_attempt(log_text, "-cpu_dropout_mask", pick)
    return attempts if "-xl_cpu_kernels" in log_text else legacy


def exact_resume_log(log_text: str) -> Optional[bool]:
    """Whether every resume in a training log continued the data and the RNG states (None: never resumed)."""
    resumes = log_text.count("Loading checkpoint from")
    if not resumes:
        return None
    return log_text.count("then restoring the checkpoint's RNG states") == resumes


def train_throughput(log_text: str) -> Optional[float]:
    """Median source tokens/second of OpenNMT's training reports, the first one (warm-up) left out:
    robust to a report slowed down by something else on the machine (or a paused run)."""
    rates = [int(m.group(2)) for m in TOK_S.finditer(log_text)]
    rates = rates[1:] if len(rates) > 1 else rates
    return statistics.median(rates) if rates else None


class JobStages:
    """Train and translate jobs; mixed into :class:`onmt_xl.experiments.runner.Runner` (which provides
    ``path``, ``workdir``, ``overrides``, ``inxl_init``, ``preset``, ``train_steps``, ``beam_size``, ``gpu``,
    ``parallel``, ``threads``, ``out_of_time``, ``preorderer_path``, ``crossfit_training``, ``_run`` and
    ``translate_configs``)."""

    def job_config(self, job: Job) -> Dict[str, Any]:
        steps = {"train_steps": job.train_steps} if job.train_steps else {}
        cfg = config(job.system, str(self.workdir), {**self.overrides, "seed": job.seed, **steps, **job.overrides},
                     self.preset, inxl_init=self.inxl_init)
        cfg["save_model"] = str(self.path("jobs", job.name, "model"))
        cfg["save_data"] = str(self.path("jobs", job.name, "samples"))
        # auto: bf16 where the CPU computes it natively
        cfg["xl_cpu_precision"] = upgrade_config(job.overrides).get("xl_cpu_precision", "auto")
        cfg.update(RUN_OPTIONS)  # every system alike
        if job.preorder_pairs and "xl_preorderer" in cfg:
            cfg["xl_preorderer"] = str(self.preorderer_path(job.preorder_pairs))
        if job.xl_train == "crossfit":  # reports/PREREG_xlpos.md: the training split's positions are cross-fitted
            if not SYSTEMS[job.system].uses_preorderer:
                raise ValueError(f"job {job.name}: xl_train=crossfit needs an XL or pre-reordering system")
            cfg["xl_positions_suffix"] = XLPOS_SUFFIX
            cfg["data"]["train"] = self.crossfit_training(cfg["data"]["train"])
        if job.xl_train == "align":
            if not SYSTEMS[job.system].uses_preorderer:
                raise ValueError(f"job {job.name}: xl_train=align needs an XL or pre-reordering system")
            cfg["xl_source"] = "align"
            cfg.pop("xl_preorderer", None)
            for split in ("train", "valid"):
                cfg["data"][split]["path_align"] = str(self.path("align", f"{split}.gdfa"))
        return cfg

    def device_name(self) -> str:
        if not self.gpu:
            return "cpu"
        import torch

        return torch.cuda.get_device_name(0)

    def steps(self, job: Job) -> int:
        return job.train_steps or self.train_steps

    def model_path(self, job: Job) -> Path:
        return self.path("jobs", job.name, f"model_step_{self.steps(job)}.pt")

    def final_model_path(self, job: Job) -> Path:
        """Where :meth:`final_model` is, made or not: ``model_step_STEP.pt``, or ``averageN_step_STEP.pt``."""
        step = job.final_step or self.steps(job)
        name = f"model_step_{step}.pt" if job.average <= 1 else f"average{job.average}_step_{step}.pt"
        return self.path("jobs", job.name, name)

    def averaged_checkpoints(self, job: Job) -> List[Path]:
        """The checkpoints :meth:`final_model` averages: ``final_step`` and the ``average`` - 1 kept before it,
        every ``save_checkpoint_steps`` (just the one without averaging)."""
        step = job.final_step or self.steps(job)
        every = self.job_config(job)["save_checkpoint_steps"] if job.average > 1 else 0
        return [self.path("jobs", job.name, f"model_step_{step - every * i}.pt")
                for i in range(max(job.average, 1))][::-1]

    def has_final_model(self, job: Job) -> bool:
        """Whether :meth:`final_model` exists or can be made from the job's checkpoints (a job restored from an
        archive, or pruned, may have neither)."""
        return self.final_model_path(job).exists() or all(c.exists() for c in self.averaged_checkpoints(job))

    def final_model(self, job: Job) -> Path:
        """The model ``job``'s variants are translated with: its checkpoint at ``final_step`` (default: the
        last), or with ``average`` > 1 the average of that and the kept checkpoints before it, every
        ``save_checkpoint_steps`` (``onmt_average_models``, as Vaswani et al. 2017 and Ding et al. 2020 do),
        made once."""
        out = self.final_model_path(job)
        if job.average > 1 and not out.exists():
            ckpts = self.averaged_checkpoints(job)
            missing = [str(c) for c in ckpts if not c.exists()]
            if missing:
                raise FileNotFoundError(f"job {job.name}: averaging needs {', '.join(missing)}")
            tmp = out.with_name(out.name + ".partial")
            self._run([stock("onmt_average_models"), "-models", *ckpts, "-output", tmp],
                      self.path("jobs", job.name, "average.log"), self.path("jobs", job.name, "commands.sh"))
            tmp.replace(out)
        return out

    def config_problem(self, job: Job) -> Optional[XLUsageError]:
        """Why ``job``'s configuration cannot go on from ``jobs/NAME/config.yaml`` (what it was trained with), or
        None: another model, or fewer steps. Reads only."""
        cfg_path = self.path("jobs", job.name, "config.yaml")
        if not cfg_path.exists():
            return None
        cfg = self.job_config(job)
        old = in_this_workdir(yaml.safe_load(cfg_path.read_text(encoding="utf-8")), cfg, str(self.workdir))
        was, now = _identity(old), _identity(cfg)
        if was == now and cfg["train_steps"] >= old["train_steps"]:
            return None
        moved = positions_change(old.get("xl_positions_suffix"), cfg.get("xl_positions_suffix"))
        what = moved or (_differences(was, now)
                         or f"train_steps ({old['train_steps']} there, {cfg['train_steps']} now: fewer steps)")
        return XLUsageError(str(cfg_path), None, f"differs from what job {job.name} needs now in {what}: use another "
                            "--workdir, or delete that job directory to retrain it")

    def _checked_config(self, job: Job) -> Dict[str, Any]:
        """The job's configuration; refuses one that differs from ``jobs/NAME/config.yaml`` (:meth:`config_problem`);
        more steps than it was trained to reopen a finished job, which resumes from its last checkpoint."""
        problem = self.config_problem(job)
        if problem is not None:
            raise problem
        cfg = self.job_config(job)
        cfg_path = self.path("jobs", job.name, "config.yaml")
        if not cfg_path.exists():
            return cfg
        old = yaml.safe_load(cfg_path.read_text(encoding="utf-8"))
        if cfg["train_steps"] > old["train_steps"] and self.path("jobs", job.name, "done.json").exists():
            last = max(checkpoints(self.path("jobs", job.name)), default=None)
            start = (f"from its step-{last} checkpoint" if last
                     else "again from step 0 (none of its checkpoints is here)")
            say(f"  {job.name}: extending from {old['train_steps']} to {cfg['train_steps']} steps, {start}")
            self.path("jobs", job.name, "done.json").unlink()
        return cfg

    def train(self, job: Job) -> bool:
        """Train ``job`` unless done; resumes from its last checkpoint. False when the time budget is spent."""
        jd = self.path("jobs", job.name)
        cfg = self._checked_config(job)
        if (jd / "done.json").exists():
            return True
        if self.out_of_time():
            return False
        jd.mkdir(parents=True, exist_ok=True)
        (jd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        ckpts = whole_checkpoints(jd, job.name)
        if self.model_path(job).exists():  # trained to the end, but the run stopped before recording it
            say(f"  {job.name}: already trained to step {self.steps(job)}; recorded without training again")
            self._write_done(job, None, None)  # its training time is unknown: left out of the time summary
            return True
        args = [stock("onmt_train"), "-config", jd / "config.yaml"]
        resumed = ckpts[-1].name if ckpts else None
        if ckpts:
            args += ["-train_from", ckpts[-1], "-xl_exact_resume"]
            say(f"  resuming {job.name} from {resumed}")
        seconds = self._run(args, jd / "train.log", jd / "commands.sh", echo="Step",
                            tag=f"{job.name}: " if self.parallel > 1 else "")
        if not self.model_path(job).exists():
            raise RuntimeError(f"onmt_train finished but {self.model_path(job)} is missing; see {jd / 'train.log'}")
        self._write_done(job, seconds, resumed)
        return True

    def _write_done(self, job: Job, seconds: Optional[float], resumed: Optional[str]) -> None:
        jd = self.path("jobs", job.name)
        log = (jd / "train.log").read_text(encoding="utf-8")
        info = dict(system=job.system, seed=job.seed, overrides=job.overrides, xl_train=job.xl_train,
                    train_seconds=seconds, resumed_from=resumed,  # a resumed job: the last attempt's time only
                    resumed_exactly=exact_resume_log(log),
                    concurrent_jobs=self.parallel, threads=self.threads,
                    device=self.device_name(),  # what tok/s was measured under
                    **count_checkpoint_parameters(str(self.model_path(job))),  # trainable; buffers apart
                    src_tok_s=train_throughput(log), precision=resolved_precision(log),
                    dropout_mask=resolved_dropout_mask(log), cpu=resolved_cpu(log) if not self.gpu else None)
        (jd / "done.json").write_text(json.dumps(info, indent=2))

    def variant_output(self, job: Job, variant: str) -> Optional[Path]:
        """Where ``variant`` of ``job`` is written; None when it does not apply (an oracle of a system without
        XL indices or reordering, attention AER without a gold set)."""
        jd = self.path("jobs", job.name)
        if variant == "sim":
            return jd / "sim.json"
        if variant == "oracle" and not SYSTEMS[job.system].uses_preorderer:
            return None
        if variant == "gold_align" and not self.path("data", "gold.src").exists():
            return None
        return jd / f"hyp.{variant}"

    def outputs_missing(self, job: Job) -> List[str]:
        """The variants of ``job`` that ``translate`` would still produce."""
        outputs = {v: self.variant_output(job, v) for v in job.variants}
        return [v for v, out in outputs.items() if out is not None and not out.exists()]

    def translate_missing(self, job: Job, variant: str) -> Optional[float]:
        """:meth:`translate` ``variant`` of ``job`` unless its output exists; the seconds it took, None if it
        existed."""
        if self.variant_output(job, variant).exists():
            return None
        start = time.perf_counter()
        self.translate(job, variant)
        return time.perf_counter() - start

    def translate(self, job: Job, variant: str) -> None:
        hyp = self.variant_output(job, variant)
        if hyp is None:
            if variant == "gold_align":
                say(f"  {job.name}: no gold alignment set given, skipping {variant}")
            return
        if hyp.exists():
            return
        if variant == "sim":
            return self._sim(job)
        jd = self.path("jobs", job.name)
        tmp = jd / f"hyp.{variant}.partial"
        say(f"  onmt_translate {job.name} [{variant}]")
        args = self._translate_args(job, variant, tmp)
        with ticking(f"onmt_translate {job.name} [{variant}]"):
            seconds = self._run(args, jd / f"translate_{variant}.log", jd / "commands.sh")
        tmp.replace(hyp)
        timing = jd / "translate_seconds.json"
        times = json.loads(timing.read_text()) if timing.exists() else {}
        times[variant] = seconds
        timing.write_text(json.dumps(times, indent=2))

    def translate_config(self, job: Job) -> Path:
        """``jobs/NAME/translate.yaml``: ``onmt_translate``'s options for raw text with the job's final model (raw
        text in, ``onmt_tokenize`` then the system's transform, detokenized text out), as the test set is
        translated and as a user translates new text (``onmt_translate -config translate.yaml -src IN -output OUT``).
        Written once a run with :meth:`_serve_config`: by the first translation, or at the run's end where it
        translated nothing (:attr:`translate_configs` remembers what this run wrote)."""
        cfg = self.translate_options(job, self.final_model(job))
        path = self.path("jobs", job.name, "translate.yaml")
        if self.translate_configs.get(path) != cfg:
            path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
            self._serve_config(job, cfg)
            self.translate_configs[path] = cfg
        return path

    def translate_options(self, job: Job, model: Path) -> Dict[str, Any]:
        """:meth:`translate_config`'s options for any checkpoint ``model`` of ``job`` (raw text; without a
        tokenization, the text as given)."""
        transform = SYSTEMS[job.system].translate_transform
        cfg: Dict[str, Any] = {"model": str(model),
                               "transforms": (["onmt_tokenize"] if self.tokenization.active else [])
                               + ([transform] if transform else []),
                               **self.tokenization.transform_options(), "beam_size": self.beam_size,
                               "batch_size": 64, "batch_type": "sents", "xl_cpu_precision": "auto",
                               "xl_cpu_kernels": RUN_OPTIONS["xl_cpu_kernels"]}
        if not cfg["transforms"]:  # tokenized text and a stock system: onmt_translate takes no empty list
            del cfg["transforms"]
        if transform:
            cfg["xl_preorderer"] = str(self.preorderer_path(job.preorder_pairs))
        if self.gpu:
            cfg["gpu"] = 0
        return cfg

    def _serve_config(self, job: Job, translate: Dict[str, Any]) -> Path:
        """``jobs/NAME/serve.json``: ``onmt_server --model_config`` for the job's model on raw text. The server
        runs the model's transforms on the source but no ``apply_reverse``, so its own pyonmttok ``tokenizer``
        (the same settings) tokenizes the request and detokenizes the answer; ``xl_position`` follows it."""
        model = Path(translate["model"])
        opt = {k: v for k, v in translate.items()  # the CPU options too: the same numbers as onmt_translate
               if k in ("beam_size", "xl_preorderer", "gpu", "xl_cpu_precision", "xl_cpu_kernels")}
        transforms = [t for t in translate.get("transforms", []) if t != "onmt_tokenize"]
        if transforms:
            opt["transforms"] = transforms
        kwargs = self.tokenization.kwargs()
        tokenizer = {"type": "pyonmttok", "mode": kwargs.pop("mode"), "params": kwargs}
        conf = {"models_root": str(model.parent),
                "models": [{"id": 100, "model": model.name, "load": True, "opt": opt, "tokenizer": tokenizer}]}
        path = self.path("jobs", job.name, "serve.json")
        path.write_text(json.dumps(conf, indent=2) + "\n", encoding="utf-8")
        return path

    def _translate_args(self, job: Job, variant: str, out: Path) -> List[Any]:
        from onmt_xl.experiments.payoff import is_level_variant

        data = self.path("data")
        payoff = is_level_variant(variant)  # the test pairs at one level of the payoff curve (positions from a file)
        src = data / ("test.src" if payoff else VARIANT_SOURCES.get(variant, f"test.{variant}.src"))
        aligning = variant in ("gold_align", "test_align")
        if self.tokenization.active:  # raw text: the options travel in translate.yaml
            if aligning or payoff or variant in ("oracle", "sim"):
                raise ValueError(f"variant {variant} reads tokenized text: give tokenized input (--tokenize none)")
            return [stock("onmt_translate"), "-config", self.translate_config(job), "-src", src, "-output", out,
                    "-seed", job.seed]
        model = self.alignment_model(job) if aligning else self.final_model(job)
        args = [stock("onmt_translate"), "-model", model, "-src", src, "-output", out,
                "-beam_size", self.beam_size, "-batch_size", 64, "-batch_type", "sents", "-seed", job.seed,
                "-xl_cpu_precision", "auto", "-xl_cpu_kernels", RUN_OPTIONS["xl_cpu_kernels"]]
        if aligning:
            args += ["-tgt", data / ("gold.tgt" if variant == "gold_align" else "test.ref"), "-report_align",
                     "-gold_align"]
        transform = SYSTEMS[job.system].translate_transform
        if transform:
            args += ["-transforms", transform]
            if variant == "oracle":  # test-side information: labelled as such in the report
                args += ["-xl_source", "align", "-xl_align_path", self.path("align", "test.gdfa")]
            elif payoff:  # the test variant's options, its input's positions read from data/test.src.payoffNNN.xlpos
                args += ["-xl_preorderer", self.preorderer_path(job.preorder_pairs),
                         "-xl_positions_suffix", f".{variant}.xlpos"]
            elif job.xl_train == "align":
                raise ValueError(f"job {job.name} was trained on oracle XL indices; translate it with the 'oracle' "
                                 "variant")
            else:
                args += ["-xl_preorderer", self.preorderer_path(job.preorder_pairs)]
        if self.gpu:
            args += ["-gpu", 0]
        return args

    def alignment_model(self, job: Job) -> Path:
        """The model the job is translated with (:meth:`final_model`: its last checkpoint, or the average of its
        last ones) with its decoder set to report the cross-attention of the penultimate layer averaged over all
        heads (Ding et al. 2020 Sec. 4.3, after Garg et al. 2019).

        OpenNMT reads ``alignment_layer``/``alignment_heads`` from the checkpoint's options; they select
        what ``-report_align`` reads and do not change training (``lambda_align`` is 0), so they are set
        on a copy (without optimizer state) instead of in every training configuration: ``model_align.pt``
        for a job translated with its last checkpoint, ``averageN_step_STEP_align.pt`` for an averaged one.
        """
        model = self.final_model(job)
        name = "model_align.pt" if model == self.model_path(job) else f"{model.stem}_align.pt"
        out = self.path("jobs", job.name, name)
        if not out.exists():
            import torch

            import onmt_xl

            onmt_xl.register()
            ckpt = torch.load(str(model), map_location="cpu", weights_only=False)  # our own file
            opt = ckpt["opt"]
            opt.alignment_layer = max(opt.dec_layers - 2, 0)
            opt.alignment_heads = 0
            ckpt.pop("optim", None)
            tmp = out.with_name(out.name + ".partial")
            torch.save(ckpt, str(tmp))
            tmp.replace(out)
        return out

    def _sim(self, job: Job) -> None:
        from onmt_xl.core.align.pharaoh import read_pharaoh
        from onmt_xl.experiments.analysis import sim_metric

        out = self.path("jobs", job.name, "sim.json")
        src = [l.split() for l in read_lines(self.path("data", "test.src"))]
        links = read_pharaoh(str(self.path("align", "test.gdfa")), [len(s) for s in src])
        score = sim_metric(str(self.model_path(job)), src, links)
        out.write_text(json.dumps(score._asdict(), indent=2))
        say(f"  Sim ({job.name}) = {score.sim:.4f} over {score.words} words (original positions' PE: "
            f"{score.pe_sim:.4f})")

    def retrain_if_restored_without_checkpoint(self, job: Job) -> None:
        """A job restored from an archive has no checkpoint: a variant it lacks needs the model again."""
        jd = self.path("jobs", job.name)
        if not (jd / "done.json").exists() or self.model_path(job).exists():
            return
        missing = self.outputs_missing(job)
        if missing:
            say(f"  {job.name}: restored without its checkpoint and lacks {', '.join(missing)}: retraining it")
            for p in list(jd.glob("hyp.*")) + [jd / "done.json", jd / "translate_seconds.json", jd / "sim.json"]:
                p.unlink(missing_ok=True)
