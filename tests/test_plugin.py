"""Registration through the import hook, idempotence, the XL batching channel and the torch fix."""

import argparse
import io
import subprocess
import sys

import pytest
import torch

import onmt_xl
from onmt_xl.core.errors import XLInputError
from tests.conftest import run_env
from tests.helpers import stock_cli


def test_fresh_onmt_train_help_lists_our_options():
    out = subprocess.run([stock_cli("onmt_train"), "-h"], capture_output=True, text=True, env=run_env(), check=True).stdout
    for option in ("-xl_heads", "-xl_inxl_fusion", "-xl_enc_max_relative_positions", "-xl_source", "-xl_preorderer", "-xl_noise",
                   "-xl_disan_fusion", "-xl_inxl_init", "-xl_encoder_free_pe", "-xl_reordering_loss_weight", "-xl_reordering_loss", "-xl_exgre_window"):
        assert option in out
    assert "Transform/XLPosition" in out and "Model-Encoder-XL" in out


def test_fresh_onmt_translate_help_lists_the_transform_options():
    out = subprocess.run([stock_cli("onmt_translate"), "-h"], capture_output=True, text=True, env=run_env(), check=True).stdout
    assert "-xl_preorderer" in out


def test_hook_registers_on_first_import_of_onmt_only():
    code = (
        "import sys\n"
        "assert 'torch' not in sys.modules and 'onmt' not in sys.modules, 'hook imported heavy modules'\n"
        "assert 'onmt_xl' not in sys.modules, 'onmt_xl resolved before sys.path is complete'\n"
        "from onmt.encoders import str2enc\n"
        "from onmt.transforms import AVAILABLE_TRANSFORMS\n"
        "print(sorted(k for k in str2enc if k.startswith('xl_')), 'xl_position' in AVAILABLE_TRANSFORMS)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env(), check=True).stdout
    assert out.strip() == ("['xl_additional_pe', 'xl_combination', 'xl_disan', 'xl_encoder_free', 'xl_exgre', 'xl_headxl', "
                           "'xl_inxl', 'xl_refsr', 'xl_relative', 'xl_reordering_embedding'] True")


def test_register_is_idempotent():
    onmt_xl.register()
    onmt_xl.register()
    import importlib

    from onmt_xl.opennmt import seams

    seams._registered = False  # a second full pass must not raise "duplicate"
    seams.register()
    from onmt.encoders import str2enc

    assert "xl_combination" in str2enc
    assert importlib.import_module("onmt.inputters.dynamic_iterator").tensorify._onmt_xl
    from onmt.trainer import Trainer
    from onmt.translate.translator import Translator

    for method in (Translator._run_encoder, Trainer._gradient_accumulation, Trainer.validate):
        assert method._onmt_xl and not getattr(method.__wrapped__, "_onmt_xl", False)  # wrapped once


def test_checkpoints_with_namespace_load_under_weights_only():
    onmt_xl.register()
    buf = io.BytesIO()
    torch.save({"opt": argparse.Namespace(encoder_type="xl_combination"), "w": torch.ones(2)}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, weights_only=True)
    assert ckpt["opt"].encoder_type == "xl_combination"


def _example(ids, pos=None, cid="train", line=0):
    ex = {"src": {"src": " ".join(map(str, ids)), "src_ids": ids}, "tgt": None, "cid": cid, "cid_line_number": line}
    if pos is not None:
        ex["xl_pos"] = pos
    return ex


def _vocabs():
    import pyonmttok

    v = pyonmttok.build_vocab_from_tokens(["a"], special_tokens=["<unk>", "<blank>", "<s>", "</s>"])
    return {"src": v, "tgt": v}


@pytest.mark.parametrize("left_pad", [False, True])
def test_tensorify_puts_xl_positions_beside_the_token_ids(left_pad):
    """``batch["src"]`` stays stock (token ids only); the positions are ``batch["xl_pos"]``, padded alike."""
    onmt_xl.register()
    from onmt.inputters import dynamic_iterator

    minibatch = [(_example([4, 5, 6], [2, 0, 1]), 0), (_example([7, 8], [1, 0]), 1)]
    batch = dynamic_iterator.tensorify(_vocabs(), minibatch, "cpu", left_pad=left_pad)
    without = [({k: v for k, v in ex.items() if k != "xl_pos"}, i) for ex, i in minibatch]
    stock = dynamic_iterator.tensorify(_vocabs(), without, "cpu", left_pad=left_pad)
    assert torch.equal(batch["src"], stock["src"]) and batch["src"].shape == (2, 3, 1)
    if left_pad:
        assert batch["src"][:, :, 0].tolist() == [[4, 5, 6], [1, 7, 8]]
        assert batch["xl_pos"].tolist() == [[2, 0, 1], [0, 1, 0]]
    else:
        assert batch["src"][:, :, 0].tolist() == [[4, 5, 6], [7, 8, 1]]
        assert batch["xl_pos"].tolist() == [[2, 0, 1], [1, 0, 0]]


def test_tensorify_without_xl_is_stock():
    onmt_xl.register()
    from onmt.inputters import dynamic_iterator

    batch = dynamic_iterator.tensorify(_vocabs(), [(_example([4, 5]), 0)], "cpu")
    assert batch["src"].shape == (1, 2, 1) and "xl_pos" not in batch


@pytest.mark.parametrize(
    "examples,message",
    [
        ([_example([4, 5], [0, 1]), _example([6], None, line=6)], "line 7: example has no XL positions"),
        ([_example([4, 5], [0, 1, 2], line=2)], "line 3: 3 XL positions for 2 source tokens"),
    ],
)
def test_tensorify_rejects_inconsistent_positions(examples, message):
    onmt_xl.register()
    from onmt.inputters import dynamic_iterator

    with pytest.raises(XLInputError, match=message):
        dynamic_iterator.tensorify(_vocabs(), [(ex, i) for i, ex in enumerate(examples)], "cpu")


@pytest.mark.parametrize(
    "module",
    ["onmt_xl.opennmt.encoders.xl_transformer", "onmt_xl.opennmt.encoders.disan", "onmt_xl.opennmt.encoders.reordering_embedding",
     "onmt_xl.opennmt.encoders.explicit_reordering", "onmt_xl.opennmt.encoders.encoder_free", "onmt_xl.opennmt.encoders.families",
     "onmt_xl.opennmt.encoders.options", "onmt_xl.core.modules.headxl",
     "onmt_xl.opennmt.transforms.xl_position", "onmt_xl.opennmt.seams", "onmt_xl.opennmt.seams.server"],
)
def test_any_module_can_be_imported_first(module):
    """Importing one of ours first triggers registration mid-import; it must not meet a half-imported module."""
    code = (
        f"import {module}\n"
        "import onmt\n"
        "from onmt.encoders import str2enc\n"
        "from onmt.transforms import AVAILABLE_TRANSFORMS\n"
        "assert {'xl_combination', 'xl_disan', 'xl_encoder_free'} <= set(str2enc), sorted(str2enc)\n"
        "assert {'xl_position', 'xl_prereorder'} <= set(AVAILABLE_TRANSFORMS)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr[-2000:]


# --- Stock code reads ``batch["src"]`` as token ids ---------------------------------------

SEP_VOCAB_TGT = [f"t{i}" for i in range(20)]


def _xl_vocabs():
    """Source and target vocabularies; the target one holds OpenNMT's separator ``｟newline｠``, which arms the
    translator's re-translation check (it compares ``batch["src"]`` with that id)."""
    import pyonmttok
    from onmt.constants import DefaultTokens

    from tests.test_encoders import SPECIALS

    src = pyonmttok.build_vocab_from_tokens([f"s{i}" for i in range(20)], special_tokens=SPECIALS)
    tgt = pyonmttok.build_vocab_from_tokens(SEP_VOCAB_TGT, special_tokens=SPECIALS + [DefaultTokens.SEP])
    return {"src": src, "tgt": tgt, "data_task": "seq2seq", "decoder_start_token": DefaultTokens.BOS}


def _xl_model(encoder_type="xl_inxl", seed=0, **overrides):
    from onmt.model_builder import build_base_model

    from tests.test_encoders import model_opt

    opt = model_opt(encoder_type=encoder_type, **overrides)
    opt.data, opt.learning_rate = {}, 1e-4
    torch.manual_seed(seed)
    model = build_base_model(opt, _xl_vocabs())
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return model.eval(), opt


def _translator(model, model_opt, *args):
    from onmt import opts
    from onmt.translate import GNMTGlobalScorer, Translator
    from onmt.utils.parse import ArgumentParser

    parser = ArgumentParser()
    opts.translate_opts(parser)
    opt = parser.parse_args(["-model", "unused", "-src", "unused", *args])
    return Translator.from_opt(model, _xl_vocabs(), opt, model_opt, global_scorer=GNMTGlobalScorer.from_opt(opt),
                               out_file=io.StringIO(), report_score=False)


def _xl_batch(rows, tgt=None):
    """A batch as OpenNMT's iterator builds it: ``rows`` = [(source ids, XL positions or None)]."""
    from onmt.inputters import dynamic_iterator

    minibatch = []
    for i, (ids, pos) in enumerate(rows):
        ex = _example(ids, pos, cid="infer", line=i)
        if tgt is not None:
            ex["tgt"] = {"tgt": "t", "tgt_ids": tgt[i]}
        minibatch.append((ex, i))
    return dynamic_iterator.tensorify(_xl_vocabs(), minibatch, "cpu")


def test_an_xl_index_equal_to_the_separator_id_translates_as_any_other():
    """The issue's case: OpenNMT compares ``batch["src"]`` with the separator id to decide whether to
    re-translate; an XL index equal to that id must not trigger it. The generator here always says
    ``｟newline｠``, so the output is up to the decoding logic alone and must not depend on the index."""
    onmt_xl.register()
    from onmt.constants import DefaultTokens

    model, opt = _xl_model()
    sep = _xl_vocabs()["tgt"][DefaultTokens.SEP]
    assert sep == 4
    with torch.no_grad():
        model.generator.weight.zero_()
        model.generator.bias.zero_()
        model.generator.bias[sep] = 5.0
    translator = _translator(model, opt)
    ids = [5, 6, 7, 8, 9, 10]
    with_sep = translator._translate([(_xl_batch([(ids, [5, 4, 3, 2, 1, 0])]), 0)])
    changed = translator._translate([(_xl_batch([(ids, [5, 6, 3, 2, 1, 0])]), 0)])
    assert with_sep == changed
    assert with_sep[1] == [[" ".join([DefaultTokens.SEP] * int(len(ids) * 1.25 + 5))]]


class _EncoderSpy:
    """Records what the model's encoder is called with (``src``) and returns (``enc_out``)."""

    def __init__(self, model):
        self.calls = []
        self.handle = model.encoder.register_forward_hook(
            lambda module, args, out: self.calls.append((args[0].clone(), args[1].clone(), out[0].detach().clone()))
        )


def _direct_encoding(model, src, src_len, pos_xl):
    """The encoder called directly with the positions as an extra column, outside OpenNMT."""
    with torch.no_grad():
        return model.encoder(torch.cat((src, pos_xl[:, :, None]), dim=2), src_len)[0]


XL_SYSTEMS = [("xl_inxl", {}), ("xl_combination", {"xl_heads": 2}), ("xl_encoder_free", {"xl_encoder_free_pe": "inxl"}),
              ("xl_exgre", {})]
SPECIAL_POSITIONS = [[0, 1, 4, 3, 2, 5], [3, 1, 0, 2, 0, 0]]  # as ids: 4 separator, 1 pad, 0 unk, 2/3 bos/eos
# (source token ids in these tests are >= 5: OpenNMT compares them with the target vocabulary's separator id)


@pytest.mark.parametrize("encoder_type,overrides", XL_SYSTEMS, ids=[s for s, _ in XL_SYSTEMS])
def test_translation_reads_token_ids_and_the_encoder_gets_the_positions(encoder_type, overrides):
    """Every stock read of ``batch["src"]`` while translating (the translator, beam search, gold scoring,
    the TranslationBuilder, the decoder state) sees ``(batch, src_len, 1)`` token ids, and the encoder
    encodes exactly the batch's XL positions."""
    onmt_xl.register()
    from onmt.translate import TranslationBuilder

    model, opt = _xl_model(encoder_type, **overrides)
    translator = _translator(model, opt, "-beam_size", "2", "-n_best", "2")
    batch = _xl_batch([([5, 6, 7, 8, 9, 10], SPECIAL_POSITIONS[0]), ([11, 12, 13, 14], SPECIAL_POSITIONS[1][:4])],
                      tgt=[[2, 10, 11, 3], [2, 12, 3]])
    seen = []
    spy = _EncoderSpy(model)
    stock_from_batch, stock_init_state = TranslationBuilder.from_batch, model.decoder.init_state
    try:
        TranslationBuilder.from_batch = lambda self, tb: seen.append(tb["batch"]["src"].shape) or stock_from_batch(self, tb)
        model.decoder.init_state = lambda src, *a: seen.append(src.shape) or stock_init_state(src, *a)
        scores, preds = translator._translate([(batch, 0)])
    finally:
        TranslationBuilder.from_batch = stock_from_batch
        del model.decoder.init_state
        spy.handle.remove()
    assert len(preds) == 2 and all(len(p) == 2 for p in preds)
    assert seen and all(shape[2] == 1 for shape in seen), seen
    assert len(spy.calls) == 1
    src, src_len, enc_out = spy.calls[0]
    assert src.shape == (2, 6, 1)
    assert torch.allclose(enc_out, _direct_encoding(model, src, src_len, batch["xl_pos"]), atol=1e-6)


def _reordering_loss_by_hand(kind, b, r, weight, window, d=16):
    """ExGRE's loss ``λ Σ_j ℓ_j`` over one unpadded sentence of ``J`` words: ``position``: ``ℓ_j = ((b_j − r_j) / (J − 1))²``;
    ``soft``: ``ℓ_j = 1 − cos(Σ_s w_js PE_s, PE_r_j)``, ``w_j`` the softmax over ``s < J`` of ``−(s − b_j)² / (2σ)``,
    ``σ = D/2``, PE by Eq. 1."""
    import math

    def pe(p):
        return [f(p * 10000 ** (-2 * i / d)) for i in range(d // 2) for f in (math.sin, math.cos)]

    total, J = 0.0, len(b)
    for bj, rj in zip(b, r):
        if kind == "position":
            total += ((bj - rj) / max(J - 1, 1)) ** 2
            continue
        assert kind == "soft", kind
        e = [math.exp(-((s - bj) ** 2) / window) for s in range(J)]
        soft = [sum(e[s] * pe(s)[k] for s in range(J)) / sum(e) for k in range(d)]
        re = pe(rj)
        total += 1 - sum(u * v for u, v in zip(soft, re)) / math.sqrt(sum(u * u for u in soft) * sum(v * v for v in re))
    return weight * total


@pytest.mark.parametrize("encoder_type,overrides", XL_SYSTEMS, ids=[s for s, _ in XL_SYSTEMS])
def test_training_and_validation_read_token_ids_and_the_encoder_gets_the_positions(encoder_type, overrides):
    """``Trainer`` (training steps with gradient accumulation, validation) and ``LossCompute`` see token ids
    only; the encoder encodes each batch's own XL positions (ExGRE: ``r_j`` gives its reordering loss)."""
    onmt_xl.register()
    from onmt.trainer import build_trainer
    from onmt.utils import Statistics
    from onmt.utils.loss import LossCompute
    from onmt.utils.optimizers import Optimizer

    model, opt = _xl_model(encoder_type, **overrides)
    opt.learning_rate = 0.0  # the encodings recorded during training are compared with the model afterwards
    model.train()
    trainer = build_trainer(opt, -1, model, _xl_vocabs(), Optimizer.from_opt(model, opt))
    batches = [
        _xl_batch([([5, 6, 7, 8, 9, 10], SPECIAL_POSITIONS[0]), ([11, 12, 13], [2, 1, 0])], tgt=[[2, 10, 11, 3], [2, 12, 3]]),
        _xl_batch([([7, 8, 9, 10], [3, 4, 1, 0])], tgt=[[2, 13, 14, 15, 3]]),
    ]
    seen = []
    spy = _EncoderSpy(model)
    stock_loss = LossCompute.forward
    try:
        LossCompute.forward = lambda self, batch, *a, **k: seen.append(batch["src"].shape) or stock_loss(self, batch, *a, **k)
        trainer._gradient_accumulation(batches, 6, Statistics(), Statistics())
        if encoder_type == "xl_exgre":  # the last step's loss, by hand from its predicted positions and the batch's r_j
            assert model.encoder.reordering_loss.item() == pytest.approx(
                _reordering_loss_by_hand(opt.xl_reordering_loss, model.encoder.predicted_positions[0].tolist(),
                                         batches[1]["xl_pos"][0].tolist(), opt.xl_reordering_loss_weight, opt.xl_exgre_window),
                rel=1e-5)
        stats = trainer.validate(iter([(b, 0) for b in batches]))
    finally:
        LossCompute.forward = stock_loss
        spy.handle.remove()
    assert stats.n_words == 3 + 2 + 4  # the target tokens after BOS, EOS included, of the two batches
    assert len(seen) == 4 and all(shape[2] == 1 for shape in seen), seen
    assert len(spy.calls) == 4
    model.eval()
    for (src, src_len, enc_out), batch in zip(spy.calls, batches + batches):
        assert src.shape[2] == 1
        assert torch.allclose(enc_out, _direct_encoding(model, src, src_len, batch["xl_pos"]), atol=1e-5)


def test_a_translation_batch_without_positions_still_fails_clearly():
    onmt_xl.register()
    from onmt_xl.opennmt.encoders.common import MissingXLPositionsError

    model, opt = _xl_model()
    with pytest.raises(MissingXLPositionsError, match="xl_position transform"):
        _translator(model, opt)._translate([(_xl_batch([([5, 6, 7], None)]), 0)])


def test_a_stock_encoder_ignores_the_positions():
    """``xl_position`` on a stock Transformer: its ``batch["src"]`` is what it would be without the transform."""
    onmt_xl.register()
    model, opt = _xl_model("transformer")
    translator = _translator(model, opt)
    rows = [([5, 6, 7, 8], [3, 4, 1, 0]), ([9, 10, 11], [1, 0, 2])]
    with_pos = translator._translate([(_xl_batch(rows), 0)])
    assert with_pos == translator._translate([(_xl_batch([(ids, None) for ids, _ in rows]), 0)])


def test_fed_positions_must_match_the_source_and_are_not_left_behind():
    onmt_xl.register()
    from onmt.utils import Statistics

    from onmt_xl.opennmt.encoders import common

    model, _ = _xl_model()
    src, src_len = torch.tensor([[[5], [6], [7]]]), torch.tensor([3])
    with common.feeding_xl_positions(torch.tensor([[0, 1]])):
        with pytest.raises(ValueError, match=r"XL positions of shape \(1, 2\) for a source batch of shape \(1, 3\)"):
            model.encoder(src, src_len)
    assert common.fed_xl_positions() is None

    from onmt.trainer import build_trainer
    from onmt.utils.optimizers import Optimizer

    model, opt = _xl_model()
    trainer = build_trainer(opt, -1, model, _xl_vocabs(), Optimizer.from_opt(model, opt))
    broken = _xl_batch([([5, 6, 7], [2, 1, 0])], tgt=[[2, 10, 3]])
    broken["tgt"] = None  # the stock loop fails on this batch, with its positions fed
    with pytest.raises(AttributeError):
        trainer._gradient_accumulation([broken], 1, Statistics(), Statistics())
    assert common.fed_xl_positions() is None
