"""Database-as-a-service credentials: PlanetScale, Neon, Supabase, MongoDB Atlas, Confluent.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

SPECIFIC: Final[tuple[LeakRule, ...]] = ()

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("clickhouse-cloud-secret", "database", ["4b1d"], R("b62", 38)),
    token("planetscale-token", "database", ["pscale_tkn_", "pscale_oauth_"], R("url", 32, 64)),
    token("planetscale-password", "database", ["pscale_pw_"], R("url", 32, 64)),
    token("neon-api-key", "database", ["napi_"], R("lower", 64)),
    token("mongodb-atlas-key", "database", ["mdb_sa_sk_"], R("url", 40, 64)),
    token("xata-api-key", "database", ["xau_"], R("b62", 32, 40)),
    token("supabase-token", "database", ["sbp_"], R("hex", 40)),
    token("supabase-secret-key", "database", ["sb_secret_"], R("url", 28, 64)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("confluent-api-key", "database", ["confluent", "ccloud"], R("upper", 16),
          key="CONFLUENT_API_KEY"),
    keyed("confluent-api-secret", "database", ["confluent", "ccloud"], R("b64", 64),
          key="CONFLUENT_API_SECRET"),
    keyed("snowflake-password", "database", ["snowflake"], R("url", 16, 64),
          key="SNOWFLAKE_PWD"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
