"""Model directories and checkpoints.

A model directory holds ``config.json`` (human-readable: model type, network config, training options,
directions), one weights file per direction (``forward.pt``, ``reverse.pt``: the best checkpoint),
one resumable state per direction (``forward.last.pt``: also optimizer, step, RNG state) and the
training log ``log.csv``.

A checkpoint is a plain dict (state_dict, config dict, both vocabularies as token lists, metadata),
written atomically (temporary file + rename: a run killed at any moment leaves the last good file
intact) and read with ``torch.load(weights_only=True)``, so loading can never execute code.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .._version import __version__
from ..data.fileio import MODEL_DIR_FILES, is_model_dir, model_file_open
from ..errors import AttnAlignError, warn
from .models import build_model
from .subword import Segmenter
from .vocab import Vocab

FORMAT_VERSION = 1
DIRECTIONS = ("forward", "reverse")
HF_PREFIX = "hf:"  # --model hf:NAME: a Hugging Face model from the local cache (see .hf)


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write a checkpoint dict atomically."""
    payload = {"format_version": FORMAT_VERSION, "attnalign_version": __version__, **payload}
    with model_file_open(path, "wb") as f:
        try:
            torch.save(payload, f)
        except RuntimeError as e:  # torch's writer reports a failed write (a full disk) as RuntimeError
            raise OSError(5, str(e).splitlines()[0][:200]) from None


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True``; a corrupt or foreign file gets a clear error."""
    p = Path(path)
    if not p.exists():
        hint = "train a model first: attnalign train ... --model DIR"
        if (p.parent / "config.json").exists():  # a model directory whose training did not get this far
            hint = f"its training may have been interrupted: attnalign train --model {p.parent} --resume"
        raise AttnAlignError("checkpoint not found", path=p, hint=hint)
    try:
        ck = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as e:  # noqa: BLE001 - whatever a damaged or foreign file makes the unpickler raise
        # said in our words: torch's own message advises loading the file unsafely (weights_only=False)
        why = ("it holds Python objects beyond tensors and plain data, which attnalign never loads (they "
               "could run code)" if "weights only load failed" in str(e).lower()
               else "it is damaged, truncated or not a checkpoint")
        raise AttnAlignError(f"cannot read the checkpoint: {why}", path=p,
                             hint="restore the model directory's file, or train the model again") from None
    if not isinstance(ck, dict) or "format_version" not in ck:
        raise AttnAlignError("not an attnalign checkpoint", path=p)
    if ck["format_version"] != FORMAT_VERSION:
        raise AttnAlignError(
            f"checkpoint format {ck['format_version']!r} (attnalign {ck.get('attnalign_version')}) is not "
            f"supported by attnalign {__version__} (format {FORMAT_VERSION})",
            path=p, hint="retrain the model with this version, or use the version that wrote it")
    return ck


@dataclass
class LoadedModel:
    """A model ready for inference, with what is needed to feed it."""

    model: torch.nn.Module
    model_type: str
    config: dict
    src_vocab: Vocab
    tgt_vocab: Vocab
    direction: str = "forward"
    lowercase: bool = False
    meta: dict | None = None
    src_seg: Segmenter | None = None
    tgt_seg: Segmenter | None = None

    @property
    def has_layers(self) -> bool:
        """Whether --layer / --head choose among decoder layers and heads (a Transformer)."""
        return self.model_type == "transformer"

    def token_count(self, words, side: str) -> int:
        """Model tokens of a sentence on ``side`` ("src"/"tgt"), with its EOS."""
        seg = self.src_seg if side == "src" else self.tgt_seg
        n = len(seg.segment(words)[0]) if seg is not None and seg.is_subword else len(words)
        return n + 1


def read_model_config(model_dir: str | os.PathLike) -> dict:
    """The model directory's ``config.json``, with a clear error if it is not a model directory."""
    d = Path(model_dir)
    cfg = d / "config.json"
    if not d.is_dir() or not cfg.exists():
        raise AttnAlignError("not an attnalign model directory (no config.json)", path=d,
                             hint="train one with: attnalign train --src F --tgt F --model DIR")
    try:
        data = json.loads(cfg.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AttnAlignError(f"config.json is not valid UTF-8 JSON: {e}", path=cfg,
                             hint="a model directory's config.json is written by attnalign train") from None
    if not isinstance(data, dict) or not isinstance(data.get("directions"), list):
        raise AttnAlignError("config.json is not an attnalign model configuration", path=cfg,
                             hint="a model directory's config.json is written by attnalign train")
    _check_config_types(data, cfg)
    if data.get("format_version") != FORMAT_VERSION:
        raise AttnAlignError(
            f"model directory format {data.get('format_version')!r} is not supported by attnalign "
            f"{__version__} (format {FORMAT_VERSION})", path=cfg, hint="retrain the model with this version")
    return data


_JSON_KINDS = {dict: "an object", list: "a list", str: "a string", int: "a whole number", float: "a number",
               bool: "true or false", type(None): "null"}


def _kind(kind: type) -> str:
    """A JSON value's type in words: ``a whole number``, ``an object``."""
    return _JSON_KINDS.get(kind, f"a {kind.__name__}")


def _check_config_types(data: dict, path: Path) -> None:
    """The parts of ``config.json`` that commands read have the types ``train`` writes: a hand-edited
    or foreign file gets an error naming the key, not an AttributeError deep in a command."""
    kinds = {"model_config": dict, "train_options": dict, "data": dict, "finished": list,
             "model_type": str, "lowercase": bool, "self_train_round": int, "pretrained": str,
             "reverse_model": str}
    nullable = ("reverse_model",)  # a one-direction fine-tuned model has none
    for key, kind in kinds.items():
        if key in data and not isinstance(data[key], kind) and not (data[key] is None and key in nullable):
            raise AttnAlignError(f"config.json: {key!r} is {_kind(type(data[key]))}, not {_kind(kind)}",
                                 path=path, hint="a model directory's config.json is "
                                 "written by attnalign train; retrain the model or restore the file")
    files = (data.get("data") or {}).get("files", {})
    if not isinstance(files, dict) or not all(v is None or isinstance(v, str | dict) for v in files.values()):
        raise AttnAlignError("config.json: data.files must map names to file paths", path=path,
                             hint="a model directory's config.json is written by attnalign train")
    if not all(isinstance(d, str) for d in data["directions"]):
        raise AttnAlignError("config.json: directions must be a list of names", path=path)


def load_model(model_dir: str | os.PathLike, direction: str = "forward",
               device: str | torch.device = "cpu") -> LoadedModel:
    """Load the best checkpoint of one direction from a model directory, in eval mode."""
    meta = read_model_config(model_dir)
    if direction not in meta.get("directions", []):
        raise AttnAlignError(
            f"the model has no {direction} direction (it has: {', '.join(meta.get('directions', []))})",
            path=model_dir, hint="train with --direction both for bidirectional alignment")
    path = Path(model_dir) / f"{direction}.pt"
    finished = meta.get("finished")  # None: written before this was recorded
    if not path.exists() and finished is not None and direction not in finished:
        raise AttnAlignError(f"the training of the {direction} direction was interrupted before its first "
                             "checkpoint", path=path,
                             hint=f"continue it: attnalign train --model {model_dir} --resume")
    ck = load_checkpoint(path)  # on the CPU: the vocabularies and sentencepiece protos are read there
    _check_belongs(ck, meta, direction, path)
    try:
        src_vocab, tgt_vocab = Vocab(ck["src_vocab"]), Vocab(ck["tgt_vocab"])
        model = build_model(ck["model_type"], ck["config"], len(src_vocab), len(tgt_vocab))
        model.load_state_dict(ck["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError, AttnAlignError) as e:
        detail = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise AttnAlignError(f"the checkpoint does not hold a model this version can load ({detail})",
                             path=path, hint="retrain the model, or use the attnalign version that wrote it"
                             ) from None
    if finished is not None and direction not in finished:
        warn(f"{model_dir}: the training of the {direction} direction was interrupted; using its best "
             f"checkpoint so far (step {ck.get('step')}); finish it with: attnalign train --model "
             f"{model_dir} --resume")
    model.to(device).eval()
    if (meta.get("train_options") or {}).get("subword"):  # a subword model reads pieces, never words
        for side in ("src", "tgt"):
            if ck.get(f"{side}_spm") is None:
                raise AttnAlignError(f"the checkpoint of a subword model holds no sentencepiece model "
                                     f"({side}_spm): it is damaged", path=path,
                                     hint="restore the model directory, or train the model again")
    segmenters = [Segmenter.from_tensor(ck.get(f"{side}_spm"), path) for side in ("src", "tgt")]
    return LoadedModel(model, ck["model_type"], ck["config"], src_vocab, tgt_vocab, direction,
                       bool(meta.get("lowercase", False)), meta, *segmenters)


def _check_belongs(ck: dict, meta: dict, direction: str, path: Path) -> None:
    """A checkpoint is the model directory's own: its direction, its network, and the data fingerprint
    and run id ``train`` recorded in both (a checkpoint from before they were recorded has none to
    show)."""
    fix = "the model directory's checkpoints were replaced or mixed up: restore them, or train it again"
    if ck.get("direction", direction) != direction:
        raise AttnAlignError(f"the file holds the {ck.get('direction')!r} direction, not the {direction} one",
                             path=path, hint=fix)
    ours, theirs = meta.get("model_config"), ck.get("config")
    if isinstance(ours, dict) and isinstance(theirs, dict):
        theirs = json.loads(json.dumps(theirs, default=str))  # as config.json holds it (lists, not tuples)
        if any(theirs[k] != ours[k] for k in theirs.keys() & ours.keys()):  # old files may lack new keys
            raise AttnAlignError("the checkpoint's network is not the one config.json describes", path=path,
                                 hint=fix)
    theirs, ours = ck.get("fingerprint"), (meta.get("data") or {}).get("fingerprint")
    for what, value in (("the checkpoint's", theirs), ("config.json's", ours)):
        if value is not None and not isinstance(value, str):
            raise AttnAlignError(f"{what} data fingerprint is {_kind(type(value))}, not a string",
                                 path=path, hint=fix)
    if theirs is not None and ours is not None and theirs != ours:
        raise AttnAlignError("the checkpoint was trained on other data than the model directory records",
                             path=path, hint=fix)
    theirs, ours = ck.get("run_id"), (meta.get("data") or {}).get("run_id")
    if theirs is not None and ours is not None and theirs != ours:
        raise AttnAlignError("the checkpoint comes from another training run than the model directory's "
                             "config.json (another run id)", path=path, hint=fix)


def is_hf_model(ref: str | os.PathLike) -> bool:
    """Whether ``ref`` names a Hugging Face model (``hf:NAME``, or a ``save_pretrained`` directory)
    rather than an attnalign model directory."""
    s = str(ref)
    if s.startswith(HF_PREFIX):
        return True
    cfg = Path(s) / "config.json"
    if not cfg.is_file():
        return False
    try:
        data = json.loads(cfg.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return False
    return isinstance(data, dict) and "model_type" in data and "directions" not in data


def model_files(ref: str | os.PathLike | None, flag: str = "--model") -> dict[str, Path]:
    """The files of the model ``ref`` (``{what: path}``), so that no output is written over them: those
    of an attnalign model directory (checkpoints, config, log, the kept teacher, the self-training guide,
    a fine-tuned model's folders; not a user's own file beside them, such as an earlier output), or
    every file of a ``save_pretrained`` folder. ``hf:NAME`` and a missing directory: none."""
    if ref is None or str(ref).startswith(HF_PREFIX) or not Path(ref).is_dir():
        return {}
    d = Path(ref)
    files = [f for f in sorted(d.rglob("*")) if f.is_file()]
    if is_model_dir(d):
        files = [f for f in files if f.parent != d or f.name in MODEL_DIR_FILES]
    return {f"{flag} file {f.relative_to(d)}": f for f in files}


def model_lowercase(model_dir: str | os.PathLike, lowercase: bool | None = None) -> bool:
    """``lowercase`` if given, else whether the model was trained on lower-cased text (a pretrained
    Hugging Face model reads text as it is)."""
    if lowercase is not None:
        return lowercase
    return False if is_hf_model(model_dir) else bool(read_model_config(model_dir).get("lowercase"))
