"""The Eole adapter's baselines (issue 38): for each system, an OpenNMT-py encoder built by OpenNMT's own
``build_base_model`` and the Eole encoder loaded with its weights (``onmt_xl.eole.weights``) give the same output on
a batch, and the system-specific part changes that output (the check is not vacuous). The reordering-embedding
decoder (``dec_re``, ``both_re``) likewise, teacher-forced and step by step with Eole's cache.

Skipped where Eole is not installed (see tests/test_eole.py and reports/EOLE.md).
"""

import pytest

pytest.importorskip("eole", reason="Eole is not installed (pip install eole==0.6.4 in a venv; see tests/test_eole.py)")
pytest.importorskip("onmt", reason="the equivalence checks build the OpenNMT-py encoder too")

import torch  # noqa: E402
from eole.encoders.transformer import TransformerEncoder  # noqa: E402
from eole.modules.embeddings import Embeddings  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from onmt_xl.eole.baseline_config import (  # noqa: E402
    DiSANEncoderConfig,
    EncoderFreeConfig,
    ExplicitReorderingEncoderConfig,
    RelativeEncoderConfig,
    ReorderingEmbeddingEncoderConfig,
)
from onmt_xl.eole.baselines import ENCODER_CLASSES  # noqa: E402
from onmt_xl.eole.config import LOOKUP_SRC_EMB  # noqa: E402
from onmt_xl.eole.encoders import XLSourceEmbeddings  # noqa: E402
from onmt_xl.eole.weights import onmt_encoder_to_eole  # noqa: E402
from tests.test_eole import PAD, SCRAMBLED, SIZES  # noqa: E402
from tests.test_encoders import REVERSED, batch, build  # noqa: E402

CONFIGS = {
    "xl_relative": RelativeEncoderConfig,
    "xl_disan": DiSANEncoderConfig,
    "xl_reordering_embedding": ReorderingEmbeddingEncoderConfig,
    "xl_additional_pe": ReorderingEmbeddingEncoderConfig,
    "xl_encoder_free": EncoderFreeConfig,
    "xl_exgre": ExplicitReorderingEncoderConfig,
    "xl_refsr": ExplicitReorderingEncoderConfig,
}
#: systems reading the batch's positions (XL positions or ExGRE/ReFSR's r_j)
READS_POSITIONS = {"xl_exgre", "xl_refsr"}


def eole_encoder(encoder_type, **options):
    """The Eole encoder and its ``src_emb`` (look-up only where the system adds its own positions), sized like
    tests.test_encoders.build."""
    sizes = {k: v for k, v in SIZES.items() if k in CONFIGS[encoder_type].model_fields}
    cfg = CONFIGS[encoder_type](encoder_type=encoder_type, **sizes, **options)
    encoder = ENCODER_CLASSES[encoder_type](cfg).eval()
    emb = Embeddings(word_vec_size=16, position_encoding_type="SinusoidalInterleaved", dropout=0.0,
                     word_padding_idx=PAD, word_vocab_size=24)
    if encoder_type in LOOKUP_SRC_EMB:
        XLSourceEmbeddings.adopt(emb)
    return encoder, emb.eval()


def tokens_and_mask():
    tokens = batch()[0][:, :, 0]
    return tokens, tokens.eq(PAD).unsqueeze(1)  # as EncoderDecoderModel.forward makes the mask


def run_eole(encoder, emb, pos=None):
    tokens, pad_mask = tokens_and_mask()
    with torch.no_grad():
        out, _ = encoder(emb(tokens), pad_mask=pad_mask, xl_pos=pos)
    return out


def both(encoder_type, onmt_options, eole_options, pos=None):
    """(OpenNMT-py output, Eole output, the Eole encoder and src_emb) on the same weights and batch."""
    onmt_model = build(encoder_type, **onmt_options)
    with torch.no_grad():
        want, _, _ = onmt_model.encoder(*(batch(pos) if pos is not None else batch()))
    encoder, emb = eole_encoder(encoder_type, **eole_options)
    enc_state, emb_state = onmt_encoder_to_eole(onmt_model.encoder.state_dict())
    encoder.load_state_dict(enc_state, strict=True)  # every parameter and buffer of the Eole encoder is set
    missing, unexpected = emb.load_state_dict(emb_state, strict=False)
    assert unexpected == [] and missing == ["pe.pe"], (missing, unexpected)  # Eole's own (equal) PE table
    return want, run_eole(encoder, emb, pos), encoder, emb, onmt_model.encoder


