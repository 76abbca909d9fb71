#!/usr/bin/env python3
"""reports/PREORDER.md from its archive, reports/preorder_enja, bit for bit.

    python tools/study/preorder_report.py render                                      # the one command
    python tools/study/preorder_report.py collect --workdir runs/evidence_jaen        # measure, into the archive

``collect`` measures the preorderers of an ``onmt-xl evidence`` work directory (after
``onmt-xl evidence --stage prepare --preorder-pairs 10000,25000``) and keeps in ``--archive``:

* ``links/{tune,test}.gdfa.gz`` the eflomal links of the study's alignment run, and
  ``orders/NAME.{tune,test}.gz`` each preorderer's predicted order of every sentence (step ``orders``);
* ``spread.jsonl`` the preorderer's tau over further eflomal runs (``tools/study/preorder_spread.py``; step ``spread``);
* ``bench.json`` training time and memory, thread scaling, speed and the span limit's tau (step ``bench``);
* ``show.txt`` ``onmt-xl show-reordering`` of one tuning sentence, ``reports/preorder_show.png`` (step ``show``);
* ``align.json`` eflomal's AER on the gold pairs (``tools/bench/bench_align.py``; step ``align``);
* ``subword.json`` preordering at sub-word level (``tools/bench/bench_subword.py``; step ``subword``).

``render`` recomputes every tau, exact-match and FRS figure from the kept links and orders
(:func:`onmt_xl.core.reorder.metrics.evaluate`) and formats the kept measurements; it reads nothing else, so the
report regenerates on any machine. Options are chosen on the tuning split only; the test split is scored once.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # this checkout's onmt_xl, whatever is installed
sys.path.insert(0, str(REPO / "tools" / "study"))  # preorder_spread
sys.path.insert(0, str(REPO / "tools" / "bench"))  # bench_preorder

ARCHIVE = REPO / "reports" / "preorder_enja"
SPLITS = ("tune", "test")
STEPS = ("orders", "spread", "bench", "show", "align", "subword")


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- archive files ---------------------------------------------------------------------------------


def write_gz(path: Path, lines: Sequence[str]) -> None:
    """``lines`` gzipped into ``path`` with fixed header bytes: equal input, equal bytes."""
    from onmt_xl.experiments.archive import write_gzipped

    path.parent.mkdir(parents=True, exist_ok=True)
    write_gzipped(path, "".join(line + "\n" for line in lines).encode("utf-8"))


def read_gz(path: Path) -> List[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


# --- collect ---------------------------------------------------------------------------------------


def preorderers(workdir: Path) -> List[Dict[str, object]]:
    """The study's preorderers, largest training set first: ``preorderer.xlp`` and every ``preorderer_N.xlp``."""
    manifest = read_json(workdir / "manifest.json") or {}
    n_train = sum(1 for _ in open(workdir / "data" / "train.src", encoding="utf-8"))
    found = [dict(name="preorderer", pairs=n_train, train_seconds=manifest.get("preorderer_train_seconds"))]
    for path in sorted(workdir.glob("preorderer_*.xlp"), key=lambda p: -int(p.stem.split("_")[1])):
        n = int(path.stem.split("_")[1])
        found.append(dict(name=path.stem, pairs=n, train_seconds=manifest.get(f"preorderer_{n}_train_seconds")))
    return found


def collect_orders(workdir: Path, archive: Path) -> None:
    from onmt_xl.core.reorder.preorderer import Preorderer

    manifest = read_json(workdir / "manifest.json") or {}
    models = preorderers(workdir)
    loaded = {m["name"]: Preorderer.load(str(workdir / f"{m['name']}.xlp")) for m in models}
    for split in SPLITS:
        src = [l.split() for l in (workdir / "data" / f"{split}.src").read_text(encoding="utf-8").splitlines()]
        links = (workdir / "align" / f"{split}.gdfa").read_text(encoding="utf-8").splitlines()
        if len(links) != len(src):
            raise SystemExit(f"{workdir}/align/{split}.gdfa: {len(links)} lines for {len(src)} sentences")
        write_gz(archive / "links" / f"{split}.gdfa.gz", links)
        for name, model in loaded.items():
            write_gz(archive / "orders" / f"{name}.{split}.gz",
                     [" ".join(map(str, o)) for o in model.reorder_batch(src)])
    for m in models:
        m["hparams"] = loaded[m["name"]].hparams
    sizes = {s: sum(1 for _ in open(workdir / "data" / f"{s}.src", encoding="utf-8"))
             for s in ("train", "valid", "tune", "test")
             if (workdir / "data" / f"{s}.src").exists()}
    study = read_json(archive / "study.json") or {}
    write_json(archive / "study.json", dict(study, splits=sizes, options=manifest.get("preorder_options") or {},
                                            preorderers=models))


