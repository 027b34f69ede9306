// Package messages holds every message Sluice sends between processes: the
// protobuf definitions (sluice.proto) with their generated Go code, and the
// error table shared by broker and client (errors.go).
//
// Record data is carried inside these messages as Kafka RecordBatch v2 bytes;
// the subpackage record encodes and validates them.
//
// This package depends on protobuf only. Regenerate after editing a .proto
// file with:
//
//	go generate ./messages
package messages

//go:generate bash gen.sh
