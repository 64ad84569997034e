"""Who may use the UI: whoever has its token, on loopback too (a candidate program, or any
other local user, can reach a loopback port as well as the person watching the run). The token
is random per server unless ``--token`` names one, and the address the CLI prints carries it as
``?token=...``: opening it once sets a same-site, HTTP-only cookie (named after the server's
port, so two UIs on one host keep theirs) and redirects to the same page without it; scripts
may send it as a bearer header instead. Serving beyond loopback needs an explicit ``--token``.
Every POST must also be JSON from this origin, so another web page cannot steer a run through
the browser (cross-site requests of that kind need a CORS permission this server never
gives)."""

from __future__ import annotations

import ipaddress
import secrets
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

COOKIE = "cambrian_ui_token"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ValueError(f"serving on {host} (not a loopback address) needs --token; anyone "
                         "who can reach the address could otherwise read and steer your runs")


def new_token() -> str:
    return secrets.token_urlsafe(24)


def cookie_name(port: int | None) -> str:
    return f"{COOKIE}_{port}" if port else COOKIE


class Guard:
    """ASGI middleware: the token check and the same-origin JSON POSTs."""

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("the web UI needs a token")
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        name = cookie_name((scope.get("server") or (None, None))[1])
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        if given and secrets.compare_digest(given, self.token):
            if scope["method"] in ("GET", "HEAD"):
                await _enter(send, scope, query, self._cookie(name))
                return
        elif not self._known(headers, name):
            await _plain(send, 401, "a token is needed: open the address `cambrian ui` (or "
                                    "`cambrian run --ui`) printed, which ends in ?token=...")
            return
        if scope["method"] not in ("GET", "HEAD") and not _same_origin_json(headers):
            await _plain(send, 403, "steering requests must be JSON from this page")
            return
        await self.app(scope, receive, send)

    def _cookie(self, name: str) -> str:
        cookie = SimpleCookie()
        cookie[name] = self.token
        cookie[name]["httponly"] = True
        cookie[name]["samesite"] = "Strict"
        cookie[name]["path"] = "/"
        return cookie[name].OutputString()

    def _known(self, headers: dict[str, str], name: str) -> bool:
        bearer = headers.get("authorization", "")
        if bearer.startswith("Bearer ") and secrets.compare_digest(bearer[7:], self.token):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed cookie header is no token
            return False
        given = cookie.get(name)
        return given is not None and secrets.compare_digest(given.value, self.token)


async def _enter(send: Any, scope: dict[str, Any], query: dict[str, list[str]],
                 cookie: str) -> None:
    """The page asked for, without the token in its address, with the cookie set."""
    rest = urlencode([(key, value) for key, values in query.items() if key != "token"
                      for value in values])
    location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode("latin-1")),
                            (b"set-cookie", cookie.encode("latin-1")),
                            (b"cache-control", b"no-store"),
                            (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def _same_origin_json(headers: dict[str, str]) -> bool:
    if not headers.get("content-type", "").startswith("application/json"):
        return False
    origin = headers.get("origin")
    return origin is None or urlsplit(origin).netloc == headers.get("host", "")


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
