"""The top-level commands: name, the modules that define it, and its one-line help.

``cambrian --help`` and ``cambrian --version`` read this table instead of importing every
command's module (the whole library, about a second); a command's modules are imported when it
is invoked (``cli/app.py``'s lazy group). ``tests/cli/test_command_table.py`` checks that the
table names every command the modules register, with its help's first line.

A new command module: add its commands here (a module with a ``register(app)`` function has it
called once, when the module is imported for the first time).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandEntry:
    name: str
    modules: tuple[str, ...]  # imported in order; the first defines the command
    help: str  # the first sentence of the command's help (``one_line``)


COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry("doctor", ("cambrian.cli.doctor",),
                 "Say what this machine offers and lacks for Cambrian: Python, the sandbox's "
                 "mechanisms, compilers per language, local models, extras and a GPU; each "
                 "missing item with the command that fixes it."),
    CommandEntry("guide", ("cambrian.cli.guide",),
                 "Give a running search guidance (also: edit RUN_DIR/guidance.md)."),
    CommandEntry("control", ("cambrian.cli.guide",),
                 "Pause, resume or stop a running search, or change its budget; the run applies "
                 "the request at its next turn and records it."),
    CommandEntry("status", ("cambrian.cli.inspect",),
                 "Summarise a run: progress, scores, success rates, tokens and cost per model."),
    CommandEntry("best", ("cambrian.cli.inspect",), "Write the best program of a run."),
    CommandEntry("algorithms", ("cambrian.cli.inspect",),
                 "List the search algorithms `--search` accepts."),
    CommandEntry("init", ("cambrian.cli.inspect",),
                 "Create a working task skeleton (initial program, evaluator, problem statement, "
                 "config)."),
    CommandEntry("replay", ("cambrian.cli.replay",),
                 "Re-run a stored run, every LLM reply served from its trace, and compare the "
                 "two."),
    CommandEntry("run", ("cambrian.cli.run",), "Start a new evolution run on TASK_DIR."),
    CommandEntry("resume", ("cambrian.cli.run",), "Continue a stopped or killed run."),
    CommandEntry("show", ("cambrian.cli.show",),
                 "Print one candidate: code, diff to its parent, the prompt and reply that made "
                 "it, and its evaluation output or error."),
    CommandEntry("ui", ("cambrian.cli.ui",),
                 "Serve the web UI: runs, overview, lineage tree, candidates, comparison, "
                 "steering."),
    CommandEntry("report", ("cambrian.cli.trace",),
                 "Write a self-contained HTML report of a run."),
    CommandEntry("generalization", ("cambrian.cli.judge",),
                 "Re-score the public best-so-far chain on the held-out private cases."),
    CommandEntry("bench", ("cambrian.cli.bench",),
                 "Run every search algorithm on every task with the same budget and models, "
                 "over several seeds."),
    CommandEntry("config", ("cambrian.cli.config_group", "cambrian.cli.config_show",
                            "cambrian.cli.config_translate"),
                 "Inspect and translate configuration files."),
    CommandEntry("trace", ("cambrian.cli.trace",), "Export, import and analyse run traces."),
)


def one_line(help_text: str | None) -> str:
    """A command's help as the table holds it: its first sentence (of its first paragraph)."""
    paragraph = " ".join((help_text or "").strip().split("\n\n")[0].split())
    line = paragraph.split(". ")[0]
    return line if line.endswith(".") or not line else line + "."


BY_NAME = {entry.name: entry for entry in COMMANDS}
