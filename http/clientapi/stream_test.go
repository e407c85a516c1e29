package clientapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// The frames on the wire are Nomad's exec stream: base64 data, close,
// tty_size, exited with result.exit_code.
func TestExecFrameEncoding(t *testing.T) {
	out := []struct {
		f    state.ExecOutputFrame
		want string
	}{
		{state.ExecOutputFrame{Stdout: &state.ExecIOFrame{Data: []byte("hi\n")}}, `{"stdout":{"data":"aGkK"}}`},
		{state.ExecOutputFrame{Stderr: &state.ExecIOFrame{Data: []byte{0, 255}}}, `{"stderr":{"data":"AP8="}}`},
		{state.ExecOutputFrame{Stdout: &state.ExecIOFrame{Close: true}}, `{"stdout":{"close":true}}`},
		{state.ExecOutputFrame{Exited: true, Result: &state.ExecResult{ExitCode: 3}}, `{"exited":true,"result":{"exit_code":3}}`},
		{state.ExecOutputFrame{Exited: true, Result: &state.ExecResult{}}, `{"exited":true,"result":{"exit_code":0}}`},
	}
	for _, c := range out {
		b, err := json.Marshal(c.f)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v: %s (%v), want %s", c.f, b, err, c.want)
		}
	}
	in := []struct {
		text string
		want state.ExecInputFrame
		bad  string
	}{
		{text: `{"stdin":{"data":"ZWNobwo="}}`, want: state.ExecInputFrame{Stdin: &state.ExecIOFrame{Data: []byte("echo\n")}}},
		{text: `{"stdin":{"close":true}}`, want: state.ExecInputFrame{Stdin: &state.ExecIOFrame{Close: true}}},
		{text: `{"tty_size":{"height":40,"width":120}}`, want: state.ExecInputFrame{TTYSize: &state.TerminalSize{Height: 40, Width: 120}}},
		{text: `{"version":1,"auth_token":"s3cret"}`, want: state.ExecInputFrame{Version: 1, AuthToken: "s3cret"}},
		{text: `{"stdin":{"data":"ZWNobwo="},"future":1}`, want: state.ExecInputFrame{Stdin: &state.ExecIOFrame{Data: []byte("echo\n")}}},
		{text: `{"stdin":{"data":"not base64!"}}`, bad: "illegal base64"},
		{text: `[1,2]`, bad: "cannot unmarshal array"},
		{text: `{"tty_size":{"height":-1,"width":80}}`, bad: "tty_size -1x80"},
		{text: `{"tty_size":{"height":24,"width":100000}}`, bad: "within 0..10000"},
	}
	for _, c := range in {
		f, err := decodeInputFrame([]byte(c.text))
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: %v, want an error with %q", c.text, err, c.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		got, _ := json.Marshal(f)
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) {
			t.Errorf("%s: %s, want %s", c.text, got, want)
		}
	}
}
