"""A discharge-planning session's ``note_grounding``: what the anchor admission's discharge
summary says (chief complaint, medications on admission, social history, functional status,
discharge condition, follow-up, discharge medications), as the released discharge-planning
sessions carry it. Read with strict's section parser (``docs/notes.md``)."""

from __future__ import annotations

from typing import Any

from physassist.ehr.tools.notes_text import note_grounding


def anchor_note_grounding(con: Any, subject_id: int, hadm_id: int) -> dict[str, str | None] | None:
    """The grounding of the admission's last discharge summary, or None without one."""
    row = con.execute(
        "SELECT text FROM discharge WHERE subject_id = ? AND hadm_id = ? "
        "ORDER BY charttime DESC, note_seq DESC LIMIT 1",
        [subject_id, hadm_id],
    ).fetchone()
    return None if row is None or row[0] is None else note_grounding(str(row[0]))
