"""``physassist/explorer``: the baseline's keyword tools, gathered several per turn.

An offline agent whose score responds to the ablations, so an offline sweep shows their
effect (the one-call baseline scores the same under every tool budget, menu and terminal):

* it makes up to ``MAX_CALLS`` calls per turn, one per request (the question's keyword calls,
  then a generic lab search, then a chart overview: medications, conditions, vitals,
  reports): the tool budget (``terminal.budget``) cuts them short and the menu removes some;
* it answers with the first lines of every result, so ``observations=removed`` leaves it
  nothing to report;
* when the terminal strategy offers a control tool (``prepare_to_answer``, ``submit``) it
  gathers until it has made all its calls, then calls it; without one (``natural``) it answers
  after its first result, as chat models with no explicit "done" tool tend to;
* a follow-up question with no keyword of its own reuses the previous question's specific
  calls (a crude resolution of an implicit reference).

With ``randomness`` r > 0 (``-M randomness=0.5``, ``model=explorer_sampled``) it samples like a
model at temperature, so epochs differ: each of its calls after the first is skipped with
probability r / 2, the chart overview is read in a shuffled order with probability r, and its
answer keeps 2, 3 or 4 lines of each result (3 with probability 1 - r). The draws are seeded
by (``seed``, session, epoch, turn): a run repeated with the same seed repeats them. The
default (r = 0) is deterministic and scores as before.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ModelOutput
from inspect_ai.tool import ToolChoice, ToolInfo

from physassist.ehr.tools import to_api_name

from ._common import Conversation, control_tools, finish, offered, read_conversation, reply
from .baseline import candidate_calls, summarise

MAX_CALLS = 6
ANSWER_LINES = 3  # lines of each result the answer keeps (sampled: 2, 3 or 4)


def context_calls(conv: Conversation, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The chart overview it reads after the question's own calls, among the offered tools."""
    ids: dict[str, Any] = {"subject_id": conv.value("subject_id")}
    if conv.value("hadm_id") is not None:
        ids["hadm_id"] = conv.value("hadm_id")
    overview = [
        ("MedicationRequest.search", dict(ids)),
        ("Condition.search", dict(ids)),
        ("Observation.search", {**ids, "category": "vital-signs", "_count": 5}),
        ("DiagnosticReport.search", dict(ids)),
    ]
    return [(to_api_name(t), a) for t, a in overview if to_api_name(t) in names]


def planned_calls(conv: Conversation, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """This turn's calls: the question's own (or, when it names nothing, the previous
    question's specific ones), the generic lab search, then the chart overview."""
    calls = candidate_calls(conv, names)
    if len(calls) <= 1 and conv.turn > 0:
        previous = Conversation(conv.opening, conv.questions[:-1], [], False)
        carried = [c for c in candidate_calls(previous, names)[:-1] if c not in calls]
        calls = carried + calls
    calls += [c for c in context_calls(conv, names) if c not in calls]
    return calls[:MAX_CALLS]


def calls_made(conv: Conversation) -> int:
    return sum(len(m.tool_calls or []) for m in conv.since_question if isinstance(m, ChatMessageAssistant))


def epoch() -> int:
    """The epoch of the sample being generated for: an agent sees only messages, and sampled
    choices must differ between epochs (Inspect's active sample; 1 outside an eval)."""
    from inspect_ai.log._samples import sample_active  # no public accessor in Inspect 0.3

    active = sample_active()
    return int(active.epoch) if active is not None else 1


def draws(seed: int, conv: Conversation) -> random.Random:
    """The random stream of one turn: the same (seed, session, epoch, turn), the same draws."""
    key = f"{seed}:{conv.session_key}:{epoch()}:{conv.turn}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def sampled_calls(calls: list[tuple[str, dict[str, Any]]], conv: Conversation, names: set[str], rng: random.Random, randomness: float) -> list[tuple[str, dict[str, Any]]]:
    """``planned_calls`` as sampled: the overview maybe shuffled, later calls maybe skipped."""
    overview = [c for c in context_calls(conv, names) if c in calls]
    own = [c for c in calls if c not in overview]
    if rng.random() < randomness:
        rng.shuffle(overview)
    kept = [c for c in own + overview if rng.random() >= randomness / 2]
    return (calls[:1] + [c for c in kept if c != calls[0]])[:MAX_CALLS] if calls else []


class ExplorerAgent:
    """Several keyword-chosen calls per turn, then every result's first lines as the answer."""

    def __init__(self, model_name: str = "explorer", randomness: float = 0.0, seed: int = 0, **_: Any) -> None:
        if not 0.0 <= float(randomness) <= 1.0:
            raise ValueError(f"physassist/explorer: randomness must be in [0, 1], got {randomness}")
        self.model_name = model_name
        self.randomness = float(randomness)
        self.seed = int(seed)

    async def act(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice) -> ModelOutput:
        conv = read_conversation(input, tool_choice)
        if conv.turn < 0:
            return reply(self.model_name, "Ready.", [], input)
        names = offered(tools)
        made = calls_made(conv)
        rng = draws(self.seed, conv) if self.randomness else None
        wants_more = bool(control_tools(tools)) or made == 0
        if not conv.nudged and wants_more:
            calls = planned_calls(conv, names)
            if rng is not None:
                calls = sampled_calls(calls, conv, names, rng, self.randomness)
            if made < len(calls):
                return reply(self.model_name, "", [calls[made]], input)
        lines = ANSWER_LINES
        if rng is not None and rng.random() < self.randomness:
            lines = rng.choice((2, 4))
        return finish(self.model_name, summarise(conv.tool_results(), conv.language, per_result=lines), tools, conv, input)
