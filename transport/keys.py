"""CURVE key pairs for the phone endpoint, and where they live.

Layout of `phone.keys_dir` (what `run.py keys` writes and the runtime reads):

    bus.key_secret, bus.key   the internal bus's pair (transport/bus.py): made by the runtime at
                        its first start, 0600, read by the actors and the CLI; never give it out
    server.key          the runtime's public key: every phone needs a copy
    server.key_secret   the runtime's key pair: stays on the server
    phones/NAME.key_secret, phones/NAME.key   a phone's key pair: give both to that phone
    authorized/NAME.key the allow-list: public keys of the phones the runtime accepts

A phone whose pair was made elsewhere is allowed by copying its PUBLIC key file (NAME.key, never
the .key_secret) into `authorized/`. The runtime reads the allow-list on every handshake, so
adding or removing a file takes effect without a restart.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import msgspec
import zmq
import zmq.auth
from zmq.utils import z85

SERVER = "server"
BUS = "bus"
PHONES = "phones"
AUTHORIZED = "authorized"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class KeyFileError(Exception):
    """A key file is missing or unreadable; the message says which and how to make it."""


class ClientKeys(msgspec.Struct, frozen=True):
    """What a phone needs to connect with CURVE (all z85 text as bytes)."""

    server_public: bytes
    public: bytes
    secret: bytes


class Generated(msgspec.Struct):
    """What `generate` wrote (paths), for the report printed to the user."""

    server_public: str
    server_secret: str
    server_created: bool
    phone_public: str = ""
    phone_secret: str = ""
    authorized: str = ""


def check_name(name: str) -> str:
    if not _NAME.match(name) or name in (SERVER, BUS):
        raise ValueError(f"key name {name!r} is invalid: use letters, digits, '_', '-', '.' (not 'server' or 'bus')")
    return name


def generate(keys_dir: str | os.PathLike, name: str | None = None, *, authorize: bool = True) -> Generated:
    """Create the server pair if it is missing (never replaced), and a phone pair `name` (refused
    if it exists) whose public key is copied into the allow-list when `authorize`."""
    root = Path(keys_dir)
    root.mkdir(parents=True, exist_ok=True)
    server_public, server_secret = root / f"{SERVER}.key", root / f"{SERVER}.key_secret"
    created = not server_secret.exists()
    if created:
        zmq.auth.create_certificates(root, SERVER)
        server_secret.chmod(0o600)
    result = Generated(server_public=str(server_public), server_secret=str(server_secret), server_created=created)
    if name is None:
        return result
    check_name(name)
    phones = root / PHONES
    phones.mkdir(exist_ok=True)
    phone_public, phone_secret = phones / f"{name}.key", phones / f"{name}.key_secret"
    if phone_secret.exists():
        raise KeyFileError(f"{phone_secret} already exists; choose another --name or delete the old pair first")
    zmq.auth.create_certificates(phones, name)
    phone_secret.chmod(0o600)
    result.phone_public, result.phone_secret = str(phone_public), str(phone_secret)
    if authorize:
        allowed = root / AUTHORIZED
        allowed.mkdir(exist_ok=True)
        shutil.copyfile(phone_public, allowed / f"{name}.key")
        result.authorized = str(allowed / f"{name}.key")
    return result


def _load(path: Path, *, secret: bool, hint: str) -> tuple[bytes, bytes | None]:
    try:
        public, secret_key = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise KeyFileError(f"cannot read {path}: {exc}. {hint}") from None
    if secret and not secret_key:
        raise KeyFileError(f"{path} holds no secret key. {hint}")
    return public, secret_key


def load_server_keys(keys_dir: str | os.PathLike) -> tuple[bytes, bytes]:
    """The runtime's (public, secret) pair."""
    hint = f"Run `python run.py keys --dir {keys_dir}` to create it."
    public, secret = _load(Path(keys_dir) / f"{SERVER}.key_secret", secret=True, hint=hint)
    assert secret is not None
    return public, secret


def ensure_bus_keys(keys_dir: str | os.PathLike) -> tuple[bytes, bytes]:
    """The bus pair (public, secret), made first if absent: both files 0600, written aside and
    linked into place, so processes starting together agree on one pair."""
    root = Path(keys_dir)
    final = root / f"{BUS}.key_secret"
    if not final.exists():
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        scratch = Path(tempfile.mkdtemp(prefix=".bus-", dir=root))
        try:
            zmq.auth.create_certificates(scratch, BUS)
            for suffix in (".key_secret", ".key"):  # the secret first: it is the one that counts
                made = scratch / f"{BUS}{suffix}"
                made.chmod(0o600)
                try:
                    os.link(made, root / made.name)
                except FileExistsError:
                    pass  # another process made it first: theirs is the pair
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return load_bus_keys(root)


def load_bus_keys(keys_dir: str | os.PathLike) -> tuple[bytes, bytes]:
    """The bus pair (public, secret) the runtime made; KeyFileError when there is none."""
    hint = "The runtime makes it at its first start in tcp mode (topology.bus_curve); start it first."
    public, secret = _load(Path(keys_dir) / f"{BUS}.key_secret", secret=True, hint=hint)
    assert secret is not None
    return public, secret


def load_allowed_keys(keys_dir: str | os.PathLike) -> set[bytes]:
    """The allow-list: z85 public keys from authorized/*.key. No folder: nobody is allowed."""
    folder = Path(keys_dir) / AUTHORIZED
    if not folder.is_dir():
        return set()
    return set(zmq.auth.load_certificates(folder))


def load_phone_keys(keys_dir: str | os.PathLike, name: str) -> ClientKeys:
    """A phone's pair `phones/NAME.key_secret` and the server's public key, from one keys dir."""
    root = Path(keys_dir)
    hint = f"Run `python run.py keys --dir {keys_dir} --name {name}` to create it."
    server_public, _ = _load(root / f"{SERVER}.key", secret=False, hint=hint)
    public, secret = _load(root / PHONES / f"{name}.key_secret", secret=True, hint=hint)
    assert secret is not None
    return ClientKeys(server_public=server_public, public=public, secret=secret)


def z85_text(raw_key: bytes) -> bytes:
    """A raw 32-byte CURVE key (as ZAP delivers it) in the z85 text form key files use."""
    return z85.encode(raw_key)
