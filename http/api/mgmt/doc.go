// Package mgmt is the typed Go client of sched's management API
// (/api/v2, JSON:API): organizations, users, teams, tokens, projects,
// team project access, workspaces and site administration.
//
// New builds a Client over an api.Client, sharing its address, HTTP
// client and token; the token goes as "Authorization: Bearer", the scheme
// Terraform Enterprise clients use. Errors the server answers come back
// as *JSONAPIError (errors.As), and rate-limited requests are retried as
// go-tfe does (see Client).
package mgmt
