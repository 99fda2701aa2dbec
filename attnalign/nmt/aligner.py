"""Corpus alignment with a trained model: pairs of word lists -> word alignments, in corpus order.

The corpus is read in chunks; each chunk is extracted (length-bucketed, ``inference_mode``), decoded
with :mod:`attnalign.decoding` (``--decoder`` and ``--sym`` name entries of its registries) and
yielded in corpus order, so memory stays flat however large the corpus.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path

import numpy as np

from .. import dist
from ..data.alignments import Link
from ..data.corpus import Pairs
from ..decoding import decode_pair
from ..decoding.policy import THRESHOLDED, Decoding, choose_decoding, reads_reverse
from ..errors import AttnAlignError, OptionError, warn
from .checkpoint import LoadedModel, is_hf_model, load_model, read_model_config
from .extract import iter_attention
from .options import GRADIENT_CHUNK_SIZE, AlignOptions, Reading
from .readouts import READOUTS, AttentionSpec, default_layer, reduce_attention, uses_align_head


@dataclass
class AlignedPair:
    """One aligned pair, with what produced its links."""

    index: int
    src: list[str]
    tgt: list[str]
    links: list[Link]
    scores: dict[Link, float] = field(default_factory=dict)
    matrix: np.ndarray | None = None  # [T, S] the matrix the links were decoded from (the teacher blend)
    eos: np.ndarray | None = None  # [T] forward attention mass on the source EOS
    reverse: np.ndarray | None = None  # [T, S] the reverse one turned around (or its blend), if read
    skipped: bool = False
    forward: np.ndarray | None = None  # [T, S] the forward matrix decoded (the attention, or its blend)
    reverse_eos: np.ndarray | None = None  # [S] the reverse direction's EOS mass, per source word


def read_links(pair: AlignedPair, decoding: Decoding) -> AlignedPair:
    """Decode ``pair``'s matrices with ``decoding``, setting its links, their scores and the matrix they
    were read from."""
    if not pair.skipped:
        pair.links, pair.scores, pair.matrix = decode_pair(pair.forward, pair.eos, pair.reverse,
                                                           pair.reverse_eos, decoding.decoder, decoding.sym,
                                                           decoding.threshold)
    return pair


def _reads_align(lm, spec: AttentionSpec) -> bool:
    """Whether ``spec`` reads ``lm``'s alignment head (an attnalign model) or its fine-tuned head (a
    pretrained one); --layer align without such a head raises."""
    return uses_align_head(lm.model, spec) if isinstance(lm, LoadedModel) else lm.reads_align(spec)


def _zeros(config: dict):
    """A [1, layers, heads, 1, 1] attention of a model's shape (to check --layer and --head against)."""
    import torch

    return torch.zeros(1, config["dec_layers"], config["heads"], 1, 1)


def model_meta(model: str | os.PathLike, options: Reading = Reading()) -> dict:
    """What a model directory's config.json says (directions, model type, network config, lower-casing),
    or the same keys for a pretrained Hugging Face model (both directions with ``reverse_model``)."""
    if not is_hf_model(model):
        meta = read_model_config(model)
        tuned = meta.get("model_type") == "pretrained"  # fine-tuned by train --init-from
        if options.reverse_model is not None or ((options.src_lang or options.tgt_lang) and not tuned):
            raise OptionError("--reverse-model, --src-lang and --tgt-lang apply to pretrained Hugging Face "
                              f"models; {model} is an attnalign model directory")
        return meta
    if options.reverse_model is not None and not is_hf_model(options.reverse_model):
        raise OptionError("--reverse-model must be a Hugging Face model too (a save_pretrained directory "
                          "or hf:NAME)", path=options.reverse_model)
    return {"directions": ["forward", "reverse"] if options.reverse_model else ["forward"],
            "model_type": "huggingface", "model_config": {}, "lowercase": False, "pretrained": str(model),
            "reverse_model": options.reverse_model}


