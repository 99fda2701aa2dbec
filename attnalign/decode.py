"""Alignment decoding: soft attention matrices -> links. Pure numpy, no torch.

Every decoder returns its links sorted in Pharaoh order (by source index, then target index).

A matrix is ``[T_tgt, S_src]`` (row j: target word j's attention over the source words). Links are
``(src_i, tgt_j)``, 0-based. ``eos`` is the optional ``[T_tgt]`` attention mass each target word put on
the source EOS (and no word): an argmax that lands there means "no link".
"""

from __future__ import annotations

import numpy as np

from .alignments import Link


def argmax_links(m: np.ndarray, eos: np.ndarray | None = None) -> list[Link]:
    """Each target word to its most attended source word (none when EOS gets more)."""
    if m.size == 0:
        return []
    best = m.argmax(axis=1)
    keep = np.ones(len(best), dtype=bool) if eos is None else m.max(axis=1) >= eos
    return sorted((int(i), int(j)) for j, i in enumerate(best) if keep[j])


def argmax_src_links(m: np.ndarray, eos: np.ndarray | None = None) -> list[Link]:
    """Each source word to its most attended-from target word (column argmax of ``[T, S]``).

    ``eos`` here is per source word ``[S]`` (e.g. a reverse model's EOS mass): more mass there means
    no link for that source word.
    """
    if m.size == 0:
        return []
    best = m.argmax(axis=0)
    keep = np.ones(len(best), dtype=bool) if eos is None else m.max(axis=0) >= eos
    return sorted((int(i), int(j)) for i, j in enumerate(best) if keep[i])


def inter_links(m: np.ndarray, eos: np.ndarray | None = None) -> list[Link]:
    """Links where the row argmax and the column argmax agree (within one matrix)."""
    cols = set(argmax_src_links(m))
    return [link for link in argmax_links(m, eos) if link in cols]


def threshold_links(m: np.ndarray, threshold: float) -> list[Link]:
    """Every (source, target) cell whose weight exceeds ``threshold``."""
    tj, si = np.nonzero(m > threshold)
    return sorted((int(i), int(j)) for j, i in zip(tj, si, strict=True))


DECODERS = ("argmax", "argmax-src", "inter", "threshold")
DECODER_CHOICES = ("auto", *DECODERS)  # "auto" is resolved per model by align.resolve_decoding

# What "auto" means for a bidirectional model with an alignment head (``train --preset align``; see
# align.resolve_decoding): the decoding chosen on the English-French trial set by bench/quality.py
# (README, "Alignment quality"); for the preset's student (4,000 sentencepiece pieces per side, guided
# by hmm-agree+fertility) that is soft symmetrization (the mean of the two directions' matrices) with
# argmax (trial AER 6.9; threshold 0.4: 7.8, 0.5: 7.4; grow-diag-final-and: 9.6). The threshold only
# serves --decoder threshold. Kept here, torch-free, so that the CLI's help can quote it.
HEAD_DECODING = {"sym": "soft", "decoder": "argmax", "threshold": 0.5}


def decode_matrix(m: np.ndarray, decoder: str = "argmax", eos: np.ndarray | None = None,
                  threshold: float = 0.5) -> list[Link]:
    """Decode one ``[T, S]`` matrix with a named decoder (see :data:`DECODERS`)."""
    if decoder == "argmax":
        return argmax_links(m, eos)
    if decoder == "argmax-src":
        return argmax_src_links(m)
    if decoder == "inter":
        return inter_links(m, eos)
    if decoder == "threshold":
        return threshold_links(m, threshold)
    raise ValueError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")


def select_rows(att: np.ndarray, src_len: int, tgt_len: int, shift: int = 0
                ) -> tuple[np.ndarray, np.ndarray]:
    """Cut one example's attention over decoder steps ``[T+1, S+1]`` (source EOS last) into the word
    matrix ``[T, S]`` and the EOS mass ``[T]``.

    With ``shift=0`` target word t takes the row of the step that predicts it (rows 0..T-1); with
    ``shift=1`` (Shift-Att) the row of the step where it is the decoder input (rows 1..T).
    """
    if shift not in (0, 1):
        raise ValueError("shift must be 0 or 1")
    rows = att[shift : shift + tgt_len]
    return rows[:, :src_len], rows[:, src_len]


def tokens_to_words(m: np.ndarray, eos: np.ndarray, src_index: list[int], tgt_index: list[int],
                    n_src: int, n_tgt: int) -> tuple[np.ndarray, np.ndarray]:
    """Map a token-level matrix ``[T_tok, S_tok]`` (and EOS mass ``[T_tok]``) to words: a source word
    gets the sum of its pieces' columns, a target word the mean of its pieces' rows.

    ``src_index[k]`` / ``tgt_index[k]`` is the word of token k. Rows of each result still sum to 1
    (with the EOS mass) when the token rows did.
    """
    cols = np.zeros((m.shape[0], n_src), dtype=m.dtype)
    np.add.at(cols.T, np.asarray(src_index, dtype=np.intp), m.T)  # sum over a source word's pieces
    rows = np.zeros((n_tgt, n_src), dtype=m.dtype)
    t_idx = np.asarray(tgt_index, dtype=np.intp)
    np.add.at(rows, t_idx, cols)
    e = np.zeros(n_tgt, dtype=m.dtype)
    np.add.at(e, t_idx, eos)
    count = np.bincount(t_idx, minlength=n_tgt).astype(m.dtype)  # mean over a target word's pieces
    count[count == 0] = 1
    return rows / count[:, None], e / count
