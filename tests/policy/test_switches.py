"""A partition's policy switches: the version a replayed record got the first time."""

from __future__ import annotations

import pytest

from streams.policy.switches import MAX_SWITCHES, SWITCHES_KEY, Switches

V1, V2, V3 = "sha256:" + "1" * 64, "sha256:" + "2" * 64, "sha256:" + "3" * 64


def test_a_replayed_record_gets_the_version_that_judged_it() -> None:
    switches = Switches()
    assert switches.version_for("replies.raw", 5) is None  # nothing noted: the one in force
    switches.applied(V1)
    assert switches.judged("replies.raw", 10) and switches.judged("turns.control", 3)
    assert not switches.judged("replies.raw", 11)  # not the first under V1
    switches.applied(V2)
    switches.judged("replies.raw", 20)
    assert switches.version_for("replies.raw", 10) == V1
    assert switches.version_for("replies.raw", 19) == V1
    assert switches.version_for("replies.raw", 20) == V2
    assert switches.version_for("turns.control", 7) == V1  # no control record under V2 yet
    assert switches.version_for("replies.raw", 9) is None  # before any noted switch
    assert not switches.applied(V2)


def test_a_value_survives_the_changelog_and_junk_is_no_switch() -> None:
    switches = Switches()
    switches.applied(V1)
    switches.judged("replies.raw", 4)
    again = Switches.decode(switches.encode())
    assert again.version_for("replies.raw", 4) == V1
    assert Switches.decode(b"not json").entries == []
    assert Switches.decode(b'[{"v": 1}]').entries == []
    assert Switches.decode(None).entries == []
    with pytest.raises(UnicodeDecodeError):  # no turn id (text) encodes to the reserved key
        SWITCHES_KEY.decode("utf-8")


def test_switches_no_replay_can_reach_are_released() -> None:
    switches = Switches()
    switches.applied(V1)
    switches.judged("replies.raw", 1)
    switches.applied(V2)
    switches.judged("replies.raw", 10)
    switches.judged("turns.control", 5)
    switches.applied(V3)  # nothing judged under it yet
    committed = {"replies.raw": 11, "turns.control": 5}
    assert not switches.released(committed.get)  # control offset 5 not committed past
    committed["turns.control"] = 6
    assert switches.released(committed.get)
    assert [e.version for e in switches.entries] == [V2, V3]
    assert switches.version_for("replies.raw", 10) == V2


def test_a_flood_of_versions_keeps_a_bounded_value() -> None:
    switches = Switches()
    for n in range(MAX_SWITCHES + 10):
        switches.applied(f"sha256:{n:064d}")
    assert len(switches.entries) == MAX_SWITCHES
