"""Environment-driven settings fail loudly on bad values (explorer.env, explorer.settings)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from explorer.env import (env_bool, env_int, env_list, env_str, next_redis_database,
                          parse_database_url)

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("word", ["1", "true", "True", "YES", "on"])
def test_env_bool_reads_true_words(monkeypatch, word):
    monkeypatch.setenv("FLAG", word)
    assert env_bool("FLAG", default=False) is True


@pytest.mark.parametrize("word", ["0", "false", "No", "OFF"])
def test_env_bool_reads_false_words(monkeypatch, word):
    monkeypatch.setenv("FLAG", word)
    assert env_bool("FLAG", default=True) is False


def test_env_bool_uses_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("FLAG", raising=False)
    assert env_bool("FLAG", default=True) is True


def test_env_bool_rejects_a_word_it_does_not_know(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", default=True)


def test_a_variable_set_but_empty_is_an_error(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "")
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL is set but empty"):
        env_str("REDIS_URL", default="redis://127.0.0.1:6379/0")


def test_env_str_without_a_default_requires_the_variable(monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY must be set"):
        env_str("SECRET_KEY")


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("ALLOWED_HOSTS", "example.org, .example.net")
    assert env_list("ALLOWED_HOSTS", default=[]) == ["example.org", ".example.net"]


def test_env_list_rejects_an_empty_item(monkeypatch):
    monkeypatch.setenv("ALLOWED_HOSTS", "example.org,,example.net")
    with pytest.raises(ImproperlyConfigured, match="empty item"):
        env_list("ALLOWED_HOSTS", default=[])


def test_env_int_reads_a_whole_number(monkeypatch):
    monkeypatch.setenv("COMPILE_LEASE_S", " 90 ")
    assert env_int("COMPILE_LEASE_S", default=120, minimum=1) == 90


@pytest.mark.parametrize("value, message", [("ten", "is not a whole number"),
                                            ("0", "below the minimum of 1")])
def test_env_int_rejects_a_bad_number(monkeypatch, value, message):
    monkeypatch.setenv("COMPILE_LEASE_S", value)
    with pytest.raises(ImproperlyConfigured, match=message):
        env_int("COMPILE_LEASE_S", default=120, minimum=1)


def test_settings_refuse_to_start_without_debug_or_a_secret_key(tmp_path):
    # A fresh process, because this process's settings are already loaded.
    env = {key: value for key, value in os.environ.items() if key != "SECRET_KEY"}
    env["DEBUG"] = "false"
    env["SECRET_KEY_FILE"] = str(tmp_path / "no_key_here")
    loaded = subprocess.run(
        [sys.executable, "-c", "import explorer.settings"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.returncode != 0
    assert "SECRET_KEY must be set" in loaded.stderr


def test_parse_database_url_reads_every_part():
    database = parse_database_url(
        "postgres://fusion:s%40cret%2F1@db.example.org:6543/fusion_explorer?sslmode=require")
    assert database == {
        "ENGINE": "django.db.backends.postgresql", "NAME": "fusion_explorer",
        "USER": "fusion", "PASSWORD": "s@cret/1", "HOST": "db.example.org", "PORT": "6543",
        "OPTIONS": {"sslmode": "require"},
    }


def test_parse_database_url_leaves_out_what_the_url_leaves_out():
    database = parse_database_url("postgresql://localhost/explorer")
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["USER"], database["PASSWORD"], database["PORT"]) == ("", "", "")
    assert database["HOST"] == "localhost"
    assert (database["NAME"], database["OPTIONS"]) == ("explorer", {})


@pytest.mark.parametrize("url, message", [
    ("mysql://user:pw@host/db", "unsupported scheme"),
    ("postgres:///db", "names no host"),
    ("postgres://user@host", "must end with the database name"),
    ("postgres://user@host/a/b", "must end with the database name"),
    ("postgres://user@host:port/db", "not a valid URL"),
])
def test_parse_database_url_rejects_a_bad_url(url, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        parse_database_url(url)


def test_parse_database_url_keeps_the_password_out_of_errors():
    with pytest.raises(ImproperlyConfigured) as error:
        parse_database_url("mysql://user:hunter2@host/db")
    assert "hunter2" not in str(error.value)
    assert "user:***@host" in str(error.value)


def _settings_databases(**env) -> subprocess.CompletedProcess:
    """DATABASES as a fresh process loads them with `env` added (and no DATABASE_* of ours)."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("DATABASE_")}
    return subprocess.run(
        [sys.executable, "-c", "import json, explorer.settings as s; "
                               "print(json.dumps(s.DATABASES['default'], default=str))"],
        cwd=REPO_ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60)


def test_settings_use_sqlite_unless_database_url_is_set():
    loaded = _settings_databases()
    assert loaded.returncode == 0, loaded.stderr
    assert '"django.db.backends.sqlite3"' in loaded.stdout


def test_settings_use_postgresql_when_database_url_is_set():
    loaded = _settings_databases(DATABASE_URL="postgres://u:p@db:5432/explorer")
    assert loaded.returncode == 0, loaded.stderr
    assert '"ENGINE": "django.db.backends.postgresql"' in loaded.stdout
    assert '"NAME": "explorer"' in loaded.stdout


def test_settings_refuse_both_database_url_and_database_path():
    loaded = _settings_databases(DATABASE_URL="postgres://db/explorer", DATABASE_PATH="/tmp/x")
    assert loaded.returncode != 0
    assert "DATABASE_URL and DATABASE_PATH are both set" in loaded.stderr


