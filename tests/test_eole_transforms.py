"""Eole's ``xl_position`` and ``xl_prereorder`` (issue 38): the same shared logic (:mod:`onmt_xl.core.position_source`)
gives Eole what it gives OpenNMT-py, the preorderer travels with the model, and the start-up hook (``onmt_xl_hook``)
makes the plain ``eole`` command know them, unless ``ONMT_XL_DISABLE=1``.

Skipped where Eole is not installed (see tests/test_eole.py's docstring for the venv).
"""

import sys
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("eole", reason="Eole is not installed (pip install eole==0.6.4 in a venv; see tests/test_eole.py)")
pytest.importorskip("onmt", reason="the transforms are compared with the OpenNMT-py adapter's")

import onmt_xl  # noqa: E402
import onmt_xl.eole  # noqa: E402
from onmt_xl.core.errors import XLInputError  # noqa: E402
from tests.test_eole import E2E_CONFIG, e2e_files, run_eole  # noqa: E402

onmt_xl.register()
onmt_xl.eole.register()
from onmt_xl.eole.transforms import (  # noqa: E402
    XLPositionConfig, XLPositionTransform, XLPreReorderConfig, XLPreReorderTransform,
)
from onmt_xl.opennmt.transforms import xl_position as onmt_side  # noqa: E402


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from tests.helpers import tiny_corpus, tiny_preorderer

    out = tmp_path_factory.mktemp("eole_tr")
    corpus = tiny_corpus(out, n=120)
    return corpus, tiny_preorderer(out, corpus)


def eole_transform(cls, seed=-1, **config):
    cfg = (XLPositionConfig if cls is XLPositionTransform else XLPreReorderConfig)(**config)
    full = SimpleNamespace(transforms_configs=SimpleNamespace(**{cls.name: cfg}), seed=seed)
    transform = cls(full)
    transform.warm_up()
    return transform


def onmt_transform(cls, seed=-1, **options):
    opts = Namespace(**{**dict(xl_source="preorderer", xl_preorderer=None, xl_noise=0.0, seed=seed), **options})
    cls._validate_options(opts)
    transform = cls(opts)
    transform.warm_up()
    return transform


def test_prereorder_gives_the_opennmt_tokens(trained):
    corpus, path = trained
    eole_t = eole_transform(XLPreReorderTransform, xl_preorderer=str(path))
    onmt_t = onmt_transform(onmt_side.XLPreReorderTransform, xl_preorderer=str(path))
    changed = 0
    for src in corpus.src[:40]:
        want = onmt_t.apply({"src": list(src), "tgt": None})["src"]
        assert eole_t.apply({"src": list(src), "tgt": None})["src"] == want  # tokenised source
        assert eole_t.apply({"src": " ".join(src), "tgt": None})["src"] == " ".join(want)  # raw text stays text
        assert sorted(want) == sorted(src)
        changed += want != list(src)
    assert changed > 0  # the preorderer reorders some of them: the comparison is not of identities


def test_positions_and_noise_are_the_opennmts(trained):
    """Same preorderer, same seed: the same positions, noisy ones included (the noise is drawn by the shared code)."""
    corpus, path = trained
    eole_t = eole_transform(XLPositionTransform, seed=7, xl_preorderer=str(path), xl_noise=0.5)
    onmt_t = onmt_transform(onmt_side.XLPositionTransform, seed=7, xl_preorderer=str(path), xl_noise=0.5)
    moved = 0
    for src in corpus.src[:30]:
        clean = onmt_t.apply({"src": list(src), "tgt": None})["xl_pos"]
        assert eole_t.apply({"src": " ".join(src), "tgt": None})["xl_pos"] == clean
        noisy = onmt_t.apply({"src": list(src), "tgt": None}, is_train=True)["xl_pos"]
        assert eole_t.apply({"src": " ".join(src), "tgt": None}, is_train=True)["xl_pos"] == noisy
        assert sorted(noisy) == sorted(clean)
        moved += noisy != clean
    assert moved > 0


