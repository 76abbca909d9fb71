"""Transforms in the REST server (``onmt_server``).

Wraps (OpenNMT-py 3.5.1):

- ``ServerModel.parse_opt``: the stock one turns a JSON list into one argument (``"transforms": ["xl_position"]``
  became ``-transforms "['xl_position']"``); a list now gives one argument per item (:func:`server_argv`), and the
  transforms' options are validated as ``onmt_translate`` does;
- ``ServerModel.run``: marks its thread's model, and names the fix when an XL model is served without
  ``xl_position``;
- ``translation_server.textbatch_to_tensor``: the stock server numericalises requests without running any
  transform, so an XL model got no positions; it now first runs the serving model's ``-transforms`` on each
  example (:func:`server_textbatch_to_tensor`, as ``onmt_translate`` does on each line: ``is_train=False``,
  corpus ``infer``), with ``-xl_positions_suffix`` unset (a request is no file's line: its positions come from
  ``-xl_source``).

A model whose transform options are wrong (no ``xl_preorderer``, a bad file), or an XL model served without
``xl_position``, answers each request with ``{"status": "error", "error": ...}`` naming what to add to its
``"opt"``; the other models of the server are unaffected, and a model without ``transforms`` is served as before.
"""

from __future__ import annotations

import copy
import functools
import os
import threading
import weakref

from onmt_xl.core.errors import in_chain
from onmt_xl.opennmt.seams.base import wrapper

LOST = "onmt_server runs no transform (XL models get no positions) and cannot parse a list-valued option"

_pipes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # ServerModel -> (translator, TransformPipe)
_errors: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # ServerModel -> its transform options' error


XL_SERVER_HINT = ('add "transforms": ["xl_position"] and "xl_preorderer": "path/to/preorderer.xlp" '
                  '(a file from `onmt-xl preorder-train`) to this model\'s "opt" in the server\'s JSON config')


def server_argv(opt: dict) -> list:
    """A model's ``"opt"`` from the server's JSON config as command-line arguments, as the stock
    ``ServerModel.parse_opt`` writes them (``models`` -> ``-model``; a boolean -> its flag), except that a
    list gives one argument per item, so that ``"transforms": ["xl_position", ...]`` parses."""
    argv = []
    for key, value in opt.items():
        if key == "models":
            argv += ["-model", *(str(m) for m in value)]
        elif type(value) is bool:
            argv.append(f"-{key}")  # as stock: the flag, whatever the value
        elif isinstance(value, (list, tuple)):
            argv += [f"-{key}", *(str(v) for v in value)]
        else:
            argv += [f"-{key}", str(value)]
    return argv


def server_config_error(opt, err: Exception) -> str:
    """What to tell a client of a model whose transform options failed validation (``err``)."""
    transforms = list(getattr(opt, "transforms", None) or [])
    if ("xl_position" in transforms or "xl_prereorder" in transforms) and \
            getattr(opt, "xl_source", "preorderer") == "preorderer" and not getattr(opt, "xl_preorderer", None):
        return ('the xl_position transform needs a preorderer: add "xl_preorderer": "path/to/preorderer.xlp" '
                '(a file from `onmt-xl preorder-train`) to this model\'s "opt" in the server\'s JSON config')
    return f"{err} (transform options go in this model's \"opt\" in the server's JSON config)"


class _Serving(threading.local):
    model = None  # the ServerModel whose ``run`` this thread is in


_serving = _Serving()


def server_transform_pipe(model):
    """The ``TransformPipe`` of the server model's ``-transforms`` (None without), built once per loaded
    translator, with its vocabularies, as ``onmt_translate`` builds it."""
    from onmt.transforms import TransformPipe, get_transforms_cls, make_transforms

    cached = _pipes.get(model)
    if cached is not None and cached[0] is model.translator:
        return cached[1]
    names = list(getattr(model.opt, "transforms", None) or [])
    pipe = None
    if names:
        opt = model.opt
        if getattr(opt, "xl_positions_suffix", None):  # requests are no file's lines: the server keeps -xl_source
            opt = copy.copy(opt)
            opt.xl_positions_suffix = None
        built = make_transforms(opt, get_transforms_cls(names), model.translator.vocabs)
        pipe = TransformPipe.build_from([built[name] for name in names if name in built])
    _pipes[model] = (model.translator, pipe)
    return pipe


