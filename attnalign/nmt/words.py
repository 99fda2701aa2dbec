"""Model-token attention -> word matrices. Pure numpy, no torch.

Extraction (:mod:`.extract`) reads, per pair, the attention over decoder steps ``[T+1, S+1]`` (source
EOS last); these functions cut it to the word matrix ``[T_tgt, S_src]`` and the EOS mass ``[T_tgt]``,
and map subword pieces back to whitespace words.
"""

from __future__ import annotations

import numpy as np


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
