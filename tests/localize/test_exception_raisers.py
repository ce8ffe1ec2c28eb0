"""The exception channel points at what can raise the reported error, not at every statement of a kind.

Small scripts written for these tests, through the real pipeline; each shows one property of
Python: which construct raises which error, and which call a TypeError is about.
"""

from __future__ import annotations

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.localize.channels import Context, Scores
from app.localize.channels.exceptions import exception_scores


def _scores(
    code: str, error: str, frame: tuple[int, str] | None = None, *, framed: bool = False
) -> dict[int, float]:
    """Exception evidence per source line, for a failure at ``frame`` (line, function) or without one;
    ``framed``: the channel is told the frame is a traceback's (not an inferred site)."""
    log = (
        f'Traceback (most recent call last):\n  File "t.py", line {frame[0]}, in {frame[1]}\n    x\n{error}\n'
        if frame is not None
        else f"starting\n{error}\n"
    )
    analysis = analyze([Script("t.py", code)], log)
    ctx = Context.build(analysis, "T0")
    site = ctx.sid_at("t.py", frame[0]) if frame is not None else None
    scores: Scores = exception_scores(ctx, site, framed=framed)
    return {ctx.statements[sid].start_line: signal.value for sid, signal in scores.items()}


UNPACK = """def parse(line):
    name, value = line.split("=")
    a, b, c = line.partition(":")
    return name


def test_parse():
    parse("x")
"""


def test_the_unpacking_into_as_many_targets_as_expected_is_first() -> None:
    lines = _scores(UNPACK, "ValueError: not enough values to unpack (expected 2, got 1)", (8, "test_parse"))
    assert lines[2] == 1.0
    assert lines.get(3, 0) < lines[2]


KEYS = """def test_keys(data):
    host = data.get("host")
    port = data["port"]
    user = data["user"]
"""


def test_the_subscript_reading_the_missing_key_counts_more_than_a_get() -> None:
    lines = _scores(KEYS, "KeyError: 'host'", (3, "test_keys"))
    assert lines.get(2, 0) < 1.0
    lines = _scores(KEYS, "KeyError: 'port'", (3, "test_keys"))
    assert lines[3] == 1.0
    assert lines.get(4, 0) < lines[3]


NONE_ATTRIBUTE = """def run(cmd):
    result = find(cmd)
    print(result.stdout)
    print(cmd.upper())


def test_run():
    run("ls")
"""


def test_a_none_value_s_missing_attribute_points_at_its_read() -> None:
    lines = _scores(NONE_ATTRIBUTE, "AttributeError: 'NoneType' object has no attribute 'stdout'")
    assert lines[3] > lines.get(4, 0)


MISSING_FILE = """import json


def load():
    with open("upgrade_workers.json") as f:
        return json.load(f)


def other():
    with open("settings.cfg") as f:
        return f.read()


def test_load():
    load()
    other()
"""


def test_the_statement_naming_the_missing_file_is_first() -> None:
    lines = _scores(
        MISSING_FILE, "FileNotFoundError: [Errno 2] No such file or directory: 'upgrade_workers.json'"
    )
    assert lines[5] == 1.0
    assert lines.get(10, 0) < lines[5]


CALLS = """class Helper:
    def run(self, cmd, timeout=10):
        return cmd


def test_calls():
    h = Helper()
    h.run("ls")
    h.run("ls", 5, 6)
    h.run("ls", retries=2)
"""


def test_the_call_that_cannot_fit_the_def_is_singled_out() -> None:
    too_many = "TypeError: Helper.run() takes from 2 to 3 positional arguments but 4 were given"
    lines = _scores(CALLS, too_many, (9, "test_calls"))
    assert lines[9] == 1.0
    assert lines[8] < 1.0 and lines[10] < 1.0
    lines = _scores(
        CALLS, "TypeError: run() got an unexpected keyword argument 'retries'", (10, "test_calls")
    )
    assert lines[10] == 1.0
    assert lines[8] < 1.0 and lines[9] < 1.0
    assert 3 in lines  # the def: it may lack the parameter


LIBRARY_CALL = """def test_remote(remote):
    remote.run(args=["ls"])
    remote.run(["rpm", "-q"])
"""


def test_a_library_call_is_singled_out_by_the_count_the_message_gives() -> None:
    # a method's count includes self: ``(2 given)`` is one argument passed through the object
    lines = _scores(LIBRARY_CALL, "TypeError: run() takes exactly 1 argument (2 given)")
    assert lines[2] < lines[3] == 1.0


INDEX = """def first(items):
    total = len(items)
    return items[0]


def test_first():
    print("checking")
    first([])
"""


def test_an_index_error_points_at_the_subscript() -> None:
    lines = _scores(INDEX, "IndexError: list index out of range")
    assert lines[3] > lines.get(2, 0)


OPERATOR = """def merge(login, extra):
    total = len(login) + len(extra)
    options = login | extra
    return options, total


def test_merge():
    merge(None, {})
"""


