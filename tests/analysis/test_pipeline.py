"""The static phase end to end: the paper's running example exactly, real cases, and bad input."""

from __future__ import annotations

import textwrap

import pytest

from app.analysis.estimate import EstimateOptions
from app.analysis.model import Loc, Script
from app.analysis.pipeline import analyze
from tests.conftest import benchmark_cases, load_case, running_example

FAITHFUL = {
    "T0": "T0",
    "T1_dbt_exe": "T1_dbt_exe",
    "T1_dbt_nexe": "T1_dbt_nexe",
    "T2": "T2",
    "Tmid = CSR(T1_dbt_exe & T2)": "CSR(T1_dbt_exe&T2)",
    "Tmax = CSR(T1_dbt_nexe & T2)": "CSR(T1_dbt_nexe&T2)",
}


def lines(locs) -> list[int]:
    return sorted(loc.line for loc in locs)


def test_running_example_reproduces_every_expected_set():
    scripts, log, exp = running_example()
    a = analyze(scripts, log, log_functions=exp["log_function_patterns"])
    static = [s for s in a.log_statements if s.is_static]
    assert [s.line for s in static] == exp["static_log_statements"]
    assert [s.line for s in a.log_statements if not s.is_static] == exp["non_static_log_statements"]
    assert {str(s.line): list(s.parts) for s in static} == exp["regex_static_parts"]
    stmts = a.program.statements
    assert sorted(stmts[s].start_line for s in a.error_statements) == exp["error_statements"]
    assert exp["error_message_contains"] in a.log.error_message
    assert sorted(stmts[s].start_line for s in a.match.exe) == exp["L_exe"]
    assert sorted(stmts[s].start_line for s in a.match.nexe) == exp["L_nexe"]
    assert {str(b.bid): [b.start_line, b.end_line] for b in a.blocks} == exp["blocks"]
    for name, variant in FAITHFUL.items():
        assert lines(a.traces[variant].kept) == exp["faithful"][name], name
    assert lines(a.traces["tplus"].kept) == exp["enhanced"]["trace"]
    assert a.warnings == ()


def test_running_example_evidence_names_each_rule():
    scripts, log, exp = running_example()
    a = analyze(scripts, log, log_functions=exp["log_function_patterns"])
    ev = {loc.line: e for loc, e in a.traces["tplus"].evidence.items()}
    assert ev[13].rule == "call-site"  # test_1 ran and has exactly one call site
    assert ev[15].rule == "walk"  # the else branch lies on no walk through the executed nodes
    assert ev[6].rule == "call-site"  # test_2 lost its only call site
    assert ev[19].rule == "termination"  # after the innermost traceback frame
    assert ev[17].rule == "traceback" and ev[2].rule == "log-match"
    t1 = {loc.line: e for loc, e in a.traces["T1_dbt_nexe"].evidence.items()}
    assert t1[3].rule == "gap" and t1[3].state.value == "doubtful"


@pytest.mark.parametrize(
    "switch",
    ["call_site_inference", "termination", "walk_semantics", "normal_return"],
)
def test_each_refinement_is_switchable_and_faithful_mode_is_unchanged(switch: str):
    scripts, log, exp = running_example()
    full = analyze(scripts, log, log_functions=exp["log_function_patterns"])
    off = analyze(
        scripts, log, log_functions=exp["log_function_patterns"], options=EstimateOptions(**{switch: False})
    )
    for variant in FAITHFUL.values():
        assert off.traces[variant].kept == full.traces[variant].kept
    assert full.traces["tplus"].kept <= off.traces[variant].kept | off.traces["tplus"].kept
    if switch == "call_site_inference":
        assert off.traces["tplus"].kept > full.traces["tplus"].kept


def test_termination_prunes_after_the_error_line_and_normal_return_keeps_the_way_out():
    code = textwrap.dedent(
        """\
        def check(x):
            if x > 3:
                raise ValueError(x)
            y = x + 1
            return y

        def run():
            print("run start")
            value = check(1)
            total = 10 / (value - 2)
            cleanup()
            report(total)
        """
    )
    log = textwrap.dedent(
        """\
        run start
        Traceback (most recent call last):
          File "/ci/t.py", line 10, in run
            total = 10 / (value - 2)
        ZeroDivisionError: division by zero
        """
    )
    a = analyze([Script("t.py", code)], log)
    kept = lines(a.traces["tplus"].kept)
    assert kept == [1, 2, 4, 5, 7, 8, 9, 10]  # check returned normally: not through the raise
    off = analyze(
        [Script("t.py", code)], log, options=EstimateOptions(termination=False, normal_return=False)
    )
    assert {3, 11, 12} <= set(lines(off.traces["tplus"].kept))


