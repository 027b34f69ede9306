package main

import "testing"

// Every broker of an RF=3 cluster is killed at once in the middle of
// writes to many partitions (their syncs share each broker's waves) and
// started again: every acknowledged record of every partition is there,
// and the replicas agree below their HW.
func TestFaultAllBrokersKilledWithManyPartitions(t *testing.T) {
	c := startCluster(t, 3)
	const topic, partitions = "wide", 60
	c.createTopic(topic, partitions, 3, faultConfig)
	hw := startHWMonitor(c, topic)
	w := startWorkload(t, c, topic, 2)
	w.waitAcks(c, 4000)
	for _, id := range c.ids() {
		c.brokers[id].kill9()
	}
	for _, id := range c.ids() {
		c.brokers[id].start()
	}
	// Writes go on through the restart; verify stops them and waits for
	// every replica to catch up before it reads everything back.
	w.waitAcks(c, 2000)
	c.verify(topic, partitions, w, hw)
}
