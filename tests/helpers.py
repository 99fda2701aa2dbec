"""Test helpers: paths to the project's sample data and the optional shared benchmark data."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"
SHARED = ROOT.parent / "shared" / "data"
TEST_TEXT = ["--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr"]  # the sample gold's text


def invoke(*args, **kw):
    """Run the attnalign command line in this process with ``args`` (any objects, as strings): Click's
    result, stdout and stderr apart."""
    from typer.testing import CliRunner

    from attnalign.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], **kw)


def one_error(r, code: int | tuple[int, ...], *needles: str) -> None:
    """A run of :func:`invoke` that failed as promised: exit ``code`` (or one of them), one error line
    (after any warnings; Typer's own usage errors say "Error:") on stderr, no traceback, the needles
    said."""
    assert r.exit_code in (code if isinstance(code, tuple) else (code,)), (r.exit_code, r.output)
    lines = r.stderr.lower().splitlines()
    assert sum(x.startswith("error:") for x in lines) == 1 and "Traceback" not in r.output, r.output
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def tiny(**kw):
    """Training options for a network small enough to train in a second: 2 passes, seed 3 (``kw``
    overrides)."""
    from attnalign.training import TrainOptions

    base = dict(hidden=16, emb_dim=8, epochs=2, batch_tokens=300, seed=3)
    return TrainOptions.of(**{**base, **kw})


def shared_or_skip(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with a reason when it is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared benchmark data not found: {p} (only present on the team's machines)")
    return p


def sample_texts(folder: Path, n: int) -> tuple[Path, Path]:
    """The first ``n`` sample training pairs as two line-parallel files in ``folder``."""
    lines = [(SAMPLE / f"train.{side}").read_text(encoding="utf-8").splitlines(True)[:n]
             for side in ("en", "fr")]
    return write(folder / "t.en", "".join(lines[0])), write(folder / "t.fr", "".join(lines[1]))


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` and its bytes (to show that a run left a folder as it was)."""
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def npy_bytes(array) -> bytes:
    """``array`` as the bytes of a ``.npy`` file (an entry of a hand-made ``.npz``)."""
    import io

    import numpy as np

    f = io.BytesIO()
    np.lib.format.write_array(f, np.asarray(array))
    return f.getvalue()


def bomb_npz(path: Path, name: str, shape=(1 << 20, 1 << 20)) -> Path:
    """An .npz whose entry ``name`` declares ``shape`` float32 but holds 16 bytes."""
    import io
    import json
    import zipfile

    import numpy as np

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("meta.npy", npy_bytes(np.array(json.dumps({"model": "m"}))))
        z.writestr(name + ".npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + bytes(16))
    return path


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class StubRun:
    """A direction's run for :func:`attnalign.training.parallel.train_in_processes` that fails as told
    inside its worker: ``"kill"`` (SIGKILL, as the out-of-memory killer does), ``"raise"`` (a bug),
    ``"refuse"`` (an error the user can fix) or ``"sleep"`` (it never ends). Importable in the worker when
    the tests folder is on its PYTHONPATH."""

    def __init__(self, direction: str, how: str):
        self.direction, self.how = direction, how

    def train(self, dev, resume, reporter) -> dict:
        import os
        import signal
        import time

        from attnalign.errors import AttnAlignError

        if self.how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.how == "raise":
            raise ValueError("broken at start")
        if self.how == "refuse":
            raise AttnAlignError("this run cannot go on", hint="fix it")
        time.sleep(300)
        return {}


def check_report(out):
    """A report folder's links resolve, its images are drawn and its tables add up; its page and scores."""
    import re

    import matplotlib.image as mpimg
    import pandas as pd

    page = (out / "index.html").read_text()
    refs = {r.split("#")[0] for r in re.findall(r'(?:href|src)="([^"]+)"', page)}  # a file, not its anchor
    assert refs and all((out / r).is_file() for r in refs), [r for r in refs if not (out / r).is_file()]
    assert not any(r.startswith(("http:", "https:", "/")) for r in refs)  # no network, no absolute paths
    for r in refs:
        if r.endswith(".png"):
            img = mpimg.imread(out / r)
            assert img.shape[0] > 100 and img[..., :3].std() > 0.02
    scores = pd.read_csv(out / "scores.csv")
    assert scores.best.sum() == 1
    best = scores[scores.best].iloc[0]
    assert best.aer == scores.aer.min()
    per = pd.read_csv(out / "per_sentence.csv")
    by_len = pd.read_csv(out / "by_length.csv")
    for col in ("links", "sure", "possible", "hits_sure", "hits_possible"):
        assert per[col].sum() == best[col] == by_len[col].sum(), col
    assert by_len.sentences.sum() == len(per) == best.sentences
    wrong = pd.read_csv(out / "wrong_pairs.csv")
    assert wrong["count"].is_monotonic_decreasing
    assert wrong["count"].sum() <= best.links - best.hits_possible  # wrong links, the top ones
    return page, scores


class Kill(Exception):
    """Raised by a test's reporter to stop a training run at a chosen step."""


def before_teacher_options(train_options: dict) -> None:
    """Make a recorded ``train_options`` look as a run from before --guide-prefix and --guide-identical
    recorded it: the teacher's other options flat (``guide_*``), those two absent."""
    old = train_options.pop("teacher")
    train_options.update({f"guide_{k}": v for k, v in old.items() if k not in ("prefix", "identical")})


def tuning_json() -> dict:
    """A blend.json as align corpus --tune-gold writes it, whose best the paired test prefers."""
    from attnalign.combine import Tuning
    from attnalign.decoding import TEACHER_DECODING, Decoding
    from attnalign.eval.significance import Interval, PairedResult

    best = Decoding("soft", "threshold", 0.35, 0.8)
    tuning = Tuning("g", 40, [(best, 0.05), (TEACHER_DECODING, 0.07)], TEACHER_DECODING, 0.07, best,
                    PairedResult(-0.02, Interval(-0.03, -0.01), 0.004))
    assert tuning.chosen == best
    return tuning.as_json()


def edit(data: dict, path: str, value) -> dict:
    """``data`` with the value at ``path`` (keys and list indices joined by dots) replaced, or removed
    where ``value`` is ``...``."""
    *head, last = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = data
    for k in head:
        node = node[k]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return data
