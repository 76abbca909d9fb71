"""XL encoders built by OpenNMT's own model builder from options, as onmt_train builds them."""

import pyonmttok
import pytest
import torch
from onmt import opts
from onmt.constants import DefaultTokens, ModelTask
from onmt.model_builder import build_base_model
from onmt.utils.parse import ArgumentParser

from onmt_xl.opennmt.encoders.common import MissingXLPositionsError

SPECIALS = [DefaultTokens.UNK, DefaultTokens.PAD, DefaultTokens.BOS, DefaultTokens.EOS]


def model_opt(**overrides):
    parser = ArgumentParser()
    opts.train_opts(parser)
    opt = parser.parse_args(["-data", "{}", "-src_vocab", "unused"])
    settings = dict(
        encoder_type="transformer", decoder_type="transformer", position_encoding=True,
        enc_layers=2, dec_layers=1, heads=4, hidden_size=16, word_vec_size=16, transformer_ff=32,
        dropout=[0.0], attention_dropout=[0.0], model_task=ModelTask.SEQ2SEQ,
    )
    settings.update(overrides)
    for k, v in settings.items():
        setattr(opt, k, v)
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    return opt


def vocabs():
    src = pyonmttok.build_vocab_from_tokens([f"s{i}" for i in range(20)], special_tokens=SPECIALS)
    tgt = pyonmttok.build_vocab_from_tokens([f"t{i}" for i in range(20)], special_tokens=SPECIALS)
    return {"src": src, "tgt": tgt, "data_task": ModelTask.SEQ2SEQ, "decoder_start_token": DefaultTokens.BOS}


def build(encoder_type, seed=0, **overrides):
    torch.manual_seed(seed)
    model = build_base_model(model_opt(encoder_type=encoder_type, **overrides), vocabs())
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return model.eval()


def batch(pos_xl=None):
    tokens = torch.tensor([[5, 6, 7, 8, 9], [10, 11, 12, 1, 1]])
    src_len = torch.tensor([5, 3])
    if pos_xl is None:
        return tokens[:, :, None], src_len
    return torch.stack((tokens, pos_xl), dim=2), src_len


REVERSED = torch.tensor([[4, 3, 2, 1, 0], [2, 1, 0, 0, 0]])
MONOTONE = torch.tensor([[0, 1, 2, 3, 4], [0, 1, 2, 0, 0]])


@pytest.mark.parametrize("encoder_type", ["xl_headxl", "xl_combination"])
def test_tau_zero_is_exactly_the_stock_encoder(encoder_type):
    stock = build("transformer")
    xl = build(encoder_type, xl_heads=0)
    missing, unexpected = xl.encoder.load_state_dict(stock.encoder.state_dict(), strict=False)
    assert unexpected == [] and all("inxl" in k for k in missing)
    src, src_len = batch()
    want, _, _ = stock.encoder(src, src_len)
    got, _, _ = xl.encoder(*batch(REVERSED))
    assert torch.equal(want, got)


def test_headxl_with_monotone_positions_is_the_stock_encoder():
    """If pos_XL = pos_abs, Z_XL = Z_abs, so every τ gives the stock output (Eq. 9)."""
    stock = build("transformer")
    xl = build("xl_headxl", xl_heads=4)
    xl.encoder.load_state_dict(stock.encoder.state_dict())
    want, _, _ = stock.encoder(*batch())
    got, _, _ = xl.encoder(*batch(MONOTONE))
    assert torch.allclose(want[0], got[0], atol=1e-6)
    assert torch.allclose(want[1, :3], got[1, :3], atol=1e-6)


@pytest.mark.parametrize("encoder_type,tau", [("xl_inxl", 4), ("xl_headxl", 1), ("xl_headxl", 4), ("xl_combination", 2)])
def test_xl_positions_change_the_encoding(encoder_type, tau):
    model = build(encoder_type, xl_heads=tau)
    a, _, _ = model.encoder(*batch(MONOTONE))
    b, _, _ = model.encoder(*batch(REVERSED))
    assert not torch.allclose(a[0], b[0], atol=1e-4)


def test_inxl_embedding_is_eq_8():
    model = build("xl_inxl")
    enc = model.encoder
    src, src_len = batch(REVERSED)
    captured = {}
    enc.transformer[0].register_forward_pre_hook(lambda m, args: captured.update(z=args[0]))
    enc(src, src_len)
    from onmt_xl.core.positions import sinusoid

    x = enc.embeddings.word_lut(src[:, :, 0]) * 4.0  # sqrt(16)
    pe_abs = sinusoid(torch.arange(5).expand(2, 5), 16)
    want = x + enc.inxl(pe_abs, sinusoid(REVERSED, 16))
    assert torch.allclose(captured["z"], want, atol=1e-6)


def test_long_sentence_positions_are_exact():
    """No vocabulary stands between pos_XL and the sinusoid: position 4000 is encoded as 4000."""
    model = build("xl_inxl")
    enc = model.encoder
    pos = torch.tensor([[4000, 1, 2, 3, 4], [2, 1, 0, 0, 0]])
    pe_abs, pe_xl = enc.positions(pos)
    from onmt_xl.core.positions import sinusoid

    assert torch.allclose(pe_xl[0, 0], enc.inxl(pe_abs[0, 0], sinusoid(torch.tensor(4000), 16)))


