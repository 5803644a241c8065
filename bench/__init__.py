"""replygate benchmarks: `make bench` runs `python -m bench` (see bench/README.md)."""
