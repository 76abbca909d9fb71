"""Two equations that only stored translations used to catch, pinned here against hand-written references
(issue 40, item 4):

* the encoder-only Relative PE baseline (Shaw et al. 2018; Ding et al. 2020, Tab. 1) reads the word embeddings
  alone: no absolute PE (Ding et al. 2020, Eq. 1) is added to the encoder's input;
* the decoder's reordering embedding (Chen et al. 2019, Eq. 6-9) enters the encoder-decoder attention's
  query, ``C^n = LN(H~^n + PE · PP^n)``; dropping it (``c = h_tilde``) must fail.

The modules are built from their Python classes and stock OpenNMT options only (no registered names, no
plug-in option names). Every expected value is computed here from the modules' weights, never by the code
under test: float64 loops over heads and positions, the sinusoid written out from Eq. 1.
"""

import math

import torch
from onmt import opts
from onmt.modules import Embeddings
from onmt.utils.parse import ArgumentParser

from onmt_xl.opennmt.decoders.reordering_embedding import ReorderingEmbeddingDecoder
from onmt_xl.opennmt.encoders.xl_transformer import RelativeTransformerEncoder

D, HEADS, FF, VOCAB, PAD = 8, 2, 16, 14, 1
ATOL = 1e-5


# --- hand-written pieces ----------------------------------------------------------------------------------


def _pe_by_hand(length, d=D):
    """Ding et al. 2020 Eq. 1 (Vaswani et al.'s sinusoid, OpenNMT's default ``SinusoidalInterleaved``):
    ``PE(pos, 2i) = sin(pos / 10000^(2i/d))``, ``PE(pos, 2i+1) = cos(pos / 10000^(2i/d))``. ``(length, d)``."""
    pe = torch.zeros(length, d, dtype=torch.float64)
    for pos in range(length):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe


def _w(linear):
    return linear.weight.detach().double()


def _b(linear):
    return 0.0 if linear.bias is None else linear.bias.detach().double()


def _lin(linear, x):
    return x @ _w(linear).T + _b(linear)


def _ln(x, norm=None, eps=1e-6):
    """LayerNorm over the last dimension; with ``norm`` (an ``nn.LayerNorm``) its gain and bias."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps)
    if norm is not None:
        y = y * norm.weight.detach().double() + norm.bias.detach().double()
    return y


def _ffn(ff, x):
    """OpenNMT's pre-norm position-wise feed-forward block with its residual: ``x + W2 relu(W1 LN(x))``."""
    return x + _lin(ff.w_2, torch.relu(_lin(ff.w_1, _ln(x, ff.layer_norm))))


def _attention(attn, queries, keys, allowed, rel=None):
    """Multi-head attention of one sentence, head by head and query by query.

    ``queries`` ``(Tq, d)``, ``keys`` ``(Tk, d)`` (keys and values), ``allowed(i, j)``: may query i read key j.
    ``rel``: ``(k, table)`` for Shaw et al. (2018) Eq. 3-4 with ``a^K_ij = a^V_ij = table[clip(j - i, -k, k) + k]``
    (OpenNMT shares one table between keys and values): ``e_ij = q_i (k_j + a_ij)^T / sqrt(d_z)`` and
    ``z_i = sum_j alpha_ij (v_j + a_ij)``.
    """
    dph = D // HEADS
    q, k, v = _lin(attn.linear_query, queries), _lin(attn.linear_keys, keys), _lin(attn.linear_values, keys)
    out = torch.zeros(queries.size(0), D, dtype=torch.float64)
    for h in range(HEADS):
        cols = slice(h * dph, (h + 1) * dph)
        for i in range(queries.size(0)):
            scores, values = [], []
            for j in range(keys.size(0)):
                key, value = k[j, cols], v[j, cols]
                if rel is not None:
                    clip, table = rel
                    a = table[max(-clip, min(clip, j - i)) + clip]
                    key, value = key + a, value + a
                if allowed(i, j):
                    scores.append(float(q[i, cols] @ key) / math.sqrt(dph))
                    values.append(value)
            alpha = torch.softmax(torch.tensor(scores, dtype=torch.float64), 0)
            out[i, cols] = sum(a * val for a, val in zip(alpha, values))
    return _lin(attn.final_linear, out)


def _randomise(module, seed, std=0.5):
    torch.manual_seed(seed)
    for p in module.parameters():
        torch.nn.init.normal_(p, std=std)
    return module.eval()


def _embeddings():
    """Stock OpenNMT embeddings *with* absolute PE, as the relative_pe config builds them (``position_encoding:
    true``, shared by both sides; the decoder needs it)."""
    return Embeddings(D, VOCAB, PAD, position_encoding=True, position_encoding_type="SinusoidalInterleaved", dropout=0.0)


# --- Relative PE baseline (Shaw et al. 2018), onmt_xl/opennmt/encoders/xl_transformer.py ----------------------------

CLIP = 2  # the clipping distance k: sentences below are longer than k + 1, so the clipping is exercised


