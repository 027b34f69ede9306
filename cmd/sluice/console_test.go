package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// tableRows reads the rows of the table with id from an HTML page: each
// row's cells' text, the header row first.
func tableRows(t *testing.T, page, id string) [][]string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var table *html.Node
	var find func(n *html.Node)
	find = func(n *html.Node) {
		for _, a := range n.Attr {
			if n.Data == "table" && a.Key == "id" && a.Val == id {
				table = n
			}
		}
		for c := n.FirstChild; c != nil && table == nil; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if table == nil {
		t.Fatalf("no table %q in the page", id)
	}
	var rows [][]string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" {
			var cells []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
					cells = append(cells, strings.TrimSpace(text(c)))
				}
			}
			rows = append(rows, cells)
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(table)
	return rows
}

func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
	}
	return b.String()
}

// getPage fetches a console page, failing on anything but 200.
func getPage(t *testing.T, addr, path string) string {
	t.Helper()
	code, body, err := httpGet(addr, path)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", path, code, err, body)
	}
	return body
}

// The console of a three-broker cluster shows what the CLI shows: the
// brokers and controller of `sluice cluster info`, and per partition the
// leader, epoch, replicas, ISR, log start, LEO and HW of `sluice topic
// describe`; long tables are paged.
func TestConsolePagesMatchTheCLI(t *testing.T) {
	c := startCluster(t, 3)
	c.createTopic("con", 4, 3, nil)
	c.waitFullyReplicated("con", time.Minute)
	var in strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	b := c.brokers[1]
	b.cli(in.String(), "produce", "con", "--key-delimiter", ":")
	web := httpAddr(t, b)

	info := decodeLines[clusterJSON](t, b.cli("", "cluster", "info", "--format", "json"))[0]
	page := getPage(t, web, "/")
	brokers := tableRows(t, page, "broker-table")[1:]
	if len(brokers) != len(info.Brokers) {
		t.Fatalf("overview lists %d brokers, cluster info %d", len(brokers), len(info.Brokers))
	}
	md, err := c.metadata()
	if err != nil {
		t.Fatal(err)
	}
	hosts, leads, preferred := map[int32]int{}, map[int32]int{}, map[int32]int{}
	for _, tm := range md.Topics {
		for _, p := range tm.Partitions {
			for _, id := range p.Replicas {
				hosts[id]++
			}
			leads[p.Leader]++
			preferred[p.Replicas[0]]++
		}
	}
	for i, br := range info.Brokers {
		row := brokers[i]
		if row[0] != strconv.Itoa(int(br.ID)) || row[1] != br.Address || row[2] != br.State || row[3] != orDash(br.Rack) || row[4] != br.Version ||
			(row[5] == "controller") != (br.ID == info.Controller) || row[6] != strconv.Itoa(hosts[br.ID]) ||
			row[7] != strconv.Itoa(leads[br.ID]) || row[8] != strconv.Itoa(preferred[br.ID]) {
			t.Errorf("overview broker row %v, cluster info %+v (controller %d), metadata: %d replicas, leads %d, preferred for %d",
				row, br, info.Controller, hosts[br.ID], leads[br.ID], preferred[br.ID])
		}
	}
	if !strings.Contains(page, fmt.Sprintf(`<b id="online">%d</b>`, info.Partitions)) {
		t.Errorf("the overview does not count %d partitions online", info.Partitions)
	}

	topics := tableRows(t, getPage(t, web, "/topics"), "topic-table")
	found := false
	for _, row := range topics[1:] {
		if row[0] == "con" {
			found = true
			if row[1] != "4" || row[2] != "3" {
				t.Errorf("topics page row %v, want 4 partitions, RF 3", row)
			}
		}
	}
	if !found {
		t.Errorf("topic con not listed: %v", topics)
	}

	eventually(t, 30*time.Second, func() string {
		desc := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "con", "--format", "json"))[0]
		rows := tableRows(t, getPage(t, web, "/topics/con"), "partition-table")[1:]
		if len(rows) != len(desc.Partitions) {
			return fmt.Sprintf("%d partition rows, describe has %d", len(rows), len(desc.Partitions))
		}
		for i, p := range desc.Partitions {
			want := []string{strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), strconv.Itoa(int(p.LeaderEpoch)),
				ids(p.Replicas), ids(p.ISR), strconv.FormatInt(p.LogStartOffset, 10),
				strconv.FormatInt(p.LogEndOffset, 10), strconv.FormatInt(p.HighWatermark, 10)}
			if got := rows[i][:8]; strings.Join(got, "|") != strings.Join(want, "|") {
				return fmt.Sprintf("partition %d: console %v, describe %v", p.Partition, got, want)
			}
		}
		return ""
	})

	// A group: listed, and its offsets and lag as `sluice group describe`
	// prints them.
	b.cli("", "consume", "con", "--group", "cg", "--from-beginning", "--max", "40")
	if rows := tableRows(t, getPage(t, web, "/groups"), "group-table"); !strings.Contains(fmt.Sprint(rows), "cg") {
		t.Errorf("groups page: %v", rows)
	}
	g := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "cg", "--format", "json"))[0]
	offsets := tableRows(t, getPage(t, web, "/groups/cg"), "offset-table")[1:]
	if len(offsets) != len(g.Partitions) {
		t.Fatalf("group page has %d partition rows, describe %d", len(offsets), len(g.Partitions))
	}
	for i, p := range g.Partitions {
		want := fmt.Sprintf("%s|%d|%d|%d|%d|%d", p.Topic, p.Partition, p.Committed, p.End, p.LogEnd, p.Lag)
		if got := strings.Join(offsets[i][:6], "|"); got != want {
			t.Errorf("group page row %s, describe %s", got, want)
		}
	}
	if code, body, err := httpGet(web, "/groups/never-was"); err != nil || code != http.StatusNotFound ||
		!strings.Contains(body, "<nav>") || !strings.Contains(body, "group &#34;never-was&#34; does not exist") {
		t.Errorf("a group that does not exist: %d %v\n%s", code, err, body)
	}
	if !regexp.MustCompile(`id="brokers"\s*>3 of 3</b>`).MatchString(page) {
		t.Errorf("the overview does not say 3 of 3 brokers are alive")
	}

	// 150 partitions: 100 on the first page, 50 on the second.
	c.createTopic("wide", 150, 1, nil)
	first := getPage(t, web, "/topics/wide")
	if n := len(tableRows(t, first, "partition-table")) - 1; n != 100 || !strings.Contains(first, `href="?page=2"`) {
		t.Errorf("first page: %d rows, next link %v", n, strings.Contains(first, `href="?page=2"`))
	}
	second := tableRows(t, getPage(t, web, "/topics/wide?page=2"), "partition-table")[1:]
	if len(second) != 50 || second[0][0] != "100" || second[49][0] != "149" {
		t.Errorf("second page: %d rows from %v", len(second), second[0])
	}
	if code, body, err := httpGet(web, "/topics/no-such-topic"); err != nil || code != http.StatusNotFound || !strings.Contains(body, "<nav>") {
		t.Errorf("an unknown topic: %d %v\n%s", code, err, body)
	}

	// A broker down: the overview counts the brokers alive.
	c.brokers[3].stop()
	eventually(t, time.Minute, func() string {
		if page := getPage(t, web, "/"); !regexp.MustCompile(`id="brokers"\s*class="bad">2 of 3</b>`).MatchString(page) {
			return "the overview does not say 2 of 3 brokers are alive"
		}
		return ""
	})
}

