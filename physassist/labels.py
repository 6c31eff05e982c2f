"""Physicians' labels for a run: the subset to label, the reviewer's sheet, the filled sheet
read back.

``physassist-label`` (``physassist/cli/label.py``) runs these over MLflow; they are plain
functions of a turn table and an Inspect log:

* ``draw(turns, size, seed)``: a random subset of the turns the judge scored, stratified by
  scenario x tier (each stratum in proportion, at least one turn from every stratum the size
  allows, seeded), so the calibration (``physassist.calibration``) can weight each stratum;
* ``sheet(drawn, log, run_id)``: the reviewer's sheet, one CSV row per rubric item (the run,
  question, answer, the item, the tool results the answer used; empty ``verdict`` /
  ``rationale`` / ``reviewer`` columns to fill) and the same turns as Markdown to read. The
  judge's verdicts are not on it: the physicians judge blind, or their labels would lean on the
  judge's;
* ``sheet_run(path)``: the run the sheet was drawn from (its ``run_id`` column), so its
  verdicts go to that run's traces whichever run finished since;
* ``read_sheet(path)``: the filled sheet's verdicts (``pass`` / ``fail`` and the usual
  spellings; empty: undecided), one clear line naming the row and field for anything else.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from physassist.calibration import strata_of

__all__ = [
    "SHEET_COLUMNS", "SheetError", "draw", "read_sheet", "sheet", "sheet_run", "turn_texts",
]  # fmt: skip

KEYS = ["session_id", "epoch", "turn"]
SHEET_COLUMNS = [
    "run_id", "session_id", "epoch", "turn", "item", "scenario", "tier", "question", "answer",
    "rubric_item", "tool_results", "verdict", "rationale", "reviewer",
]  # fmt: skip
RESULT_CHARS = 3000  # of each tool result on the sheet (a lab series can run to pages)
PASS = {"pass", "passed", "yes", "y", "true", "1"}
FAIL = {"fail", "failed", "no", "n", "false", "0"}


class SheetError(ValueError):
    """A filled sheet that cannot be read; the message names the file, row and field."""


def draw(turns: pd.DataFrame, size: int, seed: int = 0) -> pd.DataFrame:
    """``size`` of the turns the judge scored, stratified by scenario x tier: each stratum gets
    its share (largest remainders), at least one while ``size`` allows, drawn without
    replacement (seeded); sorted by session, epoch, turn."""
    scored = turns[
        (turns["status"] == "scored") & pd.to_numeric(turns["score"], errors="coerce").notna()
    ].reset_index(drop=True)
    if size < 1 or size > len(scored):
        raise ValueError(f"size={size}: choose 1 to {len(scored)} (the turns the judge scored)")
    strata = strata_of(scored)
    counts = {str(k): int(v) for k, v in strata.value_counts().sort_index().items()}
    quota = {k: n / len(scored) * size for k, n in counts.items()}
    take = {k: max(math.floor(q), 1 if size >= len(counts) else 0) for k, q in quota.items()}
    while sum(take.values()) > size:  # the minimum of one took too many: from the largest
        take[max(take, key=lambda k: take[k])] -= 1
    for stratum in sorted(quota, key=lambda k: quota[k] - math.floor(quota[k]), reverse=True):
        if sum(take.values()) >= size:
            break
        if take[stratum] < counts[stratum]:
            take[stratum] += 1
    rng = np.random.default_rng(seed)
    picked = [
        rng.choice(scored.index[strata == s], size=n, replace=False) for s, n in take.items() if n
    ]
    drawn = scored.loc[np.concatenate(picked)] if picked else scored.iloc[:0]
    return drawn.sort_values(KEYS).reset_index(drop=True)


def turn_texts(log: Any) -> dict[tuple[str, int, int], dict[str, Any]]:
    """``(session, epoch, turn) -> {"answer", "calls": [(name, arguments, text)]}`` from the
    loop's turn records in each sample's store: the one place labels read them."""
    from physassist.turn_records import stored_turns

    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    for sample in log.samples or []:
        for record in stored_turns(sample.store):
            out[(str(sample.id), int(sample.epoch), record.turn)] = {
                "answer": record.answer,
                "calls": [(c.name, c.arguments, c.text) for c in record.calls],
            }
    return out


def _rubrics(log: Any) -> dict[tuple[str, int], list[str]]:
    """``(session, turn) -> rubric items`` in the run's language, from the samples' sessions."""
    from physassist.data.models import sample_session

    out: dict[tuple[str, int], list[str]] = {}
    for sample in log.samples or []:
        md = sample.metadata or {}
        session = sample_session(md["session"])
        for turn in range(len(session.rubrics)):  # the judged turns
            out[(str(sample.id), turn)] = session.rubric(turn, str(md.get("language", "en")))
    return out


def _results(calls: list[tuple[Any, Any, str]]) -> str:
    return "\n\n".join(
        f"{name} {args}\n{text[:RESULT_CHARS]}" + (" [...]" if len(text) > RESULT_CHARS else "")
        for name, args, text in calls
    )


def sheet(drawn: pd.DataFrame, log: Any, run_id: str | None = None) -> tuple[pd.DataFrame, str]:
    """The reviewer's sheet of the drawn turns: CSV rows (``SHEET_COLUMNS``) and Markdown."""
    texts, rubrics = turn_texts(log), _rubrics(log)
    rows: list[dict[str, Any]] = []
    parts = [
        f"# Reviewer's sheet{f' of run {run_id}' if run_id else ''}",
        "",
        f"{len(drawn)} turns drawn at random (stratified by scenario and tier). For each rubric "
        "item, write `pass` or `fail` in the `verdict` column of `sheet.csv` (leave it empty "
        "when you cannot decide), a short `rationale` where it helps, and your name or email in "
        "`reviewer`. The judge's verdicts are not shown: judge each answer on its own. Then: "
        "`physassist-label import sheet.csv`.",
        "",
    ]
    for row in drawn.itertuples(index=False):
        key = (str(row.session_id), int(str(row.epoch)), int(str(row.turn)))
        text = texts.get(key, {"answer": "", "calls": []})
        items = rubrics.get((key[0], key[2]), [])
        results = _results(text["calls"])
        for k, item in enumerate(items, start=1):
            rows.append(
                {
                    "run_id": run_id or "", "session_id": key[0], "epoch": key[1],
                    "turn": key[2], "item": k,
                    "scenario": row.scenario, "tier": row.tier, "question": row.question,
                    "answer": text["answer"], "rubric_item": item,
                    "tool_results": results if k == 1 else "(as item 1)",
                    "verdict": "", "rationale": "", "reviewer": "",
                }
            )  # fmt: skip
        parts += [
            f"## {key[0]}, epoch {key[1]}, turn {key[2]} ({row.scenario}, tier {row.tier})",
            "",
            f"**Question:** {row.question}",
            "",
            "**Answer:**",
            "",
            *[f"> {line}" for line in (text["answer"] or "(no answer)").splitlines()],
            "",
            "**Rubric items** (verdicts go in sheet.csv):",
            "",
            *[f"{k}. {item}" for k, item in enumerate(items, start=1)],
            "",
            "**Tool results the answer used:**",
            "",
            *(["```", results, "```"] if results else ["(no tool call)"]),
            "",
        ]
    return pd.DataFrame(rows, columns=SHEET_COLUMNS), "\n".join(parts)


