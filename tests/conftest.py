import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``; tests that need it skip when it is absent (a user's fresh clone has none)."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"needs the benchmark data at {path}, which is absent")
    return path


def run_env() -> dict:
    """Environment for subprocesses running the stock OpenNMT CLIs on this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PYTHONWARNINGS", "ignore")
    return env
