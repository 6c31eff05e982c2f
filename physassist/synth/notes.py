"""Discharge summaries and radiology reports in the MIMIC-IV-Note layout (our own templates).

Notes are written from the same plan as the tables, so they agree with them: the medication
lists are the home / discharge drugs, the admission and discharge labs are the first and last
values of the anchor admission's series, and imaging impressions match the radiology reports.
The layout is MIMIC-IV-Note's: the header block (``Name:  ___ Unit No:   ___``, dates, sex,
service, allergies, attending), identifiers masked with ``___``, sections separated by lines
holding one space, a letter as discharge instructions; radiology reports with EXAMINATION,
INDICATION, TECHNIQUE, COMPARISON, FINDINGS and IMPRESSION. Each note draws its variant of that
layout (:class:`Layout`), so the sample exercises what real notes make parsers do.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from physassist.synth.catalog import DRUGS, ICD10, LABS
from physassist.synth.plan import DAY, HOUR, SubjectPlan, fmt_date, fmt_time

fmt_day = fmt_date
fmt_ts = fmt_time

# kind -> (exam title, indication, technique, findings, impression); {ef} etc. filled per subject.
RADIOLOGY: dict[str, tuple[str, str, str, str, str]] = {
    "cxr_clear": (
        "CHEST (PA AND LAT)",
        "___ year old with {cc_lower} // eval for acute process",
        "Chest PA and lateral",
        "The lungs are clear without focal consolidation. No pleural effusion or pneumothorax is seen. The cardiac "
        "silhouette is top normal in size. The mediastinal and hilar contours are unremarkable. There is no pulmonary "
        "vascular congestion. Degenerative changes are noted in the thoracic spine. No acute osseous abnormality.",
        "No acute cardiopulmonary process.",
    ),
    "cxr_pna": (
        "CHEST (PORTABLE AP)",
        "___ year old with fever, cough and hypoxia // eval for pneumonia",
        "Portable AP chest radiograph",
        "There is a new dense consolidation in the right lower lobe with air bronchograms. Blunting of the right "
        "costophrenic angle suggests a small right pleural effusion. The left lung is clear. Heart size is normal. "
        "Hyperinflation of the lungs is consistent with known COPD. No pneumothorax.",
        "Right lower lobe consolidation concerning for pneumonia. Small right pleural effusion.",
    ),
    "cxr_pna_followup": (
        "CHEST (PORTABLE AP)",
        "___ year old with pneumonia on antibiotics // interval change",
        "Portable AP chest radiograph",
        "Compared to the prior study, the right lower lobe consolidation has decreased in density and extent. "
        "The small right pleural effusion is unchanged to slightly smaller. No new focal opacity. Cardiomediastinal "
        "silhouette is stable. No pneumothorax.",
        "Improving right lower lobe pneumonia.",
    ),
    "ct_chest_pna": (
        "CT CHEST W/O CONTRAST",
        "___ year old with pneumonia and bacteremia, persistent cough // evaluate for empyema or abscess",
        "Multidetector CT images of the chest were obtained without intravenous contrast. Coronal and sagittal "
        "reformations were reviewed.",
        "Dense consolidation of the right lower lobe with air bronchograms, partially improved compared with the "
        "recent radiograph. Small simple-appearing right pleural effusion without loculation or pleural enhancement "
        "features to suggest empyema. No cavitation or abscess. Centrilobular emphysema, upper lobe predominant. "
        "Mildly enlarged right hilar lymph nodes, likely reactive. No pericardial effusion.",
        "1. Right lower lobe pneumonia without abscess or empyema. 2. Small right pleural effusion. 3. Emphysema.",
    ),
    "cxr_chf": (
        "CHEST (PORTABLE AP)",
        "___ year old with shortness of breath and leg swelling // eval for pulmonary edema",
        "Portable AP chest radiograph",
        "The heart is moderately enlarged. There is pulmonary vascular congestion with mild interstitial edema and "
        "cephalization. Small bilateral pleural effusions with adjacent atelectasis. No focal consolidation. "
        "No pneumothorax. Sternal wires are not present.",
        "Cardiomegaly with pulmonary vascular congestion, mild interstitial edema and small bilateral pleural effusions.",
    ),
    "echo_af": (
        "TRANSTHORACIC ECHOCARDIOGRAM",
        "Atrial fibrillation with rapid ventricular response // assess LV function and atrial size",
        "Complete transthoracic echocardiogram with 2D, color and spectral Doppler. Rhythm: atrial fibrillation.",
        "The left atrium is moderately dilated. The right atrium is mildly dilated. Left ventricular wall thickness "
        "and cavity size are normal. Overall left ventricular systolic function is low normal (LVEF 50-55%). "
        "Right ventricular size and function are normal. Mild (1+) mitral regurgitation. Mild tricuspid regurgitation. "
        "Estimated pulmonary artery systolic pressure is mildly elevated. No pericardial effusion.",
        "Moderately dilated left atrium. Low normal biventricular systolic function. Mild mitral regurgitation.",
    ),
    "echo_hfref": (
        "TRANSTHORACIC ECHOCARDIOGRAM",
        "Heart failure // assess LV function",
        "Complete transthoracic echocardiogram with 2D, color and spectral Doppler.",
        "The left ventricle is dilated with severe global hypokinesis. Quantitative biplane LVEF = {ef}%. "
        "The right ventricle is mildly dilated with mildly reduced free wall motion. Moderate (2+) functional mitral "
        "regurgitation. Moderate tricuspid regurgitation. Estimated pulmonary artery systolic pressure 48 mmHg. "
        "The inferior vena cava is dilated with less than 50% respiratory collapse. No pericardial effusion.",
        "Dilated left ventricle with severely reduced systolic function (LVEF {ef}%). Moderate functional mitral regurgitation. "
        "Elevated right atrial pressure.",
    ),
    "echo_hfpef": (
        "TRANSTHORACIC ECHOCARDIOGRAM",
        "Heart failure // assess LV function",
        "Complete transthoracic echocardiogram with 2D, color and spectral Doppler.",
        "Moderate symmetric left ventricular hypertrophy with normal cavity size. LVEF = {ef}%. Grade II (pseudonormal) "
        "diastolic dysfunction with elevated filling pressures (E/e' 18). The left atrium is severely dilated. "
        "Mild mitral regurgitation. Estimated pulmonary artery systolic pressure 44 mmHg. No pericardial effusion.",
        "Preserved LV systolic function (LVEF {ef}%) with moderate LVH and grade II diastolic dysfunction.",
    ),
    "echo_normal": (
        "TRANSTHORACIC ECHOCARDIOGRAM",
        "Hypertensive urgency and leg edema // assess LV function",
        "Complete transthoracic echocardiogram with 2D, color and spectral Doppler.",
        "Mild symmetric left ventricular hypertrophy. Normal left ventricular cavity size and regional/global "
        "systolic function (LVEF 60-65%). Grade I diastolic dysfunction. Normal right ventricle. No significant "
        "valvular disease. No pericardial effusion.",
        "Mild LVH with normal systolic function. No evidence of heart failure as a cause of edema.",
    ),
    "cxr_followup": (
        "CHEST (PORTABLE AP)",
        "___ year old inpatient // interval change",
        "Portable AP chest radiograph",
        "Comparison is made to the prior radiograph. Lung volumes are similar. No new focal consolidation. There is "
        "no pneumothorax. Small bilateral pleural effusions are not significantly changed or slightly decreased. "
        "The cardiomediastinal silhouette is unchanged. Monitoring leads overlie the chest.",
        "No significant interval change. No new consolidation.",
    ),
    "cxr_picc": (
        "CHEST (PORTABLE AP)",
        "___ year old with new right upper extremity PICC // PICC tip position",
        "Single portable AP radiograph of the chest",
        "A right upper extremity peripherally inserted central catheter terminates in the low superior vena cava. "
        "No pneumothorax. The lungs are without new consolidation. Heart size is stable. No large pleural effusion.",
        "Right PICC with tip in the low SVC; it may be used.",
    ),
    "ct_head": (
        "CT HEAD W/O CONTRAST",
        "___ year old on anticoagulation with lightheadedness and fall // eval for intracranial hemorrhage",
        "Contiguous axial images of the brain were obtained without intravenous contrast.",
        "There is no evidence of acute intracranial hemorrhage, edema, mass effect or acute large territorial "
        "infarction. Age-appropriate prominence of the ventricles and sulci. Periventricular white matter "
        "hypodensities are compatible with chronic small vessel ischemic disease. The paranasal sinuses and mastoid "
        "air cells are clear. No calvarial fracture.",
        "No acute intracranial process. Chronic small vessel ischemic disease.",
    ),
    "us_renal": (
        "RENAL U.S.",
        "___ year old with acute on chronic kidney injury // eval for obstruction",
        "Grayscale and color Doppler ultrasound images of the kidneys and bladder.",
        "Right kidney measures 9.4 cm and left kidney 9.1 cm. Both kidneys are diffusely echogenic with mild cortical "
        "thinning. There is no hydronephrosis, stone or solid mass. A simple 1.2 cm cyst is present in the left lower "
        "pole. The bladder is partially distended and unremarkable.",
        "Echogenic, mildly small kidneys consistent with medical renal disease. No hydronephrosis.",
    ),
    "ct_abd_noncon": (
        "CT ABD & PELVIS W/O CONTRAST",
        "___ year old with nausea and worsening renal function // eval for obstruction or acute process",
        "Multidetector CT of the abdomen and pelvis without intravenous contrast (withheld for renal function).",
        "The liver, gallbladder, pancreas, spleen and adrenal glands are unremarkable within the limits of a "
        "non-contrast study. The kidneys are symmetric and slightly small without hydronephrosis or obstructing stone. "
        "No bowel obstruction or free air. Moderate atherosclerotic calcification of the aorta. No lymphadenopathy.",
        "No acute intra-abdominal process. No hydronephrosis.",
    ),
    "us_le_venous": (
        "BILAT LOWER EXT VEINS",
        "___ year old with bilateral ankle swelling // eval for DVT",
        "Grayscale, color and spectral Doppler evaluation of the bilateral lower extremity veins.",
        "There is normal compressibility, flow and augmentation of the bilateral common femoral, femoral, popliteal "
        "and calf veins. No intraluminal thrombus. Subcutaneous edema is present at both ankles.",
        "No evidence of deep venous thrombosis in either leg. Bilateral ankle subcutaneous edema.",
    ),
    "us_abd_cirrhosis": (
        "DUPLEX DOPP ABD/PEL",
        "___ year old with cirrhosis and increasing abdominal girth // eval ascites, portal vein patency",
        "Grayscale, color and spectral Doppler ultrasound of the abdomen.",
        "The liver is shrunken with a coarsened echotexture and nodular contour, consistent with cirrhosis. No focal "
        "liver lesion. The main portal vein is patent with hepatopetal flow. The hepatic veins are patent. "
        "Moderate volume ascites in all four quadrants. The spleen is enlarged, measuring 15.2 cm. The gallbladder "
        "wall is edematous, likely related to ascites. No biliary dilation.",
        "Cirrhotic liver with moderate ascites and splenomegaly. Patent portal vein.",
    ),
    "us_paracentesis": (
        "ULTRASOUND GUIDED DIAG/THERA PARACENTESIS",
        "___ year old with cirrhosis and tense ascites // diagnostic and therapeutic paracentesis",
        "Ultrasound-guided paracentesis under sterile conditions with local anesthesia.",
        "Preprocedure ultrasound demonstrated a large pocket of ascites in the left lower quadrant. A 5 French catheter "
        "was advanced into the fluid. 4.2 L of clear straw-colored fluid was removed. Samples were sent for cell count, "
        "total protein, albumin, Gram stain and culture. The patient tolerated the procedure well without complication.",
        "Successful ultrasound-guided paracentesis with removal of 4.2 L of ascitic fluid.",
    ),
    "ct_abd_cirrhosis": (
        "CT ABD & PELVIS WITH CONTRAST",
        "___ year old with cirrhosis // eval for hepatocellular carcinoma and varices",
        "Multidetector CT of the abdomen and pelvis after intravenous contrast with arterial and portal venous phases.",
        "Nodular liver contour with caudate lobe hypertrophy. No arterially enhancing lesion with washout to suggest "
        "hepatocellular carcinoma. Patent portal and splenic veins. Esophageal and gastric varices. Splenorenal shunt. "
        "Splenomegaly to 15 cm. Moderate ascites, decreased after paracentesis. No bowel obstruction.",
        "Cirrhosis with portal hypertension (varices, splenomegaly, ascites). No CT evidence of hepatocellular carcinoma.",
    ),
}


LAB_ABBR = {
    "White Blood Cells": "WBC",
    "Hemoglobin": "Hgb",
    "Hematocrit": "Hct",
    "Platelet Count": "Plt",
    "Urea Nitrogen": "UreaN",
    "Creatinine": "Creat",
    "Sodium": "Na",
    "Potassium": "K",
    "Chloride": "Cl",
    "Bicarbonate": "HCO3",
    "Anion Gap": "AnGap",
    "Glucose": "Glucose",
    "Calcium, Total": "Calcium",
    "Magnesium": "Mg",
    "Phosphate": "Phos",
    "Asparate Aminotransferase (AST)": "AST",
    "Alanine Aminotransferase (ALT)": "ALT",
    "Alkaline Phosphatase": "AlkPhos",
    "Bilirubin, Total": "TotBili",
    "Albumin": "Albumin",
    "INR(PT)": "INR(PT)",
    "PT": "PT",
    "PTT": "PTT",
    "Lactate": "Lactate",
    "NTproBNP": "NTproBNP",
    "Troponin T": "cTropnT",
    "% Hemoglobin A1c": "%HbA1c",
    "C-Reactive Protein": "CRP",
    "Ammonia": "Ammonia",
    "Neutrophils": "Neuts",
    "Estimated GFR (MDRD equation)": "eGFR",
    "MCV": "MCV",
    "RDW": "RDW",
}


_BY_LABEL = {lab.label: lab for lab in LABS.values()}


def _lab_line(plan: SubjectPlan, values: dict[str, float], when: int) -> str:
    by_label = _BY_LABEL
    parts = []
    for label, v in values.items():
        lab = by_label[label]
        lo, hi = lab.ref_range(plan.sex)
        star = "*" if (lo is not None and v < lo) or (hi is not None and v > hi) else ""
        shown = f"{v:.{lab.decimals}f}" if lab.decimals else f"{int(round(v))}"
        parts.append(f"{LAB_ABBR.get(label, label)}-{shown}{star}")
    lines, line = [], f"___ {fmt_time(when)[11:16]} BLOOD"
    for p in parts:
        if len(line) + len(p) > 90:
            lines.append(line)
            line = f"___ {fmt_time(when)[11:16]} BLOOD"
        line += " " + p
    lines.append(line)
    return "\n".join(lines)


@dataclass(frozen=True)
class Layout:
    """How one note is laid out, drawn per note: the conventions vary from note to note in
    MIMIC-IV-Note, and the reference's regular expressions (compat) read them differently."""

    separator: str  # between sections: a line holding one space, a blank line, or nothing
    caps: frozenset[str]  # headers written in capitals
    bare: frozenset[str]  # headers written without their colon
    followup: str  # how Followup Instructions is spelled
    plan: str  # how a plan is written in the hospital course (PLAN_STYLES)
    condition: str  # how Discharge Condition is written (three lines, one, indented, word)
    mentions: bool  # "discharge instructions" / "discharge condition" named in the course
    crlf: bool  # CRLF line endings
    radiology: str  # how a radiology report starts (RADIOLOGY_STARTS)


