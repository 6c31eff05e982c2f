"""strict ``Observation.search``: laboratory (exact -> synonym -> fuzzy labels, true totals),
vital signs (ICU chartevents honouring admission and dates, OMR fallback) and microbiology
Observations from ``microbiologyevents``; everything bounded by the session cutoff.

Labs and microbiology follow ``reported``: a result is shown once reported (a specimen drawn
by the cutoff and reported after it is a ``registered`` Observation without a value: pending),
and an admission's specimens include those without ``hadm_id`` drawn in its window, each
saying where it came from. Microbiology is read as ``microbiology`` reads it: one Observation
per test and isolate, its antibiotics with S/I/R, the test's kind, flags and resistances.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from . import fhir
from .chart import Chart, Where, Window
from .labels import LabelMatch, match_label
from .microbiology import (
    FLAG_NOTES,
    KIND_NAMES,
    RESISTANCE_NAMES,
    Isolate,
    MicroTest,
    Specimen,
    specimens,
)
from .records import by, contains, joined, order, stamp, text
from .registry import read_tool
from .reported import (
    LAB_DRAWN,
    MICRO_DRAWN,
    ORIGIN_NOTE,
    Stay,
    known,
    owner,
)
from .schemas import DEFAULT_COUNT
from .strict_common import (
    STAYS_READ,
    admission_miss,
    bundle,
    interpretation,
    miss_hint,
    quantity,
    stay_of,
)

#: The microbiology columns ``micro_rows``' callers read (here and ``DiagnosticReport.search``).
MICRO_COLUMNS = ("hadm_id", "micro_specimen_id", "chartdate", "charttime", "spec_type_desc", "test_seq",
                 "storedate", "storetime", "test_itemid", "test_name", "org_name", "isolate_num",
                 "ab_name",
                 "dilution_text", "interpretation", "comments")  # fmt: skip
#: What a pending result says.
PENDING_NOTE = "result pending: not reported yet"


@read_tool(reads={
        "admissions": STAYS_READ["admissions"],
        "labevents": ("labevent_id", "hadm_id", "itemid", "charttime", "storetime", "value", "valuenum",
                      "valueuom", "ref_range_lower", "ref_range_upper", "flag", "comments"),
        "chartevents": ("hadm_id", "stay_id", "itemid", "charttime", "value", "valuenum", "valueuom"),
        "icustays": ("hadm_id", "stay_id"),
        "omr": ("chartdate", "seq_num", "result_name", "result_value"),
        "microbiologyevents": MICRO_COLUMNS,
    },
)  # fmt: skip
def observation_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(chart.cutoff, args, "Observation.search")
    if (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    count = args.get("_count", DEFAULT_COUNT)
    category = args.get("category") or "laboratory"
    if category == "vital-signs":
        return _vitals(chart, sid, hadm, args.get("code"), window, count)
    if category == "microbiology":
        return _micro_observations(chart, sid, hadm, args.get("code"), window, count)
    return _labs(chart, sid, hadm, args.get("code"), window, count)


def _labs(
    chart: Chart, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    items = chart.lookup("d_labitems", "itemid")
    itemids = None
    if code is not None:  # match on the chart's distinct items up to the window's end
        ids = chart.distinct("labevents", sid, "itemid", Where().within(window, "charttime", False))
        label_of = {i: joined(items, i, "label") for i in ids}
        match = match_label(code, label_of.values())
        if not match.matched:
            return bundle([], 0, miss_hint("laboratory test", code, match))
        chosen = set(match.labels)
        itemids = [i for i, label in label_of.items() if label in chosen]
        fluids = {joined(items, i, "fluid") for i in itemids}
        if (
            len(fluids) > 1
            and "Blood" in fluids
            and not any(f and f.lower() in code.lower() for f in fluids - {"Blood"})
        ):  # "Creatinine" means serum
            itemids = [i for i in itemids if joined(items, i, "fluid") == "Blood"]
    stays = chart.stays(sid)
    reported = chart.report_time("labevents")[1]
    where = (
        Where()
        .within(window, "charttime")
        .among("itemid", itemids)
        .stay(hadm, stay_of(stays, hadm), LAB_DRAWN, "charttime")
    )
    total, rows = chart.newest("labevents", sid, where, "charttime", ("labevent_id",), count)
    found = [{**r, "label": joined(items, r["itemid"], "label")} for r in rows]
    out = []
    for r in found:
        label = r["label"] or str(r["itemid"])
        stay, origin = owner(stays, r["hadm_id"], stamp(r["charttime"]))
        head = {
            **fhir.observation(
                f"lab-{r['labevent_id']}",
                sid,
                "laboratory",
                fhir.named_concept("mimic-iv/itemid", str(r["itemid"]), label),
            ),
            "encounter": fhir.encounter_ref(stay),
            "effectiveDateTime": fhir.fhir_datetime(text(r["charttime"])),
        }
        notes = [ORIGIN_NOTE[origin]] if origin else []
        if not known(reported(r), window.cutoff):
            out.append({**head, "status": "registered", "note": _notes(PENDING_NOTE, *notes)})
            continue
        value = fhir.as_number(r["valuenum"])
        low, high = fhir.as_number(r["ref_range_lower"]), fhir.as_number(r["ref_range_upper"])
        unit = r["valueuom"]
        comment = str(r["comments"] or "").strip()
        out.append(
            {
                **head,
                "valueQuantity": quantity(value, unit),
                "valueString": None
                if value is not None
                else (r["value"] if r["value"] not in (None, "") else None),
                "interpretation": interpretation(value, low, high, r["flag"]),
                "referenceRange": [{"low": quantity(low, unit), "high": quantity(high, unit)}]
                if low is not None or high is not None
                else None,
                "note": _notes(comment if comment != "___" else "", *notes),
            }
        )
    return bundle(out, total)


def _notes(*texts: str) -> list[dict[str, str]] | None:
    """An Observation's ``note``: one annotation per non-empty text, None without any."""
    return [{"text": t} for t in texts if t] or None


