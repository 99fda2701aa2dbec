"""Decoding one pair: its forward matrix (and the reverse model's, turned to ``[T, S]``) -> links.
Pure numpy, no torch.

:data:`SYMMETRIZATIONS` is the registry behind ``--sym``; each entry reads the pair's matrices and
returns its links, their scores and the matrix they were decoded from (what a plot must draw under
them):

* ``none``: the forward matrix ``[T, S]`` with the decoder;
* every link method of :mod:`.symmetrize` (``intersection`` ... ``grow-diag-final-and``): forward
  links by the decoder on the forward matrix, reverse links by the column argmax of the turned reverse
  matrix (each source word to its best target word), then the link method; a link's score is the mean
  of its two weights, and the forward matrix is the one drawn;
* ``soft``: the mean of the forward and the turned reverse matrix, decoded with the decoder.

A new symmetrization is one function and one :func:`register_symmetrization` line; ``--sym``, the
report's sweep and ``plot sentence`` then know it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..data.alignments import Link
from .decoders import argmax_src_links, decode_matrix
from .symmetrize import LINK_METHODS, symmetrize

Decoded = tuple[list[Link], dict[Link, float], np.ndarray]
# (fwd [T, S], fwd_eos [T] | None, rev [T, S], rev_eos [S] | None, decoder, threshold) -> Decoded
SymFn = Callable[..., Decoded]


@dataclass(frozen=True)
class Symmetrization:
    """A registered way to read a pair. ``both``: it needs the reverse direction; ``hard``: it
    combines two link sets (the forward matrix is the one its links are drawn on)."""

    name: str
    fn: SymFn
    help: str
    both: bool = True
    hard: bool = False


SYMMETRIZATIONS: dict[str, Symmetrization] = {}


def register_symmetrization(name: str, help: str, both: bool = True, hard: bool = False
                            ) -> Callable[[SymFn], SymFn]:
    def add(fn: SymFn) -> SymFn:
        SYMMETRIZATIONS[name] = Symmetrization(name, fn, help, both, hard)
        return fn

    return add


@register_symmetrization("none", "the forward direction alone", both=False)
def _forward(fwd, fwd_eos, rev, rev_eos, decoder, threshold) -> Decoded:
    links = decode_matrix(fwd, decoder, fwd_eos, threshold)
    return links, {(i, j): float(fwd[j, i]) for i, j in links}, fwd


def _hard(method: str) -> SymFn:
    def read(fwd, fwd_eos, rev, rev_eos, decoder, threshold) -> Decoded:
        forward = decode_matrix(fwd, decoder, fwd_eos, threshold)
        reverse = argmax_src_links(rev, rev_eos)
        links = sorted(symmetrize(forward, reverse, method))
        return links, {(i, j): float((fwd[j, i] + rev[j, i]) / 2) for i, j in links}, fwd

    return read


for _method in LINK_METHODS:
    register_symmetrization(_method, f"{_method} of the two directions' links", hard=True)(_hard(_method))


@register_symmetrization("soft", "the mean of the two directions' matrices, then the decoder")
def _soft(fwd, fwd_eos, rev, rev_eos, decoder, threshold) -> Decoded:
    m = (fwd + rev) / 2
    links = decode_matrix(m, decoder, fwd_eos, threshold)
    return links, {(i, j): float(m[j, i]) for i, j in links}, m


def decode_pair(fwd: np.ndarray, fwd_eos: np.ndarray | None, rev: np.ndarray | None,
                rev_eos: np.ndarray | None, decoder: str = "argmax", sym: str = "none",
                threshold: float = 0.5) -> Decoded:
    """Links, their scores and the matrix they were read from, for one pair (see the module doc).

    ``fwd`` and ``rev`` are ``[T, S]``; ``fwd_eos`` is ``[T]``, ``rev_eos`` ``[S]`` (per source word).
    Without ``rev`` every symmetrization reads the forward direction alone.
    """
    if sym not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {sym!r}; choose one of {', '.join(SYMMETRIZATIONS)}")
    entry = SYMMETRIZATIONS["none"] if rev is None else SYMMETRIZATIONS[sym]
    return entry.fn(fwd, fwd_eos, rev, rev_eos, decoder, threshold)


# What "auto" decoding means for a bidirectional model with an alignment head (``train --preset
# align``; see nmt.aligner.resolve_decoding): the decoding selected on the English-French trial set by
# bench/quality.py (README, "Alignment quality"). The threshold only serves --decoder threshold. Kept
# here, torch-free, so that the CLI's help can quote it.
HEAD_DECODING = {"sym": "soft", "decoder": "argmax", "threshold": 0.5}

# What combining with the teacher means (``align corpus --teacher``; see nmt.aligner): each
# direction's matrix becomes (1 - weight) * student + weight * teacher (the statistical teacher's soft
# matrix of the pair), the two directions are averaged and every cell above the threshold is a link.
# Selected on the English-French trial set by bench/combine.py (README, "Alignment quality").
TEACHER_DECODING = {"weight": 0.9, "sym": "soft", "decoder": "threshold", "threshold": 0.45}
# From this many pairs in the teacher's corpus the student is nearly as good as its teacher and the
# blend gives it more weight: TEACHER_DECODING with this weight and threshold. Selected on the
# English-French trial set by bench/blend_scale.py --choose over 40k-310k pairs (docs/benchmarks.md).
TEACHER_DECODING_LARGE = {"pairs": 40_000, "weight": 0.6, "threshold": 0.4}


def teacher_decoding(pairs: int) -> dict:
    """:data:`TEACHER_DECODING` for a teacher trained on ``pairs`` pairs (its corpus, and the pairs of
    the counts it went on from): from ``TEACHER_DECODING_LARGE["pairs"]`` on, its weight and
    threshold."""
    if pairs < TEACHER_DECODING_LARGE["pairs"]:
        return TEACHER_DECODING
    return {**TEACHER_DECODING, "weight": TEACHER_DECODING_LARGE["weight"],
            "threshold": TEACHER_DECODING_LARGE["threshold"]}


# --teacher auto combines only where the teacher's corpus is at least this large: EM on a few hundred
# pairs learns little.
TEACHER_MIN_PAIRS = 1000
TEACHER_CHOICES = ("auto", "on", "off")  # --teacher
# --teacher-corpus: what the teacher is trained on. aligned: the pairs being aligned; training: those
# followed by the model's own training corpus (the files train recorded), so that a few new sentences
# get a teacher that has seen as much data as the student; kept: the pairs being aligned, going on from
# the counts the teacher of train --guide auto kept in the model directory (what it learned of the
# training corpus, at the cost of the new pairs alone); auto: training where those files are unchanged
# and hold at most TEACHER_CORPUS_MAX_PAIRS pairs (the teacher's time grows with them), else kept where
# the model directory keeps the counts, else aligned.
TEACHER_CORPUS_CHOICES = ("auto", "aligned", "training", "kept")
TEACHER_CORPUS_MAX_PAIRS = 100_000


def blend(student: np.ndarray, teacher: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight) * student + weight * teacher``, both ``[T, S]``."""
    if student.shape != teacher.shape:
        raise ValueError(f"the student's matrix is {student.shape} but the teacher's {teacher.shape}")
    return (1 - weight) * student + weight * teacher
