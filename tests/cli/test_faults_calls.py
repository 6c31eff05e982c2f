"""Model calls that keep failing or take long, with the DEFAULT config (docs/faults.md, "An
endpoint that fails after the pre-flight" and "A slow endpoint"), through a real server on
127.0.0.1 and the command's output read as a log file would get it (not a terminal).

A 429 with Retry-After and a transient outage (8 s of 500s) are still ridden out with the
defaults: the run finishes with every turn scored.

Measured before: a server that lists its models and answers 500 to every chat call ran 840 s
with nothing printed (``inspect.limit=2``), then exited 4; a 20 s-per-call server ran 250 s
without a word. Now the breaker (``physassist/calls.py``) ends the first within 60 s with one line
naming the URL, a retried call says so at once, and a run prints a progress line at least every
``inspect.progress_s`` seconds (15).
"""

from __future__ import annotations

import itertools
import re
import signal
import time
from pathlib import Path

import pytest
from fixtures_http import ScriptedServer, agent_policy
from fixtures_running import Running
from fixtures_tracking import search_runs, store_uri
from inspect_ai.log import list_eval_logs, read_eval_log

from physassist import redaction
from physassist.agents.oracle import OracleAgent
from physassist.calls import BREAK_AFTER, BREAK_S, Endpoint, _counts, cause
from physassist.faults import EXIT_FAULTS, FAULT_TAG
from physassist.redaction import MASK

KEY = {"OPENAI_COMPATIBLE_API_KEY": "EMPTY"}


def _eval(tmp_path: Path, url: str, *extra: str) -> list[str]:
    """The defaults against the server, two sessions, a store and logs in ``tmp_path``."""
    return [
        "physassist-eval",
        "model=openai_compatible",
        "model.name=oracle",
        f"model.base_url={url}",
        "inspect.limit=2",
        *extra,
        f"inspect.log_dir={tmp_path / 'logs'}",
        f"tracking.uri={store_uri(tmp_path)}",
        f"hydra.run.dir={tmp_path / 'out'}",
    ]


def _oracle(**faults) -> ScriptedServer:
    return ScriptedServer({"oracle": agent_policy(OracleAgent())}, **faults)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["500 to every call", "killed after 2 calls"])
def test_an_endpoint_that_fails_every_call_after_the_preflight_ends_in_one_line_within_60_s(
    tmp_path, case
) -> None:
    server = (
        _oracle(faults=lambda n, m: "500") if case == "500 to every call" else _oracle(dies_after=2)
    )
    with server:
        url = server.base_url
        run = Running(_eval(tmp_path, url), cwd=tmp_path, env=KEY)
        code = run.finish(timeout=120)
    assert code == EXIT_FAULTS, run.err
    served = [r.started - run.start for r in server.log]
    first_failure = (
        min(r.started - run.start for r in server.log if r.status != 200)
        if case == "500 to every call"
        else max(served)
    )
    assert run.ended - first_failure < 60, (
        run.out
    )  # ~25 s (the command's start-up: 5 s, 20 s on a loaded machine)
    [(_, line)] = run.err
    cause = (
        "HTTP 500 (InternalServerError"
        if case == "500 to every call"
        else "APIConnectionError: Connection error"
    )
    assert line.startswith(
        f"physassist-eval: system faults: model endpoint {url}: every call failed for "
    ), line
    assert cause in line and "none answered" in line, line
    # a call that is retried says so at once (here: within 15 s of the first failure)
    retried = [
        t
        for t, text in run.out
        if text.startswith(f"model endpoint {url}: ") and " retry 1 in " in text
    ]
    assert retried and retried[0] - first_failure <= 15, run.out
    [mlrun] = search_runs(store_uri(tmp_path)).to_dict("records")
    assert mlrun["status"] == "FAILED" and mlrun[f"tags.{FAULT_TAG}"].startswith(
        f"model endpoint {url}: every call failed"
    )
    [log] = list_eval_logs(str(tmp_path / "logs"))
    assert read_eval_log(log, header_only=True).status == "error"  # stopped, never looking finished


@pytest.mark.slow
def test_a_rate_limit_and_a_transient_outage_are_ridden_out_with_the_defaults(tmp_path) -> None:
    """A 429 with ``Retry-After``, then 500 to every call for 8 s (under the breaker's 20 s):
    the calls are retried (the client's quick retries, then Inspect's, with a line), the breaker
    stays shut, and the run finishes with every turn scored."""
    outage: list[float] = []

    def faults(number: int, model: str) -> str | None:
        if number == 1:
            return "429"
        outage[:] = outage or [time.monotonic()]
        return "500" if time.monotonic() - outage[0] < 8 else None

    with _oracle(faults=faults, retry_after="1") as server:
        url = server.base_url
        run = Running(_eval(tmp_path, url), cwd=tmp_path, env=KEY)
        code = run.finish(timeout=150)
    assert code == 0, run.err
    statuses = [r.status for r in server.log]
    assert statuses[:2] == [429, 500] and statuses[-1] == 200, statuses
    retried = [text for _, text in run.out if text.startswith(f"model endpoint {url}: HTTP 500")]
    assert retried and " retry 1 in " in retried[0], run.out
    assert not any("every call failed" in text for _, text in run.out + run.err)
    [mlrun] = search_runs(store_uri(tmp_path)).to_dict("records")
    assert mlrun["status"] == "FINISHED" and mlrun["metrics.unscored_turns"] == 0
    assert mlrun["metrics.n_turns"] == 8  # two sessions of four turns, all scored


