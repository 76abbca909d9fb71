"""The stages before training: data, alignment, preorderer, vocabularies.

Each writes its outputs under the work directory and is skipped when they exist, so a killed run resumes::

    data/      train/valid[/tune]/test (+ swapped test sources, gold AER set)   stage_data
               (with ``test_from_train`` N: the test split is the test pairs and N pairs carved from the
               training pairs, :func:`carve_test_pairs`; ``data/carve.json`` records the carve)
    tok/       raw text (``onmt-xl pipeline``): the splits tokenized as           tokenize
               ``onmt_tokenize`` does, what the aligner and the preorderer read
               (:mod:`onmt_xl.experiments.tokenization`); ``tokenization.json``
    align/     eflomal grow-diag-final-and of test+valid[+tune]+train, one run    align
    preorderer.xlp, preorderer.json (tau on the tuning split, and on test)        preorder
    monotone_check.json (the preorderer against the monotone order, validation)   monotone_check (demo, pipeline)
    vocab.src, vocab.tgt                                                   vocab
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from onmt_xl.core.errors import XLInputError, XLUsageError, count
from onmt_xl.core.progress import ticking
from onmt_xl.experiments.configs import config
from onmt_xl.experiments.plan import SWAP_RATIOS, XLPOS_SUFFIX, swap_words
from onmt_xl.experiments.tokenization import Tokenization
from onmt_xl.experiments.stock import read_lines, say, stock, write_lines

#: ``reports/PREREG_xlpos.md``: folds of the cross-fitted training positions, and the training sentences (the first
#: ones) on which the full preorderer, which saw them, is compared with the cross-fitted positions
CROSSFIT_FOLDS = 5
SEEN_SAMPLE = 5000


@dataclass
class Corpus:
    """Input files: ``train``/``test`` source and target (raw text for ``onmt-xl pipeline``, tokenized with
    ``--tokenize none`` and for ``onmt-xl experiments``); optional gold AER pairs.

    Validation pairs are ``valid_src``/``valid_tgt`` when given, else the ``--valid-size`` training pairs
    before the tuning split; the tuning split is the last ``--tune-size`` training pairs (none when 0): every
    option is chosen on it or on the validation pairs, never on the test pairs. ``test_align``: gold links of the test
    set, which score the preorderer instead of the eflomal ones.
    """

    train_src: str
    train_tgt: str
    test_src: str
    test_tgt: str
    gold_text: Optional[str] = None  # "source ||| target" per line
    gold_align: Optional[str] = None  # 1-indexed, source first
    valid_src: Optional[str] = None
    valid_tgt: Optional[str] = None
    test_align: Optional[str] = None  # Pharaoh, 0-indexed, source first

    def inputs(self) -> List[str]:
        """The files that must exist."""
        return [p for p in (self.train_src, self.train_tgt, self.test_src, self.test_tgt, self.valid_src,
                            self.valid_tgt, self.test_align) if p]

    def check_parallel(self) -> None:
        """Before any work: each pair of files (train, valid, test) has as many lines on both sides
        (:func:`read_parallel`'s error otherwise); a warning where training pairs have an empty side
        (:func:`empty_sides`), and where validation or test source lines are empty (:func:`empty_sources`)."""
        for split, src, tgt in (("train", self.train_src, self.train_tgt), ("valid", self.valid_src, self.valid_tgt),
                                ("test", self.test_src, self.test_tgt)):
            if src and tgt:
                s, t = read_parallel(src, tgt)
                note = empty_sides(src, tgt, s, t) if split == "train" else empty_sources(src, s, split)
                if note:
                    say(f"warning: {note}")


#: the salt of the carve rule's hash (:func:`carve_test_pairs`); fixed in advance (reports/PREREG_decisive.md)
CARVE_SALT = "onmt-xl decisive test carve v1"


def _norm(line: str) -> str:
    return " ".join(line.split())


def carve_rank(src: str, tgt: str, salt: str = CARVE_SALT) -> str:
    """The carve rule's sort key of a pair: SHA-256 of the salt and the pair's two whitespace-normalised sides in
    sorted order (the same key for a pair whichever side is the source, so the reversed corpus ranks alike)."""
    a, b = sorted((_norm(src), _norm(tgt)))
    return hashlib.sha256("\t".join((salt, a, b)).encode("utf-8")).hexdigest()


@dataclass
class Carve:
    """What :func:`carve_test_pairs` took: ``test`` the carved indices into the training pairs (corpus order),
    ``removed`` the other training pairs dropped because their source is a test source, and the counts."""

    test: List[int]
    removed: List[int]
    eligible: int
    train_before: int

    def record(self, n: int, test_pairs: int, salt: str) -> dict:
        return dict(test_from_train=n, rule=f"the {n} eligible training pairs of lowest carve_rank (SHA-256, salt "
                    f"{salt!r}); eligible: non-empty sides, a source found once among all training-file pairs "
                    "(training, validation, tuning) and not among the test sources; every other training pair "
                    "whose source is a test source removed", salt=salt, eligible=self.eligible,
                    carved=len(self.test), removed_same_source=len(self.removed), train_before=self.train_before,
                    train_after=self.train_before - len(self.test) - len(self.removed), test_given=test_pairs,
                    test_after=test_pairs + len(self.test))


def carve_test_pairs(train_src: List[str], train_tgt: List[str], held_src: List[str], test_src: List[str], n: int,
                     salt: str = CARVE_SALT) -> Carve:
    """Carve ``n`` test pairs from the training pairs by a rule fixed in advance (the decisive design).

    Eligible: a training pair with both sides non-empty whose (whitespace-normalised) source occurs once among
    the training pairs and ``held_src`` (the validation and tuning sources) and not among ``test_src``. The
    carved pairs are the ``n`` eligible ones of lowest :func:`carve_rank` (deterministic, independent of the
    corpus order), returned in corpus order; ``removed``: every other training pair whose source equals a test
    source (given or carved), so that no test source stays verbatim in training.
    """
    if n < 0:
        raise XLUsageError(None, None, f"--test-from-train {n}: must be 0 or more")
    norm = [_norm(s) for s in train_src]
    count: dict = {}
    for s in norm + [_norm(s) for s in held_src]:
        count[s] = count.get(s, 0) + 1
    given = {_norm(s) for s in test_src}
    eligible = [i for i, s in enumerate(norm)
                if s and _norm(train_tgt[i]) and count[s] == 1 and s not in given]
    if n > len(eligible):
        raise XLUsageError(None, None, f"--test-from-train {n}: only {len(eligible)} of the {len(norm)} training "
                           "pairs are eligible (a source found once, not a test source)")
    chosen = sorted(sorted(eligible, key=lambda i: (carve_rank(train_src[i], train_tgt[i], salt), i))[:n])
    taken = set(chosen)
    sources = given | {norm[i] for i in chosen}
    removed = [i for i, s in enumerate(norm) if i not in taken and s in sources]
    return Carve(chosen, removed, len(eligible), len(norm))


def read_parallel(src: str, tgt: str) -> Tuple[List[str], List[str]]:
    s, t = read_lines(Path(src)), read_lines(Path(tgt))
    if len(s) != len(t):
        raise XLInputError(tgt, None, f"has {count(len(t), 'line')} but {src} has {len(s):,}")
    return s, t


def empty_sources(path: str, lines: Sequence[str], split: str = "test") -> Optional[str]:
    """One line on the empty or whitespace-only source lines of ``path`` (lines ``lines``), a split that is translated
    and scored (``test`` or ``valid``): each is translated as an empty line at its place (OpenNMT-py's
    ``onmt_translate`` through :mod:`onmt_xl.opennmt.seams.output`, Eole by
    :meth:`~onmt_xl.experiments.eole_demo.EoleDemo.translate`) and scored against its reference; None when there is
    none."""
    empty = [n for n, line in enumerate(lines, 1) if not line.split()]
    if not empty:
        return None
    pairs = {"test": "test pairs", "valid": "validation pairs"}[split]
    more = f" and {len(empty) - 1:,} more ({len(empty):,} of {len(lines):,} {pairs})" if len(empty) > 1 else ""
    return (f"{path}, line {empty[0]:,}: empty source line{more}; {'each is' if more else 'it is'} translated as an "
            f"empty line at its place and scored against its {'reference' if split == 'test' else 'target'}")


def verbatim_sources(train_src: Sequence[str], lines: Sequence[str]) -> List[int]:
    """The 0-based indices of the non-empty ``lines`` whose text (whitespace-normalised) is a training source."""
    train = {_norm(s) for s in train_src}
    return [i for i, line in enumerate(lines) if line.split() and _norm(line) in train]


#: the file that records :func:`source_overlap` (``WORKDIR/data/overlap.json``), read into the results
OVERLAP_FILE = "overlap.json"


def source_overlap(train_src: Sequence[str], splits: Dict[str, Tuple[str, Sequence[str]]]) -> Dict[str, Any]:
    """``{split: {"verbatim", "sentences", "file", "first_line", "lines"}}`` for each of ``splits`` (``{split: (file,
    lines)}``, ``test`` and ``valid``) with sources that are training sources verbatim (:func:`verbatim_sources`):
    ``lines`` are theirs, 1-based, ``first_line`` the first. A model can recall the translation it was trained on
    for such a sentence, so its scores can read higher than on new text."""
    out: Dict[str, Any] = {}
    for split, (path, lines) in splits.items():
        hits = verbatim_sources(train_src, lines)
        if hits:
            out[split] = dict(verbatim=len(hits), sentences=len(lines), file=str(path), first_line=hits[0] + 1,
                              lines=[i + 1 for i in hits])
    return out


#: per entry of ``data/overlap.json``: whose sources it counts, among which sources, and what that does to the scores
OVERLAP_KINDS = {
    "test": ("test", "training", "a model can recall their training translations, so the test scores can "
             "read higher than on new text; remove those pairs from the training files to score unseen sentences"),
    "valid": ("validation", "training", "validation BLEU, which chooses the plateau and the checkpoints when "
              "training to it (the default), can read higher than on new text"),
    "test_in_valid": ("test", "validation", "training to the plateau (the default), the plateau and the checkpoints "
                      "are chosen on them, so the test scores can read higher than on new text; give validation pairs "
                      "apart from the test pairs"),
}


def overlap_line(kind: str, entry: Dict[str, Any]) -> str:
    """The warning on ``kind``'s entry of ``data/overlap.json`` (:data:`OVERLAP_KINDS`, :func:`source_overlap`)."""
    split, among, meaning = OVERLAP_KINDS[kind]
    n = entry["verbatim"]
    share = f"{n:,} of the {entry['sentences']:,} {split} sources ({100 * n / entry['sentences']:.1f}%)"
    verb = f"is a {among} source" if n == 1 else f"are {among} sources"
    where = f"whitespace-normalised; the first: {entry['file']}, line {entry['first_line']:,}"
    return f"{share} {verb} verbatim ({where}): {meaning}"


def empty_sides(src: str, tgt: str, s: Sequence[str], t: Sequence[str]) -> Optional[str]:
    """One line on the training pairs of files ``src``/``tgt`` (lines ``s``/``t``) with an empty or whitespace-only
    side, which training skips (``-skip_empty_level warning``, the default of both frameworks, logs each in
    ``train.log``); None when there is none."""
    empty = [(n, "source" if not a.split() else "target") for n, (a, b) in enumerate(zip(s, t), 1)
             if not a.split() or not b.split()]
    if not empty:
        return None
    n, side = empty[0]
    first = f"{src if side == 'source' else tgt}, line {n:,}: empty {side} line"
    if len(empty) == 1:
        return f"{first}; training skips the pair"
    return (f"{first}; training skips it and the other pairs with an empty side, {len(empty):,} of "
            f"{count(len(s), 'pair')}")


class DataStages:
    """The stages before training, mixed into :class:`onmt_xl.experiments.runner.Runner` (which provides
    ``corpus``, ``path``, ``valid_size``, ``tune_size``, ``preorder_options``, ``preset``, ``overrides``,
    ``preorder_iterations``, ``_run`` and
    ``_manifest_update``; ``test_from_train`` where it carves test pairs from the training pairs)."""

    def stage_data(self) -> None:
        """train/valid split, test, swapped tests, gold set under ``data/``; with ``test_from_train`` N, N more
        test pairs carved from the training pairs (:func:`carve_test_pairs`, recorded in ``data/carve.json``)."""
        data = self.path("data")
        carve = int(getattr(self, "test_from_train", 0) or 0)
        if (data / "ready").exists():
            self._check_carve(data, carve)
            if not (data / OVERLAP_FILE).exists():  # staged by an earlier version
                self._stage_overlap(data)
            return
        manifest = self.path("manifest.json")  # restored from an archive: the carve its jobs were tested on
        recorded = json.loads(manifest.read_text(encoding="utf-8")).get("carve") if manifest.exists() else None
        if recorded and recorded["test_from_train"] != carve:
            raise XLUsageError(str(manifest), None, f"records splits staged with --test-from-train "
                               f"{recorded['test_from_train']}, this run asks for {carve}: pass --test-from-train "
                               f"{recorded['test_from_train']}, or use another --workdir and --archive")
        data.mkdir(parents=True, exist_ok=True)
        test_src, test_tgt = read_parallel(self.corpus.test_src, self.corpus.test_tgt)
        n_train, n_valid, n_tune, carved = self._stage_train_valid(data, test_src, carve)
        test_src = self._stage_test(data, test_src + carved[0], test_tgt + carved[1])
        if self.corpus.gold_text and self.corpus.gold_align:
            self._stage_gold(data)
        self._stage_overlap(data)
        (data / "ready").write_text("")
        say(f"data: {n_train:,} train, {n_valid:,} valid, {n_tune:,} tuning, {len(test_src):,} test pairs -> {data}")

    def _stage_overlap(self, data: Path) -> None:
        """``data/overlap.json``: :func:`source_overlap` of the staged test and validation sources against the
        training ones (``test``, ``valid``) and of the test sources against the validation ones (``test_in_valid``);
        ``lines`` those of ``data/SPLIT.src``. One warning an entry (:func:`overlap_line`); ``file`` and
        ``first_line`` name the corpus' own file where the line comes from one (the test lines before any carved
        ones, the same lines there; the validation file where one was given)."""
        test, valid = read_lines(data / "test.src"), read_lines(data / "valid.src")
        carve = data / "carve.json"
        given = json.loads(carve.read_text(encoding="utf-8"))["test_given"] if carve.exists() else len(test)
        overlap = {**source_overlap(read_lines(data / "train.src"), {"test": (data / "test.src", test),
                                                                     "valid": (data / "valid.src", valid)}),
                   **source_overlap(valid, {"test_in_valid": (data / "test.src", test)})}
        for kind, entry in overlap.items():
            own = self.corpus.valid_src if kind == "valid" else self.corpus.test_src
            if own and (kind == "valid" or entry["first_line"] <= given):
                entry["file"] = str(own)
            say(f"warning: {overlap_line(kind, entry)}")
        (data / OVERLAP_FILE).write_text(json.dumps(overlap, indent=2) + "\n", encoding="utf-8")

    def _check_carve(self, data: Path, carve: int) -> None:
        """A staged ``data/`` serves only a run that asks for the same carve (another would test on other pairs)."""
        path = data / "carve.json"
        staged = json.loads(path.read_text(encoding="utf-8"))["test_from_train"] if path.exists() else 0
        if staged != carve:
            raise XLUsageError(str(data), None, f"was staged with --test-from-train {staged}, this run asks for "
                               f"{carve}: pass --test-from-train {staged}, or use another --workdir")

    def splits(self) -> Tuple[str, ...]:
        """The splits staged under ``data/`` (``tune`` only with a tuning split); train last."""
        return ("test", "valid") + (("tune",) if self.tune_size else ()) + ("train",)

    def _stage_train_valid(self, data: Path, test_src: List[str] = (), carve: int = 0
                           ) -> Tuple[int, int, int, Tuple[List[str], List[str]]]:
        """Write the train, valid and tune splits; returns their sizes and the pairs carved from the training
        pairs for the test split (none unless ``carve``)."""
        src, tgt = read_parallel(self.corpus.train_src, self.corpus.train_tgt)
        held = self.tune_size + (0 if self.corpus.valid_src else self.valid_size)
        if self.tune_size < 0 or (not self.corpus.valid_src and self.valid_size < 1) or held >= len(src):
            raise ValueError(f"--valid-size {self.valid_size} and --tune-size {self.tune_size} leave no training pairs "
                             f"of {len(src)} (or are negative)")
        cut = len(src) - self.tune_size
        src, tgt, usrc, utgt = src[:cut], tgt[:cut], src[cut:], tgt[cut:]
        if self.corpus.valid_src:
            vsrc, vtgt = read_parallel(self.corpus.valid_src, self.corpus.valid_tgt)
        else:
            cut = len(src) - self.valid_size
            src, tgt, vsrc, vtgt = src[:cut], tgt[:cut], src[cut:], tgt[cut:]
        carved: Tuple[List[str], List[str]] = ([], [])
        if carve:
            cut = carve_test_pairs(src, tgt, vsrc + usrc, list(test_src), carve)
            carved = ([src[i] for i in cut.test], [tgt[i] for i in cut.test])
            dropped = set(cut.test) | set(cut.removed)
            src = [s for i, s in enumerate(src) if i not in dropped]
            tgt = [t for i, t in enumerate(tgt) if i not in dropped]
            record = cut.record(carve, len(test_src), CARVE_SALT)
            (data / "carve.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            self._manifest_update(carve=record)
            say(f"carved {len(cut.test)} test pairs from the {cut.train_before} training pairs ({cut.eligible} "
                f"eligible) and removed {len(cut.removed)} more whose source is a test source: {len(src)} train")
        files = [("train", src, tgt), ("valid", vsrc, vtgt)] + ([("tune", usrc, utgt)] if self.tune_size else [])
        for name, s, t in files:
            write_lines(data / f"{name}.src", s)
            write_lines(data / f"{name}.tgt", t)
        return len(src), len(vsrc), len(usrc), carved

    def _stage_test(self, data: Path, test_src: List[str], test_tgt: List[str]) -> List[str]:
        """The test split (the corpus' test pairs, then any carved ones) and its word-swapped sources."""
        write_lines(data / "test.src", test_src)
        write_lines(data / "test.ref", test_tgt)
        for r in SWAP_RATIOS:
            rng = random.Random(round(100 * r))
            write_lines(data / f"test.swap{round(100 * r)}.src",
                        (" ".join(swap_words(l.split(), r, rng)) for l in test_src))
        return test_src

    def _stage_gold(self, data: Path) -> None:
        from onmt_xl.core.align.aer import read_gold, read_joint_text

        gsrc, gtgt = read_joint_text(self.corpus.gold_text)
        sure, _ = read_gold(self.corpus.gold_align)
        if len(sure) != len(gsrc):
            raise XLInputError(self.corpus.gold_align, None, f"has {count(len(sure), 'line')} but "
                               f"{self.corpus.gold_text} has {len(gsrc):,}")
        keep = [k for k in range(len(gsrc)) if gsrc[k] and gtgt[k]]
        write_lines(data / "gold.src", (" ".join(gsrc[k]) for k in keep))
        write_lines(data / "gold.tgt", (" ".join(gtgt[k]) for k in keep))
        shutil.copyfile(self.corpus.gold_align, data / "gold.align")
        (data / "gold.keep").write_text(" ".join(map(str, keep)) + "\n")

    #: the tokenization of the text the aligner, the preorderer and the models see (:meth:`tokenize`)
    tokenization = Tokenization("none")
    #: ``--bleu-tokenize``: sacrebleu's tokenizer of raw text's scores; ``auto``: by the target's script
    bleu_tokenize = "auto"

    def text_path(self, split: str, side: str) -> Path:
        """The tokens the aligner and the preorderer read: ``tok/`` with a tokenization, else ``data/``."""
        name = f"{split}.{'ref' if (split, side) == ('test', 'tgt') else side}"
        return self.path("tok" if self.tokenization.active else "data", name)

    def tokenize(self, requested: Optional[str], size: Optional[int] = None) -> None:
        """``requested`` (``--tokenize``; None: this stage is off, the input is tokenized): choose the
        tokenization (:func:`onmt_xl.experiments.tokenization.choose`, sub-words for a side written without spaces)
        and sacrebleu's tokenizer of the scores (:attr:`bleu_tokenize`), learn the BPE model, write the splits
        tokenized under ``tok/`` and add ``onmt_tokenize``'s options to every configuration. Recorded in
        ``tok/tokenization.json``; a run asking for another one is refused."""
        from onmt_xl.experiments import tokenization as tk
        from onmt_xl.core.segmentation import count_markers, marker

        if requested is None:
            return
        out = self.path("tok")
        record = out / "tokenization.json"
        languages = {}
        for side in ("src", "tgt"):
            with open(self.path("data", f"train.{side}"), encoding="utf-8") as f:
                languages[side] = tk.written_language(f)  # its first lines
        n_train = len(read_lines(self.path("data", "train.src")))
        chosen = tk.choose(n_train, requested, size,
                           sub_words=any(language in tk.SUB_WORD_LANGUAGES for language in languages.values()),
                           bleu_tokenize=self._bleu_tokenizer(requested, languages["tgt"]))
        done = tk.read_record(record)
        if done is not None:
            if (done.kind, done.merges) != (chosen.kind, chosen.merges):
                raise XLUsageError(str(record), None, f"this work directory was tokenized as {done.describe()}, "
                                   f"this run asks for {chosen.describe()}: pass the same --tokenize/--subword-size, "
                                   "or use another --workdir")
            if self.bleu_tokenize != "auto" and done.bleu_tokenize != chosen.bleu_tokenize:
                raise XLUsageError(str(record), None, f"this work directory scores BLEU on sacrebleu's "
                                   f"{done.bleu_tokenize} tokens, this run asks for {chosen.bleu_tokenize}: pass "
                                   f"--bleu-tokenize {done.bleu_tokenize} (or leave it out), or use another --workdir")
            if done.active:
                tk.check_bleu_tokenizer(done.bleu_tokenize)
            self._use_tokenization(done)
            return
        if chosen.active and self.corpus.test_align:
            raise XLUsageError(self.corpus.test_align, None, "--test-align indexes the tokens of tokenized input; "
                               "give tokenized files with --tokenize none, or leave --test-align out")
        if chosen.active:
            tk.check_bleu_tokenizer(chosen.bleu_tokenize)
        self._note_languages(chosen, languages)
        if chosen.kind == "words" and requested == "auto":
            self._note_unseen_words(chosen)
        out.mkdir(exist_ok=True)
        if chosen.kind == "bpe":
            say(f"learning a joint BPE model of {chosen.merges:,} merges on the {n_train:,} training pairs")
            model = out / "bpe.model"
            learned = tk.learn_bpe([self.path("data", "train.src"), self.path("data", "train.tgt")], chosen.merges,
                                   model)
            if learned < chosen.merges:
                say(f"  {learned:,} merges learned: no pair of symbols is seen twice in the training text after them")
            chosen = replace(chosen, model=str(model))
        if chosen.active:
            tokenizer = chosen.tokenizer()
            for split in self.splits():
                for side in ("src", "tgt"):
                    src = self.path("data", self.text_path(split, side).name)
                    write_lines(out / src.name, tk.tokenize_lines(tokenizer, read_lines(src)))
            counts = count_markers(l.split() for l in read_lines(out / "train.src"))
            if counts.absent(marker("joiner")):
                raise XLInputError(str(self.path("data", "train.src")), None, "pyonmttok split nothing off any word "
                                   f"({counts.summary()}): the text looks tokenized already; pass --tokenize none")
        tk.write_record(record, chosen)
        self._manifest_update(tokenization=chosen.to_dict())
        say(f"tokenization: {chosen.describe()}" + (f" -> {out}" if chosen.active else ""))
        self._use_tokenization(chosen)

    def _bleu_tokenizer(self, requested: str, target_language: Optional[str]) -> str:
        """sacrebleu's tokenizer of the scores: :attr:`bleu_tokenize`, or by the target's script (``auto``); scores
        of tokenized input (``--tokenize none``) are on its own tokens, ``13a``."""
        from onmt_xl.experiments import tokenization as tk

        if requested == "none":
            if self.bleu_tokenize != "auto":
                raise XLUsageError(None, None, f"--bleu-tokenize {self.bleu_tokenize}: with --tokenize none the "
                                   "scores are on the tokens as given (tok:13a); leave --bleu-tokenize out")
            return "13a"
        return tk.bleu_tokenizer(target_language) if self.bleu_tokenize == "auto" else self.bleu_tokenize

    def _note_languages(self, chosen: Tokenization, languages: Dict[str, Optional[str]]) -> None:
        """One line for each side whose words are no units to keep (written without spaces between words, or
        Korean), one for sacrebleu's tokenizer where it is not the default ``13a``."""
        from onmt_xl.experiments import tokenization as tk

        if not chosen.active:
            return
        names = {"src": self.corpus.train_src, "tgt": self.corpus.train_tgt}
        for side, language in languages.items():
            if language not in tk.SUB_WORD_LANGUAGES:
                continue
            if language == "Korean":
                what, words = "its words carry their particles and endings", "each such word is one token"
            else:
                what = "written without spaces between words"
                words = "each run of it between punctuation marks is one token"
            if chosen.kind == "words":
                say(f"note: {names[side]} is {language}, {what}: with --tokenize words {words}; --tokenize auto or bpe "
                    "learns sub-words")
            else:
                say(f"{names[side]} is {language}, {what}: sub-words (BPE) for it")
        if chosen.bleu_tokenize != "13a":
            why = f"the target is {languages['tgt']}" if self.bleu_tokenize == "auto" else "--bleu-tokenize"
            say(f"scores: sacrebleu's BLEU on its {chosen.bleu_tokenize} tokens ({why}; --bleu-tokenize chooses "
                "another)")

    def _note_unseen_words(self, chosen: Tokenization) -> None:
        """A note for each side of which more than :data:`~onmt_xl.experiments.tokenization.WORDS_UNSEEN_NOTE` of
        the validation words are unseen in its training text, where ``auto`` kept words."""
        from onmt_xl.experiments import tokenization as tk

        tokenizer = chosen.tokenizer()
        names = {"src": self.corpus.train_src, "tgt": self.corpus.train_tgt}
        for side, which in (("src", "source"), ("tgt", "target")):
            share = tk.unseen_share(tokenizer, read_lines(self.path("data", f"train.{side}")),
                                    read_lines(self.path("data", f"valid.{side}")))
            if share > tk.WORDS_UNSEEN_NOTE:
                say(f"note: {share:.1%} of the validation {which}'s words are not in {names[side]} (words are kept "
                    f"below {tk.WORD_LEVEL_BELOW:,} training pairs); --tokenize bpe learns sub-words for them")

    def _use_tokenization(self, chosen: Tokenization) -> None:
        self.tokenization = chosen
        self.overrides.update(chosen.transform_options())

    def align(self) -> None:
        """eflomal on test+valid(+tune)+train in one run (unsupervised: the held-out sides only add statistics),
        grow-diag-final-and; the test links serve the oracle, the attention AER reference and Sim, the tuning
        links the preorderer's tau."""
        from onmt_xl.core.align.eflomal_aligner import align_corpus, read_tokenized
        from onmt_xl.core.align.pharaoh import write_pharaoh

        out = self.path("align")
        if (out / "train.gdfa").exists():
            return
        out.mkdir(exist_ok=True)
        parts = {name: (read_tokenized(str(self.text_path(name, "src"))),
                        read_tokenized(str(self.text_path(name, "tgt"))))
                 for name in self.splits()}
        say(f"aligning {'+'.join(self.splits())} ({sum(len(s) for s, _ in parts.values()):,} pairs) with eflomal")
        res = align_corpus([s for p in parts.values() for s in p[0]], [t for p in parts.values() for t in p[1]])
        start = 0
        for name, (s, _) in parts.items():  # train last: its file marks the stage as done
            write_pharaoh(str(out / f"{name}.gdfa"), res.symmetrized[start : start + len(s)])
            start += len(s)
        self._manifest_update(align_seconds=res.seconds)
        say(f"  aligned in {res.seconds:.1f}s")

    def preorderer_path(self, pairs: Optional[int] = None) -> Path:
        """``preorderer.xlp`` (trained on every training pair), or ``preorderer_N.xlp`` (on the first N)."""
        return self.path("preorderer.xlp" if not pairs else f"preorderer_{pairs}.xlp")

    def preorder(self, pairs: Optional[int] = None) -> None:
        """Train the BTG preorderer on the training links (with ``preorder_options``, chosen on the tuning
        split), or on the first ``pairs`` of them; score it on the tuning split (eflomal links) and on the test
        set (gold test links when the corpus has them, else the eflomal ones), in the model's ``.json``."""
        from onmt_xl.core.align.pharaoh import read_pharaoh
        from onmt_xl.core.reorder.preorderer import Preorderer

        model_path = self.preorderer_path(pairs)
        scores = model_path.with_suffix(".json")
        if model_path.exists() and scores.exists():
            trained = json.loads(scores.read_text()).get("options", {})
            if trained != dict(self.preorder_options):
                raise XLUsageError(str(model_path), None, f"was trained with options {json.dumps(trained)}, this run "
                                   f"asks for {json.dumps(dict(self.preorder_options))}: pass those, or delete it and "
                                   f"{scores.name} to retrain it")
        if not model_path.exists():
            src = [l.split() for l in read_lines(self.text_path("train", "src"))]
            links = read_pharaoh(str(self.path("align", "train.gdfa")), [len(s) for s in src])
            if pairs:
                if pairs > len(src):
                    raise XLUsageError(None, None, f"a preorderer on {pairs} pairs: the training split has {len(src)}")
                src, links = src[:pairs], links[:pairs]
            say(f"training the preorderer on {len(src):,} pairs")
            t0 = time.perf_counter()
            kw = dict(self.preorder_options)
            if self.tokenization.active:  # the pieces onmt_tokenize gives xl_position (the segmentation guard)
                kw["segmentation"] = self.tokenization.scheme()
            if self.preorder_iterations is not None:
                kw["iterations"] = self.preorder_iterations
            Preorderer.train(src, links, **kw).save(str(model_path))
            key = "preorderer_train_seconds" if not pairs else f"preorderer_{pairs}_train_seconds"
            self._manifest_update(**{key: time.perf_counter() - t0})
        if not model_path.with_suffix(".json").exists():
            self._score_preorderer(Preorderer.load(str(model_path)), model_path.with_suffix(".json"))

    def _score_preorderer(self, model, out: Path) -> None:
        """``out`` (``preorderer.json``): the test scores at the top level (as before tuning splits existed), the
        tuning split's under ``"tune"``."""
        result = self.preorderer_scores(model, "test", self.corpus.test_align)
        if self.tune_size:
            result["tune"] = self.preorderer_scores(model, "tune")
        if self.preorder_options:
            result["options"] = dict(self.preorder_options)
        out.write_text(json.dumps(result, indent=2))

    def preorderer_scores(self, model, split: str, gold: Optional[str] = None) -> dict:
        """tau and friends of ``model`` on ``data/SPLIT.src`` against ``gold`` links, else the eflomal ones."""
        from onmt_xl.core.align.pharaoh import read_pharaoh
        from onmt_xl.core.reorder.metrics import evaluate
        from onmt_xl.core.reorder.oracle import target_ranks

        src = [l.split() for l in read_lines(self.text_path(split, "src"))]
        links = read_pharaoh(gold or str(self.path("align", f"{split}.gdfa")), [len(s) for s in src])
        scores = evaluate(model.reorder_batch(src), [target_ranks(len(s), l) for s, l in zip(src, links)])
        result = dict(tau=scores.tau, monotone_tau=scores.monotone_tau, oracle_tau=scores.oracle_tau,
                      exact_match=scores.exact_match, frs=scores.frs, sentences=len(src))
        if gold:
            result["links"] = "gold"
        say(f"preorderer on the {split} split ({'gold' if gold else 'eflomal'} links):\n" + scores.format())
        return result

    def crossfit_path(self) -> Path:
        """The training split's cross-fitted positions (``-xl_positions_suffix`` :data:`XLPOS_SUFFIX` reads them),
        beside the tokens they index (:meth:`text_path`: ``tok/train.src`` with a tokenization)."""
        src = self.text_path("train", "src")
        return src.with_name(src.name + XLPOS_SUFFIX)

    def crossfit_training(self, train: Dict[str, Any]) -> Dict[str, Any]:
        """The training corpus ``train`` (``path_src``, ``path_tgt``, ``transforms``, as both frameworks' ``data``
        entries have them) made to read :meth:`crossfit_path`: with a tokenization, the tokenized files of
        ``tok/``, which ``onmt_tokenize`` would make of the raw ones, without that transform, so that
        ``xl_position`` sees the tokens the positions index (the validation corpus and translation keep it). The
        framework's ``xl_positions_suffix`` must be :data:`XLPOS_SUFFIX`."""
        train = dict(train)
        if self.tokenization.active:
            train["path_src"] = str(self.text_path("train", "src"))
            train["path_tgt"] = str(self.text_path("train", "tgt"))
            train["transforms"] = [t for t in train.get("transforms", []) if t != "onmt_tokenize"]
        return train

    def crossfit(self) -> None:
        """Cross-fitted training positions (``reports/PREREG_xlpos.md``, stage 1): every training sentence's
        ``pos_XL`` from a preorderer trained, with ``preorder_options``, on the other :data:`CROSSFIT_FOLDS` − 1
        folds (:func:`onmt_xl.core.reorder.crossfit.crossfit_positions`), in :meth:`crossfit_path`; ``crossfit.json``:
        their Kendall tau on every training sentence, and on the first :data:`SEEN_SAMPLE` of them beside the
        full preorderer's on the same sentences (which it trained on: seen against unseen)."""
        from onmt_xl.core.align.pharaoh import read_pharaoh
        from onmt_xl.core.reorder.crossfit import FOLD_RULE, crossfit_positions, predict_positions, score
        from onmt_xl.core.reorder.positions_file import PositionsHeader, scan_corpus, write_positions
        from onmt_xl.core.reorder.preorderer import Preorderer

        out, figures_path = self.crossfit_path(), self.path("crossfit.json")
        options = dict(self.preorder_options)
        if self.preorder_iterations is not None:
            options["iterations"] = self.preorder_iterations
        if out.exists() and figures_path.exists():
            made = json.loads(figures_path.read_text()).get("options")
            if made != options:
                raise XLUsageError(str(out), None, f"was made with preorderer options {json.dumps(made)}, this run "
                                   f"asks for {json.dumps(options)}: delete it and {figures_path.name} to make it "
                                   "again")
            return
        src_path = self.text_path("train", "src")
        src = [l.split() for l in read_lines(src_path)]
        tgt = [l.split() for l in read_lines(self.text_path("train", "tgt"))]
        links = read_pharaoh(str(self.path("align", "train.gdfa")), [len(s) for s in src], [len(t) for t in tgt])
        say(f"cross-fitting the training positions: {CROSSFIT_FOLDS} preorderers on {len(src):,} pairs")
        t0 = time.perf_counter()
        positions, figures = crossfit_positions(src, tgt, links, CROSSFIT_FOLDS, options,
                                                threads=self.threads or 0)
        seconds = time.perf_counter() - t0
        scan = scan_corpus(str(src_path))
        made = {"method": "crossfit", "folds": CROSSFIT_FOLDS, "fold_rule": FOLD_RULE, "options": options}
        partial = out.with_name(out.name + ".partial")
        write_positions(str(partial), PositionsHeader("train.src", scan.lines, scan.sha256, made), positions)
        sample = [k for k in range(min(SEEN_SAMPLE, len(src))) if src[k] and tgt[k]]
        full = Preorderer.load(str(self.preorderer_path()))
        own = predict_positions(full, [src[k] for k in sample])
        seen = score(own, [src[k] for k in sample], [links[k] for k in sample], range(len(sample)))
        unseen = score(positions, src, links, sample)
        result = {"folds": CROSSFIT_FOLDS, "fold_rule": FOLD_RULE, "options": options, "seconds": seconds,
                  "crossfit": figures.to_dict(),
                  "sample": {"sentences": len(sample), "what": f"the first {min(SEEN_SAMPLE, len(src))} training pairs",
                             "full_preorderer": {"tau": seen.tau, "exact_match": seen.exact_match},
                             "crossfit": {"tau": unseen.tau, "exact_match": unseen.exact_match},
                             "monotone_tau": seen.monotone_tau, "oracle_tau": seen.oracle_tau}}
        say(f"cross-fitted positions: Kendall tau {figures.tau:.4f} on the {len(src)} training pairs; on the first "
            f"{len(sample)}: the full preorderer (seen) {seen.tau:.4f}, cross-fitted (unseen) {unseen.tau:.4f}")
        figures_path.write_text(json.dumps(result, indent=2))
        partial.replace(out)

    def crossfit_line(self) -> Optional[str]:
        """One line of the summary on the cross-fitted training positions (``crossfit.json``), or None without them."""
        path = self.path("crossfit.json")
        if not path.exists():
            return None
        figures = json.loads(path.read_text())
        every, sample = figures["crossfit"], figures["sample"]
        return (f"training positions: cross-fitted, {figures['folds']} folds: Kendall tau {every['tau']:.4f} on the "
                f"{every['sentences']:,} training pairs; on the first {sample['sentences']:,} the preorderer, which "
                f"trained on them, scores {sample['full_preorderer']['tau']:.4f} ({path})")

    def monotone_check(self):
        """The preorderer (``preorderer.xlp``) against the monotone order on the validation pairs with both sides
        non-empty, eflomal links (held out, and not the test set, which scores the systems;
        :mod:`onmt_xl.core.reorder.monotone_check`). Computed on every run (seconds), written to ``monotone_check.json``
        and the manifest; returns the :class:`~onmt_xl.core.reorder.monotone_check.MonotoneCheck`."""
        from onmt_xl.core.align.pharaoh import read_pharaoh
        from onmt_xl.core.reorder.monotone_check import check_monotone
        from onmt_xl.core.reorder.oracle import target_ranks
        from onmt_xl.core.reorder.preorderer import Preorderer

        src = [l.split() for l in read_lines(self.text_path("valid", "src"))]  # the tokens the links index
        tgt = read_lines(self.text_path("valid", "tgt"))
        links = read_pharaoh(str(self.path("align", "valid.gdfa")), [len(s) for s in src])
        keep = [k for k, (s, t) in enumerate(zip(src, tgt)) if s and t.split()]
        model = Preorderer.load(str(self.preorderer_path()))
        check = check_monotone(model.reorder_batch([src[k] for k in keep]),
                               [target_ranks(len(src[k]), links[k]) for k in keep], "validation pairs")
        self.path("monotone_check.json").write_text(json.dumps(check.to_dict(), indent=2))
        self._manifest_update(monotone_check=check.to_dict())
        return check

    def monotone_gate(self, systems: Sequence[str], if_monotone: str = "stop") -> Optional[str]:
        """Print the :meth:`monotone_check` line; the reason to stop before training when the preorderer does not
        clearly beat the monotone order, ``if_monotone`` is ``"stop"`` and one of ``systems`` uses the preorderer;
        else ``None``."""
        from onmt_xl.experiments.systems import SYSTEMS

        check = self.monotone_check()
        say(check.format())
        if check.beats or if_monotone != "stop" or not any(SYSTEMS[s].uses_preorderer for s in systems):
            return None
        say("stopped before training any model (--if-monotone stop, the default); every stage done so far is kept: "
            "to train the systems all the same, run the same command with --if-monotone train")
        return "the preorderer does not clearly beat the monotone order on the validation pairs"

    def vocab(self) -> None:
        if self.path("vocab.tgt").exists():
            return
        cfg = self.path("vocab_config.yaml")
        cfg.write_text(yaml.safe_dump(config("baseline", str(self.workdir), self.overrides, self.preset)))
        say(vocab_line("onmt_build_vocab", len(read_lines(self.path("data", "train.src"))), self.tokenization))
        with ticking("onmt_build_vocab"):
            self._run([stock("onmt_build_vocab"), "-config", cfg, "-n_sample", "-1"],
                      self.path("logs", "build_vocab.log"), self.path("commands.sh"))


def vocab_line(command: str, pairs: int, tokenization: Tokenization) -> str:
    """The line before the stock vocabulary command, which prints nothing until it is done."""
    through = f", tokenized on the fly by {tokenization.describe()}" if tokenization.active else ""
    return (f"{command}: counting the words of all {pairs:,} training pairs{through}, for the source and target "
            "vocabularies; it says nothing until it is done (it reads the whole corpus once)")
