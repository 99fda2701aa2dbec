"""The README's Python example as people run it: saved as a script without an ``if __name__ ==
"__main__":`` guard, and piped to ``python -``. The preset trains its two directions in worker processes;
they must not run the caller's script again (multiprocessing's spawn would)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT, SAMPLE, sample_texts

pytestmark = pytest.mark.slow  # subprocesses and whole runs: pytest -m "not slow" leaves them out


def readme_python() -> str:
    """The first ```python block of the README's "Python" section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Python\n"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def snippet_dir(tmp_path_factory):
    """A folder laid out like the repository for the snippet's relative paths, with 1,200 training pairs
    (enough for the preset to train the directions in two processes) and one pass."""
    d = tmp_path_factory.mktemp("snippet")
    (d / "sample_data").mkdir()
    src, tgt = sample_texts(d, 1200)
    shutil.move(src, d / "sample_data" / "train.en")
    shutil.move(tgt, d / "sample_data" / "train.fr")
    for name in ("test.en", "test.fr", "test.gold.naacl"):
        shutil.copy(SAMPLE / name, d / "sample_data" / name)
    code = readme_python()
    assert code.count('aa.preset_options("align")') == 1
    code = code.replace('aa.preset_options("align")', 'aa.preset_options("align", epochs=1)')
    # the snippet's last lines are expressions: print what they computed, to check it ran through
    code += ('\nprint("links", sum(len(p.links) for p in combined.align(test[:50])))\n'
             'print("aer", *(s.total.aer for s in paired.systems))\n')
    (d / "train.py").write_text(code)
    return d


def check(r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout.split("links")[-1].split()[0]) > 100  # the 50 pairs got their links
    blend, alone = map(float, r.stdout.split("aer")[-1].split())  # the files the example wrote, scored
    assert 0 <= blend < 0.5 and 0 <= alone < 0.5
    assert "interrupted training run" not in r.stderr


def test_the_readme_example_runs_as_a_script_without_a_main_guard(snippet_dir):
    shutil.rmtree(snippet_dir / "runs", ignore_errors=True)
    check(subprocess.run([sys.executable, "train.py"], cwd=snippet_dir, capture_output=True, text=True,
                         timeout=300))
    assert (snippet_dir / "runs" / "nb" / "reverse.pt").exists()  # both directions, in two processes


def test_the_readme_example_runs_from_stdin(snippet_dir):
    shutil.rmtree(snippet_dir / "runs", ignore_errors=True)
    check(subprocess.run([sys.executable, "-"], cwd=snippet_dir, capture_output=True, text=True,
                         timeout=300, input=(snippet_dir / "train.py").read_text()))
