"""One declaration per option (:mod:`onmt_xl.core.options_table`): OpenNMT-py's parsers (as ``onmt_train -h`` /
``onmt_translate -h`` build them, hook on) and Eole's config models both carry each option's default, choices, bounds
and help from its table, so the two frameworks cannot disagree. The Eole half skips where ``import eole`` fails."""

import json
import subprocess
import sys
import typing

import pytest

from onmt_xl.core.options_table import OPTIONS, TABLES, Option, option
from tests.conftest import run_env

#: our option groups in OpenNMT-py's parsers: every option in them comes from a table
GROUPS = ("Model-Encoder-XL", "Transform/XLPosition")

PROBE = """
import json
from onmt.bin.train import _get_parser as train
from onmt.bin.translate import _get_parser as translate

out = {}
for command, build in (("onmt_train", train), ("onmt_translate", translate)):
    parser = build()
    out[command] = {
        a.dest: {"default": a.default, "choices": list(a.choices) if a.choices is not None else None,
                 "help": a.help, "type": getattr(a.type, "__name__", None), "strings": a.option_strings,
                 "group": next(g.title for g in parser._action_groups if a in g._group_actions)}
        for a in parser._actions if a.dest.startswith("xl_")
    }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def onmt_parsers():
    env = run_env()
    env.pop("ONMT_XL_DISABLE", None)
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def test_the_tables_name_each_option_once():
    names = [o.name for table in TABLES for o in table]
    assert len(names) == len(set(names)) == len(OPTIONS)
    assert all(n.startswith("xl_") for n in names)
    for o in OPTIONS.values():
        assert o.default is None or isinstance(o.default, o.type), o.name
        assert o.choices is None or o.default in o.choices, o.name
        assert o.bound_error(o.default) is None, o.name


def test_opennmt_parsers_carry_the_tables(onmt_parsers):
    train = onmt_parsers["onmt_train"]
    assert set(OPTIONS) <= set(train), sorted(set(OPTIONS) - set(train))
    for command, actions in onmt_parsers.items():
        ours = {dest for dest, a in actions.items() if a["group"] in GROUPS}
        assert ours <= set(OPTIONS), (command, sorted(ours - set(OPTIONS)))  # none declared beside the tables
        for name in set(actions) & set(OPTIONS):
            o, a = OPTIONS[name], actions[name]
            assert a["strings"][:2] == [f"--{name}", f"-{name}"], (command, name)
            assert a["default"] == o.default and a["type"] == o.type.__name__, (command, name)
            assert a["choices"] == _jsonable(o.choices), (command, name)
            assert a["help"] == o.help_for("onmt"), (command, name)


def test_help_is_rendered_per_framework():
    o = option("xl_align_path")
    assert o.help_for("onmt").startswith("-xl_source align") and "onmt_translate" in o.help_for("onmt")
    eole = o.help_for("eole")
    assert eole.startswith("xl_source align") and "eole predict" in eole and "onmt_translate" not in eole
    assert "see xl_reordering_loss)" in option("xl_reordering_loss_weight").help_for("eole")
    assert "X+PE_XL" in option("xl_heads").help_for("eole")  # only option references lose their dash


def test_bounds_give_opennmt_messages():
    assert option("xl_noise").bound_error(1.5) == "-xl_noise must be in [0, 1], got 1.5"
    assert option("xl_noise").bound_error(-0.1) is not None and option("xl_noise").bound_error(1.0) is None
    assert option("xl_exgre_window").bound_error(0.0) == "-xl_exgre_window must be > 0, got 0.0"
    assert option("xl_cache_size").bound_error(-1) == "-xl_cache_size must be >= 0, got -1"
    assert option("xl_cache_size").bound_error(0) is None
    assert Option("xl_x", int, 1, "", le=3).bound_error(4) == "-xl_x must be <= 3, got 4"


def _eole_configs():
    pytest.importorskip("eole", reason="Eole is not installed (see tests/test_eole.py)")
    import eole.config  # noqa: F401  (before our configs, as Eole's own start-up imports them)

    from onmt_xl.eole import baseline_config, config, transforms

    return (config.XLTransformerEncoderConfig, *baseline_config.BASELINE_CONFIGS, *baseline_config.DECODER_CONFIGS,
            transforms.XLPreReorderConfig, transforms.XLPositionConfig)


def _eole_field(info):
    """(type, choices, bounds) of a pydantic field: ``Optional`` and ``Literal`` unwrapped."""
    kind = info.annotation
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) is typing.Union and len(args) == 1:
        kind = args[0]
    choices = list(typing.get_args(kind)) if typing.get_origin(kind) is typing.Literal else None
    bounds = {k: getattr(m, k) for m in info.metadata for k in ("ge", "gt", "le") if hasattr(m, k)}
    return kind, choices, bounds


def test_eole_configs_carry_the_tables():
    declared = set()
    for cls in _eole_configs():
        for name, info in cls.model_fields.items():
            if not name.startswith("xl_"):
                continue
            declared.add(name)
            assert name in OPTIONS, (cls.__name__, name)
            o = OPTIONS[name]
            kind, choices, bounds = _eole_field(info)
            assert info.default == o.default, (cls.__name__, name)
            assert choices == _jsonable(o.choices) and (choices is not None or kind is o.type), (cls.__name__, name)
            assert bounds == {k: v for k, v in (("ge", o.ge), ("gt", o.gt), ("le", o.le)) if v is not None}, name
            help_ = o.help_for("eole")
            assert info.description == help_ or info.description.startswith(help_ + " "), (cls.__name__, name)
    assert declared == set(OPTIONS), sorted(set(OPTIONS) ^ declared)


def test_both_frameworks_agree(onmt_parsers):
    """Each option Eole declares has OpenNMT-py's default and choices; its help differs only in the spelling."""
    train = onmt_parsers["onmt_train"]
    for cls in _eole_configs():
        for name, info in cls.model_fields.items():
            if name in OPTIONS:
                _, choices, _ = _eole_field(info)
                assert info.default == train[name]["default"] and choices == train[name]["choices"], name
                onmt_help = Option(name, str, None, train[name]["help"].replace("onmt_translate", "{predict}"))
                assert info.description.startswith(onmt_help.help_for("eole")), name
