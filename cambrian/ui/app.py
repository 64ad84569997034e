"""The web application: pages (Jinja2 templates), their JSON, the live event stream and, unless
read-only, the steering endpoints. Every read goes through the store's API (read-only
connections beside the running writer); no route blocks the event loop on the store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from cambrian.core.events import Event
from cambrian.llm.health import series_of
from cambrian.meta.guidance import GuidanceBoard
from cambrian.search.run_state import run_state
from cambrian.store.database import StoreError
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store
from cambrian.ui import steering
from cambrian.ui.best_code import best_code
from cambrian.ui.cache import UICaches
from cambrian.ui.candidate_view import candidate_view
from cambrian.ui.data import (
    RUNNING,
    OverviewPanels,
    RunRow,
    RunState,
    overview_panels,
    proposals_paused,
    run_row,
)
from cambrian.ui.error_pages import add_error_pages
from cambrian.ui.live import LiveHub, stream
from cambrian.ui.now import ledger_part, now_view
from cambrian.ui.program_routes import add_program_routes
from cambrian.ui.runs import RunCatalog, RunRef
from cambrian.ui.security import Guard
from cambrian.ui.series import bandit_series, score_series, tree_data

HERE = Path(__file__).parent


def score(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def when(at: float | None) -> str:
    return "—" if not at else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else f"{part}/0"


def template_env(read_only: bool) -> jinja2.Environment:
    """The pages' templates; strict, so that a misspelt field fails instead of showing
    nothing."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=jinja2.select_autoescape(),
                             undefined=jinja2.StrictUndefined)
    env.filters.update(score=score, when=when)
    env.globals.update(pct=pct, read_only=read_only)
    return env


