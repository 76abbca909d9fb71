"""Empty lines and line numbers, as users meet them: ``-skip_empty_level`` in ``onmt_train``, one output line per
input line in ``onmt_translate``, and errors naming the file and its 1-based line with and without data workers."""

import logging
import subprocess
from pathlib import Path

import pytest
import yaml

import onmt_xl
from onmt_xl.core.errors import XLInputError
from onmt_xl.experiments.configs import config
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_corpus, tiny_preorderer

TINY = dict(
    enc_layers=1, dec_layers=1, heads=2, hidden_size=16, word_vec_size=16, transformer_ff=32,
    train_steps=2, valid_steps=100, save_checkpoint_steps=2, report_every=1, batch_size=256,
    valid_batch_size=256, bucket_size=256, warmup_steps=2, xl_heads=1,
)
EMPTY_SRC, EMPTY_TGT = 5, 9  # 1-based lines of the dirty corpus


def run(*args, check=True):
    proc = subprocess.run([stock_cli(args[0]), *map(str, args[1:])], capture_output=True, text=True, env=run_env())
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def wd(tmp_path_factory):
    wd = tmp_path_factory.mktemp("empty")
    data = wd / "data"
    data.mkdir()
    corpus = tiny_corpus(data, n=120)
    for ext in ("src", "tgt"):
        lines = (data / f"train.{ext}").read_text().splitlines()
        (data / f"valid.{ext}").write_text("\n".join(lines[:20]) + "\n")
        dirty = list(lines)
        dirty[(EMPTY_SRC if ext == "src" else EMPTY_TGT) - 1] = "" if ext == "src" else "   "
        (data / f"dirty.{ext}").write_text("\n".join(dirty) + "\n")
    tiny_preorderer(wd, corpus).rename(wd / "preorderer.xlp")
    run("onmt_build_vocab", "-config", write_config(wd, "combination"), "-n_sample", "-1")
    return wd


def write_config(wd: Path, system: str, name=None, train="train", **extra) -> Path:
    cfg = config(system, str(wd), {**TINY, **extra})
    cfg["data"]["train"]["path_src"] = str(wd / "data" / f"{train}.src")
    cfg["data"]["train"]["path_tgt"] = str(wd / "data" / f"{train}.tgt")
    path = wd / f"{name or system}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


# -- onmt_train: -skip_empty_level ------------------------------------------------------------------------------


def test_skip_empty_level_error_stops_training_naming_file_and_line(wd):
    proc = run("onmt_train", "-config", write_config(wd, "combination", "err", train="dirty"),
               "-skip_empty_level", "error", check=False)
    assert proc.returncode != 0
    assert f"{wd / 'data' / 'dirty.src'}, line {EMPTY_SRC}: empty source line" in proc.stderr
    assert not (wd / "models" / "err_step_2.pt").exists()


@pytest.fixture(scope="module")
def dirty_model(wd):
    """The XL model trained on the dirty corpus with the default -skip_empty_level warning; its log."""
    cfg = write_config(wd, "combination", "warn", train="dirty", save_model=str(wd / "models" / "warn"))
    proc = run("onmt_train", "-config", cfg)
    return wd / "models" / "warn_step_2.pt", proc.stdout + proc.stderr


def test_skip_empty_level_warning_skips_and_names_file_and_line(wd, dirty_model):
    model, log = dirty_model
    assert model.exists()
    assert (f"{wd / 'data' / 'dirty.src'}, line {EMPTY_SRC}: empty source line; the pair is skipped "
            "(-skip_empty_level warning)") in log
    assert f"{wd / 'data' / 'dirty.tgt'}, line {EMPTY_TGT}: empty target line; the pair is skipped" in log
    assert log.count(f"line {EMPTY_SRC}: empty source line") == 1  # once, not on every pass over the corpus


def _read(path, level, stride=1, offset=0, caplog=None):
    from onmt.inputters.text_corpus import ParallelCorpus, ParallelCorpusIterator
    from onmt.transforms import TransformPipe

    onmt_xl.register()
    corpus = ParallelCorpus("train", str(path / "dirty.src"), str(path / "dirty.tgt"))
    it = ParallelCorpusIterator(corpus, TransformPipe.build_from([]), skip_empty_level=level, stride=stride,
                                offset=offset)
    return [ex for ex, _, _ in it]


def test_skip_empty_levels_in_process(wd, caplog):
    data = wd / "data"
    src = (data / "dirty.src").read_text().splitlines()
    with caplog.at_level(logging.WARNING):
        silent = _read(data, "silent")
    assert len(silent) == len(src) - 2 and "empty" not in caplog.text
    with pytest.raises(XLInputError, match=rf"dirty\.src, line {EMPTY_SRC}: empty source line"):
        _read(data, "error")


