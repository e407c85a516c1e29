package mgmt

import (
	"fmt"
	"github.com/schedhq/sched/state"
)

// ToolVersionPatch carries the writable attributes of a tool or policy
// version, for create and update; nil keeps the current value (or the
// default on create: enabled true, the other flags false).
//
// URL and SHA are required, except that a create or update whose archs
// hold a linux/amd64 entry takes them from it when they are not sent, as
// go-tfe clients that send only archs expect. The top-level URL and SHA
// and the linux/amd64 entry of archs are one binary: a create with only
// the top-level pair gets that entry, an update of either side changes the
// other, and a patch that sends both with different values is refused.
type ToolVersionPatch struct {
	Version    *string
	URL        *string
	SHA        *string
	Official   *bool
	Enabled    *bool
	Beta       *bool
	Deprecated *bool
	// DeprecatedReason is kept only while the version is deprecated: it is
	// null otherwise, whatever was sent.
	DeprecatedReason *string
	// Archs replaces the per-platform binaries when not nil.
	Archs *[]ToolVersionArch
}

// Validate checks the patch's values; create requires version, url and
// sha (see the type's comment about archs).
func (p *ToolVersionPatch) Validate(create bool) error {
	v := &state.ValidationError{}
	switch {
	case p.Version != nil:
		if msg := ValidVersion(*p.Version); msg != "" {
			v.Add(AttrPointer("version"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("version"), "is required")
	}
	linux := p.linuxAMD64()
	if p.URL != nil || (create && linux == nil) {
		url := ""
		if p.URL != nil {
			url = *p.URL
		}
		if msg := validURL(url); msg != "" {
			v.Add(AttrPointer("url"), "%s", msg)
		}
	}
	if p.SHA != nil || (create && linux == nil) {
		sha := ""
		if p.SHA != nil {
			sha = *p.SHA
		}
		if msg := validSHA(sha); msg != "" {
			v.Add(AttrPointer("sha"), "%s", msg)
		}
	}
	if linux != nil && p.URL != nil && *p.URL != linux.URL {
		v.Add(AttrPointer("url"), "differs from the url of the linux/amd64 entry of archs (%q); they are the same binary", linux.URL)
	}
	if linux != nil && p.SHA != nil && *p.SHA != linux.SHA {
		v.Add(AttrPointer("sha"), "differs from the sha of the linux/amd64 entry of archs; they are the same binary")
	}
	if p.Archs != nil {
		seen := map[string]bool{}
		for i, a := range *p.Archs {
			field := fmt.Sprintf("archs/%d/", i)
			if msg := validURL(a.URL); msg != "" {
				v.Add(AttrPointer(field+"url"), "%s", msg)
			}
			if msg := validSHA(a.SHA); msg != "" {
				v.Add(AttrPointer(field+"sha"), "%s", msg)
			}
			if !platRE.MatchString(a.OS) {
				v.Add(AttrPointer(field+"os"), "%q is not an operating system name such as linux", a.OS)
			}
			if !platRE.MatchString(a.Arch) {
				v.Add(AttrPointer(field+"arch"), "%q is not an architecture name such as amd64", a.Arch)
			}
			key := a.OS + "/" + a.Arch
			if seen[key] {
				v.Add(AttrPointer(field+"arch"), "%s is listed twice", key)
			}
			seen[key] = true
		}
	}
	return v.Err()
}

// linuxAMD64 returns the patch's linux/amd64 arch, if any.
func (p *ToolVersionPatch) linuxAMD64() *ToolVersionArch {
	if p.Archs == nil {
		return nil
	}
	for i, a := range *p.Archs {
		if a.OS == "linux" && a.Arch == "amd64" {
			return &(*p.Archs)[i]
		}
	}
	return nil
}

// Apply changes tv (a copy) as the patch says.
func (p *ToolVersionPatch) Apply(tv *ToolVersion) {
	for _, f := range []struct{ dst, src *string }{{&tv.Version, p.Version}, {&tv.URL, p.URL}, {&tv.SHA, p.SHA}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	for _, f := range []struct{ dst, src *bool }{
		{&tv.Official, p.Official}, {&tv.Enabled, p.Enabled}, {&tv.Beta, p.Beta}, {&tv.Deprecated, p.Deprecated},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if p.Archs != nil {
		tv.Archs = append([]ToolVersionArch(nil), (*p.Archs)...)
	}
	if linux := p.linuxAMD64(); linux != nil {
		if p.URL == nil {
			tv.URL = linux.URL
		}
		if p.SHA == nil {
			tv.SHA = linux.SHA
		}
	}
	tv.syncLinuxAMD64()
	if p.DeprecatedReason != nil {
		tv.DeprecatedReason = state.ClonePtr(p.DeprecatedReason)
	}
	if !tv.Deprecated || (tv.DeprecatedReason != nil && *tv.DeprecatedReason == "") {
		tv.DeprecatedReason = nil
	}
}

// CheckFamily refuses a version family other than tool and policy.
func CheckFamily(family string) error {
	if family != VersionFamilyTool && family != VersionFamilyPolicy {
		return state.Invalidf("Family", "%q is not one of tool, policy", family)
	}
	return nil
}

// UsersNoun names what uses a version of family, for error messages.
func UsersNoun(family string) string {
	if family == VersionFamilyPolicy {
		return "policy sets"
	}
	return "workspaces"
}

// syncLinuxAMD64 makes the linux/amd64 entry of tv's archs carry the
// top-level URL and SHA, adding the entry when there is a top-level
// binary and no such entry.
func (tv *ToolVersion) syncLinuxAMD64() {
	if tv.URL == "" && tv.SHA == "" {
		return
	}
	for i := range tv.Archs {
		if a := &tv.Archs[i]; a.OS == "linux" && a.Arch == "amd64" {
			a.URL, a.SHA = tv.URL, tv.SHA
			return
		}
	}
	tv.Archs = append(tv.Archs, ToolVersionArch{URL: tv.URL, SHA: tv.SHA, OS: "linux", Arch: "amd64"})
}
