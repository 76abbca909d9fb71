"""Baseline encoders (DiSAN, reordering embeddings, additional PEs, encoder-free) and pre-reordering."""

import math

import pytest
import torch

from onmt_xl.opennmt.encoders.common import MissingXLPositionsError, embed_words, padding_mask
from onmt_xl.core.modules.disan import FusionGate, directional_masks
from onmt_xl.core.modules.reordering_embedding import PositionalPenalty
from onmt_xl.core.positions import sinusoid
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
    enc = onmt_init(build_base_model(model_opt(encoder_type="xl_disan", enc_layers=1), vocabs())).encoder
    s, h = torch.randn(2, 3, 16) * 5, torch.randn(2, 3, 16) * 5
    assert torch.allclose(enc.gates[0](s, h), 0.95 * s + 0.05 * h, atol=1e-5)
    with pytest.raises(ValueError):
        FusionGate(4, start=1.0)


def _ln(v):
    """LayerNorm without gain and bias, by hand."""
    mean = sum(v) / len(v)
    var = sum((x - mean) ** 2 for x in v) / len(v)
    return [(x - mean) / math.sqrt(var + 1e-6) for x in v]


def test_positional_penalty_eq6_by_hand():
    pp = PositionalPenalty(3)
    with torch.no_grad():
        pp.W.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.5]]))
        pp.W_tilde.weight.copy_(torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
        pp.V.weight.copy_(torch.tensor([[2.0, 0.0, 0.0], [1.0, -1.0, 0.0], [0.0, 0.0, 1.0]]))
    h_prev, h_tilde = [0.5, -0.5, 2.0], [1.0, 0.25, -3.0]
    a, b = _ln(h_prev), _ln(h_tilde)  # post-norm's H^{n-1} and H~^n are LayerNorm outputs
    t = [math.tanh(a[0] + b[1]), math.tanh(a[1] + b[0]), math.tanh(0.5 * a[2] + b[2])]  # tanh(W H + W~ H~)
    want = [1 / (1 + math.exp(-v)) for v in (2 * t[0], t[0] - t[1], t[2])]
    got = pp(torch.tensor([h_prev]), torch.tensor([h_tilde]))
    assert got[0].tolist() == pytest.approx(want, abs=1e-5)
    # the residual stream's scale does not reach the penalty (Eq. 6 reads normalised states)
    assert torch.allclose(pp(10 * torch.tensor([h_prev]), 10 * torch.tensor([h_tilde])), got, atol=1e-6)


def _one_layer_reference(enc, src, src_len, penalty):
    layer = enc.transformer[0]
    x = enc.embeddings(src)
    mask = padding_mask(src_len, src.size(1))
    norm = layer.layer_norm(x)
    h_tilde = x + layer.self_attn(norm, norm, norm, mask=mask)[0]
    pe = sinusoid(torch.arange(src.size(1)), x.size(-1))
    c = h_tilde + (pe * penalty(x, h_tilde) if penalty is not None else pe)  # penalty normalises its inputs
    ff = layer.feed_forward
    out = h_tilde + ff.w_2(ff.activation(ff.w_1(ff.layer_norm(c))))
    return enc.layer_norm(out)


@pytest.mark.parametrize("encoder_type", ["xl_reordering_embedding", "xl_additional_pe"])
def test_reordering_embedding_layer_is_eq_9(encoder_type):
    model = build(encoder_type, enc_layers=1)
    enc = model.encoder
    src, src_len = batch()
    got, _, _ = enc(src, src_len)
    want = _one_layer_reference(enc, src, src_len, enc.penalties[0] if enc.penalties is not None else None)
    assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("fusion", ["gate", "none"])
def test_disan_layer_is_a_residual_block_with_directional_heads(fusion):
    model = build("xl_disan", enc_layers=1, xl_disan_fusion=fusion)
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
    # the heads are directional: s is the attention under DiSAN's masks written as loops (heads 0-1 forward: keys
    # j < i, heads 2-3 backward: keys j > i, never padding; a query with no such key reads itself)
    allowed = torch.zeros(2, 4, 5, 5, dtype=torch.bool)
    for b, n in enumerate(src_len.tolist()):
        for head in range(4):
            for i in range(5):
                allowed[b, head, i, [j for j in range(n) if (j < i if head < 2 else j > i)] or [i]] = True
    assert torch.allclose(s, layer.self_attn(norm, norm, norm, mask=~allowed)[0], atol=1e-6)
    assert (enc.gates is None) == (fusion == "none")


@pytest.mark.parametrize("fusion", ["gate", "none"])
def test_disan_keeps_the_identity_path(fusion):
    """With the attention and feed-forward outputs zeroed, a layer passes its input through (plus the
    gate's (1 - F) share of LN(x)): the residual sum is kept, not replaced by the gate's output."""
    from onmt.model_builder import build_base_model

    from tests.test_encoders import model_opt, vocabs

    enc = onmt_init(build_base_model(model_opt(encoder_type="xl_disan", enc_layers=2, xl_disan_fusion=fusion), vocabs())).encoder.eval()
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
        enc = build("xl_encoder_free", xl_encoder_free_pe=pe).encoder
        src, src_len = batch()
        out, _, _ = enc(src, src_len)
        x = embed_words(enc.embeddings, src)
        want = x + sinusoid(torch.arange(5).expand(2, 5), 16) if pe == "absolute" else x
        assert torch.allclose(out, want, atol=1e-6)
    enc = build("xl_encoder_free", xl_encoder_free_pe="inxl").encoder
    assert enc.inxl.fusion == "block"
    x = embed_words(enc.embeddings, batch()[0])
    pe_abs = sinusoid(torch.arange(5).expand(2, 5), 16)
    for pos_xl in (MONOTONE, REVERSED):
        out, _, _ = enc(*batch(pos_xl))
        # Eq. 7-8 by hand: X + tanh(PE_abs U + PE_XL V), U and V one 2x2 block per (sin, cos) pair
        pairs_abs, pairs_xl = pe_abs.unflatten(-1, (8, 2)), sinusoid(pos_xl, 16).unflatten(-1, (8, 2))
        fused = (torch.einsum("bpki,kij->bpkj", pairs_abs, enc.inxl.U) + torch.einsum("bpki,kij->bpkj", pairs_xl, enc.inxl.V))
        assert torch.allclose(out, x + torch.tanh(fused.flatten(-2)), atol=1e-6)
    with pytest.raises(MissingXLPositionsError):
        enc(*batch())


def _relative_by_hand(x, table, heads, k, length):
    """Shaw et al. (2018) Eq. 3-4 with W = I, one loop per (head, i, j), plus the residual (encoder_free.py)."""
    d_head = x.size(-1) // heads
    out = x.clone()
    for h in range(heads):
        xs = x[:, h * d_head:(h + 1) * d_head]
        for i in range(length):
            a = [table[min(max(j - i, -k), k) + k] for j in range(length)]
            e = torch.stack([xs[i] @ (xs[j] + a[j]) for j in range(length)]) / math.sqrt(d_head)
            alpha = torch.softmax(e, dim=0)
            out[i, h * d_head:(h + 1) * d_head] += sum(alpha[j] * (xs[j] + a[j]) for j in range(length))
    return out


def test_encoder_free_relative_pe_is_shaw_eq_3_4_over_the_embeddings_by_hand():
    enc = build("xl_encoder_free", xl_encoder_free_pe="relative", xl_enc_max_relative_positions=2).encoder
    table = enc.relative.relative_positions_embeddings.weight
    assert table.shape == (2 * 2 + 1, 16 // 4)  # 2k + 1 rows of d_model / heads
    src, src_len = batch()
    out, _, _ = enc(src, src_len)
    x = embed_words(enc.embeddings, src)
    with torch.no_grad():
        for b, n in enumerate(src_len.tolist()):  # sentence 2: its padded keys masked
            assert torch.allclose(out[b, :n], _relative_by_hand(x[b, :n], table, 4, 2, n), atol=1e-5)
            # non-vacuous: without the relative term (a = 0) the same attention gives another output
            assert not torch.allclose(out[b, :n], _relative_by_hand(x[b, :n], torch.zeros_like(table), 4, 2, n), atol=1e-3)


def test_encoder_free_relative_pe_tells_word_orders_apart_where_none_cannot():
    """Reversing a sentence reverses the output of a bag of words (``none``); relative PE sees the order."""
    src = torch.tensor([[5, 6, 7, 8, 9]])[:, :, None]
    rev, src_len = src.flip(1), torch.tensor([5])
    for pe, invariant in (("none", True), ("relative", False)):
        enc = build("xl_encoder_free", xl_encoder_free_pe=pe).encoder
        with torch.no_grad():
            same = torch.allclose(enc(src, src_len)[0].flip(1), enc(rev, src_len)[0], atol=1e-5)
        assert same is invariant, pe


def test_encoder_free_relative_pe_checks_its_options():
    from tests.test_encoders import model_opt
    from onmt_xl.opennmt.encoders import encoder_free

    with pytest.raises(ValueError, match="xl_enc_max_relative_positions must be > 0"):
        encoder_free.validate(model_opt(encoder_type="xl_encoder_free", xl_encoder_free_pe="relative",
                                        xl_enc_max_relative_positions=0))


def test_baseline_parameter_counts():
    def count(model):
        return sum(p.numel() for p in model.parameters())

    base = count(build("transformer"))  # 2 encoder layers, d_model 16
    assert count(build("xl_disan")) == base + 2 * 3 * 16
    assert count(build("xl_disan", xl_disan_fusion="none")) == base
    assert count(build("xl_reordering_embedding")) == base + 2 * 3 * 16 * 16
    assert count(build("xl_additional_pe")) == base
    layers = sum(p.numel() for p in build("transformer").encoder.transformer.parameters()) + 2 * 16
    assert count(build("xl_encoder_free", xl_encoder_free_pe="absolute")) == base - layers
    assert count(build("xl_encoder_free", xl_encoder_free_pe="inxl")) == base - layers + 4 * 16
    # relative PE: one table of 2k + 1 rows of d_model / heads (k = 16 by default, 4 heads), no projection
    assert count(build("xl_encoder_free", xl_encoder_free_pe="relative")) == base - layers + 33 * 4


def test_decoder_res_step_by_step_equals_full_sequence():
    """Beam search decodes one step at a time with caches: it must see exactly the training-time layer."""
    model = build("transformer", decoder_type="xl_reordering_embedding")
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
    re = build("transformer", decoder_type="xl_reordering_embedding")
    n = sum(p.numel() for p in re.parameters()) - sum(p.numel() for p in stock.parameters())
    assert n == 1 * 3 * 16 * 16  # one decoder layer, 3 d x d matrices (Eq. 6)
    assert all(hasattr(layer, "penalty") for layer in re.decoder.transformer_layers)


def test_reordered_position_predictor_eq5_by_hand():
    from onmt_xl.core.modules.explicit_reordering import ReorderedPositionPredictor

    p = ReorderedPositionPredictor(3)
    with torch.no_grad():
        p.W.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]))
        p.v.weight.copy_(torch.tensor([[1.0, -1.0, 0.5]]))
    h = [[0.5, 0.25, -1.0], [2.0, 0.0, 1.0]]
    want = []
    for row in h:  # B^n reads H^n normalised (post-norm's layer output)
        n = _ln(row)
        z = math.tanh(n[0]) - math.tanh(2 * n[1]) + 0.5 * math.tanh(n[2])  # v . tanh(W LN(h))
        want.append(4 / (1 + math.exp(-z)))  # (J - 1) sigmoid, J = 5
    got = p(torch.tensor([h]), torch.tensor([5]))
    assert got[0].tolist() == pytest.approx(want, abs=1e-5)
    assert torch.allclose(p(10 * torch.tensor([h]), torch.tensor([5])), got, atol=1e-5)  # the stream's scale does not reach B


