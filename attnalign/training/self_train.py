"""Self-training (``train --self-train N``): after the teacher-guided round, the student is trained
again, guided by the links ``align corpus`` writes with the last round's model and the kept teacher
(its default output), in the spirit of Shift-AET (Chen et al. 2020), which trains its alignment module
on the symmetrized alignments of the model itself. A round trains a new student from scratch for
``--epochs``, or with ``--self-train-epochs`` goes on from the last round's weights for that many passes.

Each round's guide is written to the model directory (``self_guide.align``, Pharaoh, one line per training
pair) before the round begins and read back from there, so that ``--resume`` continues a round with
exactly the links it started with.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..data.alignments import GUIDE_ROLE, Alignment, Link, format_pharaoh_line, read_alignments
from ..data.corpus import Pairs
from ..data.fileio import SELF_GUIDE, model_file_open
from ..decoding.policy import TeacherPlan
from ..errors import AttnAlignError
from ..statistical.teacher_file import FILE, READ_ERRORS, SavedTeacher
from .model_dir import start_round


def self_guide(work_dir: Path, pairs: Pairs, keep: list[int], device, self_round: int, resumed: bool,
               note: Callable[[str], None] | None = None, going_on: bool = False) -> list[list[Link]]:
    """The guide of self-training round ``self_round`` for the training pairs ``keep`` of ``pairs``:
    the model in ``work_dir`` with its kept teacher aligns ``pairs`` (unless ``resumed``: the round
    began already and its guide is on disk), the links are written to ``self_guide.align``, the round is
    recorded as begun (:func:`.model_dir.start_round`; ``going_on``: the round goes on from the last
    round's weights), and the guide is read back."""
    path = work_dir / SELF_GUIDE
    if not resumed:
        t0 = time.perf_counter()
        links = _model_links(work_dir, pairs, device)
        with model_file_open(path) as f:
            f.writelines(format_pharaoh_line(Alignment.from_links(x)) + "\n" for x in links)
        start_round(work_dir, self_round, going_on)
        if note:
            note(f"self-training round {self_round}: {sum(map(len, links))} links from the model and its "
                 f"teacher in {time.perf_counter() - t0:.0f} s")
    alignments = read_alignments(path, fmt="pharaoh", role=GUIDE_ROLE,
                                 src_lengths=[len(s) for s, _ in pairs],
                                 tgt_lengths=[len(t) for _, t in pairs])[0]
    return [sorted(alignments[k].links) for k in keep]


def _model_links(model_dir: Path, pairs: Pairs, device) -> list[list[Link]]:
    """What ``align corpus`` writes for the model's own training ``pairs``: the model's attention
    blended with the teacher it kept (:mod:`attnalign.statistical.teacher_file`)."""
    from ..combine import Combined, TeacherView, run_decoding
    from ..nmt.aligner import Aligner, AlignOptions

    try:
        teacher = SavedTeacher(model_dir / FILE)
    except READ_ERRORS as e:
        raise AttnAlignError(f"the kept teacher cannot be read ({e})", path=model_dir / FILE,
                             hint="train the model again with --overwrite") from None
    aligner = Aligner(model_dir, AlignOptions(device=str(device)))
    plan = TeacherPlan("kept", kept=teacher.pairs)
    combined = Combined(aligner, TeacherView(teacher), plan, run_decoding(aligner, plan))
    return [sorted(p.links) for p in combined.align(pairs)]
