"""Pure problem descriptions: MIOpenDriver grammar, ``ConvProblem``, ``BnProblem`` and db keys.

Nothing here touches a database or a file: values in, values out.
"""

from __future__ import annotations

from tuna.problems.bnorm import (
    BnProblem,
    bnorm_key,
    is_bnorm_line,
    parse_bnorm_key,
    parse_bnorm_line,
)
from tuna.problems.bnorm import to_driver_line as to_bnorm_driver_line
from tuna.problems.conv import ConvProblem, InvalidProblemError
from tuna.problems.driver import base_arg, is_conv_line, parse_driver_line, to_driver_line
from tuna.problems.keys import (
    find_db_key,
    is_legacy_find_entry,
    legacy_find_entry_as_v2,
    network_config,
    parse_find_db_key,
    parse_perf_db_key,
    parse_text_db_line,
    perf_db_columns,
    perf_db_key,
)

__all__ = [
    "BnProblem",
    "ConvProblem",
    "InvalidProblemError",
    "base_arg",
    "bnorm_key",
    "find_db_key",
    "is_bnorm_line",
    "is_conv_line",
    "is_legacy_find_entry",
    "legacy_find_entry_as_v2",
    "network_config",
    "parse_bnorm_key",
    "parse_bnorm_line",
    "parse_driver_line",
    "parse_find_db_key",
    "parse_perf_db_key",
    "parse_text_db_line",
    "perf_db_columns",
    "perf_db_key",
    "to_bnorm_driver_line",
    "to_driver_line",
]
