"""Model calls while a run is alive: how many are in flight, a line when one is retried, and the
breaker that ends a run whose endpoint fails every call.

A call's bounds (retries, seconds per attempt and per call, output tokens) are Inspect's
``GenerateConfig``, declared once in ``conf/inspect/default.yaml`` and given to every model a run
builds (``ModelSpec.build``), its roles' too: Inspect passes an eval's ``attempt_timeout`` and
``max_tokens`` to the evaluated model only. What Inspect does not do is give up on an endpoint:
each call runs its own retry schedule (3, 6, 12, 24, 48, 96 s), so a server that lists its models
and then fails every call cost 207 s per turn, 840 s of silence for two sessions.

``watch`` wraps a built model's provider at the two places Inspect lets a provider decide: each
attempt (``ModelAPI.generate``: counted in flight; refused once its endpoint is down) and the
wait before a retry (``ModelAPI.retry_wait``: computed after each failed attempt of a kind
Inspect retries, the call's last one too). The breaker of an endpoint (its ``base_url``, shared by
every sample and role that calls it): once ``BREAK_AFTER`` attempts failed with no answer in
between, the first of them at least ``BREAK_S`` ago, no call to it is tried again: the endpoint is
down, every call to it raises
``EndpointDown`` (naming the URL and the last cause), and the command ends with one line and exit
status 4. Meanwhile no backoff sleeps past the end of that window, so every waiting call learns it
within a second. A rate limit (any 4xx: the request's, not the endpoint's) neither counts nor
resets; an answer resets. Transient errors are still ridden out: a server that fails for less
than ``BREAK_S`` is retried as before.

Outside ``watching`` (a test calling ``inspect_ai.eval`` itself) a watched model behaves as built.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from physassist.faults import SystemFault

if TYPE_CHECKING:
    from inspect_ai.model import Model

#: Seconds an endpoint may fail every attempt (no answer in between) before the run gives up on it.
BREAK_S = 20.0
#: Failed attempts it takes as well (one call's first four: at 0, 3-6, 9-15 and 20 s).
BREAK_AFTER = 4
#: Seconds between two retry lines of one endpoint (the first is printed at once).
RETRY_LINE_S = 10.0


class EndpointDown(SystemFault):
    """An endpoint failed every attempt for ``BREAK_S``: the message names it and the cause.
    Not a turn's fault: the sample ends with it, and so does the eval (Inspect's
    ``fail_on_error``)."""


def cause(exc: BaseException | None) -> str:
    """What failed, in a few words: the HTTP status, or the error's type and first words; no
    secret (a provider's error may quote a header it was sent)."""
    from physassist.faults import describe
    from physassist.redaction import scrub

    if exc is None or not isinstance(exc, Exception):
        return "no answer within the attempt's time limit"
    status = getattr(exc, "status_code", None)
    text = scrub(describe(exc, limit=160))
    return f"HTTP {status} ({text})" if status else text


def _counts(exc: BaseException | None) -> bool:
    """A failure of the endpoint (not a 4xx: a rate limit or a refused request is the request's)."""
    status = getattr(exc, "status_code", None)
    return not (isinstance(status, int) and 400 <= status < 500 and status != 408)


@dataclass
class Endpoint:
    """One endpoint's breaker: the failures since its last answer."""

    label: str  # "model endpoint http://127.0.0.1:8000/v1" (or "grader openai/gpt-5.4-mini")
    first: float | None = None  # monotonic time of the first failure since the last answer
    failures: int = 0
    last: str = ""  # the latest failure's cause
    down: str | None = None  # the breaker's message once it opened
    lined: float = -math.inf  # when its last retry line was printed

    def answered(self) -> None:
        self.first, self.failures = None, 0

    def failed(self, exc: BaseException) -> None:
        self.first = time.monotonic() if self.first is None else self.first
        self.failures += 1
        self.last = cause(exc)

    def breaks(self, now: float) -> bool:
        """The breaker opens now: enough failures, over the whole window, none answered."""
        if (
            self.down is None
            and self.first is not None
            and self.failures >= BREAK_AFTER
            and now - self.first >= BREAK_S
        ):
            self.down = (
                f"{self.label}: every call failed for {now - self.first:.0f} s "
                f"({self.failures} attempts, none answered): {self.last}"
            )
        return self.down is not None


@dataclass
class _Call:
    """A model call in flight: since its first attempt, through its retries."""

    start: float
    running: bool = True  # an attempt is under way
    retrying: bool = False  # its last attempt failed and Inspect will try again


@dataclass
class Watch:
    """One run's calls: the endpoints' breakers, the calls in flight, where lines go."""

    say: Callable[[str], None] = print
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    #: Each call by the task that makes it (Inspect retries a call in the task that made it):
    #: a call whose last attempt failed for good is neither running nor retrying.
    calls: weakref.WeakKeyDictionary[Any, _Call] = field(default_factory=weakref.WeakKeyDictionary)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # the progress thread reads

    def endpoint(self, key: str, label: str) -> Endpoint:
        return self.endpoints.setdefault(key, Endpoint(label))

    def down(self) -> str | None:
        """The first endpoint found down (its message), or None."""
        return next((e.down for e in self.endpoints.values() if e.down), None)

    def in_flight(self) -> str:
        """``calls in flight 2 (1 retrying; slowest 41 s)`` (the progress lines' tail)."""
        with self._lock:
            live = [c for c in self.calls.values() if c.running or c.retrying]
        if not live:
            return "calls in flight 0"
        retrying = sum(c.retrying for c in live)
        waits = f"{retrying} retrying; " if retrying else ""
        return (
            f"calls in flight {len(live)} ({waits}slowest "
            f"{time.monotonic() - min(c.start for c in live):.0f} s)"
        )

    @contextlib.contextmanager
    def attempt(self) -> Iterator[None]:
        """One attempt of the current task's call (its first, or a retry); answered, the call is
        over."""
        task = asyncio.current_task() or object()
        with self._lock:
            call = self.calls.get(task)
            if call is None or not call.retrying:
                call = self.calls[task] = _Call(time.monotonic())
            call.running, call.retrying = True, False
        try:
            yield
        except BaseException:
            call.running = False
            raise
        with self._lock:
            self.calls.pop(task, None)

    def retrying(self) -> None:
        """The current task's call failed an attempt and will be tried again."""
        call = self.calls.get(asyncio.current_task() or object())
        if call is not None:
            call.retrying = True


_active: Watch | None = None
_last: Watch | None = None


@contextlib.contextmanager
def watching(say: Callable[[str], None] = print) -> Iterator[Watch]:
    """Watch the calls of the run inside the block (``say``: where its retry lines go)."""
    global _active, _last
    _active = _last = Watch(say)
    try:
        yield _active
    finally:
        _active = None


def down() -> str | None:
    """Why the last watched run gave up on an endpoint (its one line), or None; asked once per
    run (the answer is not kept for a later run of the process that is not watched)."""
    global _last
    watched, _last = _last, None
    return watched.down() if watched is not None else None


def in_flight() -> str:
    """The calls of the run being watched, for a progress line."""
    return _active.in_flight() if _active is not None else "calls in flight 0"


class _Wait:
    """The retry wait of one endpoint's calls (tenacity's ``wait``): the provider's own schedule,
    never past the end of the breaker's window; none once the endpoint is down."""

    def __init__(self, key: str, label: str, base: Callable[[Any], float]) -> None:
        self.key, self.label, self.base = key, label, base

    def __call__(self, state: Any) -> float:
        wait = float(self.base(state))
        run = _active
        exc = state.outcome.exception() if state.outcome is not None else None
        if run is None or not _counts(exc):
            return wait
        endpoint = run.endpoint(self.key, self.label)
        now = time.monotonic()
        if endpoint.breaks(now):
            return 0.0  # the next attempt raises EndpointDown at once
        if endpoint.first is not None:
            wait = min(wait, max(0.0, endpoint.first + BREAK_S - now) + 0.5)
        run.retrying()
        if now - endpoint.lined >= RETRY_LINE_S:
            endpoint.lined = now
            run.say(f"{self.label}: {cause(exc)}; retry {state.attempt_number} in {wait:.0f} s")
        return wait


def watch(model: Model, label: str, key: str) -> Model:
    """``model`` (an Inspect ``Model``) with its attempts and retry waits watched for the run in
    progress; ``label`` names the endpoint in lines, ``key`` identifies it (its base URL)."""
    from tenacity import wait_exponential_jitter

    # Any: its generate and retry_wait are replaced below, which mypy does not allow on methods.
    api: Any = model.api
    generate = api.generate
    base = api.retry_wait() or wait_exponential_jitter(
        multiplier=3, max=30 * 60, jitter=3
    )  # Inspect's default

    async def attempt(*args: Any, **kwargs: Any) -> Any:
        run = _active
        if run is None:
            return await generate(*args, **kwargs)
        endpoint = run.endpoint(key, label)
        if endpoint.down is not None:
            raise EndpointDown(endpoint.down)
        with run.attempt():
            try:
                result = await generate(*args, **kwargs)
            except (
                BaseException
            ) as exc:  # a cancelled attempt is one that timed out (or the run ends)
                if _counts(exc):
                    endpoint.failed(exc)
                raise
        endpoint.answered()
        return result

    api.generate = attempt
    api.retry_wait = lambda: _Wait(key, label, base)
    return model
