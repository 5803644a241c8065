"""Payment, commerce and finance credentials: Stripe, Square, Shopify, PayPal, exchanges.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.pieces import URL, fake
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # Square: production access tokens "EAAA" + 60, legacy "sq0atp-" + 22, OAuth application
    # secrets "sq0csp-" + 43. https://developer.squareup.com/docs/build-basics/access-tokens
    LeakRule(
        "square-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"EAAA|sq0(?:atp|csp)-",
        family="payment",
        examples=(f"square EAAA{fake(URL, 60, 'sq1')}", f"sq0csp-{fake(URL, 43, 'sq2')}"),
        near_misses=(
            "Square tokens start with EAAA; sq0atp- is the legacy prefix.",
            "sq0atp-short",
        ),
        shape="`EAAA` + 60, `sq0atp-`/`sq0csp-` + 22-43",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("stripe-secret-key", "payment", ["sk_live_", "sk_test_", "rk_live_", "rk_test_",
          "sk_prod_", "rk_prod_"], R("b62", 16, 247)),
    token("stripe-webhook-secret", "payment", ["whsec_"], R("b64", 32, 128), tail="={0,2}"),
    token("shopify-token", "payment", ["shpat_", "shpca_", "shppa_", "shpss_"], R("Hex", 32)),
    token("shopify-partner-token", "payment", ["prtapi_"], R("hex", 32)),
    token("paypal-braintree-token", "payment", ["access_token$production$"], R("lower", 16),
          "$", R("hex", 32)),
    token("braintree-sandbox-token", "payment", ["access_token$sandbox$"], R("lower", 16), "$",
          R("hex", 32)),
    token("flutterwave-secret-key", "payment", ["FLWSECK_TEST-", "FLWSECK-"], R("ah", 32), "-X"),
    token("flutterwave-encryption-key", "payment", ["FLWSECK_TEST"], R("ah", 12)),
    token("easypost-api-key", "payment", ["EZAK", "EZTK"], R("lower", 54)),
    token("duffel-api-token", "payment", ["duffel_test_", "duffel_live_"], R("url", 43)),
    token("shippo-api-token", "payment", ["shippo_live_", "shippo_test_"], R("hex", 40)),
    token("plaid-access-token", "payment", ["access-sandbox-", "access-development-",
          "access-production-"], *UUID),
    token("mollie-api-key", "payment", ["live_", "test_"], R("b62", 30)),
    token("checkout-secret-key", "payment", ["sk_sbox_"], R("lower", 26, 28)),
    token("adyen-api-key", "payment", ["AQE"], R("url", 60, 90)),
    token("gocardless-api-token", "payment", ["live_", "sandbox_"], R("url", 40)),
    token("pagarme-api-key", "payment", ["ak_live_", "ak_test_"], R("b62", 30)),
    token("flexport-api-key", "payment", ["shltm_"], R("url", 40)),
    token("ramp-client-secret", "payment", ["ramp_sec_"], R("b62", 48)),
    token("stripe-payment-intent-secret", "payment", ["pi_"], R("b62", 24), "_secret_",
          R("b62", 25)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("kraken-api-key", "payment", ["kraken"], R("b64", 80, 90), key="KRAKEN_API_SECRET"),
    keyed("kucoin-api-key", "payment", ["kucoin"], R("hex", 24), key="KUCOIN_API_KEY"),
    keyed("kucoin-secret-key", "payment", ["kucoin"], *UUID, key="KUCOIN_SECRET"),
    keyed("bittrex-api-key", "payment", ["bittrex"], R("lower", 32), key="BITTREX_API_SECRET"),
    keyed("coinbase-api-secret", "payment", ["coinbase"], R("url", 64),
          key="COINBASE_API_SECRET"),
    keyed("binance-api-key", "payment", ["binance"], R("b62", 64), key="BINANCE_SECRET"),
    keyed("finicity-client-secret", "payment", ["finicity"], R("b62", 20),
          key="FINICITY_SECRET"),
    keyed("finnhub-api-key", "payment", ["finnhub"], R("lower", 20), key="FINNHUB_API_KEY"),
    keyed("lob-api-key", "payment", ["lob"], "live_", R("hex", 35), key="LOB_API_KEY"),
    keyed("plaid-secret", "payment", ["plaid"], R("lower", 30), key="PLAID_SECRET"),
    keyed("razorpay-key-secret", "payment", ["razorpay"], R("b62", 24),
          key="RAZORPAY_KEY_SECRET"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
