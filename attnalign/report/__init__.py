"""``attnalign report``: a self-contained HTML report of alignments against a gold.

One :class:`ReportRequest` says what to score, what to draw and where; :func:`report_files` reads every
input once and writes the folder. The modules: :mod:`.build` (the request, the inputs, the page's
modes), :mod:`.sweep` (every reading of a model's or a saved file's attention, and the default output),
:mod:`.tables` and :mod:`.plots` (what the page shows of the best reading), :mod:`.systems` (the
alignment files compared), :mod:`.page` (the HTML).
"""

from .build import GALLERY, TOP, ReportInputs, ReportRequest, build_report, read_inputs, report_files

__all__ = ["GALLERY", "TOP", "ReportInputs", "ReportRequest", "build_report", "read_inputs", "report_files"]
