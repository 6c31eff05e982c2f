"""The commands of README.md and docs/*.md, as a user would copy them.

``commands(path)`` reads a Markdown page's fenced code blocks in order and returns what a user
would run from each:

* ``bash`` / ``sh`` blocks: every command (``\\`` continuations joined, ``#`` comments dropped);
* untagged blocks of a console session: lines starting with ``$ ``, with the lines printed
  after them as the expected output (the test compares the first one);
* ``yaml`` blocks whose leading comment names their file (``# conf/terminal/tight.yaml ...``):
  the file, written before the commands after it run.

A command is skipped, with the reason, when it cannot run offline on a fresh clone: ``SKIPS`` is
the one place that says which and why (API keys, a model server, a cluster, ``/data`` paths, the
installation, the tests themselves, a value to fill in). ``<id>`` is the one placeholder filled
in, with the sweep id the page's last sweep printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

INSTALL = "installs the project"
#: (pattern, reason): a command matching the pattern is not run by the README test.
SKIPS: tuple[tuple[str, str], ...] = (
    (r"OPENAI_API_KEY|ANTHROPIC_API_KEY|OPENAI_COMPATIBLE_API_KEY", "needs an API key"),
    (r"model=(openai|anthropic)\b|model=openai_compatible|judge=(llm|panel)\b|patient=live", "needs a model provider (key or server)"),
    (r"^(vllm|llama-server|mlflow (ui|server)|ray start)\b", "starts an external server"),
    (r"hydra/launcher=(ray|submitit_\w+)", "needs the cluster extras (tests/test_sweeps_launchers.py runs them)"),
    (r"(^|[\s=])/data/", "needs /data paths (MIMIC-IV, the released sessions)"),
    (r"PHYSASSIST_MIMIC_DEMO|physionet\.org", "needs the MIMIC-IV demo, a download (docs/data.md)"),
    (r"generated/mimic-", "reads the sessions generated from MIMIC-IV (needs /data and a key)"),
    (r"^(python3 -m venv|pip install|\. \.venv)", INSTALL),
    (r"^(pytest|python docs/screenshots\.py)\b", "runs the tests / needs Chromium"),
    (r"<(?!id>)[^>]+>|\.\.\.", "has a value to fill in"),
)
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


@dataclass
class Step:
    """One thing the README asks a user to do: run ``command`` or write ``text`` to ``file``."""

    line: int
    command: str | None = None
    expected: list[str] = field(default_factory=list)  # console blocks: the printed lines
    file: str | None = None
    text: str = ""
    skip: str | None = None  # why it is not run

    def __str__(self) -> str:
        return f"line {self.line}: {self.command or self.file}"


def skip_reason(command: str) -> str | None:
    for pattern, reason in SKIPS:
        if re.search(pattern, command):
            return reason
    return None


def _blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """(first line number, language, lines) of every fenced block."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, lang = fence.group(1), fence.group(2)
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith("```"):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].strip())
            i += 1
        blocks.append((i - len(body), lang, body))
        i += 1
    return blocks


def _shell_commands(first: int, body: list[str]) -> list[tuple[int, str]]:
    commands, current, start = [], "", first
    for offset, raw in enumerate(body):
        line = raw.rstrip()
        if not current:
            start = first + offset
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        if line.endswith("\\"):
            current += line[:-1].strip() + " "
            continue
        current += line.strip()
        command = re.sub(r"\s+#\s.*$", "", current).strip()  # a trailing comment
        if command:
            commands.append((start, command))
        current = ""
    return commands


def _after_install(command: str) -> str:
    """``python3 -m venv .venv && ... && physassist-eval`` -> ``physassist-eval``: the test runs
    in the installed project, so the steps of a chain that install it are left out."""
    parts = command.split(" && ")
    while len(parts) > 1 and skip_reason(parts[0]) == INSTALL:
        parts.pop(0)
    return " && ".join(parts)


def _file_name(body: list[str]) -> str | None:
    """``conf/terminal/tight.yaml`` when a leading comment line of a YAML block names it
    (after a ``# @package`` header, which Hydra wants first)."""
    for line in body:
        if not line.startswith("#"):
            return None
        named = re.match(r"#\s*(conf/\S+\.yaml)", line)
        if named:
            return named.group(1)
    return None


def commands(path: Path) -> list[Step]:
    """Every step of a Markdown page, in order (see the module docstring)."""
    steps: list[Step] = []
    for first, lang, body in _blocks(path.read_text(encoding="utf-8")):
        if lang in ("bash", "sh", "shell"):
            for line, command in _shell_commands(first, body):
                command = _after_install(command)
                steps.append(Step(line, command=command, skip=skip_reason(command)))
        elif lang == "yaml" and (name := _file_name(body)):
            steps.append(Step(first, file=name, text="\n".join(body) + "\n"))
        elif lang == "" and any(b.startswith("$ ") for b in body):
            for k, b in enumerate(body):
                if b.startswith("$ "):
                    expected = []
                    for after in body[k + 1:]:
                        if after.startswith("$ "):
                            break
                        expected.append(after)
                    command = b[2:].strip()
                    steps.append(Step(first + k, command=command, expected=expected, skip=skip_reason(command)))
    return steps


def pages(root: Path) -> list[Path]:
    """README.md and the topic pages under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]
