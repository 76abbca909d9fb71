"""The main job: text → alignment → BTG oracle → preorderer → OpenNMT (stock CLIs) → sacrebleu.

Each step writes its outputs under the work directory and is skipped when they already exist, so a
killed run resumes where it stopped. OpenNMT runs as its own stock commands (``onmt_build_vocab``,
``onmt_train``, ``onmt_translate``) from the configurations of :mod:`onmt_xl.experiments.configs`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import yaml

from onmt_xl.experiments.configs import SYSTEMS, config, source_transform


@dataclass
class PipelineData:
    """Tokenized input files; ``test_align`` (gold links) is optional and only used to score the preorderer."""

    train_src: str
    train_tgt: str
    valid_src: str
    valid_tgt: str
    test_src: str
    test_ref: str
    test_align: Optional[str] = None


@dataclass
class PipelineResult:
    preorderer: Dict[str, float] = field(default_factory=dict)
    bleu: Dict[str, float] = field(default_factory=dict)
    chrf: Dict[str, float] = field(default_factory=dict)
    params: Dict[str, int] = field(default_factory=dict)
    significance: Dict[str, str] = field(default_factory=dict)

    def format(self) -> str:
        p = self.preorderer
        lines = [
            f"preorderer (held-out test, {p.get('sentences', 0):.0f} sentences): Kendall tau {p.get('tau', float('nan')):.4f} "
            f"(monotone order {p.get('monotone_tau', float('nan')):.4f}), exact match {p.get('exact_match', float('nan')):.3f}, "
            f"{p.get('sentences_per_second', float('nan')):,.0f} sentences/s",
        ]
        for system in self.bleu:
            lines.append(
                f"{system:12s} BLEU {self.bleu[system]:6.2f}  chrF {self.chrf[system]:6.2f}  "
                f"params {self.params.get(system, 0):,}" + (f"  {self.significance[system]}" if system in self.significance else "")
            )
        return "\n".join(lines)


def _say(msg: str) -> None:
    print(f"[onmt-xl] {msg}", flush=True)


def _read_tokens(path: str) -> List[List[str]]:
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f]


def _stock(cmd: str) -> str:
    """Path of a stock OpenNMT console script installed beside this Python."""
    found = shutil.which(cmd) or str(Path(sys.executable).with_name(cmd))
    return found


def _run(args: Sequence[str], log: Path, show: str = "Step", *, append: bool = False, commands: Optional[Path] = None,
         env: Optional[Dict[str, str]] = None, indent: str = "    ") -> float:
    """Run a stock CLI, log everything to ``log`` (``append``: after what is there) and echo the lines that
    contain ``show`` after ``indent``; ``commands``: a file the command line is appended to. Returns seconds."""
    log.parent.mkdir(parents=True, exist_ok=True)
    line = " ".join(str(a) for a in args)
    if commands is not None:
        with open(commands, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    t0 = time.perf_counter()
    with open(log, "a" if append else "w", encoding="utf-8") as out:
        proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env)
        assert proc.stdout is not None
        for text in proc.stdout:
            out.write(text)
            if show and show in text:
                sys.stdout.write(indent + text.rstrip().split(" INFO] ")[-1] + "\n")  # one write per line
                sys.stdout.flush()
        if proc.wait() != 0:
            raise RuntimeError(f"{line}\nfailed (exit {proc.returncode}); see {log}")
    return time.perf_counter() - t0


def count_checkpoint_parameters(path: str) -> int:
    """Parameters of an OpenNMT checkpoint (model and generator)."""
    import warnings

    import torch

    import onmt_xl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onmt_xl.register()
    ckpt = torch.load(path, map_location="cpu")
    return int(sum(v.numel() for v in ckpt["model"].values()) + sum(v.numel() for v in ckpt["generator"].values()))


class Pipeline:
    """Runs the main job on ``data`` in ``workdir`` for ``systems`` (names of :data:`onmt_xl.experiments.configs.SYSTEMS`)."""

    def __init__(
        self,
        data: PipelineData,
        workdir: str,
        systems: Sequence[str] = ("baseline", "combination"),
        train_steps: Optional[int] = None,
        preorder_iterations: int = 5,
        beam_size: int = 5,
        overrides: Optional[Dict] = None,
    ):
        unknown = [s for s in systems if s not in SYSTEMS]
        if unknown:
            raise ValueError(f"unknown systems {unknown}; choose from {sorted(SYSTEMS)}")
        self.data, self.systems = data, list(systems)
        self.workdir = Path(workdir)
        self.preorder_iterations, self.beam_size = preorder_iterations, beam_size
        self.overrides = dict(overrides or {})
        if train_steps is not None:
            self.overrides.update(train_steps=train_steps, save_checkpoint_steps=train_steps,
                                  valid_steps=max(train_steps // 2, 1))
        self.result = PipelineResult()

    # -- paths ------------------------------------------------------------------------------
    def path(self, *parts: str) -> Path:
        return self.workdir.joinpath(*parts)

    @property
    def preorderer_path(self) -> Path:
        return self.path("preorderer.xlp")

    # -- steps ------------------------------------------------------------------------------
    def stage_data(self) -> None:
        """Copy the inputs to ``workdir/data`` under the names the configurations use."""
        out = self.path("data")
        out.mkdir(parents=True, exist_ok=True)
        for name, src in (("train.src", self.data.train_src), ("train.tgt", self.data.train_tgt),
                          ("valid.src", self.data.valid_src), ("valid.tgt", self.data.valid_tgt),
                          ("test.src", self.data.test_src), ("test.ref", self.data.test_ref)):
            if Path(src).resolve() != (out / name).resolve():
                shutil.copyfile(src, out / name)

    def align(self) -> Path:
        """eflomal forward/reverse/grow-diag-final-and links of the training corpus."""
        from onmt_xl.align.eflomal_aligner import align_files

        prefix = self.path("align", "train")
        if not Path(f"{prefix}.gdfa").exists():
            prefix.parent.mkdir(parents=True, exist_ok=True)
            _say("aligning the training corpus with eflomal")
            res = align_files(str(self.path("data", "train.src")), str(self.path("data", "train.tgt")), str(prefix))
            _say(f"  aligned {len(res.symmetrized)} pairs in {res.seconds:.1f}s")
        return Path(f"{prefix}.gdfa")

    def oracle(self, gdfa: Path) -> Path:
        """BTG oracle reorderings of the training corpus (written for inspection; the preorderer uses the links)."""
        from onmt_xl.align.pharaoh import read_pharaoh
        from onmt_xl.reorder.oracle import btg_oracle

        out = self.path("align", "train.oracle_order")
        if not out.exists():
            src = _read_tokens(str(self.path("data", "train.src")))
            links = read_pharaoh(str(gdfa), [len(s) for s in src])
            with open(out, "w", encoding="utf-8") as f:
                for s, ls in zip(src, links):
                    f.write(" ".join(map(str, btg_oracle(len(s), ls).order)) + "\n")
            _say(f"BTG oracle orders of {len(src)} training sentences -> {out}")
        return out

    def train_preorderer(self, gdfa: Path) -> None:
        from onmt_xl.align.pharaoh import read_pharaoh
        from onmt_xl.reorder.preorderer import Preorderer

        if self.preorderer_path.exists():
            return
        src = _read_tokens(str(self.path("data", "train.src")))
        links = read_pharaoh(str(gdfa), [len(s) for s in src])
        _say(f"training the BTG preorderer on {len(src)} sentences ({self.preorder_iterations} iterations)")
        t0 = time.perf_counter()
        model = Preorderer.train(src, links, iterations=self.preorder_iterations)
        model.save(str(self.preorderer_path))
        _say(f"  trained in {time.perf_counter() - t0:.1f}s -> {self.preorderer_path}")

    def evaluate_preorderer(self) -> None:
        """Kendall tau of the preorderer on the test set against its gold links (when given)."""
        from onmt_xl.align.pharaoh import read_pharaoh
        from onmt_xl.reorder.metrics import evaluate
        from onmt_xl.reorder.oracle import target_ranks
        from onmt_xl.reorder.preorderer import Preorderer

        if not self.data.test_align:
            return
        model = Preorderer.load(str(self.preorderer_path))
        src = _read_tokens(self.data.test_src)
        links = read_pharaoh(self.data.test_align, [len(s) for s in src])
        model.reorder_batch(src[:10])  # compile before timing
        t0 = time.perf_counter()
        orders = model.reorder_batch(src)
        seconds = time.perf_counter() - t0
        scores = evaluate(orders, [target_ranks(len(s), ls) for s, ls in zip(src, links)])
        self.result.preorderer = dict(
            sentences=len(src), tau=scores.tau, monotone_tau=scores.monotone_tau,
            exact_match=scores.exact_match, frs=scores.frs, sentences_per_second=len(src) / max(seconds, 1e-9),
        )
        _say("preorderer on the held-out test set:\n" + scores.format())

    def write_configs(self) -> Dict[str, Path]:
        out = self.path("configs")
        out.mkdir(parents=True, exist_ok=True)
        paths = {}
        for system in self.systems:
            paths[system] = out / f"{system}.yaml"
            cfg = config(system, str(self.workdir), self.overrides)
            cfg["cpu_precision"] = "auto"  # bf16 where this CPU computes it natively
            paths[system].write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        return paths

    def build_vocab(self, cfg: Path) -> None:
        if self.path("vocab.src").exists() and self.path("vocab.tgt").exists():
            return
        _say("onmt_build_vocab")
        _run([_stock("onmt_build_vocab"), "-config", str(cfg), "-n_sample", "-1"], self.path("logs", "build_vocab.log"), show="")

    def train(self, system: str, cfg: Path) -> Path:
        steps = config(system, str(self.workdir), self.overrides)["train_steps"]
        model = self.path("models", f"{system}_step_{steps}.pt")
        if not model.exists():
            _say(f"onmt_train {system} ({steps} steps)")
            t0 = time.perf_counter()
            _run([_stock("onmt_train"), "-config", str(cfg)], self.path("logs", f"onmt_train_{system}.log"))
            _say(f"  {system} trained in {time.perf_counter() - t0:.0f}s")
        return model

    def translate(self, system: str, model: Path, name: Optional[str] = None) -> Path:
        """``onmt_translate`` of the test split with ``system``'s source transform; ``name``: of the
        hypothesis file and log (default: the system's)."""
        name = name or system
        hyp = self.path("hyp", f"test.{name}")
        if not hyp.exists():
            hyp.parent.mkdir(parents=True, exist_ok=True)
            tmp = hyp.with_suffix(".partial")
            args = [_stock("onmt_translate"), "-model", str(model), "-src", str(self.path("data", "test.src")),
                    "-output", str(tmp), "-beam_size", str(self.beam_size), "-batch_size", "64", "-batch_type", "sents",
                    "-cpu_precision", "auto"]
            transform = source_transform(system)
            if transform:
                args += ["-transforms", transform, "-xl_preorderer", str(self.preorderer_path)]
            _say(f"onmt_translate {name}")
            _run(args, self.path("logs", f"onmt_translate_{name}.log"), show="")
            tmp.rename(hyp)
        return hyp

    def score(self, hyps: Dict[str, Path]) -> None:
        import sacrebleu

        from onmt_xl.experiments.scoring import paired_bootstrap

        refs = Path(self.path("data", "test.ref")).read_text(encoding="utf-8").splitlines()
        texts = {s: Path(h).read_text(encoding="utf-8").splitlines() for s, h in hyps.items()}
        for system, text in texts.items():
            self.result.bleu[system] = sacrebleu.corpus_bleu(text, [refs], force=True).score
            self.result.chrf[system] = sacrebleu.corpus_chrf(text, [refs]).score
        if "baseline" in texts and len(texts) > 1:
            others = {s: t for s, t in texts.items() if s != "baseline"}
            for system, p in paired_bootstrap(others, texts["baseline"], refs).items():
                self.result.significance[system] = f"p={p:.4f} vs baseline (paired bootstrap)"

    def count_parameters(self, system: str, model: Path) -> None:
        self.result.params[system] = count_checkpoint_parameters(str(model))

    def run(self) -> PipelineResult:
        t0 = time.perf_counter()
        self.stage_data()
        gdfa = self.align()
        self.oracle(gdfa)
        self.train_preorderer(gdfa)
        self.evaluate_preorderer()
        cfgs = self.write_configs()
        self.build_vocab(cfgs[self.systems[-1]])
        hyps = {}
        for system in self.systems:
            model = self.train(system, cfgs[system])
            self.count_parameters(system, model)
            hyps[system] = self.translate(system, model)
        self.score(hyps)
        summary = self.result.format()
        self.path("results.json").write_text(json.dumps(self.result.__dict__, indent=2), encoding="utf-8")
        _say(f"done in {time.perf_counter() - t0:.0f}s\n" + summary)
        return self.result
