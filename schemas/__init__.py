"""replygate contracts and record models: pure, no Kafka, no I/O.

A platform endpoint can import this package to re-validate what it receives.
"""

from schemas.errors import Issue, Notice, json_path

__all__ = ["Issue", "Notice", "json_path"]
