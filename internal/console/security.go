package console

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type aclRow struct {
	ResourceType, ResourceName, PatternType string
	Principal, Host, Operation, Permission  string
}

type userRow struct {
	User       string
	Mechanism  string
	Iterations int32
}

type quotaRow struct {
	Entity string
	Values string
}

type securityView struct {
	ACLs   []aclRow
	Users  []userRow
	Quotas []quotaRow
	Errors []string
}

func lower(s fmt.Stringer) string { return strings.ToLower(s.String()) }

// security shows the ACLs, SCRAM users and client quotas. Each list
// needs its own permission (DESCRIBE on the cluster for ACLs and quotas,
// DESCRIBE_CONFIGS for users); a list the user may not read shows the
// broker's error instead.
func (s *Server) security(rq *request) error {
	var v securityView
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	if resp, err := req.RequestWith(rq.ctx, rq.cl); err != nil {
		v.Errors = append(v.Errors, "ACLs: "+err.Error())
	} else if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		v.Errors = append(v.Errors, "ACLs: "+err.Error())
	} else {
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				v.ACLs = append(v.ACLs, aclRow{ResourceType: lower(r.ResourceType), ResourceName: r.ResourceName,
					PatternType: lower(r.ResourcePatternType), Principal: a.Principal, Host: a.Host,
					Operation: lower(a.Operation), Permission: lower(a.PermissionType)})
			}
		}
	}
	sort.Slice(v.ACLs, func(i, j int) bool {
		a, b := v.ACLs[i], v.ACLs[j]
		return a.ResourceType+"\x00"+a.ResourceName+"\x00"+a.Principal+"\x00"+a.Operation < b.ResourceType+"\x00"+b.ResourceName+"\x00"+b.Principal+"\x00"+b.Operation
	})
	users, err := rq.adm.DescribeUserSCRAMs(rq.ctx)
	if err != nil {
		v.Errors = append(v.Errors, "SCRAM users: "+err.Error())
	}
	for u, d := range users {
		if d.Err != nil {
			continue
		}
		for _, c := range d.CredInfos {
			v.Users = append(v.Users, userRow{User: u, Mechanism: c.Mechanism.String(), Iterations: c.Iterations})
		}
	}
	sort.Slice(v.Users, func(i, j int) bool {
		return v.Users[i].User < v.Users[j].User || v.Users[i].User == v.Users[j].User && v.Users[i].Mechanism < v.Users[j].Mechanism
	})
	quotas, err := rq.adm.DescribeClientQuotas(rq.ctx, false, nil)
	if err != nil {
		v.Errors = append(v.Errors, "quotas: "+err.Error())
	}
	for _, q := range quotas {
		var ent, vals []string
		for _, e := range q.Entity {
			name := "<default>"
			if e.Name != nil {
				name = *e.Name
			}
			ent = append(ent, e.Type+"="+name)
		}
		for _, qv := range q.Values {
			vals = append(vals, qv.Key+"="+strconv.FormatFloat(qv.Value, 'f', -1, 64))
		}
		sort.Strings(vals)
		v.Quotas = append(v.Quotas, quotaRow{Entity: strings.Join(ent, ", "), Values: strings.Join(vals, ", ")})
	}
	sort.Slice(v.Quotas, func(i, j int) bool { return v.Quotas[i].Entity < v.Quotas[j].Entity })
	return rq.page(s, "security", "Security", v)
}

// aclFromForm reads an ACL binding from a form.
func aclFromForm(rq *request) (kmsg.ACLResourceType, kmsg.ACLResourcePatternType, kmsg.ACLOperation, kmsg.ACLPermissionType, string, string, string, error) {
	f := func(n string) string { return formValue(rq.r, n) }
	rt, err1 := kmsg.ParseACLResourceType(f("resource_type"))
	pt, err2 := kmsg.ParseACLResourcePatternType(f("pattern_type"))
	op, err3 := kmsg.ParseACLOperation(f("operation"))
	perm, err4 := kmsg.ParseACLPermissionType(f("permission"))
	name, principal, host := f("resource_name"), f("principal"), f("host")
	if host == "" {
		host = "*"
	}
	if rt == kmsg.ACLResourceTypeCluster {
		name = "kafka-cluster"
	}
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return rt, pt, op, perm, "", "", "", badRequest("ACL: %v", err)
		}
	}
	if name == "" || !strings.Contains(principal, ":") {
		return rt, pt, op, perm, "", "", "", badRequest("ACL: give a resource name and a principal such as User:alice")
	}
	return rt, pt, op, perm, name, principal, host, nil
}

