"""The one resumable chain of stages behind ``onmt-xl experiments``, ``onmt-xl pipeline`` and ``onmt-xl demo``.

data → align → preorder → vocab (:mod:`onmt_xl.experiments.stages`) → every job's training and
translations (:mod:`onmt_xl.experiments.jobs`) → scores (:func:`onmt_xl.experiments.scoring.collect`).
Every system trains with the same model size, data, steps and seed through the stock ``onmt_build_vocab``
/ ``onmt_train`` / ``onmt_translate``. Every stage is skipped when its outputs exist, so a killed run
resumes; the work directory also holds ``manifest.json`` (machine, versions, wall times) and
``results.json``. This module schedules the jobs (``--parallel``, the time budget), locks the work
directory and keeps the manifest.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.archive import atomic_file, data_dir, restore, save_alignments, save_job, save_run
from onmt_xl.experiments.configs import PRESETS, config
from onmt_xl.experiments.jobs import JobStages
from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.stages import Corpus, DataStages
from onmt_xl.experiments.stock import run_logged, say

__all__ = ["Corpus", "Job", "Runner"]

VERSIONED = ("onmt_xl", "OpenNMT-py", "torch", "sacrebleu", "numba", "numpy", "eflomal", "pyonmttok")


def default_layout(gpu: bool, parallel: Optional[int]) -> tuple:
    """``(parallel, threads)``: by default one 1-thread job per CPU without a GPU (the fastest layout
    measured, reports/CPU_SPEED.md), one job with a GPU; each of ``parallel`` jobs gets its share of the cores."""
    if parallel is None:
        parallel = 1 if gpu else max(1, os.cpu_count() or 1)
    if parallel < 1:
        raise ValueError(f"--parallel {parallel}: must be at least 1")
    return parallel, None if parallel == 1 else max(1, (os.cpu_count() or 1) // parallel)


class Runner(DataStages, JobStages):
    """Runs ``jobs`` on ``corpus`` in ``workdir`` (see the module docstring)."""

    def __init__(self, corpus: Corpus, workdir: str, jobs: Sequence[Job], preset: str = "enja",
                 train_steps: Optional[int] = None, valid_size: int = 1000, beam_size: int = 5,
                 time_budget_min: Optional[float] = None, checkpoint_every: int = 500,
                 gpu: Optional[bool] = None, parallel: Optional[int] = None, archive: Optional[str] = None,
                 preorder_iterations: Optional[int] = None, tune_size: int = 0,
                 preorder_options: Optional[Dict[str, Any]] = None, test_from_train: int = 0,
                 tokenize: Optional[str] = None, subword_size: Optional[int] = None, bleu_tokenize: str = "auto"):
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        self.corpus, self.jobs, self.preset = corpus, list(jobs), preset
        self.workdir = Path(workdir).resolve()
        self.valid_size, self.beam_size, self.preorder_iterations = valid_size, beam_size, preorder_iterations
        self.tune_size, self.preorder_options = tune_size, dict(preorder_options or {})
        self.test_from_train = test_from_train  # test pairs carved from the training pairs (stages.carve_test_pairs)
        #: ``--tokenize`` and ``--subword-size`` (:meth:`DataStages.tokenize`); None: the input is tokenized
        self.tokenize_as, self.subword_size = tokenize, subword_size
        self.bleu_tokenize = bleu_tokenize  # ``--bleu-tokenize``: sacrebleu's tokenizer of raw text's scores
        self.extra_preorder_pairs: Sequence[int] = ()  # preorderers on the first N pairs beyond the jobs' own
        self.want_crossfit = False  # the cross-fitted training positions even where no job trains on them
        #: the Eole pipeline's ``--training-positions`` (it has no jobs; OpenNMT-py's jobs carry theirs as ``xl_train``):
        #: :func:`~onmt_xl.experiments.eole_demo.trains_on_crossfit`
        self.training_positions = "preorderer"
        self.time_budget_s = None if time_budget_min is None else 60.0 * time_budget_min
        steps = train_steps or config("baseline", str(self.workdir), None, preset)["train_steps"]
        self.train_steps = steps
        self.overrides: Dict[str, Any] = dict(train_steps=steps, save_checkpoint_steps=min(checkpoint_every, steps),
                                              keep_checkpoint=2, valid_steps=max(steps // 3, 1))
        if gpu is None:
            import torch

            gpu = torch.cuda.is_available()
        self.gpu = gpu
        if gpu:
            self.overrides.update(gpu_ranks=[0], world_size=1)
        #: InXL's start for the systems with InXL (:func:`onmt_xl.experiments.configs.config`); None: the default
        self.inxl_init: Optional[str] = None
        self.parallel, self.threads = default_layout(gpu, parallel)  # torch reads OMP_NUM_THREADS
        self.archive = None if archive is None else Path(archive).resolve()
        self._archive_lock = threading.Lock()  # two jobs finishing together write the same run files
        self._manifest_lock = threading.RLock()
        self._run_index: Optional[int] = None  # this run's entry in the manifest's ``runs``
        self._jobs_done: List[str] = []
        #: the ``translate.yaml`` files this run wrote, with their options (each written once a run, with serve.json)
        self.translate_configs: Dict[Path, Dict[str, Any]] = {}
        self.after_job: Optional[Callable[[Job], None]] = None  # called once a job is trained, translated and archived
        #: called once the preorderers are trained, before the vocabularies: a reason to stop there, or None
        self.before_training: Optional[Callable[[], Optional[str]]] = None
        self.started = time.perf_counter()

    def path(self, *parts: str) -> Path:
        return self.workdir.joinpath(*parts)

    def _run(self, args: Sequence[Any], log: Path, commands: Path, echo: str = "", tag: str = "") -> float:
        """Run a stock CLI with this run's thread share, appending to ``log`` and ``commands``; ``echo``: print
        the log lines containing it (after ``tag``). Returns seconds."""
        env = None if self.threads is None else {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        return run_logged(args, log, echo, append=True, commands=commands, env=env, indent=f"      {tag}")

    def out_of_time(self) -> bool:
        """Whether the time budget is spent (no new training starts then)."""
        return self.time_budget_s is not None and time.perf_counter() - self.started > self.time_budget_s

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
        for pkg in VERSIONED:
            try:
                versions[pkg] = md.version(pkg)
            except md.PackageNotFoundError:
                versions[pkg] = None
        gpu = torch.cuda.get_device_name(0) if self.gpu else None
        self._manifest_update(command=" ".join(["onmt-xl"] + list(argv)), versions=versions,
                              machine=dict(platform=platform.platform(),
                                           processor=platform.processor() or platform.machine(),
                                           cpus=os.cpu_count(), torch_threads=torch.get_num_threads(), gpu=gpu),
                              preset=self.preset,
                              model=config("baseline", str(self.workdir), self.overrides, self.preset),
                              train_steps=self.train_steps, beam_size=self.beam_size, valid_size=self.valid_size,
                              **({"tune_size": self.tune_size} if self.tune_size else {}),
                              **({"test_from_train": self.test_from_train} if self.test_from_train else {}),
                              **({"preorder_options": self.preorder_options} if self.preorder_options else {}))

    # -- jobs -----------------------------------------------------------------------------------
    def _job(self, k: int, job: Job) -> bool:
        """Train, translate and score one job; False when the time budget stopped it before training."""
        say(f"[job {k}/{len(self.jobs)}] {job.name} ({job.system}, seed {job.seed}"
            + (f", {job.overrides}" if job.overrides else "") + f"; {', '.join(job.experiments)})")
        self.retrain_if_restored_without_checkpoint(job)
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
                save_job(self.workdir, self.archive, job.name, self.corpus_dir())
                save_run(self.workdir, self.archive, data=self.corpus_dir())
        if self.after_job is not None:
            self.after_job(job)
        say(f"[job {k}/{len(self.jobs)}] {job.name} done")
        return True

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

        if self.parallel > 1:
            from onmt_xl.experiments.analysis import import_onmt

            import_onmt()  # here, not first in several job threads at once (OpenNMT's import cycles)
        threads = [threading.Thread(target=worker, name=f"job-worker-{i}") for i in range(self.parallel - 1)]
        for t in threads:
            t.start()
        worker()  # this thread is one of the workers
        for t in threads:
            t.join()
        if failed:
            raise failed[0]
        if stopped:
            say(f"time budget spent: {stopped[0]} and the jobs after it are left for the next run")
        return stopped[0] if stopped else None

    # -- the run --------------------------------------------------------------------------------
    def _lock_workdir(self):
        """An exclusive lock on the work directory for this process's lifetime (two runners would train
        the same job twice)."""
        import fcntl

        fh = open(self.path(".lock"), "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            raise XLUsageError(str(self.workdir), None, "another onmt-xl run is using this work directory "
                               f"(pid {fh.read().strip() or '?'}); wait for it or stop it") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        return fh

    def corpus_dir(self) -> Optional[str]:
        """The directory of the corpus' files (``${DATA}`` in the archive, :mod:`onmt_xl.experiments.archive`)."""
        c = self.corpus
        return data_dir(*c.inputs(), c.gold_text, c.gold_align)

    def restore_archive(self) -> None:
        """Fill the work directory from ``--archive`` (links, finished jobs, the run's manifest) where it lacks them."""
        if self.archive is None:
            return
        restored = restore(self.archive, self.workdir)
        if restored:
            say(f"restored {len(restored)} finished job(s) from {self.archive}: {', '.join(restored)}")

    def prepare(self) -> Optional[str]:
        """The stages before training: data, alignment, preorderer, cross-fitted training positions (where wanted),
        vocabularies; stops after the preorderer and returns the reason when :attr:`before_training` gives one."""
        self.stage_data()
        self.tokenize(self.tokenize_as, self.subword_size)
        self.align()
        if self.archive is not None:
            save_alignments(self.workdir, self.archive)
        self.preorder()
        pair_counts = {job.preorder_pairs for job in self.jobs if job.preorder_pairs} | set(self.extra_preorder_pairs)
        for pairs in sorted(pair_counts):
            self.preorder(pairs)
        stop = self.before_training() if self.before_training is not None else None
        if not stop and (self.want_crossfit or any(job.xl_train == "crossfit" for job in self.jobs)):
            self.crossfit()
        if self.archive is not None:  # the preorderers' scores, before any job has finished
            save_run(self.workdir, self.archive, data=self.corpus_dir())
        if stop:
            return stop
        self.vocab()
        return None

    def run(self, argv: Sequence[str] = ()) -> Optional[Dict[str, Any]]:
        """The whole chain; returns :func:`onmt_xl.experiments.scoring.collect` of the jobs (also in ``results.json``),
        or ``None`` when :attr:`before_training` stopped it (recorded in the manifest's run)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if getattr(self, "_lock", None) is None:  # held for the process's lifetime: a second run keeps it
            self._lock = self._lock_workdir()
        self.restore_archive()
        if self.tokenize_as is not None and self.path("tok", "tokenization.json").exists():
            self.tokenize(self.tokenize_as, self.subword_size)  # recorded: only read, so the configurations are whole
        for job in self.jobs:  # a refused run changes nothing: no manifest entry, no job reopened
            problem = self.config_problem(job)
            if problem is not None:
                raise problem
        self.write_manifest(argv)
        self._record_run(started=time.strftime("%Y-%m-%d %H:%M:%S"), parallel=self.parallel, status="running",
                         jobs_done=[])
        stop = self.prepare()
        if stop:
            self._record_run(status=f"stopped before training: {stop}")
            return None
        stopped = self._run_jobs()
        self._record_run(status="stopped by the time budget" if stopped else "finished", stopped_before=stopped)
        if self.archive is not None:
            save_run(self.workdir, self.archive, data=self.corpus_dir())
        from onmt_xl.experiments.scoring import collect

        return collect(self.workdir, self.jobs)
