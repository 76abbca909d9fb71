"""Where ``pos_XL`` (paper Eq. 6) comes from, for any framework's transform: the framework-free half of the
``xl_position`` and ``xl_prereorder`` transforms, shared unchanged by the OpenNMT-py adapter
(:mod:`onmt_xl.opennmt.transforms.xl_position`) and the Eole adapter (:mod:`onmt_xl.eole.transforms`).

``pos_xl[j]`` is the index of source token ``j`` in the source reordered into target order. It comes from the trained
BTG preorderer (``xl_source: preorderer``; read once per process, :func:`load_preorderer`; its outputs cached per
distinct source sentence, since the frameworks re-apply transforms on every pass over the corpus) or from the
corpus' word alignments through the BTG oracle (``xl_source: align``; training and analysis only: with test-side
alignments it is the oracle upper bound of Chen et al. 2020, Sec. 3). At training time a noise ratio ``R`` swaps
random pairs of an n-token sentence's indices, ``R·n/2`` pairs in expectation (:func:`swap_noise`, the noise attack
of §4.5, footnote 4).

**Precomputed positions** (``xl_positions_suffix SUFFIX``, unset by default): a training corpus whose
``path_src + SUFFIX`` exists, and the input file of ``onmt_translate -src FILE`` or ``eole predict`` whose
``FILE + SUFFIX`` exists (the inference corpus :data:`INFER`), take their positions from that file (``onmt-xl
positions``, e.g. cross-fitted: :mod:`onmt_xl.core.reorder.crossfit`, or any positions one wants a model to read), by
line (:class:`PrecomputedPositions`); the file must have been made for that very source file (line count and SHA-256,
checked at ``warm_up``) and the transform must see the file's tokens (no tokenizer before it in that pipeline). Every
other text (a corpus or an input without such a file, a server) keeps the source of ``xl_source``. ``warm_up`` logs
once per corpus and process where its positions come from.

The first source tokens of a process go through the segmentation content check of :mod:`onmt_xl.core.segmentation` (a
preorderer only means something on the segmentation it was trained on), and through the vocabulary check of
:mod:`onmt_xl.core.reorder.coverage`: a preorderer that knows under half of them was trained on other text (another
language pair or corpus), which is logged once per preorderer file and process, as a warning (a user may mean it).

:class:`XLPositionSource` is a mixin: an adapter's ``Transform`` subclass inherits from it and the framework's
``Transform``, maps its options onto :meth:`~XLPositionSource._set_source` and calls
:meth:`~XLPositionSource._load_source` in its ``warm_up``. Imports no framework (``pyproject.toml``, contract
``portable-core``).
"""

from __future__ import annotations

import logging
import os
import random
from contextlib import contextmanager
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from onmt_xl.core.errors import XLInputError, XLUsageError, example_location
from onmt_xl.core.reorder.coverage import VocabCoverage, foreign_text
from onmt_xl.core.segmentation import SUBWORD_TRANSFORMS, MarkerCounts, content_mismatch

logger = logging.getLogger(__name__)

XL_SOURCES = ("preorderer", "align")

#: the example key under which ``xl_position`` stores pos_XL (one index per source token), in both frameworks
XL_POS_KEY = "xl_pos"

#: the corpus id both frameworks give the text they translate (``onmt_translate -src``, ``eole predict``)
INFER = "infer"

#: seed of the noise before the framework's own seed (if any) is applied
DEFAULT_SEED = 1234


