"""A preorderer's vocabulary against the first source tokens (onmt_xl.core.reorder.coverage)."""

from onmt_xl.core.reorder.coverage import COVERAGE_TOKENS, MIN_COVERAGE, VocabCoverage, foreign_text
from onmt_xl.core.reorder.features import Vocab


def test_counts_whole_sentences_up_to_the_limit():
    cov = VocabCoverage({"a", "b"}, limit=5)
    cov.add(["a", "x", "b"])
    assert not cov.full and cov.share == 2 / 3
    assert foreign_text(cov, "p.xlp", "f", "xl_position") is None  # not enough tokens yet
    cov.add(["x", "x", "x"])
    assert cov.full and cov.tokens == 6 and cov.share == 2 / 6
    cov.add(["a"] * 10)  # past the limit: not counted
    assert cov.tokens == 6
    assert "knows only 33% of the first 6 source tokens of f" in foreign_text(cov, "p.xlp", "f", "xl_position")


def test_the_threshold_is_half():
    known = {"a"}
    for covered, warns in ((COVERAGE_TOKENS // 2, False), (COVERAGE_TOKENS // 2 - 1, True)):
        cov = VocabCoverage(known)
        cov.add(["a"] * covered + ["z"] * (COVERAGE_TOKENS - covered))
        assert (foreign_text(cov, "p.xlp", "f", "xl_position") is not None) == warns
    assert MIN_COVERAGE == 0.5


def test_on_the_shared_data_its_own_language_passes_the_other_warns(shared_data):
    """The vocabulary of a preorderer trained on 2,000 pairs (min_count 2, as preorder-train's default) of either
    side: its language's held-out text is covered well over the threshold, the other language's not at all."""
    def read(name):
        with open(shared_data / "enja" / name, encoding="utf-8") as f:
            return [line.split() for line in f]

    for side, other in (("en", "ja"), ("ja", "en")):
        known = set(Vocab.count(read(f"train.{side}")[:2000], 2))
        for text, warns in ((read(f"dev.{side}"), False), (read(f"dev.{other}"), True)):
            cov = VocabCoverage(known)
            for sent in text:
                cov.add(sent)
            assert cov.full and (cov.share < 0.1 if warns else cov.share > 0.9), (side, cov.share)
            assert (foreign_text(cov, "p.xlp", "dev", "xl_position") is not None) == warns
