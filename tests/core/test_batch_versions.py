"""A batch judged under policy versions (docs/policy.md, One version per turn): a turn under the
version of its first record, a replayed record under the version it got the first time, every
outcome naming its version, the shadow judging beside and sending nothing, and nothing changed
while no bundle is published."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from schemas.records import Delivery
from streams.core.batch import BatchResult, TurnBatch
from streams.core.decision import Source
from streams.core.state import TurnState
from streams.core.versions import SETTINGS_VERSION, SWITCHES_KEY, Switches, VersionMissing
from streams.policy.apply import WorkerPolicy
from streams.policy.bundle import read_bundle
from streams.policy.follower import Held
from streams.policy.load import PolicyGates, load_policy, settings_policy
from streams.settings import GateSettings
from tests.core.test_batch import T0, Harness
from tests.core.test_progress import progress
from tests.support.samples import im_text, raw_reply, tool_call

ONE = '[default]\nfailure_notice_text = "Notice of version one."\nleak_literals = ["canary-0001"]\n'
TWO = '[default]\nfailure_notice_text = "Notice of version two."\n'
TENANTS = '[default]\n[tenant.acme]\nleak_literals = ["acme-secret-77"]\n'


class Versioned(Harness):
    """The batch harness with a worker's policy: the settings file until `hold` switches it."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.tmp = tmp
        base = self.settings.group(GateSettings)
        self.base = base
        self.policy = WorkerPolicy(PolicyGates(settings_policy(base), self.gate.files), None)
        self.batch = TurnBatch(
            self.gate,
            lambda _p, key: self.stored.get(key),
            self.index,
            lambda _t, _p: self.committed,
            self.policy,
        )

    def gates(self, text: str, name: str) -> PolicyGates:
        path = self.tmp / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        return PolicyGates(load_policy(read_bundle(path), self.base), self.gate.files)

    def hold(self, active: PolicyGates | None, shadow: PolicyGates | None = None) -> None:
        """What `at_batch_boundary` does with what the follower took."""
        self.policy._hold(Held(active, shadow))


@pytest.fixture
def v(tmp_path: Path) -> Versioned:
    return Versioned(tmp_path)


def versions(result: BatchResult) -> list[str | None]:
    return [
        orjson.loads(s.decision.line_json())["output"].get("policy_version") for s in result.sends
    ]


def invalid(**changes: object) -> dict[str, object]:
    return raw_reply(output={"text": "prose, not the contract"}, **changes)


def test_without_a_bundle_nothing_changes(v: Versioned, tmp_path: Path) -> None:
    """The same records through a batch with a worker's policy and one without: the same
    bytes, the same state writes, no switches value."""
    plain = Harness(tmp_path)
    records = [
        (v.source("replies_raw", 1), raw_reply()),
        (v.source("replies_raw", 2), invalid(turn_id="t-43")),
    ]
    ours, theirs = v.run(records), plain.run(records)
    assert [s.decision.line_json() for s in ours.sends] == [
        s.decision.line_json() for s in theirs.sends
    ]
    assert [(w.key, w.value) for w in ours.writes] == [(w.key, w.value) for w in theirs.writes]
    assert SWITCHES_KEY not in v.stored and versions(ours) == [None, None]
    assert {j.version for j in ours.judged} == {SETTINGS_VERSION}


def test_every_outcome_names_the_version_that_judged_it(v: Versioned) -> None:
    one = v.gates(ONE, "one")
    v.hold(one)
    result = v.run(
        [
            (v.source("replies_raw", 1), raw_reply()),
            (v.source("replies_raw", 2), invalid(turn_id="t-43")),
        ]
    )
    assert versions(result) == [one.version, one.version]
    state = v.state("t-43")
    assert state is not None and state.policy == one.version
    switches = Switches.decode(v.stored[SWITCHES_KEY])
    assert switches.version_for(v.settings.topic("replies_raw"), 2) == one.version


def test_a_turn_is_judged_whole_under_the_version_of_its_first_record(v: Versioned) -> None:
    one, two = v.gates(ONE, "one"), v.gates(TWO, "two")
    v.hold(one)
    asked = v.run([(v.source("replies_raw", 1), invalid())])
    assert [s.decision.action for s in asked.sends] == ["request_correction"]
    v.hold(two)  # a new version at a batch boundary, the turn still pending
    failed = v.run([(v.source("replies_raw", 2), invalid(attempt=1))])
    [notice] = [s.decision.output for s in failed.sends]
    assert isinstance(notice, Delivery) and notice.kind == "failure_notice"
    assert notice.message == {
        "segments": [{"type": "text", "data": {"text": "Notice of version one."}}]
    }
    assert notice.policy_version == one.version
    # a new turn now is judged under the new version
    fresh = v.run([(v.source("replies_raw", 3), raw_reply(turn_id="t-44"))])
    assert versions(fresh) == [two.version]


