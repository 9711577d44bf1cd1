"""A griffe extension for the API reference: the package's docstrings head
their doctests ``Example:``, which Google style reads as an admonition (its
``>>>`` lines would render as nested block quotes); this reads that heading
as ``Examples:`` so the doctest renders as code. Docstrings stay unchanged."""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADING = re.compile(r"^(\s*)Example:[ \t]*$", re.M)


class ExampleSections(griffe.Extension):
    """Turn a Google ``Example:`` heading into ``Examples:`` on every object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _HEADING.sub(r"\1Examples:", obj.docstring.value)
