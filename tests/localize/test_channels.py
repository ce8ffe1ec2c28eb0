"""Each evidence channel's rule on small synthetic scripts and logs, through the real pipeline.

The scripts are written for these tests; each one shows one property of test code or logs.
"""

from __future__ import annotations

import time

from app.analysis.model import Analysis, Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.channels import Context
from app.localize.channels.facts import build_facts
from app.localize.channels.lexical import code_tokens, query_tokens
from app.localize.evidence import Channel
from app.localize.heuristic import ScoredElement, rank_heuristic, rank_stacktrace


def _analyze(code: str, log: str, path: str = "t.py") -> Analysis:
    return analyze([Script(path, code)], log)


def _lines(analysis: Analysis, k: int = 5, **kwargs: object) -> list[ScoredElement]:
    return rank_heuristic(analysis, render(analysis, "T0", "line"), k, **kwargs)  # type: ignore[arg-type]


def _tb(path: str, frames: list[tuple[int, str, str]], error: str) -> str:
    body = "".join(f'  File "/src/{path}", line {n}, in {fn}\n    {code}\n' for n, fn, code in frames)
    return f"Traceback (most recent call last):\n{body}{error}\n"


def _channels(scored: ScoredElement) -> set[Channel]:
    return {e.channel for e in scored.evidence}


GUARDED_FAIL = """import os


class T:
    def test_kernel(self):
        version = os.uname().release
        if version.startswith("4|5"):
            self.log.info("supported")
        else:
            self.fail("unsupported kernel %s" % version)
"""


def test_a_failed_check_ranks_its_guard_above_the_raise() -> None:
    log = _tb(
        "t.py",
        [(10, "test_kernel", 'self.fail("unsupported kernel %s" % version)')],
        "TestFail: unsupported kernel 6.1",
    )
    ranked = _lines(_analyze(GUARDED_FAIL, log))
    ids = [s.element.id for s in ranked]
    assert ids[0] == "7"  # the `if` deciding the failure
    assert ids.index("7") < ids.index("10")
    assert Channel.CHECK in _channels(ranked[0])


def test_a_crash_inside_a_check_is_not_a_check() -> None:
    code = (
        "class T:\n    def check(self, pkg):\n        if not pkg:\n"
        '            self.cancel("no %s" % self.pkgname)\n'
    )
    log = _tb(
        "t.py",
        [(4, "check", 'self.cancel("no %s" % self.pkgname)')],
        "AttributeError: 'T' object has no attribute 'pkgname'",
    )
    ranked = _lines(_analyze(code, log))
    assert ranked[0].element.id == "4"
    assert Channel.CHECK not in _channels(ranked[0])


CHECKED_VALUE = """def compute(items):
    total = 0
    for item in items:
        total = item
    return total


def test_sum():
    result = compute([1, 2, 3])
    if result != 6:
        raise AssertionError("wrong sum")
"""


def test_the_checked_value_is_followed_back_through_a_return() -> None:
    log = _tb("t.py", [(11, "test_sum", 'raise AssertionError("wrong sum")')], "AssertionError: wrong sum")
    ranked = _lines(_analyze(CHECKED_VALUE, log), k=6)
    ids = [s.element.id for s in ranked]
    assert ids[0] == "10"
    assert {"9", "5"} <= set(ids)
    assert ids.index("10") < ids.index("11")


def test_an_assert_keeps_its_own_line_first() -> None:
    code = "def test_a():\n    x = 2\n    y = x * 3\n    assert y == 7\n"
    log = _tb("t.py", [(4, "test_a", "assert y == 7")], "AssertionError: assert 6 == 7")
    ranked = _lines(_analyze(code, log))
    assert ranked[0].element.id == "4"
    assert "3" in [s.element.id for s in ranked[:3]]


FORMATTED_COMMAND = """def build(host, unit):
    unit_arg = ""
    if unit:
        unit_arg = f"--unit {unit}"
    host.shell(f"configure timer settings {unit_arg} --apply now")
"""


