package client

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// The appenders know every field of the types they encode: a field added
// to one of them makes the journal fall back to encoding/json (correct,
// slower) and this test fail until appendRecord writes it too.
func TestJournalEncoderKnowsEveryField(t *testing.T) {
	for typ, want := range journalShapes {
		if got := typeShape(typ); got != want {
			t.Errorf("%v has changed: update its appender in journal_enc.go and journalShapes.\n got: %s\nwant: %s", typ, got, want)
		}
	}
	if !journalShapesKnown() {
		t.Fatal("journalShapesKnown is false: records are encoded by encoding/json")
	}
}

// fillMode says how fillValue fills a value.
type fillMode int

const (
	// fillFull: every field set, slices and maps of two elements.
	fillFull fillMode = iota
	// fillEmpty: pointers to zero values, empty (not nil) slices and
	// maps, zero scalars.
	fillEmpty
)

// fillStrings are the strings fillValue uses: what JSON escapes, HTML's
// characters, multi-byte and invalid UTF-8.
var fillStrings = []string{"plain", "quote\" back\\slash", "ctl\x00\x01\x1f\n\r\t\b\f", "<a href='x'>&amp;</a>", "é ü 日本 \u2028\u2029 🙂", "bad \xff\xfe utf8 \xe2\x82"}

// fillValue sets v (settable) and everything it reaches.
func fillValue(v reflect.Value, mode fillMode, n *int) {
	*n++
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		if mode == fillFull {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 3, 11, 4, 5, *n*1001, time.FixedZone("X", 5*3600+30*60))))
		}
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		if mode == fillFull {
			v.SetBytes([]byte(`{"ID":"job","Meta":{"k":"v"}}`))
		}
		return
	case v.Type() == reflect.TypeFor[state.Scores]():
		if mode == fillFull {
			v.Set(reflect.ValueOf(state.ScoresOf(map[string]float64{"n1.binpack": 0.5, "n2.job-anti-affinity": -1e-7})))
		}
		return
	case v.Type() == reflect.TypeFor[*state.Job]():
		return // written apart (frameLocked)
	}
	switch v.Kind() {
	case reflect.String:
		if mode == fillFull {
			v.SetString(fillStrings[*n%len(fillStrings)] + strconv.Itoa(*n))
		}
	case reflect.Bool:
		v.SetBool(mode == fillFull)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if mode == fillFull {
			v.SetInt(int64(*n) * 1000003 * int64(1-2*(*n%2)))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if mode == fillFull {
			v.SetUint(uint64(*n) * 7)
		}
	case reflect.Float64:
		if mode == fillFull {
			v.SetFloat(float64(*n) / 3)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), mode, n)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillValue(v.Field(i), mode, n)
			}
		}
	case reflect.Slice:
		l := 0
		if mode == fillFull {
			l = 2
		}
		s := reflect.MakeSlice(v.Type(), l, l)
		for i := range l {
			fillValue(s.Index(i), mode, n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		if mode == fillFull {
			for range 2 {
				k := reflect.New(v.Type().Key()).Elem()
				fillValue(k, mode, n)
				e := reflect.New(v.Type().Elem()).Elem()
				fillValue(e, mode, n)
				m.SetMapIndex(k, e)
			}
		}
		v.Set(m)
	default:
		panic("fillValue: " + v.Type().String())
	}
}

// filledRecord is a record with everything set as mode says.
func filledRecord(mode fillMode) *journalRecord {
	var rec journalRecord
	n := 0
	fillValue(reflect.ValueOf(&rec).Elem(), mode, &n)
	rec.ID = "8d3f0c1e-1111-2222-3333-444455556666"
	return &rec
}

// decodeBoth reads b as a journalRecord and as generic JSON.
func decodeBoth(t *testing.T, b []byte) (*journalRecord, any) {
	t.Helper()
	var rec journalRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	return &rec, generic
}

