package mgmt

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/schedhq/sched/http/api"
)

// Version families of the admin API: the path segment and the resource
// type of tool versions and of policy-engine versions.
const (
	FamilyToolVersions   = "tool-versions"
	FamilyPolicyVersions = "policy-versions"
)

// ToolVersion is a version of the provisioning tool or of the policy
// engine that runs may use (types tool-versions and policy-versions have
// the same shape, spec §2).
type ToolVersion struct {
	ID string `json:"id"`
	// Version is "N.N.N" or "N.N.N-bundleName".
	Version    string `json:"version"`
	URL        string `json:"url"`
	SHA        string `json:"sha"`
	Deprecated bool   `json:"deprecated"`
	// DeprecatedReason is nil unless Deprecated.
	DeprecatedReason *string `json:"deprecated-reason"`
	Official         bool    `json:"official"`
	Enabled          bool    `json:"enabled"`
	Beta             bool    `json:"beta"`
	// Usage counts the workspaces (and, for policy versions, policy sets)
	// using the version.
	Usage     int       `json:"usage"`
	CreatedAt time.Time `json:"created-at,omitzero"`
	// Archs are per-platform binaries (go-tfe's extension).
	Archs []ToolVersionArch `json:"archs,omitempty"`
}

// ToolVersionArch is the binary of a version for one platform.
type ToolVersionArch struct {
	URL  string `json:"url"`
	SHA  string `json:"sha"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

func finishToolVersion(v *ToolVersion, r *JSONAPIResource, _ *JSONAPIDocument) error {
	v.ID = r.ID
	return nil
}

// ToolVersionCreateOptions are the attributes of a new version. Version,
// URL and SHA are required; nil fields take the server's defaults
// (official false, enabled true, beta false, deprecated false).
type ToolVersionCreateOptions struct {
	Version          string
	URL              string
	SHA              string
	Official         *bool
	Enabled          *bool
	Beta             *bool
	Deprecated       *bool
	DeprecatedReason *string
	Archs            []ToolVersionArch
}

// ToolVersionUpdateOptions change a version; nil fields keep their value.
// A pointer to "" for DeprecatedReason sends null.
type ToolVersionUpdateOptions struct {
	Version          *string
	URL              *string
	SHA              *string
	Official         *bool
	Enabled          *bool
	Beta             *bool
	Deprecated       *bool
	DeprecatedReason *string
	// Archs, when not nil, replaces the per-platform binaries.
	Archs []ToolVersionArch
}

// ToolVersionListOptions filter a version list.
type ToolVersionListOptions struct {
	PageOptions
	// FilterVersion matches one version exactly (filter[version]); it
	// wins over SearchVersion.
	FilterVersion string
	// SearchVersion searches version numbers (search[version]).
	SearchVersion string
}

// AdminVersions is the client of one version family:
// /api/v2/admin/tool-versions or /api/v2/admin/policy-versions.
type AdminVersions struct {
	m *Client
	// family is the path segment and the resource type.
	family string
}

// ToolVersions returns the admin tool version endpoints.
func (a *Admin) ToolVersions() *AdminVersions {
	return &AdminVersions{m: a.m, family: FamilyToolVersions}
}

// PolicyVersions returns the admin policy version endpoints.
func (a *Admin) PolicyVersions() *AdminVersions {
	return &AdminVersions{m: a.m, family: FamilyPolicyVersions}
}

// Family returns FamilyToolVersions or FamilyPolicyVersions.
func (v *AdminVersions) Family() string { return v.family }

// List returns one page of the family's versions.
func (v *AdminVersions) List(ctx context.Context, opts ToolVersionListOptions) (*Page[ToolVersion], error) {
	params := url.Values{}
	opts.apply(params)
	setParam(params, "filter[version]", opts.FilterVersion)
	setParam(params, "search[version]", opts.SearchVersion)
	return fetchList(ctx, v.m, api.PathOf("admin", v.family), params, v.family, finishToolVersion)
}

// Read returns the version with the given tool- id.
func (v *AdminVersions) Read(ctx context.Context, id string) (*ToolVersion, error) {
	return callOne(ctx, v.m, http.MethodGet, api.PathOf("admin", v.family, id), nil, nil, v.family, finishToolVersion)
}

// Create adds a version; the server answers 201.
func (v *AdminVersions) Create(ctx context.Context, opts ToolVersionCreateOptions) (*ToolVersion, error) {
	// Required attributes are always sent, even empty, so that the server
	// names what is missing.
	attrs := map[string]any{"version": opts.Version, "url": opts.URL, "sha": opts.SHA}
	putValue(attrs, "official", opts.Official)
	putValue(attrs, "enabled", opts.Enabled)
	putValue(attrs, "beta", opts.Beta)
	putValue(attrs, "deprecated", opts.Deprecated)
	putString(attrs, "deprecated-reason", opts.DeprecatedReason)
	if opts.Archs != nil {
		attrs["archs"] = opts.Archs
	}
	res, err := newResource(v.family, "", attrs, nil)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, v.m, http.MethodPost, api.PathOf("admin", v.family), nil, dataDoc{res}, v.family, finishToolVersion)
}

// Update changes the version with the given id.
func (v *AdminVersions) Update(ctx context.Context, id string, opts ToolVersionUpdateOptions) (*ToolVersion, error) {
	attrs := map[string]any{}
	putValue(attrs, "version", opts.Version)
	putValue(attrs, "url", opts.URL)
	putValue(attrs, "sha", opts.SHA)
	putValue(attrs, "official", opts.Official)
	putValue(attrs, "enabled", opts.Enabled)
	putValue(attrs, "beta", opts.Beta)
	putValue(attrs, "deprecated", opts.Deprecated)
	putString(attrs, "deprecated-reason", opts.DeprecatedReason)
	if opts.Archs != nil {
		attrs["archs"] = opts.Archs
	}
	res, err := newResource(v.family, id, attrs, nil)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, v.m, http.MethodPatch, api.PathOf("admin", v.family, id), nil, dataDoc{res}, v.family, finishToolVersion)
}

// Delete removes the version with the given id. The server refuses (422)
// an official version and one in use.
func (v *AdminVersions) Delete(ctx context.Context, id string) error {
	_, err := v.m.Do(ctx, http.MethodDelete, api.PathOf("admin", v.family, id), nil, nil)
	return err
}
