"""The commands' rich consoles (``console`` for output, ``err_console`` for progress and
notes), in a module of their own: :mod:`tuna.cli.base` hands them out on first use, so a
command that prints plain text only (a worker) never imports rich."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleDimensions

PIPE_WIDTH = 1_000_000
"""Width of output that is not a terminal: nothing a script reads is ever cut or folded."""
RULE_WIDTH = 80


class TunaConsole(Console):
    """Rich's console on a terminal; into a pipe or a file, full-width plain output.

    Piped, no line is wrapped at 80 columns (COLUMNS is ignored) and tables are printed
    without box drawing, columns separated by spaces: ``grep``/``awk`` see whole keys
    and names. Scripts that want fields should use a listing's ``--json`` or ``--csv``.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._auto_color = kwargs.get("color_system", "auto") == "auto"  # read by the setter
        super().__init__(**kwargs)
        # Rich reads COLUMNS/LINES once, here, at import time; read them when printing instead
        # (the terminal may be resized, and tests set them).
        self._width = kwargs.get("width")
        self._height = kwargs.get("height")
        self._no_color = kwargs.get("no_color")  # rich's __init__ set it from NO_COLOR: undone

    # Rich likewise picks the colour system once, when the console is made; a console made while
    # TTY_COMPATIBLE=1 (or on a terminal) then coloured what it later wrote into a pipe. Asked
    # for "auto" (the default), it is decided when printing, from what the output is then.
    @property
    def _color_system(self) -> Any:
        return self._detect_color_system() if self._auto_color else self._fixed_color

    @_color_system.setter
    def _color_system(self, system: Any) -> None:  # Console.__init__ sets it
        self._fixed_color = system

    @property
    def no_color(self) -> bool:  # NO_COLOR likewise, read when printing unless set
        if self._no_color is not None:
            return bool(self._no_color)
        return self._environ.get("NO_COLOR", "") != ""

    @no_color.setter
    def no_color(self, value: bool | None) -> None:
        self._no_color = value

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        return dims if self.is_terminal else ConsoleDimensions(PIPE_WIDTH, dims.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.is_terminal:
            from rich.table import Table  # here, as rich's other parts: a worker prints text

            for obj in objects:
                if isinstance(obj, Table):
                    obj.box = None
                    obj.pad_edge = False
                    obj.show_edge = False
        super().print(*objects, **kwargs)

    def rule(self, title: Any = "", **kwargs: Any) -> None:
        if self.is_terminal:
            super().rule(title, **kwargs)
        else:  # a rule as wide as the pipe would be a million characters
            from rich.rule import Rule

            self.print(Rule(title, **kwargs), width=RULE_WIDTH)


console = TunaConsole(highlight=False, soft_wrap=False)
err_console = TunaConsole(stderr=True, highlight=False)
