"""The package's import contracts (``[importlinter]`` in setup.cfg): the plug-in never imports the workbench,
and no modules import each other in a cycle."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    assert Path(lint).exists(), "import-linter is a test requirement: pip install '.[test]'"
    proc = subprocess.run([lint, "--config", str(ROOT / "setup.cfg"), "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