func (s *Server) createACL(rq *request) error {
	rt, pt, op, perm, name, principal, host, err := aclFromForm(rq)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, host, op, perm
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(rq.ctx, rq.cl)
	if err == nil && len(resp.Results) == 1 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
		if err != nil && resp.Results[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Results[0].ErrorMessage)
		}
	}
	if err != nil {
		return rq.done(Prefix+"/security", "create ACL: "+err.Error(), false)
	}
	return rq.done(Prefix+"/security", fmt.Sprintf("created ACL: %s %s %s on %s %s", principal, lower(perm), lower(op), lower(rt), name), true)
}

func (s *Server) deleteACL(rq *request) error {
	rt, pt, op, perm, name, principal, host, err := aclFromForm(rq)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = rt, &name, pt
	f.Principal, f.Host, f.Operation, f.PermissionType = &principal, &host, op, perm
	req.Filters = append(req.Filters, f)
	resp, err := req.RequestWith(rq.ctx, rq.cl)
	deleted := 0
	if err == nil && len(resp.Results) == 1 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
		deleted = len(resp.Results[0].MatchingACLs)
	}
	if err != nil {
		return rq.done(Prefix+"/security", "delete ACL: "+err.Error(), false)
	}
	return rq.done(Prefix+"/security", fmt.Sprintf("deleted %d ACLs", deleted), deleted > 0)
}

func scramMechanism(s string) (kadm.ScramMechanism, error) {
	switch s {
	case ScramSHA256:
		return kadm.ScramSha256, nil
	case ScramSHA512:
		return kadm.ScramSha512, nil
	}
	return 0, badRequest("mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

// upsertUser creates a SCRAM user or changes its password.
func (s *Server) upsertUser(rq *request) error {
	user, pass := formValue(rq.r, "user"), rq.r.PostFormValue("password")
	mech, err := scramMechanism(formValue(rq.r, "mechanism"))
	if err != nil {
		return err
	}
	if user == "" || pass == "" {
		return badRequest("give a user name and a password")
	}
	res, err := rq.adm.AlterUserSCRAMs(rq.ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: 8192, Password: pass}})
	if err == nil {
		if r, ok := res[user]; ok && r.Err != nil {
			err = r.Err
		}
	}
	if err != nil {
		return rq.done(Prefix+"/security", "user "+user+": "+err.Error(), false)
	}
	return rq.done(Prefix+"/security", "stored the "+mech.String()+" credential of "+user, true)
}

func (s *Server) deleteUser(rq *request) error {
	user := formValue(rq.r, "user")
	mech, err := scramMechanism(formValue(rq.r, "mechanism"))
	if err != nil {
		return err
	}
	res, err := rq.adm.AlterUserSCRAMs(rq.ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: mech}}, nil)
	if err == nil {
		if r, ok := res[user]; ok && r.Err != nil {
			err = r.Err
		}
	}
	if err != nil {
		return rq.done(Prefix+"/security", "delete user "+user+": "+err.Error(), false)
	}
	return rq.done(Prefix+"/security", "deleted the "+mech.String()+" credential of "+user, true)
}

type txnRow struct {
	ID            string
	ProducerID    int64
	ProducerEpoch int16
	State         string
	TimeoutMs     int32
	StartMs       int64
	Coordinator   int32
	Partitions    string
}

// openRow is an open transaction on one partition, as the partition's
// leader reports it (DescribeProducers); Hanging when its transaction
// coordinator no longer has it open.
type openRow struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	StartOffset      int64
	LastTimestamp    int64
	Hanging          bool
}

type txnView struct {
	Txns   []txnRow
	Open   []openRow
	Errors []string
}

