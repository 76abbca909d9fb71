"""Word alignment with eflomal (Östling & Tiedemann 2016, "Efficient word alignment with Markov Chain
Monte Carlo", PBML 106), through the Python API of the PyPI ``eflomal`` package, symmetrized with
grow-diag-final-and (Koehn et al.; see :mod:`onmt_xl.core.align.symmetrize`).

eflomal is a collapsed Gibbs sampler seeded from ``/dev/urandom``; it has no seed option, so the
alignments vary slightly from run to run. Tokens are lowercased by eflomal before alignment.

Sentence pairs where either side is empty are not given to eflomal; they get an empty alignment (an
empty Pharaoh line), so outputs stay line-parallel with the inputs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from onmt_xl.core.align.pharaoh import Links, read_pharaoh, write_pharaoh
from onmt_xl.core.align.symmetrize import grow_diag_final_and
from onmt_xl.core.errors import XLInputError, count

logger = logging.getLogger(__name__)

Sents = Sequence[Sequence[str]]


@dataclass
class AlignmentResult:
    """Per-sentence links, all source-first ``(i, j)``, 0-based.

    ``forward``: eflomal's forward direction (source -> target model; every target word has at most
    one link). ``reverse``: the reverse direction (every source word has at most one link).
    ``symmetrized``: grow-diag-final-and of the two. ``seconds``: wall time of the eflomal run.
    """

    forward: List[Links]
    reverse: List[Links]
    symmetrized: List[Links]
    seconds: float = 0.0


_ASCII_WS = re.compile(r"[^ \t\n\r\f\v]+")


def split_tokens(text: str) -> List[str]:
    """Split on ASCII whitespace only: other Unicode spaces (e.g. U+3000, a token in the KFTT gold data)
    stay tokens, as in Moses-style tokenized text."""
    return _ASCII_WS.findall(text)


def _protect(tok: str) -> str:
    # eflomal splits its input on any Unicode whitespace; hide whitespace inside a token from it.
    return "".join(f"\ue000{ord(c):x}\ue000" if c.isspace() else c for c in tok)


def _eflomal_lines(sents: Sents, keep: Sequence[int], side: str) -> List[str]:
    lines = []
    for k in keep:
        s = list(sents[k])
        line = " ".join(s)
        if line.split() != s:  # slow path: empty tokens or tokens containing whitespace
            for tok in s:
                if not isinstance(tok, str) or not tok:
                    raise XLInputError(None, k + 1, f"{side} sentence has an empty or non-string token {tok!r}")
            line = " ".join(_protect(tok) for tok in s)
        lines.append(line + "\n")
    return lines


def align_corpus(
    src_sents: Sents,
    tgt_sents: Sents,
    *,
    model: int = 3,
    n_iterations: Optional[Tuple[int, int, int]] = None,
    n_samplers: int = 3,
    rel_iterations: float = 1.0,
    null_prior: float = 0.2,
    priors: Optional[str] = None,
) -> AlignmentResult:
    """Align tokenized parallel sentences with eflomal and symmetrize with grow-diag-final-and.

    ``model``: 1 = IBM1, 2 = +HMM, 3 = +fertility (eflomal's default). ``n_iterations``: iterations
    of (IBM1, HMM, fertility); ``None`` lets eflomal choose them from the corpus size, scaled by
    ``rel_iterations``. ``n_samplers``: independent samplers whose counts are combined.
    ``priors``: path to an eflomal priors file (``LEX``/``HMMF``/... lines, see ``eflomal-makepriors``).

    Not seedable: eflomal samples from ``/dev/urandom``, so results vary slightly run to run.
    Pairs with an empty side get empty alignments. Raises :class:`XLInputError` on unequal sentence
    counts or malformed tokens.
    """
    if len(src_sents) != len(tgt_sents):
        raise XLInputError(None, None, f"{len(src_sents)} source sentences but {len(tgt_sents)} target sentences")
    if model not in (1, 2, 3):
        raise ValueError(f"model must be 1 (IBM1), 2 (HMM) or 3 (HMM+fertility), got {model}")
    if n_iterations is not None and len(n_iterations) != 3:
        raise ValueError("n_iterations must be (IBM1, HMM, fertility) iteration counts")
    for side, sents in (("source", src_sents), ("target", tgt_sents)):
        for k, sent in enumerate(sents):
            if isinstance(sent, str):
                raise XLInputError(None, k + 1, f"{side} sentence is a string; expected a list of tokens")

    n = len(src_sents)
    keep = [k for k in range(n) if len(src_sents[k]) and len(tgt_sents[k])]
    forward: List[Links] = [[] for _ in range(n)]
    reverse: List[Links] = [[] for _ in range(n)]
    seconds = 0.0
    if keep:
        settings = dict(model=model, n_iterations=n_iterations, n_samplers=n_samplers,
                        rel_iterations=rel_iterations, null_prior=null_prior)
        seconds = _run_eflomal(src_sents, tgt_sents, keep, settings, priors, forward, reverse)
        logger.info("eflomal aligned %d sentence pairs in %.1f s", len(keep), seconds)

    symmetrized = [
        grow_diag_final_and(f, r, len(s), len(t)) for f, r, s, t in zip(forward, reverse, src_sents, tgt_sents)
    ]
    return AlignmentResult(forward, reverse, symmetrized, seconds)


def _run_eflomal(src_sents: Sents, tgt_sents: Sents, keep: Sequence[int], settings: dict, priors: Optional[str],
                 forward: List[Links], reverse: List[Links]) -> float:
    """Align the pairs ``keep`` with an ``eflomal.Aligner(**settings)``, filling their rows of ``forward``
    and ``reverse``; returns eflomal's seconds."""
    import eflomal  # the PyPI package; imported here so the rest of onmt_xl.core.align works without it

    aligner = eflomal.Aligner(**settings)
    with tempfile.TemporaryDirectory(prefix="onmt_xl_eflomal_") as tmp:
        fwd_path, rev_path = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        src_lines = _eflomal_lines(src_sents, keep, "source")
        tgt_lines = _eflomal_lines(tgt_sents, keep, "target")
        start = time.perf_counter()
        with _progress(len(keep)) as quiet:
            if priors is None:
                aligner.align(src_lines, tgt_lines, links_filename_fwd=fwd_path, links_filename_rev=rev_path,
                              quiet=quiet)
            else:
                with open(priors, encoding="utf-8") as pf:
                    aligner.align(
                        src_lines, tgt_lines, links_filename_fwd=fwd_path, links_filename_rev=rev_path,
                        priors_input=pf, quiet=quiet,
                    )
        seconds = time.perf_counter() - start
        src_lens = [len(src_sents[k]) for k in keep]
        tgt_lens = [len(tgt_sents[k]) for k in keep]
        for out, path in ((forward, fwd_path), (reverse, rev_path)):
            try:
                links = read_pharaoh(path, src_lens, tgt_lens)
            except XLInputError as e:
                raise RuntimeError(f"eflomal wrote inconsistent alignments: {e}") from e
            if len(links) != len(keep):
                raise RuntimeError(f"eflomal wrote {len(links)} alignment lines for {len(keep)} sentence pairs")
            for k, ls in zip(keep, links):
                out[k] = ls
    return seconds


_ITERATIONS = re.compile(r" -([123]) (\d+)")
_STAGE = re.compile(r"^Aligning with model \d \((\d+) iterations\)")


@contextlib.contextmanager
def _progress(pairs: int) -> Iterator[bool]:
    """A bar of eflomal's sampling iterations, both directions together, where a bar shows
    (:mod:`onmt_xl.core.progress`); yields the ``quiet`` to run eflomal with. eflomal prints its command line (the
    iterations of each model: ``-1 N1 -2 N2 -3 N3``) and each stage's start and end on stderr, but nothing within a
    stage: the bar moves by whole stages."""
    from onmt_xl.core import progress

    if not progress.shown():
        yield True
        return
    state = {"bar": None, "stages": []}

    def on_line(line: str) -> bool:
        found = _ITERATIONS.findall(line)
        if found and state["bar"] is not None and state["bar"].total is None:
            state["bar"].total = 2 * sum(int(n) for _, n in found)  # forward and reverse
            state["bar"].refresh()
            return True
        m = _STAGE.match(line)
        if m:
            state["stages"].append(int(m.group(1)))
            return True
        if line.startswith("Done:") and state["stages"] and state["bar"] is not None:
            state["bar"].update(state["stages"].pop(0))
            return True
        return bool(re.match(r"(Read texts|Vocabulary sizes|Created alignment|Randomized alignment|Final argmax|"
                             r"Writing alignments)", line))

    with progress.stderr_lines(on_line, on_end=lambda: state["bar"] and state["bar"].close()) as real:
        state["bar"] = progress.bar(file=real, desc=f"eflomal ({pairs:,} pairs)", unit="it", leave=False)
        yield False


def align_with_extra(
    src_sents: Sents, tgt_sents: Sents, extra_src: Sents, extra_tgt: Sents, **kwargs
) -> AlignmentResult:
    """Align a (small) corpus together with extra parallel data and return only the first corpus' rows.

    eflomal is unsupervised, so a small test set (e.g. gold-annotated pairs) aligns much better when its
    statistics are estimated on a bigger corpus. ``kwargs`` go to :func:`align_corpus`;
    ``seconds`` is the time of the joint run.
    """
    if len(extra_src) != len(extra_tgt):
        raise XLInputError(None, None, f"{len(extra_src)} extra source sentences but {len(extra_tgt)} extra target")
    if len(src_sents) != len(tgt_sents):
        raise XLInputError(None, None, f"{len(src_sents)} source sentences but {len(tgt_sents)} target sentences")
    n = len(src_sents)
    res = align_corpus(list(src_sents) + list(extra_src), list(tgt_sents) + list(extra_tgt), **kwargs)
    return AlignmentResult(res.forward[:n], res.reverse[:n], res.symmetrized[:n], res.seconds)


def read_tokenized(path: str) -> List[List[str]]:
    """One tokenized sentence per line (UTF-8), tokens separated by ASCII whitespace; a byte-order mark opening the
    file is dropped."""
    sents = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                sents.append(split_tokens(raw.decode("utf-8-sig" if n == 1 else "utf-8")))
            except UnicodeDecodeError as e:
                raise XLInputError(path, n, f"not valid UTF-8 ({e.reason})") from None
    return sents


def read_parallel(src_path: str, tgt_path: str) -> Tuple[List[List[str]], List[List[str]]]:
    """Read two line-parallel tokenized files; :class:`XLInputError` naming both if their line counts differ."""
    src, tgt = read_tokenized(src_path), read_tokenized(tgt_path)
    if len(src) != len(tgt):
        raise XLInputError(tgt_path, None, f"has {count(len(tgt), 'line')} but {src_path} has {len(src):,}; "
                           "the files must be parallel")
    return src, tgt


def write_result(out_prefix: str, result: AlignmentResult) -> List[str]:
    """Write ``out_prefix.fwd``, ``.rev`` and ``.gdfa`` (Pharaoh, 0-based, source first); return the paths."""
    paths = []
    for ext, links in (("fwd", result.forward), ("rev", result.reverse), ("gdfa", result.symmetrized)):
        path = f"{out_prefix}.{ext}"
        write_pharaoh(path, links)
        paths.append(path)
    return paths


def align_files(
    src_path: str,
    tgt_path: str,
    out_prefix: str,
    *,
    extra_src_path: Optional[str] = None,
    extra_tgt_path: Optional[str] = None,
    **kwargs,
) -> AlignmentResult:
    """Align two line-parallel tokenized files; write ``out_prefix.{fwd,rev,gdfa}`` in Pharaoh format.

    Each output has one line per input line; a line pair where either side is empty (or blank) gets an
    empty alignment line. With ``extra_src_path``/``extra_tgt_path`` the extra pairs are aligned together
    with the input (see :func:`align_with_extra`) but not written. Raises :class:`XLInputError` naming
    the files when their line counts differ. ``kwargs`` go to :func:`align_corpus`.
    """
    if (extra_src_path is None) != (extra_tgt_path is None):
        raise ValueError("give both extra_src_path and extra_tgt_path, or neither")
    src, tgt = read_parallel(src_path, tgt_path)
    if extra_src_path is not None:
        extra_src, extra_tgt = read_parallel(extra_src_path, extra_tgt_path)
        result = align_with_extra(src, tgt, extra_src, extra_tgt, **kwargs)
    else:
        result = align_corpus(src, tgt, **kwargs)
    write_result(out_prefix, result)
    return result
