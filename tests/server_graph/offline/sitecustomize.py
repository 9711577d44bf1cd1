"""Loopback only, for the LangGraph server the tests start: this folder goes
first on the server's ``PYTHONPATH``, so Python imports this module at
startup, before the CLI's analytics thread, the version check or any graph.

An audit hook refuses every socket connection (and name lookup) that is not
to loopback or a unix socket, and appends what was refused to the file named
by ``POOLSPLIT_NET_LOG``; the test asserts the file stays empty. Sockets
opened inside uvloop's C code raise no audit event, so this guards the
Python-level clients (urllib, requests, httpx over the standard library).
"""

import ipaddress
import os
import sys

_LOG = os.environ.get("POOLSPLIT_NET_LOG")
_LOCAL_NAMES = {"localhost", "ip6-localhost", "ip6-loopback"}


def _is_local(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guard(event: str, args: tuple) -> None:
    if event == "socket.connect" or event == "socket.sendto":
        address = args[1]
        if not isinstance(address, tuple):  # a unix socket path
            return
        host = address[0]
    elif event == "socket.getaddrinfo":
        host = args[0]
    else:
        return
    if _is_local(host):
        return
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as out:
            out.write("%s %r\n" % (event, host))
    raise OSError("network access refused under the test server: %s %r" % (event, host))


if _LOG:
    sys.addaudithook(_guard)