def create_app(catalog: RunCatalog, *, token: str, read_only: bool = False) -> FastAPI:
    """The UI of the runs in ``catalog``; every request must carry ``token`` (security.py)."""
    hub = LiveHub()
    caches = UICaches()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await hub.close()

    app = FastAPI(title="Cambrian", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    app.add_middleware(Guard, token=token)
    app.state.token = token
    app.state.hub = hub
    app.state.read_only = read_only
    app.state.caches = caches
    templates = Jinja2Templates(env=template_env(read_only))
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def ref_of(key: str) -> RunRef:
        try:
            return catalog.get(key)
        except KeyError:
            raise HTTPException(404, f"no run {key!r}") from None

    @contextmanager
    def opened(ref: RunRef) -> Iterator[Store]:
        try:
            store = catalog.open(ref)
        except (StoreError, FileNotFoundError, ValueError) as exc:
            raise HTTPException(409, str(exc)) from None
        try:
            yield store
        finally:
            store.close()

    def row_of(ref: RunRef, store: Store) -> RunRow:
        """The run's row: what the store holds kept per store version (``cache.py``), its
        state (running or not) read now."""
        row = caches.values.get(store, f"row {ref.key}", lambda: run_row(
            store, ref.key, ref.path, ref.framework, caches.ledger_of(store)))
        return replace(row, state=run_state(store, ref.path, ref.framework))

    def panels_of(store: Store, row: RunRow) -> OverviewPanels:
        panels = caches.values.get(store, "panels", lambda: overview_panels(
            store, row, caches.ledger_of(store), caches.columns(store)))
        return replace(panels, row=row, paused=proposals_paused(store, row))

    def now_of(store: Store) -> Any:
        return now_view(store, caches.values.get(store, "ledger", lambda: ledger_part(
            store, caches.ledger_of(store).failed)))

    def full_series(store: Store) -> dict[str, Any]:
        return caches.values.get(store, "series", lambda: score_series(
            store, spend=caches.ledger_of(store), best=caches.best,
            columns=caches.columns(store)))

    def steerable(ref: RunRef, row: RunRow) -> bool:
        return not read_only and not ref.imported and row.status == RUNNING

    def all_rows() -> list[RunRow]:
        rows = []
        for ref in catalog.refresh():
            try:
                with opened(ref) as store:
                    rows.append(row_of(ref, store))
            except (HTTPException, StoreError, OSError, ValueError) as exc:
                detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
                rows.append(RunRow(ref.key, ref.name, str(ref.path), ref.framework,
                                   state=RunState("unreadable", str(detail)), error=str(detail)))
        return sorted(rows, key=lambda r: -r.created_at)

    def page(request: Request, name: str, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context)

    add_error_pages(app, page)
    add_program_routes(app, ref_of, opened, row_of, page, caches)

    # ------------------------------------------------------------------ pages

    @app.get("/", response_class=HTMLResponse)
    def runs_page(request: Request) -> HTMLResponse:
        return page(request, "runs.html", rows=all_rows(), roots=catalog.roots)

    @app.get("/runs/{key}", response_class=HTMLResponse)
    def overview_page(request: Request, key: str) -> HTMLResponse:
        ref = ref_of(key)
        with opened(ref) as store:
            row = row_of(ref, store)
            panels = panels_of(store, row)
            limit = GuidanceBoard(Recorder(store)).max_chars
            now = now_of(store)
            best = caches.values.get(store, "best code", lambda: best_code(store, row.direction))
        return page(request, "overview.html", ref=ref, row=row, p=panels, paused=panels.paused,
                    steer=steerable(ref, row), guidance_limit=limit, best=best,
                    now=now)

    @app.get("/runs/{key}/panels", response_class=HTMLResponse)
    def overview_fragment(request: Request, key: str, part: str = "tables") -> HTMLResponse:
        """A part of the overview, reloaded by the page when the run reports events: the
        summary (the run's row alone) or the tables."""
        ref = ref_of(key)
        with opened(ref) as store:
            row = row_of(ref, store)
            if part == "summary":
                return page(request, "_summary.html", ref=ref, row=row,
                            paused=proposals_paused(store, row))
            if part == "now":
                return page(request, "_now_body.html", ref=ref, now=now_of(store))
            panels = panels_of(store, row)
        return page(request, "_panels.html", ref=ref, row=row, p=panels)

    @app.get("/runs/{key}/tree", response_class=HTMLResponse)
    def tree_page(request: Request, key: str) -> HTMLResponse:
        ref = ref_of(key)
        with opened(ref) as store:
            row = row_of(ref, store)
        return page(request, "tree.html", ref=ref, row=row)

    @app.get("/runs/{key}/candidates/{candidate_id}", response_class=HTMLResponse)
    def candidate_page(request: Request, key: str, candidate_id: int,
                       against: int | None = None) -> HTMLResponse:
        ref = ref_of(key)
        with opened(ref) as store:
            row = row_of(ref, store)
            try:
                view = candidate_view(store, candidate_id, against)
            except KeyError:
                raise HTTPException(404, f"no candidate {candidate_id}") from None
            limit = GuidanceBoard(Recorder(store)).max_chars
        return page(request, "candidate.html", ref=ref, row=row, c=view,
                    steer=steerable(ref, row), guidance_limit=limit)

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(request: Request, run: list[str] = Query(default=[])) -> HTMLResponse:
        rows = all_rows()
        return page(request, "compare.html", rows=[r for r in rows if r.key in run],
                    all_rows=rows, chosen=run)

    # ------------------------------------------------------------------ data

    @app.get("/api/runs")
    def runs_json() -> JSONResponse:
        return JSONResponse([_row_json(r) for r in all_rows()])

    @app.get("/api/runs/{key}/overview")
    def overview_json(key: str) -> JSONResponse:
        ref = ref_of(key)
        with opened(ref) as store:
            row = row_of(ref, store)
            panels = asdict(panels_of(store, row))
            panels["row"] = _row_json(row)
            panels["series"] = full_series(store)
            panels["bandit"] = caches.values.get(store, "bandit", lambda: bandit_series(store))
        return JSONResponse(panels)

    @app.get("/api/runs/{key}/series")
    def series_json(key: str, after: int | None = None, bandit_after: int = 0) -> JSONResponse:
        """The overview's plotted data; ``after`` (the last candidate id a page has) and
        ``bandit_after`` (the ``last_event`` it has) ask only for what came since: read from
        the rows after them alone. The whole series is kept per store version."""
        ref = ref_of(key)
        with opened(ref) as store:
            try:
                scores = full_series(store) if after is None else score_series(
                    store, after, spend=caches.ledger_of(store), best=caches.best)
            except KeyError:
                raise HTTPException(404, f"candidate {after} has no evaluation") from None
            bandit = caches.values.get(store, "bandit", lambda: bandit_series(store)) \
                if bandit_after == 0 else bandit_series(store, bandit_after)
            return JSONResponse({"scores": scores, "bandit": bandit})

    @app.get("/api/runs/{key}/transport")
    def transport_json(key: str) -> JSONResponse:
        """How each model's server answered, per minute (ui/now.py, llm/health.py)."""
        ref = ref_of(key)
        with opened(ref) as store:
            return JSONResponse({"series": caches.values.get(  # from the run's ledger log
                store, "transport", lambda: asdict(series_of(
                    caches.ledger_of(store).transport_calls())))})

    @app.get("/api/runs/{key}/tree")
    def tree_json(key: str, all: bool = False) -> JSONResponse:
        ref = ref_of(key)
        with opened(ref) as store:
            return JSONResponse(tree_data(store, include_refused=all))

    @app.get("/api/runs/{key}/guidance")
    def guidance_json(key: str, target: str = "") -> JSONResponse:
        """The guidance active now for every prompt (``target=""``) or for one target: what
        an edit starts from."""
        ref = ref_of(key)
        with opened(ref) as store:
            active = store.guidance.latest(target)
            limit = GuidanceBoard(Recorder(store)).max_chars
        return JSONResponse({"target": target, "version": active.id if active else 0,
                             "active": active.text if active else "", "limit": limit})

    @app.get("/api/compare")
    def compare_json(run: list[str] = Query(default=[])) -> JSONResponse:
        found = []
        for key in run:
            ref = ref_of(key)
            with opened(ref) as store:
                found.append({"key": key, "name": ref.name, "task": store.runs.info().task_name,
                              "series": full_series(store)})
        return JSONResponse({"runs": found})

    @app.get("/runs/{key}/events")
    async def events(request: Request, key: str) -> StreamingResponse:
        ref = ref_of(key)
        run_dir = None if ref.imported else ref.path  # an imported trace is never live
        return StreamingResponse(stream(hub, key, run_dir, request.is_disconnected),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    if not read_only:
        _steering_routes(app, hub, ref_of, opened, row_of, steerable)

    return app


def _steering_routes(app: FastAPI, hub: LiveHub, ref_of: Any, opened: Any, row_of: Any,
                     steerable: Any) -> None:
    """POST endpoints that change a live run: not even registered in read-only mode."""

    def live_ref(key: str) -> RunRef:
        ref = ref_of(key)
        with opened(ref) as store:
            if not steerable(ref, row_of(ref, store)):
                raise HTTPException(409, "this run is not running, so it cannot be steered")
        return ref

    @app.post("/api/runs/{key}/guidance")
    async def guidance(key: str, body: Any = Body(None)) -> JSONResponse:
        ref = await run_in_threadpool(live_ref, key)
        written: list[Event] = []
        try:
            version = await run_in_threadpool(steering.change_guidance, ref.path, body,
                                              written.append)
        except steering.SteeringError as exc:
            raise HTTPException(exc.status, str(exc)) from None
        for event in written:
            hub.local(key, event)
        scope = version.target or "every prompt"
        return JSONResponse({"version": version.id, "active": version.text,
                             "target": version.target,
                             "answer": f"guidance version {version.id} ({scope}, "
                                       f"{len(version.text):,} characters) is active from the "
                                       "next proposal on"})

    @app.post("/api/runs/{key}/control")
    async def control(key: str, body: Any = Body(None)) -> JSONResponse:
        ref = await run_in_threadpool(live_ref, key)
        try:
            answer = await run_in_threadpool(steering.request, ref.path, body)
        except steering.SteeringError as exc:
            raise HTTPException(exc.status, str(exc)) from None
        return JSONResponse({"request": answer.request_id, "action": answer.action,
                             "payload": answer.payload,
                             "answer": f"{answer.action} queued as request "
                                       f"{answer.request_id}: {answer.text}"})


def _row_json(row: RunRow) -> dict[str, Any]:
    data = asdict(row)
    data["status"] = row.state.status
    data["status_detail"] = row.state.detail
    data["paused"] = row.state.paused
    del data["state"]
    return data

