"""The cheaper CPU training kernels: the fast dropout mask's statistics, where it applies, fused Adam, and the
``-xl_cpu_dropout_mask`` option end to end."""

import subprocess

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from onmt_xl.core import cpu_training
from onmt_xl.opennmt.seams import cpu_speed
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_model_workdir

N = 400_000


@pytest.mark.parametrize("p", [0.05, 0.1, 0.3, 0.5, 0.9])
def test_keep_mask_drops_at_rate_p_in_each_slice_of_a_draw(p):
    torch.manual_seed(1)
    keep = cpu_training.keep_mask(torch.Size([N]), p)
    assert keep.dtype == torch.bool and keep.shape == (N,)
    sd = (p * (1 - p) / (N / 4)) ** 0.5
    for slice_ in range(4):  # each 16-bit slice of a 64-bit draw (the top one has 15 random bits)
        rate = 1 - keep[slice_::4].float().mean().item()
        assert abs(rate - p) < 5 * sd, (slice_, rate)


def test_keep_mask_is_deterministic_under_the_seed_and_differs_between_draws():
    torch.manual_seed(7)
    a = cpu_training.keep_mask(torch.Size([3, 1001]), 0.2)
    b = cpu_training.keep_mask(torch.Size([3, 1001]), 0.2)
    torch.manual_seed(7)
    assert torch.equal(a, cpu_training.keep_mask(torch.Size([3, 1001]), 0.2))
    assert not torch.equal(a, b)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), p=st.floats(0.0, 1.0), seed=st.integers(0, 2**31))
def test_dropout_zeroes_or_rescales_each_element_and_its_gradient(shape, p, seed):
    torch.manual_seed(seed)
    x = torch.randn(*shape, dtype=torch.float64).add_(3.0).requires_grad_()  # no zero input
    y = cpu_training.dropout(x, p)
    dropped = round(p * 2**15)
    assert y.shape == x.shape
    if dropped == 0:
        assert torch.equal(y, x)
        return
    if dropped == 2**15:
        assert not y.any()
        return
    scale = 2**15 / (2**15 - dropped)
    kept = y != 0
    assert torch.allclose(y[kept], x[kept] * scale)
    y.backward(torch.ones_like(y))
    assert torch.allclose(x.grad, kept.double() * scale)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_keeps_the_expectation_and_the_dtype(dtype):
    torch.manual_seed(3)
    y = cpu_training.dropout(torch.ones(N, dtype=dtype), 0.1)
    assert y.dtype == dtype
    assert abs(y.float().mean().item() - 1.0) < 5 * (0.1 / 0.9 / N) ** 0.5 + 1e-2 * (dtype == torch.bfloat16)


def _model(p=0.3):
    return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Dropout(p), torch.nn.ReLU(), torch.nn.Dropout(p))


def test_use_fast_dropout_changes_each_dropout_once_and_keeps_the_state_dict():
    model = _model()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert cpu_training.use_fast_dropout(model) == 2
    assert cpu_training.use_fast_dropout(model) == 0
    assert model.state_dict().keys() == state.keys()
    x = torch.randn(32, 64)
    model.train()
    torch.manual_seed(5)
    fast = model(x)
    torch.manual_seed(5)
    h = cpu_training.dropout(model[0](x), 0.3)
    assert torch.equal(fast, cpu_training.dropout(model[2](h), 0.3))
    model.eval()
    assert torch.equal(model(x), model[2](model[0](x)))  # evaluation: no dropout


def test_fast_dropout_reads_the_rate_at_each_call():
    """OpenNMT's ``-dropout_steps`` changes ``module.p`` during training (``update_dropout``)."""
    drop = torch.nn.Dropout(0.1)
    cpu_training.use_fast_dropout(drop)
    drop.p = 0.6
    torch.manual_seed(2)
    rate = (drop(torch.ones(N)) == 0).float().mean().item()
    assert abs(rate - 0.6) < 0.01


def _adam(model):
    from onmt.utils.optimizers import Optimizer

    return Optimizer(torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.998), eps=1e-8), 1e-2)


def test_fused_cpu_adam_makes_the_same_update():
    torch.manual_seed(0)
    stock_model, fused_model = _model(0.0), _model(0.0)
    fused_model.load_state_dict(stock_model.state_dict())
    stock, fused = _adam(stock_model), _adam(fused_model)
    cpu_speed.fuse_cpu_adam(fused)
    assert all(g["fused"] for g in fused._optimizer.param_groups)
    assert not any(g["fused"] for g in stock._optimizer.param_groups)
    x = torch.randn(16, 64)
    for _ in range(3):
        for model, optim in ((stock_model, stock), (fused_model, fused)):
            model(x).pow(2).mean().backward()
            optim._optimizer.step()
            optim._optimizer.zero_grad()
    for a, b in zip(stock_model.parameters(), fused_model.parameters()):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7)
    assert not torch.equal(stock_model[0].weight, _model(0.0)[0].weight)  # it did train


