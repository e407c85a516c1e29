package command

import (
	"strings"
	"testing"
)

// mgmtVersionFamilies are the two families the version commands serve,
// with the path segment and resource type of each.
var mgmtVersionFamilies = []struct{ command, family, noun string }{
	{"tool-version", "tool-versions", "tool version"},
	{"policy-version", "policy-versions", "policy version"},
}

func mgmtVersionDoc(family, id, version string, extra string) string {
	return `{"id":"` + id + `","type":"` + family + `","attributes":{"version":"` + version + `","url":"https://dl/` + version +
		`.zip","sha":"abc","official":false,"enabled":true,"beta":false,"usage":2,"created-at":"2025-03-01T11:00:00.250Z"` + extra + `}}`
}

func TestAdminVersionList(t *testing.T) {
	for _, fam := range mgmtVersionFamilies {
		t.Run(fam.command, func(t *testing.T) {
			f := newFakeAPI(t)
			base := "/api/v2/admin/" + fam.family
			f.on("GET", base,
				mgmtReply(200, `{"data":[`+mgmtVersionDoc(fam.family, "tool-1", "1.9.0", `,"deprecated":true,"deprecated-reason":"old"`)+","+
					mgmtVersionDoc(fam.family, "tool-2", "1.10.0-beta", `,"beta":true`)+`]}`),
				mgmtReply(200, `{"data":[]}`))
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "list", "-search", "1.").check(t, 0, lines(
				"ID      Version      Enabled  Official  Beta   Deprecated  Usage",
				"tool-1  1.9.0        true     false     false  true        2",
				"tool-2  1.10.0-beta  true     false     true   false       2",
			), "")
			s := f.requests("GET " + base)[0]
			checkMgmtRequest(t, s)
			if s.Query.Get("search[version]") != "1." || s.Query.Has("filter[version]") {
				t.Errorf("query = %v", s.Query)
			}
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "list", "-version", "9.9.9").check(t, 0,
				"No "+fam.noun+"s found\n", "")
			if q := f.requests("GET " + base)[1].Query; q.Get("filter[version]") != "9.9.9" {
				t.Errorf("query = %v", q)
			}
		})
	}
}

func TestAdminVersionShow(t *testing.T) {
	for _, fam := range mgmtVersionFamilies {
		t.Run(fam.command, func(t *testing.T) {
			f := newFakeAPI(t)
			base := "/api/v2/admin/" + fam.family
			doc := mgmtVersionDoc(fam.family, "tool-1", "1.9.0",
				`,"deprecated":true,"deprecated-reason":"use 1.10","archs":[{"url":"u","sha":"s","os":"linux","arch":"arm64"}]`)
			f.on("GET", base+"/tool-1", mgmtReply(200, `{"data":`+doc+`}`))
			// By version string: looked up with filter[version].
			f.on("GET", base, mgmtReply(200, `{"data":[`+doc+`]}`), mgmtReply(200, `{"data":[]}`))
			want := lines(
				"ID                = tool-1",
				"Version           = 1.9.0",
				"URL               = https://dl/1.9.0.zip",
				"SHA               = abc",
				"Enabled           = true",
				"Official          = false",
				"Beta              = false",
				"Deprecated        = true",
				"Deprecated Reason = use 1.10",
				"Usage             = 2",
				"Archs             = linux/arm64",
				"Created           = 2025-03-01T11:00:00Z",
			)
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "show", "tool-1").check(t, 0, want, "")
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "show", "1.9.0").check(t, 0, want, "")
			if q := f.requests("GET " + base)[0].Query; q.Get("filter[version]") != "1.9.0" {
				t.Errorf("lookup query = %v", q)
			}
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "show", "2.0.0").check(t, 1, "",
				"Error retrieving "+fam.noun+": no "+fam.noun+" \"2.0.0\"\n")
		})
	}
}

