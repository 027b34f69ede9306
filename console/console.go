// Package console is the web console every broker serves on its HTTP
// listener: server-rendered pages (html/template, embedded) of the
// cluster's brokers, topics and partitions, read through a Sluice admin
// client in the broker's process. The pages need no JavaScript.
package console

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/client"
)

//go:embed templates/*.html
var templateFS embed.FS

// staticFS holds the vendored chart library (see static/uplot/refresh.sh).
//
//go:embed static/uplot/*.js static/uplot/*.css static/uplot/LICENSE
var staticFS embed.FS

// Config is what a console serves from.
type Config struct {
	// Admin reads the cluster (the broker's own client); ClientOpts make
	// the message browser's consumers alike.
	Admin      *client.Admin
	ClientOpts []client.Opt
	// DefaultMinISR is the brokers' min.insync.replicas, for topics that
	// do not set their own.
	DefaultMinISR int
	// PageSize is how many rows a table shows per page (default 100).
	PageSize int
	// Write allows the mutating actions (see write.go); read-only without.
	Write bool
	// Visitor returns the principal a request comes from, or why it has
	// none (answered 401); Authorize applies the broker's ACLs to it (see
	// access.go). Both nil on a broker without TLS: every visitor sees and
	// may do everything.
	Visitor   func(*http.Request) (string, error)
	Authorize Authorize
	Logger    *slog.Logger
}

// Console serves the pages.
type Console struct {
	cfg   Config
	pages map[string]*template.Template
	csrf  csrf
	rates throughput
}

// New returns the console; Handler serves it.
func New(cfg Config) (*Console, error) {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	c := &Console{cfg: cfg, pages: map[string]*template.Template{}, csrf: newCSRF()}
	funcs := template.FuncMap{"bytes": humanBytes, "ids": ids, "add": func(a, b int) int { return a + b }}
	for _, page := range []string{"overview", "topics", "topic", "groups", "group", "messages", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, err
		}
		c.pages[page] = t
	}
	return c, nil
}

// Register adds the console's routes to mux.
func (c *Console) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.overview)
	mux.HandleFunc("GET /topics", c.topics)
	mux.HandleFunc("GET /topics/{name}", c.topic)
	mux.HandleFunc("GET /groups", c.groups)
	mux.HandleFunc("GET /groups/{name}", c.group)
	mux.HandleFunc("GET /messages", c.messages)
	mux.HandleFunc("GET /api/throughput", c.throughputJSON)
	mux.Handle("GET /static/", http.FileServerFS(staticFS))
	mux.HandleFunc("POST /topics", c.mutating(c.createTopic))
	mux.HandleFunc("POST /topics/{name}/delete", c.mutating(c.deleteTopic))
	mux.HandleFunc("POST /groups/{name}/reset-offsets", c.mutating(c.resetOffsets))
}

// render writes page with data for visitor v, or the error page.
func (c *Console) render(w http.ResponseWriter, v visitor, page string, data map[string]any) {
	data["Write"], data["CSRF"], data["Visitor"] = c.cfg.Write, c.csrf.token(v), v.principal
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Not to be framed by another site's page (clickjacking).
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
	if err := c.pages[page].Execute(w, data); err != nil && c.cfg.Logger != nil {
		c.cfg.Logger.Warn("console page failed", "page", page, "error", err)
	}
}

// fail answers with the error page: the status, what went wrong, and the
// console's navigation.
func (c *Console) fail(w http.ResponseWriter, status int, err error) {
	failPage(w, c.pages["error"], status, err.Error())
}

// failPage writes the error page with status and message; tmpl nil (the
// console not built yet) writes them as text.
func failPage(w http.ResponseWriter, tmpl *template.Template, status int, message string) {
	if tmpl == nil {
		http.Error(w, message, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_ = tmpl.Execute(w, map[string]any{"Title": http.StatusText(status), "Status": status, "Message": message})
}

// failText is fail for an error known only as text, in http.Error's order.
func (c *Console) failText(w http.ResponseWriter, message string, status int) {
	failPage(w, c.pages["error"], status, message)
}

func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 10*time.Second)
}

