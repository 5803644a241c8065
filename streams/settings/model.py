"""replygate's settings as one typed object, and the groups each part takes: models only.

No environment, no file: `streams.settings.load` fills a `Settings` from them in the shell (the
command line, `faust -A streams.app`), and the core is handed the groups it reads.
"""

from __future__ import annotations

import difflib
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

MiB = 1024 * 1024

# The shortest value `leak_literals` takes. A literal is masked wherever it stands, inside words
# and in the message's own keys: one of a few characters (`a`, `id`) would mangle every message.
# Known secrets can be short (a 7-character password), so the floor stays low; choosing values
# that no message uses as a word or key (`segments`) is the deployment's part.
MIN_LEAK_LITERAL_CHARS = 4

EXACTLY_ONCE_REFUSED = (
    "processing_guarantee=exactly_once is refused: with faust-streaming's transaction manager a "
    "rebalance loses or repeats outputs (transactions begun for kept partitions, changelog "
    "recovery failing after reassignment). Use at_least_once (the default): every turn still "
    "gets exactly one outcome, a repeat is the identical record with the same delivery_id, and "
    "an endpoint that drops repeats by delivery_id sees it once."
)


class TopicNames(BaseModel):
    """Default topic names of docs/records.md; `Settings.topic_prefix` is put before each."""

    model_config = ConfigDict(extra="forbid")

    replies_raw: str = "replies.raw"
    toolcalls_raw: str = "toolcalls.raw"
    turns_control: str = "turns.control"
    corrections: str = "corrections.requests"
    delivery_prefix: str = "delivery."
    toolresults: str = "toolresults.kandev"
    dlq: str = "replies.dlq"


class CorrectorSettings(BaseModel):
    """The optional built-in corrector: one completion against an OpenAI-compatible endpoint."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key: SecretStr = SecretStr("")
    timeout_seconds: float = Field(default=30.0, gt=0, le=300)
    # Completions in flight per worker: a worker corrects about `concurrency` / the model's
    # latency turns a second, and each holds at most one 1 MiB response.
    concurrency: int = Field(default=16, ge=1, le=256)


class SchemaContractEntry(BaseModel):
    """A caller-owned contract: a name, a JSON Schema file and optional correction instructions.

    `schema` is read relative to the config file (or the working directory without one).
    `assert_formats` makes `format` (`email`, `date-time`, `uri`, ...) a rule, not a note.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str  # checked with the schema file, so the message can name both
    schema_file: Path = Field(alias="schema")
    instructions: str | None = Field(default=None, max_length=4000)
    assert_formats: bool = False


class KafkaSecurity(BaseModel):
    """SASL and TLS for the broker connection; secrets never appear in logs."""

    model_config = ConfigDict(extra="forbid")

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str = ""
    sasl_password: SecretStr = SecretStr("")
    # The password read from this file instead (a mounted Secret); its trailing line end is
    # dropped. Only one of the two may be set.
    sasl_password_file: Path | None = None
    # The CA bundle the broker's certificate must chain to (default: the system's).
    ssl_cafile: Path | None = None
    # Mutual TLS: the client certificate (chain) and its key, PEM files.
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    # The key's passphrase, when the key file is encrypted (as a value or from a file).
    ssl_key_password: SecretStr = SecretStr("")
    ssl_key_password_file: Path | None = None
    # Whether the broker's certificate must name the host connected to; off only for a broker
    # reached by an address its certificate cannot name (the chain is still verified).
    ssl_check_hostname: bool = True


class EndpointSettings(BaseModel):
    """`replygate deliveries`: how long ids are kept and how long each wait may last."""

    model_config = ConfigDict(extra="forbid")

    # A repeat of a delivery is dropped while its id is younger than this.
    horizon_seconds: float = Field(default=7 * 86400.0, ge=1, le=365 * 86400.0)
    connect_timeout_seconds: float = Field(default=15.0, gt=0, le=300)
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    webhook_first_backoff_seconds: float = Field(default=0.5, gt=0, le=60)
    webhook_max_backoff_seconds: float = Field(default=30.0, gt=0, le=3600)
    batch_max_records: int = Field(default=100, ge=1, le=10_000)


G = TypeVar("G", bound=BaseModel)


class TopicSettings(BaseModel):
    """Topic names and platforms: what names a topic, without what connects to one."""

    model_config = ConfigDict(extra="forbid")

    app_id: str = "replygate"
    topic_prefix: str = ""
    topics: TopicNames = TopicNames()
    # Delivery topics made by `replygate topics`; with closed_platforms, any other platform
    # is a dead letter instead of a new topic.
    platforms: list[str] = Field(default_factory=lambda: ["im", "ide", "assistant"])
    closed_platforms: bool = False

    def topic(self, name: str) -> str:
        """The real topic name for a logical name (`replies_raw`, ..., or `delivery.<platform>`)."""
        if name.startswith("delivery."):
            return self.topic_prefix + self.topics.delivery_prefix + name.split(".", 1)[1]
        value: str = getattr(self.topics, name)
        return self.topic_prefix + value

    def delivery_topic(self, platform: str) -> str:
        return self.topic_prefix + self.topics.delivery_prefix + platform

    def deadline_topic(self) -> str:
        """The internal topic of deadline events, on the turn's own partition."""
        return f"{self.app_id}-deadlines"


