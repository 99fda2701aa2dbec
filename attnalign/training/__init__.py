"""Training (torch): options and presets (:mod:`.options`, torch-free), the loop (:mod:`.loop`; one
direction's run in :mod:`.run`, validation in :mod:`.dev`), the guided-alignment loss (:mod:`.guide`)
and the model directory's config and log (:mod:`.model_dir`).

The names below are imported on first use, so that ``attnalign.training.options`` (what the CLI
declares its defaults from) can be read without importing torch.
"""

from importlib import import_module

_WHERE = {"guide_loss": ".guide", "guide_targets": ".guide", "train": ".loop", "PRESETS": ".config_file",
          "TrainOptions": ".options", "preset_options": ".config_file", "DevSet": ".dev", "evaluate": ".dev",
          "Reporter": ".run", "lr_at": ".run"}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_WHERE[name], __name__), name)
