"""Development tools, not shipped: the demo and its scripted LLM server, and the samples."""
