"""Who may use the UI: loopback by default; any other address only with a token. A token is
given once as ``?token=...`` (then kept in a same-site cookie) or as a bearer header. Every
POST must be JSON from this origin, so another web page cannot steer a run through the
browser (cross-site requests of that kind need a CORS permission this server never gives).
Without a token, a request must also name a loopback host: a page whose own name was rebound
to 127.0.0.1 (DNS rebinding) is then "same origin" with itself but names its own host."""

from __future__ import annotations

import ipaddress
import secrets
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

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


class Guard:
    """ASGI middleware: the token check (when a token is set) and the same-origin JSON POSTs."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        set_cookie = False
        if not self.token and not is_loopback(host_name(headers.get("host", ""))):
            await _plain(send, 403, "this UI answers only requests addressed to a loopback "
                                    "host (127.0.0.1, localhost, ::1); serve it with --token "
                                    "to use another name")
            return
        if self.token:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
            set_cookie = bool(given) and secrets.compare_digest(given, self.token)
            if not set_cookie and not self._known(headers):
                await _plain(send, 401, "a token is needed: open the address printed by "
                                        "`cambrian ui`, which ends in ?token=...")
                return
        if scope["method"] not in ("GET", "HEAD") and not _same_origin_json(headers):
            await _plain(send, 403, "steering requests must be JSON from this page")
            return
        if not set_cookie:
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                cookie = SimpleCookie()
                cookie[COOKIE] = self.token or ""
                cookie[COOKIE]["httponly"] = True
                cookie[COOKIE]["samesite"] = "Strict"
                cookie[COOKIE]["path"] = "/"
                message.setdefault("headers", []).append(
                    (b"set-cookie", cookie[COOKIE].OutputString().encode("latin-1")))
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    def _known(self, headers: dict[str, str]) -> bool:
        assert self.token
        bearer = headers.get("authorization", "")
        if bearer.startswith("Bearer ") and secrets.compare_digest(bearer[7:], self.token):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed cookie header is no token
            return False
        given = cookie.get(COOKIE)
        return given is not None and secrets.compare_digest(given.value, self.token)


def host_name(host_header: str) -> str:
    """The host of a Host header, without its port or IPv6 brackets."""
    return urlsplit(f"//{host_header}").hostname or ""


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
