"""The report's opening: the command, model, machine and versions, the preorderer's quality, training time and
the history of runs (from ``manifest.json`` and ``collect``'s results)."""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Sequence

from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.report.format import fmt


def header(manifest: Dict[str, Any], res: Dict[str, Any], jobs: Sequence[Job]) -> List[str]:
    """The lines under the report's title: how the systems were trained and which have run."""
    m = manifest.get("model", {})
    mach = manifest.get("machine", {})
    ran = [j.name for j in jobs if j.name in res["jobs"]]
    left = [j.name for j in jobs if j.name not in res["jobs"]]
    pre = res.get("preorderer", {})
    lines = [
        f"Command: `{manifest.get('command', '?')}` (resumable; the last run's command).", "",
        f"Model (preset `{manifest.get('preset', '?')}`, the same for every system): d_model {m.get('hidden_size')}, "
        f"{m.get('enc_layers')}+{m.get('dec_layers')} layers, {m.get('heads')} heads, FFN {m.get('transformer_ff')}, "
        f"dropout {m.get('dropout')}, Adam β2 {m.get('adam_beta2')}, noam lr {m.get('learning_rate')} / warm-up "
        f"{m.get('warmup_steps')}, {m.get('batch_size')}-token batches, label smoothing {m.get('label_smoothing')}, "
        f"{manifest.get('train_steps')} steps; beam {manifest.get('beam_size')}. Reported on the corpus' test split; "
        f"the last {manifest.get('valid_size')} training pairs validate. BLEU and chrF: sacrebleu's defaults over the "
        "corpus' tokenized text (scores are not comparable with the papers' figures, which are on other data anyway).",
        "",
        f"Machine: {mach.get('processor')}, {mach.get('cpus')} CPUs, GPU: {mach.get('gpu') or 'none'}. "
        f"Versions: " + ", ".join(f"{k} {v}" for k, v in manifest.get("versions", {}).items()) + ".", "",
        f"Preorderer on the test set (against the test alignments): Kendall tau {fmt(pre.get('tau'), '.4f')} "
        f"(monotone {fmt(pre.get('monotone_tau'), '.4f')}, BTG oracle {fmt(pre.get('oracle_tau'), '.4f')}).", "",
        training_time(res), "",
        f"Trained so far ({len(ran)} of {len(jobs)} jobs): {', '.join(ran) or 'none'}.", "",
        f"Not run yet: {', '.join(left) or 'none'}.", "",
    ]
    for r in manifest.get("runs", []):
        lines.append(run_line(r))
    for r in manifest.get("retired", []):  # jobs taken out of the archive because their system changed since
        lines += ["", f"Removed from the archive on {r['date']}: {', '.join(r['jobs'])}. {r['why']}"]
    return lines + [""]


def run_line(r: Dict[str, Any]) -> str:
    """One run of the manifest's history. ``status`` "running": still running, or stopped from outside (killed)
    after its last update; runs recorded before ``started`` existed only have ``finished``."""
    minutes = f"{r.get('wall_seconds', 0) / 60:.1f} min"
    if "started" not in r:
        when, how = f"finished {r.get('finished')}", ", stopped by the time budget" if r.get("stopped_before") else ""
    elif r.get("status") == "running":
        when = f"started {r['started']}"
        how = f", no end recorded (still running, or killed; last record {r.get('updated')})"
    else:
        when, how = f"started {r['started']}", f", {r.get('status')}"
    done = r.get("jobs_done")
    jobs = f"; jobs finished: {', '.join(done) if done else 'none'}" if done is not None else ""
    stop = f" before {r['stopped_before']}" if r.get("stopped_before") else ""
    return f"- run {when}: {minutes}{how}{stop}{jobs}"


def training_time(res: Dict[str, Any]) -> str:
    """Wall time per trained job, split by how many jobs shared the machine (resumed jobs left out)."""
    by_share: Dict[int, List[float]] = {}
    for e in res["jobs"].values():
        if e.get("train_seconds") and not e.get("resumed_from"):
            by_share.setdefault(int(e.get("concurrent_jobs") or 1), []).append(e["train_seconds"] / 60)
    if not by_share:
        return "Training time per job: none measured yet (resumed jobs only time their last attempt)."
    parts = [f"{statistics.median(v):.1f} min median over {len(v)} job(s) trained "
             + ("alone" if n == 1 else f"{n} at a time") for n, v in sorted(by_share.items())]
    return "Training time per job (wall clock, not resumed): " + "; ".join(parts) + "."
