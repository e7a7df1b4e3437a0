package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newQuotaCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Describe and alter client quotas",
		Long: `Client quota administration through the Kafka admin API
(DescribeClientQuotas, AlterClientQuotas; KIP-546), with the vocabulary of
kafka-configs.sh: an entity is one or two --entity-type flags, each followed
by --entity-name or --entity-default. Types are users, clients (client ids)
and ips. Quotas are producer_byte_rate, consumer_byte_rate (bytes per
second), request_percentage (percent of one request handler), and
controller_mutation_rate for users and clients; connection_creation_rate
(connections per second) for ips.`,
		Example: `  samsa quota alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576
  samsa quota alter --entity-type users --entity-name alice --entity-type clients --entity-default --add-config request_percentage=50
  samsa quota describe --entity-type users`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(newQuotaDescribeCmd(g, e), newQuotaAlterCmd(g, e))
	return cmd
}

// entityFlags collects --entity-type, --entity-name and --entity-default
// in the order given, since a name or default belongs to the type before
// it, as in kafka-configs.sh.
type entityFlags struct {
	seq []entityFlag
}

type entityFlag struct {
	kind  string // "type", "name" or "default"
	value string
}

// entityFlagValue is one of the three flags, appending to the shared list.
type entityFlagValue struct {
	f    *entityFlags
	kind string
}

func (v entityFlagValue) String() string { return "" }
func (v entityFlagValue) Type() string {
	if v.kind == "default" {
		return "bool"
	}
	return "string"
}

func (v entityFlagValue) Set(s string) error {
	if v.kind == "default" {
		on, err := strconv.ParseBool(s)
		if err != nil || !on {
			return err
		}
	}
	v.f.seq = append(v.f.seq, entityFlag{kind: v.kind, value: s})
	return nil
}

func (f *entityFlags) add(fs *pflag.FlagSet) {
	fs.Var(entityFlagValue{f, "type"}, "entity-type", "entity type: users, clients or ips; repeat for a user with a client id")
	fs.Var(entityFlagValue{f, "name"}, "entity-name", "name of the entity of the --entity-type before it")
	fs.VarPF(entityFlagValue{f, "default"}, "entity-default", "", "the default entity of the --entity-type before it").NoOptDefVal = "true"
}

// quotaEntityTypes maps kafka-configs.sh entity types to the protocol's.
var quotaEntityTypes = map[string]string{"users": "user", "clients": "client-id", "ips": "ip"}

// entityPart is one entity type with its name: nil name and !any for the
// default, any for every entity of the type (describe only).
type entityPart struct {
	typ  string // user, client-id or ip
	name *string
	any  bool
}

// parts pairs every --entity-type with the --entity-name or
// --entity-default after it. A type alone names any entity of the type,
// which only describe accepts.
func (f *entityFlags) parts(allowAny bool) ([]entityPart, error) {
	var out []entityPart
	for i := 0; i < len(f.seq); i++ {
		fl := f.seq[i]
		if fl.kind != "type" {
			return nil, usagef("--entity-%s must follow an --entity-type", fl.kind)
		}
		typ, ok := quotaEntityTypes[fl.value]
		if !ok {
			return nil, usagef("--entity-type %q: want users, clients or ips", fl.value)
		}
		p := entityPart{typ: typ}
		switch next := i + 1; {
		case next < len(f.seq) && f.seq[next].kind == "name":
			name := f.seq[next].value
			p.name = &name
			i++
		case next < len(f.seq) && f.seq[next].kind == "default":
			i++
		case allowAny:
			p.any = true
		default:
			return nil, usagef("--entity-type %s needs an --entity-name or --entity-default after it", fl.value)
		}
		out = append(out, p)
	}
	return out, nil
}

