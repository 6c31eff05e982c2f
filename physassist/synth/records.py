"""Row-per-event tables that are small per subject (built in Python from the plans), and the
dictionary tables (`d_icd_diagnoses`, `d_labitems`, `d_items`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from physassist.synth.catalog import (
    ANTIBIOTICS,
    CHART,
    ICD10,
    LABS,
    ORGANISMS,
    SPECIMENS,
    SUSCEPTIBILITY,
)
from physassist.synth.plan import DAY, HOUR, Admission, SubjectPlan
from physassist.synth.quirks import BLOOD_GAS_ITEM, ICU_MEDS

if TYPE_CHECKING:
    from physassist.synth.writer import Columns

_DT = "datetime64[s]"


def _times(v: list[int | None]) -> pa.Array:
    arr = np.array([0 if x is None else x for x in v], dtype=np.int64).astype(_DT)
    return pa.array(arr, mask=np.array([x is None for x in v], dtype=bool))


def patients(plans: list[SubjectPlan]) -> Columns:
    return {
        "subject_id": [p.subject_id for p in plans],
        "gender": [p.sex for p in plans],
        "anchor_age": [p.age for p in plans],
        "anchor_year": [p.anchor_year for p in plans],
        "anchor_year_group": [p.anchor_year_group for p in plans],
        "dod": [None] * len(plans),
    }


def admissions(plans: list[SubjectPlan]) -> Columns:
    rows = [(p, a) for p in plans for a in p.admissions]
    return {
        "subject_id": [p.subject_id for p, _ in rows],
        "hadm_id": [a.hadm_id for _, a in rows],
        "admittime": _times([a.admit for _, a in rows]),
        "dischtime": _times([a.disch for _, a in rows]),
        "deathtime": _times([None for _ in rows]),
        "admission_type": [a.admission_type for _, a in rows],
        "admit_provider_id": [None for _ in rows],
        "admission_location": [a.admission_location for _, a in rows],
        "discharge_location": [a.discharge_location for _, a in rows],
        "insurance": [p.insurance for p, _ in rows],
        "language": [p.language for p, _ in rows],
        "marital_status": [p.marital_status for p, _ in rows],
        "race": [p.race for p, _ in rows],
        "edregtime": _times([a.edreg for _, a in rows]),
        "edouttime": _times([a.admit + 10 * 60 if a.edreg else None for _, a in rows]),
        "hospital_expire_flag": [0 for _ in rows],
    }


def transfers(plans: list[SubjectPlan]) -> Columns:
    out: dict[str, list[Any]] = {
        k: []
        for k in (
            "subject_id",
            "hadm_id",
            "transfer_id",
            "eventtype",
            "careunit",
            "intime",
            "outtime",
        )
    }

    def add(
        p: SubjectPlan, a: Admission, k: int, ev: str, unit: str | None, tin: int, tout: int | None
    ) -> None:
        out["subject_id"].append(p.subject_id)
        out["hadm_id"].append(a.hadm_id)
        out["transfer_id"].append(70_000_000 + p.idx * 20 + k)
        out["eventtype"].append(ev)
        out["careunit"].append(unit)
        out["intime"].append(tin)
        out["outtime"].append(tout)

    for p in plans:
        k = 0
        for a in p.admissions:
            if a.edreg:
                add(p, a, k, "ED", "Emergency Department", a.edreg, a.admit)
                k += 1
            if a.icu:
                add(p, a, k, "admit", a.icu.careunit, a.admit, a.icu.outtime)
                add(p, a, k + 1, "transfer", a.ward, a.icu.outtime, a.disch)
                k += 2
            else:
                add(p, a, k, "admit", a.ward, a.admit, a.disch)
                k += 1
            add(p, a, k, "discharge", None, a.disch, None)
            k += 1
    out["intime"] = _times(out["intime"])
    out["outtime"] = _times(out["outtime"])
    return out


def diagnoses(plans: list[SubjectPlan]) -> Columns:
    rows = [
        (p.subject_id, a.hadm_id, i + 1, c)
        for p in plans
        for a in p.admissions
        for i, c in enumerate(a.diagnoses)
    ]
    return {
        "subject_id": [r[0] for r in rows],
        "hadm_id": [r[1] for r in rows],
        "seq_num": [r[2] for r in rows],
        "icd_code": [r[3] for r in rows],
        "icd_version": [10] * len(rows),
    }


def icustays(plans: list[SubjectPlan]) -> Columns:
    rows = [(p, a, a.icu) for p in plans for a in p.admissions if a.icu]
    return {
        "subject_id": [p.subject_id for p, _, _ in rows],
        "hadm_id": [a.hadm_id for _, a, _ in rows],
        "stay_id": [icu.stay_id for *_, icu in rows],
        "first_careunit": [icu.careunit for *_, icu in rows],
        "last_careunit": [icu.careunit for *_, icu in rows],
        "intime": _times([icu.intime for *_, icu in rows]),
        "outtime": _times([icu.outtime for *_, icu in rows]),
        "los": [round((icu.outtime - icu.intime) / DAY, 4) for *_, icu in rows],
    }


NO_GROWTH = {
    "blood": "NO GROWTH.",
    "urine": "NO GROWTH.",
    "sputum": "SPARSE GROWTH OF COMMENSAL RESPIRATORY FLORA.",
    "peritoneal": "NO GROWTH.",
    "mrsa": "No MRSA isolated.",
}
RESULT_DELAY_DAYS = {"blood": 5, "urine": 2, "sputum": 2, "peritoneal": 3, "mrsa": 1}


def microbiology(plans: list[SubjectPlan]) -> Columns:
    cols = (
        "microevent_id",
        "subject_id",
        "hadm_id",
        "micro_specimen_id",
        "order_provider_id",
        "chartdate",
        "charttime",
        "spec_itemid",
        "spec_type_desc",
        "test_seq",
        "storedate",
        "storetime",
        "test_itemid",
        "test_name",
        "org_itemid",
        "org_name",
        "isolate_num",
        "quantity",
        "ab_itemid",
        "ab_name",
        "dilution_text",
        "dilution_comparison",
        "dilution_value",
        "interpretation",
        "comments",
    )
    out: dict[str, list[Any]] = {c: [] for c in cols}
    for p in plans:
        start = len(out["microevent_id"])
        for k, m in enumerate(sorted(p.micro, key=lambda x: x.time)):
            spec_id, spec_desc, test_id, test_name = SPECIMENS[m.specimen]
            delay = RESULT_DELAY_DAYS[m.specimen] - (
                2 if m.organism and m.specimen == "blood" else 0
            )
            store = m.time - m.time % DAY + delay * DAY + 10 * HOUR + (p.idx % 50) * 60
            base: dict[str, object] = dict(
                subject_id=p.subject_id,
                hadm_id=m.hadm_id,
                micro_specimen_id=20_000_000 + p.idx * 50 + k,
                order_provider_id=None,
                chartdate=m.time - m.time % DAY,
                charttime=m.time,
                spec_itemid=spec_id,
                spec_type_desc=spec_desc,
                test_seq=1,
                storedate=store - store % DAY,
                storetime=store,
                test_itemid=test_id,
                test_name=test_name,
            )
            rows: list[dict[str, object]]
            if m.organism is None:
                rows = [
                    dict(
                        org_itemid=None,
                        org_name=None,
                        isolate_num=None,
                        quantity=None,
                        ab_itemid=None,
                        ab_name=None,
                        dilution_text=None,
                        dilution_comparison=None,
                        dilution_value=None,
                        interpretation=None,
                        comments=NO_GROWTH[m.specimen],
                    )
                ]
            else:
                org_id, org_name = ORGANISMS[m.organism]
                rows = [
                    dict(
                        org_itemid=org_id,
                        org_name=org_name,
                        isolate_num=1,
                        quantity=None if m.specimen == "blood" else "MODERATE GROWTH",
                        ab_itemid=ANTIBIOTICS[ab],
                        ab_name=ab,
                        dilution_text=txt,
                        dilution_comparison=f"{cmp:<10}",
                        dilution_value=val,
                        interpretation=interp,
                        comments=None,
                    )
                    for ab, txt, cmp, val, interp in SUSCEPTIBILITY[m.organism]
                ]
            for r in rows:
                r.update(base)
                out["microevent_id"].append((p.idx + 1) * 1000 + len(out["microevent_id"]) - start)
                for c in cols[1:]:
                    out[c].append(r[c])
    for c in ("chartdate", "charttime", "storedate", "storetime"):
        out[c] = _times(out[c])
    return out


def omr(plans: list[SubjectPlan]) -> Columns:
    rows = [(p.subject_id, d, s, name, v) for p in plans for d, s, name, v in p.omr]
    return {
        "subject_id": [r[0] for r in rows],
        "chartdate": np.array([r[1] // DAY for r in rows], dtype="datetime64[D]"),
        "seq_num": [r[2] for r in rows],
        "result_name": [r[3] for r in rows],
        "result_value": [r[4] for r in rows],
    }


def notes_table(plans: list[SubjectPlan], kind: str) -> Columns:
    code = "DS" if kind == "discharge" else "RR"
    out: dict[str, list[Any]] = {
        c: []
        for c in (
            "note_id",
            "subject_id",
            "hadm_id",
            "note_type",
            "note_seq",
            "charttime",
            "storetime",
            "text",
        )
    }
    for p in plans:
        notes = p.discharge if kind == "discharge" else p.radiology
        for i, (hadm, t, text) in enumerate(notes, 1):
            seq = i + (10 if kind == "discharge" else 0)
            out["note_id"].append(f"{p.subject_id}-{code}-{seq}")
            out["subject_id"].append(p.subject_id)
            out["hadm_id"].append(hadm)
            out["note_type"].append(code)
            out["note_seq"].append(seq)
            out["charttime"].append(t)
            out["storetime"].append(t + (DAY + 2 * HOUR if kind == "discharge" else 3 * HOUR))
            out["text"].append(text)
    out["charttime"] = _times(out["charttime"])
    out["storetime"] = _times(out["storetime"])
    return out


def dictionaries() -> dict[str, Columns]:
    """Dictionary tables restricted to the codes/items the generator uses (real MIMIC entries)."""
    icd = sorted(ICD10)
    labs = sorted(LABS.values(), key=lambda x: x.itemid)
    chart = [
        (x.itemid, x.label, x.abbreviation, "chartevents", x.category, x.unit, "Numeric")
        for x in CHART.values()
    ]
    icu = [
        (m.itemid, m.label, m.label, "inputevents", m.category, m.unit, "Solution")
        for m in ICU_MEDS.values()
    ]
    items = sorted(chart + icu)
    columns = ("itemid", "label", "abbreviation", "linksto", "category", "unitname", "param_type")
    return {
        "d_icd_diagnoses": {
            "icd_code": icd,
            "icd_version": [10] * len(icd),
            "long_title": [ICD10[c] for c in icd],
        },
        "d_labitems": {
            k: [*(getattr(x, k) for x in labs), BLOOD_GAS_ITEM[k]]
            for k in ("itemid", "label", "fluid", "category")
        },
        "d_items": {
            **{c: [x[i] for x in items] for i, c in enumerate(columns)},
            "lownormalvalue": [None] * len(items),
            "highnormalvalue": [None] * len(items),
        },
    }
