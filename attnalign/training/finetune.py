"""Guided fine-tuning of a pretrained Hugging Face translation model (``train --init-from``): one
cross-attention head learns the teacher's links, the rest of the model stays as it was.

The head: in the penultimate decoder layer (the only one if there is one), the head whose attention
is already closest to the guide (lowest guide cross-entropy on the first pairs). Only that head's
query and key projections are trained (the gradient of the other heads' rows is zero), on the guide
loss plus the translation loss (so that the head keeps serving translation). Dropout is off (the
model runs in eval mode), so the attention that is trained is the attention that is read.

The model directory holds ``config.json`` (``model_type`` "pretrained", each direction's layer and
head, the languages, the training options), ``forward/`` and ``reverse/`` as ``save_pretrained``
writes them, and ``log.csv``. ``config.json`` is written last: a directory without it is no model.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from ..data.alignments import Alignment, Link
from ..data.corpus import Pairs
from ..decoding import argmax_links
from ..errors import AttnAlignError, OptionError, warn
from ..eval.metrics import Counts, corpus_counts
from ..nmt.batching import bucket_batches
from ..nmt.device import resolve_device, set_threads
from .guide import guide_loss, pieces_links, teacher_links
from .model_dir import append_log, finish_dir, prepare_dir, write_config
from .options import TrainOptions

PROBE_PAIRS = 256  # pairs the head choice reads
BASE_LR = 1e-4  # without --lr: a fine-tuning rate, not a from-scratch one


def finetune(pairs: Pairs, model_dir: str | Path, options: TrainOptions, *, dev=None,
             guide: Sequence[Sequence[Link]] | None = None, overwrite: bool = False, reporter=None,
             data: dict | None = None) -> dict:
    """Fine-tune ``options.network.init_from`` (and ``options.network.reverse_init_from`` for the
    reverse direction) on ``pairs`` with guide links (given, or the built-in aligner's with
    ``options.teacher.guide == "auto"``) into ``model_dir``. Returns the same summary as
    :func:`attnalign.training.train`."""
    from ..nmt.hf import HFModel

    model_dir = Path(model_dir)
    if options.teacher.guide is None and guide is None:
        raise OptionError("fine-tuning a pretrained model learns from a guide alignment",
                          hint="add --guide auto (the built-in aligner) or --guide FILE")
    if "reverse" in options.directions and not options.network.reverse_init_from:
        raise OptionError("--direction both/reverse needs --reverse-init-from (the target-to-source model)")
    device = resolve_device(options.runtime.device)
    set_threads(options.runtime.threads)
    keep = [k for k, (s, t) in enumerate(pairs) if s and t]
    train_pairs = [pairs[k] for k in keep]
    if not train_pairs:
        raise AttnAlignError("the training corpus has no pair with both sides non-empty")
    if guide is not None:
        guide = [guide[k] for k in keep]
    models = {d: HFModel(options.network.init_from if d == "forward" else options.network.reverse_init_from,
                         *_langs(options, d), device=str(device)) for d in options.directions}
    for m in models.values():
        _trainable(m, 0)  # an unsupported architecture fails before the guide is computed
    if guide is None:
        guide = teacher_links(train_pairs, options, getattr(reporter, "note", None))[0]
    work = prepare_dir(model_dir, overwrite, False)
    summary: dict = {"model_dir": str(model_dir), "directions": {}}
    heads = {}
    for d, m in models.items():
        fwd = d == "forward"
        d_pairs = train_pairs if fwd else [(t, s) for s, t in train_pairs]
        d_links = guide if fwd else [[(j, i) for i, j in g] for g in guide]
        d_dev = dev if dev is None or fwd else dev.reversed()
        run = _HeadRun(m, d, d_pairs, d_links, options, device)
        summary["directions"][d] = run.train(d_dev, reporter, work)
        heads[d] = {"layer": run.layer, "head": run.head}
        out = work / d
        m.model.save_pretrained(out)
        m.tok.save_pretrained(out)
    config = {"heads": heads, "src_lang": options.network.src_lang, "tgt_lang": options.network.tgt_lang,
              "init_from": options.network.init_from, "reverse_init_from": options.network.reverse_init_from}
    write_config(work, options, options.directions, config, data, options.directions,
                 model_type="pretrained")
    finish_dir(work, model_dir)
    return summary


def _langs(options: TrainOptions, direction: str) -> tuple[str | None, str | None]:
    s, t = options.network.src_lang, options.network.tgt_lang
    return (s, t) if direction == "forward" else (t, s)


def _trainable(m, layer: int):
    """The query and key projections of ``layer``'s cross-attention (BART-family layout)."""
    try:
        att = m.base[1].layers[layer].encoder_attn
        return att.q_proj, att.k_proj
    except (AttributeError, IndexError, TypeError):
        raise OptionError(f"guided fine-tuning supports BART-family models (MarianMT, M2M-100, NLLB, mBART, "
                          f"BART); {m.ref} is {m.hf_type!r}",
                          hint="align with it as it is (--model), without train --init-from") from None


