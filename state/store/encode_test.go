package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestEncodeRoundTrip(t *testing.T) {
	healthy := true
	started := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		mt   MessageType
		req  any
	}{
		{"job register with free-form config", JobRegisterRequestType, &JobRegisterRequest{
			Job:        stJob("web"),
			Eval:       stEval("e1", stJob("web")),
			Submission: &state.JobSubmission{Format: state.SubmissionFormatHCL2, Source: `job "web" {}`, VariableFlags: map[string]string{"a": "b"}},
			Now:        42,
		}},
		{"node keeps its secret", NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")}},
		{"client update with times", AllocClientUpdateRequestType, &AllocClientUpdateRequest{
			Allocs: []*state.Allocation{{
				ID:               "a1",
				ClientStatus:     state.AllocClientStatusRunning,
				DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &healthy, Timestamp: started},
				TaskStates: map[string]*state.TaskState{"server": {
					State: state.TaskStateRunning, StartedAt: started,
					Events: []*state.TaskEvent{{Type: state.TaskStarted, Time: 7, Details: map[string]string{"k": "v"}}},
				}},
			}},
			Now: 99,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Encode(tc.mt, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if MessageType(data[0]) != tc.mt {
				t.Fatalf("type byte = %d, want %d", data[0], tc.mt)
			}
			mt, got, err := DecodeCommand(data)
			if err != nil {
				t.Fatal(err)
			}
			if mt != tc.mt {
				t.Errorf("decoded type = %d, want %d", mt, tc.mt)
			}
			if !reflect.DeepEqual(got, tc.req) {
				t.Errorf("round trip changed the request:\n got %#v\nwant %#v", got, tc.req)
			}
		})
	}
}

func TestEncodeFreeFormMapsDecodeAsStringKeyed(t *testing.T) {
	job := stJob("web")
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"outer": map[string]any{"inner": []any{"x", map[string]any{"deep": true}}}}
	data, err := Encode(JobRegisterRequestType, &JobRegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	_, req, err := DecodeCommand(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg := req.(*JobRegisterRequest).Job.TaskGroups[0].Tasks[0].Config
	outer, ok := cfg["outer"].(map[string]any)
	if !ok {
		t.Fatalf("outer decoded as %T, want map[string]any", cfg["outer"])
	}
	inner := outer["inner"].([]any)
	if s, ok := inner[0].(string); !ok || s != "x" {
		t.Errorf("string decoded as %T %v", inner[0], inner[0])
	}
	if _, ok := inner[1].(map[string]any); !ok {
		t.Errorf("nested map decoded as %T", inner[1])
	}
}

func TestDecodeCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrMalformedCommand},
		{"unknown type", []byte{127, 0x80}, ErrUnknownCommand},
		{"unknown type with ignore flag", []byte{byte(127 | IgnoreUnknownTypeFlag), 0x80}, ErrUnknownCommand},
		{"garbage body", []byte{byte(JobRegisterRequestType), 0xc1}, ErrMalformedCommand},
	}
	for _, tc := range tests {
		if _, _, err := DecodeCommand(tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestApplyUnknownCommand(t *testing.T) {
	tests := []struct {
		name    string
		typ     MessageType
		wantErr bool
	}{
		{"unknown without flag is an error", 127, true},
		{"unknown with flag is ignored", 127 | IgnoreUnknownTypeFlag, false},
		{"known type with flag still applies", NamespaceUpsertRequestType | IgnoreUnknownTypeFlag, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := stStore(t, Config{})
			before := stDump(t, s)
			data, err := Encode(tc.typ, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "x"}}})
			if err != nil {
				t.Fatal(err)
			}
			resp := s.Apply(10, data)
			err, isErr := resp.(error)
			if isErr != tc.wantErr {
				t.Fatalf("Apply = %#v, want error: %v", resp, tc.wantErr)
			}
			if isErr && !errors.Is(err, ErrUnknownCommand) {
				t.Errorf("error %v does not wrap ErrUnknownCommand", err)
			}
			known := tc.typ&^IgnoreUnknownTypeFlag == NamespaceUpsertRequestType
			ns := stMust[*state.Namespace](t)(s.NamespaceByName(nil, "x"))
			if (ns != nil) != known {
				t.Errorf("namespace written = %v, want %v", ns != nil, known)
			}
			if !known {
				stCompareDumps(t, before, stDump(t, s))
			}
		})
	}
}
