"""replygate's settings: the models (`streams.settings.model`) and the one loader of them
(`streams.settings.load`), the names a deployment's own code uses.

The core imports `streams.settings.model` only (a test checks it): it is handed settings,
never reads them.
"""

from streams.settings.load import load_settings
from streams.settings.model import (
    EXACTLY_ONCE_REFUSED,
    MIN_LEAK_LITERAL_CHARS,
    BoundsSettings,
    ContractSettings,
    CorrectorSettings,
    EndpointSettings,
    FileSettings,
    GateSettings,
    KafkaSecurity,
    KafkaSettings,
    MiB,
    SchemaContractEntry,
    Settings,
    TopicNames,
    TopicSettings,
    TurnSettings,
    WorkerSettings,
    settings_problem,
)

__all__ = [
    "EXACTLY_ONCE_REFUSED",
    "MIN_LEAK_LITERAL_CHARS",
    "BoundsSettings",
    "ContractSettings",
    "CorrectorSettings",
    "EndpointSettings",
    "FileSettings",
    "GateSettings",
    "KafkaSecurity",
    "KafkaSettings",
    "MiB",
    "SchemaContractEntry",
    "Settings",
    "TopicNames",
    "TopicSettings",
    "TurnSettings",
    "WorkerSettings",
    "load_settings",
    "settings_problem",
]