def _relative_encoder(seed=0):
    # the stock constructor with what RelativeTransformerEncoder.from_opt passes: max_relative_positions = k
    enc = RelativeTransformerEncoder(1, D, HEADS, FF, 0.0, 0.0, _embeddings(), CLIP, 0)
    return _randomise(enc, seed)


SRC = torch.tensor([[3, 4, 5, 6, 7, 8], [9, 10, 11, 12, PAD, PAD]])
SRC_LEN = torch.tensor([6, 4])


def _relative_encoder_by_hand(enc, src, src_len, absolute_pe=0):
    """One pre-norm layer, dropout 0, per sentence:

    ``X = sqrt(d) · E[src]`` (OpenNMT's embedding scale; ``absolute_pe`` times Eq. 1's ``PE`` added: 0 is the
    Relative PE baseline, which docs/design.md (Relative PE) and the class docstring specify: "no absolute PE in
    the encoder"); ``H = X + RelAttn(LN(X))`` (Shaw et al. 2018, Eq. 3-4, padded keys masked);
    ``out = LN(H + FFN(H))``. Returns (layer input ``X``, encoder output), each ``(batch, len, d)``.
    """
    table = enc.transformer[0].self_attn.relative_positions_embeddings.weight.detach().double()
    emb = enc.embeddings.word_lut.weight.detach().double()
    layer = enc.transformer[0]
    xs, outs = [], []
    for sent, n in zip(src, src_len):
        x = math.sqrt(D) * emb[sent] + absolute_pe * _pe_by_hand(sent.size(0))
        normed = _ln(x, layer.layer_norm)
        h = x + _attention(layer.self_attn, normed, normed, lambda i, j: j < n, rel=(CLIP, table))
        xs.append(x)
        outs.append(_ln(_ffn(layer.feed_forward, h), enc.layer_norm))
    return torch.stack(xs), torch.stack(outs)


class TestRelativePE:
    """``xl_relative``: Shaw et al. (2018) relative positions in the encoder, with *no* absolute PE (Ding et al.
    2020 Eq. 1) on the encoder's input, although the shared embeddings carry OpenNMT's PE for the decoder."""

    def _run(self, enc):
        seen = {}

        def record(module, args):
            seen["x"] = args[0].detach()  # returns None: the input goes on unchanged

        hook = enc.transformer[0].register_forward_pre_hook(record)
        try:
            with torch.no_grad():
                out, _, _ = enc(SRC[:, :, None], SRC_LEN)
        finally:
            hook.remove()
        return seen["x"].double(), out.double()

    def test_first_layer_input_is_the_scaled_word_embedding_without_absolute_pe(self):
        enc = _relative_encoder()
        x, _ = self._run(enc)
        want, _ = _relative_encoder_by_hand(enc, SRC, SRC_LEN)
        torch.testing.assert_close(x, want, atol=ATOL, rtol=0)
        # the test has power: the stock input (with Eq. 1's PE once or twice) is far from what the encoder reads
        for times in (1, 2):
            with_pe, _ = _relative_encoder_by_hand(enc, SRC, SRC_LEN, absolute_pe=times)
            assert (x - with_pe).abs().max() > 0.5

    def test_one_layer_encoder_output_by_hand(self):
        enc = _relative_encoder(seed=1)
        _, out = self._run(enc)
        _, want = _relative_encoder_by_hand(enc, SRC, SRC_LEN)
        # padded query rows are computed (over unpadded keys) like the others; compare them too
        torch.testing.assert_close(out, want, atol=ATOL, rtol=0)
        for times in (1, 2):
            _, with_pe = _relative_encoder_by_hand(enc, SRC, SRC_LEN, absolute_pe=times)
            assert (out - with_pe).abs().max() > 1e-2


# --- Decoder reordering embeddings (Chen et al. 2019), onmt_xl/opennmt/decoders/reordering_embedding.py -------------


def _decoder_opt():
    """Stock ``onmt_train`` options only (none of the plug-in's), for one tiny pre-norm layer without dropout."""
    parser = ArgumentParser()
    opts.train_opts(parser)
    opt = parser.parse_args(["-data", "{}", "-src_vocab", "unused"])
    for key, value in dict(
        dec_layers=1, dec_hid_size=D, enc_hid_size=D, hidden_size=D, word_vec_size=D, heads=HEADS,
        transformer_ff=FF, dropout=[0.0], attention_dropout=[0.0], self_attn_type="scaled-dot",
        position_encoding=True, position_encoding_type="SinusoidalInterleaved", copy_attn=False,
        max_relative_positions=0, relative_positions_buckets=0, parallel_residual=False, layer_norm="standard",
    ).items():
        setattr(opt, key, value)
    return opt


def _re_decoder(seed=0):
    return _randomise(ReorderingEmbeddingDecoder.from_opt(_decoder_opt(), _embeddings()), seed)


