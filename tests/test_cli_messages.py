"""What a user meets: the real ``onmt-xl`` command, run as a subprocess, on the mistakes users make.

Each error is one line naming the file (and the line), with no traceback; exit status 2 for usage errors
(bad options, missing files), 1 for data errors (content); output folders are made before the work.
"""

import argparse
import subprocess
import sys

import pytest

from tests.conftest import run_env

LATIN1 = "café au lait\n".encode("latin-1")


def onmt_xl(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", *map(str, args)], capture_output=True,
                          text=True, env=run_env(), cwd=cwd)
    return proc.returncode, proc.stderr


def assert_message(rc, err, code, *names):
    assert "Traceback" not in err, err
    assert rc == code, (rc, err)
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    for name in names:
        assert str(name) in lines[0], (name, err)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.txt").write_text("a b\nc d\n")
    (tmp_path / "t.txt").write_text("x y\nz w\n")
    (tmp_path / "lat.txt").write_bytes(b"a b\n" + LATIN1)  # line 2 is Latin-1
    return tmp_path


def test_align_missing_file(files):
    rc, err = onmt_xl("align", "--src", files / "nope.txt", "--tgt", files / "t.txt", "--out-prefix", files / "o")
    assert_message(rc, err, 2, files / "nope.txt", "not found")


def test_align_non_utf8(files):
    rc, err = onmt_xl("align", "--src", files / "s.txt", "--tgt", files / "lat.txt", "--out-prefix", files / "o")
    assert_message(rc, err, 1, f"{files / 'lat.txt'}, line 2", "not UTF-8", "iconv")


def test_align_line_counts_differ_is_a_data_error(files):
    (files / "one.txt").write_text("x\n")
    rc, err = onmt_xl("align", "--src", files / "s.txt", "--tgt", files / "one.txt", "--out-prefix", files / "o")
    assert_message(rc, err, 1, files / "one.txt", "has 1 line but")


def test_align_makes_the_output_folder_first(files):
    rc, err = onmt_xl("align", "--src", files / "s.txt", "--tgt", files / "t.txt", "--out-prefix",
                      files / "new" / "sub" / "train", "--n-samplers", 1, "--rel-iterations", 0.2)
    assert rc == 0, err
    for ext in ("fwd", "rev", "gdfa", "seg.json"):
        assert (files / "new" / "sub" / f"train.{ext}").is_file()
    # a folder that cannot be made: said before aligning, not after
    (files / "afile").write_text("")
    rc, err = onmt_xl("align", "--src", files / "s.txt", "--tgt", files / "t.txt", "--out-prefix",
                      files / "afile" / "train")
    assert_message(rc, err, 2, files / "afile", "output folder")
    assert "eflomal:" not in err  # nothing was aligned (and lost)


def test_aer_missing_and_non_utf8(files):
    (files / "g.gold").write_text("1-1\n1-1\n")
    rc, err = onmt_xl("aer", "--hyp", files / "nope.al", "--gold", files / "g.gold")
    assert_message(rc, err, 2, files / "nope.al", "not found")
    rc, err = onmt_xl("aer", "--hyp", files / "lat.txt", "--gold", files / "g.gold")
    assert_message(rc, err, 1, f"{files / 'lat.txt'}, line 2", "not UTF-8")


def test_pipeline_checks_its_inputs_before_the_work(files):
    corpus = ["--train-src", files / "s.txt", "--train-tgt", files / "t.txt", "--valid-src", files / "s.txt",
              "--valid-tgt", files / "t.txt", "--test-src", files / "s.txt", "--workdir", files / "run"]
    rc, err = onmt_xl("pipeline", *corpus, "--test-ref", files / "missing.ref", cwd=files)
    assert_message(rc, err, 2, files / "missing.ref", "not found")
    rc, err = onmt_xl("pipeline", *corpus, "--test-ref", files / "lat.txt", cwd=files)
    assert_message(rc, err, 1, f"{files / 'lat.txt'}, line 2", "not UTF-8")
    (files / "one.txt").write_text("x y\n")
    rc, err = onmt_xl("pipeline", *corpus, "--test-ref", files / "one.txt", cwd=files)
    assert_message(rc, err, 1, files / "one.txt", f"has 1 line but {files / 's.txt'} has 2")
    assert not (files / "run").exists()  # nothing written, not even the manifest
    for workdir, what in ((files / "s.txt", "exists and is not a folder"),
                          (files / "s.txt" / "run", f"{files / 's.txt'} is a file, not a folder")):
        rc, err = onmt_xl("pipeline", *corpus[:-2], "--workdir", workdir, "--test-ref", files / "t.txt", cwd=files)
        assert_message(rc, err, 2, "--workdir", what)


