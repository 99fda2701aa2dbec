"""The translation loss: summed token cross-entropy with label smoothing, in one autograd node.

``F.cross_entropy(..., label_smoothing=e)`` builds its gradient from several tensors the size of the
logits (the one-hot part, the smoothing part, their sum); with a vocabulary of 10,000 words those
[N, V] passes cost as much as the output layer's products on a CPU. Here the gradient is the
softmax written over the saved log-probabilities, shifted in place: softmax - (1 - e) onehot - e / V.
Same value and gradient as ``F.cross_entropy(logits, target, ignore_index=ignore, label_smoothing=e,
reduction="sum")``.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable


class _SmoothedNLL(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, smoothing: float, ignore_index: int):
        logp = torch.log_softmax(logits.float(), dim=-1)  # [N, V]
        keep = target != ignore_index  # [N]
        nll = -logp.gather(1, target.clamp(min=0).unsqueeze(1)).squeeze(1)  # [N]
        loss = (1.0 - smoothing) * nll
        if smoothing:
            loss = loss - smoothing * logp.mean(dim=1)
        ctx.save_for_backward(logp, target, keep)
        ctx.smoothing, ctx.dtype = smoothing, logits.dtype
        return loss.masked_fill(~keep, 0.0).sum()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        logp, target, keep = ctx.saved_tensors
        e = ctx.smoothing
        grad = logp.exp_()  # the saved log-probabilities are not read again: reuse their memory
        if e:
            grad.sub_(e / grad.size(1))
        grad.scatter_add_(1, target.clamp(min=0).unsqueeze(1),
                          grad.new_full((grad.size(0), 1), -(1.0 - e)))
        grad.mul_((keep.to(grad.dtype) * grad_out).unsqueeze(1))
        return grad.to(ctx.dtype), None, None, None


def smoothed_nll(logits: torch.Tensor, target: torch.Tensor, smoothing: float,
                 ignore_index: int) -> torch.Tensor:
    """logits [..., V], target [...] -> the summed loss over targets that are not ``ignore_index``
    (a scalar). Call backward on it once (the gradient reuses the saved probabilities' memory)."""
    return _SmoothedNLL.apply(logits.reshape(-1, logits.size(-1)), target.reshape(-1), smoothing,
                              ignore_index)
