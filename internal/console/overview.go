package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerRow is one broker on the overview and brokers pages.
type brokerRow struct {
	ID         int32
	Rack       string
	Addr       string
	Controller bool
	Alive      bool
	Self       bool
	Version    string
	Leaders    int
	Replicas   int
	// LogSize is the bytes of its partitions; DiskTotal and DiskFree
	// its log dir's file system (-1 unknown).
	LogSize, DiskTotal, DiskFree int64
	Dirs                         []string
	Err                          string
}

// clusterView is what the overview shows.
type clusterView struct {
	ClusterID       string
	Controller      int32
	Brokers         []brokerRow
	Topics          int
	Partitions      int
	UnderReplicated int
	UnderMinISR     int
	Offline         int
	Errors          []string
	Charts          bool
}

// minISR reads min.insync.replicas of topics (missing when unknown). It
// asks for that one config only: all configs of a thousand topics with
// their synonyms are megabytes that the overview does not need.
func minISR(rq *request, topics []string) (map[string]int, error) {
	out := make(map[string]int, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range topics {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, t, []string{"min.insync.replicas"}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(rq.ctx, rq.cl)
	if err != nil {
		return out, err
	}
	for _, r := range resp.Resources {
		for _, c := range r.Configs {
			if c.Name == "min.insync.replicas" && c.Value != nil {
				if n, err := strconv.Atoi(*c.Value); err == nil {
					out[r.ResourceName] = n
				}
			}
		}
	}
	return out, nil
}

// loadCluster reads metadata and log dirs and counts partitions.
func (s *Server) loadCluster(rq *request) (clusterView, kadm.Metadata, error) {
	var v clusterView
	md, err := rq.adm.Metadata(rq.ctx)
	if err != nil {
		return v, md, fmt.Errorf("metadata: %w", err)
	}
	v.ClusterID, v.Controller, v.Charts = md.Cluster, md.Controller, s.cfg.Counters != nil
	rows := map[int32]*brokerRow{}
	for _, b := range md.Brokers {
		r := &brokerRow{ID: b.NodeID, Addr: b.Host + ":" + strconv.Itoa(int(b.Port)), Alive: true,
			Controller: b.NodeID == md.Controller, Self: b.NodeID == s.cfg.NodeID, LogSize: -1, DiskTotal: -1, DiskFree: -1}
		if b.Rack != nil {
			r.Rack = *b.Rack
		}
		if r.Self {
			r.Version = s.cfg.Version
		}
		rows[b.NodeID] = r
	}
	row := func(id int32) *brokerRow {
		r := rows[id]
		if r == nil {
			// A replica on a broker the metadata does not list: that
			// broker is registered no more.
			r = &brokerRow{ID: id, LogSize: -1, DiskTotal: -1, DiskFree: -1}
			rows[id] = r
		}
		return r
	}
	var names []string
	for _, t := range md.Topics {
		if t.Err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("topic %s: %v", t.Topic, t.Err))
			continue
		}
		names = append(names, t.Topic)
	}
	mins, err := minISR(rq, names)
	if err != nil {
		v.Errors = append(v.Errors, "min.insync.replicas: "+err.Error())
	}
	for _, t := range md.Topics {
		if t.Err != nil {
			continue
		}
		v.Topics++
		for _, p := range t.Partitions {
			v.Partitions++
			if p.Leader < 0 || errorsIs(p.Err, kerr.LeaderNotAvailable) {
				v.Offline++
			} else {
				row(p.Leader).Leaders++
			}
			for _, r := range p.Replicas {
				row(r).Replicas++
			}
			if len(p.ISR) < len(p.Replicas) {
				v.UnderReplicated++
			}
			if m, ok := mins[t.Topic]; ok && len(p.ISR) < m {
				v.UnderMinISR++
			}
		}
	}
	dirs, err := rq.adm.DescribeAllLogDirs(rq.ctx, nil)
	if err != nil {
		v.Errors = append(v.Errors, "log dirs: "+err.Error())
	}
	for id, ds := range dirs {
		r := row(id)
		r.LogSize, r.DiskTotal, r.DiskFree = 0, 0, 0
		for _, d := range ds.Sorted() {
			if d.Err != nil {
				r.Err = fmt.Sprintf("%s: %v", d.Dir, d.Err)
				continue
			}
			r.Dirs = append(r.Dirs, d.Dir)
			r.LogSize += d.Size()
			if d.TotalBytes > 0 {
				r.DiskTotal += d.TotalBytes
				r.DiskFree += d.UsableBytes
			}
		}
		if r.DiskTotal == 0 {
			r.DiskTotal, r.DiskFree = -1, -1
		}
	}
	for _, r := range rows {
		v.Brokers = append(v.Brokers, *r)
	}
	sort.Slice(v.Brokers, func(i, j int) bool { return v.Brokers[i].ID < v.Brokers[j].ID })
	return v, md, nil
}

