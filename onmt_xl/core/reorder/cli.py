"""``onmt-xl`` subcommands for reordering: ``oracle``, ``preorder-train``, ``preorder-apply``,
``preorder-eval``, ``positions``, ``show-reordering`` and ``synth``.

Corpus files hold one whitespace-tokenized sentence per line; alignments are Pharaoh ``i-j``
(0-indexed, source first) and are checked against the sentence lengths. A pair with an empty
side carries no reordering information: ``preorder-train``/``preorder-eval`` skip it (like
OpenNMT) and ``oracle`` gives it the monotone order so its output stays line-parallel; each
command reports how many pairs it skipped.

Segmentation (see :mod:`onmt_xl.core.segmentation`): ``preorder-train`` records in the model what its
``--src`` is (words by default; ``--src-subword-model``/``--src-subword-marker`` for sub-word text, which
it refuses undeclared); ``preorder-apply``, ``preorder-eval`` and ``show-reordering`` fail when their
input does not look like that segmentation; commands given ``--align`` check ``onmt-xl align``'s record of
what it aligned (:mod:`onmt_xl.core.align.record`).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from onmt_xl.core import segmentation
from onmt_xl.core.align.pharaoh import read_pharaoh
from onmt_xl.core.align.record import AlignmentRecord, check_corpus
from onmt_xl.core.errors import NOT_UTF8_HINT, XLInputError, XLUsageError, count, first_undecodable

# = the defaults of onmt_xl.core.reorder.preorderer (not imported here: numba loads lazily; a test checks)
DEFAULT_CLUSTERS = 256
DEFAULT_BATCH = 16
DEFAULT_ITERATIONS = 10
DEFAULT_PARALLEL = "mix"

Links = List[Tuple[int, int]]


@dataclass
class ParallelData:
    """Line-parallel corpus; ``keep`` lists the (0-based) lines whose two sides are non-empty."""

    src: List[List[str]]
    tgt: List[List[str]]
    links: List[Links]
    keep: List[int]
    record: Optional[AlignmentRecord] = None  # onmt-xl align's record of the aligned text, when there is one
    warnings: Tuple[str, ...] = ()

    @property
    def skipped(self) -> int:
        return len(self.src) - len(self.keep)


def read_tokens(path: str) -> List[List[str]]:
    """One whitespace-tokenized sentence per line (a byte-order mark opening the file dropped)."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            return [line.split() for line in f]
    except FileNotFoundError:
        raise XLUsageError(path, None, "file not found; check the path") from None
    except UnicodeDecodeError as exc:
        line, reason = first_undecodable(path) or (None, f"not UTF-8 text ({exc.reason})")
        raise XLInputError(path, line, f"{reason}; {NOT_UTF8_HINT}") from None


def read_parallel(src_path: str, tgt_path: str, align_path: str) -> ParallelData:
    """Read and validate a source/target/alignment triple (links checked against lengths)."""
    src, tgt = read_tokens(src_path), read_tokens(tgt_path)
    if len(src) != len(tgt):
        raise XLInputError(tgt_path, None, f"has {count(len(tgt), 'line')} but the source {src_path} has {len(src):,}")
    if not src:
        raise XLInputError(src_path, None, "is empty")
    try:
        links = read_pharaoh(align_path, [len(s) for s in src], [len(t) for t in tgt])
    except FileNotFoundError:
        raise XLUsageError(align_path, None, "file not found; check the path") from None
    if len(links) != len(src):  # read_pharaoh cannot tell an empty file from one empty line
        raise XLInputError(align_path, None, f"has {count(len(links), 'line')} but the corpus has "
                           f"{count(len(src), 'sentence')}")
    keep = [k for k, (s, t) in enumerate(zip(src, tgt)) if s and t]
    record, warnings = check_corpus(align_path, src_path, tgt_path, src, tgt, links)
    return ParallelData(src, tgt, links, keep, record, tuple(warnings))


