"""What docs/eole.md ("Using it from Eole") says, checked against Eole 0.6.4 (issues 77, 79): its complete minimal YAML
validates with Eole's own config model (no training), the places it names for ``report_every`` and dropout are the
ones Eole accepts, and the start-up warnings every ``eole`` command prints are Eole's, not ours. Skips without
Eole. (The README's shorter Eole YAML is checked against this complete one by tests/test_docs.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("eole", reason="Eole is not installed (pip install eole==0.6.4; see tests/test_eole.py)")

PAGE = Path(__file__).resolve().parents[1] / "docs" / "eole.md"
EOLE = Path(sys.executable).with_name("eole")


def page_yaml(first_line: str) -> str:
    """The ```yaml block of docs/eole.md that starts with ``first_line``."""
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
              if b.startswith(first_line)]
    assert len(blocks) == 1, f"docs/eole.md has {len(blocks)} yaml blocks starting {first_line!r}"
    return blocks[0]


@pytest.fixture
def page_config(tmp_path, monkeypatch):
    """The page's config as data, in a folder holding the files it names (Eole checks that they exist)."""
    import onmt_xl.eole

    onmt_xl.eole.register()
    config = yaml.safe_load(page_yaml("# xl.yaml"))
    monkeypatch.chdir(tmp_path)
    paths = [config["src_vocab"], config["tgt_vocab"], config["transforms_configs"]["xl_position"]["xl_preorderer"],
             *(c[k] for c in config["data"].values() for k in ("path_src", "path_tgt"))]
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("a\n")
    return config


def test_the_page_yaml_validates_with_eoles_config_model(page_config):
    from eole.config.run import TrainConfig

    from onmt_xl.eole.config import XLTransformerEncoderConfig

    config = TrainConfig(**page_config)
    assert isinstance(config.model.encoder, XLTransformerEncoderConfig)
    assert config.model.encoder.encoder_type == "xl_combination" and config.model.encoder.heads == 4
    assert config.model.encoder.resolved_xl_heads == 2
    assert config.data["corpus_1"].transforms == ["xl_position"]
    assert config.transforms_configs.xl_position.xl_preorderer == "preorderer.xlp"
    assert config.report_every == 100 and config.training.dropout == [0.1]
    assert config.training.attention_dropout == [0.1] and config.training.train_steps == 20000


@pytest.mark.parametrize("move", ["report_every under training", "dropout under model"])
def test_the_places_the_page_warns_against_are_refused(page_config, move):
    from eole.config.run import TrainConfig
    from pydantic import ValidationError

    if move == "report_every under training":
        page_config["training"]["report_every"] = page_config.pop("report_every")
    else:
        page_config["model"]["dropout"] = page_config["training"].pop("dropout")[0]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        TrainConfig(**page_config)


def test_the_page_server_config_is_what_eole_serve_reads():
    server = yaml.safe_load(page_yaml("models_root:"))
    assert set(server) == {"models_root", "models"}
    assert server["models"] == [{"id": "xl", "path": "model", "preload": True, "config": {"beam_size": 2}}]


@pytest.mark.skipif(not EOLE.exists() or "onmt_xl_hook" not in sys.modules,
                    reason="needs Eole's `eole` script beside this interpreter and onmt_xl installed in its "
                           "environment (onmt_xl_hook.pth)")
def test_onmt_xl_adds_no_warning_to_an_eole_command():
    """``eole train -h`` prints the same on stderr (Eole's own warnings) with onmt_xl and without it."""
    from tests.conftest import run_env

    env = {k: v for k, v in run_env().items() if k != "PYTHONWARNINGS"}
    stderr = {}
    for disabled in ("0", "1"):
        proc = subprocess.run([str(EOLE), "train", "-h"], env={**env, "ONMT_XL_DISABLE": disabled},
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        stderr[disabled] = proc.stderr
    assert stderr["0"] == stderr["1"]
    assert "onmt_xl" not in stderr["0"]
