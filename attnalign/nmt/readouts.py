"""What a model's soft alignment is read from: its attention weights, or another readout of the same
trained network (one registration each, the registry ``--readout`` reads; torch-free until a readout
runs).

A readout is a function ``(model, batch, spec) -> [B, T+1, S+1]``: one row per decoder step (row t: the
step that predicts ``tgt_out[:, t]``), one column per source token and the source EOS, each row
summing to 1 (padding exactly 0), the shape the attention has; extraction then cuts it to words, and
decoding, symmetrization, the teacher's blend, saved files and plots take it unchanged.

* ``attention``: the weights themselves (the alignment head's, or a Transformer layer and head as
  :class:`AttentionSpec` names).
* ``norm`` (Kobayashi et al. 2020, "Attention is Not Only a Weight"): each weight times the norm of
  what the source state it weighs adds to the output, ``a_tj ||f(m_j)||``, each row renormalised. f is
  the linear map between the weighted sum and the next non-linearity: the RNN's share of the
  attentional vector that reads the context (``combine``'s context columns), a Transformer head's value
  and output projections (``W_O^h W_V^h m_j``, per layer and head, before the heads are reduced), the
  identity for the alignment head (its context feeds nothing).
* ``saliency`` (Ding, Xu and Koehn 2019, word saliency): the gradient of log p(y_t) with respect to
  each source token's embedding, times that embedding, summed over the embedding (gradient x input),
  its absolute value, each row renormalised (a row's scale, 1/p(y_t) between p and log p, cancels).
  With ``spec.smoothgrad`` = N > 0 (SmoothGrad, Smilkov et al. 2017) it is averaged over N copies of
  the embeddings with Gaussian noise (standard deviation :data:`SMOOTHGRAD_NOISE` of the spread of the
  model's source embedding values). It reads the translation's word probabilities: the layer, head and
  alignment head do not apply.
  Where the encoder is a one-layer GRU its derivative along each source word is formed in forward mode
  (:meth:`~.models.rnn.RNNModel.encode_tangents`), so a target position's backward pass stops at the
  decoder; the same matrix, a fraction of the passes.

To add one: a function and ``@register_readout(name, help)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import OptionError, require

# SmoothGrad's noise: its standard deviation as a share of the spread (max - min) of the source
# embedding values, in the 10-20% range Smilkov et al. (2017) found to give the sharpest maps
SMOOTHGRAD_NOISE = 0.15
SMOOTHGRAD_SEED = 0  # the noise is drawn from this seed per batch, so that a run repeats exactly
READOUT = "attention"  # --readout's default


@dataclass(frozen=True)
class AttentionSpec:
    """What to read: ``readout`` (a name of :data:`READOUTS`) and, for the attention it reads, ``layer``
    ``"align"`` for the alignment head (see :mod:`.models.align_head`), or a Transformer layer (index,
    negative from the end, ``"mean"``); None: the alignment head where the model has one, else the
    penultimate layer (or the only one). ``head`` (index or ``"mean"``) picks among a Transformer layer's
    heads, and ``shift`` is 0, or 1 for Shift-Att. RNN models have one translation attention and ignore
    layer indices and head. ``smoothgrad``: the noisy copies the saliency readout averages (0: none)."""

    layer: int | str | None = None
    head: int | str = "mean"
    shift: int = 0
    readout: str = READOUT
    smoothgrad: int = 0


@dataclass(frozen=True)
class Readout:
    """A registered readout: its function (see the module doc), its one-line help, and whether it
    needs gradients (extraction then runs outside ``inference_mode``)."""

    name: str
    help: str
    read: Callable
    gradients: bool = False


READOUTS: dict[str, Readout] = {}


def register_readout(name: str, help: str, gradients: bool = False) -> Callable[[Callable], Callable]:
    """Register a readout function ``(model, batch, spec) -> [B, T+1, S+1]`` under ``name`` with its
    one-line ``help`` (``--help`` reads it); ``gradients``: it differentiates the model."""
    def add(fn: Callable) -> Callable:
        READOUTS[name] = Readout(name, help, fn, gradients)
        return fn
    return add


def readout(name: str) -> Readout:
    """The readout registered as ``name`` (an OptionError naming the choices if none is)."""
    require("--readout", name, choices=tuple(READOUTS))
    return READOUTS[name]


def uses_align_head(model, spec: AttentionSpec) -> bool:
    """Whether ``spec`` reads ``model``'s alignment head (an error if it asks for a missing one)."""
    has = getattr(model, "align_head", None) is not None
    if spec.layer == "align" and not has:
        raise OptionError("this model has no alignment head (--layer align)",
                          hint="train it with --align-head --guide auto, or leave --layer out")
    alone = getattr(getattr(model, "cfg", None), "head_only", False)  # no other attention to read
    return spec.layer == "align" or (spec.layer is None and has) or alone


