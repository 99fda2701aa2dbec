"""An alignment head: one extra attention over the encoder memory, read for alignment only.

The translation attention at decoder step t sees the target prefix but not the word it is about to
predict, so it is a guess about where that word comes from. For alignment the whole target sentence
is known (extraction is teacher-forced), so this head's query for step t also reads the word being
predicted and its full sentence context (a bidirectional GRU over the target embeddings), in the
spirit of the "full target context" alignment layer of Garg et al. (2019) and the alignment layer of
Zenkel et al. (2019). Because its query sees the word it aligns, its context vector never feeds the
translation: the head is trained by guided alignment alone (``attnalign train --align-head --guide``),
while sharing the encoder (and the target embeddings) with the translation model.

Shapes: memory ``[B, S, D]``, src_mask ``[B, S]``, decoder states ``[B, T, D]`` (row t: the step that
predicts ``tgt_out[:, t]``), target input embeddings ``[B, T, E]`` of ``tgt_in`` (BOS + target),
tgt_mask ``[B, T]``; a head of a network without a decoder (``--head-only``) reads no decoder states,
only its target context; the result is ``[B, T, S]``, rows summing to 1, padding exactly 0. Row t aligns
``tgt_out[:, t] = tgt_in[:, t + 1]``; the last row (EOS) has no target word and sees zeros.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import Attention
from .recurrent import run_recurrent


class AlignHead(nn.Module):
    def __init__(self, emb_dim: int, dim: int, attention: str = "general", dropout: float = 0.0,
                 reads_states: bool = True):
        super().__init__()
        self.dim = dim
        self.context = nn.GRU(emb_dim, dim, batch_first=True, bidirectional=True)
        # without decoder states (a network of the head alone) the query reads the target's context only
        self.query = nn.Linear((3 if reads_states else 2) * dim, dim)
        self.attn = Attention(attention, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, memory: torch.Tensor, src_mask: torch.Tensor, states: torch.Tensor | None,
                tgt_emb: torch.Tensor, tgt_mask: torch.Tensor, lengths: torch.Tensor | None = None
                ) -> torch.Tensor:
        """Weights [B, T, S]; ``states`` None for a head without them; ``lengths``: ``tgt_mask``'s row
        sums [B] on the CPU, if the caller has them."""
        B, T, _ = tgt_emb.shape
        lengths = tgt_mask.sum(1).cpu() if lengths is None else lengths
        ctx, _ = run_recurrent(self.context, tgt_emb, lengths)  # [B, T, 2D]
        nxt = torch.cat([ctx[:, 1:], ctx.new_zeros(B, 1, ctx.size(-1))], 1)  # row t <- token t + 1
        read = nxt if states is None else torch.cat([states, nxt], -1)
        q = torch.tanh(self.query(self.drop(read)))  # [B, T, D]
        return self.attn.weights(q, src_mask, self.attn.precompute(memory))