@pytest.mark.parametrize("url, cache", [
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1"),
    ("redis://:secret@redis.internal:6380/3", "redis://:secret@redis.internal:6380/4"),
    ("rediss://redis.internal", "rediss://redis.internal/1"),
])
def test_the_shared_cache_defaults_to_the_redis_database_after_the_queues(url, cache):
    assert next_redis_database(url) == cache


@pytest.mark.parametrize("url", ["unix:///run/redis.sock", "redis://h:6379/0?db=2",
                                 "redis://:secret@h/queues"])
def test_a_redis_url_of_another_form_asks_for_cache_redis_url(url):
    with pytest.raises(ImproperlyConfigured, match="set CACHE_REDIS_URL") as error:
        next_redis_database(url)
    assert "secret" not in str(error.value)


def _throttle_settings(**env) -> subprocess.CompletedProcess:
    """The shared cache's place and TRUSTED_PROXIES as a fresh process loads them with `env`
    added (and none of these variables of ours)."""
    ours = ("REDIS_URL", "CACHE_REDIS_URL", "TRUSTED_PROXIES")
    clean = {key: value for key, value in os.environ.items() if key not in ours}
    return subprocess.run(
        [sys.executable, "-c", "import explorer.settings as s; "
                               "print(s.CACHES['shared']['LOCATION'], s.TRUSTED_PROXIES)"],
        cwd=REPO_ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60)


def test_the_shared_cache_and_the_trusted_proxies_read_the_environment():
    default = _throttle_settings()
    assert default.returncode == 0, default.stderr
    assert default.stdout.split() == ["redis://127.0.0.1:6379/1", "0"]
    moved = _throttle_settings(REDIS_URL="redis://queues:6379/0", TRUSTED_PROXIES="2")
    assert moved.stdout.split() == ["redis://queues:6379/1", "2"]
    named = _throttle_settings(REDIS_URL="unix:///run/redis.sock",
                               CACHE_REDIS_URL="redis://cache:6379/0")
    assert named.stdout.split() == ["redis://cache:6379/0", "0"]
    refused = _throttle_settings(TRUSTED_PROXIES="-1")
    assert "TRUSTED_PROXIES=-1 is below the minimum of 0" in refused.stderr


def _learned_settings(**env) -> subprocess.CompletedProcess:
    """The LEARNED_* settings as a fresh process loads them with `env` added (and no
    LEARNED_* of ours)."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("LEARNED_")}
    return subprocess.run(
        [sys.executable, "-c", "import json, explorer.settings as s; print(json.dumps("
                               "[s.LEARNED_MODEL_DIR, s.LEARNED_DATA_DIRS, "
                               "s.LEARNED_ALLOW_SYNTHETIC], default=str))"],
        cwd=REPO_ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60)


def test_learned_model_settings_default_to_the_projects_folders():
    loaded = _learned_settings()
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout) == [str(REPO_ROOT / "var" / "models"),
                                         [str(REPO_ROOT / "compiler/cost/learned/datasets")],
                                         False]


def test_learned_model_settings_read_the_environment():
    loaded = _learned_settings(LEARNED_MODEL_DIR="/srv/models",
                               LEARNED_DATA_DIRS="/srv/a, data/b",
                               LEARNED_ALLOW_SYNTHETIC="yes")
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout) == ["/srv/models", ["/srv/a", str(REPO_ROOT / "data/b")],
                                         True]
    refused = _learned_settings(LEARNED_ALLOW_SYNTHETIC="sometimes")
    assert refused.returncode != 0
    assert "LEARNED_ALLOW_SYNTHETIC='sometimes' is not a boolean" in refused.stderr


def test_the_development_flag_gets_a_random_key_kept_in_var_never_a_constant(tmp_path):
    """DEBUG=true without SECRET_KEY: a key made once for the checkout (var/secret_key, as
    `make run` makes it), the same for every process, and then read by any process of the
    checkout, DEBUG or not; DEBUG is off when nobody asks for it."""
    key_file = tmp_path / "var" / "secret_key"
    env = {key: value for key, value in os.environ.items()
           if key not in ("SECRET_KEY", "DEBUG")}
    env["SECRET_KEY_FILE"] = str(key_file)
    show = "import explorer.settings as s; print(s.DEBUG, s.SECRET_KEY)"

    def settings(**extra) -> tuple[str, str]:
        loaded = subprocess.run([sys.executable, "-c", show], cwd=REPO_ROOT,
                                env={**env, **extra}, capture_output=True, text=True,
                                timeout=60, check=True)
        return tuple(loaded.stdout.split())

    first, second = settings(DEBUG="true"), settings(DEBUG="true")
    assert first == second and first[0] == "True"
    key = first[1]
    assert len(key) >= 50 and "insecure" not in key
    assert key_file.read_text().strip() == key and key_file.stat().st_mode & 0o077 == 0
    assert settings() == ("False", key)          # a manage.py command after `make run`
    assert settings(SECRET_KEY="x" * 50) == ("False", "x" * 50)


def test_the_https_profile_passes_djangos_deployment_check():
    """HTTPS=true with a long key: `manage.py check --deploy` finds nothing (HSTS, secure
    cookies, the SSL redirect behind a proxy); without it, the check names what is missing."""
    import secrets

    env = {**os.environ, "SECRET_KEY": secrets.token_urlsafe(60), "DEBUG": "false",
           "DJANGO_SETTINGS_MODULE": "explorer.settings"}

    def check(**extra):
        return subprocess.run([sys.executable, "manage.py", "check", "--deploy"],
                              cwd=REPO_ROOT, env={**env, **extra}, capture_output=True,
                              text=True, timeout=120)

    deployed = check(HTTPS="true")
    assert deployed.returncode == 0, deployed.stderr
    assert "no issues" in deployed.stdout
    plain = check()
    assert "SECURE_SSL_REDIRECT" in plain.stdout + plain.stderr
