package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicemq/sluice/client"
)

// The message browser reads up to max records of one partition from a
// start the visitor picks: the start, the end (the last max records), an
// offset, or a time.

const (
	defaultMessages = 20
	maxMessages     = 500
	// maxPageBytes bounds the keys, values and headers one page holds: a
	// page ends early rather than hold 500 large records.
	maxPageBytes = 4 << 20
	// maxShownBytes is how much of one key, value or header a list of
	// records shows; a link shows the whole record (up to maxPageBytes).
	maxShownBytes = 4 << 10
	// timeLayout shows timestamps with their milliseconds, always three
	// digits, so that a column of them lines up.
	timeLayout = "2006-01-02T15:04:05.000Z07:00"
)

// browseQuery is the message browser's form.
type browseQuery struct {
	Topic     string
	Partition int32
	From      string // start, end, N or @TIME (Unix ms or RFC 3339)
	Max       int
	Format    string // text, json or hex
	// Whole shows each record whole, not cut at maxShownBytes.
	Whole bool
}

// shownRecord is one record as the browser shows it.
type shownRecord struct {
	Offset    int64
	Timestamp string
	Key       string
	Value     string
	Headers   []string
	// Size is the record's key, value and headers in bytes when the list
	// cut any of them (0: shown whole); WholeURL shows it whole.
	Size     int64
	WholeURL string
}

