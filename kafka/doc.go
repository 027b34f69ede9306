// Package kafka is the broker's second front door: a listener that speaks
// Apache Kafka's wire protocol, so unchanged Kafka clients (librdkafka,
// franz-go, sarama, the Java client) reach the same broker, partitions and
// groups as Sluice's own client.
//
// A connection has one reader and one writer. The reader takes frames
// (a 4-byte size, a request header, a body decoded with franz-go's kmsg)
// and hands each request to its handler on its own goroutine; the writer
// sends the answers in request order, as the protocol requires. Handlers
// map Kafka requests onto Sluice's messages and ask the local broker actor
// through a Broker; they hold no state of their own.
//
// One file per API (api_versions.go, metadata.go, ...) opens with the
// versions it serves; versions.go lists them all, which is what
// ApiVersions advertises.
package kafka
