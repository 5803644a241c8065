"""Credentials a URL carries: the password of its userinfo, a credential-named query
parameter, and the secret path of an automation webhook.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses. A value
is masked whole, percent-escapes and all (`Str0ngP%40ssw0rd`), and never past the `&`, `#` or
quote that ends it in its URL.
"""

from __future__ import annotations

import re
from typing import Final

from streams.core.leak_rules.filters import is_placeholder, looks_fake, reject_fake
from streams.core.leak_rules.pieces import B62, HEX, LOWER, URL, fake
from streams.core.leak_rules.rule import LeakRule

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]


def _reject_url_password(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret)


# Query parameters that name a credential, as services spell them.
_QUERY_NAMES: Final = (
    r"(?i:(?:access|refresh|id|auth|api|app|bot|private|personal|session|client|oauth|bearer"
    r"|security|secret|upload|install|webhook|device|write|read|master|service)[_-]?token"
    r"|token|api[_-]?key|apikey|app[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key"
    r"|client[_-]?secret|app[_-]?secret|secret|key|password|passwd|pwd|pass|auth|sig"
    r"|signature|jwt|session[_-]?id|sessionid|sid|access_?code|license[_-]?key)"
)
# Names whose value may be a human-chosen password: any value of 4+ characters is one.
_PASSWORD_NAME = re.compile(r"(?i)(?:password|passwd|pwd|pass)=$")
# A route parameter or template where a value would go (`:token`, `{token}`, `%7Btoken%7D`).
_TEMPLATE_START = (":", "{", "%7B", "%7b", "$", "<", "%3C", "%3c", "[")


def _reject_query_value(secret: str, before: str, _after: str) -> bool:
    """A query value is a credential when it looks issued (8+ characters mixing letters and
    digits, or 20+), or is any non-placeholder after a password name."""
    if is_placeholder(secret) or looks_fake(secret) or secret.startswith(_TEMPLATE_START):
        return True
    if _PASSWORD_NAME.search(before) is not None:
        return len(secret) < 4
    has_digit = any(c.isdigit() for c in secret)
    has_alpha = any(c.isalpha() for c in secret)
    return not ((has_digit and has_alpha and len(secret) >= 8) or len(secret) >= 20)


SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # Zapier catch hooks: https://hooks.zapier.com/hooks/catch/<account>/<hook id>/; whoever has
    # the URL starts the Zap. https://help.zapier.com/hc/en-us/articles/8496288690317
    LeakRule(
        "zapier-webhook",
        r"hooks\.zapier\.com/hooks/(?:catch|standard)/[0-9]{3,12}/(?P<secret>[A-Za-z0-9]{5,32})"
        r"(?:[^A-Za-z0-9]|$)",
        r"hooks\.zapier\.com/hooks/",
        reject_fake,
        family="url",
        examples=(
            f"curl -X POST https://hooks.zapier.com/hooks/catch/{fake('0123456789', 7, 'zp1')}"
            f"/{fake(LOWER, 7, 'zp2')}3/ -d name=Ana",
            f"ZAP=https://hooks.zapier.com/hooks/catch/{fake('0123456789', 8, 'zp3')}"
            f"/{fake(B62, 6, 'zp4')}/",
        ),
        near_misses=(
            "Zapier gives you a URL like https://hooks.zapier.com/hooks/catch/123/abc/ to POST to.",
            "https://hooks.zapier.com/hooks/catch/<account>/<hook>/",
        ),
        shape="`hooks.zapier.com/hooks/catch/<account>/` + hook id",
    ),
    # IFTTT Webhooks service: .../trigger/<event>/with/key/<key> (and /json/with/key/, /use/).
    # https://ifttt.com/maker_webhooks
    LeakRule(
        "ifttt-webhook",
        r"maker\.ifttt\.com/(?:trigger/[A-Za-z0-9_.-]{1,64}/(?:json/)?with/key|use)/"
        r"(?P<secret>[A-Za-z0-9_-]{16,64})",
        r"maker\.ifttt\.com/",
        reject_fake,
        family="url",
        examples=(
            f"https://maker.ifttt.com/trigger/door_open/with/key/{fake(URL, 22, 'if1')}",
            f"requests.post('https://maker.ifttt.com/trigger/alert/json/with/key/"
            f"{fake(URL, 43, 'if2')}')",
        ),
        near_misses=(
            "https://maker.ifttt.com/trigger/{event}/with/key/{your_key}",
            "See maker.ifttt.com/use/ for your key.",
        ),
        shape="`maker.ifttt.com/trigger/<event>/with/key/` + key",
    ),
    # Make (Integromat) custom webhooks: https://hook.<zone>.make.com/<32 lower>.
    # https://www.make.com/en/help/tools/webhooks
    LeakRule(
        "make-webhook",
        r"hook\.(?:[a-z0-9]{2,8}\.)?(?:make|integromat)\.com/(?P<secret>[a-z0-9]{32})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"hook\.[a-z0-9.]*(?:make|integromat)\.com/",
        reject_fake,
        family="url",
        examples=(
            f"https://hook.eu1.make.com/{fake(LOWER, 32, 'mk1')}",
            f"POST to https://hook.us1.make.com/{fake(LOWER, 32, 'mk2')}?source=crm",
        ),
        near_misses=(
            "https://hook.eu1.make.com/<webhook-id>",
            "Make webhooks live under hook.eu1.make.com/ and hook.us1.make.com/.",
        ),
        shape="`hook.<zone>.make.com/` + 32 lower",
    ),
    # Tines webhooks: https://<tenant>.tines.com/webhook/<path>/<secret> (32 lower each).
    # https://www.tines.com/docs/actions/types/webhook
    LeakRule(
        "tines-webhook",
        r"\.tines\.com/webhook/[a-z0-9]{32}/(?P<secret>[a-z0-9]{32})(?:[^A-Za-z0-9_-]|$)",
        r"\.tines\.com/webhook/",
        reject_fake,
        family="url",
        examples=(
            f"https://acme-1234.tines.com/webhook/{fake(LOWER, 32, 'ti1')}"
            f"/{fake(LOWER, 32, 'ti2')}",
            f"curl -X POST 'https://sec.tines.com/webhook/{fake(LOWER, 32, 'ti3')}"
            f"/{fake(LOWER, 32, 'ti4')}' -d '{{}}'",
        ),
        near_misses=(
            "https://acme.tines.com/webhook/<path>/<secret>",
            f"https://acme.tines.com/webhook/{fake(LOWER, 32, 'ti5')}/{'x' * 32}",
        ),
        shape="`<tenant>.tines.com/webhook/<path>/` + 32 lower",
    ),
)

