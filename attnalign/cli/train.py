"""``attnalign train``: train an attention NMT model into a model directory."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

import typer

from ..data.fileio import check_one_stdin
from ..dist import own_rank
from ..errors import OptionError
from ..nmt.configs import (
    ATTENTION_SPANS,
    CELLS,
    DECODER_STYLES,
    NETWORKS,
    RNNConfig,
    TransformerConfig,
)
from ..nmt.options import MAX_LENGTH
from ..nmt.scores import SCORES
from ..training.config_file import (
    chosen_preset,
    config_listing,
    layered_options,
    preset_flags,
    preset_values,
    read_config,
)
from ..training.options import (
    BASE_LR,
    CPU_BATCH_TOKENS,
    DIRECTION_CHOICES,
    EPOCHS,
    EPOCHS_FULL_PAIRS,
    EPOCHS_FULL_PAIRS_GPU,
    FLAT_NAMES,
    GPU_BATCH_TOKENS,
    GPU_UPDATES_PER_PASS,
    PARALLEL_MIN_PAIRS,
    SECTIONS,
    WARMUP_SHARE,
    TrainOptions,
)
from .common import (
    INPUT,
    MODEL,
    RUNTIME,
    TEACHER,
    TEACHER_MODEL,
    TEACHER_PANEL,
    TEACHER_SYM,
    CorpusOpt,
    DeviceOpt,
    EncodingOpt,
    GoldBaseOpt,
    GoldFormatOpt,
    GuideIdenticalOpt,
    GuideModelOpt,
    GuidePrefixOpt,
    GuideSamplersOpt,
    GuideSeedOpt,
    GuideSymOpt,
    LowercaseOpt,
    OptionalModelOpt,
    QuietOpt,
    Registered,
    ReverseGoldOpt,
    SrcLangOpt,
    SrcOpt,
    TgtLangOpt,
    TgtOpt,
    ThreadsOpt,
    choices,
    err,
    gold_options,
    handle_errors,
    interruption,
    option,
    out,
)
from .progress import RichTrainReporter
from .render import train_table

ModelType = choices("ModelType", NETWORKS)
AttentionSpan = choices("AttentionSpan", ATTENTION_SPANS)
DecoderStyle = choices("DecoderStyle", DECODER_STYLES)


Direction = choices("Direction", DIRECTION_CHOICES)


DEFAULTS, RNN, TRANSFORMER = TrainOptions(), RNNConfig(), TransformerConfig()  # the library's defaults
DATA, SCHEDULE, TEACHING, RUN = DEFAULTS.data, DEFAULTS.schedule, DEFAULTS.teacher, DEFAULTS.runtime
_ALIGN, _FAST = preset_values("align"), preset_values("align-fast")
NETWORK, TRAINING = "Network", "Training"


def _switch(name: str):
    """A switch's value in words: ``translation`` / ``no-translation``."""
    return lambda on: name if on else f"no-{name}"


def preset_default(key: str, words=lambda v: f"{v:g}") -> str:
    """What ``--preset align`` (and align-fast) sets an option to, on a CPU and on a CUDA GPU, for
    ``--help``: ``96 with --preset align or align-fast (256 on a CUDA GPU)``."""
    gpu = {**_ALIGN.get("gpu_network", {}), **_ALIGN.get("gpu_schedule", {})}
    on_gpu = f" ({words(gpu[key])} on a CUDA GPU)" if key in gpu else ""
    return f"{words(_ALIGN[key])} with --preset align or align-fast{on_gpu}"


PresetOpt = option(str | None, "--preset", panel=MODEL, help=(
    f"Named options (a file of attnalign/training/presets, in --config's form); others given beside it "
    f"override it. align: {preset_flags('align')} (the benchmarked "
    f"aligner); align-fast: the same with {_FAST['auto_epochs']} passes, for aligning the training corpus "
    "with align corpus's default teacher (its student alone is weaker)."))
ConfigOpt = option(Path | None, "--config", panel=MODEL, help=(
    "A TOML file of options: a table per section (" + ", ".join(SECTIONS) + "), each key an option's "
    "name without the dashes; a model directory's train.toml is one. Options typed beside it win; it "
    "wins over its preset (a top-level preset = NAME); a --preset typed beside it replaces that preset "
    "(the file's own options still apply over it)."))
