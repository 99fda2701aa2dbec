"""Guided alignment (Garg et al. 2019): the teacher's word links -> per-token attention targets, and
the loss that pulls the attention (or the alignment head) towards them.

Shapes: a batch's decoder steps are ``[B, T+1]`` and its source positions ``[B, S+1]`` (EOS last; see
:mod:`attnalign.nmt.batching`); targets and attention rows are ``[B, T+1, S+1]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from .. import statistical
from ..data.alignments import Link
from ..data.corpus import Pairs
from ..nmt.subword import Segmenter
from .options import TrainOptions

SOFT_FLOOR = 0.01  # teacher cells kept as soft guide targets: lower beliefs are noise and memory


class Guide(NamedTuple):
    """The built-in teacher's guide for a corpus: its links per pair (source first), and with
    ``--guide-soft`` its soft matrices as sparse cells ``(src_i, tgt_j, belief)`` per pair."""

    links: list[list[Link]]
    soft: list[list[tuple[int, int, float]]] | None = None


def teacher_guide(pairs: Pairs, options: TrainOptions, note=None) -> Guide:
    """The built-in statistical aligner's guide for ``pairs`` (``guide="auto"``): its links, and with
    ``options.guide_soft`` its soft matrices from the same trained models. Its stage is told to
    ``note`` (a callable taking a message) if given."""
    t0 = time.perf_counter()
    if note:
        note(f"guide: aligning {len(pairs)} pairs with {options.guide_model} ...")
    t = options.teacher
    if not options.guide_soft:
        guide = Guide(statistical.align_statistical(pairs, **t.as_kwargs()))
    else:
        teacher = statistical.SoftTeacher(pairs, t.model, prefix=t.prefix, identical=t.identical)
        guide = Guide(teacher.links(0, len(pairs), t.sym),
                      [soft_cells(m) for m in teacher.matrices(0, len(pairs))])
    if note:
        note(f"guide: {sum(map(len, guide.links))} links in {time.perf_counter() - t0:.0f} s")
    return guide


def soft_cells(matrix: np.ndarray, floor: float = SOFT_FLOOR) -> list[tuple[int, int, float]]:
    """A teacher's ``[T, S]`` matrix -> its cells of at least ``floor``, ``(src_i, tgt_j, belief)``."""
    jj, ii = np.nonzero(matrix >= floor)
    return [(int(i), int(j), float(matrix[j, i])) for j, i in zip(jj, ii, strict=True)]


def guide_targets(batch, tok_links: Sequence[Sequence[tuple[int, int]]], null_to_eos: bool = False,
                  soft: Sequence[Sequence[tuple[int, int, float]]] | None = None, soft_weight: float = 0.0
                  ) -> torch.Tensor:
    """Target attention for guided training, [B, T+1, S+1]: row j (the step predicting target token j)
    is uniform over the source tokens linked to token j. Rows of unlinked target tokens are all zero
    (not supervised), or with ``null_to_eos`` put on the source EOS, which decoding reads as "no link"
    (the alignment head learns NULL alignment that way). The EOS row and padding are never supervised.

    ``soft`` (token cells ``(src, tgt, belief)`` per pair, see :func:`token_soft`) with ``soft_weight``
    w: each row is ``(1 - w) * links row + w * soft row``, the soft row being the teacher's beliefs
    with the rest of its mass (its belief in no link) on the source EOS under ``null_to_eos``."""
    hard = _rows(batch, [[(i, j, 1.0) for i, j in lk] for lk in tok_links], null_to_eos, spread=True)
    if soft is None or not soft_weight:
        return hard
    mixed = (1 - soft_weight) * hard + soft_weight * _rows(batch, soft, null_to_eos, spread=False)
    return mixed / mixed.sum(-1, keepdim=True).clamp(min=1e-9)


def _rows(batch, cells: Sequence[Sequence[tuple[int, int, float]]], null_to_eos: bool, spread: bool
          ) -> torch.Tensor:
    """Target rows [B, T+1, S+1] from token cells: ``spread``: each row uniform over its cells; else
    the beliefs as given, the row's missing mass on the source EOS (``null_to_eos``) or the row
    rescaled to 1. Rows without cells (nor EOS mass) stay zero."""
    B, T = batch.tgt_in.shape
    g = torch.zeros(B, T, batch.src.size(1))
    for k, row in enumerate(cells):
        if row:
            ii, jj, w = zip(*row, strict=True)
            g[k, list(jj), list(ii)] = torch.tensor(w, dtype=g.dtype)
        if null_to_eos:
            n = batch.tgt_len[k]
            mass = g[k, :n].sum(-1)
            g[k, :n, batch.src_len[k]] = (mass == 0).float() if spread else (1 - mass).clamp(min=0)
    return g / g.sum(-1, keepdim=True).clamp(min=1.0 if spread else 1e-9)


def guide_loss(att: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of attention rows [B, T, S] against guide rows, averaged over guided rows."""
    rows = target.sum(-1) > 0
    if not rows.any():
        return att.new_zeros(())
    ce = -(target * torch.log(att.clamp(min=1e-9))).sum(-1)
    return ce[rows].mean()


def token_links(src_seg: Segmenter | None, tgt_seg: Segmenter | None, pairs: Pairs,
                links: Sequence[Sequence[Link]]) -> list[list[tuple[int, int]]]:
    """Word links -> model-token links (every piece of the source word x every piece of the target)."""
    ss, ts = src_seg or Segmenter(), tgt_seg or Segmenter()
    return [pieces_links(ss.segment(s)[1], ts.segment(t)[1], lk)
            for (s, t), lk in zip(pairs, links, strict=True)]


def pieces_links(s_index: Sequence[int], t_index: Sequence[int], links: Sequence[Link]
                 ) -> list[tuple[int, int]]:
    """One pair's word links -> token links (source token, target token): every piece of the source word
    x every piece of the target word. ``s_index[k]`` / ``t_index[k]``: the word of token k."""
    s_of, t_of = _pieces_of(s_index), _pieces_of(t_index)
    return [(a, b) for i, j in links for a in s_of.get(i, ()) for b in t_of.get(j, ())]

def token_soft(src_seg: Segmenter | None, tgt_seg: Segmenter | None, pairs: Pairs,
               soft: Sequence[Sequence[tuple[int, int, float]]]) -> list[list[tuple[int, int, float]]]:
    """Word cells ``(src_i, tgt_j, belief)`` -> model-token cells: each piece of the target word gets
    the word's beliefs, shared equally among the pieces of each source word (a row keeps its mass)."""
    ss, ts = src_seg or Segmenter(), tgt_seg or Segmenter()
    out = []
    for (s, t), cells in zip(pairs, soft, strict=True):
        s_of, t_of = _pieces_of(ss.segment(s)[1]), _pieces_of(ts.segment(t)[1])
        out.append([(a, b, p / len(s_of[i])) for i, j, p in cells if i in s_of
                    for a in s_of[i] for b in t_of.get(j, ())])
    return out


def _pieces_of(index: Sequence[int]) -> dict[int, list[int]]:
    """``index[k]``: the word of token k -> each word's tokens."""
    of: dict[int, list[int]] = {}
    for k, w in enumerate(index):
        of.setdefault(w, []).append(k)
    return of