def test_an_empty_hole_in_a_printed_command_points_at_the_literal_and_its_condition() -> None:
    log = "2024-01-01 10:00:00 ERROR cmd = configure timer settings --apply now\n"
    log += _tb(
        "t.py",
        [(5, "build", 'host.shell(f"configure timer settings {unit_arg} --apply now")')],
        "RuntimeError: rc=2",
    )
    ranked = _lines(_analyze(FORMATTED_COMMAND, log), k=5)
    by_id = {s.element.id: s for s in ranked}
    assert "2" in by_id and Channel.VALUE in _channels(by_id["2"])
    assert "3" in by_id and Channel.VALUE in _channels(by_id["3"])


def test_a_named_value_in_the_log_points_at_the_default_that_bound_it() -> None:
    code = 'def test_a(params):\n    mode = params.get("mode", "legacy")\n    run(mode)\n    check()\n'
    log = "2024-01-01 10:00:00 INFO mode = legacy\n2024-01-01 10:00:01 ERROR Test failed: device refused\n"
    ranked = _lines(_analyze(code, log))
    line2 = next(s for s in ranked if s.element.id == "2")
    value = next(e for e in line2.evidence if e.channel == Channel.VALUE)
    assert value.source_line == 1


def test_unset_attribute_points_at_the_branch_that_sets_it() -> None:
    code = (
        "class T:\n    def setUp(self):\n        if self.kind == 'a':\n            self.dev = 'x'\n"
        "        self.size = 4\n\n    def test(self):\n        print(self.size)\n        use(self.dev)\n"
    )
    log = "(1/1) t.py:T.test: ERROR: 'T' object has no attribute 'dev' (1.0 s)\n"
    ranked = _lines(_analyze(code, log))
    top = [s.element.id for s in ranked[:2]]
    assert set(top) == {"3", "4"}
    assert Channel.EXCEPTION in _channels(ranked[0])


def test_an_attribute_set_nowhere_blames_its_read() -> None:
    code = (
        "class T:\n    def setUp(self):\n        self.package = 'a'\n"
        "\n    def test(self):\n        run(self.pakage)\n"
    )
    log = "ERROR: 'T' object has no attribute 'pakage'\n"
    ranked = _lines(_analyze(code, log))
    assert ranked[0].element.id == "6"


def test_index_error_suspects_indexing_and_length_checks() -> None:
    code = (
        "def test_a(out):\n    lines = out.split()\n    n = len(lines)\n"
        "    log(n)\n    first = lines[3]\n    use(first)\n"
    )
    log = _tb("t.py", [(6, "test_a", "use(first)")], "IndexError: list index out of range")
    ranked = _lines(_analyze(code, log), k=6)
    exception = {s.element.id for s in ranked if Channel.EXCEPTION in _channels(s)}
    assert {"3", "5"} <= exception
    assert "4" not in exception


def test_smells_are_flagged() -> None:
    code = (
        "def test_a(x, y):\n    if x is []:\n        return\n    if y == 'None':\n        return\n"
        "    if 'ppc|arm' in y:\n        return\n    if 'ppc' in y:\n        return\n    assert x\n"
    )
    facts = build_facts(_analyze(code, "").program)
    assert [s for s in facts.smells.values() if s] == [
        ("`is` compares identity with the literal []",),
        ("compares with the string 'None', not the constant",),
        ("`in` tests the literal text 'ppc|arm', not a pattern or alternatives",),
    ]
    mixed = "def test_b(out):\n    if len(out) == '0':\n        return\n    assert int(out) > 0\n"
    smells = build_facts(_analyze(mixed, "").program).smells
    assert [s for s in smells.values() if s] == [
        ("compares a number with a string: never equal, ordering fails",)
    ]