PrintConfigOpt = option(bool, "--print-config", panel=MODEL, help=(
    "Print the complete configuration these options describe (every section, as --config reads it; the "
    "preset's and your values marked) and exit, reading no corpus: a file of your own to start from."))
ResumeOpt = option(bool, "--resume", panel=MODEL, help="Continue an interrupted run in --model.")
OverwriteOpt = option(bool, "--overwrite", panel=MODEL, help="Replace the model in --model.")
InitFromOpt = option(Path | None, "--init-from", panel=MODEL, help=(
    "Fine-tune this pretrained Hugging Face translation model (a save_pretrained directory or hf:NAME) "
    "instead "
    "of training a new network: one cross-attention head learns the guide (needs --guide)."))
ReverseInitFromOpt = option(Path | None, "--reverse-init-from", panel=MODEL,
                            help="With --init-from and --direction both: the target-to-source model.")
DevSrcOpt = option(Path | None, "--dev-src", panel=INPUT, help="Dev source text.")
DevTgtOpt = option(Path | None, "--dev-tgt", panel=INPUT, help="Dev target text.")
DevGoldOpt = option(Path | None, "--dev-gold", panel=INPUT, help="Dev gold alignment: select by dev AER.")

ModelTypeOpt = option(ModelType, "--model-type", panel=NETWORK, help="Network.")
AttentionOpt = option(Registered(lambda: list(SCORES), lambda: (
    "RNN attention score: " + "; ".join(f"{s.name} ({s.help})" for s in SCORES.values()) + ".")),
                      "--attention", panel=NETWORK, show_default=RNN.attention)
AttentionSpanOpt = option(AttentionSpan | None, "--attention-span", panel=NETWORK, help=(
    "RNN attention over every source word (global), or a window of them (Luong's local attention): "
    "local-m centres it on the target step scaled to the source length, local-p on a position the "
    "model predicts, with a Gaussian weighting (sigma = window / 2); the alignment read is its weights "
    "renormalised over the source."), show_default=RNN.attention_span)
WindowOpt = option(int | None, "--window", panel=NETWORK,
                   help="A local attention's half-width D: it sees the source words within D of its centre.",
                   show_default=str(RNN.window))
DecoderStyleOpt = option(DecoderStyle | None, "--decoder-style", panel=NETWORK, help=(
    "RNN decoder: luong attends with its new state (after reading the target word before); bahdanau "
    "with its previous state, and reads the context as its input (no input feeding)."),
                         show_default=RNN.decoder_style)
CellOpt = option(str | None, "--cell", panel=NETWORK, help=f"RNN cell: {' or '.join(CELLS)}.",
                 show_default=RNN.cell)
HiddenOpt = option(int | None, "--hidden", panel=NETWORK,
                   help="RNN hidden size.", show_default=f"{RNN.hidden}; {preset_default('hidden')}")
EmbDimOpt = option(int | None, "--emb-dim", panel=NETWORK, help="RNN embedding size.",
                   show_default=f"{RNN.emb_dim}; {preset_default('emb_dim')}")
DModelOpt = option(int | None, "--d-model", panel=NETWORK, help="Transformer width.",
                   show_default=str(TRANSFORMER.d_model))
HeadsOpt = option(int | None, "--heads", panel=NETWORK, help="Transformer heads.",
                  show_default=str(TRANSFORMER.heads))
LayersOpt = option(int | None, "--layers", panel=NETWORK, help="Encoder and decoder layers.",
                   show_default=f"rnn {RNN.enc_layers}, transformer {TRANSFORMER.enc_layers}")
DropoutOpt = option(float | None, "--dropout", panel=NETWORK, help="Dropout.", show_default=(
    f"rnn {RNN.dropout:g}, transformer {TRANSFORMER.dropout:g}; {_ALIGN['dropout']:g} with "
    "--preset align or align-fast"))
