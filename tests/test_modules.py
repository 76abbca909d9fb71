import math

import pytest
import torch
from onmt.modules.multi_headed_attn import MultiHeadedAttention

from onmt_xl.core.modules.headxl import make_headxl_attention
from onmt_xl.core.modules.inxl import InXLPositionFusion
from onmt_xl.core.positions import sinusoid


def test_inxl_block_fusion_by_hand():
    # d_model = 4: two frequencies, each a 2x2 block acting on its (sin, cos) pair (Eq. 7).
    fusion = InXLPositionFusion(4, "block")
    with torch.no_grad():
        fusion.U.copy_(torch.tensor([[[1.0, 2.0], [0.0, 1.0]], [[0.5, 0.0], [0.0, 0.5]]]))
        fusion.V.copy_(torch.tensor([[[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, -1.0]]]))
    pe_abs = torch.tensor([[[0.1, 0.2, 0.3, 0.4]]])
    pe_xl = torch.tensor([[[0.5, 0.6, 0.7, 0.8]]])
    # block 0: [0.1, 0.2] @ [[1, 2], [0, 1]] = [0.1, 0.4]; [0.5, 0.6] @ [[0, 1], [1, 0]] = [0.6, 0.5]
    # block 1: [0.3, 0.4] * 0.5 = [0.15, 0.2];           [0.7, 0.8] @ diag(1, -1) = [0.7, -0.8]
    expected = [math.tanh(v) for v in (0.7, 0.9, 0.85, -0.6)]
    assert fusion(pe_abs, pe_xl)[0, 0].tolist() == pytest.approx(expected, abs=1e-6)


def test_inxl_diagonal_and_full_by_hand():
    pe_abs = torch.tensor([[1.0, -1.0]])
    pe_xl = torch.tensor([[0.5, 2.0]])
    diag = InXLPositionFusion(2, "diagonal")
    with torch.no_grad():
        diag.U.copy_(torch.tensor([2.0, 1.0]))
        diag.V.copy_(torch.tensor([1.0, 0.5]))
    assert diag(pe_abs, pe_xl)[0].tolist() == pytest.approx([math.tanh(2.5), math.tanh(0.0)], abs=1e-6)
    full = InXLPositionFusion(2, "full")
    with torch.no_grad():
        full.U.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        full.V.copy_(torch.eye(2))
    # [1, -1] @ U = [-2, -2]; + [0.5, 2]
    assert full(pe_abs, pe_xl)[0].tolist() == pytest.approx([math.tanh(-1.5), math.tanh(0.0)], abs=1e-6)


@pytest.mark.parametrize("fusion,count", [("block", 4 * 1024), ("diagonal", 2 * 1024), ("full", 2 * 1024 * 1024)])
def test_inxl_parameter_counts_at_transformer_big(fusion, count):
    assert sum(p.numel() for p in InXLPositionFusion(1024, fusion).parameters()) == count


@pytest.mark.parametrize("fusion", ["block", "diagonal", "full"])
def test_inxl_absolute_start_is_the_absolute_pe_whatever_the_xl_positions(fusion):
    """Start U = I, V = 0: PE_IN-XL = tanh(PE_abs), which keeps every frequency's order information."""
    fusion = InXLPositionFusion(8, fusion, start="absolute")
    pe_abs, pe_xl = sinusoid(torch.arange(6), 8), sinusoid(torch.tensor([5, 0, 3, 3, 1, 2]), 8)
    assert torch.allclose(fusion(pe_abs, pe_xl), torch.tanh(pe_abs), atol=1e-6)
    assert torch.allclose(fusion(pe_abs, torch.zeros_like(pe_xl)), torch.tanh(pe_abs), atol=1e-6)


@pytest.mark.parametrize("fusion", ["block", "diagonal", "full"])
def test_inxl_identity_start_is_the_plain_sum(fusion):
    fusion = InXLPositionFusion(8, fusion, start="identity")
    a, b = torch.randn(3, 8), torch.randn(3, 8)
    assert torch.allclose(fusion(a, b), torch.tanh(a + b), atol=1e-6)


