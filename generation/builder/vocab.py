"""Clinical vocabulary the builder relies on: lab names, organ systems, drug classes.

Kept as plain data so the prefilter SQL, the planner and the templates agree on one
spelling. Lab keys are MIMIC-IV ``d_labitems.label`` values (blood/serum items).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from physassist.timeline import order_word


@dataclass(frozen=True)
class Lab:
    """A lab the builder can ask about: its MIMIC-IV label and how clinicians say it."""

    label: str  # d_labitems.label, the tool's `code` argument
    en: str  # spoken English name ("BUN")
    zh: str  # Chinese name
    system: str  # organ system (prefilter's diagnostic-workup breadth rule)


#: The "system" of a drug level: no organ system, so the breadth rule leaves it out.
DRUG_LEVEL_SYSTEM = "drug level"


LABS: dict[str, Lab] = {
    lab.label: lab
    for lab in (
        Lab("Hemoglobin", "hemoglobin", "血红蛋白", "hematologic"),
        Lab("Hematocrit", "hematocrit", "红细胞压积", "hematologic"),
        Lab("Platelet Count", "platelet count", "血小板计数", "hematologic"),
        Lab("White Blood Cells", "white count", "白细胞计数", "inflammatory"),
        Lab("Creatinine", "creatinine", "肌酐", "renal"),
        Lab("Urea Nitrogen", "BUN", "尿素氮", "renal"),
        Lab("Alanine Aminotransferase (ALT)", "ALT", "丙氨酸氨基转移酶", "hepatic"),
        Lab("Asparate Aminotransferase (AST)", "AST", "天冬氨酸氨基转移酶", "hepatic"),
        Lab("Bilirubin, Total", "bilirubin", "总胆红素", "hepatic"),
        Lab("Albumin", "albumin", "白蛋白", "hepatic"),
        Lab("Alkaline Phosphatase", "alk phos", "碱性磷酸酶", "hepatic"),
        Lab("Sodium", "sodium", "钠", "metabolic"),
        Lab("Potassium", "potassium", "钾", "metabolic"),
        Lab("Chloride", "chloride", "氯", "metabolic"),
        Lab("Bicarbonate", "bicarb", "碳酸氢盐", "metabolic"),
        Lab("Glucose", "glucose", "血糖", "metabolic"),
        Lab("Magnesium", "magnesium", "镁", "metabolic"),
        Lab("Phosphate", "phosphate", "磷", "metabolic"),
        Lab("Calcium, Total", "calcium", "总钙", "metabolic"),
        Lab("Anion Gap", "anion gap", "阴离子间隙", "metabolic"),
        Lab("% Hemoglobin A1c", "A1c", "糖化血红蛋白", "metabolic"),
        Lab("INR(PT)", "INR", "国际标准化比值", "coagulation"),
        Lab("PT", "PT", "凝血酶原时间", "coagulation"),
        Lab("PTT", "PTT", "部分凝血活酶时间", "coagulation"),
        Lab("Fibrinogen, Functional", "fibrinogen", "纤维蛋白原", "coagulation"),
        Lab("Lactate", "lactate", "乳酸", "inflammatory"),
        Lab("C-Reactive Protein", "CRP", "C反应蛋白", "inflammatory"),
        Lab("Neutrophils", "neutrophil percentage", "中性粒细胞百分比", "inflammatory"),
        Lab("Troponin T", "troponin", "肌钙蛋白T", "cardiac"),
        Lab("Creatine Kinase (CK)", "CK", "肌酸激酶", "cardiac"),
        Lab("NTproBNP", "BNP", "N末端B型利钠肽原", "cardiac"),
        Lab("Lipase", "lipase", "脂肪酶", "hepatic"),
        Lab("Vancomycin", "vancomycin level", "万古霉素血药浓度", DRUG_LEVEL_SYSTEM),
        Lab("Digoxin", "digoxin level", "地高辛血药浓度", DRUG_LEVEL_SYSTEM),
        Lab("Phenytoin", "phenytoin level", "苯妥英血药浓度", DRUG_LEVEL_SYSTEM),
        Lab("tacroFK", "tacrolimus level", "他克莫司血药浓度", DRUG_LEVEL_SYSTEM),
    )
}


@dataclass(frozen=True)
class TrendRule:
    """When a lab's change between two values is a trend (:mod:`.trends`): a *clear* move is
    at least ``delta`` (absolute), or at least ``rel`` of the smaller value while also at least
    half of ``delta``; *no* move is under half of ``delta`` and under ``rel``, without crossing
    the reference range; anything between is a *slight* move, where "stable" and the direction
    are both fair words. ``delta`` is a clinical threshold where a guideline defines one, else
    clinical judgement above the analyte's reference change value; ``rel`` is at least its
    reference change value (RCV: the smallest difference between two results that analytical
    and within-person biological variation do not explain, 2.77 x sqrt(CVa^2 + CVi^2), from
    the CVi of the Westgard / EFLM biological variation database)."""

    delta: float
    rel: float
    source: str


_RCV = "RCV from the EFLM / Westgard biological variation database"
#: The one table of trend thresholds (a lab not in it gets no trend question).
TRENDS: dict[str, TrendRule] = {
    "Creatinine": TrendRule(0.3, 0.5, "KDIGO 2012 AKI: a rise of 0.3 mg/dL or 1.5x baseline"),
    "Urea Nitrogen": TrendRule(8.0, 0.35, f"clinical judgement; {_RCV} (CVi 12%) ~35%"),
    "Potassium": TrendRule(0.5, 0.14, f"clinical judgement; {_RCV} (CVi 4.6%) ~14%"),
    "Sodium": TrendRule(
        5.0,
        0.04,
        "clinical judgement (hyponatraemia correction is counted "
        f"in steps of 4-8 mmol/L, Spasovski 2014); {_RCV} ~3%",
    ),
    "Chloride": TrendRule(5.0, 0.05, f"clinical judgement; {_RCV} (CVi 1.2%) ~5%"),
    "Bicarbonate": TrendRule(4.0, 0.15, f"clinical judgement; {_RCV} (CVi 4.8%) ~15%"),
    "Glucose": TrendRule(
        40.0,
        0.5,
        "ADA 2024 inpatient targets span 140-180 mg/dL; inpatient "
        "glucose follows meals and dextrose, so half again of "
        f"its {_RCV} (~17%) x3",
    ),
    "Hemoglobin": TrendRule(
        1.0, 0.1, f"one red-cell unit raises it ~1 g/dL (AABB); {_RCV} (CVi 2.8%) ~9%"
    ),
    "Hematocrit": TrendRule(3.0, 0.1, f"one red-cell unit raises it ~3% (AABB); {_RCV} ~9%"),
    "Platelet Count": TrendRule(
        50.0, 0.3, f"the HIT 4T score counts falls of 30-50%; {_RCV} (CVi 9%) ~27%"
    ),
    "White Blood Cells": TrendRule(2.0, 0.3, f"clinical judgement; {_RCV} (CVi 11%) ~31%"),
    "Bilirubin, Total": TrendRule(1.0, 0.7, f"clinical judgement; {_RCV} (CVi 24%) ~68%"),
    "Albumin": TrendRule(0.5, 0.1, f"clinical judgement; {_RCV} (CVi 3%) ~10%"),
    "Magnesium": TrendRule(0.3, 0.12, f"clinical judgement; {_RCV} (CVi 3.6%) ~12%"),
    "Calcium, Total": TrendRule(0.5, 0.07, f"clinical judgement; {_RCV} (CVi 1.9%) ~7%"),
    "Phosphate": TrendRule(1.0, 0.25, f"clinical judgement; {_RCV} (CVi 8.5%) ~25%"),
    "INR(PT)": TrendRule(
        0.5,
        0.3,
        "half the width of the warfarin target range 2-3 (CHEST "
        "2012); 30% is above the PT's RCV (~13%)",
    ),
    "Lactate": TrendRule(
        1.0,
        0.3,
        "Surviving Sepsis Campaign 2021: re-measure when > 2 "
        "mmol/L and guide resuscitation by its fall",
    ),
    "Alanine Aminotransferase (ALT)": TrendRule(
        40.0, 0.55, f"clinical judgement; {_RCV} (CVi 19%) ~55%"
    ),
    "Asparate Aminotransferase (AST)": TrendRule(
        40.0, 0.4, f"clinical judgement; {_RCV} (CVi 12%) ~35%"
    ),
    "C-Reactive Protein": TrendRule(20.0, 1.2, f"clinical judgement; {_RCV} (CVi 42%) ~120%"),
    "Neutrophils": TrendRule(10.0, 0.2, "clinical judgement (percentage points)"),
}

#: A course has levelled off when its last this many values (two intervals of the daily
#: morning draw) lie within no clear move of each other after the furthest value since its
#: turn: the fewest draws that show a level course rather than one noisy pair (a physician's
#: "plateau after transfusion"; reviewer verdicts of issue 40).
PLATEAU_DRAWS = 3
#: The last days a physician reads a course's current direction from: the two most recent
#: daily draws (routine inpatient labs are drawn each morning), "rising over the last 2 days".
RECENT_COURSE_HOURS = 48.0

#: Labs a prescriber monitors (med_safety's base criterion).
MONITORING_LABS: tuple[str, ...] = (
    "Creatinine",
    "Potassium",
    "Glucose",
    "Urea Nitrogen",
    "INR(PT)",
    "% Hemoglobin A1c",
)
INFECTION_MARKERS: tuple[str, ...] = ("White Blood Cells", "Neutrophils", "Lactate")
#: The absolute neutrophil count's normal range, K/uL (x10^9/L): neutropenia below 1.5 (NCI
#: CTCAE v5 grade 2 and up; WHO), neutrophilia above 7.7 (the adult reference interval of
#: Dacie and Lewis, Practical Haematology). A percentage off its range with a normal count
#: (a lymphocytosis in CLL lowers it) is no finding of its own.
ANC_RANGE: tuple[float, float] = (1.5, 7.7)


@dataclass(frozen=True)
class DrugClass:
    """A drug category paired with the labs that decide whether it is safe to continue."""

    name: str
    en: str
    zh: str
    patterns: tuple[str, ...]  # lower-case substrings of prescriptions.drug
    labs: tuple[str, ...]  # monitoring labs, most decisive first (when unsafe: UNSAFE_WHEN)


DRUG_CLASSES: tuple[DrugClass, ...] = (
    DrugClass(
        "nephrotoxic",
        "nephrotoxic drug",
        "肾毒性药物",
        (
            "vancomycin",
            "gentamicin",
            "tobramycin",
            "amikacin",
            "ibuprofen",
            "ketorolac",
            "naproxen",
            "acyclovir",
        ),
        ("Creatinine", "Urea Nitrogen"),
    ),
    DrugClass(
        "acei_arb",
        "ACE inhibitor/ARB",
        "ACEI/ARB类药物",
        (
            "lisinopril",
            "enalapril",
            "captopril",
            "ramipril",
            "benazepril",
            "losartan",
            "valsartan",
            "irbesartan",
        ),
        ("Potassium", "Creatinine"),
    ),
    DrugClass(
        "diabetes",
        "glucose-lowering drug",
        "降糖药",
        ("insulin", "metformin", "glipizide", "glyburide", "glimepiride", "sitagliptin"),
        ("Glucose",),
    ),
    DrugClass(
        "diuretic",
        "diuretic/electrolyte drug",
        "利尿剂/电解质药物",
        (
            "furosemide",
            "torsemide",
            "bumetanide",
            "hydrochlorothiazide",
            "spironolactone",
            "potassium chloride",
        ),
        ("Potassium", "Sodium"),
    ),
    DrugClass("anticoagulant", "warfarin", "华法林", ("warfarin",), ("INR(PT)",)),
)

#: Antibiotic classes (treatment_response): class name -> lower-case name substrings.
ANTIBIOTIC_CLASSES: dict[str, tuple[str, ...]] = {
    "penicillin": ("piperacillin", "ampicillin", "amoxicillin", "nafcillin", "penicillin"),
    "cephalosporin": (
        "cefazolin",
        "ceftriaxone",
        "cefepime",
        "ceftazidime",
        "cefpodoxime",
        "cephalexin",
        "cefuroxime",
        "cefoxitin",
    ),
    "carbapenem": ("meropenem", "imipenem", "ertapenem"),
    "glycopeptide": ("vancomycin",),
    "aminoglycoside": ("gentamicin", "tobramycin", "amikacin"),
    "fluoroquinolone": ("ciprofloxacin", "levofloxacin", "moxifloxacin"),
    "macrolide": ("azithromycin", "erythromycin", "clarithromycin"),
    "nitroimidazole": ("metronidazole",),
    "other": ("sulfamethoxazole", "doxycycline", "clindamycin", "linezolid", "daptomycin"),
}

SEPSIS_ICD_PREFIXES: tuple[str, ...] = ("A40", "A41", "R652", "038", "99591", "99592", "78552")
PNEUMONIA_ICD_PREFIXES: tuple[str, ...] = (
    "J12",
    "J13",
    "J14",
    "J15",
    "J16",
    "J18",
    "480",
    "481",
    "482",
    "483",
    "485",
    "486",
)
CIRRHOSIS_ICD_PREFIXES: tuple[str, ...] = (
    "K703",
    "K717",
    "K743",
    "K744",
    "K745",
    "K746",
    "5712",
    "5715",
    "5716",
)


def drug_class_of(drug: str) -> DrugClass | None:
    """The monitored drug class a prescription name belongs to, if any."""
    low = drug.lower()
    for cls in DRUG_CLASSES:
        if any(p in low for p in cls.patterns):
            return cls
    return None


def antibiotic_class_of(drug: str) -> str | None:
    low = drug.lower()
    for cls, names in ANTIBIOTIC_CLASSES.items():
        if any(n in low for n in names):
            return cls
    return None


drug_word = order_word  # one definition: physassist.timeline

#: Words of a drug name that stay upper case when it is spoken (formulations, salts).
_KEEP_CASE = re.compile(r"^(XL|XR|ER|SR|CR|DR|EC|ODT|HCl|HCL|IR|LA|DS)$")
_STRENGTH = re.compile(r"^[\d.,/%]+[a-zA-Z%/]*$|^(mg|mcg|g|ml|units?)$", re.IGNORECASE)
MAX_NAME_WORDS = 4


def drug_spoken(drug: str) -> str:
    """A prescription's name as a physician says it: its own words, without parenthetical
    notes or strengths, cut at a word boundary ("Docusate Sodium (Liquid)" -> "docusate
    sodium", "LeVETiracetam" -> "levetiracetam", "Metoprolol Succinate XL" -> "metoprolol
    succinate XL"); never shortened to a bare first word ("Milk of Magnesia", not "Milk")."""
    text = re.sub(r"\([^)]*\)?", " ", drug)
    words = [w.strip(",;:") for w in text.split()]
    words = [w for w in words if w and not _STRENGTH.match(w)][:MAX_NAME_WORDS]
    return " ".join(w if _KEEP_CASE.match(w) else w.lower() for w in words) or drug.lower()


#: Concept synonyms per language for rubric checks. Every word the gold answers use for a
#: concept is among its synonyms (tests check the gold answers pass their own checks).
SYNONYMS: dict[str, dict[str, list[str]]] = {
    "high": {
        "en": ["high", "elevated", "above", "increased", "raised"],
        "zh": ["偏高", "升高", "高于", "增高"],
    },
    "low": {
        "en": ["low", "decreased", "below", "reduced", "depressed"],
        "zh": ["偏低", "降低", "低于", "减低"],
    },
    "normal": {
        "en": ["normal", "within range", "within normal limits", "unremarkable", "WNL"],
        "zh": ["正常"],
    },
    "abnormal": {
        "en": ["abnormal", "high", "low", "elevated", "decreased", "out of range"],
        "zh": ["异常", "偏高", "偏低"],
    },
    "rising": {
        "en": [
            "rising",
            "risen",
            "increasing",
            "increased",
            "trending up",
            "uptrending",
            "up-trending",
            "climbing",
            "went up",
            "gone up",
            "upward",
        ],
        "zh": ["上升", "升高", "增加", "上涨"],
    },
    "falling": {
        "en": [
            "falling",
            "fallen",
            "decreasing",
            "decreased",
            "trending down",
            "downtrending",
            "down-trending",
            "dropping",
            "dropped",
            "declining",
            "went down",
            "come down",
            "came down",
            "downward",
        ],
        "zh": ["下降", "降低", "减少", "回落"],
    },
    "stable": {
        "en": ["stable", "unchanged", "flat", "steady", "no significant change"],
        "zh": ["稳定", "无明显变化", "变化不大", "平稳"],
    },
    "improving": {"en": ["improving", "improved", "better", "resolving"], "zh": ["好转", "改善"]},
    "plateau": {
        "en": ["plateau", "plateaued", "levelled off", "leveled off", "recovered"],
        "zh": ["平台", "趋于平稳", "已恢复"],
    },
    "worsening": {
        "en": ["worsening", "worsened", "worse", "deteriorating"],
        "zh": ["恶化", "加重"],
    },
    "normalised": {
        "en": [
            "normalised",
            "normalized",
            "normalizing",
            "normalising",
            "back to normal",
            "back in range",
            "now normal",
        ],
        "zh": ["恢复正常", "正常化", "回到正常"],
    },
    "spurious": {
        "en": [
            "spurious",
            "artifact",
            "artefact",
            "erroneous",
            "contaminated",
            "contamination",
            "lab error",
            "repeat the draw",
            "redraw",
            "not real",
        ],
        "zh": ["虚假", "污染", "假性", "误差", "重抽", "重新采血"],
    },
    "subtherapeutic": {
        "en": [
            "subtherapeutic",
            "sub-therapeutic",
            "below target",
            "below the target",
            "below goal",
            "below the therapeutic",
        ],
        "zh": ["低于目标", "未达标", "低于治疗范围"],
    },
    "therapeutic": {
        "en": [
            "therapeutic",
            "in range",
            "within the target",
            "within target",
            "at goal",
            "on target",
        ],
        "zh": ["达标", "治疗范围内", "目标范围内"],
    },
    "supratherapeutic": {
        "en": [
            "supratherapeutic",
            "supra-therapeutic",
            "above target",
            "above the target",
            "above goal",
            "above the therapeutic",
        ],
        "zh": ["高于目标", "超出治疗范围", "超标"],
    },
    "prediabetes": {
        "en": ["prediabetes", "prediabetic", "pre-diabetes", "pre-diabetic"],
        "zh": ["糖尿病前期"],
    },
    "diabetes_range": {
        "en": [
            "diabetes range",
            "diabetic range",
            "consistent with diabetes",
            "diagnostic of diabetes",
        ],
        "zh": ["糖尿病范围", "达到糖尿病"],
    },
    "recheck": {
        "en": ["recheck", "re-check", "repeat", "monitor", "monitoring", "trend", "follow"],
        "zh": ["复查", "监测", "随访"],
    },
    "no_change": {
        "en": [
            "no change",
            "routine",
            "no action",
            "continue current",
            "monitoring",
            "not clinically significant",
            "minor",
        ],
        "zh": ["无需调整", "常规", "维持", "无需处理"],
    },
    "hold": {
        "en": [
            "hold",
            "holding",
            "reduce",
            "reducing",
            "lower the dose",
            "dose reduction",
            "stop",
            "pause",
            "discontinue",
        ],
        "zh": ["暂停", "停用", "减量", "停药", "停掉"],
    },
    "continue": {
        "en": ["continue", "continuing", "keep", "safe to continue", "can stay on"],
        "zh": ["继续", "可以继续", "维持"],
    },
    "stop_words": {"en": ["hold", "stop", "discontinue"], "zh": ["暂停", "停用", "停药"]},
    "unsafe_continue": {
        "en": ["safe to continue", "fine to continue"],
        "zh": ["可以继续", "继续使用安全"],
    },
    "responding": {
        "en": ["response", "responding", "working", "improving", "effective"],
        "zh": ["有效", "有反应", "好转", "治疗有效"],
    },
    "not_responding": {
        "en": [
            "not responding",
            "no response",
            "does not look like a response",
            "not working",
            "failing",
            "ineffective",
        ],
        "zh": ["无效", "无反应", "治疗无效"],
    },
    "unclear": {
        "en": ["unclear", "not yet clear", "too early", "uncertain", "equivocal"],
        "zh": ["尚不明确", "不明确", "为时尚早"],
    },
    "escalate": {
        "en": [
            "re-culture",
            "reculture",
            "repeat cultures",
            "broaden",
            "broadening",
            "escalate",
            "escalating",
            "change antibiotics",
        ],
        "zh": ["重新送培养", "扩大", "升级", "更换抗生素"],
    },
    "given": {
        "en": ["given", "administered", "last dose", "received", "charted"],
        "zh": ["给药", "已给", "已用", "记录"],
    },
    "principal": {
        "en": ["principal", "primary", "main", "first-listed", "admitting"],
        "zh": ["主要诊断", "主诊断", "首要"],
    },
    "confirm": {
        "en": [
            "ordered",
            "placed",
            "order placed",
            "submitted",
            "entered",
            "created",
            "renewed",
            "scheduled",
            "requested",
        ],
        "zh": ["已下", "已开", "已提交", "已创建", "已安排", "已申请"],
    },
    "flag": {"en": ["flag", "flagged", "alert"], "zh": ["标记", "警示"]},
    "adh_good": {
        "en": ["as prescribed", "takes it", "taking it", "every day", "adherent", "regularly"],
        "zh": ["按医嘱", "按时", "每天", "规律"],
    },
    "adh_stopped": {
        "en": ["stopped", "not taking", "discontinued", "quit", "skips", "skipped"],
        "zh": ["停药", "停了", "没吃", "没有吃", "不吃"],
    },
    "adh_forgets": {"en": ["forgets", "forgot", "misses", "missed", "skips"], "zh": ["忘"]},
    "adh_ran_out": {
        "en": ["ran out", "run out", "out of", "not taking", "refill"],
        "zh": ["用完", "吃完", "没有在吃", "没去拿药"],
    },
    "adh_not_good": {
        "en": ["stopped taking", "not taking", "ran out"],
        "zh": ["停药", "没有在吃", "用完"],
    },
    "adh_not_bad": {"en": ["as prescribed", "fully adherent"], "zh": ["按医嘱按时"]},
    "patient_source": {
        "en": [
            "patient reports",
            "reports",
            "says",
            "per the patient",
            "patient states",
            "according to the patient",
            "in the patient's words",
        ],
        "zh": ["患者自述", "自述", "患者表示", "患者说", "患者原话"],
    },
    "alone": {"en": ["alone", "by herself", "by himself"], "zh": ["独居", "一个人住"]},
    "spouse": {"en": ["spouse", "wife", "husband", "partner"], "zh": ["配偶", "老伴", "爱人"]},
    "device_none": {
        "en": ["without an aid", "without aid", "unaided", "no assistive device", "independently"],
        "zh": ["不用辅助", "无需辅助", "独立行走"],
    },
    "device_cane": {"en": ["cane"], "zh": ["拐杖"]},
    "device_walker": {"en": ["walker"], "zh": ["助行器"]},
    "falls_yes": {"en": ["fell", "a fall", "one fall"], "zh": ["摔倒过", "摔过", "跌倒过"]},
    "falls_no": {
        "en": ["no falls", "denies falls", "has not fallen"],
        "zh": ["没有摔倒", "无跌倒", "未跌倒"],
    },
    "smoking_never": {
        "en": ["never smoked", "non-smoker", "nonsmoker", "never smoker"],
        "zh": ["从不吸烟", "不吸烟"],
    },
    "smoking_former": {
        "en": ["former smoker", "ex-smoker", "quit smoking"],
        "zh": ["已戒烟", "戒烟"],
    },
    "smoking_current": {
        "en": ["current smoker", "smokes", "still smokes"],
        "zh": ["仍吸烟", "目前吸烟", "抽烟"],
    },
    "no_pain": {
        "en": ["denies pain", "no pain", "pain-free"],
        "zh": ["否认疼痛", "无疼痛", "没有疼痛"],
    },
    "rel_ok": {
        "en": ["as ordered", "reliably", "consistently", "no missed"],
        "zh": ["按医嘱给药", "按时", "无漏"],
    },
    "rel_missed": {
        "en": ["not given", "missed", "held", "skipped"],
        "zh": ["未给", "漏给", "暂停"],
    },
    "find_why": {"en": ["find out why", "why", "reason", "clarify"], "zh": ["查明原因", "原因"]},
    "med_change": {
        "en": ["dose changed", "medication changed", "stopped the", "started a new"],
        "zh": ["已改剂量", "已停用", "已换药"],
    },
    "duplicate": {
        "en": [
            "duplicate",
            "duplication",
            "duplicated",
            "two orders",
            "double",
            "overlapping",
            "both",
        ],
        "zh": ["重复", "两个", "重叠"],
    },
    "stop_one": {
        "en": [
            "stop the other",
            "stop one",
            "discontinue one",
            "discontinue the other",
            "which one is intended",
            "clarify",
            "confirm which",
            "stop",
        ],
        "zh": ["停用另一个", "停用其一", "确认", "停用"],
    },
    "no_duplicate": {
        "en": ["no duplication", "not a duplicate", "no duplicate"],
        "zh": ["没有重复", "不存在重复"],
    },
    "no_interaction": {
        "en": ["no interaction", "no significant interaction", "safe together"],
        "zh": ["没有相互作用", "无相互作用"],
    },
    "bridge_continue": {
        "en": ["continue the", "keep the", "until the INR", "not yet"],
        "zh": ["继续", "直到"],
    },
    "bridge_stop": {
        "en": ["stop the", "discontinue the", "can stop", "can come off", "24 hours"],
        "zh": ["停用", "可以停", "24 小时"],
    },
    "adjust": {
        "en": [
            "adjust",
            "renal dosing",
            "renally",
            "dose-adjust",
            "dose adjustment",
            "reduce the dose",
            "creatinine clearance",
            "CrCl",
            "kidney function",
        ],
        "zh": ["调整", "肾功能", "肌酐清除率", "减量"],
    },
    "raise": {
        "en": [
            "raise",
            "increase",
            "higher dose",
            "up-titrate",
            "shorten the interval",
            "below target",
            "subtherapeutic",
        ],
        "zh": ["增加", "加量", "缩短", "低于目标"],
    },
    # microbiology (issue 43): a culture not reported yet, flora of no clinical weight
    "pending": {
        "en": [
            "pending",
            "awaiting",
            "not yet reported",
            "not reported yet",
            "not yet final",
            "in progress",
            "no result yet",
        ],
        "zh": ["待回报", "尚未回报", "未出结果", "等待结果"],
    },
    # An isolate the laboratory's comment doubts (contamination, mixed flora, uncertain
    # significance: answers.doubt).
    "doubted": {
        "en": [
            "contaminat",
            "mixed flora",
            "mixed skin",
            "uncertain",
            "questionable",
            "not a true pathogen",
            "not a pathogen",
            "recollect",
            "repeat the culture",
        ],
        "zh": ["污染", "混合菌群", "意义不确定", "非病原", "重新留取"],
    },
    "commensal": {
        "en": [
            "commensal",
            "normal flora",
            "coloniz",
            "colonis",
            "contaminant",
            "contamination",
            "not a pathogen",
            "no pathogen",
        ],
        "zh": ["共生菌", "正常菌群", "定植", "污染"],
    },
}

#: Resistance (``physassist.ehr.tools.microbiology.RESISTANCE_NAMES``) -> words that name it.
RESISTANCE_WORDS: dict[str, dict[str, list[str]]] = {
    "MRSA": {
        "en": [
            "MRSA",
            "methicillin-resistant",
            "methicillin resistant",
            "oxacillin-resistant",
            "oxacillin resistant",
            "resistant to oxacillin",
        ],
        "zh": ["MRSA", "耐甲氧西林"],
    },
    "VRE": {
        "en": ["VRE", "vancomycin-resistant", "vancomycin resistant", "resistant to vancomycin"],
        "zh": ["VRE", "耐万古霉素"],
    },
    "CRE": {
        "en": ["CRE", "carbapenem-resistant", "carbapenem resistant", "resistant to meropenem"],
        "zh": ["CRE", "耐碳青霉烯"],
    },
    "carbapenem-resistant": {
        "en": [
            "carbapenem-resistant",
            "carbapenem resistant",
            "resistant to meropenem",
            "resistant to imipenem",
        ],
        "zh": ["耐碳青霉烯", "carbapenem-resistant"],
    },
    "ESBL": {"en": ["ESBL", "extended-spectrum", "extended spectrum"], "zh": ["ESBL", "超广谱"]},
    "3GC-R": {
        "en": [
            "third-generation cephalosporin",
            "resistant to ceftriaxone",
            "ceftriaxone-resistant",
            "ceftriaxone resistant",
            "AmpC",
        ],
        "zh": ["三代头孢", "头孢曲松耐药", "AmpC"],
    },
}

#: Routes as written in prescriptions -> words that name them (EN, ZH).
ROUTE_WORDS: dict[str, dict[str, list[str]]] = {
    "PO": {"en": ["PO", "oral", "orally", "by mouth"], "zh": ["口服", "PO"]},
    "NG": {"en": ["NG", "nasogastric", "per tube"], "zh": ["鼻饲", "胃管", "NG"]},
    "IV": {"en": ["IV", "intravenous", "intravenously"], "zh": ["静脉", "IV"]},
    "SC": {
        "en": ["SC", "SQ", "SUBQ", "subcutaneous", "subcutaneously", "subcut"],
        "zh": ["皮下", "SC"],
    },
    "IM": {"en": ["IM", "intramuscular"], "zh": ["肌注", "肌肉注射", "IM"]},
    "IH": {"en": ["IH", "inhaled", "inhalation", "INH"], "zh": ["吸入", "IH"]},
    "TP": {"en": ["TP", "topical", "topically"], "zh": ["外用", "TP"]},
    "PR": {"en": ["PR", "rectal", "rectally"], "zh": ["直肠", "PR"]},
}


@dataclass(frozen=True)
class Limit:
    """A clinical threshold: a value past it (above for "high", below for "low") means
    something a lab's reference range alone does not say."""

    value: float
    source: str

    def passed(self, value: float, direction: str) -> bool:
        return value > self.value if direction == "high" else value < self.value


@dataclass(frozen=True)
class Meaning:
    """What an abnormal lab direction suggests, for reasoning answers and their rubrics: said
    only when the value is also past ``limit``."""

    en: str
    zh: str
    en_syn: tuple[str, ...]
    zh_syn: tuple[str, ...]
    limit: Limit


# The one table of clinical thresholds. A lab's own reference range only makes a value "high"
# or "low" (the answers say so); naming a condition (MEANINGS) or calling a drug unsafe
# (UNSAFE_WHEN) needs the value past a documented clinical threshold, else it is left unsaid
# (a glucose of 120 above a range of 70-100 is not "hyperglycemia"; an INR of 1.2 is not a
# coagulopathy; a therapeutic INR of 2.5 does not make warfarin unsafe).
_CKD = Limit(
    1.5,
    "KDIGO 2012 defines kidney impairment by eGFR < 60 (CKD) or a rise of "
    "0.3 mg/dL / 1.5x (AKI); 1.5 mg/dL is eGFR < 60 from age 40 in either sex "
    "(CKD-EPI 2021)",
)
_RENAL = Meaning(
    "impaired kidney function", "肾功能受损", ("kidney", "renal", "AKI"), ("肾",), _CKD
)
_DILI = Limit(
    120.0,
    "3x the upper limit of normal (40 U/L): hepatocellular injury, FDA "
    "drug-induced liver injury guidance 2009",
)
_LIVER = Meaning("liver injury", "肝损伤", ("liver", "hepatic", "hepatocellular"), ("肝",), _DILI)
_ANEMIA = Limit(
    12.0, "WHO 2011: anaemia below 12 g/dL (non-pregnant women; 13 in men, so 12 holds for both)"
)
MEANINGS: dict[tuple[str, str], Meaning] = {
    # Urea nitrogen has none: a high BUN alone is prerenal, GI bleeding, catabolism or steroids
    # as often as kidney disease (KDIGO judges kidney function by creatinine and urine output).
    ("Creatinine", "high"): _RENAL,
    ("Potassium", "high"): Meaning(
        "hyperkalemia",
        "高钾血症",
        ("hyperkalemia", "hyperkalaemia", "high potassium"),
        ("高钾",),
        Limit(5.0, "KDIGO 2020 Controversies Conference on potassium: hyperkalemia > 5.0 mmol/L"),
    ),
    ("Potassium", "low"): Meaning(
        "hypokalemia",
        "低钾血症",
        ("hypokalemia", "hypokalaemia", "low potassium"),
        ("低钾",),
        Limit(3.5, "hypokalemia < 3.5 mmol/L (KDIGO 2020 Controversies Conference)"),
    ),
    ("Sodium", "high"): Meaning(
        "hypernatremia",
        "高钠血症",
        ("hypernatremia", "hypernatraemia"),
        ("高钠",),
        Limit(145.0, "hypernatremia > 145 mmol/L (Adrogue & Madias, NEJM 2000)"),
    ),
    ("Sodium", "low"): Meaning(
        "hyponatremia",
        "低钠血症",
        ("hyponatremia", "hyponatraemia"),
        ("低钠",),
        Limit(
            135.0,
            "hyponatraemia < 135 mmol/L (European clinical practice guideline, Spasovski 2014)",
        ),
    ),
    ("Glucose", "high"): Meaning(
        "hyperglycemia",
        "高血糖",
        ("hyperglycemia", "hyperglycaemia"),
        ("高血糖",),
        Limit(
            140.0,
            "ADA Standards of Care 2024, 16 (Diabetes Care in the Hospital): "
            "hospital hyperglycemia > 140 mg/dL; insulin for persistent > 180",
        ),
    ),
    ("Glucose", "low"): Meaning(
        "hypoglycemia",
        "低血糖",
        ("hypoglycemia", "hypoglycaemia"),
        ("低血糖",),
        Limit(70.0, "ADA Standards of Care 2024, 6: level 1 hypoglycemia < 70 mg/dL"),
    ),
    ("Hemoglobin", "low"): Meaning("anemia", "贫血", ("anemia", "anaemia"), ("贫血",), _ANEMIA),
    ("Hematocrit", "low"): Meaning(
        "anemia",
        "贫血",
        ("anemia", "anaemia"),
        ("贫血",),
        Limit(36.0, "3x the WHO haemoglobin threshold of 12 g/dL"),
    ),
    ("White Blood Cells", "high"): Meaning(
        "infection or inflammation",
        "感染或炎症",
        ("infection", "inflammation", "leukocytosis"),
        ("感染", "炎症"),
        Limit(12.0, "SIRS criterion WBC > 12 K/uL (ACCP/SCCM 1992)"),
    ),
    ("White Blood Cells", "low"): Meaning(
        "leukopenia",
        "白细胞减少",
        ("leukopenia",),
        ("白细胞减少",),
        Limit(4.0, "SIRS criterion WBC < 4 K/uL (ACCP/SCCM 1992)"),
    ),
    ("Platelet Count", "low"): Meaning(
        "thrombocytopenia",
        "血小板减少",
        ("thrombocytopenia",),
        ("血小板减少",),
        Limit(150.0, "thrombocytopenia < 150 K/uL (ASH; the ISTH DIC score's first step)"),
    ),
    # A high INR is anticoagulant effect or coagulopathy; "bleeding risk" alone misreads a
    # therapeutic warfarin INR.
    ("INR(PT)", "high"): Meaning(
        "anticoagulant effect or coagulopathy",
        "抗凝作用或凝血功能障碍",
        ("anticoagula", "coagulopathy", "prolonged"),
        ("抗凝", "凝血"),
        Limit(
            1.5,
            "INR >= 1.5: the coagulopathy of acute liver failure (AASLD 2011) and the "
            "usual procedural threshold",
        ),
    ),
    ("Lactate", "high"): Meaning(
        "hypoperfusion",
        "组织灌注不足",
        ("hypoperfusion", "perfusion", "sepsis"),
        ("灌注", "脓毒"),
        Limit(
            4.0,
            "Surviving Sepsis Campaign: lactate >= 4 mmol/L signals tissue hypoperfusion "
            "(30 mL/kg crystalloid); 2-4 is re-measured",
        ),
    ),
    ("Alanine Aminotransferase (ALT)", "high"): _LIVER,
    ("Asparate Aminotransferase (AST)", "high"): _LIVER,
    ("Bilirubin, Total", "high"): Meaning(
        "liver or biliary disease",
        "肝胆疾病",
        ("liver", "hepatic", "biliary", "cholestasis"),
        ("肝", "胆"),
        Limit(
            2.0,
            "2x the upper limit of normal (FDA DILI guidance 2009); "
            "jaundice is seen from about 2.5 mg/dL",
        ),
    ),
}

#: When a monitored drug is unsafe to continue as ordered: (drug name substrings, lab,
#: direction, threshold). A (drug, lab) pair not listed here is never "hold": potassium
#: chloride or spironolactone with a low potassium, a nephrotoxic drug with a high BUN.
_PATTERNS = {c.name: c.patterns for c in DRUG_CLASSES}
_LOOP_THIAZIDE = ("furosemide", "torsemide", "bumetanide", "hydrochlorothiazide")
UNSAFE_WHEN: tuple[tuple[tuple[str, ...], str, str, Limit], ...] = (
    (_PATTERNS["nephrotoxic"], "Creatinine", "high", _CKD),
    (
        _PATTERNS["acei_arb"],
        "Potassium",
        "high",
        Limit(5.5, "KDIGO 2021 blood pressure in CKD: reduce or stop RAS blockade at K > 5.5"),
    ),
    (
        ("spironolactone", "potassium chloride"),
        "Potassium",
        "high",
        Limit(
            5.0,
            "hyperkalemia > 5.0 mmol/L (KDIGO 2020): stop potassium supplements and "
            "potassium-sparing diuretics",
        ),
    ),
    (
        _PATTERNS["diabetes"],
        "Glucose",
        "low",
        Limit(70.0, "ADA 2024, 16: review the glucose-lowering regimen below 70 mg/dL"),
    ),
    (
        _LOOP_THIAZIDE,
        "Potassium",
        "low",
        Limit(
            3.0,
            "potassium < 3.0 mmol/L is moderate-to-severe hypokalemia: replete before "
            "more diuresis",
        ),
    ),
    (
        _LOOP_THIAZIDE,
        "Sodium",
        "low",
        Limit(
            130.0,
            "moderate hyponatraemia < 130 mmol/L (Spasovski 2014): stop diuretics that "
            "may cause it",
        ),
    ),
    (
        _PATTERNS["anticoagulant"],
        "INR(PT)",
        "high",
        Limit(
            3.0, "above the 2-3 target range (CHEST 2012 antithrombotic guideline): hold or reduce"
        ),
    ),
)


def unsafe(drug: str, label: str, value: float) -> bool:
    """Whether ``value`` of ``label`` makes ``drug`` unsafe to continue as ordered."""
    low = drug.lower()
    return any(
        label == lab and any(p in low for p in pats) and limit.passed(value, direction)
        for pats, lab, direction, limit in UNSAFE_WHEN
    )


#: Context that changes what a value means (:mod:`.interpret`). ICD codes are prefixes of
#: ``diagnoses_icd.icd_code`` (ICD-9 and ICD-10, no dots).
INR_TARGET = Limit(
    2.0,
    "target INR 2.0-3.0 on warfarin for most indications (CHEST 2012, "
    "Ageno et al.; Holbrook et al.)",
)
INR_TARGET_HIGH = Limit(3.0, "the upper end of the warfarin target range 2.0-3.0 (CHEST 2012)")
A1C_PREDIABETES = Limit(5.7, "ADA Standards of Care 2024, 2: prediabetes A1c 5.7-6.4%")
A1C_DIABETES = Limit(6.5, "ADA Standards of Care 2024, 2: diabetes A1c >= 6.5%")
ESRD_ICD_PREFIXES: tuple[str, ...] = (
    "N186",
    "5856",
    "Z992",
    "V4511",
    "Z4931",
    "Z4901",
    "V560",
)  # ESRD; dependence on or encounter for dialysis
#: Liver disease in which the INR itself is followed (cirrhosis, hepatic failure): the INR is
#: the synthetic-function marker of MELD (Kamath et al., Hepatology 2001) and defines acute
#: liver failure (AASLD position paper 2011); elsewhere, off a vitamin K antagonist, an INR
#: needs no repeat (a DOAC is not monitored by it: ACC Expert Consensus on DOAC bleeding 2020).
LIVER_FAILURE_ICD_PREFIXES: tuple[str, ...] = CIRRHOSIS_ICD_PREFIXES + (
    "K72",  # hepatic failure
    "5722",  # hepatic encephalopathy (ICD-9)
    "570",  # acute and subacute necrosis of liver (ICD-9)
)
#: Leukaemias, myelodysplastic and myeloproliferative neoplasms: the white count follows the
#: disease (and its cytoreduction) as much as any infection.
HEME_MALIGNANCY_ICD_PREFIXES: tuple[str, ...] = (
    "C91",
    "C92",
    "C93",
    "C94",
    "C95",
    "D45",
    "D46",
    "D471",
    "D473",
    "D474",
    "D475",
    "204",
    "205",
    "206",
    "207",
    "208",
    "2384",
    "2387",
)
#: Bone-marrow failure that is not a malignancy (aplastic anaemia, ICD-10 D61 / ICD-9 284): like
#: :data:`HEME_MALIGNANCY_ICD_PREFIXES`, a known cause of a chronic cytopenia.
MARROW_FAILURE_ICD_PREFIXES: tuple[str, ...] = ("D61", "284")
#: Lab -> the limit below which a cytopenia is severe (CTCAE grade 3 or worse). With a coded
#: marrow disease such a value is that disease's known course (interpret.marrow_cytopenia):
#: managed by transfusion thresholds and haematology follow-up, not worked up for a cause,
#: and small moves inside that band are no trend.
SEVERE_CYTOPENIA: dict[str, Limit] = {
    "Platelet Count": Limit(
        50.0, "NCI CTCAE v5.0: platelet count decreased grade 3 < 50,000/mm3 (50 K/uL)"
    ),
    "Hemoglobin": Limit(8.0, "NCI CTCAE v5.0: anemia grade 3, haemoglobin < 8.0 g/dL"),
    "White Blood Cells": Limit(
        2.0, "NCI CTCAE v5.0: white blood cell decreased grade 3 < 2,000/mm3 (2 K/uL)"
    ),
}
#: Drug words of anticoagulants (the INR's meaning on warfarin: :data:`INR_TARGET`).
WARFARIN = "warfarin"


# ----------------------------------------------------------------------------- safety signals
# What makes a medication-safety question worth asking (signals.py): each table keeps its source.


@dataclass(frozen=True)
class DrugLevel:
    """A drug monitored by its blood level: the lab label and the range a dose aims at."""

    lab: str  # d_labitems.label
    low: float
    high: float
    source: str


DRUG_LEVELS: dict[str, DrugLevel] = {
    "vancomycin": DrugLevel(
        "Vancomycin",
        10.0,
        20.0,
        "ASHP/IDSA/SIDP 2009 vancomycin "
        "monitoring: trough >= 10 mg/L, 15-20 for serious infections; "
        "troughs > 20 add nephrotoxicity",
    ),
    "digoxin": DrugLevel(
        "Digoxin", 0.5, 2.0, "digoxin FDA labelling: 0.5-2.0 ng/mL; toxicity is common above 2.0"
    ),
    "phenytoin": DrugLevel(
        "Phenytoin", 10.0, 20.0, "phenytoin FDA labelling: total level 10-20 mcg/mL"
    ),
    "tacrolimus": DrugLevel(
        "tacroFK",
        5.0,
        15.0,
        "tacrolimus FDA labelling (kidney transplant): whole-blood trough 5-15 ng/mL",
    ),
}


@dataclass(frozen=True)
class DuplicateClass:
    """Drugs of one class that are rarely meant to run together: two current orders of the
    class are a question."""

    name: str
    en: str
    zh: str
    words: tuple[str, ...]
    source: str


DUPLICATE_CLASSES: tuple[DuplicateClass, ...] = (
    DuplicateClass(
        "ppi",
        "proton pump inhibitor",
        "质子泵抑制剂",
        ("omeprazole", "pantoprazole", "esomeprazole", "lansoprazole"),
        "Beers / STOPP-START: no duplicate drug class",
    ),
    DuplicateClass(
        "beta_blocker",
        "beta-blocker",
        "β受体阻滞剂",
        ("metoprolol", "carvedilol", "atenolol", "labetalol", "propranolol", "bisoprolol"),
        "STOPP/START v2 (O'Mahony 2015): no duplicate drug class",
    ),
    DuplicateClass(
        "ras",
        "ACE inhibitor or ARB",
        "ACEI/ARB",
        (
            "lisinopril",
            "enalapril",
            "captopril",
            "ramipril",
            "benazepril",
            "losartan",
            "valsartan",
            "irbesartan",
        ),
        "ONTARGET 2008 and KDIGO 2021: no dual RAS blockade",
    ),
    DuplicateClass(
        "statin",
        "statin",
        "他汀",
        ("atorvastatin", "simvastatin", "rosuvastatin", "pravastatin"),
        "STOPP/START v2: no duplicate drug class",
    ),
    DuplicateClass(
        "calcium_blocker",
        "calcium channel blocker",
        "钙通道阻滞剂",
        ("diltiazem", "verapamil", "amlodipine", "nifedipine"),
        "STOPP/START v2: no duplicate drug class",
    ),
)
#: Parenteral anticoagulants that bridge warfarin until its INR is therapeutic (both current is
#: intended then), with the smallest daily dose that treats rather than prevents: enoxaparin
#: 1 mg/kg twice daily or 1.5 mg/kg daily (prophylaxis 40 mg daily or 30 mg twice daily),
#: fondaparinux 5-10 mg daily (prophylaxis 2.5 mg). Subcutaneous heparin 5000 units is
#: prophylaxis, never a bridge (a therapeutic heparin runs as an infusion).
BRIDGES: dict[str, float] = {"enoxaparin": 80.0, "fondaparinux": 5.0}
BRIDGE_SOURCE = (
    "CHEST 2012 (Ageno et al.; Douketis et al.): overlap parenteral "
    "anticoagulation with warfarin for >= 5 days and until the INR is >= 2 for 24 h"
)


@dataclass(frozen=True)
class Interaction:
    """Two drugs whose combination calls for an action, and which lab shows it."""

    first: tuple[str, ...]
    second: tuple[str, ...]
    en: str  # the effect
    zh: str
    action_en: str
    action_zh: str
    en_syn: tuple[str, ...]  # words that name the effect
    zh_syn: tuple[str, ...]
    source: str
    act_en: tuple[str, ...] = ("check", "monitor", "recheck", "reduce", "lower", "avoid")
    act_zh: tuple[str, ...] = ("复查", "监测", "减少", "减量", "避免")


_AZOLES_ETC = (
    "amiodarone",
    "fluconazole",
    "metronidazole",
    "sulfamethoxazole",
    "ciprofloxacin",
    "levofloxacin",
)
_RAS = (
    "lisinopril",
    "enalapril",
    "captopril",
    "ramipril",
    "benazepril",
    "losartan",
    "valsartan",
    "irbesartan",
)
INTERACTIONS: tuple[Interaction, ...] = (
    Interaction(
        ("warfarin",),
        _AZOLES_ETC,
        "a higher INR and bleeding risk",
        "INR 升高和出血风险",
        "check the INR within a few days and lower the warfarin dose if it rises",
        "几天内复查 INR，升高则减少华法林剂量",
        ("INR", "bleed", "potentiat", "anticoagulant effect"),
        ("INR", "出血"),
        "warfarin FDA labelling (CYP2C9 / CYP3A4 inhibitors raise the INR); "
        "Holbrook et al., Arch Intern Med 2005",
    ),
    Interaction(
        ("warfarin",),
        ("ibuprofen", "naproxen", "ketorolac"),
        "bleeding risk (NSAID with an anticoagulant)",
        "出血风险（NSAID 合用抗凝药）",
        "avoid the NSAID or add gastric protection and watch for bleeding",
        "避免使用 NSAID，或加用胃黏膜保护并监测出血",
        ("bleed", "hemorrhage", "haemorrhage"),
        ("出血",),
        "warfarin FDA labelling; ACCP 2012",
    ),
    Interaction(
        _RAS,
        ("spironolactone", "potassium chloride", "eplerenone", "sulfamethoxazole"),
        "hyperkalaemia",
        "高钾血症",
        "check the potassium and creatinine",
        "复查血钾和肌酐",
        ("hyperkal", "potassium"),
        ("高钾", "血钾"),
        "KDIGO 2020 potassium controversies; RALES 1999 follow-up (Juurlink NEJM 2004)",
    ),
    Interaction(
        ("simvastatin",),
        ("amiodarone", "diltiazem", "verapamil", "clarithromycin"),
        "statin myopathy",
        "他汀相关肌病",
        "keep simvastatin within the labelled limit (20 mg with amiodarone, 10 mg with "
        "diltiazem or verapamil) or switch statin",
        "将辛伐他汀控制在说明书限量内或换用其他他汀",
        ("myopathy", "rhabdomyolysis", "muscle"),
        ("肌病", "横纹肌溶解"),
        "FDA Drug Safety Communication 2011 (simvastatin dose limits)",
        ("limit", "switch", "reduce", "lower", "avoid"),
        ("限量", "换用", "减量", "避免"),
    ),
    Interaction(
        ("clopidogrel",),
        ("omeprazole", "esomeprazole"),
        "less clopidogrel effect (CYP2C19 inhibition)",
        "氯吡格雷疗效下降（CYP2C19 抑制）",
        "use pantoprazole instead",
        "改用泮托拉唑",
        ("CYP2C19", "less effective", "reduced", "antiplatelet effect"),
        ("CYP2C19", "疗效下降"),
        "FDA Drug Safety Communication 2009 / 2010",
        ("pantoprazole", "switch", "avoid", "instead"),
        ("泮托拉唑", "改用", "避免"),
    ),
    Interaction(
        ("linezolid",),
        (
            "sertraline",
            "citalopram",
            "escitalopram",
            "fluoxetine",
            "paroxetine",
            "venlafaxine",
            "duloxetine",
        ),
        "serotonin syndrome",
        "5-羟色胺综合征",
        "avoid the combination or watch for serotonin toxicity",
        "避免合用或监测 5-羟色胺毒性",
        ("serotonin",),
        ("5-羟色胺",),
        "FDA Drug Safety Communication 2011 (linezolid with serotonergic drugs)",
    ),
    Interaction(
        ("digoxin",),
        ("amiodarone",),
        "a doubled digoxin level",
        "地高辛血药浓度翻倍",
        "halve the digoxin dose and check its level",
        "地高辛减半并复查血药浓度",
        ("digoxin level", "toxicity", "doubl"),
        ("地高辛", "中毒"),
        "amiodarone FDA labelling (digoxin concentrations rise ~70-100%)",
    ),
)


# ----------------------------------------------------------------------------- treatments


@dataclass(frozen=True)
class Treatment:
    """A treatment and the lab that measures its effect: the value should move ``expect``
    (falling or rising) once it is given. A response is only asked where the value before the
    first dose was off in the direction the treatment corrects (a low potassium before
    potassium chloride; repletion of a normal value is maintenance, not a response)."""

    name: str
    words: tuple[str, ...]  # eMAR medication / ICU item label substrings
    lab: str
    expect: str
    source: str
    treated: float | None = None  # the value it treats past, when not the reference range

    @property
    def corrects(self) -> str:
        """The baseline status the treatment corrects: low for a rise, high for a fall."""
        return "low" if self.expect == "rising" else "high"


TREATMENTS: tuple[Treatment, ...] = (
    Treatment(
        "insulin",
        ("insulin",),
        "Glucose",
        "falling",
        "ADA 2024, 16: insulin for persistent hyperglycemia > 180 mg/dL",
        180.0,
    ),
    Treatment(
        "potassium",
        ("potassium chloride", "kcl"),
        "Potassium",
        "rising",
        "potassium repletion raises serum K ~0.1 mmol/L per 10 mEq (Kruse & Carlson 1990)",
    ),
    Treatment(
        "magnesium",
        ("magnesium sulfate",),
        "Magnesium",
        "rising",
        "magnesium sulfate repletion (ICU electrolyte protocols)",
    ),
    Treatment(
        "red cells",
        ("packed red blood cells", "red blood cells"),
        "Hemoglobin",
        "rising",
        "AABB 2023: transfuse below 7 g/dL; one unit raises haemoglobin ~1 g/dL",
        7.0,
    ),
    Treatment(
        "vasopressor",
        ("norepinephrine", "vasopressin", "phenylephrine", "epinephrine"),
        "Lactate",
        "falling",
        "Surviving Sepsis Campaign 2021: guide resuscitation by lactate clearance",
    ),
    Treatment(
        "bicarbonate",
        ("sodium bicarbonate",),
        "Bicarbonate",
        "rising",
        "sodium bicarbonate raises serum bicarbonate (metabolic acidosis therapy)",
    ),
    Treatment(
        "calcium",
        ("calcium gluconate", "calcium chloride"),
        "Calcium, Total",
        "rising",
        "calcium repletion",
    ),
    Treatment(
        "vitamin K",
        ("phytonadione",),
        "INR(PT)",
        "falling",
        "CHEST 2012: vitamin K lowers a supratherapeutic INR within 24-48 h",
    ),
)


#: A treatment runs at the session's reference moment when a dose was given within this many
#: hours of it (besides a current order): the longest routine inpatient dosing interval of the
#: treatments above (once daily: ceftriaxone, azithromycin, vancomycin by level) and a day's
#: grace for a late or held dose (eMAR dose times; Lexicomp/IDSA dosing intervals).
RUNNING_WITHIN_HOURS = 48.0
#: A marker value is what a round calls "now" when drawn within this many hours of the
#: session's reference moment: one of the last two daily morning draws (routine inpatient labs
#: are drawn each morning); an older one is cited with its date.
CURRENT_VALUE_HOURS = 48.0
#: A dose given within this many hours of the reference moment is still acting at it, even
#: when its order was closed that morning (pip-tazo given 7 h before discharge): the longest
#: routine dosing interval, once daily. A course whose last dose is older and whose order has
#: stopped (cefepime 32 h before discharge, stepped down to oral cefpodoxime) has ended.
ACTING_WITHIN_HOURS = 24.0
#: Imaging findings a report impression may name: EN term -> (EN synonyms, ZH synonyms).
FINDINGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "no significant change": (
        (
            "no significant interval change",
            "no interval change",
            "unchanged",
            "no significant change",
            "stable",
        ),
        ("无明显变化", "稳定", "无变化"),
    ),
    "PICC": (("PICC", "central line", "catheter"), ("PICC", "导管")),
    "consolidation": (("consolidation",), ("实变",)),
    "pneumonia": (("pneumonia",), ("肺炎",)),
    "effusion": (("effusion",), ("积液",)),
    "edema": (("edema", "oedema"), ("水肿",)),
    "cardiomegaly": (("cardiomegaly", "enlarged heart"), ("心脏增大", "心影增大")),
    "pneumothorax": (("pneumothorax",), ("气胸",)),
    "atelectasis": (("atelectasis",), ("肺不张",)),
    "hydronephrosis": (("hydronephrosis",), ("肾积水",)),
    "ascites": (("ascites",), ("腹水",)),
    "cirrhosis": (("cirrhosis", "cirrhotic"), ("肝硬化",)),
    "thrombosis": (("thrombosis", "thrombus", "DVT"), ("血栓",)),
    "ejection fraction": (("ejection fraction", "EF", "LVEF"), ("射血分数",)),
    "hemorrhage": (("hemorrhage", "bleed"), ("出血",)),
    "no acute": (("no acute", "unremarkable", "normal"), ("无急性", "未见异常")),
}

