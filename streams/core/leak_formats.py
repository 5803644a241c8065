"""Credential formats written as data: a vendor's prefix and runs, or a keyword and a value shape.

Most credential formats are a fixed prefix followed by runs of one alphabet (`ghp_` + 36
base62) or, without a prefix, a value whose shape is only telling next to the vendor's name
(`SUMO_ACCESS_ID = "su..."`). `token` and `keyed` build a `LeakRule` from such a description:
the RE2 pattern with its boundaries (a match never starts or ends inside a longer token), a
trigger of literals only (the prefix or the keyword, for the combined pre-filter), the
placeholder filter, a shape for the docs, and synthetic examples and near misses that the
tests run for every rule. Formats are facts learned from vendors' documentation and the public
rule sets of secret scanners; the patterns and the examples are written here.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from streams.core.leak_rules import LeakRule, Reject, is_placeholder, looks_fake

__all__ = ["FORMAT_RULES", "KEYED_RULES", "TOKEN_RULES", "Run", "keyed", "token"]

# Named alphabets: RE2 class content and the characters it stands for.
ALPHABETS: Final[dict[str, tuple[str, str]]] = {
    "hex": ("a-f0-9", "0123456789abcdef"),
    "HEX": ("A-F0-9", "0123456789ABCDEF"),
    "Hex": ("a-fA-F0-9", "0123456789abcdefABCDEF"),
    "b62": ("A-Za-z0-9", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
    "lower": ("a-z0-9", "abcdefghijklmnopqrstuvwxyz0123456789"),
    "upper": ("A-Z0-9", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    "alpha": ("A-Za-z", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
    "digits": ("0-9", "0123456789"),
    "url": ("A-Za-z0-9_-", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"),
    "b64": ("A-Za-z0-9+/", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
    "ah": ("a-h0-9", "0123456789abcdefgh"),
    "b58": (
        "1-9A-HJ-NP-Za-km-z",
        "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz",
    ),
    "bech32": ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    "bech32l": ("qpzry9x8gf2tvdw0s3jn54khce6mua7l", "qpzry9x8gf2tvdw0s3jn54khce6mua7l"),
}
# Characters that continue a token: a match may not start right after one or end right
# before one (`photo-xoxb-...-1.jpg` is a path word, `ghp_...Z` a longer token).
_WORD: Final = r"A-Za-z0-9_\-"
# Nor after a dot: `video_box.ico-7a38...png` is a file name, not an Infracost key.
_LEFT: Final = rf"(?:^|[^{_WORD}.])"
# A value may be quoted, also with escaped quotes inside JSON.
_QUOTE: Final = r"""(?:\\?["'`])?"""
# Assignment operators of code and config, on one line: = == := ::= :::= ?= => : (YAML, JSON).
_OP: Final = r"(?::::=|::=|:=|\?=|=>|={1,2}|:)"
_KEY_TAIL: Final = r"[A-Za-z0-9_.-]{0,24}"
# A documented stand-in is no credential (`EXAMPLE`, `xxxxx`); neither is a body of one
# character repeated (`ghp_000...0`). Runs alone are no sign: base64 of zero bytes is `AAAA`.


_UNROLL: Final = 128


@dataclass(frozen=True, slots=True)
class Run:
    """`lo`..`hi` characters of a named alphabet (`hi` None: exactly `lo`; -1: no bound)."""

    alphabet: str
    lo: int
    hi: int | None = None

    def regex(self) -> str:
        cls = ALPHABETS[self.alphabet][0]
        if self.hi is None:
            return f"[{cls}]{{{self.lo}}}"
        # A long upper bound costs RE2 a program as long (it unrolls counted repetition);
        # the boundary after the run ends a match just as well.
        top = "" if self.hi < 0 or self.hi > _UNROLL else str(self.hi)
        return f"[{cls}]{{{self.lo},{top}}}"

    @property
    def bounded(self) -> bool:
        """Whether the pattern has an upper bound (long bounds are left open, see `regex`)."""
        return self.hi is None or 0 <= self.hi <= _UNROLL

    def shape(self) -> str:
        if self.hi is None:
            return f"{self.lo} {self.alphabet}"
        top = f"-{self.hi}" if self.bounded else "+"
        return f"{self.lo}{top} {self.alphabet}"

    def draw(self, rng: random.Random, n: int) -> str:
        chars = ALPHABETS[self.alphabet][1]
        return "".join(rng.choice(chars) for _ in range(n))

    @property
    def top(self) -> int:
        if self.hi is None:
            return self.lo
        return self.lo + 24 if self.hi < 0 else min(self.hi, self.lo + 40)


Part = str | Run


def _regex(parts: Sequence[Part]) -> str:
    return "".join(re.escape(p) if isinstance(p, str) else p.regex() for p in parts)


def _shape(parts: Sequence[Part]) -> str:
    return " + ".join(f"`{p}`" if isinstance(p, str) else p.shape() for p in parts)


def _value(parts: Sequence[Part], rng: random.Random, size: str) -> str:
    """A value in the format: every run at its shortest or longest; or its last run one short
    of valid (`short`) or one past its longest (`long`, '' when it has no bound)."""
    runs = [i for i, p in enumerate(parts) if isinstance(p, Run)]
    out = []
    for i, p in enumerate(parts):
        if isinstance(p, str):
            out.append(p)
            continue
        n = p.lo if size in ("short", "min") else p.top
        if i == runs[-1] and size == "short":
            n = p.lo - 1
        if i == runs[-1] and size == "long":
            if not p.bounded:
                return ""
            n = (p.lo if p.hi is None else p.hi) + 1
        out.append(p.draw(rng, n))
    return "".join(out)


def _trigger(prefixes: Sequence[str], parts: Sequence[Part]) -> str:
    """The pre-filter's pattern for a token: its prefix and the start of what follows, 10
    characters in all, 14 after a prefix of fewer than 4 (`0.` + 8 hex is in many decimals,
    `0.` + 8 hex + `-` + 3 hex is not). Classes are written out, never counted, which keeps
    the combined DFA small."""
    first = "|".join(re.escape(p) for p in prefixes)
    shortest = min(len(p) for p in prefixes)
    need = (14 if shortest < 4 else 10) - shortest
    out: list[str] = []
    for part in parts:
        if need <= 0:
            break
        if isinstance(part, str):
            out.append(re.escape(part[:need]))
            need -= len(part)
            continue
        n = min(part.lo, need)
        out.append(f"[{ALPHABETS[part.alphabet][0]}]" * n)
        need -= n
        if part.lo == 0 or (part.hi is not None and part.hi != part.lo):
            break  # a variable run: what comes after it has no fixed place
    return f"(?:{first}){''.join(out)}"


def _stand_in(parts: Sequence[Part]) -> str:
    """The format's documented placeholder: every run written as x (or 0 for digits)."""
    return "".join(
        p if isinstance(p, str) else ("0" if p.alphabet == "digits" else "x") * p.lo for p in parts
    )


def _reject_stand_in(secret: str, _before: str, _after: str) -> bool:
    return looks_fake(secret) or len(set(secret)) == 1 or is_placeholder(secret)


def _stand_in_after(prefixes: Sequence[str]) -> Reject:
    """Placeholders judged on what follows the prefix (`AAAA...` may be a prefix's own)."""
    ordered = sorted(prefixes, key=len, reverse=True)

    def reject(secret: str, _before: str, _after: str) -> bool:
        body = next((secret[len(p) :] for p in ordered if secret.startswith(p)), secret)
        return _reject_stand_in(body, _before, _after) or is_placeholder(secret)

    return reject


def _right(parts: Sequence[Part]) -> str:
    """The character after a token: not one that would continue it."""
    last = parts[-1]
    chars = last[-1:] if isinstance(last, str) else ALPHABETS[last.alphabet][1]
    extra = "".join(sorted({c for c in chars if not (c.isalnum() or c in "_-")}))
    return rf"(?:[^{_WORD}{re.escape(extra)}]|$)"


def token(
    rule_id: str, family: str, prefixes: Sequence[str], *parts: Part, tail: str = ""
) -> LeakRule:
    """A prefixed token: one of `prefixes` then `parts` (then an optional RE2 `tail`, such as a
    version suffix), as a whole token."""
    first = "|".join(re.escape(p) for p in prefixes)
    pattern = rf"{_LEFT}(?P<secret>(?:{first}){_regex(parts)}{tail}){_right(parts)}"
    rng = random.Random(rule_id)
    lo = prefixes[0] + _value(parts, rng, "min")
    hi = prefixes[-1] + _value(parts, rng, "max")
    short = prefixes[0] + _value(parts, rng, "short")
    examples = (
        f"Use {lo} for the deploy.",
        f'curl -H "X-Service-Auth: {hi}" https://api.example.com/v1/items',
    )
    near: list[str] = [
        f"https://cdn.example.com/media/photo-{lo}-1.jpg",
        f"e.g. {prefixes[0]}{_stand_in(parts)} in the docs",
    ]
    long = _value(parts, rng, "long")
    if long:
        near.append(f"the build id is {prefixes[0]}{long} today")
    if short != lo:
        near.insert(0, f"Use {short} for the deploy.")
    return LeakRule(
        rule_id,
        pattern,
        _trigger(prefixes, parts),
        _stand_in_after(prefixes),
        family=family,
        examples=examples,
        near_misses=tuple(near),
        shape=" or ".join(f"`{p}`" for p in prefixes) + " + " + _shape(parts),
    )


def keyed(
    rule_id: str,
    family: str,
    keywords: Sequence[str],
    *parts: Part,
    key: str,
) -> LeakRule:
    """A value known by the vendor's name beside it: `SUMO_ACCESS_ID = "su..."`.

    The keyword must start a word (`globalKey` is not `lob`), the name runs on for at most 24
    characters, the operator and value stay on the key's line; `key` is an example name."""
    kw = "|".join(re.escape(k) for k in keywords)
    # As a name is written: `sumo`, `Sumo` or `SUMO`, not `sumOfValues`.
    cased = "|".join(sorted({re.escape(v) for k in keywords for v in _spellings(k)}))
    literals = [p for p in parts if isinstance(p, str) and len(p) >= 4]

    def reject(secret: str, before: str, after: str) -> bool:
        # A run the format itself spells (Dropbox's `AAAAAAAAAA`) is no placeholder.
        bare = secret
        for literal in literals:
            bare = bare.replace(literal, "")
        return _reject_stand_in(bare, before, after) or is_placeholder(secret)

    pattern = (
        rf"(?:^|[^a-z])(?:{cased}){_KEY_TAIL}{_QUOTE}[ \t]{{0,4}}{_OP}[ \t]{{0,4}}{_QUOTE}"
        rf"(?P<secret>{_regex(parts)}){_right(parts)}"
    )
    rng = random.Random(rule_id)
    v1 = _value(parts, rng, "min")
    v2 = _value(parts, rng, "max")
    short = _value(parts, rng, "short")
    examples = (f'{key} = "{v1}"', f"{key.lower()}: {v2}")
    near = (
        f'{key} = "{short}"',
        f"{key}=${{{key}}}",
        f"{key}=\nNEXT_SETTING={v1}",
        f'{key}: "{_stand_in(parts)}"',
    )
    return LeakRule(
        rule_id,
        pattern,
        rf"(?i:{kw})[A-Za-z0-9_.\-]*{_QUOTE}[ \t]*(?:[:=]|\?=)",
        reject,
        family=family,
        context=True,
        examples=examples,
        near_misses=near,
        shape=f"`{key}` = " + _shape(parts),
    )


def _spellings(keyword: str) -> tuple[str, str, str]:
    """A vendor name in code: lower case, capitalised, or upper case."""
    return keyword.lower(), keyword[:1].upper() + keyword[1:].lower(), keyword.upper()


R = Run
UUID: Final = (R("hex", 8), "-", R("hex", 4), "-", R("hex", 4), "-", R("hex", 4), "-", R("hex", 12))
UUID_UPPER: Final = (
    R("HEX", 8),
    "-",
    R("HEX", 4),
    "-",
    R("HEX", 4),
    "-",
    R("HEX", 4),
    "-",
    R("HEX", 12),
)
# Next to the vendor's name a UUID may be written in either case (`12345678-ABCD-...`).
UUID_ANY_CASE: Final = (
    R("Hex", 8),
    "-",
    R("Hex", 4),
    "-",
    R("Hex", 4),
    "-",
    R("Hex", 4),
    "-",
    R("Hex", 12),
)
# A GitLab token's optional routing suffix (`.01.<crc>`).
_GITLAB_TAIL: Final = r"(?:\.[A-Za-z0-9_-]{1,64}){0,3}"

# Prefixed tokens, each a vendor's documented prefix and alphabet (see the module docstring).
# fmt: off
TOKEN_RULES: Final[tuple[LeakRule, ...]] = (
    # --- Cloud and infrastructure -------------------------------------------------------------
    token("aws-access-key-id", "cloud", ["AKIA", "ASIA", "ABIA", "ACCA"], R("upper", 16)),
    token("google-api-key", "cloud", ["AIza"], R("url", 35)),
    token("google-oauth-client-secret", "cloud", ["GOCSPX-"], R("url", 28)),
    token("google-oauth-access-token", "cloud", ["ya29."], R("url", 20, 1000)),
    token("digitalocean-token", "cloud", ["dop_v1_", "doo_v1_", "dor_v1_"], R("hex", 64)),
    token("databricks-token", "cloud", ["dapi"], R("hex", 32), tail=r"(?:-[0-9])?"),
    token("vault-token", "cloud", ["hvs.", "hvb.", "hvr."], R("url", 24, 400)),
    token("pulumi-access-token", "cloud", ["pul-"], R("hex", 40)),
    token("doppler-token", "identity", ["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.",
          "dp.audit."], R("b62", 40, 44)),
    token("alibaba-access-key-id", "cloud", ["LTAI"], R("b62", 20)),
    token("aws-bedrock-api-key", "cloud", ["ABSK"], R("b64", 109, 269)),
    token("cloudflare-origin-ca-key", "cloud", ["v1.0-"], R("hex", 24), "-", R("hex", 146)),
    token("heroku-api-key-v2", "cloud", ["HRKU-AA"], R("url", 58)),
    token("openshift-user-token", "cloud", ["sha256~"], R("url", 43)),
    token("infracost-api-token", "cloud", ["ico-"], R("b62", 32)),
    token("castai-api-key", "cloud", ["castai_v1_"], R("b62", 64), "_", R("b62", 8)),
    token("defined-networking-api-token", "cloud", ["dnkey-"], R("url", 26), "-", R("url", 52)),
    token("scalingo-api-token", "cloud", ["tk-us-"], R("url", 48)),
    token("fly-io-token", "cloud", ["fo1_"], R("url", 43)),
    token("netlify-pat", "cloud", ["nfp_"], R("b62", 36)),
    token("render-api-key", "cloud", ["rnd_"], R("b62", 32)),
    token("settlemint-token", "cloud", ["sm_aat_", "sm_pat_", "sm_sat_"], R("b62", 16)),
    token("yandex-api-key", "cloud", ["AQVN"], R("url", 35, 38)),
    token("yandex-iam-token", "cloud", ["t1."], R("url", 20, 40), ".", R("url", 86)),
    token("tencent-secret-id", "cloud", ["AKID"], R("b62", 32)),
    token("scaleway-access-key", "cloud", ["SCW"], R("upper", 17)),
    token("clickhouse-cloud-secret", "database", ["4b1d"], R("b62", 38)),
    token("authress-access-key", "identity", ["sc_", "ext_", "scauth_"], R("lower", 5, 30), ".",
          R("lower", 4, 6), ".acc_", R("lower", 10, 32), ".", R("url", 30, 120)),
    # --- Source hosting, CI/CD and package registries -------------------------------------------
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
    token("circleci-pat", "ci-cd", ["CCIPAT_"], R("b62", 22), "_", R("hex", 40)),
    token("circleci-project-token", "ci-cd", ["CCIPRJ_"], R("b62", 22), "_", R("hex", 40)),
    token("buildkite-token", "ci-cd", ["bkua_"], R("hex", 40)),
    token("sonar-token", "ci-cd", ["squ_", "sqp_", "sqa_"], R("hex", 40)),
    token("harness-api-key", "ci-cd", ["pat.", "sat."], R("url", 22), ".", R("b62", 24), ".",
          R("b62", 20)),
    token("octopus-deploy-api-key", "ci-cd", ["API-"], R("upper", 26)),
    token("prefect-api-token", "ci-cd", ["pnu_"], R("b62", 36)),
    token("readme-api-token", "ci-cd", ["rdme_"], R("lower", 70)),
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
    # --- AI providers ----------------------------------------------------------------------------
    token("anthropic-api-key", "ai", ["sk-ant-"], R("url", 20, 250)),
    token("groq-api-key", "ai", ["gsk_"], R("b62", 48, 56)),
    token("replicate-api-token", "ai", ["r8_"], R("b62", 37)),
    token("xai-api-key", "ai", ["xai-"], R("b62", 70, 90)),
    token("perplexity-api-key", "ai", ["pplx-"], R("b62", 40, 56)),
    token("huggingface-token", "ai", ["hf_"], R("b62", 34, 40)),
    token("huggingface-org-token", "ai", ["api_org_"], R("alpha", 34)),
    token("openrouter-api-key", "ai", ["sk-or-v1-"], R("hex", 64)),
    token("langsmith-api-key", "ai", ["lsv2_pt_", "lsv2_sk_"], R("hex", 32), "_", R("hex", 10)),
    token("elevenlabs-api-key", "ai", ["sk_"], R("hex", 48)),
    token("pinecone-api-key", "ai", ["pcsk_"], R("b62", 5, 6), "_", R("url", 60, 70)),
    token("cerebras-api-key", "ai", ["csk-"], R("lower", 48)),
    token("fireworks-api-key", "ai", ["fw_"], R("b62", 24)),
    token("nvidia-api-key", "ai", ["nvapi-"], R("url", 64)),
    token("voyage-api-key", "ai", ["pa-"], R("url", 43)),
    token("anyscale-api-key", "ai", ["esecret_"], R("lower", 26)),
    # --- Observability and operations -----------------------------------------------------------
    token("new-relic-api-key", "observability", ["NRAK-"], R("upper", 27)),
    token("new-relic-browser-key", "observability", ["NRJS-"], R("hex", 19)),
    token("new-relic-insert-key", "observability", ["NRII-"], R("url", 32)),
    token("grafana-api-key", "observability", ["eyJrIjoi"], R("b62", 70, 400)),
    token("postman-api-key", "observability", ["PMAK-"], R("hex", 24), "-", R("hex", 34)),
    token("linear-api-key", "productivity", ["lin_api_"], R("b62", 40)),
    token("notion-token", "productivity", ["ntn_"], R("b62", 40, 50)),
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
    # --- Chat, e-mail and messaging -------------------------------------------------------------
    token("slack-user-token", "chat", ["xoxp-", "xoxe-"], R("digits", 10, 13), "-",
          R("digits", 10, 13), "-", R("digits", 10, 13), "-", R("url", 28, 34)),
    token("slack-legacy-token", "chat", ["xoxo-", "xoxs-"], R("digits", 1, 16), "-",
          R("digits", 1, 16), "-", R("digits", 1, 16), "-", R("Hex", 10, 64)),
    token("slack-workspace-token", "chat", ["xoxa-2-", "xoxr-2-"], R("b62", 8, 48)),
    token("slack-config-token", "chat", ["xoxe.xoxb-1-", "xoxe.xoxp-1-"], R("b62", 163, 166)),
    token("slack-refresh-token", "chat", ["xoxe-1-"], R("b62", 146)),
    token("slack-app-token", "chat", ["xapp-1-"], R("upper", 9, 12), "-", R("digits", 10, 16),
          "-", R("hex", 64)),
    token("sendinblue-api-key", "email", ["xkeysib-"], R("hex", 64), "-", R("b62", 16)),
    token("sendinblue-smtp-key", "email", ["xsmtpsib-"], R("hex", 64), "-", R("b62", 16)),
    token("mailersend-api-key", "email", ["mlsn."], R("hex", 64)),
    token("resend-api-key", "email", ["re_"], R("b62", 8), "_", R("b62", 24)),
    token("sendgrid-api-key", "email", ["SG."], R("url", 22), ".", R("url", 43)),
    token("twilio-api-key", "chat", ["SK"], R("Hex", 32)),
    token("twilio-account-token", "chat", ["AC"], R("hex", 32), ":", R("hex", 32)),
    token("intercom-token", "chat", ["dG9rOj"], R("b64", 40, 80)),
    # --- Payments and commerce ------------------------------------------------------------------
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
    # --- Productivity, CMS and SaaS -------------------------------------------------------------
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
    # --- Databases ------------------------------------------------------------------------------
    token("planetscale-token", "database", ["pscale_tkn_", "pscale_oauth_"], R("url", 32, 64)),
    token("planetscale-password", "database", ["pscale_pw_"], R("url", 32, 64)),
    token("neon-api-key", "database", ["napi_"], R("lower", 64)),
    token("mongodb-atlas-key", "database", ["mdb_sa_sk_"], R("url", 40, 64)),
    token("xata-api-key", "database", ["xau_"], R("b62", 32, 40)),
    token("supabase-token", "database", ["sbp_"], R("hex", 40)),
    token("supabase-secret-key", "database", ["sb_secret_"], R("url", 28, 64)),
    # --- Identity, secrets managers and keys ----------------------------------------------------
    token("age-secret-key", "private-key", ["AGE-SECRET-KEY-1"], R("bech32", 58)),
    token("age-plugin-identity", "private-key", ["AGE-PLUGIN-"], R("upper", 8, 20), "-1",
          R("upper", 50, 70)),
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
    token("bitcoin-wif-key", "private-key", ["5H", "5J", "5K"], R("b58", 49)),
    token("bitcoin-extended-private-key", "private-key", ["xprv9", "tprv8"], R("b58", 100, 107)),
    token("nostr-secret-key", "private-key", ["nsec1"], R("bech32l", 58)),
)

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
KEYED_RULES: Final[tuple[LeakRule, ...]] = (
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
    keyed("snyk-api-token", "ci-cd", ["snyk"], *UUID_ANY_CASE, key="SNYK_TOKEN"),
    # A SonarQube token, also with its `squ_`/`sqp_`/`sqa_` prefix.
    keyed("sonar-login-token", "ci-cd", ["sonar"], R("url", 40, 44), key="SONAR_LOGIN"),
    keyed("sourcegraph-access-token", "vcs", ["sourcegraph"], R("Hex", 40),
          key="SOURCEGRAPH_TOKEN"),
    keyed("codecov-token", "ci-cd", ["codecov"], R("lower", 32), key="CODECOV_TOKEN"),
    keyed("travis-ci-token", "ci-cd", ["travis"], R("b62", 22), key="TRAVIS_TOKEN"),
    keyed("drone-ci-token", "ci-cd", ["droneci", "drone_token", "drone-token"], R("b62", 32),
          key="DRONE_TOKEN"),
    keyed("bitbucket-client-secret", "vcs", ["bitbucket"], R("url", 64),
          key="BITBUCKET_CLIENT_SECRET"),
    keyed("bitbucket-client-id", "vcs", ["bitbucket"], R("b62", 32), key="BITBUCKET_CLIENT_ID"),
    keyed("atlassian-token", "vcs", ["atlassian", "confluence", "jira"], R("lower", 20),
          R("hex", 4), key="JIRA_API_TOKEN"),
    keyed("gitter-token", "chat", ["gitter"], R("url", 40), key="GITTER_TOKEN"),
    keyed("jfrog-api-key", "registry", ["jfrog", "artifactory", "bintray", "xray"],
          R("b62", 73), key="ARTIFACTORY_API_KEY"),
    keyed("jfrog-identity-token", "registry", ["jfrog", "artifactory", "bintray", "xray"],
          R("b62", 64), key="JFROG_IDENTITY_TOKEN"),
    keyed("adafruit-api-key", "cloud", ["adafruit"], R("url", 32), key="ADAFRUIT_IO_KEY"),
    keyed("alibaba-secret-key", "cloud", ["alibaba", "aliyun"], R("b62", 30),
          key="ALIBABA_ACCESS_KEY_SECRET"),
    keyed("cloudflare-api-token", "cloud", ["cloudflare", "cf_api"], R("url", 40),
          key="CLOUDFLARE_API_TOKEN"),
    keyed("cloudflare-global-api-key", "cloud", ["cloudflare", "cf_api"], R("hex", 37),
          key="CLOUDFLARE_GLOBAL_KEY"),
    keyed("heroku-api-key", "cloud", ["heroku"], *UUID_ANY_CASE, key="HEROKU_API_KEY"),
    keyed("netlify-token", "cloud", ["netlify"], R("url", 40, 46), key="NETLIFY_AUTH_TOKEN"),
    keyed("linode-token", "cloud", ["linode"], R("hex", 64), key="LINODE_TOKEN"),
    keyed("vultr-api-key", "cloud", ["vultr"], R("upper", 36), key="VULTR_API_KEY"),
    keyed("fastly-api-token", "cloud", ["fastly"], R("url", 32), key="FASTLY_API_TOKEN"),
    keyed("meraki-api-key", "cloud", ["meraki"], R("hex", 40), key="MERAKI_DASHBOARD_API_KEY"),
    keyed("yandex-aws-access-token", "cloud", ["yandex"], "YC", R("url", 38),
          key="YANDEX_ACCESS_KEY"),
    keyed("confluent-api-key", "database", ["confluent", "ccloud"], R("upper", 16),
          key="CONFLUENT_API_KEY"),
    keyed("confluent-api-secret", "database", ["confluent", "ccloud"], R("b64", 64),
          key="CONFLUENT_API_SECRET"),
    keyed("snowflake-password", "database", ["snowflake"], R("url", 16, 64),
          key="SNOWFLAKE_PWD"),
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
    keyed("mattermost-token", "chat", ["mattermost"], R("lower", 26), key="MATTERMOST_TOKEN"),
    keyed("messagebird-api-key", "chat", ["messagebird", "message_bird", "message-bird"],
          R("b62", 25), key="MESSAGEBIRD_API_KEY"),
    keyed("sendbird-token", "chat", ["sendbird"], R("hex", 40), key="SENDBIRD_API_TOKEN"),
    keyed("twitch-api-token", "chat", ["twitch"], R("lower", 30), key="TWITCH_CLIENT_SECRET"),
    keyed("discord-client-secret", "chat", ["discord"], R("url", 32),
          key="DISCORD_CLIENT_SECRET"),
    keyed("line-channel-token", "chat", ["line_channel", "line-channel"], R("b64", 160, 180),
          key="LINE_CHANNEL_ACCESS_TOKEN"),
    keyed("postmark-server-token", "email", ["postmark"], *UUID, key="POSTMARK_SERVER_TOKEN"),
    keyed("sparkpost-api-key", "email", ["sparkpost"], R("hex", 40), key="SPARKPOST_API_KEY"),
    keyed("mandrill-api-key", "email", ["mandrill"], R("url", 22), key="MANDRILL_API_KEY"),
    keyed("twilio-auth-token", "chat", ["twilio"], R("hex", 32), key="TWILIO_AUTH_TOKEN"),
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
    keyed("cohere-api-key", "ai", ["cohere", "co_api_key"], R("b62", 40), key="COHERE_API_KEY"),
    keyed("mistral-api-key", "ai", ["mistral"], R("b62", 32), key="MISTRAL_API_KEY"),
    keyed("together-api-key", "ai", ["together"], R("hex", 64), key="TOGETHER_API_KEY"),
    keyed("wandb-api-key", "ai", ["wandb"], R("hex", 40), key="WANDB_API_KEY"),
    keyed("deepgram-api-key", "ai", ["deepgram"], R("hex", 40), key="DEEPGRAM_API_KEY"),
    keyed("assemblyai-api-key", "ai", ["assemblyai"], R("hex", 32), key="ASSEMBLYAI_API_KEY"),
    keyed("privateai-api-key", "ai", ["privateai", "private_ai", "private-ai"], R("lower", 32),
          key="PRIVATE_AI_KEY"),
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
    keyed("beamer-api-token", "productivity", ["beamer"], "b_", R("url", 44),
          key="BEAMER_API_KEY"),
)
# fmt: on

FORMAT_RULES: Final[tuple[LeakRule, ...]] = TOKEN_RULES + KEYED_RULES
