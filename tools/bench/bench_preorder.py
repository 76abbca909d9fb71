#!/usr/bin/env python3
"""Preordering benchmark on Japanese->English: quality, speed, training cost.

    python tools/bench/bench_preorder.py                      # everything, data from ../shared/data/enja
    python tools/bench/bench_preorder.py --steps quality,speed --model runs/enja/preorder.xlp

Steps (each writes into ``--workdir``, default ``runs/enja``, and into the JSON ``--out``):

* ``align``: eflomal + grow-diag-final-and over dev *and* train together (dev first, one run), so
  the 500 dev pairs get alignments estimated on 50.5k pairs; writes ``dev.gdfa`` and
  ``train.gdfa`` (skipped when both exist: eflomal is not seedable, so re-aligning changes the
  figures slightly). The same as ``onmt-xl align --src dev.ja --tgt dev.en --extra-src train.ja
  --extra-tgt train.en`` (:func:`onmt_xl.core.align.eflomal_aligner.align_with_extra`) for the dev rows.
* ``train``: ``onmt-xl preorder-train`` on all training pairs under ``/usr/bin/time -v`` (wall
  time, peak memory), default hyper-parameters;
* ``quality``: normalized Kendall's tau, exact match and FRS on dev against the BTG oracle of the
  dev alignments (:func:`onmt_xl.core.reorder.metrics.evaluate`), next to the monotone order;
* ``speed``: sentences/second on ONE thread on the dev sentences and on inputs of exactly 20, 50
  and 100 tokens (dev sentences concatenated and cut), exact CKY (``max_span`` 0) and with span
  limits (including the model's default, the longest training sentence); the batched speed on
  all threads; and the tau of each span limit on concatenated dev pairs of about 20, 50 and 100
  tokens (their links offset, so the oracle is the concatenation of the oracles).
* ``threads``: training time of 2 iterations with 1 thread and with all threads (scaling);
* ``heldout``: the default hyper-parameters (chosen on dev) on data they were not chosen on:
  trained on all but the last 2,000 training pairs, scored on those;
* ``small``: trained on the first 10,000 pairs only (the setting of lader's figure), scored on dev.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # this checkout's onmt_xl, whatever is installed
Links = List[Tuple[int, int]]


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def machine() -> Dict[str, object]:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return dict(cpu=cpu, cores=os.cpu_count(), python=platform.python_version(), load=os.getloadavg())


# --- data ----------------------------------------------------------------------------------------


def step_align(data: Path, work: Path) -> Dict[str, object]:
    dev, train = work / "dev.gdfa", work / "train.gdfa"
    if dev.exists() and train.exists():
        say(f"align: {dev} and {train} exist, kept")
        return dict(skipped=True)
    from onmt_xl.core.align.eflomal_aligner import align_corpus, read_parallel
    from onmt_xl.core.align.pharaoh import write_pharaoh

    ds, dt = read_parallel(str(data / "dev.ja"), str(data / "dev.en"))
    ts, tt = read_parallel(str(data / "train.ja"), str(data / "train.en"))
    say(f"align: eflomal on {len(ds)} dev + {len(ts)} train pairs together")
    t0 = time.perf_counter()
    res = align_corpus(ds + ts, dt + tt)
    write_pharaoh(str(dev), res.symmetrized[: len(ds)])
    write_pharaoh(str(train), res.symmetrized[len(ds):])
    return dict(seconds=time.perf_counter() - t0, dev_pairs=len(ds), train_pairs=len(ts))


def read_split(data: Path, work: Path, name: str):
    from onmt_xl.core.reorder.cli import read_parallel

    return read_parallel(str(data / f"{name}.ja"), str(data / f"{name}.en"), str(work / f"{name}.gdfa"))


# --- training ------------------------------------------------------------------------------------


def _time_v(cmd: Sequence[str]) -> Dict[str, float]:
    """Run ``cmd`` under ``/usr/bin/time -v`` (when present); wall seconds and peak RSS in MiB."""
    time_bin = shutil.which("time") or "/usr/bin/time"
    wrapped = [time_bin, "-v", *cmd] if os.path.exists(time_bin) else list(cmd)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    t0 = time.perf_counter()
    proc = subprocess.run(wrapped, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    out = dict(wall_seconds=wall, stderr=proc.stderr)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    if m:
        out["peak_rss_mib"] = int(m.group(1)) / 1024
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", proc.stderr)
    if m:
        parts = [float(x) for x in m.group(1).split(":")]
        out["time_v_wall_seconds"] = sum(p * 60 ** k for k, p in enumerate(reversed(parts)))
    for key, pat in (("user_seconds", r"User time \(seconds\): ([\d.]+)"),
                     ("cpu_percent", r"Percent of CPU this job got: (\d+)%")):
        m = re.search(pat, proc.stderr)
        if m:
            out[key] = float(m.group(1))
    return out


def preorder_train(src: Path, tgt: Path, align: Path, model: Path, extra: Sequence[str] = ()) -> List[str]:
    """The ``onmt-xl preorder-train`` command line (run as ``python -m onmt_xl.cli``)."""
    return [sys.executable, "-m", "onmt_xl.cli", "preorder-train", "--src", str(src), "--tgt", str(tgt),
            "--align", str(align), "--model", str(model), "--quiet", *extra]


def train_command(data: Path, work: Path, model: Path, extra: Sequence[str] = ()) -> List[str]:
    return preorder_train(data / "train.ja", data / "train.en", work / "train.gdfa", model, extra)


def step_train(data: Path, work: Path, model: Path, extra: Sequence[str]) -> Dict[str, object]:
    cmd = train_command(data, work, model, extra)
    say("train: " + " ".join(cmd))
    res = _time_v(cmd)
    lines = [l for l in res.pop("stderr").splitlines() if l.startswith("preorder-train")]
    say("\n".join(lines))
    shown = ["onmt-xl"] + cmd[3:]  # = python -m onmt_xl.cli with this checkout on PYTHONPATH
    return dict(command=" ".join(["/usr/bin/time", "-v"] + shown), log=lines, **res)


def step_threads(data: Path, work: Path) -> Dict[str, object]:
    return step_threads_on(data / "train.ja", data / "train.en", work / "train.gdfa", work)


def step_threads_on(src: Path, tgt: Path, align: Path, work: Path, extra: Sequence[str] = ()) -> Dict[str, object]:
    """2 training iterations with 1 thread and with all threads, in both parallel modes (models into ``work``,
    then removed)."""
    import numba

    out = {}
    every = numba.config.NUMBA_NUM_THREADS
    for n, mode in ((1, "mix"), (every, "mix"), (every, "minibatch")):
        model = work / f"threads{n}_{mode}.xlp"
        res = _time_v(preorder_train(src, tgt, align, model,
                                     [*extra, "--iterations", "2", "--threads", str(n), "--parallel", mode]))
        model.unlink(missing_ok=True)
        lines = [l for l in res.pop("stderr").splitlines() if l.startswith("preorder-train")]
        secs = [float(re.search(r"\(([\d.]+)s\)", l).group(1)) for l in lines if "iteration" in l[:27]]
        vocab = re.search(r"word classes ([\d.]+)s", lines[-1])
        out[f"{n}_{mode}"] = dict(threads=n, parallel=mode, iteration_seconds=secs, wall_seconds=res["wall_seconds"],
                                  vocab_seconds=float(vocab.group(1)) if vocab else None, load=os.getloadavg())
        say(f"threads {n} {mode}: iterations {secs}, classes {out[f'{n}_{mode}']['vocab_seconds']}s, "
            f"wall {res['wall_seconds']:.1f}s, load {os.getloadavg()}")
    return out


# --- quality -------------------------------------------------------------------------------------


def step_quality(model_path: Path, data: Path, work: Path) -> Dict[str, object]:
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks
    from onmt_xl.core.reorder.preorderer import Preorderer

    from onmt_xl.core.reorder.oracle import btg_oracle

    model = Preorderer.load(str(model_path))
    dev = read_split(data, work, "dev")
    src = [dev.src[k] for k in dev.keep]
    ranks = [target_ranks(len(dev.src[k]), dev.links[k]) for k in dev.keep]
    pred = model.reorder_batch(src)
    scores = evaluate(pred, ranks)
    say(scores.format())
    # FRS against another reference: the oracle with unaligned words attached to their left neighbour
    left_ref = [btg_oracle(len(dev.src[k]), dev.links[k], with_tree=False, attach_null="left").order for k in dev.keep]
    alt = evaluate(pred, ranks, left_ref)
    say(f"FRS vs the attach-left oracle: model {alt.frs:.4f}, monotone {alt.monotone_frs:.4f}")
    return dict(vars(scores), table=scores.format(), frs_vs_left_attached_oracle=alt.frs,
                monotone_frs_vs_left_attached_oracle=alt.monotone_frs, hparams=model.hparams)


def step_heldout(data: Path, work: Path, n_heldout: int = 2000) -> Dict[str, object]:
    """Default hyper-parameters (chosen on dev) checked on data they were not chosen on: train on
    all but the last ``n_heldout`` training pairs, score on those (alignments from the same run)."""
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks
    from onmt_xl.core.reorder.preorderer import Preorderer

    train = read_split(data, work, "train")
    keep = train.keep
    fit, held = keep[:-n_heldout], keep[-n_heldout:]
    t0 = time.perf_counter()
    model = Preorderer.train([train.src[k] for k in fit], [train.links[k] for k in fit], progress=False)
    seconds = time.perf_counter() - t0
    ranks = [target_ranks(len(train.src[k]), train.links[k]) for k in held]
    scores = evaluate(model.reorder_batch([train.src[k] for k in held]), ranks)
    say(f"held-out {n_heldout} training pairs (trained on {len(fit)}):\n{scores.format()}")
    return dict(vars(scores), table=scores.format(), train_pairs=len(fit), seconds=seconds)


def step_small(data: Path, work: Path, n: int = 10000) -> Dict[str, object]:
    """Trained on the first ``n`` pairs only (lader's setting: 10k pairs), scored on dev."""
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks
    from onmt_xl.core.reorder.preorderer import Preorderer

    train = read_split(data, work, "train")
    dev = read_split(data, work, "dev")
    fit = train.keep[:n]
    model = Preorderer.train([train.src[k] for k in fit], [train.links[k] for k in fit], progress=False)
    ranks = [target_ranks(len(dev.src[k]), dev.links[k]) for k in dev.keep]
    scores = evaluate(model.reorder_batch([dev.src[k] for k in dev.keep]), ranks)
    say(f"trained on {len(fit)} pairs, dev:\n{scores.format()}")
    return dict(vars(scores), table=scores.format(), train_pairs=len(fit))


# --- speed ---------------------------------------------------------------------------------------


def fixed_length_inputs(sents: Sequence[Sequence[str]], n_tokens: int, count: int) -> List[List[str]]:
    """``count`` inputs of exactly ``n_tokens`` tokens: dev sentences concatenated (cyclically) and cut."""
    stream: List[str] = []
    k = 0
    while len(stream) < n_tokens * count:
        stream.extend(sents[k % len(sents)])
        k += 1
    return [stream[i * n_tokens : (i + 1) * n_tokens] for i in range(count)]


def concatenated(triples, target_len: int):
    """Consecutive dev pairs ``(src, links, tgt_len)`` joined until each input has >= ``target_len``
    tokens (links offset); an incomplete last group is dropped."""
    out_src, out_links = [], []
    cur, cur_links, off_s, off_t = [], [], 0, 0
    for s, ls, t_len in triples:
        cur_links.extend((i + off_s, j + off_t) for i, j in ls)
        cur.extend(s)
        off_s += len(s)
        off_t += t_len
        if len(cur) >= target_len:
            out_src.append(cur)
            out_links.append(cur_links)
            cur, cur_links, off_s, off_t = [], [], 0, 0
    return out_src, out_links


def _rate(fn, n_items: int, min_seconds: float = 1.0) -> float:
    fn()  # warm up (compiles on first use)
    reps, t = 0, 0.0
    t0 = time.perf_counter()
    while t < min_seconds:
        fn()
        reps += 1
        t = time.perf_counter() - t0
    return reps * n_items / t


def step_speed(model_path: Path, data: Path, work: Path, spans: Sequence[int]) -> Dict[str, object]:
    from onmt_xl.core.reorder.preorderer import Preorderer

    dev = read_split(data, work, "dev")
    return speed(Preorderer.load(str(model_path)), [dev.src[k] for k in dev.keep],
                 [(dev.src[k], dev.links[k], len(dev.tgt[k])) for k in dev.keep], spans)


def speed(model, src: Sequence[Sequence[str]], triples, spans: Sequence[int]) -> Dict[str, object]:
    """Sentences/s of ``model`` on ``src`` and on inputs of exactly 20, 50 and 100 tokens cut from it, one thread
    (batched and one at a time) and all threads, exact and under each span limit; and each span limit's tau on the
    ``(src, links, target length)`` ``triples`` concatenated to about 20, 50 and 100 tokens."""
    import numba

    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks
    from onmt_xl.core.reorder.preorderer import set_threads

    default_span = model.max_span
    spans = sorted(set(spans) | {default_span} - {0})
    out: Dict[str, object] = dict(default_max_span=default_span)
    all_threads = numba.config.NUMBA_NUM_THREADS

    def one_at_a_time(batch):
        return lambda: [model.reorder(s) for s in batch]

    rows = []
    inputs = {"dev": src}
    for n_tok, count in ((20, 500), (50, 200), (100, 100)):
        inputs[str(n_tok)] = fixed_length_inputs(src, n_tok, count)
    for name, batch in inputs.items():
        mean_len = sum(map(len, batch)) / len(batch)
        for k in [0] + [k for k in spans if k < max(map(len, batch))]:
            model.max_span = k
            set_threads(1)
            row = dict(input=name, mean_tokens=round(mean_len, 1), max_span=k,
                       batched_1thread=_rate(lambda: model.reorder_batch(batch), len(batch)),
                       single_1thread=_rate(one_at_a_time(batch), len(batch)))
            set_threads(all_threads)
            row[f"batched_{all_threads}threads"] = _rate(lambda: model.reorder_batch(batch), len(batch))
            rows.append(row)
            say("speed " + json.dumps({k2: (round(v) if isinstance(v, float) and v > 100 else v)
                                       for k2, v in row.items()}))
    model.max_span = default_span
    out["speed"] = rows
    out["threads"] = all_threads

    # tau cost of span limits on long inputs built from whole pairs
    cost = []
    for target_len in (20, 50, 100):
        csrc, clinks = concatenated(triples, target_len)
        ranks = [target_ranks(len(s), ls) for s, ls in zip(csrc, clinks)]
        for k in [0] + list(spans):
            model.max_span = k
            sc = evaluate(model.reorder_batch(csrc), ranks)
            cost.append(dict(target_len=target_len, inputs=len(csrc),
                             mean_tokens=round(sum(map(len, csrc)) / len(csrc), 1),
                             max_span=k, tau=sc.tau, exact_match=sc.exact_match, frs=sc.frs,
                             monotone_tau=sc.monotone_tau))
            say(f"span cost: ~{target_len} tokens, max_span {k}: tau {sc.tau:.4f} (monotone {sc.monotone_tau:.4f})")
    model.max_span = default_span
    out["span_cost"] = cost
    return out


def plot_speed(result: Dict[str, object], path: Path,
               title: str = "Preorderer inference speed (enja dev, concatenated)") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["speed"]["speed"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for k in sorted({r["max_span"] for r in rows}):
        pts = sorted((r["mean_tokens"], r["batched_1thread"]) for r in rows if r["max_span"] == k)
        if k == 0:
            pts = sorted((r["mean_tokens"], r["batched_1thread"]) for r in rows if r["max_span"] == 0)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label="exact CKY" if k == 0 else f"max_span {k}")
    ax.axhline(2000, color="gray", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tokens per sentence")
    ax.set_ylabel("sentences / second (1 thread, batched)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "enja"), help="directory with "
                    "{train,dev}.{ja,en}")
    ap.add_argument("--workdir", default=str(REPO / "runs" / "enja"))
    ap.add_argument("--model", help="model file (default WORKDIR/preorder.xlp)")
    ap.add_argument("--steps", default="align,train,quality,speed,threads,heldout,small")
    ap.add_argument("--train-args", default="", help="extra preorder-train arguments, e.g. '--iterations 5'")
    ap.add_argument("--spans", default="10,15,20,30", help="span limits to time and score")
    ap.add_argument("--out", help="JSON results (default WORKDIR/bench_preorder.json)")
    args = ap.parse_args(argv)

    data, work = Path(args.data), Path(args.workdir)
    if not (data / "train.ja").exists():
        raise SystemExit(f"no {data}/train.ja: give --data")
    work.mkdir(parents=True, exist_ok=True)
    model = Path(args.model) if args.model else work / "preorder.xlp"
    out_path = Path(args.out) if args.out else work / "bench_preorder.json"
    result: Dict[str, object] = json.loads(out_path.read_text()) if out_path.exists() else {}
    steps = [s for s in args.steps.split(",") if s]
    spans = [int(k) for k in args.spans.split(",") if k]
    result["machine_" + "_".join(steps)] = machine()
    for step in steps:
        t0 = time.perf_counter()
        if step == "align":
            result["align"] = step_align(data, work)
        elif step == "train":
            result["train"] = step_train(data, work, model, args.train_args.split())
        elif step == "quality":
            result["quality"] = step_quality(model, data, work)
        elif step == "speed":
            result["speed"] = step_speed(model, data, work, spans)
            plot_speed(result, work / "preorder_speed.png")
        elif step == "threads":
            result["threads"] = step_threads(data, work)
        elif step == "heldout":
            result["heldout"] = step_heldout(data, work)
        elif step == "small":
            result["small"] = step_small(data, work)
        else:
            raise SystemExit(f"unknown step {step!r}")
        result.setdefault("load_after", {})[step] = os.getloadavg()
        say(f"{step}: {time.perf_counter() - t0:.1f}s, load {os.getloadavg()}")
        out_path.write_text(json.dumps(result, indent=1, default=str))
    say(f"results in {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
