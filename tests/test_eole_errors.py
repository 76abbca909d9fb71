"""Mistakes with our components in an Eole config give one short line naming the file and the problem, no traceback
(:mod:`onmt_xl.eole.messages`); a stock config's mistakes keep Eole's own traceback. Skips without Eole."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("eole", reason="Eole is not installed (pip install eole==0.6.4 in a venv; see tests/test_eole.py)")

from tests.test_eole import E2E_CONFIG, e2e_files, run_eole  # noqa: E402

MODULE = [sys.executable, "-m", "onmt_xl.eole"]
EOLE = Path(sys.executable).with_name("eole")

#: name -> (edit of tests.test_eole.E2E_CONFIG's train.yaml, what the one error line must say)
MISTAKES = {
    "xl_heads_above_heads": (("xl_heads: 1", "xl_heads: 7"), "xl_heads must be in [0, heads=2], got 7"),
    "xl_heads_not_a_number": (("xl_heads: 1", "xl_heads: two"),
                              "encoder.xl_combination.xl_heads: Input should be a valid integer"),
    "unknown_xl_source": (("{xl_preorderer:", "{xl_source: oracle, xl_preorderer:"),
                          "transforms_configs.xl_position.xl_source: Input should be 'preorderer' or 'align' "
                          "(got 'oracle')"),
    "mistyped_option": (("xl_heads: 1", "xl_haeds: 1"), "xl_haeds: Extra inputs are not permitted; did you mean "
                                                        "xl_heads?"),
    "xl_option_under_transformer_architecture": (("architecture: custom", "architecture: transformer"),
                                                 "model.transformer: encoder_type xl_combination: set the model's "
                                                 "architecture to 'custom'"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A tiny corpus, its preorderer and vocabularies (Eole checks the vocabulary files exist when it validates)."""
    wd = tmp_path_factory.mktemp("eole_errors")
    e2e_files(wd)
    run_eole(MODULE, "build_vocab", "-config", wd / "vocab.yaml", cwd=wd)
    return wd


def bad_config(wd: Path, name: str, old: str, new: str) -> Path:
    text = (wd / "train.yaml").read_text()
    assert old in text, old  # the edit must change something
    path = wd / f"{name}.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def assert_one_line(proc, config: Path, expected: str, status: int = 2):
    """Exit ``status``, no traceback, and the error line ``eole train: error: CONFIG: ...expected...``."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == status, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("eole train: error: ")]
    assert len(errors) == 1, out[-3000:]
    assert expected in errors[0], errors[0]
    if config is not None:
        assert errors[0].startswith(f"eole train: error: {config}: ") or str(config) in errors[0], errors[0]


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_config_mistakes_give_one_line(workdir, name):
    (old, new), expected = MISTAKES[name]
    config = bad_config(workdir, name, old, new)
    proc = run_eole(MODULE, "train", "-config", config, cwd=workdir, ok=False)
    assert_one_line(proc, config, expected)


def test_xl_heads_above_the_models_heads_names_the_models_heads(workdir):
    """``heads`` set on the model, not the encoder, reaches the encoder config after Eole validated it with its
    default (8): the limit in the message is the configured 4, not 8 (issue 77)."""
    config = bad_config(workdir, "xl_heads_9_of_4", "xl_heads: 1", "xl_heads: 9")
    config.write_text(config.read_text().replace("  heads: 2\n", "  heads: 4\n"))
    proc = run_eole(MODULE, "train", "-config", config, cwd=workdir, ok=False)
    assert_one_line(proc, config, "xl_heads must be in [0, heads=4], got 9")


def test_missing_preorderer_names_the_file(workdir):
    config = bad_config(workdir, "missing_pre", "pre.xlp}", "nope.xlp}")
    proc = run_eole(MODULE, "train", "-config", config, cwd=workdir, ok=False)
    assert_one_line(proc, None, f"{workdir / 'nope.xlp'}: preorderer model file not found")


def test_no_preorderer_option_names_the_option(workdir):
    text = (workdir / "train.yaml").read_text()
    start = text.index("transforms_configs:")
    end = text.index("\n", text.index("xl_preorderer", start)) + 1
    config = workdir / "no_preorderer.yaml"
    config.write_text(text[:start] + text[end:])
    proc = run_eole(MODULE, "train", "-config", config, cwd=workdir, ok=False)
    assert_one_line(proc, config, "xl_position needs transforms_configs.xl_position.xl_preorderer")


@pytest.mark.skipif(not EOLE.exists() or "onmt_xl_hook" not in sys.modules,
                    reason="needs Eole's `eole` script beside this interpreter and onmt_xl installed in its "
                           "environment (onmt_xl_hook.pth)")
def test_plain_eole_gives_the_same_line_and_stock_eole_its_traceback(workdir):
    (old, new), expected = MISTAKES["unknown_xl_source"]
    config = bad_config(workdir, "plain_unknown_xl_source", old, new)
    assert_one_line(run_eole([EOLE], "train", "-config", config, cwd=workdir, ok=False), config, expected)
    # switched off, Eole is stock: its own traceback, none of our lines
    off = run_eole([EOLE], "train", "-config", config, cwd=workdir, env={"ONMT_XL_DISABLE": "1"}, ok=False)
    assert off.returncode != 0 and "Traceback" in off.stderr and "eole train: error:" not in off.stderr


def test_a_stock_mistake_keeps_eoles_traceback(workdir):
    """Stock stays stock: a config naming nothing of ours, with a mistake of Eole's own, fails as Eole fails."""
    stock = (E2E_CONFIG.replace("architecture: custom", "architecture: transformer")
             .replace("  encoder: {{encoder_type: xl_combination, xl_heads: 1}}\n", "")
             .replace("  decoder: {{decoder_type: transformer}}\n", "")
             .replace("transforms: [xl_position]", "transforms: []")
             .replace("transforms_configs:\n  xl_position: {{xl_preorderer: {pre}}}\n", "")
             .replace("  heads: 2\n", "  hedas: 2\n"))
    assert "xl_" not in stock and "hedas" in stock
    config = workdir / "stock_typo.yaml"
    config.write_text(stock.format(wd=workdir, n_sample=0))
    proc = run_eole(MODULE, "train", "-config", config, cwd=workdir, ok=False)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "ValidationError" in proc.stderr
    assert "hedas" in proc.stderr and "eole train: error:" not in proc.stderr


def test_xl_encoder_type_under_transformer_architecture_fails(workdir):
    config = bad_config(workdir, "arch_transformer_type_only", "architecture: custom", "architecture: transformer")
    config.write_text(config.read_text().replace("encoder: {encoder_type: xl_combination, xl_heads: 1}",
                                                 "encoder: {encoder_type: xl_combination}"))
    proc = run_eole(MODULE, "train", "-config", config, cwd=workdir, ok=False)
    assert_one_line(proc, config, "architecture", status=2)
