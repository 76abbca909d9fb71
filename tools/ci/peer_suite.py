#!/usr/bin/env python3
"""OpenNMT-py 3.5.1's own test suite, run twice: stock (``ONMT_XL_DISABLE=1``) and with onmt_xl's hook.

"Stock stays stock": installing onmt_xl must not change a single outcome of OpenNMT-py's own tests. The
peer folder (default ``../shared/peer/OpenNMT-py-3.5.1``: the release's ``onmt/tests`` and ``data/``, see its
README) is read-only and the tests write next to ``data/``, so each run gets a fresh writable copy and runs
there, as the peer README says::

    cd COPY && python -m pytest -q -p no:cacheprovider "$(dirname of the installed onmt)/tests"

The test files are the installed ``onmt`` package's own (the wheel ships ``onmt/tests``, the same files as the
peer folder's), so the installed ``onmt`` is the one under test: the copy's ``onmt/`` has no ``__init__.py`` and
cannot shadow it. Should the installed package lack ``tests/``, the copy's test files run instead
(``--import-mode=importlib``), with the copy's ``onmt/tests`` grafted onto the installed package's ``__path__``
by a ``conftest.py`` in the copy (``--tests peer`` forces that; same outcomes).

By default this checkout comes first on ``PYTHONPATH`` (as ``tests/conftest.py:run_env`` does), so the hook
registers the checkout's code; ``--installed`` tests the installed onmt_xl alone. Either way the hook is started
by the installed ``onmt_xl_hook.pth``, and the tool checks that it is on in one run and off in the other. The
installed test files run with ``--import-mode=append``: pytest's default (prepend) puts site-packages, the folder
above ``onmt/``, first on ``sys.path``, and the installed onmt_xl would then shadow the checkout's. (With the
checkout installed, as in CI, both modes give the same outcomes.)

Prints each run's counts and time, the tests that fail both ways (and why), and the tests whose outcome differs.
Exit status: 0 same outcomes, 1 some outcome differs, 2 the peer folder is missing, 3 the runs could not be made
(no ``onmt``, the hook not installed or not switched off by ``ONMT_XL_DISABLE``, pytest timed out).

    python3 tools/ci/peer_suite.py [--peer DIR] [--installed] [--tests {installed,peer}] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PEER = REPO.parent / "shared" / "peer" / "OpenNMT-py-3.5.1"
FIXTURES = ("test_model.pt", "test_model2.pt", "test_model_lm.pt")  # not in the release (peer README)

# Run before the copy's test files when the installed onmt has no tests/: ``onmt.tests`` then resolves to them.
GRAFT_CONFTEST = """import os
import onmt

