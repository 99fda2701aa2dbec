"""What every model's ``forward`` returns."""

from __future__ import annotations

from typing import NamedTuple

import torch


class ModelOutput(NamedTuple):
    """``logits [B, T, V]`` (None for a network that does not learn to translate: ``translation``
    off); ``attention``: ``[B, T, S]`` (RNN; None for the alignment head alone, ``head_only``) or
    ``[B, layers, heads, T, S]`` (Transformer cross-attention); ``align``: the alignment head's
    ``[B, T, S]``, None without one."""

    logits: torch.Tensor | None
    attention: torch.Tensor | None
    align: torch.Tensor | None
