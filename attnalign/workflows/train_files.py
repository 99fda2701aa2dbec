"""Corpus files -> a trained model directory: the library behind ``attnalign train``.

Reads the training corpus, the dev set and its gold, and a guide file if one is given, then calls
:func:`attnalign.training.train`.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import asdict
from pathlib import Path
from typing import NoReturn

from ..data.alignments import GUIDE_ROLE, read_alignments
from ..data.corpus import is_piped, read_corpus
from ..errors import AttnAlignError, OptionError
from ..eval.scoring import GoldOptions, read_gold
from ..training import DevSet, TrainOptions, train
from ..training.config_file import preset_values
from ..training.model_dir import run_config, saved_options
from ..training.options import flag, resume_conflicts
from ..training.run import Reporter

PathLike = str | os.PathLike


def train_files(
    model: PathLike,
    options: TrainOptions,
    *,
    src: PathLike | None = None,
    tgt: PathLike | None = None,
    corpus: PathLike | None = None,
    dev_src: PathLike | None = None,
    dev_tgt: PathLike | None = None,
    dev_gold: PathLike | None = None,
    gold_options: GoldOptions = GoldOptions(),
    overwrite: bool = False,
    resume: bool = False,
    reporter: Reporter | None = None,
    typed: Collection[str] = (),
    preset: str | None = None,
) -> dict:
    """Train ``options`` on a corpus file (``src`` + ``tgt`` or one ``corpus``) into ``model``; with
    ``dev_src`` + ``dev_tgt`` (and ``dev_gold``) validate on them. ``options.teacher.guide`` is ``None``,
    ``"auto"`` or a Pharaoh file of links, one line per training pair. ``typed``: the options the user
    gave (their flat names, the command line's parameters; ``preset``: the preset named, whose options
    count as given), which ``resume`` refuses where they differ from the run's. Returns :func:`train`'s
    summary."""
    files = {"src": src, "tgt": tgt, "corpus": corpus, "dev_src": dev_src, "dev_tgt": dev_tgt,
             "dev_gold": dev_gold}
    if resume and overwrite:
        raise OptionError("--resume continues the run in the model directory and --overwrite starts a "
                          "new one", hint="give one of them")
    if Path(model).is_symlink():  # the link stays; the folder it names is the model directory
        model = Path(os.path.realpath(model))
    if resume:  # the run's own data options, for each group (training data, dev set) not given again
        saved = (run_config(Path(model)).get("data") or {}).get("files", {})
        for group in (("src", "tgt", "corpus"), ("dev_src", "dev_tgt", "dev_gold")):
            if all(files[k] is None for k in group):
                files.update({k: saved.get(k) for k in group})
                if special := next((saved[k] for k in group if saved.get(k) and is_piped(saved[k])), None):
                    raise AttnAlignError("a file of the run this resumes is no longer a regular file (a "
                                         "FIFO or a device would be waited on)", path=special,
                                         hint="put the file back, or give the run's data again")
        if "gold_options" in saved:
            gold_options = GoldOptions(**saved["gold_options"])
        run = saved_options(Path(model))
        network = run_config(Path(model)).get("model_config") or {}
        from_preset = set(preset_values(preset)) - set(typed) if preset else set()  # they count as typed
        if wrong := resume_conflicts(options, run, network, set(typed) | from_preset):
            _refuse_resume(model, [w for w in wrong if w not in from_preset],
                           [w for w in wrong if w in from_preset], preset)
        options = run
    elif overwrite:
        guide, network = options.teacher.guide, options.network
        used = {"guide": None if guide == "auto" else guide, "init_from": network.init_from,
                "reverse_init_from": network.reverse_init_from}
        _check_inputs_outside(Path(model), {**files, **used})
    src, tgt, corpus = files["src"], files["tgt"], files["corpus"]
    dev_src, dev_tgt, dev_gold = files["dev_src"], files["dev_tgt"], files["dev_gold"]
    guide = options.teacher.guide
    options.check(has_guide_links=guide not in (None, "auto"))  # options first, then the data
    encoding = gold_options.encoding
    pairs = read_corpus(src, tgt, corpus, encoding=encoding, lowercase=options.data.lowercase)
    dev = None
    if dev_src or dev_tgt:
        dev_pairs = read_corpus(dev_src, dev_tgt, encoding=encoding, lowercase=options.data.lowercase)
        gold = None if dev_gold is None else read_gold(dev_gold, gold_options, pairs=dev_pairs)[0]
        dev = DevSet(dev_pairs, gold)
    elif dev_gold is not None:
        raise OptionError("--dev-gold needs the dev text: --dev-src and --dev-tgt")
    guide_links = None
    if guide not in (None, "auto"):
        lengths = [len(s) for s, _ in pairs], [len(t) for _, t in pairs]
        alignments = read_alignments(guide, fmt="pharaoh", role=GUIDE_ROLE, src_lengths=lengths[0],
                                     tgt_lengths=lengths[1], encoding=encoding)[0]
        guide_links = [sorted(a.links) for a in alignments]
    record = {k: None if v is None else str(Path(v).resolve()) if str(v) != "-" else None
              for k, v in files.items()}
    return train(pairs, model, options, dev=dev, guide=guide_links, overwrite=overwrite, resume=resume,
                 reporter=reporter, files={**record, "gold_options": asdict(gold_options)})


def _refuse_resume(model, typed: list[str], from_preset: list[str], preset: str | None) -> NoReturn:
    """The error of a ``--resume`` given options other than the run's: those typed, and those the
    preset named beside it sets (a preset may change between versions, or the run began without it)."""
    said = []
    if typed:
        said.append(f"{', '.join(flag(w) for w in typed)} {'differs' if len(typed) == 1 else 'differ'} from "
                    "the run's")
    if from_preset:
        said.append(f"--preset {preset} sets {', '.join(from_preset)} (its file's keys) otherwise than the "
                    "run began (the preset has changed since, or the run did not start from it)")
    leave = (f"{'them and ' if typed else ''}--preset out to resume the run with its own options"
             if from_preset else "them out to resume")
    raise OptionError(f"--resume continues the run with its own options; {'; '.join(said)}", path=model,
                      hint=f"leave {leave}, or start a new run with --overwrite")


def _check_inputs_outside(model_dir: Path, files: dict) -> None:
    """``--overwrite`` replaces the files ``train`` writes in the model directory (the user's own stay):
    refuse an input that is one of them."""
    from ..training.model_dir import written_by_attnalign

    root = Path(model_dir).resolve()
    for v in files.values():
        if v is None or str(v) == "-" or str(v).startswith("hf:"):
            continue
        p = Path(v).resolve()
        if root in p.parents and written_by_attnalign(root, p.relative_to(root).parts[0]):
            raise OptionError(f"--overwrite would replace {v}, a file of the model it reads",
                              path=model_dir, hint="copy the file out of the model directory first")
