"""Configs the tests share, as TOML text."""

# the smallest run: one switch, two ranks, one short iteration (4-6 s on
# the soft target, a second on the simulation)
TINY = """name = "tiny"
variants = ["baseline"]
[topology]
kind = "star"
hosts = 2
host_rate_mbit = 10
[[jobs]]
ranks = 2
message_bytes = 40000
iterations = 1
"""
