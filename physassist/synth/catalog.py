"""Reference vocabulary for the synthetic cohort: real MIMIC-IV item ids, labels, units and
reference ranges, real ICD-10-CM codes and titles, and a drug formulary.

Ids, labels, fluids, categories, units and ranges are the ones MIMIC-IV uses (checked against
the open MIMIC-IV demo dictionaries), so tools and label matching behave on the synthetic cohort
as they do on MIMIC-IV. Sex-specific ranges follow the ranges MIMIC-IV reports for each sex.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabItem:
    """One `d_labitems` row plus how labevents report it (unit, range, rounding)."""

    code: str
    itemid: int
    label: str
    fluid: str
    category: str
    unit: str | None
    lo: float | None
    hi: float | None
    decimals: int
    lo_f: float | None = None  # female range when it differs
    hi_f: float | None = None
    panel: str = "chem"  # specimens are shared within a panel at one draw

    def ref_range(self, sex: str) -> tuple[float | None, float | None]:
        if sex == "F" and self.lo_f is not None:
            return self.lo_f, self.hi_f
        return self.lo, self.hi


_LABS = [
    # hematology (CBC)
    LabItem("wbc", 51301, "White Blood Cells", "Blood", "Hematology", "K/uL", 4.0, 11.0, 1, panel="cbc"),
    LabItem("hgb", 51222, "Hemoglobin", "Blood", "Hematology", "g/dL", 13.7, 17.5, 1, 11.2, 15.7, panel="cbc"),
    LabItem("hct", 51221, "Hematocrit", "Blood", "Hematology", "%", 40.0, 51.0, 1, 34.0, 45.0, panel="cbc"),
    LabItem("plt", 51265, "Platelet Count", "Blood", "Hematology", "K/uL", 150.0, 440.0, 0, panel="cbc"),
    LabItem("mcv", 51250, "MCV", "Blood", "Hematology", "fL", 82.0, 98.0, 0, panel="cbc"),
    LabItem("rdw", 51277, "RDW", "Blood", "Hematology", "%", 10.5, 15.5, 1, panel="cbc"),
    LabItem("neut", 51256, "Neutrophils", "Blood", "Hematology", "%", 34.0, 71.0, 1, panel="diff"),
    # basic metabolic panel
    LabItem("na", 50983, "Sodium", "Blood", "Chemistry", "mEq/L", 133.0, 145.0, 0),
    LabItem("k", 50971, "Potassium", "Blood", "Chemistry", "mEq/L", 3.3, 5.1, 1),
    LabItem("cl", 50902, "Chloride", "Blood", "Chemistry", "mEq/L", 96.0, 108.0, 0),
    LabItem("hco3", 50882, "Bicarbonate", "Blood", "Chemistry", "mEq/L", 22.0, 32.0, 0),
    LabItem("ag", 50868, "Anion Gap", "Blood", "Chemistry", "mEq/L", 8.0, 20.0, 0),
    LabItem("bun", 51006, "Urea Nitrogen", "Blood", "Chemistry", "mg/dL", 6.0, 20.0, 0),
    LabItem("cr", 50912, "Creatinine", "Blood", "Chemistry", "mg/dL", 0.5, 1.2, 1, 0.4, 1.1),
    LabItem("glu", 50931, "Glucose", "Blood", "Chemistry", "mg/dL", 70.0, 100.0, 0),
    LabItem("egfr", 50920, "Estimated GFR (MDRD equation)", "Blood", "Chemistry", "mL/min/1.73 m2", None, None, 0),
    LabItem("ca", 50893, "Calcium, Total", "Blood", "Chemistry", "mg/dL", 8.4, 10.3, 1),
    LabItem("mg", 50960, "Magnesium", "Blood", "Chemistry", "mg/dL", 1.6, 2.6, 1),
    LabItem("phos", 50970, "Phosphate", "Blood", "Chemistry", "mg/dL", 2.7, 4.5, 1),
    # liver panel
    LabItem("ast", 50878, "Asparate Aminotransferase (AST)", "Blood", "Chemistry", "IU/L", 0.0, 40.0, 0, panel="lft"),
    LabItem("alt", 50861, "Alanine Aminotransferase (ALT)", "Blood", "Chemistry", "IU/L", 0.0, 40.0, 0, panel="lft"),
    LabItem("alp", 50863, "Alkaline Phosphatase", "Blood", "Chemistry", "IU/L", 35.0, 105.0, 0, panel="lft"),
    LabItem("tbili", 50885, "Bilirubin, Total", "Blood", "Chemistry", "mg/dL", 0.0, 1.5, 1, panel="lft"),
    LabItem("alb", 50862, "Albumin", "Blood", "Chemistry", "g/dL", 3.5, 5.2, 1, panel="lft"),
    LabItem("ammonia", 50866, "Ammonia", "Blood", "Chemistry", "umol/L", 10.0, 60.0, 0, panel="lft"),
    # coagulation
    LabItem("pt", 51274, "PT", "Blood", "Hematology", "sec", 9.4, 12.5, 1, panel="coag"),
    LabItem("inr", 51237, "INR(PT)", "Blood", "Hematology", None, 0.9, 1.1, 1, panel="coag"),
    LabItem("ptt", 51275, "PTT", "Blood", "Hematology", "sec", 25.0, 36.5, 1, panel="coag"),
    # inflammatory / infection
    LabItem("lactate", 50813, "Lactate", "Blood", "Blood Gas", "mmol/L", 0.5, 2.0, 1, panel="gas"),
    LabItem("crp", 50889, "C-Reactive Protein", "Blood", "Chemistry", "mg/L", 0.0, 5.0, 1, panel="special"),
    # cardiac / endocrine
    LabItem("ntprobnp", 50963, "NTproBNP", "Blood", "Chemistry", "pg/mL", 0.0, 353.0, 0, panel="special"),
    LabItem("trop", 51003, "Troponin T", "Blood", "Chemistry", "ng/mL", 0.0, 0.01, 2, panel="special"),
    LabItem("a1c", 50852, "% Hemoglobin A1c", "Blood", "Chemistry", "%", 4.0, 6.0, 1, panel="special"),
]
LABS: dict[str, LabItem] = {lab.code: lab for lab in _LABS}


PANEL_CODE = {"chem": 1, "cbc": 2, "diff": 3, "lft": 4, "coag": 5, "gas": 6, "special": 7}


@dataclass(frozen=True)
class ChartItem:
    """One `d_items` row (ICU charted vital sign)."""

    code: str
    itemid: int
    label: str
    abbreviation: str
    category: str
    unit: str
    decimals: int


_CHART = [
    ChartItem("hr", 220045, "Heart Rate", "HR", "Routine Vital Signs", "bpm", 0),
    ChartItem("sbp", 220179, "Non Invasive Blood Pressure systolic", "NBPs", "Routine Vital Signs", "mmHg", 0),
    ChartItem("dbp", 220180, "Non Invasive Blood Pressure diastolic", "NBPd", "Routine Vital Signs", "mmHg", 0),
    ChartItem("mbp", 220181, "Non Invasive Blood Pressure mean", "NBPm", "Routine Vital Signs", "mmHg", 0),
    ChartItem("rr", 220210, "Respiratory Rate", "RR", "Respiratory", "insp/min", 0),
    ChartItem("spo2", 220277, "O2 saturation pulseoxymetry", "SpO2", "Respiratory", "%", 0),
    ChartItem("temp", 223761, "Temperature Fahrenheit", "Temperature F", "Routine Vital Signs", "°F", 1),
    ChartItem("weight", 224639, "Daily Weight", "Daily Weight", "General", "kg", 1),
]
CHART: dict[str, ChartItem] = {c.code: c for c in _CHART}

# ICD-10-CM codes (MIMIC stores them without the dot) and their official long titles.
ICD10: dict[str, str] = {
    "I4891": "Unspecified atrial fibrillation",
    "I480": "Paroxysmal atrial fibrillation",
    "I4820": "Chronic atrial fibrillation, unspecified",
    "I4821": "Permanent atrial fibrillation",
    "N183": "Chronic kidney disease, stage 3 (moderate)",
    "N184": "Chronic kidney disease, stage 4 (severe)",
    "E1122": "Type 2 diabetes mellitus with diabetic chronic kidney disease",
    "E119": "Type 2 diabetes mellitus without complications",
    "E1165": "Type 2 diabetes mellitus with hyperglycemia",
    "E875": "Hyperkalemia",
    "E871": "Hypo-osmolality and hyponatremia",
    "E876": "Hypokalemia",
    "I10": "Essential (primary) hypertension",
    "I110": "Hypertensive heart disease with heart failure",
    "I129": "Hypertensive chronic kidney disease with stage 1 through stage 4 chronic kidney disease, or unspecified chronic kidney disease",
    "I130": "Hypertensive heart and chronic kidney disease with heart failure and stage 1 through stage 4 chronic kidney disease, or unspecified chronic kidney disease",
    "I5022": "Chronic systolic (congestive) heart failure",
    "I5023": "Acute on chronic systolic (congestive) heart failure",
    "I5033": "Acute on chronic diastolic (congestive) heart failure",
    "I5043": "Acute on chronic combined systolic (congestive) and diastolic (congestive) heart failure",
    "R600": "Localized edema",
    "R601": "Generalized edema",
    "J189": "Pneumonia, unspecified organism",
    "J13": "Pneumonia due to Streptococcus pneumoniae",
    "A419": "Sepsis, unspecified organism",
    "A4151": "Sepsis due to Escherichia coli [E. coli]",
    "R6520": "Severe sepsis without septic shock",
    "J9601": "Acute respiratory failure with hypoxia",
    "N390": "Urinary tract infection, site not specified",
    "R7881": "Bacteremia",
    "K7031": "Alcoholic cirrhosis of liver with ascites",
    "K7460": "Unspecified cirrhosis of liver",
    "K766": "Portal hypertension",
    "R188": "Other ascites",
    "I8510": "Secondary esophageal varices without bleeding",
    "D696": "Thrombocytopenia, unspecified",
    "D689": "Coagulation defect, unspecified",
    "F1020": "Alcohol dependence, uncomplicated",
    "E785": "Hyperlipidemia, unspecified",
    "Z7901": "Long term (current) use of anticoagulants",
    "Z7984": "Long term (current) use of oral hypoglycemic drugs",
    "Z794": "Long term (current) use of insulin",
    "Z7982": "Long term (current) use of aspirin",
    "Z7902": "Long term (current) use of antithrombotics/antiplatelets",
    "Z79899": "Other long term (current) drug therapy",
    "D649": "Anemia, unspecified",
    "Z87891": "Personal history of nicotine dependence",
    "I2510": "Atherosclerotic heart disease of native coronary artery without angina pectoris",
    "I252": "Old myocardial infarction",
    "G4733": "Obstructive sleep apnea (adult) (pediatric)",
    "E039": "Hypothyroidism, unspecified",
    "J449": "Chronic obstructive pulmonary disease, unspecified",
    "K219": "Gastro-esophageal reflux disease without esophagitis",
    "E669": "Obesity, unspecified",
    "M109": "Gout, unspecified",
    "F329": "Major depressive disorder, single episode, unspecified",
    "F419": "Anxiety disorder, unspecified",
    "Z955": "Presence of coronary angioplasty implant and graft",
    "Z86718": "Personal history of other venous thrombosis and embolism",
    "I739": "Peripheral vascular disease, unspecified",
    "N179": "Acute kidney failure, unspecified",
    "R0602": "Shortness of breath",
    "Z9181": "History of falling",
    "R531": "Weakness",
    "G8929": "Other chronic pain",
    "K5900": "Constipation, unspecified",
    "Z8673": "Personal history of transient ischemic attack (TIA), and cerebral infarction without residual deficits",
    "E1140": "Type 2 diabetes mellitus with diabetic neuropathy, unspecified",
    "J90": "Pleural effusion, not elsewhere classified",
    "Z9114": "Patient's other noncompliance with medication regimen",
    "E860": "Dehydration",
    "R000": "Tachycardia, unspecified",
}

# Comorbidities added to reach a tier's diagnosis count (most common in MIMIC-IV first).
COMORBIDITY_POOL: tuple[str, ...] = (
    "E785", "Z87891", "D649", "K219", "E669", "G4733", "E039", "I2510", "F329", "F419",
    "M109", "Z7982", "Z79899", "Z9181", "R531", "I739", "G8929", "K5900", "Z8673", "I252",
    "Z955", "Z86718", "E1140", "J449",
)


@dataclass(frozen=True)
class Drug:
    """A formulary entry: how `prescriptions`/`pharmacy`/`emar` spell and dose it."""

    code: str
    drug: str  # prescriptions.drug / emar.medication
    strength: str  # prescriptions.prod_strength
    dose: str  # dose_val_rx
    unit: str  # dose_unit_rx
    form_val: str  # form_val_disp
    form_unit: str  # form_unit_disp
    route: str
    freq: str  # pharmacy.frequency
    per_day: int  # doses_per_24_hrs (0 = as needed / once)
    drug_class: str
    formulary_cd: str
    en: str  # patient-facing plain name
    zh: str
    purpose_en: str
    purpose_zh: str

    @property
    def sig(self) -> str:
        """Discharge-note style line: 'Apixaban 5 mg PO BID'."""
        return f"{self.drug} {self.dose} {self.unit} {self.route} {self.freq}"


# (code, drug, strength, dose, unit, form_val, form_unit, route, freq, per_day, class, cd, en, zh, why_en, why_zh)
_DRUGS = [
    ("apixaban5", "Apixaban", "5 mg Tablet", "5", "mg", "1", "TAB", "PO", "BID", 2, "anticoagulant", "APIX5", "apixaban (Eliquis)", "阿哌沙班（艾乐妥）", "blood thinner for my irregular heartbeat", "预防心律不齐引起血栓的抗凝药"),
    ("apixaban25", "Apixaban", "2.5 mg Tablet", "2.5", "mg", "1", "TAB", "PO", "BID", 2, "anticoagulant", "APIX2.5", "apixaban (Eliquis)", "阿哌沙班（艾乐妥）", "blood thinner for my irregular heartbeat", "预防心律不齐引起血栓的抗凝药"),
    ("metformin1000", "MetFORMIN (Glucophage)", "1000 mg Tablet", "1000", "mg", "1", "TAB", "PO", "BID", 2, "diabetes", "METF1000", "metformin", "二甲双胍", "diabetes pill", "降糖药"),
    ("metformin500", "MetFORMIN (Glucophage)", "500 mg Tablet", "500", "mg", "1", "TAB", "PO", "BID", 2, "diabetes", "METF500", "metformin", "二甲双胍", "diabetes pill", "降糖药"),
    ("glipizide", "GlipiZIDE", "5 mg Tablet", "5", "mg", "1", "TAB", "PO", "DAILY", 1, "diabetes", "GLIP5", "glipizide", "格列吡嗪", "diabetes pill", "降糖药"),
    ("glargine", "Insulin Glargine", "100 Units / mL - 3 mL Pen", "20", "UNIT", "0.2", "mL", "SC", "QHS", 1, "diabetes", "GLAR100I", "long-acting insulin", "长效胰岛素", "insulin shot at night", "晚上打的胰岛素"),
    ("insulin_ss", "Insulin", "100 Units / mL - 10 mL Vial", "0", "UNIT", "0", "mL", "SC", "QACHS", 4, "diabetes", "INRHI", "sliding-scale insulin", "按血糖调整的胰岛素", "insulin for high sugars", "控制血糖的胰岛素"),
    ("spironolactone", "Spironolactone", "25 mg Tablet", "25", "mg", "1", "TAB", "PO", "DAILY", 1, "diuretic_k_sparing", "SPIR25", "spironolactone", "螺内酯", "water pill that keeps potassium", "保钾利尿药"),
    ("spironolactone100", "Spironolactone", "100 mg Tablet", "100", "mg", "1", "TAB", "PO", "DAILY", 1, "diuretic_k_sparing", "SPIR100", "spironolactone", "螺内酯", "water pill for the fluid in my belly", "消腹水的利尿药"),
    ("lisinopril", "Lisinopril", "20 mg Tablet", "20", "mg", "1", "TAB", "PO", "DAILY", 1, "acei", "LISI20", "lisinopril", "赖诺普利", "blood pressure pill", "降压药"),
    ("losartan", "Losartan Potassium", "50 mg Tablet", "50", "mg", "1", "TAB", "PO", "DAILY", 1, "arb", "LOSA50", "losartan", "氯沙坦", "blood pressure pill", "降压药"),
    ("furosemide_po", "Furosemide", "40 mg Tablet", "40", "mg", "1", "TAB", "PO", "DAILY", 1, "diuretic_loop", "FURO40", "furosemide (Lasix)", "呋塞米（速尿）", "water pill", "利尿药"),
    ("furosemide_iv", "Furosemide", "10 mg/mL - 4 mL Vial", "40", "mg", "4", "mL", "IV", "BID", 2, "diuretic_loop", "FURO40I", "IV furosemide", "静脉呋塞米", "water pill through the IV", "静脉利尿药"),
    ("torsemide", "Torsemide", "20 mg Tablet", "20", "mg", "1", "TAB", "PO", "DAILY", 1, "diuretic_loop", "TORS20", "torsemide", "托拉塞米", "water pill", "利尿药"),
    ("amlodipine", "amLODIPine", "10 mg Tablet", "10", "mg", "1", "TAB", "PO", "DAILY", 1, "ccb", "AMLO10", "amlodipine (Norvasc)", "氨氯地平（络活喜）", "blood pressure pill", "降压药"),
    ("hctz", "Hydrochlorothiazide", "25 mg Tablet", "25", "mg", "1", "TAB", "PO", "DAILY", 1, "diuretic_thiazide", "HCTZ25", "hydrochlorothiazide", "氢氯噻嗪", "water pill for blood pressure", "降压利尿药"),
    ("metoprolol_succ", "Metoprolol Succinate XL", "50 mg Tablet", "50", "mg", "1", "TAB", "PO", "DAILY", 1, "beta_blocker", "METO50XL", "metoprolol", "美托洛尔", "heart rate pill", "控制心率的药"),
    ("metoprolol_tart", "Metoprolol Tartrate", "25 mg Tablet", "25", "mg", "1", "TAB", "PO", "BID", 2, "beta_blocker", "METO25", "metoprolol", "美托洛尔", "heart rate pill", "控制心率的药"),
    ("carvedilol", "Carvedilol", "12.5 mg Tablet", "12.5", "mg", "1", "TAB", "PO", "BID", 2, "beta_blocker", "CARV12.5", "carvedilol", "卡维地洛", "heart pill", "护心药"),
    ("sacval", "Sacubitril-Valsartan", "49-51 mg Tablet", "1", "TAB", "1", "TAB", "PO", "BID", 2, "arni", "ENTR49", "Entresto", "沙库巴曲缬沙坦（诺欣妥）", "heart failure pill", "治疗心衰的药"),
    ("empagliflozin", "Empagliflozin", "10 mg Tablet", "10", "mg", "1", "TAB", "PO", "DAILY", 1, "sglt2", "EMPA10", "empagliflozin (Jardiance)", "恩格列净", "heart and sugar pill", "护心降糖药"),
    ("digoxin", "Digoxin", "0.125 mg Tablet", "0.125", "mg", "1", "TAB", "PO", "DAILY", 1, "antiarrhythmic", "DIGO125", "digoxin", "地高辛", "heart pill", "强心药"),
    ("kcl", "Potassium Chloride", "20 mEq ER Tablet", "20", "mEq", "1", "TAB", "PO", "DAILY", 1, "electrolyte", "KCL20", "potassium pill", "补钾药", "potassium supplement", "补钾"),
    ("atorvastatin", "Atorvastatin", "40 mg Tablet", "40", "mg", "1", "TAB", "PO", "QPM", 1, "statin", "ATOR40", "atorvastatin (Lipitor)", "阿托伐他汀（立普妥）", "cholesterol pill", "降血脂药"),
    ("aspirin", "Aspirin", "81 mg Tablet", "81", "mg", "1", "TAB", "PO", "DAILY", 1, "antiplatelet", "ASA81", "baby aspirin", "小剂量阿司匹林", "aspirin for my heart", "护心的阿司匹林"),
    ("clopidogrel", "Clopidogrel", "75 mg Tablet", "75", "mg", "1", "TAB", "PO", "DAILY", 1, "antiplatelet", "CLOP75", "clopidogrel (Plavix)", "氯吡格雷（波立维）", "pill for my heart stent", "心脏支架后的抗血小板药"),
    ("isosorbide", "Isosorbide Mononitrate (Extended Release)", "30 mg Tablet", "30", "mg", "1", "TAB", "PO", "DAILY", 1, "nitrate", "ISMN30", "isosorbide", "单硝酸异山梨酯", "chest pain prevention pill", "预防胸痛的药"),
    ("hydralazine", "HydrALAZINE", "25 mg Tablet", "25", "mg", "1", "TAB", "PO", "TID", 3, "vasodilator", "HYDR25", "hydralazine", "肼屈嗪", "blood pressure pill", "降压药"),
    ("levothyroxine", "Levothyroxine Sodium", "50 mcg Tablet", "50", "mcg", "1", "TAB", "PO", "DAILY", 1, "thyroid", "LEVO50", "levothyroxine", "左甲状腺素", "thyroid pill", "甲状腺药"),
    ("allopurinol", "Allopurinol", "100 mg Tablet", "100", "mg", "1", "TAB", "PO", "DAILY", 1, "gout", "ALLO100", "allopurinol", "别嘌醇", "gout pill", "痛风药"),
    ("sertraline", "Sertraline", "50 mg Tablet", "50", "mg", "1", "TAB", "PO", "DAILY", 1, "ssri", "SERT50", "sertraline", "舍曲林", "mood pill", "抗抑郁药"),
    ("gabapentin", "Gabapentin", "300 mg Capsule", "300", "mg", "1", "CAP", "PO", "TID", 3, "neuropathic", "GABA300", "gabapentin", "加巴喷丁", "nerve pain pill", "神经痛药"),
    ("tamsulosin", "Tamsulosin", "0.4 mg Capsule", "0.4", "mg", "1", "CAP", "PO", "QHS", 1, "alpha_blocker", "TAMS4", "tamsulosin", "坦索罗辛", "prostate pill", "前列腺药"),
    ("pantoprazole", "Pantoprazole", "40 mg Tablet", "40", "mg", "1", "TAB", "PO", "Q24H", 1, "ppi", "PANT40", "pantoprazole", "泮托拉唑", "stomach acid pill", "护胃药"),
    ("lactulose", "Lactulose", "10 gm/15 mL - 30 mL UD Cup", "30", "mL", "1", "UDCUP", "PO", "TID", 3, "hepatic", "LACT30", "lactulose", "乳果糖", "syrup to keep my mind clear", "预防肝昏迷的糖浆"),
    ("rifaximin", "Rifaximin", "550 mg Tablet", "550", "mg", "1", "TAB", "PO", "BID", 2, "hepatic", "RIFA550", "rifaximin", "利福昔明", "pill to keep my mind clear", "预防肝昏迷的药"),
    ("nadolol", "Nadolol", "20 mg Tablet", "20", "mg", "1", "TAB", "PO", "DAILY", 1, "beta_blocker", "NADO20", "nadolol", "纳多洛尔", "pill for the veins in my throat", "预防食管静脉出血的药"),
    ("thiamine", "Thiamine", "100 mg Tablet", "100", "mg", "1", "TAB", "PO", "DAILY", 1, "vitamin", "THIA100", "thiamine (vitamin B1)", "维生素B1", "vitamin", "维生素"),
    ("folic", "FoLIC Acid", "1 mg Tablet", "1", "mg", "1", "TAB", "PO", "DAILY", 1, "vitamin", "FOLI1", "folic acid", "叶酸", "vitamin", "维生素"),
    ("albumin25", "Albumin 25% (12.5g / 50mL)", "12.5 g / 50 mL Vial", "25", "g", "100", "mL", "IV", "ONCE", 0, "volume", "ALBU25L", "albumin infusion", "白蛋白输注", "protein infusion after the belly tap", "放腹水后补的白蛋白"),
    ("ceftriaxone", "CefTRIAXone", "1 gm Vial", "1", "g", "1", "VIAL", "IV", "Q24H", 1, "cephalosporin", "CEFT1I", "ceftriaxone", "头孢曲松", "antibiotic", "抗生素"),
    ("azithromycin", "Azithromycin", "500 mg Vial", "500", "mg", "1", "VIAL", "IV", "Q24H", 1, "macrolide", "AZIT500I", "azithromycin", "阿奇霉素", "antibiotic", "抗生素"),
    ("vancomycin", "Vancomycin", "1 g Frozen Bag", "1250", "mg", "1.25", "BAG", "IV", "Q12H", 2, "glycopeptide", "VANC1F", "vancomycin", "万古霉素", "strong IV antibiotic", "强效静脉抗生素"),
    ("piptazo", "Piperacillin-Tazobactam", "4.5 g Frozen Bag", "4.5", "g", "1", "BAG", "IV", "Q8H", 3, "penicillin", "PTZ4.5F", "piperacillin-tazobactam", "哌拉西林他唑巴坦", "strong IV antibiotic", "强效静脉抗生素"),
    ("cefepime", "Cefepime", "2 g Vial", "2", "g", "1", "VIAL", "IV", "Q12H", 2, "cephalosporin", "CEFE2I", "cefepime", "头孢吡肟", "IV antibiotic", "静脉抗生素"),
    ("levofloxacin", "Levofloxacin", "750 mg Tablet", "750", "mg", "1", "TAB", "PO", "Q24H", 1, "fluoroquinolone", "LEVO750", "levofloxacin", "左氧氟沙星", "antibiotic pill", "口服抗生素"),
    ("amoxclav", "Amoxicillin-Clavulanic Acid", "875 mg Tablet", "1", "TAB", "1", "TAB", "PO", "Q12H", 2, "penicillin", "AUGM875", "amoxicillin-clavulanate", "阿莫西林克拉维酸", "antibiotic pill", "口服抗生素"),
    ("heparin_sc", "Heparin", "5000 Units / mL- 1mL Vial", "5000", "UNIT", "1", "mL", "SC", "Q8H", 3, "anticoagulant_prophylaxis", "HEPA5I", "heparin shots", "肝素注射", "shots to prevent clots", "预防血栓的针"),
    ("ns_flush", "Sodium Chloride 0.9%  Flush", "10 mL Syringe", "3", "mL", "0.3", "SYR", "IV", "Q8H", 3, "flush", "NACLFLUSH", "IV flush", "静脉冲管", "IV line flush", "冲洗输液管"),
    ("acetaminophen", "Acetaminophen", "325 mg Tablet", "650", "mg", "2", "TAB", "PO", "Q6H:PRN", 0, "analgesic", "ACET325", "Tylenol", "对乙酰氨基酚（泰诺）", "pain or fever pill", "退烧止痛药"),
    ("ondansetron", "Ondansetron", "2 mg/mL - 2 mL Vial", "4", "mg", "2", "mL", "IV", "Q8H:PRN", 0, "antiemetic", "ONDA2I", "anti-nausea medicine", "止吐药", "nausea medicine", "止吐"),
    ("docusate", "Docusate Sodium", "100 mg Capsule", "100", "mg", "1", "CAP", "PO", "BID", 2, "bowel", "DOCU100", "stool softener", "大便软化剂", "stool softener", "通便"),
    ("senna", "Senna", "8.6 mg Tablet", "8.6", "mg", "1", "TAB", "PO", "BID:PRN", 0, "bowel", "SENN8.6", "senna", "番泻叶", "laxative", "通便"),
    ("peg", "Polyethylene Glycol", "17 g Powder Packet", "17", "g", "1", "PKT", "PO", "DAILY:PRN", 0, "bowel", "PEG17", "Miralax", "聚乙二醇", "laxative", "通便"),
    ("melatonin", "Melatonin", "3 mg Tablet", "3", "mg", "1", "TAB", "PO", "QHS:PRN", 0, "sleep", "MELA3", "melatonin", "褪黑素", "sleep aid", "助眠"),
    ("mag_sulfate", "Magnesium Sulfate", "2 g / 50 mL Premix Bag", "2", "g", "50", "mL", "IV", "ONCE", 0, "electrolyte", "MAG2PM", "IV magnesium", "静脉补镁", "magnesium", "补镁"),
    ("kcl_iv", "Potassium Chloride", "20 mEq / 50 mL Premix Bag", "20", "mEq", "50", "mL", "IV", "ONCE", 0, "electrolyte", "KCL20PM", "IV potassium", "静脉补钾", "potassium", "补钾"),
    ("calcium_gluc", "Calcium Gluconate", "1 g / 50 mL Premix Bag", "1", "g", "50", "mL", "IV", "ONCE", 0, "electrolyte", "CALG1PM", "IV calcium", "静脉钙剂", "heart protection for high potassium", "保护心脏的钙剂"),
    ("insulin_reg_iv", "Insulin Regular", "100 Units / mL - 10 mL Vial", "10", "UNIT", "0.1", "mL", "IV", "ONCE", 0, "potassium_shift", "INREGI", "IV insulin", "静脉胰岛素", "treatment for high potassium", "降钾治疗"),
    ("dextrose50", "Dextrose 50%", "25 g / 50 mL Syringe", "25", "gm", "50", "mL", "IV", "ONCE", 0, "potassium_shift", "DEX50S", "IV sugar", "静脉葡萄糖", "sugar with the insulin", "配合胰岛素的葡萄糖"),
    ("patiromer", "Patiromer", "8.4 g Powder Packet", "8.4", "g", "1", "PKT", "PO", "DAILY", 1, "potassium_binder", "PATI8.4", "Veltassa", "帕替罗默", "powder that lowers potassium", "降钾粉剂"),
    ("albuterol", "Albuterol Inhaler", "90 mcg/actuation Inhaler", "2", "PUFF", "1", "INH", "IH", "Q4H:PRN", 0, "bronchodilator", "ALBU90", "albuterol inhaler", "沙丁胺醇吸入剂", "rescue inhaler", "急救吸入剂"),
    ("tiotropium", "Tiotropium Bromide", "18 mcg Capsule", "1", "CAP", "1", "CAP", "IH", "DAILY", 1, "bronchodilator", "TIOT18", "Spiriva", "噻托溴铵（思力华）", "daily inhaler", "每日吸入剂"),
    ("nicotine", "Nicotine Patch", "21 mg/24 hr Patch", "1", "PTCH", "1", "PTCH", "TD", "DAILY", 1, "smoking", "NICO21", "nicotine patch", "尼古丁贴片", "patch to help quit smoking", "戒烟贴"),
    ("trazodone", "traZODone", "50 mg Tablet", "50", "mg", "1", "TAB", "PO", "QHS:PRN", 0, "sleep", "TRAZ50", "trazodone", "曲唑酮", "sleep pill", "助眠药"),
    ("ezetimibe", "Ezetimibe", "10 mg Tablet", "10", "mg", "1", "TAB", "PO", "DAILY", 1, "statin", "EZET10", "ezetimibe", "依折麦布", "cholesterol pill", "降血脂药"),
    ("fluticasone", "Fluticasone Propionate NASAL", "50 mcg/Inh Nasal Spray", "1", "SPRY", "1", "SPRY", "NU", "DAILY", 1, "nasal", "FLUT50N", "nasal spray", "鼻喷剂", "allergy spray", "过敏鼻喷剂"),
    ("multivitamin", "Multivitamins", "1 Tablet", "1", "TAB", "1", "TAB", "PO", "DAILY", 1, "vitamin", "MVI", "multivitamin", "复合维生素", "vitamin", "维生素"),
]
DRUGS: dict[str, Drug] = {row[0]: Drug(*row) for row in _DRUGS}
DRUG_CODES: tuple[str, ...] = tuple(DRUGS)
DRUG_INDEX: dict[str, int] = {c: i for i, c in enumerate(DRUG_CODES)}

# Times of day (hour) scheduled administrations fall on, by frequency (pharmacy.disp_sched).
SCHEDULE_HOURS: dict[str, tuple[int, ...]] = {
    "DAILY": (8,), "Q24H": (8,), "QPM": (20,), "QHS": (22,), "BID": (8, 20), "Q12H": (8, 20),
    "TID": (8, 14, 20), "Q8H": (6, 14, 22), "QACHS": (7, 11, 17, 21), "ONCE": (),
}

# Microbiology (MIMIC-IV item ids and spellings).
SPECIMENS = {
    "blood": (70012, "BLOOD CULTURE", 90201, "Blood Culture, Routine"),
    "urine": (70079, "URINE", 90039, "URINE CULTURE"),
    "sputum": (70062, "SPUTUM", 90055, "RESPIRATORY CULTURE"),
    "peritoneal": (70053, "PERITONEAL FLUID", 90268, "FLUID CULTURE"),
    "mrsa": (70091, "MRSA SCREEN", 90189, "MRSA SCREEN"),
}
ORGANISMS = {
    "spneumo": (80076, "STREPTOCOCCUS PNEUMONIAE"),
    "ecoli": (80002, "ESCHERICHIA COLI"),
    "kpneumo": (80004, "KLEBSIELLA PNEUMONIAE"),
    "saureus": (80023, "STAPH AUREUS COAG +"),
}
ANTIBIOTICS = {
    "AMPICILLIN": 90004, "AMPICILLIN/SULBACTAM": 90022, "CEFAZOLIN": 90005, "CEFTRIAXONE": 90018,
    "CEFEPIME": 90028, "CIPROFLOXACIN": 90019, "LEVOFLOXACIN": 90025, "GENTAMICIN": 90012,
    "MEROPENEM": 90029, "PIPERACILLIN/TAZO": 90026, "TRIMETHOPRIM/SULFA": 90008,
    "PENICILLIN G": 90003, "ERYTHROMYCIN": 90006, "VANCOMYCIN": 90015, "NITROFURANTOIN": 90010,
    "OXACILLIN": 90016, "CLINDAMYCIN": 90007, "TETRACYCLINE": 90011, "RIFAMPIN": 90027,
}
# organism -> [(antibiotic, dilution_text, comparison, value, interpretation)]
SUSCEPTIBILITY = {
    "spneumo": [("PENICILLIN G", "<=0.06", "<=", 0.06, "S"), ("CEFTRIAXONE", "<=0.12", "<=", 0.12, "S"),
                ("ERYTHROMYCIN", "=>1", "=>", 1.0, "R"), ("LEVOFLOXACIN", "1", "=", 1.0, "S"),
                ("VANCOMYCIN", "<=0.5", "<=", 0.5, "S")],
    "ecoli": [("AMPICILLIN", "=>32", "=>", 32.0, "R"), ("AMPICILLIN/SULBACTAM", "8", "=", 8.0, "S"),
              ("CEFAZOLIN", "<=4", "<=", 4.0, "S"), ("CEFTRIAXONE", "<=1", "<=", 1.0, "S"),
              ("CEFEPIME", "<=1", "<=", 1.0, "S"), ("CIPROFLOXACIN", "=>4", "=>", 4.0, "R"),
              ("GENTAMICIN", "<=1", "<=", 1.0, "S"), ("MEROPENEM", "<=0.25", "<=", 0.25, "S"),
              ("PIPERACILLIN/TAZO", "<=4", "<=", 4.0, "S"), ("TRIMETHOPRIM/SULFA", "=>16", "=>", 16.0, "R"),
              ("NITROFURANTOIN", "<=16", "<=", 16.0, "S")],
    # an MRSA (oxacillin R), as the MIMIC-IV demo's MRSA screens report it
    "saureus": [("OXACILLIN", "=>4", "=>", 4.0, "R"), ("ERYTHROMYCIN", "=>8", "=>", 8.0, "R"),
                ("LEVOFLOXACIN", "=>8", "=>", 8.0, "R"), ("CLINDAMYCIN", "<=0.25", "<=", 0.25, "S"),
                ("GENTAMICIN", "<=0.5", "<=", 0.5, "S"), ("RIFAMPIN", "<=0.5", "<=", 0.5, "S"),
                ("TETRACYCLINE", "<=1", "<=", 1.0, "S"), ("TRIMETHOPRIM/SULFA", "<=0.5", "<=", 0.5, "S"),
                ("VANCOMYCIN", "1", "=", 1.0, "S")],
}
