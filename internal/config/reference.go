package config

import (
	"fmt"
	"sort"
	"strings"
)

// Reference renders every broker, topic and group config as a Markdown document:
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

	b.WriteString("\n## Group configs\n\n")
	b.WriteString("Group configs are set per group (`samsa group config set`, or\n")
	b.WriteString("`kafka-configs.sh --entity-type groups`: IncrementalAlterConfigs on\n")
	b.WriteString("resource type GROUP) and stored in etcd (`configs/groups/<group>`); every\n")
	b.WriteString("broker applies a change at once, without a restart. A group that does not\n")
	b.WriteString("set one takes the broker config in its row. A value outside the broker's\n")
	b.WriteString("bounds is refused with INVALID_CONFIG, and so is a session timeout that is\n")
	b.WriteString("not greater than its heartbeat interval. A stored value that a later\n")
	b.WriteString("change of the bounds leaves outside them counts as the nearest bound.\n")
	b.WriteString("The broker configs `share.auto.offset.reset` and `share.isolation.level`\n")
	b.WriteString("are the cluster's default of the group configs of the same name (Kafka\n")
	b.WriteString("has them as group configs only). Bounds show their defaults.\n\n")
	b.WriteString("| Name | Type | Broker default | Bounds | Meaning |\n|---|---|---|---|---|\n")
	for _, d := range groupDefs {
		bounds := "-"
		if d.Min != "" {
			lo, _ := LookupBroker(d.Min)
			hi, _ := LookupBroker(d.Max)
			bounds = fmt.Sprintf("`%s` (%s) to `%s` (%s)", d.Min, lo.Default, d.Max, hi.Default)
		}
		fallback := "`" + d.Fallback + "`"
		if d.Fallback == "" {
			fallback = "none: `" + d.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.Name, d.Type, fallback, bounds, escapeCell(d.Doc))
	}
	b.WriteString("\nKafka's `streams.*` group configs are unknown names in samsa (INVALID_CONFIG), and\n")
	b.WriteString("`share.auto.offset.reset` takes `latest` and `earliest`, not `by_duration:`.\n")
	b.WriteString("\n## Kafka server.properties\n\n")
	b.WriteString("A Kafka `server.properties`, from a KRaft or a ZooKeeper cluster, loads:\n\n")
	b.WriteString("- A listener named in `controller.listener.names` (KRaft's `CONTROLLER://`)\n")
	b.WriteString("  is not opened: samsa has no controller quorum, etcd holds the metadata.\n")
	b.WriteString("  The broker logs a warning naming it.\n")
	b.WriteString("- The Kafka configs below have no meaning in samsa. They are accepted,\n")
	b.WriteString("  not applied, and named in one warning.\n")
	b.WriteString("- The Kafka configs in the second table would change what the broker does,\n")
	b.WriteString("  and samsa does not implement them: a value other than the one listed is\n")
	b.WriteString("  refused, so that the broker never behaves unlike the file says.\n")
	b.WriteString("- Any other unknown name is refused; a topic config given at broker level\n")
	b.WriteString("  or a name within two edits of a broker config gets a suggestion\n")
	b.WriteString("  (`segment.bytes`: did you mean `log.segment.bytes`?).\n")
	b.WriteString("- Numbers are read as Kafka reads them (`Integer.parseInt`,\n")
	b.WriteString("  `Long.parseLong` after trimming blanks): a sign and digits, no unit.\n")
	b.WriteString("  Sizes are bytes; durations are in the unit the name ends in, and Kafka's\n")
	b.WriteString("  alternatives (`log.retention.ms`, `.minutes`, `.hours`; `log.roll.ms`,\n")
	b.WriteString("  `.hours`) are all taken, the finer one winning. A value with a unit\n")
	b.WriteString("  (`1GB`, `7d`) is refused with a message saying so.\n\n")
	b.WriteString("Accepted and ignored:\n\n")
	inert := make([]string, 0, len(inertKafkaNames))
	for n := range inertKafkaNames {
		inert = append(inert, n)
	}
	sort.Strings(inert)
	for _, n := range inert {
		fmt.Fprintf(&b, "- `%s`\n", n)
	}
	b.WriteString("\nRefused unless set to the value shown:\n\n")
	b.WriteString("| Name | Sets | Accepted value |\n|---|---|---|\n")
	refused := make([]string, 0, len(refusedKafkaNames))
	for n := range refusedKafkaNames {
		refused = append(refused, n)
	}
	sort.Strings(refused)
	for _, n := range refused {
		r := refusedKafkaNames[n]
		var vals []string
		for _, h := range r.harmless {
			if h == "" {
				vals = append(vals, "unset")
			} else {
				vals = append(vals, "`"+h+"`")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", n, escapeCell(r.what), strings.Join(vals, ", "))
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
