package sasl

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// secretCompare matches a variable-time comparison of something that
// names a secret: bytes.Equal anywhere, or == / != next to a password,
// proof, signature, key or digest.
var secretCompare = regexp.MustCompile(`bytes\.Equal\(|(?i)(passw|proof|sig|storedkey|serverkey|digest|want)\w*\s*[!=]=|[!=]=\s*\w*(passw|proof|sig|storedkey|serverkey|digest)`)

// Reference: TESTPLAN X-05: no == or bytes.Equal on secrets.
func TestNoVariableTimeSecretCompares(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if secretCompare.MatchString(code) {
				t.Errorf("%s:%d: variable-time compare of a secret: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