def load_directions(model: str | os.PathLike, options: Reading, both: bool):
    """The forward model and, with ``both``, the reverse one (a :class:`LoadedModel`, or an
    :class:`~attnalign.nmt.hf.HFModel` for a pretrained model)."""
    from .hf import HFModel

    if is_hf_model(model):
        fwd = HFModel(str(model), options.src_lang, options.tgt_lang, options.device)
        rev = (HFModel(str(options.reverse_model), options.tgt_lang, options.src_lang, options.device,
                       "reverse") if both else None)
        return fwd, rev
    meta = read_model_config(model)
    if meta.get("model_type") == "pretrained":  # fine-tuned: one save_pretrained directory per direction
        cfg = meta["model_config"]
        s, t = options.src_lang or cfg.get("src_lang"), options.tgt_lang or cfg.get("tgt_lang")

        def tuned(d: str, langs) -> HFModel:
            h = (cfg.get("heads") or {}).get(d) if isinstance(cfg.get("heads"), dict) else None
            if not isinstance(h, dict) or not all(isinstance(h.get(k), int) for k in ("layer", "head")):
                raise AttnAlignError(f"config.json names a fine-tuned pretrained model but holds no "
                                     f"layer and head of its {d} direction", path=Path(model) / "config.json",
                                     hint="a model directory's config.json is written by attnalign train; "
                                          "restore it, or train the model again")
            return HFModel(str(Path(model) / d), *langs, options.device, d, (h["layer"], h["head"]))

        return tuned("forward", (s, t)), tuned("reverse", (t, s)) if both else None
    return (load_model(model, "forward", options.device),
            load_model(model, "reverse", options.device) if both else None)


