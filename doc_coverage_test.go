package fleet

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publicPackages are the directories of the packages a user imports: the
// core module's and those of the importer and metrics/prom modules.
// internal/, examples/ and hosts' commands are not API.
func publicPackages(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
			name == "internal" || name == "examples" || name == "cmd" || name == "docs") {
			return filepath.SkipDir
		}
		if m, _ := filepath.Glob(filepath.Join(path, "*.go")); len(m) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	require.NoError(t, err)
	return dirs
}

// undocumented lists the exported identifiers of one package's sources
// (tests excluded) that have no doc comment: functions, methods of
// exported types, types, constants, variables and the exported fields of
// exported structs. A trailing line comment counts. A field is also
// documented by the comment above the field just above it when no blank
// line parts them (a comment for a run of fields, as "the request: Level,
// Flavor, GPUs"), never by another field's trailing comment; a variable by its group's comment (a block of sentinel
// errors); a constant only by its own, so each value of an enumeration
// says what it means.
func undocumented(fset *token.FileSet, files map[string]*ast.File) []string {
	var out []string
	report := func(pos token.Pos, what string) {
		p := fset.Position(pos)
		out = append(out, filepath.ToSlash(p.Filename)+":"+itoa(p.Line)+": "+what)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, decl := range files[name].Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Doc != nil {
					continue
				}
				if d.Recv != nil {
					recv := receiverName(d.Recv)
					if !ast.IsExported(recv) {
						continue
					}
					report(d.Pos(), "method "+recv+"."+d.Name.Name)
					continue
				}
				report(d.Pos(), "func "+d.Name.Name)
			case *ast.GenDecl:
				if d.Tok == token.IMPORT {
					continue
				}
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if s.Doc == nil && d.Doc == nil {
							report(s.Pos(), "type "+s.Name.Name)
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							prevEnd, prevDoc := -1, false
							for _, f := range st.Fields.List {
								line := fset.Position(f.Pos()).Line
								group := f.Doc != nil || prevDoc && line == prevEnd+1
								prevEnd, prevDoc = fset.Position(f.End()).Line, group
								if group || f.Comment != nil {
									continue
								}
								for _, n := range f.Names {
									if n.IsExported() {
										report(n.Pos(), "field "+s.Name.Name+"."+n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						if s.Doc != nil || s.Comment != nil || d.Doc != nil && (d.Tok == token.VAR || len(d.Specs) == 1) {
							continue
						}
						for _, n := range s.Names {
							if n.IsExported() {
								report(n.Pos(), strings.ToLower(d.Tok.String())+" "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	return out
}

func receiverName(fl *ast.FieldList) string {
	if len(fl.List) == 0 {
		return ""
	}
	e := fl.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func parseSources(t *testing.T, fset *token.FileSet, dir string) map[string]*ast.File {
	t.Helper()
	files := map[string]*ast.File{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		require.NoError(t, err)
		files[path] = f
	}
	return files
}

// Every exported identifier of the public packages has a doc comment, so
// go doc answers for each; a new undocumented one fails here with its
// place.
func TestExportedIdentifiersDocumented(t *testing.T) {
	fset := token.NewFileSet()
	dirs := publicPackages(t)
	require.Contains(t, dirs, "quota")
	require.Contains(t, dirs, filepath.Join("importer", "kueue"))
	var missing []string
	for _, dir := range dirs {
		missing = append(missing, undocumented(fset, parseSources(t, fset, dir))...)
	}
	assert.Empty(t, missing, "exported identifiers without a doc comment: document them")
}

// The checker finds each kind of undocumented identifier and accepts each
// way of documenting one.
func TestUndocumentedFindsEachKind(t *testing.T) {
	src := `package p

// T is documented.
type T struct {
	A int // trailing
	// B and C are documented by one comment.
	B int
	C int

	D int
	E, F int
	g int
}

type U int

const (
	// X is documented.
	X U = iota
	Y
	Z // trailing
)

// Errors of p.
var (
	ErrA = 1
)

func (T) M()        {}
func (u *U) N()     {}
func (t T) m()      {}
func Exported()     {}
func unexported()   {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	require.NoError(t, err)
	got := undocumented(fset, map[string]*ast.File{"p.go": f})
	for i := range got {
		_, got[i], _ = strings.Cut(got[i], ": ")
	}
	assert.Equal(t, []string{"field T.D", "field T.E", "field T.F", "type U", "const Y", "method T.M", "method U.N", "func Exported"}, got)
}
