"""benchmarks/ablations.py: its variant table is valid configuration that really varies what it
claims to, and the script runs end to end (scripted LLM through --set)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from bench_helpers import scripted_sets
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import resolve_config
from cambrian.llm.model_files import LOCAL_MODELS
from cambrian.store.store import Store

REPO = Path(__file__).resolve().parents[2]
CIRCLE_PACKING = REPO / "examples" / "circle_packing"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ablations", REPO / "benchmarks" / "ablations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ablations = load_script()


def resolved(name: str) -> dict:
    [variant] = ablations.ablation_variants([name])
    return resolve_config(CIRCLE_PACKING, overrides=list(variant.overrides)).model_dump(mode="json")


def test_every_variant_is_valid_config_and_distinct():
    configs = {name: resolved(name) for name in ablations.ABLATIONS}
    for name, config in configs.items():
        assert config["search"]["algorithm"] == "shinka", name
    as_text = {name: json.dumps(c, sort_keys=True) for name, c in configs.items()}
    assert len(set(as_text.values())) == len(as_text), "two ablations run the same config"


def test_variants_vary_what_the_paper_ablates():
    configs = {name: resolved(name) for name in ablations.ABLATIONS}
    assert {configs[n]["database"]["parent_selection"]
            for n in ("weighted", "hill_climb", "best_of_n")} == {"weighted", "hill_climb",
                                                                  "best_of_n"}
    assert configs["novelty_off"]["novelty"]["enabled"] is False
    assert configs["weighted"]["novelty"]["enabled"] is True
    llm = {n: configs[n]["llm"] for n in ("llm_bandit", "llm_fixed", "llm_single")}
    assert {c["selection"] for c in llm.values()} == {"ucb1", "fixed", "single"}
    for config in llm.values():
        models = [m["model"] for m in config["models"]]
        assert len(models) == 2 and all(m in LOCAL_MODELS for m in models)
        assert all(m["provider"] == "local" for m in config["models"])
    # The trace analyses fed back into the search: each switch is varied against the reference.
    feedback = {n: configs[n]["trace_feedback"] for n in configs}
    assert feedback["weighted"]["deletion_filter"] == "reject"
    assert feedback["deletion_filter_off"]["deletion_filter"] == "off"
    assert feedback["deletion_filter_penalise"]["deletion_filter"] == "penalise"
    assert feedback["weighted"]["deletion_history_in_prompt"] is True
    assert feedback["deletion_history_off"]["deletion_history_in_prompt"] is False
    assert feedback["weighted"]["tune_operator"] is False
    assert feedback["tune_on"]["tune_operator"] is True


def test_unknown_ablation_names_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    code = ablations.main(["--only", "weighted,hill-climbing", "--out", str(tmp_path / "out")])
    assert code == 2
    assert "hill-climbing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_tiny_ablation_run_with_the_scripted_llm(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    chosen = ["weighted", "best_of_n", "llm_fixed", "novelty_off"]
    with ScriptedLLM(incrementing) as llm:
        # Two labelled models on the scripted server stand in for the two local ones; novelty
        # embeddings come from the same server.
        sets = [*scripted_sets(llm, "big", "small")[:1], "novelty.embedding=openai",
                f"novelty.base_url={llm.base_url}", "novelty.embedding_model=embed-test"]
        argv = ["--task", str(task), "--budget", "2", "--seeds", "1", "--quiet",
                "--only", ",".join(chosen), "--out", str(tmp_path / "out")]
        argv += [arg for s in sets for arg in ("--set", s)]
        code = ablations.main(argv)
    printed = capsys.readouterr()
    assert code == 0, printed.err
    for name in chosen:
        assert name in printed.out
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [s["variant"] for s in results["summaries"]] == chosen
    assert all(r["evaluations"] == 2 for r in results["runs"])
    assert set(results["spec"]["variants"]) == set(chosen)
    # The --set models replaced the variants' local ones in every run; the rest is the variant's.
    configs = {}
    for name in chosen:
        store = Store.open(tmp_path / "out" / "runs" / name / "counter" / "seed0")
        try:
            configs[name] = store.runs.info().config
        finally:
            store.close()
    for config in configs.values():
        assert [(m["name"], m["provider"]) for m in config["llm"]["models"]] == [
            ("big", "openai"), ("small", "openai")]
    assert configs["llm_fixed"]["llm"]["selection"] == "fixed"
    assert configs["best_of_n"]["database"]["parent_selection"] == "best_of_n"
    assert configs["novelty_off"]["novelty"]["enabled"] is False
    assert configs["weighted"]["novelty"]["enabled"] is True
    assert (tmp_path / "out" / "best_vs_evals.png").stat().st_size > 10_000
