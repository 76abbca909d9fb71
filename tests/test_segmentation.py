"""The word/sub-word segmentation guard: a preorderer (and word alignments) record the segmentation they
were made on, and the transform, ``onmt-xl align``'s users and ``preorder-apply`` fail on another one."""

import json
import logging
import pickle
import subprocess
from argparse import Namespace

import numpy as np
import pytest

import onmt_xl
from onmt_xl.core.errors import XLInputError
from onmt_xl.core.reorder.preorderer import Preorderer
from onmt_xl.core.segmentation import (
    JOINER, SPACER, SegmentationScheme, check_tokens, count_markers, detect, file_sha256, marker,
)
from onmt_xl.core.align.subword import SubwordModel, project_corpus
from onmt_xl.core.data.synthetic import generate
from tests.conftest import run_env
from tests.helpers import stock_cli

onmt_xl.register()
from onmt_xl.opennmt.transforms.xl_position import (  # noqa: E402
    XLPositionTransform, XLPreReorderTransform, pipeline_segmentations, transform_segmentation,
)


def _write(path, sents):
    path.write_text("".join(" ".join(s) + "\n" for s in sents), encoding="utf-8")
    return str(path)


def _write_links(path, links):
    path.write_text("".join(" ".join(f"{i}-{j}" for i, j in ls) + "\n" for ls in links))
    return str(path)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Synthetic words, their BPE pieces (joiner ￭) with projected links, and a preorderer trained on each."""
    d = tmp_path_factory.mktemp("seg")
    corpus = generate(300, seed=2)
    bpe = SubwordModel.learn(corpus.src, str(d / "src.bpe"), kind="bpe", size=40)
    segs = bpe.segment_corpus(corpus.src)
    pieces = [s.pieces for s in segs]
    piece_links = project_corpus(corpus.links, segs)
    kw = dict(iterations=1, hash_size=1 << 14, progress=False)
    Preorderer.train(corpus.src, corpus.links, **kw).save(str(d / "words.xlp"))
    scheme = SegmentationScheme.subword(marker("joiner"), str(d / "src.bpe"), "pyonmttok")
    Preorderer.train(pieces, piece_links, segmentation=scheme, **kw).save(str(d / "pieces.xlp"))
    files = dict(
        words=_write(d / "words.src", corpus.src), pieces=_write(d / "pieces.src", pieces),
        tgt=_write(d / "train.tgt", corpus.tgt), align=_write_links(d / "words.align", corpus.links),
        piece_align=_write_links(d / "pieces.align", piece_links), bpe=str(d / "src.bpe"),
        words_pre=str(d / "words.xlp"), pieces_pre=str(d / "pieces.xlp"),
    )
    return Namespace(dir=d, corpus=corpus, piece_sents=pieces, piece_links=piece_links, scheme=scheme, **files)


def cli(*argv):
    """``onmt-xl`` as a user runs it (this checkout): (exit status, stderr)."""
    proc = subprocess.run([stock_cli("onmt-xl"), *map(str, argv)], capture_output=True, text=True, env=run_env())
    return proc.returncode, proc.stderr


def _main(*argv):
    from onmt_xl.cli import main

    return main([str(a) for a in argv])


# --- the record in the preorderer file -----------------------------------------------------------------------


def test_segmentation_record_round_trips_through_save_and_load(setup):
    loaded = Preorderer.load(setup.pieces_pre)
    header = loaded.header()
    assert header["version"] == 4
    assert header["segmentation"] == {"kind": "subword", "marker": "joiner ￭", "model": "src.bpe",
                                      "sha256": file_sha256(setup.bpe), "tokenizer": "pyonmttok"}
    assert loaded.segmentation == setup.scheme
    assert pickle.loads(pickle.dumps(loaded)).segmentation == setup.scheme  # shipped to data workers
    words = Preorderer.load(setup.words_pre)
    assert words.header()["segmentation"] == {"kind": "words"} and words.segmentation == SegmentationScheme.words()


def _save_as_version_2(model, path):
    """Write ``model`` as the previous format wrote it: version 2, no segmentation record."""
    state = model.__getstate__()
    header = {k: v for k, v in state["header"].items() if k not in ("segmentation", "features", "tagger")}
    header["version"] = 2
    as_bytes = lambda obj: np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)  # noqa: E731
    np.savez(path, header=as_bytes(header), vocab=as_bytes(state["vocab"]), clusters=state["clusters"],
             feat_index=state["feat_index"], feat_weight=state["feat_weight"])


def test_version_2_files_load_with_the_segmentation_their_vocabulary_shows(setup, tmp_path, caplog):
    for name, kind, mark in (("words_pre", "words", None), ("pieces_pre", "subword", "joiner ￭")):
        model = Preorderer.load(getattr(setup, name))
        old = str(tmp_path / f"{name}_v2.npz")
        _save_as_version_2(model, old)
        with caplog.at_level(logging.WARNING, logger="onmt_xl.core.reorder.preorderer"):
            caplog.clear()
            loaded = Preorderer.load(old)
            Preorderer.load(old)
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1 and old in warnings[0] and "does not record the segmentation" in warnings[0]
        assert loaded.version == 2 and loaded.header()["version"] == 2 and "segmentation" not in loaded.header()
        assert (loaded.segmentation.kind, loaded.segmentation.marker) == (kind, mark)
        assert loaded.segmentation.sha256 is None and "version 2" in loaded.segmentation.describe()
        sents = setup.piece_sents[:20] if kind == "subword" else setup.corpus.src[:20]
        assert loaded.reorder_batch(sents) == model.reorder_batch(sents)
    # and an unrecorded words preorderer is still refused on pieces
    assert _main("preorder-apply", "--model", str(tmp_path / "words_pre_v2.npz"), "--src", setup.pieces,
                 "--out-pos", tmp_path / "p") == 1


def test_a_version_3_file_without_its_record_is_corrupt(setup, tmp_path):
    state = Preorderer.load(setup.words_pre).__getstate__()
    header = {k: v for k, v in state["header"].items() if k != "segmentation"}
    as_bytes = lambda obj: np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)  # noqa: E731
    bad = str(tmp_path / "v3.npz")
    np.savez(bad, header=as_bytes(header), vocab=as_bytes(state["vocab"]), clusters=state["clusters"],
             feat_index=state["feat_index"], feat_weight=state["feat_weight"])
    with pytest.raises(XLInputError, match="no segmentation record") as info:
        Preorderer.load(bad)
    assert bad in str(info.value)


def test_train_records_what_the_tokens_show_and_refuses_a_contradicting_declaration(setup):
    kw = dict(iterations=1, hash_size=1 << 12, progress=False)
    c = setup.corpus
    assert Preorderer.train(setup.piece_sents[:50], setup.piece_links[:50], **kw).segmentation == \
        SegmentationScheme("subword", "joiner ￭")
    with pytest.raises(ValueError, match="segmentation mismatch.*declared as words.*joiner ￭"):
        Preorderer.train(setup.piece_sents[:50], setup.piece_links[:50], segmentation=SegmentationScheme.words(), **kw)
    with pytest.raises(ValueError, match="segmentation mismatch.*sub-words.*but this text is words"):
        Preorderer.train(c.src, c.links, segmentation=setup.scheme, **kw)


# --- the content check --------------------------------------------------------------------------------------


def test_content_check_markers_and_thresholds():
    words = [["the", "cat", "sat", "on", "the", "mat", "."]] * 200
    assert detect(words).kind == "words"
    # one stray marked token in word text never makes it sub-words
    assert check_tokens(SegmentationScheme.words(), words + [["a" + JOINER, "b"]], "x") is None
    for mark, sents in (("joiner ￭", [["ca" + JOINER, "t", "sat"]] * 5),
                        ("spacer ▁", [[SPACER + "ca", "t", SPACER + "sat"]] * 5),
                        ("separator @@", [["ca@@", "t", "sat"]] * 5)):
        assert detect(sents) == SegmentationScheme("subword", mark)
        msg = check_tokens(SegmentationScheme.words(), sents, "the preorderer P was trained on")
        assert msg.startswith("segmentation mismatch: the preorderer P was trained on words, "
                              "but this text is sub-words")
        assert mark in msg
    spacer = SegmentationScheme("subword", "spacer ▁")
    assert check_tokens(spacer, [["ca" + JOINER, "t", "sat"]] * 5, "P") is not None  # another convention
    assert check_tokens(spacer, words, "P").endswith("or use a preorderer trained on words")  # no spacer anywhere
    assert check_tokens(spacer, [["cat", "sat"]] * 5, "P") is None  # too few tokens to tell
    joiner = SegmentationScheme("subword", "joiner ￭")
    assert check_tokens(joiner, [["cat", "sat"]] * 100, "P") is None  # a big BPE vocabulary may split nothing
    assert "this text is words" in check_tokens(joiner, [["cat", "sat"]] * 500, "P")
    assert check_tokens(SegmentationScheme("subword", "none"), words, "P") is None  # no marker: nothing to see
    assert count_markers([["x"] * 10] * 10, limit=25).tokens == 25


def test_genuine_word_input_never_looks_like_sub_words(shared_data):
    from onmt_xl.core.segmentation import MarkerCounts

    for name in ("train.ja", "train.en", "dev.ja", "dev.en"):
        counts = MarkerCounts(limit=10**9)
        with open(shared_data / "enja" / name, encoding="utf-8") as f:
            for line in f:
                counts.add(line.split())
        assert counts.tokens > 3000 and sum(counts.counts.values()) == 0, (name, counts.counts)


def test_schemes_compare_kind_marker_and_model_hash(tmp_path):
    a, b = tmp_path / "a.model", tmp_path / "b.model"
    a.write_bytes(b"one model")
    b.write_bytes(b"another model")
    sa = SegmentationScheme.subword("spacer ▁", str(a), "sentencepiece")
    assert sa.matches(SegmentationScheme.subword("spacer ▁", str(a), "onmt_tokenize"))  # tokenizer not compared
    assert not sa.matches(SegmentationScheme.subword("spacer ▁", str(b)))
    assert not sa.matches(SegmentationScheme.subword("joiner ￭", str(a)))
    assert sa.matches(SegmentationScheme("subword", "spacer ▁"))  # model unknown on one side: marker only
    assert not sa.matches(SegmentationScheme.words())
    assert sa.describe() == f"sub-words (sentencepiece model a.model, sha256 {file_sha256(str(a))[:12]}, spacer ▁)"
    assert SegmentationScheme.from_dict(sa.to_dict()) == sa
    with pytest.raises(ValueError):
        SegmentationScheme.from_dict({"kind": "chars"})


# --- the commands -------------------------------------------------------------------------------------------


def test_preorder_apply_refuses_the_other_segmentation(setup, tmp_path):
    rc, err = cli("preorder-apply", "--model", setup.words_pre, "--src", setup.pieces, "--out-pos", tmp_path / "p")
    assert rc == 1 and "Traceback" not in err
    assert setup.pieces in err and setup.words_pre in err
    assert "trained on words, but this text is sub-words (joiner ￭" in err
    assert _main("preorder-apply", "--model", setup.pieces_pre, "--src", setup.words, "--out-pos", tmp_path / "p") == 1
    assert _main("preorder-apply", "--model", setup.pieces_pre, "--src", setup.pieces, "--out-pos", tmp_path / "p") == 0
    assert _main("preorder-apply", "--model", setup.words_pre, "--src", setup.words, "--out-pos", tmp_path / "p") == 0


def test_preorder_eval_and_show_reordering_check_their_input(setup, capsys):
    assert _main("preorder-eval", "--model", setup.words_pre, "--src", setup.pieces, "--tgt", setup.tgt,
                 "--align", setup.piece_align) == 1
    assert "segmentation mismatch" in capsys.readouterr().err
    assert _main("show-reordering", "--model", setup.pieces_pre, "--sentence", " ".join(setup.corpus.src[0] * 3)) == 0
    assert "segmentation mismatch" not in capsys.readouterr().err  # 30 words are too few to call them unmarked
    assert _main("show-reordering", "--model", setup.words_pre, "--sentence", " ".join(setup.piece_sents[0])) == 1
    assert "trained on words, but this text is sub-words" in capsys.readouterr().err


def test_preorder_train_records_the_declared_segmentation(setup, tmp_path, capsys):
    base = ["preorder-train", "--tgt", setup.tgt, "--iterations", 1, "--hash-bits", 12, "--quiet"]
    # sub-word text without a declaration is refused, with the fix
    rc, err = cli(*base, "--src", setup.pieces, "--align", setup.piece_align, "--model", tmp_path / "a.xlp")
    assert rc == 1 and setup.pieces in err and "--src-subword-model" in err and "Traceback" not in err
    # declared with its model: recorded with the model's hash
    out = tmp_path / "b.xlp"
    assert _main(*base, "--src", setup.pieces, "--align", setup.piece_align, "--model", out,
                 "--src-subword-model", setup.bpe) == 0
    assert Preorderer.load(str(out)).segmentation == SegmentationScheme.subword("joiner ￭", setup.bpe)
    assert "source segmentation: sub-words (model src.bpe" in capsys.readouterr().err
    # a declaration the text contradicts
    assert _main(*base, "--src", setup.pieces, "--align", setup.piece_align, "--model", out,
                 "--src-subword-model", setup.bpe, "--src-subword-marker", "spacer") == 1
    assert "declared as sub-words (model src.bpe" in capsys.readouterr().err
    assert _main(*base, "--src", setup.pieces, "--align", setup.piece_align, "--model", out,
                 "--src-subword-model", tmp_path / "missing.bpe") == 2
    assert "missing.bpe: sub-word model file not found" in capsys.readouterr().err


def test_word_alignments_with_a_sub_word_source_are_noticed(setup, tmp_path, capsys):
    """Alignments of another aligner (no record): the links stop early in each sentence -> a warning."""
    assert _main("preorder-train", "--src", setup.pieces, "--tgt", setup.tgt, "--align", setup.align,
                 "--model", tmp_path / "m.xlp", "--src-subword-model", setup.bpe, "--iterations", 1,
                 "--hash-bits", 12, "--quiet") == 0
    err = capsys.readouterr().err
    assert "warning: the links of" in err and setup.align in err and "another segmentation" in err
    assert _main("oracle", "--src", setup.words, "--tgt", setup.tgt, "--align", setup.align,
                 "--out-order", tmp_path / "o") == 0
    assert "warning" not in capsys.readouterr().err


def test_align_records_what_it_aligned_and_its_users_check_it(setup, tmp_path):
    prefix = tmp_path / "al"
    rc, err = cli("align", "--src", setup.words, "--tgt", setup.tgt, "--out-prefix", prefix,
                  "--n-samplers", 1, "--rel-iterations", 0.2)
    assert rc == 0, err
    record = json.loads((tmp_path / "al.seg.json").read_text())
    assert record["src"] == {"file": setup.words, "lines": 300, "tokens": sum(map(len, setup.corpus.src)),
                             "segmentation": {"kind": "words"}, "declared": False}
    gdfa = f"{prefix}.gdfa"
    rc, err = cli("preorder-train", "--src", setup.pieces, "--tgt", setup.tgt, "--align", gdfa, "--model",
                  tmp_path / "m.xlp", "--src-subword-model", setup.bpe, "--quiet")
    assert rc == 1 and "Traceback" not in err
    assert gdfa in err and setup.words in err and setup.pieces in err and str(tmp_path / "al.seg.json") in err
    assert "words" in err and "joiner ￭" in err
    assert _main("oracle", "--src", setup.pieces, "--tgt", setup.tgt, "--align", gdfa, "--out-order",
                 tmp_path / "o") == 1
    assert _main("oracle", "--src", setup.words, "--tgt", setup.tgt, "--align", gdfa, "--out-order",
                 tmp_path / "o") == 0


def test_preorder_train_compares_the_recorded_sub_word_model(setup, tmp_path, capsys):
    """Same token counts, other model: the alignments' record and the declaration disagree."""
    from onmt_xl.core.align.record import side_record, write_record

    other = tmp_path / "other.bpe"
    other.write_bytes(b"#version: 0.2\nx y\n")
    write_record(str(tmp_path / "pa"), side_record(setup.pieces, setup.piece_sents, SegmentationScheme.subword(
        "joiner ￭", str(other))), side_record(setup.tgt, setup.corpus.tgt))
    (tmp_path / "pa.gdfa").write_text(open(setup.piece_align).read())
    assert _main("preorder-train", "--src", setup.pieces, "--tgt", setup.tgt, "--align", tmp_path / "pa.gdfa",
                 "--model", tmp_path / "m.xlp", "--src-subword-model", setup.bpe, "--quiet") == 1
    err = capsys.readouterr().err
    assert "made on sub-words (model other.bpe" in err and "declared as sub-words (model src.bpe" in err