def default_layer(n_layers: int) -> int:
    """The decoder layer read when none is named: the penultimate one (the last of a 1-layer model),
    whose cross-attention aligns best in Transformers."""
    return -2 if n_layers > 1 else -1


def reduce_attention(att, spec: AttentionSpec):
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


@register_readout("attention", "the attention weights")
def attention(model, b, spec: AttentionSpec):
    if uses_align_head(model, spec):
        return model.alignment(b.src, b.src_mask, b.tgt_in)
    return reduce_attention(model.attention(b.src, b.src_mask, b.tgt_in), spec)


@register_readout("norm", "each attention weight times the norm of what its source state adds (Kobayashi "
                          "et al. 2020)")
def norm(model, b, spec: AttentionSpec):
    from .models.attention import rows_of_one

    src, mask = b.src, b.src_mask
    if uses_align_head(model, spec):  # its values are the memory itself: [B, T, S] and [B, S]
        weights, norms = model.alignment(src, mask, b.tgt_in), model.memory(src, mask).norm(dim=-1)
    else:
        weights, norms = model.attention(src, mask, b.tgt_in), model.value_norms(src, mask)
    # norms: [B, S], or [B, layers, heads, S] beside the Transformer's [B, layers, heads, T, S]
    return reduce_attention(rows_of_one(weights * norms.unsqueeze(-2)), spec)


@register_readout("saliency", "gradient x input of each source word for the target word's probability "
                              "(Ding et al. 2019); --smoothgrad N averages N noisy copies", gradients=True)
def saliency(model, b, spec: AttentionSpec):
    import torch

    from .models.attention import rows_of_one

    out = getattr(model, "out", None)
    if out is None:
        raise OptionError("--readout saliency differentiates the model's word probabilities; this model was "
                          "trained without its translation output", hint="use --readout attention or norm")
    table = model.src_emb.weight.detach()
    sigma = SMOOTHGRAD_NOISE * float(table.max() - table.min())
    gen = torch.Generator(device=table.device).manual_seed(SMOOTHGRAD_SEED)
    T = b.tgt_in.size(1)
    keep = b.src_mask.to(table.dtype)  # [B, S]: a padding position's noise is no source word
    total = torch.zeros(b.src.size(0), T, b.src.size(1), dtype=table.dtype, device=table.device)
    for _ in range(max(1, spec.smoothgrad)):
        emb = model.src_emb(b.src).detach()  # [B, S, E]
        if spec.smoothgrad:
            emb = emb + sigma * torch.randn(emb.shape, generator=gen, device=emb.device, dtype=emb.dtype)
        tangents = model.encode_tangents(emb, b.src_mask) if hasattr(model, "encode_tangents") else None
        if tangents is not None:  # the encoder in forward mode: reverse passes through the decoder alone
            total += _decoder_saliency(model, b, out, *tangents) * keep.unsqueeze(1)
            continue
        emb.requires_grad_(True)
        hook = model.src_emb.register_forward_hook(lambda module, args, result, emb=emb: emb)
        try:
            states = model.states(b.src, b.src_mask, b.tgt_in)  # [B, T, D]
        finally:
            hook.remove()
        for t, (grad,) in enumerate(_position_gradients(out, states, b, [emb])):
            total[:, t] += ((grad * emb).sum(-1) * keep).abs().detach()
    return rows_of_one(total)


def _position_gradients(out, states, b, inputs):
    """For each target position t, the gradients of log p(``tgt_out[:, t]``) with respect to ``inputs``:
    one backward pass a position, over the whole batch (its pairs are independent). ``states``: the
    attentional vectors [B, T, H] that ``out`` reads."""
    import torch
    from torch.nn import functional as F

    T = states.size(1)
    for t in range(T):
        logp = F.log_softmax(out(states[:, t]), -1).gather(1, b.tgt_out[:, t:t + 1])  # [B, 1]
        yield torch.autograd.grad(logp.sum(), inputs, retain_graph=t < T - 1)


def _decoder_saliency(model, b, out, memory, h0, d_memory, d_h0):
    """|gradient x input| [B, T, S] from the encoder's tangents along each source word (``d_memory``
    [B, S(s), S, H], ``d_h0`` [L, B, S(s), H]): one backward pass a target position through the decoder
    to what it reads of the encoder, contracted with the tangents (the chain rule, summed over what the
    decoder reads)."""
    import torch

    memory, h0 = memory.requires_grad_(True), h0.requires_grad_(True)
    states = model.decode_states(memory, b.src_mask, h0, b.tgt_in)  # [B, T, H]
    g_memory, g_h0 = zip(*_position_gradients(out, states, b, [memory, h0]), strict=True)
    sal = torch.einsum("btjh,bsjh->bts", torch.stack(g_memory, 1), d_memory)
    sal = sal + torch.einsum("tlbh,lbsh->bts", torch.stack(g_h0), d_h0)
    return sal.abs()