def test_a_fused_checkpoint_resumed_off_the_cpu_gets_the_stock_flag_back(monkeypatch):
    model = _model(0.0)
    optim = _adam(model)
    cpu_speed.fuse_cpu_adam(optim)
    state = optim._optimizer.state_dict()
    assert all(g["fused"] for g in state["param_groups"])
    resumed = _adam(model)
    resumed._optimizer.load_state_dict(state)  # as Optimizer.from_opt does, before the patch runs
    monkeypatch.setattr(cpu_training, "fused_adam_applies", lambda params: False)  # e.g. the model is on a GPU
    cpu_speed.fuse_cpu_adam(resumed)
    assert not any(g["fused"] for g in resumed._optimizer.param_groups)


def test_fused_adam_is_left_alone_where_it_does_not_apply():
    model = _model(0.0)
    optim = _adam(model)
    optim._optimizer.param_groups[0]["foreach"] = True
    cpu_speed.fuse_cpu_adam(optim)
    assert not optim._optimizer.param_groups[0]["fused"]
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    from onmt.utils.optimizers import Optimizer

    wrapped = Optimizer(sgd, 0.1)
    cpu_speed.fuse_cpu_adam(wrapped)
    assert "fused" not in sgd.param_groups[0] or not sgd.param_groups[0]["fused"]