func (s *Server) transactions(rq *request) error {
	var v txnView
	listed, err := rq.adm.ListTransactions(rq.ctx, nil, nil)
	if err != nil {
		v.Errors = append(v.Errors, "transactions: "+err.Error())
	}
	ongoing := map[int64]bool{}
	if ids := listed.TransactionalIDs(); len(ids) > 0 {
		desc, err := rq.adm.DescribeTransactions(rq.ctx, ids...)
		if err != nil {
			v.Errors = append(v.Errors, "describe transactions: "+err.Error())
		}
		for _, d := range desc.Sorted() {
			if d.Err != nil {
				continue
			}
			if d.State == "Ongoing" || d.State == "PrepareCommit" || d.State == "PrepareAbort" {
				ongoing[d.ProducerID] = true
			}
			var parts []string
			for _, tp := range d.Topics.Sorted() {
				for _, p := range tp.Partitions {
					parts = append(parts, tp.Topic+"-"+strconv.Itoa(int(p)))
				}
			}
			v.Txns = append(v.Txns, txnRow{ID: d.TxnID, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch, State: d.State,
				TimeoutMs: d.TimeoutMillis, StartMs: d.StartTimestamp, Coordinator: d.Coordinator, Partitions: strings.Join(parts, " ")})
		}
	}
	prods, err := rq.adm.DescribeProducers(rq.ctx, nil)
	if err != nil {
		v.Errors = append(v.Errors, "producers: "+err.Error())
	}
	prods.EachProducer(func(p kadm.DescribedProducer) {
		if p.CurrentTxnStartOffset < 0 {
			return
		}
		v.Open = append(v.Open, openRow{Topic: p.Topic, Partition: p.Partition, ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
			CoordinatorEpoch: p.CoordinatorEpoch, StartOffset: p.CurrentTxnStartOffset, LastTimestamp: p.LastTimestamp,
			Hanging: !ongoing[p.ProducerID]})
	})
	sort.Slice(v.Open, func(i, j int) bool {
		a, b := v.Open[i], v.Open[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && (a.Partition < b.Partition || a.Partition == b.Partition && a.StartOffset < b.StartOffset)
	})
	return rq.page(s, "transactions", "Transactions", v)
}

// abortTransaction writes an ABORT marker for the open transaction of a
// partition that starts at an offset, as `samsa txn abort` does.
func (s *Server) abortTransaction(rq *request) error {
	topic := formValue(rq.r, "topic")
	p, err1 := strconv.ParseInt(formValue(rq.r, "partition"), 10, 32)
	start, err2 := strconv.ParseInt(formValue(rq.r, "start_offset"), 10, 64)
	if topic == "" || err1 != nil || err2 != nil {
		return badRequest("name a topic, a partition and the transaction's start offset")
	}
	set := kadm.TopicsSet{}
	set.Add(topic, int32(p))
	prods, err := rq.adm.DescribeProducers(rq.ctx, set)
	if err != nil {
		return rq.done(Prefix+"/transactions", "abort: "+err.Error(), false)
	}
	var target *kadm.DescribedProducer
	prods.EachProducer(func(d kadm.DescribedProducer) {
		if d.CurrentTxnStartOffset == start {
			d := d
			target = &d
		}
	})
	if target == nil {
		return rq.done(Prefix+"/transactions", fmt.Sprintf("abort: %s-%d has no open transaction starting at offset %d", topic, p, start), false)
	}
	resps, err := rq.adm.WriteTxnMarkers(rq.ctx, kadm.TxnMarkers{ProducerID: target.ProducerID, ProducerEpoch: target.ProducerEpoch,
		CoordinatorEpoch: target.CoordinatorEpoch, Topics: set})
	if err == nil {
		for _, r := range resps {
			for _, t := range r.Topics {
				for _, pr := range t.Partitions {
					if pr.Err != nil {
						err = pr.Err
					}
				}
			}
		}
	}
	if err != nil {
		return rq.done(Prefix+"/transactions", "abort: "+err.Error(), false)
	}
	return rq.done(Prefix+"/transactions", fmt.Sprintf("aborted the transaction of producer %d in %s-%d starting at offset %d", target.ProducerID, topic, p, start), true)
}

// alterQuota sets or removes one client quota (AlterClientQuotas,
// KIP-546) of a user or client id; an empty name is the entity type's
// default.
func (s *Server) alterQuota(rq *request) error {
	typ, name, key := formValue(rq.r, "entity_type"), formValue(rq.r, "entity_name"), formValue(rq.r, "key")
	if typ != "user" && typ != "client-id" {
		return badRequest("entity type %q: want user or client-id", typ)
	}
	if key == "" {
		return badRequest("name the quota, such as producer_byte_rate")
	}
	e := kadm.ClientQuotaEntityComponent{Type: typ}
	if name != "" {
		e.Name = &name
	}
	op := kadm.AlterClientQuotaOp{Key: key, Remove: rq.r.PostFormValue("op") == "delete"}
	if !op.Remove {
		v, err := strconv.ParseFloat(formValue(rq.r, "value"), 64)
		if err != nil || v < 0 {
			return badRequest("quota value %q: want a number >= 0", formValue(rq.r, "value"))
		}
		op.Value = v
	}
	res, err := rq.adm.AlterClientQuotas(rq.ctx, []kadm.AlterClientQuotaEntry{{Entity: []kadm.ClientQuotaEntityComponent{e}, Ops: []kadm.AlterClientQuotaOp{op}}})
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
				if r.ErrMessage != "" {
					err = fmt.Errorf("%w: %s", err, r.ErrMessage)
				}
			}
		}
	}
	who := typ + "=" + name
	if name == "" {
		who = typ + "=<default>"
	}
	if err != nil {
		return rq.done(Prefix+"/security", "quota "+key+" of "+who+": "+err.Error(), false)
	}
	if op.Remove {
		return rq.done(Prefix+"/security", "removed quota "+key+" of "+who, true)
	}
	return rq.done(Prefix+"/security", fmt.Sprintf("set quota %s of %s to %s", key, who, strconv.FormatFloat(op.Value, 'f', -1, 64)), true)
}
