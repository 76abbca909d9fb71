from pathlib import Path

import yaml

from onmt_xl.experiments.configs import SYSTEMS, render

REPO = Path(__file__).resolve().parents[1]


def test_yaml_configs_are_what_the_generator_renders():
    for system in SYSTEMS:
        assert (REPO / "yaml_configs" / f"{system}.yaml").read_text() == render(system), (
            f"yaml_configs/{system}.yaml is stale: run `onmt-xl write-configs`"
        )


def test_configs_differ_only_in_encoder_lines():
    cfgs = {s: yaml.safe_load((REPO / "yaml_configs" / f"{s}.yaml").read_text()) for s in SYSTEMS}
    encoder_keys = {"encoder_type", "decoder_type", "xl_reordering_loss_weight", "xl_heads", "xl_inxl_fusion",
                    "xl_enc_max_relative_positions", "xl_source", "xl_preorderer", "xl_encoder_free_pe", "xl_disan_fusion",
                    "xl_exgre_window", "xl_reordering_loss", "xl_inxl_init", "data", "save_data", "save_model"}
    base = {k: v for k, v in cfgs["baseline"].items() if k not in encoder_keys}
    for system, cfg in cfgs.items():
        assert {k: v for k, v in cfg.items() if k not in encoder_keys} == base, system
