"""Raw text in, detokenized text out: how ``onmt-xl pipeline`` tokenizes a corpus.

The pipeline takes raw (untokenized) parallel text. OpenNMT's own tokenizer, pyonmttok, tokenizes it through the
stock ``onmt_tokenize`` transform (OpenNMT-py 3.5.1 and Eole 0.6.4 alike), placed first in every transform
pipeline: the trained model's configuration carries the tokenization, so ``onmt_translate`` (with the
``translate.yaml`` the pipeline writes beside the model) and ``eole predict`` (the model's ``config.json``) read
raw text and write detokenized text (the transform's ``apply_reverse``). The aligner and the preorderer read the
same tokens, made here by the same pyonmttok settings (``tok/`` in the work directory), and the preorderer records
that segmentation, so that ``xl_position``'s segmentation guard finds the pipeline's tokenizer and the
preorderer in agreement (:func:`onmt_xl.core.segmentation.tokenizer_segmentation`).

**The rule** (:func:`choose`): pyonmttok's ``aggressive`` mode with joiners ``￭`` (punctuation split off and
marked, so that detokenization restores it) for every corpus; below :data:`WORD_LEVEL_BELOW` training pairs
that is all (words: too few pairs to learn sub-words worth having); from there on, joint BPE (one model learned
on both sides by pyonmttok's ``BPELearner``) with :func:`bpe_merges` merges: 8,000 below 100,000 pairs, 16,000
below 1,000,000, 32,000 above. A side written without spaces between words (Japanese, Chinese, Thai, ...:
:func:`written_language`) has no words to keep, nor has Korean, whose words carry their particles and endings
(:data:`SUB_WORD_LANGUAGES`): ``auto`` learns BPE for such a corpus at any size. Where ``auto`` keeps words, a side
whose validation words are often unseen in its training text (:func:`unseen_share`) gets a note. ``--tokenize none``
keeps already tokenized input as it is (the scores are then computed on that tokenization, not sacrebleu's standard
ones).

**Scores** of raw text are sacrebleu's on the detokenized output, BLEU with a tokenizer for the target language
(:func:`bleu_tokenizer`): ``ja-mecab`` for Japanese, ``zh`` for Chinese and ``ko-mecab`` for Korean (sacrebleu's
command line's choices), ``char`` for the other scripts without spaces, ``13a`` otherwise; ``--bleu-tokenize``
chooses another. It is recorded with the tokenization, so a resumed run scores its checkpoints the same way.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePath
from typing import Any, Dict, Iterable, List, Optional, Sequence

from onmt_xl.core.segmentation import SegmentationScheme, tokenizer_segmentation

#: ``--tokenize`` choices: ``auto`` applies :func:`choose`'s rule; ``none``: the input is tokenized already
CHOICES = ("auto", "words", "bpe", "none")
#: training pairs from which ``auto`` learns sub-words
WORD_LEVEL_BELOW = 10_000
#: ``(fewer than this many training pairs, BPE merges)``, in order; the last one holds above
BPE_SIZES = ((100_000, 8_000), (1_000_000, 16_000), (None, 32_000))
#: pyonmttok's options for both sides (``src_onmttok_kwargs``/``tgt_onmttok_kwargs`` of ``onmt_tokenize``)
ONMTTOK_KWARGS: Dict[str, Any] = {"mode": "aggressive", "joiner_annotate": True}
#: ``--bleu-tokenize`` choices: ``auto`` (:func:`bleu_tokenizer`) and sacrebleu's tokenizers that need no download
BLEU_TOKENIZERS = ("auto", "13a", "intl", "zh", "ja-mecab", "ko-mecab", "char", "none")
#: the options of ``onmt_tokenize`` in OpenNMT-py's flat configuration (Eole: ``transforms_configs.onmt_tokenize``)
TRANSFORM_OPTIONS = ("src_subword_type", "tgt_subword_type", "src_subword_model", "tgt_subword_model",
                     "src_onmttok_kwargs", "tgt_onmttok_kwargs")


def bpe_merges(pairs: int) -> int:
    """The joint BPE size for ``pairs`` training pairs (:data:`BPE_SIZES`)."""
    for below, merges in BPE_SIZES:
        if below is None or pairs < below:
            return merges
    raise AssertionError("unreachable")


def choose(pairs: int, requested: str = "auto", size: Optional[int] = None, sub_words: bool = False,
           bleu_tokenize: str = "13a") -> "Tokenization":
    """The tokenization of a corpus of ``pairs`` training pairs: ``requested`` (one of :data:`CHOICES`), ``auto``
    by the module's rule (sub-words at any size where ``sub_words``: a side in one of :data:`SUB_WORD_LANGUAGES`);
    ``size``: BPE merges instead of :func:`bpe_merges`'s; ``bleu_tokenize``: sacrebleu's tokenizer of its scores."""
    if requested not in CHOICES:
        raise ValueError(f"--tokenize {requested!r}: choose from {', '.join(CHOICES)}")
    if requested == "auto":
        requested = "words" if pairs < WORD_LEVEL_BELOW and not sub_words else "bpe"
    if requested == "bpe":
        return Tokenization("bpe", size or bpe_merges(pairs), bleu_tokenize=bleu_tokenize)
    return Tokenization(requested, bleu_tokenize=bleu_tokenize if requested != "none" else "13a")


# --- scripts written without spaces between words ------------------------------------------------------

#: ``(language, (first, last) code points)``: scripts whose text has no spaces between words; kana marks Japanese
#: (Han alone: Chinese)
_UNSPACED = (("Japanese", ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))),
             ("Chinese", ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F))),
             ("Thai", ((0x0E00, 0x0E7F),)), ("Lao", ((0x0E80, 0x0EFF),)), ("Khmer", ((0x1780, 0x17FF),)),
             ("Myanmar", ((0x1000, 0x109F),)))
#: share of a text's letters in those scripts from which it is taken as written without spaces, and spaces per
#: letter below which it is not segmented into words already (English has about one space in five letters)
UNSPACED_SHARE, SEGMENTED_SPACES = 0.5, 0.1
#: the languages of those scripts
UNSPACED_LANGUAGES = tuple(language for language, _ in _UNSPACED)
#: the languages whose words are no units to keep below :data:`WORD_LEVEL_BELOW` pairs: those written without
#: spaces, and Korean (a word with its particles and endings is one token of pyonmttok's)
SUB_WORD_LANGUAGES = UNSPACED_LANGUAGES + ("Korean",)
#: the share of a side's validation words unseen in its training text above which kept words get a note
WORDS_UNSEEN_NOTE = 0.2
#: Hangul (syllables, jamo, compatibility jamo): Korean, written with spaces between words
_HANGUL = ((0xAC00, 0xD7AF), (0x1100, 0x11FF), (0x3130, 0x318F))
#: sacrebleu's tokenizer for such a target and for Korean (its command line's choice for ``-l xx-ja``, ``xx-zh`` and
#: ``xx-ko``; ``char`` for the scripts it has no tokenizer for); every other target gets ``13a``
BLEU_BY_LANGUAGE = {"Japanese": "ja-mecab", "Chinese": "zh", "Korean": "ko-mecab", "Thai": "char", "Lao": "char",
                    "Khmer": "char", "Myanmar": "char"}
#: the extra of sacrebleu that a tokenizer needs (both installed with onmt_xl)
_SACREBLEU_EXTRA = {"ja-mecab": "ja", "ko-mecab": "ko"}
_SCRIPTS = _UNSPACED + (("Korean", _HANGUL),)


def _script(ch: str) -> Optional[str]:
    cp = ord(ch)
    for language, ranges in _SCRIPTS:
        if any(lo <= cp <= hi for lo, hi in ranges):
            return language
    return None


def written_language(lines: Iterable[str], limit: int = 2000) -> Optional[str]:
    """The language of text written without spaces between words (``"Japanese"`` where kana make up a tenth of
    those letters or more, else ``"Chinese"`` for Han, or ``"Thai"``, ``"Lao"``, ``"Khmer"``, ``"Myanmar"``) when
    at least :data:`UNSPACED_SHARE` of the letters of the first ``limit`` lines are in such scripts and they have
    fewer than :data:`SEGMENTED_SPACES` spaces per letter (not segmented into words already); ``"Korean"`` where
    that share of them is Hangul; else ``None``."""
    counts: Dict[str, int] = {}
    letters = spaces = 0
    for k, line in enumerate(lines):
        if k >= limit:
            break
        spaces += len(line.strip().split()) - 1 if line.strip() else 0
        for ch in line:
            if unicodedata.category(ch)[0] != "L":
                continue
            letters += 1
            script = _script(ch)
            if script is not None:
                counts[script] = counts.get(script, 0) + 1
    hangul = counts.pop("Korean", 0)
    if letters and hangul >= UNSPACED_SHARE * letters:
        return "Korean"
    unspaced = sum(counts.values())
    if not letters or unspaced < UNSPACED_SHARE * letters or spaces >= SEGMENTED_SPACES * letters:
        return None
    kana, han = counts.pop("Japanese", 0), counts.pop("Chinese", 0)
    if kana + han >= max(counts.values(), default=0):
        return "Japanese" if kana >= 0.1 * (kana + han) else "Chinese"
    return max(counts, key=counts.get)


def bleu_tokenizer(target_language: Optional[str]) -> str:
    """sacrebleu's tokenizer for a target in ``target_language`` (:func:`written_language`; ``None``: another)."""
    return BLEU_BY_LANGUAGE.get(target_language, "13a")


