package sourcetree_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// goimports (golang.org/x/tools/imports, which golangci-lint's goimports formatter calls) decides
// which imports a file lacks from that file alone plus a quick parse of its directory:
//
//   - a reference is the X of a selector X.Sel whose Sel is exported and whose X the parser could
//     not resolve within the file;
//   - a reference that is neither an import of the file nor a "global" is missing, and goimports
//     looks for a package named X to import: the standard library, the siblings' imports, then
//     every module in the module cache;
//   - the globals are taken from the other files of the same package in the directory (test
//     files only when the file is one), and only the FIRST name of each var or const spec
//     counts: in `var local, remote *Cluster` the second is unknown to it, and so are types
//     (`Config.Validate`) and functions.
//
// So a package-level name declared in one file and used as X.Sel in another, where goimports
// does not see the declaration, is formatted one way on a machine whose module cache holds no
// package of that name and another way where one does (the test variable `aws` and
// github.com/aws/aws-sdk-go-v2/aws): the same commit passes lint on one machine and fails on
// the next. This test finds every such name, whatever the module cache holds.
func TestNoPackageLevelNameThatGoimportsWouldImportFromTheModuleCache(t *testing.T) {
	findings, err := invisibleToGoimports(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, finding := range findings {
		t.Error(finding)
	}
}

// The check itself, on a package written for it: it finds the second name of a var spec and a
// type used as X.Sel in another file, and nothing where goimports sees the declaration, where
// the name is the file's own, or where Sel is unexported.
func TestTheGoimportsCheckFindsWhatGoimportsCannotSee(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"decl.go":       "package p\n\nvar first, second struct{ F, f int }\n\nvar own struct{ F int }\n\ntype T struct{}\n\nfunc (T) M() {}\n",
		"use.go":        "package p\n\nvar _ = second.F + first.F + own.F\n\nvar _ = T.M\n",
		"local.go":      "package p\n\nvar third, fourth struct{ F int }\n\nvar _ = fourth.F\n",
		"unexported.go": "package p\n\nvar _ = second.f\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	findings, err := invisibleToGoimports(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		got = append(got, f[:strings.Index(f, " (")])
	}
	want := []string{"use.go:3:9", "use.go:5:9"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s\nall: %q", diff, findings)
	}
}

// invisibleToGoimports lists, sorted, every file and name of the Go sources under root that
// goimports would try to import although a sibling declares it.
func invisibleToGoimports(root string) ([]string, error) {
	dirs, err := goFilesByDirectory(root)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("found no Go files under %s", root)
	}
	var findings []string
	for _, files := range dirs {
		for _, f := range files {
			findings = append(findings, invisibleReferences(root, f, files)...)
		}
	}
	sort.Strings(findings)
	return findings, nil
}

// A sourceFile is one parsed Go file.
type sourceFile struct {
	path string
	fset *token.FileSet
	file *ast.File
}

func (f sourceFile) isTest() bool { return strings.HasSuffix(f.path, "_test.go") }

// invisibleReferences lists the references of f that goimports would try to import although a
// sibling declares them.
func invisibleReferences(root string, f sourceFile, dir []sourceFile) []string {
	seen, declared := map[string]bool{}, map[string]string{}
	for _, sibling := range dir {
		if sibling.path == f.path || sibling.file.Name.Name != f.file.Name.Name || (sibling.isTest() && !f.isTest()) {
			continue
		}
		addGoimportsGlobals(sibling.file, seen)
		addDeclarations(root, sibling, declared)
	}
	uses := map[string][]*ast.Ident{}
	for _, ref := range references(f.file) {
		if _, ok := declared[ref.Name]; ok && !seen[ref.Name] {
			uses[ref.Name] = append(uses[ref.Name], ref)
		}
	}
	var out []string
	for name, refs := range uses {
		out = append(out, fmt.Sprintf("%s (%d uses in the file): %s is declared at %s, where goimports "+
			"does not see it, so it would import a package named %q from the module cache when one is there; "+
			"give it a var spec of its own (`var %s T`): goimports sees only the first name of a sibling's var "+
			"or const spec, and no types or functions",
			rel(root, f.fset.Position(refs[0].Pos())), len(refs), name, declared[name], name, name))
	}
	return out
}

// references returns the X of every selector X.Sel in f whose X the parser did not resolve in
// the file and whose Sel is exported: what goimports' collectReferences collects.
func references(f *ast.File) []*ast.Ident {
	var refs []*ast.Ident
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		// Obj (deprecated in go/ast) is the in-file resolution goimports relies on.
		if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && ast.IsExported(sel.Sel.Name) {
			refs = append(refs, x)
		}
		return true
	})
	return refs
}

// addGoimportsGlobals adds what goimports' addGlobals takes from a sibling: the first name of
// each package-level var and const spec.
func addGoimportsGlobals(f *ast.File, globals map[string]bool) {
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gen.Specs {
			if value, ok := spec.(*ast.ValueSpec); ok {
				globals[value.Names[0].Name] = true
			}
		}
	}
}

// addDeclarations adds every package-level name f declares, with where.
func addDeclarations(root string, f sourceFile, declared map[string]string) {
	add := func(id *ast.Ident) { declared[id.Name] = rel(root, f.fset.Position(id.Pos())) }
	for _, decl := range f.file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				add(d.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, name := range s.Names {
						add(name)
					}
				case *ast.TypeSpec:
					add(s.Name)
				}
			}
		}
	}
}

// goFilesByDirectory parses every Go file that golangci-lint lints, grouped by directory: not
// under testdata, third_party or vendor, nor in a directory whose name starts with "." or "_".
func goFilesByDirectory(root string) (map[string][]sourceFile, error) {
	dirs := map[string][]sourceFile{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "third_party" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		// The mode goimports parses with; without SkipObjectResolution, so identifiers are
		// resolved within the file as it resolves them.
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.AllErrors)
		if err != nil {
			return err
		}
		dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], sourceFile{path: path, fset: fset, file: f})
		return nil
	})
	return dirs, err
}

// moduleRoot is the directory of the go.mod above the test's working directory.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func rel(root string, pos token.Position) string {
	if r, err := filepath.Rel(root, pos.Filename); err == nil {
		pos.Filename = r
	}
	return pos.String()
}
