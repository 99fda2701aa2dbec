"""Soft attention matrices -> links: decoders (:mod:`.decoders`), link-set symmetrizations
(:mod:`.symmetrize`), the pair-level registry that ``--sym`` reads (:mod:`.pair`) and the policy that
chooses the decoding and the teacher of a run (:mod:`.policy`). Torch-free.

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
from .pair import SYMMETRIZATIONS, decode_pair, register_symmetrization
from .policy import (
           HEAD_DECODING,
           TEACHER_CHOICES,
           TEACHER_CORPUS_CHOICES,
           TEACHER_CORPUS_MAX_PAIRS,
           TEACHER_DECODING,
           TEACHER_DECODING_FIXED,
           TEACHER_DECODING_LARGE,
           TEACHER_LARGE_PAIRS,
           TEACHER_MIN_PAIRS,
           Decoding,
           TeacherPlan,
           choose_decoding,
           teacher_decoding,
)
from .symmetrize import LINK_METHODS, symmetrize

__all__ = ["DECODERS", "HEAD_DECODING", "LINK_METHODS", "RELATIVE_RATIO", "SYMMETRIZATIONS",
           "TEACHER_CHOICES", "TEACHER_CORPUS_CHOICES", "TEACHER_CORPUS_MAX_PAIRS", "TEACHER_DECODING",
           "TEACHER_DECODING_FIXED", "TEACHER_DECODING_LARGE", "TEACHER_LARGE_PAIRS", "TEACHER_MIN_PAIRS",
           "THRESHOLD", "Decoding", "TeacherPlan", "argmax_links", "argmax_src_links", "choose_decoding",
           "decode_matrix", "decode_pair", "inter_links", "register_decoder", "register_symmetrization",
           "relative_links", "symmetrize", "teacher_decoding", "threshold_links"]
