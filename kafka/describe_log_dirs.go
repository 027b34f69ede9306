package kafka

import (
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeLogDirs (key 35), v0–4: the broker's one data directory and the
// size of each replica in it; the offset lag is how far the replica's log
// end is below its high watermark (0 on leaders). A request naming topics
// gets only their partitions. Needs Describe on the cluster (v3+: the
// top-level error; earlier versions get no directory).

func handleDescribeLogDirs(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	sreq := &messages.DescribeLogDirsRequest{}
	asked := map[string]map[int32]bool{}
	for _, t := range req.Topics {
		sreq.Topics = append(sreq.Topics, t.Topic)
		asked[t.Topic] = map[int32]bool{}
		for _, p := range t.Partitions {
			asked[t.Topic][p] = true
		}
	}
	if req.Topics != nil && len(req.Topics) == 0 {
		return func() kmsg.Response { return kmsg.NewPtrDescribeLogDirsResponse() }
	}
	answer := r.ask(sreq)
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeLogDirsResponse()
		m, code := answerAs[*messages.DescribeLogDirsResponse](answer)
		if code == 0 {
			code = kafkaCode(m.Error)
		}
		if code != 0 {
			resp.ErrorCode = code
			return resp
		}
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir = m.LogDir
		var st syscall.Statfs_t
		if syscall.Statfs(m.LogDir, &st) == nil {
			dir.TotalBytes = int64(st.Blocks) * st.Bsize
			dir.UsableBytes = int64(st.Bavail) * st.Bsize
		}
		byTopic := map[string]int{}
		for _, rs := range m.Replicas {
			if req.Topics != nil && !asked[rs.Topic][rs.Partition] {
				continue
			}
			i, ok := byTopic[rs.Topic]
			if !ok {
				i = len(dir.Topics)
				byTopic[rs.Topic] = i
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = rs.Topic
				dir.Topics = append(dir.Topics, t)
			}
			p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			p.Partition, p.Size = rs.Partition, max(rs.SizeBytes, 0)
			p.OffsetLag = max(rs.HighWatermark-rs.LogEndOffset, 0)
			dir.Topics[i].Partitions = append(dir.Topics[i].Partitions, p)
		}
		resp.Dirs = append(resp.Dirs, dir)
		return resp
	}
}
