"""Typed, lossless model of one PhysAssistBench session (one line of the released JSONL).

The released files are the canonical format (docs/data.md#the-released-session-format): the model reads
every key of docs/data.md#keys-of-a-session unchanged, both the main-pipeline and the discharge-planning-pipeline shapes,
keeps unknown keys and the original key order, and dumps back to semantically identical JSON.
Accessors implement the released fallbacks (`tasks_en` -> `tasks`, `answer_list_zh` ->
`answer_list`, ...) in one place so that no caller re-implements them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from physassist.data.checks import Check, parse_check
from physassist.vocab import (
    LANGUAGES,
    PATIENT_TOOL_PREFIX,
    PREPARE_TO_ANSWER,
    SCENARIOS,
    WRITE_TOOLS,
)

SEPARATOR = "=" * 60

_TIER_SUFFIX = re.compile(r"_L(\d+)$")
_ENV_DATE = re.compile(r"Current date:\s*(\d{4}-\d{2}-\d{2})")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?![0-9])")
#: A session's ``cutoff``: a local time to the second, as the builder writes it (a bare date
#: would be its midnight, hiding the whole day; a zone would not compare with the store's times).
_CUTOFF = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, located as precisely as we know it."""

    file: str | None
    line: int | None
    session_id: str | None
    turn: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file or "<in memory>"
        if self.line is not None:
            where += f":{self.line}"
        parts = [f"session {self.session_id if self.session_id is not None else '?'}"]
        if self.turn is not None:
            parts.append(f"turn {self.turn}")
        if self.field is not None:
            parts.append(f"field {self.field}")
        return f"{where}: {', '.join(parts)}: {self.message}"


