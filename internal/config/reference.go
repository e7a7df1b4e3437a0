package config

import (
	"fmt"
	"strings"
)

// Reference renders every broker and topic config as a Markdown document:
// name, type, default and meaning. docs/configuration.md is this output.
func Reference() string {
	var b strings.Builder
	b.WriteString("# Configuration reference\n\n")
	b.WriteString("<!-- Generated from internal/config by `go test ./internal/config -update`; do not edit. -->\n\n")
	b.WriteString("samsa takes Kafka's config names. Set broker configs in a Kafka-style\n")
	b.WriteString("properties file or with `--override name=value`; overrides win over the\n")
	b.WriteString("file. Topic configs are set per topic (CreateTopics, AlterConfigs) and\n")
	b.WriteString("default to the broker config named in their row.\n\n")
	b.WriteString("Configs marked *accepted but inert* are taken so that existing Kafka files\n")
	b.WriteString("and tools work, and have no effect. Aliases: `broker.id` is `node.id`,\n")
	b.WriteString("`log.dir` is `log.dirs`.\n\n")

	brokerFor := make(map[string][]string)
	for _, d := range brokerDefs {
		if d.Topic != "" {
			brokerFor[d.Topic] = append(brokerFor[d.Topic], d.Name)
		}
	}

	b.WriteString("## Broker configs\n\n")
	b.WriteString("| Name | Type | Default | Dynamic | Meaning |\n|---|---|---|---|---|\n")
	for _, d := range brokerDefs {
		dyn := "yes"
		if d.ReadOnly {
			dyn = "no"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.Name, d.Type, defaultCell(d), dyn, escapeCell(d.Doc))
	}

	b.WriteString("\n## Topic configs\n\n")
	b.WriteString("| Name | Type | Default | Broker default | Meaning |\n|---|---|---|---|---|\n")
	for _, d := range topicDefs {
		bd := "-"
		if names := brokerFor[d.Name]; len(names) > 0 {
			bd = "`" + strings.Join(names, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.Name, d.Type, defaultCell(d), bd, escapeCell(d.Doc))
	}
	return b.String()
}

func defaultCell(d Def) string {
	switch {
	case d.Null:
		return "null"
	case d.Default == "":
		return `""`
	}
	return "`" + d.Default + "`"
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
