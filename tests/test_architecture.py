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

    sources = [*sorted((ROOT / "onmt_xl").rglob("*.py")), *sorted((ROOT / "tools").glob("*.py")), ROOT / "onmt_xl_hook.py"]
    assert len(sources) > 20
    for path in sources:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
