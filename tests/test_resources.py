"""Every run ends and stays within the machine: a stream without an end is read only as far as the
command needs it, and copied for a second reading only while the disk keeps a margin free; a file that
never opens (a FIFO no one writes) is not waited on; a lack of memory is one `error:` line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest
from helpers import ROOT, SAMPLE, invoke, npy_bytes, one_error, write

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


def test_a_huge_naacl_sentence_id_is_an_error_not_a_memory_error(tmp_path):
    gold = write(tmp_path / "g.naacl", "100000000 1 1 S\n")
    one_error(invoke("score", gold, gold), 1, "sentence 100000000", str(gold))


def test_a_corpus_left_empty_by_max_length_is_one_error_not_an_endless_run(texts, tmp_path):
    src, tgt = texts
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "x", "--max-length", "1",
               "--epochs", "1", "--hidden", "16", "--emb-dim", "8")
    one_error(r, 1, "longer than --max-length 1", "nothing is left to train on")
    assert not (tmp_path / "x").exists()


def test_too_few_resamples_are_refused_and_an_interval_holds_its_estimate(tmp_path):
    from attnalign.eval.metrics import Counts
    from attnalign.eval.significance import intervals, paired_test

    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--confidence",
               "--samples", "3")
    one_error(r, 2, "--samples")
    # two sentences, two resamples that both drop the better one: the percentiles alone leave the score out
    per = [Counts(2, 2, 2, 2, 2, 1), Counts(2, 2, 2, 0, 0, 1)]
    weights = np.array([[0, 2], [0, 2]])
    iv = intervals(per, weights)["aer"]
    assert iv.low <= 0.5 <= iv.high  # the corpus AER: 1 - 4/8
    test = paired_test(per, [Counts(2, 2, 2, 2, 2, 1), Counts(2, 2, 2, 2, 2, 1)], weights)
    assert test.interval.low <= test.delta <= test.interval.high


def test_resamples_are_drawn_in_blocks_of_bounded_memory(monkeypatch):
    from attnalign.eval import significance
    from attnalign.eval.metrics import Counts

    b = significance.Bootstrap(300, 7)
    monkeypatch.setattr(significance, "BLOCK_BYTES", 8 * 50 * 40)  # 40 resamples of 50 sentences a block
    blocks = list(b.blocks(50))
    assert len(blocks) == 8 and np.array_equal(np.concatenate(blocks), b.weights(50))  # the same numbers
    assert isinstance(b.resamples(50), significance.Bootstrap)  # too big for one block: drawn in blocks
    per = [Counts(k % 3, 2, 3, k % 2, k % 3, 1) for k in range(50)]
    assert significance.intervals(per, b) == significance.intervals(per, b.weights(50))


def test_an_attention_file_entry_that_inflates_past_any_pair_is_refused_unread(tmp_path):
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.npy", npy_bytes(np.array(json.dumps({"model": "m"}))))
        # 309 MiB of zeros, deflated
        z.writestr("att_0.npy", npy_bytes(np.zeros((9000, 9000), dtype=np.float32)))
        z.writestr("src_0.npy", npy_bytes(np.array(["a"])))
        z.writestr("tgt_0.npy", npy_bytes(np.array(["b"])))
        z.writestr("eos_0.npy", npy_bytes(np.zeros(9000, dtype=np.float32)))
    assert path.stat().st_size < 2 << 20
    r = invoke("plot", "sentence", "--attention", path, "--index", "0", "-o", tmp_path / "x.png")
    one_error(r, 1, "more than any entry of it holds")


def test_a_report_reads_a_saved_attention_file_once_not_once_a_sentence(models, tmp_path, monkeypatch):
    # opening the file checks every entry of it: opened for each of 447 sentences, the work was quadratic
    import attnalign.data.attnfile as attnfile

    att = tmp_path / "a.npz"
    r = invoke("align", "corpus", "--model", models / "rnn", *TEXT, "--save-attention", att, "--quiet", "-o",
               tmp_path / "o")
    assert r.exit_code == 0, r.output
    opened = []
    real = attnfile.open_attention
    monkeypatch.setattr(attnfile, "open_attention", lambda path: opened.append(path) or real(path))
    r = invoke("report", "--attention", att, "--gold", GOLD, "-o", tmp_path / "rep", "--gallery", "1")
    assert r.exit_code == 0, r.output
    # the gold's pairs, the sweep, one a gallery picture: a handful, not one a sentence (200 here)
    assert 1 <= len(opened) <= 8
