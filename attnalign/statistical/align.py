"""The statistical aligner's entry points: train both directions, combine them into links.

Defaults come from :class:`.options.TeacherOptions` (``attnalign align statistical`` and ``train
--guide auto`` use the same). Library misuse (an unknown name, a negative count) raises ValueError;
the CLI and training check options first with :meth:`TeacherOptions.check` for a clear message.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

import numpy as np

from ..data.alignments import Link
from ..data.corpus import Pairs
from ..decoding.symmetrize import symmetrize
from .decode_kernels import union_cells
from .ids import CHUNK_PAIRS, IdCorpus, chunks
from .links import posterior_links, viterbi_links
from .options import DEFAULT, FERTILITY_PREFIX, FERTILITY_THRESHOLD, POSTERIOR_THRESHOLD, SYMS
from .processes import gather_chunks, my_chunks, world
from .progress import report
from .registry import COMBINED, DIRECTIONAL, KEEPS, MODELS
from .settings import EM
from .threads import ahead


def fit(pairs: Pairs | IdCorpus, model: str, iterations: int = EM.iterations, prefix: int = DEFAULT.prefix,
        identical: float = DEFAULT.identical, **kw):
    """Train both directions of ``model`` (one of :data:`.registry.DIRECTIONAL`) on ``pairs`` (word
    lists, cut to ``prefix`` characters; or an already encoded :class:`.ids.IdCorpus`); returns the
    trained model, whose ``posteriors(lo, hi)`` gives pairs ``lo..hi``'s."""
    if model not in DIRECTIONAL:
        raise ValueError(f"unknown statistical model {model!r}; choose {', '.join(DIRECTIONAL)} "
                         f"({COMBINED} combines two of them: see align_statistical)")
    if identical < 0:
        raise ValueError(f"identical must be 0 (no prior) or a positive count, not {identical}")
    corpus = pairs if isinstance(pairs, IdCorpus) else IdCorpus.encode(pairs, prefix)
    return DIRECTIONAL[model](corpus, iterations, identical, **kw)


