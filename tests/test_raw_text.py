"""Raw text in, detokenized translations and sacrebleu's standard scores out (issue 77): ``onmt-xl pipeline`` on a
small raw corpus through OpenNMT-py and Eole, the sub-word rule, and the note on already tokenized input."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_env
from tests.helpers import stock_cli
from tests.test_server import free_port, post, running_server

#: a space before closing punctuation: tokenized text, never in the raw references written below
SPACE_BEFORE_PUNCT = re.compile(r"\s[.,?!]")


def raw(tokens, rng: random.Random, question: bool) -> str:
    """A synthetic sentence as raw text: capitalised, a comma attached after a word now and then, a full stop or
    a question mark attached at the end."""
    words = [w for w in tokens if w not in (".", "\u3002")]  # the synthetic full stops (".", "。")
    words[0] = words[0].capitalize()
    if len(words) > 4 and rng.random() < 0.5:
        k = rng.randrange(1, len(words) - 2)
        words[k] += ","
    return " ".join(words) + ("?" if question else ".")


def write_raw_corpus(out: Path, sizes=(("train", 600), ("valid", 40), ("test", 40))) -> dict:
    """Raw parallel files (the synthetic SVO -> SOV corpus with punctuation attached to words)."""
    from onmt_xl.core.data import synthetic

    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, (split, n) in enumerate(sizes):
        corpus = synthetic.generate(n, seed=7 + 1000 * i)
        rng = random.Random(i)
        src, tgt = [], []
        for s, t in zip(corpus.src, corpus.tgt):
            q = rng.random() < 0.3
            src.append(raw(s, rng, q))
            tgt.append(raw(t, rng, q))
        for side, lines in (("src", src), ("tgt", tgt)):
            paths[f"{split}_{side}"] = out / f"{split}.{side}"
            paths[f"{split}_{side}"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def run_pipeline(files: dict, wd: Path, *extra: str) -> str:
    cmd = [sys.executable, "-m", "onmt_xl.experiments", "pipeline", "--workdir", str(wd),
           "--train-src", files["train_src"], "--train-tgt", files["train_tgt"],
           "--valid-src", files["valid_src"], "--valid-tgt", files["valid_tgt"],
           "--test-src", files["test_src"], "--test-ref", files["test_tgt"],
           "--preorder-iterations", "2", "--beam-size", "1", *(extra or ("--train-steps", "6"))]
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def pipeline(tmp_path: Path, *extra: str):
    files = write_raw_corpus(tmp_path / "corpus")
    wd = tmp_path / "run"
    return files, wd, run_pipeline(files, wd, "--train-steps", "6", *extra)


def check_scores(result: dict, hyp: list, ref: list, stdout: str) -> None:
    """The summary's and results.json's scores are sacrebleu's standard ones of the detokenized output (``hyp``:
    combination's) against the raw references, with their signatures; tokenized BLEU only as a labelled extra."""
    from sacrebleu.metrics import BLEU, CHRF

    test = result["jobs"]["combination"]["variants"]["test"]
    assert test["bleu"] == pytest.approx(BLEU().corpus_score(hyp, [ref]).score)
    assert test["chrf"] == pytest.approx(CHRF().corpus_score(hyp, [ref]).score)
    assert f"combination  BLEU {test['bleu']:6.2f}  chrF {test['chrf']:6.2f}  (tokenized BLEU" in stdout
    assert test["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert "bleu_tokenized" in test and "p_bootstrap" in test
    assert result["scores"]["text"].startswith("detokenized output against the raw references")
    assert f"BLEU {test['bleu_signature']}" in stdout and "(tokenized BLEU" in stdout
    assert "scores: sacrebleu on detokenized output against the raw references" in stdout


def test_pipeline_raw_text_opennmt(tmp_path):
    files, wd, stdout = pipeline(tmp_path)
    assert "tokenization: pyonmttok aggressive, joiner-annotated (onmt_tokenize), words" in stdout
    assert "looks tokenized" not in stdout
    ref = files["test_tgt"].read_text(encoding="utf-8").splitlines()
    hyp = (wd / "jobs" / "combination" / "hyp.test").read_text(encoding="utf-8").splitlines()
    assert len(hyp) == len(ref)
    # the models saw tokens (punctuation split off, joiners), the output is detokenized: no " ." where the raw
    # references have none, and the joiner never shows
    assert any("\uffed" in l for l in (wd / "tok" / "train.src").read_text(encoding="utf-8").splitlines())
    assert not SPACE_BEFORE_PUNCT.search("\n".join(ref))
    punct = [l for l in hyp if re.search(r"[.,?!]", l)]
    assert punct and not any(SPACE_BEFORE_PUNCT.search(l) or "\uffed" in l for l in hyp)
    result = json.loads((wd / "results.json").read_text())
    check_scores(result, hyp, ref, stdout)
    # the preorderer records the segmentation xl_position gets from onmt_tokenize (the guard compares them)
    from onmt_xl.experiments.tokenization import Tokenization
    from onmt_xl.core.reorder.preorderer import Preorderer

    assert Preorderer.load(str(wd / "preorderer.xlp")).segmentation == Tokenization("words").scheme()
    # onmt_translate with the saved configuration on new raw text: detokenized output
    cfg = wd / "jobs" / "combination" / "translate.yaml"
    assert str(cfg) in stdout  # the summary says how to translate new text
    new = tmp_path / "new.txt"
    new.write_text("\n".join(files["valid_src"].read_text(encoding="utf-8").splitlines()[:8]) + "\n", encoding="utf-8")
    out = subprocess.run(["onmt_translate", "-config", str(cfg), "-src", str(new), "-output", str(tmp_path / "new.out")],
                         capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stderr[-3000:]
    lines = (tmp_path / "new.out").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 8 and not any(SPACE_BEFORE_PUNCT.search(l) or "\uffed" in l for l in lines)
    # the served model (the printed onmt_server command): raw text in, the same detokenized lines out
    serve = wd / "jobs" / "combination" / "serve.json"
    assert f"--model_config {serve}" in stdout
    port = free_port()
    root = f"http://127.0.0.1:{port}/translator"
    argv = [stock_cli("onmt_server"), "--ip", "127.0.0.1", "--port", port, "--url_root", "/translator",
            "--model_config", serve]
    raw_lines = new.read_text(encoding="utf-8").splitlines()
    with running_server(argv, tmp_path / "server.log", f"{root}/health", tmp_path):
        status, out = post(f"{root}/translate", [{"src": line, "id": 100} for line in raw_lines])
    assert status == 200 and [r["tgt"] for r in out[0]] == lines
    # written once: by the test translation (before hyp.test), not again at the run's end; a run that translates
    # nothing writes them at its end, the same
    hyp_time = (wd / "jobs" / "combination" / "hyp.test").stat().st_mtime_ns
    assert cfg.stat().st_mtime_ns <= hyp_time and serve.stat().st_mtime_ns <= hyp_time
    written = {path: path.read_text(encoding="utf-8") for path in (cfg, serve)}
    for path in written:
        path.unlink()
    assert "onmt_translate combination [test]" not in run_pipeline(files, wd, "--train-steps", "6")
    assert (wd / "jobs" / "combination" / "hyp.test").stat().st_mtime_ns == hyp_time  # translated nothing
    assert {path: path.read_text(encoding="utf-8") for path in written} == written
    # more steps on the finished run resume each job from its checkpoint (tokenization is part of its configuration)
    again = run_pipeline(files, wd, "--train-steps", "8")
    assert "baseline: extending from 6 to 8 steps, from its step-6 checkpoint" in again


@pytest.mark.needs_eole
def test_pipeline_raw_text_eole(tmp_path):
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    # 40 steps: Eole's tiny model says nothing before (empty lines), here it ends sentences with a full stop
    files, wd, stdout = pipeline(tmp_path, "--framework", "eole", "--train-steps", "40")
    ref = files["test_tgt"].read_text(encoding="utf-8").splitlines()
    hyp = (wd / "eole" / "hyp" / "combination.test").read_text(encoding="utf-8").splitlines()
    assert len(hyp) == len(ref) and not any(SPACE_BEFORE_PUNCT.search(l) or "\uffed" in l for l in hyp)
    assert any(re.search(r"\w[.?]$", l) for l in hyp)  # punctuation attached again by onmt_tokenize's apply_reverse
    assert f"eole predict -model_path {wd / 'eole' / 'models' / 'combination'} -src new.txt" in stdout
    saved = json.loads((wd / "eole" / "models" / "combination" / "config.json").read_text())
    assert "onmt_tokenize" in saved["transforms_configs"]  # eole predict takes raw text with the model alone
    check_scores(json.loads((wd / "eole" / "results.json").read_text()), hyp, ref, stdout)
    # the served models (the printed eole serve command): raw text in, what eole predict wrote out
    serve = wd / "eole" / "serve.yaml"
    assert f"eole serve -c {serve} --host 127.0.0.1 --port 5000" in stdout
    port = free_port()
    argv = [sys.executable, "-m", "onmt_xl.eole", "serve", "-c", serve, "--host", "127.0.0.1", "--port", port]
    src = files["test_src"].read_text(encoding="utf-8").splitlines()[:4]
    with running_server(argv, tmp_path / "serve.log", f"http://127.0.0.1:{port}/health", tmp_path):
        status, out = post(f"http://127.0.0.1:{port}/infer", {"model": "combination", "inputs": src, "beam_size": 1})
    assert status == 200 and [p[0] for p in out["predictions"]] == hyp[:4]


# --- the rules ----------------------------------------------------------------------------------------


def test_subword_rule():
    from onmt_xl.experiments.tokenization import WORD_LEVEL_BELOW, Tokenization, bpe_merges, choose

    assert choose(WORD_LEVEL_BELOW - 1) == Tokenization("words")
    assert choose(WORD_LEVEL_BELOW) == Tokenization("bpe", 8000)
    assert [bpe_merges(n) for n in (29_000, 99_999, 100_000, 999_999, 1_000_000, 5_000_000)] == \
        [8000, 8000, 16000, 16000, 32000, 32000]
    assert choose(50, "bpe") == Tokenization("bpe", 8000) and choose(50, "bpe", 300).merges == 300
    assert choose(10**6, "words") == Tokenization("words") and not choose(10**6, "none").active
    with pytest.raises(ValueError, match="--tokenize"):
        choose(10, "spm")


def test_bpe_tokenization_matches_onmt_tokenize_segmentation(tmp_path):
    """The BPE model is joint, the tokens carry joiners, and the scheme the preorderer records is the one
    xl_position's guard reads off onmt_tokenize's options (model hash included)."""
    from onmt_xl.experiments.tokenization import Tokenization, learn_bpe, tokenize_lines
    from onmt_xl.core.segmentation import tokenizer_segmentation

    files = write_raw_corpus(tmp_path, (("train", 200),))
    model = tmp_path / "bpe.model"
    learn_bpe([files["train_src"], files["train_tgt"]], 100, model)
    tok = Tokenization("bpe", 100, str(model))
    opts = tok.transform_options()
    assert opts["src_subword_model"] == opts["tgt_subword_model"] == str(model)
    scheme = tokenizer_segmentation("onmt_tokenize", opts["src_subword_model"], opts["src_subword_type"],
                                    opts["src_onmttok_kwargs"])
    assert scheme == tok.scheme() and scheme.sha256 and scheme.marker == "joiner \uffed"
    line = files["train_src"].read_text(encoding="utf-8").splitlines()[0]
    (pieces,) = tokenize_lines(tok.tokenizer(), [line])
    assert tok.tokenizer().detokenize(pieces.split()) == line


def test_the_tokenization_record_names_the_bpe_model_beside_it(tmp_path):
    """``tok/tokenization.json`` names its BPE model by file name, and a record written elsewhere (a work directory
    moved or copied from another machine, an absolute path in it) reads as the model beside it."""
    from onmt_xl.experiments.tokenization import Tokenization, read_record, write_record

    record = tmp_path / "tok" / "tokenization.json"
    record.parent.mkdir()
    write_record(record, Tokenization("bpe", 100, str(tmp_path / "tok" / "bpe.model")))
    assert json.loads(record.read_text(encoding="utf-8"))["model"] == "bpe.model"
    assert read_record(record) == Tokenization("bpe", 100, str(tmp_path / "tok" / "bpe.model"))
    record.write_text(json.dumps({"kind": "bpe", "merges": 100, "model": "/old/machine/run/tok/bpe.model"}))
    assert read_record(record).model == str(tmp_path / "tok" / "bpe.model")
    write_record(record, Tokenization("words"))
    assert read_record(record) == Tokenization("words") and read_record(tmp_path / "none.json") is None


def test_looks_tokenized():
    from onmt_xl.experiments.tokenization import looks_tokenized

    raw_text = ["Hello, world. How are you?", "I am fine, thanks!"] * 10
    tokenized = ["Hello , world . How are you ?", "I am fine , thanks !"] * 10
    assert looks_tokenized(raw_text) is None
    assert "stand apart" in looks_tokenized(tokenized)
    assert "Moses escapes" in looks_tokenized(["it &apos;s"] * 5)
    assert looks_tokenized(["a ."] * 3) is None  # too few marks to tell


def test_tokenize_none_keeps_the_configurations_and_words_put_onmt_tokenize_first():
    from onmt_xl.experiments.configs import config
    from onmt_xl.experiments.eole_configs import eole_config
    from onmt_xl.experiments.tokenization import Tokenization

    assert config("combination", "W", Tokenization("none").transform_options()) == config("combination", "W")
    cfg = config("combination", "W", Tokenization("words").transform_options())
    assert [cfg["data"][s]["transforms"] for s in ("train", "valid")] == [["onmt_tokenize", "xl_position"]] * 2
    assert cfg["src_onmttok_kwargs"] == cfg["tgt_onmttok_kwargs"] == "{'mode': 'aggressive', 'joiner_annotate': True}"
    eole = eole_config("combination", "W", Tokenization("words").transform_options())["transforms_configs"]
    assert eole["onmt_tokenize"]["src_onmttok_kwargs"] == {"mode": "aggressive", "joiner_annotate": True}
    assert "onmt_tokenize" not in eole_config("combination", "W").get("transforms_configs", {})


def test_pipeline_notes_tokenized_input_in_one_line(tmp_path, capsys):
    from onmt_xl.experiments.demo import _note_tokenized
    from onmt_xl.experiments.stages import Corpus

    raw_file, tok_file = tmp_path / "raw.txt", tmp_path / "tok.txt"
    raw_file.write_text("Hello, world. How are you?\n" * 20, encoding="utf-8")
    tok_file.write_text("Hello , world . How are you ?\n" * 20, encoding="utf-8")
    corpus = lambda src: Corpus(str(src), str(raw_file), str(raw_file), str(raw_file))  # noqa: E731
    _note_tokenized(corpus(raw_file), "auto")
    assert capsys.readouterr().out == ""
    _note_tokenized(corpus(tok_file), "none")  # tokenized on purpose: nothing to say
    assert capsys.readouterr().out == ""
    _note_tokenized(corpus(tok_file), "auto")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and f"note: {tok_file} looks tokenized already" in out[0] and "--tokenize none" in out[0]


def test_empty_lines_are_named_before_any_work(tmp_path, capsys):
    from onmt_xl.experiments.stages import Corpus

    def corpus(train_src, train_tgt, test_src=("a", "b")):
        paths = {}
        for name, lines in (("train.en", train_src), ("train.de", train_tgt), ("test.en", test_src),
                            ("test.de", ["x"] * len(test_src))):
            paths[name] = tmp_path / name
            paths[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return Corpus(*(str(paths[n]) for n in ("train.en", "train.de", "test.en", "test.de")))

    corpus(["a b", "c"], ["x", "y z"]).check_parallel()
    assert capsys.readouterr().out == ""
    corpus(["a b", " ", "c"], ["x", "y", "z"]).check_parallel()  # whitespace only is empty too
    out = capsys.readouterr().out.splitlines()
    assert out == [f"[onmt-xl] warning: {tmp_path / 'train.en'}, line 2: empty source line; training skips the pair"]
    corpus(["a", "b", "", "d"], ["w", "", "", "z"]).check_parallel()  # the first names its file, the count all
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and f"{tmp_path / 'train.de'}, line 2: empty target line" in out[0]
    assert out[0].endswith("2 of 4 pairs"), out
    # translated and scored splits: an empty source line is translated as an empty line in place
    # (tests/test_empty_sources.py), said once a split
    corpus(["a"], ["x"], test_src=["a", "\t", "b", ""]).check_parallel()
    assert capsys.readouterr().out.splitlines() == [
        f"[onmt-xl] warning: {tmp_path / 'test.en'}, line 2: empty source line and 1 more (2 of 4 test pairs); each "
        "is translated as an empty line at its place and scored against its reference"]
    valid = corpus(["a"], ["x"])
    (tmp_path / "valid.en").write_text("a\n\n", encoding="utf-8")
    (tmp_path / "valid.de").write_text("x\ny\n", encoding="utf-8")
    valid.valid_src, valid.valid_tgt = str(tmp_path / "valid.en"), str(tmp_path / "valid.de")
    valid.check_parallel()
    assert capsys.readouterr().out.splitlines() == [
        f"[onmt-xl] warning: {tmp_path / 'valid.en'}, line 2: empty source line; it is translated as an empty line "
        "at its place and scored against its target"]


# --- text written without spaces between words (Japanese, Chinese, Thai, ...) ---------------------------------

#: hiragana and katakana the synthetic words are spelt in
KANA = [chr(c) for c in range(0x3042, 0x3094)] + [chr(c) for c in range(0x30A2, 0x30F4)]


def kana(word: str) -> str:
    """A synthetic word spelt in kana, the same word always the same way."""
    spelt = "".join(KANA[(ord(a) * 31 + ord(b)) % len(KANA)] for a, b in zip(word, word[1:] + "x"))
    return spelt[:max(1, len(word) // 2)]


def write_japanese_target(files: dict) -> dict:
    """The raw corpus of :func:`write_raw_corpus` with its targets in kana, written without spaces (``。`` ends a
    sentence, as in Japanese)."""
    for key in [k for k in files if k.endswith("_tgt")]:
        lines = files[key].read_text(encoding="utf-8").splitlines()
        files[key].write_text("\n".join("".join(kana(w.strip(".,?!").lower()) for w in line.split()) + "。"
                                        for line in lines) + "\n", encoding="utf-8")
    return files


def test_written_language_reads_the_script_and_the_spaces():
    from onmt_xl.experiments.tokenization import bleu_tokenizer, written_language

    assert written_language(["誰が一番に着くか私には分かりません。", "私はテニス部員です。"]) == "Japanese"
    assert written_language(["我昨天在北京大学学习了中文。"]) == "Chinese"
    assert written_language(["ภาษาไทยไม่มีช่องว่างระหว่างคำ"]) == "Thai"
    assert written_language(["私 は テニス 部員 です 。"]) is None  # segmented into words already
    assert written_language(["I'm in the tennis club (テニス部)."]) is None  # mostly Latin letters
    assert written_language(["", "123 ..."]) is None  # no letters
    mixed = ["I'm in the tennis club."] * 2000 + ["私はテニス部員です。"] * 10000
    assert written_language(mixed) is None and written_language(mixed, limit=12000) == "Japanese"  # the first lines
    assert [bleu_tokenizer(x) for x in ("Japanese", "Chinese", "Thai", None)] == ["ja-mecab", "zh", "char", "13a"]


def test_korean_is_read_from_its_hangul_spaced_or_not_and_scored_on_ko_mecab_tokens():
    from sacrebleu.metrics import BLEU

    from onmt_xl.experiments.tokenization import bleu_tokenizer, written_language

    assert written_language(["한국어는 띄어쓰기를 합니다.", "저는 학생입니다."]) == "Korean"
    assert written_language(["한국어는띄어쓰기를합니다."]) == "Korean"
    assert written_language(["I study Korean (한국어) at school."]) is None  # mostly Latin letters
    assert written_language(["誰が一番に着くか私には分かりません。"]) == "Japanese"
    assert bleu_tokenizer("Korean") == "ko-mecab"
    # ko-mecab splits particles and endings off: a sentence that differs in them only is not all wrong words
    ref, hyp = ["저는 학생입니다."], ["저는 학생이에요."]
    assert BLEU(tokenize="ko-mecab").corpus_score(hyp, [ref]).score > BLEU().corpus_score(hyp, [ref]).score


def test_a_mecab_tokenizer_without_its_mecab_is_refused_naming_the_extra(monkeypatch):
    from sacrebleu.tokenizers import tokenizer_ja_mecab, tokenizer_ko_mecab

    from onmt_xl.core.errors import XLUsageError
    from onmt_xl.experiments.tokenization import check_bleu_tokenizer

    for module in (tokenizer_ja_mecab, tokenizer_ko_mecab):  # sacrebleu's state where the import failed
        monkeypatch.setattr(module, "MeCab", None)
    for name, extra in (("ko-mecab", "ko"), ("ja-mecab", "ja")):
        with pytest.raises(XLUsageError, match=rf"sacrebleu's {name} tokenizer does not load here: "
                           rf"pip install 'sacrebleu\[{extra}\]'"):
            check_bleu_tokenizer(name)
    check_bleu_tokenizer("13a")


def write_korean_target(files: dict) -> dict:
    """The raw corpus of :func:`write_raw_corpus` with its targets in Hangul syllables, with spaces between words."""
    for key in [k for k in files if k.endswith("_tgt")]:
        lines = files[key].read_text(encoding="utf-8").splitlines()
        files[key].write_text("\n".join(" ".join("".join(chr(0xAC00 + (ord(c) * 37) % 11172) for c in
                                                          w.strip(".,?!").lower()) for w in line.split()) + "."
                                        for line in lines) + "\n", encoding="utf-8")
    return files


def test_an_unspaced_side_gets_sub_words_at_any_size_and_tokenize_none_keeps_13a():
    from onmt_xl.experiments.tokenization import WORD_LEVEL_BELOW, Tokenization, choose

    assert choose(50, sub_words=True) == Tokenization("bpe", 8000)
    assert choose(WORD_LEVEL_BELOW - 1, "words", sub_words=True) == Tokenization("words")  # asked for: a note
    assert choose(50, sub_words=True, bleu_tokenize="ja-mecab").bleu_tokenize == "ja-mecab"
    assert choose(50, "none", bleu_tokenize="ja-mecab") == Tokenization("none")


def test_scores_use_the_recorded_sacrebleu_tokenizer(tmp_path):
    """BLEU of a Japanese target on ja-mecab's tokens (on 13a's, a sentence without spaces is one token), in the
    score, its signature, the paired bootstrap and the sign test; a record written before the tokenizer was
    recorded reads as 13a, what its scores were computed with."""
    from sacrebleu.metrics import BLEU

    from onmt_xl.experiments.scoring import paired_bootstrap, sign_test, text_scores
    from onmt_xl.experiments.tokenization import Tokenization, read_record, write_record

    ref = ["彼は昨日東京へ行った。", "私はテニス部員です。", "この事実を心に留めておいて下さい。"]
    hyp = ["彼は昨日東京に行った。", "私はテニス部員です。", "この事実を心に留めて下さい。"]
    worse = ["彼は東京に行った。", "私はテニスです。", "この事実を留めて下さい。"]
    ja = Tokenization("words", bleu_tokenize="ja-mecab")
    scores = text_scores(hyp, ref, ja)
    assert scores["bleu"] == pytest.approx(BLEU(tokenize="ja-mecab").corpus_score(hyp, [ref]).score)
    assert "|tok:ja-mecab-" in scores["bleu_signature"] and scores["bleu"] > 50
    assert text_scores(hyp, ref, Tokenization("words"))["bleu"] < 40  # 13a: whole sentences as tokens
    assert sign_test(hyp, worse, ref, tokenize="ja-mecab").better == 3
    assert sign_test(hyp, worse, ref).better < 3  # 13a cannot tell two of them apart
    assert paired_bootstrap({"s": hyp}, worse, ref, n_samples=50, tokenize="ja-mecab")["s"] < 0.5
    record = tmp_path / "tokenization.json"
    write_record(record, ja)
    assert read_record(record) == ja
    record.write_text(json.dumps({"kind": "words", "merges": 0, "model": None}))
    assert read_record(record).bleu_tokenize == "13a"


def _runner(tmp_path: Path, files: dict, bleu: str = "auto", tokenize: str = "auto"):
    from onmt_xl.experiments.runner import Corpus, Runner

    corpus = Corpus(str(files["train_src"]), str(files["train_tgt"]), str(files["test_src"]), str(files["test_tgt"]),
                    valid_src=str(files["valid_src"]), valid_tgt=str(files["valid_tgt"]))
    return Runner(corpus, str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False, tokenize=tokenize,
                  bleu_tokenize=bleu)


def test_a_japanese_target_is_tokenized_into_sub_words_and_scored_on_ja_mecab_tokens(tmp_path, capfd):
    from onmt_xl.core.errors import XLUsageError
    from onmt_xl.experiments.tokenization import read_record

    files = write_japanese_target(write_raw_corpus(tmp_path / "corpus", (("train", 300), ("valid", 20), ("test", 20))))
    runner = _runner(tmp_path, files)
    runner.stage_data()
    runner.tokenize("auto")
    out, err = capfd.readouterr()
    assert re.search(r"  [\d,]+ merges learned: no pair of symbols is seen twice", out)  # 8,000 asked for
    assert "no pair has frequency" not in err  # pyonmttok's own line, left out
    assert f"{files['train_tgt']} is Japanese, written without spaces between words: sub-words (BPE) for it" in out
    assert "scores: sacrebleu's BLEU on its ja-mecab tokens (the target is Japanese" in out
    assert "train.src is" not in out  # the English side says nothing
    record = read_record(tmp_path / "wd" / "tok" / "tokenization.json")
    assert (record.kind, record.bleu_tokenize) == ("bpe", "ja-mecab")  # 300 pairs: BPE all the same
    # the same run again reads the record; another --bleu-tokenize is refused, nothing rewritten
    _runner(tmp_path, files).tokenize("auto")
    with pytest.raises(XLUsageError, match="scores BLEU on sacrebleu's ja-mecab tokens, this run asks for char: "
                       "pass --bleu-tokenize ja-mecab"):
        _runner(tmp_path, files, bleu="char").tokenize("auto")
    _runner(tmp_path, files, bleu="ja-mecab").tokenize("auto")  # the recorded one, named
    assert read_record(tmp_path / "wd" / "tok" / "tokenization.json") == record
    # words asked for: a note that the target has no words to keep
    words = _runner(tmp_path / "w", files, tokenize="words")
    words.stage_data()
    words.tokenize("words")
    assert "note: " + str(files["train_tgt"]) + " is Japanese, written without spaces between words: with " \
        "--tokenize words each run" in capfd.readouterr().out
    with pytest.raises(XLUsageError, match="--bleu-tokenize zh: with --tokenize none"):
        none = _runner(tmp_path / "n", files, bleu="zh", tokenize="none")
        none.stage_data()
        none.tokenize("none")


def test_a_korean_target_gets_sub_words_and_is_scored_on_ko_mecab_tokens(tmp_path, capfd):
    from onmt_xl.experiments.tokenization import read_record

    files = write_korean_target(write_raw_corpus(tmp_path / "corpus", (("train", 300), ("valid", 20), ("test", 20))))
    runner = _runner(tmp_path, files)
    runner.stage_data()
    runner.tokenize("auto")
    out = capfd.readouterr().out
    assert f"{files['train_tgt']} is Korean, its words carry their particles and endings: sub-words (BPE)" in out
    assert "scores: sacrebleu's BLEU on its ko-mecab tokens (the target is Korean" in out
    assert "note:" not in out and "train.src is" not in out
    record = read_record(tmp_path / "wd" / "tok" / "tokenization.json")
    assert (record.kind, record.bleu_tokenize) == ("bpe", "ko-mecab")  # 300 pairs: BPE all the same
    words = _runner(tmp_path / "w", files, tokenize="words")
    words.stage_data()
    words.tokenize("words")
    assert f"note: {files['train_tgt']} is Korean, its words carry their particles and endings: with --tokenize " \
        "words each such word is one token; --tokenize auto or bpe learns sub-words" in capfd.readouterr().out


def test_kept_words_that_validation_seldom_finds_in_training_get_a_note(tmp_path, capfd):
    """Below 10,000 pairs auto keeps words; a side of which more than a fifth of the validation words are unseen in
    training says so in one line (here the target's: a new word in every third position), the other side nothing."""
    from onmt_xl.experiments.tokenization import read_record, unseen_share

    files = write_raw_corpus(tmp_path / "corpus", (("train", 300), ("valid", 20), ("test", 20)))
    valid = files["valid_tgt"].read_text(encoding="utf-8").splitlines()
    files["valid_tgt"].write_text("\n".join(" ".join(f"novel{k}x{j}" if j % 3 == 0 else w
                                                     for j, w in enumerate(line.split()))
                                            for k, line in enumerate(valid)) + "\n", encoding="utf-8")
    runner = _runner(tmp_path, files)
    runner.stage_data()
    runner.tokenize("auto")
    out = capfd.readouterr().out
    share = unseen_share(read_record(tmp_path / "wd" / "tok" / "tokenization.json").tokenizer(),
                         files["train_tgt"].read_text(encoding="utf-8").splitlines(), [l for l in valid])
    assert share < 0.2  # as written, the target's validation words are known: the note is the new words'
    assert re.search(rf"note: [\d.]+% of the validation target's words are not in {re.escape(str(files['train_tgt']))} "
                     r"\(words are kept below 10,000 training pairs\); --tokenize bpe learns sub-words for them", out)
    assert "validation source's" not in out
    assert read_record(tmp_path / "wd" / "tok" / "tokenization.json").kind == "words"  # a note, not another rule


def test_pipeline_with_a_japanese_target_detokenizes_it_and_scores_it_on_ja_mecab(tmp_path):
    from sacrebleu.metrics import BLEU

    files = write_japanese_target(write_raw_corpus(tmp_path / "corpus"))
    wd = tmp_path / "run"
    stdout = run_pipeline(files, wd, "--max-steps", "200", "--if-monotone", "train")  # to the plateau, 2 checkpoints
    ref = files["test_tgt"].read_text(encoding="utf-8").splitlines()
    hyp = (wd / "jobs" / "combination" / "hyp.test").read_text(encoding="utf-8").splitlines()
    assert len(hyp) == len(ref) and not any("\uffed" in l for l in hyp)  # detokenized
    # the target's pieces detokenize to the raw lines, without spaces (the untrained model's output may have some)
    from onmt_xl.experiments.tokenization import read_record

    tokenizer = read_record(wd / "tok" / "tokenization.json").tokenizer()
    raw_tgt = files["train_tgt"].read_text(encoding="utf-8").splitlines()
    pieces = (wd / "tok" / "train.tgt").read_text(encoding="utf-8").splitlines()
    assert [tokenizer.detokenize(line.split()) for line in pieces] == raw_tgt
    assert sum(len(line.split()) for line in pieces) > 2 * len(pieces)  # sub-words, not one token a sentence
    test = json.loads((wd / "results.json").read_text())["jobs"]["combination"]["variants"]["test"]
    assert test["bleu"] == pytest.approx(BLEU(tokenize="ja-mecab").corpus_score(hyp, [ref]).score)
    assert "|tok:ja-mecab-" in test["bleu_signature"] and f"BLEU {test['bleu_signature']}" in stdout
    # the validation curve that decides the plateau is on the same tokens
    valid_ref = files["valid_tgt"].read_text(encoding="utf-8").splitlines()
    curve = [json.loads(line) for line in (wd / "jobs" / "combination" / "curve.jsonl").read_text().splitlines()]
    assert [row["step"] for row in curve] == [100, 200] and curve[-1]["bleu"] > 0  # 13a: 0 at every step
    for row in curve:
        valid_hyp = (wd / "jobs" / "combination" / f"hyp.valid.step{row['step']}").read_text(encoding="utf-8")
        assert row["bleu"] == pytest.approx(BLEU(tokenize="ja-mecab").corpus_score(valid_hyp.splitlines(),
                                                                                   [valid_ref]).score)


def test_a_byte_order_mark_and_crlf_line_ends_are_no_text(tmp_path):
    """A file saved with a byte-order mark and Windows line ends (Notepad's UTF-8) reads as the same lines without
    them, in the pipeline's raw text and in the commands on tokenized text; a U+FEFF inside a line stays."""
    from onmt_xl.core.align.eflomal_aligner import read_tokenized
    from onmt_xl.core.reorder.cli import read_tokens
    from onmt_xl.experiments.stock import read_lines

    path = tmp_path / "train.en"
    path.write_bytes("\ufeffThe cat sat .\r\nA dog\ufeff ran .\r\n".encode("utf-8"))
    assert read_lines(path) == ["The cat sat .", "A dog\ufeff ran ."]
    assert read_tokenized(str(path))[0] == ["The", "cat", "sat", "."]
    assert read_tokens(str(path))[0] == ["The", "cat", "sat", "."]
