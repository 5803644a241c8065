"""AI provider credentials: OpenAI, Anthropic, Groq, Hugging Face, and the other model APIs.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from streams.core.leak_rules.filters import reject_fake
from streams.core.leak_rules.pieces import B62, URL, fake, reject_pair_secret
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import UUID, R, keyed, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # OpenAI API keys: project (sk-proj-), service account (sk-svcacct-), admin (sk-admin-), and
    # legacy user keys "sk-" + 48 base62 (containing "T3BlbkFJ").
    # https://platform.openai.com/docs/api-reference/authentication
    LeakRule(
        "openai-api-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,250}"
        r"|[A-Za-z0-9]{20,100}))(?:[^A-Za-z0-9_-]|$)",
        r"sk-",
        reject_pair_secret,
        family="ai",
        examples=(
            f"OPENAI_API_KEY=sk-proj-{fake(URL, 80, 'oa1')}",
            f"key sk-{fake(B62, 20, 'oa2')}T3BlbkFJ{fake(B62, 20, 'oa3')}",
        ),
        near_misses=(
            "Set OPENAI_API_KEY=sk-... in a shell; scikit-learn has risk-based splits.",
            "sk-short",
        ),
        shape="`sk-proj-` + 20-250, `sk-` + 20-100 base62",
    ),
    # Claude Code remote session links: whoever holds the link can drive the session.
    # https://docs.anthropic.com/en/docs/claude-code
    LeakRule(
        "claude-code-session-url",
        r"(?i:https?://claude\.ai/code/)(?P<secret>session_[A-Za-z0-9]{16,128})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"(?i:claude\.ai/code/session_)",
        reject_fake,
        family="ai",
        examples=(
            f"Resume at https://claude.ai/code/session_{fake(B62, 24, 'cl1')} when you're back.",
            f'session = "https://CLAUDE.AI/code/session_{fake(B62, 18, "cl2")}/?ref=mail"',
        ),
        near_misses=(
            "Open https://claude.ai/code/session_short to see it.",
            f"https://claude.ai/chat/session_{fake(B62, 24, 'cl3')}",
        ),
        shape="`https://claude.ai/code/session_` + 16+ base62",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
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
    # --- Search, retrieval and agent tooling ---------------------------------------------------
    token("tavily-api-key", "ai", ["tvly-", "tvly-dev-", "tvly-prod-"], R("b62", 32)),
    token("jina-api-key", "ai", ["jina_"], R("b62", 60)),
    # `fc-` + 11 hex (the usual trigger) is in every UUID whose fourth group ends `fc`: 20.
    replace(token("firecrawl-api-key", "ai", ["fc-"], R("hex", 32)),
            trigger="fc-" + "[a-f0-9]" * 20),
    token("langsmith-legacy-api-key", "ai", ["ls__"], R("hex", 32)),
    token("voiceflow-api-key", "ai", ["VF.DM.", "VF.WS.", "VF."], R("Hex", 24), ".", R("b62", 16)),
)
# fmt: on

# Values known by the vendor's name beside them (`SUMO_ACCESS_ID = "..."`).
# fmt: off
KEYED: Final[tuple[LeakRule, ...]] = (
    keyed("cohere-api-key", "ai", ["cohere", "co_api_key"], R("b62", 40), key="COHERE_API_KEY"),
    keyed("mistral-api-key", "ai", ["mistral"], R("b62", 32), key="MISTRAL_API_KEY"),
    keyed("together-api-key", "ai", ["together"], R("hex", 64), key="TOGETHER_API_KEY"),
    keyed("wandb-api-key", "ai", ["wandb"], R("hex", 40), key="WANDB_API_KEY"),
    keyed("deepgram-api-key", "ai", ["deepgram"], R("hex", 40), key="DEEPGRAM_API_KEY"),
    keyed("assemblyai-api-key", "ai", ["assemblyai"], R("hex", 32), key="ASSEMBLYAI_API_KEY"),
    keyed("privateai-api-key", "ai", ["privateai", "private_ai", "private-ai"], R("lower", 32),
          key="PRIVATE_AI_KEY"),
    keyed("exa-api-key", "ai", ["exa_api", "exa-api", "exaapi"], *UUID, key="EXA_API_KEY"),
)
# fmt: on

CONTEXT: Final[tuple[LeakRule, ...]] = ()