#: Words naming an imaging exam: a keyword of the exam line -> (EN, ZH) ways to say it.
EXAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "CHEST": (("chest", "CXR", "x-ray", "radiograph"), ("胸片", "胸部")),
    "ECHOCARDIOGRAM": (("echo", "echocardiogram", "TTE"), ("超声心动图", "心超")),
    "RENAL": (("renal", "kidney"), ("肾",)),
    "DUPLEX": (("duplex", "doppler", "ultrasound"), ("多普勒", "超声")),
    "VEINS": (("venous", "veins", "duplex", "doppler"), ("静脉",)),
    "PARACENTESIS": (("paracentesis",), ("穿刺",)),
    "HEAD": (("head",), ("头",)),
    "ABD": (("abdomen", "abdominal", "abd"), ("腹",)),
    "CT": (("CT",), ("CT",)),
}


# ------------------------------------------------------------------ renal dosing, rechecks
# A renally cleared drug is a safety question only when its daily dose exceeds the labelled
# maximum for the patient's kidney function (renal.py); a follow-up lab is dated by why it is
# repeated, and repeated only where it still means something (followup.py).


@dataclass(frozen=True)
class RenalDosing:
    """A drug's labelled maximum daily dose by kidney function: ``bands`` are (the lowest
    creatinine clearance in mL/min of the band, its maximum daily dose in ``unit``), highest
    band first; ``dialysis`` the maximum on haemodialysis (supplemental doses after dialysis
    included; 0 = not to be used), None where the label gives none."""

    unit: str
    bands: tuple[tuple[float, float], ...]
    dialysis: float | None
    source: str

    def maximum(self, crcl: float | None, on_dialysis: bool) -> float | None:
        """The labelled maximum daily dose at ``crcl`` (or on dialysis); None when unknown."""
        if on_dialysis:
            return self.dialysis
        if crcl is None:
            return None
        return next((most for low, most in self.bands if crcl >= low), None)


