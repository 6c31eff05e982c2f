"""What a lab value means for this patient, from the documented tables of :mod:`.vocab`.

* **Label in context**: an INR on warfarin (going home on it: :func:`warfarin_order`) is
  judged against its target range (subtherapeutic / therapeutic / supratherapeutic); after
  warfarin was stopped, by its reference range, suggesting nothing (a residual effect); an
  A1c by the ADA bands (normal / prediabetes / diabetes range); any other value by its
  reference range (high / low / normal).
* **Action**: a deviation calls for a recheck only when it matters: past the condition's
  clinical threshold where :data:`~.vocab.MEANINGS` names one, else beyond the reference limit
  by at least the analyte's meaningful change (:data:`~.vocab.TRENDS`); a high creatinine or
  BUN in end-stage renal disease is expected. A low BUN of 4 needs nothing.
* **Meaning**: the condition a value suggests, said only past its threshold (none for an INR on
  warfarin: it is the drug's effect, and off target the dosing is adjusted); in end-stage renal
  disease a high creatinine is the known disease, and with a coded leukaemia or myeloid
  neoplasm a high white count is the known disease before it is an infection.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from physassist.timeline import Order, Timeline

from .vocab import (
    A1C_DIABETES,
    A1C_PREDIABETES,
    ESRD_ICD_PREFIXES,
    HEME_MALIGNANCY_ICD_PREFIXES,
    INR_TARGET,
    INR_TARGET_HIGH,
    LIVER_FAILURE_ICD_PREFIXES,
    MARROW_FAILURE_ICD_PREFIXES,
    MEANINGS,
    SEVERE_CYTOPENIA,
    TRENDS,
    WARFARIN,
    Meaning,
)

INR, A1C = "INR(PT)", "% Hemoglobin A1c"
#: Labels that are the value's normal for the patient (no action, no condition named).
AT_GOAL = frozenset({"normal", "therapeutic"})
#: Labels off a drug's target: the dose is the question, not a condition.
OFF_TARGET = frozenset({"subtherapeutic", "supratherapeutic"})
_ESRD = Meaning(
    "known end-stage renal disease",
    "已知终末期肾病",
    ("end-stage", "ESRD", "dialysis"),
    ("终末期肾病", "透析"),
    MEANINGS[("Creatinine", "high")].limit,
)
_HEME = Meaning(
    "the known haematological malignancy (infection still possible)",
    "已知的血液系统恶性肿瘤（仍需排除感染）",
    (
        "leukemia",
        "leukaemia",
        "myelodysplastic",
        "MDS",
        "myeloproliferative",
        "malignancy",
        "blast",
    ),
    ("白血病", "骨髓增生", "恶性"),
    MEANINGS[("White Blood Cells", "high")].limit,
)


#: A warfarin dose given this long before discharge means the patient goes home on it.
ON_WARFARIN = dt.timedelta(hours=36)


def warfarin_order(tl: Timeline) -> Order | None:
    """The warfarin order of a patient on warfarin at discharge: MIMIC-IV orders warfarin as a
    dose a day ("ONCE", dosed by the INR), so the newest order counts when it ran or a dose was
    given within :data:`ON_WARFARIN` of discharge."""
    given = tl.administrations(WARFARIN).given
    orders = [
        o
        for o in tl.orders_for(WARFARIN)
        if o.dose is not None and o.dose > 0 and (o.start is None or o.start <= tl.ref)
    ]
    since = tl.ref - ON_WARFARIN
    recent = (bool(given) and given[-1] >= since) or any(
        o.stop is None or o.stop >= since for o in orders
    )
    return orders[0] if orders and recent else None


@dataclass(frozen=True)
class Context:
    """What the chart says about the patient that changes a value's meaning."""

    on_warfarin: bool = False
    off_warfarin: bool = False  # warfarin ordered in the admission, stopped before discharge
    esrd: bool = False
    heme_malignancy: bool = False
    marrow_failure: bool = False  # aplastic anaemia (a coded marrow failure, not a malignancy)
    liver_failure: bool = False  # cirrhosis or hepatic failure coded: the INR is followed


