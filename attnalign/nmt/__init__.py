"""The attention NMT side (torch): networks (:mod:`.models`), vocabularies and subwords
(:mod:`.vocab`, :mod:`.subword`), batches (:mod:`.batching`), model directories and checkpoints
(:mod:`.checkpoint`), the device (:mod:`.device`), teacher-forced attention extraction
(:mod:`.extract`, :mod:`.words`) and the :class:`~.aligner.Aligner` that turns a model's attention into
links with :mod:`attnalign.decoding`."""
