"""Eole's ``xl_position`` and ``xl_prereorder`` transforms: the Eole half of :mod:`onmt_xl.core.position_source`, which
holds everything they compute (the preorderer or the BTG oracle, the per-process caches, the noise, the segmentation
content check) and is shared unchanged with the OpenNMT-py adapter.

* ``xl_position`` attaches ``example["xl_pos"]`` (``pos_XL``, paper Eq. 6; one index per source token) for the XL
  encoders; ``xl_noise`` swaps pairs of them at training time (§4.5).
* ``xl_prereorder`` is the pre-reordering baseline (Du and Way 2017; Chen et al. 2019, Tab. 3): the source tokens
  themselves are put in the preorderer's (or the oracle's) order, for a stock Transformer.

Configured under ``transforms_configs: {xl_position: {xl_preorderer: FILE, ...}}`` (or ``xl_prereorder``; pydantic
models below). The preorderer file is a transform *artifact*: Eole copies it into the model directory at save time
and rewrites the path to ``${MODEL_PATH}/FILE``, so ``eole predict`` and ``eole serve`` find it with the model.
``xl_source: align`` reads the corpus' ``path_align`` (or ``xl_align_path``, e.g. test-side alignments: an oracle
upper bound for analysis only). Either transform must be the last one that changes the source tokens.
``xl_positions_suffix: SUFFIX``: a corpus of ``data`` whose ``path_src + SUFFIX`` exists (``onmt-xl positions``, e.g.
cross-fitted), and the ``src`` file of ``eole predict`` whose ``src + SUFFIX`` exists (corpus ``infer``: each example
keeps its line number through Eole's sorting and batching), take their positions from that file, checked against the
text (the shared :class:`~onmt_xl.core.position_source.PrecomputedPositions`); other text and ``eole serve`` keep the
preorderer. A model trained with the option keeps it in its saved config, so ``eole predict`` looks for
``src + SUFFIX`` too.

Segmentation guard: ``warm_up`` refuses a preorderer trained on another segmentation than the one Eole's sub-word
transforms listed before ours give (:mod:`onmt_xl.eole.segmentation`, per corpus or the top-level ``transforms``);
the first source tokens also go through the shared content check.
"""

from __future__ import annotations

import os
import random

from eole.transforms.transform import Transform, TransformConfig

from onmt_xl.eole import registry
from onmt_xl.eole.segmentation import _get, check_pipeline
from onmt_xl.eole.fields import annotation, field
from onmt_xl.core.errors import XLUsageError
# XL_POS_KEY: public here too
from onmt_xl.core.position_source import DEFAULT_SEED, INFER, XL_POS_KEY, XLPositionSource  # noqa: F401


class XLPreReorderConfig(TransformConfig):
    """Options of ``xl_prereorder``; ``xl_position`` has these and ``xl_noise``."""

    xl_source: annotation("xl_source") = field("xl_source")
    xl_preorderer: annotation("xl_preorderer") = field(
        "xl_preorderer", note="A model artifact: Eole copies it into the model directory.")
    xl_align_path: annotation("xl_align_path") = field("xl_align_path")
    xl_cache_size: annotation("xl_cache_size") = field("xl_cache_size")
    xl_positions_suffix: annotation("xl_positions_suffix") = field("xl_positions_suffix")


class XLPositionConfig(XLPreReorderConfig):
    xl_noise: annotation("xl_noise") = field("xl_noise")


