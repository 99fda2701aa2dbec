"""Training attention NMT models for alignment: the library behind ``attnalign train``.

One call trains one or both directions into a model directory (see :mod:`.checkpoint`). Each epoch
ends with a validation: dev loss and perplexity, and with a dev gold the dev AER of argmax-decoded
attention; the best checkpoint is chosen by dev AER when a gold is given, else by dev loss (else by
training loss). ``save_every`` adds resumable checkpoints inside epochs; ``resume`` continues from the
last one and ends with the same weights as an uninterrupted run (same seed, data and device).
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import torch
import torch.nn.functional as F

from . import __version__
from .alignments import Alignment, Link
from .batching import bucket_batches, make_batch
from .checkpoint import (
    DIRECTIONS,
    FORMAT_VERSION,
    LoadedModel,
    load_checkpoint,
    read_model_config,
    save_checkpoint,
)
from .decode import argmax_links
from .errors import AttnAlignError, warn
from .extract import AttentionSpec, corpus_attention, reduce_attention
from .fileio import atomic_open
from .metrics import Counts, corpus_counts
from .models import MODEL_TYPES, build_model
from .statistical import IDENTICAL, PREFIX
from .subword import Segmenter, train_segmenter
from .vocab import PAD_ID, Vocab

Pairs = Sequence[tuple[list[str], list[str]]]
LOG_FIELDS = ["direction", "epoch", "step", "train_loss", "dev_loss", "dev_ppl", "dev_aer",
              "tokens_per_s", "elapsed_s", "best"]


@dataclass
class TrainOptions:
    """Everything that determines a training run besides the data."""

    model_type: str = "rnn"
    model_config: dict = field(default_factory=dict)
    epochs: int = 8
    max_steps: int | None = None
    batch_tokens: int = 1000
    lr: float | None = None  # None: 1e-3 for the RNN, 5e-4 for the Transformer
    warmup: int = 200
    clip: float = 1.0
    label_smoothing: float = 0.1
    seed: int = 1
    device: str = "auto"
    threads: int | None = None
    min_freq: int = 1
    max_vocab: int | None = None
    lowercase: bool = False
    direction: str = "forward"  # forward | reverse | both
    subword: int | None = None  # sentencepiece vocabulary size per side; None or 0: words
    guide: str | None = None  # guided alignment: "auto" (built-in statistical aligner) or a file
    guide_weight: float = 1.0  # weight of the guided-alignment loss
    guide_model: str = "hmm-agree+fertility"  # the statistical aligner of guide="auto" (statistical.MODELS)
    guide_sym: str = "posterior"  # how guide="auto" combines its two directions (statistical.SYMS)
    guide_prefix: int = PREFIX  # guide="auto" sees words cut to this many characters (0: whole words)
    guide_identical: float = IDENTICAL  # guide="auto": extra EM counts for identical words (0: none)
    subword_type: str = "unigram"  # unigram | bpe
    save_every: int | None = None  # steps between resumable checkpoints inside an epoch


# Named sets of training options (``attnalign train --preset NAME``); options given beside a preset
# override it. "align": the configuration benchmarked in bench/quality.py (README, "Alignment
# quality"): both directions reading 4,000 sentencepiece pieces per side, guided by the built-in
# statistical aligner (hmm-agree+fertility, on words), with an alignment head.
PRESETS: dict[str, dict] = {
    "align": {"direction": "both", "guide": "auto", "subword": 4000, "model_config": {"align_head": True}},
}


def preset_options(name: str | None, **given) -> TrainOptions:
    """TrainOptions from a preset (or none) and the options given (those not None win; model_config
    entries are merged)."""
    if name is not None and name not in PRESETS:
        raise AttnAlignError(f"unknown preset {name!r}; choose {', '.join(PRESETS)}")
    base = PRESETS.get(name, {}) if name else {}
    given = {k: v for k, v in given.items() if v is not None}
    config = {**base.get("model_config", {}), **given.pop("model_config", {})}
    return TrainOptions(**{**base, **given, "model_config": config})


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


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise AttnAlignError("--device cuda was asked for, but torch sees no CUDA GPU",
                             hint="use --device cpu (or auto)")
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise AttnAlignError(f"unknown device {name!r}", hint="use auto, cpu or cuda")
    return torch.device(name)


def lr_at(step: int, total: int, base: float, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 10% of ``base`` at ``total``."""
    warm = min(1.0, (step + 1) / max(1, warmup))
    progress = min(1.0, step / max(1, total))
    return base * warm * (1.0 - 0.9 * progress)


