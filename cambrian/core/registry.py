"""Named registries with "did you mean" errors: search algorithms, reply formats, languages,
providers and the loop's swappable components all register here by name."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Generic, TypeVar

from cambrian.core.errors import ConfigError

T = TypeVar("T")


class UnknownName(ConfigError, KeyError):
    """A name no entry is registered under; the message names the closest one."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Entries by name. The module defining a registry registers the entries Cambrian ships
    (importing their modules, which know nothing of the registry: imports run one way); a
    plugin module registers more by calling :meth:`register`."""

    def __init__(self, what: str, hint: str = "") -> None:
        self.what = what
        self._entries: dict[str, T] = {}
        self._hint = hint

    def register(self, name: str, entry: T, *, replace: bool = True) -> T:
        if not replace and name in self._entries:
            raise ValueError(f"{self.what} '{name}' is already registered")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        if name not in self._entries:
            close = difflib.get_close_matches(name, list(self._entries), n=1, cutoff=0.4)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise UnknownName(f"unknown {self.what} '{name}'{hint} Available: "
                              f"{', '.join(sorted(self._entries))}.{self._hint}")
        return self._entries[name]

    def find(self, name: str) -> T | None:
        return self._entries.get(name)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._entries.values()))
