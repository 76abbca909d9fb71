"""No tracked file names a path of the machine it was written on (a work directory, a home, a temp folder).

Such a path means nothing on another checkout: the archived run names its work directory ``${WORKDIR}`` and
its other machine paths by the placeholders of :mod:`onmt_xl.experiments.archive`; reports and scripts use
paths relative to the checkout, ``$OUT`` or a temporary folder made at run time. Gzipped files (the archived
translations, training logs and links) are read uncompressed; other binary files are skipped.
"""

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Top folders of machine paths: a work area, homes (Linux, macOS, root's) and the temp folder. Spelled apart
#: so that this file does not name them itself.
MACHINE_ROOTS = ("work", "home", "root", "Users", "tmp")
# a path that starts there, not one inside another path, a placeholder's (${X}/...), a home's (~/...) or a URL
MACHINE_PATH = re.compile(r"(?<![\w.~}$/-])/(?:" + "|".join(MACHINE_ROOTS) + r")/")


def _tracked() -> list:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / p for p in out.decode("utf-8").split("\0") if p]


def _text(path: Path):
    """The file's text (gzipped files uncompressed); None for a binary file or a tracked file deleted here."""
    if not path.is_file():
        return None
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    if b"\0" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_the_pattern_finds_machine_paths_and_only_them():
    found = [bool(MACHINE_PATH.search(s)) for s in (
        "--workdir /" + "tmp/demo3", "'/" + "work/main/runs'", "at /" + "root/.pyenv/bin/python",
        "${WORKDIR}/jobs/x", "~/" + "tmp/x", "https://example.org/" + "home/a", "1332/1037 tok/s", "runs/exp_enja",
        "${TMPDIR:-/" + "tmp}/onmt_xl_gpu", "/dev/urandom")]
    assert found == [True, True, True, False, False, False, False, False, False, False]


def test_no_tracked_file_holds_a_machine_path():
    offenders = []
    for path in _tracked():
        text = _text(path)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
                break
    assert offenders == [], "absolute machine paths (use ${WORKDIR}, a relative path or a temp folder):\n" + \
        "\n".join(offenders)