def test_a_deadline_is_judged_under_its_turns_version(v: Versioned) -> None:
    one, two = v.gates(ONE, "one"), v.gates(TWO, "two")
    v.hold(one)
    v.run([(v.source("replies_raw", 1), invalid())])
    v.hold(two)
    later = T0 + timedelta(minutes=10)
    event = orjson.dumps({"turn_id": "t-42"})
    deadline = Source(v.settings.deadline_topic(), 0, 1, later, b"c-7")
    result = v.run([(deadline, event)], wall=later)
    [notice] = [s.decision.output for s in result.sends]
    assert isinstance(notice, Delivery) and "version one" in notice.preview
    assert notice.policy_version == one.version
    [judged] = result.judged
    assert judged.version == one.version and judged.turn is not None


def test_a_replayed_record_that_wrote_no_state_keeps_its_first_version(v: Versioned) -> None:
    one, two = v.gates(ONE, "one"), v.gates(TWO, "two")
    v.hold(one)
    record = (v.source("replies_raw", 5), b"not json, a dead letter that writes no turn state")
    first = v.run([record])
    assert versions(first) == [one.version] and v.state() is None
    v.hold(two)  # the crash: the record is read again by a worker under the new version
    again = v.run([record])
    assert [s.decision.line_json() for s in again.sends] == [
        s.decision.line_json() for s in first.sends
    ]
    later = v.run([(v.source("replies_raw", 6), b"not json either")])
    assert versions(later) == [two.version]


def test_a_turn_begun_under_the_settings_file_stays_under_it(v: Versioned) -> None:
    v.run([(v.source("replies_raw", 1), invalid())])
    state = v.state()
    assert state is not None and state.policy is None and state.version == SETTINGS_VERSION
    v.hold(v.gates(TWO, "two"))
    result = v.run([(v.source("replies_raw", 2), invalid(attempt=1))])
    [notice] = [s.decision.output for s in result.sends]
    assert isinstance(notice, Delivery) and notice.policy_version is None
    assert "Notice of version two." not in notice.preview


def test_a_version_not_loaded_stops_the_batch_until_it_is(v: Versioned) -> None:
    one, two = v.gates(ONE, "one"), v.gates(TWO, "two")
    v.hold(one)
    v.run([(v.source("replies_raw", 1), invalid())])
    v.policy._older.clear()
    v.hold(two)
    v.policy._older.clear()  # as if the worker restarted: only the active version is loaded
    with pytest.raises(VersionMissing) as missing:
        v.run([(v.source("replies_raw", 2), invalid(attempt=1))])
    assert missing.value.version == one.version
    v.policy._lost.add(one.version)  # nowhere on the topic: judged under the active one
    result = v.run([(v.source("replies_raw", 2), invalid(attempt=1))])
    assert versions(result) == [two.version]


def test_the_shadow_judges_beside_and_sends_nothing(v: Versioned) -> None:
    one = v.gates(ONE, "one")
    v.hold(v.gates(TWO, "two"), shadow=one)
    leaking = raw_reply(
        output={"text": im_text([{"type": "text", "data": {"text": "id canary-0001"}}])}
    )
    result = v.run([(v.source("replies_raw", 1), leaking)])
    [sent] = [s.decision.output for s in result.sends]
    assert isinstance(sent, Delivery) and "canary-0001" in orjson.dumps(sent.message).decode()
    [judged] = result.judged
    assert judged.shadow is not None
    version, shadow = judged.shadow
    assert version == one.version and [h.rule for h in shadow.masked] == ["literal"]


def test_each_tenant_is_judged_with_its_own_literals(v: Versioned) -> None:
    v.hold(v.gates(TENANTS, "tenants"))
    text = raw_reply(
        output={"text": im_text([{"type": "text", "data": {"text": "acme-secret-77"}}])}
    )
    acme = v.source("replies_raw", 1)
    acme = type(acme)(acme.topic, acme.partition, acme.offset, acme.timestamp, acme.key, (), "acme")
    other = v.source("replies_raw", 2)
    result = v.run([(acme, text), (other, {**text, "turn_id": "t-43"})])
    shown = [orjson.dumps(s.decision.output.message).decode() for s in result.sends]  # type: ignore[union-attr]
    assert "acme-secret-77" not in shown[0] and "acme-secret-77" in shown[1]
    assert [j.tenant for j in result.judged] == ["acme", None]
    state = v.state("t-42")
    assert state is not None and state.tenant == "acme"