@pytest.mark.parametrize("stride", [1, 2, 3])
def test_line_numbers_are_the_files_whatever_the_stride(wd, stride):
    """OpenNMT reads every stride-th block of stride lines per data worker / vocabulary thread; cid_line_number is
    now the file's line (stock: k * stride + offset, off by one or more for stride > 1)."""
    src = (wd / "data" / "dirty.src").read_text().splitlines()
    seen = []
    for offset in range(stride):
        for ex in _read(wd / "data", "silent", stride, offset):
            assert " ".join(ex["src"]) == src[ex["cid_line_number"]]
            assert ex["cid_files"]["src"] == str(wd / "data" / "dirty.src")
            seen.append(ex["cid_line_number"])
    assert sorted(seen) == [i for i in range(len(src)) if i not in (EMPTY_SRC - 1, EMPTY_TGT - 1)]


# -- xl_position errors under data workers ---------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("bad, problem", [("0-0 1:1", "malformed Pharaoh token '1:1'"),
                                          ("0-0 99-1", "source index 99 out of range")])
def test_transform_errors_name_the_file_and_line_with_and_without_workers(wd, workers, bad, problem):
    """A bad alignment on line 7 (the second reader's third line with two workers) is reported as line 7, in one
    line without a traceback, and the checkpoints written before stay."""
    align = wd / "data" / "bad.align"
    lines = (wd / "data" / "train.align").read_text().splitlines()
    lines[6] = bad
    align.write_text("\n".join(lines) + "\n")
    cfg = config("combination", str(wd), {**TINY, "xl_source": "align", "num_workers": workers, "train_steps": 4,
                                          "save_model": str(wd / "models" / "bad_align")})
    cfg["data"]["train"]["path_align"] = str(align)
    del cfg["data"]["valid"]
    path = wd / f"align{workers}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    earlier = wd / "models" / "bad_align_step_2.pt"
    earlier.parent.mkdir(exist_ok=True)
    earlier.write_bytes(b"a checkpoint of an earlier run")
    proc = run("onmt_train", "-config", path, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"{align}, line 7: " in errors[0] and problem in errors[0], proc.stderr[-3000:]
    assert earlier.read_bytes() == b"a checkpoint of an earlier run"


# -- onmt_translate: one output line per input line ------------------------------------------------------------


@pytest.fixture(scope="module")
def baseline_model(wd):
    cfg = write_config(wd, "baseline", "base", save_model=str(wd / "models" / "base"), alignment_layer=0)
    run("onmt_train", "-config", cfg)
    return wd / "models" / "base_step_2.pt"


def _translate(wd, model, src_lines, name, *extra):
    src, out = wd / f"{name}.src", wd / f"{name}.hyp"
    src.write_text("".join(line + "\n" for line in src_lines))
    run("onmt_translate", "-model", model, "-src", src, "-output", out, "-beam_size", "2", *extra)
    return out.read_text().split("\n")[:-1]


@pytest.mark.parametrize("xl, n_best", [(True, 1), (True, 2), (False, 2)])
def test_translation_keeps_one_line_per_input_line(wd, dirty_model, baseline_model, xl, n_best):
    model = dirty_model[0] if xl else baseline_model
    extra = ["-n_best", str(n_best)]
    if xl:
        extra += ["-transforms", "xl_position", "-xl_preorderer", wd / "preorderer.xlp"]
    valid = (wd / "data" / "valid.src").read_text().splitlines()[:3]
    clean = _translate(wd, model, valid, f"clean{xl}{n_best}", *extra)
    assert len(clean) == 3 * n_best
    with_empty = ["", valid[0], "  \t ", valid[1], valid[2], ""]
    out = _translate(wd, model, with_empty, f"empty{xl}{n_best}", *extra)
    blank = [""] * n_best
    assert out == blank + clean[:n_best] + blank + clean[n_best:] + blank


def test_translation_of_only_empty_lines(wd, baseline_model):
    assert _translate(wd, baseline_model, ["", " "], "only_empty") == ["", ""]


@pytest.mark.parametrize("gold", [False, True])
def test_report_align_with_empty_lines(wd, baseline_model, gold):
    valid = (wd / "data" / "valid.src").read_text().splitlines()[:2]
    extra = ["-report_align"]
    if gold:
        tgt = (wd / "data" / "valid.tgt").read_text().splitlines()[:2]
        (wd / "gold_clean.tgt").write_text("\n".join(tgt) + "\n")
        (wd / "gold_empty.tgt").write_text("\n".join(["x", tgt[0], "y", tgt[1]]) + "\n")
    clean = _translate(wd, baseline_model, valid, f"align_clean{gold}", *extra,
                       *(["-gold_align", "-tgt", wd / "gold_clean.tgt"] if gold else []))
    out = _translate(wd, baseline_model, ["", valid[0], " ", valid[1]], f"align_empty{gold}", *extra,
                     *(["-gold_align", "-tgt", wd / "gold_empty.tgt"] if gold else []))
    assert " ||| " in clean[0]
    assert out == ["", clean[0], "", clean[1]]
