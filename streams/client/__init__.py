"""The agent side: `AgentClient` publishes replies, chunks, progress, tool calls and cancels."""

from streams.client.agent import AgentClient, InputRecord, input_record, record_bytes, record_key

__all__ = ["AgentClient", "InputRecord", "input_record", "record_bytes", "record_key"]