def stock_eole_output(encoder, emb):
    """Eole's stock Transformer encoder with the system's layer weights (its own parameters left out), on the
    stock ``src_emb`` (``X·√d + PE_abs``): what the output would be without the system-specific part."""
    from eole.config.models import TransformerEncoderConfig

    stock = TransformerEncoder(TransformerEncoderConfig(**SIZES)).eval()
    state = {k: v for k, v in encoder.state_dict().items() if k in stock.state_dict()}
    stock.load_state_dict(state, strict=True)
    stock_emb = Embeddings(word_vec_size=16, position_encoding_type="SinusoidalInterleaved", dropout=0.0,
                           word_padding_idx=PAD, word_vocab_size=24)
    stock_emb.load_state_dict(emb.state_dict())
    tokens, pad_mask = tokens_and_mask()
    with torch.no_grad():
        return stock(stock_emb(tokens), pad_mask=pad_mask)[0]


CASES = [
    ("xl_relative", dict(xl_enc_max_relative_positions=2), dict(xl_enc_max_relative_positions=2), None),
    ("xl_relative", dict(xl_enc_max_relative_positions=16), dict(xl_enc_max_relative_positions=16), None),
    ("xl_disan", dict(xl_disan_fusion="gate"), dict(xl_disan_fusion="gate"), None),
    ("xl_disan", dict(xl_disan_fusion="none"), dict(xl_disan_fusion="none"), None),
    ("xl_reordering_embedding", {}, {}, None),
    ("xl_additional_pe", {}, {}, None),
    ("xl_exgre", {}, {}, SCRAMBLED),
    ("xl_exgre", dict(xl_reordering_loss="soft", xl_exgre_window=1.5), dict(xl_reordering_loss="soft",
                                                                             xl_exgre_window=1.5), REVERSED),
    ("xl_refsr", {}, {}, REVERSED),
    ("xl_refsr", {}, {}, None),  # translation: no r_j, no loss
]


