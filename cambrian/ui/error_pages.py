"""Errors answered as a page to a browser and as JSON to a script: a page request (anything but
``/api/``, ``/static/`` and the event stream) that fails, an unknown run or candidate (404), a
bad query (400: a value of the wrong type is one too, where FastAPI would answer 422), gets an
HTML page saying what was wrong, with the way back; the JSON endpoints keep their JSON."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

TITLES = {400: "Bad request", 404: "Not found", 405: "Method not allowed",
          409: "Cannot open this run"}


def wants_page(request: Request) -> bool:
    path = request.url.path
    return request.method == "GET" and not path.startswith(("/api/", "/static/")) \
        and not path.endswith("/events")


def validation_message(exc: RequestValidationError) -> str:
    """FastAPI's validation errors as one line: "candidate_id: Input should be a valid
    integer ('abc')"."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("path", "query"))
        given = error.get("input")
        shown = f" ({str(given)[:40]!r})" if isinstance(given, (str, int, float)) else ""
        parts.append(f"{where}: {error.get('msg', 'invalid')}{shown}")
    return "; ".join(parts) or "invalid request"


def add_error_pages(app: FastAPI, page: Callable[..., HTMLResponse]) -> None:
    def answer(request: Request, status: int, detail: str,
               headers: dict[str, str] | None = None) -> Response:
        if wants_page(request):
            key = request.path_params.get("key")
            response = page(request, "error.html", status=status, detail=detail,
                            title=TITLES.get(status, "Error"),
                            run_key=key if key and not detail.startswith("no run") else "")
            response.status_code = status
            return response
        return JSONResponse({"detail": detail}, status_code=status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return answer(request, exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        if wants_page(request):
            return answer(request, 400, validation_message(exc))
        return JSONResponse({"detail": jsonable_encoder(exc.errors())}, status_code=422)

