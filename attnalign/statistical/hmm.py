"""An HMM word aligner (Vogel et al. 1996, with the NULL states of Och and Ney 2003), trained with EM
in torch, batched over sentences of similar length. Initialised from the IBM2-diagonal model of
:mod:`.ibm2`; a stronger teacher for guided alignment (``attnalign train --guide auto``).

Target word j (0-based, of T) is emitted from a hidden state: a source position i (0..S-1, emitting
with t(f | e_i)) or a NULL state that remembers the last source position i (emitting with
t(f | NULL)). From a state at position i' the next state is

    source position i   with (1 - p0) * J(i - i') / sum_{k=0..S-1} J(k - i')
    NULL at i'          with p0

J is a jump table over distances clipped to [-max_jump, max_jump], re-estimated by EM like t; the
first word jumps from the virtual position -1. Posteriors (forward-backward, scaled) are returned per
sentence as ``[T, S + 1]``: the source positions, then the total NULL mass, so that
:func:`.links.viterbi_links` decodes them (posterior decoding).

:func:`train_hmm_agreement` trains the two directions' HMMs jointly (Liang et al. 2006), the default
teacher of ``--guide auto``; :func:`.links.posterior_links` decodes the pair of posteriors.

Shapes in the batched forward-backward: emissions ``[B, T, S]`` (words) and ``[B, T]`` (NULL), forward
and backward variables ``[B, 2S]`` (words, then NULLs) per step, word-to-word transitions ``[B, S, S]``
(a state's NULL successor is the NULL at its own position, with probability p0).
"""

from __future__ import annotations

import numpy as np
import torch

from ..data.corpus import Pairs
from .cells import build_cells, em, m_step

_FLOOR = 1e-100  # the smallest emission probability the E-step uses


def _batches(shapes: list[tuple[int, int]], max_cells: int) -> list[list[int]]:
    """Sentence indices grouped by similar (T, S) so that padding stays small."""
    order = sorted((k for k, (T, S) in enumerate(shapes) if T and S),
                   key=lambda k: (shapes[k][1], shapes[k][0]))
    out, cur, t_max, s_max = [], [], 0, 0
    for k in order:
        T, S = shapes[k]
        nt, ns = max(t_max, T), max(s_max, S)
        if cur and (len(cur) + 1) * nt * ns * ns > max_cells:
            out.append(cur)
            cur, nt, ns = [], T, S
        cur.append(k)
        t_max, s_max = nt, ns
    if cur:
        out.append(cur)
    return out


class _Batch:
    """Padded cell indices of a group of sentences: ``idx [B, Tm, Sm + 1]`` into the t table (NULL
    last; padding points at a zero entry), ``flat [B, Tm, Sm + 1]`` the cells' positions in the
    corpus-wide flat cell order of :class:`.cells.Cells` (-1 for padding), and the lengths."""

    def __init__(self, group: list[int], shapes, offsets, unique: np.ndarray, pad: int):
        self.group = group
        self.T = np.array([shapes[k][0] for k in group])
        self.S = np.array([shapes[k][1] for k in group])
        Tm, Sm = int(self.T.max()), int(self.S.max())
        idx = np.full((len(group), Tm, Sm + 1), pad, dtype=np.int64)
        flat = np.full((len(group), Tm, Sm + 1), -1, dtype=np.int64)
        for b, k in enumerate(group):
            T, S = shapes[k]
            pos = (offsets[k] + np.arange(T * (S + 1))).reshape(T, S + 1)
            idx[b, :T, :S] = unique[pos[:, :S]]
            idx[b, :T, Sm] = unique[pos[:, S]]
            flat[b, :T, :S] = pos[:, :S]
            flat[b, :T, Sm] = pos[:, S]
        self.idx = idx
        self.flat = flat
        self.real = flat >= 0
        self.t_mask = torch.from_numpy(np.arange(Tm)[None, :] < self.T[:, None])  # [B, Tm]
        self.s_mask = torch.from_numpy(np.arange(Sm)[None, :] < self.S[:, None])  # [B, Sm]


def _transitions(jump: torch.Tensor, s_mask: torch.Tensor, p0: float, max_jump: int) -> tuple:
    """Word-to-word transitions ``[B, S, S]`` (rows: from position i', normalised over the real
    positions, times 1 - p0) and the initial distribution ``[B, S]`` (from position -1)."""
    S = s_mask.size(1)
    pos = torch.arange(S)
    raw = pos[None, :] - pos[:, None]  # [S, S]: i - i'
    d = raw.clamp(-max_jump, max_jump) + max_jump
    real = s_mask[:, None, :].to(jump.dtype)  # [B, 1, S]
    w = jump[d].unsqueeze(0) * real  # [B, S, S]
    # the two end buckets hold every longer jump: share their mass among the positions they cover
    for tail in (raw >= max_jump, raw <= -max_jump):
        n = (tail.unsqueeze(0) * real).sum(-1, keepdim=True).clamp(min=1)  # [B, S, 1]
        w = torch.where(tail.unsqueeze(0), w / n, w)
    trans = (1 - p0) * w / w.sum(-1, keepdim=True).clamp(min=1e-300)
    first = pos + 1  # from position -1
    d0 = first.clamp(max=max_jump) + max_jump
    n0 = ((first >= max_jump).unsqueeze(0) * s_mask).sum(-1, keepdim=True).clamp(min=1)
    w0 = jump[d0].unsqueeze(0) * s_mask
    w0 = torch.where((first >= max_jump).unsqueeze(0), w0 / n0, w0)
    init = (1 - p0) * w0 / w0.sum(-1, keepdim=True).clamp(min=1e-300)
    return trans, init, d


