package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at link time by the builds that know them
// (scripts/build.sh, used by make build, make docker-image and
// scripts/docker-test.sh):
//
//	go build -ldflags '-X samsa/internal/cli.version=v1.2.0 -X samsa/internal/cli.commit=<sha>'
//
// Left empty (go run, go install, a plain go build), buildVersion falls
// back to what the Go toolchain stamped into the binary.
var (
	version string
	commit  string
)

// BuildVersion describes the running binary.
type BuildVersion struct {
	Version string // git describe, the module version, or "devel"
	Commit  string // the full commit hash, "-dirty" appended for a modified tree; "unknown" if not recorded
	Go      string // the Go version the binary was built with
}

// buildVersion returns the binary's version: the link-time values where
// set, else the module version and the vcs.revision and vcs.modified
// settings of runtime/debug.ReadBuildInfo.
func buildVersion() BuildVersion {
	return resolveVersion(version, commit, readBuildInfo())
}

// readBuildInfo is runtime/debug.ReadBuildInfo, nil when the binary has none.
func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// resolveVersion fills what the link-time version and commit leave empty
// from bi, which may be nil.
func resolveVersion(version, commit string, bi *debug.BuildInfo) BuildVersion {
	v := BuildVersion{Version: version, Commit: commit, Go: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		if v.Commit == "" {
			var rev string
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if rev != "" && modified {
				rev += "-dirty"
			}
			v.Commit = rev
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

// String is what samsa version and samsa --version print.
func (v BuildVersion) String() string {
	return fmt.Sprintf("samsa %s\ncommit: %s\ngo:     %s %s/%s\n", v.Version, v.Commit, v.Go, runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(e env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Long: `Print the version of samsa (git describe of the tree it was built from),
the commit, with "-dirty" when the tree had uncommitted changes, and the
Go version and platform it was built for. make build, make docker-image
and scripts/docker-test.sh set the version and commit at link time; a
binary built otherwise (go run, go install, go build) reports the module
version and the commit that the Go toolchain recorded, "devel" and
"unknown" when there are none. samsa --version prints the same.`,
		Example: `  samsa version
  docker run --rm --entrypoint /samsa samsa:local version`,
		Args: exactArgs(0),
		RunE: func(_ *cobra.Command, _ []string) error {
			fmt.Fprint(e.stdout, buildVersion())
			return nil
		},
	}
}
