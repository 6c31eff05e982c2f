"""The in-stay timepoint (issue 40, our extension): sessions on a morning inside the stay carry
their instant as ``cutoff``; the builder's tools, its record check, the raw-table reading and
the evaluation's tools all apply that instant."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import fixtures_builder as fb
import fixtures_record as fr
import pytest

from generation.builder import build_sessions
from generation.builder.timepoint import IN_STAY_HOUR
from physassist.data.models import Session
from physassist.ehr.store import open_store
from physassist.ehr.tools import call_tool
from solvers.context import tool_context


@pytest.fixture(scope="module")
def in_stay(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("in-stay")
    report = build_sessions(
        fb.SAMPLE / "cohort",
        out,
        sessions_per_slot=1,
        seed=3,
        scenarios=["diagnostic_workup", "treatment_response"],
        timepoint="in-stay",
        cache_dir=tmp_path_factory.mktemp("stores"),
    )
    assert report.n_sessions == 6
    return fb.read_entries(out)


def test_in_stay_sessions_are_on_a_morning_inside_the_stay(in_stay) -> None:
    admissions = fr.raw(fb.SAMPLE / "cohort")
    for e in in_stay:
        cutoff = dt.datetime.fromisoformat(e["cutoff"])
        assert (cutoff.hour, cutoff.minute) == (IN_STAY_HOUR, 0) and e["current_date"] == e[
            "cutoff"
        ][:10]
        assert f"Current date: {e['current_date']}. Current time: 08:00." in e["env_info"]
        admit, disch = admissions.execute(
            "SELECT admittime, dischtime FROM admissions WHERE hadm_id = ?", [str(e["hadm_id"])]
        ).fetchone()
        assert admit[:10] < e["current_date"] < disch[:10]
        keys = list(e)
        assert keys[keys.index("current_date") + 1] == "cutoff"
        Session.model_validate(e)


def test_in_stay_sessions_state_only_what_was_known_at_their_instant(in_stay) -> None:
    """The raw tables read at each session's instant find no defect, the gold answers pass
    their own rubric checks, and nothing is stated of the discharge (not yet happened)."""
    assert fr.defects(in_stay, fb.SAMPLE / "cohort") == {k: [] for k in fr.CATEGORIES}
    assert [f for e in in_stay for f in fb.gold_check_failures(e)] == []
    assert [fb.rule_problems(e) for e in in_stay] == [[]] * len(in_stay)
    for e in in_stay:  # the encounter is in progress in every gold observation
        text = json.dumps(e["answer_list"])
        assert '"status": "finished"' not in text


def test_the_evaluation_applies_the_sessions_instant(in_stay, tmp_path: Path) -> None:
    """``tool_context`` gives the tools the session's ``cutoff``: a lab drawn before it and
    reported after it is pending, as in the session's gold observations."""
    store = open_store(fb.SAMPLE / "cohort", cache_dir=tmp_path)
    e = in_stay[0]
    session = Session.model_validate(e)
    ctx = tool_context(session, store, semantics="strict")
    assert ctx.effective_cutoff() == dt.datetime.fromisoformat(e["cutoff"])
    args = {"subject_id": e["subject_id"], "hadm_id": e["hadm_id"], "_count": 200}
    labs = call_tool(ctx, "Observation.search", args)["entry"]
    times = [r["resource"]["effectiveDateTime"] for r in labs]
    assert times and max(times) <= e["cutoff"]
    day_end = tool_context(Session.model_validate({**e, "cutoff": None}), store, semantics="strict")
    assert day_end.effective_cutoff() == dt.datetime.combine(
        dt.date.fromisoformat(e["current_date"]), dt.time.max
    )


def test_a_cutoff_off_the_sessions_date_is_refused() -> None:
    e = fb.read_entries(fb.SAMPLE / "sessions")[0]
    next_day = dt.date.fromisoformat(e["current_date"]) + dt.timedelta(days=1)
    with pytest.raises(ValueError, match="cutoff"):
        Session.model_validate({**e, "cutoff": f"{next_day}T08:00:00"})
    with pytest.raises(ValueError, match="cutoff"):
        Session.model_validate({**e, "cutoff": "tomorrow morning"})
