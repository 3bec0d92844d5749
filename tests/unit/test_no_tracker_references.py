"""The repository's code, tests, docs and tools say what they do, not which ticket asked for it:
no tracked text file refers to the issue tracker ("issue 15", "issue #3", "finding 7",
"deliverable 8", "wave 1"). A test or a comment explains the behaviour it covers in its own words.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve()

#: a reference to the issue tracker, matched case-insensitively
TRACKER_REFERENCE = re.compile(
    r"\bwave [0-9]|\bissue [0-9]+|issue #[0-9]|\bfinding [0-9]+|deliverable [0-9]",
    re.IGNORECASE,
)


def _tracked_files() -> list[Path]:
    """The files git tracks in the repository (``git ls-files``), as absolute paths."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True
    ).stdout
    return [REPO / name for name in out.decode().split("\0") if name]


def _text_lines(path: Path) -> list[str] | None:
    """The lines of ``path`` if it is a UTF-8 text file; None for a binary or missing file."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def test_no_tracker_references():
    hits = []
    for path in _tracked_files():
        if path.resolve() == THIS_FILE:
            continue
        lines = _text_lines(path)
        for number, line in enumerate(lines or [], start=1):
            if TRACKER_REFERENCE.search(line):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not hits, "references to the issue tracker:\n" + "\n".join(hits)
