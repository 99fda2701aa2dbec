"""Where torch runs: the device and the CPU threads, chosen once for every command."""

from __future__ import annotations

import torch

from ..errors import AttnAlignError


def resolve_device(name: str) -> torch.device:
    """``auto`` (a CUDA GPU if torch sees one, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise AttnAlignError("--device cuda was asked for, but torch sees no CUDA GPU",
                             hint="use --device cpu (or auto)")
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise AttnAlignError(f"unknown device {name!r}", hint="use auto, cpu or cuda")
    return torch.device(name)


def set_threads(threads: int | None) -> None:
    """Use ``threads`` CPU threads for torch (None: torch's default)."""
    if threads:
        torch.set_num_threads(threads)