def test_without_a_script_frame_a_library_frame_names_the_call_site() -> None:
    code = "def test_a(vm):\n    vm.start()\n    vm.attach_disk('/dev/sdb')\n    vm.stop()\n"
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/virt/vm.py", line 120, in attach_disk\n    self._attach(path)\n'
        "virt.VMError: attach failed\n"
    )
    ranked = _lines(_analyze(code, log))
    assert ranked[0].element.id == "3"
    assert Channel.PSEUDO_ERROR in _channels(ranked[0])


def test_without_a_frame_the_message_shape_names_the_assert_method() -> None:
    code = (
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertTrue(ready())\n        self.assertEqual(size(), 3)\n"
    )
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/unittest/case.py", line 870, in _baseAssertEqual\n'
        "    raise self.failureException(msg)\n"
        "AssertionError: 4 != 3\n"
    )
    ranked = _lines(_analyze(code, log))
    assert ranked[0].element.id == "7"


def test_with_no_evidence_at_all_the_ranking_is_a_guess_that_prefers_checks() -> None:
    code = (
        "import os\n\nX = 1\n\n\ndef helper():\n    return 2\n\n\n"
        "def test_a():\n    y = helper()\n    assert y == 3\n"
    )
    ranked = _lines(_analyze(code, "nothing useful here\n"), k=3)
    assert ranked[0].element.id == "12"
    assert not any(s.has_evidence for s in ranked)


def test_disabled_channels_leave_no_evidence_of_their_kind() -> None:
    log = _tb(
        "t.py",
        [(10, "test_kernel", 'self.fail("unsupported kernel %s" % version)')],
        "TestFail: unsupported kernel 6.1",
    )
    analysis = _analyze(GUARDED_FAIL, log)
    ranked = _lines(analysis, k=10, disabled={"check", "traceback"})
    channels = {e.channel for s in ranked for e in s.evidence}
    assert Channel.CHECK not in channels and Channel.TRACEBACK not in channels
    assert channels


def test_stacktrace_baseline_orders_frames_innermost_first() -> None:
    code = "def inner():\n    raise ValueError('x')\n\n\ndef test_a():\n    prepare()\n    inner()\n"
    log = _tb("t.py", [(7, "test_a", "inner()"), (2, "inner", "raise ValueError('x')")], "ValueError: x")
    analysis = _analyze(code, log)
    ranked = rank_stacktrace(analysis, render(analysis, "T0", "line"), 3)
    assert [s.element.id for s in ranked[:2]] == ["2", "7"]
    assert ranked[0].evidence[0].channel == Channel.TRACEBACK
    assert ranked[0].evidence[0].source_line == 4  # the innermost frame's line in the log


def test_tokenizing_is_linear_on_one_long_line() -> None:
    text = "a." * 40000
    started = time.perf_counter()
    query_tokens(text)
    code_tokens(text)
    elapsed = time.perf_counter() - started
    print(f"tokenizing 80,000 characters: {elapsed * 1000:.1f} ms")
    assert query_tokens("tempest.lib.exceptions.NotFound: Object not found") == [
        "tempest",
        "lib",
        "exceptions",
        "found",
        "found",
    ]


def test_deeply_nested_scripts_rank_without_recursion_errors() -> None:
    depth = 400
    expression = "f(" * depth + "1" + ")" * depth
    code = f"def test_a():\n    x = {expression}\n    assert x\n"
    log = _tb("t.py", [(3, "test_a", "assert x")], "AssertionError")
    ranked = _lines(_analyze(code, log))
    assert ranked[0].element.id == "3"


UNBOUND = """def test_a(flag):
    if flag:
        name = "x"
    print("start")
    use(name)
"""


def test_unbound_local_ranks_the_conditional_definition_above_the_use() -> None:
    log = _tb(
        "t.py",
        [(5, "test_a", "use(name)")],
        "UnboundLocalError: local variable 'name' referenced before assignment",
    )
    ranked = _lines(_analyze(UNBOUND, log))
    ids = [s.element.id for s in ranked]
    assert ids.index("3") < ids.index("5")
    assert "2" in ids[:3]


