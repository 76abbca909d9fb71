"""Baseline encoders (DiSAN, reordering embeddings, additional PEs, encoder-free) and pre-reordering."""

import math

import pytest
import torch

from onmt_xl.encoders.common import MissingXLPositionsError, embed_words, padding_mask
from onmt_xl.modules.disan import FusionGate, directional_masks
from onmt_xl.modules.reordering_embedding import PositionalPenalty
from onmt_xl.positions import sinusoid
from tests.test_encoders import MONOTONE, REVERSED, batch, build


def onmt_init(model):
    """``onmt_train``'s initialisation (``onmt.model_builder.build_model``, ``-param_init 0 -param_init_glorot``):
    Xavier for every ``weight`` of two or more dimensions, zeros for every ``bias``, the rest as built."""
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if name == "weight" and param.dim() > 1:
                torch.nn.init.xavier_uniform_(param)
            elif name == "bias":
                torch.nn.init.zeros_(param)
    return model


def test_directional_masks_by_hand():
    pad = padding_mask(torch.tensor([3, 2]), 3)  # second sentence: 2 tokens
    m = directional_masks(pad, heads=2)  # head 0 forward, head 1 backward; True = masked
    allowed = (~m).int().tolist()
    assert allowed[0][0] == [[1, 0, 0], [1, 0, 0], [1, 1, 0]]  # forward: earlier tokens; token 0 itself
    assert allowed[0][1] == [[0, 1, 1], [0, 0, 1], [0, 0, 1]]  # backward: later tokens; last token itself
    assert allowed[1][1] == [[0, 1, 0], [0, 1, 0], [0, 0, 1]]  # padding never attended, but by a padded query
    assert allowed[1][0] == [[1, 0, 0], [1, 0, 0], [1, 1, 0]]


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


def test_fusion_gate_starts_at_f_095_for_any_input():
    from onmt.model_builder import build_base_model

    from tests.test_encoders import model_opt, vocabs

    # built as onmt_train builds it: OpenNMT's initialisation must leave the gate's start alone
    enc = onmt_init(build_base_model(model_opt(encoder_type="disan", enc_layers=1), vocabs())).encoder
    s, h = torch.randn(2, 3, 16) * 5, torch.randn(2, 3, 16) * 5
    assert torch.allclose(enc.gates[0](s, h), 0.95 * s + 0.05 * h, atol=1e-5)
    with pytest.raises(ValueError):
        FusionGate(4, start=1.0)


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


@pytest.mark.parametrize("fusion", ["gate", "none"])
def test_disan_layer_is_a_residual_block_with_directional_heads(fusion):
    model = build("disan", enc_layers=1, disan_fusion=fusion)
    enc = model.encoder
    src, src_len = batch()
    got, _, _ = enc(src, src_len)
    layer = enc.transformer[0]
    x = enc.embeddings(src)
    norm = layer.layer_norm(x)
    s = layer.self_attn(norm, norm, norm, mask=directional_masks(padding_mask(src_len, 5), 4))[0]
    u = enc.gates[0](s, norm) if fusion == "gate" else s  # the gate fuses the normalised input
    want = enc.layer_norm(layer.feed_forward(x + u))  # x + Dropout(u), then the stock feed-forward block
    assert torch.allclose(got, want, atol=1e-5)
    stock = layer.self_attn(norm, norm, norm, mask=padding_mask(src_len, 5))[0]
    assert not torch.allclose(s, stock, atol=1e-4)
    assert (enc.gates is None) == (fusion == "none")


@pytest.mark.parametrize("fusion", ["gate", "none"])
def test_disan_keeps_the_identity_path(fusion):
    """With the attention and feed-forward outputs zeroed, a layer passes its input through (plus the
    gate's (1 - F) share of LN(x)): the residual sum is kept, not replaced by the gate's output."""
    from onmt.model_builder import build_base_model

    from tests.test_encoders import model_opt, vocabs

    enc = onmt_init(build_base_model(model_opt(encoder_type="disan", enc_layers=2, disan_fusion=fusion), vocabs())).encoder.eval()
    with torch.no_grad():
        for layer in enc.transformer:
            for linear in (layer.self_attn.final_linear, layer.feed_forward.w_2):
                linear.weight.zero_()
                if linear.bias is not None:
                    linear.bias.zero_()
    src, src_len = batch()
    x = enc.embeddings(src)
    for layer in enc.transformer:
        x = x + (0.05 * layer.layer_norm(x) if fusion == "gate" else 0)
    assert torch.allclose(enc(src, src_len)[0], enc.layer_norm(x), atol=1e-5)


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
    assert count(build("disan", disan_fusion="none")) == base
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