def test_a_stored_value_without_a_version_reads_as_the_settings_file() -> None:
    state = TurnState("pending", "replies.raw:0:1", "2026-11-30T12:00:00.000Z")
    assert b"policy" not in state.encode() and state.version == SETTINGS_VERSION
    kept = TurnState(
        "finished",
        "replies.raw:0:1",
        "2026-11-30T12:00:00.000Z",
        policy="sha256:" + "1" * 64,
        tenant="a",
    )
    assert TurnState.decode(kept.encode()) == kept


def test_a_tool_calls_replay_re_sends_its_result_with_its_first_version(v: Versioned) -> None:
    one = v.gates(ONE, "one")
    v.hold(one)
    call = (v.source("toolcalls_raw", 1), tool_call())
    first = v.run([call])
    assert versions(first) == [one.version]
    v.hold(v.gates(TWO, "two"))
    again = v.run([call])
    assert again.replayed == 1
    assert [s.decision.line_json() for s in again.sends] == [
        s.decision.line_json() for s in first.sends
    ]
    assert [j.version for j in again.judged] == [one.version]


def test_the_shadow_judges_a_tool_call_too_and_sends_nothing(v: Versioned) -> None:
    one = v.gates(ONE, "one")
    v.hold(v.gates(TWO, "two"), shadow=one)
    result = v.run(
        [
            (
                v.source("toolcalls_raw", 1),
                tool_call(
                    {
                        "version": 1,
                        "title": "canary-0001",
                        "blocks": [{"type": "metrics", "items": [{"label": "a", "value": "1"}]}],
                    }
                ),
            )
        ]
    )
    assert len(result.sends) == 1 and "canary-0001" in result.sends[0].decision.line_json().decode()
    [judged] = result.judged
    assert judged.shadow is not None and judged.shadow[0] == one.version
    assert "canary-0001" not in judged.shadow[1].line_json().decode()


def test_a_lost_version_is_looked_for_again_after_a_switch(v: Versioned) -> None:
    one, two = v.gates(ONE, "one"), v.gates(TWO, "two")
    v.policy._lost.add(one.version)
    assert v.policy.judging(one.version) == v.policy.active
    v.hold(two)
    with pytest.raises(VersionMissing):
        v.policy.judging(one.version)


def test_a_turn_whose_progress_came_before_a_switch_ends_under_that_version(
    v: Versioned,
) -> None:
    one, two = v.gates(ONE, "one"), v.gates(TWO, "two")
    v.hold(one)
    first = v.run([(v.source("replies_raw", 1), progress(seq=0))])
    assert versions(first) == [one.version]
    state = v.state()
    assert state is not None and (state.status, state.policy) == ("open", one.version)
    v.hold(two)
    result = v.run(
        [(v.source("replies_raw", 2), progress(seq=1)), (v.source("replies_raw", 3), invalid())]
    )
    assert versions(result) == [one.version, one.version]
    again = v.run([(v.source("replies_raw", 1), progress(seq=0))])  # a replay
    assert [s.decision.line_json() for s in again.sends] == [
        s.decision.line_json() for s in first.sends
    ]


def test_without_a_bundle_progress_keeps_no_state(v: Versioned) -> None:
    result = v.run([(v.source("replies_raw", 1), progress(seq=0))])
    assert result.writes == [] and versions(result) == [None]


def test_a_batch_thrown_away_for_a_version_leaves_what_it_would_expire_filed(
    v: Versioned,
) -> None:
    """A run that raises VersionMissing writes nothing; the finished turns its expiry took
    from the index are filed again, so the run judged again still tombstones them."""
    one, two = v.gates(ONE, "one"), v.gates(TWO, "two")
    v.hold(one)
    v.run([(v.source("replies_raw", 1), raw_reply(turn_id="t-old"))])
    v.run([(v.source("replies_raw", 2), invalid())])
    v.policy._older.clear()
    v.hold(two)
    v.policy._older.clear()  # only the active version is loaded: the next run stops
    late = T0 + timedelta(days=30)
    again = [(v.source("replies_raw", 3, late), invalid(attempt=1))]
    with pytest.raises(VersionMissing):
        v.run(again)
    v.policy._lost.add(one.version)
    result = v.run(again, apply=False)
    assert result.expired == 1
    assert [w.value for w in result.writes if w.key == b"t-old"] == [None]
