"""Exact checks of the equation modules that the rest of the suite left loose (found by tools/ci/mutation_check.py,
reports/mutation.md, and by mutmut: ``git show 82e0317:reports/mutation.md``). Every expected value is computed by hand or by an independent reference
written here, never by the code under test. One class per module: the mutation tool selects them by class."""

import itertools
import math
import random

import numpy as np
import pytest
import torch

from onmt_xl.core.positions import sinusoid

# --- Eq. 1 / Eq. 6: onmt_xl/core/positions.py --------------------------------------------------------------------


class TestPositions:
    def test_float_positions_by_hand(self):
        # ExGRE's b_j are real numbers: Eq. 1 with p = 0.5, 2.25 and d = 4: [sin p, cos p, sin p/100, cos p/100]
        pe = sinusoid(torch.tensor([0.5, 2.25]), 4)
        for row, p in zip(pe, (0.5, 2.25)):
            assert row.tolist() == pytest.approx([math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)], abs=1e-6)

    def test_interleaved_frequencies_by_hand(self):
        # d = 8: frequencies 10000^(-2i/8) = 1, 0.1, 0.01, 0.001, each as (sin, cos)
        got = sinusoid(torch.tensor([7]), 8)[0].tolist()
        want = [f(7 * w) for w in (1, 0.1, 0.01, 0.001) for f in (math.sin, math.cos)]
        assert got == pytest.approx(want, abs=1e-6)

    def test_concat_by_hand(self):
        # OpenNMT's SinusoidalConcat: all sines then all cosines, frequencies 10000^(-i/(d/2 - 1)): d = 4 -> 1, 1e-4
        got = sinusoid(torch.tensor([3]), 4, "SinusoidalConcat")[0].tolist()
        assert got == pytest.approx([math.sin(3), math.sin(3e-4), math.cos(3), math.cos(3e-4)], abs=1e-6)

    def test_table_is_cached_grown_geometrically_and_holds_the_largest_position(self, monkeypatch):
        from onmt_xl.core import positions

        monkeypatch.setattr(positions, "_TABLES", {})  # a cold cache: the table is built here, not by earlier tests
        first = positions.sinusoid_table(10, 4)
        assert first.size(0) == 256 and positions.sinusoid_table(200, 4) is first  # built once, then reused
        assert positions.sinusoid_table(256, 4) is first  # 256 rows hold positions 0 … 255: no growth yet
        assert positions.sinusoid_table(300, 4).size(0) == 512  # grown to twice its size (amortised)
        assert positions.sinusoid_table(2000, 4).size(0) == 2000  # or to the request when that is larger
        monkeypatch.setattr(positions, "_TABLES", {})
        for p in (300, 256, 511, 512):  # the row of the largest position must exist right after each growth
            row = sinusoid(torch.tensor([0, p]), 4)[1].tolist()
            assert row == pytest.approx([math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)], abs=1e-4)

    def test_empty_and_negative_positions(self):
        assert sinusoid(torch.zeros(0, dtype=torch.long), 4).shape == (0, 4)
        assert sinusoid(torch.zeros(2, 0, dtype=torch.long), 6).shape == (2, 0, 6)
        row = sinusoid(torch.tensor([-3]), 4)[0].tolist()  # not a table row: the formula
        assert row == pytest.approx([math.sin(-3), math.cos(-3), math.sin(-0.03), math.cos(-0.03)], abs=1e-6)

    def test_positions_past_the_cached_table_by_hand(self):
        # the first table holds 256 rows; 1000 grows it, and the largest position must be in it
        pe = sinusoid(torch.tensor([[1000, 2], [999, 0]]), 4)
        for p, row in ((1000, pe[0, 0]), (2, pe[0, 1]), (999, pe[1, 0]), (0, pe[1, 1])):
            assert row.tolist() == pytest.approx([math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)], abs=1e-4)


# --- Eq. 9-11: onmt_xl/core/modules/headxl.py ----------------------------------------------------------------------


def _mha(heads=4, dim=16, seed=0):
    from onmt.modules.multi_headed_attn import MultiHeadedAttention

    attn = MultiHeadedAttention(heads, dim, dropout=0.0, attn_type="self", is_decoder=False)
    torch.manual_seed(seed)
    for p in attn.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return attn.eval()


def _attention_by_hand(attn, inputs_per_head, mask):
    """Eq. 10-11 written out: head h projects its own input with rows h·dph … (h+1)·dph of W_Q, W_K, W_V,
    scaled dot-product attention over unmasked keys, heads concatenated, then W_O. ``(batch, len, d)``."""
    dph = attn.dim_per_head
    heads = []
    for h, z in enumerate(inputs_per_head):
        rows = slice(h * dph, (h + 1) * dph)
        q, k, v = (z @ lin.weight[rows].T + (lin.bias[rows] if lin.bias is not None else 0)
                   for lin in (attn.linear_query, attn.linear_keys, attn.linear_values))
        scores = (q @ k.transpose(1, 2)) / math.sqrt(dph)
        scores = scores.masked_fill(mask[:, 0], float("-inf"))
        heads.append(torch.softmax(scores, dim=-1) @ v)
    return attn.final_linear(torch.cat(heads, dim=-1))


class TestHeadXL:
    def test_head_split_linear_by_hand(self):
        from onmt_xl.core.modules.headxl import HeadSplitLinear

        lin = torch.nn.Linear(2, 3)
        with torch.no_grad():
            lin.weight.copy_(torch.tensor([[1.0, 2.0], [0.0, -1.0], [3.0, 1.0]]))
            lin.bias.copy_(torch.tensor([0.5, -0.5, 1.0]))
        split = HeadSplitLinear.from_linear(lin, 1)  # output 0 reads Z_XL, outputs 1-2 read Z_abs
        packed = torch.tensor([[1.0, 1.0, 2.0, -1.0]])  # Z_XL = (1, 1), Z_abs = (2, -1)
        # row 0 on Z_XL: 1 + 2 + 0.5; rows 1, 2 on Z_abs: 0 + 1 - 0.5, 6 - 1 + 1
        assert split(packed)[0].tolist() == pytest.approx([3.5, 0.5, 6.0])
        assert HeadSplitLinear.from_linear(lin, 0)(packed)[0].tolist() == pytest.approx([0.5, 0.5, 6.0])  # all Z_abs
        assert HeadSplitLinear.from_linear(lin, 3)(packed)[0].tolist() == pytest.approx([3.5, -1.5, 5.0])  # all Z_XL

    @pytest.mark.parametrize("tau", [0, 1, 3, 4])
    def test_headxl_attention_by_hand(self, tau):
        from onmt_xl.core.modules.headxl import make_headxl_attention

        torch.manual_seed(1)
        z_xl, z_abs = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
        mask = torch.zeros(2, 1, 5, 5, dtype=torch.bool)
        mask[1, :, :, 3:] = True
        attn = make_headxl_attention(_mha(), tau)
        assert attn.linear_query.n_first == attn.linear_keys.n_first == attn.linear_values.n_first == tau * 4
        assert attn.xl_heads == tau
        packed = torch.cat((z_xl, z_abs), dim=-1)
        with torch.no_grad():
            got, _ = attn(packed, packed, packed, mask=mask)
            want = _attention_by_hand(attn, [z_xl] * tau + [z_abs] * (4 - tau), mask)
        assert torch.allclose(got[0], want[0], atol=1e-5)
        assert torch.allclose(got[1, :3], want[1, :3], atol=1e-5)