FOLLOWUP_SPELLINGS = (
    "Followup Instructions",
    "Follow-up Instructions",
    "Follow up instructions",
    "FOLLOW UP INSTRUCTIONS",
    "Follow-Up Instruction",
)
#: plan style -> the hospital-course lines ({plan} = what is continued).
PLAN_STYLES = {
    "none": "",
    "assessment": "Assessment and Plan:\n{plan}",
    "treatment": "Treatment Plan:\n{plan}",
    "slash": "ASSESSMENT/PLAN:\n{plan}",
    "dash": "PLAN - {plan}",
    "sentence": "Discussed with the patient and family; the team's plan: {plan}",
    "of_care": "Plan-of-care reviewed with the patient: {plan}",
    "bare": "Plan\n- {plan}",
    "planned": "Follow-up labs were planned; {plan}",
}
#: How a radiology report may start: the exam line, its indication (in capitals, indented or not,
#: in title case, or as HISTORY), an old FINAL REPORT banner or the bare exam title.
RADIOLOGY_STARTS = (
    "examination",
    "indication",
    "indented",
    "titlecase",
    "history",
    "final",
    "title",
)
#: Headers that keep their colon in every note (the header block's fields).
_ALWAYS_COLON = (
    "Name",
    "Unit No",
    "Admission Date",
    "Discharge Date",
    "Date of Birth",
    "Sex",
    "Service",
    "Allergies",
    "Attending",
)


