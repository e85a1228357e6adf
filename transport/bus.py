"""The internal bus, authenticated: ZeroMQ CURVE between the actors (and the CLI) in tcp mode.

Over tcp:// any process that can reach a port could otherwise send an actor DeliverEvent,
UseProfile or SessionDelete. With `topology.bus_curve` on, every actor's ROUTER inbox is a
CURVE server and every DEALER link a CURVE client, all with ONE key pair, the bus pair
(`bus.key_secret` in `phone.keys_dir`, made at the runtime's first start, 0600). The ZAP
handler (transport/zap.py) admits a client only if it proves it holds the bus secret key (its
CURVE public key is the bus key), so a peer without the file cannot complete a handshake and
nothing it sends reaches an actor. The CLI (`run.py status`, `llm use`, `skills`, `toolsets
list`, `sessions`) reads the same file: whoever may read the keys dir may drive the runtime.

`bus_curve`: "auto" (the default) is on in tcp mode, loopback included: on 127.0.0.1 any local
process of any user can connect, which is exactly the attack. "on" also covers ipc mode
(unix sockets, otherwise guarded only by the permissions of `topology.ipc_dir`). "off" never.
inproc:// (one process, or actors of one process group) carries no CURVE: nothing outside the
process can reach it.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import zmq

from transport import keys as keyfiles
from transport.zap import zap_reply

ZAP_DOMAIN = b"porfiry-bus"


class BusKeys(NamedTuple):
    public: bytes  # z85
    secret: bytes


def bus_curve_on(mode: str, setting: str) -> bool:
    """Whether the bus is authenticated for this topology mode and `topology.bus_curve`."""
    if setting == "off" or mode == "inproc":
        return False
    return setting == "on" or mode == "tcp"


def needs_curve(address: str) -> bool:
    """inproc:// never goes through ZeroMQ's security handshake (nor leaves the process)."""
    return not address.startswith("inproc://")


def bus_keys(keys_dir: Path, *, create: bool) -> BusKeys:
    """The bus pair; made first if absent and `create` (an actor), else KeyFileError (a CLI
    client: the runtime makes the pair at its first start)."""
    public, secret = (keyfiles.ensure_bus_keys(keys_dir) if create else keyfiles.load_bus_keys(keys_dir))
    return BusKeys(public, secret)


def secure_server(sock: zmq.Socket, keys: BusKeys) -> None:
    """An inbox: a CURVE server whose handshakes the bus domain of the ZAP service checks."""
    sock.curve_server = True
    sock.curve_publickey = keys.public
    sock.curve_secretkey = keys.secret
    sock.zap_domain = ZAP_DOMAIN


def secure_client(sock: zmq.Socket, keys: BusKeys) -> None:
    """A link: a CURVE client that proves it holds the bus secret key."""
    sock.curve_serverkey = keys.public
    sock.curve_publickey = keys.public
    sock.curve_secretkey = keys.secret


def zap_answer(request: list[bytes], keys: BusKeys) -> list[bytes]:
    """Admit a CURVE client whose key is the bus key; refuse anything else."""
    mechanism, credentials = request[7], request[8:]
    if mechanism != b"CURVE" or len(credentials) != 1 or len(credentials[0]) != 32:
        return zap_reply(request, b"400", b"CURVE required")
    if keyfiles.z85_text(credentials[0]) != keys.public:
        return zap_reply(request, b"400", b"not a bus key")
    return zap_reply(request, b"200", b"OK", b"bus")
