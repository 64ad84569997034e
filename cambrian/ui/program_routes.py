"""Routes of the program browser (a page of a run's candidates, filtered, searched, sorted; its
JSON), a program's download, and the overview's further plots (``plots.py``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from cambrian.store.store import Store
from cambrian.ui.best_code import download_body, download_name
from cambrian.ui.browser import BadQuery, browser_view
from cambrian.ui.cache import UICaches
from cambrian.ui.plots import plot_data
from cambrian.ui.runs import RunRef

Opened = Callable[[RunRef], AbstractContextManager[Store]]


def add_program_routes(app: FastAPI, ref_of: Callable[[str], RunRef], opened: Opened,
                       row_of: Callable[[RunRef, Store], Any],
                       page: Callable[..., HTMLResponse], caches: UICaches) -> None:
    def browse(ref: RunRef, store: Store, request: Request) -> Any:
        try:
            return browser_view(store, list(request.query_params.multi_items()))
        except BadQuery as exc:
            raise HTTPException(400, str(exc)) from None

    @app.get("/runs/{key}/programs", response_class=HTMLResponse)
    def programs_page(request: Request, key: str) -> HTMLResponse:
        ref = ref_of(key)
        with opened(ref) as store:
            row = row_of(ref, store)
            view = browse(ref, store, request)
        return page(request, "programs.html", ref=ref, row=row, v=view)

    @app.get("/api/runs/{key}/programs")
    def programs_json(request: Request, key: str) -> JSONResponse:
        ref = ref_of(key)
        with opened(ref) as store:
            view = browse(ref, store, request)
        rows = [{**asdict(r), "status": str(r.status)} for r in view.page.rows]
        return JSONResponse({"total": view.page.total, "page": view.number,
                             "pages": view.pages, "rows": rows, "facets": asdict(view.facets)})

    @app.get("/runs/{key}/candidates/{candidate_id}/download")
    def download(key: str, candidate_id: int) -> Response:
        ref = ref_of(key)
        with opened(ref) as store:
            row = store.candidates.find(candidate_id)
        if row is None:
            raise HTTPException(404, f"run {key} has no candidate {candidate_id}")
        if not row.source:
            raise HTTPException(404, f"candidate {candidate_id} has no program (its reply "
                                     "could not be used)")
        name = download_name(row)
        media = "application/zip" if name.endswith(".zip") else "text/plain; charset=utf-8"
        return Response(download_body(row), media_type=media,
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    @app.get("/api/runs/{key}/plots")
    def plots_json(key: str, pareto: str = "") -> JSONResponse:
        """The further plots' data; ``pareto=X,Y``: the two metrics of the Pareto plot."""
        axes = None
        if pareto:
            names = pareto.split(",")
            if len(names) != 2:
                raise HTTPException(400, "pareto names two metrics: pareto=X,Y")
            axes = (names[0], names[1])
        ref = ref_of(key)
        with opened(ref) as store:
            try:
                return JSONResponse(caches.values.get(
                    store, f"plots {axes}",
                    lambda: plot_data(store, axes, caches.ledger_of(store),
                                      caches.columns(store))))
            except ValueError as exc:
                raise HTTPException(400, str(exc)) from None