def _reference_loss(hidden, weight, bias, target, ignore, smoothing, dtype):
    """The stock computation: the projection under autocast, cross-entropy on fp32 scores."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        scores = torch.nn.functional.linear(hidden, weight, bias)
        loss = torch.nn.functional.cross_entropy(scores.float(), target, ignore_index=ignore,
                                                 label_smoothing=smoothing, reduction="sum")
    return loss, scores.float().argmax(1)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 40), vocab=st.integers(2, 30), rows=st.integers(1, 50), smoothing=st.sampled_from([0.0, 0.1, 0.3]),
       bias=st.booleans(), seed=st.integers(0, 2**31))
def test_generator_loss_matches_the_stock_loss_and_gradients_fp32(n, vocab, rows, smoothing, bias, seed):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, 8, generator=g).requires_grad_()
    weight = torch.randn(vocab, 8, generator=g).requires_grad_()
    b = torch.randn(vocab, generator=g).requires_grad_() if bias else None
    target = torch.randint(0, vocab, (n,), generator=g)
    target[torch.rand(n, generator=g) < 0.3] = 1  # ignored rows (padding)
    params = [hidden, weight] + ([b] if bias else [])
    ref, ref_pred = _reference_loss(hidden, weight, b, target, 1, smoothing, torch.float32)
    ref_grads = torch.autograd.grad(ref * 0.25, params)
    loss, pred = cpu_training.generator_loss(hidden, weight, b, target, 1, smoothing, torch.float32, rows)
    grads = torch.autograd.grad(loss * 0.25, params)
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-5)
    assert torch.equal(pred, ref_pred)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_generator_loss_in_bf16_is_the_autocast_computation():
    torch.manual_seed(0)
    hidden = torch.randn(300, 32, requires_grad=True)
    weight = (torch.randn(500, 32) * 0.3).requires_grad_()
    bias = torch.randn(500, requires_grad=True)
    target = torch.randint(0, 500, (300,))
    target[::5] = 1
    ref, ref_pred = _reference_loss(hidden, weight, bias, target, 1, 0.1, torch.bfloat16)
    ref_grads = torch.autograd.grad(ref, [hidden, weight, bias])
    loss, pred = cpu_training.generator_loss(hidden, weight, bias, target, 1, 0.1, torch.bfloat16, rows=64)
    grads = torch.autograd.grad(loss, [hidden, weight, bias])
    assert loss.dtype == torch.float32 and all(g.dtype == torch.float32 for g in grads)
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-3)  # same bf16 scores, fp32 softmax
    assert torch.equal(pred, ref_pred)
    for got, want in zip(grads, ref_grads):  # bf16 gradients of the products, as autocast's backward
        assert (got - want).abs().max() <= 0.02 * want.abs().max()


def _loss_compute(**kwargs):
    from onmt.utils.loss import LossCompute

    torch.manual_seed(0)
    generator = torch.nn.Linear(16, 50)
    criterion = torch.nn.CrossEntropyLoss(ignore_index=1, reduction="sum", label_smoothing=0.1)
    loss_compute = LossCompute(criterion, generator, **kwargs)
    cpu_speed.use_fused_loss(loss_compute)
    return loss_compute


@pytest.mark.parametrize("precision_", ["fp32", "bf16"])
def test_loss_compute_forward_gives_the_stock_loss_and_statistics(precision_):
    from onmt.utils.loss import LossCompute

    torch.manual_seed(1)
    batch = {"tgt": torch.randint(4, 50, (3, 6, 1)), "srclen": torch.tensor([5, 4, 3])}
    batch["tgt"][1, 4:] = 1
    batch["tgt"][2, 3:] = 1
    output = torch.randn(3, 5, 16, requires_grad=True)
    results = {}
    for fused in (True, False):
        loss_compute = _loss_compute()
        cpu_speed.use_fused_loss(loss_compute, fused)
        assert cpu_speed.fused_loss_applies(loss_compute, output) is fused
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision_ == "bf16"):
            loss, stats = LossCompute.forward(loss_compute, batch, output, {})
        grad, = torch.autograd.grad(loss, output)
        results[fused] = (loss.detach(), stats, grad)
    (loss, stats, grad), (ref, ref_stats, ref_grad) = results[True], results[False]
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-3)
    assert (stats.n_words, stats.n_correct, stats.n_sents) == (ref_stats.n_words, ref_stats.n_correct, ref_stats.n_sents)
    assert stats.n_words == 3 * 5 - 2 - 3  # the target window is tgt[:, 1:]
    tolerance = dict(rtol=1e-5, atol=1e-6) if precision_ == "fp32" else dict(rtol=5e-2, atol=5e-3)
    torch.testing.assert_close(grad, ref_grad, **tolerance)


@pytest.mark.parametrize("kwargs", [{"lambda_align": 0.5}, {"lambda_coverage": 0.5}])
def test_losses_with_other_terms_keep_the_stock_path(kwargs):
    assert not cpu_speed.fused_loss_applies(_loss_compute(**kwargs), torch.zeros(1, 1, 16))
    evaluating = _loss_compute()
    evaluating.generator.eval()
    assert not cpu_speed.fused_loss_applies(evaluating, torch.zeros(1, 1, 16))


def _cli(name, *args, check=True):
    proc = subprocess.run([stock_cli(name), *args], capture_output=True, text=True, env=run_env())
    if check and proc.returncode != 0:
        raise AssertionError(f"{name} {args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    wd = tmp_path_factory.mktemp("cpu_training")
    tiny_model_workdir(wd, _cli, train_steps=4, valid_steps=4, save_checkpoint_steps=4, xl_cpu_precision="fp32")
    return wd


def _validation_ppl(log):
    return float(log.split("Validation perplexity:")[1].split()[0])


def _kernel_lines(log):
    return [line for line in log.splitlines() if "-xl_cpu_kernels" in line]


def test_onmt_train_fast_and_stock_kernels_train_alike(tiny):
    logs = {}
    for choice in ("fast", "stock"):
        save = tiny / f"kernels_{choice}"
        proc = _cli("onmt_train", "-config", str(tiny / "cfg.yaml"), "-save_model", str(save / "m"),
                    "-xl_cpu_kernels", choice, "-dropout", "0", "-attention_dropout", "0")
        logs[choice] = proc.stdout + proc.stderr
    said = _kernel_lines(logs["fast"])
    assert len(said) == 1 and all(k in said[0] for k in ("fast dropout masks", "fused loss", "fused Adam", "SDPA"))
    assert not _kernel_lines(logs["stock"])  # stock: not a word, OpenNMT's own kernels
    fast, stock = _validation_ppl(logs["fast"]), _validation_ppl(logs["stock"])
    assert abs(fast - stock) <= 1e-3 * stock, (fast, stock)


@pytest.mark.parametrize("args, mask, fast_kernels", [(["-xl_cpu_kernels", "fast"], "fast", True),
                                                      (["-xl_cpu_kernels", "stock"], "stock", False), ([], "stock", False),
                                                      (["-xl_cpu_dropout_mask", "fast"], "fast", False)])
def test_onmt_train_uses_the_chosen_kernels(tiny, args, mask, fast_kernels):
    save = tiny / ("_".join(args) or "default")
    proc = _cli("onmt_train", "-config", str(tiny / "cfg.yaml"), "-save_model", str(save / "m"), *args)
    log = proc.stdout + proc.stderr
    from onmt_xl.experiments.jobs import resolved_dropout_mask

    assert resolved_dropout_mask(log) == mask  # the legacy option: its part only
    if mask == "fast":
        assert log.index("-xl_cpu_kernels") < log.index("Starting training on")  # read per attempt by the runner
    checkpoint = torch.load(save / "m_step_4.pt", map_location="cpu", weights_only=False)
    assert all(bool(g.get("fused")) is fast_kernels for g in checkpoint["optim"]["optimizer"]["param_groups"])


def test_kernel_option_is_in_the_help_and_checked(tiny):
    out = _cli("onmt_train", "-h").stdout
    assert "-xl_cpu_kernels {stock,fast}" in out and "-xl_cpu_dropout_mask {fast,stock}" in out
    assert "-xl_cpu_kernels {stock,fast}" in _cli("onmt_translate", "-h").stdout
    proc = _cli("onmt_train", "-config", str(tiny / "cfg.yaml"), "-xl_cpu_kernels", "quick", check=False)
    assert proc.returncode == 2
    assert "argument --xl_cpu_kernels/-xl_cpu_kernels: invalid choice: 'quick'" in proc.stderr
    assert "Traceback" not in proc.stderr
