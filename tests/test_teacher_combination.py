"""Student + teacher at decoding time (``align corpus --teacher``): the teacher's soft matrices, their
blend with the attention, when ``auto`` combines, and the CLI option's effect."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import SAMPLE
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.data.corpus import read_corpus
from attnalign.decoding import (
    TEACHER_DECODING,
    TEACHER_DECODING_FIXED,
    TEACHER_DECODING_LARGE,
    TEACHER_MIN_PAIRS,
    blend,
    relative_links,
    teacher_decoding,
    threshold_links,
)
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
    train(pairs, d, TrainOptions(model_type="transformer", direction="both", epochs=1, batch_tokens=500,
                                 guide="auto", model_config={"d_model": 16, "heads": 2, "ff_dim": 32,
                                                             "enc_layers": 1, "dec_layers": 2,
                                                             "align_head": True}))
    return d, pairs


def test_auto_combines_for_a_guided_model_on_a_large_enough_corpus(guided, models):
    d, _ = guided
    auto = Aligner(d)
    assert not auto.wants_teacher(TEACHER_MIN_PAIRS - 1) and auto.wants_teacher(TEACHER_MIN_PAIRS)
    assert not Aligner(d, AlignOptions(teacher="off")).wants_teacher(10 ** 6)
    assert Aligner(d, AlignOptions(teacher="on")).wants_teacher(1)
    assert not Aligner(models / "rnn").wants_teacher(10 ** 6)  # not guided: nothing to combine with
    assert auto.teacher_options.model == COMBINED  # the guide's settings, from the model's config


def test_the_combination_is_the_blend_of_student_and_teacher_thresholded(guided):
    d, pairs = guided
    plain = Aligner(d, AlignOptions(teacher="off")).align_pairs(pairs[:3])
    combined = Aligner(d, AlignOptions(teacher="on"))
    combined.fit_teacher(pairs)
    o = combined.options
    assert (o.sym, o.decoder, o.threshold, o.teacher_weight) == (
        TEACHER_DECODING["sym"], TEACHER_DECODING["decoder"], TEACHER_DECODING["threshold"],
        TEACHER_DECODING["weight"])
    assert combined.description["teacher"] == TEACHER_DECODING["weight"]
    out = list(combined.align(pairs))[:3]
    w, t = o.teacher_weight, o.threshold
    for k, (p, q) in enumerate(zip(plain, out, strict=True)):
        (teacher,) = combined.teacher.matrices(k, k + 1)
        expect = (1 - w) * (p.forward + p.reverse) / 2 + w * teacher
        assert np.allclose(q.matrix, expect)
        assert q.links == relative_links(expect, t)
        assert np.allclose(q.forward, p.forward) and np.allclose(q.reverse, p.reverse)  # as read
    # weight 1: the teacher's matrix alone decides
    only = Aligner(d, AlignOptions(teacher="on", teacher_weight=1.0))
    only.fit_teacher(pairs)
    first = next(iter(only.align(pairs)))
    assert first.links == relative_links(only.teacher.matrices(0, 1)[0], t)
    # --decoder threshold alone: the fixed cut at its own point
    fixed = Aligner(d, AlignOptions(teacher="on", decoder="threshold"))
    fixed.fit_teacher(pairs)
    assert (fixed.options.teacher_weight, fixed.options.threshold) == (
        TEACHER_DECODING_FIXED["weight"], TEACHER_DECODING_FIXED["threshold"]) == (0.9, 0.45)
    q = next(iter(fixed.align(pairs)))
    assert q.links == threshold_links(q.matrix, 0.45)


def test_a_teacher_of_a_large_corpus_gets_more_of_the_student(guided):
    """From TEACHER_DECODING_LARGE["pairs"] pairs (the teacher's corpus and the kept counts it went on
    from) "auto" blends with the large corpus's weight and threshold; given options still win."""
    d, pairs = guided
    small, large = TEACHER_DECODING_LARGE["pairs"] - 1, TEACHER_DECODING_LARGE["pairs"]
    assert teacher_decoding(small) == TEACHER_DECODING
    assert teacher_decoding(large) == {**TEACHER_DECODING, "decoder": "threshold", "weight": 0.6,
                                       "threshold": 0.4}
    assert teacher_decoding(small, "threshold") == {**TEACHER_DECODING, "decoder": "threshold",
                                                    "weight": 0.9, "threshold": 0.45}
    assert teacher_decoding(large, "relative") == TEACHER_DECODING  # a decoder given keeps its point
    assert teacher_decoding(small, "argmax")["decoder"] == "argmax"
    combined = Aligner(d, AlignOptions(teacher="on"))
    combined.fit_teacher(pairs[:50])
    teacher = combined.teacher
    combined.use_teacher(teacher, kept_pairs=small - teacher.pairs)
    o = combined.options
    assert (o.decoder, o.teacher_weight, o.threshold) == ("relative", 0.6, 0.2)
    combined.use_teacher(teacher, kept_pairs=large - teacher.pairs)
    o = combined.options
    assert (o.decoder, o.teacher_weight, o.threshold) == ("threshold", 0.6, 0.4)
    assert combined.description["teacher_pairs"] == large
    s, t = next(iter(combined.align(pairs[:50]))), teacher.matrices(0, 1)[0]
    assert np.allclose(s.matrix, 0.4 * (s.forward + s.reverse) / 2 + 0.6 * t)
    given = Aligner(d, AlignOptions(teacher="on", teacher_weight=0.9, threshold=0.45))
    given.use_teacher(teacher, kept_pairs=large)
    assert (given.options.teacher_weight, given.options.threshold) == (0.9, 0.45)


