"""What every Kafka client of replygate shares: the topology (topics, roles, configs),
client options, readiness.
"""
