"""Source hosting credentials: GitHub, GitLab, Bitbucket, Atlassian, Sourcegraph.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.pieces import B62, URL, fake
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# A GitLab token's optional routing suffix (`.01.<crc>`).
_GITLAB_TAIL: Final = r"(?:\.[A-Za-z0-9_-]{1,64}){0,3}"


# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # Atlassian API tokens (Jira, Confluence): "ATATT3" + 186 chars; Bitbucket app passwords
    # "ATBB" + 32. https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/
    LeakRule(
        "atlassian-api-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>ATATT3[A-Za-z0-9_=-]{180,250}|ATBB[A-Za-z0-9]{32})"
        r"(?:[^A-Za-z0-9_=-]|$)",
        r"ATATT3|ATBB",
        family="vcs",
        examples=(
            f"JIRA: ATATT3{fake(URL, 186, 'at1')}",
            f"app password ATBB{fake(B62, 32, 'at2')}",
        ),
        near_misses=("Atlassian tokens begin ATATT3 and app passwords ATBB.", "ATBBshort"),
        shape="`ATATT3` + 186 chars, `ATBB` + 32 base62",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("github-pat", "vcs", ["ghp_"], R("b62", 36, 255)),
    token("github-fine-grained-pat", "vcs", ["github_pat_"], R("b62", 22), "_", R("b62", 59, 200)),
    token("github-oauth", "vcs", ["gho_"], R("b62", 36, 255)),
    token("github-app-token", "vcs", ["ghu_", "ghs_"], R("b62", 36, 255)),
    token("github-refresh-token", "vcs", ["ghr_"], R("b62", 36, 255)),
    token("gitlab-pat", "vcs", ["glpat-"], R("url", 20, 255), tail=_GITLAB_TAIL),
    token("gitlab-token", "vcs", ["glrt-", "gldt-", "glptt-", "glft-", "glsoat-", "glimt-",
          "glcbt-", "glagent-", "gloas-"], R("url", 20, 255), tail=_GITLAB_TAIL),
    token("gitlab-runner-registration-token", "vcs", ["GR1348941"], R("url", 20)),
    token("gitlab-feature-flag-token", "vcs", ["glffct-"], R("url", 20)),
    token("gitlab-session-cookie", "vcs", ["_gitlab_session="], R("lower", 32)),
    token("sourcegraph-token", "vcs", ["sgp_"], R("Hex", 16), "_", R("Hex", 40)),
    token("sourcegraph-local-token", "vcs", ["sgp_local_", "sgp_"], R("Hex", 40)),
    token("bitbucket-access-token", "vcs", ["ATCTT3"], R("url", 180, 250)),
    token("sourcegraph-cody-token", "vcs", ["slk_"], R("hex", 64)),
    token("bitbucket-datacenter-token", "vcs", ["BBDC-"], R("bbdc", 40, 50)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("sourcegraph-access-token", "vcs", ["sourcegraph"], R("Hex", 40),
          key="SOURCEGRAPH_TOKEN"),
    keyed("bitbucket-client-secret", "vcs", ["bitbucket"], R("url", 64),
          key="BITBUCKET_CLIENT_SECRET"),
    keyed("bitbucket-client-id", "vcs", ["bitbucket"], R("b62", 32), key="BITBUCKET_CLIENT_ID"),
    keyed("atlassian-token", "vcs", ["atlassian", "confluence", "jira"], R("lower", 20),
          R("hex", 4), key="JIRA_API_TOKEN"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
