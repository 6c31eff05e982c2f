"""Internal signals turned into FHIR ``OperationOutcome`` results by ``call_tool``."""

from __future__ import annotations


class ToolError(Exception):
    """A call that cannot be answered; ``code`` is the FHIR issue type (invalid, not-found, ...)."""

    def __init__(self, diagnostics: str, code: str = "invalid", reference_error: str | None = None):
        super().__init__(diagnostics)
        self.diagnostics = diagnostics
        self.code = code
        # compat: the reference returned a bare {"error": ...} object here; kept for rendering
        self.reference_error = reference_error


def bad_arguments(tool: str, detail: str) -> ToolError:
    """The reference's TypeError path ("Bad arguments for X: ...")."""
    msg = f"Bad arguments for {tool}: {detail}"
    return ToolError(msg, "invalid", reference_error=msg)


def execution_error(tool: str, detail: str) -> ToolError:
    """The reference's generic exception path ("Tool execution error for X: ...")."""
    msg = f"Tool execution error for {tool}: {detail}"
    return ToolError(msg, "exception", reference_error=msg)
