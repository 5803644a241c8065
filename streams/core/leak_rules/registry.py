"""Package and artifact registry credentials: npm, PyPI, Docker Hub, RubyGems, NuGet, JFrog.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.pieces import B62, B64, HEX, fake, reject_pair_secret
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # NuGet.config package source credentials: <add key="ClearTextPassword" value="..."/>.
    # https://learn.microsoft.com/nuget/reference/nuget-config-file#packagesourcecredentials
    LeakRule(
        "nuget-config-password",
        r"(?i:<add[ \t]+key=\\?\"(?:ClearText)?Password\\?\"[ \t]+value=)"
        r"\\?\"(?P<secret>[^\"\\\r\n]{1,512})\\?\"",
        r"(?i:key=\\?\"(?:ClearText)?Password)",
        reject_pair_secret,
        family="registry",
        context=True,
        examples=(
            f'<add key="ClearTextPassword" value="{fake(B62, 16, "ng1")}" />',
            f'<add key="Password" value="{fake(B64, 40, "ng2")}"/>',
        ),
        near_misses=(
            '<add key="ClearTextPassword" value="%NUGET_PASSWORD%" />',
            '<add key="Username" value="ci-bot" />',
        ),
        shape='`<add key="ClearTextPassword" value="..."/>`',
    ),
    # Bundler credentials for private gem sources: BUNDLE_<HOST>=user:password (Sidekiq Pro and
    # Enterprise use BUNDLE_GEMS__CONTRIBSYS__COM=<8 hex>:<8 hex>). https://bundler.io/v2.5/man/bundle-config.1.html
    LeakRule(
        "bundler-credentials",
        r"\bBUNDLE_[A-Z0-9]{1,63}(?:__[A-Z0-9]{1,63}){1,8}[ \t]*(?:=|:)[ \t]*\\?[\"']?"
        r"(?P<secret>[^\s:\"'@\\]{1,128}:[^\s\"'@\\]{1,256})",
        r"BUNDLE_",
        reject_pair_secret,
        family="registry",
        context=True,
        examples=(
            f"export BUNDLE_GEMS__CONTRIBSYS__COM={fake(HEX, 8, 'bu1')}:{fake(HEX, 8, 'bu2')}",
            f'BUNDLE_RUBYGEMS__PKG__GITHUB__COM: "ci:{fake(B62, 24, "bu3")}"',
        ),
        near_misses=("BUNDLE_PATH=vendor/bundle", "BUNDLE_GEMS__CONTRIBSYS__COM=${SIDEKIQ_CREDS}"),
        shape="`BUNDLE_<HOST>=` + user:password",
    ),
    # Sidekiq Pro/Enterprise gem server URLs: https://<8 hex>:<8 hex>@gems.contribsys.com/.
    # https://github.com/sidekiq/sidekiq/wiki/Sidekiq-Pro-Installation
    LeakRule(
        "sidekiq-gem-url",
        r"https?://(?P<secret>[a-f0-9]{8}:[a-f0-9]{8})@(?:gems|enterprise)\.contribsys\.com",
        r"contribsys\.com",
        family="registry",
        context=True,
        examples=(
            f"source 'https://{fake(HEX, 8, 'sk1')}:{fake(HEX, 8, 'sk2')}@gems.contribsys.com/'",
            f"https://{fake(HEX, 8, 'sk3')}:{fake(HEX, 8, 'sk4')}@enterprise.contribsys.com/",
        ),
        near_misses=("source 'https://gems.contribsys.com/'", "https://user@gems.contribsys.com/"),
        shape="`https://` + 8 hex + `:` + 8 hex + `@gems.contribsys.com`",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("npm-token", "registry", ["npm_"], R("b62", 36, 64)),
    token("pypi-token", "registry", ["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
          R("url", 50, 1000)),
    token("dockerhub-pat", "registry", ["dckr_pat_"], R("url", 27, 64)),
    token("docker-org-access-token", "registry", ["dckr_oat_"], R("url", 27, 64)),
    token("rubygems-api-token", "registry", ["rubygems_"], R("hex", 48)),
    token("nuget-api-key", "registry", ["oy2"], R("lower", 43)),
    token("clojars-api-token", "registry", ["CLOJARS_"], R("lower", 60)),
    token("artifactory-api-key", "registry", ["AKCp"], R("b62", 69)),
    token("artifactory-reference-token", "registry", ["cmVmd"], R("b62", 59)),
    token("jfrog-access-token", "registry", ["eyJ2ZXIiOiIyIiwidHlwIjoiSldUIi"],
          R("url", 100, 1000)),
    token("cargo-registry-token", "registry", ["cio"], R("b62", 32)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("jfrog-api-key", "registry", ["jfrog", "artifactory", "bintray", "xray"],
          R("b62", 73), key="ARTIFACTORY_API_KEY"),
    keyed("jfrog-identity-token", "registry", ["jfrog", "artifactory", "bintray", "xray"],
          R("b62", 64), key="JFROG_IDENTITY_TOKEN"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
