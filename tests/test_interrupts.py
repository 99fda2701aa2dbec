"""Fault injection: `train` and `align corpus` killed (SIGKILL) at random points, then resumed or run
again, end with the same result as an uninterrupted run, keep the old output until then, and leave no
stray files."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers import SAMPLE, children, running, write

from attnalign.data.corpus import read_corpus
from attnalign.nmt.checkpoint import load_checkpoint

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}

pytestmark = pytest.mark.slow  # subprocesses and whole runs: pytest -m "not slow" leaves them out


def cli(*args) -> list[str]:
    return [sys.executable, "-m", "attnalign", *map(str, args)]


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(cli(*args), env=ENV, capture_output=True, text=True, timeout=300)


def killed_at(args, delay: float) -> None:
    p = subprocess.Popen(cli(*args), env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()


def strays(folder) -> list[str]:
    return sorted(p.name for p in folder.parent.rglob("*") if p.name.endswith(".tmp")
                  or p.name.endswith((".new", ".old")))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:150]
    (root / "t.en").write_text("".join(" ".join(s) + "\n" for s, _ in pairs))
    (root / "t.fr").write_text("".join(" ".join(t) + "\n" for _, t in pairs))
    return root


def train_args(data, model):
    return ["train", "--src", data / "t.en", "--tgt", data / "t.fr", "--model", model, "--hidden", "16",
            "--emb-dim", "8", "--epochs", "3", "--batch-tokens", "300", "--save-every", "1", "--threads", "1",
            "--quiet"]


def test_killed_training_resumes_to_the_same_weights(data):
    t0 = time.perf_counter()
    full = run(*train_args(data, data / "full"))
    wall = time.perf_counter() - t0
    assert full.returncode == 0, full.stderr
    want = load_checkpoint(data / "full" / "forward.pt")["state_dict"]
    rnd = random.Random(0)
    for seed in range(3):
        model = data / f"killed{seed}"
        killed_at(train_args(data, model), rnd.uniform(0.3, 1.0) * wall)
        resumed = (model / "config.json").exists()
        again = run(*train_args(data, model), *(["--resume"] if resumed else []))
        assert again.returncode == 0, again.stderr
        got = load_checkpoint(model / "forward.pt")["state_dict"]
        assert all(torch.equal(want[k], got[k]) for k in want), f"seed {seed} (resumed: {resumed})"
        assert strays(model) == []


def test_killed_align_keeps_the_old_output_and_a_rerun_completes(data):
    assert run(*train_args(data, data / "m")).returncode == 0
    out = data / "out.align"
    args = ["align", "corpus", "--model", data / "m", "--src", data / "t.en", "--tgt", data / "t.fr",
            "-o", out, "--threads", "1", "--quiet"]
    t0 = time.perf_counter()
    assert run(*args).returncode == 0
    wall = time.perf_counter() - t0
    want = out.read_text()
    rnd = random.Random(1)
    for _ in range(2):
        out.write_text("OLD\n")
        killed_at(args, rnd.uniform(0.3, 1.0) * wall)
        assert out.read_text() in ("OLD\n", want)  # whole or not at all
        assert run(*args).returncode == 0 and out.read_text() == want
        assert strays(out) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children found through /proc")
def test_killed_parallel_training_leaves_no_process_and_resumes_to_the_same_weights(data):
    args = [*train_args(data, data / "pfull"), "--direction", "both", "--parallel-directions", "on",
            "--threads", "2", "--epochs", "2"]
    t0 = time.perf_counter()
    full = run(*args)
    wall = time.perf_counter() - t0
    assert full.returncode == 0, full.stderr
    model = data / "pkilled"
    args = [a if a != data / "pfull" else model for a in args]
    p = subprocess.Popen(cli(*args), env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 2 * wall + 30
    kids = []
    while len(kids) < 2 and p.poll() is None and time.time() < deadline:  # until both directions run
        time.sleep(0.05)
        kids = [k for k in children(p.pid) if running(k)]
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.time() + 120  # the event: they end (a bound against a hang, not a timing)
    while any(running(k) for k in kids) and time.time() < deadline:
        time.sleep(0.1)
    assert kids and not any(running(k) for k in kids)  # the directions' processes died with it
    again = run(*args, *(["--resume"] if (model / "config.json").exists() else []))
    assert again.returncode == 0, again.stderr
    for d in ("forward", "reverse"):
        want = load_checkpoint(data / "pfull" / f"{d}.pt")["state_dict"]
        got = load_checkpoint(model / f"{d}.pt")["state_dict"]
        assert all(torch.equal(want[k], got[k]) for k in want), d
    assert strays(model) == []


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_terminated_run_cleans_up_and_keeps_the_old_output(tmp_path, sig):
    """SIGTERM and SIGHUP end a run as Ctrl-C does: exit 130, the old output kept, no temporary file."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr") * 20  # time to be interrupted
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    out = write(tmp_path / "old.align", "0-0\n")
    # FORCE_COLOR: the progress display draws on the pipe too, so its first line says the passes began
    p = subprocess.Popen([sys.executable, "-m", "attnalign", "align", "statistical", "--src", str(src),
                          "--tgt", str(tgt), "-o", str(out)], stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1", "FORCE_COLOR": "1"})
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: p.stderr.read(1), "")), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while "pairs/s" not in "".join(seen) and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)  # waiting for the readiness line: the aligner's passes have begun
    p.send_signal(getattr(signal, sig))
    p.wait(timeout=60)
    reader.join(timeout=10)
    err = "".join(seen)
    assert p.returncode == 130, err[-2000:]
    assert f"stopped by {sig}" in err and "Traceback" not in err
    assert out.read_text() == "0-0\n" and not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*"))


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler of its own for SIGTERM (Linux /proc: SigCgt's bit 15)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        mask = next(x for x in status if x.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(mask.split()[1], 16) & (1 << 14))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sigterm_while_the_command_line_loads_is_an_interruption():
    """The handler is in place before the command line's imports (numpy, numba, Typer: about a second):
    a SIGTERM sent as soon as the process catches it is exit 130 with one line, not 143 or a traceback."""
    import signal
    import subprocess

    for _ in range(3):  # a run that ended before the signal reached it (a descheduled test) goes again
        p = subprocess.Popen([sys.executable, "-m", "attnalign", "score", str(SAMPLE / "test.gold.naacl"),
                              str(SAMPLE / "test.diagonal.align")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        while not _catches_sigterm(p.pid) and p.poll() is None:  # the event: its handler is installed
            pass
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=300)
        if p.returncode != 0:
            break
    assert p.returncode == 130, (p.returncode, err[-2000:])
    assert err.strip() == "interrupted: stopped by SIGTERM: no output was written", err[-2000:]


def test_a_signal_inside_a_compiled_loop_is_an_interruption():
    """numba reports a signal that lands in its code as a SystemError (one per compiled frame) caused
    by the handler's KeyboardInterrupt: that is Ctrl-C, exit 130, not a traceback."""
    from attnalign.cli.common import interruption

    stop = KeyboardInterrupt("stopped by SIGHUP")
    inner = SystemError("_numba_unpickle returned a result with an exception set")
    inner.__cause__ = stop
    outer = SystemError("CPUDispatcher(hmm_posteriors) returned a result with an exception set")
    outer.__cause__ = inner
    assert interruption(outer) is stop and interruption(stop) is stop
    assert interruption(SystemError("a real bug")) is None and interruption(ValueError()) is None
