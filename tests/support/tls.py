"""A private broker with TLS listeners (mutual TLS and SCRAM-SHA-512 over TLS), optionally
with the StandardAuthorizer, and Kafka's own admin tools against it.

kafka-local.sh makes the CA, the broker's and a client certificate (KAFKA_TLS_DIR); the broker's
certificate names `localhost` only, so clients connect to `localhost:PORT` and one that connects
to `127.0.0.1` meets a certificate that does not name its host.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replygate_dev.demo import free_port

from tests.support.kafka import REPO, PrivateBroker

LIB = REPO / ".kafka-local" / "lib"


def _lib() -> Path:
    """The jar cache: this checkout's, or the one KAFKA_LIB_DIR names (a worktree's)."""
    return Path(os.environ.get("KAFKA_LIB_DIR") or LIB)


@dataclass
class TlsBroker(PrivateBroker):
    """`PrivateBroker` plus an SSL listener (client certificate required) and a SASL_SSL one."""

    ssl_port: int = field(default_factory=free_port)
    sasl_ssl_port: int = field(default_factory=free_port)
    authorizer: bool = False

    @property
    def tls_dir(self) -> Path:
        return self.home / "tls"

    @property
    def ca(self) -> Path:
        return self.tls_dir / "ca.pem"

    @property
    def client_cert(self) -> Path:
        return self.tls_dir / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.tls_dir / "client.key"

    @property
    def mtls_bootstrap(self) -> str:
        return f"localhost:{self.ssl_port}"

    @property
    def scram_bootstrap(self) -> str:
        return f"localhost:{self.sasl_ssl_port}"

    def _sasl_env(self) -> dict[str, str]:
        return {
            **super()._sasl_env(),
            "KAFKA_SASL_USER": self.sasl_user,
            "KAFKA_SASL_PASSWORD": self.sasl_password,
            "KAFKA_SSL_PORT": str(self.ssl_port),
            "KAFKA_SASL_SSL_PORT": str(self.sasl_ssl_port),
            "KAFKA_TLS_DIR": str(self.tls_dir),
            "KAFKA_AUTHORIZER": "1" if self.authorizer else "0",
            "KAFKA_LIB_DIR": str(_lib()),
        }

    def _run(self, *args: str, **env: str) -> None:
        super()._run(*args, **{"KAFKA_LIB_DIR": str(_lib()), **env})

    # --- clients -----------------------------------------------------------------------

    def scram_env(self, user: str, password_file: Path) -> dict[str, str]:
        """REPLYGATE_* settings for SCRAM-SHA-512 over TLS, the password from a file."""
        return {
            "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": self.scram_bootstrap,
            "REPLYGATE_KAFKA_SECURITY__PROTOCOL": "SASL_SSL",
            "REPLYGATE_KAFKA_SECURITY__SASL_MECHANISM": "SCRAM-SHA-512",
            "REPLYGATE_KAFKA_SECURITY__SASL_USERNAME": user,
            "REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD_FILE": str(password_file),
            "REPLYGATE_KAFKA_SECURITY__SSL_CAFILE": str(self.ca),
        }

    def mtls_env(self) -> dict[str, str]:
        """REPLYGATE_* settings for mutual TLS with the client certificate."""
        return {
            "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": self.mtls_bootstrap,
            "REPLYGATE_KAFKA_SECURITY__PROTOCOL": "SSL",
            "REPLYGATE_KAFKA_SECURITY__SSL_CAFILE": str(self.ca),
            "REPLYGATE_KAFKA_SECURITY__SSL_CERTFILE": str(self.client_cert),
            "REPLYGATE_KAFKA_SECURITY__SSL_KEYFILE": str(self.client_key),
        }

    def admin_client(self) -> dict[str, Any]:
        """aiokafka options of the super user over SASL_SSL."""
        import ssl

        return {
            "security_protocol": "SASL_SSL",
            "ssl_context": ssl.create_default_context(cafile=str(self.ca)),
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": self.sasl_user,
            "sasl_plain_password": self.sasl_password,
        }

    def admin_properties(self) -> Path:
        """The Java admin tools' client config: the super user over SASL_SSL."""
        path = self.home / "admin.properties"
        path.write_text(
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{self.sasl_user}" password="{self.sasl_password}";\n'
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={self.ca}\n"
        )
        path.chmod(0o600)
        return path

    def tool(self, main_class: str, *args: str) -> str:
        """Run one of Kafka's admin tools (a JVM) as the super user; its stdout."""
        done = subprocess.run(
            [
                "java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", f"{_lib()}/*", "-Dlog4j2.level=OFF", "-Dlog4j2.StatusLogger.level=OFF",
                main_class, "--bootstrap-server", self.scram_bootstrap,
                "--command-config", str(self.admin_properties()), *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{main_class} {' '.join(args[:4])}...: {done.stderr[-2000:]}")
        return done.stdout

    def add_scram_user(self, user: str, password: str) -> None:
        """A SCRAM-SHA-512 user, made through the admin API (kafka-configs)."""
        self.tool(
            "kafka.admin.ConfigCommand", "--alter", "--entity-type", "users",
            "--entity-name", user, "--add-config", f"SCRAM-SHA-512=[password={password}]",
        )  # fmt: skip

    def kafka_acls(self, command: str) -> None:
        """Run one printed `kafka-acls.sh ...` line with Kafka's AclCommand."""
        import shlex

        words = shlex.split(command)
        assert words[0] == "kafka-acls.sh", command
        rest = words[1:]
        # the tool call names the broker and admin config itself
        for option in ("--bootstrap-server", "--command-config"):
            if option in rest:
                at = rest.index(option)
                del rest[at : at + 2]
        self.tool("org.apache.kafka.tools.AclCommand", *rest)


# --- one worker flow over a secured listener ----------------------------------------------

GOOD = '{"segments": [{"type": "text", "data": {"text": "The corrected answer"}}]}'


@dataclass
class FlowResult:
    """What a flow left behind: the reader's lines, the dead letters, the logs and metrics."""

    handed_on: list[dict[str, Any]]
    dead_letters: list[dict[str, Any]]
    logs: str
    metrics: str
    reader_status: int


def flow_records(tag: str) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    """A valid reply, one the corrector must fix, and a record that is no JSON: (key, value)
    pairs for `replies.raw`, and the turn id of each kind."""
    from tests.support.samples import raw_reply

    turns = {"valid": f"{tag}-valid", "corrected": f"{tag}-corr", "dead": f"{tag}-dead"}
    records: list[tuple[str, Any]] = [
        (f"c-{tag}", raw_reply(turn_id=turns["valid"], conversation_id=f"c-{tag}")),
        (
            f"c-{tag}-2",
            raw_reply(
                turn_id=turns["corrected"],
                conversation_id=f"c-{tag}-2",
                output={"text": "Here you go: " + GOOD},
            ),
        ),
        (f"c-{tag}-3", b"{broken"),
    ]
    return records, turns


def run_flow(
    deployment: Any,
    tmp: Path,
    servers: str,
    agent_client: dict[str, Any],
    reader_client: dict[str, Any],
    worker_env: dict[str, str],
    reader_env: dict[str, str],
    tag: str,
) -> FlowResult:
    """The worker (with the corrector) delivers, corrects and dead-letters over the secured
    listener; `replygate deliveries im` hands the deliveries on. Agent and reader clients are
    aiokafka options (produce the inputs, read the dead letters)."""
    import asyncio
    import urllib.request

    import orjson
    from replygate_dev.scripted_llm import Canned, ScriptedLLM

    from tests.support.deliveries import Reader
    from tests.support.kafka import collect, produce

    records, _turns = flow_records(tag)
    with ScriptedLLM([Canned("The corrected answer", content=GOOD)]) as llm:
        worker = deployment.start_worker(
            tmp,
            REPLYGATE_CORRECTOR__ENABLED="true",
            REPLYGATE_CORRECTOR__BASE_URL=llm.base_url,
            REPLYGATE_CORRECTION_DEADLINE_SECONDS="90",
            **worker_env,
        )
        reader = Reader(deployment, tmp, f"reader-{tag}.log", f"rg-{tag}-im", **reader_env)  # type: ignore[arg-type]  # REPLYGATE_* names only
        try:
            asyncio.run(produce(deployment.topic("replies.raw"), records, servers, agent_client))
            reader.wait_for_lines(2)
            dlq = deployment.topic("replies.dlq")
            letters = asyncio.run(
                collect([dlq], lambda rs: len(rs) >= 1, timeout=60, servers=servers,
                        client=reader_client)
            )  # fmt: skip
            port = worker.metrics_port
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        finally:
            deployment.stop_all()
            status = reader.end()
    logs = deployment.log_tail(100_000) + "\n" + reader.stderr()
    return FlowResult(
        list(reader.lines),
        [orjson.loads(v) for _t, _k, v in letters],
        logs,
        metrics.decode(),
        status,
    )
