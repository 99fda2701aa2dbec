"""Attention scorers for the RNN decoder (JoeyNMT style: they return their weights).

All take queries ``[B, T, D]`` and keys ``[B, S, D]`` (values are the keys) and a mask ``[B, S]`` that
is True at real source positions, and return ``(context [B, T, D], weights [B, T, S])``. Masked
positions get exactly 0 weight; each row sums to 1.

* ``additive`` (Bahdanau et al. 2015): score = v^T tanh(W_q q + W_k k)
* ``dot`` (Luong et al. 2015): score = q^T k
* ``general`` (Luong et al. 2015, bilinear): score = q^T W k
* ``scaled-dot`` (Vaswani et al. 2017): score = q^T k / sqrt(D)
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..configs import ATTENTION_TYPES


class Attention(nn.Module):
    def __init__(self, kind: str, dim: int):
        super().__init__()
        if kind not in ATTENTION_TYPES:
            raise ValueError(f"unknown attention {kind!r}; choose one of {', '.join(ATTENTION_TYPES)}")
        self.kind, self.dim = kind, dim
        if kind == "additive":
            self.w_q = nn.Linear(dim, dim, bias=False)
            self.w_k = nn.Linear(dim, dim, bias=False)
            self.v = nn.Linear(dim, 1, bias=False)
        elif kind == "general":
            self.w = nn.Linear(dim, dim, bias=False)

    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        """Per-batch projection of the keys [B, S, D] reused at every decoder step."""
        if self.kind == "additive":
            return self.w_k(keys)
        if self.kind == "general":
            return self.w(keys)
        return keys

    def forward(
        self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor,
        proj_keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if proj_keys is None:
            proj_keys = self.precompute(keys)
        weights = self.weights(query, mask, proj_keys)
        return torch.bmm(weights, keys), weights

    def weights(self, query: torch.Tensor, mask: torch.Tensor, proj_keys: torch.Tensor) -> torch.Tensor:
        """The weights alone [B, T, S], from :meth:`precompute`'s projection of the keys."""
        if self.kind == "additive":
            # [B, T, 1, D] + [B, 1, S, D] -> [B, T, S]
            scores = self.v(torch.tanh(self.w_q(query).unsqueeze(2) + proj_keys.unsqueeze(1))).squeeze(-1)
        else:
            scores = torch.bmm(query, proj_keys.transpose(1, 2))  # [B, T, S]
            if self.kind == "scaled-dot":
                scores = scores / math.sqrt(self.dim)
        scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        return torch.softmax(scores, dim=-1)  # [B, T, S], exactly 0 where masked