# --- Eq. 8-9 in onmt_xl/opennmt/encoders/xl_transformer.py --------------------------------------------------------------


class TestXLEncoder:
    @pytest.mark.parametrize("tau", [1, 2])
    def test_headxl_encoder_by_hand(self, tau):
        """Eq. 9: Z_XL = X + PE(pos_XL), Z_abs = X + PE(0..T-1); layer 1 (pre-norm): heads < τ attend over
        LN(Z_XL), the rest over LN(Z_abs), and the residual path carries Z_abs; later layers are stock."""
        from tests.test_encoders import REVERSED, batch, build

        model = build("xl_headxl", xl_heads=tau)
        enc = model.encoder
        src, src_len = batch(REVERSED)
        tokens, pos_xl = src[:, :, 0], src[:, :, 1]
        with torch.no_grad():
            got, _, _ = enc(src, src_len)
            x = enc.embeddings.word_lut(tokens) * 4.0  # sqrt(d_model = 16)
            z_abs = x + sinusoid(torch.arange(5).expand(2, 5), 16)
            z_xl = x + sinusoid(pos_xl, 16)
            mask = (torch.arange(5)[None, :] >= src_len[:, None])[:, None, None, :].expand(-1, 1, 5, -1)
            first = enc.transformer[0]
            context = _attention_by_hand(first.self_attn, [first.layer_norm(z_xl)] * tau
                                         + [first.layer_norm(z_abs)] * (4 - tau), mask)
            h = context + z_abs
            ff = first.feed_forward
            h = h + ff.w_2(ff.activation(ff.w_1(ff.layer_norm(h))))
            for layer in enc.transformer[1:]:
                h = layer(h, mask)
            want = enc.layer_norm(h)
        assert torch.allclose(got[0], want[0], atol=1e-5)
        assert torch.allclose(got[1, :3], want[1, :3], atol=1e-5)


# --- BTG oracle: onmt_xl/core/reorder/oracle.py ---------------------------------------------------------------------


def _kendall_by_hand(order, ranks):
    return sum(ranks[a] > ranks[b] >= 0 and ranks[a] >= 0
               for x, a in enumerate(order) for b in order[x + 1:])


class TestOracle:
    def test_span_is_min_and_max_whatever_the_link_order(self):
        from onmt_xl.core.reorder.oracle import target_ranks

        # word 0 -> {5, 1}: span (1, 5) even though its first link is 5; then (2, 2), (3, 3)
        assert target_ranks(3, [(0, 5), (0, 1), (1, 2), (2, 3)]).tolist() == [0, 1, 2]
        assert target_ranks(2, [(1, 4), (0, 3), (1, 0)]).tolist() == [1, 0]  # (3, 3) vs (0, 4)
        assert target_ranks(2, [(0, 0), (0, 5), (0, 3), (1, 1)]).tolist() == [0, 1]  # (0, 5) after three links
        with pytest.raises(ValueError, match=r"link 2-0: source index out of range for a 2-token sentence"):
            target_ranks(2, [(2, 0)])
        with pytest.raises(ValueError, match=r"link 0--1: negative target index"):
            target_ranks(2, [(0, -1)])
        with pytest.raises(ValueError, match=r"attach_null must be one of .*got 'middle'"):
            target_ranks(2, [], "middle")

    def test_attach_null_chains_of_unaligned_words(self):
        from onmt_xl.core.reorder.oracle import btg_oracle, target_ranks

        # unaligned words take the span of the nearest aligned word on the chosen side, through runs of them,
        # and the other side at the sentence edge
        assert target_ranks(4, [(3, 0)], "right").tolist() == [0, 0, 0, 0]
        assert target_ranks(4, [(0, 0)], "left").tolist() == [0, 0, 0, 0]
        assert target_ranks(5, [(1, 2), (3, 0)], "left").tolist() == [1, 1, 1, 0, 0]
        assert target_ranks(5, [(1, 2), (3, 0)], "right").tolist() == [1, 1, 0, 0, 0]
        assert target_ranks(3, [(2, 5), (1, 0)], "left").tolist() == [0, 0, 1]  # word 0 from word 1, not the last
        # "u V N" -> "N V": left alone the unaligned u stays first; attached right it moves with V behind N
        assert btg_oracle(3, [(1, 1), (2, 0)]).order == [0, 2, 1]
        assert btg_oracle(3, [(1, 1), (2, 0)], attach_null="right").order == [2, 0, 1]

    def test_kendall_loss_by_hand(self):
        from onmt_xl.core.reorder.oracle import kendall_loss

        rng = np.random.default_rng(5)
        for _ in range(200):
            n = int(rng.integers(0, 9))
            ranks = rng.integers(-1, 4, size=n)
            order = rng.permutation(n).tolist()
            assert kendall_loss(order, ranks) == _kendall_by_hand(order, ranks.tolist())

    def test_tie_break_prefers_fewer_inversions_then_the_leftmost_split(self):
        from onmt_xl.core.reorder.btg import tree_to_str
        from onmt_xl.core.reorder.oracle import btg_oracle

        # monotone: every split is free; the left-most split gives right-branching trees
        assert tree_to_str(btg_oracle(3, [(0, 0), (1, 1), (2, 2)]).tree) == "[0 [1 2]]"
        assert tree_to_str(btg_oracle(4, []).tree) == "[0 [1 [2 3]]]"
        assert tree_to_str(btg_oracle(3, [(0, 2), (1, 1), (2, 0)]).tree) == "<0 <1 2>>"
        # 2413: four BTG orders have loss 1 ([0 2 3 1], [2 3 0 1], [2 0 1 3], ...), all with one inverted node;
        # the left-most top split (after word 0) decides
        res = btg_oracle(4, [(0, 1), (1, 3), (2, 0), (3, 2)])
        assert res.loss == 1 and res.order == [0, 2, 3, 1] and tree_to_str(res.tree) == "[0 <1 [2 3]>]"
        from onmt_xl.core.reorder.oracle import btg_oracle_ranks

        assert tree_to_str(btg_oracle_ranks(np.array([1, 0, 2])).tree) == "[<0 1> 2]"  # the tree comes by default
        assert btg_oracle_ranks(np.array([1, 0, 2]), with_tree=False).tree is None
        # two independent swaps: two inverted nodes under a straight root
        assert tree_to_str(btg_oracle(4, [(0, 1), (1, 0), (2, 3), (3, 2)]).tree) == "[<0 1> <2 3>]"


class TestBTG:
    def test_order_to_tree_and_pos_xl_by_hand(self):
        from onmt_xl.core.reorder.btg import order_to_pos_xl, order_to_tree, tree_to_order, tree_to_str

        assert tree_to_str(order_to_tree([1, 0, 2])) == "[<0 1> 2]"
        assert tree_to_str(order_to_tree([2, 0, 1])) == "<[0 1] 2>"
        assert tree_to_order(order_to_tree([2, 0, 1])) == [2, 0, 1]
        assert order_to_pos_xl([2, 0, 1]) == [1, 2, 0]  # word 0 goes to position 1, word 2 to position 0


# --- reordering metrics: onmt_xl/core/reorder/metrics.py -------------------------------------------------------------


