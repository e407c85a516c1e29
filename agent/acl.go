package agent

import schedhttp "github.com/schedhq/sched/http"

// configureHTTPACL gives the HTTP server its token resolver (the identity
// issue).
func (a *Agent) configureHTTPACL(cfg *schedhttp.Config) {}
