"""Check each model endpoint a run names (``base_url``) before the first sample.

A wrong port, a server that is down, answers 5xx or accepts and never answers, and a model name
the server does not serve would otherwise show up only as every turn failing after Inspect's
retries (minutes per call). One ``GET <base_url>/models`` per endpoint, bounded by
``PREFLIGHT_S``, says it in one line before any run exists. A server without a model list (404)
or one that refuses other paths is not judged: only what every model call would also meet.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from physassist.experiment import ModelSpec

PREFLIGHT_S = 10.0  # connect + answer; a server that needs longer to list its models is down for us

#: The config key that names each role's model (for "does not serve <key>=<name>").
NAME_KEY = {"model": "model.name", "grader": "judge.model", "patient": "patient.model", "generator": "generator.name"}


class EndpointError(RuntimeError):
    """A model endpoint cannot serve the run: the message names the URL and the cause."""


def served_name(spec: ModelSpec) -> str:
    """The name the server knows the model by: ``name`` under an explicit provider
    (``openai-api/compatible``), else ``name`` without its provider prefix."""
    return spec.name if spec.provider else spec.name.split("/", 1)[-1]


def check_endpoint(role: str, spec: ModelSpec, timeout: float = PREFLIGHT_S) -> None:
    """Raise ``EndpointError`` when the endpoint of ``spec`` is unreachable, silent, failing
    (5xx), refuses the key (401/403) or lists its models without this one."""
    import json
    import urllib.error
    import urllib.request

    if not spec.base_url:
        return
    url = spec.base_url.rstrip("/") + "/models"
    key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    where = f"{role} endpoint {spec.base_url}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        if exc.code >= 500:
            raise EndpointError(f"{where}: the server answers HTTP {exc.code} (GET {url})") from exc
        if exc.code in (401, 403):
            raise EndpointError(f"{where}: HTTP {exc.code}, the key in ${spec.api_key_env} is refused") from exc
        return  # no model list here (404, ...): nothing to compare
    except (TimeoutError, urllib.error.URLError, OSError) as exc:
        cause = getattr(exc, "reason", exc)
        if isinstance(cause, TimeoutError) or "timed out" in str(cause):
            raise EndpointError(f"{where}: no answer to GET {url} within {timeout:.0f} s") from exc
        raise EndpointError(f"{where}: cannot connect ({cause})") from exc
    try:
        served = [str(m.get("id")) for m in json.loads(body).get("data") or []]
    except (ValueError, AttributeError):
        return  # not an OpenAI model list: nothing to compare
    name = served_name(spec)
    if served and name not in served:
        listed = ", ".join(served[:5]) + (f" and {len(served) - 5} more" if len(served) > 5 else "")
        raise EndpointError(f"{where} does not serve {NAME_KEY.get(role, role)}={name} (it serves: {listed})")


def check_endpoints(specs: Iterable[tuple[str, ModelSpec | list[ModelSpec]]]) -> None:
    """``check_endpoint`` for every (role, spec) (a panel's graders each), each endpoint and
    model once (a sweep checks all its jobs' before the first)."""
    seen: set[tuple[str, str]] = set()
    for role, value in specs:
        for spec in value if isinstance(value, list) else [value]:
            if spec.base_url and (spec.base_url, spec.name) not in seen:
                seen.add((spec.base_url, spec.name))
                check_endpoint(role, spec)
