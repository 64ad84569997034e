"""Evaluator of a classification prompt (module contract: evaluate(program_path) -> dict).

The candidate (``program.txt``) is the system prompt of Cambrian's embedded 0.5B model
(Qwen2.5-Coder 0.5B, run by llama-cpp-python); each sentence of ``examples.jsonl`` is sent as
the user message, and the topic the reply names first (sports, business, science or politics)
is the model's answer. The score is the accuracy on those 24 sentences. Every example is also
reported as a case (input, expected, what the model answered, whether it was right), which the
mutation prompt shows for the model to reflect on; the held-out sentences (``heldout.jsonl``,
16) are scored too, as a private metric no prompt shows.

The model is loaded once per evaluation and answers greedily with a few tokens; llama.cpp
reuses the candidate's tokens between sentences (the same system prompt starts every request).
Inside the sandbox the weights are read from CAMBRIAN_MODELS_DIR, which the sandbox exposes
read-only. PROMPT_CLASSIFIER_LIMIT=N scores only the first N sentences of each split (tests).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from llama_cpp import Llama

from cambrian.llm.model_files import model_path
from cambrian.task.blocks import without_markers

HERE = Path(__file__).resolve().parent
MODEL = "qwen2.5-coder-0.5b-instruct"
LABELS = ("sports", "business", "science", "politics")
MAX_TOKENS = 6  # enough for "Topic: politics."; a rambling answer is cut and names no topic
N_CTX = 2048
MAX_PROMPT_TOKENS = 1500  # of the candidate, leaving room for a sentence and the answer
_LABEL = re.compile(r"\b(" + "|".join(LABELS) + r")\b")
_model: Any = None


def load_split(name: str) -> list[dict[str, str]]:
    """The split's sentences; with PROMPT_CLASSIFIER_LIMIT=N, the first N taken from the topics
    in turn."""
    rows = [json.loads(line) for line in (HERE / name).read_text().splitlines() if line.strip()]
    limit = int(os.environ.get("PROMPT_CLASSIFIER_LIMIT", "0"))
    if limit <= 0:
        return rows
    by_topic = [[row for row in rows if row["label"] == label] for label in LABELS]
    turns = [row for depth in range(len(rows)) for topic in by_topic if depth < len(topic)
             for row in [topic[depth]]]
    return turns[:limit]


def model() -> Any:
    global _model
    if _model is None:
        path = os.environ.get("PROMPT_CLASSIFIER_MODEL") or str(model_path(MODEL))
        _model = Llama(model_path=path, n_ctx=N_CTX, n_threads=1, seed=0,
                       verbose=False)
    return _model


def answer_label(answer: str) -> str | None:
    """The first topic the answer names (None: it names none)."""
    found = _LABEL.search(answer.lower())
    return found.group(1) if found else None


def classify(prompt: str, sentence: str) -> str:
    reply = model().create_chat_completion(
        messages=[{"role": "system", "content": prompt}, {"role": "user", "content": sentence}],
        max_tokens=MAX_TOKENS, temperature=0.0)
    return str(reply["choices"][0]["message"]["content"] or "").strip()


def score_split(prompt: str, rows: list[dict[str, str]]) -> tuple[float, list[dict[str, Any]]]:
    cases = []
    for row in rows:
        answer = classify(prompt, row["text"])
        label = answer_label(answer)
        correct = label == row["label"]
        if correct:
            feedback = "right"
        elif label is None:
            feedback = "the answer names none of the topics " + ", ".join(LABELS)
        else:
            feedback = f"the answer names {label}, but the sentence is about {row['label']}"
        cases.append({"input": row["text"], "expected": row["label"], "output": answer,
                      "correct": correct, "feedback": feedback})
    return sum(case["correct"] for case in cases) / max(1, len(cases)), cases


def per_label(cases: list[dict[str, Any]]) -> str:
    parts = []
    for label in LABELS:
        mine = [case for case in cases if case["expected"] == label]
        parts.append(f"{label} {sum(case['correct'] for case in mine)}/{len(mine)}")
    unnamed = sum(1 for case in cases if answer_label(case["output"]) is None)
    return f"right per topic: {', '.join(parts)}; answers naming no topic: {unnamed}"


def evaluate(program_path: str) -> dict[str, Any]:
    prompt = without_markers(Path(program_path).read_text()).strip()
    if not prompt:
        return {"combined_score": 0.0, "correct": False, "error": "the prompt is empty"}
    tokens = len(model().tokenize(prompt.encode()))
    if tokens > MAX_PROMPT_TOKENS:
        return {"combined_score": 0.0, "correct": False,
                "error": f"the prompt is {tokens} tokens long; at most {MAX_PROMPT_TOKENS}"}
    accuracy, cases = score_split(prompt, load_split("examples.jsonl"))
    heldout, _ = score_split(prompt, load_split("heldout.jsonl"))
    named = sum(1 for case in cases if answer_label(case["output"]) is not None) / len(cases)
    return {
        "combined_score": accuracy,
        "public": {"accuracy": accuracy, "named_a_topic": named, "prompt_tokens": tokens},
        "private": {"heldout_accuracy": heldout},
        "text_feedback": per_label(cases),
        "cases": cases,
    }


if __name__ == "__main__":  # python evaluate.py PROMPT_FILE: both accuracies of one prompt
    result = evaluate(sys.argv[1])
    print(json.dumps({key: result.get(key) for key in ("public", "private", "text_feedback")},
                     indent=1))
