"""``attnalign train``: train an attention NMT model into a model directory."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ..errors import OptionError
from ..nmt.configs import CELLS, RNNConfig, TransformerConfig
from ..nmt.limits import MAX_LENGTH
from ..training.options import EPOCHS, EPOCHS_FULL_PAIRS, PRESETS, TrainOptions, preset_flags
from .common import (
    GOLD_READING,
    TEACHER,
    TEACHER_MODEL,
    TEACHER_SYM,
    CorpusOpt,
    DeviceOpt,
    EncodingOpt,
    GoldGiven,
    Group,
    GuideIdenticalOpt,
    GuideModelOpt,
    GuidePrefixOpt,
    GuideSamplersOpt,
    GuideSymOpt,
    LowercaseOpt,
    ModelDirOpt,
    QuietOpt,
    SrcLangOpt,
    SrcOpt,
    TgtLangOpt,
    TgtOpt,
    ThreadsOpt,
    err,
    handle_errors,
    interruption,
    out,
    takes,
)


class ModelType(str, Enum):
    rnn = "rnn"
    transformer = "transformer"


class AttentionType(str, Enum):
    additive = "additive"
    dot = "dot"
    general = "general"
    scaled_dot = "scaled-dot"


class Direction(str, Enum):
    forward = "forward"
    reverse = "reverse"
    both = "both"


DEFAULTS, RNN, TRANSFORMER = TrainOptions(), RNNConfig(), TransformerConfig()  # the library's defaults
_ALIGN, _FAST = PRESETS["align"], PRESETS["align-fast"]


def _opt(kind, flag: str, help: str, **kw):
    return Annotated[kind, typer.Option(flag, help=help, **kw)]


ModelTypeOpt = _opt(ModelType, "--model-type", "Network.")
AttentionOpt = _opt(AttentionType | None, "--attention", f"RNN attention [default: {RNN.attention}].")
CellOpt = _opt(str | None, "--cell", f"RNN cell: {' or '.join(CELLS)} [default: {RNN.cell}].")
HiddenOpt = _opt(int | None, "--hidden", f"RNN hidden size [default: {RNN.hidden}].")
EmbDimOpt = _opt(int | None, "--emb-dim", f"RNN embedding size [default: {RNN.emb_dim}].")
TrainMaxLengthOpt = _opt(int | None, "--max-length", "Training pairs longer than this many model tokens "
                         f"on either side are left out, with a warning [default: {MAX_LENGTH}].")
InitFromOpt = Annotated[Path | None, typer.Option(
    "--init-from", help="Fine-tune this pretrained Hugging Face translation model (a save_pretrained "
    "directory or hf:NAME) instead of training a new network: one cross-attention head learns the guide "
    "(needs --guide).")]
ReverseInitFromOpt = Annotated[Path | None, typer.Option(
    "--reverse-init-from", help="With --init-from and --direction both: the target-to-source model.")]
DModelOpt = _opt(int | None, "--d-model", f"Transformer width [default: {TRANSFORMER.d_model}].")
HeadsOpt = _opt(int | None, "--heads", f"Transformer heads [default: {TRANSFORMER.heads}].")
LayersOpt = _opt(int | None, "--layers", "Encoder and decoder layers [default: rnn "
                 f"{RNN.enc_layers}, transformer {TRANSFORMER.enc_layers}].")
DropoutOpt = _opt(float | None, "--dropout", f"Dropout [default: rnn {RNN.dropout:g}, transformer "
                  f"{TRANSFORMER.dropout:g}; "
                 f"{_ALIGN['model_config']['dropout']:g} with --preset align or align-fast].")
EpochsOpt = _opt(str, "--epochs", "Passes over the training data: a number (1.5 ends halfway through the "
                 f"second) or auto: {EPOCHS} for up to {EPOCHS_FULL_PAIRS:,} pairs, {EPOCHS} x "
                 f"sqrt({EPOCHS_FULL_PAIRS:,} / pairs) for more ({_ALIGN['auto_epochs']} and "
                 f"{_ALIGN['auto_epochs']} x sqrt(...) with --preset align, {_FAST['auto_epochs']} and "
                 f"{_FAST['auto_epochs']} x sqrt(...) with --preset align-fast).")
MaxStepsOpt = _opt(int | None, "--max-steps", "Stop after this many updates.")
BatchTokensOpt = _opt(int | None, "--batch-tokens", "Padded tokens per batch [default: "
                      f"{DEFAULTS.batch_tokens}; {_ALIGN['batch_tokens']} with --preset align or "
                      "align-fast].")
LrOpt = _opt(float | None, "--lr", "Peak learning rate [default: rnn 1e-3, transformer 5e-4; "
             f"{_ALIGN['lr']:g} with --preset align or align-fast].")
WarmupOpt = _opt(int, "--warmup", "Warm-up steps (at most 10% of training).")
ClipOpt = _opt(float, "--clip", "Gradient norm clipping.")
SmoothingOpt = Annotated[float, typer.Option("--label-smoothing")]
SeedOpt = _opt(int, "--seed", "Same seed, data and device: same model.")
MinFreqOpt = _opt(int, "--min-freq", "Words seen fewer times are <unk>.")
MaxVocabOpt = _opt(int | None, "--max-vocab", "Largest vocabulary per side.")
DirectionOpt = _opt(Direction | None, "--direction", "Train src->tgt, tgt->src or both [default: forward].")
DevSrcOpt = _opt(Path | None, "--dev-src", "Dev source text.")
DevTgtOpt = _opt(Path | None, "--dev-tgt", "Dev target text.")
DevGoldOpt = _opt(Path | None, "--dev-gold", "Dev gold alignment: select by dev AER.")
GuideOpt = _opt(str | None, "--guide", "Guided alignment: 'auto' (the built-in statistical aligner, see "
                "--guide-model and --guide-sym) or a Pharaoh file of links for the training corpus.")
GuideWeightOpt = _opt(float, "--guide-weight", "Weight of the guide loss.")
SelfTrainOpt = _opt(int, "--self-train", "Rounds of self-training after the teacher-guided one: the "
                    "student trained again (from scratch, or see --self-train-epochs), guided by the links "
                    "align corpus writes with the last round's model and its teacher (needs --guide auto; "
                    "each round costs a training).")
SelfTrainEpochsOpt = _opt(float | None, "--self-train-epochs", "With --self-train: each round goes on "
                          "from the last round's model for this many passes (1.5 ends halfway through the "
                          "second) instead of training a new student for --epochs.")
AlignHeadOpt = _opt(bool | None, "--align-head/--no-align-head", "Add an alignment head (sees the whole "
                    "target sentence; trained by --guide only) and align with it.")
PresetOpt = _opt(str | None, "--preset", "Named options; others given beside it override it. align: "
                 f"{preset_flags('align')} (the benchmarked aligner); align-fast: the same with "
                 f"{_FAST['auto_epochs']} passes, for aligning the training corpus with align corpus's "
                 "default teacher (its student alone is weaker).")
SubwordOpt = _opt(int | None, "--subword", "Sentencepiece vocabulary size per side; 0: whole words "
                  f"[default: whole words; {_ALIGN['subword']} with --preset align or align-fast].")
SubwordTypeOpt = _opt(str, "--subword-type", "unigram or bpe.")
ParallelOpt = _opt(str | None, "--parallel-directions", "auto, on or off: with --direction both, train "
                   "the two directions at once, each in a process of its own with half of --threads (auto: "
                   "on a CPU with 2 threads or more for 1,000 pairs or more, not under torchrun) "
                   "[default: auto].")
SaveEveryOpt = _opt(int | None, "--save-every", "Resumable checkpoint every N steps.")
ResumeOpt = _opt(bool, "--resume", "Continue an interrupted run in --model.")
OverwriteOpt = _opt(bool, "--overwrite", "Replace the model in --model.")

RNN_ONLY, TRANSFORMER_ONLY = {"attention", "cell", "hidden", "emb_dim"}, {"d_model", "heads"}


def network_options(model_type: ModelType, layers: int | None, **given) -> dict:
    """The network options given on the command line, checked against ``--model-type``."""
    given = {k: v for k, v in given.items() if v is not None}
    if layers is not None:
        given.update(enc_layers=layers, dec_layers=layers)
    wrong = set(given) & (TRANSFORMER_ONLY if model_type == ModelType.rnn else RNN_ONLY)
    if wrong:
        raise OptionError(f"--{', --'.join(sorted(w.replace('_', '-') for w in wrong))} do not apply to "
                             f"--model-type {model_type.value}")
    return given


def resume_hint(model: Path) -> str:
    """What an interrupted ``train`` prints: where it stands and how to go on."""
    from ..training.model_dir import run_config

    try:
        run_config(model)
    except Exception:  # interrupted before the run began: nothing to resume
        return "nothing was written; the model directory is as it was"
    return f"continue this run with: attnalign train --model {model} --resume"


def _network(model_type: ModelType, attention, cell, hidden, emb_dim, d_model, heads, layers, dropout,
             align_head) -> dict:
    return {"model_type": model_type.value, "model_config": network_options(
        model_type, layers, attention=attention.value if attention else None, cell=cell, hidden=hidden,
        emb_dim=emb_dim, d_model=d_model, heads=heads, dropout=dropout, align_head=align_head)}


def _schedule(epochs: str, **given) -> dict:
    from ..training.options import parse_epochs

    return {"epochs": parse_epochs(epochs), **given}


def _guidance(guide_model, guide_sym, **given) -> dict:
    return {"guide_model": guide_model.value, "guide_sym": guide_sym.value, **given}


def _dev(dev_src, dev_tgt, dev_gold, gold_format, gold_one_based, reverse_gold) -> dict:
    return {"dev_src": dev_src, "dev_tgt": dev_tgt,
            "gold": GoldGiven(dev_gold, gold_format, gold_one_based, reverse_gold)}


def _data(direction, **given) -> dict:
    return {"direction": direction.value if direction else None, **given}


NETWORK = Group("network", (
    ("model_type", ModelTypeOpt, ModelType.rnn), ("attention", AttentionOpt, None), ("cell", CellOpt, None),
    ("hidden", HiddenOpt, None), ("emb_dim", EmbDimOpt, None), ("d_model", DModelOpt, None),
    ("heads", HeadsOpt, None), ("layers", LayersOpt, None), ("dropout", DropoutOpt, None),
    ("align_head", AlignHeadOpt, None)), _network)
SCHEDULE = Group("schedule", (
    ("epochs", EpochsOpt, DEFAULTS.epochs), ("max_steps", MaxStepsOpt, None),
    ("batch_tokens", BatchTokensOpt, None),
    ("lr", LrOpt, None), ("warmup", WarmupOpt, DEFAULTS.warmup), ("clip", ClipOpt, DEFAULTS.clip),
    ("label_smoothing", SmoothingOpt, DEFAULTS.label_smoothing), ("seed", SeedOpt, DEFAULTS.seed)), _schedule)
DATA = Group("data", (
    ("min_freq", MinFreqOpt, DEFAULTS.min_freq), ("max_vocab", MaxVocabOpt, None),
    ("lowercase", LowercaseOpt, DEFAULTS.lowercase),
    ("direction", DirectionOpt, None), ("subword", SubwordOpt, None),
    ("subword_type", SubwordTypeOpt, DEFAULTS.subword_type), ("max_length", TrainMaxLengthOpt, None)), _data)
DEV = Group("dev", (("dev_src", DevSrcOpt, None), ("dev_tgt", DevTgtOpt, None),
                    ("dev_gold", DevGoldOpt, None), *GOLD_READING), _dev)
GUIDANCE = Group("guidance", (
    ("guide", GuideOpt, None), ("guide_weight", GuideWeightOpt, DEFAULTS.guide_weight),
    ("guide_model", GuideModelOpt, TEACHER_MODEL),
    ("guide_sym", GuideSymOpt, TEACHER_SYM), ("guide_prefix", GuidePrefixOpt, TEACHER.prefix),
    ("guide_identical", GuideIdenticalOpt, TEACHER.identical),
    ("guide_samplers", GuideSamplersOpt, TEACHER.samplers),
    ("self_train", SelfTrainOpt, DEFAULTS.self_train), ("self_train_epochs", SelfTrainEpochsOpt, None)),
    _guidance)
PRETRAINED_INIT = Group("pretrained", (
    ("init_from", InitFromOpt, None), ("reverse_init_from", ReverseInitFromOpt, None),
    ("src_lang", SrcLangOpt, None), ("tgt_lang", TgtLangOpt, None)))
RUN = Group("run", (("device", DeviceOpt, "auto"), ("threads", ThreadsOpt, None),
                    ("parallel_directions", ParallelOpt, None), ("save_every", SaveEveryOpt, None)))


@handle_errors
@takes(NETWORK, SCHEDULE, DATA, DEV, GUIDANCE, PRETRAINED_INIT, RUN)
def train(
    model: ModelDirOpt, src: SrcOpt = None, tgt: TgtOpt = None, corpus: CorpusOpt = None,
    network: dict = None, schedule: dict = None, data: dict = None, dev: dict = None, guidance: dict = None,
    preset: PresetOpt = None, run: dict = None, resume: ResumeOpt = False, overwrite: OverwriteOpt = False,
    quiet: QuietOpt = False, encoding: EncodingOpt = "utf-8", pretrained: dict = None,
) -> None:
    """Train an attention NMT model (one or both directions) into a model directory, or fine-tune a
    pretrained Hugging Face model's cross-attention head on a guide (--init-from).

    Example: attnalign train --src sample_data/train.en --tgt sample_data/train.fr --model runs/sample
    """
    from ..dist import own_rank
    from ..training import preset_options
    from ..workflows.train_files import train_files
    from .progress import RichTrainReporter
    from .render import train_table

    if data["direction"] is None and pretrained["reverse_init_from"]:
        data["direction"] = "both"
    hf = {k: None if v is None else str(v) for k, v in pretrained.items()}
    options = preset_options(preset, **network, **schedule, **data, **guidance, **run, **hf)
    gold = dev.pop("gold")
    rank = own_rank()  # read before the process group exists: training chooses its backend
    try:
        summary = train_files(model, options, src=src, tgt=tgt, corpus=corpus, **dev, dev_gold=gold.path,
                              gold_options=gold.options(encoding),
                              overwrite=overwrite, resume=resume,
                              reporter=None if quiet or rank else RichTrainReporter(err()))
    except (KeyboardInterrupt, SystemError) as e:
        if interruption(e) is None:
            raise
        raise KeyboardInterrupt(resume_hint(model)) from None
    if rank == 0:  # under torchrun rank 0 reports
        out().print(train_table(model, summary))
