package broker

// DescribeCluster: v0-1
//
// * v0: brokers, cluster id, controller id (KIP-700).
// * v1: EndpointType (KIP-919); samsa serves only broker endpoints (1).
//
// ClusterAuthorizedOperations, when asked for and an authorizer is set, are
// 0 unless the principal may DESCRIBE the cluster (authz_apis.go), as in
// Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleDescribeCluster(c *server.Conn, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp
	}
	img := b.cluster.Image()
	resp.ClusterID = img.ClusterID
	resp.ControllerID = img.ControllerID
	resp.EndpointType = 1
	resp.ClusterAuthorizedOperations = -2147483648
	for _, id := range img.BrokerIDs() {
		br := img.Brokers[id]
		host, port, ok := br.Endpoint(c.Listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = br.NodeID, host, port, br.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp
}
