"""``physassist-generate`` with a model behind a real server on 127.0.0.1, the command of issue 45
with the DEFAULT bounds (the eval's ``inspect`` group): a slow server, one that never answers,
one that fails every call after the pre-flight, one whose replies are never the JSON asked for.

Measured before: against a local model server nothing was printed for 540 s (no output budget,
no time limit), SIGTERM left the Inspect log ``started`` and no MLflow run at all. Now the
generation prints progress (slots, sessions, rejections, calls in flight) at least every
``inspect.progress_s`` seconds off a terminal, a signal ends it KILLED with nothing written, an
endpoint that fails every call ends it in one line (exit 4), and malformed replies are counted
rejections with their reasons.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
from pathlib import Path

import pytest
from fixtures_http import MALFORMED, ScriptedServer, generator_policy, malformed_policy
from fixtures_running import Running
from fixtures_tracking import search_runs, store_uri
from inspect_ai.log import list_eval_logs, read_eval_log

from physassist.faults import EXIT_FAULTS

KEY = {"OPENAI_COMPATIBLE_API_KEY": "EMPTY"}


def _generate(tmp_path: Path, url: str, *extra: str) -> list[str]:
    """Issue 45's command (the served model is ``scripted``), its records in ``tmp_path``."""
    return [
        "physassist-generate",
        "generator.name=scripted",
        "generator.provider=openai-api/compatible",
        f"generator.base_url={url}",
        "generator.api_key_env=OPENAI_COMPATIBLE_API_KEY",
        "scenarios=[med_safety]",
        "tiers=[1]",
        "sessions_per_slot=1",
        "attempts=1",
        "patient_limit=1",
        f"output_dir={tmp_path / 'generated'}",
        *extra,
        f"inspect.log_dir={tmp_path / 'logs'}",
        f"tracking.uri={store_uri(tmp_path)}",
        f"hydra.run.dir={tmp_path / 'out'}",
    ]


def _run(tmp_path: Path) -> dict:
    [run] = search_runs(store_uri(tmp_path), experiment="physassist-generate").to_dict("records")
    return run


def _ended_by(signum: int, run: Running, code: int, tmp_path: Path) -> None:
    """Exit 128 + n, one line, nothing written, the run KILLED with its reason, the log cancelled."""
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    assert code == 128 + signum, run.err
    [(_, line)] = run.err
    assert line.startswith(f"physassist-generate: interrupted ({name}); nothing written"), line
    assert not (tmp_path / "generated").exists()
    mlrun = _run(tmp_path)
    assert (
        mlrun["status"] == "KILLED"
        and mlrun["tags.physassist.end_reason"] == f"interrupted ({name})"
    )
    [log] = list_eval_logs(str(tmp_path / "logs"))
    assert read_eval_log(log, header_only=True).status == "cancelled"


@pytest.mark.slow
def test_the_issue_command_against_a_slow_server_ends_killed_by_sigterm_at_20_s(tmp_path) -> None:
    """60 s an answer: the run is claimed RUNNING before the eval, so a SIGTERM at 20 s ends it
    KILLED (measured before: no run, the log left ``started``)."""
    with ScriptedServer({"scripted": generator_policy}, latency=60.0) as server:
        run = Running(_generate(tmp_path, server.base_url), cwd=tmp_path, env=KEY)
        run.until(
            lambda: len(server.log) > 0, timeout=90
        )  # the first call (later than 20 s on a loaded machine)
        run.signal_at(signal.SIGTERM, 20)
        code = run.finish(timeout=150)
    _ended_by(signal.SIGTERM, run, code, tmp_path)


def test_progress_lines_come_at_least_every_interval_while_a_call_never_ends(tmp_path) -> None:
    """A server that lists its models and never answers a call: with ``inspect.progress_s=2``
    (default 15) a line every 2 s names the call in flight and its age; SIGHUP ends the run."""
    with ScriptedServer(
        {"scripted": generator_policy}, faults=lambda n, m: "slow", slow_seconds=600
    ) as server:
        run = Running(
            _generate(tmp_path, server.base_url, "inspect.progress_s=2"), cwd=tmp_path, env=KEY
        )
        run.wait_for(lambda out: sum("slowest" in line for _, line in out) >= 3, timeout=90)
        run.proc.send_signal(signal.SIGHUP)
        code = run.finish(timeout=120)
    lines = run.lines("slots ")
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(lines)]
    assert gaps and max(gaps) <= 5, lines  # 2 s, with a loaded machine's slack
    slow = [line for _, line in lines if "slowest" in line]
    assert all(
        re.fullmatch(
            r"slots 0/1  sessions 0  rejected none  calls in flight 1 \(slowest \d+ s\)", x
        )
        for x in slow
    ), slow
    ages = [int(re.search(r"slowest (\d+) s", x).group(1)) for x in slow]
    assert ages == sorted(ages) and ages[-1] >= ages[0] + 2, slow
    _ended_by(signal.SIGHUP, run, code, tmp_path)


@pytest.mark.slow
def test_an_endpoint_that_fails_every_call_after_the_preflight_ends_in_one_line_within_60_s(
    tmp_path,
) -> None:
    with ScriptedServer({"scripted": generator_policy}, faults=lambda n, m: "500") as server:
        url = server.base_url
        run = Running(_generate(tmp_path, url), cwd=tmp_path, env=KEY)
        code = run.finish(timeout=150)
        first_failure = server.log[0].started - run.start
    assert code == EXIT_FAULTS, run.err
    assert run.ended - first_failure < 60, run.out
    [(_, line)] = run.err
    assert line.startswith(
        f"physassist-generate: fault: generator endpoint {url}: every call failed for "
    ), line
    assert "HTTP 500" in line and line.endswith(
        "nothing written (Inspect log: " + line.rsplit("Inspect log: ", 1)[1]
    )
    assert any(text.startswith(f"generator endpoint {url}: HTTP 500") for _, text in run.out), (
        run.out
    )
    assert not (tmp_path / "generated").exists()
    mlrun = _run(tmp_path)
    assert mlrun["status"] == "FAILED" and mlrun["tags.physassist.end_reason"].startswith(
        "EndpointDown: generator endpoint"
    )


def test_replies_that_are_not_the_json_asked_for_are_counted_rejections_never_a_session(
    tmp_path,
) -> None:
    """Prose, a refusal, an empty reply and a reply cut at the output budget, one per planner
    try (``attempts=4``): four rejections with their reasons, no crash, no session."""
    with ScriptedServer({"scripted": malformed_policy()}) as server:
        run = Running(_generate(tmp_path, server.base_url, "attempts=4"), cwd=tmp_path, env=KEY)
        code = run.finish(timeout=150)
    assert code == 0, run.err
    assert any(
        line == "sessions: 0 of 1 slots (1 skipped, of which 0 errored; 1 patients tried)"
        for _, line in run.out
    ), run.out
    assert [r.status for r in server.log] == [200] * len(MALFORMED)
    manifest = json.loads((tmp_path / "generated" / "manifest.json").read_text())
    assert manifest["sessions"] == 0 and manifest["stage_failures"] == {"planner": 4}
    [log] = list_eval_logs(str(tmp_path / "logs"))
    [sample] = read_eval_log(log).samples
    reasons = " | ".join(next(iter(sample.scores.values())).metadata["stats"]["reasons"])
    for reason in (
        "reply is not JSON",
        "the model refused",
        "empty reply",
        "reply cut at the output budget (1024 tokens)",
    ):
        assert reason in reasons, reasons
    assert _run(tmp_path)["metrics.stage_failures.planner"] == 4
