"""A remote scorer -- a contest server -- as the expensive last evaluation stage (seed 004 §9
"Contest Server Interface": HTTP submission, score retrieval, rate limiting and retries).

Protocol: POST JSON to the configured URL, either
  {"language": "cpp", "source": "..."}                              (send: program) or
  {"language": "cpp", "outputs": [{"case": "seed-0", "output": "..."}, ...]}  (send: outputs);
the server answers 2xx with {"score": <number>} or {"error": "<why the submission is invalid>"}.

Requests are spaced by at least `min_interval_s` (shared by every evaluation using the scorer,
retries included). Connection errors, timeouts, 5xx and 429 are retried with exponential
backoff (a Retry-After header is honoured, capped by max_backoff_s); other 4xx replies are not.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from cambrian.config.judge import RemoteConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.evaluate.judge.scoring import interpret_reply

REPLY_EXCERPT_CHARS = 300


class RemoteScorerError(RuntimeError):
    """The remote scorer gave no usable answer (unreachable, refused, malformed)."""


class RemoteUnreachable(RemoteScorerError):
    pass


class RemoteRejectedRequest(RemoteScorerError):
    pass


class MinIntervalLimiter:
    """Lets callers through one at a time, at least `interval_s` apart."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._lock = asyncio.Lock()
        self._last_start: float | None = None

    async def wait_turn(self) -> None:
        async with self._lock:
            if self._last_start is not None:
                delay = self._last_start + self.interval_s - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            self._last_start = time.monotonic()


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: either a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


@dataclass(frozen=True)
class RemoteOutcome:
    score: float | None
    error: str | None  # the server judged the submission invalid
    attempts: int
    duration_s: float


class RemoteScorer:
    def __init__(
        self,
        config: RemoteConfig,
        *,
        language: str,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = config
        self.language = language
        self.requests_sent = 0
        self._transport = transport
        self._limiter = MinIntervalLimiter(config.min_interval_s)
        self._headers = {"Content-Type": "application/json"}
        if config.token_env:
            token = os.environ.get(config.token_env)
            if not token:
                raise RemoteScorerError(
                    f"judge.remote.token_env names {config.token_env}, which is not set"
                )
            self._headers["Authorization"] = f"Bearer {token}"

    def payload(self, source: str, outputs: Mapping[str, str] | None) -> dict[str, Any]:
        if self.config.send == "program":
            return {"language": self.language, "source": source}
        return {
            "language": self.language,
            "outputs": [{"case": case, "output": text} for case, text in (outputs or {}).items()],
        }

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        backoff = self.config.initial_backoff_s * (2 ** (attempt - 1))
        if retry_after is not None:
            backoff = max(backoff, retry_after)
        return min(backoff, self.config.max_backoff_s)

    async def submit(self, payload: dict[str, Any]) -> RemoteOutcome:
        """POST with rate limiting and retries; raises RemoteScorerError without an answer."""
        url = self.config.url
        started = time.monotonic()
        last_problem = ""
        async with httpx.AsyncClient(
            timeout=self.config.timeout_s, transport=self._transport, headers=self._headers
        ) as client:
            for attempt in range(1, self.config.max_attempts + 1):
                await self._limiter.wait_turn()
                retry_after: float | None = None
                self.requests_sent += 1
                try:
                    response = await client.post(url, json=payload)
                except httpx.TimeoutException:
                    last_problem = f"no reply within {self.config.timeout_s:g} s"
                except httpx.TransportError as error:
                    last_problem = f"{type(error).__name__}: {error}" if str(error) else \
                        type(error).__name__
                else:
                    if response.status_code == 429 or response.status_code >= 500:
                        last_problem = f"HTTP {response.status_code}: {_excerpt(response)}"
                        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                    elif response.status_code >= 400:
                        raise RemoteRejectedRequest(
                            f"remote scorer at {url} rejected the request: "
                            f"HTTP {response.status_code}: {_excerpt(response)}"
                        )
                    else:
                        return self._outcome(response, attempt, time.monotonic() - started)
                if attempt < self.config.max_attempts:
                    await asyncio.sleep(self._backoff(attempt, retry_after))
        raise RemoteUnreachable(
            f"remote scorer at {url} unreachable after {self.config.max_attempts} attempts: "
            f"{last_problem}"
        )

    def _outcome(self, response: httpx.Response, attempts: int, duration_s: float) -> RemoteOutcome:
        try:
            reply = response.json()
        except ValueError:
            raise RemoteScorerError(
                f"remote scorer at {self.config.url} replied with something that is not JSON: "
                f"{_excerpt(response)}"
            ) from None
        if not isinstance(reply, dict) or ("score" not in reply and "error" not in reply):
            raise RemoteScorerError(
                f"remote scorer at {self.config.url} replied without 'score' or 'error': "
                f"{_excerpt(response)}"
            )
        verdict = interpret_reply(reply)
        return RemoteOutcome(score=verdict.score, error=verdict.error, attempts=attempts,
                             duration_s=duration_s)

    async def evaluate_stage(
        self, source: str, outputs: Mapping[str, str] | None = None
    ) -> EvaluationResult:
        """The remote stage as an EvaluationResult: ok (scored), incorrect (the server rejected
        the submission) or crashed (no usable answer from the server)."""
        started = time.monotonic()
        try:
            outcome = await self.submit(self.payload(source, outputs))
        except RemoteScorerError as error:
            return EvaluationResult(status="crashed", error=str(error),
                                    duration_s=time.monotonic() - started,
                                    extra={"remote_unavailable": True})
        extra = {"attempts": outcome.attempts}
        if outcome.error is not None:
            return EvaluationResult(
                status="incorrect", error=f"remote scorer rejected the submission: {outcome.error}",
                duration_s=outcome.duration_s, extra=extra,
            )
        return EvaluationResult(
            status="ok", combined_score=outcome.score, public={"remote_score": outcome.score},
            text_feedback=f"Remote scorer: {outcome.score:.6g}.", duration_s=outcome.duration_s,
            extra=extra,
        )


def _excerpt(response: httpx.Response) -> str:
    text = " ".join(response.text.split())
    return text[:REPLY_EXCERPT_CHARS] or "(empty body)"
