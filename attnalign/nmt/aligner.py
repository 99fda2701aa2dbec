"""Corpus alignment with a trained model: pairs of word lists -> word alignments, in corpus order.

The corpus is read in chunks; each chunk is extracted (length-bucketed, ``inference_mode``), decoded
with :mod:`attnalign.decoding` (``--decoder`` and ``--sym`` name entries of its registries) and
yielded in corpus order, so memory stays flat however large the corpus.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path

import numpy as np

from .. import dist
from ..data.alignments import Link
from ..data.corpus import Pairs
from ..decoding import (
    HEAD_DECODING,
    SYMMETRIZATIONS,
    TEACHER_MIN_PAIRS,
    THRESHOLD,
    JoinedCorpus,
    TeacherView,
    blend,
    decode_pair,
    teacher_decoding,
)
from ..errors import AttnAlignError, OptionError, warn
from .checkpoint import LoadedModel, is_hf_model, load_model, read_model_config
from .extract import AttentionSpec, default_layer, iter_attention, reduce_attention, uses_align_head
from .options import AUTO, AlignOptions


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
    reverse: np.ndarray | None = None  # [T, S] reverse attention turned around, if used
    skipped: bool = False
    forward: np.ndarray | None = None  # [T, S] the forward attention (= matrix unless combined)


def resolve_decoding(options: AlignOptions, directions: Sequence[str], align_head: bool,
                     teacher: int | None = None) -> AlignOptions:
    """Fill in the "auto" choices for a model: combined with a teacher trained on ``teacher`` pairs,
    :func:`teacher_decoding`; else a bidirectional model with an alignment head (read by
    ``options.layer``) gets :data:`HEAD_DECODING`; any other bidirectional model grow-diag-final-and
    with argmax; a one-direction model no symmetrization with argmax; the threshold is THRESHOLD."""
    both = "forward" in directions and "reverse" in directions
    if teacher is not None:
        t = teacher_decoding(teacher, options.decoder)
        sym = (t["sym"] if both else "none") if options.sym == AUTO else options.sym
        decoder = t["decoder"] if options.decoder == AUTO else options.decoder
        threshold = t["threshold"] if options.threshold is None else options.threshold
        weight = t["weight"] if options.teacher_weight is None else options.teacher_weight
        return replace(options, sym=sym, decoder=decoder, threshold=threshold, teacher_weight=weight)
    head = align_head and options.layer in (None, "align") and both
    sym, decoder, threshold = options.sym, options.decoder, options.threshold
    if sym == AUTO:
        sym = HEAD_DECODING["sym"] if head else ("grow-diag-final-and" if both else "none")
    if decoder == AUTO:
        decoder = HEAD_DECODING["decoder"] if head and sym == HEAD_DECODING["sym"] else "argmax"
    if threshold is None:
        same = head and (sym, decoder) == (HEAD_DECODING["sym"], HEAD_DECODING["decoder"])
        threshold = HEAD_DECODING["threshold"] if same else THRESHOLD
    return replace(options, sym=sym, decoder=decoder, threshold=threshold)


def _reads_align(lm, spec: AttentionSpec) -> bool:
    """Whether ``spec`` reads ``lm``'s alignment head (an attnalign model) or its fine-tuned head (a
    pretrained one); --layer align without such a head raises."""
    return uses_align_head(lm.model, spec) if isinstance(lm, LoadedModel) else lm.reads_align(spec)


def _zeros(config: dict):
    """A [1, layers, heads, 1, 1] attention of a model's shape (to check --layer and --head against)."""
    import torch

    return torch.zeros(1, config["dec_layers"], config["heads"], 1, 1)


def model_meta(model: str | os.PathLike, options: AlignOptions = AlignOptions()) -> dict:
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


