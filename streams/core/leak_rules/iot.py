"""IoT platform credentials: device tokens in API paths and URLs, and the platforms' keys.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses. A device
token often travels in the URL itself (ThingsBoard's `/api/v1/<token>/telemetry`, Blynk's
`/<token>/update/V1`), where the path segment is the whole credential.
"""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import B62, URL, fake, reject_not_random_id
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # ThingsBoard's device HTTP API: the access token is the path segment after /api/v1/.
    # https://thingsboard.io/docs/reference/http-api/
    LeakRule(
        "thingsboard-device-token",
        r"/api/v1/(?P<secret>[A-Za-z0-9_-]{8,64})/(?:telemetry|attributes|rpc|claim"
        r"|firmware|software|provision)(?:[^A-Za-z0-9_-]|$)",
        r"/api/v1/",
        reject_not_random_id,
        family="iot",
        examples=(
            f"curl -v -X POST https://thingsboard.cloud/api/v1/{fake(B62, 20, 'tb1')}/telemetry"
            " --header Content-Type:application/json --data '{\"t\":21}'",
            f"http://tb.local:8080/api/v1/{fake(B62, 20, 'tb2')}/attributes?clientKeys=mode",
        ),
        near_misses=(
            "POST /api/v1/$ACCESS_TOKEN/telemetry with a JSON body",
            "GET https://example.com/api/v1/projects/attributes",
            "https://thingsboard.cloud/api/v1/<ACCESS_TOKEN>/rpc",
        ),
        shape="`/api/v1/` + token + `/telemetry|attributes|rpc`",
    ),
    # Blynk auth tokens (32 characters): in the legacy HTTP API path (`/<token>/update/V1`)
    # and in a sketch's `#define BLYNK_AUTH_TOKEN "..."` (or `char auth[] = "..."`).
    # https://docs.blynk.io/en/blynk.cloud/https-api-overview
    LeakRule(
        "blynk-auth-token",
        r"blynk[A-Za-z0-9.-]{0,64}(?::[0-9]{1,5})?/(?P<secret>[A-Za-z0-9_-]{32})/(?:update|get"
        r"|notify|email|isHardwareConnected|isAppConnected|project|qr|pin|rtc|logEvent)"
        r"|#define[ \t]+BLYNK_AUTH_TOKEN[ \t]+\\?\"(?P<secret2>[A-Za-z0-9_-]{32})\\?\"",
        r"blynk|BLYNK_AUTH_TOKEN",
        reject_fake,
        family="iot",
        examples=(
            f"curl http://blynk-cloud.com/{fake(URL, 32, 'bl1')}/update/V1?value=42",
            f'#define BLYNK_AUTH_TOKEN "{fake(URL, 32, "bl2")}"',
        ),
        near_misses=(
            '#define BLYNK_AUTH_TOKEN "YourAuthToken"',
            "http://blynk-cloud.com/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/update/V1?value=1",
        ),
        shape="`blynk.../` + 32 + `/update`, `#define BLYNK_AUTH_TOKEN` + 32",
    ),
)

# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("adafruit-io-key", "iot", ["aio_"], R("b62", 28)),
    token("ubidots-token", "iot", ["BBFF-", "BBUS-"], R("b62", 30)),
    token("samsara-api-token", "iot", ["samsara_api_"], R("b62", 30)),
)
# fmt: on

# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("thingspeak-api-key", "iot", ["thingspeak"], R("upper", 16),
          key="THINGSPEAK_WRITE_API_KEY"),
    keyed("particle-access-token", "iot", ["particle"], R("hex", 40),
          key="PARTICLE_ACCESS_TOKEN"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
