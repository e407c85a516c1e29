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
		m.handle(http.MethodGet, base, adminOnly(s.versionList(family)))
		m.handle(http.MethodPost, base, adminOnly(s.versionCreate(family)))
		m.handle(http.MethodGet, base+"/:id", adminOnly(s.versionRead(family)))
		m.handle(http.MethodPatch, base+"/:id", adminOnly(s.versionUpdate(family)))
		m.handle(http.MethodDelete, base+"/:id", adminOnly(s.versionDelete(family)))
	}
}

// versionList serves the list: filter[version] (exact; wins over search),
// search[version] (contains).
func (s *Server) versionList(family string) handler {
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

func (s *Server) versionCreate(family string) handler {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
		o, err := readResource(r, versionExpect(family, ""))
		if err != nil {
			return result{}, err
		}
		patch := readVersionPatch(o)
		if err := firstErr(o.Err(), patch.Validate(true)); err != nil {
			return result{}, err
		}
		resp, err := s.propose(w, r, store.ToolVersionCreateRequestType, &store.ToolVersionCreateRequest{
			ID: s.newID(mgmt.PrefixToolVersion), Family: family, CreatedAt: s.now(), Attributes: patch})
		if err != nil {
			return result{}, err
		}
		return created(jsonapi.One(toolVersionResource(resp.(*mgmt.ToolVersion), 0)))
	}
}

// version loads version id of family with its usage, or a 404.
func (s *Server) version(family, id string) (*mgmt.ToolVersion, int, error) {
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

func (s *Server) versionRead(family string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		tv, usage, err := s.version(family, p.ByName("id"))
		if err != nil {
			return result{}, err
		}
		return ok(jsonapi.One(toolVersionResource(tv, usage)))
	}
}

// versionUpdate serves PATCH: attributes left out keep their values.
func (s *Server) versionUpdate(family string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		tv, _, err := s.version(family, p.ByName("id"))
		if err != nil {
			return result{}, err
		}
		o, err := readResource(r, versionExpect(family, tv.ID))
		if err != nil {
			return result{}, err
		}
		o.Attrs.ReadOnly("usage", "created-at")
		patch := readVersionPatch(o)
		if err := firstErr(o.Err(), patch.Validate(false)); err != nil {
			return result{}, err
		}
		resp, err := s.propose(w, r, store.ToolVersionUpdateRequestType, &store.ToolVersionUpdateRequest{
			ID: tv.ID, Family: family, Attributes: patch, Now: s.now()})
		if err != nil {
			return result{}, err
		}
		updated := resp.(*mgmt.ToolVersion)
		usage, err := s.store.ToolVersionUsage(nil, updated)
		if err != nil {
			return result{}, err
		}
		return ok(jsonapi.One(toolVersionResource(updated, usage)))
	}
}

func (s *Server) versionDelete(family string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		tv, _, err := s.version(family, p.ByName("id"))
		if err != nil {
			return result{}, err
		}
		if _, err := s.propose(w, r, store.ToolVersionDeleteRequestType, &store.ToolVersionDeleteRequest{ID: tv.ID, Family: family}); err != nil {
			return result{}, err
		}
		return noContent()
	}
}
