"""Which CI job a results file came from (``app.ingest.job``): the environments of GitHub Actions,
GitLab CI and Jenkins as their runners set them, flags over them, and the identity rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.ingest.job import Job, digest, from_env, parse_time, start_of

GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "shop/tests",
    "GITHUB_WORKFLOW": "CI",
    "GITHUB_RUN_ID": "7420011",
    "GITHUB_RUN_ATTEMPT": "2",
    "GITHUB_JOB": "unit",
    "GITHUB_SHA": "e44f45c0d75abf84086661ecc12e1fa1db28277b",
}
GITLAB = {
    "GITLAB_CI": "true",
    "CI_JOB_ID": "991",
    "CI_JOB_URL": "https://gitlab.example.com/shop/tests/-/jobs/991",
    "CI_PROJECT_PATH": "shop/tests",
    "CI_COMMIT_SHA": "3026a52c89a2433360b6450364d6a3309aa51743",
    "CI_JOB_STARTED_AT": "2026-11-28T10:00:00Z",
}
JENKINS = {
    "JENKINS_URL": "https://jenkins.example.com/",
    "BUILD_NUMBER": "57",
    "BUILD_URL": "https://jenkins.example.com/job/shop/57/",
    "JOB_NAME": "shop",
    "GIT_COMMIT": "bf0bc76a230baf0bac257282b44767877e17a297",
}


def test_each_ci_names_its_job_by_pipeline_and_job_id() -> None:
    github = from_env(GITHUB)
    assert (github.ci, github.pipeline, github.job_id) == ("github", "shop/tests:CI", "7420011.2.unit")
    assert github.job_url == "https://github.com/shop/tests/actions/runs/7420011/attempts/2"
    assert github.commit == GITHUB["GITHUB_SHA"] and github.key == "job:shop/tests:CI#7420011.2.unit"
    gitlab = from_env(GITLAB)
    assert (gitlab.ci, gitlab.job_url, gitlab.commit) == (
        "gitlab",
        GITLAB["CI_JOB_URL"],
        GITLAB["CI_COMMIT_SHA"],
    )
    assert gitlab.started_at == datetime(2026, 11, 28, 10, tzinfo=UTC)
    jenkins = from_env(JENKINS)
    assert (jenkins.ci, jenkins.pipeline, jenkins.job_id) == ("jenkins", "shop", "57")
    assert jenkins.job_url == JENKINS["BUILD_URL"] and jenkins.commit == JENKINS["GIT_COMMIT"]
    # two jobs of one GitHub workflow run share its URL: their job names tell them apart
    other = from_env({**GITHUB, "GITHUB_JOB": "browser"})
    assert other.job_url == github.job_url and other.identity != github.identity
    assert from_env({"PATH": "/usr/bin", "CI": "true"}) == Job()


def test_flags_win_over_the_environment_and_empty_ones_change_nothing() -> None:
    job = from_env(GITLAB).given(
        commit="c0ffee", job_url="", pipeline=None, started_at="2026-11-29T08:30:00+01:00"
    )
    assert job.commit == "c0ffee" and job.job_url == GITLAB["CI_JOB_URL"] and job.pipeline == "shop/tests"
    assert job.started_at == datetime(2026, 11, 29, 7, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="ISO 8601"):
        Job().given(started_at="yesterday")


def test_a_job_without_url_or_id_is_its_commit_results_and_time() -> None:
    first = Job(commit="abc", digest=digest(b"<testsuite time='1.2'/>"))
    again = Job(commit="abc", digest=digest(b"<testsuite time='1.2'/>"))
    second = Job(commit="abc", digest=digest(b"<testsuite time='1.3'/>"))
    assert first.identity == again.identity  # the same file sent again: the same job
    assert second.identity != first.identity  # another job's results: another job
    timed = first.given(started_at="2026-11-28T10:00:00Z")
    assert timed.identity != first.identity
    # a job named by its URL alone keeps the identity runs had before launches (the URL itself)
    assert Job(job_url="https://ci/1", digest="x").key == "https://ci/1"


@given(st.binary(max_size=200), st.binary(max_size=200))
def test_the_digest_tells_different_results_apart(a: bytes, b: bytes) -> None:
    assert (digest(a) == digest(b)) == (a == b)
    assert digest(a, b) != digest(a + b)  # files are told apart, not concatenated


def test_times_without_a_zone_are_utc() -> None:
    assert parse_time("2026-11-28T10:00:00") == datetime(2026, 11, 28, 10, tzinfo=UTC)
    assert parse_time("2026-11-28T10:00:00Z") == parse_time("2026-11-28T11:00:00+01:00")


def test_a_job_url_is_a_web_link() -> None:
    with pytest.raises(ValueError, match="http"):
        Job().given(job_url="javascript:alert(1)")
    assert Job().given(job_url="https://ci.example.com/jobs/9").job_url == "https://ci.example.com/jobs/9"


def test_a_jobs_start_is_given_then_recorded_then_the_files_then_now() -> None:
    given = datetime(2026, 1, 2, tzinfo=UTC)
    recorded = datetime(2026, 1, 3)  # as a database without zones gives it back
    file_time = datetime(2026, 1, 4, tzinfo=UTC)
    assert start_of(Job(started_at=given), recorded, file_time) == given
    assert start_of(Job(), recorded, file_time) == recorded.replace(tzinfo=UTC)
    assert start_of(Job(), None, file_time) == file_time
    assert start_of(Job(), None).tzinfo is UTC