def test_a_bucket_gives_the_positions_and_noise_of_one_by_one(trained):
    """Eole's ``batch_apply`` parses the bucket's misses at once; positions and noise stay the OpenNMT ones."""
    corpus, path = trained
    eole_t = eole_transform(XLPositionTransform, seed=7, xl_preorderer=str(path), xl_noise=0.5)
    onmt_t = onmt_transform(onmt_side.XLPositionTransform, seed=7, xl_preorderer=str(path), xl_noise=0.5)
    srcs = list(corpus.src[:20]) + list(corpus.src[:5])
    want = [onmt_t.apply({"src": list(s), "tgt": None}, is_train=True)["xl_pos"] for s in srcs]
    out = eole_t.batch_apply([({"src": " ".join(s), "tgt": None}, None, "train") for s in srcs], is_train=True)
    assert [ex["xl_pos"] for ex, _, _ in out] == want
    assert len(eole_t.cache) == len({" ".join(s) for s in srcs if len(s) > 1})


def test_oracle_positions_from_eole_alignments():
    """``xl_source: align``: Eole's example carries ``align`` as a list of links and raw target text."""
    ex = {"src": "a b c d", "tgt": "w x y z", "align": ["0-3", "1-2", "2-0", "3-1"], "cid": "train",
          "cid_line_number": 0}
    want = onmt_transform(onmt_side.XLPositionTransform, xl_source="align").apply(
        {**ex, "src": ex["src"].split(), "tgt": ex["tgt"].split()})["xl_pos"]
    assert eole_transform(XLPositionTransform, xl_source="align").apply(dict(ex))["xl_pos"] == want == [3, 2, 0, 1]
    assert eole_transform(XLPreReorderTransform, xl_source="align").apply(dict(ex))["src"] == "c d b a"
    with pytest.raises(XLInputError, match=r"set path_align for this corpus \(or "
                                           r"transforms_configs.xl_position.xl_align_path\)"):
        eole_transform(XLPositionTransform, xl_source="align").apply({"src": "a", "tgt": "x", "cid": "train",
                                                                     "cid_line_number": 4})


def test_prereorder_artifact_is_copied_with_the_model(trained, tmp_path):
    _, path = trained
    saved, artifacts = eole_transform(XLPreReorderTransform, xl_preorderer=str(path))._save_artifacts(str(tmp_path))
    assert artifacts == [path.name] and (tmp_path / path.name).read_bytes() == path.read_bytes()
    assert saved.xl_preorderer == "${MODEL_PATH}/" + path.name


def test_configuration_errors():
    from pydantic import ValidationError

    assert XLPositionConfig(xl_preorderer="p.xlp", xl_noise=0.1).xl_noise == 0.1
    with pytest.raises(ValidationError, match="xl_noise"):
        XLPositionConfig(xl_noise=1.5)
    with pytest.raises(ValidationError, match="xl_noise"):  # no noise for the pre-reordering baseline
        XLPreReorderConfig(xl_preorderer="p.xlp", xl_noise=0.1)
    with pytest.raises(ValidationError, match="xl_cache_size"):
        XLPreReorderConfig(xl_cache_size=-1)
    with pytest.raises(ValueError, match="xl_prereorder needs transforms_configs.xl_prereorder.xl_preorderer"):
        eole_transform(XLPreReorderTransform)


def test_content_check_names_the_transform(trained):
    _, path = trained
    t = eole_transform(XLPreReorderTransform, xl_preorderer=str(path))
    with pytest.raises(XLInputError, match="trained on words, but the source tokens of corpus_1 .up to line 1. "
                                           "reaching xl_prereorder are sub-words"):
        t.apply({"src": "lo@@ ng wo@@ rd@@ s a@@ re he@@ re", "tgt": None, "cid": "corpus_1", "cid_line_number": 0})


# --- the plain ``eole`` command (start-up hook) ----------------------------------------------------------------------

EOLE = Path(sys.executable).with_name("eole")
needs_plain_eole = pytest.mark.skipif(
    not EOLE.exists() or "onmt_xl_hook" not in sys.modules,
    reason="needs Eole's `eole` script beside this interpreter and onmt_xl installed in its environment "
           "(onmt_xl_hook.pth)")