def test_inxl_absolute_start_keeps_the_gradient_of_v():
    fusion = InXLPositionFusion(8, "block", start="absolute")
    pe_abs, pe_xl = sinusoid(torch.arange(6), 8), sinusoid(torch.tensor([5, 0, 3, 3, 1, 2]), 8)
    fusion(pe_abs, pe_xl).sum().backward()
    # d/dV[k, i, j] of sum tanh(z) at U = I, V = 0: sum over positions of pe_xl[k-th pair, i] * (1 - tanh(pe_abs)^2)[k-th pair, j]
    slope = (1 - torch.tanh(pe_abs) ** 2).unflatten(-1, (4, 2))
    want = torch.einsum("pki,pkj->kij", pe_xl.unflatten(-1, (4, 2)), slope)
    assert torch.allclose(fusion.V.grad, want, atol=1e-5) and want.abs().sum() > 1


def test_inxl_rejects_unknown_fusion():
    with pytest.raises(ValueError, match="unknown InXL fusion"):
        InXLPositionFusion(8, "lowrank")
    with pytest.raises(ValueError, match="unknown InXL start"):
        InXLPositionFusion(8, "block", start="zero")


def _attention(heads=4, dim=16, bias=False):
    attn = MultiHeadedAttention(heads, dim, dropout=0.0, attn_type="self", is_decoder=False, add_qkvbias=bias)
    torch.manual_seed(0)
    for p in attn.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return attn.eval()


@pytest.mark.parametrize("bias", [False, True])
def test_headxl_heads_read_the_right_inputs(bias):
    """Eq. 10-11: heads < τ equal stock attention on Z_XL, heads >= τ stock attention on Z_abs (with q/k/v/output
    biases too: each head keeps its own rows of the bias)."""
    stock = _attention(bias=bias)
    assert (stock.linear_query.bias is not None) == bias
    z_abs, z_xl = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    mask = torch.zeros(2, 1, 5, 5, dtype=torch.bool)
    mask[1, :, :, 3:] = True  # second sentence has 3 tokens
    # contexts per head before W_O: replace W_O by identity
    with torch.no_grad():
        stock.final_linear.weight.copy_(torch.eye(16))
    on_abs, _ = stock(z_abs, z_abs, z_abs, mask=mask)
    on_xl, _ = stock(z_xl, z_xl, z_xl, mask=mask)
    for tau in range(5):
        split = make_headxl_attention(_attention(bias=bias), tau)
        split.load_state_dict(stock.state_dict())
        packed = torch.cat((z_xl, z_abs), dim=-1)
        out, _ = split(packed, packed, packed, mask=mask)
        cut = tau * 4
        assert torch.allclose(out[..., :cut], on_xl[..., :cut], atol=1e-6)
        assert torch.allclose(out[..., cut:], on_abs[..., cut:], atol=1e-6)


def test_headxl_keeps_parameters_and_flops():
    stock = _attention()
    split = make_headxl_attention(_attention(), 2)
    assert [(n, p.shape) for n, p in split.named_parameters()] == [(n, p.shape) for n, p in stock.named_parameters()]
    # each projection is a single d x d matmul split by output rows: count multiply-adds via a hook
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.randn(1, 7, 16)
    with FlopCounterMode(display=False) as stock_flops:
        stock(x, x, x)
    packed = torch.cat((x, x), dim=-1)
    with FlopCounterMode(display=False) as split_flops:
        split(packed, packed, packed)
    assert split_flops.get_total_flops() == stock_flops.get_total_flops()


def test_headxl_validates_tau():
    with pytest.raises(ValueError, match="0 <= xl_heads <= heads"):
        make_headxl_attention(_attention(), 5)
    with pytest.raises(ValueError, match="0 <= xl_heads <= heads"):
        make_headxl_attention(_attention(), -1)
