"""The ``xl_position`` transform: attach ``pos_XL`` (paper Eq. 6) to every example.

``example["xl_pos"][j]`` is the index of source token ``j`` in the source reordered into target order.
It comes from the trained BTG preorderer (``-xl_source preorderer``, the default and the only source
available when translating) or from the corpus' word alignments through the BTG oracle
(``-xl_source align``: needs ``path_align``, or ``-xl_align_path`` for ``onmt_translate``, whose
corpora carry no alignments; training and analysis only — with test-side alignments this is the
oracle upper bound of Chen et al. 2020, Sec. 3, which uses test information). It must come after every
transform that changes the source tokens, so it reorders exactly what the encoder reads (words, or
BPE/SentencePiece pieces).

Preorderer outputs are cached per distinct source sentence (``-xl_cache_size`` entries per process, default 1M;
OpenNMT re-applies transforms on every pass over the corpus), so the CKY parse runs once per sentence and process.
With ``-xl_positions_suffix SUFFIX``, a corpus of ``-data`` whose ``path_src + SUFFIX`` exists (``onmt-xl
positions``: cross-fitted training positions), and the input of ``onmt_translate -src FILE`` whose ``FILE + SUFFIX``
exists (corpus ``infer``: each example keeps its line number through OpenNMT's sorting and batching), take their
positions from that file, line by line, checked against the text
(:class:`onmt_xl.core.position_source.PrecomputedPositions`); other text, and the server, keep the preorderer. At
training time ``-xl_noise R`` swaps random pairs of reordered indices, ``R·n/2`` swaps in an n-token sentence in
expectation (stochastically rounded), i.e. a ratio R of its indices move (the noise attack of §4.5, footnote 4).

**Segmentation guard.** A preorderer only means something on the segmentation it was trained on, which
its file records (:mod:`onmt_xl.core.segmentation`). ``warm_up`` (at start-up of ``onmt_build_vocab``,
``onmt_train`` and ``onmt_translate``) compares it with the segmentation produced by the last sub-word
transform listed before this one, per corpus (``sentencepiece``: spacer ``▁``; ``bpe``: subword-nmt's
``@@``; ``onmt_tokenize``: from ``-src_subword_type``/``-src_subword_model`` and the joiner/spacer options
of ``-src_onmttok_kwargs``; the model file is hashed), and fails naming the preorderer file and both
segmentations. No such transform says nothing (the files may be segmented already), so the first source
tokens that reach the transform (:data:`~onmt_xl.core.segmentation.SAMPLE_TOKENS` per process) also go through
the content check of :mod:`onmt_xl.core.segmentation`: a preorderer trained on words fails on pieces carrying
joiner, spacer or ``@@`` markers, one trained on marked pieces fails on unmarked words.

The positions, the cache, the noise and the content check are framework-free and shared with the Eole adapter
(:mod:`onmt_xl.core.position_source`); this module is OpenNMT-py's half: the options and the pipeline check.
"""

from __future__ import annotations

import os
import random
from typing import List, Optional, Tuple

from onmt.transforms import register_transform
from onmt.transforms.transform import Transform

from onmt_xl.core.errors import XLInputError, XLUsageError
from onmt_xl.core import options_table
from onmt_xl.opennmt.opts import add_all
from onmt_xl.core.position_source import (  # noqa: F401  (swap_noise, XL_SOURCES: public here too)
    DEFAULT_SEED, INFER, XL_SOURCES, XLPositionSource, load_preorderer, swap_noise,
)
from onmt_xl.opennmt.transforms import XL_POS_KEY
from onmt_xl.core.segmentation import SegmentationScheme, pipeline_mismatch, schemes_reaching, tokenizer_segmentation

#: the preorderer cache of :mod:`onmt_xl.core.position_source` (one per process, shared with the Eole adapter)
_load_preorderer = load_preorderer


#: OpenNMT-py's sub-word model option, in messages
MODEL_OPTION = "-src_subword_model"


def transform_segmentation(name: str, opts) -> Optional[SegmentationScheme]:
    """The source segmentation OpenNMT's transform ``name`` produces under ``opts``; ``None`` when it
    leaves the segmentation as it finds it (or is not a sub-word transform). The mapping is the portable
    :func:`onmt_xl.core.segmentation.tokenizer_segmentation`, shared with the Eole adapter."""
    return tokenizer_segmentation(name, getattr(opts, "src_subword_model", None),
                                  getattr(opts, "src_subword_type", "none"), getattr(opts, "src_onmttok_kwargs", None),
                                  MODEL_OPTION)


def pipeline_segmentations(opts, name: str) -> List[Tuple[str, SegmentationScheme]]:
    """``(where, scheme)`` for every pipeline that lists ``name`` after a sub-word transform: each
    training corpus (``opts.data``), else the ``-transforms`` of ``onmt_translate``."""
    pipelines = []
    data = getattr(opts, "data", None)
    if isinstance(data, dict) and data:
        for cid, corpus in data.items():
            pipelines.append((f"corpus {cid!r}", list((corpus or {}).get("transforms") or [])))
    else:
        pipelines.append(("-transforms", list(getattr(opts, "transforms", None) or [])))
    return schemes_reaching(name, pipelines, lambda before: transform_segmentation(before, opts))


OPTIONS = options_table.XL_POSITION


