// Package mgmt is the management API's domain (/api/v2): organizations,
// users, teams, projects, team project access, workspaces, runs, state
// versions, policy sets and tool versions, their patches and validation,
// and the permission engine as pure functions (implied permissions per
// access level, custom defaults, organization-level project permissions,
// owners, site administrators).
//
// It imports only state (tokens and validation errors). The tables and
// commands that hold these types live in state/store.
package mgmt