def collect_spread(workdir: Path, archive: Path, runs: int) -> None:
    import preorder_spread

    preorder_spread.main(["--workdir", str(workdir), "--runs", str(runs)])
    rows = (workdir / "preorder_spread.jsonl").read_text(encoding="utf-8").splitlines()[:runs]
    (archive / "spread.jsonl").write_text("".join(r + "\n" for r in rows), encoding="utf-8")


def collect_bench(workdir: Path, archive: Path, spans: Sequence[int]) -> None:
    import bench_preorder

    from onmt_xl.core.align.pharaoh import read_pharaoh
    from onmt_xl.core.reorder.preorderer import Preorderer

    data = workdir / "data"
    manifest = read_json(workdir / "manifest.json") or {}
    options = [a for k, v in (manifest.get("preorder_options") or {}).items()
               for a in (f"--{k.replace('_', '-')}", str(v))]
    out: Dict[str, object] = dict(machine=bench_preorder.machine())
    model_path = archive / "bench_preorderer.xlp.tmp"
    cmd = bench_preorder.preorder_train(data / "train.src", data / "train.tgt", workdir / "align" / "train.gdfa",
                                        model_path, options)
    say("train: " + " ".join(cmd))
    res = bench_preorder._time_v(cmd)
    log = [l for l in res.pop("stderr").splitlines() if l.startswith("preorder-train")]
    out["train"] = dict(res, log=log, command=" ".join(["/usr/bin/time", "-v", "onmt-xl"] + cmd[3:]),
                        load=os.getloadavg())
    model_path.unlink(missing_ok=True)
    out["threads"] = bench_preorder.step_threads_on(data / "train.src", data / "train.tgt",
                                                    workdir / "align" / "train.gdfa",
                                                    archive, options)
    src = [l.split() for l in (data / "tune.src").read_text(encoding="utf-8").splitlines()]
    tgt = [l.split() for l in (data / "tune.tgt").read_text(encoding="utf-8").splitlines()]
    links = read_pharaoh(str(workdir / "align" / "tune.gdfa"), [len(s) for s in src])
    model = Preorderer.load(str(workdir / "preorderer.xlp"))
    out["speed"] = bench_preorder.speed(model, src, list(zip(src, links, map(len, tgt))), spans)
    out["load_after"] = os.getloadavg()
    write_json(archive / "bench.json", replace_paths(out, {str(model_path): "W/preorderer.xlp", str(workdir): "W"}))
    bench_preorder.plot_speed(out, REPO / "reports" / "preorder_speed.png", "Preorderer inference speed (enja tuning "
                              "split)")


def show_line(workdir: Path) -> int:
    """The first tuning sentence of 8 to 12 tokens with at least 5 aligned words whose target order is not
    the source order: one with something to reorder."""
    from onmt_xl.core.align.pharaoh import read_pharaoh
    from onmt_xl.core.reorder.oracle import target_ranks

    src = [l.split() for l in (workdir / "data" / "tune.src").read_text(encoding="utf-8").splitlines()]
    for k, (s, links) in enumerate(zip(src, read_pharaoh(str(workdir / "align" / "tune.gdfa"), [len(s) for s in src]))):
        ranks = [int(r) for r in target_ranks(len(s), links) if r >= 0]
        if 8 <= len(s) <= 12 and len(ranks) >= 5 and ranks != sorted(ranks):
            return k + 1
    return 1


