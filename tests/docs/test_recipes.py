"""The recipes of ARCHITECTURE.md §10, done: each adds something the way the page says and
checks that nothing else had to change."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fixtures_eval as fe
import fixtures_store as fs
import pytest
from fixtures_tracking import compose
from hydra.errors import ConfigCompositionException
from inspect_ai.model import ChatMessageAssistant, get_model

from physassist import options
from physassist.cli import schema
from physassist.cli.config import ConfigError, check_config, grader_spec, resolve
from physassist.ehr.tools import (
    EHR_READ_TOOLS,
    TOOL_NAMES,
    ToolContext,
    call_tool,
    fhir,
    readers,
    registry,
    render,
    schemas,
    tool_schemas,
)
from physassist.ehr.tools.chart import Chart, Window
from physassist.ehr.tools.compat_common import empty, subject_key
from physassist.ehr.tools.compat_frames import frame
from physassist.ehr.tools.records import keep, text
from physassist.ehr.tools.registry import ReadTool, read_tool
from physassist.ehr.tools.schemas import Param, ToolSchema, add_schema
from physassist.ehr.tools.strict_common import bundle
from physassist.tracking.params import flatten_config
from scorers import physassist_scorer
from scorers.judgement import ItemResult, Judge, TurnInput, TurnJudgement
from scorers.judges import JUDGES, markdown_table
from solvers import terminal
from solvers.terminal import ControlTool, Decision, TerminalStrategy

store_cache = fs.store_cache
demo_store = fs.demo_store


def test_recipe_add_an_ablation_option(monkeypatch) -> None:
    """One Option line + the key in the group's YAML files (here an override stands in for them):
    the groups' schema, the CLI check, MLflow and the options table (docs/config.md) follow."""
    option = options.Option(
        "terminal.max_seconds",
        None,
        60,
        "wall-clock limit per turn",
        rule=lambda v: isinstance(v, int) and v > 0,
        expects="seconds > 0",
    )
    try:
        monkeypatch.setattr(options, "OPTIONS", (*options.OPTIONS, option))
        schema.register()  # what importing physassist.cli.config does
        with pytest.raises(ConfigError, match=r"^terminal.max_seconds is required but not set"):
            resolve(compose())  # the schema knows the key: the group's YAML files must state it
        config = resolve(compose(["terminal.max_seconds=30"]))  # no `+`: the schema declares it
        check_config(config)  # the CLI checks it ...
        assert flatten_config(config)["terminal.max_seconds"] == "30"  # ... and MLflow logs it
        assert (
            "`terminal.max_seconds`" in options.markdown_table()
        )  # ... docs/config.md / --help show it
        with pytest.raises(
            ConfigError, match=r"^terminal.max_seconds=0 is not valid; expected: seconds > 0$"
        ):
            check_config(resolve(compose(["terminal.max_seconds=0"])))
        with pytest.raises(ConfigCompositionException):  # typed int by the schema
            compose(["terminal.max_seconds=soon"])
    finally:
        monkeypatch.undo()
        schema.register()


class Finish(TerminalStrategy):
    """A third strategy with its own control tool: the answer is the ``text`` argument."""

    name = "finish"
    control = ControlTool(
        "finish",
        "Finish the turn with your answer.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        reply="Finished.",
    )

    def rule(
        self, language: str
    ) -> str:  # a real strategy ships prompts/terminal_finish_<lang>.txt
        return "Call finish(text=...) with your answer."

    def decide(self, message: ChatMessageAssistant) -> Decision:
        for call in message.tool_calls or []:
            if call.function == self.control.name:
                return Decision(True, str((call.arguments or {}).get("text") or "") or None)
        return Decision(not message.tool_calls, message.text or None)


def test_recipe_add_a_terminal_strategy(monkeypatch, demo_store, tmp_path: Path) -> None:
    """One module (here: the class above) + its value in options.Terminal (+ its YAML)."""
    monkeypatch.setitem(terminal.STRATEGIES, "finish", Finish)
    declared = options.BY_PARAM["terminal"]
    monkeypatch.setitem(
        options.BY_PARAM,
        "terminal",
        dataclasses.replace(declared, choices=(*declared.values, "finish")),
    )
    session = fe.build_session(demo_store, "strict")
    script = fe.Script([fe.calls(("finish", {"text": "Creatinine 2.9 mg/dL."}))])
    sample = fe.run_sample(session, script.model(), demo_store, tmp_path, terminal="finish")
    turns = fe.turns_of(sample)
    assert turns[0].answer == "Creatinine 2.9 mg/dL." and turns[0].end == "answered"
    assert turns[0].calls == ()  # a control call is steering, not tool use
    offered = script.requests[0][1]
    assert "finish" in offered and "submit" not in offered and "prepare_to_answer" not in offered
    finish_replies = [m for m in sample.messages if m.role == "tool" and m.function == "finish"]
    assert [m.text for m in finish_replies][:1] == ["Finished."]  # its own reply, not submit's


