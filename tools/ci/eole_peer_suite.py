#!/usr/bin/env python3
"""Eole 0.6.4's own test suite, run twice: stock (``ONMT_XL_DISABLE=1``) and with onmt_xl's hook (issue 38).

"Stock stays stock" for Eole as for OpenNMT-py (``tools/ci/peer_suite.py``): installing onmt_xl beside Eole must not
change a single outcome of Eole's own tests. Eole's wheel ships its test files (``eole/tests``) but not their data
(``eole/tests/data``, read by ``test_transform.py``, ``test_models.py`` and ``test_data_prepare.py`` as paths
relative to the working folder). Eole forked that folder from OpenNMT-py, and the files those tests read
(``src-train.txt``, ``tgt-train.txt``, ``src-val.txt``, ``tgt-val.txt``, ``sample.bpe``, ``sample.sp.model``,
``vocab-train.src/.tgt``, ``data.yaml``) are byte for byte the ones of OpenNMT-py 3.5.1's ``data/``, which the peer
folder holds (``../shared/peer/OpenNMT-py-3.5.1/data``). So each run gets a fresh scratch folder with a writable copy
of it as ``eole/tests/data`` (the YAMLs' ``data/`` paths rewritten to ``eole/tests/data/``) and runs the installed
``eole`` package's tests from there::

    cd SCRATCH && python -m pytest -q -p no:cacheprovider --import-mode=append "$(dirname of eole)/tests"

The scratch ``eole/`` has no ``__init__.py``, so it cannot shadow the installed package. ``test_recipes.py`` is left
out: it is a script (``argparse`` at import time) whose ``SystemExit`` stops pytest's collection.

As in ``tools/ci/peer_suite.py``, this checkout comes first on ``PYTHONPATH`` unless ``--installed``; the hook is
started by the installed ``onmt_xl_hook.pth`` (it installs ``onmt_xl.eole.hook`` as ``eole`` is imported), and the
tool checks that it is on in one run and off in the other. Prints each run's counts and time, the tests that fail
both ways (and why) and those whose outcome differs. Exit status: 0 same outcomes, 1 some outcome differs, 2 no
data folder, 3 the runs could not be made (no ``eole``, no ``eole/tests`` in it, the hook not switched on or off,
pytest timed out).

    python3 tools/ci/eole_peer_suite.py [--data DIR] [--installed] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the same environments, tallies and verdict
from peer_suite import counts, make_env, print_differences, print_fail_both, run_pytest  # noqa: E402
from peer_suite import outcomes as junit_outcomes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "peer" / "OpenNMT-py-3.5.1" / "data"
#: the data files Eole 0.6.4's tests read (checked present before running)
NEEDED = ("src-train.txt", "tgt-train.txt", "src-val.txt", "tgt-val.txt", "sample.bpe", "sample.sp.model",
          "vocab-train.src", "vocab-train.tgt", "data.yaml")
NOT_TESTS = ("test_recipes.py",)  # scripts named test_*: parse sys.argv at import


def die(message: str):
    """The runs could not be made: say why, exit 3."""
    print(f"eole peer suite: {message}", file=sys.stderr)
    sys.exit(3)


def probe(env: dict, cwd: Path) -> tuple[str, str, str]:
    """(eole's folder, its version, the folder of the ``onmt_xl`` whose Eole hook ran at ``import eole``, or "")."""
    code = ("import os, sys, eole; x = sys.modules.get('onmt_xl'); h = 'onmt_xl.eole.hook' in sys.modules; "
            "print(os.path.dirname(eole.__file__)); print(getattr(eole, '__version__', '?')); "
            "print(os.path.dirname(x.__file__) if x and h else '')")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=cwd, env=env, capture_output=True,
                         text=True)
    if out.returncode:
        die(f"`import eole` fails in this environment:\n{out.stderr.strip()[-2000:]}")
    where, version, xl = out.stdout.split("\n")[-4:-1]
    return where, version, xl


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, first line of the message); a module that failed to import is ``test_x.py``."""
    result = {}
    for test, value in junit_outcomes(junit).items():
        if test.startswith(".py::"):  # a collection error: junit has no class name, the module path as name
            test = test.rsplit(".", 1)[-1] + ".py"
        result[test] = value
    return result


def scratch(tmp: Path, data: Path) -> Path:
    """``tmp/eole/tests/data``: a writable copy of ``data`` with the YAMLs' ``data/`` paths made Eole's."""
    dest = tmp / "eole" / "tests" / "data"
    shutil.copytree(data, dest)
    for path in [dest, *dest.rglob("*")]:  # the peer folder is read-only; its copy must not be
        path.chmod(path.stat().st_mode | 0o200)
    for yaml in dest.rglob("*.yaml"):
        yaml.write_text(re.sub(r"(?<![\w/.])data/", "eole/tests/data/", yaml.read_text()))
    return tmp


def run_suite(tests: Path, data: Path, env: dict, timeout: float, keep: Path | None, label: str):
    """One run in a fresh scratch folder: (outcomes, seconds, pytest's last line)."""
    with tempfile.TemporaryDirectory(prefix="eole_peer_suite_") as tmp:
        work = scratch(Path(tmp), data)
        junit = work / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=append",
               "--continue-on-collection-errors", f"--junitxml={junit}",
               *(f"--ignore={tests / name}" for name in NOT_TESTS), str(tests)]
        return run_pytest(cmd, work, env, junit, timeout, keep, label, die, read=outcomes)


