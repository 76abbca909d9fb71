"""Baseline encoders (DiSAN, reordering embeddings, additional PEs, encoder-free) and pre-reordering."""

import math

import pytest
import torch

from onmt_xl.encoders.common import MissingXLPositionsError, embed_words, padding_mask
from onmt_xl.modules.disan import FusionGate, directional_masks
from onmt_xl.modules.reordering_embedding import PositionalPenalty
from onmt_xl.positions import sinusoid
from tests.test_encoders import MONOTONE, REVERSED, batch, build


def test_directional_masks_by_hand():
    pad = padding_mask(torch.tensor([3, 2]), 3)  # second sentence: 2 tokens
    m = directional_masks(pad, heads=2)  # head 0 forward, head 1 backward; True = masked
    allowed = (~m).int().tolist()
    assert allowed[0][0] == [[1, 0, 0], [1, 0, 0], [1, 1, 0]]  # forward: earlier tokens; token 0 itself
    assert allowed[0][1] == [[0, 1, 1], [0, 0, 1], [0, 0, 1]]  # backward: later tokens; last token itself
    assert allowed[1][1] == [[0, 1, 0], [0, 1, 0], [0, 0, 0]]  # padding never attended
    assert allowed[1][0][:2] == [[1, 0, 0], [1, 0, 0]]


def test_fusion_gate_by_hand():
    gate = FusionGate(2)
    with torch.no_grad():
        gate.w_s.copy_(torch.tensor([1.0, 0.0]))
        gate.w_h.copy_(torch.tensor([0.0, 2.0]))
        gate.b.copy_(torch.tensor([0.5, -1.0]))
    s, h = torch.tensor([[2.0, 3.0]]), torch.tensor([[4.0, 1.0]])
    f = [1 / (1 + math.exp(-2.5)), 1 / (1 + math.exp(-1.0))]
    want = [f[0] * 2 + (1 - f[0]) * 4, f[1] * 3 + (1 - f[1]) * 1]
    assert gate(s, h)[0].tolist() == pytest.approx(want, abs=1e-6)


def test_positional_penalty_eq6_by_hand():
    pp = PositionalPenalty(2)
    with torch.no_grad():
        pp.W.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        pp.W_tilde.weight.copy_(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
        pp.V.weight.copy_(torch.tensor([[2.0, 0.0], [1.0, -1.0]]))
    h_prev, h_tilde = torch.tensor([[0.5, -0.5]]), torch.tensor([[1.0, 0.25]])
    t = [math.tanh(0.5 + 0.25), math.tanh(-0.5 + 1.0)]  # tanh(W h_prev + W~ h~)
    want = [1 / (1 + math.exp(-(2 * t[0]))), 1 / (1 + math.exp(-(t[0] - t[1])))]
    assert pp(h_prev, h_tilde)[0].tolist() == pytest.approx(want, abs=1e-6)


def _one_layer_reference(enc, src, src_len, penalty):
    layer = enc.transformer[0]
    x = enc.embeddings(src)
    mask = padding_mask(src_len, src.size(1))
    norm = layer.layer_norm(x)
    h_tilde = x + layer.self_attn(norm, norm, norm, mask=mask)[0]
    pe = sinusoid(torch.arange(src.size(1)), x.size(-1))
    c = h_tilde + (pe * penalty(x, h_tilde) if penalty is not None else pe)
    ff = layer.feed_forward
    out = h_tilde + ff.w_2(ff.activation(ff.w_1(ff.layer_norm(c))))
    return enc.layer_norm(out)


@pytest.mark.parametrize("encoder_type", ["reordering_embedding", "additional_pe"])
def test_reordering_embedding_layer_is_eq_9(encoder_type):
    model = build(encoder_type, enc_layers=1)
    enc = model.encoder
    src, src_len = batch()
    got, _, _ = enc(src, src_len)
    want = _one_layer_reference(enc, src, src_len, enc.penalties[0] if enc.penalties is not None else None)
    assert torch.allclose(got, want, atol=1e-5)


def test_disan_layer_uses_directional_heads_and_the_gate():
    model = build("disan", enc_layers=1)
    enc = model.encoder
    src, src_len = batch()
    got, _, _ = enc(src, src_len)
    layer = enc.transformer[0]
    x = enc.embeddings(src)
    norm = layer.layer_norm(x)
    s = layer.self_attn(norm, norm, norm, mask=directional_masks(padding_mask(src_len, 5), 4))[0]
    want = enc.layer_norm(layer.feed_forward(enc.gates[0](s, x)))
    assert torch.allclose(got, want, atol=1e-5)
    stock = layer.self_attn(norm, norm, norm, mask=padding_mask(src_len, 5))[0]
    assert not torch.allclose(s, stock, atol=1e-4)


def test_encoder_free_variants():
    for pe in ("none", "absolute"):
        enc = build("encoder_free", encoder_free_pe=pe).encoder
        src, src_len = batch()
        out, _, _ = enc(src, src_len)
        x = embed_words(enc.embeddings, src)
        want = x + sinusoid(torch.arange(5).expand(2, 5), 16) if pe == "absolute" else x
        assert torch.allclose(out, want, atol=1e-6)
    enc = build("encoder_free", encoder_free_pe="inxl").encoder
    a, _, _ = enc(*batch(MONOTONE))
    b, _, _ = enc(*batch(REVERSED))
    assert not torch.allclose(a, b)
    with pytest.raises(MissingXLPositionsError):
        enc(*batch())


def test_baseline_parameter_counts():
    def count(model):
        return sum(p.numel() for p in model.parameters())

    base = count(build("transformer"))  # 2 encoder layers, d_model 16
    assert count(build("disan")) == base + 2 * 3 * 16
    assert count(build("reordering_embedding")) == base + 2 * 3 * 16 * 16
    assert count(build("additional_pe")) == base
    layers = sum(p.numel() for p in build("transformer").encoder.transformer.parameters()) + 2 * 16
    assert count(build("encoder_free", encoder_free_pe="absolute")) == base - layers
    assert count(build("encoder_free", encoder_free_pe="inxl")) == base - layers + 4 * 16


def test_decoder_res_step_by_step_equals_full_sequence():
    """Beam search decodes one step at a time with caches: it must see exactly the training-time layer."""
    model = build("transformer", decoder_type="reordering_embedding")
    src, src_len = batch()
    enc_out, _, _ = model.encoder(src, src_len)
    tgt = torch.tensor([[2, 5, 6, 7], [2, 8, 9, 10]])[:, :, None]
    model.decoder.init_state(src, enc_out, None)
    full, _ = model.decoder(tgt, enc_out, src_len=src_len)
    model.decoder.init_state(src, enc_out, None)
    steps = [model.decoder(tgt[:, t : t + 1], enc_out, step=t, src_len=src_len)[0] for t in range(4)]
    assert torch.allclose(full, torch.cat(steps, dim=1), atol=1e-5)


def test_decoder_res_change_the_decoder_and_count_parameters():
    stock = build("transformer")
    re = build("transformer", decoder_type="reordering_embedding")
    n = sum(p.numel() for p in re.parameters()) - sum(p.numel() for p in stock.parameters())
    assert n == 1 * 3 * 16 * 16  # one decoder layer, 3 d x d matrices (Eq. 6)
    assert all(hasattr(layer, "penalty") for layer in re.decoder.transformer_layers)
