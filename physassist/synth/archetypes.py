"""Clinical archetypes: what each kind of synthetic patient has, so that scenarios can target them.

Each archetype function draws one clinically consistent instance (an `ArchetypeCase`): diagnoses,
home/inpatient/discharge medications, lab trajectories at the anchor admission, vitals, cultures,
imaging, and the key facts a session builder needs (e.g. the admission potassium of a
hyperkalemia patient, which drug explains it). Tier (1 sparse .. 3 rich) scales length of stay,
panels, imaging, diagnoses and drug counts so every scenario has patients at every tier
(the reference pre-filter thresholds of docs/generation.md#pre-filter).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from physassist.synth.catalog import DRUGS
from physassist.synth.plan import SHAPE_FAST, SHAPE_LATE, SHAPE_LINEAR

ARCHETYPES: tuple[str, ...] = (
    "afib_apixaban",
    "ckd_metformin",
    "hyperkalemia_raas",
    "htn_amlodipine_edema",
    "pneumonia_sepsis",
    "cirrhosis_ascites",
    "hf_discharge",
)

# Scenarios each archetype is designed for (all archetypes also carry a discharge note).
ARCHETYPE_SCENARIOS: dict[str, tuple[str, ...]] = {
    "afib_apixaban": ("med_safety", "diagnostic_workup"),
    "ckd_metformin": ("med_safety", "diagnostic_workup"),
    "hyperkalemia_raas": ("med_safety", "diagnostic_workup"),
    "htn_amlodipine_edema": ("med_safety", "diagnostic_workup"),
    "pneumonia_sepsis": ("treatment_response", "diagnostic_workup"),
    "cirrhosis_ascites": ("diagnostic_workup", "med_safety"),
    "hf_discharge": ("discharge_planning", "med_safety"),
}


@dataclass
class InpatientOrder:
    drug: str
    start_h: float  # hours after admission
    stop_h: float | None = None  # None = until discharge
    hold_from: int = -1
    hold_n: int = 0
    n_prn: int = 0
    status: str = ""


@dataclass
class ArchetypeCase:
    """One drawn instance of an archetype at a tier (inputs to the generic planner)."""

    archetype: str
    tier: int
    sex: str
    age: int
    weight_kg: float
    los_days: int
    chief_complaint: str
    hpi: str
    course: str
    diagnoses: list[str]
    home_meds: list[str]
    inpatient: list[InpatientOrder]
    discharge_meds: list[str]
    labs: dict[str, tuple[float, float, int, float]]  # code -> (start, end, shape, noise sd)
    baseline: dict[str, float]  # outpatient / prior-admission values
    panels: tuple[str, ...]
    radiology: list[str]
    vitals: dict[str, tuple[float, float, int, float]] = field(default_factory=dict)
    icu_unit: str | None = None
    icu_days: int = 0
    ward: str = "Medicine"
    micro: list[tuple[float, str, str | None]] = field(default_factory=list)
    discharge_location: str = "HOME"
    admission_type: str = "EW EMER."
    discharge_condition: str = ""
    instructions: str = ""
    followup: str = ""
    facts: dict = field(default_factory=dict)
    key_drug: str = ""  # the home drug whose non-adherence matters most clinically
    symptom_keys: tuple[str, ...] = ()
    pain_key: str = "none"
    omr_bp: tuple[int, int] = (128, 78)  # clinic systolic/diastolic centre
    radiology_params: dict = field(default_factory=dict)


#: Discharge-condition lines of the notes: alert and oriented, walking alone or with an aid.
_ALERT = "Mental Status: Clear and coherent. Level of Consciousness: Alert and interactive. "
_CONDITION_INDEPENDENT = _ALERT + "Activity Status: Ambulatory - Independent."
_CONDITION_WITH_AID = (
    _ALERT + "Activity Status: Ambulatory - requires assistance or aid (walker or cane)."
)


def tier_los(r: random.Random, tier: int) -> int:
    return {1: r.randint(3, 4), 2: r.randint(5, 6), 3: r.randint(7, 9)}[tier]


def panels_for(tier: int, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    base = {
        1: ("chem", "cbc"),
        2: ("chem", "cbc", "coag", "lft"),
        3: ("chem", "cbc", "diff", "coag", "lft"),
    }[tier]
    return tuple(dict.fromkeys(base + extra))


def n_diagnoses(r: random.Random, tier: int) -> int:
    return {1: r.randint(3, 4), 2: r.randint(5, 7), 3: r.randint(8, 11)}[tier]


def _r1(x: float) -> float:
    return round(x, 1)


def crcl(age: int, weight: float, cr: float, sex: str) -> float:
    """Cockcroft-Gault creatinine clearance (mL/min), actual body weight."""
    v = (140 - age) * weight / (72 * cr)
    return round(v * (0.85 if sex == "F" else 1.0), 1)


def mdrd(cr: float, age: int, sex: str) -> int:
    """MDRD eGFR (mL/min/1.73 m2), the equation MIMIC-IV's eGFR item is named after."""
    return int(round(175.0 * cr**-1.154 * age**-0.203 * (0.742 if sex == "F" else 1.0)))


def meld(bili: float, inr: float, cr: float, na: float) -> tuple[int, int]:
    """MELD and MELD-Na (UNOS 2016 form); lab floors of 1.0, creatinine cap 4.0, Na 125-137."""
    import math

    b, i, c = max(bili, 1.0), max(inr, 1.0), min(max(cr, 1.0), 4.0)
    m = 3.78 * math.log(b) + 11.2 * math.log(i) + 9.57 * math.log(c) + 6.43
    m = round(m)
    n = min(max(na, 125.0), 137.0)
    mna = m + 1.32 * (137 - n) - 0.033 * m * (137 - n) if m > 11 else m
    return int(m), int(round(mna))


def child_pugh(bili: float, alb: float, inr: float, ascites: int, enceph: int) -> tuple[int, str]:
    """Child-Pugh score and class; ascites/encephalopathy given as points (1-3)."""
    pts = (1 if bili < 2 else 2 if bili <= 3 else 3) + (1 if alb > 3.5 else 2 if alb >= 2.8 else 3)
    pts += (1 if inr < 1.7 else 2 if inr <= 2.3 else 3) + ascites + enceph
    return pts, ("A" if pts <= 6 else "B" if pts <= 9 else "C")