def why(message: str) -> str:
    """A failure message, with the cause named where it is a file of Eole's repository that the wheel lacks."""
    missing = re.search(r"No such file or directory: '[^']*?site-packages/([^']+)'", message)
    if missing:
        return f"{missing.group(1)} of Eole's source tree is not in the wheel"
    if "node" in message and "CalledProcessError" in message:
        return "a Node.js UI test: its eole/tests/web/*.cjs is not in the wheel"
    if "collection failure" in message:
        return "not collected: imports recipes/ of Eole's source tree, not in the wheel"
    return message


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="the test data (OpenNMT-py 3.5.1's data/, the files Eole's tests read; default %(default)s)")
    ap.add_argument("--installed", action="store_true",
                    help="test the installed onmt_xl; default puts this checkout first on PYTHONPATH")
    ap.add_argument("--timeout", type=float, default=900, help="seconds allowed per run (default %(default)s)")
    ap.add_argument("--keep", type=Path, help="keep each run's junit XML and pytest output in this folder")
    args = ap.parse_args(argv)

    absent = [n for n in NEEDED if not (args.data / n).is_file()]
    if absent:
        print(f"eole peer suite: {args.data} lacks {', '.join(absent)} (OpenNMT-py 3.5.1's data/, see "
              f"../shared/peer/README.md); nothing run", file=sys.stderr)
        return 2
    checkout = not args.installed
    envs = {"stock": make_env(True, checkout), "onmt_xl": make_env(False, checkout)}
    with tempfile.TemporaryDirectory() as tmp:
        (eole_dir, version, xl_in_stock), (_, _, xl_dir) = probe(envs["stock"], Path(tmp)), probe(envs["onmt_xl"],
                                                                                                 Path(tmp))
    if xl_in_stock or not xl_dir:
        print("eole peer suite: the Eole hook is " + ("on with ONMT_XL_DISABLE=1" if xl_in_stock else
              "off without ONMT_XL_DISABLE (is onmt_xl installed in this environment? its onmt_xl_hook.pth must "
              "be in site-packages)") + "; nothing run", file=sys.stderr)
        return 3
    tests = Path(eole_dir) / "tests"
    if not tests.is_dir():
        die(f"the installed eole ({eole_dir}) has no tests/ folder")

    runs = {label: run_suite(tests, args.data, env, args.timeout, args.keep, label) for label, env in envs.items()}
    (stock, t_stock, last_stock), (xl, t_xl, last_xl) = runs["stock"], runs["onmt_xl"]
    print(f"eole peer suite: Eole {version}, test files {tests}, data {args.data}\n  onmt_xl: {xl_dir}")
    print(f"  stock   (ONMT_XL_DISABLE=1): {counts(stock)} in {t_stock:.1f} s   [pytest: {last_stock}]")
    print(f"  onmt_xl (hook on)          : {counts(xl)} in {t_xl:.1f} s   [pytest: {last_xl}]")

    print_fail_both(stock, xl, why)
    return print_differences(stock, xl)


if __name__ == "__main__":
    sys.exit(main())
