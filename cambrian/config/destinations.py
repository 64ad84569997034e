"""`evaluation.network_allow`: "HOST:PORT" destinations an isolated evaluation may still reach
(a scorer service it scores against, say). Parsed here when the config is read; resolved to
addresses when the evaluator is built (`evaluate/network.py`)."""

from __future__ import annotations

import ipaddress
import re

# A DNS name (labels of letters, digits, hyphens and underscores) or an address.
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_-]{1,63})*\.?$")


def parse_destination(text: str) -> tuple[str, int]:
    """(host, port) of "host:port", "1.2.3.4:port" or "[::1]:port"; ValueError saying why not."""
    example = 'e.g. "scorer.example.org:443", "127.0.0.1:8000" or "[::1]:8000"'
    host, separator, port_text = str(text).strip().rpartition(":")
    if not separator or not host:
        raise ValueError(f"network_allow entry {text!r} is not HOST:PORT ({example})")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if ":" not in host:
            raise ValueError(f"network_allow entry {text!r}: brackets are for IPv6 addresses")
    elif ":" in host:
        raise ValueError(f"network_allow entry {text!r}: write an IPv6 address in brackets "
                         f"({example})")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"network_allow entry {text!r}: the port must be a number from 1 to "
                         "65535")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOST_NAME.match(host):
            raise ValueError(f"network_allow entry {text!r}: {host!r} is neither a host name "
                             "nor an IP address") from None
    else:
        if ipaddress.ip_address(host).is_unspecified:
            raise ValueError(f"network_allow entry {text!r}: {host} is no single destination")
    return host, int(port_text)
