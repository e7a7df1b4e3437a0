package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "samsa", Version: "v0.0.0-20261201000000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	clean := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "samsa", Version: "(devel)"},
		Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba"}, {Key: "vcs.modified", Value: "false"}},
	}
	tests := []struct {
		name            string
		version, commit string
		bi              *debug.BuildInfo
		want            BuildVersion
	}{
		{"link-time values win", "v1.2.0", "abc123", stamped,
			BuildVersion{"v1.2.0", "abc123", "go1.99.1"}},
		{"build info when not linked in", "", "", stamped,
			BuildVersion{"v0.0.0-20261201000000-0123456789ab+dirty", "0123456789abcdef0123456789abcdef01234567-dirty", "go1.99.1"}},
		{"devel module version, clean tree", "", "", clean,
			BuildVersion{"devel", "fedcba", "go1.99.1"}},
		{"only the version linked in", "v1.2.0", "", clean,
			BuildVersion{"v1.2.0", "fedcba", "go1.99.1"}},
		{"no build info", "", "", nil,
			BuildVersion{"devel", "unknown", runtime.Version()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolveVersion(tt.version, tt.commit, tt.bi); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVersionCommandAndFlagPrintTheSame(t *testing.T) {
	cmd := mustRun(t, "", "version")
	flag := mustRun(t, "", "--version")
	if cmd.stdout != flag.stdout {
		t.Errorf("samsa version printed %q, samsa --version %q", cmd.stdout, flag.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(cmd.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "samsa ") ||
		!strings.HasPrefix(lines[1], "commit: ") || !strings.HasPrefix(lines[2], "go:     go") {
		t.Fatalf("samsa version printed %q; want samsa <version>, commit: and go: lines", cmd.stdout)
	}
	if want := buildVersion().String(); cmd.stdout != want {
		t.Errorf("printed %q, want %q", cmd.stdout, want)
	}
	if r := runCLI(t, "", "version", "extra"); r.code != ExitMisuse {
		t.Errorf("samsa version extra: exit %d, want %d", r.code, ExitMisuse)
	}
}