@pytest.mark.parametrize("encoder_type", ["xl_inxl", "xl_headxl", "xl_combination"])
def test_missing_positions_fail_clearly(encoder_type):
    model = build(encoder_type)
    with pytest.raises(MissingXLPositionsError, match="xl_position transform"):
        model.encoder(*batch())


def test_parameter_counts_against_baseline():
    def count(model):
        return sum(p.numel() for p in model.parameters())

    base = count(build("transformer"))
    assert count(build("xl_headxl")) == base
    assert count(build("xl_inxl")) == base + 4 * 16
    assert count(build("xl_combination")) == base + 4 * 16
    assert count(build("xl_inxl", xl_inxl_fusion="full")) == base + 2 * 16 * 16
    assert count(build("xl_inxl", xl_inxl_fusion="diagonal")) == base + 2 * 16


def test_relative_encoder_is_encoder_only():
    model = build("xl_relative", xl_enc_max_relative_positions=4)
    enc_rel = [m for m in model.encoder.modules() if getattr(m, "relative_positions_embeddings", None) is not None]
    dec_rel = [m for m in model.decoder.modules() if getattr(m, "relative_positions_embeddings", None) is not None]
    assert len(enc_rel) == 2 and dec_rel == []
    assert model.decoder.embeddings.position_encoding
    out, _, _ = model.encoder(*batch())
    assert out.shape == (2, 5, 16)


@pytest.mark.parametrize(
    "overrides,message",
    [
        (dict(encoder_type="xl_headxl", xl_heads=5), "xl_heads must be in"),
        (dict(encoder_type="xl_combination", xl_heads=-1), "xl_heads must be in"),
        (dict(encoder_type="xl_inxl", position_encoding=False), "position_encoding true"),
        (dict(encoder_type="xl_relative", xl_enc_max_relative_positions=0), "-xl_enc_max_relative_positions must be > 0"),
    ],
)
def test_bad_options_fail_with_clear_message(overrides, message):
    with pytest.raises(ValueError, match=message):
        model_opt(**overrides)


@pytest.mark.parametrize("heads,given,tau", [(8, None, 4), (4, None, 2), (8, 1, 1), (4, 4, 4), (4, 0, 0)])
def test_xl_heads_defaults_to_half_the_heads(heads, given, tau):
    """Without -xl_heads HeadXL gives the XL positions to heads // 2 heads (one function decides it); a given
    value is kept, in the validated options and in the built encoder's first layer."""
    from onmt_xl.opennmt.encoders.options import default_xl_heads

    assert default_xl_heads(heads) == heads // 2
    overrides = dict(heads=heads, hidden_size=4 * heads, word_vec_size=4 * heads)
    if given is not None:
        overrides["xl_heads"] = given
    opt = model_opt(encoder_type="xl_headxl", **overrides)
    assert opt.xl_heads == tau
    torch.manual_seed(0)
    model = build_base_model(opt, vocabs())
    assert model.encoder.xl_heads == tau == model.encoder.transformer[0].self_attn.xl_heads


def test_xl_heads_unset_is_resolved_by_the_encoder_too():
    """An option namespace that skipped validation (xl_heads None) still builds half the heads."""
    from onmt_xl.opennmt.encoders.xl_transformer import resolve_xl_heads

    opt = model_opt(encoder_type="xl_headxl", heads=8, hidden_size=32, word_vec_size=32)
    opt.xl_heads = None
    assert resolve_xl_heads(opt) == 4


@pytest.mark.parametrize("heads,xl_heads", [(8, 9), (4, -1)])
def test_xl_heads_out_of_range_still_rejected(heads, xl_heads):
    with pytest.raises(ValueError, match=rf"-xl_heads must be in \[0, heads={heads}\], got {xl_heads}"):
        model_opt(encoder_type="xl_headxl", heads=heads, hidden_size=4 * heads, word_vec_size=4 * heads,
                  xl_heads=xl_heads)


@pytest.mark.parametrize("encoder_type", ["xl_inxl", "xl_combination"])
def test_inxl_init_reaches_the_encoders(encoder_type):
    """As onmt_train builds them, InXL encoders start by default (-xl_inxl_init absolute) from tanh(PE_abs): their
    output does not depend on pos_XL until V has learned; identity starts from tanh(PE_abs + PE_XL)."""
    from tests.test_baselines import onmt_init

    def output(pos_xl, **opts):
        torch.manual_seed(0)
        model = onmt_init(build_base_model(model_opt(encoder_type=encoder_type, **opts), vocabs())).eval()
        return model.encoder(*batch(pos_xl))[0]

    assert torch.allclose(output(MONOTONE), output(REVERSED), atol=1e-6)
    assert torch.equal(output(MONOTONE), output(MONOTONE, xl_inxl_init="absolute"))
    assert not torch.allclose(output(MONOTONE, xl_inxl_init="identity"), output(REVERSED, xl_inxl_init="identity"),
                              atol=1e-3)
