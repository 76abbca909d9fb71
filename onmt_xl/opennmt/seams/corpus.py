"""Corpus lines: file and line in every error, and empty lines handled as ``-skip_empty_level`` says.

Wraps (OpenNMT-py 3.5.1) ``ParallelCorpusIterator._process`` (:func:`read_corpus`), which every corpus of
``onmt_build_vocab``, ``onmt_train`` and ``onmt_translate`` goes through, whatever its transforms.

- Line numbers: a reader with ``stride``/``offset`` (data workers, vocabulary threads, GPU ranks) reads the blocks
  of ``stride`` lines with ``(i // stride) % stride == offset`` but stock numbers its k-th line
  ``k * stride + offset``; ``cid_line_number`` is now the file's 0-based line (:func:`stock_line_indices`), and
  ``example["cid_files"]`` holds the corpus' files, so errors name the file and line
  (:func:`onmt_xl.core.errors.example_location`).
- Empty lines: in 3.5.1 an empty or whitespace-only line splits to ``[""]``, so the stock ``-skip_empty_level``
  check never fires (empty sources were dropped silently after the transforms, empty targets trained on).
  Training and validation pairs with an empty side are now skipped before any transform: ``silent``;
  ``warning`` (the default) logs ``FILE, line N: empty source line; the pair is skipped (-skip_empty_level
  warning)`` once per line and process; ``error`` raises :class:`~onmt_xl.core.errors.XLEmptyLineError` (an
  ``IOError``, as stock's check raises) naming the file and line. Translation: empty source lines are set aside
  and recorded for :mod:`onmt_xl.opennmt.seams.output`.
"""

from __future__ import annotations

import weakref

from onmt_xl.core.errors import FILES_KEY, XLEmptyLineError, example_location
from onmt_xl.opennmt.seams.base import wrapper

LOST = ("errors name no file and line of a corpus; empty lines are read as stock reads them (onmt_translate "
        "then drops empty source lines, shifting every later output line)")

_empty: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # inference iterator -> its empty lines
_warned: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # iterator -> the lines warned about


LINE_KEY = "_onmt_xl_line"  # the file's 0-based line, set on the raw example before OpenNMT's own reading


def stock_line_indices(stride: int, offset: int):
    """The 0-based file lines that OpenNMT-py 3.5.1's ``ParallelCorpus.load(offset, stride)`` yields, in order:
    those with ``(i // stride) % stride == offset`` (blocks of ``stride`` lines per reader), whereas its
    ``cid_line_number`` is ``k * stride + offset`` for the k-th line read (correct only for ``stride`` 1)."""
    i = 0
    while True:
        if (i // stride) % stride == offset:
            yield i
        i += 1


def _is_empty(tokens) -> bool:
    return tokens is not None and not any(tokens)  # "" and whitespace-only lines split to [""] in 3.5.1


def read_corpus(iterator, stock_process, stream):
    """``ParallelCorpusIterator._process`` with the file's line number, the corpus' files and the empty-line
    policy (see the module docstring). ``iterator``: the stock iterator, ``stream``: its raw examples."""
    from onmt.constants import CorpusName
    from onmt.utils.logging import logger

    corpus = iterator.corpus
    files = {side: (path if isinstance(path, str) else None)
             for side, path in (("src", corpus.src), ("tgt", corpus.tgt), ("align", corpus.align))}
    inferring = iterator.cid == CorpusName.INFER
    if inferring:
        _empty[iterator] = set()  # read by the translator (onmt_xl.opennmt.seams.output) as the lines come in
    warned = _warned.setdefault(iterator, set())

    def numbered():
        for line, example in zip(stock_line_indices(iterator.stride, iterator.offset), stream):
            example[LINE_KEY] = line
            yield example

    for item in stock_process(iterator, numbered()):
        example = item[0]
        line = example.pop(LINE_KEY, None)
        if line is not None:
            example["cid_line_number"] = line
        example[FILES_KEY] = files
        src_empty, tgt_empty = _is_empty(example["src"]), _is_empty(example.get("tgt"))
        if inferring:
            if src_empty:
                _empty[iterator].add(example["cid_line_number"])
                continue
        elif src_empty or tgt_empty:
            side = "src" if src_empty else "tgt"
            path, number = example_location(example, side)
            what = ("empty source and target lines" if src_empty and tgt_empty
                    else f"empty {'source' if src_empty else 'target'} line")
            level = iterator.skip_empty_level
            if level == "error":  # an IOError too, as stock raises (and its callers catch)
                raise XLEmptyLineError(path, number, f"{what}: remove the pair, or skip empty pairs with "
                                                 "-skip_empty_level warning (or silent)")
            if level == "warning" and (path, number) not in warned:
                warned.add((path, number))
                logger.warning("%s, line %s: %s; the pair is skipped (-skip_empty_level warning)", path, number, what)
            continue
        yield item


def empty_lines(iterator) -> set:
    """The 0-based lines of an inference corpus read so far whose source is empty."""
    return _empty.get(iterator, set())


def apply() -> None:
    from onmt.inputters.text_corpus import ParallelCorpusIterator

    stock = ParallelCorpusIterator._process

    def _process(self, stream):
        return read_corpus(self, stock, stream)

    ParallelCorpusIterator._process = wrapper(stock, _process)
