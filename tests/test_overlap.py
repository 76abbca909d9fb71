"""Test and validation sources that are training sources verbatim (:func:`onmt_xl.experiments.stages.source_overlap`):
counted when the splits are staged, one warning a split, ``data/overlap.json``, and a note in the summary beside
the scores they inflate."""

from __future__ import annotations

import json

from onmt_xl.experiments.demo import summary
from onmt_xl.experiments.runner import Runner
from onmt_xl.experiments.scoring import run_records, text_scores
from onmt_xl.experiments.stages import Corpus, overlap_line, source_overlap, verbatim_sources


def test_verbatim_sources_compare_whitespace_normalised_text_and_skip_empty_lines():
    train = ["a  b c", "d e", "", "f"]
    assert verbatim_sources(train, [" a b  c ", "d e f", "", "  ", "f", "F"]) == [0, 4]
    assert verbatim_sources([], ["a"]) == []
    overlap = source_overlap(train, {"test": ("t.src", ["x", "f", "d e"]), "valid": ("v.src", ["x", "y"])})
    assert overlap == {"test": dict(verbatim=2, sentences=3, file="t.src", first_line=2, lines=[2, 3])}  # none: none


def test_the_warning_names_the_share_the_first_line_and_what_it_means():
    one = overlap_line("valid", dict(verbatim=1, sentences=30, file="v.src", first_line=8))
    assert one == ("1 of the 30 validation sources (3.3%) is a training source verbatim (whitespace-normalised; the "
                   "first: v.src, line 8): validation BLEU, which chooses the plateau and the checkpoints when "
                   "training to it (the default), can read higher than on new text")
    many = overlap_line("test", dict(verbatim=77, sentences=5000, file="t.src", first_line=1204))
    assert many.startswith("77 of the 5,000 test sources (1.5%) are training sources verbatim (whitespace-normalised; "
                           "the first: t.src, line 1,204): a model can recall their training translations")
    assert many.endswith("remove those pairs from the training files to score unseen sentences")


