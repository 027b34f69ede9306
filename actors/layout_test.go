package actors

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The protocol logic is plain Go: these packages import neither protoactor,
// nor storage, nor consul, nor the network.
func TestPurePackagesDoNoIO(t *testing.T) {
	forbidden := []string{"github.com/asynkron/protoactor-go", "github.com/sluicemq/sluice/storage",
		"github.com/hashicorp/consul", "github.com/sluicemq/sluice/cluster", "net", "os", "google.golang.org/grpc"}
	for _, dir := range []string{"replication", "replica", "election", "placement", "groups", "consumergroup", "producerstate", "../acl"} {
		for f, path := range importsOf(t, dir) {
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
	}
}

// importsOf yields each import of the non-test files of dir, with its file.
func importsOf(t *testing.T, dir string) func(yield func(file, path string) bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no files (%v)", dir, err)
	}
	return func(yield func(file, path string) bool) {
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				if !yield(f, strings.Trim(imp.Path.Value, `"`)) {
					return
				}
			}
		}
	}
}

// The parts beside the actors keep to their jobs: storage knows nothing of
// actors, the cluster or the network; the Kafka listener reaches the broker
// only through its Broker interface (no actors, transport or partition
// logs); and what only reads metadata (the metrics, the console) does not
// pull in a Consul client. Checked on everything each package depends on,
// not only its own imports. A name ending in "/..." forbids its
// subpackages too.
func TestPartsKeepToTheirJobs(t *testing.T) {
	const mod = "github.com/sluicemq/sluice/"
	const consul = "github.com/hashicorp/consul/..."
	for _, tc := range []struct {
		pkg       string
		forbidden []string
	}{
		{"storage/...", []string{"github.com/asynkron/protoactor-go/...", mod + "actors/...", mod + "cluster/...",
			mod + "transport/...", mod + "messages", consul, "google.golang.org/grpc/...", "net"}},
		{"kafka", []string{mod + "actors/...", mod + "transport/...", mod + "storage", mod + "cluster/consul", consul}},
		{"metrics", []string{consul, mod + "cluster/consul", mod + "storage", mod + "transport/..."}},
		{"cluster", []string{consul, "github.com/asynkron/protoactor-go/...", mod + "actors/...", mod + "storage"}},
		{"console", []string{consul, mod + "cluster/consul", mod + "storage", mod + "actors/..."}},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../"+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", tc.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, bad := range tc.forbidden {
				root, subs := strings.CutSuffix(bad, "/...")
				if dep == root || subs && strings.HasPrefix(dep, root+"/") {
					t.Errorf("%s depends on %s", tc.pkg, dep)
				}
			}
		}
	}
}

// The partition actor touches no file itself: its directory's files are
// storage/replicadir's and its log storage's, and their calls that rewrite
// files run beside the actor (partition's TestLogRewritesRunBesideTheActor).
func TestPartitionDoesNoFileIO(t *testing.T) {
	for f, path := range importsOf(t, "partition") {
		switch path {
		case "os", "io/fs", "path/filepath", "syscall", "github.com/sluicemq/sluice/storage/datadir",
			"github.com/sluicemq/sluice/storage/atomicfile":
			t.Errorf("%s imports %s", f, path)
		}
	}
}