def draw_layout(r: random.Random) -> Layout:
    """Mostly the common layout (one-space separators, Title Case headers with colons), with
    the variants real notes show."""

    def some(headers: tuple[str, ...], p: float) -> frozenset[str]:
        return frozenset(h for h in headers if r.random() < p)

    sections = (
        "Chief Complaint",
        "History of Present Illness",
        "Past Medical History",
        "Social History",
        "Brief Hospital Course",
        "Medications on Admission",
        "Discharge Medications",
        "Discharge Disposition",
        "Discharge Diagnosis",
        "Discharge Condition",
        "Discharge Instructions",
    )
    return Layout(
        separator=r.choices((" \n", "\n", ""), weights=(7, 2, 1))[0],
        caps=some(sections, 0.08),
        bare=some(
            (
                "Brief Hospital Course",
                "Discharge Diagnosis",
                "Discharge Condition",
                "Discharge Instructions",
            ),
            0.12,
        ),
        followup=r.choices(FOLLOWUP_SPELLINGS, weights=(12, 3, 2, 2, 1))[0],
        plan=r.choices(list(PLAN_STYLES), weights=(8, 3, 2, 2, 1, 1, 1, 1, 1))[0],
        condition=r.choices(("lines", "line", "indented", "word"), weights=(6, 2, 1, 1))[0],
        mentions=r.random() < 0.15,
        crlf=r.random() < 0.06,
        radiology=r.choices(RADIOLOGY_STARTS, weights=(10, 2, 1, 1, 1, 1, 1))[0],
    )