@register_transform(name="xl_position")
class XLPositionTransform(XLPositionSource, Transform):
    """Attach cross-lingual positions ``pos_XL`` to each example (read by onmt_xl's XL encoders). The positions
    themselves, the cache, the noise and the content check are :class:`onmt_xl.core.position_source.XLPositionSource`'s;
    this class maps OpenNMT's options onto it and adds the pipeline half of the segmentation guard."""

    xl_name = "xl_position"

    def __init__(self, opts):
        super().__init__(opts)
        self.preorderer = None

    @classmethod
    def add_options(cls, parser):
        group = parser.add_argument_group("Transform/XLPosition")
        add_all(group, OPTIONS)

    @classmethod
    def _validate_options(cls, opts):
        for name in ("xl_cache_size", "xl_noise"):
            error = options_table.option(name).bound_error(getattr(opts, name, 0))
            if error:
                raise XLUsageError(None, None, error)
        if opts.xl_source == "preorderer":
            if not opts.xl_preorderer:
                raise XLUsageError(None, None, "-xl_source preorderer needs -xl_preorderer PATH (a file from `onmt-xl "
                                   "preorder-train`)")
            _load_preorderer(opts.xl_preorderer)  # fail at start-up, not inside a data worker

    def _parse_opts(self):
        self._set_source(self.opts.xl_source, self.opts.xl_preorderer, getattr(self.opts, "xl_align_path", None),
                         getattr(self.opts, "xl_cache_size", 1_000_000), self.opts.xl_noise,
                         getattr(self.opts, "xl_positions_suffix", None))

    def _log(self, line: str) -> None:
        from onmt.utils.logging import logger

        logger.info(line)

    def _corpora(self) -> List[Tuple[str, Optional[str], List[str]]]:
        """``(corpus id, path_src, transforms)`` of each corpus of ``-data``; in ``onmt_translate`` (no ``-data``),
        the inference corpus: ``-src`` with ``-transforms``, when ``-src`` is a file (the server's is not)."""
        data = getattr(self.opts, "data", None)
        if not isinstance(data, dict):
            src = getattr(self.opts, "src", None)
            if isinstance(src, str) and os.path.isfile(src):
                return [(INFER, src, list(getattr(self.opts, "transforms", None) or []))]
            return []
        default = list(getattr(self.opts, "transforms", None) or [])
        out = []
        for cid, corpus in data.items():
            names = (corpus or {}).get("transforms")
            out.append((cid, (corpus or {}).get("path_src"), default if names is None else list(names)))
        return out

    def _set_seed(self, seed):
        self.rng = random.Random(seed)

    def warm_up(self, vocabs=None):
        self.rng = random.Random(DEFAULT_SEED)
        super().warm_up(vocabs)
        self._load_source()
        if self.source == "preorderer":
            self._check_pipeline_segmentation()
        self._load_precomputed(self._corpora())

    def _check_pipeline_segmentation(self) -> None:
        trained = self.preorderer.segmentation
        for where, scheme in pipeline_segmentations(self.opts, self.xl_name):
            problem = pipeline_mismatch(trained, scheme, where, self.xl_name, MODEL_OPTION)
            if problem:
                raise XLInputError(self.preorderer_path, None, problem)

    def __getstate__(self):
        state = super().__getstate__()
        state["preorderer"] = self.preorderer  # ship the loaded model to data workers
        return state

    def __setstate__(self, state):
        # a spawned data worker (-num_workers, always "spawn" in OpenNMT-py 3.5.1) unpickles this first: without the
        # import hook there (onmt_xl registered by hand in the parent), batching would drop pos_XL; idempotent
        from onmt_xl import register

        register()
        self.preorderer = state.get("preorderer")
        super().__setstate__(state)

    def batch_apply(self, batch, is_train=False, **kwargs):
        """OpenNMT applies transforms to a whole bucket at once: its preorderer cache misses are parsed in one
        compiled call (:meth:`~onmt_xl.core.position_source.XLPositionSource._prefilled`), then each example as
        usual."""
        with self._prefilled([example["src"] for example, _, _ in batch if not self._has_precomputed(example)]):
            return super().batch_apply(batch, is_train=is_train, **kwargs)

    def apply(self, example, is_train=False, stats=None, **kwargs):
        example[XL_POS_KEY] = self.xl_positions(example["src"], example, is_train)
        return example

    def _repr_args(self):
        return f"xl_source={self.source!r}, xl_preorderer={self.preorderer_path!r}, xl_noise={self.noise}"


@register_transform(name="xl_prereorder")
class XLPreReorderTransform(XLPositionTransform):
    """Pre-reordering baseline (Du and Way 2017; Chen et al. 2019, Tab. 3): the source tokens themselves
    are put in the preorderer's (or, with ``-xl_source align``, the oracle's) order before a stock
    Transformer reads them. Shares the ``xl_position`` options; ``-xl_noise`` does not apply.
    """

    xl_name = "xl_prereorder"

    @classmethod
    def add_options(cls, parser):
        """Options are those of ``xl_position`` (``-xl_source``, ``-xl_preorderer``, ``-xl_cache_size``)."""

    def apply(self, example, is_train=False, stats=None, **kwargs):
        example["src"] = self.prereordered(example["src"], example)
        return example
