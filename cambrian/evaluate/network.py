"""The destinations an isolated evaluation may reach (`evaluation.network_allow`), resolved to
addresses once, when the evaluator is built; the sandbox's shim forwards exactly these
(`net_relay.py`)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from cambrian.config.destinations import parse_destination
from cambrian.core.errors import ConfigError

MAX_ADDRESSES = 8  # of one host name


@dataclass(frozen=True)
class Destination:
    name: str  # as configured: a host name or an address
    ip: str
    port: int

    def shim_entry(self) -> dict[str, object]:
        return {"name": self.name, "ip": self.ip, "port": self.port}


def resolve_destinations(allow: Iterable[str]) -> tuple[Destination, ...]:
    """Every address of every "HOST:PORT" (a ConfigError naming one that does not resolve)."""
    found: list[Destination] = []
    for entry in allow:
        try:
            host, port = parse_destination(entry)
        except ValueError as exc:
            raise ConfigError(f"evaluation.{exc}") from None
        try:
            addresses = [ipaddress.ip_address(host).compressed]
        except ValueError:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise ConfigError(f"evaluation.network_allow: {host} does not resolve here "
                                  f"({exc}); give its address instead") from None
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))[:MAX_ADDRESSES]
        for address in addresses:
            destination = Destination(host, address, port)
            if destination not in found:
                found.append(destination)
    return tuple(found)
