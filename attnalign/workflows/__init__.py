"""Whole jobs on files, each the library call behind one command: aligning corpus files
(:mod:`.align_files`), training from files (:mod:`.train_files`), the report (:mod:`.report`) and
what ``plot sentence`` draws (:mod:`.views`)."""