def _forward_backward(emit_w, emit_n, trans, init, t_mask, p0):
    """Scaled forward-backward. Returns word posteriors [B, T, S], NULL posteriors [B, T] and the
    expected word-to-word transition counts [B, S, S] (summed over steps)."""
    B, T, S = emit_w.shape
    alpha = torch.zeros(B, T, 2 * S, dtype=emit_w.dtype)
    scale = torch.ones(B, T, dtype=emit_w.dtype)
    prev = None
    for t in range(T):
        if t == 0:
            a_w, a_n = init * emit_w[:, 0], torch.zeros(B, S, dtype=emit_w.dtype)
            a_n[:, 0] = p0 * emit_n[:, 0]
        else:
            at_pos = prev[:, :S] + prev[:, S:]  # transitions depend on the position only: [B, S]
            a_w = torch.bmm(at_pos.unsqueeze(1), trans).squeeze(1) * emit_w[:, t]
            a_n = p0 * at_pos * emit_n[:, t: t + 1]
        a = torch.cat([a_w, a_n], -1)
        c = a.sum(-1).clamp(min=1e-300)
        live = t_mask[:, t]
        a = torch.where(live[:, None], a / c[:, None], prev if prev is not None else a)
        scale[:, t] = torch.where(live, c, torch.ones_like(c))
        alpha[:, t] = a
        prev = a
    beta = torch.ones(B, T, 2 * S, dtype=emit_w.dtype)
    xi = torch.zeros(B, S, S, dtype=emit_w.dtype)
    for t in range(T - 2, -1, -1):
        live = t_mask[:, t + 1]  # a real step follows
        nxt_w = emit_w[:, t + 1] * beta[:, t + 1, :S] / scale[:, t + 1, None]  # [B, S]
        nxt_n = emit_n[:, t + 1, None] * beta[:, t + 1, S:] / scale[:, t + 1, None]
        b_pos = torch.bmm(trans, nxt_w.unsqueeze(-1)).squeeze(-1) + p0 * nxt_n  # [B, S]
        b = torch.cat([b_pos, b_pos], -1)
        beta[:, t] = torch.where(live[:, None], b, beta[:, t])
        at_pos = alpha[:, t, :S] + alpha[:, t, S:]
        step_xi = at_pos.unsqueeze(-1) * trans * nxt_w.unsqueeze(1)  # [B, S', S]
        xi += step_xi * live[:, None, None]
    gamma = alpha * beta * t_mask[..., None]
    return gamma[..., :S], gamma[..., S:].sum(-1), xi