// A record written by hand reads back as the same record encoding/json
// wrote reads back, and as the same JSON document: every field, under
// its name, with its omitempty, null where encoding/json writes null;
// every string, escaped or not.
func TestJournalEncoderMatchesEncodingJSON(t *testing.T) {
	withRun := filledRecord(fillFull)
	withRun.Alloc, withRun.Job = nil, nil
	cases := map[string]*journalRecord{
		"full":          filledRecord(fillFull),
		"empty":         filledRecord(fillEmpty),
		"id only":       {ID: "a1"},
		"run only":      withRun,
		"removed":       {ID: "a1", Removed: true},
		"nil task, nil": {ID: "a1", Run: &persistedRun{Tasks: map[string]*persistedTask{"web": nil, "db": {}}}},
	}
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendRecord(nil, rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantRec, wantDoc := decodeBoth(t, want)
			gotRec, gotDoc := decodeBoth(t, got)
			if !reflect.DeepEqual(gotDoc, wantDoc) {
				t.Fatalf("documents differ:\n got: %s\nwant: %s", got, want)
			}
			if !reflect.DeepEqual(gotRec, wantRec) {
				t.Fatalf("records differ:\n got: %+v\nwant: %+v", gotRec, wantRec)
			}
		})
	}
}

// A value the appenders cannot write as encoding/json would (a year past
// 9999) is left to encoding/json, which fails the put as before.
func TestJournalEncoderFallsBack(t *testing.T) {
	rec := &journalRecord{ID: "a1", Run: &persistedRun{TerminalAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := appendRecord(nil, rec, nil); err == nil {
		t.Fatal("the appender wrote a year past 9999")
	}
	s := &stateStore{dir: t.TempDir()}
	if err := s.put(journalAlloc("a1", "v"), rec.Run); err == nil {
		t.Fatal("a put of a time encoding/json cannot write succeeded")
	}
	// So does one whose runner's state was encoded beforehand (persist),
	// and neither leaves a record to load.
	a := journalAlloc("a2", "v")
	a.DeploymentStatus = &state.AllocDeploymentStatus{Timestamp: rec.Run.TerminalAt}
	if err := s.journalPut(&journalRecord{ID: "a2", Alloc: a, Run: &persistedRun{}, runJSON: []byte(`{"Tasks":{}}`)}); err == nil {
		t.Fatal("a put whose allocation the appenders cannot write succeeded without its encoded run")
	}
	if got, errs := loadedByID(t, &stateStore{dir: s.dir}); len(got) != 0 || len(errs) != 0 {
		t.Fatalf("after failed puts: %v, errors %v", got, errs)
	}
}

// A journal holding records written by hand and records as earlier
// versions wrote them (json.Encoder, the job inside the allocation or
// apart) loads every allocation as it was put.
func TestJournalLoadsHandAndEncodingJSONRecords(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	full := filledRecord(fillFull)
	job := &state.Job{ID: "web", Meta: map[string]string{"m": "<&>"}}
	put := func(id string) *state.Allocation {
		a := *full.Alloc
		a.ID, a.Job = id, job
		if err := s.put(&a, full.Run); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	want := map[string]*persistedAlloc{}
	want["hand"] = &persistedAlloc{Alloc: put("hand"), Run: full.Run}
	// Earlier versions' records, framed as they wrote them.
	s.close()
	f, err := os.OpenFile(filepath.Join(s.dir, journalName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	frame := func(rec any) {
		t.Helper()
		payload, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		payload = append(payload, '\n')
		hdr := make([]byte, journalHeader)
		binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(payload)))
		binary.LittleEndian.PutUint32(hdr[4:8], crc32.Checksum(payload, journalCRC))
		if _, err := f.Write(append(hdr, payload...)); err != nil {
			t.Fatal(err)
		}
	}
	inline := *full.Alloc
	inline.ID, inline.Job = "inline", job
	frame(&journalRecord{ID: "inline", Alloc: &inline, Run: full.Run})
	want["inline"] = &persistedAlloc{Alloc: &inline, Run: full.Run}
	apart := *full.Alloc
	apart.ID, apart.Job = "apart", nil
	jobJSON, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	frame(&journalRecord{ID: "apart", Alloc: &apart, Run: &persistedRun{}, Job: jobJSON})
	// A run-only record of the earlier encoding over the allocation's.
	frame(&journalRecord{ID: "apart", Run: full.Run})
	withJob := apart
	withJob.Job = job
	want["apart"] = &persistedAlloc{Alloc: &withJob, Run: full.Run}
	f.Close()
	// A hand-written run-only record after them all, by a store that
	// loaded the journal.
	if _, errs := s.load(); len(errs) != 0 {
		t.Fatal(errs)
	}
	later := &persistedRun{Description: "later \"quoted\"", Tasks: map[string]*persistedTask{}}
	if err := s.putRun("inline", later); err != nil {
		t.Fatal(err)
	}
	want["inline"].Run = later

	got, errs := loadedByID(t, &stateStore{dir: s.dir})
	if len(errs) != 0 || len(got) != len(want) {
		t.Fatalf("loaded %d allocations, errors %v", len(got), errs)
	}
	for id, w := range want {
		// What the loader must return is what encoding/json reads back
		// of the allocation and run put.
		wantJSON, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		var wantBack persistedAlloc
		if err := json.Unmarshal(wantJSON, &wantBack); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[id], &wantBack) {
			gotJSON, _ := json.Marshal(got[id])
			t.Fatalf("%s loaded as\n%s\nwant\n%s", id, gotJSON, wantJSON)
		}
	}
}

// A runner's state encoded from its task runners (persist) reads back as
// the snapshot of the same state does.
func TestPersistEncodesWhatASnapshotHolds(t *testing.T) {
	c, err := New(Config{DataDir: t.TempDir(), Servers: []string{"http://127.0.0.1:1"}, Drivers: []driver.Driver{driver.NewMock()},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	j := job(state.JobTypeService, mock("web", nil), mock("side \"car\"", nil))
	a := &state.Allocation{ID: "a1", JobID: j.ID, Job: j, TaskGroup: "g"}
	ar := newAllocRunner(c, a, nil)
	now := time.Date(2026, 12, 3, 11, 0, 0, 5, time.UTC)
	web := ar.tasks[0]
	web.setHandle(&driver.TaskHandle{TaskID: "a1/web", Driver: "mock", PID: 7, StartedAt: now, State: []byte(`{"config":{}}`)})
	web.tracker.win = restartWindow{Start: now, Count: 2}
	web.setState(func(ts *state.TaskState) { ts.State, ts.StartedAt, ts.Restarts = state.TaskStateRunning, now, 2 },
		eventStarted(now), eventKilling(now, time.Second, "<stop>"), eventTerminated(now, &driver.ExitResult{ExitCode: 3}))
	ar.mu.Lock()
	ar.stopping, ar.failed, ar.desc, ar.terminalAt, ar.uid = true, true, "why\n", now, 1234
	ar.mu.Unlock()

	r := &persistedRun{Stopping: true, Failed: true, Description: "why\n", TerminalAt: now, WorkloadUID: 1234}
	rec := &journalRecord{ID: "a1", Run: r}
	buf := []byte("stale bytes")
	if !ar.encodeRun(rec, &buf) {
		t.Fatal("encodeRun did not encode")
	}
	var got persistedRun
	if err := json.Unmarshal(rec.runJSON, &got); err != nil {
		t.Fatalf("%s: %v", rec.runJSON, err)
	}
	r.Tasks = map[string]*persistedTask{}
	for _, tr := range ar.tasks {
		r.Tasks[tr.name] = tr.snapshot()
	}
	wantJSON, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var want persistedRun
	if err := json.Unmarshal(wantJSON, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, &want) {
		t.Fatalf("encoded\n%s\nwant\n%s", rec.runJSON, wantJSON)
	}
	if len(got.Tasks) != 2 || got.Tasks["web"].Handle == nil || len(got.Tasks["web"].State.Events) != 4 {
		t.Fatalf("encoded %s", rec.runJSON)
	}
}