# --- the xl_position transform -------------------------------------------------------------------------------


def transform_opts(pre, transforms, translate=False, **kw):
    """Training options with ``transforms`` for corpus_1; ``translate``: ``onmt_translate``'s (no corpora)."""
    base = dict(xl_source="preorderer", xl_preorderer=pre, xl_noise=0.0, seed=-1, transforms=[],
                data={"corpus_1": {"transforms": transforms}, "valid": {"transforms": ["xl_position"]}},
                src_subword_model=None, src_subword_type="none", src_onmttok_kwargs="{'mode': 'none'}")
    if translate:
        del base["data"]
        base["transforms"] = transforms
    base.update(kw)
    return Namespace(**base)


def warm(cls=XLPositionTransform, **kw):
    opts = transform_opts(**kw)
    cls._validate_options(opts)
    t = cls(opts)
    t.warm_up()
    return t


def test_transform_warm_up_refuses_a_words_preorderer_behind_a_sub_word_transform(setup, tmp_path):
    sp = tmp_path / "sp.model"
    sp.write_bytes(b"not really a sentencepiece model")
    cases = [
        (["sentencepiece", "xl_position"], {}, "sentencepiece model sp.model", "spacer ▁"),
        (["bpe", "xl_position"], {}, "bpe model sp.model", "separator @@"),
        (["onmt_tokenize", "xl_position"], dict(src_subword_type="sentencepiece"), "onmt_tokenize model sp.model",
         "spacer ▁"),
        (["onmt_tokenize", "xl_position"],
         dict(src_subword_type="bpe", src_onmttok_kwargs={"mode": "space", "joiner_annotate": True}),
         "onmt_tokenize model sp.model", "joiner ￭"),
    ]
    for transforms, kw, model, mark in cases:
        with pytest.raises(XLInputError) as info:
            warm(pre=setup.words_pre, transforms=transforms, **{"src_subword_model": str(sp), **kw})
        msg = str(info.value)
        assert msg.startswith(f"{setup.words_pre}: segmentation mismatch: this preorderer was trained on words, "
                              f"but corpus 'corpus_1' ({' -> '.join(transforms)}) feeds xl_position sub-words")
        assert model in msg and mark in msg and "retrain" in msg
    with pytest.raises(XLInputError, match="feeds xl_prereorder sub-words"):
        warm(XLPreReorderTransform, pre=setup.words_pre, transforms=["sentencepiece", "xl_prereorder"],
             src_subword_model=str(sp))
    # at translation: -transforms
    with pytest.raises(XLInputError, match=r"but -transforms \(sentencepiece -> xl_position\) feeds"):
        warm(pre=setup.words_pre, transforms=["sentencepiece", "xl_position"], translate=True,
             src_subword_model=str(sp))
    # a sub-word transform after xl_position, or none at all, says nothing about its input
    warm(pre=setup.words_pre, transforms=["xl_position", "sentencepiece"], src_subword_model=str(sp))
    warm(pre=setup.words_pre, transforms=["filtertoolong", "xl_position"])


