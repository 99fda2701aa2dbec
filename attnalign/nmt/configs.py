"""The networks' configurations: every option of the RNN and the Transformer with its default, stated
once and torch-free, each that ``train`` takes on its command line with its help
(:func:`~attnalign.flags.opt`; an option both types have is declared on the RNN's); :mod:`.models`
builds the networks from them."""

from __future__ import annotations

from dataclasses import dataclass

from ..data.npz import machine_memory
from ..errors import OptionError, require
from ..flags import opt
from .scores import SCORES

ATTENTION_SPANS = ("global", "local-m", "local-p")  # Luong et al. 2015's global and local attention
DECODER_STYLES = ("luong", "bahdanau")  # when the RNN decoder attends: after its step, or before
CELLS = ("gru", "lstm")
MAX_LAYERS = 64  # encoder or decoder layers: more is a typing error, not a network
BYTES_PER_PARAM = 16  # float32 weights, their gradients and Adam's two moments


def check_fits(params: int, memory: int | None = None) -> None:
    """Refuse a network whose weights, gradients and optimizer state (``params`` parameters, at least)
    cannot fit this machine's memory (``memory`` bytes; None: the physical memory), before anything is
    allocated."""
    memory = machine_memory() if memory is None else memory
    if memory is None:  # not a POSIX system: no estimate
        return
    need = params * BYTES_PER_PARAM
    if need > memory:
        raise OptionError(f"the network needs at least {need / 2**30:,.1f} GiB for its weights, gradients "
                          f"and optimizer state ({params:,} parameters without the vocabularies); this "
                          f"machine has {memory / 2**30:,.1f} GiB",
                          hint="lower --hidden, --emb-dim, --d-model or --layers")


def check_translation(cfg) -> None:
    """A network that does not learn to translate learns only through its alignment head."""
    if not cfg.translation and not cfg.align_head:
        raise OptionError("--no-translation leaves the alignment head as the network's only objective, "
                          "and this network has none", hint="add --align-head (and a --guide), or leave "
                                                            "--no-translation out")


