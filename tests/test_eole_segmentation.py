"""The pipeline half of the segmentation guard in Eole (:mod:`onmt_xl.eole.segmentation`): ``xl_position`` and
``xl_prereorder`` refuse, at warm-up, a preorderer trained on another segmentation than the one Eole's sub-word
transforms listed before them give, naming the corpus (or the top-level ``transforms`` of ``eole predict``); the
decisions are OpenNMT-py's (one portable mapping, :func:`onmt_xl.core.segmentation.tokenizer_segmentation`).

Skipped where Eole is not installed (see tests/test_eole.py's docstring for the venv).
"""

import json
import sys
from argparse import Namespace
from types import SimpleNamespace

import pytest

pytest.importorskip("eole", reason="Eole is not installed (pip install eole==0.6.4 in a venv; see tests/test_eole.py)")

import onmt_xl.eole  # noqa: E402
from onmt_xl.core.errors import XLInputError  # noqa: E402
from onmt_xl.core.segmentation import SegmentationScheme, file_sha256, marker  # noqa: E402
from tests.test_eole import run_eole  # noqa: E402

onmt_xl.eole.register()
from eole.config.data import Dataset  # noqa: E402
from eole.transforms.tokenize import BaseTokenizerConfig, ONMTTokenizerConfig  # noqa: E402

from onmt_xl.eole import segmentation as eole_seg  # noqa: E402
from onmt_xl.eole.transforms import (  # noqa: E402
    XLPositionConfig, XLPositionTransform, XLPreReorderConfig, XLPreReorderTransform,
)

JOINER_KWARGS = {"mode": "space", "joiner_annotate": True}


@pytest.fixture(scope="module")
def pre(tmp_path_factory):
    """A tiny corpus, its BPE model (pyonmttok, joiner ￭), a preorderer trained on its words and one on its pieces."""
    from onmt_xl.core.align.subword import SubwordModel, project_corpus
    from onmt_xl.core.reorder.preorderer import Preorderer
    from tests.helpers import tiny_corpus, tiny_preorderer

    d = tmp_path_factory.mktemp("eole_seg")
    corpus = tiny_corpus(d, n=120)
    bpe = SubwordModel.learn(corpus.src, str(d / "src.bpe"), kind="bpe", size=40)
    segs = bpe.segment_corpus(corpus.src)
    scheme = SegmentationScheme.subword(marker("joiner"), str(d / "src.bpe"), "pyonmttok")
    Preorderer.train([s.pieces for s in segs], project_corpus(corpus.links, segs), segmentation=scheme,
                     iterations=1, hash_size=1 << 14, progress=False).save(str(d / "pieces.xlp"))
    (d / "sp.model").write_bytes(b"not really a sentencepiece model")  # hashed, never loaded here
    return Namespace(dir=d, words=str(tiny_preorderer(d, corpus)), pieces=str(d / "pieces.xlp"),
                     bpe=str(d / "src.bpe"), sp=str(d / "sp.model"), piece_sents=[s.pieces for s in segs])


def full_config(transforms=None, data=None, **sections):
    """Eole's full config as a transform sees it: ``transforms``, ``data`` (corpus -> transform list, or None for a
    corpus without its own list), ``transforms_configs``; without ``data`` it is ``eole predict``'s."""
    configs = {"sentencepiece": BaseTokenizerConfig(), "bpe": BaseTokenizerConfig(),
               "onmt_tokenize": ONMTTokenizerConfig(), **sections}
    full = SimpleNamespace(transforms=list(transforms or []), transforms_configs=SimpleNamespace(**configs), seed=-1)
    if data is not None:
        full.data = {cid: Dataset(transforms=names) for cid, names in data.items()}
    return full


def warm(cls, preorderer, **kw):
    full = full_config(**kw)
    setattr(full.transforms_configs, cls.name,
            (XLPositionConfig if cls is XLPositionTransform else XLPreReorderConfig)(xl_preorderer=preorderer))
    t = cls(full)
    t.warm_up()
    return t