@pytest.fixture
def tool_registries() -> Iterator[None]:
    """The tool registries as they were before the test (it adds a tool to them)."""
    saved = [
        (d, dict(d))
        for d in (schemas.SCHEMAS, registry.COLUMNS, *registry.READS.values(), readers.READ_TOOLS)
    ]
    yield
    for registered, before in saved:
        registered.clear()
        registered.update(before)


# A stand-in for procedures (the store holds no procedures table): the care units of the patient's
# transfers, a table no built-in tool reads, so its columns are loaded only because they are declared.
PROCEDURE = ToolSchema(
    "Procedure.search",
    "read",
    "List the care units the patient was moved through.",
    {
        "subject_id": Param(
            "integer", "MIMIC-IV subject_id of the patient in this session.", required=True
        ),
        "hadm_id": Param("integer", "Restrict to one hospital admission (MIMIC-IV hadm_id)."),
    },
    scenarios=("med_safety",),
)
TRANSFERS = {"transfers": ("hadm_id", "careunit", "intime")}


def _procedure(sid: int, careunit: str, when: str | None) -> dict[str, Any]:
    return {
        "resourceType": "Procedure",
        "id": fhir.stable_id("procedure", sid, careunit, when),
        "status": "completed",
        "code": {"text": careunit},
        "performedDateTime": when,
    }


def register_procedure_search() -> None:
    """The recipe: a schema entry, one function per semantics (here, not in two modules) and
    the tool's line in ``readers.READ_TOOLS`` (here added as a plugin would)."""
    add_schema(PROCEDURE)

    @read_tool(reads=TRANSFERS)
    def strict_procedure_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
        window = Window(chart.cutoff, {}, "Procedure.search")
        found = chart.subject_rows("transfers", args["subject_id"])
        rows = keep(found, hadm_id=args.get("hadm_id"))
        found = [r for r in rows if r["careunit"] and window.keeps(r["intime"])]
        sid = args["subject_id"]
        return bundle(
            [_procedure(sid, r["careunit"], fhir.fhir_datetime(text(r["intime"]))) for r in found]
        )

    @read_tool(reads=TRANSFERS)
    def compat_procedure_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        sid = subject_key("Procedure.search", args)
        rows = () if sid is None else frame(ctx.store, "transfers", sid)
        found = [
            _procedure(sid, r["careunit"], r["intime"]) for r in rows if r["careunit"] is not None
        ]
        return fhir.compat_bundle("Procedure", found) if found else empty("Procedure", args)

    readers.add_read_tool(
        "Procedure.search", ReadTool(strict_procedure_search, compat_procedure_search)
    )


def test_recipe_add_a_read_tool(tool_registries, demo_store, tmp_path: Path) -> None:
    """A schema entry + a function per semantics: listed, offered, callable in both semantics,
    rendered, and its table loaded, with no other file touched."""
    register_procedure_search()
    assert "Procedure.search" in TOOL_NAMES and "Procedure.search" in EHR_READ_TOOLS
    assert tool_schemas()[-1]["function"]["name"] == "Procedure.search"
    assert (
        registry.COLUMNS["transfers"] == ("hadm_id", "careunit", "intime")
        and readers.unimplemented() == []
    )

    session = fe.build_session(
        demo_store, "strict"
    )  # its tools: tool_schemas(), as a released session lists them
    sid = session["subject_id"]
    script = fe.Script(
        [fe.calls(("Procedure.search", {"subject_id": sid})), fe.text("Seen in the ICU.")]
    )
    sample = fe.run_sample(
        session, script.model(), demo_store, tmp_path, menu="scenario"
    )  # a med_safety session
    assert "Procedure__search" in script.requests[0][1]
    call = fe.turns_of(sample)[0].calls[0]
    assert call.name == "Procedure.search" and call.raw["resourceType"] == "Bundle"
    units = [e["resource"]["code"]["text"] for e in call.raw["entry"]]
    assert units and all(u in call.text for u in units)  # rendered (full) for the model

    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=None, current_date=None, semantics="compat"
    )
    raw = call_tool(ctx, "Procedure__search", {"subject_id": sid})
    assert set(units) <= {e["resource"]["code"]["text"] for e in raw["entry"]}  # compat: no cutoff
    assert units[0] in render(raw, "compat") and units[0] in render(raw, "full")
    none = call_tool(ctx, "Procedure.search", {"subject_id": 1})
    assert "No Procedure resources found for Patient/1" in render(none, "compat")