def test_gaussian_window_pe_eq6_by_hand():
    from onmt_xl.core.modules.explicit_reordering import gaussian_window_pe

    pe = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    b = torch.tensor([[1.2, 1.5, 0.0]])
    pr = gaussian_window_pe(b, pe, window=0.5)  # sigma = 0.25: exp(-(s - b)^2 / 0.5)
    assert pr[0, 0].tolist() == pytest.approx([0.0, math.exp(-0.04 / 0.5)], abs=1e-6)  # only s = 1 in [0.7, 1.7]
    w = math.exp(-0.25 / 0.5)  # s = 1 and s = 2 both at distance 0.5
    assert pr[0, 1].tolist() == pytest.approx([2 * w, w + 2 * w], abs=1e-6)
    assert pr[0, 2].tolist() == pytest.approx([1.0, 0.0], abs=1e-6)


def test_soft_window_pe_by_hand():
    from onmt_xl.core.modules.explicit_reordering import soft_window_pe

    pe = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [5.0, 5.0]])
    b = torch.tensor([[1.2, 0.0, 0.0], [0.5, 1.0, 1.0]])
    got = soft_window_pe(b, pe, torch.tensor([3, 2]), window=0.5)  # sigma = 0.25: weights exp(-(s - b)^2 / 0.5)
    w = [math.exp(-((s - 1.2) ** 2) / 0.5) for s in range(3)]  # first sentence: s = 0, 1, 2 (s = 3 is past J)
    want = [sum(wi * pe[s, k].item() for s, wi in enumerate(w)) / sum(w) for k in range(2)]
    assert got[0, 0].tolist() == pytest.approx(want, abs=1e-6)
    assert got[1, 0].tolist() == pytest.approx([0.5, 0.5], abs=1e-6)  # J = 2, b = 0.5: s = 0 and 1 equally


