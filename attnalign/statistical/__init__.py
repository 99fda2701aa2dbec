"""The built-in statistical word aligners: the teacher of ``attnalign train --guide auto`` and the
engine of ``attnalign align statistical``.

Modules, bottom up: :mod:`.ids` (the corpus as token ids, the lexical table of co-occurring word
pairs), :mod:`.processes` (torchrun: shares of the pairs, counts summed across processes),
:mod:`.progress` (reports of each pass), :mod:`.kernels`, :mod:`.count_kernels`, :mod:`.gibbs` and
:mod:`.decode_kernels` (the compiled loops), :mod:`.threads` (a model's two directions at once, in
threads sharing the cores; the next chunk decoded ahead),
:mod:`.em` (the EM cells shared by IBM2 and the HMMs, in padded batches), :mod:`.ibm2` (fast_align's
model), :mod:`.hmm` (HMMs, alone or trained by agreement), :mod:`.fertility` (Gibbs-sampled HMMs with
fertility), :mod:`.learned` (what a trained model learned, kept by word, to go on from over new pairs),
:mod:`.teacher_file` (the kept teacher's file), :mod:`.links` (posteriors -> links), :mod:`.registry` (the
aligners by name), :mod:`.options` (:class:`TeacherOptions`, the defaults), :mod:`.align` (the entry
points). Importing this package does not import torch.
"""

from .align import (
    SoftTeacher,
    align_statistical,
    combined_links,
    directional_posteriors,
    iter_links,
)
from .links import posterior_links, viterbi_links, word_prefixes
from .options import (
    COMBINED,
    DEFAULT,
    FERTILITY_PREFIX,
    FERTILITY_THRESHOLD,
    POSTERIOR_THRESHOLD,
    SYMS,
    TeacherOptions,
    check_choices,
)
from .registry import MODELS
from .settings import EM, SAMPLER, EMSettings, SamplerSettings

__all__ = ["COMBINED", "DEFAULT", "EM", "FERTILITY_PREFIX", "FERTILITY_THRESHOLD", "MODELS",
           "POSTERIOR_THRESHOLD", "SAMPLER", "SYMS", "EMSettings", "SamplerSettings", "SoftTeacher",
           "TeacherOptions", "align_statistical", "check_choices", "combined_links", "directional_posteriors",
           "iter_links", "posterior_links", "viterbi_links", "word_prefixes"]
