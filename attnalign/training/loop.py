"""Training attention NMT models for alignment: the library behind ``attnalign train``.

One call trains one or both directions into a model directory (:mod:`.model_dir`). Each epoch ends
with a validation: dev loss and perplexity, and with a dev gold the dev AER of argmax-decoded
attention; the best checkpoint is chosen by dev AER when a gold is given, else by dev loss (else by
training loss). ``save_every`` adds resumable checkpoints inside epochs; ``resume`` continues from the
last one and ends with the same weights as an uninterrupted run (same seed, data and device).
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import torch

from .. import dist
from ..data.alignments import Alignment, Link
from ..data.corpus import Pairs
from ..decoding import argmax_links
from ..errors import AttnAlignError, warn
from ..eval.metrics import Counts, corpus_counts
from ..nmt.batching import bucket_batches, make_batch
from ..nmt.checkpoint import LoadedModel, load_checkpoint, read_model_config, save_checkpoint
from ..nmt.device import flushed_denormals, resolve_device, set_threads
from ..nmt.extract import AttentionSpec, corpus_attention, reduce_attention
from ..nmt.models import build_model
from ..nmt.subword import Segmenter, train_segmenter
from ..nmt.vocab import PAD_ID, Vocab
from . import parallel
from .guide import guide_loss, guide_targets, keep_teacher, teacher_links, token_links
from .loss import smoothed_nll
from .model_dir import (
    append_log,
    finish_dir,
    mark_finished,
    pairs_fingerprint,
    prepare_dir,
    run_config,
    saved_options,
    write_config,
)
from .options import TrainOptions


class Reporter(Protocol):
    """Receives progress; the CLI draws it with rich, a notebook may ignore it. A reporter may also have
    ``note(message)``, told of stages before training (the guide alignment)."""

    def start(self, direction: str, total_steps: int, done_steps: int) -> None: ...
    def step(self, step: int, loss: float, tokens_per_s: float) -> None: ...
    def validation(self, row: dict) -> None: ...
    def end(self) -> None: ...


class _Silent:
    def start(self, direction, total_steps, done_steps): pass
    def step(self, step, loss, tokens_per_s): pass
    def validation(self, row): pass
    def end(self): pass


@dataclass
class DevSet:
    pairs: Pairs
    gold: list[Alignment] | None = None

    def reversed(self) -> DevSet:
        """The dev set of the reverse direction: sides and gold links swapped."""
        gold = None if self.gold is None else [
            Alignment(frozenset((j, i) for i, j in g.sure), frozenset((j, i) for i, j in g.possible))
            for g in self.gold]
        return DevSet(_swap(self.pairs), gold)


def lr_at(step: int, total: int, base: float, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 10% of ``base`` at ``total``."""
    warm = min(1.0, (step + 1) / max(1, warmup))
    progress = min(1.0, step / max(1, total))
    return base * warm * (1.0 - 0.9 * progress)


def _loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> tuple[torch.Tensor, int]:
    """Summed token cross-entropy (with label smoothing) and the number of target tokens."""
    n = int((target != PAD_ID).sum())
    loss = smoothed_nll(logits, target, smoothing, PAD_ID)
    return loss, n


def _encode(lm: LoadedModel, pairs: Pairs) -> tuple[list[list[int]], list[list[int]]]:
    """Word pairs -> model token ids (through the segmenters and vocabularies)."""
    ss, ts = lm.src_seg or Segmenter(), lm.tgt_seg or Segmenter()
    src = [lm.src_vocab.encode(ss.segment(s)[0]) for s, _ in pairs]
    tgt = [lm.tgt_vocab.encode(ts.segment(t)[0]) for _, t in pairs]
    return src, tgt


