"""Progress for long commands (`batch`, `eval`): a rich bar on a terminal, quiet or plain lines elsewhere."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class ProgressBar:
    """One task's bar on stderr when it is a terminal; ``bar.active`` says whether one is drawn."""

    def __init__(self, description: str, total: int, *, stream: TextIO | None = None) -> None:
        self.console = Console(file=stream or sys.stderr, highlight=False)
        self.active = self.console.is_terminal
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("({task.fields[failed]} failed)"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
            disable=not self.active,
        )
        self._task = self._progress.add_task(description, total=total, failed=0)

    def update(self, finished: int, failed: int = 0, total: int | None = None) -> None:
        self._progress.update(self._task, completed=finished, failed=failed, total=total)

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.refresh()
        self._progress.stop()