def _vitals(
    chart: Chart, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    items = chart.lookup("d_items", "itemid")
    ids = chart.distinct("chartevents", sid, "itemid", Where().within(window, "charttime", False))
    label_of = {i: joined(items, i, "label") for i in ids}
    omr = [
        r for r in chart.subject_rows("omr", sid) if window.keeps(r["chartdate"], use_start=False)
    ]
    if hadm is not None:  # OMR has no admission: keep the admission's days
        stay = next(a for a in chart.subject_rows("admissions", sid) if a["hadm_id"] == hadm)
        first, last = (stamp(stay[k]) for k in ("admittime", "dischtime"))
        omr = [
            r
            for r in omr
            if first is not None
            and last is not None
            and r["chartdate"] is not None
            and first.date() <= r["chartdate"] <= last.date()
        ]
    use_omr = False
    itemids = None
    if code is not None:  # match on the distinct items, then fetch only their rows
        match = match_label(code, label_of.values())
        if match.matched:
            chosen = set(match.labels)
            itemids = [i for i, label in label_of.items() if label in chosen]
        else:
            omr_match = match_label(code, (r["result_name"] for r in omr))
            if not omr_match.matched:
                merged = LabelMatch(
                    (), "none", tuple(dict.fromkeys(match.closest + omr_match.closest))[:6]
                )
                return bundle([], 0, miss_hint("vital sign", code, merged))
            use_omr = True
            chosen = set(omr_match.labels)
            omr = [r for r in omr if r["result_name"] in chosen]
    elif not any(label_of.values()):
        use_omr = True
    if use_omr:
        return _omr(sid, omr, window, count)
    where = Where().within(window, "charttime").among("itemid", itemids)
    if hadm is not None:  # the admission's rows, or its ICU stays'
        stays = [s["stay_id"] for s in chart.subject_rows("icustays", sid) if s["hadm_id"] == hadm]
        term, in_stays = f"(hadm_id = ? OR {Where.IN.format('stay_id', 'BIGINT')})", set(stays)
        where.add(term, lambda r: r["hadm_id"] == hadm or r["stay_id"] in in_stays, hadm, stays)
    total, rows = chart.newest("chartevents", sid, where, "charttime", ("itemid",), count)
    found = [  # labelled once chosen: a big chart has hundreds of thousands of rows
        {
            **r,
            "label": joined(items, r["itemid"], "label"),
            "unitname": joined(items, r["itemid"], "unitname"),
        }
        for r in rows
    ]
    out = []
    for r in found:
        value = fhir.as_number(r["valuenum"])
        label = r["label"] or str(r["itemid"])
        when = text(r["charttime"])
        digits = re.sub(r"\D", "", str(when))[:14]
        out.append(
            {
                **fhir.observation(
                    fhir.safe_id(f"vital-{r['stay_id']}-{r['itemid']}-{digits}"),
                    sid,
                    "vital-signs",
                    fhir.named_concept("mimic-iv/icu-itemid", str(r["itemid"]), label),
                ),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(when),
                "valueQuantity": quantity(value, r["valueuom"] or r["unitname"]),
                "valueString": None if value is not None else r["value"],
            }
        )
    return bundle(out, total)


def _omr(sid: int, omr: list[dict[str, Any]], window: Window, count: int) -> dict[str, Any]:
    omr = [r for r in omr if window.keeps(r["chartdate"])]
    found = order(omr, by("chartdate", desc=True), by("seq_num"), by("result_name"))[:count]
    out = []
    for r in found:
        name = str(r["result_name"])
        when = text(r["chartdate"])
        value = fhir.as_number(r["result_value"])
        unit = re.search(r"\(([^)]+)\)", name)
        out.append(
            {
                **fhir.observation(
                    fhir.stable_id("omr", sid, when, r["seq_num"], name),
                    sid,
                    "vital-signs",
                    fhir.named_concept("mimic-iv/omr", name, name),
                ),
                "effectiveDateTime": str(when)[:10],
                "valueQuantity": quantity(value, unit.group(1) if unit else None),
                "valueString": None if value is not None else r["result_value"],
            }
        )
    return bundle(out, len(omr))


#: The columns a microbiology ``code`` is looked for in (an organism only once reported).
_MICRO_TEXT = ("spec_type_desc", "test_name")


def micro_where(
    chart: Chart,
    sid: int,
    hadm: int | None,
    window: Window,
    stays: list[Stay],
    code: str | None = None,
) -> Where:
    """The subject's microbiology rows of the admission (with its specimens without
    ``hadm_id``) drawn in the window; ``code`` matches specimen, test or a reported organism
    (on their distinct values, in Python: ``contains``)."""
    where = Where().stay(hadm, stay_of(stays, hadm), MICRO_DRAWN, "charttime")
    where.within(window, MICRO_DRAWN)
    needle = normalize_micro(code) if code is not None else ""
    if needle:
        names = [
            [v for v in chart.distinct("microbiologyevents", sid, k, where) if contains(v, needle)]
            for k in _MICRO_TEXT
        ]
        when_sql, when = chart.report_time("microbiologyevents")
        reported = Where().add(
            f"{when_sql} <= ?", lambda r: known(when(r), window.cutoff), window.cutoff or _NEVER
        )
        organisms = [
            v
            for v in chart.distinct("microbiologyevents", sid, "org_name", where & reported)
            if contains(v, needle)
        ]
        where.add(
            "("
            + " OR ".join(Where.IN.format(k, "VARCHAR") for k in _MICRO_TEXT)
            + f" OR ({Where.IN.format('org_name', 'VARCHAR')} AND {when_sql} <= ?))",
            lambda r: (
                any(contains(r[k], needle) for k in _MICRO_TEXT)
                or (contains(r["org_name"], needle) and known(when(r), window.cutoff))
            ),
            *names,
            organisms,
            window.cutoff or _NEVER,
        )
    return where


#: A cutoff no report comes after (a session without a date).
_NEVER = dt.datetime.max


def normalize_micro(code: str) -> str:
    """'blood culture' -> 'blood'; generic words ('culture', 'micro') mean every specimen."""
    words = [
        w
        for w in re.split(r"\s+", code.lower().strip())
        if w not in {"culture", "cultures", "micro", "microbiology", "cx"}
    ]
    return " ".join(words)


def _micro_observations(
    chart: Chart, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    stays = chart.stays(sid)
    where = micro_where(chart, sid, hadm, window, stays, code)
    reported = chart.report_time("microbiologyevents")[1]
    found = specimens(chart.rows("microbiologyevents", sid, where), window.cutoff, reported, stays)
    out = [
        micro_observation(s, t, i, sid)
        for s in found
        for t in s.tests
        for i in (t.isolates or (None,))
    ]
    hint = None
    if not out and code is not None:
        hint = f"No microbiology specimen, test or organism matching '{code}' for this patient."
    return bundle(out[:count], len(out), hint)


def micro_observation(
    specimen: Specimen, test: MicroTest, isolate: Isolate | None, sid: int
) -> dict[str, Any]:
    """One test of a specimen, for one of its isolates (``None``: a test without organism, or
    pending): its result, the antibiotics tested with S/I/R, and what a reader must know
    (pending, rejected, kind, flags, resistance, origin) as notes and as extensions."""
    organism = isolate.organism if isolate is not None else None
    number = isolate.number if isolate is not None and isolate.number is not None else 0
    status = (
        "registered"
        if test.pending
        else "cancelled"
        if test.rejected and not test.isolates
        else "final"
    )
    notes = (
        [PENDING_NOTE]
        if test.pending
        else ["test cancelled / specimen rejected"]
        if test.rejected
        else []
    )
    if not test.culture:
        notes.append(f"{KIND_NAMES[test.kind]}, not a culture")
    codes = [fhir.extension("microbiology-test-kind", valueCode=test.kind)]
    if isolate is not None:
        codes.append(fhir.extension("microbiology-organism", valueString=isolate.organism))
        notes += [RESISTANCE_NAMES[r] for r in isolate.resistance]
        notes += [FLAG_NOTES[f] for f in isolate.flags if f in FLAG_NOTES]
        codes += [
            fhir.extension("microbiology-resistance", valueCode=r) for r in isolate.resistance
        ]
        codes += [fhir.extension("microbiology-flag", valueCode=f) for f in isolate.flags]
    if specimen.origin:
        notes.append(ORIGIN_NOTE[specimen.origin])
        codes.append(fhir.extension("specimen-origin", valueCode=specimen.origin))
    if test.reported is not None:
        codes.append(
            fhir.extension("reported", valueDateTime=fhir.fhir_datetime(text(test.reported)))
        )
    value = None if test.pending else organism or test.comment or "No organism reported"
    return {
        **fhir.observation(
            fhir.safe_id(
                f"micro-{specimen.specimen_id}-{test.itemid}-{number}-{fhir.stable_id('o', organism)[2:8]}"
            ),
            sid,
            "laboratory",
            {"text": f"{test.name} ({specimen.specimen})"},
            category_text="Microbiology",
        ),
        "status": status,
        "extension": codes,
        "encounter": fhir.encounter_ref(specimen.hadm_id),
        "effectiveDateTime": fhir.fhir_datetime(text(specimen.drawn)),
        "valueString": value,
        "note": _notes(*notes),
        "component": [
            {
                "code": {"text": s.antibiotic},
                "valueString": s.text,
                "interpretation": interpretation_of(s.interpretation),
            }
            for s in isolate.susceptibilities
        ]
        if isolate is not None and isolate.susceptibilities
        else None,
    }


#: A susceptibility's S/I/R as FHIR's interpretation codes.
_SIR = {"S": "Susceptible", "I": "Intermediate", "R": "Resistant"}


def interpretation_of(code: str) -> list[dict[str, Any]] | None:
    if code not in _SIR:
        return None
    return [{"coding": [{"system": fhir.INTERPRETATION, "code": code, "display": _SIR[code]}]}]
