"""The launch scenario: a small real pytest suite run for nine CI jobs, recorded two ways.

A git repository of a shop's test suite gets one commit per CI job. Four tests show what a QA
team meets: ``test_single_item`` always passes; ``test_ping`` fails now and then with the code
unchanged (a network blip, jobs 3 and 6: flaky); ``test_discount`` breaks at commit 2 (test data
changed, expectation not), is fixed at 3 and broken the same way again at 6 (new, then a
regression, then recurring); ``test_many_items`` breaks at commit 4 by a fault in the shared
helper ``cartlib.total`` (new, then recurring). Each job runs the real pytest (JUnit XML and
report-log) in a checkout of its commit; job 9 fixes ``test_discount`` so its only failure is
``test_many_items``.

``record_via_ci`` sends jobs through ``tcfl ci`` and ``record_via_ingest`` through
``POST /v1/ingest``, neither with a job URL (the commit only); ``verdicts`` reads back what each
launch says of each failure. ``scripts/launch_scenario.py`` runs it end to end and prints the
figures; ``tests/test_launch_scenario.py`` checks them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
JOBS = 8  # the judged jobs; job 9 is the next one (after a label)

CARTLIB = '''"""What the cart tests share: prices, the total of a cart, discounts."""

import logging

log = logging.getLogger("cart")

PRICES = {"apple": 3, "pear": 4, "plum": 2}


def total(items):
    """The price of a cart: (name, count) pairs."""
    amount = 0
    for name, count in items:
        log.info("adding %s x%d at %d", name, count, PRICES[name])
        amount += PRICES[name] * count
    log.info("cart total %d", amount)
    return amount


def discount(amount, percent):
    """The amount less ``percent`` per cent, rounded down."""
    cut = amount * percent // 100
    log.info("discount of %d%% on %d is %d", percent, amount, cut)
    return amount - cut
'''

TEST_CART = """import logging

from cartlib import total

log = logging.getLogger("test.cart")


def test_single_item():
    items = [("apple", 1)]
    log.info("checking a cart of one item")
    assert total(items) == 3


def test_many_items():
    items = [("apple", 1), ("pear", 2), ("plum", 3)]
    log.info("checking a cart of %d lines", len(items))
    amount = total(items)
    log.info("total computed: %d", amount)
    assert amount == 17
"""

TEST_CHECKOUT = """import logging

from cartlib import PRICES, discount

log = logging.getLogger("test.checkout")


def test_discount():
    items = [("apple", 2), ("pear", 1)]
    amount = sum(PRICES[name] * count for name, count in items)
    log.info("cart of %d lines costs %d", len(items), amount)
    price = discount(amount, 10)
    log.info("price after discount: %d", price)
    assert price == 9
"""

TEST_NETWORK = """import logging
import os

log = logging.getLogger("test.network")


def ping(host):
    log.info("pinging %s", host)
    if os.environ.get("SHOP_NETWORK_DOWN") == "1":
        raise ConnectionError(f"ping {host} timed out after 3s")
    log.info("%s answered", host)
    return True


def test_ping():
    log.info("checking the payment gateway")
    assert ping("10.0.0.7")