// The message browser shows produced records — key, value, headers,
// timestamp — from the start, the end, an offset or a time, as text,
// pretty-printed JSON or hex, including records of a compressed batch;
// bad input is refused with 400.
func TestConsoleMessageBrowser(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "mb")
	var in strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	b.cli(in.String(), "produce", "mb", "--key-delimiter", ":", "--header", "source=test")
	b.cli(`j:{"a":1,"b":[true]}`+"\n", "produce", "mb", "--key-delimiter", ":")
	b.cli("z1\nz2\n", "produce", "mb", "--compression", "gzip")
	web := httpAddr(t, b)
	rows := func(query string) [][]string {
		t.Helper()
		return tableRows(t, getPage(t, web, "/messages?topic=mb&partition=0&"+query), "message-table")[1:]
	}
	got := rows("from=start&max=3")
	if len(got) != 3 || got[0][0] != "0" || got[0][2] != "k0" || got[0][3] != "v0" || got[0][4] != "source=test" || got[2][3] != "v2" {
		t.Errorf("from the start: %v", got)
	}
	if _, err := time.Parse(time.RFC3339Nano, got[0][1]); err != nil {
		t.Errorf("timestamp %q: %v", got[0][1], err)
	}
	if got := rows("from=end&max=2"); len(got) != 2 || got[0][3] != "z1" || got[1][3] != "z2" || got[1][0] != "12" {
		t.Errorf("the last two (a gzip batch): %v", got)
	}
	if got := rows("from=10&max=1&format=json"); len(got) != 1 || got[0][3] != "{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}" {
		t.Errorf("JSON at offset 10: %q", got)
	}
	if got := rows("from=1&max=1&format=hex"); len(got) != 1 || got[0][3] != "7631" || got[0][2] != "6b31" {
		t.Errorf("hex at offset 1: %v", got)
	}
	if got := rows("from=@0&max=50"); len(got) != 13 {
		t.Errorf("from time 0: %d records", len(got))
	}
	for _, bad := range []string{"from=99", "from=start&max=0", "from=start&max=100000", "from=soon", "from=start&format=xml"} {
		if code, _, err := httpGet(web, "/messages?topic=mb&partition=0&"+bad); err != nil || code != http.StatusBadRequest {
			t.Errorf("%s: %d %v", bad, code, err)
		}
	}
	for _, bad := range []string{"topic=mb&partition=x", "topic=mb&partition=5", "topic=nope&partition=0"} {
		if code, _, err := httpGet(web, "/messages?"+bad); err != nil || code != http.StatusBadRequest {
			t.Errorf("%s: %d %v", bad, code, err)
		}
	}
	if code, body, err := httpGet(web, "/messages"); err != nil || code != http.StatusOK || !strings.Contains(body, "<form") {
		t.Errorf("the empty form: %d %v", code, err)
	}
	// Large records: a page holds about 4 MiB of them, each value cut to
	// 64 KiB with its size.
	big := strings.Repeat(strings.Repeat("x", 900_000)+"\n", 8)
	b.cli("", "topic", "create", "mbig")
	b.cli(big, "produce", "mbig")
	bigPage := getPage(t, web, "/messages?topic=mbig&partition=0&from=start&max=8")
	bigRows := tableRows(t, bigPage, "message-table")[1:]
	if len(bigRows) != 5 || !strings.Contains(bigRows[0][3], "(900000 bytes, the first 4096 shown)") || len(bigRows[0][3]) > 5_000 {
		t.Errorf("a page of eight 900 KB records: %d rows", len(bigRows))
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(bigRows[0][1]) {
		t.Errorf("timestamp %q: want milliseconds, three digits", bigRows[0][1])
	}
	// Each cut record links to itself shown whole.
	link := regexp.MustCompile(`<a class="whole" href="([^"]+)">show all 878.9 KiB</a>`).FindStringSubmatch(bigPage)
	if link == nil {
		t.Fatalf("no link to a cut record shown whole")
	}
	wholeRows := tableRows(t, getPage(t, web, html.UnescapeString(link[1])), "message-table")[1:]
	if len(wholeRows) != 1 || wholeRows[0][0] != "0" || wholeRows[0][3] != strings.Repeat("x", 900_000) {
		t.Errorf("the record shown whole: %d rows", len(wholeRows))
	}
	// The console's clients share the broker's actor system: the broker
	// stops cleanly (and, under the race detector, without a race).
	b.stop()
}

