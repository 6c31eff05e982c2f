"""Which functions answer each read tool: the way from ``call_tool`` to a reader, in one table.

A tool's line names its strict and compat functions (``registry.ReadTool``); each function
declares what it reads where it is defined (``registry.read_tool``). A new read tool is its
schema entry, its two functions and its line here.
"""

from __future__ import annotations

from . import (
    compat,
    compat_medications,
    compat_notes,
    compat_observations,
    strict,
    strict_medications,
    strict_notes,
    strict_observations,
)
from .registry import ReadTool, declare_reads
from .schemas import SCHEMAS

#: read tool -> its functions, in the schema's order.
READ_TOOLS: dict[str, ReadTool] = {
    "Patient.read": ReadTool(strict.patient_read, compat.patient_read),
    "Encounter.search": ReadTool(strict.encounter_search, compat.encounter_search),
    "Condition.search": ReadTool(strict.condition_search, compat.condition_search),
    "Observation.search": ReadTool(
        strict_observations.observation_search, compat_observations.observation_search
    ),
    "MedicationRequest.search": ReadTool(
        strict_medications.medication_request_search, compat_medications.medication_request_search
    ),
    "MedicationAdministration.search": ReadTool(
        strict_medications.medication_administration_search,
        compat_medications.medication_administration_search,
    ),
    "DiagnosticReport.search": ReadTool(
        strict_notes.diagnostic_report_search, compat_notes.diagnostic_report_search
    ),
    "DocumentReference.search": ReadTool(
        strict_notes.document_reference_search, compat_notes.document_reference_search
    ),
    "CarePlan.search": ReadTool(strict_notes.careplan_search, compat_notes.careplan_search),
}
for _name, _tool in READ_TOOLS.items():
    declare_reads(_name, _tool)


def add_read_tool(name: str, tool: ReadTool) -> None:
    """Answer the read tool ``name`` (its schema entry added first) with ``tool``'s functions;
    raises ``ValueError`` on a name already answered (and as ``registry.declare_reads``)."""
    if name in READ_TOOLS:
        raise ValueError(f"{name!r} is already a read tool")
    declare_reads(name, tool)
    READ_TOOLS[name] = tool


def unimplemented() -> list[str]:
    """Every read tool without functions, and every tool here whose schema entry is no longer
    a read tool."""
    wanted = {n for n, s in SCHEMAS.items() if s.group == "read"}
    return sorted(wanted ^ set(READ_TOOLS))
