"""Choose between a system's options on a tuning split of the synthetic corpus (never its test split).

    python tools/tune_synthetic.py --workdir runs/tune_synth [--seeds 1,2] [--train-steps 400] [--only NAME ...]

The synthetic SVO→SOV corpus (``onmt_xl.synthetic``) is generated with the demo's size and seed; the last
``--tune-size`` training pairs are carved off as the tuning split, and the rest trains every candidate
(through the stock ``onmt_train`` / ``onmt_translate``, with the configurations of ``onmt_xl.configs`` plus the
candidate's options). Each finished run appends one JSON line to ``WORKDIR/tune.jsonl``, so a killed run
resumes; the table printed at the end gives BLEU and chrF on the tuning split, mean ± sd over seeds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import yaml

from onmt_xl.configs import config, source_transform
from onmt_xl.pipeline import Pipeline, PipelineData, _run, _stock

#: candidate name -> (system of onmt_xl.configs.SYSTEMS, option overrides): what each choice compares
CANDIDATES: Dict[str, Tuple[str, Dict]] = {
    "baseline": ("baseline", {}),
    "disan": ("disan", {}),
    "disan_nogate": ("disan_nogate", {}),
    "inxl_absolute": ("inxl", {"inxl_init": "absolute"}),
    "inxl_identity": ("inxl", {"inxl_init": "identity"}),
    "combination_absolute": ("combination", {"inxl_init": "absolute"}),
    "combination_identity": ("combination", {"inxl_init": "identity"}),
    "exgre_soft": ("exgre", {"reordering_loss": "soft"}),
    "exgre_position": ("exgre", {"reordering_loss": "position"}),
    "exgre_literal": ("exgre", {"reordering_loss": "literal"}),
    "refsr_soft": ("refsr", {"reordering_loss": "soft"}),
    "refsr_position": ("refsr", {"reordering_loss": "position"}),
}


def carve(workdir: Path, tune_size: int) -> PipelineData:
    """The demo's synthetic corpus with its last ``tune_size`` training pairs carved off as the tuning split."""
    from onmt_xl.demo import make_demo_data

    data = make_demo_data(workdir)
    out = workdir / "tune_split"
    out.mkdir(parents=True, exist_ok=True)
    for side in ("src", "tgt"):
        lines = Path(getattr(data, f"train_{side}")).read_text(encoding="utf-8").splitlines(keepends=True)
        (out / f"train.{side}").write_text("".join(lines[:-tune_size]), encoding="utf-8")
        (out / f"tune.{side}").write_text("".join(lines[-tune_size:]), encoding="utf-8")
    return PipelineData(str(out / "train.src"), str(out / "train.tgt"), data.valid_src, data.valid_tgt,
                        str(out / "tune.src"), str(out / "tune.tgt"))


def run_one(pipe: Pipeline, name: str, seed: int, steps: int, beam: int) -> Dict:
    import sacrebleu

    system, options = CANDIDATES[name]
    job = f"{name}_seed{seed}"
    overrides = dict(pipe.overrides, **options, seed=seed, save_model=str(pipe.path("models", job)))
    cfg_path = pipe.path("configs", f"{job}.yaml")
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(yaml.safe_dump(config(system, str(pipe.workdir), overrides), sort_keys=False), encoding="utf-8")
    model = pipe.path("models", f"{job}_step_{steps}.pt")
    t0 = time.perf_counter()
    if not model.exists():
        _run([_stock("onmt_train"), "-config", str(cfg_path)], pipe.path("logs", f"train_{job}.log"), show="Validation perplexity")
    seconds = time.perf_counter() - t0
    hyp = pipe.path("hyp", f"tune.{job}")
    hyp.parent.mkdir(parents=True, exist_ok=True)
    args = [_stock("onmt_translate"), "-model", str(model), "-src", str(pipe.path("data", "test.src")),
            "-output", str(hyp), "-beam_size", str(beam), "-batch_size", "64", "-batch_type", "sents"]
    transform = source_transform(system)
    if transform:
        args += ["-transforms", transform, "-xl_preorderer", str(pipe.preorderer_path)]
    _run(args, pipe.path("logs", f"translate_{job}.log"), show="")
    refs = pipe.path("data", "test.ref").read_text(encoding="utf-8").splitlines()
    text = hyp.read_text(encoding="utf-8").splitlines()
    return {"name": name, "seed": seed, "steps": steps, "bleu": sacrebleu.corpus_bleu(text, [refs]).score,
            "chrf": sacrebleu.corpus_chrf(text, [refs]).score, "train_seconds": round(seconds, 1)}


def table(rows: List[Dict]) -> str:
    by: Dict[str, List[Dict]] = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    out = ["| candidate | seeds | BLEU (mean ± sd) | chrF (mean ± sd) | per seed BLEU |", "| --- | ---: | ---: | ---: | --- |"]
    for name in CANDIDATES:
        rs = sorted(by.get(name, []), key=lambda r: r["seed"])
        if not rs:
            continue
        b, c = [r["bleu"] for r in rs], [r["chrf"] for r in rs]
        sd = (lambda v: statistics.stdev(v) if len(v) > 1 else float("nan"))
        out.append(f"| {name} | {len(rs)} | {statistics.mean(b):.2f} ± {sd(b):.2f} | {statistics.mean(c):.2f} ± {sd(c):.2f} | "
                   + ", ".join(f"{x:.2f}" for x in b) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="example: python tools/tune_synthetic.py --workdir runs/tune_synth --only baseline disan")
    p.add_argument("--workdir", default="runs/tune_synth", help="work directory (resumable)")
    p.add_argument("--seeds", default="1,2", help="comma-separated training seeds")
    p.add_argument("--train-steps", type=int, default=400, help="training steps of every candidate")
    p.add_argument("--tune-size", type=int, default=500, help="training pairs carved off as the tuning split")
    p.add_argument("--beam-size", type=int, default=5)
    p.add_argument("--only", nargs="+", choices=list(CANDIDATES), help="candidates to run (default: all)")
    args = p.parse_args(argv)
    workdir = Path(args.workdir)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    pipe = Pipeline(carve(workdir, args.tune_size), str(workdir), ["baseline"], args.train_steps)
    pipe.stage_data()
    gdfa = pipe.align()
    pipe.train_preorderer(gdfa)
    pipe.build_vocab(pipe.write_configs()["baseline"])
    log = workdir / "tune.jsonl"
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    finished = {(r["name"], r["seed"], r["steps"]) for r in done}
    for seed in seeds:
        for name in args.only or list(CANDIDATES):
            if (name, seed, args.train_steps) in finished:
                continue
            row = run_one(pipe, name, seed, args.train_steps, args.beam_size)
            print(json.dumps(row), flush=True)
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            done.append(row)
    print(table([r for r in done if r["steps"] == args.train_steps and r["seed"] in seeds]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