def _loss_gradient(kind, b_values, pos_xl, length=8):
    from onmt_xl.core.modules.explicit_reordering import gaussian_window_pe, reordering_loss

    pe = sinusoid(torch.arange(length), 16)
    b = torch.tensor([b_values], requires_grad=True)
    pos, valid, src_len = torch.tensor([pos_xl]), torch.ones(1, len(b_values), dtype=torch.bool), torch.tensor([length])
    reordering_loss(kind, b, gaussian_window_pe(b, pe, 0.5), pe, pos, src_len, valid, 0.5, "SinusoidalInterleaved").backward()
    return b.grad[0]


def test_literal_eq9_gives_the_predicted_positions_no_gradient():
    # -xl_reordering_loss literal: with D = 0.5 at most one integer s lies in [b - D, b + D], pr_j = w·pe_s and
    # the cosine of Eq. 9 ignores w (the deviation the default loss exists for)
    assert _loss_gradient("literal", [1.2, 3.9, 6.3], [5, 0, 2]).abs().max() < 1e-6


@pytest.mark.parametrize("kind", ["soft", "position"])
def test_reordering_loss_pulls_each_predicted_position_towards_its_oracle(kind):
    b, r = [1.2, 3.9, 6.3, 2.6], [2, 3, 5, 3]
    grad = _loss_gradient(kind, b, r)
    # gradient descent moves b_j towards r_j: the gradient has the sign of b_j - r_j
    assert [math.copysign(1, g) for g in grad.tolist()] == [math.copysign(1, bj - rj) for bj, rj in zip(b, r)]
    if kind == "position":  # d/db ((b - r) / (J - 1))^2 = 2 (b - r) / (J - 1)^2, J = 8
        assert grad.tolist() == pytest.approx([2 * (bj - rj) / 49 for bj, rj in zip(b, r)], abs=1e-6)


