package fleet

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The library owns no clock, no goroutines, no global randomness and no
// package-level state: the host supplies `now`, serialises calls and passes
// seeded generators in. TestPurity keeps it so by scanning the non-test
// sources of every package under the repository root except examples/,
// testdata/ and hosts/ (the hosts run on real systems: they read the
// clock and run goroutines), the modules of importer/ and metrics/prom
// included.
//
// The scan is syntactic (go/parser and go/ast, no type checking), so it is
// fast and needs no build. Package names are resolved through each file's
// imports, renamed imports included; an identifier that a local
// declaration shadows (a parameter named rand, say) is not a package.

// readsClock says whether a function of package time reads the wall clock.
// time.Until is time.Now in disguise.
func readsClock(name string) bool { return name == "Now" || name == "Since" || name == "Until" }

// randAllowed says whether a name of math/rand or math/rand/v2 leaves the
// global generator alone: constructors of explicit generators and types.
func randAllowed(name string) bool {
	switch name {
	case "New", "NewPCG", "NewChaCha8", "NewSource", "NewZipf",
		"Rand", "Source", "Source64", "PCG", "ChaCha8", "Zipf":
		return true
	}
	return false
}

// impurity is one finding, positioned as file:line.
type impurity struct {
	Pos  token.Position
	What string
}

func (i impurity) String() string {
	return fmt.Sprintf("%s:%d: %s", i.Pos.Filename, i.Pos.Line, i.What)
}

// checkPurity parses one file's source and returns what it finds, in
// source order.
func checkPurity(fset *token.FileSet, filename string, src any) ([]impurity, error) {
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var found []impurity
	report := func(n ast.Node, format string, args ...any) {
		found = append(found, impurity{Pos: fset.Position(n.Pos()), What: fmt.Sprintf(format, args...)})
	}

	// Local name -> import path, for the packages the rules are about.
	imports := map[string]string{}
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, err
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if spec.Name != nil {
			name = spec.Name.Name
		}
		switch path {
		case "time", "math/rand", "math/rand/v2", "errors", "fmt", "embed":
		default:
			continue
		}
		if name == "." && (path == "time" || path == "math/rand" || path == "math/rand/v2") {
			// A dot import hides every use from this scan.
			report(spec, "dot import of %q", path)
			continue
		}
		imports[name] = path
	}
	// pkgOf says which watched package a selector's left side names, if any.
	// Identifiers bound by a declaration in this file carry an Obj; package
	// names never do.
	pkgOf := func(x ast.Expr) string {
		id, ok := x.(*ast.Ident)
		if !ok || id.Obj != nil {
			return ""
		}
		return imports[id.Name]
	}

	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if embedded(gd.Doc) || embedded(vs.Doc) {
					checkEmbed(vs, pkgOf, report)
					continue
				}
				checkVar(vs, pkgOf, report)
			}
		}
	}

	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "go statement")
		case *ast.SelectorExpr:
			switch pkgOf(n.X) {
			case "time":
				if readsClock(n.Sel.Name) {
					report(n, "reads the clock: time.%s", n.Sel.Name)
				}
			case "math/rand", "math/rand/v2":
				if !randAllowed(n.Sel.Name) {
					report(n, "global random generator: %s.%s", pkgOf(n.X), n.Sel.Name)
				}
			}
		}
		return true
	})
	slices.SortStableFunc(found, func(a, b impurity) int { return a.Pos.Offset - b.Pos.Offset })
	return found, nil
}

// checkVar accepts package-level vars that hold no mutable state: error
// sentinels (var ErrX = errors.New(...) or fmt.Errorf(...)) and blank
// assertions (var _ Iface = ...). Anything else is state shared by every
// Scheduler in the process, which the design forbids.
func checkVar(vs *ast.ValueSpec, pkgOf func(ast.Expr) string, report func(ast.Node, string, ...any)) {
	for i, name := range vs.Names {
		if name.Name == "_" {
			continue
		}
		if strings.HasPrefix(name.Name, "Err") && i < len(vs.Values) && len(vs.Values) == len(vs.Names) {
			if call, ok := vs.Values[i].(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					p := pkgOf(sel.X)
					if (p == "errors" && sel.Sel.Name == "New") || (p == "fmt" && sel.Sel.Name == "Errorf") {
						continue
					}
				}
			}
		}
		report(name, "package-level var %s", name.Name)
	}
}

