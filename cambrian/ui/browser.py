"""The program browser's read model: the page's query string read into a ``BrowseQuery`` (a bad
value is a one-line ``BadQuery``, answered 400), one page of candidates (``store.browse``), the
filters' choices, and the links of its sortable headers and pager."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from cambrian.core.status import ALL_STATUSES
from cambrian.store.browse import SORTS, BrowseFacets, BrowsePage, BrowseQuery
from cambrian.store.store import Store

PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_SEARCH_CHARS = 500
# The query-string keys the browser reads; any other is a bad query.
KEYS = ("status", "intent", "model", "island", "gen_min", "gen_max", "parent", "reason", "q",
        "sort", "order", "page", "size")


class BadQuery(ValueError):
    """A query string the browser cannot read; its message says which value and why."""


def _integer(params: Mapping[str, str], key: str, low: int | None = None) -> int | None:
    text = params.get(key, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise BadQuery(f"{key} must be a whole number, not {text[:40]!r}") from None
    if low is not None and value < low:
        raise BadQuery(f"{key} must be at least {low}, not {value}")
    return value


def read_query(params: Mapping[str, str], statuses: list[str]) -> BrowseQuery:
    """``params`` (the query string; ``statuses``: every ``status`` given) as a query."""
    unknown = sorted(set(params) - set(KEYS))
    if unknown:
        raise BadQuery(f"unknown parameter {unknown[0]!r}; the browser reads {', '.join(KEYS)}")
    valid = {str(s) for s in ALL_STATUSES}
    for status in statuses:
        if status not in valid:
            raise BadQuery(f"no status {status!r}; statuses: {', '.join(sorted(valid))}")
    sort = params.get("sort", "id") or "id"
    if sort not in SORTS:
        raise BadQuery(f"cannot sort by {sort!r}; sort by one of {', '.join(SORTS)}")
    order = params.get("order", "") or ("desc" if sort == "score" else "asc")
    if order not in ("asc", "desc"):
        raise BadQuery(f"order must be asc or desc, not {order[:40]!r}")
    search = params.get("q", "")
    if len(search) > MAX_SEARCH_CHARS:
        raise BadQuery(f"the search text is {len(search)} characters; at most "
                       f"{MAX_SEARCH_CHARS}")
    size = _integer(params, "size", 1) or PAGE_SIZE
    if size > MAX_PAGE_SIZE:
        raise BadQuery(f"size must be at most {MAX_PAGE_SIZE}, not {size}")
    page = _integer(params, "page", 1) or 1
    return BrowseQuery(
        statuses=tuple(s for s in statuses if s), intent=params.get("intent", ""),
        model=params.get("model", ""), island=_integer(params, "island"),
        generation_min=_integer(params, "gen_min"), generation_max=_integer(params, "gen_max"),
        parent=_integer(params, "parent"), reason=params.get("reason", ""), search=search,
        sort=sort, descending=order == "desc", offset=(page - 1) * size, limit=size)


@dataclass(frozen=True)
class BrowserView:
    query: BrowseQuery
    page: BrowsePage
    facets: BrowseFacets
    params: list[tuple[str, str]]  # the filters as given, to rebuild links with

    @property
    def number(self) -> int:
        return self.query.offset // self.query.limit + 1

    @property
    def pages(self) -> int:
        return max(1, -(-self.page.total // self.query.limit))

    @property
    def filtered(self) -> bool:
        return any(k not in ("sort", "order", "page", "size") for k, _ in self.params)

    def link(self, **changes: str | int) -> str:
        """This view's query string with ``changes`` (a new filter or sort starts at page 1)."""
        kept = [(k, v) for k, v in self.params if k not in changes and k != "page"]
        if "page" not in changes and self.number > 1 and not (
                {"sort", "order"} & set(changes)):
            kept.append(("page", str(self.number)))
        kept += [(k, str(v)) for k, v in changes.items() if v != ""]
        return "?" + urlencode(kept)

    def sort_link(self, column: str) -> str:
        """Sort by ``column``; the column sorted by now turns around."""
        if self.query.sort == column:
            return self.link(sort=column, order="asc" if self.query.descending else "desc")
        return self.link(sort=column, order="desc" if column == "score" else "asc")

    def sort_mark(self, column: str) -> str:
        if self.query.sort != column:
            return ""
        return "▼" if self.query.descending else "▲"


def browser_view(store: Store, params: list[tuple[str, str]]) -> BrowserView:
    single = {k: v for k, v in params if k != "status"}
    query = read_query(single, [v for k, v in params if k == "status"])
    return BrowserView(query, store.browse.page(query), store.browse.facets(),
                       [(k, v) for k, v in params if v != ""])
