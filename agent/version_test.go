package agent

import (
	"context"
	"testing"
)

// What `make build` stamps (version, revision, build date) is what
// `sched server members` shows as Build and /v1/agent/self as
// config.Version and config.Build.
func TestStampedVersionIsServed(t *testing.T) {
	oldV, oldR, oldD := version, revision, buildDate
	version, revision, buildDate = "9.8.7", "0123456789abcdef", "2026-01-02T03:04:05Z"
	t.Cleanup(func() { version, revision, buildDate = oldV, oldR, oldD })
	if got := buildVersion(); got != "9.8.7+01234567" {
		t.Fatalf("buildVersion() = %q, want 9.8.7+01234567", got)
	}

	a := startDevAgent(t)
	c := apiClient(t, a.HTTPAddr())
	self, err := c.Agent().Self(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	build, _ := self.Config["Build"].(map[string]any)
	if self.Config["Version"] != "9.8.7+01234567" || build["Revision"] != "0123456789abcdef" || build["BuildDate"] != "2026-01-02T03:04:05Z" {
		t.Errorf("agent self config: Version %v, Build %v", self.Config["Version"], self.Config["Build"])
	}
	members, err := c.Agent().Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(members.Members) != 1 || members.Members[0].Tags["build"] != "9.8.7+01234567" {
		t.Errorf("members: %+v", members.Members)
	}
}
