"""Parsing scripts into functions and flattened statements, through the real tree-sitter grammar."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.model import Script, StmtKind
from app.analysis.source import parse_program, statement_at


def program(code: str, path: str = "t.py"):
    return parse_program([Script(path, textwrap.dedent(code))])


def lines_of(prog, line: int) -> tuple[int, ...]:
    st = statement_at(prog, prog.files[0].path, line)
    assert st is not None
    return st.lines


def test_functions_methods_nested_async_decorated_and_module():
    prog = program(
        """\
        import os
        X = 1

        @decorator(arg=1)
        def top(a):
            def inner(b):
                return b
            return inner(a)

        class Suite(Base):
            attr = 2

            def setUp(self):
                self.x = 1

            async def test_run(self):
                await self.go()
        """
    )
    fids = {f.fid: f for f in prog.functions}
    assert set(fids) == {"module", "top", "top.inner", "Suite.setUp", "Suite.test_run"}
    assert fids["top"].header_lines == (4, 5)
    assert fids["top.inner"].parent == "top"
    assert fids["Suite.setUp"].is_hook and not fids["Suite.test_run"].is_hook
    assert fids["Suite.test_run"].is_async
    module_lines = sorted(ln for s in fids["module"].statements for ln in prog.statements[s].lines)
    assert module_lines == [1, 2, 11]  # imports, constants and class-body statements
    top_lines = sorted(ln for s in fids["top"].statements for ln in prog.statements[s].lines)
    assert top_lines == [8]  # the nested def is not a statement of `top`
    assert prog.files[0].container_headers == ((10, 17, (10,)),)


def test_multiline_statements_clause_headers_and_comments():
    prog = program(
        """\
        def f(x):
            # explain the call
            value = compute(
                x,

                1,
            )
            if (x and
                    value):
                pass
            # before else
            else:
                raise ValueError(x)
        """
    )
    assert lines_of(prog, 3) == (2, 3, 4, 6, 7)  # comment attached, blank line 5 excluded
    header = statement_at(prog, "t.py", 9)
    assert header is not None and header.kind is StmtKind.IF and header.lines == (8, 9)
    else_stmt = statement_at(prog, "t.py", 12)
    assert else_stmt is not None and else_stmt.kind is StmtKind.ELSE and else_stmt.lines == (11, 12)
    raise_stmt = statement_at(prog, "t.py", 13)
    assert raise_stmt is not None and raise_stmt.kind is StmtKind.RAISE and raise_stmt.parent == else_stmt.sid


def test_calls_and_callbacks_are_recorded_per_statement():
    prog = program(
        """\
        def f(dut):
            if self.check(dut):
                wait_until(5, 1, poll_dut, dut, cb=self.on_done)
        """
    )
    header = statement_at(prog, "t.py", 2)
    body = statement_at(prog, "t.py", 3)
    assert header is not None and body is not None
    assert header.calls == ("self.check", "dut")  # the header owns its condition only
    # callees, plus names passed along (a function handed to a poller runs too)
    assert set(body.calls) == {"wait_until", "poll_dut", "dut", "self.on_done"}


def test_call_sites_tell_methods_module_functions_and_library_calls_apart():
    from app.analysis.callsites import call_sites

    prog = parse_program(
        [
            Script(
                "suite/test_net.py",
                textwrap.dedent(
                    """\
                    import helpers

                    def run(test):
                        process.run("ip link")
                        t = Checker()
                        t.check()
                        helpers.setup_bridge(test)
                        wait_until(5, poll)

                    def poll():
                        return True

                    class Checker:
                        def check(self):
                            self.run()

                        def run(self):
                            pass
                    """
                ),
            ),
            Script("suite/helpers.py", "def setup_bridge(test):\n    pass\n"),
        ]
    )
    sites = call_sites(prog)
    line = {fid: [prog.statements[s].start_line for s in sids] for fid, sids in sites.items()}
    assert line["run"] == []  # process.run(...) and self.run() are other functions
    assert line["Checker.run"] == [4, 15]  # any attribute call named run may reach the method
    assert line["Checker.check"] == [6]
    assert line["poll"] == [8]  # passed as a callback
    assert line["setup_bridge"] == [7]  # module-qualified from another script


def test_function_ids_are_unique_across_files_and_redefinitions():
    prog = parse_program(
        [
            Script(
                "a/test_x.py", "def run():\n    pass\n\ndef helper():\n    pass\n\ndef helper():\n    pass\n"
            ),
            Script("b/test_y.py", "def run():\n    pass\n"),
        ]
    )
    fids = [f.fid for f in prog.functions]
    assert len(fids) == len(set(fids))
    assert "a/test_x.py::run" in fids and "b/test_y.py::run" in fids
    assert "helper@4" in fids and "helper@7" in fids


def test_match_try_with_loops_are_flattened_in_source_order():
    prog = program(
        """\
        def f(cmd):
            try:
                with open(cmd) as fh:
                    data = fh.read()
            except OSError as exc:
                data = None
            finally:
                cleanup()
            for line in data:
                match line:
                    case "a":
                        continue
                    case _:
                        break
            else:
                done()
        """
    )
    kinds = [prog.statements[s].kind for s in prog.functions[1].statements]
    assert kinds == [
        StmtKind.TRY, StmtKind.WITH, StmtKind.SIMPLE, StmtKind.EXCEPT, StmtKind.SIMPLE, StmtKind.FINALLY,
        StmtKind.SIMPLE, StmtKind.FOR, StmtKind.MATCH, StmtKind.CASE, StmtKind.CONTINUE, StmtKind.CASE,
        StmtKind.BREAK, StmtKind.ELSE, StmtKind.SIMPLE,
    ]  # fmt: skip


def test_syntax_errors_recover_with_a_warning():
    prog = program("def f(x):\n    y = (1,\n    z = 2\n    return y\n\ndef g():\n    return 1\n")
    assert prog.files[0].has_errors
    assert any("syntax errors" in w for w in prog.warnings)
    assert any(f.name == "g" for f in prog.functions)


def test_every_code_line_belongs_to_a_statement_or_header():
    code = textwrap.dedent(
        """\
        # leading comment
        import sys

        @dec
        # between decorator and def
        def f():
            '''doc'''
            x = [
                1,
            ]  # trailing
            # last comment in f

        class K:
            # only a comment and a method
            def m(self):
                return 1
        # trailing file comment
        """
    )
    prog = program(code)
    covered = {ln for s in prog.statements for ln in s.lines}
    covered |= {ln for f in prog.functions for ln in f.header_lines}
    covered |= {ln for _s, _e, rows in prog.files[0].container_headers for ln in rows}
    assert covered == set(prog.files[0].code_lines)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("def():\n  ifelsrtun=1x'\"#[]")), max_size=300))
def test_parsing_never_raises_and_lines_stay_in_range(code: str):
    prog = program(code)
    n = len(prog.files[0].lines)
    for s in prog.statements:
        assert all(1 <= ln <= n for ln in s.lines)
