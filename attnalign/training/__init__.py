"""Training (torch): options and presets (:mod:`.options`), the loop (:mod:`.loop`; one direction's
run in :mod:`.run`, both trained together in :mod:`.joint`), the alignment objectives
(:mod:`.objectives`), the guided-alignment loss (:mod:`.guide`) and the model directory's config and
log (:mod:`.model_dir`)."""

from .dev import DevSet, evaluate
from .guide import guide_loss, guide_targets
from .loop import train
from .options import PRESETS, TrainOptions, preset_options
from .run import Reporter, lr_at

__all__ = ["PRESETS", "DevSet", "Reporter", "TrainOptions", "evaluate", "guide_loss", "guide_targets",
           "lr_at", "preset_options", "train"]
