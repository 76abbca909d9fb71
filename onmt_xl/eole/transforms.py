"""Eole's ``xl_position`` transform: attach ``pos_XL`` (paper Eq. 6) to every example, from the trained BTG
preorderer (the portable :class:`onmt_xl.reorder.preorderer.Preorderer`).

Configured in Eole's YAML under ``transforms_configs: {xl_position: {xl_preorderer: FILE, ...}}``. The preorderer file
is a transform *artifact*: Eole copies it into the model directory at save time and rewrites the path to
``${MODEL_PATH}/FILE``, so ``eole predict`` and ``eole serve`` find it with the model.

Groundwork state (``reports/EOLE.md``): the preorderer source, the per-process cache and the segmentation content
check work. ``xl_source: align`` and ``xl_noise > 0`` are rejected for now: their logic (``swap_noise``, the oracle
read of ``path_align``/``xl_align_path``) lives in the OpenNMT-py adapter's :mod:`onmt_xl.transforms.xl_position`,
which imports OpenNMT at module level, and must first move to a framework-free module to be shared.
"""

from __future__ import annotations

import os
from typing import Dict, List, Literal, Optional, Tuple

from eole.transforms.transform import Transform, TransformConfig
from pydantic import Field, model_validator

from onmt_xl.segmentation import MarkerCounts, content_mismatch

#: example key of the positions, the same as the OpenNMT-py adapter's ``onmt_xl.transforms.XL_POS_KEY``
XL_POS_KEY = "xl_pos"


class XLPositionConfig(TransformConfig):
    xl_source: Literal["preorderer", "align"] = Field(
        default="preorderer", description="Where pos_XL comes from: 'preorderer' (a trained BTG preorderer) or 'align'.")
    xl_preorderer: Optional[str] = Field(
        default=None, description="Preorderer file written by `onmt-xl preorder-train` (a model artifact).")
    xl_align_path: Optional[str] = Field(default=None, description="xl_source align: Pharaoh alignments (not yet).")
    xl_cache_size: int = Field(default=1_000_000, ge=0,
                               description="Cache the positions of up to this many distinct sources per process.")
    xl_noise: float = Field(default=0.0, ge=0.0, le=1.0,
                            description="Training only: ratio of each sentence's XL indices moved (not yet).")

    @model_validator(mode="after")
    def _not_yet(self):
        if self.xl_source != "preorderer":
            raise ValueError("xl_position in Eole supports xl_source: preorderer only so far (reports/EOLE.md)")
        if self.xl_noise > 0:
            raise ValueError("xl_position in Eole does not support xl_noise yet (reports/EOLE.md)")
        return self


_LOADED: Dict[Tuple[str, int, int], object] = {}


def load_preorderer(path: Optional[str]):
    """The preorderer in ``path``, read once per process per file version (``Preorderer.load`` names the file in its
    errors). The OpenNMT-py adapter has its own copy of this cache (``_load_preorderer``): one of the pieces to move."""
    from onmt_xl.reorder.preorderer import Preorderer

    if not path:
        raise ValueError("xl_position needs transforms_configs.xl_position.xl_preorderer (a file from "
                         "`onmt-xl preorder-train`)")
    path = os.path.expandvars(path)
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except OSError:
        return Preorderer.load(path)  # raises the error naming the file
    if key not in _LOADED:
        _LOADED[key] = Preorderer.load(path)
    return _LOADED[key]


class XLPositionTransform(Transform):
    """Attach cross-lingual positions ``example["xl_pos"]`` (one per source token) for the XL encoders."""

    name = "xl_position"
    config_model = XLPositionConfig

    def _parse_config(self):
        self.xl_preorderer = self.config.xl_preorderer  # an artifact: Eole copies it into the model directory
        self.artifacts = ["xl_preorderer"]
        self.cache_size = self.config.xl_cache_size
        self.cache: Dict[str, Tuple[int, ...]] = {}
        self.preorderer = None
        self._seg_sample = None

    def warm_up(self, vocabs=None):
        super().warm_up(vocabs)
        self.preorderer = load_preorderer(self.xl_preorderer)
        self._seg_sample = MarkerCounts([self.preorderer.segmentation.marker or "none"])

    def _check_sample(self, src: List[str]) -> None:
        """The segmentation content check of :mod:`onmt_xl.segmentation` on the first source tokens of the process."""
        self._seg_sample.add(src)
        seen = content_mismatch(self.preorderer.segmentation, self._seg_sample)
        if seen is None:
            if self._seg_sample.full:
                self._seg_sample = None
            return
        raise ValueError(f"{self.xl_preorderer}: segmentation mismatch: this preorderer was trained on "
                         f"{self.preorderer.segmentation.describe()}, but the source tokens reaching xl_position "
                         f"are {seen}")

    def positions(self, src: List[str]) -> Tuple[int, ...]:
        if self.preorderer is None:
            self.warm_up()
        if self._seg_sample is not None:
            self._check_sample(src)
        key = " ".join(src)
        pos = self.cache.get(key)
        if pos is None:
            pos = tuple(self.preorderer.pos_xl(src))
            if len(self.cache) < self.cache_size:
                self.cache[key] = pos
        return pos

    def apply(self, example, is_train=False, stats=None, **kwargs):
        src = example["src"]
        if isinstance(src, str):  # no tokenizing transform before: Eole splits on spaces later (clean_example)
            src = src.split(" ")
        example[XL_POS_KEY] = list(self.positions(src))
        return example

    def _repr_args(self):
        return f"xl_preorderer={self.xl_preorderer!r}"


TRANSFORM_CLASSES = {"xl_position": XLPositionTransform}