def test_reorder_commands(files):
    rc, err = onmt_xl("preorder-apply", "--model", files / "missing.xlp", "--src", files / "s.txt",
                      "--out-pos", files / "p")
    assert_message(rc, err, 2, files / "missing.xlp", "not found")
    rc, err = onmt_xl("preorder-apply", "--model", files / "missing.xlp", "--src", files / "s.txt")
    assert_message(rc, err, 2, "--out-pos")
    rc, err = onmt_xl("oracle", "--src", files / "lat.txt", "--tgt", files / "t.txt", "--align", files / "t.txt",
                      "--out-order", files / "o")
    assert_message(rc, err, 1, f"{files / 'lat.txt'}, line 2", "not UTF-8")


def test_synth_makes_its_folder(files):
    rc, err = onmt_xl("synth", "--n", 3, "--prefix", files / "deep" / "er" / "syn")
    assert rc == 0, err
    assert (files / "deep" / "er" / "syn.align").is_file()


def test_bad_option_is_a_usage_error(files):
    rc, err = onmt_xl("align", "--src", files / "s.txt", "--model", 7)
    assert rc == 2 and "Traceback" not in err and "--model" in err


def test_every_subcommand_help():
    """Every subcommand: a description, an example, help for every option, no reStructuredText markup."""
    from onmt_xl.cli import build_parser
    from onmt_xl.experiments.cli import EXAMPLES, workbench_subcommands

    parser = build_parser(workbench_subcommands(), EXAMPLES)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) >= 14
    undocumented = [(name, a.option_strings) for name, p in sub.choices.items() for a in p._actions if not a.help]
    assert not undocumented
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "-h"], capture_output=True, text=True,
                          env=run_env())
    assert proc.returncode == 0 and "``" not in proc.stdout
    summary = proc.stdout.split("positional arguments")[0]
    assert "pipeline" in summary and "experiments" in summary  # the workbench's summary, not the plug-in's
    for name in sub.choices:
        proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", name, "-h"], capture_output=True,
                              text=True, env=run_env())
        out = proc.stdout
        assert proc.returncode == 0, proc.stderr
        description = out.split("\n\n")[1]  # usage, then the description
        assert description.strip() and not description.startswith(("options:", "positional")), (name, out)
        assert "example:\n  onmt-xl " + name in out, (name, out)
        for markup in ("``", ":mod:", ":func:", ":class:", "::\n"):
            assert markup not in out, (name, markup)
        if name not in ("experiments", "evidence", "papers"):  # the study's commands run in a checkout
            # a user's commands point to nothing the installed wheel lacks
            assert "reports/" not in out, (name, out)
        if "--framework" in out:
            assert "pip install eole==0.6.4" in " ".join(out.split()), (name, out)


