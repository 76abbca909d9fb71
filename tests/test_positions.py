import math

import pytest
import torch
from onmt.modules.embeddings import PositionalEncoding

from onmt_xl.core.positions import sinusoid


@pytest.mark.parametrize("kind", ["SinusoidalInterleaved", "SinusoidalConcat"])
def test_sinusoid_equals_opennmt_buffer(kind):
    stock = PositionalEncoding(64, kind, max_len=200).pe[:, 0]
    assert torch.equal(sinusoid(torch.arange(200), 64, kind), stock)


def test_sinusoid_eq1_by_hand():
    # Eq. 1 with d_model = 4: [sin(p), cos(p), sin(p / 100), cos(p / 100)]
    pe = sinusoid(torch.tensor([[0, 3], [7, 1]]), 4)
    assert pe.shape == (2, 2, 4)
    for p, row in ((0, pe[0, 0]), (3, pe[0, 1]), (7, pe[1, 0]), (1, pe[1, 1])):
        expected = [math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)]
        assert row.tolist() == pytest.approx(expected, abs=1e-6)


def test_sinusoid_rejects_odd_dim_and_unknown_kind():
    with pytest.raises(ValueError, match="even"):
        sinusoid(torch.arange(3), 5)
    with pytest.raises(ValueError, match="unknown position encoding"):
        sinusoid(torch.arange(3), 4, "Learned")


def test_integer_positions_come_from_the_cached_table_with_the_formula_values():
    from onmt_xl.core import positions

    pos = torch.tensor([[3, 0, 700], [5, 5, 1]])  # 700 grows the table past its first size
    for kind in ("SinusoidalInterleaved", "SinusoidalConcat"):
        expected = positions._sinusoid(pos, 64, kind)
        assert torch.allclose(positions.sinusoid(pos, 64, kind), expected, atol=1e-6, rtol=0)
        assert positions.sinusoid_table(1, 64, kind).size(0) >= 701
    # float positions (ExGRE's predicted b_j) still use the formula: Eq. 1 by hand, d = 8 (frequencies 1, 0.1, 0.01, 0.001)
    frac = torch.tensor([0.5, 2.25])
    for p, row in zip((0.5, 2.25), positions.sinusoid(frac, 8)):
        want = [f(p * w) for w in (1, 0.1, 0.01, 0.001) for f in (math.sin, math.cos)]
        assert row.tolist() == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("kind", ["SinusoidalInterleaved", "SinusoidalConcat"])
def test_absolute_pe_is_the_sinusoid_of_arange(kind):
    from onmt_xl.core.positions import absolute_pe

    for length in (1, 7, 300):  # 300 grows the cached table
        assert torch.equal(absolute_pe(length, 16, kind), sinusoid(torch.arange(length), 16, kind))


def test_positions_off_the_cpu_never_read_a_value_back_to_the_host():
    """On a GPU, reading ``max(pos)`` to pick table rows waits for the device on every forward pass. The
    meta device holds no values, so any such read raises there: these calls must only build tensors."""
    from onmt_xl.core.positions import absolute_pe

    pos = torch.tensor([[3, 0, 2], [1, 2, 0]], device="meta")
    assert sinusoid(pos, 16).shape == (2, 3, 16) and sinusoid(pos, 16).device.type == "meta"
    assert absolute_pe(5, 16, device=torch.device("meta")).shape == (5, 16)


def test_xl_encoder_positions_on_the_meta_device():
    """The XL encoder's ``PE_abs`` and ``PE_XL`` (Eq. 1, 6, 7) are built without a host read of the positions."""
    from argparse import Namespace

    from onmt_xl.opennmt.encoders.xl_transformer import XLTransformerEncoder

    enc = Namespace(embeddings=Namespace(embedding_size=16), pe_type="SinusoidalInterleaved", inxl=None)
    pe_abs, pe_xl = XLTransformerEncoder.positions(enc, torch.tensor([[2, 0, 1]], device="meta"))
    assert pe_abs.shape == pe_xl.shape == (1, 3, 16)
