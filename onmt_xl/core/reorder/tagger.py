"""Part-of-speech views from a morphological analyser, for the preorderer's ``pos`` feature group.

The corpus is already tokenized, often more finely than the analyser would (KyTea-like ``分か り ま せ ん``
against MeCab's ``分かり ませ ん``). So the analyser reads the *joined* sentence, and each of our tokens takes the
analysis of the morpheme that covers its first character:

* ``pos``: coarse and fine part of speech (UniDic ``pos1-pos2``, e.g. ``助詞-格助詞``), marked ``~`` when the
  token starts inside the morpheme (the second half of a word the analyser kept whole);
* ``infl``: for inflecting words the conjugation type and form (``助動詞|助動詞-タ|終止形-一般``), else the
  finest part of speech (``pos1-pos2-pos3``).

Sub-word markers (joiner ``￭``, spacer ``▁``, ``@@``) are left out of the text the analyser reads, so pieces
take the analysis of the word they belong to. Both become stable ids (CRC-32 above the other views' ids) that
:meth:`onmt_xl.core.reorder.features.Vocab.encode` puts in the ``g`` views. Tagging is per sentence, so a cache of the
preorderer's outputs per sentence (the ``xl_position`` transform's) caches it too.

A model trained with a tagger records it in its file (:meth:`Tagger.record`: name, package and dictionary
versions) and tags its input itself; loading one where the analyser is not installed fails with
:class:`TaggerMissing`, which names the packages to install. Other installed versions than the recorded ones
give a warning: the tags, and so the orders, may differ a little.

The one tagger is ``unidic``: MeCab through ``fugashi`` with the ``unidic-lite`` dictionary, both wheels on
PyPI (``pip install 'onmt-xl[ja]'``).
"""

from __future__ import annotations

import importlib.util
import logging
import zlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from onmt_xl.core.errors import XLUsageError

logger = logging.getLogger(__name__)

TAGGERS = ("unidic",)
POS_BASE = 1 << 42  # above every word, cluster and shape id
INFL_BASE = 1 << 43
_MARKERS = ("￭", "▁", "@@")  # as onmt_xl.core.reorder.features' word shapes
_PACKAGES = {"unidic": (("fugashi", "fugashi"), ("unidic_lite", "unidic-lite"))}  # (module, distribution)


class TaggerMissing(XLUsageError, ImportError):
    """The analyser a preorderer needs is not installed: the message names the packages to install."""

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.problem))


def _strip_markers(token: str) -> str:
    """``token`` without sub-word markers at either end (the token itself when nothing else is left)."""
    core = token
    for mark in _MARKERS:
        if core.startswith(mark) and len(core) > len(mark):
            core = core[len(mark):]
        if core.endswith(mark) and len(core) > len(mark):
            core = core[: -len(mark)]
    return core


def _stable_id(base: int, label: str) -> int:
    return base + zlib.crc32(label.encode("utf-8"))


def _version(dist: str) -> Optional[str]:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_installed(name: str, why: str) -> None:
    """Raise :class:`TaggerMissing` unless the packages of tagger ``name`` are importable; ``why`` says who
    needs it (e.g. the model file)."""
    if name not in _PACKAGES:
        raise XLUsageError(None, None, f"{why}: unknown tagger {name!r} (this onmt_xl knows {', '.join(TAGGERS)})")
    missing = [dist for module, dist in _PACKAGES[name] if importlib.util.find_spec(module) is None]
    if missing:
        raise TaggerMissing(None, None, f"{why} the Japanese tagger {name!r}, which needs the package(s) "
                            f"{', '.join(missing)}, not installed: pip install 'onmt-xl[ja]' "
                            f"(or pip install {' '.join(missing)})")


class Tagger:
    """The ``unidic`` tagger (MeCab through fugashi, unidic-lite dictionary); the analyser starts on first use
    (it does not pickle, so a copy sent to another process starts its own)."""

    name = "unidic"

    def __init__(self, recorded: Optional[Dict[str, Any]] = None, why: str = "this preorderer uses"):
        check_installed(self.name, why)
        self._mecab = None
        if recorded is not None:
            now = self.record()
            if recorded.get("packages") != now["packages"]:
                logger.warning("%s the tagger %s with %s; installed: %s (tags may differ a little)", why, self.name,
                               recorded.get("packages"), now["packages"])

    def __getstate__(self) -> Dict[str, Any]:
        return {}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._mecab = None

    def record(self) -> Dict[str, Any]:
        """What a model file records about the tagger: its name and the installed package versions."""
        return {"name": self.name, "packages": {dist: _version(dist) for _, dist in _PACKAGES[self.name]}}

    def _analyser(self):
        if self._mecab is None:
            import fugashi
            import unidic_lite

            self._mecab = fugashi.Tagger(f'-d "{unidic_lite.DICDIR}"')
        return self._mecab

    def morphemes(self, text: str) -> List[Tuple[int, int, Tuple[str, ...]]]:
        """``(start, end, features)`` of each morpheme of ``text`` (character offsets); ``features`` =
        ``(pos1, pos2, pos3, cType, cForm)``, ``"*"`` where empty."""
        out, pos = [], 0
        for node in self._analyser()(text):
            pos += len(node.white_space)
            f = node.feature
            feats = tuple((getattr(f, k, None) or "*") for k in ("pos1", "pos2", "pos3", "cType", "cForm"))
            out.append((pos, pos + len(node.surface), feats))
            pos += len(node.surface)
        return out

    def tags(self, tokens: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """``(pos ids, infl ids)``, one each per token (see the module docstring)."""
        n = len(tokens)
        pos_ids = np.empty(n, dtype=np.int64)
        infl_ids = np.empty(n, dtype=np.int64)
        if n == 0:
            return pos_ids, infl_ids
        tokens = [_strip_markers(t) for t in tokens]
        morphs = self.morphemes("".join(tokens))
        j, start = 0, 0
        for i, tok in enumerate(tokens):
            while j + 1 < len(morphs) and morphs[j][1] <= start:
                j += 1
            m_start, _, (p1, p2, p3, ctype, cform) = morphs[j] if morphs else (start, start, ("*",) * 5)
            inside = "~" if m_start < start else ""
            pos_ids[i] = _stable_id(POS_BASE, f"{p1}-{p2}{inside}")
            infl = f"{p1}|{ctype}|{cform}" if cform != "*" else f"{p1}-{p2}-{p3}"
            infl_ids[i] = _stable_id(INFL_BASE, infl)
            start += len(tok)
        return pos_ids, infl_ids


def make_tagger(name_or_record, why: str = "this preorderer uses") -> Optional[Tagger]:
    """The tagger named (``"unidic"``), or recorded in a model file (a dict), or ``None`` for none."""
    if name_or_record in (None, "none"):
        return None
    recorded = name_or_record if isinstance(name_or_record, dict) else None
    name = recorded.get("name") if recorded is not None else name_or_record
    if name not in TAGGERS:
        raise XLUsageError(None, None, f"{why}: unknown tagger {name!r} (this onmt_xl knows {', '.join(TAGGERS)})")
    return Tagger(recorded, why)