#: tests.test_eole.E2E_CONFIG made a pre-reordering baseline: xl_prereorder, a stock Transformer
PREREORDER_CONFIG = (E2E_CONFIG.replace("xl_position", "xl_prereorder").replace("architecture: custom",
                                                                                 "architecture: transformer")
                     .replace("  encoder: {{encoder_type: xl_combination, xl_heads: 1}}\n", "")
                     .replace("  decoder: {{decoder_type: transformer}}\n", "")
                     .replace("train_steps: 6", "train_steps: 4").replace("_steps: 6", "_steps: 4"))


@needs_plain_eole
def test_plain_eole_trains_and_predicts_with_xl_prereorder(tmp_path):
    import json
    import os

    assert "xl_prereorder" in PREREORDER_CONFIG and "xl_combination" not in PREREORDER_CONFIG
    pre = e2e_files(tmp_path, PREREORDER_CONFIG)
    run_eole([EOLE], "build_vocab", "-config", tmp_path / "vocab.yaml", cwd=tmp_path)
    run_eole([EOLE], "train", "-config", tmp_path / "train.yaml", cwd=tmp_path)
    model = tmp_path / "model"
    config = json.loads((model / "config.json").read_text())
    assert config["transforms_configs"]["xl_prereorder"]["xl_preorderer"] == "${MODEL_PATH}/" + pre.name
    assert config["model"]["encoder"]["encoder_type"] == "transformer"
    assert (model / pre.name).read_bytes() == pre.read_bytes()
    os.remove(pre)  # predict must use the model's own copy
    run_eole([EOLE], "predict", "-model_path", model, "-src", tmp_path / "test.src", "-output", tmp_path / "hyp.txt",
             "-beam_size", "2", cwd=tmp_path)
    assert len((tmp_path / "hyp.txt").read_text().splitlines()) == 6
    # switched off, the same command is stock Eole, which knows no xl_prereorder
    off = run_eole([EOLE], "train", "-config", tmp_path / "train.yaml", cwd=tmp_path, env={"ONMT_XL_DISABLE": "1"},
                   ok=False)
    assert off.returncode != 0 and "xl_prereorder" in off.stdout + off.stderr


REGISTRY = """
import json, sys
from eole.transforms import AVAILABLE_TRANSFORMS
from eole.encoders import str2enc
from eole.config.data import NestedAllTransformsConfig
print(json.dumps({"transforms": sorted(AVAILABLE_TRANSFORMS), "encoders": sorted(str2enc),
                  "configs": sorted(NestedAllTransformsConfig.model_fields),
                  "ours": sorted(m for m in sys.modules if m.split(".")[0] == "onmt_xl")}))
"""


@needs_plain_eole
def test_the_start_up_hook_registers_with_eole_unless_disabled(tmp_path):
    import json

    runs = {}
    for flag in ("0", "1"):
        proc = run_eole([sys.executable, "-c", REGISTRY], cwd=tmp_path, env={"ONMT_XL_DISABLE": flag})
        runs[flag] = json.loads(proc.stdout.strip().splitlines()[-1])
    on, off = runs["0"], runs["1"]
    ours = {"transforms": {"xl_position", "xl_prereorder"}, "encoders": {"xl_inxl", "xl_headxl", "xl_combination"},
            "configs": {"xl_position", "xl_prereorder"}}
    for key, names in ours.items():
        assert names <= set(on[key]) and not any(name.startswith("xl_") for name in off[key])
        assert {name for name in on[key] if not name.startswith("xl_")} == set(off[key])  # nothing stock changed
    assert off["ours"] == [] and "onmt_xl.eole.seams" in on["ours"] and "onmt_xl.opennmt.seams" not in on["ours"]


