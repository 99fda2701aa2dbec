"""Scores and pictures, torch-free: AER/P/R/F1 (:mod:`.metrics`), scoring files against a gold and
the one gold reader (:mod:`.scoring`), heatmaps and terminal views (:mod:`.plot`)."""