def layout_rng(r: random.Random) -> random.Random:
    """The layout draws' own generator, seeded from the subject's stream without consuming it
    (the tables and the PHM drawn after the notes stay as they were)."""
    return random.Random(f"physassist-synth:notes:{r.getstate()[1][:8]}")


def _header(name: str, layout: Layout) -> str:
    text = name.upper() if name in layout.caps else name
    return text if name in layout.bare and name not in _ALWAYS_COLON else text + ":"


def _note(blocks: list[str], layout: Layout) -> str:
    """Blocks joined by the layout's separator line (MIMIC-IV-Note: a line holding one space)."""
    text = ("\n" + layout.separator).join(b.rstrip("\n") for b in blocks) + "\n"
    return text.replace("\n", "\r\n") if layout.crlf else text


def _section(name: str, body: str, layout: Layout) -> str:
    return f"{_header(name, layout)}\n{body}"


def _condition(text: str, style: str) -> str:
    """The discharge-condition lines (Mental Status, Level of Consciousness, Activity Status)."""
    lines = [s if s.endswith(".") else s + "." for s in text.rstrip(".").split(". ")]
    if style == "line":
        return " ".join(lines)
    if style == "indented":
        return "\n".join("  " + s for s in lines)
    if style == "word":
        return "Stable. " + lines[-1]
    return "\n".join(lines)