def test_a_words_preorderer_behind_a_sub_word_transform_is_refused(pre):
    cases = [
        ("sentencepiece", dict(sentencepiece=BaseTokenizerConfig(src_subword_model=pre.sp)),
         "sentencepiece model sp.model", "spacer ▁"),
        ("bpe", dict(bpe=BaseTokenizerConfig(src_subword_model=pre.bpe)), "bpe model src.bpe", "separator @@"),
        ("onmt_tokenize", dict(onmt_tokenize=ONMTTokenizerConfig(src_subword_type="sentencepiece",
                                                                  src_subword_model=pre.sp)),
         "onmt_tokenize model sp.model", "spacer ▁"),
        ("onmt_tokenize", dict(onmt_tokenize=ONMTTokenizerConfig(src_subword_type="bpe", src_subword_model=pre.bpe,
                                                                  src_onmttok_kwargs=JOINER_KWARGS)),
         "onmt_tokenize model src.bpe", "joiner ￭"),
    ]
    for tokenizer, sections, model, mark in cases:
        with pytest.raises(XLInputError) as info:
            warm(XLPositionTransform, pre.words, data={"corpus_1": [tokenizer, "xl_position"],
                                                       "valid": ["xl_position"]}, **sections)
        msg = str(info.value)
        assert "\n" not in msg
        assert msg.startswith(f"{pre.words}: segmentation mismatch: this preorderer was trained on words, but corpus "
                              f"'corpus_1' ({tokenizer} -> xl_position) feeds xl_position sub-words"), msg
        assert model in msg and mark in msg and "retrain" in msg
        assert f"transforms_configs.{tokenizer}.src_subword_model" in msg  # the note names Eole's option
    sp = dict(sentencepiece=BaseTokenizerConfig(src_subword_model=pre.sp))
    # a corpus without its own list gets the top-level transforms (Eole's rule)
    with pytest.raises(XLInputError, match=r"but corpus 'valid' \(sentencepiece -> xl_prereorder\) feeds "
                                           r"xl_prereorder sub-words"):
        warm(XLPreReorderTransform, pre.words, transforms=["sentencepiece", "xl_prereorder"],
             data={"corpus_1": ["xl_prereorder"], "valid": None}, **sp)
    # a sub-word transform after ours, onmt_tokenize splitting nothing, or none at all: nothing to refuse
    warm(XLPositionTransform, pre.words, data={"corpus_1": ["xl_position", "sentencepiece"]}, **sp)
    warm(XLPositionTransform, pre.words, data={"corpus_1": ["onmt_tokenize", "xl_position"]})
    warm(XLPositionTransform, pre.words, data={"corpus_1": ["filtertoolong", "xl_position"]}, **sp)
    # xl_source: align uses no preorderer
    full = full_config(data={"corpus_1": ["sentencepiece", "xl_position"]}, **sp)
    full.transforms_configs.xl_position = XLPositionConfig(xl_source="align")
    XLPositionTransform(full).warm_up()


def test_the_preorderers_own_model_passes_and_another_is_refused(pre, tmp_path):
    tok = dict(onmt_tokenize=ONMTTokenizerConfig(src_subword_type="bpe", src_subword_model=pre.bpe,
                                                  src_onmttok_kwargs=JOINER_KWARGS))
    t = warm(XLPositionTransform, pre.pieces, data={"corpus_1": ["onmt_tokenize", "xl_position"]}, **tok)
    src = list(pre.piece_sents[0])
    assert sorted(t.apply({"src": src, "tgt": None})["xl_pos"]) == list(range(len(src)))
    other = tmp_path / "other.bpe"
    other.write_bytes(open(pre.bpe, "rb").read() + b"\n")
    tok["onmt_tokenize"].src_subword_model = str(other)
    with pytest.raises(XLInputError) as info:
        warm(XLPositionTransform, pre.pieces, data={"corpus_1": ["onmt_tokenize", "xl_position"]}, **tok)
    msg = str(info.value)
    assert f"model src.bpe, sha256 {file_sha256(pre.bpe)[:12]}" in msg
    assert f"model other.bpe, sha256 {file_sha256(str(other))[:12]}" in msg
    assert "set transforms_configs.onmt_tokenize.src_subword_model to the model the preorderer was trained" in msg
    # a pieces preorderer behind SentencePiece (spacer, another convention) is refused too
    with pytest.raises(XLInputError, match="trained on sub-words .* feeds xl_position sub-words .sentencepiece"):
        warm(XLPositionTransform, pre.pieces, data={"corpus_1": ["sentencepiece", "xl_position"]},
             sentencepiece=BaseTokenizerConfig(src_subword_model=pre.sp))


def test_the_mapping_is_opennmts(pre):
    """Eole's options give the scheme OpenNMT-py's same options give (one portable function behind both)."""
    onmt_side = pytest.importorskip("onmt_xl.opennmt.transforms.xl_position", reason="needs OpenNMT-py for the comparison")
    combos = [("sentencepiece", None, "none", None), ("bpe", pre.bpe, "none", None),
              ("onmt_tokenize", pre.bpe, "none", None), ("onmt_tokenize", None, "none", {"mode": "conservative"}),
              ("onmt_tokenize", None, "none", {"mode": "aggressive", "joiner_annotate": True, "joiner": "##"}),
              ("onmt_tokenize", pre.bpe, "bpe", None), ("onmt_tokenize", pre.bpe, "bpe", JOINER_KWARGS),
              ("onmt_tokenize", pre.sp, "sentencepiece", None), ("onmt_tokenize", pre.sp, "sentencepiece",
                                                                 {"mode": "space"}),
              ("onmt_tokenize", pre.sp, "sentencepiece", {"mode": "none", "spacer_annotate": True}),
              ("filtertoolong", pre.bpe, "none", None)]
    kinds = set()
    for name, model, subword_type, kwargs in combos:
        section = (ONMTTokenizerConfig(src_subword_model=model, src_subword_type=subword_type,
                                       **({"src_onmttok_kwargs": kwargs} if kwargs else {}))
                   if name == "onmt_tokenize" else BaseTokenizerConfig(src_subword_model=model))
        eole_scheme = eole_seg.transform_segmentation(name, full_config(**{name: section}))
        opts = Namespace(src_subword_model=model, src_subword_type=subword_type,
                         src_onmttok_kwargs=str(kwargs or {"mode": "none"}))
        onmt_scheme = onmt_side.transform_segmentation(name, opts)
        assert eole_scheme == onmt_scheme, (name, model, subword_type, kwargs)
        kinds.add(None if eole_scheme is None else eole_scheme.marker)
    assert kinds == {None, "none", "spacer ▁", "separator @@", "joiner ￭", "joiner ##"}  # the cases differ