def load_context(con: duckdb.DuckDBPyConnection, tl: Timeline) -> Context:
    """The context of one admission: warfarin at discharge or stopped in it, and its coded
    diagnoses."""
    codes = [
        str(c).replace(".", "").upper()
        for (c,) in con.execute(
            "SELECT icd_code FROM diagnoses_icd WHERE subject_id = ? AND hadm_id = ?",
            [tl.subject_id, tl.hadm_id],
        ).fetchall()
        if c is not None
    ]
    on = warfarin_order(tl) is not None
    return Context(
        on_warfarin=on,
        off_warfarin=not on and bool(tl.orders_for(WARFARIN)),
        esrd=any(c.startswith(ESRD_ICD_PREFIXES) for c in codes),
        heme_malignancy=any(c.startswith(HEME_MALIGNANCY_ICD_PREFIXES) for c in codes),
        marrow_failure=any(c.startswith(MARROW_FAILURE_ICD_PREFIXES) for c in codes),
        liver_failure=any(c.startswith(LIVER_FAILURE_ICD_PREFIXES) for c in codes),
    )


def label(lab: str, value: float, status: str, ctx: Context) -> str:
    """The word a physician uses for the value (see the module rules)."""
    if lab == INR and ctx.on_warfarin:
        if value < INR_TARGET.value:
            return "subtherapeutic"
        return "supratherapeutic" if value > INR_TARGET_HIGH.value else "therapeutic"
    if lab == A1C:
        if value >= A1C_DIABETES.value:
            return "diabetes_range"
        return "prediabetes" if value >= A1C_PREDIABETES.value else "normal"
    return status


def actionable(
    lab: str,
    value: float,
    status: str,
    word: str,
    limits: tuple[float | None, float | None],
    ctx: Context,
) -> bool:
    """Whether the value calls for a recheck (see the module rules); ``word`` is its
    :func:`label`, ``limits`` its reference range."""
    if word in AT_GOAL:
        return False
    if word != status or status == "abnormal":  # a context label off target, or a bare flag
        return True
    if ctx.esrd and lab in ("Creatinine", "Urea Nitrogen") and status == "high":
        return False
    m = MEANINGS.get((lab, status))
    if m is not None:
        return m.limit.passed(value, status)
    rule, (low, high) = TRENDS.get(lab), limits
    limit = high if status == "high" else low
    if rule is None or limit is None:
        return True
    return abs(value - limit) >= rule.delta


def meaning(lab: str, value: float, status: str, ctx: Context) -> Meaning | None:
    """The condition the value suggests, past its clinical threshold (see the module rules);
    an INR on warfarin suggests none: it is the drug's effect, judged against its target."""
    if lab == INR and (ctx.on_warfarin or ctx.off_warfarin):
        return None
    if ctx.esrd and lab == "Creatinine" and status == "high":
        return _ESRD
    if ctx.heme_malignancy and lab == "White Blood Cells" and status == "high":
        return _HEME
    m = MEANINGS.get((lab, status))
    return m if m is not None and m.limit.passed(value, status) else None


_MARROW = Meaning(
    "the known marrow disease",
    "已知的骨髓疾病",
    (
        "known",
        "marrow",
        "myelodysplastic",
        "MDS",
        "leukemia",
        "leukaemia",
        "myeloproliferative",
        "aplastic",
        "hematolog",
        "haematolog",
    ),
    ("骨髓", "已知", "白血病", "血液科"),
    SEVERE_CYTOPENIA["Platelet Count"],
)


def marrow_cytopenia(lab: str, value: float, status: str, ctx: Context) -> Meaning | None:
    """The known marrow disease, for a severe cytopenia (:data:`~.vocab.SEVERE_CYTOPENIA`) in a
    patient with a coded haematological malignancy or marrow failure: a platelet count of 12 in
    myelodysplastic syndrome is the disease's course (transfusion thresholds, haematology), not
    a finding whose cause is still to be found."""
    limit = SEVERE_CYTOPENIA.get(lab)
    marrow = ctx.heme_malignancy or ctx.marrow_failure
    if not marrow or status != "low" or limit is None or not limit.passed(value, "low"):
        return None
    return _MARROW