def _check_input(model, model_path: str, sentences: Sequence[Sequence[str]], where: str) -> None:
    """The content check of a preorderer's input (:func:`onmt_xl.core.segmentation.check_tokens`)."""
    problem = segmentation.check_tokens(model.segmentation, sentences,
                                        f"the preorderer {model_path} was trained on")
    if problem:
        raise XLInputError(where, None, problem)


def _warn_skipped(command: str, data: ParallelData, what: str) -> None:
    for warning in data.warnings:
        print(f"{command}: warning: {warning}", file=sys.stderr)
    if data.skipped:
        kept = set(data.keep)
        empty = [k + 1 for k in range(len(data.src)) if k not in kept]
        shown = ", ".join(map(str, empty[:10])) + (", ..." if len(empty) > 10 else "")
        print(f"{command}: warning: {data.skipped} of {len(data.src)} pairs have an empty side "
              f"(lines {shown}); {what}", file=sys.stderr)


def _heldout(args: argparse.Namespace) -> Optional[ParallelData]:
    """``preorder-train``'s held-out pairs (all three of --heldout-src/-tgt/-align, or none)."""
    given = [args.heldout_src, args.heldout_tgt, args.heldout_align]
    if not any(given):
        return None
    if not all(given):
        raise XLUsageError(None, None, "give all three of --heldout-src, --heldout-tgt and --heldout-align, or none")
    return read_parallel(args.heldout_src, args.heldout_tgt, args.heldout_align)


def _monotone_check(command: str, model, data: ParallelData, pred: Optional[List[List[int]]] = None,
                    beaten_to=None) -> None:
    """One line: does ``model`` beat the monotone order on ``data``'s usable pairs
    (:mod:`onmt_xl.core.reorder.monotone_check`)? A warning goes to stderr; the figures of a clear gain to ``beaten_to``
    (default stderr)."""
    from onmt_xl.core.reorder.monotone_check import check_monotone
    from onmt_xl.core.reorder.oracle import target_ranks

    src = [data.src[k] for k in data.keep]
    ranks = [target_ranks(len(data.src[k]), data.links[k]) for k in data.keep]
    check = check_monotone(model.reorder_batch(src) if pred is None else pred, ranks)
    print(f"{command}: {check.format()}", file=sys.stderr if not check.beats else beaten_to or sys.stderr)


