"""The migration guides ``docs/from-openevolve.md`` and ``docs/from-shinkaevolve.md``, written
from the translation tables of ``peer_rules.py`` so that they cannot drift from what Cambrian
does (a test compares the pages with what this module writes).

    .venv/bin/python -m cambrian.task.peer_guide      # rewrites both pages
"""

from __future__ import annotations

import sys
from pathlib import Path

from cambrian.task.peer_rules import (
    OPENEVOLVE_IGNORED,
    OPENEVOLVE_RULES,
    SHINKA_IGNORED,
    SHINKA_RULES,
    Rule,
)

PAGES = {"openevolve": "from-openevolve.md", "shinkaevolve": "from-shinkaevolve.md"}

_OPENEVOLVE_INTRO = """\
# Coming from OpenEvolve

An OpenEvolve example folder (`initial_program.py`, `evaluator.py`, `config.yaml`) runs in
Cambrian as it is: `cambrian run FOLDER`. The evaluator keeps its contract (`evaluate(path)`
returning a dict or an `EvaluationResult` with metrics and artifacts, the cascade's
`evaluate_stage1/2/3`); `combined_score` is the score, else the mean of the numeric metrics, as
OpenEvolve ranks programs.

## Your config file

Cambrian reads the folder's `config.yaml`, or without one the first by name of its YAML files
that are OpenEvolve's (`config_phase_1.yaml`; the others are named as not read). A file is
OpenEvolve's when it holds more of OpenEvolve's own keys than of Cambrian's sections, so a file
with a `novelty:` section beside OpenEvolve's keys is still OpenEvolve's. Every key is reported
at the start of the run, in one line: used (`key -> cambrian.key (value)`) or ignored.

- Another phase: `cambrian run FOLDER -c FOLDER/config_phase_2.yaml` (translated the same way,
  and read instead of the folder's first file) starts a run with it; OpenEvolve's two-phase
  workflow, phase 2 continuing phase 1's population, is `cambrian resume RUN -c
  FOLDER/config_phase_2.yaml`: its `max_iterations` are counted on from the children the run
  has, as when OpenEvolve resumes from its checkpoint.
- The Cambrian file it becomes: `cambrian config translate config.yaml -o cambrian.yaml`
  (the report as comments at its top); edit it and run with `-c cambrian.yaml`.
- `--set` and `-c` settings always win over the translated ones.

## Continuing an OpenEvolve run

`cambrian trace import openevolve_output RUN` reads the latest `checkpoint_N` (programs,
scores, prompts and replies, the best program's id), finds the task folder (the folder with the
evaluator at most three levels above the checkpoint; else give `--task FOLDER`) and makes a
Cambrian run of it; `cambrian status RUN` counts the checkpoint's programs as OpenEvolve kept
them. `cambrian resume RUN --generations N` continues it to N children with the folder's
evaluator and the translated config.

## From the Python API

`cambrian.evolve_function(func, test_cases)`, `cambrian.evolve_algorithm(cls, benchmark)`
and `cambrian.evolve_code(code, evaluator)` are the one-call helpers OpenEvolve offers under
the same names; `iterations=` is accepted, and `config=` may be your OpenEvolve `config.yaml`
(translated as above). `cambrian.run_evolution(code, evaluator)` takes everything else: a
callable evaluator runs contained, in its own sandboxed process.
"""

_SHINKA_INTRO = """\
# Coming from ShinkaEvolve

A ShinkaEvolve example folder (`initial.py`, `evaluate.py` calling `run_shinka_eval`,
`run_evo.py` and/or `shinka*.yaml`) runs in Cambrian as it is: `cambrian run FOLDER`. Cambrian
puts its own `shinka.core.run_shinka_eval` on the evaluator's path (the peer need not be
installed); `metrics.json` and `correct.json` come out as ShinkaEvolve writes them.

## Your run file

Cambrian reads `shinka.yaml` (or `shinka_small.yaml`, or the first by name of the folder's YAML
files that are ShinkaEvolve's) **and** `run_evo.py`: most examples keep their task prompt
(`task_sys_msg`), budget and database settings only there. `run_evo.py` is read without running
it: literals, names bound to literals (`search_task_sys_msg = \"\"\"...\"\"\"`), `dict(...)` and
`**` unpacking, `if strategy == "...":` chains on such names. A value that needs the script to
run (a call, an environment variable) is reported as not readable. With both files, the YAML
file's settings win. Every key is reported at the start of the run: used or ignored.

- Another run file: `cambrian run FOLDER -c FOLDER/shinka_medium.yaml` (a new run), or
  `cambrian resume RUN -c FOLDER/shinka_long.yaml` to go on with a run under it (its
  `num_generations` counted on from the children the run has).
- The Cambrian file it becomes: `cambrian config translate run_evo.py -o cambrian.yaml`.
- `--set` and `-c` settings always win over the translated ones.

## Continuing a ShinkaEvolve run

`cambrian trace import results_dir RUN` reads `results_dir/programs.sqlite` (programs, scores,
LLM calls and costs, inspirations), finds the task folder (the folder with `evaluate.py` at most
three levels above; else `--task FOLDER`) and makes a Cambrian run of it. The initial program's
copies on other islands are one program, as ShinkaEvolve counts them: `cambrian status RUN`
shows the children ShinkaEvolve made. `cambrian resume RUN --generations N` continues it.
"""

_FOOTER = """\
Any key not listed here is reported as ignored when a run starts. Cambrian's own settings are
in `cambrian config show` and docs/architecture.md.
"""


def _keys(rule: Rule) -> str:
    return "<br>".join(f"`{key}`" for key in rule.sources)


def render(peer: str) -> str:
    """The guide for ``peer`` ("openevolve" or "shinkaevolve")."""
    if peer == "openevolve":
        intro, rules, ignored, name = _OPENEVOLVE_INTRO, OPENEVOLVE_RULES, OPENEVOLVE_IGNORED, \
            "OpenEvolve"
    else:
        intro, rules, ignored, name = _SHINKA_INTRO, SHINKA_RULES, SHINKA_IGNORED, "ShinkaEvolve"
    lines = [intro, f"## Every {name} key and what it becomes", "",
             f"| {name} key | in Cambrian |", "|---|---|"]
    lines.extend(f"| {_keys(rule)} | {rule.becomes} |" for rule in rules)
    lines += ["", "## Keys left out, and why", "", f"| {name} key | why |", "|---|---|"]
    lines.extend(f"| `{key}` | {why} |" for key, why in ignored.items())
    lines += ["", _FOOTER]
    return "\n".join(lines)


def write_pages(docs: Path) -> list[Path]:
    written = []
    for peer, page in PAGES.items():
        path = docs / page
        path.write_text(render(peer))
        written.append(path)
    return written


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
    for path in write_pages(root / "docs"):
        print(f"wrote {path}")
