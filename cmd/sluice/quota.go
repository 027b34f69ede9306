package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/client"
)

// sluice quota: client quotas (Kafka's user and client-id byte rates),
// listed, set or deleted.

func runQuota(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "set" && args[0] != "delete" && args[0] != "list") {
		return usageErr("want set, delete or list")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("quota "+sub, stdout, stderr)
	conn := connFlags(fs)
	var entity *quotaEntityFlags
	if sub != "list" {
		entity = addQuotaEntityFlags(fs)
	}
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var format *outputFormat
	if sub == "list" {
		format = formatFlag(fs)
	}
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	set, remove := map[string]float64{}, []string(nil)
	switch {
	case sub == "list" && len(pos) > 0:
		return usageErr("unexpected argument %q", pos[0])
	case sub != "list" && len(pos) == 0:
		return usageErr("want %s after %s", map[string]string{"set": "KEY=BYTES_PER_SECOND", "delete": "the keys to delete"}[sub], sub)
	case sub == "set":
		for _, kv := range pos {
			key, value, ok := strings.Cut(kv, "=")
			rate, err := strconv.ParseFloat(value, 64)
			if !ok || err != nil {
				return usageErr("%q: want KEY=BYTES_PER_SECOND (%s, %s)", kv, client.ProducerByteRate, client.ConsumerByteRate)
			}
			set[key] = rate
		}
	case sub == "delete":
		remove = pos
	}
	admin, err := client.NewAdmin(*conn.broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if sub != "list" {
		e := entity.entity()
		if err := admin.AlterClientQuota(ctx, e, set, remove); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "changed the quotas of %v\n", e)
		return nil
	}
	quotas, err := admin.ClientQuotas(ctx)
	if err != nil {
		return err
	}
	if format.json() {
		for _, q := range quotas {
			writeJSONLine(stdout, quotaJSON{User: q.Entity.User, ClientID: q.Entity.ClientID, DefaultUser: q.Entity.DefaultUser,
				DefaultClientID: q.Entity.DefaultClientID, Values: q.Values})
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tKEY\tBYTES/S")
	for _, q := range quotas {
		for _, key := range slices.Sorted(maps.Keys(q.Values)) {
			fmt.Fprintf(tw, "%v\t%s\t%.0f\n", q.Entity, key, q.Values[key])
		}
	}
	return tw.Flush()
}

type quotaJSON struct {
	User            string             `json:"user,omitempty"`
	ClientID        string             `json:"client_id,omitempty"`
	DefaultUser     bool               `json:"default_user,omitempty"`
	DefaultClientID bool               `json:"default_client_id,omitempty"`
	Values          map[string]float64 `json:"values"`
}

type quotaEntityFlags struct {
	user, clientID               *string
	defaultUser, defaultClientID *bool
}

func addQuotaEntityFlags(fs *flag.FlagSet) *quotaEntityFlags {
	return &quotaEntityFlags{
		user:            fs.String("user", "", "the user (its name, without User:) the quota is for"),
		clientID:        fs.String("client-id", "", "the client id the quota is for (with --user: that user's clients with this id)"),
		defaultUser:     fs.Bool("default-user", false, "every user without a quota of its own"),
		defaultClientID: fs.Bool("default-client-id", false, "every client id without a quota of its own"),
	}
}

func (f *quotaEntityFlags) entity() client.QuotaEntity {
	return client.QuotaEntity{User: *f.user, ClientID: *f.clientID, DefaultUser: *f.defaultUser, DefaultClientID: *f.defaultClientID}
}
