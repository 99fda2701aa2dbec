"""Damaged or hostile .npz files (saved attention, kept teachers) are refused with one `error:` line, or for
a kept teacher a warning and a teacher trained again; a header that claims more data than its file holds
is caught before anything is allocated."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from helpers import one_error
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.data.attnfile import AttentionWriter
from attnalign.errors import AttnAlignError
from attnalign.statistical import teacher_file

runner = CliRunner()


def attention_file(path, matrix=None, extra: dict | None = None):
    with open(path, "wb") as f:
        w = AttentionWriter(f, {"model": "m", "sym": "none", "layer": None, "head": "mean", "shift": 0})
        m = np.array([[0.9, 0.1], [0.2, 0.8]], dtype=np.float32) if matrix is None else matrix
        w.add(0, ["a", "b"], ["x", "y"], m, np.array([0.0, 0.0], dtype=np.float32))
        for name, arr in (extra or {}).items():
            w._put(name, arr)
        w.close()
    return path


def bomb_npz(path, name: str, shape=(1 << 20, 1 << 20)):
    """An .npz whose entry ``name`` declares ``shape`` float32 but holds 16 bytes."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("meta.npy", _npy(np.array(json.dumps({"model": "m"}))))
        z.writestr(name + ".npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + bytes(16))
    return path


def _npy(arr) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array(b, arr)
    return b.getvalue()


def plot(path, *args):
    return runner.invoke(app, ["plot", "sentence", "--attention", str(path), "--index", "0", *args])


def test_a_sound_file_draws(tmp_path):
    r = plot(attention_file(tmp_path / "a.npz"), "--terminal")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("value", [np.nan, np.inf, -0.5, 7.0])
def test_weights_outside_zero_one(tmp_path, value):
    m = np.array([[value, 0.1], [0.2, 0.8]], dtype=np.float32)
    one_error(plot(attention_file(tmp_path / "a.npz", m), "--terminal"), (1, 2), "outside 0-1")


def test_an_entry_that_names_no_pair(tmp_path):
    path = attention_file(tmp_path / "a.npz", extra={"att_x": np.zeros((1, 1), dtype=np.float32)})
    r = runner.invoke(app, ["report", "--attention", str(path), "--gold", str(_gold(tmp_path)), "-o",
                            str(tmp_path / "rep")])
    one_error(r, (1, 2), "names no pair")


def _gold(tmp_path):
    (tmp_path / "g.align").write_text("0-0 1-1\n")
    return tmp_path / "g.align"


@pytest.mark.parametrize("shape", [(1 << 16, 1 << 16), (1 << 20, 1 << 20)])  # 16 GiB and 4 TiB claimed
def test_a_header_that_claims_more_than_the_file_holds(tmp_path, shape):
    one_error(plot(bomb_npz(tmp_path / "a.npz", "att_0", shape), "--terminal"), (1, 2), "the file is damaged")


def test_a_damaged_kept_teacher_is_trained_again_with_a_warning(tmp_path):
    bomb_npz(tmp_path / teacher_file.FILE, "cells")
    with pytest.warns(Warning, match="is damaged"):
        assert teacher_file.load_kept(tmp_path, {}) is None
    with pytest.raises(AttnAlignError, match="the file is damaged"):
        teacher_file.SavedTeacher(tmp_path / teacher_file.FILE)
    shapes = np.array([[2, -3]], dtype=np.int64)  # a negative shape
    np.savez(tmp_path / "neg.npz", cells=np.zeros(0, dtype=np.uint8), shapes=shapes,
             meta=np.array(json.dumps({"pairs": 1})))
    with pytest.raises(ValueError, match="not a teacher file"):
        teacher_file.SavedTeacher(tmp_path / "neg.npz")


def test_a_full_disk_while_saving_attention_is_one_error_line(models, tmp_path, monkeypatch):
    import errno

    from helpers import SAMPLE

    out = tmp_path / "att.npz"
    out.write_bytes(b"the old file")
    real = AttentionWriter._put
    calls = []

    def fills(self, name, arr):  # the disk is full after a few entries
        calls.append(name)
        if len(calls) > 6:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, name, arr)

    monkeypatch.setattr(AttentionWriter, "_put", fills)
    hits = []
    monkeypatch.setattr("sys.unraisablehook", hits.append)
    args = ["align", "corpus", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
            SAMPLE / "test.fr", "-o", tmp_path / "a.align", "--save-attention", out, "--quiet"]
    r = runner.invoke(app, [str(a) for a in args])
    import gc

    gc.collect()
    assert r.exit_code == 1, r.output
    assert r.stderr.startswith("error:") and "att.npz" in r.stderr and "Traceback" not in r.output
    assert out.read_bytes() == b"the old file" and not hits  # the old file kept; no destructor's traceback
