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
    # the LSTM (Tab. 4) is another family: its own model lines (rnn_type, no PE, 6 layers), the training the same
    rnn_keys = {"rnn_type", "global_attention", "position_encoding", "enc_layers", "dec_layers"}
    base = {k: v for k, v in cfgs["baseline"].items() if k not in encoder_keys}
    for system, cfg in cfgs.items():
        skip = encoder_keys | (rnn_keys if system == "lstm" else set())
        assert {k: v for k, v in cfg.items() if k not in skip} == {k: v for k, v in base.items() if k not in skip}, system


def test_lstm_is_opennmts_stock_attentional_lstm_with_six_layers_at_every_preset():
    from onmt_xl.experiments.configs import PRESETS, config

    for preset in PRESETS:
        cfg = config("lstm", preset=preset)
        assert (cfg["encoder_type"], cfg["decoder_type"], cfg["rnn_type"]) == ("brnn", "rnn", "LSTM")
        assert cfg["position_encoding"] is False and cfg["global_attention"] == "general"
        assert cfg["enc_layers"] == cfg["dec_layers"] == 6  # over the preset's Transformer layers
        assert cfg["hidden_size"] == config("baseline", preset=preset)["hidden_size"]  # the hidden size is d_model
    assert config("lstm", overrides={"enc_layers": 2})["enc_layers"] == 2  # a user's override still wins


def test_auto_preset_sizes_the_model_to_the_corpus_and_the_device():
    from onmt_xl.experiments.configs import auto_preset, config

    assert [auto_preset(n, gpu=True) for n in (600, 29_000, 500_000, 4_000_000)] == ["demo", "enja", "base", "big"]
    assert [auto_preset(n, gpu=False) for n in (600, 29_000, 500_000, 4_000_000)] == ["demo", "enja", "enja", "enja"]
    assert auto_preset(9_999, gpu=False) == "demo" and auto_preset(10_000, gpu=False) == "enja"
    for name in ("base", "big"):
        cfg = config("combination", preset=name)
        assert cfg["hidden_size"] % cfg["heads"] == 0 and cfg["xl_heads"] == cfg["heads"] // 2
