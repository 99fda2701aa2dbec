"""RNN encoder-decoder: bidirectional GRU/LSTM encoder, GRU/LSTM decoder and one attention (its score
and span are configurable, see :mod:`.attention`), in one of two layouts (``decoder_style``):

* ``luong`` (Luong et al. 2015, the default): decoder step t (0-based) reads input token
  ``tgt_in[:, t]`` and, with input feeding, the previous attentional vector, updates its state h_t,
  attends with h_t as the query and predicts ``tgt_out[:, t]``: attention row t is computed knowing the
  target prefix up to the input token t, before seeing the token it predicts.
* ``bahdanau`` (Bahdanau et al. 2015): step t attends with the previous state s_{t-1} as the query, then
  reads ``tgt_in[:, t]`` beside the context c_t (s_t = GRU([y_{t-1}; c_t], s_{t-1})) and predicts
  ``tgt_out[:, t]`` from [s_t; c_t]: its attention row t is computed one step earlier than Luong's,
  before the input token t is read.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ...errors import OptionError
from ..configs import RNNConfig
from ..vocab import PAD_ID
from .align_head import AlignHead
from .attention import Attention
from .output import ModelOutput
from .recurrent import run_recurrent, word_tangents


class RNNModel(nn.Module):
    model_type = "rnn"

    def __init__(self, cfg: RNNConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        cfg.check()
        self.cfg = cfg
        H, E = cfg.hidden, cfg.emb_dim
        rnn = nn.GRU if cfg.cell == "gru" else nn.LSTM
        self.src_emb = nn.Embedding(src_vocab_size, E, padding_idx=PAD_ID)
        self.tgt_emb = nn.Embedding(tgt_vocab_size, E, padding_idx=PAD_ID)
        self.encoder = rnn(E, H, cfg.enc_layers, batch_first=True, bidirectional=True,
                           dropout=cfg.dropout if cfg.enc_layers > 1 else 0.0)
        self.enc_to_mem = nn.Linear(2 * H, H)  # encoder states -> attention keys/values [B, S, H]
        self.bahdanau = cfg.decoder_style == "bahdanau"
        # the decoder, its attention and the bridge to it, made in this order (a seed's weights stay)
        if not cfg.head_only:
            self.bridge = nn.Linear(2 * H, cfg.dec_layers * H)  # final encoder state -> initial decoder state
            fed = cfg.input_feeding or self.bahdanau  # Bahdanau's input holds the context
            self.decoder = rnn(E + (H if fed else 0), H, cfg.dec_layers, batch_first=True,
                               dropout=cfg.dropout if cfg.dec_layers > 1 else 0.0)
            self.attn = Attention(cfg.attention, H, cfg.attention_span, cfg.window)
            self.combine = nn.Linear(2 * H, H)  # [h_t; c_t] -> attentional vector
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(H, tgt_vocab_size) if cfg.translation else None
        if cfg.tie_embeddings and E == H and self.out is not None:
            self.out.weight = self.tgt_emb.weight
        self.align_head = (AlignHead(E, H, cfg.attention, cfg.dropout, reads_states=not cfg.head_only)
                           if cfg.align_head else None)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor, src_lengths: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """src [B, S] -> memory [B, S, H] and initial decoder state [dec_layers, B, H]. ``src_lengths``:
        the mask's row sums [B] on the CPU, where the caller has them (else read from the device, which
        waits for it)."""
        lengths = src_mask.sum(1).cpu() if src_lengths is None else src_lengths
        out, final = run_recurrent(self.encoder, self.drop(self.src_emb(src)), lengths)  # [B, S, 2H]
        if self.cfg.head_only:  # no decoder to start
            return self.enc_to_mem(out), None
        if isinstance(final, tuple):  # LSTM: (h, c)
            final = final[0]
        return self.enc_to_mem(out), self._bridged(torch.tanh(self.bridge(_top(final)))).contiguous()

    def _bridged(self, h: torch.Tensor) -> torch.Tensor:
        """``bridge``'s output [B, (S,) dec_layers * H] as decoder layers first: [dec_layers, B, (S,) H]."""
        return h.unflatten(-1, (self.cfg.dec_layers, self.cfg.hidden)).movedim(-2, 0)

    def encode_tangents(self, emb: torch.Tensor, src_mask: torch.Tensor):
        """The encoder over source embeddings ``emb`` [B, S, E] (as :meth:`encode`, without dropout) and,
        in forward mode, the derivative of what it gives along each source word's own embedding: memory
        [B, S, H], initial decoder state [dec_layers, B, H], and their tangents [B, S(s), S, H] and
        [dec_layers, B, S(s), H]. None where the encoder is not a one-layer GRU (the caller then
        differentiates in reverse mode)."""
        if self.cfg.cell != "gru" or self.cfg.enc_layers != 1 or self.cfg.head_only:
            return None
        with torch.no_grad():
            out, final, d_out, d_final = word_tangents(self.encoder, emb, src_mask.sum(1).cpu())
            h0 = torch.tanh(self.bridge(_top(final)))  # [B, L * H]
            # the maps after the recurrence: enc_to_mem is linear, the bridge's tanh scales by 1 - h0^2
            d_h0 = (1 - h0 * h0).unsqueeze(1) * F.linear(_top(d_final), self.bridge.weight)
            return (self.enc_to_mem(out), self._bridged(h0).contiguous(),
                    F.linear(d_out, self.enc_to_mem.weight), self._bridged(d_h0))

    def decode_states(self, memory, src_mask, h0, tgt_in) -> torch.Tensor:
        """The attentional vectors [B, T, H] of a teacher-forced decoding from ``memory`` and ``h0``."""
        return self._decode(memory, src_mask, h0, tgt_in)[0]

    def _decode(self, memory, src_mask, h0, tgt_in) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced decoding: attentional vectors [B, T, H] and attention [B, T, S]."""
        if self.cfg.head_only:
            raise OptionError("this model has no decoder (--head-only): its alignment head alone aligns",
                              hint="read its head: leave --layer out (--readout saliency needs a "
                                   "translating model)")
        emb = self.drop(self.tgt_emb(tgt_in))  # [B, T, E]
        proj = self.attn.precompute(memory)
        state = h0 if self.cfg.cell == "gru" else (h0, torch.zeros_like(h0))
        local = self.attn.span != "global"
        tgt_len = (tgt_in != PAD_ID).sum(1) if local else None  # local-m's p_t = t * S / T
        steps = torch.arange(tgt_in.size(1), device=tgt_in.device) if local else None
        if self.bahdanau:
            return self._decode_bahdanau(emb, memory, src_mask, proj, state, steps, tgt_len)
        if not self.cfg.input_feeding:  # the whole target in one RNN call, attention in parallel
            h, _ = run_recurrent(self.decoder, emb, None, state)
            ctx, weights = self.attn(h, memory, src_mask, proj, steps, tgt_len)
            return self.drop(torch.tanh(self.combine(torch.cat([h, ctx], -1)))), weights
        if self.cfg.cell == "gru" and self.cfg.dec_layers == 1:
            return self._decode_gru(emb, memory, src_mask, proj, h0[0], steps, tgt_len)
        B, T, _ = emb.shape
        feed = emb.new_zeros(B, self.cfg.hidden)
        outs, attns = [], []
        for t in range(T):
            h, state = self.decoder(torch.cat([emb[:, t], feed], -1).unsqueeze(1), state)  # [B, 1, H]
            ctx, w = self.attn(h, memory, src_mask, proj, _at(steps, t), tgt_len)  # [B, 1, H], [B, 1, S]
            feed = self.drop(torch.tanh(self.combine(torch.cat([h, ctx], -1)))).squeeze(1)
            outs.append(feed)
            attns.append(w)
        return torch.stack(outs, 1), torch.cat(attns, 1)

    def _decode_bahdanau(self, emb, memory, src_mask, proj, state, steps, tgt_len
                         ) -> tuple[torch.Tensor, torch.Tensor]:
        """Bahdanau's decoder: each step attends with the state before it (the top layer's s_{t-1}),
        then reads [y_{t-1}; c_t]; the output reads [s_t; c_t]."""
        outs, attns = [], []
        for t in range(emb.size(1)):
            top = (state[0] if isinstance(state, tuple) else state)[-1].unsqueeze(1)  # s_{t-1} [B, 1, H]
            used = self.attn.used(top, src_mask, proj, _at(steps, t), tgt_len)  # [B, 1, S]
            ctx = torch.bmm(used, memory)  # [B, 1, H]
            h, state = self.decoder(torch.cat([emb[:, t:t + 1], ctx], -1), state)  # s_t [B, 1, H]
            outs.append(self.drop(torch.tanh(self.combine(torch.cat([h, ctx], -1)))).squeeze(1))
            attns.append(self.attn.readable(used))
        return torch.stack(outs, 1), torch.cat(attns, 1)

    def _decode_gru(self, emb, memory, src_mask, proj, h, steps=None, tgt_len=None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The input-feeding loop of a one-layer GRU: the same function as the generic loop, with the
        products that do not depend on the step taken out of it. The embeddings' share of the input
        gates is one product over all T steps, and the context's share of the attentional vector is
        applied to the memory once (W_c [h; sum_j a_j m_j] = W_h h + sum_j a_j (W_m m_j)), so a step
        multiplies only [B, H] vectors and the [B, 1, S] weights."""
        d, E, H = self.decoder, emb.size(-1), self.cfg.hidden
        pre = F.linear(emb, d.weight_ih_l0[:, :E], d.bias_ih_l0)  # [B, T, 3H], gates r, z, n
        w_feed = d.weight_ih_l0[:, E:].t()  # [H, 3H]
        w_state, w_ctx = self.combine.weight[:, :H], self.combine.weight[:, H:]
        mem_out = F.linear(memory, w_ctx)  # [B, S, H]
        feed = h.new_zeros(h.shape)  # the attentional vector fed back, [B, H]
        outs, attns = [], []
        for t, pre_t in enumerate(pre.unbind(1)):  # one backward node for all steps, not a copy per step
            gi_rz, gi_n = torch.addmm(pre_t, feed, w_feed).split([2 * H, H], 1)  # [B, 2H], [B, H]
            gh_rz, gh_n = F.linear(h, d.weight_hh_l0, d.bias_hh_l0).split([2 * H, H], 1)
            r, z = torch.sigmoid(gi_rz + gh_rz).chunk(2, 1)
            n = torch.tanh(gi_n + r * gh_n)
            h = torch.lerp(n, h, z)  # (1 - z) * n + z * h
            w = self.attn.used(h.unsqueeze(1), src_mask, proj, _at(steps, t), tgt_len)  # [B, 1, S]
            vec = torch.baddbmm(F.linear(h, w_state, self.combine.bias).unsqueeze(1), w, mem_out)
            feed = self.drop(torch.tanh(vec)).squeeze(1)  # [B, H]
            outs.append(feed)
            attns.append(self.attn.readable(w))
        return torch.stack(outs, 1), torch.cat(attns, 1)

    def forward(self, src, src_mask, tgt_in, lengths=None) -> ModelOutput:
        """Logits [B, T, V] (None without ``translation``), attention [B, T, S] (rows sum to 1, padding
        exactly 0) and the alignment head's weights [B, T, S] (None without a head). ``lengths``: the
        real positions of each row of ``src`` and ``tgt_in`` on the CPU (:attr:`Batch.lengths
        <attnalign.nmt.batching.Batch.lengths>`), so that packing the sequences does not wait for the
        device; None: read from the masks."""
        src_lengths, tgt_lengths = lengths or (None, None)
        memory, h0 = self.encode(src, src_mask, src_lengths)
        if self.cfg.head_only:
            return ModelOutput(None, None, self._align(memory, src_mask, None, tgt_in, tgt_lengths))
        vec, attn = self._decode(memory, src_mask, h0, tgt_in)
        logits = None if self.out is None else self.out(vec)
        return ModelOutput(logits, attn, self._align(memory, src_mask, vec, tgt_in, tgt_lengths))

    def _align(self, memory, src_mask, vec, tgt_in, tgt_lengths=None) -> torch.Tensor | None:
        if self.align_head is None:
            return None
        emb = self.drop(self.tgt_emb(tgt_in))
        return self.align_head(memory, src_mask, vec, emb, tgt_in != PAD_ID, tgt_lengths)

    def alignment(self, src, src_mask, tgt_in) -> torch.Tensor:
        """The alignment head's weights [B, T, S] (the model must have one)."""
        memory, h0 = self.encode(src, src_mask)
        vec = None if self.cfg.head_only else self._decode(memory, src_mask, h0, tgt_in)[0]
        return self._align(memory, src_mask, vec, tgt_in)

    def attention(self, src, src_mask, tgt_in) -> torch.Tensor:
        """Attention only, [B, T, S]: no output-vocabulary projection."""
        memory, h0 = self.encode(src, src_mask)
        return self._decode(memory, src_mask, h0, tgt_in)[1]

    def states(self, src, src_mask, tgt_in) -> torch.Tensor:
        """The attentional vectors the output layer reads, [B, T, H]."""
        memory, h0 = self.encode(src, src_mask)
        return self._decode(memory, src_mask, h0, tgt_in)[0]

    def memory(self, src, src_mask) -> torch.Tensor:
        """The encoder memory, [B, S, H]: the attentions' keys and values."""
        return self.encode(src, src_mask)[0]

    def value_norms(self, src, src_mask) -> torch.Tensor:
        """||W_c m_j||, [B, S]: the norm of what each source state, weighted, adds to the attentional
        vector (W_c: the context's columns of ``combine``, before its tanh)."""
        H = self.cfg.hidden
        return torch.linalg.vector_norm(F.linear(self.memory(src, src_mask), self.combine.weight[:, H:]),
                                        dim=-1)


def _top(final: torch.Tensor) -> torch.Tensor:
    """The top layer's final states of both directions side by side: [layers * 2, B, (S,) H] ->
    [B, (S,) 2H]."""
    return torch.cat([final[-2], final[-1]], dim=-1)


def _at(steps: torch.Tensor | None, t: int) -> torch.Tensor | None:
    """Step t of ``steps`` as a [1] tensor (None for a global attention, which needs no steps)."""
    return None if steps is None else steps[t:t + 1]

