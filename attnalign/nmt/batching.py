"""Length-bucketed batches under a token budget, as padded id tensors.

A source sentence x_1..x_S is encoded ``x_1 .. x_S </s>`` (S+1 positions; the EOS column collects
attention that belongs to no word). A target y_1..y_T gives the decoder input ``<s> y_1 .. y_T`` and
the output ``y_1 .. y_T </s>`` (T+1 steps). Row t of an attention matrix is the step whose input is
token t of the decoder input (row 0: input <s>, predicting y_1).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch

from .vocab import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Batch:
    """Padded tensors of one batch; ``index`` maps rows back to corpus positions."""

    index: list[int]
    src: torch.Tensor  # [B, S+1] source ids + EOS, padded with PAD_ID
    src_mask: torch.Tensor  # [B, S+1] True at real positions
    tgt_in: torch.Tensor  # [B, T+1] BOS + target ids
    tgt_out: torch.Tensor  # [B, T+1] target ids + EOS, PAD_ID where padded
    src_len: list[int]  # words per source sentence (without EOS)
    tgt_len: list[int]  # words per target sentence (without EOS)

    @property
    def lengths(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The real positions of each row of ``src`` and of ``tgt_in`` ([B] each, EOS or BOS included),
        on the CPU: what packing a sequence reads, known without waiting for the device."""
        return torch.tensor(self.src_len) + 1, torch.tensor(self.tgt_len) + 1

    @property
    def tokens(self) -> int:
        """The target tokens the batch predicts (its words and an EOS a row), known without the device."""
        return sum(self.tgt_len) + len(self.tgt_len)

    def to(self, device: torch.device | str) -> Batch:
        """The tensors on ``device``; to a GPU through pinned memory without waiting (no host stall),
        the mask made there."""
        device = torch.device(device)
        if device.type != "cuda":
            return Batch(self.index, self.src.to(device), self.src_mask.to(device),
                         self.tgt_in.to(device), self.tgt_out.to(device), self.src_len, self.tgt_len)
        src, tgt_in, tgt_out = (t.pin_memory().to(device, non_blocking=True)
                                for t in (self.src, self.tgt_in, self.tgt_out))
        return Batch(self.index, src, src != PAD_ID, tgt_in, tgt_out, self.src_len, self.tgt_len)


def make_batch(index: Sequence[int], src_ids: Sequence[Sequence[int]],
               tgt_ids: Sequence[Sequence[int]]) -> Batch:
    """Pad the given encoded pairs into one :class:`Batch` (whole arrays, no loop over the rows: a
    GPU's batches hold a thousand pairs)."""
    src_len = np.fromiter(map(len, src_ids), np.int64, len(src_ids))
    tgt_len = np.fromiter(map(len, tgt_ids), np.int64, len(tgt_ids))
    src = _padded(src_ids, src_len, 0, EOS_ID)
    tgt_in = _padded(tgt_ids, tgt_len, 1, None)
    tgt_in[:, 0] = BOS_ID
    tgt_out = _padded(tgt_ids, tgt_len, 0, EOS_ID)
    src_t = torch.from_numpy(src)
    return Batch(list(index), src_t, src_t != PAD_ID, torch.from_numpy(tgt_in), torch.from_numpy(tgt_out),
                 src_len.tolist(), tgt_len.tolist())


def _padded(rows: Sequence[Sequence[int]], lengths: np.ndarray, start: int, end: int | None) -> np.ndarray:
    """[B, max length + 1] ids: row k's ids from column ``start``, ``end`` (if any) after them, PAD_ID
    elsewhere."""
    width = int(lengths.max()) + 1
    out = np.full((len(rows), width), PAD_ID, dtype=np.int64)
    cols = np.arange(width)[None, :] - start
    out[(cols >= 0) & (cols < lengths[:, None])] = np.fromiter(chain.from_iterable(rows), np.int64,
                                                                int(lengths.sum()))
    if end is not None:
        out[np.arange(len(rows)), lengths + start] = end
    return out


def bucket_batches(lengths: Sequence[tuple[int, int]], batch_tokens: int,
                   rng: random.Random | None = None) -> list[list[int]]:
    """Group example indices into batches of similar length whose padded size (the longer side's
    max length + 1, times the batch size) stays within ``batch_tokens``.

    With ``rng`` the examples are shuffled within length buckets and the batch order is shuffled (for
    training); without, batches come in length order (for extraction; restore corpus order after).
    """
    order = list(range(len(lengths)))
    if rng is not None:
        rng.shuffle(order)
    order.sort(key=lambda i: (max(lengths[i]), lengths[i]))  # stable: shuffled within equal lengths
    batches: list[list[int]] = []
    cur: list[int] = []
    cur_max = 0
    for i in order:
        n = max(lengths[i]) + 1
        if cur and max(cur_max, n) * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, cur_max = [], 0
        cur.append(i)
        cur_max = max(cur_max, n)
    if cur:
        batches.append(cur)
    if rng is not None:
        rng.shuffle(batches)
    return batches
