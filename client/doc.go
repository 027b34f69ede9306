// Package client is the Go client of Sluice: a Producer, a Consumer of
// explicit partitions and an Admin, all running on a protoactor actor
// system of their own (one per process, shared by every client that asks for
// the same listen address) that reaches brokers through protoactor remote.
//
// Producing, in the shape of franz-go's kgo:
//
//	p, err := client.NewProducer("127.0.0.1:9470", client.Acks(client.AllAcks))
//	defer p.Close()
//	rec, err := p.ProduceSync(ctx, &client.Record{Topic: "events", Key: []byte("k"), Value: []byte("v")})
//	p.Produce(ctx, &client.Record{Topic: "events", Value: []byte("async")}, func(r *client.Record, err error) {})
//	err = p.Flush(ctx)
//
// Consuming:
//
//	c, err := client.NewConsumer("127.0.0.1:9470", client.ConsumePartitions(map[string]map[int32]client.Offset{
//		"events": {0: client.AtStart()},
//	}))
//	defer c.Close()
//	for _, r := range c.PollFetches(ctx).Records { ... }
//
// Broker errors are returned as *messages.Error; test them with errors.Is
// against the codes this package re-exports (ErrNotLeader, ...).
package client