// entityString prints an entity as user=alice,client-id=<default>.
func entityString(e kadm.ClientQuotaEntity) string {
	parts := make([]string, len(e))
	for i, c := range e {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

func newQuotaDescribeCmd(g *globals, e env) *cobra.Command {
	var (
		ents   entityFlags
		format outputFormat
	)
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "List client quotas",
		Long: `List the quotas of the entity given, one quota per line, sorted by entity
and quota. An --entity-type without a name lists every entity of that type
(names and the default); with two types, every user and client-id pair.
Only entities with exactly the types given are listed, as kafka-configs.sh
lists them; without any --entity-type every entity is. --format json
prints one document: per quota the entity's components (a null name is
the default entity), the quota and its value as a number.`,
		Example: `  samsa quota describe
  samsa quota describe --format json
  samsa quota describe --entity-type users --entity-name alice
  samsa quota describe --entity-type users --entity-name alice --entity-type clients
  samsa quota describe --entity-type ips --entity-default`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parts, err := ents.parts(true)
			if err != nil {
				return err
			}
			var filter []kadm.DescribeClientQuotaComponent
			for _, p := range parts {
				c := kadm.DescribeClientQuotaComponent{Type: p.typ, MatchName: p.name, MatchType: kmsg.QuotasMatchTypeExact}
				switch {
				case p.any:
					c.MatchType = kmsg.QuotasMatchTypeAny
				case p.name == nil:
					c.MatchType = kmsg.QuotasMatchTypeDefault
				}
				filter = append(filter, c)
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			qs, err := adm.DescribeClientQuotas(cmd.Context(), len(filter) > 0, filter)
			if err != nil {
				return fmt.Errorf("describe quotas: %w", err)
			}
			type componentJSON struct {
				Type string  `json:"type"`
				Name *string `json:"name"`
			}
			type row struct {
				entity, key, value string
				components         []componentJSON
				v                  float64
			}
			var rs []row
			for _, q := range qs {
				comps := []componentJSON{}
				for _, c := range q.Entity {
					comps = append(comps, componentJSON{c.Type, c.Name})
				}
				for _, v := range q.Values {
					rs = append(rs, row{entityString(q.Entity), v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64), comps, v.Value})
				}
			}
			sort.Slice(rs, func(i, j int) bool {
				if rs[i].entity != rs[j].entity {
					return rs[i].entity < rs[j].entity
				}
				return rs[i].key < rs[j].key
			})
			if format.json() {
				type quotaJSON struct {
					Entity []componentJSON `json:"entity"`
					Quota  string          `json:"quota"`
					Value  float64         `json:"value"`
				}
				out := make([]quotaJSON, 0, len(rs))
				for _, r := range rs {
					out = append(out, quotaJSON{r.components, r.key, r.v})
				}
				return writeJSON(e.stdout, struct {
					Quotas []quotaJSON `json:"quotas"`
				}{out})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ENTITY\tQUOTA\tVALUE")
			for _, r := range rs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.entity, r.key, r.value)
			}
			return tw.Flush()
		},
	}
	ents.add(cmd.Flags())
	addFormatFlag(cmd, &format)
	return cmd
}

func newQuotaAlterCmd(g *globals, e env) *cobra.Command {
	var (
		ents         entityFlags
		add          []string
		del          []string
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "alter",
		Short: "Set or remove client quotas",
		Long: `Set (--add-config) or remove (--delete-config) quotas of one entity, in
one request. The broker checks each key and value: a key unknown or not
allowed for the entity, a byte rate or connection rate that is not a whole
number, or a value that is not above 0 fails the command (exit 1) and
nothing changes. --validate-only asks the broker to check without storing.`,
		Example: `  samsa quota alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  samsa quota alter --entity-type clients --entity-default --add-config request_percentage=25
  samsa quota alter --entity-type users --entity-name alice --delete-config consumer_byte_rate
  samsa quota alter --entity-type ips --entity-name 10.0.0.7 --add-config connection_creation_rate=5`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parts, err := ents.parts(false)
			if err != nil {
				return err
			}
			if len(parts) == 0 {
				return usagef("name the entity with --entity-type and --entity-name or --entity-default")
			}
			var entry kadm.AlterClientQuotaEntry
			for _, p := range parts {
				entry.Entity = append(entry.Entity, kadm.ClientQuotaEntityComponent{Type: p.typ, Name: p.name})
			}
			for _, kv := range add {
				k, v, ok := strings.Cut(kv, "=")
				k = strings.TrimSpace(k)
				if !ok || k == "" {
					return usagef("--add-config %q: want key=value", kv)
				}
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return usagef("--add-config %s: %q is not a number", k, v)
				}
				entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: k, Value: f})
			}
			for _, k := range del {
				if k = strings.TrimSpace(k); k == "" {
					return usagef("--delete-config: empty key")
				}
				entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
			}
			if len(entry.Ops) == 0 {
				return usagef("give --add-config or --delete-config")
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			alter := adm.AlterClientQuotas
			if validateOnly {
				alter = adm.ValidateAlterClientQuotas
			}
			rs, err := alter(cmd.Context(), []kadm.AlterClientQuotaEntry{entry})
			if err == nil && len(rs) != 1 {
				err = fmt.Errorf("the broker answered %d results for one entity", len(rs))
			}
			if err == nil && rs[0].Err != nil {
				err = withMessage(rs[0].Err, rs[0].ErrMessage)
			}
			what := entityString(entry.Entity)
			if err != nil {
				return fmt.Errorf("alter quotas of %s: %w", what, err)
			}
			if validateOnly {
				fmt.Fprintf(e.stdout, "valid: quotas of %s\n", what)
			} else {
				fmt.Fprintf(e.stdout, "altered quotas of %s\n", what)
			}
			return nil
		},
	}
	ents.add(cmd.Flags())
	cmd.Flags().StringSliceVar(&add, "add-config", nil, "quotas to set, key=value, comma separated")
	cmd.Flags().StringSliceVar(&del, "delete-config", nil, "quotas to remove, comma separated")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check with the broker without storing")
	return cmd
}