def test_a_broken_onmt_xl_never_breaks_import_eole(tmp_path):
    """The start-up hook with an onmt_xl that cannot be imported: one warning line, Eole imports and runs stock."""
    import shutil
    import subprocess

    from tests.conftest import REPO, run_env

    shutil.copy(REPO / "onmt_xl_hook.py", tmp_path / "onmt_xl_hook.py")
    (tmp_path / "onmt_xl").mkdir()
    (tmp_path / "onmt_xl" / "__init__.py").write_text("raise ImportError('simulated breakage')\n")
    code = ("import onmt_xl_hook; onmt_xl_hook.install()\n"  # as the .pth does (idempotent where it ran already)
            "from eole.transforms import AVAILABLE_TRANSFORMS\nprint('xl_position' in AVAILABLE_TRANSFORMS)\n")
    env = {**run_env(), "PYTHONPATH": str(tmp_path), "ONMT_XL_DISABLE": "0"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "False"
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("onmt_xl: warning")]
    assert len(warnings) == 1 and "simulated breakage" in warnings[0] and "Eole runs without onmt_xl" in warnings[0]


def test_a_preorderer_on_other_text_warns_once_and_not_on_its_own(trained, caplog, monkeypatch):
    """The foreign-text warning of the shared logic (onmt_xl.core.reorder.coverage) in Eole, whose source is raw text:
    once for the synthetic target language as the source, none for held-out sentences of the preorderer's own."""
    from onmt_xl.core import position_source
    from onmt_xl.core.data.synthetic import generate

    monkeypatch.setattr(position_source, "_WARNED_FOREIGN", set())
    corpus, path = trained

    def warnings_for(sentences):
        caplog.clear()
        transform = eole_transform(XLPositionTransform, xl_preorderer=str(path))
        with caplog.at_level("WARNING", logger="onmt_xl.core.position_source"):
            for src in sentences:
                transform.apply({"src": " ".join(src), "tgt": None})
        return [r.getMessage() for r in caplog.records if "source tokens of" in r.getMessage()]

    assert warnings_for(generate(60, seed=10).src) == []
    foreign = generate(60, seed=9).tgt
    [message] = warnings_for(foreign)
    assert message.startswith(f"xl_position: warning: the preorderer {path} knows only 0% of the first ")
    assert "onmt-xl preorder-train" in message
    assert warnings_for(foreign) == []  # once per process


# --- precomputed positions (xl_positions_suffix, issue 76) ------------------------------------------------------------

def test_eole_reads_a_corpus_positions_by_line(trained, tmp_path, caplog):
    from onmt_xl.core.reorder.positions_file import PositionsHeader, scan_corpus, write_positions

    _, pre = trained
    src = ["a b c", "d e", "g h i j"]
    corpus = tmp_path / "train.src"
    corpus.write_text("".join(s + "\n" for s in src))
    scan = scan_corpus(str(corpus))
    write_positions(str(corpus) + ".xlpos", PositionsHeader("train.src", 3, scan.sha256, {"method": "test"}),
                    [[2, 0, 1], [1, 0], [3, 2, 1, 0]])
    (tmp_path / "valid.src").write_text("a b c\n")
    cfg = XLPositionConfig(xl_preorderer=str(pre), xl_positions_suffix=".xlpos")
    data = {"train": SimpleNamespace(path_src=str(corpus), transforms=None),
            "valid": SimpleNamespace(path_src=str(tmp_path / "valid.src"), transforms=["xl_position"])}
    full = SimpleNamespace(transforms_configs=SimpleNamespace(xl_position=cfg), seed=-1, data=data,
                           transforms=["xl_position"])
    t = XLPositionTransform(full)
    with caplog.at_level("INFO", logger="eole"):
        t.warm_up()
    assert f"xl_position: corpus 'train' takes pos_XL from {corpus}.xlpos (test)" in caplog.text
    assert f"xl_position: corpus 'valid' takes pos_XL from the preorderer {pre}" in caplog.text

    def ex(line, cid="train", number=None):
        return {"src": src[line], "tgt": None, "cid": cid, "cid_line_number": line if number is None else number}

    assert t.apply(ex(0), is_train=True)["xl_pos"] == [2, 0, 1]
    assert t.apply(ex(2))["xl_pos"] == [3, 2, 1, 0]
    assert t.apply(ex(2, number=1))["xl_pos"] == [3, 2, 1, 0]  # a strided reader's line number
    assert t.apply(ex(0, "valid"))["xl_pos"] == t.preorderer.pos_xl(src[0].split())
    assert t.batch_apply([(ex(1), None, "train"), (ex(0, "valid"), None, "valid")])[0][0]["xl_pos"] == [1, 0]
    with pytest.raises(XLInputError, match=r"train.src, line 2: 3 source tokens reach xl_position, but .*xlpos has 2"):
        t.apply({"src": "d e f", "tgt": None, "cid": "train", "cid_line_number": 1})
    # Eole's config validates the option and stock configs leave it unset
    assert XLPositionConfig().xl_positions_suffix is None and XLPreReorderConfig().xl_positions_suffix is None


