"""Teacher-forced attention extraction: token pairs -> per-pair word attention matrices.

The reference target is fed to the decoder (nothing is generated); no output-vocabulary projection is
computed. Batches are length-bucketed and run under ``torch.inference_mode()``; results come back in
corpus order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..errors import OptionError
from .batching import bucket_batches, make_batch
from .device import flushed_denormals
from .options import BATCH_TOKENS
from .subword import Segmenter
from .words import select_rows, tokens_to_words

if TYPE_CHECKING:
    from .checkpoint import LoadedModel


@dataclass(frozen=True)
class AttentionSpec:
    """Which attention to read: ``layer`` ``"align"`` for the alignment head (see
    :mod:`.models.align_head`), or a Transformer layer (index, negative from the end, ``"mean"``);
    None: the alignment head where the model has one, else the penultimate layer (or the only one).
    ``head`` (index or ``"mean"``) picks among a Transformer layer's heads, and ``shift`` is 0, or 1
    for Shift-Att. RNN models have one translation attention and ignore layer indices and head."""

    layer: int | str | None = None
    head: int | str = "mean"
    shift: int = 0


def uses_align_head(model, spec: AttentionSpec) -> bool:
    """Whether ``spec`` reads ``model``'s alignment head (an error if it asks for a missing one)."""
    has = getattr(model, "align_head", None) is not None
    if spec.layer == "align" and not has:
        raise OptionError("this model has no alignment head (--layer align)",
                             hint="train it with --align-head --guide auto, or leave --layer out")
    return spec.layer == "align" or (spec.layer is None and has)


def model_attention(model, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor,
                    spec: AttentionSpec = AttentionSpec()) -> torch.Tensor:
    """The attention ``spec`` names, ``[B, T, S]``: the alignment head or a reduced layer/head."""
    if uses_align_head(model, spec):
        return model.alignment(src, src_mask, tgt_in)
    return reduce_attention(model.attention(src, src_mask, tgt_in), spec)


def default_layer(n_layers: int) -> int:
    """The decoder layer read when none is named: the penultimate one (the last of a 1-layer model),
    whose cross-attention aligns best in Transformers."""
    return -2 if n_layers > 1 else -1


def reduce_attention(att: torch.Tensor, spec: AttentionSpec) -> torch.Tensor:
    """Model attention -> one matrix per example, [B, T, S].

    ``att`` is [B, T, S] (RNN) or [B, layers, heads, T, S] (Transformer).
    """
    if att.dim() == 3:
        return att
    n_layers, n_heads = att.size(1), att.size(2)
    layer = spec.layer
    if layer == "align":
        raise OptionError("--layer align reads the alignment head, not a decoder layer")
    if layer is None:
        layer = default_layer(n_layers)
    if layer == "mean":
        att = att.mean(1)
    else:
        if not isinstance(layer, int) or not -n_layers <= layer < n_layers:
            raise OptionError(f"the model has no layer {layer!r}; valid: 0..{n_layers - 1}, "
                                 f"-{n_layers}..-1 or mean")
        att = att[:, layer]
    if spec.head == "mean":
        return att.mean(1)
    if not isinstance(spec.head, int) or not -n_heads <= spec.head < n_heads:
        raise OptionError(f"the model has no head {spec.head!r}; valid: 0..{n_heads - 1} or mean")
    return att[:, spec.head]


def iter_attention(
    lm: LoadedModel,
    pairs: Sequence[tuple[Sequence[str], Sequence[str]]],
    spec: AttentionSpec = AttentionSpec(),
    batch_tokens: int = BATCH_TOKENS,
    device: str | torch.device = "cpu",
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(index, matrix [T, S], eos_mass [T])`` over words for every pair, in length-bucket order.

    Subword models run on pieces; the piece matrix is cut (with ``spec.shift`` applied to pieces) and
    mapped back to words. Pairs with an empty side yield empty matrices without running the model.
    ``lm`` may also be a pretrained :class:`~attnalign.nmt.hf.HFModel`, which extracts its own way.
    """
    if hasattr(lm, "iter_attention"):  # a pretrained model extracts its own way
        yield from lm.iter_attention(pairs, spec, batch_tokens, device)
        return
    src_seg = lm.src_seg or Segmenter()
    tgt_seg = lm.tgt_seg or Segmenter()
    seg = [(src_seg.segment(s), tgt_seg.segment(t)) for s, t in pairs]
    src_ids = [lm.src_vocab.encode(s[0]) for s, _ in seg]
    tgt_ids = [lm.tgt_vocab.encode(t[0]) for _, t in seg]
    todo = [i for i, (s, t) in enumerate(pairs) if s and t]
    for i, (s, t) in enumerate(pairs):
        if not (s and t):
            yield i, np.zeros((len(t), len(s)), np.float32), np.zeros(len(t), np.float32)
    lengths = [(len(src_ids[i]), len(tgt_ids[i])) for i in todo]
    model = lm.model
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for group in bucket_batches(lengths, batch_tokens):
                idx = [todo[k] for k in group]
                b = make_batch(idx, [src_ids[i] for i in idx], [tgt_ids[i] for i in idx]).to(device)
                with flushed_denormals():
                    att = model_attention(model, b.src, b.src_mask, b.tgt_in, spec)
                att = att.float().cpu().numpy()
                for k, i in enumerate(idx):
                    m, eos = select_rows(att[k], b.src_len[k], b.tgt_len[k], spec.shift)
                    if src_seg.is_subword or tgt_seg.is_subword:
                        (_, s_idx), (_, t_idx) = seg[i]
                        m, eos = tokens_to_words(m, eos, s_idx, t_idx, len(pairs[i][0]), len(pairs[i][1]))
                    yield i, m, eos
    finally:
        model.train(was_training)


def corpus_attention(*args, **kwargs) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`iter_attention` collected in corpus order: a list of ``(matrix, eos_mass)``."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for i, m, eos in iter_attention(*args, **kwargs):
        out[i] = (m, eos)
    return [out[i] for i in range(len(out))]


def predicted_positions(lm, src: Sequence[str], tgt: Sequence[str], device: str | torch.device = "cpu"
                        ) -> np.ndarray | None:
    """Where a local-p attention (:mod:`.models.attention`) put its window for each target word of one
    pair: p_t in source words, ``[T]`` (word k's cell at k, the source EOS at ``len(src)``; a word of
    several pieces gets the mean of theirs); None for a model without a predicted position."""
    attn = getattr(getattr(lm, "model", None), "attn", None)
    if getattr(attn, "span", None) != "local-p" or not src or not tgt:
        return None
    s_tok, s_idx = (lm.src_seg or Segmenter()).segment(src)
    t_tok, t_idx = (lm.tgt_seg or Segmenter()).segment(tgt)
    b = make_batch([0], [lm.src_vocab.encode(s_tok)], [lm.tgt_vocab.encode(t_tok)]).to(device)
    model, attn.record = lm.model, []
    try:
        with torch.inference_mode():
            model.attention(b.src, b.src_mask, b.tgt_in)
        rows = torch.cat(attn.record, 1)[0, :len(t_tok)].float().cpu().numpy()  # one per target piece
    finally:
        attn.record = None
    # piece positions -> word positions: piece k lies in word s_idx[k]; the EOS (after the last piece)
    # is the column after the last word
    words = np.interp(rows, np.arange(len(s_tok) + 1), np.array([*s_idx, len(src)], dtype=np.float64))
    return np.array([words[np.asarray(t_idx) == j].mean() for j in range(len(tgt))])