"""

FILES = {
    "README.md": "# shop tests\n",
    "pytest.ini": "[pytest]\ntestpaths = tests\nlog_level = INFO\njunit_logging = all\n",
    "tests/cartlib.py": CARTLIB,
    "tests/test_cart.py": TEST_CART,
    "tests/test_checkout.py": TEST_CHECKOUT,
    "tests/test_network.py": TEST_NETWORK,
}
BREAK_DISCOUNT = ('    items = [("apple", 2), ("pear", 1)]', '    items = [("apple", 2), ("pear", 2)]')
BREAK_TOTAL = ("        amount += PRICES[name] * count", "        amount = PRICES[name] * count")
# (commit message, edits: path -> (old, new), job environment)
COMMITS: tuple[tuple[str, dict[str, tuple[str, str]], dict[str, str]], ...] = (
    ("shop tests", {}, {}),
    ("checkout: buy two pears", {"tests/test_checkout.py": BREAK_DISCOUNT}, {}),
    (
        "checkout: back to one pear",
        {"tests/test_checkout.py": BREAK_DISCOUNT[::-1]},
        {"SHOP_NETWORK_DOWN": "1"},
    ),
    ("cartlib: simpler total", {"tests/cartlib.py": BREAK_TOTAL}, {}),
    ("readme: how to run", {"README.md": ("# shop tests\n", "# shop tests\n\nRun `pytest`.\n")}, {}),
    ("checkout: buy two pears again", {"tests/test_checkout.py": BREAK_DISCOUNT}, {"SHOP_NETWORK_DOWN": "1"}),
    (
        "cart: say what is checked",
        {"tests/test_cart.py": ("import logging\n", "import logging  # cart tests\n")},
        {},
    ),
    ("readme: owners", {"README.md": ("Run `pytest`.\n", "Run `pytest`.\nOwners: QA.\n")}, {}),
    ("checkout: one pear for good", {"tests/test_checkout.py": BREAK_DISCOUNT[::-1]}, {}),
)
KEYS = {
    "single": "tests/test_cart.py::test_single_item",
    "many": "tests/test_cart.py::test_many_items",
    "discount": "tests/test_checkout.py::test_discount",
    "ping": "tests/test_network.py::test_ping",
}
# job (1-based) -> test -> what the history should say of its failure there
EXPECTED: dict[int, dict[str, str]] = {
    2: {KEYS["discount"]: "new"},
    3: {KEYS["ping"]: "flaky"},
    4: {KEYS["many"]: "new"},
    5: {KEYS["many"]: "recurring"},
    6: {KEYS["discount"]: "regression", KEYS["many"]: "recurring", KEYS["ping"]: "flaky"},
    7: {KEYS["discount"]: "recurring", KEYS["many"]: "recurring"},
    8: {KEYS["discount"]: "recurring", KEYS["many"]: "recurring"},
}
# test -> the job whose commit introduced the fault that fails it in job 8
FIRST_BAD = {KEYS["many"]: 4, KEYS["discount"]: 6}


@dataclass(frozen=True)
class JobFiles:
    """What one CI job left: its commit, the checkout, pytest's JUnit XML and report-log."""

    number: int
    commit: str
    checkout: Path
    archive: Path
    junit: Path
    reportlog: Path
    exit_code: int


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "QA",
        "GIT_AUTHOR_EMAIL": "qa@example.com",
        "GIT_COMMITTER_NAME": "QA",
        "GIT_COMMITTER_EMAIL": "qa@example.com",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def build_repo(repo: Path) -> list[str]:
    """The suite's git repository, one commit per job; the commits' hashes in order."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for message, edits, _ in COMMITS:
        if not shas:
            for path, text in FILES.items():
                (repo / path).parent.mkdir(parents=True, exist_ok=True)
                (repo / path).write_text(text)
        for path, (old, new) in edits.items():
            target = repo / path
            text = target.read_text()
            if old not in text:
                raise ValueError(f"{message}: {old!r} not in {path}")
            target.write_text(text.replace(old, new, 1))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", message)
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return shas


def clean_env(**extra: str) -> dict[str, str]:
    """The environment a job runs in: no CI variables of the machine running the scenario."""
    drop = ("GITHUB_", "GITLAB_", "CI_", "JENKINS_", "BUILD_", "PYTEST_ADDOPTS", "TCFL_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return {**env, **extra}


def run_job(repo: Path, shas: Sequence[str], number: int, out: Path) -> JobFiles:
    """Job ``number`` (1-based): check its commit out, run pytest there, archive the checkout."""
    sha = shas[number - 1]
    folder = out / f"job{number}"
    checkout = folder / "checkout"
    checkout.mkdir(parents=True)
    archive = folder / "checkout.tar.gz"
    _git(repo, "archive", "--format=tar.gz", "-o", str(archive), sha)
    with tarfile.open(archive) as tar:
        tar.extractall(checkout, filter="data")
    junit, reportlog = folder / "junit.xml", folder / "report.jsonl"
    env = clean_env(**COMMITS[number - 1][2])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-p",
            "no:tcfl",
            f"--junitxml={junit}",
            f"--report-log={reportlog}",
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (folder / "console.txt").write_text(done.stdout + done.stderr)
    return JobFiles(number, sha, checkout, archive, junit, reportlog, done.returncode)


def run_jobs(repo: Path, out: Path, count: int = len(COMMITS)) -> list[JobFiles]:
    """The repository built and every job run (``count`` of them): what each left."""
    shas = build_repo(repo)
    return [run_job(repo, shas, n, out) for n in range(1, count + 1)]


def load_jobs(repo: Path, out: Path) -> list[JobFiles]:
    """The jobs ``run_jobs`` ran, read back from their folders (another process ran them)."""
    shas = _git(repo, "log", "--format=%H", "--reverse").split()
    jobs = []
    for n, sha in enumerate(shas, 1):
        folder = out / f"job{n}"
        if folder.is_dir():
            jobs.append(
                JobFiles(
                    n,
                    sha,
                    folder / "checkout",
                    folder / "checkout.tar.gz",
                    folder / "junit.xml",
                    folder / "report.jsonl",
                    0,
                )
            )
    return jobs


def tcfl_ci(
    job: JobFiles, db: str, *args: str, results: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``tcfl ci`` on a job's JUnit XML, recording it in ``db`` under its commit (no job URL)."""
    return subprocess.run(
        [
            str(BIN / "tcfl"),
            "ci",
            str(results or job.junit),
            "--root",
            str(job.checkout),
            "--db",
            db,
            "--commit",
            job.commit,
            *args,
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def record_via_ci(jobs: Sequence[JobFiles], db: str, *args: str) -> list[dict[str, Any]]:
    """Every job through ``tcfl ci --format json``; each job's answer."""
    out = []
    for job in jobs:
        done = tcfl_ci(job, db, "--format", "json", *args)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"tcfl ci on job {job.number} exited {done.returncode}: {done.stderr}")
        out.append(json.loads(done.stdout))
    return out


def ingest(client: Any, job: JobFiles, **fields: str) -> dict[str, Any]:
    """One job through ``POST /v1/ingest``: its report-log, its checkout, its commit (no job URL)."""
    files = {
        "results": ("report.jsonl", job.reportlog.read_bytes(), "application/x-ndjson"),
        "archive": ("checkout.tar.gz", job.archive.read_bytes(), "application/gzip"),
    }
    response = client.post("/v1/ingest", files=files, data={"commit": job.commit, **fields})
    if response.status_code != 200:
        raise RuntimeError(f"POST /v1/ingest of job {job.number}: {response.status_code} {response.text}")
    return response.json()


def record_via_ingest(client: Any, jobs: Sequence[JobFiles], **fields: str) -> list[dict[str, Any]]:
    return [ingest(client, job, **fields) for job in jobs]


def verdicts(launches: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, str]]:
    """job -> failed test -> what its launch says of it (``GET /v1/launches/{id}``, oldest first)."""
    out: dict[int, dict[str, str]] = {}
    for n, launch in enumerate(launches, 1):
        failed = {t["key"]: t["classification"] for t in launch["tests"] if t["verdict"] in ("fail", "error")}
        if failed:
            out[n] = failed
    return out


def first_bad_commits(launch: Mapping[str, Any]) -> dict[str, str | None]:
    """test -> the commit its launch names as the first bad one, for each failure of the launch."""
    return {
        t["key"]: (t.get("history") or {}).get("first_bad_version", {}).get("first_bad_commit")
        for t in launch["tests"]
        if t["verdict"] in ("fail", "error")
    }