class _HeadRun:
    """One direction: pick the head, train it, keep the best state (by dev AER, else the last)."""

    def __init__(self, hf, direction: str, pairs: Pairs, links, options: TrainOptions, device):
        self.hf, self.direction, self.options, self.device = hf, direction, options, device
        self.pairs, self.links = pairs, links
        n = hf.config["dec_layers"]
        self.layer = n - 2 if n > 1 else 0
        self.enc = hf.encode(pairs)
        self.tok_links = [pieces_links(s_idx, t_idx, lk) for ((_, s_idx), (_, t_idx)), lk
                          in zip(self.enc, links, strict=True)]
        self.head = self._pick_head()

    def _batch(self, idx: Sequence[int]):
        """Padded tensors of pairs ``idx``: source, its mask, decoder input, labels, and the guide rows
        ``[B, T, S]`` (row p, predicting label p: uniform over the source pieces linked to it)."""
        src, mask, dec, labels = self.hf.pad([self.enc[i] for i in idx])
        target = torch.zeros(len(idx), dec.size(1), src.size(1))
        for k, i in enumerate(idx):
            if self.tok_links[i]:
                q, p = zip(*self.tok_links[i], strict=True)
                target[k, list(p), list(q)] = 1.0
        target = target / target.sum(-1, keepdim=True).clamp(min=1.0)
        d = self.device
        return src.to(d), mask.to(d), dec.to(d), labels.to(d), target.to(d)

    def _forward(self, batch):
        src, mask, dec, labels, target = batch
        out = self.hf.model(input_ids=src, attention_mask=mask, decoder_input_ids=dec, output_attentions=True,
                           use_cache=False)
        return out.logits, out.cross_attentions[self.layer], labels, target

    def _pick_head(self) -> int:
        """The head of ``self.layer`` with the lowest guide cross-entropy on the first pairs."""
        idx = list(range(min(PROBE_PAIRS, len(self.pairs))))
        total = torch.zeros(self.hf.config["heads"])
        with torch.inference_mode():
            for group in bucket_batches([(len(self.enc[i][0][0]), len(self.enc[i][1][0])) for i in idx],
                                        self.options.schedule.batch_tokens * 4):
                _, att, _, target = self._forward(self._batch(group))
                total += torch.stack([guide_loss(att[:, h], target) for h in range(att.size(1))]).cpu()
        return int(total.argmin())

    def _optimizer(self):
        """AdamW over the chosen head's query and key rows (a gradient hook zeroes the other heads')."""
        q, k = _trainable(self.hf, self.layer)
        dh = q.weight.shape[0] // self.hf.config["heads"]
        rows = torch.zeros(q.weight.shape[0], device=self.device)
        rows[self.head * dh : (self.head + 1) * dh] = 1.0
        for p in self.hf.model.parameters():
            p.requires_grad_(False)
        params = [p for proj in (q, k) for p in (proj.weight, proj.bias) if p is not None]
        for p in params:
            p.requires_grad_(True)
            p.register_hook(lambda g: g * (rows[:, None] if g.dim() == 2 else rows))
        self.params = params
        return torch.optim.AdamW(params, lr=self.options.schedule.lr or BASE_LR, weight_decay=0.0)

    def _step(self, opt, group) -> tuple[float, int]:
        logits, att, labels, target = self._forward(self._batch(group))
        nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)
        loss = nll + self.options.teacher.guide_weight * guide_loss(att[:, self.head], target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, self.options.schedule.clip)
        opt.step()
        return float(loss.detach()), int((labels != -100).sum())

    def train(self, dev, reporter, work: Path) -> dict:
        """Train for ``--epochs`` (or ``--max-steps``); after each epoch log it (dev AER with a dev gold)
        and keep the head's state if it is the best so far."""
        opts, hf = self.options, self.hf
        opt = self._optimizer()
        hf.model.eval()  # no dropout: the attention trained is the attention read
        batches = bucket_batches([(len(s[0]), len(t[0])) for s, t in self.enc], opts.schedule.batch_tokens)
        total = opts.total_steps(len(batches), len(self.enc))
        rng = random.Random(opts.schedule.seed)
        torch.manual_seed(opts.schedule.seed)
        if reporter:
            reporter.start(self.direction, total, 0)
        step, tokens, t0, best, kept, epoch = 0, 0, time.perf_counter(), None, None, 0
        while step < total:
            epoch += 1
            order = list(batches)
            rng.shuffle(order)
            losses = []
            for group in order[: total - step]:
                loss, n = self._step(opt, group)
                step, tokens = step + 1, tokens + n
                losses.append(loss)
                if reporter:
                    reporter.step(step, loss, tokens / max(1e-9, time.perf_counter() - t0))
            row = {"direction": self.direction, "epoch": epoch, "step": step,
                   "train_loss": sum(losses) / len(losses), "elapsed_s": round(time.perf_counter() - t0, 1),
                   "dev_aer": self._dev_aer(dev) if dev is not None and dev.gold is not None else None}
            row["best"] = row["dev_aer"] is None or best is None or row["dev_aer"] < best
            if row["best"]:
                best = row["dev_aer"]
                kept = (dict(row), [p.detach().clone() for p in self.params])
            append_log(work, row)
            if reporter:
                reporter.validation(row)
        if reporter:
            reporter.end()
        if not math.isfinite(row["train_loss"]):
            warn(f"{self.direction}: the fine-tuning loss is not finite; try a lower --lr")
        with torch.no_grad():
            for p, saved in zip(self.params, kept[1], strict=True):
                p.copy_(saved)
        return {"best_step": kept[0]["step"], "dev_loss": None, "dev_aer": kept[0]["dev_aer"], "steps": step,
                "elapsed_s": time.perf_counter() - t0, "layer": self.layer, "head": self.head}

    def _dev_aer(self, dev) -> float:
        from ..nmt.readouts import AttentionSpec

        spec = AttentionSpec(self.layer, self.head, 0)
        mats = dict((i, (mm, e)) for i, mm, e in self.hf.iter_attention(
            dev.pairs, spec, self.options.schedule.batch_tokens, self.device))
        hyps = [Alignment.from_links(argmax_links(*mats[i])) for i in range(len(dev.pairs))]
        return sum(corpus_counts(hyps, dev.gold), Counts()).aer