@pytest.mark.slow
def test_a_slow_endpoint_shows_progress_within_30_s_with_the_default_interval(tmp_path) -> None:
    """20 s a call: the heartbeat says what the run waits on before any session ends (timed from
    the run's first call: the command's start-up is ~5 s, ~20 s on a machine loaded 5x)."""
    with _oracle(latency=20.0) as server:
        run = Running(_eval(tmp_path, server.base_url), cwd=tmp_path, env=KEY)
        # the line and the call it speaks of (on a loaded machine the client can count a call in
        # flight seconds before the server's handler runs)
        run.until(lambda: bool(server.log) and bool(run.lines("sessions ")), timeout=90)
        run.proc.send_signal(signal.SIGTERM)
        code = run.finish(timeout=150)
        first_call = server.log[0].started - run.start
    [(seconds, line)] = run.lines("sessions ")[:1]
    assert seconds - first_call <= 30, (first_call, run.out)
    assert re.fullmatch(
        r"sessions 0/2  mRS so far -  unscored turns 0  calls in flight [12] \(slowest \d+ s\)",
        line,
    ), line
    assert code == 128 + signal.SIGTERM


def test_progress_lines_come_at_least_every_interval_while_a_call_hangs(tmp_path) -> None:
    """``inspect.progress_s=1`` (the default is 15): a line a second, the slowest call ageing."""
    with _oracle(faults=lambda n, m: "slow", slow_seconds=120) as server:
        run = Running(
            _eval(tmp_path, server.base_url, "inspect.progress_s=1"), cwd=tmp_path, env=KEY
        )
        run.wait_for(lambda out: sum("slowest" in line for _, line in out) >= 4, timeout=90)
        run.proc.send_signal(signal.SIGINT)
        code = run.finish(timeout=120)
    lines = run.lines("sessions ")
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(lines)]
    assert gaps and max(gaps) <= 4, lines  # 1 s, with a loaded machine's slack
    ages = [
        int(match.group(1)) for _, line in lines if (match := re.search(r"slowest (\d+) s", line))
    ]
    assert ages == sorted(ages) and ages[-1] > ages[0], lines
    assert code == 128 + signal.SIGINT
    [mlrun] = search_runs(store_uri(tmp_path)).to_dict("records")
    assert (
        mlrun["status"] == "KILLED"
        and mlrun["tags.physassist.end_reason"] == "interrupted (Ctrl-C)"
    )


def test_the_breaker_needs_failures_over_its_whole_window_and_ignores_a_refused_request() -> None:
    class Refused(Exception):
        status_code = 429

    class Failed(Exception):
        status_code = 503

    assert (
        not _counts(Refused())
        and _counts(Failed())
        and _counts(ConnectionError())
        and _counts(None)
    )
    endpoint = Endpoint("model endpoint http://x/v1")
    for _ in range(
        BREAK_AFTER + 5
    ):  # many failures at once: a burst of parallel calls, not yet down
        endpoint.failed(Failed("busy"))
    start = endpoint.first
    assert not endpoint.breaks(start + BREAK_S - 0.5)
    endpoint.answered()  # an answer starts the count again
    endpoint.failed(Failed("busy"))
    assert not endpoint.breaks(endpoint.first + BREAK_S + 1)  # long enough, too few failures
    for _ in range(BREAK_AFTER - 1):
        endpoint.failed(Failed("down"))
    assert endpoint.breaks(endpoint.first + BREAK_S)
    assert endpoint.down.startswith(
        "model endpoint http://x/v1: every call failed for 20 s (4 attempts, none answered): "
        "HTTP 503"
    )


def test_a_failure_that_quotes_a_secret_is_masked_in_the_retry_line_and_the_breaker(
    monkeypatch,
) -> None:
    """A provider's error may quote a header it was sent (h11's "Illegal header value"): the
    retry lines and the breaker's message (printed, and the run's fault tag) mask it."""
    secret = "sk-header-value-5c1e9a7d"
    monkeypatch.setattr(redaction, "_remembered", {secret})

    class Failed(Exception):
        status_code = 502

    line = cause(Failed(f"Illegal header value b'Bearer {secret}'"))
    assert line == f"HTTP 502 (Failed: Illegal header value b'Bearer {MASK}')"
    endpoint = Endpoint("model endpoint http://x/v1")
    for _ in range(BREAK_AFTER):
        endpoint.failed(Failed(f"Illegal header value b'Bearer {secret}'"))
    assert endpoint.breaks(endpoint.first + BREAK_S) and secret not in str(endpoint.down)
    assert endpoint.down.endswith(line)
