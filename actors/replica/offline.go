package replica

import (
	"slices"
	"time"

	"github.com/sluicemq/sluice/messages"
)

// OfflineReportEvery spaces the reports of a replica that cannot serve.
const OfflineReportEvery = time.Second

// ReportOffline says whether replica self, which cannot serve (its log is
// unusable, or lost records below the HW), tells the controller so at now,
// its last report having gone at last: only while the controller's state
// st still counts on it (as leader or ISR member), while another replica
// is in sync to take over, and not sooner than OfflineReportEvery after
// the last report.
func ReportOffline(self int32, st *messages.PartitionState, last, now time.Time) bool {
	if st == nil {
		return false
	}
	if st.Leader != self && !slices.Contains(st.Isr, self) {
		return false // the controller has already moved on
	}
	if !slices.ContainsFunc(st.Isr, func(id int32) bool { return id != self }) {
		return false // the only in-sync replica: no other can take over
	}
	return now.Sub(last) >= OfflineReportEvery
}
