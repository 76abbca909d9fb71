"""Pharaoh ``i-j`` word alignments: 0-indexed, source index first, one sentence per line."""

from __future__ import annotations

from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from onmt_xl.core.errors import XLInputError, count

Links = List[Tuple[int, int]]


def parse_pharaoh_line(
    line: str,
    src_len: Optional[int] = None,
    tgt_len: Optional[int] = None,
    path: Optional[str] = None,
    lineno: Optional[int] = None,
) -> Links:
    """Parse one Pharaoh line (``"0-0 1-2 2-1"``) into sorted, de-duplicated links.

    A token may use ``p`` instead of ``-`` (a *possible* link, as in gold files); it is read as a link.
    Raises :class:`XLInputError` naming ``path`` and ``lineno`` on a malformed token, a negative index,
    or an index outside ``[0, src_len)`` / ``[0, tgt_len)`` when the lengths are given.
    """
    links = set()
    for tok in line.split():
        sep = "-" if "-" in tok else ("p" if "p" in tok else None)
        parts = tok.split(sep) if sep else [tok]
        if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit():
            raise XLInputError(path, lineno, f"malformed Pharaoh token {tok!r} (expected 'i-j' with i, j >= 0)")
        i, j = int(parts[0]), int(parts[1])
        if src_len is not None and i >= src_len:
            raise XLInputError(
                path, lineno,
                f"link {tok!r}: source index {i} out of range for a {src_len}-token source sentence "
                "(are the alignments at another token level, e.g. words vs subwords?)",
            )
        if tgt_len is not None and j >= tgt_len:
            raise XLInputError(
                path, lineno,
                f"link {tok!r}: target index {j} out of range for a {tgt_len}-token target sentence "
                "(are the alignments at another token level, e.g. words vs subwords?)",
            )
        links.add((i, j))
    return sorted(links)


def format_pharaoh(links: Iterable[Tuple[int, int]]) -> str:
    """``[(0, 1), (1, 0)] -> "0-1 1-0"`` (sorted)."""
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def read_pharaoh(
    path: str,
    src_lens: Optional[Sequence[int]] = None,
    tgt_lens: Optional[Sequence[int]] = None,
) -> List[Links]:
    """Read a whole Pharaoh file, validating each line against the sentence lengths if given."""
    return list(iter_pharaoh(path, src_lens, tgt_lens))


def iter_pharaoh(
    path: str,
    src_lens: Optional[Sequence[int]] = None,
    tgt_lens: Optional[Sequence[int]] = None,
) -> Iterator[Links]:
    n = 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            sl = src_lens[n] if src_lens is not None and n < len(src_lens) else None
            tl = tgt_lens[n] if tgt_lens is not None and n < len(tgt_lens) else None
            yield parse_pharaoh_line(line, sl, tl, path, n + 1)
    if src_lens is not None and n + 1 != len(src_lens):
        raise XLInputError(path, None, f"has {count(n + 1, 'line')} but the corpus has "
                           f"{count(len(src_lens), 'sentence')}")


def write_pharaoh(path: str, alignments: Iterable[Iterable[Tuple[int, int]]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for links in alignments:
            f.write(format_pharaoh(links) + "\n")
