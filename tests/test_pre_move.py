"""Checkpoints written before the package was restructured still load and translate to the same output.

``tests/data/pre_move/`` holds tiny models of every encoder family (trained for 80 steps on the synthetic
corpus at commit 4871faa), the preorderer they used, 12 test sources and each model's translation at that
commit (beam 3). The checkpoints are stored without OpenNMT's absolute-PE buffer (``*.pe.pe``, 5000 fixed
sinusoid rows, 320 kB each); the test puts back the one stock OpenNMT computes, then runs ``onmt_translate``.
"""

import json
import subprocess
from pathlib import Path

import pytest
import torch

from tests.conftest import run_env
from tests.helpers import stock_cli

DATA = Path(__file__).parent / "data" / "pre_move"
SYSTEMS = json.loads((DATA / "systems.json").read_text())


def with_pe_buffers(path: Path, out: Path) -> Path:
    """The checkpoint at ``path`` with stock OpenNMT's ``PositionalEncoding`` buffers put back."""
    from onmt.modules.embeddings import PositionalEncoding

    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    opt = ckpt["opt"]
    pe = PositionalEncoding(opt.word_vec_size, opt.position_encoding_type).pe
    for side in ("encoder", "decoder"):
        ckpt["model"][f"{side}.embeddings.make_embedding.pe.pe"] = pe.clone()
    torch.save(ckpt, out)
    return out


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_checkpoint_from_before_the_move_translates_the_same(system, tmp_path):
    model = with_pe_buffers(DATA / f"{system}.pt", tmp_path / "model.pt")
    hyp = tmp_path / "hyp.txt"
    args = [stock_cli("onmt_translate"), "-model", str(model), "-src", str(DATA / "test.src"), "-output", str(hyp),
            "-beam_size", "3", "-seed", "1"]
    if SYSTEMS[system]:
        args += ["-transforms", SYSTEMS[system], "-xl_preorderer", str(DATA / "preorderer.xlp")]
    proc = subprocess.run(args, capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert hyp.read_text(encoding="utf-8") == (DATA / f"{system}.hyp").read_text(encoding="utf-8")