func (c *Console) messages(w http.ResponseWriter, r *http.Request) {
	v, ok := c.visitor(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	bq := browseQuery{Topic: q.Get("topic"), From: q.Get("from"), Format: q.Get("format"), Max: defaultMessages}
	if bq.From == "" {
		bq.From = "end"
	}
	if bq.Format == "" {
		bq.Format = "text"
	}
	data := map[string]any{"Title": "Messages", "Query": bq}
	if bq.Topic == "" {
		c.render(w, v, "messages", data)
		return
	}
	if !v.permit(w, opRead, onTopic, bq.Topic) {
		return
	}
	p, err := strconv.ParseInt(q.Get("partition"), 10, 32)
	if err != nil || p < 0 {
		c.failText(w, "partition: want a partition number", http.StatusBadRequest)
		return
	}
	bq.Partition = int32(p)
	if s := q.Get("max"); s != "" {
		if bq.Max, err = strconv.Atoi(s); err != nil || bq.Max < 1 || bq.Max > maxMessages {
			c.failText(w, fmt.Sprintf("max: want 1 to %d", maxMessages), http.StatusBadRequest)
			return
		}
	}
	if bq.Format != "text" && bq.Format != "json" && bq.Format != "hex" {
		c.failText(w, "format: want text, json or hex", http.StatusBadRequest)
		return
	}
	bq.Whole = q.Get("whole") == "1"
	data["Query"] = bq
	ctx, cancel := c.ctx(r)
	defer cancel()
	recs, first, end, err := c.read(ctx, bq)
	if err != nil {
		c.failText(w, err.Error(), http.StatusBadRequest)
		return
	}
	limit := maxShownBytes
	if bq.Whole {
		limit = maxPageBytes
	}
	shown := make([]shownRecord, 0, len(recs))
	for _, rec := range recs {
		s := shownRecord{Offset: rec.Offset, Timestamp: rec.Timestamp.UTC().Format(timeLayout),
			Key: show(rec.Key, bq.Format, limit), Value: show(rec.Value, bq.Format, limit)}
		size, cut := len(rec.Key)+len(rec.Value), len(rec.Key) > limit || len(rec.Value) > limit
		for _, h := range rec.Headers {
			s.Headers = append(s.Headers, h.Key+"="+show(h.Value, bq.Format, limit))
			size, cut = size+len(h.Key)+len(h.Value), cut || len(h.Value) > limit
		}
		if cut && !bq.Whole {
			s.Size = int64(size)
			s.WholeURL = "/messages?" + url.Values{"topic": {bq.Topic}, "partition": {strconv.Itoa(int(bq.Partition))},
				"from": {strconv.FormatInt(rec.Offset, 10)}, "max": {"1"}, "format": {bq.Format}, "whole": {"1"}}.Encode()
		}
		shown = append(shown, s)
	}
	data["Records"], data["First"], data["End"], data["Read"] = shown, first, end, true
	c.render(w, v, "messages", data)
}

// read returns the records asked for, and the offset reading started at
// and the partition's end (its high watermark) then.
func (c *Console) read(ctx context.Context, q browseQuery) ([]*client.Record, int64, int64, error) {
	t, err := c.cfg.Admin.DescribeTopic(ctx, q.Topic)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("topic %q: %w", q.Topic, err)
	}
	if int(q.Partition) >= len(t.Partitions) {
		return nil, 0, 0, fmt.Errorf("topic %q has %d partitions", q.Topic, len(t.Partitions))
	}
	p := t.Partitions[q.Partition]
	if p.Err != nil {
		return nil, 0, 0, fmt.Errorf("%s-%d: %w", q.Topic, q.Partition, p.Err)
	}
	logStart, end := p.LogStartOffset, p.HighWatermark
	var from int64
	switch {
	case q.From == "start":
		from = logStart
	case q.From == "end":
		from = max(end-int64(q.Max), logStart)
	case strings.HasPrefix(q.From, "@"):
		ts, err := parseTime(q.From[1:])
		if err != nil {
			return nil, 0, 0, err
		}
		if from, err = c.cfg.Admin.ListOffset(ctx, q.Topic, q.Partition, ts); err != nil {
			return nil, 0, 0, err
		}
		if from < 0 {
			from = end // nothing at or after that time
		}
	default:
		if from, err = strconv.ParseInt(q.From, 10, 64); err != nil {
			return nil, 0, 0, fmt.Errorf("from %q: want start, end, an offset or @TIME", q.From)
		}
		if from < logStart || from > end {
			return nil, 0, 0, fmt.Errorf("offset %d is outside %s-%d's log, %d to %d", from, q.Topic, q.Partition, logStart, end)
		}
	}
	if from >= end {
		return nil, from, end, nil
	}
	cons, err := client.NewConsumer(t.Brokers[0].Address, client.Options(c.cfg.ClientOpts...),
		client.ConsumePartitions(map[string]map[int32]client.Offset{q.Topic: {q.Partition: client.AtOffset(from)}}))
	if err != nil {
		return nil, 0, 0, err
	}
	defer cons.Close()
	var out []*client.Record
	size := 0
	for len(out) < q.Max && size < maxPageBytes {
		f := cons.PollRecords(ctx, q.Max-len(out))
		if len(f.Errors) > 0 {
			return nil, 0, 0, f.Errors[0].Err
		}
		if ctx.Err() != nil {
			return nil, 0, 0, fmt.Errorf("reading %s-%d: %w", q.Topic, q.Partition, ctx.Err())
		}
		for _, rec := range f.Records {
			if rec.Offset < end && len(out) < q.Max && size < maxPageBytes {
				out = append(out, rec)
				size += recordBytes(rec)
			}
		}
		if len(out) > 0 && out[len(out)-1].Offset >= end-1 {
			break
		}
	}
	return out, from, end, nil
}

// recordBytes is what a record's key, value and headers take.
func recordBytes(r *client.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// show writes bytes in format: text (as is when valid UTF-8, else hex),
// json (indented when it parses, else as text) or hex; only the first
// limit bytes of them, with a note of how many there are.
func show(b []byte, format string, limit int) string {
	if len(b) > limit {
		return show(b[:limit], format, limit) + fmt.Sprintf(" … (%d bytes, the first %d shown)", len(b), limit)
	}
	switch {
	case b == nil:
		return ""
	case format == "hex":
		return hex.EncodeToString(b)
	case format == "json":
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			return out.String()
		}
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return hex.EncodeToString(b)
}

// parseTime reads Unix milliseconds or an RFC 3339 time.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("time %q: want Unix milliseconds or RFC 3339", s)
	}
	return t.UnixMilli(), nil
}
