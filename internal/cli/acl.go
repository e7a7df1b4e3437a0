package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
)

func newACLCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Create, list and delete ACLs",
		Long: `ACL administration through the Kafka admin API (CreateAcls, DescribeAcls,
DeleteAcls), with the vocabulary of kafka-acls.sh. The broker must run with
authorizer.class.name set; otherwise it answers SECURITY_DISABLED.

An ACL allows or denies a principal (User:alice), connecting from a host
(* for any), an operation on a resource: a topic, a group, the cluster or
a transactional id, named literally or by prefix.`,
		Example: `  samsa acl create --allow-principal User:alice --operation read --operation describe --topic orders
  samsa acl create --deny-principal User:bob --deny-host 10.0.0.7 --operation write --topic orders- --resource-pattern-type prefixed
  samsa acl list --topic orders --resource-pattern-type match
  samsa acl delete --allow-principal User:alice --topic orders`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(newACLCreateCmd(g, e), newACLListCmd(g, e), newACLDeleteCmd(g, e))
	return cmd
}

// aclFlags are the kafka-acls options shared by create, list and delete.
type aclFlags struct {
	allowPrincipals, denyPrincipals []string
	allowHosts, denyHosts           []string
	operations                      []string
	topics, groups, txnIDs          []string
	cluster                         bool
	patternType                     string
}

func (f *aclFlags) register(cmd *cobra.Command, what string) {
	fs := cmd.Flags()
	fs.StringArrayVar(&f.allowPrincipals, "allow-principal", nil, what+" ALLOW entries of this principal, Type:name (repeatable)")
	fs.StringArrayVar(&f.denyPrincipals, "deny-principal", nil, what+" DENY entries of this principal, Type:name (repeatable)")
	fs.StringArrayVar(&f.allowHosts, "allow-host", nil, "host of the ALLOW entries (repeatable)")
	fs.StringArrayVar(&f.denyHosts, "deny-host", nil, "host of the DENY entries (repeatable)")
	fs.StringArrayVar(&f.operations, "operation", nil, "operation: read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write, create-tokens, describe-tokens, all (repeatable)")
	fs.StringArrayVar(&f.topics, "topic", nil, "topic name or prefix (repeatable)")
	fs.StringArrayVar(&f.groups, "group", nil, "consumer group id or prefix (repeatable)")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource (kafka-cluster)")
	fs.StringArrayVar(&f.txnIDs, "transactional-id", nil, "transactional id or prefix (repeatable)")
}

func (f *aclFlags) hasResource() bool {
	return len(f.topics) > 0 || len(f.groups) > 0 || len(f.txnIDs) > 0 || f.cluster
}

// resourceTypes returns the resource types the flags name.
func (f *aclFlags) resourceTypes() []kmsg.ACLResourceType {
	var out []kmsg.ACLResourceType
	if len(f.topics) > 0 {
		out = append(out, kmsg.ACLResourceTypeTopic)
	}
	if len(f.groups) > 0 {
		out = append(out, kmsg.ACLResourceTypeGroup)
	}
	if f.cluster {
		out = append(out, kmsg.ACLResourceTypeCluster)
	}
	if len(f.txnIDs) > 0 {
		out = append(out, kmsg.ACLResourceTypeTransactionalId)
	}
	return out
}

