"""Soft attention matrices -> links: decoders (:mod:`.decoders`), link-set symmetrizations
(:mod:`.symmetrize`) and the pair-level registry that ``--sym`` reads (:mod:`.pair`). Torch-free.

Conventions: matrices are ``[T_tgt, S_src]``; links are ``(src_i, tgt_j)``, 0-based.
"""

from .decoders import (
           DECODERS,
           argmax_links,
           argmax_src_links,
           decode_matrix,
           inter_links,
           register_decoder,
           threshold_links,
)
from .pair import (
    HEAD_DECODING,
    SYMMETRIZATIONS,
    TEACHER_CHOICES,
    TEACHER_CORPUS_CHOICES,
    TEACHER_CORPUS_MAX_PAIRS,
    TEACHER_DECODING,
    TEACHER_DECODING_LARGE,
    TEACHER_MIN_PAIRS,
    blend,
    decode_pair,
    register_symmetrization,
    teacher_decoding,
)
from .symmetrize import LINK_METHODS, METHODS, symmetrize

__all__ = ["DECODERS", "HEAD_DECODING", "LINK_METHODS", "METHODS", "SYMMETRIZATIONS", "TEACHER_CHOICES",
           "TEACHER_CORPUS_CHOICES", "TEACHER_CORPUS_MAX_PAIRS",
           "TEACHER_DECODING", "TEACHER_DECODING_LARGE", "TEACHER_MIN_PAIRS", "argmax_links",
           "argmax_src_links", "blend", "decode_matrix", "decode_pair", "inter_links", "register_decoder",
           "register_symmetrization", "symmetrize", "teacher_decoding", "threshold_links"]
