"""Drives a Sluice broker's Kafka listener with confluent-kafka (librdkafka):
admin create/list/delete topics (one with Kafka's default configs set
explicitly, as Kafka Connect and Terraform do), describe and alter topic and
broker configs, produce, a group consumer from the start, committed offsets,
list_groups. Exits non-zero with a message on the first
thing that does not hold. Usage: confluent_kafka_check.py HOST:PORT"""

import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic


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

    check_configs(admin)

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


def check_configs(admin):
    # Kafka's defaults, set explicitly.
    defaults = {"cleanup.policy": "delete", "retention.ms": "604800000", "segment.bytes": "1073741824",
                "min.insync.replicas": "1", "compression.type": "producer", "message.timestamp.type": "CreateTime",
                "unclean.leader.election.enable": "false", "max.message.bytes": "1048588"}
    for t, f in admin.create_topics([NewTopic("py-configs", num_partitions=1, replication_factor=1,
                                              config=defaults)]).items():
        f.result(timeout=30)

    topic = ConfigResource(ConfigResource.Type.TOPIC, "py-configs")
    configs = list(admin.describe_configs([topic]).values())[0].result(timeout=30)
    if configs["retention.ms"].value != "604800000" or configs["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value:
        fail("retention.ms of the new topic: %r" % configs["retention.ms"])
    if "flush.ms" not in configs or configs["flush.ms"].source != ConfigSource.DEFAULT_CONFIG.value:
        fail("flush.ms is not described with Kafka's default")

    # AlterConfigs replaces the topic's whole configuration.
    list(admin.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, "py-configs",
                                             set_config={"retention.ms": "3600000"})]).values())[0].result(timeout=30)
    configs = list(admin.describe_configs([topic]).values())[0].result(timeout=30)
    if configs["retention.ms"].value != "3600000" or configs["cleanup.policy"].source != ConfigSource.DEFAULT_CONFIG.value:
        fail("after alter_configs: retention.ms %r, cleanup.policy %r" % (configs["retention.ms"], configs["cleanup.policy"]))

    # A broker's settings, and a dynamic one changed for the broker.
    broker_id = str(list(admin.list_topics(timeout=30).brokers)[0])
    broker = list(admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, broker_id)]).values())[0].result(timeout=30)
    if "log.dirs" not in broker or not broker["log.dirs"].is_read_only:
        fail("the broker's log.dirs: %r" % broker.get("log.dirs"))
    list(admin.alter_configs([ConfigResource(ConfigResource.Type.BROKER, broker_id,
                                             set_config={"num.partitions": "2"})]).values())[0].result(timeout=30)
    deadline = time.time() + 10
    while True:
        broker = list(admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, broker_id)]).values())[0].result(timeout=30)
        got = broker["num.partitions"]
        if got.value == "2" and got.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value and not got.is_read_only:
            break
        if time.time() > deadline:
            fail("num.partitions after setting it for the broker: %r" % got)
        time.sleep(0.2)
    try:
        list(admin.alter_configs([ConfigResource(ConfigResource.Type.BROKER, broker_id,
                                                 set_config={"log.dirs": "/tmp/elsewhere"})]).values())[0].result(timeout=30)
        fail("log.dirs was changed while the broker runs")
    except KafkaException as e:
        if e.args[0].code() != KafkaError.INVALID_CONFIG:
            fail("changing log.dirs: %s" % e)
    for t, f in admin.delete_topics(["py-configs"]).items():
        f.result(timeout=30)


if __name__ == "__main__":
    main()
