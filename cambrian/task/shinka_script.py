"""ShinkaEvolve's ``run_evo.py``, read statically: the settings it passes to
``EvolutionConfig``, ``DatabaseConfig``, ``LocalJobConfig`` (and ``EvolutionRunner``), taken from
its syntax tree without running it.

Most of ShinkaEvolve's examples keep their task prompt (``task_sys_msg``) and budget only in
this script. What can be read without running it is read: literals, names bound to literals
earlier in the module (``search_task_sys_msg = \"\"\"...\"\"\"``), ``dict(...)`` and ``**``
unpacking of them, ``if``/``elif`` chains whose test compares such names with literals
(``strategy = "weighted"; if strategy == "weighted": parent_config = dict(...)``), string
concatenation and ``.strip()``, and keys set one by one on a mapping the script reads from
elsewhere (``cfg = yaml.safe_load(...); cfg["task_sys_msg"] = MSG; EvolutionConfig(**cfg)``:
``task_sys_msg`` is read, the rest is named as not readable). A value that needs the script to run (a call, an environment
variable, a computed path) is named as not readable, never guessed.

The result has the shape of ShinkaEvolve's YAML run files (``evo_config``, ``db_config``,
``job_config`` and the runner's top-level settings), so one translation serves both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.core.python_ast import parse_python

RUN_SCRIPT_NAMES = ("run_evo.py",)
# The configuration classes a run script builds, and the section of the YAML shape each fills.
SECTIONS = {
    "EvolutionConfig": "evo_config",
    "DatabaseConfig": "db_config",
    "LocalJobConfig": "job_config",
    "SlurmDockerJobConfig": "job_config",
    "SlurmCondaJobConfig": "job_config",
}
# EvolutionRunner's own settings (the YAML files' top level).
RUNNER_KEYS = frozenset({"max_evaluation_jobs", "max_proposal_jobs", "max_db_workers",
                         "verbose"})
RUNNER_CALLS = frozenset({"EvolutionRunner", "ShinkaEvolveRunner", "AsyncEvolutionRunner"})
_STRING_METHODS = frozenset({"strip", "lstrip", "rstrip"})


class _Unknown:
    """A value only running the script would give."""

    def __repr__(self) -> str:
        return "<not static>"


UNKNOWN = _Unknown()


class _Partial(dict):  # type: ignore[type-arg]
    """What is known of a mapping only the script could build: the keys set on it one by one
    (``evo_cfg_dict["task_sys_msg"] = LEAN_MATH_SYS_MSG`` on a dict read from a YAML file)."""


@dataclass
class RunScript:
    """What a run script sets, in the YAML files' shape, and what could not be read."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # dotted keys whose value is computed


def find_run_script(task_dir: Path) -> Path | None:
    for name in RUN_SCRIPT_NAMES:
        path = Path(task_dir) / name
        if path.is_file():
            return path
    return None


def read_run_script(path: Path) -> RunScript | None:
    """The settings of ``path``; None when it is not Python or builds no ShinkaEvolve config."""
    try:
        tree = parse_python(path.read_bytes().decode("utf-8"), filename=str(path))
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
        return None
    script = RunScript(path)
    reader = _Reader(script)
    reader.block(tree.body)
    for node in tree.body:  # configs built inside main() see the module's names
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            reader.block(node.body, dict(reader.env))
    return script if script.data else None


