"""Stock stays stock: a user who names none of our components or options gets stock OpenNMT-py.

The reference is the same process with the hook switched off (``ONMT_XL_DISABLE=1``, see ``onmt_xl_hook``). The
peer suite (``tools/ci/peer_suite.py``) runs OpenNMT-py's own tests both ways; here a stock Transformer goes through
``onmt_build_vocab``, ``onmt_train`` and ``onmt_translate`` both ways and every artefact must be equal.
"""

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_env
from tests.helpers import stock_cli

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onmt") is None or shutil.which("onmt_train") is None and not Path(
        sys.executable).with_name("onmt_train").exists(),
    reason="needs OpenNMT-py 3.5.1 and its console scripts (bash tools/install.sh)",
)


def env(disabled: bool, **extra) -> dict:
    e = run_env()
    e.pop("ONMT_XL_DISABLE", None)
    if disabled:
        e["ONMT_XL_DISABLE"] = "1"
    return {**e, **extra}


def python(code: str, environ: dict) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


PROBE = ("import sys, onmt, onmt.encoders; "
         "print('xl_inxl' in onmt.encoders.str2enc, 'onmt_xl' in sys.modules)")


def test_disable_switches_the_hook_off():
    assert python(PROBE, env(disabled=True)).split() == ["False", "False"]
    assert python(PROBE, env(disabled=False)).split() == ["True", "True"]


@pytest.mark.parametrize("value,off", [("1", True), ("true", True), ("YES", True), (" yes ", True),
                                       ("0", False), ("", False), ("no", False), ("false", False)])
def test_disable_values(value, off):
    """Only a true value switches the hook off (checked without importing onmt: this costs no torch import)."""
    out = python("import onmt_xl_hook; print(onmt_xl_hook.disabled())", {**run_env(), "ONMT_XL_DISABLE": value})
    assert out.split() == [str(off)]


# --- a stock Transformer, both ways -------------------------------------------------------------------------

CONFIG = """\
save_data: run/samples
src_vocab: run/vocab.src
tgt_vocab: run/vocab.tgt
overwrite: true
data:
  corpus_1:
    path_src: data/train.src
    path_tgt: data/train.tgt
save_model: run/model
encoder_type: transformer
decoder_type: transformer
enc_layers: 2
dec_layers: 2
heads: 2
hidden_size: 32
word_vec_size: 32
transformer_ff: 64
position_encoding: true
dropout: [0.1]
attention_dropout: [0.1]
label_smoothing: 0.1
optim: adam
adam_beta2: 0.998
learning_rate: 2.0
decay_method: noam
warmup_steps: 10
batch_type: tokens
batch_size: 256
bucket_size: 512
num_workers: 0
train_steps: 30
save_checkpoint_steps: 30
report_every: 10
seed: 1
model_dtype: fp32
"""

WORDS = [f"w{i}" for i in range(40)]


def toy_corpus(data: Path, n: int = 200, test: int = 10) -> None:
    """``n`` pairs: the target is the source reversed, each word mapped to its own target word."""
    rng = random.Random(0)
    lines = [[rng.choice(WORDS) for _ in range(rng.randint(3, 9))] for _ in range(n + test)]
    data.mkdir()
    (data / "train.src").write_text("".join(" ".join(s) + "\n" for s in lines[:n]))
    (data / "train.tgt").write_text("".join(" ".join("t" + w for w in reversed(s)) + "\n" for s in lines[:n]))
    (data / "test.src").write_text("".join(" ".join(s) + "\n" for s in lines[n:]))


def our_options() -> set:
    """onmt_xl's own options: the ``dest`` names that ``onmt_train``'s parser has only with onmt_xl registered.
    Computed by building the stock parser both ways, so it holds every option we add (model options, the
    seams' train options, our transforms' ``add_options``), wherever it is declared."""
    code = ("import json; from onmt.bin.train import _get_parser; "
            "print(json.dumps(sorted({a.dest for a in _get_parser()._actions})))")
    stock = set(json.loads(python(code, env(disabled=True)).splitlines()[-1]))
    ours = set(json.loads(python(code, env(disabled=False)).splitlines()[-1]))
    assert stock <= ours, f"onmt_xl removes stock options: {sorted(stock - ours)}"
    return ours - stock


