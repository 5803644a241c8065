"""`replygate demo`: the bundled samples through a real broker, a real worker and the corrector.

Each run uses a fresh topic prefix and app id (reruns start clean and never touch anyone else's
topics), a scripted OpenAI-compatible endpoint for the corrector, and one worker subprocess.
One module a concern: `samples` (the sample file and what each expects), `outcomes` (what came
out, judged against it), `processes` (the worker, the broker, ports and files), `story` (the
run, step by step), `report` (the table and figures) and `run` (`run_demo`).
"""

from replygate_dev.demo.outcomes import Seen, Tracker, evaluate, expected_outcomes
from replygate_dev.demo.processes import (
    CORRECTOR_TIMEOUT_SECONDS,
    free_port,
    read_rss,
    start_local_broker,
    stop_worker,
)
from replygate_dev.demo.run import run_demo
from replygate_dev.demo.samples import (
    DEMO_SCHEMA_CONTRACT,
    SAMPLES_DIR,
    Part,
    Sample,
    llm_script,
    load_samples,
    read_samples,
    with_demo_contract,
)

__all__ = [
    "CORRECTOR_TIMEOUT_SECONDS",
    "DEMO_SCHEMA_CONTRACT",
    "SAMPLES_DIR",
    "Part",
    "Sample",
    "Seen",
    "Tracker",
    "evaluate",
    "expected_outcomes",
    "free_port",
    "llm_script",
    "load_samples",
    "read_rss",
    "read_samples",
    "run_demo",
    "start_local_broker",
    "stop_worker",
    "with_demo_contract",
]
