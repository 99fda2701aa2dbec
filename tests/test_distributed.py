"""The statistical aligner under torchrun with 2 CPU processes (gloo): the expected counts summed across
processes give the single process's links; rank 0 writes one output in corpus order."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from helpers import SAMPLE

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}

pytestmark = pytest.mark.slow  # subprocesses and whole runs: pytest -m "not slow" leaves them out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(*args, procs: int = 2) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(procs),
           "--master-addr", "127.0.0.1", "--master-port", str(_free_port()), "-m", "attnalign",
           *map(str, args)]
    return subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300)


def _one(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attnalign", *map(str, args)], env=ENV, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("dist")
    src = (SAMPLE / "train.en").read_text(encoding="utf-8").splitlines()[:600]
    tgt = (SAMPLE / "train.fr").read_text(encoding="utf-8").splitlines()[:600]
    (d / "c.en").write_text("\n".join(src) + "\n", encoding="utf-8")
    (d / "c.fr").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    return d


def _links(path) -> list[set]:
    return [set(line.split()) for line in path.read_text().splitlines()]


def test_two_processes_sum_the_em_counts(corpus):
    # EM's counts are sums over pairs: two processes with a share each give the same model (the floats
    # summed in another order), so the same links
    args = ["align", "statistical", "--src", corpus / "c.en", "--tgt", corpus / "c.fr", "--aligner",
            "hmm-agree", "--quiet"]
    one = _one(*args, "-o", corpus / "one.align")
    two = _torchrun(*args, "-o", corpus / "two.align")
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = _links(corpus / "one.align"), _links(corpus / "two.align")
    assert len(b) == 600  # rank 0 wrote every pair, in corpus order
    assert sum(x == y for x, y in zip(a, b, strict=True)) >= 0.99 * len(a)
    assert two.stderr.count("aligned 600 pairs") == 1  # one report, from rank 0
    assert not list(corpus.glob("*.tmp"))


def test_two_processes_sample_the_default(corpus):
    # the sampler's count tables are synchronised once a sweep (each process sees the others' links of
    # the sweep before) and every process draws its own random numbers: close to one process, not equal
    args = ["align", "statistical", "--src", corpus / "c.en", "--tgt", corpus / "c.fr", "--quiet"]
    one = _one(*args, "-o", corpus / "one_default.align")
    two = _torchrun(*args, "-o", corpus / "two_default.align")
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = _links(corpus / "one_default.align"), _links(corpus / "two_default.align")
    assert one.returncode == 0, one.stderr[-3000:]
    assert len(b) == len(a) == 600
    shared = sum(len(x & y) for x, y in zip(a, b, strict=True))
    assert shared >= 0.9 * sum(map(len, a)), (shared, sum(map(len, a)), sum(map(len, b)))


def test_a_bad_input_ends_every_rank_with_its_error(corpus):
    (corpus / "short.fr").write_text("un\n", encoding="utf-8")
    r = _torchrun("align", "statistical", "--src", corpus / "c.en", "--tgt", corpus / "short.fr",
                  "-o", corpus / "bad.align", "--quiet")
    assert r.returncode != 0
    assert "error: the source and target files have different line counts" in r.stderr
    assert not (corpus / "bad.align").exists()


def test_training_with_two_processes(corpus, tmp_path):
    """DistributedDataParallel on gloo: each process takes every other batch (half the updates of one
    process per epoch), the guide is aligned by both and broadcast, rank 0 alone writes and reports."""
    import csv

    args = ["train", "--src", corpus / "c.en", "--tgt", corpus / "c.fr", "--hidden", "32", "--emb-dim", "16",
            "--epochs", "2", "--batch-tokens", "400", "--direction", "both", "--guide", "auto", "--quiet"]
    one = _one(*args, "--model", tmp_path / "one")
    two = _torchrun(*args, "--model", tmp_path / "two")
    assert one.returncode == 0, one.stderr[-3000:]
    assert two.returncode == 0, two.stderr[-3000:]
    assert two.stdout.count("Trained") == 1  # one summary, from rank 0

    def log(name):
        with open(tmp_path / name / "log.csv") as f:
            return list(csv.DictReader(f))

    a, b = log("one"), log("two")
    assert [r["direction"] for r in b] == ["forward", "forward", "reverse", "reverse"]  # written once
    per_epoch_one, per_epoch_two = int(a[0]["step"]), int(b[0]["step"])
    assert per_epoch_two == per_epoch_one // 2, (per_epoch_one, per_epoch_two)
    assert float(b[1]["train_loss"]) < float(b[0]["train_loss"])  # it learns
    r = _one("align", "corpus", "--model", tmp_path / "two", "--src", corpus / "c.en", "--tgt",
             corpus / "c.fr", "-o", tmp_path / "two.align", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    assert len((tmp_path / "two.align").read_text().splitlines()) == 600


def test_align_corpus_with_two_processes_writes_what_one_writes(models, tmp_path):
    # each process aligns half of every chunk; rank 0 gathers and writes in corpus order
    args = ["align", "corpus", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
            SAMPLE / "test.fr", "--quiet", "--gold", SAMPLE / "test.gold.naacl"]
    one = _one(*args, "-o", tmp_path / "one.align", "--save-attention", tmp_path / "one.npz")
    two = _torchrun(*args, "-o", tmp_path / "two.align", "--save-attention", tmp_path / "two.npz")
    assert one.returncode == 0, one.stderr[-2000:]
    assert two.returncode == 0, two.stderr[-3000:]
    assert (tmp_path / "two.align").read_text() == (tmp_path / "one.align").read_text()
    assert two.stdout.count("Alignment scores") == 1  # one score table, from rank 0
    import numpy as np

    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    assert sorted(a.files) == sorted(b.files)
    assert all(np.allclose(a[k], b[k], atol=1e-5) for k in a.files if k.startswith("att_"))
