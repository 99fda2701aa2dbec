"""Two directions at once (:mod:`attnalign.statistical.threads`): the cores split, results in order and
equal to one after the other, a failure stopping the other job; the next chunk decoded ahead; and the
agreement kernel by hand."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from attnalign.statistical import kernels
from attnalign.statistical import threads as threads_module
from attnalign.statistical.progress import Stopped, report
from attnalign.statistical.threads import ahead, at_once, shares


def test_the_cores_are_split_with_at_least_one_each():
    assert shares(2, 2) == [1, 1]
    assert shares(5, 2) == [3, 2]
    assert shares(16, 3) == [6, 5, 5]
    assert shares(1, 2) == [1, 1]


@pytest.fixture
def two_cores():
    kernels.set_threads(2)
    yield
    kernels.set_threads()


def test_jobs_run_at_once_on_their_share_and_return_in_order(two_cores):
    if not threads_module.possible():
        pytest.skip("needs two cores and a thread-safe numba threading layer")
    met = threading.Barrier(2, timeout=30)  # each job waits for the other: they must run at once

    def job(k):
        met.wait()
        return k, kernels.threads(), threading.get_ident()

    (a, ca, ta), (b, cb, tb) = at_once([lambda: job("first"), lambda: job("second")])
    assert (a, b) == ("first", "second") and ta != tb
    assert ca == cb == 1 and kernels.threads() == 2  # the caller keeps its cores


def test_one_after_the_other_on_one_core():
    kernels.set_threads(1)
    try:
        order = []
        assert at_once([lambda: order.append(1) or "a", lambda: order.append(2) or "b"]) == ["a", "b"]
        assert order == [1, 2]
    finally:
        kernels.set_threads()


def test_a_failing_job_stops_the_other_at_its_next_report(two_cores):
    if not threads_module.possible():
        pytest.skip("needs two cores and a thread-safe numba threading layer")
    started, stopped = threading.Event(), []

    def long_job():
        started.set()
        try:
            for k in range(10_000):
                report("test", "pass", k, 10_000)
                threading.Event().wait(0.01)
        except Stopped:
            stopped.append(True)
            raise
        return "finished"

    def failing():
        started.wait(30)
        raise ValueError("broken input")

    with pytest.raises(ValueError, match="broken input"):
        at_once([long_job, failing])
    assert stopped == [True]


def test_agreement_multiplies_the_paired_cells_and_keeps_nulls():
    rng = np.random.default_rng(0)
    fwd = rng.random((2, 3, 5))  # [B, Tm, Sm + 1]: Sm 4
    rev = rng.random((2, 4, 4))  # [B, Sm, Tm + 1]: Tm 3
    f0, r0 = fwd.copy(), rev.copy()
    kernels.agree(fwd, rev)
    for b in range(2):
        for j in range(3):
            for i in range(4):
                assert fwd[b, j, i] == rev[b, i, j] == f0[b, j, i] * r0[b, i, j]
    assert np.array_equal(fwd[:, :, 4], f0[:, :, 4]) and np.array_equal(rev[:, :, 3], r0[:, :, 3])


def test_ahead_runs_the_next_job_while_the_last_result_is_used(two_cores):
    if not threads_module.possible():
        pytest.skip("needs two cores and a thread-safe numba threading layer")
    second_started = threading.Event()

    def job(k):
        if k == 1:
            second_started.set()
        return k, kernels.threads()

    results = ahead(lambda k=k: job(k) for k in range(3))
    assert next(results) == (0, 2)  # on the caller's cores
    assert second_started.wait(30)  # started before its result was asked for
    assert list(results) == [(1, 2), (2, 2)]


def test_ahead_raises_a_jobs_error_at_its_turn_and_runs_lazily_on_one_core(two_cores):
    def job(k):
        if k == 1:
            raise ValueError("bad chunk")
        return k

    results = ahead(lambda k=k: job(k) for k in range(3))
    assert next(results) == 0
    with pytest.raises(ValueError, match="bad chunk"):
        next(results)
    kernels.set_threads(1)
    ran = []
    results = ahead(lambda k=k: ran.append(k) or k for k in range(3))
    assert next(results) == 0 and ran == [0]  # nothing ahead on one core


def test_the_teacher_aligns_the_same_on_one_core_and_two():
    from attnalign.statistical import align_statistical

    words = [f"w{k}" for k in range(40)]
    pairs = [([words[(3 * n + k) % 40] for k in range(2 + n % 6)],
              [words[(3 * n + k + 1) % 40].upper() for k in range(1 + n % 7)]) for n in range(300)]
    try:
        kernels.set_threads(1)
        one = align_statistical(pairs)
        kernels.set_threads(2)
        assert align_statistical(pairs) == one
        assert align_statistical(pairs, chunk=70) == one  # chunks decoded ahead, in order
    finally:
        kernels.set_threads()


def test_without_a_thread_safe_layer_nothing_enters_parallel_loops_from_two_threads(monkeypatch):
    """numba's workqueue layer ends the process when two threads enter its parallel loops at once: there
    the jobs run one after the other, and two samplers at once each take one core (the serial sweep)."""
    from attnalign.statistical.fertility import _Cores

    monkeypatch.setattr(kernels, "thread_safe", lambda: False)
    kernels.set_threads(4)
    try:
        assert not threads_module.possible()
        threads = []
        at_once([lambda: threads.append(threading.get_ident())] * 2)
        assert threads == [threading.get_ident()] * 2
        cores = _Cores(4, 2)
        assert cores.take() == 1
        cores.done()
        assert cores.take() == 4  # the one left takes them all: no other thread is in a loop
        monkeypatch.setattr(kernels, "thread_safe", lambda: True)
        assert _Cores(4, 2).take() == 2
    finally:
        kernels.set_threads()