class SessionFormatError(ValueError):
    """Malformed session data. The message lists every problem found, one per line."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems: list[Problem] = list(problems or [])

    @classmethod
    def from_problems(
        cls, problems: list[Problem], source: str | None = None
    ) -> SessionFormatError:
        n_sessions = len({(p.file, p.line, p.session_id) for p in problems})
        head = f"{len(problems)} problem(s) in {n_sessions} session(s)"
        if source:
            head += f" of {source}"
        lines = [head + ":"] + [f"  - {p}" for p in problems]
        return cls("\n".join(lines), problems)


def _lang(language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    return language


class _OrderedModel(BaseModel):
    """Keeps unknown keys and dumps keys in the order they were read (lossless round trip)."""

    model_config = ConfigDict(extra="allow", serialize_by_alias=True)
    _key_order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: Any) -> Any:
        instance = handler(data)
        if isinstance(data, dict):
            instance._key_order = tuple(data)
        return instance

    @model_serializer(mode="wrap")
    def _dump_in_read_order(self, handler: Any) -> Any:
        out = handler(self)
        if not self._key_order or not isinstance(out, dict):
            return out
        ordered = {key: out[key] for key in self._key_order if key in out}
        ordered.update((key, value) for key, value in out.items() if key not in ordered)
        return ordered

    def to_dict(self) -> dict[str, Any]:
        """As JSON: only keys that were read or set, in read order, unknown keys kept."""
        return self.model_dump(mode="json", exclude_unset=True)

    def key_value(self, key: str) -> Any:
        """The value of released key `key` (declared or unknown), None when absent."""
        attribute = _attribute_of(type(self), key)
        if attribute is not None:
            return getattr(self, attribute)
        return (self.__pydantic_extra__ or {}).get(key)


@lru_cache(maxsize=512)
def _attribute_of(model: type[BaseModel], key: str) -> str | None:
    """The attribute holding released key `key` (fields may be aliased)."""
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return name
    return None


class ToolAction(_OrderedModel):
    """`action` of a gold trajectory item: a dotted tool name and its arguments."""

    name: str
    arguments: dict[str, Any] | str | None = None


class GoldAction(_OrderedModel):
    """One item of `answer_list[t]` (docs/data.md#gold-trajectories)."""

    action: ToolAction
    observation: dict[str, Any] | str | None = None
    dependency_list: list[StrictInt] | None = None
    idx: StrictInt | None = None

    @property
    def name(self) -> str:
        return self.action.name


GoldTurn = list[GoldAction]


class Session(_OrderedModel):
    """One released session. Field names are the released keys; absent keys stay absent."""

    # identity and environment
    id: str
    env_info: str
    subject_id: StrictInt = Field(gt=0)
    hadm_id: StrictInt | None = None
    session_id: str | None = None
    current_date: str | None = None
    #: The instant the session is at (``YYYY-MM-DDTHH:MM:SS``, on ``current_date``), when it is
    #: not the end of that date: the builder's in-stay timepoint. Absent in the released data.
    cutoff: str | None = None
    generated_at: str | None = None
    # tools offered
    tools: list[dict[str, Any]] | None = None
    tools_en: list[dict[str, Any]] | None = None
    tools_zh: list[dict[str, Any]] | None = None
    tool_set: str | None = None
    # questions
    tasks: list[str] | None = None
    tasks_en: list[str] | None = None
    tasks_explicit: list[str] | None = None
    tasks_en_explicit: list[str] | None = None
    tasks_zh: list[str] | None = None
    tasks_zh_explicit: list[str] | None = None
    # gold conversation and trajectories
    messages: list[dict[str, Any] | str] | None = None
    messages_en: list[dict[str, Any] | str] | None = None
    messages_zh: list[dict[str, Any] | str] | None = None
    answer_list: list[GoldTurn]
    answer_list_en: list[GoldTurn] | None = None
    answer_list_zh: list[GoldTurn] | None = None
    # per-turn labels
    turn_types: list[bool] | None = None
    task_types: list[str]
    task_sequence: list[str] | None = None
    turn_subtypes: list[str | None] | None = None
    tool_sources: list[str | None] | None = None
    workup_modes: list[str | None] | None = None
    # scenario, tier, arc
    clinical_task_domain: str | None = None
    clinical_scenario: str | None = None
    sequence_idx: StrictInt | None = None
    difficulty_level: StrictInt | None = None
    dep_graph: Any = None
    session_plan: Any = None
    # grading
    rubrics: list[list[str]]
    rubrics_zh: list[list[str]] | None = None
    # released key `rubric_checks` (the attribute name is taken by the accessor method)
    checks_data: list[list[dict[str, Any] | None] | None] | None = Field(
        default=None, alias="rubric_checks"
    )
    # patient side
    persona_config: dict[str, Any] | None = None
    patient_agent_annotations: list[Any] | None = None
    patient_model: dict[str, Any] | None = None
    # discharge-planning pipeline extras
    health_literacy: Any = None
    note_grounding: Any = None
    write_gold_params: Any = None

    _origin: tuple[str | None, int | None] = PrivateAttr(default=(None, None))

    @model_validator(mode="after")
    def _require_one_of_each(self) -> Session:
        for keys in (("tasks_en", "tasks"), ("tools_en", "tools"), ("messages_en", "messages")):
            if all(self.key_value(k) is None for k in keys):
                raise ValueError(f"missing key {keys[1]!r} (or {keys[0]!r})")
        return self

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("current_date")
    @classmethod
    def _real_date(cls, value: str | None) -> str | None:
        """A calendar date (``YYYY-MM-DD``, optionally with a time), checked here rather than
        when the tools first use it mid-run."""
        if value is not None:
            check_date(value)
        return value

    @field_validator("cutoff")
    @classmethod
    def _cutoff_on_the_date(cls, value: str | None, info: ValidationInfo) -> str | None:
        """An instant (``YYYY-MM-DDTHH:MM:SS``) of the session's ``current_date``."""
        if value is None:
            return value
        try:
            if not _CUTOFF.fullmatch(value):
                raise ValueError
            when = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"must be a time YYYY-MM-DDTHH:MM:SS, got {value[:40]!r}") from None
        day = info.data.get("current_date")
        if day and when.date().isoformat() != str(day)[:10]:
            raise ValueError(f"{value!r} is not on the session's current_date {day}")
        return value

    @field_validator("env_info")
    @classmethod
    def _env_date(cls, value: str) -> str:
        match = _ENV_DATE.search(value)
        if match:
            check_date(match.group(1))
        return value

    # ---- serialization -------------------------------------------------------------------

    def to_json(self) -> str:
        return session_json(self.to_dict())

    @property
    def origin(self) -> tuple[str | None, int | None]:
        """(file, 1-based line) the session was read from, (None, None) if built in memory."""
        return self._origin

    def set_origin(self, file: str | None, line: int | None) -> None:
        self._origin = (file, line)

    # ---- derived identity ----------------------------------------------------------------

    @property
    def scenario(self) -> str | None:
        """`clinical_scenario`, else the scenario named in the id (`dp_...` = discharge
        planning)."""
        if self.clinical_scenario is not None:
            return self.clinical_scenario
        for name in SCENARIOS:
            if name in self.id:
                return name
        if self.id.startswith("dp_") or self.clinical_task_domain == "DischargePlan":
            return "discharge_planning"
        return None

    @property
    def tier(self) -> int | None:
        """`difficulty_level`, else the `_L<d>` suffix of the id."""
        if self.difficulty_level is not None:
            return self.difficulty_level
        match = _TIER_SUFFIX.search(self.id)
        return int(match.group(1)) if match else None

    @property
    def effective_date(self) -> str | None:
        """`current_date`, else the date parsed from `env_info` ("Current date: YYYY-MM-DD")."""
        if self.current_date:
            return self.current_date
        match = _ENV_DATE.search(self.env_info)
        return match.group(1) if match else None

    @property
    def cutoff_time(self) -> dt.datetime | None:
        """The instant the tools' inclusive cutoff is at: ``cutoff``, else the last microsecond
        of :attr:`effective_date`; None without a date."""
        if self.cutoff:
            return dt.datetime.fromisoformat(self.cutoff)
        day = self.effective_date
        return dt.datetime.combine(dt.date.fromisoformat(day[:10]), dt.time.max) if day else None

    @property
    def n_tasks(self) -> int:
        """The physician questions the session asks (the turns the loop runs)."""
        return len(self.first_value("tasks_en", "tasks") or [])

    def has_language(self, language: str) -> bool:
        """Whether the questions, rubrics and gold answers exist in `language`."""
        if _lang(language) == "en":
            return True
        return (
            self.tasks_zh is not None
            and self.rubrics_zh is not None
            and (self.answer_list_zh is not None or self.messages_zh is not None)
        )

    # ---- per-turn accessors --------------------------------------------------------------

    def first_value(self, *keys: str) -> Any:
        """Value of the first present key, e.g. ("tasks_en", "tasks"): the released fallbacks."""
        for key in keys:
            value = self.key_value(key)
            if value is not None:
                return value
        return None

    def _missing(self, turn: int | None, field: str, what: str = "missing") -> SessionFormatError:
        file, line = self._origin
        problem = Problem(file, line, self.id, turn, field, what)
        return SessionFormatError(str(problem), [problem])

    def _per_turn(self, keys: tuple[str, ...], turn: int) -> Any:
        values = self.first_value(*keys)
        if values is None:
            raise self._missing(turn, keys[0])
        if not 0 <= turn < len(values):
            raise self._missing(turn, keys[0], f"has {len(values)} entries, no turn {turn}")
        return values[turn]

    def question(self, turn: int, language: str = "en", explicit: bool = False) -> str:
        """The physician's question (implicit as asked, or the explicit paraphrase)."""
        keys: tuple[str, ...]
        if _lang(language) == "en":
            keys = ("tasks_en_explicit", "tasks_explicit") if explicit else ("tasks_en", "tasks")
        else:
            keys = ("tasks_zh_explicit",) if explicit else ("tasks_zh",)
        question: str = self._per_turn(keys, turn)  # validated as list[str] when loaded
        return question

    def rubric(self, turn: int, language: str = "en") -> list[str]:
        keys = ("rubrics_en", "rubrics") if _lang(language) == "en" else ("rubrics_zh",)
        return list(self._per_turn(keys, turn))

    def rubric_checks(self, turn: int) -> list[Check | None]:
        """Structured form per rubric item (same length as the rubric; all None when absent)."""
        n_items = len(self.rubric(turn, "en"))
        per_turn = self.rubric_checks_raw(turn)
        if per_turn is None:
            return [None] * n_items
        if len(per_turn) != n_items:
            raise self._missing(
                turn, "rubric_checks", f"has {len(per_turn)} checks for {n_items} rubric items"
            )
        return [parse_check(item) for item in per_turn]

    def rubric_checks_raw(self, turn: int) -> list[dict[str, Any] | None] | None:
        if self.checks_data is None or turn >= len(self.checks_data):
            return None
        return self.checks_data[turn]

    def _gold_turn(self, turn: int, language: str) -> GoldTurn:
        keys = (
            ("answer_list_en", "answer_list")
            if _lang(language) == "en"
            else ("answer_list_zh", "answer_list")
        )
        gold: GoldTurn = self._per_turn(keys, turn)  # validated as GoldTurn when loaded
        return gold

    def gold_actions(self, turn: int, language: str = "en") -> list[dict[str, Any]]:
        """The gold trajectory of a turn as released dicts (ZH falls back to English)."""
        return [item.to_dict() for item in self._gold_turn(turn, language)]

    def gold_tool_names(self, turn: int) -> list[str]:
        """Dotted names of the gold tool calls, without `prepare_to_answer`."""
        return [a.name for a in self._gold_turn(turn, "en") if a.name != PREPARE_TO_ANSWER]

    def gold_answer(self, turn: int, language: str = "en") -> str:
        """The gold answer: the final `prepare_to_answer` observation, else the gold messages."""
        en = _lang(language) == "en"
        trajectory = (
            self.first_value("answer_list_en", "answer_list") if en else self.answer_list_zh
        )
        if trajectory is not None and turn < len(trajectory):
            answer = prepared_answer(trajectory[turn])
            if answer:
                return answer
        if en or self.messages_zh is not None:
            conversation = self.conversation(language)
            if turn < len(conversation) and conversation[turn].get("assistant"):
                return conversation[turn]["assistant"]
        key = "answer_list" if en else "answer_list_zh"
        raise self._missing(turn, key, "no gold answer (prepare_to_answer observation or messages)")

    def conversation(self, language: str = "en") -> list[dict[str, str]]:
        """Gold exchanges per turn: `{"user": question, "assistant": answer}` (separators
        dropped)."""
        raw = (
            self.first_value("messages_en", "messages")
            if _lang(language) == "en"
            else self.messages_zh
        )
        if raw is None:
            raise self._missing(None, "messages" if language == "en" else "messages_zh")
        turns: list[dict[str, str]] = []
        for message in raw:
            if not isinstance(message, dict):
                continue  # the "=" * 60 separator strings between turns
            role, content = message.get("role"), message.get("content")
            if role == "user" or not turns:
                turns.append({})
            if isinstance(role, str) and isinstance(content, str):
                turns[-1].setdefault(role, content)
        return turns

    def gold_history(self, turn: int, language: str = "en") -> list[dict[str, Any]]:
        """Role/content messages of the gold conversation before `turn` (no separators); a
        released message's role or content may be missing (None)."""
        raw = (
            self.first_value("messages_en", "messages")
            if _lang(language) == "en"
            else self.messages_zh
        )
        if raw is None and language == "zh":
            # no messages_zh: the same exchanges from the ZH questions and ZH gold answers
            history: list[dict[str, Any]] = []
            for earlier in range(turn):
                history.append({"role": "user", "content": self.question(earlier, "zh")})
                history.append({"role": "assistant", "content": self.gold_answer(earlier, "zh")})
            return history
        if raw is None:
            raise self._missing(turn, "messages")
        dicts = [m for m in raw if isinstance(m, dict)]
        return [{"role": m.get("role"), "content": m.get("content")} for m in dicts[: 2 * turn]]

    def gold_patient_answers(self, language: str = "en") -> list[dict[str, Any]]:
        """Every gold patient-tool reply, in trajectory order, for replaying the patient."""
        trajectory = (
            self.first_value("answer_list_en", "answer_list")
            if _lang(language) == "en"
            else (self.first_value("answer_list_zh", "answer_list"))
        )
        replies: list[dict[str, Any]] = []
        for turn, actions in enumerate(trajectory):
            for item in actions:
                obs = item.observation
                if isinstance(obs, dict) and "patient_response" in obs:
                    replies.append(
                        {
                            "turn": turn,
                            "idx": item.idx,
                            "tool": item.name,
                            "arguments": item.action.arguments,
                            "patient_response": obs["patient_response"],
                            "variants": dict(obs.get("patient_responses_all_literacy") or {}),
                        }
                    )
        return replies

    def tools_for(self, language: str = "en") -> list[dict[str, Any]]:
        """The tool schemas offered in this session (verbatim; ZH falls back to English)."""
        keys = ("tools_en", "tools") if _lang(language) == "en" else ("tools_zh", "tools")
        return list(self.first_value(*keys) or [])


