"""The plan of ``onmt-xl experiments``: which models the papers' experiments train, and how each is translated.

A :class:`Job` is one trained model (a system of :data:`onmt_xl.experiments.systems.SYSTEMS`, a seed and option
overrides); its *variants* are the ``onmt_translate`` runs of it (clean test set, swapped words, oracle XL indices
from test-side alignments, forced decoding of a gold reference for attention AER, the Sim metric).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence

from onmt_xl.opennmt.encoders.options import default_xl_heads

#: Experiments in the issue's priority order (``--experiments`` keeps this order whatever is given).
EXPERIMENTS = ("main", "oracle", "tau", "noise", "aer", "encoder_free", "robustness", "sim")
MAIN_SYSTEMS = ("baseline", "combination", "inxl", "headxl", "relative_pe", "disan", "disan_nogate",
                "enc_re", "both_re", "exgre", "refsr", "prereorder")  # table order
LATE_SYSTEMS = ("disan_nogate",)  # variants of ours in the main table, trained after the papers' experiments
SEEDED_SYSTEMS = ("baseline", "combination")  # trained with every --seeds value
NOISE_RATIOS = (0.05, 0.10, 0.15, 0.20)  # Ding et al. 2020, Fig. 4 (0 % is the main Combination)
SWAP_RATIOS = (0.10, 0.20, 0.30, 0.40, 0.50)  # Chen et al. 2019a, Sec. 6.5
AER_SYSTEMS = ("baseline", "inxl", "headxl", "combination")  # Ding et al. 2020, Tab. 3
ROBUST_SYSTEMS = ("baseline", "both_re", "combination")
SIM_SYSTEMS = ("exgre", "refsr", "exgre_literal")  # the last: Eq. 9 as written, whose loss does not reach B


# --- the plan --------------------------------------------------------------------------------------


#: a job trained on cross-fitted positions reads those of its training source (``data/train.src``; with a
#: tokenization ``tok/train.src``) from that file + this (``-xl_positions_suffix``;
#: :meth:`onmt_xl.experiments.stages.DataStages.crossfit` writes them)
XLPOS_SUFFIX = ".xlpos"

#: ``--training-positions`` of ``onmt-xl demo``/``pipeline``: a :class:`Job`'s ``xl_train`` a user may choose
TRAINING_POSITIONS = ("preorderer", "crossfit")

#: how ``--framework eole`` gets Eole, said where it is missing (an installed wheel has no ``tools/install.sh``)
EOLE_INSTALL = "`pip install eole==0.6.4 aiohttp`, or in a checkout of onmt_xl `bash tools/install.sh eole`"


@dataclass
class Job:
    """One trained model. ``xl_train``: where its training XL indices (or reordered sources) come from:
    the preorderer, ``align`` = the BTG oracle of the training alignments (oracle upper bound), or ``crossfit`` =
    cross-fitted preorderers' (``reports/PREREG_xlpos.md``; validation and translation: the preorderer)."""

    name: str
    system: str
    seed: int
    overrides: Dict[str, Any] = field(default_factory=dict)
    xl_train: str = "preorderer"
    variants: List[str] = field(default_factory=list)
    experiments: List[str] = field(default_factory=list)
    train_steps: Optional[int] = None  # None: the run's ``--train-steps``
    final_step: Optional[int] = None  # the step whose model is translated (None: the last); see ``average``
    average: int = 1  # translate the average of the last ``average`` kept checkpoints up to ``final_step``
    preorder_pairs: Optional[int] = None  # its preorderer is trained on the first N training pairs (None: all)

    def add(self, experiment: str, variants: Iterable[str]) -> None:
        if experiment not in self.experiments:
            self.experiments.append(experiment)
        for v in variants:
            if v not in self.variants:
                self.variants.append(v)


def plan(experiments: Sequence[str], seeds: Sequence[int], heads: int) -> List[Job]:
    """The jobs of ``experiments`` in priority order, each trained once however many experiments use it."""
    unknown = [e for e in experiments if e not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiments {unknown}; choose from {', '.join(EXPERIMENTS)}")
    jobs: Dict[str, Job] = {}
    first = seeds[0]

    def job(name: str, system: str, experiment: str, variants=("test",), seed: int = first, **kw) -> None:
        if name not in jobs:
            jobs[name] = Job(name, system, seed, **kw)
        # every model scored on the test set is also scored on the held-out validation pairs: a second test set
        jobs[name].add(experiment, list(variants) + (["valid"] if "test" in variants else []))

    for exp in EXPERIMENTS:
        if exp not in experiments:
            continue
        if exp == "main":
            for s in MAIN_SYSTEMS:
                if s not in LATE_SYSTEMS:
                    job(s, s, exp)
            for seed in seeds[1:]:
                for s in SEEDED_SYSTEMS:
                    job(f"{s}_seed{seed}", s, exp, seed=seed)
        elif exp == "oracle":
            for s in ("combination", "prereorder"):
                job(s, s, exp, ("test", "oracle"))
                job(f"{s}_oracle", s, exp, ("oracle",), xl_train="align")
        elif exp == "tau":
            for tau in range(heads + 1):
                name = "headxl" if tau == default_xl_heads(heads) else f"headxl_tau{tau}"
                job(name, "headxl", exp, overrides={"xl_heads": tau})
        elif exp == "noise":
            job("combination", "combination", exp)
            for r in NOISE_RATIOS:
                job(f"combination_noise{round(100 * r)}", "combination", exp, overrides={"xl_noise": r})
        elif exp == "aer":
            for s in AER_SYSTEMS:
                job(s, s, exp, ("gold_align", "test_align"))
        elif exp == "encoder_free":
            job("encoder_free_none", "encoder_free", exp, overrides={"xl_encoder_free_pe": "none"})
            job("encoder_free", "encoder_free", exp)
            job("encoder_free_inxl", "encoder_free_inxl", exp)
        elif exp == "robustness":
            for s in ROBUST_SYSTEMS:
                job(s, s, exp, ["test"] + [f"swap{round(100 * r)}" for r in SWAP_RATIOS])
        elif exp == "sim":
            for s in SIM_SYSTEMS:
                job(s, s, exp, ("test", "sim"))
    if "main" in experiments:
        for s in LATE_SYSTEMS:
            job(s, s, "main")
    return list(jobs.values())


def swap_words(tokens: Sequence[str], ratio: float, rng: random.Random) -> List[str]:
    """``round(ratio·n/2)`` random pairs of words swapped (about ``ratio·n`` words moved)."""
    from onmt_xl.opennmt.transforms.xl_position import swap_noise

    perm = swap_noise(list(range(len(tokens))), ratio, rng)
    return [tokens[p] for p in perm]
