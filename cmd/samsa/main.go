// Command samsa is a Kafka-compatible message broker and its command-line
// tools. All of the work happens in package cli.
package main

import (
	"os"

	"samsa/internal/cli"
)

func main() { os.Exit(cli.Main()) }
