"""Turn an archetype case into a full subject plan: demographics, admissions, lab draws and
series, vitals, orders, cultures, clinic (OMR) rows, transfers, notes, facts and the PHM."""

from __future__ import annotations

import random
from datetime import datetime

from physassist.synth import notes, phm
from physassist.synth.archetypes import (
    ARCHETYPES,
    ArchetypeCase,
    draw_case,
    mdrd,
)
from physassist.synth.catalog import DRUGS, LABS
from physassist.synth.plan import (
    DAY,
    HOUR,
    SHAPE_NOISY,
    Admission,
    Icu,
    Micro,
    Order,
    Series,
    SubjectPlan,
    to_seconds,
)

SUBJECT_BASE = 30_000_000
HADM_BASE = 50_000_000
STAY_BASE = 60_000_000

# Typical value (mean, sd) for items an archetype leaves unspecified.
NORMAL: dict[str, tuple[float, float]] = {
    "wbc": (7.2, 1.2),
    "hgb": (13.4, 0.8),
    "plt": (235, 35),
    "mcv": (90, 3),
    "rdw": (13.6, 0.6),
    "neut": (62, 5),
    "na": (139, 1.5),
    "k": (4.2, 0.25),
    "cl": (103, 2),
    "hco3": (25, 1.5),
    "bun": (16, 3),
    "cr": (0.9, 0.12),
    "glu": (108, 12),
    "ca": (9.2, 0.25),
    "mg": (2.0, 0.12),
    "phos": (3.5, 0.35),
    "ast": (24, 5),
    "alt": (22, 6),
    "alp": (78, 14),
    "tbili": (0.6, 0.15),
    "alb": (3.9, 0.25),
    "pt": (11.4, 0.5),
    "inr": (1.0, 0.05),
    "ptt": (30, 2.5),
    "lactate": (1.2, 0.25),
    "ntprobnp": (180, 60),
    "trop": (0.01, 0.0),
    "a1c": (5.6, 0.2),
    "crp": (3.0, 1.0),
    "ammonia": (30, 6),
}
FEMALE_SHIFT = {"hgb": -1.4, "cr": -0.15}

PANEL_ITEMS: dict[str, tuple[str, ...]] = {
    "chem": ("na", "k", "cl", "hco3", "ag", "bun", "cr", "glu", "ca"),
    "cbc": ("wbc", "hgb", "hct", "plt", "mcv", "rdw"),
    "diff": ("neut",),
    "lft": ("ast", "alt", "alp", "tbili", "alb"),
    "coag": ("pt", "inr", "ptt"),
}
DERIVED = ("ag", "hct", "egfr")  # computed from other items of the same draw
RENAL_DOSING = {"afib_apixaban", "ckd_metformin", "hyperkalemia_raas", "hf_discharge"}