def swap_noise(pos_xl: List[int], ratio: float, rng: random.Random) -> List[int]:
    """Swap random pairs of positions so that a share ``ratio`` of the indices changes place in expectation:
    ``ratio·n/2`` pairs, rounded up with the probability of its fraction (stochastic rounding; rounding it to the
    nearest whole would swap nothing at 5 % in a sentence under 21 tokens), at most ``n // 2``."""
    n = len(pos_xl)
    if n < 2 or ratio <= 0:
        return pos_xl
    expected = ratio * n / 2
    n_swaps = int(expected)
    if rng.random() < expected - n_swaps:
        n_swaps += 1
    n_swaps = min(n_swaps, n // 2)
    if n_swaps == 0:
        return pos_xl
    noisy = list(pos_xl)
    chosen = rng.sample(range(n), 2 * n_swaps)
    for a, b in zip(chosen[0::2], chosen[1::2]):
        noisy[a], noisy[b] = noisy[b], noisy[a]
    return noisy


def reorder_tokens(src: Sequence[str], pos_xl: Sequence[int]) -> List[str]:
    """The source tokens in target order: token ``j`` goes to place ``pos_xl[j]`` (the pre-reordering baseline)."""
    reordered = [None] * len(src)
    for token, p in zip(src, pos_xl):
        reordered[p] = token
    return reordered


_LOADED: Dict[Tuple[str, int, int], object] = {}

#: preorderer files whose foreign-text warning this process gave (once per file and process)
_WARNED_FOREIGN: set = set()


def load_preorderer(path: Optional[str]):
    """The preorderer in ``path``, read once per process (option validation and ``warm_up`` both ask for it); a
    file rewritten since (other size or modification time) is read again. ``Preorderer.load`` names the file in
    its errors."""
    from onmt_xl.core.reorder.preorderer import Preorderer

    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except (OSError, TypeError):
        return Preorderer.load(path)  # raises the error naming the file
    if key not in _LOADED:
        _LOADED[key] = Preorderer.load(path)
    return _LOADED[key]


class PrecomputedPositions:
    """``pos_XL`` of one corpus from its positions file (:mod:`onmt_xl.core.reorder.positions_file`), kept compact
    (one flat ``int32`` array). An example is looked up by its line (``cid_line_number``) when that line's text is
    the example's tokens, else by its text (every line of the source file has a 64-bit fingerprint): Eole numbers
    the lines of a strided reader (``num_workers`` > 1, several GPUs) as ``k * stride + offset``, not as the file
    does, and lines with the same text have the same positions (``onmt-xl positions`` puts them in one fold)."""

    def __init__(self, path: str, corpus_path: str, header, rows: Sequence[Sequence[int]], fingerprints):
        import numpy as np

        self.path, self.corpus_path, self.header = path, corpus_path, header
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        self.offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        self.offsets[1:] = np.cumsum(lengths)
        self.flat = np.fromiter((p for r in rows for p in r), dtype=np.int32, count=int(self.offsets[-1]))
        self.fingerprints = np.array(fingerprints, dtype=np.uint64)
        self.order = np.argsort(self.fingerprints, kind="stable")
        self.sorted = self.fingerprints[self.order]

    @classmethod
    def load(cls, path: str, corpus_path: str) -> "PrecomputedPositions":
        """Read and check ``path`` against ``corpus_path`` (once per process while neither file changes)."""
        from onmt_xl.core.reorder.positions_file import check_made_for, read_positions, scan_corpus

        try:
            key = tuple((os.path.abspath(p), os.stat(p).st_mtime_ns, os.stat(p).st_size) for p in (path, corpus_path))
        except OSError:
            key = None
        if key is not None and key in _TABLES:
            return _TABLES[key]
        header, rows = read_positions(path)
        scan = scan_corpus(corpus_path)
        check_made_for(path, header, corpus_path, scan, rows)
        table = cls(path, corpus_path, header, rows, scan.fingerprints)
        if key is not None:
            _TABLES[key] = table
        return table

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, k: int) -> Tuple[int, ...]:
        return tuple(self.flat[self.offsets[k] : self.offsets[k + 1]].tolist())

    def positions(self, tokens: Sequence[str], example, name: str, option: str) -> Tuple[int, ...]:
        """The positions of ``tokens``, the source of ``example`` (see the class docstring); raises
        :class:`~onmt_xl.core.errors.XLInputError` naming the corpus file and line when the file has no line with
        these tokens."""
        import numpy as np

        from onmt_xl.core.reorder.positions_file import fingerprint

        line = (example or {}).get("cid_line_number")
        fp = np.uint64(fingerprint(tokens))
        k = None
        if line is not None and 0 <= line < len(self) and self.fingerprints[line] == fp:
            k = int(line)
        else:
            i = int(np.searchsorted(self.sorted, fp))
            if i < len(self) and self.sorted[i] == fp:
                k = int(self.order[i])
        if k is not None and self.offsets[k + 1] == self.offsets[k] and list(tokens) == [""]:
            return (0,)  # an empty line: both frameworks read it as one empty token
        if k is None or self.offsets[k + 1] - self.offsets[k] != len(tokens):
            self._mismatch(tokens, line, name, option)
        return self.row(k)

    def _mismatch(self, tokens, line: Optional[int], name: str, option: str) -> None:
        hint = (f"a transform before {name} changes the source tokens: make the positions on the text as {name} "
                f"receives it (onmt-xl positions on the transformed files), or unset {option}")
        where = None if line is None else line + 1
        if line is not None and 0 <= line < len(self):
            m = int(self.offsets[line + 1] - self.offsets[line])
            if m != len(tokens):
                raise XLInputError(self.corpus_path, where, f"{len(tokens)} source tokens reach {name}, but "
                                   f"{self.path} has {m} positions for this line; {hint}")
        raise XLInputError(self.corpus_path, where, f"the source tokens reaching {name} are no line of this file as "
                           f"{self.path} was made on it; {hint}")


