"""A griffe extension for the documentation site: relsim's docstrings, checked and read as Markdown.

mkdocs.yml loads it into mkdocstrings. It does two things over every public object of the
package (no part of its path starts with an underscore; the command line's modules,
``relsim.cli``, are documented by the commands' pages instead):

- a public module, class, function or method without a docstring is a warning, which
  ``mkdocs build --strict`` turns into a failed build, so CI fails on a missing docstring;
- the docstrings' reStructuredText spellings that Markdown would show as noise become
  Markdown: a cross-reference role (``:func:`~relsim.plan.levers```) becomes inline code
  (``levers``), and a paragraph that ends in a literal-block marker ``::`` ends in ``:``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import griffe

# a child of mkdocs' logger, whose warnings `mkdocs build --strict` counts
logger = logging.getLogger("mkdocs.plugins.relsim")

KINDS = {griffe.Kind.MODULE, griffe.Kind.CLASS, griffe.Kind.FUNCTION, griffe.Kind.ATTRIBUTE}
NEEDS_DOCSTRING = {griffe.Kind.MODULE, griffe.Kind.CLASS, griffe.Kind.FUNCTION}
LEFT_OUT = ("relsim.cli",)
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|obj|exc|math):`(~?)([^`]+)`")


MATH = re.compile(r"^(\s*)\.\. math::\s*(.*)$")


def as_markdown(text: str) -> str:
    """``text`` with its cross-reference roles as inline code and its literal blocks fenced.

    A literal block (a paragraph ending in ``::``) and a ``.. math::`` directive become fenced
    code blocks: the site stays offline, so formulas are shown as written, not typeset.
    """
    text = ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`",
                    text)
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        math = MATH.match(line)
        if not math and not line.rstrip().endswith("::"):
            out.append(line)
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        first = []
        if math:
            first = [math.group(2).strip()] if math.group(2).strip() else []
        else:
            lead = line.rstrip()[:-2].rstrip()
            if lead:
                out.append(lead + ":")
        # the block: blank lines and lines indented past the marker's line
        block, j = [], i + 1
        while j < len(lines) and (not lines[j].strip()
                                  or len(lines[j]) - len(lines[j].lstrip()) > indent):
            block.append(lines[j])
            j += 1
        while block and not block[-1].strip():
            block.pop()
            j -= 1
        while block and not block[0].strip():
            block.pop(0)
        cut = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
        body = first + [b[cut:] if b.strip() else "" for b in block]
        if body:
            fence = " " * indent + "```"
            out += ["", fence, *[" " * indent + b if b else "" for b in body], fence]
            if j < len(lines) and lines[j].strip():  # text right after: keep it a paragraph
                out.append("")
        i = j
    return "\n".join(out)


def public(obj: griffe.Object) -> list[griffe.Object]:
    """``obj`` and the public objects under it (modules, classes, functions, attributes)."""
    found = [obj]
    if obj.kind in (griffe.Kind.FUNCTION, griffe.Kind.ATTRIBUTE):
        return found
    for name, member in obj.members.items():
        if member.is_alias or name.startswith("_") or member.kind not in KINDS:
            continue
        if not member.path.startswith(LEFT_OUT):
            found += public(member)
    return found


class RelsimDocstrings(griffe.Extension):
    """Warn for each public object without a docstring; read the others as Markdown."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "relsim":
            return
        for obj in public(pkg):
            if obj.docstring is not None:
                obj.docstring.value = as_markdown(obj.docstring.value)
            elif obj.kind in NEEDS_DOCSTRING:
                logger.warning("relsim: %s has no docstring", obj.path)
