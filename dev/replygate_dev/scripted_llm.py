"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1, for tests and `replygate demo`.

`POST /v1/chat/completions` answers from a script: a list of `Canned` replies, the first whose
`match` is a substring of the request's message contents wins, or a callable that gets the
parsed request. A reply can be delayed (to test timeouts), be an HTTP error, or be a raw body
(to test malformed answers). Every request is recorded, so a test can check what was sent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

import orjson

MAX_REQUEST_BYTES: Final = 8 * 1024 * 1024
COMPLETIONS_PATH: Final = "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class Canned:
    """One scripted answer: `content` as the assistant message, unless `body` or an error."""

    match: str = ""
    content: str = ""
    status: int = 200
    delay: float = 0.0
    body: bytes | None = None
    # Send the body without Content-Length (read to the end of the connection).
    unsized: bool = False
    # Seconds between 16-byte pieces of the body: a slow drip that no read timeout catches.
    drip: float = 0.0


@dataclass(frozen=True, slots=True)
class Received:
    """A request as the server saw it: the parsed JSON body and the headers (lower-case)."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        value = self.body.get("messages")
        return value if isinstance(value, list) else []

    def text(self) -> str:
        return request_text(self.body)


Script = Sequence[Canned] | Callable[[dict[str, Any]], Canned | str]


def request_text(body: dict[str, Any]) -> str:
    """All message contents of a chat request, joined: what `Canned.match` is looked up in."""
    parts = []
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
    return "\n".join(parts)


def choose(script: Script, body: dict[str, Any]) -> Canned:
    """The scripted answer for one request; no match is a 404 naming the problem."""
    if callable(script):
        answer = script(body)
        return Canned(content=answer) if isinstance(answer, str) else answer
    text = request_text(body)
    for canned in script:
        if canned.match in text:
            return canned
    return Canned(status=404, body=b'{"error": {"message": "no scripted reply matches"}}')


def completion_body(content: str, model: str, number: int) -> bytes:
    """The OpenAI chat completion shape, with `choices[0].message.content`."""
    return orjson.dumps(
        {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


@dataclass
class ScriptedLLM:
    """The server; use as a context manager or call `start()`/`stop()`."""

    script: Script
    host: str = "127.0.0.1"
    port: int = 0
    received: list[Received] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _arrived: threading.Condition = field(
        default_factory=threading.Condition, init=False, repr=False
    )

    @property
    def base_url(self) -> str:
        """What `corrector.base_url` should be set to."""
        if self._server is None:
            raise RuntimeError("the scripted LLM is not started")
        return f"http://{self.host}:{self._server.server_address[1]}/v1"

    def start(self) -> ScriptedLLM:
        self._stopping.clear()
        server = _QuietServer((self.host, self.port), _handler(self))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            name="scripted-llm",
            kwargs={"poll_interval": 0.1},
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed answers still sleeping give up at once."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, received: Received) -> int:
        with self._arrived:
            self.received.append(received)
            self._arrived.notify_all()
            return len(self.received)

    def requests(self) -> list[Received]:
        with self._arrived:
            return list(self.received)

    def requests_after(self, count: int, seconds: float) -> list[Received]:
        """The requests once `count` have arrived (or `seconds` passed): a client that gave up
        early may have sent its request before the server's thread read it."""
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.received) >= count, seconds)
            return list(self.received)

    def wait(self, seconds: float) -> bool:
        """Sleep for a delay; True when the server is stopping meanwhile."""
        return self._stopping.wait(seconds)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up is not worth a traceback on the demo's screen."""


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            if self.path.split("?", 1)[0] != COMPLETIONS_PATH:
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            length = self.headers.get("Content-Length", "")
            if not length.isdigit() or int(length) > MAX_REQUEST_BYTES:
                self._send(413, b'{"error": {"message": "missing or too large Content-Length"}}')
                return
            try:
                body = orjson.loads(self.rfile.read(int(length)))
            except orjson.JSONDecodeError:
                self._send(400, b'{"error": {"message": "the body is not JSON"}}')
                return
            if not isinstance(body, dict):
                self._send(400, b'{"error": {"message": "the body is not an object"}}')
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            number = llm.record(Received(body, headers))
            canned = choose(llm.script, body)
            if canned.delay and llm.wait(canned.delay):
                return  # stopping: drop the connection without an answer
            if canned.body is not None:
                self._send(canned.status, canned.body, not canned.unsized, canned.drip)
            elif canned.status != 200:
                self._send(canned.status, b'{"error": {"message": "scripted failure"}}')
            else:
                model = body.get("model")
                name = model if isinstance(model, str) else "scripted"
                self._send(200, completion_body(canned.content, name, number))

        def _send(self, status: int, body: bytes, sized: bool = True, drip: float = 0.0) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if sized:
                    self.send_header("Content-Length", str(len(body)))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                piece = 16 if drip else 64 * 1024
                for start in range(0, len(body), piece):
                    if drip and llm.wait(drip):
                        return
                    self.wfile.write(body[start : start + piece])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

        def log_message(self, format: str, *args: object) -> None:
            """Silent: the demo's screen and test output stay readable."""

    return Handler
