"""CI/CD and code-quality service tokens: CircleCI, Buildkite, Sonar, Snyk, Codecov.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID_ANY_CASE, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

SPECIFIC: Final[tuple[LeakRule, ...]] = ()

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("circleci-pat", "ci-cd", ["CCIPAT_"], R("b62", 22), "_", R("hex", 40)),
    token("circleci-project-token", "ci-cd", ["CCIPRJ_"], R("b62", 22), "_", R("hex", 40)),
    token("buildkite-token", "ci-cd", ["bkua_"], R("hex", 40)),
    token("sonar-token", "ci-cd", ["squ_", "sqp_", "sqa_"], R("hex", 40)),
    token("harness-api-key", "ci-cd", ["pat.", "sat."], R("url", 22), ".", R("b62", 24), ".",
          R("b62", 20)),
    token("octopus-deploy-api-key", "ci-cd", ["API-"], R("upper", 26)),
    token("prefect-api-token", "ci-cd", ["pnu_"], R("b62", 36)),
    token("readme-api-token", "ci-cd", ["rdme_"], R("lower", 70)),
    token("dependency-track-api-key", "ci-cd", ["odt_"], R("b62", 32, 255)),
    token("endor-labs-api-key", "ci-cd", ["endr+"], R("url", 16)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("snyk-api-token", "ci-cd", ["snyk"], *UUID_ANY_CASE, key="SNYK_TOKEN"),
    # A SonarQube token, also with its `squ_`/`sqp_`/`sqa_` prefix.
    keyed("sonar-login-token", "ci-cd", ["sonar"], R("url", 40, 44), key="SONAR_LOGIN"),
    keyed("codecov-token", "ci-cd", ["codecov"], R("lower", 32), key="CODECOV_TOKEN"),
    keyed("travis-ci-token", "ci-cd", ["travis"], R("b62", 22), key="TRAVIS_TOKEN"),
    keyed("drone-ci-token", "ci-cd", ["droneci", "drone_token", "drone-token"], R("b62", 32),
          key="DRONE_TOKEN"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