def directional_posteriors(pairs: Pairs, model: str, iterations: int = EM.iterations,
                           prefix: int = DEFAULT.prefix, identical: float = DEFAULT.identical, **kw
                           ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Train both directions of ``model`` on ``pairs``; return the forward posteriors ``[T, S + 1]``
    and the reverse ones ``[S, T + 1]`` of every pair (NULL last), all in memory (:func:`iter_links`
    streams instead). ``fertility`` returns marginal link frequencies (``iterations`` and
    ``identical`` do not apply). ``prefix``: the models see words cut to this many characters (0:
    whole words); ``identical``: extra counts for identical types (0: none)."""
    corpus = IdCorpus.encode(pairs, prefix)
    return fit(corpus, model, iterations, prefix, identical, **kw).posteriors(0, len(corpus))


def _turn(links: list[Link]) -> list[Link]:
    return sorted((i, j) for j, i in links)  # reverse: (tgt, src) -> (src, tgt)


def _decode(fwd: np.ndarray, rev: np.ndarray, sym: str) -> list[Link]:
    """One pair's links from its two directions' posteriors."""
    if sym == "posterior":
        return posterior_links(fwd, rev)
    if sym == "none":
        return viterbi_links(fwd)
    return sorted(symmetrize(viterbi_links(fwd), _turn(viterbi_links(rev)), sym))


def iter_links(pairs: Pairs | IdCorpus, sym: str = DEFAULT.sym, iterations: int = EM.iterations,
               model: str = DEFAULT.model, prefix: int = DEFAULT.prefix, identical: float = DEFAULT.identical,
               chunk: int = CHUNK_PAIRS, **kw) -> Iterator[list[Link]]:
    """Train on ``pairs`` (any iterable of word-list pairs, read once; or an :class:`.ids.IdCorpus` of
    whole words) and yield each pair's links (source first) in corpus order, decoded ``chunk`` pairs at
    a time: memory holds the corpus's token ids and the models' tables, never every pair's matrices.
    Arguments as :func:`align_statistical`. Under torchrun every process trains on its share; rank 0
    yields all the links, the others none. Progress goes to :func:`.progress.reporting`'s listener."""
    _check(sym, model)
    words = pairs if isinstance(pairs, IdCorpus) else IdCorpus.encode(pairs)
    models = _fit_models(words, model, iterations, prefix, identical, **kw)
    n = len(words)

    def links(lo: int, hi: int) -> list[list[Link]]:
        out = _links_of(models, sym, lo, hi)
        report("links", "decoding", hi, n)
        return out

    if world()[1] == 1:
        for part in ahead(functools.partial(links, lo, hi) for lo, hi in chunks(n, chunk)):
            yield from part
        return
    gathered = gather_chunks([(lo, links(lo, hi)) for lo, hi in my_chunks(n, chunk)])
    for part in gathered or ():
        yield from part


def _links_of(models: tuple, sym: str, lo: int, hi: int) -> list[list[Link]]:
    """Pairs ``lo..hi``'s links from :func:`_fit_models`' trained models."""
    first, second = models
    if second is not None:
        return union_links(first, second, lo, hi)
    a, b = first.posteriors(lo, hi)
    return [_decode(f, r, sym) for f, r in zip(a, b, strict=True)]


def union_links(agree, fertility, lo: int, hi: int) -> list[list[Link]]:
    """:data:`COMBINED`'s links of pairs ``lo..hi``: the agreement HMMs' (``agree``, a trained
    :class:`.hmm.HMMAgreement`) posterior links united with the fertility model's (a trained
    :class:`.fertility.FertilityModel`) links sampled in at least :data:`FERTILITY_THRESHOLD` of the
    sweeps in both directions; all pairs at once (:func:`.decode_kernels.union_cells`), none as a matrix."""
    (f, f_at), (r, r_at) = agree.flat_posteriors(lo, hi)
    fwd, rev = fertility.marginals
    (fc, fc_at), (rc, rc_at) = fwd.flat(lo, hi), rev.flat(lo, hi)
    corpus = fwd.corpus
    S, T = np.diff(corpus.src_off[lo:hi + 1]), np.diff(corpus.tgt_off[lo:hi + 1])
    li, lj, starts = union_cells(S, T, f, f_at, r, r_at, fc, fc_at, rc, rc_at, fwd.collect,
                                 POSTERIOR_THRESHOLD, FERTILITY_THRESHOLD)
    links = list(zip(li.tolist(), lj.tolist(), strict=True))
    return [links[a:b] for a, b in itertools.pairwise(starts.tolist())]


def _fit_models(words: IdCorpus, model: str, iterations: int, prefix: int, identical: float,
                kept: dict | None = None, keep: bool = False, samplers: int = DEFAULT.samplers,
                seed: int = DEFAULT.seed, **kw) -> tuple:
    """``model``'s trained models on the whole-word corpus ``words``: (the model, None), or for
    :data:`COMBINED` (the agreement HMMs on ``prefix``-cut words, the fertility HMMs on whole words).
    ``kept``: per model name, both directions' counts to go on from (:mod:`.learned`); ``keep``: the models
    keep theirs (:attr:`SoftTeacher.kept`); ``samplers`` and ``seed``: the fertility HMMs' chains and
    their first seed (the other models do not sample)."""
    combined = model == COMBINED
    name = "hmm-agree" if combined else model

    def going_on(m: str) -> dict:  # the keyword arguments of model m's keeping, going on and chains
        return {**({"kept": (kept or {}).get(m), "keep": keep} if m in KEEPS else {}),
                **({"samplers": samplers, "seed": seed} if m == "fertility" else {})}

    first = fit(words.cut(prefix), name, iterations, prefix, identical, **going_on(name), **kw)
    if not combined:
        return first, None
    return first, fit(words.cut(FERTILITY_PREFIX), "fertility", prefix=FERTILITY_PREFIX,
                      **going_on("fertility"))


class SoftTeacher:
    """The teacher's soft alignment of a corpus, for combining with a student's attention.

    Trained once on ``pairs`` (read once, as :func:`iter_links` does); :meth:`matrices` then gives
    pairs ``lo..hi``'s ``[T, S]`` matrices: the mean of both directions' posteriors (the reverse one
    turned around; NULL dropped), and for :data:`COMBINED` the mean over its two models' four. A cell
    is thus the teacher's averaged belief in the link; rows sum to at most 1; :meth:`links` gives the
    same pairs' links. One process only: the fertility model's samples stay with the process that drew
    them.

    ``keep``: keep what the models learned (:attr:`kept`), for a later teacher to go on from; ``kept``:
    go on from such a teacher's (trained on other pairs) over ``pairs`` instead of starting from nothing
    (:mod:`.learned`; the models of :data:`.registry.KEEPS` only: the others start from nothing).
    ``samplers``: the fertility HMMs' chains (:class:`.options.TeacherOptions`)."""

    def __init__(self, pairs: Pairs | IdCorpus, model: str = DEFAULT.model, iterations: int = EM.iterations,
                 prefix: int = DEFAULT.prefix, identical: float = DEFAULT.identical,
                 keep: bool = False, kept: dict | None = None, **kw):
        if model not in MODELS:
            raise ValueError(f"unknown statistical model {model!r}; choose {', '.join(MODELS)}")
        words = pairs if isinstance(pairs, IdCorpus) else IdCorpus.encode(pairs)
        self._fitted = _fit_models(words, model, iterations, prefix, identical, kept, keep, **kw)
        self.models = [m for m in self._fitted if m]
        self.pairs = len(words)
        names = ("hmm-agree", "fertility") if model == COMBINED else (model,)
        # with keep: per model name, both directions' .kept.KeptCounts
        self.kept = {n: m.kept for n, m in zip(names, self.models, strict=True)
                     if keep and n in KEEPS and m.kept is not None}

    def links(self, lo: int, hi: int, sym: str = DEFAULT.sym) -> list[list[Link]]:
        """Pairs ``lo..hi``'s links, as :func:`iter_links` decodes them from the same models."""
        return _links_of(self._fitted, sym, lo, hi)

    def matrices(self, lo: int, hi: int) -> list[np.ndarray]:
        """The teacher's ``[T, S]`` matrices of pairs ``lo..hi``."""
        total: list[np.ndarray] | None = None
        for m in self.models:
            mats = both_directions(*m.posteriors(lo, hi))
            total = mats if total is None else [a + b for a, b in zip(total, mats, strict=True)]
        return [t / len(self.models) for t in total or []]


def both_directions(fwd: list[np.ndarray], rev: list[np.ndarray]) -> list[np.ndarray]:
    """Each pair's ``[T, S]``: its forward posteriors ``[T, S + 1]`` and its reverse ones ``[S, T + 1]``
    turned around, averaged, NULL dropped."""
    return [(f[:, :-1] + r[:, :-1].T) / 2 for f, r in zip(fwd, rev, strict=True)]


def _check(sym: str, model: str) -> None:
    if sym not in (*SYMS, "none"):
        raise ValueError(f"unknown symmetrization {sym!r}; choose one of {', '.join(SYMS)}")
    if model == COMBINED and sym != "posterior":
        raise ValueError(f"{COMBINED} combines posterior links; it takes sym 'posterior', not {sym!r}")
    if model != COMBINED and model not in DIRECTIONAL:
        raise ValueError(f"unknown statistical model {model!r}; "
                         f"choose {', '.join(DIRECTIONAL)} or {COMBINED}")


def align_statistical(pairs: Pairs, sym: str = DEFAULT.sym, iterations: int = EM.iterations,
                      model: str = DEFAULT.model, prefix: int = DEFAULT.prefix,
                      identical: float = DEFAULT.identical, **kw) -> list[list[Link]]:
    """Train both directions on ``pairs`` and return links per pair (source first), combined with
    ``sym``: one of :data:`.options.SYMS`, or ``none`` for the forward direction alone. The defaults
    are :class:`.options.TeacherOptions`'. ``model`` :data:`COMBINED` takes ``sym`` "posterior" only
    (its own rule: the agreement HMMs' posterior links, words cut to ``prefix``, ``identical`` prior,
    united with the fertility HMMs' links sampled in at least :data:`.options.FERTILITY_THRESHOLD` of
    the sweeps in both directions, whole words). :func:`iter_links` streams the same links."""
    return list(iter_links(pairs, sym, iterations, model, prefix, identical, **kw))


def combined_links(pairs: Pairs, iterations: int = EM.iterations, prefix: int = DEFAULT.prefix,
                   identical: float = DEFAULT.identical, **kw) -> list[list[Link]]:
    """The links of :data:`COMBINED` (see :func:`align_statistical`)."""
    return align_statistical(pairs, "posterior", iterations, COMBINED, prefix, identical, **kw)
