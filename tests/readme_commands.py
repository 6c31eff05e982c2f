"""The commands of README.md and docs/*.md, as a user would copy them.

``commands(path)`` reads a Markdown page's fenced code blocks in order and returns what a user
would run from each:

* ``bash`` / ``sh`` blocks: every command (``\\`` continuations joined, ``#`` comments dropped);
* untagged blocks of a console session: lines starting with ``$ ``, with the lines printed
  after them as the expected output (the test compares the first one);
* ``yaml`` blocks whose leading comment names their file (``# conf/terminal/tight.yaml ...``):
  the file, written before the commands after it run;
* a fenced block or a Markdown table right after ``<!-- output of: <command> -->``: what that
  command (run earlier on the page) prints, or an excerpt of it, lines in order (``...`` or
  ``…`` stands for anything). Its numbers are compared within the page's rounding (``31.1``
  matches 31.14, ``0.66`` matches 0.657) and ids (8, 12 or 32 hexadecimal characters) stand for
  any id: ``excerpt_problems``. So a number in the docs comes from its command, and
  ``python tests/readme_commands.py --refresh [page ...]`` runs the pages' commands again and
  rewrites those blocks with what they print now (after a change to the sample or the agents).

A command is skipped, with the reason, when it cannot run offline on a fresh clone: ``SKIPS`` is
the one place that says which and why (API keys, a model server, a cluster, ``/data`` paths, the
installation, the tests themselves, a value to fill in). ``<id>`` is the one placeholder filled
in, with the sweep id the page's last sweep printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

INSTALL = "installs the project"
#: (pattern, reason): a command matching the pattern is not run by the README test.
SKIPS: tuple[tuple[str, str], ...] = (
    (r"OPENAI_API_KEY|ANTHROPIC_API_KEY|OPENAI_COMPATIBLE_API_KEY", "needs an API key"),
    (
        r"model=(openai|anthropic)\b|model=openai_compatible|judge=(llm|panel)\b|patient=live",
        "needs a model provider (key or server)",
    ),
    (r"^(vllm|llama-server|mlflow (ui|server)|ray start)\b", "starts an external server"),
    (
        r"hydra/launcher=(ray|submitit_\w+)",
        "needs the cluster extras (tests/cli/test_sweeps_launchers.py runs them)",
    ),
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
    output_of: str | None = None  # an ``<!-- output of: ... -->`` block: the command it shows
    lines: tuple[int, int] = (0, 0)  # the block's lines in the page (0-based, end excluded)

    def __str__(self) -> str:
        return (
            f"line {self.line}: {self.command or self.file or 'output of ' + str(self.output_of)}"
        )


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
            body.append(
                lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].strip()
            )
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
                    for after in body[k + 1 :]:
                        if after.startswith("$ "):
                            break
                        expected.append(after)
                    command = b[2:].strip()
                    steps.append(
                        Step(
                            first + k, command=command, expected=expected, skip=skip_reason(command)
                        )
                    )
    steps += _outputs(path.read_text(encoding="utf-8").splitlines())
    return sorted(steps, key=lambda step: step.line)


OUTPUT_OF = re.compile(r"^\s*<!-- output of: (.+?) -->\s*$")


def _outputs(lines: list[str]) -> list[Step]:
    """The ``<!-- output of: ... -->`` blocks: the fenced block or table after each marker."""
    steps = []
    for j, line in enumerate(lines):
        marker = OUTPUT_OF.match(line)
        if not marker:
            continue
        start = j + 1
        while start < len(lines) and not lines[start].strip():
            start += 1
        if start < len(lines) and FENCE.match(lines[start]):
            end = start + 1
            while end < len(lines) and not lines[end].strip().startswith("```"):
                end += 1
            span = (start + 1, end)
        else:
            end = start
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            span = (start, end)
        body = [text.strip() for text in lines[span[0] : span[1]]]
        steps.append(Step(j + 1, output_of=marker.group(1).strip(), expected=body, lines=span))
    return steps


_ID = r"(?<![0-9A-Za-z])(?=[0-9a-f]*[a-f])(?:[0-9a-f]{32}|[0-9a-f]{12}|[0-9a-f]{8})(?![0-9A-Za-z])"
_NUMBER = r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)"
_TOKEN = re.compile(
    f"(?P<wild>\\.\\.\\.|…)|(?P<rule>-{{3,}})|(?P<id>{_ID})|(?P<num>{_NUMBER})|(?P<space>\\s+)"
)


@dataclass(frozen=True)
class _Shown:
    """A shown line as a regex: numbers and ids captured, ``...`` any text, any run of spaces
    for one; ``tokens`` are the shown values of the captured groups, in order."""

    pattern: re.Pattern[str]
    tokens: tuple[tuple[str, str], ...]  # (kind "num", "id" or "rule", shown text)

    @classmethod
    def of(cls, shown: str) -> _Shown:
        parts, tokens, at = [], [], 0
        for token in _TOKEN.finditer(shown):
            parts.append(re.escape(shown[at : token.start()]))
            kind = token.lastgroup
            if kind == "wild":
                parts.append(".*?")
            elif kind == "id":
                parts.append(f"([0-9a-f]{{{len(token.group())}}})")
                tokens.append(("id", token.group()))
            elif kind == "rule":  # a table's rule is as wide as its column
                parts.append("(-{3,})")
                tokens.append(("rule", token.group()))
            elif kind == "num":
                parts.append(r"(-?\d+(?:\.\d+)?)")
                tokens.append(("num", token.group()))
            else:
                parts.append(r"\s+")
            at = token.end()
        parts.append(re.escape(shown[at:]))
        return cls(re.compile("".join(parts)), tuple(tokens))

    def printed(self, line: str) -> list[str] | None:
        """The printed values of the captured numbers and ids, or None: another shape."""
        found = self.pattern.fullmatch(line.strip())
        return list(found.groups()) if found else None


def _places(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


def _same(shown: str, printed: str) -> bool:
    """``printed`` rounds to ``shown`` (``0.66`` for 0.657; ``31.1`` for 31.1)."""
    return abs(float(printed) - float(shown)) <= 0.5 * 10 ** -_places(shown) + 1e-9


def _align(expected: list[str], printed: str) -> list[str | None]:
    """For each shown line, the printed line of its shape, in order (None: none); a line that
    is only ``...`` stands for any number of printed lines."""
    out: list[str | None] = []
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    at = 0
    for shown in expected:
        if shown.strip() in ("...", "…", ""):
            out.append(shown)
            continue
        form = _Shown.of(shown)
        for k in range(at, len(lines)):
            if form.printed(lines[k]) is not None:
                out.append(lines[k])
                at = k + 1
                break
        else:
            out.append(None)
    return out


def excerpt_problems(expected: list[str], printed: str) -> list[str]:
    """Where a shown output differs from what its command printed: a line not printed (in
    order), a number that differs beyond the shown rounding."""
    problems = []
    for shown, line in zip(expected, _align(expected, printed), strict=True):
        if line is None:
            problems.append(f"not printed: {shown!r}")
        elif line is not shown:
            form = _Shown.of(shown)
            pairs = zip(form.tokens, form.printed(line) or [], strict=True)
            differ = [
                f"{text} (prints {value})"
                for (kind, text), value in pairs
                if kind == "num" and not _same(text, value)
            ]
            if differ:
                problems.append(f"{shown!r}: {', '.join(differ)}")
    return problems


def refreshed(expected: list[str], printed: str) -> list[str]:
    """The shown lines with the numbers printed now, at the decimals shown; ids stay as shown
    (any id matches). A line shown as printed is taken with the printed spacing, so a console
    table's columns stay aligned. A line no longer printed is kept as it was."""
    out = []
    for shown, line in zip(expected, _align(expected, printed), strict=True):
        if line is None or line is shown:
            out.append(shown)
            continue
        form = _Shown.of(shown)
        found = form.pattern.fullmatch(line)
        text, at, group = [], 0, 0
        spans = []  # printed spans of the ids, and the shown id that goes back in
        for token in _TOKEN.finditer(shown):
            text.append(shown[at : token.start()])
            value = token.group()
            if token.lastgroup in ("id", "num", "rule"):
                group += 1
                if token.lastgroup == "num":
                    value = f"{float(found.group(group)):.{_places(value)}f}"
                elif token.lastgroup == "rule":
                    value = found.group(group)
                else:
                    spans.append((found.span(group), value))
            text.append(value)
            at = token.end()
        rebuilt = "".join(text) + shown[at:]
        as_printed = line
        for (start, end), value in reversed(spans):
            as_printed = as_printed[:start] + value + as_printed[end:]
        same = re.sub(r"\s+", " ", rebuilt) == re.sub(r"\s+", " ", as_printed)
        out.append(as_printed if same else rebuilt)
    return out