def test_transform_accepts_the_preorderer_model_and_refuses_another(setup, tmp_path):
    joiner = dict(src_subword_type="bpe", src_onmttok_kwargs={"mode": "space", "joiner_annotate": True})
    t = warm(pre=setup.pieces_pre, transforms=["onmt_tokenize", "xl_position"], src_subword_model=setup.bpe, **joiner)
    ex = t.apply({"src": list(setup.piece_sents[0]), "tgt": None})
    assert sorted(ex["xl_pos"]) == list(range(len(setup.piece_sents[0])))
    other = tmp_path / "other.bpe"
    other.write_bytes(open(setup.bpe, "rb").read() + b"\n")
    with pytest.raises(XLInputError) as info:
        warm(pre=setup.pieces_pre, transforms=["onmt_tokenize", "xl_position"], src_subword_model=str(other), **joiner)
    msg = str(info.value)
    assert f"model src.bpe, sha256 {file_sha256(setup.bpe)[:12]}" in msg
    assert f"model other.bpe, sha256 {file_sha256(str(other))[:12]}" in msg


def test_transform_content_check_on_pre_segmented_files(setup):
    t = warm(pre=setup.words_pre, transforms=["xl_position"])
    for k in range(3):
        t.apply({"src": list(setup.corpus.src[k]), "tgt": None, "cid": "corpus_1", "cid_line_number": k})
    t = warm(pre=setup.words_pre, transforms=["xl_position"])
    with pytest.raises(XLInputError) as info:
        t.apply({"src": list(setup.piece_sents[0]), "tgt": None, "cid": "corpus_1", "cid_line_number": 0})
    msg = str(info.value)
    assert msg.startswith(f"{setup.words_pre}: segmentation mismatch: this preorderer was trained on words, but the "
                          "source tokens of corpus_1 (up to line 1) reaching xl_position are sub-words (joiner ￭")
    t = warm(pre=setup.pieces_pre, transforms=["xl_position"])
    with pytest.raises(XLInputError, match="are words"):
        for k in range(300):
            t.apply({"src": list(setup.corpus.src[k]), "tgt": None, "cid": "corpus_1", "cid_line_number": k})
    # once the sample is checked, the transform stops looking
    t = warm(pre=setup.words_pre, transforms=["xl_position"])
    for k in range(300):
        t.apply({"src": list(setup.corpus.src[k]), "tgt": None})
    assert t._seg_sample is not None  # 3,129 tokens: still sampling
    t._seg_sample.limit = 10
    t.apply({"src": list(setup.corpus.src[0]), "tgt": None})
    assert t._seg_sample is None


