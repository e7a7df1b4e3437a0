package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type memberRow struct {
	MemberID, InstanceID, ClientID, Host string
	Assignment                           string
	assigned                             map[string][]int32
}

// groupInfo is a described group of any protocol.
type groupInfo struct {
	Name, Type, State, ProtocolType, Protocol string
	Coordinator                               int32
	Members                                   []memberRow
	Err                                       string
	// Lag sums the lag of its committed offsets; -1 unknown (a share
	// group, or offsets that could not be read).
	Lag int64
}

// offsetRow is a group's position on one partition, as `samsa group
// describe` prints it: -1 is unknown ("-").
type offsetRow struct {
	Topic                  string
	Partition              int32
	Committed, LogEnd, Lag int64
	Member                 string
	CommittedOK, LogEndOK  bool
	HasLag                 bool
}

func formatAssignment(a map[string][]int32) string {
	if len(a) == 0 {
		return "-"
	}
	topics := make([]string, 0, len(a))
	for t := range a {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	parts := make([]string, len(topics))
	for i, t := range topics {
		ps := append([]int32(nil), a[t]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		parts[i] = t + ":" + joinInt32(ps)
	}
	return strings.Join(parts, " ")
}

func topicsSetMap(s kadm.TopicsSet) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range s {
		for p := range ps {
			out[t] = append(out[t], p)
		}
	}
	return out
}

// describeGroups describes groups by their type: classic ones with
// DescribeGroups, KIP-848 consumer groups with ConsumerGroupDescribe and
// share groups with ShareGroupDescribe.
func describeGroups(rq *request, listed kadm.ListedGroups) (map[string]*groupInfo, []string) {
	out := map[string]*groupInfo{}
	var errs []string
	var classic, consumer, share []string
	for _, g := range listed.Sorted() {
		gi := &groupInfo{Name: g.Group, Type: g.GroupType, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator, Lag: -1}
		if gi.Type == "" {
			gi.Type = "classic"
		}
		out[g.Group] = gi
		switch gi.Type {
		case "consumer":
			consumer = append(consumer, g.Group)
		case "share":
			share = append(share, g.Group)
		default:
			classic = append(classic, g.Group)
		}
	}
	if len(classic) > 0 {
		ds, err := rq.adm.DescribeGroups(rq.ctx, classic...)
		if err != nil {
			errs = append(errs, "describe groups: "+err.Error())
		}
		for _, d := range ds {
			gi := out[d.Group]
			if gi == nil {
				continue
			}
			if d.Err != nil {
				gi.Err = d.Err.Error()
				continue
			}
			gi.State, gi.ProtocolType, gi.Protocol, gi.Coordinator = d.State, d.ProtocolType, d.Protocol, d.Coordinator.NodeID
			for _, m := range d.Members {
				mr := memberRow{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
				if m.InstanceID != nil {
					mr.InstanceID = *m.InstanceID
				}
				if ca, ok := m.Assigned.AsConsumer(); ok {
					mr.assigned = map[string][]int32{}
					for _, t := range ca.Topics {
						mr.assigned[t.Topic] = append(mr.assigned[t.Topic], t.Partitions...)
					}
				}
				mr.Assignment = formatAssignment(mr.assigned)
				gi.Members = append(gi.Members, mr)
			}
		}
	}
	if len(consumer) > 0 {
		ds, err := rq.adm.DescribeConsumerGroups(rq.ctx, consumer...)
		if err != nil {
			errs = append(errs, "describe consumer groups: "+err.Error())
		}
		for _, d := range ds {
			gi := out[d.Group]
			if gi == nil {
				continue
			}
			if d.Err != nil {
				gi.Err = d.Err.Error()
				continue
			}
			gi.State, gi.ProtocolType, gi.Protocol, gi.Coordinator = d.State, "consumer", d.AssignorName, d.Coordinator.NodeID
			for _, m := range d.Members {
				mr := memberRow{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, assigned: topicsSetMap(m.Assignment)}
				if m.InstanceID != nil {
					mr.InstanceID = *m.InstanceID
				}
				mr.Assignment = formatAssignment(mr.assigned)
				gi.Members = append(gi.Members, mr)
			}
		}
	}
	if len(share) > 0 {
		ds, err := rq.adm.DescribeShareGroups(rq.ctx, share...)
		if err != nil {
			errs = append(errs, "describe share groups: "+err.Error())
		}
		for _, d := range ds {
			gi := out[d.GroupID]
			if gi == nil {
				continue
			}
			if d.Err != nil {
				gi.Err = d.Err.Error()
				continue
			}
			gi.State, gi.ProtocolType, gi.Protocol, gi.Coordinator = d.GroupState, "share", d.Assignor, d.Coordinator.NodeID
			for _, m := range d.Members {
				mr := memberRow{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, assigned: topicsSetMap(m.Assignment)}
				mr.Assignment = formatAssignment(mr.assigned)
				gi.Members = append(gi.Members, mr)
			}
		}
	}
	return out, errs
}

// groupOffsets computes a group's rows: every partition that is
// assigned or has a committed offset, with the committed offset, the log
// end offset and the lag between them, exactly as `samsa group describe`.
func groupOffsets(gi *groupInfo, committed kadm.OffsetResponses, ends kadm.ListedOffsets) []offsetRow {
	type tp struct {
		t string
		p int32
	}
	owner := map[tp]string{}
	for _, m := range gi.Members {
		for t, ps := range m.assigned {
			for _, p := range ps {
				owner[tp{t, p}] = m.MemberID
			}
		}
	}
	seen := map[tp]bool{}
	var tps []tp
	add := func(x tp) {
		if !seen[x] {
			seen[x] = true
			tps = append(tps, x)
		}
	}
	committed.Each(func(o kadm.OffsetResponse) { add(tp{o.Topic, o.Partition}) })
	for x := range owner {
		add(x)
	}
	sort.Slice(tps, func(i, j int) bool {
		return tps[i].t < tps[j].t || tps[i].t == tps[j].t && tps[i].p < tps[j].p
	})
	rows := make([]offsetRow, 0, len(tps))
	for _, x := range tps {
		r := offsetRow{Topic: x.t, Partition: x.p, Committed: -1, LogEnd: -1, Lag: -1, Member: owner[x]}
		if o, ok := committed.Lookup(x.t, x.p); ok && o.Err == nil && o.At >= 0 {
			r.Committed, r.CommittedOK = o.At, true
		}
		if e, ok := ends.Lookup(x.t, x.p); ok && e.Err == nil {
			r.LogEnd, r.LogEndOK = e.Offset, true
			if r.CommittedOK {
				r.Lag, r.HasLag = max(e.Offset-r.Committed, 0), true
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// endsFor lists the log end offsets of the topics groups have offsets
// on or are assigned.
func endsFor(rq *request, offsets map[string]kadm.OffsetResponses, infos map[string]*groupInfo) (kadm.ListedOffsets, error) {
	set := map[string]bool{}
	for _, o := range offsets {
		for t := range o {
			set[t] = true
		}
	}
	for _, gi := range infos {
		for _, m := range gi.Members {
			for t := range m.assigned {
				set[t] = true
			}
		}
	}
	if len(set) == 0 {
		return kadm.ListedOffsets{}, nil
	}
	topics := make([]string, 0, len(set))
	for t := range set {
		topics = append(topics, t)
	}
	return rq.adm.ListEndOffsets(rq.ctx, topics...)
}

type groupsView struct {
	Query  string
	Groups []*groupInfo
	Errors []string
}

func (s *Server) groups(rq *request) error {
	listed, err := rq.adm.ListGroups(rq.ctx)
	if err != nil && len(listed) == 0 {
		return fmt.Errorf("list groups: %w", err)
	}
	v := groupsView{Query: formValue(rq.r, "q")}
	if err != nil {
		v.Errors = append(v.Errors, "list groups: "+err.Error())
	}
	if v.Query != "" {
		for g := range listed {
			if !strings.Contains(strings.ToLower(g), strings.ToLower(v.Query)) {
				delete(listed, g)
			}
		}
	}
	infos, errs := describeGroups(rq, listed)
	v.Errors = append(v.Errors, errs...)
	var names []string
	for g, gi := range infos {
		if gi.Type != "share" {
			names = append(names, g)
		}
	}
	offsets := map[string]kadm.OffsetResponses{}
	if len(names) > 0 {
		for g, r := range rq.adm.FetchManyOffsets(rq.ctx, names...) {
			if r.Err != nil {
				v.Errors = append(v.Errors, fmt.Sprintf("offsets of %s: %v", g, r.Err))
				continue
			}
			offsets[g] = r.Fetched
		}
	}
	ends, err := endsFor(rq, offsets, infos)
	if err != nil {
		v.Errors = append(v.Errors, "log end offsets: "+err.Error())
	}
	for g, gi := range infos {
		if o, ok := offsets[g]; ok {
			gi.Lag = 0
			for _, r := range groupOffsets(gi, o, ends) {
				if r.HasLag {
					gi.Lag += r.Lag
				}
			}
		}
		v.Groups = append(v.Groups, gi)
	}
	sort.Slice(v.Groups, func(i, j int) bool { return v.Groups[i].Name < v.Groups[j].Name })
	return rq.page(s, "groups", "Consumer groups", v)
}

// planRow is one partition of a reset-offsets plan.
type planRow struct {
	Topic        string
	Partition    int32
	Current, New int64
	HasCurrent   bool
	Clamped      string
}

type groupView struct {
	Group   *groupInfo
	Offsets []offsetRow
	Total   int64
	Topics  []string
	Errors  []string
	// Configs are the group's group configs (the GROUP config resource),
	// on the group page only (not in the lag polls).
	Configs []configRow
	// Plan is a reset-offsets preview (dry run), with its form values.
	Plan                                   []planRow
	PlanTopic, PlanPartition, PlanStrategy string
	PlanValue                              string
	Active                                 bool
}

// loadGroup describes one group with its offsets and lag.
func loadGroup(rq *request, name string) (groupView, error) {
	var v groupView
	listed, err := rq.adm.ListGroups(rq.ctx)
	if err != nil && len(listed) == 0 {
		return v, fmt.Errorf("list groups: %w", err)
	}
	lg, ok := listed[name]
	if !ok {
		// A group that has only offsets, or none at all: describe it as
		// classic, which answers Dead for an unknown one.
		lg = kadm.ListedGroup{Group: name, GroupType: "classic"}
	}
	infos, errs := describeGroups(rq, kadm.ListedGroups{name: lg})
	v.Errors = errs
	gi := infos[name]
	v.Group = gi
	v.Active = gi.State != "Empty" && gi.State != "Dead" && gi.State != ""
	if gi.Type == "share" {
		return v, nil
	}
	committed, err := rq.adm.FetchOffsets(rq.ctx, name)
	if err != nil {
		v.Errors = append(v.Errors, "offsets: "+err.Error())
		return v, nil
	}
	ends, err := endsFor(rq, map[string]kadm.OffsetResponses{name: committed}, infos)
	if err != nil {
		v.Errors = append(v.Errors, "log end offsets: "+err.Error())
	}
	v.Offsets = groupOffsets(gi, committed, ends)
	seen := map[string]bool{}
	for _, r := range v.Offsets {
		if r.HasLag {
			v.Total += r.Lag
		}
		if !seen[r.Topic] {
			seen[r.Topic] = true
			v.Topics = append(v.Topics, r.Topic)
		}
	}
	gi.Lag = v.Total
	return v, nil
}

func (s *Server) group(rq *request) error {
	name := rq.r.FormValue("name")
	if name == "" {
		return badRequest("no group named")
	}
	v, err := loadGroup(rq, name)
	if err != nil {
		return err
	}
	v.Configs, err = groupConfigRows(rq, name)
	if err != nil && !errors.Is(err, kerr.GroupAuthorizationFailed) {
		// A user who may describe the group but not its configs
		// sees the page without them.
		v.Errors = append(v.Errors, "configs: "+err.Error())
	}
	return rq.page(s, "group", "Group "+name, v)
}

// groupConfigRows describes the group configs of group (kadm has no call
// for the GROUP config resource). A config the group sets is marked set;
// its default is the broker's value it would have otherwise.
func groupConfigRows(rq *request, group string) ([]configRow, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(rq.ctx, rq.cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("%d resources in the response", len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return nil, err
	}
	var out []configRow
	for _, c := range r.Configs {
		row := configRow{Name: c.Name, Source: configSource(c.Source), IsDefault: c.Source != kmsg.ConfigSourceGroupConfig}
		if c.Value != nil {
			row.Value = *c.Value
		}
		for _, syn := range c.ConfigSynonyms {
			if syn.Source != kmsg.ConfigSourceGroupConfig && syn.Value != nil {
				row.Default = *syn.Value
				break
			}
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// groupLagJSON serves a group's total lag and per-partition lag for the
// group page's chart, which polls it.
func (s *Server) groupLagJSON(rq *request) error {
	name := rq.r.FormValue("name")
	if name == "" {
		return badRequest("no group named")
	}
	v, err := loadGroup(rq, name)
	if err != nil {
		return err
	}
	type part struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Lag       int64  `json:"lag"`
	}
	now := s.now()
	out := struct {
		T       int64      `json:"t"`
		State   string     `json:"state"`
		Lag     int64      `json:"lag"`
		Parts   []part     `json:"partitions"`
		History [][2]int64 `json:"history"`
	}{T: now.UnixMilli(), State: v.Group.State, Lag: v.Total, Parts: []part{}, History: [][2]int64{}}
	if len(v.Errors) == 0 && v.Group.Err == "" && v.Group.Type != "share" {
		out.History = s.lags.record(name, now, v.Total)
	}
	for _, r := range v.Offsets {
		if r.HasLag {
			out.Parts = append(out.Parts, part{r.Topic, r.Partition, r.Lag})
		}
	}
	rq.w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(rq.w).Encode(out)
}

// errGroupActive refuses a reset while the group has members: they own
// its offsets and would overwrite the new ones, as `samsa group
// reset-offsets` refuses.
var errGroupActive = errors.New("the group has active members; stop its consumers first")

// resetOffsets previews (action=preview, the dry run) or commits
// (action=apply) new offsets for a group on a topic.
func (s *Server) resetOffsets(rq *request) error {
	name := rq.r.PostFormValue("name")
	topic := formValue(rq.r, "topic")
	strategy := rq.r.PostFormValue("strategy")
	value := formValue(rq.r, "value")
	partition := formValue(rq.r, "partition")
	back := Prefix + "/group?name=" + url.QueryEscape(name)
	if name == "" || topic == "" {
		return badRequest("name a group and a topic")
	}
	only := int32(-1)
	if partition != "" && partition != "all" {
		n, err := strconv.ParseInt(partition, 10, 32)
		if err != nil || n < 0 {
			return badRequest("partition %q: want a partition number or all", partition)
		}
		only = int32(n)
	}
	var num int64
	switch strategy {
	case "earliest", "latest":
	case "offset", "timestamp", "shift":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || (strategy != "shift" && n < 0) {
			return badRequest("%s %q: want a number", strategy, value)
		}
		num = n
	default:
		return badRequest("strategy %q: want earliest, latest, offset, timestamp or shift", strategy)
	}
	v, err := loadGroup(rq, name)
	if err != nil {
		return err
	}
	if v.Active {
		return rq.done(back, fmt.Sprintf("reset offsets: %v (group %s is %s with %d members)", errGroupActive, name, v.Group.State, len(v.Group.Members)), false)
	}
	plan, err := planReset(rq, name, topic, only, strategy, num)
	if err != nil {
		return rq.done(back, "reset offsets: "+err.Error(), false)
	}
	if rq.r.PostFormValue("action") != "apply" {
		v.Plan, v.PlanTopic, v.PlanPartition, v.PlanStrategy, v.PlanValue = plan, topic, partition, strategy, value
		return rq.page(s, "group", "Group "+name, v)
	}
	os := make(kadm.Offsets)
	for _, p := range plan {
		os.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.New, LeaderEpoch: -1})
	}
	resp, err := rq.adm.CommitOffsets(rq.ctx, name, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return rq.done(back, "reset offsets: "+err.Error(), false)
	}
	return rq.done(back, fmt.Sprintf("committed new offsets for %d partitions of %s in group %s", len(plan), topic, name), true)
}

// planReset computes the new offset of every partition of topic (or only
// one): the target of the strategy clamped to [log start, log end], the
// rule `samsa group reset-offsets` and Kafka's tool follow. A partition
// without a committed offset shifts from its log start offset.
func planReset(rq *request, group, topic string, only int32, strategy string, num int64) ([]planRow, error) {
	starts, err := rq.adm.ListStartOffsets(rq.ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("log start offsets of %s: %w", topic, err)
	}
	ends, err := rq.adm.ListEndOffsets(rq.ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("log end offsets of %s: %w", topic, err)
	}
	var atTS kadm.ListedOffsets
	if strategy == "timestamp" {
		if atTS, err = rq.adm.ListOffsetsAfterMilli(rq.ctx, num, topic); err != nil {
			return nil, fmt.Errorf("offsets of %s at %d: %w", topic, num, err)
		}
	}
	committed, err := rq.adm.FetchOffsetsForTopics(rq.ctx, group, topic)
	if err != nil {
		return nil, fmt.Errorf("offsets of group %s: %w", group, err)
	}
	var parts []int32
	for p, l := range starts[topic] {
		if l.Err != nil {
			if errors.Is(l.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("topic %s: %w", topic, l.Err)
			}
			return nil, fmt.Errorf("topic %s partition %d: %w", topic, p, l.Err)
		}
		if only < 0 || only == p {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		if only >= 0 {
			return nil, fmt.Errorf("topic %s has no partition %d", topic, only)
		}
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var plan []planRow
	for _, p := range parts {
		so, _ := starts.Lookup(topic, p)
		eo, ok := ends.Lookup(topic, p)
		if !ok || eo.Err != nil {
			return nil, fmt.Errorf("topic %s partition %d: no log end offset", topic, p)
		}
		start, end := so.Offset, eo.Offset
		row := planRow{Topic: topic, Partition: p, Current: -1}
		if o, ok := committed.Lookup(topic, p); ok && o.Err == nil && o.At >= 0 {
			row.Current, row.HasCurrent = o.At, true
		}
		var n int64
		switch strategy {
		case "earliest":
			n = start
		case "latest":
			n = end
		case "offset":
			n = num
		case "timestamp":
			n = end
			if t, ok := atTS.Lookup(topic, p); ok && t.Err == nil && t.Offset >= 0 {
				n = t.Offset
			}
		case "shift":
			base := row.Current
			if !row.HasCurrent {
				base = start
			}
			n = addSaturating(base, num)
		}
		row.New = min(max(n, start), end)
		if row.New != n {
			bound := "log end"
			if n < row.New {
				bound = "log start"
			}
			row.Clamped = fmt.Sprintf("%d clamped to the %s offset", n, bound)
		}
		plan = append(plan, row)
	}
	return plan, nil
}

// deleteGroup deletes an empty group and its offsets.
func (s *Server) deleteGroup(rq *request) error {
	name := rq.r.PostFormValue("name")
	if name == "" {
		return badRequest("no group named")
	}
	if rq.r.PostFormValue("confirm") != name {
		return rq.done(Prefix+"/group?name="+url.QueryEscape(name), "delete group: type the group's name to confirm", false)
	}
	resp, err := rq.adm.DeleteGroup(rq.ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return rq.done(Prefix+"/group?name="+url.QueryEscape(name), "delete group "+name+": "+err.Error(), false)
	}
	return rq.done(Prefix+"/groups", "deleted group "+name, true)
}

// addSaturating is a+b, held at the int64 bounds instead of wrapping, so
// that a shift by a huge N lands on the log end (or start) as the clamp
// says.
func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}
