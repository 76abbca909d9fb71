"""tools/study/inxl_weights.py: the norms of InXL's U and V in a checkpoint, and a one-line error for a bad file."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "study"))

import inxl_weights  # noqa: E402


def test_norms_of_each_fusion_in_a_checkpoint(tmp_path):
    blocks = torch.eye(2).repeat(4, 1, 1)  # block fusion of d = 8 at its identity start: ‖I‖ = √8
    state = {"encoder.inxl.U": blocks, "encoder.inxl.V": torch.zeros(4, 2, 2),
             "encoder.embeddings.weight": torch.ones(3, 8), "decoder.x.U": torch.ones(2)}
    assert inxl_weights.fusion_norms(state) == {"encoder.inxl": {"U": pytest.approx(8 ** 0.5), "V": 0.0}}
    path = tmp_path / "m.pt"
    torch.save({"model": state}, path)
    rows = inxl_weights.rows([path])
    assert rows[2] == f"| {path} | encoder.inxl | 2.83 | 0.00 | 0.00 |"


def test_a_checkpoint_without_inxl_and_an_unreadable_file_are_one_line(tmp_path):
    none = tmp_path / "base.pt"
    torch.save({"model": {"encoder.embeddings.weight": torch.ones(2, 2)}}, none)
    bad = tmp_path / "bad.pt"
    bad.write_text("not a checkpoint")
    for path, message in ((none, "holds no InXL fusion"), (bad, "cannot be read as a checkpoint")):
        proc = subprocess.run([sys.executable, str(REPO / "tools" / "study" / "inxl_weights.py"), str(path)],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