def test_cli_teacher_option_changes_the_links(guided, tmp_path):
    d, _ = guided
    base = ["align", "corpus", "--model", str(d), "--src", str(SAMPLE / "test.en"), "--tgt",
            str(SAMPLE / "test.fr"), "--quiet"]
    runner = CliRunner()
    off = runner.invoke(app, [*base, "-o", str(tmp_path / "off.align"), "--teacher", "off"])
    on = runner.invoke(app, [*base, "-o", str(tmp_path / "on.align"), "--teacher", "on"])
    auto = runner.invoke(app, [*base, "-o", str(tmp_path / "auto.align")])
    assert off.exit_code == on.exit_code == auto.exit_code == 0, on.output
    assert f"teacher={TEACHER_DECODING['weight']}" in on.stderr and "teacher=" not in off.stderr
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

    from attnalign.training.model_dir import pairs_fingerprint

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
    from attnalign.data.corpus import open_corpus
    from attnalign.errors import AttnAlignError
    from attnalign.workflows.align_files import training_corpus

    m, pairs = recorded
    test = open_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")
    assert len(training_corpus(m, "auto")) == len(pairs)
    assert training_corpus(m, "aligned") is None
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
    with pytest.warns(UserWarning, match="has changed since training"):
        assert training_corpus(m, "auto") is None
    with pytest.raises(AttnAlignError, match="has changed"):
        training_corpus(m, "training")
    gone = runner.invoke(app, [*base, "--teacher-corpus", "training"])
    assert gone.exit_code == 1 and "error:" in gone.stderr and "has changed" in gone.stderr
    bad = runner.invoke(app, [*base, "--teacher-corpus", "everything"])
    assert bad.exit_code == 2


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
    del config["train_options"]["guide_prefix"], config["train_options"]["guide_identical"]
    (old / "config.json").write_text(json.dumps(config))
    resumed = TrainOptions.from_saved(config["train_options"]).teacher
    assert Aligner(old).teacher_options == resumed == TeacherOptions(COMBINED, "posterior", 0, 0.0)


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


def test_joined_index_by_hand():
    from attnalign.decoding.teacher import joined_index

    # learned: keys 5, 6, 5; aligned: 6, 9, 9, 5, 4, 5, 5 (the third 5 takes the last one learned)
    assert joined_index([6, 9, 9, 5, 4, 5, 5], [5, 6, 5]) == ([1, 2, 4], [1, 3, 4, 0, 5, 2, 2])
    assert joined_index([2, 2, 3], []) == ([0, 1, 2], [0, 1, 2])


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