class TestMetrics:
    def test_chunks_need_consecutive_reference_positions(self):
        from onmt_xl.core.reorder.metrics import count_chunks, fuzzy_reordering_score

        # [0] [2 3] [1]: 2 -> 3 continues a chunk, 0 -> 2 skips a word and 3 -> 1 goes back
        assert count_chunks([0, 2, 3, 1], [0, 1, 2, 3]) == 3
        assert fuzzy_reordering_score([0, 2, 3, 1], [0, 1, 2, 3]) == pytest.approx(1 - 2 / 3)
        assert count_chunks([2, 0, 1], [2, 0, 1]) == 1  # the reference need not be monotone
        assert count_chunks([0, 1, 2], [2, 0, 1]) == 2  # [0 1] [2]
        assert count_chunks([], []) == 0 and count_chunks([0], [0]) == 1
        assert fuzzy_reordering_score([1, 0], [0, 1]) == 0.0 and fuzzy_reordering_score([0, 1], [0, 1]) == 1.0
        assert fuzzy_reordering_score([], []) == 1.0

    def test_evaluate_one_word_corpus_and_errors(self):
        from onmt_xl.core.reorder.metrics import evaluate
        from onmt_xl.core.reorder.oracle import target_ranks

        one = evaluate([[0], []], [target_ranks(1, [(0, 0)]), target_ranks(0, [])])
        assert (one.frs, one.monotone_frs, one.tau, one.exact_match) == (1.0, 1.0, 1.0, 1.0)
        r = target_ranks(3, [(0, 1), (1, 2), (2, 0)])
        with pytest.raises(ValueError, match=r"^1 predicted orders but 2 rank arrays$"):
            evaluate([[0, 1, 2]], [r, r])
        with pytest.raises(ValueError, match=r"^2 reference orders but 1 rank arrays$"):
            evaluate([[0, 1, 2]], [r], [[0, 1, 2], [0, 1, 2]])
        with pytest.raises(ValueError, match=r"^sentence 2: predicted order is not a permutation of range\(3\): \[0, 0, 1\]$"):
            evaluate([[0, 1, 2], [0, 0, 1]], [r, r])

    def test_frs_aligned_without_word_gaps_is_one(self):
        from onmt_xl.core.reorder.metrics import evaluate
        from onmt_xl.core.reorder.oracle import target_ranks

        # FRS is 1.0 when M <= 1 (Talbot et al.; fuzzy_reordering_score); over aligned words M is their count
        one = evaluate([[0, 1]], [target_ranks(2, [(1, 0)])])  # one aligned word: no gap to break
        assert (one.frs_aligned, one.monotone_frs_aligned) == (1.0, 1.0)

    def test_format_by_hand(self):
        from onmt_xl.core.reorder.metrics import ReorderScores

        s = ReorderScores(n_sentences=2, n_pairs=7, tau=0.5, exact_match=0.25, frs=0.75, monotone_tau=0.125,
                          monotone_exact_match=0.0, monotone_frs=0.375, oracle_tau=0.875, oracle_exact_match=0.5,
                          frs_aligned=0.625, monotone_frs_aligned=0.3125)
        assert s.format().split("\n") == [
            "2 sentences, 7 aligned pairs",
            "               tau   exact     FRS  FRS-al",
            "model       0.5000  0.2500  0.7500  0.6250",
            "monotone    0.1250  0.0000  0.3750  0.3125",
            "oracle      0.8750  0.5000  1.0000  1.0000",
            "(FRS-al: FRS over the aligned words only)",
        ]

    def test_evaluate_against_pair_counts_by_hand(self):
        from onmt_xl.core.reorder.metrics import evaluate
        from onmt_xl.core.reorder.oracle import target_ranks

        rng = random.Random(3)
        preds, ranks_list = [], []
        for _ in range(40):
            n = rng.randint(0, 8)
            links = [(i, rng.randrange(6)) for i in range(n) if rng.random() < 0.8]
            ranks_list.append(target_ranks(n, links))
            order = list(range(n))
            rng.shuffle(order)
            preds.append(order)
        s = evaluate(preds, ranks_list)
        pairs = sum(ranks_list[k][a] >= 0 and ranks_list[k][b] >= 0 and ranks_list[k][a] != ranks_list[k][b]
                    for k in range(40) for a, b in itertools.combinations(range(len(preds[k])), 2))
        wrong = sum(_kendall_by_hand(p, r.tolist()) for p, r in zip(preds, ranks_list))
        assert s.n_pairs == pairs and s.tau == pytest.approx((pairs - wrong) / pairs)
        assert s.exact_match == pytest.approx(sum(_kendall_by_hand(p, r.tolist()) == 0
                                                  for p, r in zip(preds, ranks_list)) / 40)
        # the monotone order and FRS by hand, against reference orders given explicitly (here: the predictions
        # reversed), so that every figure has a hand-computed value
        refs = [p[::-1] for p in preds]
        s = evaluate(preds, ranks_list, refs)
        mono = [list(range(len(p))) for p in preds]
        assert s.monotone_tau == pytest.approx((pairs - sum(_kendall_by_hand(m, r.tolist())
                                                            for m, r in zip(mono, ranks_list))) / pairs)
        assert s.monotone_exact_match == pytest.approx(sum(_kendall_by_hand(m, r.tolist()) == 0
                                                           for m, r in zip(mono, ranks_list)) / 40)
        assert s.oracle_tau == pytest.approx((pairs - sum(_kendall_by_hand(x, r.tolist())
                                                          for x, r in zip(refs, ranks_list))) / pairs)
        assert s.oracle_exact_match == pytest.approx(sum(_kendall_by_hand(x, r.tolist()) == 0
                                                         for x, r in zip(refs, ranks_list)) / 40)
        gaps = sum(max(len(p) - 1, 0) for p in preds)
        breaks = sum(max(_chunks_by_hand(p, x) - 1, 0) for p, x in zip(preds, refs))  # reversed: every step breaks
        assert breaks == gaps and s.frs == pytest.approx(0.0)
        assert s.monotone_frs == pytest.approx(1 - sum(max(_chunks_by_hand(m, x) - 1, 0) for m, x in zip(mono, refs)) / gaps)
        # aligned words only: both orders with the unaligned words deleted
        kept = [[[i for i in o if r[i] >= 0] for o in (p, x)] for p, x, r in zip(preds, refs, ranks_list)]
        al_gaps = sum(max(len(a) - 1, 0) for a, _ in kept)
        assert s.frs_aligned == pytest.approx(1 - sum(max(_chunks_by_hand(a, b) - 1, 0) for a, b in kept) / al_gaps)
        # a 2413 sentence: the BTG oracle cannot reach its target order
        hard = evaluate([[0, 1, 2, 3]], [target_ranks(4, [(0, 1), (1, 3), (2, 0), (3, 2)])])
        assert hard.oracle_exact_match == 0.0 and hard.oracle_tau == pytest.approx(5 / 6) and hard.monotone_exact_match == 0.0


def _chunks_by_hand(order, ref):
    """Maximal runs of ``order`` whose items are adjacent and in order in ``ref``."""
    if not order:
        return 0
    at = {w: k for k, w in enumerate(ref)}
    return 1 + sum(at[b] != at[a] + 1 for a, b in zip(order, order[1:]))


# --- grow-diag-final-and and AER: onmt_xl/core/align/{symmetrize,aer}.py ----------------------------------------------


