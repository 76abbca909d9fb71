"""Starting points survive OpenNMT's initialisation (the ``init`` seam, :mod:`onmt_xl.opennmt.seams.init`).

Every system with a non-standard start is built by OpenNMT's own ``onmt.model_builder.build_model`` (as
``onmt_train`` builds a new model) under each ``-param_init`` / ``-param_init_glorot`` setting, and its start
must be exact; a stock model, and a model loaded from a checkpoint, must be what stock OpenNMT gives.
"""

import math
import subprocess
import sys

import pytest
import torch

import onmt_xl
from onmt_xl.experiments.systems import SYSTEMS
from onmt_xl.core.modules.disan import GATE_START, FusionGate
from onmt_xl.core.modules.inxl import InXLPositionFusion
from tests.conftest import run_env
from tests.test_encoders import model_opt, vocabs

onmt_xl.register()

TINY = dict(enc_layers=1, dec_layers=1, heads=2, hidden_size=16, word_vec_size=16, transformer_ff=32)
#: (-param_init, -param_init_glorot): OpenNMT's default, our YAMLs', and both (param_init != 0 wins)
INITS = [(0.1, False), (0.0, True), (0.1, True)]
INIT_IDS = ["uniform", "glorot", "uniform+glorot"]

#: every system whose modules start away from OpenNMT's initialisation, with the starts it can take
CASES = {
    "disan": {},
    "inxl": {"xl_inxl_init": "identity"},
    "inxl_absolute": {"xl_inxl_init": "absolute"},
    "inxl_diagonal_absolute": {"xl_inxl_init": "absolute", "xl_inxl_fusion": "diagonal"},
    "inxl_full": {"xl_inxl_init": "identity", "xl_inxl_fusion": "full"},
    "combination": {"xl_inxl_init": "identity"},
    "combination_absolute": {"xl_inxl_init": "absolute"},
    "encoder_free_inxl": {"xl_inxl_init": "absolute"},
}


def _system(case):
    return case if case in SYSTEMS else case.split("_")[0]


def _opt(case, param_init, glorot, **extra):
    opt = model_opt(**{**TINY, **SYSTEMS[_system(case)].options, **CASES.get(case, {}), **extra})
    opt.param_init, opt.param_init_glorot = param_init, glorot
    return opt


def _build(opt, checkpoint=None, seed=0, builder=None):
    import onmt.model_builder as model_builder

    torch.manual_seed(seed)
    return (builder or model_builder.build_model)(opt, opt, vocabs(), checkpoint, 0)


def _start_modules(model):
    return [m for m in model.modules() if isinstance(m, (FusionGate, InXLPositionFusion))]


def _assert_at_start(module):
    if isinstance(module, FusionGate):
        logit = math.log(GATE_START / (1 - GATE_START))
        assert torch.equal(module.w_s, torch.zeros_like(module.w_s))
        assert torch.equal(module.w_h, torch.zeros_like(module.w_h))
        assert torch.equal(module.b, torch.full_like(module.b, logit))
        assert torch.allclose(torch.sigmoid(module.b), torch.full_like(module.b, GATE_START), atol=1e-7, rtol=0)
    else:
        eye = module.identity()
        assert torch.equal(module.U, eye)
        assert torch.equal(module.V, eye if module.start == "identity" else torch.zeros_like(eye))


def _start_names(model):
    return {f"{n}.{p}" for n, m in model.named_modules() for p, _ in m.named_parameters(recurse=False)
            if m in _start_modules(model)}


