"""The statistical aligner's entry points: train both directions, combine them into links.

Defaults come from :class:`.options.TeacherOptions` (``attnalign align statistical`` and ``train
--guide auto`` use the same). Library misuse (an unknown name, a negative count) raises ValueError;
the CLI and training check options first with :meth:`TeacherOptions.check` for a clear message.
"""

from __future__ import annotations

import numpy as np

from ..data.alignments import Link
from ..data.corpus import Pairs
from ..decoding.symmetrize import symmetrize
from .links import posterior_links, viterbi_links, word_prefixes
from .options import DEFAULT, FERTILITY_PREFIX, FERTILITY_THRESHOLD, SYMS
from .registry import COMBINED, DIRECTIONAL


def directional_posteriors(pairs: Pairs, model: str, iterations: int = 5, prefix: int = DEFAULT.prefix,
                           identical: float = DEFAULT.identical, **kw
                           ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Train both directions of ``model`` (one of :data:`.registry.DIRECTIONAL`) on ``pairs``; return
    the forward posteriors ``[T, S + 1]`` and the reverse ones ``[S, T + 1]`` of every pair (NULL
    last). ``fertility`` returns marginal link frequencies instead (``iterations`` and ``identical``
    do not apply). ``prefix``: the models see words cut to this many characters (0: whole words);
    ``identical``: extra counts for identical types (0: none)."""
    if model not in DIRECTIONAL:
        raise ValueError(f"unknown statistical model {model!r}; choose {', '.join(DIRECTIONAL)} "
                         f"({COMBINED} combines two of them: see align_statistical)")
    if identical < 0:
        raise ValueError(f"identical must be 0 (no prior) or a positive count, not {identical}")
    return DIRECTIONAL[model](word_prefixes(pairs, prefix), iterations, identical, **kw)


def directional_links(pairs: Pairs, model: str, iterations: int = 5, prefix: int = DEFAULT.prefix,
                      identical: float = DEFAULT.identical, **kw
                      ) -> tuple[list[list[Link]], list[list[Link]]]:
    """Train both directions on ``pairs``; return each direction's Viterbi links (both source first)."""
    fwd, rev = directional_posteriors(pairs, model, iterations, prefix, identical, **kw)
    return ([viterbi_links(p) for p in fwd],
            [[(i, j) for j, i in viterbi_links(p)] for p in rev])  # reverse: (tgt, src) -> (src, tgt)


def align_statistical(pairs: Pairs, sym: str = DEFAULT.sym, iterations: int = 5, model: str = DEFAULT.model,
                      prefix: int = DEFAULT.prefix, identical: float = DEFAULT.identical,
                      **kw) -> list[list[Link]]:
    """Train both directions on ``pairs`` and return links per pair (source first), combined with
    ``sym``: one of :data:`.options.SYMS`, or ``none`` for the forward direction alone. The defaults
    are :class:`.options.TeacherOptions`'. ``model`` :data:`COMBINED` takes ``sym`` "posterior" only
    (its own rule; ``prefix`` and ``identical`` apply to its agreement HMMs)."""
    if sym not in (*SYMS, "none"):
        raise ValueError(f"unknown symmetrization {sym!r}; choose one of {', '.join(SYMS)}")
    if model == COMBINED:
        if sym != "posterior":
            raise ValueError(f"{COMBINED} combines posterior links; it takes sym 'posterior', not {sym!r}")
        return combined_links(pairs, iterations, prefix, identical, **kw)
    if sym == "posterior":
        fwd, rev = directional_posteriors(pairs, model, iterations, prefix, identical, **kw)
        return [posterior_links(f, r) for f, r in zip(fwd, rev, strict=True)]
    fwd, rev = directional_links(pairs, model, iterations, prefix, identical, **kw)
    if sym == "none":
        return fwd
    return [sorted(symmetrize(f, r, sym)) for f, r in zip(fwd, rev, strict=True)]


def combined_links(pairs: Pairs, iterations: int = 5, prefix: int = DEFAULT.prefix,
                   identical: float = DEFAULT.identical, **kw) -> list[list[Link]]:
    """The links of :data:`COMBINED`: the agreement HMMs' posterior links (words cut to ``prefix``,
    ``identical`` prior) united with the fertility HMMs' links sampled in at least
    :data:`.options.FERTILITY_THRESHOLD` of the sweeps in both directions (whole words)."""
    af, ar = directional_posteriors(pairs, "hmm-agree", iterations, prefix, identical, **kw)
    ff, fr = directional_posteriors(pairs, "fertility", prefix=FERTILITY_PREFIX)
    return [sorted(set(posterior_links(a, b)) | set(posterior_links(c, d, FERTILITY_THRESHOLD)))
            for a, b, c, d in zip(af, ar, ff, fr, strict=True)]