def collect_show(workdir: Path, archive: Path) -> None:
    line = show_line(workdir)
    cmd = ["onmt-xl", "show-reordering", "--model", str(workdir / "preorderer.xlp"), "--src",
           str(workdir / "data" / "tune.src"),
           "--tgt", str(workdir / "data" / "tune.tgt"), "--align", str(workdir / "align" / "tune.gdfa"),
           "--line", str(line), "--png", str(REPO / "reports" / "preorder_show.png")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    out = proc.stdout.replace(str(workdir) + os.sep, "W/")
    (archive / "show.txt").write_text(out, encoding="utf-8")
    study = read_json(archive / "study.json") or {}
    write_json(archive / "study.json", dict(study, show_line=line))


def collect_tool(tool: str, args: Sequence[str], out: Path) -> None:
    cmd = [sys.executable, str(REPO / "tools" / "bench" / tool), *args, "--json", str(out)]
    say(" ".join(cmd))
    if subprocess.run(cmd).returncode:
        raise SystemExit(f"{tool} failed")
    obj = json.loads(out.read_text(encoding="utf-8"))
    write_json(out, portable(obj))


def _map_strings(obj, fn):
    """``obj`` (JSON-like) with ``fn`` applied to every string in it."""
    if isinstance(obj, dict):
        return {k: _map_strings(v, fn) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_strings(v, fn) for v in obj]
    return fn(obj) if isinstance(obj, str) else obj


def replace_paths(obj, paths: Dict[str, str]):
    """``obj`` with every string's occurrences of the keys of ``paths`` replaced by their values."""
    def replace(text: str) -> str:
        for old, new in paths.items():
            text = text.replace(old, new)
        return text

    return _map_strings(obj, replace)


def portable(obj):
    """Paths of this machine made relative to the shared data (no absolute path in the archive)."""
    shared = str(REPO.parent / "shared")

    def relative(text: str) -> str:
        if not os.path.isabs(text):
            return text
        return "../shared" + text[len(shared):] if text.startswith(shared) else os.path.basename(text)

    return _map_strings(obj, relative)


# --- render ----------------------------------------------------------------------------------------


def quality(archive: Path) -> Dict[str, Dict[str, object]]:
    """Per split: the study's preorderers' scores, recomputed from the kept links and orders."""
    from onmt_xl.core.align.pharaoh import parse_pharaoh_line
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks

    study = read_json(archive / "study.json")
    out: Dict[str, Dict[str, object]] = {}
    for split in SPLITS:
        orders = {m["name"]: [[int(x) for x in l.split()]
                              for l in read_gz(archive / "orders" / f"{m['name']}.{split}.gz")]
                  for m in study["preorderers"]}
        lens = [len(o) for o in orders["preorderer"]]
        name = f"{split}.gdfa.gz"
        links = [parse_pharaoh_line(line, n, None, name, k + 1)
                 for k, (line, n) in enumerate(zip(read_gz(archive / "links" / name), lens))]
        ranks = [target_ranks(n, ls) for n, ls in zip(lens, links)]
        out[split] = {name: evaluate(pred, ranks) for name, pred in orders.items()}
    return out


def _mean_sd(values: Sequence[float], digits: int = 4) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"


def _n(x: float) -> str:
    return f"{x:,.0f}"


def render(archive: Path) -> str:
    study = read_json(archive / "study.json")
    if study is None:
        raise SystemExit(f"{archive}/study.json: not found; run: python tools/study/preorder_report.py collect "
                         "--workdir W")
    q = quality(archive)
    models = study["preorderers"]
    main = models[0]
    splits = study["splits"]
    opts = ", ".join(f"`{k}={v}`" for k, v in study["options"].items()) or "the defaults"
    L: List[str] = [
        "# Preordering on enja: quality, speed, alignment",
        "",
        "Generated by `python tools/study/preorder_report.py render` from `reports/preorder_enja/` (bit for bit; "
        "`tests/test_preorder_report.py`). The archive is measured by",
        "",
        "```bash",
        "onmt-xl evidence --workdir runs/evidence_jaen --stage prepare --preorder-pairs 10000,25000",
        "python tools/study/preorder_report.py collect --workdir runs/evidence_jaen",
        "```",
        "",
        "Every tau, exact-match and FRS figure below is recomputed from the kept links and predicted orders "
        "(`onmt_xl.core.reorder.metrics.evaluate`); timings, memory and AER are the kept measurements. The development "
        "history of the preorderer (version 1 against 2, ablations, single unarchived runs on the test pairs) is in "
        "`PREORDER_HISTORY.md`; it cannot be regenerated. XL's cost in training and translation is in `CPU_SPEED.md`.",
        "",
        "## Splits and protocol",
        "",
        f"The study's splits of `../shared/data/enja` (Japanese source, English target; `onmt-xl evidence`): "
        f"{_n(splits['train'])} training pairs, {_n(splits.get('valid', 0))} validation pairs, "
        f"{_n(splits['tune'])} tuning pairs (the last training pairs) and the {_n(splits['test'])} `dev` pairs as "
        "the test split. eflomal (model 3, 3 samplers, grow-diag-final-and) aligns all of them in one run. The "
        f"preorderer's options ({opts}) were chosen on the tuning split (`reports/TUNING.md`); the test split is "
        "scored once per preorderer. Metric: normalized Kendall's tau micro-averaged over aligned word pairs with "
        "distinct target ranks (unaligned words and ties never count), exact match, the fuzzy reordering score FRS "
        "against the BTG oracle order, and FRS-al, the same on the aligned words only.",
        "",
        "## Quality",
        "",
        "| preorderer | training pairs | tau (tune) | tau (test) | exact (test) | FRS (test) | FRS-al (test) | "
        "training s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in models:
        t, s = q["tune"][m["name"]], q["test"][m["name"]]
        secs = f"{m['train_seconds']:.0f}" if m.get("train_seconds") else "–"
        name = "**preorderer**" if m is main else f"first {_n(m['pairs'])} pairs"
        L.append(f"| {name} | {_n(m['pairs'])} | {t.tau:.4f} | {s.tau:.4f} | {s.exact_match:.4f} | {s.frs:.4f} | "
                 f"{s.frs_aligned:.4f} | {secs} |")
    t, s = q["tune"]["preorderer"], q["test"]["preorderer"]
    L.append(f"| monotone order | | {t.monotone_tau:.4f} | {s.monotone_tau:.4f} | {s.monotone_exact_match:.4f} | "
             f"{s.monotone_frs:.4f} | {s.monotone_frs_aligned:.4f} | |")
    L.append(f"| BTG oracle (upper bound) | | {t.oracle_tau:.4f} | {s.oracle_tau:.4f} | {s.oracle_exact_match:.4f} | "
             "1.0000 | 1.0000 | |")
    L += ["", f"Test: {_n(s.n_sentences)} sentences, {_n(s.n_pairs)} aligned pairs; tuning: {_n(t.n_sentences)} "
          f"sentences, {_n(t.n_pairs)} aligned pairs. Training seconds: as `--stage prepare` logged them, with other "
          "work on the machine (an unshared timing is below)."]
    spread = [json.loads(l) for l in (archive / "spread.jsonl").read_text(encoding="utf-8").splitlines()] \
        if (archive / "spread.jsonl").exists() else []
    if spread:
        te, tu = [r["test_tau"] for r in spread], [r["tune_tau"] for r in spread]
        L += ["", "**The aligner's spread.** eflomal samples from `/dev/urandom`, so every alignment run gives other "
              "links, both those the preorderer trains on and those its tau is measured against. Over "
              f"{len(spread)} further runs (each: align again, train with the same options, score against that "
              "run's links; `tools/study/preorder_spread.py`):", "",
              "| | tau (tune) | tau (test) |", "| --- | --- | --- |",
              f"| mean ± sd over {len(spread)} runs | {_mean_sd(tu)} | **{_mean_sd(te)}** |",
              f"| min – max | {min(tu):.4f} – {max(tu):.4f} | {min(te):.4f} – {max(te):.4f} |",
              f"| the study's run (above) | {t.tau:.4f} | {s.tau:.4f} |", "",
              f"So the preorderer's test tau is {_mean_sd(te)}: differences below about "
              f"{2 * statistics.stdev(te):.3f} between single alignment runs are within the aligner's spread."]
    if s.frs < s.monotone_frs:
        al = "above" if s.frs_aligned > s.monotone_frs_aligned else "not above"
        L += ["", "**FRS below the monotone order's.** FRS counts the chunks of the prediction that are contiguous in "
              "the oracle order over *all* words. Unaligned source words (particles, auxiliary endings) are never "
              "constrained by the loss, and the oracle puts them wherever its tie-break lands; each one the model "
              f"places elsewhere costs up to two chunk breaks. On the aligned words alone (FRS-al) the model is {al} "
              f"the monotone order ({s.frs_aligned:.4f} against {s.monotone_frs_aligned:.4f} on test)."]
    L += _render_bench(read_json(archive / "bench.json"))
    if (archive / "show.txt").exists():
        L += ["", "## Seeing the reordering", "", "```bash",
              f"onmt-xl show-reordering --model W/preorderer.xlp --src W/data/tune.src --tgt W/data/tune.tgt "
              f"--align W/align/tune.gdfa --line {study['show_line']} --png reports/preorder_show.png", "```", "",
              "prints the predicted and oracle orders with their Kendall loss, both bracketings (`[…]` straight, "
              "`<…>` inverted), both trees side by side, and for each token its target rank, its `pos_XL` under each "
              "tree and the target words it is aligned to:", "", "```",
              (archive / "show.txt").read_text(encoding="utf-8").rstrip("\n"), "```", "",
              f"![show-reordering, tuning line {study['show_line']}](preorder_show.png)"]
    L += _render_subword(read_json(archive / "subword.json"))
    L += _render_align(read_json(archive / "align.json"))
    return "\n".join(L) + "\n"


def _render_bench(bench: Optional[dict]) -> List[str]:
    if not bench:
        return []
    m, tr = bench["machine"], bench["train"]
    L = ["", "## Training cost and speed", "",
         f"Measured on {m['cpu'] or 'an unnamed CPU'}, {m['cores']} vCPUs, Python {m['python']}; load averages "
         f"(1/5/15 min) before {'/'.join(f'{x:.1f}' for x in m['load'])}, after "
         f"{'/'.join(f'{x:.1f}' for x in bench['load_after'])}.",
         "", f"`{tr['command']}`: **{tr['wall_seconds']:.1f} s wall**"
         + (f", peak RSS **{tr['peak_rss_mib']:.0f} MiB**" if "peak_rss_mib" in tr else "") + "."]
    th = bench.get("threads") or {}
    if th:
        L += ["", "2 training passes (`--iterations 2`), seconds per pass (`--parallel mix` is iterative parameter "
              "mixing, one synchronization per pass; `minibatch` parses 16 sentences in parallel with the same "
              "weights):", "", "| threads, mode | passes | wall s |", "| --- | --- | --- |"]
        for row in th.values():
            L.append(f"| {row['threads']}, {row['parallel']} | "
                     f"{' / '.join(f'{x:.1f}' for x in row['iteration_seconds'])} | {row['wall_seconds']:.1f} |")
    sp = bench["speed"]
    n = sp["threads"]
    L += ["", f"**Inference speed**, sentences per second: *batched* = `reorder_batch` over the whole input list, "
          "*single* = `reorder` one sentence at a time, one thread unless noted. Inputs: the tuning sentences, and "
          "inputs of exactly 20, 50 and 100 tokens cut from them. Span limit 0 is exact CKY; the default is the "
          f"longest training sentence ({sp['default_max_span']}).", "",
          f"| input | tokens | span limit | batched | single | batched, {n} threads |",
          "| --- | --- | --- | --- | --- | --- |"]
    for r in sp["speed"]:
        name = "tuning sentences" if r["input"] == "dev" else f"{r['input']} tokens"
        k = "exact" if r["max_span"] == 0 else (
            str(r["max_span"]) + (" (default)" if r["max_span"] == sp["default_max_span"] else ""))
        L.append(f"| {name} | {r['mean_tokens']} | {k} | {_n(r['batched_1thread'])} | {_n(r['single_1thread'])} | "
                 f"{_n(r[f'batched_{n}threads'])} |")
    L += ["", "![speed](preorder_speed.png)", "",
          "**What the span limit costs in tau**, on consecutive tuning pairs concatenated until each input has at "
          "least 20/50/100 tokens (links offset, so the oracle is the concatenation of the sentences' oracles):", ""]
    cost = sp["span_cost"]
    lens = sorted({c["target_len"] for c in cost})
    head = {t: next(c for c in cost if c["target_len"] == t) for t in lens}
    L += ["| span limit | "
          + " | ".join(f"~{head[t]['mean_tokens']} tokens ({head[t]['inputs']} inputs)" for t in lens) + " |",
          "| --- |" + " --- |" * len(lens),
          "| monotone | " + " | ".join(f"{head[t]['monotone_tau']:.4f}" for t in lens) + " |"]
    for k in sorted({c["max_span"] for c in cost}):
        cells = [next(c for c in cost if c["target_len"] == t and c["max_span"] == k)["tau"] for t in lens]
        L.append(f"| {'exact' if k == 0 else k} | " + " | ".join(f"{x:.4f}" for x in cells) + " |")
    L += ["", "Concatenated sentences are monotone at the top level by construction, which is what the span limit's "
          "straight glue does, so these inputs favour a limit; real long sentences with long-distance reordering "
          "would lose some tau under a small limit (the data has none)."]
    return L


def _render_subword(sub: Optional[dict]) -> List[str]:
    if not sub:
        return []
    word = sub["word"]

    def taus(d):
        return _mean_sd(d["taus"]) if len(d["taus"]) > 1 else f"{d['taus'][0]:.4f}"

    L = ["", "## Sub-word-level preordering", "",
         "Ding et al. (2020) preorder BPE units. The sub-word preorderer trains on word links projected to pieces "
         "(`onmt_xl.core.align.subword.project_links`) or on eflomal run on the sub-word text; its order is collapsed "
         "to words (each word at the mean position of its pieces) and scored against the word links. "
         f"`python tools/bench/bench_subword.py {sub.get('command', '')}`: the preorderer's default options, all "
         f"{_n(sub['train'])} enja training pairs, scored on the {sub['dev']} test pairs (nothing is chosen on them), "
         f"training seeds {', '.join(map(str, sub['seeds']))} (± is the sd over seeds; each run has one eflomal "
         "alignment). Δ is the word-level tau minus the word preorderer's, with a 95 % paired bootstrap interval over "
         "sentences.", "",
         "| system | pieces/word | words split | tau, sub-word level | tau, word level | Δ [95 % CI] |",
         "| --- | --- | --- | --- | --- | --- |",
         f"| word preorderer | 1 | 0 % | | {taus(word)} | |",
         f"| monotone / BTG oracle | | | | {word['monotone_tau']:.4f} / {word['oracle_tau']:.4f} | |"]
    for r in sub["subword"]:
        d = r["vs_word"]
        L.append(f"| {r['kind']}:{r['size']}, {r['alignment']} links | {r['dev_pieces_per_word']:.3f} | "
                 f"{100 * r['dev_words_split']:.1f} % | {taus(r['subword'])} | {taus(r['collapsed'])} | "
                 f"{d['diff']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] |")
    zero = [f"{r['kind']}:{r['size']} ({r['alignment']})" for r in sub["subword"]
            if r["vs_word"]["lo"] <= 0 <= r["vs_word"]["hi"]]
    off = [f"{r['kind']}:{r['size']} ({r['alignment']}, {r['vs_word']['diff']:+.4f})" for r in sub["subword"]
           if not r["vs_word"]["lo"] <= 0 <= r["vs_word"]["hi"]]
    L += ["", "The 95 % interval contains 0 for " + (", ".join(zero) or "none") + "; it excludes 0 for "
          + (", ".join(off) or "none") + ". Projected links give every piece of a word the same target rank, so the "
          "oracle and the loss never split a word; one word alignment serves every sub-word model."]
    return L


def _render_align(al: Optional[dict]) -> List[str]:
    if not al:
        return []
    runs = al["runs"]
    L = ["", "## Alignment quality (AER)", "",
         f"`python tools/bench/bench_align.py {al.get('command', '')}` runs `onmt-xl align --text jaen.src-tgt "
         f"--extra-src train.ja --extra-tgt train.en` {len(runs)} times (eflomal cannot be seeded) on the "
         f"{al['sentences']} KFTT gold pairs of `../shared/data/gold` with the 50k enja training pairs as unlabelled "
         "extra data, and scores each symmetrization (Och & Ney AER, micro-averaged). Mean ± sd over the runs:", "",
         "| symmetrization | AER | precision | recall | links |", "| --- | --- | --- | --- | --- |"]
    for key in runs[0]:
        if not isinstance(runs[0][key], dict) or "aer" not in runs[0][key]:
            continue
        col = {m: [r[key][m] for r in runs] for m in ("aer", "precision", "recall")}
        links = statistics.mean(r[key]["links"] for r in runs) if "links" in runs[0][key] else float("nan")
        name = "**grow-diag-final-and** (what the study uses)" if key == "gdfa" else key
        L.append(f"| {name} | {_mean_sd(col['aer'])} | {_mean_sd(col['precision'])} | {_mean_sd(col['recall'])} | "
                 f"{_n(links)} |")
    secs = [r["eflomal_seconds"] for r in runs]
    L += ["", f"eflomal took {_mean_sd(secs, 1)} s per run on the {_n(al['sentences'] + al['extra_pairs'])} pairs "
          "(both directions, one run of `onmt-xl align`)."]
    return L


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="examples:\n  python tools/study/preorder_report.py render\n"
                                        "  python tools/study/preorder_report.py collect --workdir runs/evidence_jaen "
                                        "--steps orders,show")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="measure the study's preorderers into the archive")
    c.add_argument("--workdir", required=True, help="an onmt-xl evidence work directory (after --stage prepare)")
    c.add_argument("--archive", default=str(ARCHIVE), help="where the measurements go (default reports/preorder_enja)")
    c.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated subset of {','.join(STEPS)}")
    c.add_argument("--spread-runs", type=int, default=5, help="eflomal runs of the spread (default 5)")
    c.add_argument("--align-runs", type=int, default=5, help="eflomal runs of the AER benchmark (default 5)")
    c.add_argument("--spans", default="10,20,30", help="span limits timed and scored besides exact and the default")
    r = sub.add_parser("render", help="write the report from the archive")
    r.add_argument("--archive", default=str(ARCHIVE), help="the measurements (default reports/preorder_enja)")
    r.add_argument("--out", default=str(REPO / "reports" / "PREORDER.md"), help="the report (default "
                   "reports/PREORDER.md)")
    args = ap.parse_args(argv)
    archive = Path(args.archive)
    if args.command == "render":
        Path(args.out).write_text(render(archive), encoding="utf-8")
        say(f"wrote {args.out}")
        return 0
    workdir = Path(args.workdir)
    steps = [s for s in args.steps.split(",") if s]
    bad = [s for s in steps if s not in STEPS]
    if bad:
        ap.error(f"--steps: unknown {', '.join(bad)}; choose from {', '.join(STEPS)}")
    if not (workdir / "preorderer.xlp").exists():
        ap.error(f"{workdir}/preorderer.xlp: not found; run onmt-xl evidence --workdir {workdir} --stage prepare first")
    archive.mkdir(parents=True, exist_ok=True)
    shared = REPO.parent / "shared" / "data"
    for step in steps:
        t0 = time.perf_counter()
        say(f"== {step}")
        if step == "orders":
            collect_orders(workdir, archive)
        elif step == "spread":
            collect_spread(workdir, archive, args.spread_runs)
        elif step == "bench":
            collect_bench(workdir, archive, [int(k) for k in args.spans.split(",") if k])
        elif step == "show":
            collect_show(workdir, archive)
        elif step == "align":
            a = ["--runs", str(args.align_runs)]
            collect_tool("bench_align.py", a, archive / "align.json")
            obj = read_json(archive / "align.json")
            extra = sum(1 for _ in open(shared / "enja" / "train.ja", encoding="utf-8"))
            write_json(archive / "align.json", dict(obj, command=" ".join(a), extra_pairs=extra))
        elif step == "subword":
            a = ["--data", str(shared / "enja"), "--subword", "bpe:8000", "--subword", "sentencepiece:2000", "--seeds",
                 "1,2,3",
                 "--subword-eflomal"]
            collect_tool("bench_subword.py", a, archive / "subword.json")
            obj = read_json(archive / "subword.json")
            write_json(archive / "subword.json", dict(obj, command=" ".join(portable(a))))
        say(f"{step}: {time.perf_counter() - t0:.0f} s; python {platform.python_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