def _symal_by_hand(forward, reverse, src_len, tgt_len, diagonal, final, both):
    """Moses' symal ``printgrow``, transcribed independently: points are (target, source) pairs in a sorted set;
    the scan visits, in order, every point of the set that is larger than the last one visited (as a
    ``std::set`` iterator does while points are inserted); final(-and) adds forward-only, then reverse-only
    union points in (target, source) order."""
    fwd, rev = {(j, i) for i, j in forward}, {(j, i) for i, j in reverse}
    union = fwd | rev
    cur = set(fwd & rev)
    e_cov = {j for j, _ in cur}
    f_cov = {i for _, i in cur}
    steps = [(-1, 0), (0, -1), (1, 0), (0, 1)] + ([(-1, -1), (-1, 1), (1, -1), (1, 1)] if diagonal else [])
    added = True
    while added:
        added = False
        last = None
        while True:
            later = [p for p in cur if last is None or p > last]
            if not later:
                break
            last = min(later)
            for dj, di in steps:
                p = (last[0] + dj, last[1] + di)
                if 0 <= p[0] < tgt_len and 0 <= p[1] < src_len and p in union and not (p[0] in e_cov and p[1] in f_cov):
                    cur.add(p)
                    e_cov.add(p[0])
                    f_cov.add(p[1])
                    added = True
    if final:
        for only in (fwd - rev, rev - fwd):
            for j, i in sorted(only):
                if (j, i) in cur:
                    continue
                if (both and j not in e_cov and i not in f_cov) or (not both and not (j in e_cov and i in f_cov)):
                    cur.add((j, i))
                    e_cov.add(j)
                    f_cov.add(i)
    return sorted((i, j) for j, i in cur)


