"""A throwaway PostgreSQL server: Debian's `initdb` and `pg_ctl` into a directory, reachable only
through a unix socket in that directory (no TCP port to collide with). For the test session and
for `run.py cluster up` when no storage.url is given. PostgreSQL refuses to run as root: as root,
the server runs as the `postgres` user (Debian's package creates it), else as `nobody`.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
import tempfile

SUPERUSER = "porfiry"
DATABASE = "porfiry"
START_TIMEOUT_S = 60


class PgServerError(Exception):
    """The server could not be set up or started; the message says why (and where its log is)."""


def find_bin(name: str) -> str | None:
    """Debian's server binaries live in /usr/lib/postgresql/VERSION/bin, not on PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(Path(p).parts[-3]))
    return found[-1] if found else shutil.which(name)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run_as() -> str | None:
    """The user to run the server as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise PgServerError("running as root, and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL as")


def _command(argv: list[str], user: str | None) -> list[str]:
    return argv if user is None else ["runuser", "-u", user, "--", *argv]


@dataclass
class PgServer:
    """A server whose data, socket and log are all under `root`."""

    root: Path
    port: int

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.root}&port={self.port}"

    def running(self) -> bool:
        pg_ctl = find_bin("pg_ctl")
        return bool(pg_ctl) and subprocess.run(_command([pg_ctl, "-D", str(self.data), "status"], _run_as()),
                                               capture_output=True).returncode == 0

    def start(self, *, durable: bool = True) -> None:
        """initdb (once) and start; `durable=False` turns fsync off (tests: nothing to keep)."""
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        if not initdb or not pg_ctl:
            raise PgServerError("PostgreSQL's initdb/pg_ctl are not installed (Debian: apt-get install postgresql)")
        user = _run_as()
        self.root.mkdir(parents=True, exist_ok=True)
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            _open_for_traversal(self.root)
            closed = [str(d) for d in self.root.resolve().parents if not os.stat(d).st_mode & 0o001]
            if closed:
                raise PgServerError(f"PostgreSQL runs as user {user}, which cannot reach {self.root}: "
                                    f"{', '.join(closed)} must be traversable (chmod o+x)")
        if not (self.data / "PG_VERSION").exists():
            self._check(_command([initdb, "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                                  "--locale=C.UTF-8", "--no-instructions"], user), "initdb")
        options = f"-k {self.root} -p {self.port} -c listen_addresses='' -c max_connections=200"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._check(_command([pg_ctl, "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                              "-t", str(START_TIMEOUT_S), "start"], user), "pg_ctl start")
        self._create_database()

    def _create_database(self) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                conn.execute(f"CREATE DATABASE {DATABASE}")

    def stop(self, mode: str = "fast") -> None:
        pg_ctl = find_bin("pg_ctl")
        if pg_ctl and self.data.exists():
            subprocess.run(_command([pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"], _run_as()),
                           capture_output=True, timeout=START_TIMEOUT_S)

    def _check(self, argv: list[str], what: str) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=START_TIMEOUT_S + 30)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise PgServerError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}\n{log}")


def _open_for_traversal(root: Path) -> None:
    """The runtime makes its folders private (umask 077), so PostgreSQL's own user could not
    reach its directory under them: the folders on the way that this user owns inside the
    repository or the temporary directory get o+x (pass through, never list)."""
    mine = [Path(tempfile.gettempdir()).resolve(), Path(__file__).resolve().parent.parent]
    for folder in root.resolve().parents:
        info = os.stat(folder)
        if (not info.st_mode & 0o001 and info.st_uid == os.getuid()
                and any(folder != top and folder.is_relative_to(top) for top in mine)):
            os.chmod(folder, info.st_mode | 0o001)