// page is the part of a long table a request asks for (?page=N, from 1).
type page struct {
	Number, Pages, From, To, Total int
}

func paginate(r *http.Request, total, size int) page {
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pages := max(1, (total+size-1)/size)
	n = min(max(n, 1), pages)
	from := (n - 1) * size
	return page{Number: n, Pages: pages, From: from, To: min(from+size, total), Total: total}
}

// Prev and Next are the neighbouring page numbers (0: none).
func (p page) Prev() int {
	if p.Number > 1 {
		return p.Number - 1
	}
	return 0
}

func (p page) Next() int {
	if p.Number < p.Pages {
		return p.Number + 1
	}
	return 0
}

// health counts partitions by state, as the overview shows them.
type health struct {
	Online, Offline, UnderReplicated, UnderMinISR int
}

func (c *Console) minISR(configs map[string]string) int {
	if v, err := strconv.Atoi(configs["min.insync.replicas"]); err == nil {
		return v
	}
	return c.cfg.DefaultMinISR
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	v, ok := c.visitor(w, r)
	if !ok {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	info, err := c.cfg.Admin.DescribeCluster(ctx)
	if err != nil {
		c.fail(w, http.StatusBadGateway, err)
		return
	}
	md, err := c.cfg.Admin.Metadata(ctx)
	if err != nil {
		c.fail(w, http.StatusBadGateway, err)
		return
	}
	var h health
	topics := 0 // that the visitor may describe
	// Per broker: replicas hosted, partitions led, partitions it is the
	// preferred leader of (their first replica).
	hosts, leads, preferred := map[int32]int{}, map[int32]int{}, map[int32]int{}
	for _, t := range md.Topics {
		if !v.may(opDescribe, onTopic, t.Name) {
			continue
		}
		topics++
		minISR := c.minISR(t.Configs)
		for _, p := range t.Partitions {
			for _, id := range p.Replicas {
				hosts[id]++
			}
			leads[p.Leader]++
			if len(p.Replicas) > 0 {
				preferred[p.Replicas[0]]++
			}
			switch {
			case p.Leader < 0:
				h.Offline++
				continue
			case len(p.ISR) < len(p.Replicas):
				h.UnderReplicated++
			}
			if len(p.ISR) < minISR {
				h.UnderMinISR++
			}
			h.Online++
		}
	}
	alive := 0
	for _, b := range info.Brokers {
		if b.Alive {
			alive++
		}
	}
	var rows []brokerRow
	for _, b := range info.Brokers {
		rows = append(rows, brokerRow{BrokerInfo: b, Controller: b.ID == info.ControllerID,
			Replicas: hosts[b.ID], Leads: leads[b.ID], Preferred: preferred[b.ID]})
	}
	// Moves in progress, for a visitor who may describe the cluster.
	var moves []client.OngoingReassignment
	if v.may(opDescribe, onCluster, "") {
		if moves, err = c.cfg.Admin.ListPartitionReassignments(ctx); err != nil {
			moves = nil
		}
	}
	c.render(w, v, "overview", map[string]any{"Title": "Overview", "Cluster": info, "Health": h, "Topics": topics, "Alive": alive,
		"Brokers": rows, "Moves": moves})
}

// brokerRow is one line of the overview's broker table: the broker, and
// how the partitions the visitor may describe sit on it.
type brokerRow struct {
	client.BrokerInfo
	Controller                 bool
	Replicas, Leads, Preferred int
}

// topicRow is one line of the topics page.
type topicRow struct {
	Name              string
	Partitions        int
	ReplicationFactor int
	SizeBytes         int64
	Retention         string
	Configs           map[string]string
	Err               error
}

func (c *Console) topics(w http.ResponseWriter, r *http.Request) {
	v, ok := c.visitor(w, r)
	if !ok {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	infos, err := c.cfg.Admin.DescribeTopics(ctx)
	if err != nil {
		c.fail(w, http.StatusBadGateway, err)
		return
	}
	rows := make([]topicRow, 0, len(infos))
	for _, t := range infos {
		if !v.may(opDescribe, onTopic, t.Name) {
			continue
		}
		row := topicRow{Name: t.Name, Partitions: len(t.Partitions), Configs: t.Configs, Err: t.Err, Retention: t.Configs["retention.ms"]}
		for _, p := range t.Partitions {
			row.SizeBytes += max(p.SizeBytes, 0)
			row.ReplicationFactor = max(row.ReplicationFactor, len(p.Replicas))
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b topicRow) int { return strings.Compare(a.Name, b.Name) })
	pg := paginate(r, len(rows), c.cfg.PageSize)
	c.render(w, v, "topics", map[string]any{"Title": "Topics", "Rows": rows[pg.From:pg.To], "Page": pg})
}

func (c *Console) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, ok := c.visitor(w, r)
	if !ok || !v.permit(w, opDescribe, onTopic, name) {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	t, err := c.cfg.Admin.DescribeTopic(ctx, name)
	if err != nil {
		c.fail(w, http.StatusNotFound, fmt.Errorf("topic %q: %w", name, err))
		return
	}
	pg := paginate(r, len(t.Partitions), c.cfg.PageSize)
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	c.render(w, v, "topic", map[string]any{"Title": "Topic " + name, "Topic": t, "Partitions": t.Partitions[pg.From:pg.To],
		"Page": pg, "ConfigKeys": keys})
}

func (c *Console) groups(w http.ResponseWriter, r *http.Request) {
	v, ok := c.visitor(w, r)
	if !ok {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	list, err := c.cfg.Admin.ListGroups(ctx)
	if err != nil {
		c.fail(w, http.StatusBadGateway, err)
		return
	}
	list = slices.DeleteFunc(list, func(g client.GroupListing) bool { return !v.may(opDescribe, onGroup, g.Group) })
	pg := paginate(r, len(list), c.cfg.PageSize)
	c.render(w, v, "groups", map[string]any{"Title": "Consumer groups", "Rows": list[pg.From:pg.To], "Page": pg})
}

// memberKind says what kind of client a group member is.
func memberKind(protocolType, pushID string) string {
	switch {
	case pushID != "":
		return "push subscriber"
	case protocolType != "":
		return "Kafka (" + protocolType + ")"
	}
	return "Sluice"
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, ok := c.visitor(w, r)
	if !ok || !v.permit(w, opDescribe, onGroup, name) {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	info, err := c.cfg.Admin.DescribeGroup(ctx, name)
	if err != nil {
		c.fail(w, http.StatusBadGateway, fmt.Errorf("group %q: %w", name, err))
		return
	}
	if info.State == "Dead" {
		c.fail(w, http.StatusNotFound, fmt.Errorf("group %q does not exist", name))
		return
	}
	type memberRow struct {
		ID, Client, Instance, Kind, Topics, Assignment string
	}
	var members []memberRow
	for _, m := range info.Members {
		var parts []string
		for _, tps := range m.Assignment {
			parts = append(parts, fmt.Sprintf("%s%v", tps.Topic, tps.Partitions))
		}
		members = append(members, memberRow{ID: m.MemberId, Client: m.ClientId, Instance: m.InstanceId,
			Kind: memberKind(info.ProtocolType, m.PushId), Topics: strings.Join(m.Topics, ","), Assignment: strings.Join(parts, " ")})
	}
	// Offsets of topics the visitor may not describe are left out.
	rows := slices.DeleteFunc(slices.Clone(info.Partitions), func(p client.GroupPartition) bool { return !v.may(opDescribe, onTopic, p.Topic) })
	pg := paginate(r, len(rows), c.cfg.PageSize)
	c.render(w, v, "group", map[string]any{"Title": "Group " + name, "Group": info, "Members": members,
		"Partitions": rows[pg.From:pg.To], "Page": pg})
}

// humanBytes writes n bytes as 12.3 MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ids writes broker ids as [1,2,3], as `sluice topic describe` does.
func ids(v []int32) string {
	s := make([]string, len(v))
	for i, id := range v {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ",") + "]"
}
