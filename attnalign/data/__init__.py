"""Files in and out, torch-free: parallel corpora (:mod:`.corpus`), alignment and gold files
(:mod:`.alignments`), saved attention matrices (:mod:`.attnfile`) and safe output files
(:mod:`.fileio`)."""
