"""Teacher-forced attention extraction: token pairs -> per-pair word attention matrices.

The reference target is fed to the decoder (nothing is generated); what each batch gives is read by
the readout :class:`AttentionSpec` names (:mod:`.readouts`: the attention weights, their norm-weighted
form, or a gradient saliency, which alone computes the output vocabulary's probabilities). Batches are
length-bucketed and run under ``torch.inference_mode()`` (a gradient readout: with gradients); results
come back in corpus order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..errors import OptionError
from .batching import bucket_batches, make_batch
from .device import flushed_denormals
from .options import BATCH_TOKENS, GRADIENT_BATCH_TOKENS
from .readouts import AttentionSpec, readout
from .subword import Segmenter
from .words import select_rows, tokens_to_words

if TYPE_CHECKING:
    from .checkpoint import LoadedModel


def model_attention(model, b, spec: AttentionSpec = AttentionSpec()) -> torch.Tensor:
    """The matrix ``spec`` names for batch ``b``, ``[B, T+1, S+1]``: its readout of the alignment head or
    of a reduced layer/head."""
    return readout(spec.readout).read(model, b, spec)


def batch_tokens_for(spec: AttentionSpec, device: str | torch.device, batch_tokens: int | None = None) -> int:
    """The padded tokens a batch holds: ``batch_tokens`` where given, else :data:`BATCH_TOKENS`, or for a
    gradient readout on a CPU :data:`GRADIENT_BATCH_TOKENS`."""
    if batch_tokens is not None:
        return batch_tokens
    cpu = torch.device(device).type == "cpu"
    return GRADIENT_BATCH_TOKENS if readout(spec.readout).gradients and cpu else BATCH_TOKENS


def iter_attention(
    lm: LoadedModel,
    pairs: Sequence[tuple[Sequence[str], Sequence[str]]],
    spec: AttentionSpec = AttentionSpec(),
    batch_tokens: int | None = None,
    device: str | torch.device = "cpu",
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(index, matrix [T, S], eos_mass [T])`` over words for every pair, in length-bucket order.

    Subword models run on pieces; the piece matrix is cut (with ``spec.shift`` applied to pieces) and
    mapped back to words. Pairs with an empty side yield empty matrices without running the model.
    ``lm`` may also be a pretrained :class:`~attnalign.nmt.hf.HFModel`, which extracts its own way.
    ``batch_tokens``: padded tokens a batch (None: :func:`batch_tokens_for`'s).
    """
    batch_tokens = batch_tokens_for(spec, device, batch_tokens)
    if hasattr(lm, "iter_attention"):  # a pretrained model extracts its own way
        if spec.readout != "attention":
            raise OptionError(f"--readout {spec.readout} reads attnalign models; a pretrained model gives "
                              "its attention", hint="leave --readout out")
        yield from lm.iter_attention(pairs, spec, batch_tokens, device)
        return
    read = readout(spec.readout)
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
    # a gradient readout differentiates the model with respect to its input: the weights' gradients,
    # as many products again, are not formed (their flags are put back after)
    frozen = [p for p in model.parameters() if p.requires_grad] if read.gradients else []
    for p in frozen:
        p.requires_grad_(False)
    try:
        # a gradient readout differentiates the model; the others read it without building a graph
        with torch.enable_grad() if read.gradients else torch.inference_mode():
            for group in bucket_batches(lengths, batch_tokens):
                idx = [todo[k] for k in group]
                b = make_batch(idx, [src_ids[i] for i in idx], [tgt_ids[i] for i in idx]).to(device)
                with flushed_denormals():
                    att = model_attention(model, b, spec)
                att = att.detach().float().cpu().numpy()
                for k, i in enumerate(idx):
                    m, eos = select_rows(att[k], b.src_len[k], b.tgt_len[k], spec.shift)
                    if src_seg.is_subword or tgt_seg.is_subword:
                        (_, s_idx), (_, t_idx) = seg[i]
                        m, eos = tokens_to_words(m, eos, s_idx, t_idx, len(pairs[i][0]), len(pairs[i][1]))
                    yield i, m, eos
    finally:
        model.train(was_training)
        for p in frozen:
            p.requires_grad_(True)


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