def _verdict(value: Any) -> bool | None:
    text = (
        ""
        if value is None or (isinstance(value, float) and math.isnan(value))
        else str(value).strip().lower()
    )
    if text == "":
        return None
    if text in PASS:
        return True
    if text in FAIL:
        return False
    raise KeyError(text)


def sheet_run(path: Path) -> str | None:
    """The run id of the sheet's ``run_id`` column; None for a sheet without one (drawn before
    the column existed, or by hand)."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SheetError(f"{path}: cannot read it as CSV: {exc}") from exc
    if "run_id" not in frame.columns:
        return None
    runs = sorted({r.strip() for r in frame["run_id"]} - {""})
    if len(runs) > 1:
        raise SheetError(f"{path}: rows of runs {', '.join(runs)} (a sheet is one run's)")
    return runs[0] if runs else None


def read_sheet(path: Path, reviewer: str | None = None) -> pd.DataFrame:
    """The decided verdicts of a filled sheet: ``session_id``, ``epoch``, ``turn``, ``item``,
    ``passed``, ``rationale``, ``reviewer`` (the sheet's column, else ``reviewer``)."""
    try:
        frame = pd.read_csv(
            path,
            dtype={"session_id": str, "verdict": str, "rationale": str, "reviewer": str},
            keep_default_na=False,
        )
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SheetError(f"{path}: cannot read it as CSV: {exc}") from exc
    missing = [c for c in (*KEYS, "item", "verdict") if c not in frame.columns]
    if missing:
        raise SheetError(
            f"{path}: no column {', '.join(missing)} (the sheet physassist-label draw wrote has "
            "them)"
        )
    rows = []
    for number, row in enumerate(frame.to_dict("records"), start=2):  # row 1 is the header
        where = (
            f"{path} row {number} (session {row['session_id']}, turn {row['turn']}, item "
            f"{row['item']})"
        )
        try:
            passed = _verdict(row["verdict"])
            keys = (str(row["session_id"]), int(row["epoch"]), int(row["turn"]), int(row["item"]))
        except KeyError as exc:
            raise SheetError(
                f"{where}: verdict {exc.args[0]!r} is not pass or fail (leave it empty when "
                "undecided)"
            ) from None
        except (TypeError, ValueError):
            raise SheetError(f"{where}: epoch, turn and item must be whole numbers") from None
        if passed is None:
            continue
        who = str(row.get("reviewer") or "").strip() or reviewer
        if not who:
            raise SheetError(f"{where}: no reviewer (fill the reviewer column, or pass --reviewer)")
        rows.append(
            {
                **dict(zip([*KEYS, "item"], keys, strict=True)),
                "passed": passed,
                "rationale": str(row.get("rationale") or "") or None,
                "reviewer": who,
            }
        )
    return pd.DataFrame(rows, columns=[*KEYS, "item", "passed", "rationale", "reviewer"])
