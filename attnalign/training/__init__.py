"""Training (torch): options and presets (:mod:`.options`), the loop (:mod:`.loop`), the guided-
alignment loss (:mod:`.guide`) and the model directory's config and log (:mod:`.model_dir`)."""

from .guide import guide_loss, guide_targets
from .loop import DevSet, Reporter, evaluate, lr_at, train
from .options import PRESETS, TrainOptions, preset_options

__all__ = ["PRESETS", "DevSet", "Reporter", "TrainOptions", "evaluate", "guide_loss", "guide_targets",
           "lr_at", "preset_options", "train"]
