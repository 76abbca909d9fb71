"""tools/study/words_unseen.py and the share it prints (reports/OWN_DATA_korean.md)."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("words_unseen", REPO / "tools" / "study" / "words_unseen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_unseen_share_counts_held_out_tokens_that_training_lacks():
    from onmt_xl.experiments.tokenization import Tokenization, unseen_share

    words = Tokenization("words").tokenizer()
    assert unseen_share(words, ["the cat sat.", "a dog ran"], ["the dog sat", "a bird."]) == 1 / 6  # bird of 6
    assert unseen_share(words, ["x"], []) == 0.0


def test_the_tool_prints_one_row_per_side_and_size(tmp_path, capsys):
    def word(prefix, k):  # letters only: pyonmttok's aggressive mode splits digits off letters
        return prefix + "".join(chr(ord("a") + int(d)) for d in str(k))

    train = [f"{word('w', k % 7)} {word('w', k % 5)} {word('v', k)}" for k in range(40)]  # a new word a line
    other = [f"{word('o', k % 3)} {word('o', k % 4)}" for k in range(40)]
    valid = [f"{word('w', 1)} {word('w', 2)} {word('v', 3)}",  # v3 is in the first 10 lines, v99, v100 in none
             f"{word('w', 3)} {word('v', 99)} {word('v', 100)}"]
    for name, lines in (("train", train), ("other", other), ("valid", valid)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    side = f"t:{tmp_path / 'train'}:{tmp_path / 'valid'}:{tmp_path / 'other'}"
    assert _tool().main(["--side", side, "--pairs", "10,40,41"]) == 0
    out, err = capsys.readouterr()
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| t |")]
    assert [(r[1], r[3]) for r in rows] == [("10", "33.3%"), ("40", "33.3%")]  # v99, v100 of 6; 41 > 40 lines
    assert "has 40 lines, fewer than 41" in err
