"""The teacher's corpus and its matrices read for the pairs being aligned: :class:`JoinedCorpus` (the
model's training corpus followed by the new pairs it does not hold, each pair once) and
:class:`TeacherView`. Torch-free.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np

from ..data.corpus import pair_keys


def joined_index(aligned: Sequence[int], learned: Sequence[int]) -> tuple[list[int], list[int]]:
    """Where the pairs being aligned (keys ``aligned``) stand in the teacher's corpus when they join a
    corpus of pairs keyed ``learned`` (the model's training corpus): a pair ``learned`` holds is not
    added again (its n-th occurrence in ``aligned`` is its n-th in ``learned``, or the last there), the
    others are added after ``learned`` as they come (a text's own repeats are evidence, as in any
    corpus). Returns the positions in ``aligned`` of the pairs added, and each aligned pair's position in
    the joined corpus."""
    occurrences: dict[int, list[int]] = {}
    for k, key in enumerate(learned):
        occurrences.setdefault(int(key), []).append(k)
    seen: Counter = Counter()
    added: list[int] = []
    index = []
    for k, key in enumerate(map(int, aligned)):
        at = occurrences.get(key)
        if at is None:
            index.append(len(learned) + len(added))
            added.append(k)
        else:
            index.append(at[min(seen[key], len(at) - 1)])
            seen[key] += 1
    return added, index


class JoinedCorpus:
    """The teacher's corpus: ``learned`` (the model's training corpus as train read it), if given,
    followed by the pairs being aligned that it does not hold (:func:`joined_index`); ``index[k]``: pair
    k being aligned's position in it (None: the pairs being aligned are the corpus, in order). Iterates
    the pairs in that order."""

    def __init__(self, pairs, learned=None):
        if learned is None:
            self.learned, self.added, self.index = (), pairs, None
            return
        added, self.index = joined_index(pair_keys(pairs), pair_keys(learned))
        wanted = set(added)
        self.learned, self.added = learned, [p for k, p in enumerate(pairs) if k in wanted]

    def __len__(self) -> int:
        return len(self.learned) + len(self.added)

    def __iter__(self) -> Iterator:
        yield from self.learned
        yield from self.added


class TeacherView:
    """A teacher's matrices read for the pairs being aligned: pair ``k`` of them is pair ``index[k]`` of
    the teacher's corpus (``index`` None: the same pair). ``teacher``: anything with ``pairs`` (the pairs
    it learned from) and ``matrices(lo, hi)`` (a fitted ``statistical.SoftTeacher``, a kept one)."""

    def __init__(self, teacher, index: Sequence[int] | None = None):
        self.teacher = teacher
        self.index = None if index is None else np.asarray(index, dtype=np.int64)
        self.pairs = teacher.pairs  # what selects the blend: the pairs it learned from
        self.aligned = teacher.pairs if index is None else len(self.index)  # the pairs it can be read for

    def matrices(self, lo: int, hi: int) -> list[np.ndarray]:
        """The ``[T, S]`` matrices of aligned pairs ``lo..hi``, read in runs of consecutive positions."""
        if self.index is None:
            return self.teacher.matrices(lo, hi)
        ids, out, k = self.index[lo:hi], [], 0
        while k < len(ids):
            end = k + 1
            while end < len(ids) and ids[end] == ids[end - 1] + 1:
                end += 1
            out += self.teacher.matrices(int(ids[k]), int(ids[end - 1]) + 1)
            k = end
        return out


class Stacked:
    """Two teachers read as one corpus: ``first``'s pairs, then ``then``'s (the teacher ``train`` kept,
    then one that went on from its counts over the pairs it lacks)."""

    def __init__(self, first, then):
        self.first, self.then = first, then
        self.pairs = first.pairs + then.pairs

    def matrices(self, lo: int, hi: int) -> list[np.ndarray]:
        n = self.first.pairs
        return (self.first.matrices(lo, min(hi, n)) if lo < n else []) + (
            self.then.matrices(max(lo, n) - n, hi - n) if hi > n else [])


class Followed:
    """The pairs ``first`` followed by ``then``, as one sized iterable (the corpus being aligned and a
    gold's own text, for one teacher to read both)."""

    def __init__(self, first, then):
        self.first, self.then = first, then

    def __len__(self) -> int:
        return len(self.first) + len(self.then)

    def __iter__(self) -> Iterator:
        yield from self.first
        yield from self.then
