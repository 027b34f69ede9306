package kafka

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionRange is the versions of one API the listener serves.
type versionRange struct{ min, max int16 }

// request is what a handler is given besides the request itself: the
// connection it came on and a context that ends with the connection.
type request struct {
	conn *conn
	ctx  context.Context
}

// ask sends msg to the broker now; the answer is waited for later.
func (r *request) ask(msg proto.Message) Answer {
	return r.conn.srv.cfg.Broker.Ask(r.conn.caller, msg, r.conn.srv.cfg.RequestTimeout)
}

// askFor is ask with a wait of its own, for requests the coordinator
// answers only when a rebalance completes.
func (r *request) askFor(msg proto.Message, timeout time.Duration) Answer {
	return r.conn.srv.cfg.Broker.Ask(r.conn.caller, msg, timeout)
}

// handler starts serving a decoded request. It runs on the connection's
// reader, in arrival order, and must not wait: it sends what must reach
// the broker in order and returns finish, which runs on its own goroutine,
// waits for the answers and builds the response (nil: no response).
type handler func(r *request, h header, req kmsg.Request) (finish func() kmsg.Response)

// api is one served API: its versions and its handler.
type api struct {
	versions versionRange
	handle   handler
}

// apis is every API the listener serves, by key. ApiVersions advertises
// exactly these ranges. Minimums reach back as far as the clients need:
// librdkafka enables a feature only when the range includes the old
// version it looks for (Produce 3 and Fetch 4 for v2 batches, InitProducerId
// 0 for idempotence, ...), so raising a minimum silently turns features off.
var apis map[int16]api

func init() {
	apis = map[int16]api{
		kmsg.ApiVersions.Int16(): {versionRange{0, 4}, handleApiVersions},
		// Handshake v0 is followed by raw SASL bytes, not requests, and is
		// refused (handleSaslHandshake); librdkafka turns SASL on only
		// when the range includes it.
		kmsg.SASLHandshake.Int16():    {versionRange{0, 1}, handleSaslHandshake},
		kmsg.SASLAuthenticate.Int16(): {versionRange{0, 2}, handleSaslAuthenticate},
		kmsg.Metadata.Int16():         {versionRange{0, 12}, handleMetadata},
		// Produce 0-2 and Fetch 0-3 are used only by clients older than
		// record batches, whose batches are refused; librdkafka needs them
		// in the range to turn on LZ4 and throttle times.
		kmsg.Produce.Int16():                      {versionRange{0, 11}, handleProduce},
		kmsg.Fetch.Int16():                        {versionRange{0, 12}, handleFetch},
		kmsg.ListOffsets.Int16():                  {versionRange{0, 7}, handleListOffsets},
		kmsg.InitProducerID.Int16():               {versionRange{0, 4}, handleInitProducerID},
		kmsg.OffsetForLeaderEpoch.Int16():         {versionRange{2, 4}, handleOffsetForLeaderEpoch},
		kmsg.CreateTopics.Int16():                 {versionRange{0, 7}, handleCreateTopics},
		kmsg.DeleteTopics.Int16():                 {versionRange{0, 6}, handleDeleteTopics},
		kmsg.CreatePartitions.Int16():             {versionRange{0, 3}, handleCreatePartitions},
		kmsg.ElectLeaders.Int16():                 {versionRange{0, 2}, handleElectLeaders},
		kmsg.AlterPartitionAssignments.Int16():    {versionRange{0, 1}, handleAlterPartitionReassignments},
		kmsg.ListPartitionReassignments.Int16():   {versionRange{0, 0}, handleListPartitionReassignments},
		kmsg.DescribeProducers.Int16():            {versionRange{0, 0}, handleDescribeProducers},
		kmsg.DescribeLogDirs.Int16():              {versionRange{0, 4}, handleDescribeLogDirs},
		kmsg.DescribeUserSCRAMCredentials.Int16(): {versionRange{0, 0}, handleDescribeUserSCRAMCredentials},
		kmsg.DescribeClientQuotas.Int16():         {versionRange{0, 1}, handleDescribeClientQuotas},
		kmsg.AlterClientQuotas.Int16():            {versionRange{0, 1}, handleAlterClientQuotas},
		kmsg.AlterUserSCRAMCredentials.Int16():    {versionRange{0, 0}, handleAlterUserSCRAMCredentials},
		kmsg.AlterConfigs.Int16():                 {versionRange{0, 2}, handleAlterConfigs},
		kmsg.IncrementalAlterConfigs.Int16():      {versionRange{0, 1}, handleIncrementalAlterConfigs},
		kmsg.DescribeConfigs.Int16():              {versionRange{0, 4}, handleDescribeConfigs},
		kmsg.DescribeCluster.Int16():              {versionRange{0, 1}, handleDescribeCluster},
		kmsg.FindCoordinator.Int16():              {versionRange{0, 4}, handleFindCoordinator},
		kmsg.OffsetCommit.Int16():                 {versionRange{0, 9}, handleOffsetCommit},
		kmsg.OffsetFetch.Int16():                  {versionRange{1, 9}, handleOffsetFetch},
		kmsg.ListGroups.Int16():                   {versionRange{0, 5}, handleListGroups},
		kmsg.DescribeGroups.Int16():               {versionRange{0, 5}, handleDescribeGroups},
		kmsg.DeleteGroups.Int16():                 {versionRange{0, 2}, handleDeleteGroups},
		kmsg.OffsetDelete.Int16():                 {versionRange{0, 0}, handleOffsetDelete},
		kmsg.JoinGroup.Int16():                    {versionRange{0, 7}, handleJoinGroup},
		kmsg.SyncGroup.Int16():                    {versionRange{0, 5}, handleSyncGroup},
		kmsg.Heartbeat.Int16():                    {versionRange{0, 4}, handleHeartbeat},
		kmsg.LeaveGroup.Int16():                   {versionRange{0, 4}, handleLeaveGroup},
		kmsg.ConsumerGroupHeartbeat.Int16():       {versionRange{0, 1}, handleConsumerGroupHeartbeat},
		kmsg.ConsumerGroupDescribe.Int16():        {versionRange{0, 1}, handleConsumerGroupDescribe},
	}
}

// apiKeys returns the served keys in order.
func apiKeys() []int16 {
	keys := make([]int16, 0, len(apis))
	for k := range apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
