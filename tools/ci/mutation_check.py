#!/usr/bin/env python3
"""Hand-listed mutation testing of the modules that implement the papers' equations, and of the statistics and rules
that decide the reports' verdicts (block ``decisions``).

Each entry of :data:`MUTATIONS` is a deliberate bug: ``(id, file, old snippet, new snippet, description,
test selection)``. The tool applies one bug at a time to a *copy* of the repository (``onmt_xl/``,
``tests/``, ``tools/``, ``pyproject.toml``; by default from the working tree, ``--rev`` takes a git revision),
runs the selected tests there with ``pytest -x -q`` and reports whether they caught it:

* ``caught``: the tests failed (``timeout`` also counts as caught, as in mutmut);
* ``MISSED``: the tests passed with the bug in place: a test is missing or too weak;
* ``STALE``: the old snippet is not in the source (or not exactly once): the list is out of sync with the
  code and must be updated; a stale entry counts as a failure of the list;
* ``ERROR``: pytest could not run the selection (no tests collected, bad arguments), or the selection
  already fails without any bug (``baseline fails``): the result would mean nothing.

Before any bug is run the tool checks that the copy is what the tests import (the ``onmt_xl_hook`` import
hook resolves ``onmt_xl`` at the first ``import onmt`` on the full ``sys.path``, and an installed copy of
``onmt_xl`` sits in site-packages): ``PYTHONPATH`` puts the copy first, a probe prints the file ``onmt_xl``
is imported from after ``import onmt``, and a canary copy whose ``onmt_xl/core/positions.py`` raises at import
must make the tests fail with that error. Then every distinct test selection runs once unmutated (it must pass).

Usage::

    python3 tools/ci/mutation_check.py                      # every entry, markdown table on stdout
    python3 tools/ci/mutation_check.py --only P1 O2 --jobs 2
    python3 tools/ci/mutation_check.py --block rewritten    # disan, inxl, explicit_reordering, reordering embeddings
    python3 tools/ci/mutation_check.py --list               # the list, with stale entries marked, nothing run
    # reports/mutation.md: every entry, and each also without the files of the tests written for the list
    nice -n 10 python3 tools/ci/mutation_check.py --jobs 2 --without tests/test_equations_mutants.py \
        --without tests/test_pinned_equations.py --report reports/mutation.md

Exit status: 0 when every run entry was caught, 1 otherwise (missed, stale or error).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
# pytest's options are in pyproject.toml; a revision from before it (``--rev``) has them in setup.cfg.
COPIED = ("onmt_xl", "tests", "tools", "pyproject.toml", "setup.cfg")
#: the module the isolation check breaks in a copy (``tests/test_positions.py`` must then fail)
CANARY = Path("onmt_xl", "core", "positions.py")


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str
    old: str
    new: str
    description: str
    tests: str  # pytest arguments (shell syntax), run from the copy's root
    block: str = "main"


def M(id, file, old, new, description, tests, block="main") -> Mutation:  # noqa: N802 - a short constructor
    return Mutation(id, file, old, new, description, tests, block)


# Fast test selections (each runs in seconds). tests/test_equations_mutants.py holds one class per module.
EQ = "tests/test_equations_mutants.py"
T_POS = f"tests/test_positions.py {EQ}::TestPositions"
T_HEADXL = f"tests/test_modules.py {EQ}::TestHeadXL -k headxl"
T_ENC = f"tests/test_encoders.py {EQ}::TestXLEncoder"
T_ORACLE = f"tests/test_oracle.py {EQ}::TestOracle"
T_BTG = f"tests/test_oracle.py {EQ}::TestBTG"
T_METRICS = f"tests/test_oracle.py {EQ}::TestMetrics"
T_ALIGN = f"tests/test_align.py {EQ}::TestAlign -k 'not corpus and not files and not bench and not jaen'"
T_INXL = f"tests/test_modules.py {EQ}::TestInXL -k 'inxl or InXL'"
T_DISAN = f"tests/test_baselines.py {EQ}::TestDiSAN -k 'DiSAN or disan or directional or fusion_gate'"
T_EXGRE = (f"tests/test_baselines.py {EQ}::TestExplicitReordering -k "
           "'ExplicitReordering or reordered_position or gaussian or reordering_fusion or reordering_similarity or "
           "exgre or eq9'")
# the encoders' stack (Eq. 5-7 in every layer, ReFSR's second pass), written out by hand for both systems
T_EXGRE_STACK = (f"tests/test_baselines.py {EQ}::TestBaselineEncodersSurvivors -k "
                 "'ExplicitReordering or exgre or refsr'")
T_RE = (f"tests/test_baselines.py {EQ}::TestReorderingEmbedding "
        "-k 'ReorderingEmbedding or penalty or reordering_embedding'")
# tests/test_pinned_equations.py: the two equations of issue 40 against hand-written references
PIN = "tests/test_pinned_equations.py"
T_REL = f"tests/test_encoders.py {PIN}::TestRelativePE -k 'relative or Relative'"
T_DEC_RE = (f"tests/test_baselines.py {PIN}::TestDecoderReorderingEmbedding "
            "-k 'decoder_res or DecoderReorderingEmbedding'")

# --- stable equation modules ---------------------------------------------------------------------------------

MUTATIONS: List[Mutation] = [
    # Eq. 1 / Eq. 6: the sinusoid
    M("P1", "onmt_xl/core/positions.py",
      "return torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)",
      "return torch.stack((torch.cos(angles), torch.sin(angles)), dim=-1).flatten(-2)",
      "Eq. 1: sin and cos swapped (interleaved)", T_POS),
    M("P2", "onmt_xl/core/positions.py",
      "* -(math.log(10000.0) / dim)",
      "* -(math.log(1000.0) / dim)",
      "Eq. 1: base 10000 -> 1000 (interleaved)", T_POS),
    M("P3", "onmt_xl/core/positions.py",
      "return torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)",
      "return torch.cat((torch.sin(angles), torch.cos(angles)), dim=-1)",
      "Eq. 1: concatenated instead of interleaved sin/cos", T_POS),
    M("P4", "onmt_xl/core/positions.py",
      "-(math.log(10000) / (half - 1))",
      "-(math.log(10000) / half)",
      "concat kind: frequency exponent over d/2 instead of d/2 - 1 (OpenNMT's convention)", T_POS),
    M("P5", "onmt_xl/core/positions.py",
      "return sinusoid_table(int(hi) + 1, dim, kind, pos.device)[pos]",
      "return sinusoid_table(int(hi), dim, kind, pos.device)[pos]",
      "cached table one row short (the largest position falls off when the table grows)", T_POS),
    M("P6", "onmt_xl/core/positions.py",
      "angles = pos.float().unsqueeze(-1) * div",
      "angles = pos.float().floor().unsqueeze(-1) * div",
      "Eq. 6 with float positions (ExGRE's b_j): fractional part dropped", T_POS),
    M("P7", "onmt_xl/core/positions.py",
      "torch.arange(0, dim, 2, dtype=torch.float, device=pos.device) * -(math.log(10000.0) / dim)",
      "torch.arange(1, dim + 1, 2, dtype=torch.float, device=pos.device) * -(math.log(10000.0) / dim)",
      "Eq. 1: frequency index 2i+1 instead of 2i", T_POS),
    # Eq. 9-11: HeadXL
    M("H1", "onmt_xl/core/modules/headxl.py",
      "n_first = xl_heads * attn.dim_per_head",
      "n_first = (xl_heads + 1) * attn.dim_per_head",
      "Eq. 10: tau off by one (one head too many reads Z_XL)", T_HEADXL),
    M("H2", "onmt_xl/core/modules/headxl.py",
      "z_xl, z_abs = packed[..., : self.d_in], packed[..., self.d_in :]",
      "z_abs, z_xl = packed[..., : self.d_in], packed[..., self.d_in :]",
      "Eq. 10: Z_XL and Z_abs inputs swapped", T_HEADXL),
    M("H3", "onmt_xl/core/modules/headxl.py",
      "(F.linear(z_xl, self.weight[:n], b_xl), F.linear(z_abs, self.weight[n:], b_abs))",
      "(F.linear(z_xl, self.weight[:n], None), F.linear(z_abs, self.weight[n:], b_abs))",
      "Eq. 10: bias of the XL heads dropped", T_HEADXL),
    M("H4", "onmt_xl/core/modules/headxl.py",
      "return F.linear(z_abs, self.weight, self.bias)",
      "return F.linear(z_xl, self.weight, self.bias)",
      "tau = 0 reads Z_XL instead of Z_abs", T_HEADXL),
    M("H5", "onmt_xl/core/modules/headxl.py",
      "return F.linear(z_xl, self.weight, self.bias)",
      "return F.linear(z_abs, self.weight, self.bias)",
      "tau = H reads Z_abs instead of Z_XL", T_HEADXL),
    M("H6", "onmt_xl/core/modules/headxl.py",
      "(F.linear(z_xl, self.weight[:n], b_xl), F.linear(z_abs, self.weight[n:], b_abs))",
      "(F.linear(z_xl, self.weight[n:], b_abs), F.linear(z_abs, self.weight[:n], b_xl))",
      "Eq. 10: W^XL and W^abs rows swapped (XL heads get the last rows)", T_HEADXL),
    # Eq. 8-9 in the encoder
    M("X1", "onmt_xl/opennmt/encoders/xl_transformer.py",
      "return layer.feed_forward(context + z_abs)",
      "return layer.feed_forward(context + z_xl)",
      "HeadXL layer: residual reads Z_XL instead of Z_abs", T_ENC),
    M("X2", "onmt_xl/opennmt/encoders/xl_transformer.py",
      "packed = torch.cat((layer.layer_norm(z_xl), norm_abs), dim=-1)",
      "packed = torch.cat((norm_abs, layer.layer_norm(z_xl)), dim=-1)",
      "HeadXL layer: packed attention input in the wrong order", T_ENC),
    M("X3", "onmt_xl/opennmt/encoders/xl_transformer.py",
      "enc_out = drop(x + pe_xl)",
      "enc_out = drop(x + pe_abs)",
      "Eq. 8: InXL input adds PE_abs instead of PE_IN-XL", T_ENC),
    M("X4", "onmt_xl/opennmt/encoders/xl_transformer.py",
      "pe_xl = self.inxl(pe_abs, pe_xl)",
      "pe_xl = self.inxl(pe_xl, pe_abs)",
      "Eq. 7: PE_abs and PE_XL swapped into the fusion", T_ENC),
    M("X5", "onmt_xl/opennmt/encoders/xl_transformer.py",
      "headxl_layer_forward(next(layers), drop(x + pe_abs), drop(x + pe_xl), mask)",
      "headxl_layer_forward(next(layers), drop(x + pe_xl), drop(x + pe_abs), mask)",
      "Eq. 9: Z_abs and Z_XL swapped", T_ENC),
    M("X6", "onmt_xl/opennmt/encoders/xl_transformer.py",
      "pe_abs = absolute_pe(pos_xl.size(1), d_model, self.pe_type, pos_xl.device).expand(",
      "pe_abs = absolute_pe(pos_xl.size(1) + 1, d_model, self.pe_type, pos_xl.device)[1:].expand(",
      "Eq. 1: absolute positions 1-based", T_ENC),
    # the Relative PE baseline (Shaw et al. 2018): the encoder reads the word embeddings alone (issue 40)
    M("X7", "onmt_xl/opennmt/encoders/xl_transformer.py",
      "enc_out = self.embeddings.dropout(embed_words(self.embeddings, src))",
      "enc_out = self.embeddings(src)",
      "xl_relative: the stock embeddings' absolute PE (Eq. 1) added to the encoder's input", T_REL),
    # BTG oracle (Neubig et al. 2012 criterion)
    M("O1", "onmt_xl/core/reorder/oracle.py",
      "if cl < best_l or (cl == best_l and base_i < best_i):",
      "if cl < best_l or (cl == best_l and base_i <= best_i):",
      "oracle tie-break reversed: right-most split wins ties", T_ORACLE),
    M("O2", "onmt_xl/core/reorder/oracle.py",
      "if cl < best_l or (cl == best_l and base_i + 1 < best_i):",
      "if cl <= best_l:",
      "oracle tie-break reversed: inverted node wins ties (more inversions)", T_ORACLE),
    M("O3", "onmt_xl/core/reorder/oracle.py",
      "return int(np.triu(r[:, None] > r[None, :], k=1).sum())",
      "return int(np.triu(r[:, None] < r[None, :], k=1).sum())",
      "Kendall loss sign: counts pairs in target order", T_ORACLE),
    M("O4", "onmt_xl/core/reorder/oracle.py",
      "    r = r[r >= 0]\n    if r.size < 2:\n        return 0",
      "    if r.size < 2:\n        return 0",
      "Kendall loss counts unaligned words", T_ORACLE),
    M("O5", "onmt_xl/core/reorder/oracle.py",
      "if ranks[j] >= 0 and ranks[i] > ranks[j]:",
      "if ranks[i] > ranks[j]:",
      "oracle chart: pairs with an unaligned word count", T_ORACLE),
    M("O6", "onmt_xl/core/reorder/oracle.py",
      "cl = base_l + rect(P, s, m, m, e)  # straight",
      "cl = base_l + rect(P, m, e, s, m)  # straight",
      "oracle chart: straight and inverted costs swapped", T_ORACLE),
    M("O7", "onmt_xl/core/reorder/oracle.py",
      "if t:  # yield [m, e) first",
      "if not t:  # yield [m, e) first",
      "oracle back-pointers: inverted and straight swapped when reading the order", T_ORACLE),
    M("O8", "onmt_xl/core/reorder/oracle.py",
      "spans[i] = (j, j) if sp is None else (min(sp[0], j), max(sp[1], j))",
      "spans[i] = (j, j) if sp is None else (sp[0], max(sp[1], j))",
      "target span: lower end is the first link's, not the minimum", T_ORACLE),
    M("O9", "onmt_xl/core/reorder/oracle.py",
      "for sweep, step in sweeps if right else sweeps[::-1]:",
      "for sweep, step in sweeps[::-1] if right else sweeps:",
      "attach_null: left and right swapped", T_ORACLE),
    M("O10", "onmt_xl/core/reorder/oracle.py",
      "return int(k * (k - 1) // 2 - (counts * (counts - 1) // 2).sum())",
      "return int(k * (k - 1) // 2)",
      "ordered pairs: ties counted (tau denominator)", T_ORACLE),
    M("O11", "onmt_xl/core/reorder/oracle.py",
      "dense = {sp: r for r, sp in enumerate(sorted({sp for sp in spans if sp is not None}))}",
      "dense = {sp: r for r, sp in enumerate(sorted({sp for sp in spans if sp is not None}, key=lambda x: (x[1], "
      "x[0])))}",
      "target ranks: spans ordered by (hi, lo) instead of (lo, hi)", T_ORACLE),
    # BTG trees
    M("B1", "onmt_xl/core/reorder/btg.py",
      "first, second = (cur.right, cur.left) if cur.inverted else (cur.left, cur.right)",
      "first, second = (cur.right, cur.left) if not cur.inverted else (cur.left, cur.right)",
      "BTG: inverted and straight nodes swapped", T_BTG),
    M("B2", "onmt_xl/core/reorder/btg.py",
      "sub = node(prev, sub, inverted=False)",
      "sub = node(prev, sub, inverted=True)",
      "order_to_tree: straight merges built as inverted nodes", T_BTG),
    M("B3", "onmt_xl/core/reorder/btg.py",
      "while stack and (stack[-1][1] + 1 == lo or hi + 1 == stack[-1][0]):\n            plo, phi = stack.pop()",
      "while stack and stack[-1][1] + 1 == lo:\n            plo, phi = stack.pop()",
      "is_btg_permutation: inverted merges never made", T_BTG),
    M("B4", "onmt_xl/core/reorder/btg.py",
      "        pos[j] = k\n",
      "        pos[k] = j\n",
      "pos_XL is the order itself, not its inverse (Eq. 6 input)", T_BTG),
    M("B5", "onmt_xl/core/reorder/btg.py",
      'op, cl = ("<", ">") if cur.inverted else ("[", "]")',
      'op, cl = ("[", "]") if cur.inverted else ("<", ">")',
      "bracket form: <> and [] swapped", T_BTG),
    # reordering metrics
    M("M1", "onmt_xl/core/reorder/metrics.py",
      "return 1 + int(np.count_nonzero(p[1:] != p[:-1] + 1))",
      "return 1 + int(np.count_nonzero(p[1:] < p[:-1]))",
      "FRS chunks: any ascending step continues a chunk (not only +1)", T_METRICS),
    M("M2", "onmt_xl/core/reorder/metrics.py",
      "return 1.0 if m <= 1 else 1.0 - (count_chunks(order, ref_order) - 1) / (m - 1)",
      "return 1.0 if m <= 1 else 1.0 - (count_chunks(order, ref_order) - 1) / m",
      "FRS: divides by M instead of M - 1", T_METRICS),
    M("M3", "onmt_xl/core/reorder/metrics.py",
      "self.concordant += pairs - loss",
      "self.concordant += pairs - 2 * loss",
      "tau: the correlation coefficient instead of the concordant fraction", T_METRICS),
    M("M4", "onmt_xl/core/reorder/metrics.py",
      "frs=frs(model.chunk_breaks, n_words_minus_one),",
      "frs=frs(model.chunk_breaks, n_aligned_minus_one),",
      "FRS: micro-average over aligned words only", T_METRICS),
    M("M5", "onmt_xl/core/reorder/metrics.py",
      "mono.add(range(n), ranks, ref, pairs)",
      "mono.add(ref, ranks, ref, pairs)",
      "monotone baseline scored with the oracle order", T_METRICS),
    M("M6", "onmt_xl/core/reorder/metrics.py",
      "keep = np.asarray(ranks) >= 0",
      "keep = np.asarray(ranks) > 0",
      "FRS over aligned words drops the rank-0 word", T_METRICS),
    M("M7", "onmt_xl/core/reorder/metrics.py",
      "self.exact += int(loss == 0)",
      "self.exact += int(loss <= 1)",
      "exact match tolerates one wrong pair", T_METRICS),
    # grow-diag-final-and (Koehn et al. 2003, Moses symal)
    M("S1", "onmt_xl/core/align/symmetrize.py",
      "return _grow(forward, reverse, src_len, tgt_len, diagonal=True, final=True, both_uncovered=True)",
      "return _grow(forward, reverse, src_len, tgt_len, diagonal=True, final=True, both_uncovered=False)",
      "grow-diag-final-and: final step with 'or' (grow-diag-final)", T_ALIGN),
    M("S2", "onmt_xl/core/align/symmetrize.py",
      "neighbours = _NEIGHBOURS + (_DIAGONALS if diagonal else ())",
      "neighbours = _NEIGHBOURS",
      "grow-diag: diagonal neighbours dropped (plain grow)", T_ALIGN),
    M("S3", "onmt_xl/core/align/symmetrize.py",
      "if (ni, nj) in cand and not (tgt_cov[nj] and src_cov[ni]):",
      "if (ni, nj) in cand and not (tgt_cov[nj] or src_cov[ni]):",
      "grow: needs both words unaligned instead of either", T_ALIGN),
    M("S4", "onmt_xl/core/align/symmetrize.py",
      "for only in (fwd - rev, rev - fwd):",
      "for only in (rev - fwd, fwd - rev):",
      "final-and: reverse-only points before forward-only ones", T_ALIGN),
    M("S5", "onmt_xl/core/align/symmetrize.py",
      "cur = sorted((j, i) for i, j in fwd & rev)",
      "cur = sorted((j, i) for i, j in fwd | rev)",
      "growing starts from the union instead of the intersection", T_ALIGN),
    M("S6", "onmt_xl/core/align/symmetrize.py",
      "if pos <= k:  # inserted before the scan position",
      "if pos < k:  # inserted before the scan position",
      "grow: scan position not advanced past a point inserted at it (visits a point twice)", T_ALIGN),
    M("S7", "onmt_xl/core/align/symmetrize.py",
      "_DIAGONALS = ((-1, -1), (-1, 1), (1, -1), (1, 1))",
      "_DIAGONALS = ((1, 1), (1, -1), (-1, 1), (-1, -1))",
      "grow-diag: diagonal neighbours tried in the reverse of symal's order", T_ALIGN),
    # Not listed, because equivalent (found while writing S7): (a) visiting the final-and points in (source, target)
    # instead of (target, source) order: two points that compete for a word share its source (both orders then sort
    # them by target) or its target (both sort by source), and the greedy result depends only on the order of
    # competing points; (b) reversing the four direct neighbours: each needs a different word free (the one it does
    # not share with the current point), so adding one never blocks another.
    # AER (Och & Ney 2003)
    M("A1", "onmt_xl/core/align/aer.py",
      "aer=1.0 - _ratio(n_as + n_ap, n_a + n_s),",
      "aer=1.0 - _ratio(n_as + n_ap, n_a + n_p),",
      "AER denominator |A| + |P| instead of |A| + |S|", T_ALIGN),
    M("A2", "onmt_xl/core/align/aer.py",
      "precision=_ratio(n_ap, n_a),\n        recall=_ratio(n_as, n_s),",
      "precision=_ratio(n_as, n_a),\n        recall=_ratio(n_ap, n_s),",
      "precision/recall: sure and possible swapped", T_ALIGN),
    M("A3", "onmt_xl/core/align/aer.py",
      "p = set(p) | s\n",
      "p = set(p)\n",
      "sure links not counted as possible (P := P | S dropped)", T_ALIGN),
    M("A4", "onmt_xl/core/align/aer.py",
      '        if sep == "-":\n            sure.add((i, j))',
      '        if sep == "p":\n            sure.add((i, j))',
      "gold reader: 'p' links read as sure", T_ALIGN),
    M("A5", "onmt_xl/core/align/aer.py",
      "base = 1 if one_indexed else 0",
      "base = 0 if one_indexed else 1",
      "gold reader: indexing convention inverted", T_ALIGN),
]

# --- modules rewritten after the first mutation run (disan 4241c87; inxl, explicit_reordering, reordering_embedding
# bf2b2f1). Kept apart: when these modules change again, entries here go stale first; update the snippets and re-run
# ``--block rewritten``.

MUTATIONS += [
    M("I1", "onmt_xl/core/modules/inxl.py",
      "return torch.tanh(self._project(pe_abs, self.U) + self._project(pe_xl, self.V))",
      "return torch.tanh(self._project(pe_abs, self.V) + self._project(pe_xl, self.U))",
      "Eq. 7: U and V swapped", T_INXL, "rewritten"),
    M("I2", "onmt_xl/core/modules/inxl.py",
      "return torch.tanh(self._project(pe_abs, self.U) + self._project(pe_xl, self.V))",
      "return self._project(pe_abs, self.U) + self._project(pe_xl, self.V)",
      "Eq. 7: tanh dropped", T_INXL, "rewritten"),
    M("I3", "onmt_xl/core/modules/inxl.py",
      "return (pairs[..., 0:1] * w[:, 0, :] + pairs[..., 1:2] * w[:, 1, :]).flatten(-2)",
      "return (pairs[..., 0:1] * w[:, :, 0] + pairs[..., 1:2] * w[:, :, 1]).flatten(-2)",
      "Eq. 7 block fusion: (sin, cos) @ W^T instead of @ W", T_INXL, "rewritten"),
    M("I4", "onmt_xl/core/modules/inxl.py",
      "            return pe @ w\n",
      "            return pe @ w.t()\n",
      "Eq. 7 full fusion: PE @ U^T instead of PE @ U", T_INXL, "rewritten"),
    M("D1", "onmt_xl/core/modules/disan.py",
      "for allowed in ((idx[None, :] < idx[:, None]), (idx[None, :] > idx[:, None])):",
      "for allowed in ((idx[:, None] < idx[None, :]), (idx[:, None] > idx[None, :])):",
      "DiSAN: masks transposed (forward heads read later tokens)", T_DISAN, "rewritten"),
    M("D2", "onmt_xl/core/modules/disan.py",
      "masks.append(~(allowed | (eye & empty)))",
      "masks.append(~(allowed | eye))",
      "DiSAN: diagonal always allowed (Shen et al. exclude it)", T_DISAN, "rewritten"),
    M("D3", "onmt_xl/core/modules/disan.py",
      "masks.append(~(allowed | (eye & empty)))",
      "masks.append(~allowed)",
      "DiSAN: no self fallback for a token with no key in its direction", T_DISAN, "rewritten"),
    M("D4", "onmt_xl/core/modules/disan.py",
      "return gate * s + (1 - gate) * h",
      "return gate * h + (1 - gate) * s",
      "DiSAN fusion gate: F and 1 - F swapped", T_DISAN, "rewritten"),
    M("D5", "onmt_xl/core/modules/disan.py",
      "gate = torch.sigmoid(s * self.w_s + h * self.w_h + self.b)",
      "gate = torch.sigmoid(s * self.w_h + h * self.w_s + self.b)",
      "DiSAN fusion gate: w_s and w_h swapped", T_DISAN, "rewritten"),
    M("E1", "onmt_xl/core/modules/explicit_reordering.py",
      "sigma = window / 2\n    s = torch.arange(pe.size(0), device=b.device, dtype=b.dtype)\n    diff =",
      "sigma = window\n    s = torch.arange(pe.size(0), device=b.device, dtype=b.dtype)\n    diff =",
      "Eq. 6: sigma = D instead of D/2", T_EXGRE, "rewritten"),
    M("E2", "onmt_xl/core/modules/explicit_reordering.py",
      "span = (src_len - 1).clamp(min=0).to(h.dtype)[:, None]",
      "span = src_len.clamp(min=0).to(h.dtype)[:, None]",
      "Eq. 5: J instead of J - 1 (0-based positions)", T_EXGRE, "rewritten"),
    M("E3", "onmt_xl/core/modules/explicit_reordering.py",
      "return g * h_bar + (1 - g) * h",
      "return g * h + (1 - g) * h_bar",
      "Eq. 11: gate g and 1 - g swapped", T_EXGRE, "rewritten"),
    M("E4", "onmt_xl/core/modules/explicit_reordering.py",
      "(diff.abs() <= window)",
      "(diff.abs() < window)",
      "Eq. 6: window end points excluded", T_EXGRE, "rewritten"),
    M("E5", "onmt_xl/core/modules/explicit_reordering.py",
      "return span * torch.sigmoid(self.v(torch.tanh(self.W(layer_normalised(h))))).squeeze(-1)",
      "return span * torch.sigmoid(self.v(self.W(layer_normalised(h)))).squeeze(-1)",
      "Eq. 5: tanh dropped", T_EXGRE, "rewritten"),
    M("E6", "onmt_xl/core/modules/explicit_reordering.py",
      "return (F.cosine_similarity(pr, re, dim=-1) * valid).sum()",
      "return F.cosine_similarity(pr, re, dim=-1).sum()",
      "Eq. 9/12: padded positions counted in Sim", T_EXGRE, "rewritten"),
    M("E7", "onmt_xl/core/modules/explicit_reordering.py",
      "g = torch.sigmoid(self.U_g(layer_normalised(h)) + self.W_g(layer_normalised(h_bar)))",
      "g = torch.sigmoid(self.U_g(layer_normalised(h_bar)) + self.W_g(layer_normalised(h)))",
      "Eq. 10: U_g and W_g read swapped inputs", T_EXGRE, "rewritten"),
    M("E8", "onmt_xl/core/modules/explicit_reordering.py",
      "outside = s[None, None, :] >= src_len.to(b.dtype)[:, None, None]",
      "outside = s[None, None, :] > src_len.to(b.dtype)[:, None, None]",
      "soft window: position J (past the sentence) mixed in", T_EXGRE, "rewritten"),
    M("E9", "onmt_xl/core/modules/explicit_reordering.py",
      "return ((((b - pos_xl.to(b.dtype)) / span) ** 2) * valid).sum()",
      "return ((((b - pos_xl.to(b.dtype)) / span) ** 2)).sum()",
      "position loss: padded words counted", T_EXGRE, "rewritten"),
    M("E10", "onmt_xl/core/modules/reordering_embedding.py",
      "return F.layer_norm(x, x.shape[-1:], eps=eps)",
      "return x",
      "post-norm mapping: inputs of Eq. 5/6/10 not normalised",
      f"tests/test_baselines.py {EQ}::TestExplicitReordering {EQ}::TestReorderingEmbedding "
      "-k 'ExplicitReordering or ReorderingEmbedding or penalty or reordering or gaussian or exgre'", "rewritten"),
    M("E11", "onmt_xl/core/modules/explicit_reordering.py",
      "x = h + pr  # Eq. 7",
      "x = h  # Eq. 7",
      "Eq. 7: PR^n not added to the layer output", T_EXGRE_STACK, "rewritten"),
    M("E12", "onmt_xl/core/modules/explicit_reordering.py",
      "    h = x0\n    for layer in layers:",
      "    h = x\n    for layer in layers:",
      "ReFSR (Eq. 2): the plain pass starts from ExGRE's output, not the source", T_EXGRE_STACK, "rewritten"),
    M("R1", "onmt_xl/core/modules/reordering_embedding.py",
      "inner = self.W(layer_normalised(h_prev)) + self.W_tilde(layer_normalised(h_tilde))",
      "inner = self.W(layer_normalised(h_tilde)) + self.W_tilde(layer_normalised(h_prev))",
      "Eq. 6: W and W~ read swapped inputs", T_RE, "rewritten"),
    M("R2", "onmt_xl/core/modules/reordering_embedding.py",
      "return torch.sigmoid(self.V(torch.tanh(inner)))",
      "return torch.sigmoid(self.V(torch.sigmoid(inner)))",
      "Eq. 6: inner tanh replaced by sigmoid", T_RE, "rewritten"),
    M("R3", "onmt_xl/opennmt/decoders/reordering_embedding.py",
      "c = h_tilde + pe * self.penalty(layer_in, h_tilde)  # Eq. 6-8",
      "c = h_tilde  # Eq. 6-8",
      "decoder REs: the reordering embedding dropped from the query (Eq. 8: C = H~)", T_DEC_RE, "rewritten"),
]

# --- the decisions: the statistics and rules that turn runs into the reports' verdicts --------------------------

T_STATS = "tests/test_stats.py"
T_XLPOS = "tests/test_xlpos_report.py"
T_CLAIMS = "tests/test_papers.py -k 'verdict or interval or seed'"
T_CROSSFIT = "tests/test_crossfit_positions.py -k 'never_saw or fold_rule or two_folds'"

MUTATIONS += [
    M("V1", "onmt_xl/experiments/stats.py",
      'running = max(running, min(1.0, (m - i) * p_values[name]))',
      'running = max(running, min(1.0, m * p_values[name]))',
      "Holm: Bonferroni's m for every p (no step-down)", T_STATS, "decisions"),
    M("V2", "onmt_xl/experiments/stats.py",
      'running = max(running, min(1.0, (m - i) * p_values[name]))',
      'running = min(1.0, (m - i) * p_values[name])',
      'Holm: adjusted p-values not kept monotone', T_STATS, "decisions"),
    M("V3", "onmt_xl/experiments/stats.py",
      'p = min(1.0, (extreme + 1) / (n_samples + 1))',
      'p = min(1.0, extreme / n_samples)',
      'bootstrap p: the observed replicate not counted (p can be 0)', T_STATS, "decisions"),
    M("V4", "onmt_xl/experiments/stats.py",
      'base_runs = rng.integers(0, len(baseline), len(baseline))',
      'base_runs = np.arange(len(baseline))',
      "seed-pooled bootstrap: the baseline's seed runs never resampled", T_STATS, "decisions"),
    M("V5", "onmt_xl/experiments/stats.py",
      'sum(max(0.0, pooled - v) / k for k, v in sides if 0 < k < full)',
      'sum(max(0.0, pooled - v) for k, v in sides if 0 < k < full)',
      "few-seed rows: the pooled seed variance not divided by the side's runs", T_STATS, "decisions"),
    M("V6", "onmt_xl/experiments/stats.py",
      'return SeedCarried(new_low, new_high, max(p, p_normal), added)',
      'return SeedCarried(new_low, new_high, p_normal, added)',
      "few-seed rows: p may fall below the bootstrap's", T_STATS, "decisions"),
    M("V7", "onmt_xl/experiments/stats.py",
      'level = alpha * p / p_holm',
      'level = alpha',
      'Holm interval: at the unadjusted level', T_STATS, "decisions"),
    M("V8", "onmt_xl/experiments/papers.py",
      '    if near > 0:\n        return REPRODUCED',
      '    if near >= 0:\n        return REPRODUCED',
      "claims' verdict: an interval touching 0 reads 'reproduced'", T_CLAIMS, "decisions"),
    M("V9", "onmt_xl/experiments/papers.py",
      'return SMALLER if size > far else LARGER if size < near else None',
      'return SMALLER if size > near else LARGER if size < far else None',
      "claims' verdict: the paper's size judged against the wrong end", T_CLAIMS, "decisions"),
    M("V10", "onmt_xl/experiments/xlpos_report.py",
      '    if high < paper_gain:',
      '    if high <= paper_gain:',
      "third look's rule: an upper end at the paper's gain reads 'excluded'", T_XLPOS, "decisions"),
    M("V11", "onmt_xl/experiments/xlpos_report.py",
      '"default": "crossfit" if c.low > 0 else "preorderer"',
      '"default": "crossfit" if c.delta > 0 else "preorderer"',
      'pipeline default: the point estimate instead of the lower bound', T_XLPOS, "decisions"),
    M("V12", "onmt_xl/core/reorder/crossfit.py",
      'train_lines = [k for k in usable if fold[k] != f]',
      'train_lines = list(usable)',
      "cross-fitting: each fold's preorderer trained on every line (its own fold seen)", T_CROSSFIT, "decisions"),
    M("V13", "onmt_xl/core/reorder/crossfit.py",
      'return int.from_bytes(digest[:8], "big") % folds',
      'return int.from_bytes(digest[:8], "little") % folds',
      "cross-fitting: the fold rule reads its 8 bytes little-endian (the same fold modulo 5, not modulo 4 or 7)",
      T_CROSSFIT, "decisions"),
]


# --- running ---------------------------------------------------------------------------------------------------


def _copy_tree(dst: Path, rev: Optional[str]) -> None:
    """The repository's files the tests need, from the working tree or from git revision ``rev``."""
    dst.mkdir(parents=True, exist_ok=True)
    if rev:
        names = [n for n in COPIED
                 if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{rev}:{n}"],
                                   capture_output=True).returncode == 0]
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, *names], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(dst)], input=archive.stdout, check=True)
        return
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "mutants")
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dst / name)


