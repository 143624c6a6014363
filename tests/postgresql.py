"""A throwaway PostgreSQL server for one test session, from Debian's `postgresql` package.

`make system-deps` installs the package; its binaries live in /usr/lib/postgresql/<version>/bin,
which is not on PATH. The server gets a cluster of its own in a new temporary directory (no
cluster of the package's is used or touched) and listens on a free loopback port, with
authentication off (`trust`: only this machine can reach it, and it holds only test data) and
durability off (fsync, synchronous commit and full-page writes: the data is thrown away).

initdb and the server refuse to run as root, which CI and the development machines are: they
run as the package's `postgres` user (`nobody` where that user is missing) through util-linux's
setpriv. `stop` shuts the server down and deletes its directory at the end of the session;
should the session be killed instead, setpriv's parent-death signal stops the server all the
same (its directory is then left in the temporary folder).

The end of this module is the plugin of the child session that runs tests on that server
(tests/explorer/test_on_postgresql.py).
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services import _free_loopback_port

STARTUP_TIMEOUT_S = 30
SHUTDOWN_TIMEOUT_S = 20
DEBIAN_BINARIES = Path("/usr/lib/postgresql")
# The superuser initdb makes, and the database name Django's test runner is given (it creates
# and uses test_<NAME>, connecting to the `postgres` database to do so).
USER = "fusion"
DATABASE = "fusion_explorer"


class NotInstalled(Exception):
    """PostgreSQL's server binaries are not on this machine."""


@dataclass
class PostgreSQL:
    process: subprocess.Popen
    directory: Path
    port: int

    @property
    def url(self) -> str:
        """The DATABASE_URL explorer/settings.py reads."""
        return f"postgres://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def log(self) -> str:
        return (self.directory / "server.log").read_text(errors="replace")

    def stop(self) -> None:
        """A fast shutdown (SIGINT: open sessions are ended), then the cluster is deleted."""
        try:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                try:
                    self.process.wait(SHUTDOWN_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def binaries() -> Path:
    """The directory of initdb and postgres: on PATH, else Debian's newest version."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("postgres"):
        return Path(on_path).resolve().parent
    versions = sorted(DEBIAN_BINARIES.glob("*/bin/postgres"),
                      key=lambda path: [int(part) for part in re.findall(r"\d+", path.parts[-3])])
    if not versions:
        raise NotInstalled("PostgreSQL is not installed (no initdb on PATH or under "
                           f"{DEBIAN_BINARIES}/*/bin); `make system-deps` installs Debian's "
                           "postgresql")
    return versions[-1].parent


def _as_server_user(command: list[str]) -> list[str]:
    """`command` as the unprivileged user when we are root, stopped by SIGINT if we die."""
    if shutil.which("setpriv") is None:
        if os.geteuid() == 0:
            raise RuntimeError("running as root without util-linux's setpriv to start "
                               "PostgreSQL as another user (it refuses root)")
        return command
    prefix = ["setpriv", "--pdeathsig=INT"]
    if os.geteuid() == 0:
        user = _server_user()
        prefix += [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    return prefix + command


def _server_user() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a `postgres` nor a `nobody` user exists "
                       "for PostgreSQL to run as (it refuses root)")


def start() -> PostgreSQL:
    """A new cluster, served once it accepts connections. Raises NotInstalled when there are no
    binaries, RuntimeError (with initdb's output or the server's log) when it does not start."""
    bin_dir = binaries()
    # Not under pytest's temporary directory: that is private to root, and the server's user
    # must reach its data directory and socket.
    directory = Path(tempfile.mkdtemp(prefix="fusion-explorer-postgresql-"))
    if os.geteuid() == 0:
        user = _server_user()
        os.chown(directory, user.pw_uid, user.pw_gid)
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
    initdb = subprocess.run(
        _as_server_user([str(bin_dir / "initdb"), "--pgdata", str(directory / "data"),
                         "--username", USER, "--auth", "trust", "--encoding", "UTF8",
                         "--no-sync"]),
        env=environment, capture_output=True, text=True)
    if initdb.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"initdb failed ({initdb.returncode}):\n{initdb.stdout}{initdb.stderr}")

    port = _free_loopback_port()
    settings = {"listen_addresses": "127.0.0.1", "port": port,
                "unix_socket_directories": str(directory),
                "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
    command = [str(bin_dir / "postgres"), "-D", str(directory / "data")]
    for name, value in settings.items():
        command += ["-c", f"{name}={value}"]
    with (directory / "server.log").open("w") as log:
        process = subprocess.Popen(_as_server_user(command), env=environment, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    server = PostgreSQL(process, directory, port)
    try:
        _wait_until_ready(server)
    except RuntimeError as error:
        log = server.log()
        server.stop()
        raise RuntimeError(f"the PostgreSQL server did not start ({error}):\n{log}") from None
    except BaseException:
        server.stop()
        raise
    return server


def _wait_until_ready(server: PostgreSQL) -> None:
    import psycopg

    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"postgres exited with {server.process.returncode}")
        try:
            psycopg.connect(host="127.0.0.1", port=server.port, user=USER, dbname="postgres",
                            connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no answer within {STARTUP_TIMEOUT_S}s") from None
            time.sleep(0.1)


# --- The child session: `pytest -p tests.postgresql` with DATABASE_URL set ----------------------

@pytest.fixture(scope="session", autouse=True)
def on_postgresql():
    """Fails the session at once unless it really runs on PostgreSQL (a child started without
    DATABASE_URL would test SQLite again and pass)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.exit(f"tests.postgresql is for a session on PostgreSQL; this one is on "
                    f"{connection.vendor} (is DATABASE_URL set?)", returncode=3)
