"""Cloud and infrastructure credentials: AWS, Google Cloud, Azure, HashiCorp, hosting platforms.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import (
    ASSIGN,
    B62,
    B64,
    HEX,
    UPPER,
    URL,
    fake,
    reject_not_mixed_case,
    reject_pair_half,
)
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID_ANY_CASE, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # AWS secret access keys: 40 chars of base64 alphabet, only recognisable next to their name
    # (aws_secret_access_key in ~/.aws/credentials, AWS_SECRET_ACCESS_KEY, "SecretAccessKey").
    # https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html
    LeakRule(
        "aws-secret-access-key",
        r"(?i:secret_?access_?key|aws_?secret_?key)"
        rf"{ASSIGN}\\?[\"'`]?(?P<secret>[A-Za-z0-9/+]{{40}})(?:[^A-Za-z0-9/+=]|$)",
        r"(?i:secret_?access_?key|aws_?secret_?key)",
        family="cloud",
        context=True,
        examples=(
            f"aws_secret_access_key = {fake(B64, 40, 'aws1')}",
            f'"SecretAccessKey": "{fake(B64, 40, "aws2")}"',
        ),
        near_misses=(
            'aws_secret_access_key = os.environ["AWS_SECRET_ACCESS_KEY"]',
            f"aws_secret_access_key = {fake(B64, 39, 'aws3')}",
        ),
        shape="`aws_secret_access_key =` + 40 base64",
    ),
    # Azure Storage / Service Bus / Event Hubs connection strings: AccountKey= (88-char base64 of
    # 64 bytes) and SharedAccessKey= (44-char base64 of 32 bytes).
    # https://learn.microsoft.com/azure/storage/common/storage-configure-connection-string
    LeakRule(
        "azure-storage-key",
        # `AccessKey=` also: Azure SignalR and Web PubSub connection strings.
        r"(?i:AccountKey|AccessKey)\s{0,4}=\s{0,4}(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
        r"(?i:AccountKey|AccessKey)\s*=",
        family="cloud",
        context=True,
        examples=(
            f"DefaultEndpointsProtocol=https;AccountName=rg;AccountKey={fake(B64, 86, 'az1')}==",
            f"Endpoint=https://chat.service.signalr.net;AccessKey={fake(B64, 43, 'az4')}=;"
            "Version=1.0;",
            f"Endpoint=sb://rg.servicebus.windows.net/;SharedAccessKey={fake(B64, 43, 'az2')}=",
        ),
        near_misses=(
            "DefaultEndpointsProtocol=https;AccountName=rg;AccountKey=${STORAGE_KEY}",
            "SharedAccessKeyName=RootManageSharedAccessKey;",
        ),
        shape="`AccountKey=` + 88 base64",
    ),
    # Microsoft Entra ID (Azure AD) client secrets: 40 chars with "Q~" at offset 3 (the format
    # of secrets created since 2021; GitHub secret scanning's azure_active_directory type).
    # https://learn.microsoft.com/entra/identity-platform/howto-create-service-principal-portal
    LeakRule(
        "azure-ad-client-secret",
        r"(?:^|[^A-Za-z0-9_~.-])(?P<secret>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})"
        r"(?:[^A-Za-z0-9_~.-]|$)",
        r"[0-9]Q~",
        reject_fake,
        family="cloud",
        examples=(
            f"client secret: {fake(B62, 3, 'ad1')}8Q~{fake(B62, 34, 'ad2')}",
            f"AZURE_CLIENT_SECRET={fake(B62, 3, 'ad3')}7Q~{fake(B62, 31, 'ad4')}",
        ),
        near_misses=("Use the Q~ marker: secrets like abc1Q~ are 40 chars.", "7Q~ is short"),
        shape="3 chars + digit + `Q~` + 31-34 chars",
    ),
    # Pre-signed URLs: the signature is a bearer credential until it expires. AWS SigV4
    # X-Amz-Signature (64 hex), GCS V4 X-Goog-Signature (hex RSA), Azure SAS sig= (base64 HMAC).
    # https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
    # https://learn.microsoft.com/rest/api/storageservices/create-service-sas
    LeakRule(
        "signed-url-signature",
        r"[?&](?i:x-amz-signature|x-goog-signature)=(?P<secret>[0-9a-fA-F]{64,})"
        r"|[?&]sig=(?P<secret2>[A-Za-z0-9%+/]{20,200}(?:%3[Dd]|=){0,2})",
        r"[?&](?i:x-amz-signature|x-goog-signature)=|[?&]sig=",
        family="cloud",
        examples=(
            "https://b.s3.amazonaws.com/r.csv?X-Amz-Date=20240101T000000Z&X-Amz-Signature="
            + fake(HEX, 64, "sig1"),
            f"https://rg.blob.core.windows.net/a.pdf?sv=2022-11-02&sig={fake(B62, 43, 'sig2')}%3D",
        ),
        near_misses=(
            "https://example.com/download?file=report.pdf&signature_version=4&sig=abc",
            "https://b.s3.amazonaws.com/r.csv?X-Amz-Signature=abc123",
        ),
        shape="`X-Amz-Signature=` + 64 hex, `sig=` + base64",
    ),
    # Terraform Cloud / HCP Terraform API tokens: 14 chars + ".atlasv1." + 60+ chars.
    # https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens
    LeakRule(
        "terraform-cloud-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,100})"
        r"(?:[^A-Za-z0-9_=-]|$)",
        r"\.atlasv1\.",
        reject_fake,
        family="cloud",
        examples=(
            f"token = {fake(B62, 14, 'tf1')}.atlasv1.{fake(URL, 67, 'tf2')}",
            f"TFE_TOKEN {fake(B62, 14, 'tf3')}.atlasv1.{fake(URL, 90, 'tf4')}",
        ),
        near_misses=(
            "Terraform Cloud tokens contain .atlasv1. in the middle.",
            f"{fake(B62, 14, 'tf5')}.atlasv1.short",
        ),
        shape="14 base62 + `.atlasv1.` + 60-100 chars",
    ),
    # Fly.io tokens as `flyctl` prints them: "FlyV1 " then comma-separated macaroons (fm1r_,
    # fm1a_, fm2_ + base64). The whole list is the credential, the scheme word is not.
    # https://fly.io/docs/security/tokens/
    LeakRule(
        "fly-io-macaroon",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>fm(?:1[ar]|2)_[A-Za-z0-9+/]{40,}={0,3}"
        r"(?:,(?:fm(?:1[ar]|2)|fo1)_[A-Za-z0-9+/_-]{8,}={0,3}){0,8})(?:[^A-Za-z0-9_+/=-]|$)",
        r"fm1[ar]_|fm2_",
        family="cloud",
        examples=(
            f"Authorization: FlyV1 fm2_{fake(B64, 120, 'fly1')}==,fm2_{fake(B64, 60, 'fly2')}",
            f"FLY_API_TOKEN=fm1r_{fake(B64, 100, 'fly3')}",
        ),
        near_misses=("FlyV1 tokens start fm2_ and are long.", "fm2_short"),
        shape="`FlyV1 ` + `fm2_` + base64 (comma-separated)",
    ),
    # Azure Data Factory self-hosted integration runtime keys:
    # IR@<GUID>@<factory name>@<region>@<44 base64>.
    # https://learn.microsoft.com/azure/data-factory/create-self-hosted-integration-runtime
    LeakRule(
        "azure-datafactory-shir-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>IR@[0-9A-Za-z-]{36}@[^@\s\"'<>]{1,128}@[0-9A-Za-z=-]{0,64}"
        r"@[A-Za-z0-9+/]{43}=?)(?:[^A-Za-z0-9+/=]|$)",
        r"IR@",
        reject_fake,
        family="cloud",
        examples=(
            f"AUTH_KEY=IR@{fake(HEX, 8, 'df1')}-{fake(HEX, 4, 'df2')}-{fake(HEX, 4, 'df3')}-"
            f"{fake(HEX, 4, 'df4')}-{fake(HEX, 12, 'df5')}@adf-prod-01@westeurope@"
            f"{fake(B64, 43, 'df6')}=",
            f"key: IR@{fake(HEX, 8, 'df7')}-{fake(HEX, 4, 'df8')}-{fake(HEX, 4, 'df9')}-"
            f"{fake(HEX, 4, 'dfa')}-{fake(HEX, 12, 'dfb')}@factory@eu@"
            f"{fake(B64, 43, 'dfc')}=",
        ),
        near_misses=(
            "Register the runtime with a key that starts IR@ (see the portal).",
            f"IR@{fake(HEX, 36, 'dfd')}@adf@we@short=",
        ),
        shape="`IR@` + GUID + `@name@region@` + 44 base64",
    ),
    # A key id written right beside its secret (`'AKIA...''<40>'`, `AKIA...:<40>`, a tuple or a
    # CSV row): the secret half, which alone has no prefix. AWS (AKIA/ASIA + 16, then 40
    # base64), Tencent (AKID + 32, then 32), Alibaba (LTAI + 12-20, then 30). The id half is
    # its own rule's. https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html
    LeakRule(
        "access-key-pair-secret",
        r"(?:AKIA|ASIA)[A-Z0-9]{16}(?:\\?[\"'`]){0,2}[ \t]{0,4}[,:;|/=\t ]?[ \t]{0,4}"
        r"(?:\\?[\"'`]){0,2}(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"
        r"|AKID[A-Za-z0-9]{32}(?:\\?[\"'`]){0,2}[ \t]{0,4}[,:;|=\t ]?[ \t]{0,4}(?:\\?[\"'`]){0,2}"
        r"(?P<secret2>[A-Za-z0-9]{32})(?:[^A-Za-z0-9]|$)"
        r"|LTAI[A-Za-z0-9]{12,20}(?:\\?[\"'`]){0,2}[ \t]{0,4}[,:;|=\t ]?[ \t]{0,4}"
        r"(?:\\?[\"'`]){0,2}(?P<secret3>[A-Za-z0-9]{30})(?:[^A-Za-z0-9]|$)",
        r"AKIA|ASIA|AKID|LTAI",
        reject_pair_half,
        family="cloud",
        context=True,
        examples=(
            f"aws = ('AKIA{fake(UPPER, 16, 'kp1')}''{fake(B64, 40, 'kp2')}')",
            f"boto3.client('s3', 'AKIA{fake(UPPER, 16, 'kp3')}', '{fake(B64, 40, 'kp4')}')",
            f"AKIA{fake(UPPER, 16, 'kp5')},{fake(B64, 40, 'kp6')},prod",
            f'cred = Credential("AKID{fake(B62, 32, "kp7")}", "{fake(B62, 32, "kp8")}")',
        ),
        near_misses=(
            f"AKIA{fake(UPPER, 16, 'kp9')} then git log shows {fake(HEX, 40, 'kpa')}",
            f"AKIA{fake(UPPER, 16, 'kpb')}:EXAMPLEKEYEXAMPLEKEYEXAMPLEKEYEXAMPLEKEY",
        ),
        shape="key id (AKIA/AKID/LTAI...) + separator + its secret",
    ),
    # Azure DevOps personal access tokens since 2024: 84 characters with `AZDO` at 76-79.
    # https://learn.microsoft.com/azure/devops/organizations/accounts/use-personal-access-tokens-to-authenticate
    LeakRule(
        "azure-devops-pat",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4})(?:[^A-Za-z0-9_-]|$)",
        r"AZDO",
        reject_fake,
        family="cloud",
        examples=(
            f"AZURE_DEVOPS_EXT_PAT={fake(B62, 76, 'ad1')}AZDO{fake(B62, 4, 'ad2')}",
            f"git clone https://pat:{fake(B62, 76, 'ad3')}AZDO{fake(B62, 4, 'ad4')}"
            "@dev.azure.com/org/proj/_git/repo",
        ),
        near_misses=(
            "New Azure DevOps PATs carry AZDO near their end.",
            f"{fake(B62, 70, 'ad5')}AZDO{fake(B62, 4, 'ad6')}",
        ),
        shape="76 b62 + `AZDO` + 4 b62",
    ),
    # HashiCorp Vault unseal and recovery keys as `vault operator init` prints them, or given
    # to `vault operator unseal`: base64 Shamir shares.
    # https://developer.hashicorp.com/vault/docs/commands/operator/init
    LeakRule(
        "vault-unseal-key",
        r"(?i:unseal key|recovery key)[ \t]{1,4}[0-9]{1,2}[ \t]{0,4}:[ \t]{0,4}"
        r"(?P<secret>[A-Za-z0-9+/]{40,88}={0,2})(?:[^A-Za-z0-9+/=]|$)"
        r"|operator[ \t]+unseal[ \t]+(?:-[A-Za-z-]{1,20}(?:=[^\s]{0,64})?[ \t]+){0,3}"
        r"(?P<secret2>[A-Za-z0-9+/]{40,88}={0,2})(?:[^A-Za-z0-9+/=]|$)",
        r"(?i:unseal key|recovery key)|operator[ \t]+unseal",
        reject_fake,
        family="cloud",
        examples=(
            f"Unseal Key 1: {fake(B64, 44, 'vu1')}\nUnseal Key 2: {fake(B64, 44, 'vu2')}",
            f"vault operator unseal {fake(B64, 44, 'vu3')}",
        ),
        near_misses=(
            "Unseal Key 1: <redacted>",
            "vault operator unseal -migrate",
        ),
        shape="`Unseal Key N: ` + base64",
    ),
    # TrueNAS API keys: `<id>-` + 64 base62, beside the product's name or in the WebSocket
    # `auth.login_with_api_key` params. https://www.truenas.com/docs/api/
    LeakRule(
        "truenas-api-key",
        r"(?i:truenas[A-Za-z0-9_.-]{0,24}|login_with_api_key)[^\n]{0,40}?"
        r"(?:^|[^A-Za-z0-9_.-])(?P<secret>[0-9]{1,6}-[A-Za-z0-9]{64})(?:[^A-Za-z0-9_-]|$)",
        r"(?i:truenas|login_with_api_key)",
        reject_not_mixed_case,
        family="cloud",
        examples=(
            f'{{"msg": "method", "method": "auth.login_with_api_key", "params": ["1-'
            f'{fake(B62, 64, "tn1")}"]}}',
            f"TRUENAS_API_KEY=3-{fake(B62, 64, 'tn2')}",
        ),
        near_misses=(
            f"truenas sha256 1-{fake(HEX, 64, 'tn3')}",
            "Keys look like 1-<64 characters>.",
        ),
        shape="digits + `-` + 64 b62",
    ),
    # Azure App Configuration connection strings: Endpoint=https://<store>.azconfig.io;Id=..;
    # Secret=<base64>. https://learn.microsoft.com/azure/azure-app-configuration/howto-best-practices
    LeakRule(
        "azure-app-configuration-secret",
        r"\.azconfig\.io;[ \t]{0,4}Id=[^;\s]{1,64};[ \t]{0,4}"
        r"Secret=(?P<secret>[A-Za-z0-9+/]{20,100}={0,2})",
        r"\.azconfig\.io;",
        reject_fake,
        family="cloud",
        context=True,
        examples=(
            f"Endpoint=https://cfg-prod.azconfig.io;Id={fake(B62, 12, 'ac1')};"
            f"Secret={fake(B64, 43, 'ac2')}=",
            f'"AppConfig": "Endpoint=https://shop.azconfig.io;Id=a1-b2-s0:{fake(B62, 8, "ac3")};'
            f'Secret={fake(B64, 44, "ac4")}"',
        ),
        near_misses=(
            "Endpoint=https://cfg-prod.azconfig.io;Id=<id>;Secret=<secret>",
            "Endpoint=https://cfg-prod.azconfig.io;Id=abc;Secret=${APPCONFIG_SECRET}",
        ),
        shape="`<store>.azconfig.io;Id=...;Secret=` + base64",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("aws-access-key-id", "cloud", ["AKIA", "ASIA", "ABIA", "ACCA"], R("upper", 16)),
    token("google-api-key", "cloud", ["AIza"], R("url", 35)),
    token("google-oauth-client-secret", "cloud", ["GOCSPX-"], R("url", 28)),
    token("google-oauth-access-token", "cloud", ["ya29."], R("url", 20, 1000)),
    token("digitalocean-token", "cloud", ["dop_v1_", "doo_v1_", "dor_v1_"], R("hex", 64)),
    token("databricks-token", "cloud", ["dapi"], R("hex", 32), tail=r"(?:-[0-9])?"),
    token("vault-token", "cloud", ["hvs.", "hvb.", "hvr."], R("url", 24, 400)),
    token("pulumi-access-token", "cloud", ["pul-"], R("hex", 40)),
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
    token("aws-session-token", "cloud", ["IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE"], R("b64", 100, 2000),
          tail="={0,2}"),
    token("google-oauth-refresh-token", "cloud", ["1//0"], R("url", 40, 512)),
    token("tailscale-key", "cloud", ["tskey-api-", "tskey-auth-", "tskey-client-",
          "tskey-webhook-", "tskey-scim-"], R("b62", 8, 24), "-", R("b62", 20, 64)),
    token("zuplo-api-key", "cloud", ["zpka_"], R("hex", 32), "_", R("hex", 8)),
    token("saladcloud-api-key", "cloud", ["salad_cloud_"], R("b62", 1, 7), "_",
          R("b62", 7, 235)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
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
    # Vault service tokens before 1.10: `s.` + 24, read beside the name (`VAULT_TOKEN`,
    # `X-Vault-Token`); newer ones carry `hvs.` and are tokens of their own.
    keyed("vault-legacy-token", "cloud", ["vault"], "s.", R("b62", 24), key="VAULT_TOKEN"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
