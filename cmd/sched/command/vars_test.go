package command

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLoadVariables(t *testing.T) {
	cases := []struct {
		name      string
		files     map[string]string // name → content, read in name order
		flags     []string
		wantDoc   string
		wantFlags map[string]string
		wantErr   string
	}{
		{name: "nothing", wantDoc: ""},
		{
			name:    "strings are quoted and escaped",
			flags:   []string{`msg=say "hi" to ${USER} at 100%{x}`, `empty=`, `eq=a=b`},
			wantDoc: "msg   = \"say \\\"hi\\\" to $${USER} at 100%%{x}\"\nempty = \"\"\neq    = \"a=b\"\n",
			wantFlags: map[string]string{
				"msg": `say "hi" to ${USER} at 100%{x}`, "empty": "", "eq": "a=b",
			},
		},
		{
			name:      "lists and objects",
			flags:     []string{`ports=[80, 443]`, `labels={ tier = "web" }`, `notalist=[unclosed`},
			wantDoc:   "ports = [80, 443]\nlabels = {\n  tier = \"web\"\n}\nnotalist = \"[unclosed\"\n",
			wantFlags: map[string]string{"ports": "[80, 443]", "labels": `{ tier = "web" }`, "notalist": "[unclosed"},
		},
		{
			name: "later files and flags win",
			files: map[string]string{
				"1.hcl":  "image = \"redis:6\"\ncount = 2\n",
				"2.json": `{"count": 3, "dcs": ["dc1"]}`,
			},
			flags:     []string{"image=redis:7"},
			wantDoc:   "image = \"redis:7\"\ncount = 3\ndcs   = [\"dc1\"]\n",
			wantFlags: map[string]string{"image": "redis:7"},
		},
		{name: "flag without value", flags: []string{"x"}, wantErr: `-var "x": want NAME=VALUE`},
		{name: "flag with a bad name", flags: []string{"1x=2"}, wantErr: `-var "1x=2": want NAME=VALUE`},
		{name: "var file syntax error", files: map[string]string{"bad.hcl": "a = \n"}, wantErr: "bad.hcl:1,5-2,1: Invalid expression"},
		{name: "var file with a block", files: map[string]string{"blk.hcl": "a = 1\nb { }\n"}, wantErr: "blk.hcl:2,1-2: Unexpected \"b\" block"},
		{name: "var file with a reference", files: map[string]string{"ref.hcl": "a = var.b\n"}, wantErr: "ref.hcl:1,5-8: Variables not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for _, name := range sortedNames(tc.files) {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(tc.files[name]), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			got, err := loadVariables(paths, tc.flags)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.doc != tc.wantDoc {
				t.Errorf("doc =\n%s\nwant\n%s", got.doc, tc.wantDoc)
			}
			if !reflect.DeepEqual(got.flags, tc.wantFlags) {
				t.Errorf("flags = %q, want %q", got.flags, tc.wantFlags)
			}
			var raw []string
			for _, name := range sortedNames(tc.files) {
				raw = append(raw, tc.files[name])
			}
			if want := strings.Join(raw, "\n"); got.files != want {
				t.Errorf("files = %q, want %q", got.files, want)
			}
		})
	}
}

func sortedNames(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
