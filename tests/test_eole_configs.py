"""``yaml_configs/eole/``: generated from the same declarations as the OpenNMT-py configs, the same model and training,
and (where Eole is installed) accepted by Eole's own config machinery with the adapter's seams in place."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from onmt_xl.experiments.eole_configs import (
    EOLE_NOT_PORTED,
    EOLE_SYSTEMS,
    RNN_OPTIONS,
    RNN_TYPES,
    missing_systems,
    render,
)
from onmt_xl.experiments.systems import SYSTEMS
from tests.conftest import run_env

REPO = Path(__file__).resolve().parents[1]
EOLE_DIR = REPO / "yaml_configs" / "eole"


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_eole_configs_are_what_the_generator_renders():
    assert sorted(p.stem for p in EOLE_DIR.glob("*.yaml")) == sorted(EOLE_SYSTEMS), "run `onmt-xl write-configs`"
    for system in EOLE_SYSTEMS:
        assert (EOLE_DIR / f"{system}.yaml").read_text() == render(system), (
            f"yaml_configs/eole/{system}.yaml is stale: run `onmt-xl write-configs`")


def test_the_eole_systems_are_declared_systems_and_the_rest_are_listed_missing():
    assert set(EOLE_SYSTEMS) <= set(SYSTEMS) and len(set(EOLE_SYSTEMS)) == len(EOLE_SYSTEMS)
    assert set(EOLE_NOT_PORTED) <= set(SYSTEMS) - set(EOLE_SYSTEMS)
    assert set(missing_systems()) == set(SYSTEMS) - set(EOLE_SYSTEMS)


@pytest.mark.parametrize("system", EOLE_SYSTEMS)
def test_each_eole_config_trains_the_opennmt_configs_model(system):
    """Read from the committed files on both sides: the same sizes, schedule, data and preorderer, and the same
    encoder with the same options."""
    onmt, eole = _load(REPO / "yaml_configs" / f"{system}.yaml"), _load(EOLE_DIR / f"{system}.yaml")
    model, training = eole["model"], eole["training"]
    rnn = onmt["encoder_type"] in RNN_TYPES
    for key in ("heads", "hidden_size", "transformer_ff"):
        if rnn and key != "hidden_size":  # Transformer sizes, which an RNN does not read, are left out
            assert key not in model, key
        else:
            assert model[key] == onmt[key], key
    assert model["layers"] == onmt["enc_layers"] == onmt["dec_layers"]
    assert model["embeddings"]["word_vec_size"] == onmt["word_vec_size"]
    if rnn:  # no PE (and so no √d scaling in Eole), as OpenNMT-py's position_encoding: false
        assert model["embeddings"]["position_encoding_type"] is None and not onmt["position_encoding"]
    else:
        assert model["embeddings"]["position_encoding_type"] == "SinusoidalInterleaved" and onmt["position_encoding"]
    for key in ("train_steps", "valid_steps", "save_checkpoint_steps", "batch_size", "batch_type", "optim",
                "learning_rate", "warmup_steps", "decay_method", "adam_beta2", "label_smoothing", "dropout",
                "attention_dropout", "max_grad_norm", "bucket_size", "valid_batch_size"):
        assert training[key] == onmt[key], key
    assert eole["seed"] == onmt["seed"]
    assert training["param_init_method"] == ("xavier_uniform" if onmt["param_init_glorot"] else "uniform")
    for split in ("train", "valid"):  # the same corpora (path_src, path_tgt, path_align) and transforms
        assert eole["data"][split] == onmt["data"][split]
    if onmt["encoder_type"] == "transformer" and onmt["decoder_type"] == "transformer":
        assert model["architecture"] == "transformer" and "encoder" not in model and "decoder" not in model
    else:
        assert model["architecture"] == "custom"
        encoder = dict(model["encoder"])
        assert encoder.pop("encoder_type") == onmt["encoder_type"]
        rnn_options = {part: {k: onmt[k] for k, parts in RNN_OPTIONS.items() if k in onmt and part in parts}
                       for part in ("encoder", "decoder")}
        assert encoder == {**{k: v for k, v in onmt.items() if k.startswith("xl_") and k not in ("xl_source",
                                                                                                 "xl_preorderer")},
                           **rnn_options["encoder"]}
        assert model["decoder"] == {"decoder_type": onmt["decoder_type"], **rnn_options["decoder"]}
    transform = {t for d in onmt["data"].values() for t in d["transforms"]}
    assert set(eole.get("transforms_configs", {})) == transform
    for name in transform:
        assert eole["transforms_configs"][name].get("xl_preorderer") == onmt.get("xl_preorderer")
        assert eole["transforms_configs"][name].get("xl_source", "preorderer") == onmt.get("xl_source")
    assert Path(training["model_path"]).parent.parent == Path(onmt["save_model"]).parent.parent / "eole"


VALIDATE = """
import json, sys
import yaml
from onmt_xl.eole.hook import install
install()
from eole.config.run import TrainConfig
out = {}
for path in sys.argv[1:]:
    try:
        c = TrainConfig(**yaml.safe_load(open(path)))
    except Exception as err:  # reported per file
        out[path] = {"error": str(err)[:500]}
        continue
    pe = c.model.embeddings.position_encoding_type
    out[path] = {"model": type(c.model).__name__, "encoder": type(c.model.encoder).__name__,
                 "encoder_type": c.model.encoder.encoder_type, "decoder_type": c.model.decoder.decoder_type,
                 "xl_heads": getattr(c.model.encoder, "xl_heads", None),
                 "norm_eps": getattr(c.model.decoder, "norm_eps", None),
                 "pe": getattr(pe, "value", pe),
                 "layers": [c.model.encoder.layers, c.model.decoder.layers],
                 "hidden_size": [c.model.encoder.hidden_size, c.model.decoder.hidden_size],
                 "rnn": {k: getattr(c.model.decoder, k, None) for k in (
                     "rnn_type", "global_attention", "bidirectional_encoder")} | {
                     "encoder_rnn_type": getattr(c.model.encoder, "rnn_type", None), "input_feed": c.model.input_feed},
                 "transforms": {k: v.transforms for k, v in c.data.items()}}
