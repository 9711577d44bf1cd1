"""Griffe extensions for the API reference (docstrings stay unchanged).

``ExampleSections``: the package's docstrings head their examples
``Example:``, which Google style reads as an admonition (its ``>>>`` lines
would render as nested block quotes); this reads that heading as
``Examples:`` so a doctest renders as code and a fenced block as a block.

``CommentDocs``: constants and fields are documented by ``#:`` comments
above them (the comment sits next to the value it explains, and the module
needs no string statement after each assignment); griffe reads only string
docstrings, so this gives an attribute without one the text of its ``#:``
lines. Without it the reference would list ``SELECTION_KEY`` bare.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

_HEADING = re.compile(r"^(\s*)Example:[ \t]*$", re.M)
_COMMENT = re.compile(r"^\s*#:(?: (.*))?$")


class ExampleSections(griffe.Extension):
    """Turn a Google ``Example:`` heading into ``Examples:`` on every object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _HEADING.sub(r"\1Examples:", obj.docstring.value)


class CommentDocs(griffe.Extension):
    """Give an attribute without a docstring the ``#:`` comment lines above it."""

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        path = attr.filepath
        if attr.docstring is not None or attr.lineno is None or not isinstance(path, Path):
            return
        if path not in attr.lines_collection:
            return
        lines = attr.lines_collection[path]
        found: list[str] = []
        number = attr.lineno - 2  # the line above the assignment, 0-based
        while number >= 0 and (match := _COMMENT.match(lines[number])):
            found.insert(0, match.group(1) or "")
            number -= 1
        if found:
            attr.docstring = griffe.Docstring(
                "\n".join(found), lineno=number + 2, endlineno=attr.lineno - 1, parent=attr
            )
