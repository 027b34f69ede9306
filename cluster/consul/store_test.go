package consul

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/cluster/storetest"
)

// TestConsulStore runs the suite against Consul, writing with the fence of
// a won campaign.
func TestConsulStore(t *testing.T) {
	agent := sharedAgent(t)
	storetest.Run(t, func(t *testing.T) storetest.Store {
		name := clusterName(t)
		open := openConsul
		if strings.HasSuffix(t.Name(), "/ClusterID") {
			open = openConsulWithoutID // the subtest creates it
		}
		c, _ := open(t, agent, name, 0)
		register(t, c, 1)
		lead := campaign(t, c, 1)
		other, _ := open(t, agent, name, 0)
		lose := func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, lead.Lost, 5*time.Second, "Lost after Resign")
		}
		return storetest.Store{Store: c, Fence: lead.Fence, Other: other, Lose: lose}
	})
}
