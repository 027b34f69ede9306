package client

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The README's Go examples type-check against this package: each block
// becomes a function (its type and method declarations stay at the top
// level) in a file that also declares what the prose around it assumes
// (ctx, handle). Unused variables and imports are fine in an example.
func TestReadmeExamplesCompile(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d Go blocks in the README", len(blocks))
	}
	var src strings.Builder
	src.WriteString(`package readme

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/server"
)

var ctx = context.Background()

func handle(*client.Record) {}

var _, _, _, _ = fmt.Sprint, log.Print, time.Now, actor.NewPID
var _ = messages.ErrorCode_NONE
var _, _ = actors.DefaultBrokerConfig, server.New
`)
	for i, b := range blocks {
		var decls, body []string
		inDecl := false
		for _, line := range strings.Split(b[1], "\n") {
			switch {
			case strings.HasPrefix(line, "import "):
				continue
			case strings.HasPrefix(line, "type ") || strings.HasPrefix(line, "func "):
				inDecl = !strings.HasSuffix(line, "}")
				decls = append(decls, line)
				continue
			case inDecl:
				decls = append(decls, line)
				inDecl = line != "}"
				continue
			}
			// "{ ... }" stands for code the reader writes.
			body = append(body, strings.ReplaceAll(line, "{ ... }", "{ panic(err) }"))
		}
		fmt.Fprintf(&src, "\n// README block %d\n%s\nfunc block%d() {\n%s\n}\n", i+1, strings.Join(decls, "\n"), i+1, strings.Join(body, "\n"))
	}

	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "readme.go", src.String(), 0)
	if err != nil {
		t.Fatalf("the README's examples do not parse: %v\n%s", err, src.String())
	}
	exports := exportData(t, file)
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if f, ok := exports[path]; ok {
			return os.Open(f)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	var errs []string
	conf := types.Config{Importer: imp, Error: func(err error) {
		if te, ok := err.(types.Error); ok && te.Soft {
			return // declared and not used, and the like
		}
		errs = append(errs, err.Error())
	}}
	_, _ = conf.Check("readme", fset, []*ast.File{file}, nil)
	if len(errs) > 0 {
		t.Fatalf("the README's Go examples do not compile:\n%s\n\nas checked:\n%s", strings.Join(errs, "\n"), src.String())
	}
}

// exportData builds the packages file imports and returns where the
// compiler's export data of each (and of their dependencies) is.
func exportData(t *testing.T, file *ast.File) map[string]string {
	t.Helper()
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export"}
	for _, imp := range file.Imports {
		args = append(args, strings.Trim(imp.Path.Value, `"`))
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	return exports
}
