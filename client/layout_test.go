package client

import (
	"os/exec"
	"strings"
	"testing"
)

// The client stands beside the broker's actors, not above them: nothing
// it compiles comes from actors/ (the transport and the ACL model it
// shares with the broker live in transport/ and acl/).
func TestClientDoesNotImportActors(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/sluicemq/sluice/actors") {
			t.Errorf("the client depends on %s", pkg)
		}
	}
}
