// Package controller is the controller actor, "broker/controller" on the
// broker that holds the controller lock: it writes every metadata change
// (topic creation and deletion, leader elections, ISR commits, producer id
// blocks) to the metadata store with the lock's fence, and tells the
// brokers with LeaderAndIsr. It writes nothing to a store that does not
// hold its cluster's id, and takes broker-to-controller requests from the
// network only from the registered address of the broker they name.
//
// The broker actor spawns it with NewProducer and feeds it MetadataUpdated
// and BrokersUpdated. Its decisions come from election and placement. Its
// store calls run beside it, one step at a time (beside.go): requests that
// write wait for the step out, the rest is taken at once.
package controller