def test_xl_input_errors_survive_pickling():
    """Raised in a data worker (onmt_build_vocab's pool), the error must unpickle in the parent."""
    err = pickle.loads(pickle.dumps(XLInputError("f.xlp", 3, "segmentation mismatch")))
    assert str(err) == "f.xlp, line 3: segmentation mismatch" and (err.path, err.line) == ("f.xlp", 3)


def test_pipeline_segmentation_from_opennmt_options(tmp_path):
    m = tmp_path / "m"
    m.write_bytes(b"x")
    o = lambda **kw: Namespace(**{"src_subword_model": str(m), "src_subword_type": "none",  # noqa: E731
                                  "src_onmttok_kwargs": "{'mode': 'none'}", **kw})
    assert transform_segmentation("onmt_tokenize", o()) is None  # nothing split
    assert transform_segmentation("onmt_tokenize", o(src_onmttok_kwargs="{'mode': 'conservative'}")) is None
    kwargs = "{'mode': 'aggressive', 'joiner_annotate': True, 'joiner': '##'}"
    tok = transform_segmentation("onmt_tokenize", o(src_onmttok_kwargs=kwargs))
    assert (tok.marker, tok.model) == ("joiner ##", None)
    assert transform_segmentation("onmt_tokenize", o(src_subword_type="bpe")).marker == "none"
    assert transform_segmentation("onmt_tokenize", o(src_subword_type="sentencepiece",
                                                     src_onmttok_kwargs="{'mode': 'space'}")).marker == "none"
    assert transform_segmentation("filtertoolong", o()) is None
    opts = o(data={"a": {"transforms": ["bpe", "xl_position"]}, "b": {"transforms": ["xl_position"]},
                   "c": {"transforms": ["sentencepiece"]}})
    [(where, scheme)] = pipeline_segmentations(opts, "xl_position")
    assert where == "corpus 'a' (bpe -> xl_position)" and scheme.marker == "separator @@"
    assert scheme.sha256 == file_sha256(str(m))


