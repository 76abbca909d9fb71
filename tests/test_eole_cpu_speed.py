"""CPU speed in Eole (``training.xl_cpu_precision``, ``training.xl_cpu_kernels``, :func:`onmt_xl.eole.seams.loss`): the
options are validated training options; the fused loss gives Eole's own loss, statistics and gradients; ``eole train``
says once what it chose, trains like the stock kernels, fuses Adam, and keeps both options out of ``config.json``;
without them, not a word and Eole's own kernels."""

import json
import sys

import pytest

pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")

import torch  # noqa: E402

from onmt_xl.eole.hook import install  # noqa: E402
from tests.test_eole import E2E_CONFIG, e2e_files, run_eole  # noqa: E402

OPTIONS = ("xl_cpu_precision", "xl_cpu_kernels")


def test_the_options_are_validated_training_options():
    install()
    from eole.config.run import TrainConfig
    from eole.config.training import TrainingConfig
    from pydantic import ValidationError

    stock = TrainingConfig()
    assert (stock.xl_cpu_precision, stock.xl_cpu_kernels) == ("fp32", "stock")
    assert not set(OPTIONS) & stock.model_fields_set
    chosen = TrainingConfig(xl_cpu_precision="auto", xl_cpu_kernels="fast")
    assert (chosen.xl_cpu_precision, chosen.xl_cpu_kernels) == ("auto", "fast")
    schema = json.dumps(TrainConfig.model_json_schema())
    assert all(name in schema for name in OPTIONS)
    assert "native" in TrainingConfig.model_fields["xl_cpu_precision"].description
    for name, bad in (("xl_cpu_precision", "bf61"), ("xl_cpu_kernels", "quick")):
        with pytest.raises(ValidationError, match=name):
            TrainingConfig(**{name: bad})


def _loss_compute(fused: bool):
    install()
    from eole.utils.loss import LossCompute

    from onmt_xl.eole import seams

    torch.manual_seed(0)
    criterion = torch.nn.CrossEntropyLoss(ignore_index=1, reduction="sum", label_smoothing=0.1)
    compute = LossCompute(criterion, torch.nn.Linear(16, 50), vocabs={"specials": {}})
    compute.log_attention_entropy = False
    (seams._fused_loss.add if fused else seams._fused_loss.discard)(compute)
    return compute


@pytest.mark.parametrize("precision_", ["fp32", "bf16"])
def test_the_fused_loss_gives_eoles_loss_statistics_and_gradients(precision_):
    from onmt_xl.core.cpu_training import Predicted
    from onmt_xl.eole import seams

    torch.manual_seed(1)
    batch = {"tgt": torch.randint(4, 50, (3, 6)), "srclen": torch.tensor([5, 4, 3]), "cid": ["c"] * 3,
             "cid_line_number": [0, 1, 2]}
    batch["tgt"][1, 4:] = 1
    batch["tgt"][2, 3:] = 1
    output = torch.randn(3, 5, 16, requires_grad=True)
    results = {}
    for fused in (True, False):
        compute = _loss_compute(fused)
        assert seams.fused_loss_applies(compute, output) is fused
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision_ == "bf16"):
            loss, stats, _ = compute(batch, output, {})
            if fused:
                assert isinstance(compute._compute_ce_loss(output, batch["tgt"][:, 1:].reshape(-1))[1], Predicted)
        grad, = torch.autograd.grad(loss, output)
        results[fused] = (loss.detach(), stats, grad)
    (loss, stats, grad), (ref, ref_stats, ref_grad) = results[True], results[False]
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-3)
    assert (stats.n_tokens, stats.n_correct, stats.n_sents) == (ref_stats.n_tokens, ref_stats.n_correct,
                                                                 ref_stats.n_sents)
    assert stats.n_tokens == 3 * 5 - 2 - 3  # the target window is tgt[:, 1:]
    tolerance = dict(rtol=1e-5, atol=1e-6) if precision_ == "fp32" else dict(rtol=5e-2, atol=5e-3)
    torch.testing.assert_close(grad, ref_grad, **tolerance)


def test_other_generators_criteria_and_evaluation_keep_eoles_loss():
    from onmt_xl.eole import seams

    out = torch.zeros(1, 1, 16)
    evaluating = _loss_compute(True)
    evaluating.generator.eval()
    weighted = _loss_compute(True)
    weighted.criterion = torch.nn.CrossEntropyLoss(weight=torch.ones(50), ignore_index=1, reduction="sum")
    prior = _loss_compute(True)
    prior.lm_prior_model = torch.nn.Linear(1, 1)
    for compute in (evaluating, weighted, prior):
        assert not seams.fused_loss_applies(compute, out)
    with torch.no_grad():
        assert not seams.fused_loss_applies(_loss_compute(True), out)


def _lines(log):
    return [line for line in log.splitlines() if "training.xl_cpu_" in line]


def _valid_ppl(log):
    return float(log.split("Validation perplexity:")[1].split()[0].rstrip(";"))


def test_eole_train_with_and_without_the_options(tmp_path):
    e2e_files(tmp_path, E2E_CONFIG.replace("dropout: [0.1]", "dropout: [0.0]"))
    eole = [sys.executable, "-m", "onmt_xl.eole"]
    run_eole(eole, "build_vocab", "-config", tmp_path / "vocab.yaml", cwd=tmp_path)
    logs = {}
    for name, extra in (("fast", "  xl_cpu_kernels: fast\n  xl_cpu_precision: fp32\n"), ("stock", ""),
                        ("auto", "  xl_cpu_precision: auto\n")):
        cfg = (tmp_path / "train.yaml").read_text().replace(f"{tmp_path}/model", f"{tmp_path}/{name}") + extra
        (tmp_path / f"{name}.yaml").write_text(cfg)
        proc = run_eole(eole, "train", "-config", tmp_path / f"{name}.yaml", cwd=tmp_path)
        logs[name] = proc.stdout + proc.stderr
    said = _lines(logs["fast"])
    assert len(said) == 1 and said[0].endswith(
        "training.xl_cpu_kernels fast: fast dropout masks, fused loss and fused Adam (onmt_xl's CPU kernels)"), said
    assert not _lines(logs["stock"])  # stock: not a word, Eole's own kernels
    auto = _lines(logs["auto"])
    assert len(auto) == 1 and "training.xl_cpu_precision auto: " in auto[0]
    fast, stock = _valid_ppl(logs["fast"]), _valid_ppl(logs["stock"])
    assert abs(fast - stock) <= 1e-3 * stock, (fast, stock)  # without dropout: the same function
    for name, fused in (("fast", True), ("stock", False)):
        step = tmp_path / name / "step_6"
        groups = torch.load(step / "optimizer.pt", weights_only=True)["optimizer"]["param_groups"]
        assert all(bool(g.get("fused")) is fused for g in groups), name
        saved = json.loads((step / "config.json").read_text())["training"]
        assert not set(OPTIONS) & set(saved), saved  # the run's options, not the model's: stock Eole loads it