RACES = (
    "WHITE",
    "WHITE",
    "WHITE",
    "BLACK/AFRICAN AMERICAN",
    "HISPANIC/LATINO - PUERTO RICAN",
    "ASIAN - CHINESE",
    "OTHER",
    "UNKNOWN",
    "WHITE - OTHER EUROPEAN",
    "ASIAN",
)
YEAR_GROUPS = ("2008 - 2010", "2011 - 2013", "2014 - 2016", "2017 - 2019", "2020 - 2022")
_PR = random.Random("physassist-synth:providers")
PROVIDERS = tuple(
    sorted(
        {
            "P" + "".join(_PR.choice("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5))
            for _ in range(120)
        }
    )
)


def subject_rng(seed: int, idx: int) -> random.Random:
    """Independent, reproducible stream per (seed, subject index); never the global RNG."""
    return random.Random(f"physassist-synth:{seed}:{idx}")


def assign(idx: int) -> tuple[str, int]:
    """Archetype and tier by index: every archetype x tier appears in each 21 subjects."""
    return ARCHETYPES[idx % len(ARCHETYPES)], (idx // len(ARCHETYPES)) % 3 + 1


def _normal(code: str, sex: str, r: random.Random) -> float:
    mean, sd = NORMAL[code]
    mean += FEMALE_SHIFT.get(code, 0.0) if sex == "F" else 0.0
    return round(r.gauss(mean, sd * 0.6), LABS[code].decimals)


def _derived_value(code: str, vals: dict[str, float], age: int, sex: str) -> float | None:
    if code == "ag" and {"na", "cl", "hco3"} <= vals.keys():
        return round(vals["na"] - vals["cl"] - vals["hco3"])
    if code == "hct" and "hgb" in vals:
        return round(vals["hgb"] * 3.0, 1)
    if code == "egfr" and "cr" in vals:
        return mdrd(vals["cr"], age, sex)
    return None


def _admission_labs(
    plan: SubjectPlan, case: ArchetypeCase, adm: Admission, r: random.Random
) -> None:
    """Morning draws through the stay; panel items and archetype trajectories on them."""
    first = len(plan.draws)
    plan.draws.append(adm.admit + r.randint(30, 90) * 60)
    plan.draw_priority.append("STAT")
    day0 = adm.admit - adm.admit % DAY
    t = day0 + DAY + 5 * HOUR
    while t < adm.disch:
        plan.draws.append(t + r.randint(0, 50) * 60)
        plan.draw_priority.append("ROUTINE")
        t += DAY
    n = len(plan.draws) - first
    items: list[tuple[str, int, int, int]] = []  # (code, first offset, stride, count)
    for panel in case.panels:
        stride = (
            2
            if panel in ("lft", "coag")
            and case.archetype not in ("cirrhosis_ascites", "afib_apixaban")
            else 1
        )
        cnt = (n + stride - 1) // stride
        for code in PANEL_ITEMS.get(panel, ()):
            items.append((code, 0, stride, cnt))
    if case.tier >= 2 and "chem" in case.panels:
        items += [("mg", 0, 1, n), ("phos", 0, 1, n)]
    if case.archetype in RENAL_DOSING:
        items.append(("egfr", 0, 1, n))
    have = {c for c, *_ in items}
    for code, (_s, end, _sh, _nz) in case.labs.items():
        if code in have:
            continue
        if code == "lactate":
            items.append((code, 0, 1, min(n, 2 + case.tier)))
        elif code in ("a1c",) or (code == "ntprobnp" and end == 0):
            items.append((code, 0, 1, 1))
        elif code == "ntprobnp":
            items.append((code, 0, max(1, n - 1), 2 if n > 1 else 1))
        elif code == "trop":
            items.append((code, 0, 1, min(2, n)))
        elif code in ("crp", "ammonia"):
            items.append((code, 0, 2, (n + 1) // 2))
        elif code == "pt":
            items.append((code, 0, 1, n))
        else:
            items.append((code, 0, 1, n))
        have.add(code)
    first_vals: dict[str, float] = {}
    last_vals: dict[str, float] = {}
    na_hco3 = _endpoint_values(case, plan.sex, r)
    for code, off, stride, cnt in items:
        if code in DERIVED:
            plan.series.append(Series(code, adm.hadm_id, first + off, stride, cnt, 0.0, 0.0))
            continue
        dec = LABS[code].decimals
        if code in case.labs:
            s, e, shape, noise = case.labs[code]
            e = s if e == 0 and code in ("a1c", "ntprobnp", "trop") and cnt == 1 else e
        elif code in na_hco3:
            s, e, shape, noise = na_hco3[code]
        else:
            s, e, shape, noise = (
                _normal(code, plan.sex, r),
                _normal(code, plan.sex, r),
                0,
                NORMAL[code][1] * 0.3,
            )
        s, e = round(float(s), dec), round(float(e), dec)
        plan.series.append(Series(code, adm.hadm_id, first + off, stride, cnt, s, e, shape, noise))
        first_vals[code] = s
        last_vals[code] = e if cnt > 1 else s
    for code, off, stride, _cnt in items:
        if code in DERIVED:
            last_ok = (n - 1 - off) % stride == 0
            v0 = _derived_value(code, first_vals, plan.age, plan.sex)
            v1 = _derived_value(code, last_vals, plan.age, plan.sex)
            if v0 is not None:
                first_vals[code] = v0
            if v1 is not None and last_ok:
                last_vals[code] = v1
    plan.facts["labs_admission"] = {LABS[c].label: v for c, v in first_vals.items()}
    plan.facts["labs_discharge"] = {LABS[c].label: v for c, v in last_vals.items()}
    plan.facts["lab_draws_anchor"] = n


def _endpoint_values(
    case: ArchetypeCase, sex: str, r: random.Random
) -> dict[str, tuple[float, float, int, float]]:
    """Na, HCO3 and Cl at admission/discharge with a plausible anion gap (chloride follows)."""
    out = {}
    for code in ("na", "hco3"):
        if code in case.labs:
            out[code] = case.labs[code]
        else:
            s, e = _normal(code, sex, r), _normal(code, sex, r)
            out[code] = (s, e, 0, NORMAL[code][1] * 0.3)
    gap0 = (
        17
        if case.archetype == "pneumonia_sepsis" and case.tier >= 2
        else 14
        if case.archetype in ("ckd_metformin", "hyperkalemia_raas")
        else 12
    )
    gap1 = 12
    s_cl = round(out["na"][0] - out["hco3"][0] - gap0 + r.choice((-1, 0, 1)))
    e_cl = round(out["na"][1] - out["hco3"][1] - gap1 + r.choice((-1, 0, 1)))
    out["cl"] = (s_cl, e_cl, 0, 1.0)
    return out


def _flat_labs(
    plan: SubjectPlan,
    case: ArchetypeCase,
    hadm_id: int,
    times: list[int],
    r: random.Random,
    panels: tuple[str, ...] = ("chem", "cbc"),
) -> None:
    """Baseline (stable, noisy) panels: outpatient visits and prior admissions."""
    first = len(plan.draws)
    plan.draws.extend(times)
    plan.draw_priority.extend(["ROUTINE"] * len(times))
    n = len(times)
    codes = [c for p in panels for c in PANEL_ITEMS[p]]
    if case.archetype in RENAL_DOSING:
        codes.append("egfr")
    for code in codes:
        if code in DERIVED:
            plan.series.append(Series(code, hadm_id, first, 1, n, 0.0, 0.0))
            continue
        dec = LABS[code].decimals
        base = case.baseline.get(code)
        if base is None and code == "cl":
            base = case.baseline.get("na", NORMAL["na"][0]) - NORMAL["hco3"][0] - 12
        if base is None:
            base = NORMAL[code][0] + (FEMALE_SHIFT.get(code, 0.0) if plan.sex == "F" else 0.0)
        sd = NORMAL[code][1] * 0.5
        v = round(float(base), dec)
        plan.series.append(Series(code, hadm_id, first, 1, n, v, v, SHAPE_NOISY, sd))


def _vitals(plan: SubjectPlan, case: ArchetypeCase, adm: Admission) -> None:
    icu = adm.icu
    if icu is None or not case.vitals:
        return
    first = len(plan.vtimes)
    t = icu.intime - icu.intime % HOUR + HOUR
    while t < icu.outtime:
        plan.vtimes.append(t)
        t += 4 * HOUR
    n = len(plan.vtimes) - first
    frac = (icu.outtime - icu.intime) / max(1, adm.disch - adm.admit)
    for code, (s, e, shape, noise) in case.vitals.items():
        if code == "weight":  # daily weights across the ICU part of the stay
            end = round(s + (e - s) * min(1.0, frac * 1.2), 1)
            plan.vseries.append(
                Series(code, adm.hadm_id, first, 6, (n + 5) // 6, s, end, 0, noise, icu.stay_id)
            )
        else:
            plan.vseries.append(
                Series(
                    code, adm.hadm_id, first, 1, n, float(s), float(e), shape, noise, icu.stay_id
                )
            )
    if "sbp" in case.vitals and "dbp" in case.vitals:
        plan.vseries.append(Series("mbp", adm.hadm_id, first, 1, n, 0.0, 0.0, 0, 0.0, icu.stay_id))
    if "temp" not in case.vitals:
        plan.vseries.append(
            Series("temp", adm.hadm_id, first, 3, (n + 2) // 3, 98.2, 98.4, 0, 0.3, icu.stay_id)
        )


def _orders(plan: SubjectPlan, case: ArchetypeCase, adm: Admission) -> None:
    for o in case.inpatient:
        start = adm.admit + int(o.start_h * HOUR)
        stop = adm.disch if o.stop_h is None else min(adm.disch, adm.admit + int(o.stop_h * HOUR))
        if start >= adm.disch:
            continue
        if stop <= start:
            stop = start + HOUR
        status = (
            "Discontinued via patient discharge"
            if stop >= adm.disch
            else (o.status or "Discontinued")
        )
        plan.orders.append(
            Order(o.drug, adm.hadm_id, start, stop, o.hold_from, o.hold_n, o.n_prn, status)
        )


def build_plan(idx: int, seed: int) -> SubjectPlan:
    archetype, tier = assign(idx)
    r = subject_rng(seed, idx)
    case = draw_case(r, archetype, tier)
    anchor_year = r.randint(2150, 2196)
    subject_id = SUBJECT_BASE + idx + 1
    height = round(r.gauss(176 if case.sex == "M" else 162, 6), 1)
    plan = SubjectPlan(
        idx=idx,
        subject_id=subject_id,
        archetype=archetype,
        tier=tier,
        sex=case.sex,
        age=case.age,
        anchor_year=anchor_year,
        anchor_year_group=r.choice(YEAR_GROUPS),
        race=r.choice(RACES),
        language="ENGLISH" if r.random() < 0.9 else "?",
        marital_status=r.choice(("MARRIED", "SINGLE", "WIDOWED", "DIVORCED")),
        insurance="Medicare" if case.age >= 65 else r.choice(("Other", "Medicaid")),
        height_cm=height,
        weight_kg=case.weight_kg,
    )
    # Anchor admission (the latest, as the reference pre-filter expects).
    year_start = to_seconds(datetime(anchor_year, 1, 1))
    admit = year_start + r.randint(60, 330) * DAY + r.randint(9 * 60, 22 * 60) * 60
    disch_day = admit - admit % DAY + case.los_days * DAY
    disch = disch_day + r.randint(11 * 60, 17 * 60) * 60
    anchor = Admission(
        HADM_BASE + idx * 4 + 1,
        admit,
        disch,
        case.admission_type,
        "EMERGENCY ROOM",
        case.discharge_location,
        True,
        list(case.diagnoses),
        case.ward,
        edreg=admit - r.randint(150, 420) * 60,
    )
    if case.icu_unit:
        intime = admit
        anchor.icu = Icu(
            STAY_BASE + idx * 2 + 1,
            case.icu_unit,
            intime,
            min(disch - 6 * HOUR, intime + case.icu_days * DAY + r.randint(0, 8) * HOUR),
        )
    # A prior, shorter admission gives tier 2-3 subjects history (and cross-admission trends).
    if tier >= 2:
        p_admit = admit - r.randint(150, 400) * DAY
        p_admit = p_admit - p_admit % DAY + r.randint(10 * 60, 20 * 60) * 60
        p_disch = p_admit - p_admit % DAY + r.randint(2, 3) * DAY + r.randint(11 * 60, 16 * 60) * 60
        chronic = [
            c
            for c in case.diagnoses
            if c not in ("E875", "N179", "R6520", "A419", "R7881", "J9601", "J13", "R600", "R601")
        ]
        prior = Admission(
            HADM_BASE + idx * 4,
            p_admit,
            p_disch,
            "URGENT",
            "PHYSICIAN REFERRAL",
            "HOME",
            False,
            chronic[: 3 + tier],
            case.ward,
            edreg=None,
        )
        plan.admissions.append(prior)
    plan.admissions.append(anchor)

    # Labs: outpatient baseline visits, the prior admission, the anchor admission, a follow-up draw.
    n_out = {1: 1, 2: 2, 3: 4}[tier]
    out_times = sorted(
        admit - (r.randint(30, 80) + 90 * k) * DAY + r.randint(8 * 60, 16 * 60) * 60 - (admit % DAY)
        for k in range(n_out)
    )
    _flat_labs(plan, case, 0, out_times, r)
    for adm in plan.admissions:
        if adm.anchor:
            _admission_labs(plan, case, adm, r)
        else:
            times = [adm.admit + 3600]
            t = adm.admit - adm.admit % DAY + DAY + 5 * HOUR
            while t < adm.disch:
                times.append(t + r.randint(0, 50) * 60)
                t += DAY
            _flat_labs(plan, case, adm.hadm_id, times, r, ("chem", "cbc"))
    if tier >= 2:  # after discharge: future data a strict cutoff must hide
        _flat_labs(
            plan, case, 0, [disch - disch % DAY + r.randint(7, 14) * DAY + 10 * HOUR], r, ("chem",)
        )

    _vitals(plan, case, anchor)
    plan.home_meds = list(case.home_meds)
    plan.discharge_meds = list(case.discharge_meds)
    for adm in plan.admissions:
        if adm.anchor:
            _orders(plan, case, adm)
        else:
            for m in case.home_meds[: 4 + tier]:
                plan.orders.append(
                    Order(
                        m,
                        adm.hadm_id,
                        adm.admit + 4 * HOUR,
                        adm.disch,
                        status="Discontinued via patient discharge",
                    )
                )
            plan.orders.append(Order("ns_flush", adm.hadm_id, adm.admit + 3 * HOUR, adm.disch))
    for off_h, spec, org in case.micro:  # drawn before admission: in the ED, without hadm_id
        plan.micro.append(
            Micro(anchor.hadm_id if off_h >= 0 else None, admit + int(off_h * HOUR), spec, org)
        )

    # Clinic rows (OMR): blood pressure, weight, BMI; one visit after discharge for tier >= 2.
    visits = out_times + ([disch - disch % DAY + r.randint(7, 14) * DAY] if tier >= 2 else [])
    w_lbs = case.weight_kg * 2.20462
    bmi = case.weight_kg / (height / 100) ** 2
    for i, v in enumerate(visits):
        day = v - v % DAY
        sbp = int(r.gauss(case.omr_bp[0], 5))
        dbp = int(r.gauss(case.omr_bp[1], 4))
        plan.omr.append((day, 1, "Blood Pressure", f"{sbp}/{dbp}"))
        plan.omr.append((day, 1, "Weight (Lbs)", f"{w_lbs + r.gauss(0, 1.5):.1f}"))
        plan.omr.append((day, 1, "BMI (kg/m2)", f"{bmi + r.gauss(0, 0.2):.1f}"))
        if i == 0:
            plan.omr.append((day, 1, "Height (Inches)", f"{height / 2.54:.0f}"))
    plan.omr.sort(key=lambda row: (row[0], row[2]))

    facts = dict(case.facts)
    facts.update(
        {
            "anchor_hadm_id": anchor.hadm_id,
            "current_date": notes.fmt_day(disch),
            "admittime": notes.fmt_ts(admit),
            "dischtime": notes.fmt_ts(disch),
            "n_diagnoses_anchor": len(anchor.diagnoses),
            "home_meds": [DRUGS[m].drug for m in case.home_meds],
            "discharge_meds": [DRUGS[m].drug for m in case.discharge_meds],
            "n_distinct_drugs_anchor": len(
                {DRUGS[o.drug].drug for o in plan.orders if o.hadm_id == anchor.hadm_id}
            ),
            "icu": case.icu_unit is not None,
            "key_drug": DRUGS[case.key_drug].drug if case.key_drug else None,
        }
    )
    plan.facts.update(facts)
    social = phm.social_for(plan, case, r)
    notes.add_notes(plan, case, r, social)
    plan.phm = phm.build_phm(plan, case, r, social)
    plan.facts["withheld_drug"] = next(
        (m["drug"] for m in plan.phm["medications"] if m.get("withheld")), None
    )
    plan.facts["persona"] = plan.phm["persona"]
    plan.facts["scenarios"] = list(qualifying_scenarios(plan))
    return plan


def qualifying_scenarios(plan: SubjectPlan) -> tuple[str, ...]:
    """Scenarios the subject's anchor admission is designed to support at its tier."""
    from physassist.synth.archetypes import ARCHETYPE_SCENARIOS

    return ARCHETYPE_SCENARIOS[plan.archetype]