def _common_prn(r: random.Random, los: int) -> list[InpatientOrder]:
    out = [
        InpatientOrder("acetaminophen", 3, n_prn=r.randint(1, 3)),
        InpatientOrder("ns_flush", 2),
        InpatientOrder("docusate", 4),
    ]
    if r.random() < 0.6:
        out.append(InpatientOrder("ondansetron", 3, n_prn=r.randint(0, 2)))
    if r.random() < 0.5:
        out.append(InpatientOrder("senna", 4, n_prn=r.randint(0, 2)))
    return out


def _continue(
    meds: list[str], start_h: float = 4.0, skip: tuple[str, ...] = ()
) -> list[InpatientOrder]:
    return [InpatientOrder(m, start_h) for m in meds if m not in skip]


def _fill_dx(r: random.Random, core: list[str], n: int, avoid: tuple[str, ...] = ()) -> list[str]:
    from physassist.synth.catalog import COMORBIDITY_POOL

    pool = [c for c in COMORBIDITY_POOL if c not in core and c not in avoid]
    r.shuffle(pool)
    return core + pool[: max(0, n - len(core))]


def _extra_home(r: random.Random, have: list[str], n: int, pool: tuple[str, ...]) -> list[str]:
    cand = [d for d in pool if d not in have]
    r.shuffle(cand)
    return have + cand[: max(0, n - len(have))]


CHRONIC_EXTRAS = (
    "atorvastatin",
    "pantoprazole",
    "levothyroxine",
    "allopurinol",
    "sertraline",
    "gabapentin",
    "tamsulosin",
    "multivitamin",
    "fluticasone",
    "ezetimibe",
    "aspirin",
)


def afib_apixaban(r: random.Random, tier: int, sex: str) -> ArchetypeCase:
    reduce = r.random() < 0.5
    if reduce:  # two of: age >= 80, weight <= 60 kg, creatinine >= 1.5
        age = r.randint(80, 91)
        weight = _r1(r.uniform(49, 59)) if r.random() < 0.6 else _r1(r.uniform(66, 82))
        cr0 = _r1(r.uniform(1.5, 2.0)) if weight > 60 else _r1(r.uniform(1.0, 1.7))
    else:
        age = r.randint(64, 78)
        weight = _r1(r.uniform(68, 95))
        cr0 = _r1(r.uniform(0.8, 1.2))
    criteria = int(age >= 80) + int(weight <= 60) + int(cr0 >= 1.5)
    recommended = "apixaban25" if criteria >= 2 else "apixaban5"
    # Most cases carry a dosing discrepancy to catch; some are correctly dosed.
    prescribed = (
        recommended
        if r.random() < 0.35
        else ("apixaban5" if recommended == "apixaban25" else "apixaban25")
    )
    cr1 = _r1(cr0 + r.uniform(-0.2, 0.1))
    los = tier_los(r, tier)
    home = [
        "apixaban5" if prescribed == "apixaban5" else "apixaban25",
        "metoprolol_succ",
        "atorvastatin",
    ]
    home += ["lisinopril"] * (tier >= 2) + ["furosemide_po"] * (tier == 3)
    if tier >= 2:
        home = _extra_home(
            r,
            home,
            4 + tier,
            ("lisinopril", "pantoprazole", "levothyroxine", "tamsulosin", "multivitamin"),
        )
    dx = _fill_dx(r, [r.choice(["I4891", "I480", "I4820"]), "Z7901", "I10"], n_diagnoses(r, tier))
    inpatient = (
        _continue(home, skip=("metoprolol_succ",))
        + [
            InpatientOrder("metoprolol_tart", 2, 24, status="Discontinued"),
            InpatientOrder("metoprolol_succ", 24),
        ]
        + _common_prn(r, los)
    )
    labs = {
        "cr": (cr0, cr1, SHAPE_LINEAR, 0.05),
        "bun": (r.randint(18, 32), r.randint(15, 26), SHAPE_LINEAR, 1.5),
        "k": (_r1(r.uniform(3.9, 4.6)), _r1(r.uniform(3.9, 4.5)), SHAPE_LINEAR, 0.15),
        "hgb": (_r1(r.uniform(11.2, 13.2)), _r1(r.uniform(11.0, 12.8)), SHAPE_LINEAR, 0.25),
        "inr": (_r1(r.uniform(1.1, 1.4)), _r1(r.uniform(1.1, 1.3)), SHAPE_LINEAR, 0.05),
        "trop": (0.02, 0.01, SHAPE_FAST, 0.0),
    }
    hr0 = r.randint(118, 142)
    return ArchetypeCase(
        "afib_apixaban",
        tier,
        sex,
        age,
        weight,
        los,
        chief_complaint="Palpitations and lightheadedness",
        hpi=(
            f"{age} y/o with atrial fibrillation on apixaban ({'2.5' if prescribed == 'apixaban25' else '5'} mg BID) "
            f"presenting with 2 days of palpitations and lightheadedness. In the ED found to be in AF with rapid "
            f"ventricular response, HR {hr0}. Denies chest pain, syncope, melena or hematochezia."
        ),
        course=(
            f"# Atrial fibrillation with RVR: rate controlled with IV then PO metoprolol; HR 70s-90s at discharge. "
            f"# Anticoagulation: apixaban continued. Weight {weight} kg, age {age}, creatinine {cr0} mg/dL "
            f"({criteria} of 3 dose-reduction criteria)."
        ),
        diagnoses=dx,
        home_meds=home,
        inpatient=inpatient,
        discharge_meds=[("apixaban5" if prescribed == "apixaban5" else "apixaban25")]
        + [m for m in home if not m.startswith("apixaban")],
        labs=labs,
        baseline={"cr": cr0, "k": 4.3, "hgb": 12.5, "inr": 1.2},
        panels=panels_for(tier, ("coag", "special")),
        radiology=["cxr_clear", "echo_af", "ct_head"][:tier],
        discharge_condition=_CONDITION_INDEPENDENT,
        instructions="You were admitted for a fast, irregular heart rhythm (atrial fibrillation). We slowed your heart rate with metoprolol. Keep taking your blood thinner (apixaban) every 12 hours; do not skip doses. Call your doctor for black stools, blood in urine, or fainting.",
        followup="Cardiology clinic in 2 weeks. PCP in 1 week with BMP (creatinine).",
        facts={
            "prescribed_apixaban": "2.5 mg BID" if prescribed == "apixaban25" else "5 mg BID",
            "recommended_apixaban": "2.5 mg BID" if recommended == "apixaban25" else "5 mg BID",
            "dose_reduction_criteria_met": criteria,
            "weight_kg": weight,
            "admission_creatinine": cr0,
            "crcl_ml_min": crcl(age, weight, cr0, sex),
            "dose_discrepancy": prescribed != recommended,
        },
        key_drug=home[0],
        symptom_keys=("palpitations", "lightheaded"),
        pain_key="none",
        vitals={},
        omr_bp=(134, 80),
    )


