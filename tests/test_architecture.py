"""The package's import contracts (``[tool.importlinter]`` in pyproject.toml): the plug-in never imports the
workbench, and no modules import each other in a cycle."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    # The test interpreter's own lint-imports first: another one on PATH (a pyenv shim, a different venv) may not
    # run with the PATH below or may see another import-linter.
    beside = Path(sys.executable).with_name("lint-imports")
    lint = str(beside) if beside.exists() else shutil.which("lint-imports") or str(beside)
    assert Path(lint).exists(), "import-linter is a test requirement: pip install '.[test]'"
    proc = subprocess.run([lint, "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_sources_compile_without_warnings():
    """No invalid escape sequences and the like: Python 3.12 prints a SyntaxWarning for them at every first import
    (a user of the stock commands saw one per process)."""
    import warnings

    sources = [*sorted((ROOT / "onmt_xl").rglob("*.py")), *sorted((ROOT / "tools").rglob("*.py")), ROOT / "onmt_xl_hook.py"]
    assert len(sources) > 20
    for path in sources:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(path.read_text(encoding="utf-8"), str(path), "exec")


#: OpenNMT-py modules that the seams wrap (not extension points): only ``onmt_xl/opennmt/seams/`` may import them in
#: the plug-in (import-linter cannot name an external package's submodules, so this test reads the imports itself)
ONMT_INTERNALS = ("onmt.trainer", "onmt.utils.loss", "onmt.utils.optimizers", "onmt.translate", "onmt.inputters",
                  "onmt.opts", "onmt.model_builder", "onmt.models.model_saver", "onmt.bin", "onmt.utils.parse")
#: the same for Eole: only ``onmt_xl/eole/seams.py`` may import them (its registries, configs and base classes,
#: ``eole.encoders``, ``eole.config.models``, ``eole.transforms``, are extension points, open to every module)
EOLE_INTERNALS = ("eole.trainer", "eole.predict", "eole.inputters", "eole.models", "eole.utils.loss",
                  "eole.utils.optimizers", "eole.bin", "eole.config.run")
#: modules outside the seams allowed to import an internal, and why
ALLOWED = {
    "onmt_xl/eole/__main__.py": {"eole.bin.main", "eole.bin.main.main"},  # ``python -m onmt_xl.eole`` runs Eole's own CLI, unwrapped
}


def _imported_modules(path: Path):
    import ast

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _internals(path: Path):
    return sorted({m for m in _imported_modules(path) if any(m == i or m.startswith(i + ".")
                                                            for i in ONMT_INTERNALS + EOLE_INTERNALS)})


SEAMS = [*(ROOT / "onmt_xl" / "opennmt" / "seams").glob("*.py"), ROOT / "onmt_xl" / "eole" / "seams.py"]


def test_only_the_seams_import_the_framework_internals_they_wrap():
    plugin = [p for p in sorted((ROOT / "onmt_xl").rglob("*.py"))
              if p not in SEAMS and "experiments" not in p.relative_to(ROOT / "onmt_xl").parts]
    assert len(plugin) > 30
    found = {str(path.relative_to(ROOT)): _internals(path) for path in plugin}
    assert {k: v for k, v in found.items() if set(v) - ALLOWED.get(k, set())} == {}
    seams = {m for p in SEAMS for m in _internals(p)}
    assert any(m.startswith("onmt.trainer") for m in seams)  # the test reads imports at all
    assert any(m.startswith("eole.trainer") for m in seams)


def test_the_folders_show_the_layout():
    """The portable core, the two adapters side by side, the workbench and the CLI on top; nothing loose beside
    them but the package's entry points (``register``, and ``errors``, the old path the installed start-up hook
    imports)."""
    top = {p.name for p in (ROOT / "onmt_xl").iterdir() if p.name != "__pycache__"}
    assert top == {"__init__.py", "cli.py", "errors.py", "core", "opennmt", "eole", "experiments"}
