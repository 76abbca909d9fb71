"""The preorderer's file format: one ``.npz`` holding a JSON header, the JSON vocabulary, the word
classes and the non-zero weight rows.

Version 4 (:data:`VERSION`, written) records the feature groups added to the base templates and the
tagger they read (``features``, ``tagger``: see :mod:`onmt_xl.core.reorder.features` and
:mod:`onmt_xl.core.reorder.tagger`), so a model decodes with the features it was trained with and tags its own
input; a reader of version 3 refuses it instead of decoding it with the base features only. Version 3
records the source segmentation in the header; version 2 does not, so its segmentation is inferred from the
vocabulary. Versions 2 and 3 are read as the base feature set, and written back as read. Any other
version fails at load with a message naming the file and the versions read.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any, Dict

import numpy as np

from onmt_xl.core.errors import XLInputError
from onmt_xl.core.reorder.features import Vocab
from onmt_xl.core.segmentation import SegmentationScheme, detect

FORMAT = "onmt_xl.preorderer"
# 2: exchange-clustering classes, three-view features, span limit; 3: + the source segmentation;
# 4: + the feature groups and the tagger
VERSION = 4
READABLE_VERSIONS = (2, 3, 4)  # version 2 records no segmentation, 2 and 3 no feature groups


def vocab_segmentation(vocab, version: int) -> SegmentationScheme:
    """The segmentation the vocabulary's tokens show (for models that do not record it)."""
    note = "inferred from the vocabulary"
    if version < 3:
        note += f"; format version {version} records no segmentation"
    return detect([list(vocab.tokens)], note=note)


def header(model) -> Dict[str, Any]:
    """The file header of ``model``; a model read from a version-2 file keeps version 2 (no segmentation)."""
    hparams = dict(model.hparams)
    if model.version >= 4:
        hparams.setdefault("features", [])
        hparams.setdefault("tagger", None)
    else:
        hparams.pop("features", None)
        hparams.pop("tagger", None)
    out = {"format": FORMAT, "version": model.version, **hparams, "class_words": model.vocab.class_words,
           "clustered": model.vocab.clusters is not None}
    if model.version >= 3:
        out["segmentation"] = model.segmentation.to_dict()
    return out


def pack(model) -> Dict[str, Any]:
    """Compact state: header, vocabulary, clusters and the non-zero weight rows (cheap to pickle)."""
    rows = np.flatnonzero(np.any(model.weights != 0, axis=1))
    clusters = model.vocab.clusters
    return {
        "header": header(model),
        "vocab": list(model.vocab.tokens),
        "clusters": np.zeros(0, dtype=np.int32) if clusters is None else clusters.astype(np.int32),
        "feat_index": rows.astype(np.int64),
        "feat_weight": model.weights[rows],
    }


def unpack(state: Dict[str, Any]):
    """``(vocab, weights, hparams, segmentation, version)`` of a state made by :func:`pack`."""
    head = state["header"]
    weights = np.zeros((int(head["hash_size"]), 2), dtype=np.float32)
    weights[state["feat_index"]] = state["feat_weight"]
    clusters = np.asarray(state["clusters"], dtype=np.int64) if head.get("clustered") else None
    vocab = Vocab(list(state["vocab"]), int(head["class_words"]), clusters)
    version = int(head.get("version", VERSION))
    if version >= 3:
        if "segmentation" not in head:
            raise ValueError(f"format version {version} header has no segmentation record")
        segmentation = SegmentationScheme.from_dict(head["segmentation"])
    else:
        segmentation = vocab_segmentation(vocab, version)
    if version >= 4 and not ("features" in head and "tagger" in head):
        raise ValueError(f"format version {version} header has no feature groups or tagger record")
    hparams = {k: v for k, v in head.items() if k not in ("format", "version", "clustered", "segmentation")}
    return vocab, weights, hparams, segmentation, version


def write(model, path: str) -> None:
    """``model`` as one versioned ``.npz`` file at ``path`` (as given, no suffix added), replaced atomically."""
    state = pack(model)
    as_bytes = lambda obj: np.frombuffer(json.dumps(obj, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez_compressed(buf, header=as_bytes(state["header"]), vocab=as_bytes(state["vocab"]),
                        clusters=state["clusters"], feat_index=state["feat_index"], feat_weight=state["feat_weight"])
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(buf.getvalue())
    os.replace(tmp, path)


def _arrays(path: str) -> Dict[str, np.ndarray]:
    if not os.path.exists(path):
        raise XLInputError(path, None, "preorderer model file not found")
    if os.path.isdir(path):
        raise XLInputError(path, None, "is a directory, expected a preorderer model file")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as exc:  # zipfile.BadZipFile, ValueError (pickle/garbage), OSError, EOFError, zlib.error
        raise XLInputError(
            path, None, f"cannot read as a preorderer model (corrupt or not an .npz file): {exc}"
        ) from exc


def _header(path: str, arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    if "header" not in arrays:
        raise XLInputError(path, None, f"not an {FORMAT} model (no header; arrays: {sorted(arrays)})")
    try:
        head = json.loads(arrays["header"].tobytes().decode("utf-8"))
    except Exception as exc:
        raise XLInputError(path, None, f"corrupt preorderer header: {exc}") from exc
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        fmt = head.get("format") if isinstance(head, dict) else None
        raise XLInputError(path, None, f"not an {FORMAT} model (format {fmt!r})")
    if head.get("version") not in READABLE_VERSIONS:
        raise XLInputError(
            path, None,
            f"{FORMAT} format version {head.get('version')!r}, but this onmt_xl reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}: retrain the preorderer (onmt-xl preorder-train) "
            "or use a matching onmt_xl",
        )
    return head


def _state(head: Dict[str, Any], arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    vocab = json.loads(arrays["vocab"].tobytes().decode("utf-8"))
    state = {
        "header": head,
        "vocab": vocab,
        "clusters": np.asarray(arrays.get("clusters", np.zeros(0)), dtype=np.int64),
        "feat_index": np.asarray(arrays["feat_index"], dtype=np.int64),
        "feat_weight": np.asarray(arrays["feat_weight"], dtype=np.float32),
    }
    size = int(head["hash_size"])
    idx = state["feat_index"]
    if idx.size and (idx.min() < 0 or idx.max() >= size) or state["feat_weight"].shape != (idx.size, 2):
        raise ValueError("weight arrays do not match the header's hash_size")
    if head.get("clustered") and state["clusters"].shape != (len(vocab),):
        raise ValueError(f"{state['clusters'].size} word classes for {len(vocab)} vocabulary entries")
    return state


def read(path: str, restore) -> Any:
    """``restore(state)`` for the state stored at ``path``; raises :class:`XLInputError` naming ``path`` if
    the file is missing, unreadable, of another format or version, or inconsistent."""
    arrays = _arrays(path)
    head = _header(path, arrays)
    try:
        return restore(_state(head, arrays))
    except XLInputError:
        raise
    except Exception as exc:
        raise XLInputError(path, None, f"corrupt preorderer model: {exc}") from exc