def ckd_metformin(r: random.Random, tier: int, sex: str) -> ArchetypeCase:
    age = r.randint(62, 84)
    weight = _r1(r.uniform(72, 108))
    cr0 = _r1(r.uniform(2.1, 3.0) if sex == "M" else r.uniform(1.7, 2.5))
    cr1 = _r1(cr0 - r.uniform(0.1, 0.4))
    met = "metformin1000" if r.random() < 0.7 else "metformin500"
    los = tier_los(r, tier)
    home = [met, "glargine", "lisinopril", "atorvastatin", "amlodipine"]
    if tier >= 2:
        home = _extra_home(
            r,
            home,
            5 + tier,
            # gabapentin 600 mg TID (1800 mg/day) is a home dose never adjusted to the CKD:
            # above the label's 1400 mg/day at a clearance of 30-59 (a real renal signal)
            ("allopurinol", "aspirin", "pantoprazole", "gabapentin600", "tamsulosin"),
        )
    dx = _fill_dx(
        r,
        ["N184" if mdrd(cr0, age, sex) < 30 else "N183", "E1122", "I129", "Z7984", "Z794", "D649"],
        max(n_diagnoses(r, tier), 6 if tier > 1 else 4),
    )
    inpatient = [
        InpatientOrder(met, 3, 30, hold_from=0, hold_n=2, status="Discontinued"),
        InpatientOrder("insulin_ss", 3),
        InpatientOrder("glargine", 10),
    ]
    inpatient += _continue([m for m in home if m not in (met, "glargine")]) + _common_prn(r, los)
    inpatient.append(InpatientOrder("heparin_sc", 4))
    labs = {
        "cr": (cr0, cr1, SHAPE_LINEAR, 0.08),
        "bun": (r.randint(42, 60), r.randint(30, 40), SHAPE_LINEAR, 2.0),
        "k": (_r1(r.uniform(4.8, 5.1)), _r1(r.uniform(4.4, 4.8)), SHAPE_LINEAR, 0.12),
        "hco3": (r.randint(18, 20), r.randint(20, 23), SHAPE_LINEAR, 1.0),
        "glu": (r.randint(190, 260), r.randint(130, 170), SHAPE_FAST, 12.0),
        "hgb": (_r1(r.uniform(9.6, 11.0)), _r1(r.uniform(9.5, 10.8)), SHAPE_LINEAR, 0.2),
        "a1c": (_r1(r.uniform(7.6, 9.2)), 0.0, SHAPE_LINEAR, 0.0),
        "phos": (_r1(r.uniform(4.6, 5.4)), _r1(r.uniform(4.2, 4.8)), SHAPE_LINEAR, 0.2),
    }
    egfr0 = mdrd(cr0, age, sex)
    return ArchetypeCase(
        "ckd_metformin",
        tier,
        sex,
        age,
        weight,
        los,
        chief_complaint="Nausea, poor appetite and fatigue",
        hpi=(
            f"{age} y/o with type 2 diabetes and CKD on {('metformin 1000 mg BID' if met == 'metformin1000' else 'metformin 500 mg BID')} "
            f"presenting with 1 week of nausea, anorexia and fatigue. Labs notable for creatinine {cr0} mg/dL "
            f"(eGFR {egfr0}) and glucose elevation."
        ),
        course=(
            f"# CKD with acute worsening: creatinine {cr0} on admission, improved with IV fluids. eGFR {egfr0}. "
            "Metformin held on admission given reduced eGFR. # T2DM: managed with glargine and sliding scale insulin."
        ),
        diagnoses=dx,
        home_meds=home,
        inpatient=inpatient,
        discharge_meds=[m for m in home if m != met],
        labs=labs,
        baseline={"cr": _r1(cr0 - 0.3), "k": 4.7, "glu": 160, "hgb": 10.8, "bun": 35},
        panels=panels_for(tier, ("special",)),
        radiology=["us_renal", "cxr_clear", "ct_abd_noncon"][:tier],
        discharge_condition=_CONDITION_INDEPENDENT,
        instructions="You were admitted with nausea and worse kidney function. Your kidney function is too low for metformin, so STOP taking metformin. Keep using your insulin as directed and check your sugars before meals.",
        followup="Nephrology clinic in 2 weeks with labs. PCP/endocrinology in 1-2 weeks.",
        facts={
            "metformin_home_dose": "1000 mg BID" if met == "metformin1000" else "500 mg BID",
            "admission_egfr": egfr0,
            "admission_creatinine": cr0,
            "metformin_contraindicated": egfr0 < 30,
            "a1c": labs["a1c"][0],
        },
        key_drug=met,
        symptom_keys=("nausea", "fatigue"),
        pain_key="none",
        omr_bp=(146, 84),
    )