class _Reader:
    def __init__(self, script: RunScript) -> None:
        self.script = script
        self.env: dict[str, Any] = {}

    def block(self, body: Iterable[ast.stmt], env: dict[str, Any] | None = None) -> None:
        scope = self.env if env is None else env
        for node in body:
            self.statement(node, scope)

    def statement(self, node: ast.stmt, env: dict[str, Any]) -> None:
        if isinstance(node, ast.Assign):
            value = self.value(node.value, env)
            for target in node.targets:
                self.bind(target, value, env)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.bind(node.target, self.value(node.value, env), env)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self.value(node.value, env)  # EvolutionRunner(...).run() or a bare config call
        elif isinstance(node, ast.If):
            test = self.value(node.test, env)
            if isinstance(test, bool):
                self.block(node.body if test else node.orelse, env)

    def bind(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            if value is UNKNOWN:
                env.pop(target.id, None)
            else:
                env[target.id] = value
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            key = self.value(target.slice, env)
            if not isinstance(key, str) or value is UNKNOWN:
                return
            base = env.get(target.value.id)
            updated = (type(base)(base) if isinstance(base, dict)  # a copy: values are shared
                       else _Partial())
            updated[key] = value
            env[target.value.id] = updated

    def value(self, node: ast.expr, env: dict[str, Any]) -> Any:  # noqa: PLR0911, PLR0912
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id, UNKNOWN)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.value(item, env) for item in node.elts]
            return UNKNOWN if any(i is UNKNOWN for i in items) else items
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:  # {**other}
                    unpacked = self.value(item, env)
                    if not isinstance(unpacked, dict):
                        return UNKNOWN
                    out.update(unpacked)
                    continue
                name, value = self.value(key, env), self.value(item, env)
                if not isinstance(name, str) or value is UNKNOWN:
                    return UNKNOWN
                out[name] = value
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            operand = self.value(node.operand, env)
            if isinstance(node.op, ast.Not):
                return UNKNOWN if operand is UNKNOWN else not operand
            return -operand if isinstance(operand, (int, float)) else UNKNOWN
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, env), self.value(node.right, env)
            if type(left) is type(right) and isinstance(left, (str, list, int, float)):
                return left + right
            return UNKNOWN
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left, env), self.value(node.comparators[0], env)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            if isinstance(node.ops[0], ast.Eq):
                return left == right
            if isinstance(node.ops[0], ast.NotEq):
                return left != right
            return UNKNOWN
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    parts.append(str(part.value))
                elif isinstance(part, ast.FormattedValue) and part.format_spec is None:
                    inner = self.value(part.value, env)
                    if inner is UNKNOWN or part.conversion != -1:
                        return UNKNOWN
                    parts.append(str(inner))
                else:
                    return UNKNOWN
            return "".join(parts)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        return UNKNOWN

    def call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in _STRING_METHODS
                and not node.args and not node.keywords):
            text = self.value(func.value, env)
            return getattr(text, func.attr)() if isinstance(text, str) else UNKNOWN
        if isinstance(func, ast.Attribute) and func.attr == "run":  # Runner(...).run()
            self.value(func.value, env)
            return UNKNOWN
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else None)
        if name is None:
            return UNKNOWN
        known, unknown = self.keywords(node, env)
        if name == "dict" and not node.args:
            return UNKNOWN if unknown else known
        if name in SECTIONS:
            section = SECTIONS[name]
            self.script.data.setdefault(section, {}).update(known)
            for key in unknown:
                label = f"the rest of {section}" if key == "**" else f"{section}.{key}"
                if label not in self.script.unreadable:
                    self.script.unreadable.append(label)
            return known
        if name in RUNNER_CALLS:
            for key, value in known.items():
                if key in RUNNER_KEYS:
                    self.script.data[key] = value
        return UNKNOWN

    def keywords(self, node: ast.Call, env: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The call's keyword arguments that are static, and the names of those that are not
        (a ``**`` of something not static makes the call's arguments unknown: '**')."""
        known: dict[str, Any] = {}
        unknown: list[str] = []
        for keyword in node.keywords:
            value = self.value(keyword.value, env)
            if keyword.arg is None:
                if isinstance(value, dict):
                    known.update(value)
                if not isinstance(value, dict) or isinstance(value, _Partial):
                    unknown.append("**")  # (some of) the mapping is the script's to build
            elif value is UNKNOWN:
                unknown.append(keyword.arg)
            else:
                known[keyword.arg] = value
        return known, unknown


__all__ = ["RUN_SCRIPT_NAMES", "RunScript", "find_run_script", "read_run_script"]