InputFeedingOpt = option(bool | None, "--input-feeding/--no-input-feeding", panel=NETWORK, help=(
    "RNN (Luong's decoder): feed each step's attentional vector into the next step, one step at a "
    "time; without, the decoder reads the whole target in one recurrent call and attends to every "
    "step at once (far fewer operations an update)."),
                         show_default=("input-feeding" if RNN.input_feeding else "no-input-feeding")
                         + f"; {preset_default('input_feeding', _switch('input-feeding'))}")
AlignHeadOpt = option(bool | None, "--align-head/--no-align-head", panel=NETWORK, help=(
    "Add an alignment head (sees the whole target sentence; trained by --guide only) and align with it."))
TranslationOpt = option(bool | None, "--translation/--no-translation", panel=NETWORK, help=(
    "Learn to translate (the output layer over the target vocabulary and its loss); without, only the "
    "alignment head learns, from --guide: an update without the vocabulary's products."),
                        show_default=f"translation; {preset_default('translation', _switch('translation'))}")

EpochsOpt = option(str, "--epochs", panel=TRAINING, help=(
    f"Passes over the training data: a number (1.5 ends halfway through the second) or auto: {EPOCHS} for up "
    f"to {EPOCHS_FULL_PAIRS:,} pairs, {EPOCHS} x sqrt({EPOCHS_FULL_PAIRS:,} / pairs) for more "
    f"({_ALIGN['auto_epochs']} and {_ALIGN['auto_epochs']} x sqrt(...) with --preset align, "
    f"{_FAST['auto_epochs']} and {_FAST['auto_epochs']} x sqrt(...) with --preset align-fast)."))
MaxStepsOpt = option(int | None, "--max-steps", panel=TRAINING, help="Stop after this many updates.")
BatchTokensOpt = option(str | None, "--batch-tokens", panel=TRAINING, help=(
    f"Padded tokens per batch, or auto: {CPU_BATCH_TOKENS:,} on a CPU; on a CUDA GPU a "
    f"{GPU_UPDATES_PER_PASS}th of the corpus's words, {CPU_BATCH_TOKENS:,} to {GPU_BATCH_TOKENS:,}, at "
    f"--lr x sqrt(tokens / {CPU_BATCH_TOKENS:,}), and --epochs auto's full passes up to "
    f"{EPOCHS_FULL_PAIRS_GPU:,} pairs."), show_default=f"{SCHEDULE.batch_tokens}; "
    f"{_ALIGN['batch_tokens']} with --preset align or align-fast")
PrecisionOpt = option(str, "--precision", panel=RUNTIME, help=(
    "Arithmetic of training: fp32, or bf16 (the network's products in bfloat16 under autocast)."))
LrOpt = option(float | None, "--lr", panel=TRAINING, help="Peak learning rate.", show_default=(
    ", ".join(f"{k} {v:g}" for k, v in BASE_LR.items()) + f"; {preset_default('lr')}"))
WarmupOpt = option(int, "--warmup", panel=TRAINING,
                   help=f"Warm-up steps (at most {WARMUP_SHARE:.0%} of training).")
ClipOpt = option(float, "--clip", panel=TRAINING, help="Gradient norm clipping.")
SmoothingOpt = option(float, "--label-smoothing", panel=TRAINING, help="Label smoothing of the NMT loss.")
SeedOpt = option(int, "--seed", panel=TRAINING, help="Same seed, data and device: same model.")
DirectionOpt = option(Direction | None, "--direction", panel=TRAINING,
                      help="Train src->tgt, tgt->src or both.", show_default=DEFAULTS.network.direction)
MinFreqOpt = option(int, "--min-freq", panel=TRAINING, help="Words seen fewer times are <unk>.")
MaxVocabOpt = option(int | None, "--max-vocab", panel=TRAINING, help="Largest vocabulary per side.")
SubwordOpt = option(int | None, "--subword", panel=TRAINING, help=(
    "Sentencepiece vocabulary size per side; 0: whole words."), show_default=(
    f"whole words; {_ALIGN['subword']} with --preset align or align-fast"))
SubwordTypeOpt = option(str, "--subword-type", panel=TRAINING, help="unigram or bpe.")
TrainMaxLengthOpt = option(int | None, "--max-length", panel=TRAINING, help=(
    "Training pairs longer than this many model tokens on either side are left out, with a warning."),
    show_default=str(MAX_LENGTH))

