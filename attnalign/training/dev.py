"""Validation: the dev set and what each epoch measures on it (dev loss, perplexity, dev AER)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..data.alignments import Alignment
from ..data.corpus import Pairs
from ..decoding import argmax_links
from ..eval.metrics import Counts, corpus_counts
from ..nmt.batching import bucket_batches, make_batch
from ..nmt.checkpoint import LoadedModel
from ..nmt.extract import corpus_attention
from ..nmt.readouts import AttentionSpec
from ..nmt.subword import Segmenter
from ..nmt.vocab import PAD_ID
from .loss import smoothed_nll


def token_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> torch.Tensor:
    """Summed token cross-entropy (with label smoothing) over the target tokens that are not padding
    (a scalar on the logits' device; the batch knows how many tokens: ``Batch.tokens``)."""
    return smoothed_nll(logits, target, smoothing, PAD_ID)


def encode(lm: LoadedModel, pairs: Pairs) -> tuple[list[list[int]], list[list[int]]]:
    """Word pairs -> model token ids (through the segmenters and vocabularies)."""
    ss, ts = lm.src_seg or Segmenter(), lm.tgt_seg or Segmenter()
    src = [lm.src_vocab.encode(ss.segment(s)[0]) for s, _ in pairs]
    tgt = [lm.tgt_vocab.encode(ts.segment(t)[0]) for _, t in pairs]
    return src, tgt


def swap(pairs: Pairs) -> list[tuple[list[str], list[str]]]:
    return [(t, s) for s, t in pairs]


@dataclass
class DevSet:
    pairs: Pairs
    gold: list[Alignment] | None = None

    def reversed(self) -> DevSet:
        """The dev set of the reverse direction: sides and gold links swapped."""
        gold = None if self.gold is None else [
            Alignment(frozenset((j, i) for i, j in g.sure), frozenset((j, i) for i, j in g.possible))
            for g in self.gold]
        return DevSet(swap(self.pairs), gold)


def evaluate(lm: LoadedModel, dev: DevSet, batch_tokens: int, device: torch.device) -> dict:
    """Dev loss (no smoothing) and perplexity (None for a network that does not translate) and, with a
    gold, the AER of argmax-decoded attention."""
    pairs = [(s, t) for s, t in dev.pairs]
    src_ids, tgt_ids = encode(lm, [(s, t) for s, t in pairs if s and t])
    lengths = [(len(s), len(t)) for s, t in zip(src_ids, tgt_ids, strict=True)]
    total, n_tok = 0.0, 0
    model = lm.model
    model.eval()
    translates = getattr(model, "out", None) is not None  # without translation: no dev loss
    with torch.inference_mode():
        for group in bucket_batches(lengths, batch_tokens) if translates else ():
            b = make_batch(group, [src_ids[k] for k in group], [tgt_ids[k] for k in group]).to(device)
            total += float(token_loss(model(b.src, b.src_mask, b.tgt_in, lengths=b.lengths).logits,
                                      b.tgt_out, 0.0))
            n_tok += b.tokens
    dev_loss = total / max(1, n_tok) if translates else None
    row = {"dev_loss": dev_loss, "dev_ppl": None if dev_loss is None else math.exp(min(dev_loss, 50.0)),
           "dev_aer": None}
    if dev.gold is not None:
        # the gold's own sentences: the first of a dev text that may be longer (read_gold warned)
        mats = corpus_attention(lm, pairs[:len(dev.gold)], AttentionSpec(), batch_tokens, device)
        hyps = [Alignment.from_links(argmax_links(m, eos)) for m, eos in mats]
        row["dev_aer"] = sum(corpus_counts(hyps, dev.gold), Counts()).aer
    model.train()
    return row