@dataclass
class RNNConfig:
    """Fully determines the network (with the two vocabulary sizes)."""

    emb_dim: int = opt(256, "RNN embedding size.")
    hidden: int = opt(256, "RNN hidden size.")
    enc_layers: int = 1  # both given as train's --layers
    dec_layers: int = 1
    cell: str = opt("gru", f"RNN cell: {' or '.join(CELLS)}.")
    attention: str = opt("general", lambda: "RNN attention score: " + "; ".join(
        f"{s.name} ({s.help})" for s in SCORES.values()) + ".", choices=lambda: list(SCORES))
    dropout: float = opt(0.2, "Dropout.")
    # Luong's decoder only: Bahdanau's reads the context as its input
    input_feeding: bool = opt(True, (
        "RNN (Luong's decoder): feed each step's attentional vector into the next step, one step at a "
        "time; without, the decoder reads the whole target in one recurrent call and attends to every "
        "step at once (far fewer operations an update)."), flag="--input-feeding/--no-input-feeding")
    tie_embeddings: bool = False
    # an extra attention for alignment, trained by guidance (see align_head)
    align_head: bool = opt(False, (
        "Add an alignment head (sees the whole target sentence; trained by --guide only) and align with "
        "it."), flag="--align-head/--no-align-head")
    attention_span: str = opt("global", (  # models.attention
        "RNN attention over every source word (global), or a window of them (Luong's local attention): "
        "local-m centres it on the target step scaled to the source length, local-p on a position the "
        "model predicts, with a Gaussian weighting (sigma = window / 2); the alignment read is its weights "
        "renormalised over the source."), choices=ATTENTION_SPANS)
    window: int = opt(10, "A local attention's half-width D: it sees the source words within D of its "
                          "centre.")  # [p_t - D, p_t + D]
    decoder_style: str = opt("luong", (  # luong: attend with the new state h_t; bahdanau: with s_{t-1}
        "RNN decoder: luong attends with its new state (after reading the target word before); bahdanau "
        "with its previous state, and reads the context as its input (no input feeding)."),
        choices=DECODER_STYLES)
    translation: bool = opt(True, (  # off: the alignment head alone learns
        "Learn to translate (the output layer over the target vocabulary and its loss); without, only the "
        "alignment head learns, from --guide: an update without the vocabulary's products."),
        flag="--translation/--no-translation")
    head_only: bool = opt(False, (  # the decoder, without translation, only feeds the head's query
        "RNN without --translation: the alignment head over the encoder alone, its query reading the "
        "target's own context, without the decoder and its attention (one recurrent layer fewer an "
        "update)."), flag="--head-only/--no-head-only")

    def check(self, fits: bool = True) -> RNNConfig:
        """Raise an OptionError naming the ``train`` option that is out of range; with ``fits``, also
        where the network cannot fit this machine's memory (a configuration file's values are checked
        without: the machine that runs it may be another)."""
        for flag, value in (("--emb-dim", self.emb_dim), ("--hidden", self.hidden)):
            require(flag, value, low=1)
        for value in (self.enc_layers, self.dec_layers):
            require("--layers", value, low=1, high=MAX_LAYERS)
        require("--cell", self.cell, choices=CELLS)
        require("--attention", self.attention, choices=tuple(SCORES))
        require("--attention-span", self.attention_span, choices=ATTENTION_SPANS)
        require("--window", self.window, low=1, high=10**6)
        require("--decoder-style", self.decoder_style, choices=DECODER_STYLES)
        if self.decoder_style == "bahdanau":  # its input holds the context: nothing else is fed back
            self.input_feeding = False
        require("--dropout", self.dropout, low=0, high=1, high_open=True)
        check_translation(self)
        if self.head_only and self.translation:
            raise OptionError("--head-only leaves out the decoder that translates",
                              hint="give it with --no-translation --align-head, or leave --head-only out")
        if fits:
            check_fits(self.min_params())
        return self

    def min_params(self) -> int:
        """The recurrent layers' and attention's weights (a lower bound: the vocabularies add theirs)."""
        g, h, e = (4 if self.cell == "lstm" else 3), self.hidden, self.emb_dim
        enc = sum(2 * g * h * ((e if k == 0 else 2 * h) + h) for k in range(self.enc_layers))
        dec = sum(g * h * ((e + h if k == 0 else h) + h) for k in range(self.dec_layers))
        dec = 0 if self.head_only else dec
        return enc + dec + 2 * h * h


@dataclass
class TransformerConfig:
    """Fully determines the network (with the two vocabulary sizes)."""

    d_model: int = opt(256, "Transformer width.")
    heads: int = opt(4, "Transformer heads.")
    enc_layers: int = 3
    dec_layers: int = 3
    ff_dim: int = 1024
    dropout: float = 0.1  # the command line's options of the RNN's name are declared there
    max_len: int = 512
    align_head: bool = False  # an extra attention for alignment, trained by guidance (see align_head)
    translation: bool = True  # the output layer and its loss; off: the alignment head alone learns

    def check(self, fits: bool = True) -> TransformerConfig:
        """Raise an OptionError naming the ``train`` option that is out of range (``fits``: as the
        RNN's)."""
        for flag, value in (("--d-model", self.d_model), ("--heads", self.heads),
                            ("ff_dim", self.ff_dim), ("max_len", self.max_len)):
            require(flag, value, low=1)
        for value in (self.enc_layers, self.dec_layers):
            require("--layers", value, low=1, high=MAX_LAYERS)
        require("--dropout", self.dropout, low=0, high=1, high_open=True)
        if self.d_model % self.heads:
            raise OptionError(f"--d-model {self.d_model} is not divisible by --heads {self.heads}",
                              hint="each head reads d_model / heads dimensions; e.g. --d-model 256 --heads 4")
        check_translation(self)
        if fits:
            check_fits(self.min_params())
        return self

    def min_params(self) -> int:
        """The layers' weights (a lower bound: the vocabularies add theirs)."""
        d, ff = self.d_model, self.ff_dim
        return self.enc_layers * (4 * d * d + 2 * d * ff) + self.dec_layers * (8 * d * d + 2 * d * ff)


# The network types (``train --model-type``): a name and its configuration, torch-free; nmt.models
# registers the network each builds.
NETWORKS = {"rnn": RNNConfig, "transformer": TransformerConfig}
