"""Re-point the sample's sessions at subjects of a big store, for an eval at scale.

    python benchmarks/scale_sessions.py STORE.duckdb OUT_DIR [--sessions data/sample/sessions]
    physassist-eval dataset=physassistbench dataset.source=OUT_DIR dataset.ehr_source=SOURCE \
        model=oracle

The mapping (written to ``OUT_DIR/mapping.json``): the store's subjects with an ICU stay are
ranked by lab + chart rows, largest first; the i-th of the n sessions (files in name order,
lines in file order) gets the subject at rank ``round(i * (len - 1) / (n - 1))``, so the
sessions span the whole distribution and the first gets the largest chart. Each session's
subject id, its admission ids and its date (``current_date``, the ``Current date:`` of
``env_info``) are replaced, as whole words everywhere in the line, by the subject's last
admission and that admission's discharge date. Gold answers are not recomputed: scores
are meaningless, tool times and memory are what the eval at scale measures.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from physassist.ehr.store import EHRStore, open_store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_IDS = re.compile(r"\b\d{8}\b")  # MIMIC subject and admission ids have 8 digits


def ranked_subjects(store: EHRStore) -> list[tuple[int, int, str]]:
    """(subject, last admission, its discharge date) of ICU subjects, largest chart first."""
    return [
        (s, h, d)
        for s, h, d in store.cursor()
        .execute(
            """
            WITH sizes AS (SELECT subject_id, count(*) AS n FROM (SELECT subject_id FROM labevents
                           UNION ALL SELECT subject_id FROM chartevents) GROUP BY 1),
                 last AS (SELECT subject_id, arg_max(hadm_id, dischtime) AS hadm_id,
                                 CAST(CAST(max(dischtime) AS DATE) AS VARCHAR) AS day
                          FROM admissions GROUP BY 1)
            SELECT subject_id, hadm_id, day FROM last JOIN sizes USING (subject_id)
            WHERE subject_id IN (SELECT subject_id FROM icustays) ORDER BY n DESC, subject_id
            """
        )
        .fetchall()
    ]


def repoint(sessions: Path, store: EHRStore, sample: EHRStore, out: Path) -> list[dict]:
    """Write the re-pointed sessions and ``mapping.json`` into ``out``; ``sample`` is the store
    the sessions were made on (it names each subject's admission ids)."""
    lines = [
        (f.name, line)
        for f in sorted(sessions.glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    ranked = ranked_subjects(store)
    out.mkdir(parents=True, exist_ok=True)
    mapping, written = [], {}
    for i, (name, line) in enumerate(lines):
        session = json.loads(line)
        subject, hadm, day = ranked[round(i * (len(ranked) - 1) / max(1, len(lines) - 1))]
        old_subject, old_day = str(session["subject_id"]), str(session["current_date"])
        known = {
            str(r["hadm_id"])
            for r in sample.subject_rows("admissions", int(old_subject), ("hadm_id",))
        }
        old_hadms = {m for m in _IDS.findall(line) if m in known}
        swap = {old_subject: str(subject), **{h: str(hadm) for h in old_hadms}}
        line = _IDS.sub(lambda m, swap=swap: swap.get(m.group(0), m.group(0)), line).replace(
            old_day, day
        )
        written.setdefault(name, []).append(line)
        mapping.append({"session": session["id"], "subject_id": [int(old_subject), subject],
                        "hadm_ids": sorted(old_hadms), "hadm_id": hadm,
                        "current_date": [old_day, day]})  # fmt: skip
    for name, kept in written.items():
        (out / name).write_text("\n".join(kept) + "\n")
    (out / "mapping.json").write_text(json.dumps(mapping, indent=1))
    return mapping


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("store", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--sessions", type=Path, default=ROOT / "data/sample/sessions")
    ap.add_argument("--sample", default="sample", help="the EHR source the sessions were made on")
    args = ap.parse_args(argv)
    with EHRStore(args.store) as store, open_store(args.sample) as sample:
        mapping = repoint(args.sessions, store, sample, args.out)
    print(f"{len(mapping)} sessions re-pointed into {args.out} (mapping.json beside them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