class Aligner:
    """Loads the model(s) a configuration needs, extracts their attention over pairs of word lists and,
    aligning alone, decodes it with :attr:`decoding`: the run's (:func:`attnalign.combine.combined_aligner`
    decides it and gives it with :meth:`with_decoding`), else, for the Python API's ``Aligner`` used
    alone, the options' ``auto`` choices made for the model without a teacher;
    :class:`attnalign.combine.Combined` decodes a blend with a teacher instead."""

    def __init__(self, model_dir: str | os.PathLike, options: AlignOptions = AlignOptions()):
        options.check()
        self.reading = reading = options.reading  # all the aligner reads of the options
        self.given = options.decoding  # the decoding as given, for aligning alone (decoding)
        meta = model_meta(model_dir, reading)
        self.meta = meta
        self.spec = AttentionSpec(reading.layer, reading.head, reading.shift, reading.readout,
                                  reading.smoothgrad)
        self.both = meta["directions"] == ["forward", "reverse"]
        network = meta.get("model_config", {})
        alone = bool(network.get("head_only"))  # no other attention: every --layer reads the head
        head = bool(network.get("align_head")) and (reading.layer in (None, "align") or alone)
        self.head = head  # read through an alignment head, as far as the options say
        self._decoding: Decoding | None = None
        sym = self.given.sym
        first = "forward" if "forward" in meta["directions"] else "reverse"
        both = reads_reverse(sym, self.both)
        if both and not self.both:
            raise OptionError(
                f"--sym {sym} needs a model trained in both directions; this one has "
                f"{', '.join(meta['directions'])}", path=model_dir,
                hint="give --reverse-model (the target-to-source model), or use --sym none"
                if meta.get("pretrained") else "train with --direction both, or use --sym none")
        if first == "reverse" and not both:
            raise AttnAlignError("the model has only the reverse direction", path=model_dir,
                                 hint="align with the corpus sides swapped, or train --direction forward")
        if dist.launched() and reading.device.startswith("cuda"):  # one GPU per process of a machine
            self.reading = reading = replace(reading, device=dist.process_gpu())
        self.forward, self.reverse = load_directions(model_dir, reading, both)
        self.lowercase = self.forward.lowercase
        self._check_layer_head(self.forward)

    @property
    def decoding(self) -> Decoding:
        """How this aligner alone decodes: the run's decoding where given, else the options' with their
        ``auto`` choices made for the model alone."""
        if self._decoding is None:
            self._decoding = choose_decoding(self.given, both=self.both, head=self.head)
        return self._decoding

    def with_decoding(self, decoding: Decoding) -> Aligner:
        """This aligner (the same models) decoding with ``decoding`` (every value given)."""
        other = copy.copy(self)
        other._decoding = decoding
        return other

    def _check_layer_head(self, lm: LoadedModel) -> None:
        if _reads_align(lm, self.spec):  # raises for --layer align without a head
            if self.reading.head != "mean":
                warn("--head applies to Transformer layers; the alignment head is a single attention")
            if self.head and self.reading.layer not in (None, "align"):  # a network without a decoder
                warn(f"--layer {self.reading.layer}: this model has no decoder (--head-only); its alignment "
                     "head, the one attention it has, aligns")
            return
        if not lm.has_layers:
            if self.reading.layer is not None or self.reading.head != "mean":
                warn("--layer and --head apply to Transformer models only; this RNN has one attention")
            return
        reduce_attention(_zeros(lm.config), self.spec)  # raises with the valid choices

    @property
    def description(self) -> dict:
        """The settings, for titles, signatures and saved-attention metadata."""
        return self.describe(self.decoding)

    def describe(self, d: Decoding) -> dict:
        """The settings of reading this aligner's models with the decoding ``d``."""
        o = self.reading
        tf = self.forward.has_layers
        head_read = _reads_align(self.forward, self.spec)
        layer = "align" if head_read else o.layer
        if layer is None:
            layer = default_layer(self.forward.config.get("dec_layers", 1))
        return {"model_type": self.forward.model_type, "directions": self.meta["directions"],
                "sym": d.sym, "decoder": d.decoder, "layer": layer if tf or head_read else None,
                "head": o.head if tf and not head_read else None, "shift": o.shift,
                "threshold": d.threshold if d.decoder in THRESHOLDED else None, "readout": o.readout,
                "smoothgrad": o.smoothgrad or None,
                "teacher": d.teacher_weight, "teacher_pairs": None}

    def _too_long(self, lm: LoadedModel, words: Sequence[str], side: str) -> bool:
        return lm.token_count(words, side) > self.reading.max_length

    def extract(self, pairs: Pairs, start: int = 0) -> list[AlignedPair]:
        """The attention of a list of pairs (one chunk), in order, not yet decoded; ``start`` numbers
        them. A pair longer than ``--max-length`` is skipped (a warning; no links)."""
        o = self.reading
        ok = [k for k, (s, t) in enumerate(pairs)
              if not (self._too_long(self.forward, s, "src") or self._too_long(self.forward, t, "tgt"))]
        for k in sorted(set(range(len(pairs))) - set(ok)):
            warn(f"pair {start + k + 1} (line {start + k + 1}) is longer than --max-length "
                 f"{o.max_length} tokens: skipped, its output line is empty")
        sub = [pairs[k] for k in ok]
        out = [AlignedPair(start + k, list(s), list(t), [], skipped=True) for k, (s, t) in enumerate(pairs)]
        for n, m, eos in iter_attention(self.forward, sub, self.spec, o.batch_tokens, o.device):
            p = out[ok[n]]
            p.forward, p.eos, p.skipped = m, eos, False
        if self.reverse is not None:
            swapped = [(t, s) for s, t in sub]
            for n, m, eos in iter_attention(self.reverse, swapped, self.spec, o.batch_tokens, o.device):
                out[ok[n]].reverse, out[ok[n]].reverse_eos = m.T, eos  # [S, T] -> [T, S]; EOS per source word
        return out

    def align_pairs(self, pairs: Pairs, start: int = 0) -> list[AlignedPair]:
        """Align a list of pairs (one chunk) and return them in order; ``start`` numbers them."""
        return [read_links(p, self.decoding) for p in self.extract(pairs, start)]

    def chunks(self, pairs: Iterable[tuple[Sequence[str], Sequence[str]]]) -> Iterator[list[AlignedPair]]:
        """The attention of any iterable of pairs, a chunk at a time, in corpus order, not yet decoded.
        Under torchrun each process extracts its slice of every chunk and rank 0 yields them all (the
        others nothing)."""
        rank, procs = dist.world()
        it = iter(pairs)
        start = 0
        size = self.reading.chunk_size
        if READOUTS[self.reading.readout].gradients:  # tens of times slower: the progress moves per chunk
            size = min(size, GRADIENT_CHUNK_SIZE)
        while chunk := list(islice(it, size)):
            if start == 0 and rank == 0:
                self._check_coverage(chunk)
            if procs == 1:
                yield self.extract(chunk, start)
            else:
                share = -(-len(chunk) // procs)
                lo = min(len(chunk), rank * share)
                parts = dist.gather(self.extract(chunk[lo : lo + share], start + lo))
                if parts:
                    yield [p for part in parts for p in part]
            start += len(chunk)

    def align(self, pairs: Iterable[tuple[Sequence[str], Sequence[str]]]) -> Iterator[AlignedPair]:
        """Align any iterable of pairs, yielding results in corpus order (under torchrun: on rank 0)."""
        for chunk in self.chunks(pairs):
            for p in chunk:
                yield read_links(p, self.decoding)

    def _check_coverage(self, pairs: Pairs) -> None:
        """Warn when the corpus looks like the wrong language order for the model."""
        lm = self.forward
        if not isinstance(lm, LoadedModel) or (lm.src_seg is not None and lm.src_seg.is_subword):
            return
        src = [s for s, _ in pairs[:2000]]
        tgt = [t for _, t in pairs[:2000]]
        straight = min(lm.src_vocab.coverage(src), lm.tgt_vocab.coverage(tgt))
        swapped = min(lm.src_vocab.coverage(tgt), lm.tgt_vocab.coverage(src))
        if straight < 0.2:
            hint = (" The swapped order fits much better: swap --src and --tgt."
                    if swapped > 2 * straight + 0.1 else "")
            warn(f"only {100 * straight:.0f}% of the corpus words are in the model's vocabulary: is this "
                 f"the language pair and order the model was trained on?{hint}")