def evaluate(lm: LoadedModel, dev: DevSet, batch_tokens: int, device: torch.device) -> dict:
    """Dev loss (no smoothing), perplexity and, with a gold, the AER of argmax-decoded attention."""
    pairs = [(s, t) for s, t in dev.pairs]
    src_ids, tgt_ids = _encode(lm, [(s, t) for s, t in pairs if s and t])
    lengths = [(len(s), len(t)) for s, t in zip(src_ids, tgt_ids, strict=True)]
    total, n_tok = 0.0, 0
    model = lm.model
    model.eval()
    with torch.inference_mode():
        for group in bucket_batches(lengths, batch_tokens):
            b = make_batch(group, [src_ids[k] for k in group], [tgt_ids[k] for k in group]).to(device)
            loss, n = _loss(model(b.src, b.src_mask, b.tgt_in).logits, b.tgt_out, 0.0)
            total += float(loss)
            n_tok += n
    dev_loss = total / max(1, n_tok)
    row = {"dev_loss": dev_loss, "dev_ppl": math.exp(min(dev_loss, 50.0)), "dev_aer": None}
    if dev.gold is not None:
        mats = corpus_attention(lm, pairs, AttentionSpec(), batch_tokens, device)
        hyps = [Alignment.from_links(argmax_links(m, eos)) for m, eos in mats]
        row["dev_aer"] = sum(corpus_counts(hyps, dev.gold), Counts()).aer
    model.train()
    return row


def _swap(pairs: Pairs) -> list[tuple[list[str], list[str]]]:
    return [(t, s) for s, t in pairs]


def train(
    pairs: Pairs,
    model_dir: str | os.PathLike,
    options: TrainOptions = TrainOptions(),
    *,
    dev: DevSet | None = None,
    guide: Sequence[Sequence[Link]] | None = None,
    overwrite: bool = False,
    resume: bool = False,
    reporter: Reporter | None = None,
    files: dict | None = None,
) -> dict:
    """Train the requested direction(s) on ``pairs`` (token lists) into ``model_dir``.

    ``overwrite``: replace an existing model, which stays in place until the new one is complete.
    ``resume``: continue the interrupted run in ``model_dir`` with its own options; ``pairs`` and
    ``dev`` must be the data it started with (their fingerprints are checked). ``files``: the data's
    file names, recorded in ``config.json`` (``attnalign train --resume`` reads them back).

    ``guide``: alignment links (source first) for every pair, to supervise the attention (guided
    alignment, Garg et al. 2019); with ``options.guide == "auto"`` and no ``guide``, the built-in
    statistical aligner (:mod:`attnalign.statistical`) makes them.

    Returns a summary: for each direction its best step, dev loss and dev AER, and the elapsed time.
    """
    model_dir = Path(model_dir)
    if resume:  # continue with the options the run started with
        options = saved_options(model_dir)
    if options.init_from is not None:
        from .finetune import finetune

        options.check(has_guide_links=guide is not None)
        return finetune(pairs, model_dir, options, dev=dev, guide=guide, overwrite=overwrite,
                        reporter=reporter, data=_data_record(pairs, dev, files))
    # everything is checked before the model directory is touched
    model_config = asdict(options.check(has_guide_links=guide is not None))
    device = _device(options.device)
    set_threads(options.threads)
    from ..statistical import kernels

    kernels.set_threads(options.threads)  # the teacher's loops
    data = _data_record(pairs, dev, files)
    if resume:
        _check_same_data(model_dir, data)
    keep = [k for k, (s, t) in enumerate(pairs) if s and t]
    train_pairs = [pairs[k] for k in keep]
    if not train_pairs:
        raise AttnAlignError("the training corpus has no pair with both sides non-empty",
                             hint="check the --src/--tgt (or --corpus) files")
    if guide is not None:
        if len(guide) != len(pairs):
            raise AttnAlignError(f"the guide alignment has {len(guide)} lines for {len(pairs)} pairs",
                                 hint="give one alignment line per training pair")
        guide = [guide[k] for k in keep]
    # decided (and a torchrun conflict refused) before the teacher's minutes are spent
    in_processes = parallel.wanted(options.parallel_directions, options.directions, device, options.threads,
                                   len(train_pairs))
    note = getattr(reporter, "note", None)
    if note and options.epochs == "auto" and options.passes(len(train_pairs)) < options.auto_epochs:
        note(f"--epochs auto: {options.passes(len(train_pairs)):.2f} passes over {len(train_pairs):,} pairs")
    teacher = None
    if guide is None and options.guide == "auto":
        guide, teacher = teacher_links(train_pairs, options, note)
        guide = dist.broadcast(guide)  # under torchrun rank 0 gathered the teacher's links

    def begin() -> Path:
        work = prepare_dir(model_dir, overwrite, resume)
        if dev is None:
            warn("no dev set given (--dev-src/--dev-tgt): the checkpoint with the lowest training loss is "
                 "kept")
        finished = read_model_config(work).get("finished", []) if resume else []
        write_config(work, options, options.directions, model_config, data, finished)
        return work

    work_dir = dist.on_main(begin)  # rank 0 prepares the directory; every rank writes there
    if teacher is not None:  # align corpus on this corpus reads its matrices instead of training it again
        keep_teacher(work_dir, teacher, keep, pairs, options, data["fingerprint"])
    reporter = reporter or _Silent()
    jobs = []
    for direction in options.directions:
        forward = direction == "forward"
        links = None
        if guide is not None:
            links = guide if forward else [[(j, i) for i, j in g] for g in guide]
        run = _DirectionRun(train_pairs if forward else _swap(train_pairs), work_dir, direction, options,
                            model_config, device, links)
        jobs.append((run, dev if dev is None or forward else dev.reversed()))
    if in_processes:
        done = parallel.train_in_processes(jobs, resume, parallel.threads_each(options.threads), reporter,
                                           lambda d: mark_finished(work_dir, d))
    else:
        done = {}
        for run, d in jobs:
            done[run.direction] = run.train(d, resume, reporter)
            dist.on_main(lambda d=run.direction: mark_finished(work_dir, d))
    dist.on_main(lambda: finish_dir(work_dir, model_dir))
    return {"model_dir": str(model_dir), "directions": {d: done[d] for d in options.directions}}


