"""Names that cannot collide: every option and component name onmt_xl adds to OpenNMT-py starts with ``xl_``, and
the names it had before (``onmt_xl.opennmt.names``) keep working without taking a name from another plug-in.

What is ours is computed, not listed: OpenNMT's parsers and registries are built in a process with the hook off
(``ONMT_XL_DISABLE=1``, stock OpenNMT-py) and in one with it on, and the difference is what we add.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from onmt_xl.opennmt.names import LEGACY_DECODERS, LEGACY_ENCODERS, LEGACY_OPTIONS, PREFIX
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_model_workdir

PRE_MOVE = Path(__file__).parent / "data" / "pre_move"

#: each stock command's parser, with the arguments it requires
PARSERS = {
    "onmt_train": ("onmt.bin.train", ["-data", "{}", "-src_vocab", "unused"]),
    "onmt_translate": ("onmt.bin.translate", ["-model", "unused.pt", "-src", "unused.txt"]),
    "onmt_build_vocab": ("onmt.bin.build_vocab", ["-data", "{}", "-src_vocab", "unused", "-save_data", "unused"]),
}

PROBE = """
import importlib, json
import onmt
from onmt.decoders import str2dec
from onmt.encoders import str2enc
from onmt.transforms import AVAILABLE_TRANSFORMS

PARSERS = json.loads(%r)
def classes(registry):
    return {name: f"{cls.__module__}.{cls.__qualname__}" for name, cls in registry.items()}


out = {"encoders": classes(str2enc), "decoders": classes(str2dec), "transforms": classes(AVAILABLE_TRANSFORMS),
       "options": {}, "parsed": {}}
for command, (module, required) in PARSERS.items():
    parser = importlib.import_module(module)._get_parser()
    out["options"][command] = {s: a.dest for s, a in parser._option_string_actions.items()}
    parser.parse_known_args(required)  # where the legacy option strings are attached
    out["parsed"][command] = {s: a.dest for s, a in parser._option_string_actions.items()}
print(json.dumps(out))
""" % json.dumps(PARSERS)


def _python(code, disabled=False, check=True):
    env = run_env()
    env.pop("ONMT_XL_DISABLE", None)
    if disabled:
        env["ONMT_XL_DISABLE"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def probes():
    return {disabled: json.loads(_python(PROBE, disabled).stdout.splitlines()[-1]) for disabled in (True, False)}


def _ours(name: str) -> bool:
    return name.lstrip("-").startswith(PREFIX)


def test_every_option_and_component_of_ours_is_prefixed(probes):
    stock, ours = probes[True], probes[False]
    for kind, legacy in (("encoders", LEGACY_ENCODERS), ("decoders", LEGACY_DECODERS), ("transforms", {})):
        assert {n: c for n, c in ours[kind].items() if n in stock[kind]} == stock[kind]  # stock's stay stock's
        added = {n: c for n, c in ours[kind].items() if n not in stock[kind]}
        named = {n: c for n, c in added.items() if n not in legacy}
        assert named and all(_ours(n) and c.startswith("onmt_xl.") for n, c in named.items()), (kind, named)
        assert all(added[old] == named[new] for old, new in legacy.items()), kind  # legacy names: aliases of ours
    for command in PARSERS:
        before, after = stock["options"][command], ours["options"][command]
        assert {s: d for s, d in after.items() if s in before} == before, command  # stock's options stay stock's
        added = {s: d for s, d in after.items() if s not in before}
        assert all(_ours(s) and _ours(d) for s, d in added.items()), (command, sorted(added))
    trained = set(ours["options"]["onmt_train"]) - set(stock["options"]["onmt_train"])
    for new in LEGACY_OPTIONS.values():  # each renamed option is declared, under its new name only
        assert {f"-{new}", f"--{new}"} <= trained, new
    assert {f"-xl_{o}" for o in ("heads", "source", "preorderer", "cache_size", "align_path", "noise", "cpu_kernels")} <= trained


def test_legacy_option_strings_are_attached_to_ours_where_free(probes):
    stock, ours = probes[True], probes[False]
    for command in PARSERS:
        before, after = ours["options"][command], ours["parsed"][command]
        attached = {s: d for s, d in after.items() if s not in before}
        assert set(after) - set(attached) == set(before)
        for string, dest in attached.items():
            old = string.lstrip("-")
            assert LEGACY_OPTIONS[old] == dest and string not in stock["parsed"][command], (command, string)
    # onmt_train knows every legacy name; onmt_translate the run options it has
    train = ours["parsed"]["onmt_train"]
    assert all(train[f"-{old}"] == new and train[f"--{old}"] == new for old, new in LEGACY_OPTIONS.items())
    assert ours["parsed"]["onmt_translate"]["-cpu_precision"] == "xl_cpu_precision"


def test_help_shows_the_legacy_name_beside_the_new_one():
    out = subprocess.run([stock_cli("onmt_train"), "-h"], capture_output=True, text=True, env=run_env(), check=True).stdout
    flat = " ".join(out.split())
    assert "--xl_inxl_init {identity,absolute}, --inxl_init {identity,absolute}, -inxl_init" in flat
    assert "[legacy name: -inxl_init]" in flat and "[legacy name: -exact_resume]" in flat


FOREIGN = """
import json, sys


