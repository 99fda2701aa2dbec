"""Running a recurrent layer over padded sequences: ``torch.nn.GRU`` / ``LSTM`` through packed sequences,
or, for a GRU trained on a CPU, the same function with a backward pass written out.

Why: on a CPU, autograd through ``nn.GRU``'s step loop gives every step's slice of the input a gradient
of the whole sequence's size, zero-filled and summed (quadratic in the length), and multiplies the
recurrent weights' gradient one step at a time. :class:`_GRURecurrence` keeps what the backward pass
needs, runs both directions of a bidirectional layer in one loop (one batched product a step), and forms
the weights' gradient in one product over all steps. The parameters are the module's own, so a model
trained either way loads and runs either way. On CUDA (cuDNN) and without gradients the module runs
itself.

Shapes: input ``[B, T, E]``; ``lengths`` ``[B]`` on the CPU (None: every row is T long); the output
``[B, T, D * H]`` (D directions, padding exactly 0) and the final states ``[layers * D, B, H]`` (for an
LSTM the pair (h, c)), as ``nn.GRU`` gives them with ``batch_first=True``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def run_recurrent(rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor | None = None, h0=None):
    """``rnn`` (``batch_first``) over ``x`` [B, T, E]: output [B, T, D * H] and the final states."""
    if _written_out(rnn, x):
        return _gru(rnn, x, lengths, h0)
    if lengths is None:
        return rnn(x, h0)
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, final = rnn(packed, h0)
    return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0], final


def _written_out(rnn: nn.RNNBase, x: torch.Tensor) -> bool:
    return (isinstance(rnn, nn.GRU) and x.device.type == "cpu" and torch.is_grad_enabled()
            and not torch.is_autocast_enabled("cpu") and rnn.bias and rnn.batch_first)


def _step_mask(lengths: torch.Tensor | None, x: torch.Tensor, D: int) -> torch.Tensor | None:
    """[T, D, B, 1]: 1 where step k of direction d reads a real position (None: every one is), in each
    direction's order of steps: the reverse one reads the time axis backwards."""
    if lengths is None:
        return None
    steps = torch.arange(x.size(1)).unsqueeze(1) < lengths.unsqueeze(0)  # [T, B]
    return torch.stack([steps, steps.flip(0)][:D], 1).unsqueeze(-1).to(x.device, x.dtype)


def _layer_weights(rnn: nn.GRU, layer: int, D: int) -> list[torch.Tensor]:
    """Layer ``layer``'s weight_ih [D, 3H, E], bias_ih [D, 3H], weight_hh [D, 3H, H], bias_hh [D, 3H],
    its D directions stacked."""
    sfx = [f"_l{layer}", f"_l{layer}_reverse"][:D]
    return [torch.stack([getattr(rnn, name + s) for s in sfx])
            for name in ("weight_ih", "bias_ih", "weight_hh", "bias_hh")]


def _input_gates(x: torch.Tensor, w_ih: torch.Tensor) -> torch.Tensor:
    """W_ih x of every position, [T, D, B, 3H], in each direction's order of steps (no bias)."""
    gi = torch.einsum("bte,dge->tdbg", x, w_ih)
    return torch.stack([gi[:, 0], gi[:, 1].flip(0)], 1) if gi.size(1) == 2 else gi


def _gru(rnn: nn.GRU, x: torch.Tensor, lengths: torch.Tensor | None, h0: torch.Tensor | None):
    B, T, _ = x.shape
    D, H = 2 if rnn.bidirectional else 1, rnn.hidden_size
    mask = _step_mask(lengths, x, D)
    finals = []
    for layer in range(rnn.num_layers):
        if layer and rnn.dropout and rnn.training:
            x = F.dropout(x, rnn.dropout, True)
        w_ih, b_ih, w_hh, b_hh = _layer_weights(rnn, layer, D)
        gi = _input_gates(x, w_ih) + b_ih.unsqueeze(1)  # [T, D, B, 3H]
        start = x.new_zeros(D, B, H) if h0 is None else h0[layer * D:(layer + 1) * D]
        hs, last = _GRURecurrence.apply(gi.contiguous(), start, w_hh, b_hh, mask)  # [T, D, B, H], [D, B, H]
        if D == 2:
            hs = torch.stack([hs[:, 0], hs[:, 1].flip(0)], 1)
        if mask is not None:
            hs = hs * mask[:, 0:1]  # padding exactly 0, as packed sequences give it
        x = hs.permute(2, 0, 1, 3).reshape(B, T, D * H)
        finals.append(last)
    return x, torch.cat(finals, 0)


