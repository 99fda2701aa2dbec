"""One direction's training run (:class:`DirectionRun`): vocabularies, model, optimizer, batches,
validation and resumable checkpoints; and the pieces every run shares (the progress protocol, the dev
set, the learning-rate schedule, the translation loss, dev evaluation)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch

from .. import dist
from ..data.alignments import Link
from ..data.corpus import Pairs
from ..errors import AttnAlignError, warn
from ..nmt.batching import bucket_batches, make_batch
from ..nmt.checkpoint import LoadedModel, load_checkpoint, read_model_config, save_checkpoint
from ..nmt.device import flushed_denormals
from ..nmt.models import build_model
from ..nmt.readouts import AttentionSpec, reduce_attention
from ..nmt.subword import Segmenter, train_segmenter
from ..nmt.vocab import Vocab
from .dev import DevSet, encode, evaluate, token_loss
from .guide import guide_loss, guide_targets, link_arrays, token_links
from .model_dir import append_log, round_start
from .options import TrainOptions, warmup_steps


class Reporter(Protocol):
    """Receives progress; the CLI draws it with rich, a notebook may ignore it. A reporter may also have
    ``note(message)``, told of stages before training (the guide alignment)."""

    def start(self, direction: str, total_steps: int, done_steps: int) -> None: ...
    def step(self, step: int, loss: float, tokens_per_s: float) -> None: ...
    def validation(self, row: dict) -> None: ...
    def end(self) -> None: ...


class Silent:
    def start(self, direction, total_steps, done_steps): pass
    def step(self, step, loss, tokens_per_s): pass
    def validation(self, row): pass
    def end(self): pass


def lr_at(step: int, total: int, base: float, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 10% of ``base`` at ``total``."""
    warm = min(1.0, (step + 1) / max(1, warmup))
    progress = min(1.0, step / max(1, total))
    return base * warm * (1.0 - 0.9 * progress)


