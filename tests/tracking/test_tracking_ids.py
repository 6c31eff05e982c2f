"""Run and sweep ids as the tables print them (8 characters of a run id) are taken by every
command: one resolver (``physassist.tracking.ids``) on a real SQLite MLflow store."""

from __future__ import annotations

import mlflow
import pytest
from fixtures_tracking import store_uri

from physassist.tracking import ids
from physassist.tracking.runs import Tracker


@pytest.fixture
def store(tmp_path):
    tracker = Tracker(store_uri(tmp_path), "physassist")
    job = tracker.create_run(
        "baseline | query=explicit",
        {"physassist.kind": "job", "physassist.sweep_id": "5e1f00aa0001"},
    )
    report = tracker.create_run("report", {"physassist.kind": "report"})
    tracker.create_run(
        "model x query", {"physassist.kind": "sweep", "physassist.sweep_id": "5e1f00aa0001"}
    )
    tracker.create_run(
        "a second sweep", {"physassist.kind": "sweep", "physassist.sweep_id": "5e1f00bb0002"}
    )
    client = mlflow.MlflowClient(tracker.uri)
    return client, [tracker.experiment_id], job, report


def test_a_printed_prefix_resolves_to_the_whole_id(store) -> None:
    client, experiments, job, _ = store
    for typed in (job, job[:8], job[:6], job[:8].upper()):
        match = ids.resolve(client, experiments, typed, ("run",))
        assert (match.kind, match.id, match.name) == ("run", job, "baseline | query=explicit")
    assert ids.resolve(client, experiments, "5e1f00aa", ("sweep",)).id == "5e1f00aa0001"
    assert ids.resolve(client, experiments, "5e1f00aa0001", ("sweep",)).name == "model x query"


def test_too_short_unknown_and_ambiguous_prefixes_are_one_line_naming_the_candidates(store) -> None:
    client, experiments, job, _ = store
    with pytest.raises(
        ids.IdError,
        match=r"^5e1f0: no sweep id is 5e1f0, and a prefix needs at least 6 characters$",
    ):
        ids.resolve(client, experiments, "5e1f0", ("sweep",))
    with pytest.raises(ids.IdError, match=r"^ffffff00: no run id or sweep id starts with it$"):
        ids.resolve(client, experiments, "ffffff00")
    with pytest.raises(ids.IdError) as ambiguous:
        ids.resolve(client, experiments, "5e1f00", ("sweep",))
    message = str(ambiguous.value)
    assert "\n" not in message and message.startswith("5e1f00: 2 ids start with it: ")
    assert (
        "sweep 5e1f00aa0001 (model x query)" in message
        and "sweep 5e1f00bb0002 (a second sweep)" in message
    )


def test_a_run_and_a_sweep_sharing_a_prefix_are_both_named_and_a_filter_keeps_rivals_out(
    store,
) -> None:
    client, experiments, job, report = store
    # a sweep id that starts like the job's run id: both are named
    client.set_tag(report, "physassist.sweep_id", job[:10] + "ab")
    with pytest.raises(ids.IdError, match=f"run {job} .*sweep {job[:10]}ab"):
        ids.resolve(client, experiments, job[:8])
    # a command that takes runs only
    assert ids.resolve(client, experiments, job[:8], ("run",)).id == job
    assert ids.resolve(client, experiments, report[:8], ("run",)).id == report
    # physassist-report takes experiment runs only: a report run is not found
    jobs_only = "tags.`physassist.kind` = 'job'"
    with pytest.raises(ids.IdError, match="no run id starts with it"):
        ids.resolve(client, experiments, report[:8], ("run",), where=jobs_only)
