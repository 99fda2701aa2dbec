"""Attention scorers for the RNN decoder (JoeyNMT style: they return their weights).

All take queries ``[B, T, D]`` and keys ``[B, S, D]`` (values are the keys) and a mask ``[B, S]`` that
is True at real source positions, and return ``(context [B, T, D], weights [B, T, S])``. Masked
positions get exactly 0 weight; each row of the weights returned sums to 1.

Scores: the registry of :mod:`attnalign.nmt.scores` (additive, dot, general, scaled-dot, cosine; each
adds its weights to this module and computes the ``[B, T, S]`` scores before the softmax).

Spans (Luong et al. 2015, section 3.2):

* ``global``: every source position.
* ``local-m``: the window [p_t - D, p_t + D] around p_t = t * S / T (the target step scaled to the source
  length, S and T the pair's source and target lengths), softmax inside it.
* ``local-p``: the window around the predicted p_t = S * sigmoid(v_p^T tanh(W_p q_t)), softmax inside
  it, each weight then multiplied by exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2. The decoder's
  context uses those weights as they are; the weights returned (read as a soft alignment) are the same
  renormalised over the source so that a row sums to 1.
"""

from __future__ import annotations

import torch
from torch import nn

from ..configs import ATTENTION_SPANS
from ..scores import SCORES


class Attention(nn.Module):
    def __init__(self, kind: str, dim: int, span: str = "global", window: int = 0):
        super().__init__()
        if kind not in SCORES:
            raise ValueError(f"unknown attention {kind!r}; choose one of {', '.join(SCORES)}")
        if span not in ATTENTION_SPANS:
            raise ValueError(f"unknown attention span {span!r}; choose one of {', '.join(ATTENTION_SPANS)}")
        if span != "global" and window < 1:
            raise ValueError(f"a {span} attention needs a window of at least 1, not {window}")
        self.kind, self.dim, self.span, self.window = kind, dim, span, window
        self.record: list[torch.Tensor] | None = None  # a list: positions() appends each p_t [B, T] to it
        self.score = SCORES[kind]
        self.score.build(self, dim)
        if span == "local-p":
            self.w_p = nn.Linear(dim, dim, bias=False)
            self.v_p = nn.Linear(dim, 1, bias=False)

    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        """Per-batch projection of the keys [B, S, D] reused at every decoder step."""
        return self.score.keys(self, keys)

    def forward(
        self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor,
        proj_keys: torch.Tensor | None = None, steps: torch.Tensor | None = None,
        tgt_len: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Context [B, T, D] and weights [B, T, S] (rows summing to 1); ``steps`` [T] (the target steps
        of the queries) and ``tgt_len`` [B] place local-m's window (see :meth:`used`)."""
        if proj_keys is None:
            proj_keys = self.precompute(keys)
        used = self.used(query, mask, proj_keys, steps, tgt_len)
        return torch.bmm(used, keys), self.readable(used)

    def weights(self, query: torch.Tensor, mask: torch.Tensor, proj_keys: torch.Tensor,
                steps: torch.Tensor | None = None, tgt_len: torch.Tensor | None = None) -> torch.Tensor:
        """The weights alone [B, T, S], rows summing to 1, from :meth:`precompute`'s projection."""
        return self.readable(self.used(query, mask, proj_keys, steps, tgt_len))

    def readable(self, used: torch.Tensor) -> torch.Tensor:
        """:meth:`used`'s weights as a soft alignment: rows summing to 1 (only local-p's need it)."""
        return rows_of_one(used) if self.span == "local-p" else used

    def used(self, query: torch.Tensor, mask: torch.Tensor, proj_keys: torch.Tensor,
             steps: torch.Tensor | None = None, tgt_len: torch.Tensor | None = None) -> torch.Tensor:
        """The weights the decoder's context uses [B, T, S] (local-p's Gaussian included, so its rows
        may sum to less than 1). ``steps`` [T]: the 0-based target step of each query (default
        0..T-1); ``tgt_len`` [B]: each pair's target steps (local-m; default T)."""
        scores = self.scores(query, proj_keys)
        keep = mask.unsqueeze(1)  # [B, 1, S]
        if self.span != "global":
            where = self.positions(query, mask, steps, tgt_len)  # [B, T]
            dist = torch.arange(mask.size(1), device=mask.device).view(1, 1, -1) - where.unsqueeze(-1)
            keep = keep & (dist.abs() <= self.window)  # [B, T, S]
            # a row whose window holds no source word (a padding step past the target's end): the whole
            # source, so that no row is a softmax over nothing
            keep = keep | (~keep.any(-1, keepdim=True) & mask.unsqueeze(1))
        weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)  # exactly 0 outside
        if self.span == "local-p":
            sigma = self.window / 2
            weights = weights * torch.exp(-dist.pow(2) / (2 * sigma * sigma))
        return weights

    def scores(self, query: torch.Tensor, proj_keys: torch.Tensor) -> torch.Tensor:
        """[B, T, S] before the softmax."""
        return self.score.score(self, query, proj_keys)

    def positions(self, query: torch.Tensor, mask: torch.Tensor, steps: torch.Tensor | None = None,
                  tgt_len: torch.Tensor | None = None) -> torch.Tensor:
        """p_t [B, T], the window's centre in source positions: local-m's t * S / T, local-p's
        S * sigmoid(v_p^T tanh(W_p q_t)) (S: each pair's source length)."""
        src_len = mask.sum(1, keepdim=True).to(query.dtype)  # [B, 1]
        if self.span == "local-p":
            where = src_len * torch.sigmoid(self.v_p(torch.tanh(self.w_p(query)))).squeeze(-1)
            if self.record is not None:  # what plot sentence draws: the model's guess of where it is
                self.record.append(where.detach())
            return where
        B, T = query.shape[:2]
        if steps is None:
            steps = torch.arange(T, device=query.device)
        if tgt_len is None:
            tgt_len = torch.full((B,), T, device=query.device)
        t = steps.to(query.dtype).view(1, -1)  # [1, T]
        return t * src_len / tgt_len.to(query.dtype).clamp_min(1).view(-1, 1)


def rows_of_one(weights: torch.Tensor) -> torch.Tensor:
    """``weights`` [..., S] renormalised so that every row sums to 1 (a row of zeros stays zeros)."""
    return weights / weights.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
