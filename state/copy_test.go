package state

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// stFill sets every field reachable from v to a non-zero value: pointers
// allocated, slices and maps given two elements, free-form values nested
// maps and slices. A field added later is filled too, so the copy tests
// below fail until Copy handles it.
func stFill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		stFill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				stFill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			stFill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			stFill(k, depth+1)
			if k.Kind() == reflect.String {
				k.SetString(fmt.Sprintf("key%d", i))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			stFill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{
			"list":   []any{"x", map[string]any{"deep": int64(1)}},
			"map":    map[string]any{"k": "v"},
			"string": "s",
		}))
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(4)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	}
}

// stNoShared reports every pointer, map or slice of got that is the very
// same as in want: a change through the copy would show in the original.
func stNoShared(t *testing.T, path string, want, got reflect.Value) {
	t.Helper()
	switch want.Kind() {
	case reflect.Pointer:
		if want.IsNil() || got.IsNil() {
			return
		}
		if want.Pointer() == got.Pointer() {
			t.Errorf("%s: pointer shared with the original", path)
			return
		}
		stNoShared(t, path, want.Elem(), got.Elem())
	case reflect.Interface:
		if want.IsNil() || got.IsNil() {
			return
		}
		stNoShared(t, path, want.Elem(), got.Elem())
	case reflect.Struct:
		if want.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := range want.NumField() {
			if want.Type().Field(i).IsExported() {
				stNoShared(t, path+"."+want.Type().Field(i).Name, want.Field(i), got.Field(i))
			}
		}
	case reflect.Slice:
		if want.Len() > 0 && got.Len() > 0 && want.Pointer() == got.Pointer() {
			t.Errorf("%s: slice shared with the original", path)
			return
		}
		for i := range min(want.Len(), got.Len()) {
			stNoShared(t, fmt.Sprintf("%s[%d]", path, i), want.Index(i), got.Index(i))
		}
	case reflect.Map:
		if want.IsNil() || got.IsNil() {
			return
		}
		if want.Pointer() == got.Pointer() {
			t.Errorf("%s: map shared with the original", path)
			return
		}
		for _, k := range want.MapKeys() {
			if g := got.MapIndex(k); g.IsValid() {
				stNoShared(t, fmt.Sprintf("%s[%v]", path, k), want.MapIndex(k), g)
			}
		}
	}
}

// stCheckCopy fills a T, copies it and checks the copy is equal and
// independent; and that copying nil gives nil.
func stCheckCopy[T any](t *testing.T, copyFn func(*T) *T) {
	t.Helper()
	orig := new(T)
	stFill(reflect.ValueOf(orig).Elem(), 0)
	if reflect.ValueOf(orig).Elem().IsZero() {
		t.Fatalf("%T not filled", orig)
	}
	c := copyFn(orig)
	if !reflect.DeepEqual(orig, c) {
		t.Errorf("%T copy differs from the original", orig)
	}
	stNoShared(t, fmt.Sprintf("%T", orig), reflect.ValueOf(orig), reflect.ValueOf(c))
	if copyFn(nil) != nil {
		t.Errorf("copy of a nil %T is not nil", orig)
	}
}

func TestCopyIsDeep(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"Job", func(t *testing.T) { stCheckCopy(t, (*Job).Copy) }},
		{"TaskGroup", func(t *testing.T) { stCheckCopy(t, (*TaskGroup).Copy) }},
		{"Task", func(t *testing.T) { stCheckCopy(t, (*Task).Copy) }},
		{"Evaluation", func(t *testing.T) { stCheckCopy(t, (*Evaluation).Copy) }},
		{"Allocation", func(t *testing.T) { stCheckCopy(t, (*Allocation).Copy) }},
		{"Deployment", func(t *testing.T) { stCheckCopy(t, (*Deployment).Copy) }},
		{"Node", func(t *testing.T) { stCheckCopy(t, (*Node).Copy) }},
		{"NodePool", func(t *testing.T) { stCheckCopy(t, (*NodePool).Copy) }},
		{"Namespace", func(t *testing.T) { stCheckCopy(t, (*Namespace).Copy) }},
		{"JobSummary", func(t *testing.T) { stCheckCopy(t, (*JobSummary).Copy) }},
		{"JobSubmission", func(t *testing.T) { stCheckCopy(t, (*JobSubmission).Copy) }},
		{"ServiceRegistration", func(t *testing.T) { stCheckCopy(t, (*ServiceRegistration).Copy) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestCopySkipJobSharesOnlyTheJob(t *testing.T) {
	orig := new(Allocation)
	stFill(reflect.ValueOf(orig).Elem(), 0)
	c := orig.CopySkipJob()
	if c.Job != orig.Job {
		t.Error("CopySkipJob copied the job")
	}
	if !reflect.DeepEqual(orig, c) {
		t.Error("copy differs")
	}
	c.Job = nil
	withoutJob := *orig
	withoutJob.Job = nil
	stNoShared(t, "Allocation", reflect.ValueOf(&withoutJob), reflect.ValueOf(c))
}