def run_stock_pipeline(root: Path, disabled: bool) -> dict:
    """build_vocab, train, translate in ``root`` (its own copy of the data; the same relative paths both ways)."""
    shutil.copytree(root.parent / "data", root / "data")
    (root / "config.yaml").write_text(CONFIG)
    environ = env(disabled, OMP_NUM_THREADS="1")  # deterministic and kind to a shared machine
    if disabled:
        # Stock OpenNMT-py 3.5.1 cannot load its own checkpoints under torch >= 2.6 (torch.load's weights_only
        # default refuses their argparse.Namespace; onmt_xl.opennmt.seams.checkpoints allow-lists it): the reference
        # loads them as torch < 2.6 did. The onmt_xl run is left as a user runs it.
        environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    commands = {
        "onmt_build_vocab": ["-config", "config.yaml", "-n_sample", "-1"],
        "onmt_train": ["-config", "config.yaml"],
        "onmt_translate": ["-model", "run/model_step_30.pt", "-src", "data/test.src", "-output", "run/hyp.txt",
                           "-beam_size", "2", "-seed", "1"],
    }
    status = {}
    for name, args in commands.items():
        proc = subprocess.run([stock_cli(name), *args], cwd=root, capture_output=True, text=True, env=environ)
        status[name] = proc.returncode
        if proc.returncode:
            status[name + " stderr"] = proc.stderr[-2000:]
            break
    return status


def compare(a, b, where: str, diffs: list, tensors: dict) -> None:
    """Append to ``diffs`` every place where the two checkpoint parts differ, keys at every level and values;
    tensors are tallied in ``tensors``: ``{part: [compared, differing, largest |diff|, first differing]}``, part
    being the checkpoint's top-level key (and ``optimizer`` state apart from ``param_groups``)."""
    import torch

    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            only_a, only_b = [k for k in a if k not in b], [k for k in b if k not in a]
            diffs.append(f"{where}: keys differ: only stock {only_a}, only onmt_xl {only_b}"
                         + ("" if only_a or only_b else " (order)"))
        for k in a:
            if k in b:
                compare(a[k], b[k], f"{where}[{k!r}]", diffs, tensors)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{where}[{i}]", diffs, tensors)
    elif isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            diffs.append(f"{where}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}")
            return
        tally = tensors.setdefault(where.split("]")[0] + "]", [0, 0, 0.0, ""])
        tally[0] += 1
        if not torch.equal(a, b):
            tally[1] += 1
            tally[2] = max(tally[2], (a.double() - b.double()).abs().max().item())
            tally[3] = tally[3] or where
    elif type(a) is not type(b) or a != b:
        diffs.append(f"{where}: {a!r} vs {b!r}")


def test_stock_transformer_is_unchanged(tmp_path):
    """The same stock config, with onmt_xl switched off and on: same exit status, byte-equal vocabularies and
    translations, checkpoints with the same keys at every level and equal tensors, and the same ``opt`` but for
    onmt_xl's own options (listed by :func:`our_options`; a stock user never sets them)."""
    import torch

    toy_corpus(tmp_path / "data")
    runs = {"stock": tmp_path / "stock", "onmt_xl": tmp_path / "onmt_xl"}
    status = {label: run_stock_pipeline(root, disabled=(label == "stock")) for label, root in runs.items()}
    assert status["stock"] == {"onmt_build_vocab": 0, "onmt_train": 0, "onmt_translate": 0}, status["stock"]
    diffs = [] if status["onmt_xl"] == status["stock"] else [f"exit status: {status['onmt_xl']}"]

    for name in ("run/vocab.src", "run/vocab.tgt", "run/hyp.txt"):
        a, b = runs["stock"] / name, runs["onmt_xl"] / name
        if not b.exists() or a.read_bytes() != b.read_bytes():
            diffs.append(f"{name}: " + ("missing" if not b.exists() else "bytes differ"))

    ckpt = "run/model_step_30.pt"
    if (runs["onmt_xl"] / ckpt).exists():
        a, b = (torch.load(runs[k] / ckpt, map_location="cpu", weights_only=False) for k in ("stock", "onmt_xl"))
        opt_a, opt_b = vars(a.pop("opt")), vars(b.pop("opt"))
        a["opt"], b["opt"] = None, None  # keeps the top-level key order in the comparison
        tensors = {}
        compare(a, b, "checkpoint", diffs, tensors)
        diffs += [f"{part}: {n_diff} of {n} tensors differ (largest |diff| {big:.3g}; first {first})"
                  for part, (n, n_diff, big, first) in tensors.items() if n_diff]
        ours = our_options()
        extra = sorted(set(opt_b) - set(opt_a) - ours)
        if extra:
            diffs.append(f"checkpoint['opt']: attributes neither stock nor onmt_xl options: {extra}")
        if set(opt_a) - set(opt_b):
            diffs.append(f"checkpoint['opt']: stock attributes missing: {sorted(set(opt_a) - set(opt_b))}")
        for k in sorted(set(opt_a) & set(opt_b)):
            if opt_a[k] != opt_b[k]:
                diffs.append(f"checkpoint['opt'].{k}: {opt_a[k]!r} vs {opt_b[k]!r}")
    else:
        diffs.append(f"{ckpt}: missing")

    if diffs:
        pytest.fail("onmt_xl changes a stock run (stock vs onmt_xl):\n" + "\n".join(diffs), pytrace=False)
