"""The mesh: teams on many hosts, one Iris, on NATS JetStream (README "Teams on many hosts").

``bridge`` runs nats-py's asyncio in a thread of its own; ``engine`` connects and lays out
the streams and buckets; ``directory`` keeps team -> home in a key-value bucket.
"""
