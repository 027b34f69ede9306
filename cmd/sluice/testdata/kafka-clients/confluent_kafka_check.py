"""Drives a Sluice broker's Kafka listener with confluent-kafka (librdkafka):
admin create/list/delete topics, produce, a group consumer from the start,
committed offsets, list_groups. Exits non-zero with a message on the first
thing that does not hold. Usage: confluent_kafka_check.py HOST:PORT"""

import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    bootstrap = sys.argv[1]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic, group = "py-topic", "py-group"

    for t, f in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)]).items():
        f.result(timeout=30)
    if topic not in admin.list_topics(timeout=30).topics:
        fail("the created topic is not listed")

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "lz4"})
    errors = []
    for i in range(60):
        p.produce(topic, key=str(i), value="v%d" % i, on_delivery=lambda err, msg: err and errors.append(err))
    if p.flush(30) != 0 or errors:
        fail("produce: %s" % errors[:3])

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    seen = set()
    deadline = time.time() + 60
    while len(seen) < 60 and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            fail("consume: %s" % m.error())
        seen.add(m.value().decode())
    if len(seen) != 60:
        fail("consumed %d of 60 records" % len(seen))
    c.commit(asynchronous=False)
    committed = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=30)
    if sum(tp.offset for tp in committed) != 60:
        fail("committed offsets %s" % [(tp.partition, tp.offset) for tp in committed])
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    if low != 0 or high <= 0:
        fail("watermarks of partition 0: %d %d" % (low, high))

    groups = [g.id for g in admin.list_groups(timeout=30)]
    if group not in groups:
        fail("list_groups: %s" % groups)
    c.close()

    for t, f in admin.delete_topics([topic]).items():
        f.result(timeout=30)

    # No transactions yet: a transactional producer is told so at once and
    # for good (a retriable answer would have it ask for its whole timeout).
    tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-check"})
    started = time.time()
    try:
        tx.init_transactions(30)
        fail("init_transactions succeeded without a transaction coordinator")
    except KafkaException as e:
        err = e.args[0]
        if err.code() != KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED or time.time() - started > 20:
            fail("init_transactions: %s after %.1f s" % (err, time.time() - started))
    print("OK")


if __name__ == "__main__":
    main()
