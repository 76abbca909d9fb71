#!/usr/bin/env python
"""What the registration hook costs a Python process that never imports onmt.

    python tools/bench/bench_startup.py [--runs 40]

Times ``python -c pass`` with ``onmt_xl_hook.pth`` in site-packages and with it moved aside (the
package's only start-up effect), interleaved run by run, and prints the hook's own import time from
``-X importtime``. Needs write access to site-packages; the file is always put back.
"""

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path


def timed(runs: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    hook = Path(sysconfig.get_paths()["purelib"]) / "onmt_xl_hook.pth"
    if not hook.exists():
        sys.exit(f"{hook} not found: install the package first (bash tools/install.sh)")
    aside = hook.with_suffix(".pth.off")
    with_hook, without = [], []
    try:
        for _ in range(args.runs):
            with_hook.append(timed(1))
            os.replace(hook, aside)
            without.append(timed(1))
            os.replace(aside, hook)
    finally:
        if aside.exists():
            os.replace(aside, hook)
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True).stderr
    ours = [line for line in out.splitlines() if "onmt_xl" in line]
    med = statistics.median
    print(f"python -c pass, median of {args.runs}: with hook {med(with_hook) * 1e3:.1f} ms, "
          f"without {med(without) * 1e3:.1f} ms, difference {(med(with_hook) - med(without)) * 1e3:+.1f} ms")
    print("-X importtime (self us | cumulative us | module):")
    print("\n".join(ours))


if __name__ == "__main__":
    main()
