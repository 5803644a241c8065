"""Policy as versioned data: the bundle (what decides a verdict), its topic and its follower.

`bundle` reads and versions a bundle file, `load` builds what the gate needs from it with the
worker's own loading code, `topic` publishes and reads the policy topic, `follower` keeps the
newest loaded version ready for a worker to take at a batch boundary (docs/policy.md).
"""
