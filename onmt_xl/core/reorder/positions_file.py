"""The ``.xlpos`` file: precomputed ``pos_XL`` of one corpus, line by line (written by ``onmt-xl positions``).

Line 1 is a JSON header::

    {"format": "onmt_xl.positions", "version": 1,
     "corpus": {"name": "train.ja", "lines": 50000, "sha256": "..."},
     "made": {"method": "crossfit", "folds": 5, "fold_rule": "...", "options": {...}}}

``corpus`` identifies the source file the positions were made for (its line count, as OpenNMT-py and Eole count
lines: ``\\n``-terminated, and the SHA-256 of its bytes); ``made`` says how (free-form JSON). Then one line per corpus
line: space-separated integers, a permutation of ``0..n-1`` for an ``n``-token line (empty for an empty line).
:func:`read_positions` checks all of it and names the file and line of the first problem.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from onmt_xl.core.errors import NOT_UTF8_HINT, XLInputError, XLUsageError, count

#: the header's ``format``: a name of the file format, not of a module (it stays when the code moves)
FORMAT = "onmt_xl.positions"
#: every ``format`` a header may name: also the one the files written between the move of the code into
#: ``onmt_xl/core/`` and this fix name (the module's new path), which are the same format
FORMATS = (FORMAT, "onmt_xl.core.positions")
VERSION = 1
READABLE_VERSIONS = (1,)
RERUN = "rerun onmt-xl positions"


@dataclass
class CorpusScan:
    """What a positions file records of its corpus, and each line's token count and text fingerprint."""

    lines: int
    sha256: str
    lengths: List[int] = field(default_factory=list)
    fingerprints: List[int] = field(default_factory=list)


def fingerprint(tokens: Sequence[str]) -> int:
    """A stable 64-bit fingerprint of a tokenized line (its tokens joined by single spaces)."""
    return int.from_bytes(hashlib.blake2b(" ".join(tokens).encode("utf-8"), digest_size=8).digest(), "big")


def scan_corpus(path: str) -> CorpusScan:
    """Line count and SHA-256 of ``path``'s bytes, with each line's token count and fingerprint (lines as
    OpenNMT-py and Eole read them: split at ``\\n`` only)."""
    h = hashlib.sha256()
    scan = CorpusScan(0, "")
    try:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                h.update(raw)
                try:
                    tokens = raw.decode("utf-8").split()
                except UnicodeDecodeError as exc:
                    raise XLInputError(path, number, f"not UTF-8 text ({exc.reason}); {NOT_UTF8_HINT}") from None
                scan.lengths.append(len(tokens))
                scan.fingerprints.append(fingerprint(tokens))
    except FileNotFoundError:
        raise XLUsageError(path, None, "file not found; check the path") from None
    scan.lines, scan.sha256 = len(scan.lengths), h.hexdigest()
    return scan


@dataclass
class PositionsHeader:
    """The header of a positions file: the corpus it was made for and how it was made."""

    corpus_name: str
    lines: int
    sha256: str
    made: Dict[str, Any]
    version: int = VERSION

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "version": self.version,
                           "corpus": {"name": self.corpus_name, "lines": self.lines, "sha256": self.sha256},
                           "made": self.made}, sort_keys=False, ensure_ascii=False)

    def describe(self) -> str:
        made = self.made or {}
        if made.get("method") == "crossfit":
            return f"cross-fitted, {made.get('folds')} folds"
        if made.get("method") == "preorderer":
            return f"preorderer {made.get('preorderer')}"
        if made.get("method") == "payoff":
            return f"payoff level alpha = {made.get('alpha')}: {made.get('from')} -> {made.get('to')}"
        return str(made.get("method", "unknown method"))


def write_positions(path: str, header: PositionsHeader, rows: Iterable[Sequence[int]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(header.to_json() + "\n")
        for row in rows:
            f.write(" ".join(map(str, row)) + "\n")


def _header(path: str, text: str) -> PositionsHeader:
    bad = f"not a positions file (line 1 must be the JSON header of {FORMAT}); {RERUN}"
    try:
        head = json.loads(text)
    except ValueError:
        raise XLInputError(path, 1, bad) from None
    if not isinstance(head, dict) or head.get("format") not in FORMATS:
        raise XLInputError(path, 1, bad)
    version = head.get("version")
    if version not in READABLE_VERSIONS:
        raise XLInputError(path, 1, f"positions format version {version!r}; this onmt_xl reads version "
                                    f"{', '.join(map(str, READABLE_VERSIONS))}; {RERUN}")
    corpus = head.get("corpus")
    ok = (isinstance(corpus, dict) and isinstance(corpus.get("lines"), int) and corpus["lines"] >= 0
          and isinstance(corpus.get("sha256"), str) and len(corpus["sha256"]) == 64)
    if not ok:
        raise XLInputError(path, 1, "the header does not name its corpus (corpus: lines, sha256); " + RERUN)
    return PositionsHeader(str(corpus.get("name", "")), corpus["lines"], corpus["sha256"],
                           head.get("made") if isinstance(head.get("made"), dict) else {}, version)


def _row(path: str, number: int, text: str) -> List[int]:
    try:
        row = [int(t) for t in text.split()]
    except ValueError:
        raise XLInputError(path, number, f"not space-separated integers: {text.strip()[:60]!r}") from None
    if sorted(row) != list(range(len(row))):
        raise XLInputError(path, number, f"not a permutation of 0..{len(row) - 1}: {text.strip()[:60]!r}")
    return row


def read_positions(path: str) -> Tuple[PositionsHeader, List[List[int]]]:
    """The header and the rows of a positions file, checked: the header's format, version and corpus, one row
    per corpus line, each a permutation. Raises :class:`~onmt_xl.core.errors.XLInputError` naming the file and line
    (line 1 is the header, so corpus line ``k`` is file line ``k + 1``)."""
    try:
        with open(path, encoding="utf-8", newline="\n") as f:
            first = f.readline()
            header = _header(path, first)
            rows = [_row(path, number, text) for number, text in enumerate(f, start=2)]
    except FileNotFoundError:
        raise XLUsageError(path, None, "file not found; check the path") from None
    except UnicodeDecodeError as exc:
        raise XLInputError(path, None, f"not UTF-8 text ({exc.reason}); not a positions file") from None
    if len(rows) != header.lines:
        raise XLInputError(path, None, f"has {count(len(rows), 'position line')} but its header says {header.lines:,}: "
                                       f"the file is truncated; {RERUN}")
    return header, rows


def check_made_for(path: str, header: PositionsHeader, corpus_path: str, scan: CorpusScan,
                   rows: Optional[Sequence[Sequence[int]]] = None) -> None:
    """Raise :class:`~onmt_xl.core.errors.XLInputError` naming both files unless the positions file ``path`` was made
    for ``corpus_path`` (its line count and SHA-256; with ``rows``, also each line's token count)."""
    if header.lines != scan.lines or header.sha256 != scan.sha256:
        what = (f"{header.lines} lines" if header.lines != scan.lines else "other bytes")
        raise XLInputError(path, None, f"made for another corpus ({what}) than {corpus_path} ({scan.lines} lines, "
                                       f"SHA-256 {scan.sha256[:12]}...): {RERUN} on it")
    for k, (row, n) in enumerate(zip(rows or (), scan.lengths)):
        if len(row) != n:
            raise XLInputError(path, k + 2, f"{len(row)} positions but line {k + 1} of {corpus_path} has {n} tokens; "
                                            + RERUN)