def _loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> tuple[torch.Tensor, int]:
    """Summed token cross-entropy (with label smoothing) and the number of target tokens."""
    n = int((target != PAD_ID).sum())
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=PAD_ID,
                           label_smoothing=smoothing, reduction="sum")
    return loss, n


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
            logits, _ = model(b.src, b.src_mask, b.tgt_in)
            loss, n = _loss(logits, b.tgt_out, 0.0)
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


def _encode(lm: LoadedModel, pairs: Pairs) -> tuple[list[list[int]], list[list[int]]]:
    """Word pairs -> model token ids (through the segmenters and vocabularies)."""
    ss, ts = lm.src_seg or Segmenter(), lm.tgt_seg or Segmenter()
    src = [lm.src_vocab.encode(ss.segment(s)[0]) for s, _ in pairs]
    tgt = [lm.tgt_vocab.encode(ts.segment(t)[0]) for _, t in pairs]
    return src, tgt


def _prepare_dir(model_dir: Path, overwrite: bool, resume: bool) -> None:
    cfg = model_dir / "config.json"
    if resume:
        read_model_config(model_dir)
        return
    if model_dir.exists() and any(model_dir.iterdir()):
        if not overwrite:
            what = "a model" if cfg.exists() else "files"
            raise AttnAlignError(f"the model directory already holds {what}", path=model_dir,
                                 hint="pass --overwrite to replace it, --resume to continue its training, "
                                      "or choose another --model directory")
        if not cfg.exists():
            raise AttnAlignError("--overwrite refuses to empty a directory that is not a model directory",
                                 path=model_dir, hint="choose another --model directory")
        shutil.rmtree(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)