def radiology_text(
    kind: str, plan: SubjectPlan, chief_complaint: str, params: dict, start: str = "examination"
) -> str:
    title, indication, technique, findings, impression = RADIOLOGY[kind]
    fill = {"cc_lower": chief_complaint.lower(), "ef": params.get("ef", 30)}
    dose = (
        (
            "\nDOSE:  Acquisition sequence: 1) Spiral Acquisition 4.8 s, 38.2 cm; CTDIvol = 11.9 mGy (Body) "
            "DLP = 455.1 mGy-cm. Total DLP (Body) = 455 mGy-cm.\n"
        )
        if title.startswith("CT")
        else ""
    )
    why = indication.format(**fill)
    head = {
        "examination": f"EXAMINATION:  {title}\n\nINDICATION:  {why}",
        "indication": f"INDICATION:  {why}\n\nEXAMINATION:  {title}",
        "indented": f" INDICATION:  {why}\n\nEXAMINATION:  {title}",
        "titlecase": f"Indication:  {why}\n\nEXAMINATION:  {title}",
        "history": f"HISTORY:  {why}\n\nEXAMINATION:  {title}",
        "final": f"FINAL REPORT\n{title}\n\nINDICATION:  {why}",
        "title": f"{title}\n\nINDICATION:  {why}",
    }[start]
    return (
        f"{head}\n\nTECHNIQUE:  {technique}\n{dose}\n"
        f"COMPARISON:  ___\n\nFINDINGS: \n\n{findings.format(**fill)}\n\nIMPRESSION: \n\n{impression.format(**fill)}\n\n"
        "NOTIFICATION:  The findings were discussed with ___, M.D. by ___, M.D. on the telephone on ___ at ___, "
        "within 30 minutes of discovery of the findings.\n"
    )


