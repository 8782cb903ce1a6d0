"""Juries and self-consistency (issue 14 item 2): several models, or k samples of one, grade
each item; the verdicts combine into one; a split jury goes to review as "jury split"; each
juror's verdict is kept so reports can give its agreement.

The end-to-end tests run `judge grade` with the real openai and anthropic SDKs against the
local fake server, whose answers depend on the model name or the seed, so the jurors really
disagree on the wire."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import ConfigError
from judge.formats import Verdict
from judge.grading.jury import (
    Juror,
    JurySpec,
    combine,
    juror_verdicts,
    jury_from_settings,
    parse_jury,
)
from judge.prompts import load_prompt
from judge.providers.base import JudgeRequest, ModelParams, ProviderResponse
from judge.providers.scripted import (
    ScriptedProvider,
    default_completion,
    default_verdict,
    find_seq,
)
from judge.routing import JURY_SPLIT, RoutingPolicy, route_verdict
from judge.settings import Settings
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import FakeRequest

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
PASS = REFUND / "pass.json"
ITEM = "t/run-1#4:scope_fidelity"


def v(label: str, conf: float | None = 0.8, key: str | None = None,
      ev: int | None = None, reason: str | None = None) -> Verdict:
    if label == "fail":
        key = key or "refundOnce"
        ev = 4 if ev is None else ev
    return Verdict(item_id=ITEM, label=label,  # type: ignore[arg-type]
                   violated_key=key, evidence_event=ev,
                   confidence=None if label == "unscored" else conf,
                   reason=reason or ("juror failed" if label == "unscored" else None))


def jury_of(n: int, **kw: Any) -> tuple[JurySpec, tuple[Juror, ...]]:
    spec = JurySpec(tuple((f"openai:m{i}", 1) for i in range(n)), **kw)
    return spec, spec.jurors()


PROMPT = load_prompt("scope_fidelity")


# ------------------------------------------------------------------ spec and combine rules

def test_spec_round_trips_and_names_seats() -> None:
    spec = parse_jury("jury[mean]:openai:a*3+anthropic:b")
    assert spec.members == (("openai:a", 3), ("anthropic:b", 1))
    assert spec.name == "jury[mean]:openai:a*3+anthropic:b"
    assert [j.id for j in spec.jurors()] == ["openai:a#1", "openai:a#2", "openai:a#3",
                                             "anthropic:b"]
    assert parse_jury(spec.name) == spec
    again = JurySpec.from_config({**spec.to_config(), "min_share": 0.6, "rubrics": ["x"]})
    assert again.min_share == 0.6 and again.rubrics == frozenset({"x"})
    assert again.applies("x") and not again.applies("y")


@pytest.mark.parametrize("text, message", [
    ("jury[vote_share]:openai:a", "at least two seats"),
    ("jury[vote_share]:openai:a+openai:a", "named twice"),
    ("jury[median]:openai:a+openai:b", "confidence"),
    ("jury:openai:a+openai:b", "not a jury spec"),
    ("jury[vote_share]:openai:a*0+openai:b", "samples must be"),
    ("jury[vote_share]:openai:a*40", "samples must be"),
    ("jury[vote_share]:openai:a+jury[mean]:b", "not"),
    ("jury[vote_share]:openai:b#1+openai:b*2", "not a model spec"),  # would shadow seat b#1
    ("jury[vote_share]:" + "+".join(f"openai:m{i}" for i in range(40)), "too large"),
    ("jury[vote_share]:" + "+".join(f"openai:m{i}" for i in range(10_000)), "not a jury"),
])
def test_bad_specs_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        parse_jury(text)


def test_samples_params_differ_by_seed_and_sample_and_sample_zero_is_the_plain_call() -> None:
    base = ModelParams(temperature=0.7, seed=10)
    jurors = parse_jury("jury[vote_share]:openai:a*3").jurors()
    params = [j.params(base) for j in jurors]
    assert params[0] is base and params[0].to_dict() == {"temperature": 0.7, "seed": 10,
                                                         "max_tokens": 1024}
    assert [p.seed for p in params] == [10, 11, 12]
    assert params[2].to_dict()["sample"] == 2
    no_seed = jurors[1].params(ModelParams(temperature=0.7, seed=None))
    assert no_seed.seed is None and no_seed.to_dict()["sample"] == 1  # still its own key


def test_majority_vote_share_and_the_fail_voice() -> None:
    spec, jurors = jury_of(3)
    out = combine(ITEM, PROMPT, spec, jurors,
                  [v("fail", 0.6, "a", 4), v("pass", 0.9), v("fail", 0.7, "a", 4)])
    assert out.label == "fail" and out.violated_key == "a" and out.evidence_event == 4
    assert out.confidence == pytest.approx(2 / 3)
    record = out.metadata["jury"]
    assert record["votes"] == {"pass": 1, "fail": 2, "unscored": 0}
    assert record["split"] is True and record["vote_share"] == pytest.approx(2 / 3, abs=1e-6)
    assert out.model == spec.name and out.prompt_hash == PROMPT.hash
    assert out.rationale is not None and out.rationale.startswith("jury 2 of 3 fail")


def test_the_key_most_fail_voters_name_speaks_then_confidence() -> None:
    spec, jurors = jury_of(3)
    out = combine(ITEM, PROMPT, spec, jurors,
                  [v("fail", 0.99, "x", 2), v("fail", 0.6, "y", 5), v("fail", 0.7, "y", 5)])
    assert (out.violated_key, out.evidence_event) == ("y", 5)
    assert out.metadata["jury"]["split"] is False and out.confidence == 1.0


def test_a_tie_is_a_fail_and_a_split() -> None:
    spec, jurors = jury_of(2)
    out = combine(ITEM, PROMPT, spec, jurors, [v("pass", 0.9), v("fail", 0.55)])
    assert out.label == "fail" and out.confidence == 0.5
    assert out.metadata["jury"]["split"] is True


def test_mean_confidence_is_the_jurors_probability_of_the_winning_label() -> None:
    spec, jurors = jury_of(3, confidence="mean")
    out = combine(ITEM, PROMPT, spec, jurors, [v("pass", 0.9), v("pass", 0.7), v("fail", 0.8)])
    assert out.label == "pass"
    assert out.confidence == pytest.approx((0.9 + 0.7 + 0.2) / 3)


def test_a_mean_jury_leaning_against_its_majority_is_a_split() -> None:
    spec, jurors = jury_of(3, confidence="mean", min_share=0.6)
    out = combine(ITEM, PROMPT, spec, jurors, [v("pass", 0.55), v("pass", 0.55),
                                               v("fail", 0.99)])
    assert out.label == "pass" and out.confidence is not None and out.confidence < 0.5
    assert out.metadata["jury"]["split"] is True


def test_min_share_decides_what_is_a_split() -> None:
    votes = [v("pass"), v("pass"), v("pass"), v("fail")]
    spec, jurors = jury_of(4, min_share=0.75)
    assert combine(ITEM, PROMPT, spec, jurors, votes).metadata["jury"]["split"] is False
    spec, jurors = jury_of(4, min_share=0.8)
    assert combine(ITEM, PROMPT, spec, jurors, votes).metadata["jury"]["split"] is True


def test_too_few_valid_votes_is_unscored_with_the_reason() -> None:
    spec, jurors = jury_of(3)
    out = combine(ITEM, PROMPT, spec, jurors,
                  [v("pass"), v("unscored", reason="HTTP 500"), v("unscored")])
    assert out.label == "unscored" and out.reason is not None
    assert "1 of 3" in out.reason and "HTTP 500" in out.reason
    # a majority of seats voted: the absent juror does not make a split
    out = combine(ITEM, PROMPT, spec, jurors, [v("pass"), v("pass"), v("unscored")])
    assert out.label == "pass" and out.metadata["jury"]["split"] is False
    assert out.metadata["jury"]["votes"]["unscored"] == 1


def test_juror_verdicts_come_back_from_the_record() -> None:
    spec, jurors = jury_of(3)
    out = combine(ITEM, PROMPT, spec, jurors, [v("fail", 0.6, "a", 4), v("pass", 0.9),
                                               v("unscored", reason="timeout")])
    back = juror_verdicts(out)
    assert [back[j.id].label for j in jurors] == ["fail", "pass", "unscored"]
    assert back["openai:m0"].violated_key == "a" and back["openai:m2"].reason == "timeout"
    assert juror_verdicts(v("pass")) == {}
    broken = out.model_copy(update={"metadata": {"jury": {"jurors": [{"juror": 3}, "x"]}}})
    assert juror_verdicts(broken) == {}


# ------------------------------------------------------------------ routing

def test_a_split_jury_goes_to_review_as_jury_split_after_veto_and_invalid() -> None:
    spec, jurors = jury_of(3)
    split = combine(ITEM, PROMPT, spec, jurors, [v("pass"), v("pass"), v("fail")])
    route = route_verdict(split, vetoed=False, calibration=None, policy=RoutingPolicy())
    assert (route.route, route.reason) == ("review", JURY_SPLIT)
    assert route_verdict(split, vetoed=True, calibration=None).reason == "veto"
    agreed = combine(ITEM, PROMPT, spec, jurors, [v("pass"), v("pass"), v("pass")])
    assert route_verdict(agreed, vetoed=False, calibration=None).reason == "uncalibrated"


# ------------------------------------------------------------------ settings

def test_settings_make_the_jury_and_refuse_samples_at_temperature_zero() -> None:
    s = Settings.load(environ={"JUDGE_JURY": "openai:a, anthropic:b", "JUDGE_SAMPLES": "2",
                               "JUDGE_TEMPERATURE": "0.7", "JUDGE_JURY_MIN_SHARE": "0.6",
                               "JUDGE_JURY_RUBRICS": "scope_fidelity"})
    spec = jury_from_settings(s, "heuristic")
    assert spec is not None
    assert spec.name == "jury[vote_share]:openai:a*2+anthropic:b*2"
    assert spec.min_share == 0.6 and spec.rubrics == frozenset({"scope_fidelity"})
    assert jury_from_settings(Settings.load(environ={}), "heuristic") is None
    with pytest.raises(ConfigError, match="temperature"):
        jury_from_settings(Settings.load(environ={"JUDGE_SAMPLES": "3"}), "openai:a")
    with pytest.raises(ConfigError, match=r"JUDGE_JURY_MIN_SHARE.*0\.5"):
        Settings.load(environ={"JUDGE_JURY_MIN_SHARE": "0.3"})


# ------------------------------------------------------------------ end to end, on the wire

def grade(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["grade", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def fail_reply(req: FakeRequest) -> dict[str, Any]:
    reply = default_verdict(req.schema, seq=find_seq(req.text), label="fail", confidence=0.8)
    reply["violated_key"] = "refundOnce"
    return reply


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    """judge-b always says fail; everyone else says pass; with a seed of 1, fail too."""
    def answer(req: FakeRequest) -> dict[str, Any] | None:
        body = req.body if isinstance(req.body, dict) else {}
        if req.model == "judge-b" or body.get("seed") == 1:
            return fail_reply(req)
        return None  # the canned pass

    with FakeProviderServer(responder=answer) as srv:
        yield srv


def test_a_jury_of_two_models_splits_and_routes_to_review(server: FakeProviderServer) -> None:
    args = (REFUND, PASS, "--jury", "openai:judge-a,openai:judge-b", "--base-url",
            server.openai_base_url, "--format", "json")
    code, out, err = grade(*args)
    assert code == 1, err  # a fail verdict: tie is a fail
    data = json.loads(out)
    verdicts, summary = data["verdicts"], data["summary"]
    n = len(verdicts)
    assert n >= 1 and server.generation_count == 2 * n == summary["provider_calls"]
    assert summary["model"] == "jury[vote_share]:openai:judge-a+openai:judge-b"
    assert summary["jury_splits"] == n and summary["juror_verdicts"] == 2 * n
    for verdict in verdicts:
        assert verdict["label"] == "fail" and verdict["violated_key"] == "refundOnce"
        assert (verdict["route"], verdict["route_reason"]) == ("review", "jury split")
        jurors = verdict["metadata"]["jury"]["jurors"]
        assert [(j["juror"], j["label"]) for j in jurors] == [("openai:judge-a", "pass"),
                                                              ("openai:judge-b", "fail")]
    from judge.store import open_store

    with open_store("sqlite:///judge.db") as store:
        assert store.queue.stats()["by_reason"] == {"jury split": n}
    sent = server.generation_count
    code, out, _ = grade(*args)
    assert json.loads(out)["summary"]["provider_calls"] == 0
    assert server.generation_count == sent  # every juror's call came from the cache


def test_samples_of_one_model_vote_and_min_share_decides_the_split(
        server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    args = (REFUND, PASS, "--model", "openai:judge-a", "--samples", "3", "--temperature",
            "0.7", "--base-url", server.openai_base_url, "--format", "json",
            "--cache", "calls.jsonl")
    code, out, err = grade(*args)
    assert code == 0, err
    data = json.loads(out)
    seeds = sorted({r.body["seed"] for r in server.generations()})
    assert seeds == [0, 1, 2]  # each sample is its own call, seed + i
    for verdict in data["verdicts"]:
        assert verdict["label"] == "pass"
        assert verdict["confidence"] == pytest.approx(2 / 3)
        assert verdict["model"] == "jury[vote_share]:openai:judge-a*3"
        assert verdict["metadata"]["jury"]["split"] is True
    monkeypatch.setenv("JUDGE_JURY_MIN_SHARE", "0.6")
    sent = server.generation_count
    code, out, err = grade(*args)
    assert code == 0, err
    assert server.generation_count == sent
    assert all(not vd["metadata"]["jury"]["split"] for vd in json.loads(out)["verdicts"])


def test_anthropic_samples_without_a_seed_are_still_separate_calls(
        server: FakeProviderServer) -> None:
    args = (REFUND, PASS, "--model", "anthropic:judge-c", "--samples", "2", "--temperature",
            "0.5", "--base-url", server.anthropic_base_url, "--format", "json",
            "--cache", "calls.jsonl")
    code, out, err = grade(*args)
    assert code == 0, err
    n = len(json.loads(out)["verdicts"])
    assert server.generation_count == 2 * n
    grade(*args)
    assert server.generation_count == 2 * n


@pytest.mark.parametrize("args, message", [
    (("--samples", "3"), "temperature"),
    (("--jury", "openai:x,openai:x"), "named twice"),
    (("--jury", "nonsense:x,openai:y"), "unknown model spec"),
    (("--model", "jury[vote_share]:openai:a+openai:b", "--samples", "2"), "already a jury"),
])
def test_bad_jury_options_are_one_line_exit_2_before_any_call(
        args: tuple[str, ...], message: str, server: FakeProviderServer) -> None:
    code, _, err = grade(REFUND, PASS, "--base-url", server.openai_base_url, *args)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert server.generation_count == 0


def test_samples_of_the_deterministic_heuristic_are_refused(server: FakeProviderServer) -> None:
    code, _, err = grade(REFUND, PASS, "--model", "heuristic", "--samples", "3",
                         "--temperature", "0.7")
    assert code == 2 and "same answer every time" in err and "Traceback" not in err
    # on a jury of other models it is one juror like any other
    code, out, err = grade(REFUND, PASS, "--jury", "heuristic,openai:judge-a", "--base-url",
                           server.openai_base_url, "--format", "json")
    assert code in (0, 1), err
    verdicts = json.loads(out)["verdicts"]
    assert verdicts and all(v["model"] == "jury[vote_share]:heuristic+openai:judge-a"
                            for v in verdicts)


# ------------------------------------------------------------------ the spec parser, any text

_MODEL = st.from_regex(r"(openai|anthropic|scripted):[a-z0-9][a-z0-9.:-]{0,20}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | st.builds(lambda a, b: f"jury[{a}]:{b}", st.text(max_size=12),
                                        st.text(max_size=60)))
def test_any_text_is_a_jury_spec_or_a_config_error(text: str) -> None:
    try:
        spec = parse_jury(text)
    except ConfigError as exc:
        assert str(exc) and "\n" not in exc.message.strip("\n")
        return
    assert parse_jury(spec.name) == spec
    assert 2 <= spec.seats <= 32


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_MODEL, st.integers(1, 5)), min_size=1, max_size=4,
                unique_by=lambda m: m[0]),
       st.sampled_from(["vote_share", "mean"]))
def test_a_specs_name_parses_back_to_it(members: list[tuple[str, int]], conf: str) -> None:
    if sum(k for _, k in members) < 2:
        with pytest.raises(ConfigError, match="two seats"):
            JurySpec(tuple(members), confidence=conf)  # type: ignore[arg-type]
        return
    spec = JurySpec(tuple(members), confidence=conf)  # type: ignore[arg-type]
    assert parse_jury(spec.name) == spec
    ids = [j.id for j in spec.jurors()]
    assert len(ids) == len(set(ids)) == spec.seats


# ------------------------------------------------------------------ requests in flight

class Tracking(ScriptedProvider):
    """A remote-path provider that answers after a pause and records how many of its
    requests (across every instance sharing `live`) were in flight at once."""

    def __init__(self, spec: str, live: list[int]) -> None:
        super().__init__(default=default_completion, spec=spec)
        self.live = live  # [now, most]

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        self.live[0] += 1
        self.live[1] = max(self.live[1], self.live[0])
        try:
            await asyncio.sleep(0.01)
            return await super().generate(request)
        finally:
            self.live[0] -= 1


def test_a_jury_keeps_the_run_within_concurrency_requests_in_flight() -> None:
    from judge.grading.cache import MemoryCache
    from judge.grading.jury import Jury
    from judge.ledger import load_scenario
    from judge.pipeline import GradeOptions, Source, grade_traces
    from judge.trace import iter_traces

    live = [0, 0]
    spec = JurySpec((("scripted:a", 1), ("scripted:b", 1), ("scripted:c", 1)))
    jury = Jury(spec, {m: Tracking(m, live) for m, _ in spec.members})
    loaded = load_scenario(REFUND)
    traces = [t for p in sorted(REFUND.glob("*.json")) for t in iter_traces(p, [])]
    # three copies of each, under their own ids (trace ids are unique within an input)
    copies = [t.model_copy(update={"trace_id": f"{t.trace_id}/copy-{k}"})
              for k in range(3) for t in traces]
    graded = grade_traces(
        [Source(loaded, iter(copies), ["scope_fidelity"])],
        prompts={"scope_fidelity": PROMPT}, provider=jury.providers["scripted:a"],
        settings=Settings.load(environ={"JUDGE_CONCURRENCY": "4"}), cache=MemoryCache(),
        options=GradeOptions(policy=None, keep_verdicts=True, check_process=False), jury=jury)
    assert graded.stats.juror_verdicts == 3 * graded.stats.items > 12
    assert 2 <= live[1] <= 4  # in parallel, and never past the bound


def test_splits_on_vetoed_traces_are_not_counted_for_review(server: FakeProviderServer) -> None:
    code, out, err = grade(REFUND, PASS, REFUND / "fail-second-refund.json", "--jury",
                           "openai:judge-a,openai:judge-b", "--base-url",
                           server.openai_base_url, "--format", "json")
    assert code == 1, err
    data = json.loads(out)
    vetoed = [v for v in data["verdicts"] if v["overruled"]]
    assert vetoed and all(v["route_reason"] == "veto" for v in vetoed)
    reviewed = [v for v in data["verdicts"] if v["route_reason"] == "jury split"]
    assert data["summary"]["jury_splits"] == len(reviewed) == len(data["verdicts"]) - len(vetoed)


def test_a_typo_in_the_jury_rubrics_is_refused_not_ignored(
        server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_JURY_RUBRICS", "scope_fidelty")
    code, _, err = grade(REFUND, PASS, "--jury", "openai:judge-a,openai:judge-b",
                         "--base-url", server.openai_base_url)
    assert code == 2 and "'scope_fidelty' is not one being graded" in err
    assert server.generation_count == 0


def test_two_juries_never_share_a_calibration_file() -> None:
    from judge.calibration.record import record_path

    a = parse_jury("jury[mean]:anthropic:claude-3*5+openai:gpt-4.1").name
    b = parse_jury("jury[mean]:anthropic:claude-3-5+openai:gpt-4.1").name
    assert record_path("c", "scope_fidelity", "v3", a) != record_path("c", "scope_fidelity",
                                                                      "v3", b)
    # a single model's file keeps its name (committed records stay where they are)
    assert record_path("c", "r", "v3", "openai:gpt-4.1").name == "v3__openai-gpt-4.1.json"


def test_a_count_given_as_true_in_the_config_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "judge.toml").write_text("[judge]\nsamples = true\n")
    with pytest.raises(ConfigError, match=r"field 'samples'.*not true/false"):
        Settings.load(environ={}, cwd=tmp_path)
