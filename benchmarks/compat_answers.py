"""compat's answers to many calls, one JSON line each, for diffing two versions of the code.

    python benchmarks/compat_answers.py STORE [--subjects 150] [--largest 5] [--small N] > out.jsonl

STORE is a built ``.duckdb`` store or a source (``sample``, a MIMIC-IV directory). Calls
``Observation.search`` (labs, vitals, microbiology), ``MedicationRequest.search`` and
``MedicationAdministration.search`` in compat for the ``--largest`` subjects with the most lab
+ chart rows and ``--subjects`` random ones, several calls each, arguments drawn from a fixed
seed: codes that match and that do not, admissions, date bounds (the session date, a
month's start, ``""`` escaping the date gate, a number), ``_count`` (absent, small, None,
negative, text), medications (plain words, a regular expression, one matching nothing). Run it
with the code before and after a change and compare the files (``cmp``); ``--small N`` sets
the store's small-chart threshold (``SMALL_CHART_ROWS``; 0: every chart takes the big path).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ehr_tools import LAB_NAMES, subject_facts  # noqa: E402

import physassist.ehr.store as store_module  # noqa: E402
from physassist.ehr.store import open_store  # noqa: E402
from physassist.ehr.tools import ToolContext, call_tool  # noqa: E402

VITALS = ("Heart Rate", "systolic", "Weight", "temp", "O2 saturation", "zzz")
DRUGS = (
    "heparin",
    "INSULIN",
    "furo",
    "zz",
    "sodium chloride",
    "acetaminophen",
    "^a.*l$",
    "(Porcine)",
)


def calls(
    rng: random.Random, sid: int, stays: list[tuple[int, str]]
) -> list[tuple[str, dict[str, Any], str | None]]:
    """(tool, arguments, session date) for one subject."""
    out = []
    for _ in range(6):
        hadm, date = rng.choice(stays) if stays else (None, None)
        base: dict[str, Any] = {"subject_id": sid}
        if hadm is not None and rng.random() < 0.5:
            base["hadm_id"] = hadm if rng.random() < 0.9 else float(hadm)
        if rng.random() < 0.1:
            date = None
        r = rng.random()
        obs = dict(base)
        if r < 0.55:
            obs["code"] = rng.choice(LAB_NAMES)
        elif r < 0.7:
            obs.update(category="vital-signs", code=rng.choice(VITALS))
        elif r < 0.8:
            obs["category"] = rng.choice(("vital-signs", "vitals"))
        elif r < 0.88:
            obs["category"] = "microbiology"
        if date and rng.random() < 0.3:
            obs["date_from"] = date[:8] + "01"
        if date and rng.random() < 0.2:
            obs["date_to"] = rng.choice((date, "", date[:4], 5))
        if rng.random() < 0.3:
            obs["_count"] = rng.choice((1, 3, 50, None, -2, "5"))
        out.append(("Observation.search", obs, date))
        for tool in ("MedicationRequest.search", "MedicationAdministration.search"):
            args = dict(base)
            if rng.random() < 0.5:
                args["medication"] = rng.choice(DRUGS)
            if tool == "MedicationRequest.search" and rng.random() < 0.2:
                args["status"] = rng.choice(("active", "completed", "stopped"))
            out.append((tool, args, date))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("store")
    ap.add_argument("--subjects", type=int, default=150)
    ap.add_argument("--largest", type=int, default=5)
    ap.add_argument("--small", type=int, help="the small-chart threshold (SMALL_CHART_ROWS)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    if args.small is not None:
        store_module.SMALL_CHART_ROWS = args.small
    rng = random.Random(args.seed)
    with open_store(args.store) as store:
        every = [
            s
            for (s,) in store.cursor()
            .execute("SELECT subject_id FROM patients ORDER BY 1")
            .fetchall()
        ]
        big = [
            s
            for (s,) in store.cursor()
            .execute(
                "SELECT subject_id FROM (SELECT subject_id FROM labevents UNION ALL "
                "SELECT subject_id FROM chartevents) GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT ?",
                [args.largest],
            )
            .fetchall()
        ]
        pick = big + rng.sample(every, min(args.subjects, len(every)))
        facts = subject_facts(store, pick)
        n = 0
        for sid in pick:
            for tool, call, date in calls(rng, sid, facts[sid]):
                ctx = ToolContext(
                    store=store, subject_id=sid, current_date=date, semantics="compat"
                )
                try:
                    out: Any = call_tool(ctx, tool, dict(call))
                except Exception as exc:  # a fault is an answer to compare too
                    out = repr(exc)
                print(json.dumps([tool, call, date, out], default=str))
                n += 1
    print(f"{n} calls, {len(pick)} subjects ({len(big)} largest)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