def pages(root: Path) -> list[Path]:
    """README.md and the topic pages under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@dataclass
class Ran:
    """A step run by ``run_page``: what its command printed (for an output block: what the
    command it shows printed last, None if the page did not run it)."""

    step: Step
    printed: str | None = None
    code: int | None = None
    seconds: float = 0.0


SWEEP_ID = re.compile(r"^sweep ([0-9a-f]{12})\b", re.M)


def run_page(
    root: Path, page: str, workdir: Path, bin_dir: Path, timeout: float = 1800
) -> Iterator[Ran]:
    """Run a page's steps in order in ``workdir``, as a user on a fresh clone would: with a copy
    of the shipped ``conf/`` (``PHYSASSIST_CONF_DIR``) that the page's YAML files are written
    into, the installed commands of ``bin_dir`` first on PATH, ``<id>`` the sweep id the page's
    last sweep printed. Skipped steps are yielded unrun."""
    from shipped_conf import copy_shipped, tracked

    copy_shipped(
        root / "conf", workdir / "conf", tracked(root)
    )  # a user's own files are not the page's
    env = {
        **os.environ,
        "PHYSASSIST_CONF_DIR": str(workdir / "conf"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("HYDRA_FULL_ERROR", None)
    sweep_id, last = None, {}
    for step in commands(root / page):
        if step.skip:
            yield Ran(step)
        elif step.file:
            target = workdir / step.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text)
            yield Ran(step)
        elif step.output_of:
            yield Ran(step, printed=last.get(step.output_of))
        else:
            command = step.command.replace("<id>", sweep_id or "<id>")
            started = time.monotonic()
            proc = subprocess.run(
                ["bash", "-c", command],
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            printed = proc.stdout + proc.stderr
            sweep_id = (SWEEP_ID.findall(printed) or [sweep_id])[-1]
            last[step.command] = printed
            yield Ran(step, printed, proc.returncode, round(time.monotonic() - started, 1))


REFRESH = "python tests/readme_commands.py --refresh"


def refresh(root: Path, page: str, bin_dir: Path) -> list[str]:
    """Run ``page``'s commands and rewrite its output blocks with what they print now; returns
    what changed and what could not be refreshed (a shown line no longer printed)."""
    path = root / page
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    notes, changes = [], []
    with tempfile.TemporaryDirectory(prefix="physassist-docs-") as scratch:
        for ran in run_page(root, page, Path(scratch), bin_dir):
            step = ran.step
            if ran.code not in (None, 0) and not step.expected:
                notes.append(
                    f"{page} {step}: exit {ran.code}: {(ran.printed or '').strip()[-300:]}"
                )
            if not step.output_of:
                continue
            if ran.printed is None:
                notes.append(f"{page} {step}: the page does not run {step.output_of!r} before it")
                continue
            new = refreshed(step.expected, ran.printed)
            problems = excerpt_problems(new, ran.printed)
            notes += [f"{page} {step}: {problem} (kept)" for problem in problems]
            if problems:
                notes.append(
                    f"{page} {step}: {step.output_of!r} printed:\n{ran.printed.strip()[-3000:]}"
                )
            if new != step.expected:
                changes.append((step.lines, new))
                notes.append(
                    f"{page} {step}: "
                    f"{sum(a != b for a, b in zip(new, step.expected, strict=True))} "
                    "line(s) refreshed"
                )
    for (start, end), new in sorted(changes, reverse=True):  # each line keeps its indentation
        lines[start:end] = [
            re.match(r"\s*", old).group().strip("\n") + text + "\n"
            for old, text in zip(lines[start:end], new, strict=True)
        ]
    if changes:
        path.write_text("".join(lines), encoding="utf-8")
    return notes


def main(argv: list[str]) -> int:
    """``--refresh [page ...]``: every page with an output block (or those named), from the
    installed commands of this Python's environment."""
    if not argv or argv[0] != "--refresh":
        print(f"usage: {REFRESH} [README.md docs/x.md ...]", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[1]
    chosen = argv[1:] or [
        p.relative_to(root).as_posix() for p in pages(root) if any(s.output_of for s in commands(p))
    ]
    for page in chosen:
        print(f"{page}: running its commands ...", flush=True)
        for note in refresh(root, page, Path(sys.executable).parent):
            print(note, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