def test_eole_predict_input_reads_its_positions_file(trained, tmp_path, caplog):
    """``eole predict``'s ``src`` with ``src + SUFFIX`` beside it (corpus ``infer``): its positions, checked as a
    training corpus' are; none beside it, or ``eole serve``'s placeholder ``src``: the preorderer."""
    from onmt_xl.core.reorder.positions_file import PositionsHeader, scan_corpus, write_positions

    _, pre = trained
    src = tmp_path / "test.src"
    src.write_text("a b c\nd e\n\n")
    write_positions(str(src) + ".xlpos", PositionsHeader("test.src", 3, scan_corpus(str(src)).sha256, {"method": "t"}),
                    [[1, 2, 0], [1, 0], []])
    cfg = XLPositionConfig(xl_preorderer=str(pre), xl_positions_suffix=".xlpos")

    def predict_transform(path):
        full = SimpleNamespace(transforms_configs=SimpleNamespace(xl_position=cfg), seed=-1, src=str(path),
                               transforms=["xl_position"])
        t = XLPositionTransform(full)
        t.warm_up()
        return t

    with caplog.at_level("INFO", logger="eole"):
        t = predict_transform(src)
    assert f"xl_position: the input {src} takes pos_XL from {src}.xlpos (t)" in caplog.text
    for line, (text, row) in enumerate((("a b c", [1, 2, 0]), ("d e", [1, 0]), ("", [0]))):
        assert t.apply({"src": text, "tgt": None, "cid": "infer", "cid_line_number": line})["xl_pos"] == row
    with pytest.raises(XLInputError, match=r"test.src, line 1: the source tokens reaching xl_position are no line"):
        t.apply({"src": "a b x", "tgt": None, "cid": "infer", "cid_line_number": 0})
    other = tmp_path / "other.src"
    other.write_text("a b c\n")
    with caplog.at_level("INFO", logger="eole"):
        t = predict_transform(other)
    assert f"xl_position: the input {other} takes pos_XL from the preorderer {pre} (no {other}.xlpos)" in caplog.text
    assert t.apply({"src": "a b c", "tgt": None, "cid": "infer", "cid_line_number": 0})["xl_pos"] == \
        t.preorderer.pos_xl("a b c".split())
    assert predict_transform("dummy").precomputed == {}  # eole serve's src


