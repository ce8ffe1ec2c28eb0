"""Run a real command with stderr on a pseudo-terminal, as a person's shell would."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path


def run_on_terminal(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """The command's exit status and everything it drew on the terminal (stdout is discarded)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stderr=follower, stdout=subprocess.DEVNULL, cwd=cwd, env=env)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the command is gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.wait(timeout=300), seen.decode(errors="replace")
