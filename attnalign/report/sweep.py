"""The report's sweep: every way of reading alignments from a model (or a saved attention file),
scored against the gold."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.alignments import Alignment
from ..data.attnfile import AttentionFile
from ..data.corpus import Pairs
from ..decoding import DECODERS, SYMMETRIZATIONS, decode_pair
from ..errors import AttnAlignError
from ..eval.metrics import Counts, alignment_counts


@dataclass
class Config:
    """One way of reading alignments: which attention, which decoder, which symmetrization."""

    layer: int | str | None
    shift: int
    decoder: str
    sym: str
    label: str | None = None  # a name of its own (the default output's)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        parts = [] if self.layer is None else [f"layer {self.layer}"]
        decoder = "" if SYMMETRIZATIONS[self.sym].hard else self.decoder  # hard ones: the forward links'
        parts += [f"shift {self.shift}", decoder, self.sym]
        return ", ".join(p for p in parts if p and p != "none") or "argmax"


@dataclass
class Result:
    config: Config
    per_sentence: list[Counts]
    links: list[list[tuple[int, int]]]
    teacher: str | None = None  # the default output's teacher and its decoding, in words

    @property
    def total(self) -> Counts:
        return sum(self.per_sentence, Counts())


def _entropy(m: np.ndarray, eos: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each target word's attention over source words + EOS."""
    p = np.concatenate([m, eos[:, None]], axis=1).clip(1e-12, 1)
    return -(p * np.log(p)).sum(axis=1)


def evaluate(config: Config, fwd, rev, gold: Sequence[Alignment]) -> Result:
    per, links = [], []
    for k, g in enumerate(gold):
        m, eos = fwd[k]
        r, r_eos = rev[k] if rev is not None else (None, None)
        sym = config.sym if rev is not None else "none"
        lk, _, _ = decode_pair(m, eos, r, r_eos, config.decoder, sym)
        links.append(lk)
        per.append(alignment_counts(Alignment.from_links(lk), g))
    return Result(config, per, links)


def swept_decoders() -> list[str]:
    """The decoders the report scores (those of the registry marked ``sweep``)."""
    return [name for name, d in DECODERS.items() if d.sweep]


def swept_symmetrizations() -> list[str]:
    """The symmetrizations the report scores (every one that reads both directions)."""
    return [name for name, s in SYMMETRIZATIONS.items() if s.both]


def _sweep(layer, shift: int, fwd, rev, gold, full: bool) -> list[Result]:
    """The configurations of one (layer, shift): argmax, or with ``full`` every swept decoder and
    (with a reverse direction) every swept symmetrization."""
    results = [evaluate(Config(layer, shift, dec, "none"), fwd, None, gold)
               for dec in (swept_decoders() if full else ["argmax"])]
    if rev is not None and full:
        results += [evaluate(Config(layer, shift, "argmax", sym), fwd, rev, gold)
                    for sym in swept_symmetrizations()]
    return results


def model_results(model_dir, pairs: Pairs, gold, options, batch_tokens: int | None):
    """Every configuration's result; the matrices of each (layer, shift) for the analyses. ``options``:
    the :class:`~attnalign.nmt.aligner.AlignOptions` naming the device and, for a pretrained model, its
    reverse model and languages."""
    from ..nmt.aligner import load_directions, model_meta
    from ..nmt.extract import corpus_attention
    from ..nmt.readouts import AttentionSpec, default_layer

    device = options.device
    meta = model_meta(model_dir, options)
    fwd_model, rev_model = load_directions(model_dir, options, "reverse" in meta["directions"])
    layered = fwd_model.has_layers
    layers: list[int | str | None] = [None]
    if layered:
        n = fwd_model.config["dec_layers"]
        layers = [*range(n), "mean"]
        if fwd_model.config.get("align_head"):
            layers = ["align", *layers]
    mats = {}
    results = []
    default = default_layer(fwd_model.config["dec_layers"]) if layered else None
    for layer in layers:
        for shift in (0, 1) if layered else (0,):  # an RNN's attention query already reads the decoder input
            spec = AttentionSpec(layer, "mean", shift, options.readout, options.smoothgrad)
            fwd = corpus_attention(fwd_model, pairs, spec, batch_tokens, device)
            rev = None
            if rev_model is not None:
                swapped = [(t, s) for s, t in pairs]
                rev = [(m.T, e) for m, e in corpus_attention(rev_model, swapped, spec, batch_tokens, device)]
            mats[(layer, shift)] = (fwd, rev)
            is_default = layer in (None, "align") or (
                isinstance(layer, int)
                and layer % fwd_model.config["dec_layers"] == default % fwd_model.config["dec_layers"]
            )
            results += _sweep(layer, shift, fwd, rev, gold, is_default)
    return results, mats, layered


def saved_results(path, gold):
    fwd, rev, pairs = [], [], []
    with AttentionFile(path) as saved:
        idx = set(saved.indices())
        for k in range(len(gold)):
            if k not in idx:
                raise AttnAlignError(
                    f"the attention file has no pair {k}; the report needs the gold's pairs", path=path
                )
            p = saved.pair(k)  # each direction as the run read it (the forward matrix where kept apart)
            fwd.append((p.matrix if p.forward is None else p.forward, p.eos))
            rev.append((p.reverse, p.reverse_eos) if p.reverse is not None else None)
            pairs.append((p.src, p.tgt))
    has_rev = all(r is not None for r in rev)
    rev = rev if has_rev else None
    return _sweep(None, 0, fwd, rev, gold, full=True), {(None, 0): (fwd, rev)}, pairs


def attention_stats(fwd) -> tuple[np.ndarray, np.ndarray]:
    """Per target word: attention entropy and EOS mass (every non-empty pair)."""
    ent = np.concatenate([_entropy(m, e) for m, e in fwd if m.size])
    eos = np.concatenate([e for m, e in fwd if m.size])
    return ent, eos




DEFAULT_OUTPUT = "align corpus default output"


def default_output(model_dir, pairs: Pairs, gold: Sequence[Alignment], options) -> Result:
    """What ``align corpus`` writes for ``pairs`` with its defaults and ``options``' device and models:
    the student combined with its teacher where it has one (:func:`attnalign.combine.combined_aligner`),
    scored against ``gold``."""
    from ..combine import combined_aligner
    from ..nmt.aligner import Aligner

    aligner, plan = combined_aligner(Aligner(model_dir, options), model_dir, pairs, options.teacher,
                                     options.teacher_corpus)
    teacher = plan.describe()
    if teacher is not None:
        teacher += f"; the blend read with {aligner.decoding.describe()}"
    links = [[]] * len(pairs)
    for p in aligner.align(pairs):
        links[p.index] = list(p.links)
    per = [alignment_counts(Alignment.from_links(lk), g) for lk, g in zip(links, gold, strict=True)]
    d = aligner.decoding
    label = f"{DEFAULT_OUTPUT}: {'student + teacher' if teacher is not None else 'student'}"
    return Result(Config(None, 0, d.decoder, d.sym, label=label), per, links, teacher)