def _write_int_lines(path: str, rows: Iterable[Sequence[int]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(" ".join(map(str, row)) + "\n")


def _write_token_lines(path: str, rows: Iterable[Sequence[str]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(" ".join(row) + "\n")


# --- commands ----------------------------------------------------------------------------------


def run_oracle(args: argparse.Namespace) -> int:
    from onmt_xl.core.reorder.btg import order_to_pos_xl
    from onmt_xl.core.reorder.oracle import btg_oracle

    data = read_parallel(args.src, args.tgt, args.align)
    keep = set(data.keep)
    orders, total_loss = [], 0
    for k, (src, links) in enumerate(zip(data.src, data.links)):
        if k in keep:
            res = btg_oracle(len(src), links, with_tree=False, attach_null=args.attach_null)
            orders.append(res.order)
            total_loss += res.loss
        else:
            orders.append(list(range(len(src))))
    _warn_skipped("oracle", data, "they get the monotone order")
    _write_int_lines(args.out_order, orders)
    if args.out_pos:
        _write_int_lines(args.out_pos, (order_to_pos_xl(o) for o in orders))
    print(f"oracle: {len(orders)} lines written to {args.out_order}"
          + (f" and {args.out_pos}" if args.out_pos else "")
          + f"; total Kendall loss {total_loss} (pairs no BTG tree can order)", file=sys.stderr)
    return 0


def _declared_scheme(args: argparse.Namespace, data: ParallelData):
    """The segmentation ``--src`` is declared in, checked against ``onmt-xl align``'s record of what it aligned."""
    scheme = segmentation.declared(args, data.src, args.src)
    if data.record is not None and data.record.src.declared and not data.record.src.segmentation.matches(scheme):
        raise XLInputError(
            args.align, None,
            f"segmentation mismatch: these alignments were made on {data.record.src.segmentation.describe()} "
            f"(see {data.record.path}), but --src {args.src} is declared as {scheme.describe()}: align the "
            "text you train on, or declare its segmentation as it is (--src-subword-model, --src-subword-marker)",
        )
    return scheme


def train_options(args: argparse.Namespace, scheme) -> dict:
    """The keyword arguments of ``Preorderer.train`` that ``preorder-train``'s options give (threads and progress
    apart): ``onmt-xl positions`` trains its fold preorderers with the same."""
    return dict(
        iterations=args.iterations,
        seed=args.seed,
        hash_size=1 << args.hash_bits,
        loss_aug=args.loss_aug,
        attach_null=args.attach_null,
        tiebreak_null=args.tiebreak_null,
        max_len=args.max_len,
        max_span=args.max_span,
        class_words=args.class_words,
        n_clusters=args.clusters,
        min_count=args.min_count,
        batch=args.batch,
        parallel=args.parallel,
        segmentation=scheme,
        features=args.features,
        tagger=args.tagger,
    )


def run_preorder_train(args: argparse.Namespace) -> int:
    from onmt_xl.core.reorder.preorderer import Preorderer

    data = read_parallel(args.src, args.tgt, args.align)
    scheme = _declared_scheme(args, data)
    _warn_skipped("preorder-train", data, "skipped")
    heldout = _heldout(args)  # read before training: a bad file fails now, not after it
    if heldout is not None:
        _warn_skipped("preorder-train", heldout, "left out of the held-out check")
    keep = data.keep[: args.max_sentences] if args.max_sentences else data.keep
    t0 = time.perf_counter()
    model = Preorderer.train(
        [data.src[k] for k in keep],
        [data.links[k] for k in keep],
        threads=args.threads,
        progress=not args.quiet,
        **train_options(args, scheme),
    )
    seconds = time.perf_counter() - t0
    for st in model.train_log:
        print(f"preorder-train: iteration {st.iteration}: predicted loss {st.pred_loss}, "
              f"oracle loss {st.oracle_loss}, {st.updates} updates ({st.seconds:.1f}s)", file=sys.stderr)
    model.save(args.model)
    print(f"preorder-train: {len(keep)} sentences, {args.iterations} iterations in {seconds:.1f}s "
          f"({model.train_info['threads']} threads; vocabulary and word classes "
          f"{model.train_info['vocab_seconds']:.1f}s); source segmentation: {scheme.describe()}; "
          f"model written to {args.model}", file=sys.stderr)
    if heldout is None:
        print("preorder-train: to check that it beats the monotone order, give --heldout-src, --heldout-tgt and "
              "--heldout-align, or run onmt-xl preorder-eval on held-out pairs", file=sys.stderr)
    else:
        _check_input(model, args.model, heldout.src, args.heldout_src)
        _monotone_check("preorder-train", model, heldout)
    return 0


def run_preorder_apply(args: argparse.Namespace) -> int:
    from onmt_xl.core.reorder.btg import order_to_pos_xl
    from onmt_xl.core.reorder.preorderer import Preorderer, set_threads

    if not (args.out_pos or args.out_order or args.out_reordered):
        raise XLUsageError(None, None, "give at least one of --out-pos, --out-order, --out-reordered")
    model = Preorderer.load(args.model)
    if args.max_span is not None:
        model.max_span = args.max_span
    set_threads(args.threads)
    src = read_tokens(args.src)
    _check_input(model, args.model, src, args.src)
    t0 = time.perf_counter()
    orders: List[List[int]] = []
    for a in range(0, len(src), args.batch_size):
        orders.extend(model.reorder_batch(src[a : a + args.batch_size]))
    seconds = time.perf_counter() - t0
    if args.out_order:
        _write_int_lines(args.out_order, orders)
    if args.out_pos:
        _write_int_lines(args.out_pos, (order_to_pos_xl(o) for o in orders))
    if args.out_reordered:
        _write_token_lines(args.out_reordered, ([s[i] for i in o] for s, o in zip(src, orders)))
    n_empty = sum(1 for s in src if not s)
    print(f"preorder-apply: {len(src)} lines ({n_empty} empty, written as empty lines) in {seconds:.2f}s",
          file=sys.stderr)
    return 0


def run_preorder_eval(args: argparse.Namespace) -> int:
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks
    from onmt_xl.core.reorder.preorderer import Preorderer, set_threads

    model = Preorderer.load(args.model)
    if args.max_span is not None:
        model.max_span = args.max_span
    n_threads = set_threads(args.threads)
    data = read_parallel(args.src, args.tgt, args.align)
    _check_input(model, args.model, data.src, args.src)
    _warn_skipped("preorder-eval", data, "skipped")
    src = [data.src[k] for k in data.keep]
    ranks = [target_ranks(len(data.src[k]), data.links[k]) for k in data.keep]
    model.reorder_batch(src[:1])  # compile / load the kernels before timing
    t0 = time.perf_counter()
    pred = model.reorder_batch(src)
    batch_s = time.perf_counter() - t0
    n1 = min(len(src), 2000)
    t0 = time.perf_counter()
    for toks in src[:n1]:
        model.reorder(toks)
    single_s = time.perf_counter() - t0
    print(evaluate(pred, ranks).format())
    _monotone_check("preorder-eval", model, data, pred, beaten_to=sys.stdout)
    n_tok = sum(len(s) for s in src)
    print(f"speed: {len(src) / max(batch_s, 1e-9):,.0f} sentences/s batched, "
          f"{n1 / max(single_s, 1e-9):,.0f} sentences/s one at a time "
          f"(mean length {n_tok / max(len(src), 1):.1f} tokens; batched on {n_threads} threads)")
    return 0


def run_positions(args: argparse.Namespace) -> int:
    """``pos_XL`` of every line of ``--src`` into a positions file (:mod:`onmt_xl.core.reorder.positions_file`):
    cross-fitted (``--folds K``, :mod:`onmt_xl.core.reorder.crossfit`) or from one preorderer (``--preorderer``)."""
    import json
    import os

    from onmt_xl.core.reorder.crossfit import FOLD_RULE, crossfit_positions, figures_of, predict_positions
    from onmt_xl.core.reorder.positions_file import PositionsHeader, scan_corpus, write_positions

    if (args.folds is None) == (args.preorderer is None):
        raise XLUsageError(None, None, "give either --folds K (cross-fitted positions) or --preorderer FILE")
    if args.folds is not None and not (args.tgt and args.align):
        raise XLUsageError(None, None, "--folds needs --tgt and --align (the fold preorderers train on them)")
    if args.folds is not None and args.folds < 2:
        raise XLUsageError(None, None, f"--folds must be at least 2, got {args.folds}")
    if args.seen_tau and args.folds is None:
        raise XLUsageError(None, None, "--seen-tau compares a fold preorderer on its own sentences: give --folds")
    if args.tgt and args.align:
        data = read_parallel(args.src, args.tgt, args.align)
    elif args.tgt or args.align:
        raise XLUsageError(None, None, "give both --tgt and --align (for Kendall tau), or neither")
    else:
        src = read_tokens(args.src)
        data = ParallelData(src, [], [], [])
    scan = scan_corpus(args.src)
    if scan.lines != len(data.src):
        raise XLInputError(args.src, None, f"has {scan.lines} lines ending in \\n but {len(data.src)} text lines: a "
                                           "carriage return inside a line? OpenNMT-py and Eole split lines at \\n only")
    t0 = time.perf_counter()
    figures = None
    if args.folds is not None:
        scheme = _declared_scheme(args, data)
        _warn_skipped("positions", data, "not trained on (a non-empty source still gets its positions)")
        options = train_options(args, scheme)
        try:
            positions, figures = crossfit_positions(data.src, data.tgt, data.links, args.folds, options,
                                                    args.threads, args.seen_tau, not args.quiet, args.batch_size)
        except ValueError as err:
            raise XLInputError(args.src, None, str(err)) from None
        made = {"method": "crossfit", "folds": args.folds, "fold_rule": FOLD_RULE,
                "options": {**{k: v for k, v in options.items() if k != "segmentation"},
                            "segmentation": scheme.describe()}}
    else:
        from onmt_xl.core.reorder.preorderer import Preorderer, set_threads
        from onmt_xl.core.segmentation import file_sha256

        model = Preorderer.load(args.preorderer)
        _check_input(model, args.preorderer, data.src, args.src)
        set_threads(args.threads)
        positions = predict_positions(model, data.src, args.batch_size, not args.quiet)
        if data.tgt:
            figures = figures_of(positions, data.src, data.tgt, data.links)
        made = {"method": "preorderer", "preorderer": os.path.basename(args.preorderer),
                "preorderer_sha256": file_sha256(args.preorderer)}
    header = PositionsHeader(os.path.basename(args.src), scan.lines, scan.sha256, made)
    write_positions(args.out, header, positions)
    summary = {"positions": os.path.basename(args.out), "corpus": {"name": header.corpus_name, "lines": scan.lines,
               "sha256": scan.sha256}, "made": made, "figures": figures.to_dict() if figures else None}
    with open(args.out + ".json", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    if figures is not None:
        print(figures.format())
    print(f"positions: {len(positions)} lines ({header.describe()}) in {time.perf_counter() - t0:.1f}s written to "
          f"{args.out}; figures in {args.out}.json", file=sys.stderr)
    return 0


def run_show_reordering(args: argparse.Namespace) -> int:
    from onmt_xl.core.reorder.oracle import btg_oracle, target_ranks
    from onmt_xl.core.reorder.preorderer import Preorderer
    from onmt_xl.core.reorder.show import draw_png, score, text_report

    model = Preorderer.load(args.model)
    if args.max_span is not None:
        model.max_span = args.max_span
    target = links = ranks = None
    if args.sentence is not None:
        if args.src or args.tgt or args.align:
            raise XLUsageError(None, None, "give either --sentence or --src/--tgt/--align, not both")
        tokens, where = args.sentence.split(), "--sentence"
    else:
        if not (args.src and args.tgt and args.align):
            raise XLUsageError(None, None, "give --sentence, or --src, --tgt and --align (with --line)")
        data = read_parallel(args.src, args.tgt, args.align)
        if not 1 <= args.line <= len(data.src):
            raise XLUsageError(args.src, None, f"has {len(data.src)} lines; --line {args.line} is out of range")
        k = args.line - 1
        tokens, target, links = data.src[k], data.tgt[k], data.links[k]
        where = f"{args.src} line {args.line}"
        ranks = target_ranks(len(tokens), links)
    if not tokens:
        raise XLUsageError(None, None, f"{where} is empty")
    _check_input(model, args.model, [tokens], where)
    order, tree, _ = model.reorder_tree(tokens)
    systems = [score("predicted", order, tree, ranks)]
    if ranks is not None:
        oracle = btg_oracle(len(tokens), links)
        systems.append(score("oracle", oracle.order, oracle.tree, ranks))
    print(f"{where}:")
    print(text_report(tokens, systems, target, ranks, links))
    if args.png:
        note = draw_png(args.png, tokens, systems, target, links, title=where)
        print(f"show-reordering: drawing written to {args.png} ({note})", file=sys.stderr)
    return 0


def run_synth(args: argparse.Namespace) -> int:
    from onmt_xl.core.data.synthetic import generate, write

    corpus = generate(args.n, seed=args.seed, divergence=args.divergence)
    paths = write(corpus, args.prefix)
    print(f"synth: {len(corpus)} pairs (seed {args.seed}, divergence {args.divergence}) written to "
          + ", ".join(paths.values()), file=sys.stderr)
    return 0


# --- argparse ----------------------------------------------------------------------------------


def _corpus_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--src", required=True, help="source side, one whitespace-tokenized sentence per line")
    p.add_argument("--tgt", required=True, help="target side, line-parallel to --src")
    p.add_argument("--align", required=True, help="Pharaoh alignments (i-j, 0-indexed, source first)")


def _attach_null_arg(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--attach-null", choices=("none", "left", "right"), default=default,
                   help="unaligned source words: no rank (none) or the span of their left/right "
                   f"neighbour, as lader's attach_null (default {default})")


def _span_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-span", type=int, default=None,
                   help="override the model's span limit K (0 = exact CKY up to the model's max_len)")


def _threads_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=0, help="numba threads (default 0 = all cores)")


def _feature_groups(value: str) -> Tuple[str, ...]:
    groups = tuple(g for g in (part.strip() for part in value.split(",")) if g)
    bad = [g for g in groups if g not in ("context",)]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown feature group(s) {', '.join(bad)}: the groups are context "
                                         "(part-of-speech features come with --tagger)")
    return groups


def _add_oracle(subparsers) -> None:
    p = subparsers.add_parser(
        "oracle", help="BTG oracle reordering from word alignments (minimal Kendall loss)",
        description="Write, for each line, the BTG order closest to the target order under the alignments "
        "(exact CKY, Neubig et al. 2012). Output is line-parallel to --src; a pair with an empty side gets "
        "the monotone order.",
    )
    _corpus_args(p)
    p.add_argument("--out-order", required=True, help="source indices in reordered order, one line per sentence")
    p.add_argument("--out-pos", help="pos_XL (Ding et al. 2020, Eq. 6): position of each source token after reordering")
    _attach_null_arg(p, "none")
    p.set_defaults(func=run_oracle, output_files=("out_order", "out_pos"))


def _train_args(p: argparse.ArgumentParser) -> None:
    """The training options of ``preorder-train`` (also those of ``positions``' fold preorderers)."""
    p.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS,
                   help=f"passes over the data (default {DEFAULT_ITERATIONS})")
    p.add_argument("--seed", type=int, default=1, help="shuffling seed (default 1)")
    p.add_argument("--hash-bits", type=int, default=20,
                   help="2^BITS hashed feature rows (default 20; more for corpora much larger than 50k pairs)")
    p.add_argument("--loss-aug", type=float, default=1.0, help="loss-augmented decoding weight (default 1, 0 = off)")
    p.add_argument("--max-len", type=int, default=400,
                   help="longer sentences are left out of training and decoded with span limit MAX_LEN (default 400)")
    p.add_argument("--max-span", type=int, default=None,
                   help="span limit K: no inverted node spans more than K tokens, O(n K^2) parsing "
                   "(default: the longest training sentence; 0 = exact CKY)")
    p.add_argument("--class-words", type=int, default=100, help="most frequent tokens that are their own class")
    p.add_argument("--clusters", type=int, default=DEFAULT_CLUSTERS,
                   help=f"word classes from exchange clustering of the source side (default {DEFAULT_CLUSTERS}, 0 = "
                   "shapes only)")
    p.add_argument("--min-count", type=int, default=2, help="rarer tokens map to UNK (default 2)")
    _threads_arg(p)
    p.add_argument("--parallel", choices=("mix", "minibatch"), default=DEFAULT_PARALLEL,
                   help="how threads share training: mix = one shard per thread, weights averaged after each pass "
                   "(robust on shared cores; the model depends on the thread count); minibatch = --batch sentences "
                   "parsed in parallel, then updated in order (same model for any thread count) (default "
                   f"{DEFAULT_PARALLEL})")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH,
                   help=f"--parallel minibatch: sentences parsed in parallel between updates (default {DEFAULT_BATCH})")
    _attach_null_arg(p, "none")
    p.add_argument("--tiebreak-null", choices=("none", "left", "right"), default="left",
                   help="break ties of the loss by the loss with this null attachment (default left)")
    p.add_argument("--features", type=_feature_groups, default=(),
                   help="feature groups added to the base templates, comma-separated: context = two tokens each "
                   "side of every boundary and word conjunctions of the children's ends (default: none)")
    p.add_argument("--tagger", choices=("none", "unidic"), default="none",
                   help="a Japanese morphological tagger whose part-of-speech views become features (unidic = MeCab "
                   "through fugashi with unidic-lite: pip install 'onmt-xl[ja]'); recorded in the model, which then "
                   "tags its own input (default none)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    segmentation.add_arguments(p)


def _add_preorder_train(subparsers) -> None:
    p = subparsers.add_parser(
        "preorder-train", help="train the discriminative BTG preorderer on source + alignments",
        description="Averaged latent-oracle perceptron over BTG trees (Neubig et al. 2012). The target side "
        "is read only to check the alignments.",
    )
    _corpus_args(p)
    p.add_argument("--model", required=True, help="output model file (one versioned .npz file)")
    p.add_argument("--max-sentences", type=int, default=0, help="train on the first N usable pairs (0 = all)")
    _train_args(p)
    p.add_argument("--heldout-src", help="held-out source (with --heldout-tgt, --heldout-align): after training, "
                   "check that the preorderer beats the monotone order on these pairs (one line)")
    p.add_argument("--heldout-tgt", help="held-out target, line-parallel to --heldout-src")
    p.add_argument("--heldout-align", help="held-out Pharaoh alignments")
    p.set_defaults(func=run_preorder_train, output_files=("model",))


def _add_preorder_apply(subparsers) -> None:
    p = subparsers.add_parser(
        "preorder-apply", help="reorder source sentences with a trained preorderer",
        description="Reorder each line of --src with a preorder-train model and write the order, pos_XL (the "
        "position of each token after reordering, what the xl_position transform feeds the model) and/or the "
        "reordered tokens, line-parallel to --src (an empty line stays empty). The input must be segmented as the "
        "model's training source was.",
    )
    p.add_argument("--model", required=True, help="model file from preorder-train")
    p.add_argument("--src", required=True, help="source sentences, one per line")
    p.add_argument("--out-pos", help="write pos_XL (position of each token after reordering)")
    p.add_argument("--out-order", help="write the order (source indices in reordered order)")
    p.add_argument("--out-reordered", help="write the reordered tokens")
    p.add_argument("--batch-size", type=int, default=1000, help="sentences per compiled call (default 1000)")
    _span_arg(p)
    _threads_arg(p)
    p.set_defaults(func=run_preorder_apply, output_files=("out_pos", "out_order", "out_reordered"))


def _add_preorder_eval(subparsers) -> None:
    p = subparsers.add_parser(
        "preorder-eval", help="Kendall tau, exact match and FRS of a preorderer vs monotone order",
        description="Score a preorderer's orders against the target order the alignments give (Kendall tau, "
        "exact match, fuzzy reordering score), next to the monotone order's, and time it batched and one "
        "sentence at a time. Pairs with an empty side are skipped.",
    )
    p.add_argument("--model", required=True, help="model file from preorder-train")
    _corpus_args(p)
    _span_arg(p)
    _threads_arg(p)
    p.set_defaults(func=run_preorder_eval)


def _add_positions(subparsers) -> None:
    p = subparsers.add_parser(
        "positions", help="a corpus' pos_XL for training or translation: cross-fitted (k folds) or from one "
        "preorderer",
        description="Write pos_XL for every line of --src into a positions file (.xlpos: a JSON header naming the "
        "corpus' line count and SHA-256 and how the positions were made, then one line of space-separated integers "
        "per corpus line), which the xl_position transform reads for a training corpus or a file to translate "
        "(-xl_positions_suffix). "
        "--folds K cuts the pairs into K folds by a hash of the source text (lines with the same source share a "
        "fold), trains K preorderers as preorder-train does, each on the other folds, and gives each line the "
        "positions of the preorderer that never saw it. --preorderer FILE applies one preorderer (e.g. to a "
        "validation set). With --tgt and --align it prints Kendall tau against the alignments' target order (and "
        "the monotone order's and the BTG oracle's); the figures also go to OUT.json.",
    )
    p.add_argument("--src", required=True, help="source side, one whitespace-tokenized sentence per line, as the "
                   "model reads it (already segmented)")
    p.add_argument("--tgt", help="target side, line-parallel to --src (needed with --folds)")
    p.add_argument("--align", help="Pharaoh alignments (i-j, 0-indexed, source first; needed with --folds)")
    p.add_argument("--out", required=True, help="the positions file to write (the transform finds SRC + SUFFIX)")
    p.add_argument("--folds", type=int, help="cross-fit with this many folds (5 is usual)")
    p.add_argument("--preorderer", help="apply this preorderer (from preorder-train) instead of cross-fitting")
    p.add_argument("--seen-tau", action="store_true",
                   help="also score fold 1's preorderer on (up to 5,000 of) its own training sentences")
    p.add_argument("--batch-size", type=int, default=1000, help="sentences per compiled parsing call (default 1000)")
    _train_args(p)
    p.set_defaults(func=run_positions, output_files=("out",))


def _add_show_reordering(subparsers) -> None:
    p = subparsers.add_parser(
        "show-reordering", help="one sentence's predicted BTG tree and reordering next to the oracle's",
        description="Print the predicted and (with --src/--tgt/--align) the oracle reordering of one sentence: "
        "orders, bracketings, indented trees and pos_XL per token; --png also draws both trees.",
    )
    p.add_argument("--model", required=True, help="model file from preorder-train")
    p.add_argument("--src", help="source side, one whitespace-tokenized sentence per line")
    p.add_argument("--tgt", help="target side, line-parallel to --src")
    p.add_argument("--align", help="Pharaoh alignments (i-j, 0-indexed, source first)")
    p.add_argument("--line", type=int, default=1, help="1-based line of --src to show (default 1)")
    p.add_argument("--sentence", help="a tokenized sentence instead of --src/--line (no oracle)")
    p.add_argument("--png", help="also draw the trees to this PNG file (matplotlib)")
    _span_arg(p)
    p.set_defaults(func=run_show_reordering, output_files=("png",))


def _add_synth(subparsers) -> None:
    p = subparsers.add_parser(
        "synth", help="synthetic SVO->SOV parallel corpus with gold alignments",
        description="Generate a synthetic English-like (SVO) to Japanese-like (SOV) parallel corpus with its "
        "gold word alignments: PREFIX.src, PREFIX.tgt and PREFIX.align (Pharaoh, 0-indexed). The same --n, "
        "--seed and --divergence give the same corpus.",
    )
    p.add_argument("--n", type=int, required=True, help="sentence pairs")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--divergence", type=float, default=1.0,
                   help="probability that a construction is head-final on the target side (0 monotone, 1 SOV)")
    p.add_argument("--prefix", required=True, help="writes PREFIX.src, PREFIX.tgt, PREFIX.align")
    p.set_defaults(func=run_synth, output_files=("prefix",))


def add_subcommands(subparsers: "argparse._SubParsersAction") -> None:
    """Register the reordering subcommands (each sets ``func`` via ``set_defaults``)."""
    for add in (_add_oracle, _add_preorder_train, _add_preorder_apply, _add_preorder_eval, _add_positions,
                _add_show_reordering, _add_synth):
        add(subparsers)
