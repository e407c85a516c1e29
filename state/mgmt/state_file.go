package mgmt

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// State versions keep the bytes Terraform uploads: the state file (JSON,
// format version 4 and the older ones Terraform still reads), its JSON
// rendering (`json-state`) and the outputs (`json-state-outputs`). The
// bytes live in StateBlob rows, addressed by their SHA-256 so that two
// versions with the same content share one blob; a blob counts the
// versions that refer to it and goes with the last. The checks here are
// pure: the HTTP layer runs them before proposing, and Apply runs the
// ones that depend on the store (lineage, serial) again.

// State version statuses (go-tfe StateVersionStatus).
const (
	StateVersionPending   = "pending"
	StateVersionFinalized = "finalized"
	StateVersionDiscarded = "discarded"
)

// PrefixStateVersionOutput is the ID prefix of a state version output.
const PrefixStateVersionOutput = "wsout-"

// Bounds of state versions.
const (
	// DefaultMaxStateBytes is the default limit on one state file and on
	// its JSON rendering (each), before base64.
	DefaultMaxStateBytes = 16 << 20
	// HardMaxStateBytes is the most any configuration may allow: the
	// request body limit (32 MiB) must carry it.
	HardMaxStateBytes = 24 << 20
	// MaxStateOutputs bounds the outputs of one state version.
	MaxStateOutputs = 1000
	// StateOutputNameMaxLen bounds an output's name.
	StateOutputNameMaxLen = 512
)

// StateBlob is one stored state file or JSON state, shared by every
// version whose content hashes the same.
type StateBlob struct {
	// SHA256 is the hex SHA-256 of Data: the blob's key.
	SHA256 string
	Data   []byte
	// Refs counts the state versions that name the blob.
	Refs        int
	CreateIndex uint64
	ModifyIndex uint64
}

// StateVersionOutput is one output of a state version.
type StateVersionOutput struct {
	// ID is "wsout-<id>".
	ID             string
	StateVersionID string
	WorkspaceID    string
	Name           string
	Sensitive      bool
	// Type and Value are JSON: the output's type constraint and value.
	Type        []byte
	Value       []byte
	CreateIndex uint64
	ModifyIndex uint64
}

// StateFileInfo is what a state file says about itself.
type StateFileInfo struct {
	Version          int
	Serial           int64
	Lineage          string
	TerraformVersion string
	Outputs          []*StateVersionOutput
}

// stateFile is the part of a state file sched reads.
type stateFile struct {
	Version          *int                       `json:"version"`
	Serial           *int64                     `json:"serial"`
	Lineage          *string                    `json:"lineage"`
	TerraformVersion string                     `json:"terraform_version"`
	Outputs          map[string]json.RawMessage `json:"outputs"`
}

// stateOutput is an output as a version-4 state file and json-state-outputs
// both write it.
type stateOutput struct {
	Value     json.RawMessage `json:"value"`
	Type      json.RawMessage `json:"type"`
	Sensitive bool            `json:"sensitive"`
}

// ParseStateFile checks that data is a Terraform state file and returns
// what it says; the error names the problem for a 422.
func ParseStateFile(data []byte) (StateFileInfo, error) {
	var f stateFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return StateFileInfo{}, fmt.Errorf("is not a Terraform state file: not a JSON object (%v)", err)
	}
	if dec.More() {
		return StateFileInfo{}, fmt.Errorf("is not a Terraform state file: more than one JSON value")
	}
	switch {
	case f.Version == nil:
		return StateFileInfo{}, fmt.Errorf("is not a Terraform state file: it has no \"version\"")
	case *f.Version < 1 || *f.Version > 4:
		return StateFileInfo{}, fmt.Errorf("has state format version %d; versions 1 to 4 are understood", *f.Version)
	case f.Serial == nil:
		return StateFileInfo{}, fmt.Errorf("is not a Terraform state file: it has no \"serial\"")
	case *f.Serial < 0:
		return StateFileInfo{}, fmt.Errorf("has a negative serial %d", *f.Serial)
	case f.Lineage == nil || *f.Lineage == "":
		return StateFileInfo{}, fmt.Errorf("is not a Terraform state file: it has no \"lineage\"")
	}
	info := StateFileInfo{Version: *f.Version, Serial: *f.Serial, Lineage: *f.Lineage, TerraformVersion: f.TerraformVersion}
	if *f.Version == 4 {
		outs, err := parseOutputs(f.Outputs)
		if err != nil {
			return StateFileInfo{}, err
		}
		info.Outputs = outs
	}
	return info, nil
}

