package packed

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/schedhq/sched/state"
)

// noBlobs is a Codec for records that hold no blob.
type noBlobs struct{}

func (noBlobs) Encode(io.Writer, any) error { return errors.New("no blob expected") }
func (noBlobs) Decode([]byte, any) error    { return errors.New("no blob expected") }

// recordsAllocs returns allocations whose metrics share count maps (one
// object for several allocations, as the store's interned maps are) and
// score the same nodes, by UUID and by other names, in several
// components.
func recordsAllocs() []*state.Allocation {
	dcs := map[string]int{"dc1": 10000}
	class := map[string]int{"": 7}
	dims := map[string]int{"memory": 3, "cpu": 1}
	var allocs []*state.Allocation
	for i := range 40 {
		scores := map[string]float64{}
		for k := range 5 {
			node := fmt.Sprintf("%08x-0000-4000-8000-%012x", (i+k)%9, (i+k)%9)
			if k == 4 {
				node = fmt.Sprintf("node-%d", (i+k)%6)
			}
			scores[node+".binpack"] = float64(i*10 + k)
			scores[node+".job-anti-affinity"] = -0.5
			scores[node+".normalized-score"] = float64(k) / 7
		}
		scores[fmt.Sprintf("raw-key-%d", i%3)] = 1.5
		m := &state.AllocMetric{NodesEvaluated: i, NodesAvailable: dcs, ClassExhausted: class, Scores: state.ScoresOf(scores)}
		switch i % 4 {
		case 1:
			m.DimensionExhausted = dims
		case 2:
			// An equal map that is another object, and one that
			// names a new string.
			m.DimensionExhausted = map[string]int{"memory": 3, "cpu": 1}
			m.ClassFiltered = map[string]int{fmt.Sprintf("class-%d", i): i}
		case 3:
			m.ConstraintFiltered = map[string]int{}
		}
		allocs = append(allocs, &state.Allocation{ID: fmt.Sprintf("alloc-%02d", i), NodeID: "n", Metrics: m})
	}
	return allocs
}

// TestRecordsRoundTripSharedMapsAndClashingScoreKeys: a snapshot's writer, which
// writes a count map it wrote before by copying its encoding, and numbers
// score keys by their hash, reads back the allocations it was given,
// within a chunk and across chunks, even when every score key's hash is
// the same (the refs that clash are told apart).
func TestRecordsRoundTripSharedMapsAndClashingScoreKeys(t *testing.T) {
	for _, clash := range []bool{false, true} {
		t.Run(fmt.Sprintf("clash=%v", clash), func(t *testing.T) {
			if clash {
				saved := scoreHash
				scoreHash = func(state.ScoreRef) uint64 { return 42 }
				t.Cleanup(func() { scoreHash = saved })
			}
			p := New(noBlobs{})
			w := NewSnapshotWriter(noBlobs{})
			allocs := recordsAllocs()
			for round := range 2 { // the second reuses the writer: a new chunk
				b, err := w.PackAllocs("Allocs", allocs)
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.Unpack(b)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if len(got) != len(allocs) {
					t.Fatalf("round %d: %d allocations read back, want %d", round, len(got), len(allocs))
				}
				for i, a := range got {
					if !reflect.DeepEqual(a.Metrics, allocs[i].Metrics) {
						t.Errorf("round %d: %s's metrics read back as %+v, want %+v (scores %v, want %v)", round, a.ID,
							a.Metrics, allocs[i].Metrics, a.Metrics.Scores.Map(), allocs[i].Metrics.Scores.Map())
					}
				}
			}
		})
	}
}
