"""Observability and operations credentials: Datadog, New Relic, Grafana, Sentry, PagerDuty.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import B62, B64, HEX, fake
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID, UUID_UPPER, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # Grafana service account tokens "glsa_" + 32 + "_" + 8 hex; Grafana Cloud tokens "glc_".
    # https://grafana.com/docs/grafana/latest/administration/service-accounts/
    LeakRule(
        "grafana-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        r"|glc_[A-Za-z0-9+/]{32,400}={0,2})(?:[^A-Za-z0-9_+/=-]|$)",
        r"glsa_|glc_",
        reject_fake,
        family="observability",
        examples=(
            f"glsa_{fake(B62, 32, 'gr1')}_{fake(HEX, 8, 'gr2')}",
            f"GRAFANA=glc_{fake(B64, 60, 'gr3')}==",
        ),
        near_misses=("Service account tokens start glsa_ and cloud tokens glc_.", "glc_short"),
        shape="`glsa_` + 32 + `_` + 8 hex, `glc_` + base64",
    ),
    # Sentry auth tokens: org tokens "sntrys_" + base64 JSON, user tokens "sntryu_" + 64 hex.
    # https://docs.sentry.io/account/auth-tokens/
    LeakRule(
        "sentry-auth-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>sntrys_[A-Za-z0-9+/=_]{60,400}|sntryu_[a-f0-9]{64})"
        r"(?:[^A-Za-z0-9_+/=-]|$)",
        r"sntry[su]_",
        family="observability",
        examples=(f"sntrys_{fake(B64, 90, 'se1')}", f"SENTRY=sntryu_{fake(HEX, 64, 'se2')}"),
        near_misses=("Org tokens (sntrys_) replaced the old auth tokens.", "sntryu_abc"),
        shape="`sntrys_` + base64, `sntryu_` + 64 hex",
    ),
    # New Relic ingest license keys: 40 characters ending `NRAL` (a region prefix such as
    # `eu01xx` may take the first six). https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/
    LeakRule(
        "new-relic-license-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[A-Za-z0-9]{6}[a-fA-F0-9]{30}NRAL)(?:[^A-Za-z0-9_-]|$)",
        r"NRAL",
        reject_fake,
        family="observability",
        examples=(
            f"license_key: {fake(HEX, 36, 'nl1')}NRAL",
            f"NEW_RELIC_LICENSE_KEY=eu01xx{fake(HEX, 30, 'nl2')}NRAL",
        ),
        near_misses=(
            "License keys end in NRAL.",
            f"{fake(HEX, 30, 'nl3')}NRAL",
        ),
        shape="36 (hex) + `NRAL`",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("new-relic-api-key", "observability", ["NRAK-"], R("upper", 27)),
    token("new-relic-browser-key", "observability", ["NRJS-"], R("hex", 19)),
    token("new-relic-insert-key", "observability", ["NRII-"], R("url", 32)),
    token("grafana-api-key", "observability", ["eyJrIjoi"], R("b62", 70, 400)),
    token("postman-api-key", "observability", ["PMAK-"], R("hex", 24), "-", R("hex", 34)),
    token("dynatrace-api-token", "observability", ["dt0c01."], R("upper", 24), ".",
          R("upper", 64)),
    token("dynatrace-platform-token", "observability", ["dt0s16."], R("upper", 24), ".",
          R("upper", 64)),
    token("honeycomb-ingest-key", "observability", ["hcaik_"], R("lower", 58)),
    token("honeycomb-config-key", "observability", ["hcxik_", "hcxlk_", "hcamk_"],
          R("lower", 58)),
    token("axiom-token", "observability", ["xaat-", "xapt-"], *UUID),
    token("posthog-personal-key", "observability", ["phx_"], R("b62", 43, 47)),
    token("launchdarkly-key", "observability", ["api-", "sdk-"], *UUID),
    token("new-relic-admin-key", "observability", ["NRAA-"], R("hex", 27)),
    token("new-relic-query-key", "observability", ["NRIQ-"], R("url", 32)),
    token("new-relic-rest-key", "observability", ["NRRA-"], R("hex", 42)),
    token("fullstory-api-key", "observability", ["na1.", "eu1."], R("b64", 100), tail="={0,2}"),
    token("nightfall-api-key", "observability", ["NF-"], R("b62", 32)),
    token("rootly-api-key", "observability", ["rootly_"], R("hex", 64)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("sumologic-access-id", "observability", ["sumo"], "su", R("b62", 12),
          key="SUMO_ACCESS_ID"),
    keyed("sumologic-access-key", "observability", ["sumo"], R("b62", 64), key="SUMO_ACCESS_KEY"),
    keyed("datadog-api-key", "observability", ["datadog", "dd_api", "dd-api"], R("hex", 32),
          key="DD_API_KEY"),
    keyed("datadog-app-key", "observability", ["datadog", "dd_app", "dd-app"], R("hex", 40),
          key="DD_APP_KEY"),
    keyed("sentry-access-token", "observability", ["sentry"], R("hex", 64),
          key="SENTRY_AUTH_TOKEN"),
    keyed("new-relic-user-key-id", "observability", ["newrelic", "new_relic", "new-relic"],
          R("lower", 64), key="NEW_RELIC_USER_ID"),
    keyed("opsgenie-api-key", "observability", ["opsgenie"], *UUID, key="OPSGENIE_API_KEY"),
    keyed("splunk-hec-token", "observability", ["splunk"], *UUID_UPPER, key="SPLUNK_HEC_TOKEN"),
    keyed("pagerduty-api-key", "observability", ["pagerduty", "pd_token"], R("url", 20),
          key="PAGERDUTY_TOKEN"),
    keyed("launchdarkly-access-token", "observability", ["launchdarkly"], R("url", 40),
          key="LAUNCHDARKLY_ACCESS_TOKEN"),
    keyed("honeycomb-api-key", "observability", ["honeycomb"], R("b62", 22, 32),
          key="HONEYCOMB_API_KEY"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
