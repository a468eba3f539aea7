"""The consoles every ``guardrail`` command prints to, made anew for each command run, and the
log records a command shows on its stderr console."""

from __future__ import annotations

import logging
from collections.abc import Callable

from rich.console import Console
from rich.text import Text


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


SHOWN_INFO_LOGGERS = ("guardrail.onnx",)
"""Loggers whose INFO records a command shows too: the first run's model preparation, a pause of
several seconds that would otherwise go unexplained."""
QUIET_LOGGERS = ("pypdf",)
"""Loggers whose warnings a command leaves out: pypdf's notes on a damaged PDF ("EOF marker not
found") say again what the verdict's ``unreadable_document`` reason says."""


class ConsoleLog(logging.Handler):
    """Log records of level WARNING and above, shown on the running command's stderr console as
    ``warning: ...`` lines with the traceback a record carries (without a handler, Python would
    print them bare), but for
    :data:`QUIET_LOGGERS`; and the INFO records of :data:`SHOWN_INFO_LOGGERS`, as they are."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)

    def emit(self, record: logging.LogRecord) -> None:
        """Print ``record`` on ``ui.err`` unless it comes from a quiet logger."""
        if record.name.split(".")[0] in QUIET_LOGGERS and record.levelno < logging.ERROR:
            return
        if record.levelno < logging.WARNING and record.name not in SHOWN_INFO_LOGGERS:
            return
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is logging's problem, reported its way
            self.handleError(record)
            return
        prefix = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
        if record.exc_info:  # a failure of our own: its traceback, as the README promises
            message = f"{message}\n{logging.Formatter().formatException(record.exc_info)}"
        ui.err.print(Text(prefix + message))


def show_logs() -> Callable[[], None]:
    """Show log records on the command's stderr console (:class:`ConsoleLog`, on the root logger,
    with :data:`SHOWN_INFO_LOGGERS` let through at INFO) until the returned function is called,
    which puts everything back. The command is the application here: the library itself never
    adds handlers or sets levels."""
    handler = ConsoleLog()
    root = logging.getLogger()
    root.addHandler(handler)
    informing = [logging.getLogger(name) for name in SHOWN_INFO_LOGGERS]
    levels = [logger.level for logger in informing]
    for logger in informing:
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)

    def restore() -> None:
        root.removeHandler(handler)
        for logger, level in zip(informing, levels, strict=True):
            logger.setLevel(level)

    return restore
