#!/usr/bin/env python3
"""Write base/prometheusrule.yaml from ../prometheus/alerts.yml: one source for the alert rules.

Run after editing alerts.yml: `python deploy/k8s/sync-prometheusrule.py`
(tests/deploy/test_deploy.py fails while the two differ).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ALERTS = HERE.parent / "prometheus" / "alerts.yml"
TARGET = HERE / "base" / "prometheusrule.yaml"
HEADER = (
    "# Generated from deploy/prometheus/alerts.yml by deploy/k8s/sync-prometheusrule.py:\n"
    "# edit alerts.yml, then run the script (tests/deploy/test_deploy.py compares the two).\n"
    "# The Prometheus Operator picks rules by its ruleSelector: add its label in your overlay.\n"
)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def render(alerts: dict[str, Any]) -> str:
    """The PrometheusRule manifest text for an alerts.yml document."""
    doc = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "replygate", "labels": {"app.kubernetes.io/component": "alerts"}},
        "spec": {"groups": alerts["groups"]},
    }

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(str, _str)
    body = yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=1000, allow_unicode=True)
    return HEADER + body


def main() -> int:
    TARGET.write_text(render(yaml.safe_load(ALERTS.read_text(encoding="utf-8"))), "utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