def hyperkalemia_raas(r: random.Random, tier: int, sex: str) -> ArchetypeCase:
    age = r.randint(60, 86)
    weight = _r1(r.uniform(62, 98))
    k0 = _r1(r.uniform(5.8, 6.6))
    k1 = _r1(r.uniform(4.5, 4.9))
    cr0 = _r1(r.uniform(1.6, 2.3))
    cr1 = _r1(cr0 - r.uniform(0.2, 0.5))
    with_kcl = r.random() < 0.4
    los = tier_los(r, tier)
    home = ["spironolactone", "lisinopril", "furosemide_po", "carvedilol", "atorvastatin"] + (
        ["kcl"] if with_kcl else []
    )
    if tier >= 2:
        home = _extra_home(
            r,
            home,
            5 + tier + int(with_kcl),
            ("aspirin", "pantoprazole", "allopurinol", "sertraline", "levothyroxine"),
        )
    dx = _fill_dx(r, ["E875", "N179", "I5022", "I110", "N183"], n_diagnoses(r, tier))
    inpatient = [
        InpatientOrder("calcium_gluc", 1.0),
        InpatientOrder("insulin_reg_iv", 1.2),
        InpatientOrder("dextrose50", 1.2),
        InpatientOrder("patiromer", 3, 50),
        InpatientOrder("spironolactone", 3, 30, hold_from=0, hold_n=1, status="Discontinued"),
        InpatientOrder("lisinopril", 3, 30, hold_from=0, hold_n=1, status="Discontinued"),
        InpatientOrder("furosemide_iv", 2, 60, status="Discontinued"),
        InpatientOrder("furosemide_po", 60),
    ]
    if with_kcl:
        inpatient.append(InpatientOrder("kcl", 3, 20, hold_from=0, hold_n=1, status="Discontinued"))
    inpatient += _continue(
        [m for m in home if m not in ("spironolactone", "lisinopril", "furosemide_po", "kcl")]
    )
    inpatient += _common_prn(r, los) + [InpatientOrder("heparin_sc", 4)]
    labs = {
        "k": (k0, k1, SHAPE_FAST, 0.1),
        "cr": (cr0, cr1, SHAPE_LINEAR, 0.06),
        "bun": (r.randint(34, 48), r.randint(24, 32), SHAPE_LINEAR, 1.5),
        "hco3": (r.randint(17, 20), r.randint(22, 25), SHAPE_LINEAR, 0.8),
        "na": (r.randint(133, 137), r.randint(136, 139), SHAPE_LINEAR, 1.0),
        "glu": (r.randint(110, 150), r.randint(95, 130), SHAPE_LINEAR, 8.0),
        "ntprobnp": (r.randint(900, 2200), 0, SHAPE_LINEAR, 0.0),
    }
    discharge = [m for m in home if m not in ("spironolactone", "kcl", "lisinopril")] + [
        "patiromer"
    ]
    return ArchetypeCase(
        "hyperkalemia_raas",
        tier,
        sex,
        age,
        weight,
        los,
        chief_complaint="Weakness; abnormal labs (potassium)",
        hpi=(
            f"{age} y/o with HFrEF and CKD on spironolactone 25 mg daily, lisinopril 20 mg daily and furosemide 40 mg daily"
            f"{' plus potassium chloride 20 mEq daily' if with_kcl else ''} sent in from clinic for potassium {k0} mEq/L "
            f"with generalized weakness. ECG with peaked T waves."
        ),
        course=(
            f"# Hyperkalemia: K {k0} on admission with peaked T waves; treated with IV calcium gluconate, insulin/dextrose, "
            f"patiromer and IV furosemide. Spironolactone and lisinopril held and stopped"
            f"{', potassium chloride stopped' if with_kcl else ''}. K {k1} at discharge. "
            f"# AKI on CKD: creatinine {cr0} -> {cr1}."
        ),
        diagnoses=dx,
        home_meds=home,
        inpatient=inpatient,
        discharge_meds=discharge,
        labs=labs,
        baseline={"k": 4.9, "cr": _r1(cr1 - 0.1), "bun": 28},
        panels=panels_for(tier, ("special",)),
        radiology=["cxr_clear", "us_renal", "echo_hfref"][:tier],
        discharge_condition=_CONDITION_INDEPENDENT,
        instructions="You were admitted with a dangerously high potassium level. STOP spironolactone and lisinopril until your heart and kidney doctors review them. Avoid salt substitutes and high-potassium foods (bananas, oranges, potatoes).",
        followup="PCP in 3 days for repeat potassium and creatinine. Cardiology in 2 weeks to review heart failure medications.",
        facts={
            "admission_potassium": k0,
            "discharge_potassium": k1,
            "admission_creatinine": cr0,
            "culprit_drugs": ["Spironolactone", "Lisinopril"]
            + (["Potassium Chloride"] if with_kcl else []),
            "on_potassium_supplement": with_kcl,
        },
        key_drug="furosemide_po",
        symptom_keys=("weakness", "palpitations"),
        pain_key="none",
        omr_bp=(124, 72),
    )


def htn_amlodipine_edema(r: random.Random, tier: int, sex: str) -> ArchetypeCase:
    age = r.randint(50, 78)
    weight = _r1(r.uniform(70, 112))
    sbp = r.randint(184, 206)
    los = tier_los(r, tier)
    hypok = r.random() < 0.4
    home = ["amlodipine", "hctz", "losartan", "atorvastatin"]
    if tier >= 2:
        home = _extra_home(
            r,
            home,
            4 + tier,
            ("aspirin", "pantoprazole", "sertraline", "levothyroxine", "gabapentin"),
        )
    dx = _fill_dx(r, ["I10", "R600"] + (["E876"] if hypok else []) + ["E785"], n_diagnoses(r, tier))
    inpatient = (
        [InpatientOrder("hydralazine", 1.5, 48, status="Discontinued")]
        + _continue(home)
        + _common_prn(r, los)
    )
    inpatient.append(InpatientOrder("heparin_sc", 4))
    k0 = _r1(r.uniform(3.0, 3.2)) if hypok else _r1(r.uniform(3.7, 4.3))
    labs = {
        "k": (k0, _r1(r.uniform(3.8, 4.2)), SHAPE_FAST, 0.1),
        "cr": (_r1(r.uniform(0.9, 1.2)), _r1(r.uniform(0.9, 1.1)), SHAPE_LINEAR, 0.04),
        "ntprobnp": (r.randint(60, 240), 0, SHAPE_LINEAR, 0.0),
        "alb": (_r1(r.uniform(3.8, 4.4)), _r1(r.uniform(3.7, 4.3)), SHAPE_LINEAR, 0.1),
        "tbili": (_r1(r.uniform(0.4, 0.9)), _r1(r.uniform(0.4, 0.9)), SHAPE_LINEAR, 0.05),
    }
    if hypok:
        inpatient.append(InpatientOrder("kcl", 2, 48, status="Discontinued"))
    return ArchetypeCase(
        "htn_amlodipine_edema",
        tier,
        sex,
        age,
        weight,
        los,
        chief_complaint="Headache, elevated blood pressure and leg swelling",
        hpi=(
            f"{age} y/o with long-standing hypertension on amlodipine 10 mg daily, losartan 50 mg daily and HCTZ 25 mg daily "
            f"presenting with headache and BP {sbp}/{r.randint(102, 118)} despite reported adherence. Reports 2 months of "
            "bilateral ankle swelling since amlodipine was increased to 10 mg."
        ),
        course=(
            "# Hypertensive urgency: no end-organ damage (troponin and creatinine stable, no papilledema); BP controlled with "
            "home regimen plus short course of hydralazine. # Bilateral ankle edema: normal NTproBNP and albumin, "
            "no DVT; most consistent with dihydropyridine calcium-channel-blocker edema."
        ),
        diagnoses=dx,
        home_meds=home,
        inpatient=inpatient,
        discharge_meds=home,
        labs=labs,
        baseline={"k": 3.9 if not hypok else 3.4, "cr": 1.0},
        panels=panels_for(tier, ("special",)),
        radiology=["cxr_clear", "us_le_venous", "echo_normal"][:tier],
        discharge_condition=_CONDITION_INDEPENDENT,
        instructions="You were admitted for very high blood pressure. Take all your blood pressure medicines every day and check your blood pressure at home twice daily. Your ankle swelling is likely a side effect of amlodipine; your doctor will review it.",
        followup="PCP in 1 week with home blood pressure log.",
        facts={
            "admission_sbp": sbp,
            "amlodipine_dose": "10 mg daily",
            "hypokalemia": hypok,
            "admission_potassium": k0,
        },
        key_drug="hctz",
        symptom_keys=("headache", "leg_swelling"),
        pain_key="headache",
        omr_bp=(r.randint(158, 172), r.randint(92, 102)),
    )