def _adam(params, lr: float) -> torch.optim.Adam:
    """Adam with its fused kernel where torch has one for the device (one pass over each parameter
    instead of a dozen small operations); the same updates up to rounding."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), fused=True)
    except (RuntimeError, TypeError):  # torch < 2.4 on a CPU
        return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98))


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


class DirectionRun:
    """One direction's training: vocabularies, model, optimizer, data and progress, resumable."""

    def __init__(self, pairs: Pairs, model_dir: Path, direction: str, opts: TrainOptions, model_config: dict,
                 device: torch.device, links: Sequence[Sequence[Link]] | None):
        self.pairs, self.direction, self.options, self.device = pairs, direction, opts, device
        self.model_config = model_config
        self.model_dir = model_dir
        self.last_path = model_dir / f"{direction}.last.pt"
        self.best_path = model_dir / f"{direction}.pt"
        self.links = links
        self.self_round = 0  # the self-training round (0: guided by the teacher or a guide file)

    def _build(self, state: dict | None) -> None:
        opts, pairs = self.options, self.pairs
        # a self-training round that goes on from the round before: its weights, vocabularies and
        # segmenters, as they were when the round began (round_start)
        going_on = bool(self.self_round) and opts.rounds_go_on
        start = load_checkpoint(round_start(self.model_dir, self.direction)) if going_on and state is None \
            else None
        if state is not None or start is not None:
            saved = state if state is not None else start
            src_vocab, tgt_vocab = Vocab(saved["src_vocab"]), Vocab(saved["tgt_vocab"])
            src_seg = Segmenter.from_tensor(saved["src_spm"])
            tgt_seg = Segmenter.from_tensor(saved["tgt_spm"])
        else:
            src_seg = tgt_seg = Segmenter()
            data = opts.data
            if data.subword:
                src_seg = train_segmenter((s for s, _ in pairs), data.subword, data.subword_type)
                tgt_seg = train_segmenter((t for _, t in pairs), data.subword, data.subword_type)
            src_vocab = Vocab.build((src_seg.segment(s)[0] for s, _ in pairs), data.min_freq, data.max_vocab)
            tgt_vocab = Vocab.build((tgt_seg.segment(t)[0] for _, t in pairs), data.min_freq, data.max_vocab)
        torch.manual_seed(opts.schedule.seed)
        model = build_model(opts.network.model_type, self.model_config, len(src_vocab), len(tgt_vocab))
        self.model = model.to(self.device)
        self.rank, self.procs = dist.world()
        self.net = self.model  # what the updates run through: the model, or DDP around it
        if self.procs > 1:
            from torch.nn.parallel import DistributedDataParallel

            self.net = DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.loaded = LoadedModel(self.model, opts.network.model_type, self.model_config, src_vocab,
                                  tgt_vocab, self.direction, opts.data.lowercase, None, src_seg, tgt_seg)
        self.opt = _adam(self.model.parameters(), opts.base_lr)
        self.src_ids, self.tgt_ids = encode(self.loaded, pairs)
        self.tok_links = (link_arrays(token_links(src_seg, tgt_seg, pairs, self.links))
                          if self.links is not None else None)
        self._drop_long()
        self.lengths = [(len(s), len(t)) for s, t in zip(self.src_ids, self.tgt_ids, strict=True)]
        per_epoch = len(self._mine(bucket_batches(self.lengths, opts.schedule.batch_tokens)))
        self.total = opts.total_steps(per_epoch, len(pairs), going_on)
        self.progress = _Progress()
        if start is not None:  # a fresh optimizer and schedule over the round's passes
            self.model.load_state_dict(start["state_dict"])
        if state is not None:
            self.model.load_state_dict(state["state_dict"])
            self.opt.load_state_dict(state["optimizer"])
            self.progress = _Progress(*(state[k] for k in ("step", "epoch", "offset", "best", "elapsed",
                                                           "ep_loss", "ep_tok")))
            torch.set_rng_state(state["torch_rng"])
            if self.device.type == "cuda" and state.get("cuda_rng") is not None:
                torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        self.meta = {"model_type": opts.network.model_type, "config": self.model_config,
                     "src_vocab": src_vocab.itos, "tgt_vocab": tgt_vocab.itos, "direction": self.direction,
                     "src_spm": src_seg.to_tensor(), "tgt_spm": tgt_seg.to_tensor(),
                     # the run's data and id, as config.json records them: the directions prove they belong
                     # together, and --resume that a checkpoint is its run's
                     **{k: (read_model_config(self.model_dir).get("data") or {}).get(k)
                        for k in ("fingerprint", "run_id")}}

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
        limit = self.options.data.max_length
        keep = [k for k, (s, t) in enumerate(zip(self.src_ids, self.tgt_ids, strict=True))
                if len(s) + 1 <= limit and len(t) + 1 <= limit]
        if len(keep) == len(self.src_ids):
            return
        if not keep:  # an empty epoch would never end the run
            raise AttnAlignError(f"all {len(self.src_ids)} training pairs are longer than --max-length "
                                 f"{limit} model tokens: nothing is left to train on",
                                 hint="raise --max-length (it counts model tokens, EOS included)")
        if self.direction == self.options.directions[0]:  # the same pairs in both directions: say it once
            warn(f"{len(self.src_ids) - len(keep)} of {len(self.src_ids)} training pairs are longer than "
                 f"--max-length {limit} model tokens: left out")
        self.src_ids = [self.src_ids[k] for k in keep]
        self.tgt_ids = [self.tgt_ids[k] for k in keep]
        if self.tok_links is not None:
            self.tok_links = [self.tok_links[k] for k in keep]

    def snapshot(self, finished: bool = False, summary: dict | None = None) -> None:
        self._check()  # a run whose loss went wrong writes nothing more
        prog = self.progress
        save_checkpoint(self.last_path, {
            **self.meta, "state_dict": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "step": prog.step, "epoch": prog.epoch, "offset": prog.offset, "best": prog.best,
            "elapsed": prog.elapsed, "ep_loss": prog.ep_loss, "ep_tok": prog.ep_tok,
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            "finished": finished, "summary": summary or {},
        })

    def _prepare(self, resume: bool) -> dict | None:
        """Build the run, or restore it from its resumable checkpoint; the summary of a run that had
        already finished (nothing left to do), else None."""
        state = load_checkpoint(self.last_path) if resume and self.last_path.exists() else None
        if state is not None and state.get("finished"):
            return state["summary"]
        self._build(state)
        self.model.train()
        self.t0 = time.perf_counter() - self.progress.elapsed
        self.run_seconds, self.run_tokens, self.run_pairs = 0.0, 0, 0  # this process's updates
        self.win_loss, self.win_tok, self.win_t, self.tok_rate = 0.0, 0, time.perf_counter(), 0.0
        self.pending: list[tuple[torch.Tensor, torch.Tensor, int]] = []  # updates not yet read (_check)
        return None

    def _epoch_batches(self) -> list[list[int]]:
        """The batches of the current epoch not yet done (shuffled by seed and epoch)."""
        prog = self.progress
        batches = self._mine(bucket_batches(self.lengths, self.options.schedule.batch_tokens,
                                            random.Random(self.options.schedule.seed * 100_003 + prog.epoch)))
        return batches[prog.offset:]

    def train(self, dev: DevSet | None, resume: bool, reporter: Reporter) -> dict:
        done = self._prepare(resume)
        if done is not None:
            return done
        prog = self.progress
        reporter.start(self.direction, self.total, prog.step)
        while prog.step < self.total:
            for group in self._epoch_batches():
                if prog.step >= self.total:
                    break
                self._update(group, reporter)
            else:
                prog.epoch, prog.offset = prog.epoch + 1, 0
            self._validate(dev, reporter)  # end of an epoch (or of training)
        reporter.end()
        return self._finish()

    def _finish(self) -> dict:
        """The run's summary, once its best and last checkpoints are written (rank 0's; others None)."""
        prog = self.progress
        dist.barrier()  # rank 0 has written the best and last checkpoints
        if self.rank != 0:
            return {"best_step": None, "steps": prog.step}
        best_ck = load_checkpoint(self.best_path)
        summary = {"best_step": best_ck["step"], **best_ck["dev"], "steps": prog.step,
                   "tokens_per_s": round(self.run_tokens / self.run_seconds) if self.run_seconds else None,
                   "pairs_per_s": round(self.run_pairs / self.run_seconds, 1) if self.run_seconds else None,
                   "train_tokens": self.run_tokens, "train_s": round(self.run_seconds, 2),
                   "elapsed_s": round(time.perf_counter() - self.t0, 1)}
        self.snapshot(finished=True, summary=summary)
        return summary

    def _objective(self, b, group: list[int]) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The training objective of one batch, its translation loss (summed; without ``translation``
        the guide's, as if summed over the tokens) and its target tokens."""
        opts = self.options
        # bf16: the network's products in bfloat16 on the device (torch.autocast), the losses in float32
        with torch.autocast(self.device.type, torch.bfloat16, enabled=opts.runtime.precision == "bf16"):
            out = self.net(b.src, b.src_mask, b.tgt_in, lengths=b.lengths)
        n = b.tokens
        objective = None
        if out.logits is not None:
            loss = token_loss(out.logits.float(), b.tgt_out, opts.schedule.label_smoothing)
            objective = loss / n
        if self.tok_links is not None:  # supervise the alignment head, else the attention read
            target = guide_targets(b, [self.tok_links[k] for k in group],
                                   null_to_eos=out.align is not None)
            read = out.align if out.align is not None else reduce_attention(out.attention, AttentionSpec())
            guided = opts.teacher.guide_weight * guide_loss(read.float(), target)
            objective = guided if objective is None else objective + guided
        if out.logits is None:  # no translation: the loss reported is the guide's, summed as tokens are
            loss = objective.detach() * n
        return objective, loss, n

    def _step(self, b, group: list[int]) -> None:
        """One optimizer update on batch ``b``; its objective and translation loss are kept on the
        device until :meth:`_check` reads them (reading each would make every update wait for it)."""
        opts = self.options
        objective, loss, n = self._objective(b, group)
        self.pending.append((objective.detach(), loss.detach(), n))
        self.opt.zero_grad(set_to_none=True)
        objective.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), opts.schedule.clip)
        self.opt.step()

    def _update(self, group: list[int], reporter: Reporter) -> None:
        opts, prog = self.options, self.progress
        t_step = time.perf_counter()
        b = make_batch(group, [self.src_ids[k] for k in group], [self.tgt_ids[k] for k in group])
        b = b.to(self.device)
        warmup = warmup_steps(opts.schedule.warmup, self.total)
        for g in self.opt.param_groups:
            g["lr"] = lr_at(prog.step, self.total, opts.base_lr, warmup)
        try:
            with flushed_denormals():
                self._step(b, group)
        except torch.OutOfMemoryError:
            raise AttnAlignError(
                f"out of memory on a batch of {b.src.numel() + b.tgt_in.numel()} padded tokens",
                hint=f"lower --batch-tokens (now {opts.schedule.batch_tokens})") from None
        self._account(len(group), time.perf_counter() - t_step)
        self._tell(reporter)

    def _check(self) -> None:
        """Read the losses of the updates since the last check (one wait for the device) into the
        epoch's and the report's sums, in update order; stop the run at the first update whose objective
        was not finite, before anything of it is written."""
        if not self.pending:
            return
        opts, prog = self.options, self.progress
        values = torch.stack([torch.stack([o, x]) for o, x, _ in self.pending]).tolist()
        first = prog.step - len(self.pending) + 1  # the step of pending[0]
        for k, ((objective, loss), (_, _, n)) in enumerate(zip(values, self.pending, strict=True)):
            if not math.isfinite(objective):
                raise AttnAlignError(
                    f"the training loss became {objective} at step {first + k} ({self.direction})",
                    hint=f"lower --lr (now {opts.base_lr}) or raise --warmup; the last good checkpoint "
                         f"is kept in {self.model_dir}")
            self.win_loss += loss
            self.win_tok += n
            prog.ep_loss += loss
            prog.ep_tok += n
        self.pending = []

    def _account(self, pairs: int, seconds: float) -> None:
        """Count an update done: its pairs and seconds (its loss and tokens once :meth:`_check` reads
        them); a resumable checkpoint every ``save_every`` steps."""
        opts, prog = self.options, self.progress
        prog.step += 1
        prog.offset += 1
        self.run_seconds += seconds
        self.run_tokens += self.pending[-1][2]
        self.run_pairs += pairs
        prog.elapsed = time.perf_counter() - self.t0
        every = opts.runtime.save_every
        if every and prog.step % every == 0 and prog.step < self.total and self.rank == 0:
            self.snapshot()

    def _tell(self, reporter: Reporter) -> None:
        """Report the step about once a second: its loss per token and every process's tokens per
        second (as rank 0's)."""
        now = time.perf_counter()
        if now - self.win_t >= 1.0 or self.progress.step == self.total:
            self._check()
            self.tok_rate = self.procs * self.win_tok / (now - self.win_t)
            reporter.step(self.progress.step, self.win_loss / max(1, self.win_tok), self.tok_rate)
            self.win_loss, self.win_tok, self.win_t = 0.0, 0, now

    def _validate(self, dev: DevSet | None, reporter: Reporter) -> None:
        """Log the epoch, keep the checkpoint if it is the best so far, save a resumable state (rank 0
        only under torchrun)."""
        prog = self.progress
        self._check()
        if self.rank != 0:
            prog.ep_loss, prog.ep_tok = 0.0, 0
            return
        # the epoch a fractional --epochs (or --max-steps) stopped inside counts as the last one
        row = {"direction": self.direction, "epoch": prog.epoch + (prog.offset > 0), "step": prog.step,
               "train_loss": prog.ep_loss / max(1, prog.ep_tok),
               "tokens_per_s": round(self.tok_rate), "elapsed_s": round(time.perf_counter() - self.t0, 1),
               "round": self.self_round}
        if dev is not None:
            row.update(evaluate(self.loaded, dev, self.options.schedule.batch_tokens, self.device))
        key = next(row[k] for k in ("dev_aer", "dev_loss", "train_loss") if row.get(k) is not None)
        row["best"] = prog.best is None or key <= prog.best
        if row["best"]:
            prog.best = key
            save_checkpoint(self.best_path, {**self.meta, "state_dict": self.model.state_dict(),
                                             "step": prog.step,
                                             "dev": {k: row.get(k) for k in ("dev_loss", "dev_aer")}})
        append_log(self.model_dir, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
        reporter.validation(row)
        prog.ep_loss, prog.ep_tok = 0.0, 0
        prog.elapsed = time.perf_counter() - self.t0
        self.snapshot()

