// Command samsa-dev is samsa with the development commands that link a
// fake broker: every samsa command, plus `samsa-dev dev kfake`, franz-go's
// in-memory broker that scripts/perf-compare.sh runs beside samsa. The
// production binary, cmd/samsa, does not link kfake (internal/lint checks
// it); build this one only to benchmark or develop.
package main

import (
	"os"

	"samsa/internal/cli"
)

func main() { os.Exit(cli.Main(newKfakeCmd())) }