@pytest.mark.parametrize("encoder_type,onmt_options,eole_options,pos", CASES)
def test_same_weights_same_encoder_output(encoder_type, onmt_options, eole_options, pos):
    want, got, encoder, emb, onmt_encoder = both(encoder_type, onmt_options, eole_options, pos)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    # not vacuous: without the system-specific part (Eole's stock encoder on the same layer weights) it differs
    assert (stock_eole_output(encoder, emb) - want).abs().max() > 1e-3
    if encoder_type in READS_POSITIONS:
        assert (encoder.reordering_loss is None) == (pos is None)
        if pos is not None:  # the reordering loss (Eq. 9) and the Sim metric (Eq. 12) agree too
            torch.testing.assert_close(encoder.reordering_loss, onmt_encoder.reordering_loss, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(encoder.similarity[0], onmt_encoder.similarity[0], rtol=1e-5, atol=1e-6)
            assert encoder.reordering_loss > 0


def test_relative_attention_keeps_shaws_scale():
    """Eole 0.6.4's own relative attention adds q·a^K unscaled; with Shaw's (and OpenNMT-py's) 1/√d_head on it, the
    output is OpenNMT-py's. Without :func:`shaw_scaled` the two frameworks differ on the same weights."""
    want, got, encoder, emb, _ = both("xl_relative", dict(xl_enc_max_relative_positions=2),
                                      dict(xl_enc_max_relative_positions=2))
    relative = encoder.transformer_layers[0].self_attn
    cfg = RelativeEncoderConfig(**SIZES, xl_enc_max_relative_positions=2)
    plain = TransformerEncoder(cfg.model_copy(update={"position_encoding_type": "Relative", "n_positions": 2})).eval()
    plain.load_state_dict(encoder.state_dict())
    assert relative.scale == 1.0 and plain.transformer_layers[0].self_attn.scale is None
    tokens, pad_mask = tokens_and_mask()
    with torch.no_grad():
        eole_own, _ = plain(emb(tokens) * 4.0, pad_mask=pad_mask)  # √16, no dropout
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    assert (eole_own - want).abs().max() > 1e-3


@pytest.mark.parametrize("pe,k", [("absolute", 16), ("inxl", 16), ("relative", 2), ("relative", 16)])
def test_encoder_free_same_weights_same_output(pe, k):
    """``xl_encoder_free``: the source embeddings (+ PE) themselves; for ``relative``, Shaw et al.'s Eq. 3-4 once over
    them (clipping distance k; the table ``a`` loaded under its OpenNMT-py name). Non-vacuous: ``none`` differs; the
    XL positions (``inxl``) and the relative table (``relative``) matter."""
    options = dict(xl_encoder_free_pe=pe, xl_inxl_fusion="block", xl_enc_max_relative_positions=k)
    want, got, encoder, emb, _ = both("xl_encoder_free", options, options, REVERSED if pe == "inxl" else None)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    bare, _ = eole_encoder("xl_encoder_free", xl_encoder_free_pe="none")
    assert (run_eole(bare, emb) - want).abs().max() > 1e-3
    if pe == "inxl":  # the XL positions matter
        monotone = torch.tensor([[0, 1, 2, 3, 4], [0, 1, 2, 0, 0]])
        assert (run_eole(encoder, emb, monotone) - want).abs().max() > 1e-3
    if pe == "relative":  # the relative table a matters, and the padded keys are masked
        assert encoder.relative.relative_positions_embeddings.weight.shape == (2 * k + 1, 16 // 4)
        with torch.no_grad():
            encoder.relative.relative_positions_embeddings.weight.zero_()
        assert (run_eole(encoder, emb) - want).abs().max() > 1e-3


def test_encoder_free_inxl_without_positions_says_how_to_fix_it():
    from onmt_xl.core.channel import MissingXLPositionsError

    encoder, emb = eole_encoder("xl_encoder_free", xl_encoder_free_pe="inxl")
    with pytest.raises(MissingXLPositionsError, match="xl_position"):
        run_eole(encoder, emb)


def test_fused_inference_projections_keep_the_output():
    """``eole predict`` fuses K, V, Q (``_fuse_KVQ``): the relative encoder stays unfused (its query hook), the
    others fuse, and the output does not move."""
    for encoder_type, options in (("xl_relative", dict(xl_enc_max_relative_positions=2)), ("xl_disan", {}),
                                  ("xl_reordering_embedding", {})):
        want, got, encoder, emb, _ = both(encoder_type, options, options)
        for layer in encoder.transformer_layers:
            layer.self_attn._fuse_KVQ()
        assert encoder.transformer_layers[0].self_attn.fused_kvq == (encoder_type != "xl_relative")
        torch.testing.assert_close(run_eole(encoder, emb), want, rtol=0, atol=1e-5)


def test_eoles_initialisation_keeps_our_starting_points():
    """Eole's ``init_weights`` draws every parameter; the ``model`` seam puts DiSAN's gate back at F = 0.95."""
    from types import SimpleNamespace

    import onmt_xl.eole

    onmt_xl.eole.register()
    from eole.models.model import BaseModel

    encoder, _ = eole_encoder("xl_disan")
    holder = torch.nn.Module()
    holder.encoder = encoder
    BaseModel.init_weights(holder, SimpleNamespace(param_init_method="uniform", param_init=0.1))
    gate = encoder.gates[0]
    assert torch.all(gate.w_s == 0) and torch.allclose(torch.sigmoid(gate.b), torch.tensor(0.95))
    assert encoder.transformer_layers[0].self_attn.linear_query.weight.abs().max() <= 0.1  # drawn by Eole


@pytest.mark.parametrize("config,options,message", [
    (RelativeEncoderConfig, dict(xl_enc_max_relative_positions=0), "greater than 0"),
    (DiSANEncoderConfig, dict(xl_disan_fusion="gated"), "'gate' or 'none'"),
    (DiSANEncoderConfig, dict(parallel_residual=True), "sequential pre-norm"),
    (ReorderingEmbeddingEncoderConfig, dict(position_encoding_type="Rotary"), "sinusoidal"),
    (ExplicitReorderingEncoderConfig, dict(xl_reordering_loss="cosine"), "'position', 'soft' or 'literal'"),
    (ExplicitReorderingEncoderConfig, dict(xl_exgre_window=0), "greater than 0"),
    (EncoderFreeConfig, dict(xl_encoder_free_pe="learned"), "'none', 'absolute', 'relative' or 'inxl'"),
    (EncoderFreeConfig, dict(xl_encoder_free_pe="relative", xl_enc_max_relative_positions=0), "greater than 0"),
    (EncoderFreeConfig, dict(xl_encoder_free_pe="relative", hidden_size=18, heads=4), "multiple"),
])
def test_config_checks(config, options, message):
    with pytest.raises(ValueError, match=message):
        config(**options)


def model_config(encoder, architecture="custom", embeddings=None, decoder=None):
    import onmt_xl.eole

    onmt_xl.eole.register()
    import eole.config.models as models

    return models.build_model_config({
        "architecture": architecture, "hidden_size": 16, "heads": 2, "layers": 1, "transformer_ff": 32,
        "embeddings": embeddings or {"word_vec_size": 16}, "encoder": encoder,
        "decoder": decoder or {"decoder_type": "transformer"}})


def test_eoles_model_config_takes_the_baselines_and_checks_them():
    for encoder_type in ENCODER_CLASSES:
        cfg = model_config({"encoder_type": encoder_type})
        assert type(cfg.encoder) is CONFIGS[encoder_type] and cfg.encoder.encoder_type == encoder_type
    with pytest.raises(ValidationError, match="xl_disan_fusion"):
        model_config({"encoder_type": "xl_disan", "xl_disan_fusion": "gated"})
    with pytest.raises(ValidationError, match="xl_no_such_encoder"):
        model_config({"encoder_type": "xl_no_such_encoder"})
    with pytest.raises(ValueError, match="architecture to 'custom'"):
        model_config({"encoder_type": "xl_disan"}, architecture="transformer")
    # the embeddings' PE kind reaches the encoders that add PE themselves, as Eole does for its own transformer
    cfg = model_config({"encoder_type": "xl_additional_pe"}, embeddings={"word_vec_size": 16,
                                                                          "position_encoding_type": "SinusoidalConcat"})
    assert cfg.encoder.position_encoding_type == "SinusoidalConcat"
    with pytest.raises(ValidationError, match="sinusoidal"):
        model_config({"encoder_type": "xl_exgre"}, embeddings={"word_vec_size": 16, "position_encoding_type": "Rotary",
                                                                "n_positions": 8})


def test_register_adds_the_baselines():
    from eole.encoders import str2enc

    import onmt_xl.eole

    onmt_xl.eole.register()
    assert {name: str2enc[name] for name in ENCODER_CLASSES} == ENCODER_CLASSES
    assert str2enc["transformer"] is TransformerEncoder


def test_the_reordering_loss_joins_the_training_loss():
    from types import SimpleNamespace

    from onmt_xl.eole.seams import add_encoder_loss

    encoder = SimpleNamespace(reordering_loss=torch.tensor(6.0))
    assert add_encoder_loss(SimpleNamespace(encoder=encoder), torch.tensor(1.0), 3) == 3.0
    stock = SimpleNamespace(encoder=TransformerEncoder.__new__(TransformerEncoder))
    assert add_encoder_loss(stock, torch.tensor(1.0), 3) == 1.0


@pytest.mark.parametrize("encoder,transform", [
    ("{encoder_type: xl_exgre, xl_reordering_loss_weight: 0.6}", True),
    ("{encoder_type: xl_relative, xl_enc_max_relative_positions: 4}", False),
])
def test_eole_train_and_predict_with_a_baseline(tmp_path, encoder, transform):
    """``eole build_vocab``, ``train`` (6 steps, validation) and ``predict`` through ``python -m onmt_xl.eole``:
    ExGRE with r_j from the xl_position transform (its reordering loss joins the training loss), and xl_relative
    (look-up-only ``src_emb``, no transform)."""
    import json
    import subprocess
    import sys

    from tests.conftest import run_env
    from tests.helpers import tiny_corpus, tiny_preorderer
    from tests.test_eole import E2E_CONFIG

    wd = tmp_path
    pre = tiny_preorderer(wd, tiny_corpus(wd, n=120))
    for ext in ("src", "tgt"):
        lines = (wd / f"train.{ext}").read_text().splitlines()
        (wd / f"valid.{ext}").write_text("\n".join(lines[:20]) + "\n")
        (wd / f"test.{ext}").write_text("\n".join(lines[20:26]) + "\n")
    config = E2E_CONFIG.replace("{{encoder_type: xl_combination, xl_heads: 1}}", encoder.replace("{", "{{").replace(
        "}", "}}"))
    assert encoder in config.format(wd=wd, pre=pre, n_sample=0)
    if not transform:
        config = config.replace(", transforms: [xl_position]", "")
    for name, n_sample in (("vocab.yaml", -1), ("train.yaml", 0)):
        (wd / name).write_text(config.format(wd=wd, pre=pre, n_sample=n_sample))
    env = {**run_env(), "OMP_NUM_THREADS": "1"}

    def eole(*args):
        proc = subprocess.run([sys.executable, "-m", "onmt_xl.eole", *args], cwd=wd, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc

    eole("build_vocab", "-config", str(wd / "vocab.yaml"))
    eole("train", "-config", str(wd / "train.yaml"))
    saved = json.loads((wd / "model" / "config.json").read_text())["model"]["encoder"]
    assert saved["encoder_type"] == encoder.split(",")[0].split(": ")[1]
    eole("predict", "-model_path", str(wd / "model"), "-src", str(wd / "test.src"), "-output", str(wd / "hyp.txt"),
         "-beam_size", "2")
    assert len((wd / "hyp.txt").read_text().splitlines()) == 6


# --- the reordering-embedding decoder (Chen et al. 2019, "Decoder REs" / "Both REs"): systems dec_re, both_re ---

TGT = torch.tensor([[2, 5, 6, 7, 9], [2, 8, 9, 1, 1]])  # teacher forcing: the second target padded
STEPS = torch.tensor([[2, 5, 6, 7, 9], [2, 8, 9, 10, 11]])  # decoding: no padding inside a hypothesis
DEC_SIZES = dict(layers=2, hidden_size=16, tgt_word_vec_size=16, heads=4, transformer_ff=32, norm_eps=1e-6,
                 with_cross_attn=True)  # EncoderDecoderModel sets with_cross_attn before build_decoder


def eole_decoder(decoder_class=None, config_class=None):
    """An Eole decoder (ours by default) and its ``tgt_emb`` (stock: ``X·√d + PE_abs``), sized like the OpenNMT-py
    model of :func:`onmt_decoder` (two decoder layers)."""
    from eole.config.models import TransformerDecoderConfig
    from eole.decoders.transformer import TransformerDecoder

    from onmt_xl.eole.baseline_config import ReorderingEmbeddingDecoderConfig
    from onmt_xl.eole.reordering_decoder import ReorderingEmbeddingDecoder

    decoder_class = decoder_class or ReorderingEmbeddingDecoder
    config_class = config_class or (ReorderingEmbeddingDecoderConfig if decoder_class is ReorderingEmbeddingDecoder
                                    else TransformerDecoderConfig)
    decoder = decoder_class(config_class(**DEC_SIZES)).eval()
    assert decoder_class is TransformerDecoder or type(decoder.transformer_layers[1]).__name__.startswith("Reordering")
    emb = Embeddings(word_vec_size=16, position_encoding_type="SinusoidalInterleaved", dropout=0.0,
                     word_padding_idx=PAD, word_vocab_size=24)
    return decoder, emb.eval()


def onmt_decoder(encoder_type):
    """An OpenNMT-py model with decoder REs (``dec_re``: stock encoder; ``both_re``: encoder REs too), built by
    OpenNMT's ``build_base_model``, every parameter ~ N(0, 0.2)."""
    return build(encoder_type, decoder_type="xl_reordering_embedding", dec_layers=2)


def load_decoder(onmt_model, decoder, emb):
    from onmt_xl.eole.weights import EOLE_ONLY_DECODER, onmt_decoder_to_eole

    dec_state, emb_state = onmt_decoder_to_eole(onmt_model.decoder.state_dict())
    missing, unexpected = decoder.load_state_dict(dec_state, strict=False)
    assert unexpected == [] and missing == [f"transformer_layers.{i}.{EOLE_ONLY_DECODER}" for i in range(2)], missing
    missing, unexpected = emb.load_state_dict(emb_state, strict=False)
    assert unexpected == [] and missing == ["pe.pe"], (missing, unexpected)


def onmt_decode(onmt_model, enc_out, tgt, steps=False):
    """OpenNMT-py's decoder output ``(batch, tgt_len, d)``: teacher-forced, or one step at a time (``step=t``, its
    cache; what its beam search runs)."""
    src, src_len = batch()
    decoder = onmt_model.decoder
    with torch.no_grad():
        decoder.init_state(src, enc_out, None)
        if not steps:
            return decoder(tgt[:, :, None], enc_out, src_len=src_len)[0]
        return torch.cat([decoder(tgt[:, t:t + 1, None], enc_out, step=t, src_len=src_len)[0]
                          for t in range(tgt.size(1))], dim=1)


def eole_decode(decoder, emb, enc_out, tgt, steps=False):
    """Eole's decoder output: teacher-forced as ``EncoderDecoderModel.forward`` calls it, or one step at a time as
    ``Translator``/``Inference._decode_and_generate`` do (``tgt_emb(.., step=t)``, ``_init_cache`` at step 0, the
    decoder's KV cache, ``_extend_cache`` after each step)."""
    src_pad_mask = batch()[0][:, :, 0].eq(PAD).unsqueeze(1)
    with torch.no_grad():
        if not steps:
            return decoder(emb(tgt), enc_out=enc_out, src_pad_mask=src_pad_mask,
                           tgt_pad_mask=tgt.eq(PAD).unsqueeze(1))[0]
        outs = []
        for t in range(tgt.size(1)):
            dec_in = tgt[:, t:t + 1]
            step_emb, tgt_pad_mask = emb(dec_in, step=t), dec_in.eq(PAD).unsqueeze(1)
            if t == 0:
                decoder._init_cache(step_emb, tgt_pad_mask, enc_out=enc_out)
            else:
                tgt_pad_mask = torch.zeros_like(tgt_pad_mask)
            outs.append(decoder(step_emb, enc_out=enc_out, step=t, src_pad_mask=src_pad_mask,
                                tgt_pad_mask=tgt_pad_mask)[0])
            decoder._extend_cache()
        decoder._disable_cache()
        return torch.cat(outs, dim=1)


@pytest.mark.parametrize("encoder_type", ["transformer", "xl_reordering_embedding"], ids=["dec_re", "both_re"])
def test_reordering_decoder_same_weights_same_model_output(encoder_type):
    """The whole model on the same weights: Eole's encoder (stock for ``dec_re``, encoder REs for ``both_re``) and our
    decoder give OpenNMT-py's decoder output, teacher-forced and step by step with the cache."""
    onmt_model = onmt_decoder(encoder_type)
    with torch.no_grad():
        onmt_memory, _, _ = onmt_model.encoder(*batch())
    if encoder_type == "transformer":
        from eole.config.models import TransformerEncoderConfig

        encoder = TransformerEncoder(TransformerEncoderConfig(**SIZES)).eval()
        src_emb = Embeddings(word_vec_size=16, position_encoding_type="SinusoidalInterleaved", dropout=0.0,
                             word_padding_idx=PAD, word_vocab_size=24).eval()
    else:
        encoder, src_emb = eole_encoder(encoder_type)
    enc_state, emb_state = onmt_encoder_to_eole(onmt_model.encoder.state_dict())
    encoder.load_state_dict(enc_state, strict=True)
    src_emb.load_state_dict(emb_state, strict=False)
    memory = run_eole(encoder, src_emb)
    decoder, emb = eole_decoder()
    load_decoder(onmt_model, decoder, emb)
    for tgt, steps in ((TGT, False), (STEPS, True)):
        want = onmt_decode(onmt_model, onmt_memory, tgt, steps)
        got = eole_decode(decoder, emb, memory, tgt, steps)
        assert got.shape == want.shape == (2, 5, 16)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_reordering_decoder_step_by_step_is_the_training_time_decoder_and_not_vacuous():
    """On a unit-scale memory (where cross-attention, which reads the REs, moves the output): the same output as
    OpenNMT-py teacher-forced, step by step with the cache, and with Eole's fused K/V/Q projections (``eole
    predict``). Not vacuous: Eole's stock decoder on the same weights differs, and so does our decoder if a step used
    the cache-less positions 0.. (what a layer that misses the cache position would do)."""
    from eole.decoders.transformer import TransformerDecoder

    from onmt_xl.eole.reordering_decoder import ReorderingEmbeddingDecoderLayer

    onmt_model = onmt_decoder("transformer")
    memory = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    decoder, emb = eole_decoder()
    load_decoder(onmt_model, decoder, emb)
    want = {steps: onmt_decode(onmt_model, memory, tgt, steps) for tgt, steps in ((TGT, False), (STEPS, True))}
    torch.testing.assert_close(want[True][0], want[False][0], rtol=0, atol=1e-5)  # row 0: the same target
    for steps, tgt in ((False, TGT), (True, STEPS)):
        torch.testing.assert_close(eole_decode(decoder, emb, memory, tgt, steps), want[steps], rtol=0, atol=1e-5)
    stock, stock_emb = eole_decoder(TransformerDecoder)
    stock.load_state_dict({k: v for k, v in decoder.state_dict().items() if "penalty" not in k}, strict=True)
    stock_emb.load_state_dict(emb.state_dict())
    for steps, tgt in ((False, TGT), (True, STEPS)):
        assert (eole_decode(stock, stock_emb, memory, tgt, steps) - want[steps]).abs().max() > 1e-3
    stepwise_pe = ReorderingEmbeddingDecoderLayer.step_pe
    try:
        ReorderingEmbeddingDecoderLayer.step_pe = lambda self, layer_in, _: stepwise_pe(self, layer_in, None)
        assert (eole_decode(decoder, emb, memory, STEPS, True) - want[True]).abs().max() > 1e-3
    finally:
        ReorderingEmbeddingDecoderLayer.step_pe = stepwise_pe
    for layer in decoder.transformer_layers:
        layer.self_attn._fuse_KVQ()
    assert decoder.transformer_layers[0].self_attn.fused_kvq
    torch.testing.assert_close(eole_decode(decoder, emb, memory, STEPS, True), want[True], rtol=0, atol=1e-5)


def test_reordering_decoder_positions_follow_the_cache_per_row():
    """``PE`` at a step is each row's own cache length onward (``cache_seqlens`` ``(batch,)``), and without a cache
    ``0 .. S-1``."""
    from onmt_xl.core.positions import absolute_pe

    decoder, _ = eole_decoder()
    layer = decoder.transformer_layers[0]
    x = torch.zeros(2, 3, 16)
    torch.testing.assert_close(layer.step_pe(x, None), absolute_pe(3, 16), rtol=0, atol=0)
    pe = layer.step_pe(x, torch.tensor([4, 7], dtype=torch.int32))
    table = absolute_pe(10, 16)
    torch.testing.assert_close(pe, torch.stack((table[4:7], table[7:10])), rtol=0, atol=0)


def test_eoles_model_config_takes_the_reordering_decoder_and_checks_it():
    from eole.decoders import str2dec
    from eole.decoders.transformer import TransformerDecoder

    from onmt_xl.eole.baseline_config import ReorderingEmbeddingDecoderConfig
    from onmt_xl.eole.baselines import DECODER_CLASSES

    for encoder in ({"encoder_type": "transformer"}, {"encoder_type": "xl_reordering_embedding"}):
        cfg = model_config(encoder, decoder={"decoder_type": "xl_reordering_embedding"})
        assert type(cfg.decoder) is ReorderingEmbeddingDecoderConfig
    assert {name: str2dec[name] for name in DECODER_CLASSES} == DECODER_CLASSES
    assert str2dec["transformer"] is TransformerDecoder
    with pytest.raises(ValueError, match="decoder_type xl_reordering_embedding: set the model's architecture"):
        model_config({"encoder_type": "transformer"}, architecture="transformer",
                     decoder={"decoder_type": "xl_reordering_embedding"})
    with pytest.raises(ValidationError, match="xl_no_such_decoder"):
        model_config({"encoder_type": "transformer"}, decoder={"decoder_type": "xl_no_such_decoder"})
    # the embeddings' PE kind reaches the decoder (Eole copies it for decoder_type: transformer only), re-checked
    cfg = model_config({"encoder_type": "transformer"}, decoder={"decoder_type": "xl_reordering_embedding"},
                       embeddings={"word_vec_size": 16, "position_encoding_type": "SinusoidalConcat"})
    assert cfg.decoder.position_encoding_type == "SinusoidalConcat"
    with pytest.raises(ValidationError, match="sinusoidal"):
        model_config({"encoder_type": "transformer"}, decoder={"decoder_type": "xl_reordering_embedding"},
                     embeddings={"word_vec_size": 16, "position_encoding_type": "Rotary", "n_positions": 8})
    with pytest.raises(ValueError, match="sequential pre-norm"):
        ReorderingEmbeddingDecoderConfig(parallel_residual=True)


def test_eole_train_and_predict_with_both_reordering_embeddings(tmp_path):
    """``both_re`` (encoder and decoder REs) through ``python -m onmt_xl.eole``: build_vocab, train (6 steps,
    validation) and predict with beam search (the decoder's step-by-step path)."""
    import json
    import sys

    from tests.test_eole import E2E_CONFIG, e2e_files
    from tests.test_eole import run_eole as run_command

    config = E2E_CONFIG.replace("{{encoder_type: xl_combination, xl_heads: 1}}",
                                "{{encoder_type: xl_reordering_embedding}}")
    config = config.replace("{{decoder_type: transformer}}", "{{decoder_type: xl_reordering_embedding}}")
    config = config.replace(", transforms: [xl_position]", "")
    assert "xl_reordering_embedding}}" in config and "xl_position]" not in config
    e2e_files(tmp_path, config)

    def eole(*args):
        return run_command([sys.executable, "-m", "onmt_xl.eole"], *args, cwd=tmp_path)

    eole("build_vocab", "-config", tmp_path / "vocab.yaml")
    eole("train", "-config", tmp_path / "train.yaml")
    saved = json.loads((tmp_path / "model" / "config.json").read_text())["model"]
    assert saved["encoder"]["encoder_type"] == saved["decoder"]["decoder_type"] == "xl_reordering_embedding"
    eole("predict", "-model_path", tmp_path / "model", "-src", tmp_path / "test.src", "-output", tmp_path / "hyp.txt",
         "-beam_size", "2")
    assert len((tmp_path / "hyp.txt").read_text().splitlines()) == 6


def test_eoles_lstm_encoder_is_opennmts_on_full_length_rows_only():
    """System ``lstm`` runs Eole's own RNN encoder (``encoder_type: brnn``). On OpenNMT-py's weights it gives OpenNMT-py's
    output for a row without padding; a padded row differs, because Eole 0.6.4's ``RNNEncoder`` does not pack the
    batch (OpenNMT-py's ``pack_padded_sequence``): the backward direction starts on the padding, and the final state
    the decoder starts from has read it (reports/EOLE.md). Fails, and should be revisited, once Eole packs."""
    from eole.config.models import RnnEncoderConfig
    from eole.encoders.rnn_encoder import RNNEncoder

    onmt_model = build("brnn", decoder_type="rnn", rnn_type="LSTM", global_attention="general",
                       position_encoding=False)
    src, src_len = batch()
    with torch.no_grad():
        want, (h_want, _), _ = onmt_model.encoder(src, src_len)
    encoder = RNNEncoder(RnnEncoderConfig(encoder_type="brnn", layers=2, hidden_size=16, src_word_vec_size=16)).eval()
    encoder.rnn.load_state_dict({k[len("rnn."):]: v for k, v in onmt_model.encoder.state_dict().items()
                                 if k.startswith("rnn.")}, strict=True)
    with torch.no_grad():  # no PE and no √d: OpenNMT-py's position_encoding false, Eole's position_encoding_type null
        got, (h_got, _) = encoder(onmt_model.encoder.embeddings(src))
    assert src_len.tolist() == [5, 3]
    torch.testing.assert_close(got[0], want[0], rtol=0, atol=1e-5)
    torch.testing.assert_close(h_got[:, 0], h_want[:, 0], rtol=0, atol=1e-5)
    assert (got[1, :3] - want[1, :3]).abs().max() > 1e-3 and (h_got[:, 1] - h_want[:, 1]).abs().max() > 1e-3
