package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// stBatchEntries is a log of commands of many kinds, with failures among
// them: one refused half way through (a policy upsert whose second policy
// is bad), one refused by the state (an unknown token), an unknown command
// an older server may skip, and an entry that does not decode.
func stBatchEntries(t *testing.T) []Entry {
	t.Helper()
	var entries []Entry
	index := uint64(10)
	add := func(mt MessageType, req any) {
		data, err := Encode(mt, req)
		if err != nil {
			t.Fatalf("Encode %d: %v", mt, err)
		}
		entries = append(entries, Entry{Index: index, Data: data})
		index++
	}
	raw := func(data []byte) {
		entries = append(entries, Entry{Index: index, Data: data})
		index++
	}
	add(NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod"}}})
	add(NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	add(NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n2")})
	add(ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "readers", Rules: stRulesRead}}})
	var jobs []*state.Job
	for i := range 6 {
		job := stJob(fmt.Sprintf("web-%d", i))
		jobs = append(jobs, job)
		add(JobRegisterRequestType, &JobRegisterRequest{Job: job, Eval: stEval(fmt.Sprintf("e-%d", i), job), Now: int64(index)})
		if i == 2 {
			add(ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "ok", Rules: stRulesRead}, {Name: "bad", Rules: `node { policy = "root" }`}}})
			raw([]byte{byte(127 | IgnoreUnknownTypeFlag), 0x80})
		}
		if i == 4 {
			raw([]byte{byte(JobRegisterRequestType), 0xc1})
		}
	}
	for i, job := range jobs[:4] {
		a := stAlloc(fmt.Sprintf("a-%d", i), job, []string{"n1", "n2"}[i%2])
		add(AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{a}, Now: int64(index)})
	}
	add(ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{stClientToken("t1", "readers")}})
	add(ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{"t1", "ghost"}})
	add(AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{
		{ID: "a-0", ClientStatus: state.AllocClientStatusRunning, TaskStates: map[string]*state.TaskState{"server": {
			State: state.TaskStateRunning, StartedAt: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC)}}},
		{ID: "a-1", ClientStatus: state.AllocClientStatusRunning},
	}, Now: int64(index)})
	add(JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web-5", Now: int64(index)})
	again := stJob("web-0")
	again.Meta = map[string]string{"v": "2"}
	add(JobRegisterRequestType, &JobRegisterRequest{Job: again, Eval: stEval("e-again", again), Now: int64(index)})
	add(ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "writers", Rules: stRulesRead}}})
	return entries
}

// stSameResponses compares Apply's responses: errors by message (they are
// values made afresh each time), everything else whole.
func stSameResponses(t *testing.T, entries []Entry, want, got []any) {
	t.Helper()
	for i := range want {
		we, wErr := want[i].(error)
		ge, gErr := got[i].(error)
		switch {
		case wErr != gErr:
			t.Errorf("entry %d (index %d): response %v, want %v", i, entries[i].Index, got[i], want[i])
		case wErr:
			if we.Error() != ge.Error() {
				t.Errorf("entry %d (index %d): error %q, want %q", i, entries[i].Index, ge, we)
			}
		case !reflect.DeepEqual(want[i], got[i]):
			t.Errorf("entry %d (index %d): response %#v, want %#v", i, entries[i].Index, got[i], want[i])
		}
	}
}

// TestApplyBatchAgreesWithApply applies one log entry by entry and, in
// other stores, in batches of random sizes: the responses, every table and
// the events must be the same, failures included (a command refused half
// way through leaves nothing in the batch's shared transaction).
func TestApplyBatchAgreesWithApply(t *testing.T) {
	entries := stBatchEntries(t)
	ref := stApplyOneByOne(t, entries)
	want := ref.responses
	var failed int
	for _, r := range want {
		if _, ok := r.(error); ok {
			failed++
		}
	}
	if failed < 3 {
		t.Fatalf("only %d entries failed; the log must exercise failures: %v", failed, want)
	}

	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 19))
			s := stStore(t, Config{})
			got := make([]any, 0, len(entries))
			for from := 0; from < len(entries); {
				n := 1 + rng.IntN(len(entries)-from)
				if seed == 0 {
					n = len(entries) - from // one batch of everything
				}
				got = append(got, s.ApplyBatch(entries[from:from+n])...)
				from += n
			}
			ref.check(t, entries, s, got)
		})
	}
}

