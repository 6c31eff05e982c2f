"""Nothing secret is written anywhere: what a run records is masked by name and by value.

A provider may need a credential under a name nobody can list in advance (an ``X-Api-Key`` or
``Authorization`` header, an ``api-key`` or ``credentials`` argument), written literally or read
from the environment (``${oc.env:VAR}``). The run records its config in many places (Hydra's
``.hydra`` files, the MLflow params, tags and artifacts, the Inspect log's model arguments, the
console), so every one of them goes through ``redact`` (structured data) or ``scrub`` (text):

* by name: every value of a header (a key named ``*headers*``) and every value whose key
  names a credential (a word ``key``, ``token``, ``secret``, ``credential(s)``, ``password``,
  ``authorization``, ``auth``, ...; ``api_key_env``, which names a variable, is not one) is
  ``MASK``; a value that only reads a variable (``${oc.env:VAR}``) is kept, it holds no secret;
* by value: the values this process was told hold a secret (``remember``: what the config read
  from the environment into a provider's arguments or a secret name, and the provider keys named
  by ``api_key_env``) are masked wherever they occur in a string, and in every log record.

This module knows no config library: ``physassist.cli.secrets`` finds the values in the composed
config and remembers them before anything is written.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
#: Values shorter than this are masked by name only: a short string occurs in too much text.
MIN_VALUE_CHARS = 8
#: Words of a key (split at case changes and punctuation) that make its value a credential.
SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "authorization",
        "auth",
        "cookie",
        "bearer",
    }
)
HEADER_WORDS = frozenset({"header", "headers"})
#: A value that only names an environment variable (it is read, never written back).
ENV_REFERENCE = re.compile(r"\$\{oc\.env:[A-Za-z_][A-Za-z0-9_]*\}")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_remembered: set[str] = set()


def words(name: str) -> list[str]:
    """``X-Api-Key`` -> ``[x, api, key]``; ``accessToken`` -> ``[access, token]``."""
    return [w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", str(name)).lower()) if w]


def secret_name(name: str) -> bool:
    """Whether a value under the key ``name`` is a credential (``*_env`` names a variable)."""
    parts = words(name)
    return bool(parts) and parts[-1] != "env" and any(w in SECRET_WORDS for w in parts)


def header_name(name: str) -> bool:
    """Whether ``name`` holds headers, every one of whose values may be a credential."""
    return any(w in HEADER_WORDS for w in words(name))


def remember(values: Iterable[str]) -> None:
    """Mask these values (each at least ``MIN_VALUE_CHARS`` long) wherever this process writes
    them from now on, its log records included."""
    new = {str(v) for v in values if v is not None and len(str(v)) >= MIN_VALUE_CHARS}
    if new - _remembered:
        _remembered.update(new)
        _scrub_log_records()


def remembered() -> frozenset[str]:
    return frozenset(_remembered)


def scrub(text: str, values: Iterable[str] = ()) -> str:
    """``text`` with every remembered value (and ``values``) masked, the longest first."""
    for value in sorted({*_remembered, *values}, key=len, reverse=True):
        if value and value in text:
            text = text.replace(value, MASK)
    return text


def masked(value: Any) -> Any:
    """A secret's value as written: ``MASK``, unless it holds nothing or only names a variable."""
    if value is None or value == "" or (isinstance(value, str) and ENV_REFERENCE.fullmatch(value)):
        return value
    if isinstance(value, Mapping):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    return MASK


def redact(data: Any, secret: bool = False) -> Any:
    """A copy of ``data`` (mappings, lists, scalars) with every value under a header or a secret
    name masked, and every remembered value masked in its strings. ``secret``: ``data`` itself
    sits under such a name."""
    if secret:
        return masked(data)
    if isinstance(data, Mapping):
        return {k: redact(v, secret_name(k) or header_name(k)) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact(v) for v in data]
    if isinstance(data, str):
        return scrub(data)
    return data


def secret_values(data: Any, secret: bool = False) -> set[str]:
    """The literal values ``redact`` masks by name in ``data``."""
    if isinstance(data, Mapping):
        return {
            v
            for k, x in data.items()
            for v in secret_values(x, secret or secret_name(k) or header_name(k))
        }
    if isinstance(data, list | tuple):
        return {v for x in data for v in secret_values(x, secret)}
    if secret and masked(data) == MASK:
        return {str(data)}
    return set()


def _scrub_log_records() -> None:
    """Every log record of this process is masked as it is made (Hydra's launcher logs each
    job's overrides, a library may quote a header in an error)."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "physassist_redacting", False):
        return

    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        if _remembered:
            message = record.getMessage()
            clean = scrub(message)
            if clean != message:
                record.msg, record.args = clean, None
        return record

    make.physassist_redacting = True  # type: ignore[attr-defined]  # a marker on the function
    logging.setLogRecordFactory(make)