onmt.__path__.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "onmt"))
"""


def die(message: str):
    """The runs could not be made: say why, exit 3."""
    print(f"peer suite: {message}", file=sys.stderr)
    sys.exit(3)


def find_peer(path: Path) -> Path | None:
    """The folder holding ``data/`` and ``onmt/tests``: ``path`` itself or its ``OpenNMT-py-*`` child."""
    for cand in [path, *sorted(path.glob("OpenNMT-py-*"))] if path.is_dir() else []:
        if (cand / "data").is_dir() and (cand / "onmt" / "tests").is_dir():
            return cand
    return None


def make_env(disable: bool, checkout: bool) -> dict:
    env = dict(os.environ)
    env.pop("ONMT_XL_DISABLE", None)
    if disable:
        env["ONMT_XL_DISABLE"] = "1"
    if checkout:
        env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def probe(env: dict, cwd: Path) -> tuple[str, str]:
    """(folder of the ``onmt`` package that ``import onmt`` gets in ``cwd``, folder of the ``onmt_xl`` package
    that its hook registered, or "" when the hook did not run)."""
    code = ("import os, sys, onmt; x = sys.modules.get('onmt_xl'); print(os.path.dirname(onmt.__file__)); "
            "print(os.path.dirname(x.__file__) if x else '')")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=cwd, env=env, capture_output=True,
                         text=True)
    if out.returncode:
        die(f"`import onmt` fails in this environment:\n{out.stderr.strip()}")
    where, xl = out.stdout.split("\n")[-3:-1]  # the last two lines (print ends each with a newline)
    return where, xl


def test_id(case: ET.Element) -> str:
    """``test_file.py::Class::name`` from a junit testcase, whatever import mode named its module."""
    parts = case.get("classname", "").split(".")
    mod = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    return "::".join([parts[mod] + ".py", *parts[mod + 1:], case.get("name", "")])


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """test id -> (passed|failed|error|skipped, first line of the failure message)."""
    result = {}
    for case in ET.parse(junit).iter("testcase"):
        outcome, message = "passed", ""
        for kind in ("skipped", "error", "failure"):  # a failed call with a teardown error counts as failed
            node = case.find(kind)
            if node is not None:
                outcome = {"failure": "failed"}.get(kind, kind)
                text = node.get("message") or (node.text or "")
                message = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        result[test_id(case)] = (outcome, message[:300])
    return result


def run_pytest(cmd: list, cwd: Path, env: dict, junit: Path, timeout: float, keep: Path | None, label: str, die,
               read=None):
    """Run ``cmd`` (a pytest command writing ``junit``) in ``cwd``; (outcomes per test as ``read(junit)`` gives them,
    :func:`outcomes` by default; seconds; pytest's last line). ``die(message)`` ends the tool where the run times out
    or writes no report; ``keep`` gets the report and the output, named after ``label``."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        die(f"the {label} run took over {timeout:.0f} s; stopped")
    secs = time.monotonic() - start
    if not junit.is_file():
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        die(f"pytest wrote no report in the {label} run (exit {proc.returncode})")
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(junit, keep / f"junit_{label}.xml")
        (keep / f"pytest_{label}.txt").write_text(proc.stdout + proc.stderr)
    last = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.strip()), "")
    return (read or outcomes)(junit), secs, last.strip("= ")


def run_suite(peer: Path, env: dict, installed_tests: Path | None, timeout: float, keep: Path | None, label: str):
    """One run on a fresh copy: (outcomes, seconds, test files, pytest's last line). ``installed_tests``: the
    installed onmt's ``tests/``, or None to run the copy's."""
    with tempfile.TemporaryDirectory(prefix="peer_suite_") as tmp:
        copy = Path(tmp) / "peer"
        shutil.copytree(peer, copy)
        for root, dirs, files in os.walk(copy):  # the peer folder is read-only; its copy must not be
            for name in dirs + files:
                p = os.path.join(root, name)
                os.chmod(p, os.stat(p).st_mode | 0o200)
        if installed_tests is not None:
            target = installed_tests
        else:
            (copy / "conftest.py").write_text(GRAFT_CONFTEST)
            target = copy / "onmt" / "tests"
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", str(target)]
        if target == installed_tests:
            cmd[4:4] = ["--import-mode=append"]  # not prepend: site-packages first would shadow PYTHONPATH
        else:
            cmd[4:4] = ["--import-mode=importlib", f"--rootdir={copy}"]
        res, secs, last = run_pytest(cmd, copy, env, junit, timeout, keep, label, die)
        return res, secs, target, last


def counts(res: dict) -> str:
    tally = defaultdict(int)
    for outcome, _ in res.values():
        tally[outcome] += 1
    return ", ".join(f"{tally[k]} {k}" for k in ("passed", "failed", "error", "skipped") if tally[k])


def why(message: str) -> str:
    """A failure message, with the cause named where it is one the peer README documents."""
    fixture = re.search(r"test_model\w*\.pt", message)
    if fixture and ("does not exist" in message or "No such file" in message):
        return f"fixture {fixture.group(0)} missing (not in the 3.5.1 release; peer README)"
    module = re.search(r"No module named '([\w.]+)'", message)
    if module:
        return f"optional package {module.group(1).split('.')[0]} not installed (not an OpenNMT-py requirement)"
    return message