def _med_list(codes: list[str]) -> str:
    return "\n".join(f"{i}. {DRUGS[c].sig}" for i, c in enumerate(codes, 1))


def _pmh(codes: list[str]) -> str:
    return "\n".join(f"- {ICD10[c]}" for c in codes)


def _header_block(sex: str) -> list[str]:
    return [
        "Name:  ___                 Unit No:   ___",
        "Admission Date:  ___              Discharge Date:   ___",
        f"Date of Birth:  ___             Sex:   {sex}",
        "Service: MEDICINE",
        "Allergies: \nNo Known Allergies / Adverse Drug Reactions",
        "Attending: ___.",
    ]


def _letter(sex: str, why: str, happened: str, changes: str) -> str:
    return (
        f"Dear {'Ms.' if sex == 'F' else 'Mr.'} ___,\n\nIt was a privilege caring for you at ___.\n\n"
        f"WHY WERE YOU IN THE HOSPITAL?\n- {why}.\n\nWHAT HAPPENED IN THE HOSPITAL?\n- {happened}\n\n"
        f"MEDICATION CHANGES:\n{changes}\n\nWHAT SHOULD YOU DO WHEN YOU GET HOME?\n- Take your medicines as listed.\n"
        "- Keep your follow-up appointments.\n\nWe wish you the best!\nYour ___ Care Team"
    )


