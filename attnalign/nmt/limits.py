"""Extraction's sizes, stated once and torch-free, so that the CLI declares its defaults without
importing torch."""

BATCH_TOKENS = 4000  # padded tokens per batch when attention is extracted (align, plot, report)
MAX_LENGTH = 250  # model tokens per side (EOS included): longer pairs are skipped in align, left out in train
