"""make_engine's MySQL connections (tuna/db/engine.py)."""

from __future__ import annotations

import ssl

import pymysql
from sqlalchemy.engine import make_url

from tuna.db.engine import _pymysql_connection, make_engine


def test_pymysql_connections_share_one_tls_context_like_the_one_pymysql_makes(
    mysql_url: str,
) -> None:
    engine = make_engine(mysql_url)
    try:
        with engine.connect() as a, engine.connect() as b:
            first, second = (c.connection.dbapi_connection for c in (a, b))
            assert first is not second
            assert first.ctx is second.ctx
            assert a.exec_driver_sql("SELECT 1").scalar_one() == 1
        shared = first.ctx
    finally:
        engine.dispose()
    url = make_url(mysql_url)
    own = pymysql.connect(host=url.host, port=url.port, user=url.username,
                          password=url.password or "", database=url.database)  # fmt: skip
    try:
        assert own.ctx is not shared  # PyMySQL left alone makes one per connection
        for attribute in ("verify_mode", "check_hostname", "verify_flags", "options"):
            assert getattr(shared, attribute) == getattr(own.ctx, attribute), attribute
        assert shared.verify_mode == ssl.CERT_NONE and not shared.check_hostname
    finally:
        own.close()


def test_explicit_tls_options_get_a_context_of_their_own(mysql_url: str) -> None:
    engine = make_engine(mysql_url)
    try:
        with engine.connect() as conn:
            shared = conn.connection.dbapi_connection.ctx
    finally:
        engine.dispose()
    connection = _pymysql_connection()
    own = connection(host="127.0.0.1", ssl={"verify_mode": "required"}, defer_connect=True)
    assert own.ctx is not shared and own.ctx.verify_mode == ssl.CERT_REQUIRED
    assert connection(host="127.0.0.1", defer_connect=True).ctx is shared
