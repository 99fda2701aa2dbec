"""A small Transformer encoder-decoder (pre-norm) with its own multi-head attention, so the
cross-attention weights of every layer and head are kept: ``[B, layers, heads, T, S]``.

No fused attention kernels: weights are computed explicitly (softmax of q k^T / sqrt(d_head)).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..configs import TransformerConfig
from ..vocab import PAD_ID
from .align_head import AlignHead
from .output import ModelOutput


class MultiHeadAttention(nn.Module):
    """q [B, T, d], kv [B, S, d], mask [B, 1|T, S] (True = may attend) ->
    out [B, T, d], weights [B, heads, T, S]."""

    def __init__(self, d: int, heads: int, dropout: float):
        super().__init__()
        if d % heads:
            raise ValueError(f"d_model {d} is not divisible by heads {heads}")
        self.h, self.dk = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.drop = nn.Dropout(dropout)

    def forward(self, q, kv, mask):
        B, T, d = q.shape
        S = kv.size(1)
        qh = self.q(q).view(B, T, self.h, self.dk).transpose(1, 2)  # [B, h, T, dk]
        kh = self.k(kv).view(B, S, self.h, self.dk).transpose(1, 2)  # [B, h, S, dk]
        vh = self.v(kv).view(B, S, self.h, self.dk).transpose(1, 2)
        scores = qh @ kh.transpose(-1, -2) / math.sqrt(self.dk)  # [B, h, T, S]
        scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (self.drop(weights) @ vh).transpose(1, 2).reshape(B, T, d)
        return self.o(out), weights


class _FF(nn.Sequential):
    def __init__(self, d, ff, dropout):
        super().__init__(nn.Linear(d, ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ff, d))


class EncoderLayer(nn.Module):
    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.att = MultiHeadAttention(c.d_model, c.heads, c.dropout)
        self.ff = _FF(c.d_model, c.ff_dim, c.dropout)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, mask):
        y = self.n1(x)
        x = x + self.drop(self.att(y, y, mask)[0])
        return x + self.drop(self.ff(self.n2(x)))


class DecoderLayer(nn.Module):
    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.n1, self.n2, self.n3 = (nn.LayerNorm(c.d_model) for _ in range(3))
        self.self_att = MultiHeadAttention(c.d_model, c.heads, c.dropout)
        self.cross = MultiHeadAttention(c.d_model, c.heads, c.dropout)
        self.ff = _FF(c.d_model, c.ff_dim, c.dropout)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, memory, self_mask, src_mask):
        y = self.n1(x)
        x = x + self.drop(self.self_att(y, y, self_mask)[0])
        ctx, weights = self.cross(self.n2(x), memory, src_mask)
        x = x + self.drop(ctx)
        return x + self.drop(self.ff(self.n3(x))), weights


def sinusoids(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class TransformerModel(nn.Module):
    model_type = "transformer"

    def __init__(self, cfg: TransformerConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.cfg = cfg.check()
        d = cfg.d_model
        self.src_emb = nn.Embedding(src_vocab_size, d, padding_idx=PAD_ID)
        self.tgt_emb = nn.Embedding(tgt_vocab_size, d, padding_idx=PAD_ID)
        self.register_buffer("pe", sinusoids(cfg.max_len, d), persistent=False)
        self.enc = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.enc_layers))
        self.dec = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        self.enc_norm, self.dec_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(d, tgt_vocab_size) if cfg.translation else None
        self.align_head = AlignHead(d, d, "scaled-dot", cfg.dropout) if cfg.align_head else None
        for emb in (self.src_emb, self.tgt_emb):  # scaled by sqrt(d) in _embed: unit variance
            nn.init.normal_(emb.weight, std=d**-0.5)
            nn.init.zeros_(emb.weight[PAD_ID])

    def _embed(self, emb: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        if ids.size(1) > self.cfg.max_len:
            raise ValueError(f"sequence of {ids.size(1)} tokens exceeds max_len {self.cfg.max_len}")
        return self.drop(emb(ids) * math.sqrt(self.cfg.d_model) + self.pe[: ids.size(1)])

    def memory(self, src, src_mask) -> torch.Tensor:
        """The encoder's output, [B, S, d]: every cross-attention's keys and values."""
        x = self._embed(self.src_emb, src)
        for layer in self.enc:
            x = layer(x, src_mask.unsqueeze(1))
        return self.enc_norm(x)

    def _run(self, src, src_mask, tgt_in):
        """Decoder states [B, T, d], cross-attention [B, layers, heads, T, S] and memory [B, S, d]."""
        enc_mask = src_mask.unsqueeze(1)  # [B, 1, S]
        memory = self.memory(src, src_mask)
        T = tgt_in.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=src.device).tril().unsqueeze(0)  # [1, T, T]
        y = self._embed(self.tgt_emb, tgt_in)
        attns = []
        for layer in self.dec:
            y, w = layer(y, memory, causal, enc_mask)
            attns.append(w)
        return self.dec_norm(y), torch.stack(attns, 1), memory

    def forward(self, src, src_mask, tgt_in, lengths=None) -> ModelOutput:
        """Logits [B, T, V] (None without ``translation``), cross-attention [B, layers, heads, T, S] and
        the alignment head's weights [B, T, S] (None without a head). ``lengths``: as the RNN's (only
        the alignment head packs)."""
        y, attn, memory = self._run(src, src_mask, tgt_in)
        return ModelOutput(None if self.out is None else self.out(y), attn,
                           self._align(memory, src_mask, y, tgt_in, lengths[1] if lengths else None))

    def _align(self, memory, src_mask, y, tgt_in, tgt_lengths=None) -> torch.Tensor | None:
        if self.align_head is None:
            return None
        emb = self.drop(self.tgt_emb(tgt_in) * math.sqrt(self.cfg.d_model))
        return self.align_head(memory, src_mask, y, emb, tgt_in != PAD_ID, tgt_lengths)

    def attention(self, src, src_mask, tgt_in) -> torch.Tensor:
        """Cross-attention only, [B, layers, heads, T, S]: no output-vocabulary projection."""
        return self._run(src, src_mask, tgt_in)[1]

    def states(self, src, src_mask, tgt_in) -> torch.Tensor:
        """The decoder's output states the output layer reads, [B, T, d]."""
        return self._run(src, src_mask, tgt_in)[0]

    def value_norms(self, src, src_mask) -> torch.Tensor:
        """||W_O^h W_V^h m_j + W_O^h b_V^h||, [B, layers, heads, S]: the norm of what each source state
        adds, through each cross-attention head's value and output projections, to its layer's output
        (the output bias is added once, not per source state)."""
        memory = self.memory(src, src_mask)
        B, S, d = memory.shape
        norms = []
        for layer in self.dec:
            att = layer.cross
            v = att.v(memory).view(B, S, att.h, att.dk)  # [B, S, heads, dk]
            f = torch.einsum("bshk,dhk->bhsd", v, att.o.weight.view(d, att.h, att.dk))  # [B, heads, S, d]
            norms.append(torch.linalg.vector_norm(f, dim=-1))
        return torch.stack(norms, 1)

    def alignment(self, src, src_mask, tgt_in) -> torch.Tensor:
        """The alignment head's weights [B, T, S] (the model must have one)."""
        y, _, memory = self._run(src, src_mask, tgt_in)
        return self._align(memory, src_mask, y, tgt_in)
