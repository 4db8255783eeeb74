package fleet

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A controller that imports the core gets this module's requirements in
// its module graph, and minimal version selection raises its own pins to
// them. So the core module requires nothing a Kubernetes controller keeps
// in lockstep or would not want: no k8s.io or sigs.k8s.io module and no
// Prometheus client. The importers and metrics/prom are modules of their
// own (see go.work).
func TestCoreModuleRequiresNoKubernetesOrPrometheus(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	forbidden := []string{"k8s.io/", "sigs.k8s.io/", "github.com/prometheus/"}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) < 2 {
			continue
		}
		for _, prefix := range forbidden {
			assert.False(t, strings.HasPrefix(f[0], prefix), "go.mod:%d requires %s", i+1, f[0])
		}
	}

	work, err := os.ReadFile("go.work")
	require.NoError(t, err)
	for _, dir := range []string{"./importer", "./metrics/prom"} {
		assert.Contains(t, string(work), "\t"+dir+"\n", "go.work uses %s", dir)
	}
}

// The modules install as dependencies: a consumer module outside the
// checkout requires each module of the workspace at the version the
// sub-modules require the core at, with no replace and no workspace,
// and builds every package of them. The modules of this repository come
// only from a module proxy the test writes from the checkout (the go
// command's file layout: list, .info, .mod, .zip); third-party modules
// come from the local module cache, which `go mod download` in each
// module of the checkout fills as building it would. The consumer's
// build reads files only (GOPROXY=file://..., GOSUMDB=off, the
// checkout's go.sum lines verifying what it takes from the cache) and
// unpacks into a module cache of its own, so the fake version never
// reaches the real cache.
func TestModulesInstallAsDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every module of the workspace as a dependency")
	}
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "the go command is needed on PATH")
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	mods := workspaceModules(t, root)
	require.GreaterOrEqual(t, len(mods), 4, "go.work uses the core and its three sub-modules at least")

	semverRelease := regexp.MustCompile(`^v\d+\.\d+\.\d+$`) // the form a tag takes
	version := ""
	for _, m := range mods[1:] {
		v := requiredVersion(t, filepath.Join(m.dir, "go.mod"), mods[0].path)
		require.True(t, semverRelease.MatchString(v), "%s requires the core at %s: want a version the repository can tag (vX.Y.Z)", m.path, v)
		if version == "" {
			version = v
		}
		require.Equal(t, version, v, "%s requires the core at %s, another module at %s", m.path, v, version)
	}

	run := func(dir string, env []string, args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		cmd := exec.Command(goCmd, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, append(os.Environ(), env...), &stdout, &stderr
		require.NoError(t, cmd.Run(), "go %s in %s:\n%s", strings.Join(args, " "), dir, stderr.String())
		return stdout.String()
	}
	cache := strings.TrimSpace(run(root, nil, "env", "GOMODCACHE"))
	for _, m := range mods[1:] {
		run(m.dir, []string{"GOWORK=off", "GOFLAGS=-mod=readonly"}, "mod", "download")
		// The consumer lists its whole module graph: the versions and
		// go.mod files of modules no package is built from must be in
		// the cache too (a fresh machine's cache has none of them).
		run(m.dir, []string{"GOWORK=off", "GOFLAGS=-mod=readonly"}, "list", "-m", "all")
	}

	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	for _, m := range mods {
		writeProxyModule(t, proxy, m, version)
	}
	consumer := filepath.Join(tmp, "consumer")
	require.NoError(t, os.MkdirAll(consumer, 0o755))
	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module example.com/consumer\n\ngo %s\n\nrequire (\n", goVersion(t, filepath.Join(root, "go.mod")))
	var sums []string
	for _, m := range mods {
		fmt.Fprintf(&gomod, "\t%s %s\n", m.path, version)
		b, err := os.ReadFile(filepath.Join(m.dir, "go.sum"))
		require.NoError(t, err)
		sums = append(sums, string(b))
	}
	gomod.WriteString(")\n")
	require.NoError(t, os.WriteFile(filepath.Join(consumer, "go.mod"), []byte(gomod.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(consumer, "go.sum"), []byte(strings.Join(sums, "")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(consumer, "main.go"), []byte(consumerMain), 0o644))

	modcache := filepath.Join(tmp, "modcache")
	env := []string{
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOSUMDB=off",
		"GONOSUMDB=" + mods[0].path, "GOPRIVATE=", "GONOPROXY=",
		"GOPROXY=" + fileURL(proxy) + "," + fileURL(filepath.Join(cache, "cache", "download")),
		"GOMODCACHE=" + modcache,
	}
	// The module cache's files are read-only; the go command removes them.
	t.Cleanup(func() {
		cmd := exec.Command(goCmd, "clean", "-modcache")
		cmd.Dir, cmd.Env = consumer, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	run(consumer, env, "build", "-trimpath", "-o", os.DevNull, ".")
	// Every package of every module resolves its imports and embedded
	// files from what the proxy served (the consumer's build above
	// compiled the libraries it imports).
	listed := run(consumer, env, "list", "-deps", "-e", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", mods[0].path+"/...")
	assert.Empty(t, strings.TrimSpace(listed), "packages of the modules that do not load as dependencies")
	out := run(consumer, env, "list", "-m", "-f", "{{.Path}} {{.Version}} {{if .Replace}}replaced{{end}}", "all")
	var ours []string
	for _, m := range mods {
		line := m.path + " " + version + " "
		assert.Contains(t, out, line+"\n", "the consumer's build list takes %s at %s, unreplaced", m.path, version)
		ours = append(ours, line)
	}
	t.Logf("a consumer outside the checkout built with, from a file proxy, no replace:\n%s", strings.Join(ours, "\n"))
}

// consumerMain uses a package of each library module.
const consumerMain = `package main

import (
	"fmt"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/metrics/prom"
)

var _ = kueue.Parse
var _ = prom.New

func main() {
	s, err := fleet.New(fleet.ReferenceConfig())
	fmt.Println(s != nil, err)
}
`

// workspaceModule is a module of go.work: its path and directory.
type workspaceModule struct{ path, dir string }

// workspaceModules lists the modules go.work uses, the core first.
func workspaceModules(t *testing.T, root string) []workspaceModule {
	t.Helper()
	work, err := os.ReadFile(filepath.Join(root, "go.work"))
	require.NoError(t, err)
	var mods []workspaceModule
	inUse := false
	for _, line := range strings.Split(string(work), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "use ("):
			inUse = true
			continue
		case inUse && line == ")":
			inUse = false
			continue
		case strings.HasPrefix(line, "use "):
			line = strings.TrimSpace(strings.TrimPrefix(line, "use "))
		case !inUse || line == "":
			continue
		}
		dir := filepath.Join(root, filepath.FromSlash(line))
		mods = append(mods, workspaceModule{path: modulePath(t, filepath.Join(dir, "go.mod")), dir: dir})
	}
	require.NotEmpty(t, mods, "go.work uses no module")
	require.Equal(t, root, mods[0].dir, "go.work lists the core first")
	return mods
}

func modFields(t *testing.T, gomod string) [][]string {
	t.Helper()
	b, err := os.ReadFile(gomod)
	require.NoError(t, err)
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		out = append(out, strings.Fields(line))
	}
	return out
}

func modulePath(t *testing.T, gomod string) string {
	for _, f := range modFields(t, gomod) {
		if len(f) == 2 && f[0] == "module" {
			return f[1]
		}
	}
	t.Fatalf("%s names no module", gomod)
	return ""
}

func goVersion(t *testing.T, gomod string) string {
	for _, f := range modFields(t, gomod) {
		if len(f) == 2 && f[0] == "go" {
			return f[1]
		}
	}
	t.Fatalf("%s has no go line", gomod)
	return ""
}

// requiredVersion is the version gomod requires module at.
func requiredVersion(t *testing.T, gomod, module string) string {
	for _, f := range modFields(t, gomod) {
		if len(f) > 0 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("%s does not require %s", gomod, module)
	return ""
}

func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

// escapePath escapes a module path as the proxy protocol does: each
// upper-case letter becomes '!' and its lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeProxyModule writes m at version into a file proxy: the module's
// files, without nested modules and version control, in a zip whose names
// start with path@version/.
func writeProxyModule(t *testing.T, proxy string, m workspaceModule, version string) {
	t.Helper()
	dir := filepath.Join(proxy, filepath.FromSlash(escapePath(m.path)), "@v")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	gomod, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "list"), []byte(version+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, version+".info"),
		[]byte(`{"Version":"`+version+`","Time":"2026-01-01T00:00:00Z"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, version+".mod"), gomod, 0o644))

	f, err := os.Create(filepath.Join(dir, version+".zip"))
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	prefix := m.path + "@" + version + "/"
	err = filepath.WalkDir(m.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == m.dir {
				return nil
			}
			if d.Name() == ".git" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !d.Type().IsRegular() || d.Name() == "go.work" || d.Name() == "go.work.sum" {
			return nil
		}
		rel, err := filepath.Rel(m.dir, path)
		if err != nil {
			return err
		}
		w, err := zw.Create(prefix + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
}