def plugin():
    import onmt.opts as opts
    from onmt.decoders import register_decoder
    from onmt.decoders.decoder import DecoderBase
    from onmt.encoders import register_encoder
    from onmt.encoders.encoder import EncoderBase

    class TheirEncoder(EncoderBase):
        pass

    class TheirDecoder(DecoderBase):
        pass

    register_encoder("disan")(TheirEncoder)
    register_decoder("reordering_embedding")(TheirDecoder)
    stock_model_opts = opts.model_opts

    def model_opts(parser):
        stock_model_opts(parser)
        parser.add_argument_group("theirs").add("--inxl_init", "-inxl_init", type=str, default="theirs")

    opts.model_opts = model_opts
"""

#: the plug-in imported before onmt_xl registers (the hook off, registration by hand), or after (the hook on)
BEFORE_US = ("import onmt_xl_hook\n"
             "sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, onmt_xl_hook.OnmtImportHook)]\n"
             "plugin()\nimport onmt_xl; onmt_xl.register()\n")
AFTER_US = "import onmt\nplugin()\n"


def _foreign(first: bool) -> str:
    """A second plug-in registering the encoder ``disan``, the decoder ``reordering_embedding`` and the option
    ``-inxl_init`` before (``first``) or after onmt_xl."""
    return FOREIGN + (BEFORE_US if first else AFTER_US)


CHECK = """
import onmt_xl.opennmt.seams as seams
from onmt.bin.train import _get_parser
from onmt.decoders import str2dec
from onmt.encoders import str2enc
from onmt.utils.parse import ArgumentParser

ns, _ = _get_parser().parse_known_args(["-data", "{}", "-src_vocab", "x", "-inxl_init", "mine", "-disan_fusion", "none",
                                        "-encoder_type", "disan"])
ArgumentParser.update_model_opts(ns)
print(json.dumps({
    "failed": sorted(seams.failed()), "disan": str2enc["disan"].__name__, "xl_disan": str2enc["xl_disan"].__module__,
    "dec": str2dec["reordering_embedding"].__name__, "xl_dec": str2dec["xl_reordering_embedding"].__module__,
    "inxl_init": ns.inxl_init, "xl_inxl_init": ns.xl_inxl_init, "xl_disan_fusion": ns.xl_disan_fusion,
    "disan_fusion": hasattr(ns, "disan_fusion"), "encoder_type": ns.encoder_type,
}))
"""


@pytest.mark.parametrize("first", [True, False], ids=["before us", "after us"])
def test_a_plugin_with_our_legacy_names_keeps_them(first):
    proc = _python(_foreign(first) + CHECK)
    got = json.loads(proc.stdout.splitlines()[-1])
    assert not [line for line in proc.stderr.splitlines() if line.startswith("onmt_xl: warning")]
    assert got == {"failed": [], "disan": "TheirEncoder", "xl_disan": "onmt_xl.opennmt.encoders.disan", "dec": "TheirDecoder",
                   "xl_dec": "onmt_xl.opennmt.decoders.reordering_embedding", "inxl_init": "mine", "xl_inxl_init": "absolute",
                   "xl_disan_fusion": "none", "disan_fusion": False, "encoder_type": "disan"}  # theirs: not mapped


def _with_pe_buffers(path: Path, out: Path) -> Path:
    from tests.test_pre_move import with_pe_buffers

    return with_pe_buffers(path, out)


def test_an_old_checkpoint_translates_when_a_plugin_took_its_encoder_name(tmp_path):
    """tests/data/pre_move/disan.pt names encoder_type disan and disan_fusion; another plug-in owns disan and
    -inxl_init here. The checkpoint's options are ours (their attributes tell), so it loads as xl_disan and
    translates as it always did; the other plug-in's option keeps its default."""
    model = _with_pe_buffers(PRE_MOVE / "disan.pt", tmp_path / "disan.pt")
    hyp = tmp_path / "hyp.txt"
    args = ["onmt_translate", "-model", str(model), "-src", str(PRE_MOVE / "test.src"), "-output", str(hyp),
            "-beam_size", "3", "-seed", "1"]
    code = _foreign(True) + (
        "import torch\n"
        "from onmt.utils.parse import ArgumentParser\n"
        f"ckpt = torch.load({str(model)!r}, map_location='cpu', weights_only=False)\n"
        "opt = ArgumentParser.ckpt_model_opts(ckpt['opt'])\n"
        "print(json.dumps([opt.encoder_type, opt.xl_disan_fusion, opt.inxl_init, hasattr(opt, 'disan_fusion'),\n"
        "                  ckpt['opt'].encoder_type]))\n"
        f"sys.argv = {args!r}\n"
        "from onmt.bin.translate import main\n"
        "main()\n"
    )
    proc = _python(code)
    assert json.loads(proc.stdout.splitlines()[0]) == ["xl_disan", "gate", "theirs", False, "disan"]
    assert hyp.read_text(encoding="utf-8") == (PRE_MOVE / "disan.hyp").read_text(encoding="utf-8")
    note = [line for line in proc.stderr.splitlines() if line.startswith("onmt_xl: legacy name")]
    assert len(note) == 1 and "encoder_type disan -> xl_disan" in note[0] and "disan_fusion -> xl_disan_fusion" in note[0]


