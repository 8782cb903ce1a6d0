"""Where `judge serve` listens, and running the server on it.

The listening sockets are bound here, before uvicorn starts, so that every way of failing to
listen (a --host that is no address, one this machine does not have, a port in use, a port
below 1024 without the right to it) is one `ListenError` naming the address, which the CLI
prints as one line with exit 2. (uvicorn, binding itself, logs the error and exits 3.) Bound
first, the real port of `--port 0` is known before the start message is printed.

Like asyncio's own `create_server`, a name is bound on every address it resolves to
(`localhost`: 127.0.0.1 and ::1), skipping an address family the machine has turned off, and
IPv6 sockets are IPv6-only, so `::` and `0.0.0.0` can be bound side by side.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any

from judge.errors import JudgeError

#: the Host headers a loopback server answers (an IPv6 literal arrives in brackets)
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]
#: connections the kernel queues before the server accepts them (uvicorn's default)
BACKLOG = 2048
#: seconds `serve` waits for requests in flight when told to stop, before closing them
GRACEFUL_S = 5
#: what a host name may be made of (letters, digits, dots, hyphens; IPv6 literals aside)
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789.-_")


class ListenError(JudgeError):
    """The server cannot listen where it was asked to, or cannot start."""


def plain_host(host: str) -> str:
    """`host` without the brackets of an IPv6 literal (`[::1]` → `::1`)."""
    h = host.strip()
    return h[1:-1] if h.startswith("[") and h.endswith("]") else h


def shown(host: str, port: int) -> str:
    """host:port as a URL writes it (IPv6 in brackets)."""
    h = plain_host(host)
    return f"[{h}]:{port}" if ":" in h else f"{h}:{port}"


def is_loopback(host: str) -> bool:
    h = plain_host(host).lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def check_host(host: str) -> str:
    """The host to bind, checked: an IP address or a host name, nothing else."""
    h = plain_host(host)
    try:
        ipaddress.ip_address(h)
        return h
    except ValueError:
        pass
    labels = h.lower().rstrip(".").split(".")
    if not h or len(h) > 253 or not set(h.lower()) <= _NAME_CHARS or \
            any(not label or len(label) > 63 for label in labels):
        raise ListenError(f"--host {host!r}: not an IP address or a host name")
    return h


def bind(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to every address of `host` on `port` (0: one free port, on the first
    address) and listening: a client that connects before the server runs waits for it.
    ListenError, one line, if any cannot be."""
    h = check_host(host)
    where = shown(h, port)
    try:
        infos = socket.getaddrinfo(h, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP,
                                   flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ListenError(f"cannot listen on {where}: --host {host!r} is not an address of "
                          f"this machine ({reason})") from None
    addresses: list[tuple[socket.AddressFamily, Any]] = []
    for info in infos:
        if (info[0], info[4]) not in addresses:
            addresses.append((info[0], info[4]))
    if port == 0:
        addresses = addresses[:1]  # one free port; asyncio would pick one per address
    bound: list[socket.socket] = []
    try:
        for af, sockaddr in addresses:
            # proto TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and
            # without it every page waited ~40 ms on the client's delayed ACK (Nagle)
            sock = socket.socket(af, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if af == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(sockaddr)
                sock.listen(BACKLOG)  # connections wait from now on, until the server is up
            except OSError as exc:
                sock.close()
                if exc.errno == errno.EADDRNOTAVAIL and len(addresses) > 1:
                    continue  # that family is turned off here: the other addresses serve
                raise ListenError(f"cannot listen on {shown(str(sockaddr[0]), port)}: "
                                  f"{_reason(exc)}") from None
            bound.append(sock)
    except BaseException:
        for sock in bound:
            sock.close()
        raise
    if not bound:
        raise ListenError(f"cannot listen on {where}: no address of it is available here")
    return bound


def _reason(exc: OSError) -> str:
    text = (exc.strerror or str(exc)).lower()
    if exc.errno == errno.EADDRINUSE:
        return f"{text} (another server listens there: stop it or pick another --port)"
    if exc.errno == errno.EACCES:
        return f"{text} (a port below 1024 needs privileges: pick another --port)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{text} (--host is not an address of this machine)"
    return text


def bound_port(sockets: list[socket.socket]) -> int:
    return int(sockets[0].getsockname()[1])


def run(app: Any, sockets: list[socket.socket]) -> None:
    """Serve `app` on `sockets` until SIGINT or SIGTERM (uvicorn handles both: requests in
    flight get GRACEFUL_S seconds). Ctrl-C is the way to stop it: it returns normally. The
    sockets are closed when it returns. ListenError if the server did not start."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", server_header=False,
                            proxy_headers=False, lifespan="off", backlog=BACKLOG,
                            timeout_graceful_shutdown=GRACEFUL_S)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:  # uvicorn stopped on SIGINT, then raised it again: done
        pass
    except SystemExit as exc:  # uvicorn's way of saying it could not start
        raise ListenError(f"the server did not start (uvicorn exit {exc.code})") from None
    finally:
        for sock in sockets:
            sock.close()
    if not server.started:
        raise ListenError("the server did not start")