// ParseJSONStateOutputs reads json-state-outputs: an object of outputs by
// name, each with value, type and sensitive.
func ParseJSONStateOutputs(data []byte) ([]*StateVersionOutput, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("is not a JSON object of outputs (%v)", err)
	}
	return parseOutputs(m)
}

// CheckJSON reports whether data is one JSON value (json-state).
func CheckJSON(data []byte) error {
	if !json.Valid(data) {
		return fmt.Errorf("is not valid JSON")
	}
	return nil
}

func parseOutputs(m map[string]json.RawMessage) ([]*StateVersionOutput, error) {
	if len(m) > MaxStateOutputs {
		return nil, fmt.Errorf("has %d outputs; at most %d are allowed", len(m), MaxStateOutputs)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*StateVersionOutput, 0, len(names))
	for _, name := range names {
		if name == "" || len(name) > StateOutputNameMaxLen {
			return nil, fmt.Errorf("has an output name of %d bytes; 1 to %d are allowed", len(name), StateOutputNameMaxLen)
		}
		var o stateOutput
		if err := json.Unmarshal(m[name], &o); err != nil {
			return nil, fmt.Errorf("has output %q that is not an object with value, type and sensitive (%v)", name, err)
		}
		value := []byte(o.Value)
		if len(value) == 0 {
			value = []byte("null")
		}
		typ := []byte(o.Type)
		if len(typ) == 0 {
			typ = []byte("null")
		}
		out = append(out, &StateVersionOutput{Name: name, Sensitive: o.Sensitive, Type: typ, Value: value})
	}
	return out, nil
}

// SHA256Hex is the blob key of data.
func SHA256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// MD5Hex is the md5 a state version records of its state file.
func MD5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

// OutputID is the ID of output name of state version svID: derived, so
// the leader need not draw one per output.
func OutputID(svID, name string) string {
	return IDFrom(PrefixStateVersionOutput, svID+"\x00"+name)
}

// IsFinalized reports whether sv's state is stored (or, for a version
// recorded without bytes, was never going to be).
func (sv *StateVersion) IsFinalized() bool {
	return sv.Status == "" || sv.Status == StateVersionFinalized
}

// CheckStateSuccession reports why a new state (lineage, serial) may not
// follow current, the workspace's current version; nil when it may. A
// forced push skips the check, as `terraform state push -force` does.
func CheckStateSuccession(current *StateVersion, lineage string, serial int64, force bool) error {
	if current == nil || force {
		return nil
	}
	if current.Lineage != "" && lineage != "" && current.Lineage != lineage {
		return fmt.Errorf("lineage %q differs from the current state's lineage %q (state version %s); push with force to replace it", lineage, current.Lineage, current.ID)
	}
	if serial < current.Serial {
		return fmt.Errorf("serial %d is lower than the current state's serial %d (state version %s)", serial, current.Serial, current.ID)
	}
	return nil
}

// ValidExecutionMode reports what is wrong with an execution mode, "" if
// nothing.
func ValidExecutionMode(m string) string {
	switch m {
	case ExecutionModeRemote, ExecutionModeLocal, ExecutionModeAgent:
		return ""
	}
	return fmt.Sprintf("%q is not one of remote, local, agent", m)
}

// EffectiveExecutionMode is where a workspace runs: its own mode, else its
// project's default, else its organization's, else remote. Any argument
// may be nil.
func EffectiveExecutionMode(org *Organization, project *Project, ws *Workspace) string {
	switch {
	case ws != nil && ws.ExecutionMode != "":
		return ws.ExecutionMode
	case project != nil && project.DefaultExecutionMode != "":
		return project.DefaultExecutionMode
	case org != nil && org.DefaultExecutionMode != "":
		return org.DefaultExecutionMode
	}
	return ExecutionModeRemote
}

// Copy returns a copy of o that shares nothing with it.
func (o *StateVersionOutput) Copy() *StateVersionOutput {
	c := *o
	c.Type = slices.Clone(o.Type)
	c.Value = slices.Clone(o.Value)
	return &c
}

// lowerHex reports whether s is lowercase hex of n bytes.
func lowerHex(s string, n int) bool {
	return len(s) == 2*n && strings.Trim(s, "0123456789abcdef") == ""
}

// ValidSHA256 reports whether s is a blob key.
func ValidSHA256(s string) bool { return lowerHex(s, sha256.Size) }
