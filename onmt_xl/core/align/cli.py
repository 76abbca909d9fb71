"""``onmt-xl align`` (eflomal + grow-diag-final-and) and ``onmt-xl aer`` (Och & Ney 2003) subcommands.

Alignments are plain Pharaoh (``i-j``, 0-based, source first), so ``aer`` scores the output of any
aligner (fast_align, awesome-align, GIZA++ via symal, ...), not only ``align``'s.

``align`` also writes ``PREFIX.seg.json``, the record of what it aligned (files, token counts and
segmentation, see :mod:`onmt_xl.core.align.record`), which the commands that read the alignments check.
"""

from __future__ import annotations

import argparse
import sys

from onmt_xl.core import segmentation
from onmt_xl.core.align.aer import check_links_in_range, read_gold, read_joint_text, score_alignments
from onmt_xl.core.align.pharaoh import read_pharaoh
from onmt_xl.core.align.record import side_record, write_record
from onmt_xl.core.errors import XLInputError, XLUsageError, check_text_files, count


def _usage_error(message: str) -> None:
    raise XLUsageError(None, None, message)


def run_align(args: argparse.Namespace) -> int:
    from onmt_xl.core.align.eflomal_aligner import align_corpus, align_with_extra, read_parallel, write_result

    # every input readable before the long work (the output folder is made by onmt_xl.cli.main)
    check_text_files([args.text, args.src, args.tgt, args.extra_src, args.extra_tgt, args.priors])
    if args.quiet:
        from onmt_xl.core.progress import set_quiet

        set_quiet()
    if args.text is not None:
        if args.src is not None or args.tgt is not None:
            _usage_error("give either --text or --src/--tgt, not both")
        src, tgt = read_joint_text(args.text)
        src_name, tgt_name = f"{args.text} (source side)", f"{args.text} (target side)"
    else:
        if args.src is None or args.tgt is None:
            _usage_error("give --src and --tgt (or --text)")
        src, tgt = read_parallel(args.src, args.tgt)
        src_name, tgt_name = args.src, args.tgt
    if (args.extra_src is None) != (args.extra_tgt is None):
        _usage_error("give both --extra-src and --extra-tgt, or neither")
    src_scheme = None  # undeclared: the record says what the markers show
    if args.src_subword_model is not None or args.src_subword_marker is not None:
        src_scheme = segmentation.declared(args, src, src_name)
    kwargs = dict(model=args.model, n_samplers=args.n_samplers, rel_iterations=args.rel_iterations, priors=args.priors)
    if args.extra_src is not None:
        extra_src, extra_tgt = read_parallel(args.extra_src, args.extra_tgt)
        result = align_with_extra(src, tgt, extra_src, extra_tgt, **kwargs)
        n_aligned = len(src) + len(extra_src)
    else:
        result = align_corpus(src, tgt, **kwargs)
        n_aligned = len(src)
    paths = write_result(args.out_prefix, result)
    paths.append(write_record(args.out_prefix, side_record(src_name, src, src_scheme), side_record(tgt_name, tgt)))
    print(
        f"eflomal: {n_aligned} sentence pairs aligned in {result.seconds:.1f} s wall time; "
        f"wrote {len(src)} lines to {', '.join(paths)}",
        file=sys.stderr,
    )
    return 0


def run_aer(args: argparse.Namespace) -> int:
    check_text_files([args.hyp, args.gold, args.text])
    sure, possible = read_gold(args.gold, one_indexed=args.one_indexed)
    hyp = read_pharaoh(args.hyp)
    if len(hyp) != len(sure):
        raise XLInputError(args.hyp, None,
                           f"has {count(len(hyp), 'line')} but the gold file {args.gold} has {len(sure):,}")
    if args.text is not None:
        src, tgt = read_joint_text(args.text)
        check_links_in_range(possible, src, tgt, args.gold)
        check_links_in_range(hyp, src, tgt, args.hyp)
    print(score_alignments(hyp, sure, possible).format())
    return 0


def add_subcommands(subparsers: "argparse._SubParsersAction") -> None:
    """Register ``align`` and ``aer`` on an argparse subparsers object (``set_defaults(func=...)``)."""
    p = subparsers.add_parser(
        "align",
        help="word-align a parallel corpus with eflomal; write .fwd/.rev/.gdfa Pharaoh files and .seg.json",
        description="Align with eflomal (not seedable: results vary slightly run to run) and symmetrize "
        "with grow-diag-final-and. Output lines are parallel to the input; a pair with an empty side gets "
        "an empty line. PREFIX.seg.json records what was aligned (token counts, segmentation): commands given "
        "the alignments check it against their corpus.",
    )
    p.add_argument("--src", help="source side, one tokenized sentence per line")
    p.add_argument("--tgt", help="target side, line-parallel to --src")
    p.add_argument("--text", help="instead of --src/--tgt: one 'source ||| target' pair per line")
    p.add_argument("--out-prefix", required=True,
                   help="writes PREFIX.fwd, PREFIX.rev, PREFIX.gdfa and PREFIX.seg.json (its folder is made first)")
    p.add_argument("--model", type=int, default=3, choices=(1, 2, 3), help="1 IBM1, 2 +HMM, 3 +fertility (default)")
    p.add_argument("--extra-src", help="extra source sentences aligned jointly for better statistics, not written")
    p.add_argument("--extra-tgt", help="extra target sentences, line-parallel to --extra-src")
    p.add_argument("--n-samplers", type=int, default=3, help="independent eflomal samplers (default 3)")
    p.add_argument("--rel-iterations", type=float, default=1.0, help="scale eflomal's iteration counts")
    p.add_argument("--priors", help="eflomal priors file")
    p.add_argument("--quiet", action="store_true", help="no progress bar (one shows only where stderr is a terminal)")
    segmentation.add_arguments(p, "the source side")
    p.set_defaults(func=run_align, output_files=("out_prefix",))

    q = subparsers.add_parser(
        "aer",
        help="alignment error rate, precision and recall (Och & Ney 2003) against gold alignments",
        description="Score Pharaoh alignments (0-based, source first, from any aligner) against a gold file "
        "('i-j' sure, 'ipj' possible links, source first).",
    )
    q.add_argument("--hyp", required=True, help="hypothesis alignments, Pharaoh format, 0-indexed")
    q.add_argument("--gold", required=True, help="gold alignments")
    idx = q.add_mutually_exclusive_group()
    idx.add_argument("--one-indexed", dest="one_indexed", action="store_true", default=True,
                     help="gold indices start at 1 (default)")
    idx.add_argument("--zero-indexed", dest="one_indexed", action="store_false", help="gold indices start at 0")
    q.add_argument("--text", help="optional 'source ||| target' file to check that all links are within the sentences")
    q.set_defaults(func=run_aer)
