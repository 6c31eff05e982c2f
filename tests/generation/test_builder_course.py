"""Treatment-response sessions and trend labels a physician would sign (issue 40, second
blind review): a course that ended before the session is not asked as "X is being given";
a latest value days old is not "now"; an antibiotic is reviewed against cultures only where
one was sent; a plateau, a bump coming back and a recent turn are not read from two points.
Hand-written records and series."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

import fixtures_builder as fb

from generation.builder.answers import Digest, LabFact, trend_word
from generation.builder.gold import rubric
from generation.builder.kinds import Topic
from generation.builder.profile import LabSummary, Profile
from generation.builder.questions import make_question
from generation.builder.response import answer_response
from generation.builder.rubrics import trend_terms
from generation.builder.topics import pools, required
from generation.builder.trends import judge_trend
from generation.builder.vocab import SYNONYMS, TRENDS

POTASSIUM = {"itemid": 50971, "label": "Potassium", "fluid": "Blood", "category": "Chemistry"}


def _emar(*times: str, drug: str = "Potassium Chloride") -> list[dict]:
    return [
        {
            "subject_id": 1,
            "hadm_id": 2,
            "emar_id": f"e{i}",
            "medication": drug,
            "charttime": t,
            "event_txt": "Administered",
        }
        for i, t in enumerate(times)
    ]


def _profile(emar: list[dict], labs: list[dict], orders: list[dict] | None = None) -> Profile:
    tl = fb.timeline_of(
        {
            "admissions": [fb.ADMISSION],
            "d_labitems": [POTASSIUM],
            "labevents": labs,
            "emar": emar,
            "prescriptions": orders or [],
        }
    )
    return Profile(
        1,
        2,
        "2150-03-06",
        "F",
        70,
        timeline=tl,
        labs={"Potassium": LabSummary("Potassium", len(labs), True)},
    )


_LOW_THEN_REPLETED = fb.labevents(
    (50971, "2150-03-03 06:00:00", 3.1, 3.5, 5.1), (50971, "2150-03-04 06:00:00", 4.0, 3.5, 5.1)
)


def _asked(prof: Profile) -> list[tuple[str, bool]]:
    return [(t.label(), t.done) for t in required("treatment_response", prof)]


def test_a_course_stopped_before_the_session_is_asked_as_finished() -> None:
    """Potassium chloride given on 03-03 only, the session at discharge on 03-06: "is the
    potassium chloride working?" with "it is being given" is false (the issue's phenylephrine
    stopped 5 days before), so it is asked as a finished course; given through 03-05 it runs."""
    label = "treatment_effect(Potassium, potassium chloride)"
    stopped = _profile(_emar("2150-03-03 10:00:00", "2150-03-03 14:00:00"), _LOW_THEN_REPLETED)
    assert _asked(stopped) == [(label, True)]
    running = _profile(
        _emar("2150-03-03 10:00:00", "2150-03-03 14:00:00", "2150-03-05 20:00:00"),
        [*_LOW_THEN_REPLETED, *fb.labevents((50971, "2150-03-06 06:00:00", 4.1, 3.5, 5.1))],
    )
    assert _asked(running) == [(label, False)]


def test_an_order_stopped_the_day_before_is_not_running() -> None:
    """The issue's cefepime: doses through the day before discharge, its order stopped then
    (stepped down to another drug): a finished course at the session."""
    order = {
        "subject_id": 1,
        "hadm_id": 2,
        "pharmacy_id": 1,
        "poe_id": "p1",
        "drug": "Potassium Chloride",
        "dose_val_rx": "20",
        "dose_unit_rx": "mEq",
        "route": "PO",
        "starttime": "2150-03-03 09:00:00",
        "stoptime": "2150-03-05 10:00:00",
    }
    emar = _emar("2150-03-03 10:00:00", "2150-03-04 10:00:00", "2150-03-05 09:00:00")
    labs = [*_LOW_THEN_REPLETED, *fb.labevents((50971, "2150-03-05 06:00:00", 4.1, 3.5, 5.1))]
    assert _asked(_profile(emar, labs, [order]))[0][1] is True
    assert _asked(_profile(emar, labs, [{**order, "stoptime": None}]))[0][1] is False


def test_a_finished_course_is_asked_and_answered_as_one() -> None:
    topic = Topic("abx_response", lab="White Blood Cells", drug="cefepime", name="cefepime")
    q = make_question(replace(topic, done=True), None, 0, "F", set())
    assert "course" in q.explicit_en and "working" not in q.explicit_en
    wbc = dict(low=4.0, high=10.0)
    d = Digest(
        topic=replace(topic, done=True),
        series=[
            LabFact("White Blood Cells", 41.1, "K/uL", "high", "2150-03-02 06:00", "", "", **wbc),
            LabFact("White Blood Cells", 9.5, "K/uL", "normal", "2150-03-04 06:00", "", "", **wbc),
        ],
        trend="falling",
        trend_size="clear",
        verdict="responding",
        admin_first="2150-03-02 08:00",
        admin_last="2150-03-04 09:44",
        dated=True,
    )
    text = answer_response(d, "en")
    assert "from 2150-03-02 08:00 to 2150-03-04 09:44" in text and "ended" in text
    assert "continue" not in text and " now " not in text
    items = [i.en for i in rubric(d)]
    assert not any("being given" in i or "continuing" in i for i in items)


@dataclass(frozen=True)
class P:
    value: float
    time: dt.datetime
    low: float | None = None
    high: float | None = None


def _judge(lab: str, *values: float, low: float | None = None, high: float | None = None):
    start = dt.datetime(2150, 3, 1)
    pts = [P(v, start + dt.timedelta(hours=24 * i), low, high) for i, v in enumerate(values)]
    t = judge_trend(pts, TRENDS[lab])
    return t.direction, t.size, t.ref.value, t.anchor, t.shape


def test_trend_shapes_the_reviewers_read() -> None:
    # Hgb 9.6 -> 8.1 -> 4 units -> 10.1 -> 9.5 -> 9.6: a plateau after transfusion (was rising)
    assert _judge("Hemoglobin", 9.6, 8.1, 10.1, 9.5, 9.6)[4] == "plateau"
    # nadir 9.3 after a unit, then 11.3 12.6 13.1 11.6 11.4 12.1: recovered and stable
    assert _judge("Hemoglobin", 10.5, 9.3, 11.3, 12.6, 13.1, 11.6, 11.4, 12.1)[4] == "plateau"
    # still climbing after the nadir is rising, not a plateau
    assert _judge("Hemoglobin", 10, 7, 8, 9, 9.3, 9.6, 9.9) == ("rising", "clear", 7, "nadir", "")
    # Cr 1.4 ... 1.5 on POD2 ... 1.3: a bump coming back, slightly falling from it (was stable)
    assert _judge("Creatinine", 1.4, 1.2, 1.2, 1.3, 1.4, 1.5, 1.4, 1.3, high=1.2) == (
        "falling",
        "slight",
        1.5,
        "peak",
        "",
    )
    # WBC 15.0 -> 11.3 -> 11.4 -> 12.7: falling end to end, rising over the last 2 days
    assert _judge("White Blood Cells", 15.0, 13.0, 11.3, 11.4, 12.7) == (
        "falling",
        "slight",
        15.0,
        "first",
        "turned",
    )
    assert _judge("White Blood Cells", 15.0, 13.0, 11.3, 11.0, 10.4)[4] == ""


def _fact(value: float, day: str, low: float = 12.0, high: float = 16.0) -> LabFact:
    status = "low" if value < low else "high" if value > high else "normal"
    return LabFact("Hemoglobin", value, "g/dL", status, f"{day} 06:00", day, "", low, high)


def _words(d: Digest) -> set[str]:
    return {w.lower() for w in trend_terms(d)["en"]}


def test_the_rubric_accepts_what_a_physician_says_of_the_shape() -> None:
    topic = Topic("lab_trend", lab="Hemoglobin")
    base = {"topic": topic, "series": [_fact(8.1, "2150-03-02"), _fact(9.6, "2150-03-05")]}
    plateau = Digest(**base, trend="rising", trend_size="slight", anchor="nadir", shape="plateau")
    assert {"stable", "plateau", "levelled off"} <= _words(plateau)
    assert not _words(plateau) & set(SYNONYMS["rising"]["en"])
    assert "levelled off" in trend_word(plateau, "en")
    turned = Digest(**base, trend="rising", trend_size="slight", shape="turned")
    assert {"rising", "falling", "stable"} <= _words(turned)
    plateau.course = "abnormal_stable"
    assert not any(i.check["kind"] == "forbidden" for i in rubric(plateau))
    high = dict(low=0.5, high=1.2)
    bump = Digest(
        topic=Topic("lab_trend", lab="Creatinine"),
        series=[
            LabFact(
                "Creatinine", 1.5, "mg/dL", "high", "2150-03-03 06:00", "2150-03-03", "", **high
            ),
            LabFact(
                "Creatinine", 1.3, "mg/dL", "high", "2150-03-05 06:00", "2150-03-05", "", **high
            ),
        ],
        trend="falling",
        trend_size="slight",
        anchor="peak",
    )
    assert {"falling", "stable", "improving"} <= _words(bump)


def test_a_response_answer_dates_an_old_value_and_cultures_only_when_sent() -> None:
    wbc = dict(low=4.0, high=10.0)
    d = Digest(
        topic=Topic("abx_response", lab="White Blood Cells", drug="cefepime", name="cefepime"),
        series=[
            LabFact("White Blood Cells", 16.5, "K/uL", "high", "2150-03-02 06:00", "", "", **wbc),
            LabFact("White Blood Cells", 9.5, "K/uL", "normal", "2150-03-03 06:00", "", "", **wbc),
        ],
        trend="falling",
        trend_size="clear",
        verdict="responding",
        admin_first="2150-03-02 08:00",
    )
    assert " now " in answer_response(d, "en") and "culture results" in answer_response(d, "en")
    d.dated, d.cultured = True, False
    text = answer_response(d, "en")
    assert " now " not in text and "2150-03-03 06:00" in text
    assert "culture" not in text and "continue cefepime" in text


def test_a_neutrophil_percentage_is_not_graded_when_the_count_is_normal() -> None:
    """The review's CLL patient: neutrophils 32 % (ref 34-71) of a WBC of 8.2 is an absolute
    count of 2.6, normal; no question grades the percentage "low". Of a WBC of 3.0 (0.96) it
    is neutropenia and may be asked."""
    items = [
        {"itemid": 51256, "label": "Neutrophils", "fluid": "Blood", "category": "Hematology"},
        {"itemid": 51301, "label": "White Blood Cells", "fluid": "Blood", "category": "Hematology"},
    ]

    def labs_of(wbc: float) -> list[str]:
        rows = fb.labevents(
            (51256, "2150-03-05 06:00:00", 32.0, 34.0, 71.0),
            (51301, "2150-03-05 06:00:00", wbc, 4.0, 10.0),
        )
        tl = fb.timeline_of({"admissions": [fb.ADMISSION], "d_labitems": items, "labevents": rows})
        summary = {i["label"]: LabSummary(i["label"], 1, True) for i in items}
        prof = Profile(1, 2, "2150-03-06", "F", 70, timeline=tl, labs=summary)
        return pools("diagnostic_workup", prof).labs

    assert "Neutrophils" not in labs_of(8.2) and "White Blood Cells" in labs_of(8.2)
    assert "Neutrophils" in labs_of(3.0)
