package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// httpsDo sends a request to a broker's HTTPS listener with the
// certificate pair name, a form (POST; nil for GET) and an Origin header
// (none when ""), and returns the status and body.
func httpsDo(t *testing.T, certs testCerts, name, addr, path, origin string, form url.Values) (int, string) {
	t.Helper()
	pem, err := os.ReadFile(certs.file("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	pair, err := tls.LoadX509KeyPair(certs.file(name+".crt"), certs.file(name+".key"))
	if err != nil {
		t.Fatal(err)
	}
	method, body := "GET", io.Reader(nil)
	if form != nil {
		method, body = "POST", strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "https://"+addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	c := http.Client{Timeout: 30 * time.Second, Jar: consoleJar,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// firstColumn is the first cell of every row of a table but the header.
func firstColumn(t *testing.T, page, table string) []string {
	t.Helper()
	var out []string
	for _, row := range tableRows(t, page, table)[1:] {
		if len(row) > 0 {
			out = append(out, row[0])
		}
	}
	return out
}

// On a broker with TLS the console serves every principal with a
// certificate, and the broker's ACLs decide what each one sees and does:
// alice, allowed to describe and read one topic and one group, sees only
// those (and of the group only the offsets of her topic), cannot open the others' pages or messages, and cannot create or
// delete topics; mallory, with no ACL, sees nothing; a form token of one
// visitor is refused for another. The super user sees and does everything.
func TestConsoleUnderTLSAppliesACLs(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1", "--console-write"}, certs.brokerFlags(1)...)...)
	web := httpAddr(t, b)
	admin := certs.as("user-admin", "ca")
	must := func(stdin string, args ...string) {
		t.Helper()
		if out, errOut, code, _ := cli(t, b, stdin, admin, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
		}
	}
	for _, topic := range []string{"open", "secret"} {
		must("", "topic", "create", topic)
		must("a\nb\nc\n", "produce", topic)
		must("", "consume", topic, "--group", "g-"+topic, "--from-beginning", "--max", "3")
	}
	// g-open also has offsets of secret, which alice may not describe.
	must("", "consume", "secret", "--group", "g-open", "--from-beginning", "--max", "3")
	must("", "acl", "add", "--allow-principal", "User:alice", "--operation", "describe,read", "--topic", "open")
	must("", "acl", "add", "--allow-principal", "User:alice", "--operation", "describe,read", "--group", "g-open")

	get := func(who, path string) (int, string) {
		t.Helper()
		return httpsDo(t, certs, who, web, path, "", nil)
	}
	eventually(t, 30*time.Second, func() string {
		if code, body := get("user-alice", "/topics/open"); code != http.StatusOK {
			return fmt.Sprintf("alice's topic page: %d %s", code, body)
		}
		return ""
	})
	_, page := get("user-admin", "/topics")
	if got := fmt.Sprint(firstColumn(t, page, "topic-table")); !strings.Contains(got, "open") || !strings.Contains(got, "secret") {
		t.Errorf("the super user's topics: %s", got)
	}
	_, page = get("user-alice", "/topics")
	if got := firstColumn(t, page, "topic-table"); len(got) != 1 || got[0] != "open" {
		t.Errorf("alice's topics: %v; want [open]", got)
	}
	if !strings.Contains(page, "User:alice") {
		t.Errorf("the page does not name its visitor")
	}
	_, page = get("user-alice", "/")
	if !strings.Contains(page, `<b id="topics">1</b>`) || !strings.Contains(page, `<b id="online">1</b>`) {
		t.Errorf("alice's overview counts more than her one topic of one partition")
	}
	_, page = get("user-alice", "/groups")
	if got := firstColumn(t, page, "group-table"); len(got) != 1 || got[0] != "g-open" {
		t.Errorf("alice's groups: %v; want [g-open]", got)
	}
	_, page = get("user-mallory", "/topics")
	if got := firstColumn(t, page, "topic-table"); len(got) != 0 {
		t.Errorf("mallory, with no ACL, sees topics %v", got)
	}
	for _, path := range []string{"/topics/secret", "/topics/nonexistent", "/groups/g-secret", "/messages?topic=secret&partition=0&from=start"} {
		if code, body := get("user-alice", path); code != http.StatusForbidden || !strings.Contains(body, "User:alice") {
			t.Errorf("alice GET %s: %d %q; want 403 naming her", path, code, body)
		}
	}
	code, page := get("user-alice", "/messages?topic=open&partition=0&from=start")
	if rows := tableRows(t, page, "message-table")[1:]; code != http.StatusOK || len(rows) != 3 {
		t.Errorf("alice reads open: %d, %d records", code, len(rows))
	}
	_, page = get("user-admin", "/groups/g-open")
	if rows := tableRows(t, page, "offset-table")[1:]; len(rows) != 2 {
		t.Errorf("the super user's view of g-open: offsets %v", rows)
	}
	code, page = get("user-alice", "/groups/g-open")
	if rows := tableRows(t, page, "offset-table")[1:]; code != http.StatusOK || len(rows) != 1 || rows[0][0] != "open" {
		t.Errorf("alice's group page: %d, offsets %v", code, rows)
	}

	// Actions: the form token is the visitor's own, and ACLs apply.
	token := func(who string) string {
		t.Helper()
		_, page := get(who, "/topics")
		m := csrfField.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no form token on %s's topics page", who)
		}
		return m[1]
	}
	self := "https://" + web
	aliceToken := token("user-alice")
	create := url.Values{"csrf": {aliceToken}, "name": {"alices"}, "partitions": {"1"}, "replication_factor": {"1"}}
	if code, body := httpsDo(t, certs, "user-alice", web, "/topics", self, create); code != http.StatusForbidden || !strings.Contains(body, "CREATE") {
		t.Errorf("alice creates a topic: %d %q", code, body)
	}
	del := url.Values{"csrf": {aliceToken}, "confirm": {"open"}}
	if code, _ := httpsDo(t, certs, "user-alice", web, "/topics/open/delete", self, del); code != http.StatusForbidden {
		t.Errorf("alice deletes open: %d", code)
	}
	reset := url.Values{"csrf": {aliceToken}, "topic": {"secret"}, "to": {"earliest"}}
	if code, _ := httpsDo(t, certs, "user-alice", web, "/groups/g-open/reset-offsets", self, reset); code != http.StatusForbidden {
		t.Errorf("alice resets g-open on secret: %d", code)
	}
	create.Set("name", "mallorys")
	if code, body := httpsDo(t, certs, "user-mallory", web, "/topics", self, create); code != http.StatusForbidden || !strings.Contains(body, "token") {
		t.Errorf("mallory with alice's token: %d %q", code, body)
	}
	reset.Set("topic", "open")
	if code, body := httpsDo(t, certs, "user-alice", web, "/groups/g-open/reset-offsets", self, reset); code != http.StatusSeeOther {
		t.Errorf("alice resets g-open on open: %d %q", code, body)
	}
	create.Set("csrf", token("user-admin"))
	create.Set("name", "admins")
	if code, body := httpsDo(t, certs, "user-admin", web, "/topics", self, create); code != http.StatusSeeOther {
		t.Errorf("the super user creates a topic: %d %q", code, body)
	}
	out, _, _, _ := cli(t, b, "", admin, "topic", "list")
	if strings.Contains(out, "alices") || strings.Contains(out, "mallorys") || !strings.Contains(out, "admins") || !strings.Contains(out, "open") {
		t.Errorf("topics after the actions:\n%s", out)
	}
}