def test_the_seam_wraps_build_model_everywhere_it_is_called():
    import onmt.model_builder as model_builder

    assert getattr(model_builder.build_model, "_onmt_xl", False)
    assert not getattr(model_builder.build_model.__wrapped__, "_onmt_xl", False)  # wrapped once
    # onmt_train's path: onmt.train_single imports the name by value, after the hook applied the seam
    code = ("import onmt.bin.train, onmt.train_single as t, onmt.model_builder as m\n"
            "print(t.build_model is m.build_model and m.build_model._onmt_xl)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env(), check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("param_init,glorot", INITS, ids=INIT_IDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_start_survives_onmt_initialisation(case, param_init, glorot):
    model = _build(_opt(case, param_init, glorot))
    modules = _start_modules(model)
    expected = {"disan": TINY["enc_layers"]}.get(_system(case), 1)
    assert len(modules) == expected
    for module in modules:
        _assert_at_start(module)


def test_stock_initialisation_overwrites_the_start_without_the_seam():
    """What the seam is for: stock ``build_model`` with ``-param_init 0.1`` draws the gate's ``b`` and InXL's ``V``."""
    import onmt.model_builder as model_builder

    stock = model_builder.build_model.__wrapped__
    gate = _start_modules(_build(_opt("disan", 0.1, False), builder=stock))[0]
    assert torch.sigmoid(gate.b).mean().item() == pytest.approx(0.5, abs=0.05)
    inxl = _start_modules(_build(_opt("inxl_absolute", 0.1, False), builder=stock))[0]
    assert inxl.V.abs().max().item() > 0


@pytest.mark.parametrize("param_init,glorot", INITS, ids=INIT_IDS)
@pytest.mark.parametrize("case", ["disan", "combination"])
def test_the_seam_changes_only_the_start(case, param_init, glorot):
    """Same seed, stock ``build_model`` and ours: every parameter outside the starts is the same draw."""
    import onmt.model_builder as model_builder

    opt = _opt(case, param_init, glorot)
    ours, stock = _build(opt), _build(opt, builder=model_builder.build_model.__wrapped__)
    starts = _start_names(ours)
    assert starts
    stock_params = dict(stock.named_parameters())
    for name, param in ours.named_parameters():
        if name not in starts:
            assert torch.equal(param, stock_params[name]), name


@pytest.mark.parametrize("param_init,glorot", INITS, ids=INIT_IDS)
@pytest.mark.parametrize("case", ["baseline", "headxl", "relative_pe", "enc_re", "both_re", "refsr"])
def test_model_without_starts_is_untouched(case, param_init, glorot):
    """Stock stays stock: a model with no ``reset_start`` module gets exactly stock ``build_model``'s parameters."""
    import onmt.model_builder as model_builder

    opt = _opt(case, param_init, glorot)
    ours, stock = _build(opt), _build(opt, builder=model_builder.build_model.__wrapped__)
    assert not _start_modules(ours)
    want = stock.state_dict()
    got = ours.state_dict()
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in got)


def _checkpoint(model):
    from onmt.inputters.inputter import vocabs_to_dict

    state = {k: v.clone() for k, v in model.state_dict().items() if "generator" not in k}
    return {"model": state, "generator": {k: v.clone() for k, v in model.generator.state_dict().items()},
            "vocab": vocabs_to_dict(vocabs())}


@pytest.mark.parametrize("update_vocab", [False, True], ids=["train_from", "update_vocab"])
def test_checkpoint_weights_are_kept(update_vocab):
    """``-train_from`` (and ``-update_vocab``, where OpenNMT initialises, then loads the checkpoint): the
    checkpoint's gate and InXL parameters, away from their starts, are what the model gets."""
    for case in ("disan", "combination_absolute"):
        trained = _build(_opt(case, 0.1, False), seed=1)
        with torch.no_grad():
            for module in _start_modules(trained):
                for param in module.parameters():
                    param.uniform_(-0.3, 0.3)  # a trained model's values, not the start
        opt = _opt(case, 0.1, False, update_vocab=update_vocab)
        loaded = _build(opt, checkpoint=_checkpoint(trained), seed=2)
        want = dict(trained.named_parameters())
        starts = _start_names(loaded)
        assert starts
        for name, param in loaded.named_parameters():
            assert torch.equal(param, want[name]), name


def test_analysis_build_matches_onmt_build_model():
    """``onmt_xl.experiments.analysis`` replicates ``build_model``'s initialisation, starts included."""
    from onmt.model_builder import build_base_model

    from onmt_xl.experiments.analysis import initialise_as_onmt_train

    for case in ("disan", "combination_absolute"):
        for param_init, glorot in INITS:
            opt = _opt(case, param_init, glorot)
            want = _build(opt).state_dict()
            torch.manual_seed(0)
            model = build_base_model(opt, vocabs())
            initialise_as_onmt_train(model, opt)
            got = model.state_dict()
            assert all(torch.equal(got[k], want[k]) for k in want), (case, param_init, glorot)
            for module in _start_modules(model):
                _assert_at_start(module)