NONE_GUARD = """class T:
    def run(self):
        try:
            if self.remote:
                self.session = self.connect()
            self.work()
        finally:
            if self.remote:
                self.session.close()
"""


def test_none_attribute_suspects_the_guard_that_let_none_through() -> None:
    log = _tb(
        "t.py",
        [(9, "run", "self.session.close()")],
        "AttributeError: 'NoneType' object has no attribute 'close'",
    )
    ranked = _lines(_analyze(NONE_GUARD, log))
    ids = [s.element.id for s in ranked]
    assert "8" in ids[:2]  # the crash line shares the error's words; the guard stays beside it
    assert "5" in ids[:4]


def test_a_frame_with_a_stale_line_number_is_realigned_by_its_text() -> None:
    code = "def test_a(env):\n    vm = env.get_vm('main')\n    # a comment added later\n    vm.create()\n"
    log = _tb("t.py", [(2, "test_a", "vm.create()")], "RuntimeError: boom")
    ranked = _lines(_analyze(code, log))
    assert ranked[0].element.id == "4"


FIXTURE = """import pytest


@pytest.fixture
def host(request):
    hosts = request.getfixturevalue("hosts")
    chosen = hosts[0]
    yield chosen


def test_a(host):
    value = host.inner.options
    assert value
"""


def test_a_fixture_parameter_is_followed_into_the_fixture() -> None:
    log = _tb("t.py", [(12, "test_a", "value = host.inner.options")], "KeyError: 'options'")
    ranked = _lines(_analyze(FIXTURE, log), k=6)
    by_id = {s.element.id: s for s in ranked}
    assert "8" in by_id and "7" in by_id
    assert any("fixture host()" in e.detail for e in by_id["8"].evidence if e.channel == Channel.DATA)


def test_a_local_variables_dump_with_padding_is_read() -> None:
    code = 'def test_a(params):\n    vlan = params.get("vlan", "1000")\n    run(vlan)\n    check()\n'
    log = "vlan       = '1000'\nparams     = {}\nE   AssertionError: no traffic\n"
    ranked = _lines(_analyze(code, log))
    line2 = next(s for s in ranked if s.element.id == "2")
    assert Channel.VALUE in _channels(line2)


def test_a_view_that_is_not_subscriptable_points_at_its_producer() -> None:
    code = (
        "def test_a(table):\n    names = table.keys()\n    count = 3\n    first = names[0]\n    use(first)\n"
    )
    log = _tb(
        "t.py", [(4, "test_a", "first = names[0]")], "TypeError: 'dict_keys' object is not subscriptable"
    )
    ranked = _lines(_analyze(code, log))
    line2 = next(s for s in ranked if s.element.id == "2")
    assert Channel.EXCEPTION in _channels(line2)
    assert "3" not in [s.element.id for s in ranked[:2]]


def test_a_frame_naming_the_script_under_another_directory_locates_the_failure() -> None:
    code = "class T:\n    def setUp(self):\n        name = self.get_data('x')\n        path = resolve(name)\n"
    log = (
        "Traceback (most recent call last):\n"
        '  File "other/place/t.py", line 4, in setUp\n'
        '  File "/usr/lib/python3/posixpath.py", line 375, in abspath\n    path = os.fspath(path)\n'
        "TypeError: expected str, bytes or os.PathLike object, not NoneType\n"
    )
    analysis = analyze([Script("tests/t.py", code)], log)
    ranked = rank_heuristic(analysis, render(analysis, "T0", "line"), 3)
    by_id = {s.element.id: s for s in ranked}
    assert {s.element.id for s in ranked[:2]} == {"3", "4"}  # the failing line, and where None came from
    assert _channels(by_id["4"]) & {Channel.PSEUDO_ERROR, Channel.TRACEBACK}
    assert "3" in by_id  # the value that was None was bound there