def check_date(value: str) -> None:
    """Raise ValueError unless ``value`` is ``YYYY-MM-DD`` (optionally with a time) naming a
    real day ("2166-02-30" and "tomorrow" are not)."""
    if _ISO_DATE.match(value):
        try:
            dt.datetime.fromisoformat(value)
            return
        except ValueError:
            pass
    raise ValueError(f"must be a date YYYY-MM-DD, got {value[:40]!r}")


def prepared_answer(actions: GoldTurn) -> str | None:
    """The answer text stored as the observation of the final `prepare_to_answer` item."""
    for item in reversed(actions):
        if item.name == PREPARE_TO_ANSWER:
            obs = item.observation
            return obs if isinstance(obs, str) and obs.strip() else None
    return None


def session_json(data: dict[str, Any]) -> str:
    """A released session dict as one JSON line (non-ASCII text kept, as the released files)."""
    return json.dumps(data, ensure_ascii=False)


def tool_source_of(names: list[str]) -> str:
    """Tool source implied by gold tool names, for sessions without `tool_sources`."""
    if any(n in WRITE_TOOLS for n in names):
        return "write"
    patient = any(n.startswith(PATIENT_TOOL_PREFIX) for n in names)
    ehr = any(not n.startswith(PATIENT_TOOL_PREFIX) for n in names)
    if patient and ehr:
        return "mixed"
    return "patient" if patient else "ehr"


def sample_session(data: str | dict[str, Any]) -> Session:
    """The Session of a Sample's ``metadata["session"]`` (ARCHITECTURE.md §6).

    The JSON string is parsed and validated once per process: the assistant loop and the
    scorer of the same sample get the same object (``_session_of_json`` keeps the most recent
    ones). The dict form of older logs is validated on every call. Raises
    ``json.JSONDecodeError`` / ``pydantic.ValidationError``.
    """
    return _session_of_json(data) if isinstance(data, str) else Session.model_validate(data)


@lru_cache(maxsize=128)  # more than the samples in flight between a sample's loop and its scorer
def _session_of_json(text: str) -> Session:
    return Session.model_validate(json.loads(text))