def test_onmt_build_vocab_fails_at_start_up_on_another_segmentation(setup, tmp_path):
    """Through the stock command: a words preorderer behind onmt_tokenize with the BPE model."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        f"save_data: {tmp_path}/run\nsrc_vocab: {tmp_path}/v.src\ntgt_vocab: {tmp_path}/v.tgt\noverwrite: true\n"
        f"data:\n  corpus_1: {{path_src: {setup.words}, path_tgt: {setup.tgt},\n"
        "             transforms: [onmt_tokenize, xl_position]}\n"
        f"src_subword_type: bpe\nsrc_subword_model: {setup.bpe}\n"
        "src_onmttok_kwargs: \"{'mode': 'space', 'joiner_annotate': True}\"\n"
        f"xl_preorderer: {setup.words_pre}\n"
    )
    proc = subprocess.run([stock_cli("onmt_build_vocab"), "-config", str(cfg), "-n_sample", "20"],
                          capture_output=True, text=True, env=run_env(), timeout=300)
    assert proc.returncode != 0
    assert (f"{setup.words_pre}: segmentation mismatch: this preorderer was trained on words, but corpus "
            "'corpus_1' (onmt_tokenize -> xl_position) feeds xl_position sub-words (onmt_tokenize model src.bpe"
            ) in proc.stderr
    # the same with the sub-word preorderer builds
    cfg.write_text(cfg.read_text().replace(setup.words_pre, setup.pieces_pre))
    proc = subprocess.run([stock_cli("onmt_build_vocab"), "-config", str(cfg), "-n_sample", "20"],
                          capture_output=True, text=True, env=run_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
