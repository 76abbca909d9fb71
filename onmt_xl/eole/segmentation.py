"""The pipeline half of the segmentation guard in Eole (the content half is :mod:`onmt_xl.core.position_source`'s).

Before any data is read, ``xl_position``/``xl_prereorder``'s ``warm_up`` works out which segmentation the source has
when it reaches them: per corpus (``data.<corpus>.transforms``, or the top-level ``transforms`` a corpus without its
own list gets), or, at ``eole predict``/``serve`` (no corpora), the top-level ``transforms`` (the model's own, from
its ``config.json``). The last of Eole's sub-word transforms listed before ours decides, read from its section of
``transforms_configs`` (``sentencepiece``, ``bpe``, ``onmt_tokenize``: ``src_subword_model``, ``src_subword_type``,
``src_onmttok_kwargs``); the mapping and the message are the portable :mod:`onmt_xl.core.segmentation`'s, the same as
OpenNMT-py's. Other transforms (``huggingface_tokenize`` included, whose ids are no tokens of ours) say nothing.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

from onmt_xl.core.errors import XLInputError
from onmt_xl.core.segmentation import (
    SUBWORD_TRANSFORMS, SegmentationScheme, pipeline_mismatch, schemes_reaching, tokenizer_segmentation,
)

#: Eole's sub-word model option, in messages (``{tokenizer}``: the transform's name)
MODEL_OPTION = "transforms_configs.{tokenizer}.src_subword_model"


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj.key`` of a pydantic config, or ``obj[key]`` of a plain dict."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def transform_segmentation(name: str, config: Any) -> Optional[SegmentationScheme]:
    """The source segmentation Eole's transform ``name`` gives under the full ``config`` (its section
    ``transforms_configs.<name>``); ``None`` when it leaves the segmentation as it finds it."""
    if name not in SUBWORD_TRANSFORMS:
        return None
    section = _get(_get(config, "transforms_configs"), name)
    model = _get(section, "src_subword_model")
    if model:
        model = os.path.expandvars(model)  # ${MODEL_PATH}/... in a saved model's config
    return tokenizer_segmentation(name, model, _get(section, "src_subword_type", "none"),
                                  _get(section, "src_onmttok_kwargs"), MODEL_OPTION)


def pipelines(config: Any) -> List[Tuple[str, List[str]]]:
    """``(where, transform names)``: each corpus of ``data`` (its own ``transforms``, else the top-level ones), or,
    without corpora (``eole predict``), the top-level ``transforms``."""
    default = list(_get(config, "transforms") or [])
    data = _get(config, "data")
    if isinstance(data, dict) and data:
        out = []
        for cid, corpus in data.items():
            names = _get(corpus, "transforms") if corpus is not None else None
            out.append((f"corpus {cid!r}", default if names is None else list(names)))
        return out
    return [("transforms", default)]


def pipeline_segmentations(config: Any, name: str) -> List[Tuple[str, SegmentationScheme]]:
    """``(where, scheme)`` for every pipeline of ``config`` that lists ``name`` after a sub-word transform."""
    return schemes_reaching(name, pipelines(config), lambda before: transform_segmentation(before, config))


def check_pipeline(trained: SegmentationScheme, preorderer_path: str, config: Any, name: str) -> None:
    """Raise :class:`~onmt_xl.core.errors.XLInputError` (one line, naming the preorderer file, the pipeline and both
    segmentations) when a pipeline feeds ``name`` another segmentation than the preorderer's ``trained``."""
    for where, scheme in pipeline_segmentations(config, name):
        problem = pipeline_mismatch(trained, scheme, where, name, MODEL_OPTION)
        if problem:
            raise XLInputError(preorderer_path, None, problem)