_TABLES: Dict[tuple, PrecomputedPositions] = {}
_ANNOUNCED: set = set()


class XLPositionSource:
    """The positions of one transform instance. Attributes (set by :meth:`_set_source`, :meth:`_load_source`):
    ``source`` ('preorderer' | 'align'), ``preorderer_path``, ``align_path``, ``cache_size``, ``noise``, ``cache``
    (source sentence -> positions), ``preorderer``, ``align_lines``, ``rng``, ``_seg_sample`` (marker counts of
    the first source tokens, until the content check is done) and ``_coverage`` (the preorderer's vocabulary's
    coverage of the first source tokens, until the foreign-text check is done). ``xl_name`` names the transform in
    messages."""

    xl_name = "xl_position"

    def _set_source(self, source: str, preorderer_path: Optional[str], align_path: Optional[str] = None,
                    cache_size: int = 1_000_000, noise: float = 0.0, positions_suffix: Optional[str] = None) -> None:
        """Options only (no file is read): called when the transform is built or unpickled."""
        self.source = source
        self.positions_suffix = positions_suffix or None
        self.precomputed: Dict[str, PrecomputedPositions] = {}
        self.noise = noise
        self.preorderer_path = preorderer_path
        self.cache_size = cache_size
        self.align_path = align_path
        self.cache = {}
        self._bucket = None
        self._seg_sample = None
        self._coverage = None

    def _load_source(self) -> None:
        """Read the preorderer (or the alignment file of ``align_path``) and start the content check."""
        if self.source == "preorderer":
            if getattr(self, "preorderer", None) is None:
                self.preorderer = load_preorderer(self.preorderer_path)
            self._seg_sample = MarkerCounts([self.preorderer.segmentation.marker or "none"])
            self._coverage = VocabCoverage(self.preorderer.vocab.index)
        self.align_lines = None
        if self.source == "align" and self.align_path:
            try:
                with open(self.align_path, encoding="utf-8") as f:
                    self.align_lines = f.read().splitlines()
            except OSError as err:
                raise XLInputError(self.align_path, None, f"cannot read the alignments: {err.strerror}") from None

    def _load_precomputed(self, corpora: Iterable[Tuple[str, Optional[str], Sequence[str]]]) -> None:
        """With ``xl_positions_suffix``: the positions file of each corpus ``(corpus id, path_src, its transforms)``
        whose pipeline lists this transform and whose ``path_src + SUFFIX`` exists, checked against the corpus; one
        log line per corpus says where its positions come from. The corpus :data:`INFER` is the input file being
        translated. Without the option: nothing."""
        self.precomputed = {}
        if not self.positions_suffix:
            return
        for cid, src_path, names in corpora:
            names = list(names or [])
            if self.xl_name not in names or not src_path:
                continue
            path = str(src_path) + self.positions_suffix
            if not os.path.isfile(path):
                self._announce(cid, src_path, f"from {self._fallback()} (no {path})")
                continue
            before = names[: names.index(self.xl_name)]
            tokenizers = [n for n in before if n in SUBWORD_TRANSFORMS]
            if tokenizers:
                raise XLUsageError(
                    path, None,
                    f"{'the input' if cid == INFER else f'corpus {cid!r}'} ({' -> '.join(before + [self.xl_name])}): "
                    f"{tokenizers[-1]} changes the source "
                    f"tokens before {self.xl_name}, but this file holds positions of the tokens of {src_path}: "
                    f"segment the corpus files first, run onmt-xl positions on them and drop {tokenizers[-1]} "
                    f"from this corpus' transforms, or unset {self._option('xl_positions_suffix')}")
            table = PrecomputedPositions.load(path, str(src_path))
            self.precomputed[cid] = table
            self._announce(cid, src_path, f"from {path} ({table.header.describe()})")

    def _fallback(self) -> str:
        if self.source == "preorderer":
            return f"the preorderer {self.preorderer_path}"
        return "the alignments (BTG oracle)"

    def _announce(self, cid: str, src_path, where: str) -> None:
        what = f"the input {src_path}" if cid == INFER else f"corpus {cid!r}"
        line = f"{self.xl_name}: {what} takes pos_XL {where}"
        if line not in _ANNOUNCED:
            _ANNOUNCED.add(line)
            self._log(line)

    def _log(self, line: str) -> None:
        """One line to the framework's log (an adapter names its framework's logger)."""
        logger.info(line)

    def _has_precomputed(self, example) -> bool:
        return bool(self.precomputed) and (example or {}).get("cid") in self.precomputed

    def _option(self, name: str) -> str:
        """How the user spells option ``name`` in messages (OpenNMT-py's command-line form by default)."""
        return f"-{name}"

    def xl_positions(self, src: List[str], example, is_train: bool = False) -> List[int]:
        """``pos_xl`` of the tokens ``src`` of ``example`` (a dict: ``tgt``, ``align``, corpus id and line for the
        oracle and the messages), with the noise at training time."""
        pos = self._positions(src, example)
        if is_train and self.noise > 0:
            pos = swap_noise(pos, self.noise, self.rng)
        return list(pos)

    def prereordered(self, src: List[str], example) -> List[str]:
        """The tokens ``src`` in the predicted (or oracle) target order, for the pre-reordering baseline."""
        return reorder_tokens(src, self._positions(src, example))

    def _positions(self, src: List[str], example) -> Sequence[int]:
        """``pos_XL`` of ``src`` from the corpus' positions file, else from the source the options chose (the
        preorderer, or the alignments)."""
        if self.precomputed:
            table = self.precomputed.get((example or {}).get("cid"))
            if table is not None:
                return table.positions(src, example, self.xl_name, self._option("xl_positions_suffix"))
        if self.source == "preorderer":
            return self._preordered_positions(src, example)
        return self._oracle_positions(example, len(src))

    @contextmanager
    def _prefilled(self, sources: Sequence[List[str]]) -> Iterator[None]:
        """While open, the cache misses among ``sources`` (a framework's bucket, before its examples are applied one
        by one) are already parsed: in one compiled call, in parallel over numba's threads
        (:meth:`Preorderer.pos_xl_batch`, equal to :meth:`Preorderer.pos_xl` sentence by sentence). Positions the
        cache has no room for are kept until it closes. The content check stays with the examples, one by one, so it
        fails where it did."""
        misses: Dict[str, List[str]] = {}
        if self.source == "preorderer" and getattr(self, "preorderer", None) is not None:
            for src in sources:
                key = " ".join(src)
                if len(src) > 1 and key not in self.cache and key not in misses:
                    misses[key] = src
        if misses:
            self._bucket = {}
            for key, pos in zip(misses, self.preorderer.pos_xl_batch(list(misses.values()))):
                if len(self.cache) < self.cache_size:
                    self.cache[key] = tuple(pos)
                else:
                    self._bucket[key] = tuple(pos)
        try:
            yield
        finally:
            self._bucket = None

    def _preordered_positions(self, src: List[str], example=None) -> Sequence[int]:
        if self._seg_sample is not None:
            self._check_sample(src, example or {})
        if getattr(self, "_coverage", None) is not None:
            self._check_coverage(src, example or {})
        key = " ".join(src)
        pos = self.cache.get(key)
        if pos is None and self._bucket:
            pos = self._bucket.get(key)
        if pos is None:
            pos = tuple(self.preorderer.pos_xl(src))
            if len(self.cache) < self.cache_size:
                self.cache[key] = pos
        return pos

    def _check_sample(self, src: List[str], example) -> None:
        """The content check of :mod:`onmt_xl.core.segmentation` on the first source tokens this process sees: a
        preorderer trained on words fails on pieces carrying joiner, spacer or ``@@`` markers, one trained on
        marked pieces fails on unmarked words."""
        sample = self._seg_sample
        sample.add(src)
        seen = content_mismatch(self.preorderer.segmentation, sample)
        if seen is None:
            if sample.full:
                self._seg_sample = None
            return
        trained = self.preorderer.segmentation
        path, line = example_location(example)
        where = path or "the input"
        if line is not None:
            where += f" (up to line {line})"
        hint = ("retrain the preorderer on text segmented like this (onmt-xl preorder-train --src-subword-model ...)"
                if trained.kind == "words" else
                "segment the source the way the preorderer's training source was (a sub-word transform before "
                f"{self.xl_name}, or pre-segmented files)")
        raise XLInputError(
            self.preorderer_path, None,
            f"segmentation mismatch: this preorderer was trained on {trained.describe()}, but the source tokens "
            f"of {where} reaching {self.xl_name} are {seen}; {hint}",
        )

    def _check_coverage(self, src: List[str], example) -> None:
        """The foreign-text check of :mod:`onmt_xl.core.reorder.coverage` on the first source tokens: a warning, once
        per preorderer file and process, when the preorderer knows under half of them."""
        coverage = self._coverage
        coverage.add(src)
        if not coverage.full:
            return
        self._coverage = None
        where = example_location(example)[0] or "the input"
        message = foreign_text(coverage, self.preorderer_path, where, self.xl_name)
        key = os.path.abspath(str(self.preorderer_path))
        if message and key not in _WARNED_FOREIGN:
            _WARNED_FOREIGN.add(key)
            logger.warning(message)

    def _oracle_positions(self, example, src_len: int) -> List[int]:
        """The BTG oracle's ``pos_xl`` from the example's alignment (``align``: Pharaoh links, a string or a list of
        ``i-j`` tokens), else line ``cid_line_number + 1`` of ``align_path``."""
        from onmt_xl.core.align.pharaoh import parse_pharaoh_line
        from onmt_xl.core.reorder.oracle import btg_oracle

        src_path, line = example_location(example)
        align_path, _ = example_location(example, "align")
        align = example.get("align")
        source = align_path if align_path != example.get("cid") else f"{align_path} (path_align)"
        if align is None and self.align_lines is not None:
            if line is None or line > len(self.align_lines):
                raise XLInputError(self.align_path, line, f"no alignment line for source line {line}")
            align, source = self.align_lines[line - 1], self.align_path
        if align is None:
            raise XLInputError(
                src_path, line,
                f"{self._option('xl_source')} align needs word alignments: set path_align for this corpus "
                f"(or {self._option('xl_align_path')})",
            )
        align = " ".join(align) if isinstance(align, list) else align
        tgt = example.get("tgt")
        if isinstance(tgt, str):  # Eole: raw text until a tokenizing transform
            tgt = tgt.split(" ")
        links = parse_pharaoh_line(align, src_len, len(tgt) if tgt is not None else None, path=source, lineno=line)
        return btg_oracle(src_len, links).pos_xl
