"""``python -m physassist.grounding``: the fact-type table of docs/reports.md."""

from physassist.grounding.registry import markdown_table

print(markdown_table())