def test_stock_commands_show_our_message_alone(tmp_path):
    """onmt_xl.core.errors.install_excepthook: an XLInputError that reaches the top prints one line, exit 1."""
    code = ("import sys; from onmt_xl.core.errors import install_excepthook, XLInputError; install_excepthook(); "
            "sys.argv = ['onmt_translate']\n"
            "try:\n    raise XLInputError('in.txt', 3, 'bad line')\n"
            "except XLInputError:\n    raise RuntimeError('raised while handling it')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "onmt_translate: error: in.txt, line 3: bad line"
    other = subprocess.run([sys.executable, "-c", code.replace("XLInputError('in.txt', 3, 'bad line')", "KeyError(1)")
                            .replace("except XLInputError", "except KeyError")],
                           capture_output=True, text=True, env=run_env())
    assert other.returncode == 1 and "Traceback" in other.stderr  # other errors keep theirs


def test_onmt_deprecation_warnings_are_quiet():
    env = {**run_env(), "PYTHONWARNINGS": "default"}
    without_hook = "import sys; sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != 'OnmtImportHook']; "
    loud = subprocess.run([sys.executable, "-c", without_hook + "import onmt"], capture_output=True, text=True, env=env)
    quiet = subprocess.run([sys.executable, "-c", without_hook + "from onmt_xl.core.errors import quiet_onmt_warnings; "
                            "quiet_onmt_warnings(); import onmt; import warnings; "
                            "warnings.warn('still shown', FutureWarning)"], capture_output=True, text=True, env=env)
    hooked = subprocess.run([sys.executable, "-c", "import onmt.trainer"], capture_output=True, text=True, env=env)
    assert loud.returncode == quiet.returncode == hooked.returncode == 0, quiet.stderr
    assert "torch.cuda.amp.custom_fwd" in loud.stderr  # what the filter is for (OpenNMT-py 3.5.1)
    assert "torch.cuda.amp" not in quiet.stderr and "still shown" in quiet.stderr
    assert "torch.cuda.amp" not in hooked.stderr  # the installed hook applies the filter before onmt runs


def test_the_handler_names_the_file_of_an_unexpected_unicode_error(files, capsys):
    """A UnicodeDecodeError that no reader turned into a message: the entry point finds the file and the line
    among the command's arguments (skipping binary ones, such as models)."""
    from onmt_xl.cli import main

    def add(sub):
        p = sub.add_parser("readit", help="reads a file badly")
        p.add_argument("--model", help="binary")
        p.add_argument("--src", help="text")
        p.set_defaults(func=lambda args: open(args.src, encoding="utf-8").read())

    (files / "m.bin").write_bytes(b"PK\0\0\xff\xfe")
    assert main(["readit", "--model", str(files / "m.bin"), "--src", str(files / "lat.txt")], extra=[add]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"onmt-xl readit: error: {files / 'lat.txt'}, line 2: not UTF-8") and "m.bin" not in err


# -- the bad-input matrix: the message names the file and line, and a file written before is left as it was ------

EARLIER = "written by an earlier run\n"


@pytest.mark.parametrize("line2, problem", [
    ("0-0 1:1", "malformed Pharaoh token '1:1'"),
    ("0-0 5-1", "source index 5 out of range for a 2-token source sentence"),
    ("0-0 1-7", "target index 7 out of range for a 2-token target sentence"),
])
@pytest.mark.parametrize("command", ["oracle", "preorder-train"])
def test_bad_alignment_lines(files, command, line2, problem):
    (files / "a.al").write_text("0-0 1-1\n" + line2 + "\n")
    out = files / "earlier.out"
    out.write_text(EARLIER)
    target = ["--out-order", out] if command == "oracle" else ["--model", out]
    rc, err = onmt_xl(command, "--src", files / "s.txt", "--tgt", files / "t.txt", "--align", files / "a.al", *target)
    assert_message(rc, err, 1, f"{files / 'a.al'}, line 2: ", problem)
    assert out.read_text() == EARLIER


def test_crlf_files_read_as_lf(files):
    """Windows line ends in every input: the same output as LF files, byte for byte."""
    outs = []
    for name, end in (("lf", "\n"), ("crlf", "\r\n")):
        for stem, text in (("s", "a b c\nd e\n"), ("t", "x y z\nw v\n"), ("a", "0-2 1-1 2-0\n0-0 1-1\n")):
            (files / f"{name}.{stem}").write_bytes(text.replace("\n", end).encode())
        rc, err = onmt_xl("oracle", "--src", files / f"{name}.s", "--tgt", files / f"{name}.t", "--align",
                          files / f"{name}.a", "--out-order", files / f"{name}.order")
        assert rc == 0, err
        outs.append((files / f"{name}.order").read_bytes())
    assert outs[0] == outs[1] == b"2 1 0\n0 1\n"


@pytest.fixture(scope="module")
def preorderer(tmp_path_factory):
    from tests.helpers import tiny_corpus, tiny_preorderer

    wd = tmp_path_factory.mktemp("pre")
    corpus = tiny_corpus(wd, n=120)
    return tiny_preorderer(wd, corpus), corpus


def test_preorder_apply_bad_model_and_source(files, preorderer):
    out = files / "earlier.pos"
    out.write_text(EARLIER)
    (files / "bad.xlp").write_text("not a preorderer")
    rc, err = onmt_xl("preorder-apply", "--model", files / "bad.xlp", "--src", files / "s.txt", "--out-pos", out)
    assert_message(rc, err, 1, files / "bad.xlp")
    rc, err = onmt_xl("preorder-apply", "--model", preorderer[0], "--src", files / "lat.txt", "--out-pos", out)
    assert_message(rc, err, 1, f"{files / 'lat.txt'}, line 2", "not UTF-8")
    assert out.read_text() == EARLIER


def test_preorder_apply_long_and_empty_lines(files, preorderer):
    """A line far longer than any training sentence (decoded with the span limit) and an empty line: one output
    line per input line, each a permutation of its sentence's positions."""
    path, corpus = preorderer
    longest = max(corpus.src, key=len)
    lines = [" ".join(corpus.src[0]), " ".join(longest * 8), "", " ".join(corpus.src[1])]
    (files / "long.txt").write_text("\n".join(lines) + "\n")
    rc, err = onmt_xl("preorder-apply", "--model", path, "--src", files / "long.txt", "--out-pos", files / "long.pos",
                      "--threads", 1)
    assert rc == 0, err
    pos = [[int(t) for t in line.split()] for line in (files / "long.pos").read_text().split("\n")[:-1]]
    assert [len(p) for p in pos] == [len(line.split()) for line in lines]
    assert all(sorted(p) == list(range(len(p))) for p in pos)


def test_counts_in_messages_take_their_number():
    from onmt_xl.core.errors import count

    assert [count(n, "line") for n in (0, 1, 2, 1234)] == ["0 lines", "1 line", "2 lines", "1,234 lines"]
    assert count(1, "sentence pair") == "1 sentence pair" and count(3, "child", "children") == "3 children"
