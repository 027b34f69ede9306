package kafka

// Group offsets and group listings are served by Sluice's group
// coordinators, one file per API: offset_commit.go, offset_fetch.go,
// list_groups.go, describe_groups.go, delete_groups.go, offset_delete.go;
// joining them starts in join_group.go.

// consumerProtocol is the protocol type of every group Sluice reports.
const consumerProtocol = "consumer"

// deref is the string a nullable string points to ("" for null).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
