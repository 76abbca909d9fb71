"""Seeing what the preorderer does: one sentence's predicted BTG tree and reordering next to the
oracle's, as text (:func:`text_report`) and as a PNG drawing (:func:`draw_png`).

The drawing has one panel per tree: the tree above the source tokens (straight nodes black,
inverted nodes red), the target words each source token is aligned to (small, grey), and below
them the reordered sentence with a line from each source token to its new place (red when the token
moved). Tokens are drawn with the first installed font that has
their glyphs (e.g. Noto Sans CJK, IPAGothic for Japanese); when none has, a token is labelled
``index:aligned target words`` instead, and :func:`draw_png` says so in its return value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from onmt_xl.core.reorder.btg import BTGNode, order_to_pos_xl, tree_to_str
from onmt_xl.core.reorder.oracle import kendall_loss, ordered_pairs

CJK_FONTS = ("Noto Sans CJK JP", "Noto Sans JP", "IPAGothic", "IPAexGothic", "IPAPGothic", "TakaoGothic",
             "VL Gothic", "Droid Sans Fallback", "WenQuanYi Zen Hei", "Source Han Sans JP", "Unifont")


@dataclass
class Reordering:
    """One system's reordering of a sentence (``loss``/``pairs``: Kendall loss and its maximum)."""

    name: str
    order: List[int]
    tree: Optional[BTGNode]
    loss: Optional[int] = None
    pairs: Optional[int] = None

    @property
    def tau(self) -> Optional[float]:
        if self.loss is None or self.pairs is None:
            return None
        return 1.0 - self.loss / self.pairs if self.pairs else 1.0


def score(name: str, order: Sequence[int], tree: Optional[BTGNode], ranks: Optional[np.ndarray]) -> Reordering:
    if ranks is None:
        return Reordering(name, list(order), tree)
    return Reordering(name, list(order), tree, kendall_loss(order, ranks), ordered_pairs(ranks))