def write_corpus(d, train_src, test_src, valid_src):
    files = {}
    for name, lines in (("train.src", train_src), ("train.tgt", [f"t{i}" for i in range(len(train_src))]),
                        ("test.src", test_src), ("test.tgt", [f"r{i}" for i in range(len(test_src))]),
                        ("valid.src", valid_src), ("valid.tgt", [f"v{i}" for i in range(len(valid_src))])):
        files[name] = d / name
        files[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return Corpus(*(str(files[n]) for n in ("train.src", "train.tgt", "test.src", "test.tgt")),
                  valid_src=str(files["valid.src"]), valid_tgt=str(files["valid.tgt"]))


def staged(corpus, wd, capsys):
    """Stage ``corpus`` in ``wd``: the lines said on verbatim sources, and ``data/overlap.json``."""
    Runner(corpus, str(wd), [], preset="demo", train_steps=4, gpu=False).stage_data()
    out = [line for line in capsys.readouterr().out.splitlines() if "verbatim" in line]
    return out, json.loads((wd / "data" / "overlap.json").read_text())


def test_staging_records_the_overlap_and_warns_once_a_split(tmp_path, capsys):
    train = [f"w{i} x{i % 3}" for i in range(40)]
    corpus = write_corpus(tmp_path, train, ["new a", train[7], "new b", " " + train[2], "new c"], ["new d", "new e"])
    out, recorded = staged(corpus, tmp_path / "wd", capsys)
    assert out == [f"[onmt-xl] warning: 2 of the 5 test sources (40.0%) are training sources verbatim "
                   f"(whitespace-normalised; the first: {tmp_path / 'test.src'}, line 2): a model can recall their "
                   "training translations, so the test scores can read higher than on new text; remove those pairs "
                   "from the training files to score unseen sentences"]
    assert recorded == {"test": dict(verbatim=2, sentences=5, file=str(tmp_path / "test.src"), first_line=2,
                                     lines=[2, 4])}
    assert run_records(tmp_path / "wd")["overlap"] == recorded
    assert staged(corpus, tmp_path / "wd", capsys) == ([], recorded)  # staged already: nothing said again
    (tmp_path / "wd" / "data" / "overlap.json").unlink()  # staged by a version before the count: counted now
    assert staged(corpus, tmp_path / "wd", capsys) == (out, recorded)
    (tmp_path / "clean").mkdir()
    assert staged(write_corpus(tmp_path / "clean", train, ["new"], ["v"]), tmp_path / "wd2", capsys) == ([], {})


def test_test_sources_that_are_validation_sources_are_named(tmp_path, capsys):
    """The same file (or the same sentences) as validation and test pairs: the checkpoints are chosen on the test."""
    train = [f"w{i} x{i % 3}" for i in range(40)]
    dev = ["new a", "new b", "new c", "new d"]
    corpus = write_corpus(tmp_path, train, dev, dev[2:] + ["other"])
    out, recorded = staged(corpus, tmp_path / "wd", capsys)
    assert out == [f"[onmt-xl] warning: 2 of the 4 test sources (50.0%) are validation sources verbatim "
                   f"(whitespace-normalised; the first: {tmp_path / 'test.src'}, line 3): training to the plateau "
                   "(the default), the plateau and the checkpoints are chosen on them, so the test scores can read "
                   "higher than on new text; give validation pairs apart from the test pairs"]
    assert recorded == {"test_in_valid": dict(verbatim=2, sentences=4, file=str(tmp_path / "test.src"), first_line=3,
                                              lines=[3, 4])}
    res = {"jobs": {"baseline": {"variants": {"test": {"bleu": 1.0, "chrf": 2.0}}}}, "overlap": recorded}
    assert [line for line in summary(res).splitlines() if line.startswith("note:")] == [
        "note: " + out[0].split("warning: ", 1)[1]]


def test_bleu_on_the_unseen_sentences_leaves_the_seen_lines_out():
    from sacrebleu.metrics import BLEU

    ref = [f"the cat {i} sat on the mat ." for i in range(10)]
    hyp = [r if i % 3 else "a dog ran" for i, r in enumerate(ref)]
    scores = text_scores(hyp, ref, seen=[1, 4])
    kept = [n for n in range(10) if n not in (0, 3)]
    assert scores["bleu_unseen"] == BLEU().corpus_score([hyp[n] for n in kept], [[ref[n] for n in kept]]).score
    assert scores["unseen_sentences"] == 8 and scores["bleu"] < scores["bleu_unseen"]
    assert "bleu_unseen" not in text_scores(hyp, ref) and "bleu_unseen" not in text_scores(hyp[:1], ref[:1], seen=[1])


def test_the_summary_notes_the_test_overlap_beside_the_scores():
    def job(bleu, unseen=None):
        test = {"bleu": bleu, "chrf": 50.0, "p_bootstrap": 0.5}
        if unseen is not None:
            test.update(bleu_unseen=unseen, unseen_sentences=27)
        return {"variants": {"test": test}, "parameters": 10}

    res = {"jobs": {"baseline": job(30.0, 28.5), "combination": job(30.2, 28.25)},
           "overlap": {"test": dict(verbatim=3, sentences=30, file="t.src", first_line=5, lines=[5, 9, 20]),
                       "valid": dict(verbatim=1, sentences=30, file="v.src", first_line=8, lines=[8])}}
    lines = summary(res).splitlines()
    note = [n for n, line in enumerate(lines) if line.startswith("note: 3 of the 30 test sources (10.0%)")]
    helps = [n for n, line in enumerate(lines) if line.startswith("does it help?")]
    assert len(note) == 1 and helps and note[0] < helps[0]  # beside the scores, before the answer
    assert lines[note[0] + 1] == "  BLEU on the other 27 test sentences: baseline 28.50, combination 28.25"
    assert not any("validation sources" in line for line in lines)  # said when staging; the scores are the test's
    # --seeds: each system's mean over its runs
    res["jobs"].update(baseline_seed2=job(31.0, 29.5), combination_seed2=job(30.0, 28.75))
    res["seed_runs"] = {"baseline": {"runs": ["baseline", "baseline_seed2"], "seeds": [1234, 1235]},
                        "combination": {"runs": ["combination", "combination_seed2"], "seeds": [1234, 1235]}}
    assert ("  BLEU on the other 27 test sentences (the mean of each system's runs): baseline 29.00, combination "
            "28.50") in summary(res).splitlines()
    del res["overlap"]
    assert not any("verbatim" in line or "other 27" in line for line in summary(res).splitlines())
