"""Cloud and infrastructure credentials: AWS, Google Cloud, Azure, HashiCorp, hosting platforms.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import ASSIGN, B62, B64, HEX, URL, fake
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
        r"(?i:AccountKey|SharedAccessKey)\s{0,4}=\s{0,4}(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
        r"(?i:AccountKey|SharedAccessKey)\s*=",
        family="cloud",
        context=True,
        examples=(
            f"DefaultEndpointsProtocol=https;AccountName=rg;AccountKey={fake(B64, 86, 'az1')}==",
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
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