async def _second_opinion(ti: TurnInput, graders: Any, context: str) -> TurnJudgement:
    """A judge of one grader: every item passes when the grader says yes to the answer."""
    reply = (
        await graders[0].model.generate(f"Is this a good answer to {ti.question!r}? {ti.answer}")
    ).completion
    return TurnJudgement.from_items(
        [ItemResult(reply.startswith("yes"), f"grader: {reply}")] * len(ti.items), "second"
    )


#: What the module ``scorers/second_judge.py`` would declare.
SECOND = Judge(
    "second", "one grader model says yes or no to the whole answer", "one", _second_opinion
)


def test_recipe_add_a_judge(monkeypatch, demo_store, tmp_path: Path) -> None:
    """One module declaring ``JUDGE`` (here: SECOND) + its value in options.Judge (+ its YAML):
    the scorer dispatches to it, the CLI binds the role it declares, the tables list it."""
    monkeypatch.setitem(JUDGES, "second", SECOND)  # what scorers/judges.py does for the module
    declared = options.BY_PARAM["judge"]
    monkeypatch.setitem(
        options.BY_PARAM,
        "judge",
        dataclasses.replace(declared, choices=(*declared.values, "second")),
    )
    spec = grader_spec({"mode": "second", "model": "mockllm/model", "api_key_env": None})
    assert not isinstance(spec, list) and spec is not None and spec.name == "mockllm/model"
    with pytest.raises(ConfigError, match=r"^judge.model is required for judge=second"):
        grader_spec({"mode": "second", "model": None})
    assert "| `second` | one model (`judge.model`) |" in markdown_table()

    session = fe.build_session(demo_store, "strict")
    grader = get_model("mockllm/model", custom_outputs=[fe.text("yes")] * 8)
    assistant = fe.Script([], default="Creatinine 2.9 mg/dL.").model()
    sample = fe.run_sample(
        session,
        assistant,
        demo_store,
        tmp_path,
        model_roles={"grader": grader},
        scorer=physassist_scorer(judge="second"),
    )
    turns = next(iter(sample.scores.values())).metadata["turns"]
    assert [t["judge"] for t in turns] == ["second"] * len(turns) and all(
        t["score"] == 1.0 for t in turns
    )
    assert turns[0]["items"][0]["reason"] == "grader: yes"


def _pressure_extract(reading):  # what physassist/grounding/pressure_facts.py would declare
    import re

    from physassist.grounding.facts import Fact

    return [
        Fact("pressure", m.group(0), m.start(), m.end(), m.group(0).replace(" ", ""))
        for m in re.finditer(r"\b\d{2,3}\s*/\s*\d{2,3}\b", reading.text)
    ]


def _pressure_match(fact, evidence):
    from physassist.grounding.facts import Verdict

    found = [other for other in evidence.facts("pressure") if other.value == fact.value]
    return Verdict(fact, "grounded", found[0]) if found else Verdict(fact, "unsupported")


def test_recipe_add_a_fact_type_to_the_grounding_check(monkeypatch) -> None:
    """docs/extending.md: one module ``physassist/grounding/<name>_facts.py`` declaring
    ``FACT_TYPE``; registered by being in the package (here: added to the registry, as
    discovery does), read from answers and evidence alike before the types after it in
    ``order``, counted, and listed in the fact-type table."""
    from physassist.grounding import Evidence, FactType, Source, ground, registry

    pressure = FactType(
        "pressure",
        25,
        "a blood pressure, systolic/diastolic (`120/80`)",
        _pressure_extract,
        _pressure_match,
    )
    monkeypatch.setattr(
        registry,
        "FACT_TYPES",
        tuple(sorted((*registry.FACT_TYPES, pressure), key=lambda t: t.order)),
    )
    record = Evidence(
        [
            Source(
                "tool",
                "- 2157-07-02 06:00 Blood Pressure: 120/80 mmHg",
                turn=0,
                call=1,
                tool="Observation.search",
            )
        ]
    )
    g = ground("BP 120/80 this morning; 130/85 yesterday.", record)
    assert [(v.fact.kind, v.fact.text, v.status) for v in g.verdicts] == [
        ("pressure", "120/80", "grounded"),
        ("pressure", "130/85", "unsupported"),
    ]
    assert "| `pressure` | a blood pressure" in registry.markdown_table()
