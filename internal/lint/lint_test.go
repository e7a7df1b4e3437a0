package lint

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// allowed lists, for each samsa package, the samsa packages it may import,
// and nothing more than it does import (TestAllowedImportsAreUsed).
// docs/architecture.md gives the reason for every edge beyond its base
// layering. testutil and the e2e tests may import anything.
var allowed = map[string][]string{
	"cmd/samsa":          {"cli"},
	"cmd/samsa-dev":      {"cli"},
	"internal/cli":       {"node", "config", "cluster", "record", "txn", "sasl", "tlsconfig", "acl"},
	"internal/node":      {"server", "broker", "fetchsession", "cluster", "replica", "admin", "config", "storage", "vfs", "sasl", "tlsconfig", "quota", "console"},
	"internal/server":    {},
	"internal/broker":    {"cluster", "replica", "group", "txn", "record", "config", "server", "storage", "sasl", "acl", "quota", "fetchsession", "share"},
	"internal/group":     {"config", "coordrec"},
	"internal/txn":       {"record", "vfs"},
	"internal/replica":   {"storage", "record", "txn", "vfs"},
	"internal/cluster":   {},
	"internal/storage":   {"record", "vfs"},
	"internal/record":    {},
	"internal/vfs":       {},
	"internal/config":    {},
	"internal/admin":     {},
	"internal/console":   {},
	"internal/sasl":      {},
	"internal/acl":       {},
	"internal/quota":     {},
	"internal/tlsconfig": {},
	"internal/lint":      {},
	"internal/testutil":  nil, // anything

	// KIP-227 fetch sessions: the broker's cache and the follower's handler.
	"internal/fetchsession": {},
	// KIP-932 share groups: share-partition and membership state machines.
	"internal/share": {"coordrec"},
	// The field encoding of Kafka's coordinator records.
	"internal/coordrec": {},
}

// samsaImports returns, for each samsa package outside test/, the samsa
// packages its non-test files import, by the names the table allowed
// uses ("internal/" dropped from the imports).
func samsaImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "samsa/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := make(map[string]map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(fields[0], "samsa/")
		if strings.HasPrefix(pkg, "test/") {
			continue
		}
		deps := make(map[string]bool)
		for _, imp := range fields[1:] {
			if dep, ok := strings.CutPrefix(imp, "samsa/"); ok {
				deps[strings.TrimPrefix(dep, "internal/")] = true
			}
		}
		imports[pkg] = deps
	}
	return imports
}

// TestForbiddenImports fails on an import between samsa packages that the
// layering does not allow (non-test files only).
func TestForbiddenImports(t *testing.T) {
	for pkg, deps := range samsaImports(t) {
		allow, known := allowed[pkg]
		if !known {
			t.Errorf("package %s has no entry in the import rules; add one (and its reason to docs/architecture.md)", pkg)
			continue
		}
		if allow == nil && pkg == "internal/testutil" {
			continue
		}
		for dep := range deps {
			if !contains(allow, dep) {
				t.Errorf("%s imports %s, which the layering forbids", pkg, dep)
			}
		}
	}
}

// TestAllowedImportsAreUsed fails on an edge of allowed that the code does
// not use (and on an entry for a package that does not exist), so the
// table, and docs/architecture.md with it, says what the code does: an
// edge that is no longer needed must not stay allowed.
func TestAllowedImportsAreUsed(t *testing.T) {
	imports := samsaImports(t)
	for pkg, allow := range allowed {
		deps, ok := imports[pkg]
		if !ok {
			t.Errorf("the import rules name package %s, which does not exist", pkg)
			continue
		}
		for _, dep := range allow {
			if !deps[dep] {
				t.Errorf("the import rules allow %s -> %s, which the code does not use; remove it (and its reason in docs/architecture.md)", pkg, dep)
			}
		}
	}
}

