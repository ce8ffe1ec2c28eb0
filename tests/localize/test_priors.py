"""Priors (app/localize/channels/priors.py): what an element is, on small scripts and logs written for
them, through the real pipeline; and how a model's prior weights reach the ranking."""

from __future__ import annotations

import pytest

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.channels import Context
from app.localize.channels.priors import PRIORS, FailureWords, element_priors
from app.localize.evidence import Channel
from app.localize.features import FEATURES, PRIOR_FEATURES, channel_table, feature_channel, features
from app.localize.heuristic import rank_table
from app.localize.model_file import LevelModel, ModelFileError, handset_model, parse_model

SCRIPT = """\
import logging
import time

log = logging.getLogger(__name__)
RETRIES = 3


def wait_for(service):
    for _ in range(RETRIES):
        if service.ready():
            return True
        time.sleep(5)
    return False


class TestService:
    def setUp(self):
        self.service = start("sshd")

    def test_ready(self):
        log.info("waiting for the service")
        assert wait_for(self.service)
        self.service.stop()
        self.service.status = "stopped"
        log.info("stopped it")
"""


def _priors(log: str) -> dict[int, dict[str, float]]:
    """Per first line of each block, its priors."""
    analysis = analyze([Script("tests/test_svc.py", SCRIPT)], log)
    ctx = Context.build(analysis, "tplus")
    rendered = render(analysis, "tplus", "block")
    words = FailureWords.read(ctx)
    out = {}
    for element in rendered.elements:
        sids = {s for s in (ctx.sid_at(element.path, n) for n in element.lines) if s is not None}
        out[element.start_line] = element_priors(ctx, element, sids, words)
    return out


def test_where_an_element_sits_and_what_it_does() -> None:
    priors = _priors("AssertionError\n")
    assert priors[1]["module_level"] == 1.0
    assert priors[17]["hook"] == 1.0 and "test_body" not in priors[17]
    body = next(p for line, p in priors.items() if 20 <= line <= 22 and "check" in p)
    assert body["test_body"] == 1.0
    assert all("check" not in p for line, p in priors.items() if line < 20)
    assert all(0 < p["size"] <= 1 for p in priors.values())


def test_a_larger_element_has_a_larger_size() -> None:
    priors = _priors("AssertionError\n")
    assert priors[1]["size"] > priors[17]["size"] > priors[10]["size"]


def test_timing_only_when_the_error_says_something_timed_out() -> None:
    plain = _priors("AssertionError\n")
    timed = _priors("TimeoutError: timed out waiting for sshd\n")
    # RETRIES, the loop, time.sleep(5) and the test that logs "waiting for ...": code that waits
    assert [line for line, p in timed.items() if "timing" in p] == [1, 8, 12, 20]
    assert not any("timing" in p for p in plain.values())


def test_the_log_shows_what_printed_its_messages() -> None:
    log = "INFO waiting for the service\nAssertionError\n"
    priors = _priors(log)
    logged = [line for line, p in priors.items() if "logged" in p]
    assert logged and all(20 <= line <= 22 for line in logged)
    assert [line for line, p in priors.items() if "last_logged" in p] == logged


def test_names_of_the_error_message_and_its_missing_attribute() -> None:
    priors = _priors("AttributeError: 'Service' object has no attribute 'status'\n")
    named = {line for line, p in priors.items() if "attribute_named" in p}
    setting = {line for line, p in priors.items() if "attribute_set" in p}
    assert setting and setting <= named
    assert all("message_names" in priors[line] for line in named)


def test_priors_are_off_with_their_channel_and_features_name_them() -> None:
    analysis = analyze([Script("tests/test_svc.py", SCRIPT)], "AssertionError\n")
    rendered = render(analysis, "tplus", "block")
    table = channel_table(analysis, rendered)
    assert any(row.priors for row in table.elements)
    off = channel_table(analysis, rendered, disabled=["prior"])
    assert not any(row.priors for row in off.elements)
    columns = features(table.elements[0], table.context)
    assert {c for c in columns if c.startswith("prior:")} <= set(PRIOR_FEATURES)
    assert {feature_channel(c) for c in PRIOR_FEATURES} == {"prior"}
    assert len(PRIOR_FEATURES) == len(PRIORS) and set(PRIOR_FEATURES) <= set(FEATURES)


def test_a_model_weighs_priors_and_says_so_in_the_evidence() -> None:
    analysis = analyze([Script("tests/test_svc.py", SCRIPT)], "AssertionError\n")
    rendered = render(analysis, "tplus", "block")
    table = channel_table(analysis, rendered)
    hook = next(i for i, row in enumerate(table.elements) if dict(row.priors).get("hook"))
    ranked = rank_table(table, {}, safety=False, priors={"hook": 10.0})
    assert ranked[0].element == table.elements[hook].element
    (record,) = [e for e in ranked[0].evidence if e.channel is Channel.PRIOR]
    assert "setup or cleanup hook" in record.detail and record.weight == pytest.approx(10.0)
    assert not ranked[0].has_evidence  # a prior alone is no failure evidence
    plain = rank_table(table, {}, safety=False)
    assert all(e.channel is not Channel.PRIOR for s in plain for e in s.evidence)


def test_model_files_take_prior_features_and_name_a_wrong_one() -> None:
    body = handset_model().to_dict()
    body["levels"]["block"] = {"features": ["traceback", "prior:size"], "weights": [4.0, 0.5]}
    model = parse_model(body, "test")
    assert model.levels["block"].prior_weights() == {"size": 0.5}
    assert model.levels["block"].channel_weights({}) == {Channel.TRACEBACK: 4.0}
    body["levels"]["block"] = {"features": ["prior:colour"], "weights": [1.0]}
    with pytest.raises(ModelFileError, match="prior:colour"):
        parse_model(body, "test")
    assert LevelModel({"prior:check": 1.0}).prior_weights() == {"check": 1.0}