// builder returns the kadm builder for the flags. filter selects the
// rules of list and delete (ANY allowed, unset means any); otherwise
// those of create.
func (f *aclFlags) builder(filter bool) (*kadm.ACLBuilder, error) {
	if len(f.allowHosts) > 0 && len(f.allowPrincipals) == 0 {
		return nil, usagef("--allow-host needs --allow-principal")
	}
	if len(f.denyHosts) > 0 && len(f.denyPrincipals) == 0 {
		return nil, usagef("--deny-host needs --deny-principal")
	}
	pattern, err := kmsg.ParseACLResourcePatternType(f.patternType)
	if err != nil || pattern == kmsg.ACLResourcePatternTypeUnknown {
		return nil, usagef("--resource-pattern-type %q: want literal, prefixed, match or any", f.patternType)
	}
	if !filter && pattern != kmsg.ACLResourcePatternTypeLiteral && pattern != kmsg.ACLResourcePatternTypePrefixed {
		return nil, usagef("--resource-pattern-type %q: an ACL is literal or prefixed", f.patternType)
	}
	var ops []kmsg.ACLOperation
	for _, s := range f.operations {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil || op == kmsg.ACLOperationUnknown || (!filter && op == kmsg.ACLOperationAny) {
			return nil, usagef("--operation %q: not an ACL operation", s)
		}
		ops = append(ops, op)
	}
	b := kadm.NewACLs().ResourcePatternType(pattern)
	if filter {
		if !f.hasResource() {
			b.AnyResource()
		}
		if len(ops) == 0 {
			ops = []kmsg.ACLOperation{kmsg.ACLOperationAny}
		}
		if len(f.allowPrincipals) == 0 && len(f.denyPrincipals) == 0 {
			// Any principal, either permission.
			b.Allow().AllowHosts().Deny().DenyHosts()
		}
	} else {
		if !f.hasResource() {
			return nil, usagef("name a resource: --topic, --group, --cluster or --transactional-id")
		}
		if len(f.allowPrincipals) == 0 && len(f.denyPrincipals) == 0 {
			return nil, usagef("name a principal: --allow-principal or --deny-principal")
		}
		if len(ops) == 0 {
			ops = []kmsg.ACLOperation{kmsg.ACLOperationAll}
		}
		// As kafka-acls.sh does: refuse an operation the resource type
		// does not have (Kafka's brokers would store it, to no effect).
		for _, rt := range f.resourceTypes() {
			for _, op := range ops {
				if !slices.Contains(acl.SupportedOperations(rt), op) {
					return nil, usagef("--operation %s does not apply to a %s resource", strings.ToLower(op.String()), rt)
				}
			}
		}
	}
	if len(f.allowPrincipals) > 0 {
		b.Allow(f.allowPrincipals...).AllowHosts(hostsOrWildcard(f.allowHosts, filter)...)
	}
	if len(f.denyPrincipals) > 0 {
		b.Deny(f.denyPrincipals...).DenyHosts(hostsOrWildcard(f.denyHosts, filter)...)
	}
	b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeClusters(f.cluster).MaybeTransactionalIDs(f.txnIDs...)
	b.Operations(ops...)
	return b, nil
}

// hostsOrWildcard is the hosts given, or for a creation without any, "*"
// (kafka-acls.sh's default). A filter without hosts matches any host.
func hostsOrWildcard(hosts []string, filter bool) []string {
	if len(hosts) == 0 && !filter {
		return []string{acl.WildcardHost}
	}
	return hosts
}

// aclRow is one binding as the acl commands print it.
type aclRow struct {
	principal, host        string
	resourceType, resource string
	pattern                string
	operation, permission  string
}

func (r aclRow) compare(o aclRow) int {
	return cmp.Or(
		strings.Compare(r.principal, o.principal),
		strings.Compare(r.resourceType, o.resourceType),
		strings.Compare(r.resource, o.resource),
		strings.Compare(r.pattern, o.pattern),
		strings.Compare(r.host, o.host),
		strings.Compare(r.operation, o.operation),
		strings.Compare(r.permission, o.permission),
	)
}

func newACLRow(principal, host string, rt kmsg.ACLResourceType, name string, p kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) aclRow {
	return aclRow{principal, host, rt.String(), name, p.String(), op.String(), perm.String()}
}

// printACLRows prints rows sorted, one per line, under a header.
func printACLRows(w io.Writer, rows []aclRow) error {
	slices.SortFunc(rows, aclRow.compare)
	rows = slices.Compact(rows)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tHOST\tRESOURCE-TYPE\tRESOURCE-NAME\tPATTERN\tOPERATION\tPERMISSION")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.principal, r.host, r.resourceType, r.resource, r.pattern, r.operation, r.permission)
	}
	return tw.Flush()
}

// writeACLJSON writes rows, sorted as printACLRows sorts them, as one JSON
// document.
func writeACLJSON(w io.Writer, rows []aclRow) error {
	type aclJSON struct {
		Principal    string `json:"principal"`
		Host         string `json:"host"`
		ResourceType string `json:"resource_type"`
		ResourceName string `json:"resource_name"`
		PatternType  string `json:"pattern_type"`
		Operation    string `json:"operation"`
		Permission   string `json:"permission"`
	}
	slices.SortFunc(rows, aclRow.compare)
	rows = slices.Compact(rows)
	out := make([]aclJSON, 0, len(rows))
	for _, r := range rows {
		out = append(out, aclJSON{r.principal, r.host, r.resourceType, r.resource, r.pattern, r.operation, r.permission})
	}
	return writeJSON(w, struct {
		ACLs []aclJSON `json:"acls"`
	}{out})
}

