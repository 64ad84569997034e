"""The compile cache: one compilation per unique (source, command, compiler version)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cambrian.evaluate.judge.toolchains import CompileCache, cpp_toolchain, python_toolchain

PROGRAM = """
#include <iostream>
int main() { long n; std::cin >> n; std::cout << n << "\\n"; }
"""


def entries(cache_dir: Path) -> list[Path]:
    return [p for p in cache_dir.iterdir() if not p.name.startswith(".")]


async def test_second_compile_of_the_same_source_is_a_cache_hit(tmp_path: Path):
    cache = CompileCache(tmp_path / "cache")
    first = await cache.compile(PROGRAM, cpp_toolchain())
    second = await cache.compile(PROGRAM, cpp_toolchain())
    assert first.ok and not first.cache_hit
    assert second.ok and second.cache_hit
    assert second.artifact == first.artifact
    assert cache.compiler_invocations == 1

    changed = await cache.compile(PROGRAM.replace("<< n <<", "<< n + 1 <<"), cpp_toolchain())
    assert changed.ok and not changed.cache_hit
    assert changed.key != first.key
    assert cache.compiler_invocations == 2


async def test_a_fresh_cache_object_reuses_entries_on_disk(tmp_path: Path):
    await CompileCache(tmp_path / "cache").compile(PROGRAM, cpp_toolchain())
    reopened = CompileCache(tmp_path / "cache")
    result = await reopened.compile(PROGRAM, cpp_toolchain())
    assert result.cache_hit and reopened.compiler_invocations == 0


async def test_compile_errors_are_cached_too(tmp_path: Path):
    cache = CompileCache(tmp_path / "cache")
    broken = "int main() { return undefined_name; }\n"
    first = await cache.compile(broken, cpp_toolchain())
    second = await cache.compile(broken, cpp_toolchain())
    assert not first.ok and not second.ok
    assert "undefined_name" in second.error and second.cache_hit
    assert cache.compiler_invocations == 1


async def test_concurrent_compiles_of_one_source_share_one_entry(tmp_path: Path):
    cache_dir = tmp_path / "cache"
    same_process = CompileCache(cache_dir)
    results = await asyncio.gather(*(same_process.compile(PROGRAM, cpp_toolchain())
                                     for _ in range(3)))
    assert same_process.compiler_invocations == 1
    assert len({r.artifact for r in results}) == 1

    # Two cache objects stand in for two processes racing on a new key: both may compile,
    # one rename wins, and both end up with a complete, working entry.
    other = PROGRAM.replace("<< n <<", "<< 2 * n <<")
    first, second = CompileCache(cache_dir), CompileCache(cache_dir)
    a, b = await asyncio.gather(first.compile(other, cpp_toolchain()),
                                second.compile(other, cpp_toolchain()))
    assert a.ok and b.ok and a.artifact == b.artifact and a.artifact.exists()
    assert len(entries(cache_dir)) == 2
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".tmp-")]


async def test_key_depends_on_the_toolchain_command(tmp_path: Path):
    cache = CompileCache(tmp_path / "cache")
    source = "print(1)\n"
    default = cache.key(source, python_toolchain())
    other = cache.key(source, python_toolchain("/usr/bin/python3"))
    assert default != other
