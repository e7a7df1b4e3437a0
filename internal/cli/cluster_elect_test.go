package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestWriteElectionsSortsAndCountsFailures checks the elect-leaders table:
// rows sorted by topic then partition, Kafka error names with the broker's
// message, and ELECTION_NOT_NEEDED not counted as a failure.
func TestWriteElectionsSortsAndCountsFailures(t *testing.T) {
	tests := []struct {
		name    string
		res     kadm.ElectLeadersResults
		want    string
		wantErr string
	}{
		{
			name: "none",
			res:  kadm.ElectLeadersResults{},
			want: "TOPIC  PARTITION  RESULT\n",
		},
		{
			name: "elected and not needed",
			res: kadm.ElectLeadersResults{
				"b": {10: {Topic: "b", Partition: 10}, 2: {Topic: "b", Partition: 2, Err: kerr.ElectionNotNeeded}},
				"a": {0: {Topic: "a", Partition: 0, Err: kerr.ElectionNotNeeded, ErrMessage: "preferred replica 1 already leads a-0"}},
			},
			want: "TOPIC  PARTITION  RESULT\n" +
				"a      0          ELECTION_NOT_NEEDED: preferred replica 1 already leads a-0\n" +
				"b      2          ELECTION_NOT_NEEDED\n" +
				"b      10         elected\n",
		},
		{
			name: "failures",
			res: kadm.ElectLeadersResults{
				"t": {
					0: {Topic: "t", Partition: 0, Err: kerr.PreferredLeaderNotAvailable, ErrMessage: "down"},
					1: {Topic: "t", Partition: 1},
					2: {Topic: "t", Partition: 2, Err: errors.New("boom"), ErrMessage: "detail"},
				},
			},
			want: "TOPIC  PARTITION  RESULT\n" +
				"t      0          PREFERRED_LEADER_NOT_AVAILABLE: down\n" +
				"t      1          elected\n" +
				"t      2          boom: detail\n",
			wantErr: "elect leaders: 2 of 3 partitions failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := writeElections(env{stdout: &out}, tt.res)
			if out.String() != tt.want {
				t.Errorf("output:\n%q\nwant\n%q", out.String(), tt.want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}
