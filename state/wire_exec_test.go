package state

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The fast path of data frames writes exactly what encoding/json writes,
// and reads back what encoding/json wrote; other frames are left to
// encoding/json.
func TestDataFramesMatchEncodingJSON(t *testing.T) {
	for _, data := range [][]byte{[]byte("x"), []byte("hello\n"), {0, 1, 2, 254, 255}, bytes.Repeat([]byte("ab\"\\"), 1000)} {
		for _, stderr := range []bool{false, true} {
			f := ExecOutputFrame{Stdout: &ExecIOFrame{Data: data}}
			if stderr {
				f = ExecOutputFrame{Stderr: &ExecIOFrame{Data: data}}
			}
			want, _ := json.Marshal(f)
			got := AppendOutputFrame(nil, stderr, data)
			if !bytes.Equal(got, want) {
				t.Errorf("AppendOutputFrame(%v, %q) = %s, want %s", stderr, data, got, want)
			}
			back, isErr, ok := ParseDataFrame(want)
			if !ok || isErr != stderr || !bytes.Equal(back, data) {
				t.Errorf("ParseDataFrame(%s) = %q %v %v", want, back, isErr, ok)
			}
		}
	}
	for _, other := range []string{
		`{"exited":true,"result":{"exit_code":3}}`, `{"stdout":{"close":true}}`, `{"stdout":{"data":"aGk="},"exited":true}`,
		`{"stdout":{"data":"not base64"}}`, `{"stdout":{"data":"aGk="}}  `,
	} {
		if _, _, ok := ParseDataFrame([]byte(other)); ok {
			t.Errorf("ParseDataFrame(%s) took a frame that is not data only", other)
		}
	}
}