def pneumonia_sepsis(r: random.Random, tier: int, sex: str) -> ArchetypeCase:
    age = r.randint(55, 88)
    weight = _r1(r.uniform(55, 95))
    los = tier_los(r, tier) + (1 if tier == 3 else 0)
    septic = tier >= 2
    wbc0 = _r1(r.uniform(18.5, 24.5) if septic else r.uniform(14.0, 17.5))
    wbc1 = _r1(r.uniform(7.8, 10.4))
    lac0 = _r1(r.uniform(3.1, 4.4) if septic else r.uniform(2.1, 2.6))
    home = ["tiotropium", "albuterol", "atorvastatin", "lisinopril"]
    if tier >= 2:
        home = _extra_home(
            r,
            home,
            4 + tier,
            ("aspirin", "pantoprazole", "sertraline", "metoprolol_succ", "levothyroxine"),
        )
    sputum_pos = tier >= 2 or r.random() < 0.5
    core = (
        (["J13"] if sputum_pos or septic else ["J189"])
        + ["J449"]
        + (["A419", "R6520", "R7881", "N179", "J9601"] if septic else [])
    )
    dx = _fill_dx(
        r,
        core,
        n_diagnoses(r, tier) if not septic else max(n_diagnoses(r, tier), 6),
        avoid=("J449",),
    )
    if septic:
        abx = [
            InpatientOrder(
                "vancomycin",
                1.5,
                60,
                status="Discontinued",
                hold_from=2 if tier == 3 else -1,
                hold_n=1 if tier == 3 else 0,
            ),
            InpatientOrder("piptazo", 1.5, 60, status="Discontinued"),
            InpatientOrder("ceftriaxone", 62, 24 * (los - 1), status="Discontinued"),
            InpatientOrder("amoxclav", 24 * (los - 1)),
        ]
    else:
        abx = [
            InpatientOrder("ceftriaxone", 1.5, 24 * (los - 1), status="Discontinued"),
            InpatientOrder("azithromycin", 1.5, 24 * 3, status="Discontinued"),
            InpatientOrder("amoxclav", 24 * (los - 1)),
        ]
    inpatient = (
        abx
        + _continue(home, skip=("lisinopril",) if septic else ())
        + _common_prn(r, los)
        + [InpatientOrder("heparin_sc", 4)]
    )
    if septic:  # held for hypotension, resumed once blood pressure recovered
        inpatient.append(InpatientOrder("lisinopril", 24 * (los - 1)))
    labs = {
        "wbc": (wbc0, wbc1, SHAPE_FAST, 0.15),
        "lactate": (lac0, _r1(r.uniform(1.0, 1.5)), SHAPE_FAST, 0.08),
        "neut": (_r1(r.uniform(86, 92)), _r1(r.uniform(64, 72)), SHAPE_FAST, 1.0),
        "cr": (
            _r1(r.uniform(1.5, 2.1) if septic else r.uniform(0.9, 1.2)),
            _r1(r.uniform(0.9, 1.1)),
            SHAPE_FAST,
            0.05,
        ),
        "plt": (
            r.randint(118, 145) if septic else r.randint(190, 260),
            r.randint(190, 250),
            SHAPE_LINEAR,
            6.0,
        ),
        "tbili": (
            _r1(r.uniform(1.4, 2.1) if septic else r.uniform(0.5, 0.9)),
            _r1(r.uniform(0.5, 0.9)),
            SHAPE_FAST,
            0.05,
        ),
        "hco3": (
            r.randint(17, 20) if septic else r.randint(22, 25),
            r.randint(23, 26),
            SHAPE_FAST,
            0.8,
        ),
        "crp": (_r1(r.uniform(150, 260)), _r1(r.uniform(20, 45)), SHAPE_FAST, 5.0),
    }
    vitals = {
        "temp": (_r1(r.uniform(101.3, 102.8)), _r1(r.uniform(97.9, 98.8)), SHAPE_FAST, 0.3),
        "hr": (r.randint(112, 128), r.randint(76, 90), SHAPE_FAST, 3.0),
        "sbp": (r.randint(84, 94), r.randint(112, 128), SHAPE_FAST, 4.0),
        "dbp": (r.randint(46, 54), r.randint(62, 74), SHAPE_FAST, 3.0),
        "rr": (r.randint(26, 32), r.randint(16, 20), SHAPE_FAST, 1.0),
        "spo2": (r.randint(86, 90), r.randint(94, 97), SHAPE_FAST, 1.0),
    }
    # blood cultures drawn in the ED before admission (no hadm_id: the planner's rule for a
    # negative offset); a tier-3 patient's MRSA screen grows an oxacillin-resistant S. aureus
    micro: list[tuple[float, str, str | None]] = [
        (-1.0, "blood", "spneumo" if septic else None),
        (-0.9, "blood", None),
        (2.0, "sputum", "spneumo" if sputum_pos else None),
    ]
    if tier == 3:
        micro += [(26.0, "blood", None), (3.0, "urine", None), (5.0, "mrsa", "saureus")]
    abx_names = (
        ["Vancomycin", "Piperacillin-Tazobactam", "Ceftriaxone", "Amoxicillin-Clavulanate"]
        if septic
        else ["Ceftriaxone", "Azithromycin", "Amoxicillin-Clavulanate"]
    )
    return ArchetypeCase(
        "pneumonia_sepsis",
        tier,
        sex,
        age,
        weight,
        los,
        chief_complaint="Fever, productive cough and shortness of breath",
        hpi=(
            f"{age} y/o with COPD presenting with 3 days of fever, productive cough and dyspnea. In the ED T "
            f"{vitals['temp'][0]} F, HR {vitals['hr'][0]}, BP {vitals['sbp'][0]}/{vitals['dbp'][0]}, SpO2 {vitals['spo2'][0]}% on RA. "
            f"WBC {wbc0}, lactate {lac0}. CXR with right lower lobe consolidation. Blood cultures drawn and antibiotics started."
        ),
        course=(
            (
                "# Sepsis from right lower lobe pneumonia with S. pneumoniae bacteremia: admitted to MICU, received 30 mL/kg IV fluids, "
                "started on vancomycin and piperacillin-tazobactam, narrowed to ceftriaxone on hospital day 3 when blood cultures "
                "grew pan-sensitive Streptococcus pneumoniae; transitioned to oral amoxicillin-clavulanate to complete the course. "
            )
            if septic
            else "# Community-acquired pneumonia: treated with ceftriaxone and azithromycin, transitioned to oral amoxicillin-clavulanate. "
        )
        + f"WBC {wbc0} -> {wbc1}; lactate {lac0} -> normal."
        + (" Lisinopril held for hypotension and resumed before discharge." if septic else ""),
        diagnoses=dx,
        home_meds=home,
        inpatient=inpatient,
        discharge_meds=home + ["amoxclav"],
        labs=labs,
        baseline={"wbc": 7.4, "cr": 0.9, "plt": 230},
        panels=panels_for(tier, ("gas", "special")),
        radiology=["cxr_pna", "cxr_pna_followup", "ct_chest_pna"][:tier],
        vitals=vitals if septic else {},
        icu_unit="Medical Intensive Care Unit (MICU)" if septic else None,
        icu_days=2 if septic else 0,
        micro=micro,
        discharge_condition=_CONDITION_WITH_AID,
        instructions="You were treated for a serious lung infection (pneumonia). Finish all of your antibiotic pills (amoxicillin-clavulanate) even if you feel better. Return for fever over 101, worsening shortness of breath or confusion.",
        followup="PCP in 1 week. Repeat chest x-ray in 6-8 weeks to confirm resolution.",
        facts={
            "admission_wbc": wbc0,
            "discharge_wbc": wbc1,
            "admission_lactate": lac0,
            "septic": septic,
            "antibiotics": abx_names,
            "organism": "STREPTOCOCCUS PNEUMONIAE" if sputum_pos else None,
            "bacteremia": septic,
        },
        key_drug="tiotropium",
        symptom_keys=("cough", "shortness_of_breath", "fever"),
        pain_key="pleuritic",
        omr_bp=(128, 76),
    )


