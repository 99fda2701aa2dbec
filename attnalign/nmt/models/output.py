"""What every model's ``forward`` returns."""

from __future__ import annotations

from typing import NamedTuple

import torch


class ModelOutput(NamedTuple):
    """``logits [B, T, V]``; ``attention``: ``[B, T, S]`` (RNN) or ``[B, layers, heads, T, S]``
    (Transformer cross-attention); ``align``: the alignment head's ``[B, T, S]``, None without one."""

    logits: torch.Tensor
    attention: torch.Tensor
    align: torch.Tensor | None
