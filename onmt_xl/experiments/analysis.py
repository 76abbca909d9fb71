"""Analyses that read a model directly: the Sim metric of ExGRE/ReFSR (Chen et al. 2020, Eq. 12); model loading and
building."""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple


class SimScore(NamedTuple):
    """Eq. 12 over ``words`` source words: ``sim`` of the predicted reordering embeddings ``pr_j^N`` and, as
    Chen et al. 2020 Fig. 5's "PE" reference, ``pe_sim`` of the original positions' sinusoids ``PE_j``."""

    sim: float
    words: int
    pe_sim: float


def build_model(system: str, preset: str = "demo", overrides: Optional[Dict[str, Any]] = None, vocab_size: int = 32000,
                seed: int = 0):
    """An untrained model of ``system`` (:data:`onmt_xl.experiments.systems.SYSTEMS`) at ``preset`` size, built by
    OpenNMT's model builder over synthetic vocabularies of ``vocab_size`` tokens per side (for parameter counts and
    step benchmarks), its weights initialised as ``onmt_train`` initialises a new model (``build_base_model``
    leaves OpenNMT's ``skip_init`` layers as uninitialised memory, NaNs and denormals included)."""
    import pyonmttok
    import torch

    import onmt_xl
    from onmt import opts
    from onmt.constants import DefaultTokens, ModelTask
    from onmt.model_builder import build_base_model
    from onmt.utils.parse import ArgumentParser

    from onmt_xl.experiments.configs import config

    onmt_xl.register()
    parser = ArgumentParser()
    opts.train_opts(parser)
    opt = parser.parse_args(["-data", "{}", "-src_vocab", "unused"])
    for k, v in config(system, overrides=overrides, preset=preset).items():
        if k != "data":
            setattr(opt, k, v)
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    specials = [DefaultTokens.UNK, DefaultTokens.PAD, DefaultTokens.BOS, DefaultTokens.EOS]
    v = pyonmttok.build_vocab_from_tokens([f"w{i}" for i in range(vocab_size - len(specials))], special_tokens=specials)
    torch.manual_seed(seed)
    model = build_base_model(opt, {"src": v, "tgt": v, "data_task": ModelTask.SEQ2SEQ,
                                   "decoder_start_token": DefaultTokens.BOS})
    initialise_as_onmt_train(model, opt)
    return model


def initialise_as_onmt_train(model, opt) -> None:
    """The initialisation of ``onmt.model_builder.build_model`` for a new model (OpenNMT-py 3.5.1): uniform in
    ``±param_init``, or Glorot-uniform weight matrices and zero biases with ``param_init_glorot``; then, as the
    ``init`` seam does, our modules' starting points (:func:`onmt_xl.core.modules.starts.reset_starts`)."""
    import torch
    from torch.nn.init import uniform_, xavier_uniform_, zeros_

    from onmt_xl.core.modules.starts import reset_starts

    with torch.no_grad():
        if opt.param_init != 0.0:
            for param in model.parameters():
                uniform_(param, -opt.param_init, opt.param_init)
        elif opt.param_init_glorot:
            for module in model.modules():
                for name, param in module.named_parameters(recurse=False):
                    if name == "weight" and param.dim() > 1:
                        xavier_uniform_(param)
                    elif name == "bias":
                        zeros_(param)
    reset_starts(model)


def import_onmt() -> None:
    """Register onmt_xl and import the OpenNMT modules :func:`load_model` uses. OpenNMT's modules import each
    other in cycles, so its first import must not run in several threads at once: a runner of parallel jobs
    calls this in its main thread before the job threads start."""
    import onmt_xl

    onmt_xl.register()
    import onmt.inputters.inputter  # noqa: F401
    import onmt.model_builder  # noqa: F401
    import onmt.models.model_saver  # noqa: F401
    import onmt.utils.parse  # noqa: F401


def load_model(path: str):
    """``(model, vocabs, model_opt)`` of an OpenNMT checkpoint, in eval mode on the CPU (any onmt_xl system)."""
    import torch

    import_onmt()
    from onmt.inputters.inputter import dict_to_vocabs
    from onmt.model_builder import build_base_model
    from onmt.models.model_saver import load_checkpoint
    from onmt.utils.parse import ArgumentParser

    ckpt = load_checkpoint(path)
    model_opt = ArgumentParser.ckpt_model_opts(ckpt["opt"])
    ArgumentParser.update_model_opts(model_opt)
    ArgumentParser.validate_model_opts(model_opt)
    vocabs = dict_to_vocabs(ckpt["vocab"])
    model = build_base_model(model_opt, vocabs)
    model.load_state_dict(ckpt, precision=torch.float32, device=torch.device("cpu"), strict=True)
    return model.eval(), vocabs, model_opt


