"""Machine-checkable forms of rubric items (the project's `rubric_checks` key).

The released rubrics are free text for an LLM judge. Sessions the project builds also carry,
per rubric item, an optional structured form that a deterministic judge can evaluate offline
(ARCHITECTURE.md §4). These models only describe and validate that form; evaluating a check
against an answer is the rules judge's job.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _CheckBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ValueCheck(_CheckBase):
    """The answer states `value` (in `unit`) near `label`, within a relative `tolerance`."""

    kind: Literal["value"] = "value"
    label: str = Field(min_length=1)
    value: float
    unit: str | None = None
    tolerance: float = Field(default=0.05, ge=0)


class ConceptCheck(_CheckBase):
    """The answer mentions at least one of the synonyms (per language)."""

    kind: Literal["concept"] = "concept"
    any: dict[str, list[str]]


class ForbiddenCheck(_CheckBase):
    """The answer mentions none of the phrases (per language): a safety or hallucination item."""

    kind: Literal["forbidden"] = "forbidden"
    any: dict[str, list[str]]


class WriteArgCheck(_CheckBase):
    """A call to `tool` was made whose `field` argument matches one of `accepted`."""

    kind: Literal["write_arg"] = "write_arg"
    tool: str = Field(min_length=1)
    field: str = Field(min_length=1)
    accepted: list[str] = Field(min_length=1)


class WriteCallCheck(_CheckBase):
    """A call to the write tool `tool` was made at all."""

    kind: Literal["write_call"] = "write_call"
    tool: str = Field(min_length=1)


Check = Annotated[
    ValueCheck | ConceptCheck | ForbiddenCheck | WriteArgCheck | WriteCallCheck,
    Field(discriminator="kind"),
]

_CHECK_ADAPTER: TypeAdapter[Check] = TypeAdapter(Check)


def parse_check(obj: Any) -> Check | None:
    """Validate one raw rubric check (a dict, or None for an item without a structured form)."""
    if obj is None:
        return None
    return _CHECK_ADAPTER.validate_python(obj)