def load_directions(model: str | os.PathLike, options: AlignOptions, both: bool):
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
    """Loads the model(s) a configuration needs and aligns pairs of word lists."""

    def __init__(self, model_dir: str | os.PathLike, options: AlignOptions = AlignOptions()):
        options.check()
        self._given = options  # before "auto" is resolved: fit_teacher resolves again
        meta = model_meta(model_dir, options)
        self._head = bool(meta.get("model_config", {}).get("align_head"))
        self.teacher = None  # a fitted statistical.SoftTeacher, once fit_teacher has run
        self._teacher_pairs = 0  # the pairs the teacher learned from, kept counts' included
        options = resolve_decoding(options, meta["directions"], self._head)
        sym = options.sym
        self.sym = sym
        self.options = options
        self.meta = meta
        self.spec = AttentionSpec(options.layer, options.head, options.shift)
        first = "forward" if "forward" in meta["directions"] else "reverse"
        both = SYMMETRIZATIONS[sym].both
        if both and meta["directions"] != ["forward", "reverse"]:
            raise OptionError(
                f"--sym {sym} needs a model trained in both directions; this one has "
                f"{', '.join(meta['directions'])}", path=model_dir,
                hint="give --reverse-model (the target-to-source model), or use --sym none"
                if meta.get("pretrained") else "train with --direction both, or use --sym none")
        if first == "reverse" and not both:
            raise AttnAlignError("the model has only the reverse direction", path=model_dir,
                                 hint="align with the corpus sides swapped, or train --direction forward")
        if dist.launched() and options.device.startswith("cuda"):  # one GPU per process of a machine
            options = replace(options, device=dist.process_gpu())
            self.options = options
        self.forward, self.reverse = load_directions(model_dir, options, both)
        self.lowercase = self.forward.lowercase
        self._check_layer_head(self.forward)

    @property
    def _guided(self) -> bool:
        """Whether the model was trained with ``--guide auto`` (the built-in teacher)."""
        return (self.meta.get("train_options") or {}).get("guide") == "auto"

    @property
    def teacher_options(self):
        """The statistical teacher to combine with: the one that guided the model (``train --guide
        auto``'s ``--guide-*`` options), else the built-in default."""
        from ..statistical.options import DEFAULT, saved_teacher

        return saved_teacher(self.meta["train_options"]) if self._guided else DEFAULT

    @property
    def may_want_teacher(self) -> bool:
        """Whether :meth:`wants_teacher` can be true for some corpus (before any data is read)."""
        if self._given.teacher != AUTO:
            return self._given.teacher == "on"
        return self._guided and not dist.launched()

    def wants_teacher(self, n_pairs: int) -> bool:
        """Whether to combine with a teacher trained on ``n_pairs`` pairs (the corpus being aligned, and
        the training corpus where it joins them): ``--teacher on``; ``auto``: for a model guided by the
        built-in teacher, on at least :data:`TEACHER_MIN_PAIRS` pairs, in one process."""
        if self._given.teacher != AUTO:
            return self._given.teacher == "on"
        return self.may_want_teacher and n_pairs >= TEACHER_MIN_PAIRS

    def fit_teacher(self, pairs, extra=None, kept: tuple[dict, int] | None = None) -> None:
        """Train the statistical teacher on ``extra`` pairs if given (the model's training corpus) and
        the pairs of ``pairs`` (the corpus about to be aligned) that ``extra`` does not hold, each pair
        once (:class:`~attnalign.decoding.teacher.JoinedCorpus`), and decode every later :meth:`align`
        of ``pairs`` with it (:meth:`use_teacher`). ``kept``: the counts a teacher kept from the
        training corpus and its number of pairs (``statistical.teacher_file.load_kept``), which the
        teacher goes on from instead of starting from nothing."""
        self.fit_joined(JoinedCorpus(pairs, extra), kept)

    def fit_joined(self, corpus: JoinedCorpus, kept: tuple[dict, int] | None = None) -> None:
        """:meth:`fit_teacher` on a corpus already joined."""
        from ..statistical import SoftTeacher

        if dist.launched():
            raise OptionError("combining with the teacher runs in one process, not under torchrun",
                              hint="give --teacher off, or align without torchrun")
        o = self.teacher_options
        soft = SoftTeacher(corpus, o.model, prefix=o.prefix, identical=o.identical, samplers=o.samplers,
                           seed=o.seed, kept=kept[0] if kept else None)
        self.use_teacher(TeacherView(soft, corpus.index), kept[1] if kept else 0)

    def use_teacher(self, teacher, kept_pairs: int = 0) -> None:
        """Decode every later :meth:`align` with ``teacher``'s matrices (a fitted
        :class:`~attnalign.statistical.SoftTeacher`, one kept in the model directory, or a
        :class:`~attnalign.decoding.teacher.TeacherView` of either), the "auto" decoding that of a
        teacher of its pairs and ``kept_pairs`` (those of the counts it went on from):
        :func:`~attnalign.decoding.teacher_decoding`."""
        self.teacher = teacher if isinstance(teacher, TeacherView) else TeacherView(teacher)
        self._teacher_pairs = teacher.pairs + kept_pairs
        self.options = resolve_decoding(replace(self._given, device=self.options.device),
                                        self.meta["directions"], self._head, teacher=self._teacher_pairs)
        self.sym = self.options.sym
        if SYMMETRIZATIONS[self.sym].both and self.reverse is None:
            raise OptionError(f"--sym {self.sym} needs the reverse direction, which this run did not load",
                              hint="give --sym explicitly")

    def _check_layer_head(self, lm: LoadedModel) -> None:
        if _reads_align(lm, self.spec):  # raises for --layer align without a head
            if self.options.head != "mean":
                warn("--head applies to Transformer layers; the alignment head is a single attention")
            return
        if not lm.has_layers:
            if self.options.layer not in (None,) or self.options.head != "mean":
                warn("--layer and --head apply to Transformer models only; this RNN has one attention")
            return
        reduce_attention(_zeros(lm.config), self.spec)  # raises with the valid choices

    @property
    def description(self) -> dict:
        """The settings, for titles, signatures and saved-attention metadata."""
        o = self.options
        tf = self.forward.has_layers
        head_read = _reads_align(self.forward, self.spec)
        layer = "align" if head_read else o.layer
        if layer is None:
            layer = default_layer(self.forward.config.get("dec_layers", 1))
        return {"model_type": self.forward.model_type, "directions": self.meta["directions"],
                "sym": self.sym, "decoder": o.decoder, "layer": layer if tf or head_read else None,
                "head": o.head if tf and not head_read else None, "shift": o.shift,
                "threshold": o.threshold if o.decoder == "threshold" else None,
                "teacher": o.teacher_weight if self.teacher is not None else None,
                "teacher_pairs": self._teacher_pairs if self.teacher is not None else None}

    def _too_long(self, lm: LoadedModel, words: Sequence[str], side: str) -> bool:
        return lm.token_count(words, side) > self.options.max_length

    def align_pairs(self, pairs: Pairs, start: int = 0, teacher: Sequence[np.ndarray] | None = None
                    ) -> list[AlignedPair]:
        """Align a list of pairs (one chunk) and return them in order; ``start`` numbers them.
        ``teacher``: each pair's teacher matrix ``[T, S]`` to blend into both directions."""
        o = self.options
        ok = [k for k, (s, t) in enumerate(pairs)
              if not (self._too_long(self.forward, s, "src") or self._too_long(self.forward, t, "tgt"))]
        for k in sorted(set(range(len(pairs))) - set(ok)):
            warn(f"pair {start + k + 1} (line {start + k + 1}) is longer than --max-length "
                 f"{o.max_length} tokens: skipped, its output line is empty")
        sub = [pairs[k] for k in ok]
        fwd = [None] * len(sub)
        for i, m, eos in iter_attention(self.forward, sub, self.spec, o.batch_tokens, o.device):
            fwd[i] = (m, eos)
        rev = [None] * len(sub)
        if self.reverse is not None:
            swapped = [(t, s) for s, t in sub]
            for i, m, eos in iter_attention(self.reverse, swapped, self.spec, o.batch_tokens, o.device):
                rev[i] = (m.T, eos)  # reverse [S, T] -> [T, S]; its EOS mass is per source word
        out = [AlignedPair(start + k, list(s), list(t), [], skipped=True) for k, (s, t) in enumerate(pairs)]
        for n, k in enumerate(ok):
            m, eos = fwd[n]
            r, r_eos = rev[n] if rev[n] is not None else (None, None)
            p = out[k]
            p.forward, p.reverse, p.eos, p.skipped = m, r, eos, False  # the attention as read
            if teacher is not None:
                m = blend(m, teacher[k], o.teacher_weight)
                r = None if r is None else blend(r, teacher[k], o.teacher_weight)
            p.links, p.scores, p.matrix = decode_pair(m, eos, r, r_eos, o.decoder, self.sym, o.threshold)
        return out

    def align(self, pairs: Iterable[tuple[Sequence[str], Sequence[str]]]) -> Iterator[AlignedPair]:
        """Align any iterable of pairs, chunk by chunk, yielding results in corpus order. Under torchrun
        each process aligns its slice of every chunk and rank 0 yields them all (the others nothing)."""
        rank, procs = dist.world()
        it = iter(pairs)
        start = 0
        checked = False
        while chunk := list(islice(it, self.options.chunk_size)):
            if not checked and rank == 0:
                self._check_coverage(chunk)
                checked = True
            if procs == 1:
                yield from self.align_pairs(chunk, start, self._teacher_matrices(start, len(chunk)))
            else:
                size = -(-len(chunk) // procs)
                lo = min(len(chunk), rank * size)
                parts = dist.gather(self.align_pairs(chunk[lo : lo + size], start + lo))
                for part in parts or ():
                    yield from part
            start += len(chunk)

    def _teacher_matrices(self, start: int, n: int) -> list[np.ndarray] | None:
        if self.teacher is None:
            return None
        if start + n > self.teacher.aligned:
            raise AttnAlignError(f"the teacher was fitted for {self.teacher.aligned} pairs but the corpus "
                                 f"being aligned has more", hint="align the corpus the teacher was fitted on")
        return self.teacher.matrices(start, start + n)

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
