"""Progress bars on the long silent steps (issue 77, ``onmt_xl/progress.py``): shown on a terminal only and never
after ``--quiet``; eflomal's stages drive its bar, and nothing eflomal says beyond them is lost."""

from __future__ import annotations

import subprocess
import sys

from onmt_xl.core import progress


def test_bars_only_on_a_terminal_and_never_when_quiet(monkeypatch):
    class Terminal:
        def isatty(self):
            return True

        def write(self, s):
            pass

        def flush(self):
            pass

    monkeypatch.setattr(progress, "_QUIET", False)
    assert progress.shown(Terminal()) and not progress.bar(file=Terminal(), total=3).disable
    assert not progress.shown(open(__file__))  # a file, not a terminal
    assert progress.bar(file=Terminal(), total=3, enabled=False).disable
    progress.set_quiet()
    assert not progress.shown(Terminal()) and progress.bar(file=Terminal(), total=3).disable


def test_stderr_lines_hands_over_a_child_process_lines_and_keeps_the_rest(capfd):
    seen = []
    with progress.stderr_lines(lambda line: seen.append(line) or line.startswith("stage")):
        subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('stage 1\\nother\\nstage 2\\n')"],
                       check=True)
    assert seen == ["stage 1\n", "other\n", "stage 2\n"]
    assert capfd.readouterr().err == "other\n"  # the line not taken is written to the real stderr afterwards


def test_eflomal_stages_move_its_bar(monkeypatch, capfd):
    from onmt_xl.core.align import eflomal_aligner
    from onmt_xl.core.data import synthetic

    monkeypatch.setattr(progress, "_QUIET", False)
    monkeypatch.setattr(progress, "shown", lambda stream=None: True)
    from tqdm import tqdm

    bars = []

    def bar(**kw):
        bars.append(tqdm(disable=False, **kw))  # shown although capfd's stderr is no terminal
        return bars[-1]

    monkeypatch.setattr(progress, "bar", bar)
    # eflomal's Python part prints its command line to sys.stderr, which pytest replaces: back to file descriptor 2
    monkeypatch.setattr(sys, "stderr", open(2, "w", closefd=False))
    corpus = synthetic.generate(200, seed=3)
    res = eflomal_aligner.align_corpus(corpus.src, corpus.tgt)
    assert len(res.symmetrized) == 200
    (b,) = bars
    assert b.total and b.n == b.total  # every stage of both directions counted, by eflomal's iteration counts
    err = capfd.readouterr().err
    assert "eflomal (200 pairs)" in err and "Aligning with model" not in err  # its own lines feed the bar
