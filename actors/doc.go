// Package actors is the root of the broker's actors: the configuration they
// share (BrokerConfig, TopicConfig), the internal topic __consumer_offsets
// and how groups map onto it, and the reply helpers every actor uses.
//
// Each actor kind has its own package over the plain-Go package that holds
// its protocol logic:
//
//	broker/       the broker actor: routes requests, keeps the local replicas
//	              in line with the metadata, hosts the controller; Start
//	partition/    one partition replica (leader and follower)   over replication/, producerstate/
//	controller/   topic creation, leader election, ISR commits  over election/, placement/
//	coordinator/  group hosts, group coordinators, pushers      over groups/
//
// The protoactor remote, set up and guarded, is in the transport package
// and the ACL model in acl: the broker and the client share both.
//
// Actors are thin shells: Receive switches on the message and calls an onX
// method that feeds the state machine and carries out its decisions with
// I/O and messages. The plain packages import neither protoactor, nor
// storage, nor consul (layout_test.go checks it).
//
//	node, _ := transport.Start(transport.Config{Host: "127.0.0.1", Port: 9470}, logger)
//	backend, _ := cluster.OpenEmbedded(dir, cluster.Broker{ID: 0, Addr: node.Addr})
//	b, _ := broker.Start(node.System, actors.DefaultBrokerConfig(), backend, node.Addr)
//	defer b.Stop()
package actors
