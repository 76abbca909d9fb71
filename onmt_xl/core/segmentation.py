"""Which segmentation a source text is in -- words, or the pieces of one sub-word model under one marker
convention -- recorded where a preorderer or alignments are made, checked where they are used.

A preorderer trained on words and applied to sub-word pieces (or alignments made on one segmentation and
used with another) gives a valid permutation that means nothing, and nothing fails. So a
:class:`SegmentationScheme` is recorded in the preorderer file (``onmt-xl preorder-train``) and next to
``onmt-xl align``'s output (:mod:`onmt_xl.core.align.record`), and compared with what the text really is:

* **declared or inferred schemes** are compared with :meth:`SegmentationScheme.matches`: same kind, and
  for sub-words the same marker convention and, when both sides know it, the same model file (sha256 of
  its bytes; the file name and tokenizer are shown, not compared, since the same model gives the same
  pieces through ``onmt_tokenize`` or :mod:`onmt_xl.core.align.subword`);
* **the pipeline check** (:func:`tokenizer_segmentation`, :func:`schemes_reaching`, :func:`pipeline_mismatch`):
  before any data is read, the segmentation a framework's sub-word transforms (``sentencepiece``, ``bpe``,
  ``onmt_tokenize``; the same names and options in OpenNMT-py and Eole, read by each adapter) give the source
  on its way to a transform of ours, compared with the preorderer's;
* **the content check** (:func:`check_tokens`) looks at the tokens themselves. Sub-word text carries
  markers: the joiner ``￭`` (pyonmttok ``joiner_annotate``, :mod:`onmt_xl.core.align.subword`), the spacer ``▁``
  (SentencePiece, pyonmttok ``spacer_annotate``) or subword-nmt's ``@@`` separator. Text is taken to
  carry a marker when at least :data:`MIN_MARKED` tokens and :data:`MIN_FRACTION` of the sampled tokens do;
  word-level text never has these (0 of 956,665 tokens of ``enja``), so a stray marked token cannot make
  word input fail. Sub-word text is taken to be words only when the marker is absent from every sampled
  token: after :data:`MIN_SPACER_TOKENS` non-initial tokens for the spacer (on every word start), after
  :data:`MIN_JOINER_TOKENS` tokens for the joiner and the separator (which only mark split words). A
  scheme with no marker (``none``) cannot be checked by content.

The check only sees markers: two sub-word models with the same convention, or words from two word
tokenizers, look alike; the recorded model hash covers the first case where both sides know the model.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

JOINER = "\uffed"  # ￭
SPACER = "\u2581"  # ▁
SEPARATOR = "@@"  # subword-nmt
MARKER_SYMBOLS = {"joiner": JOINER, "spacer": SPACER, "separator": SEPARATOR}
MARKER_KINDS = ("joiner", "spacer", "separator", "none")
KINDS = ("words", "subword")
TOKENIZERS = ("sentencepiece", "bpe", "onmt_tokenize", "pyonmttok")

MIN_MARKED = 2  # marked tokens needed to call a text marked ...
MIN_FRACTION = 0.02  # ... and this share of its sampled tokens
MIN_SPACER_TOKENS = 20  # non-initial tokens without a spacer before spacer text is called unmarked
MIN_JOINER_TOKENS = 1000  # tokens without a joiner / separator before such text is called unmarked
SAMPLE_TOKENS = 20000  # tokens looked at by the content check (from the start of the text)


def marker(kind: str, symbol: Optional[str] = None) -> str:
    """The marker field: ``"joiner ￭"``, ``"spacer ▁"``, ``"separator @@"`` or ``"none"``."""
    if kind not in MARKER_KINDS:
        raise ValueError(f"marker must be one of {MARKER_KINDS}, got {kind!r}")
    if kind == "none":
        return "none"
    return f"{kind} {symbol or MARKER_SYMBOLS[kind]}"


def _split_marker(value: str):
    kind, _, symbol = value.partition(" ")
    if kind not in MARKER_KINDS or (kind != "none" and not symbol):
        raise ValueError(f"bad marker {value!r}: expected 'joiner ￭', 'spacer ▁', 'separator @@' or 'none'")
    return kind, symbol


def is_marked(token: str, marker_field: str) -> bool:
    return _marked(token, *_split_marker(marker_field))


def _marked(token: str, kind: str, symbol: str) -> bool:
    if kind == "joiner":
        return token.startswith(symbol) or token.endswith(symbol)
    if kind == "spacer":
        return token.startswith(symbol)
    if kind == "separator":
        return len(token) > len(symbol) and token.endswith(symbol)
    return False


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class SegmentationScheme:
    """``kind``: ``"words"`` or ``"subword"``. Sub-words: ``marker`` (see :func:`marker`), ``model`` (file
    name) and ``sha256`` (of the model file; ``None`` when not known), ``tokenizer`` (``sentencepiece``,
    ``bpe`` = subword-nmt, ``onmt_tokenize``/``pyonmttok``; shown, not compared). ``note`` says where the
    scheme comes from when it was not recorded (shown, not stored, not compared)."""

    kind: str = "words"
    marker: Optional[str] = None
    model: Optional[str] = None
    sha256: Optional[str] = None
    tokenizer: Optional[str] = None
    note: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"segmentation kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "words" and (self.marker or self.model or self.sha256):
            raise ValueError("a words segmentation has no marker or model")
        if self.marker is not None:
            _split_marker(self.marker)

    @classmethod
    def words(cls, note: str = "") -> "SegmentationScheme":
        return cls("words", note=note)

    @classmethod
    def subword(cls, marker_field: Optional[str], model_path: Optional[str] = None,
                tokenizer: Optional[str] = None, note: str = "") -> "SegmentationScheme":
        """Sub-words; ``model_path`` (when given and readable) is hashed."""
        sha = file_sha256(model_path) if model_path and os.path.isfile(model_path) else None
        name = os.path.basename(model_path) if model_path else None
        return cls("subword", marker_field, name, sha, tokenizer, note)

    def with_note(self, note: str) -> "SegmentationScheme":
        return SegmentationScheme(self.kind, self.marker, self.model, self.sha256, self.tokenizer, note)

    # --- comparison and messages ---------------------------------------------------------------------

    def matches(self, other: "SegmentationScheme") -> bool:
        """Same kind; for sub-words the same marker and model hash wherever both are known."""
        if self.kind != other.kind:
            return False
        if self.kind == "words":
            return True
        if self.marker and other.marker and self.marker != other.marker:
            return False
        return not (self.sha256 and other.sha256 and self.sha256 != other.sha256)

    def describe(self) -> str:
        """One line for messages, e.g. ``sub-words (sentencepiece model sp.model, sha256 0123456789ab, spacer ▁)``."""
        if self.kind == "words":
            text = "words"
        else:
            parts = []
            model = f"model {self.model}" if self.model else "model not recorded"
            parts.append(f"{self.tokenizer} {model}" if self.tokenizer else model)
            if self.sha256:
                parts.append(f"sha256 {self.sha256[:12]}")
            parts.append({None: "marker not recorded", "none": "no marker"}.get(self.marker, self.marker))
            text = f"sub-words ({', '.join(parts)})"
        return f"{text} [{self.note}]" if self.note else text

    # --- storage -----------------------------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"kind": self.kind}
        for key in ("marker", "model", "sha256", "tokenizer"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, d: Any) -> "SegmentationScheme":
        if not isinstance(d, dict) or "kind" not in d:
            raise ValueError(f"bad segmentation record {d!r}")
        unknown = set(d) - {"kind", "marker", "model", "sha256", "tokenizer"}
        if unknown:
            raise ValueError(f"bad segmentation record: unknown fields {sorted(unknown)}")
        return cls(d["kind"], d.get("marker"), d.get("model"), d.get("sha256"), d.get("tokenizer"))


# --- the content check ------------------------------------------------------------------------------


class MarkerCounts:
    """Marker counts over the first :data:`SAMPLE_TOKENS` tokens of a text (fed a sentence at a time)."""

    def __init__(self, extra_markers: Iterable[str] = (), limit: int = SAMPLE_TOKENS):
        self.markers = [marker(k) for k in ("joiner", "spacer", "separator")]
        for m in extra_markers:
            if m and m != "none" and m not in self.markers:
                self.markers.append(m)
        self.counts = {m: 0 for m in self.markers}
        self._parsed = [(m, *_split_marker(m)) for m in self.markers]
        self.tokens = 0
        self.non_initial = 0
        self.limit = limit

    @property
    def full(self) -> bool:
        return self.tokens >= self.limit

    def add(self, tokens: Sequence[str]) -> None:
        for k, tok in enumerate(tokens):
            if self.tokens >= self.limit:
                return
            self.tokens += 1
            self.non_initial += k > 0
            for m, kind, symbol in self._parsed:
                if _marked(tok, kind, symbol):
                    self.counts[m] += 1

    def present(self, m: str) -> bool:
        n = self.counts.get(m, 0)
        return n >= MIN_MARKED and n >= MIN_FRACTION * self.tokens

    def observed(self) -> Optional[str]:
        """The most frequent marker the text carries, or ``None``."""
        found = [m for m in self.markers if self.present(m)]
        return max(found, key=lambda m: self.counts[m]) if found else None

    def absent(self, m: str) -> bool:
        """Enough tokens looked at, none marked ``m``: text of that convention would show it by now."""
        if self.counts.get(m, 0):
            return False
        kind, _ = _split_marker(m)
        if kind == "spacer":
            return self.non_initial >= MIN_SPACER_TOKENS
        return kind != "none" and self.tokens >= MIN_JOINER_TOKENS

    def summary(self, m: Optional[str] = None) -> str:
        if m is None:
            return f"no {'/'.join(s.split(' ', 1)[1] for s in self.markers)} marker in {self.tokens:,} tokens"
        return f"{m}: {self.counts[m]:,} of {self.tokens:,} tokens"


def count_markers(sentences: Iterable[Sequence[str]], extra_markers: Iterable[str] = (),
                  limit: int = SAMPLE_TOKENS) -> MarkerCounts:
    counts = MarkerCounts(extra_markers, limit)
    for s in sentences:
        counts.add(s)
        if counts.full:
            break
    return counts


def detect(sentences: Iterable[Sequence[str]], note: str = "detected from the text") -> SegmentationScheme:
    """The scheme the tokens show: sub-words with the marker they carry, else words."""
    counts = count_markers(sentences)
    m = counts.observed()
    return SegmentationScheme.words(note) if m is None else SegmentationScheme("subword", m, note=note)


def content_mismatch(expected: SegmentationScheme, counts: MarkerCounts) -> Optional[str]:
    """``None`` when the tokens fit ``expected``; else what they look like, e.g.
    ``sub-words (joiner ￭: 312 of 1,020 tokens)``."""
    seen = counts.observed()
    if expected.kind == "words":
        return None if seen is None else f"sub-words ({counts.summary(seen)})"
    if not expected.marker or expected.marker == "none":
        return None
    if counts.present(expected.marker) or (seen is None and not counts.absent(expected.marker)):
        return None
    if seen is not None:
        return f"sub-words ({counts.summary(seen)}; {counts.summary(expected.marker)})"
    return f"words ({counts.summary()})"


class SegmentationMismatch(ValueError):
    """Raised by the Python API (``Preorderer.train``); the commands raise
    :class:`~onmt_xl.core.errors.XLInputError`."""


def fix_hint(expected: SegmentationScheme, actual_kind: str) -> str:
    """How to fix text of ``actual_kind`` given to something made on ``expected``."""
    if expected.kind == "words" and actual_kind == "subword":
        return ("a preorderer only works on the segmentation it was trained on: give it word-level text, or "
                "retrain it on the sub-word text (onmt-xl preorder-train --src-subword-model MODEL ...)")
    if expected.kind == "subword" and actual_kind == "words":
        return ("segment the text with the same sub-word model first, or use a preorderer trained on words")
    return "use the same sub-word model and marker convention, or retrain the preorderer on this segmentation"


def check_tokens(expected: SegmentationScheme, sentences: Iterable[Sequence[str]], made_on: str,
                 hint: Optional[str] = None) -> Optional[str]:
    """The content check: ``None``, or a message saying that the text is not ``expected``.

    ``made_on`` names what was made on ``expected``, e.g. ``"the preorderer pre.xlp was trained on"``;
    ``hint`` (default :func:`fix_hint`) ends the message.
    """
    counts = count_markers(sentences, [expected.marker] if expected.marker else [])
    seen = content_mismatch(expected, counts)
    if seen is None:
        return None
    if hint is None:
        hint = fix_hint(expected, "words" if seen.startswith("words") else "subword")
    return f"segmentation mismatch: {made_on} {expected.describe()}, but this text is {seen}; {hint}"


# --- the pipeline check (both adapters) ------------------------------------------------------------------

#: the sub-word transforms whose output segmentation is known from their options (OpenNMT-py's and Eole's names)
SUBWORD_TRANSFORMS = ("sentencepiece", "bpe", "onmt_tokenize")


def _onmttok_kwargs(value: Any) -> Dict[str, Any]:
    """``src_onmttok_kwargs`` as a dict (a string before the framework's own validation turns it into one)."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return {}
    return value if isinstance(value, dict) else {}


def tokenizer_segmentation(name: str, model: Optional[str] = None, subword_type: Optional[str] = "none",
                           onmttok_kwargs: Any = None, model_option: str = "src_subword_model",
                           ) -> Optional[SegmentationScheme]:
    """The source segmentation the sub-word transform ``name`` gives, from its source options: ``model``
    (``src_subword_model``; hashed when readable), ``subword_type`` and ``onmttok_kwargs`` (``onmt_tokenize``'s
    ``src_subword_type`` and ``src_onmttok_kwargs``). ``None`` when it leaves the segmentation as it finds it
    (``onmt_tokenize`` with no model that splits nothing) or is not a sub-word transform. ``model_option`` names
    the model option in the note (``{tokenizer}`` is replaced by ``name``).

    ``sentencepiece``: spacer ``▁``; ``bpe``: subword-nmt's ``@@``; ``onmt_tokenize``: the joiner of
    ``joiner_annotate``, else the spacer of ``spacer_annotate`` or of a SentencePiece model in mode ``none``
    (pyonmttok keeps SentencePiece's own spacers there), else no marker."""
    if name not in SUBWORD_TRANSFORMS:
        return None
    note = f"from the {name} transform" + (f", {model_option.format(tokenizer=name)} {model}" if model else "")
    if name == "sentencepiece":
        return SegmentationScheme.subword(marker("spacer"), model, "sentencepiece", note)
    if name == "bpe":
        return SegmentationScheme.subword(marker("separator"), model, "bpe", note)
    kwargs = _onmttok_kwargs(onmttok_kwargs)
    kind = subword_type or "none"
    with_model = kind in ("sentencepiece", "bpe") and bool(model)
    if kwargs.get("joiner_annotate"):
        m = marker("joiner", kwargs.get("joiner"))
    elif kwargs.get("spacer_annotate") or (kind == "sentencepiece" and kwargs.get("mode", "none") == "none"):
        m = marker("spacer")
    else:
        m = "none"
    if not with_model and (m == "none" or kwargs.get("mode", "none") == "none"):
        return None  # no model, nothing split: words in, words out
    return SegmentationScheme.subword(m, model if with_model else None, "onmt_tokenize", note)


def schemes_reaching(name: str, pipelines: Iterable[Tuple[str, Sequence[str]]],
                     scheme_of: Callable[[str], Optional[SegmentationScheme]]) -> List[Tuple[str, SegmentationScheme]]:
    """``(where, scheme)`` for every pipeline ``(where, transform names)`` that lists ``name`` after a sub-word
    transform: the scheme ``scheme_of`` gives the last one of them before ``name``; ``where`` gains the pipeline,
    e.g. ``corpus 'a' (bpe -> xl_position)``. Pipelines without ``name``, or with no sub-word transform before
    it, say nothing (their files may be segmented already: the content check sees those)."""
    out = []
    for where, names in pipelines:
        names = list(names)
        if name not in names:
            continue
        scheme = None
        for before in names[: names.index(name)]:
            scheme = scheme_of(before) or scheme
        if scheme is not None:
            out.append((f"{where} ({' -> '.join(names[: names.index(name) + 1])})", scheme))
    return out


def pipeline_mismatch(trained: SegmentationScheme, scheme: SegmentationScheme, where: str, transform: str,
                      model_option: str = "src_subword_model") -> Optional[str]:
    """``None`` when ``scheme`` (what ``where`` feeds ``transform``) matches ``trained`` (the preorderer's), else
    the message; ``model_option`` names the sub-word model option in the hint (``{tokenizer}``: the transform)."""
    if trained.matches(scheme):
        return None
    if trained.kind == "words":
        hint = ("segment the preorderer's training source with the same model and retrain it "
                "(onmt-xl preorder-train --src-subword-model MODEL ...), or drop the sub-word transform")
    elif scheme.kind == "subword":
        hint = (f"set {model_option.format(tokenizer=scheme.tokenizer)} to the model the preorderer was trained "
                f"with ({trained.model}) and the same marker convention, or retrain the preorderer on this "
                "segmentation")
    else:
        hint = "segment the source with the preorderer's model before this transform"
    return (f"segmentation mismatch: this preorderer was trained on {trained.describe()}, but {where} feeds "
            f"{transform} {scheme.describe()}; {hint}")


# --- command-line declaration -------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser, what: str = "--src") -> None:
    """``--src-subword-model`` and ``--src-subword-marker``: the segmentation of ``--src`` (default: words)."""
    p.add_argument("--src-subword-model", metavar="MODEL",
                   help=f"{what} is sub-word text segmented with this model (SentencePiece, BPE, ...): its name and "
                   "sha256 are recorded and checked wherever the output is used (default: words)")
    p.add_argument("--src-subword-marker", choices=MARKER_KINDS,
                   help=f"marker convention of the sub-word pieces in {what}: joiner ￭ (pyonmttok joiner_annotate), "
                   "spacer ▁ (SentencePiece), separator @@ (subword-nmt) or none (default: read from the text; "
                   "alone, without --src-subword-model: sub-words of an unrecorded model)")
    p.add_argument("--src-tokenizer", choices=TOKENIZERS,
                   help="the tool that segmented the sub-words (recorded and shown, not compared)")


def declared(args: argparse.Namespace, sentences: Sequence[Sequence[str]], src_path: str) -> SegmentationScheme:
    """The scheme ``args`` declare for ``src_path``, checked against its tokens; raises
    :class:`~onmt_xl.core.errors.XLInputError` naming the file when the text does not fit it."""
    from onmt_xl.core.errors import XLInputError, XLUsageError

    model, kind = getattr(args, "src_subword_model", None), getattr(args, "src_subword_marker", None)
    tokenizer = getattr(args, "src_tokenizer", None)
    if model is not None and not os.path.isfile(model):
        raise XLInputError(model, None, "sub-word model file not found (--src-subword-model)")
    counts = count_markers(sentences)
    seen = counts.observed()
    if model is None and kind is None:
        if tokenizer is not None:
            raise XLUsageError(src_path, None, "--src-tokenizer needs --src-subword-model or --src-subword-marker")
        if seen is not None:
            raise XLInputError(
                src_path, None,
                f"looks like sub-word text ({counts.summary(seen)}) but no segmentation was declared: give the "
                "sub-word model it was segmented with (--src-subword-model MODEL), or --src-subword-marker "
                f"{seen.split(' ')[0]} when the model is not at hand, so that its segmentation is recorded",
            )
        return SegmentationScheme.words()
    if kind is None:
        if seen is None:
            raise XLInputError(src_path, None,
                               f"cannot tell the marker convention of the sub-words ({counts.summary()}): "
                               "give --src-subword-marker joiner|spacer|separator|none")
        m = seen
    else:
        m = marker(kind)
    scheme = SegmentationScheme.subword(m, model, tokenizer)
    problem = check_tokens(scheme, sentences, "--src was declared as",
                           "check --src-subword-model and --src-subword-marker")
    if problem:
        raise XLInputError(src_path, None, problem)
    return scheme
