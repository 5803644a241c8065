"""E-mail service credentials: Mailgun, Mailchimp, SendGrid, Brevo, Postmark.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.pieces import HEX, fake
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # Mailgun private API keys: legacy "key-" + 32 hex; current 32 hex + "-" + 8 + "-" + 8 hex.
    # https://documentation.mailgun.com/docs/mailgun/user-manual/get-started/
    LeakRule(
        "mailgun-api-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>key-[0-9a-f]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"key-|-[0-9a-f]{8}-",
        family="email",
        examples=(
            f"MAILGUN key-{fake(HEX, 32, 'mg1')}",
            f"api: {fake(HEX, 32, 'mg2')}-{fake(HEX, 8, 'mg3')}-{fake(HEX, 8, 'mg4')}",
        ),
        near_misses=(
            "Request 123e4567-e89b-12d3-a456-426614174000 used key-rotation policy.",
            f"key-{fake(HEX, 31, 'mg5')}",
        ),
        shape="`key-` + 32 hex, 32 hex + `-` + 8 hex + `-` + 8 hex",
    ),
    # Mailchimp API keys: 32 hex + "-us" + datacenter number.
    # https://mailchimp.com/developer/marketing/guides/quick-start/
    LeakRule(
        "mailchimp-api-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[0-9a-f]{32}-us[0-9]{1,2})(?:[^A-Za-z0-9_-]|$)",
        r"-us[0-9]",
        family="email",
        examples=(
            f"mc {fake(HEX, 32, 'mc1')}-us21",
            f"MAILCHIMP_KEY={fake(HEX, 32, 'mc2')}-us6",
        ),
        near_misses=("Mailchimp keys end with a datacenter suffix like -us21.", "abc-us21"),
        shape="32 hex + `-us` + 1-2 digits",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("sendinblue-api-key", "email", ["xkeysib-"], R("hex", 64), "-", R("b62", 16)),
    token("sendinblue-smtp-key", "email", ["xsmtpsib-"], R("hex", 64), "-", R("b62", 16)),
    token("mailersend-api-key", "email", ["mlsn."], R("hex", 64)),
    token("resend-api-key", "email", ["re_"], R("b62", 8), "_", R("b62", 24)),
    token("sendgrid-api-key", "email", ["SG."], R("url", 22), ".", R("url", 43)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("postmark-server-token", "email", ["postmark"], *UUID, key="POSTMARK_SERVER_TOKEN"),
    keyed("sparkpost-api-key", "email", ["sparkpost"], R("hex", 40), key="SPARKPOST_API_KEY"),
    keyed("mandrill-api-key", "email", ["mandrill"], R("url", 22), key="MANDRILL_API_KEY"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
