"""Processes started by ``torchrun``: one process group per process, set up on first use.

Outside torchrun (``WORLD_SIZE`` unset or 1) every function here answers for a single process and
torch is not imported. Under torchrun the default group uses nccl where CUDA GPUs are visible and
``--device`` asks for them, else gloo; CPU collectives (the statistical aligner's counts, objects to
gather) always go through a gloo group. Each process of a machine uses cores / processes-on-the-machine
CPU threads: more threads than cores slow every process down.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

from .errors import OptionError

_state: dict = {}


def _env_int(name: str, default: int) -> int:
    """A whole number torchrun sets in the environment; another value is one error naming it."""
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"the environment variable {name}={value!r} is not a whole number",
                          hint=f"torchrun sets it; unset {name} to run one process") from None


def launched() -> bool:
    """Whether this process is one of several started by torchrun."""
    return _env_int("WORLD_SIZE", 1) > 1


def _check_launcher() -> None:
    """WORLD_SIZE above 1 without the rest of what torchrun sets: one error naming the variables."""
    missing = [v for v in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT") if v not in os.environ]
    if missing:
        raise OptionError(f"WORLD_SIZE={os.environ['WORLD_SIZE']} asks for several processes, but "
                          f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set",
                          hint="start the command with torchrun --nproc-per-node N, or unset WORLD_SIZE")
    for v in ("RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        _env_int(v, 0)


def init(gpu: bool = False):
    """The ``torch.distributed`` module with the process group set up (None outside torchrun).
    ``gpu``: the first caller's wish for nccl (a command on CUDA devices)."""
    if not launched():
        return None
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        _check_launcher()
        backend = "nccl" if gpu and torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(process_gpu())
        dist.init_process_group(backend)
        _state["cpu"] = dist.new_group(backend="gloo") if backend == "nccl" else None
        # a process that exits with gloo's threads still running aborts ("terminate called ...")
        atexit.register(lambda: dist.is_initialized() and dist.destroy_process_group())
        local = local_processes()
        torch.set_num_threads(max(1, usable_cores() // local))
    return dist


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system says it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def process_gpu(visible: int | None = None) -> str:
    """This process's GPU under torchrun, one per process of a machine (``cuda:LOCAL_RANK``). More
    processes than GPUs get one clear error, not a CUDA 'invalid device ordinal' traceback from the
    process whose GPU does not exist. ``visible``: the GPUs torch sees (asked of torch if None)."""
    if visible is None:
        import torch

        visible = torch.cuda.device_count()
    local = max(local_processes(), local_rank() + 1)
    if local > visible:
        raise OptionError(
            f"torchrun started {local} processes on this machine, but torch sees {visible} CUDA GPU"
            f"{'s' if visible != 1 else ''} (one per process)",
            hint=f"run torchrun --nproc-per-node {visible}, or add --device cpu to run the processes "
                 "on the CPU (gloo)")
    return f"cuda:{local_rank()}"


def cpu_group():
    """The group for collectives on CPU tensors and Python objects (None: the default group)."""
    init()
    return _state.get("cpu")


def world() -> tuple[int, int]:
    """``(rank, processes)``: ``(0, 1)`` outside torchrun."""
    dist = init()
    return (0, 1) if dist is None else (dist.get_rank(), dist.get_world_size())


def own_rank() -> int:
    """This process's rank as torchrun set it (0 outside torchrun), without setting up the group."""
    return _env_int("RANK", 0)


def local_processes() -> int:
    """The processes torchrun started on this machine (1 outside torchrun)."""
    return _env_int("LOCAL_WORLD_SIZE", 1)


def local_rank() -> int:
    """This process's index on its machine (its GPU under torchrun)."""
    return _env_int("LOCAL_RANK", 0)


def broadcast(obj, src: int = 0):
    """``obj`` as process ``src`` has it, on every process (``obj`` itself with one process)."""
    dist = init()
    if dist is None:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src, group=cpu_group())
    return box[0]


def gather(obj) -> list | None:
    """Process 0: every process's ``obj``, by rank; other processes: None. One process: ``[obj]``."""
    dist = init()
    if dist is None:
        return [obj]
    rank, procs = world()
    parts = [None] * procs if rank == 0 else None
    dist.gather_object(obj, parts, dst=0, group=cpu_group())
    return parts


def barrier() -> None:
    dist = init()
    if dist is not None:
        dist.barrier(group=cpu_group())


def on_main(fn):
    """``fn()`` run by process 0 only, its result (or its exception) handed to every process: work that
    touches shared files (a model directory) happens once. One process: ``fn()``."""
    if not launched():
        return fn()
    out = None
    if world()[0] == 0:
        try:
            out = ("ok", fn())
        except Exception as e:  # every process must leave the broadcast, then fail the same way
            out = ("error", e)
    kind, value = broadcast(out)
    if kind == "error":
        raise value
    return value


def end(code: int | str | None, now: bool = False) -> None:
    """Leave a torchrun process once its command is done, with ``code`` as ``SystemExit`` holds it
    (None: 0; a message: printed, then 1): the exit handlers run (the process group is destroyed,
    temporary files removed), the streams are flushed, then the process exits without tearing the
    interpreter down. A process that ends the usual way can abort during that teardown ("terminate
    called without an active exception", gloo) after its work is done, failing the whole run. Outside
    torchrun, or before any collective: returns and lets the caller exit as usual, unless ``now``
    (an interrupted run, already cleaned up: the teardown would wait for worker threads, and an
    interrupt that landed inside compiled code can turn its exit into a death by SIGINT)."""
    if "cpu" not in _state and not now:
        return
    if isinstance(code, str):
        print(code, file=sys.stderr)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said there
            stream.flush()
    os._exit(code if isinstance(code, int) else int(code is not None))