@pytest.mark.parametrize("path", benchmark_cases(), ids=lambda p: p.stem)
def test_real_cases_run_and_every_variant_is_a_subset_of_t0(path):
    scripts, log, case = load_case(path)
    a = analyze(scripts, log, log_functions=case.get("log_functions") or ())
    t0 = a.traces["T0"].kept
    for name, trace in a.traces.items():
        assert trace.kept <= t0, name
        assert 0.0 <= trace.pruning_rate <= 1.0
    assert a.log.error_message
    faulty = {Loc(f["path"], f["line"]) for f in case["faulty_lines"]}
    assert faulty & t0  # the ground truth points at code lines


def test_real_case_traceback_frames_become_error_statements():
    path = next(p for p in benchmark_cases() if "binutils" in p.name)
    scripts, log, _ = load_case(path)
    a = analyze(scripts, log)
    frames = [(f.path, f.line, f.function) for f in a.error_frames]
    assert ("toolchain/binutils.py", 47, "check_install") in frames
    assert ("toolchain/binutils.py", 60, "setUp") in frames


BAD_LOGS = {
    "empty": "",
    "binary": "\x00\x01\x02\xff\xfe" * 200,
    "only-traceback-header": "Traceback (most recent call last):\n",
    "unknown-format": "%%%% weird ::: \n" * 50,
}


@pytest.mark.parametrize("name", list(BAD_LOGS))
def test_bad_logs_give_warnings_not_errors(name: str):
    scripts, _, exp = running_example()
    a = analyze(scripts, BAD_LOGS[name], log_functions=exp["log_function_patterns"])
    assert a.traces["tplus"].kept <= a.traces["T0"].kept
    if name in ("empty", "only-traceback-header"):
        assert a.warnings


def test_syntax_error_script_still_analyzes_with_a_warning():
    code = "def f(x):\n    print('start', x)\n    y = (1,\n    return y\n\ndef g():\n    print('g ran')\n"
    a = analyze([Script("t.py", code)], "start 1\ng ran\n")
    assert any("syntax errors" in w for w in a.warnings)
    assert Loc("t.py", 7) in a.traces["tplus"].kept


def test_scripts_in_other_languages_do_not_crash():
    a = analyze(
        [Script("test.sh", "#!/bin/sh\nset -e\necho start\nfor i in 1 2; do echo $i; done\n")], "start\n1\n"
    )
    assert a.traces["T0"].total == 4


def test_forty_sequential_ifs_hit_the_path_bound_and_fall_back():
    body = "".join(
        f"    if c{i}:\n        print('a{i}')\n    else:\n        print('b{i}')\n" for i in range(40)
    )
    code = f"def f():\n{body}    print('end')\n"
    log = "".join(f"a{i}\n" if i % 2 else f"b{i}\n" for i in range(40)) + "end\n"
    a = analyze([Script("t.py", code)], log, options=EstimateOptions(path_budget=5_000))
    assert a.traces["T2"].kept  # conservative: the function is kept
    # tplus decides the same function exactly, in linear time
    kept = a.traces["tplus"].kept
    for i in range(40):
        then_line, else_line = 3 + 4 * i, 5 + 4 * i
        assert (Loc("t.py", then_line) in kept) == bool(i % 2)
        assert (Loc("t.py", else_line) in kept) != bool(i % 2)


def test_deep_nesting_and_huge_inputs_do_not_crash():
    depth = 60
    code = "def f(x):\n" + "".join("    " * (d + 1) + f"if x > {d}:\n" for d in range(depth))
    code += "    " * (depth + 1) + "print('deep')\n"
    a = analyze([Script("deep.py", code)], "deep\n")
    assert Loc("deep.py", depth + 2) in a.traces["tplus"].kept
    big_script = "\n".join(f"def f{i}():\n    print('step {i}')\n    x = {i}\n" for i in range(3_400))
    big_log = "\n".join(f"step {i % 3_400}" for i in range(100_000))
    b = analyze([Script("big.py", big_script)], big_log, explain=False)
    assert b.traces["T0"].total > 10_000


