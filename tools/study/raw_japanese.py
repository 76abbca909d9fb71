"""Raw Japanese, as a user brings it to ``onmt-xl pipeline``, made from the study's segmented corpus, and what
its scores and tokens look like (``reports/OWN_DATA_japanese.md``).

    python tools/study/raw_japanese.py corpus --data ../shared/data/enja --out runs/rawja --train 12000
    python tools/study/raw_japanese.py scores --archive reports/evidence_enja --ref ../shared/data/enja/dev.ja
    python tools/study/raw_japanese.py unseen --src runs/rawja/train.ja --tgt runs/rawja/train.en \
        --test runs/rawja/test.ja --pairs 5000

``corpus``: the first ``--train`` training pairs, the next 500 as validation pairs and ``dev.*`` as the test pairs,
the Japanese without the spaces between its words (:func:`unsegment`), the English detokenized by sacremoses
(``pip install sacremoses``; only here). ``scores``: each job's test translations in an English->Japanese archive
(``jobs/*/hyp.test.gz``) and the references, unsegmented, scored with sacrebleu's 13a (what the pipeline used on raw
text before it chose BLEU's tokenizer by the target's script) and ja-mecab (its choice now), beside the study's BLEU
on words; one Markdown row per job. ``unseen``: the share of the test source's tokens never seen in the first
``--pairs`` training pairs, with ``--tokenize words`` and with BPE, as ``onmt-xl pipeline`` tokenizes.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from onmt_xl.experiments.stock import read_lines, write_lines  # noqa: E402 - the checkout's, after REPO

#: a Latin letter or a digit: the spaces kept are those between two of them
_ALNUM = re.compile(r"[A-Za-z0-9]")


def unsegment(line: str) -> str:
    """``line``'s words joined without spaces, as Japanese is written (a space kept between Latin words)."""
    out = ""
    for word in line.split():
        if out and _ALNUM.match(word[:1]) and _ALNUM.match(out[-1:]):
            out += " "
        out += word
    return out


def corpus(args) -> int:
    try:
        from sacremoses import MosesDetokenizer
    except ImportError:
        print("raw_japanese.py corpus: pip install sacremoses (the English side's detokenizer)", file=sys.stderr)
        return 2
    english = MosesDetokenizer(lang="en")
    data, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train = {lang: read_lines(data / f"train.{lang}") for lang in ("ja", "en")}
    splits = {"train": {k: v[:args.train] for k, v in train.items()},
              "valid": {k: v[args.train:args.train + 500] for k, v in train.items()},
              "test": {lang: read_lines(data / f"dev.{lang}") for lang in ("ja", "en")}}
    for split, sides in splits.items():
        write_lines(out / f"{split}.ja", [unsegment(line) for line in sides["ja"]])
        write_lines(out / f"{split}.en", [english.detokenize(line.split()) for line in sides["en"]])
        print(f"{out / split}.ja, .en: {len(sides['ja']):,} pairs")
    return 0


def scores(args) -> int:
    from sacrebleu.metrics import BLEU, CHRF

    ref = read_lines(args.ref)
    raw_ref = [unsegment(line) for line in ref]
    jobs = sorted(Path(args.archive).glob("jobs/*/hyp.test.gz"))
    if not jobs:
        print(f"{args.archive}: no jobs/*/hyp.test.gz", file=sys.stderr)
        return 2
    print("| job | BLEU on words, 13a (the study's) | raw, 13a | raw, ja-mecab | chrF, raw |")
    print("|---|---:|---:|---:|---:|")
    for path in jobs:
        hyp = read_lines(path)
        if len(hyp) != len(ref):
            print(f"{path}: {len(hyp)} lines but {len(ref)} references", file=sys.stderr)
            return 2
        raw = [unsegment(line) for line in hyp]
        row = (BLEU().corpus_score(hyp, [ref]).score, BLEU().corpus_score(raw, [raw_ref]).score,
               BLEU(tokenize="ja-mecab").corpus_score(raw, [raw_ref]).score, CHRF().corpus_score(raw, [raw_ref]).score)
        print(f"| {path.parent.name} | " + " | ".join(f"{s:.2f}" for s in row) + " |")
    return 0


def unseen(args) -> int:
    from onmt_xl.experiments.tokenization import Tokenization, bpe_merges, learn_bpe, tokenize_lines, unseen_share

    src, tgt = read_lines(args.src)[:args.pairs], read_lines(args.tgt)[:args.pairs]
    test = read_lines(args.test)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / "train.src", Path(tmp) / "train.tgt"]
        write_lines(paths[0], src)
        write_lines(paths[1], tgt)
        merges = bpe_merges(len(src))
        model = Path(tmp) / "bpe.model"
        learned = learn_bpe(paths, merges, model)
        print(f"{len(src):,} training pairs, {len(test):,} test sentences ({args.test})")
        for tok, what in ((Tokenization("words"), "words"),
                          (Tokenization("bpe", merges, str(model)), f"BPE, {learned:,} merges")):
            t = tok.tokenizer()
            vocab = {w for line in tokenize_lines(t, src) for w in line.split()}
            tokens = sum(len(line.split()) for line in tokenize_lines(t, test))
            print(f"{what}: source vocabulary {len(vocab):,}, {tokens / len(test):.2f} tokens a test sentence, "
                  f"{unseen_share(t, src, test):.1%} of them unseen in training")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("corpus", help="the raw corpus")
    c.add_argument("--data", required=True, help="the segmented corpus: train.ja/en, dev.ja/en")
    c.add_argument("--out", required=True)
    c.add_argument("--train", type=int, default=12000, help="training pairs (the next 500: validation)")
    c.set_defaults(func=corpus)
    s = sub.add_parser("scores", help="an English->Japanese archive's BLEU on raw text, 13a and ja-mecab")
    s.add_argument("--archive", required=True, help="an onmt-xl evidence archive with jobs/*/hyp.test.gz")
    s.add_argument("--ref", required=True, help="the test reference, segmented as the study scored it")
    s.set_defaults(func=scores)
    u = sub.add_parser("unseen", help="test tokens unseen in training, words against BPE")
    u.add_argument("--src", required=True)
    u.add_argument("--tgt", required=True)
    u.add_argument("--test", required=True)
    u.add_argument("--pairs", type=int, default=5000)
    u.set_defaults(func=unseen)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