class _XLSourceTransform(XLPositionSource, Transform):
    """Eole's options onto :class:`~onmt_xl.core.position_source.XLPositionSource`."""

    def _parse_config(self):
        cfg = self.config
        self.xl_preorderer = cfg.xl_preorderer  # an artifact: Eole copies it into the model directory
        self.artifacts = ["xl_preorderer"]
        path = os.path.expandvars(cfg.xl_preorderer) if cfg.xl_preorderer else None  # ${MODEL_PATH}/... at inference
        self._set_source(cfg.xl_source, path, cfg.xl_align_path, cfg.xl_cache_size, getattr(cfg, "xl_noise", 0.0),
                         getattr(cfg, "xl_positions_suffix", None))
        self.preorderer = None

    def _option(self, name: str) -> str:
        return f"transforms_configs.{self.xl_name}.{name}"

    def _set_seed(self, seed):
        self.rng = random.Random(seed)

    def warm_up(self, vocabs=None):
        self.rng = random.Random(DEFAULT_SEED)
        super().warm_up(vocabs)
        if self.source == "preorderer" and not self.preorderer_path:
            raise XLUsageError(None, None, f"{self.xl_name} needs {self._option('xl_preorderer')} (a file from "
                                           "`onmt-xl preorder-train`)")
        _note_first_pass(self)
        self._load_source()
        if self.source == "preorderer":
            check_pipeline(self.preorderer.segmentation, self.preorderer_path, self.full_config, self.xl_name)
        self._load_precomputed(self._corpora())

    def _log(self, line: str) -> None:
        from eole.utils.logging import logger

        logger.info(line)

    def _corpora(self):
        """``(corpus id, path_src, transforms)`` of each corpus of ``data``; at ``eole predict`` (no ``data``), the
        inference corpus: ``src`` with the top-level ``transforms``, when ``src`` is a file (``eole serve``'s is
        not)."""
        cfg = self.full_config
        data = _get(cfg, "data")
        if not isinstance(data, dict):
            src = _get(cfg, "src")
            if isinstance(src, str) and os.path.isfile(src):
                return [(INFER, src, list(_get(cfg, "transforms") or []))]
            return []
        default = list(_get(cfg, "transforms") or [])
        out = []
        for cid, corpus in data.items():
            names = _get(corpus, "transforms") if corpus is not None else None
            out.append((cid, _get(corpus, "path_src"), default if names is None else list(names)))
        return out

    @staticmethod
    def _tokens(src):
        """Eole's source is raw text until a tokenizing transform (``clean_example`` splits it on spaces later)."""
        return src.split(" ") if isinstance(src, str) else src

    def batch_apply(self, batch, is_train=False, **kwargs):
        """Eole applies transforms to a whole bucket at once: its preorderer cache misses are parsed in one
        compiled call (:meth:`~onmt_xl.core.position_source.XLPositionSource._prefilled`), then each example as
        usual."""
        with self._prefilled([self._tokens(example["src"]) for example, _, _ in batch
                              if not self._has_precomputed(example)]):
            return super().batch_apply(batch, is_train=is_train, **kwargs)

    def _repr_args(self):
        return f"xl_source={self.source!r}, xl_preorderer={self.xl_preorderer!r}, xl_noise={self.noise}"


_NOTED = set()  # transform names whose first-pass note this process has logged


def _note_first_pass(transform) -> None:
    """One log line per process and transform (issue 77: ``eole build_vocab`` ran 71 s without a word): where the
    time of a first pass over a corpus goes. Eole's own output is unchanged."""
    if transform.source != "preorderer" or transform.xl_name in _NOTED:
        return
    _NOTED.add(transform.xl_name)
    from eole.utils.logging import logger

    logger.info(f"{transform.xl_name}: the preorderer parses each new source sentence once per process (then "
                f"cached, up to {transform.cache_size:,} sentences): a first pass over a corpus (eole build_vocab, the "
                "first epoch) is slower than later ones")


class XLPositionTransform(_XLSourceTransform):
    """Attach cross-lingual positions ``example["xl_pos"]`` (one per source token) for the XL encoders."""

    name = xl_name = "xl_position"
    config_model = XLPositionConfig

    def apply(self, example, is_train=False, stats=None, **kwargs):
        example[XL_POS_KEY] = self.xl_positions(self._tokens(example["src"]), example, is_train)
        return example


class XLPreReorderTransform(_XLSourceTransform):
    """Pre-reordering baseline: the source tokens in the preorderer's (or the oracle's) order."""

    name = xl_name = "xl_prereorder"
    config_model = XLPreReorderConfig

    def apply(self, example, is_train=False, stats=None, **kwargs):
        src = example["src"]
        reordered = self.prereordered(self._tokens(src), example)
        example["src"] = " ".join(reordered) if isinstance(src, str) else reordered
        return example


TRANSFORM_CLASSES = {"xl_position": XLPositionTransform, "xl_prereorder": XLPreReorderTransform}
registry.add(transforms=TRANSFORM_CLASSES)