@pytest.mark.parametrize("batch", [(1, "sents"), (2, "sents"), (3, "sents"), (24, "tokens")])
def test_eole_predict_batches_keep_each_line_s_positions(trained, tmp_path, batch):
    """Eole's inference iterator sorts a bucket by length and batches it: each row of ``batch["xl_pos"]`` is its own
    line's (random permutations, lines of different lengths, a repeated line with other positions)."""
    import random

    import pyonmttok
    from eole.config.run import PredictConfig
    from eole.constants import CorpusTask, ModelType
    from eole.inputters.dynamic_iterator import build_dynamic_dataset_iter
    from eole.transforms import get_transforms_cls, make_transforms

    from onmt_xl.core.reorder.positions_file import PositionsHeader, scan_corpus, write_positions

    corpus, pre = trained
    lines = [" ".join(s) for s in corpus.src[:9]] + [" ".join(corpus.src[2])]
    src = tmp_path / "test.src"
    src.write_text("\n".join(lines) + "\n")
    rng = random.Random(7)
    rows = [rng.sample(range(len(l.split())), len(l.split())) for l in lines]
    while rows[-1] == rows[2]:
        rows[-1] = rng.sample(rows[2], len(rows[2]))
    write_positions(str(src) + ".xlpos", PositionsHeader("test.src", len(lines), scan_corpus(str(src)).sha256,
                                                         {"method": "test"}), rows)
    cfg = PredictConfig(model_path="unused", src=str(src), transforms=["xl_position"], batch_size=batch[0],
                        batch_type=batch[1], transforms_configs={"xl_position": {
                            "xl_preorderer": str(pre), "xl_positions_suffix": ".xlpos"}})
    vocab = pyonmttok.build_vocab_from_tokens(sorted({t for l in lines for t in l.split()}),
                                              special_tokens=["<unk>", "<blank>", "<s>", "</s>"])
    vocab.default_id = 0
    vocabs = {"src": vocab, "tgt": vocab, "data_task": "seq2seq", "decoder_start_token": "<s>", "specials": {}}
    transforms = make_transforms(cfg, get_transforms_cls(cfg._all_transform), vocabs)
    seen = []
    for b, _ in build_dynamic_dataset_iter(cfg, transforms, vocabs, task=CorpusTask.INFER,
                                           model_type=ModelType.ENCODER_DECODER):
        assert not b["left_pad"]
        for r, line in enumerate(b["cid_line_number"]):
            n = int(b["srclen"][r])
            assert b["xl_pos"][r, :n].tolist() == rows[line], line
            seen.append(line)
    assert sorted(seen) == list(range(len(lines))) and seen != sorted(seen)


def test_eole_predict_reads_the_input_s_positions_of_a_model_trained_with_the_option(tmp_path):
    """End to end: a model trained with ``xl_positions_suffix`` (its training corpus has no positions file: the
    preorderer) keeps the option in its saved config, and ``eole predict`` reads ``src + SUFFIX``: the preorderer's
    own positions there give its translations exactly; a stale file is refused in one line."""
    import sys

    from tests.test_eole import E2E_CONFIG, e2e_files, run_eole

    config = E2E_CONFIG.replace("xl_position: {{xl_preorderer: {pre}}}",
                                "xl_position: {{xl_preorderer: {pre}, xl_positions_suffix: .xlpos}}")
    assert config != E2E_CONFIG
    wd = tmp_path
    pre = e2e_files(wd, config)

    def eole(*args, ok=True):
        return run_eole([sys.executable, "-m", "onmt_xl.eole"], *args, cwd=wd, ok=ok)

    eole("build_vocab", "-config", str(wd / "vocab.yaml"))
    train = eole("train", "-config", str(wd / "train.yaml"))
    assert f"corpus 'corpus_1' takes pos_XL from the preorderer {pre} (no {wd}/train.src.xlpos)" in \
        train.stdout + train.stderr

    def predict(out, ok=True):
        return eole("predict", "-model_path", str(wd / "model"), "-src", str(wd / "test.src"), "-output", str(out),
                    "-beam_size", "2", "-batch_size", "4", ok=ok)

    plain = predict(wd / "hyp.pre")
    assert f"the input {wd}/test.src takes pos_XL from the preorderer" in plain.stdout + plain.stderr
    proc = run_eole([sys.executable, "-m", "onmt_xl.cli"], "positions", "--src", wd / "test.src", "--preorderer", pre,
                    "--quiet", "--out", f"{wd}/test.src.xlpos", cwd=wd)
    read = predict(wd / "hyp.file")
    assert f"the input {wd}/test.src takes pos_XL from {wd}/test.src.xlpos (preorderer " in read.stdout + read.stderr
    assert (wd / "hyp.file").read_text() == (wd / "hyp.pre").read_text() and proc.returncode == 0
    (wd / "test.src").write_text((wd / "test.src").read_text() + "a b\n")
    stale = predict(wd / "hyp.stale", ok=False)
    assert stale.returncode != 0 and "Traceback" not in stale.stderr, stale.stderr[-2000:]
    assert f"test.src.xlpos: made for another corpus (6 lines) than {wd}/test.src (7 lines" in stale.stderr