// embedded says whether a declaration carries a //go:embed directive.
func embedded(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if strings.HasPrefix(c.Text, "//go:embed ") {
			return true
		}
	}
	return false
}

// checkEmbed accepts embedded files held as a string or an embed.FS, both
// read-only; an embedded []byte can be written to, so it is state.
func checkEmbed(vs *ast.ValueSpec, pkgOf func(ast.Expr) string, report func(ast.Node, string, ...any)) {
	readOnly := false
	switch t := vs.Type.(type) {
	case *ast.Ident:
		readOnly = t.Name == "string"
	case *ast.SelectorExpr:
		readOnly = pkgOf(t.X) == "embed" && t.Sel.Name == "FS"
	}
	if !readOnly {
		for _, name := range vs.Names {
			report(name, "package-level var %s: embed as a string or embed.FS", name.Name)
		}
	}
}

// packageDirs lists the directories under root that the rules cover.
func packageDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
			name == "testdata" || name == "vendor" || name == "examples" ||
			path == filepath.Join(root, "hosts")) {
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	require.NoError(t, err)
	return dirs
}

func TestPurity(t *testing.T) {
	fset := token.NewFileSet()
	var all []impurity
	files := 0
	for _, dir := range packageDirs(t, ".") {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			found, err := checkPurity(fset, filepath.Join(dir, name), nil)
			require.NoError(t, err)
			all = append(all, found...)
			files++
		}
	}
	require.NotZero(t, files, "no sources scanned")
	for _, f := range all {
		t.Errorf("%s", f)
	}
}

