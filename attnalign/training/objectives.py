"""Alignment objectives beside the guide: what the alignment head learns that no teacher tells it.

- :func:`lexical_loss` (``--lexicon-weight``), self-supervised, in the spirit of the alignment layers
  of Zenkel et al. (2019) and Mask-Align (Chen et al. 2021): the head's row t must explain target word
  y_t as a mixture over the source, p(y_t) = sum_j a_tj p(y_t | x_j), with p(y | x_j) a lexicon read
  from the source word's embedding alone (:class:`Lexicon`). A mixture, not a prediction from the
  mixed vector: the head's query sees y_t, and a weighted sum of embeddings could carry its identity;
  a mixture of per-word predictions cannot, so the only way to raise p(y_t) is to put the weight on
  the source words that translate it (the source EOS column is the null word).
- :func:`agreement_loss` (``--agree-weight``), after Liang et al. (2006) and Cheng et al. (2016): the
  two directions, trained together, are pulled towards the same matrix (squared difference of the
  forward head's [T, S] and the reverse head's [S, T] transposed, on word cells; the EOS row and
  column, which each direction reads as "no link", are left out).

Shapes follow :mod:`attnalign.nmt.batching`: a forward head's rows are ``[B, T+1, S+1]`` (row t
predicts target token t; the last row predicts EOS; the last real column is the source EOS).
"""

from __future__ import annotations

import torch
from torch import nn

from ..nmt.vocab import EOS_ID, PAD_ID


class Lexicon(nn.Module):
    """log p(y | x_j) for every target word y from source embeddings: ``[B, S, E] -> [B, S, V]``."""

    def __init__(self, emb_dim: int, tgt_vocab_size: int, hidden: int = 256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(emb_dim, hidden), nn.Tanh(), nn.Linear(hidden, tgt_vocab_size))

    def forward(self, src_emb: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.net(src_emb).float(), dim=-1)


def lexical_loss(align: torch.Tensor, lex_logp: torch.Tensor, src_mask: torch.Tensor,
                 tgt_out: torch.Tensor) -> torch.Tensor:
    """Mean over target words (EOS and padding left out) of -log sum_j a_tj p(y_t | x_j).

    align ``[B, T, S]`` (rows sum to 1 over real columns), lex_logp ``[B, S, V]``, src_mask ``[B, S]``,
    tgt_out ``[B, T]`` -> a scalar."""
    B, S, _ = lex_logp.shape
    T = tgt_out.size(1)
    words = (tgt_out != PAD_ID) & (tgt_out != EOS_ID)  # [B, T]
    if not words.any():
        return align.new_zeros(())
    lex = lex_logp.gather(2, tgt_out.clamp(min=0).unsqueeze(1).expand(B, S, T)).transpose(1, 2)  # [B, T, S]
    log_a = torch.log(align.float().clamp(min=1e-9)).masked_fill(~src_mask.unsqueeze(1), float("-inf"))
    return -torch.logsumexp(log_a + lex, dim=-1)[words].mean()


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
