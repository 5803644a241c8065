"""Chat and messaging credentials: Slack, Discord, Teams, Telegram, Twilio, and their webhook URLs.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

import string
from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import (
    B62,
    HEX,
    LOWER,
    UPPER,
    URL,
    fake,
    fake_uuid,
    reject_not_random_id,
)
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # Slack incoming webhooks: https://hooks.slack.com/services/T.../B.../<24 chars>.
    # https://api.slack.com/messaging/webhooks
    LeakRule(
        "slack-webhook",
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,200}",
        r"hooks\.slack\.com/",
        family="chat",
        examples=(
            f"https://hooks.slack.com/services/T{fake(UPPER, 8, 'sw1')}"
            f"/B{fake(UPPER, 9, 'sw2')}"
            f"/{fake(B62, 24, 'sw3')}",
            f"post to hooks.slack.com/workflows/T{fake(UPPER, 10, 'sw4')}/A{fake(B62, 30, 'sw5')}",
        ),
        near_misses=(
            "Post to https://hooks.slack.com/ with your webhook path.",
            "hooks.slack.com/services/T1",
        ),
        shape="`https://hooks.slack.com/services/` + path",
    ),
    # Microsoft Teams incoming webhooks (Office 365 connector URLs).
    # https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook
    LeakRule(
        "teams-webhook",
        r"https://(?:[A-Za-z0-9-]{1,63}\.webhook\.office\.com/webhookb2/"
        r"|outlook\.office(?:365)?\.com/webhook/)(?P<secret>[A-Za-z0-9@/_-]{60,400})",
        r"\.webhook\.office\.com/webhookb2/|outlook\.office(?:365)?\.com/webhook/",
        family="chat",
        examples=(
            f"https://acme.webhook.office.com/webhookb2/{fake(HEX, 36, 'tw1')}"
            f"@{fake(HEX, 36, 'tw2')}"
            f"/IncomingWebhook/{fake(HEX, 32, 'tw3')}/{fake(HEX, 36, 'tw4')}",
            f"url: https://org.webhook.office.com/webhookb2/{fake(URL, 120, 'tw5')}",
            # The connector URLs before 2021 (outlook.office.com/webhook/...).
            f"https://outlook.office.com/webhook/{fake(HEX, 36, 'tw6')}@{fake(HEX, 36, 'tw7')}"
            f"/IncomingWebhook/{fake(HEX, 32, 'tw8')}/{fake(HEX, 36, 'tw9')}",
        ),
        near_misses=(
            "See https://acme.webhook.office.com/webhookb2/ docs.",
            "webhook.office.com/webhookb2/x",
        ),
        shape="`https://<org>.webhook.office.com/webhookb2/` (or `outlook.office.com/webhook/`)"
        " + path",
    ),
    # Discord bot tokens: base64(user id) "." base64(timestamp) "." HMAC; ids start M/N/O.
    # https://discord.com/developers/docs/reference#authentication
    LeakRule(
        "discord-bot-token",
        r"(?:^|[^A-Za-z0-9_.-])(?P<secret>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}"
        r"\.[A-Za-z0-9_-]{27,40})(?:[^A-Za-z0-9_.-]|$)",
        r"[MNO][A-Za-z0-9_-]+\.[A-Za-z0-9_-]{6}\.",
        family="chat",
        examples=(
            f"bot token M{fake(URL, 23, 'd1')}.{fake(URL, 6, 'd2')}.{fake(URL, 27, 'd3')}",
            f"DISCORD=N{fake(URL, 25, 'd4')}.{fake(URL, 6, 'd5')}.{fake(URL, 38, 'd6')}",
        ),
        near_misses=(
            "Use Node.js or Microsoft.Extensions.Logging for the bot.",
            "MTIz.abcdef.short",
        ),
        shape="`M`/`N`/`O` + 23-27 + `.` + 6 + `.` + 27-40 base64url",
    ),
    # Discord webhooks: https://discord.com/api/webhooks/<snowflake>/<68-char token>.
    # https://discord.com/developers/docs/resources/webhook
    LeakRule(
        "discord-webhook",
        r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
        r"[A-Za-z0-9_-]{60,80}",
        r"discord(?:app)?\.com/api/webhooks/",
        family="chat",
        examples=(
            f"https://discord.com/api/webhooks/{fake(string.digits, 18, 'dw1')}"
            f"/{fake(URL, 68, 'dw2')}",
            f"https://discordapp.com/api/webhooks/{fake(string.digits, 19, 'dw3')}"
            f"/{fake(URL, 68, 'dw4')}",
        ),
        near_misses=(
            "Webhook URLs look like https://discord.com/api/webhooks/<id>/<token>.",
            "https://discord.com/api/webhooks/123/abc",
        ),
        shape="`https://discord.com/api/webhooks/` + id + `/` + 68 chars",
    ),
    # Telegram bot tokens: "<bot id>:<35 chars>"; the secret half starts "AA" in practice and
    # "ABC" in the docs' example. https://core.telegram.org/bots/api#authorizing-your-bot
    LeakRule(
        "telegram-bot-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[0-9]{5,16}:A[A-Za-z0-9_-]{32,34})(?:[^A-Za-z0-9_-]|$)",
        r"[0-9]:A",
        family="chat",
        examples=(
            f"bot {fake(string.digits, 10, 'tg1')}:AA{fake(URL, 33, 'tg2')}",
            f"TELEGRAM_TOKEN={fake(string.digits, 9, 'tg3')}:AA{fake(URL, 32, 'tg4')}",
        ),
        near_misses=("The meeting is at 10:AM, bot 123456:ABC is an example.", "12345:AAshort"),
        shape="5-16 digits + `:A` + 32-34 base64url",
    ),
    # Mattermost incoming webhooks: https://<host>/hooks/<26 lower-case base36 id>; whoever has
    # the URL posts as the integration. https://developers.mattermost.com/integrate/webhooks/incoming/
    LeakRule(
        "mattermost-webhook",
        r"https?://[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?/hooks/(?P<secret>[a-z0-9]{26})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"/hooks/",
        reject_not_random_id,
        family="chat",
        examples=(
            f"curl -X POST https://chat.example.org/hooks/{fake(LOWER, 26, 'mm1')} -d @msg.json",
            f"MATTERMOST_WEBHOOK=https://mm.internal:8065/hooks/{fake(LOWER, 26, 'mm2')}",
        ),
        near_misses=(
            "https://chat.example.org/hooks/incomingwebhookdocsxyzabc",
            "https://chat.example.org/hooks/xxxxxxxxxxxxxxxxxxxxxxxxxx",
        ),
        shape="`https://<host>/hooks/` + 26 lower",
    ),
    # Rocket.Chat incoming webhooks: https://<host>/hooks/<integration id>/<token>.
    # https://docs.rocket.chat/use-rocket.chat/workspace-administration/integrations
    LeakRule(
        "rocketchat-webhook",
        r"https?://[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?/hooks/"
        r"(?P<secret>[A-Za-z0-9]{17}/[A-Za-z0-9_-]{40,64})(?:[^A-Za-z0-9_-]|$)",
        r"/hooks/",
        reject_fake,
        family="chat",
        examples=(
            f"https://rocket.example.com/hooks/{fake(B62, 17, 'rc1')}/{fake(B62, 48, 'rc2')}",
            f'"url": "https://chat.acme.io/hooks/{fake(B62, 17, "rc3")}/{fake(URL, 48, "rc4")}"',
        ),
        near_misses=(
            "https://rocket.example.com/hooks/<integration-id>/<token>",
            f"https://rocket.example.com/hooks/{fake(B62, 17, 'rc5')}/{'x' * 48}",
        ),
        shape="`https://<host>/hooks/` + 17 + `/` + token",
    ),
    # Google Chat incoming webhooks: .../spaces/<space>/messages?key=<API key>&token=<token>;
    # the token is the webhook's own secret (the key is google-api-key's).
    # https://developers.google.com/workspace/chat/quickstart/webhooks
    LeakRule(
        "google-chat-webhook",
        r"chat\.googleapis\.com/v1/spaces/[A-Za-z0-9_-]{4,64}/messages\?[^\s\"'<>#]{0,200}?"
        r"(?:&|&amp;)token=(?P<secret>[A-Za-z0-9_%=-]{20,128})",
        r"chat\.googleapis\.com/v1/spaces/",
        reject_fake,
        family="chat",
        examples=(
            "https://chat.googleapis.com/v1/spaces/AAAA"
            + fake(URL, 7, "gc1")
            + f"/messages?key=AIza{fake(URL, 35, 'gc2')}&token={fake(URL, 43, 'gc3')}%3D",
            "WEBHOOK='https://chat.googleapis.com/v1/spaces/AAAA"
            + fake(URL, 7, "gc4")
            + f"/messages?key=AIza{fake(URL, 35, 'gc5')}&amp;token={fake(URL, 43, 'gc6')}'",
        ),
        near_misses=(
            "POST https://chat.googleapis.com/v1/spaces/SPACE_ID/messages?key=KEY&token=TOKEN",
            "https://chat.googleapis.com/v1/spaces/AAAAxyz/messages?key=${KEY}&token=${TOKEN}",
        ),
        shape="`chat.googleapis.com/v1/spaces/.../messages?...&token=` + token",
    ),
    # Webex incoming webhooks: https://webexapis.com/v1/webhooks/incoming/<base64 id>.
    # https://apphub.webex.com/applications/incoming-webhooks-cisco-systems-38054-23307
    LeakRule(
        "webex-webhook",
        r"(?:webexapis\.com|api\.ciscospark\.com)/v1/webhooks/incoming/"
        r"(?P<secret>[A-Za-z0-9_=-]{40,400})",
        r"webexapis\.com/v1/webhooks/incoming/|api\.ciscospark\.com/v1/webhooks/incoming/",
        reject_fake,
        family="chat",
        examples=(
            "https://webexapis.com/v1/webhooks/incoming/Y2lzY29zcGFyazovL3Vz"
            + fake(B62, 80, "wx1"),
            f"curl -X POST https://api.ciscospark.com/v1/webhooks/incoming/{fake(URL, 60, 'wx2')}",
        ),
        near_misses=(
            "https://webexapis.com/v1/webhooks/incoming/<webhook-id>",
            "See https://webexapis.com/v1/webhooks/incoming/ for the endpoint.",
        ),
        shape="`webexapis.com/v1/webhooks/incoming/` + id",
    ),
    # Feishu / Lark custom bots: https://open.feishu.cn/open-apis/bot/v2/hook/<uuid>.
    # https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
    LeakRule(
        "feishu-webhook",
        r"open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/"
        r"(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
        r"/open-apis/bot/v2/hook/",
        reject_fake,
        family="chat",
        examples=(
            f"https://open.feishu.cn/open-apis/bot/v2/hook/{fake_uuid('fs1')}",
            f"LARK_HOOK=https://open.larksuite.com/open-apis/bot/v2/hook/{fake_uuid('fs2')}",
        ),
        near_misses=(
            "https://open.feishu.cn/open-apis/bot/v2/hook/****",
            "https://open.feishu.cn/open-apis/bot/v2/hook/xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
        ),
        shape="`open.feishu.cn/open-apis/bot/v2/hook/` + UUID",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("slack-user-token", "chat", ["xoxp-", "xoxe-"], R("digits", 10, 13), "-",
          R("digits", 10, 13), "-", R("digits", 10, 13), "-", R("url", 28, 34)),
    token("slack-legacy-token", "chat", ["xoxo-", "xoxs-"], R("digits", 1, 16), "-",
          R("digits", 1, 16), "-", R("digits", 1, 16), "-", R("Hex", 10, 64)),
    token("slack-workspace-token", "chat", ["xoxa-2-", "xoxr-2-"], R("b62", 8, 48)),
    # Slack's rotating tokens: config access tokens (`xoxe.xoxp-1-`) and refresh tokens
    # (`xoxe-1-`); the documented lengths (163-166, 146) have grown before: any length past 100.
    token("slack-config-token", "chat", ["xoxe.xoxb-1-", "xoxe.xoxp-1-"], R("b62", 100, 400)),
    token("slack-refresh-token", "chat", ["xoxe-1-"], R("b62", 100, 400)),
    token("slack-app-token", "chat", ["xapp-1-"], R("upper", 9, 12), "-", R("digits", 10, 16),
          "-", R("hex", 64)),
    token("twilio-api-key", "chat", ["SK"], R("Hex", 32)),
    token("twilio-account-token", "chat", ["AC"], R("hex", 32), ":", R("hex", 32)),
    token("intercom-token", "chat", ["dG9rOj"], R("b64", 40, 80)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("gitter-token", "chat", ["gitter"], R("url", 40), key="GITTER_TOKEN"),
    keyed("mattermost-token", "chat", ["mattermost"], R("lower", 26), key="MATTERMOST_TOKEN"),
    keyed("messagebird-api-key", "chat", ["messagebird", "message_bird", "message-bird"],
          R("b62", 25), key="MESSAGEBIRD_API_KEY"),
    keyed("sendbird-token", "chat", ["sendbird"], R("hex", 40), key="SENDBIRD_API_TOKEN"),
    keyed("twitch-api-token", "chat", ["twitch"], R("lower", 30), key="TWITCH_CLIENT_SECRET"),
    keyed("discord-client-secret", "chat", ["discord"], R("url", 32),
          key="DISCORD_CLIENT_SECRET"),
    keyed("line-channel-token", "chat", ["line_channel", "line-channel"], R("b64", 160, 180),
          key="LINE_CHANNEL_ACCESS_TOKEN"),
    keyed("twilio-auth-token", "chat", ["twilio"], R("hex", 32), key="TWILIO_AUTH_TOKEN"),
)
# fmt: on

# Secrets known by their context alone: listed last, so a specific rule names a span both match.
CONTEXT: Final[tuple[LeakRule, ...]] = (
    # Slack bot and user tokens in any of their forms (two or three digit groups), after the
    # specific Slack tokens of TOKENS: xoxb-<team>-<bot>-<secret>.
    # https://api.slack.com/authentication/token-types
    LeakRule(
        "slack-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>(?:xox[bp]|xoxe\.xox[bp])-[0-9]{8,14}"
        # Ends on a letter or digit, not before a `#`/`*` run (`xoxp-...-####`: a stand-in).
        r"-[0-9A-Za-z-]{9,249}[0-9A-Za-z])(?:[^A-Za-z0-9_#*-]|$)",
        r"xox[bp]-|xoxe\.xox",
        family="chat",
        examples=(
            f"SLACK_BOT={'xoxb'}-{fake(string.digits, 12, 's1')}-{fake(string.digits, 13, 's2')}"
            f"-{fake(B62, 24, 's3')}",
            f"token xoxb-{fake(string.digits, 11, 's4')}-{fake(B62, 24, 's5')}",
        ),
        near_misses=(
            "https://cdn.example.com/2019/05/hugs-xoxo-indieweb-1.jpg",
            "Bot tokens (xoxb-...) and user tokens (xoxp-...) differ in scope.",
        ),
        shape="`xoxb-` + digits + `-` + digits + `-` + base62",
    ),
)