def _adam(params, lr: float) -> torch.optim.Adam:
    """Adam with its fused kernel where torch has one for the device (one pass over each parameter
    instead of a dozen small operations); the same updates up to rounding."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), fused=True)
    except (RuntimeError, TypeError):  # torch < 2.4 on a CPU
        return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98))


def _device(name: str) -> torch.device:
    """The device of this process: under torchrun on GPUs, the GPU of its local rank."""
    device = resolve_device(name)
    if dist.launched() and device.type == "cuda":
        device = torch.device(dist.process_gpu())  # before the group: a missing GPU is a clear error
    dist.init(gpu=device.type == "cuda")
    return device


def _data_record(pairs: Pairs, dev: DevSet | None, files: dict | None) -> dict:
    """What ``config.json`` records of a run's data (see :func:`_check_same_data`)."""
    return {"pairs": len(pairs), "fingerprint": pairs_fingerprint(pairs),
            "dev_pairs": None if dev is None else len(dev.pairs),
            "dev_fingerprint": None if dev is None else pairs_fingerprint(dev.pairs, dev.gold),
            "files": {k: v for k, v in (files or {}).items() if v is not None}}


def _check_same_data(model_dir: Path, data: dict) -> None:
    """``--resume`` continues the run it resumes: the same training corpus, the same dev set."""
    saved = run_config(model_dir).get("data") or {}
    if saved.get("fingerprint") not in (None, data["fingerprint"]):
        raise AttnAlignError(
            f"--resume was given another training corpus ({data['pairs']} pairs) than the run it resumes "
            f"({saved.get('pairs')} pairs, {_files(saved, 'src', 'tgt', 'corpus')})", path=model_dir,
            hint="resume with the run's own corpus, or start a new run with --overwrite")
    if saved.get("dev_fingerprint", data["dev_fingerprint"]) != data["dev_fingerprint"]:
        was = "no dev set" if saved["dev_fingerprint"] is None else (
            f"a dev set of {saved['dev_pairs']} pairs ({_files(saved, 'dev_src', 'dev_tgt', 'dev_gold')})")
        raise AttnAlignError(
            f"--resume was given another dev set than the run it resumes, which had {was}",
            path=model_dir, hint="resume with the run's own dev options (attnalign train restores them "
                                 "when they are left out), or start a new run with --overwrite")


