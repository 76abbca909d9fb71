"""Fail safety of the seams (``onmt_xl.opennmt.seams``) and of the import hook: a seam that cannot apply costs what it
names and nothing else, and ``import onmt`` never fails because of us."""

import subprocess
import sys

from tests.conftest import run_env


def _python(code, env=None, cwd=None):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env or run_env(), cwd=cwd)


def test_a_failing_seam_logs_one_line_and_the_rest_applies():
    code = (
        "import onmt_xl.opennmt.seams.server as server\n"
        "def broken():\n"
        "    raise AttributeError(\"type object 'ServerModel' has no attribute 'parse_opt'\")\n"
        "server.apply = broken\n"
        "import onmt\n"  # the hook registers here, with the server seam broken
        "import onmt_xl.opennmt.seams as seams\n"
        "from onmt.encoders import str2enc\n"
        "from onmt.inputters import dynamic_iterator\n"
        "from onmt.utils.parse import ArgumentParser\n"
        "import onmt.opts\n"
        "p = ArgumentParser(); onmt.opts.train_opts(p)\n"
        "print(sorted(seams.failed()), 'xl_combination' in str2enc, dynamic_iterator.tensorify._onmt_xl,\n"
        "      '--xl_exact_resume' in p._option_string_actions)\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["['server']", "True", "True", "True"]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("onmt_xl: warning")]
    assert len(lines) == 1
    from onmt_xl.opennmt.seams.base import onmt_version
    from onmt_xl.opennmt.seams.server import LOST

    assert "'server'" in lines[0] and f"OpenNMT-py {onmt_version()}" in lines[0] and LOST in lines[0]
    assert "has no attribute 'parse_opt'" in lines[0]


def test_a_failing_component_costs_only_itself():
    code = (
        "import onmt\n"
        "from onmt.decoders import register_decoder\n"
        "from onmt.encoders import str2enc\n"
        "import onmt_xl.opennmt.seams as seams\n"
        "print(sorted(seams.failed()), 'xl_combination' in str2enc)\n"
    )
    # a decoder of the same name registered by another plug-in before ours: OpenNMT refuses the duplicate (a
    # plug-in with our legacy name, reordering_embedding, costs nothing: tests/test_names.py)
    pre = ("import onmt_xl_hook, sys\n"
           "sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, onmt_xl_hook.OnmtImportHook)]\n"
           "import onmt\n"
           "from onmt.decoders import register_decoder\n"
           "from onmt.decoders.decoder import DecoderBase\n"
           "class Other(DecoderBase):\n    pass\n"
           "register_decoder('xl_reordering_embedding')(Other)\n"
           "import onmt_xl; onmt_xl.register()\n")
    proc = _python(pre + code.replace("import onmt\n", "", 1))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["['onmt_xl.opennmt.decoders.reordering_embedding']", "True"]
    assert sum(line.startswith("onmt_xl: warning") for line in proc.stderr.splitlines()) == 1


def test_import_onmt_survives_a_broken_onmt_xl(tmp_path):
    broken = tmp_path / "onmt_xl"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise RuntimeError('simulated breakage')\n")
    env = run_env()
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"  # the checkout's hook, a broken onmt_xl before ours
    proc = _python("import onmt\nfrom onmt.encoders import str2enc\nprint('xl_combination' in str2enc)\n", env,
                   cwd=tmp_path)  # not the checkout, which ``python -c`` would put first on sys.path
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "False"
    warned = [line for line in proc.stderr.splitlines() if line.startswith("onmt_xl: warning")]
    assert len(warned) == 1 and "simulated breakage" in warned[0] and "ONMT_XL_DISABLE=1" in warned[0]



def test_a_look_up_of_onmt_before_its_import_keeps_the_hook():
    """``importlib.util.find_spec("onmt")`` (e.g. a test module's skip condition) imports nothing: the hook must
    still register at the real import that follows."""
    code = ("import importlib.util, sys\n"
            "assert importlib.util.find_spec('onmt') is not None and 'onmt' not in sys.modules\n"
            "import onmt\nfrom onmt.encoders import str2enc\nprint('xl_combination' in str2enc)\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "True"
