"""The attention scores an RNN decoder can use, one registration each: the registry the configuration
checks and the CLI's ``--attention`` choices and help read (torch-free: a score imports torch only
when a network is built), and :class:`~attnalign.nmt.models.attention.Attention` calls.

A score is a class with three methods, each given the ``Attention`` module it serves: ``build(attn,
dim)`` adds its weights to that module (so a checkpoint names them ``attn.w_q`` and so on, whatever
the registry), ``keys(attn, keys)`` projects the keys ``[B, S, D]`` once a batch, and ``score(attn,
query, proj)`` gives the ``[B, T, S]`` scores before the softmax. To add one: a class and
``@register_score(name, help)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

COSINE_SCALE = 10.0  # the cosine score's starting scale: a softmax over [-10, 10] can be peaked


class Score:
    """The dot product (Luong et al. 2015): score = q^T k. The base of every score: no weights, the keys
    as they are."""

    name = "dot"
    help = ""

    def build(self, attn, dim: int) -> None:
        pass

    def keys(self, attn, keys):
        return keys

    def score(self, attn, query, proj):
        return query @ proj.transpose(1, 2)  # [B, T, S]


SCORES: dict[str, Score] = {}


def register_score(name: str, help: str) -> Callable[[type[Score]], type[Score]]:
    """Register a :class:`Score` class under ``name``, with its one-line ``help`` (``--help`` reads it)."""
    def add(cls: type[Score]) -> type[Score]:
        score = cls()
        score.name, score.help = name, help
        SCORES[name] = score
        return cls
    return add


@register_score("additive", "Bahdanau et al. 2015: v^T tanh(W_q q + W_k k)")
class Additive(Score):
    def build(self, attn, dim: int) -> None:
        from torch import nn

        attn.w_q = nn.Linear(dim, dim, bias=False)
        attn.w_k = nn.Linear(dim, dim, bias=False)
        attn.v = nn.Linear(dim, 1, bias=False)

    def keys(self, attn, keys):
        return attn.w_k(keys)

    def score(self, attn, query, proj):
        # [B, T, 1, D] + [B, 1, S, D] -> [B, T, S]
        return attn.v((attn.w_q(query).unsqueeze(2) + proj.unsqueeze(1)).tanh()).squeeze(-1)


register_score("dot", "Luong et al. 2015: q^T k")(Score)


@register_score("general", "Luong et al. 2015, bilinear: q^T W k")
class General(Score):
    def build(self, attn, dim: int) -> None:
        from torch import nn

        attn.w = nn.Linear(dim, dim, bias=False)

    def keys(self, attn, keys):
        return attn.w(keys)


@register_score("scaled-dot", "Vaswani et al. 2017: q^T k / sqrt(D)")
class ScaledDot(Score):
    def score(self, attn, query, proj):
        return super().score(attn, query, proj) / math.sqrt(attn.dim)


@register_score("cosine", f"the cosine of q and k times a learned scale that starts at {COSINE_SCALE:g}")
class Cosine(Score):
    """Cosines lie in [-1, 1], and a softmax over them unscaled would be nearly flat: a learned scale g,
    kept as log g."""

    def build(self, attn, dim: int) -> None:
        import torch

        attn.log_scale = torch.nn.Parameter(torch.tensor(math.log(COSINE_SCALE)))

    def keys(self, attn, keys):
        return keys / keys.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # as nn.functional.normalize

    def score(self, attn, query, proj):
        q = query / query.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return attn.log_scale.exp() * (q @ proj.transpose(1, 2))
