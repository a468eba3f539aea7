"""Writing a report file atomically: readers see the old file or the new one, never half of it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["atomic_text_file"]


@contextmanager
def atomic_text_file(path: Path, *, newline: str | None = None) -> Iterator[TextIO]:
    """A UTF-8 text file that replaces ``path`` (its folder created if need be) when the block ends
    without error; on an error the temporary file is removed and ``path`` is left as it was. A
    symbolic link is followed: the file it names is replaced, the link stays."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