// TestProductionBinaryDoesNotLinkKfake keeps franz-go's fake broker out
// of cmd/samsa: the commands that run it live in cmd/samsa-dev.
func TestProductionBinaryDoesNotLinkKfake(t *testing.T) {
	const kfake = "github.com/twmb/franz-go/pkg/kfake"
	deps := func(pkg string) []string {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	if contains(deps("./cmd/samsa"), kfake) {
		t.Errorf("cmd/samsa links %s; move the command that needs it to cmd/samsa-dev", kfake)
	}
	// The check above would pass vacuously if go list printed nothing useful.
	if !contains(deps("./cmd/samsa-dev"), kfake) {
		t.Errorf("cmd/samsa-dev does not link %s: is dev kfake still there?", kfake)
	}
}

// TestNodeDoesNotLinkTheCommandLine keeps the command line out of what
// tests start brokers with: internal/node (and testutil over it) must not
// depend on cobra or on internal/cli.
func TestNodeDoesNotLinkTheCommandLine(t *testing.T) {
	for _, pkg := range []string{"./internal/node", "./internal/testutil"} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if !contains(deps, "samsa/internal/config") {
			t.Fatalf("go list -deps %s does not list samsa/internal/config: is the check still meaningful?", pkg)
		}
		for _, d := range deps {
			if d == "samsa/internal/cli" || strings.HasPrefix(d, "github.com/spf13/cobra") {
				t.Errorf("%s depends on %s; assembly belongs in internal/node, the command line in internal/cli", pkg, d)
			}
		}
	}
}

var (
	rawAtomic = regexp.MustCompile(`atomic\.(Add|Load|Store|CompareAndSwap|Swap)(Int32|Int64|Uint32|Uint64|Uintptr|Pointer)\(`)
	vCause    = regexp.MustCompile(`fmt\.Errorf\([^)]*%v[^)]*\berr\)`)
)

// TestHouseRules checks every non-test Go file for raw atomics (use
// atomic.Int64 and friends) and for fmt.Errorf wrapping an err with %v
// (use %w so the cause survives).
func TestHouseRules(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && (info.Name() == ".git" || info.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if rawAtomic.MatchString(line) {
				t.Errorf("%s:%d: raw atomic call; use a typed atomic", path, i+1)
			}
			if vCause.MatchString(line) && !strings.Contains(line, "%w") {
				t.Errorf("%s:%d: fmt.Errorf with %%v for err; use %%w", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	prefixOnly = regexp.MustCompile(`fmt\.Errorf\("([a-z]+): %w"`)
	openPath   = regexp.MustCompile(`fmt\.Errorf\("[^"]*\bopen %[sqv]: %w"`)
)

// TestNoDoubledErrorPrefix catches wraps that repeat what the wrapped error
// already says, which reads as "cluster: cluster: ..." or "open X: open X:
// ...": a package putting another samsa package's prefix on that
// package's error (its errors already start with "<package>: "), and
// "open <path>: %w" around an open call's error (os and vfs name the path
// as "open <path>:" already).
func TestNoDoubledErrorPrefix(t *testing.T) {
	pkgs := make(map[string]bool)
	for p := range allowed {
		pkgs[filepath.Base(p)] = true
	}
	root := filepath.Join("..", "..")
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && (info.Name() == ".git" || info.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		own := filepath.Base(filepath.Dir(path))
		for i, line := range strings.Split(string(src), "\n") {
			if m := prefixOnly.FindStringSubmatch(line); m != nil && pkgs[m[1]] && m[1] != own {
				t.Errorf("%s:%d: %q wraps an error of package %s, which already starts with %q; say what was being done, or return it as is", path, i+1, m[0], m[1], m[1]+": ")
			}
			if openPath.MatchString(line) {
				t.Errorf("%s:%d: \"open %%s: %%w\" around an open error repeats its \"open <path>:\"", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var mdName = regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9_-]*\.md\b`)

// TestDocsCiteExistingFiles fails when the README or a page in docs/ names
// a Markdown file that the repository does not have.
func TestDocsCiteExistingFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range mdName.FindAllString(string(src), -1) {
			found := false
			for _, dir := range []string{root, filepath.Join(root, "docs"), filepath.Dir(p)} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					found = true
				}
			}
			if !found {
				t.Errorf("%s names %s, which the repository does not have", p, name)
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