def discharge_text(
    plan: SubjectPlan, case, social: dict, imaging: list[str], layout: Layout
) -> str:
    a = plan.anchor
    f = plan.facts
    sex = "F" if plan.sex == "F" else "M"
    stopped = [c for c in plan.home_meds if c not in plan.discharge_meds]
    new = [c for c in plan.discharge_meds if c not in plan.home_meds]
    changes = []
    if stopped:
        changes.append("STOPPED: " + ", ".join(DRUGS[c].drug for c in stopped))
    if new:
        changes.append(
            "STARTED: "
            + ", ".join(
                f"{DRUGS[c].drug} {DRUGS[c].dose} {DRUGS[c].unit} {DRUGS[c].freq}" for c in new
            )
        )
    change_txt = "\n".join(changes) if changes else "No changes to your home medications."
    micro_txt = ""
    if plan.micro:
        rows = []
        for m in plan.micro:
            spec = {
                "blood": "BLOOD CULTURE",
                "urine": "URINE CULTURE",
                "sputum": "SPUTUM CULTURE",
                "peritoneal": "PERITONEAL FLUID CULTURE",
                "mrsa": "MRSA SCREEN",
            }[m.specimen]
            res = {
                "spneumo": "STREPTOCOCCUS PNEUMONIAE (sensitive to penicillin, ceftriaxone, levofloxacin)",
                "ecoli": "ESCHERICHIA COLI",
                "saureus": "STAPH AUREUS COAG + (MRSA: oxacillin resistant, vancomycin sensitive)",
            }.get(m.organism or "", "NO GROWTH" if m.specimen != "mrsa" else "Negative")
            rows.append(f"___ {spec}: {res}")
        micro_txt = "\nMICROBIOLOGY:\n" + "\n".join(rows) + "\n"
    exam_adm = (
        "VS: see flowsheet. GEN: "
        + (
            "uncomfortable, mildly tachypneic"
            if case.archetype in ("pneumonia_sepsis", "hf_discharge")
            else "no acute distress"
        )
        + ". HEENT: MMM, no JVD"
        + (" (JVP to angle of jaw)" if case.archetype == "hf_discharge" else "")
        + ". CV: "
        + (
            "irregularly irregular, tachycardic"
            if case.archetype == "afib_apixaban"
            else "regular rate and rhythm, no murmurs"
        )
        + ". LUNGS: "
        + (
            "decreased breath sounds and crackles at the right base"
            if case.archetype == "pneumonia_sepsis"
            else "bibasilar crackles"
            if case.archetype == "hf_discharge"
            else "clear to auscultation bilaterally"
        )
        + ". ABD: "
        + (
            "distended, shifting dullness, non-tender"
            if case.archetype == "cirrhosis_ascites"
            else "soft, non-tender, non-distended"
        )
        + ". EXT: "
        + (
            "2+ pitting edema to the knees bilaterally"
            if case.archetype in ("hf_discharge", "htn_amlodipine_edema")
            else "warm, no edema"
        )
        + ". NEURO: "
        + (
            "asterixis present, oriented x2"
            if case.archetype == "cirrhosis_ascites" and f.get("encephalopathy_points") == 2
            else "alert and oriented x3, nonfocal"
        )
        + "."
    )
    adm_labs = _lab_line(plan, f["labs_admission"], a.admit + HOUR)
    dis_labs = _lab_line(plan, f["labs_discharge"], a.disch - a.disch % DAY + 5 * HOUR)
    transitional = [f"- Follow up {x}" for x in case.followup.split(". ") if x]
    if case.tier >= 2:
        transitional += [
            f"- Home medications reconciled: {len(plan.discharge_meds)} discharge medications.",
            "- Code status: Full code (presumed).",
            "- Contact: ___ (family) ___",
        ]
    if case.archetype == "hf_discharge":
        transitional += [
            f"- Discharge (dry) weight: {f['discharge_weight_kg']} kg.",
            "- Diuretic: torsemide 20 mg daily; adjust for weight gain > 1 kg/day or 2 kg/week.",
            "- Repeat BMP within 1 week (creatinine, potassium on diuretic and spironolactone).",
            "- Consider up-titration of guideline-directed medical therapy as blood pressure and renal function allow.",
            "- Fluid restriction 1.5 L/day and 2 g sodium diet reinforced with patient and family.",
        ]
    extra = ""
    if case.tier == 3:  # rich notes: per-problem course with chronic issues spelled out
        chronic = [c for c in a.diagnoses[3:] if c[0] not in "ZR"]
        extra = "\n\nCHRONIC ISSUES:\n" + "\n".join(
            f"# {ICD10[c]}: stable during this admission; home regimen continued where applicable, follow up with PCP."
            for c in chronic
        )
    if case.archetype == "hf_discharge":
        extra += (
            "\n\nDIURESIS SUMMARY:\nThe patient was diuresed with IV furosemide 40 mg BID with good urine output "
            f"(net negative 1-2 L daily). Weight trended from {f['admission_weight_kg']} kg on admission to "
            f"{f['discharge_weight_kg']} kg on discharge. Creatinine rose modestly with diuresis and was monitored daily. "
            "Potassium and magnesium were repleted as needed. Oxygen was weaned to room air by hospital day 2."
        )
        if case.tier >= 2:
            extra += (
                "\n\nGOALS OF CARE / DISPOSITION:\nPhysical therapy evaluated the patient and recommended "
                + (
                    "rehab at a skilled nursing facility"
                    if a.discharge_location == "SKILLED NURSING FACILITY"
                    else "home with services"
                    if a.discharge_location == "HOME HEALTH CARE"
                    else "home without services"
                )
                + ". Teaching on daily weights, low-salt diet, fluid restriction and symptom recognition was completed "
                "with teach-back. The patient verbalized understanding of the medication changes."
            )
    course = f"{case.course}{extra}"
    if layout.plan != "none":
        keep = "; ".join(DRUGS[c].sig for c in plan.discharge_meds[:2]) or "home medications"
        course += "\n\n" + PLAN_STYLES[layout.plan].format(
            plan=f"continue {keep}; repeat labs at PCP visit."
        )
    if layout.mentions:
        course += (
            "\n\nDischarge instructions were reviewed with the patient and family. "
            "Discharge condition was discussed with the primary team."
        )
    course += "\n\nTRANSITIONAL ISSUES:\n" + "\n".join(transitional)
    imaging_lines = "\n".join(
        f"___ {RADIOLOGY[k][0]}: {RADIOLOGY[k][4].format(cc_lower='', ef=case.radiology_params.get('ef', 30))}"
        for k in imaging
    )
    disposition = (
        "Home"
        if a.discharge_location == "HOME"
        else "Home With Service"
        if a.discharge_location == "HOME HEALTH CARE"
        else "Extended Care"
    )
    diagnosis = f"PRIMARY:\n{ICD10[a.diagnoses[0]]}\n\nSECONDARY:\n" + "\n".join(
        ICD10[c] for c in a.diagnoses[1:]
    )
    procedure = "Paracentesis" if case.archetype == "cirrhosis_ascites" else "None"
    results = f"ADMISSION LABS:\n{adm_labs}\n\nDISCHARGE LABS:\n{dis_labs}\n{micro_txt}\nIMAGING:\n{imaging_lines}"
    exam = (
        f"ADMISSION PHYSICAL EXAM:\n{exam_adm}\n\n"
        "DISCHARGE PHYSICAL EXAM:\nAfebrile, vital signs stable. Exam improved from admission."
    )
    s = _section
    return _note(
        _header_block(sex)
        + [
            s("Chief Complaint", case.chief_complaint, layout),
            s("Major Surgical or Invasive Procedure", procedure, layout),
            s("History of Present Illness", case.hpi, layout),
            s("Past Medical History", _pmh(a.diagnoses[1:]), layout),
            s("Social History", social["note"], layout),
            s("Family History", "Non-contributory.", layout),
            s("Physical Exam", exam, layout),
            s("Pertinent Results", results, layout),
            s("Brief Hospital Course", course, layout),
            s(
                "Medications on Admission",
                f"The Preadmission Medication list is accurate and complete.\n{_med_list(plan.home_meds)}",
                layout,
            ),
            s("Discharge Medications", _med_list(plan.discharge_meds), layout),
            s("Discharge Disposition", disposition, layout),
            s("Discharge Diagnosis", diagnosis, layout),
            s(
                "Discharge Condition",
                _condition(case.discharge_condition, layout.condition),
                layout,
            ),
            s(
                "Discharge Instructions",
                _letter(sex, case.chief_complaint, case.instructions, change_txt),
                layout,
            ),
            f"{layout.followup}:\n{case.followup}",
        ],
        layout,
    )


