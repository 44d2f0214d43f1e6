"""What measurements are taken on: platform facts, collected and stored content-addressed.

:mod:`tuna.platforms.collect` reads this machine's facts (no database); :mod:`tuna.platforms.store`
composes them with the user's ``--platform-json`` additions and stores the document once.
"""

from __future__ import annotations

from tuna.platforms.store import (
    PlatformJsonError,
    canonical,
    compose,
    digest,
    platform_info,
    read_user_platform,
    report_platform,
    store_platform,
)

__all__ = [
    "PlatformJsonError",
    "canonical",
    "compose",
    "digest",
    "platform_info",
    "read_user_platform",
    "report_platform",
    "store_platform",
]
