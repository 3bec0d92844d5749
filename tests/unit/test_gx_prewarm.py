"""Great Expectations imported ahead of the first gate (acidflow.quality.gx.prewarm), in a
fresh interpreter so that nothing imported it before."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from acidflow.quality.gx import prewarm
assert "great_expectations" not in sys.modules
print("empty", prewarm(sys.argv[1]))
t = prewarm(sys.argv[2])
print("thread", t.name, t.daemon)
t.join()
print("imported", "great_expectations" in sys.modules)
print("again", prewarm(sys.argv[2]))
"""


def test_prewarm_imports_gx_on_a_thread_only_when_a_suite_exists(tmp_path):
    empty, suites = tmp_path / "empty", tmp_path / "suites"
    empty.mkdir()
    suites.mkdir()
    (suites / "db.t.json").write_text('{"expectations": []}')
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(empty), str(suites)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out == [
        "empty None",
        "thread acidflow-gx-import True",
        "imported True",
        "again None",  # once per process
    ]
