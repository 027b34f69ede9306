// kafkajs 2.2.4 against a Sluice broker's Kafka listener (SLUICE_KAFKA):
// create a topic, produce, consume in a group from the beginning, read the
// committed offsets, list and describe groups, delete the topic.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Kafka, logLevel } from "kafkajs";

const kafka = new Kafka({ clientId: "sluice-check", brokers: [process.env.SLUICE_KAFKA], logLevel: logLevel.ERROR });

test("kafkajs through the Kafka door", { timeout: 90_000 }, async () => {
  const admin = kafka.admin();
  await admin.connect();
  const topic = "js-topic", groupId = "js-group";
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true }), true);

  const producer = kafka.producer();
  await producer.connect();
  const messages = Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: `v${i}` }));
  await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();

  const offsets = await admin.fetchTopicOffsets(topic);
  assert.equal(offsets.reduce((n, p) => n + Number(p.high), 0), 30);

  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set();
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        seen.add(message.value.toString());
        if (seen.size === 30) resolve();
      },
    }).catch(reject);
  });
  await consumer.commitOffsets([]); // commits what eachMessage resolved
  await consumer.stop();
  await consumer.disconnect();
  assert.equal(seen.size, 30);

  const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
  const total = committed[0].partitions.reduce((n, p) => n + Number(p.offset), 0);
  assert.equal(total, 30);

  const { groups } = await admin.listGroups();
  assert.ok(groups.some((g) => g.groupId === groupId), JSON.stringify(groups));
  const described = await admin.describeGroups([groupId]);
  assert.equal(described.groups[0].groupId, groupId);

  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();
});
