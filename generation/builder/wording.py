"""Loading the EN/ZH wording templates and filling them in.

Templates live in ``templates/<lang>.yaml``. Question variants are parallel lists (variant i
in English and Chinese say the same), so one seeded draw yields both languages.
"""

from __future__ import annotations

import re
import string
from functools import cache
from importlib import resources
from typing import Any

import yaml

from physassist.vocab import LANGUAGES


class TemplateError(ValueError):
    """A template is missing or references a value the builder does not provide."""


@cache
def templates(lang: str) -> dict[str, Any]:
    """The parsed template file of one language."""
    if lang not in LANGUAGES:
        raise TemplateError(f"unknown language {lang!r}; expected one of {LANGUAGES}")
    text = (
        resources.files(__package__)
        .joinpath("templates")
        .joinpath(f"{lang}.yaml")
        .read_text("utf-8")
    )
    data = yaml.load(
        text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )  # C parser: ~20x faster
    if not isinstance(data, dict):
        raise TemplateError(f"templates/{lang}.yaml: expected a mapping at the top level")
    return data


def lookup(lang: str, path: str) -> Any:
    """The template at a dotted path, e.g. ``answers.rec.worsening``."""
    node: Any = templates(lang)
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise TemplateError(f"templates/{lang}.yaml: no entry {path!r}")
        node = node[part]
    return node


def fill(template: str, where: str, **values: Any) -> str:
    """``template`` with ``{name}`` fields replaced; a missing value is an error naming both."""
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    missing = [n for n in names if n not in values]
    if missing:
        raise TemplateError(f"template {where}: no value for {', '.join(missing)}")
    return tidy(template.format(**values))


_SPACES = re.compile(r"[ \t]{2,}")
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:?!)\]）。，；：？！、（])")
_SPACE_AFTER_CJK_PUNCT = re.compile(r"([（。，；：？！、“])[ \t]+")


def tidy(text: str) -> str:
    """Collapse the gaps an empty value leaves (a unitless INR: "1.1 ." -> "1.1.")."""
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", text))
    return _SPACE_AFTER_CJK_PUNCT.sub(r"\1", text).strip()


def say(lang: str, path: str, **values: Any) -> str:
    """Fill the single template at ``path`` in ``lang``."""
    tpl = lookup(lang, path)
    if not isinstance(tpl, str):
        raise TemplateError(f"templates/{lang}.yaml: {path!r} is not a single template")
    return fill(tpl, f"{lang}:{path}", **values)


def variants(lang: str, kind: str, form: str) -> list[str]:
    """Question variants of a topic kind in one form (explicit, pe, na, na_lab, ae)."""
    forms = lookup(lang, f"questions.{kind}")
    return list(forms.get(form) or [])
