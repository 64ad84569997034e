"""How much a reply grammar costs the local model: tokens per second for the same circle-packing
mutation prompt generated without a grammar, with llama-cpp-python's own grammar sampler (every
vocabulary token checked at every step) and with Cambrian's lazy grammar sampler (only the drawn
token checked; the vocabulary masked only when the grammar refuses it).

  .venv/bin/python benchmarks/grammar_speed.py [--model qwen2.5-coder-1.5b-instruct]
      [--tokens 256] [--repeats 2] [--format function]

Prints one line per mode (mean over repeats) and the ratio of each to the no-grammar speed;
compare ratios, not absolute figures, on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

from cambrian.config import PromptConfig, RunConfig
from cambrian.llm.base import GenerationParams, LLMRequest
from cambrian.llm.local_provider import LocalLlamaProvider
from cambrian.llm.model_files import get_spec, model_path
from cambrian.mutate.grammars import grammar_for
from cambrian.mutate.prompts import ProgramView, PromptBuilder, evolve_block_count
from cambrian.task.folder import load_task

REPO = Path(__file__).resolve().parent.parent


def prompt_for(fmt: str, provider: LocalLlamaProvider) -> tuple[tuple, str]:
    task = load_task(REPO / "examples" / "circle_packing", RunConfig())
    assert task.initial_source is not None
    parent = ProgramView(id=1, source=task.initial_source, score=1.7656, correct=True,
                         public={"sum_radii": 1.7656})
    kind = "full" if fmt == "full" else "diff"
    messages = PromptBuilder(task, PromptConfig()).build(
        kind=kind, fmt=fmt, parent=parent, budget_tokens=6000,
        count_tokens=provider.count_tokens, intent="refinement" if kind == "diff" else "strategy")
    return messages, grammar_for(fmt, "python", evolve_block_count(task.initial_source))


async def measure(provider: LocalLlamaProvider, messages: tuple, grammar: str | None,
                  tokens: int, seed: int) -> tuple[float, int]:
    request = LLMRequest(messages, GenerationParams(temperature=0.7, max_tokens=tokens,
                                                    grammar=grammar, seed=seed))
    await provider.complete(LLMRequest(messages, GenerationParams(max_tokens=1)))  # cache the prompt
    response = await provider.complete(request)
    return response.usage.completion_tokens / response.latency_s, response.usage.completion_tokens


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--format", default="function", choices=["diff", "full", "function"])
    args = parser.parse_args()
    path = model_path(get_spec(args.model))
    lazy = LocalLlamaProvider(path, n_ctx=8192, model_name=args.model, lazy_grammar=True)
    full = LocalLlamaProvider(path, n_ctx=8192, model_name=args.model, lazy_grammar=False)
    messages, grammar = prompt_for(args.format, lazy)
    results: dict[str, list[float]] = {"no grammar": [], "full grammar": [], "lazy grammar": []}
    masks = []
    for repeat in range(args.repeats):
        for mode, provider, text in (("no grammar", lazy, None), ("full grammar", full, grammar),
                                     ("lazy grammar", lazy, grammar)):
            speed, _ = asyncio.run(measure(provider, messages, text, args.tokens, seed=repeat))
            results[mode].append(speed)
            if mode == "lazy grammar":
                steps, full_masks = lazy.last_grammar_stats
                masks.append(full_masks / max(1, steps))
            full.close() if provider is lazy else lazy.close()  # one model in memory at a time
    base = statistics.fmean(results["no grammar"])
    print(f"model {args.model}, {args.format} reply format, up to {args.tokens} tokens, "
          f"{args.repeats} repeats")
    for mode, speeds in results.items():
        mean = statistics.fmean(speeds)
        print(f"  {mode:13s}: {mean:6.1f} tokens/s  ({mean / base:4.2f} x no grammar)")
    print(f"  lazy grammar steps that needed the full-vocabulary mask: "
          f"{100 * statistics.fmean(masks):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