def transform_server_example(pipe, ex: dict, index: int) -> dict:
    """One server example (``{"src": {"src": text[, "feats"]}, "tgt": ...}``) through ``pipe``, as the
    inference corpus puts each line through it, back in the server's form."""
    from onmt.constants import CorpusName
    from onmt.inputters.text_utils import clean_example

    src = ex["src"]["src"].split(" ")
    tgt = ex["tgt"]["tgt"].split(" ") if ex.get("tgt") else None
    example = {"src": src, "tgt": tgt, "src_original": list(src), "tgt_original": None if tgt is None else list(tgt),
               "cid": CorpusName.INFER, "cid_line_number": index}
    if "feats" in ex["src"]:
        example["src_feats"] = [f.split(" ") for f in ex["src"]["feats"]]
    out = pipe.apply(example, is_train=False, corpus_name=CorpusName.INFER)
    if out is None:
        raise ValueError(f"the model's transforms dropped input {index + 1} ({ex['src']['src'][:60]!r})")
    return clean_example(out)


def server_textbatch_to_tensor(stock, vocabs, batch, device, is_train=False):
    """The server's ``textbatch_to_tensor``, after the serving model's transforms."""
    model = _serving.model
    if model is not None:
        error = _errors.get(model)
        if error:
            raise ValueError(error)
        pipe = server_transform_pipe(model)
        if pipe is not None:
            batch = [transform_server_example(pipe, ex, i) for i, ex in enumerate(batch)]
    return stock(vocabs, batch, device, is_train=is_train)


def _caused_by(err: BaseException, kind) -> bool:
    return in_chain(err, kind) is not None


def apply() -> None:
    import onmt.translate.translation_server as server
    from onmt.utils.parse import ArgumentParser

    from onmt_xl.opennmt.encoders.common import MissingXLPositionsError

    ServerModel = server.ServerModel
    stock_run, stock_parse_opt, stock_textbatch = ServerModel.run, ServerModel.parse_opt, server.textbatch_to_tensor

    def parse_opt(self, opt):
        import onmt.opts

        models = opt["models"]
        models = models if isinstance(models, (list, tuple)) else [models]
        opt["models"] = [os.path.join(self.model_root, model) for model in models]
        opt["src"] = "dummy_src"
        parser = ArgumentParser()
        onmt.opts.translate_opts(parser)
        parsed = parser.parse_args(server_argv(opt))
        ArgumentParser.validate_translate_opts(parsed)
        parsed.cuda = parsed.gpu > -1
        _errors.pop(self, None)
        if parsed.transforms:
            try:
                ArgumentParser._get_all_transform_translate(parsed)
                ArgumentParser._validate_transforms_opts(parsed)
            except (ValueError, OSError) as err:  # told to every request, not a server that fails to start
                _errors[self] = server_config_error(parsed, err)
        return parsed

    def run(self, inputs):
        previous, _serving.model = _serving.model, self
        try:
            return stock_run(self, inputs)
        except server.ServerModelError as err:
            transforms = getattr(self.opt, "transforms", None) or []
            if _caused_by(err, MissingXLPositionsError) and "xl_position" not in transforms:
                raise server.ServerModelError(
                    f"Error: model {self.model_id} has an encoder that reads cross-lingual positions, but the "
                    f"server runs no xl_position transform for it: {XL_SERVER_HINT}"
                ) from err
            raise
        finally:
            _serving.model = previous

    ServerModel.parse_opt = wrapper(stock_parse_opt, parse_opt)
    ServerModel.run = wrapper(stock_run, run)
    server.textbatch_to_tensor = functools.partial(server_textbatch_to_tensor, stock_textbatch)
