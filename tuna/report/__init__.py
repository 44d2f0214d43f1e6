"""Reports: an HTML page of figures (PNG, SVG, CSV) about sessions' results and fleet.

Sits beside ``cli/`` at the top of the layers: reads through the services' query
functions (``tuna.results.insight``, ``tuna.jobs.activity``), never writes, never imports
``cli``. Needs the ``report`` extra (matplotlib).
"""

from __future__ import annotations

from tuna.report.build import Baseline, Report, ReportOptions, build_report
from tuna.report.pareto import parse_stat_pair

__all__ = ["Baseline", "Report", "ReportOptions", "build_report", "parse_stat_pair"]
