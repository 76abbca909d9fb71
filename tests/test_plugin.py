"""Registration through the import hook, idempotence, the XL batching channel and the torch fix."""

import argparse
import io
import subprocess
import sys

import pytest
import torch

import onmt_xl
from onmt_xl.errors import XLInputError
from tests.conftest import run_env
from tests.helpers import stock_cli


def test_fresh_onmt_train_help_lists_our_options():
    out = subprocess.run([stock_cli("onmt_train"), "-h"], capture_output=True, text=True, env=run_env(), check=True).stdout
    for option in ("-xl_heads", "-inxl_fusion", "-enc_max_relative_positions", "-xl_source", "-xl_preorderer", "-xl_noise",
                   "-disan_mask", "-disan_gate_init", "-disan_residual", "-encoder_free_pe", "-reordering_loss_weight", "-exgre_window"):
        assert option in out
    assert "Transform/XLPosition" in out and "Model-Encoder-XL" in out


def test_fresh_onmt_translate_help_lists_the_transform_options():
    out = subprocess.run([stock_cli("onmt_translate"), "-h"], capture_output=True, text=True, env=run_env(), check=True).stdout
    assert "-xl_preorderer" in out


def test_hook_registers_on_first_import_of_onmt_only():
    code = (
        "import sys\n"
        "assert 'torch' not in sys.modules and 'onmt' not in sys.modules, 'hook imported heavy modules'\n"
        "assert 'onmt_xl' not in sys.modules, 'onmt_xl resolved before sys.path is complete'\n"
        "from onmt.encoders import str2enc\n"
        "from onmt.transforms import AVAILABLE_TRANSFORMS\n"
        "print(sorted(k for k in str2enc if k.startswith('xl_')), 'xl_position' in AVAILABLE_TRANSFORMS)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env(), check=True).stdout
    assert out.strip() == "['xl_combination', 'xl_headxl', 'xl_inxl', 'xl_relative'] True"


def test_register_is_idempotent():
    onmt_xl.register()
    onmt_xl.register()
    import importlib

    from onmt_xl import plugin

    plugin._registered = False  # a second full pass must not raise "duplicate"
    plugin.register()
    from onmt.encoders import str2enc

    assert "xl_combination" in str2enc
    assert importlib.import_module("onmt.inputters.dynamic_iterator").tensorify._onmt_xl


def test_checkpoints_with_namespace_load_under_weights_only():
    onmt_xl.register()
    buf = io.BytesIO()
    torch.save({"opt": argparse.Namespace(encoder_type="xl_combination"), "w": torch.ones(2)}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, weights_only=True)
    assert ckpt["opt"].encoder_type == "xl_combination"


def _example(ids, pos=None, cid="train", line=0):
    ex = {"src": {"src": " ".join(map(str, ids)), "src_ids": ids}, "tgt": None, "cid": cid, "cid_line_number": line}
    if pos is not None:
        ex["xl_pos"] = pos
    return ex


def _vocabs():
    import pyonmttok

    v = pyonmttok.build_vocab_from_tokens(["a"], special_tokens=["<unk>", "<blank>", "<s>", "</s>"])
    return {"src": v, "tgt": v}


def test_tensorify_appends_xl_positions_as_last_column():
    onmt_xl.register()
    from onmt.inputters import dynamic_iterator

    batch = dynamic_iterator.tensorify(_vocabs(), [(_example([4, 5, 6], [2, 0, 1]), 0), (_example([7, 8], [1, 0]), 1)], "cpu")
    assert batch["src"].shape == (2, 3, 2)
    assert batch["src"][:, :, 0].tolist() == [[4, 5, 6], [7, 8, 1]]
    assert batch["src"][:, :, 1].tolist() == [[2, 0, 1], [1, 0, 0]]


def test_tensorify_without_xl_is_stock():
    onmt_xl.register()
    from onmt.inputters import dynamic_iterator

    batch = dynamic_iterator.tensorify(_vocabs(), [(_example([4, 5]), 0)], "cpu")
    assert batch["src"].shape == (1, 2, 1)


@pytest.mark.parametrize(
    "examples,message",
    [
        ([_example([4, 5], [0, 1]), _example([6], None, line=6)], "line 7: example has no XL positions"),
        ([_example([4, 5], [0, 1, 2], line=2)], "line 3: 3 XL positions for 2 source tokens"),
    ],
)
def test_tensorify_rejects_inconsistent_positions(examples, message):
    onmt_xl.register()
    from onmt.inputters import dynamic_iterator

    with pytest.raises(XLInputError, match=message):
        dynamic_iterator.tensorify(_vocabs(), [(ex, i) for i, ex in enumerate(examples)], "cpu")


@pytest.mark.parametrize(
    "module",
    ["onmt_xl.encoders.xl_transformer", "onmt_xl.encoders.baselines", "onmt_xl.modules.headxl",
     "onmt_xl.transforms.xl_position", "onmt_xl.plugin"],
)
def test_any_module_can_be_imported_first(module):
    """Importing one of ours first triggers registration mid-import; it must not meet a half-imported module."""
    code = (
        f"import {module}\n"
        "import onmt\n"
        "from onmt.encoders import str2enc\n"
        "from onmt.transforms import AVAILABLE_TRANSFORMS\n"
        "assert {'xl_combination', 'disan', 'encoder_free'} <= set(str2enc), sorted(str2enc)\n"
        "assert {'xl_position', 'xl_prereorder'} <= set(AVAILABLE_TRANSFORMS)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
