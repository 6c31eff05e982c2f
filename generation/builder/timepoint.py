"""When a built session happens (``physassist.vocab.TIMEPOINTS``).

* ``discharge`` (the paper's design, the default): at the end of the anchor admission's
  discharge date; the session carries only its ``current_date``.
* ``in-stay`` (our extension): at :data:`IN_STAY_HOUR` of a hospital day inside the stay, with
  the next lab draw of the stay still ahead and a lab reported before it, so the chart is
  mid-course: cultures pending, the morning's labs partly reported, the admission neither
  discharged nor coded. The session carries the instant as ``cutoff`` (its date as
  ``current_date``), and the tools and the clinical timeline apply it.
"""

from __future__ import annotations

import datetime as dt
import random

import duckdb

from physassist.timeline import load_timeline

#: The hour of an in-stay session: morning rounds, the early draws partly reported.
IN_STAY_HOUR = 8


def in_stay_cutoff(
    con: duckdb.DuckDBPyConnection, subject_id: int, hadm_id: int, rng: random.Random
) -> dt.datetime | None:
    """A seeded choice of the mornings of the stay (after the admission day, before the
    discharge day) with a lab reported before it and a lab drawn after it, in the stay; None
    when the stay has no such morning."""
    row = con.execute(
        "SELECT admittime, dischtime FROM admissions WHERE hadm_id = ?", [hadm_id]
    ).fetchone()
    if row is None or row[0] is None or row[1] is None:
        return None
    admit, disch = row
    mornings = []
    day = admit.date() + dt.timedelta(days=1)
    while day < disch.date():
        at = dt.datetime.combine(day, dt.time(IN_STAY_HOUR))
        tl = load_timeline(con, subject_id, hadm_id, day.isoformat(), at)
        scope, params = tl.lab_scope()
        known = _count(con, f"SELECT count(*) FROM labevents l WHERE {scope}", params)
        ahead = _count(
            con,
            "SELECT count(*) FROM labevents WHERE subject_id = ? AND hadm_id = ? "
            "AND charttime > ? AND charttime <= ?",
            [subject_id, hadm_id, at, disch],
        )
        if known and ahead:
            mornings.append(at)
        day += dt.timedelta(days=1)
    return rng.choice(mornings) if mornings else None


def _count(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> int:
    row = con.execute(sql, params).fetchone()
    return int(row[0]) if row else 0