def test_predict_time_transforms_from_the_model_config(pre, tmp_path, monkeypatch):
    """``eole predict``: no corpora; the model's ``config.json`` gives ``transforms`` and the tokenizer's model as
    ``${MODEL_PATH}/...`` (Eole's real ``PredictConfig``)."""
    import shutil

    from eole.config.run import PredictConfig

    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(pre.bpe, model / "src.bpe")
    shutil.copy(pre.words, model / "pre.xlp")
    shutil.copy(pre.pieces, model / "pieces.xlp")
    monkeypatch.setenv("MODEL_PATH", str(model))  # PredictConfig sets it too; undone after the test

    def config(preorderer):
        (model / "config.json").write_text(json.dumps({
            "transforms": ["onmt_tokenize", "xl_prereorder"],
            "transforms_configs": {
                "onmt_tokenize": {"src_subword_type": "bpe", "src_subword_model": "${MODEL_PATH}/src.bpe",
                                  "src_onmttok_kwargs": JOINER_KWARGS},
                "xl_prereorder": {"xl_preorderer": "${MODEL_PATH}/" + preorderer}},
            "model": {"architecture": "transformer", "hidden_size": 16, "layers": 1, "heads": 2,
                      "transformer_ff": 32}}))
        return PredictConfig(model_path=str(model), src="dummy")

    with pytest.raises(XLInputError) as info:
        XLPreReorderTransform(config("pre.xlp")).warm_up()
    msg = str(info.value)
    assert msg.startswith(f"{model / 'pre.xlp'}: segmentation mismatch: this preorderer was trained on words, but "
                          "transforms (onmt_tokenize -> xl_prereorder) feeds xl_prereorder sub-words "
                          f"(onmt_tokenize model src.bpe, sha256 {file_sha256(pre.bpe)[:12]}, joiner ￭"), msg
    XLPreReorderTransform(config("pieces.xlp")).warm_up()


def test_eole_build_vocab_refuses_in_one_line_naming_the_corpus(pre, tmp_path):
    """Through Eole's own command (``python -m onmt_xl.eole``): a words preorderer behind onmt_tokenize with the BPE
    model fails at start-up, one line, no traceback; the pieces preorderer builds."""
    d = pre.dir
    cfg = tmp_path / "vocab.yaml"

    def write(preorderer):
        cfg.write_text(
            f"src_vocab: {tmp_path}/vocab.src\ntgt_vocab: {tmp_path}/vocab.tgt\nsave_data: {tmp_path}/data\n"
            "overwrite: true\nn_sample: -1\n"
            f"data:\n  corpus_1: {{path_src: {d}/train.src, path_tgt: {d}/train.tgt,\n"
            "             transforms: [onmt_tokenize, xl_position]}\n"
            "transforms_configs:\n"
            f"  onmt_tokenize: {{src_subword_type: bpe, src_subword_model: {pre.bpe},\n"
            "                  src_onmttok_kwargs: {mode: space, joiner_annotate: true}}\n"
            f"  xl_position: {{xl_preorderer: {preorderer}}}\n")

    module = [sys.executable, "-m", "onmt_xl.eole"]
    write(pre.words)
    proc = run_eole(module, "build_vocab", "-config", cfg, cwd=tmp_path, ok=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out, out[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("eole build_vocab: error: ")]
    assert len(errors) == 1, out[-3000:]
    assert errors[0].startswith(
        f"eole build_vocab: error: {pre.words}: segmentation mismatch: this preorderer was trained on words, but "
        "corpus 'corpus_1' (onmt_tokenize -> xl_position) feeds xl_position sub-words (onmt_tokenize model src.bpe"
    ), errors[0]
    write(pre.pieces)
    run_eole(module, "build_vocab", "-config", cfg, cwd=tmp_path)
    assert (tmp_path / "vocab.src").read_text().count("\uffed") > 0  # the vocabulary is of joiner-marked pieces
