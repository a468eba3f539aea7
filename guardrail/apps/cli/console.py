"""The consoles every ``guardrail`` command prints to, made anew for each command run."""

from __future__ import annotations

from rich.console import Console


class Consoles:
    """``out`` (stdout) and ``err`` (stderr) rich consoles.

    :meth:`reset` builds them anew, so each command run reads the terminal width (``COLUMNS`` or
    the terminal) at that moment rather than when the module was imported. Messages are
    soft-wrapped: a message is one line whatever the width, so it can be searched and parsed;
    tables still fit the width.
    """

    def __init__(self) -> None:
        self.out, self.err = self._build()

    def reset(self) -> None:
        """New consoles for a new command run."""
        self.out, self.err = self._build()

    @staticmethod
    def _build() -> tuple[Console, Console]:
        return Console(soft_wrap=True), Console(stderr=True, soft_wrap=True)


ui = Consoles()
"""The consoles of the running command (reset by the ``guardrail`` app's callback)."""
