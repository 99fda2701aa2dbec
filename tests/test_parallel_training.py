"""Both directions trained at once (``--parallel-directions``): the same training as one direction
after the other with the same threads per direction, one progress display, errors and warnings from
the processes reach the caller."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import SAMPLE, StubRun, children, invoke, running, tiny

from attnalign.data.corpus import read_corpus
from attnalign.errors import AttnAlignError, OptionError
from attnalign.nmt.checkpoint import load_checkpoint
from attnalign.training import parallel as par
from attnalign.training import train
from attnalign.training.parallel import wanted


@pytest.fixture(scope="module")
def pairs():
    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:200]



class Recorder:
    def __init__(self):
        self.events = []

    def start(self, direction, total, done):
        self.events.append(("start", direction, total, done))

    def step(self, step, loss, tps):
        self.events.append(("step", step))

    def validation(self, row):
        self.events.append(("validation", row["direction"], row["epoch"]))

    def end(self):
        self.events.append(("end",))


def test_parallel_training_is_the_sequential_training_with_one_thread_each(tmp_path, pairs):
    rec = Recorder()
    both = train(pairs, tmp_path / "par", tiny(direction="both", parallel_directions="on", threads=2),
                 reporter=rec)
    one = train(pairs, tmp_path / "seq", tiny(direction="both", parallel_directions="off", threads=1))
    for d in ("forward", "reverse"):
        a = load_checkpoint(tmp_path / "par" / f"{d}.pt")
        b = load_checkpoint(tmp_path / "seq" / f"{d}.pt")
        assert a["step"] == b["step"] and a["src_vocab"] == b["src_vocab"]
        assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"]), d
        assert both["directions"][d]["steps"] == one["directions"][d]["steps"]
    assert list(both["directions"]) == ["forward", "reverse"]
    # one display for the two: a bar over both directions' steps, every epoch's line, one end
    total = sum(s["steps"] for s in both["directions"].values())
    assert rec.events[0] == ("start", "forward+reverse", total, 0)
    steps = [e[1] for e in rec.events if e[0] == "step"]
    assert steps == sorted(steps) and steps[-1] == total
    assert sorted(e[1:] for e in rec.events if e[0] == "validation") == [
        ("forward", 1), ("forward", 2), ("reverse", 1), ("reverse", 2)]
    assert rec.events[-1] == ("end",)
    log = (tmp_path / "par" / "log.csv").read_text().splitlines()
    assert len(log) == 5


def test_a_failing_direction_stops_the_run_with_its_error(tmp_path, pairs, monkeypatch):
    # the options' check refuses so large a rate; let through here, it makes a direction fail in its process
    from attnalign.training.options import Schedule

    check = Schedule.check
    monkeypatch.setattr(Schedule, "check", lambda self: check(replace(self, lr=None)))
    with pytest.raises(AttnAlignError, match="training loss became") as e:
        train(pairs, tmp_path / "m", tiny(direction="both", parallel_directions="on", threads=2, lr=1e30,
                                          epochs=1, label_smoothing=0.0))
    assert "--lr" in e.value.hint
    assert workers() == []  # the other direction's process was stopped


def workers() -> list[int]:
    """This process's living worker processes."""
    return [k for k in children(os.getpid()) if running(k)]


def test_a_process_that_cannot_start_gives_its_own_error(monkeypatch):
    def refuse(*a, **k):
        raise OSError("cannot start a process")

    monkeypatch.setattr(par.subprocess, "Popen", refuse)
    with pytest.raises(OSError, match="cannot start a process"):
        par.train_in_processes([(StubRun("forward", "sleep"), None), (StubRun("reverse", "sleep"), None)],
                               False, 1, None, lambda d: None)


@pytest.fixture
def stubs_importable(monkeypatch):
    """The workers can import tests/helpers.StubRun; the test fails instead of hanging: before the stub
    that sleeps 300 s would end by itself (so a run that ends proves it did not wait for it)."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))

    def hung(*_):
        raise TimeoutError("train_in_processes still waits for the worker that sleeps")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(240)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers found through /proc")
@pytest.mark.parametrize("how, error, message", [
    ("kill", AttnAlignError, "the process training the forward direction was killed by SIGKILL"),
    ("raise", RuntimeError, "training the forward direction failed:.*ValueError: broken at start"),
    ("refuse", AttnAlignError, "this run cannot go on"),
])
def test_a_worker_that_dies_or_fails_stops_the_run_and_the_other(stubs_importable, how, error, message):
    with pytest.raises(error, match=message):  # the other direction's worker would sleep for 300 s
        par.train_in_processes([(StubRun("forward", how), None), (StubRun("reverse", "sleep"), None)],
                               False, 1, None, lambda d: None)
    assert workers() == []  # the sleeper was stopped, not waited for


def test_warnings_from_the_processes_reach_the_caller(tmp_path, pairs):
    long_pairs = [*pairs, (["w"] * 400, ["v"] * 3)]
    with pytest.warns(UserWarning, match=r"1 of 201 training pairs are longer than --max-length 250"):
        train(long_pairs, tmp_path / "m",
              tiny(direction="both", parallel_directions="on", threads=2, epochs=1))


def test_when_auto_starts_processes(monkeypatch):
    cpu, gpu, both = torch.device("cpu"), torch.device("cuda"), ["forward", "reverse"]
    assert wanted("auto", both, cpu, 2, par.PARALLEL_MIN_PAIRS)
    assert not wanted("auto", both, cpu, 1, par.PARALLEL_MIN_PAIRS)  # one thread: nothing to share
    assert not wanted("auto", both, cpu, 2, par.PARALLEL_MIN_PAIRS - 1)  # start-up would cost more
    assert wanted("auto", both, gpu, 1, par.PARALLEL_MIN_PAIRS)  # one GPU, two processes share its idle time
    assert not wanted("auto", both, gpu, 2, par.PARALLEL_MIN_PAIRS - 1)
    assert not wanted("auto", ["forward"], cpu, 2, par.PARALLEL_MIN_PAIRS)
    assert not wanted("on", ["reverse"], cpu, 2, 10)
    assert wanted("on", both, cpu, 1, 10) and not wanted("off", both, cpu, 2, par.PARALLEL_MIN_PAIRS)
    assert par.threads_each(2) == 1 and par.threads_each(5) == 2 and par.threads_each(1) == 1
    monkeypatch.setenv("WORLD_SIZE", "2")  # under torchrun DDP trains the directions
    assert not wanted("auto", both, cpu, 2, par.PARALLEL_MIN_PAIRS)
    with pytest.raises(OptionError, match="torchrun"):
        wanted("on", both, cpu, 2, par.PARALLEL_MIN_PAIRS)


def test_cli_parallel_directions_option(tmp_path):
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--direction", "both", "--parallel-directions", "sometimes")
    assert r.exit_code == 2 and "--parallel-directions must be one of auto, on, off" in r.stderr
    assert not (tmp_path / "m").exists()