func newACLCreateCmd(g *globals, e env) *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create ACLs",
		Long: `Create one ACL for every combination of principal, host, resource and
operation given (kafka-acls.sh --add). A principal without --allow-host or
--deny-host applies from any host (*); without --operation the ACL is for
all operations. --resource-pattern-type is literal (the default) or
prefixed. An operation the resource type does not have (write on a group)
is refused. Creating an ACL that exists is not an error. Prints the ACLs
created.`,
		Example: `  samsa acl create --allow-principal User:alice --operation read --topic orders --group billing
  samsa acl create --allow-principal User:etl --operation write --topic logs- --resource-pattern-type prefixed
  samsa acl create --deny-principal User:mallory --deny-host 10.0.0.66 --cluster`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.builder(false)
			if err != nil {
				return err
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			results, err := adm.CreateACLs(cmd.Context(), b)
			if err != nil {
				return fmt.Errorf("create ACLs: %w", err)
			}
			var rows []aclRow
			var errs []error
			for _, r := range results {
				row := newACLRow(r.Principal, r.Host, r.Type, r.Name, r.Pattern, r.Operation, r.Permission)
				if r.Err != nil {
					errs = append(errs, fmt.Errorf("create ACL %s %s %s %s:%s: %w", row.permission, row.principal, row.operation, row.resourceType, row.resource, withMessage(r.Err, r.ErrMessage)))
					continue
				}
				rows = append(rows, row)
			}
			if len(rows) > 0 {
				if err := printACLRows(e.stdout, rows); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
	f.register(cmd, "create")
	cmd.Flags().StringVar(&f.patternType, "resource-pattern-type", "literal", "literal or prefixed")
	return cmd
}

func newACLListCmd(g *globals, e env) *cobra.Command {
	var (
		f      aclFlags
		format outputFormat
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List ACLs",
		Long: `List the ACLs that match the flags (kafka-acls.sh --list), one per line,
sorted by principal, resource, host and operation. Without a resource flag
every resource matches; without principals every principal, with either
permission; without hosts or operations, every one.
--resource-pattern-type filters the resource names: literal (the default)
and prefixed match ACLs of that type with exactly that name, any matches
both, and match finds every ACL that applies to the named resource: the
literal name, the literal wildcard * and every prefix of it (KIP-290).
Without a resource flag the pattern type is not filtered unless given.
--format json prints the same ACLs as one document.`,
		Example: `  samsa acl list
  samsa acl list --allow-principal User:alice --format json
  samsa acl list --topic orders-eu --resource-pattern-type match`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !f.hasResource() && !cmd.Flags().Changed("resource-pattern-type") {
				f.patternType = "any"
			}
			b, err := f.builder(true)
			if err != nil {
				return err
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			results, err := adm.DescribeACLs(cmd.Context(), b)
			if err != nil {
				return fmt.Errorf("list ACLs: %w", err)
			}
			var rows []aclRow
			for _, r := range results {
				if r.Err != nil {
					return fmt.Errorf("list ACLs: %w", withMessage(r.Err, r.ErrMessage))
				}
				for _, d := range r.Described {
					rows = append(rows, newACLRow(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission))
				}
			}
			if format.json() {
				return writeACLJSON(e.stdout, rows)
			}
			return printACLRows(e.stdout, rows)
		},
	}
	f.register(cmd, "list")
	cmd.Flags().StringVar(&f.patternType, "resource-pattern-type", "literal", "literal, prefixed, any or match")
	addFormatFlag(cmd, &format)
	return cmd
}

func newACLDeleteCmd(g *globals, e env) *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete ACLs",
		Long: `Delete the ACLs that match the flags (kafka-acls.sh --remove) and print
them. A resource flag is required; the flags match as for acl list, so
without principals every ACL of the resource goes, and without
--operation every operation of the principals named does.`,
		Example: `  samsa acl delete --allow-principal User:alice --operation read --topic orders
  samsa acl delete --topic orders
  samsa acl delete --topic logs- --resource-pattern-type prefixed`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !f.hasResource() {
				return usagef("name a resource: --topic, --group, --cluster or --transactional-id")
			}
			b, err := f.builder(true)
			if err != nil {
				return err
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			results, err := adm.DeleteACLs(cmd.Context(), b)
			if err != nil {
				return fmt.Errorf("delete ACLs: %w", err)
			}
			var rows []aclRow
			var errs []error
			for _, r := range results {
				if r.Err != nil {
					errs = append(errs, fmt.Errorf("delete ACLs: %w", withMessage(r.Err, r.ErrMessage)))
					continue
				}
				for _, d := range r.Deleted {
					if d.Err != nil {
						errs = append(errs, fmt.Errorf("delete ACL: %w", withMessage(d.Err, d.ErrMessage)))
						continue
					}
					rows = append(rows, newACLRow(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission))
				}
			}
			if err := printACLRows(e.stdout, rows); err != nil {
				return err
			}
			return errors.Join(errs...)
		},
	}
	f.register(cmd, "delete")
	cmd.Flags().StringVar(&f.patternType, "resource-pattern-type", "literal", "literal, prefixed, any or match")
	return cmd
}
