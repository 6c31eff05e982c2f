"""Model providers: the Inspect model string a config node names, and one plain line when a
provider's client package is missing.

``provider`` + ``name``: ``provider: openai-api/compatible, name: Qwen/Qwen3.5-4B`` is Inspect's
generic OpenAI-API provider (chat completions, ``/v1/chat/completions``) for the model the server
lists as ``Qwen/Qwen3.5-4B`` -- the name is sent unchanged. Without ``provider`` the name is the
whole Inspect model string (``openai/gpt-5.4-mini``).

Inspect reports a missing client as rich markup over several lines (``[bold]ERROR[/bold]: OpenAI
API requires optional dependencies. Install with:`` ...); ``provider_error`` makes it one line
that names the ``pip install`` of the project's extra.
"""

from __future__ import annotations

import re

__all__ = ["EXTRAS", "inspect_model_name", "provider_error"]

#: Client package -> the project's extra that installs it (``pip install -e ".[<extra>]"``).
#: ``openai`` is a dependency of the project itself.
EXTRAS = {"anthropic": "anthropic", "google-genai": "google", "mistralai": "mistral"}
_MARKUP = re.compile(r"\[/?(?:bold|red|yellow|green|blue|italic|b|i)\]")
_PIP = re.compile(r"pip install (?:--upgrade )?([A-Za-z0-9_.\-\[\]]+)")


def inspect_model_name(name: str, provider: str | None = None) -> str:
    """The Inspect model string for ``name`` served by ``provider`` (None: ``name`` as is)."""
    return f"{provider.rstrip('/')}/{name}" if provider else name


def provider_error(exc: BaseException) -> str:
    """One plain line for a model that cannot be created (missing client, bad provider args)."""
    text = " ".join(_MARKUP.sub("", str(exc)).split()) or repr(exc)
    text = text.removeprefix("ERROR: ")
    match = _PIP.search(text)
    if match and match.group(1) in EXTRAS:
        package = match.group(1)
        text = (
            text[: match.start()]
            + (f'pip install -e ".[{EXTRAS[package]}]" (or pip install {package})')
            + text[match.end() :]
        )
    return text
