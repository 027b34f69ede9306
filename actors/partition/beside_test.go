package partition

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The partition's disk calls that wait on the disk (fsync, close, rewrites
// of the log, file writes and renames) run only beside the actor: inside a
// goroutine the package starts, inside the work handed to besideLog, or
// in a function that is only ever called (or handed on) from such places.
// A call anywhere else would block the mailbox on the disk.
func TestDiskCallsRunBesideTheActor(t *testing.T) {
	// Calls of the log (on the receivers the package names logs by).
	logCalls := map[string]bool{"TruncateTo": true, "Reset": true, "DeleteBefore": true, "ApplyRetention": true,
		"Close": true, "Sync": true}
	logs := map[string]bool{"p.log": true, "t.log": true, "l": true}
	// Calls of the replica's directory and the storage package.
	dirCalls := map[string]bool{"Claim": true, "Create": true, "MoveLogAside": true, "WriteProducerSnapshot": true,
		"ReadProducerSnapshot": true, "RemoveProducerSnapshot": true}
	storageCalls := map[string]bool{"OpenWAL": true, "ReadCheckpoint": true, "WriteCheckpoint": true, "WriteCheckpointNoSync": true}

	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	type use struct {
		at     token.Pos
		beside bool
		in     string // the function the use is in
	}
	uses := map[string][]use{} // uses of the package's functions, by name
	type diskCall struct {
		at     token.Pos
		what   string
		beside bool
		in     string
	}
	var disk []diskCall
	funcs := map[string]bool{}
	var decls []*ast.FuncDecl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				funcs[fn.Name.Name] = true
				decls = append(decls, fn)
			}
		}
	}
	for _, fn := range decls {
		var beside []ast.Node // goroutines and besideLog's work in fn
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				beside = append(beside, n.Call)
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "besideLog" && len(n.Args) > 1 {
					beside = append(beside, n.Args[1])
				}
			}
			return true
		})
		isBeside := func(n ast.Node) bool {
			for _, b := range beside {
				if b.Pos() <= n.Pos() && n.End() <= b.End() {
					return true
				}
			}
			return false
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if funcs[n.Sel.Name] {
					uses[n.Sel.Name] = append(uses[n.Sel.Name], use{n.Pos(), isBeside(n), fn.Name.Name})
				}
			case *ast.Ident:
				// A package-level function (declared in this file or,
				// unresolved by the parser, in another), not a local of the
				// same name.
				if funcs[n.Name] && (n.Obj == nil || n.Obj.Kind == ast.Fun) {
					uses[n.Name] = append(uses[n.Name], use{n.Pos(), isBeside(n), fn.Name.Name})
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				recv, name := types.ExprString(sel.X), sel.Sel.Name
				if logCalls[name] && logs[recv] || dirCalls[name] || storageCalls[name] && recv == "storage" {
					disk = append(disk, diskCall{n.Pos(), recv + "." + name, isBeside(n), fn.Name.Name})
				}
			}
			return true
		})
	}
	// A function runs beside the actor when every use of it is beside or in
	// a function that runs beside it; entry points (no use) do not.
	besideFuncs := map[string]bool{}
	for name := range funcs {
		besideFuncs[name] = len(uses[name]) > 0
	}
	for changed := true; changed; {
		changed = false
		for name, ok := range besideFuncs {
			if !ok {
				continue
			}
			for _, u := range uses[name] {
				if !u.beside && !besideFuncs[u.in] && u.in != name {
					besideFuncs[name], changed = false, true
					break
				}
			}
		}
	}
	if len(disk) < 10 {
		t.Fatalf("found %d disk calls: the check looks for the wrong names", len(disk))
	}
	var wrong []string
	for _, c := range disk {
		if !c.beside && !besideFuncs[c.in] {
			wrong = append(wrong, fset.Position(c.at).String()+": "+c.what+" runs on the actor (in "+c.in+")")
		}
	}
	sort.Strings(wrong)
	for _, w := range wrong {
		t.Error(w)
	}
}