@pytest.mark.parametrize("kind, halves", [("soft", True), ("position", True), ("literal", False)])
def test_minimising_the_reordering_loss_alone_halves_the_distance_to_the_oracle(kind, halves):
    """On a toy batch, 200 Adam steps on the reordering loss alone (no translation loss) halve ||B^N - R||
    for the default loss forms; the literal Eq. 9 leaves B where it starts."""
    model = build("xl_exgre", xl_reordering_loss=kind)
    enc = model.encoder.train()
    src, src_len = batch(REVERSED)
    r = REVERSED.float() * (torch.arange(5)[None, :] < src_len[:, None])

    def distance():
        enc(src, src_len)
        valid = torch.arange(5)[None, :] < src_len[:, None]
        return float(torch.linalg.vector_norm((enc.predicted_positions.detach() - r) * valid))

    start = distance()
    optim = torch.optim.Adam(enc.parameters(), lr=1e-2)
    for _ in range(200):
        optim.zero_grad()
        enc(src, src_len)
        enc.reordering_loss.backward()
        optim.step()
    end = distance()
    assert (end <= start / 2) == halves, (start, end)
    assert start > 1.0


def test_reordering_fusion_gate_eq10_11_by_hand():
    from onmt_xl.core.modules.explicit_reordering import ReorderingFusionGate

    gate = ReorderingFusionGate(3)
    with torch.no_grad():
        gate.U_g.weight.copy_(torch.tensor([[1.0, 0.0, 0.5]]))
        gate.W_g.weight.copy_(torch.tensor([[0.0, 1.0, -1.0]]))
    h, h_bar = [1.0, 2.0, 0.0], [3.0, -1.0, 0.5]
    a, b = _ln(h), _ln(h_bar)  # g reads the post-norm states, normalised
    g = 1 / (1 + math.exp(-(a[0] + 0.5 * a[2] + b[1] - b[2])))
    got = gate(torch.tensor([h]), torch.tensor([h_bar]))
    assert got[0].tolist() == pytest.approx([g * x + (1 - g) * y for x, y in zip(h_bar, h)], abs=1e-5)
    assert torch.allclose(gate(10 * torch.tensor([h]), 10 * torch.tensor([h_bar])), 10 * got, atol=1e-4)


