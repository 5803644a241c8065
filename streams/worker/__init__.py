"""The Faust worker: a thin Kafka shell around `streams.core.batch.TurnBatch`, its sends,
store and corrector.
"""
