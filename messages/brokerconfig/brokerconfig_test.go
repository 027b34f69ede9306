package brokerconfig

import (
	"errors"
	"maps"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/messages"
)

// A broker's own value wins over the cluster default, which wins over the
// flags; only dynamic settings with good values are taken; replace and
// delete leave no empty overrides behind.
func TestApplyAndFor(t *testing.T) {
	rec, err := Apply(nil, Change{BrokerID: ClusterDefault, Set: map[string]string{NumPartitions: "3", AutoCreateTopics: "false"}})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = Apply(rec, Change{BrokerID: 2, Set: map[string]string{NumPartitions: "5"}}); err != nil {
		t.Fatal(err)
	}
	two, one := For(rec, 2), For(rec, 1)
	if two.Int(NumPartitions, 1) != 5 || one.Int(NumPartitions, 1) != 3 || one.Bool(AutoCreateTopics, true) ||
		one.Int(DefaultReplication, 7) != 7 {
		t.Errorf("broker 2 %+v, broker 1 %+v", two, one)
	}
	for _, bad := range []Change{
		{BrokerID: 1, Set: map[string]string{"log.dirs": "/tmp"}},
		{BrokerID: 1, Delete: []string{"broker.id"}},
		{BrokerID: 1, Set: map[string]string{NumPartitions: "0"}},
		{BrokerID: 1, Set: map[string]string{AutoCreateTopics: "yes"}},
		{BrokerID: 1, Set: map[string]string{ConnectionsMaxReauthMs: "-1"}},
		{BrokerID: -2, Set: map[string]string{NumPartitions: "1"}},
	} {
		if _, err := Apply(rec, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := Apply(rec, Change{BrokerID: 1, Set: map[string]string{"log.dirs": "/tmp"}}); !strings.Contains(err.Error(), "num.partitions") {
		t.Errorf("a static setting's refusal does not list the dynamic ones: %v", err)
	}
	next, err := Apply(rec, Change{BrokerID: ClusterDefault, Replace: true, Set: map[string]string{DefaultReplication: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if v := For(next, 1); v.Int(NumPartitions, 1) != 1 || v.Int(DefaultReplication, 1) != 2 {
		t.Errorf("after replacing the cluster default: %+v", v)
	}
	next, _ = Apply(next, Change{BrokerID: 2, Delete: []string{NumPartitions}})
	if len(next.BrokerConfigs) != 1 || next.BrokerConfigs[0].BrokerId != ClusterDefault {
		t.Errorf("an override emptied by a delete is kept: %v", next.BrokerConfigs)
	}
	if For(rec, 2).Int(NumPartitions, 1) != 5 {
		t.Error("Apply changed the record it was given")
	}
	if v := For((*messages.SecurityRecord)(nil), 1); v.Int(NumPartitions, 4) != 4 {
		t.Errorf("no record: %+v", v)
	}
}

func TestParseIPOverrides(t *testing.T) {
	got, err := ParseIPOverrides("10.0.0.1:500, [::1]:3,127.0.0.1:0")
	if err != nil || len(got) != 3 || got["10.0.0.1"] != 500 || got["::1"] != 3 || got["127.0.0.1"] != 0 {
		t.Errorf("parsed %v %v", got, err)
	}
	if got, err := ParseIPOverrides(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"10.0.0.1", "lb.example:5", "10.0.0.1:-1", "10.0.0.1:x"} {
		if _, err := ParseIPOverrides(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := Apply(nil, Change{BrokerID: ClusterDefault, Set: map[string]string{MaxConnectionsPerIPOverrides: "lb.example:5"}}); err == nil {
		t.Error("a host name accepted as an override")
	}
}

// Whatever an AlterConfigs carries as max.connections.per.ip.overrides is
// parsed without a panic; what is accepted names IP addresses with counts
// of 0 or more, and parses again to the same.
func FuzzParseIPOverrides(f *testing.F) {
	for _, s := range []string{"", "10.0.0.1:5", "[::1]:3,127.0.0.1:0", "x:1", ":::", "1.2.3.4:-1", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := ParseIPOverrides(v)
		if err != nil {
			return
		}
		var parts []string
		for ip, n := range got {
			if net.ParseIP(ip) == nil || n < 0 {
				t.Fatalf("%q gave %q: %d", v, ip, n)
			}
			parts = append(parts, "["+ip+"]:"+strconv.Itoa(n))
		}
		again, err := ParseIPOverrides(strings.Join(parts, ","))
		if err != nil || !maps.Equal(again, got) {
			t.Fatalf("%q: %v, again %v %v", v, got, again, err)
		}
	})
}