def _random_directions(rng, n, m):
    """forward: each target word at most one link; reverse: each source word at most one link (eflomal's)."""
    forward = [(rng.randrange(n), j) for j in range(m) if rng.random() < 0.85]
    reverse = [(i, rng.randrange(m)) for i in range(n) if rng.random() < 0.85]
    if rng.random() < 0.5:  # a near-diagonal pair, so that growing has neighbours to take
        forward = [(min(n - 1, max(0, j * n // m + rng.choice((-1, 0, 0, 1)))), j) for j in range(m)]
        reverse = [(i, min(m - 1, max(0, i * m // n + rng.choice((-1, 0, 0, 1))))) for i in range(n)]
    return forward, reverse


class TestAlign:
    def test_symmetrization_matches_symal_by_hand(self):
        from onmt_xl.core.align.symmetrize import grow_diag, grow_diag_final, grow_diag_final_and

        rng = random.Random(11)
        for _ in range(1500):
            n, m = rng.randint(1, 7), rng.randint(1, 7)
            forward, reverse = _random_directions(rng, n, m)
            assert grow_diag_final_and(forward, reverse, n, m) == _symal_by_hand(forward, reverse, n, m, True, True, True)
            assert grow_diag_final(forward, reverse, n, m) == _symal_by_hand(forward, reverse, n, m, True, True, False)
            assert grow_diag(forward, reverse, n, m) == _symal_by_hand(forward, reverse, n, m, True, False, False)

    def test_aer_with_possible_only_links_by_hand(self):
        from onmt_xl.core.align.aer import parse_gold_line, score_alignments

        sure, possible = parse_gold_line("1-1 2p2 3-3 3p4")
        assert sure == {(0, 0), (2, 2)} and possible == {(0, 0), (1, 1), (2, 2), (2, 3)}
        hyp = [{(0, 0), (1, 1), (2, 3), (3, 3)}]
        s = score_alignments(hyp, [sure], [possible])
        # |A| 4, |S| 2, |A&S| 1, |A&P| 3: P = 3/4, R = 1/2, AER = 1 - 4/6
        assert (s.precision, s.recall) == (pytest.approx(3 / 4), pytest.approx(1 / 2))
        assert s.aer == pytest.approx(1 - 4 / 6)
        assert parse_gold_line("1-2 2p1", one_indexed=False) == ({(1, 2)}, {(1, 2), (2, 1)})


    def test_links_outside_the_sentence_pair_are_rejected_by_name(self):
        from onmt_xl.core.align.symmetrize import grow_diag_final_and

        with pytest.raises(ValueError, match=r"^forward link 2-0 is outside a 2x3 \(source x target\) sentence pair$"):
            grow_diag_final_and([(2, 0)], [], 2, 3)
        with pytest.raises(ValueError, match=r"^reverse link 0-3 is outside a 2x3 \(source x target\) sentence pair$"):
            grow_diag_final_and([], [(0, 3)], 2, 3)
        assert grow_diag_final_and([(1, 2)], [(1, 2)], 2, 3) == [(1, 2)]  # the last cell is inside

    def test_aer_scores_counts_and_format(self):
        from onmt_xl.core.align.aer import score_alignments

        s = score_alignments([{(0, 0), (1, 1)}, set()], [{(0, 0)}, {(0, 1)}], [{(1, 1), (2, 2)}, set()])
        assert (s.n_sentences, s.n_hyp, s.n_sure, s.n_possible, s.n_hyp_sure, s.n_hyp_possible) == (2, 2, 2, 4, 1, 2)
        # P = 2/2, R = 1/2, AER = 1 - 3/4
        assert s.format() == ("AER 0.2500  P 1.0000  R 0.5000  (2 sentences, 2 hyp links, 2 sure, 2 possible-only)")

    def test_input_errors_name_the_file_and_line(self, tmp_path):
        from onmt_xl.core.align.aer import check_links_in_range, parse_gold_line, read_gold, read_joint_text
        from onmt_xl.core.errors import XLInputError

        with pytest.raises(XLInputError, match=r"^g\.gold, line 3: malformed gold link 'x-2' \(expected 'i-j' or 'ipj'\)$"):
            parse_gold_line("1-1 x-2", path="g.gold", lineno=3)
        joint = tmp_path / "t.txt"
        joint.write_text("a ||| b\na ||| b ||| c\n", encoding="utf-8")
        with pytest.raises(XLInputError, match=rf"^{joint}, line 2: expected 'source \|\|\| target' \(one '\|\|\|'\), found 2$"):
            read_joint_text(str(joint))
        joint.write_text("a b\n", encoding="utf-8")
        with pytest.raises(XLInputError, match=r", line 1: .*found 0$"):
            read_joint_text(str(joint))
        src, tgt = [["a", "b"], ["c"]], [["x"], ["y", "z"]]
        with pytest.raises(XLInputError, match=r"^h\.gdfa: has 1 line but the text has 2 sentence pairs$"):
            check_links_in_range([[]], src, tgt, "h.gdfa")
        with pytest.raises(XLInputError, match=r"^h\.gdfa, line 2: link 0-2 \(0-based\) is outside the 1-token source / "
                                               r"2-token target sentence \(wrong indexing, or alignments at another token "
                                               r"level\?\)$"):
            check_links_in_range([[(1, 0)], [(0, 2)]], src, tgt, "h.gdfa")
        check_links_in_range([[(1, 0)], [(0, 1)]], src, tgt, "h.gdfa")  # the last target word is inside
        bad = tmp_path / "bad.gold"
        bad.write_bytes(b"1-1\n1-\xff\n")
        with pytest.raises(XLInputError, match=rf"^{bad}, line 2: not valid UTF-8 \(invalid start byte\)$"):
            read_gold(str(bad))

# --- modules being rewritten (disan, inxl, explicit_reordering, reordering_embedding): these classes pin the
# equations as they stand in the working tree; update them with the rewrite ------------------------------------


def _ln(xs, eps=1e-6):
    """LayerNorm without gain or bias, by hand: (x - mean) / sqrt(var + eps), population variance."""
    mean = sum(xs) / len(xs)
    var = sum((x - mean) ** 2 for x in xs) / len(xs)
    return [(x - mean) / math.sqrt(var + eps) for x in xs]


def _sigmoid(x):
    return 1 / (1 + math.exp(-x))


class TestInXL:
    @pytest.mark.parametrize("fusion", ["block", "diagonal", "full"])
    def test_inxl_fusion_against_a_loop_reference(self, fusion):
        """Eq. 7, PE_IN-XL = tanh(PE_abs U + PE_XL V), with U, V drawn at random and the products written out."""
        from onmt_xl.core.modules.inxl import InXLPositionFusion

        d = 6
        fus = InXLPositionFusion(d, fusion)
        torch.manual_seed(4)
        with torch.no_grad():
            fus.U.copy_(torch.randn_like(fus.U))
            fus.V.copy_(torch.randn_like(fus.V))
        a, x = torch.randn(3, d), torch.randn(3, d)
        U, V = fus.U.tolist(), fus.V.tolist()

        def project(row, w):
            if fusion == "diagonal":
                return [row[k] * w[k] for k in range(d)]
            if fusion == "full":
                return [sum(row[i] * w[i][k] for i in range(d)) for k in range(d)]
            out = []  # block: (sin_k, cos_k) @ w[k], a 2x2 matrix per frequency
            for k in range(d // 2):
                out += [row[2 * k] * w[k][0][c] + row[2 * k + 1] * w[k][1][c] for c in range(2)]
            return out

        for r in range(3):
            want = [math.tanh(p + q) for p, q in zip(project(a[r].tolist(), U), project(x[r].tolist(), V))]
            assert fus(a, x)[r].tolist() == pytest.approx(want, abs=1e-5)


class TestDiSAN:
    @pytest.mark.parametrize("heads", [2, 3, 4])
    def test_directional_masks_against_a_loop_reference(self, heads):
        """Forward heads (the first heads // 2) read keys j < i, backward heads keys j > i, never padding; a query
        with no such key reads itself."""
        from onmt_xl.opennmt.encoders.common import padding_mask
        from onmt_xl.core.modules.disan import directional_masks

        lengths = [5, 3, 1]
        masks = directional_masks(padding_mask(torch.tensor(lengths), 5), heads)
        assert masks.shape == (3, heads, 5, 5)
        for b, n in enumerate(lengths):
            for h in range(heads):
                forward = h < heads // 2
                for i in range(5):
                    allowed = {j for j in range(n) if (j < i if forward else j > i)} or {i}
                    assert {j for j in range(5) if not masks[b, h, i, j]} == allowed, (b, h, i)

    def test_fusion_gate_by_hand(self):
        from onmt_xl.core.modules.disan import FusionGate

        gate = FusionGate(2)
        with torch.no_grad():
            gate.w_s.copy_(torch.tensor([1.0, -0.5]))
            gate.w_h.copy_(torch.tensor([0.25, 2.0]))
            gate.b.copy_(torch.tensor([0.1, -1.0]))
        s, h = torch.tensor([[2.0, 3.0]]), torch.tensor([[4.0, 1.0]])
        f = [_sigmoid(2 * 1 + 4 * 0.25 + 0.1), _sigmoid(3 * -0.5 + 1 * 2 - 1.0)]
        assert gate(s, h)[0].tolist() == pytest.approx([f[0] * 2 + (1 - f[0]) * 4, f[1] * 3 + (1 - f[1]) * 1], abs=1e-6)


class TestExplicitReordering:
    def test_reordered_position_predictor_by_hand(self):
        """Eq. 5 on the normalised state: b_j = (J - 1) · sigmoid(v · tanh(W · LN(h_j)))."""
        from onmt_xl.core.modules.explicit_reordering import ReorderedPositionPredictor

        p = ReorderedPositionPredictor(3)
        W = [[1.0, 0.5, 0.0], [0.0, 2.0, -1.0], [1.0, 1.0, 1.0]]
        v = [1.5, -1.0, 0.5]
        with torch.no_grad():
            p.W.weight.copy_(torch.tensor(W))
            p.v.weight.copy_(torch.tensor([v]))
        h = [[1.0, 2.0, 6.0], [0.5, -1.0, 0.0]]
        got = p(torch.tensor([h]), torch.tensor([6]))[0].tolist()
        for j in range(2):
            n = _ln(h[j])
            z = sum(v[r] * math.tanh(sum(W[r][c] * n[c] for c in range(3))) for r in range(3))
            assert got[j] == pytest.approx(5 * _sigmoid(z), abs=1e-5)

    def test_gaussian_window_by_hand(self):
        """Eq. 6 with D = 1 (σ = D/2 = 0.5): weights exp(-(s - b)² / (2σ)) = exp(-(s - b)²) for |s - b| <= 1."""
        from onmt_xl.core.modules.explicit_reordering import gaussian_window_pe

        pe = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [1.0, -1.0]])
        pr = gaussian_window_pe(torch.tensor([[1.25, 3.0]]), pe, window=1.0)
        w0, w1, w2 = math.exp(-1.25**2), math.exp(-0.25**2), math.exp(-0.75**2)  # s = 0 is outside (1.25 > 1)
        assert pr[0, 0].tolist() == pytest.approx([2 * w2, w1 + 2 * w2], abs=1e-6) and w0 > 0
        w = math.exp(-1.0)  # b = 3: s = 2 at distance 1 (inside), s = 3 at 0
        assert pr[0, 1].tolist() == pytest.approx([2 * w + 1, 2 * w - 1], abs=1e-6)

    def test_reordering_similarity_skips_padding(self):
        from onmt_xl.core.modules.explicit_reordering import reordering_similarity

        pr = torch.tensor([[[1.0, 1.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [5.0, 5.0, 5.0, 5.0]]])
        pos_xl, valid = torch.tensor([[0, 1, 0]]), torch.tensor([[True, True, False]])
        re1 = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]  # PE_1 (d = 4); PE_0 = (0, 1, 0, 1)
        cos = [1 / (math.sqrt(2) * math.sqrt(2)), re1[1] / math.sqrt(sum(x * x for x in re1))]  # the third is padding
        got = reordering_similarity(pr, pos_xl, valid, "SinusoidalInterleaved")
        assert got.item() == pytest.approx(sum(cos), abs=1e-6)

    def test_soft_window_and_position_loss_by_hand(self):
        from onmt_xl.core.modules.explicit_reordering import reordering_loss, soft_window_pe

        pe = torch.tensor([[1.0, 0.0], [0.0, 1.0], [4.0, 4.0]])
        # J = 2: softmax of -(s - b)² / (2σ), σ = 0.25, over s = 0, 1 only
        b = 0.25
        e = [math.exp(-((s - b) ** 2) / 0.5) for s in (0, 1)]
        got = soft_window_pe(torch.tensor([[b, 0.0]]), pe, torch.tensor([2]), window=0.5)[0, 0].tolist()
        assert got == pytest.approx([e[0] / sum(e), e[1] / sum(e)], abs=1e-6)
        # "position": Σ_j ((b_j - r_j) / (J - 1))² over valid words
        loss = reordering_loss("position", torch.tensor([[0.5, 3.0, 9.0]]), None, None, torch.tensor([[2, 1, 0]]),
                               torch.tensor([3]), torch.tensor([[True, True, False]]), 0.5, "SinusoidalInterleaved")
        assert loss.item() == pytest.approx((1.5 / 2) ** 2 + (2.0 / 2) ** 2)

    def test_reordering_fusion_gate_by_hand(self):
        """Eq. 10-11: g = sigmoid(U_g · LN(H) + W_g · LN(H̄)), g · H̄ + (1 - g) · H."""
        from onmt_xl.core.modules.explicit_reordering import ReorderingFusionGate

        gate = ReorderingFusionGate(3)
        with torch.no_grad():
            gate.U_g.weight.copy_(torch.tensor([[1.0, 0.0, -1.0]]))
            gate.W_g.weight.copy_(torch.tensor([[0.0, 2.0, 0.5]]))
        h, h_bar = [1.0, 2.0, 4.0], [3.0, -1.0, 0.0]
        nh, nb = _ln(h), _ln(h_bar)
        g = _sigmoid(nh[0] - nh[2] + 2 * nb[1] + 0.5 * nb[2])
        got = gate(torch.tensor([h]), torch.tensor([h_bar]))[0].tolist()
        assert got == pytest.approx([g * y + (1 - g) * x for x, y in zip(h, h_bar)], abs=1e-5)


class TestReorderingEmbedding:
    def test_positional_penalty_by_hand(self):
        """Eq. 6 on normalised states: PP = sigmoid(V · tanh(W · LN(H^{n-1}) + W̃ · LN(H̃^n)))."""
        from onmt_xl.core.modules.reordering_embedding import PositionalPenalty

        pp = PositionalPenalty(3)
        W = [[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [-1.0, 0.0, 1.0]]
        Wt = [[0.0, 2.0, 0.0], [1.0, 0.0, -0.5], [0.0, 0.0, 1.0]]
        V = [[1.0, -1.0, 0.0], [0.5, 0.5, 0.5], [0.0, 0.0, 2.0]]
        with torch.no_grad():
            for lin, w in ((pp.W, W), (pp.W_tilde, Wt), (pp.V, V)):
                lin.weight.copy_(torch.tensor(w))
        h_prev, h_tilde = [0.5, -0.5, 2.0], [1.0, 0.25, -3.0]
        a, b = _ln(h_prev), _ln(h_tilde)
        t = [math.tanh(sum(W[r][c] * a[c] + Wt[r][c] * b[c] for c in range(3))) for r in range(3)]
        want = [_sigmoid(sum(V[r][c] * t[c] for c in range(3))) for r in range(3)]
        assert pp(torch.tensor([h_prev]), torch.tensor([h_tilde]))[0].tolist() == pytest.approx(want, abs=1e-5)


# --- mutmut survivors in the rewritten modules (``git show 82e0317:reports/mutation.md``, "mutmut on the rewritten
# modules"; the baseline encoders' forward code then lived in encoders/baselines.py, now encoders/*.py). Every
# InXL module here is built with an explicit start: the default start may change, these checks must not. ---------


class TestInXLSurvivors:
    def test_block_is_the_default_fusion(self):
        from onmt_xl.core.modules.inxl import InXLPositionFusion

        fus = InXLPositionFusion(8, start="absolute")
        assert fus.fusion == "block" and fus.U.shape == fus.V.shape == (4, 2, 2)  # one 2x2 block per frequency
        assert fus.extra_repr() == "d_model=8, fusion=block, start=absolute"

    def test_only_the_block_fusion_needs_interleaved_sinusoids(self):
        """block pairs dimensions (2k, 2k+1) as (sin, cos): wrong for SinusoidalConcat (all sines, then all
        cosines); diagonal and full do not pair dimensions and take either layout."""
        from onmt_xl.core.modules.inxl import InXLPositionFusion

        with pytest.raises(ValueError, match=r"^xl_inxl_fusion 'block' pairs \(sin, cos\) dimensions and needs "
                                             r"SinusoidalInterleaved$"):
            InXLPositionFusion(8, "block", "SinusoidalConcat", start="absolute")
        a, x = torch.randn(3, 8), torch.randn(3, 8)
        for fusion in ("diagonal", "full"):
            fus = InXLPositionFusion(8, fusion, "SinusoidalConcat", start="identity")  # U = V = I
            assert torch.allclose(fus(a, x), torch.tanh(a + x), atol=1e-6)


class TestDiSANSurvivors:
    @pytest.mark.parametrize("start", [0.0, 1.0, -0.5, 1.5])
    def test_gate_start_must_lie_strictly_between_0_and_1(self, start):
        from onmt_xl.core.modules.disan import FusionGate

        # F = 0 or 1 would need b = -inf or +inf (logit); the gate could never move away from it
        with pytest.raises(ValueError, match=rf"^the fusion gate's start must lie in \(0, 1\), got {start}$"):
            FusionGate(4, start=start)

    @pytest.mark.parametrize("start", [0.5, 0.8])
    def test_gate_starts_at_the_requested_share(self, start):
        from onmt_xl.core.modules.disan import FusionGate

        gate = FusionGate(3, start=start)
        assert gate.b.tolist() == pytest.approx([math.log(start / (1 - start))] * 3)  # logit(start)
        s, h = torch.tensor([[1.0, -2.0, 4.0]]), torch.tensor([[3.0, 0.5, -1.0]])
        want = [start * a + (1 - start) * b for a, b in zip(s[0].tolist(), h[0].tolist())]
        assert gate(s, h)[0].tolist() == pytest.approx(want, abs=1e-6)


class TestExplicitReorderingSurvivors:
    def test_a_one_word_sentence_predicts_position_zero(self):
        """Eq. 5 with 0-based positions: b_j = (J - 1) · sigmoid(·) lies in [0, J - 1]; J = 1 leaves only 0."""
        from onmt_xl.core.modules.explicit_reordering import ReorderedPositionPredictor

        torch.manual_seed(3)
        p = ReorderedPositionPredictor(4)
        h = torch.randn(3, 3, 4)
        b = p(h, torch.tensor([1, 3, 0]))
        assert b[0].tolist() == [0.0, 0.0, 0.0] and b[2].tolist() == [0.0, 0.0, 0.0]
        assert all(0.0 < v < 2.0 for v in b[1].tolist())

    def test_windows_default_to_the_papers_d_of_one_half(self):
        """Chen et al. 2020 use D = 0.5 (σ = D/2 = 0.25): weights exp(-(s - b)² / 0.5), |s - b| <= 0.5."""
        from onmt_xl.core.modules.explicit_reordering import gaussian_window_pe, soft_window_pe

        pe = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
        pr = gaussian_window_pe(torch.tensor([[1.3]]), pe)  # only s = 1 lies in [0.8, 1.8]
        assert pr[0, 0].tolist() == pytest.approx([0.0, math.exp(-0.09 / 0.5)], abs=1e-6)
        e = [math.exp(-((s - 1.3) ** 2) / 0.5) for s in range(3)]
        got = soft_window_pe(torch.tensor([[1.3]]), pe, torch.tensor([3]))[0, 0].tolist()
        assert got == pytest.approx([(e[0] + 2 * e[2]) / sum(e), (e[1] + 2 * e[2]) / sum(e)], abs=1e-6)

    def test_similarity_and_literal_loss_use_the_given_pe_kind_by_hand(self):
        """Sim(pr_j, re_j) with re_j the SinusoidalConcat PE of r_j (d = 4: sin p, sin p/10⁴, cos p, cos p/10⁴);
        the literal Eq. 9 is Σ_j (1 - Sim) over valid words."""
        from onmt_xl.core.modules.explicit_reordering import reordering_loss, reordering_similarity

        pr = torch.tensor([[[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 3.0, 4.0], [9.0, 9.0, 9.0, 9.0]]])
        pos_xl, valid = torch.tensor([[1, 2, 0]]), torch.tensor([[True, True, False]])
        norm = math.sqrt(2)  # |PE_p| = sqrt(sin² + cos², twice)
        cos = [math.sin(1) / norm, (3 * math.cos(2) + 4 * math.cos(2e-4)) / (5 * norm)]
        got = reordering_similarity(pr, pos_xl, valid, "SinusoidalConcat")
        assert got.item() == pytest.approx(sum(cos), abs=1e-6)
        loss = reordering_loss("literal", None, pr, None, pos_xl, torch.tensor([3]), valid, 0.5, "SinusoidalConcat")
        assert loss.item() == pytest.approx((1 - cos[0]) + (1 - cos[1]), abs=1e-6)

    def test_soft_loss_uses_the_window_it_is_given(self):
        """soft: Σ_j (1 - cos(Σ_s w_js pe_s, re_j)), w_j = softmax over s < J of -(s - b_j)² / (2σ), σ = D/2.
        D = 1: -(s - b)²; pe here a hand table of d = 2, re_j = (sin r_j, cos r_j)."""
        from onmt_xl.core.modules.explicit_reordering import reordering_loss

        pe_rows = [[1.0, 0.0], [0.0, 1.0], [2.0, -1.0], [7.0, 7.0]]
        b, r, J = [0.4, 1.7], [2, 0], 3
        want = 0.0
        for bj, rj in zip(b, r):
            e = [math.exp(-((s - bj) ** 2)) for s in range(J)]  # s = 3 lies past the sentence
            soft = [sum(e[s] * pe_rows[s][k] for s in range(J)) / sum(e) for k in range(2)]
            re = [math.sin(rj), math.cos(rj)]
            want += 1 - (soft[0] * re[0] + soft[1] * re[1]) / (math.hypot(*soft) * math.hypot(*re))
        got = reordering_loss("soft", torch.tensor([b]), None, torch.tensor(pe_rows), torch.tensor([r]), torch.tensor([J]),
                              torch.tensor([[True, True]]), 1.0, "SinusoidalInterleaved")
        assert got.item() == pytest.approx(want, abs=1e-6)

    def test_position_loss_for_two_and_one_word_sentences(self):
        """position: ((b_j - r_j) / (J - 1))², J - 1 floored at 1 (a one-word sentence: (b - r)²)."""
        from onmt_xl.core.modules.explicit_reordering import reordering_loss

        b, r = torch.tensor([[0.25, 0.75], [0.5, 0.0]]), torch.tensor([[1, 0], [0, 0]])
        valid = torch.tensor([[True, True], [True, False]])
        loss = reordering_loss("position", b, None, None, r, torch.tensor([2, 1]), valid, 0.5, "SinusoidalInterleaved")
        assert loss.item() == pytest.approx(0.75**2 + 0.75**2 + 0.5**2)

    def test_unknown_loss_is_named(self):
        from onmt_xl.core.modules.explicit_reordering import reordering_loss

        # the choices in any order (the order of REORDERING_LOSSES puts the default first)
        with pytest.raises(ValueError, match=r"^unknown reordering loss 'cosine'; choose one of "
                                             r"\((?=[^)]*'soft')(?=[^)]*'position')(?=[^)]*'literal')'\w+', '\w+', '\w+'\)$"):
            reordering_loss("cosine", None, None, None, None, None, None, 0.5, "SinusoidalInterleaved")


class TestReorderingEmbeddingSurvivors:
    def test_layer_normalised_eps_by_hand(self):
        """LN without gain or bias, eps = 1e-6 (OpenNMT's LayerNorm): it matters on nearly constant states.
        x = (0, 0, 3e-3): mean 1e-3, variance 2e-6."""
        from onmt_xl.core.modules.reordering_embedding import layer_normalised

        x = torch.tensor([[0.0, 0.0, 3e-3]], dtype=torch.float64)
        want = [v / math.sqrt(2e-6 + 1e-6) for v in (-1e-3, -1e-3, 2e-3)]
        assert layer_normalised(x)[0].tolist() == pytest.approx(want, rel=1e-9)
        assert layer_normalised(x, eps=0.0)[0].tolist() == pytest.approx([v / math.sqrt(2e-6) for v in (-1e-3, -1e-3, 2e-3)], rel=1e-9)
        assert layer_normalised(x)[0].tolist() == pytest.approx(_ln([0.0, 0.0, 3e-3]), rel=1e-9)


class TestBaselineEncodersSurvivors:
    """mutmut survivors in the baseline encoders (onmt_xl/opennmt/encoders/disan.py, reordering_embedding.py,
    explicit_reordering.py, encoder_free.py): the encoders' forward passes written out with their own submodules (each pinned by hand above), for settings the rest of the suite never used (two layers without the
    DiSAN gate, dropout, SinusoidalConcat, a window other than the default, padding inside ExGRE's layers)."""

    @staticmethod
    def _mask(src_len, length=5):
        return (torch.arange(length)[None, :] >= src_len[:, None])[:, None, None, :].expand(-1, 1, length, -1)

    @pytest.mark.parametrize("encoder_type", ["xl_exgre", "xl_refsr"])
    def test_exgre_and_refsr_forward_by_hand(self, encoder_type):
        """Eq. 5-8 in every layer, H̄^n = H^n + PR^n with PR^n the Gaussian window (D = 1: weights exp(-(s - b)²),
        |s - b| <= 1) over the SinusoidalConcat PE; ReFSR (Eq. 10-11) fuses H̄^N with the same layers run over
        the original order. Padded keys are masked in every layer."""
        from tests.test_encoders import REVERSED, batch, build

        enc = build(encoder_type, position_encoding_type="SinusoidalConcat", xl_exgre_window=1.0).encoder
        assert (enc.gate is not None) == (encoder_type == "xl_refsr")
        src, src_len = batch(REVERSED)
        got, _, _ = enc(src, src_len)
        mask = self._mask(src_len)
        with torch.no_grad():
            x0 = enc.embeddings(src[:, :, :1])
            pe = sinusoid(torch.arange(5), 16, "SinusoidalConcat")
            s = torch.arange(5.0)
            x = x0
            for layer, predictor in zip(enc.transformer, enc.predictors):
                h = layer(x, mask)
                b = predictor(h, src_len)
                dist = s[None, None, :] - b[:, :, None]
                x = h + (torch.exp(-(dist**2)) * (dist.abs() <= 1.0)) @ pe
            if encoder_type == "xl_refsr":
                h = x0
                for layer in enc.transformer:
                    h = layer(h, mask)
                x = enc.gate(h, x)
            want = enc.layer_norm(x)
        assert torch.allclose(got, want, atol=1e-5)
        assert torch.equal(enc.predicted_positions, b)

    def test_a_fresh_exgre_encoder_holds_no_loss_sim_or_positions(self):
        from tests.test_encoders import build

        enc = build("xl_exgre").encoder
        assert (enc.reordering_loss, enc.similarity, enc.predicted_positions) == (None, None, None)

    def test_disan_without_gate_runs_every_layer(self):
        """-xl_disan_fusion none: each layer is the stock layer under the directional masks, all of them."""
        from onmt_xl.opennmt.encoders.common import padding_mask
        from onmt_xl.core.modules.disan import directional_masks
        from tests.test_encoders import batch, build

        enc = build("xl_disan", enc_layers=3, xl_disan_fusion="none").encoder
        src, src_len = batch()
        got, _, _ = enc(src, src_len)
        with torch.no_grad():
            x, mask = enc.embeddings(src), directional_masks(padding_mask(src_len, 5), 4)
            for layer in enc.transformer:
                x = layer(x, mask)
        assert torch.allclose(got, enc.layer_norm(x), atol=1e-5)

    def test_disan_reads_the_option_as_gate_when_a_checkpoint_lacks_it(self):
        """Checkpoints written before -disan_fusion (now -xl_disan_fusion) existed carry no such option: they had the gate."""
        from onmt.model_builder import build_base_model

        from tests.test_encoders import model_opt, vocabs

        opt = model_opt(encoder_type="xl_disan", enc_layers=1)
        del opt.xl_disan_fusion
        assert build_base_model(opt, vocabs()).encoder.gates is not None

    @staticmethod
    def _drop_all_attention(enc):
        """Dropout with p = 1 on each layer's attention output (training mode; every other dropout stays 0)."""
        for layer in enc.transformer:
            layer.dropout, layer.dropout_p = torch.nn.Dropout(1.0), 1.0
        return enc.train()

    def test_disan_attention_output_goes_through_the_layers_dropout(self):
        from tests.test_encoders import batch, build

        enc = self._drop_all_attention(build("xl_disan", enc_layers=1).encoder)
        src, src_len = batch()
        got, _, _ = enc(src, src_len)
        x = enc.embeddings(src)
        assert torch.allclose(got, enc.layer_norm(enc.transformer[0].feed_forward(x)), atol=1e-5)  # x + Dropout(u) = x

    @pytest.mark.parametrize("kind", ["SinusoidalInterleaved", "SinusoidalConcat"])
    def test_reordering_embedding_dropout_and_pe_kind(self, kind):
        """Eq. 6-9 with H̃ = H + Dropout(SelfAttn(LN(H))) and p = 1: H̃ = H, C = H + PE · PP(H, H) with the
        configured PE, output H + FFN(C) - C."""
        from tests.test_encoders import batch, build

        enc = self._drop_all_attention(build("xl_reordering_embedding", enc_layers=1, position_encoding_type=kind).encoder)
        src, src_len = batch()
        got, _, _ = enc(src, src_len)
        x = enc.embeddings(src)
        c = x + sinusoid(torch.arange(5), 16, kind) * enc.penalties[0](x, x)
        assert torch.allclose(got, enc.layer_norm(x + enc.transformer[0].feed_forward(c) - c), atol=1e-5)

    def test_encoder_free_with_concat_pe_by_hand(self):
        """X + PE_abs and X + tanh(PE_abs U + PE_XL V) (diagonal U, V) with the SinusoidalConcat PE."""
        from onmt_xl.opennmt.encoders.common import embed_words
        from tests.test_encoders import REVERSED, batch, build

        pe_abs = sinusoid(torch.arange(5).expand(2, 5), 16, "SinusoidalConcat")
        enc = build("xl_encoder_free", xl_encoder_free_pe="absolute", position_encoding_type="SinusoidalConcat").encoder
        got, _, _ = enc(*batch())
        assert torch.allclose(got, embed_words(enc.embeddings, batch()[0]) + pe_abs, atol=1e-6)
        enc = build("xl_encoder_free", xl_encoder_free_pe="inxl", xl_inxl_fusion="diagonal",
                    position_encoding_type="SinusoidalConcat").encoder
        got, _, _ = enc(*batch(REVERSED))
        pe_xl = sinusoid(REVERSED, 16, "SinusoidalConcat")
        want = embed_words(enc.embeddings, batch()[0]) + torch.tanh(pe_abs * enc.inxl.U + pe_xl * enc.inxl.V)
        assert torch.allclose(got, want, atol=1e-6)

    @pytest.mark.parametrize("start", ["absolute", "identity"])
    def test_encoder_free_takes_the_inxl_start_option(self, start):
        from onmt.model_builder import build_base_model

        from tests.test_encoders import model_opt, vocabs

        opt = model_opt(encoder_type="xl_encoder_free", xl_encoder_free_pe="inxl", xl_inxl_init=start)
        inxl = build_base_model(opt, vocabs()).encoder.inxl
        eye = torch.eye(2).expand(8, 2, 2)
        assert inxl.start == start and torch.equal(inxl.U, eye)
        assert torch.equal(inxl.V, eye if start == "identity" else torch.zeros(8, 2, 2))

    def test_encoder_free_errors_and_dropout(self):
        from onmt_xl.opennmt.encoders.common import MissingXLPositionsError
        from tests.test_encoders import batch, build

        enc = build("xl_encoder_free", xl_encoder_free_pe="inxl").encoder
        with pytest.raises(MissingXLPositionsError, match=r"^xl_encoder_free with -xl_encoder_free_pe inxl needs cross-lingual "
                                                          r"positions: add the xl_position transform \(onmt_translate "
                                                          r"\.\.\. -transforms xl_position -xl_preorderer FILE\)$"):
            enc(*batch())
        enc.update_dropout(0.3, 0.1)
        assert enc.embeddings.dropout.p == 0.3


# --- tools/ci/mutation_check.py stays in sync with the code (a stale entry tests nothing; issue 40: X6 went stale) ---


def _mutation_check():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "ci" / "mutation_check.py"
    spec = importlib.util.spec_from_file_location("mutation_check", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_every_hand_listed_bug_applies_and_names_existing_tests():
    import shlex

    mc = _mutation_check()
    # the isolation check's canary (it named onmt_xl/positions.py after the move into onmt_xl/core/)
    assert (mc.REPO / mc.CANARY).is_file()
    assert len({m.id for m in mc.MUTATIONS}) == len(mc.MUTATIONS)
    stale = {m.id: why for m in mc.MUTATIONS if (why := mc.stale_reason(m))}
    assert stale == {}, f"tools/ci/mutation_check.py: snippets no longer in the source: {stale}"
    for m in mc.MUTATIONS:
        assert m.old != m.new, m.id
        args = shlex.split(m.tests)
        for arg in args:
            if arg.startswith("tests/"):
                file, _, cls = arg.partition("::")
                text = (mc.REPO / file).read_text(encoding="utf-8")
                assert not cls or f"\nclass {cls}" in text, f"{m.id}: {arg} names no class"
    # the two equations of issue 40 are in the list, with the tests that pin them
    by_id = {m.id: m for m in mc.MUTATIONS}
    assert "test_pinned_equations.py::TestRelativePE" in by_id["X7"].tests
    assert "test_pinned_equations.py::TestDecoderReorderingEmbedding" in by_id["R3"].tests


def test_mutation_check_drops_a_test_file_from_a_selection():
    mc = _mutation_check()
    tests = "tests/a.py tests/b.py::TestX -k 'x or y'"
    assert mc.drop_tests(tests, "tests/b.py") == "tests/a.py -k 'x or y'"
    assert mc.drop_tests(tests, "tests/a.py") == "tests/b.py::TestX -k 'x or y'"
    assert mc.drop_tests(tests, "tests/b") == "tests/a.py tests/b.py::TestX -k 'x or y'"  # whole names only
