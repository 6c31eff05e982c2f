"""The patient health model (PHM): what the simulated patient knows and how they talk.

One JSON document per subject (`phm/<subject_id>.json`): persona (health literacy, adherence,
anxiety, info completeness), symptoms with OPQRST facets, per-drug adherence (including
non-adherence the patient withholds unless asked about that drug), social history, functional
status and pain. Patient-facing text is stored in English and Chinese.
"""

from __future__ import annotations

import functools
import json
import random
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physassist.synth.catalog import DRUGS, ICD10
from physassist.vocab import LITERACY_LEVELS

if TYPE_CHECKING:
    from physassist.synth.archetypes import ArchetypeCase
    from physassist.synth.plan import SubjectPlan

#: A JSON object as ``json`` reads it (the PHM and its parts are nested JSON).
JsonObject = dict[str, Any]

ADHERENCE = ("good", "uncertain", "poor")
ANXIETY = ("low", "medium", "high")
COMPLETENESS = ("full", "partial", "critical_withheld")


def persona_for(idx: int) -> dict[str, str]:
    """All 81 persona combinations over any 81 consecutive subject indices, and every pair of
    factor levels within each 9 (an orthogonal-array layout), independent of archetype/tier."""
    a, b, k1, k2 = idx % 3, (idx // 3) % 3, (idx // 9) % 3, (idx // 27) % 3
    return {
        "health_literacy": LITERACY_LEVELS[a],
        "adherence": ADHERENCE[b],
        "anxiety_level": ANXIETY[(a + b + k1) % 3],
        "info_completeness": COMPLETENESS[(a + 2 * b + k2) % 3],
    }


def _t(en: str, zh: str) -> dict[str, str]:
    return {"en": en, "zh": zh}


SYMPTOMS: dict[str, JsonObject] = {
    "palpitations": dict(
        term=_t("palpitations", "心悸"),
        plain=_t("my heart racing and fluttering", "心跳很快、心里发慌"),
        keywords=["palpitation", "heart", "racing", "flutter", "pulse", "心悸", "心跳", "心慌"],
        onset=_t("two days ago while I was watching TV", "两天前看电视的时候"),
        provocation=_t(
            "worse when I walk around and a little better when I lie still",
            "走动时更厉害，躺着不动会好一点",
        ),
        quality=_t("an irregular pounding in my chest", "胸口里不规律地怦怦乱跳"),
        region=_t("in the middle of my chest, not spreading anywhere", "在胸口正中，不往别处窜"),
        severity=6,
        timing=_t(
            "it comes in waves that last hours and has been almost constant since yesterday",
            "一阵一阵的，每次几个小时，从昨天起几乎一直都有",
        ),
        associated=_t("I also get lightheaded when I stand up quickly", "站起来快了还会头晕"),
    ),
    "lightheaded": dict(
        term=_t("presyncope", "晕厥前兆"),
        plain=_t("dizziness", "头晕"),
        keywords=["dizz", "lighthead", "faint", "syncope", "头晕", "晕"],
        onset=_t("yesterday morning", "昨天早上"),
        provocation=_t("worse when I stand up", "站起来时更明显"),
        quality=_t("like I might pass out", "感觉快要晕倒"),
        region=_t("in my head", "在头部"),
        severity=4,
        timing=_t("a few seconds each time I get up", "每次起身持续几秒"),
        associated=_t("I haven't actually fainted", "没有真正晕倒过"),
    ),
    "nausea": dict(
        term=_t("nausea and anorexia", "恶心、食欲减退"),
        plain=_t("feeling sick to my stomach and not wanting to eat", "恶心想吐、不想吃饭"),
        keywords=["nause", "vomit", "appetite", "stomach", "eat", "恶心", "呕吐", "食欲", "胃"],
        onset=_t("about a week ago", "大约一周前"),
        provocation=_t("worse after meals and after my diabetes pills", "吃饭后和吃降糖药后更明显"),
        quality=_t("a queasy, unsettled stomach", "胃里翻腾、不舒服"),
        region=_t("in my upper belly", "在上腹部"),
        severity=5,
        timing=_t("most of the day, worst in the morning", "一天大部分时间都有，早上最重"),
        associated=_t("I threw up twice", "还吐过两次"),
    ),
    "fatigue": dict(
        term=_t("fatigue", "乏力"),
        plain=_t("being very tired", "特别累、没力气"),
        keywords=["tired", "fatigue", "energy", "weak", "乏力", "累", "没劲"],
        onset=_t("over the past two weeks", "最近两周"),
        provocation=_t("worse in the afternoon", "下午更明显"),
        quality=_t("heavy, drained tiredness", "浑身沉重、没力气"),
        region=_t("all over", "全身"),
        severity=5,
        timing=_t("every day, slowly getting worse", "每天都有，慢慢加重"),
        associated=_t("I'm sleeping more than usual", "比平时睡得多"),
    ),
    "weakness": dict(
        term=_t("generalized weakness", "全身无力"),
        plain=_t("my legs and arms feeling weak", "手脚发软没力气"),
        keywords=["weak", "strength", "tired", "legs", "无力", "没劲", "发软"],
        onset=_t("three days ago", "三天前"),
        provocation=_t("worse when I climb stairs", "爬楼梯时更明显"),
        quality=_t("heavy, rubbery legs", "腿发沉、发软"),
        region=_t("mostly my legs, also my arms", "主要是腿，胳膊也有"),
        severity=6,
        timing=_t("constant and getting worse", "一直都有，越来越重"),
        associated=_t("my hands tingle a bit", "手有点发麻"),
    ),
    "headache": dict(
        term=_t("headache", "头痛"),
        plain=_t("a bad headache", "头很痛"),
        keywords=["head", "headache", "migraine", "vision", "头", "头痛"],
        onset=_t("this morning when I woke up", "今天早上醒来时"),
        provocation=_t("worse when I bend over, not helped by Tylenol", "弯腰时更痛，吃泰诺也没用"),
        quality=_t("a pounding pressure", "一跳一跳的胀痛"),
        region=_t("at the back of my head", "在后脑勺"),
        severity=7,
        timing=_t("constant since it started", "开始后一直没停"),
        associated=_t("my vision is a little blurry", "看东西有点模糊"),
    ),
    "leg_swelling": dict(
        term=_t("bilateral lower-extremity edema", "双下肢水肿"),
        plain=_t("swollen ankles and legs", "脚踝和腿肿"),
        keywords=["swell", "edema", "ankle", "leg", "feet", "fluid", "肿", "水肿", "脚踝", "腿"],
        onset=_t("about two months ago and worse this week", "大约两个月前开始，这周更重了"),
        provocation=_t(
            "worse at the end of the day, better with my feet up", "傍晚更重，把脚抬高会好些"
        ),
        quality=_t(
            "tight, heavy legs; my socks leave deep marks", "腿发紧发沉，袜子勒出很深的印子"
        ),
        region=_t("both ankles, up to my shins", "两边脚踝，一直到小腿"),
        severity=4,
        timing=_t("every day", "每天都有"),
        associated=_t("my shoes don't fit anymore", "鞋都穿不进去了"),
    ),
    "cough": dict(
        term=_t("productive cough", "咳嗽咳痰"),
        plain=_t("a bad cough with phlegm", "咳得厉害还有痰"),
        keywords=["cough", "phlegm", "sputum", "mucus", "咳", "痰"],
        onset=_t("three days ago", "三天前"),
        provocation=_t("worse when I lie down at night", "晚上躺下时更重"),
        quality=_t(
            "deep, wet coughing fits with thick yellow-green phlegm", "一阵阵深咳，痰又黄又绿很稠"
        ),
        region=_t("deep in my chest, right side", "胸口深处，右边"),
        severity=7,
        timing=_t("all day and night", "白天晚上都咳"),
        associated=_t("I've had shaking chills", "还发冷打寒战"),
    ),
    "shortness_of_breath": dict(
        term=_t("dyspnea on exertion and orthopnea", "劳力性呼吸困难和端坐呼吸"),
        plain=_t("trouble catching my breath", "喘不上气"),
        keywords=[
            "breath",
            "breathing",
            "dyspnea",
            "short",
            "winded",
            "pillow",
            "气",
            "喘",
            "呼吸",
        ],
        onset=_t("about a week ago, getting worse each day", "大约一周前，一天比一天重"),
        provocation=_t(
            "worse walking or lying flat; I sleep on three pillows",
            "走路或平躺时更重，我要垫三个枕头睡",
        ),
        quality=_t("like I can't get a full breath", "像是吸不满一口气"),
        region=_t("my whole chest", "整个胸口"),
        severity=7,
        timing=_t("with any activity, and it wakes me at night", "一活动就喘，夜里也会憋醒"),
        associated=_t("I've gained weight and my legs are puffy", "体重涨了，腿也肿"),
    ),
    "fever": dict(
        term=_t("fever with rigors", "发热伴寒战"),
        plain=_t("fevers and chills", "发烧、发冷"),
        keywords=["fever", "chill", "temperature", "sweat", "发烧", "发热", "寒战", "冷"],
        onset=_t("two days ago", "两天前"),
        provocation=_t("Tylenol brings it down for a few hours", "吃泰诺能退几个小时"),
        quality=_t("hot then shaking cold", "一会儿热一会儿冷得发抖"),
        region=_t("all over", "全身"),
        severity=6,
        timing=_t("worse in the evenings", "晚上更重"),
        associated=_t("I get night sweats", "夜里还出汗"),
    ),
    "abdominal_swelling": dict(
        term=_t("increasing abdominal girth", "腹围增大"),
        plain=_t("my belly getting bigger and tight", "肚子越来越大、发紧"),
        keywords=[
            "belly",
            "abdomen",
            "abdominal",
            "swell",
            "girth",
            "fluid",
            "ascites",
            "肚子",
            "腹",
            "腹水",
        ],
        onset=_t("about two weeks ago", "大约两周前"),
        provocation=_t("worse after salty food", "吃咸了更明显"),
        quality=_t("tight and full, like a drum", "胀得像鼓一样"),
        region=_t("my whole belly", "整个肚子"),
        severity=5,
        timing=_t("steadily worse every day", "每天都在加重"),
        associated=_t("I get full after a few bites", "吃几口就饱"),
    ),
    "confusion": dict(
        term=_t("episodic confusion", "间断性意识模糊"),
        plain=_t("getting mixed up and forgetful", "脑子糊涂、爱忘事"),
        keywords=[
            "confus",
            "memory",
            "forget",
            "sleepy",
            "mixed",
            "think",
            "糊涂",
            "忘",
            "意识",
            "困",
        ],
        onset=_t("a few days ago, my family noticed it", "几天前，家里人发现的"),
        provocation=_t("worse when I'm constipated", "便秘时更明显"),
        quality=_t("foggy thinking", "脑子发懵"),
        region=_t("in my head", "脑子里"),
        severity=4,
        timing=_t("comes and goes, worse in the evening", "时好时坏，晚上更重"),
        associated=_t("my hands shake a bit", "手有点抖"),
    ),
}

PAIN: dict[str, JsonObject] = {
    "none": dict(present=False),
    "headache": dict(
        present=True,
        location=_t("back of the head", "后脑勺"),
        quality=_t("pounding, pressure-like", "搏动性胀痛"),
        score=7,
        radiation=_t("down into my neck", "往脖子放射"),
        timing=_t("constant since this morning", "从早上起一直痛"),
        relief=_t(
            "nothing helps much; lying in a dark room a little", "没什么能缓解，躺在暗处稍好"
        ),
    ),
    "pleuritic": dict(
        present=True,
        location=_t("right side of the chest", "右侧胸部"),
        quality=_t("sharp, stabbing", "像刀扎一样的锐痛"),
        score=6,
        radiation=_t("into my right back", "往右后背放射"),
        timing=_t("with every deep breath or cough", "深呼吸或咳嗽时就痛"),
        relief=_t("holding a pillow against my chest when I cough", "咳嗽时抱个枕头顶着胸口会好些"),
    ),
    "abdominal": dict(
        present=True,
        location=_t("whole belly, mostly the sides", "整个肚子，两侧更明显"),
        quality=_t("dull, stretched ache", "胀痛、钝痛"),
        score=4,
        radiation=_t("into my lower back", "往下背部放射"),
        timing=_t("all the time, worse after eating", "一直有，吃完饭更重"),
        relief=_t("lying on my side", "侧躺会舒服点"),
    ),
}

PATIENT_TERMS = {
    "I4891": _t("irregular heartbeat (AFib)", "房颤（心律不齐）"),
    "I480": _t("irregular heartbeat (AFib)", "房颤（心律不齐）"),
    "I4820": _t("irregular heartbeat (AFib)", "房颤（心律不齐）"),
    "N183": _t("weak kidneys", "肾功能不好"),
    "N184": _t("weak kidneys", "肾功能不好"),
    "E1122": _t("sugar diabetes", "糖尿病"),
    "E875": _t("high potassium", "血钾高"),
    "I10": _t("high blood pressure", "高血压"),
    "I5022": _t("weak heart", "心衰"),
    "I5023": _t("weak heart with fluid", "心衰、积水"),
    "I5033": _t("stiff heart with fluid", "心衰、积水"),
    "R600": _t("swollen ankles", "脚踝肿"),
    "J13": _t("pneumonia", "肺炎"),
    "A419": _t("blood infection", "血液感染"),
    "J449": _t("COPD (emphysema)", "慢阻肺"),
    "K7031": _t("liver scarring from drinking", "酒精性肝硬化"),
    "R188": _t("fluid in my belly", "肚子里有积水"),
    "I130": _t("high blood pressure affecting heart and kidneys", "高血压累及心肾"),
}

NONADHERENCE_REASON = {
    "afib_apixaban": _t(
        "my gums kept bleeding when I brushed, so I stopped it for about a week",
        "刷牙时牙龈总出血，我就自己停了大概一个星期",
    ),
    "ckd_metformin": _t(
        "it upsets my stomach, so I stopped taking it about ten days ago",
        "吃了胃不舒服，大概十天前就不吃了",
    ),
    "hyperkalemia_raas": _t(
        "I skip it when I go out because I have to run to the bathroom; I missed most days last "
        "week",
        "出门时我就不吃，因为老要上厕所；上周大部分天都没吃",
    ),
    "htn_amlodipine_edema": _t(
        "I stopped it because I was up all night going to the bathroom",
        "因为夜里老起来上厕所，我就停了",
    ),
    "pneumonia_sepsis": _t(
        "I ran out about a month ago and didn't refill it; it's expensive",
        "大概一个月前用完了，太贵就没再买",
    ),
    "cirrhosis_ascites": _t(
        "I stopped it about a week ago because of the diarrhea", "大概一周前因为拉肚子就停了"
    ),
    "hf_discharge": _t(
        "I skip the water pill on days I go out; I didn't take it most of last week",
        "出门那天我就不吃利尿药，上周大部分天都没吃",
    ),
}


def social_for(plan: SubjectPlan, case: ArchetypeCase, r: random.Random) -> JsonObject:
    """Social history facts; the discharge note and the PHM share them."""
    arche = case.archetype
    smoking = (
        ("current" if r.random() < 0.4 else "former")
        if arche == "pneumonia_sepsis"
        else r.choice(("never", "never", "former"))
    )
    alcohol = (
        ("former_heavy" if r.random() < 0.5 else "heavy")
        if arche == "cirrhosis_ascites"
        else r.choice(("none", "social", "none"))
    )
    lives_alone = r.random() < 0.35
    occupation = r.choice(
        [
            ("retired teacher", "退休教师"),
            ("retired bus driver", "退休公交司机"),
            ("retired nurse", "退休护士"),
            ("accountant", "会计"),
            ("construction worker", "建筑工人"),
            ("restaurant owner", "餐馆老板"),
        ]
    )
    if plan.age >= 66 and occupation[0] in (
        "accountant",
        "construction worker",
        "restaurant owner",
    ):
        occupation = ("retired " + occupation[0], "退休" + occupation[1])
    living = (
        _t("I live alone in an apartment", "我一个人住在公寓里")
        if lives_alone
        else _t("I live with my spouse in a house", "我和老伴住在一栋房子里")
    )
    support = (
        _t("my daughter checks on me a couple of times a week", "女儿每周来看我两三次")
        if lives_alone
        else _t("my spouse helps me with my pills and appointments", "老伴帮我管药和约门诊")
    )
    smoke_txt = {
        "never": _t("I've never smoked", "我从来不抽烟"),
        "former": _t(
            "I smoked a pack a day for about 20 years but quit 10 years ago",
            "以前每天一包，抽了大约20年，10年前戒了",
        ),
        "current": _t("I still smoke about a pack a day", "我现在还每天抽一包左右"),
    }[smoking]
    alc_txt = {
        "none": _t("I don't drink alcohol", "我不喝酒"),
        "social": _t("maybe a glass of wine on weekends", "周末偶尔喝一杯葡萄酒"),
        "heavy": _t("I drink about six beers a day", "我每天大概喝六瓶啤酒"),
        "former_heavy": _t(
            "I used to drink a lot, a pint of vodka a day, but I stopped three months ago",
            "以前喝得很多，每天半斤多伏特加，三个月前戒了",
        ),
    }[alcohol]
    note = (
        f"Lives {'alone' if lives_alone else 'with spouse'}. Occupation: {occupation[0]}. Tobacco: "
        f"{'never' if smoking == 'never' else 'former, ~20 pack-years, quit 10 years ago' if smoking == 'former' else 'current, 1 ppd'}. "
        "EtOH: "
        f"{'none' if alcohol == 'none' else 'occasional' if alcohol == 'social' else '~6 beers daily' if alcohol == 'heavy' else 'heavy in the past (pint of vodka daily), quit 3 months ago'}. "
        "Illicits: denies."
    )
    return {
        "living": living,
        "occupation": _t(occupation[0], occupation[1]),
        "smoking": {"status": smoking, **smoke_txt},
        "alcohol": {"status": alcohol, **alc_txt},
        "drugs": _t("no recreational drugs", "不吸毒"),
        "support": support,
        "lives_alone": lives_alone,
        "note": note,
    }


def functional_for(plan: SubjectPlan, case: ArchetypeCase, r: random.Random) -> JsonObject:
    frail = (
        plan.age >= 80 or case.archetype in ("hf_discharge", "cirrhosis_ascites") and case.tier >= 2
    )
    device = r.choice(("cane", "walker")) if frail else None
    blocks = r.choice((1, 2)) if frail else r.choice((4, 6, 10))
    return {
        "adl": (
            _t(
                "I can wash and dress myself, but slowly; I need help getting in and out of the "
                "shower",
                "我能自己洗漱穿衣，就是慢；进出淋浴需要人帮",
            )
            if frail
            else _t(
                "I take care of myself: bathing, dressing, cooking",
                "生活都能自理：洗澡、穿衣、做饭",
            )
        ),
        "iadl": (
            _t("my family does the shopping and manages my pills", "买东西和管药都是家里人帮忙")
            if frail
            else _t("I still drive and do my own shopping", "我还能开车，自己买东西")
        ),
        "mobility": (
            _t(f"I walk with a {device}", f"我走路要用{'拐杖' if device == 'cane' else '助行器'}")
            if device
            else _t("I walk without any aid", "我走路不用辅助")
        ),
        "exercise_tolerance": _t(
            f"about {blocks} block{'s' if blocks > 1 else ''} before I have to stop",
            f"走大约{blocks}个街区就得停下来歇",
        ),
        "falls": (
            _t("I fell once last month at home", "上个月在家摔过一次")
            if frail and r.random() < 0.5
            else _t("no falls", "没有摔倒过")
        ),
        "assistive_device": device,
        "blocks": blocks,
        "frail": frail,
    }


@functools.cache
def _names(code: str) -> tuple[str, ...]:
    d = DRUGS[code]
    names = {d.drug.lower(), re.sub(r"[\d_].*$", "", code)}
    names.update(w.strip().lower() for w in re.split(r"[()]", d.en) if w.strip())
    return tuple(sorted(n for n in names if n))


def drug_names(code: str) -> list[str]:
    """Lower-case names a patient or clinician may use for a drug: generic, brand, formulary."""
    return list(_names(code))


def _medications(
    plan: SubjectPlan,
    case: ArchetypeCase,
    persona: JsonObject,
    r: random.Random,
) -> list[JsonObject]:
    meds = []
    key = case.key_drug
    adherence = persona["adherence"]
    withheld_mode = persona["info_completeness"] == "critical_withheld"
    others = [m for m in plan.home_meds if m != key]
    forgets = r.choice(others) if others and adherence in ("uncertain", "poor") else None
    ran_out = (
        r.choice([m for m in others if m != forgets] or [None]) if adherence == "poor" else None
    )
    for code in plan.home_meds:
        d = DRUGS[code]
        entry = {
            "drug": d.drug,
            "code": code,
            "names": drug_names(code),
            "patient_term": _t(d.en, d.zh),
            "purpose": _t(d.purpose_en, d.purpose_zh),
            "dose": f"{d.dose} {d.unit}",
            "frequency": d.freq,
            "adherence": "good",
            "current_status": "taking",
            "missed_per_week": 0,
            "reason": None,
            "critical_flag": False,
            "withheld": False,
        }
        if code == key and (adherence == "poor" or withheld_mode):
            entry.update(
                adherence="self_discontinued",
                current_status="not_taking",
                missed_per_week=6,
                reason=NONADHERENCE_REASON[case.archetype],
                critical_flag=True,
                withheld=withheld_mode,
            )
        elif code == forgets:
            entry.update(
                adherence="sometimes_forgets",
                missed_per_week=r.randint(1, 3),
                reason=_t(
                    "I just forget sometimes, especially the evening dose",
                    "有时候就是忘了，尤其是晚上那顿",
                ),
            )
        elif code == ran_out:
            entry.update(
                adherence="ran_out",
                current_status="not_taking",
                missed_per_week=7,
                reason=_t(
                    "I ran out last week and haven't picked up the refill", "上周吃完了，还没去拿药"
                ),
            )
        meds.append(entry)
    return meds


def build_phm(
    plan: SubjectPlan, case: ArchetypeCase, r: random.Random, social: JsonObject
) -> JsonObject:
    persona = persona_for(plan.idx)
    persona["self_diagnosis_tendency"] = (
        "high" if persona["anxiety_level"] == "high" and r.random() < 0.5 else "low"
    )
    symptoms = []
    for i, key in enumerate(case.symptom_keys):
        s = SYMPTOMS[key]
        symptoms.append({"key": key, "primary": i == 0, **s})
    pain = {"key": case.pain_key, **PAIN[case.pain_key]}
    diagnoses = [
        {
            "icd_code": c,
            "medical_term": ICD10[c],
            "patient_term": PATIENT_TERMS.get(c, _t(ICD10[c], ICD10[c])),
        }
        for c in plan.anchor.diagnoses[:5]
    ]
    return {
        "subject_id": plan.subject_id,
        "anchor_hadm_id": plan.anchor.hadm_id,
        "archetype": plan.archetype,
        "tier": plan.tier,
        "persona": persona,
        "chief_complaint": _t(
            SYMPTOMS[case.symptom_keys[0]]["plain"]["en"],
            SYMPTOMS[case.symptom_keys[0]]["plain"]["zh"],
        ),
        "symptoms": symptoms,
        "medications": _medications(plan, case, persona, r),
        "social_history": {k: v for k, v in social.items() if k != "note"},
        "functional_status": functional_for(plan, case, r),
        "pain": pain,
        "diagnoses": diagnoses,
    }


def load_phm(cohort_dir: str | Path, subject_id: int | str) -> JsonObject | None:
    """The PHM of one subject, or None when the cohort has no PHM for it; a PHM file that is
    not a JSON object fails naming the file."""
    try:
        sid = int(subject_id)
    except (TypeError, ValueError):
        return None
    path = Path(cohort_dir) / "phm" / f"{sid}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable patient health model ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: a patient health model must be a JSON object, got {type(data).__name__}"
        )
    return data
