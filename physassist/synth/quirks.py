"""Real MIMIC-IV quirks the synthetic cohort carries, so the builder's tests meet them.

The rest of the generator already writes sliding-scale insulin (``pharmacy.sliding_scale``
'Y'), PRN and one-time orders, orders stopped before discharge, held and refused doses and
long lab series. Added here, deterministically (no draws from the chunk's random stream, so
every other value stays as it was):

* deaths and hospice: some tier-1 subjects' latest admission ends in death (``DIED``,
  ``deathtime``, ``hospital_expire_flag`` 1, ``patients.dod``) or hospice (none designed for
  discharge planning, which the reference's prefilter already closes to them);
* empty eMAR events: about 1 in 97 charted doses has no event text (unknown, not missed);
* a blood-gas twin: glucose drawn on a blood gas (itemid 50809, the MIMIC-IV item, category
  "Blood Gas") 90 minutes after about 1 in 3 chemistry glucose draws (50931), reading higher,
  so the newest glucose of an admission is often a blood-gas value;
* ICU-only doses: during an ICU stay, IV vancomycin, piperacillin-tazobactam and furosemide
  and subcutaneous heparin are charted in ``icu/inputevents`` (MetaVision) as MIMIC-IV does,
  not in the eMAR: each dose given becomes a "Drug Push" row with the real d_items item,
  ordercategoryname and amount of the demo's rows for that drug; the ICU charts no held or
  refused dose, so those eMAR rows go. Heparin usually runs on to discharge, so the builder
  meets a current order whose eMAR count misses its ICU doses.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from physassist.synth.plan import SubjectPlan

if TYPE_CHECKING:
    from physassist.synth.writer import Columns, Tables

MINUTE_S = 60

CHEMISTRY_GLUCOSE, BLOOD_GAS_GLUCOSE = 50931, 50809
BLOOD_GAS_ITEM = {
    "itemid": BLOOD_GAS_GLUCOSE,
    "label": "Glucose",
    "fluid": "Blood",
    "category": "Blood Gas",
}
BLOOD_GAS_DELAY_S = 90 * 60
BLOOD_GAS_OFFSET = 25.0  # mg/dL: a point-of-care value above the lab's
TWIN_ID_OFFSET = 9_000_000_000  # twin labevent_id = its chemistry row's + this (no collision)


def course(plan: SubjectPlan) -> str:
    """How the subject's latest admission ends: 'died', 'hospice' or 'discharged' (never for
    a subject designed for discharge planning)."""
    if plan.tier != 1 or "discharge_planning" in plan.facts.get("scenarios", ()):
        return "discharged"
    return {0: "died", 3: "hospice"}.get(plan.idx % 6, "discharged")


def end_of_life(plans: list[SubjectPlan], admissions: Columns, patients: Columns) -> None:
    """Mark the latest admission of the subjects :func:`course` picks (in place)."""
    ends = {
        p.subject_id: (course(p), max(p.admissions, key=lambda a: a.admit).hadm_id)
        for p in plans
        if p.admissions
    }
    for p in plans:
        if course(p) != "discharged":  # the plan's facts follow the record
            p.facts["course"] = course(p)
            p.facts["discharge_location"] = "DIED" if course(p) == "died" else "HOSPICE"
    for i, (sid, hadm) in enumerate(
        zip(admissions["subject_id"], admissions["hadm_id"], strict=True)
    ):
        kind, last = ends.get(sid, ("discharged", None))
        if hadm != last or kind == "discharged":
            continue
        admissions["discharge_location"][i] = "DIED" if kind == "died" else "HOSPICE"
        if kind == "died":
            admissions["hospital_expire_flag"][i] = 1
            admissions["deathtime"] = _with(admissions["deathtime"], i, admissions["dischtime"][i])
            j = patients["subject_id"].index(sid)
            patients["dod"][j] = admissions["dischtime"][i].as_py().date()


def _with(column: pa.Array, i: int, value: pa.Scalar) -> pa.Array:
    values = column.to_pylist()
    values[i] = value.as_py()
    return pa.array(values, column.type)


def blank_events(event: np.ndarray) -> pa.Array:
    """eMAR event texts with about 1 in 97 left empty (by position, no random draw)."""
    blank = (np.arange(len(event)) * 2654435761) % 97 == 11
    return pa.array(event.astype(object), pa.string(), mask=blank)


def blood_gas_twins(labevents: pa.Table) -> pa.Table:
    """``labevents`` plus a blood-gas glucose after about 1 in 3 chemistry glucose draws."""
    idx = np.nonzero(labevents["itemid"].to_numpy(zero_copy_only=False) == CHEMISTRY_GLUCOSE)[0]
    idx = idx[np.arange(len(idx)) % 3 == 1]
    if not len(idx):
        return labevents
    twins = labevents.take(pa.array(idx))
    value = pc.add(twins["valuenum"], BLOOD_GAS_OFFSET)
    delay = pa.scalar(BLOOD_GAS_DELAY_S * 1_000_000, pa.duration("us"))
    shifted = {
        "labevent_id": pc.add(twins["labevent_id"], TWIN_ID_OFFSET),
        "itemid": pa.array(np.full(len(idx), BLOOD_GAS_GLUCOSE), labevents["itemid"].type),
        "charttime": pc.add(twins["charttime"].cast(pa.timestamp("us")), delay).cast(
            labevents["charttime"].type
        ),
        "storetime": pc.add(twins["storetime"].cast(pa.timestamp("us")), delay).cast(
            labevents["storetime"].type
        ),
        "valuenum": value,
        "value": pc.cast(pc.round(value, 0).cast(pa.int64()), pa.string()),
        "ref_range_lower": pa.nulls(len(idx), labevents["ref_range_lower"].type),
        "ref_range_upper": pa.nulls(len(idx), labevents["ref_range_upper"].type),
        "flag": pa.nulls(len(idx), labevents["flag"].type),
    }
    for name, column in shifted.items():
        twins = twins.set_column(twins.schema.get_field_index(name), name, column)
    both = pa.concat_tables([labevents, twins])
    order = pc.sort_indices(
        both, [("subject_id", "ascending"), ("charttime", "ascending"), ("itemid", "ascending")]
    )
    return both.take(order)


@dataclass(frozen=True)
class IcuMed:
    """How MIMIC-IV's ICU charts one drug in ``inputevents`` (values of the demo's rows)."""

    itemid: int
    label: str  # d_items.label (and abbreviation)
    category: str  # d_items.category
    unit: str  # d_items.unitname and inputevents.amountuom
    amount: float
    ordercategoryname: str
    secondaryordercategoryname: str | None


#: Formulary code (``prescriptions.formulary_drug_cd``) -> its ICU charting (module docstring).
ICU_MEDS: dict[str, IcuMed] = {
    "VANC1F": IcuMed(
        225798,
        "Vancomycin",
        "Antibiotics",
        "dose",
        1.0,
        "08-Antibiotics (IV)",
        "02-Fluids (Crystalloids)",
    ),
    "PTZ4.5F": IcuMed(
        225893,
        "Piperacillin/Tazobactam (Zosyn)",
        "Antibiotics",
        "dose",
        1.0,
        "08-Antibiotics (IV)",
        "02-Fluids (Crystalloids)",
    ),
    "FURO40I": IcuMed(
        221794, "Furosemide (Lasix)", "Medications", "mg", 40.0, "05-Med Bolus", None
    ),
    "HEPA5I": IcuMed(
        225975,
        "Heparin Sodium (Prophylaxis)",
        "Medications",
        "dose",
        1.0,
        "11-Prophylaxis (Non IV)",
        None,
    ),
}


def icu_doses(tables: Tables, plans: list[SubjectPlan]) -> None:
    """Move the ICU_MEDS doses charted inside an ICU stay from ``emar`` (and ``emar_detail``)
    to a new ``inputevents`` table (in place; module docstring)."""
    emar, rx, stays = tables.get("emar"), tables.get("prescriptions"), tables["icustays"]
    if emar is None or rx is None or not stays["hadm_id"]:
        tables["inputevents"] = None
        return
    code_of = dict(
        zip(
            np.asarray(rx["pharmacy_id"]).tolist(),
            pa.array(rx["formulary_drug_cd"]).to_pylist(),
            strict=True,
        )
    )
    stay_of = {
        h: (s, i, o)
        for h, s, i, o in zip(
            stays["hadm_id"],
            stays["stay_id"],
            stays["intime"].to_pylist(),
            stays["outtime"].to_pylist(),
            strict=True,
        )
    }
    weight = {p.subject_id: p.weight_kg for p in plans}
    chart = pa.array(emar["charttime"]).to_pylist()
    event = pa.array(emar["event_txt"]).to_pylist()
    move = np.zeros(len(chart), dtype=bool)
    rows: list[tuple[int, IcuMed, int, dt.datetime]] = []
    for i, (pid, hadm, t) in enumerate(
        zip(
            np.asarray(emar["pharmacy_id"]).tolist(),
            np.asarray(emar["hadm_id"]).tolist(),
            chart,
            strict=True,
        )
    ):
        med, stay = ICU_MEDS.get(code_of.get(pid, "")), stay_of.get(hadm)
        if med is None or stay is None or not stay[1] <= t < stay[2]:
            continue
        move[i] = True
        if event[i] == "Administered":
            rows.append((i, med, stay[0], t))
    keep = pa.array(~move)
    moved = set(pa.array(emar["emar_id"]).filter(pa.array(move)).to_pylist())
    subject = np.asarray(emar["subject_id"])
    tables["inputevents"] = _inputevents(rows, subject, np.asarray(emar["hadm_id"]), weight)
    tables["emar"] = {
        k: (v[~move] if isinstance(v, np.ndarray) else pa.array(v).filter(keep))
        for k, v in emar.items()
    }
    detail = tables["emar_detail"]
    gone = pa.array(pc.is_in(detail["emar_id"], pa.array(sorted(moved), pa.string())))
    tables["emar_detail"] = {k: v.filter(pc.invert(gone)) for k, v in detail.items()}


def _inputevents(
    rows: list[tuple[int, IcuMed, int, dt.datetime]],
    subject: np.ndarray,
    hadm: np.ndarray,
    weight: dict[int, float],
) -> Columns:
    delta = dt.timedelta(seconds=MINUTE_S)
    sid = [int(subject[i]) for i, *_ in rows]
    # one ICU order per dose, numbered within its subject (inputevents.orderid)
    order = [s % 100_000 * 1000 + sid[:k].count(s) for k, s in enumerate(sid)]
    meds = [m for _, m, *_ in rows]
    amount = [m.amount for m in meds]
    n = len(rows)
    return {
        "subject_id": sid,
        "hadm_id": [int(hadm[i]) for i, *_ in rows],
        "stay_id": [s for *_, s, _ in rows],
        "caregiver_id": [None] * n,
        "starttime": [t for *_, t in rows],
        "endtime": [t + delta for *_, t in rows],
        "storetime": [t for *_, t in rows],
        "itemid": [m.itemid for m in meds],
        "amount": amount,
        "amountuom": [m.unit for m in meds],
        "rate": [None] * n,
        "rateuom": [None] * n,
        "orderid": order,
        "linkorderid": order,
        "ordercategoryname": [m.ordercategoryname for m in meds],
        "secondaryordercategoryname": [m.secondaryordercategoryname for m in meds],
        "ordercomponenttypedescription": ["Main order parameter"] * n,
        "ordercategorydescription": ["Drug Push"] * n,
        "patientweight": [weight.get(s) for s in sid],
        "totalamount": [None] * n,
        "totalamountuom": [None] * n,
        "isopenbag": [0] * n,
        "continueinnextdept": [0] * n,
        "statusdescription": ["FinishedRunning"] * n,
        "originalamount": amount,
        "originalrate": amount,
    }