def print_fail_both(stock: dict, xl: dict, why) -> None:
    """The tests that fail (or error) both ways, grouped by ``why(message)``."""
    bad = ("failed", "error")
    both = sorted(t for t in stock if stock[t][0] in bad and xl.get(t, ("",))[0] in bad)
    if both:
        print(f"\nFail both ways ({len(both)}):")
        by_reason = defaultdict(list)
        for t in both:
            by_reason[why(stock[t][1])].append(t)
        for reason, tests in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(tests)} x {reason}")
            for t in tests:
                print(f"      {t}")


def print_differences(stock: dict, xl: dict) -> int:
    """Every test whose outcome differs with and without onmt_xl; 0 if none, else 1 (the exit status)."""
    differ = sorted(t for t in set(stock) | set(xl) if stock.get(t, ("absent",))[0] != xl.get(t, ("absent",))[0])
    if not differ:
        print(f"\nSame outcome for all {len(stock)} tests with and without onmt_xl.")
        return 0
    print(f"\nOutcome differs ({len(differ)}):")
    for t in differ:
        (o_s, m_s), (o_x, m_x) = stock.get(t, ("absent", "")), xl.get(t, ("absent", ""))
        print(f"  {t}\n      stock: {o_s}{': ' + m_s if m_s else ''}\n      onmt_xl: {o_x}{': ' + m_x if m_x else ''}")
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", type=Path, default=DEFAULT_PEER,
                    help="folder with OpenNMT-py's data/ and onmt/tests (default: %(default)s)")
    ap.add_argument("--installed", action="store_true",
                    help="test the installed onmt_xl; default puts this checkout first on PYTHONPATH")
    ap.add_argument("--tests", choices=("installed", "peer"), default="installed",
                    help="whose test files: the installed onmt package's (default; the copy's if it has none) "
                         "or the peer folder's")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per run (default %(default)s)")
    ap.add_argument("--keep", type=Path, help="keep each run's junit XML and pytest output in this folder")
    args = ap.parse_args(argv)

    peer = find_peer(args.peer)
    if peer is None:
        print(f"peer suite: no peer folder at {args.peer} (it needs data/ and onmt/tests; see "
              f"../shared/peer/README.md); nothing run", file=sys.stderr)
        return 2
    checkout = not args.installed
    envs = {"stock": make_env(True, checkout), "onmt_xl": make_env(False, checkout)}
    (onmt_dir, xl_in_stock), (_, xl_dir) = probe(envs["stock"], peer), probe(envs["onmt_xl"], peer)
    if xl_in_stock or not xl_dir:
        print("peer suite: the hook is " + ("on with ONMT_XL_DISABLE=1 (an onmt_xl_hook older than the switch? "
              "reinstall: bash tools/install.sh)" if xl_in_stock else "off without ONMT_XL_DISABLE (is onmt_xl "
              "installed? its onmt_xl_hook.pth must be in site-packages)") + "; nothing run", file=sys.stderr)
        return 3
    installed_tests = Path(onmt_dir) / "tests"
    if args.tests == "peer" or not installed_tests.is_dir():
        installed_tests = None

    runs = {label: run_suite(peer, env, installed_tests, args.timeout, args.keep, label) for label, env in envs.items()}
    (stock, t_stock, target, last_stock), (xl, t_xl, _, last_xl) = runs["stock"], runs["onmt_xl"]
    print(f"peer suite: {peer}")
    print(f"  test files: {target}\n  onmt: {onmt_dir}\n  onmt_xl: {xl_dir}")
    print(f"  stock   (ONMT_XL_DISABLE=1): {counts(stock)} in {t_stock:.1f} s   [pytest: {last_stock}]")
    print(f"  onmt_xl (hook on)          : {counts(xl)} in {t_xl:.1f} s   [pytest: {last_xl}]")

    print_fail_both(stock, xl, why)
    missing = [f for f in FIXTURES if not (Path(onmt_dir) / "tests" / f).exists()
               and not (peer / "onmt" / "tests" / f).exists()]
    if missing:
        print(f"  fixtures absent from both the installed onmt/tests and the peer folder: {', '.join(missing)}")

    return print_differences(stock, xl)


if __name__ == "__main__":
    sys.exit(main())
