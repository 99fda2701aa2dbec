"""Student + teacher at decoding time (``align corpus --teacher``): the teacher's soft matrices, their
blend with the attention, when ``auto`` combines, and the CLI option's effect."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import SAMPLE, before_teacher_options, invoke
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.combine import Combined, blend, combine_fitted, run_decoding, teacher_options
from attnalign.data.corpus import read_corpus
from attnalign.decoding import (
    TEACHER_DECODING,
    TEACHER_DECODING_FIXED,
    TEACHER_DECODING_LARGE,
    TEACHER_LARGE_PAIRS,
    TEACHER_MIN_PAIRS,
    Decoding,
    TeacherPlan,
    relative_links,
    teacher_decoding,
    threshold_links,
)
from attnalign.decoding.policy import TeacherFacts, choose_decoding, plan_teacher
from attnalign.errors import AttnAlignError, OptionError
from attnalign.nmt.aligner import Aligner, AlignOptions
from attnalign.statistical import COMBINED, SoftTeacher, directional_posteriors
from attnalign.training import TrainOptions, train


def test_blend_by_hand():
    s = np.array([[1.0, 0.0], [0.0, 1.0]])
    t = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert np.allclose(blend(s, t, 0.75), [[0.25, 0.75], [0.75, 0.25]])
    assert np.allclose(blend(s, t, 0.0), s) and np.allclose(blend(s, t, 1.0), t)
    with pytest.raises(ValueError, match="teacher"):
        blend(s, t[:1], 0.5)


PAIRS = [(["a", "b"], ["x", "y"]), (["a", "c"], ["x", "z"]), (["b", "c"], ["y", "z"]),
         (["a", "b", "c"], ["x", "y", "z"])] * 5


def test_soft_teacher_is_the_mean_of_both_directions_posteriors():
    teacher = SoftTeacher(PAIRS, "hmm-agree", prefix=0, identical=0.0)
    fwd, rev = directional_posteriors(PAIRS, "hmm-agree", prefix=0, identical=0.0)
    mats = teacher.matrices(2, 4)
    for k, m in zip((2, 3), mats, strict=True):
        T, S = len(PAIRS[k][1]), len(PAIRS[k][0])
        assert m.shape == (T, S)
        assert np.allclose(m, (fwd[k][:, :-1] + rev[k][:, :-1].T) / 2)
        assert (m.sum(axis=1) <= 1 + 1e-9).all()
    # the co-occurrence pattern is learnt: a<->x, b<->y, c<->z
    assert (mats[1].argmax(axis=1) == [0, 1, 2]).all()


def test_the_combined_teacher_averages_its_two_models():
    teacher = SoftTeacher(PAIRS)  # the default: hmm-agree (5-letter prefixes) + fertility (words)
    assert len(teacher.models) == 2 and teacher.pairs == len(PAIRS)
    agree = SoftTeacher(PAIRS, "hmm-agree")
    fert = SoftTeacher(PAIRS, "fertility", prefix=0)
    for m, a, f in zip(teacher.matrices(0, 4), agree.matrices(0, 4), fert.matrices(0, 4), strict=True):
        assert np.allclose(m, (a + f) / 2)
    with pytest.raises(ValueError, match="unknown statistical model"):
        SoftTeacher(PAIRS, "ibm9")
    assert COMBINED == "hmm-agree+fertility"


@pytest.fixture(scope="module")
def guided(tmp_path_factory):
    """A tiny bidirectional Transformer with an alignment head guided by the built-in teacher."""
    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:200]
    d = tmp_path_factory.mktemp("guided") / "m"
    train(pairs, d, TrainOptions.of(model_type="transformer", direction="both", epochs=1, batch_tokens=500,
                                    guide="auto", d_model=16, heads=2, ff_dim=32, enc_layers=1, dec_layers=2,
                                    align_head=True))
    return d, pairs


def test_the_teacher_plan_by_hand():
    """plan_teacher is a pure function of the options, the model and the facts gathered."""
    def plan(teacher="auto", corpus="auto", guided=True, launched=False, **facts):
        return plan_teacher(teacher, corpus, guided=guided, launched=launched,
                            facts=TeacherFacts(**{"pairs": 2000, **facts}))

    assert plan().source == "train" and plan().pairs == 2000 and not plan().warnings
    assert plan(teacher="off").source == plan(guided=False).source == plan(launched=True).source == "none"
    assert plan(teacher="on", guided=False).source == "train"  # on: any model
    assert plan(pairs=TEACHER_MIN_PAIRS - 1).source == "none"  # auto: too few pairs
    weak = plan(teacher="on", pairs=10)
    assert weak.source == "train" and "under 1000 pairs" in weak.warnings[0]
    # the kept teacher holds every pair: read, unless --teacher-corpus aligned
    assert plan(kept=5000) == TeacherPlan("kept", kept=5000)
    assert plan(corpus="aligned", kept=5000).source == "train"
    # the training corpus joins the new pairs; kept counts are gone on from where it is not read
    both = plan(recorded=300, training=300, added=1900, counts=300)
    assert (both.training, both.added, both.going_on, both.pairs) == (300, 1900, 0, 2200)
    on = plan(counts=300, recorded=300, problem="the model's training corpus (x) has changed since training")
    assert (on.going_on, on.pairs) == (300, 2300) and "going on from the counts" in on.warnings[0]
    assert plan(corpus="aligned", counts=300).going_on == 0
    with pytest.raises(OptionError, match="keeps no teacher counts"):
        plan(corpus="kept")
    with pytest.raises(AttnAlignError, match="has changed"):
        plan(corpus="training", recorded=300, problem="the model's training corpus (x) has changed")
    assert "trained on the model's 300 training pairs and 1,900" in both.describe()
    assert plan(teacher="off").describe() is None


def test_the_decoding_by_hand():
    given = Decoding()  # everything auto
    assert choose_decoding(given, both=True, head=True) == Decoding("soft", "argmax", 0.5)
    assert choose_decoding(given, both=True, head=False) == Decoding("grow-diag-final-and", "argmax", 0.5)
    assert choose_decoding(given, both=False, head=True) == Decoding("none", "argmax", 0.5)
    assert choose_decoding(given, both=True, head=True, teacher_pairs=10) == TEACHER_DECODING
    assert choose_decoding(given, both=True, head=True, teacher_pairs=TEACHER_LARGE_PAIRS) == \
        TEACHER_DECODING_LARGE
    assert choose_decoding(Decoding(teacher_weight=0.3), both=False, head=True, teacher_pairs=10) == \
        Decoding("none", "relative", 0.2, 0.3)
    tuned = Decoding("soft", "threshold", 0.3, 0.5)  # a blend the model directory keeps wins over auto
    assert choose_decoding(given, both=True, head=True, teacher_pairs=10, tuned=tuned) == tuned
    assert choose_decoding(Decoding(decoder="relative"), both=True, head=True, teacher_pairs=10,
                           tuned=tuned) == TEACHER_DECODING
    assert TEACHER_DECODING.describe() == "--sym soft --decoder relative --threshold 0.2 --teacher-weight 0.6"
    assert Decoding("soft", "argmax", 0.5).describe() == "--sym soft --decoder argmax"


def test_auto_combines_for_a_guided_model_on_a_large_enough_corpus(guided, models):
    from attnalign.combine import gather_teacher
    from attnalign.combine import guided as is_guided

    def source(model, pairs, teacher="auto"):  # the plan align corpus makes, without training its teacher
        meta = Aligner(model).meta
        facts = gather_teacher(model, meta, pairs, "auto", teacher_options(meta)).facts
        return plan_teacher(teacher, "auto", guided=is_guided(meta), launched=False, facts=facts).source

    d, pairs = guided
    new = [([*s, str(k)], [*t, str(k)]) for k, (s, t) in enumerate(pairs * 5)]  # 1000 pairs, none trained on
    assert source(d, pairs) == "none"  # the kept teacher learned from 200 pairs: too few for auto
    assert source(d, pairs, "on") == "kept"
    assert source(d, new) == "train"
    assert source(d, new, "off") == "none"
    assert source(d, new[:5], "on") == "train"
    assert source(models / "rnn", new) == "none"  # not guided: nothing to combine with
    assert teacher_options(Aligner(d).meta).model == COMBINED  # the guide's settings, from the model's config


def test_the_combination_is_the_blend_of_student_and_teacher_thresholded(guided):
    d, pairs = guided
    plain = Aligner(d, AlignOptions(teacher="off")).align_pairs(pairs[:3])
    combined = combine_fitted(Aligner(d, AlignOptions(teacher="on")), pairs)
    assert combined.decoding == TEACHER_DECODING
    assert combined.description["teacher"] == TEACHER_DECODING.teacher_weight
    out = list(combined.align(pairs))[:3]
    w, t = TEACHER_DECODING.teacher_weight, TEACHER_DECODING.threshold
    for k, (p, q) in enumerate(zip(plain, out, strict=True)):
        (teacher,) = combined.teacher.matrices(k, k + 1)
        expect = (1 - w) * (p.forward + p.reverse) / 2 + w * teacher
        assert np.allclose(q.matrix, expect)
        assert q.links == relative_links(expect, t)
        # the blends the links were read from: what --save-attention keeps
        assert np.allclose(q.forward, (1 - w) * p.forward + w * teacher)
        assert np.allclose(q.reverse, (1 - w) * p.reverse + w * teacher)
    # weight 1: the teacher's matrix alone decides
    only = combine_fitted(Aligner(d, AlignOptions(teacher="on", teacher_weight=1.0)), pairs)
    first = next(iter(only.align(pairs)))
    assert first.links == relative_links(only.teacher.matrices(0, 1)[0], t)
    # --decoder threshold alone: the fixed cut at its own point
    fixed = combine_fitted(Aligner(d, AlignOptions(teacher="on", decoder="threshold")), pairs)
    assert fixed.decoding == TEACHER_DECODING_FIXED == Decoding("soft", "threshold", 0.45, 0.9)
    q = next(iter(fixed.align(pairs)))
    assert q.links == threshold_links(q.matrix, 0.45)


def test_a_teacher_of_a_large_corpus_gets_more_of_the_student(guided):
    """From TEACHER_LARGE_PAIRS pairs (the teacher's corpus and the kept counts it went on from) "auto"
    blends with the large corpus's weight and threshold; given options still win."""
    d, pairs = guided
    small, large = TEACHER_LARGE_PAIRS - 1, TEACHER_LARGE_PAIRS
    assert teacher_decoding(small) == TEACHER_DECODING
    assert teacher_decoding(large) == Decoding("soft", "threshold", 0.4, 0.6)
    assert teacher_decoding(small, "threshold") == Decoding("soft", "threshold", 0.45, 0.9)
    assert teacher_decoding(large, "relative") == TEACHER_DECODING  # a decoder given keeps its point
    assert teacher_decoding(small, "argmax").decoder == "argmax"
    aligner = Aligner(d, AlignOptions(teacher="on"))
    teacher = combine_fitted(aligner, pairs[:50]).teacher
    plan = TeacherPlan("train", added=50, going_on=small - 50)
    assert run_decoding(aligner, plan) == TEACHER_DECODING
    plan = TeacherPlan("train", added=50, going_on=large - 50)
    combined = Combined(aligner, teacher, plan, run_decoding(aligner, plan))
    assert combined.decoding == TEACHER_DECODING_LARGE
    assert combined.description["teacher_pairs"] == large
    (student,) = aligner.extract(pairs[:1])
    s, t = next(iter(combined.align(pairs[:50]))), teacher.matrices(0, 1)[0]
    assert np.allclose(s.forward, 0.4 * student.forward + 0.6 * t)  # the blends the links are read from
    assert np.allclose(s.matrix, 0.4 * (student.forward + student.reverse) / 2 + 0.6 * t)
    given = Aligner(d, AlignOptions(teacher="on", teacher_weight=0.9, threshold=0.45))
    plan = TeacherPlan("train", added=50, going_on=large)
    assert (run_decoding(given, plan).teacher_weight, run_decoding(given, plan).threshold) == (0.9, 0.45)


def test_cli_teacher_option_changes_the_links(guided, tmp_path):
    d, _ = guided
    base = ["align", "corpus", "--model", str(d), "--src", str(SAMPLE / "test.en"), "--tgt",
            str(SAMPLE / "test.fr"), "--quiet"]
    runner = CliRunner()
    off = runner.invoke(app, [*base, "-o", str(tmp_path / "off.align"), "--teacher", "off"])
    on = runner.invoke(app, [*base, "-o", str(tmp_path / "on.align"), "--teacher", "on"])
    auto = runner.invoke(app, [*base, "-o", str(tmp_path / "auto.align")])
    assert off.exit_code == on.exit_code == auto.exit_code == 0, on.output
    assert f"teacher={TEACHER_DECODING.teacher_weight}" in on.stderr and "teacher=" not in off.stderr
    assert "under 1000 pairs" in on.stderr  # 200 test pairs: the teacher is weak, said so
    assert (tmp_path / "on.align").read_text() != (tmp_path / "off.align").read_text()
    assert (tmp_path / "auto.align").read_text() == (tmp_path / "off.align").read_text()  # < 1000 pairs
    bad = runner.invoke(app, [*base, "--teacher-weight", "1.5"])
    assert bad.exit_code == 2 and "error: --teacher-weight" in bad.stderr


@pytest.fixture()
def recorded(guided, tmp_path):
    """The guided model as ``attnalign train`` leaves it: its training files recorded in config.json."""
    import json
    import shutil

    from attnalign.data.corpus import pairs_fingerprint

    d, pairs = guided
    m = tmp_path / "m"
    shutil.copytree(d, m)
    for side, name in ((0, "train.en"), (1, "train.fr")):
        (tmp_path / name).write_text("".join(" ".join(p[side]) + "\n" for p in pairs), encoding="utf-8")
    config = json.loads((m / "config.json").read_text())
    assert config["data"]["fingerprint"] == pairs_fingerprint(pairs)
    config["data"]["files"] = {"src": str(tmp_path / "train.en"), "tgt": str(tmp_path / "train.fr")}
    (m / "config.json").write_text(json.dumps(config))
    return m, pairs


def test_teacher_corpus_adds_the_model_training_corpus(recorded, tmp_path):
    from attnalign.combine import gather_teacher
    from attnalign.data.corpus import open_corpus

    m, pairs = recorded
    meta = Aligner(m).meta
    test = open_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")
    found = gather_teacher(m, meta, test, "auto", teacher_options(meta))
    assert (found.facts.training, found.facts.added) == (len(pairs), len(test))
    assert found.joined.learned == len(found.joined.training) == len(pairs)
    assert gather_teacher(m, meta, test, "aligned", teacher_options(meta)).joined is None
    base = ["align", "corpus", "--model", str(m), "--src", str(SAMPLE / "test.en"), "--tgt",
            str(SAMPLE / "test.fr"), "--quiet", "--teacher", "on"]
    runner = CliRunner()
    both = runner.invoke(app, [*base, "-o", str(tmp_path / "both.align"), "--teacher-corpus", "training"])
    alone = runner.invoke(app, [*base, "-o", str(tmp_path / "alone.align"), "--teacher-corpus", "aligned"])
    assert both.exit_code == alone.exit_code == 0, both.output
    assert f"teacher_pairs={len(test) + len(pairs)}" in both.stderr
    assert f"teacher_pairs={len(test)}" in alone.stderr
    assert (tmp_path / "both.align").read_text() != (tmp_path / "alone.align").read_text()
    # a changed training file: training is an error
    (tmp_path / "train.fr").write_text("changed\n" * len(pairs), encoding="utf-8")
    changed = gather_teacher(m, meta, test, "training", teacher_options(meta))
    assert changed.joined is None and "has changed since training" in changed.facts.problem
    gone = runner.invoke(app, [*base, "--teacher-corpus", "training"])
    assert gone.exit_code == 1 and "error:" in gone.stderr and "has changed" in gone.stderr
    bad = runner.invoke(app, [*base, "--teacher-corpus", "everything"])
    assert bad.exit_code == 2


def test_a_recorded_training_file_that_is_now_a_fifo_is_not_waited_on(recorded, tmp_path):
    """--teacher-corpus auto reads the recorded files only where they are regular files: a FIFO that no
    one writes would block its open forever; it is the fallback of a moved file instead."""
    import os
    import threading

    from attnalign.combine import gather_teacher
    from attnalign.data.corpus import open_corpus

    m, _ = recorded
    (tmp_path / "train.fr").unlink()
    os.mkfifo(tmp_path / "train.fr")
    meta = Aligner(m).meta
    test = open_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")
    found = []
    t = threading.Thread(target=lambda: found.append(gather_teacher(m, meta, test, "auto",
                                                                    teacher_options(meta))), daemon=True)
    t.start()
    t.join(300)  # the event: it returns (before the fix it waited on the FIFO's open forever)
    if t.is_alive():
        with open(tmp_path / "train.fr", "wb"):  # release the blocked open
            pass
        pytest.fail("gather_teacher waited on a FIFO")
    assert found[0].joined is None and "no longer a regular file" in found[0].facts.problem


def test_on_new_pairs_the_teacher_goes_on_from_what_the_kept_teacher_learned(recorded, tmp_path, monkeypatch):
    """auto where the training files are gone (and kept): the teacher goes on from the training
    corpus's counts over the new pairs alone, and says so; kept without counts kept is an error."""
    import shutil

    import attnalign.statistical as statistical
    from attnalign.statistical import teacher_file

    m, pairs = recorded
    (tmp_path / "train.fr").unlink()
    base = ["align", "corpus", "--model", str(m), "--src", str(SAMPLE / "test.en"), "--tgt",
            str(SAMPLE / "test.fr"), "--quiet", "--teacher", "on"]
    seen = []
    real = statistical.SoftTeacher.__init__
    monkeypatch.setattr(statistical.SoftTeacher, "__init__", lambda self, pairs, *a, **k: seen.append(
        (len(list(pairs)), k.get("kept"))) or real(self, pairs, *a, **k))
    runner = CliRunner()
    auto = runner.invoke(app, [*base, "-o", str(tmp_path / "auto.align")])
    kept = runner.invoke(app, [*base, "-o", str(tmp_path / "kept.align"), "--teacher-corpus", "kept"])
    assert auto.exit_code == kept.exit_code == 0, auto.output
    assert "going on from the counts" in auto.stderr  # the warning that the files are gone says so
    assert [n for n, _ in seen] == [200, 200]
    assert all(k and set(k) == {"hmm-agree", "fertility"} for _, k in seen)
    assert f"teacher_pairs={200 + len(pairs)}" in auto.stderr
    assert (tmp_path / "auto.align").read_text() == (tmp_path / "kept.align").read_text()
    other = tmp_path / "other"
    shutil.copytree(m, other)
    old = teacher_file.SavedTeacher(other / teacher_file.FILE)  # a teacher file from before counts were kept
    old.kept = {}
    teacher_file.save_matrices(other / teacher_file.FILE, old, list(range(old.pairs)),
                               [tuple(s) for s in old._shapes], json.loads(json.dumps(old.meta)))
    r = runner.invoke(app, [str(other) if x == str(m) else x for x in base] + ["--teacher-corpus", "kept"])
    assert r.exit_code == 2 and "error:" in r.stderr and "keeps no teacher counts" in r.stderr


def test_the_teacher_is_trained_once_and_kept_in_the_model_directory(recorded, tmp_path, monkeypatch):
    """train --guide auto keeps its teacher's matrices of the training corpus; align corpus on that
    corpus reads them instead of training the teacher again, and links as a teacher trained anew does
    (up to the byte a kept weight is rounded to)."""
    import shutil

    import attnalign.statistical as statistical
    from attnalign.statistical import teacher_file

    m, pairs = recorded
    assert (m / teacher_file.FILE).is_file()
    kept = teacher_file.SavedTeacher(m / teacher_file.FILE)
    fresh = SoftTeacher(pairs)
    assert kept.pairs == len(pairs)
    for a, b in zip(kept.matrices(0, 20), fresh.matrices(0, 20), strict=True):
        assert a.shape == b.shape and np.abs(a - b).max() <= 0.5 / 255 + 1e-12
    base = ["align", "corpus", "--model", str(m), "--src", str(tmp_path / "train.en"), "--tgt",
            str(tmp_path / "train.fr"), "--quiet", "--teacher", "on"]
    runner = CliRunner()
    fits = []
    real = statistical.SoftTeacher.__init__
    monkeypatch.setattr(statistical.SoftTeacher, "__init__", lambda self, *a, **k: fits.append(1) or
                        real(self, *a, **k))
    r = runner.invoke(app, [*base, "-o", str(tmp_path / "kept.align")])
    assert r.exit_code == 0, r.output
    assert fits == [] and f"teacher_pairs={len(pairs)}" in r.stderr  # read, not trained
    other = tmp_path / "other"
    shutil.copytree(m, other)
    (other / teacher_file.FILE).unlink()  # as a model trained before teachers were kept
    r = runner.invoke(app, [*base[:3], str(other), *base[4:], "-o", str(tmp_path / "fresh.align")])
    assert r.exit_code == 0 and fits == [1]
    a = (tmp_path / "kept.align").read_text().splitlines()
    b = (tmp_path / "fresh.align").read_text().splitlines()
    assert sum(x == y for x, y in zip(a, b, strict=True)) >= 0.97 * len(a)
    # another teacher's options, or a damaged file: trained anew
    (m / teacher_file.FILE).write_bytes(b"not a zip")
    r = runner.invoke(app, [*base, "-o", str(tmp_path / "damaged.align")])
    assert r.exit_code == 0 and fits == [1, 1]


def test_an_old_guided_model_is_combined_with_the_teacher_that_guided_it(guided, tmp_path):
    # a model trained before --guide-prefix/--guide-identical existed: align's teacher is the one train
    # --resume would rebuild (whole words, no prior), not today's defaults
    import json
    import shutil

    from attnalign.statistical.options import TeacherOptions

    d, _ = guided
    old = tmp_path / "old"
    shutil.copytree(d, old)
    config = json.loads((old / "config.json").read_text())
    before_teacher_options(config["train_options"])
    (old / "config.json").write_text(json.dumps(config))
    resumed = TrainOptions.from_saved(config["train_options"]).teacher.aligner
    assert teacher_options(Aligner(old).meta) == resumed == TeacherOptions(COMBINED, "posterior", 0, 0.0)


def test_a_part_of_the_training_corpus_gets_the_links_of_the_whole(recorded, tmp_path):
    """Each pair counts once: aligning lines of the training corpus (in any order) gives them the links
    the whole corpus gives them, with the kept teacher read pair by pair or with one trained again, and
    the teacher's corpus is the training corpus, not the training corpus plus the lines again."""
    m, pairs = recorded
    runner = CliRunner()
    picked = [*range(150, 100, -1), 7, 7]  # backwards, one line twice
    for name, k in (("part.en", 0), ("part.fr", 1)):
        (tmp_path / name).write_text("".join(" ".join(pairs[j][k]) + "\n" for j in picked), encoding="utf-8")
    base = ["align", "corpus", "--model", str(m), "--quiet", "--teacher", "on"]

    def align(src, tgt, out):
        r = runner.invoke(app, [*base, "--src", str(tmp_path / src), "--tgt", str(tmp_path / tgt),
                                "-o", str(tmp_path / out)])
        assert r.exit_code == 0, r.output
        assert f"teacher_pairs={len(pairs)}" in r.stderr
        return (tmp_path / out).read_text().splitlines()

    for kept in (True, False):  # the kept teacher's matrices; a teacher trained now on the same corpus
        if not kept:
            (m / "teacher.npz").unlink()
        whole = align("train.en", "train.fr", "whole.align")
        part = align("part.en", "part.fr", "part.align")
        assert part == [whole[j] for j in picked], kept


def test_the_teacher_learns_the_training_pairs_once_and_the_new_ones_as_given(recorded, tmp_path):
    m, pairs = recorded
    new = (["the", "small", "dog"], ["le", "petit", "chien"])
    lines = [new, pairs[3], new, pairs[5]]
    for name, k in (("new.en", 0), ("new.fr", 1)):
        (tmp_path / name).write_text("".join(" ".join(p[k]) + "\n" for p in lines), encoding="utf-8")
    r = CliRunner().invoke(app, ["align", "corpus", "--model", str(m), "--quiet", "--teacher", "on",
                                 "--src", str(tmp_path / "new.en"), "--tgt", str(tmp_path / "new.fr")])
    assert r.exit_code == 0, r.output
    assert f"teacher_pairs={len(pairs) + 2}" in r.stderr  # the training corpus and the new lines
    # going on from the kept counts, the same: a training pair is in the counts already, and its links
    # are the kept teacher's, as where the whole text is training pairs
    kept = CliRunner().invoke(app, ["align", "corpus", "--model", str(m), "--quiet", "--teacher", "on",
                                    "--src", str(tmp_path / "new.en"), "--tgt", str(tmp_path / "new.fr"),
                                    "--teacher-corpus", "kept", "-o", str(tmp_path / "kept.align")])
    assert kept.exit_code == 0, kept.output
    assert f"teacher_pairs={len(pairs) + 2}" in kept.stderr
    for name, k in (("old.en", 0), ("old.fr", 1)):
        (tmp_path / name).write_text("".join(" ".join(p[k]) + "\n" for p in (pairs[3], pairs[5])), "utf-8")
    old = CliRunner().invoke(app, ["align", "corpus", "--model", str(m), "--quiet", "--teacher", "on",
                                   "--src", str(tmp_path / "old.en"), "--tgt", str(tmp_path / "old.fr"),
                                   "--teacher-corpus", "kept", "-o", str(tmp_path / "old.align"),
                                   "--decoder", "threshold", "--teacher-weight", "1"])
    both = CliRunner().invoke(app, ["align", "corpus", "--model", str(m), "--quiet", "--teacher", "on",
                                    "--src", str(tmp_path / "new.en"), "--tgt", str(tmp_path / "new.fr"),
                                    "--teacher-corpus", "kept", "-o", str(tmp_path / "both.align"),
                                    "--decoder", "threshold", "--teacher-weight", "1"])
    assert old.exit_code == both.exit_code == 0, old.output + both.output
    lines = (tmp_path / "both.align").read_text().splitlines()
    assert [lines[1], lines[3]] == (tmp_path / "old.align").read_text().splitlines()


def test_joined_index_by_hand():
    from attnalign.data.corpus import joined_index

    # learned: keys 5, 6, 5; aligned: 6, 9, 9, 5, 4, 5, 5 (the third 5 takes the last one learned)
    assert joined_index([6, 9, 9, 5, 4, 5, 5], [5, 6, 5]) == ([1, 2, 4], [1, 3, 4, 0, 5, 2, 2])
    assert joined_index([2, 2, 3], []) == ([0, 1, 2], [0, 1, 2])


def test_a_corpus_joins_its_teachers_training_corpus_by_hand():
    from attnalign.data.corpus import Corpus

    a, b, c = (["a"], ["x"]), (["b"], ["y"]), (["c"], ["z"])
    training = [a, b]
    aligned = Corpus([c, a], [c])  # a corpus followed by a gold's own text: one corpus, read twice
    assert len(aligned) == 3 and list(aligned) == list(aligned) == [c, a, c]
    joined = aligned.join(training)
    # the training pairs first (a pair they hold is not added again), then the new pairs as they come (a
    # text's own repeat is evidence); each aligned pair's place in the joined corpus
    assert list(joined) == [a, b, c, c] and joined.index == [2, 0, 3]
    assert (joined.learned, joined.added, joined.training) == (2, 2, training)
    assert list(joined.keys()) == [*Corpus(training).keys(), *Corpus([c, c]).keys()]
    alone = aligned.join()
    assert list(alone) == [c, a, c] and alone.index is None and (alone.learned, alone.training) == (0, None)
    assert Corpus([a, b]).fingerprint() == Corpus([a], [b]).fingerprint() != Corpus([b, a]).fingerprint()


def test_report_default_output_is_what_align_corpus_writes_for_the_corpus(tmp_path):
    """The gold sentences first in the training corpus, as the standard protocol lays them: the report
    on the gold lines scores the links that align corpus gives those lines when it aligns the corpus,
    and says which teacher made them."""
    from helpers import sample_texts

    src, tgt = sample_texts(tmp_path, 900)  # with the 100 dev pairs, enough for --teacher auto
    for path, side in ((src, "en"), (tgt, "fr")):
        path.write_text((SAMPLE / f"dev.{side}").read_text() + path.read_text())
    runner = CliRunner()
    m = tmp_path / "m"
    r = runner.invoke(app, ["train", "--src", str(src), "--tgt", str(tgt), "--model", str(m), "--quiet",
                            "--model-type", "transformer", "--d-model", "16", "--heads", "2", "--layers", "1",
                            "--direction", "both", "--guide", "auto", "--align-head", "--epochs", "1"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["align", "corpus", "--model", str(m), "--src", str(src), "--tgt", str(tgt),
                            "--quiet", "-o", str(tmp_path / "all.align")])
    assert r.exit_code == 0, r.output
    head = "".join((tmp_path / "all.align").read_text().splitlines(True)[:100])
    (tmp_path / "dev.align").write_text(head)
    r = runner.invoke(app, ["score", str(SAMPLE / "dev.gold.pharaoh"), str(tmp_path / "dev.align"), "--json"])
    corpus_aer = json.loads(r.stdout)["aer"]
    out = tmp_path / "rep"
    r = runner.invoke(app, ["report", "--model", str(m), "--src", str(SAMPLE / "dev.en"), "--tgt",
                            str(SAMPLE / "dev.fr"), "--gold", str(SAMPLE / "dev.gold.pharaoh"),
                            "-o", str(out), "--gallery", "1"])
    assert r.exit_code == 0, r.output
    import pandas as pd

    scores = pd.read_csv(out / "scores.csv")
    default = scores[scores.configuration.str.startswith("align corpus default output")]
    assert default.aer.iloc[0] == pytest.approx(corpus_aer, abs=1e-6)
    page = (out / "index.html").read_text()
    assert "Its teacher: the one train kept, of the model&#x27;s 1,000 training pairs" in page


def test_an_empty_side_is_reported_once(recorded, tmp_path):
    m, pairs = recorded
    (tmp_path / "e.en").write_text("".join(" ".join(s) + "\n" for s, _ in pairs[:20]) + "lonely\n")
    (tmp_path / "e.fr").write_text("".join(" ".join(t) + "\n" for _, t in pairs[:20]) + "\n")
    r = CliRunner().invoke(app, ["align", "corpus", "--model", str(m), "--quiet", "--teacher", "on",
                                 "--src", str(tmp_path / "e.en"), "--tgt", str(tmp_path / "e.fr")])
    assert r.exit_code == 0, r.output
    assert r.stderr.count("have an empty side") == 1


def test_a_tuning_keeps_its_best_only_where_the_paired_test_prefers_it():
    from attnalign.combine import Tuning
    from attnalign.eval.significance import Interval, PairedResult

    best, default = Decoding("soft", "threshold", 0.35, 0.8), TEACHER_DECODING
    scores = [(best, 0.05), (default, 0.07)]
    won = Tuning("g", 40, scores, default, 0.07, best, PairedResult(-0.02, Interval(-0.03, -0.01), 0.004))
    assert won.chosen == best and "later runs of this model use it" in won.describe()
    tie = Tuning("g", 40, scores, default, 0.07, best, PairedResult(-0.02, Interval(-0.05, 0.01), 0.2))
    assert tie.chosen is None and "the default stays" in tie.describe()
    assert Tuning.from_json(json.loads(json.dumps(won.as_json()))) == won


def test_the_tuning_gain_is_measured_on_sentences_that_did_not_choose():
    """Cross-validation by hand: 4 sentences, 2 folds (0, 2 and 1, 3). ``a`` is perfect on fold 0 and
    wrong on fold 1, ``b`` the other way round: each fold's choice, made on the other, is wrong on it."""
    from attnalign.combine import Tuning
    from attnalign.combine.tune import cross_validated
    from attnalign.eval.metrics import Counts
    from attnalign.eval.significance import Interval, PairedResult

    right, wrong = Counts(1, 1, 1, 1, 1, 1), Counts(1, 1, 1, 0, 0, 1)  # one link, sure; found or not
    default, a, b = TEACHER_DECODING, Decoding("soft", "threshold", 0.3, 0.5), Decoding("soft", "relative",
                                                                                          0.1, 0.5)
    per = {default: [wrong] * 4, a: [right, wrong, right, wrong], b: [wrong, right, wrong, right]}
    assert cross_validated(per, default, 2) == [wrong] * 4  # in-sample, a or b would look half right
    per[a] = [right] * 4
    assert cross_validated(per, default, 2) == [right] * 4
    tie = PairedResult(0.0, Interval(0, 0), 1.0)
    same = Tuning("g", 40, [(default, 0.07)], default, 0.07, default, tie, 5)
    assert same.describe().endswith("the default, --sym soft --decoder relative --threshold 0.2 "
                                    "--teacher-weight 0.6, is already the best (AER 7.00): it stays")


def test_tune_gold_chooses_the_blend_on_the_user_s_gold_and_keeps_it(guided, tmp_path):
    """A gold made of one candidate's own links: that candidate (or one as good) wins with AER 0, the
    paired test prefers it to the default, it is kept in blend.json, and a later run uses it."""
    import shutil

    from attnalign.combine import kept_tuning

    d, _ = guided
    m = tmp_path / "m"
    shutil.copytree(d, m)
    test = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")[:60]
    for name, k in (("t.en", 0), ("t.fr", 1)):
        (tmp_path / name).write_text("".join(" ".join(p[k]) + "\n" for p in test), encoding="utf-8")
    target = Decoding("soft", "threshold", 0.6, 0.3)
    combined = combine_fitted(Aligner(m, AlignOptions(teacher="on", decoder="threshold", threshold=0.6,
                                                      teacher_weight=0.3)), test)
    assert combined.decoding == target
    gold = tmp_path / "g.align"
    gold.write_text("".join(" ".join(f"{i}-{j}" for i, j in p.links) + "\n" for p in combined.align(test)))
    base = ["align", "corpus", "--model", m, "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr",
            "--teacher", "on", "--teacher-corpus", "aligned", "--quiet"]
    r = invoke(*base, "--tune-gold", gold, "-o", tmp_path / "tuned.align")
    assert r.exit_code == 0, r.output
    tuning = kept_tuning(m)
    assert tuning.sentences == 60 and tuning.scores[0][1] == 0.0 and tuning.chosen is not None
    assert target in [c for c, aer in tuning.scores if aer == 0.0]
    assert "blend tuned on" in r.stderr and "later runs of this model use it" in r.stderr
    later = invoke(*base, "-o", tmp_path / "later.align")
    assert later.exit_code == 0, later.output
    c = tuning.chosen
    assert f"decoder={c.decoder}" in later.stderr and f"teacher={c.teacher_weight}" in later.stderr
    tuned = (tmp_path / "tuned.align").read_text()
    assert (tmp_path / "later.align").read_text() == tuned == gold.read_text()
    # the gold's own text, after the corpus: the teacher reads both, the same choice
    r = invoke("align", "corpus", "--model", m, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--teacher", "on", "--teacher-corpus", "aligned", "--quiet", "--tune-gold", gold,
               "--tune-src", tmp_path / "t.en", "--tune-tgt", tmp_path / "t.fr",
               "-o", tmp_path / "other.align")
    assert r.exit_code == 0, r.output
    assert kept_tuning(m).sentences == 60
    # the report shows the candidates' scores on that gold
    r = invoke("report", "--model", m, "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr", "--gold", gold,
               "-o", tmp_path / "report", "--gallery", "0")
    assert r.exit_code == 0, r.output
    page = (tmp_path / "report" / "index.html").read_text()
    assert "blend tuned on" in page and kept_tuning(m).chosen.describe() in page


def test_tune_gold_errors(guided, tmp_path):
    import shutil

    d, _ = guided
    m = tmp_path / "m"
    shutil.copytree(d, m)
    few = tmp_path / "few.align"
    few.write_text("0-0\n" * 5)
    base = ["align", "corpus", "--model", m, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
            "--teacher", "on", "--quiet", "-o", tmp_path / "o.align"]
    r = invoke(*base, "--tune-gold", few)
    assert r.exit_code == 2 and "needs at least 20" in r.stderr and r.stderr.count("error:") == 1
    r = invoke(*base, "--tune-gold", SAMPLE / "test.gold.naacl", "--teacher-weight", "0.5")
    assert r.exit_code == 2 and "--tune-gold chooses" in r.stderr
    r = invoke(*base, "--tune-gold", SAMPLE / "test.gold.naacl", "--sym", "none")  # it would tune for soft
    assert r.exit_code == 2 and "--tune-gold chooses the symmetrization" in r.stderr
    r = invoke(*base, "--tune-src", SAMPLE / "dev.en")
    assert r.exit_code == 2 and "add --tune-gold" in r.stderr
    r = invoke(*base, "--tune-gold", SAMPLE / "dev.gold.pharaoh", "--tune-src", SAMPLE / "dev.en")
    assert r.exit_code == 2 and "go together" in r.stderr
    r = invoke(*[x if x != "on" else "off" for x in base], "--tune-gold", SAMPLE / "test.gold.naacl")
    assert r.exit_code == 2 and "no teacher" in r.stderr
    # a gold that does not fit its text: one error naming the file
    r = invoke(*base, "--tune-gold", SAMPLE / "test.gold.naacl", "--tune-src", SAMPLE / "dev.en",
               "--tune-tgt", SAMPLE / "dev.fr")
    assert r.exit_code != 0 and r.stderr.count("error:") == 1 and "test.gold.naacl" in r.stderr
    assert not (m / "blend.json").exists()  # nothing chosen, nothing kept


@pytest.mark.parametrize("teacher", ["on", "off"])
def test_every_view_of_a_pair_shows_align_corpus_line(guided, tmp_path, teacher):
    """Decoding is decided once per run: ``plot sentence`` (from the model, and from the attention file
    align corpus saved) and ``align sentence`` give the pair the links of align corpus's line, with the
    teacher and without."""
    from attnalign.workflows.views import sentence_panels

    d, pairs = guided
    src, tgt = tmp_path / "t.en", tmp_path / "t.fr"
    src.write_text("".join(" ".join(s) + "\n" for s, _ in pairs[:40]) + "qzx le chat\n", encoding="utf-8")
    tgt.write_text("".join(" ".join(t) + "\n" for _, t in pairs[:40]) + "qzx the cat\n", encoding="utf-8")
    out, npz = tmp_path / "out.align", tmp_path / "a.npz"
    invoke("align", "corpus", "--model", d, "--src", src, "--tgt", tgt, "--teacher", teacher, "-o", out,
           "--save-attention", npz, "--quiet")
    lines = [sorted(tuple(map(int, x.split("-"))) for x in line.split())
             for line in out.read_text().splitlines()]
    options = AlignOptions(teacher=teacher)
    for index in (0, 13, 40):  # pairs of the training corpus, and one it does not hold
        from_model = sentence_panels(options, model=d, src=str(src), tgt=str(tgt), index=index)
        from_file = sentence_panels(AlignOptions(), attention=npz, index=index)
        assert sorted(from_model[0].links) == sorted(from_file[0].links) == lines[index], index
    assert ("teacher=" in from_model[0].title) == (teacher == "on")
    typed = invoke("align", "sentence", "--model", d, "--src", "qzx le chat", "--tgt", "qzx the cat",
                   "--teacher", teacher, "--json")
    alone = tmp_path / "one.align"
    (tmp_path / "one.en").write_text("qzx le chat\n")
    (tmp_path / "one.fr").write_text("qzx the cat\n")
    invoke("align", "corpus", "--model", d, "--src", tmp_path / "one.en", "--tgt", tmp_path / "one.fr",
           "--teacher", teacher, "-o", alone, "--quiet")
    assert [f"{i}-{j}" for i, j in json.loads(typed.stdout)["links"]] == alone.read_text().split()
