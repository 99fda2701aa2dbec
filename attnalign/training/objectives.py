"""The agreement objective beside the guide (``--agree-weight``), after Liang et al. (2006) and Cheng
et al. (2016): the two directions, trained together, are pulled towards the same matrix (squared
difference of the forward head's [T, S] and the reverse head's [S, T] transposed, on word cells; the
EOS row and column, which each direction reads as "no link", are left out).

Shapes follow :mod:`attnalign.nmt.batching`: a forward head's rows are ``[B, T+1, S+1]`` (row t
predicts target token t; the last row predicts EOS; the last real column is the source EOS).
"""

from __future__ import annotations

import torch


def agreement_loss(fwd: torch.Tensor, rev: torch.Tensor, src_len: list[int], tgt_len: list[int]
                   ) -> torch.Tensor:
    """Squared difference of the two directions' heads on word cells, per row of either direction.

    fwd ``[B, T+1, S+1]`` (the source-to-target head on the batch), rev ``[B, S+1, T+1]`` (the
    target-to-source head on the same pairs, sides swapped); src_len / tgt_len: words per sentence
    -> a scalar: sum over cells (t < T_b, j < S_b) of (fwd - rev^T)^2 / sum_b (T_b + S_b)."""
    B, T1, S1 = fwd.shape
    dev = fwd.device
    t_ok = torch.arange(T1, device=dev).unsqueeze(0) < torch.tensor(tgt_len, device=dev).unsqueeze(1)
    s_ok = torch.arange(S1, device=dev).unsqueeze(0) < torch.tensor(src_len, device=dev).unsqueeze(1)
    cells = t_ok.unsqueeze(2) & s_ok.unsqueeze(1)  # [B, T+1, S+1]
    diff = (fwd.float() - rev.float().transpose(1, 2)).masked_fill(~cells, 0.0)
    return diff.pow(2).sum() / max(1, sum(tgt_len) + sum(src_len))