def _write_config(model_dir: Path, options: TrainOptions, directions: list[str], model_config: dict) -> None:
    data = {
        "format_version": FORMAT_VERSION,
        "attnalign_version": __version__,
        "model_type": options.model_type,
        "model_config": model_config,
        "directions": directions,
        "lowercase": options.lowercase,
        "train_options": asdict(options),
    }
    with atomic_open(model_dir / "config.json") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def _append_log(model_dir: Path, row: dict) -> None:
    path = model_dir / "log.csv"
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=LOG_FIELDS)
        if new:
            w.writeheader()
        w.writerow({k: row.get(k) for k in LOG_FIELDS})


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
) -> dict:
    """Train the requested direction(s) on ``pairs`` (token lists) into ``model_dir``.

    ``guide``: alignment links (source first) for every pair, to supervise the attention (guided
    alignment, Garg et al. 2019); with ``options.guide == "auto"`` and no ``guide``, the built-in
    statistical aligner (:mod:`.statistical`) makes them.

    Returns a summary: for each direction its best step, dev loss and dev AER, and the elapsed time.
    """
    model_dir = Path(model_dir)
    if resume:  # continue with the options the run started with
        saved = read_model_config(model_dir)["train_options"]
        saved.setdefault("guide_prefix", 0)  # runs started before the option saw whole words
        saved.setdefault("guide_identical", 0.0)  # ... and had no identical-word prior
        options = TrainOptions(**saved)
    if options.model_type not in MODEL_TYPES:
        raise AttnAlignError(f"unknown model type {options.model_type!r}; choose {', '.join(MODEL_TYPES)}")
    if options.direction not in (*DIRECTIONS, "both"):
        raise AttnAlignError(f"unknown direction {options.direction!r}; choose forward, reverse or both")
    if options.subword is not None and options.subword < 0:
        raise AttnAlignError(f"bad --subword {options.subword}",
                             hint="give 0 (whole words) or a vocabulary size per side, e.g. 4000")
    cfg_cls = MODEL_TYPES[options.model_type][0]
    try:
        model_config = asdict(cfg_cls(**options.model_config))
    except TypeError as e:
        raise AttnAlignError(f"bad model option: {e}") from None
    keep = [k for k, (s, t) in enumerate(pairs) if s and t]
    train_pairs = [pairs[k] for k in keep]
    if model_config.get("align_head") and guide is None and options.guide is None:
        raise AttnAlignError("the alignment head learns from a guide alignment only",
                             hint="add --guide auto (or --guide FILE), or leave out --align-head")
    if guide is None and options.guide == "auto":
        from .statistical import align_statistical, check_choices

        check_choices(options.guide_model, options.guide_sym)

        if options.guide_prefix < 0:
            raise AttnAlignError(f"bad --guide-prefix {options.guide_prefix}",
                                 hint="give 0 (whole words) or a number of characters")
        if options.guide_identical < 0:
            raise AttnAlignError(f"bad --guide-identical {options.guide_identical}",
                                 hint="give 0 (no prior) or a positive number of counts")
        note = getattr(reporter, "note", None)
        t0 = time.perf_counter()
        if note:
            note(f"guide: aligning {len(train_pairs)} pairs with {options.guide_model} ...")
        guide = align_statistical(train_pairs, sym=options.guide_sym, model=options.guide_model,
                                  prefix=options.guide_prefix, identical=options.guide_identical)
        if note:
            note(f"guide: {sum(map(len, guide))} links in {time.perf_counter() - t0:.0f} s")
        keep = list(range(len(train_pairs)))
    elif guide is not None:
        if len(guide) != len(pairs):
            raise AttnAlignError(f"the guide alignment has {len(guide)} lines for {len(pairs)} pairs",
                                 hint="give one alignment line per training pair")
        guide = [guide[k] for k in keep]
    if not train_pairs:
        raise AttnAlignError("the training corpus has no pair with both sides non-empty",
                             hint="check the --src/--tgt (or --corpus) files")
    _prepare_dir(model_dir, overwrite, resume)
    if dev is None:
        warn("no dev set given (--dev-src/--dev-tgt): the checkpoint with the lowest training loss is kept")
    directions = list(DIRECTIONS) if options.direction == "both" else [options.direction]
    _write_config(model_dir, options, directions, model_config)
    if options.threads:
        torch.set_num_threads(options.threads)
    device = resolve_device(options.device)
    reporter = reporter or _Silent()
    summary: dict = {"model_dir": str(model_dir), "directions": {}}
    for direction in directions:
        data = train_pairs if direction == "forward" else _swap(train_pairs)
        links = None
        if guide is not None:
            links = guide if direction == "forward" else [[(j, i) for i, j in g] for g in guide]
        d = None
        if dev is not None:
            d = dev if direction == "forward" else DevSet(
                _swap(dev.pairs),
                None if dev.gold is None else [Alignment(frozenset((j, i) for i, j in g.sure),
                                                         frozenset((j, i) for i, j in g.possible))
                                               for g in dev.gold])
        summary["directions"][direction] = _train_direction(
            data, model_dir, direction, options, model_config, d, resume, device, reporter, links)
    return summary


def guide_targets(batch, tok_links: Sequence[Sequence[tuple[int, int]]], null_to_eos: bool = False
                  ) -> torch.Tensor:
    """Target attention for guided training, [B, T+1, S+1]: row j (the step predicting target token j)
    is uniform over the source tokens linked to token j. Rows of unlinked target tokens are all zero
    (not supervised), or with ``null_to_eos`` put on the source EOS, which decoding reads as "no link"
    (the alignment head learns NULL alignment that way). The EOS row and padding are never supervised."""
    B, T = batch.tgt_in.shape
    g = torch.zeros(B, T, batch.src.size(1))
    for k, links in enumerate(tok_links):
        if links:
            ii = torch.tensor([i for i, _ in links])
            jj = torch.tensor([j for _, j in links])
            g[k, jj, ii] = 1.0
        if null_to_eos:
            n = batch.tgt_len[k]
            unlinked = g[k, :n].sum(-1) == 0
            g[k, :n, batch.src_len[k]] = unlinked.float()
    return g / g.sum(-1, keepdim=True).clamp(min=1.0)


