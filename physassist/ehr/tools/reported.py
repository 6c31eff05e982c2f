"""When a result is known, and which specimens without an admission belong to a stay: the two
rules strict's lab and microbiology answers and the clinical timeline (``physassist.timeline``)
share.

* **Report time.** A lab value or a microbiology result is known from the time it was reported:
  ``storetime``, else the end of ``storedate`` (a report date without a time is known that day
  at the latest, never earlier than it may have been). Where the source records no report time
  at all (a table without any ``storetime`` / ``storedate``: a reduced release or a hand-made
  source), a result is known from its specimen's own time. In a source that records them, a row
  without one was never reported and stays pending: the MIMIC-IV demo's 16 such microbiology
  rows are mycobacterial cultures (final after weeks), its 992 such lab rows held or cancelled
  specimens (495 without a value, 387 "HOLD", 101 "___"). A specimen drawn by the cutoff whose
  result is reported after it is *pending*: an EHR shows its specimen, test and draw time, never
  its result. (The demo: 182 organism rows of 20 admissions were drawn in the stay and reported
  after discharge, 47 lab rows likewise; a culture takes days, a fungal culture weeks.)
* **Specimens of the stay.** A specimen without ``hadm_id`` belongs to an admission of the same
  subject when it was drawn in that stay's window, from ``edregtime`` (else ``admittime``) to
  ``dischtime``: mostly emergency-department specimens taken before the admission was opened
  (the demo: 511 microbiology rows and 8,326 lab rows without ``hadm_id`` fall in a stay's
  window, 392 and 7,597 of them before ``admittime``). A specimen known only by its date
  belongs to the stay when that date is one of the stay's days.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]
#: A value of a row that is not a bare column: (SQL expression, the same in Python).
Expression = tuple[str, Callable[[Row], Any]]

#: Where a stay's specimen without ``hadm_id`` was drawn.
EMERGENCY = "emergency department"
UNLINKED = "unlinked"


def _stamp(value: Any) -> dt.datetime | None:
    """A TIMESTAMP or DATE value as a datetime (NULL: None). Anything else is a store that does
    not hold the types the tables declare: raised, never read as "not reported"."""
    if value is None or isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time.min)
    raise TypeError(f"expected a date or a timestamp, got {type(value).__name__} {value!r}")


def day_end(value: Any) -> dt.datetime | None:
    """The last microsecond of the day of ``value`` (a date or a timestamp)."""
    when = _stamp(value)
    return None if when is None else dt.datetime.combine(when.date(), dt.time.max)


def _first(*values: Any) -> dt.datetime | None:
    return next((v for v in (_stamp(x) for x in values) if v is not None), None)


#: A lab row: drawn at ``charttime``; a microbiology row: at ``charttime``, else on ``chartdate``.
LAB_DRAWN: Expression = ('"charttime"', lambda r: _stamp(r["charttime"]))
MICRO_DRAWN: Expression = (
    'COALESCE("charttime", "chartdate")',
    lambda r: _first(r["charttime"], r["chartdate"]),
)
#: The tables whose results have report times, and those columns (time first, then date).
REPORT_COLUMNS = {"labevents": ("storetime",), "microbiologyevents": ("storetime", "storedate")}
_DRAWN = {"labevents": LAB_DRAWN, "microbiologyevents": MICRO_DRAWN}


def recorded_sql(table: str) -> str:
    """Whether ``table`` records report times at all (one row with one is enough)."""
    held = " OR ".join(f'"{c}" IS NOT NULL' for c in REPORT_COLUMNS[table])
    return f'SELECT EXISTS (SELECT 1 FROM "{table}" WHERE {held}) AS recorded'


def reported_at(table: str, recorded: bool) -> Expression:
    """When a row of ``table`` was reported (see the module rules): its ``storetime``, else the
    end of its ``storedate``; where the table records no report time (``recorded`` False), its
    specimen time; else NULL (never reported)."""
    columns = REPORT_COLUMNS[table]
    drawn_sql, drawn = _DRAWN[table]
    sql = ['"storetime"'] + (
        ['"storedate" + INTERVAL 1 DAY - INTERVAL 1 MICROSECOND'] if "storedate" in columns else []
    )
    if not recorded:
        sql.append(drawn_sql)

    def get(r: Row) -> dt.datetime | None:
        date = day_end(r["storedate"]) if "storedate" in columns else None
        return _first(r["storetime"], date, None if recorded else drawn(r))

    return f"COALESCE({', '.join(sql)})", get


def known(reported: dt.datetime | None, cutoff: dt.datetime | None) -> bool:
    """Whether a result reported at ``reported`` is known at ``cutoff`` (inclusive; None: no
    cutoff). A result never reported (None) is never known."""
    return reported is not None and (cutoff is None or reported <= cutoff)


@dataclass(frozen=True)
class Stay:
    """One admission's window for specimens without ``hadm_id``."""

    hadm_id: int
    start: dt.datetime  # edregtime, else admittime
    admitted: dt.datetime
    end: dt.datetime  # dischtime (``datetime.max`` while unknown)

    def holds(self, drawn: dt.datetime | None, day_only: bool = False) -> bool:
        """Whether a specimen drawn at ``drawn`` (only its date known: ``day_only``) is the
        stay's."""
        if drawn is None:
            return False
        if day_only:
            return self.start.date() <= drawn.date() <= self.end.date()
        return self.start <= drawn <= self.end

    def origin(self, drawn: dt.datetime) -> str:
        """Where the stay's specimen without ``hadm_id`` came from: the emergency department
        when drawn before the admission was opened, else nothing more is known."""
        return EMERGENCY if drawn < self.admitted else UNLINKED


def stays(admissions: Iterable[Row]) -> list[Stay]:
    """The windows of a subject's admissions (rows with ``hadm_id``, ``admittime``,
    ``dischtime``, ``edregtime``), oldest first; an admission without a time has none."""
    out = []
    for a in admissions:
        admitted = _stamp(a["admittime"])
        if a["hadm_id"] is None or admitted is None:
            continue
        ed = _stamp(a.get("edregtime"))
        start = min(ed, admitted) if ed is not None else admitted
        out.append(
            Stay(int(a["hadm_id"]), start, admitted, _stamp(a["dischtime"]) or dt.datetime.max)
        )
    return sorted(out, key=lambda s: s.admitted)


def owner(
    found: Iterable[Stay], hadm_id: Any, drawn: dt.datetime | None, day_only: bool = False
) -> tuple[int | None, str | None]:
    """The admission a specimen belongs to and, for one without ``hadm_id``, where it came
    from (:data:`EMERGENCY` or :data:`UNLINKED`); ``(None, None)`` for a specimen of no stay."""
    if hadm_id is not None:
        return int(hadm_id), None
    for stay in found:
        if stay.holds(drawn, day_only):
            assert drawn is not None
            return stay.hadm_id, stay.origin(drawn)
    return None, None


#: How a specimen's origin is said to a reader (a note on the result).
ORIGIN_NOTE = {
    EMERGENCY: "drawn in the emergency department before admission (no admission id in the source)",
    UNLINKED: "drawn during the stay (no admission id in the source)",
}
