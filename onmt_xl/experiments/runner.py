"""``onmt-xl experiments``: the papers' experiments on one tokenized corpus, resumable.

One command aligns, trains the preorderer, builds the vocabularies, trains every system of the chosen
experiments with the same model size, data, steps and seed through the stock ``onmt_build_vocab`` /
``onmt_train`` / ``onmt_translate``, scores with sacrebleu and writes a markdown report with plots.

Work directory layout (every stage is skipped when its outputs exist, so a killed run resumes)::

    data/      train/valid/test (+ swapped test sources, gold AER set)   stage_data
    align/     eflomal grow-diag-final-and of test+valid+train, one run    align
    preorderer.xlp, preorderer.json                                        preorder
    vocab.src, vocab.tgt                                                   vocab
    jobs/NAME/ config.yaml, train.log, commands.sh, done.json, hyp.VARIANT, translate_VARIANT.log
    manifest.json (machine, versions, wall times), results.json

A job is one trained model (a system of :data:`onmt_xl.experiments.configs.SYSTEMS`, a seed and option overrides);
a *variant* is one ``onmt_translate`` run of it (clean test set, swapped words, oracle XL indices from
test-side alignments, forced decoding of a gold reference for attention AER). A killed training
restarts from its last checkpoint (``-train_from``); a job whose configuration changed is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

import yaml

from onmt_xl.experiments.configs import PRESETS, PREREORDER, SYSTEMS, XL, config
from onmt_xl.errors import XLInputError
from onmt_xl.experiments.pipeline import _run, _stock, count_checkpoint_parameters
from onmt_xl.experiments.plan import (AER_SYSTEMS, EXPERIMENTS, LATE_SYSTEMS, MAIN_SYSTEMS, NOISE_RATIOS,  # noqa: F401
                                     ROBUST_SYSTEMS, SEEDED_SYSTEMS, SIM_SYSTEMS, SWAP_RATIOS, Job, plan, swap_words)
from onmt_xl.experiments.archive import atomic_file, restore, save_alignments, save_job, save_run

TOK_S = re.compile(r"Step\s+(\d+)/\s*\d+;.*?(\d+)/\s*(\d+) tok/s")


def say(msg: str) -> None:
    sys.stdout.write(f"[onmt-xl experiments] {msg}\n")  # one write: lines of parallel jobs don't interleave
    sys.stdout.flush()


# --- the runner ------------------------------------------------------------------------------------


def _read_lines(path: Path) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    tmp.replace(path)


@dataclass
class Corpus:
    """Tokenized input files: ``train``/``test`` source and target; optional gold AER pairs."""

    train_src: str
    train_tgt: str
    test_src: str
    test_tgt: str
    gold_text: Optional[str] = None  # "source ||| target" per line
    gold_align: Optional[str] = None  # 1-indexed, source first


class Experiments:
    """Runs ``jobs`` on ``corpus`` in ``workdir`` (see the module docstring)."""

    def __init__(self, corpus: Corpus, workdir: str, jobs: Sequence[Job], preset: str = "enja",
                 train_steps: Optional[int] = None, valid_size: int = 1000, beam_size: int = 5,
                 time_budget_min: Optional[float] = None, checkpoint_every: int = 500,
                 gpu: Optional[bool] = None, parallel: Optional[int] = None, archive: Optional[str] = None):
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        self.corpus, self.jobs, self.preset = corpus, list(jobs), preset
        self.workdir = Path(workdir).resolve()
        self.valid_size, self.beam_size = valid_size, beam_size
        self.time_budget_s = None if time_budget_min is None else 60.0 * time_budget_min
        self.overrides: Dict[str, Any] = {}
        steps = train_steps or config("baseline", str(self.workdir), None, preset)["train_steps"]
        self.train_steps = steps
        self.overrides.update(train_steps=steps, save_checkpoint_steps=min(checkpoint_every, steps),
                              keep_checkpoint=2, valid_steps=max(steps // 3, 1))
        if gpu is None:
            import torch

            gpu = torch.cuda.is_available()
        self.gpu = gpu
        if gpu:
            self.overrides.update(gpu_ranks=[0], world_size=1)
        if parallel is None:  # the fastest layout measured (reports/CPU_SPEED.md): one 1-thread job per CPU
            parallel = 1 if gpu else max(1, os.cpu_count() or 1)
        if parallel < 1:
            raise ValueError(f"--parallel {parallel}: must be at least 1")
        self.parallel = parallel
        self.archive = None if archive is None else Path(archive).resolve()
        self._archive_lock = threading.Lock()  # two jobs finishing together write the same run files
        self._manifest_lock = threading.RLock()
        self._run_index: Optional[int] = None  # this run's entry in the manifest's ``runs``
        self._jobs_done: List[str] = []
        # each of the ``parallel`` jobs gets its share of the cores (torch reads OMP_NUM_THREADS)
        self.threads = None if parallel == 1 else max(1, (os.cpu_count() or 1) // parallel)
        self.started = time.perf_counter()

    # -- helpers --------------------------------------------------------------------------------
    def path(self, *parts: str) -> Path:
        return self.workdir.joinpath(*parts)

    def _run(self, args: Sequence[str], log: Path, commands: Path, echo: str = "", tag: str = "") -> float:
        """Run a stock CLI with this run's thread share, appending to ``log`` and ``commands``; ``echo``: print
        the log lines containing it (after ``tag``). Returns seconds."""
        env = None if self.threads is None else {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        return _run(args, log, echo, append=True, commands=commands, env=env, indent=f"      {tag}")

    # -- stages ---------------------------------------------------------------------------------
    def stage_data(self) -> None:
        """train/valid split (the last ``valid_size`` training pairs validate), test, swapped tests, gold set."""
        data = self.path("data")
        if (data / "ready").exists():
            return
        data.mkdir(parents=True, exist_ok=True)
        src, tgt = _read_lines(Path(self.corpus.train_src)), _read_lines(Path(self.corpus.train_tgt))
        if len(src) != len(tgt):
            raise XLInputError(self.corpus.train_tgt, None, f"has {len(tgt)} lines but {self.corpus.train_src} has {len(src)}")
        if not 0 < self.valid_size < len(src):
            raise ValueError(f"--valid-size {self.valid_size} must be between 1 and {len(src) - 1} (training pairs)")
        cut = len(src) - self.valid_size
        _write_lines(data / "train.src", src[:cut])
        _write_lines(data / "train.tgt", tgt[:cut])
        _write_lines(data / "valid.src", src[cut:])
        _write_lines(data / "valid.tgt", tgt[cut:])
        test_src, test_tgt = _read_lines(Path(self.corpus.test_src)), _read_lines(Path(self.corpus.test_tgt))
        if len(test_src) != len(test_tgt):
            raise XLInputError(self.corpus.test_tgt, None, f"has {len(test_tgt)} lines but {self.corpus.test_src} has {len(test_src)}")
        for n, line in enumerate(test_src, 1):
            if not line.split():
                raise XLInputError(self.corpus.test_src, n, "empty source line (onmt_translate drops it, so outputs would no longer be parallel)")
        _write_lines(data / "test.src", test_src)
        _write_lines(data / "test.ref", test_tgt)
        for r in SWAP_RATIOS:
            rng = random.Random(round(100 * r))
            _write_lines(data / f"test.swap{round(100 * r)}.src", (" ".join(swap_words(l.split(), r, rng)) for l in test_src))
        if self.corpus.gold_text and self.corpus.gold_align:
            from onmt_xl.align.aer import read_gold, read_joint_text

            gsrc, gtgt = read_joint_text(self.corpus.gold_text)
            sure, _ = read_gold(self.corpus.gold_align)
            if len(sure) != len(gsrc):
                raise XLInputError(self.corpus.gold_align, None, f"has {len(sure)} lines but {self.corpus.gold_text} has {len(gsrc)}")
            keep = [k for k in range(len(gsrc)) if gsrc[k] and gtgt[k]]
            _write_lines(data / "gold.src", (" ".join(gsrc[k]) for k in keep))
            _write_lines(data / "gold.tgt", (" ".join(gtgt[k]) for k in keep))
            import shutil

            shutil.copyfile(self.corpus.gold_align, data / "gold.align")
            (data / "gold.keep").write_text(" ".join(map(str, keep)) + "\n")
        (data / "ready").write_text("")
        say(f"data: {cut} train, {self.valid_size} valid, {len(test_src)} test pairs -> {data}")

    def align(self) -> None:
        """eflomal on test+valid+train in one run (unsupervised: the test side only adds statistics),
        grow-diag-final-and; the test links serve the oracle, the attention AER reference, Sim and tau."""
        from onmt_xl.align.eflomal_aligner import align_corpus, read_tokenized
        from onmt_xl.align.pharaoh import write_pharaoh

        out = self.path("align")
        if (out / "train.gdfa").exists():
            return
        out.mkdir(exist_ok=True)
        parts = {name: (read_tokenized(str(self.path("data", f"{name}.src"))),
                        read_tokenized(str(self.path("data", f"{name}.{'ref' if name == 'test' else 'tgt'}"))))
                 for name in ("test", "valid", "train")}
        say(f"aligning test+valid+train ({sum(len(s) for s, _ in parts.values())} pairs) with eflomal")
        res = align_corpus([s for p in parts.values() for s in p[0]], [t for p in parts.values() for t in p[1]])
        start = 0
        for name, (s, _) in parts.items():  # train last: its file marks the stage as done
            write_pharaoh(str(out / f"{name}.gdfa"), res.symmetrized[start : start + len(s)])
            start += len(s)
        self._manifest_update(align_seconds=res.seconds)
        say(f"  aligned in {res.seconds:.1f}s")

    def preorder(self) -> None:
        """Train the BTG preorderer on the training links; score it on the test set against the test links."""
        from onmt_xl.align.pharaoh import read_pharaoh
        from onmt_xl.reorder.metrics import evaluate
        from onmt_xl.reorder.oracle import target_ranks
        from onmt_xl.reorder.preorderer import Preorderer

        model_path = self.path("preorderer.xlp")
        if not model_path.exists():
            src = [l.split() for l in _read_lines(self.path("data", "train.src"))]
            links = read_pharaoh(str(self.path("align", "train.gdfa")), [len(s) for s in src])
            say(f"training the preorderer on {len(src)} pairs")
            t0 = time.perf_counter()
            Preorderer.train(src, links).save(str(model_path))
            self._manifest_update(preorderer_train_seconds=time.perf_counter() - t0)
        out = self.path("preorderer.json")
        if not out.exists():
            model = Preorderer.load(str(model_path))
            src = [l.split() for l in _read_lines(self.path("data", "test.src"))]
            links = read_pharaoh(str(self.path("align", "test.gdfa")), [len(s) for s in src])
            scores = evaluate(model.reorder_batch(src), [target_ranks(len(s), l) for s, l in zip(src, links)])
            out.write_text(json.dumps(dict(tau=scores.tau, monotone_tau=scores.monotone_tau, oracle_tau=scores.oracle_tau,
                                           exact_match=scores.exact_match, frs=scores.frs, sentences=len(src)), indent=2))
            say("preorderer on the test set:\n" + scores.format())

    def job_config(self, job: Job) -> Dict[str, Any]:
        wd = str(self.workdir)
        cfg = config(job.system, wd, {**self.overrides, "seed": job.seed, **job.overrides}, self.preset)
        cfg["save_model"] = str(self.path("jobs", job.name, "model"))
        cfg["save_data"] = str(self.path("jobs", job.name, "samples"))
        cfg["cpu_precision"] = "auto"  # bf16 where this CPU computes it natively
        if job.xl_train == "align":
            if SYSTEMS[job.system][1] not in (XL, PREREORDER):
                raise ValueError(f"job {job.name}: xl_train=align needs an XL or pre-reordering system")
            cfg["xl_source"] = "align"
            cfg.pop("xl_preorderer", None)
            for split in ("train", "valid"):
                cfg["data"][split]["path_align"] = str(self.path("align", f"{split}.gdfa"))
        return cfg

    def vocab(self) -> None:
        if self.path("vocab.tgt").exists():
            return
        cfg = self.path("vocab_config.yaml")
        cfg.write_text(yaml.safe_dump(config("baseline", str(self.workdir), self.overrides, self.preset)))
        say("onmt_build_vocab")
        self._run([_stock("onmt_build_vocab"), "-config", cfg, "-n_sample", "-1"], self.path("logs", "build_vocab.log"),
                  self.path("commands.sh"))

    def device_name(self) -> str:
        if not self.gpu:
            return "cpu"
        import torch

        return torch.cuda.get_device_name(0)

    def model_path(self, job: Job) -> Path:
        return self.path("jobs", job.name, f"model_step_{self.train_steps}.pt")

    def train(self, job: Job) -> bool:
        """Train ``job`` unless done; resumes from its last checkpoint. False when the time budget is spent."""
        jd = self.path("jobs", job.name)
        done = jd / "done.json"
        cfg = self.job_config(job)
        text = yaml.safe_dump(cfg, sort_keys=False)
        cfg_path = jd / "config.yaml"
        if cfg_path.exists() and _identity(yaml.safe_load(cfg_path.read_text(encoding="utf-8"))) != _identity(cfg):
            raise XLInputError(str(cfg_path), None, f"differs from what job {job.name} needs now (other steps, preset "
                               "or options?): use another --workdir, or delete that job directory to retrain it")
        if done.exists():
            return True
        if self.time_budget_s is not None and time.perf_counter() - self.started > self.time_budget_s:
            return False
        jd.mkdir(parents=True, exist_ok=True)
        cfg_path.write_text(text, encoding="utf-8")
        args = [_stock("onmt_train"), "-config", cfg_path]
        ckpts = sorted(jd.glob("model_step_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
        resumed = None
        if ckpts:
            resumed = ckpts[-1].name
            args += ["-train_from", ckpts[-1]]
            say(f"  resuming {job.name} from {resumed}")
        seconds = self._run(args, jd / "train.log", jd / "commands.sh", echo="Step",
                            tag=f"{job.name}: " if self.parallel > 1 else "")
        if not self.model_path(job).exists():
            raise RuntimeError(f"onmt_train finished but {self.model_path(job)} is missing; see {jd / 'train.log'}")
        info = dict(system=job.system, seed=job.seed, overrides=job.overrides, xl_train=job.xl_train,
                    train_seconds=seconds, resumed_from=resumed,  # a resumed job: the last attempt's time only
                    concurrent_jobs=self.parallel, threads=self.threads, device=self.device_name(),  # what tok/s was measured under
                    parameters=count_checkpoint_parameters(str(self.model_path(job))),
                    src_tok_s=train_throughput((jd / "train.log").read_text(encoding="utf-8")),
                    precision=resolved_precision((jd / "train.log").read_text(encoding="utf-8")))
        done.write_text(json.dumps(info, indent=2))
        return True

    def variant_output(self, job: Job, variant: str) -> Optional[Path]:
        """Where ``variant`` of ``job`` is written; None when it does not apply (an oracle of a system without
        XL indices or reordering, attention AER without a gold set)."""
        jd = self.path("jobs", job.name)
        if variant == "sim":
            return jd / "sim.json"
        if variant == "oracle" and SYSTEMS[job.system][1] not in (XL, PREREORDER):
            return None
        if variant == "gold_align" and not self.path("data", "gold.src").exists():
            return None
        return jd / f"hyp.{variant}"

    def translate(self, job: Job, variant: str) -> None:
        jd = self.path("jobs", job.name)
        hyp = self.variant_output(job, variant)
        if hyp is None:
            if variant == "gold_align":
                say(f"  {job.name}: no gold alignment set given, skipping {variant}")
            return
        if hyp.exists():
            return
        if variant == "sim":
            return self._sim(job)
        data = self.path("data")
        src = {"test": data / "test.src", "oracle": data / "test.src", "test_align": data / "test.src",
               "gold_align": data / "gold.src", "valid": data / "valid.src"}.get(variant, data / f"test.{variant}.src")
        tmp = jd / f"hyp.{variant}.partial"
        model = self.alignment_model(job) if variant in ("gold_align", "test_align") else self.model_path(job)
        args = [_stock("onmt_translate"), "-model", model, "-src", src, "-output", tmp,
                "-beam_size", self.beam_size, "-batch_size", 64, "-batch_type", "sents", "-seed", job.seed,
                "-cpu_precision", "auto"]
        if variant in ("gold_align", "test_align"):
            args += ["-tgt", data / ("gold.tgt" if variant == "gold_align" else "test.ref"), "-report_align", "-gold_align"]
        transform = SYSTEMS[job.system][1]
        if transform in (XL, PREREORDER):
            args += ["-transforms", transform]
            if variant == "oracle":  # test-side information: labelled as such in the report
                args += ["-xl_source", "align", "-xl_align_path", self.path("align", "test.gdfa")]
            elif job.xl_train == "align":
                raise ValueError(f"job {job.name} was trained on oracle XL indices; translate it with the 'oracle' variant")
            else:
                args += ["-xl_preorderer", self.path("preorderer.xlp")]
        if self.gpu:
            args += ["-gpu", 0]
        say(f"  onmt_translate {job.name} [{variant}]")
        seconds = self._run(args, jd / f"translate_{variant}.log", jd / "commands.sh")
        tmp.replace(hyp)
        timing = jd / "translate_seconds.json"
        times = json.loads(timing.read_text()) if timing.exists() else {}
        times[variant] = seconds
        timing.write_text(json.dumps(times, indent=2))

    def alignment_model(self, job: Job) -> Path:
        """The job's checkpoint with its decoder set to report the cross-attention of the penultimate
        layer averaged over all heads (Ding et al. 2020 Sec. 4.3, after Garg et al. 2019).

        OpenNMT reads ``alignment_layer``/``alignment_heads`` from the checkpoint's options; they select
        what ``-report_align`` reads and do not change training (``lambda_align`` is 0), so they are set
        on a copy (without optimizer state) instead of in every training configuration.
        """
        out = self.path("jobs", job.name, "model_align.pt")
        if not out.exists():
            import torch

            import onmt_xl

            onmt_xl.register()
            ckpt = torch.load(str(self.model_path(job)), map_location="cpu", weights_only=False)  # our own file
            opt = ckpt["opt"]
            opt.alignment_layer = max(opt.dec_layers - 2, 0)
            opt.alignment_heads = 0
            ckpt.pop("optim", None)
            tmp = out.with_name(out.name + ".partial")
            torch.save(ckpt, str(tmp))
            tmp.replace(out)
        return out

    def _sim(self, job: Job) -> None:
        out = self.path("jobs", job.name, "sim.json")
        from onmt_xl.align.pharaoh import read_pharaoh
        from onmt_xl.experiments.analysis import sim_metric

        src = [l.split() for l in _read_lines(self.path("data", "test.src"))]
        links = read_pharaoh(str(self.path("align", "test.gdfa")), [len(s) for s in src])
        score = sim_metric(str(self.model_path(job)), src, links)
        out.write_text(json.dumps(score._asdict(), indent=2))
        say(f"  Sim ({job.name}) = {score.sim:.4f} over {score.words} words (original positions' PE: {score.pe_sim:.4f})")

    # -- manifest -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _manifest(self):
        """The manifest as a dict, written back atomically on a clean exit; one writer at a time (jobs
        finishing together both record themselves)."""
        with self._manifest_lock:
            path = self.path("manifest.json")
            data = json.loads(path.read_text()) if path.exists() else {}
            yield data
            with atomic_file(path) as f:
                f.write(json.dumps(data, indent=2).encode("utf-8"))

    def _manifest_update(self, **kw) -> None:
        with self._manifest() as data:
            data.update(kw)

    def _record_run(self, **kw) -> None:
        """Update this run's entry in the manifest's ``runs`` (added at start, so a killed run keeps its record)."""
        with self._manifest() as data:
            runs = data.setdefault("runs", [])
            if self._run_index is None:
                self._run_index = len(runs)
                runs.append({})
            runs[self._run_index].update(kw, wall_seconds=time.perf_counter() - self.started,
                                         updated=time.strftime("%Y-%m-%d %H:%M:%S"))

    def write_manifest(self, argv: Sequence[str]) -> None:
        import importlib.metadata as md

        import torch

        versions = {}
        for pkg in ("onmt_xl", "OpenNMT-py", "torch", "sacrebleu", "numba", "numpy", "eflomal", "pyonmttok"):
            try:
                versions[pkg] = md.version(pkg)
            except md.PackageNotFoundError:
                versions[pkg] = None
        gpu = torch.cuda.get_device_name(0) if self.gpu else None
        self._manifest_update(command=" ".join(["onmt-xl"] + list(argv)), versions=versions,
                              machine=dict(platform=platform.platform(), processor=platform.processor() or platform.machine(),
                                           cpus=os.cpu_count(), torch_threads=torch.get_num_threads(), gpu=gpu),
                              preset=self.preset, model=config("baseline", str(self.workdir), self.overrides, self.preset),
                              train_steps=self.train_steps, beam_size=self.beam_size, valid_size=self.valid_size)

    def _job(self, k: int, job: Job) -> bool:
        """Train, translate and score one job; False when the time budget stopped it before training."""
        say(f"[job {k}/{len(self.jobs)}] {job.name} ({job.system}, seed {job.seed}"
            + (f", {job.overrides}" if job.overrides else "") + f"; {', '.join(job.experiments)})")
        self._retrain_if_restored_without_checkpoint(job)
        had_all = self.path("jobs", job.name, "done.json").exists() and not self.outputs_missing(job)
        if not self.train(job):
            return False
        for variant in job.variants:
            self.translate(job, variant)
        self.path("jobs", job.name, "model_align.pt").unlink(missing_ok=True)
        if not had_all:  # trained or translated something in this run
            with self._manifest_lock:
                self._jobs_done.append(job.name)
                self._record_run(jobs_done=list(self._jobs_done))
        if self.archive is not None:
            with self._archive_lock:
                save_job(self.workdir, self.archive, job.name)
                save_run(self.workdir, self.archive)
        say(f"[job {k}/{len(self.jobs)}] {job.name} done")
        return True

    def outputs_missing(self, job: Job) -> List[str]:
        """The variants of ``job`` that ``translate`` would still produce."""
        outputs = {v: self.variant_output(job, v) for v in job.variants}
        return [v for v, out in outputs.items() if out is not None and not out.exists()]

    def _retrain_if_restored_without_checkpoint(self, job: Job) -> None:
        """A job restored from an archive has no checkpoint: a variant it lacks needs the model again."""
        jd = self.path("jobs", job.name)
        if not (jd / "done.json").exists() or self.model_path(job).exists():
            return
        missing = self.outputs_missing(job)
        if missing:
            say(f"  {job.name}: restored without its checkpoint and lacks {', '.join(missing)}: retraining it")
            for p in list(jd.glob("hyp.*")) + [jd / "done.json", jd / "translate_seconds.json", jd / "sim.json"]:
                p.unlink(missing_ok=True)

    def _run_jobs(self) -> Optional[str]:
        """Every job in plan order, ``parallel`` at a time. Returns the first job the time budget stopped, if any.

        A failing job stops new jobs from starting; the ones running finish, then its error is raised.
        """
        queue = list(enumerate(self.jobs, 1))
        lock = threading.Lock()
        stopped: List[str] = []
        failed: List[BaseException] = []

        def worker() -> None:
            while True:
                with lock:
                    if stopped or failed or not queue:
                        return
                    k, job = queue.pop(0)
                try:
                    if not self._job(k, job):
                        with lock:
                            stopped.append(job.name)
                except BaseException as e:  # noqa: BLE001 - re-raised below
                    with lock:
                        failed.append(e)

        if self.parallel == 1:
            worker()
        else:
            threads = [threading.Thread(target=worker, name=f"job-worker-{i}") for i in range(self.parallel)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        if failed:
            raise failed[0]
        if stopped:
            say(f"time budget spent: {stopped[0]} and the jobs after it are left for the next run")
        return stopped[0] if stopped else None

    def _lock_workdir(self):
        """An exclusive lock on the work directory for this process's lifetime (two runners would train
        the same job twice)."""
        import fcntl

        fh = open(self.path(".lock"), "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            raise XLInputError(str(self.workdir), None, "another onmt-xl experiments is running in this work directory "
                               f"(pid {fh.read().strip() or '?'}); wait for it or stop it") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        return fh

    def restore_archive(self) -> None:
        """Fill the work directory from ``--archive`` (links, finished jobs, the run's manifest) where it lacks them."""
        if self.archive is None:
            return
        restored = restore(self.archive, self.workdir)
        if restored:
            say(f"restored {len(restored)} finished job(s) from {self.archive}: {', '.join(restored)}")

    def run(self, argv: Sequence[str] = ()) -> Dict[str, Any]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._lock = self._lock_workdir()
        self.restore_archive()
        self.write_manifest(argv)
        self._record_run(started=time.strftime("%Y-%m-%d %H:%M:%S"), parallel=self.parallel, status="running", jobs_done=[])
        self.stage_data()
        self.align()
        if self.archive is not None:
            save_alignments(self.workdir, self.archive)
        self.preorder()
        self.vocab()
        stopped = self._run_jobs()
        self._record_run(status="stopped by the time budget" if stopped else "finished", stopped_before=stopped)
        if self.archive is not None:
            save_run(self.workdir, self.archive)
        from onmt_xl.experiments.results import collect

        return collect(self.workdir, self.jobs)


#: Options that say where a job runs, not what it is: a job trained on a GPU resumes or reports on a CPU.
DEVICE_OPTIONS = ("gpu_ranks", "world_size", "cpu_precision")  # cpu_precision: its resolution is in done.json


def _identity(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """A job configuration without :data:`DEVICE_OPTIONS` (what a changed configuration is judged on)."""
    return {k: v for k, v in cfg.items() if k not in DEVICE_OPTIONS}


# --- small readers shared with the report ------------------------------------------------------------


def resolved_precision(log_text: str) -> str:
    """What ``-cpu_precision auto`` chose in a training log: "bf16" or "fp32" (the last run's, when resumed)."""
    lines = [line for line in log_text.splitlines() if "-cpu_precision" in line]
    return "bf16" if lines and "bf16 autocast" in lines[-1] else "fp32"


def train_throughput(log_text: str) -> Optional[float]:
    """Median source tokens/second of OpenNMT's training reports, the first one (warm-up) left out:
    robust to a report slowed down by something else on the machine (or a paused run)."""
    rates = [int(m.group(2)) for m in TOK_S.finditer(log_text)]
    rates = rates[1:] if len(rates) > 1 else rates
    return statistics.median(rates) if rates else None


# --- CLI -----------------------------------------------------------------------------------------------


def _csv(text: str) -> List[str]:
    return [t for t in text.split(",") if t]


def run_experiments(args) -> int:
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # OpenNMT-py 3.5.1's torch.cuda.amp decorators
    d = Path(args.data)
    corpus = Corpus(str(d / f"{args.train}.{args.src}"), str(d / f"{args.train}.{args.tgt}"),
                    str(d / f"{args.test}.{args.src}"), str(d / f"{args.test}.{args.tgt}"),
                    args.gold_text, args.gold_align)
    for p in (corpus.train_src, corpus.train_tgt, corpus.test_src, corpus.test_tgt):
        if not Path(p).exists():
            raise XLInputError(p, None, "not found (see --data, --src, --tgt, --train, --test)")
    if bool(args.gold_text) != bool(args.gold_align):
        raise XLInputError(args.gold_text or args.gold_align, None, "--gold-text and --gold-align go together")
    experiments = [e for e in EXPERIMENTS if e in _csv(args.experiments)]
    seeds = [int(s) for s in _csv(args.seeds)]
    preset_cfg = config("baseline", args.workdir, None, args.preset)
    jobs = plan(_csv(args.experiments), seeds, preset_cfg["heads"])
    if args.only:
        wanted = set(_csv(args.only))
        missing = wanted - {j.name for j in jobs}
        if missing:
            raise ValueError(f"--only {sorted(missing)}: not a job of {experiments}")
        jobs = [j for j in jobs if j.name in wanted]
    if args.list:
        for j in jobs:
            xl = j.xl_train if SYSTEMS[j.system][1] in (XL, PREREORDER) else "-"
            print(f"{j.name:24s} {j.system:18s} seed {j.seed:<5d} {json.dumps(j.overrides) if j.overrides else '':28s} "
                  f"train XL: {xl:10s} variants: {','.join(j.variants):40s} ({','.join(j.experiments)})")
        return 0
    runner = Experiments(corpus, args.workdir, jobs, args.preset, args.train_steps, args.valid_size, args.beam_size,
                         args.time_budget, gpu={"auto": None, "yes": True, "no": False}[args.gpu],
                         parallel=args.parallel, archive=args.archive)
    every_job = plan(EXPERIMENTS, seeds, preset_cfg["heads"])  # the report lists what has not run too
    if not args.report_only:
        runner.run(sys.argv[1:])
    if args.archive and args.report_only:
        runner.stage_data()  # a fresh work directory reports on the archive alone
        runner.restore_archive()
        # keeps what a run started without --archive finished (never the run files of a run that has them)
        save_alignments(runner.workdir, Path(args.archive))
        save_run(runner.workdir, Path(args.archive), replace=False)
        kept = [j.name for j in every_job if save_job(runner.workdir, Path(args.archive), j.name)]
        say(f"archive: {len(kept)} finished job(s) kept in {args.archive}")
    from onmt_xl.experiments.results import write_report

    out = write_report(runner.workdir, every_job, args.report_dir)
    say(f"report: {out}")
    return 0


def _shared_data() -> Path:
    """``../shared/data`` beside the directory the command runs in, else beside a source checkout of onmt_xl
    (the project's layout); the first when neither exists, so that a missing-file error names it."""
    here = Path.cwd().parent / "shared" / "data"
    checkout = Path(__file__).resolve().parents[2] / "shared" / "data"
    return checkout if not here.exists() and checkout.exists() else here


def add_subcommands(sub) -> None:
    shared = _shared_data()
    p = sub.add_parser("experiments", help="the papers' experiments on a tokenized corpus: resumable runner + report",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(shared / "enja"), help="directory with TRAIN.SRC, TRAIN.TGT, TEST.SRC, TEST.TGT")
    p.add_argument("--src", default="ja")
    p.add_argument("--tgt", default="en")
    p.add_argument("--train", default="train", help="training split name (its last --valid-size pairs validate)")
    p.add_argument("--test", default="dev", help="test split name (reported on)")
    p.add_argument("--valid-size", type=int, default=1000)
    gold = shared / "gold"
    p.add_argument("--gold-text", default=str(gold / "jaen.src-tgt") if (gold / "jaen.src-tgt").exists() else None,
                   help="'source ||| target' pairs for attention AER (default: ../shared/data/gold/jaen.src-tgt)")
    p.add_argument("--gold-align", default=str(gold / "jaen.gold") if (gold / "jaen.gold").exists() else None,
                   help="their gold links, 1-indexed, source first")
    p.add_argument("--workdir", default="runs/experiments")
    p.add_argument("--experiments", default=",".join(EXPERIMENTS), help=f"comma-separated from {','.join(EXPERIMENTS)}")
    p.add_argument("--only", help="comma-separated job names (see --list) to restrict the plan to")
    p.add_argument("--seeds", default="1234,5678", help="the first seeds every system; the others the baseline and Combination")
    p.add_argument("--preset", default="enja", choices=sorted(PRESETS), help="model size (onmt_xl.experiments.configs.PRESETS)")
    p.add_argument("--train-steps", type=int, help="default: the preset's")
    p.add_argument("--beam-size", type=int, default=5)
    p.add_argument("--time-budget", type=float, help="minutes: start no new training after this (resume later)")
    p.add_argument("--gpu", choices=("auto", "yes", "no"), default="auto")
    p.add_argument("--parallel", type=int, default=None,
                   help="jobs trained at once, each with CPUs/N torch threads (default: one job per CPU without a GPU, "
                        "the fastest layout measured by tools/bench_jobs.py, see reports/CPU_SPEED.md; 1 with a GPU); "
                        "each job's tok/s is then its share")
    p.add_argument("--list", action="store_true", help="print the plan and exit")
    p.add_argument("--report-only", action="store_true", help="write the report from what has run")
    p.add_argument("--report-dir", default="reports", help="where RESULTS.md and the plots go")
    p.add_argument("--archive", help="directory that keeps finished jobs' results and the run's links without "
                   "checkpoints (small enough for git); a fresh --workdir restores them first (onmt_xl.experiments.archive)")
    p.set_defaults(func=run_experiments)