class _GRURecurrence(torch.autograd.Function):
    """A GRU's recurrence over precomputed input gates, D directions in lockstep.

    gi [T, D, B, 3H] (gates r, z, n of W_ih x + b_ih, step k of direction d at [k, d]); h0 [D, B, H];
    w_hh [D, 3H, H]; b_hh [D, 3H]; mask [T, D, B, 1] (1 where step k of direction d is real: a padded
    step keeps the state) or None. Returns every step's state [T, D, B, H] and the last [D, B, H].
    A step is a few operations on [D, B, H] tensors written into buffers kept for the backward pass,
    whose step-local derivatives are then formed for all steps at once, outside its loop.
    """

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh, mask):
        T, D, B, G = gi.shape
        H = G // 3
        w_t, bias = w_hh.transpose(1, 2).contiguous(), b_hh.unsqueeze(1)  # [D, H, 3H], [D, 1, 3H]
        gh = gi.new_empty(T, D, B, G)  # W_hh h + b_hh, each step
        rz = gi.new_empty(T, D, B, 2 * H)
        n = gi.new_empty(T, D, B, H)
        hs = gi.new_empty(T, D, B, H)
        h = h0
        for k in range(T):
            torch.baddbmm(bias, h, w_t, out=gh[k])
            torch.sigmoid(torch.add(gi[k, ..., :2 * H], gh[k, ..., :2 * H]), out=rz[k])
            torch.tanh(torch.addcmul(gi[k, ..., 2 * H:], rz[k, ..., :H], gh[k, ..., 2 * H:]), out=n[k])
            new = torch.lerp(n[k], h, rz[k, ..., H:])  # (1 - z) n + z h
            h = new if mask is None else torch.lerp(h, new, mask[k])
            hs[k] = h
        ctx.save_for_backward(h0, hs, gh, rz, n, w_hh, mask)
        return hs, h

    @staticmethod
    @once_differentiable
    def backward(ctx, d_hs, d_last):
        h0, hs, gh, rz, n, w_hh, mask = ctx.saved_tensors
        T, D, B, H = hs.shape
        r, z = rz[..., :H], rz[..., H:]
        prev = torch.cat([h0.unsqueeze(1), hs.transpose(0, 1)[:, :-1]], 1)  # states read: [D, T, B, H]
        m = 1 if mask is None else mask
        # with u the gradient of the state a step writes: d a_n = u m (1 - z)(1 - n^2), d a_r = d a_n
        # gh_n r (1 - r), d a_z = u m (h_prev - n) z (1 - z); the state read gets u (1 - m (1 - z)) + W_hh^T
        # times the recurrent gates' gradient, whose n part is d a_n r
        d_an = m * (1 - z) * (1 - n * n)
        d_az = m * (prev.transpose(0, 1) - n) * z * (1 - z)
        to_gh = torch.stack([d_an * gh[..., 2 * H:] * r * (1 - r), d_az, d_an * r], 3)  # [T, D, B, 3, H]
        keep = 1 - m * (1 - z)
        u = hs.new_empty(T, D, B, H)
        d_gh = hs.new_empty(D, T, B, 3, H)
        dh = d_last
        for k in range(T - 1, -1, -1):
            torch.add(dh, d_hs[k], out=u[k])
            step = d_gh[:, k]
            torch.mul(u[k].unsqueeze(2), to_gh[k], out=step)
            dh = torch.baddbmm(u[k] * keep[k], step.view(D, B, 3 * H), w_hh)
        flat_gh = d_gh.view(D, T * B, 3 * H)
        d_w = d_b = None
        if ctx.needs_input_grad[2]:  # not when only the input's gradient is asked for (a saliency)
            d_w = torch.bmm(flat_gh.transpose(1, 2), prev.reshape(D, T * B, H))  # [D, 3H, H]
        if ctx.needs_input_grad[3]:
            d_b = flat_gh.sum(1)
        d_gi = d_gh.transpose(0, 1).contiguous()  # [T, D, B, 3, H] (d_gh itself when D is 1)
        torch.mul(u, d_an, out=d_gi[:, :, :, 2])  # the input gates' n part is d a_n, not d a_n r
        return d_gi.view(T, D, B, 3 * H), dh, d_w, d_b, None


