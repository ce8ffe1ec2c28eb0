"""The shipping files: the compose file validates, the image recipe is what the README promises,
and a built wheel carries the migrations and the example the API docs show."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.service.helpers import REPO


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_file_validates_with_docker_compose(tmp_path: Path) -> None:
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    done = subprocess.run(
        [tool, "-f", str(REPO / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr


def test_compose_services_are_wired(compose: dict) -> None:
    services = compose["services"]
    assert set(services) == {"api", "vllm", "postgres"}
    api, vllm, postgres = services["api"], services["vllm"], services["postgres"]
    assert api["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "vllm": {"condition": "service_healthy"},
    }
    env = api["environment"]
    assert env["TCFL_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert env["TCFL_MODEL_URL"] == "http://vllm:8000/v1"
    assert "Qwen/Qwen2.5-Coder-32B-Instruct" in env["TCFL_MODEL"]

    assert vllm["image"].startswith("vllm/vllm-openai")
    assert "--enable-prefix-caching" in vllm["command"]
    assert "${TCFL_MODEL:-Qwen/Qwen2.5-Coder-32B-Instruct}" in vllm["command"]
    device = vllm["deploy"]["resources"]["reservations"]["devices"][0]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
    assert any(v.endswith(":/root/.cache/huggingface") for v in vllm["volumes"])
    assert "/health" in " ".join(vllm["healthcheck"]["test"])
    assert int(vllm["healthcheck"]["start_period"].rstrip("s")) >= 600

    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])


def test_dockerfile_is_slim_multistage_and_non_root() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert text.count("FROM python:3.11-slim") == 2
    assert "COPY --from=build" in text
    assert "pip install" in text
    assert "\nUSER tcfl" in text
    assert "\nEXPOSE 8000" in text
    assert "HEALTHCHECK" in text and "/healthz" in text
    assert "COPY prompts" in text
    ignored = (REPO / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored


@pytest.mark.slow
def test_wheel_ships_migrations_and_examples(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    wheel = next(tmp_path.glob("tcfl-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "app/store/migrations/alembic.ini",
        "app/store/migrations/env.py",
        "app/store/migrations/script.py.mako",
        "app/store/migrations/versions/0001_initial.py",
        "app/service/examples/running_example_script.txt",
        "app/service/examples/running_example_log.txt",
        "app/analysis/queries/source-calls.scm",
        "app/service/dashboard/templates/base.html",
        "prompts/block.txt",
        "prompts/function.txt",
        "prompts/line.txt",
    ):
        assert needed in names, needed


def test_api_example_is_the_running_example() -> None:
    examples = REPO / "app/service/examples"
    data = REPO / "tests/data/running-example"
    assert (examples / "running_example_script.txt").read_bytes() == (data / "test_example.py").read_bytes()
    assert (examples / "running_example_log.txt").read_bytes() == (data / "failure.log").read_bytes()
