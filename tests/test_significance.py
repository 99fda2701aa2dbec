"""Bootstrap intervals and the paired test (attnalign.eval.significance), checked by hand on a gold small
enough to enumerate every resample, and through `attnalign score --confidence/--paired`."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from helpers import SAMPLE, invoke, write
from hypothesis import given
from hypothesis import strategies as st

from attnalign.eval.metrics import Counts
from attnalign.eval.significance import (
    Bootstrap,
    bootstrap_weights,
    intervals,
    paired_test,
    scores,
)

# three sentences: (hyp, sure, possible, hyp_sure, hyp_possible, sentences)
PERFECT = Counts(2, 2, 2, 2, 2, 1)  # both links right
WRONG = Counts(2, 2, 2, 0, 0, 1)  # both links wrong
HALF = Counts(1, 1, 2, 0, 1, 1)  # its one link is possible, the sure one missed
THREE = [PERFECT, WRONG, HALF]


def every_resample(n: int) -> np.ndarray:
    """[n**n, n]: every resample of n sentences (each equally likely), as draw counts."""
    return np.array([np.bincount(draw, minlength=n) for draw in itertools.product(range(n), repeat=n)])


def test_interval_of_every_resample_by_hand():
    # 27 resamples; the smallest AER is (P, P, P) = 0, then the three orders of (P, P, HALF):
    # 1 - (4 + 5) / (5 + 5) = 0.1; the largest (W, W, W) = 1, then (W, W, HALF): 1 - (0 + 1) / 10 = 0.9.
    # Percentiles interpolate between sorted values: 2.5% sits at rank 0.65, 97.5% at rank 25.35.
    iv = intervals(THREE, every_resample(3))["aer"]
    assert iv.low == pytest.approx(0.065)
    assert iv.high == pytest.approx(0.935)


def test_resampled_scores_match_the_metric_on_every_resample():
    w = every_resample(3)
    got = scores(w @ np.array([[c.hyp, c.sure, c.possible, c.hyp_sure, c.hyp_possible] for c in THREE]))
    for k, row in enumerate(w):
        total = sum((c for c, times in zip(THREE, row, strict=True) for _ in range(times)), Counts())
        for metric in ("aer", "precision", "recall", "f1"):
            assert got[metric][k] == pytest.approx(getattr(total, metric))


@given(st.lists(st.tuples(*[st.integers(0, 4)] * 3), min_size=1, max_size=6))
def test_vectorized_scores_equal_counts_including_empty_ones(rows):
    # (hyp, sure, extra possible) with hits bounded by them, degenerate rows (nothing at all) included
    per = [Counts(h, s, s + e, min(h, s), min(h, s + e), 1) for h, s, e in rows]
    total = sum(per, Counts())
    got = scores(np.array([[total.hyp, total.sure, total.possible, total.hyp_sure, total.hyp_possible]]))
    for metric in ("aer", "precision", "recall", "f1"):
        assert got[metric][0] == pytest.approx(getattr(total, metric))


def test_paired_test_by_hand():
    # the system fixes the WRONG sentence: better on one sentence, equal on two
    better = [PERFECT, PERFECT, HALF]
    w = every_resample(3)
    r = paired_test(THREE, better, w)
    base = np.array([[c.hyp, c.sure, c.possible, c.hyp_sure, c.hyp_possible] for c in THREE])
    other = np.array([[c.hyp, c.sure, c.possible, c.hyp_sure, c.hyp_possible] for c in better])
    d = scores(w @ other)["aer"] - scores(w @ base)["aer"]
    assert r.delta == pytest.approx(0.1 - 0.5)  # AER 1 - 9/10 against 1 - 5/10
    extreme = sum(abs(x - d.mean()) >= 0.4 - 1e-12 for x in d)
    assert r.p_value == pytest.approx((1 + extreme) / 28)
    assert r.interval.high <= 0.0  # never worse on any resample


def test_identical_systems_difference_zero_p_one():
    w = bootstrap_weights(3, 1000, 7)
    r = paired_test(THREE, list(THREE), w)
    assert r.delta == 0.0 and r.p_value == 1.0
    assert r.interval.low == r.interval.high == 0.0


def test_better_on_every_sentence_p_near_zero():
    rng = np.random.default_rng(0)
    base, better = [], []
    for _ in range(200):
        sure = int(rng.integers(3, 10))
        hits = int(rng.integers(0, sure - 1))
        base.append(Counts(sure, sure, sure, hits, hits, 1))
        better.append(Counts(sure, sure, sure, hits + 1, hits + 1, 1))
    r = paired_test(base, better, bootstrap_weights(200))
    assert r.delta < 0 and r.interval.high < 0
    assert r.p_value <= 0.002


def test_weights_are_seeded_resamples_of_n_draws():
    a, b = bootstrap_weights(50, 20, 3), bootstrap_weights(50, 20, 3)
    assert a.shape == (20, 50) and (a.sum(axis=1) == 50).all()
    assert (a == b).all() and not (a == bootstrap_weights(50, 20, 4)).all()


def test_a_thousand_resamples_of_500_sentences():
    # how long it takes is a benchmark's question (README, "attnalign score"): here, that it runs
    rng = np.random.default_rng(1)
    per = [Counts(int(h), int(s), int(s) + 2, int(min(h, s)), int(min(h, s)), 1)
           for h, s in rng.integers(0, 30, size=(500, 2))]
    w = Bootstrap().weights(500)
    ivs = intervals(per, w)
    test = paired_test(per, per[::-1], w)
    assert all(iv.low <= iv.high for iv in ivs.values()) and 0 < test.p_value <= 1



def test_score_confidence_json_and_signature():
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--confidence", "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["aer_low"] < d["aer"] < d["aer_high"] and d["recall_low"] < d["recall"] < d["recall_high"]
    assert d["signature"].endswith("ci:bootstrap-percentile-95|samples:1000|seed:12345")
    again = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--confidence",
                   "--json", "--samples", 200, "--seed", 9)
    d2 = json.loads(again.stdout)
    assert d2["aer"] == d["aer"] and d2["aer_low"] != d["aer_low"] and "samples:200|seed:9" in d2["signature"]


def test_score_paired_table_and_json(tmp_path):
    # the second system drops the diagonal's links on the first 100 sentences: worse
    lines = (SAMPLE / "test.diagonal.align").read_text().splitlines()
    kept = ["" if k < 100 else x for k, x in enumerate(lines)]
    worse = write(tmp_path / "worse.align", "\n".join(kept) + "\n")
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", worse, "--paired")
    assert r.exit_code == 0, r.stderr
    assert "baseline" in r.stdout and "ΔAER" in r.stdout and "test:paired-bootstrap" in r.stdout
    j = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", worse, "--paired",
               "--json")
    base, other = (json.loads(x) for x in j.stdout.splitlines())
    assert "delta_aer" not in base
    assert other["delta_aer"] == pytest.approx(other["aer"] - base["aer"]) and other["delta_aer"] > 0
    assert other["delta_aer_low"] > 0 and other["p_value"] < 0.01


@pytest.mark.parametrize(("args", "says"), [
    (["--samples", "0"], "--samples must be >= 1"),
    (["--seed", "-1"], "--seed must be >= 0"),
    (["--paired"], "two prediction files or more"),
    (["--breakdown"], "--breakdown needs the gold's text"),
])
def test_score_significance_usage_errors(args, says):
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", *args)
    assert r.exit_code == 2
    assert r.stderr.startswith("error:") and says in r.stderr and "Traceback" not in r.stderr


def test_a_signed_difference_by_hand():
    """A bound that rounds to zero keeps the digits that tell its side; zero is never -0.00."""
    from attnalign.eval.significance import signed_percent

    assert [signed_percent(x) for x in (0.0021, -0.0004, -0.0, -1e-15, -0.00003, 0.000049, 0.00005)] == \
        ["+0.21", "-0.04", "0.00", "0.00", "-0.003", "+0.0049", "+0.01"]
