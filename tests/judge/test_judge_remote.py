"""The remote scoring stage against a local server that misbehaves on purpose."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from scripted_server import Reply, ScriptedServer, closed_port_url

from cambrian.config.judge import RemoteConfig
from cambrian.evaluate.judge.remote import (
    RemoteRejectedRequest,
    RemoteScorer,
    RemoteUnreachable,
    retry_after_seconds,
)


def scorer(url: str, **settings) -> RemoteScorer:
    defaults = {"min_interval_s": 0.0, "max_attempts": 4, "timeout_s": 5.0,
                "initial_backoff_s": 0.05, "max_backoff_s": 2.0}
    return RemoteScorer(RemoteConfig(url=url, **{**defaults, **settings}), language="cpp")


async def test_server_errors_are_retried_until_a_score_arrives():
    script = [Reply(500, {"detail": "overloaded"}), Reply(502, "bad gateway"),
              Reply(200, {"score": 7.5})]
    with ScriptedServer(script) as server:
        remote = scorer(server.url)
        result = await remote.evaluate_stage("int main() {}")
    assert result.status == "ok"
    assert result.combined_score == 7.5
    assert result.extra["attempts"] == 3
    assert len(server.received) == 3
    assert server.received[-1].payload == {"language": "cpp", "source": "int main() {}"}


async def test_too_many_requests_waits_for_retry_after():
    script = [Reply(429, {"detail": "slow down"}, headers={"Retry-After": "1"}),
              Reply(200, {"score": 3})]
    with ScriptedServer(script) as server:
        result = await scorer(server.url, initial_backoff_s=0.01).evaluate_stage("src")
        gap = server.received[1].at - server.received[0].at
    assert result.status == "ok" and result.combined_score == 3
    assert gap >= 0.9  # the server asked for one second; the 0.01 s backoff was not used


async def test_a_hanging_server_times_out_and_the_retry_succeeds():
    script = [Reply(200, {"score": 1}, delay_s=3.0), Reply(200, {"score": 2})]
    with ScriptedServer(script) as server:
        result = await scorer(server.url, timeout_s=0.5).evaluate_stage("src")
    assert result.status == "ok" and result.combined_score == 2
    assert result.extra["attempts"] == 2


async def test_a_server_that_is_down_gives_a_clear_error():
    url = closed_port_url()
    remote = scorer(url, max_attempts=3)
    with pytest.raises(RemoteUnreachable) as caught:
        await remote.submit({"source": "x"})
    message = str(caught.value)
    assert message.startswith(f"remote scorer at {url} unreachable after 3 attempts:")
    assert "Connect" in message
    assert remote.requests_sent == 3
    stage = await remote.evaluate_stage("src")
    assert stage.status == "crashed" and "unreachable after 3 attempts" in stage.error


async def test_persistent_server_errors_exhaust_the_attempts():
    with ScriptedServer([], default=Reply(503, {"detail": "maintenance"})) as server:
        with pytest.raises(RemoteUnreachable, match="after 2 attempts: HTTP 503"):
            await scorer(server.url, max_attempts=2).submit({"source": "x"})
        assert len(server.received) == 2


async def test_client_errors_are_not_retried():
    with ScriptedServer([], default=Reply(400, {"detail": "unknown language"})) as server:
        with pytest.raises(RemoteRejectedRequest, match="HTTP 400.*unknown language"):
            await scorer(server.url).submit({"source": "x"})
        assert len(server.received) == 1


async def test_a_rejected_submission_is_an_incorrect_stage():
    with ScriptedServer([Reply(200, {"error": "route leaves the grid"})]) as server:
        result = await scorer(server.url).evaluate_stage("src")
    assert result.status == "incorrect"
    assert "route leaves the grid" in result.error


class RecordingTransport(httpx.AsyncBaseTransport):
    """Notes when each request leaves the client (after the rate limiter let it go)."""

    def __init__(self) -> None:
        self.sent_at: list[float] = []
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent_at.append(time.monotonic())
        return await self._inner.handle_async_request(request)


async def test_requests_are_spaced_by_the_minimum_interval():
    transport = RecordingTransport()
    with ScriptedServer([], default=Reply(200, {"score": 1})) as server:
        config = RemoteConfig(url=server.url, min_interval_s=0.3)
        remote = RemoteScorer(config, language="cpp", transport=transport)
        await asyncio.gather(*(remote.submit({"source": str(i)}) for i in range(3)))
        assert len(server.received) == 3
    sent = sorted(transport.sent_at)
    # Measured where the limiter acts (client side): network jitter cannot blur the gaps.
    assert all(later - earlier >= 0.25 for earlier, later in zip(sent, sent[1:]))


async def test_outputs_mode_posts_case_outputs():
    with ScriptedServer([Reply(200, {"score": 9})]) as server:
        remote = scorer(server.url, send="outputs")
        await remote.evaluate_stage("src", {"seed-0": "12\n", "seed-1": "34\n"})
    assert server.received[0].payload == {
        "language": "cpp",
        "outputs": [{"case": "seed-0", "output": "12\n"}, {"case": "seed-1", "output": "34\n"}],
    }


def test_retry_after_accepts_seconds_and_http_dates():
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert retry_after_seconds("soon") is None
