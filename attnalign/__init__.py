"""attnalign: word alignment from the attention of neural machine translation models.

Data flow, one module per step::

    corpus.py (files -> token lists) -> vocab/batches -> models -> attention [T_tgt, S_src]
    -> decoding -> alignments.py (links, formats) -> metrics.py / scoring.py -> tables, plots

Conventions: attention matrices are ``[T_tgt, S_src]``; links are ``(src_i, tgt_j)``, 0-based,
source first (Pharaoh order).
"""

__version__ = "0.1.0"

from .alignments import Alignment, read_alignments, write_naacl, write_pharaoh  # noqa: E402
from .corpus import open_corpus, read_corpus  # noqa: E402
from .errors import AttnAlignError, AttnAlignWarning  # noqa: E402
from .metrics import Counts, sentence_counts  # noqa: E402
from .scoring import GoldOptions, score_alignments, score_files  # noqa: E402

__all__ = [
    "Alignment",
    "AttnAlignError",
    "AttnAlignWarning",
    "Counts",
    "GoldOptions",
    "__version__",
    "open_corpus",
    "read_alignments",
    "read_corpus",
    "score_alignments",
    "score_files",
    "sentence_counts",
    "write_naacl",
    "write_pharaoh",
]