// post sends a console form from origin (the Origin header; "" for none).
func post(t *testing.T, addr, path, origin string, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	c := http.Client{Timeout: 30 * time.Second, Jar: consoleJar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// consoleJar keeps the console's session cookie between the tests' page
// reads and form posts, as a browser does: a form token is good only with
// the session it was shown to.
var consoleJar, _ = cookiejar.New(nil)

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// The console's actions: refused on a read-only console, and on a writable
// one without the form token or from another origin; with both, a topic
// is created and deleted and a group's offsets reset.
func TestConsoleWriteActions(t *testing.T) {
	ro := startBroker(t)
	roWeb := httpAddr(t, ro)
	if strings.Contains(getPage(t, roWeb, "/topics"), "create-topic") {
		t.Errorf("a read-only console offers to create topics")
	}
	if code, body := post(t, roWeb, "/topics", "http://"+roWeb, url.Values{"name": {"x"}, "partitions": {"1"}, "replication_factor": {"1"}}); code != http.StatusForbidden || !strings.Contains(body, "--console-write") {
		t.Errorf("create on a read-only console: %d %q", code, body)
	}

	b := startBroker(t, "--console-write")
	web := httpAddr(t, b)
	m := csrfField.FindStringSubmatch(getPage(t, web, "/topics"))
	if m == nil {
		t.Fatal("no form token on the topics page")
	}
	token, self := m[1], "http://"+web
	create := url.Values{"name": {"made"}, "partitions": {"2"}, "replication_factor": {"1"}}
	if code, _ := post(t, web, "/topics", self, create); code != http.StatusForbidden {
		t.Errorf("create without the token: %d", code)
	}
	create.Set("csrf", token)
	// The token is good only with the session cookie of the page that
	// showed it: another client of the same (anonymous) principal cannot
	// use it.
	other, _ := http.NewRequest("POST", "http://"+web+"/topics", strings.NewReader(create.Encode()))
	other.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	other.Header.Set("Origin", self)
	if resp, err := http.DefaultClient.Do(other); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("create with the token but another session: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, _ := post(t, web, "/topics", "http://evil.example", create); code != http.StatusForbidden {
		t.Errorf("create from another origin: %d", code)
	}
	if code, _ := post(t, web, "/topics", "", create); code != http.StatusForbidden {
		t.Errorf("create with neither Origin nor Referer: %d", code)
	}
	if out := b.cli("", "topic", "list"); strings.Contains(out, "made") {
		t.Fatalf("a refused request created the topic: %q", out)
	}
	if code, body := post(t, web, "/topics", self, create); code != http.StatusSeeOther {
		t.Fatalf("create: %d %q", code, body)
	}
	if d := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "made", "--format", "json"))[0]; len(d.Partitions) != 2 {
		t.Errorf("created topic has %d partitions", len(d.Partitions))
	}

	b.cli("a\nb\nc\n", "produce", "made", "--partition", "0")
	b.cli("", "consume", "made", "--group", "g", "--from-beginning", "--max", "3")
	reset := url.Values{"csrf": {token}, "topic": {"made"}, "to": {"earliest"}}
	if code, body := post(t, web, "/groups/g/reset-offsets", self, reset); code != http.StatusSeeOther {
		t.Fatalf("reset offsets: %d %q", code, body)
	}
	g := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "g", "--format", "json"))[0]
	for _, p := range g.Partitions {
		if p.Committed != 0 {
			t.Errorf("after the reset to earliest: %+v", p)
		}
	}

	del := url.Values{"csrf": {token}, "confirm": {"wrong"}}
	if code, _ := post(t, web, "/topics/made/delete", self, del); code != http.StatusBadRequest {
		t.Errorf("delete without the right confirmation: %d", code)
	}
	del.Set("confirm", "made")
	if code, body := post(t, web, "/topics/made/delete", self, del); code != http.StatusSeeOther {
		t.Fatalf("delete: %d %q", code, body)
	}
	eventually(t, 30*time.Second, func() string {
		if out := b.cli("", "topic", "list"); strings.Contains(out, "made") {
			return "topic still listed: " + out
		}
		return ""
	})
}