HANDLED = """def test_a(host):
    host.prepare()
    try:
        host.run("mount /dev/sdb /mnt")
    except OSError:
        raise TestFail("mount failed")
    host.cleanup()
"""


def test_a_check_in_an_exception_handler_points_at_the_call_it_caught() -> None:
    log = _tb("t.py", [(6, "test_a", 'raise TestFail("mount failed")')], "TestFail: mount failed")
    ranked = _lines(_analyze(HANDLED, log))
    ids = [s.element.id for s in ranked]
    assert ids.index("4") < ids.index("6")
    assert Channel.CHECK in _channels(ranked[ids.index("4")])


CLEANUP = """class T:
    def setUp(self):
        \"\"\"Prepare the device.\"\"\"
        self.dev = find()
        if not self.dev:
            self.cancel("no device")
        self.mapped = map_device(self.dev)

    def tearDown(self):
        if self.mapped:
            unmap(self.mapped)
"""


def test_cleanup_reading_an_attribute_an_early_exit_skipped_points_at_the_initializer() -> None:
    log = _tb(
        "t.py", [(10, "tearDown", "if self.mapped:")], "AttributeError: 'T' object has no attribute 'mapped'"
    )
    ranked = _lines(_analyze(CLEANUP, log))
    ids = [s.element.id for s in ranked]
    assert ids[0] in {"4", "7"}  # setUp, where the attribute belongs: its first statement or the setter
    assert "3" not in ids[:3]
    assert ids.index("4") < ids.index("10")


def test_cleanup_of_a_subclass_points_at_the_initializer_it_inherits() -> None:
    code = CLEANUP.replace("    def tearDown(self):", "\nclass Leaf(T):\n    def tearDown(self):")
    error = "AttributeError: 'Leaf' object has no attribute 'mapped'"
    log = _tb("t.py", [(11, "tearDown", "if self.mapped:")], error)
    ranked = _lines(_analyze(code, log))
    assert any("start of setUp" in s.reason for s in ranked if s.element.id == "4")


CHAINED = """class T:
    def setUp(self):
        kind = self.params.get("kind")
        if kind == "loop":
            self.dev = "/dev/loop0"
        elif kind == "nvdimm":
            self.dev = "/dev/pmem0"
            self.log_dev = "/dev/pmem1"

    def test(self):
        run(self.log_dev)
"""


def test_an_attribute_set_in_one_branch_of_a_chain_points_at_the_chain() -> None:
    log = "ERROR: 'T' object has no attribute 'log_dev'\n"
    ranked = _lines(_analyze(CHAINED, log))
    top = {s.element.id for s in ranked[:3]}
    assert {"4", "6"} <= top


def test_division_by_zero_suspects_zero_and_empty_values() -> None:
    code = (
        "def collect():\n    return set()\n\n\n"
        "def test_a():\n    items = collect()\n    n = 4\n    mean = n / len(items)\n"
    )
    log = _tb("t.py", [(8, "test_a", "mean = n / len(items)")], "ZeroDivisionError: division by zero")
    ranked = _lines(_analyze(code, log))
    exception = {s.element.id for s in ranked if Channel.EXCEPTION in _channels(s)}
    assert {"2", "8"} <= exception
    assert "7" not in exception
    assert ranked[0].element.id == "8"


def test_a_key_error_points_at_the_statements_using_that_key() -> None:
    code = (
        "def test_a(facts):\n    ports = facts['ports']\n    speed = facts['speed']\n"
        "    names = {'eth0': 1}\n    use(ports, speed, names)\n"
    )
    log = _tb("t.py", [(5, "test_a", "use(ports, speed, names)")], "KeyError: 'speed'")
    ranked = _lines(_analyze(code, log))
    line3 = next(s for s in ranked if s.element.id == "3")
    assert any(e.channel == Channel.EXCEPTION and "'speed'" in e.detail for e in line3.evidence)
    assert ranked[0].element.id in {"3", "5"}


