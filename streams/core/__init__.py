"""The decision core: one record (and a turn's state) in, one decision out; pure, no Kafka,
no files.
"""