func (s *Server) overview(rq *request) error {
	v, _, err := s.loadCluster(rq)
	if err != nil {
		return err
	}
	return rq.page(s, "overview", "Overview", v)
}

// throughputJSON serves the throughput ring for the overview's charts:
// {"interval_ms": N, "points": [{"t":..., "records_in":..., ...}]}.
func (s *Server) throughputJSON(rq *request) error {
	type point struct {
		T          int64   `json:"t"`
		RecordsIn  float64 `json:"records_in"`
		BytesIn    float64 `json:"bytes_in"`
		RecordsOut float64 `json:"records_out"`
		BytesOut   float64 `json:"bytes_out"`
	}
	rates := s.rates.snapshot()
	pts := make([]point, len(rates))
	for i, r := range rates {
		pts[i] = point{r.T, r.RecordsIn, r.BytesIn, r.RecordsOut, r.BytesOut}
	}
	rq.w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(rq.w).Encode(map[string]any{"interval_ms": s.cfg.SampleInterval.Milliseconds(), "points": pts})
}

// brokersView is the brokers and cluster page.
type brokersView struct {
	clusterView
	Configs      []configRow
	ConfigBroker int32
	Reassigning  []reassignRow
}

type reassignRow struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Adding    []int32
	Removing  []int32
	// InISR counts the adding replicas already in sync: the progress.
	InISR int
}

func (s *Server) brokers(rq *request) error {
	v, md, err := s.loadCluster(rq)
	if err != nil {
		return err
	}
	bv := brokersView{clusterView: v, ConfigBroker: s.cfg.NodeID}
	if b := formValue(rq.r, "broker"); b != "" {
		n, err := strconv.ParseInt(b, 10, 32)
		if err != nil {
			return badRequest("broker %q: not a broker id", b)
		}
		bv.ConfigBroker = int32(n)
	}
	rcs, err := rq.adm.DescribeBrokerConfigs(rq.ctx, bv.ConfigBroker)
	if err != nil {
		bv.Errors = append(bv.Errors, fmt.Sprintf("configs of broker %d: %v", bv.ConfigBroker, err))
	}
	for _, rc := range rcs {
		bv.Configs = append(bv.Configs, configRows(rc.Configs)...)
	}
	ras, err := rq.adm.ListPartitionReassignments(rq.ctx, nil)
	if err != nil {
		bv.Errors = append(bv.Errors, "reassignments: "+err.Error())
	}
	for _, ra := range ras.Sorted() {
		r := reassignRow{Topic: ra.Topic, Partition: ra.Partition, Replicas: ra.Replicas, Adding: ra.AddingReplicas, Removing: ra.RemovingReplicas}
		if t, ok := md.Topics[ra.Topic]; ok {
			if p, ok := t.Partitions[ra.Partition]; ok {
				for _, a := range ra.AddingReplicas {
					if slices.Contains(p.ISR, a) {
						r.InISR++
					}
				}
			}
		}
		bv.Reassigning = append(bv.Reassigning, r)
	}
	return rq.page(s, "brokers", "Brokers", bv)
}

// electLeaders runs a preferred leader election on every partition.
func (s *Server) electLeaders(rq *request) error {
	res, err := rq.adm.ElectLeaders(rq.ctx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		return rq.done(Prefix+"/brokers", "preferred leader election: "+err.Error(), false)
	}
	moved, failed := 0, 0
	for _, ps := range res {
		for _, r := range ps {
			switch {
			case r.Err == nil:
				moved++
			case errorsIs(r.Err, kerr.ElectionNotNeeded):
			default:
				failed++
			}
		}
	}
	return rq.done(Prefix+"/brokers", fmt.Sprintf("preferred leader election: %d partitions moved to their preferred leader, %d failed", moved, failed), failed == 0)
}