def word_tangents(rnn: nn.GRU, x: torch.Tensor, lengths: torch.Tensor | None = None):
    """A one-layer GRU over ``x`` [B, T, E] and, in forward mode, the derivative of its states along each
    position's own input: tangent s moves ``x[:, s]`` by itself (the direction gradient x input reads), so
    one pass gives every source word's effect, where reverse mode needs a pass per output read.

    Returns the output [B, T, D * H] and final states [D, B, H] as :func:`run_recurrent` gives them, and
    their tangents [B, T(s), T, D * H] and [D, B, T(s), H]. Without gradients (the tangents are exact)."""
    B, T, _ = x.shape
    D, H = 2 if rnn.bidirectional else 1, rnn.hidden_size
    w_ih, b_ih, w_hh, b_hh = _layer_weights(rnn, 0, D)
    w_hh_t, b_hh = w_hh.transpose(1, 2), b_hh.unsqueeze(1)  # [D, H, 3H], [D, 1, 3H]
    proj = _input_gates(x, w_ih)  # [T, D, B, 3H]
    mask = _step_mask(lengths, x, D)
    mask = x.new_ones(T, D, B, 1, 1) if mask is None else mask.unsqueeze(-1)  # [T, D, B, 1, 1]
    # each direction's tangents in its own order of steps (the reverse one's tangent i moves position
    # T - 1 - i): tangent i starts at step i, so step k moves the first k + 1 alone
    h = x.new_zeros(D, B, H)
    dh = x.new_zeros(D, B, T, H)
    hs, dhs = x.new_empty(T, D, B, H), x.new_zeros(T, D, B, T, H)
    for k in range(T):
        m = mask[k]  # [D, B, 1, 1]
        gi = proj[k] + b_ih.unsqueeze(1)  # [D, B, 3H]
        gh = torch.baddbmm(b_hh, h, w_hh_t)
        rz = torch.sigmoid(gi[..., :2 * H] + gh[..., :2 * H])
        r, z = rz[..., :H], rz[..., H:]
        n = torch.tanh(gi[..., 2 * H:] + r * gh[..., 2 * H:])
        new = torch.lerp(n, h, z)
        a = dh[:, :, :k + 1]  # the tangents under way, [D, B, k + 1, H]; tangent k is still 0
        d_gh = torch.bmm(a.reshape(D, B * (k + 1), H), w_hh_t).view(D, B, k + 1, 3 * H)
        d_rz = d_gh[..., :2 * H]  # with this step's input, which moves only tangent k (whose d_gh is 0)
        d_rz[:, :, k] += proj[k, ..., :2 * H]
        r_, z_, n_, gh_n = r.unsqueeze(2), z.unsqueeze(2), n.unsqueeze(2), gh[..., 2 * H:].unsqueeze(2)
        d_rz = rz.unsqueeze(2) * (1 - rz.unsqueeze(2)) * d_rz
        dr, dz = d_rz[..., :H], d_rz[..., H:]
        d_an = dr * gh_n + r_ * d_gh[..., 2 * H:]
        d_an[:, :, k] += proj[k, ..., 2 * H:]
        dn = (1 - n_ * n_) * d_an
        d_new = (1 - z_) * dn + (h.unsqueeze(2) - n_) * dz + z_ * a  # of (1 - z) n + z h
        h = torch.lerp(h, new, m[..., 0])  # a padded step keeps the state
        dh[:, :, :k + 1] = torch.lerp(a, d_new, m)
        hs[k], dhs[k, :, :, :k + 1] = h, dh[:, :, :k + 1]
    if D == 2:  # the reverse direction back in the order of positions, its steps and its tangents
        hs = torch.stack([hs[:, 0], hs[:, 1].flip(0)], 1)
        dhs = torch.stack([dhs[:, 0], dhs[:, 1].flip(0).flip(2)], 1)
        dh = torch.stack([dh[0], dh[1].flip(1)])
    keep = mask[:, 0, :, 0]  # [T, B, 1]: padding exactly 0, as packed sequences give it
    out = (hs * keep.unsqueeze(1)).permute(2, 0, 1, 3).reshape(B, T, D * H)
    d_out = (dhs * keep.unsqueeze(1).unsqueeze(-1)).permute(2, 3, 0, 1, 4).reshape(B, T, T, D * H)
    return out, h, d_out, dh