def _env(root: Path) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["NUMBA_CACHE_DIR"] = str(root / ".numba_cache")
    env.setdefault("PYTHONWARNINGS", "ignore")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _pytest(root: Path, tests: str, timeout: float, nice: int) -> Tuple[int, float, str]:
    """``(returncode, seconds, output tail)``; returncode ``None``-like -9 on timeout."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *shlex.split(tests)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=root, env=_env(root), capture_output=True, text=True, timeout=timeout,
                              preexec_fn=(lambda: os.nice(nice)) if nice else None)
    except subprocess.TimeoutExpired:
        return -9, time.perf_counter() - start, "timeout"
    return proc.returncode, time.perf_counter() - start, (proc.stdout + proc.stderr)[-3000:]


def apply(root: Path, m: Mutation) -> Optional[str]:
    """Apply ``m`` in the copy at ``root``; returns why it could not (stale), else None."""
    path = root / m.file
    if not path.exists():
        return f"{m.file} does not exist"
    text = path.read_text(encoding="utf-8")
    n = text.count(m.old)
    if n != 1:
        return f"old snippet found {n} times in {m.file}"
    path.write_text(text.replace(m.old, m.new), encoding="utf-8")
    return None


def stale_reason(m: Mutation) -> Optional[str]:
    path = REPO / m.file
    if not path.exists():
        return f"{m.file} does not exist"
    n = path.read_text(encoding="utf-8").count(m.old)
    return None if n == 1 else f"old snippet found {n} times"


def check_isolation(base: Path, nice: int) -> List[str]:
    """The copy is what gets imported (after ``import onmt``, through the hook) and a broken copy fails."""
    problems = []
    probe = subprocess.run(
        [sys.executable, "-c", "import onmt, onmt_xl, onmt_xl.core.positions as p; print(onmt_xl.__file__); "
         "print(p.__file__)"],
        cwd=base, env=_env(base), capture_output=True, text=True)
    files = probe.stdout.split()
    if probe.returncode != 0 or len(files) != 2 or not all(
            Path(f).resolve().is_relative_to(base.resolve()) for f in files):
        problems.append(f"the copy is not what gets imported: {probe.stdout.strip()} {probe.stderr[-500:]}")
    canary = base.parent / "canary"
    shutil.copytree(base, canary)
    pos = canary / CANARY
    pos.write_text(pos.read_text(encoding="utf-8") + '\nraise RuntimeError("mutation_check canary")\n',
                   encoding="utf-8")
    rc, _, out = _pytest(canary, "tests/test_positions.py", 600, nice)
    if rc == 0 or "mutation_check canary" not in out:
        problems.append(f"a broken copy did not make tests/test_positions.py fail (rc {rc}): {out[-500:]}")
    shutil.rmtree(canary, ignore_errors=True)
    return problems


@dataclass
class Result:
    m: Mutation
    status: str  # caught, timeout, MISSED, STALE, ERROR
    seconds: float = 0.0
    detail: str = ""


def run_one(base: Path, work: Path, m: Mutation, baseline: Dict[str, Tuple[int, float, str]], nice: int,
            tag: str = "") -> Result:
    root = work / f"{m.id}{tag}"
    shutil.copytree(base, root)
    try:
        why = apply(root, m)
        if why:
            return Result(m, "STALE", 0.0, why)
        rc0, secs0, out0 = baseline[m.tests]
        if rc0 != 0:
            last0 = out0.strip().splitlines()[-1] if out0.strip() else ""
            return Result(m, "ERROR", 0.0, f"baseline fails (rc {rc0}): {last0}")
        rc, secs, out = _pytest(root, m.tests, max(60.0, 10 * secs0 + 30), nice)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    if rc == -9:
        return Result(m, "timeout", secs, "counted as caught")
    if rc in (1, 2):  # tests failed, or collection/import errors (the bug broke the module)
        return Result(m, "caught", secs, last)
    if rc == 0:
        return Result(m, "MISSED", secs, last)
    return Result(m, "ERROR", secs, f"pytest rc {rc}: {last}")


def drop_tests(tests: str, path: str) -> str:
    """The selection ``tests`` without the arguments naming test file ``path`` (``path`` or ``path::Class``)."""
    kept = [a for a in shlex.split(tests) if not (a == path or a.startswith(path + "::"))]
    return " ".join(shlex.quote(a) for a in kept)


def _status(r: Optional[Result]) -> str:
    if r is None:
        return "(same selection)"
    status = r.status if r.status in ("caught", "timeout") else f"**{r.status}**"
    return status + (f" ({r.detail})" if r.status in ("STALE", "ERROR") else "")


def table(results: Sequence[Result], without: Dict[str, Dict[str, Optional[Result]]] = None,
          tests_column: bool = True) -> str:
    """Markdown table of ``results``; ``without[path][id]``: the same bug with ``path`` dropped from its selection
    (None where the selection does not name ``path``), one column per path."""
    without = without or {}
    head = ["id", "module", "deliberate bug"] + (["tests"] if tests_column else []) + ["whole selection"]
    head += [f"without `{Path(w).name}`" for w in without] + ["s"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in results:
        row = [r.m.id, f"`{r.m.file.replace('onmt_xl/', '')}`", r.m.description.replace("|", "\\|")]
        if tests_column:
            row.append("`" + r.m.tests.replace("|", "\\|") + "`")
        row.append(_status(r))
        row += [_status(col.get(r.m.id)) for col in without.values()]
        row.append(f"{r.seconds:.1f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary(results: Sequence[Result]) -> str:
    count = {k: sum(r.status == k for r in results) for k in ("caught", "timeout", "MISSED", "STALE", "ERROR")}
    caught = count["caught"] + count["timeout"]
    ran = caught + count["MISSED"]
    score = f"{100 * caught / ran:.1f} %" if ran else "n/a"
    return (f"{len(results)} mutation{'s' if len(results) != 1 else ''}: {caught} caught ({count['timeout']} by "
            f"timeout), {count['MISSED']} missed, {count['STALE']} stale, {count['ERROR']} errors; mutation score "
            f"{caught}/{ran} = {score}")


BLOCKS = (
    ("main", "Stable equation modules"),
    ("rewritten", "Modules rewritten during issue 17, and the decoder's reordering embeddings (separate block: "
                  "re-sync when they change)"),
    ("decisions", "The decisions: the statistics and rules that turn runs into the reports' verdicts"),
)

REPORT_HEAD = """# Mutation testing of the equation modules and the decision rules (hand-listed bugs)

