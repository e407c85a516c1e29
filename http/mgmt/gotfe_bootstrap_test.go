package mgmt

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	tfe "github.com/hashicorp/go-tfe"
)

// bootstrapSecret runs POST /v1/acl/bootstrap with body against ts and
// returns the token's secret.
func bootstrapSecret(t *testing.T, ts *httptest.Server, body string) string {
	t.Helper()
	resp, err := ts.Client().Post(ts.URL+"/v1/acl/bootstrap", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct{ SecretID string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&tok) != nil || tok.SecretID == "" {
		t.Fatalf("bootstrap: %d", resp.StatusCode)
	}
	return tok.SecretID
}

// TestMgmtGoTFEBootstrapAdminOwnsOrganizations is issue 16's TFE first
// administrator: the bootstrap token speaks for a site administrator
// user, so an organization it creates through go-tfe has that user as
// owner (go-tfe's own tests index Owners[0]), and Users.ReadCurrent is
// that user.
func TestMgmtGoTFEBootstrapAdminOwnsOrganizations(t *testing.T) {
	for _, c := range []struct{ name, body, username, email string }{
		{"defaults", "", "admin", "admin@localhost"},
		{"named", `{"AdminName":"site-admin","AdminEmail":"ops@example.com"}`, "site-admin", "ops@example.com"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newAPIHarness(t)
			ts := httptest.NewServer(neutralNames(m.srv.Handler()))
			defer ts.Close()
			ctx := context.Background()
			tc := tfeClient(t, ts, bootstrapSecret(t, ts, c.body))

			me, err := tc.Users.ReadCurrent(ctx)
			if err != nil || me.Username != c.username || me.Email != c.email || me.IsSiteAdmin == nil || !*me.IsSiteAdmin {
				t.Fatalf("Users.ReadCurrent = %+v, %v", me, err)
			}
			org, err := tc.Organizations.Create(ctx, tfe.OrganizationCreateOptions{Name: tfePtr("initech"), Email: tfePtr("it@initech.example")})
			if err != nil || org.Name != "initech" {
				t.Fatalf("Organizations.Create = %+v, %v", org, err)
			}
			orgs, err := tc.Admin.Organizations.List(ctx, &tfe.AdminOrganizationListOptions{Include: []tfe.AdminOrgIncludeOpt{tfe.AdminOrgOwners}})
			if err != nil || len(orgs.Items) != 1 || len(orgs.Items[0].Owners) != 1 {
				t.Fatalf("Admin.Organizations.List(owners) = %+v, %v", orgs, err)
			}
			if o := orgs.Items[0].Owners[0]; o.ID != me.ID || o.Username != c.username || o.Email != c.email {
				t.Errorf("owner = %+v, want %s", o, me.ID)
			}
			// The owners team holds the administrator.
			teams, err := tc.Teams.List(ctx, "initech", nil)
			if err != nil || len(teams.Items) != 1 || teams.Items[0].Name != "owners" || teams.Items[0].UserCount != 1 {
				t.Fatalf("Teams.List = %+v, %v", teams, err)
			}
		})
	}
}

// TestMgmtBootstrapTokenOutlivesItsUser: deleting the first
// administrator keeps the bootstrap token (a management token), which
// then acts with no user.
func TestMgmtBootstrapTokenOutlivesItsUser(t *testing.T) {
	m := newAPIHarness(t)
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	secret := bootstrapSecret(t, ts, "")
	tc := tfeClient(t, ts, secret)
	me, err := tc.Users.ReadCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.Admin.Users.Delete(ctx, me.ID); err != nil {
		t.Fatalf("delete the administrator: %v", err)
	}
	if _, err := tc.Users.ReadCurrent(ctx); err == nil {
		t.Error("account details of a deleted user")
	}
	if l, err := tc.Admin.Organizations.List(ctx, nil); err != nil || l == nil {
		t.Fatalf("the bootstrap token after its user was deleted: %v", err)
	}
	org, err := tc.Organizations.Create(ctx, tfe.OrganizationCreateOptions{Name: tfePtr("orphan"), Email: tfePtr("o@example.com")})
	if err != nil || org.Name != "orphan" {
		t.Fatalf("create without a user: %+v, %v", org, err)
	}
}
