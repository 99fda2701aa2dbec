"""attnalign: word alignment from the attention of neural machine translation models.

Data flow, one folder per step::

    data/ (files -> token lists; alignment and attention files) -> nmt/ (vocabularies, batches,
    models, attention [T_tgt, S_src]) -> decoding/ (matrices -> links) -> eval/ (scores, plots)

``statistical/`` holds the built-in statistical aligners (the teacher), ``combine/`` the student and
its teacher blended (above both ``nmt/`` and ``statistical/``), ``training/`` the training loop,
``workflows/`` the jobs on files behind each command, ``cli/`` the command line.

Conventions: attention matrices are ``[T_tgt, S_src]``; links are ``(src_i, tgt_j)``, 0-based,
source first (Pharaoh order).
"""

import importlib

from ._version import __version__
from .data.alignments import Alignment, read_alignments, write_naacl, write_pharaoh  # noqa: E402
from .data.corpus import open_corpus, read_corpus  # noqa: E402
from .errors import AttnAlignError, AttnAlignWarning  # noqa: E402
from .eval.metrics import Counts, sentence_counts  # noqa: E402
from .eval.scoring import GoldOptions, read_gold, score_alignments, score_files  # noqa: E402
from .eval.significance import Bootstrap  # noqa: E402
from .statistical import TeacherOptions, align_statistical  # noqa: E402

# The torch side, imported on first use so that ``import attnalign`` (and ``attnalign score``) stays
# torch-free: name -> module.
_LAZY = {"Aligner": "nmt.aligner", "AlignOptions": "nmt.aligner", "combined_aligner": "combine",
         "combine_fitted": "combine", "train": "training",
         "TrainOptions": "training", "preset_options": "training", "DevSet": "training"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'attnalign' has no attribute {name!r}")


__all__ = [
    "AlignOptions",
    "Aligner",
    "Alignment",
    "AttnAlignError",
    "AttnAlignWarning",
    "Bootstrap",
    "Counts",
    "DevSet",
    "GoldOptions",
    "TeacherOptions",
    "TrainOptions",
    "__version__",
    "align_statistical",
    "combine_fitted",
    "combined_aligner",
    "open_corpus",
    "preset_options",
    "read_alignments",
    "read_corpus",
    "read_gold",
    "score_alignments",
    "score_files",
    "sentence_counts",
    "train",
    "write_naacl",
    "write_pharaoh",
]
