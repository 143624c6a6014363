"""The shared cache on a real Redis, as a deployment has it (explorer/settings.py: CACHES
"shared", the database after REDIS_URL's): sessions, through Django's cached_db engine, and the
sign-up limit are kept there, where every web process and machine reads them, and a session
outlives the cache. (The other tests keep the shared cache in their process's memory,
tests/settings.py.)"""
import pytest
import redis
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core.management import call_command

from explorer.env import next_redis_database

ADDRESS = "203.0.113.9"


@pytest.fixture
def shared_redis(redis_url, settings) -> redis.Redis:
    """The shared cache in the test Redis; a client of that database, as another process
    would see it."""
    location = next_redis_database(redis_url)
    settings.CACHES = {**settings.CACHES, "shared": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}
    other = redis.Redis.from_url(location)
    other.flushdb()
    yield other
    other.flushdb()
    other.close()


def keys(other: redis.Redis, part: str) -> list[bytes]:
    return [key for key in other.keys() if part.encode() in key]


def test_a_log_in_keeps_the_session_in_redis_and_in_the_database(shared_redis, client, db):
    User.objects.create_user("ada", password="the-right-password")
    client.post("/accounts/login/", {"username": "ada", "password": "the-right-password"},
                REMOTE_ADDR=ADDRESS)
    session_key = client.cookies["sessionid"].value

    assert keys(shared_redis, f"django.contrib.sessions.cached_db{session_key}")
    assert Session.objects.filter(session_key=session_key).exists()
    # Redis emptied (restarted, evicted): the session is read from the database again.
    shared_redis.flushdb()
    assert client.get("/runs").wsgi_request.user.username == "ada"


def test_the_sign_up_limit_is_counted_in_redis_and_lifted_there(shared_redis, client, db,
                                                                settings):
    settings.SIGNUP_ATTEMPTS_ALLOWED = 2

    def sign_up():
        return client.post("/accounts/signup/", {"username": "grace"}, REMOTE_ADDR=ADDRESS)

    assert [sign_up().status_code for _ in range(3)] == [400, 400, 429]
    # Django's key ":<version>:<key>": the tries counted, the refused one too (harmless: the
    # window's end does not move).
    assert int(shared_redis.get(f":1:throttle:signup:{ADDRESS}")) == 3

    call_command("unlock_address", ADDRESS)

    assert keys(shared_redis, "throttle:signup") == []
    assert sign_up().status_code == 400


@pytest.fixture
def silent_redis():
    """A server that accepts connections and never answers: a Redis that hangs."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"redis://127.0.0.1:{listener.getsockname()[1]}/1"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]    # closed again when the probe is


@pytest.mark.parametrize("redis_is", ["down", "silent"])
def test_pages_are_served_from_the_database_sessions_while_redis_is_away(
        redis_is, silent_redis, shared_redis, client, db, settings, caplog):
    User.objects.create_user("ada", password="the-right-password")
    client.post("/accounts/login/", {"username": "ada", "password": "the-right-password"},
                REMOTE_ADDR=ADDRESS)
    assert client.get("/runs").wsgi_request.user.username == "ada"

    location = (f"redis://127.0.0.1:{closed_port()}/1" if redis_is == "down"
                else silent_redis)
    # The deployment's shared cache (explorer/settings.py), pointed at a Redis that is away;
    # a short socket timeout so that the silent one answers within the test.
    settings.CACHES = {**settings.CACHES, "shared": {
        **settings.CACHES["shared"], "LOCATION": location,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}

    response = client.get("/runs")
    assert response.status_code == 200
    assert response.wsgi_request.user.username == "ada"
    assert "session cache read failed, the database answers" in caplog.text
    # Logging out deletes the session from the database, whatever the cache does.
    client.post("/accounts/logout/")
    assert not client.get("/runs").wsgi_request.user.is_authenticated


@pytest.mark.parametrize("form, field, paused", [
    ("/accounts/signup/", "username", "Sign-ups are paused"),
    ("/accounts/password_reset/", "email", "Password resets are paused")])
def test_sign_ups_and_password_resets_are_refused_while_their_tries_cannot_be_counted(
        form, field, paused, client, db, settings, caplog):
    settings.CACHES = {**settings.CACHES, "shared": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{closed_port()}/1",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}

    response = client.post(form, {field: "grace@example.com"}, REMOTE_ADDR=ADDRESS)

    # Refused with a page that says why, not let through uncounted, nor a server error.
    assert response.status_code == 503
    assert f"{paused}: the service that counts them is not answering" in (
        response.content.decode())
    assert "could not count a try" in caplog.text
