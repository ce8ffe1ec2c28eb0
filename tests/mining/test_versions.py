"""Which version a mined log comes from: frames checked against the faulty version, messages the fix adds."""

from __future__ import annotations

from app.analysis.model import Frame
from app.mining.versions import SKEW, describe, frame_evidence, message_added_by_fix

HELPER = "\n".join(
    [
        "import time",
        "",
        "",
        "def wait_for_nodes(nodes=None):",
        "    nodes = nodes or []",
        "    for node in nodes:",
        "        node.wait()",
        "    return len(nodes)",
        "",
        "",
        "def stop(node):",
        "    node.stop(timeout=10)",
    ]
)
FILES = {"sdcm/cluster.py": HELPER}


def frame(line: int, code: str | None, path: str = "/ci/sct/sdcm/cluster.py", function: str = "f") -> Frame:
    return Frame(path=path, line=line, function=function, code=code)


def test_a_frame_at_its_line_or_a_few_lines_off_matches() -> None:
    ev = frame_evidence([frame(7, "node.wait()"), frame(7 + SKEW, "node.wait()")], FILES)
    assert (ev.matched, ev.skewed, ev.other) == (2, 1, ())
    assert "2 of 2" in describe(ev)


def test_frames_from_another_version_say_how() -> None:
    far = frame(1 + SKEW + 1, "import time")
    past = frame(40, None, function="stop")
    absent = frame(8, "return len(nodes) + 1")
    ev = frame_evidence([far, past, absent], FILES)
    assert ev.matched == 0
    assert ev.far == (
        f"sdcm/cluster.py:{1 + SKEW + 1} prints code that is {SKEW + 1} lines away in the faulty version",
    )
    assert ev.absent == (
        "sdcm/cluster.py:40 is past the end of the file (12 lines)",
        "sdcm/cluster.py:8 prints code that is not in the faulty version",
    )
    # no printed code: the line is inside the file, the function is not defined there
    ev = frame_evidence([frame(5, None, function="wait_for_pods")], FILES)
    said = "sdcm/cluster.py:5 names a function wait_for_pods that the faulty version does not define"
    assert ev.other == (said,)
    ev = frame_evidence([frame(5, None, function="wait_for_nodes")], FILES)
    assert (ev.unprinted, ev.other) == (1, ())


def test_a_frame_past_the_end_of_the_file_is_another_version_even_when_its_code_is_near() -> None:
    # the file ends at line 12 with ``node.stop(timeout=10)``: a frame printing it at line 14 was printed
    # by a version two lines longer, though the code sits within the allowed skew
    ev = frame_evidence([frame(14, "node.stop(timeout=10)"), frame(7, "node.wait()")], FILES)
    assert (ev.matched, ev.absent) == (1, ("sdcm/cluster.py:14 is past the end of the file (12 lines)",))


def test_a_cut_or_wrapped_printed_line_matches_by_its_start_and_spacing_is_ignored() -> None:
    ev = frame_evidence([frame(12, "node.stop(timeout=..."), frame(5, "nodes  =  nodes or []")], FILES)
    assert (ev.matched, ev.other) == (2, ())


def test_frames_that_match_the_fixed_version_and_frames_elsewhere() -> None:
    fixed = {"sdcm/cluster.py": HELPER.replace("node.wait()", "node.wait(timeout=60)")}
    ev = frame_evidence([frame(7, "node.wait(timeout=60)")], FILES, fixed)
    assert (ev.matched, ev.fixed, ev.other) == (0, 1, ())
    # the faulty line itself printed: only the faulty version holds it
    ev = frame_evidence([frame(7, "node.wait()")], FILES, fixed)
    assert (ev.matched, ev.faulty_only) == (1, 1)
    # a same-named file in another folder, and files not in the case, prove nothing
    elsewhere = "/usr/lib/python3/site-packages/other/cluster.py"
    other = [frame(99, "x()", path=elsewhere), frame(1, "y", path="z.py")]
    assert frame_evidence(other, FILES).checked == 0


FIX = """\
diff --git a/sdcm/sct_config.py b/sdcm/sct_config.py
--- a/sdcm/sct_config.py
+++ b/sdcm/sct_config.py
@@ -1435 +1435,4 @@ class SCTConfiguration(dict):
-                for key, value in regions_data[region].items():
+                if region not in regions_data:
+                    raise ValueError(f"{region} isn't supported, use: {list(regions_data.keys())}")
+
+                for key, value in regions_data.get(region, {}).items():
@@ -1826,0 +1830,4 @@ class SCTConfiguration(dict):
+        assert any(self.get(o) for o in options), \\
+            "scylla version/repos wasn't configured correctly\\n" \\
+            f"configure one of the following: {options}"
+        expected = "the service answered with an error"
"""


def test_a_message_only_the_fix_adds_marks_the_fixed_version_output() -> None:
    # scylla-cluster-tests c59a94ea76 and 7bfcf75d01: the log prints the check the fix adds
    log = "ValueError: us-east-2 isn't supported, use: ['us-east-1', 'us-west-2',\n'eu-west-1']"
    assert message_added_by_fix(log, FIX, [HELPER]) == "isn't supported, use:"
    said = "scylla version/repos wasn't configured correctly"
    pytest_log = f"E       AssertionError: {said}\nE       configure one"
    assert message_added_by_fix(pytest_log, FIX, [HELPER]) == said
    # the faulty version printed it already: no evidence
    assert message_added_by_fix(log, FIX, ["raise ValueError(f'{r} isn't supported, use: {x}')"]) is None
    # a quoted value, an assertion diff and a plain assignment are compared values, not messages
    quoted = "AssertionError: 'the service answered with an error' != 'ok'"
    assert message_added_by_fix(quoted, FIX, []) is None
    assert message_added_by_fix("E   + the service answered with an error", FIX, []) is None
    assert message_added_by_fix("the service answered with an error", FIX, []) is None


def test_a_library_file_that_shares_the_case_files_end_is_another_file() -> None:
    # SatelliteQE/robottelo 44bcec041f: pytest's own config/__init__.py is not robottelo/config/__init__.py
    files = {"robottelo/config/__init__.py": "import os\n"}
    pytest_frame = frame(
        1229, "self.pluginmanager.load()", path="/usr/lib/python3.11/site-packages/_pytest/config/__init__.py"
    )
    assert frame_evidence([pytest_frame], files).checked == 0
    checkout = frame(1, "import os", path="/root/robottelo/config/__init__.py")
    assert frame_evidence([checkout], files).matched == 1