class _HMM:
    """One direction's HMM over a corpus: cells, batches, the t table and the jump table; an E-step
    gives the posteriors of every cell in the flat order of :class:`.cells.Cells` ([cells]:
    per sentence ``[T, S + 1]`` row-major, NULL last), an M-step re-estimates t and J from counts."""

    def __init__(self, pairs: Pairs, p0: float, max_jump: int, alpha: float, ibm2_iterations: int,
                 max_cells: int, ibm2: dict, identical: float = 0.0):
        self.c = c = build_cells(pairs, ibm2.get("p0", 0.08), ibm2.get("tension", 4.0), identical)
        self.n = int(c.unique.max()) + 1 if c.unique.size else 0
        sizes = [T * (S + 1) if T and S else 0 for T, S in c.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.p0, self.max_jump, self.alpha = p0, max_jump, alpha
        # t from IBM2: its EM steps, then one more M-step on its final posteriors
        self.t = (em(c, ibm2_iterations + 1, alpha) if ibm2_iterations
                  else m_step(c, np.ones(self.n), alpha))
        self.batches = [_Batch(g, c.shapes, self.offsets, c.unique, self.n)
                        for g in _batches(c.shapes, max_cells)]
        self.jump = torch.ones(2 * max_jump + 1, dtype=torch.float64)

    def e_step(self) -> tuple[np.ndarray, torch.Tensor]:
        """Posteriors of every cell [cells] and the expected jump counts [2 * max_jump + 1]."""
        # a floor keeps rows whose every emission underflowed (tiny VB alpha) from dividing by zero; it
        # must stay far below real values (VB with alpha 0.01 gives unseen pairs ~1e-49; a floor that
        # reaches them changes the model)
        t_ext = torch.from_numpy(np.append(np.maximum(self.t, _FLOOR), 0.0))  # padding emits 0
        post = np.zeros(self.c.unique.size)
        jump_counts = torch.zeros_like(self.jump)
        for b in self.batches:
            emit = t_ext[torch.from_numpy(b.idx)]  # [B, Tm, Sm + 1]
            trans, init, d = _transitions(self.jump, b.s_mask, self.p0, self.max_jump)
            g_w, g_n, xi = _forward_backward(emit[..., :-1], emit[..., -1], trans, init, b.t_mask, self.p0)
            g = torch.cat([g_w, g_n.unsqueeze(-1)], -1).numpy()
            post[b.flat[b.real]] = g[b.real]
            jump_counts.index_add_(0, d.reshape(-1), xi.sum(0).reshape(-1))
        return post, jump_counts

    def m_step(self, counts: np.ndarray, jump_counts: torch.Tensor) -> None:
        """Re-estimate t from expected counts per cell [cells] and J from expected jump counts."""
        self.t = m_step(self.c, np.bincount(self.c.unique, weights=counts, minlength=self.n), self.alpha)
        self.jump = (jump_counts + 1e-3) / (jump_counts + 1e-3).sum()

    def split(self, post: np.ndarray) -> list[np.ndarray]:
        """Flat cell posteriors -> one ``[T, S + 1]`` array per sentence."""
        return [post[o: o + T * (S + 1)].reshape(T, S + 1) if T and S else np.zeros((T, S + 1))
                for o, (T, S) in zip(self.offsets, self.c.shapes, strict=True)]


def train_hmm_posteriors(pairs: Pairs, iterations: int = 5, p0: float = 0.2, max_jump: int = 10,
                         alpha: float = 0.01, ibm2_iterations: int = 5, max_cells: int = 2_000_000,
                         identical: float = 0.0, **ibm2) -> list[np.ndarray]:
    """EM-train the HMM on ``pairs`` (after IBM2) and return posteriors ``[T, S + 1]`` (NULL last).
    ``identical``: extra counts for identical types in every M-step (see :mod:`.cells`)."""
    hmm = _HMM(pairs, p0, max_jump, alpha, ibm2_iterations, max_cells, ibm2, identical)
    for _ in range(iterations):
        hmm.m_step(*hmm.e_step())
    return hmm.split(hmm.e_step()[0])


def _transpose_index(shapes: list[tuple[int, int]], offsets: np.ndarray, rev_offsets: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of the same word-word cells in the forward and the reverse model: forward cell
    (j, i) of sentence k is reverse cell (i, j)."""
    fwd, rev = [], []
    for k, (T, S) in enumerate(shapes):
        if not (T and S):
            continue
        j, i = np.meshgrid(np.arange(T), np.arange(S), indexing="ij")  # [T, S]
        fwd.append((offsets[k] + j * (S + 1) + i).ravel())
        rev.append((rev_offsets[k] + i * (T + 1) + j).ravel())
    if not fwd:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(fwd), np.concatenate(rev)


def train_hmm_agreement(pairs: Pairs, iterations: int = 5, p0: float = 0.2, max_jump: int = 10,
                        alpha: float = 0.01, ibm2_iterations: int = 5, max_cells: int = 2_000_000,
                        identical: float = 0.0, **ibm2) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Train the two directions' HMMs jointly, by agreement (Liang, Taskar and Klein 2006): each
    E-step's count of a word-word link is the *product* of the two models' posteriors for it, for
    both models (a NULL keeps its own model's posterior), so that a link only one direction wants
    gets little mass. Returns the forward posteriors ``[T, S + 1]`` and the reverse ones ``[S, T + 1]``
    per pair (NULL last); decode them together with :func:`.links.posterior_links`.
    ``identical``: extra counts for identical types in every M-step (see :mod:`.cells`)."""
    fwd = _HMM(pairs, p0, max_jump, alpha, ibm2_iterations, max_cells, ibm2, identical)
    rev = _HMM([(t, s) for s, t in pairs], p0, max_jump, alpha, ibm2_iterations, max_cells, ibm2, identical)
    f_idx, r_idx = _transpose_index(fwd.c.shapes, fwd.offsets, rev.offsets)
    for _ in range(iterations):
        (f_post, f_jump), (r_post, r_jump) = fwd.e_step(), rev.e_step()
        both = f_post[f_idx] * r_post[r_idx]
        f_post[f_idx] = both
        r_post[r_idx] = both
        fwd.m_step(f_post, f_jump)
        rev.m_step(r_post, r_jump)
    return fwd.split(fwd.e_step()[0]), rev.split(rev.e_step()[0])
