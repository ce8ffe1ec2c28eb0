"""docs/ci.md: its GitHub Actions and GitLab CI jobs' commands, run on the small failing suite."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from markdown_it import MarkdownIt

from tests.ci_tools import BIN, FAILED_TESTS, copy_suite

DOC = Path(__file__).parents[1] / "docs" / "ci.md"
SCHEMA = Path(__file__).parent / "data" / "sarif" / "sarif-schema-2.1.0.json"
INSTALL = re.compile(r"^pip install ")  # the job installs tcfl; here it is installed already


def _jobs() -> tuple[dict, dict]:
    blocks = [
        t.content
        for t in MarkdownIt("commonmark").parse(DOC.read_text())
        if t.type == "fence" and t.info == "yaml"
    ]
    assert len(blocks) == 2, "docs/ci.md shows one GitHub Actions and one GitLab CI job"
    return yaml.safe_load(blocks[0]), yaml.safe_load(blocks[1])


def _run(commands: list[str], cwd: Path, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    done = []
    for command in commands:
        if INSTALL.match(command):
            continue
        done.append(
            subprocess.run(
                ["bash", "-eo", "pipefail", "-c", command],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        )
    return done


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    for name in ("TCFL_MODEL_URL", "TCFL_MODEL"):
        env.pop(name, None)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["TCFL_DATABASE_URL"] = f"sqlite:///{tmp_path / 'tcfl.db'}"
    return env


@pytest.mark.slow
def test_github_actions_job(tmp_path: Path) -> None:
    github, _ = _jobs()
    steps = github["jobs"]["test"]["steps"]
    suite = copy_suite(tmp_path / "repo")
    env = _env(tmp_path)
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "summary.md")
    test_step = next(s for s in steps if s.get("name") == "Run the tests")
    ran = _run([test_step["run"]], suite, env)
    assert ran[0].returncode == 1  # the suite fails by design, so the failure() steps run
    triage_step = next(s for s in steps if s.get("if") == "failure()" and "run" in s)
    commands = [line for line in triage_step["run"].splitlines() if line.strip()]
    done = _run(commands, suite, env)
    assert [d.returncode for d in done] == [0] * len(commands), [d.stderr for d in done]
    annotations = done[0].stdout.splitlines()
    assert len(annotations) == len(FAILED_TESTS) and all(a.startswith("::error file=") for a in annotations)
    summary = (tmp_path / "summary.md").read_text()
    assert MarkdownIt("commonmark").enable("table").parse(summary)
    assert summary.startswith("## tcfl: 2 failed test(s)")
    sarif = json.loads((suite / "tcfl.sarif").read_text())
    jsonschema.validate(sarif, json.loads(SCHEMA.read_text()), cls=jsonschema.Draft4Validator)
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"] == "tcfl.sarif"


@pytest.mark.slow
def test_gitlab_job(tmp_path: Path) -> None:
    _, gitlab = _jobs()
    job = gitlab["test"]
    suite = copy_suite(tmp_path / "repo")
    env = _env(tmp_path)
    script = _run(job["script"], suite, env)
    assert [d.returncode for d in script] == [1]
    after = _run(job["after_script"], suite, env)
    assert [d.returncode for d in after] == [0] * len(job["after_script"]), [d.stderr for d in after]
    for path in [*job["artifacts"]["paths"], job["artifacts"]["reports"]["junit"]]:
        assert (suite / path).is_file(), path
    report = (suite / job["artifacts"]["reports"]["junit"]).read_text()
    assert report.count('name="tcfl.rank.1"') == len(FAILED_TESTS)


def test_the_documented_formats_are_the_command_s() -> None:
    from app.emit import FORMATS
    from app.ingest import FORMATS as RESULT_FORMATS

    text = DOC.read_text()
    assert f"[--format {'|'.join(FORMATS)}]" in text
    assert f"[--results-format {'|'.join(RESULT_FORMATS)}]" in text