GuideOpt = option(str | None, "--guide", panel=TEACHER_PANEL, help=(
    "Guided alignment: 'auto' (the built-in statistical aligner, see --guide-model and --guide-sym), a "
    "Pharaoh file of links for the training corpus, or 'none' (no guide, where a preset names one; give "
    "./none for a file of that name)."))
GuideWeightOpt = option(float, "--guide-weight", panel=TEACHER_PANEL, help="Weight of the guide loss.")
SelfTrainOpt = option(int, "--self-train", panel=TEACHER_PANEL, help=(
    "Rounds of self-training after the teacher-guided one: the student trained again (from scratch, or see "
    "--self-train-epochs), guided by the links align corpus writes with the last round's model and its "
    "teacher (needs --guide auto; each round costs a training)."))
SelfTrainEpochsOpt = option(float | None, "--self-train-epochs", panel=TEACHER_PANEL, help=(
    "With --self-train: each round goes on from the last round's model for this many passes (1.5 ends "
    "halfway "
    "through the second) instead of training a new student for --epochs."))

ParallelOpt = option(str | None, "--parallel-directions", panel=RUNTIME, help=(
    "auto, on or off: with --direction both, train the two directions at once, each in a process of its own "
    f"with half of --threads (auto: for {PARALLEL_MIN_PAIRS:,} pairs or more on a CUDA GPU, which both "
    "processes share, or on a CPU with 2 threads or more; not under torchrun)."),
                     show_default=RUN.parallel_directions)
SaveEveryOpt = option(int | None, "--save-every", panel=RUNTIME, help="Resumable checkpoint every N steps.")

def train_options(ctx: typer.Context, preset: str | None, config: Path | None
                  ) -> tuple[TrainOptions, str | None, set[str]]:
    """The command line's TrainOptions: the options the user typed, over ``config``'s, over
    ``preset``'s (else the one the file names), over the defaults
    (:func:`~attnalign.training.config_file.layered_options`). An option left at its default overrides
    nothing; each is read by its flat name, its parameter's. With them the preset, and the names typed
    or set by the file (``--resume`` checks them against the run's)."""
    typed = set(typed_options(ctx))
    given = {k: v.value if isinstance(v, Enum) else str(v) if isinstance(v, Path) else v
             for k, v in ctx.params.items() if k in typed and k in FLAT_NAMES}
    if "direction" not in typed and ctx.params["reverse_init_from"] is not None:
        given["direction"] = "both"
    file_preset, from_file = read_config(config) if config is not None else (None, {})
    preset = chosen_preset(preset, file_preset, config)
    return layered_options(preset, from_file, given), preset, typed | set(from_file)


