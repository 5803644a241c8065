"""A deterministic corpus of agent replies for the masking benchmark (generated, never committed).

Mostly benign and realistic: prose, Markdown lists, code in several languages, shell sessions,
URLs with query strings, JSON, logs with timestamps, UUIDs and commit hashes, stack traces. One
reply in `SECRET_EVERY` carries a secret taken from the labelled leak corpus' rows.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

from bench.workload import WORDS

LEAK_CORPUS = Path(__file__).resolve().parent.parent / "tests" / "leak_corpus"
SECRET_EVERY = 400
HOSTS = ("api.example.com", "docs.python.org", "github.com", "grafana.internal", "s3.amazonaws.com")


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 20))]
    return " ".join(words).capitalize() + "."


def _prose(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 6)))


def _url(rng: random.Random) -> str:
    path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
    pairs = (f"{rng.choice(WORDS)}={rng.randint(1, 99999)}" for _ in range(rng.randint(0, 3)))
    query = "&".join(pairs)
    return f"https://{rng.choice(HOSTS)}/{path}" + (f"?{query}" if query else "")


def _python(rng: random.Random) -> str:
    name = rng.choice(WORDS)
    return (
        "```python\n"
        "import os\nimport json\n\n\n"
        f"def {name}_{rng.randint(1, 99)}(path: str, retries: int = 3):\n"
        f'    """Load the {rng.choice(WORDS)} file and return its records."""\n'
        f'    token = os.environ["API_TOKEN"]\n'
        f'    with open(path, encoding="utf-8") as fh:\n'
        f"        data = json.load(fh)\n"
        f'    return [r for r in data if r.get("{rng.choice(WORDS)}") > {rng.randint(0, 100)}]\n'
        "```"
    )


def _javascript(rng: random.Random) -> str:
    return (
        "```js\n"
        f"const res = await fetch('{_url(rng)}',\n"
        "  { headers: { Accept: 'application/json' } });\n"
        f"const {rng.choice(WORDS)}Items = (await res.json()).items\n"
        f"  .filter(x => x.id > {rng.randint(1, 500)});\n"
        "console.log(`loaded ${items.length} items`);\n"
        "```"
    )


def _shell(rng: random.Random) -> str:
    sha = f"{rng.getrandbits(160):040x}"
    return (
        "```console\n"
        f"$ git log --oneline -1\n{sha[:7]} Fix the {rng.choice(WORDS)} {rng.choice(WORDS)}\n"
        f"$ git rev-parse HEAD\n{sha}\n"
        f"$ kubectl get pods -n {rng.choice(WORDS)}\n"
        f"NAME                          READY   STATUS    RESTARTS   AGE\n"
        f"web-{rng.getrandbits(40):010x}-{''.join(rng.choices(string.ascii_lowercase, k=5))}"
        f"   1/1     Running   0          {rng.randint(1, 59)}m\n"
        "```"
    )


def _json(rng: random.Random) -> str:
    doc = {
        "id": str(uuid.UUID(int=rng.getrandbits(128))),
        "name": rng.choice(WORDS),
        "url": _url(rng),
        "count": rng.randint(0, 10**6),
        "tags": [rng.choice(WORDS) for _ in range(3)],
        "checksum": f"sha256:{rng.getrandbits(256):064x}",
    }
    return "```json\n" + json.dumps(doc, indent=2) + "\n```"


def _logs(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(3, 10)):
        lines.append(
            f"2026-11-{rng.randint(1, 30):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f"{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z "
            f"{rng.choice(('INFO', 'WARN', 'ERROR', 'DEBUG'))} "
            f"request_id={uuid.UUID(int=rng.getrandbits(128))} "
            f"path={_url(rng)} status={rng.choice((200, 201, 404, 500))} "
            f"took={rng.randint(1, 2000)}ms"
        )
    return "```\n" + "\n".join(lines) + "\n```"


def _traceback(rng: random.Random) -> str:
    return (
        "```\nTraceback (most recent call last):\n"
        f'  File "/srv/app/{rng.choice(WORDS)}/views.py", line {rng.randint(1, 900)}, in handle\n'
        f"    result = service.{rng.choice(WORDS)}(request.user_id)\n"
        f"KeyError: '{rng.choice(WORDS)}'\n```"
    )


def _list(rng: random.Random) -> str:
    return "\n".join(f"- {_sentence(rng)} See {_url(rng)}" for _ in range(rng.randint(2, 6)))


PARTS: tuple[Callable[[random.Random], str], ...] = (
    _prose,
    _prose,
    _prose,
    _list,
    _python,
    _javascript,
    _shell,
    _json,
    _logs,
    _traceback,
)


def load_labelled(name: str) -> list[dict[str, str]]:
    with (LEAK_CORPUS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build(total_bytes: int = 10 * 1024 * 1024, seed: int = 11) -> tuple[list[str], int]:
    """Replies adding up to `total_bytes` of UTF-8, and how many carry a secret."""
    rng = random.Random(seed)
    secret_rows = load_labelled("secrets.jsonl")
    replies: list[str] = []
    size = 0
    with_secret = 0
    while size < total_bytes:
        parts = [rng.choice(PARTS)(rng) for _ in range(rng.randint(2, 6))]
        if len(replies) % SECRET_EVERY == SECRET_EVERY - 1:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(secret_rows)["text"])
            with_secret += 1
        reply = "\n\n".join(parts)
        replies.append(reply)
        size += len(reply.encode("utf-8"))
    return replies, with_secret