func TestAdminVersionCreate(t *testing.T) {
	for _, fam := range mgmtVersionFamilies {
		t.Run(fam.command, func(t *testing.T) {
			f := newFakeAPI(t)
			base := "/api/v2/admin/" + fam.family
			f.on("POST", base, mgmtReply(201, `{"data":`+mgmtVersionDoc(fam.family, "tool-3", "1.9.0", "")+`}`),
				mgmtFail(422, "invalid attribute", "version must be N.N.N or N.N.N-bundle", "/data/attributes/version"))
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "create", "-url", "https://dl/1.9.0.zip", "-sha", "abc",
				"-enabled=false", "-deprecated", "-deprecated-reason", "old", "1.9.0").check(t, 0,
				"Successfully created "+fam.noun+" \"1.9.0\" with ID \"tool-3\"!\n", "")
			s := f.requests("POST " + base)[0]
			checkMgmtRequest(t, s)
			var body map[string]any
			decodeBody(t, s, &body)
			// Flags not given (-official, -beta) are left to the server's defaults.
			want := `{"data":{"attributes":{"deprecated":true,"deprecated-reason":"old","enabled":false,"sha":"abc",` +
				`"url":"https://dl/1.9.0.zip","version":"1.9.0"},"type":"` + fam.family + `"}}`
			if got := mgmtJSONString(t, body); got != want {
				t.Errorf("body = %s\nwant   %s", got, want)
			}

			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "create", "-url", "u", "-sha", "s", "v1").check(t, 1, "",
				"Error creating "+fam.noun+": 422 invalid attribute: version must be N.N.N or N.N.N-bundle (at /data/attributes/version)\n")

			for _, args := range [][]string{{"1.9.0"}, {"-url", "u", "1.9.0"}, {"-url", "u", "-sha", "s"}} {
				r := runCLI(t, f, runOpts{env: mgmtEnv("")}, append([]string{"admin", fam.command, "create"}, args...)...)
				if r.code != 1 || !strings.Contains(r.stderr, "Usage: sched admin "+fam.command+" create") {
					t.Errorf("%v: %+v", args, r)
				}
			}
			if n := len(f.requests("")); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

func TestAdminVersionUpdate(t *testing.T) {
	for _, fam := range mgmtVersionFamilies {
		t.Run(fam.command, func(t *testing.T) {
			f := newFakeAPI(t)
			base := "/api/v2/admin/" + fam.family
			f.on("GET", base, mgmtReply(200, `{"data":[`+mgmtVersionDoc(fam.family, "tool-1", "1.9.0", "")+`]}`))
			f.on("PATCH", base+"/tool-1", mgmtReply(200, `{"data":`+mgmtVersionDoc(fam.family, "tool-1", "1.9.1", "")+`}`))
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "update", "-version", "1.9.1", "-deprecated=false",
				"-deprecated-reason", "", "1.9.0").check(t, 0, "Successfully updated "+fam.noun+" \"1.9.1\"!\n", "")
			s := f.only("PATCH " + base + "/tool-1")
			checkMgmtRequest(t, s)
			var body map[string]any
			decodeBody(t, s, &body)
			want := `{"data":{"attributes":{"deprecated":false,"deprecated-reason":null,"version":"1.9.1"},"id":"tool-1","type":"` + fam.family + `"}}`
			if got := mgmtJSONString(t, body); got != want {
				t.Errorf("body = %s\nwant   %s", got, want)
			}
			r := runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "update", "tool-1")
			if r.code != 1 || !strings.Contains(r.stderr, "nothing to update") {
				t.Errorf("nothing to update: %+v", r)
			}
		})
	}
}

func TestAdminVersionDelete(t *testing.T) {
	for _, fam := range mgmtVersionFamilies {
		t.Run(fam.command, func(t *testing.T) {
			f := newFakeAPI(t)
			base := "/api/v2/admin/" + fam.family
			f.on("DELETE", base+"/tool-1", mgmtReply(204, ""))
			f.on("DELETE", base+"/tool-2", mgmtFail(422, "invalid attribute", "version is used by 2 workspaces", ""))
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "delete", "tool-1").check(t, 0,
				"Successfully deleted "+fam.noun+" \"tool-1\"!\n", "")
			checkMgmtRequest(t, f.only("DELETE "+base+"/tool-1"))
			runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", fam.command, "delete", "tool-2").check(t, 1, "",
				"Error deleting "+fam.noun+": 422 invalid attribute: version is used by 2 workspaces\n")
		})
	}
}