@pytest.mark.parametrize("encoder_type", ["xl_exgre", "xl_refsr"])
def test_exgre_positions_only_feed_the_loss(encoder_type):
    from onmt_xl.core.modules.explicit_reordering import soft_window_pe

    model = build(encoder_type, xl_reordering_loss="soft")
    enc = model.encoder
    plain, _, _ = enc(*batch())
    assert enc.reordering_loss is None
    with_r, _, _ = enc(*batch(REVERSED))
    assert torch.equal(plain, with_r)  # r_j never changes the representation: inference needs no alignment
    sim, words = enc.similarity
    assert words.item() == 8
    # Sim (Eq. 12): with D = 0.5 Eq. 6 keeps one position, pr_j = w·PE_round(b_j), and the cosine ignores w > 0;
    # PE (Eq. 1, d = 16) and the cosine by hand
    def pe(p):
        return [f(p * 10000 ** (-2 * i / 16)) for i in range(8) for f in (math.sin, math.cos)]

    def cosine(u, v):
        return sum(a * c for a, c in zip(u, v)) / math.sqrt(sum(a * a for a in u) * sum(c * c for c in v))

    b = enc.predicted_positions.tolist()
    want = sum(cosine(pe(round(b[s][j])), pe(REVERSED[s, j].item())) for s, n in enumerate((5, 3)) for j in range(n))
    assert sim.item() == pytest.approx(want, abs=1e-5)
    # the default loss: lambda * sum_j (1 - cos(soft selection around b_j, re_j)) over the 8 words
    b, src_len = enc.predicted_positions, torch.tensor([5, 3])
    soft = soft_window_pe(b, sinusoid(torch.arange(5), 16), src_len, 0.5)
    cos = torch.nn.functional.cosine_similarity(soft, sinusoid(REVERSED, 16), dim=-1)
    valid = torch.arange(5)[None, :] < src_len[:, None]
    assert enc.reordering_loss.item() == pytest.approx(0.6 * float(((1 - cos) * valid).sum()), rel=1e-5)
    enc.reordering_loss.backward()
    # the loss trains the last position predictor: its gradient is the loss' derivative, here along a fixed random
    # direction D by central differences (Richardson-extrapolated, float32), and that derivative is not small
    weight = enc.predictors[-1].W.weight
    direction, start = torch.randn(weight.shape, generator=torch.Generator().manual_seed(0)), weight.detach().clone()

    def loss_at(t):
        with torch.no_grad():
            weight.copy_(start + t * direction)
            enc(*batch(REVERSED))
            weight.copy_(start)
        return enc.reordering_loss.item()

    def central(eps):
        return (loss_at(eps) - loss_at(-eps)) / (2 * eps)

    derivative = (4 * central(0.01) - central(0.02)) / 3
    assert abs(derivative) > 0.01
    assert (weight.grad * direction).sum().item() == pytest.approx(derivative, rel=1e-2)