class KafkaSettings(TopicSettings):
    """The broker and the topology: what `topics`, the worker and the endpoint connect to."""

    kafka_bootstrap_servers: str = "localhost:9092"
    kafka_security: KafkaSecurity = KafkaSecurity()
    partitions: int = Field(default=8, ge=1, le=1024)
    replication_factor: int = Field(default=1, ge=1, le=16)


class BoundsSettings(BaseModel):
    """The size bounds of records in and out."""

    model_config = ConfigDict(extra="forbid")

    # Bounds: every input is someone's attack
    max_record_bytes: int = Field(default=1 * MiB, ge=1024)
    # Outputs can outgrow their input (a correction request adds instructions and a schema,
    # masking can lengthen text): output topics and the producer allow this much.
    max_output_bytes: int = Field(default=8 * MiB, ge=1 * MiB)
    dead_letter_record_bytes: int = Field(default=64 * 1024, ge=1024)


class FileSettings(BaseModel):
    """The file stage: where media and workspaces are, and how much of them may be read."""

    model_config = ConfigDict(extra="forbid")

    # Files the gate may read
    workspaces_root: Path = Path("workspaces")
    media_root: Path = Path("media")
    max_attachment_bytes: int = Field(default=25 * MiB, ge=1)
    max_csv_bytes: int = Field(default=256 * 1024, ge=1)
    attachment_unavailable_text: str = "[attachment unavailable]"


class TurnSettings(BaseModel):
    """The correction loop and the turn state: deadlines, horizons, the host's notice."""

    model_config = ConfigDict(extra="forbid")

    # Correction loop
    correction_deadline_seconds: float = Field(default=30.0, gt=0, le=3600)

    # Turn state: a finished turn is remembered this long (broker time), then forgotten; a
    # reply older than this is a dead letter (`turn_expired`), never a second delivery.
    state_horizon_seconds: float = Field(default=7 * 86400.0, ge=1, le=365 * 86400.0)
    # Agents' clocks may run this far ahead of the broker's: a finished turn is kept this much
    # longer than the horizon, so a repeat of its reply is known as too old before it is gone.
    state_clock_skew_seconds: float = Field(default=3600.0, ge=0, le=86400.0)

    # The 0.1.0 key form (the conversation or task id JSON-quoted, Faust's default key
    # serializer) judged instead of dead-lettered (`wrong_key`), for a migration period;
    # each such record is counted in replygate_quoted_keys_accepted (docs/versioning.md).
    accept_quoted_keys: bool = False

    # Host texts (never model text)
    failure_notice_text: str = (
        "Sorry, I could not put together a proper answer this time. Please try again."
    )

    @property
    def state_keep(self) -> timedelta:
        """How long a finished turn's state is kept: the horizon plus the allowed clock skew."""
        return timedelta(seconds=self.state_horizon_seconds + self.state_clock_skew_seconds)


class WorkerSettings(BaseModel):
    """The worker's knobs, as one group: its store, batches, fetches, sends and timeouts."""

    model_config = ConfigDict(extra="forbid")

    processing_guarantee: Literal["at_least_once", "exactly_once"] = "at_least_once"
    data_dir: Path = Path(".run/worker-data")
    store: str = "memory://"
    # Workers that keep a warm copy of each partition's turn state (Faust's standby replicas):
    # with `rocksdb://` a partition that moves to one of them is read only from where its copy
    # stopped. Nothing for `memory://`, whose standby copy Faust drops.
    standby_replicas: int = Field(default=0, ge=0, le=3)

    deadline_scan_interval_seconds: float = Field(default=0.5, gt=0, le=60)

    # The hot path: records judged together, written once per turn, acknowledged together.
    batch_max_records: int = Field(default=500, ge=1, le=100_000)
    # A batch closes when everything fetched is in it; under a backlog it fills this long at most.
    batch_max_wait_seconds: float = Field(default=0.05, gt=0, le=10)
    # ... or once its records hold this many bytes: large hostile records cost ~2 s of CPU a MiB,
    # and a batch's input is committed only once all of it is judged, written and sent.
    batch_max_bytes: int = Field(default=512 * 1024, ge=1024, le=64 * MiB)
    # A fetch returns once this much is waiting or after this long: at a few hundred records a
    # second, fewer fetches and wake-ups (aiokafka's 1 byte answers every record at once).
    fetch_min_bytes: int = Field(default=64 * 1024, ge=1, le=64 * MiB)
    fetch_max_wait_ms: int = Field(default=10, ge=0, le=1500)
    producer_linger_ms: int = Field(default=5, ge=0, le=1000)
    producer_max_batch_bytes: int = Field(default=1 * MiB, ge=16 * 1024)
    # A send the broker has not acknowledged within this bound stops the worker (exit 1),
    # unacknowledged input and all: the next owner replays it.
    send_timeout_seconds: float = Field(default=120.0, gt=0, le=3600)
    # A worker that stops heartbeating loses its partitions after this (the broker's minimum
    # is 6 s by default).
    session_timeout_seconds: float = Field(default=10.0, ge=1, le=300)
    # An owned input partition with records waiting and none read for this long stops the
    # worker, so that its restart reads it again (a guard against a stalled fetch).
    stall_seconds: float = Field(default=60.0, ge=5, le=3600)

    # Operations
    metrics_port: int = Field(default=9108, ge=0, le=65535)
    shutdown_timeout_seconds: float = Field(default=20.0, gt=0, le=600)

    # Policy bundles (docs/policy.md): the record header whose value is a record's tenant
    # (none: no record has a tenant), and one audit record per outcome (on by default).
    policy_tenant_header: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
    )
    audit: bool = True


