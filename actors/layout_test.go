package actors

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The protocol logic is plain Go: these packages import neither protoactor,
// nor storage, nor consul, nor the network.
func TestPurePackagesDoNoIO(t *testing.T) {
	forbidden := []string{"github.com/asynkron/protoactor-go", "github.com/sluicemq/sluice/storage",
		"github.com/hashicorp/consul", "github.com/sluicemq/sluice/cluster", "net", "os", "google.golang.org/grpc"}
	for _, dir := range []string{"replication", "replica", "election", "placement", "groups", "producerstate", "../acl"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				for _, bad := range forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s", f, path)
					}
				}
			}
		}
	}
}
