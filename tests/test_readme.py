"""The README's examples as a user types them: each command that reads the set-up command's model runs
on it, in a folder of the user's own, and exits 0 without an error line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT

MODEL = ROOT / "runs" / "sample"


def readme_commands() -> list[str]:
    """The one-line commands of the README's bash blocks (a backslash continues a line)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return [" ".join(line.split()) for b in blocks for line in b.replace("\\\n", " ").splitlines()
            if line.strip()]


def test_the_readme_names_commands_that_read_the_sample_model():
    reading = [c for c in readme_commands() if "--model runs/sample" in c]
    assert {c.split()[1] for c in reading} >= {"align", "plot", "report"}


@pytest.mark.parametrize("command", [c for c in readme_commands()
                                     if c.startswith("attnalign ") and "--model runs/sample" in c
                                     and not c.startswith("attnalign report")],
                         ids=lambda c: " ".join(c.split()[1:3]))
def test_a_readme_example_runs_on_the_set_up_commands_model(command, tmp_path):
    # the report's example is left to its own tests (it takes the longest and reads nothing else)
    if not (MODEL / "forward.pt").exists():
        pytest.skip(f"{MODEL} not found: it is made by the README's set-up command (CI runs it first)")
    (tmp_path / "runs").mkdir()
    shutil.copytree(MODEL, tmp_path / "runs" / "sample")  # the user's own copy: examples write beside it
    (tmp_path / "sample_data").symlink_to(ROOT / "sample_data")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "error:" not in r.stderr, (command, r.stderr[-2000:])
