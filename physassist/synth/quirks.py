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
  so the newest glucose of an admission is often a blood-gas value.

ICU administrations (``icu/inputevents``) are not written: the store has no such table.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from physassist.synth.plan import SubjectPlan

CHEMISTRY_GLUCOSE, BLOOD_GAS_GLUCOSE = 50931, 50809
BLOOD_GAS_ITEM = {"itemid": BLOOD_GAS_GLUCOSE, "label": "Glucose", "fluid": "Blood",
                  "category": "Blood Gas"}
BLOOD_GAS_DELAY_S = 90 * 60
BLOOD_GAS_OFFSET = 25.0  # mg/dL: a point-of-care value above the lab's
TWIN_ID_OFFSET = 9_000_000_000  # twin labevent_id = its chemistry row's + this (no collision)


def course(plan: SubjectPlan) -> str:
    """How the subject's latest admission ends: 'died', 'hospice' or 'discharged' (never for
    a subject designed for discharge planning)."""
    if plan.tier != 1 or "discharge_planning" in plan.facts.get("scenarios", ()):
        return "discharged"
    return {0: "died", 3: "hospice"}.get(plan.idx % 6, "discharged")


def end_of_life(plans: list[SubjectPlan], admissions: dict, patients: dict) -> None:
    """Mark the latest admission of the subjects :func:`course` picks (in place)."""
    ends = {p.subject_id: (course(p), max(p.admissions, key=lambda a: a.admit).hadm_id)
            for p in plans if p.admissions}
    for p in plans:
        if course(p) != "discharged":  # the plan's facts follow the record
            p.facts["course"] = course(p)
            p.facts["discharge_location"] = "DIED" if course(p) == "died" else "HOSPICE"
    for i, (sid, hadm) in enumerate(zip(admissions["subject_id"], admissions["hadm_id"],
                                        strict=True)):
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
            labevents["charttime"].type),
        "storetime": pc.add(twins["storetime"].cast(pa.timestamp("us")), delay).cast(
            labevents["storetime"].type),
        "valuenum": value,
        "value": pc.cast(pc.round(value, 0).cast(pa.int64()), pa.string()),
        "ref_range_lower": pa.nulls(len(idx), labevents["ref_range_lower"].type),
        "ref_range_upper": pa.nulls(len(idx), labevents["ref_range_upper"].type),
        "flag": pa.nulls(len(idx), labevents["flag"].type),
    }
    for name, column in shifted.items():
        twins = twins.set_column(twins.schema.get_field_index(name), name, column)
    both = pa.concat_tables([labevents, twins])
    order = pc.sort_indices(both, [("subject_id", "ascending"), ("charttime", "ascending"),
                                   ("itemid", "ascending")])
    return both.take(order)
