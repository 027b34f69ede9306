package partition

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// The log's calls that rewrite files (truncation, reset, retention) run
// only beside the actor: in a function handed to besideLog or in a
// truncation's run. A call anywhere else would block the mailbox on the
// disk.
func TestLogRewritesRunBesideTheActor(t *testing.T) {
	rewrites := map[string]bool{"TruncateTo": true, "Reset": true, "DeleteBefore": true, "ApplyRetention": true}
	logs := map[string]bool{"p.log": true, "t.log": true, "l": true}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			besideFunc := fn.Name.Name == "run" && fn.Recv != nil && types.ExprString(fn.Recv.List[0].Type) == "*truncation"
			var beside []ast.Node // function literals handed to besideLog
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if sel.Sel.Name == "besideLog" && len(call.Args) > 1 {
					beside = append(beside, call.Args[1])
				}
				if !rewrites[sel.Sel.Name] || !logs[types.ExprString(sel.X)] {
					return true
				}
				found++
				inside := besideFunc
				for _, b := range beside {
					inside = inside || b.Pos() <= call.Pos() && call.End() <= b.End()
				}
				if !inside {
					t.Errorf("%s: %s.%s runs on the actor", fset.Position(call.Pos()), types.ExprString(sel.X), sel.Sel.Name)
				}
				return true
			})
		}
	}
	if found == 0 {
		t.Fatal("no rewrite of the log found: the check looks for the wrong names")
	}
}
