"""Cross-fitted (k-fold jackknife) positions: each line's ``pos_XL`` from a preorderer that never saw it.

A preorderer parses its own training sentences better than unseen ones (Kendall tau 0.891 against 0.853 on the
shared ja-en data, issue 76), so an NMT model trained on the positions of a preorderer trained on the same corpus
learns to trust positions better than any it meets when translating. As parsers do for POS tags, the corpus is cut
into ``k`` folds; the preorderer trained on the other ``k - 1`` folds gives each fold its positions.

**The fold rule** (:func:`fold_of`): a line's fold is the first 8 bytes of the SHA-256 of its tokens joined by single
spaces (UTF-8), read big-endian, modulo ``k``. It depends on the text alone, so it is the same on every machine and
run, whatever the order of the lines, and lines with the same source share a fold: no preorderer sees a duplicate of
a sentence it predicts. Lines of fewer than two tokens get the trivial order; lines with an empty side are never
trained on, but a non-empty source still gets its fold's prediction.

:func:`crossfit_positions` is the Python API (``onmt-xl positions --folds K`` is a thin layer over it).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

Links = Sequence[Tuple[int, int]]
#: ``train(sentences, links) -> model`` with ``reorder_batch`` (the default: ``Preorderer.train`` with the options)
Trainer = Callable[[List[Sequence[str]], List[Links]], Any]

FOLD_RULE = "sha256(' '.join(tokens))[:8] big-endian mod folds"
SEEN_SAMPLE = 5000


def fold_of(tokens: Sequence[str], folds: int) -> int:
    """The fold of a line (see the module docstring)."""
    digest = hashlib.sha256(" ".join(tokens).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % folds


def fold_assignment(src: Sequence[Sequence[str]], folds: int) -> List[int]:
    return [fold_of(s, folds) for s in src]


@dataclass
class CrossfitFigures:
    """Kendall tau (normalized, :mod:`onmt_xl.core.reorder.metrics`) of the positions against the alignments' target
    order, over the pairs with both sides non-empty; ``seen_tau``: one fold's preorderer on its own training
    sentences (at most :data:`SEEN_SAMPLE`), when asked for."""

    folds: int
    lines: int
    sentences: int
    tau: float
    exact_match: float
    monotone_tau: float
    oracle_tau: float
    fold_sizes: Optional[List[int]] = None
    seen_tau: Optional[float] = None
    seen_sentences: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def format(self) -> str:
        what = f"out-of-fold positions ({self.folds} folds)" if self.folds else "positions"
        lines = [f"{what}: Kendall tau {self.tau:.4f} (exact order {100 * self.exact_match:.1f} %) over "
                 f"{self.sentences} of {self.lines} lines; monotone {self.monotone_tau:.4f}, BTG oracle "
                 f"{self.oracle_tau:.4f}"]
        if self.seen_tau is not None:
            lines.append(f"fold 1's preorderer on {self.seen_sentences} of its own training sentences: Kendall tau "
                         f"{self.seen_tau:.4f}")
        return "\n".join(lines)


def inverse(perm: Sequence[int]) -> List[int]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return out


def predict_positions(model, src: Sequence[Sequence[str]], batch_size: int = 1000, progress: bool = False,
                      desc: str = "parse") -> List[List[int]]:
    """``pos_XL`` of every line by ``model`` (trivial for lines of fewer than two tokens)."""
    from tqdm import tqdm

    out: List[List[int]] = [list(range(len(s))) for s in src]
    todo = [k for k, s in enumerate(src) if len(s) > 1]
    with tqdm(total=len(todo), desc=desc, unit="sent", disable=None if progress else True, leave=False) as bar:
        for a in range(0, len(todo), batch_size):
            chunk = todo[a : a + batch_size]
            for k, order in zip(chunk, model.reorder_batch([src[k] for k in chunk])):
                out[k] = inverse(order)
            bar.update(len(chunk))
    return out


def score(positions: Sequence[Sequence[int]], src: Sequence[Sequence[str]], links: Sequence[Links],
          lines: Sequence[int]):
    """:class:`~onmt_xl.core.reorder.metrics.ReorderScores` of ``positions`` on ``lines`` (0-based)."""
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks

    return evaluate([inverse(positions[k]) for k in lines], [target_ranks(len(src[k]), links[k]) for k in lines])


def figures_of(positions, src, tgt, links, folds: int = 0, fold_sizes=None) -> CrossfitFigures:
    keep = [k for k, (s, t) in enumerate(zip(src, tgt)) if s and t]
    sc = score(positions, src, links, keep)
    return CrossfitFigures(folds, len(src), len(keep), sc.tau, sc.exact_match, sc.monotone_tau, sc.oracle_tau,
                           fold_sizes)


def preorderer_trainer(options: Dict[str, Any], threads: int = 0, progress: bool = True) -> Trainer:
    """``Preorderer.train`` with ``options`` (its keyword arguments, as ``onmt-xl preorder-train`` gives them)."""
    def train(sentences, links):
        from onmt_xl.core.reorder.preorderer import Preorderer

        return Preorderer.train(sentences, links, threads=threads, progress=progress, **options)

    return train


def crossfit_positions(src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], links: Sequence[Links],
                       folds: int, options: Optional[Dict[str, Any]] = None, threads: int = 0, seen_tau: bool = False,
                       progress: bool = True, batch_size: int = 1000,
                       train: Optional[Trainer] = None) -> Tuple[List[List[int]], CrossfitFigures]:
    """Out-of-fold ``pos_XL`` of every line of a line-parallel corpus and their figures (:class:`CrossfitFigures`).

    ``options``: keyword arguments of :meth:`Preorderer.train <onmt_xl.core.reorder.preorderer.Preorderer.train>`
    (``threads`` and ``progress`` apart); ``train``: another trainer (tests). Raises ``ValueError`` when
    ``folds < 2`` or a fold would have nothing to train on."""
    from tqdm import tqdm

    from onmt_xl.core.reorder.threads import set_threads

    if folds < 2:
        raise ValueError(f"cross-fitting needs at least 2 folds, got {folds}")
    if not (len(src) == len(tgt) == len(links)):
        raise ValueError(f"{len(src)} source lines, {len(tgt)} target lines, {len(links)} alignment lines")
    train = train or preorderer_trainer(dict(options or {}), threads, progress)
    set_threads(threads)
    fold = fold_assignment(src, folds)
    usable = [k for k, (s, t) in enumerate(zip(src, tgt)) if s and t]
    positions: List[List[int]] = [list(range(len(s))) for s in src]
    sizes = [fold.count(f) for f in range(folds)]
    seen: Optional[float] = None
    n_seen = None
    for f in tqdm(range(folds), desc="folds", unit="fold", disable=None if progress else True):
        train_lines = [k for k in usable if fold[k] != f]
        if not any(len(src[k]) > 1 for k in train_lines):
            raise ValueError(f"fold {f + 1} of {folds} leaves no sentence of two or more tokens to train on: "
                             "use fewer folds or a larger corpus")
        model = train([src[k] for k in train_lines], [links[k] for k in train_lines])
        lines = [k for k in range(len(src)) if fold[k] == f]
        for k, pos in zip(lines, predict_positions(model, [src[k] for k in lines], batch_size, progress,
                                                   f"parse fold {f + 1}/{folds}")):
            positions[k] = pos
        if seen_tau and f == 0:
            sample = train_lines[:SEEN_SAMPLE]
            own = predict_positions(model, [src[k] for k in sample], batch_size, progress, "parse seen")
            seen = score(own, [src[k] for k in sample], [links[k] for k in sample], range(len(sample))).tau
            n_seen = len(sample)
    figures = figures_of(positions, src, tgt, links, folds, sizes)
    figures.seen_tau, figures.seen_sentences = seen, n_seen
    return positions, figures
