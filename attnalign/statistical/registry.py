"""The statistical aligners by name: each trains both directions on a corpus and returns posteriors.

An entry takes ``(pairs, iterations, identical, **kw)`` (the pairs already cut to the word prefix)
and returns the forward posteriors ``[T, S + 1]`` and the reverse ones ``[S, T + 1]`` of every pair
(NULL last). Adding an aligner is one module and one entry here; its name then reaches ``--aligner``,
``--guide-model`` and the library. The model modules are imported when used (the HMMs need torch).
"""

from __future__ import annotations

from collections.abc import Callable

from ..data.corpus import Pairs


def _swap(pairs: Pairs) -> Pairs:
    return [(t, s) for s, t in pairs]


def _independent(train: Callable, pairs: Pairs, iterations: int, identical: float, **kw):
    """One model per direction, trained apart."""
    return (train(pairs, iterations, identical=identical, **kw),
            train(_swap(pairs), iterations, identical=identical, **kw))


def _ibm2(pairs: Pairs, iterations: int, identical: float, **kw):
    from .ibm2 import train_posteriors

    return _independent(train_posteriors, pairs, iterations, identical, **kw)


def _hmm(pairs: Pairs, iterations: int, identical: float, **kw):
    from .hmm import train_hmm_posteriors

    return _independent(train_hmm_posteriors, pairs, iterations, identical, **kw)


def _hmm_agree(pairs: Pairs, iterations: int, identical: float, **kw):
    from .hmm import train_hmm_agreement

    return train_hmm_agreement(pairs, iterations, identical=identical, **kw)


def _fertility(pairs: Pairs, iterations: int, identical: float, **kw):
    from .fertility import train_fertility_posteriors

    return train_fertility_posteriors(pairs, **kw)  # sampled, not EM: no iterations, no identical prior


DIRECTIONAL: dict[str, Callable] = {"ibm2": _ibm2, "hmm": _hmm, "hmm-agree": _hmm_agree,
                                    "fertility": _fertility}
COMBINED = "hmm-agree+fertility"  # the union of hmm-agree's and fertility's links (align.combined_links)
MODELS = (*DIRECTIONAL, COMBINED)