def display_width(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _ljust(text: str, width: int) -> str:
    return text + " " * max(width - display_width(text), 0)


def tree_lines(tree: Optional[BTGNode], tokens: Sequence[str]) -> List[str]:
    """Indented drawing, one node per line: ``[]`` straight, ``<>`` inverted (children swapped)."""
    if tree is None:
        return ["(empty)"]
    lines: List[str] = []
    stack: List[Tuple[BTGNode, str, str]] = [(tree, "", "")]
    while stack:
        cur, lead, child_lead = stack.pop()
        if cur.is_leaf:
            words = " ".join(tokens[i] for i in range(cur.start, cur.end))
            lines.append(f"{lead}{words}  ({cur.start})")
            continue
        kind = "<> inverted" if cur.inverted else "[] straight"
        lines.append(f"{lead}{kind}  {cur.start}-{cur.end - 1}")
        stack.append((cur.right, child_lead + "└─ ", child_lead + "   "))  # type: ignore[arg-type]
        stack.append((cur.left, child_lead + "├─ ", child_lead + "│  "))  # type: ignore[arg-type]
    return lines


def text_report(
    tokens: Sequence[str],
    systems: Sequence[Reordering],
    target: Optional[Sequence[str]] = None,
    ranks: Optional[np.ndarray] = None,
    links: Optional[Sequence[Tuple[int, int]]] = None,
) -> str:
    """Orders, bracketings, indented trees and a per-token table of ``systems`` (e.g. predicted, oracle)."""
    out = [f"source     {' '.join(tokens)}"]
    if target is not None:
        out.append(f"target     {' '.join(target)}")
    width = max(len(s.name) for s in systems) if systems else 0
    for s in systems:
        line = f"{s.name:{max(width, 10)}s} {' '.join(tokens[i] for i in s.order)}"
        if s.loss is not None:
            line += f"    (Kendall loss {s.loss} of {s.pairs} pairs, tau {s.tau:.3f})"
        out.append(line)
    out.append("")
    for s in systems:
        out.append(f"{s.name} tree: {tree_to_str(s.tree, tokens)}")
    out.append("")
    blocks = [[f"{s.name} tree"] + tree_lines(s.tree, tokens) for s in systems]
    col = max((display_width(line) for b in blocks[:-1] for line in b), default=0) + 4
    for k in range(max((len(b) for b in blocks), default=0)):
        row = ""
        for j, b in enumerate(blocks):
            cell = b[k] if k < len(b) else ""
            row += _ljust(cell, col) if j < len(blocks) - 1 else cell
        out.append(row.rstrip())
    out.append("")
    aligned = _aligned_words(len(tokens), target, links)
    header = f"{'j':>3s}  {'token':10s} {'rank':>4s}  " + "  ".join(f"{s.name[:9]:>9s}" for s in systems)
    if aligned is not None:
        header += "  aligned to"
    out.append(header)
    pos = [order_to_pos_xl(s.order) for s in systems]
    for j, tok in enumerate(tokens):
        r = "-" if ranks is None or ranks[j] < 0 else str(int(ranks[j]))
        row = f"{j:3d}  {_ljust(tok, 10)} {r:>4s}  " + "  ".join(f"{p[j]:9d}" for p in pos)
        if aligned is not None:
            row += "  " + (aligned[j] or "(unaligned)")
        out.append(row)
    out.append("(rank: target-order rank from the alignments, - = unaligned; columns: pos_XL of each token)")
    return "\n".join(out)


def _aligned_words(n: int, target: Optional[Sequence[str]], links) -> Optional[List[str]]:
    if target is None or links is None:
        return None
    words: List[List[str]] = [[] for _ in range(n)]
    for i, j in sorted(links, key=lambda l: l[1]):
        if 0 <= i < n and 0 <= j < len(target):
            words[i].append(target[j])
    return [" ".join(w) for w in words]


def _font_for(tokens: Sequence[str]):
    """``FontProperties`` of an installed font that has every glyph of ``tokens`` (``None``: none has).

    Tries DejaVu Sans and the usual CJK families by name, then every font file on the system (so a
    font installed after matplotlib built its font cache is found too)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    chars = {ord(ch) for tok in tokens for ch in tok}

    def covers(path: str) -> bool:
        try:
            cmap = FT2Font(path).get_charmap()
        except Exception:  # unreadable or unsupported font file
            return False
        return all(ch in cmap for ch in chars)

    tried = set()
    for name in ("DejaVu Sans",) + CJK_FONTS:
        try:
            path = font_manager.findfont(font_manager.FontProperties(family=name), fallback_to_default=False)
        except ValueError:
            continue
        tried.add(path)
        if covers(path):
            return font_manager.FontProperties(fname=path)
    for path in sorted(font_manager.findSystemFonts()):
        if path not in tried and covers(path):
            return font_manager.FontProperties(fname=path)
    return None


def _draw_tree(ax, tree: Optional[BTGNode], n: int) -> float:
    """Draw ``tree`` above leaves at ``x = 0..n-1, y = 0``; returns the height."""
    if tree is None:
        return 0.0
    xy = {}
    top = 0.0
    for cur in reversed(tree.nodes()):  # children before parents
        if cur.is_leaf:
            xy[cur.start, cur.end] = ((cur.start + cur.end - 1) / 2, 0.0)
            continue
        lx, ly = xy[cur.left.start, cur.left.end]  # type: ignore[union-attr]
        rx, ry = xy[cur.right.start, cur.right.end]  # type: ignore[union-attr]
        h = max(ly, ry) + 1.0
        x = (lx + rx) / 2
        xy[cur.start, cur.end] = (x, h)
        top = max(top, h)
        color = "#c62828" if cur.inverted else "black"
        for cx, cy in ((lx, ly), (rx, ry)):
            ax.plot([x, cx, cx], [h, h, cy], color=color, lw=1.6 if cur.inverted else 1.0)
        ax.text(x + 0.06, h + 0.06, "<>" if cur.inverted else "[]", ha="left", va="bottom", fontsize=8, color=color)
    return top


def _draw_system(ax, sysm: Reordering, labels: Sequence[str], font, gloss: Optional[Sequence[str]],
                 gloss_font) -> None:
    """One panel: ``sysm``'s tree over the source labels (with their aligned-target ``gloss`` when given),
    a line from each source word to its place in the reordering, and the reordered labels."""
    n = len(labels)
    h = _draw_tree(ax, sysm.tree, n)
    pos = order_to_pos_xl(sysm.order)
    y_src = -0.35
    y_top = y_src - (1.05 if gloss is not None else 0.55)  # lines start below the tokens (and their glosses)
    y_out = y_top - 1.9
    kw = dict(ha="center", fontsize=10, rotation=0 if font is not None else 30)
    if font is not None:
        kw["fontproperties"] = font
    for j in range(n):
        ax.text(j, y_src, labels[j], va="top", **kw)
        if gloss is not None:
            ax.text(j, y_src - 0.6, gloss[j] or "-", va="top", ha="center", color="#616161",
                    fontproperties=gloss_font, fontsize=7)
        moved = pos[j] != j
        ax.plot([j, pos[j]], [y_top, y_out + 0.35], color="#c62828" if moved else "#9e9e9e",
                lw=1.4 if moved else 0.8)
    for k, j in enumerate(sysm.order):
        ax.text(k, y_out, labels[j], va="top", **kw)
    caption = sysm.name
    if sysm.loss is not None:
        caption += f": Kendall loss {sysm.loss} of {sysm.pairs} pairs (tau {sysm.tau:.3f})"
    ax.set_title(caption, fontsize=11, loc="left")
    ax.set_xlim(-0.8, n - 0.2)
    ax.set_ylim(y_out - 0.9, max(h, 1.0) + 0.8)
    ax.axis("off")


def draw_png(
    path: str,
    tokens: Sequence[str],
    systems: Sequence[Reordering],
    target: Optional[Sequence[str]] = None,
    links: Optional[Sequence[Tuple[int, int]]] = None,
    title: str = "",
) -> str:
    """Write the drawing to ``path``; returns a note on the labels used (font or fallback)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(tokens)
    font = _font_for(tokens)
    aligned = _aligned_words(n, target, links)
    gloss_font = _font_for(aligned) if aligned is not None and font is not None else None
    gloss = gloss_font is not None
    if font is not None:
        labels = list(tokens)
        note = f"tokens drawn with font {font.get_name()!r}"
    else:
        labels = [f"{j}:{a}" if a else f"{j}:-" for j, a in enumerate(aligned or [""] * n)]
        note = ("no installed font has these glyphs (e.g. apt-get install fonts-noto-cjk); tokens are "
                "labelled index:aligned target words")
    fig, axes = plt.subplots(len(systems), 1, figsize=(max(6.0, 0.85 * n + 1.5), 3.2 * len(systems) + 0.6),
                             squeeze=False)
    for ax, sysm in zip(axes[:, 0], systems):
        _draw_system(ax, sysm, labels, font, aligned if gloss else None, gloss_font)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return note
