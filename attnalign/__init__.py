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

# Every name is imported on first use, so that ``import attnalign`` (which the command line's entry
# point does before it has its signal handlers) loads nothing heavy, and stays torch-free: name -> module.
_LAZY = {"Alignment": "data.alignments", "read_alignments": "data.alignments",
         "write_naacl": "data.alignments", "write_pharaoh": "data.alignments", "open_corpus": "data.corpus",
         "read_corpus": "data.corpus",
         "AttnAlignError": "errors", "AttnAlignWarning": "errors", "Counts": "eval.metrics",
         "sentence_counts": "eval.metrics", "GoldOptions": "eval.scoring", "read_gold": "eval.scoring",
         "score_alignments": "eval.scoring", "score_files": "eval.scoring", "Bootstrap": "eval.significance",
         "TeacherOptions": "statistical", "align_statistical": "statistical",
         "Aligner": "nmt.aligner", "AlignOptions": "nmt.aligner", "combined_aligner": "combine",
         "combine_fitted": "combine", "train": "training",
         "TrainOptions": "training", "preset_options": "training", "DevSet": "training",
         # the registries a user extends (README, "Extending")
         "register_format": "data.alignments", "RawLink": "data.alignments", "register_score": "nmt.scores",
         "Score": "nmt.scores"}


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
    "RawLink",
    "Score",
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
    "register_format",
    "register_score",
    "score_alignments",
    "score_files",
    "sentence_counts",
    "train",
    "write_naacl",
    "write_pharaoh",
]
