package mgmt

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// stateFile is a version-4 state file of serial and lineage with the
// outputs given as JSON ({"name":{"value":…,"type":…,"sensitive":…}}).
func stateFile(serial int, lineage, outputs string) []byte {
	if outputs == "" {
		outputs = "{}"
	}
	return fmt.Appendf(nil, `{"version":4,"terraform_version":"1.5.7","serial":%d,"lineage":%q,"outputs":%s,"resources":[],"check_results":null}`,
		serial, lineage, outputs)
}

// stateBody is the create document of a state version carrying st.
func stateBody(st []byte, extra map[string]any) map[string]any {
	var info struct {
		Serial  int    `json:"serial"`
		Lineage string `json:"lineage"`
	}
	_ = json.Unmarshal(st, &info)
	sum := md5.Sum(st)
	attrs := map[string]any{"serial": info.Serial, "lineage": info.Lineage, "md5": hex.EncodeToString(sum[:]),
		"state": base64.StdEncoding.EncodeToString(st)}
	for k, v := range extra {
		if v == nil {
			delete(attrs, k)
			continue
		}
		attrs[k] = v
	}
	return docBody("state-versions", attrs)
}