func TestPurityChecker(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // findings as "line: what"
	}{
		{
			name: "time.Now",
			src:  "import \"time\"\nfunc f() time.Time { return time.Now() }",
			want: []string{"4: reads the clock: time.Now"},
		},
		{
			name: "time.Since and time.Until",
			src:  "import \"time\"\nfunc f(t time.Time) time.Duration {\nreturn time.Since(t) + time.Until(t)\n}",
			want: []string{"5: reads the clock: time.Since", "5: reads the clock: time.Until"},
		},
		{
			name: "renamed time import",
			src:  "import clock \"time\"\nfunc f() clock.Time { return clock.Now() }",
			want: []string{"4: reads the clock: time.Now"},
		},
		{
			name: "time.Now as a value",
			src:  "import \"time\"\ntype S struct{ now func() time.Time }\nfunc f() S { return S{now: time.Now} }",
			want: []string{"5: reads the clock: time.Now"},
		},
		{
			name: "time passed in is fine",
			src:  "import \"time\"\nfunc f(now time.Time, d time.Duration) time.Time { return now.Add(d * time.Second) }",
		},
		{
			name: "a method named Now is not the clock",
			src:  "type C struct{}\nfunc (C) Now() int { return 0 }\nfunc f(c C) int { return c.Now() }",
		},
		{
			name: "a local named time is not the package",
			src:  "import \"time\"\ntype T struct{}\nfunc (T) Now() time.Time { return time.Time{} }\nfunc f(time T) { time.Now() }",
		},
		{
			name: "go statement",
			src:  "func f() {\n\tgo func() {}()\n}",
			want: []string{"4: go statement"},
		},
		{
			name: "global math/rand",
			src:  "import \"math/rand\"\nfunc f(s []int) int {\nrand.Shuffle(len(s), func(i, j int) {})\nreturn rand.Intn(3)\n}",
			want: []string{"5: global random generator: math/rand.Shuffle", "6: global random generator: math/rand.Intn"},
		},
		{
			name: "global math/rand/v2",
			src:  "import \"math/rand/v2\"\nfunc f() float64 { return rand.Float64() + float64(rand.N(3)) }",
			want: []string{"4: global random generator: math/rand/v2.Float64", "4: global random generator: math/rand/v2.N"},
		},
		{
			name: "renamed math/rand/v2",
			src:  "import r2 \"math/rand/v2\"\nfunc f() int { return r2.IntN(3) }",
			want: []string{"4: global random generator: math/rand/v2.IntN"},
		},
		{
			name: "global generator as a value",
			src:  "import \"math/rand/v2\"\nfunc f() func(int) int { return rand.IntN }",
			want: []string{"4: global random generator: math/rand/v2.IntN"},
		},
		{
			name: "seeded math/rand/v2 generator is fine",
			src:  "import \"math/rand/v2\"\nfunc f(seed uint64) int {\nr := rand.New(rand.NewPCG(seed, seed))\n_ = rand.New(rand.NewChaCha8([32]byte{}))\n_ = rand.NewZipf(r, 2, 1, 10)\nreturn r.IntN(3)\n}",
		},
		{
			name: "seeded math/rand generator is fine",
			src:  "import \"math/rand\"\nfunc f(seed int64) int {\nr := rand.New(rand.NewSource(seed))\nreturn r.Intn(3)\n}",
		},
		{
			name: "generator passed in is fine",
			src:  "import \"math/rand/v2\"\nfunc f(rng *rand.Rand, src rand.Source) int { return rng.IntN(3) }",
		},
		{
			name: "parameter named rand shadows the package",
			src:  "import \"math/rand/v2\"\nfunc f(rand *rand.Rand) int { return rand.IntN(3) }",
		},
		{
			name: "dot import",
			src:  "import . \"time\"\nfunc f() Time { return Now() }",
			want: []string{"3: dot import of \"time\""},
		},
		{
			name: "mutable package-level vars",
			src:  "var cache = map[string]int{}\nvar (\n\tcount int\n\tnames = []string{\"a\"}\n)",
			want: []string{"3: package-level var cache", "5: package-level var count", "6: package-level var names"},
		},
		{
			name: "error-named var that is not a sentinel",
			src:  "var ErrCount int\nvar ErrTable = map[int]error{}",
			want: []string{"3: package-level var ErrCount", "4: package-level var ErrTable"},
		},
		{
			name: "sentinels and blank assertions are fine",
			src:  "import (\n\"errors\"\n\"fmt\"\n)\ntype I interface{ M() }\ntype T struct{}\nfunc (T) M() {}\nvar ErrA = errors.New(\"x: a\")\nvar (\n\tErrB = errors.New(\"x: b\")\n\tErrC = fmt.Errorf(\"%w: c\", ErrB)\n)\nvar _ I = T{}\nvar _ = fmt.Sprint",
		},
		{
			name: "embedded string and embed.FS are fine",
			src:  "import \"embed\"\n\n//go:embed a.csv\nvar table string\n\n//go:embed testdata\nvar files embed.FS",
		},
		{
			name: "embedded bytes are state",
			src:  "import _ \"embed\"\n\n//go:embed a.csv\nvar table []byte",
			want: []string{"6: package-level var table: embed as a string or embed.FS"},
		},
		{
			name: "a plain comment is not an embed directive",
			src:  "// go:embed a.csv\nvar table string",
			want: []string{"4: package-level var table"},
		},
		{
			name: "constants and locals are fine",
			src:  "const Limit = 3\nfunc f() int { var n = Limit; return n }",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			found, err := checkPurity(fset, "snippet.go", "package p\n\n"+tt.src+"\n")
			require.NoError(t, err)
			var got []string
			for _, f := range found {
				assert.Equal(t, "snippet.go", f.Pos.Filename)
				got = append(got, fmt.Sprintf("%d: %s", f.Pos.Line, f.What))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPurityCheckerRefusesBrokenSource(t *testing.T) {
	_, err := checkPurity(token.NewFileSet(), "broken.go", "package p\nfunc {")
	require.Error(t, err)
}
