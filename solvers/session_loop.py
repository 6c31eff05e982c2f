"""The assistant loop: one Inspect sample = one four-turn session.

System prompt, opening environment message, then each physician question in order with the
conversation kept across turns. Within a turn the model calls tools (Inspect
``Model.generate`` + ``execute_tools``) until the terminal strategy says the turn is over,
the per-turn tool-call budget is exhausted, or a system fault ends it; a missing answer is
asked for with a temporary, tool-free nudge that is not kept in the history.

A system fault (a model call that still fails after Inspect's retries, a ``SystemFault`` from a
tool or the live patient, a bug) ends the turn with ``end="error"`` and the message in
``error``; the scorer leaves such a turn unscored (``physassist.faults``). The session goes on
with its next turn.

With ``history=gold`` each turn starts from the gold conversation of the turns before it
(``solvers/gold_history.py``) instead of the model's own; the transcript says so at the turn's
start and its span is named ``turn <t> (gold history)``.

Per turn the loop records a ``physassist.turn_records.TurnRecord`` (ARCHITECTURE.md §5),
writes a readable summary of it to the transcript, and at the sample's end stores the records
under ``physassist.turn_records.TURNS_KEY``.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef
from inspect_ai.util import LimitExceededError, span

from physassist.calls import EndpointDown
from physassist.data import Session
from physassist.data.models import sample_session
from physassist.ehr.tools import call_tool, render
from physassist.ehr.tools.fhir import operation_outcome
from physassist.faults import ERROR_STATUS, SystemFault, describe
from physassist.options import DEFAULTS as D
from physassist.options import (
    History,
    Language,
    Literacy,
    Menu,
    Observations,
    PatientMiss,
    PatientMode,
    Query,
    Render,
    Semantics,
    Terminal,
    check,
)
from physassist.turn_records import TURNS_KEY, CallRecord, End, TurnRecord

from .context import cached_store, tool_context
from .gold_history import GoldHistory
from .menu import control_schema, menu_schemas, schema_name
from .observations import drop_tool_traffic
from .patient.responder import patient_responder
from .prompting import nudge_message, system_prompt
from .terminal import TerminalStrategy, terminal_strategy
from .tools import SessionToolbox

ERRORS_KEY = "physassist:errors"
NUDGE_TRIES = 2


@dataclass(frozen=True)
class LoopSettings:
    """Every knob of the loop: the ``physassist.options`` entries of these task parameters.

    Each field is typed with its option's ``Literal`` alias (closed choices) and defaults to its
    ``DEFAULTS``; ``tests/cli/test_options.py`` fails if a field's name, values or default drifts
    from the table. Each value is checked (and spelled: YAML's ``off`` -> ``"off"``) by its
    option on construction, so bad values fail before any sample.
    """

    language: Language = D["language"]
    query: Query = D["query"]
    menu: Menu = D["menu"]
    observations: Observations = D["observations"]
    terminal: Terminal = D["terminal"]
    tool_budget: int = D["tool_budget"]
    nudge: bool = D["nudge"]
    patient: PatientMode = D["patient"]
    literacy: Literacy = D["literacy"]
    patient_miss: PatientMiss = D["patient_miss"]
    patient_seed: int | None = D["patient_seed"]
    semantics: Semantics = D["semantics"]
    render: Render = D["render"]
    ehr_source: str = D["ehr_source"]
    history: History = D["history"]

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, check(f.name, getattr(self, f.name)))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TurnDraft:
    """A turn while it runs, filled as it goes (so a fault keeps the calls and tokens spent
    before it); ``record()`` freezes it."""

    turn: int
    question: str
    started: float  # epoch seconds
    answer: str = ""
    end: End = "answered"
    calls: list[CallRecord] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    error: str | None = None  # the system fault that ended the turn (end "error")

    def count(self, output: ModelOutput) -> None:
        if output.usage is not None:
            self.tokens_in += int(output.usage.input_tokens or 0)
            self.tokens_out += int(output.usage.output_tokens or 0)

    def record(self, seconds: float) -> TurnRecord:
        return TurnRecord(
            turn=self.turn,
            question=self.question,
            answer=self.answer,
            end=self.end,
            calls=tuple(self.calls),
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            started=self.started,
            seconds=seconds,
            error=self.error,
        )


class SessionRun:
    """Runs the turns of one sample; holds its toolbox, strategy and settings."""

    def __init__(
        self,
        model: Model,
        session: Session,
        settings: LoopSettings,
        toolbox: SessionToolbox,
        strategy: TerminalStrategy,
        set_allowed: Any = None,
    ) -> None:
        self.model = model
        self.session = session
        self.settings = settings
        self.toolbox = toolbox
        self.strategy = strategy
        self._set_allowed = set_allowed or (lambda names: None)
        self._tools_schemas = session.tools_for(settings.language)
        self._tooldefs: dict[tuple[str, ...], list[ToolDef]] = {}

    def turn_tools(self, turn: int) -> list[ToolDef]:
        """The ToolDefs offered in ``turn`` (menu + the strategy's control tool)."""
        if self.settings.menu == "off":
            self._set_allowed(frozenset())
            return []
        schemas = menu_schemas(
            self.settings.menu,
            self._tools_schemas,
            scenario=self.session.scenario,
            gold_names=self.session.gold_tool_names(turn) if self.settings.menu == "gold" else (),
        )
        names = [schema_name(s) for s in schemas]
        control = self.strategy.control
        if control is not None:
            names.append(control.name)
        key = tuple(names)
        if key not in self._tooldefs:  # menus repeat across turns: build each once
            tools = [self.toolbox.data_tool(s) for s in schemas]
            if control is not None:
                session_schema = control_schema(self._tools_schemas, control.name)
                tools.append(self.toolbox.control_tool(control, session_schema))
            self._tooldefs[key] = tools
        self._set_allowed(frozenset(names))
        return self._tooldefs[key]

    async def nudge(
        self, messages: list[ChatMessage], tools: list[ToolDef], result: TurnDraft
    ) -> str:
        """Ask for a plain-text final answer without tools; the request is not kept."""
        request = [*messages, ChatMessageUser(content=nudge_message(self.settings.language))]
        for _ in range(NUDGE_TRIES):
            output = answered(await self.model.generate(request, tools=tools, tool_choice="none"))
            result.count(output)
            text = output.message.text.strip()
            if text:
                return text
        return ""

    async def run_turn(self, messages: list[ChatMessage], result: TurnDraft) -> TurnDraft:
        """One physician turn, filling ``result`` as it goes (so a fault keeps the calls and
        tokens spent before it); ``messages`` (already ending with the question) is extended."""
        turn = result.turn
        tools = self.turn_tools(turn)
        budget = self.settings.tool_budget
        used = 0
        answer: str | None = None
        end: End = "answered"
        budget_text = render(
            operation_outcome(
                f"Tool-call budget of {budget} calls for this question is exhausted; "
                "the call was not executed.",
                code="throttled",
            ),
            self.settings.render,
        )
        for _ in range(budget + 4):  # every round but the last executes at least one call
            output = answered(await self.model.generate(messages, tools=tools))
            result.count(output)
            message = output.message
            messages.append(message)
            calls = message.tool_calls or []
            if calls:
                data_calls = [c for c in calls if not self.toolbox.is_control(c.function)]
                over = frozenset(c.id for c in data_calls[max(budget - used, 0) :])
                tool_messages, records = await self.toolbox.run(
                    messages, tools, over_budget=over, budget_text=budget_text
                )
                messages.extend(tool_messages)
                result.calls.extend(records)
                used += len(data_calls) - len(over)
                if over:
                    end = "budget"
                    break
            decision = self.strategy.decide(message)
            if decision.finished:
                answer = decision.answer
                if answer is None:
                    end = "nudged"
                break
        else:
            end = "budget"
        if answer is None:
            if self.settings.nudge:
                answer = await self.nudge(messages, tools, result)
                if end == "answered":
                    end = "nudged"
                if answer:
                    last = messages[-1]
                    if isinstance(last, ChatMessageAssistant) and not last.tool_calls:
                        messages.pop()  # the empty reply the nudge replaces
                    messages.append(ChatMessageAssistant(content=answer, model=self.model.name))
            else:
                answer = ""
        result.answer = answer
        result.end = end
        return result


def answered(output: ModelOutput) -> ModelOutput:
    """``output``, or a ``SystemFault`` when the provider sent no choice at all (a broken
    endpoint, not a model that answered with nothing)."""
    if not output.choices:
        raise SystemFault(f"the model returned no choices ({output.error or 'empty response'})")
    return output


def _summary(record: TurnRecord) -> str:
    calls = (
        "\n".join(f"  - `{c.name}` {c.arguments} -> {c.text[:160]!r}" for c in record.calls)
        or "  - (no tool calls)"
    )
    return (
        f"### Turn {record.turn} ({record.end}, {record.seconds:.2f}s, "
        f"{record.tokens_in}/{record.tokens_out} tokens)\n\n"
        f"**Physician:** {record.question}\n\n**Calls:**\n{calls}\n\n"
        f"**Answer:** {record.answer}"
    )


@solver
def physassist_session(**options: Any) -> Solver:
    """The PhysAssistBench assistant loop; ``options`` are the ``LoopSettings`` fields."""
    settings = LoopSettings(**options)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        session = sample_session(state.metadata["session"])
        language = settings.language
        if not session.has_language(language):
            raise ValueError(f"session {session.id}: no {language!r} questions/rubrics/answers")
        model = get_model()
        store = cached_store(settings.ehr_source)
        ctx = tool_context(session, store, semantics=settings.semantics)
        ctx.patient = patient_responder(
            session,
            ctx,
            mode=settings.patient,
            language=language,
            literacy=settings.literacy,
            miss=settings.patient_miss,
            seed=settings.patient_seed,
        )
        toolbox = SessionToolbox(
            functools.partial(call_tool, ctx),
            functools.partial(render, mode=settings.render),
            observations=settings.observations,
            language=language,
            inject={"subject_id": session.subject_id},
            session_key=ctx.session_id,
        )

        def set_allowed(names: frozenset[str]) -> None:
            ctx.allowed = names

        strategy = terminal_strategy(settings.terminal)
        run = SessionRun(model, session, settings, toolbox, strategy, set_allowed)
        opening = state.messages[0] if state.messages else ChatMessageUser(content=state.input_text)
        start: list[ChatMessage] = [
            ChatMessageSystem(content=system_prompt(language, strategy.rule(language))),
            opening,
        ]
        messages = list(start)
        explicit = settings.query == "explicit"
        gold = (
            GoldHistory(session, language, explicit, toolbox, set_allowed)
            if settings.history == "gold"
            else None
        )
        broken: str | None = None  # why the gold history could not be built (a system fault)
        turns: list[TurnRecord] = []
        errors: list[dict[str, Any]] = []
        for turn in range(session.n_tasks):
            if gold is not None:
                messages = [*start, *gold.messages]  # the gold turns < t, never the model's own
            if settings.observations == "history_removed" and turn > 0:
                messages = drop_tool_traffic(messages)
            question = session.question(turn, language, explicit=explicit)
            start_len = len(messages)
            messages.append(ChatMessageUser(content=question))
            started = time.perf_counter()
            result = TurnDraft(turn=turn, question=question, started=round(time.time(), 6))
            notice = gold.notice(turn) if gold is not None and turn else None
            async with span(f"turn {turn}{' (gold history)' if notice else ''}"):
                if notice:
                    transcript().info(notice, source="physassist")
                try:
                    if broken is not None:
                        raise SystemFault(f"the gold history could not be built: {broken}")
                    await run.run_turn(messages, result)
                except (
                    LimitExceededError,
                    EndpointDown,
                ):  # a limit; an endpoint the run gave up on
                    raise
                except Exception as ex:  # a system fault: the turn is unscored, the session goes on
                    del messages[start_len + 1 :]
                    message = describe(ex)
                    result.answer, result.end, result.error = "", ERROR_STATUS, message
                    errors.append({"turn": turn, "error": message})
                    transcript().info(f"Turn {turn} ended by a system fault: {message}")
                record = replace(
                    result.record(seconds=round(time.perf_counter() - started, 4)),
                    history=settings.history,
                )
                transcript().info(_summary(record), source="physassist")
            if gold is not None and broken is None and turn < session.n_tasks - 1:
                try:
                    record = replace(record, gold_calls=tuple(await gold.add(turn)))
                except (LimitExceededError, EndpointDown):  # as in a turn: these end the run
                    raise
                except Exception as ex:  # the next turns have no history to start from
                    broken = describe(ex)
            turns.append(record)
        # written once per sample: every store write is logged as a diff of the whole value
        state.store.set(TURNS_KEY, [r.stored() for r in turns])
        state.store.set(ERRORS_KEY, errors)
        state.messages = messages
        state.output = ModelOutput.from_content(
            model=model.name,
            content="\n\n".join(f"T{r.turn}: {r.answer}" for r in turns),
        )
        return state

    return solve
