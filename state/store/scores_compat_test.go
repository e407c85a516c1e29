package store

import (
	"encoding/hex"
	"math"
	"reflect"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// Entries written before Scores had a type of their own (AllocMetric.Scores
// was a map[string]float64), captured from that code: a packed plan's
// allocation record (type 23, snapshot format 3's layout) and a msgpack
// plan entry (type 19's shape). Both still decode to the same scores.
const (
	oldScoresRecord = "01000261310000010000026e310101010101010100000101000000000000011a00000000000000000000000700077261772d6b65790000000000000840000a6e312e62696e7061636b555555555555e23f00146e312e6a6f622d616e74692d616666696e697479000000000000d0bf00136e312e6e6f726d616c697a65642d73636f7265a9aaaaaaaaaac43f000a6e322e62696e7061636b9a9999999999b93f00136e322e6e6f726d616c697a65642d73636f7265666666666666e63f00"
	oldScoresEntry  = "148aa6416c6c6f6373c0aa4465706c6f796d656e74c0a64576616c4944a26531aa4576616c537461747573c0a54576616c73c0a34a6f62c0a94a6f62416c6c6f637391de001cb0416c6c6f634d6f64696679496e64657800b2416c6c6f63617465645265736f7572636573c0b1436c69656e744465736372697074696f6ea0ac436c69656e74537461747573a0ab437265617465496e64657800aa43726561746554696d6500ac4465706c6f796d656e744944a0b04465706c6f796d656e74537461747573c0b2446573697265644465736372697074696f6ea0ad44657369726564537461747573a0b1446573697265645472616e736974696f6e84af466f72636552657363686564756c65c0a74d696772617465c0af4e6f53687574646f776e44656c6179c0aa52657363686564756c65c0a64576616c4944a0ae466f6c6c6f7775704576616c4944a0a24944a26131a34a6f62c0a54a6f624944a0a74d6574726963738dae416c6c6f636174696f6e54696d6500ae436c617373457868617573746564c0ad436c61737346696c7465726564c0b1436f616c65736365644661696c7572657300b2436f6e73747261696e7446696c7465726564c0b244696d656e73696f6e457868617573746564c0ae4e6f646573417661696c61626c65c0ae4e6f6465734576616c75617465640dae4e6f64657345786861757374656400ad4e6f64657346696c746572656400ab4e6f646573496e506f6f6c00ae51756f7461457868617573746564c0a653636f72657386b46e312e6a6f622d616e74692d616666696e697479cbbfd0000000000000b36e312e6e6f726d616c697a65642d73636f7265cb3fc4aaaaaaaaaaa9aa6e322e62696e7061636bcb3fb999999999999ab36e322e6e6f726d616c697a65642d73636f7265cb3fe6666666666666a77261772d6b6579cb4008000000000000aa6e312e62696e7061636bcb3fe2555555555555ab4d6f64696679496e64657800aa4d6f6469667954696d6500a44e616d65a0a94e616d657370616365a0ae4e657874416c6c6f636174696f6ea0a64e6f64654944a26e31a84e6f64654e616d65a0b250726576696f7573416c6c6f636174696f6ea0b152657363686564756c65547261636b6572c0a95461736b47726f7570a0aa5461736b537461746573c0a34e6f7700af5061636b65644a6f62416c6c6f6373c0a553746f7073c0"
)

// oldScores is what both entries hold.
var oldScores = map[string]float64{
	"n1.binpack": 0.5729166666666666, "n1.job-anti-affinity": -0.25, "n1.normalized-score": (0.5729166666666666 - 0.25) / 2,
	"n2.binpack": 0.1, "n2.normalized-score": 0.7, "raw-key": 3,
}

func TestOldScoresDecode(t *testing.T) {
	check := func(what string, a *state.Allocation) {
		t.Helper()
		if a == nil || a.Metrics == nil || a.Metrics.NodesEvaluated != 13 {
			t.Fatalf("%s: allocation %+v", what, a)
		}
		got := a.Metrics.Scores.Map()
		if len(got) != len(oldScores) {
			t.Fatalf("%s: scores %v, want %v", what, got, oldScores)
		}
		for k, v := range oldScores {
			if w, ok := got[k]; !ok || math.Float64bits(w) != math.Float64bits(v) {
				t.Errorf("%s: %s = %v %v, want %v", what, k, w, ok, v)
			}
		}
		if !reflect.DeepEqual(a.Metrics.Scores, state.ScoresOf(oldScores)) {
			t.Errorf("%s: scores not in canonical form", what)
		}
	}
	rec, err := hex.DecodeString(oldScoresRecord)
	if err != nil {
		t.Fatal(err)
	}
	req := &PlanApplyRequest{PackedJobAllocs: rec}
	if err := req.unpack(packed.New(logCodec{})); err != nil || len(req.JobAllocs) != 1 {
		t.Fatalf("unpack: %v, %d allocations", err, len(req.JobAllocs))
	}
	check("record", req.JobAllocs[0])
	entry, err := hex.DecodeString(oldScoresEntry)
	if err != nil {
		t.Fatal(err)
	}
	typ, v, err := DecodeCommand(entry)
	if err != nil || typ != PlanApplyRequestType {
		t.Fatalf("DecodeCommand: type %d, %v", typ, err)
	}
	check("msgpack", v.(*PlanApplyRequest).JobAllocs[0])
}
