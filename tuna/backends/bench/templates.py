"""Build and run command templates over a search's merged config.

A template is a shell command with ``{name}`` fields, ``name`` a key of the merged config (a
parameter or a base-config setting)::

    cc -O2 -DTILE={tile} -DUNROLL={unroll} -o bench bench.c
    ./bench --threads {threads} --seconds {seconds}

Each value is quoted for the shell (``shlex.quote``), so a value can never inject a command;
``{name:raw}`` splices it unquoted (for a setting holding several flags, ``{cflags:raw}``),
and any other format spec is applied before quoting (``{n:04d}``). ``{{`` and ``}}`` are
literal braces. A field naming something that is not in the config is refused when the
template is checked, before anything runs (:meth:`CommandTemplate.check`, which creating a
search does). A field naming a parameter the config lacks when it renders — a conditional
parameter where its condition does not hold (``"when"`` in a parameter file) — renders as
nothing, quoted or not: ``cc {unroll_flag:raw} x.c`` is ``cc  x.c`` there.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from tuna.errors import BackendError


class BenchError(BackendError):
    """Raised when a bench search is set up wrong (a template, a stats format, a directory)."""


class TemplateError(BenchError):
    """Raised when a command template is malformed or names something not in the config."""


@dataclass(frozen=True)
class CommandTemplate:
    """A command template (``what`` says which one: "build command", "run command")."""

    text: str
    what: str = "command"

    def fields(self) -> list[tuple[str, str]]:
        """The ``(name, format_spec)`` of every field, in order."""
        try:
            parsed = list(string.Formatter().parse(self.text))
        except ValueError as e:
            raise TemplateError(
                f"{self.what} {self.text!r}: {e}; write fields as {{name}} and literal braces "
                "as {{ and }}"
            ) from e
        out = []
        for _, name, spec, conversion in parsed:
            if name is None:
                continue
            if not name.isidentifier() or conversion:
                raise TemplateError(
                    f"{self.what} {self.text!r}: field "
                    f"{{{name}{'!' + conversion if conversion else ''}}} is not a plain name; "
                    "write {name}, {name:raw} or {name:FORMAT}"
                )
            out.append((name, spec or ""))
        return out

    def names(self) -> list[str]:
        return list(dict.fromkeys(n for n, _ in self.fields()))

    def check(self, known: Collection[str]) -> None:
        """Refuse a template naming anything not in ``known`` (the parameters and base settings)."""
        unknown = [n for n in self.names() if n not in known]
        if unknown:
            raise TemplateError(
                f"{self.what} {self.text!r} names {', '.join(map(repr, unknown))}, which "
                f"{'is' if len(unknown) == 1 else 'are'} neither a parameter nor a base-config "
                f"setting (known: {', '.join(sorted(known)) or '(none)'}); fix the template or "
                "declare the name"
            )

    def render(self, config: Mapping[str, Any]) -> str:
        """The command for ``config``: every field replaced by its (quoted) value, and a
        field whose name the config lacks (an absent conditional parameter) by nothing."""
        self.fields()  # a malformed template is refused, as check() refuses it
        parts: list[str] = []
        for literal, name, spec, _ in string.Formatter().parse(self.text):
            parts.append(literal)
            if name is None or name not in config:
                continue
            value = config[name]
            if spec == "raw":
                parts.append(str(value))
                continue
            try:
                text = format(value, spec or "")
            except (TypeError, ValueError) as e:
                raise TemplateError(
                    f"{self.what} {self.text!r}: cannot format {name}={value!r} with "
                    f"{{{name}:{spec}}} ({e})"
                ) from e
            parts.append(shlex.quote(text))
        return "".join(parts)
