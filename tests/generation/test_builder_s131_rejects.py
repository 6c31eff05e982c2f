"""The four turns a blind physician rejected in the second seed-131 demo build (issue 40), on
hand-written records: a haemoglobin trend starting from an intra-operative draw on bypass; an
outpatient INR recheck on rivaroxaban; an antibiotic response judged "unclear" from a wobble of
normal neutrophil percentages; a "micro so far" that left out a positive C. difficile PCR."""

from __future__ import annotations

import datetime as dt

import fixtures_builder as fb

from generation.builder.gold import answer
from generation.builder.interpret import Context
from generation.builder.profile import Profile
from physassist.timeline import LabPoint

HB = [{"itemid": 51222, "label": "Hemoglobin", "fluid": "Blood", "category": "Hematology"}]
#: 10013049 / 22675517: elective cardiac surgery admitted 10:15; the 09:59 CBC is on bypass.
SURGERY = {**fb.ADMISSION, "admittime": "2150-03-01 10:15:00"}
ON_BYPASS = dt.datetime(2150, 3, 1, 9, 59)


def _hb(admission: dict, first: float = 10.3) -> frozenset[dt.datetime]:
    rows = fb.labevents(
        (51222, "2150-03-01 09:59:00", first, 13.7, 17.5),
        (51222, "2150-03-01 11:09:00", 13.0, 13.7, 17.5),
        (51222, "2150-03-02 02:25:00", 13.1, 13.7, 17.5),
        (51222, "2150-03-03 06:25:00", 12.7, 13.7, 17.5),
    )
    record = {"admissions": [admission], "d_labitems": HB, "labevents": rows}
    return fb.timeline_of(record).lab("Hemoglobin").suspect


def test_an_intraoperative_draw_before_a_direct_admission_starts_no_trend() -> None:
    """The on-bypass 10.3 is suspect (never a trend's start or nadir); an ED patient's draw
    before admission, or a pre-admission value within the stay's own range, is the patient's."""
    assert _hb(SURGERY) == {ON_BYPASS}
    assert _hb({**SURGERY, "edregtime": "2150-03-01 06:00:00"}) == frozenset()
    assert _hb(SURGERY, first=12.9) == frozenset()


def test_an_inr_is_rechecked_only_on_a_vitamin_k_antagonist_or_in_liver_failure() -> None:
    """An INR of 1.3 on rivaroxaban monitors nothing: no recheck; on warfarin, after it, or
    with cirrhosis coded, it is followed."""
    from generation.builder.followup import relevant

    items = [{"itemid": 51237, "label": "INR(PT)", "fluid": "Blood", "category": "Hematology"}]
    rows = fb.labevents((51237, "2150-03-06 06:00:00", 1.3, 0.9, 1.1))
    tl = fb.timeline_of({"admissions": [fb.ADMISSION], "d_labitems": items, "labevents": rows})
    prof = Profile(1, 2, "2150-03-06", "M", 70, timeline=tl)
    assert not relevant(prof, "INR(PT)")
    for ctx in (Context(on_warfarin=True), Context(off_warfarin=True), Context(liver_failure=True)):
        prof.context = ctx
        assert relevant(prof, "INR(PT)"), ctx


def test_a_marker_back_in_range_is_a_response_not_a_turn() -> None:
    """Neutrophils 82 % before azithromycin, 76.2, then 63.3 -> 68.7 % (ref 50-70): the rise is
    inside the normal range, so the course did not turn; 82 -> 72 -> 78 (still high) did."""
    from generation.builder.response import turned
    from generation.builder.trends import normalised
    from generation.builder.vocab import TRENDS

    def pts(*values: float) -> list[LabPoint]:
        start = dt.datetime(2150, 3, 1, 6)
        return [
            LabPoint(start + dt.timedelta(days=i), v, "%", 50.0, 70.0, 51256)
            for i, v in enumerate(values)
        ]

    rule = TRENDS["Neutrophils"]
    back = pts(82, 76.2, 63.3, 68.7)
    assert normalised(back[0], back[-1])
    assert not turned(back, back[0], back[-1], "falling", True, rule)
    still = pts(82, 76.2, 72.0, 78.0)
    assert not normalised(still[0], still[-1])
    assert turned(still, still[0], still[-1], "falling", True, rule)


CDIFF = {
    "microevent_id": 1,
    "subject_id": 1,
    "hadm_id": 2,
    "micro_specimen_id": 1,
    "chartdate": "2150-03-02",
    "charttime": "2150-03-02 21:29:00",
    "spec_itemid": 70064,
    "spec_type_desc": "STOOL",
    "test_seq": 1,
    "storedate": "2150-03-03",
    "storetime": "2150-03-03 12:41:00",
    "test_itemid": 90221,
    "test_name": "C. difficile PCR",
    "org_itemid": 80139,
    "org_name": "CLOSTRIDIUM DIFFICILE",
    "isolate_num": 1,
    "quantity": None,
    "ab_itemid": None,
    "ab_name": None,
    "dilution_text": None,
    "interpretation": None,
    "comments": None,
}
BLOOD = {
    **CDIFF,
    "microevent_id": 2,
    "micro_specimen_id": 2,
    "charttime": "2150-03-03 05:48:00",
    "chartdate": "2150-03-03",
    "spec_itemid": 70012,
    "spec_type_desc": "BLOOD CULTURE",
    "storedate": "2150-03-05",
    "storetime": "2150-03-05 08:11:00",
    "test_itemid": 90201,
    "test_name": "Blood Culture, Routine",
    "org_itemid": None,
    "org_name": None,
    "isolate_num": None,
    "comments": "NO GROWTH.",
}


def test_a_micro_answer_lists_a_positive_pcr_as_the_test_it_is() -> None:
    """The stool C. difficile PCR positive beside the negative blood culture, named as a PCR
    that is positive, never as a culture that grew something."""
    d = fb.culture_digest([CDIFF, BLOOD])
    en = answer(d, "en")
    line = next(x for x in en.splitlines() if "STOOL" in x)
    assert "C. difficile PCR positive (CLOSTRIDIUM DIFFICILE)" in line and "grew" not in line
    assert "BLOOD CULTURE" in en and "阳性" in answer(d, "zh")


def test_a_surveillance_screen_isolate_is_colonisation_and_a_dose_has_its_frequency() -> None:
    """A rectal VRE swab's Enterococcus is colonisation, not an infecting organism; a
    medication look-up states how often the drug is given (ciprofloxacin 500 mg PO/NG Q12H)."""
    from generation.builder.answers import MedFact, _isolate, _med_vars
    from generation.builder.facts import MicroResult
    from generation.builder.wording import say

    def isolate(kind: str) -> str:
        t = MicroResult(
            "R/O VANCOMYCIN RESISTANT ENTEROCOCCUS",
            kind,
            "final",
            "ENTEROCOCCUS SP.",
            "ENTEROCOCCUS SP.",
            (),
            ("VRE",),
            (("VANCOMYCIN", "R"),),
        )
        return _isolate(t, "en")

    assert "colonisation, not infection" in isolate("screen")
    assert "colonisation" not in isolate("culture")
    m = MedFact("ciprofloxacin", "Ciprofloxacin HCl", 500, "mg", "PO/NG", "2110-12-07", (), "Q12H")
    assert say("en", "answers.med_line", **_med_vars(m)) == (
        "Ciprofloxacin HCl: 500 mg PO/NG Q12H, started 2110-12-07"
    )
    from generation.builder.answers import spoken_frequency

    assert spoken_frequency("DAILY16") == "DAILY" and spoken_frequency("Q 12H") == "Q 12H"
