"""Where torch runs: the device and the CPU threads, chosen once for every command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from ..errors import AttnAlignError, OptionError
from .options import check_threads


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


def cuda_memory(device: torch.device) -> int | None:
    """A CUDA device's memory in bytes; None for other devices."""
    return torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None


def set_threads(threads: int | None) -> None:
    """Use ``threads`` CPU threads for torch (None: torch's default)."""
    check_threads(threads)
    if threads:
        torch.set_num_threads(threads)


@contextmanager
def flushed_denormals() -> Iterator[None]:
    """Denormal floats (below 1.2e-38) read and written as zero inside the block, on the CPU threads.

    Attention weights and the gradients of saturated gates fall that low, and a CPU multiplies such
    numbers many times slower, while zero changes nothing a model learns or aligns. The mode is the
    thread's, not torch's, so it is kept to the model's own work and restored after it: NumPy code
    and the caller's floats around it keep IEEE arithmetic."""
    was_on = (torch.tensor([1e-39]) * 1).item() == 0.0
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if not was_on:
            torch.set_flush_denormal(False)
