"""Translation output: one output line per input line, and the output file opened at the first line.

Wraps (OpenNMT-py 3.5.1):

- ``Inference._translate``: stock ``onmt_translate`` drops empty source lines, so every later line of the output
  is misaligned. The translator's output file is wrapped (:class:`RealignedOutput`) so that ``n_best`` empty lines
  are written at the place of each empty source line recorded by :mod:`onmt_xl.opennmt.seams.corpus` (OpenNMT writes one
  ``write`` per translated line, in line order), trailing ones included; the returned predictions get
  ``[""] * n_best`` there (scores 0). An input of empty lines only (or no line) no longer crashes the stock
  summary, which reads the last batch. Setting empty lines aside before batching also keeps OpenNMT's output
  buckets whole and avoids its crash on a bucket with no non-empty line.
- ``translator.build_translator`` (and the name ``onmt.utils.distributed`` imported): stock ``onmt_translate``
  empties ``-output`` before it loads the model, so a run that stops at startup (a bad option, model, transform or
  preorderer) wiped the translations of an earlier run. :class:`LazyOutput` opens it (``w+``, UTF-8, as stock) at
  the first write or flush; the translator flushes at the end, so an empty input still leaves an empty file.
  Callers that pass their own ``out_file`` (the server, validation scoring) are unaffected.

An input without empty lines is translated and written byte for byte as stock writes it.
"""

from __future__ import annotations

import codecs

from onmt_xl.opennmt.seams.base import wrapper
from onmt_xl.opennmt.seams.corpus import empty_lines

LOST = ("onmt_translate drops empty source lines (every later output line shifts) and empties -output before "
        "it starts")


class RealignedOutput:
    """The translator's output file, with ``n_best`` empty lines written for every empty source line at its
    place: OpenNMT writes one ``write`` per translated line, in line order; ``empty()`` gives the empty lines
    read so far (0-based), which always include those before the line being written."""

    def __init__(self, out, empty, n_best: int):
        self.out, self.empty, self.n_best, self.line = out, empty, max(int(n_best), 1), 0

    def pad(self) -> None:
        empty = self.empty()
        while self.line in empty:
            self.out.write("\n" * self.n_best)
            self.line += 1

    def write(self, text):
        self.pad()
        self.out.write(text)
        self.line += 1

    def __getattr__(self, name):
        return getattr(self.out, name)


class _Batches:
    """``infer_iter`` (its attributes too), calling ``on_none()`` once it ends having yielded no batch."""

    def __init__(self, batches, on_none):
        self.batches, self.on_none = batches, on_none

    def __iter__(self):
        n = 0
        for n, item in enumerate(self.batches, 1):
            yield item
        if n == 0:
            self.on_none()

    def __getattr__(self, name):
        return getattr(self.batches, name)


def _infer_corpus(infer_iter):
    from onmt.constants import CorpusName

    mixer = getattr(infer_iter, "mixer", None)
    return getattr(mixer, "iterables", {}).get(CorpusName.INFER)


class LazyOutput:
    """A text file opened (``w+``, UTF-8) at the first ``write`` or ``flush``, not before."""

    def __init__(self, path: str):
        self.path, self._file = path, None

    def _opened(self):
        if self._file is None:
            self._file = codecs.open(self.path, "w+", "utf-8")
        return self._file

    def write(self, text):
        return self._opened().write(text)

    def flush(self):
        self._opened().flush()

    def close(self):
        if self._file is not None:
            self._file.close()

    def __getattr__(self, name):
        return getattr(self._opened(), name)


def apply() -> None:
    from onmt.translate import translator
    from onmt.translate.translator import Inference
    from onmt.utils import distributed

    stock = Inference._translate
    stock_build = translator.build_translator

    def _translate(self, infer_iter, *args, **kwargs):
        corpus = _infer_corpus(infer_iter)
        if corpus is None or self.out_file is None:
            return stock(self, infer_iter, *args, **kwargs)
        empty = lambda: empty_lines(corpus)  # noqa: E731  (filled as reading goes)
        out, self.out_file = self.out_file, RealignedOutput(self.out_file, empty, self.n_best)
        reports = self.report_score, self.report_time

        def no_batch():  # the stock summary reads the last batch (and divides by the line count)
            self.report_score = self.report_time = False

        try:
            scores, predictions = stock(self, _Batches(infer_iter, no_batch), *args, **kwargs)
            self.out_file.pad()  # the empty lines at the end
            self.out_file.flush()
        finally:
            self.out_file = out
            self.report_score, self.report_time = reports
        for line in sorted(empty()):
            if line <= len(predictions):
                predictions.insert(line, [""] * self.n_best)
                scores.insert(line, [0.0] * self.n_best)
        return scores, predictions

    def build_translator(opt, device_id=0, report_score=True, logger=None, out_file=None):
        if out_file is None:
            out_file = LazyOutput(opt.output)
        return stock_build(opt, device_id=device_id, report_score=report_score, logger=logger, out_file=out_file)

    Inference._translate = wrapper(stock, _translate)
    translator.build_translator = wrapper(stock_build, build_translator)
    distributed.build_translator = translator.build_translator  # multi-GPU translation imported the name itself