Generated by `tools/ci/mutation_check.py --report`; do not edit by hand, rerun the command below.
Each entry is a deliberate bug (an exact snippet of the source replaced by a wrong one) applied alone to a copy of
`onmt_xl/ tests/ tools/ pyproject.toml`, with the entry's test selection run there (`pytest -x -q`):
*caught* = the tests failed (a timeout counts as caught), **MISSED** = they passed with the bug in place,
**STALE** = the snippet is not in the source exactly once (the list is out of sync; counts as a failure),
**ERROR** = the selection could not run or already fails unmutated. A "without" column runs the same bug with that
test file dropped from the selection (only where the selection names it): what the rest of the suite catches.
Test selections are in the tool. Before any bug runs, the tool proves the copy is what the tests import: after
`import onmt` (the `onmt_xl_hook.pth` hook; an installed `onmt_xl` sits in site-packages) a probe must print the
copy's files, and a canary copy whose `positions.py` raises at import must make `tests/test_positions.py` fail.
"""

REPORT_HISTORY = """## Earlier measurements (not regenerated here)

mutmut 3.8.1 scores of the pure equation modules, the survivors classified as equivalent, and the weak
assertions replaced during issue 17 were measured on older trees (up to `8018c05`, when DiSAN, RE, ExGRE/ReFSR
and the encoder-free forward code still lived in `encoders/baselines.py`); they are kept in the history:
`git show 82e0317:reports/mutation.md`. The mutmut command is in `pyproject.toml` (`[tool.mutmut]`).
"""


def _git(*args: str) -> str:
    proc = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def report(results: Sequence[Result], without: Dict[str, Dict[str, Optional[Result]]], baseline, *, command: str,
           started: str, finished: str, seconds: float, rev: Optional[str], jobs: int, nice: int) -> str:
    if rev:
        source = f"git revision `{_git('rev-parse', '--short', rev) or rev}`"
    else:
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", *COPIED],
                                capture_output=True, text=True).stdout
        dirty = [line[3:] for line in status.splitlines() if line.strip()]
        named = ", ".join(f"`{d}`" for d in dirty[:8]) + (f" and {len(dirty) - 8} more" if len(dirty) > 8 else "")
        source = f"the working tree at `{_git('rev-parse', '--short', 'HEAD')}`" + (
            f", with uncommitted changes in {named}" if dirty else " (clean)")
    import torch  # noqa: PLC0415 - only for the record of versions

    parts = [REPORT_HEAD, "## Run\n",
             f"{started} to {finished} ({seconds / 60:.1f} min), copy of {source}; Python "
             f"{sys.version.split()[0]}, torch {torch.__version__}, {os.cpu_count()} CPUs, `--jobs {jobs}`, "
             f"pytest at nice {nice}.\n\n```sh\n{command}\n```\n",
             "Isolation check: passed (the copy's `onmt_xl` is imported; the canary copy fails "
             "`tests/test_positions.py`).\n",
             "Every selection unmutated (it must pass):\n",
             "| selection | result | s |\n| --- | --- | --- |"]
    for t, (rc, secs, _) in sorted(baseline.items()):
        sel, result = t.replace("|", "\\|"), "passes" if rc == 0 else f"**fails (rc {rc})**"
        parts[-1] += f"\n| `{sel}` | {result} | {secs:.1f} |"
    parts[-1] += "\n"
    parts.append("## Results\n")
    for block, title in BLOCKS:
        rs = [r for r in results if r.m.block == block]
        if not rs:
            continue
        parts.append(f"### {title}\n\n{table(rs, without, tests_column=False)}\n\n{block}: {summary(rs)}.")
        for path, col in without.items():
            ws = [col[r.m.id] if col.get(r.m.id) is not None else r for r in rs]
            parts[-1] += f" Without `{path}`: {summary(ws)}."
        parts[-1] += "\n"
    parts.append(f"**All: {summary(results)}.**" + "".join(
        f" Without `{path}`: {summary([col[r.m.id] if col.get(r.m.id) is not None else r for r in results])}."
        for path, col in without.items()) + "\n")
    parts.append(REPORT_HISTORY)
    return "\n".join(parts)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", metavar="ID", help="run only these entries")
    ap.add_argument("--block", choices=("main", "rewritten", "decisions", "all"), default="all",
                    help="main: the stable equation modules; rewritten: disan, inxl, explicit_reordering, "
                         "reordering_embedding (encoder and decoder); decisions: the statistics and verdict rules")
    ap.add_argument("--jobs", type=int, default=1, help="mutations run in parallel (default 1)")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the pytest processes (default 10; 0 = none)")
    ap.add_argument("--rev", default=None, help="copy this git revision instead of the working tree")
    ap.add_argument("--exclude", default=None, metavar="PATH",
                    help="drop this test file from every selection (e.g. to measure the suite without "
                         "tests/test_equations_mutants.py)")
    ap.add_argument("--without", action="append", default=[], metavar="PATH",
                    help="also run each bug whose selection names this test file without it (one column each; "
                         "repeatable)")
    ap.add_argument("--list", action="store_true", help="print the list (stale entries marked) and exit")
    ap.add_argument("--out", default=None, help="also write the markdown table to this file")
    ap.add_argument("--report", default=None, metavar="PATH",
                    help="write the full markdown report (reports/mutation.md) to this file")
    args = ap.parse_args(argv)

    ids = [m.id for m in MUTATIONS]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        ap.error(f"duplicate mutation ids: {sorted(dup)}")
    chosen = [m for m in MUTATIONS if args.block in ("all", m.block)]
    if args.only:
        unknown = set(args.only) - set(ids)
        if unknown:
            ap.error(f"unknown ids: {sorted(unknown)}")
        chosen = [m for m in chosen if m.id in args.only]
    if args.exclude:
        chosen = [Mutation(m.id, m.file, m.old, m.new, m.description, drop_tests(m.tests, args.exclude), m.block)
                  for m in chosen]
    if args.list:
        for m in chosen:
            why = stale_reason(m)
            print(f"{m.id:4s} {m.block:9s} {m.file:42s} {m.description}" + (f"  [STALE: {why}]" if why else ""))
        return 0
    # (column, mutation) pairs to run: "" is the whole selection, a path the selection without that file
    runs: List[Tuple[str, Mutation]] = [("", m) for m in chosen]
    for path in args.without:
        for m in chosen:
            reduced = drop_tests(m.tests, path)
            if reduced != " ".join(shlex.quote(a) for a in shlex.split(m.tests)):
                runs.append((path, Mutation(m.id, m.file, m.old, m.new, m.description, reduced, m.block)))

    started_at = time.time()
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory(prefix="mutation_check_") as tmp:
        tmp_path = Path(tmp)
        base = tmp_path / "base"
        _copy_tree(base, args.rev)
        problems = check_isolation(base, args.nice)
        if problems:
            for p in problems:
                print(f"isolation check failed: {p}", file=sys.stderr)
            return 2
        print("isolation check passed: the copy's onmt_xl is imported, a broken copy fails the tests", file=sys.stderr)
        selections = sorted({m.tests for _, m in runs})
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            outs = list(pool.map(lambda t: _pytest(base, t, 1200, args.nice), selections))
        baseline = dict(zip(selections, outs))
        for t, (rc, secs, out) in baseline.items():
            print(f"baseline {'ok  ' if rc == 0 else f'FAILS (rc {rc})'} {secs:6.1f} s  {t}", file=sys.stderr,
                  flush=True)
            if rc != 0:
                print(out[-1500:], file=sys.stderr)
        work = tmp_path / "work"
        work.mkdir()
        done = [0]

        def one(job: Tuple[int, Tuple[str, Mutation]]) -> Result:
            k, (col, m) = job
            r = run_one(base, work, m, baseline, args.nice, tag=f"_{k}")
            done[0] += 1
            where = f" [without {col}]" if col else ""
            print(f"[{done[0]}/{len(runs)}] {m.id:4s} {r.status:7s} {r.seconds:6.1f} s  {m.description}{where}",
                  file=sys.stderr, flush=True)
            return r

        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            outcomes = list(pool.map(one, enumerate(runs)))

    results = [r for (col, _), r in zip(runs, outcomes) if not col]
    without: Dict[str, Dict[str, Optional[Result]]] = {path: {} for path in args.without}
    for (col, m), r in zip(runs, outcomes):
        if col:
            without[col][m.id] = r
    command = "nice -n 10 python3 tools/ci/mutation_check.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    source = f"git revision {args.rev}" if args.rev else "the working tree"
    blocks = []
    for block, title in BLOCKS:
        rs = [r for r in results if r.m.block == block]
        if rs:
            blocks.append(f"### {title}\n\n{table(rs, without)}\n\n**{summary(rs)}**")
    text = (f"Hand-listed mutations, {started}, copy of {source}; command: `{command}`\n\n"
            + "\n\n".join(blocks) + f"\n\nAll: **{summary(results)}**\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    if args.report:
        finished = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        Path(args.report).write_text(
            report(results, without, baseline, command=command, started=started, finished=finished,
                   seconds=time.time() - started_at, rev=args.rev, jobs=args.jobs, nice=args.nice),
            encoding="utf-8")
    return 0 if all(r.status in ("caught", "timeout") for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