def test_an_operand_error_points_at_the_operator_it_names() -> None:
    lines = _scores(OPERATOR, "TypeError: unsupported operand type(s) for |: 'NoneType' and 'dict'")
    assert lines[3] > lines.get(2, 0)
    lines = _scores(OPERATOR, "TypeError: unsupported operand type(s) for +: 'int' and 'str'")
    assert lines[2] > lines.get(3, 0)


VIEWS = """def first_task(config):
    names = config.keys()
    first = config.keys()[0]
    return names, first


def test_tasks():
    first_task({"a": 1})
"""


def test_a_view_that_cannot_be_indexed_points_at_where_it_is_indexed() -> None:
    lines = _scores(VIEWS, "TypeError: 'dict_keys' object is not subscriptable")
    assert lines[3] == 1.0
    assert lines.get(2, 0) < lines[3]


NONE_RESULT = """def setup(params, node):
    zones = params.get("zones").split(",")
    name = node.name.split(".")
    return zones, name


def test_setup():
    setup({}, None)
"""


def test_an_attribute_of_a_call_s_result_that_was_none_comes_first() -> None:
    lines = _scores(NONE_RESULT, "AttributeError: 'NoneType' object has no attribute 'split'")
    assert lines[2] == 1.0
    assert lines[3] < lines[2]


FEWEST = """def report(log, error):
    log.debug("starting %s", error)
    log.debug("details: %s %s", error, 1)
    log.debug(exc_info=True)
"""


def test_without_a_def_a_missing_argument_points_at_the_call_passing_fewest() -> None:
    lines = _scores(FEWEST, "TypeError: LoggerAdapter.debug() missing 1 required positional argument: 'msg'")
    assert lines[4] == 1.0
    assert lines[2] < 1.0 and lines[3] < 1.0


SCOPES = """import ssl


def configure(node):
    node.setup()


def upload(files):
    node.send(files)
    return files


def check(nodes):
    for node in nodes:
        print(node)
"""


def test_an_undefined_name_points_at_its_use_where_no_enclosing_scope_defines_it() -> None:
    lines = _scores(SCOPES, "NameError: global name 'node' is not defined")
    assert lines[9] == 1.0
    assert lines.get(5, 0) < 1.0


NONE_VALUES = """def hosts(config):
    names = config["hosts"]
    first = lookup(names)[0]
    for host in find_all(names):
        print(host)
    return first
"""


def test_a_none_value_indexed_or_iterated_points_at_a_call_s_result_first() -> None:
    lines = _scores(NONE_VALUES, "TypeError: 'NoneType' object is not subscriptable")
    assert lines[3] == 1.0
    assert lines.get(2, 0) < 1.0
    lines = _scores(NONE_VALUES, "TypeError: 'NoneType' object is not iterable")
    assert lines[4] == 1.0
    assert lines.get(3, 0) < 1.0


FRAMED = """def parse(lines):
    total = int(lines[0])
    count = int(lines[1])
    return total, count


def test_parse():
    first = None
    first.close()
    parse(["1", "x"])
"""


def test_with_a_frame_a_none_value_s_read_is_no_raiser_evidence_the_fault_is_upstream() -> None:
    lines = _scores(
        FRAMED, "AttributeError: 'NoneType' object has no attribute 'close'", (9, "test_parse"), framed=True
    )
    assert lines.get(9, 0) < 0.9
    assert lines[8] > lines.get(9, 0)  # where the None was bound


LOCALS = """def select(backends):
    aws_vms = []
    checks = []
    if "aws" in backends:
        aws_vms = list_aws()
    if "azure" in backends:
        azure_vms = list_azure()
    return aws_vms + checks + azure_vms


def other():
    azure_vms = list_azure()
    return azure_vms


def children(tree):
    for node in tree:
        if node["name"] == "x":
            kids = node["children"]
    return kids
"""


def test_an_unbound_local_points_where_its_function_binds_it_on_some_paths_only() -> None:
    lines = _scores(LOCALS, "UnboundLocalError: local variable 'azure_vms' referenced before assignment")
    assert lines[7] == lines[6] == 0.9  # the binding, and the condition after which it can be unbound
    assert lines[2] == 0.9  # a kindred name's starting value: the fix binds this one there too
    assert lines.get(3, 0) == 0  # `checks` is no kin of `azure_vms`
    assert lines.get(12, 0) < 0.9  # bound on every path to its use there: it cannot raise


def test_an_unbound_local_bound_in_a_loop_points_at_the_loop_and_before_it() -> None:
    lines = _scores(
        LOCALS,
        "UnboundLocalError: cannot access local variable 'kids' where it is not associated with a value",
    )
    assert lines[19] == 0.9
    assert lines[18] == 0.9  # the condition right above it
    assert 0.5 <= lines[17] < 0.9  # the loop at the body's level holding that condition
    assert set(lines) == {17, 18, 19}  # nothing before the loop: the fix goes at the body's start


