"""A real Prometheus server scrapes a running worker: outcome counts, alert rules, bounded labels.

One worker on the shared broker gets a known mix of replies (some with secrets, all with random
turn ids); `/usr/bin/prometheus` scrapes its metrics port every second with
`deploy/prometheus/alerts.yml` loaded, and the HTTP API must show exactly the outcomes produced.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from schemas.registry import builtin_names
from streams.core.outcomes import OUTCOMES
from streams.ops.metrics import OTHER, settings_topics
from streams.policy.metrics import DISAGREEMENT_KINDS
from tests.support.gates import disk_gate
from tests.support.kafka import Deployment, collect, free_port, publish
from tests.support.samples import GITHUB_PAT, im_text, raw_reply
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "deploy" / "prometheus" / "alerts.yml"
PROMETHEUS = "/usr/bin/prometheus"
OUTCOME_QUERY = "sum by (outcome) (replygate_outcomes_total)"
CANARY = "canary-" + uuid.uuid4().hex  # a deployment's literal secret (REPLYGATE_LEAK_LITERALS)
HOSTILE_PLATFORM = "plat-" + uuid.uuid4().hex[:12]  # not in `platforms`: its label is `other`
AVAILABILITY = ("ReplygateWorkerDown", "ReplygateWorkerAbsent")
EXPECTED = {
    "delivered": 5,
    "no_reply": 2,
    "failure_notice": 3,
    "dead_letter": 1,
    "duplicate_dropped": 2,
}


def turn_id() -> str:
    return f"turn-{uuid.uuid4()}"


def the_mix() -> tuple[list[tuple[str, Any]], list[str]]:
    """(key, value) records giving EXPECTED, and every turn and conversation id used."""
    records: list[tuple[str, Any]] = []
    ids: list[str] = []

    def add(turn: str, conv: str | None = None, **changes: Any) -> str:
        conv = conv or f"conv-{uuid.uuid4()}"
        ids.extend((turn, conv))
        records.append((conv, raw_reply(turn_id=turn, conversation_id=conv, **changes)))
        return conv

    def text(words: str) -> dict[str, str]:
        return {"text": im_text([{"type": "text", "data": {"text": words}}])}

    # 5 valid: plain, a GitHub token, the canary literal, another platform, plain
    valid = [turn_id() for _ in range(5)]
    convs = [
        add(valid[0]),
        add(valid[1], output=text(f"token: {GITHUB_PAT}")),
        add(valid[2], output=text(f"the canary is {CANARY}")),
        add(valid[3], platform=HOSTILE_PLATFORM),
        add(valid[4]),
    ]
    # 2 no-reply (no segments)
    for _ in range(2):
        add(turn_id(), output={"text": im_text([])})
    # 3 invalid, then invalid again as attempt 1: the failure notice; one carries a secret
    for n in range(3):
        turn = turn_id()
        secret = f" {GITHUB_PAT}" if n == 0 else ""
        conv = add(turn, output={"text": f"prose, not JSON{secret}"})
        add(turn, conv, attempt=1, output={"text": f"still prose {CANARY}"})
    # 1 malformed record (a dead letter), with a secret in it
    bad_conv = f"conv-{uuid.uuid4()}"
    ids.append(bad_conv)
    records.append((bad_conv, b'{"turn_id": "' + turn_id().encode() + b'", ' + GITHUB_PAT.encode()))
    # 2 repeats of turns already delivered
    records.append((convs[0], raw_reply(turn_id=valid[0], conversation_id=convs[0])))
    records.append((convs[4], raw_reply(turn_id=valid[4], conversation_id=convs[4])))
    return records, ids


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def worker_outcomes(port: int) -> dict[str, float]:
    _, body = http_get(f"http://127.0.0.1:{port}/metrics")
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "replygate_outcomes_total":
                outcome = sample.labels["outcome"]
                totals[outcome] = totals.get(outcome, 0.0) + sample.value
    return totals


class Prometheus:
    """`/usr/bin/prometheus` on loopback with its own config and TSDB in a temp dir."""

    def __init__(self, tmp: Path, target_port: int) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(ALERTS)],
            # the job name the alerts (up{job="replygate"}) expect
            "scrape_configs": [
                {
                    "job_name": "replygate",
                    "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}],
                }
            ],
        }
        self.config = tmp / "prometheus.yml"
        self.config.write_bytes(orjson.dumps(config))  # JSON is YAML
        self.log = tmp / "prometheus.log"
        self.proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={self.config}",
                f"--storage.tsdb.path={tmp / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=1h",
                "--log.level=warn",
            ],
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited ({self.proc.returncode}):\n{self.log_text()}")
        try:
            return http_get(self.base + "/-/ready", timeout=2)[0] == 200
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, body = http_get(f"{self.base}/api/v1/{path}{query}")
        payload = orjson.loads(body)
        assert status == 200 and payload["status"] == "success", payload
        return payload["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector"
        result: list[dict[str, Any]] = data["result"]
        return result

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self, timeout: float = 10.0) -> float:
        """SIGTERM, then SIGKILL after `timeout`; the seconds it took."""
        started = time.monotonic()
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus died early:\n{self.log_text()}")
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
            raise AssertionError(f"prometheus ignored SIGTERM for {timeout}s") from None
        return time.monotonic() - started


def rules_settled(groups: list[dict[str, Any]]) -> bool:
    for group in groups:
        for rule in group["rules"]:
            if rule["health"] == "unknown":
                return False
            if rule["name"] in AVAILABILITY and rule["state"] != "inactive":
                return False
    return True


def by_outcome(result: list[dict[str, Any]]) -> dict[str, float]:
    return {row["metric"]["outcome"]: float(row["value"][1]) for row in result}


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("prometheus")
    assert shutil.which(PROMETHEUS) or Path(PROMETHEUS).exists(), (
        "Prometheus is installed by scripts/install-tools.sh (Debian package `prometheus`)"
    )
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    deployment = Deployment(partitions=2)
    deployment.create_topics()
    worker = deployment.start_worker(tmp, REPLYGATE_LEAK_LITERALS=orjson.dumps([CANARY]).decode())
    port: int = worker.metrics_port  # type: ignore[attr-defined]
    prometheus = Prometheus(tmp, port)
    records, ids = the_mix()
    try:
        wait_for("prometheus /-/ready", prometheus.ready, 30, poll=0.25, tolerate=(OSError,))
        timings["prometheus ready"] = time.monotonic() - t0
        asyncio.run(publish(deployment.settings(), deployment.topic("replies.raw"), records))
        want = sum(EXPECTED.values())
        wait_for(
            f"{want} outcomes on the worker's /metrics",
            lambda: sum(worker_outcomes(port).values()) >= want,
            90,
            poll=0.25,
            tolerate=(OSError,),
        )
        timings["worker processed the mix"] = time.monotonic() - t0
        promql: list[dict[str, Any]] = wait_for(
            "Prometheus to see every outcome",
            lambda: (r := prometheus.query(OUTCOME_QUERY)) and by_outcome(r) == EXPECTED and r,
            30,
            poll=0.25,
            tolerate=(OSError,),
        )
        timings["prometheus query matches"] = time.monotonic() - t0
        # the first evaluations may predate the first scrape (absent(up) pending): wait until
        # every rule was evaluated and the availability alerts saw the scraped worker
        rules = wait_for(
            "every alert rule evaluated, the availability alerts inactive",
            lambda: (g := prometheus.api("rules")["groups"]) and rules_settled(g) and g,
            30,
            poll=0.25,
            tolerate=(OSError,),
        )
        timings["alert rules settled"] = time.monotonic() - t0
        targets = prometheus.api("targets")["activeTargets"]
        up = prometheus.query('up{job="replygate"}')
        probes = {p: http_get(f"http://127.0.0.1:{port}{p}") for p in ("/livez", "/readyz")}
        exposition = http_get(f"http://127.0.0.1:{port}/metrics")[1].decode()
        outputs = [
            deployment.topic(t)
            for t in ("delivery.im", f"delivery.{HOSTILE_PLATFORM}", "replies.dlq")
        ]
        topic_records = asyncio.run(collect(outputs, lambda r: len(r) >= 9, timeout=30, settle=1))
        final_outcomes = worker_outcomes(port)
    finally:
        timings["prometheus stop"] = prometheus.stop()
        deployment.stop_all()
    print(
        f"\nGET /api/v1/query?query={OUTCOME_QUERY}\n"
        + orjson.dumps(promql, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    )
    print("timings (s since start): " + ", ".join(f"{k} {v:.2f}" for k, v in timings.items()))
    print(f"prometheus exit {prometheus.proc.returncode}; log tail:\n{prometheus.log_text()}")
    yield {
        "deployment": deployment,
        "promql": promql,
        "rules": rules,
        "targets": targets,
        "up": up,
        "probes": probes,
        "exposition": exposition,
        "ids": ids,
        "topic_records": topic_records,
        "final_outcomes": final_outcomes,
        "port": port,
    }


def test_prometheus_counts_exactly_the_outcomes_produced(scraped: dict[str, Any]) -> None:
    assert by_outcome(scraped["promql"]) == EXPECTED
    # and the worker did not count anything more after Prometheus agreed
    assert scraped["final_outcomes"] == EXPECTED


def test_the_topics_agree_with_the_metrics(scraped: dict[str, Any]) -> None:
    dlq = scraped["deployment"].topic("replies.dlq")
    kinds: dict[str, int] = {}
    for topic, _key, value in scraped["topic_records"]:
        kind = "dead_letter" if topic == dlq else orjson.loads(value)["kind"]
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds == {"reply": 5, "failure_notice": 3, "dead_letter": 1}


def test_prometheus_scrapes_the_worker_target(scraped: dict[str, Any]) -> None:
    (target,) = scraped["targets"]
    assert target["health"] == "up" and target["labels"]["job"] == "replygate"
    assert target["scrapeUrl"] == f"http://127.0.0.1:{scraped['port']}/metrics"
    (up,) = scraped["up"]
    assert up["value"][1] == "1"


def test_alert_rules_load_and_are_healthy(scraped: dict[str, Any]) -> None:
    spec = yaml.safe_load(ALERTS.read_text())
    wanted = {g["name"]: [r["alert"] for r in g["rules"]] for g in spec["groups"]}
    loaded = {g["name"]: [r["name"] for r in g["rules"]] for g in scraped["rules"]}
    assert loaded == wanted
    for group in scraped["rules"]:
        for rule in group["rules"]:
            assert rule["type"] == "alerting"
            assert rule["health"] == "ok", rule
            assert not rule.get("lastError"), rule
            # a healthy worker is being scraped: neither availability alert is pending or firing
            if rule["name"] in AVAILABILITY:
                assert rule["state"] == "inactive", rule


def test_worker_is_live_and_ready(scraped: dict[str, Any]) -> None:
    assert scraped["probes"]["/livez"] == (200, b"ok\n")
    assert scraped["probes"]["/readyz"] == (200, b"ready\n")


def test_no_turn_ids_or_secrets_in_the_exposition(scraped: dict[str, Any]) -> None:
    text = scraped["exposition"]
    assert "replygate_outcomes_total" in text
    leaked = [i for i in scraped["ids"] if i in text]
    assert not leaked, f"ids in the exposition: {leaked[:3]}"
    for secret in (GITHUB_PAT, GITHUB_PAT[:12], CANARY, HOSTILE_PLATFORM):
        assert secret not in text


def test_label_values_are_bounded(scraped: dict[str, Any]) -> None:
    settings = scraped["deployment"].settings(leak_literals=[CANARY])  # as the worker's
    allowed = {
        "outcome": set(OUTCOMES),
        "contract": set(builtin_names()),
        "platform": set(settings.platforms),
        "topic": set(settings_topics(settings)),
        "rule": set(disk_gate(settings).masker.rule_ids),
        "partition": {str(p) for p in range(settings.partitions)},
        "role": {"active", "shadow"},  # replygate_policy_info: the versions a worker holds
        "kind": set(DISAGREEMENT_KINDS),
    }
    seen: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(scraped["exposition"]):
        for sample in family.samples:
            for name, value in sample.labels.items():
                seen.setdefault(name, set()).add(value)
    for name, values in seen.items():
        if name in ("le", "version", "code", "reason"):
            continue  # bucket bounds; the package version; codes/reasons are checked below
        assert name in allowed, f"unexpected label {name}"
        assert values <= allowed[name] | {OTHER}, (name, values - allowed[name])
    # what this mix must have produced: the masked rules by id, the hostile platform as `other`
    assert {"github-pat", "literal"} <= seen["rule"]
    assert OTHER in seen["platform"]
    assert seen["code"] and all(c.replace("_", "").isalnum() and c.islower() for c in seen["code"])