print(json.dumps(out))
"""


def _eole_run(script: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=run_env(),
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_eole_validates_each_config(tmp_path):
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    bad = tmp_path / "bad.yaml"  # a config Eole must refuse, so that acceptance means something
    cfg = _load(EOLE_DIR / "combination.yaml")
    cfg["model"]["encoder"]["xl_heads"] = cfg["model"]["heads"] + 1
    bad.write_text(yaml.safe_dump(cfg))
    files = [str(EOLE_DIR / f"{s}.yaml") for s in EOLE_SYSTEMS] + [str(bad)]
    out = _eole_run(VALIDATE, *files)
    assert "xl_heads must be in" in out.pop(str(bad))["error"]
    for system in EOLE_SYSTEMS:
        got, onmt = out[str(EOLE_DIR / f"{system}.yaml")], _load(REPO / "yaml_configs" / f"{system}.yaml")
        assert "error" not in got, (system, got)
        assert got["encoder_type"] == onmt["encoder_type"] and got["decoder_type"] == onmt["decoder_type"]
        assert got["layers"] == [onmt["enc_layers"], onmt["dec_layers"]]
        assert got["hidden_size"] == [onmt["hidden_size"]] * 2
        if onmt["encoder_type"] in RNN_TYPES:  # Eole's RNNs: OpenNMT-py's bidirectional encoder, input feeding, no PE
            assert got["norm_eps"] is None and got["pe"] is None
            assert got["rnn"] == {"rnn_type": onmt["rnn_type"], "global_attention": onmt["global_attention"],
                                  "bidirectional_encoder": onmt["encoder_type"] == "brnn",
                                  "encoder_rnn_type": onmt["rnn_type"], "input_feed": 1}
        else:
            assert got["norm_eps"] == 1e-6 and got["pe"] == "SinusoidalInterleaved"
        stock = onmt["encoder_type"] == "transformer" and onmt["decoder_type"] == "transformer"
        assert got["model"] == ("TransformerModelConfig" if stock else "CustomModelConfig")
        assert (got["encoder"] == "TransformerEncoderConfig") == (onmt["encoder_type"] == "transformer")
        assert got["xl_heads"] == onmt.get("xl_heads")
        assert got["transforms"] == {"train": onmt["data"]["train"]["transforms"],
                                     "valid": onmt["data"]["valid"]["transforms"]}


REGISTERED = """
import json
from onmt_xl.eole.hook import install
install()
import eole.config.run  # noqa: F401 - the seams are applied as Eole's modules load
from eole.decoders import str2dec
from eole.encoders import str2enc
from eole.transforms import AVAILABLE_TRANSFORMS
from onmt_xl.eole.transforms import XLPositionConfig
try:
    XLPositionConfig(xl_source="align", xl_align_path="train.gdfa")
    align = True
except ValueError:
    align = False
print(json.dumps({"encoders": sorted(str2enc), "decoders": sorted(str2dec), "transforms": sorted(AVAILABLE_TRANSFORMS),
                  "align": align}))
"""


def test_every_system_whose_components_eole_has_gets_a_config():
    """When an encoder, decoder or transform is ported to Eole (``onmt_xl/eole/``), the systems built from it must join
    ``EOLE_SYSTEMS`` (and get a config): a system is missing only while one of its components is."""
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    from onmt_xl.experiments.configs import config
    from onmt_xl.experiments.systems import ALIGNED_R

    reg = _eole_run(REGISTERED)
    assert {"xl_inxl", "xl_headxl", "xl_combination"} <= set(reg["encoders"]) and "xl_position" in reg["transforms"]
    for system, spec in SYSTEMS.items():
        cfg = config(system)
        transform = {None: True, ALIGNED_R: reg["align"] and "xl_position" in reg["transforms"]}.get(
            spec.transform, spec.transform in reg["transforms"])  # ALIGNED_R: xl_position with xl_source align
        has = cfg["encoder_type"] in reg["encoders"] and cfg["decoder_type"] in reg["decoders"] and transform
        if has and system not in EOLE_NOT_PORTED:
            assert system in EOLE_SYSTEMS, f"Eole has every component of {system}: add it to EOLE_SYSTEMS"
        else:
            assert system not in EOLE_SYSTEMS, f"{system} is in EOLE_SYSTEMS but Eole lacks one of its components"