#: The renally cleared drugs a medication-safety session may ask about, by their FDA label's
#: renal dosing (the maximum of every labelled indication in the band, so that only a dose no
#: indication allows is a signal). A drug without an entry is never a renal signal.
RENAL_DOSING: dict[str, RenalDosing] = {
    "levetiracetam": RenalDosing(
        "mg",
        ((80, 3000), (50, 2000), (30, 1500), (0, 1000)),
        1500,
        "Keppra FDA label 2.6: CrCl >80 500-1500 mg q12h; 50-80 500-1000 q12h; 30-50 "
        "250-750 q12h; <30 250-500 q12h; ESRD on dialysis 500-1000 mg q24h plus 250-500 mg "
        "after dialysis",
    ),
    "pregabalin": RenalDosing(
        "mg",
        ((60, 600), (30, 300), (15, 150), (0, 75)),
        225,
        "Lyrica FDA label 2.5 table 3: CrCl >=60 150-600 mg/day; 30-60 75-300; 15-30 25-150; "
        "<15 25-75; haemodialysis: the CrCl <15 dose plus a supplemental dose of up to 150 mg",
    ),
    "gabapentin": RenalDosing(
        "mg",
        ((60, 3600), (30, 1400), (15, 700), (0, 300)),
        650,
        "Neurontin FDA label 2.4 table 1: CrCl >=60 900-3600 mg/day; 30-59 400-1400; 15-29 "
        "200-700; <15 100-300; haemodialysis: plus 125-350 mg after each 4 h session",
    ),
    "famotidine": RenalDosing(
        "mg",
        ((60, 80), (30, 40), (0, 20)),
        20,
        "Pepcid FDA label 2.2 table 2: CrCl 30-60 at most 20 mg daily (40 mg for erosive "
        "oesophagitis), <30 at most 20 mg daily or every other day; usual 20-40 mg twice daily",
    ),
    "ranitidine": RenalDosing(
        "mg",
        ((50, 600), (0, 150)),
        150,
        "Zantac FDA label, dosage in renal impairment: CrCl <50 150 mg every 24 h (adjust "
        "the schedule to follow dialysis)",
    ),
    "allopurinol": RenalDosing(
        "mg",
        ((20, 800), (10, 200), (0, 100)),
        100,
        "Zyloprim FDA label, dosage: CrCl 10-20 200 mg/day; <10 at most 100 mg/day; "
        "haemodialysis as CrCl <10, given after dialysis",
    ),
    "valacyclovir": RenalDosing(
        "mg",
        ((50, 3000), (30, 2000), (10, 1000), (0, 500)),
        500,
        "Valtrex FDA label 2.5 table 1: CrCl 30-49 1 g q12h; 10-29 1 g q24h; <10 500 mg q24h; "
        "haemodialysis dosed after dialysis as CrCl <10",
    ),
    "metformin": RenalDosing(
        "mg",
        ((30, 2550), (0, 0)),
        0,
        "Glucophage FDA label 2.3 / 4: contraindicated with eGFR <30 mL/min/1.73 m2 "
        "(and on dialysis); maximum 2550 mg/day",
    ),
    "ciprofloxacin": RenalDosing(
        "mg",
        ((50, 1500), (30, 1000), (0, 667)),
        500,
        "Cipro tablets FDA label 2.3: CrCl 30-50 250-500 mg q12h; 5-29 250-500 mg q18h; "
        "haemodialysis 250-500 mg q24h after dialysis",
    ),
    "levofloxacin": RenalDosing(
        "mg",
        ((50, 750), (20, 375), (0, 250)),
        250,
        "Levaquin FDA label 2.3 table 2: CrCl 20-49 750 mg q48h; 10-19 500 mg q48h after "
        "750 mg; haemodialysis 500 mg q48h after 750 mg",
    ),
    "cefepime": RenalDosing(
        "mg",
        ((60, 6000), (30, 4000), (11, 2000), (0, 1000)),
        1000,
        "Maxipime FDA label 2.3 table 2: CrCl 30-60 2 g q12h; 11-29 2 g q24h; <11 1 g q24h; "
        "haemodialysis 1 g on day 1 then 1 g q24h",
    ),
    "tramadol": RenalDosing(
        "mg",
        ((30, 400), (0, 200)),
        200,
        "Ultram FDA label 2.5: CrCl <30 every 12 h, at most 200 mg/day (dialysis patients "
        "may take the regular dose on dialysis days)",
    ),
    "fondaparinux": RenalDosing(
        "mg",
        ((30, 10), (0, 0)),
        0,
        "Arixtra FDA label 4: contraindicated with CrCl <30 mL/min",
    ),
    "dabigatran": RenalDosing(
        "mg",
        ((30, 300), (15, 150), (0, 0)),
        0,
        "Pradaxa FDA label 2.3: CrCl 15-30 75 mg twice daily; <15 or on dialysis: no dose",
    ),
}
#: Kidney function for drug dosing is the Cockcroft-Gault creatinine clearance, as the labels
#: above state it; in end-stage renal disease on dialysis it means nothing (dialysis clears).
COCKCROFT_GAULT = (
    "Cockcroft & Gault 1976: CrCl = (140 - age) x weight (kg) / (72 x serum creatinine), "
    "x 0.85 for women; the FDA renal-dosing guidance (2020) labels use it"
)
#: A creatinine for dosing is at most this many days older than the session cutoff.
DOSING_CREATININE_DAYS = 3


