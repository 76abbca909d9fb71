"""Every system on the fast path: SDPA on the CPU gives the stock attention's numbers, and under bf16
autocast no matrix product of any system silently runs in fp32."""

import pytest
import torch
from onmt.modules.multi_headed_attn import MultiHeadedAttention
from torch.utils._python_dispatch import TorchDispatchMode

import onmt_xl
from onmt_xl.opennmt.seams import cpu_speed
from onmt_xl.experiments.analysis import build_model
from onmt_xl.experiments.configs import ALIGNED_R, SYSTEMS, XL

onmt_xl.register()
TINY = dict(enc_layers=2, dec_layers=1, heads=4, hidden_size=16, word_vec_size=16, transformer_ff=32,
            dropout=[0.0], attention_dropout=[0.0], xl_heads=2)
VOCAB = 40


def tiny(system):
    model = build_model(system, "demo", overrides=TINY, vocab_size=VOCAB, seed=0)
    torch.manual_seed(1)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return model.train()


def inputs(system):
    g = torch.Generator().manual_seed(2)
    src_len = torch.tensor([7, 4, 6])
    ids = torch.randint(4, VOCAB, (3, 7, 1), generator=g)
    for b, n in enumerate(src_len):
        ids[b, n:] = 1  # <blank>
    tgt = torch.randint(4, VOCAB, (3, 6, 1), generator=g)
    if SYSTEMS[system].transform in (XL, ALIGNED_R):
        xl = torch.stack([torch.randperm(7, generator=g) % n for n in src_len.tolist()])
        ids = torch.cat((ids, xl[:, :, None]), -1)
    return ids, tgt, src_len


def step(model, system):
    ids, tgt, src_len = inputs(system)
    out, _ = model(ids, tgt, src_len)
    loss = model.generator(out.reshape(-1, out.size(-1))).logsumexp(-1).mean()
    loss.backward()
    return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_cpu_sdpa_gives_the_stock_attentions_numbers(monkeypatch, system):
    calls = []
    stock_sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or stock_sdpa(*a, **k))
    model = tiny(system)
    cpu_speed.use_cpu_sdpa(model)
    attention_calls = []
    for m in model.modules():
        if isinstance(m, MultiHeadedAttention) and (system != "relative_pe" or m.max_relative_positions == 0):
            m.register_forward_hook(lambda *a: attention_calls.append(1))  # relative keys keep the stock path
    fast_out, fast_grads = step(model, system)
    used_sdpa = len(calls)
    monkeypatch.setattr(cpu_speed, "sdpa_applies", lambda *a: False)
    stock_out, stock_grads = step(tiny(system), system)
    assert len(calls) == used_sdpa  # the forced stock run never called SDPA
    # every Transformer attention took SDPA; the LSTM (global attention, no MultiHeadedAttention) has none to take
    assert used_sdpa == len(attention_calls) >= (0 if system == "lstm" else 2)
    torch.testing.assert_close(fast_out, stock_out, atol=2e-5, rtol=1e-4)
    assert fast_grads.keys() == stock_grads.keys()
    for name in fast_grads:
        torch.testing.assert_close(fast_grads[name], stock_grads[name], atol=5e-5, rtol=1e-3, msg=name)


@pytest.mark.parametrize("kwargs, cached", [({"return_attn": True}, False), ({}, True)])
def test_stock_path_where_sdpa_does_not_apply(monkeypatch, kwargs, cached):
    attn = MultiHeadedAttention(4, 16, attn_type="self", self_attn_type="scaled-dot-flash").eval()
    if cached:
        attn.layer_cache = (True, {"keys": torch.tensor([]), "values": torch.tensor([])})
    monkeypatch.setattr(cpu_speed, "cpu_sdpa_attention", lambda *a: pytest.fail("SDPA path taken"))
    x = torch.randn(2, 3 if not cached else 1, 16)
    out, weights = attn(x, x, x, mask=None, **kwargs)
    assert out.shape == x.shape
    assert weights is not None  # only the stock path returns attention weights


def test_manual_self_attn_type_keeps_the_stock_path(monkeypatch):
    attn = MultiHeadedAttention(4, 16, attn_type="self", self_attn_type="scaled-dot").eval()
    monkeypatch.setattr(cpu_speed, "cpu_sdpa_attention", lambda *a: pytest.fail("SDPA path taken"))
    x = torch.randn(2, 3, 16)
    assert attn(x, x, x)[0].shape == x.shape


MATMULS = {"mm", "bmm", "addmm", "baddbmm", "addbmm", "dot", "_scaled_dot_product_flash_attention_for_cpu",
           "_scaled_dot_product_attention_math", "linear"}


class MatmulDtypes(TorchDispatchMode):
    """Records the dtypes of every matrix-product kernel that actually runs (below autocast)."""

    def __init__(self):
        super().__init__()
        self.seen = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name in MATMULS:
            dtypes = tuple(a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point())
            self.seen.setdefault(name, set()).add(dtypes)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_no_matrix_product_runs_in_fp32_under_bf16_autocast(system):
    model = tiny(system)
    ids, tgt, src_len = inputs(system)
    with MatmulDtypes() as record:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, _ = model(ids, tgt, src_len)
            loss = model.generator(out.reshape(-1, out.size(-1))).float().logsumexp(-1).mean()
        loss.backward()
    assert record.seen, "no matrix product recorded"
    fp32 = {name: d for name, dts in record.seen.items() for d in dts if torch.float32 in d}
    assert not fp32, f"{system}: fp32 matrix products under bf16 autocast: {fp32}"
    assert all(p.dtype == torch.float32 for p in model.parameters())


class Casts(TorchDispatchMode):
    """Records the shapes of the dtype casts that run (``aten._to_copy``)."""

    def __init__(self):
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.__name__.split(".")[0] == "_to_copy":
            self.shapes.append(tuple(args[0].shape))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("packed", [False, True])
def test_attention_casts_each_input_once_under_autocast(monkeypatch, packed):
    """Autocast would cast the one fp32 input of a self-attention once per projection (HeadXL's packed input
    once per slice); the SDPA path casts it once, with the same numbers as the stock path's casts."""
    from onmt_xl.core.modules.headxl import make_headxl_attention

    torch.manual_seed(0)
    attn = MultiHeadedAttention(4, 16, dropout=0.0, attn_type="self", self_attn_type="scaled-dot-flash").train()
    for param in attn.parameters():  # OpenNMT leaves them uninitialised
        torch.nn.init.normal_(param, std=0.3)
    if packed:
        make_headxl_attention(attn, 2)
    cpu_speed.use_cpu_sdpa(attn)
    x = torch.randn(2, 3, 32 if packed else 16)
    with Casts() as record, torch.autocast("cpu", dtype=torch.bfloat16):
        fast, _ = attn(x, x, x, mask=None)
    assert record.shapes.count(tuple(x.shape)) == 1
    assert (2, 3, 16) not in record.shapes or not packed  # no cast of a slice
    monkeypatch.setattr(cpu_speed, "sdpa_applies", lambda *a: False)
    with Casts() as stock_record, torch.autocast("cpu", dtype=torch.bfloat16):
        stock, _ = attn(x, x, x, mask=None)
    assert len(stock_record.shapes) > len(record.shapes)
    torch.testing.assert_close(fast.float(), stock.float(), atol=2e-2, rtol=2e-2)