def test_reordered_position_predictor_eq5_by_hand():
    from onmt_xl.modules.explicit_reordering import ReorderedPositionPredictor

    p = ReorderedPositionPredictor(2)
    with torch.no_grad():
        p.W.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
        p.v.weight.copy_(torch.tensor([[1.0, -1.0]]))
    h = torch.tensor([[[0.5, 0.25], [0.0, 0.0]]])
    z = math.tanh(0.5) - math.tanh(0.5)  # v . tanh(W h) for the first word
    got = p(h, torch.tensor([5]))
    assert got[0].tolist() == pytest.approx([4 / (1 + math.exp(-z)), 4 * 0.5], abs=1e-6)  # (J - 1) sigmoid


def test_gaussian_window_pe_eq6_by_hand():
    from onmt_xl.modules.explicit_reordering import gaussian_window_pe

    pe = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    b = torch.tensor([[1.2, 1.5, 0.0]])
    pr = gaussian_window_pe(b, pe, window=0.5)  # sigma = 0.25: exp(-(s - b)^2 / 0.5)
    assert pr[0, 0].tolist() == pytest.approx([0.0, math.exp(-0.04 / 0.5)], abs=1e-6)  # only s = 1 in [0.7, 1.7]
    w = math.exp(-0.25 / 0.5)  # s = 1 and s = 2 both at distance 0.5
    assert pr[0, 1].tolist() == pytest.approx([2 * w, w + 2 * w], abs=1e-6)
    assert pr[0, 2].tolist() == pytest.approx([1.0, 0.0], abs=1e-6)


def test_eq9_loss_reaches_b_only_through_a_window_wider_than_one_position():
    # With the paper's D = 0.5 at most one integer s lies in [b - D, b + D] (two only at b + ½ exactly), so
    # pr_j = w·pe_s and the cosine of Eq. 9 ignores w: the reordering loss gives b_j no gradient. A wider
    # window mixes neighbouring positions and does.
    from onmt_xl.modules.explicit_reordering import gaussian_window_pe, reordering_similarity

    pe = sinusoid(torch.arange(8), 16)
    pos_xl, valid = torch.tensor([[5, 0, 2]]), torch.ones(1, 3, dtype=torch.bool)
    grads = {}
    for window in (0.5, 2.0):
        b = torch.tensor([[1.2, 3.9, 6.3]], requires_grad=True)
        reordering_similarity(gaussian_window_pe(b, pe, window), pos_xl, valid, "SinusoidalInterleaved").backward()
        grads[window] = b.grad
    assert grads[0.5].abs().max() < 1e-6  # zero but for float rounding
    assert (grads[2.0].abs() > 1e-4).all()  # 100× the rounding above


def test_reordering_fusion_gate_eq10_11_by_hand():
    from onmt_xl.modules.explicit_reordering import ReorderingFusionGate

    gate = ReorderingFusionGate(2)
    with torch.no_grad():
        gate.U_g.weight.copy_(torch.tensor([[1.0, 0.0]]))
        gate.W_g.weight.copy_(torch.tensor([[0.0, 1.0]]))
    h, h_bar = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, -1.0]])
    g = 1 / (1 + math.exp(-(1.0 - 1.0)))
    assert gate(h, h_bar)[0].tolist() == pytest.approx([g * 3 + (1 - g) * 1, g * -1 + (1 - g) * 2], abs=1e-6)


@pytest.mark.parametrize("encoder_type", ["exgre", "refsr"])
def test_exgre_positions_only_feed_the_loss(encoder_type):
    model = build(encoder_type)
    enc = model.encoder
    plain, _, _ = enc(*batch())
    assert enc.reordering_loss is None
    with_r, _, _ = enc(*batch(REVERSED))
    assert torch.equal(plain, with_r)  # r_j never changes the representation: inference needs no alignment
    sim, words = enc.similarity
    assert words.item() == 8 and -8 <= sim.item() <= 8
    assert enc.reordering_loss.item() == pytest.approx(0.6 * (8 - sim.item()), rel=1e-5)
    enc.reordering_loss.backward()
    assert enc.predictors[-1].W.weight.grad.abs().sum() > 0  # Eq. 9 trains the position predictor


def test_encoder_loss_is_added_in_training_only():
    from types import SimpleNamespace

    from onmt_xl.plugin import add_encoder_loss

    encoder = SimpleNamespace(reordering_loss=torch.tensor(1.5), training=True, similarity=(torch.tensor(3.0), 4))
    lc = SimpleNamespace(_onmt_xl_encoder=encoder, _onmt_xl_every=1)
    stock = lambda self, batch, output, attns, trunc_start=0, trunc_size=None: (torch.tensor(10.0), "stats")  # noqa: E731
    loss, stats = add_encoder_loss(stock, lc, None, None, None)
    assert loss.item() == 11.5 and stats == "stats"
    encoder.training = False
    assert add_encoder_loss(stock, lc, None, None, None)[0].item() == 10.0
