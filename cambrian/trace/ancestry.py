"""Constant-time ancestor tests on a trace's parent tree (entry/exit times of one DFS)."""

from __future__ import annotations

from cambrian.trace.model import Trace


class Ancestry:
    def __init__(self, trace: Trace) -> None:
        children: dict[str | None, list[str]] = {}
        for candidate in trace.candidates:
            children.setdefault(trace.parent_of(candidate.id), []).append(candidate.id)
        self._enter: dict[str, int] = {}
        self._exit: dict[str, int] = {}
        self.depth: dict[str, int] = {}
        clock = 0
        roots = list(children.get(None, []))
        # Candidates caught in a malformed parent cycle are unreachable from a root; treat
        # each as its own root so every id gets times.
        for start in roots + [c.id for c in trace.candidates]:
            if start in self._enter:
                continue
            stack: list[tuple[str, bool]] = [(start, False)]
            self.depth.setdefault(start, 0)
            while stack:
                node, leaving = stack.pop()
                if leaving:
                    self._exit[node] = clock
                    clock += 1
                    continue
                if node in self._enter:
                    continue
                self._enter[node] = clock
                clock += 1
                stack.append((node, True))
                for child in reversed(children.get(node, [])):
                    if child not in self._enter:
                        self.depth[child] = self.depth[node] + 1
                        stack.append((child, False))

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when ``ancestor`` lies strictly above ``descendant`` on its parent chain."""
        if ancestor == descendant:
            return False
        return (self._enter[ancestor] < self._enter[descendant]
                and self._exit[descendant] < self._exit[ancestor])
