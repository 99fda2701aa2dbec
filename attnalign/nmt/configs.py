"""The networks' configurations: every option of the RNN and the Transformer with its default, stated
once and torch-free (the CLI's help reads them; :mod:`.models` builds the networks from them)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError, require

ATTENTION_TYPES = ("additive", "dot", "general", "scaled-dot")
CELLS = ("gru", "lstm")


@dataclass
class RNNConfig:
    """Fully determines the network (with the two vocabulary sizes)."""

    emb_dim: int = 256
    hidden: int = 256
    enc_layers: int = 1
    dec_layers: int = 1
    cell: str = "gru"  # gru | lstm
    attention: str = "general"  # additive | dot | general | scaled-dot
    dropout: float = 0.2
    input_feeding: bool = True
    tie_embeddings: bool = False
    align_head: bool = False  # an extra attention for alignment, trained by guidance (see align_head)

    def check(self) -> RNNConfig:
        """Raise an OptionError naming the ``train`` option that is out of range."""
        for flag, value in (("--emb-dim", self.emb_dim), ("--hidden", self.hidden),
                            ("--layers", self.enc_layers), ("--layers", self.dec_layers)):
            require(flag, value, low=1)
        require("--cell", self.cell, choices=CELLS)
        require("--attention", self.attention, choices=ATTENTION_TYPES)
        require("--dropout", self.dropout, low=0, high=1, high_open=True)
        return self


@dataclass
class TransformerConfig:
    """Fully determines the network (with the two vocabulary sizes)."""

    d_model: int = 256
    heads: int = 4
    enc_layers: int = 3
    dec_layers: int = 3
    ff_dim: int = 1024
    dropout: float = 0.1
    max_len: int = 512
    align_head: bool = False  # an extra attention for alignment, trained by guidance (see align_head)

    def check(self) -> TransformerConfig:
        """Raise an OptionError naming the ``train`` option that is out of range."""
        for flag, value in (("--d-model", self.d_model), ("--heads", self.heads),
                            ("--layers", self.enc_layers), ("--layers", self.dec_layers),
                            ("ff_dim", self.ff_dim), ("max_len", self.max_len)):
            require(flag, value, low=1)
        require("--dropout", self.dropout, low=0, high=1, high_open=True)
        if self.d_model % self.heads:
            raise OptionError(f"--d-model {self.d_model} is not divisible by --heads {self.heads}",
                              hint="each head reads d_model / heads dimensions; e.g. --d-model 256 --heads 4")
        return self
