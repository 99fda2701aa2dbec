"""Soft attention matrices -> links: decoders (:mod:`.decoders`), link-set symmetrizations
(:mod:`.symmetrize`), the pair-level registry that ``--sym`` reads (:mod:`.pair`) and the blend with the
statistical teacher (:mod:`.teacher`). Torch-free.

Conventions: matrices are ``[T_tgt, S_src]``; links are ``(src_i, tgt_j)``, 0-based.
"""

from .decoders import (
           DECODERS,
           RELATIVE_RATIO,
           THRESHOLD,
           argmax_links,
           argmax_src_links,
           decode_matrix,
           inter_links,
           register_decoder,
           relative_links,
           threshold_links,
)
from .pair import HEAD_DECODING, SYMMETRIZATIONS, decode_pair, register_symmetrization
from .symmetrize import LINK_METHODS, symmetrize
from .teacher import (
           TEACHER_CHOICES,
           TEACHER_CORPUS_CHOICES,
           TEACHER_CORPUS_MAX_PAIRS,
           TEACHER_DECODING,
           TEACHER_DECODING_FIXED,
           TEACHER_DECODING_LARGE,
           TEACHER_MIN_PAIRS,
           JoinedCorpus,
           TeacherView,
           blend,
           teacher_decoding,
)

__all__ = ["DECODERS", "HEAD_DECODING", "LINK_METHODS", "RELATIVE_RATIO", "SYMMETRIZATIONS",
           "TEACHER_CHOICES", "TEACHER_CORPUS_CHOICES", "TEACHER_CORPUS_MAX_PAIRS", "TEACHER_DECODING",
           "TEACHER_DECODING_FIXED", "TEACHER_DECODING_LARGE", "TEACHER_MIN_PAIRS", "THRESHOLD",
           "JoinedCorpus", "TeacherView", "argmax_links", "argmax_src_links", "blend", "decode_matrix",
           "decode_pair", "inter_links", "register_decoder", "register_symmetrization", "relative_links",
           "symmetrize", "teacher_decoding", "threshold_links"]