def check_bleu_tokenizer(name: str) -> None:
    """Refuse (:class:`~onmt_xl.core.errors.XLUsageError`, naming what to install) a sacrebleu tokenizer that does
    not load here: ``ja-mecab`` or ``ko-mecab`` without their MeCab."""
    from sacrebleu.metrics import BLEU

    from onmt_xl.core.errors import XLUsageError

    try:
        BLEU(tokenize=name)
    except (ImportError, RuntimeError):  # ja-mecab, ko-mecab without MeCab: sacrebleu's RuntimeError
        raise XLUsageError(None, None, f"sacrebleu's {name} tokenizer does not load here: "
                           f"pip install 'sacrebleu[{_SACREBLEU_EXTRA.get(name, 'ja,ko')}]'") from None


@dataclass(frozen=True)
class Tokenization:
    """``kind``: ``none`` (input tokenized already), ``words`` (pyonmttok, :data:`ONMTTOK_KWARGS`) or ``bpe``
    (and joint BPE of ``merges`` merges, model file ``model``)."""

    kind: str
    merges: int = 0
    model: Optional[str] = None
    #: sacrebleu's tokenizer of the scores (``13a`` in records written before it was recorded)
    bleu_tokenize: str = "13a"

    @property
    def active(self) -> bool:
        return self.kind != "none"

    def describe(self) -> str:
        if self.kind == "none":
            return "none (the input is tokenized already: --tokenize none)"
        text = "pyonmttok aggressive, joiner-annotated (onmt_tokenize)"
        return text + (f", joint BPE of {self.merges:,} merges" if self.kind == "bpe" else ", words")

    def kwargs(self) -> Dict[str, Any]:
        """pyonmttok's options, as ``onmt_tokenize`` builds its tokenizer from :meth:`transform_options`."""
        return dict(ONMTTOK_KWARGS, **({"bpe_model_path": self.model} if self.kind == "bpe" else {}))

    def tokenizer(self):
        import pyonmttok

        return pyonmttok.Tokenizer(**self.kwargs())

    def transform_options(self) -> Dict[str, Any]:
        """``onmt_tokenize``'s options in OpenNMT-py's flat configuration (none without tokenization)."""
        if not self.active:
            return {}
        kind = "bpe" if self.kind == "bpe" else "none"
        opts: Dict[str, Any] = {"src_subword_type": kind, "tgt_subword_type": kind,
                                "src_onmttok_kwargs": repr(ONMTTOK_KWARGS), "tgt_onmttok_kwargs": repr(ONMTTOK_KWARGS)}
        if self.kind == "bpe":
            opts.update(src_subword_model=self.model, tgt_subword_model=self.model)
        return opts

    def scheme(self) -> SegmentationScheme:
        """The source segmentation these tokens are in, as the segmentation guard reads it off the transform."""
        if not self.active:
            return SegmentationScheme.words()
        opts = self.transform_options()
        return tokenizer_segmentation("onmt_tokenize", opts.get("src_subword_model"), opts["src_subword_type"],
                                      ONMTTOK_KWARGS).with_note("")

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Tokenization":
        return cls(d["kind"], d.get("merges", 0), d.get("model"), d.get("bleu_tokenize", "13a"))