def _cli(name, *args, check=True):
    proc = subprocess.run([stock_cli(name), *map(str, args)], capture_output=True, text=True, env=run_env())
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_an_old_yaml_trains_and_translates_under_the_new_names(tmp_path):
    """A YAML written with today's legacy names (encoder_type disan, disan_fusion, exact_resume, cpu_precision)
    trains; the checkpoint stores the new names; an old flag translates it."""
    cfg_path = tiny_model_workdir(tmp_path, _cli, train_steps=2, valid_steps=2, save_checkpoint_steps=2)
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg.update(encoder_type="disan", disan_fusion="none", exact_resume=True, cpu_precision="fp32",
               inxl_init="absolute", save_model=str(tmp_path / "old"))
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(cfg))
    proc = _cli("onmt_train", "-config", tmp_path / "old.yaml")
    notes = [line for line in proc.stderr.splitlines() if line.startswith("onmt_xl: legacy name")]
    for old in ("disan_fusion", "exact_resume", "cpu_precision", "inxl_init"):
        assert sum(f"-{old} -> -xl_{old}" in line for line in notes) == 1, (old, notes)
    assert sum("encoder_type disan -> xl_disan" in line for line in notes) == 1, notes
    assert not [line for line in proc.stderr.splitlines() if "warning: unknown option" in line]
    ckpt = torch.load(tmp_path / "old_step_2.pt", map_location="cpu", weights_only=False)
    opt = vars(ckpt["opt"])
    assert opt["encoder_type"] == "xl_disan" and opt["xl_disan_fusion"] == "none" and opt["xl_inxl_init"] == "absolute"
    assert opt["xl_exact_resume"] is True and opt["xl_cpu_precision"] == "fp32"
    assert not set(opt) & set(LEGACY_OPTIONS)
    assert not any(".gates." in key for key in ckpt["model"])  # disan_fusion none reached the model
    assert "onmt_xl_rng" in ckpt["optim"]  # exact_resume reached the optimizer
    data = tmp_path / "data"
    proc = _cli("onmt_translate", "-model", tmp_path / "old_step_2.pt", "-src", data / "valid.src",
                "-output", tmp_path / "hyp.txt", "-cpu_precision", "fp32", "-max_length", "5")
    assert len((tmp_path / "hyp.txt").read_text().splitlines()) == 20
    assert any("-cpu_precision -> -xl_cpu_precision" in line for line in proc.stderr.splitlines())


def test_an_old_checkpoint_resumes_training_under_the_new_names(tmp_path):
    """-train_from an old checkpoint (pre_move/disan.pt: encoder_type disan, disan_fusion, ...) with an old YAML: the
    checkpoint's options are read with the new names, and the resumed run's checkpoints carry them."""
    model = _with_pe_buffers(PRE_MOVE / "disan.pt", tmp_path / "disan.pt")
    cfg_path = tiny_model_workdir(tmp_path, _cli, train_steps=2, valid_steps=1000, save_checkpoint_steps=2)
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg.update(encoder_type="disan", disan_fusion="gate", save_model=str(tmp_path / "resumed"))
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(cfg))
    _cli("onmt_train", "-config", tmp_path / "old.yaml", "-train_from", model)
    ckpt = torch.load(tmp_path / "resumed_step_2.pt", map_location="cpu", weights_only=False)
    opt = vars(ckpt["opt"])
    assert opt["encoder_type"] == "xl_disan" and opt["xl_disan_fusion"] == "gate" and not set(opt) & set(LEGACY_OPTIONS)
    assert any(".gates." in key for key in ckpt["model"])
