"""The closing lines of ``onmt-xl pipeline`` on raw text: how to translate new raw text with a trained model and
serve it, as a user copies them (:func:`next_steps`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional


def shown_system(systems: List[str], workdir: Optional[Path] = None, jobs: str = "jobs") -> str:
    """The system the closing commands name: the one with the highest validation BLEU at the final step where the
    run trained to the plateau (``plateau.json``, each system's ``jobs/SYSTEM/curve.jsonl``; Eole's: ``workdir`` is
    ``WORKDIR/eole``, ``jobs`` is ``models``; the first listed on a tie), else the last one other than the baseline,
    else the baseline."""
    best = best_on_validation(systems, workdir, jobs) if workdir is not None else None
    return best or ([s for s in systems if s != "baseline"] or systems)[-1]


def best_on_validation(systems: List[str], workdir: Path, jobs: str = "jobs") -> Optional[str]:
    """The system of ``systems`` whose final model (``plateau.json``: its average or its checkpoint at the final
    step) has the highest validation BLEU; None when a system lacks that score (a run with --train-steps, or one not
    finished)."""
    path = workdir / "plateau.json"
    if not path.exists():
        return None
    state = json.loads(path.read_text(encoding="utf-8"))
    final, chosen = state.get("final_step"), state.get("validation") or {}
    scores = {}
    for system in systems:
        if chosen.get(system, {}).get("average", 1) > 1:  # its average translates the test set
            scores[system] = chosen[system]["bleu_averaged"]
            continue
        curve = workdir / jobs / system / "curve.jsonl"
        rows = [json.loads(line) for line in curve.read_text(encoding="utf-8").splitlines() if line.strip()] \
            if curve.exists() else []
        at = [r["bleu"] for r in rows if r.get("step") == final and r.get("bleu") is not None]
        if not at:
            return None
        scores[system] = at[-1]
    return max(systems, key=lambda s: scores[s]) if scores else None


def next_steps(runner, systems: List[str], framework: str = "opennmt", eole_models: Optional[Dict[str, Path]] = None,
               eole_serve: Optional[Path] = None, served: Optional[Dict[str, str]] = None) -> str:
    """The closing lines of a run on raw text: how to translate new raw text with a trained model and serve it,
    as a user copies them (nothing without a tokenization: the models then expect tokenized text). ``served``: with
    ``--seeds``, each system's run these name (:func:`onmt_xl.experiments.seeds.served_runs`); ``eole_models`` and
    ``eole_serve``'s ids are by system."""
    if not runner.tokenization.active:
        return ""
    eole = framework == "eole"
    served = served or {}
    runs = [served.get(s, s) for s in systems]
    name = shown_system(runs, Path(runner.workdir) / "eole" if eole else Path(runner.workdir),
                        "models" if eole else "jobs")
    system = systems[runs.index(name)]
    which = f"of {system}'s runs, the best on the validation pairs; " if system in served else ""
    if eole:
        model = (eole_models or {}).get(system) or runner.path("eole", "models", name)
        lines = (f"\ntranslate new raw text with {name} ({which}detokenized output; the model's config.json carries "
                 f"the tokenization):\n  eole predict -model_path {model} -src new.txt -output new.out")
        serve = eole_serve  # eole serve -c's configuration of the run's models, where one was written
        if serve is not None:
            request = json.dumps({"model": system, "inputs": ["A raw sentence."], "beam_size": runner.beam_size})
            lines += ("\nserve it (raw text in, detokenized text out; Eole's server takes the decoding options from "
                      f"each request):\n  eole serve -c {serve} --host 127.0.0.1 --port 5000\n"
                      "  curl -X POST http://127.0.0.1:5000/infer -H 'Content-Type: application/json' "
                      f"-d '{request}'")
        return lines
    job = runner.path("jobs", name)
    if not (job / "translate.yaml").exists():
        return ""
    return (f"\ntranslate new raw text with {name} ({which}detokenized output):\n"
            f"  onmt_translate -config {job / 'translate.yaml'} -src new.txt -output new.out\n"
            f"serve it (raw text in, detokenized text out):\n"
            f"  onmt_server --ip 127.0.0.1 --port 5000 --url_root /translator --model_config {job / 'serve.json'}\n"
            "  curl -X POST http://127.0.0.1:5000/translator/translate -H 'Content-Type: application/json' "
            "-d '[{\"src\": \"A raw sentence.\", \"id\": 100}]'")