// stApplied is what a log applied entry by entry gave: the responses,
// the tables and the events.
type stApplied struct {
	responses []any
	dump      map[string][]any
	events    []state.EventBatch
}

// stApplyOneByOne applies entries one by one to a new store.
func stApplyOneByOne(t *testing.T, entries []Entry) *stApplied {
	t.Helper()
	one := stStore(t, Config{})
	ref := &stApplied{responses: make([]any, len(entries))}
	for i, e := range entries {
		ref.responses[i] = one.Apply(e.Index, e.Data)
	}
	ref.dump = stDump(t, one)
	ref.events, _ = one.Events().After(1, 0)
	return ref
}

// check compares s, which applied entries with the responses got, with
// the reference.
func (ref *stApplied) check(t *testing.T, entries []Entry, s *Store, got []any) {
	t.Helper()
	stSameResponses(t, entries, ref.responses, got)
	stCompareDumps(t, ref.dump, stDump(t, s))
	gotEvents, _ := s.Events().After(1, 0)
	if w, g := eventSummary(ref.events), eventSummary(gotEvents); !reflect.DeepEqual(w, g) {
		t.Errorf("events:\n got %v\nwant %v", g, w)
	}
}

// TestApplyBatchWakesWatchersOnce: a blocking query watching a table
// wakes for a batch that writes it, and sees every entry of the batch.
func TestApplyBatchWakesWatchersOnce(t *testing.T) {
	s := stStore(t, Config{})
	entries := stBatchEntries(t)[:8]
	ws := make(map[<-chan struct{}]struct{})
	if _, err := s.Jobs(ws, state.DefaultNamespace, ""); err != nil {
		t.Fatal(err)
	}
	if len(ws) == 0 {
		t.Fatal("no watch channel for the jobs table")
	}
	s.ApplyBatch(entries)
	for ch := range ws {
		select {
		case <-ch:
		default:
			t.Fatal("the batch wrote jobs but the watcher was not woken")
		}
	}
	jobs, err := s.Jobs(nil, state.DefaultNamespace, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 {
		t.Errorf("%d jobs after the batch, want the 3 it registered", len(jobs))
	}
	if got := s.Index(TableJobs); got != 16 { // the third register's
		t.Errorf("Index(jobs) = %d, want 16", got)
	}
}

// TestApplyBatchWakesAllocWatchers: a blocking read of one allocation
// (which watches a channel of its own, not its bucket's) wakes when a
// batch writes that allocation, as it does for Apply.
func TestApplyBatchWakesAllocWatchers(t *testing.T) {
	s := stStore(t, Config{})
	entries := stBatchEntries(t)
	var upto int // through the allocations' placements
	for i, e := range entries {
		if MessageType(e.Data[0]) == AllocUpdateRequestType {
			upto = i + 1
		}
	}
	s.ApplyBatch(entries[:upto])
	ws := make(map[<-chan struct{}]struct{})
	a, err := s.AllocByID(ws, "a-0")
	if err != nil || a == nil {
		t.Fatalf("a-0 after the placements: %v, %v", a, err)
	}
	s.ApplyBatch(entries[upto:])
	if !stFired(ws) {
		t.Fatal("a batch reported a-0 running, but its watcher was not woken")
	}
	if a, _ := s.AllocByID(nil, "a-0"); a.ClientStatus != state.AllocClientStatusRunning {
		t.Fatalf("a-0 is %q after the batch", a.ClientStatus)
	}
}

// BenchmarkApplyBatch applies the log of the running scenario's shape
// (each job: its register, its placement, its client's report) entry by
// entry and in commit rounds of 8 entries, as Raft hands them over.
func BenchmarkApplyBatch(b *testing.B) {
	const jobs = 1000
	var entries []Entry
	index := uint64(10)
	add := func(mt MessageType, req any) {
		data, err := Encode(mt, req)
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, Entry{Index: index, Data: data})
		index++
	}
	for n := range 50 {
		add(NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(fmt.Sprintf("n%02d", n))})
	}
	setup := len(entries)
	for i := range jobs {
		job := stJob(fmt.Sprintf("web-%04d", i))
		add(JobRegisterRequestType, &JobRegisterRequest{Job: job, Eval: stEval(fmt.Sprintf("e-%04d", i), job), Now: int64(index)})
		a := stAlloc(fmt.Sprintf("a-%04d", i), job, fmt.Sprintf("n%02d", i%50))
		add(AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{a}, Now: int64(index)})
		add(AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{
			{ID: a.ID, ClientStatus: state.AllocClientStatusRunning}}, Now: int64(index)})
	}
	for _, round := range []int{1, 8} {
		b.Run(fmt.Sprint("round=", round), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s, _ := NewStore(Config{})
				s.ApplyBatch(entries[:setup])
				b.StartTimer()
				for from := setup; from < len(entries); from += round {
					to := min(from+round, len(entries))
					if round == 1 {
						s.Apply(entries[from].Index, entries[from].Data)
					} else {
						s.ApplyBatch(entries[from:to])
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(entries)-setup), "ns/entry")
		})
	}
}

