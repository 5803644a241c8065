"""Productivity, CMS and SaaS credentials: Linear, Notion, Airtable, Figma, HubSpot.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import B62, fake
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID, UUID_UPPER, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # MaxMind license keys: 6 + `_` + 29 base62 + `_mmk`.
    # https://support.maxmind.com/hc/en-us/articles/4407111582235-Generate-a-License-Key
    LeakRule(
        "maxmind-license-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?:[^A-Za-z0-9_-]|$)",
        r"_mmk",
        reject_fake,
        family="productivity",
        examples=(
            f"MAXMIND_LICENSE_KEY={fake(B62, 6, 'mm1')}_{fake(B62, 29, 'mm2')}_mmk",
            f"geoipupdate with {fake(B62, 6, 'mm3')}_{fake(B62, 29, 'mm4')}_mmk as the key",
        ),
        near_misses=(
            "License keys end in _mmk.",
            f"{fake(B62, 6, 'mm5')}_{fake(B62, 28, 'mm6')}_mmk",
        ),
        shape="6 base62 + `_` + 29 base62 + `_mmk`",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("linear-api-key", "productivity", ["lin_api_"], R("b62", 40)),
    token("notion-token", "productivity", ["ntn_"], R("b62", 40, 50)),
    token("airtable-pat", "productivity", ["pat"], R("b62", 14), ".", R("hex", 64)),
    token("clickup-token", "productivity", ["pk_"], R("digits", 6, 9), "_", R("upper", 32)),
    token("typeform-token", "productivity", ["tfp_"], R("url", 59)),
    token("figma-pat", "productivity", ["figd_"], R("url", 40)),
    token("dropbox-short-lived-token", "productivity", ["sl."], R("url", 135, 140)),
    token("hubspot-private-app-token", "productivity", ["pat-na1-", "pat-eu1-"], *UUID),
    token("contentful-pat", "productivity", ["CFPAT-"], R("url", 43)),
    token("adobe-client-secret", "productivity", ["p8e-"], R("b62", 32)),
    token("asana-pat", "productivity", ["2/"], R("digits", 16), "/", R("digits", 16), ":",
          R("hex", 32)),
    token("mapbox-secret-token", "productivity", ["sk.eyJ1Ijoi"], R("url", 40, 120), ".",
          R("url", 22)),
    token("frameio-api-token", "productivity", ["fio-u-"], R("url", 64)),
    token("chieftools-token", "productivity", ["ctp_", "cto_", "ctr_"], R("b62", 30, 248)),
    token("linear-oauth-token", "productivity", ["lin_oauth_"], R("hex", 64)),
    token("notion-integration-secret", "productivity", ["secret_"], R("b62", 43)),
    token("zoho-access-token", "productivity", ["1000."], R("hex", 32), ".", R("hex", 32)),
    token("ionic-api-token", "productivity", ["ion_"], R("b62", 42)),
    token("segment-api-token", "productivity", ["sgp_"], R("b62", 64)),
    token("postman-collection-key", "productivity", ["PMAT-"], R("upper", 26)),
    token("fleetbase-api-key", "productivity", ["flb_live_", "flb_test_"], R("b62", 20)),
    # Salesforce session ids (`00D` + org id + `!` + opaque) and refresh tokens (`5Aep861`).
    token("salesforce-access-token", "productivity", ["00D"], R("b62", 12, 15), "!",
          R("sfdc", 80, 200)),
    token("salesforce-refresh-token", "productivity", ["5Aep861"], R("sfdc", 70, 200)),
    token("figma-pat-v2", "productivity", ["figp_"], R("url", 40, 54)),
    token("apify-api-token", "productivity", ["apify_api_"], R("b62", 36)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("algolia-api-key", "productivity", ["algolia"], R("hex", 32), key="ALGOLIA_API_KEY"),
    # Airtable's legacy API keys: `key` + 14 base62, read beside the vendor's name.
    keyed("airtable-api-key", "productivity", ["airtable"], "key", R("b62", 14),
          key="AIRTABLE_API_KEY"),
    keyed("asana-client-secret", "productivity", ["asana"], R("lower", 32),
          key="ASANA_CLIENT_SECRET"),
    keyed("contentful-delivery-token", "productivity", ["contentful"], R("url", 43),
          key="CONTENTFUL_DELIVERY_TOKEN"),
    keyed("dropbox-api-token", "productivity", ["dropbox"], R("lower", 15),
          key="DROPBOX_APP_SECRET"),
    keyed("dropbox-long-lived-token", "productivity", ["dropbox"], R("lower", 11),
          "AAAAAAAAAA", R("url", 43), key="DROPBOX_TOKEN"),
    keyed("etsy-access-token", "productivity", ["etsy"], R("lower", 24), key="ETSY_API_KEY"),
    keyed("freshbooks-token", "productivity", ["freshbooks"], R("lower", 64),
          key="FRESHBOOKS_TOKEN"),
    keyed("hubspot-api-key", "productivity", ["hubspot"], *UUID_UPPER, key="HUBSPOT_API_KEY"),
    keyed("intercom-api-key", "productivity", ["intercom"], R("url", 60),
          key="INTERCOM_ACCESS_TOKEN"),
    keyed("linear-client-secret", "productivity", ["linear"], R("hex", 32),
          key="LINEAR_CLIENT_SECRET"),
    keyed("looker-client-secret", "productivity", ["looker"], R("b62", 24),
          key="LOOKER_CLIENT_SECRET"),
    keyed("squarespace-token", "productivity", ["squarespace"], *UUID,
          key="SQUARESPACE_API_KEY"),
    keyed("typeform-api-key", "productivity", ["typeform"], R("url", 44), key="TYPEFORM_KEY"),
    keyed("zendesk-secret-key", "productivity", ["zendesk"], R("b62", 40), key="ZENDESK_TOKEN"),
    keyed("nytimes-api-key", "productivity", ["nytimes", "newyorktimes"], R("url", 32),
          key="NYTIMES_API_KEY"),
    keyed("rapidapi-key", "productivity", ["rapidapi", "x-rapidapi-key"], R("url", 50),
          key="RAPIDAPI_KEY"),
    keyed("flickr-api-key", "productivity", ["flickr"], R("lower", 32), key="FLICKR_API_KEY"),
    keyed("beamer-api-token", "productivity", ["beamer"], "b_", R("url", 44),
          key="BEAMER_API_KEY"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
