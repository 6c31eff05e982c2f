"""The 18 tool names of PhysAssistBench and their model-API spelling.

The benchmark names tools the FHIR way (``Observation.search``); provider APIs only accept
``^[a-zA-Z0-9_-]{1,64}$``, so a dot is exposed as a double underscore and mapped back.
"""

from __future__ import annotations

from physassist.vocab import EHR_READ_TOOLS, PATIENT_TOOLS, PREPARE_TO_ANSWER, WRITE_TOOLS

#: The 18 tools in the released ``tools`` order (the groups are physassist.vocab's).
TOOL_NAMES: tuple[str, ...] = EHR_READ_TOOLS + (PREPARE_TO_ANSWER,) + PATIENT_TOOLS + WRITE_TOOLS

_SEP = "__"


def to_api_name(name: str) -> str:
    """``Observation.search`` -> ``Observation__search`` (names without a dot pass through)."""
    return name.replace(".", _SEP)


def from_api_name(name: str) -> str:
    """Inverse of :func:`to_api_name` for our tools; other names pass through unchanged.

    A name that is already dotted, or whose dotted form is not one of ours, is returned as is
    so that the caller can report it as unknown under the spelling the model used.
    """
    if "." in name or _SEP not in name:
        return name
    dotted = name.replace(_SEP, ".", 1)
    return dotted if dotted in TOOL_NAMES else name