// TestApplyBatchTakesPreparedCommands: entries made by PrepareCommand are
// applied from the command it decoded (each taken once), alone and in
// batches of random sizes, with the same responses, tables and events as
// entries decoded from their bytes, failures included: a batch that fails
// half way applies its earlier entries again, from their bytes, since the
// first attempt may have changed the commands it took.
func TestApplyBatchTakesPreparedCommands(t *testing.T) {
	entries := stBatchEntries(t)
	ref := stApplyOneByOne(t, entries)
	for seed := range uint64(10) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 23))
			s := stStore(t, Config{})
			// The same log, each entry that decodes made again by
			// PrepareCommand from its command.
			prepared := make([]Entry, len(entries))
			var preps []*Prepared
			for i, e := range entries {
				prepared[i] = e
				mt, req, err := DecodeCommand(e.Data)
				if err != nil {
					continue
				}
				p, err := PrepareCommand(mt, req)
				if err != nil {
					continue // refused before proposing; the log keeps its bytes
				}
				prepared[i].Data, prepared[i].Prepared = p.Data, p
				preps = append(preps, p)
			}
			if len(preps) < len(entries)/2 {
				t.Fatalf("only %d of %d entries prepared", len(preps), len(entries))
			}
			got := make([]any, 0, len(entries))
			for from := 0; from < len(prepared); {
				n := 1 + rng.IntN(len(prepared)-from)
				if seed == 0 {
					n = 1 // Apply's path: one entry at a time
					got = append(got, s.ApplyEntry(prepared[from]))
					from++
					continue
				}
				got = append(got, s.ApplyBatch(prepared[from:from+n])...)
				from += n
			}
			for _, p := range preps {
				if p.cmd != nil {
					t.Errorf("the command prepared as %x was not taken by the Apply of its entry", p.Data[:min(8, len(p.Data))])
				}
			}
			ref.check(t, entries, s, got)
		})
	}
}

// TestPreparedCommandOnlyForItsBytes: a copy of a prepared entry (as a
// follower or a restart reads it) is decoded, and the command stays for
// the entry itself, which takes it once.
func TestPreparedCommandOnlyForItsBytes(t *testing.T) {
	job := stJob("web")
	p, err := PrepareCommand(JobRegisterRequestType, &JobRegisterRequest{Job: job, Eval: stEval("e", job), Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	cmd := p.cmd
	if _, got, err := decodeEntry(Entry{Data: bytes.Clone(p.Data), Prepared: p}); err != nil || got == cmd {
		t.Fatalf("a copy of the entry: %v, prepared command taken %v", err, got == cmd)
	}
	if p.cmd == nil {
		t.Fatal("decoding a copy of the entry took its prepared command")
	}
	if typ, got, err := decodeEntry(Entry{Data: p.Data, Prepared: p}); err != nil || got != cmd || typ != JobRegisterRequestType {
		t.Fatalf("the entry itself: %v, type %d, prepared command taken %v", err, typ, got == cmd)
	}
	if _, got, err := decodeEntry(Entry{Data: p.Data, Prepared: p}); err != nil || got == cmd {
		t.Fatalf("the entry again: %v, prepared command taken twice %v", err, got == cmd)
	}
	// A request Prepare refuses is not proposed.
	if _, err := PrepareCommand(JobRegisterRequestType, &JobRegisterRequest{Now: 1}); err == nil {
		t.Fatal("a register without a job was prepared")
	}
	// A request built from the state is not decoded by Prepare, so
	// nothing is handed over for it.
	p, err = PrepareCommand(PlanApplyRequestType, &PlanApplyRequest{EvalID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if p.cmd != nil {
		t.Error("a command held for a request built from the state")
	}
}
