"""Both directions trained together, batch for batch, with the agreement loss between their alignment
heads (``--agree-weight``; :func:`~.objectives.agreement_loss`).

The two runs keep their own models, optimizers, checkpoints and logs; they see the same pairs in the
same batches (the forward run's batching), so a batch's forward head ``[B, T+1, S+1]`` and reverse head
``[B, S+1, T+1]`` describe the same sentences, and one backward pass updates both.
"""

from __future__ import annotations

import time

import torch

from ..errors import AttnAlignError
from ..nmt.device import flushed_denormals
from .objectives import agreement_loss


class _Shifted:
    """Reports the forward run's steps as the two runs' (the bar counts both)."""

    def __init__(self, reporter, other):
        self.reporter, self.other = reporter, other

    def step(self, step: int, loss: float, tokens_per_s: float) -> None:
        self.reporter.step(step + self.other.p.step, loss, 2 * tokens_per_s)


class _Quiet:
    def step(self, step, loss, tokens_per_s): pass


def train_jointly(fwd, rev, devs: tuple, resume: bool, reporter, weight: float) -> dict[str, dict]:
    """Train ``fwd`` and ``rev`` (the loop's direction runs, sides swapped) together; their summaries by
    direction. ``devs``: each run's dev set (or None)."""
    done = {run.direction: run.prepare(resume) for run in (fwd, rev)}
    if all(v is not None for v in done.values()):
        return done
    for run in (fwd, rev):  # a run stopped between the two final checkpoints: finish the other
        if done[run.direction] is not None:
            other = rev if run is fwd else fwd
            return {**done, other.direction: other.train(devs[other is rev], True, reporter)}
    _check_same_pairs(fwd, rev)
    if (fwd.p.step, fwd.p.offset) != (rev.p.step, rev.p.offset):  # stopped between the two snapshots
        raise AttnAlignError(f"the two directions' resumable checkpoints are at different steps "
                             f"({fwd.p.step} and {rev.p.step}); this run cannot continue exactly",
                             path=fwd.model_dir, hint="start it again with --overwrite")
    rev.total = fwd.total  # one batching for both (the forward run's)
    p = fwd.p
    reporter.start(f"{fwd.direction}+{rev.direction}", fwd.total + rev.total, p.step + rev.p.step)
    shown = _Shifted(reporter, rev)
    while p.step < fwd.total:
        for group in fwd.epoch_batches():
            if p.step >= fwd.total:
                break
            _update(fwd, rev, group, weight)
            fwd.tell(shown)
            rev.tell(_Quiet())
        else:
            for run in (fwd, rev):
                run.p.epoch, run.p.offset = run.p.epoch + 1, 0
        fwd.validate(devs[0], reporter)
        rev.validate(devs[1], reporter)
    reporter.end()
    return {fwd.direction: fwd.finish(), rev.direction: rev.finish()}


def _check_same_pairs(fwd, rev) -> None:
    """The reverse run's tokens are the forward run's, sides swapped (the same segmenters are trained
    on the same sentences); the agreement loss compares their cells one for one."""
    same = len(fwd.src_ids) == len(rev.src_ids) and all(
        len(a) == len(d) and len(b) == len(c)
        for a, b, c, d in zip(fwd.src_ids, fwd.tgt_ids, rev.src_ids, rev.tgt_ids, strict=True))
    if not same:
        raise AttnAlignError("--agree-weight: the two directions segment the corpus differently",
                             hint="train with --subword 0 (words), or without --agree-weight")


def _update(fwd, rev, group: list[int], weight: float) -> None:
    t0 = time.perf_counter()
    bf, br = fwd.batch(group), rev.batch(group)
    try:
        with flushed_denormals():
            obj_f, loss_f, n_f, head_f = fwd.objective(bf, group)
            obj_r, loss_r, n_r, head_r = rev.objective(br, group)
            objective = obj_f + obj_r + weight * agreement_loss(head_f, head_r, bf.src_len, bf.tgt_len)
            fwd.check_finite(objective, f"{fwd.direction}+{rev.direction}")
            for run in (fwd, rev):
                run.opt.zero_grad(set_to_none=True)
            objective.backward()
            fwd.apply()
            rev.apply()
    except torch.OutOfMemoryError:
        raise fwd.out_of_memory(bf) from None
    seconds = (time.perf_counter() - t0) / 2
    fwd.account(loss_f.item(), n_f, len(group), seconds)
    rev.account(loss_r.item(), n_r, len(group), seconds)
