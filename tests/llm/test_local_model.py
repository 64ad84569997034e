"""Local model files (assembly from chunk packages) and the llama.cpp provider (real 0.5B model)."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cambrian.llm import model_files
from cambrian.llm.base import (
    ContextOverflow,
    GenerationParams,
    LLMBadRequest,
    LLMProvider,
    LLMRequest,
    Message,
)
from cambrian.llm.local_provider import LocalLlamaProvider
from cambrian.llm.model_files import (
    LocalModelSpec,
    ModelHashMismatch,
    ModelPartsMissing,
    assemble,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

# --- model files -------------------------------------------------------------------------------


def _make_part_packages(root: Path, prefix: str, chunks: list[bytes]) -> list[str]:
    """Write importable packages shaped like the real weight packages (``get_part_path()``)."""
    names = []
    for index, chunk in enumerate(chunks, start=1):
        name = f"{prefix}_part{index}"
        package = root / name
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part{index:02d}.bin").write_bytes(chunk)
        (package / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            "    here = os.path.dirname(os.path.abspath(__file__))\n"
            f"    return os.path.join(here, 'data', 'part{index:02d}.bin')\n"
        )
        names.append(name)
    return names


@pytest.fixture
def fake_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[LocalModelSpec, bytes, Path]:
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"middle part " * 500, b"the end"]
    packages_root = tmp_path / "site"
    packages_root.mkdir()
    # Unique names: imported modules stay cached in sys.modules across tests.
    prefix = "fake_weights_" + hashlib.sha1(str(tmp_path).encode()).hexdigest()[:10]
    packages = _make_part_packages(packages_root, prefix, chunks)
    monkeypatch.syspath_prepend(str(packages_root))
    content = b"".join(chunks)
    spec = LocalModelSpec(
        name="fake-model",
        packages=tuple(packages),
        pip_requirements_file="requirements/fake.txt",
        sha256=hashlib.sha256(content).hexdigest(),
        approx_size_bytes=len(content),
        context_window=2048,
    )
    return spec, content, tmp_path / "models"


def test_assemble_concatenates_parts_in_order_and_verifies(
    fake_model: tuple[LocalModelSpec, bytes, Path],
) -> None:
    spec, content, models = fake_model

    path = assemble(spec, directory=models)

    assert path == models / "fake-model.gguf"
    assert path.read_bytes() == content
    assert sorted(p.name for p in models.iterdir()) == [
        "fake-model.gguf",
        "fake-model.gguf.verified.json",
    ]


def test_assemble_reuses_a_stamped_file_without_rehashing_or_parts(
    fake_model: tuple[LocalModelSpec, bytes, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, content, models = fake_model
    path = assemble(spec, directory=models)

    def must_not_hash(_path: Path) -> str:
        raise AssertionError("a file with a valid stamp was hashed again")

    monkeypatch.setattr(model_files, "_sha256_of", must_not_hash)
    monkeypatch.setattr(model_files, "_part_files", lambda _spec: pytest.fail("parts were read"))

    assert assemble(spec, directory=models) == path
    assert model_files.is_assembled(spec, directory=models)
    assert path.read_bytes() == content


def test_assemble_rebuilds_a_file_changed_after_it_was_stamped(
    fake_model: tuple[LocalModelSpec, bytes, Path],
) -> None:
    spec, content, models = fake_model
    path = assemble(spec, directory=models)
    with path.open("ab") as handle:
        handle.write(b"bit rot")

    assert not model_files.is_assembled(spec, directory=models)
    assert assemble(spec, directory=models).read_bytes() == content
    assert model_files.is_assembled(spec, directory=models)


def test_corrupted_part_raises_hash_error_and_leaves_no_file(
    fake_model: tuple[LocalModelSpec, bytes, Path],
) -> None:
    spec, _content, models = fake_model
    import importlib

    second_part = Path(importlib.import_module(spec.packages[1]).get_part_path())
    second_part.write_bytes(b"corrupted" + second_part.read_bytes()[9:])

    with pytest.raises(ModelHashMismatch) as raised:
        assemble(spec, directory=models)

    message = str(raised.value)
    assert spec.sha256 in message
    assert re.search(r"got [0-9a-f]{64}", message)
    assert list(models.iterdir()) == []


def test_missing_part_package_names_it_and_points_to_setup(
    fake_model: tuple[LocalModelSpec, bytes, Path],
) -> None:
    spec, _content, models = fake_model
    incomplete = LocalModelSpec(
        name=spec.name,
        packages=(*spec.packages, "cambrian_no_such_weights_part9"),
        pip_requirements_file=spec.pip_requirements_file,
        sha256=spec.sha256,
        approx_size_bytes=spec.approx_size_bytes,
        context_window=spec.context_window,
    )

    with pytest.raises(ModelPartsMissing) as raised:
        assemble(incomplete, directory=models)

    assert "cambrian_no_such_weights_part9" in str(raised.value)
    assert "./scripts/setup.sh" in str(raised.value)
    assert not (models / "fake-model.gguf").exists()


def test_models_dir_follows_cambrian_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAMBRIAN_CACHE", str(tmp_path))
    assert model_files.models_dir() == tmp_path / "models"
    expected = tmp_path / "models" / "qwen2.5-coder-0.5b-instruct.gguf"
    assert model_files.model_path("0.5b") == expected


@pytest.mark.parametrize("spec", list(model_files.LOCAL_MODELS.values()), ids=lambda s: s.name)
def test_registry_matches_its_pinned_requirements_file(spec: LocalModelSpec) -> None:
    lines = (REPO_ROOT / spec.pip_requirements_file).read_text().splitlines()
    pins = [line.strip() for line in lines if line.strip() and not line.startswith("#")]

    pinned_names = [pin.split("==")[0].replace("-", "_") for pin in pins]
    assert pinned_names == list(spec.packages)
    assert all(re.fullmatch(r"[\w-]+==\d+(\.\d+)+", pin) for pin in pins)
    assert re.fullmatch(r"[0-9a-f]{64}", spec.sha256)


def test_short_aliases_resolve_to_registered_models() -> None:
    assert model_files.get_spec("1.5b").name == "qwen2.5-coder-1.5b-instruct"
    assert model_files.get_spec("0.5b").name == "qwen2.5-coder-0.5b-instruct"
    with pytest.raises(model_files.ModelFilesError, match="known models"):
        model_files.get_spec("gpt-5")


def test_provider_satisfies_the_protocol_without_loading_the_model(tmp_path: Path) -> None:
    provider = LocalLlamaProvider(tmp_path / "absent.gguf", n_ctx=1024)
    assert isinstance(provider, LLMProvider)
    assert provider.context_window == 1024
    assert provider.model == "absent"


# --- the real 0.5B model -------------------------------------------------------------------------

SMALL_MODEL = "qwen2.5-coder-0.5b-instruct"
N_CTX = 4096


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalLlamaProvider]:
    local = LocalLlamaProvider.from_registry(SMALL_MODEL, n_ctx=N_CTX)
    yield local
    local.close()


def _ask(text: str, system: str | None = None, **params: Any) -> LLMRequest:
    messages = ([Message("system", system)] if system else []) + [Message("user", text)]
    return LLMRequest(tuple(messages), GenerationParams(**params))


@pytest.mark.local_llm
async def test_plain_call_returns_text_and_exact_usage(provider: LocalLlamaProvider) -> None:
    request = _ask("Write a Python function that returns the square of x.", max_tokens=24)

    response = await provider.complete(request)

    assert response.text.strip()
    assert response.model == SMALL_MODEL
    assert response.usage.prompt_tokens == provider.count_prompt_tokens(request.messages)
    assert 0 < response.usage.completion_tokens <= 24
    assert response.finish_reason in ("stop", "length")
    assert response.cost_usd == 0.0
    assert response.latency_s > 0


@pytest.mark.local_llm
async def test_yes_no_grammar_constrains_the_reply(provider: LocalLlamaProvider) -> None:
    for question in ("Is 7 a prime number?", "Is the sky green?"):
        response = await provider.complete(
            _ask(f"{question} Answer YES or NO.", grammar='root ::= "YES" | "NO"', max_tokens=8)
        )
        assert response.text in ("YES", "NO")
        assert response.finish_reason == "stop"


@pytest.mark.local_llm
async def test_fenced_python_grammar_constrains_the_reply(provider: LocalLlamaProvider) -> None:
    grammar = "\n".join(
        [
            'root ::= "```python\\n" line line? line? "```"',
            'line ::= [^`\\n]{1,60} "\\n"',
        ]
    )
    response = await provider.complete(
        _ask(
            "Write a one-line Python function add(a, b) that returns their sum.",
            grammar=grammar,
            temperature=0.0,
            max_tokens=200,
        )
    )

    assert re.fullmatch(r"```python\n(?:[^`\n]{1,60}\n){1,3}```", response.text), response.text
    assert response.finish_reason == "stop"


@pytest.mark.local_llm
async def test_invalid_grammar_is_a_bad_request_and_the_model_survives(
    provider: LocalLlamaProvider,
) -> None:
    with pytest.raises(LLMBadRequest, match="grammar"):
        await provider.complete(_ask("Say hi.", grammar="root ::= (", max_tokens=4))

    response = await provider.complete(_ask("Say hi.", max_tokens=4))
    assert response.text


@pytest.mark.local_llm
async def test_stop_sequence_ends_the_reply(provider: LocalLlamaProvider) -> None:
    response = await provider.complete(
        _ask(
            "Count from 1 to 10, one number per line, nothing else.",
            stop=("\n",),
            temperature=0.0,
            max_tokens=40,
        )
    )

    assert "\n" not in response.text
    assert response.finish_reason == "stop"


@pytest.mark.local_llm
async def test_token_limit_reports_length(provider: LocalLlamaProvider) -> None:
    response = await provider.complete(
        _ask("Write a long essay about sorting algorithms.", max_tokens=8)
    )

    assert response.finish_reason == "length"
    assert response.truncated
    assert response.usage.completion_tokens == 8


@pytest.mark.local_llm
async def test_shared_prompt_prefix_is_served_from_the_kv_cache(
    provider: LocalLlamaProvider,
) -> None:
    fixed_part = "You review Python code for an evolutionary search.\n" + "\n".join(
        f"Guideline {i}: functions must stay pure, typed and shorter than {i + 20} lines."
        for i in range(60)
    )
    prefix_tokens = provider.count_tokens(fixed_part)
    assert prefix_tokens > 900

    await provider.complete(_ask("Review: def f(x): return x", system=fixed_part, max_tokens=2))
    second = await provider.complete(
        _ask("Review: def g(y): return y * 2", system=fixed_part, max_tokens=2)
    )

    assert second.usage.cached_prompt_tokens >= prefix_tokens
    assert second.usage.cached_prompt_tokens < second.usage.prompt_tokens


@pytest.mark.local_llm
async def test_over_long_prompt_raises_context_overflow_and_the_model_survives(
    provider: LocalLlamaProvider,
) -> None:
    huge = "def f(): pass\n" * 1500
    assert provider.count_tokens(huge) > N_CTX

    with pytest.raises(ContextOverflow, match=str(N_CTX)):
        await provider.complete(_ask(huge, max_tokens=8))
    with pytest.raises(ContextOverflow, match="max_tokens=4090"):
        await provider.complete(_ask("x = 1", max_tokens=4090))

    response = await provider.complete(_ask("Say hello.", max_tokens=4))
    assert response.text


@pytest.mark.local_llm
async def test_concurrent_calls_are_serialised_and_all_succeed(
    provider: LocalLlamaProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = provider._load()
    active = 0
    most_active = 0
    counter_lock = threading.Lock()
    original: Callable[..., Any] = llm.create_completion

    def counting_completion(*args: Any, **kwargs: Any) -> Any:
        nonlocal active, most_active
        with counter_lock:
            active += 1
            most_active = max(most_active, active)
        try:
            return original(*args, **kwargs)
        finally:
            with counter_lock:
                active -= 1

    monkeypatch.setattr(llm, "create_completion", counting_completion)

    responses = await asyncio.gather(
        provider.complete(_ask("Name a sorting algorithm.", max_tokens=6)),
        provider.complete(_ask("Name a Python web framework.", max_tokens=6)),
        provider.complete(_ask("Name a prime number.", max_tokens=6)),
    )

    assert all(response.text for response in responses)
    assert most_active == 1


@pytest.mark.local_llm
async def test_a_cancelled_call_stops_generating(provider: LocalLlamaProvider) -> None:
    # Cancelling the awaiting task cannot stop the worker thread; the stop flag does, so a
    # Ctrl-C or SIGTERM does not wait for thousands of tokens nobody will read.
    request = _ask("Write the whole numbers from 1 to 5000, one per line.", max_tokens=3000)
    call = asyncio.create_task(provider.complete(request))
    await asyncio.sleep(3)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    # The worker holds the model lock until its generation has ended.
    await asyncio.to_thread(provider._model_lock.acquire)
    provider._model_lock.release()
    # It ended long before its 3000 tokens (about 150 are generated in 3 s here).
    assert provider.last_completion_tokens < 1500
    reply = await provider.complete(_ask("Say OK.", max_tokens=4))
    assert reply.text


LAZY_PROGRAM = '''import math

# EVOLVE-BLOCK-START
def area(r):
    """Area of a circle of radius r."""
    return 3.14 * r * r
# EVOLVE-BLOCK-END
'''


@pytest.mark.local_llm
@pytest.mark.parametrize("fmt", ["diff", "full", "function"])
async def test_cambrian_reply_grammars_hold_the_local_model_to_the_format(
        provider: LocalLlamaProvider, fmt: str) -> None:
    import re

    from cambrian.mutate.grammars import format_instructions, grammar_for
    from cambrian.mutate.patches import PatchError, apply_reply

    prompt = (f"## Current program\n```python\n{LAZY_PROGRAM}```\n\n## Your task\nUse math.pi "
              f"instead of 3.14.\n\n{format_instructions(fmt, 'python', blocks=1)}")
    response = await provider.complete(_ask(prompt, max_tokens=300, temperature=0.7,
                                            grammar=grammar_for(fmt, "python", blocks=1)))
    text = response.text
    assert response.finish_reason == "stop"
    steps, full_masks = provider.last_grammar_stats
    # One step per token, the end-of-text token included; most draws needed no full mask.
    assert steps == response.usage.completion_tokens + 1 and full_masks < steps / 2
    if fmt == "diff":
        assert re.fullmatch(r"([^\n`<]*\n)?(<<<<<<< SEARCH\n(.*\n)*?=======\n(.*\n)*?"
                            r">>>>>>> REPLACE\n\n?)+", text), text
    elif fmt == "full":
        assert re.fullmatch(r"([^\n`]*\n)?```python\n# EVOLVE-BLOCK-START\n(.*\n)*"
                            r"# EVOLVE-BLOCK-END\n```\n?", text), text
    else:
        assert re.fullmatch(r"([^\n`]*\n)?```python\n(def |async def |@|import |from |class )"
                            r"(.*\n)*```\n?", text), text
    try:  # the structure is guaranteed; whether the edit applies is the model's business
        apply_reply(fmt, LAZY_PROGRAM, text, "python")
    except PatchError as exc:
        assert "no code block" not in str(exc) and "cut off" not in str(exc)


@pytest.mark.local_llm
async def test_a_side_request_does_not_evict_the_mutation_prompts_prefix() -> None:
    """Mutation prompt, then a short judge-like request, then the next mutation prompt: the
    third call reuses the first one's KV cache for the prefix the two share."""
    shared = "You improve programs. " + "The problem statement goes on at length. " * 60

    async def third_call_reuse(saved_prompts: int) -> tuple[int, int]:
        local = LocalLlamaProvider.from_registry(SMALL_MODEL, n_ctx=N_CTX,
                                                 saved_prompts=saved_prompts)
        try:
            await local.complete(_ask("Program A, step 1.", system=shared, max_tokens=4))
            await local.complete(_ask("Answer SAME or DIFFERENT: x=1 vs x=2.", max_tokens=2))
            third = _ask("Program B, step 2.", system=shared, max_tokens=4)
            response = await local.complete(third)
            return response.usage.cached_prompt_tokens, local.count_prompt_tokens(third.messages)
        finally:
            local.close()

    kept, total = await third_call_reuse(saved_prompts=4)
    evicted, _ = await third_call_reuse(saved_prompts=0)
    assert kept > 0.8 * total  # the system message and chat framing came from the saved state
    assert evicted < 20  # without saved states only the chat template's first tokens match
