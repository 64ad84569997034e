"""The novelty filter's exact tests, tried before its LLM judge, and the judge's verdicts kept
per pair of programs.

A proposal that embeds as a near-copy of its nearest program is refused without a judge when
the code shows it changes nothing: the same tokens but for comments and layout (any language),
or, for Python, the same normal form (``lang/python_normal.py``: comments, layout, docstrings
and local variable names aside). Running the two programs on a few inputs is not one of the
tests: the only contained way to run a candidate is its sandboxed evaluation, which is the
cost the filter exists to save, and a task gives no inputs apart from its evaluator.

The judge's verdict on a pair (nearest program, proposal) is kept under the pair's code keys
(the hash of each program's normal form, else of its tokens), so the same change proposed again,
also with other comments or names, costs no second call. The cache is part of the novelty
hook's search state, so a resumed run keeps it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

from cambrian.lang.code_mask import code_tokens
from cambrian.lang.language import Language
from cambrian.lang.python_normal import normal_hash
from cambrian.task.blocks import block_contents

__all__ = ["CodeKeys", "VerdictCache"]

CACHE_SIZE = 1000  # pairs; each is two 20-character keys and a verdict in the search state


class CodeKeys:
    """What the exact tests compare of a program, computed once per program text."""

    def __init__(self, language: Language) -> None:
        self.language = language
        self._tokens: dict[str, list[str]] = {}
        self._keys: dict[str, str] = {}

    def tokens(self, source: str) -> list[str]:
        found = self._tokens.get(source)
        if found is None:
            found = code_tokens("\n".join(block_contents(source)), self.language)
            self._remember(self._tokens, source, found)
        return found

    def key(self, source: str) -> str:
        """The hash of the program's normal form (Python), else of its code tokens."""
        found = self._keys.get(source)
        if found is None:
            found = (normal_hash(source) if self.language.masking == "python" else None) or \
                hashlib.sha256("\0".join(self.tokens(source)).encode()).hexdigest()[:20]
            self._remember(self._keys, source, found)
        return found

    def same_code(self, mine: str, theirs: str) -> str | None:
        """Why the two programs do the same thing (None: the code cannot tell)."""
        if self.tokens(mine) == self.tokens(theirs):
            return "only comments or layout differ"
        if self.key(mine) == self.key(theirs):  # Python: the same normal form
            return "only comments, layout, docstrings or local variable names differ"
        return None

    @staticmethod
    def _remember(table: dict[str, Any], source: str, value: Any) -> None:
        if len(table) >= 256:  # programs compared lately: the nearest ones recur
            table.pop(next(iter(table)))
        table[source] = value


class VerdictCache:
    """The judge's verdicts by (nearest program's key, proposal's key), the newest kept."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._verdicts: OrderedDict[tuple[str, str], bool] = OrderedDict()

    def get(self, nearest: str, proposal: str) -> bool | None:
        verdict = self._verdicts.get((nearest, proposal))
        if verdict is not None:
            self._verdicts.move_to_end((nearest, proposal))
        return verdict

    def put(self, nearest: str, proposal: str, novel: bool) -> None:
        self._verdicts[(nearest, proposal)] = novel
        self._verdicts.move_to_end((nearest, proposal))
        while len(self._verdicts) > self.size:
            self._verdicts.popitem(last=False)

    def state(self) -> list[list[Any]]:
        return [[a, b, novel] for (a, b), novel in self._verdicts.items()]

    def load(self, rows: list[list[Any]]) -> None:
        self._verdicts.clear()
        for a, b, novel in rows[-self.size:]:
            self._verdicts[(str(a), str(b))] = bool(novel)

    def __len__(self) -> int:
        return len(self._verdicts)
