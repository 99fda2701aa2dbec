"""Guided alignment (Garg et al. 2019): the teacher's word links -> per-token attention targets, and
the loss that pulls the attention (or the alignment head) towards them.

Shapes: a batch's decoder steps are ``[B, T+1]`` and its source positions ``[B, S+1]`` (EOS last; see
:mod:`attnalign.nmt.batching`); targets and attention rows are ``[B, T+1, S+1]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from .. import dist, statistical
from ..data.alignments import Link
from ..data.corpus import Pairs, pair_keys
from ..nmt.subword import Segmenter
from ..statistical import teacher_file
from ..statistical.ids import CHUNK_PAIRS, chunks
from .options import TrainOptions


def teacher_links(pairs: Pairs, options: TrainOptions, note=None) -> tuple[list[list[Link]], object]:
    """The built-in statistical aligner's links for ``pairs`` (``guide="auto"``), with its stage told
    to ``note`` (a callable taking a message) if given, and the fitted teacher
    (:class:`~attnalign.statistical.SoftTeacher`, whose matrices the model directory keeps; None under
    torchrun, where each process holds a share of it)."""
    t0 = time.perf_counter()
    if note:
        note(f"guide: aligning {len(pairs)} pairs with {options.teacher.aligner.model} ...")
    chosen = options.teacher.aligner
    teacher = None
    if dist.launched():
        links = statistical.align_statistical(pairs, **chosen.as_kwargs())
    else:
        teacher = statistical.SoftTeacher(pairs, chosen.model, prefix=chosen.prefix,
                                          identical=chosen.identical, samplers=chosen.samplers,
                                          seed=chosen.seed, keep=True)
        links = [x for lo, hi in chunks(len(pairs), CHUNK_PAIRS) for x in teacher.links(lo, hi, chosen.sym)]
    if note:
        note(f"guide: {sum(map(len, links))} links in {time.perf_counter() - t0:.0f} s")
    return links, teacher


def keep_teacher(model_dir, teacher, keep: list[int], pairs: Pairs, options: TrainOptions,
                 fingerprint: str) -> None:
    """Write the teacher's matrices of the training corpus (``teacher`` was fitted on its pairs
    ``keep``) and the counts it learned into the model directory
    (:mod:`attnalign.statistical.teacher_file`)."""
    shapes = [(len(t), len(s)) for s, t in pairs]
    teacher_file.save_matrices(Path(model_dir) / teacher_file.FILE, teacher, keep, shapes,
                               teacher_file.teacher_meta(asdict(options.teacher.aligner), fingerprint,
                                                         len(pairs)),
                               pair_keys(pairs))


def guide_targets(batch, tok_links: Sequence[Sequence[tuple[int, int]]], null_to_eos: bool = False
                  ) -> torch.Tensor:
    """Target attention for guided training, [B, T+1, S+1], on the batch's device: row j (the step
    predicting target token j) is uniform over the source tokens linked to token j. Rows of unlinked
    target tokens are all zero (not supervised), or with ``null_to_eos`` put on the source EOS, which
    decoding reads as "no link" (the alignment head learns NULL alignment that way). The EOS row and
    padding are never supervised. ``tok_links``: each pair's (source, target) token links, as lists of
    pairs or [L, 2] arrays (:func:`link_arrays`). The cells to set are found on the host from the
    batch's lengths and sent in one copy that does not wait for the device."""
    B, T = batch.tgt_in.shape
    S = batch.src.size(1)
    arrays = [np.asarray(lk, dtype=np.int64).reshape(-1, 2) for lk in tok_links]
    links = np.concatenate(arrays) if arrays else np.zeros((0, 2), np.int64)
    rows = np.repeat(np.arange(B), [len(a) for a in arrays]) * T + links[:, 1]  # [L] in [B*T]
    cells = rows * S + links[:, 0]  # [L] in [B*T*S]
    if null_to_eos:
        unlinked = np.arange(T)[None, :] < np.asarray(batch.tgt_len)[:, None]  # [B, T]
        unlinked.reshape(-1)[rows] = False
        k, j = np.nonzero(unlinked)
        cells = np.concatenate([cells, (k * T + j) * S + np.asarray(batch.src_len, dtype=np.int64)[k]])
    g = torch.zeros(B * T * S, device=batch.src.device)
    g[to_device(cells, batch.src.device)] = 1.0
    g = g.view(B, T, S)
    return g / g.sum(-1, keepdim=True).clamp(min=1.0)


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A host array on ``device``: to a GPU through pinned memory, without waiting for it."""
    t = torch.from_numpy(array)
    return t.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else t.to(device)


def link_arrays(tok_links: Sequence[Sequence[tuple[int, int]]]) -> list[np.ndarray]:
    """Each pair's links as an [L, 2] int32 array: a tenth of the memory of tuples, and what
    :func:`guide_targets` joins without a loop over the links."""
    return [np.asarray(lk, dtype=np.int32).reshape(-1, 2) for lk in tok_links]


def guide_loss(att: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of attention rows [B, T, S] against guide rows, averaged over guided rows."""
    rows = target.sum(-1) > 0
    ce = -(target * torch.log(att.clamp(min=1e-9))).sum(-1)
    # a masked mean, not ce[rows]: nothing waits for the device to learn how many rows are guided
    return ce.masked_fill(~rows, 0.0).sum() / rows.sum().clamp(min=1)


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
    s_of: dict[int, list[int]] = {}
    for k, w in enumerate(s_index):
        s_of.setdefault(w, []).append(k)
    t_of: dict[int, list[int]] = {}
    for k, w in enumerate(t_index):
        t_of.setdefault(w, []).append(k)
    return [(a, b) for i, j in links for a in s_of.get(i, ()) for b in t_of.get(j, ())]