def typed_options(ctx: typer.Context) -> list[str]:
    """The parameters the user gave (on the command line or in the environment), not left at their
    defaults. Read by the source's name: Typer may carry a click of its own, whose enum is not click's."""
    sources = {name: ctx.get_parameter_source(name) for name in ctx.params}
    return [name for name, source in sources.items()
            if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")]


def resume_hint(model: Path) -> str:
    """What an interrupted ``train`` prints: where it stands and how to go on."""
    from ..training.model_dir import run_config

    try:
        run_config(model)
    except Exception:  # interrupted before the run began: nothing to resume
        return "nothing was written; the model directory is as it was"
    return f"continue this run with: attnalign train --model {model} --resume"


@handle_errors
def train(
    ctx: typer.Context, model: OptionalModelOpt = None, preset: PresetOpt = None, config: ConfigOpt = None,
    print_config: PrintConfigOpt = False, resume: ResumeOpt = False,
    overwrite: OverwriteOpt = False,
    init_from: InitFromOpt = None, reverse_init_from: ReverseInitFromOpt = None, src_lang: SrcLangOpt = None,
    tgt_lang: TgtLangOpt = None,
    src: SrcOpt = None, tgt: TgtOpt = None, corpus: CorpusOpt = None, encoding: EncodingOpt = "utf-8",
    lowercase: LowercaseOpt = DATA.lowercase, dev_src: DevSrcOpt = None, dev_tgt: DevTgtOpt = None,
    dev_gold: DevGoldOpt = None, gold_format: GoldFormatOpt = "auto",
    gold_one_based: GoldBaseOpt = None, reverse_gold: ReverseGoldOpt = False,
    model_type: ModelTypeOpt = ModelType(DEFAULTS.network.model_type), attention: AttentionOpt = None,
    attention_span: AttentionSpanOpt = None, window: WindowOpt = None, decoder_style: DecoderStyleOpt = None,
    cell: CellOpt = None, hidden: HiddenOpt = None, emb_dim: EmbDimOpt = None, d_model: DModelOpt = None,
    heads: HeadsOpt = None, layers: LayersOpt = None, dropout: DropoutOpt = None,
    input_feeding: InputFeedingOpt = None, align_head: AlignHeadOpt = None,
    translation: TranslationOpt = None,
    epochs: EpochsOpt = SCHEDULE.epochs, max_steps: MaxStepsOpt = SCHEDULE.max_steps,
    batch_tokens: BatchTokensOpt = None, lr: LrOpt = SCHEDULE.lr, warmup: WarmupOpt = SCHEDULE.warmup,
    clip: ClipOpt = SCHEDULE.clip, label_smoothing: SmoothingOpt = SCHEDULE.label_smoothing,
    seed: SeedOpt = SCHEDULE.seed, direction: DirectionOpt = None, min_freq: MinFreqOpt = DATA.min_freq,
    max_vocab: MaxVocabOpt = DATA.max_vocab, subword: SubwordOpt = None,
    subword_type: SubwordTypeOpt = DATA.subword_type, max_length: TrainMaxLengthOpt = None,
    guide: GuideOpt = TEACHING.guide, guide_weight: GuideWeightOpt = TEACHING.guide_weight,
    guide_model: GuideModelOpt = TEACHER_MODEL, guide_sym: GuideSymOpt = TEACHER_SYM,
    guide_prefix: GuidePrefixOpt = TEACHER.prefix, guide_identical: GuideIdenticalOpt = TEACHER.identical,
    guide_samplers: GuideSamplersOpt = TEACHER.samplers, guide_seed: GuideSeedOpt = TEACHER.seed,
    self_train: SelfTrainOpt = TEACHING.self_train,
    self_train_epochs: SelfTrainEpochsOpt = TEACHING.self_train_epochs,
    device: DeviceOpt = RUN.device, precision: PrecisionOpt = RUN.precision,
    threads: ThreadsOpt = RUN.threads, parallel_directions: ParallelOpt = None,
    save_every: SaveEveryOpt = RUN.save_every,
    quiet: QuietOpt = False,
) -> None:
    """Train an attention NMT model (one or both directions) into a model directory.

    Or fine-tune a pretrained Hugging Face model's cross-attention head on a guide (--init-from).

    Example: attnalign train --src sample_data/train.en --tgt sample_data/train.fr --model runs/sample
    """
    from ..workflows.train_files import train_files

    check_one_stdin({"--config": config, "--src": src, "--tgt": tgt, "--corpus": corpus, "--dev-src": dev_src,
                     "--dev-tgt": dev_tgt, "--dev-gold": dev_gold})
    options, preset, typed = train_options(ctx, preset, config)
    if print_config:
        options.check(has_guide_links=options.teacher.guide not in (None, "auto"))
        sys.stdout.write(config_listing(options, preset, typed))
        return
    if model is None:
        raise OptionError("train writes a model directory: give --model DIR",
                          hint="or --print-config to see the configuration without training")
    rank = own_rank()  # read before the process group exists: training chooses its backend
    try:
        summary = train_files(model, options, src=src, tgt=tgt, corpus=corpus, dev_src=dev_src,
                              dev_tgt=dev_tgt, dev_gold=dev_gold,
                              gold_options=gold_options(gold_format, gold_one_based, reverse_gold, encoding),
                              overwrite=overwrite, resume=resume,
                              reporter=None if quiet or rank else RichTrainReporter(err()),
                              typed=typed, preset=preset)
    except (KeyboardInterrupt, SystemError) as e:
        if interruption(e) is None:
            raise
        raise KeyboardInterrupt(resume_hint(model)) from None
    if rank == 0:  # under torchrun rank 0 reports
        out().print(train_table(model, summary))