def cirrhosis_ascites(r: random.Random, tier: int, sex: str) -> ArchetypeCase:
    age = r.randint(44, 70)
    weight = _r1(r.uniform(64, 96))
    bili0, inr0, alb0 = _r1(r.uniform(2.4, 4.8)), _r1(r.uniform(1.6, 2.2)), _r1(r.uniform(2.4, 2.9))
    cr0, na0 = _r1(r.uniform(1.0, 1.6)), r.randint(127, 132)
    enceph = 2 if r.random() < 0.5 else 1
    los = tier_los(r, tier)
    home = ["spironolactone100", "furosemide_po", "lactulose", "rifaximin", "nadolol"]
    if tier >= 2:
        home = _extra_home(
            r, home, 5 + tier, ("thiamine", "folic", "pantoprazole", "multivitamin", "trazodone")
        )
    dx = _fill_dx(
        r,
        ["K7031", "K766", "R188", "E871", "D696", "F1020"]
        + (["I8510", "D689", "E119"] if tier == 3 else []),
        max(n_diagnoses(r, tier), 6),
        avoid=("E669",),
    )
    inpatient = (
        _continue(home)
        + [
            InpatientOrder("albumin25", 20),
            InpatientOrder("ceftriaxone", 6, 24 * 5, status="Discontinued"),
        ]
        + _common_prn(r, los)
    )
    if tier >= 2:
        inpatient.append(InpatientOrder("albumin25", 70))
    if tier == 3:  # diabetic: glucose monitoring with sliding-scale insulin
        inpatient.append(InpatientOrder("insulin_ss", 3))
    bili1, inr1, cr1, na1 = (
        _r1(bili0 - r.uniform(0.2, 0.6)),
        _r1(inr0 - 0.1),
        _r1(cr0 - 0.1),
        na0 + r.randint(1, 3),
    )
    labs = {
        "tbili": (bili0, bili1, SHAPE_LINEAR, 0.1),
        "inr": (inr0, inr1, SHAPE_LINEAR, 0.05),
        "alb": (alb0, _r1(alb0 + 0.2), SHAPE_LINEAR, 0.05),
        "cr": (cr0, cr1, SHAPE_LINEAR, 0.05),
        "na": (na0, na1, SHAPE_LINEAR, 1.0),
        "plt": (r.randint(58, 92), r.randint(60, 95), SHAPE_LINEAR, 4.0),
        "ast": (r.randint(70, 120), r.randint(55, 90), SHAPE_LINEAR, 4.0),
        "alt": (r.randint(36, 58), r.randint(30, 50), SHAPE_LINEAR, 3.0),
        "alp": (r.randint(125, 185), r.randint(120, 175), SHAPE_LINEAR, 5.0),
        "ammonia": (r.randint(72, 118), r.randint(40, 58), SHAPE_FAST, 5.0),
        "hgb": (_r1(r.uniform(9.8, 11.4)), _r1(r.uniform(9.6, 11.2)), SHAPE_LINEAR, 0.2),
        "pt": (_r1(10.8 * inr0), _r1(10.8 * inr1), SHAPE_LINEAR, 0.3),
    }
    m, mna = meld(bili0, inr0, cr0, na0)
    cp, cpc = child_pugh(bili0, alb0, inr0, 2, enceph)
    micro = [(8.0, "peritoneal", None)] if tier >= 2 else []
    if tier == 3:
        micro += [(1.0, "blood", None), (1.1, "blood", None)]
    return ArchetypeCase(
        "cirrhosis_ascites",
        tier,
        sex,
        age,
        weight,
        los,
        chief_complaint="Increasing abdominal distension and confusion",
        hpi=(
            f"{age} y/o with alcohol-associated cirrhosis complicated by ascites presenting with 2 weeks of increasing abdominal "
            f"girth and {'mild confusion' if enceph == 2 else 'fatigue'}. On spironolactone 100 mg and furosemide 40 mg daily, "
            "lactulose and rifaximin."
        ),
        course=(
            f"# Decompensated cirrhosis with ascites: diagnostic and therapeutic paracentesis (no SBP), albumin given. "
            f"MELD {m}, MELD-Na {mna}, Child-Pugh {cpc} ({cp} points) on admission. "
            f"# Hepatic encephalopathy: lactulose titrated to 3-4 BMs daily, rifaximin continued. # Hyponatremia: Na {na0} -> {na1}."
        ),
        diagnoses=dx,
        home_meds=home,
        inpatient=inpatient,
        discharge_meds=home,
        labs=labs,
        baseline={
            "tbili": _r1(bili0 - 0.8),
            "inr": _r1(inr0 - 0.2),
            "alb": _r1(alb0 + 0.3),
            "cr": 1.0,
            "na": 133,
            "plt": 90,
        },
        panels=panels_for(tier, ("lft", "coag")),
        radiology=["us_abd_cirrhosis", "us_paracentesis", "ct_abd_cirrhosis"][:tier],
        micro=micro,
        ward="Transplant",
        discharge_condition=_CONDITION_INDEPENDENT,
        instructions="You were admitted with fluid in your belly and confusion from your liver disease. Take lactulose so that you have 3-4 soft bowel movements a day. Limit salt to 2 grams a day and do not drink any alcohol. Weigh yourself every morning.",
        followup="Hepatology clinic in 1-2 weeks with labs. Outpatient paracentesis as needed.",
        facts={
            "meld": m,
            "meld_na": mna,
            "child_pugh_score": cp,
            "child_pugh_class": cpc,
            "admission_bilirubin": bili0,
            "admission_inr": inr0,
            "admission_albumin": alb0,
            "admission_creatinine": cr0,
            "admission_sodium": na0,
            "ascites": "moderate",
            "encephalopathy_points": enceph,
        },
        key_drug="lactulose",
        symptom_keys=("abdominal_swelling", "confusion"),
        pain_key="abdominal",
        omr_bp=(108, 64),
    )


