"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

A real server (stdlib ``ThreadingHTTPServer``, one thread per request), not a mock of a client:
``physassist-eval`` reaches it through Inspect's own provider and the ``openai`` client, over
TCP. It serves ``GET /v1/models`` and ``POST /v1/chat/completions`` with tool calls, and
answers 404 for anything else (``/v1/responses`` included, as vLLM or llama.cpp would).

Each served model name plays a policy (``Policy``: the request body -> an assistant reply):
``agent_policy(OracleAgent())`` replays the sessions' gold calls and answers through the same
code as the in-process ``physassist/oracle`` (so their scores must agree),
``agent_policy(BaselineAgent())`` is a weak one, ``grader_policy`` passes every rubric item,
``patient_policy`` answers every interview question. Replies report ``usage`` (the agents'
local token estimate), recorded per request in ``ScriptedServer.log``.

Faults (``faults``: request number -> kind, numbered from 1 over chat requests): ``429``
(with ``Retry-After``), ``500``, ``slow`` (answers after ``slow_seconds``), ``malformed_args``
(an ``Observation__search`` call whose arguments are not JSON, instead of the reply's calls), ``unknown_tool`` (a tool that was not offered),
``empty_choices``. ``latency`` delays every response (benchmarks). ``broken=True``: HTTP 500 to
every request, ``GET /v1/models`` included (a server that is up but failing). ``dies_after=n``:
the server is killed once it answered n chat requests (nothing listens any more).
``silent_server()``: an address that accepts connections and never answers.
``generator_policy`` serves ``physassist-generate``'s agents (the offline generator's replies),
``malformed_policy()`` a model whose replies are never the JSON asked for (``MALFORMED``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from inspect_ai.model import ChatMessage, messages_from_openai
from inspect_ai.tool import ToolInfo

#: A reply: {"content": str, "tool_calls": [(name, arguments dict or raw str)], "usage": (in, out)}
Reply = dict[str, Any]
Policy = Callable[[dict[str, Any]], Reply]
FAULTS = ("429", "500", "slow", "malformed_args", "unknown_tool", "empty_choices")


def _tool_infos(body: Mapping[str, Any]) -> list[ToolInfo]:
    tools = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        tools.append(ToolInfo(name=fn["name"], description=fn.get("description") or fn["name"]))
    return tools


def agent_policy(agent: Any) -> Policy:
    """Serve one of the project's offline agents (``OracleAgent``, ``BaselineAgent``)."""

    async def act(body: dict[str, Any]) -> Reply:
        messages: list[ChatMessage] = await messages_from_openai(body["messages"])
        choice = "none" if body.get("tool_choice") == "none" else "auto"
        output = await agent.act(messages, _tool_infos(body), choice)
        message = output.message
        usage = output.usage
        return {
            "content": message.text,
            "tool_calls": [(c.function, c.arguments) for c in message.tool_calls or []],
            "usage": (usage.input_tokens, usage.output_tokens) if usage else (0, 0),
        }

    return lambda body: asyncio.run(act(body))


_ITEMS = re.compile(r"## Rubric items \((\d+)\)")


def grader_policy(body: dict[str, Any]) -> Reply:
    """A judge that passes every rubric item of the prompt."""
    prompt = body["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else " ".join(p.get("text", "") for p in prompt)
    n = int(_ITEMS.search(prompt).group(1))
    items = [{"id": i, "pass": True, "reason": "stated"} for i in range(1, n + 1)]
    return {"content": json.dumps({"items": items}), "tool_calls": [], "usage": (len(prompt) // 4, 20 * n)}


def generator_policy(body: dict[str, Any]) -> Reply:
    """``physassist-generate``'s offline generator (``generation/scripted.py``) over HTTP: each
    agent answered from its prompt, as ``generator=scripted`` answers it in process."""
    from generation.scripted import ScriptedGenerator

    async def act() -> Reply:
        messages: list[ChatMessage] = await messages_from_openai(body["messages"])
        output = await ScriptedGenerator("scripted").generate(messages, [], "none", None)
        usage = output.usage
        return {"content": output.completion, "tool_calls": [], "usage": (usage.input_tokens, usage.output_tokens)}

    return asyncio.run(act())


#: What a model replies where JSON is asked, misbehaving (``malformed_policy``), with the finish
#: reason the server reports: prose, a refusal, nothing, a reply cut at its output budget.
MALFORMED = (
    ("Sure! Here is the plan you asked for: first, check the creatinine.", "stop"),
    ("I'm sorry, but I can't help with that request.", "content_filter"),
    ("", "stop"),
    ('{"clinical_situation": "78-year-old under review", "turns": [{"topic": "Creat', "length"),
)


def malformed_policy() -> Policy:
    """A model that never replies with the JSON object asked for: its requests get the replies
    of ``MALFORMED`` in turn."""
    numbers = itertools.count()

    def reply(body: dict[str, Any]) -> Reply:
        content, finish = MALFORMED[next(numbers) % len(MALFORMED)]
        return {"content": content, "tool_calls": [], "usage": (100, 1024 if finish == "length" else 12), "finish": finish}

    return reply


PATIENT_ANSWER = "I have felt more tired this week."


def patient_policy(body: dict[str, Any]) -> Reply:
    """A patient who answers every interview question the same way."""
    return {"content": PATIENT_ANSWER, "tool_calls": [], "usage": (100, 9)}


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """The base URL (``.../v1``) of a socket that listens (the kernel completes the TCP
    handshake) but never accepts or answers: a hung server."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (it timed out, or gave up) is expected here; others raise."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class Served:
    """One chat request as the server saw it."""

    number: int
    model: str
    fault: str | None
    status: int
    usage: tuple[int, int] = (0, 0)
    started: float = 0.0
    tools: tuple[str, ...] = ()  # the offered tool names
    headers: dict[str, str] = field(default_factory=dict)  # the request's HTTP headers, names lower-case


@dataclass
class ScriptedServer:
    """Start with ``with ScriptedServer({...}) as server:``; ``server.base_url`` is ``.../v1``."""

    policies: dict[str, Policy]
    faults: Mapping[int, str] | Callable[[int, str], str | None] = field(default_factory=dict)
    latency: float = 0.0
    slow_seconds: float = 3.0
    retry_after: str = "0"
    log: list[Served] = field(default_factory=list)
    other_paths: list[str] = field(default_factory=list)
    broken: bool = False
    dies_after: int | None = None  # the server is killed once it answered this many chat requests

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._httpd: ThreadingHTTPServer | None = None
        self.dead = False

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                if server.broken:
                    self._json(500, {"error": {"message": "internal error", "type": "server_error"}})
                elif self.path.rstrip("/") == "/v1/models":
                    data = [{"id": name, "object": "model", "owned_by": "tests"} for name in server.policies]
                    self._json(200, {"object": "list", "data": data})
                else:
                    server.other_paths.append(self.path)
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if server.dead:  # a kept-alive connection to a killed server: closed, no answer
                    self.close_connection = True
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    server.other_paths.append(self.path)
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status, payload, headers = server.answer(body, dict(self.headers))
                self._json(status, payload, headers)
                if server.dies_after is not None and len(server.served(status=200)) >= server.dies_after:
                    server.kill()

            def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None  # once (``kill`` stops it from another thread)
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def kill(self) -> None:
        """As ``kill -9`` of the server process would: nothing listens any more, and open
        connections close without an answer."""
        self.dead = True
        threading.Thread(target=self.stop, daemon=True).start()

    @property
    def base_url(self) -> str:
        if self._httpd is not None:
            self._url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        assert getattr(self, "_url", None), "server not started"
        return self._url

    # -- answering -----------------------------------------------------------------------
    def fault_for(self, number: int, model: str) -> str | None:
        if callable(self.faults):
            return self.faults(number, model)
        return self.faults.get(number)

    def answer(self, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        started = time.perf_counter()
        with self._lock:
            self._count += 1
            number = self._count
        model = str(body.get("model"))
        fault = self.fault_for(number, model)
        tools = tuple(t["function"]["name"] for t in body.get("tools") or [])
        record = Served(number, model, fault, 200, started=started, tools=tools,
                        headers={k.lower(): v for k, v in (headers or {}).items()})
        with self._lock:
            self.log.append(record)
        if self.latency:
            time.sleep(self.latency)
        if self.broken:
            fault = record.fault = "500"
        if model not in self.policies:
            record.status = 404
            return 404, {"error": {"message": f"model {model!r} not served"}}, {}
        if fault == "429":
            record.status = 429
            error = {"error": {"message": "rate limited", "type": "rate_limit_error", "code": "rate_limit"}}
            return 429, error, {"Retry-After": self.retry_after}
        if fault == "500":
            record.status = 500
            return 500, {"error": {"message": "internal error", "type": "server_error"}}, {}
        if fault == "slow":
            time.sleep(self.slow_seconds)
        if fault == "empty_choices":
            return 200, self._completion(model, [], (1, 0)), {}
        reply = self.policies[model](body)
        calls = list(reply.get("tool_calls") or [])
        if fault == "malformed_args":
            calls = [("Observation__search", '{"subject_id": 1, "code": "Creat')]
        elif fault == "unknown_tool":
            calls = [("Lab__search_everything", {"query": "all"}), *calls]
        record.usage = tuple(reply.get("usage") or (0, 0))  # type: ignore[assignment]
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or ""}
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
                for name, args in calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": reply.get("finish") or ("tool_calls" if calls else "stop")}
        return 200, self._completion(model, [choice], record.usage), {}

    @staticmethod
    def _completion(model: str, choices: list[dict[str, Any]], usage: tuple[int, int]) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        }

    # -- what happened -------------------------------------------------------------------
    def served(self, model: str | None = None, status: int | None = 200) -> list[Served]:
        return [
            r for r in self.log
            if (model is None or r.model == model) and (status is None or r.status == status)
        ]
