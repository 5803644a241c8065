"""Secrets of vendors that exist nowhere, in every syntax a reply writes them in.

Made at test time from a fixed seed (`cases(seed)`): an invented vendor name (syllables drawn at
random), a credential word, and a value of a random shape (base62, hex, base64, URL-safe, a
prefix and base62, a UUID; a typed password after a password word) set in one syntax: env
files, YAML, JSON, Go, PHP/Ruby, Scala, XML elements and attributes, INI/TOML, struct and object
literals, call and constructor arguments, CLI flags (long, short, PowerShell, Windows), HTTP
headers, URL query parameters, connection strings, netrc, JSON-RPC params and prose. No value
was ever issued by anyone; the lines are ours.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass

B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = B62 + "+/"
URLSAFE = B62 + "-_"
SYLLABLES = (
    "zor",
    "blax",
    "quin",
    "trel",
    "vex",
    "ora",
    "plim",
    "nar",
    "dox",
    "ula",
    "kren",
    "fyth",
    "mab",
    "olo",
    "stri",
    "vun",
    "gald",
    "epo",
    "rix",
    "tam",
    "wyv",
    "ern",
    "jol",
    "pex",
)
PW_WORDS = ("Summer", "Winter", "Granite", "Harbor", "Falcon", "Maple", "Copper", "Orchid")


@dataclass(frozen=True)
class Case:
    syntax: str
    text: str
    secret: str


def _run(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def vendor(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def token_value(rng: random.Random) -> str:
    """A value in some issued shape (never a placeholder: no x/X runs, no stand-in words)."""
    kind = rng.randrange(7)
    if kind == 0:
        return _run(rng, B62, rng.randint(20, 48))
    if kind == 1:
        return _run(rng, HEX, rng.choice((32, 40, 64)))
    if kind == 2:
        return _run(rng, B64, rng.randint(30, 60)) + rng.choice(("", "=", "=="))
    if kind == 3:
        return _run(rng, URLSAFE, rng.randint(24, 48))
    if kind == 4:
        prefix = _run(rng, string.ascii_lowercase, rng.randint(2, 4))
        return f"{prefix}_{_run(rng, B62, rng.randint(24, 40))}"
    if kind == 5:
        h = _run(rng, HEX, 32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return _run(rng, string.ascii_uppercase + string.digits, rng.randint(20, 32))


def typed_password(rng: random.Random) -> str:
    """A password a person picks: a word, digits, maybe a symbol (`Harbor2024!`)."""
    return (
        rng.choice(PW_WORDS)
        + str(rng.randint(10, 9999))
        + rng.choice(("", "!", "#", "@", "$", "?", "*"))
    )


def _clean(value: str) -> str:
    # Values must not read as stand-ins: drop x/X (a `xxxx` run) and `*`.
    return value.replace("x", "k").replace("X", "K").replace("*", "%")


def _words(rng: random.Random) -> tuple[str, str, str]:
    """A credential word in three case styles: (snake, camel, title words)."""
    words = rng.choice(
        (
            ("api", "key"),
            ("token",),
            ("secret",),
            ("access", "key"),
            ("client", "secret"),
            ("auth", "token"),
            ("secret", "key"),
            ("api", "token"),
            ("signing", "key"),
            ("private", "key"),
            ("license", "key"),
            ("pat",),
            ("credential",),
            ("access", "token"),
        )
    )
    snake = "_".join(words)
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    title = " ".join(w.upper() if w in ("api", "pat") else w.capitalize() for w in words)
    return snake, camel, title


Template = Callable[[random.Random, str, str], tuple[str, str]]


def _t(syntax: str, password: bool = False) -> Callable[[Template], Template]:
    def register(fn: Template) -> Template:
        TEMPLATES.append((syntax, password, fn))
        return fn

    return register


TEMPLATES: list[tuple[str, bool, Template]] = []


@_t("env")
def _env(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, _c, _t2 = _words(rng)
    key = f"{v}_{snake}".upper()
    form = rng.choice((f"{key}={value}", f'export {key}="{value}"', f"{key}='{value}'"))
    return form, value


@_t("yaml")
def _yaml(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, camel, _t2 = _words(rng)
    key = rng.choice((f"{v}_{snake}", f"{v}{camel[0].upper()}{camel[1:]}", snake, camel))
    quote = rng.choice(("", '"', "'"))
    return f"{v}:\n  {key}: {quote}{value}{quote}\n  region: eu-west-1", value


@_t("json")
def _json(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, camel, _t2 = _words(rng)
    return f'{{"{v}": {{"endpoint": "https://api.{v}.io", "{camel}": "{value}"}}}}', value


@_t("go :=")
def _go(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, camel, _t2 = _words(rng)
    return f'\t{v}{camel[0].upper()}{camel[1:]} := "{value}"\n\tclient := {v}.New()', value


@_t("=>")
def _arrow(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, _c, _t2 = _words(rng)
    return f"'{v}' => [\n    '{snake}' => '{value}',\n],", value


@_t("->")
def _scala(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, _c, _t2 = _words(rng)
    return f'val conf = Map("{v}-{snake.replace("_", "-")}" -> "{value}")', value


@_t("whitespace")
def _spaced(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, _c, title = _words(rng)
    name = rng.choice((f"{v} {title.upper()}", f"{v.capitalize()} {title}", f"{v} {title}"))
    return f"{name} {value}", value


@_t("xml element")
def _xml(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, camel, _t2 = _words(rng)
    tag = rng.choice((f"{v}_{snake}", camel, f"{v}{camel[0].upper()}{camel[1:]}"))
    return f"<{v}>\n  <{tag}>{value}</{tag}>\n</{v}>", value


@_t("xml attribute")
def _xml_attr(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, camel, _t2 = _words(rng)
    name = f"{v.capitalize()}{camel[0].upper()}{camel[1:]}"
    return rng.choice(
        (
            f'<add key="{name}" value="{value}" />',
            f'<{v}Client endpoint="https://api.{v}.io" {camel}="{value}" />',
            f'<property name="{v}.{camel}" value="{value}"/>',
        )
    ), value


@_t("ini/toml")
def _ini(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, _c, _t2 = _words(rng)
    quote = rng.choice(("", '"'))
    return f"[{v}]\nendpoint = https://api.{v}.io\n{snake} = {quote}{value}{quote}", value


@_t("struct literal")
def _struct(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, camel, _t2 = _words(rng)
    pascal = camel[0].upper() + camel[1:]
    return rng.choice(
        (
            f'cfg := {v}.Config{{Region: "eu", {pascal}: "{value}"}}',
            f'var opts = new {v.capitalize()}Options {{ {pascal} = "{value}", Retries = 3 }};',
            f'const client = new {v.capitalize()}({{ {camel}: "{value}", timeout: 30 }});',
        )
    ), value


@_t("call argument")
def _call(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, camel, _t2 = _words(rng)
    pascal = camel[0].upper() + camel[1:]
    return rng.choice(
        (
            f'var c = {v.capitalize()}Client.builder().{camel}("{value}").build();',
            f'var cred = new {v.capitalize()}Credential("svc-{v}", "{value}");',
            f'{v}.set{pascal}("{value}")',
        )
    ), value


@_t("cli long flag")
def _long(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, _c, _t2 = _words(rng)
    flag = snake.replace("_", "-")
    return rng.choice(
        (f"{v} login --{flag} {value} --region eu", f"{v}-cli deploy --{v}-{flag}={value}")
    ), value


@_t("cli short flag", password=True)
def _short(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    return rng.choice(
        (
            f"{v}ctl connect -u admin -p {value} --host db.{v}.io",
            f"{v}-sync -U svc_{v} -P {value} -d prod",
        )
    ), value


@_t("powershell")
def _ps(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, camel, _t2 = _words(rng)
    pascal = camel[0].upper() + camel[1:]
    name = rng.choice(("Password", pascal))
    return f"Connect-{v.capitalize()} -Server {v}01 -{name} {value} -Force", value


@_t("windows /p:", password=True)
def _win(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    return rng.choice(
        (
            f"{v}.exe /server:{v}01 /u:Administrator /p:{value}",
            f"net use Z: \\\\{v}01\\share /user:CORP\\svc {value}",
        )
    ), value


@_t("http header")
def _header(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, _c, _t2 = _words(rng)
    name = "-".join(w.capitalize() for w in snake.split("_"))
    return f'curl -H "X-{v.capitalize()}-{name}: {value}" https://api.{v}.io/v1/items', value


@_t("url query")
def _query(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    snake, _c, _t2 = _words(rng)
    return f"GET https://api.{v}.io/v2/report?{snake}={value}&format=json", value


@_t("connection string")
def _conn(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    return rng.choice(
        (
            f"Endpoint=https://{v}.io;AccountName={v}01;AccountKey={value};Protocol=https",
            f"Host={v}.db;Port=5432;Username=app;Password={value};SSL Mode=Require",
        )
    ), value


@_t("netrc", password=True)
def _netrc(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    return rng.choice(
        (
            f"machine api.{v}.io login deploy password {value}",
            f"machine api.{v}.io\n  login deploy\n  password {value}",
        )
    ), value


@_t("json-rpc")
def _rpc(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, camel, _t2 = _words(rng)
    return (
        f'{{"jsonrpc": "2.0", "method": "{v}.session.open", "params": {{"user": "bot", '
        f'"{camel}": "{value}"}}, "id": 1}}'
    ), value


@_t("prose")
def _prose(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    _s, _c, title = _words(rng)
    name = title.lower()
    return rng.choice(
        (
            f"The {v} {name} is {value} - keep it out of git.",
            f"Your new {v.capitalize()} {name} was created: {value}",
            f"Here's the {name} for {v}: `{value}`",
            f"I set the {v} {name} to '{value}' in the dashboard.",
        )
    ), value


@_t("prose password", password=True)
def _prose_pw(rng: random.Random, v: str, value: str) -> tuple[str, str]:
    return rng.choice(
        (
            f"the {v} password is '{value}'",
            f"The admin password for {v} was {value}, change it after login.",
            f"Use {value} as the password for the {v} console.",
            f"Here's the password: {value}",
        )
    ), value


def cases(seed: int = 20261206, per_syntax: int = 40) -> Iterator[Case]:
    """`per_syntax` cases of every syntax; a password syntax gets typed passwords half the
    time, random values otherwise."""
    rng = random.Random(seed)
    for syntax, password, template in TEMPLATES:
        for _ in range(per_syntax):
            v = vendor(rng)
            raw = typed_password(rng) if password and rng.random() < 0.5 else token_value(rng)
            text, secret = template(rng, v, _clean(raw))
            yield Case(syntax, text, secret)


def fully_masked(secret: str, out: str) -> bool:
    """No piece of the secret of 6 characters or more is left (a partial mask is a miss)."""
    n = min(6, len(secret))
    return not any(secret[i : i + n] in out for i in range(len(secret) - n + 1))
