// Package actors holds the broker's actors: the broker actor (routes client
// requests, keeps local replicas in line with the cluster metadata and
// supervises them), one partition replica actor per hosted partition (owns
// its log; leader and follower), and the controller actor (topic creation,
// replica placement, leader election, ISR commits) on whichever broker holds
// the controller lock.
//
// Each actor is a thin shell: Receive switches on the message and calls an
// onX method that feeds a state machine from a subpackage (replication,
// placement) and carries out its decisions with I/O and messages. Those
// subpackages import neither protoactor, nor storage, nor consul.
//
//	node, _ := transport.Start(transport.Config{Host: "127.0.0.1", Port: 9470}, logger)
//	backend, _ := cluster.OpenEmbedded(dir, cluster.Broker{ID: 0, Addr: node.Addr})
//	b, _ := actors.StartBroker(node.System, cfg, backend, node.Addr)
//	defer b.Stop()
package actors
