"""`attnalign align statistical`: the built-in statistical aligner alone, from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.data.alignments import read_alignments
from attnalign.workflows.align_files import align_statistical_files

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"


def test_statistical_alignment_of_the_sample_test_set(tmp_path):
    out = tmp_path / "test.align"
    r = CliRunner().invoke(app, ["align", "statistical", "--src", str(SAMPLE / "test.en"),
                                 "--tgt", str(SAMPLE / "test.fr"), "-o", str(out),
                                 "--gold", str(SAMPLE / "test.gold.naacl")])
    assert r.exit_code == 0, r.output
    links, _ = read_alignments(out)
    assert len(links) == 200
    assert "aligned 200 pairs" in r.output and "AER" in r.output


def test_library_call_scores_against_the_gold(tmp_path):
    summary = align_statistical_files(src=SAMPLE / "test.en", tgt=SAMPLE / "test.fr", output=tmp_path / "a",
                                      model="hmm", sym="grow-diag-final-and", gold=SAMPLE / "test.gold.naacl")
    total = summary.report.systems[0].total
    assert summary.pairs == 200 and total.aer < 0.25  # 200 pairs only: a weak but real alignment
    assert summary.settings == {"aligner": "hmm", "sym": "grow-diag-final-and", "prefix": 5,
                                "identical": 1.0, "samplers": 1, "seed": 1}


def test_the_sampler_s_seed_changes_its_links_and_is_reported(tmp_path):
    """--seed reaches the fertility sampler: the same seed gives the same links, another seed others;
    the summary line names it; a negative seed is a usage error."""
    def run(seed: int, name: str):
        out = tmp_path / name
        r = CliRunner().invoke(app, ["align", "statistical", "--src", str(SAMPLE / "train.en"), "--tgt",
                                     str(SAMPLE / "train.fr"), "-o", str(out), "--aligner", "fertility",
                                     "--sym", "grow-diag-final-and", "--seed", str(seed)])
        assert r.exit_code == 0, r.output
        assert f"seed {seed})" in r.output
        return out.read_text()

    assert run(3, "a") == run(3, "b") != run(4, "c")
    r = CliRunner().invoke(app, ["align", "statistical", "--src", str(SAMPLE / "test.en"), "--tgt",
                                 str(SAMPLE / "test.fr"), "--seed", "-1"])
    assert r.exit_code == 2 and "--seed" in r.output


def test_the_guide_seed_is_the_teacher_s_and_old_models_read_as_seed_1():
    from attnalign.training import TrainOptions

    assert TrainOptions.from_saved({"teacher": {"seed": 5}}).teacher.aligner.seed == 5
    # models from before the option, and before the teacher was one record
    assert TrainOptions.from_saved({"guide_model": "hmm-agree+fertility"}).teacher.aligner.seed == 1
    assert TrainOptions.from_saved({"guide_seed": 9}).teacher.aligner.seed == 9


# Each option on a known-answer corpus (see test_statistical.py): its first pair aligns one way with the
# option on, the other way with it off; a negative value is refused by the option's range. The options
# act on the agreement HMMs (alone here; the default aligner unites their links with the fertility
# model's, which sees whole words).
OPTION_CASES = [
    ("--prefix", "maisonsb chatonsa\n" + "chaton vert\nmaison vert\nvert\n" * 4,
     "cat house\n" + "cat green\nhouse green\ngreen\n" * 4, (("5", "0-1 1-0"), ("0", "0-0 1-1"))),
    ("--identical", "anna vede boris\n" + "chat vert\nvede vert\nvert\n" * 4,
     "boris sees anna\n" + "cat green\nsees green\ngreen\n" * 4,
     (("5", "0-2 1-1 2-0"), ("0", "0-0 1-1 2-2"))),
]


@pytest.mark.parametrize(("option", "src_text", "tgt_text", "answers"), OPTION_CASES)
def test_teacher_options(tmp_path, option, src_text, tgt_text, answers):
    src, tgt = tmp_path / "a.src", tmp_path / "a.tgt"
    src.write_text(src_text)
    tgt.write_text(tgt_text)
    for value, first in answers:
        r = CliRunner().invoke(app, ["align", "statistical", "--src", str(src), "--tgt", str(tgt),
                                     "--aligner", "hmm-agree", option, value])
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[0] == first and f"{option[2:]} {value}" in r.stderr
    r = CliRunner().invoke(app, ["align", "statistical", "--src", str(src), "--tgt", str(tgt), option, "-1"])
    assert r.exit_code == 2 and option in r.output


def test_the_fertility_aligner_and_the_combined_default(tmp_path):
    src, tgt = tmp_path / "a.src", tmp_path / "a.tgt"
    src.write_text("a b\nb c\na c\n" * 10)
    tgt.write_text("x y\ny z\nx z\n" * 10)
    base = ["align", "statistical", "--src", str(src), "--tgt", str(tgt)]
    r = CliRunner().invoke(app, [*base, "--aligner", "fertility", "--sym", "intersection"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "0-0 1-1" and "(fertility, intersection" in r.stderr
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == "0-0 1-1"
    assert "(hmm-agree+fertility, posterior" in r.stderr
    r = CliRunner().invoke(app, [*base, "--aligner", "hmm-agree+fertility", "--sym", "grow-diag"])
    assert r.exit_code == 2 and "hmm-agree+fertility" in r.output and "use posterior" in r.output


def test_samplers_pool_chains_and_only_where_the_aligner_samples(tmp_path):
    src, tgt = tmp_path / "a.src", tmp_path / "a.tgt"
    src.write_text("a b\nb c\na c\n" * 10)
    tgt.write_text("x y\ny z\nx z\n" * 10)
    base = ["align", "statistical", "--src", str(src), "--tgt", str(tgt)]
    r = CliRunner().invoke(app, [*base, "--samplers", "3"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "0-0 1-1" and "samplers 3" in r.stderr
    for bad, message in ((["--samplers", "0"], "--samplers 0"),
                         (["--samplers", "2", "--aligner", "hmm"], "hmm does not sample")):
        r = CliRunner().invoke(app, [*base, *bad])
        assert r.exit_code == 2 and message in r.output, r.output


def test_errors_are_clear_and_keep_the_old_output(tmp_path):
    src, tgt, out = tmp_path / "a.src", tmp_path / "a.tgt", tmp_path / "old.align"
    src.write_text("a b\nc\n")
    tgt.write_text("x y\n")
    out.write_text("0-0\n")
    r = CliRunner().invoke(app, ["align", "statistical", "--src", str(src), "--tgt", str(tgt),
                                 "-o", str(out)])
    assert r.exit_code == 1 and "different line counts" in r.output
    assert out.read_text() == "0-0\n"
    r = CliRunner().invoke(app, ["align", "statistical", "--src", str(src), "--tgt", str(tgt),
                                 "--aligner", "ibm9"])
    assert r.exit_code == 2 and "ibm9" in r.output


def test_a_closed_pipe_ends_quietly():
    # `attnalign align statistical ... | head -1`: exit 0, no traceback, no error message
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "attnalign", "align", "statistical",
                          "--src", str(SAMPLE / "train.en"), "--tgt", str(SAMPLE / "train.fr")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().strip()
    p.stdout.close()  # 5,000 lines do not fit the pipe: the writer meets the closed end
    _, stderr = p.communicate(timeout=120)
    assert p.returncode == 0 and b"Traceback" not in stderr and b"error" not in stderr


def test_progress_reports_every_pass_in_order(tmp_path):
    seen = []
    align_statistical_files(src=SAMPLE / "test.en", tgt=SAMPLE / "test.fr", output=tmp_path / "a",
                            progress=lambda stage, step, done, total: seen.append((stage, step, done, total)))
    stages = list(dict.fromkeys(s for s, *_ in seen))
    # each model's two directions may train at once (two threads): each in order, side by side
    assert sorted(stages[:2]) == ["hmm-agree forward", "hmm-agree reverse"] and stages[2] == "hmm-agree"
    assert sorted(stages[3:5]) == ["fertility forward", "fertility reverse"] and stages[-1] == "links"
    def passes(stage: str, kind: str) -> list[int]:  # "IBM2 iteration 3/6" -> 3, in the order reported
        return [int(step.split()[-1].split("/")[0]) for s, step, *_ in seen if s == stage and kind in step]

    for name in ("forward", "reverse"):
        for stage, kind, last in ((f"hmm-agree {name}", "IBM2", 6), (f"fertility {name}", "IBM2", 5),
                                  (f"fertility {name}", "sweep", 40)):
            assert passes(stage, kind) == sorted(passes(stage, kind)) and passes(stage, kind)[-1] == last
    assert ("hmm-agree", "HMM iteration 5/5", 200, 200) in seen
    assert ("fertility reverse", "sweep 40/40", 200, 200) in seen
    assert seen[-1] == ("links", "decoding", 200, 200)
    assert all(0 < done <= total for *_, done, total in seen)


def test_running_out_of_memory_is_one_error_and_keeps_the_old_output(tmp_path, monkeypatch):
    from attnalign.workflows import align_files

    def no_memory(*args, **kw):
        raise MemoryError
        yield

    out = tmp_path / "old.align"
    out.write_text("0-0\n")
    monkeypatch.setattr(align_files, "iter_links", no_memory)
    r = CliRunner().invoke(app, ["align", "statistical", "--src", str(SAMPLE / "test.en"),
                                 "--tgt", str(SAMPLE / "test.fr"), "-o", str(out)])
    assert r.exit_code == 1
    assert "error: out of memory aligning 200 pairs" in r.output and "torchrun" in r.output
    assert out.read_text() == "0-0\n"


def test_threads_change_the_speed_not_the_links(tmp_path):
    """--threads N runs the compiled loops (the HMMs' forward-backward, the two fertility directions at
    once) on N cores; the links are the same on any number."""
    from attnalign.statistical import kernels

    runner = CliRunner()
    base = ["align", "statistical", "--src", str(SAMPLE / "test.en"), "--tgt", str(SAMPLE / "test.fr"),
            "--quiet"]
    one = runner.invoke(app, [*base, "--threads", "1", "-o", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    assert kernels.threads() == 1
    two = runner.invoke(app, [*base, "--threads", "2", "-o", str(tmp_path / "two")])
    assert two.exit_code == 0 and kernels.threads() == min(2, __import__("numba").config.NUMBA_NUM_THREADS)
    assert (tmp_path / "one").read_text() == (tmp_path / "two").read_text()
    bad = runner.invoke(app, [*base, "--threads", "0"])
    assert bad.exit_code == 2 and "--threads" in bad.output
    kernels.set_threads()
