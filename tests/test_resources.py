"""Every run ends and stays within the machine: a stream without an end is read only as far as the
command needs it, and copied for a second reading only while the disk keeps a margin free; a file that
never opens (a FIFO no one writes) is not waited on; a lack of memory is one `error:` line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import tracemalloc

import pytest
from helpers import ROOT, SAMPLE

from attnalign.data import corpus as corpus_mod
from attnalign.errors import CorpusError

GOLD = SAMPLE / "test.gold.naacl"
TEXT = ["--src", str(SAMPLE / "test.en"), "--tgt", str(SAMPLE / "test.fr")]


def test_a_stream_that_stays_open_after_the_lines_wanted_is_not_waited_on():
    """A prediction's 200 lines, then a stream that neither writes nor ends: score reads the 200 and is
    done (the event: it exits while the writer still holds the stream open)."""
    p = subprocess.Popen([sys.executable, "-m", "attnalign", "score", str(GOLD), "-"], cwd=ROOT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(b"0-0\n" * 200)
    p.stdin.flush()
    try:
        p.wait(timeout=300)  # stdin stays open: only a reader that stops ends (the table fits the pipe)
    finally:
        p.kill()
        p.stdin.close()
    out, err = p.stdout.read(), p.stderr.read()
    assert p.returncode == 0 and b" 200 " in out, err[-2000:]


def test_a_pipe_is_read_with_flat_memory(tmp_path):
    """20 MB through a FIFO: counted and read again (as align corpus does) without holding it in memory."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    line, n = b"the red car is in the garden near the old house .\n", 400_000

    def feed():
        with open(fifo, "wb") as f:
            for _ in range(n // 1000):
                f.write(line * 1000)

    threading.Thread(target=feed, daemon=True).start()
    tracemalloc.start()
    try:
        assert corpus_mod.count_lines(fifo) == n
        assert sum(1 for _ in corpus_mod.read_lines(fifo)) == n
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak  # the pipe held 20 MB


def test_an_endless_line_stops_at_the_line_bound():
    r = subprocess.run([sys.executable, "-m", "attnalign", "score", str(GOLD), "/dev/zero"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "no newline in 64 MiB" in r.stderr and "Traceback" not in r.stderr


def endless(command: str, tmp_path) -> subprocess.CompletedProcess:
    """``yes 0-0 | attnalign COMMAND``, with its temporary files in ``tmp_path``."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.run(f"yes 0-0 | {sys.executable} -m attnalign {command}", shell=True, cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("command", [
    f"score {GOLD} -",
    f"plot sentence --pred - {' '.join(TEXT)} --gold {GOLD} --index 3 -o {{tmp}}/p.png",
    f"report --pred - {' '.join(TEXT)} --gold {GOLD} -o {{tmp}}/rep",
])
def test_a_reader_that_needs_n_lines_of_an_endless_stream_reads_them_and_stops(command, tmp_path):
    r = endless(command.format(tmp=tmp_path), tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    copied = sum(p.stat().st_size for p in tmp_path.glob("attnalign-pipe-*"))
    assert copied < 8 << 20  # a block or a few, not the stream (the copy is gone at exit in any case)
    if command.startswith("score"):
        assert " 200 │" in r.stdout  # the gold's 200 sentences scored


class Endless(io.RawIOBase):
    """A stream of corpus lines without an end."""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        line = b"the red car ||| la voiture rouge\n"
        data = line * (len(b) // len(line))
        b[:len(data)] = data
        return len(data)


def test_a_stream_read_twice_is_copied_only_while_the_disk_keeps_its_margin(monkeypatch, tmp_path):
    """A corpus on stdin is copied to be read again; where the disk would pass its margin (here: after
    16 MiB) the copy stops with one error that says how much it copied and to give a file."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(corpus_mod, "_room", lambda folder: (16 << 20) - sum(
        p.stat().st_size for p in tmp_path.glob("attnalign-pipe-*")))
    stdin = io.TextIOWrapper(io.BufferedReader(Endless()))
    monkeypatch.setattr(sys, "stdin", stdin)
    with pytest.raises(CorpusError) as e:
        corpus_mod.open_corpus(corpus="-")
    said = str(e.value)
    assert "copied 16 MiB of the stream" in said and "give the input as a file" in said
    assert sum(p.stat().st_size for p in tmp_path.glob("attnalign-pipe-*")) <= 16 << 20


def limited(mib: int):
    """A ``preexec_fn`` that limits the child's address space to ``mib`` MiB (``ulimit -v``)."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="address-space limits as Linux has them")
@pytest.mark.parametrize(("mib", "command", "fits"), [
    (3000, ["train", "--src", str(SAMPLE / "dev.en"), "--tgt", str(SAMPLE / "dev.fr"), "--hidden", "6000",
            "--emb-dim", "6000", "--epochs", "1", "--quiet", "--model", "{tmp}/m"], False),  # allocator
    (600, ["align", "statistical", *TEXT], None),  # threads whose start would abort the process: one
    (300, ["score", str(GOLD), str(SAMPLE / "test.diagonal.align")], None),  # libraries that may not load
    (150, ["align", "statistical", *TEXT], False),
])
def test_out_of_memory_is_one_error_line_never_an_abort(mib, command, fits, tmp_path):
    """Under a memory limit a run either fits or ends with one `error: out of memory` line and exit 1:
    never a traceback, nor an abort of the C library (exit 127 or 134, no message of ours)."""
    r = subprocess.run([sys.executable, "-m", "attnalign", *(c.format(tmp=tmp_path) for c in command)],
                       capture_output=True, text=True, preexec_fn=limited(mib), timeout=600)
    assert r.returncode in ((1,) if fits is False else (0, 1)), (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    if r.returncode == 1:
        errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
        assert len(errors) == 1 and "out of memory" in errors[0] and "hint:" in r.stderr, r.stderr[-2000:]