TOKENS: Final[tuple[LeakRule, ...]] = ()

KEYED: Final[tuple[LeakRule, ...]] = ()

# Secrets known by their context alone: listed last, so a specific rule names a span both match.
CONTEXT: Final[tuple[LeakRule, ...]] = (
    # URLs with a password in the userinfo (RFC 3986 §3.2.1): only the password is masked, the
    # scheme, user and host stay readable. The password may contain raw "@" or ":", and
    # percent-escapes are part of it (`p%40ss` is masked whole).
    LeakRule(
        "url-credentials",
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:@/?#\[\]\"'<>]{0,128}:"
        r"(?P<secret>[^\s/?#\"'<>]{1,128})@[A-Za-z0-9\[]",
        r"://[^\s/?#]*@",
        _reject_url_password,
        family="url",
        context=True,
        examples=(
            f"postgres://admin:{fake(B62, 16, 'uc1')}@db.internal:5432/app",
            f"https://ci-bot:{fake(B62, 24, 'uc2')}@git.example.com/team/repo.git",
            f"mongodb://app:{fake(B62, 7, 'uc3')}%40{fake(B62, 6, 'uc4')}@host",
        ),
        near_misses=(
            "git clone ssh://git@github.com/org/repo.git or https://alice@example.com/a?b=c",
            "postgres://app:${DB_PASSWORD}@db:5432/app",
        ),
        shape="`scheme://user:` + password + `@host`",
    ),
    # Query parameters named for a credential (`?access_token=`, `&api_key=`, `&sig=`,
    # `&password=`), in a URL or a form body: the value, to the next `&`, `#` or quote.
    LeakRule(
        "url-query-credential",
        rf"(?:[?&]|&amp;){_QUERY_NAMES}=(?P<secret>[^&#\s\"'`<>;\\)\]]{{4,}})",
        rf"[?&]{_QUERY_NAMES}=",
        _reject_query_value,
        family="url",
        context=True,
        examples=(
            f"curl 'https://api.example.com/v2/items?limit=5&access_token={fake(URL, 40, 'uq1')}'",
            f"wss://stream.example.io/feed?api_key={fake(HEX, 32, 'uq2')}",
            f"grant_type=password&username=ana&password={fake(B62, 10, 'uq3')}%21",
            f"https://oapi.dingtalk.com/robot/send?access_token={fake(HEX, 64, 'uq4')}",
        ),
        near_misses=(
            "GET /v1/items?access_token={token}&limit=5",
            "https://example.com/callback?token=:token&key=value&sig=abc",
            "https://api.example.com/search?key=$API_KEY&q=shoes",
            "https://example.com/reset?token=<TOKEN>",
        ),
        shape="`?token=` / `&api_key=` / `&password=` ... + value",
    ),
)