def test_loops_need_walk_semantics():
    code = textwrap.dedent(
        """\
        def f(items):
            for x in items:
                if x:
                    print("took A")
                else:
                    print("took B")
            print("never")
        """
    )
    a = analyze([Script("t.py", code)], "took A\ntook B\n")
    kept = a.traces["tplus"].kept
    assert Loc("t.py", 4) in kept and Loc("t.py", 6) in kept  # both branches, in different iterations
    assert Loc("t.py", 7) not in kept
    # without walk semantics the acyclic CFG has no path through both branches
    b = analyze([Script("t.py", code)], "took A\ntook B\n", options=EstimateOptions(walk_semantics=False))
    assert any("do not lie on one walk" in w for w in b.warnings)


def test_trimmed_logs_do_not_count_missing_messages_as_evidence():
    path = next(p for p in benchmark_cases() if "enospc" in p.name)
    scripts, log, case = load_case(path)
    a = analyze(scripts, log)
    faulty = {Loc(f["path"], f["line"]) for f in case["faulty_lines"]}
    assert any("trimmed log" in w for w in a.warnings)
    assert faulty <= a.traces["tplus"].kept
    assert not faulty <= a.traces["CSR(T1_dbt_nexe&T2)"].kept  # the paper's reading loses it
    off = analyze(scripts, log, options=EstimateOptions(log_coverage=False))
    assert not any("trimmed log" in w for w in off.warnings)


def test_debug_statements_are_not_evidence_when_the_log_has_no_debug_lines():
    code = textwrap.dedent(
        """\
        import logging
        log = logging.getLogger(__name__)

        def f():
            log.info("starting f")
            log.debug("detail of f")
            g()

        def g():
            log.info("in g")
            log.debug("g internals")
            log.warning("g warning")
        """
    )
    lines_ = "2024-01-01 10:00:00,000 INFO t: starting f\n2024-01-01 10:00:00,001 INFO t: in g\n" * 3
    a = analyze([Script("t.py", code)], lines_)
    kept = a.traces["tplus"].kept
    assert Loc("t.py", 6) in kept and Loc("t.py", 11) in kept  # debug lines cannot show at INFO
    assert Loc("t.py", 12) not in kept  # a warning would have shown
    assert Loc("t.py", 6) not in a.traces["T1_dbt_exe"].kept


def test_decorators_of_one_line_defs_join_with_their_def():
    code = "import functools\n\ndef outer():\n    @functools.cache\n    def inner(): return 1\n"
    code += "    return inner()\n\nouter()\n"
    a = analyze([Script("t.py", code)], "")
    kept = lines(a.traces["T1_dbt_exe"].kept)
    assert {4, 5} <= set(kept)
    assert {4, 5} <= set(lines(a.traces["tplus"].kept))


def test_termination_is_not_trusted_for_helpers_that_may_have_run_before():
    code = textwrap.dedent(
        """\
        def check(value):
            total = 100 / value
            seen.append(total)

        def test_values():
            for v in (4, 2, 0):
                check(v)
        """
    )
    log = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "t.py", line 7, in test_values
            check(v)
          File "t.py", line 2, in check
            total = 100 / value
        ZeroDivisionError: division by zero
        """
    )
    kept = set(lines(analyze([Script("t.py", code)], log).traces["tplus"].kept))
    assert 3 in kept  # check() ran to the end for 4 and 2 before failing on 0


def test_an_error_on_a_with_header_keeps_its_body():
    code = "def test_file():\n    with open_resource() as r:\n        r.write('x')\n    done()\n"
    log = "Traceback (most recent call last):\n"
    log += '  File "t.py", line 2, in test_file\n    with open_resource() as r:\nOSError: close failed\n'
    kept = set(lines(analyze([Script("t.py", code)], log).traces["tplus"].kept))
    assert 3 in kept  # __exit__ raises after the body ran


def test_a_frame_matched_by_file_name_alone_across_folders_is_warned():
    script = "def test_x():\n    assert 1 == 2\n"
    log = (
        "Traceback (most recent call last):\n"
        '  File "/ci/checkout/tests/other/test_x.py", line 2, in test_x\n'
        "AssertionError\n"
    )
    warned = analyze([Script("tests/unit/test_x.py", script)], log)
    assert any("by file name only (other/ vs unit/)" in w for w in warned.warnings)
    same_folder = analyze([Script("tests/other/test_x.py", script)], log)
    assert not any("by file name only" in w for w in same_folder.warnings)
    bare_name = analyze([Script("test_x.py", script)], log)
    assert not any("by file name only" in w for w in bare_name.warnings)
    with_code = log.replace("in test_x\n", "in test_x\n    assert 1 == 2\n")
    confirmed = analyze([Script("tests/unit/test_x.py", script)], with_code)
    assert not any("by file name only" in w for w in confirmed.warnings)  # the printed code is the line
