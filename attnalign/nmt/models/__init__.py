"""Attention NMT models whose attention weights are always returned, never hidden in fused kernels.

Every model maps ``(src [B, S], src_mask [B, S], tgt_in [B, T])`` to a :class:`.output.ModelOutput`:
logits ``[B, T, V]``, its attention (``[B, T, S]`` for the RNN, ``[B, layers, heads, T, S]``
cross-attention for the Transformer, padded source positions exactly 0, every row summing to 1) and
the alignment head's weights (None without a head).
"""

from __future__ import annotations

from dataclasses import asdict

from ..configs import NETWORKS
from .output import ModelOutput
from .rnn import RNNConfig, RNNModel
from .transformer import TransformerConfig, TransformerModel

_BUILT_BY = {RNNConfig: RNNModel, TransformerConfig: TransformerModel}
MODEL_TYPES = {name: (config, _BUILT_BY[config]) for name, config in NETWORKS.items()}


def build_model(model_type: str, config: dict, src_vocab_size: int, tgt_vocab_size: int):
    """Instantiate a model from its type name and plain config dict."""
    cfg_cls, model_cls = MODEL_TYPES[model_type]
    return model_cls(cfg_cls(**config), src_vocab_size, tgt_vocab_size)


__all__ = ["MODEL_TYPES", "ModelOutput", "RNNConfig", "RNNModel", "TransformerConfig", "TransformerModel",
           "asdict", "build_model"]
