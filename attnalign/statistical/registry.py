"""The statistical aligners by name: each trains both directions on a corpus.

An entry takes ``(corpus, iterations, identical, **kw)`` (an :class:`.ids.IdCorpus`, words already
cut to the prefix) and returns a trained model whose ``posteriors(lo, hi)`` gives the forward
posteriors ``[T, S + 1]`` and the reverse ones ``[S, T + 1]`` of pairs ``lo..hi`` (NULL last).
Adding an aligner is one module and one entry here; its name then reaches ``--aligner``,
``--guide-model`` and the library. The model modules are imported when used.
"""

from __future__ import annotations

from collections.abc import Callable

from .fertility import FertilityModel
from .hmm import HMMAgreement, fit_hmm
from .ibm2 import IBM2
from .ids import IdCorpus


class _Independent:
    """One model per direction, trained apart; ``posteriors(lo, hi)`` gives both directions'."""

    def __init__(self, fwd, rev):
        self.fwd, self.rev = fwd, rev

    def posteriors(self, lo: int, hi: int):
        return self.fwd.posteriors(lo, hi), self.rev.posteriors(lo, hi)


def _ibm2(corpus: IdCorpus, iterations: int, identical: float, **kw):
    return _Independent(*(IBM2(c, iterations, identical=identical, stage=f"ibm2 {name}", **kw)
                          for c, name in ((corpus, "forward"), (corpus.swapped(), "reverse"))))


def _hmm(corpus: IdCorpus, iterations: int, identical: float, **kw):
    return _Independent(*(fit_hmm(c, iterations, identical=identical, stage=f"hmm {name}", **kw)
                          for c, name in ((corpus, "forward"), (corpus.swapped(), "reverse"))))


def _hmm_agree(corpus: IdCorpus, iterations: int, identical: float, **kw):
    return HMMAgreement(corpus, iterations, identical=identical, **kw)


def _fertility(corpus: IdCorpus, iterations: int, identical: float, **kw):
    return FertilityModel(corpus, **kw)  # sampled, not EM: no iterations, no identical prior


DIRECTIONAL: dict[str, Callable] = {"ibm2": _ibm2, "hmm": _hmm, "hmm-agree": _hmm_agree,
                                    "fertility": _fertility}
# the models that keep what they learned and go on from it over new pairs (:mod:`.learned`)
KEEPS = ("hmm-agree", "fertility")
COMBINED = "hmm-agree+fertility"  # the union of hmm-agree's and fertility's links (align.combined_links)
MODELS = (*DIRECTIONAL, COMBINED)