class ContractSettings(BaseModel):
    """Leak masking and the contracts a deployment registers."""

    model_config = ConfigDict(extra="forbid")

    # Leak masking: literal values (canaries, known secrets) and extra patterns (rule id -> regex)
    leak_literals: list[SecretStr] = Field(default_factory=list)
    leak_patterns: dict[str, str] = Field(default_factory=dict)

    @field_validator("leak_literals")
    @classmethod
    def _literals_long_enough(cls, literals: list[SecretStr]) -> list[SecretStr]:
        short = [
            str(n)
            for n, v in enumerate(literals)
            if len(v.get_secret_value()) < MIN_LEAK_LITERAL_CHARS
        ]
        if short:  # which ones by index, never the values
            raise ValueError(
                f"each leak literal must be at least {MIN_LEAK_LITERAL_CHARS} characters "
                f"(shorter at index {', '.join(short)}): a shorter one masks ordinary words "
                "and the message's own keys wherever they appear"
            )
        return literals

    # Contracts a deployment registers: name -> "module:attribute" of a ReplyContract
    extra_contracts: dict[str, str] = Field(default_factory=dict)
    # Contracts a deployment brings as JSON Schema files (draft 2020-12)
    schema_contracts: list[SchemaContractEntry] = Field(default_factory=list, max_length=100)

    # The file the settings were read from (set by `load_settings`), for relative schema paths
    config_file: Path | None = None

    def schema_path(self, entry: SchemaContractEntry) -> Path:
        """A schema file's path: relative ones are read beside the config file."""
        if entry.schema_file.is_absolute() or self.config_file is None:
            return entry.schema_file
        return self.config_file.parent / entry.schema_file


class GateSettings(ContractSettings, TurnSettings, BoundsSettings, TopicSettings):
    """What the gate (`streams.core`) reads: topic names, bounds, the turn rules, the contracts
    and masking; no connection, no credentials, no worker knobs."""


# The groups in reverse: pydantic lists the fields of the last base first.
class Settings(
    GateSettings,
    WorkerSettings,
    FileSettings,
    KafkaSettings,
):
    """Everything, flat: one REPLYGATE_* variable or config key per setting, as always.

    Each part takes only its own group (`KafkaSettings`, `WorkerSettings`, ...): a function
    typed with a group sees that group, and `group()` hands a part nothing else. Built as is,
    it holds the values given and the defaults; `streams.settings.load.load_settings` reads
    the environment and the config file into one.
    """

    model_config = ConfigDict(extra="forbid", validate_default=True)

    corrector: CorrectorSettings = CorrectorSettings()

    endpoint: EndpointSettings = EndpointSettings()

    def group(self, kind: type[G]) -> G:
        """Only one group's settings, for the part that owns them (already validated)."""
        return kind.model_construct(**{name: getattr(self, name) for name in kind.model_fields})


def model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a group setting (or a list of them) holds, for walking into it."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if getattr(annotation, "__origin__", None) is list:
        (item,) = annotation.__args__
        return item if isinstance(item, type) and issubclass(item, BaseModel) else None
    return None


def _names_at(loc: tuple[int | str, ...]) -> list[str]:
    """The setting names a config file may use where `loc` points (its last part excluded)."""
    model: type[BaseModel] | None = Settings
    for part in loc[:-1]:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        info = model.model_fields.get(str(part))
        model = None if info is None else model_of(info.annotation)
    if model is None:
        return []
    return sorted(info.alias or name for name, info in model.model_fields.items())


def _problem(err: Any) -> str:
    where = ".".join(str(part) for part in err["loc"]) or "settings"
    if err["type"] != "extra_forbidden":
        return f"{where}: {err['msg']}"
    close = difflib.get_close_matches(str(err["loc"][-1]), _names_at(err["loc"]), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{where[:100]} names no setting{hint}"


def settings_problem(exc: ValidationError) -> str:
    """One line for a settings error: each bad setting and why, never pydantic's whole report
    (and never the value: it may be a secret); a misspelt key gets the closest setting."""
    return "; ".join(_problem(err) for err in exc.errors(include_url=False))