def test_encoder_loss_is_added_in_training_only():
    from types import SimpleNamespace

    from onmt_xl.opennmt.seams.loss import add_encoder_loss, track_encoder

    class LossCompute:  # a stand-in: add_encoder_loss reads nothing of it
        pass

    encoder = SimpleNamespace(reordering_loss=torch.tensor(1.5), training=True, similarity=(torch.tensor(3.0), 4))
    lc = LossCompute()
    track_encoder(lc, encoder, 1)
    stock = lambda self, batch, output, attns, trunc_start=0, trunc_size=None: (torch.tensor(10.0), "stats")  # noqa: E731
    loss, stats = add_encoder_loss(stock, lc, None, None, None)
    assert loss.item() == 11.5 and stats == "stats"
    encoder.training = False
    assert add_encoder_loss(stock, lc, None, None, None)[0].item() == 10.0


@pytest.mark.parametrize("system", ["lstm", "encoder_free_relative"])
def test_tab4_systems_train_and_translate_through_the_stock_commands(tmp_path, system):
    """A few CPU steps of ``onmt_train`` on the system's generated config, then ``onmt_translate``: the LSTM's config
    (which keeps the Transformer-only lines, heads and transformer_ff) and relative PE work end to end."""
    import subprocess

    from tests.conftest import run_env
    from tests.helpers import stock_cli, tiny_model_workdir

    def cli(name, *args):
        proc = subprocess.run([stock_cli(name), *map(str, args)], capture_output=True, text=True, env=run_env())
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    cfg = tiny_model_workdir(tmp_path, cli, system, enc_layers=2, dec_layers=2, train_steps=3, valid_steps=3,
                             save_checkpoint_steps=3)
    log = cli("onmt_train", "-config", cfg)
    model = tmp_path / "models" / f"{system}_step_3.pt"
    checkpoint = torch.load(model, map_location="cpu", weights_only=False)
    names = list(checkpoint["model"])
    if system == "lstm":
        assert any("rnn.layers.1.weight_hh" in n for n in names) and not any("self_attn" in n for n in names)
    else:
        assert "encoder.relative.relative_positions_embeddings.weight" in names
    ppl = [float(line.split("ppl:")[1].split(";")[0]) for line in (log.stdout + log.stderr).splitlines() if "ppl:" in line]
    assert ppl and all(math.isfinite(p) for p in ppl)
    out = tmp_path / "hyp.txt"
    cli("onmt_translate", "-model", model, "-src", tmp_path / "data" / "valid.src", "-output", out,
        "-beam_size", "2", "-max_length", "8")
    assert len(out.read_text().splitlines()) == 20
