"""Where torch runs: the device and the CPU threads, chosen once for every command."""

from __future__ import annotations

import torch

from ..errors import AttnAlignError, OptionError, require


def resolve_device(name: str) -> torch.device:
    """``auto`` (a CUDA GPU if torch sees one, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda") and not (name.startswith("cuda:") and name[5:].isdigit()):
        raise OptionError(f"unknown --device {name!r}", hint="use auto, cpu, cuda or cuda:N")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise AttnAlignError(f"--device {name} was asked for, but torch sees no CUDA GPU",
                             hint="use --device cpu (or auto)")
    if name.startswith("cuda:") and torch.cuda.is_available() and int(name[5:]) >= torch.cuda.device_count():
        raise AttnAlignError(f"--device {name}: torch sees {torch.cuda.device_count()} CUDA GPUs",
                             hint="GPUs are numbered from 0")
    return torch.device(name)


def set_threads(threads: int | None) -> None:
    """Use ``threads`` CPU threads for torch (None: torch's default), with denormal floats flushed to
    zero: attention weights and gradients of saturated gates fall below 1e-38, and a CPU multiplying
    such numbers is many times slower, while zero changes nothing a model learns or aligns."""
    require("--threads", threads, low=1, optional=True)
    if threads:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