def _files(saved: dict, *keys: str) -> str:
    names = [str(saved.get("files", {}).get(k)) for k in keys if saved.get("files", {}).get(k)]
    return ", ".join(names) or "files not recorded"


@dataclass
class _Progress:
    """Where a direction's training stands: what a resumable checkpoint saves besides the weights."""

    step: int = 0
    epoch: int = 0
    offset: int = 0  # batches of the current epoch already done
    best: float | None = None
    elapsed: float = 0.0
    ep_loss: float = 0.0  # training loss of the current epoch (for the log and no-dev selection)
    ep_tok: int = 0


class _DirectionRun:
    """One direction's training: vocabularies, model, optimizer, data and progress, resumable."""

    def __init__(self, pairs: Pairs, model_dir: Path, direction: str, o: TrainOptions, model_config: dict,
                 device: torch.device, links: Sequence[Sequence[Link]] | None):
        self.pairs, self.direction, self.o, self.device = pairs, direction, o, device
        self.model_config = model_config
        self.model_dir = model_dir
        self.last_path = model_dir / f"{direction}.last.pt"
        self.best_path = model_dir / f"{direction}.pt"
        self.links = links

    def _build(self, state: dict | None) -> None:
        o, pairs = self.o, self.pairs
        if state is not None:
            src_vocab, tgt_vocab = Vocab(state["src_vocab"]), Vocab(state["tgt_vocab"])
            src_seg = Segmenter.from_tensor(state["src_spm"])
            tgt_seg = Segmenter.from_tensor(state["tgt_spm"])
        else:
            src_seg = tgt_seg = Segmenter()
            if o.subword:
                src_seg = train_segmenter((s for s, _ in pairs), o.subword, o.subword_type)
                tgt_seg = train_segmenter((t for _, t in pairs), o.subword, o.subword_type)
            src_vocab = Vocab.build((src_seg.segment(s)[0] for s, _ in pairs), o.min_freq, o.max_vocab)
            tgt_vocab = Vocab.build((tgt_seg.segment(t)[0] for _, t in pairs), o.min_freq, o.max_vocab)
        torch.manual_seed(o.seed)
        model = build_model(o.model_type, self.model_config, len(src_vocab), len(tgt_vocab))
        self.model = model.to(self.device)
        self.rank, self.procs = dist.world()
        self.net = self.model  # what the updates run through: the model, or DDP around it
        if self.procs > 1:
            from torch.nn.parallel import DistributedDataParallel

            self.net = DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.lm = LoadedModel(self.model, o.model_type, self.model_config, src_vocab, tgt_vocab,
                              self.direction, o.lowercase, None, src_seg, tgt_seg)
        self.opt = _adam(self.model.parameters(), o.base_lr)
        self.src_ids, self.tgt_ids = _encode(self.lm, pairs)
        self.tok_links = (token_links(src_seg, tgt_seg, pairs, self.links) if self.links is not None
                          else None)
        self._drop_long()
        self.lengths = [(len(s), len(t)) for s, t in zip(self.src_ids, self.tgt_ids, strict=True)]
        per_epoch = len(self._mine(bucket_batches(self.lengths, o.batch_tokens)))
        self.total = o.total_steps(per_epoch, len(pairs))
        self.p = _Progress()
        if state is not None:
            self.model.load_state_dict(state["state_dict"])
            self.opt.load_state_dict(state["optimizer"])
            self.p = _Progress(*(state[k] for k in ("step", "epoch", "offset", "best", "elapsed", "ep_loss",
                                                    "ep_tok")))
            torch.set_rng_state(state["torch_rng"])
            if self.device.type == "cuda" and state.get("cuda_rng") is not None:
                torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        self.meta = {"model_type": o.model_type, "config": self.model_config, "src_vocab": src_vocab.itos,
                     "tgt_vocab": tgt_vocab.itos, "direction": self.direction, "src_spm": src_seg.to_tensor(),
                     "tgt_spm": tgt_seg.to_tensor()}

    def _mine(self, batches: list) -> list:
        """This process's batches: all of them, or under torchrun every N-th, as many for each process
        (an epoch leaves out up to N-1 batches, other ones each epoch as batches are shuffled)."""
        if self.procs == 1:
            return batches
        n = max(1, len(batches) // self.procs)
        return [batches[(self.rank + k * self.procs) % len(batches)] for k in range(n)]

    def _drop_long(self) -> None:
        """Leave out the pairs longer than ``--max-length`` model tokens on either side (EOS included):
        one very long pair makes a batch of its own and can cost more than an epoch of the rest."""
        limit = self.o.max_length
        keep = [k for k, (s, t) in enumerate(zip(self.src_ids, self.tgt_ids, strict=True))
                if len(s) + 1 <= limit and len(t) + 1 <= limit]
        if len(keep) == len(self.src_ids):
            return
        if self.direction == self.o.directions[0]:  # the same pairs in both directions: say it once
            warn(f"{len(self.src_ids) - len(keep)} of {len(self.src_ids)} training pairs are longer than "
                 f"--max-length {limit} model tokens: left out")
        self.src_ids = [self.src_ids[k] for k in keep]
        self.tgt_ids = [self.tgt_ids[k] for k in keep]
        if self.tok_links is not None:
            self.tok_links = [self.tok_links[k] for k in keep]

    def snapshot(self, finished: bool = False, summary: dict | None = None) -> None:
        p = self.p
        save_checkpoint(self.last_path, {
            **self.meta, "state_dict": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "step": p.step, "epoch": p.epoch, "offset": p.offset, "best": p.best, "elapsed": p.elapsed,
            "ep_loss": p.ep_loss, "ep_tok": p.ep_tok, "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            "finished": finished, "summary": summary or {},
        })

    def train(self, dev: DevSet | None, resume: bool, reporter: Reporter) -> dict:
        state = load_checkpoint(self.last_path) if resume and self.last_path.exists() else None
        if state is not None and state.get("finished"):
            return state["summary"]
        self._build(state)
        p = self.p
        reporter.start(self.direction, self.total, p.step)
        self.model.train()
        self.t0 = time.perf_counter() - p.elapsed
        self.run_seconds, self.run_tokens, self.run_pairs = 0.0, 0, 0  # this process's updates
        self.win_loss, self.win_tok, self.win_t, self.tok_rate = 0.0, 0, time.perf_counter(), 0.0
        while p.step < self.total:
            batches = self._mine(bucket_batches(self.lengths, self.o.batch_tokens,
                                                random.Random(self.o.seed * 100_003 + p.epoch)))
            for group in batches[p.offset:]:
                if p.step >= self.total:
                    break
                self._update(group, reporter)
            else:
                p.epoch, p.offset = p.epoch + 1, 0
            self._validate(dev, reporter)  # end of an epoch (or of training)
        reporter.end()
        dist.barrier()  # rank 0 has written the best and last checkpoints
        if self.rank != 0:
            return {"best_step": None, "steps": p.step}
        best_ck = load_checkpoint(self.best_path)
        summary = {"best_step": best_ck["step"], **best_ck["dev"], "steps": p.step,
                   "tokens_per_s": round(self.run_tokens / self.run_seconds) if self.run_seconds else None,
                   "pairs_per_s": round(self.run_pairs / self.run_seconds, 1) if self.run_seconds else None,
                   "train_tokens": self.run_tokens, "train_s": round(self.run_seconds, 2),
                   "elapsed_s": round(time.perf_counter() - self.t0, 1)}
        self.snapshot(finished=True, summary=summary)
        return summary

    def _objective(self, b, group: list[int]) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The training objective of one batch, its translation loss (summed) and its target tokens."""
        o = self.o
        out = self.net(b.src, b.src_mask, b.tgt_in)
        loss, n = _loss(out.logits, b.tgt_out, o.label_smoothing)
        objective = loss / n
        if self.tok_links is not None:  # supervise the alignment head, else the attention read
            target = guide_targets(b, [self.tok_links[k] for k in group],
                                   null_to_eos=out.align is not None).to(self.device)
            read = out.align if out.align is not None else reduce_attention(out.attention, AttentionSpec())
            objective = objective + o.guide_weight * guide_loss(read, target)
        return objective, loss, n

    def _step(self, b, group: list[int]) -> tuple[torch.Tensor, int]:
        """One optimizer update on batch ``b``: its translation loss (summed) and target tokens."""
        o, p = self.o, self.p
        objective, loss, n = self._objective(b, group)
        if not torch.isfinite(objective):
            raise AttnAlignError(
                f"the training loss became {objective.item()} at step {p.step + 1} ({self.direction})",
                hint=f"lower --lr (now {o.base_lr}) or raise --warmup; the last good checkpoint "
                     f"is kept in {self.model_dir}")
        self.opt.zero_grad(set_to_none=True)
        objective.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), o.clip)
        self.opt.step()
        return loss, n

    def _update(self, group: list[int], reporter: Reporter) -> None:
        o, p = self.o, self.p
        t_step = time.perf_counter()
        b = make_batch(group, [self.src_ids[k] for k in group], [self.tgt_ids[k] for k in group])
        b = b.to(self.device)
        for g in self.opt.param_groups:
            g["lr"] = lr_at(p.step, self.total, o.base_lr, min(o.warmup, self.total // 10))
        try:
            with flushed_denormals():
                loss, n = self._step(b, group)
        except torch.OutOfMemoryError:
            raise AttnAlignError(
                f"out of memory on a batch of {b.src.numel() + b.tgt_in.numel()} padded tokens",
                hint=f"lower --batch-tokens (now {o.batch_tokens})") from None
        p.step += 1
        p.offset += 1
        loss_value = loss.item()
        self.run_seconds += time.perf_counter() - t_step
        self.run_tokens += n
        self.run_pairs += len(group)
        self.win_loss += loss_value
        self.win_tok += n
        p.ep_loss += loss_value
        p.ep_tok += n
        now = time.perf_counter()
        if now - self.win_t >= 1.0 or p.step == self.total:
            self.tok_rate = self.procs * self.win_tok / (now - self.win_t)  # every process's, as rank 0's
            reporter.step(p.step, self.win_loss / max(1, self.win_tok), self.tok_rate)
            self.win_loss, self.win_tok, self.win_t = 0.0, 0, now
        p.elapsed = time.perf_counter() - self.t0
        if o.save_every and p.step % o.save_every == 0 and p.step < self.total and self.rank == 0:
            self.snapshot()

    def _validate(self, dev: DevSet | None, reporter: Reporter) -> None:
        """Log the epoch, keep the checkpoint if it is the best so far, save a resumable state (rank 0
        only under torchrun)."""
        p = self.p
        if self.rank != 0:
            p.ep_loss, p.ep_tok = 0.0, 0
            return
        # the epoch a fractional --epochs (or --max-steps) stopped inside counts as the last one
        row = {"direction": self.direction, "epoch": p.epoch + (p.offset > 0), "step": p.step,
               "train_loss": p.ep_loss / max(1, p.ep_tok),
               "tokens_per_s": round(self.tok_rate), "elapsed_s": round(time.perf_counter() - self.t0, 1)}
        if dev is not None:
            row.update(evaluate(self.lm, dev, self.o.batch_tokens, self.device))
        key = row["dev_aer"] if row.get("dev_aer") is not None else row.get("dev_loss", row["train_loss"])
        row["best"] = p.best is None or key <= p.best
        if row["best"]:
            p.best = key
            save_checkpoint(self.best_path, {**self.meta, "state_dict": self.model.state_dict(),
                                             "step": p.step,
                                             "dev": {k: row.get(k) for k in ("dev_loss", "dev_aer")}})
        append_log(self.model_dir, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
        reporter.validation(row)
        p.ep_loss, p.ep_tok = 0.0, 0
        p.elapsed = time.perf_counter() - self.t0
        self.snapshot()