def hf_discharge(r: random.Random, tier: int, sex: str) -> ArchetypeCase:
    age = r.randint(64, 90)
    w_adm = _r1(r.uniform(78, 112))
    loss = _r1(r.uniform(3.2, 6.5))
    w_dis = _r1(w_adm - loss)
    hfref = r.random() < 0.7
    ef = r.randint(20, 35) if hfref else r.randint(50, 60)
    bnp0, bnp1 = r.randint(4500, 12000), r.randint(1600, 3800)
    los = tier_los(r, tier)
    core_home = (
        ["furosemide_po", "carvedilol", "sacval", "spironolactone", "empagliflozin"]
        if hfref
        else ["furosemide_po", "metoprolol_succ", "losartan", "spironolactone", "empagliflozin"]
    )
    home = core_home + [
        "atorvastatin",
        "aspirin",
        "kcl",
        "apixaban5" if r.random() < 0.5 else "clopidogrel",
        "pantoprazole",
    ]
    home = _extra_home(
        r,
        home,
        {1: 10, 2: 14, 3: 17}[tier],
        # with CKD 3 coded, home gabapentin at 600 mg TID is above the label's 1400 mg/day
        # at a clearance of 30-59 (a real renal signal where the clearance is below 60)
        tuple(m if m != "gabapentin" else "gabapentin600" for m in CHRONIC_EXTRAS)
        + ("digoxin", "isosorbide", "allopurinol", "tamsulosin"),
    )
    n_dx = {1: r.randint(6, 7), 2: r.randint(13, 14), 3: r.randint(19, 21)}[tier]
    core_dx = [
        "I5023" if hfref else "I5033",
        "I130",
        "N183",
        "I4891",
        "E785",
        "R601",
        "E119",
        "Z7901" if "apixaban5" in home else "Z7902",
    ]
    dx = _fill_dx(r, core_dx, n_dx)
    inpatient = [
        InpatientOrder("furosemide_iv", 1.0, 24 * (los - 1), status="Discontinued"),
        InpatientOrder("torsemide", 24 * (los - 1)),
    ]
    inpatient += _continue([m for m in home if m != "furosemide_po"])
    extras = [
        "acetaminophen",
        "ns_flush",
        "docusate",
        "senna",
        "ondansetron",
        "melatonin",
        "peg",
        "insulin_ss",
        "mag_sulfate",
        "trazodone",
        "nicotine",
        "albuterol",
        "hydralazine",
        "isosorbide",
        "calcium_gluc",
        "multivitamin",
        "thiamine",
        "folic",
        "heparin_sc",
    ]
    target = {1: 11, 2: 21, 3: 32}[
        tier
    ]  # distinct drug names at the anchor admission (>= 10/20/30 + margin)
    names = {DRUGS[m].drug for m in home} | {DRUGS["furosemide_iv"].drug}
    prn = ("acetaminophen", "senna", "ondansetron", "melatonin", "peg", "trazodone", "albuterol")
    for i, d in enumerate(extras):
        if len(names) >= target and i >= 3:
            break
        if d == "heparin_sc" and "apixaban5" in home:
            continue
        if DRUGS[d].drug in names and i >= 3:
            continue
        stop = 72 if d in ("hydralazine", "calcium_gluc") else None
        inpatient.append(
            InpatientOrder(
                d,
                3 + i,
                stop,
                n_prn=r.randint(1, 2) if d in prn else 0,
                status="Discontinued" if stop else "",
            )
        )
        names.add(DRUGS[d].drug)
    k1 = _r1(r.uniform(3.5, 3.9))
    labs = {
        "ntprobnp": (bnp0, bnp1, SHAPE_LINEAR, 300.0),
        "cr": (_r1(r.uniform(1.3, 1.6)), _r1(r.uniform(1.4, 1.8)), SHAPE_LATE, 0.05),
        "k": (_r1(r.uniform(4.0, 4.5)), k1, SHAPE_LINEAR, 0.12),
        "na": (r.randint(131, 135), r.randint(134, 138), SHAPE_LINEAR, 1.0),
        "bun": (r.randint(28, 40), r.randint(36, 48), SHAPE_LINEAR, 1.5),
        "hgb": (_r1(r.uniform(10.8, 12.4)), _r1(r.uniform(10.6, 12.0)), SHAPE_LINEAR, 0.2),
        "trop": (0.04, 0.03, SHAPE_LINEAR, 0.0),
        "mg": (_r1(r.uniform(1.6, 1.8)), _r1(r.uniform(1.9, 2.2)), SHAPE_LINEAR, 0.05),
    }
    vitals = {
        "weight": (w_adm, w_dis, SHAPE_LINEAR, 0.3),
        "hr": (r.randint(92, 108), r.randint(68, 80), SHAPE_LINEAR, 3.0),
        "sbp": (r.randint(138, 156), r.randint(104, 118), SHAPE_LINEAR, 4.0),
        "dbp": (r.randint(78, 92), r.randint(60, 70), SHAPE_LINEAR, 3.0),
        "rr": (r.randint(22, 26), r.randint(16, 18), SHAPE_LINEAR, 1.0),
        "spo2": (r.randint(89, 92), r.randint(95, 97), SHAPE_LINEAR, 1.0),
    }
    disch_loc = r.choice(
        ["HOME", "HOME HEALTH CARE", "SKILLED NURSING FACILITY"]
        if tier > 1
        else ["HOME", "HOME HEALTH CARE"]
    )
    dis_meds = [m for m in home if m != "furosemide_po"] + ["torsemide"]
    return ArchetypeCase(
        "hf_discharge",
        tier,
        sex,
        age,
        w_dis,
        los,
        chief_complaint="Shortness of breath and leg swelling",
        hpi=(
            f"{age} y/o with {'HFrEF (EF ' + str(ef) + '%)' if hfref else 'HFpEF (EF ' + str(ef) + '%)'}, atrial fibrillation and CKD "
            f"presenting with 1 week of progressive dyspnea on exertion, orthopnea and bilateral leg swelling with a weight gain of "
            f"{_r1(loss + 1.0)} kg. NTproBNP {bnp0}."
        ),
        course=(
            f"# Acute on chronic {'systolic' if hfref else 'diastolic'} heart failure: diuresed with IV furosemide 40 mg BID, net negative. "
            f"Weight {w_adm} kg on admission -> {w_dis} kg at discharge (dry weight). NTproBNP {bnp0} -> {bnp1}. "
            "Transitioned to oral torsemide 20 mg daily. # CKD stage 3: creatinine mildly up with diuresis. "
            "# Electrolytes: potassium and magnesium repleted as needed during diuresis."
        ),
        diagnoses=dx,
        home_meds=home,
        inpatient=inpatient,
        discharge_meds=dis_meds,
        labs=labs,
        baseline={"ntprobnp": r.randint(900, 1800), "cr": 1.4, "k": 4.2, "na": 136},
        panels=panels_for(tier, ("special",)),
        radiology=["cxr_chf", "echo_hfref" if hfref else "echo_hfpef", "us_renal"][: max(1, tier)],
        vitals=vitals if tier >= 2 else {},
        icu_unit="Coronary Care Unit (CCU)" if tier >= 2 else None,
        icu_days=2 if tier >= 2 else 0,
        ward="Cardiology",
        discharge_location=disch_loc,
        discharge_condition=_CONDITION_WITH_AID,
        instructions=(
            f"You were admitted for a heart failure flare with extra fluid in your lungs and legs. Weigh yourself every morning; "
            f"your discharge (dry) weight is {w_dis} kg. Call your doctor if your weight goes up more than 1 kg in a day or 2 kg in a week. "
            "Limit salt to 2 grams and fluids to 1.5 liters per day. Your water pill was changed from furosemide to torsemide."
        ),
        followup="Heart failure clinic within 7 days with BMP. PCP in 2 weeks. Cardiology (electrophysiology) in 1 month.",
        facts={
            "admission_weight_kg": w_adm,
            "discharge_weight_kg": w_dis,
            "weight_loss_kg": _r1(w_adm - w_dis),
            "ef_percent": ef,
            "hfref": hfref,
            "admission_ntprobnp": bnp0,
            "discharge_ntprobnp": bnp1,
            "n_home_meds": len(home),
            "n_discharge_meds": len(dis_meds),
            "discharge_location": disch_loc,
            "discharge_potassium": k1,
        },
        key_drug="furosemide_po",
        symptom_keys=("shortness_of_breath", "leg_swelling"),
        pain_key="none",
        omr_bp=(132, 76),
        radiology_params={"ef": ef},
    )