GLOBALS = """import os


def configure(host):
    node = lookup(host)
    node.setup()


def upload(files):
    node.send(files)
"""


def test_a_name_error_counts_bindings_local_to_other_functions_little() -> None:
    lines = _scores(GLOBALS, "NameError: name 'node' is not defined")
    assert lines[10] == 1.0  # the use no scope binds
    assert lines[5] < 0.5  # a binding no other function sees
    assert lines[1] < 0.5  # bound elsewhere: likelier a wrong name than a missing import
    lines = _scores(GLOBALS, "NameError: name 'shutil' is not defined")
    assert lines[1] > 0.5  # bound nowhere: the import is likely missing


RESIZED = """def reap(clients, done):
    for client in clients.keys():
        if client in done:
            del clients[client]
    for name in list(done):
        done.discard(name)
    for key in clients:
        print(key)
"""


def test_a_container_changed_in_a_loop_over_it_points_at_that_loop() -> None:
    lines = _scores(RESIZED, "RuntimeError: dictionary changed size during iteration")
    assert lines[2] == 1.0  # loops over the dict and deletes from it
    assert lines.get(5, 0) == 0  # loops over a copy
    assert 0 < lines[7] < 1.0  # loops over it directly, changes nothing itself


FORMATS = """def report(zone, status, timeout):
    first = 'Zone %(zone)s failed to reach %(status)s' % {'zone': zone, 'status': status}
    second = ('Record failed to reach status=%(status) within '
              '%(timeout)s s' % {'status': status, 'timeout': timeout})
    third = '{} took {}s'.format(zone, timeout)
    return first, second, third
"""


def test_an_unsupported_format_character_points_at_the_directive_it_ends() -> None:
    lines = _scores(FORMATS, "ValueError: unsupported format character 'w' (0x77) at index 32")
    assert lines[3] == 1.0  # `%(status) w`: a space flag, then 'w'
    assert lines.get(2, 0) < 1.0 and lines.get(5, 0) < 1.0


ONE = """def server_of(results, href):
    first, second = results[:2]
    server, = (r for r in results if r.href == href)
    return server
"""


def test_an_unpacking_into_one_target_is_the_one_that_expected_one() -> None:
    lines = _scores(ONE, "ValueError: not enough values to unpack (expected 1, got 0)")
    assert lines[3] == 1.0
    assert lines[2] < 1.0


FORMAT_CALLS = """def udev_rule(tdir):
    rule = 'PROGRAM="{tdir}/namer %n", SYMLINK+="rbd/%c{1}/%c{2}"'.format(tdir=tdir)
    path = '{tdir}/51-rbd.rules'.format(tdir=tdir)
    note = '{host}:{port}'.format(host='h')
    return rule, path, note


def test_rule():
    udev_rule("/tmp")
"""


def test_the_format_call_indexing_past_its_arguments_raised_the_index_error() -> None:
    for error in (
        "IndexError: tuple index out of range",
        "IndexError: Replacement index 1 out of range for positional args tuple",
    ):
        lines = _scores(FORMAT_CALLS, error)
        assert lines[2] == 1.0
        assert lines.get(3, 0) < 1.0
        assert lines.get(4, 0) < 1.0


def test_the_format_call_missing_the_named_field_raised_the_key_error() -> None:
    lines = _scores(FORMAT_CALLS, "KeyError: 'port'")
    assert lines[4] == 1.0
    assert lines.get(2, 0) < 1.0 and lines.get(3, 0) < 1.0


RAISES = """def find_profile(name):
    if not name:
        raise FileNotFoundError(f"Profile is not found in stress command: '{name}'")
    path = locate(name)
    if path is None:
        raise FileNotFoundError(f"User profile file {name} not found under {ROOT}")
    return path


def test_profile():
    find_profile("x.yaml")
"""


def test_a_raise_whose_text_the_message_lacks_did_not_raise_it() -> None:
    lines = _scores(RAISES, "FileNotFoundError: User profile file x.yaml \\\n  not found under /home/tests")
    assert lines.get(6, 0) > 0
    assert lines.get(3, 0) == 0
    # a message too short to judge by keeps both
    lines = _scores(RAISES, "FileNotFoundError: x")
    assert lines.get(3, 0) > 0 and lines.get(6, 0) > 0


CODECS = """import subprocess


def read_console(cmd):
    total = 0
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, universal_newlines=True)
    for line in proc.stdout:
        total += len(line)
    return total


def test_console():
    read_console(["cat", "/dev/ttyS0"])
"""


def test_a_unicode_error_points_at_the_text_decoding() -> None:
    error = "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xda in position 191: invalid start byte"
    lines = _scores(CODECS, error)
    assert lines[6] > 0
    assert lines.get(5, 0) == 0 and lines.get(8, 0) == 0
