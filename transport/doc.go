// Package transport starts the protoactor actor system and remote (gRPC)
// endpoint that brokers and clients use, configured for Sluice's traffic:
//
//   - gRPC frame limits and the remote's endpoint batch size are derived from
//     the largest message the node sends, so a record batch at the maximum
//     size always goes through instead of silently dropping the connection;
//   - a stream interceptor (guard.go) checks every incoming MessageBatch: it
//     admits Sluice's own message types and only the protoactor system
//     messages Sluice needs (Watch, Unwatch and Terminated naming actors of
//     the sending node, DeadLetterResponse), replaces every other envelope
//     (Stop, PoisonPill, unknown type names, out-of-range type or serializer
//     ids, undecodable bytes) with a messages.InvalidMessage, stamps
//     PeerHeader on every envelope so actors can tell network messages from
//     local ones (FromNetwork), counts what it refused (Node.Guard), and
//     closes streams whose framing is broken;
//   - with Config.Security, every connection is mutual TLS (tls.go): the
//     node's role decides whom it accepts (a client's listener only
//     brokers), each stream gets a principal from its certificate or
//     bearer token (principal.go), stamped as PrincipalHeader on every
//     envelope, and a client's connection to a broker may address only
//     that broker's broker actor (and its pusher); Probe tells a client why
//     a broker refuses it;
//   - a client session (session.go, session_client.go) carries a client's
//     requests and their answers over one stream the client opens on the
//     same listener, checked by the same guard as a restricted client's
//     connection: no broker has to reach the client (Node.SessionPID);
//   - protoactor logs through slog at the level given.
//
// Usage:
//
//	node, err := transport.Start(transport.Config{Host: "127.0.0.1", Port: 9470}, logger)
//	defer node.Stop()
//	node.System.Root.Send(pid, msg)
//
// This package imports protoactor and messages only.
package transport
