"""Which policy version judges a record: the turn's, a replay's first, else the active one; and
a partition's switches, the durable value a replayed record finds its first version in."""

from __future__ import annotations

import pytest

from streams.core.versions import (
    MAX_SWITCHES,
    SETTINGS_VERSION,
    SWITCHES_KEY,
    Switches,
    choose_version,
)

V1, V2, V3 = "sha256:" + "1" * 64, "sha256:" + "2" * 64, "sha256:" + "3" * 64
R, C = "replies.raw", "turns.control"


@pytest.mark.parametrize(
    ("turn", "replayed", "active", "chosen"),
    [
        (V1, V2, V3, V1),  # the turn's first record decided: always
        (SETTINGS_VERSION, None, V3, SETTINGS_VERSION),  # a turn begun before any bundle
        (None, V2, V3, V2),  # a replay of a record that wrote no turn state
        (None, None, V3, V3),
    ],
)
def test_the_turn_then_the_first_judgement_then_the_active_version(
    turn: str | None, replayed: str | None, active: str, chosen: str
) -> None:
    assert choose_version(turn, replayed, active) == chosen


def test_a_replayed_record_gets_the_version_that_judged_it() -> None:
    switches = Switches()
    assert switches.version_for(R, 5) is None  # nothing judged: a new record
    assert switches.judged(V1, R, 10) and switches.judged(V1, C, 3)
    assert switches.judged(V1, R, 11)
    assert not switches.judged(V1, R, 11)  # judged already: nothing to write
    assert switches.judged(V2, R, 20)
    assert switches.version_for(R, 10) == V1
    assert switches.version_for(R, 11) == V1
    assert switches.version_for(R, 20) == V2
    assert switches.version_for(C, 3) == V1
    # a control record not judged yet is new, whatever versions its topic saw before
    assert switches.version_for(C, 4) is None
    assert switches.version_for(R, 21) is None


def test_a_value_survives_the_changelog_and_junk_is_no_switch() -> None:
    switches = Switches()
    switches.judged(V1, R, 4)
    again = Switches.decode(switches.encode())
    assert again.version_for(R, 4) == V1
    assert again.version_for(R, 5) is None
    for junk in (b"not json", b'[{"v": 1}]', b'[{"v": "x", "u": {"t": "7"}}]', b"{}", b"[1]"):
        assert Switches.decode(junk).entries == []
    assert Switches.decode(None).entries == []
    with pytest.raises(UnicodeDecodeError):  # no turn id (text) encodes to the reserved key
        SWITCHES_KEY.decode("utf-8")


def test_versions_no_replay_can_reach_are_released() -> None:
    switches = Switches()
    switches.judged(V1, R, 1)
    switches.judged(V2, R, 10)
    switches.judged(V2, C, 5)
    switches.judged(V3, R, 11)
    assert not switches.released({R: 1}.get)  # offset 1 not committed past: V1 stays
    assert switches.released({R: 11, C: 5}.get)  # V1 goes; V2's control offset 5 stays
    assert [e.version for e in switches.entries] == [V2, V3]
    assert switches.released({R: 11, C: 6}.get)
    assert [e.version for e in switches.entries] == [V3]  # the newest always stays
    assert not switches.released({R: 100, C: 100}.get)


def test_a_flood_of_versions_keeps_a_bounded_value() -> None:
    switches = Switches()
    for n in range(MAX_SWITCHES + 10):
        switches.judged(f"sha256:{n:064d}", R, n)
    assert len(switches.entries) == MAX_SWITCHES
    assert switches.entries[0].version == f"sha256:{10:064d}"  # the oldest went
