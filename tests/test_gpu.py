"""Every command on a CUDA GPU, and models moving between the GPU and the CPU (``pytest -m gpu`` on a
machine with one). Without a GPU these tests skip, saying so; the CPU-side checks of the same code paths
(the loader, the torchrun GPU count) run everywhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import SAMPLE, invoke

from attnalign import dist
from attnalign.errors import OptionError


def _gpu() -> bool:
    import torch

    return torch.cuda.is_available()


needs_gpu = pytest.mark.skipif(not _gpu(),
                               reason="torch sees no CUDA GPU: run pytest -m gpu on a GPU machine")


def test_more_torchrun_processes_than_gpus_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(OptionError) as e:
        dist.process_gpu(visible=1)
    assert "torch sees 1 CUDA GPU " in str(e.value) and "--nproc-per-node 1" in str(e.value)
    assert "--device cpu" in str(e.value)
    assert dist.process_gpu(visible=2) == "cuda:1"


def test_a_checkpoint_loads_on_the_cpu_whatever_the_device(models, monkeypatch):
    """The checkpoint (vocabularies, sentencepiece protos) is read on the CPU and only the network moves:
    a GPU-trained model aligns on a CPU-only machine, and a CUDA device never meets NumPy."""
    import attnalign.nmt.checkpoint as ck

    seen = []
    real = ck.load_checkpoint
    monkeypatch.setattr(ck, "load_checkpoint", lambda path, **kw: seen.append(kw) or real(path, **kw))
    lm = ck.load_model(models / "rnn", "forward", "cpu")
    assert seen == [{}] and next(lm.model.parameters()).device.type == "cpu"


def _cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attnalign", *map(str, args)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def gpu_model(tmp_path_factory):
    """A subword model with the teacher, trained on the GPU (the preset's kind of model, small)."""
    d = tmp_path_factory.mktemp("gpu")
    r = _cli("train", "--src", SAMPLE / "train.en", "--tgt", SAMPLE / "train.fr", "--preset", "align-fast",
             "--epochs", "1", "--hidden", "32", "--emb-dim", "16", "--subword", "300", "--device", "cuda",
             "--model", d / "m", "--quiet")
    assert r.returncode == 0, r.stderr[-3000:]
    return d / "m"


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("device", ["cuda", "auto", "cpu"])
def test_align_corpus_on_each_device_gives_the_same_links(gpu_model, tmp_path, device):
    out = tmp_path / f"{device}.align"
    r = invoke("align", "corpus", "--model", gpu_model, "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "-o", out, "--device", device, "--teacher", "off", "--quiet")
    assert r.exit_code == 0, r.stderr
    ref = tmp_path / "ref.align"
    invoke("align", "corpus", "--model", gpu_model, "--src", SAMPLE / "test.en", "--tgt",
           SAMPLE / "test.fr", "-o", ref, "--device", "cpu", "--teacher", "off", "--quiet")
    a, b = out.read_text().splitlines(), ref.read_text().splitlines()
    assert len(a) == 200 and sum(x == y for x, y in zip(a, b, strict=True)) >= 195  # float rounding


@pytest.mark.gpu
@needs_gpu
def test_every_command_runs_on_cuda(gpu_model, tmp_path):
    src, tgt, gold = SAMPLE / "test.en", SAMPLE / "test.fr", SAMPLE / "test.gold.naacl"
    runs = [
        ("align", "corpus", "--model", gpu_model, "--src", src, "--tgt", tgt, "-o", tmp_path / "d.align",
         "--save-attention", tmp_path / "a.npz", "--gold", gold),
        ("align", "sentence", "--model", gpu_model, "--src", "the red car .", "--tgt", "la voiture rouge ."),
        ("plot", "sentence", "--model", gpu_model, "--src", "the red car .", "--tgt", "la voiture rouge .",
         "-o", tmp_path / "p.png"),
        ("report", "--model", gpu_model, "--src", src, "--tgt", tgt, "--gold", gold, "-o", tmp_path / "r",
         "--gallery", "2"),
    ]
    for args in runs:
        r = invoke(*args, "--device", "cuda")
        assert r.exit_code == 0, (args[:2], r.stderr[-2000:])
    assert (tmp_path / "p.png").stat().st_size > 0 and (tmp_path / "r" / "index.html").exists()


@pytest.mark.gpu
@needs_gpu
def test_a_cpu_model_resumes_and_aligns_on_the_gpu(models, tmp_path):
    r = invoke("align", "corpus", "--model", models / "tf", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "-o", tmp_path / "tf.align", "--device", "cuda", "--sym", "none")
    assert r.exit_code == 0, r.stderr


@pytest.mark.gpu
@needs_gpu
def test_torchrun_with_one_process_per_gpu(tmp_path):
    import torch

    n = torch.cuda.device_count()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n + 1), "-m", "attnalign",
           "train", "--src", str(SAMPLE / "train.en"), "--tgt", str(SAMPLE / "train.fr"), "--epochs", "1",
           "--device", "cuda", "--model", str(tmp_path / "m"), "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and f"torch sees {n} CUDA GPU" in r.stderr
    # torchrun's launcher prints its own ChildFailedError traceback when a process fails; none of
    # attnalign's frames may appear (a process that failed with a traceback of its own would show them)
    frames = [line for line in r.stderr.splitlines() if line.lstrip().startswith('File "')]
    assert not [f for f in frames if "attnalign" in f], r.stderr[-3000:]
    cmd[cmd.index(str(n + 1))] = str(n)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.gpu
@needs_gpu
def test_hugging_face_model_on_cuda(tmp_path):
    pytest.importorskip("transformers")
    from hf_models import build_marian

    m = build_marian(tmp_path / "marian")
    r = invoke("align", "corpus", "--model", m, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "-o", tmp_path / "hf.align", "--device", "cuda")
    assert r.exit_code == 0, r.stderr
    assert len((tmp_path / "hf.align").read_text().splitlines()) == 200