def guide_loss(att: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of attention rows [B, T, S] against guide rows, averaged over guided rows."""
    rows = target.sum(-1) > 0
    if not rows.any():
        return att.new_zeros(())
    ce = -(target * torch.log(att.clamp(min=1e-9))).sum(-1)
    return ce[rows].mean()


def _token_links(lm: LoadedModel, pairs: Pairs, links: Sequence[Sequence[Link]]
                 ) -> list[list[tuple[int, int]]]:
    """Word links -> model-token links (every piece of the source word x every piece of the target)."""
    ss, ts = lm.src_seg or Segmenter(), lm.tgt_seg or Segmenter()
    out = []
    for (s, t), lk in zip(pairs, links, strict=True):
        s_of: dict[int, list[int]] = {}
        t_of: dict[int, list[int]] = {}
        for k, w in enumerate(ss.segment(s)[1]):
            s_of.setdefault(w, []).append(k)
        for k, w in enumerate(ts.segment(t)[1]):
            t_of.setdefault(w, []).append(k)
        out.append([(a, b) for i, j in lk for a in s_of.get(i, ()) for b in t_of.get(j, ())])
    return out


def _train_direction(pairs, model_dir: Path, direction: str, o: TrainOptions, model_config: dict,
                     dev: DevSet | None, resume: bool, device: torch.device, reporter: Reporter,
                     links: Sequence[Sequence[Link]] | None = None) -> dict:
    last_path = model_dir / f"{direction}.last.pt"
    best_path = model_dir / f"{direction}.pt"
    state = None
    if resume and last_path.exists():
        state = load_checkpoint(last_path)
        if state.get("finished"):
            return state["summary"]
        src_vocab, tgt_vocab = Vocab(state["src_vocab"]), Vocab(state["tgt_vocab"])
        src_seg, tgt_seg = Segmenter.from_tensor(state["src_spm"]), Segmenter.from_tensor(state["tgt_spm"])
    else:
        src_seg = tgt_seg = Segmenter()
        if o.subword:
            src_seg = train_segmenter((s for s, _ in pairs), o.subword, o.subword_type)
            tgt_seg = train_segmenter((t for _, t in pairs), o.subword, o.subword_type)
        src_vocab = Vocab.build((src_seg.segment(s)[0] for s, _ in pairs), o.min_freq, o.max_vocab)
        tgt_vocab = Vocab.build((tgt_seg.segment(t)[0] for _, t in pairs), o.min_freq, o.max_vocab)
    torch.manual_seed(o.seed)
    model = build_model(o.model_type, model_config, len(src_vocab), len(tgt_vocab)).to(device)
    lm = LoadedModel(model, o.model_type, model_config, src_vocab, tgt_vocab, direction, o.lowercase,
                     None, src_seg, tgt_seg)
    base_lr = o.lr or (1e-3 if o.model_type == "rnn" else 5e-4)
    opt = torch.optim.Adam(model.parameters(), lr=base_lr, betas=(0.9, 0.98))
    src_ids, tgt_ids = _encode(lm, pairs)
    tok_links = _token_links(lm, pairs, links) if links is not None else None
    lengths = [(len(s), len(t)) for s, t in zip(src_ids, tgt_ids, strict=True)]
    per_epoch = len(bucket_batches(lengths, o.batch_tokens))
    total = per_epoch * o.epochs if o.max_steps is None else min(o.max_steps, per_epoch * o.epochs)
    step, epoch, offset, best, elapsed = 0, 0, 0, None, 0.0
    ep_loss, ep_tok = 0.0, 0  # training loss of the current epoch (for the log and no-dev selection)
    if state is not None:
        model.load_state_dict(state["state_dict"])
        opt.load_state_dict(state["optimizer"])
        step, epoch, offset, best = state["step"], state["epoch"], state["offset"], state["best"]
        elapsed, ep_loss, ep_tok = state["elapsed"], state["ep_loss"], state["ep_tok"]
        torch.set_rng_state(state["torch_rng"])
        if device.type == "cuda" and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], device)
    meta = {"model_type": o.model_type, "config": model_config, "src_vocab": src_vocab.itos,
            "tgt_vocab": tgt_vocab.itos, "direction": direction, "src_spm": src_seg.to_tensor(),
            "tgt_spm": tgt_seg.to_tensor()}

    def snapshot(finished: bool = False, summary: dict | None = None) -> None:
        save_checkpoint(last_path, {
            **meta, "state_dict": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
            "epoch": epoch, "offset": offset, "best": best, "elapsed": elapsed,
            "ep_loss": ep_loss, "ep_tok": ep_tok,
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "finished": finished, "summary": summary or {},
        })

    reporter.start(direction, total, step)
    model.train()
    t0 = time.perf_counter() - elapsed
    run_seconds, run_tokens, run_pairs = 0.0, 0, 0  # throughput of the updates run by this process
    win_loss, win_tok, win_t = 0.0, 0, time.perf_counter()
    tok_rate = 0.0
    while step < total:
        batches = bucket_batches(lengths, o.batch_tokens, random.Random(o.seed * 100_003 + epoch))
        for group in batches[offset:]:
            if step >= total:
                break
            t_step = time.perf_counter()
            b = make_batch(group, [src_ids[k] for k in group], [tgt_ids[k] for k in group]).to(device)
            for g in opt.param_groups:
                g["lr"] = lr_at(step, total, base_lr, min(o.warmup, total // 10))
            try:
                logits, att, align = model(b.src, b.src_mask, b.tgt_in, with_align=True)
                loss, n = _loss(logits, b.tgt_out, o.label_smoothing)
                objective = loss / n
                if tok_links is not None:  # supervise the alignment head, else the attention read
                    group_links = [tok_links[k] for k in group]
                    target = guide_targets(b, group_links, null_to_eos=align is not None).to(device)
                    read = align if align is not None else reduce_attention(att, AttentionSpec())
                    objective = objective + o.guide_weight * guide_loss(read, target)
                if not torch.isfinite(objective):
                    raise AttnAlignError(
                        f"the training loss became {objective.item()} at step {step + 1} ({direction})",
                        hint=f"lower --lr (now {base_lr}) or raise --warmup; the last good checkpoint "
                             f"is kept in {model_dir}")
                opt.zero_grad(set_to_none=True)
                objective.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), o.clip)
                opt.step()
            except torch.OutOfMemoryError:
                raise AttnAlignError(
                    f"out of memory on a batch of {b.src.numel() + b.tgt_in.numel()} padded tokens",
                    hint=f"lower --batch-tokens (now {o.batch_tokens})") from None
            step += 1
            offset += 1
            loss_value = loss.item()
            run_seconds += time.perf_counter() - t_step
            run_tokens += n
            run_pairs += len(group)
            win_loss += loss_value
            win_tok += n
            ep_loss += loss_value
            ep_tok += n
            now = time.perf_counter()
            if now - win_t >= 1.0 or step == total:
                tok_rate = win_tok / (now - win_t)
                reporter.step(step, win_loss / max(1, win_tok), tok_rate)
                win_loss, win_tok, win_t = 0.0, 0, now
            elapsed = time.perf_counter() - t0
            if o.save_every and step % o.save_every == 0 and step < total:
                snapshot()
        else:
            epoch, offset = epoch + 1, 0
        # end of an epoch (or of training): validate and keep the best checkpoint
        row = {"direction": direction, "epoch": epoch, "step": step,
               "train_loss": ep_loss / max(1, ep_tok),
               "tokens_per_s": round(tok_rate), "elapsed_s": round(time.perf_counter() - t0, 1)}
        if dev is not None:
            row.update(evaluate(lm, dev, o.batch_tokens, device))
        key = row["dev_aer"] if row.get("dev_aer") is not None else row.get("dev_loss", row["train_loss"])
        row["best"] = best is None or key <= best
        if row["best"]:
            best = key
            save_checkpoint(best_path, {**meta, "state_dict": model.state_dict(), "step": step,
                                        "dev": {k: row.get(k) for k in ("dev_loss", "dev_aer")}})
        _append_log(model_dir, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
        reporter.validation(row)
        ep_loss, ep_tok = 0.0, 0
        elapsed = time.perf_counter() - t0
        snapshot()
    reporter.end()
    best_ck = load_checkpoint(best_path)
    summary = {"best_step": best_ck["step"], **best_ck["dev"], "steps": step,
               "tokens_per_s": round(run_tokens / run_seconds) if run_seconds else None,
               "pairs_per_s": round(run_pairs / run_seconds, 1) if run_seconds else None,
               "elapsed_s": round(time.perf_counter() - t0, 1)}
    snapshot(finished=True, summary=summary)
    return summary