def prior_discharge_text(plan: SubjectPlan, case, adm, layout: Layout) -> str:
    meds = [
        o.drug
        for o in plan.orders
        if o.hadm_id == adm.hadm_id and o.drug in DRUGS and o.drug != "ns_flush"
    ]
    reason = ICD10[adm.diagnoses[0]].lower()
    s = _section
    return _note(
        _header_block(plan.sex)
        + [
            s("Chief Complaint", f"Routine admission for {reason}", layout),
            s(
                "History of Present Illness",
                f"Admitted for management of {reason}. Stable course.",
                layout,
            ),
            s(
                "Brief Hospital Course",
                "Labs at baseline. Home medications continued. Discharged in stable condition.",
                layout,
            ),
            s("Discharge Medications", _med_list(meds), layout),
            s("Discharge Diagnosis", "\n".join(ICD10[c] for c in adm.diagnoses), layout),
            s("Discharge Condition", "Stable.", layout),
            s("Discharge Instructions", "Continue your home medications.", layout),
            f"{layout.followup}:\nPCP in 2 weeks.",
        ],
        layout,
    )


def add_notes(plan: SubjectPlan, case, r: random.Random, social: dict) -> None:
    """Radiology reports (anchor admission, one per tier) and discharge summaries, each in a
    layout of its own (:func:`draw_layout`)."""
    a = plan.anchor
    lr = layout_rng(r)
    kinds = list(case.radiology) + ["cxr_followup", "cxr_picc"][: case.tier - 1]
    for i, kind in enumerate(kinds):
        t = a.admit + (r.randint(60, 180) * 60 if i == 0 else i * DAY + r.randint(9, 15) * HOUR)
        t = min(t, a.disch - HOUR)
        text = radiology_text(
            kind, plan, case.chief_complaint, case.radiology_params, draw_layout(lr).radiology
        )
        plan.radiology.append((a.hadm_id, t, text))
    for adm in plan.admissions:
        if not adm.anchor and case.tier == 3:
            text = radiology_text(
                "cxr_clear", plan, "shortness of breath", {}, draw_layout(lr).radiology
            )
            plan.radiology.append((adm.hadm_id, adm.admit + 2 * HOUR, text))
    for adm in plan.admissions:
        if adm.anchor:
            text = discharge_text(plan, case, social, case.radiology, draw_layout(lr))
        else:
            text = prior_discharge_text(plan, case, adm, draw_layout(lr))
        plan.discharge.append((adm.hadm_id, adm.disch - adm.disch % DAY, text))
    plan.radiology.sort(key=lambda x: x[1])
    plan.discharge.sort(key=lambda x: x[1])
