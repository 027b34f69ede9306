package messages

// OffsetsTopic is the topic the group coordinators keep their groups and
// committed offsets in.
const OffsetsTopic = "__consumer_offsets"

// IsInternalTopic reports whether name is a topic the cluster keeps for
// itself (listed only when asked for, marked internal to Kafka clients,
// never produced to by clients).
func IsInternalTopic(name string) bool { return name == OffsetsTopic }