BUILDERS = {
    "afib_apixaban": afib_apixaban,
    "ckd_metformin": ckd_metformin,
    "hyperkalemia_raas": hyperkalemia_raas,
    "htn_amlodipine_edema": htn_amlodipine_edema,
    "pneumonia_sepsis": pneumonia_sepsis,
    "cirrhosis_ascites": cirrhosis_ascites,
    "hf_discharge": hf_discharge,
}
SEX_FEMALE_P = {
    "afib_apixaban": 0.55,
    "ckd_metformin": 0.45,
    "hyperkalemia_raas": 0.4,
    "htn_amlodipine_edema": 0.55,
    "pneumonia_sepsis": 0.5,
    "cirrhosis_ascites": 0.35,
    "hf_discharge": 0.45,
}


def draw_case(r: random.Random, archetype: str, tier: int) -> ArchetypeCase:
    if archetype not in BUILDERS:
        raise ValueError(
            f"unknown archetype {archetype!r}; expected one of {', '.join(ARCHETYPES)}"
        )
    if tier not in (1, 2, 3):
        raise ValueError(f"tier must be 1, 2 or 3, got {tier!r}")
    sex = "F" if r.random() < SEX_FEMALE_P[archetype] else "M"
    return BUILDERS[archetype](r, tier, sex)