def learn_bpe(paths: Sequence[str], merges: int, out: Path) -> int:
    """Learn a joint BPE model of ``merges`` merges on ``paths`` (pyonmttok's ``BPELearner`` over the
    :data:`ONMTTOK_KWARGS` tokens) into ``out``, showing the time it takes (:func:`~onmt_xl.core.progress.ticking`).
    Returns the merges learned: fewer where no pair of symbols is seen twice any more (pyonmttok's line on stderr
    saying so is left out; the caller says it)."""
    import pyonmttok

    from onmt_xl.core.progress import stderr_lines, ticking

    learner = pyonmttok.BPELearner(tokenizer=pyonmttok.Tokenizer(**ONMTTOK_KWARGS), symbols=merges)
    tmp = out.with_name(out.name + ".partial")
    with stderr_lines(lambda line: line.startswith("no pair has frequency")) as real, ticking("learning BPE", real):
        for path in paths:
            learner.ingest_file(str(path))
        learner.learn(str(tmp), verbose=False)
    tmp.replace(out)
    return sum(1 for line in out.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#"))


def tokenize_lines(tokenizer, lines: Iterable[str]) -> List[str]:
    return [" ".join(tokenizer.tokenize(line)[0]) for line in lines]


def unseen_share(tokenizer, train: Iterable[str], held_out: Iterable[str]) -> float:
    """The share of ``held_out``'s tokens (``tokenizer``'s) that no line of ``train`` has; 0 without tokens."""
    seen = {token for line in train for token in tokenizer.tokenize(line)[0]}
    tokens = [token for line in held_out for token in tokenizer.tokenize(line)[0]]
    return sum(token not in seen for token in tokens) / len(tokens) if tokens else 0.0


# --- already tokenized input ---------------------------------------------------------------------------

#: a closing punctuation mark standing apart (`` ,``), or attached to the word before it (``x,``)
_APART = re.compile(r"(?:^|\s)[.,!?;:)\]](?=\s|$)")
_ATTACHED = re.compile(r"[^\s.,!?;:)\]][.,!?;:)\]]")
_ESCAPES = re.compile(r"&(?:apos|quot|amp|lt|gt|#\d+);")
#: punctuation marks looked at, and the share standing apart, before input is called tokenized
MIN_MARKS, APART_SHARE = 20, 0.9


def looks_tokenized(lines: Iterable[str], limit: int = 2000) -> Optional[str]:
    """What shows that raw-looking input is tokenized already (Moses escapes such as ``&apos;``, or closing
    punctuation standing apart from the word before it, `` ,``, in at least :data:`APART_SHARE` of at least
    :data:`MIN_MARKS` marks), or ``None``. Only to inform: tokenized input goes through the pipeline as well."""
    apart = attached = escapes = 0
    for k, line in enumerate(lines):
        if k >= limit:
            break
        apart += len(_APART.findall(line))
        attached += len(_ATTACHED.findall(line))
        escapes += len(_ESCAPES.findall(line))
    if escapes >= MIN_MARKS // 4:
        return f"{escapes} Moses escapes such as &apos;"
    marks = apart + attached
    if marks >= MIN_MARKS and apart >= APART_SHARE * marks:
        return f"{apart} of {marks} punctuation marks stand apart from the word before them"
    return None


def read_record(path: Path) -> Optional[Tokenization]:
    """The tokenization recorded in ``path`` (``tok/tokenization.json``), or None where there is none. Its BPE model
    is the file of that name beside the record, wherever the work directory was written (a record names it by its
    file name; older ones by the absolute path they were written at)."""
    if not path.exists():
        return None
    found = Tokenization.from_dict(json.loads(path.read_text(encoding="utf-8")))
    if found.model:
        found = replace(found, model=str(path.parent / PurePath(found.model).name))
    return found


def write_record(path: Path, tokenization: Tokenization) -> None:
    """Record ``tokenization`` in ``path`` for :func:`read_record`, its BPE model by file name."""
    record = tokenization.to_dict()
    if tokenization.model:
        record["model"] = PurePath(tokenization.model).name
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
