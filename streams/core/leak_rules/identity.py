"""Identity providers, secrets managers and social platforms: Okta, Auth0, 1Password, Doppler, Meta.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

import string
from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import B62, HEX, UPPER, URL, fake
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # 1Password account secret keys: "A3-" + six groups of upper base32.
    # https://support.1password.com/secret-key-security/
    LeakRule(
        "onepassword-secret-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
        r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})(?:[^A-Za-z0-9_-]|$)",
        r"A3-",
        reject_fake,
        family="identity",
        examples=(
            f"secret key A3-{fake(UPPER, 6, 'op1')}-{fake(UPPER, 11, 'op2')}-"
            f"{fake(UPPER, 5, 'op3')}-{fake(UPPER, 5, 'op4')}-{fake(UPPER, 5, 'op5')}",
            f"A3-{fake(UPPER, 6, 'op6')}-{fake(UPPER, 6, 'op7')}-{fake(UPPER, 5, 'op8')}-"
            f"{fake(UPPER, 5, 'op9')}-{fake(UPPER, 5, 'opa')}-{fake(UPPER, 5, 'opb')}",
        ),
        near_misses=("Paper size A3-ABCDEF is not a key.", "A3-ABC123-DEF"),
        shape="`A3-` + 6 + `-` + 11 + three groups of 5 (upper base32)",
    ),
    # HashiCorp Vault AppRole: the secret_id beside a role_id (the role_id is not secret).
    # https://developer.hashicorp.com/vault/docs/auth/approle
    LeakRule(
        "vault-approle-secret-id",
        r"(?i:secret[_-]?id)\\?[\"']?[ \t]{0,4}(?:=|:|=>)[ \t]{0,4}\\?[\"']?"
        r"(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
        r"(?i:secret[_-]?id)",
        family="identity",
        context=True,
        examples=(
            f"role_id=0d2f-... secret_id={fake(HEX, 8, 'va1')}-{fake(HEX, 4, 'va2')}-"
            f"{fake(HEX, 4, 'va3')}-{fake(HEX, 4, 'va4')}-{fake(HEX, 12, 'va5')}",
            f'"secret_id": "{fake(HEX, 8, "va6")}-{fake(HEX, 4, "va7")}-'
            f'{fake(HEX, 4, "va8")}-{fake(HEX, 4, "va9")}-{fake(HEX, 12, "vaa")}"',
        ),
        near_misses=("secret_id=${SECRET_ID}", "secret_id_accessor: none"),
        shape="`secret_id=` + UUID",
    ),
    # Facebook app access tokens: "<app id>|<app secret>" (15-16 digits, a pipe, 27-40 chars);
    # the pipe may be percent-encoded in a URL.
    # https://developers.facebook.com/docs/facebook-login/guides/access-tokens/#apptokens
    LeakRule(
        "facebook-app-access-token",
        r"(?:^|[^A-Za-z0-9_|-])(?P<secret>[0-9]{15,16}(?:\||%7[Cc])[A-Za-z0-9_-]{27,40})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"[0-9][0-9][0-9][0-9](?:\||%7[Cc])[A-Za-z0-9_-]",
        reject_fake,
        family="identity",
        examples=(
            f"app token {fake(string.digits, 15, 'fb1')}|{fake(URL, 27, 'fb2')}",
            f"https://graph.facebook.com/me?access_token={fake(string.digits, 16, 'fb3')}%7C"
            f"{fake(URL, 40, 'fb4')}",
        ),
        near_misses=(
            f"| {fake(string.digits, 15, 'fb5')}|total requests per day |",
            f"{fake(string.digits, 15, 'fb6')}|{fake(URL, 26, 'fb7')}",
        ),
        shape="15-16 digits + `|` + 27-40 base64url",
    ),
    # Doppler service tokens scoped to a config: `dp.st.<config>.` + 40-44 base62.
    # https://docs.doppler.com/reference/auth-token-formats
    LeakRule(
        "doppler-scoped-token",
        r"(?:^|[^A-Za-z0-9_.-])(?P<secret>dp\.st\.[a-z0-9_-]{2,35}\.[A-Za-z0-9]{40,44})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"dp\.st\.",
        reject_fake,
        family="identity",
        examples=(
            f"DOPPLER_TOKEN=dp.st.prd.{fake(B62, 40, 'dps1')}",
            f"doppler run --token dp.st.dev_eu.{fake(B62, 44, 'dps2')} -- npm start",
        ),
        near_misses=(
            "Service tokens look like dp.st.<config>.<token>.",
            f"dp.st.prd.{fake(B62, 30, 'dps3')}",
        ),
        shape="`dp.st.<config>.` + 40-44 b62",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("doppler-token", "identity", ["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.",
          "dp.audit."], R("b62", 40, 44)),
    token("authress-access-key", "identity", ["sc_", "ext_", "scauth_"], R("lower", 5, 30), ".",
          R("lower", 4, 6), ".acc_", R("lower", 10, 32), ".", R("url", 30, 120)),
    token("onepassword-service-account-token", "identity", ["ops_eyJ"], R("b64", 250, 1000)),
    token("facebook-access-token", "identity", ["EAAC", "EAAM"], R("b62", 100, 400)),
    token("facebook-page-token", "identity", ["EAAG", "EAAB", "EAAI"], R("b62", 100, 400)),
    token("instagram-access-token", "identity", ["IGQV", "IGAA"], R("url", 100, 400)),
    token("twitter-bearer-token", "identity", ["AAAAAAAAAAAAAAAAAAAAA"], R("b62", 80, 100)),
    token("intra42-client-secret", "identity", ["s-s4t2ud-", "s-s4t2af-"], R("hex", 64)),
    token("okta-ssws-token", "identity", ["SSWS 00"], R("url", 40)),
    token("stytch-secret", "identity", ["secret-live-", "secret-test-"], R("url", 36, 44)),
    token("bitwarden-access-token", "identity", ["0."], *UUID, ".", R("b62", 30), ":",
          R("b64", 24)),
    token("onfido-api-token", "identity", ["api_live.", "api_sandbox.", "api_live_us.",
          "api_live_ca."], R("url", 11), ".", R("url", 32)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("twitter-api-secret", "identity", ["twitter"], R("b62", 50),
          key="TWITTER_CONSUMER_SECRET"),
    keyed("twitter-access-secret", "identity", ["twitter"], R("b62", 45),
          key="TWITTER_ACCESS_SECRET"),
    keyed("twitter-access-token", "identity", ["twitter"], R("digits", 15, 25), "-",
          R("b62", 20, 40), key="TWITTER_ACCESS_TOKEN"),
    keyed("linkedin-client-secret", "identity", ["linkedin", "linked_in", "linked-in"],
          R("b62", 16), key="LINKEDIN_CLIENT_SECRET"),
    keyed("facebook-app-secret", "identity", ["facebook", "fb_app"], R("hex", 32),
          key="FACEBOOK_APP_SECRET"),
    keyed("okta-api-token", "identity", ["okta"], "00", R("url", 40), key="OKTA_API_TOKEN"),
    keyed("auth0-client-secret", "identity", ["auth0"], R("url", 64),
          key="AUTH0_CLIENT_SECRET"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
