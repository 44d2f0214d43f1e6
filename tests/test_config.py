from __future__ import annotations

from pathlib import Path

import pytest

from tuna.config import load_settings, mask_url, seconds_setting
from tuna.errors import ConfigurationError


def test_embedded_sqlite_when_nothing_is_set(tmp_path):
    s = load_settings({"TUNA_DATA_DIR": str(tmp_path)})
    assert s.db_url.get_backend_name() == "sqlite"
    assert s.db_url.database == str(tmp_path / "tuna.db")
    assert s.source == "embedded default"


def test_tuna_db_url_wins_over_predecessor_vars():
    s = load_settings({"TUNA_DB_URL": "mysql://u:pw@h:3307/db", "TUNA_DB_HOSTNAME": "other"})
    assert s.db_url.drivername == "mysql+pymysql"
    assert (s.db_url.host, s.db_url.port, s.db_url.database) == ("h", 3307, "db")


def test_predecessor_variables_build_a_mysql_url():
    s = load_settings(
        {
            "TUNA_DB_USER_NAME": "tuna",
            "TUNA_DB_USER_PASSWORD": "s3cret",
            "TUNA_DB_HOSTNAME": "head:3310",
            "TUNA_DB_NAME": "tunadb",
        }
    )
    assert s.db_url.drivername == "mysql+pymysql"
    assert (s.db_url.username, s.db_url.host, s.db_url.port) == ("tuna", "head", 3310)
    assert s.db_url.database == "tunadb"
    assert "s3cret" not in s.db_url_masked
    assert s.db_url_masked == "mysql+pymysql://tuna:***@head:3310/tunadb"


def test_incomplete_predecessor_variables_name_what_is_missing():
    with pytest.raises(ConfigurationError, match="TUNA_DB_NAME"):
        load_settings({"TUNA_DB_HOSTNAME": "head", "TUNA_DB_USER_NAME": "u"})


def test_bad_url_is_a_configuration_error_without_echoing_it():
    with pytest.raises(ConfigurationError) as e:
        load_settings({"TUNA_DB_URL": "not a url with secret"})
    assert "secret" not in str(e.value)


def test_mask_url_hides_password():
    assert mask_url("mysql+pymysql://a:topsecret@h/db") == "mysql+pymysql://a:***@h/db"


def test_log_dir_defaults_under_the_data_dir_and_follows_tuna_log_dir(tmp_path):
    from tuna.config import log_dir

    assert log_dir({"TUNA_DATA_DIR": str(tmp_path)}) == tmp_path / "logs"
    assert log_dir({"TUNA_DATA_DIR": str(tmp_path), "TUNA_LOG_DIR": "/x/y"}) == Path("/x/y")


def test_db_url_file_is_read_when_no_url_is_given(tmp_path):
    f = tmp_path / "db_url"
    f.write_text("mysql+pymysql://tuna:secret@10.77.0.1:3307/tuna\n")
    s = load_settings({"TUNA_DB_URL_FILE": str(f)})
    assert s.db_url.host == "10.77.0.1"
    assert s.db_url.password == "secret"
    assert "secret" not in s.db_url_masked


def test_unreadable_db_url_file_says_which_file(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(ConfigurationError, match="TUNA_DB_URL_FILE=.*nope"):
        load_settings({"TUNA_DB_URL_FILE": str(missing)})


@pytest.mark.parametrize(
    "text",
    [
        "mysql+pymysql://tuna:p@ss@head:3306/tuna",
        "mysql://tuna:p@ss:w@rd@head/tuna",
        "mysql+pymysql://tuna:@@@head:3306/tuna",
        "mysql+pymysql://tuna:p@ss/w@rd@head:3306/tuna",
    ],
)
def test_a_password_with_at_signs_is_read_whole_and_masked_whole(text):
    password = text.split("://", 1)[1].split(":", 1)[1].rsplit("@", 1)[0]
    s = load_settings({"TUNA_DB_URL": text})
    assert s.db_url.password == password
    assert s.db_url.host == "head"
    assert s.db_url.database == "tuna"
    for shown in (s.db_url_masked, mask_url(text), mask_url(s.db_url)):
        assert shown.startswith(("mysql+pymysql://tuna:***@head", "mysql://tuna:***@head")), shown
        for piece in {password, *password.split("@"), *password.split(":")} - {""}:
            assert piece not in shown.split("://", 1)[1].replace("tuna", ""), shown


@pytest.mark.parametrize(
    "text",
    [
        "mysql://tuna:p@ss@head:abc/tuna",  # bad port
        "mysql//tuna:p@ss@head/tuna",  # no scheme separator
        "tuna:p@ss@head",
        "mysql+pymysql://tuna:p@ss@",
    ],
)
def test_a_malformed_url_never_shows_its_password(text):
    assert "ss" not in mask_url(text).replace("mysql", "")
    with pytest.raises(ConfigurationError) as e:
        load_settings({"TUNA_DB_URL": text})
    assert "p@ss" not in str(e.value) and "ss@" not in str(e.value)


def test_a_port_that_is_not_a_number_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="port 'abc' is not a number"):
        load_settings({"TUNA_DB_URL": "mysql://u:pw@h:abc/db"})
    with pytest.raises(ConfigurationError, match="TUNA_DB_HOSTNAME: port 'abc' is not a number"):
        load_settings({"TUNA_DB_HOSTNAME": "h:abc", "TUNA_DB_NAME": "d", "TUNA_DB_USER_NAME": "u"})


def test_a_seconds_setting_is_its_default_unset_and_refuses_nonsense_saying_what_to_give():
    assert seconds_setting("TUNA_X_EVERY", 3.0, {}) == 3.0
    assert seconds_setting("TUNA_X_EVERY", 3.0, {"TUNA_X_EVERY": " "}) == 3.0
    assert seconds_setting("TUNA_X_EVERY", 3.0, {"TUNA_X_EVERY": "0.5"}) == 0.5
    for bad in ("0", "-1", "ten", "inf", "nan"):
        with pytest.raises(ConfigurationError) as err:
            seconds_setting("TUNA_X_EVERY", 3.0, {"TUNA_X_EVERY": bad})
        assert str(err.value) == (
            f"TUNA_X_EVERY={bad!r}: expected a number of seconds above 0, e.g. 3"
        )
