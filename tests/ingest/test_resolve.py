"""Finding a test's scripts in a checkout: suffix matching, ambiguity warnings, local helper imports."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ingest.base import TestRun
from app.ingest.resolve import Checkout, find_scripts, id_paths, imports


def _tree(root: Path, files: dict[str, str]) -> Checkout:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return Checkout.scan(root)


def _paths(run: TestRun, checkout: Checkout) -> tuple[list[str], list[str]]:
    scripts, warnings = find_scripts(run, checkout)
    return [s.path for s in scripts], warnings


def test_absolute_path_of_another_machine_matches_by_suffix(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, {"suite/net/test_a.py": "x = 1\n", "other/test_b.py": "y = 2\n"})
    frame = '  File "/home/ci/build/suite/net/test_a.py", line 1, in <module>'
    log = f"Traceback (most recent call last):\n{frame}\nE: x\n"
    run = TestRun("t", "fail", log=log)
    assert _paths(run, checkout) == (["suite/net/test_a.py"], [])


def test_ambiguity_names_both_files(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, {"a/test_x.py": "", "b/test_x.py": ""})
    paths, warnings = _paths(TestRun("test_x.py::test_one", "fail", log="E"), checkout)
    assert paths == ["a/test_x.py"]
    assert len(warnings) == 1 and "a/test_x.py" in warnings[0] and "b/test_x.py" in warnings[0]


def test_a_same_named_file_elsewhere_is_a_warning(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, {"suite/a/test_x.py": "", "legacy/test_x.py": ""})
    paths, warnings = _paths(TestRun("t", "fail", log="E", script_paths=("suite/a/test_x.py",)), checkout)
    assert paths == ["suite/a/test_x.py"]
    assert len(warnings) == 1 and "legacy/test_x.py" in warnings[0] and "suite/a/test_x.py" in warnings[0]


def test_dotted_ids_find_their_module(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/test_mod.py": ""})
    assert _paths(TestRun("pkg.test_mod.Case.test_a", "fail", log="E"), checkout)[0] == ["pkg/test_mod.py"]
    assert _paths(TestRun("pkg/test_mod.py:Case.test_a;v1", "fail", log="E"), checkout)[0] == [
        "pkg/test_mod.py"
    ]


def test_local_helpers_are_added_and_installed_packages_are_not(tmp_path: Path) -> None:
    checkout = _tree(
        tmp_path,
        {
            "tests/test_net.py": (
                "import os\nfrom common.links import up\nfrom . import local\nimport requests\n"
            ),
            "tests/local.py": "from common import util\n",
            "tests/__init__.py": "",
            "common/__init__.py": "",
            "common/links.py": "def up(): pass\n",
            "common/util.py": "",
            "unrelated.py": "",
        },
    )
    paths, _ = _paths(TestRun("tests/test_net.py::test_up", "fail", log="E"), checkout)
    assert paths[0] == "tests/test_net.py"
    assert set(paths[1:]) == {"common/links.py", "tests/local.py", "common/util.py", "common/__init__.py"}


def test_standard_library_frames_are_not_taken(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, {"test_a.py": "", "case.py": ""})
    import unittest

    real = Path(unittest.__file__).with_name("case.py")
    frames = f'  File "{real}", line 1, in f\n  File "/ci/test_a.py", line 1'
    log = f"Traceback (most recent call last):\n{frames}\nE: x\n"
    assert _paths(TestRun("t", "fail", log=log), checkout)[0] == ["test_a.py"]


def test_nothing_found_is_empty(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, {"x.py": ""})
    assert _paths(TestRun("test_other.py::t", "fail", log="E"), checkout) == ([], [])


def test_imports_survive_syntax_errors() -> None:
    assert ("a.b", 0) in imports("from a.b import c\ndef broken(:\n")
    assert ("x", 1) in imports("from .x import y\n")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_id_paths_are_python_files(test_id: str) -> None:
    assert all(p.endswith(".py") for p in id_paths(test_id))


CONFTEST_FIXTURES = {
    "conftest.py": (
        "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef clean_env():\n    yield\n\n\n"
        "@pytest.fixture\ndef unused():\n    return 0\n"
    ),
    "suite/conftest.py": (
        "import pytest\n\n\n@pytest.fixture\ndef lab():\n    return {'ports': 48}\n\n\n"
        "@pytest.fixture(name='expected_ports')\ndef _ports(lab):\n    return {'uplink': 4}\n"
    ),
    "suite/net/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef vlan():\n    return 100\n",
    "other/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef expected_ports():\n    return {}\n",
    "suite/net/test_ports.py": (
        "import pytest\n\n\ndef test_ports(expected_ports):\n    assert expected_ports\n\n\n"
        "def test_vlan(vlan):\n    assert vlan\n\n\n@pytest.mark.usefixtures('vlan')\nclass TestMarked:\n"
        "    def test_marked(self):\n        assert True\n"
    ),
}


def test_conftests_up_to_the_root_that_define_a_used_fixture_are_scripts(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, CONFTEST_FIXTURES)
    # expected_ports (renamed by name=) and the lab fixture it requests: suite/conftest.py; the
    # autouse fixture: the root's; the nearest conftest defines nothing test_ports uses.
    paths, _ = _paths(TestRun("suite/net/test_ports.py::test_ports", "fail", log="E"), checkout)
    assert paths == ["suite/net/test_ports.py", "suite/conftest.py", "conftest.py"]
    paths, _ = _paths(TestRun("suite/net/test_ports.py::test_vlan", "fail", log="E"), checkout)
    assert paths == ["suite/net/test_ports.py", "suite/net/conftest.py", "conftest.py"]
    paths, _ = _paths(TestRun("suite/net/test_ports.py::TestMarked::test_marked", "fail", log="E"), checkout)
    assert paths == ["suite/net/test_ports.py", "suite/net/conftest.py", "conftest.py"]
    # the conftest.py files around a test file are looked up once for all its tests
    assert checkout._nearby == {
        "suite/net/test_ports.py": ["suite/net/conftest.py", "suite/conftest.py", "conftest.py"]
    }


def test_conftests_are_not_read_above_the_checkout_root(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture\ndef host():\n    return 1\n")
    checkout = _tree(
        tmp_path / "repo",
        {
            "test_a.py": "def test_a(host):\n    assert host\n",
            "sub/conftest.py": CONFTEST_FIXTURES["conftest.py"],
        },
    )
    assert _paths(TestRun("test_a.py::test_a", "fail", log="E"), checkout)[0] == ["test_a.py"]


def test_a_checkout_reads_each_file_once_per_job(tmp_path: Path) -> None:
    checkout = _tree(
        tmp_path,
        {
            "tests/test_a.py": "from helpers import net\n\n\ndef test_one(dut):\n    assert net.up(dut)\n\n\n"
            "def test_two(dut):\n    assert dut\n",
            "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef dut():\n    return 1\n",
            "tests/helpers/__init__.py": "",
            "tests/helpers/net.py": "def up(dut):\n    return dut\n",
        },
    )
    first = _paths(TestRun("tests/test_a.py::test_one", "fail", log="E"), checkout)
    assert first[0] == [
        "tests/test_a.py",
        "tests/conftest.py",
        "tests/helpers/__init__.py",
        "tests/helpers/net.py",
    ]
    (tmp_path / "tests" / "helpers" / "net.py").write_text("changed = True\n")
    scripts, _ = find_scripts(TestRun("tests/test_a.py::test_two", "fail", log="E"), checkout)
    assert [s.path for s in scripts] == first[0]
    assert scripts[-1].content == "def up(dut):\n    return dut\n"  # the job's files as first read
    again, _ = find_scripts(TestRun("tests/test_a.py::test_two", "fail", log="E"), Checkout.scan(tmp_path))
    assert again[-1].content == "changed = True\n"  # a new job reads the checkout anew


def test_frames_the_caller_parsed_find_what_the_log_gives(tmp_path: Path) -> None:
    from app.analysis.logparse import parse_log

    checkout = _tree(tmp_path, {"suite/test_a.py": "x = 1\n", "suite/lib/ports.py": "y = 2\n"})
    log = (
        'Traceback (most recent call last):\n  File "/ci/suite/test_a.py", line 1, in <module>\n'
        '  File "/ci/suite/lib/ports.py", line 1, in <module>\nKeyError: 1\n'
    )
    run = TestRun("t", "fail", log=log)
    given = find_scripts(run, checkout, frames=parse_log(log).frames)
    assert given == find_scripts(run, Checkout.scan(tmp_path))
    assert [s.path for s in given[0]] == ["suite/test_a.py", "suite/lib/ports.py"]
    assert find_scripts(run, checkout, frames=())[0] == []  # the frames given are the ones read


def test_a_tests_scripts_come_in_one_order_whatever_its_traceback_names(tmp_path: Path) -> None:
    files = {
        **CONFTEST_FIXTURES,
        "suite/net/test_ports.py": "from lib import ports, util\n\n\ndef test_ports(lab):\n    ports.up()\n",
        "lib/__init__.py": "",
        "lib/ports.py": "def up():\n    raise KeyError('speed')\n",
        "lib/util.py": "x = 1\n",
        "tools/runner.py": "from lib import util\n\n\ndef main():\n    pass\n",
    }
    checkout = _tree(tmp_path, files)
    test_id = "suite/net/test_ports.py::test_ports"
    crash = (
        'Traceback (most recent call last):\n  File "/ci/tools/runner.py", line 5, in main\n'
        '  File "/ci/suite/net/test_ports.py", line 5, in test_ports\n'
        "  File \"/ci/lib/ports.py\", line 2, in up\nKeyError: 'speed'\n"
    )
    plain, _ = _paths(TestRun(test_id, "fail", log="AssertionError: 1 != 2"), checkout)
    named, _ = _paths(TestRun(test_id, "fail", log=crash), checkout)
    own = ["suite/net/test_ports.py", "suite/conftest.py", "conftest.py", "lib/__init__.py", "lib/ports.py"]
    assert plain == [*own, "lib/util.py"]
    assert named == [*plain, "tools/runner.py"]  # a file only the traceback names comes after
    scripts, warnings = find_scripts(TestRun(test_id, "fail", log=crash), checkout, max_files=3)
    # over max_files the test file and the traceback's files are kept first, then ordered alike
    assert [s.path for s in scripts] == ["suite/net/test_ports.py", "lib/ports.py", "tools/runner.py"]
    assert any("kept the first 3" in w for w in warnings)


def test_a_content_is_built_once_when_threads_ask_for_it_together() -> None:
    """A CI job finds several tests' scripts at once: the first tests of a module must not each
    parse it; the threads that ask while it is built get that build's value."""
    import threading
    import time

    from app.ingest.resolve import _ByContent

    cache = _ByContent(4)
    built: list[str] = []
    started = threading.Event()

    def build(content: str) -> str:
        built.append(content)
        started.set()
        time.sleep(0.05)  # long enough for the other threads to ask meanwhile
        return content.upper()

    answers: list[str] = []
    first = threading.Thread(target=lambda: answers.append(cache.get("x = 1\n", build)))
    first.start()
    started.wait()
    others = [threading.Thread(target=lambda: answers.append(cache.get("x = 1\n", build))) for _ in range(3)]
    for thread in others:
        thread.start()
    for thread in [first, *others]:
        thread.join()
    assert built == ["x = 1\n"]
    assert answers == ["X = 1\n"] * 4


def test_a_failed_build_leaves_the_content_to_the_next_asker() -> None:
    from app.ingest.resolve import _ByContent

    cache = _ByContent(4)

    def broken(content: str) -> str:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        cache.get("y = 2\n", broken)
    assert cache.get("y = 2\n", str.upper) == "Y = 2\n"
