"""A benchmark's scratch database: made on a MariaDB server at Tuna's head revision, dropped after.

    name, url = scratch_database(server_url, "tuna_bench_claims")
    ...
    drop_database(server_url, name)

``server_url`` names the server (any database part is only where the admin connection lands).
Not a test and not part of Tuna: the bench scripts that need a database of their own share it.
"""

from __future__ import annotations

import secrets

from sqlalchemy.engine import make_url

from tuna.db import migrate
from tuna.db.engine import make_engine


def scratch_database(server_url: str, prefix: str = "tuna_bench") -> tuple[str, str]:
    """A new database ``<prefix>_<8 hex digits>`` at the head revision: ``(name, url)``."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = make_engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    admin.dispose()
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    engine.dispose()
    return name, url


def drop_database(server_url: str, name: str) -> None:
    admin = make_engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
    admin.dispose()
