"""The built-in leak rules: one RE2 pattern per credential format, each citing where it comes from.

Patterns are RE2 syntax (no look-around, no backreferences) and every variable part is bounded
or stops at a delimiter, so a search never scans far past where a match could end. Values after
a secret-named key have no length bound: they run to their closing quote or delimiter, which
also ends every attempt that does not match. A rule masks
its named `secret*` group if one took part in the match (the value of `password = "..."`), else
the whole match. `reject` drops a match whose value is a placeholder (`${VAR}`, `<your-key>`,
`os.getenv(...)`) rather than a secret; it sees only the match, never other text.

`trigger` is a cheap pattern that every match of the rule contains (its prefix, its keyword):
the masker scans a string once with all triggers, and runs a rule only when its trigger hit.
Triggers use no counted repetition, which keeps that one combined DFA small and fast.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from streams.core.leak_views import decoded_text

# (secret, match text before it, match text after it) -> True when the match is not a secret.
Reject = Callable[[str, str, str], bool]


@dataclass(frozen=True, slots=True)
class LeakRule:
    """A stable kebab-case id, the RE2 pattern, its trigger, and an optional placeholder filter."""

    id: str
    pattern: str
    trigger: str
    reject: Reject | None = None

    def __repr__(self) -> str:
        return f"LeakRule({self.id!r})"


# ---------------------------------------------------------------------------------------------
# Placeholder filters. Python `re` is fine here: the inputs are single matched values and none
# of these patterns nests quantifiers, so each check is linear in the value.

_PLACEHOLDER = re.compile(
    r"""(?ix)
    \$\{[^}]*\}                     # ${VAR}, ${VAR:-default}
    | \$\([^)]*\)                   # $(command)
    | \$[A-Za-z_][A-Za-z0-9_]*      # $VAR
    | %[A-Za-z_][A-Za-z0-9_]*%      # %VAR% (Windows)
    | \{\{.*\}\} | \{%.*%\}         # {{ template }}, {% tag %}
    | \{[A-Za-z0-9_.\s-]*\}         # {password} format fields
    | %(?:\([A-Za-z0-9_]+\))?s      # %s, %(password)s
    | <[^<>]*> | \[[^\[\]]*\]       # <your-api-key>, [REDACTED:...], [token]
    | [*xX•·._\#?-]+ | …            # ***, xxxx, ...
    | (?:[A-Za-z0-9]{1,12}[_-]){0,3}[A-Za-z0-9]{0,4}(?:\.\.\.|…|[*xX•]{3,})  # sk-..., ghp_xxx
    | (?:your|insert|enter|replace|put)[\s_.-].* | your[A-Z].*
    | my[_-]?(?:password|passwd|secret|token|api[_-]?key|key)
    | (?:example|sample|dummy|placeholder|fake|test|changeme|change[_-]?me|replace[_-]?me
       |todo|tbd|fixme|redacted|hidden|masked|omitted|none|null|nil|undefined|true|false
       |required|optional|empty|unset|default|string|str|bytes|int|bool|any|object|text)
    """
)
# Code that reads a secret from somewhere instead of spelling it out.
_INDIRECT = re.compile(
    r"""(?x)
    (?:os\.environ|os\.getenv|getenv|process\.env|import\.meta\.env|Deno\.env|System\.getenv
      |std::env|env::var|ENV\[|Environment\.|config\.|settings\.|secrets\.|vault\.|self\.|this\.
      |args\.|opts\.|options\.|params\.|request\.|req\.|ctx\.|context\.)
    """
)
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_DOTTED_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)+")
_TYPE_NAME = re.compile(
    r"(?:Optional|Union|List|Dict|Secret|SecretStr|SecretBytes|String|Str|Text|Bytes|Int|Integer"
    r"|Number|Boolean|Bool|Any|Object|Annotated|Field|Literal|char|varchar|uuid)\b.*",
    re.IGNORECASE,
)
_CODE_WORDS = frozenset(
    {"await", "async", "new", "yield", "lambda", "function", "return", "typeof", "input"}
    | {"prompt", "getpass", "self", "this"}
)
_KEYWORD_IN_VALUE = re.compile(r"(?i)passw|passwd|secret|token|api[_-]?key|apikey|credential")
_PASS_FAMILY = re.compile(r"(?i)pass|pwd")
_PATHLIKE = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\|\\\\)")
_QUOTES = ('"', "'", "`")


def _stands_for_a_secret(v: str) -> bool:
    return not v or _PLACEHOLDER.fullmatch(v) is not None or _INDIRECT.match(v) is not None


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret rather than being one (`${X}`, `<key>`, `***`),
    also when written with escapes or references (`&lt;key&gt;`, `&#42;&#42;&#42;`)."""
    v = value.strip()
    if _stands_for_a_secret(v):
        return True
    decoded = decoded_text(v)
    return decoded != v and _stands_for_a_secret(decoded.strip())


def _looks_like_word(value: str) -> bool:
    """Letters only and short: after `key:` in prose this is a word, not a secret."""
    return len(value) < 16 and value.isalpha()


def _reject_url_password(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret)


def _reject_assigned_value(secret: str, before: str, after: str) -> bool:
    """Keep literals in assignments; drop placeholders, code that reads the secret, type hints."""
    if is_placeholder(secret) or before.startswith("://"):
        return True
    if before.endswith(_QUOTES) and after.startswith(_QUOTES):
        if len(secret) < 3:
            return True
        # Prose in a quoted `secret: "used to sign cookies"` is no secret; a passphrase may be.
        return any(c.isspace() for c in secret) and _PASS_FAMILY.search(before) is None
    if before.endswith(">"):  # <password>...</password>
        return len(secret) < 3
    op = before.rstrip()
    prose_like = op.endswith(":") or before.startswith("--")
    ident = _IDENTIFIER.fullmatch(secret) is not None
    return (
        len(secret) < 4
        or secret.lower() in _CODE_WORDS
        or secret.startswith(("-", "!", "&", "*"))
        or (prose_like and _looks_like_word(secret))
        or _DOTTED_NAME.fullmatch(secret) is not None
        or _TYPE_NAME.fullmatch(secret) is not None
        or _PATHLIKE.match(secret) is not None
        # `api_key=api_key`, `token=GITHUB_TOKEN`: a variable passed on, not a literal.
        or (
            ident
            and _KEYWORD_IN_VALUE.search(secret) is not None
            and ("_" in secret or not any(c.isdigit() for c in secret))
        )
    )


def _reject_connection_password(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret)


def _reject_header(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret) or len(secret) < 8


# ---------------------------------------------------------------------------------------------
# Pattern pieces. Bounded repetition keeps each search short (a thread dies after at most that
# many characters), which is what makes repeated searches over one string linear overall.

# A token that must not continue into more token characters (for fixed-length formats).
_END = r"(?:[^A-Za-z0-9_-]|$)"
# Key/value separators of code and config: =, ==, :=, =>, :, <-, with optional quote around key,
# and a type annotation before `=` (`password: str = "..."`).
_KEY_CLOSE = r"(?:\\?[\"'`]\]?)?"
_TYPE_HINT = r":\s{0,4}[A-Za-z_][A-Za-z0-9_.]{0,30}(?:\[[A-Za-z0-9_., |]{0,40}\])?\??\s{0,4}="
_ASSIGN = rf"{_KEY_CLOSE}\s{{0,8}}(?:{_TYPE_HINT}|=>|:=|={{1,3}}|:|<-)\s{{0,8}}"


def _quoted(first: int) -> str:
    """A quoted literal (", ' or `; quotes may be backslash-escaped) whose inside is secret{n}.

    Any length: the value runs to its closing quote on the same line."""
    return "|".join(
        rf"\\?{q}(?P<secret{first + i}>[^{q}\r\n]+?)\\?{q}" for i, q in enumerate(('"', "'", "`"))
    )


# PEM armour (RFC 7468 §2): base64 lines, optional `Proc-Type:`/`DEK-Info:` headers, and in JSON
# or source code the newlines may be written as `\n`. A lone hyphen is allowed (`DEK-Info`,
# `AES-128-CBC`) but never two in a row, so the body stops at the next `-----` marker.
_PEM_BODY = r"(?:[A-Za-z0-9+/=\s\\:,.>|*#]|-[A-Za-z0-9])*"
# Between BEGIN and END lines anything but markup may separate the base64 (quotes and commas of
# a list of lines, `;`, `|`, indentation); markup is left to the rendered view, which keeps tags.
_PEM_ANY_BODY = r"(?:[^<-]|-[A-Za-z0-9])*"
_PEM_LABEL = r"(?: [A-Z0-9]{1,20}){0,3} PRIVATE KEY(?: BLOCK)?"
_PEM = (
    rf"-----BEGIN{_PEM_LABEL}-----"
    rf"(?:{_PEM_ANY_BODY}-----END{_PEM_LABEL}-----"
    # A key cut off before its END line still leaks: mask from BEGIN through its base64.
    rf"|(?:\s|\\[rn]){{0,4}}[A-Za-z0-9+/]{{32}}{_PEM_BODY})"
)

# Words that end a key naming a secret: DB_PASSWORD, apiKey, client_secret, GITHUB_TOKEN.
_SECRET_KEYWORD = (
    r"(?i:passwd|password|passphrase|[_.-]pass|pwd|secret|token|credentials?|apikey"
    r"|(?:api|secret|access|private|auth|client|encryption|signing|master|app|session)[_-]?key)"
)
_ASSIGN_TRIGGER = (
    r"(?i:pass|pwd|secret|token|credential|credentials|key|passphrase|passwd|password)"
    r"(?:\\?[\"'`]\]?)?\s*(?:[:=]|<-)"
)
# An unquoted value runs to whitespace or punctuation that ends it; a final "." or ":" is the
# sentence's, not the value's.
_BARE_VALUE = (
    r"(?P<secret4>[^\s\"'`,;(){}\[\]<>\\]*[^\s\"'`,;(){}\[\]<>\\.:])"
    r"(?:[\s,;)}\]\"'`\\.:]|$)"
)
_FLAGS = r"(?i:password|passwd|token|api-key|secret|client-secret|access-token)"


BUILTIN_RULES: tuple[LeakRule, ...] = (
    # --- Cloud -----------------------------------------------------------------------------
    # AWS access key IDs: 20 chars, AKIA (long-term) / ASIA (STS) / ABIA / ACCA / A3T prefixes.
    # https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids
    LeakRule(
        "aws-access-key-id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T)",
    ),
    # AWS secret access keys: 40 chars of base64 alphabet, only recognisable next to their name
    # (aws_secret_access_key in ~/.aws/credentials, AWS_SECRET_ACCESS_KEY, "SecretAccessKey").
    # https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html
    LeakRule(
        "aws-secret-access-key",
        r"(?i:secret_?access_?key|aws_?secret_?key)"
        rf"{_ASSIGN}\\?[\"'`]?(?P<secret>[A-Za-z0-9/+]{{40}})(?:[^A-Za-z0-9/+=]|$)",
        r"(?i:secret_?access_?key|aws_?secret_?key)",
    ),
    # Google API keys: "AIza" + 35 chars. https://cloud.google.com/docs/authentication/api-keys
    LeakRule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}", r"\bAIza"),
    # Google OAuth client secrets: "GOCSPX-" + 28 chars (format since 2021).
    # https://developers.google.com/identity/protocols/oauth2/resources/best-practices
    LeakRule("google-oauth-client-secret", r"\bGOCSPX-[A-Za-z0-9_-]{28}", r"GOCSPX-"),
    # Google OAuth 2.0 access tokens: "ya29." + base64url.
    # https://developers.google.com/identity/protocols/oauth2 (token examples)
    LeakRule("google-oauth-access-token", r"\bya29\.[0-9A-Za-z_-]{20,1000}", r"\bya29\."),
    # GCP service-account key files: JSON with "private_key": "-----BEGIN PRIVATE KEY-----\n...".
    # https://cloud.google.com/iam/docs/keys-create-delete
    LeakRule(
        "gcp-service-account-key",
        rf"\\?\"private_key\\?\"\s{{0,8}}:\s{{0,8}}\\?\"(?P<secret>{_PEM}(?:\\\\?n)*)\\?\"",
        r"private_key",
    ),
    # Azure Storage / Service Bus / Event Hubs connection strings: AccountKey= (88-char base64 of
    # 64 bytes) and SharedAccessKey= (44-char base64 of 32 bytes).
    # https://learn.microsoft.com/azure/storage/common/storage-configure-connection-string
    LeakRule(
        "azure-storage-key",
        r"(?i:AccountKey|SharedAccessKey)\s{0,4}=\s{0,4}(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
        r"(?i:AccountKey|SharedAccessKey)\s*=",
    ),
    # Microsoft Entra ID (Azure AD) client secrets: 40 chars with "Q~" at offset 3 (the format
    # of secrets created since 2021; GitHub secret scanning's azure_active_directory type).
    # https://learn.microsoft.com/entra/identity-platform/howto-create-service-principal-portal
    LeakRule(
        "azure-ad-client-secret",
        r"(?:^|[^A-Za-z0-9_~.-])(?P<secret>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})"
        r"(?:[^A-Za-z0-9_~.-]|$)",
        r"[0-9]Q~",
    ),
    # Pre-signed URLs: the signature is a bearer credential until it expires. AWS SigV4
    # X-Amz-Signature (64 hex), GCS V4 X-Goog-Signature (hex RSA), Azure SAS sig= (base64 HMAC).
    # https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
    # https://cloud.google.com/storage/docs/access-control/signed-urls
    # https://learn.microsoft.com/rest/api/storageservices/create-service-sas
    LeakRule(
        "signed-url-signature",
        r"[?&](?i:x-amz-signature|x-goog-signature)=(?P<secret>[0-9a-fA-F]{64,1000})"
        r"|[?&]sig=(?P<secret2>[A-Za-z0-9%+/]{20,200}(?:%3[Dd]|=){0,2})",
        r"[?&](?i:x-amz-signature|x-goog-signature)=|[?&]sig=",
    ),
    # DigitalOcean: dop_v1_ (personal), doo_v1_ (OAuth), dor_v1_ (refresh) + 64 hex.
    # https://docs.digitalocean.com/reference/api/create-personal-access-token/
    LeakRule("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}", r"do[opr]_v1_"),
    # Databricks personal access tokens: "dapi" + 32 hex (+ optional "-N").
    # https://docs.databricks.com/en/dev-tools/auth/pat.html
    LeakRule("databricks-token", r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b", r"\bdapi[a-f0-9]"),
    # HashiCorp Vault tokens: hvs. (service), hvb. (batch), hvr. (recovery), Vault 1.10+.
    # https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes
    LeakRule("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_-]{24,400}", r"\bhv[sbr]\."),
    # Terraform Cloud / HCP Terraform API tokens: 14 chars + ".atlasv1." + 60+ chars.
    # https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens
    LeakRule(
        "terraform-cloud-token",
        r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,100}",
        r"\.atlasv1\.",
    ),
    # Pulumi access tokens: "pul-" + 40 hex.
    # https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/
    LeakRule("pulumi-access-token", r"\bpul-[a-f0-9]{40}\b", r"\bpul-"),
    # Doppler tokens: dp.pt. / dp.st. / dp.sa. / dp.ct. / dp.scim. / dp.audit. + 40-44 chars.
    # https://docs.doppler.com/reference/auth-token-formats
    LeakRule(
        "doppler-token",
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}",
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.",
    ),
    # --- Source hosting and package registries ---------------------------------------------
    # GitHub tokens: prefix + base62 (30 random chars + 6-char CRC32 checksum, 40 in all).
    # https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/
    LeakRule("github-pat", r"\bghp_[A-Za-z0-9]{36,255}", r"\bghp_"),
    # Fine-grained PATs: "github_pat_" + 22 chars + "_" + 59 chars (93 in all).
    # https://github.blog/2022-10-18-introducing-fine-grained-personal-access-tokens-for-github/
    LeakRule(
        "github-fine-grained-pat",
        r"\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59,200}",
        r"\bgithub_pat_",
    ),
    # gho_ (OAuth access token), same blog post.
    LeakRule("github-oauth", r"\bgho_[A-Za-z0-9]{36,255}", r"\bgho_"),
    # ghu_ (GitHub App user-to-server) and ghs_ (server-to-server / installation) tokens.
    LeakRule("github-app-token", r"\bgh[us]_[A-Za-z0-9]{36,255}", r"\bgh[us]_"),
    # ghr_ (GitHub App refresh token).
    LeakRule("github-refresh-token", r"\bghr_[A-Za-z0-9]{36,255}", r"\bghr_"),
    # GitLab personal access tokens: "glpat-" + 20 chars (newer ones add ".01.<crc>" parts).
    # https://docs.gitlab.com/ee/security/tokens/#token-prefixes
    LeakRule(
        "gitlab-pat",
        r"\bglpat-[A-Za-z0-9_-]{20,255}(?:\.[A-Za-z0-9_-]{1,64}){0,3}",
        r"\bglpat-",
    ),
    # Other GitLab tokens from the same prefix table: runner (glrt-), deploy (gldt-), pipeline
    # trigger (glptt-), feed (glft-), SCIM (glsoat-), incoming mail (glimt-), CI job (glcbt-),
    # agent (glagent-), OAuth application secret (gloas-).
    LeakRule(
        "gitlab-token",
        r"\b(?:glrt|gldt|glptt|glft|glsoat|glimt|glcbt|glagent|gloas)-[A-Za-z0-9_-]{20,255}"
        r"(?:\.[A-Za-z0-9_-]{1,64}){0,3}",
        r"\b(?:glrt|gldt|glptt|glft|glsoat|glimt|glcbt|glagent|gloas)-",
    ),
    # npm access tokens: "npm_" + 36 base62 chars (30 random + CRC32).
    # https://github.blog/2021-09-23-announcing-npms-new-access-token-format/
    LeakRule("npm-token", r"\bnpm_[A-Za-z0-9]{36,64}", r"\bnpm_"),
    # PyPI API tokens: "pypi-" + a macaroon whose base64 starts "AgEIcHlwaS5vcmc" (pypi.org) or
    # "AgENdGVzdC5weXBpLm9yZw" (test.pypi.org). https://pypi.org/help/#apitoken
    LeakRule(
        "pypi-token",
        r"\bpypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,1000}",
        r"\bpypi-AgE",
    ),
    # Docker Hub personal access tokens: "dckr_pat_" + 27 chars.
    # https://docs.docker.com/security/for-developers/access-tokens/
    LeakRule("dockerhub-pat", r"\bdckr_pat_[A-Za-z0-9_-]{27,64}", r"\bdckr_pat_"),
    # Hugging Face user access tokens: "hf_" + 34 chars.
    # https://huggingface.co/docs/hub/security-tokens
    LeakRule("huggingface-token", r"\bhf_[A-Za-z0-9]{34,40}\b", r"\bhf_"),
    # Atlassian API tokens (Jira, Confluence): "ATATT3" + 186 chars; Bitbucket app passwords
    # "ATBB" + 32. https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/
    LeakRule(
        "atlassian-api-token",
        r"\bATATT3[A-Za-z0-9_=-]{180,250}|\bATBB[A-Za-z0-9]{32}\b",
        r"\bATATT3|\bATBB",
    ),
    # --- Chat and messaging -------------------------------------------------------------------
    # Slack tokens: xoxb- (bot), xoxp- (user), xoxa-/xoxr- (refresh), xoxe- (rotating), xoxs-,
    # configuration tokens "xoxe.xoxp-", app-level tokens "xapp-".
    # https://api.slack.com/authentication/token-types
    LeakRule(
        "slack-token",
        r"\b(?:xox[abposr]|xoxe(?:\.xox[bp])?)-[0-9A-Za-z-]{10,250}"
        r"|\bxapp-[0-9]-[0-9A-Za-z-]{10,250}",
        r"\bxox[abposre]|\bxapp-",
    ),
    # Slack incoming webhooks: https://hooks.slack.com/services/T.../B.../<24 chars>.
    # https://api.slack.com/messaging/webhooks
    LeakRule(
        "slack-webhook",
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,200}",
        r"hooks\.slack\.com/",
    ),
    # Discord bot tokens: base64(user id) "." base64(timestamp) "." HMAC; ids start M/N/O.
    # https://discord.com/developers/docs/reference#authentication
    LeakRule(
        "discord-bot-token",
        r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}",
        r"\b[MNO][A-Za-z0-9_-]+\.[A-Za-z0-9_-]{6}\.",
    ),
    # Discord webhooks: https://discord.com/api/webhooks/<snowflake>/<68-char token>.
    # https://discord.com/developers/docs/resources/webhook
    LeakRule(
        "discord-webhook",
        r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
        r"[A-Za-z0-9_-]{60,80}",
        r"discord(?:app)?\.com/api/webhooks/",
    ),
    # Telegram bot tokens: "<bot id>:<35 chars>"; the secret half starts "AA" in practice and
    # "ABC" in the docs' example. https://core.telegram.org/bots/api#authorizing-your-bot
    LeakRule(
        "telegram-bot-token",
        r"\b(?P<secret>[0-9]{5,16}:A[A-Za-z0-9_-]{32,34})" + _END,
        r"[0-9]:A",
    ),
    # --- Payments and e-mail ---------------------------------------------------------------
    # Stripe secret (sk_) and restricted (rk_) keys, live and test. Publishable pk_ keys are
    # public by design and not masked. https://docs.stripe.com/keys
    LeakRule(
        "stripe-secret-key",
        r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,247}",
        r"\b[rs]k_(?:live|test)_",
    ),
    # Stripe webhook signing secrets: "whsec_" + base64. https://docs.stripe.com/webhooks
    LeakRule("stripe-webhook-secret", r"\bwhsec_[A-Za-z0-9+/=]{32,128}", r"\bwhsec_"),
    # Square: production access tokens "EAAA" + 60, legacy "sq0atp-" + 22, OAuth application
    # secrets "sq0csp-" + 43. https://developer.squareup.com/docs/build-basics/access-tokens
    LeakRule(
        "square-token",
        r"\b(?P<secret>EAAA[A-Za-z0-9_-]{60})" + _END + r"|\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}",
        r"\bEAAA|\bsq0(?:atp|csp)-",
    ),
    # Shopify: shpat_ (Admin API), shpca_ (custom app), shppa_ (private app), shpss_ (shared
    # secret) + 32 hex. https://shopify.dev/docs/apps/build/authentication-authorization
    LeakRule(
        "shopify-token",
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
        r"\bshp(?:at|ca|pa|ss)_",
    ),
    # SendGrid API keys: "SG." + 22 + "." + 43 chars.
    # https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys
    LeakRule("sendgrid-api-key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", r"\bSG\."),
    # Twilio API key SIDs: "SK" + 32 hex (the key's secret is only shown once next to it).
    # https://www.twilio.com/docs/iam/api-keys
    LeakRule("twilio-api-key", r"\bSK[0-9a-fA-F]{32}\b", r"\bSK[0-9a-fA-F]"),
    # Mailgun private API keys: legacy "key-" + 32 hex; current 32 hex + "-" + 8 + "-" + 8 hex.
    # https://documentation.mailgun.com/docs/mailgun/user-manual/get-started/
    LeakRule(
        "mailgun-api-key",
        r"\bkey-[0-9a-f]{32}\b|\b[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}\b",
        r"\bkey-[0-9a-f]|[0-9a-f]-[0-9a-f]{8}-[0-9a-f]{8}\b",
    ),
    # Mailchimp API keys: 32 hex + "-us" + datacenter number.
    # https://mailchimp.com/developer/marketing/guides/quick-start/
    LeakRule("mailchimp-api-key", r"\b[0-9a-f]{32}-us[0-9]{1,2}\b", r"[0-9a-f]-us[0-9]"),
    # --- AI providers --------------------------------------------------------------------------
    # Anthropic API keys: "sk-ant-api03-" + 93 chars + "AA"; admin keys "sk-ant-admin01-".
    # https://docs.anthropic.com/en/api/getting-started
    LeakRule("anthropic-api-key", r"\bsk-ant-[A-Za-z0-9_-]{20,250}", r"\bsk-ant-"),
    # OpenAI API keys: project (sk-proj-), service account (sk-svcacct-), admin (sk-admin-), and
    # legacy user keys "sk-" + 48 base62 (containing "T3BlbkFJ").
    # https://platform.openai.com/docs/api-reference/authentication
    LeakRule(
        "openai-api-key",
        r"\bsk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,250}|[A-Za-z0-9]{20,100}\b)",
        r"\bsk-",
    ),
    # Groq API keys: "gsk_" + 52 chars. https://console.groq.com/docs/quickstart
    LeakRule("groq-api-key", r"\bgsk_[A-Za-z0-9]{48,56}\b", r"\bgsk_"),
    # Replicate API tokens: "r8_" + 37 chars.
    # https://replicate.com/docs/reference/http#authentication
    LeakRule("replicate-api-token", r"\br8_[A-Za-z0-9]{37}\b", r"\br8_"),
    # xAI API keys: "xai-" + 80 chars. https://docs.x.ai/docs/api-reference#authentication
    LeakRule("xai-api-key", r"\bxai-[A-Za-z0-9]{70,90}\b", r"\bxai-"),
    # Perplexity API keys: "pplx-" + 48 chars. https://docs.perplexity.ai/guides/getting-started
    LeakRule("perplexity-api-key", r"\bpplx-[A-Za-z0-9]{40,56}\b", r"\bpplx-"),
    # --- Ops and observability --------------------------------------------------------------
    # Linear API keys: "lin_api_" + 40 chars.
    # https://developers.linear.app/docs/graphql/working-with-the-graphql-api
    LeakRule("linear-api-key", r"\blin_api_[A-Za-z0-9]{40}\b", r"\blin_api_"),
    # Notion integration tokens (2024+): "ntn_" + 46 chars.
    # https://developers.notion.com/docs/authorization
    LeakRule("notion-token", r"\bntn_[A-Za-z0-9]{40,50}\b", r"\bntn_"),
    # New Relic user API keys: "NRAK-" + 27 uppercase base36.
    # https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/
    LeakRule("new-relic-api-key", r"\bNRAK-[A-Z0-9]{27}\b", r"\bNRAK-"),
    # Grafana service account tokens "glsa_" + 32 + "_" + 8 hex; Grafana Cloud tokens "glc_".
    # https://grafana.com/docs/grafana/latest/administration/service-accounts/
    LeakRule(
        "grafana-token",
        r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,400}={0,2}",
        r"\bglsa_|\bglc_",
    ),
    # Sentry auth tokens: org tokens "sntrys_" + base64 JSON, user tokens "sntryu_" + 64 hex.
    # https://docs.sentry.io/account/auth-tokens/
    LeakRule(
        "sentry-auth-token",
        r"\bsntrys_[A-Za-z0-9+/=_]{60,400}|\bsntryu_[a-f0-9]{64}\b",
        r"\bsntry[su]_",
    ),
    # Postman API keys: "PMAK-" + 24 hex + "-" + 34 hex.
    # https://learning.postman.com/docs/developer/postman-api/authentication/
    LeakRule("postman-api-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", r"\bPMAK-"),
    # Supabase personal access tokens "sbp_" + 40 hex; secret API keys "sb_secret_" + 31+.
    # https://supabase.com/docs/guides/api/api-keys
    LeakRule(
        "supabase-token",
        r"\bsbp_[a-f0-9]{40}\b|\bsb_secret_[A-Za-z0-9_-]{28,64}",
        r"\bsbp_|\bsb_secret_",
    ),
    # age secret keys: "AGE-SECRET-KEY-1" + 58 Bech32 chars. https://age-encryption.org/v1
    LeakRule(
        "age-secret-key",
        r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b",
        r"\bAGE-SECRET-KEY-1",
    ),
    # --- Generic formats ----------------------------------------------------------------------
    # JWTs (RFC 7519) in JWS compact form (RFC 7515 §7.1): base64url header "." payload "."
    # signature; a JSON header and claims set both start `{"`, i.e. "eyJ"/"ey".
    LeakRule(
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
        r"\beyJ[A-Za-z0-9_-]*\.ey",
    ),
    # PEM private keys (RFC 7468 §10-11, OpenSSH, PGP armour): the whole block.
    LeakRule("pem-private-key", _PEM, r"PRIVATE KEY"),
    # HTTP Authorization headers: Bearer (RFC 6750), Basic (RFC 7617), Token, Digest.
    LeakRule(
        "authorization-header",
        r"(?i:authorization)\\?[\"']?\s{0,4}[:=]\s{0,4}\\?[\"']?"
        r"(?i:bearer|basic|token|digest|apikey)\s{1,4}(?P<secret>[A-Za-z0-9._~+/=-]{8,1000})",
        r"(?i:authorization)",
        _reject_header,
    ),
    # URLs with a password in the userinfo (RFC 3986 §3.2.1): only the password is masked, the
    # scheme, user and host stay readable. The password may contain raw "@" or ":".
    LeakRule(
        "url-credentials",
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:@/?#\[\]\"'<>]{0,128}:"
        r"(?P<secret>[^\s/?#\"'<>]{1,128})@[A-Za-z0-9\[]",
        r"://[^\s/?#]*@",
        _reject_url_password,
    ),
    # Connection strings (ADO.NET, ODBC, JDBC): "Password=...;" / "Pwd={...}" / "&password=".
    # https://learn.microsoft.com/dotnet/framework/data/adonet/connection-string-syntax
    LeakRule(
        "connection-string-password",
        r"(?i:[;?&]\s{0,4}(?:password|pwd|passwd)\s{0,4}=\s{0,4})"
        r"(?:\{(?P<secret>[^}\r\n]+)\}|\"(?P<secret2>[^\"\r\n]+)\""
        r"|'(?P<secret3>[^'\r\n]+)'|(?P<secret4>[^;&\s\"'\[\]<>]+))"
        # Without a `;` before the key, the `;` after the value marks a connection string.
        r"|(?i:\b(?:password|pwd)\s{0,4}=\s{0,4})"
        r"(?:\{(?P<secret5>[^}\r\n]+)\}|(?P<secret6>[^;&\s\"'\[\]<>{]+));",
        r"(?i:password|pwd|passwd)\s*=",
        _reject_connection_password,
    ),
    # Secrets spelled out in code and config: `password = "..."`, `API_KEY=...`, `token: ...`,
    # `"client_secret": "..."`, `<password>...</password>`, `--password ...`. Only the value is
    # masked; values read from the environment or templated in are left alone.
    LeakRule(
        "password-assignment",
        # The optional `://user` start lets `reject` see a URL's userinfo (url-credentials').
        rf"(?:://[A-Za-z0-9._~%+-]{{0,64}}?)?{_SECRET_KEYWORD}{_ASSIGN}(?:{_quoted(1)}|{_BARE_VALUE})"
        rf"|{_SECRET_KEYWORD}>(?P<secret5>[^<\s]+)</"
        rf"|--{_FLAGS}(?:=|\s{{1,4}})(?P<secret6>[^\s\"'`]+)",
        rf"{_ASSIGN_TRIGGER}|{_SECRET_KEYWORD}>|--{_FLAGS}",
        _reject_assigned_value,
    ),
)
