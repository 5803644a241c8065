"""The policy metrics: at most the two live versions as labels, bounded disagreement labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from streams.policy.metrics import PolicyMetrics

A, B, C = ("sha256:" + c * 64 for c in "abc")


def exported(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def test_a_replaced_version_leaves_the_info_series() -> None:
    registry = CollectorRegistry()
    metrics = PolicyMetrics(registry, platforms=["im"], contracts=["im.segments.v1"])
    metrics.held("active", A)
    metrics.held("shadow", B)
    metrics.held("active", C)
    metrics.held("shadow", None)
    text = exported(registry)
    assert f'replygate_policy_info{{role="active",version="{C}"}} 1.0' in text
    assert A not in text and B not in text


def test_disagreement_labels_are_allow_listed() -> None:
    registry = CollectorRegistry()
    metrics = PolicyMetrics(registry, platforms=["im"], contracts=["im.segments.v1"])
    metrics.disagreement("im", "im.segments.v1", "masking")
    metrics.disagreement("made-up-platform", "x.v1", "mood")
    metrics.refused()
    text = exported(registry)
    assert (
        'replygate_policy_shadow_disagreements_total{contract="im.segments.v1",kind="masking",'
        'platform="im"} 1.0' in text
    )
    assert 'contract="other",kind="other",platform="other"} 1.0' in text
    assert "replygate_policy_refused_total 1.0" in text


def test_a_worker_without_a_bundle_reports_the_settings_file() -> None:
    from streams.broker.topology import Topology
    from streams.files.stage import DiskFiles
    from streams.policy.follower import PolicyFollower
    from streams.policy.topic import StatusReport, status_lines
    from streams.settings import FileSettings, GateSettings, Settings

    registry = CollectorRegistry()
    metrics = PolicyMetrics(registry, platforms=["im"], contracts=[])
    settings = Settings()
    files = DiskFiles.from_settings(settings.group(FileSettings))
    follower = PolicyFollower(
        settings, Topology.of(settings), settings.group(GateSettings), files, "w-9", metrics
    )
    assert 'replygate_policy_info{role="active",version="settings"} 1.0' in exported(registry)
    report = follower.report()
    assert StatusReport.from_bytes(report.to_bytes()) == report
    assert report.active == "settings" and report.shadow is None
    (line,) = [
        line
        for line in status_lines({}, {"w-9": report.to_bytes()}, report.reported_at)
        if line.startswith("worker")
    ]
    assert line.startswith("worker   w-9 active settings shadow - refused 0")
