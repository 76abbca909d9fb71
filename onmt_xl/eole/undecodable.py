"""A corpus line that is not UTF-8, in an Eole run with our components: one line naming the file and the line (the
Eole twin of what :func:`onmt_xl.core.errors.install_excepthook` does for OpenNMT-py), not Eole's traceback.

Eole's corpus reader (``eole.inputters.text_corpus``) decodes each line with ``bytes.decode("utf-8")``, so a latin-1
line ends ``eole build_vocab|train|predict`` with a ``UnicodeDecodeError`` and a traceback that names neither the
file nor the line (``build_vocab`` re-raises it from a pool worker, ``train`` with data workers as torch's
``RuntimeError``). :func:`corpus_error` turns it into the :class:`~onmt_xl.core.errors.XLInputError`
``FILE, line N: not UTF-8 text (...); convert it first, ...`` that :mod:`onmt_xl.eole.messages` prints.

Stock stays stock: only for a run that names one of our components or options (:func:`names_ours`: a key or a
name ``xl_*`` in the ``-config`` file, on the command line, or in the ``config.json`` of ``-model_path``, which
is how ``eole predict`` knows a model's transforms and encoder); any other run keeps Eole's traceback.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from typing import Iterator, List, Optional

from onmt_xl.core.errors import NOT_UTF8_HINT, XLInputError, first_undecodable, in_chain

_OURS = re.compile(r"-*xl_\w+")
_CORPUS_READER = "inputters"  # eole/inputters/text_corpus.py: the frames (or the worker's text) of a corpus read
_FILE_FLAGS = ("src", "tgt")


def _flag(argv: List[str], name: str) -> Optional[str]:
    for i, arg in enumerate(argv):
        if arg.lstrip("-") == name and arg.startswith("-") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(("-" + name + "=", "--" + name + "=")):
            return arg.split("=", 1)[1]
    return None


def _load(path: Optional[str]):
    """The YAML (or JSON) at ``path`` as Python data, or None."""
    if not path or not os.path.isfile(path):
        return None
    try:
        import yaml

        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except Exception:
        return None


def _configs(argv: List[str]) -> list:
    """The run's config (``-config``) and, for ``predict``/``serve``, its model's saved one (``config.json``)."""
    run = _load(_flag(argv, "config") or _flag(argv, "c"))
    model_path = _flag(argv, "model_path") or (run.get("model_path") if isinstance(run, dict) else None)
    if isinstance(model_path, list):
        model_path = model_path[0] if model_path else None
    model = _load(os.path.join(model_path, "config.json")) if isinstance(model_path, str) else None
    return [c for c in (run, model) if c is not None]


def _named(value) -> bool:
    if isinstance(value, dict):
        return any((isinstance(k, str) and _OURS.fullmatch(k)) or _named(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_named(v) for v in value)
    return isinstance(value, str) and bool(_OURS.fullmatch(value))


def names_ours(argv: Optional[List[str]] = None) -> bool:
    """Whether the command line, its config or its model's config names an option or component of ours."""
    argv = sys.argv if argv is None else argv
    return any(_OURS.fullmatch(a.split("=", 1)[0]) or _OURS.fullmatch(a) for a in argv[1:]) or any(
        _named(c) for c in _configs(argv))


def _read_from_corpus(exc: BaseException) -> bool:
    """Whether the error was raised while Eole read a corpus (its frames, or the text of a worker's traceback)."""
    seen = exc
    while seen is not None:
        frames = traceback.extract_tb(seen.__traceback__) if seen.__traceback__ else []
        if any(_CORPUS_READER in f.filename for f in frames) or (
                not isinstance(seen, UnicodeDecodeError) and _CORPUS_READER in str(seen)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _read_files(exc: BaseException) -> Iterator[str]:
    """The files of the corpus Eole was reading when ``exc`` was raised in this process (``src``, ``tgt``, ``align``
    of its ``ParallelCorpus``)."""
    tb = exc.__traceback__
    while tb is not None:
        corpus = tb.tb_frame.f_locals.get("self") if _CORPUS_READER in tb.tb_frame.f_code.co_filename else None
        for side in ("src", "tgt", "align"):
            path = getattr(corpus, side, None)
            if isinstance(path, str):
                yield path
        tb = tb.tb_next


def _config_files(argv: List[str]) -> Iterator[str]:
    """Every corpus file the command line and its config name: ``-src``/``-tgt``, ``src``/``tgt``, and each corpus'
    ``path_src``/``path_tgt``/``path_align`` under ``data``."""
    for name in _FILE_FLAGS:
        value = _flag(argv, name)
        if value:
            yield value
    for config in _configs(argv)[:1]:
        if not isinstance(config, dict):
            continue
        for name in _FILE_FLAGS:
            if isinstance(config.get(name), str):
                yield config[name]
        data = config.get("data")
        for corpus in (data.values() if isinstance(data, dict) else ()):
            for key in ("path_src", "path_tgt", "path_align"):
                if isinstance(corpus, dict) and isinstance(corpus.get(key), str):
                    yield corpus[key]


def corpus_error(exc: BaseException, argv: Optional[List[str]] = None) -> Optional[XLInputError]:
    """The :class:`XLInputError` naming the first line that is not UTF-8, for a ``UnicodeDecodeError`` raised while
    Eole read a corpus in a run that names our components (:func:`names_ours`); else None."""
    argv = sys.argv if argv is None else argv
    decode = in_chain(exc, UnicodeDecodeError)
    text = str(exc) if isinstance(exc, RuntimeError) else ""
    if (decode is None and "UnicodeDecodeError: " not in text) or not _read_from_corpus(exc):
        return None
    if not names_ours(argv):
        return None
    seen = set()
    for path in (*_read_files(decode or exc), *_config_files(argv)):
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        bad = first_undecodable(path)
        if bad:
            return XLInputError(path, bad[0], f"{bad[1]}; {NOT_UTF8_HINT}")
    reason = f" ({decode.reason})" if decode is not None else ""
    return XLInputError(None, None, f"a corpus file is not UTF-8 text{reason}; {NOT_UTF8_HINT}")