@dataclass(frozen=True)
class RecheckInterval:
    """When a repeat lab falls after discharge, by why it is repeated: the gold's day
    (``days`` after the session date) and the window a physician accepts (``earliest`` to
    ``latest`` days)."""

    days: int
    earliest: int
    latest: int
    source: str


RECHECK_INTERVALS: dict[str, RecheckInterval] = {
    "inr_bridge": RecheckInterval(
        2,
        1,
        3,
        "CHEST 2012 (Holbrook et al.; Ageno et al.): during a parenteral bridge the INR is "
        "checked every 1-3 days, the bridge stops once it is >= 2 for 24 h",
    ),
    "inr_warfarin": RecheckInterval(
        3,
        2,
        5,
        "CHEST 2012 (Ageno et al.): in the first week of warfarin the INR is checked every "
        "few days until two values are in range",
    ),
    "dialysis": RecheckInterval(
        2,
        1,
        3,
        "KDOQI haemodialysis adequacy 2015: thrice-weekly dialysis; potassium and other "
        "dialysed solutes are drawn with the next session, within 2-3 days",
    ),
    "follow_up": RecheckInterval(
        7,
        5,
        9,
        "a post-discharge visit within 7 days (Hernandez et al., JAMA 2010; TCM 7-14 days)",
    ),
}
#: Labs dialysis sets in end-stage renal disease: repeated with the next session.
DIALYSIS_LABS: tuple[str, ...] = ("Potassium", "Phosphate", "Bicarbonate", "Sodium")
#: A lab last drawn this many days before the session date is no longer followed: the team
#: stopped measuring it, so a repeat after discharge has no question behind it (a lone
#: neutrophil % four days old, a peri-procedural fibrinogen a week old).
STALE_DAYS = 3