TGT = torch.tensor([[2, 5, 6, 7, 8], [2, 9, 10, 11, 12]])
DEC_SRC_LEN = torch.tensor([4, 3])


def _re_decoder_by_hand(dec, tgt, enc_out, src_len, reordering=True):
    """One pre-norm decoder layer of Chen et al. (2019) Eq. 9 with the reordering embedding of Eq. 6-8, dropout 0:

    ``H^0 = sqrt(d) · E[tgt] + PE`` (OpenNMT's decoder embedding, Eq. 1's ``PE``);
    ``H~ = H^0 + SelfAttn(LN_1(H^0))`` (Eq. 9, first line; causal mask);
    ``PP = sigmoid(V · tanh(W · LN(H^0) + W~ · LN(H~)))`` (Eq. 6; ``LN`` without gain and bias: the documented
    pre-norm reading of the post-norm paper, whose ``H^{n-1}`` and ``H~^n`` are LayerNorm outputs);
    ``RE = PE · PP`` (Eq. 7, element-wise, ``PE`` of the target positions 0 … T-1);
    ``C = H~ + RE`` (Eq. 8; its ``LN`` is the pre-norm ``LN_2`` in front of the encoder-decoder attention);
    ``Z = H~ + CtxAttn(LN_2(C), enc_out)`` (``H~``, not ``C``, on the residual path, Eq. 9 last line);
    ``H^1 = Z + FFN(LN_3(Z))``; output ``LN_final(H^1)``.
    ``reordering=False`` is the mutant ``C = H~``. ``(batch, T, d)``.
    """
    layer = dec.transformer_layers[0]
    pen = layer.penalty
    emb = dec.embeddings.word_lut.weight.detach().double()
    outs = []
    for sent, enc_sent, n in zip(tgt, enc_out.double(), src_len):
        pe = _pe_by_hand(sent.size(0))
        h0 = math.sqrt(D) * emb[sent] + pe
        normed = _ln(h0, layer.layer_norm_1)
        h_tilde = h0 + _attention(layer.self_attn, normed, normed, lambda i, j: j <= i)
        pp = torch.sigmoid(_lin(pen.V, torch.tanh(_lin(pen.W, _ln(h0)) + _lin(pen.W_tilde, _ln(h_tilde)))))
        c = h_tilde + pe * pp if reordering else h_tilde
        z = h_tilde + _attention(layer.context_attn, _ln(c, layer.layer_norm_2), enc_sent, lambda i, j: j < n)
        outs.append(_ln(_ffn(layer.feed_forward, z), dec.layer_norm))
    return torch.stack(outs)


class TestDecoderReorderingEmbedding:
    """Chen et al. (2019) "Decoder REs": Eq. 6-8 inside each decoder layer, Eq. 9's residual on ``H~``."""

    def _run(self, dec, enc_out):
        src = torch.full((enc_out.size(0), enc_out.size(1), 1), 3)
        dec.init_state(src, enc_out, None)
        with torch.no_grad():
            out, _ = dec(TGT[:, :, None], enc_out, src_len=DEC_SRC_LEN)
        return out.double()

    def test_decoder_layer_by_hand(self):
        dec = _re_decoder()
        torch.manual_seed(5)
        enc_out = torch.randn(2, 4, D)
        out = self._run(dec, enc_out)
        torch.testing.assert_close(out, _re_decoder_by_hand(dec, TGT, enc_out, DEC_SRC_LEN), atol=ATOL, rtol=0)
        # the test has power: dropping the reordering term (c = h_tilde) moves every target position
        dropped = _re_decoder_by_hand(dec, TGT, enc_out, DEC_SRC_LEN, reordering=False)
        assert ((out - dropped).abs().amax(-1) > 1e-3).all()

    def test_penalty_and_pe_reach_the_query_only(self):
        # Eq. 7-8: RE is PE scaled element-wise by PP in (0, 1): with V = 0, PP = 1/2 everywhere and C = H~ + PE/2.
        # Eq. 9: H~ (not C) is the residual, so with the encoder-decoder attention's output projection at zero
        # the layer is the stock one whatever PP is.
        dec = _re_decoder(seed=3)
        torch.manual_seed(6)
        enc_out = torch.randn(2, 4, D)
        with torch.no_grad():
            dec.transformer_layers[0].penalty.V.weight.zero_()
        out = self._run(dec, enc_out)
        torch.testing.assert_close(out, _re_decoder_by_hand(dec, TGT, enc_out, DEC_SRC_LEN), atol=ATOL, rtol=0)
        layer = dec.transformer_layers[0]
        with torch.no_grad():
            layer.context_attn.final_linear.weight.zero_()
            if layer.context_attn.final_linear.bias is not None:
                layer.context_attn.final_linear.bias.zero_()
        out = self._run(dec, enc_out)
        torch.testing.assert_close(
            out, _re_decoder_by_hand(dec, TGT, enc_out, DEC_SRC_LEN, reordering=False), atol=ATOL, rtol=0
        )