def test_a_failing_check_helper_is_a_check_on_its_arguments() -> None:
    code = (
        "def test_a(vm):\n    status = vm.run('start')\n    expected = 1\n"
        "    check_exit_status(status, expected)\n"
    )
    log = _tb(
        "t.py", [(4, "test_a", "check_exit_status(status, expected)")], "TestFail: exit status 0, expected 1"
    )
    ranked = _lines(_analyze(code, log))
    checked = {s.element.id for s in ranked if Channel.CHECK in _channels(s)}
    assert {"2", "3"} <= checked
    assert ranked[0].element.id == "4"


def test_pytest_source_lines_locate_the_failure_without_a_frame() -> None:
    code = (
        "def test_a(dut):\n    ports = dut.ports()\n    assert ports\n"
        "    up = [p for p in ports if p.up]\n    assert len(up) == len(ports)\n"
    )
    log = (
        "    def test_a(dut):\n"
        "        ports = dut.ports()\n"
        "        assert ports\n"
        "        up = [p for p in ports if p.up]\n"
        ">       assert len(up) == len(ports)\n"
        "E       assert 3 == 4\n"
    )
    ranked = _lines(_analyze(code, log, path="suite/test_ports.py"))
    assert ranked[0].element.id == "5"  # the assert with the reported comparison, not the other one
    assert _channels(ranked[0]) & {Channel.PSEUDO_ERROR, Channel.TRACEBACK}


def test_an_attribute_set_only_in_a_loop_points_at_the_start_of_the_inherited_set_up() -> None:
    code = (
        "class Base:\n"
        "    def setUp(self):\n"
        "        self.client = connect()\n"
        "        for img in self.client.images():\n"
        "            if img == 'tools':\n"
        "                self.image_ref = img\n"
        "\n"
        "    def boot(self):\n"
        "        return start(self.image_ref)\n"
        "\n\n"
        "class TestNFS(Base):\n"
        "    def test_boot(self):\n"
        "        self.boot()\n"
    )
    log = "(1/1) t.py:TestNFS.test_boot: ERROR: 'TestNFS' object has no attribute 'image_ref' (1.0 s)\n"
    ranked = _lines(_analyze(code, log), k=8)
    reasons = {s.element.id: s.reason for s in ranked}
    assert "start of setUp: `image_ref` set here first would always exist" in reasons["3"]
    assert {"5", "6"} <= set(reasons)  # the condition and the setter stay suspects


def test_an_unconditional_setter_does_not_blame_the_start_of_set_up() -> None:
    code = (
        "class Base:\n"
        "    def setUp(self):\n"
        "        self.client = connect()\n"
        "        self.image_ref = self.client.image()\n"
        "\n\n"
        "class TestNFS(Base):\n"
        "    def test_boot(self):\n"
        "        start(self.image_ref)\n"
    )
    log = "(1/1) t.py:TestNFS.test_boot: ERROR: 'TestNFS' object has no attribute 'image_ref' (1.0 s)\n"
    ranked = _lines(_analyze(code, log), k=8)
    assert not any("set here first" in s.reason for s in ranked)


def test_class_bases_follow_the_scripts_class_headers() -> None:
    code = (
        "import unittest\n\n\n"
        "class Base(unittest.TestCase, metaclass=Meta):\n    pass\n\n\n"
        "class Mixin:\n    pass\n\n\n"
        "class Leaf(\n    Base,\n    Mixin,\n):\n    pass\n"
    )
    analysis = _analyze(code, "")
    ctx = Context.build(analysis, "T0")
    assert ctx.class_bases == {"Base": {"TestCase"}, "Mixin": set(), "Leaf": {"Base", "Mixin"}}
    assert ctx.ancestors({"Leaf"}) == {"Leaf", "Base", "Mixin", "TestCase"}
    assert ctx.ancestors({"Unknown"}) == {"Unknown"}
