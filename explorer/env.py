"""Readers for settings that come from environment variables.

Each reader raises ImproperlyConfigured naming the variable and what it accepts, so a typo in a
deployment stops the server at start-up instead of silently falling back to a default.
A variable that is set but empty counts as a mistake too: unset it to get the default.
"""
import os
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is not None and not value.strip():
        raise ImproperlyConfigured(f"{name} is set but empty; give it a value or unset it.")
    return value


def env_str(name: str, default: str | None = None) -> str:
    """The variable's value; `default` when unset. With no default the variable is required."""
    value = _raw(name)
    if value is not None:
        return value
    if default is None:
        raise ImproperlyConfigured(f"{name} must be set.")
    return default


def env_bool(name: str, default: bool) -> bool:
    """True for 1/true/yes/on, False for 0/false/no/off (any case); anything else is an error."""
    value = _raw(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    accepted = ", ".join(sorted(TRUE_WORDS | FALSE_WORDS))
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use one of: {accepted}.")


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list, e.g. ALLOWED_HOSTS=example.org,.example.net."""
    value = _raw(name)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",")]
    if not all(items):
        raise ImproperlyConfigured(f"{name}={value!r} has an empty item; remove the extra comma.")
    return items


def env_int(name: str, default: int, minimum: int = 0) -> int:
    """A whole number no smaller than `minimum`, e.g. COMPILE_TIME_LIMIT_S=900."""
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a whole number.") from None
    if number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below the minimum of {minimum}.")
    return number


# URL schemes DATABASE_URL accepts, and the Django backend each one selects.
DATABASE_SCHEMES = {"postgres": "django.db.backends.postgresql",
                    "postgresql": "django.db.backends.postgresql"}


def parse_database_url(url: str, name: str = "DATABASE_URL") -> dict:
    """A Django DATABASES entry for postgres://USER:PASSWORD@HOST:PORT/NAME (also
    postgresql://). User, password and port are optional; percent-escapes in the user, the
    password and the name are decoded (a password holding '@' or '/' must escape them), and
    query parameters (?sslmode=require) become the backend's OPTIONS. Anything else raises
    ImproperlyConfigured naming the variable, with the password left out of the message."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise ImproperlyConfigured(f"{name} is not a valid URL: {error}.") from None
    shown = _without_password(parts)
    engine = DATABASE_SCHEMES.get(parts.scheme.lower())
    if engine is None:
        accepted = ", ".join(f"{scheme}://" for scheme in DATABASE_SCHEMES)
        raise ImproperlyConfigured(
            f"{name}={shown!r} has an unsupported scheme; use one of: {accepted} "
            "(leave it unset for the SQLite file in var/).")
    if not parts.hostname:
        raise ImproperlyConfigured(f"{name}={shown!r} names no host.")
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise ImproperlyConfigured(
            f"{name}={shown!r} must end with the database name, as in /fusion_explorer.")
    options = {}
    for key, values in parse_qs(parts.query, keep_blank_values=True,
                                strict_parsing=False).items():
        options[key] = values[-1]
    return {
        "ENGINE": engine,
        "NAME": database,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname,
        "PORT": str(port) if port is not None else "",
        "OPTIONS": options,
    }


def _without_password(parts) -> str:
    """The URL as it may appear in an error message: any password replaced by ***."""
    if parts.password is None:
        return parts.geturl()
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return parts._replace(netloc=f"{user}:***@{netloc[1]}").geturl()


def next_redis_database(url: str, name: str = "REDIS_URL") -> str:
    """`url` (redis://HOST:PORT/N or rediss://) with the next database number, N+1 (N is 0
    when the URL names none): the cache's place beside the queues' on the same server, so that
    clearing the cache (Redis's FLUSHDB) never drops a queued job. A URL of another form (a
    socket path, ?db=) raises ImproperlyConfigured asking for CACHE_REDIS_URL."""
    parts = urlsplit(url.strip())
    path = parts.path.strip("/")
    if parts.scheme not in ("redis", "rediss") or "db" in parse_qs(parts.query) or (
            path and not path.isdigit()):
        raise ImproperlyConfigured(
            f"{name}={_without_password(parts)!r} is not of the form redis://HOST:PORT/N; set "
            "CACHE_REDIS_URL to the Redis database the cache and sessions may use.")
    return parts._replace(path=f"/{int(path or 0) + 1}").geturl()