def sim_metric(model_path: str, src: Sequence[Sequence[str]], links: Sequence[Sequence[Tuple[int, int]]],
               batch_size: int = 64) -> SimScore:
    """Eq. 12: mean over all words of ``cos(pr_j^N, re_j)``, ``re_j`` the sinusoid of the BTG-oracle position
    ``r_j`` from ``links``; and the same mean with ``PE_j`` (the word's own position) in place of ``pr_j^N``,
    the reference Chen et al. 2020 Fig. 5 compares against. The model must be an ``exgre`` or ``refsr`` system.
    """
    import torch
    from torch.nn.utils.rnn import pad_sequence

    from onmt_xl.core.modules.explicit_reordering import reordering_similarity
    from onmt_xl.core.positions import sinusoid
    from onmt_xl.core.reorder.oracle import btg_oracle

    model, vocabs, model_opt = load_model(model_path)
    if model_opt.encoder_type not in ("xl_exgre", "xl_refsr"):
        raise ValueError(f"{model_path}: the Sim metric needs an xl_exgre or xl_refsr model, not "
                         f"{model_opt.encoder_type}")
    total, pe_total, words = 0.0, 0.0, 0
    d_model, kind = model_opt.hidden_size, model_opt.position_encoding_type
    pairs = [(s, ls) for s, ls in zip(src, links) if s]
    with torch.no_grad():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i : i + batch_size]
            ids = [torch.tensor(vocabs["src"](list(s))) for s, _ in chunk]
            pos = [torch.tensor(btg_oracle(len(s), ls).pos_xl) for s, ls in chunk]
            batch = torch.stack((pad_sequence(ids, batch_first=True, padding_value=vocabs["src"]["<blank>"]),
                                 pad_sequence(pos, batch_first=True)), dim=2)
            lengths = torch.tensor([len(s) for s, _ in chunk])
            model.encoder(batch, lengths)
            sim, n = model.encoder.similarity
            valid = torch.arange(batch.size(1))[None, :] < lengths[:, None]
            pe = sinusoid(torch.arange(batch.size(1)), d_model, kind).expand(len(chunk), -1, -1)
            pe_sim = reordering_similarity(pe, batch[:, :, 1], valid, kind)
            total, pe_total, words = total + float(sim), pe_total + float(pe_sim), words + int(n)
    return SimScore(total / max(words, 1), words, pe_total / max(words, 1))


def run_sim(args) -> int:
    from onmt_xl.core.align.pharaoh import read_pharaoh

    import os

    from onmt_xl.core.errors import XLUsageError, check_text_files

    if not os.path.isfile(args.model):
        raise XLUsageError(args.model, None, "model file not found; check the path")
    check_text_files([args.src, args.align])
    with open(args.src, encoding="utf-8") as f:
        src: List[List[str]] = [line.split() for line in f]
    links = read_pharaoh(args.align, [len(s) for s in src])
    score = sim_metric(args.model, src, links)
    print(f"Sim (Chen et al. 2020, Eq. 12) over {score.words} words: {score.sim:.4f} "
          f"(original positions' PE: {score.pe_sim:.4f})")
    return 0


def add_subcommands(sub) -> None:
    p = sub.add_parser("sim", help="Sim metric (Eq. 12) of an exgre/refsr model on a held-out set with alignments",
                       description="Sim (Chen et al. 2020, Eq. 12): how close the reordering embeddings of a trained "
                       "exgre or refsr model are to the positions the alignments give, over the words of --src; "
                       "printed next to the same measure for the original positions' sinusoids.")
    p.add_argument("--model", required=True, help="an exgre or refsr checkpoint (.pt from onmt_train)")
    p.add_argument("--src", required=True, help="tokenized source, as the model reads it")
    p.add_argument("--align", required=True, help="Pharaoh links of --src with its reference (test-side information)")
    p.set_defaults(func=run_sim)
