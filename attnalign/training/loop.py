"""Training attention NMT models for alignment: the library behind ``attnalign train``.

One call trains one or both directions into a model directory (:mod:`.model_dir`). Each epoch ends
with a validation: dev loss and perplexity, and with a dev gold the dev AER of argmax-decoded
attention; the best checkpoint is chosen by dev AER when a gold is given, else by dev loss (else by
training loss). ``save_every`` adds resumable checkpoints inside epochs; ``resume`` continues from the
last one and ends with the same weights as an uninterrupted run (same seed, data and device).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import torch

from .. import dist
from ..data.alignments import Link
from ..data.corpus import Pairs, pairs_fingerprint
from ..errors import AttnAlignError, OptionError, warn
from ..nmt.checkpoint import read_model_config
from ..nmt.device import cuda_memory, resolve_device, set_threads
from ..statistical import kernels
from . import parallel
from .dev import DevSet, swap
from .guide import keep_teacher, teacher_links
from .model_dir import (
    check_replaceable,
    discard_unstarted,
    drop_round_starts,
    finish_dir,
    libraries,
    locked,
    mark_finished,
    needs_replacing,
    prepare_dir,
    run_config,
    saved_options,
    staging_dir,
    write_config,
)
from .options import TrainOptions
from .run import DirectionRun, Reporter, Silent
from .self_train import self_guide


def train(
    pairs: Pairs,
    model_dir: str | os.PathLike,
    options: TrainOptions = TrainOptions(),
    *,
    dev: DevSet | None = None,
    guide: Sequence[Sequence[Link]] | None = None,
    overwrite: bool = False,
    resume: bool = False,
    reporter: Reporter | None = None,
    files: dict | None = None,
) -> dict:
    """Train the requested direction(s) on ``pairs`` (token lists) into ``model_dir``.

    ``overwrite``: replace an existing model, which stays in place until the new one is complete.
    ``resume``: continue the interrupted run in ``model_dir`` with its own options; ``pairs`` and
    ``dev`` must be the data it started with (their fingerprints are checked). ``files``: the data's
    file names, recorded in ``config.json`` (``attnalign train --resume`` reads them back).

    ``guide``: alignment links (source first) for every pair, to supervise the attention (guided
    alignment, Garg et al. 2019); with ``options.teacher.guide == "auto"`` and no ``guide``, the built-in
    statistical aligner (:mod:`attnalign.statistical`) makes them.

    Returns a summary: for each direction its best step, dev loss and dev AER, and the elapsed time.
    The model directory is locked for the run's length (:func:`~.model_dir.locked`).
    """
    model_dir = Path(model_dir)
    with locked(model_dir):
        return _train(pairs, model_dir, options, dev, guide, overwrite, resume, reporter, files)


def _train(pairs: Pairs, model_dir: Path, options: TrainOptions, dev: DevSet | None, guide, overwrite: bool,
           resume: bool, reporter: Reporter | None, files: dict | None) -> dict:
    if resume:  # continue with the options the run started with
        options = saved_options(model_dir)
    if guide is None and options.teacher.guide not in (None, "auto"):  # a path: read by train_files
        raise OptionError(f"the options name the guide file {options.teacher.guide!r}, and train() takes "
                          "the guide's links, not a file", hint="pass guide=[...] (the links of each pair, "
                          "source first), as attnalign.read_alignments reads them")
    options = _for_device(options, pairs, getattr(reporter, "note", None))
    if overwrite and not resume and needs_replacing(model_dir):  # before the teacher's minutes are spent
        check_replaceable(Path(os.path.abspath(model_dir)))
    if options.network.init_from is not None:
        from .finetune import finetune

        options.check(has_guide_links=guide is not None)
        return finetune(pairs, model_dir, options, dev=dev, guide=guide, overwrite=overwrite,
                        reporter=reporter, data=_data_record(pairs, dev, files))
    # everything is checked before the model directory is touched
    model_config = asdict(options.check(has_guide_links=guide is not None))
    if options.teacher.self_train and dist.launched():
        raise OptionError("--self-train aligns with the teacher in one process, not under torchrun",
                          hint="run it without torchrun, or leave --self-train out")
    device = _device(options.runtime.device)
    set_threads(options.runtime.threads)

    kernels.set_threads(options.runtime.threads)  # the teacher's loops
    data = _data_record(pairs, dev, files)
    if resume:
        _check_same_data(model_dir, data)
        data["run_id"] = _check_resumable(model_dir, options)
    else:
        data["run_id"] = uuid.uuid4().hex[:16]  # in config.json and every checkpoint of this run
    keep, train_pairs, guide = _usable_pairs(pairs, guide)
    _check_some_fit(train_pairs, options.data.max_length)
    # decided (and a torchrun conflict refused) before the teacher's minutes are spent
    runtime = options.runtime
    in_processes = parallel.wanted(runtime.parallel_directions, options.directions, device, runtime.threads,
                                   len(train_pairs))
    note = getattr(reporter, "note", None)
    # a resumed self-training round reads its guide and the kept teacher: the teacher is not fit again
    first = run_config(model_dir).get("self_train_round", 0) if resume else 0
    guide, teacher = _guide(train_pairs, guide, options, note) if not first else (None, None)

    def begin() -> Path:
        work = prepare_dir(model_dir, overwrite, resume)
        if dev is None:
            warn("no dev set given (--dev-src/--dev-tgt): the checkpoint with the lowest training loss is "
                 "kept")
        finished = read_model_config(work).get("finished", []) if resume else []
        write_config(work, options, options.directions, model_config, data, finished, first)
        return work

    created = not os.path.lexists(model_dir)
    work_dir = dist.on_main(begin)  # rank 0 prepares the directory; every rank writes there
    try:
        if teacher is not None:  # align corpus on this corpus reads its matrices instead of training again
            keep_teacher(work_dir, teacher, keep, pairs, options, data["fingerprint"])
        reporter = reporter or Silent()
        for self_round in range(first, options.teacher.self_train + 1):
            again = resume and self_round == first
            if self_round:
                guide = self_guide(work_dir, pairs, keep, device, self_round, again, note,
                                   going_on=options.rounds_go_on)
            jobs = _jobs(train_pairs, work_dir, options, model_config, device, guide, dev, self_round)
            done = _run(jobs, options, in_processes, again, reporter, work_dir)
    except Exception:  # a failure; an interruption (Ctrl-C, SIGTERM) stays resumable with its data
        if not resume:
            dist.on_main(lambda: discard_unstarted(work_dir, model_dir, created))
        raise
    dist.on_main(lambda: (drop_round_starts(work_dir), finish_dir(work_dir, model_dir)))
    return {"model_dir": str(model_dir), "directions": {d: done[d] for d in options.directions}}


def _jobs(train_pairs: Pairs, work_dir: Path, options: TrainOptions, model_config: dict, device, guide,
          dev: DevSet | None, self_round: int) -> list:
    """Each direction's run and dev set (the guide's links turned around for the reverse direction)."""
    jobs = []
    for direction in options.directions:
        forward = direction == "forward"
        links = None
        if guide is not None:
            links = guide if forward else [[(j, i) for i, j in g] for g in guide]
        run = DirectionRun(train_pairs if forward else swap(train_pairs), work_dir, direction, options,
                           model_config, device, links)
        run.self_round = self_round
        jobs.append((run, dev if dev is None or forward else dev.reversed()))
    return jobs


def _usable_pairs(pairs: Pairs, guide):
    """The pairs with both sides non-empty: their positions, the pairs, and their guide links."""
    keep = [k for k, (s, t) in enumerate(pairs) if s and t]
    if not keep:
        raise AttnAlignError("the training corpus has no pair with both sides non-empty",
                             hint="check the --src/--tgt (or --corpus) files")
    if guide is not None:
        if len(guide) != len(pairs):
            raise AttnAlignError(f"the guide alignment has {len(guide)} lines for {len(pairs)} pairs",
                                 hint="give one alignment line per training pair")
        guide = [guide[k] for k in keep]
    return keep, [pairs[k] for k in keep], guide


def _check_some_fit(pairs: Pairs, limit: int) -> None:
    """Refuse, before anything is written, a corpus that ``--max-length`` would leave empty: a word is
    at least one model token, so a pair of more words than the limit (EOS included) is left out."""
    if all(len(s) + 1 > limit or len(t) + 1 > limit for s, t in pairs):
        raise AttnAlignError(f"all {len(pairs)} training pairs are longer than --max-length {limit} model "
                             "tokens: nothing is left to train on",
                             hint="raise --max-length (it counts model tokens, EOS included)")


def _guide(train_pairs: Pairs, guide, options: TrainOptions, note):
    """The guide's links (given, or the teacher's under ``--guide auto``) and the fitted teacher (or
    None), with the passes of ``--epochs auto`` told to ``note`` where they are fewer than the full."""
    n = len(train_pairs)
    if note and options.schedule.epochs == "auto" and options.passes(n) < options.schedule.auto_epochs:
        note(f"--epochs auto: {options.passes(n):.2f} passes over {n:,} pairs")
    if guide is not None or options.teacher.guide != "auto":
        return guide, None
    guide, teacher = teacher_links(train_pairs, options, note)
    return dist.broadcast(guide), teacher  # under torchrun rank 0 gathered the teacher's links


def _run(jobs: list, options: TrainOptions, in_processes: bool, resume: bool, reporter: Reporter,
         work_dir: Path) -> dict:
    """Train the directions' runs (``jobs``: (run, dev set)): together under the agreement loss, each in
    a process, or one after the other; their summaries by direction."""
    if in_processes:
        return parallel.train_in_processes(jobs, resume, parallel.threads_each(options.runtime.threads),
                                           reporter, lambda d: mark_finished(work_dir, d))
    done = {}
    for run, d in jobs:
        done[run.direction] = run.train(d, resume, reporter)
        dist.on_main(lambda d=run.direction: mark_finished(work_dir, d))
    return done


def _for_device(options: TrainOptions, pairs: Pairs, note) -> TrainOptions:
    """The options with ``--batch-tokens auto`` and a preset's GPU network resolved for the run's
    device (a resumed run's were resolved when it began), told to ``note`` on a GPU."""
    if options.schedule.batch_tokens != "auto" and not options.network.gpu and not options.schedule.gpu:
        return options
    device = _process_device(options.runtime.device)
    words = sum(max(len(s), len(t)) + 1 for s, t in pairs)
    resolved = options.for_device(device.type, words, cuda_memory(device))
    if note and device.type == "cuda" and options.schedule.batch_tokens == "auto":
        note(f"--batch-tokens auto on {device}: {resolved.schedule.batch_tokens:,} tokens a batch at --lr "
             f"{resolved.base_lr:.3g}, {resolved.runtime.precision}")
    if note and device.type == "cuda" and resolved.network.config != options.network.config:
        changed = {k: v for k, v in resolved.network.config.items() if options.network.config.get(k) != v}
        note(f"on {device} the network takes {', '.join(f'{k}={v}' for k, v in changed.items())}")
    if note and device.type == "cuda" and options.schedule.gpu:
        taken = ", ".join(f"{k}={v}" for k, v in options.schedule.gpu.items())
        note(f"on {device} the schedule takes {taken}")
    return resolved


def _process_device(name: str) -> torch.device:
    """The device of this process: under torchrun on GPUs, the GPU of its local rank."""
    device = resolve_device(name)
    if dist.launched() and device.type == "cuda":
        device = torch.device(dist.process_gpu())
    return device


def _device(name: str) -> torch.device:
    """:func:`_process_device`, with the process group started (torchrun) once it is known, so that a
    missing GPU is a clear error before the group."""
    device = _process_device(name)
    dist.init(gpu=device.type == "cuda")
    return device


def _data_record(pairs: Pairs, dev: DevSet | None, files: dict | None) -> dict:
    """What ``config.json`` records of a run's data (see :func:`_check_same_data`)."""
    return {"pairs": len(pairs), "fingerprint": pairs_fingerprint(pairs),
            "dev_pairs": None if dev is None else len(dev.pairs),
            "dev_fingerprint": None if dev is None else pairs_fingerprint(dev.pairs, dev.gold),
            "files": {k: v for k, v in (files or {}).items() if v is not None}}


def _check_same_data(model_dir: Path, data: dict) -> None:
    """``--resume`` continues the run it resumes: the same training corpus, the same dev set."""
    saved = run_config(model_dir).get("data") or {}
    if saved.get("fingerprint") not in (None, data["fingerprint"]):
        raise AttnAlignError(
            f"--resume was given another training corpus ({data['pairs']} pairs) than the run it resumes "
            f"({saved.get('pairs')} pairs, {_files(saved, 'src', 'tgt', 'corpus')})", path=model_dir,
            hint="resume with the run's own corpus, or start a new run with --overwrite")
    if saved.get("dev_fingerprint", data["dev_fingerprint"]) != data["dev_fingerprint"]:
        was = "no dev set" if saved["dev_fingerprint"] is None else (
            f"a dev set of {saved['dev_pairs']} pairs ({_files(saved, 'dev_src', 'dev_tgt', 'dev_gold')})")
        raise AttnAlignError(
            f"--resume was given another dev set than the run it resumes, which had {was}",
            path=model_dir, hint="resume with the run's own dev options (attnalign train restores them "
                                 "when they are left out), or start a new run with --overwrite")


def _check_resumable(model_dir: Path, options: TrainOptions) -> str | None:
    """``--resume`` continues exactly the run it resumes, or refuses before anything is written: the
    directions ``config.json`` lists are those its options train, the libraries are the versions it
    ran with, and every resumable checkpoint reads and is this run's (its run id and data); the run's
    id (None for a run from before ids were recorded)."""
    from ..nmt.checkpoint import load_checkpoint

    cfg = run_config(model_dir)
    finished = set(cfg.get("finished", []))
    if cfg.get("directions") != options.directions or not finished <= set(options.directions):
        raise AttnAlignError(
            f"config.json lists the directions {cfg.get('directions')} (finished: {cfg.get('finished')}) but "
            f"its training options train {options.network.direction}: it was changed after the run began",
            path=model_dir,
            hint="resume needs the config.json the run wrote; start a new run with --overwrite")
    recorded, now = cfg.get("libraries"), libraries()
    if isinstance(recorded, dict):
        changed = [f"{k} {recorded[k]} (now {now.get(k)})" for k in sorted(recorded)
                   if k in now and recorded[k] != now[k]]
        if changed:
            raise AttnAlignError(f"the run began with other library versions: {', '.join(changed)}",
                                 path=model_dir, hint="resume it where those versions are installed (the "
                                 "same run needs them), or start a new run with --overwrite")
    data = cfg.get("data") or {}
    run_id = data.get("run_id")
    stage = staging_dir(model_dir)
    work = stage if (stage / "config.json").exists() else model_dir
    for direction in options.directions:
        last = work / f"{direction}.last.pt"
        if not last.exists():
            continue
        ck = load_checkpoint(last)  # a damaged one: its error now, not after the run has begun
        why = None
        if run_id is not None and ck.get("run_id") != run_id:
            why = "it belongs to another run (its run id is not config.json's)"
        elif data.get("fingerprint") not in (None, ck.get("fingerprint", data.get("fingerprint"))):
            why = "it was trained on another corpus"
        elif ck.get("direction", direction) != direction:
            why = f"it holds the {ck.get('direction')!r} direction"
        elif not ck.get("finished") and "optimizer" not in ck:
            why = "it is not a resumable checkpoint (no optimizer state)"
        if why:
            raise AttnAlignError(f"{last.name} is not this run's resumable checkpoint: {why}", path=last,
                                 hint="restore the run's own checkpoint, or start a new run with --overwrite")
    return run_id


def _files(saved: dict, *keys: str) -> str:
    names = [str(saved.get("files", {}).get(k)) for k in keys if saved.get("files", {}).get(k)]
    return ", ".join(names) or "files not recorded"


