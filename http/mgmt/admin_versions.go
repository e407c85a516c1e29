package mgmt

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Admin tool versions and policy versions (spec §4): two families with one
// shape, under /admin/tool-versions and /admin/policy-versions. Site
// administrators only (404 for everyone else). Create answers 201, delete
// 204; deleting an official version, or one a workspace (tool) or policy
// set (policy) uses, is a 422. The spec's error table answers every
// malformed body of create and update with 422, so a wrong data.type is a
// 422 here too.
func (m *router) adminVersionRoutes() {
	s := m.s
	for family, typ := range versionFamilies {
		base := "/admin/" + typ
		newVersions(s, family).mount(m, base, base+"/:id", adminOnly)
	}
}

// versionView is a version with its usage.
type versionView struct {
	tv    *mgmt.ToolVersion
	usage int
}

// newVersions is the resource of one family's versions. A site
// administrator's: it has no scope, and no rule beyond adminOnly's.
func newVersions(s *Server, family string) *resource[struct{}, versionView, mgmt.ToolVersionPatch] {
	return &resource[struct{}, versionView, mgmt.ToolVersionPatch]{
		s: s, prefix: mgmt.PrefixToolVersion, list: admin{s}.listVersions(family),
		expect:   func(id string) jsonapi.Expect { return versionExpect(family, id) },
		readOnly: []string{"usage", "created-at"},
		scope:    func(*call, httprouter.Params) (struct{}, error) { return struct{}{}, nil },
		load: func(_ *call, p httprouter.Params) (versionView, error) {
			tv, usage, err := admin{s}.version(family, p.ByName("id"))
			return versionView{tv, usage}, err
		},
		id:     func(v versionView) string { return v.tv.ID },
		decode: func(o *jsonapi.ResourceObject, _ *versionView) mgmt.ToolVersionPatch { return readVersionPatch(o) },
		check: func(p mgmt.ToolVersionPatch, current *versionView) []error {
			return []error{p.Validate(current == nil)}
		},
		createCmd: func(_ struct{}, st stamp, p mgmt.ToolVersionPatch) (store.MessageType, any) {
			return store.ToolVersionCreateRequestType, &store.ToolVersionCreateRequest{ID: st.id, Family: family, CreatedAt: st.now, Attributes: p}
		},
		updateCmd: func(v versionView, st stamp, p mgmt.ToolVersionPatch) (store.MessageType, any) {
			return store.ToolVersionUpdateRequestType, &store.ToolVersionUpdateRequest{ID: v.tv.ID, Family: family, Attributes: p, Now: st.now}
		},
		deleteCmd: func(v versionView) (store.MessageType, any) {
			return store.ToolVersionDeleteRequestType, &store.ToolVersionDeleteRequest{ID: v.tv.ID, Family: family}
		},
		show: func(_ *http.Request, v versionView) (*jsonapi.Document, error) {
			return jsonapi.One(toolVersionResource(v.tv, v.usage)), nil
		},
		showCreated: func(_ struct{}, resp any) (*jsonapi.Document, error) {
			return jsonapi.One(toolVersionResource(resp.(*mgmt.ToolVersion), 0)), nil
		},
		showUpdated: func(_ *call, _ versionView, resp any) (*jsonapi.Document, error) {
			updated := resp.(*mgmt.ToolVersion)
			usage, err := s.store.ToolVersionUsage(nil, updated)
			if err != nil {
				return nil, err
			}
			return jsonapi.One(toolVersionResource(updated, usage)), nil
		},
	}
}

// listVersions serves the list: filter[version] (exact; wins over search),
// search[version] (contains).
func (s admin) listVersions(family string) handler {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
		page, err := pageOf(r)
		if err != nil {
			return result{}, err
		}
		q := r.URL.Query()
		list, err := s.store.ListToolVersions(nil, family, store.ToolVersionListOptions{
			Version: q.Get("filter[version]"), Search: q.Get("search[version]"), Page: statePage(page)})
		if err != nil {
			return result{}, err
		}
		items := make([]*jsonapi.Resource, len(list.Items))
		for i, e := range list.Items {
			items[i] = toolVersionResource(e.Version, e.Usage)
		}
		return ok(listDoc(r, items, page, list.Matching))
	}
}

// readVersionPatch reads a version's attributes.
func readVersionPatch(o *jsonapi.ResourceObject) mgmt.ToolVersionPatch {
	a := o.Attrs
	patch := mgmt.ToolVersionPatch{
		Version:          a.String("version"),
		URL:              a.String("url"),
		SHA:              a.String("sha"),
		Official:         a.Bool("official"),
		Enabled:          a.Bool("enabled"),
		Beta:             a.Bool("beta"),
		Deprecated:       a.Bool("deprecated"),
		DeprecatedReason: a.NullableString("deprecated-reason"),
	}
	if items, sent := a.Objects("archs"); sent {
		archs := make([]mgmt.ToolVersionArch, 0, len(items))
		for _, item := range items {
			var arch mgmt.ToolVersionArch
			for _, f := range []struct {
				name string
				dst  *string
			}{{"url", &arch.URL}, {"sha", &arch.SHA}, {"os", &arch.OS}, {"arch", &arch.Arch}} {
				if v := item.String(f.name); v != nil {
					*f.dst = *v
				}
			}
			archs = append(archs, arch)
		}
		patch.Archs = &archs
	}
	return patch
}

func versionExpect(family, id string) jsonapi.Expect {
	return jsonapi.Expect{Type: versionFamilies[family], WrongTypeStatus: http.StatusUnprocessableEntity, ID: id}
}

// version loads version id of family with its usage, or a 404.
func (s admin) version(family, id string) (*mgmt.ToolVersion, int, error) {
	tv, err := s.store.ToolVersionByID(nil, family, id)
	if err != nil {
		return nil, 0, err
	}
	if tv == nil {
		return nil, 0, notFound(family+" version", id)
	}
	usage, err := s.store.ToolVersionUsage(nil, tv)
	return tv, usage, err
}
