"""Pure problem descriptions: MIOpenDriver grammar, ``ConvProblem``, ``BnProblem`` and db keys.

Nothing here touches a database or a file: values in, values out.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Imported on first use: a worker needs ``ConvProblem`` only, not the grammar and key parsers.
_HOME = {
    "BnProblem": "bnorm",
    "bnorm_key": "bnorm",
    "is_bnorm_line": "bnorm",
    "parse_bnorm_key": "bnorm",
    "parse_bnorm_line": "bnorm",
    "ConvProblem": "conv",
    "InvalidProblemError": "conv",
    "base_arg": "driver",
    "is_conv_line": "driver",
    "parse_driver_line": "driver",
    "to_driver_line": "driver",
    "find_db_key": "keys",
    "is_legacy_find_entry": "keys",
    "legacy_find_entry_as_v2": "keys",
    "network_config": "keys",
    "parse_find_db_key": "keys",
    "parse_perf_db_key": "keys",
    "parse_text_db_line": "keys",
    "perf_db_columns": "keys",
    "perf_db_key": "keys",
}


def __getattr__(name: str) -> Any:
    if name == "to_bnorm_driver_line":
        return importlib.import_module("tuna.problems.bnorm").to_driver_line
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tuna.problems.{home}"), name)
    globals()[name] = value
    return value


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
