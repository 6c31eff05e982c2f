"""Gold replay for the grounding tests: each turn's gold tool calls executed against a store,
the results rendered as the model would see them, the gold answer (or a changed one) stated."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from physassist.data import Session
from physassist.ehr.store import EHRStore
from physassist.ehr.tools import call_tool, render
from physassist.grounding import Grounding
from physassist.grounding.session import Call, Turn, ground_session
from physassist.vocab import PREPARE_TO_ANSWER
from solvers.context import tool_context
from solvers.patient.replay import ReplayPatient
from solvers.prompting import opening_message

Answer = Callable[[Session, int, str], str]


def gold_answer(session: Session, turn: int, language: str) -> str:
    return session.gold_answer(turn, language)


def replay(
    session: Session,
    store: EHRStore,
    language: str = "en",
    *,
    mode: str = "full",
    semantics: str = "strict",
    answer: Answer = gold_answer,
) -> tuple[str, list[Turn]]:
    """The opening message and the turns of ``session`` as the gold trajectory plays them."""
    ctx = tool_context(session, store, semantics=semantics)
    ctx.patient = ReplayPatient(session.gold_patient_answers(language), language=language)
    turns = []
    for t in range(session.n_tasks):
        calls = []
        for item in session.gold_actions(t, language):
            action = item.get("action") or {}
            name = str(action.get("name"))
            if name == PREPARE_TO_ANSWER:
                continue
            raw = call_tool(ctx, name, dict(action.get("arguments") or {}))
            calls.append(Call(name, render(raw, mode), raw))  # type: ignore[arg-type]
        turns.append(
            Turn(t, session.question(t, language), answer(session, t, language), tuple(calls))
        )
    return opening_message(session.to_dict(), language), turns


def grounded(
    sessions: Iterable[Session], store: EHRStore, language: str = "en", **options: object
) -> list[tuple[Session, Turn, Grounding]]:
    """Every turn of ``sessions`` replayed and grounded."""
    out = []
    for session in sessions:
        opening, turns = replay(session, store, language, **options)  # type: ignore[arg-type]
        out += [
            (session, turn, g)
            for turn, g in zip(turns, ground_session(opening, turns), strict=True)
        ]
    return out
